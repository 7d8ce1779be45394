#!/bin/bash
# SPDX-License-Identifier: MIT
# A power cut of a degraded volume, then `-o force`: the mount names the files
# the write hole may have hit, and every file that reads back wrong is among
# them (issue 22).
#
# RAID5 over four members (16K chunks, so a row holds three 16 KiB chunks),
# twice: resync=bitmap with data=ordered (the bitmap names the rows), and
# resync=journal with data=declared (the journal names them: its declared
# blocks and log window, read with SYNCRAID by the read-only recovery). "old" files are written and synced with their checksums
# kept, interleaved with "new" files so that rows hold both. Member 1 is then
# left out; the volume is mounted degraded under a simulated power failure
# (jgrfs-crash --powercut signal: SIGUSR1 drops every later write, keeps or reverts
# each unflushed one, and kills the daemon) while the new files are
# rewritten in place. A plain mount is refused (dirty and degraded); `-o force`
# mounts read-only and logs "at risk: PATH" lines. Then every old file whose
# checksum changed must be named: it was never written after its sync, so
# only the write hole can have changed it; and old files far from the
# rewritten ones must not be (the list is the rows in flight). Rounds (seeds)
# go on until one damages old files, at most 30; with resync=bitmap the test
# fails if none did (it could not tell a missing name). With data=declared
# damage is rarer (the journal's window in flight is short): it stops after
# three rounds that named files, and checks every damaged file when there is
# one. It fails if any damaged file is not named.
#
#   fuse_at_risk.sh PATH/TO/jgrfs PATH/TO/jgrfs-crash
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
[ -n "$JGRFS_CRASH" ] || it_fail "needs jgrfs-crash (second argument)"

ROUNDS=${JGRFS_AT_RISK_ROUNDS:-30}	# at most; it stops at the first round with damage
DEBUG=${JGRFS_AT_RISK_DEBUG:-}
# shellcheck disable=SC2043
for cfg in "bitmap ordered" "journal declared"; do
RESYNC=${cfg% *} DATA=${cfg#* }
it_log "resync=$RESYNC data=$DATA"
damaged_rounds=0 named_rounds=0
for round in $(seq 1 "$ROUNDS"); do
	rm -f "$T"/disk*.img
	it_make_members 4 64M
	ALL=$DEVS
	it_mkfs -l 5 -c 16K -r "$RESYNC" -b 256K --no-data-checksums	# mounted data=ordered
	it_mount -o data=ordered
	for i in $(seq 0 39); do
		head -c 16K /dev/urandom >"$MNT/old$i" || it_fail "write old$i"
		head -c 32K /dev/urandom >"$MNT/new$i" || it_fail "write new$i"
	done
	sync
	(cd "$MNT" && md5sum old*) >"$T/old.md5" || it_fail "md5sum"
	it_unmount

	# degraded (member 1 left out) under a power failure that SIGUSR1 cuts
	DEGR="$T/disk0.img $T/disk2.img $T/disk3.img"
	# shellcheck disable=SC2086
	# (the program itself in the background, not a function: $! is the daemon)
	"$JGRFS_CRASH" --powercut "signal,seed=$round,keep=50,tear,linger=300" mount -f -v \
		-o data=$DATA,no_writeback_cache,logdata=0,commit=1,degraded $DEGR "$MNT" >"$T/cut.log" 2>&1 &
	dpid=$!
	for _ in $(seq 100); do
		grep -q " $MNT fuse" /proc/mounts && break
		sleep 0.1
	done
	grep -q " $MNT fuse" /proc/mounts || { cat "$T/cut.log"; it_fail "degraded mount"; }
	# rewrite the first half of the new files in place until the cut; the commit each second
	# writes them home; the disks go on writing for a moment after the cut (linger), each write kept, lost or torn
	for w in 1 2; do
		while :; do
			for i in $(seq "$w" 2 19); do
				head -c 32K /dev/urandom |
					dd of="$MNT/new$i" bs=32K conv=notrunc status=none 2>/dev/null ||
					exit 0
			done
		done &
	done
	sleep "1.$((RANDOM % 10))"
	[ -n "$DEBUG" ] && "$JGRFS" status "$MNT"
	kill -USR1 $dpid
	wait $dpid 2>/dev/null
	wait 2>/dev/null
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null

	# shellcheck disable=SC2086
	if "$JGRFS" mount -o data=$DATA $DEGR "$MNT" >"$T/plain.log" 2>&1; then
		# nothing was in flight after all: the bitmap is clean (S10)
		it_unmount
		it_log "round $round: the cut found nothing in flight"
		continue
	fi
	grep -q "dirty.*degraded\|write hole" "$T/plain.log" ||
		{ cat "$T/plain.log"; it_fail "round $round: plain mount refused for another reason"; }
	# shellcheck disable=SC2086
	"$JGRFS" mount -f -v -o force $DEGR "$MNT" >"$T/force.log" 2>&1 &
	for _ in $(seq 100); do
		grep -q " $MNT fuse" /proc/mounts && break
		sleep 0.1
	done
	grep -q " $MNT fuse" /proc/mounts || { cat "$T/force.log"; it_fail "round $round: force mount"; }
	touch "$MNT/x" 2>/dev/null && it_fail "round $round: a forced mount is read-only"
	# status counts what the log names
	"$JGRFS" status --json "$MNT" >"$T/status.json" || true
	files=$(sed -n 's/.*"at_risk":{"all":false,"rows":[0-9]*,"files":\([0-9]*\).*/\1/p' "$T/status.json")
	[ "$files" = "$(grep -c "at risk: .* inode=" "$T/force.log")" ] ||
		{ cat "$T/status.json"; it_fail "round $round: status says $files files at risk"; }
	echo 3 >/proc/sys/vm/drop_caches
	(cd "$MNT" && md5sum --quiet -c "$T/old.md5" 2>/dev/null) | sed -n 's/: FAILED.*//p' >"$T/bad"
	nbad=$(wc -l <"$T/bad")
	named=$(grep -c "at risk: /" "$T/force.log")
	[ -n "$DEBUG" ] && cat "$T/force.log" "$T/cut.log"
	it_log "round $round: $nbad old files read wrong, $named files named at risk"
	while read -r f; do
		grep -q "at risk: /$f inode=" "$T/force.log" ||
			{ grep "at risk" "$T/force.log"; it_fail "round $round: $f reads wrong and is not named"; }
	done <"$T/bad"
	# the list is the rows in flight, not the volume: the old files far from
	# the rewritten ones are not in it
	grep -q "at risk: /old39 inode=" "$T/force.log" &&
		{ grep "at risk" "$T/force.log"; it_fail "round $round: old39, never near a write, named"; }
	[ "$nbad" -gt 0 ] && damaged_rounds=$((damaged_rounds + 1))
	[ "$named" -gt 0 ] && named_rounds=$((named_rounds + 1))
	fusermount3 -u "$MNT"
	wait
	[ $damaged_rounds -ge 1 ] && break
	# declared: the journal's window in flight is short, damage rarer (none in
	# 30 rounds of a busy machine): three rounds that named files will do
	[ "$RESYNC" = journal ] && [ $named_rounds -ge 3 ] && break
done
[ $named_rounds -gt 0 ] || it_fail "resync=$RESYNC: no round named a file at risk"
[ $damaged_rounds -gt 0 ] || [ "$RESYNC" = journal ] ||
	it_fail "resync=$RESYNC: no round damaged an old file: the test proved nothing"
it_log "resync=$RESYNC: $damaged_rounds rounds of $round damaged old files; every one was named"
done
it_finish
