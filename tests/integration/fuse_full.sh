#!/bin/bash
# SPDX-License-Identifier: MIT
# A full volume, as a user meets it: fill a 4 x 128 MiB RAID5 with one large
# file, then try every kind of operation until it fails with ENOSPC (create,
# mkdir, symlink, link, rename, xattr, write, fallocate, truncate up), delete
# the large file, write again, unmount cleanly: fsck -n finds nothing, and again
# after a remount.
#
# Mounted without the kernel's writeback cache: with it, write(2) returns before
# the daemon sees the data, so the filling dd would never meet ENOSPC (only a
# later fsync reports it) and go on growing its file in the page cache.
#
#   fuse_full.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"

it_make_members 4 128M
it_mkfs -l 5
it_mount -o no_writeback_cache

it_log "fill with one large file"
dd if=/dev/zero of="$MNT/big" bs=1M conv=fsync status=none 2>"$T/dd.err"
grep -q "No space left" "$T/dd.err" || { cat "$T/dd.err"; it_fail "filling did not end with ENOSPC"; }

it_log "every kind of operation until it fails"
long=$(printf 'long-target-%.0s' $(seq 20))	# past the inode: needs a data block
n=0
while touch "$MNT/small-$n" 2>/dev/null; do
	n=$((n + 1))
	[ $n -lt 100000 ] || it_fail "100000 creates on a full volume"
done
it_log "creates: $n before ENOSPC"
for i in $(seq 50); do mkdir "$MNT/dir-$i" 2>/dev/null || break; done
for i in $(seq 50); do ln -s "$long" "$MNT/sym-$i" 2>/dev/null || break; done
for i in $(seq 50); do ln -s short "$MNT/ssym-$i" 2>/dev/null || break; done
for i in $(seq 50); do ln "$MNT/small-0" "$MNT/link-$i" 2>/dev/null || break; done
for i in $(seq 50); do mv "$MNT/small-1" "$MNT/renamed-to-a-long-name-$i" 2>/dev/null || break; done
if command -v setfattr >/dev/null; then
	setfattr -n user.full -v value "$MNT/small-2" 2>/dev/null
fi
dd if=/dev/zero of="$MNT/small-3" bs=4K count=16 conv=fsync status=none 2>/dev/null
fallocate -l 1M "$MNT/small-4" 2>/dev/null
truncate -s 1M "$MNT/small-5" || it_fail "truncate up on a full volume"
it_unmount
it_fsck_clean
it_mount -o no_writeback_cache

it_log "delete the large file, write again"
rm "$MNT/big" || it_fail "rm big"
dd if=/dev/zero of="$MNT/again" bs=1M count=64 conv=fsync status=none || it_fail "write after delete"
touch "$MNT/after-delete" || it_fail "create after delete"
it_unmount
it_fsck_clean

# With the kernel's writeback cache (the default) the daemon's reply to a write
# of cached pages is taken as all or nothing: a short count passes for the
# whole range, and fsync would say a tail that never reached the disks is there.
it_log "with the writeback cache: every file whose fsync succeeded is whole, up to ENOSPC"
it_mount
avail=$(df -k --output=avail "$MNT" | tail -1)
fallocate -l $(((avail - 3 * 1024) * 1024)) "$MNT/most" || it_fail "fallocate of all but 3 MiB"
head -c 1M /dev/urandom >"$T/one" || it_fail "urandom"
n=0
while dd if="$T/one" of="$MNT/wb-$n" bs=1M conv=fsync status=none 2>"$T/dd.err"; do
	n=$((n + 1))
	[ $n -lt 100 ] || it_fail "100 files of 1 MiB written in 3 MiB"
done
grep -q "No space left" "$T/dd.err" || { cat "$T/dd.err"; it_fail "the last write did not end with ENOSPC"; }
echo 3 >/proc/sys/vm/drop_caches
for i in $(seq 0 $((n - 1))); do
	cmp -s "$T/one" "$MNT/wb-$i" ||
		it_fail "wb-$i: its fsync succeeded, it reads back $(stat -c %s "$MNT/wb-$i") bytes of 1048576 or wrong"
done
it_log "$n files of 1 MiB acknowledged before ENOSPC, all whole"
it_unmount
it_fsck_clean
it_finish
