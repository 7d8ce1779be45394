#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/bitrot.sh JGRFS - a short bit rot campaign (issue 27;
# tools/crash/bitrot.py; the long one is `make bitrot`).
#
# BITROT_COPIES (default 16) copies of one RAID5 volume, each with 1-4 bytes
# changed in used blocks of one or two member files, go through fsck -n and a
# read-only mount that reads every file, link and directory. What it fails on
# is what is promised today:
#   - a crash (a jgrfs process killed by a signal, a sanitizer report) or a
#     hang (a step over its timeout), always;
#   - with one member damaged, a silent wrong read not explained by damaged
#     file content: metadata has checksums and is healed from its row
#     (BLK_CTL_HEAL_READ), parity is not read by a healthy array.
# A file whose own data block was damaged may still read back wrong with no
# error on a volume made without data checksums: counted and printed as
# expected, not a failure. Then BITROT_CSUM_COPIES (default 12) copies of a
# volume made with `mkfs --data-checksums`, where any silent wrong read with
# one member damaged fails. Two members damaged in one row is beyond RAID5:
# counted.
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
BITROT="$(cd "$(dirname "$0")/../../tools/crash" && pwd)/bitrot.py"

it_log "bit rot: ${BITROT_COPIES:-16} copies, seed ${BITROT_SEED:-1}"
# shellcheck disable=SC2086
python3 "$BITROT" --jgrfs "$JGRFS" --copies "${BITROT_COPIES:-16}" --seed "${BITROT_SEED:-1}" \
	--dir "$T/bitrot" ${BITROT_ARGS:-} || it_fail "bit rot campaign (exit $?)"
it_log "bit rot with data checksums: ${BITROT_CSUM_COPIES:-12} copies, seed ${BITROT_SEED:-1}"
# shellcheck disable=SC2086
python3 "$BITROT" --jgrfs "$JGRFS" --copies "${BITROT_CSUM_COPIES:-12}" --seed "${BITROT_SEED:-1}" \
	--dir "$T/bitrot-csum" --data-checksums ${BITROT_ARGS:-} ||
	it_fail "bit rot campaign with data checksums (exit $?)"
it_finish
