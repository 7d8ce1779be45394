#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/images/make-images.sh JGRFS [NAME...] - make the golden images with the
# build JGRFS (a release build is faster) and record, in NAME/expect/, what that
# build reads from each (read-image.sh). Run as root, with /dev/fuse. Made once
# per format: a later build must read them all as recorded
# (tests/integration/golden.sh); a format change adds images, it does not
# remake these (see README.md here).
#
#   r5-clean        RAID5, 3 members, resync=journal, data=declared: every kind
#                   of inode (volume.py populate), unmounted cleanly
#   r6-clean        RAID6, 4 members, chunk 16K, resync=bitmap, data=ordered
#   r6-degraded     r6-clean without member 2
#   r5-kill-MODE    populate, then volume.py late (fsynced changes, an orphan
#                   held open, unsynced writes) and kill -9 of the daemon, for
#                   MODE declared, ordered, journal, writeback
#   r6-kill-ordered the same on r6-clean's geometry and policy (bitmap)
#   r5-csum-clean   r5-clean's volume made with data checksums (mkfs's default
#                   with resync=journal since b033488)
#   r5-csum-kill-declared  the same, populate, late and kill -9 in declared mode
#   dmg-*           r5-clean damaged by damage.py (from FORMAT.md alone)
set -u
JGRFS=$(realpath "${1:?usage: $0 PATH/TO/jgrfs [NAME...]}")
shift
here=$(cd "$(dirname "$0")" && pwd)
vol="$here/volume.py"
W=$(mktemp -d /var/tmp/jgrfs-mkimages.XXXXXX)
MNT=$W/mnt
mkdir "$MNT"
trap 'fusermount3 -u -z "$MNT" 2>/dev/null; rm -rf "$W"' EXIT

fail() {
	echo "make-images: FAIL: $*" >&2
	exit 1
}

# volume DIR LEVEL MEMBERS POLICY CHUNK DATA [CSUM]: mkfs, mount, populate; CSUM
# --data-checksums, else the volume has none (the images before they existed)
volume() {
	local dir=$1 devs="" csum=${7:---no-data-checksums}
	rm -rf "$dir"
	mkdir -p "$dir"
	for i in $(seq 0 $(($3 - 1))); do devs="$devs d$i"; done
	# shellcheck disable=SC2086
	(cd "$dir" && "$JGRFS" mkfs -l "$2" -r "$4" -c "$5" -s 24M -L golden "$csum" $devs) >/dev/null 2>&1 ||
		fail "mkfs $*"
	# shellcheck disable=SC2086
	(cd "$dir" && "$JGRFS" mount -o "data=$6,commit=60" $devs "$MNT") 2>/dev/null ||
		fail "mount $*"
	python3 "$vol" populate "$MNT" || fail "populate"
}

daemon_pid() {
	"$JGRFS" status --json "$MNT" | sed -n 's/^{"pid":\([0-9]*\).*/\1/p'
}

unmount() {
	local pid
	pid=$(daemon_pid)
	fusermount3 -u "$MNT" || fail "unmount"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

# kill9: volume.py late holds the orphan open; then kill -9 of the daemon
kill9() {
	local pid holder
	pid=$(daemon_pid)
	python3 "$vol" late "$MNT" >"$W/late.log" 2>&1 &
	holder=$!
	for _ in $(seq 600); do
		grep -q "late: done" "$W/late.log" && break
		kill -0 $holder 2>/dev/null || { cat "$W/late.log"; fail "late"; }
		sleep 0.1
	done
	grep -q "late: done" "$W/late.log" || fail "late did not finish"
	kill -9 "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	kill -9 $holder
	wait $holder 2>/dev/null
	fusermount3 -u -z "$MNT"
}

# image NAME SRCDIR KIND DATA LATE [MEMBER...]: archive, conf, expected results
image() {
	local name=$1 src=$2 kind=$3 data=$4 late=$5
	shift 5
	local out="$here/$name" members
	members=${*:-$(cd "$src" && ls d[0-9]* | sort -V)}
	rm -rf "$out"
	mkdir -p "$out"
	# shellcheck disable=SC2086
	XZ_OPT=-9e tar -C "$src" --sparse --owner=0 --group=0 --mtime=@1767225600 -cJf "$out/members.tar.xz" \
		$members || fail "tar $name"
	printf 'KIND=%s\nDATA=%s\nLATE=%s\n' "$kind" "$data" "$late" >"$out/image.conf"
	bash "$here/read-image.sh" "$JGRFS" "$out" "$out/expect" || fail "reading $name back"
	echo "make-images: $name: $(du -k "$out/members.tar.xz" | cut -f1) KiB"
}

want() {
	[ ${#NAMES[@]} = 0 ] && return 0
	local n
	for n in "${NAMES[@]}"; do [ "$n" = "$1" ] && return 0; done
	return 1
}
NAMES=("$@")

volume "$W/r5" 5 3 journal 64K declared
unmount
want r5-clean && image r5-clean "$W/r5" clean declared 0

volume "$W/r6" 6 4 bitmap 16K ordered
unmount
want r6-clean && image r6-clean "$W/r6" clean ordered 0
want r6-degraded && image r6-degraded "$W/r6" degraded ordered 0 d0 d1 d3

for mode in declared ordered journal writeback; do
	want "r5-kill-$mode" || continue
	volume "$W/k" 5 3 journal 64K "$mode"
	kill9
	image "r5-kill-$mode" "$W/k" kill "$mode" 1
done
if want r6-kill-ordered; then
	volume "$W/k" 6 4 bitmap 16K ordered
	kill9
	image r6-kill-ordered "$W/k" kill ordered 1
fi
if want r5-csum-clean; then
	volume "$W/c" 5 3 journal 64K declared --data-checksums
	unmount
	image r5-csum-clean "$W/c" clean declared 0
fi
if want r5-csum-kill-declared; then
	volume "$W/k" 5 3 journal 64K declared --data-checksums
	kill9
	image r5-csum-kill-declared "$W/k" kill declared 1
fi

# damaged: inode numbers as populate makes them (read-image checks the rest)
damaged() {
	local name=$1 kind=$2
	shift 2
	want "$name" || return 0
	rm -rf "$W/dmg"
	cp -a --sparse=always "$W/r5" "$W/dmg"
	(cd "$W/dmg" && python3 "$here/damage.py" "$@" d0 d1 d2) || fail "damage $name"
	image "$name" "$W/dmg" "$kind" declared 0
}
damaged dmg-bbitmap damaged bbitmap 2		# small: a data block marked free
damaged dmg-nlink damaged nlink 3 5		# direct11: 5 links for 1 entry
damaged dmg-dirent damaged dirent owned 2000	# an entry naming a free inode
damaged dmg-itable-flip damaged itable-crc 1	# the root's table block, one bit
damaged dmg-itable-tear damaged itable-tear 423	# xattr's 256 bytes garbage
damaged dmg-member-sb damaged-raid member-sb 1	# a member superblock copy
echo "make-images: done"
