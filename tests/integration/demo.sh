#!/bin/bash
# SPDX-License-Identifier: MIT
# `make demo` as a newcomer runs it (tools/demo.sh, in a private directory):
# it makes and mounts the 4-disk RAID5 and says how to use it; run again it
# says the volume is already mounted; after `kill -9` of the daemon it clears
# the dead mount, remounts, prints what recovery did, and the fsynced file is
# there; `make demo-stop` unmounts and the array is clean (fsck -n); a second
# `make demo` mounts the same volume without making a new one.
#
#   demo.sh PATH/TO/jgrfs PATH/TO/tools/demo.sh
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$1"
DEMO_SH=${2:?usage: demo.sh PATH/TO/jgrfs PATH/TO/demo.sh}
export JGRFS_DEMO_DIR=$T/demo
MNT=$T/demo/mnt	# for it_cleanup and it_daemon_pid
DEVS="$T/demo/disk0.img $T/demo/disk1.img $T/demo/disk2.img $T/demo/disk3.img"

demo() {
	sh "$DEMO_SH" "$@" "$JGRFS" >"$T/demo.out" 2>&1
	local rc=$?
	cat "$T/demo.out"
	return $rc
}

it_log "make demo: a new volume"
demo || it_fail "demo exit $?"
grep -q "creating 4 sparse" "$T/demo.out" || it_fail "demo did not say it creates the volume"
grep -q "jgrfs is mounted at $MNT" "$T/demo.out" || it_fail "demo did not say where it is mounted"
grep -q " $MNT fuse" /proc/mounts || it_fail "demo said mounted, $MNT is not"
head -c 3M /dev/urandom >"$T/f"
dd if="$T/f" of="$MNT/f" bs=1M conv=fsync status=none || it_fail "dd to the demo volume"

it_log "make demo again: already mounted"
demo || it_fail "second demo exit $?"
grep -q "already mounted" "$T/demo.out" || it_fail "second demo did not say already mounted"

it_log "kill -9, then make demo: recovery"
pid=$(it_daemon_pid)
[ -n "$pid" ] || it_fail "no daemon pid"
kill -9 "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
demo || it_fail "demo after kill -9 exit $?"
grep -q "dead mount" "$T/demo.out" || it_fail "demo did not clear the dead mount"
grep -q "recovery" "$T/demo.out" || it_fail "demo did not print what recovery did"
cmp -s "$T/f" "$MNT/f" || it_fail "the fsynced file differs after recovery"
grep -q "creating" "$T/demo.out" && it_fail "demo made a new volume after a crash"

it_log "make demo-stop"
demo --stop || it_fail "demo-stop exit $?"
grep -q "unmounted" "$T/demo.out" || it_fail "demo-stop did not say unmounted"
grep -q " $MNT fuse" /proc/mounts && it_fail "still mounted after demo-stop"
it_fsck_clean
demo --stop || it_fail "demo-stop with nothing mounted exit $?"
grep -q "nothing mounted" "$T/demo.out" || it_fail "demo-stop did not say nothing is mounted"

it_log "make demo: the same volume again"
demo || it_fail "demo remount exit $?"
cmp -s "$T/f" "$MNT/f" || it_fail "the file differs after remount"
demo --stop || it_fail "final demo-stop"
it_finish
