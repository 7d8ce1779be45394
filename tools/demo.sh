#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tools/demo.sh - `make demo`: a 4-disk RAID5 over sparse files in ./demo,
# mounted at ./demo/mnt; `make demo-stop` unmounts it.
#
#   sh tools/demo.sh [--stop] PATH/TO/jgrfs
#
# Run again after `kill -9` of the daemon: the dead mount is cleared and the
# volume remounted, and the mount prints what recovery did.
# JGRFS_DEMO_DIR puts the demo elsewhere than ./demo (the tests do).
set -u

stop=0
if [ "${1:-}" = "--stop" ]; then
	stop=1
	shift
fi
jgrfs=${1:-build/tools/jgrfs}
case "$jgrfs" in
/*) ;;
*) jgrfs=$(pwd)/$jgrfs ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
demo=${JGRFS_DEMO_DIR:-$root/demo}
mnt=$demo/mnt
disks="$demo/disk0.img $demo/disk1.img $demo/disk2.img $demo/disk3.img"
size=1G

die() {
	echo "demo: $*" >&2
	exit 1
}

# unmount: fusermount3 for users, umount works for root too
demo_unmount() {
	fusermount3 -u "$mnt" 2>/dev/null || umount "$mnt" 2>/dev/null
}

is_mounted() {
	grep -q " $mnt fuse" /proc/mounts
}

# A mount whose daemon died (kill -9) answers "Transport endpoint is not connected"
# to statfs; stat may still answer from the kernel's attribute cache (a day).
is_dead_mount() {
	is_mounted && ! stat -f "$mnt" >/dev/null 2>&1
}

daemon_pid() {
	"$jgrfs" status --json "$mnt" 2>/dev/null | sed -n 's/^{"pid":\([0-9]*\).*/\1/p'
}

if [ $stop = 1 ]; then
	if ! is_mounted; then
		echo "demo: nothing mounted at $mnt"
		exit 0
	fi
	pid=$(daemon_pid)
	demo_unmount || die "cannot unmount $mnt (files still open? see: fuser -m $mnt)"
	# the daemon commits, checkpoints and marks the array clean after the unmount
	if [ -n "$pid" ]; then
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do
			sleep 0.1
			i=$((i + 1))
		done
	fi
	echo "demo: unmounted $mnt; the array is clean. Remount with: make demo"
	exit 0
fi

[ -x "$jgrfs" ] || die "$jgrfs not found: build first (make build)"
[ -e /dev/fuse ] || die "/dev/fuse missing: load the fuse module (modprobe fuse)"

# before anything touches $mnt: on a dead mount even mkdir -p fails (ENOTCONN)
if is_dead_mount; then
	echo "demo: $mnt is a dead mount (daemon killed); clearing it to remount and recover"
	demo_unmount || die "cannot clear the dead mount at $mnt"
elif is_mounted; then
	echo "demo: already mounted:"
	"$jgrfs" status "$mnt"
	exit 0
fi
mkdir -p "$mnt" || die "cannot create $mnt"

# Make the array and filesystem once; the marker says mkfs finished.
made=1
for d in $disks; do
	[ -f "$d" ] || made=0
done
[ -f "$demo/.mkfs-done" ] || made=0
if [ $made = 0 ]; then
	echo "demo: creating 4 sparse $size member files and a RAID5 filesystem on them"
	rm -f "$demo/.mkfs-done"
	for d in $disks; do
		truncate -s $size "$d" || die "cannot create $d"
	done
	# shellcheck disable=SC2086
	"$jgrfs" mkfs --force -l 5 $disks >"$demo/mkfs.log" 2>&1 ||
		{ cat "$demo/mkfs.log"; die "mkfs failed"; }
	grep -v '^[a-z]*: ' "$demo/mkfs.log"
	touch "$demo/.mkfs-done"
fi

# shellcheck disable=SC2086
"$jgrfs" mount $disks "$mnt" || die "mount failed (see the messages above)"
pid=$(daemon_pid)

cat <<EOF

jgrfs is mounted at $mnt  (RAID5 over 4 sparse files in $demo, data=declared)
daemon pid: ${pid:-?}; it logs to syslog (journalctl -t jgrfs)

  use it:      cp -a /etc $mnt/ && ls $mnt
  state:       $jgrfs status $mnt
  unmount:     make demo-stop      (or: $jgrfs umount $mnt)
  crash it:    kill -9 ${pid:-<pid>}   then: make demo   (remounts; prints what recovery did)
EOF
