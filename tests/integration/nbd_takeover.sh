#!/bin/bash
# SPDX-License-Identifier: MIT
# Member faults stacked while the volume works (issue 43): a RAID5 of four
# nbdkit servers on Unix sockets (files, so their data outlives a server),
# written by two writers all along (files of 1 to 4 MiB; each writer keeps its
# last 8). A writer's file is "acknowledged" once its write and fsync returned:
# only then is its sum recorded. Each part ends the same way: every
# acknowledged file still kept reads back right (page cache dropped), unmount,
# fsck -n clean, the offline scrub finds no mismatch.
#
#   A. members full of noise (the initial sync has work), a fifth export added
#      as a hot spare, an online scrub running: member 2 (nbdkit's rate and
#      error filters, switched by files) turns slow, then fails its writes:
#      the daemon fails it and rebuilds onto the spare while the writers go
#      on (the initial sync waits for the rebuild: sync.c (Y4)); the scrub
#      stopped by the failure is run again once the array is whole, under the
#      writers (it must find nothing), and the initial sync ends;
#   B. the server of member 1 stops (SIGSTOP) under the writers: its member
#      fails after JGRFS_NBD_TIMEOUT; the server comes back (SIGCONT) and runs
#      the writes it held, then is killed and started again on its image, and
#      `jgrfs readd --fenced` brings it back under the writers (the rows it
#      missed: those of its unanswered writes too); then an online scrub
#      under the writers;
#   C. member 3 turns slow, then fails its reads: a block read again after
#      its repair (stripe.c raid_read_repair) fails too, and the daemon fails
#      the member; `jgrfs replace` rebuilds it onto a new export under the
#      writers; then an online scrub under the writers.
# The spare and the new export of C serve 10 MB/s: their rebuilds last
# seconds. An online scrub cannot run while the array is degraded or being
# rebuilt (it stops, or is refused, saying so): here one runs at each fault
# and again after each takeover, the writers never stopping.
#
#   nbd_takeover.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
command -v nbdkit >/dev/null || it_skip "no nbdkit (make deps installs it)"
command -v sha256sum >/dev/null || it_skip "no sha256sum"
for f in rate error; do
	nbdkit --filter=$f null --dump-plugin >/dev/null 2>&1 || it_skip "no nbdkit $f filter"
done

SIZE=48M	# each member: an array of 144 MiB
KEEP=8		# files a writer keeps: it removes the one written KEEP files before

. "$(dirname "$0")/nbd_lib.sh"
# The filters of a member that can turn slow and fail (files switch them):
# $T/rateI holds its bandwidth (bits/s), $T/rfailI fails its reads, $T/wfailI
# its writes, while they exist.
faulty() {
	echo "--filter=error --filter=rate rate=100G rate-file=$T/rate$1" \
		"error-pread=EIO error-pread-rate=100% error-pread-file=$T/rfail$1" \
		"error-pwrite=EIO error-pwrite-rate=100% error-pwrite-file=$T/wfail$1"
}
# set_rate I BITS: change server I's bandwidth (atomically, as the filter wants)
set_rate() {
	echo "$2" >"$T/rate$1.new" && mv "$T/rate$1.new" "$T/rate$1" || it_fail "rate file"
}

# The daemon stays in the foreground, its log in $T/daemon.log (the test's
# failure output shows its tail).
tk_mount() {
	local n=0
	# shellcheck disable=SC2086
	"$JGRFS" mount -f "$@" $DEVS "$MNT" >>"$T/daemon.log" 2>&1 &
	until grep -q " $MNT fuse" /proc/mounts; do
		kill -0 $! 2>/dev/null || it_fail "mount $* exited (see $T/daemon.log)"
		n=$((n + 1))
		[ $n -lt 1200 ] || it_fail "not mounted within 120 s"
		sleep 0.1
	done
}
status_json() {
	"$JGRFS" status --json "$MNT" >"$T/status.json" 2>&1
	[ $? -le 3 ] || { cat "$T/status.json"; it_fail "status --json"; }
}
# jfield KEY: the value of the last "KEY": in $T/status.json (a number, null, a
# string): the scrub's rows_done, not the initial sync's
jfield() {
	sed -n "s/.*\"$1\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p" "$T/status.json" | head -1 | tr -d '"'
}
# member_field ROLE KEY
member_field() {
	sed -n "s/.*{\"role\":$1,\"name\":\"[^\"]*\"\(,[^}]*\)}.*/\1/p" "$T/status.json" |
		sed -n "s/.*,\"$2\":\(\"[^\"]*\"\|[^,]*\).*/\1/p" | tr -d '"'
}
# wait_for SECONDS WHAT CMD...: poll CMD every 0.2 s until it succeeds
wait_for() {
	local limit=$1 what=$2 t0
	shift 2
	t0=$(date +%s)
	until "$@"; do
		if [ $(($(date +%s) - t0)) -ge "$limit" ]; then
			"$JGRFS" status "$MNT" 2>&1
			it_fail "waited $limit s for $what"
		fi
		check_writers
		sleep 0.2
	done
}

# Writer K: files of 1 to 4 MiB of random bytes until $T/stop exists. A file's
# sum goes to $T/sums.d once dd (conv=fsync) returned; its name to $T/acked.
writer() {
	local k=$1 n=0 f old sum
	while [ ! -e "$T/stop" ]; do
		f=$PART$k.$n
		head -c $((n % 4 + 1))M /dev/urandom >"$T/src$k" || { echo urandom >"$T/writer$k.err"; return 1; }
		dd if="$T/src$k" of="$MNT/$f" bs=1M conv=fsync status=none 2>>"$T/writer$k.err" ||
			{ echo "writer $k: write of $f failed" >>"$T/writer$k.err"; return 1; }
		sum=$(sha256sum <"$T/src$k") || return 1
		# whole or not there for check_files (which skips dot files)
		echo "${sum%% *}  $f" >"$T/sums.d/.$k" && mv "$T/sums.d/.$k" "$T/sums.d/$f" || return 1
		echo "$f" >>"$T/acked"
		if [ $n -ge $KEEP ]; then
			old=$PART$k.$((n - KEEP))
			rm -f "$T/sums.d/$old"	# no longer to be checked, then gone
			rm "$MNT/$old" 2>>"$T/writer$k.err" ||
				{ echo "writer $k: rm $old failed" >>"$T/writer$k.err"; return 1; }
		fi
		n=$((n + 1))
		# a paced writer: unpaced, two of them took all of a 10 MB/s export
		# on a loaded machine and starved the rebuild onto it (90-220 s)
		sleep 0.3
	done
}
WRITERS=""
writers_start() { # writers_start PART: the files' names begin with PART (a letter)
	PART=$1
	rm -f "$T/stop"
	writer 1 &
	WRITERS="$!"
	writer 2 &
	WRITERS="$WRITERS $!"
	IT_PIDS="$IT_PIDS $WRITERS"
}
# A writer that stopped before being told to: its error fails the test.
check_writers() {
	local p
	for p in $WRITERS; do
		kill -0 "$p" 2>/dev/null && continue
		[ -e "$T/stop" ] && continue
		cat "$T"/writer*.err 2>/dev/null
		it_fail "a writer stopped while the volume should take its writes"
	done
}
writers_stop() {
	local p
	touch "$T/stop"
	for p in $WRITERS; do
		wait "$p" || { cat "$T"/writer*.err; it_fail "a writer failed: $1"; }
	done
	WRITERS=""
}
secs() { # secs T0 T1: T1 - T0, one decimal
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'
}
# prune PART: of the files a part's writers kept, only their last two stay (so
# that the volume never fills), each read back at every later check
prune() {
	local k f
	for k in 1 2; do
		for f in $(cd "$T/sums.d" && ls "$1$k".* | sort -t. -k2 -n | head -n -2); do
			rm "$T/sums.d/$f" && rm "$MNT/$f" || it_fail "prune $f"
		done
	done
}
acked() {
	wc -l <"$T/acked"
}
# acked_since N0 K: at least K files acknowledged since there were N0
acked_since() {
	[ $(($(acked) - $1)) -ge "$2" ]
}
# Every acknowledged file still kept reads back right, past the page cache. A
# file the writers removed meanwhile (its sum first) is not one of them.
check_files() {
	local n f bad=0
	cat "$T"/sums.d/* >"$T/sums" 2>/dev/null
	n=$(wc -l <"$T/sums")
	[ "$n" -gt 0 ] || it_fail "no acknowledged file to check: $1"
	echo 3 >/proc/sys/vm/drop_caches
	(cd "$MNT" && sha256sum --quiet -c "$T/sums") >"$T/check.log" 2>&1
	for f in $(sed -n 's/^\([A-Z][0-9]*\.[0-9]*\): FAILED.*/\1/p' "$T/check.log"); do
		[ -e "$T/sums.d/$f" ] || { n=$((n - 1)); continue; }
		echo "$f: read back wrong or unreadable"
		bad=$((bad + 1))
	done
	[ $bad = 0 ] || { cat "$T/check.log"; it_fail "$bad acknowledged files read back wrong: $1"; }
	it_log "  $n acknowledged files read back right ($1)"
}
# The offline checks of the unmounted members: fsck -n, scrub (count only).
check_offline() {
	it_fsck_clean
	# shellcheck disable=SC2086
	"$JGRFS" scrub $DEVS >"$T/scrub.log" 2>&1 ||
		{ cat "$T/scrub.log"; it_fail "offline scrub found mismatches or failed: $1"; }
	it_log "  fsck -n clean, offline scrub: $(grep -i -m1 "mismatch" "$T/scrub.log")"
}
# online_scrub WHAT: a scrub of the mounted volume to its end (the writers
# run): it must find nothing
online_scrub() {
	local t0 rc
	t0=$(date +%s.%N)
	"$JGRFS" scrub --max-rate 256 "$MNT" >"$T/oscrub.log" 2>&1
	rc=$?
	[ $rc = 0 ] || { cat "$T/oscrub.log"; it_fail "online scrub $1: exit $rc"; }
	status_json
	[ "$(jfield mismatches)" = 0 ] && [ "$(jfield unresolved)" = 0 ] && [ "$(jfield unreadable)" = 0 ] ||
		{ cat "$T/oscrub.log" "$T/status.json"; it_fail "online scrub $1 found something"; }
	it_log "  online scrub $1: $(jfield rows_done) rows, no mismatch," \
		"$(secs "$t0" "$(date +%s.%N)") s"
}
# scrub_bg: start an online scrub and return
scrub_bg() {
	"$JGRFS" scrub --background "$MNT" >"$T/oscrub.log" 2>&1 ||
		{ cat "$T/oscrub.log"; it_fail "online scrub --background"; }
}
# scrub_running: an online scrub runs (one started if the last has ended)
scrub_running() {
	status_json
	sed -n 's/.*"scrub":{"state":"\([a-z]*\)".*/\1/p' "$T/status.json" | grep -q running || scrub_bg
}
# The scrub started before a fault: stopped by it (the array degraded) or
# ended; never a mismatch.
check_scrub_stopped() {
	local state
	status_json
	state=$(sed -n 's/.*"scrub":{"state":"\([a-z]*\)".*/\1/p' "$T/status.json")
	[ "$(jfield mismatches)" = 0 ] && [ "$(jfield unresolved)" = 0 ] ||
		{ cat "$T/status.json"; it_fail "the scrub running at the fault found mismatches"; }
	it_log "  the scrub running at the fault: $state at $(jfield rows_done)/$(jfield rows_total) rows, no mismatch"
}
# "initial sync 12.3% (...)", as status says it
sync_state() {
	"$JGRFS" status "$MNT" 2>/dev/null | sed -n 's/^state: .*\(initial sync .*\)/\1/p;s/^state: *[a-zA-Z]*$/initial sync ended/p'
}
healthy() {
	"$JGRFS" status "$MNT" >"$T/status.txt" 2>&1 && ! grep -q "rebuilding\|initial sync" "$T/status.txt"
}
rebuild_over() {
	"$JGRFS" status "$MNT" >"$T/status.txt" 2>&1 && ! grep -q "rebuilding" "$T/status.txt"
}
member_failed() { # member_failed ROLE
	status_json
	[ "$(member_field "$1" state)" = failed ]
}
rebuilding() {
	status_json
	[ "$(jfield rebuild_progress)" != null ] || [ "$(jfield last_rebuild)" != null ]
}
# The last rebuild's rows and seconds
last_rebuild() {
	status_json
	sed -n 's/.*"last_rebuild":{"role":\([0-9]*\),"rows":\([0-9]*\),"readd":\([a-z]*\),"seconds":\([0-9.]*\)}.*/role \1, \2 rows, readd \3, \4 s/p' \
		"$T/status.json"
}

mkdir "$T/sums.d" || it_fail "mkdir"
: >"$T/acked"
for i in 0 1 2 3; do
	head -c "$SIZE" /dev/urandom >"$T/d$i.img" || it_fail "noise"	# parity never matched
done
truncate -s "$SIZE" "$T/d4.img" || it_fail "truncate"
nbd_start 0
nbd_start 1
# shellcheck disable=SC2046
nbd_start 2 $(faulty 2)
nbd_start 3
nbd_start 4 --filter=rate rate=80M	# 10 MB/s: the rebuild onto it takes seconds
DEVS="$(nbd_uri 0) $(nbd_uri 1) $(nbd_uri 2) $(nbd_uri 3)"

it_log "A. member 2 slow, then failing its writes: rebuilt onto a hot spare under writers, scrub, initial sync"
it_mkfs -q -l 5
# the initial sync slow enough to be running at the fault, a timeout that
# the slow member never reaches: it fails by its write errors
export JGRFS_NBD_TIMEOUT=120
tk_mount -o sync_rate=32
unset JGRFS_NBD_TIMEOUT
"$JGRFS" spare add "$MNT" "$(nbd_uri 4)" >"$T/spare.log" 2>&1 || { cat "$T/spare.log"; it_fail "spare add URI"; }
writers_start A
wait_for 60 "a first file acknowledged" test -s "$T/acked"
scrub_bg
status_json
it_log "  writers and scrub running; $(sync_state)"
set_rate 2 8M	# 1 MB/s
n0=$(acked)
wait_for 120 "two files acknowledged with member 2 slow" acked_since "$n0" 2
it_log "  member 2 slow (1 MB/s): $(($(acked) - n0)) files acknowledged"
set_rate 2 100G
scrub_running
touch "$T/wfail2"
wait_for 120 "member 2 failed by its write errors" rebuilding
n0=$(acked)
t0=$(date +%s.%N)
it_log "  member 2 failed; $(sync_state)"
check_scrub_stopped
wait_for 300 "the rebuild onto the spare to end" rebuild_over
t1=$(date +%s.%N)
rm -f "$T/wfail2"
grep -q "member  2  ok .*s4.sock" "$T/status.txt" || { cat "$T/status.txt"; it_fail "the spare is not member 2"; }
grep -q "spare  " "$T/status.txt" && { cat "$T/status.txt"; it_fail "a spare is still listed"; }
it_log "  rebuild onto the spare: $(last_rebuild) (waited $(secs "$t0" "$t1") s)," \
	"$(($(acked) - n0)) files acknowledged during it"
check_files "member 2 on the spare, the writers running"
online_scrub "after the rebuild onto the spare"
n0=$(acked)
wait_for 300 "the initial sync to end" healthy
it_log "  initial sync ended, $(($(acked) - n0)) files acknowledged while it finished"
writers_stop "part A"
check_files "part A"
it_unmount
DEVS="$(nbd_uri 0) $(nbd_uri 1) $(nbd_uri 4) $(nbd_uri 3)"
check_offline "part A"

it_log "B. the server of member 1 stops under writers, comes back, killed, restarted, readd --fenced under writers"
export JGRFS_NBD_TIMEOUT=2	# the daemon's: jgrfs(8) ENVIRONMENT
tk_mount
unset JGRFS_NBD_TIMEOUT
prune A
writers_start B
n0=$(acked)
wait_for 60 "a file acknowledged" acked_since "$n0" 1
scrub_bg
scrub_running
kill -STOP "$NBD_PID1"
wait_for 120 "member 1 failed by its timeout" member_failed 1
it_log "  member 1 failed after the timeout (unfenced: $(member_field 1 unfenced))"
check_scrub_stopped
n0=$(acked)
wait_for 120 "two files acknowledged with member 1 failed" acked_since "$n0" 2
# it comes back: the writes it held run on its export now, after the member
# failed, over rows the array wrote without it; then its process exits (the
# old connection is dead: readd --fenced is true)
before=$(md5sum <"$T/d1.img")
kill -CONT "$NBD_PID1"
sleep 1	# nothing to poll: it says nothing of what it runs for a closed connection
kill -9 "$NBD_PID1"
wait "$NBD_PID1" 2>/dev/null
held=no
[ "$(md5sum <"$T/d1.img")" = "$before" ] || held=yes
it_log "  server 1 came back, then killed: its export changed after the failure: $held"
nbd_start 1
n0=$(acked)
t0=$(date +%s.%N)
"$JGRFS" readd --fenced --wait "$MNT" "$(nbd_uri 1)" >"$T/readd.log" 2>&1 ||
	{ cat "$T/readd.log"; it_fail "readd --fenced of member 1 under writers"; }
t1=$(date +%s.%N)
rebuild_over || { cat "$T/status.txt"; it_fail "not whole after the readd"; }
it_log "  readd: $(last_rebuild) (waited $(secs "$t0" "$t1") s)," \
	"$(($(acked) - n0)) files acknowledged during it"
check_files "member 1 readded, the writers running"
online_scrub "after the readd"
writers_stop "part B"
check_files "part B"
it_unmount
check_offline "part B"

it_log "C. member 3 slow, then failing its reads: failed, replaced onto a new export under writers"
nbd_kill 3
# shellcheck disable=SC2046
nbd_start 3 $(faulty 3)
truncate -s "$SIZE" "$T/d5.img" || it_fail "truncate"
nbd_start 5 --filter=rate rate=80M
tk_mount
prune B
writers_start C
n0=$(acked)
wait_for 60 "a file acknowledged" acked_since "$n0" 1
scrub_bg
set_rate 3 8M
n0=$(acked)
wait_for 120 "two files acknowledged with member 3 slow" acked_since "$n0" 2
it_log "  member 3 slow (1 MB/s): $(($(acked) - n0)) files acknowledged"
set_rate 3 100G
scrub_running
touch "$T/rfail3"
wait_for 120 "member 3 failed by its read errors" member_failed 3
it_log "  member 3 failed (a block read again after its repair failed)"
check_scrub_stopped
n0=$(acked)
t0=$(date +%s.%N)
"$JGRFS" replace --wait "$MNT" "$(nbd_uri 5)" >"$T/replace.log" 2>&1 ||
	{ cat "$T/replace.log"; it_fail "replace of member 3 onto a new export under writers"; }
t1=$(date +%s.%N)
rebuild_over || { cat "$T/status.txt"; it_fail "not whole after the replace"; }
grep -q "member  3  ok .*s5.sock" "$T/status.txt" || { cat "$T/status.txt"; it_fail "the new export is not member 3"; }
it_log "  replace: $(last_rebuild) (waited $(secs "$t0" "$t1") s)," \
	"$(($(acked) - n0)) files acknowledged during it"
rm -f "$T/rfail3"
check_files "member 3 replaced, the writers running"
online_scrub "after the replace"
writers_stop "part C"
check_files "part C"
it_unmount
DEVS="$(nbd_uri 0) $(nbd_uri 1) $(nbd_uri 4) $(nbd_uri 5)"
check_offline "part C"
it_log "  $(acked) files acknowledged in all"
it_finish
