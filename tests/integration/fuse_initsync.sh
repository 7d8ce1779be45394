#!/bin/bash
# SPDX-License-Identifier: MIT
# Instant create and the initial sync in the background (issue 23).
#
# Four member files that held old data (random bytes, as used disks do):
#   - mkfs returns without reading them; examine says the array is not in sync;
#   - the daemon syncs in the background, slowly (sync_rate=), while files are
#     written; status shows the sync with its progress;
#   - kill -9 of the daemon once the sync has recorded a mark; the next mount
#     resumes the sync from that mark or later (the log says from which row);
#   - unmounted before the sync ends, the volume loses a member: a degraded
#     mount reads every file right (the rows past the mark were written so
#     that they match their parity), and fsck is clean;
#   - with all members back and no rate limit the sync ends: status and
#     examine say in sync, and an offline scrub finds no mismatch.
#
#   fuse_initsync.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"

DEVS=""
for i in 0 1 2 3; do
	head -c 96M /dev/urandom >"$T/disk$i.img" || it_fail "old data on disk$i"
	DEVS="$DEVS $T/disk$i.img"
done
it_mkfs -v -l 5 -c 16K -r journal
grep -q "initial_sync=pending" "$T/mkfs.log" || { cat "$T/mkfs.log"; it_fail "mkfs over old data: no initial sync pending"; }
# shellcheck disable=SC2086
"$JGRFS" examine $DEVS >"$T/examine.log" 2>&1 || { cat "$T/examine.log"; it_fail "examine"; }
grep -q "initial sync  0.0% (rows 0 to 0 of" "$T/examine.log" ||
	{ cat "$T/examine.log"; it_fail "examine: a new array over old data says it is in sync"; }

# status --json: a field of initial_sync, or of the array
sync_field() {
	"$JGRFS" status --json "$MNT" |
		python3 -c "import json, sys; print((json.load(sys.stdin)['array']['initial_sync'] or {}).get('$1', ''))"
}
array_field() {
	"$JGRFS" status --json "$MNT" | python3 -c "import json, sys; print(json.load(sys.stdin)['array']['$1'])"
}

it_log "mount with a slow sync, write files while it runs"
# shellcheck disable=SC2086
"$JGRFS" mount -f -v -o sync_rate=8 $DEVS "$MNT" >"$T/daemon1.log" 2>&1 &
for i in $(seq 100); do grep -q " $MNT fuse" /proc/mounts && break; sleep 0.1; done
grep -q " $MNT fuse" /proc/mounts || { cat "$T/daemon1.log"; it_fail "mount"; }
cp -a "$(dirname "$0")/../../src" "$MNT/src" || it_fail "cp -a"
head -c 20M /dev/urandom >"$T/rand" && cp "$T/rand" "$MNT/rand" || it_fail "cp rand"
for i in $(seq 40); do
	printf 'small %d\n' "$i" >"$MNT/small-$i" || it_fail "small file"
done
sync "$MNT/rand" || it_fail "fsync: commits every operation before it"
(cd "$MNT" && find . -type f -exec md5sum {} + | sort -k2) >"$T/sums" || it_fail "sums"
for i in $(seq 300); do
	"$JGRFS" status "$MNT" >"$T/status.log" 2>&1 || it_fail "status"
	grep -q "initial sync [0-9.]*% (eta" "$T/status.log" && break
	sleep 0.1
done
grep -q "initial sync [0-9.]*% (eta" "$T/status.log" ||
	{ cat "$T/status.log"; it_fail "status does not show the initial sync running"; }
# the mark moves every 2 s (or sixteenth of the rows): wait for one, then crash
mark1=0
for i in $(seq 600); do
	mark1=$(sync_field rows_in_sync)
	[ -n "$mark1" ] || it_fail "status --json: no initial_sync.rows_in_sync"
	[ "$mark1" -gt 0 ] && break
	sleep 0.1
done
[ "$mark1" -gt 0 ] || { "$JGRFS" status "$MNT"; it_fail "the sync recorded no mark in 60 s"; }

it_log "kill -9 in the middle of the sync (its mark at row $mark1), remount: it resumes"
it_crash
# shellcheck disable=SC2086
"$JGRFS" mount -f -v -o sync_rate=8 $DEVS "$MNT" >"$T/daemon2.log" 2>&1 &
for i in $(seq 100); do grep -q " $MNT fuse" /proc/mounts && break; sleep 0.1; done
grep -q " $MNT fuse" /proc/mounts || { cat "$T/daemon2.log"; it_fail "mount after the crash"; }
for i in $(seq 50); do grep -q "initial sync .*: from row" "$T/daemon2.log" && break; sleep 0.1; done
from=$(sed -n 's/.*initial sync .*: from row \([0-9]*\) of.*/\1/p' "$T/daemon2.log" | head -1)
[ -n "$from" ] || { cat "$T/daemon2.log"; it_fail "the remount did not resume the sync"; }
[ "$from" -ge "$mark1" ] ||
	{ cat "$T/daemon2.log"; it_fail "the sync resumed at row $from, before its mark $mark1"; }
it_log "resumed from row $from"
(cd "$MNT" && md5sum -c --quiet "$T/sums") || it_fail "files differ after the crash"
rows=$(array_field rows)
mark=$(sync_field rows_in_sync)
[ -n "$mark" ] && [ "$mark" -lt "$rows" ] || it_fail "the sync ended too soon for the test ($mark of $rows rows): slow it down"
it_unmount

it_log "member 2 lost before the sync ends: every file reads right, degraded"
mv "$T/disk2.img" "$T/away2.img" || it_fail mv
DEVS="$T/disk0.img $T/disk1.img $T/disk3.img"
# shellcheck disable=SC2086
"$JGRFS" mount -f -v -o ro,degraded $DEVS "$MNT" >"$T/daemon3.log" 2>&1 &
for i in $(seq 100); do grep -q " $MNT fuse" /proc/mounts && break; sleep 0.1; done
grep -q " $MNT fuse" /proc/mounts || { cat "$T/daemon3.log"; it_fail "degraded mount"; }
(cd "$MNT" && md5sum -c --quiet "$T/sums") || it_fail "a file reads wrong with member 2 lost before the sync ended"
it_unmount
it_fsck_clean --degraded
mv "$T/away2.img" "$T/disk2.img" || it_fail mv
DEVS="$T/disk0.img $T/disk1.img $T/disk2.img $T/disk3.img"

it_log "all members, no rate limit: the sync ends"
# shellcheck disable=SC2086
"$JGRFS" mount -f -v -o sync_rate=0 $DEVS "$MNT" >"$T/daemon4.log" 2>&1 &
for i in $(seq 100); do grep -q " $MNT fuse" /proc/mounts && break; sleep 0.1; done
grep -q " $MNT fuse" /proc/mounts || { cat "$T/daemon4.log"; it_fail "mount"; }
for i in $(seq 600); do
	"$JGRFS" status --json "$MNT" | grep -q '"initial_sync":null' && break
	sleep 0.1
done
"$JGRFS" status --json "$MNT" | grep -q '"initial_sync":null' ||
	{ "$JGRFS" status "$MNT"; it_fail "the sync did not end"; }
(cd "$MNT" && md5sum -c --quiet "$T/sums") || it_fail "files differ after the sync"
it_unmount
# shellcheck disable=SC2086
"$JGRFS" examine $DEVS >"$T/examine.log" 2>&1 || it_fail "examine"
grep -q "initial sync" "$T/examine.log" && { cat "$T/examine.log"; it_fail "examine: still not in sync"; }
# shellcheck disable=SC2086
"$JGRFS" scrub $DEVS >"$T/scrub.log" 2>&1 || { cat "$T/scrub.log"; it_fail "scrub after the sync found mismatches"; }
it_fsck_clean
it_finish
