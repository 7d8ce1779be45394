#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/bench/bench_rtt.sh - what one FUSE request costs its caller: the time of
# an fstat(2) that the kernel must ask the daemon (a GETATTR, the mount's
# attribute timeout 0), on jgrfs over /dev/fuse and over io_uring (with its
# default uring_poll= and without it, uring.c (R1)), on libfuse's
# passthrough_ll over /dev/fuse, and on a local file (no request: the system
# call alone). Each with the caller left to the scheduler ("free") and kept on
# one CPU ("on CPU N"). Prints figures; asserts nothing.
#
#   sudo tools/bench/bench_rtt.sh [-n CALLS] [-r ROUNDS] [-c CPU] [-d DIR] PATH/TO/jgrfs
#
#   -n CALLS   fstat calls a round (default 20000)
#   -r ROUNDS  rounds; the median round is printed (default 7)
#   -c CPU     the CPU of the pinned runs (default 0)
#   -d DIR     where the member files and the passthrough directory go (/var/tmp)
#
# Why both: the kernel answers a caller waiting on a request of the ring with a
# plain wake-up, so on a machine with an idle CPU the caller is moved there at
# each answer unless no CPU is idle (docs/design/fuse-uring.md, "What a
# request costs"); kept on one CPU, it stays beside the ring's thread there.
set -u

calls=20000
rounds=7
cpu=0
dir=/var/tmp
while getopts "n:r:c:d:h" opt; do
	case $opt in
	n) calls=$OPTARG ;;
	r) rounds=$OPTARG ;;
	c) cpu=$OPTARG ;;
	d) dir=$OPTARG ;;
	*) sed -n '4,18p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
jgrfs=${1:?usage: bench_rtt.sh [-n CALLS] [-r ROUNDS] [-c CPU] [-d DIR] PATH/TO/jgrfs}
[ "$(id -u)" = 0 ] || { echo "bench_rtt: needs root (mounts, fuse.enable_uring)" >&2; exit 1; }
taskset -c "$cpu" true 2>/dev/null || { echo "bench_rtt: -c $cpu: not a CPU we may use" >&2; exit 2; }

W=$(mktemp -d "$dir/jgrfs-rtt.XXXXXX") || exit 1
MNT=$W/mnt
mkdir "$MNT"
uring_param=/sys/module/fuse/parameters/enable_uring
uring_was=$(cat $uring_param 2>/dev/null)
cleanup() {
	set +e
	grep -q " $MNT " /proc/mounts && { fusermount3 -u "$MNT"; sleep 1; }
	[ -n "$uring_was" ] && echo "$uring_was" >$uring_param
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# measure LABEL FILE: "LABEL free_us pinned_us"
measure() {
	local label=$1 f=$2 free pinned
	free=$(python3 - "$f" "$calls" "$rounds" <"$W/rtt.py")
	pinned=$(taskset -c "$cpu" python3 - "$f" "$calls" "$rounds" <"$W/rtt.py")
	echo "$label $free $pinned" >>"$W/results"
}

cat >"$W/rtt.py" <<'PY'
import os, sys, time
f, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(f, os.O_RDONLY)
per = []
for _ in range(rounds):
    t = time.perf_counter()
    for _ in range(n):
        os.fstat(fd)
    per.append((time.perf_counter() - t) / n * 1e6)
per.sort()
print("%.1f" % per[len(per) // 2])
PY
: >"$W/results"

echo x >"$W/local"
measure "local file (no request)" "$W/local"

for i in 0 1 2 3; do truncate -s 256M "$W/d$i.img"; done
"$jgrfs" mkfs -q -l 5 "$W"/d[0-3].img >/dev/null 2>&1 || { echo "bench_rtt: mkfs failed" >&2; exit 1; }
# jgrfs_one LABEL OPTIONS: mount with OPTIONS, measure, unmount
jgrfs_one() {
	"$jgrfs" mount -o "$2" "$W"/d[0-3].img "$MNT" || exit 1
	echo x >"$MNT/f"
	measure "$1" "$MNT/f"
	"$jgrfs" umount -q "$MNT" || exit 1
}
jgrfs_one "jgrfs, /dev/fuse" timeout=0
if [ -n "$uring_was" ] && echo 1 >$uring_param; then
	jgrfs_one "jgrfs, io_uring" timeout=0,uring
	jgrfs_one "jgrfs, io_uring, no polling" timeout=0,uring,uring_poll=0
else
	echo "bench_rtt: no FUSE over io_uring in this kernel: its line is left out" >&2
fi

ptsrc=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c
# shellcheck disable=SC2046
if [ -r "$ptsrc" ] && cc -O2 -o "$W/passthrough_ll" "$ptsrc" $(pkg-config --cflags --libs fuse3) 2>/dev/null; then
	mkdir "$W/pt" && echo x >"$W/pt/f"
	if "$W/passthrough_ll" -o timeout=0,source="$W/pt" "$MNT"; then
		measure "passthrough_ll, /dev/fuse" "$MNT/f"
		fusermount3 -u "$MNT"
	fi
else
	echo "bench_rtt: passthrough_ll not built (libfuse3-dev examples and cc needed)" >&2
fi

echo "one fstat, median of $rounds rounds of $calls calls, $(nproc) CPUs, $(uname -r)"
awk -v cpu="$cpu" '
{ n = NF; label = $1; for (i = 2; i <= n - 2; i++) label = label " " $i
  free[NR] = $(n - 1); pin[NR] = $n; name[NR] = label }
END {
  printf "%-28s %10s %12s %8s\n", "", "free us", "on CPU " cpu " us", "ratio"
  for (i = 1; i <= NR; i++)
    printf "%-28s %10.1f %12.1f %7.2fx\n", name[i], free[i], pin[i], free[i] / pin[i]
}' "$W/results"
