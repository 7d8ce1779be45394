#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/bench/bench_fuse.sh - jgrfs through its FUSE mount against fuse2fs and kernel
# btrfs, with fio. Prints figures; asserts nothing (speed lives in benchmarks).
#
#   sudo tools/bench/bench_fuse.sh [-s MEMBER_SIZE] [-d DIR] [-t SECONDS] [-r ROUNDS]
#                            [-w LIST] [-o MOUNT_OPTIONS] [-T TREE] [-p CPUS] PATH/TO/jgrfs
#
#   -w LIST  which filesystems, of jgrfs,fuse2fs,btrfs,passthrough (default all)
#            and jgrfs-uring (not by default): jgrfs mounted -o uring, its
#            requests over io_uring (sets fuse.enable_uring, restored at exit)
#   -T TREE  the source tree to untar and check out (default /usr/include)
#   -o OPTS  extra `jgrfs mount -o` options (e.g. data=ordered)
#   -r N     N rounds, each filesystem once per round (default 1), each round
#            starting one filesystem further (a multiple of the number of
#            filesystems puts each in every position alike); with more than
#            one, the medians and the median of the per-round ratios
#   -p CPUS  run the workloads (fio, the creates, tar, git) on these CPUs
#            (taskset -c): a caller kept on one CPU is what the kernel's
#            wake-on-current-cpu for io_uring requests gives (docs/design/
#            fuse-uring.md); the daemons stay where the scheduler puts them
#
#   jgrfs    RAID5 over 4 member files of MEMBER_SIZE (default 1G), data=declared
#   fuse2fs  ext4 in one image file the size of the jgrfs array (3 x MEMBER_SIZE),
#            through Debian's fuse2fs: the same FUSE path, a mature filesystem
#   btrfs    kernel btrfs RAID5 (data and metadata) over 4 loop devices of
#            MEMBER_SIZE: a reference without FUSE
#   passthrough  libfuse's passthrough_ll example (built from libfuse3-dev's
#            examples, with the kernel writeback cache as jgrfs) over a directory
#            of the same disk: the FUSE ceiling, no RAID, no journal
#
# Workloads: sequential 1 MiB writes (end fsync) and reads (cold cache), 4 KiB
# random writes each followed by fsync, 10,000 creates of 4 KiB files, untar of
# a source tree (TREE, tarred once beforehand) and a git clone of it (a
# repository of TREE made once beforehand, cloned over file:// so that its
# objects are packed and copied, and its files checked out), each ended by a
# syncfs and timed in seconds (their ratios are reference time / jgrfs time:
# above 1 is jgrfs faster, as for the other columns). Use an optimised build
# (make release) for figures worth quoting. Beside each figure of jgrfs, the
# daemon's memory after that workload (issue 46), in MiB: "RSS/HWM", its
# resident size (VmRSS) and the most it has had since mount (VmHWM); n/a for
# the other filesystems, which have no daemon of ours.
set -u

size=1G
dir=/var/tmp
secs=15
which=jgrfs,fuse2fs,btrfs,passthrough
mopts=""
rounds=1
tree=/usr/include
pincpus=""
while getopts "s:d:t:w:o:r:T:p:h" opt; do
	case $opt in
	s) size=$OPTARG ;;
	d) dir=$OPTARG ;;
	t) secs=$OPTARG ;;
	w) which=$OPTARG ;;
	o) mopts="-o $OPTARG" ;;
	r) rounds=$OPTARG ;;
	T) tree=$OPTARG ;;
	p) pincpus=$OPTARG ;;
	*) sed -n '4,43p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
jgrfs=${1:?usage: bench_fuse.sh [-s SIZE] [-d DIR] [-t SECONDS] [-r ROUNDS] PATH/TO/jgrfs}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench_fuse: -r wants a count of rounds, not '$rounds'" >&2; exit 2; }
case "$jgrfs" in /*) ;; *) jgrfs=$(pwd)/$jgrfs ;; esac
[ "$(id -u)" = 0 ] || { echo "bench_fuse: needs root (loop devices, btrfs, drop_caches)" >&2; exit 1; }
[ -d "$tree" ] || { echo "bench_fuse: -T $tree: not a directory" >&2; exit 2; }
for p in fio python3 fusermount3 git tar; do
	command -v $p >/dev/null || { echo "bench_fuse: $p missing" >&2; exit 1; }
done
# pin: the prefix that runs a workload's program on the -p CPUs
pin=()
if [ -n "$pincpus" ]; then
	taskset -c "$pincpus" true 2>/dev/null ||
		{ echo "bench_fuse: -p $pincpus: not CPUs this process may run on" >&2; exit 2; }
	pin=(taskset -c "$pincpus")
	echo "workloads on CPU(s) $pincpus" >&2
fi

W=$(mktemp -d "$dir/jgrfs-bench.XXXXXX") || exit 1
MNT=$W/mnt
mkdir "$MNT"
LOOPS=""
cleanup() {
	set +e
	if grep -q " $MNT " /proc/mounts; then
		fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT" 2>/dev/null
		sleep 1
	fi
	for l in $LOOPS; do losetup -d "$l" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# wanted NAME: is NAME in the -w list
wanted() { [[ ",$which," == *",$1,"* ]]; }

bytes=$(numfmt --from=iec "$size")
seq_bytes=$((bytes / 2))	# the sequential file: half a member's worth
rand_bytes=$((64 << 20))

# fio_run NAME ARGS...: one job; prints "bw_MiBps iops"
fio_run() {
	local name=$1
	shift
	"${pin[@]}" fio --name="$name" --output-format=json --ioengine=psync "$@" >"$W/fio.json" 2>"$W/fio.err" ||
		{ cat "$W/fio.err" >&2; echo "0 0"; return; }
	python3 - "$W/fio.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
side = j["write"] if j["write"]["io_bytes"] else j["read"]
print("%.1f %.0f" % (side["bw_bytes"] / 2**20, side["iops"]))
PY
}

# creates DIR N: N files of 4 KiB, then one syncfs; prints files/s
creates() {
	"${pin[@]}" python3 - "$1" "$2" <<'PY'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
buf = b"x" * 4096
t = time.monotonic()
for i in range(n):
    fd = os.open(os.path.join(d, "f%05d" % i), os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
    os.write(fd, buf)
    os.close(fd)
fd = os.open(d, os.O_RDONLY)
os.fsync(fd)
os.close(fd)
os.sync()
print("%.0f" % (n / (time.monotonic() - t)))
PY
}

# timed DIR CMD...: run CMD, then syncfs of DIR; prints the seconds both took
timed() {
	local d=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	"${pin[@]}" "$@" >/dev/null 2>"$W/timed.err" && sync -f "$d" ||
		{ cat "$W/timed.err" >&2; echo 0; return; }
	t1=$(date +%s.%N)
	python3 -c "print('%.2f' % ($t1 - $t0))"
}

# rss: the daemon $DPID's VmRSS and VmHWM in MiB, as RSS:HWM, "-" when there is none
DPID=""
rss() {
	local m
	m=$([ -n "$DPID" ] && awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 }
		END { if (r != "") printf "%d:%d", r / 1024, h / 1024 }' "/proc/$DPID/status" 2>/dev/null)
	echo "${m:--}"
}

# workload LABEL: runs every workload on $MNT; appends "LABEL round sw sr rw cr ut gc"
# and the daemon's RSS after each to results
workload() {
	local sw sr rw cr ut gc m=""
	echo "  $1: sequential write" >&2
	sw=$(fio_run seqw --filename="$MNT/seq" --rw=write --bs=1M --size=$seq_bytes --end_fsync=1)
	m="$m $(rss)"
	echo 3 >/proc/sys/vm/drop_caches
	echo "  $1: sequential read" >&2
	sr=$(fio_run seqr --filename="$MNT/seq" --rw=read --bs=1M --size=$seq_bytes)
	m="$m $(rss)"
	echo "  $1: 4K random write + fsync (${secs}s)" >&2
	rw=$(fio_run randw --filename="$MNT/rand" --rw=randwrite --bs=4k --size=$rand_bytes --fsync=1 \
		--time_based --runtime="$secs" --randrepeat=1 --randseed=42)
	m="$m $(rss)"
	echo "  $1: 10000 creates" >&2
	cr=$(creates "$MNT/small" 10000)
	m="$m $(rss)"
	# the kernel forgets the inodes it holds before each: passthrough_ll keeps a
	# descriptor per known inode, and the creates, the untar and the clone
	# together pass a container's limit (20,000 here, not raisable)
	echo 2 >/proc/sys/vm/drop_caches
	echo "  $1: untar of $tree" >&2
	mkdir "$MNT/untar"
	ut=$(timed "$MNT/untar" tar -xf "$W/tree.tar" -C "$MNT/untar")
	m="$m $(rss)"
	echo 2 >/proc/sys/vm/drop_caches
	echo "  $1: git clone of $tree" >&2
	gc=$(timed "$MNT" git clone -q --no-hardlinks "file://$W/tree.git" "$MNT/clone")
	m="$m $(rss)"
	echo "$1 $round ${sw% *} ${sr% *} ${rw#* } $cr $ut $gc$m" >>"$W/results"
}

: >"$W/results"

# run_jgrfs [NAME [MOUNT_OPTION]]: jgrfs, or jgrfs-uring with -o uring
run_jgrfs() {
	local name=${1:-jgrfs}
	echo "$name: RAID5 over 4 x $size files" >&2
	for i in 0 1 2 3; do truncate -s "$size" "$W/d$i.img"; done
	"$jgrfs" mkfs -l 5 "$W"/d[0-3].img >/dev/null || { echo "bench_fuse: mkfs failed" >&2; exit 1; }
	# shellcheck disable=SC2086
	"$jgrfs" mount $mopts ${2:+-o $2} "$W"/d[0-3].img "$MNT" || exit 1
	DPID=$("$jgrfs" status --json "$MNT" | sed -n 's/^{"pid":\([0-9]*\).*/\1/p')
	echo "$name: daemon $DPID, $(rss) MiB resident (now:peak) after mount" >&2
	workload "$name"
	DPID=""
	fusermount3 -u "$MNT"
	sleep 2
	rm -f "$W"/d[0-3].img
}

run_jgrfs_uring() { run_jgrfs jgrfs-uring uring; }

run_fuse2fs() {
	echo "fuse2fs: ext4 image of $((bytes * 3 / 1048576)) MiB" >&2
	truncate -s $((bytes * 3)) "$W/ext4.img"
	mkfs.ext4 -q -F "$W/ext4.img"
	fuse2fs -o rw "$W/ext4.img" "$MNT" >/dev/null 2>&1 || echo "bench_fuse: fuse2fs mount failed" >&2
	if grep -q " $MNT " /proc/mounts; then
		workload fuse2fs
		fusermount3 -u "$MNT"
		sleep 2
	fi
	rm -f "$W/ext4.img"
}

run_btrfs() {
	echo "btrfs: kernel RAID5 over 4 loop devices of $size" >&2
	devs=""
	for i in 0 1 2 3; do
		truncate -s "$size" "$W/b$i.img"
		l=$(losetup -f --show "$W/b$i.img") || break
		LOOPS="$LOOPS $l"
		devs="$devs $l"
	done
	# without udev the kernel learns the other members from device= options
	# shellcheck disable=SC2086
	set -- $devs
	opts=$(printf 'device=%s,' "$@")
	if mkfs.btrfs -q -f -d raid5 -m raid5 "$@" >/dev/null 2>&1 &&
	   mount -t btrfs -o "${opts%,}" "$1" "$MNT"; then
		# shellcheck disable=SC2086
		workload btrfs-raid5
		umount "$MNT"
	else
		echo "bench_fuse: btrfs raid5 could not be made" >&2
	fi
	for l in $LOOPS; do losetup -d "$l"; done
	LOOPS=""
	rm -f "$W"/b[0-3].img
}

run_passthrough() {
	echo "passthrough: libfuse passthrough_ll over $dir" >&2
	mkdir "$W/pt"
	# it holds an O_PATH descriptor per inode the kernel knows: as many as it
	# may (its own README says to raise the limit; a container may not let us)
	if (ulimit -n 1048576 2>/dev/null || ulimit -n 65536 2>/dev/null
	    exec "$W/passthrough_ll" -o writeback,source="$W/pt" "$MNT"); then
		workload passthrough
		fusermount3 -u "$MNT"
		sleep 1
	else
		echo "bench_fuse: passthrough_ll mount failed" >&2
	fi
	rm -rf "$W/pt"
}

# the tree, tarred and made a repository once, on the work directory's disk
echo "tree: $tree ($(find "$tree" -type f | wc -l) files, $(du -sh "$tree" | cut -f1)), tarred and committed once" >&2
tar -cf "$W/tree.tar" -C "$tree" . || { echo "bench_fuse: tar of $tree failed" >&2; exit 1; }
mkdir "$W/tree.git" && tar -xf "$W/tree.tar" -C "$W/tree.git" &&
	git -C "$W/tree.git" init -q && git -C "$W/tree.git" add -A &&
	git -C "$W/tree.git" -c user.name=bench -c user.email=bench@localhost commit -qm tree ||
	{ echo "bench_fuse: git repository of $tree failed" >&2; exit 1; }

ptsrc=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
have_pt=false
if wanted passthrough; then
	# shellcheck disable=SC2046
	if [ -r "$ptsrc" ] && command -v cc >/dev/null &&
	   cc -O2 -o "$W/passthrough_ll" "$ptsrc" $(pkg-config --cflags --libs fuse3) 2>"$W/cc.err"; then
		have_pt=true
	else
		echo "bench_fuse: passthrough_ll not built (libfuse3-dev examples and cc needed)" >&2
	fi
fi

# the filesystems take turns, round after round: the machine's drift hits all
# alike; and each round starts one further along the list, so that none always
# runs first (the first run of a round was the slowest for whichever ran it)
runners=()
if wanted jgrfs; then
	runners+=(run_jgrfs)
fi
uring_param=/sys/module/fuse/parameters/enable_uring
if wanted jgrfs-uring; then
	[ -e $uring_param ] || { echo "bench_fuse: jgrfs-uring: no FUSE over io_uring in this kernel" >&2; exit 1; }
	uring_was=$(cat $uring_param)
	echo 1 >$uring_param || exit 1
	trap 'echo "$uring_was" >$uring_param; cleanup' EXIT
	runners+=(run_jgrfs_uring)
fi
if wanted fuse2fs && command -v fuse2fs >/dev/null && command -v mkfs.ext4 >/dev/null; then
	runners+=(run_fuse2fs)
fi
if wanted btrfs && grep -qw btrfs /proc/filesystems && command -v mkfs.btrfs >/dev/null; then
	runners+=(run_btrfs)
fi
if $have_pt; then
	runners+=(run_passthrough)
fi
[ ${#runners[@]} -gt 0 ] || { echo "bench_fuse: nothing to run" >&2; exit 1; }
for round in $(seq "$rounds"); do
	[ "$rounds" -gt 1 ] && echo "round $round of $rounds" >&2
	k=$(((round - 1) % ${#runners[@]}))
	for run in "${runners[@]:k}" "${runners[@]:0:k}"; do
		"$run"
	done
done

python3 - "$W/results" <<'PY'
import statistics, sys
res = {}  # name -> {round: [sw, sr, rw, cr, ut, gc]}
mem = {}  # name -> {round: [(RSS, HWM) in MiB after each, or None]}
for l in open(sys.argv[1]):
    f = l.split()
    if f:
        res.setdefault(f[0], {})[int(f[1])] = [float(x) for x in f[2:8]]
        mem.setdefault(f[0], {})[int(f[1])] = [
            tuple(float(y) for y in x.split(":")) if ":" in x else None for x in f[8:14]]
cols = ["seq write MiB/s", "seq read MiB/s", "4K randw+fsync IOPS", "creates/s",
        "untar s", "git clone s"]
timecol = [False, False, False, False, True, True]  # ratio = reference / jgrfs
many = any(len(r) > 1 for r in res.values())
def fmt(k, x):
    return ("%.2f" if timecol[k] else "%.1f") % x
def memfmt(ms):
    """RSS/HWM (MiB) after a workload: medians of the rounds that have them"""
    ms = [m for m in ms if m]
    if not ms:
        return "n/a"
    return "%.0f/%.0f" % (statistics.median(m[0] for m in ms),
                          statistics.median(m[1] for m in ms))
def cell(fig, ms):
    return "%s %9s" % (fig, memfmt(ms))
def row(label, vals, w=21):
    print("%-26s" % label + "".join("%*s" % (w, v) for v in vals))
print("figure, then the daemon's RSS/HWM in MiB after the workload (jgrfs only)")
row("", cols, 24)
for name, rounds in res.items():
    for r in sorted(rounds) if many else ():
        row("%s #%d" % (name, r),
            [cell(fmt(k, x), [mem[name][r][k] if k < len(mem[name][r]) else None])
             for k, x in enumerate(rounds[r])], 24)
    row(name + (" median" if many else ""),
        [cell(fmt(k, statistics.median(v[k] for v in rounds.values())),
              [m[k] if k < len(m) else None for m in mem[name].values()])
         for k in range(len(cols))], 24)
header = True
for jname, ref in [(j, r) for j in ("jgrfs", "jgrfs-uring")
                   for r in ("fuse2fs", "btrfs-raid5", "passthrough", "jgrfs")]:
    j = res.get(jname)
    if not j or ref not in res or ref == jname:
        continue
    both = [r for r in sorted(j) if r in res[ref]]
    ratios = [[(b / a if a else None) if t else (a / b if b else None)
               for a, b, t in zip(j[r], res[ref][r], timecol)] for r in both]
    label = jname + "/" + ref.split("-")[0]
    if header:
        print()
        row("", cols)
        header = False
    for r, v in zip(both, ratios) if many else ():
        row("%s #%d" % (label, r), ["%.2fx" % x if x else "-" for x in v])
    med = []
    for k in range(len(cols)):
        xs = [v[k] for v in ratios if v[k]]
        med.append("%.2fx" % statistics.median(xs) if xs else "-")
    row(label + (" median" if many else ""), med)
PY
