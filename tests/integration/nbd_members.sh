#!/bin/bash
# SPDX-License-Identifier: MIT
# Members over NBD (src/raid/dev_nbd.c): a RAID5 of four nbdkit servers on Unix
# sockets, each serving a sparse file (so its data outlives a server restart).
#
#   1. a URI whose server is not there fails at once, naming the URI; an export
#      smaller than mkfs --size asks fails, saying it cannot be grown;
#   2. mkfs over the four URIs, mount, write files (sha256sum), unmount (jgrfs
#      umount reads the superblocks back over NBD), fsck -n, examine, mount
#      again with -o members=URI:URI:... (the fstab form): the files read back
#      right;
#   3. one server killed (kill -9) under writes: the writes finish, the volume
#      goes on degraded, status names the failed member and the few rows it
#      missed, the files read right; the server restarted, `jgrfs readd MNT URI`
#      rebuilds those rows only (at least the ones it missed, far fewer than
#      all); then another server killed and re-added the same way, so that
#      every file is read through the member brought back; scrub finds the
#      parity right; mounted with -o readd=1, a third server killed and
#      restarted is brought back by the daemon alone;
#   4. nbdkit's error filter fails every read of one member: on a read-only
#      mount the files still read right (rebuilt from parity) and status counts
#      the corrected read errors on that member; then every write of it: the
#      member fails, the files read right, and once the filter stops failing
#      `jgrfs readd` brings it back over a new connection;
#   5. a server that stops answering (SIGSTOP) fails its member after
#      JGRFS_NBD_TIMEOUT seconds: the write waiting on it finishes degraded;
#   6. that server killed (with whatever it held) and started again:
#      `jgrfs rebuild --new URI` rebuilds onto it offline, fsck is clean, the
#      files read right; then a server killed while idle (no write
#      unanswered) comes back with a plain `jgrfs readd`;
#   7. a server whose writes take longer than the timeout (nbdkit's delay
#      filter): its member fails with a write unanswered, which the server may
#      still run (issue 43, defect 10): status says so, a readd through a
#      second server of the same image is refused without --fenced, and the
#      daemon (-o readd=1) does not bring it back even once the first server
#      is killed and started again; `jgrfs readd --fenced` does.
# The servers killed under writes in 3 may die with writes in flight: the
# readds there say --fenced, which is true: their processes are gone.
# And between 2 and 3, a fifth export added as a hot spare and removed.
#
#   nbd_members.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
command -v nbdkit >/dev/null || it_skip "no nbdkit (make deps installs it)"
command -v sha256sum >/dev/null || it_skip "no sha256sum"

. "$(dirname "$0")/nbd_lib.sh"
# The files written so far read back right, past the page cache.
check_files() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	(cd "$MNT" && sha256sum --quiet -c "$T/sums") || it_fail "files read back wrong: $1"
}
# write_file NAME MiB: random bytes, fsynced, its sum added to $T/sums
write_file() {
	head -c "$2M" /dev/urandom >"$T/$1" || it_fail "urandom"
	dd if="$T/$1" of="$MNT/$1" bs=1M conv=fsync status=none || it_fail "write $1"
	(cd "$T" && sha256sum "$1") >>"$T/sums"
}

for i in 0 1 2 3; do
	truncate -s 128M "$T/d$i.img" || it_fail "truncate"
	nbd_start $i
done
DEVS="$(nbd_uri 0) $(nbd_uri 1) $(nbd_uri 2) $(nbd_uri 3)"
: >"$T/sums"

it_log "1. a server that is not there, an export too small"
start=$(date +%s)
if "$JGRFS" examine "$(nbd_uri 0)" "nbd+unix:///?socket=$T/none.sock" >"$T/none.log" 2>&1; then
	it_fail "examine with a missing server succeeded"
fi
grep -q "nbd+unix:///?socket=$T/none.sock.*cannot" "$T/none.log" ||
	{ cat "$T/none.log"; it_fail "the error does not name the URI"; }
[ $(($(date +%s) - start)) -lt 10 ] || it_fail "a missing server took more than 10 s to fail"
# shellcheck disable=SC2086
if "$JGRFS" mkfs -q --size 1G -l 5 $DEVS >"$T/small.log" 2>&1; then
	it_fail "mkfs --size 1G over 128M exports succeeded"
fi
grep -q "cannot be created or grown" "$T/small.log" || { cat "$T/small.log"; it_fail "too small: no reason"; }

it_log "2. mkfs, write, unmount, fsck, mount again"
it_mkfs -q --assume-clean -l 5	# the exports serve new sparse files: zeros, in sync
it_mount
write_file a 3
write_file b 1
mkdir "$MNT/dir" || it_fail "mkdir"
cp "$T/a" "$MNT/dir/a" || it_fail "cp"
(cd "$T" && sha256sum a) | sed 's| a$| dir/a|' >>"$T/sums"
check_files "before unmount"
it_unmount
it_fsck_clean
# shellcheck disable=SC2086
"$JGRFS" examine $DEVS >"$T/examine.log" 2>&1 || { cat "$T/examine.log"; it_fail "examine"; }
# the /etc/fstab form: URIs keep their own colons in the list
"$JGRFS" mount -o "members=${DEVS// /:}" "$MNT" >"$T/mount.log" 2>&1 ||
	{ cat "$T/mount.log"; it_fail "mount -o members=URI:URI:..."; }
"$JGRFS" status "$MNT" >"$T/status.txt" || { cat "$T/status.txt"; it_fail "status not healthy"; }
check_files "after mount again"

it_log "2b. an NBD export as a hot spare: added, listed, removed"
truncate -s 128M "$T/d4.img" || it_fail "truncate"
nbd_start 4
"$JGRFS" spare add "$MNT" "$(nbd_uri 4)" >"$T/spare.log" 2>&1 || { cat "$T/spare.log"; it_fail "spare add URI"; }
"$JGRFS" status "$MNT" >"$T/status.txt"
grep -q "spare      idle       $(nbd_uri 4)" "$T/status.txt" || { cat "$T/status.txt"; it_fail "status: the spare"; }
"$JGRFS" spare remove "$MNT" "$(nbd_uri 4)" >"$T/spare.log" 2>&1 || { cat "$T/spare.log"; it_fail "spare remove URI"; }
"$JGRFS" status "$MNT" >"$T/status.txt"
if grep -q "spare " "$T/status.txt"; then cat "$T/status.txt"; it_fail "the spare is still listed"; fi

it_log "3. server 3 killed under writes"
head -c 16M /dev/urandom >"$T/c"
dd if="$T/c" of="$MNT/c" bs=256K conv=fsync status=none &
writer=$!
sleep 0.3
kill -9 "$NBD_PID3"
wait $writer || it_fail "the write during the kill failed"
(cd "$T" && sha256sum c) >>"$T/sums"
write_file d 2
"$JGRFS" status "$MNT" >"$T/status.txt"
rc=$?
[ $rc = 3 ] || { cat "$T/status.txt"; it_fail "status exit $rc, expected 3 (degraded)"; }
grep -q "member  3  failed .*s3.sock" "$T/status.txt" || { cat "$T/status.txt"; it_fail "status: member 3 failed"; }
check_files "degraded"
missed=$(sed -n 's/.*member  3  failed .*(missed \([0-9]*\) of \([0-9]*\) rows.*/\1 \2/p' "$T/status.txt")
[ -n "$missed" ] || { cat "$T/status.txt"; it_fail "status: the rows member 3 missed"; }
set -- $missed
[ "$1" -gt 0 ] && [ "$1" -lt $(($2 / 4)) ] ||
	{ cat "$T/status.txt"; it_fail "member 3 missed $1 of $2 rows: expected some, and few"; }
check_files "degraded"
nbd_start 3
readd() { # readd I [--fenced]: bring back member I on its restarted server, only the rows it missed
	"$JGRFS" readd --wait ${2:-} "$MNT" "$(nbd_uri "$1")" >"$T/readd.log" 2>&1 ||
		{ cat "$T/readd.log"; it_fail "readd of server $1"; }
	"$JGRFS" status "$MNT" >"$T/status.txt" ||
		{ cat "$T/status.txt"; it_fail "not healthy after the readd of $1"; }
	grep -q "last rebuild: role $1, [0-9]* of [0-9]* rows (readd: the rows it missed)" "$T/status.txt" ||
		{ cat "$T/status.txt"; it_fail "status: the readd of $1"; }
	rebuilt=$(sed -n 's/.*last rebuild: role [0-9]*, \([0-9]*\) of.*/\1/p' "$T/status.txt")
}
readd 3 --fenced	# killed: its connection is dead
# the rows written while it was away, and those its server had not flushed
[ "$rebuilt" -ge "$1" ] && [ "$rebuilt" -lt $(($2 / 4)) ] ||
	{ cat "$T/status.txt"; it_fail "readd rebuilt $rebuilt rows, missed $1 of $2"; }
check_files "after the readd"
it_log "3b. every file read through the member brought back: server 0 killed, then re-added"
kill -9 "$NBD_PID0"
write_file f 1	# fails member 0 (its write errors), the rest degraded
check_files "member 0 away, member 3 back"
nbd_start 0
readd 0 --fenced
check_files "after the readd of 0"
it_unmount
it_fsck_clean
"$JGRFS" scrub $DEVS >"$T/scrub.log" 2>&1 || { cat "$T/scrub.log"; it_fail "scrub after the readds"; }

it_log "3c. -o readd=1: a server killed and restarted is brought back without a command"
it_mount -o readd=1
kill -9 "$NBD_PID2"
wait "$NBD_PID2" 2>/dev/null
sleep 0.5	# the connection seen gone before a write is sent on it: none unanswered
write_file h 1	# fails member 2
"$JGRFS" status "$MNT" >"$T/status.txt"
grep -q "member  2  failed" "$T/status.txt" || { cat "$T/status.txt"; it_fail "status: member 2 failed"; }
nbd_start 2
n=0
until "$JGRFS" status "$MNT" >"$T/status.txt" &&
	grep -q "last rebuild: role 2, [0-9]* of [0-9]* rows (readd: the rows it missed)" "$T/status.txt"; do
	n=$((n + 1))
	[ $n -lt 100 ] || { cat "$T/status.txt"; it_fail "member 2 not brought back within 20 s"; }
	sleep 0.2
done
check_files "after the automatic readd"
it_unmount
it_fsck_clean

it_log "4. every read of member 1 fails (nbdkit error filter)"
kill "$NBD_PID1"
wait "$NBD_PID1" 2>/dev/null
nbd_start 1 --filter=error error=EIO error-pread-rate=100% error-file="$T/fail-reads"
it_mount -o ro
touch "$T/fail-reads"
check_files "with member 1 failing reads"
rm -f "$T/fail-reads"
"$JGRFS" status --json "$MNT" >"$T/status.json" || { cat "$T/status.json"; it_fail "status"; }
grep -q '"role":1,[^}]*"read_errors_corrected":[1-9]' "$T/status.json" ||
	{ cat "$T/status.json"; it_fail "no corrected read error counted on member 1"; }
it_unmount

it_log "4b. every write of member 1 fails (error filter): failed, then re-added on the same server"
kill "$NBD_PID1"
wait "$NBD_PID1" 2>/dev/null
nbd_start 1 --filter=error error-pwrite=EIO error-pwrite-rate=100% error-pwrite-file="$T/fail-writes"
it_mount
touch "$T/fail-writes"
write_file g 1
"$JGRFS" status "$MNT" >"$T/status.txt"
grep -q "member  1  failed .*s1.sock.*(missed [1-9][0-9]* of" "$T/status.txt" ||
	{ cat "$T/status.txt"; it_fail "status: member 1 failed, with the rows it missed"; }
check_files "member 1 failing writes"
rm -f "$T/fail-writes"
readd 1	# the server never went away: a new connection, the rows it missed
check_files "after the readd of 1"
it_unmount
it_fsck_clean

it_log "5. server 2 stops answering: its member fails after the timeout"
export JGRFS_NBD_TIMEOUT=2	# the daemon's: jgrfs(8) ENVIRONMENT
it_mount
unset JGRFS_NBD_TIMEOUT
kill -STOP "$NBD_PID2"
# stopped for sure before the first write (the signal takes effect asynchronously)
while [ "$(awk '{print $3}' "/proc/$NBD_PID2/stat")" != T ]; do sleep 0.05; done
start=$(date +%s)
write_file e 2
[ $(($(date +%s) - start)) -lt 30 ] || it_fail "the write waited more than 30 s"
"$JGRFS" status "$MNT" >"$T/status.txt"
grep -q "member  2  failed .*s2.sock" "$T/status.txt" || { cat "$T/status.txt"; it_fail "status: member 2 failed"; }
check_files "after the timeout"
it_unmount

it_log "6. server 2 killed and started again: rebuilt offline onto it (jgrfs rebuild --new URI)"
kill -9 "$NBD_PID2"	# a stopped process dies too, with whatever write it held
wait "$NBD_PID2" 2>/dev/null
nbd_start 2
"$JGRFS" rebuild --new "$(nbd_uri 2)" "$(nbd_uri 0)" "$(nbd_uri 1)" "$(nbd_uri 3)" >"$T/rebuild.log" 2>&1 ||
	{ cat "$T/rebuild.log"; it_fail "rebuild --new URI"; }
it_fsck_clean
it_mount
"$JGRFS" status "$MNT" >"$T/status.txt" || { cat "$T/status.txt"; it_fail "not healthy after the rebuild"; }
check_files "after the offline rebuild"
it_log "6b. server 1 killed while idle: no write unanswered, a plain readd brings it back"
kill -9 "$NBD_PID1"
wait "$NBD_PID1" 2>/dev/null
sleep 0.5	# the connection seen gone before a write is sent on it
write_file i 1	# fails member 1
"$JGRFS" status "$MNT" >"$T/status.txt"
grep -q "member  1  failed" "$T/status.txt" || { cat "$T/status.txt"; it_fail "status: member 1 failed"; }
grep -q "writes unanswered" "$T/status.txt" && { cat "$T/status.txt"; it_fail "member 1 unfenced: no write was in flight"; }
nbd_start 1
readd 1	# no --fenced
check_files "after the readd of 1"
it_unmount

it_log "7. writes of server 2 held past the timeout (delay filter): unfenced, readd only with --fenced"
kill "$NBD_PID2"
wait "$NBD_PID2" 2>/dev/null
nbd_start 2 --filter=delay wdelay=5
export JGRFS_NBD_TIMEOUT=2
it_mount -o readd=1
unset JGRFS_NBD_TIMEOUT
write_file j 1	# its first write to member 2, if the mount's did not already, times out
"$JGRFS" status "$MNT" >"$T/status.txt"
grep -q "member  2  failed .*s2.sock.*writes unanswered: readd needs --fenced" "$T/status.txt" ||
	{ cat "$T/status.txt"; it_fail "status: member 2 failed, unfenced"; }
check_files "member 2 unfenced"
# its image served by a second server while the first may still run the write it holds
ln -s "$T/d2.img" "$T/d5.img" || it_fail "ln"
nbd_start 5
if "$JGRFS" readd "$MNT" "$(nbd_uri 5)" >"$T/readd.log" 2>&1; then
	cat "$T/readd.log"
	it_fail "readd without --fenced of a member whose write timed out succeeded"
fi
grep -q -- "--fenced" "$T/readd.log" || { cat "$T/readd.log"; it_fail "readd refused without saying --fenced"; }
kill "$NBD_PID5"
wait "$NBD_PID5" 2>/dev/null
# the first server's process gone, a new one at its address: only the operator knows
kill -9 "$NBD_PID2"
wait "$NBD_PID2" 2>/dev/null
nbd_start 2
sleep 3	# three looks of readd=1
"$JGRFS" status "$MNT" >"$T/status.txt"
grep -q "member  2  failed .*writes unanswered" "$T/status.txt" ||
	{ cat "$T/status.txt"; it_fail "readd=1 brought back a member whose write timed out"; }
readd 2 --fenced
check_files "after the readd --fenced of 2"
it_unmount
it_fsck_clean
it_finish
