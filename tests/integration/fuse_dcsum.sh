#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/fuse_dcsum.sh JGRFS - file data checksums through a real
# mount (issue 27, mkfs --data-checksums).
#
# A RAID5 volume made with data checksums gets two files whose blocks are
# tagged (owners_find.py finds them on the members without our code).
# Unmounted, one data block of /a is damaged on its member with dd (past the
# tag), and a data block of /b and the block of the other data member in the
# same row and offset are both damaged. Mounted (foreground, -v, the log kept):
# /a reads right, its member block holds its original bytes again and
# `status --json` counts one corrected read error on that member and on no
# other; reading /b fails with EIO (never wrong bytes) and the daemon's log
# names the file's inode, its logical block and the array block. A mount with
# data=ordered is refused. After the unmount fsck is clean. Then /a's block is
# damaged again and an offline `scrub --repair` rebuilds it from its row (the
# data checksum says which member is wrong), while /b's line, two members
# wrong, is left unresolved with nothing written.
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
FIND="$(cd "$(dirname "$0")" && pwd)/owners_find.py"

it_make_members 4 64M
# with --resync journal (the default) mkfs keeps data checksums unasked
it_mkfs --level 5 --chunk 16K
grep -q "data checksums on" "$T/mkfs.log" || { cat "$T/mkfs.log"; it_fail "mkfs: data checksums not on by default"; }

it_log "data=ordered is refused on a volume with data checksums"
# shellcheck disable=SC2086
if "$JGRFS" mount -o data=ordered $DEVS "$MNT" >"$T/ordered.log" 2>&1; then
	it_fail "mount -o data=ordered succeeded"
fi
grep -q "data=ordered is refused.*mkfs --no-data-checksums" "$T/ordered.log" || { cat "$T/ordered.log"; it_fail "no refusal message"; }

it_mount
it_log "write two files of tagged blocks"
for f in a b; do
	python3 - "$MNT/$f" "/$f" <<'EOF' || it_fail "write $f"
import sys
with open(sys.argv[1], "wb") as out:
    for lblk in range(16):
        tag = f"OWNERS:{sys.argv[2]}:{lblk}:".encode()
        body = bytes((lblk * 7 + i * 13) & 0xff for i in range(4096 - len(tag)))
        out.write(tag + body)
EOF
	cp "$MNT/$f" "$T/$f.orig" || it_fail "copy $f"
done
ls -i "$MNT/b" | awk '{print $1}' >"$T/b.ino"
it_unmount

# shellcheck disable=SC2086
python3 "$FIND" $DEVS >"$T/found" || it_fail "owners_find.py"
ROWB=$(awk '$1 == "row_blocks" {print $2}' "$T/found")
# the highest: a copy may also be in the journal (small commits log their data)
A=$(awk '$3 == "/a" && $2 == 3 {print $1}' "$T/found" | sort -n | tail -1)
B=$(awk '$3 == "/b" && $2 == 5 {print $1}' "$T/found" | sort -n | tail -1)
[ -n "$A" ] && [ -n "$B" ] && [ -n "$ROWB" ] || { cat "$T/found"; it_fail "tagged blocks not found"; }
CHUNK=4 # 16K
# the block of the next data member at the same offset of B's row
B2=$(( B / ROWB * ROWB + ((B % ROWB / CHUNK + 1) % (ROWB / CHUNK)) * CHUNK + B % CHUNK ))
# shellcheck disable=SC2086
read -r AF AB < <(python3 "$FIND" --where "$A" $DEVS)
# shellcheck disable=SC2086
read -r BF BB < <(python3 "$FIND" --where "$B" $DEVS)
# shellcheck disable=SC2086
read -r B2F B2B < <(python3 "$FIND" --where "$B2" $DEVS)
[ "$BB" = "$B2B" ] && [ "$BF" != "$B2F" ] || it_fail "B2 $B2 is not in B's line ($BF $BB, $B2F $B2B)"
dd if="$AF" of="$T/ablk.orig" bs=4096 skip="$AB" count=1 status=none || it_fail "dd save"
it_log "damage: /a block 3 = array block $A ($AF block $AB); /b block 5 = $B and $B2 ($BF, $B2F block $BB)"
printf 'XXXX' | dd of="$AF" bs=1 seek=$((AB * 4096 + 2000)) conv=notrunc status=none
printf 'YYYY' | dd of="$BF" bs=1 seek=$((BB * 4096 + 2100)) conv=notrunc status=none
printf 'ZZZZ' | dd of="$B2F" bs=1 seek=$((BB * 4096 + 2200)) conv=notrunc status=none

it_log "mount in the foreground, verbose"
# shellcheck disable=SC2086
"$JGRFS" mount -f -v $DEVS "$MNT" >"$T/daemon.log" 2>&1 &
for i in $(seq 100); do grep -q " $MNT fuse" /proc/mounts && break; sleep 0.1; done
grep -q " $MNT fuse" /proc/mounts || { cat "$T/daemon.log"; it_fail "mount"; }
echo 3 >/proc/sys/vm/drop_caches
cmp "$MNT/a" "$T/a.orig" || it_fail "/a does not read back right"
dd if="$AF" iflag=direct bs=4096 skip="$AB" count=1 status=none | cmp -s - "$T/ablk.orig" ||
	it_fail "$AF block $AB: not rewritten with its original bytes"
if dd if="$MNT/b" of="$T/b.got" bs=4096 skip=5 count=1 status=none 2>"$T/b.err"; then
	it_fail "/b block 5 read without an error: $(cmp "$T/b.got" <(dd if="$T/b.orig" bs=4096 skip=5 count=1 status=none) && echo right bytes || echo WRONG bytes)"
fi
grep -q "Input/output error" "$T/b.err" || { cat "$T/b.err"; it_fail "/b: not EIO"; }
cmp <(dd if="$MNT/b" bs=4096 count=5 status=none) <(head -c 20480 "$T/b.orig") ||
	it_fail "/b blocks 0-4 do not read right"
"$JGRFS" status --json "$MNT" >"$T/status.json" || it_fail "status --json"
python3 - "$T/status.json" "$AF" <<'EOF' || { cat "$T/status.json"; it_fail "read_errors_corrected"; }
import json, os, sys
st = json.load(open(sys.argv[1]))
for m in st["array"]["member_list"]:
    exp = 1 if os.path.realpath(m["name"]) == os.path.realpath(sys.argv[2]) else 0
    assert m["read_errors_corrected"] == exp, (m, exp)
print("corrected:", {m["name"]: m["read_errors_corrected"] for m in st["array"]["member_list"]})
fs = st["filesystem"]
# /a's block healed once; /b's block 5 EIO at each read the kernel made of it
assert fs["data_checksums"] is True and fs["data_checksum_healed"] == 1, fs
assert fs["data_checksum_errors"] >= 1 and fs["data_checksum_settled"] == 0, fs
EOF
"$JGRFS" status "$MNT" >"$T/status.txt" || it_fail "status"
grep -q "^protection: data=declared, resync=journal, data checksums" "$T/status.txt" &&
	grep -q "1 failed their checksum and were healed, [1-9][0-9]* could not be (EIO)" "$T/status.txt" ||
	{ cat "$T/status.txt"; it_fail "status: no data checksums line"; }
it_unmount
wait
grep -q "ino=$(cat "$T/b.ino") lblk=5 blkno=$B checksum error" "$T/daemon.log" ||
	{ cat "$T/daemon.log"; it_fail "the daemon log does not name /b's inode, block 5, array block $B"; }
grep -q "lblk=3 blkno=$A failed its checksum, healed" "$T/daemon.log" ||
	{ cat "$T/daemon.log"; it_fail "the daemon log does not name the healed block of /a"; }
it_fsck_clean

it_log "owners names the checksum block of /a's block"
FSB=$(sed -n 's/.* \([0-9]*\) blocks of 4 KiB.*/\1/p' "$T/mkfs.log")
[ -n "$FSB" ] || { cat "$T/mkfs.log"; it_fail "mkfs did not say the filesystem's blocks"; }
# shellcheck disable=SC2086
"$JGRFS" owners --json --block "$(( FSB + A / 1016 ))" $DEVS >"$T/owners.json" ||
	it_fail "owners"
grep -q '"kind":"data-checksums"' "$T/owners.json" || { cat "$T/owners.json"; it_fail "owners: no data-checksums"; }

it_log "scrub --repair with data checksums: /a damaged again is rebuilt, /b's line left alone"
printf 'WWWW' | dd of="$AF" bs=1 seek=$((AB * 4096 + 3000)) conv=notrunc status=none
dd if="$BF" of="$T/bblk.bad" bs=4096 skip="$BB" count=1 status=none
dd if="$B2F" of="$T/b2blk.bad" bs=4096 skip="$BB" count=1 status=none
# shellcheck disable=SC2086
"$JGRFS" scrub --repair --json $DEVS >"$T/scrub.json" 2>"$T/scrub.err"
rc=$?
[ $rc = 1 ] || { cat "$T/scrub.json" "$T/scrub.err"; it_fail "scrub --repair exit $rc, expected 1 (an unresolved row)"; }
python3 - "$T/scrub.json" <<'EOF' || { cat "$T/scrub.json" "$T/scrub.err"; it_fail "scrub --repair --json"; }
import json, sys
o = json.load(open(sys.argv[1]))
assert o["checksums"] is True, o
assert o["mismatches"] == 2 and o["rebuilt"] == 1 and o["unresolved"] == 1, o
EOF
dd if="$AF" iflag=direct bs=4096 skip="$AB" count=1 status=none | cmp -s - "$T/ablk.orig" ||
	it_fail "$AF block $AB: the scrub did not rebuild it from its row"
grep -q "dev=$AF block=$AB (data) is wrong: its reconstruction from the row verifies: rewritten" \
	"$T/scrub.err" || { cat "$T/scrub.err"; it_fail "no word of /a's rebuilt block"; }
dd if="$BF" iflag=direct bs=4096 skip="$BB" count=1 status=none | cmp -s - "$T/bblk.bad" ||
	it_fail "$BF block $BB: written by a scrub that could not tell"
dd if="$B2F" iflag=direct bs=4096 skip="$BB" count=1 status=none | cmp -s - "$T/b2blk.bad" ||
	it_fail "$B2F block $BB: written by a scrub that could not tell"
it_finish
