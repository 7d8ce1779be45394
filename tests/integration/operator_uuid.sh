#!/bin/bash
# SPDX-License-Identifier: MIT
# Assembly by UUID (issue 44): `jgrfs mount UUID=<uuid>`, `fsck UUID=`,
# `examine --scan` and `status` with no argument find the members and hot
# spares themselves, so that a member or spare left out of a list typed by
# hand is not simply absent.
#
# Over member files listed in a config file ($JGRFS_CONF): the scan lists the
# array, mount UUID= takes every member and the spare (each named), status
# with no argument shows the volume, fsck UUID= checks it; a mount given its
# members by path warns about the spare it leaves out. Refused, with nothing
# written (sha256 of every member before and after) and nothing mounted: a
# UUID no device holds, a malformed one, a member missing (still needs
# -o degraded), two devices claiming one role (a copy of a member; a loop
# device over a member file the config file also lists). Over loop devices
# (the config file empty): mount -o members=UUID= (the fstab form) finds them
# through the block scan. Last, -o degraded with UUID= mounts without a
# member, and status with no argument says degraded (exit 3).
#
#   operator_uuid.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"

it_make_members 4 64M
truncate -s 64M "$T/spare0.img" || it_fail "truncate"
it_mkfs -l 5 --spare "$T/spare0.img"
D0=$T/disk0.img D1=$T/disk1.img D2=$T/disk2.img D3=$T/disk3.img SP=$T/spare0.img
ALL="$D0 $D1 $D2 $D3 $SP"
U=$("$JGRFS" examine "$D0" | awk '$1 == "uuid" { print $2; exit }')
[ ${#U} = 36 ] || it_fail "no UUID from jgrfs examine: '$U'"
it_log "array UUID=$U"

export JGRFS_CONF=$T/jgrfs.conf
cat >"$JGRFS_CONF" <<EOF
# the test's array (a comment line, and one after a line)
ARRAY UUID=$U DEVICES=$T/disk*.img,$SP   # members by glob, the spare by path
EOF

digests() {
	# shellcheck disable=SC2086
	sha256sum $ALL "$@"
}

# refused RC PHRASE -- jgrfs ARGS...: exits RC, says PHRASE, writes no member, mounts nothing
refused() {
	local want=$1 phrase=$2 rc
	shift 3
	digests >"$T/before.sum"
	"$JGRFS" "$@" >"$T/out.log" 2>&1
	rc=$?
	cat "$T/out.log"
	[ "$rc" = "$want" ] || it_fail "jgrfs $*: exit $rc, expected $want"
	grep -qF -- "$phrase" "$T/out.log" || it_fail "jgrfs $*: no '$phrase' in its message"
	digests | diff "$T/before.sum" - || it_fail "jgrfs $*: refused, yet a member changed"
	grep -q " $MNT fuse" /proc/mounts && it_fail "jgrfs $*: refused, yet mounted"
	it_log "refused as it should: jgrfs $*"
}

# took LOG DEV WHAT: LOG says DEV was taken as WHAT ("role 0 of 4", "hot spare")
took() {
	grep -qF "took $2 ($3" "$1" || { cat "$1"; it_fail "$2 not taken as $3"; }
}

it_log "examine --scan lists the array from the config file"
"$JGRFS" examine --scan >"$T/scan.txt" 2>"$T/scan.err" || {
	cat "$T/scan.txt" "$T/scan.err"
	it_fail "examine --scan exit $?"
}
cat "$T/scan.txt"
grep -q "^$U  RAID5    4/4         1  $D0 $D1 $D2 $D3 $SP(S)\$" "$T/scan.txt" ||
	it_fail "examine --scan: no line for the array with 4/4 members and the spare"

it_log "mount UUID=: every member and the spare, each named"
"$JGRFS" mount "UUID=$U" "$MNT" >"$T/mount.log" 2>&1 || { cat "$T/mount.log"; it_fail "mount UUID="; }
grep -q " $MNT fuse" /proc/mounts || it_fail "mount UUID= returned 0, nothing mounted"
for i in 0 1 2 3; do
	took "$T/mount.log" "$T/disk$i.img" "role $i of 4"
done
took "$T/mount.log" "$SP" "hot spare"
grep -q "4 of 4 roles found, 1 hot spare" "$T/mount.log" || it_fail "no summary line"
head -c 2M /dev/urandom >"$T/rand"
cp "$T/rand" "$MNT/rand" || it_fail "cp"

it_log "status with no argument lists the volume"
timeout 60 "$JGRFS" status >"$T/status.txt" 2>&1
rc=$?
cat "$T/status.txt"
grep -q "^$MNT  *$U  RAID5  healthy  *4/4, 1 spare\$" "$T/status.txt" ||
	it_fail "status: no healthy line for $MNT"
# other volumes of the machine may be listed, degraded: the exit code follows theirs
if grep -v "^MOUNTPOINT" "$T/status.txt" | grep -vq " healthy "; then
	it_log "another volume is not healthy: exit $rc not checked"
else
	[ $rc = 0 ] || it_fail "status of healthy volumes: exit $rc"
fi
it_unmount
grep -q " $MNT fuse" /proc/mounts && it_fail "still mounted"
timeout 60 "$JGRFS" status >"$T/status.txt" 2>&1
grep -q "^$MNT " "$T/status.txt" && it_fail "status lists $MNT after umount"

it_log "fsck UUID="
"$JGRFS" fsck -n "UUID=$U" >"$T/fsck.log" 2>&1 || { cat "$T/fsck.log"; it_fail "fsck UUID= exit $?"; }
grep -q "^clean" "$T/fsck.log" || { cat "$T/fsck.log"; it_fail "fsck UUID= not clean"; }
took "$T/fsck.log" "$D3" "role 3 of 4"

it_log "a mount given the members by path: the spare left out is named"
DEVS="$D0 $D1 $D2 $D3"
it_mount
grep -q "warning: $SP, a hot spare of this array listed in $JGRFS_CONF, was not given" \
	"$T/mount.log" || { cat "$T/mount.log"; it_fail "no warning about the spare left out"; }
cmp "$T/rand" "$MNT/rand" || it_fail "the file read back"
it_unmount

it_log "refusals: nothing written, nothing mounted"
refused 1 "no member of this array found" -- mount UUID=00000000-0000-0000-0000-000000000001 "$MNT"
refused 8 "no member of this array found" -- fsck -n UUID=00000000-0000-0000-0000-000000000001
refused 1 "not a UUID" -- mount UUID=12345 "$MNT"
echo "ARRAY UUID=$U DEVICES=$D0,$D1,$D2,$SP" >"$T/three.conf"
refused 1 "or -o degraded to mount" -- mount --config "$T/three.conf" "UUID=$U" "$MNT"
refused 1 "expected an ARRAY line" -- mount --config "$T/mount.log" "UUID=$U" "$MNT"
cp "$D1" "$T/copy1.img" || it_fail "cp"
echo "ARRAY UUID=$U DEVICES=$T/disk*.img,$T/copy1.img" >"$T/copy.conf"
refused 1 "$D1 and $T/copy1.img both claim role 1" -- mount --config "$T/copy.conf" "UUID=$U" "$MNT"
JGRFS_CONF=$T/copy.conf refused 8 "both claim role 1" -- fsck -y "UUID=$U"
rm -f "$T/copy1.img"

it_log "over loop devices: the block scan finds them"
command -v losetup >/dev/null || it_skip "no losetup"
declare -A LOOP
for f in $ALL; do
	l=$(losetup -f --show "$f") || it_skip "no loop device for $f"
	IT_LOOPS="$IT_LOOPS $l"
	LOOP[$f]=$l
done
# the config file still lists the files: each role claimed by a file and its loop device
refused 1 "both claim role 0" -- mount "UUID=$U" "$MNT"
echo "# no array here: the block devices alone" >"$JGRFS_CONF"
"$JGRFS" examine --scan >"$T/scan.txt" 2>&1 || { cat "$T/scan.txt"; it_fail "examine --scan (loops)"; }
grep -q "^$U  RAID5    4/4         1  ${LOOP[$D0]} " "$T/scan.txt" ||
	{ cat "$T/scan.txt"; it_fail "examine --scan: the array on the loop devices"; }
# the /etc/fstab form, as mount.fuse3 runs it
"$JGRFS" mount "$MNT" -o "members=UUID=$U" >"$T/mount.log" 2>&1 ||
	{ cat "$T/mount.log"; it_fail "mount -o members=UUID= over loop devices"; }
cat "$T/mount.log"
for i in 0 1 2 3; do
	took "$T/mount.log" "${LOOP[$T/disk$i.img]}" "role $i of 4"
done
took "$T/mount.log" "${LOOP[$SP]}" "hot spare"
cmp "$T/rand" "$MNT/rand" || it_fail "the file read back over the loop devices"
timeout 60 "$JGRFS" status >"$T/status.txt" 2>&1
grep -q "^$MNT  *$U  RAID5  healthy  *4/4, 1 spare\$" "$T/status.txt" ||
	{ cat "$T/status.txt"; it_fail "status: no line for the loop-device volume"; }
it_unmount
"$JGRFS" fsck -n "UUID=$U" >"$T/fsck.log" 2>&1 || { cat "$T/fsck.log"; it_fail "fsck UUID= (loops)"; }
took "$T/fsck.log" "${LOOP[$D2]}" "role 2 of 4"
for l in $IT_LOOPS; do
	losetup -d "$l" || it_fail "losetup -d $l"
done
IT_LOOPS=""
# the loop devices gone and the config file empty: nothing left to find
refused 1 "no member of this array found" -- mount "UUID=$U" "$MNT"

it_log "-o degraded with UUID=: mounted without role 3; status with no argument says degraded"
echo "ARRAY UUID=$U DEVICES=$D0,$D1,$D2" >"$T/nospare.conf"
"$JGRFS" mount --config "$T/nospare.conf" -o degraded "UUID=$U" "$MNT" >"$T/mount.log" 2>&1 ||
	{ cat "$T/mount.log"; it_fail "mount -o degraded UUID="; }
grep -q "3 of 4 roles found, 0 hot spares" "$T/mount.log" || { cat "$T/mount.log"; it_fail "summary"; }
timeout 60 "$JGRFS" status >"$T/status.txt" 2>&1
rc=$?
cat "$T/status.txt"
grep -q "^$MNT  *$U  RAID5  degraded  *3/4, 0 spares\$" "$T/status.txt" ||
	it_fail "status: no degraded line for $MNT"
# 1: another volume of the machine could not be asked (it outranks 3)
[ $rc = 3 ] || [ $rc = 1 ] || it_fail "status with a degraded volume: exit $rc, expected 3"
cmp "$T/rand" "$MNT/rand" || it_fail "the file read back degraded"
it_unmount

it_finish
