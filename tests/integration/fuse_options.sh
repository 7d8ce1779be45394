#!/bin/bash
# SPDX-License-Identifier: MIT
# Mount options and modes of `jgrfs mount`: every data mode writes and reads
# back across a remount; a small fsync logs its data (logdata=0: never), and
# many fill the log until a background checkpoint pass shows in status; ro
# refuses writes; bad options (a notify= program that is relative, missing or
# not executable among them), a foreign resync policy
# and a dead mountpoint are refused with a message and nothing mounted; -f stays
# in the foreground and stops cleanly on SIGINT; the /etc/fstab form goes
# through mount.fuse3 (`jgrfs#mount` source, members= option). A status request
# sized by another build gets the version and size, not ENOTTY.
#
#   fuse_options.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"

it_make_members 4 128M
# every data mode on one volume: made without data checksums, which refuse
# ordered and writeback (fuse_dcsum.sh); with --resync journal they are the default
it_mkfs -l 5 --no-data-checksums
grep -q "data checksums off" "$T/mkfs.log" || { cat "$T/mkfs.log"; it_fail "mkfs --no-data-checksums"; }
head -c 3M /dev/urandom >"$T/data"

for mode in journal writeback ordered declared; do
	it_log "data=$mode"
	it_mount -o data=$mode,commit=1
	"$JGRFS" status "$MNT" | grep -q "data=$mode" || it_fail "status: data=$mode"
	mkdir "$MNT/$mode" && cp "$T/data" "$MNT/$mode/f" && cp -a "$T/data" "$MNT/$mode/g" ||
		it_fail "write in data=$mode"
	it_unmount
	it_mount
	cmp "$T/data" "$MNT/$mode/f" && cmp "$T/data" "$MNT/$mode/g" || it_fail "data=$mode lost data"
	it_unmount
done

it_log "no_writeback_cache, threads=1, max_write=128K, max_read_errors=5"
it_mount -o no_writeback_cache,threads=1,max_write=128K,max_read_errors=5
cp "$T/data" "$MNT/nowb" && cmp "$T/data" "$MNT/nowb" || it_fail "no_writeback_cache"
"$JGRFS" status --json "$MNT" | grep -q '"read_errors_corrected":0,"read_errors_uncorrectable":0' ||
	it_fail "status --json: no read error counters"
# a status tool of another build asks with its own struct size: the daemon
# answers the version and size it checks, not "not a jgrfs mount" (ENOTTY)
python3 - "$MNT" <<'EOF' || it_fail "status ioctl of another size"
import errno, fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
def status(size):  # _IOR('J', 0x40, size)
    buf = bytearray(size)
    fcntl.ioctl(fd, (2 << 30) | (size << 16) | (ord("J") << 8) | 0x40, buf, True)
    return bytes(buf)
version, size = struct.unpack_from("<II", status(64))
assert version >= 10 and size > 64, (version, size)
assert status(size)[:8] == struct.pack("<II", version, size)
try:
    status(4)
    sys.exit("a 4-byte status answered")
except OSError as e:
    assert e.errno == errno.ENOTTY, e
EOF
it_unmount

it_log "logdata: a small fsync logs its data; logdata=0 never does"
head -c 8K /dev/urandom >"$T/small"
it_mount
dd if="$T/small" of="$MNT/small1" bs=8K conv=fsync status=none || it_fail "dd conv=fsync"
"$JGRFS" status --json "$MNT" | grep -q '"logged_data_blocks":[1-9]' ||
	it_fail "a small fsync did not log its data"
it_unmount
it_mount -o logdata=0
dd if="$T/small" of="$MNT/small0" bs=8K conv=fsync status=none || it_fail "dd conv=fsync"
"$JGRFS" status --json "$MNT" | grep -q '"logged_data_blocks":0,' || it_fail "logdata=0 logged data"
it_unmount
it_mount
cmp "$T/small" "$MNT/small1" && cmp "$T/small" "$MNT/small0" || it_fail "logdata: data lost"
it_unmount

it_log "small commits past a quarter of the log: a background checkpoint pass, in status"
it_mount
dd if=/dev/zero of="$MNT/dsync" bs=4K count=600 oflag=dsync status=none || it_fail "dd oflag=dsync"
for _ in $(seq 150); do
	"$JGRFS" status --json "$MNT" | grep -q '"checkpoint_passes":[1-9]' && break
	sleep 0.2
done
"$JGRFS" status --json "$MNT" | grep -q '"checkpoint_passes":[1-9]' ||
	it_fail "600 small commits and no background checkpoint pass"
"$JGRFS" status "$MNT" | grep -q "checkpoints since mount: [1-9][0-9]* background passes" ||
	it_fail "status: checkpoint passes"
it_unmount

it_log "ro"
it_mount -o ro
touch "$MNT/new" 2>/dev/null && it_fail "wrote to a read-only mount"
# an existing file opened for writing: refused by the kernel, no OPEN reaches
# the daemon (V8 of src/fuse/ops.c)
err=$( (: >>"$MNT/declared/f") 2>&1) && it_fail "opened a file for writing on a read-only mount"
case "$err" in *"Read-only file system"*) ;; *) it_fail "write open on ro: $err" ;; esac
cmp "$T/data" "$MNT/declared/f" || it_fail "read on ro"
"$JGRFS" status "$MNT" | grep -q "read-only" || it_fail "status: read-only"
it_unmount

it_log "refused options"
for o in data=fast commit=0 max_write=2M threads=0 max_read_errors=0 logdata=2000 logdata=x resync=bitmap no_such_option \
	uring_poll=1001 uring_poll=x \
	notify=relative/prog notify=/nonexistent/prog notify=/etc/passwd; do
	# shellcheck disable=SC2086
	if "$JGRFS" mount -o $o $DEVS "$MNT" >"$T/bad.log" 2>&1; then
		it_unmount
		it_fail "-o $o accepted"
	fi
	[ -s "$T/bad.log" ] || it_fail "-o $o refused without a message"
	grep -q " $MNT fuse" /proc/mounts && it_fail "-o $o: mounted anyway"
done
# to a file, not grep -q on a pipe: the command must have exited (its daemon
# child with it, and the members' locks) before the next mount
# shellcheck disable=SC2086
"$JGRFS" mount -o resync=full $DEVS "$MNT" >"$T/resync.log" 2>&1 &&
	it_fail "-o resync=full accepted on a resync=journal array"
grep -q "resync=journal" "$T/resync.log" ||
	it_fail "resync= refusal does not name the array's policy: $(cat "$T/resync.log")"

it_log "a dead mountpoint is refused"
it_mount
pid=$(it_daemon_pid)
kill -9 "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
# shellcheck disable=SC2086
"$JGRFS" mount $DEVS "$MNT" >"$T/dead.log" 2>&1 && it_fail "mounted over a dead mount"
grep -q "jgrfs umount --force" "$T/dead.log" || { cat "$T/dead.log"; it_fail "no advice for a dead mount"; }
"$JGRFS" umount --force "$MNT" || it_fail "clear the dead mount as advised"

it_log "-f: foreground, SIGINT"
# shellcheck disable=SC2086
"$JGRFS" mount -f -v $DEVS "$MNT" >"$T/fg.log" 2>&1 &
fg=$!
IT_PIDS="$IT_PIDS $fg"
i=0
until grep -q " $MNT fuse" /proc/mounts; do
	kill -0 $fg 2>/dev/null || { cat "$T/fg.log"; it_fail "foreground mount died"; }
	[ $i -lt 300 ] || it_fail "foreground mount did not come up"
	sleep 0.1
	i=$((i + 1))
done
grep -q "recovery: array_was_dirty=1" "$T/fg.log" || { cat "$T/fg.log"; it_fail "no recovery line"; }
cp "$T/data" "$MNT/fg" || it_fail "write in foreground mode"
kill -INT $fg
wait $fg
rc=$?
[ $rc = 0 ] || { cat "$T/fg.log"; it_fail "foreground daemon exit $rc after SIGINT"; }
grep -q " $MNT fuse" /proc/mounts && it_fail "still mounted after SIGINT"
grep -q "unmounted .* cleanly" "$T/fg.log" || it_fail "no clean unmount message"

it_log "fstab form through mount.fuse3"
if command -v mount.fuse3 >/dev/null; then
	mkdir "$T/bin" && ln -s "$JGRFS" "$T/bin/jgrfs"
	members=$(echo $DEVS | tr ' ' ':')
	PATH="$T/bin:$PATH" mount.fuse3 "jgrfs#mount" "$MNT" -o "members=$members,data=ordered,nofail" \
		>"$T/fstab.log" 2>&1 || { cat "$T/fstab.log"; it_fail "mount.fuse3 jgrfs#mount"; }
	"$JGRFS" status "$MNT" | grep -q "data=ordered" || it_fail "fstab form: options not applied"
	cmp "$T/data" "$MNT/fg" || it_fail "fstab form: data"
	it_unmount
fi

it_fsck_clean
it_finish
