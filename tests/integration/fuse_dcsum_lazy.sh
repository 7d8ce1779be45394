#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/fuse_dcsum_lazy.sh JGRFS - the data checksum region left
# unwritten by mkfs and written by the mounted volume in the background
# (issue 46, src/fs/dcsum.c (D3), docs/design/lazy-init.md).
#
# A fresh RAID5 volume with data checksums (4 sparse members of 4 GiB: a
# region of some 3100 blocks). Mounted with a slow sync_rate=, the initialiser
# starts at block 0 (the log says so) while files are written and read back;
# unmounted before it ends, the next mount resumes it past 0 and short of the
# end (the mark was kept), and with no rate limit it ends ("initialised").
# Every file reads right with no checksum error; after the unmount fsck is
# clean (it reads every checksum block now) and an offline scrub finds no
# mismatch.
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"

it_make_members 4 4G
it_mkfs --level 5 --chunk 64K
grep -q "data checksums on" "$T/mkfs.log" || { cat "$T/mkfs.log"; it_fail "mkfs: data checksums not on"; }

# mount_log N [OPTS]: a foreground mount, its log in $T/daemonN.log
mount_log() {
	local n=$1
	shift
	# shellcheck disable=SC2086
	"$JGRFS" mount -f -v "$@" $DEVS "$MNT" >"$T/daemon$n.log" 2>&1 &
	for i in $(seq 100); do grep -q " $MNT fuse" /proc/mounts && break; sleep 0.1; done
	grep -q " $MNT fuse" /proc/mounts || { cat "$T/daemon$n.log"; it_fail "mount $n"; }
}

# region_at N: the mark the N-th mount's log names ("written to block X of Y"),
# logged right after the mount appears: waited for up to 10 s
region_at() {
	for i in $(seq 100); do
		grep -q "data checksum region written to block" "$T/daemon$1.log" && break
		sleep 0.1
	done
	sed -n 's/.*data checksum region written to block \([0-9]*\) of \([0-9]*\).*/\1 \2/p' \
		"$T/daemon$1.log" | head -1
}

it_log "mount with a slow initialiser, write files while it runs"
mount_log 1 -o sync_rate=1
read -r at1 total < <(region_at 1)
[ "${at1:-}" = 0 ] || { cat "$T/daemon1.log"; it_fail "first mount: the region is not at block 0"; }
[ "$total" -gt 2000 ] || it_fail "region of $total blocks: too small for this test"
cp -a "$(dirname "$0")/../../src/fs" "$MNT/fs" || it_fail "cp -a"
head -c 24M /dev/urandom >"$T/rand" && cp "$T/rand" "$MNT/rand" || it_fail "cp rand"
sync "$MNT/rand" || it_fail "fsync"
(cd "$MNT" && find . -type f -exec md5sum {} + | sort -k2) >"$T/sums" || it_fail "sums"
echo 3 >/proc/sys/vm/drop_caches
(cd "$MNT" && md5sum --quiet -c "$T/sums") || it_fail "files read back wrong while the initialiser runs"
it_unmount

it_log "remount: the initialiser resumes at its mark"
mount_log 2 -o sync_rate=1
read -r at2 total2 < <(region_at 2)
[ -n "${at2:-}" ] || { cat "$T/daemon2.log"; it_fail "second mount: no initialiser resumed"; }
[ "$total2" = "$total" ] || it_fail "region of $total2 blocks, was $total"
[ "$at2" -gt 0 ] && [ "$at2" -lt "$total" ] ||
	{ cat "$T/daemon2.log"; it_fail "second mount resumes at block $at2 of $total: expected past 0, before the end"; }
it_unmount

it_log "no rate limit: the region is written whole"
mount_log 3 -o sync_rate=0
for i in $(seq 600); do grep -q "data checksum region initialised in" "$T/daemon3.log" && break; sleep 0.1; done
grep -q "data checksum region initialised in" "$T/daemon3.log" ||
	{ cat "$T/daemon3.log"; it_fail "the initialiser did not end in 60 s"; }
echo 3 >/proc/sys/vm/drop_caches
(cd "$MNT" && md5sum --quiet -c "$T/sums") || it_fail "files read back wrong"
"$JGRFS" status --json "$MNT" >"$T/status.json" || it_fail "status"
grep -q '"data_checksum_errors":0' "$T/status.json" || { cat "$T/status.json"; it_fail "checksum errors"; }
it_unmount

it_log "the next mount has nothing to initialise; fsck and scrub clean"
mount_log 4
it_unmount
grep -q "data checksum region written to block" "$T/daemon4.log" &&
	{ cat "$T/daemon4.log"; it_fail "a whole region initialised again"; }
it_fsck_clean
"$JGRFS" scrub $DEVS >"$T/scrub.log" 2>&1 || { cat "$T/scrub.log"; it_fail "offline scrub"; }
it_finish
