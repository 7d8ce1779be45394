#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/cli_output.sh JGRFS [JGRFS_CRASH] - what each subcommand says
# (issue 26): run as a user would, on a fresh volume, its stdout, stderr and
# exit status are compared with tests/integration/cli_output.expected, so that
# no internal line creeps back into a command's output.
#
# What varies from run to run is replaced before the comparison: UUIDs, pids,
# seconds, rates and estimates, and for the commands marked "numbers" (a live
# volume's counters) every number. On a mismatch the test prints the diff and
# leaves the new transcript in $JGRFS_CLI_OUTPUT (default
# /tmp/cli_output.XXXXXX.actual, named by the run's directory, so that two
# checkouts' suites never share it; the failure message names it): after a
# deliberate change, review it and copy it over cli_output.expected.
# The transcript is the /dev/fuse mount's: status names the transport's pools
# (a "fuse ring" line), so JGRFS_FUSE_URING=1 (the suite over the ring) does
# not apply here.
unset JGRFS_FUSE_URING
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
EXPECTED="$(cd "$(dirname "$0")" && pwd)/cli_output.expected"
ACTUAL=${JGRFS_CLI_OUTPUT:-/tmp/cli_output.${T##*.}.actual}
cd "$T" || it_fail "cd $T"
rmdir mnt && mkdir mnt

# Replace what varies between runs (see the header).
normalize() {
	sed -E -e 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/UUID/g' \
		-e 's/pid [0-9]+ \([^)]*\)/pid PID (CMDLINE)/g' \
		-e 's/(pid|daemon_pid)([ =":]+)[0-9]+/\1\2PID/g' \
		-e 's/(seconds|_s)( +|":)[0-9]+\.[0-9]+/\1\2S/g' \
		-e 's/seconds=[0-9]+\.[0-9]+/seconds=S/g' \
		-e 's/  [0-9.]+ [KMGT]?i?B\/s//; s/  [0-9]+ [a-z ]+\/s//; s/  eta [0-9:]+//' \
		-e "s#$T/#T/#g"
}

: >"$ACTUAL"
# run [numbers] -- ARGS...: `jgrfs ARGS` with its output in the transcript.
run() {
	local numbers=0 rc
	if [ "$1" = numbers ]; then numbers=1; shift; fi
	[ "$1" = -- ] && shift
	"$JGRFS" "$@" >out 2>err </dev/null
	rc=$?
	{
		echo "\$ jgrfs $*"
		echo "[exit $rc]"
		if [ $numbers = 1 ]; then
			normalize <out | sed -E 's/[0-9]+(\.[0-9]+)?/N/g'
			normalize <err | sed -E 's/[0-9]+(\.[0-9]+)?/N/g' | sed 's/^/! /'
		else
			normalize <out
			normalize <err | sed 's/^/! /'
		fi
	} >>"$ACTUAL"
}
D="d0.img d1.img d2.img d3.img"

it_log "offline commands on a new volume"
run -- --version
# shellcheck disable=SC2086
{
	run -- mkfs -s 64M $D
	run -- examine d0.img
	run -- examine $D
	run -- fsck -n $D
	run -- fsck -n -q $D
	run -- scrub $D
	run -- scrub -q $D
	run -- scrub --json $D
	run -- owners -b 0 $D
	run -- create -s 16M e0.img e1.img e2.img
	# refused before anything is written (issue 44)
	run -- mkfs e0.img e1.img e2.img
	run -- create -s 16M f0.img f1.img ./f0.img
	run -- examine --json e0.img
	run -- rebuild --new e3.img e0.img e2.img
	run -- wipe --dry-run e1.img
	# an array with no filesystem (create alone, or a mkfs cut short)
	run -- fsck -n e0.img e2.img e3.img
	run -- mount e0.img e2.img e3.img mnt
	run -- fsck -n -v $D
}

it_log "a mounted volume"
# shellcheck disable=SC2086
run -- mount $D mnt
grep -q " $T/mnt fuse" /proc/mounts || it_fail "jgrfs mount did not mount"
# shellcheck disable=SC2086
{
	run -- fsck -n $D
	run numbers -- status mnt
	run -- resync-all on mnt
	run -- resync-all off mnt
	run -- replace mnt e9.img
	run -- spare add -s 64M mnt s0.img
	run -- spare remove mnt s0.img
	run -- wipe d0.img
	run numbers -- scrub -q mnt
	run -- umount mnt
	run -- fsck -n $D
}
grep -q " $T/mnt fuse" /proc/mounts && it_fail "still mounted after jgrfs umount"

it_log "fsck as fsck(8) runs it, and usage errors: one line and a pointer to --help"
# shellcheck disable=SC2086
{
	run -- fsck -p $D
	run -- fsck -p -f $D
	run -- fsck -n -y $D
	run -- fsck -a -n $D
	run -- fsck -z $D
	run -- fsck
	run --
	run -- nosuch
	run -- mkfs --bogus $D
	run -- mkfs
	run -- create -l 7 e0.img e1.img e2.img
	run -- examine
	run -- mount -x $D mnt
	run -- mount mnt
	run -- status mnt extra
	run -- umount mnt extra
	run -- scrub --trust-data mnt
	run -- rebuild --role x --new e9.img $D
	run -- spare frob mnt s0.img
	run -- resync-all maybe mnt
	run -- replace mnt
	run -- owners $D
	run -- wipe
	run -- sync
}

if ! diff -u "$EXPECTED" "$ACTUAL"; then
	it_fail "the commands' output differs from $EXPECTED (above; new transcript: $ACTUAL)"
fi
it_log "$(grep -c '^\$ jgrfs' "$ACTUAL") commands say exactly what is expected"
[ -n "${JGRFS_CLI_OUTPUT:-}" ] || rm -f "$ACTUAL"	# kept only when it differs
it_finish
