#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/owners.sh JGRFS - `jgrfs owners` names the files behind array
# blocks and rows (issues 22, 23).
#
# Files are written through a FUSE mount with every data block tagged
# "OWNERS:<path>:<logical block>:"; after the unmount owners_find.py finds the
# tagged blocks on the member files without our code (docs/FORMAT.md 2.1). Then
# owners must name each of those array blocks with its file, logical block and
# every hard-linked name, in --json and in text; a row with the files in it; the
# fixed places; the report cap; a degraded set (a member left out); a row whose
# parity a scrub finds wrong. Nothing may be written: the members are compared
# before and after.
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
FIND="$(cd "$(dirname "$0")" && pwd)/owners_find.py"

it_make_members 4 64M
it_mkfs --level 5 --chunk 16K
it_mount

it_log "write tagged files: direct and indirect blocks, a hard link, a name with a space"
mkdir -p "$MNT/dir/sub"
python3 - "$MNT" <<'EOF' || it_fail "writing the files"
import sys
mnt = sys.argv[1]
for path, nblocks in (("/a.bin", 3), ("/dir/sub/b.bin", 20), ("/dir/with space.txt", 1)):
    with open(mnt + path, "wb") as f:
        for i in range(nblocks):
            tag = f"OWNERS:{path}:{i}:".encode()
            f.write(tag + b"x" * (4096 - len(tag)))
EOF
ln "$MNT/dir/sub/b.bin" "$MNT/dir/b-link" || it_fail "ln"
for i in $(seq 1 150); do : >"$MNT/dir/f$i"; done
it_unmount

# shellcheck disable=SC2086
python3 "$FIND" $DEVS >"$T/tags" || it_fail "owners_find.py"
RB=$(awk -F'\t' '$1 == "row_blocks" { print $2 }' "$T/tags")
[ "$RB" = 12 ] || it_fail "row of 3 data chunks of 4 blocks: row_blocks $RB, expected 12"
[ "$(($(wc -l <"$T/tags") - 1))" = 24 ] || it_fail "expected 24 tagged blocks: $(cat "$T/tags")"
BLOCKS=$(awk -F'\t' 'NR > 1 { printf "%s%s", sep, $1; sep = "," }' "$T/tags")
# shellcheck disable=SC2086
md5sum $DEVS >"$T/md5.before"

it_log "--json: every tagged block named with its file, logical block and names"
# shellcheck disable=SC2086
"$JGRFS" owners --json --block "$BLOCKS" $DEVS >"$T/own.json" 2>"$T/own.err" ||
	{ cat "$T/own.err"; it_fail "owners --json exit $?"; }
python3 - "$T/tags" "$T/own.json" <<'EOF' || it_fail "owners --json does not name the tagged blocks"
import json, sys
tags = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
out = json.load(open(sys.argv[2]))
reps = out["reports"]
assert out["row_blocks"] == 12 and out["blocks_asked"] == len(tags), out
assert out["blocks_left_out"] == 0 and out["unreadable"] == 0, out
names = {"/a.bin": ["/a.bin"], "/dir/with space.txt": ["/dir/with space.txt"],
         "/dir/sub/b.bin": ["/dir/b-link", "/dir/sub/b.bin"]}
for b, lblk, path in tags:
    b, lblk = int(b), int(lblk)
    cover = [r for r in reps if r["block"] <= b < r["block"] + r["count"]]
    assert len(cover) == 1, (b, cover)
    r = cover[0]
    assert r["kind"] == "data" and r["type"] == "file", r
    assert r["logical"] + (b - r["block"]) == lblk, (b, lblk, r)
    assert sorted(r["paths"]) == names[path], (b, r)
    assert r["row"] == r["block"] // 12 and r["nlink"] == len(names[path]), r
    print(f"block {b}: {path} logical {lblk}: ok")
EOF

it_log "text: one line per run, the other names below it"
B15=$(awk -F'\t' '$3 == "/dir/sub/b.bin" && $2 == 15 { print $1 }' "$T/tags")
# shellcheck disable=SC2086
"$JGRFS" owners --block "$B15" $DEVS >"$T/own.txt" 2>"$T/own.err" || it_fail "owners text"
cat "$T/own.txt"
grep -Eq "^$((B15 / 12)) +$B15 +data +[0-9]+ +15 +/dir/(sub/b.bin|b-link)\$" "$T/own.txt" ||
	it_fail "text line for block $B15"
grep -Eq "^ +also /dir/(sub/b.bin|b-link)\$" "$T/own.txt" || it_fail "text: the hard link's other name"

it_log "--row: the row of /a.bin's block 1 holds /a.bin, and nothing outside the row"
A1=$(awk -F'\t' '$3 == "/a.bin" && $2 == 1 { print $1 }' "$T/tags")
R=$((A1 / 12))
# shellcheck disable=SC2086
"$JGRFS" owners --json --row "$R" $DEVS >"$T/row.json" 2>"$T/own.err" || it_fail "owners --row"
python3 - "$T/row.json" "$R" "$A1" <<'EOF' || it_fail "owners --row $R"
import json, sys
out, row, a1 = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
reps = out["reports"]
assert out["blocks_asked"] == 12 and sum(r["count"] for r in reps) == 12, out
assert all(row * 12 <= r["block"] and r["block"] + r["count"] <= row * 12 + 12 for r in reps)
assert any(r["kind"] == "data" and r["paths"] == ["/a.bin"] and
           r["block"] <= a1 < r["block"] + r["count"] for r in reps), reps
print("row", row, [(r["kind"], r.get("paths")) for r in reps])
EOF

it_log "fixed places and the cap"
# shellcheck disable=SC2086
"$JGRFS" owners --json --max 2 --block 0-2 $DEVS >"$T/places.json" 2>"$T/own.err" ||
	it_fail "owners --block 0-2"
python3 - "$T/places.json" <<'EOF' || it_fail "superblock, descriptors, journal; --max 2"
import json, sys
out = json.load(open(sys.argv[1]))
kinds = [(r["block"], r["count"], r["kind"]) for r in out["reports"]]
assert kinds == [(0, 1, "superblock"), (1, 1, "group-descriptors")], kinds
assert out["reports_made"] == 2 and out["blocks_left_out"] == 1, out
EOF

it_log "bad questions are refused, naming what is wrong"
# shellcheck disable=SC2086
if "$JGRFS" owners --row 99999999 $DEVS >"$T/bad.out" 2>&1; then it_fail "row past the end accepted"; fi
grep -q "row 99999999 is past the array's end" "$T/bad.out" || it_fail "message: $(cat "$T/bad.out")"
# shellcheck disable=SC2086
if "$JGRFS" owners --block 7-x $DEVS >"$T/bad.out" 2>&1; then it_fail "bad list accepted"; fi
grep -q "bad block '7-x'" "$T/bad.out" || it_fail "message: $(cat "$T/bad.out")"
# shellcheck disable=SC2086
if "$JGRFS" owners $DEVS >"$T/bad.out" 2>&1; then it_fail "no question accepted"; fi
grep -q "give --block or --row" "$T/bad.out" || it_fail "message: $(cat "$T/bad.out")"

it_log "degraded (issue 22): a member left out, the same names"
DEG=$(echo $DEVS | cut -d' ' -f1-3)
# shellcheck disable=SC2086
"$JGRFS" owners --json --block "$BLOCKS" $DEG >"$T/deg.json" 2>"$T/own.err" ||
	{ cat "$T/own.err"; it_fail "owners on a degraded set"; }
python3 - "$T/own.json" "$T/deg.json" <<'EOF' || it_fail "degraded answer differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["reports"] == b["reports"], (a["reports"], b["reports"])
EOF

# shellcheck disable=SC2086
md5sum $DEVS | diff - "$T/md5.before" || it_fail "owners wrote to a member"

it_log "a scrub mismatch (issue 23): the row it is in names the file"
B7=$(awk -F'\t' '$3 == "/dir/sub/b.bin" && $2 == 7 { print $1 }' "$T/tags")
# shellcheck disable=SC2086
read -r MF MB < <(python3 "$FIND" --where "$B7" $DEVS)
printf 'XXXX' | dd of="$MF" bs=1 seek=$((MB * 4096 + 100)) conv=notrunc status=none
# shellcheck disable=SC2086
"$JGRFS" scrub --json $DEVS >"$T/scrub.json" 2>&1
grep -q '"mismatches":1' "$T/scrub.json" || it_fail "scrub: $(cat "$T/scrub.json")"
# shellcheck disable=SC2086
"$JGRFS" owners --json --row $((B7 / 12)) $DEVS >"$T/row.json" 2>"$T/own.err" || it_fail "owners --row"
python3 - "$T/row.json" "$B7" <<'EOF' || it_fail "the mismatched row does not name b.bin"
import json, sys
out, b7 = json.load(open(sys.argv[1])), int(sys.argv[2])
r = [r for r in out["reports"] if r["block"] <= b7 < r["block"] + r["count"]]
assert len(r) == 1 and r[0]["kind"] == "data", r
assert r[0]["logical"] + b7 - r[0]["block"] == 7, r
assert sorted(r[0]["paths"]) == ["/dir/b-link", "/dir/sub/b.bin"], r
EOF

it_fsck_clean
it_finish
