#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/fuse_heal.sh JGRFS - a metadata block whose checksum fails
# is healed through a real mount (issue 27; src/raid/heal.c).
#
# A RAID5 volume gets a directory of files; unmounted, two metadata blocks are
# damaged in the member files with dd (bytes past the block header, so only
# the crc tells): the first inode table block (the root's inode) and the first
# block of the directory /dir/sub. Mounted again: the directory lists, every
# file reads right, each member block holds its original bytes again, and
# `status --json` counts the correction on the member that held the damage
# (read_errors_corrected) and on no other. After the unmount fsck is clean and a
# scrub (offline) finds no mismatch.
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
# shellcheck disable=SC2086
read -r DF DB < <(python3 "$FIND" --where "$DIRB" $DEVS)
# shellcheck disable=SC2086
read -r IF IB < <(python3 "$FIND" --where "$ITB" $DEVS)
[ -n "$DF" ] && [ -n "$IF" ] || it_fail "owners_find.py --where"
dd if="$DF" of="$T/dir.orig" bs=4096 skip="$DB" count=1 status=none || it_fail "dd save"
dd if="$IF" of="$T/it.orig" bs=4096 skip="$IB" count=1 status=none || it_fail "dd save"
it_log "damage: directory block $DIRB ($DF block $DB), inode table block $ITB ($IF block $IB)"
printf 'XXXX' | dd of="$DF" bs=1 seek=$((DB * 4096 + 200)) conv=notrunc status=none
printf 'YYYY' | dd of="$IF" bs=1 seek=$((IB * 4096 + 300)) conv=notrunc status=none
dd if="$DF" bs=4096 skip="$DB" count=1 status=none | cmp -s - "$T/dir.orig" &&
	it_fail "the directory block was not damaged"

it_mount
it_log "list and read through the damage"
n=$(ls "$MNT/dir/sub" | wc -l)
[ "$n" = 60 ] || it_fail "ls /dir/sub: $n names, expected 60"
for i in $(seq 1 60); do
	[ "$(cat "$MNT/dir/sub/f$i")" = "content of file $i" ] || it_fail "f$i reads wrong"
done
for pair in "$DF $DB $T/dir.orig" "$IF $IB $T/it.orig"; do
	read -r f b orig <<<"$pair"
	dd if="$f" iflag=direct bs=4096 skip="$b" count=1 status=none | cmp -s - "$orig" ||
		it_fail "$f block $b: not rewritten with its original bytes"
done
"$JGRFS" status --json "$MNT" >"$T/status.json" || it_fail "status --json"
python3 - "$T/status.json" "$DF" "$IF" <<'EOF' || { cat "$T/status.json"; it_fail "read_errors_corrected"; }
import json, os, sys
st = json.load(open(sys.argv[1]))
want = {}
for p in sys.argv[2:]:
    want[os.path.realpath(p)] = want.get(os.path.realpath(p), 0) + 1
for m in st["array"]["member_list"]:
    got, exp = m["read_errors_corrected"], want.get(os.path.realpath(m["name"]), 0)
    assert got == exp, (m, exp)
    assert m["read_errors_uncorrectable"] == 0, m
print("corrected:", {m["name"]: m["read_errors_corrected"] for m in st["array"]["member_list"]})
EOF
it_unmount

it_fsck_clean
# shellcheck disable=SC2086
"$JGRFS" scrub --json $DEVS >"$T/scrub.json" 2>"$T/scrub.err" ||
	{ cat "$T/scrub.json" "$T/scrub.err"; it_fail "scrub after the heal: exit $?"; }
grep -q '"mismatches":0' "$T/scrub.json" || { cat "$T/scrub.json"; it_fail "scrub mismatches"; }
it_finish
