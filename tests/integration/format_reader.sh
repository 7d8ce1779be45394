#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/format_reader.sh JGRFS - volumes made by this build, read by
# an independent reader written from docs/FORMAT.md (format_reader.py): RAID4, 5
# and 6, small and default chunks, each policy with a bitmap; a volume with data
# checksums and files in it; then a damaged superblock copy, which the reader
# must refuse, naming it.
set -euo pipefail
jgrfs=$1
here=$(cd "$(dirname "$0")" && pwd)
reader="$here/format_reader.py"
dir=$(mktemp -d /tmp/jgrfs-format.XXXXXX)
trap 'fusermount3 -u -z "$dir/fs" 2>/dev/null || true; rm -rf "$dir"' EXIT

run() { # level members chunk policy
	rm -f "$dir"/m*
	local devs=()
	for i in $(seq 0 $(($2 - 1))); do devs+=("$dir/m$i"); done
	"$jgrfs" mkfs -l "$1" -c "$3" -r "$4" -s 96M "${devs[@]}" >"$dir/mkfs.out" 2>&1 ||
		{ cat "$dir/mkfs.out"; echo "FAIL: mkfs -l $1 -c $3 -r $4"; exit 1; }
	# members in reverse order: the reader finds each role from its superblock
	python3 "$reader" $(printf '%s\n' "${devs[@]}" | tac)
}

run 5 4 4K journal
run 5 3 64K bitmap
run 6 5 16K full
run 6 4 4K journal
run 4 3 8K journal

# Members that held something else: the array is not in sync (SYNCING, mark 0),
# and what mkfs wrote must match its parity all the same (2.2).
rm -f "$dir"/m*
for i in 0 1 2 3; do
	head -c 96M /dev/urandom >"$dir/m$i"
done
"$jgrfs" mkfs -l 5 -c 16K -r journal "$dir"/m0 "$dir"/m1 "$dir"/m2 "$dir"/m3 >"$dir/mkfs.out" 2>&1 ||
	{ cat "$dir/mkfs.out"; echo "FAIL: mkfs over old data"; exit 1; }
out=$(python3 "$reader" "$dir"/m3 "$dir"/m2 "$dir"/m1 "$dir"/m0)
echo "$out"
grep -q "initial sync at row 0" <<<"$out" || { echo "FAIL: members of old data: the array says it is in sync"; exit 1; }

# Data checksums (4.9): files written through a mount (none deleted, so every
# set slot names a block of file data), every slot checked against its block.
rm -f "$dir"/m*
"$jgrfs" mkfs -l 5 -c 16K -r journal --data-checksums -s 96M "$dir"/m0 "$dir"/m1 "$dir"/m2 "$dir"/m3 \
	>"$dir/mkfs.out" 2>&1 || { cat "$dir/mkfs.out"; echo "FAIL: mkfs --data-checksums"; exit 1; }
mkdir "$dir/fs"
"$jgrfs" mount "$dir"/m0 "$dir"/m1 "$dir"/m2 "$dir"/m3 "$dir/fs" || { echo "FAIL: mount"; exit 1; }
head -c 300K /dev/urandom >"$dir/fs/random"
head -c 8K /dev/zero >"$dir/fs/zeros"
printf 'short\n' >"$dir/fs/short"
"$jgrfs" umount "$dir/fs" || { echo "FAIL: umount"; exit 1; }
out=$(python3 "$reader" "$dir"/m3 "$dir"/m2 "$dir"/m1 "$dir"/m0)
echo "$out"
grep -q "; 78 data checksums verified" <<<"$out" || { echo "FAIL: not the 78 data blocks written"; exit 1; }

# A damaged byte in member 1's copy 1 must be found, by the crc the document gives.
run 5 4 4K journal >/dev/null
# the byte flipped, not set: a set byte that held that value already (a UUID
# byte, 1 in 256) would damage nothing
at=$((4096 + 0x90))
b=$(dd if="$dir/m1" bs=1 skip=$at count=1 status=none | od -An -tu1 | tr -d ' ')
printf "\\x$(printf %02x $((b ^ 0xff)))" | dd of="$dir/m1" bs=1 seek=$at conv=notrunc status=none
if out=$(python3 "$reader" "$dir"/m[0-9]); then
	echo "FAIL: the reader accepted a damaged superblock copy: $out"
	exit 1
fi
echo "$out"
grep -q "m1 superblock copy 1: crc" <<<"$out" || { echo "FAIL: wrong complaint"; exit 1; }
echo "format_reader: ok"
