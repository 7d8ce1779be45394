#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/fuse_uring_stall.sh - over FUSE io_uring (-o uring), a
# request that waits holds its own ring entry only, not its CPU's queue
# (docs/design/fuse-uring.md).
#
# The kernel queues a request on the queue of the CPU its caller runs on. A
# RAID5 over three nbdkit servers, mounted -o uring (JGRFS_NBD_TIMEOUT=0: a
# member that does not answer is waited for, never failed); one server
# stopped (SIGSTOP); a writer pinned to one CPU overwrites blocks of a file
# and fsyncs, and its FSYNC waits in the daemon (without the fs lock) for the
# commit the stopped member holds. Lookups from a second
# process pinned to the same CPU must still be answered meanwhile. Then the
# server goes on (SIGCONT), the fsync ends, and the file reads back right.
# With `-o no_uring` as its argument ($3), the same over /dev/fuse.
#
#   fuse_uring_stall.sh PATH/TO/jgrfs [PATH/TO/jgrfs-crash] [no_uring]
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
MODE=${3:-uring}
command -v nbdkit >/dev/null || it_skip "no nbdkit (make deps installs it)"
command -v taskset >/dev/null || it_skip "no taskset"
if [ "$MODE" = uring ] && [ -z "${IT_URING_HELD:-}" ]; then
	it_uring_enable	# fuse.enable_uring, shared with the tests running beside (fuse_lib.sh)
fi
. "$(dirname "$0")/nbd_lib.sh"

# the first CPU this test may run on: the writer and the lookups share it
cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
taskset -c "$cpu" true || it_fail "taskset -c $cpu"

for i in 0 1 2; do
	truncate -s 128M "$T/d$i.img" || it_fail "truncate"
	nbd_start $i
done
DEVS="$(nbd_uri 0) $(nbd_uri 1) $(nbd_uri 2)"
it_mkfs -q --assume-clean -l 5	# the exports serve new sparse files: zeros, in sync
export JGRFS_NBD_TIMEOUT=0	# the daemon's: wait for the stopped server, do not fail it
it_mount -o "$MODE"
unset JGRFS_NBD_TIMEOUT
if [ "$MODE" = uring ]; then
	grep -qx fuse-uring /proc/"$(it_daemon_pid)"/task/*/comm || it_fail "-o uring serves no queue"
fi
# the file and its blocks there before the stop: the write after it changes
# blocks in memory (under the fs lock, no read), and only its fsync waits,
# for the commit, without the lock (docs/design/fs.md)
head -c 4M /dev/urandom >"$T/data"
head -c 64K /dev/urandom >"$T/new"
mkdir "$MNT/d" && echo x >"$MNT/d/x" || it_fail "mkdir, write"
dd if="$T/data" of="$MNT/f" bs=1M conv=fsync status=none || it_fail "write f"
sync
dd if="$T/new" of="$T/data" bs=4K conv=notrunc status=none	# what f is to read after

it_log "server 1 stopped; a writer on CPU $cpu fsyncs"
kill -STOP "$NBD_PID1"
while [ "$(awk '{print $3}' "/proc/$NBD_PID1/stat")" != T ]; do sleep 0.05; done
taskset -c "$cpu" dd if="$T/new" of="$MNT/f" bs=4K conv=notrunc,fsync status=none &
writer=$!
# its FSYNC held in the daemon, waiting for the commit the stopped member
# holds: seen waiting for an answer for a second on end (the request is then
# taken by a ring entry's thread)
n=0
held=0
while [ $held -lt 10 ]; do
	if grep -q request_wait_answer "/proc/$writer/stack" 2>/dev/null; then
		held=$((held + 1))
	else
		held=0
	fi
	n=$((n + 1))
	if [ $n -ge 600 ] || ! kill -0 "$writer" 2>/dev/null; then
		kill -CONT "$NBD_PID1"
		it_fail "the writer did not come to wait on the daemon"
	fi
	sleep 0.1
done

it_log "lookups from CPU $cpu while the writer's request waits"
for i in 1 2 3 4 5 6 7 8 9 10; do
	taskset -c "$cpu" stat "$MNT/d/none$i" >/dev/null 2>&1 &
	probe=$!
	n=0
	while kill -0 "$probe" 2>/dev/null; do
		n=$((n + 1))
		if [ $n -ge 300 ]; then
			kill -CONT "$NBD_PID1"
			it_fail "a lookup on CPU $cpu waited 30 s behind the request held on the same CPU ($MODE)"
		fi
		sleep 0.1
	done
	wait "$probe" && it_fail "d/none$i exists"
done
kill -0 "$writer" 2>/dev/null || it_fail "the write and fsync ended with a member stopped"

it_log "server 1 goes on: the write and fsync end"
kill -CONT "$NBD_PID1"
wait "$writer" || it_fail "the write and fsync failed"
"$JGRFS" status "$MNT" >"$T/status.txt" || { cat "$T/status.txt"; it_fail "status not healthy"; }
sync
echo 3 >/proc/sys/vm/drop_caches
cmp "$T/data" "$MNT/f" || it_fail "the file written during the stall differs"
it_unmount
it_fsck_clean
it_finish
