# SPDX-License-Identifier: MIT
# tests/integration/fuse_lib.sh - sourced by the FUSE integration tests.
#
# Each test: `. fuse_lib.sh; it_setup "$@"` gives it
#   $JGRFS   the jgrfs binary (first argument)
#   $JGRFS_CRASH  the test program jgrfs-crash (second argument, optional): jgrfs
#            with fault options (--powercut, --badblocks: tools/crash/faults.h)
#   $T       a private directory on a disk filesystem (members need O_DIRECT)
#   $MNT     an empty mountpoint
#   $DEVS    the member paths (it_make_members)
# and a trap that unmounts, kills a daemon left behind, detaches loop devices and
# removes $T, whatever happens. Exit 77 skips (no /dev/fuse, not root).
# Sanitizer reports of every jgrfs process land in $T/san.*; it_finish fails the
# test when there is one.
set -u

it_log() {
	echo "[$(date +%H:%M:%S)] $*"
}

it_fail() {
	echo "FAIL: $*" >&2
	exit 1
}

it_cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	if [ -n "${MNT:-}" ] && grep -q " $MNT fuse" /proc/mounts; then
		local pid
		pid=$(timeout 5 "$JGRFS" status --json "$MNT" 2>/dev/null |
			sed -n 's/^{"pid":\([0-9]*\).*/\1/p')
		fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
		if [ -n "$pid" ]; then
			sleep 1
			kill -9 "$pid" 2>/dev/null
		fi
	fi
	for p in ${IT_PIDS:-}; do
		kill -9 "$p" 2>/dev/null
	done
	for l in ${IT_LOOPS:-}; do
		losetup -d "$l" 2>/dev/null
	done
	# the module parameter as the first test using it found it, by the last
	[ -n "${IT_URING_HELD:-}" ] && it_uring_users remove
	if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -n "${T:-}" ]; then
		for f in "$T"/san.* "$T"/*.log; do
			[ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }
		done
	fi
	[ -n "${T:-}" ] && rm -rf "$T"
	exit "$rc"
}

it_skip() {
	echo "SKIP: $*"
	exit 77
}

it_setup() {
	JGRFS=${1:?usage: $0 PATH/TO/jgrfs [PATH/TO/jgrfs-crash]}
	case "$JGRFS" in /*) ;; *) JGRFS=$(pwd)/$JGRFS ;; esac
	[ -x "$JGRFS" ] || it_fail "$JGRFS: not executable"
	JGRFS_CRASH=${2:-}
	if [ -n "$JGRFS_CRASH" ]; then
		case "$JGRFS_CRASH" in /*) ;; *) JGRFS_CRASH=$(pwd)/$JGRFS_CRASH ;; esac
		[ -x "$JGRFS_CRASH" ] || it_fail "$JGRFS_CRASH: not executable"
	fi
	[ -c /dev/fuse ] || it_skip "no /dev/fuse"
	[ "$(id -u)" = 0 ] || it_skip "needs root (chown, loop devices, drop_caches)"
	command -v fusermount3 >/dev/null || it_skip "no fusermount3"
	local base=${JGRFS_TEST_DIR:-/var/tmp}
	if [ "$(stat -f -c %T "$base" 2>/dev/null)" = tmpfs ]; then
		base=$(pwd)	# the build directory: members need O_DIRECT
	fi
	T=$(mktemp -d "$base/jgrfs-it.XXXXXX") || it_fail "mktemp in $base"
	MNT=$T/mnt
	mkdir "$MNT"
	IT_PIDS=""
	IT_LOOPS=""
	trap it_cleanup EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$T/san"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$T/san:print_stacktrace=1"
	[ "${JGRFS_FUSE_URING:-}" = 1 ] && it_uring_enable
	return 0
}

# JGRFS_FUSE_URING=1 runs a test over FUSE io_uring (every mount's default
# becomes -o uring): the kernel must offer it, so the module parameter is set.
# Tests run two at a time: $IT_URING_USERS lists the tests (their pids) that
# set it; the first keeps what it found in $IT_URING_USERS.was, the last to end
# puts that back (a test killed meanwhile is pruned; its .was kept).
IT_URING_PARAM=/sys/module/fuse/parameters/enable_uring
IT_URING_USERS=/run/jgrfs-it-uring.users
it_uring_enable() {
	[ -e $IT_URING_PARAM ] || it_skip "JGRFS_FUSE_URING=1: this kernel has no FUSE over io_uring (Linux 6.14+)"
	it_uring_users add || it_skip "JGRFS_FUSE_URING=1: fuse.enable_uring is N and cannot be set"
	IT_URING_HELD=1
}

# it_uring_users add|remove: this test into or out of the list, under a lock
# (a subshell's descriptor: no daemon inherits it); the first in sets the
# parameter, the last out puts it back
it_uring_users() (
	local pid live=""
	flock -x 9 || exit 1
	for pid in $(cat "$IT_URING_USERS" 2>/dev/null); do
		[ "$pid" != $$ ] && kill -0 "$pid" 2>/dev/null && live="$live $pid"
	done
	if [ "$1" = add ]; then
		[ -n "$live" ] || [ -e "$IT_URING_USERS.was" ] ||
			cat $IT_URING_PARAM >"$IT_URING_USERS.was" || exit 1
		echo $live $$ >"$IT_URING_USERS"
		[ "$(cat $IT_URING_PARAM)" = Y ] || echo 1 >$IT_URING_PARAM 2>/dev/null
	else
		echo $live >"$IT_URING_USERS"
		[ -n "$live" ] || ! [ -e "$IT_URING_USERS.was" ] ||
			{ cat "$IT_URING_USERS.was" >$IT_URING_PARAM && rm -f "$IT_URING_USERS.was"; }
	fi
) 9>>"$IT_URING_USERS.lock"

# Over io_uring, the daemon has its queue threads once the kernel took the ring.
it_uring_check() {
	local pid
	stat "$MNT" >/dev/null || it_fail "stat $MNT"
	pid=$(it_daemon_pid)
	grep -qx fuse-uring /proc/"$pid"/task/*/comm 2>/dev/null ||
		it_fail "JGRFS_FUSE_URING=1 but daemon ${pid:-?} serves no io_uring queue"
}

# it_make_members N SIZE: N sparse member files; sets DEVS.
it_make_members() {
	DEVS=""
	for i in $(seq 0 $(($1 - 1))); do
		truncate -s "$2" "$T/disk$i.img" || it_fail "truncate"
		DEVS="$DEVS $T/disk$i.img"
	done
}

it_mkfs() {
	# shellcheck disable=SC2086
	"$JGRFS" mkfs "$@" $DEVS >"$T/mkfs.log" 2>&1 || { cat "$T/mkfs.log"; it_fail "mkfs $*"; }
}

# it_mount [-o OPTS]: background mount; the output (with the recovery line) in $T/mount.log
# The program to run with the faults of $IT_FAULTS when set (jgrfs-crash and
# its options: IT_FAULTS="--powercut after=N" it_mount), else jgrfs.
it_jg() {
	if [ -n "${IT_FAULTS:-}" ]; then
		[ -n "$JGRFS_CRASH" ] || it_fail "IT_FAULTS needs jgrfs-crash (second argument)"
		# shellcheck disable=SC2086
		"$JGRFS_CRASH" $IT_FAULTS "$@"
	else
		"$JGRFS" "$@"
	fi
}

it_mount() {
	# shellcheck disable=SC2086
	it_jg mount "$@" $DEVS "$MNT" >"$T/mount.log" 2>&1 || {
		cat "$T/mount.log"
		it_fail "mount $*"
	}
	grep -q " $MNT fuse" /proc/mounts || it_fail "mount returned 0 but $MNT is not mounted"
	case "${JGRFS_FUSE_URING:-}:$*" in 1:*no_uring*) ;; 1:*) it_uring_check ;; esac
}

it_daemon_pid() {
	timeout 20 "$JGRFS" status --json "$MNT" | sed -n 's/^{"pid":\([0-9]*\).*/\1/p'
}

# Clean unmount: jgrfs umount waits for the daemon to finish (commit, checkpoint,
# array clean: it reads the member superblocks back), 60 s at the most.
it_unmount() {
	local pid state
	pid=$(it_daemon_pid)
	[ -n "$pid" ] || it_fail "no daemon pid from status"
	"$JGRFS" umount -t 60 "$MNT" || it_fail "jgrfs umount (exit $?)"
	# gone, or a zombie its parent has yet to reap
	state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
	[ -z "$state" ] || [ "$state" = Z ] ||
		it_fail "daemon $pid still running (state $state) after jgrfs umount"
}

# kill -9 the daemon and clear the dead mount, as after a crash.
it_crash() {
	local pid
	pid=$(it_daemon_pid)
	[ -n "$pid" ] || it_fail "no daemon pid from status"
	kill -9 "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" || it_fail "cannot clear dead mount"
}

# it_fsck_clean [OPTION...]: fsck -n of $DEVS (--degraded for a set with one left out)
it_fsck_clean() {
	# shellcheck disable=SC2086
	"$JGRFS" fsck -n "$@" $DEVS >"$T/fsck.log" 2>&1
	local rc=$?
	[ $rc = 0 ] || { cat "$T/fsck.log"; it_fail "fsck -n exit $rc (expected 0: clean)"; }
}

# Fails when a sanitizer reported anything from any jgrfs process.
it_finish() {
	local f
	for f in "$T"/san.*; do
		[ -f "$f" ] || continue
		cat "$f"
		it_fail "sanitizer report in $f"
	done
	it_log "PASS"
}
