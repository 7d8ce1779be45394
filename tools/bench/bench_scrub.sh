#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/bench/bench_scrub.sh - what an online scrub at its default rate costs the
# users of a mounted volume (issue 23): fio through the mount without and with
# `jgrfs scrub --background` running, round after round, and the ratio.
#
#   sudo tools/bench/bench_scrub.sh [-s MEMBER_SIZE] [-d DIR] [-t SECONDS] [-r ROUNDS]
#                             [-m MAX_RATE_MIB] PATH/TO/jgrfs
#
#   -s SIZE  member size (default 1G): RAID5 over 4 member files, data=declared
#   -t SECS  seconds of each random workload (default 15)
#   -r N     rounds (default 3); each round runs the workloads without, then with
#            the scrub (alternating which goes first); medians are printed
#   -m MIB   --max-rate of the scrub (default: the daemon's default)
#
# Workloads: sequential 1 MiB writes of half a member (end fsync); 4 KiB random
# reads and writes, half each, an fsync every 32 writes, over a 256 MiB file
# with a cold cache. While "with", a scrub runs the whole time (started again
# when one finishes). Use an optimised build (make release).
set -u

size=1G
dir=/var/tmp
secs=15
rounds=3
rate=""
while getopts "s:d:t:r:m:h" opt; do
	case $opt in
	s) size=$OPTARG ;;
	d) dir=$OPTARG ;;
	t) secs=$OPTARG ;;
	r) rounds=$OPTARG ;;
	m) rate="--max-rate $OPTARG" ;;
	*) sed -n '4,20p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
jgrfs=${1:?usage: bench_scrub.sh [-s SIZE] [-d DIR] [-t SECONDS] [-r ROUNDS] [-m MIB] PATH/TO/jgrfs}
case "$jgrfs" in /*) ;; *) jgrfs=$(pwd)/$jgrfs ;; esac
[ "$(id -u)" = 0 ] || { echo "bench_scrub: needs root (drop_caches)" >&2; exit 1; }
for p in fio python3 fusermount3; do
	command -v $p >/dev/null || { echo "bench_scrub: $p missing" >&2; exit 1; }
done

W=$(mktemp -d "$dir/jgrfs-bench-scrub.XXXXXX") || exit 1
MNT=$W/mnt
mkdir "$MNT"
cleanup() {
	set +e
	if grep -q " $MNT " /proc/mounts; then
		"$jgrfs" scrub --cancel "$MNT" >/dev/null 2>&1
		fusermount3 -u "$MNT" 2>/dev/null
		sleep 2
	fi
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

bytes=$(numfmt --from=iec "$size")
seq_bytes=$((bytes / 2))

# fio_run NAME ARGS...: one job; prints MiB/s, reads and writes together
fio_run() {
	local name=$1
	shift
	fio --name="$name" --output-format=json --ioengine=psync "$@" >"$W/fio.json" 2>"$W/fio.err" ||
		{ cat "$W/fio.err" >&2; echo 0; return; }
	python3 - "$W/fio.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print("%.1f" % ((j["read"]["bw_bytes"] + j["write"]["bw_bytes"]) / 2**20))
PY
}

scrub_state() {
	"$jgrfs" status --json "$MNT" |
		python3 -c "import json,sys; s=json.load(sys.stdin)['scrub']; print(s['state'], s['rate_bytes'])"
}

# keep a scrub running while $1 is "with"
scrub_on() {
	[ "$1" = with ] || return 0
	set -- $(scrub_state)
	[ "$1" = running ] && return 0
	# shellcheck disable=SC2086
	"$jgrfs" scrub --background $rate "$MNT" >/dev/null || { echo "bench_scrub: scrub did not start" >&2; exit 1; }
}

scrub_off() {
	local st
	[ "$1" = with ] || return 0
	st=$(scrub_state)
	echo "$st" | awk '{ printf "    (scrub %s at %.1f MiB/s)\n", $1, $2 / 1048576 }' >&2
	"$jgrfs" scrub --cancel "$MNT" >/dev/null 2>&1
}

# workload MODE ROUND: appends "MODE ROUND seqw randrw" to the results
workload() {
	local sw rw
	rm -f "$MNT/seq"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	scrub_on "$1"
	echo "  $1 scrub: sequential write" >&2
	sw=$(fio_run seqw --filename="$MNT/seq" --rw=write --bs=1M --size=$seq_bytes --end_fsync=1)
	scrub_off "$1"
	echo 3 >/proc/sys/vm/drop_caches
	scrub_on "$1"
	echo "  $1 scrub: 4K random read/write (${secs}s)" >&2
	rw=$(fio_run randrw --filename="$MNT/rand" --rw=randrw --rwmixread=50 --bs=4k --size=256M \
		--fsync=32 --time_based --runtime="$secs" --randrepeat=1 --randseed=42)
	scrub_off "$1"
	echo "$1 $2 $sw $rw" >>"$W/results"
}

echo "jgrfs: RAID5 over 4 x $size files" >&2
for i in 0 1 2 3; do truncate -s "$size" "$W/d$i.img"; done
"$jgrfs" mkfs -l 5 "$W"/d[0-3].img >/dev/null || { echo "bench_scrub: mkfs failed" >&2; exit 1; }
"$jgrfs" mount "$W"/d[0-3].img "$MNT" || exit 1
fio --name=prep --filename="$MNT/rand" --rw=write --bs=1M --size=256M --end_fsync=1 \
	--output=/dev/null || exit 1
: >"$W/results"
for round in $(seq "$rounds"); do
	echo "round $round of $rounds" >&2
	if [ $((round % 2)) = 1 ]; then order="without with"; else order="with without"; fi
	for m in $order; do workload "$m" "$round"; done
done
fusermount3 -u "$MNT"
sleep 2

python3 - "$W/results" <<'PY'
import statistics, sys
res = {}
for l in open(sys.argv[1]):
    f = l.split()
    if f:
        res.setdefault(f[0], {})[int(f[1])] = [float(x) for x in f[2:]]
cols = ["seq write MiB/s", "4K randrw MiB/s"]
print("%-24s" % "" + "".join("%18s" % c for c in cols))
for m in ("without", "with"):
    for r in sorted(res.get(m, {})):
        print("%-24s" % ("%s scrub #%d" % (m, r)) + "".join("%18.1f" % x for x in res[m][r]))
    print("%-24s" % (m + " scrub median") +
          "".join("%18.1f" % statistics.median(v[k] for v in res[m].values()) for k in range(2)))
both = [r for r in sorted(res.get("with", {})) if r in res.get("without", {})]
ratios = [[a / b if b else 0 for a, b in zip(res["with"][r], res["without"][r])] for r in both]
print("%-24s" % "with/without median" +
      "".join("%17.2fx" % statistics.median(v[k] for v in ratios) for k in range(2)))
PY
