#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/fuse_memory.sh - the memory the daemon keeps, by pool, as
# `jgrfs status --json` reports it (issue 46; docs/design/memory.md).
#
# A volume mounted with a small buffer cache and 4 FUSE threads takes a 48 MiB
# write with fsync (three early batches of 16 MiB) and a tree of small files;
# then every pool must have been used (its peak above 0), none may be above its
# bound, the bounds must be the ones the mount's options give, and the pools
# together may not exceed what the process has resident. With jemalloc (the
# release build) the memory it keeps beyond what is allocated is bounded too.
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
command -v python3 >/dev/null || it_skip "no python3"

it_make_members 4 512M
it_mkfs -l 5
it_mount -o cache=8M,threads=4

dd if=/dev/zero of="$MNT/big" bs=1M count=48 conv=fsync status=none || it_fail "dd"
mkdir "$MNT/tree" || it_fail "mkdir"
for i in $(seq 200); do echo "$i" >"$MNT/tree/f$i"; done
"$JGRFS" sync "$MNT" || it_fail "jgrfs sync"
"$JGRFS" status --json "$MNT" >"$T/status.json" || it_fail "status --json"
"$JGRFS" status "$MNT" >"$T/status.txt" || it_fail "status"
grep -q "^memory: " "$T/status.txt" || it_fail "no memory line in jgrfs status"

python3 - "$T/status.json" <<'EOF' || it_fail "memory pools (above)"
import json, sys

m = json.load(open(sys.argv[1]))["memory"]
bad = []
def check(ok, what):
    if not ok:
        bad.append(what)

MiB = 1 << 20
# -o cache=8M: 2048 buffers, each a block and its header, and the hash table
c = m["cache"]
check(8 * MiB < c["bound_bytes"] < 9 * MiB, "cache bound %d for cache=8M" % c["bound_bytes"])
# the staging pool keeps up to one early batch (16 MiB by default)
check(m["journal_staging"]["bound_bytes"] == 16 * MiB, "staging bound")
# libfuse: a buffer of 256 pages and a header page per worker thread
check(m["fuse_buffers"]["bound_bytes"] == 4 * (MiB + 4096), "fuse bound for threads=4")
for name in ("cache", "journal_copies", "journal_staging", "row_cache", "parity_scratch"):
    p = m[name]
    # a sequential write's data goes home from the journal's arena, unstaged
    check(p["peak_bytes"] > 0 or name == "journal_staging", name + ": never used")
    check(p["bytes"] <= p["peak_bytes"], name + ": now above its peak")
    if p["bound_bytes"]:
        check(p["peak_bytes"] <= p["bound_bytes"], name + ": peak above its bound")
# the 48 MiB write went through the journal's copies, a batch at a time
check(m["journal_copies"]["peak_bytes"] >= 16 * MiB, "journal copies: no full batch seen")
held = sum(m[n]["bytes"] for n in ("cache", "journal_copies", "journal_staging",
                                  "row_cache", "parity_scratch"))
check(0 < m["rss_bytes"] <= m["rss_peak_bytes"], "rss")
check(held <= m["rss_bytes"], "pools %d above the resident %d" % (held, m["rss_bytes"]))
if bad:
    print(json.dumps(m, indent=1))
    print("\n".join(bad))
    sys.exit(1)
EOF

# Where the program links jemalloc (the release build), what it keeps beyond
# what is allocated: a 512 MiB write frees a 4 KiB copy per block, and with an
# arena per thread pair each arena kept the pages freed into it (105-116 MiB
# over the allocated after such a write on 2 CPUs; 46-48 MiB with one arena).
slack() {
	"$JGRFS" status --json "$MNT" | python3 -c '
import json, sys
m = json.load(sys.stdin)["memory"]
print(m["allocator_resident_bytes"] - m["allocated_bytes"] if m["allocated_bytes"] else -1)'
}
if [ "$(slack)" != -1 ]; then
	dd if=/dev/zero of="$MNT/big2" bs=1M count=512 conv=fsync status=none || it_fail "dd 512M"
	s=$(slack)
	it_log "allocator: $((s >> 20)) MiB resident beyond the allocated after a 512 MiB write"
	[ "$s" -le $((64 << 20)) ] || it_fail "the allocator keeps $((s >> 20)) MiB it does not use (64 at most)"
fi
it_unmount
it_finish
