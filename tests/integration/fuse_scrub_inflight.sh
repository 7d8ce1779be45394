#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/fuse_scrub_inflight.sh JGRFS - the online scrub meets a
# block whose write is in flight (issue 43; src/fs/verify.c (V5),
# src/raid/scrub.c (K5), src/fuse/scrub.c (Q7)).
#
# A RAID5 volume with data checksums gets a file of tagged blocks; unmounted,
# the parity of the line of one of its blocks is damaged with dd. Mounted in
# the foreground (-v, the log kept) with commit=600, that block is overwritten
# without fsync: its new checksum is set, the array still holds the old bytes
# (the write waits in the journal). `jgrfs scrub --repair MOUNTPOINT` must not
# call the row unresolved (before the fix: "cannot tell which member is wrong",
# exit 1): it looks at it again at the end of its pass, after a checkpoint,
# and leaves it whole. The file reads back new; after the unmount fsck is clean
# and an offline scrub finds nothing.
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
FIND="$(cd "$(dirname "$0")" && pwd)/owners_find.py"

it_make_members 4 64M
it_mkfs --level 5 --chunk 16K
it_mount
it_log "write a file of tagged blocks"
python3 - "$MNT/a" <<'EOF' || it_fail "write a"
import sys
with open(sys.argv[1], "wb") as out:
    for lblk in range(16):
        tag = f"OWNERS:/a:{lblk}:".encode()
        out.write(tag + bytes((lblk * 7 + i * 13) & 0xff for i in range(4096 - len(tag))))
EOF
it_unmount

# shellcheck disable=SC2086
python3 "$FIND" $DEVS >"$T/found" || it_fail "owners_find.py"
ROWB=$(awk '$1 == "row_blocks" {print $2}' "$T/found")
# the highest: a copy may also be in the journal (small commits log their data)
A=$(awk '$3 == "/a" && $2 == 3 {print $1}' "$T/found" | sort -n | tail -1)
[ -n "$A" ] && [ -n "$ROWB" ] || { cat "$T/found"; it_fail "tagged block not found"; }
# shellcheck disable=SC2086
read -r AF AB < <(python3 "$FIND" --where "$A" $DEVS)
ROW=$((A / ROWB))
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
[ -n "$PF" ] && [ "$PF" != "$AF" ] || it_fail "parity member of row $ROW: '$PF'"
it_log "damage: the parity of /a block 3's line (array block $A, row $ROW; $PF block $AB)"
printf 'PPPP' | dd of="$PF" bs=1 seek=$((AB * 4096 + 1500)) conv=notrunc status=none

it_log "mount in the foreground, verbose, commits only when asked"
# shellcheck disable=SC2086
"$JGRFS" mount -f -v -o commit=600 $DEVS "$MNT" >"$T/daemon.log" 2>&1 &
for _ in $(seq 100); do grep -q " $MNT fuse" /proc/mounts && break; sleep 0.1; done
grep -q " $MNT fuse" /proc/mounts || { cat "$T/daemon.log"; it_fail "mount"; }
it_log "overwrite /a block 3, no fsync: in flight"
python3 - "$MNT/a" "$T/a.new" <<'EOF' || it_fail "overwrite"
import shutil, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(3 * 4096)
    f.write(b"OWNERS:/a:3:" + bytes((i * 29 + 5) & 0xff for i in range(4096 - 12)))
shutil.copyfile(sys.argv[1], sys.argv[2])
EOF
dd if="$AF" iflag=direct bs=4096 skip="$AB" count=1 status=none | cmp -s - <(dd if="$T/a.new" bs=4096 skip=3 count=1 status=none) &&
	it_fail "the overwrite reached the member before the scrub: nothing in flight"

it_log "online scrub --repair: the row is looked at again, never unresolved"
"$JGRFS" scrub --repair --json "$MNT" >"$T/s1.json" 2>"$T/s1.err"
rc=$?
python3 - "$T/s1.json" <<'EOF' || { cat "$T/s1.json" "$T/s1.err"; grep scrub "$T/daemon.log"; it_fail "online scrub (exit $rc)"; }
import json, sys
o = json.load(open(sys.argv[1]))
assert o["state"] == "done" and o["unresolved"] == 0, o
EOF
[ $rc = 0 ] || { cat "$T/s1.json" "$T/s1.err"; it_fail "online scrub --repair exit $rc"; }
grep -q "scrub: 1 rows had writes in flight when met: looked at again" "$T/daemon.log" ||
	{ grep scrub "$T/daemon.log"; it_fail "no later look logged"; }
grep -q "cannot tell which member is wrong" "$T/daemon.log" &&
	{ grep scrub "$T/daemon.log"; it_fail "a row called unresolved"; }
cmp "$MNT/a" "$T/a.new" || it_fail "/a does not read back new"
it_unmount
it_fsck_clean
# shellcheck disable=SC2086
"$JGRFS" scrub --json $DEVS >"$T/s2.json" 2>&1 || { cat "$T/s2.json"; it_fail "scrub after"; }
grep -q '"mismatches":0' "$T/s2.json" || { cat "$T/s2.json"; it_fail "mismatches after"; }
it_finish
