#!/bin/bash
# SPDX-License-Identifier: MIT
# Hot spares (issue 22): a member that fails while mounted is rebuilt onto a
# spare without anyone typing a command.
#
# mkfs --spare writes a spare superblock; the spare is given to mount with the
# members and status lists it idle. The failing member is a loop device whose
# backing file is truncated to nothing (losetup -c), as in fuse_degraded.sh: a
# write then fails it, and -- no command typed -- the daemon takes the spare
# and rebuilds onto it; status goes healthy within the timeout, names the spare
# as the member of that role and lists no spare. Every file reads back (page
# cache dropped). Then `jgrfs spare add` (refused for a working member's
# device; a new file accepted, listed idle, also in --json) and `spare remove`
# (no longer listed, its superblock wiped). Unmount; fsck -n of the members
# (the spare in the failed member's place) is clean. Then the failed member
# comes back, listed with the others: the mount leaves it out, untouched.
#
#   fuse_spare.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
command -v losetup >/dev/null || it_skip "no losetup"

it_make_members 4 128M
truncate -s 128M "$T/spare0.img" || it_fail "truncate"
loop=$(losetup -f --show "$T/disk3.img" 2>/dev/null) || it_skip "no free loop device"
IT_LOOPS=$loop
DEVS="$T/disk0.img $T/disk1.img $T/disk2.img $loop"
it_mkfs -l 5 --spare "$T/spare0.img"
DEVS="$DEVS $T/spare0.img"
it_mount

"$JGRFS" status "$MNT" >"$T/status.txt" || { cat "$T/status.txt"; it_fail "status not healthy"; }
grep -q "spare .*idle .*spare0.img" "$T/status.txt" || { cat "$T/status.txt"; it_fail "status: spare0 idle"; }
"$JGRFS" status --json "$MNT" | grep -q '"spare_list":\[{"name":"[^"]*spare0.img","state":"idle"' ||
	it_fail "status --json: spare0 idle"

it_log "fill the volume"
cp -a "$(dirname "$0")/../../src" "$T/src" || it_fail "no source tree to copy"
SRC=$T/src
cp -a "$SRC" "$MNT/src" || it_fail "cp -a"
head -c 16M /dev/urandom >"$T/rand"
dd if="$T/rand" of="$MNT/rand" bs=1M conv=fsync status=none || it_fail "dd"

# the member as it is now: it comes back at the end, beside its replacement
cp --sparse=always "$T/disk3.img" "$T/disk3.back" || it_fail "cp disk3"

it_log "member $loop fails; no command follows"
truncate -s 0 "$T/disk3.img"
losetup -c "$loop" || it_fail "losetup -c"
head -c 4M /dev/urandom >"$T/new"
dd if="$T/new" of="$MNT/new" bs=1M conv=fsync status=none || it_fail "write after the failure"

it_log "wait for the rebuild onto the spare"
i=0
while :; do
	"$JGRFS" status "$MNT" >"$T/status.txt"
	rc=$?
	[ $rc = 0 ] && ! grep -q rebuilding "$T/status.txt" && break
	[ $i -lt 1200 ] || { cat "$T/status.txt"; it_fail "not healthy 120 s after the failure (status exit $rc)"; }
	sleep 0.1
	i=$((i + 1))
done
cat "$T/status.txt"
grep -q "member  3  ok .*spare0.img" "$T/status.txt" || it_fail "status: spare0 is not member 3"
grep -q "spare  " "$T/status.txt" && it_fail "status: a spare is still listed"
"$JGRFS" status --json "$MNT" | grep -q '"spare_list":\[\]' || it_fail "status --json: spare list not empty"
# the daemon's own log went to syslog when it detached: its event counters say it
# (read errors the failing member returned before it was failed may be counted
# between them: how many depends on the machine's timing)
for ev in "Fail 1," "RebuildStarted 1," "RebuildFinished 1," "SpareActive 1"; do
	grep -q "^events: .*$ev" "$T/status.txt" ||
		it_fail "status: events of one rebuild onto the spare: no '$ev'"
done


sync
echo 3 >/proc/sys/vm/drop_caches
diff -r "$SRC" "$MNT/src" || it_fail "diff -r after the rebuild"
cmp "$T/rand" "$MNT/rand" && cmp "$T/new" "$MNT/new" || it_fail "files after the rebuild"

it_log "spare add and remove"
"$JGRFS" spare add "$MNT" "$T/disk0.img" 2>"$T/spare.err" && it_fail "spare add of a working member accepted"
cat "$T/spare.err"
"$JGRFS" spare add --size 128M "$MNT" "$T/spare1.img" || it_fail "spare add"
"$JGRFS" status "$MNT" >"$T/status.txt" || { cat "$T/status.txt"; it_fail "status after spare add"; }
grep -q "spare .*idle .*spare1.img" "$T/status.txt" || { cat "$T/status.txt"; it_fail "status: spare1 idle"; }
"$JGRFS" status --json "$MNT" | grep -q '"spare_list":\[{"name":"[^"]*spare1.img","state":"idle"' ||
	it_fail "status --json: spare1 idle"
"$JGRFS" spare remove "$MNT" "$T/disk1.img" 2>/dev/null && it_fail "spare remove of a member accepted"
"$JGRFS" spare remove "$MNT" "$T/spare1.img" || it_fail "spare remove"
"$JGRFS" status "$MNT" | grep -q "spare  " && it_fail "status: spare1 still listed"
[ "$(od -An -tx4 -N4 "$T/spare1.img" | tr -d ' ')" = 00000000 ] || it_fail "spare1 superblock not wiped"
it_unmount

DEVS="$T/disk0.img $T/disk1.img $T/disk2.img $T/spare0.img"
it_fsck_clean

# raid (S14): a disk that failed and comes back, listed with the spare that
# took its role, claims that role at an older event: left out, untouched
it_log "the failed member back, listed beside its replacement"
sum=$(md5sum <"$T/disk3.back")
DEVS="$DEVS $T/disk3.back"
it_mount
grep -q "disk3.back claims role 3 .*it was replaced; assembling without it" "$T/mount.log" ||
	{ cat "$T/mount.log"; it_fail "mount: no warning naming the replaced member"; }
cmp "$T/rand" "$MNT/rand" && cmp "$T/new" "$MNT/new" || it_fail "files with the old member listed"
it_unmount
# examine says the same of it, device by device, and writes nothing either
# shellcheck disable=SC2086
"$JGRFS" examine $DEVS >"$T/examine.out" 2>&1 || { cat "$T/examine.out"; it_fail "examine"; }
grep -q "disk3.back: role 3, .*left out: its role is .*spare0.img's now" "$T/examine.out" ||
	{ cat "$T/examine.out"; it_fail "examine: the replaced member not named as left out"; }
# shellcheck disable=SC2086
"$JGRFS" examine --json $DEVS | grep -q '"path":"[^"]*disk3.back".*"replaced_by":"[^"]*spare0.img"' ||
	it_fail "examine --json: no replaced_by on the replaced member"
[ "$(md5sum <"$T/disk3.back")" = "$sum" ] || it_fail "the replaced member was written"
it_finish
