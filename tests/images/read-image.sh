#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/images/read-image.sh JGRFS IMAGE OUT - read one golden image with the
# build JGRFS and write what it saw to OUT: the outputs a later build must
# reproduce (fsck -n, for damaged images fsck -y and fsck -n again, the
# recovery lines of the mount, the manifest of the mounted tree, what the
# independent FORMAT.md reader finds). make-images.sh keeps them as the image's
# expected results; tests/integration/golden.sh compares a new build's with them.
#
# Besides recording, it checks what holds for every build (exit 1 naming it):
# the fsck exit codes of the image's kind, the content written (volume.py
# verify), a journal replayed after a kill -9, a degraded array mounted
# degraded, a clean fsck after the mount.
#
# IMAGE is a directory: members.tar.xz (the member files d0, d1, ...) and
# image.conf, which sets
#   KIND   clean | kill | degraded | damaged | damaged-raid
#   DATA   the data= mode to mount with
#   LATE   1 when the volume holds volume.py's late changes (kill images)
set -u
JGRFS=$(realpath "$1")
IMAGE=$(cd "$2" && pwd)
mkdir -p "$3" && OUT=$(cd "$3" && pwd) || exit 1
here=$(cd "$(dirname "$0")" && pwd)
vol="$here/volume.py"
reader="$here/../integration/format_reader.py"
name=$(basename "$IMAGE")

KIND="" DATA=declared LATE=0
. "$IMAGE/image.conf"

fail() {
	echo "FAIL: $name: $*" >&2
	exit 1
}

base=${JGRFS_TEST_DIR:-/var/tmp}
[ "$(stat -f -c %T "$base")" = tmpfs ] && base=$(pwd)	# members need O_DIRECT
W=$(mktemp -d "$base/jgrfs-golden.XXXXXX") || fail "mktemp"
MNT=$W/mnt
cleanup() {
	if grep -q " $MNT fuse" /proc/mounts; then
		fusermount3 -u -z "$MNT" 2>/dev/null
	fi
	[ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$MNT"
tar -C "$W" --sparse -xJf "$IMAGE/members.tar.xz" || fail "cannot unpack members.tar.xz"
cd "$W" || fail "cd"
export MANIFEST_SINCE=$(date +%s)
DEVS=$(ls d[0-9]* | sort -V)

# a member left out on purpose: asked for (fsck --degraded, mount -o degraded)
DEG_FSCK="" DEG_MOUNT=""
[ "$KIND" = degraded ] && DEG_FSCK=--degraded DEG_MOUNT=,degraded

# fsck OUTFILE OPTION: its output (members named as in the archive) and exit code
fsck() {
	# shellcheck disable=SC2086
	"$JGRFS" fsck -v "$2" $DEG_FSCK $DEVS >"$W/fsck.log" 2>&1
	local rc=$?
	# -v: the engine's account (assembly, journal replay) is recorded too. The
	# times a run took differ from run to run; so do the progress lines' rates
	sed -E -e 's/ [a-z_]*seconds=[0-9.]+//g' -e '/^fsck: [0-9]+% /d' "$W/fsck.log" >"$OUT/$1"
	echo "exit $rc" >>"$OUT/$1"
	return $rc
}

fsck fsck-n -n
rc=$?
case $KIND in
damaged)
	[ $rc = 4 ] || fail "fsck -n exit $rc, expected 4 (problems left)"
	fsck fsck-y -y
	rc=$?
	[ $rc = 1 ] || fail "fsck -y exit $rc, expected 1 (problems repaired)"
	fsck fsck-n2 -n
	rc=$?
	[ $rc = 0 ] || fail "fsck -n after -y exit $rc, expected 0 (clean)"
	;;
*)
	[ $rc = 0 ] || fail "fsck -n exit $rc, expected 0 (clean)"
	;;
esac

# shellcheck disable=SC2086
"$JGRFS" mount -o "data=$DATA$DEG_MOUNT" $DEVS "$MNT" >"$W/mount.log" 2>&1 ||
	{ cat "$W/mount.log"; fail "mount"; }
pid=$(timeout 20 "$JGRFS" status --json "$MNT" | sed -n 's/^{"pid":\([0-9]*\).*/\1/p')
[ -n "$pid" ] || fail "no daemon pid from status"
"$JGRFS" status "$MNT" >"$W/status"	# exit 3 when degraded
grep -q "^array:" "$W/status" || fail "status: $(cat "$W/status")"
if [ "$KIND" = degraded ]; then
	grep -q DEGRADED "$W/status" || fail "not mounted degraded"
fi
case $KIND in
damaged) ;;	# repairs changed the tree: the manifest says how
*)
	if [ "$LATE" = 1 ]; then
		python3 "$vol" verify "$MNT" late || fail "content after recovery"
	else
		python3 "$vol" verify "$MNT" || fail "content"
	fi
	;;
esac
python3 "$vol" manifest "$MNT" >"$OUT/manifest" || fail "manifest"
fusermount3 -u "$MNT" || fail "unmount"
i=0
while kill -0 "$pid" 2>/dev/null; do
	[ $i -lt 600 ] || fail "daemon still running 60 s after unmount"
	sleep 0.1
	i=$((i + 1))
done
pid=""
# what the mount said it recovered, without the times
{
	grep -E "assembled|recovery|superblock copy" "$W/mount.log"
	sed -n '/^recovery:/,/^io:/p' "$W/status" | grep -v "^io:"
} | sed -E 's/ [a-z_]*seconds=[0-9.]+//g; s/ in [0-9.]+ s//g' >"$OUT/recovery"
if [ "$KIND" = kill ]; then
	grep -q "transactions_replayed=[1-9]" "$OUT/recovery" ||
		fail "no journal transaction replayed: $(cat "$OUT/recovery")"
fi

fsck fsck-after -n || fail "fsck -n after the mount: $(cat "$OUT/fsck-after")"
if [ "$KIND" != degraded ]; then
	# shellcheck disable=SC2086
	python3 "$reader" $DEVS >"$OUT/format" 2>&1 || fail "format_reader: $(cat "$OUT/format")"
fi
exit 0
