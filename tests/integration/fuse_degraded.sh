#!/bin/bash
# SPDX-License-Identifier: MIT
# A member that fails while mounted: the volume keeps working degraded and
# `jgrfs status` says so.
#
# The failing member is a real block device: a loop device over a file. While
# the daemon holds it open, its backing file is truncated to nothing and the
# loop device resized (losetup -c): from then on every read of the member hits
# the end of the device (the daemon's member I/O returns -EIO) and every write
# fails with -ENOSPC, as a disk that dropped off the bus. Then: every file reads
# back right (through parity, with the kernel's page cache dropped so that the
# reads reach the daemon), new files can be written, status reports degraded
# and the member failed; the volume unmounts cleanly, mounts again degraded from
# the three remaining members; the lost member is rebuilt online onto a new file
# (jgrfs replace) while files are written; the rebuilt array mounts whole and
# fsck -n is clean.
#
#   fuse_degraded.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
command -v losetup >/dev/null || it_skip "no losetup"

it_make_members 4 256M
loop=$(losetup -f --show "$T/disk3.img" 2>/dev/null) || it_skip "no free loop device"
IT_LOOPS=$loop
DEVS="$T/disk0.img $T/disk1.img $T/disk2.img $loop"
it_mkfs -l 5
it_mount

it_log "fill the volume"
cp -a "$(dirname "$0")/../../src" "$T/src" || it_fail "no source tree to copy"
SRC=$T/src
cp -a "$SRC" "$MNT/src" || it_fail "cp -a"
head -c 16M /dev/urandom >"$T/rand"
dd if="$T/rand" of="$MNT/rand" bs=1M conv=fsync status=none || it_fail "dd"
"$JGRFS" status "$MNT" | grep -q healthy || it_fail "status: healthy before the failure"

it_log "member $loop fails"
truncate -s 0 "$T/disk3.img"
losetup -c "$loop" || it_fail "losetup -c"
[ "$(blockdev --getsize64 "$loop")" = 0 ] || it_fail "loop device did not shrink"

sync
echo 3 >/proc/sys/vm/drop_caches
diff -r "$SRC" "$MNT/src" || it_fail "diff -r with a failed member"
cmp "$T/rand" "$MNT/rand" || it_fail "read with a failed member"
head -c 5M /dev/urandom >"$T/new"
dd if="$T/new" of="$MNT/new" bs=1M conv=fsync status=none || it_fail "write with a failed member"
mkdir "$MNT/newdir" && cp -a "$SRC/base" "$MNT/newdir/" || it_fail "create with a failed member"
echo 3 >/proc/sys/vm/drop_caches
cmp "$T/new" "$MNT/new" || it_fail "read back a file written degraded"

it_log "status says degraded"
"$JGRFS" status "$MNT" >"$T/status.txt"
rc=$?
cat "$T/status.txt"
[ $rc = 3 ] || it_fail "status exit $rc, expected 3 (degraded)"
grep -q DEGRADED "$T/status.txt" || it_fail "status: DEGRADED"
grep -q "failed .*$loop" "$T/status.txt" || it_fail "status: member $loop failed"
"$JGRFS" status --json "$MNT" | grep -q '"degraded":true' || it_fail "status --json degraded"

it_log "unmount, mount again from the three members left"
it_unmount
DEVS="$T/disk0.img $T/disk1.img $T/disk2.img"
it_mount
"$JGRFS" status "$MNT" | grep -q DEGRADED || it_fail "remounted volume not degraded"
diff -r "$SRC" "$MNT/src" || it_fail "diff -r after degraded remount"
cmp "$T/rand" "$MNT/rand" && cmp "$T/new" "$MNT/new" || it_fail "data after degraded remount"
diff -r "$SRC/base" "$MNT/newdir/base" || it_fail "newdir after degraded remount"

it_log "replace the member online while writing"
cp -a "$SRC" "$MNT/during" &
writer=$!
"$JGRFS" replace --size 256M --wait "$MNT" "$T/new3.img" >"$T/replace.log" 2>&1 ||
	{ cat "$T/replace.log"; it_fail "replace"; }
wait $writer || it_fail "cp -a during the rebuild"
"$JGRFS" status "$MNT" >"$T/status.txt" || { cat "$T/status.txt"; it_fail "status not healthy after replace"; }
grep -q "ok .*new3.img" "$T/status.txt" || { cat "$T/status.txt"; it_fail "new member not in status"; }
diff -r "$SRC" "$MNT/during" || it_fail "files written during the rebuild"
it_unmount

it_log "mount the rebuilt array: whole again"
DEVS="$T/disk0.img $T/disk1.img $T/disk2.img $T/new3.img"
it_mount
"$JGRFS" status "$MNT" | grep -q healthy || it_fail "rebuilt array not healthy"
diff -r "$SRC" "$MNT/src" && diff -r "$SRC" "$MNT/during" || it_fail "data after rebuild"
cmp "$T/rand" "$MNT/rand" && cmp "$T/new" "$MNT/new" || it_fail "files after rebuild"
it_unmount
it_fsck_clean
it_finish
