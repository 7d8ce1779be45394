#!/bin/bash
# SPDX-License-Identifier: MIT
# Real programs on a mounted jgrfs (RAID5 over 4 files, data=declared): cp -a and
# diff -r, tar, dd conv=fsync, mv, ln, ln -s, chmod, chown, touch -d, truncate,
# find, xattrs, sqlite3, two concurrent writers, the status and resync-all ioctls;
# then unmount, remount, and everything must be as it was; fsck -n is clean.
#
#   fuse_programs.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
# a private copy of the repository's src/: the checkout changes under us
cp -a "$(dirname "$0")/../../src" "$T/src" || it_fail "no source tree to copy"
SRC=$T/src

it_make_members 4 512M
it_mkfs -l 5
it_mount
M=$MNT

it_log "status"
"$JGRFS" status "$M" >"$T/status.txt" || { cat "$T/status.txt"; it_fail "status"; }
grep -q "raid5, 4 members" "$T/status.txt" || { cat "$T/status.txt"; it_fail "status: raid5"; }
grep -q "healthy" "$T/status.txt" || it_fail "status: healthy"
grep -q "data=declared" "$T/status.txt" || it_fail "status: default data mode is declared"
"$JGRFS" status --json "$M" | grep -q '"degraded":false' || it_fail "status --json"

it_log "cp -a and diff -r of $SRC"
cp -a "$SRC" "$M/src" || it_fail "cp -a"
diff -r "$SRC" "$M/src" || it_fail "diff -r after cp -a"

it_log "tar create and extract"
tar -C "$M" -cf "$M/src.tar" src || it_fail "tar c"
mkdir "$M/x" && tar -C "$M/x" -xf "$M/src.tar" || it_fail "tar x"
diff -r "$SRC" "$M/x/src" || it_fail "diff -r after tar"
[ "$(tar -tf "$M/src.tar" | wc -l)" = "$(cd "$SRC/.." && find src | wc -l)" ] || it_fail "tar t"

it_log "dd conv=fsync, 1 MiB blocks"
head -c 24M /dev/urandom >"$T/rand"
dd if="$T/rand" of="$M/rand" bs=1M conv=fsync status=none || it_fail "dd"
cmp "$T/rand" "$M/rand" || it_fail "dd data"
dd if="$T/rand" of="$M/rand" bs=4k seek=1000 skip=7 count=300 conv=notrunc,fsync status=none ||
	it_fail "dd overwrite"
dd if="$T/rand" of="$T/rand2" bs=4k count=1000 status=none
dd if="$T/rand" of="$T/rand2" bs=4k skip=7 seek=1000 count=300 status=none
dd if="$T/rand" of="$T/rand2" bs=4k skip=1300 seek=1300 status=none
cmp "$T/rand2" "$M/rand" || it_fail "dd overwrite data"

it_log "mv across directories"
mkdir -p "$M/a/b" "$M/c"
echo hello >"$M/a/b/f"
mv "$M/a/b/f" "$M/c/g" || it_fail "mv file"
[ ! -e "$M/a/b/f" ] && [ "$(cat "$M/c/g")" = hello ] || it_fail "mv file result"
mv "$M/a" "$M/c/" || it_fail "mv dir"
[ -d "$M/c/a/b" ] && [ ! -e "$M/a" ] || it_fail "mv dir result"
echo other >"$M/c/h"
mv -f "$M/c/h" "$M/c/g" && [ "$(cat "$M/c/g")" = other ] || it_fail "mv over an existing file"

it_log "ln and ln -s"
ln "$M/c/g" "$M/hard" || it_fail "ln"
[ "$(stat -c %h "$M/c/g")" = 2 ] || it_fail "link count 2"
[ "$(stat -c %i "$M/c/g")" = "$(stat -c %i "$M/hard")" ] || it_fail "same inode"
ln -s c/g "$M/sym" || it_fail "ln -s"
[ "$(readlink "$M/sym")" = c/g ] && [ "$(cat "$M/sym")" = other ] || it_fail "symlink"
long=$(printf 'x%.0s' $(seq 1 1000))
ln -s "$long" "$M/longsym" && [ "$(readlink "$M/longsym")" = "$long" ] || it_fail "long symlink"
rm "$M/hard" && [ "$(stat -c %h "$M/c/g")" = 1 ] || it_fail "unlink one link"

it_log "chmod, chown, touch -d, truncate"
chmod 640 "$M/c/g" && [ "$(stat -c %a "$M/c/g")" = 640 ] || it_fail "chmod"
chmod 4755 "$M/c/g" && [ "$(stat -c %a "$M/c/g")" = 4755 ] || it_fail "chmod setuid"
chown 1234:5678 "$M/c/g" && [ "$(stat -c %u:%g "$M/c/g")" = 1234:5678 ] || it_fail "chown"
touch -d '2001-02-03 04:05:06.123456789 UTC' "$M/c/g" || it_fail "touch -d"
[ "$(stat -c %y "$M/c/g")" = "2001-02-03 04:05:06.123456789 +0000" ] ||
	[ "$(TZ=UTC stat -c %y "$M/c/g")" = "2001-02-03 04:05:06.123456789 +0000" ] ||
	it_fail "touch -d: mtime $(TZ=UTC stat -c %y "$M/c/g")"
truncate -s 100000 "$M/c/g" && [ "$(stat -c %s "$M/c/g")" = 100000 ] || it_fail "truncate up"
truncate -s 3 "$M/c/g" && [ "$(cat "$M/c/g")" = oth ] || it_fail "truncate down"
truncate -s 5000000 "$M/sparse" && [ "$(head -c 5000000 "$M/sparse" | tr -d '\0' | wc -c)" = 0 ] ||
	it_fail "sparse file reads zeros"

it_log "mkfifo, fallocate"
mkfifo "$M/fifo" && [ -p "$M/fifo" ] || it_fail "mkfifo"
fallocate -l 10M "$M/falloc" && [ "$(stat -c %s "$M/falloc")" = 10485760 ] || it_fail "fallocate"
[ "$(stat -c %b "$M/falloc")" -ge 20480 ] || it_fail "fallocate allocated $(stat -c %b "$M/falloc") sectors"
fallocate -n -o 10M -l 4M "$M/falloc" && [ "$(stat -c %s "$M/falloc")" = 10485760 ] ||
	it_fail "fallocate --keep-size"
[ "$(head -c 10485760 "$M/falloc" | tr -d '\0' | wc -c)" = 0 ] || it_fail "fallocated range reads zeros"

it_log "find"
[ "$(cd "$SRC" && find . | sort | md5sum)" = "$(cd "$M/src" && find . | sort | md5sum)" ] ||
	it_fail "find lists differ"
[ "$(find "$M/src" -name '*.c' | wc -l)" = "$(find "$SRC" -name '*.c' | wc -l)" ] || it_fail "find -name"
many=$M/many
mkdir "$many" && for i in $(seq 1 600); do : >"$many/file-with-a-longish-name-$i"; done
[ "$(ls "$many" | wc -l)" = 600 ] || it_fail "600 entries in one directory"
rm "$many"/file-with-a-longish-name-1?? && [ "$(ls "$many" | wc -l)" = 500 ] || it_fail "rm 100"

if command -v python3 >/dev/null; then
	it_log "xattrs"
	python3 - "$M/c/g" <<'PY' || it_fail "xattrs"
import os, sys
p = sys.argv[1]
os.setxattr(p, "user.k1", b"v1")
os.setxattr(p, "user.k2", b"x" * 300)
assert os.getxattr(p, "user.k1") == b"v1"
assert sorted(os.listxattr(p)) == ["user.k1", "user.k2"], os.listxattr(p)
os.removexattr(p, "user.k1")
assert os.listxattr(p) == ["user.k2"]
PY
fi

it_log "sqlite3"
if command -v sqlite3 >/dev/null; then
	sqlite3 "$M/db.sqlite" "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
		INSERT INTO t SELECT i, hex(randomblob(40)) FROM n;
		CREATE INDEX tb ON t(b); DELETE FROM t WHERE a % 3 = 0; VACUUM;" || it_fail "sqlite3 create"
	[ "$(sqlite3 "$M/db.sqlite" 'PRAGMA integrity_check;')" = ok ] || it_fail "sqlite integrity"
	[ "$(sqlite3 "$M/db.sqlite" 'SELECT count(*) FROM t;')" = 3334 ] || it_fail "sqlite count"
else
	it_fail "sqlite3 missing (make deps)"
fi

it_log "two concurrent writers"
head -c 8M /dev/urandom >"$T/w1" && head -c 8M /dev/urandom >"$T/w2"
writer() {
	mkdir "$M/w$1" || return 1
	for i in $(seq 1 150); do
		head -c $((i * 97)) "$T/w$1" >"$M/w$1/f$i" || return 1
	done
	dd if="$T/w$1" of="$M/w$1/big" bs=64k conv=fsync status=none || return 1
	# both write the same shared file, at their own offsets
	dd if="$T/w$1" of="$M/shared" bs=1M count=2 seek=$((($1 - 1) * 2)) conv=notrunc status=none
}
writer 1 & p1=$!
writer 2 & p2=$!
wait $p1 || it_fail "writer 1"
wait $p2 || it_fail "writer 2"
for w in 1 2; do
	cmp "$T/w$w" "$M/w$w/big" || it_fail "writer $w big"
	for i in 1 77 150; do
		cmp <(head -c $((i * 97)) "$T/w$w") "$M/w$w/f$i" || it_fail "writer $w f$i"
	done
	cmp <(head -c 2M "$T/w$w") <(dd if="$M/shared" bs=1M skip=$(((w - 1) * 2)) count=2 status=none) ||
		it_fail "shared file part $w"
done

it_log "mtimes under writeback: concurrent writers, then compared across the remount"
mkdir "$M/times"
for i in $(seq 1 15); do
	dd if="$T/w1" of="$M/times/s$i" bs=1M count=2 conv=notrunc status=none &
	dd if="$T/w2" of="$M/times/s$i" bs=1M count=2 seek=2 conv=notrunc status=none &
	for k in 1 2 3; do head -c 100000 "$T/w1" >"$M/times/t$i.$k"; done &
	wait
done

it_log "an unlinked file stays readable while open"
exec 4<>"$M/orphan"
echo "still here" >&4
rm "$M/orphan"
[ "$(cat /proc/self/fd/4)" = "still here" ] || it_fail "read of an open unlinked file"
exec 4>&-
[ ! -e "$M/orphan" ] || it_fail "orphan name still there"

it_log "space of an unlinked file comes back once the kernel forgets it"
free0=$(stat -f -c %f "$M")
dd if=/dev/zero of="$M/space" bs=1M count=64 conv=fsync status=none || it_fail "dd space"
free1=$(stat -f -c %f "$M")
[ $((free0 - free1)) -ge $((60 * 256)) ] || it_fail "64 MiB written, free blocks $free0 -> $free1"
rm "$M/space"
i=0
while [ $(($(stat -f -c %f "$M") + 256)) -lt "$free0" ]; do
	[ $i -lt 100 ] || it_fail "free blocks $(stat -f -c %f "$M"), expected about $free0 after rm"
	sleep 0.1
	i=$((i + 1))
done

it_log "resync-all on and off"
"$JGRFS" resync-all on "$M" || it_fail "resync-all on"
"$JGRFS" status "$M" | grep -q "resync-all on" || it_fail "status shows resync-all on"
cmp "$T/rand2" "$M/rand" || it_fail "read with resync-all"
"$JGRFS" resync-all off "$M" || it_fail "resync-all off"
"$JGRFS" status "$M" | grep -q "resync-all on" && it_fail "status still shows resync-all"

df "$M" >/dev/null || it_fail "df"
snapshot() {
	(cd "$M" && find . -path ./lost+found -prune -o -printf '%p %y %m %u %g %s %T@ %l\n' | sort) >"$1.meta"
	(cd "$M" && find . -type f -print0 | sort -z | xargs -0 md5sum) >"$1.sums"
}
snapshot "$T/before"

it_log "unmount, remount: everything as it was"
it_unmount
it_mount
snapshot "$T/after"
diff "$T/before.meta" "$T/after.meta" >"$T/meta.diff" ||
	{ head -40 "$T/meta.diff"; it_fail "metadata changed across remount"; }
diff "$T/before.sums" "$T/after.sums" >"$T/sums.diff" ||
	{ head -40 "$T/sums.diff"; it_fail "contents changed across remount"; }
diff -r "$SRC" "$M/src" || it_fail "diff -r after remount"
[ "$(sqlite3 "$M/db.sqlite" 'PRAGMA integrity_check;')" = ok ] || it_fail "sqlite after remount"
grep -q "recovery:" "$T/mount.log" && it_fail "recovery after a clean unmount: $(cat "$T/mount.log")"
it_unmount

it_log "fsck -n"
it_fsck_clean

it_log "a resync policy other than the array's is refused"
# shellcheck disable=SC2086
if "$JGRFS" mount -o resync=full $DEVS "$MNT" >"$T/bad.log" 2>&1; then
	it_unmount
	it_fail "mount -o resync=full accepted on a resync=journal array"
fi
grep -q "resync" "$T/bad.log" || { cat "$T/bad.log"; it_fail "no clear message"; }
grep -q " $MNT fuse" /proc/mounts && it_fail "mounted despite the error"
it_finish
