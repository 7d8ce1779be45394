#!/bin/bash
# SPDX-License-Identifier: MIT
# tools/bench/bench_rewrite.sh - two 512 MiB writes on one mount, an idle pause
# between them (issue 46: "the second write is slower than the first").
#
#   sudo tools/bench/bench_rewrite.sh [-r ROUNDS] [-i IDLE_S,...] [-s MiB] [-p] [-P] JGRFS
#
# Per round and per idle time: a fresh volume on 4 sparse 1 GiB members in a
# temporary directory (-P: members written whole with zeros first, so that no
# write of the array lands in a hole of a member file), mounted with default options; `dd bs=1M conv=fsync` of
# -s MiB into a new file, IDLE seconds of nothing, the same into another file.
# For each write: MiB/s, the daemon's minor and major page faults, its CPU
# time (user+system, ms), its VmRSS after, and the memory lines of `jgrfs
# status`. -p: `perf stat` of the daemon during each write too (its task clock,
# page faults and the kernel's share of its cycles). MALLOC_CONF from the
# environment reaches the daemon.
set -u
ROUNDS=3 IDLES="20,1" SIZE=512 PERF=false PREALLOC=false
while getopts "r:i:s:pP" o; do
	case $o in
	r) ROUNDS=$OPTARG ;;
	i) IDLES=$OPTARG ;;
	s) SIZE=$OPTARG ;;
	p) PERF=true ;;
	P) PREALLOC=true ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
JG=$(realpath "${1:?usage: bench_rewrite.sh [-r N] [-i IDLE,...] [-s MiB] JGRFS}")
T=$(mktemp -d /tmp/jgrfs-rewrite.XXXXXX)
MNT=$T/mnt
mkdir "$MNT"
trap '"$JG" umount -t 60 "$MNT" >/dev/null 2>&1; rm -rf "$T"' EXIT

# minflt majflt utime stime (clock ticks) of PID: fields 10, 12, 14, 15 of stat
proc_counts() {
	awk '{ print $10, $12, $14 + $15 }' "/proc/$1/stat"
}

one_write() { # NAME PID
	local a b t0 t1 rss
	local perf=""
	if $PERF; then
		perf stat -e task-clock,page-faults,cycles:u,cycles:k -p "$2" -o "$T/perf.txt" &
		perf=$!
		sleep 0.5
	fi
	a=$(proc_counts "$2")
	t0=$(date +%s.%N)
	dd if=/dev/zero of="$MNT/$1" bs=1M count="$SIZE" conv=fsync status=none || return 1
	t1=$(date +%s.%N)
	b=$(proc_counts "$2")
	if [ -n "$perf" ]; then
		kill -INT "$perf"
		wait "$perf"
		grep -E "task-clock|page-faults|cycles" "$T/perf.txt" | sed "s/^ */$1 perf: /"
	fi
	rss=$(awk '/^VmRSS|^VmHWM/ { printf "%s=%s ", $1, $2 }' "/proc/$2/status")
	read -r a1 a2 a3 <<<"$a"
	read -r b1 b2 b3 <<<"$b"
	awk -v s="$SIZE" -v t0="$t0" -v t1="$t1" -v mf=$((b1 - a1)) -v jf=$((b2 - a2)) \
		-v cpu=$(((b3 - a3) * 1000 / $(getconf CLK_TCK))) -v n="$1" -v rss="$rss" \
		'BEGIN { printf "%s: %.1f MiB/s %.2f s minflt=%d majflt=%d cpu_ms=%d %s\n",
			 n, s / (t1 - t0), t1 - t0, mf, jf, cpu, rss }'
}

# the memory lines of jgrfs status
mem_lines() {
	"$JG" status "$MNT" | awk '/^memory:/ { on = 1; print; next } on && /^ / { print; next } { on = 0 }'
}

echo "# $(date -u) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $JG"
echo "# MALLOC_CONF=${MALLOC_CONF:-(unset)}; ${SIZE} MiB a write; idle: $IDLES s;" \
	"members $($PREALLOC && echo "written whole first (-P)" || echo sparse)"
for r in $(seq "$ROUNDS"); do
	for idle in ${IDLES//,/ }; do
		rm -f "$T"/d*.img
		for i in 0 1 2 3; do
			if $PREALLOC; then
				dd if=/dev/zero of="$T/d$i.img" bs=1M count=1024 conv=fsync status=none
			else
				truncate -s 1G "$T/d$i.img"
			fi
		done
		"$JG" mkfs -l 5 "$T"/d0.img "$T"/d1.img "$T"/d2.img "$T"/d3.img >/dev/null 2>&1 ||
			{ echo "mkfs failed"; exit 1; }
		"$JG" mount "$T"/d0.img "$T"/d1.img "$T"/d2.img "$T"/d3.img "$MNT" >"$T/mount.log" 2>&1 ||
			{ cat "$T/mount.log"; exit 1; }
		pid=$("$JG" status --json "$MNT" | sed -n 's/^{"pid":\([0-9]*\).*/\1/p')
		echo "--- round $r idle $idle s (load $(cut -d' ' -f1 /proc/loadavg)) pid $pid"
		one_write w1 "$pid"
		mem_lines
		sleep "$idle"
		echo "after idle: $(awk '/^VmRSS/ { printf "VmRSS=%s", $2 }' "/proc/$pid/status")"
		one_write w2 "$pid"
		mem_lines
		"$JG" umount -t 60 "$MNT" >/dev/null || { echo "umount failed"; exit 1; }
	done
done
