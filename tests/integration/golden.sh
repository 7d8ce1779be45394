#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/golden.sh JGRFS [IMAGE...] - the golden images of
# tests/images, made by earlier builds, read by this one: every image must give
# the fsck results, recovery lines, tree manifest and FORMAT.md reading recorded
# in its expect/ directory when it was made (tests/images/README.md).
set -u
JGRFS=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
images="$here/../images"
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
out=$(mktemp -d /var/tmp/jgrfs-golden-out.XXXXXX)
trap 'rm -rf "$out"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$out/san"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$out/san:print_stacktrace=1"

list=("$@")
[ ${#list[@]} = 0 ] && list=($(cd "$images" && ls -d */ | tr -d /))
failed=""
for name in "${list[@]}"; do
	img="$images/$name"
	[ -f "$img/image.conf" ] || { echo "FAIL: $name: no image.conf"; exit 1; }
	start=$(date +%s)
	if ! bash "$images/read-image.sh" "$JGRFS" "$img" "$out/$name"; then
		failed="$failed $name"
		continue
	fi
	bad=""
	for f in "$img"/expect/*; do
		if ! diff -u "$f" "$out/$name/$(basename "$f")" >"$out/$name.diff"; then
			echo "FAIL: $name: $(basename "$f") differs from what the image's maker recorded:"
			head -n 40 "$out/$name.diff"
			bad=1
		fi
	done
	for f in "$out/$name"/*; do
		[ -f "$img/expect/$(basename "$f")" ] ||
			{ echo "FAIL: $name: $(basename "$f") produced, none recorded"; bad=1; }
	done
	if [ -n "$bad" ]; then
		failed="$failed $name"
	else
		echo "golden: $name: as recorded ($(($(date +%s) - start)) s)"
	fi
done
for f in "$out"/san.*; do
	[ -f "$f" ] || continue
	cat "$f"
	failed="$failed sanitizer"
done
[ -z "$failed" ] || { echo "FAIL: golden images:$failed"; exit 1; }
echo "golden: ${#list[@]} images read as recorded"
