#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/operator_refusals.sh JGRFS - an operator's mistake never
# costs data (issue 44): every writing command (mkfs, create, rebuild --new,
# replace, spare add) looks at each device before writing it and checks the
# member list as a whole, and `jgrfs wipe` removes only jgrfs superblocks.
#
# A table: each row runs one command and checks its exit status, a key phrase
# of what it says, and -- for every row that must write nothing -- the sha256
# of each file it names (and that a file it would have created is still
# absent). The rows: a device holding an ext4 filesystem, a swap area, a
# partition table, a member of another jgrfs array (mkfs, create, --spare, rebuild --new, replace,
# spare add), an NBD export holding ext4; one file named twice (the same path,
# a symlink, a hard link, a loop device over it, a file still to be made);
# members of unequal size; members too small for the array or the filesystem;
# a device another process has locked, a mounted block device, a damaged
# jgrfs superblock; wipe of a mounted member; mkfs over a
# wiped array whose filesystem superblock is still there. replace runs on a
# degraded volume (a loop member cut off), where the daemon would rebuild onto
# what it is handed. Then what --force (rebuild: --overwrite) lets through,
# and wipe doing its job.
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
cd "$T" || it_fail "cd $T"
command -v sha256sum >/dev/null || it_skip "no sha256sum"
command -v mkfs.ext4 >/dev/null || it_skip "no mkfs.ext4"
command -v mkswap >/dev/null || it_skip "no mkswap"
ROWS=0

# digest FILE...: one line per file, "absent FILE" for a missing one.
digest() {
	local f
	for f; do
		if [ -e "$f" ]; then sha256sum "$f"; else echo "absent $f"; fi
	done
}

# row NAME RC PHRASE "FILES" -- ARGS...: `jgrfs ARGS` exits RC, says PHRASE
# (fixed string, stdout or stderr), and leaves each of FILES as it was.
row() {
	local name=$1 want=$2 phrase=$3 files=$4 before rc
	shift 4
	[ "$1" = -- ] && shift
	# shellcheck disable=SC2086
	before=$(digest $files)
	"$JGRFS" "$@" >"$T/row.out" 2>&1 </dev/null
	rc=$?
	[ "$rc" = "$want" ] || { cat "$T/row.out"; it_fail "$name: exit $rc, expected $want (jgrfs $*)"; }
	grep -qF -- "$phrase" "$T/row.out" ||
		{ cat "$T/row.out"; it_fail "$name: does not say '$phrase' (jgrfs $*)"; }
	# shellcheck disable=SC2086
	[ "$(digest $files)" = "$before" ] || it_fail "$name: changed $files (jgrfs $*)"
	ROWS=$((ROWS + 1))
}

it_log "fixtures: two arrays, an ext4 image, a swap area, fresh files"
SZ=24M
"$JGRFS" mkfs -q -s $SZ a0.img a1.img a2.img >mkfs_a.log 2>&1 || { cat mkfs_a.log; it_fail "mkfs a"; }
"$JGRFS" mkfs -q -s $SZ b0.img b1.img b2.img >mkfs_b.log 2>&1 || { cat mkfs_b.log; it_fail "mkfs b"; }
for f in n0 n1 n2 n3 x y z w u0 u1; do truncate -s $SZ $f.img; done
truncate -s 48M big.img
truncate -s 48M ubig.img
for f in s0 s1 s2; do truncate -s 8M $f.img; done
mkfs.ext4 -q -F -L scratch x.img || it_fail "mkfs.ext4"
mkfs.ext4 -q -F y.img || it_fail "mkfs.ext4 y"
mkfs.ext4 -q -F -L zz z.img || it_fail "mkfs.ext4 z"
mkswap -L oldswap w.img >/dev/null 2>&1 || it_fail "mkswap"
# a DOS partition table by hand (no sfdisk needed): one Linux partition at 1 MiB
truncate -s $SZ pt.img
printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\x08\x00\x00' |
	dd of=pt.img bs=1 seek=446 conv=notrunc status=none || it_fail "partition entry"
printf '\x55\xaa' | dd of=pt.img bs=1 seek=510 conv=notrunc status=none || it_fail "MBR signature"
ln -s n0.img sym0.img
ln n0.img hard0.img
ln -s b0.img symb0.img
A="a0.img a1.img a2.img"
B="b0.img b1.img b2.img"
N="n0.img n1.img n2.img"

it_log "what a device holds: refused without --force, named, nothing written"
row "mkfs over ext4" 2 "x.img contains an ext4 filesystem (label 'scratch'" "$N x.img" \
	-- mkfs n0.img x.img n2.img
row "mkfs over swap" 2 "w.img contains a swap area (label 'oldswap'" "$N w.img" \
	-- mkfs n0.img n1.img w.img
row "create over ext4" 2 "use --force to overwrite it" "$N x.img" -- create x.img n1.img n2.img
row "create over a partition table" 2 "pt.img contains a dos partition table (magic at offset 510)" \
	"$N pt.img" -- create n0.img n1.img pt.img
row "mkfs over another array's member" 2 "a1.img is member 1 of 3 of jgrfs array" "$A $N" \
	-- mkfs n0.img a1.img n2.img
row "create over another array's member" 2 "a2.img is member 2 of 3 of jgrfs array" "$A $N" \
	-- create n0.img n1.img a2.img
row "mkfs --spare over another array's member" 2 "a0.img is member 0 of 3" "$A $N" \
	-- mkfs --spare a0.img $N
row "mkfs over its own array again" 2 "use --force to overwrite it" "$A" -- mkfs $A
# both copies of a member superblock damaged: still jgrfs's, still refused
cp b0.img dmg.img
for off in 200 4296; do
	printf 'X' | dd of=dmg.img bs=1 seek=$off conv=notrunc status=none || it_fail "damage"
done
row "mkfs over a damaged jgrfs superblock" 2 "dmg.img holds a damaged jgrfs member superblock" \
	"$N dmg.img" -- mkfs n0.img n1.img dmg.img
# a block device the kernel holds (a mounted ext4): refused even with --force
mkdir "$T/extmnt"
if mount -o loop,ro y.img "$T/extmnt" 2>/dev/null; then
	LOOPY=$(findmnt -n -o SOURCE "$T/extmnt")
	(row "mkfs --force over a mounted block device" 2 "$LOOPY is in use by the system" "$N" \
		-- mkfs --force n0.img n1.img "$LOOPY")
	rc=$?
	umount "$T/extmnt"
	[ $rc = 0 ] || exit $rc
	ROWS=$((ROWS + 1))
else
	it_log "cannot mount an ext4 loop device here: that row skipped"
fi
row "rebuild --new over another array's member" 2 \
	"a0.img is member 0 of 3 of another jgrfs array" "$A $B" \
	-- rebuild --role 1 --fail --new a0.img $B
row "rebuild --new over ext4" 2 "x.img contains an ext4 filesystem" "$B x.img" \
	-- rebuild --role 1 --fail --new x.img $B
row "rebuild --force is not --overwrite" 2 "use --overwrite to overwrite it" "$B x.img" \
	-- rebuild --force --role 1 --fail --new x.img $B

it_log "the member list: one device twice, sizes, too small"
row "the same file twice" 1 "n0.img and n0.img are the same file" "$N" -- mkfs n0.img n1.img n0.img
row "a symlink to a member" 1 "n0.img and sym0.img are the same file" "$N" \
	-- mkfs n0.img n1.img sym0.img
row "a hard link to a member" 1 "n0.img and hard0.img are the same file" "$N" \
	-- create n0.img hard0.img n2.img
row "a file to be made, twice" 1 "are the same file" "m0.img m1.img" \
	-- mkfs -s $SZ m0.img m1.img ./m0.img
row "a spare that is a member" 1 "are the same file" "$N" -- mkfs --spare sym0.img $N
row "rebuild --new by a symlink to a member" 1 "b0.img and symb0.img are the same file" "$B" \
	-- rebuild --role 0 --fail --new symb0.img $B
row "members of unequal size" 2 "members differ in size (n0.img holds 24.0 MiB, big.img 48.0 MiB)" \
	"$N big.img" -- mkfs n0.img n1.img big.img
row "the smallest stated" 2 "give --size 24576K to say so, or --force" "$N big.img" \
	-- create n0.img big.img n2.img
row "members too small for the filesystem" 2 "each member needs at least 16512K" \
	"s0.img s1.img s2.img" -- mkfs s0.img s1.img s2.img
row "--size too small, files not made" 2 "too small for a filesystem" "t0.img t1.img t2.img" \
	-- mkfs -s 8M t0.img t1.img t2.img
row "members too small for the array" 2 "too small for this array: each needs at least 128K" \
	"t0.img t1.img t2.img" -- create -s 64K t0.img t1.img t2.img
row "a spare smaller than the members" 2 "spare s0.img (8.0 MiB) is smaller than a member" \
	"$N s0.img" -- mkfs --spare s0.img $N

if LOOP=$(losetup -f --show n0.img 2>/dev/null); then
	IT_LOOPS="$IT_LOOPS $LOOP"
	row "a loop device over a member" 1 "(a loop device over it)" "$N" -- mkfs n0.img n1.img "$LOOP"
	row "a loop device over a member, first" 1 "(a loop device over it)" "$N" \
		-- create "$LOOP" n1.img n0.img
	losetup -d "$LOOP"
	IT_LOOPS=""
else
	it_log "no free loop device: the loop rows skipped"
fi

if command -v nbdkit >/dev/null; then
	# an export of x.img: libblkid probes it from its first and last MiB
	nbdkit -f --unix "$T/x.sock" --pidfile "$T/x.pid" file "$T/x.img" </dev/null \
		>"$T/nbdkit.log" 2>&1 &
	IT_PIDS="$IT_PIDS $!"
	for _ in $(seq 100); do [ -s "$T/x.pid" ] && break; sleep 0.1; done
	row "mkfs over an NBD export holding ext4" 2 "contains an ext4 filesystem (label 'scratch'" \
		"$N x.img" -- mkfs "nbd+unix:///?socket=$T/x.sock" n1.img n2.img
	kill "$(cat "$T/x.pid")"
fi

it_log "a degraded volume: replace would rebuild onto NEWDEV, were it not refused"
# b2 as a loop device, cut off under the mount (as fuse_degraded.sh): the
# daemon then rebuilds onto whatever replace hands it
LOOPB=$(losetup -f --show b2.img 2>/dev/null) || it_skip "no free loop device"
IT_LOOPS="$IT_LOOPS $LOOPB"
"$JGRFS" mount b0.img b1.img "$LOOPB" "$MNT" >mount.log 2>&1 || { cat mount.log; it_fail "mount b"; }
truncate -s 0 b2.img
losetup -c "$LOOPB" || it_fail "losetup -c"
head -c 1M /dev/urandom >"$MNT/f"
sync -f "$MNT/f"
for _ in $(seq 100); do
	"$JGRFS" status "$MNT" | grep -q DEGRADED && break
	dd if=/dev/urandom of="$MNT/g" bs=64K count=4 conv=fsync status=none
	sleep 0.1
done
"$JGRFS" status "$MNT" | grep -q DEGRADED || it_fail "the volume did not go degraded"
B="b0.img b1.img"
row "replace over another array's member" 1 "a2.img is member 2 of 3 of another jgrfs array" \
	"$A" -- replace --wait "$MNT" a2.img
row "replace over ext4" 1 "x.img contains an ext4 filesystem" "x.img" -- replace "$MNT" x.img
# a process that holds n3.img as a jgrfs command holds a member (flock)
(exec 9<n3.img && flock -x 9 && exec sleep 60) &
HOLDER=$!
IT_PIDS="$IT_PIDS $HOLDER"
for _ in $(seq 50); do flock -n n3.img true || break; sleep 0.1; done
row "replace --force onto a device another process holds" 1 "n3.img is in use by pid" "n3.img" \
	-- replace --force "$MNT" n3.img
kill "$HOLDER"
wait "$HOLDER" 2>/dev/null
# b0 and b1 are not digested: the mounted volume's daemon writes them (commits,
# checkpoints) whenever it likes; the volume going on below shows they stayed
row "wipe a member of a mounted volume" 2 "b0.img: in use by pid" "" -- wipe b0.img
row "wipe refuses every device when one is in use" 2 "in use by pid" "$A" -- wipe a0.img b1.img
"$JGRFS" status "$MNT" | grep -q DEGRADED || it_fail "a refused replace rebuilt the volume"
row "replace --force over ext4" 0 "rebuild done: the array is whole" "" \
	-- replace --force --wait "$MNT" z.img
grep -qF "z.img contains an ext4 filesystem (label 'zz'" row.out &&
	grep -qF "overwriting it (--force)" row.out || { cat row.out; it_fail "replace --force said nothing"; }

it_log "a whole volume: spare add looks at DEV first"
row "spare add over another array's member" 1 "the volume never takes it" "$A" \
	-- spare add "$MNT" a1.img
row "spare add --force over another array's member" 1 "jgrfs wipe it first" "$A" \
	-- spare add --force "$MNT" a1.img
row "spare add over swap" 1 "w.img contains a swap area" "w.img" -- spare add "$MNT" w.img
row "spare add --force over ext4" 0 "spare added:" "" -- spare add --force "$MNT" x.img
grep -qF "x.img contains an ext4 filesystem" row.out || it_fail "spare add --force did not say what it overwrote"
row "spare remove" 0 "spare removed:" "" -- spare remove "$MNT" x.img
"$JGRFS" umount "$MNT" >umount.log 2>&1 || { cat umount.log; it_fail "umount b"; }
B="b0.img b1.img z.img"

it_log "--force (rebuild: --overwrite) proceeds, saying what it overwrites"
row "mkfs --force over ext4" 0 "y.img contains an ext4 filesystem" "" -- mkfs --force n0.img y.img n2.img
grep -qF "overwriting it (--force)" row.out || it_fail "mkfs --force did not say it overwrote"
row "mkfs --force, unequal sizes" 0 "members differ in size (24.0 MiB to 48.0 MiB)" "" \
	-- mkfs --force n0.img n1.img big.img
# --size: that much of each, larger members too (20M of 24M, 24M and 48M)
row "mkfs --size, unequal sizes" 0 "jgrfs filesystem:" "" -- mkfs -s 20M u0.img u1.img ubig.img
"$JGRFS" examine ubig.img >examine.log 2>&1 || { cat examine.log; it_fail "examine ubig.img"; }
grep -q "member size   19.9 MiB" examine.log || { cat examine.log; it_fail "--size did not set the member size"; }
row "rebuild --overwrite" 0 "rebuilt role 1 onto w.img" "" \
	-- rebuild --overwrite --role 1 --fail --new w.img $B

it_log "wipe: only jgrfs superblocks"
row "wipe --dry-run" 0 "a0.img: would wipe the jgrfs superblock (member 0 of 3" "$A" \
	-- wipe --dry-run a0.img
mkfs.ext4 -q -F -L again n3.img || it_fail "mkfs.ext4 n3"
row "wipe leaves ext4 alone" 0 "n3.img: no jgrfs superblock: nothing wiped" "n3.img" -- wipe n3.img
row "wipe an NBD URI needs --force" 2 "give --force to wipe it" "" -- wipe "nbd+unix:///?socket=$T/none"
row "wipe" 0 "a1.img: wiped the jgrfs superblock (member 1 of 3" "" -- wipe $A
for f in $A; do
	"$JGRFS" examine "$f" >/dev/null 2>&1 && it_fail "$f still examines as a member after wipe"
	cmp -s -n 8192 "$f" /dev/zero || it_fail "$f: its superblocks are not zeros after wipe"
done
# the array superblocks are gone, the filesystem's is still where a new array
# over the same members in the same order would put its own
row "mkfs over a wiped array's filesystem" 2 "holds the superblock of a jgrfs filesystem" "$A" \
	-- mkfs $A
row "create over it: no filesystem is written" 0 "created RAID5" "" -- create $A
"$JGRFS" wipe -q $A >/dev/null || it_fail "wipe again"
row "mkfs --force over it" 0 "jgrfs filesystem:" "" -- mkfs --force $A

it_log "$ROWS rows: each command exits, says and leaves the bytes as expected"
it_finish
