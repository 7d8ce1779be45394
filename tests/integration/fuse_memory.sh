#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/fuse_memory.sh - the memory the daemon keeps, by pool, as
# `jgrfs status --json` reports it (issue 46; docs/design/memory.md).
#
# A volume mounted with a small buffer cache and 4 FUSE threads takes a 48 MiB
# write with fsync (three early batches of 16 MiB), a tree of small files and a
# 512 MiB write; then every pool must have been used (its peak above 0), none
# may be above its bound, the bounds must be the ones the volume's log and the
# mount's options give (the formulas of memory.md), and the pools together may
# not exceed the sum of the bounds, nor what the process has resident. With
# jemalloc (the release build) the resident peak must be within the sum of the
# bounds and what the daemon had after mount, and the memory the allocator
# keeps beyond what is allocated is bounded too.
#
# With `uring` as its argument ($3), or JGRFS_FUSE_URING=1, the same mounted
# -o uring (fuse.enable_uring set as fuse_lib.sh does, or a skip): the ring's
# entries run request handlers too, so the bounds' T is the 4 workers and the
# entries (as many as the daemon has `fuse-uring` threads, and as uring.c
# gives the CPUs), and the entries' buffers are a pool of the total.
#
#   fuse_memory.sh PATH/TO/jgrfs [PATH/TO/jgrfs-crash] [uring]
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
command -v python3 >/dev/null || it_skip "no python3"
MODE=${3:-devfuse}
[ "${JGRFS_FUSE_URING:-}" = 1 ] && MODE=uring
if [ "$MODE" = uring ] && [ -z "${IT_URING_HELD:-}" ]; then
	it_uring_enable	# fuse.enable_uring, shared with the tests running beside (fuse_lib.sh)
fi

it_make_members 4 512M
it_mkfs -l 5
if [ "$MODE" = uring ]; then
	it_mount -o cache=8M,threads=4,uring
	it_uring_check	# the ring serves (a kernel that refuses it: requests on /dev/fuse)
else
	it_mount -o cache=8M,threads=4
fi
# the entry threads the daemon runs: the T the status must count
pid=$(it_daemon_pid)
ring_threads=$(cat /proc/"$pid"/task/*/comm | grep -cx fuse-uring)
it_log "mode $MODE: $ring_threads ring entry threads"

"$JGRFS" status --json "$MNT" >"$T/mount.json" || it_fail "status --json after mount"
dd if=/dev/zero of="$MNT/big" bs=1M count=48 conv=fsync status=none || it_fail "dd"
mkdir "$MNT/tree" || it_fail "mkdir"
for i in $(seq 200); do echo "$i" >"$MNT/tree/f$i"; done
dd if=/dev/zero of="$MNT/big2" bs=1M count=512 conv=fsync status=none || it_fail "dd 512M"
"$JGRFS" sync "$MNT" || it_fail "jgrfs sync"
"$JGRFS" status --json "$MNT" >"$T/status.json" || it_fail "status --json"
"$JGRFS" status "$MNT" >"$T/status.txt" || it_fail "status"
grep -q "^memory: " "$T/status.txt" || it_fail "no memory line in jgrfs status"
grep -q "^ *total .*bound" "$T/status.txt" || it_fail "no total line in jgrfs status"
if [ "$MODE" = uring ]; then
	grep -q "^ *fuse ring  *$ring_threads entries, a thread each: .*bound" "$T/status.txt" ||
		it_fail "no fuse ring line of $ring_threads entries in jgrfs status"
else
	grep -q "^ *fuse ring  *none: requests on /dev/fuse$" "$T/status.txt" ||
		it_fail "no fuse ring line saying none in jgrfs status"
fi
sed -n '/^memory:/,/total/p' "$T/status.txt"

python3 - "$T/status.json" "$T/mount.json" "$MODE" "$ring_threads" <<'EOF' || it_fail "memory pools (above)"
import json, re, sys

st = json.load(open(sys.argv[1]))
m, fs = st["memory"], st["filesystem"]
m0 = json.load(open(sys.argv[2]))["memory"]
uring, ring_threads = sys.argv[3] == "uring", int(sys.argv[4])
bad = []
def check(ok, what):
    if not ok:
        bad.append(what)

KiB, MiB, B, W = 1 << 10, 1 << 20, 4096, 4       # threads=4
# -o uring: a queue a possible CPU, 8 entries each, fewer past 4 CPUs so that
# a mount has at most 32, never fewer than 2 (FUR_DEPTH_* of uring.c)
# the kernel's queues, one a possible CPU ("0-1": 2), read as uring.c reads them
lo, hi = re.match(r"(\d+)(?:-(\d+))?", open("/sys/devices/system/cpu/possible").read()).groups()
nq = int(hi or lo) + 1
E = nq * min(8, max(2, 32 // nq)) if uring else 0
check(ring_threads == E, "%d fuse-uring threads, %d entries expected" % (ring_threads, E))
th = m["threads"]
check(th == {"fuse": W, "ring_entries": E}, "threads %s: %d workers, %d entries" % (th, W, E))
T = W + E                                        # the threads running request handlers
# the ring's entries: a 288-byte header and 256 bytes and a payload of
# max_write (1 MiB) each, allocated whole when the ring is set up
r = m["fuse_ring"]
check(r["bound_bytes"] == E * (MiB + 544), "fuse ring bound for %d entries" % E)
check(r["bytes"] == r["peak_bytes"] == r["bound_bytes"], "fuse ring %s not whole" % r)
# the volume's log: its blocks without the superblock, the largest footprint
cap = fs["journal_blocks"] - 1
mt = min(cap // 4, 2048)
batch = 4096                                     # an early batch, 16 MiB
# -o cache=8M: 2048 buffers, each a block and its header, and the hash table
c = m["cache"]
check(8 * MiB < c["bound_bytes"] < 9 * MiB, "cache bound %d for cache=8M" % c["bound_bytes"])
# libfuse: a buffer of 256 pages and a header page per worker thread
check(m["fuse_buffers"]["bound_bytes"] == W * (MiB + B), "fuse bound for threads=4")
# copies: the log, two transactions' footprints, a copy a writer, two batches
check(m["journal_copies"]["bound_bytes"] == (cap + 2 * mt + T + 1 + 2 * (batch + T)) * B,
      "journal copies bound")
# the arena: two batches and two slabs of 2 MiB
a = m["arena_slabs"]
check(a["total"] == 18 and m["journal_arena"]["bound_bytes"] == 18 * 2 * MiB, "arena bound")
check(0 < a["busy_peak"] <= a["touched"] <= a["total"] and a["busy"] <= a["busy_peak"],
      "arena slabs %s" % a)
# staging: a batch's worth kept; a write stages at most twice its blocks and a buffer
check(m["journal_staging"]["bound_bytes"] == max(16 * MiB, 2 * max(cap, batch + T) * B + MiB),
      "staging bound")
check(m["log_images"]["bound_bytes"] == 2 * mt * B, "log images bound")
# parity scratch: threads + 5 calls at once and one kept, each at most a group
sc = m["scratch_calls"]
check(0 < sc["call_max_bytes"] <= 32 * MiB, "scratch a call %d" % sc["call_max_bytes"])
check(m["parity_scratch"]["bound_bytes"] == (T + 6) * sc["call_max_bytes"], "scratch bound")
check(0 < sc["peak"] <= T + 5 and sc["now"] <= sc["peak"], "scratch calls %s" % sc)
pools = ("cache", "journal_copies", "journal_arena", "journal_staging", "row_cache",
         "parity_scratch")
for name in pools:
    p = m[name]
    # a sequential write's data goes home from the journal's arena, unstaged
    check(p["peak_bytes"] > 0 or name == "journal_staging", name + ": never used")
    check(p["bytes"] <= p["peak_bytes"], name + ": now above its peak")
    check(p["peak_bytes"] <= p["bound_bytes"], name + ": peak above its bound")
# the writes went through the arena, a batch (8 slabs) at a time at least
check(a["busy_peak"] >= 8, "arena: no full batch seen")
tot = m["total"]
bounds = sum(m[n]["bound_bytes"] for n in pools + ("fuse_buffers", "log_images", "fuse_ring"))
check(tot["bound_bytes"] == bounds, "total bound %d, not the sum %d" % (tot["bound_bytes"], bounds))
check(tot["bytes"] == sum(m[n]["bytes"] for n in pools + ("fuse_ring",)), "total bytes")
check(tot["bytes"] <= tot["peaks_bytes"] <= tot["bound_bytes"], "total %s above its bound" % tot)
check(0 < m["rss_bytes"] <= m["rss_peak_bytes"], "rss")
check(tot["bytes"] <= m["rss_bytes"], "pools %d above the resident %d" % (tot["bytes"], m["rss_bytes"]))
# with jemalloc (no sanitizer's shadow): the process within the bounds and its start
if m["allocated_bytes"]:
    check(m["rss_peak_bytes"] <= tot["bound_bytes"] + m0["rss_bytes"],
          "resident peak %d KiB above the bounds %d KiB and the start %d KiB" %
          (m["rss_peak_bytes"] // KiB, tot["bound_bytes"] // KiB, m0["rss_bytes"] // KiB))
if bad:
    print(json.dumps(m, indent=1))
    print("\n".join(bad))
    sys.exit(1)
EOF

# Where the program links jemalloc (the release build), what it keeps beyond
# what is allocated after the 512 MiB write: when every block's copy was a
# 4 KiB allocation of its own, 105-116 MiB with an arena per thread pair,
# 46-48 MiB with one; 7 MiB with the journal's arena of data copies.
slack() {
	"$JGRFS" status --json "$MNT" | python3 -c '
import json, sys
m = json.load(sys.stdin)["memory"]
print(m["allocator_resident_bytes"] - m["allocated_bytes"] if m["allocated_bytes"] else -1)'
}
s=$(slack)
if [ "$s" != -1 ]; then
	it_log "allocator: $((s >> 20)) MiB resident beyond the allocated after a 512 MiB write"
	[ "$s" -le $((64 << 20)) ] || it_fail "the allocator keeps $((s >> 20)) MiB it does not use (64 at most)"
fi
it_unmount
it_finish
