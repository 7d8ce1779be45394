#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/operator_fsck.sh JGRFS - fsck as fsck(8) and e2fsck
# (issue 44), and a usage error as one line and a pointer to --help.
#
# A table: each row runs one command (jgrfs, or fsck.jgrfs and mount.jgrfs by
# a symlink, or util-linux fsck(8) itself) and checks its exit status (e2fsck's
# for fsck: 0 clean, 1 repaired, 4 left, 16 usage), a key phrase of what it
# says, and for a row that must write nothing the sha256 of the members. The
# volumes: a new one (unmounted cleanly), the golden image dmg-nlink (a link
# count damaged offline, the superblock still saying clean) and r5-kill-declared
# (killed mounted: a journal to replay). Rows: -p on a clean volume (reported
# without a check), -p -f, -p on damage (exit 4, UNEXPECTED INCONSISTENCY,
# nothing written), -y repairing it (1), -p replaying a journal (written: the
# next check has none); -n -y, -a -n, -p -y refused (16, two lines); a bad
# option or a missing argument to several commands (two lines, exit 2); fsck(8)
# -A driven by a test fstab (FSTAB_FILE) with a line of type jgrfs, its pass
# number deciding, in dry run and for real; mount.jgrfs called as mount(8)
# calls it.
IMAGES=$(cd "$(dirname "$0")/../images" && pwd)
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
cd "$T" || it_fail "cd $T"
command -v sha256sum >/dev/null || it_skip "no sha256sum"
command -v xz >/dev/null || it_skip "no xz"
ROWS=0

# row NAME RC PHRASE "FILES" -- PROG ARGS...: PROG exits RC and says PHRASE
# (fixed string, stdout or stderr; "" for none); FILES (may be "") are left as they were.
row() {
	local name=$1 want=$2 phrase=$3 files=$4 before rc
	shift 4
	[ "$1" = -- ] && shift
	# shellcheck disable=SC2086
	before=$([ -z "$files" ] || sha256sum $files)
	"$@" >"$T/row.out" 2>&1 </dev/null
	rc=$?
	[ "$rc" = "$want" ] || { cat "$T/row.out"; it_fail "$name: exit $rc, expected $want ($*)"; }
	[ -z "$phrase" ] || grep -qF -- "$phrase" "$T/row.out" ||
		{ cat "$T/row.out"; it_fail "$name: does not say '$phrase' ($*)"; }
	# shellcheck disable=SC2086
	[ "$([ -z "$files" ] || sha256sum $files)" = "$before" ] || it_fail "$name: wrote $files ($*)"
	ROWS=$((ROWS + 1))
}

# usage NAME RC CMD -- PROG ARGS...: a usage error: exit RC, nothing on stdout,
# on stderr one line saying what is wrong and "Try 'CMD --help' ...".
usage() {
	local name=$1 want=$2 cmd=$3 rc
	shift 3
	[ "$1" = -- ] && shift
	"$@" >"$T/u.out" 2>"$T/u.err" </dev/null
	rc=$?
	[ "$rc" = "$want" ] || { cat "$T/u.err"; it_fail "$name: exit $rc, expected $want ($*)"; }
	[ -s "$T/u.out" ] && { cat "$T/u.out"; it_fail "$name: printed on stdout ($*)"; }
	[ "$(wc -l <"$T/u.err")" = 2 ] || { cat "$T/u.err"; it_fail "$name: not two lines ($*)"; }
	grep -q "^$cmd: ." "$T/u.err" || { cat "$T/u.err"; it_fail "$name: no '$cmd: why' line"; }
	[ "$(tail -n 1 "$T/u.err")" = "Try '$cmd --help' for more information." ] ||
		{ cat "$T/u.err"; it_fail "$name: no pointer to $cmd --help"; }
	ROWS=$((ROWS + 1))
}

it_log "fixtures: a new volume, the golden images dmg-nlink and r5-kill-declared"
mkdir bin clean dmg kill
ln -s "$JGRFS" bin/fsck.jgrfs
ln -s "$JGRFS" bin/mount.jgrfs
"$JGRFS" mkfs -q -s 24M clean/d0 clean/d1 clean/d2 >mkfs.log 2>&1 || { cat mkfs.log; it_fail "mkfs"; }
tar -C dmg --sparse -xJf "$IMAGES/dmg-nlink/members.tar.xz" || it_fail "unpack dmg-nlink"
tar -C kill --sparse -xJf "$IMAGES/r5-kill-declared/members.tar.xz" || it_fail "unpack r5-kill-declared"
C="clean/d0 clean/d1 clean/d2"
D="dmg/d0 dmg/d1 dmg/d2"
K="kill/d0 kill/d1 kill/d2"

it_log "fsck's modes, exit codes as e2fsck's"
# shellcheck disable=SC2086
{
	row "-p, clean" 0 "unmounted cleanly, not checked" "$C" -- "$JGRFS" fsck -p $C
	row "fsck.jgrfs -a, clean" 0 "not checked" "$C" -- bin/fsck.jgrfs -a $C
	row "-p -f, clean" 0 "clean: " "$C" -- "$JGRFS" fsck -p -f $C
	row "-pf, damaged" 4 "d0: UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY." "$D" -- \
		"$JGRFS" fsck -pf $D
	row "-pf, damaged: its problem" 4 "link count 5, should be 1" "$D" -- "$JGRFS" fsck -pf $D
	row "-p, damaged, superblock clean: as e2fsck" 0 "not checked" "$D" -- "$JGRFS" fsck -p $D
	row "-n -f, damaged" 4 "PROBLEMS LEFT" "$D" -- "$JGRFS" fsck -n -f $D
	row "-y, damaged" 1 "repaired: " "" -- "$JGRFS" fsck -y $D
	row "-p -f, repaired" 0 "0 problems found" "$D" -- "$JGRFS" fsck -p -f $D
	row "-p, killed mounted: journal" 0 "transactions replayed" "" -- bin/fsck.jgrfs -p $K
	row "-p -f after it: clean" 0 "clean: " "$K" -- bin/fsck.jgrfs -p -f $K
}
# the replay was written: no journal left to replay
grep -q "journal:" "$T/row.out" && { cat "$T/row.out"; it_fail "-p did not write the journal's replay"; }

it_log "usage errors: one line, a pointer to --help"
# shellcheck disable=SC2086
{
	usage "-n -y" 16 "jgrfs fsck" -- "$JGRFS" fsck -n -y $C
	usage "-a -n" 16 "jgrfs fsck" -- "$JGRFS" fsck -a -n $C
	usage "-p -y" 16 "fsck.jgrfs" -- bin/fsck.jgrfs -p -y $C
	usage "fsck -z" 16 "jgrfs fsck" -- "$JGRFS" fsck -z $C
	usage "fsck.jgrfs, no members" 16 "fsck.jgrfs" -- bin/fsck.jgrfs -p
	usage "mkfs --bogus" 2 "jgrfs mkfs" -- "$JGRFS" mkfs --bogus $C
	usage "create -l 7" 2 "jgrfs create" -- "$JGRFS" create -l 7 $C
	usage "mount -x" 2 "jgrfs mount" -- "$JGRFS" mount -x $C mnt
	usage "mount.jgrfs -x" 2 "mount.jgrfs" -- bin/mount.jgrfs -x $C mnt
	usage "scrub --nope" 2 "jgrfs scrub" -- "$JGRFS" scrub --nope $C
	usage "rebuild --role x" 2 "jgrfs rebuild" -- "$JGRFS" rebuild --role x $C
	usage "umount -t" 2 "jgrfs umount" -- "$JGRFS" umount -t
	usage "status, two mountpoints" 2 "jgrfs status" -- "$JGRFS" status mnt extra
	usage "wipe -Q" 2 "jgrfs wipe" -- "$JGRFS" wipe -Q clean/d0
	usage "no command" 2 "jgrfs" -- "$JGRFS"
	usage "unknown command" 2 "jgrfs" -- "$JGRFS" frobnicate
}
# the refused ones wrote nothing
row "refused -n -y wrote nothing" 16 "only one of" "$C" -- "$JGRFS" fsck -n -y $C

it_log "fsck(8) -A driven by a test fstab"
command -v fsck >/dev/null || it_skip "no fsck(8)"
fsck -V 2>&1 | grep -q util-linux || it_skip "fsck(8) is not util-linux's"
# pass 2: checked; pass 0: never (its members do not exist: fsck.jgrfs would fail)
mkfstab() {
	{
		echo "# test fstab (issue 44)"
		echo "members=$T/$1/d0:$T/$1/d1:$T/$1/d2 /srv/jgrfs-it jgrfs defaults 0 2"
		echo "members=$T/none0:$T/none1:$T/none2 /srv/jgrfs-no jgrfs defaults 0 0"
	} >fstab
}
export FSTAB_FILE=$T/fstab
tar -C dmg --sparse -xJf "$IMAGES/dmg-nlink/members.tar.xz" || it_fail "unpack dmg-nlink again"
mkfstab clean
# shellcheck disable=SC2086
{
	row "fsck -A -N: what it would run" 0 "fsck.jgrfs members=$T/clean/d0:$T/clean/d1:$T/clean/d2" \
		"$C" -- env PATH="$T/bin:$PATH" fsck -C -T -A -N
	row "fsck -A -N: pass 0 skipped" 0 "" "" -- env PATH="$T/bin:$PATH" fsck -C -T -A -N
}
grep -q none0 "$T/row.out" && { cat "$T/row.out"; it_fail "fsck -A would check a line of pass 0"; }
# shellcheck disable=SC2086
{
	row "fsck -A -p, clean" 0 "not checked" "$C" -- env PATH="$T/bin:$PATH" fsck -C -T -A -p
	row "fsck -A -p -f, clean" 0 "clean: " "$C" -- env PATH="$T/bin:$PATH" fsck -C -T -A -p -f
}
mkfstab dmg
# shellcheck disable=SC2086
{
	row "fsck -A -p -f, damaged" 4 "UNEXPECTED INCONSISTENCY" "$D" -- \
		env PATH="$T/bin:$PATH" fsck -C -T -A -p -f
	row "fsck -A -y, damaged" 1 "repaired: " "" -- env PATH="$T/bin:$PATH" fsck -C -T -A -y
	row "fsck -A -n, repaired" 0 "clean: " "$D" -- env PATH="$T/bin:$PATH" fsck -C -T -A -n
}

it_log "mount.jgrfs as mount(8) calls it: SOURCE DIR -n -o OPTIONS"
row "mount.jgrfs" 0 "" "" -- bin/mount.jgrfs "members=$T/clean/d0:$T/clean/d1:$T/clean/d2" "$MNT" \
	-n -o rw,nofail
grep -q " $MNT fuse" /proc/mounts || it_fail "mount.jgrfs did not mount"
echo hello >"$MNT/f" || it_fail "write through mount.jgrfs's mount"
"$JGRFS" umount "$MNT" >umount.log 2>&1 || { cat umount.log; it_fail "umount"; }
row "-p after mount.jgrfs's mount: clean" 0 "not checked" "$C" -- "$JGRFS" fsck -p $C

it_log "$ROWS rows as expected"
it_finish
