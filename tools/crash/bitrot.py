#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
tools/crash/bitrot.py - the bit rot campaign of issue 27: a disk that returns
bad data without an error, copy after copy.

One RAID5 volume is made once (4 sparse member files): a source tree (this
repository's src, include, tools, docs and tests but its images), a few larger
files of random bytes and a few symlinks, with a manifest (path, size, sha256;
each directory's names; each link's target); then a clean `jgrfs umount`. The
owner of every array block is asked once from `jgrfs owners --json` on the
untouched volume; the member block of each array block and of each parity block
is computed as docs/FORMAT.md 2.1 says. A block is *used* when it has an owner
(file data or a kind of metadata); a parity block when a data block of its
line (the same block of each chunk of its row) is used; a member superblock
copy always.

Each copy i (its own random generator, seeded from SEED and i: any copy can be
run again alone with --only i) copies the four member files (sparse) and
changes 1-4 bytes (each XORed with a random non-zero value) in used blocks of
one member, or of two (about 40% of copies; then each gets at least one). The
block of each byte is drawn by kind: file data 40%, metadata 35% (a metadata
kind first, uniformly among those the member holds, then a block of it),
parity 15%, a member superblock copy 10%. Then, each step under a timeout:
  1. jgrfs fsck -n --degraded (exit code and output kept)
  2. jgrfs mount -f -o ro,degraded, in the background of this program (its
     exit status tells a death by a signal)
  3. a reader process: every file of the manifest read whole and its sha256
     compared, every symlink read, every directory listed and compared
  4. jgrfs status --json (the heals counted per member), jgrfs umount
With --degraded and -o degraded: a member both of whose superblock copies
were damaged is left out and the array read degraded, as an operator would
ask once told.
Sanitizer reports of every jgrfs process go to the copy's directory
(ASAN_OPTIONS/UBSAN_OPTIONS log_path, as tests/integration/fuse_lib.sh does).

Classes of a copy, first that applies:
  crash        a jgrfs process died by a signal, or a sanitizer report
  hang         a step over its timeout (killed; the mount cleared)
  silent-wrong a file read back wrong (or missing: ENOENT), a link or a
               directory listing wrong, with no error
  detected     an error and nothing wrong read: EIO (or another errno but
               ENOENT) reading a file, fsck -n not clean, the mount refused
  all-right    fsck clean, every file, link and directory right
A silent wrong read is *explained by file content* when every wrong thing is a
file (or a long symlink, whose target block is file data: docs/FORMAT.md) one
of whose content blocks was damaged: on a volume without data checksums
file content has no checksum, so RAID5 cannot tell which member lies (with
--data-checksums every silent wrong read with one member damaged fails).
Anything else (a listing, a short link, a file whose only damage was
metadata or parity) is *unexplained*: metadata
has a checksum and is healed from its row (BLK_CTL_HEAL_READ).

Exit status: 1 when a copy crashed or hung, or one member was damaged and a
read was silently wrong in a way not explained by file content (with
--expect-data-checksums: any silent wrong read with one member damaged);
0 otherwise; 2 bad use or the volume could not be made. The figures are
printed either way; one JSON line per copy in DIR/results.jsonl.

usage: bitrot.py --jgrfs PATH [--copies N] [--seed S] [--dir DIR] ...
"""
import argparse
import concurrent.futures
import errno
import hashlib
import json
import os
import queue
import random
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

BS = 4096
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NMEMBERS = 4
META_KINDS = ("directory", "symlink", "indirect", "xattr", "inode-table", "block-bitmap",
              "inode-bitmap", "group-descriptors", "superblock", "journal", "data-checksums")
# file content without a checksum of its own (FORMAT.md: a long symlink target
# is file data); damage in it is only caught by data checksums
DATA_KINDS = ("data", "symlink")
NOT_USED = ("free", "unclaimed", "outside")
CLASSES = ("crash", "hang", "silent-wrong", "detected", "all-right")


def die(msg):
    print(f"bitrot: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


def log(msg):
    print(msg, flush=True)


def run(cmd, logf, timeout, env=None):
    """Run cmd with stdout+stderr into logf; returns (rc, hung)."""
    with open(logf, "ab") as out:
        out.write(("$ " + " ".join(cmd) + "\n").encode())
        out.flush()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        try:
            return p.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            out.write(f"HANG: over {timeout} s, killed\n".encode())
            return p.returncode, True


# ---------------------------------------------------------------- the volume

def member_info(path):
    with open(path, "rb") as f:
        sb = f.read(BS)
    if struct.unpack_from("<I", sb, 0)[0] != 0x5352474A:
        die(f"{path}: not a member superblock")
    incompat, role, n, level, layout, chunk = struct.unpack_from("<IIIIII", sb, 0x3C)
    data_offset, data_blocks, array_blocks = struct.unpack_from("<QQQ", sb, 0x60)
    bitmap_blocks = struct.unpack_from("<I", sb, 0x7C)[0]
    return dict(role=role, n=n, level=level, layout=layout, chunk=chunk,
                data_offset=data_offset, data_blocks=data_blocks, array_blocks=array_blocks,
                bitmap_blocks=bitmap_blocks, sb_copy=bool(incompat & 1))


class Geometry:
    """docs/FORMAT.md 2.1: array blocks and parity lines to (role, member block)."""

    def __init__(self, info):
        self.n, self.level, self.chunk = info["n"], info["level"], info["chunk"]
        self.off, self.array_blocks = info["data_offset"], info["array_blocks"]
        self.npar = 2 if self.level == 6 else 1
        self.ndata = self.n - self.npar
        self.row_blocks = self.ndata * self.chunk

    def pd(self, row):
        return self.n - 1 if self.level == 4 else self.n - 1 - row % self.n

    def where(self, b):
        row, rest = divmod(b, self.row_blocks)
        d, k = divmod(rest, self.chunk)
        role = d if self.level == 4 else (self.pd(row) + self.npar + d) % self.n
        return role, self.off + row * self.chunk + k

    def parity(self, row, k):
        """[(role, member block, 'P'|'Q')] of line k of row."""
        pd = self.pd(row)
        mb = self.off + row * self.chunk + k
        out = [(pd, mb, "P")]
        if self.level == 6:
            out.append(((pd + 1) % self.n, mb, "Q"))
        return out


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


def source_files():
    out = subprocess.run(["git", "-C", REPO, "ls-files", "src", "include", "tools", "docs", "tests"],
                         capture_output=True, text=True)
    files = [p for p in out.stdout.split("\n") if p and not p.startswith("tests/images/")]
    if out.returncode != 0 or not files:  # not a git checkout: walk the directories
        files = []
        for top in ("src", "include", "tools", "docs"):
            for d, _dirs, names in os.walk(os.path.join(REPO, top)):
                files += [os.path.relpath(os.path.join(d, x), REPO) for x in names]
    return sorted(f for f in files if os.path.isfile(os.path.join(REPO, f))
                  and not os.path.islink(os.path.join(REPO, f)))


def make_volume(a, base, env):
    """mkfs, fill, manifest, clean umount, owners map. Returns (devs, manifest, owners, geo)."""
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    devs = [os.path.join(base, f"disk{i}.img") for i in range(NMEMBERS)]
    mnt = os.path.join(base, "mnt")
    os.mkdir(mnt)
    logf = os.path.join(base, "make.log")
    rc, _ = run([a.jgrfs, "mkfs", "-q", "--level", "5", "--chunk", a.chunk, "--size", a.member_size]
                + ["--data-checksums" if a.data_checksums else "--no-data-checksums"] + devs,
                logf, 300, env)
    if rc != 0:
        die(f"mkfs failed ({rc}): {logf}")
    rc, _ = run([a.jgrfs, "mount", "-q"] + devs + [mnt], logf, 120, env)
    if rc != 0:
        die(f"mount failed ({rc}): {logf}")
    rng = random.Random(f"bitrot-volume:{a.seed}")
    files, links = {}, {}
    try:
        for rel in source_files():
            dst = os.path.join(mnt, "tree", rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(os.path.join(REPO, rel), dst)
        os.makedirs(os.path.join(mnt, "big"))
        for i, mib in enumerate((1, 3, 5)):
            with open(os.path.join(mnt, "big", f"random{i}.bin"), "wb") as f:
                for _ in range(mib * 4):
                    f.write(rng.randbytes(256 << 10))
        # a short (in the inode) and a long (a block) symlink target
        os.symlink("tree/src", os.path.join(mnt, "link-short"))
        os.symlink("big/" + "x" * 120 + "/random0.bin", os.path.join(mnt, "link-long"))
        os.makedirs(os.path.join(mnt, "empty-dir"))
        os.sync()
        dirs = {}
        for d, dnames, fnames in os.walk(mnt):
            rel = os.path.relpath(d, mnt)
            dirs[rel] = sorted(dnames + fnames)
            for x in fnames:
                p = os.path.join(d, x)
                r = os.path.relpath(p, mnt)
                if os.path.islink(p):
                    links[r] = os.readlink(p)
                else:
                    files[r] = [os.path.getsize(p), sha256_file(p)]
            for x in dnames:
                p = os.path.join(d, x)
                if os.path.islink(p):
                    links[os.path.relpath(p, mnt)] = os.readlink(p)
    finally:
        rc, _ = run([a.jgrfs, "umount", "-t", "120", mnt], logf, 180, env)
    if rc != 0:
        die(f"jgrfs umount failed ({rc}): {logf}")
    manifest = {"files": files, "links": links, "dirs": dirs}
    with open(os.path.join(base, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    infos = [member_info(d) for d in devs]
    geo = Geometry(infos[0])
    rc, _ = run([a.jgrfs, "fsck", "-n"] + devs, logf, 300, env)
    if rc != 0:
        die(f"fsck -n of the new volume: exit {rc}: {logf}")
    ojson = os.path.join(base, "owners.json")
    with open(ojson, "wb") as out:
        p = subprocess.run([a.jgrfs, "owners", "--json", "--max", "10000000", "--block",
                            f"0-{geo.array_blocks - 1}"] + devs, stdout=out,
                           stderr=open(logf, "ab"), env=env, timeout=600)
    if p.returncode != 0:
        die(f"owners failed ({p.returncode}): {logf}")
    owners = json.load(open(ojson))
    log(f"volume: {len(files)} files ({sum(v[0] for v in files.values()) >> 10} KiB), "
        f"{len(dirs)} directories, {len(links)} links; RAID{geo.level} of {geo.n} members, "
        f"chunk {geo.chunk} blocks, data offset {geo.off}, {geo.array_blocks} array blocks")
    return devs, manifest, owners, geo, infos


def used_blocks(owners, geo, infos, devs):
    """{role: {kind: [(member block, array block or None, paths)]}}"""
    by_role = {r: {} for r in range(geo.n)}
    infos_devs = list(zip(infos, devs))
    lines = set()
    for rep in owners["reports"]:
        kind = rep["kind"]
        if kind in NOT_USED:
            continue
        paths = rep.get("paths") or []
        for b in range(rep["block"], rep["block"] + rep["count"]):
            role, mb = geo.where(b)
            by_role[role].setdefault(kind, []).append((mb, b, paths))
    # the journal and the inode tables are used by kind but hold nothing in
    # most of their blocks (never written, no inode in use): those that read
    # as zeros on the member are left out
    files = {i["role"]: open(dev, "rb") for i, dev in infos_devs}
    for role, kinds in by_role.items():
        for kind in ("journal", "inode-table"):
            keep = []
            for mb, b, paths in kinds.get(kind, []):
                files[role].seek(mb * BS)
                if files[role].read(BS).count(0) != BS:
                    keep.append((mb, b, paths))
            if keep:
                kinds[kind] = keep
            else:
                kinds.pop(kind, None)
    for f in files.values():
        f.close()
    for kinds in by_role.values():
        for blocks in kinds.values():
            for _mb, b, _paths in blocks:
                row, rest = divmod(b, geo.row_blocks)
                lines.add((row, rest % geo.chunk))
    for row, k in sorted(lines):
        for role, mb, pq in geo.parity(row, k):
            by_role[role].setdefault("parity", []).append((mb, None, [f"row {row} {pq}"]))
    for info in infos:
        copies = (0, 1) if info["sb_copy"] else (0,)
        by_role[info["role"]]["member-superblock"] = [(c, None, []) for c in copies]
    return by_role


# ---------------------------------------------------------------- one copy

def choose_damage(rng, by_role, role_path):
    two = rng.random() < 0.4
    roles = rng.sample(sorted(by_role), 2 if two else 1)
    nbytes = rng.randint(len(roles), 4)
    per = list(roles) + [rng.choice(roles) for _ in range(nbytes - len(roles))]
    out = []
    for role in per:
        kinds = by_role[role]
        x = rng.random()
        if x < 0.40 and "data" in kinds:
            kind = "data"
        elif x < 0.75 and any(k in kinds for k in META_KINDS):
            kind = rng.choice([k for k in META_KINDS if k in kinds])
        elif x < 0.90 and "parity" in kinds:
            kind = "parity"
        else:
            kind = "member-superblock"
        mb, ab, paths = rng.choice(kinds[kind])
        off = mb * BS + rng.randrange(BS)
        out.append(dict(member=role, path=os.path.basename(role_path[role]), offset=off,
                        member_block=mb, array_block=ab, kind=kind, paths=paths[:3],
                        xor=rng.randrange(1, 256)))
    return roles, out


def apply_damage(devs_by_role, damage):
    for d in damage:
        with open(devs_by_role[d["member"]], "r+b") as f:
            f.seek(d["offset"])
            old = f.read(1)[0]
            f.seek(d["offset"])
            f.write(bytes([old ^ d["xor"]]))
            d["old"], d["new"] = old, old ^ d["xor"]


def san_env(prefix):
    """The environment of jgrfs processes: sanitizer reports to prefix.PID (after
    the caller's own options: the last log_path counts)."""
    env = dict(os.environ)
    for var, extra in (("ASAN_OPTIONS", ""), ("UBSAN_OPTIONS", ":print_stacktrace=1")):
        env[var] = (env[var] + ":" if env.get(var) else "") + f"log_path={prefix}{extra}"
    return env


def mounted(mnt):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            x = line.split()
            if x[4] == mnt:
                return x[2]  # major:minor
    return None


def clear_mount(mnt, devno):
    """Abort the FUSE connection (a hung daemon) and detach the mount."""
    if devno:
        try:
            with open(f"/sys/fs/fuse/connections/{devno.split(':')[1]}/abort", "w") as f:
                f.write("1")
        except OSError:
            pass
    subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
    if mounted(mnt):
        subprocess.run(["umount", "-l", mnt], capture_output=True)


def san_reports(cdir):
    out = []
    for x in sorted(os.listdir(cdir)):
        if x.startswith("san."):
            with open(os.path.join(cdir, x), errors="replace") as f:
                txt = f.read()
            what = "sanitizer"
            for key in ("AddressSanitizer", "LeakSanitizer", "runtime error", "UndefinedBehavior"):
                if key in txt:
                    what = key
                    break
            out.append(f"{x}: {what}")
    return out


def run_copy(a, i, base_devs, by_role, geo, work, manifest_path):
    rng = random.Random(f"bitrot:{a.seed}:{i}")
    cdir = os.path.join(a.dir, "copies", f"{i:04d}")
    shutil.rmtree(cdir, ignore_errors=True)
    os.makedirs(cdir)
    devs = []
    for src in base_devs:
        dst = os.path.join(work, os.path.basename(src))
        subprocess.run(["cp", "--sparse=always", "--reflink=auto", src, dst], check=True)
        devs.append(dst)
    role_path = {}
    for d in devs:
        role_path[member_info(d)["role"]] = d
    roles, damage = choose_damage(rng, by_role, role_path)
    apply_damage(role_path, damage)
    env = san_env(os.path.join(cdir, "san"))
    rec = dict(copy=i, seed=a.seed, members=len(roles), damage=damage, steps={}, signals=[],
               hangs=[], eio=[], errors=[], wrong=[], healed={})
    t0 = time.time()

    # 1. fsck -n
    rc, hung = run([a.jgrfs, "fsck", "-n", "--degraded"] + devs, os.path.join(cdir, "fsck.log"),
                   a.timeout_fsck, env)
    rec["fsck"] = rc
    if hung:
        rec["hangs"].append("fsck")
    elif rc < 0 or rc > 128:
        rec["signals"].append(f"fsck: signal {-rc if rc < 0 else rc - 128}")

    # 2. a read-only mount, in the foreground of a child
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    mlog = open(os.path.join(cdir, "mount.log"), "ab")
    daemon = subprocess.Popen([a.jgrfs, "mount", "-f", "-o", "ro,degraded"] + devs + [mnt],
                              stdout=mlog, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    devno, deadline = None, time.time() + a.timeout_mount
    while time.time() < deadline:
        devno = mounted(mnt)
        if devno or daemon.poll() is not None:
            break
        time.sleep(0.05)
    rec["mount"] = "mounted" if devno else ("exit %s" % daemon.returncode
                                            if daemon.returncode is not None else "hang")
    if devno:
        # 3. read everything
        out = os.path.join(cdir, "read.json")
        rc, hung = run([sys.executable, os.path.abspath(__file__), "--read", manifest_path, mnt, out],
                       os.path.join(cdir, "read.log"), a.timeout_read, env)
        if hung:
            rec["hangs"].append("read")
            clear_mount(mnt, devno)
        elif rc != 0:
            rec["errors"].append(f"reader exit {rc}")
        else:
            r = json.load(open(out))
            rec["eio"], rec["errors"], rec["wrong"] = r["eio"], r["errors"], r["wrong"]
        # 4. heals, umount
        if mounted(mnt):
            st = subprocess.run([a.jgrfs, "status", "--json", mnt], capture_output=True, text=True,
                                env=env, timeout=30) if not hung else None
            if st is not None and st.stdout.startswith("{"):
                try:
                    for m in json.loads(st.stdout)["array"]["member_list"]:
                        c, u = m.get("read_errors_corrected", 0), m.get("read_errors_uncorrectable", 0)
                        if c or u or m.get("failed"):
                            rec["healed"][os.path.basename(m["name"])] = [c, u, m.get("failed", False)]
                except (ValueError, KeyError, TypeError):
                    pass
            rc, hung = run([a.jgrfs, "umount", "-t", str(a.timeout_umount - 5), mnt],
                           os.path.join(cdir, "umount.log"), a.timeout_umount, env)
            if hung or rc != 0:
                rec["errors"].append(f"umount exit {rc}")
                if hung:
                    rec["hangs"].append("umount")
                clear_mount(mnt, devno)
    elif rec["mount"] == "hang":
        rec["hangs"].append("mount")
    try:
        daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        rec["hangs"].append("daemon exit")
        daemon.kill()
        daemon.wait()
        clear_mount(mnt, mounted(mnt))
    mlog.close()
    rc = daemon.returncode
    rec["daemon"] = rc
    if rc < 0 and not ("daemon exit" in rec["hangs"] or "mount" in rec["hangs"]):
        rec["signals"].append(f"daemon: signal {-rc}")
    if mounted(mnt):
        clear_mount(mnt, mounted(mnt))
    rec["sanitizer"] = san_reports(cdir)
    rec["seconds"] = round(time.time() - t0, 2)

    # class
    rec["wrong_unexplained"] = unexplained(rec)
    if rec["signals"] or rec["sanitizer"]:
        rec["class"] = "crash"
    elif rec["hangs"]:
        rec["class"] = "hang"
    elif rec["wrong"]:
        rec["class"] = "silent-wrong"
    elif rec["eio"] or rec["errors"] or rec["fsck"] != 0 or rec["mount"] != "mounted":
        rec["class"] = "detected"
    else:
        rec["class"] = "all-right"
    for d in devs:
        os.unlink(d)
    if rec["class"] == "all-right" and not a.keep_logs:
        shutil.rmtree(cdir, ignore_errors=True)
    return rec


def unexplained(rec):
    """Wrong things not explained by damaged file content (unchecked without data checksums)."""
    paths = {p.lstrip("/") for d in rec["damage"] if d["kind"] in DATA_KINDS for p in d["paths"]}
    return len([w for w in rec["wrong"] if not (w["what"] in ("file", "link") and w["path"] in paths)])


def describe(rec):
    dmg = "; ".join(f"m{d['member']} b{d['member_block']}+{d['offset'] % BS}^{d['xor']:02x} {d['kind']}"
                    + (f" ab{d['array_block']}" if d["array_block"] is not None else "")
                    + (f" {d['paths'][0]}" if d["paths"] else "") for d in rec["damage"])
    extra = []
    if rec["wrong"]:
        extra.append("WRONG " + ",".join(w["path"] for w in rec["wrong"][:3])
                     + ("" if rec["wrong_unexplained"] else " (file content)"))
    if rec["eio"]:
        extra.append(f"EIO x{len(rec['eio'])}")
    if rec["fsck"]:
        extra.append(f"fsck {rec['fsck']}")
    if rec["mount"] != "mounted":
        extra.append(f"mount {rec['mount']}")
    if rec["healed"]:
        extra.append("healed " + ",".join(f"{k}:{v[0]}" for k, v in rec["healed"].items()))
    extra += rec["signals"] + [f"HANG {h}" for h in rec["hangs"]] + rec["sanitizer"]
    return (f"copy {rec['copy']:4d} seed {rec['seed']} {rec['class']:12s} {rec['members']}m "
            f"[{dmg}] {' '.join(extra)} ({rec['seconds']} s)")


# ---------------------------------------------------------------- the reader

def reader(manifest_path, mnt, out):
    m = json.load(open(manifest_path))
    eio, errors, wrong = [], [], []

    def err(path, what, e):
        if e.errno == errno.ENOENT:
            wrong.append(dict(path=path, what=what, why="ENOENT"))
        elif e.errno == errno.EIO:
            eio.append(path)
        else:
            errors.append(f"{path}: {errno.errorcode.get(e.errno, e.errno)}")

    for path, (size, sha) in sorted(m["files"].items()):
        try:
            got = sha256_file(os.path.join(mnt, path))
            if got != sha:
                wrong.append(dict(path=path, what="file", why="sha256"))
        except OSError as e:
            err(path, "file", e)
    for path, target in sorted(m["links"].items()):
        try:
            if os.readlink(os.path.join(mnt, path)) != target:
                wrong.append(dict(path=path, what="link", why="target"))
        except OSError as e:
            err(path, "link", e)
    for path, names in sorted(m["dirs"].items()):
        try:
            if sorted(os.listdir(os.path.join(mnt, path))) != names:
                wrong.append(dict(path=path, what="dir", why="names"))
        except OSError as e:
            err(path, "dir", e)
    json.dump(dict(eio=eio, errors=errors, wrong=wrong), open(out, "w"))


# ---------------------------------------------------------------- summary

def summary(recs, expect_csum):
    for r in recs:
        r["wrong_unexplained"] = unexplained(r)

    def row(label, sel):
        c = {k: 0 for k in CLASSES}
        for r in sel:
            c[r["class"]] += 1
        return f"{label:26s} {len(sel):6d} " + " ".join(f"{c[k]:12d}" for k in CLASSES)

    head = f"{'':26s} {'copies':>6s} " + " ".join(f"{k:>12s}" for k in CLASSES)
    lines = ["", "bit rot campaign: %d copies" % len(recs), head]
    lines.append(row("all", recs))
    for n in (1, 2):
        lines.append(row(f"{n} member(s) damaged", [r for r in recs if r["members"] == n]))
    lines.append("")
    lines.append("by kind of block damaged (a copy counts under each kind it had):")
    lines.append(head)
    kinds = sorted({d["kind"] for r in recs for d in r["damage"]})
    for k in kinds:
        for n in (1, 2):
            sel = [r for r in recs if r["members"] == n and any(d["kind"] == k for d in r["damage"])]
            if sel:
                lines.append(row(f"{k} ({n}m)", sel))
    for n in (1, 2):
        sel = [r for r in recs if r["members"] == n and all(d["kind"] not in DATA_KINDS for d in r["damage"])]
        lines.append(row(f"no file content hit ({n}m)", sel))
    one = [r for r in recs if r["members"] == 1]
    sw_data = [r for r in one if r["class"] == "silent-wrong" and not r["wrong_unexplained"]]
    sw_other = [r for r in one if r["class"] == "silent-wrong" and r["wrong_unexplained"]]
    lines.append("")
    lines.append(f"crashes {sum(r['class'] == 'crash' for r in recs)}, "
                 f"hangs {sum(r['class'] == 'hang' for r in recs)}")
    lines.append(f"silent wrong reads, one member damaged, all explained by damaged file content (data, long symlink): "
                 f"{len(sw_data)}" + ("" if expect_csum else " (expected without data checksums)"))
    lines.append(f"silent wrong reads, one member damaged, not explained by file content: {len(sw_other)}")
    two = [r for r in recs if r["members"] == 2 and r["class"] == "silent-wrong"]
    lines.append(f"silent wrong reads, two members damaged: {len(two)} "
                 f"(not explained by file content: {sum(bool(r['wrong_unexplained']) for r in two)})")
    lines.append(f"copies with a heal counted (status: read errors corrected): "
                 f"{sum(bool(r['healed']) for r in recs)}; fsck -n not clean: "
                 f"{sum(r['fsck'] != 0 for r in recs)}; an EIO reading: {sum(bool(r['eio']) for r in recs)}; "
                 f"mount refused: {sum(r['mount'] != 'mounted' for r in recs)}")
    t = [r["seconds"] for r in recs]
    if t:
        lines.append(f"seconds per copy: mean {sum(t) / len(t):.1f}, max {max(t):.1f}")
    fail = [r for r in recs if failed(r, expect_csum)]
    if fail:
        lines.append("FAIL: copies " + " ".join(str(r["copy"]) for r in fail[:40]))
    else:
        lines.append("PASS: no crash, no hang, no silent wrong read with one member damaged"
                     + ("" if expect_csum else " but from file content (no data checksums)"))
    return "\n".join(lines), bool(fail)


def failed(r, expect_csum):
    return r["class"] in ("crash", "hang") or (
        r["class"] == "silent-wrong" and r["members"] == 1 and (r["wrong_unexplained"] or expect_csum))


def show_failed(d, recs, expect_csum):
    """The last lines of each log of the first failed copies."""
    for r in [r for r in recs if failed(r, expect_csum)][:5]:
        cdir = os.path.join(d, "copies", f"{r['copy']:04d}")
        log(f"--- copy {r['copy']}: {r['class']}; wrong {r['wrong'][:5]}")
        for x in sorted(os.listdir(cdir)) if os.path.isdir(cdir) else []:
            with open(os.path.join(cdir, x), errors="replace") as f:
                tail = f.read().splitlines()[-25:]
            log(f"--- {cdir}/{x}\n" + "\n".join(tail))


def main():
    ap = argparse.ArgumentParser(description="bit rot campaign (issue 27)")
    ap.add_argument("--jgrfs", help="the jgrfs binary (a sanitizer build: build/tools/jgrfs)")
    ap.add_argument("--copies", type=int, default=1000)
    ap.add_argument("--first", type=int, default=0, help="first copy number (seed ranges add up)")
    ap.add_argument("--only", type=int, help="run this one copy")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default="/dev/shm/jgrfs-bitrot",
                    help="work directory (member copies, logs, results.jsonl)")
    ap.add_argument("--jobs", type=int, default=1, help="copies at a time")
    ap.add_argument("--member-size", default="64M")
    ap.add_argument("--chunk", default="64K")
    ap.add_argument("--reuse", action="store_true", help="keep DIR/base if it is there")
    ap.add_argument("--keep-logs", action="store_true", help="keep logs of all-right copies too")
    ap.add_argument("--expect-data-checksums", action="store_true",
                    help="a silent wrong read of file content with one member damaged fails too "
                         "(once the volume has data checksums)")
    ap.add_argument("--data-checksums", action="store_true",
                    help="make the volume with mkfs --data-checksums (implies "
                         "--expect-data-checksums; use another --dir than a run without)")
    ap.add_argument("--timeout-fsck", type=int, default=180)
    ap.add_argument("--timeout-mount", type=int, default=60)
    ap.add_argument("--timeout-read", type=int, default=180)
    ap.add_argument("--timeout-umount", type=int, default=90)
    ap.add_argument("--summary", action="store_true", help="only sum up DIR/results.jsonl")
    ap.add_argument("--read", nargs=3, metavar=("MANIFEST", "MNT", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.data_checksums:
        a.expect_data_checksums = True
    if a.read:
        reader(*a.read)
        return 0
    a.dir = os.path.abspath(a.dir)
    results = os.path.join(a.dir, "results.jsonl")
    if a.summary:
        recs = [json.loads(x) for x in open(results)]
        text, fail = summary(recs, a.expect_data_checksums)
        log(text)
        return 1 if fail else 0
    if not a.jgrfs:
        ap.error("--jgrfs is needed")
    a.jgrfs = os.path.abspath(a.jgrfs)
    os.makedirs(a.dir, exist_ok=True)
    base = os.path.join(a.dir, "base")
    env = san_env(os.path.join(a.dir, "san-base"))
    t0 = time.time()
    if a.reuse and os.path.exists(os.path.join(base, "owners.json")):
        base_devs = [os.path.join(base, f"disk{i}.img") for i in range(NMEMBERS)]
        owners = json.load(open(os.path.join(base, "owners.json")))
        infos = [member_info(d) for d in base_devs]
        geo = Geometry(infos[0])
    else:
        base_devs, _m, owners, geo, infos = make_volume(a, base, env)
        if os.path.exists(results):  # a new volume: a new campaign
            os.rename(results, results + ".old")
    san = [x for x in os.listdir(a.dir) if x.startswith("san-base.")]
    if san:
        die(f"sanitizer report while making the volume: {a.dir}/{san[0]}")
    by_role = used_blocks(owners, geo, infos, base_devs)
    for role in sorted(by_role):
        log(f"member {role}: used blocks " + ", ".join(
            f"{k} {len(v)}" for k, v in sorted(by_role[role].items())))
    log(f"volume ready in {time.time() - t0:.0f} s; seed {a.seed}")
    # one work directory (member copies, mount point) per job
    works = queue.Queue()
    for j in range(max(1, a.jobs)):
        work = os.path.join(a.dir, f"work{j}")
        os.makedirs(work, exist_ok=True)
        if mounted(os.path.join(work, "mnt")):
            clear_mount(os.path.join(work, "mnt"), mounted(os.path.join(work, "mnt")))
        works.put(work)
    copies = [a.only] if a.only is not None else range(a.first, a.first + a.copies)
    recs = []
    lock = threading.Lock()
    with open(results, "a") as res:
        def one(i):
            work = works.get()
            try:
                rec = run_copy(a, i, base_devs, by_role, geo, work, os.path.join(base, "manifest.json"))
            finally:
                works.put(work)
            with lock:
                res.write(json.dumps(rec) + "\n")
                res.flush()
                recs.append(rec)
                log(describe(rec))

        with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as ex:
            for f in [ex.submit(one, i) for i in copies]:
                f.result()
    recs.sort(key=lambda r: r["copy"])
    text, fail = summary(recs, a.expect_data_checksums)
    if fail:
        show_failed(a.dir, recs, a.expect_data_checksums)
    log(text)
    log(f"logs: {a.dir}/copies (all-right copies' logs removed), results: {results}")
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
