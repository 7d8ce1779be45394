#!/bin/bash
# SPDX-License-Identifier: MIT
# A RAID6 of 32 members, the most an array has (issue 43): mounted with one
# member missing, unmounted and mounted again it must come up (a role mask
# tested by a 32-bit shift once rejected every superblock of it: "no given
# device has a valid superblock"). The files read back each time; the lost
# member is rebuilt onto a new file (jgrfs replace --wait); the array mounts
# whole and fsck -n is clean. Small sparse files: the test is about the count.
#
#   fuse_maxmembers.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"

it_make_members 32 24M
ALL=$DEVS
it_mkfs -l 6
it_mount
head -c 8M /dev/urandom >"$T/rand"
cp "$T/rand" "$MNT/rand" || it_fail "write"
it_unmount

it_log "mount without member 31"
DEVS=${ALL% *}
it_mount -o degraded
"$JGRFS" status "$MNT" >"$T/status.txt"
[ $? = 3 ] || { cat "$T/status.txt"; it_fail "status: expected exit 3 (degraded)"; }
cmp "$T/rand" "$MNT/rand" || it_fail "read degraded"
head -c 4M /dev/urandom >"$T/new"
cp "$T/new" "$MNT/new" || it_fail "write degraded"
it_unmount

it_log "mount again, member 31 still missing (recorded failed: no -o degraded needed)"
it_mount
cmp "$T/rand" "$MNT/rand" && cmp "$T/new" "$MNT/new" || it_fail "read after the second mount"

it_log "rebuild role 31 onto a new file"
"$JGRFS" replace --size 24M --wait "$MNT" "$T/new31.img" || it_fail "replace --wait"
"$JGRFS" status "$MNT" >"$T/status.txt" || { cat "$T/status.txt"; it_fail "status not healthy"; }
it_unmount

DEVS="$DEVS $T/new31.img"
it_mount
"$JGRFS" status "$MNT" >/dev/null || it_fail "not healthy with the rebuilt member"
echo 3 >/proc/sys/vm/drop_caches
cmp "$T/rand" "$MNT/rand" && cmp "$T/new" "$MNT/new" || it_fail "read after the rebuild"
it_unmount
it_fsck_clean
it_finish
