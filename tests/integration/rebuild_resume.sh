#!/bin/bash
# SPDX-License-Identifier: MIT
# A rebuild cut by a power failure resumes from where it had got (issue 22).
#
# A volume of four members (RAID5, resync=bitmap) is filled through FUSE and
# unmounted; member 1 is then lost. `jgrfs rebuild --new` onto a new file is
# cut by a simulated power failure (jgrfs-crash --powercut: the fault layer under every
# member, the new one too, drops the writes from the N-th on, keeps or reverts
# each write not yet flushed, and kills the process) at a spread of write
# positions. After each cut:
#   - examine assembles the array without force (the bitmap shows nothing in
#     flight) and reports the new member being rebuilt, with its mark;
#   - `jgrfs rebuild` without --new resumes from that mark ("resuming ... at
#     row M"), never from a lower row than examine said, and finishes;
#   - scrub finds no mismatch, and the new member holds what the lost one held
#     (cmp of the data areas).
# Once, the resume is left to a mount instead: the daemon resumes the rebuild
# in the background, status reaches healthy, every file reads back right, and
# fsck -n is clean. The test fails unless some cut resumed past row 0.
#
#   rebuild_resume.sh PATH/TO/jgrfs PATH/TO/jgrfs-crash
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"

it_make_members 4 64M
it_mkfs -l 5 -c 16K -r bitmap
# with --resync bitmap, mkfs's default has no data checksums: data=ordered mounts
grep -q "data checksums off" "$T/mkfs.log" || { cat "$T/mkfs.log"; it_fail "mkfs -r bitmap: data checksums on"; }
it_mount -o data=ordered
it_log "fill the volume"
cp -a "$(dirname "$0")/../../src" "$MNT/src" || it_fail "cp -a"
head -c 24M /dev/urandom >"$T/rand"
cp "$T/rand" "$MNT/rand" || it_fail "cp rand"
it_unmount

mkdir "$T/p" || it_fail mkdir
for i in 0 1 2 3; do
	cp --sparse=always "$T/disk$i.img" "$T/p/disk$i.img" || it_fail "save disk$i"
done
# the data area of a member: from the data offset examine reports
# shellcheck disable=SC2086
off=$("$JGRFS" examine $DEVS | sed -n 's/.*data offset \([0-9]*\) blocks.*/\1/p' | head -1)
[ -n "$off" ] || it_fail "no data offset from examine"

restore() {
	for i in 0 2 3; do
		cp --sparse=always "$T/p/disk$i.img" "$T/disk$i.img" || it_fail "restore disk$i"
	done
	rm -f "$T/disk1.img" "$T/new1.img"
}

same_as_lost() {
	cmp <(tail -c +$((off * 4096 + 1)) "$T/p/disk1.img") \
	    <(tail -c +$((off * 4096 + 1)) "$T/new1.img" | head -c $(($(stat -c %s "$T/p/disk1.img") - off * 4096))) ||
		it_fail "cut at $1: the rebuilt member differs from the lost one"
}

R="$T/disk0.img $T/new1.img $T/disk2.img $T/disk3.img"
resumed_past_0=0
daemon_done=0
for n in 2 5 9 14 20 27 35 44 60 80 100 130 160 190 230 270; do
	restore
	IT_FAULTS="--powercut after=$n,seed=$n" it_jg rebuild --new "$T/new1.img" \
		"$T/disk0.img" "$T/disk2.img" "$T/disk3.img" >"$T/cut.log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then
		it_log "cut at write $n: past the end of the rebuild"
		same_as_lost "$n (uncut)"
		break
	fi
	[ $rc = 137 ] || { cat "$T/cut.log"; it_fail "cut at $n: exit $rc, expected a kill (137)"; }
	# shellcheck disable=SC2086
	if ! "$JGRFS" examine $R >"$T/examine.log" 2>&1; then
		# cut before the new member was recorded: the array is as degraded as
		# before, and assembles without force (nothing was in flight)
		grep -q "new1.img.*not a\( jgrfs\)\? member\|foreign" "$T/examine.log" ||
			{ cat "$T/examine.log"; it_fail "cut at $n: examine failed"; }
		"$JGRFS" examine "$T/disk0.img" "$T/disk2.img" "$T/disk3.img" >"$T/examine.log" 2>&1 ||
			{ cat "$T/examine.log"; it_fail "cut at $n: degraded array refused"; }
		it_log "cut at write $n: before the new member was recorded"
		continue
	fi
	mark=$(sed -n 's/.*rebuilding .*(rows 0 to \([0-9]*\) of.*/\1/p' "$T/examine.log")
	if [ -z "$mark" ]; then
		# the cut came after the last round: whole
		grep -q "degraded  *no" "$T/examine.log" || { cat "$T/examine.log"; it_fail "cut at $n: neither rebuilding nor whole"; }
		it_log "cut at write $n: after the rebuild's end"
		same_as_lost "$n"
		continue
	fi
	if [ $daemon_done = 0 ] && [ "$mark" -gt 0 ]; then
		it_log "cut at write $n: rebuilt to row $mark; the mount resumes it"
		DEVS=$R
		# in the foreground, to keep the daemon's log
		# shellcheck disable=SC2086
		"$JGRFS" mount -f -v -o data=ordered $DEVS "$MNT" >"$T/daemon.log" 2>&1 &
		for _ in $(seq 300); do
			grep -q " $MNT fuse" /proc/mounts && break
			sleep 0.1
		done
		for _ in $(seq 300); do
			"$JGRFS" status "$MNT" >"$T/status.txt" 2>&1 && break
			sleep 0.1
		done
		grep -q healthy "$T/status.txt" || { cat "$T/status.txt" "$T/daemon.log"; it_fail "the mount did not finish the rebuild"; }
		grep -q "RebuildStarted.*from=$mark" "$T/daemon.log" ||
			{ cat "$T/daemon.log"; it_fail "the mount did not resume from row $mark"; }
		echo 3 >/proc/sys/vm/drop_caches
		diff -r "$(dirname "$0")/../../src" "$MNT/src" >/dev/null || it_fail "files after the resumed rebuild"
		cmp "$T/rand" "$MNT/rand" || it_fail "rand after the resumed rebuild"
		it_unmount
		it_fsck_clean
		daemon_done=1
		resumed_past_0=1
		continue
	fi
	# shellcheck disable=SC2086
	"$JGRFS" rebuild $R >"$T/resume.log" 2>&1 || { cat "$T/resume.log"; it_fail "cut at $n: resume failed"; }
	from=$(sed -n 's/^resuming the rebuild of role 1 onto .* at row \([0-9]*\) of.*/\1/p' "$T/resume.log")
	[ "$from" = "$mark" ] || { cat "$T/resume.log"; it_fail "cut at $n: resumed at row '$from', examine said $mark"; }
	it_log "cut at write $n: resumed at row $from"
	[ "$from" -gt 0 ] && resumed_past_0=1
	# shellcheck disable=SC2086
	"$JGRFS" scrub $R >"$T/scrub.log" 2>&1 || { cat "$T/scrub.log"; it_fail "cut at $n: scrub"; }
	grep -q "mismatches  *0" "$T/scrub.log" || { cat "$T/scrub.log"; it_fail "cut at $n: parity mismatches"; }
	same_as_lost "$n"
done
[ $resumed_past_0 = 1 ] || it_fail "no cut resumed a rebuild past row 0"
[ $daemon_done = 1 ] || it_fail "no cut left a mark for the mount to resume from"
it_finish
