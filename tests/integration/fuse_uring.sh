#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/fuse_uring.sh - FUSE requests over io_uring (-o uring,
# src/fuse/uring.c), and the mount where the kernel does not offer it.
#
# With fuse.enable_uring set, a mount with -o uring serves each CPU's queue
# with a thread per entry; writers pinned to each CPU (a request goes to its caller's CPU's queue)
# copy a tree of small and large files, rename and remove some, and the tree
# reads back the same after a remount over /dev/fuse. With the parameter unset
# (as on a kernel without it: its FUSE_INIT offers no such flag) -o uring
# mounts on /dev/fuse, says so in one line, and the files read back. An idle
# mount's ring threads sleep (uring.c (R1): they look for a next request only
# for uring_poll= us after a reply). The
# parameter is restored at exit (it changes only what new mounts are offered).
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
P=/sys/module/fuse/parameters/enable_uring
[ -e $P ] || it_skip "this kernel has no FUSE over io_uring (Linux 6.14+)"
WAS=$(cat $P)
echo 1 >$P 2>/dev/null || it_skip "fuse.enable_uring cannot be set"
trap 'rc=$?; echo "$WAS" >$P; (exit $rc); it_cleanup' EXIT

it_make_members 3 128M
it_mkfs -l 5
it_mount -o uring
pid=$(it_daemon_pid)
stat "$MNT" >/dev/null
n=$(grep -cx fuse-uring /proc/"$pid"/task/*/comm | awk -F: '{s += $2} END {print s}')
cpus=$(($(sed 's/.*-//' /sys/devices/system/cpu/possible) + 1))
# a thread per entry: 8 entries a queue, fewer past 4 CPUs (32 in all), at least 2
depth=$((32 / cpus)); [ $depth -gt 8 ] && depth=8; [ $depth -lt 2 ] && depth=2
[ "$n" = $((cpus * depth)) ] ||
	it_fail "-o uring: $n queue threads, expected $depth per possible CPU ($cpus)"

# the source: small files, one of 3 MiB (writes of max_write), names of 255 bytes
mkdir -p "$T/src/d1" "$T/src/d2"
for i in $(seq 1 200); do head -c $((i * 37)) /dev/urandom >"$T/src/d1/f$i"; done
head -c $((3 << 20)) /dev/urandom >"$T/src/d2/big"
long=$(printf 'n%.0s' $(seq 255))
echo long >"$T/src/d2/$long"
ln -s d1/f7 "$T/src/link"

for c in $(seq 0 $((cpus - 1))); do
	taskset -c "$c" cp -a "$T/src" "$MNT/copy$c" &
done
wait
for c in $(seq 0 $((cpus - 1))); do
	diff -r "$T/src" "$MNT/copy$c" || it_fail "copy over io_uring (CPU $c) differs"
done
mv "$MNT/copy0/d1/f1" "$MNT/copy0/d1/moved" && rm "$MNT/copy0/d1/f2" || it_fail "rename/unlink"
sync

# (R1): after its reply a queue's thread looks for the next request for
# uring_poll= us (50 by default), then sleeps: an idle mount spends no CPU in
# its ring threads. Over 2 s without a request they may take a tick or two of
# CPU; a thread that kept looking would take 2 s of one.
ring_ticks() {
	cat /proc/"$pid"/task/*/stat 2>/dev/null |
		awk '$2 == "(fuse-uring)" { t += $14 + $15 } END { print t + 0 }'
}
sleep 0.5
t0=$(ring_ticks)
sleep 2
t1=$(ring_ticks)
[ $((t1 - t0)) -le 20 ] ||
	it_fail "(R1): the ring threads took $((t1 - t0)) ticks of CPU in 2 s without a request"
echo 3 >/proc/sys/vm/drop_caches	# forgets: on /dev/fuse beside the ring
[ "$(ls "$MNT/copy0/d1" | wc -l)" = 199 ] || it_fail "readdir after rename and unlink"
it_unmount

it_mount -o no_uring
grep -qx fuse-uring /proc/"$(it_daemon_pid)"/task/*/comm && it_fail "-o no_uring serves a queue"
cmp "$T/src/d2/big" "$MNT/copy1/d2/big" || it_fail "3 MiB file after remount"
cmp "$T/src/d1/f1" "$MNT/copy0/d1/moved" || it_fail "renamed file after remount"
[ -e "$MNT/copy0/d1/f2" ] && it_fail "removed file is back after remount"
it_unmount

# a kernel that does not offer it: /dev/fuse, one line saying why. The line
# comes with the kernel's INIT, after a background daemon has let go of its
# stderr (syslog only): mounted in the foreground here, to read it.
echo 0 >$P
# shellcheck disable=SC2086
"$JGRFS" mount -f -o uring $DEVS "$MNT" >"$T/fg.log" 2>&1 &
fg=$!
IT_PIDS="$IT_PIDS $fg"
for _ in $(seq 1 300); do grep -q " $MNT fuse" /proc/mounts && break; sleep 0.1; done
grep -q " $MNT fuse" /proc/mounts || { cat "$T/fg.log"; it_fail "mount -f -o uring did not mount"; }
stat "$MNT" >/dev/null
for _ in $(seq 1 100); do grep -q "does not offer FUSE over io_uring" "$T/fg.log" && break; sleep 0.1; done
grep -q "the kernel does not offer FUSE over io_uring" "$T/fg.log" ||
	{ cat "$T/fg.log"; it_fail "-o uring without the kernel's offer: no line saying so"; }
grep -qx fuse-uring /proc/"$(it_daemon_pid)"/task/*/comm && it_fail "a queue without the offer"
diff -r "$T/src/d1" "$MNT/copy1/d1" || it_fail "files over the /dev/fuse fallback differ"
it_unmount
wait "$fg" || it_fail "the foreground daemon exited $?"
it_fsck_clean
it_finish
