#!/bin/bash
# SPDX-License-Identifier: MIT
# kill -9 of the daemon: every fsynced file survives. Files are written and
# fsynced, more is written without fsync while the daemon is killed; the next
# mount recovers and logs one recovery line; every fsynced file reads back
# byte for byte; after a clean unmount fsck -n is clean and the next mount has
# nothing to recover. Two rounds: data=declared (the default) and data=ordered,
# on one volume, so made without data checksums (those refuse ordered; crashtest
# kills the daemon over volumes made with the default, which has them).
#
#   fuse_crash.sh PATH/TO/jgrfs PATH/TO/jgrfs-crash
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"

it_make_members 4 256M
it_mkfs -l 5 --no-data-checksums
head -c 4M /dev/urandom >"$T/pool"

# write_synced DIR N: N files of varied sizes, each fsynced (dd conv=fsync); the
# expected contents are kept in $T/exp/DIR
write_synced() {
	mkdir -p "$MNT/$1" "$T/exp/$1" || it_fail "mkdir $1"
	for i in $(seq 1 "$2"); do
		head -c $((i * 3001)) "$T/pool" >"$T/exp/$1/f$i"
		dd if="$T/exp/$1/f$i" of="$MNT/$1/f$i" bs=64k conv=fsync status=none ||
			it_fail "dd $1/f$i"
	done
	# an fsynced overwrite in the middle of an existing file
	for f in "$MNT/$1/f$2" "$T/exp/$1/f$2"; do
		dd if="$T/pool" of="$f" bs=4096 skip=9 seek=2 count=3 conv=notrunc,fsync status=none ||
			it_fail "dd overwrite"
	done
}

check_synced() {
	for i in $(seq 1 "$2"); do
		cmp "$T/exp/$1/f$i" "$MNT/$1/f$i" || it_fail "$1/f$i differs from what was fsynced"
	done
}

round=0
for mode in declared ordered; do
	round=$((round + 1))
	it_log "round $round: data=$mode"
	it_mount -o data=$mode
	write_synced "r$round" 40
	# unsynced work in flight when the daemon dies
	( while :; do
		cat "$T/pool" >"$MNT/r$round-junk" 2>/dev/null || exit 0
		rm -f "$MNT/r$round-junk" 2>/dev/null || exit 0
	done ) 2>/dev/null &
	IT_PIDS="$IT_PIDS $!"
	cp -a "$(dirname "$0")/../../src" "$MNT/r$round-src" 2>/dev/null
	sleep 1
	it_crash
	wait 2>/dev/null

	it_log "remount after kill -9"
	it_mount -o data=$mode
	cat "$T/mount.log"
	[ "$(grep -c 'recovery:' "$T/mount.log")" = 1 ] || it_fail "expected one recovery line"
	grep -q 'array_was_dirty=1' "$T/mount.log" || it_fail "recovery line: array was dirty"
	"$JGRFS" status --json "$MNT" | grep -q '"array_was_dirty":true' || it_fail "status: recovery"
	for r in $(seq 1 $round); do
		check_synced "r$r" 40
	done
	it_unmount
	it_fsck_clean
	it_mount
	grep -q 'recovery:' "$T/mount.log" && it_fail "recovery after a clean unmount"
	for r in $(seq 1 $round); do
		check_synced "r$r" 40
	done
	it_unmount
done
it_log "power cut: member writes and flushes from the Nth on dropped, unflushed ones kept or torn, the daemon dies"
mkdir -p "$T/exp/cut"
# the cut kills the daemon on the spot (jgrfs-crash --powercut,
# tools/crash/faults.h): no fsync can be acknowledged after it, so every dd
# that returned 0 must survive
IT_FAULTS="--powercut after=1500,seed=11,keep=50,tear,flushes" it_mount
mkdir "$MNT/cut" || it_fail "mkdir cut"
n=0
while [ $n -lt 3000 ]; do
	n=$((n + 1))
	head -c $((n * 1013 % 70000 + 1)) "$T/pool" >"$T/exp/cut/f$n"
	dd if="$T/exp/cut/f$n" of="$MNT/cut/f$n" bs=64k conv=fsync status=none 2>/dev/null || break
	echo "$n" >>"$T/cut.done"
done
[ $n -lt 3000 ] || it_fail "the power cut never came (raise the workload or lower after=)"
it_log "power went at file $n"
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
it_mount
grep -q 'recovery: array_was_dirty=1' "$T/mount.log" || { cat "$T/mount.log"; it_fail "no recovery"; }
while read -r i; do
	cmp "$T/exp/cut/f$i" "$MNT/cut/f$i" || it_fail "cut/f$i fsynced before the cut, differs after"
done <"$T/cut.done"
it_unmount
it_fsck_clean

it_log "SIGTERM: a clean unmount, unsynced data kept"
it_mount
cp "$T/pool" "$MNT/unsynced" || it_fail "cp"
pid=$(it_daemon_pid)
kill -TERM "$pid"
i=0
while kill -0 "$pid" 2>/dev/null; do
	[ $i -lt 600 ] || it_fail "daemon still running 60 s after SIGTERM"
	sleep 0.1
	i=$((i + 1))
done
grep -q " $MNT fuse" /proc/mounts && it_fail "still mounted after SIGTERM"
it_fsck_clean
it_mount
grep -q 'recovery:' "$T/mount.log" && it_fail "recovery after SIGTERM"
cmp "$T/pool" "$MNT/unsynced" || it_fail "data written before SIGTERM lost"
it_unmount
it_finish
