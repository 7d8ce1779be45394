#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/fuse_scrub.sh JGRFS - the online scrub (issue 23): `jgrfs
# scrub MOUNTPOINT` through the daemon of a mounted RAID5 volume.
#
# Files and a directory are written through the mount, each data block tagged
# "OWNERS:<path>:<logical block>:" (owners_find.py finds them on the members
# without our code), the volume unmounted, and chosen blocks damaged in the
# member files: a data block of /a.bin (a mismatch in its row, which must name
# /a.bin), the parity of the row of a block of directory /dir/sub (must name
# the directory) and the parity of the row of the first inode table block
# (must name "inode-table group 0"). Then, mounted: scrub --json names them,
# the daemon's log too, --repair leaves a second scrub clean and the files
# read right; a slow scrub is cancelled (status says cancelled), so is one
# interrupted by Ctrl-C; another is cut by an unmount and the next mount
# resumes it from its mark and finishes it.
#
# Last, a block no member can give back: the daemon is started with
# jgrfs-crash --badblocks (reads of chosen member blocks fail) on the data block of a
# file and the parity block of its row; the scrub must name the file's block as
# unreadable and finish. --repair judges each mismatched line by the checksums
# (issue 27): the damaged file data has none, so its row is left unresolved and
# nothing is written there; --repair --trust-data then rewrites parity from data.
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
FIND="$(cd "$(dirname "$0")" && pwd)/owners_find.py"

# Mount in the foreground with the daemon's log in $T/$1.log.
mount_fg() {
	local log=$1 i=0
	shift
	# shellcheck disable=SC2086
	it_jg mount -f -v "$@" $DEVS "$MNT" >"$T/$log.log" 2>&1 &
	while ! grep -q " $MNT fuse" /proc/mounts; do
		[ $i -lt 300 ] || { cat "$T/$log.log"; it_fail "mount ($log) did not come up"; }
		sleep 0.1
		i=$((i + 1))
	done
}

# The scrub's field $1 from status --json.
scrub_field() {
	"$JGRFS" status --json "$MNT" |
		python3 -c "import json,sys; print(json.load(sys.stdin)['scrub']['$1'])"
}

it_make_members 4 64M
# without data checksums: the damaged file data must have none (fuse_dcsum.sh
# scrubs a volume with them, mkfs's default)
it_mkfs --level 5 --chunk 16K --no-data-checksums
it_mount

it_log "write tagged files and a directory of many names"
mkdir -p "$MNT/dir/sub"
python3 - "$MNT" <<'EOF' || it_fail "writing the files"
import sys
mnt = sys.argv[1]
for path, nblocks in (("/a.bin", 3), ("/dir/b.bin", 20)):
    with open(mnt + path, "wb") as f:
        for i in range(nblocks):
            tag = f"OWNERS:{path}:{i}:".encode()
            f.write(tag + b"x" * (4096 - len(tag)))
for i in range(300):
    open(f"{mnt}/dir/sub/name-with-some-length-{i:04d}", "w").close()
EOF
md5sum "$MNT/dir/b.bin" >"$T/b.md5"
it_unmount

# shellcheck disable=SC2086
python3 "$FIND" $DEVS >"$T/tags" || it_fail "owners_find.py"
RB=$(awk -F'\t' '$1 == "row_blocks" { print $2 }' "$T/tags")
[ "$RB" = 12 ] || it_fail "row_blocks $RB, expected 12"
A1=$(awk -F'\t' '$3 == "/a.bin" && $2 == 1 { print $1 }' "$T/tags")
# the directory's and the inode table's first blocks, as the offline tool names them
# shellcheck disable=SC2086
"$JGRFS" owners --json --max 100000 --block 0-49139 $DEVS >"$T/own.json" 2>"$T/own.err" ||
	{ cat "$T/own.err"; it_fail "owners"; }
read -r DIRB ITB < <(python3 - "$T/own.json" <<'EOF'
import json, sys
reps = json.load(open(sys.argv[1]))["reports"]
d = [r["block"] for r in reps if r["kind"] == "directory" and r.get("paths") == ["/dir/sub"]]
i = [r["block"] for r in reps if r["kind"] == "inode-table"]
print(d[0], i[0])
EOF
)
[ -n "$DIRB" ] && [ -n "$ITB" ] || it_fail "no directory or inode table block found"
RA=$((A1 / RB)) RD=$((DIRB / RB)) RI=$((ITB / RB))
it_log "damage: data of /a.bin (row $RA), parity of /dir/sub's row $RD, of the inode table's row $RI"
[ $RA != $RD ] && [ $RA != $RI ] && [ $RD != $RI ] || it_fail "rows not distinct: $RA $RD $RI"
# shellcheck disable=SC2086
read -r MF MB < <(python3 "$FIND" --where "$A1" $DEVS)
printf 'XXXX' | dd of="$MF" bs=1 seek=$((MB * 4096 + 100)) conv=notrunc status=none
for R in $RD $RI; do
	# the parity chunk of row R: RAID5 left-symmetric (docs/FORMAT.md 2.1)
	# shellcheck disable=SC2086
	read -r PF PB < <(python3 - "$R" $DEVS <<'EOF'
import struct, sys
row, paths = int(sys.argv[1]), sys.argv[2:]
for p in paths:
    sb = open(p, "rb").read(4096)
    role, n, _lvl, _lay, chunk = struct.unpack_from("<IIIII", sb, 0x40)
    off = struct.unpack_from("<Q", sb, 0x60)[0]
    if role == n - 1 - row % n:
        print(p, off + row * chunk)
EOF
	)
	printf 'PPPP' | dd of="$PF" bs=1 seek=$((PB * 4096 + 8)) conv=notrunc status=none
done

mount_fg scrub1
it_log "scrub --json names the file, the directory and the inode table"
"$JGRFS" scrub --json "$MNT" >"$T/s1.json" 2>"$T/s1.err"
rc=$?
[ $rc = 1 ] || { cat "$T/s1.json" "$T/s1.err"; it_fail "scrub exit $rc, expected 1 (mismatches)"; }
python3 - "$T/s1.json" "$RA" "$RD" "$RI" <<'EOF' || { cat "$T/s1.json"; it_fail "scrub --json names"; }
import json, sys
out = json.load(open(sys.argv[1]))
ra, rd, ri = (int(x) for x in sys.argv[2:])
assert out["state"] == "done" and out["mismatches"] == 3, out
assert out["rows_checked"] == out["rows_total"], out
res = {r["row"]: r for r in out["results"]}
assert set(res) == {ra, rd, ri}, res.keys()
assert all(r["kind"] == "mismatch" for r in res.values())
assert any(o["path"] == "/a.bin" and o["kind"] == "data" for o in res[ra]["owners"]), res[ra]
assert any(o["path"] == "/dir/sub" and o["kind"] == "directory" for o in res[rd]["owners"]), res[rd]
assert any(o["kind"] == "inode-table" and o["group"] == 0 for o in res[ri]["owners"]), res[ri]
print("named:", {r: [(o["path"], o["kind"]) for o in res[r]["owners"]] for r in res})
EOF
grep -q "scrub: mismatch row=$RA: .*/a.bin (inode=[0-9]*)" "$T/scrub1.log" ||
	{ grep scrub "$T/scrub1.log"; it_fail "daemon log does not name /a.bin"; }
grep -q "scrub: mismatch row=$RD: .*/dir/sub (inode=[0-9]*, directory)" "$T/scrub1.log" ||
	{ grep scrub "$T/scrub1.log"; it_fail "daemon log does not name /dir/sub"; }
grep -q "scrub: mismatch row=$RI: .*metadata: inode-table group 0 (inodes 1-" "$T/scrub1.log" ||
	{ grep scrub "$T/scrub1.log"; it_fail "daemon log does not name the inode table"; }
"$JGRFS" scrub "$MNT" >"$T/s1.txt" 2>&1
grep -q "mismatch row $RA: /a.bin (inode [0-9]*, data)" "$T/s1.txt" ||
	{ cat "$T/s1.txt"; it_fail "text output does not name /a.bin"; }
"$JGRFS" status "$MNT" | grep -q "^scrub: *done at [0-9]*/[0-9]* rows, 3 mismatches" ||
	{ "$JGRFS" status "$MNT"; it_fail "status scrub line"; }

it_log "--repair judges by the checksums: /a.bin's row (data without one) is left unresolved"
"$JGRFS" scrub --repair --json "$MNT" >"$T/s2.json" 2>&1
rc=$?
[ $rc = 1 ] || { cat "$T/s2.json"; it_fail "scrub --repair exit $rc, expected 1 (unresolved)"; }
python3 - "$T/s2.json" <<'EOF2' || { cat "$T/s2.json"; it_fail "scrub --repair counts"; }
import json, sys
out = json.load(open(sys.argv[1]))
assert out["mismatches"] == 3 and out["rebuilt"] == 0, out  # no block failed a checksum
assert out["unresolved"] >= 1 and out["repaired"] + out["unresolved"] == 3, out
EOF2
grep -q "row=$RA line=[0-9]*: cannot tell which member is wrong" "$T/scrub1.log" ||
	{ grep scrub "$T/scrub1.log"; it_fail "no unresolved line for /a.bin's row $RA"; }
dd if="$MF" iflag=direct bs=4096 skip="$MB" count=1 status=none | tail -c +101 | head -c 4 |
	grep -q XXXX ||
	it_fail "/a.bin's damaged block was written"
"$JGRFS" scrub --json "$MNT" >"$T/s2b.json" 2>&1
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); r={x["row"] for x in o["results"]}; assert int(sys.argv[2]) in r, o' \
	"$T/s2b.json" "$RA" || { cat "$T/s2b.json"; it_fail "/a.bin's row no longer mismatched"; }
it_log "--repair --trust-data: all repaired, a second scrub clean, the files read right"
"$JGRFS" scrub --repair --trust-data "$MNT" >"$T/s2.txt" 2>&1 ||
	{ cat "$T/s2.txt"; it_fail "scrub --repair --trust-data exit $?"; }
"$JGRFS" scrub --json "$MNT" >"$T/s3.json" 2>&1 || { cat "$T/s3.json"; it_fail "second scrub not clean"; }
grep -q '"mismatches":0' "$T/s3.json" || it_fail "second scrub: $(cat "$T/s3.json")"
echo 3 >/proc/sys/vm/drop_caches
md5sum -c --quiet "$T/b.md5" || it_fail "/dir/b.bin reads wrong"
[ "$(ls "$MNT/dir/sub" | wc -l)" = 300 ] || it_fail "/dir/sub lists $(ls "$MNT/dir/sub" | wc -l) names"

it_log "a slow scrub is cancelled"
"$JGRFS" scrub --background --max-rate 1 "$MNT" >/dev/null || it_fail "scrub --background"
sleep 1
[ "$(scrub_field state)" = running ] || it_fail "status: $(scrub_field state), expected running"
if "$JGRFS" scrub --background "$MNT" 2>"$T/busy.err"; then it_fail "a second scrub started"; fi
grep -q "already runs" "$T/busy.err" || it_fail "busy message: $(cat "$T/busy.err")"
"$JGRFS" scrub --cancel "$MNT" >"$T/cancel.txt" || it_fail "scrub --cancel"
[ "$(scrub_field state)" = cancelled ] || it_fail "status: $(scrub_field state), expected cancelled"
grep -q "scrub: cancelled at row" "$T/scrub1.log" || it_fail "no cancel line in the log"

it_log "Ctrl-C of a foreground scrub cancels it"
"$JGRFS" scrub --max-rate 1 "$MNT" >"$T/int.out" 2>&1 &
SPID=$!
sleep 1
[ "$(scrub_field state)" = running ] || it_fail "foreground scrub: $(scrub_field state)"
kill -INT $SPID
wait $SPID
rc=$?
[ $rc = 3 ] || { cat "$T/int.out"; it_fail "interrupted scrub exit $rc, expected 3 (cancelled)"; }
[ "$(scrub_field state)" = cancelled ] || it_fail "after Ctrl-C: $(scrub_field state)"
grep -q "cancelling the scrub" "$T/int.out" || { cat "$T/int.out"; it_fail "no word of the cancel"; }

it_log "an unmount pauses a scrub; the next mount resumes it from its mark and finishes"
"$JGRFS" scrub --background --max-rate 2 "$MNT" >/dev/null || it_fail "scrub --background"
sleep 3
DONE=$(scrub_field rows_done)
TOTAL=$(scrub_field rows_total)
[ "$DONE" -gt 0 ] && [ "$DONE" -lt "$TOTAL" ] || it_fail "rows_done $DONE of $TOTAL"
it_unmount
grep -q "scrub: paused at row [1-9][0-9]* of $TOTAL by the unmount" "$T/scrub1.log" ||
	{ grep scrub "$T/scrub1.log"; it_fail "no pause line"; }
# shellcheck disable=SC2086
"$JGRFS" examine $DEVS >"$T/examine.txt" 2>&1
grep -q "scrub  *interrupted at row [1-9][0-9]* of $TOTAL" "$T/examine.txt" ||
	{ cat "$T/examine.txt"; it_fail "examine does not show the scrub mark"; }
mount_fg scrub2
i=0
while ! grep -q "scrub: resuming at row" "$T/scrub2.log"; do
	[ $i -lt 100 ] || { cat "$T/scrub2.log"; it_fail "no resume line"; }
	sleep 0.1
	i=$((i + 1))
done
AT=$(sed -n 's/.*scrub: resuming at row \([0-9]*\) of.*/\1/p' "$T/scrub2.log")
[ "$AT" -gt 0 ] && [ "$AT" -le "$TOTAL" ] || it_fail "resumed at row $AT"
i=0
while [ "$(scrub_field state)" = running ]; do
	[ $i -lt 600 ] || it_fail "the resumed scrub did not finish in 60 s"
	sleep 0.1
	i=$((i + 1))
done
[ "$(scrub_field state)" = done ] || it_fail "resumed scrub: $(scrub_field state)"
[ "$(scrub_field rows_done)" = "$TOTAL" ] || it_fail "resumed scrub: $(scrub_field rows_done) rows"
grep -q "scrub: done rows=$TOTAL mismatches=0" "$T/scrub2.log" ||
	{ grep scrub "$T/scrub2.log"; it_fail "no done line"; }
it_unmount
# a finished scrub leaves no mark: the next mount does not resume
mount_fg scrub3
sleep 1
grep -q "scrub: resuming" "$T/scrub3.log" && it_fail "a finished scrub resumed"
[ "$(scrub_field state)" = idle ] || it_fail "state $(scrub_field state) after a finished scrub"

it_log "a crash (kill -9) mid-scrub: the next mount resumes from the last mark (every 5 s)"
"$JGRFS" scrub --background --max-rate 2 "$MNT" >/dev/null || it_fail "scrub --background"
sleep 7
it_crash
mount_fg scrub5
i=0
while ! grep -q "scrub: resuming at row" "$T/scrub5.log"; do
	[ $i -lt 100 ] || { cat "$T/scrub5.log"; it_fail "no resume line after the crash"; }
	sleep 0.1
	i=$((i + 1))
done
AT=$(sed -n 's/.*scrub: resuming at row \([0-9]*\) of.*/\1/p' "$T/scrub5.log")
[ "$AT" -gt 0 ] || it_fail "after the crash resumed at row $AT: no mark recorded while running"
"$JGRFS" scrub --cancel "$MNT" >/dev/null || it_fail "cancel the resumed scrub"
it_unmount

it_log "an unreadable block (jgrfs-crash --badblocks: data and parity of one row) is named, the scrub goes on"
B5=$(awk -F'\t' '$3 == "/dir/b.bin" && $2 == 5 { print $1 }' "$T/tags")
# shellcheck disable=SC2086
read -r DF DB < <(python3 "$FIND" --where "$B5" $DEVS)
# the parity of that row is at the same member block, on the row's parity member
# shellcheck disable=SC2086
PF=$(python3 - "$((B5 / RB))" $DEVS <<'EOF2'
import struct, sys
row, paths = int(sys.argv[1]), sys.argv[2:]
for p in paths:
    sb = open(p, "rb").read(4096)
    role, n = struct.unpack_from("<II", sb, 0x40)
    if role == n - 1 - row % n:
        print(p)
EOF2
)
DI=$(basename "$DF" .img | tr -dc 0-9) PI=$(basename "$PF" .img | tr -dc 0-9)
[ "$DI" != "$PI" ] || it_fail "data and parity on one member"
IT_FAULTS="--badblocks $DI:$DB,$PI:$DB" mount_fg scrub4
"$JGRFS" scrub --json "$MNT" >"$T/s4.json" 2>"$T/s4.err"
rc=$?
[ $rc = 1 ] || { cat "$T/s4.json" "$T/s4.err"; it_fail "scrub with an unreadable block: exit $rc, expected 1"; }
python3 - "$T/s4.json" "$B5" <<'EOF2' || { cat "$T/s4.json"; it_fail "unreadable block not named"; }
import json, sys
out, b5 = json.load(open(sys.argv[1])), int(sys.argv[2])
assert out["state"] == "done" and out["unreadable"] == 1 and out["mismatches"] == 0, out
assert out["rows_checked"] == out["rows_total"], out
r = [r for r in out["results"] if r["kind"] == "unreadable"]
assert len(r) == 1 and r[0]["block"] == b5, r
assert [(o["path"], o["kind"]) for o in r[0]["owners"]] == [("/dir/b.bin", "data")], r
EOF2
grep -q "scrub: unreadable block $B5: /dir/b.bin (inode=[0-9]*)" "$T/scrub4.log" ||
	{ grep scrub "$T/scrub4.log"; it_fail "daemon log does not name the unreadable block"; }
it_unmount

it_log "offline scrub of the unmounted array still works (DEV...)"
# shellcheck disable=SC2086
"$JGRFS" scrub --json $DEVS >"$T/off.json" 2>&1 || { cat "$T/off.json"; it_fail "offline scrub"; }
grep -q '"mismatches":0' "$T/off.json" || it_fail "offline: $(cat "$T/off.json")"
it_finish
