#!/bin/bash
# SPDX-License-Identifier: MIT
# An operator's mistake never costs data (issue 44): a command that is refused
# writes nothing, and a member left out is not run without by default.
#
# A table of refusals, each with its exit status, the key phrase of its
# message, and the sha256 of every member file (and hot spare) before and
# after: unchanged, or the row fails. Before the fix, mount -o bogus with a
# member left out failed yet marked that member failed (stale: a full
# rebuild to come back); options were checked after assembly had written.
# Then what is allowed: -o degraded (the spare given takes the role and is
# rebuilt), fsck --degraded, an array whose member failed earlier (recorded)
# mounting without the option and saying so, and `jgrfs sync` making data
# durable for a kill -9 of the daemon (with commit=3600 nothing else would).
#
#   operator_degraded.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
# the second volume of the mount point test: unmounted whatever happens
od_cleanup() {
	local rc=$? i
	# twice: a mount over it, when the check under test let one through
	for i in 1 2; do
		[ -n "${IT_MNT2:-}" ] && grep -q " $IT_MNT2 fuse" /proc/mounts &&
			fusermount3 -u -z "$IT_MNT2" 2>/dev/null
	done
	(exit $rc)
	it_cleanup
}
trap od_cleanup EXIT

it_make_members 4 64M
truncate -s 64M "$T/spare0.img" || it_fail "truncate"
it_mkfs -l 5 --spare "$T/spare0.img"
D0=$T/disk0.img D1=$T/disk1.img D2=$T/disk2.img D3=$T/disk3.img SP=$T/spare0.img
ALL="$D0 $D1 $D2 $D3 $SP"

# the volume holds a file, to read back after each step
DEVS="$D0 $D1 $D2 $D3 $SP"
it_mount
head -c 3M /dev/urandom >"$T/rand"
cp "$T/rand" "$MNT/rand" || it_fail "cp"
it_unmount

digests() {
	# shellcheck disable=SC2086
	sha256sum $ALL
}

# refused RC PHRASE -- jgrfs ARGS...: exits RC, says PHRASE, writes no member
refused() {
	local want=$1 phrase=$2 rc
	shift 3
	digests >"$T/before.sum"
	"$JGRFS" "$@" >"$T/out.log" 2>&1
	rc=$?
	cat "$T/out.log"
	[ "$rc" = "$want" ] || it_fail "jgrfs $*: exit $rc, expected $want"
	grep -qF -- "$phrase" "$T/out.log" || it_fail "jgrfs $*: no '$phrase' in its message"
	digests | diff "$T/before.sum" - || it_fail "jgrfs $*: refused, yet a member changed"
	grep -q " $MNT fuse" /proc/mounts && it_fail "jgrfs $*: refused, yet mounted"
	it_log "refused as it should: jgrfs $*"
}

it_log "refusals: nothing written"
refused 1 "unknown option" -- mount -o bogus "$D0" "$D1" "$D2" "$MNT"
refused 1 "unknown option" -- mount -o bogus "$D0" "$D1" "$D2" "$SP" "$MNT"
refused 1 "role 3 of 4 not among the devices given" -- mount "$D0" "$D1" "$D2" "$MNT"
refused 1 "or -o degraded to mount" -- mount "$D0" "$D1" "$D2" "$SP" "$MNT"
refused 1 "role 1 of 4 not among the devices given" -- mount -o ro "$D0" "$D2" "$D3" "$MNT"
refused 1 "data=ordered is refused" -- mount -o data=ordered $ALL "$MNT"
refused 1 "data=writeback is refused" -- mount -o data=writeback,degraded "$D0" "$D1" "$D2" "$SP" "$MNT"
refused 1 "unknown option" -- mount -o degraded,bogus "$D0" "$D1" "$D2" "$SP" "$MNT"
refused 1 "this array was created with resync=journal" -- mount -o resync=bitmap $ALL "$MNT"
refused 8 "role 3 of 4 not among the devices given" -- fsck -y "$D0" "$D1" "$D2"
refused 8 "or --degraded to check" -- fsck -n "$D0" "$D1" "$D2" "$SP"
refused 2 "role 2 of 4 not among the devices given" -- scrub "$D0" "$D1" "$D3"
refused 2 "role 2 of 4 not among the devices given" -- scrub --repair "$D0" "$D1" "$D3"

it_log "a mount point that holds a mount already"
mkdir "$T/other" && truncate -s 32M "$T/o0.img" "$T/o1.img" "$T/o2.img" || it_fail "other"
"$JGRFS" mkfs "$T/o0.img" "$T/o1.img" "$T/o2.img" >"$T/mkfs2.log" 2>&1 || it_fail "mkfs other"
"$JGRFS" mount "$T/o0.img" "$T/o1.img" "$T/o2.img" "$T/other" >"$T/mount2.log" 2>&1 ||
	{ cat "$T/mount2.log"; it_fail "mount other"; }
IT_MNT2=$T/other
refused 1 "already has a fuse.jgrfs mounted" -- mount $ALL "$T/other"
"$JGRFS" umount -t 60 "$T/other" || it_fail "umount other"
grep -q " $T/other fuse" /proc/mounts && it_fail "two mounts stacked on $T/other"

it_log "fsck --degraded checks without the member"
digests >"$T/before.sum"
"$JGRFS" fsck -n --degraded "$D0" "$D1" "$D2" >"$T/fsck.log" 2>&1 ||
	{ cat "$T/fsck.log"; it_fail "fsck -n --degraded"; }
grep -q "^clean" "$T/fsck.log" || { cat "$T/fsck.log"; it_fail "fsck -n --degraded not clean"; }
digests | diff "$T/before.sum" - || it_fail "fsck -n --degraded wrote a member"

it_log "-o degraded: mounted without role 3, the spare given takes it"
DEVS="$D0 $D1 $D2 $SP"
it_mount -o degraded
cat "$T/mount.log"
grep -q "mounting degraded, role 3 missing (-o degraded)" "$T/mount.log" ||
	it_fail "the degraded mount does not say so"
i=0
while :; do
	"$JGRFS" status "$MNT" >"$T/status.txt"
	rc=$?
	[ $rc = 0 ] && ! grep -q rebuilding "$T/status.txt" && break
	[ $i -lt 1200 ] || { cat "$T/status.txt"; it_fail "no rebuild onto the spare (status exit $rc)"; }
	sleep 0.1
	i=$((i + 1))
done
grep -q "member  3  ok .*spare0.img" "$T/status.txt" ||
	{ cat "$T/status.txt"; it_fail "status: spare0 is not member 3"; }
cmp "$T/rand" "$MNT/rand" || it_fail "the file on the degraded mount"
it_unmount

it_log "an array whose member failed earlier mounts without -o degraded, and says so"
# disk3.img was recorded failed by the degraded start and the spare has role 3
# now: without disk3 the set is whole
DEVS="$D0 $D1 $D2 $SP"
it_mount
grep -q "mounting degraded" "$T/mount.log" && it_fail "a whole array said degraded"
it_unmount
# role 3 (the spare now) recorded failed in copies by fsck -y --degraded:
# they mount without the option; the failed member given back is refused
for f in "$D0" "$D1" "$D2" "$SP"; do cp --sparse=always "$f" "$f.c"; done
"$JGRFS" fsck -y --degraded "$D0.c" "$D1.c" "$D2.c" >"$T/fsck.log" 2>&1 ||
	{ cat "$T/fsck.log"; it_fail "fsck -y --degraded"; }
ALL="$D0.c $D1.c $D2.c $SP.c"
DEVS="$D0.c $D1.c $D2.c"
it_mount
cat "$T/mount.log"
grep -q "mounting degraded, role 3 missing (failed before this mount, as recorded)" "$T/mount.log" ||
	it_fail "an array degraded before mounts without saying so"
it_unmount
refused 1 "role=3 is stale" -- mount $ALL "$MNT"

it_log "jgrfs sync, then kill -9: the data written before it is there"
DEVS="$D0 $D1 $D2 $SP"
ALL=$DEVS
it_mount -o commit=3600
head -c 2M /dev/urandom >"$T/synced"
cp "$T/synced" "$MNT/synced" || it_fail "cp synced"
"$JGRFS" sync "$MNT" || it_fail "jgrfs sync"
it_crash
it_mount
cmp "$T/synced" "$MNT/synced" || it_fail "the file written before jgrfs sync is lost after kill -9"
cmp "$T/rand" "$MNT/rand" || it_fail "the first file after kill -9"
it_unmount
refused 1 "not a jgrfs mount" -- sync "$T"
it_fsck_clean
it_finish
