#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/umount.sh - `jgrfs umount` (issue 26): it returns once the
# daemon has gone and every member superblock says clean, so that fsck can run
# at once; a busy mount point names its holder and stays mounted; --lazy
# detaches and then times out while the holder stays; a directory that is no
# jgrfs mount, and a dead mount, are refused (--force clears the dead one); a
# daemon whose last writes are lost (jgrfs-crash power cut) leaves dirty members,
# which the command reports.
# usage: umount.sh PATH/TO/jgrfs PATH/TO/jgrfs-crash
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
[ -n "$JGRFS_CRASH" ] || it_fail "needs jgrfs-crash (second argument)"
command -v python3 >/dev/null || it_skip "no python3"

# every member superblock clean, as examine reads them
members_clean() {
	# shellcheck disable=SC2086
	"$JGRFS" examine --json $DEVS >"$T/examine.json" 2>"$T/examine.err" ||
		{ cat "$T/examine.err"; it_fail "examine"; }
	python3 - "$T/examine.json" <<'EOF' || it_fail "member superblocks not clean after umount"
import json, sys
d = json.load(open(sys.argv[1]))
states = [x["state"] for x in d["devices"]]
print("member states:", states)
sys.exit(0 if len(states) == 4 and all(s == "clean" for s in states) else 1)
EOF
}

mounted() {
	grep -q " $MNT fuse" /proc/mounts
}

wait_gone() {
	local i=0
	while kill -0 "$1" 2>/dev/null; do
		[ $i -lt 600 ] || it_fail "daemon $1 still running after 60 s"
		sleep 0.1
		i=$((i + 1))
	done
}

it_make_members 4 64M
it_mkfs

it_log "1. unmount: daemon gone, members clean, fsck clean at once"
it_mount
head -c 1M /dev/urandom >"$MNT/file" || it_fail "write"
pid=$(it_daemon_pid)
[ -n "$pid" ] || it_fail "no daemon pid"
"$JGRFS" umount -v "$MNT" >"$T/out" 2>"$T/err"
rc=$?
cat "$T/out" "$T/err"
[ $rc = 0 ] || it_fail "jgrfs umount exit $rc"
grep -q "unmounted, daemon pid $pid stopped, array clean (4 members)" "$T/out" ||
	it_fail "-v did not say what was done"
mounted && it_fail "still mounted after jgrfs umount"
# the daemon has exited (a zombie until its parent reaps it at most)
state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
[ -z "$state" ] || [ "$state" = Z ] || it_fail "daemon $pid still running (state $state)"
it_fsck_clean
members_clean

it_log "2. busy: a process with its cwd inside; then --lazy times out while it stays"
it_mount
mkdir "$MNT/dir" || it_fail "mkdir"
(cd "$MNT/dir" && exec sleep 300) &
holder=$!
IT_PIDS="$IT_PIDS $holder"
sleep 0.3
[ "$(readlink "/proc/$holder/cwd")" = "$(realpath "$MNT")/dir" ] || it_fail "holder has no cwd inside"
pid=$(it_daemon_pid)
"$JGRFS" umount "$MNT" 2>"$T/err"
rc=$?
cat "$T/err"
[ $rc = 1 ] || it_fail "busy umount exit $rc, expected 1"
grep -q "$MNT: busy" "$T/err" || it_fail "no 'busy' message"
grep -q "pid $holder (sleep)" "$T/err" || it_fail "the holder pid $holder is not named"
mounted || it_fail "a busy umount unmounted anyway"
kill -0 "$pid" || it_fail "a busy umount stopped the daemon"
"$JGRFS" umount --lazy -t 1 "$MNT" 2>"$T/err"
rc=$?
cat "$T/err"
[ $rc = 1 ] || it_fail "lazy umount with a holder: exit $rc, expected 1 (timeout)"
grep -q "daemon pid $pid still running after 1 s" "$T/err" || it_fail "no timeout message"
mounted && it_fail "--lazy did not detach"
kill -0 "$pid" || it_fail "the daemon exited while the holder still holds the volume"
kill "$holder"
wait "$holder" 2>/dev/null
wait_gone "$pid"
it_fsck_clean
members_clean

it_log "3. quiet on success"
it_mount
echo more >"$MNT/small" || it_fail "write"
"$JGRFS" umount "$MNT" >"$T/out" 2>&1 || { cat "$T/out"; it_fail "umount"; }
[ -s "$T/out" ] && { cat "$T/out"; it_fail "a successful umount printed something"; }
mounted && it_fail "still mounted"

it_log "4. not a jgrfs mount"
mkdir "$T/plain"
"$JGRFS" umount "$T/plain" 2>"$T/err"
rc=$?
cat "$T/err"
[ $rc = 1 ] || it_fail "umount of a plain directory: exit $rc, expected 1"
grep -q "$T/plain: not a jgrfs mount" "$T/err" || it_fail "no 'not a jgrfs mount' message"

it_log "5. a dead mount: refused, cleared with --force"
it_mount
pid=$(it_daemon_pid)
kill -9 "$pid"
wait_gone "$pid"
"$JGRFS" umount "$MNT" 2>"$T/err"
rc=$?
cat "$T/err"
[ $rc = 1 ] || it_fail "umount of a dead mount: exit $rc, expected 1"
grep -q "dead FUSE mount" "$T/err" || it_fail "no 'dead FUSE mount' message"
mounted || it_fail "the dead mount went without --force"
"$JGRFS" umount --force "$MNT" 2>"$T/err" || { cat "$T/err"; it_fail "umount --force"; }
mounted && it_fail "--force left the dead mount"

it_log "6. the last writes lost (power cut, the daemon lingers): members dirty"
it_mount	# recovers the kill -9 above
it_unmount
# shellcheck disable=SC2086
"$JGRFS_CRASH" --powercut "signal,seed=1,keep=0,linger=3000" mount -f $DEVS "$MNT" \
	>"$T/cut.log" 2>&1 &
dpid=$!
IT_PIDS="$IT_PIDS $dpid"
for _ in $(seq 100); do
	mounted && break
	sleep 0.1
done
mounted || { cat "$T/cut.log"; it_fail "jgrfs-crash mount"; }
echo lost >"$MNT/lost" || it_fail "write"
kill -USR1 "$dpid"
sleep 0.2
kill -0 "$dpid" || it_fail "the daemon did not linger after the cut"
"$JGRFS" umount -t 30 "$MNT" 2>"$T/err"
rc=$?
cat "$T/err"
[ $rc = 1 ] || it_fail "umount after lost writes: exit $rc, expected 1 (members dirty)"
grep -q "array not clean: .*disk[0-3].img .*dirty; the next mount will resync" "$T/err" ||
	it_fail "no 'array not clean' message naming a member"
wait "$dpid" 2>/dev/null
it_mount
grep -q "array_was_dirty=1" "$T/mount.log" || { cat "$T/mount.log"; it_fail "mount saw no dirty array"; }
it_unmount
it_fsck_clean
members_clean

it_log "an offline command names the mount holding the members, and --wait waits for it"
it_mount
pid=$(it_daemon_pid)
# shellcheck disable=SC2086
"$JGRFS" fsck -n $DEVS >"$T/held.out" 2>"$T/held.err"
rc=$?
[ $rc = 8 ] || it_fail "fsck -n of a mounted volume: exit $rc, expected 8"
grep -q "in use by pid $pid (.*jgrfs mount" "$T/held.err" ||
	{ cat "$T/held.err"; it_fail "fsck does not name the daemon (pid $pid) holding the members"; }
# shellcheck disable=SC2086
"$JGRFS" fsck -n --wait $DEVS >"$T/wait.out" 2>"$T/wait.err" &
fpid=$!
IT_PIDS="$IT_PIDS $fpid"
for _ in $(seq 200); do
	grep -q "waiting" "$T/wait.err" && break
	sleep 0.05
done
grep -q "in use by pid $pid .*; waiting" "$T/wait.err" ||
	{ cat "$T/wait.err"; it_fail "fsck --wait does not say whom it waits for"; }
kill -0 "$fpid" || it_fail "fsck --wait did not wait"
"$JGRFS" umount "$MNT" || it_fail "umount while an fsck waits"
wait "$fpid"
rc=$?
[ $rc = 0 ] || { cat "$T/wait.err"; it_fail "fsck --wait after the unmount: exit $rc, expected 0"; }
grep -q "^clean:" "$T/wait.out" || it_fail "fsck --wait printed no result"

it_finish
