#!/bin/bash
# SPDX-License-Identifier: MIT
# Array events through a real mount (issue 22): `-o notify=PROGRAM` runs
# PROGRAM EVENT MOUNTPOINT DEVICE for each, and `jgrfs status` counts them.
#
# The notify program appends its arguments to a file. A member fails while
# mounted (a loop device whose backing file is truncated, as in
# fuse_degraded.sh): Fail with the loop device's name. `jgrfs replace --wait`
# rebuilds it onto a new file: RebuildStarted, at least one RebuildNN,
# RebuildFinished and SpareActive with the new file's name, in that order
# after the Fail. status --json counts each kind as the program saw it, and
# the notifier's runs; no zombie is left under the daemon. A mount with a
# member left out runs DegradedArray at assembly; the daemon stops cleanly
# (its notifier thread with it) at unmount.
#
#   fuse_events.sh PATH/TO/jgrfs
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
command -v losetup >/dev/null || it_skip "no losetup"

EV=$T/events.txt
cat >"$T/notify.sh" <<EOF
#!/bin/sh
printf '%s|%s|%s|%s\n' "\$#" "\$1" "\$2" "\$3" >>"$EV"
EOF
chmod 755 "$T/notify.sh"

# wait_event LINE: the notify program wrote LINE (it runs after the event, in
# the daemon's notifier thread), within 30 s
wait_event() {
	local i=0
	until grep -qxF "$1" "$EV" 2>/dev/null; do
		[ $i -lt 300 ] || { cat "$EV" 2>/dev/null; it_fail "notify never wrote: $1"; }
		sleep 0.1
		i=$((i + 1))
	done
}

# line_of LINE: its first line number in the events file
line_of() {
	grep -nxF "$1" "$EV" | head -n 1 | cut -d: -f1
}

# 256 MiB members of 64 KiB chunks: some 4000 stripe rows, rebuilt in batches
# of 256, so the rebuild crosses several 5% steps
it_make_members 4 256M
loop=$(losetup -f --show "$T/disk3.img" 2>/dev/null) || it_skip "no free loop device"
IT_LOOPS=$loop
DEVS="$T/disk0.img $T/disk1.img $T/disk2.img $loop"
it_mkfs -l 5
it_mount -o notify="$T/notify.sh"
"$JGRFS" status --json "$MNT" >"$T/status.json"
grep -q '"event_counts":{"Fail":0,' "$T/status.json" || { cat "$T/status.json"; it_fail "status --json: no event counters"; }
grep -q '"notify":{"runs":0,"failed":0,"dropped":0}' "$T/status.json" ||
	{ cat "$T/status.json"; it_fail "status --json: notify counters"; }
"$JGRFS" status "$MNT" | grep -q "^events: *none since mount" || it_fail "status: events line"
[ ! -e "$EV" ] || { cat "$EV"; it_fail "events from a healthy mount"; }

it_log "member $loop fails"
head -c 4M /dev/urandom >"$T/data"
cp "$T/data" "$MNT/before" && sync || it_fail "write before the failure"
truncate -s 0 "$T/disk3.img"
losetup -c "$loop" || it_fail "losetup -c"
dd if="$T/data" of="$MNT/after" bs=1M conv=fsync status=none || it_fail "write with a member failing"
wait_event "3|Fail|$MNT|$loop"
"$JGRFS" status --json "$MNT" | grep -q '"event_counts":{"Fail":1,' || it_fail "status --json: Fail not counted"

it_log "replace it online"
"$JGRFS" replace --size 256M --wait "$MNT" "$T/new3.img" >"$T/replace.log" 2>&1 ||
	{ cat "$T/replace.log"; it_fail "replace"; }
wait_event "3|SpareActive|$MNT|$T/new3.img"
cat "$EV"
fail=$(line_of "3|Fail|$MNT|$loop")
started=$(line_of "3|RebuildStarted|$MNT|$T/new3.img")
finished=$(line_of "3|RebuildFinished|$MNT|$T/new3.img")
active=$(line_of "3|SpareActive|$MNT|$T/new3.img")
[ -n "$started" ] && [ -n "$finished" ] || it_fail "no RebuildStarted / RebuildFinished for $T/new3.img"
[ "$fail" -lt "$started" ] && [ "$started" -lt "$finished" ] && [ "$finished" -lt "$active" ] ||
	it_fail "events out of order"
steps=$(sed -n "$((started + 1)),$((finished - 1))p" "$EV" |
	grep -cE "^3\|Rebuild(0[5-9]|[1-9][05])\|$MNT\|$T/new3.img\$")
[ "$steps" -ge 1 ] && [ "$steps" = $((finished - started - 1)) ] ||
	it_fail "between RebuildStarted and RebuildFinished: $steps progress lines, expected only those, at least one"
grep -v '^3|' "$EV" && it_fail "a run without exactly three arguments"

it_log "status counts what the program saw"
"$JGRFS" status --json "$MNT" >"$T/status.json"
cat "$T/status.json"
grep -q "\"event_counts\":{\"Fail\":1,\"ReadErrorCorrected\":[0-9]*,\"ReadErrorUncorrectable\":[0-9]*,\"RebuildStarted\":1,\"RebuildProgress\":$steps,\"RebuildFinished\":1,\"RebuildFailed\":0,\"SpareActive\":1,\"DegradedArray\":0}" "$T/status.json" ||
	it_fail "status --json: event counts differ from the notify program's lines"
runs=$(wc -l <"$EV")
grep -q "\"notify\":{\"runs\":$runs,\"failed\":0,\"dropped\":0}" "$T/status.json" ||
	it_fail "status --json: notify runs, expected $runs"
"$JGRFS" status "$MNT" | grep -E "^events: .*Fail 1, .*RebuildStarted 1, RebuildProgress $steps, RebuildFinished 1, SpareActive 1" ||
	it_fail "status: events line"
pid=$(it_daemon_pid)
zombies=$(ps --ppid "$pid" -o stat= | grep -c '^Z')
[ "$zombies" = 0 ] || it_fail "$zombies zombie children under the daemon"
cmp "$T/data" "$MNT/before" && cmp "$T/data" "$MNT/after" || it_fail "data after the rebuild"
it_unmount

it_log "a mount without member 1: DegradedArray at assembly"
: >"$EV"
DEVS="$T/disk0.img $T/disk2.img $T/new3.img"
it_mount -o notify="$T/notify.sh",degraded
wait_event "3|DegradedArray|$MNT|(missing)"
"$JGRFS" status --json "$MNT" | grep -q '"DegradedArray":1}' || it_fail "status --json: DegradedArray not counted"
it_unmount
it_finish
