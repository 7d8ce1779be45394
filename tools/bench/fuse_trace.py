#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/bench/fuse_trace.py - FUSE requests and block I/O per operation, from perf.

Record any FUSE filesystem (jgrfs, passthrough_ll, fuse2fs) while a workload runs,
system-wide, with the kernel's fuse and block tracepoints (kernel 6.15 or later
for fuse:*), then feed `perf script` to this:

    perf record -a -e fuse:fuse_request_send -e fuse:fuse_request_end \\
        -e block:block_rq_issue -e block:block_rq_complete -o t.data -- sleep 4
    perf script -i t.data | tools/bench/fuse_trace.py --per FUSE_FSYNC

Prints, per request kind: how many per operation (--per OPCODE: one operation
per request of that kind; --ops N: N operations), and the round trip from the
kernel sending it to the daemon's reply (mean, median, p90). Then the block
requests by issuer and the share of the time the disk had one outstanding.
With --per, the round trips of that kind: percentiles, and the time the disk
had a request outstanding inside them (the rest is the daemon's CPU, its
locks and waits for wake-ups).
"""
import argparse
import bisect
import collections
import re
import statistics
import sys

SEND = re.compile(r"\s([\d.]+):\s+fuse:fuse_request_send: connection (\d+) req (\d+) opcode \d+ \((\w+)\)")
END = re.compile(r"\s([\d.]+):\s+fuse:fuse_request_end: connection (\d+) req (\d+) len \d+ error (-?\d+)")
BLK = re.compile(r"^\s*(.+?)\s+\d+\s+\[\d+\]\s+([\d.]+):\s+block:block_rq_(issue|complete): \S+ (\S+)"
                 r"(?: \d+)? \(\) (\d+) \+ (\d+)")


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per", help="count operations as requests of this kind (e.g. FUSE_CREATE)")
    ap.add_argument("--ops", type=float, help="the number of operations")
    a = ap.parse_args()

    pend, rt, errs, wins = {}, collections.defaultdict(list), collections.Counter(), []
    blk, issuers, sectors = [], collections.Counter(), collections.Counter()
    first = last = None
    for line in sys.stdin:
        m = SEND.search(line)
        if m:
            ts = float(m.group(1))
            pend[(m.group(2), m.group(3))] = (ts, m.group(4))
            first = ts if first is None else first
            last = ts
            continue
        m = END.search(line)
        if m:
            k = (m.group(2), m.group(3))
            if k in pend:
                t0, op = pend.pop(k)
                t1 = float(m.group(1))
                rt[op].append((t1 - t0) * 1e6)
                errs[op] += m.group(4) != "0"
                if op == a.per:
                    wins.append((t0, t1))
                last = t1
            continue
        m = BLK.search(line)
        if m:
            comm, ts, kind, rw, _, n = m.groups()
            blk.append((float(ts), kind))
            if kind == "issue":
                comm = comm.strip()
                who = re.sub(r"[-/:]\S*$", "", comm) if comm.startswith(("kworker", "iou-wrk")) else comm
                key = "%s %s" % ("flush" if rw.startswith("F") else rw, who)
                issuers[key] += 1
                sectors[key] += int(n)
    if not rt:
        sys.exit("fuse_trace: no fuse:fuse_request_send/end pairs in the input")
    ops = a.ops or (len(rt[a.per]) if a.per else 1)
    span = last - first
    nreq = sum(len(v) for v in rt.values())
    print("%.3f s, %d requests, %.2f per operation (%d operations); round trips %.0f%% of the time"
          % (span, nreq, nreq / ops, ops, 100 * sum(sum(v) for v in rt.values()) / 1e6 / span))
    for op, v in sorted(rt.items(), key=lambda x: -sum(x[1])):
        print("  %-16s %6.2f/op  mean %7.1f us  median %7.1f us  p90 %7.1f us%s"
              % (op, len(v) / ops, statistics.mean(v), statistics.median(v), pct(v, 0.9),
                 "  (%d errors)" % errs[op] if errs[op] else ""))
    if not blk:
        return
    busy, depth, start = [], 0, None
    for ts, kind in sorted(blk):
        if kind == "issue":
            start = ts if depth == 0 else start
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                busy.append((start, ts))
    print("block: disk busy %.0f%% of the time" % (100 * sum(b - s for s, b in busy) / span))
    for k, n in issuers.most_common(8):
        print("  %-28s %6.2f/op  %.1f blocks each" % (k, n / ops, sectors[k] / 8 / n))
    if wins:
        starts = [s for s, _ in busy]
        inside = []
        for s, e in wins:
            i, d = max(0, bisect.bisect_left(starts, s) - 1), 0.0
            while i < len(busy) and busy[i][0] < e:
                d += max(0.0, min(busy[i][1], e) - max(busy[i][0], s))
                i += 1
            inside.append(d * 1e6)
        v = rt[a.per]
        print("%s: p50 %.0f  p75 %.0f  p90 %.0f  p99 %.0f us; over 1 ms: %.0f%% of them, %.0f%% of "
              "their time; disk busy inside them: %.0f%% of their time"
              % (a.per, pct(v, .5), pct(v, .75), pct(v, .9), pct(v, .99),
                 100 * sum(x > 1000 for x in v) / len(v), 100 * sum(x for x in v if x > 1000) / sum(v),
                 100 * sum(inside) / sum(v)))


if __name__ == "__main__":
    main()
