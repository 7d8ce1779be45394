#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/fuse_cscrub.sh JGRFS - a scrub with --repair rebuilds the
# member block that fails its checksum instead of rewriting the parity over it
# (issue 27; src/raid/scrub.c (K1)-(K4), src/fs/verify.c).
#
# A RAID5 volume gets a directory of 60 files (five inode table blocks of group
# 1); then, unmounted, an inode table block that a mount does not read is
# damaged in its member file with dd, past its header (only the crc tells).
# Offline: `jgrfs scrub` counts one mismatch and writes nothing; `scrub
# --repair` rebuilds that block (its member holds its original bytes again),
# leaves the row's parity as it was, exits 0; fsck is clean and a scrub finds
# nothing. Online: the same damage again, `jgrfs scrub --repair MOUNTPOINT`
# rebuilds the block through the daemon, counts it (rebuilt, and a corrected
# read error on that member only); after the unmount fsck and scrub are clean.
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
FIND="$(cd "$(dirname "$0")" && pwd)/owners_find.py"

it_make_members 4 64M
it_mkfs --level 5 --chunk 16K
it_mount

it_log "write a directory of files"
mkdir -p "$MNT/dir/sub" || it_fail "mkdir"
for i in $(seq 1 60); do echo "content of file $i" >"$MNT/dir/sub/f$i" || it_fail "write f$i"; done
it_unmount

# shellcheck disable=SC2086
"$JGRFS" owners --json --max 100000 --block 0-49139 $DEVS >"$T/own.json" 2>"$T/own.err" ||
	{ cat "$T/own.err"; it_fail "owners"; }
ITB=$(python3 - "$T/own.json" <<'EOF'
import json, sys
reps = json.load(open(sys.argv[1]))["reports"]
# the third block of group 1's inode table (/dir and its files live in group 1):
# inodes 8101-8115, in use (f30-f44), not read by a mount
t = [r for r in reps if r["kind"] == "inode-table" and r.get("group") == 1]
b = min(r["block"] for r in t)
assert any(r["block"] <= b + 2 < r["block"] + r.get("count", 1) for r in t), t
print(b + 2)
EOF
)
[ -n "$ITB" ] || it_fail "no inode table block found"
# shellcheck disable=SC2086
read -r IF IB < <(python3 "$FIND" --where "$ITB" $DEVS)
[ -n "$IF" ] || it_fail "owners_find.py --where $ITB"
RB=12 # 3 data members of 4 blocks
ROW=$((ITB / RB))
# the parity member of that row: RAID5 left-symmetric (docs/FORMAT.md 2.1), same member block
# shellcheck disable=SC2086
PF=$(python3 - "$ROW" $DEVS <<'EOF'
import struct, sys
row, paths = int(sys.argv[1]), sys.argv[2:]
for p in paths:
    role, n = struct.unpack_from("<II", open(p, "rb").read(4096), 0x40)
    if role == n - 1 - row % n:
        print(p)
EOF
)
[ -n "$PF" ] && [ "$PF" != "$IF" ] || it_fail "parity member of row $ROW: '$PF'"
dd if="$IF" of="$T/it.orig" bs=4096 skip="$IB" count=1 status=none || it_fail "dd save"
dd if="$PF" of="$T/par.orig" bs=4096 skip="$IB" count=1 status=none || it_fail "dd save parity"

damage() {
	printf 'YYYY' | dd of="$IF" bs=1 seek=$((IB * 4096 + 300)) conv=notrunc status=none
	dd if="$IF" bs=4096 skip="$IB" count=1 status=none | cmp -s - "$T/it.orig" &&
		it_fail "the inode table block was not damaged"
}
# member block $2 of file $1 equals file $3
same() { dd if="$1" iflag=direct bs=4096 skip="$2" count=1 status=none | cmp -s - "$3"; }

it_log "damage: inode table block $ITB (row $ROW; $IF block $IB), parity on $PF"
damage
dd if="$IF" of="$T/it.bad" bs=4096 skip="$IB" count=1 status=none

it_log "offline scrub: one mismatch, nothing written"
# shellcheck disable=SC2086
"$JGRFS" scrub --json $DEVS >"$T/o1.json" 2>"$T/o1.err"
rc=$?

[ $rc = 1 ] || { cat "$T/o1.json" "$T/o1.err"; it_fail "scrub exit $rc, expected 1"; }
python3 - "$T/o1.json" <<'EOF' || { cat "$T/o1.json"; it_fail "scrub --json"; }
import json, sys
o = json.load(open(sys.argv[1]))
assert o["mismatches"] == 1 and o["repaired"] == 0 and o["rebuilt"] == 0, o
assert o["unresolved"] == 0 and o["checksums"] is True, o
EOF
same "$IF" "$IB" "$T/it.bad" || it_fail "a scrub without --repair wrote the damaged block"

it_log "offline scrub --repair: the block is rebuilt, the parity stays"
# shellcheck disable=SC2086
"$JGRFS" scrub --repair --json $DEVS >"$T/o2.json" 2>"$T/o2.err" ||
	{ cat "$T/o2.json" "$T/o2.err"; it_fail "scrub --repair exit $?"; }
python3 - "$T/o2.json" <<'EOF' || { cat "$T/o2.json"; it_fail "scrub --repair --json"; }
import json, sys
o = json.load(open(sys.argv[1]))
assert o["mismatches"] == 1 and o["repaired"] == 1 and o["rebuilt"] == 1, o
assert o["unresolved"] == 0, o
EOF
same "$IF" "$IB" "$T/it.orig" || it_fail "$IF block $IB: not rebuilt with its original bytes"
same "$PF" "$IB" "$T/par.orig" || it_fail "$PF block $IB: the parity was rewritten"
grep -q "dev=$IF block=$IB (data) is wrong: its reconstruction from the row verifies: rewritten" \
	"$T/o2.err" || { cat "$T/o2.err"; it_fail "no word of the rebuilt block"; }
it_fsck_clean
# shellcheck disable=SC2086
"$JGRFS" scrub --json $DEVS >"$T/o3.json" 2>&1 || { cat "$T/o3.json"; it_fail "scrub after repair"; }
grep -q '"mismatches":0' "$T/o3.json" || { cat "$T/o3.json"; it_fail "mismatches after repair"; }

it_log "online: the same damage, scrub --repair MOUNTPOINT rebuilds it through the daemon"
damage
it_mount
"$JGRFS" scrub --repair --json "$MNT" >"$T/n1.json" 2>"$T/n1.err" ||
	{ cat "$T/n1.json" "$T/n1.err"; it_fail "online scrub --repair exit $?"; }
python3 - "$T/n1.json" <<'EOF' || { cat "$T/n1.json"; it_fail "online scrub --json"; }
import json, sys
o = json.load(open(sys.argv[1]))
assert o["state"] == "done" and o["mismatches"] == 1, o
assert o["repaired"] == 1 and o["rebuilt"] == 1 and o["unresolved"] == 0, o
EOF
same "$IF" "$IB" "$T/it.orig" || it_fail "online: $IF block $IB not rebuilt"
same "$PF" "$IB" "$T/par.orig" || it_fail "online: the parity was rewritten"
"$JGRFS" status --json "$MNT" >"$T/status.json" || it_fail "status --json"
python3 - "$T/status.json" "$IF" <<'EOF' || { cat "$T/status.json"; it_fail "status counts"; }
import json, os, sys
st = json.load(open(sys.argv[1]))
assert st["scrub"]["rebuilt"] == 1 and st["scrub"]["unresolved"] == 0, st["scrub"]
for m in st["array"]["member_list"]:
    exp = 1 if os.path.realpath(m["name"]) == os.path.realpath(sys.argv[2]) else 0
    assert m["read_errors_corrected"] == exp, (m, exp)
EOF
n=$(ls "$MNT/dir/sub" | wc -l)
[ "$n" = 60 ] || it_fail "ls /dir/sub: $n names"
for i in 30 40 44; do
	[ "$(cat "$MNT/dir/sub/f$i")" = "content of file $i" ] || it_fail "f$i reads wrong"
done
it_unmount
it_fsck_clean
# shellcheck disable=SC2086
"$JGRFS" scrub --json $DEVS >"$T/n2.json" 2>&1 || { cat "$T/n2.json"; it_fail "scrub after online"; }
grep -q '"mismatches":0' "$T/n2.json" || { cat "$T/n2.json"; it_fail "mismatches after online"; }
it_finish
