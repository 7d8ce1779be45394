#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/bench/bench_slow.sh - the seeds' comparison (declared 3-5%, the MD
# write-intent bitmap about 30%) on members that cost what disks cost (issue 25):
# `jgrfs bench --members` over four nbdkit servers whose requests are delayed as
# a profile says, and the same run on local member files as the control.
#
#   sudo tools/bench/bench_slow.sh [-p PROFILES] [-r REPEATS] [-t SECONDS]
#                   [-i IFACES] [-w WORKLOADS] [-b SWEEP] [-s SIZE] [-d DIR] [-m DIR] [-o DIR]
#                   [-L N] [-C] [-l] PATH/TO/jgrfs
#
#   -p LIST  profiles, in this order (default "local nbd ssd net hdd")
#   -r N     --repeats of jgrfs bench (default 3)
#   -t SECS  --seconds of randfsync (default 3)
#   -i LIST  --iface (default inproc)
#   -w LIST  --workloads (default randfsync,seqwrite,creates)
#   -b LIST  --bitmap-sweep: bitmap regions besides jgrfs's default 64M, which
#            is mdadm's default since 3.1.1 (default 4K,1M: mdadm's defaults
#            before it for members of 1 GiB and of 0.5-1 TB, see below)
#   -s SIZE  member size (default 1G): the exports' sparse files, and --size of
#            the local control
#   -d DIR   the local control's member files (default /var/tmp: a disk, not tmpfs)
#   -m DIR   the exports' sparse files and sockets (default /dev/shm: tmpfs, so
#            that the server's own fdatasync costs nothing and the delays are
#            the model; a short path: a member's name, the URI, holds 63 bytes)
#   -o DIR   raw output, slow-PROFILE.txt and .csv (default .)
#   -L N     jgrfs bench --logdata N, output slow-PROFILE-logdataN.*: with 0,
#            every fsync writes its data home before its commit, as ext3 did
#            (the seeds' setting), instead of logging it (logdata=16)
#   -C       also 'declared+csum' (jgrfs bench --data-checksums): declared on a
#            volume made with mkfs --data-checksums (issue 27's cost)
#   -l       also log every request (nbdkit's log filter, outermost) and write
#            slow-PROFILE-requests.txt: per client connection (an mkfs, or one
#            configuration's run), reads, writes, FUA writes and flushes summed
#            over the four members
#
# Workloads: randfsync (4 KiB random writes each followed by fsync, ops/s),
# seqwrite (64 MiB in 1 MiB writes then fsync, MB/s), creates (1000 files of
# 4 KiB then sync, files/s); configurations unprotected, bitmap (64M regions),
# bitmap at each -b size, declared (data=journal left out). In-process by
# default: FUSE adds the same cost to every configuration and hides none.
#
# Profiles: milliseconds each read, write and flush waits at the server
# (nbdkit's delay filter for reads and writes; tools/bench/nbdkit_flushdelay.c
# for flushes, which that filter does not delay, and for FUA writes, which pay
# a flush too). nbdkit 1.32's delay filter takes whole milliseconds only.
#
#   local  the control: member files on this machine's disk (dev_uring.c)
#   nbd    0 / 0 / 0: NBD itself, no delay (what the transport costs)
#   ssd    0 / 0 / 3, 16 server threads: a SATA SSD without power-loss
#          protection: writes land in its cache at once, a cache flush takes
#          milliseconds (it programs what its cache holds, a TLC page program
#          taking about 0.5-2 ms, and its mapping): an order of magnitude
#   net    1 / 1 / 1, 16 server threads: a disk across a network: a round trip
#          per request, the far side's own flush free (battery-backed cache);
#          0.5-1 ms is a LAN round trip through a storage server's stack
#   hdd    8 / 8 / 8, one server thread: a 7200 rpm disk, one request at a
#          time (one actuator): 4.2 ms average rotational latency (half of
#          60/7200 s) plus a short seek (the bench uses 1 GiB of the disk; the
#          average seek over a whole disk is 8.2-8.5 ms on 7200 rpm datasheets,
#          HGST Ultrastar 7K4000, Seagate Barracuda 7200.7; single track about
#          1 ms); a flush destages what its cache holds: about one more random
#          write
#
# Bitmap regions (MD's "bitmap chunk"): mdadm before 3.1.1 chose the smallest
# power of two from 4 KiB that fitted the bitmap in the room by the
# superblock (60 KiB for 0.90 metadata, 64 or 128 KiB for 1.x): 4 KiB for the
# 1 GiB members here under 0.90 metadata (mdadm 2.6's default), 0.5-2 MiB for a
# member of 0.5-1 TB (super0.c, super1.c before b8ab2a50). NeilBrown's commit
# b8ab2a50 ("Set default bitmap-chunksize for internal bitmaps to at least
# 64Meg", 2009-11-17, two days before the seeds' patches; first in mdadm 3.1.1)
# made it at least 64 MiB, as super1.c still does. The seeds ran a RHEL 5
# kernel (2.6.18-128.7.1) with an mdadm older than that: the small regions.
set -u

profiles="local nbd ssd net hdd"
repeats=3
secs=3
ifaces=inproc
workloads=randfsync,seqwrite,creates
sweep=4K,1M
size=1G
ddir=/var/tmp
mdir=/dev/shm
out=.
log=
logdata=
csum=
while getopts "p:r:t:i:w:b:s:d:m:o:L:Clh" opt; do
	case $opt in
	p) profiles=$OPTARG ;;
	r) repeats=$OPTARG ;;
	t) secs=$OPTARG ;;
	i) ifaces=$OPTARG ;;
	w) workloads=$OPTARG ;;
	b) sweep=$OPTARG ;;
	s) size=$OPTARG ;;
	d) ddir=$OPTARG ;;
	m) mdir=$OPTARG ;;
	o) out=$OPTARG ;;
	L) logdata=$OPTARG ;;
	C) csum=1 ;;
	l) log=1 ;;
	*) sed -n '4,74p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
jgrfs=${1:?usage: bench_slow.sh [-p PROFILES] [-r N] [-t SECS] [-i IFACES] [-w WORKLOADS] [-b SWEEP] [-s SIZE] [-d DIR] [-m DIR] [-o DIR] [-L N] [-C] [-l] PATH/TO/jgrfs}
case "$jgrfs" in /*) ;; *) jgrfs=$(pwd)/$jgrfs ;; esac
[ "$(id -u)" = 0 ] || { echo "bench_slow: needs root (jgrfs bench does)" >&2; exit 1; }
for p in nbdkit gcc python3; do
	command -v $p >/dev/null || { echo "bench_slow: $p missing (make deps)" >&2; exit 1; }
done
[ -f /usr/include/nbdkit-filter.h ] ||
	{ echo "bench_slow: nbdkit-filter.h missing (apt-get install nbdkit-plugin-dev)" >&2; exit 1; }
mkdir -p "$out" || exit 1

W=$(mktemp -d "$mdir/jgrfs-bench-slow.XXXXXX") || exit 1
L=$(mktemp -d "$ddir/jgrfs-bench-slow.XXXXXX") || exit 1
PIDS=""
stop_servers() {
	local p
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	PIDS=""
}
cleanup() {
	set +e
	stop_servers
	rm -rf "$W" "$L"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

gcc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$W/flushdelay.so" \
	"$(dirname "$0")/nbdkit_flushdelay.c" || exit 1
# a member stuck behind a slow server's queue is not a dead one
export JGRFS_NBD_TIMEOUT=${JGRFS_NBD_TIMEOUT:-300}

# profile NAME: "read write flush threads" (ms, ms, ms, nbdkit threads)
profile() {
	case $1 in
	nbd) echo "0 0 0 16" ;;
	ssd) echo "0 0 3 16" ;;
	net) echo "1 1 1 16" ;;
	hdd) echo "8 8 8 1" ;;
	*) return 1 ;;
	esac
}

# start_servers NAME: four nbdkit servers on Unix sockets over new sparse files;
# sets URIS. Returns once every server listens (its pid file is written then).
start_servers() {
	local i n rd wr fl th filters params
	read -r rd wr fl th <<<"$(profile "$1")"
	filters=()
	params=()
	if [ -n "$log" ]; then
		filters+=(--filter=log)
	fi
	if [ "$rd$wr" != 00 ]; then
		filters+=(--filter=delay)
		params+=("delay-read=${rd}ms" "delay-write=${wr}ms")
	fi
	if [ "$fl" != 0 ]; then
		filters+=(--filter="$W/flushdelay.so")
		params+=("delay-flush=${fl}ms")
	fi
	URIS=""
	for i in 0 1 2 3; do
		rm -f "$W/d$i.img" "$W/s$i.sock" "$W/p$i.pid" "$W/r$i.log"
		truncate -s "$size" "$W/d$i.img" || exit 1
		# filter parameters after the plugin's, as nbdkit(1) wants them
		nbdkit -f -t "$th" --unix "$W/s$i.sock" --pidfile "$W/p$i.pid" "${filters[@]}" \
			file "$W/d$i.img" "${params[@]}" ${log:+"logfile=$W/r$i.log"} </dev/null >>"$W/nbdkit$i.log" 2>&1 &
		PIDS="$PIDS $!"
		n=0
		while [ ! -s "$W/p$i.pid" ]; do
			n=$((n + 1))
			[ $n -lt 100 ] || { cat "$W/nbdkit$i.log" >&2; echo "bench_slow: nbdkit $i did not start" >&2; exit 1; }
			sleep 0.1
		done
		URIS="$URIS${URIS:+,}nbd+unix:///?socket=$W/s$i.sock"
	done
}

# requests: the four servers' logs (-l), per client connection, summed over
# the members; a connection's number is the same on every server, since each
# client opens the four members in turn.
requests() {
	python3 - "$W"/r[0-3].log <<'PY'
import re, sys
conn = {}
for path in sys.argv[1:]:
    for line in open(path):
        m = re.match(r"\S+ (\S+) connection=(\d+) (\w+)", line)
        if not m:
            continue
        t, n, what = m.group(1), int(m.group(2)), m.group(3)
        c = conn.setdefault(n, {"start": t, "Read": 0, "Write": 0, "fua": 0, "Flush": 0, "wbytes": 0})
        c["start"] = min(c["start"], t)
        if what in ("Read", "Write", "Flush"):
            c[what] += 1
        if what == "Write":
            c["wbytes"] += int(re.search(r"count=(0x[0-9a-f]+)", line).group(1), 16)
            c["fua"] += " fua=1" in line
print("%5s %-15s %8s %8s %8s %8s %10s" % ("conn", "start", "reads", "writes", "fua", "flushes", "MiB written"))
for n in sorted(conn):
    c = conn[n]
    print("%5d %-15s %8d %8d %8d %8d %10.1f" % (n, c["start"], c["Read"], c["Write"], c["fua"],
                                               c["Flush"], c["wbytes"] / 2**20))
PY
}

args=(--iface "$ifaces" --workloads "$workloads" --no-journal
	--bitmap-sweep "$sweep" --repeats "$repeats" --seconds "$secs" --seq-size 64M
	--files 1000)
tag=
if [ -n "$logdata" ]; then
	args+=(--logdata "$logdata")
	tag=-logdata$logdata
fi
if [ -n "$csum" ]; then
	args+=(--data-checksums)
	tag=$tag-csum
fi
for p in $profiles; do
	echo "== $p ($(date -u +%H:%M:%S))" >&2
	if [ "$p" = local ]; then
		"$jgrfs" bench "${args[@]}" --size "$size" --dir "$L/bench" --csv "$out/slow-$p$tag.csv" \
			>"$out/slow-$p$tag.txt" 2>&1
	else
		profile "$p" >/dev/null || { echo "bench_slow: unknown profile $p" >&2; exit 2; }
		start_servers "$p"
		"$jgrfs" bench "${args[@]}" --members "$URIS" --dir "$L/bench" \
			--csv "$out/slow-$p$tag.csv" >"$out/slow-$p$tag.txt" 2>&1
		rc=$?
		stop_servers
		[ -z "$log" ] || requests >"$out/slow-$p$tag-requests.txt"
		[ $rc = 0 ]
	fi || { tail -20 "$out/slow-$p$tag.txt" >&2; tail -20 "$L/bench/bench.log" >&2; exit 1; }
	sed -n '/^throughput: median/,/^$/p' "$out/slow-$p$tag.txt" >&2
done

# One table: each profile's medians and ratios to unprotected, side by side.
# shellcheck disable=SC2086
python3 - "$out" "$tag" $profiles <<'PY'
import csv, sys
out, tag, profiles = sys.argv[1], sys.argv[2], sys.argv[3:]
rows, cfgs = {}, []
for p in profiles:
    for r in csv.DictReader(open("%s/slow-%s%s.csv" % (out, p, tag))):
        if r["kind"] != "throughput":
            continue
        if r["config"] not in cfgs:
            cfgs.append(r["config"])
        rows[(p, r["interface"], r["workload"], r["config"])] = (float(r["value"]), float(r["ratio_to_unprotected"]), r["unit"])
order = ["seqwrite", "randfsync", "randbuf", "creates", "mixed"]
keys = sorted({(p, i, w) for (p, i, w, c) in rows},
              key=lambda k: (profiles.index(k[0]), k[1], order.index(k[2])))
print("\nmedians, and ratio to unprotected")
print("%-7s %-6s %-10s" % ("profile", "iface", "workload") + "".join("%21s" % c for c in cfgs))
for p, i, w in keys:
    cells = [rows.get((p, i, w, c)) for c in cfgs]
    unit = next(c[2] for c in cells if c)
    print("%-7s %-6s %-10s" % (p, i, w) +
          "".join("%12.1f (%4.0f%%)" % (c[0], 100 * c[1]) if c else "%21s" % "-"
                  for c in cells) + "  " + unit)
PY
