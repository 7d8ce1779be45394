#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
tests/images/volume.py - the content of the golden images, and what a test
reads back from them.

  volume.py populate DIR      every kind of inode, deterministic content
  volume.py late DIR          the changes after the populate, before a kill -9:
                              fsynced ones, an orphan (a file unlinked while an
                              open descriptor holds it: the process stays
                              asleep holding it; kill it after the daemon),
                              and writes never synced
  volume.py verify DIR [late] that DIR holds what populate (and late, but for
                              its unsynced file) made: every byte, link,
                              target, xattr and node; exits 1 naming the
                              first difference
  volume.py manifest DIR      one line per path, sorted: type, mode, owner,
                              links, size, mtime, inode number, then the
                              sha256 of the content (files), the target
                              (symlinks) or the device number, and the xattrs;
                              an mtime at or after $MANIFEST_SINCE (seconds
                              since the epoch) shows as "now"

The content of file NAME block i is the text "NAME block i " repeated, so
every block differs from every other (a block written to the wrong place shows
in the hash) and the compressed images stay small.
"""
import hashlib
import os
import socket
import stat
import sys
import time

BS = 4096


def content(name, start, length):
    """Bytes start .. start+length of the deterministic content of @name."""
    out = bytearray()
    blk = start // BS
    while len(out) < length:
        text = f"{name} block {blk} ".encode()
        block = (text * (BS // len(text) + 1))[:BS]
        lo = start - blk * BS if not out else 0
        out += block[lo:]
        blk += 1
    return bytes(out[:length])


def write_file(path, name, pieces, size=None, mode=0o644):
    """Write (offset, length) pieces of @name's content; then truncate to size."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, mode)
    try:
        for off, length in pieces:
            os.pwrite(fd, content(name, off, length), off)
        if size is not None:
            os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


T0 = 1767225600          # 2026-01-01 00:00:00 UTC: mtimes the manifest shows


def populate(root):
    j = lambda *p: os.path.join(root, *p)
    write_file(j("small"), "small", [(0, 10000)])
    write_file(j("direct11"), "direct11", [(0, 11 * BS)])
    # 768 blocks: the single indirect block and the double one
    write_file(j("indirect"), "indirect", [(0, 768 * BS)])
    # holes: data at 0, at 1 MiB, a partial block at 8 MiB + 100, a hole at the end
    write_file(j("sparse"), "sparse", [(0, BS), (1 << 20, 2 * BS), ((8 << 20) + 100, 3000)],
               size=(9 << 20) + 5000)
    write_file(j("empty"), "empty", [])
    os.makedirs(j("dir", "big"))
    for i in range(400):
        write_file(j("dir", "big", f"entry-{i:04d}"), f"entry-{i:04d}", [(0, 20 + i)])
    for i in range(5):
        os.mkdir(j("dir", "big", f"sub-{i}"))
    os.makedirs(j("dir", "nested", "a", "b", "c"))
    write_file(j("dir", "nested", "a", "b", "c", "deep.txt"), "deep", [(0, 5000)])
    os.mkdir(j("links"))
    os.symlink("../small", j("links", "short"))
    os.symlink("/" + "/".join(f"long-target-component-{i:02d}" for i in range(12)),
               j("links", "long"))
    write_file(j("links", "hard1"), "hard", [(0, 6000)])
    os.link(j("links", "hard1"), j("links", "hard2"))
    os.link(j("links", "hard1"), j("hard3"))
    write_file(j("xattr"), "xattr", [(0, 100)])
    os.setxattr(j("xattr"), "user.color", b"blue")
    os.setxattr(j("xattr"), "user.empty", b"")
    os.setxattr(j("xattr"), "user.big", content("xattr-value", 0, 2000))
    os.setxattr(j("dir"), "user.dir", b"on a directory")
    os.mkdir(j("special"))
    os.mkfifo(j("special", "fifo"))
    os.mknod(j("special", "null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(j("special", "loop"), 0o660 | stat.S_IFBLK, os.makedev(7, 0))
    s = socket.socket(socket.AF_UNIX)
    s.bind(j("special", "sock"))
    s.close()
    write_file(j("owned"), "owned", [(0, 300)], mode=0o600)
    os.chown(j("owned"), 1000, 1000)
    os.chmod(j("owned"), 0o4750)
    # fixed mtimes, children before parents
    for dirpath, dirs, files in os.walk(root, topdown=False):
        for n in files + dirs:
            os.utime(os.path.join(dirpath, n), (T0, T0), follow_symlinks=False)
    os.utime(root, (T0, T0))
    for dirpath, dirs, files in os.walk(root):
        for n in files + dirs:
            p = os.path.join(dirpath, n)
            m = os.lstat(p).st_mode
            if stat.S_ISREG(m) or stat.S_ISDIR(m):
                fsync_path(p)
    fsync_path(root)


def late(root):
    j = lambda *p: os.path.join(root, *p)
    # synced changes: an overwrite in place, an append, new files, a rename, an unlink
    write_file(j("small"), "small-v2", [(4096, 100)])
    write_file(j("indirect"), "indirect", [(768 * BS, 40 * BS)])
    os.mkdir(j("late"))
    for i in range(20):
        write_file(j("late", f"new-{i:02d}"), f"new-{i:02d}", [(0, 3000 + 1000 * i)])
    os.rename(j("dir", "big", "entry-0007"), j("late", "moved"))
    os.unlink(j("links", "hard2"))
    os.removexattr(j("xattr"), "user.color")
    fsync_path(j("xattr"))
    fsync_path(j("late"))
    fsync_path(j("dir", "big"))
    fsync_path(j("links"))
    # the orphan: written, synced, unlinked while open; the unlink committed
    fd = os.open(j("orphan"), os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(fd, content("orphan", 0, 100 * BS), 0)
    os.fsync(fd)
    os.unlink(j("orphan"))
    fsync_path(root)
    # never synced
    with open(j("unsynced"), "wb") as f:
        f.write(content("unsynced", 0, 50000))
    print("late: done, holding the orphan open", flush=True)
    while True:
        time.sleep(60)


def expect_file(path, pieces, size):
    """@path holds @pieces ((offset, name) runs of content) and zeros elsewhere."""
    want = bytearray(size)
    for off, length, name in pieces:
        want[off:off + length] = content(name, off, length)
    with open(path, "rb") as f:
        have = f.read()
    if have != bytes(want):
        diff = next((i for i in range(min(len(have), size)) if have[i] != want[i]), None)
        raise AssertionError(f"{path}: size {len(have)} (want {size}), first difference "
                             f"at byte {diff}")


def verify(root, with_late=False):
    j = lambda *p: os.path.join(root, *p)
    small = [(0, 10000, "small")] + ([(4096, 100, "small-v2")] if with_late else [])
    expect_file(j("small"), small, 10000)
    expect_file(j("direct11"), [(0, 11 * BS, "direct11")], 11 * BS)
    nind = 808 if with_late else 768
    expect_file(j("indirect"), [(0, nind * BS, "indirect")], nind * BS)
    expect_file(j("sparse"), [(0, BS, "sparse"), (1 << 20, 2 * BS, "sparse"),
                              ((8 << 20) + 100, 3000, "sparse")], (9 << 20) + 5000)
    expect_file(j("empty"), [], 0)
    for i in range(400):
        n = f"entry-{i:04d}"
        p = j("late", "moved") if with_late and i == 7 else j("dir", "big", n)
        expect_file(p, [(0, 20 + i, n)], 20 + i)
    if with_late and os.path.exists(j("dir", "big", "entry-0007")):
        raise AssertionError("dir/big/entry-0007 still there after its rename")
    for i in range(5):
        assert os.path.isdir(j("dir", "big", f"sub-{i}")), f"dir/big/sub-{i}"
    expect_file(j("dir", "nested", "a", "b", "c", "deep.txt"), [(0, 5000, "deep")], 5000)
    assert os.readlink(j("links", "short")) == "../small", "links/short"
    assert os.readlink(j("links", "long")) == \
        "/" + "/".join(f"long-target-component-{i:02d}" for i in range(12)), "links/long"
    hard = [j("links", "hard1"), j("hard3")] + ([] if with_late else [j("links", "hard2")])
    for p in hard:
        expect_file(p, [(0, 6000, "hard")], 6000)
        assert os.stat(p).st_nlink == len(hard), f"{p}: {os.stat(p).st_nlink} links"
        assert os.stat(p).st_ino == os.stat(hard[0]).st_ino, f"{p}: not a hard link"
    if with_late and os.path.exists(j("links", "hard2")):
        raise AssertionError("links/hard2 still there after its unlink")
    expect_file(j("xattr"), [(0, 100, "xattr")], 100)
    want = {"user.empty": b"", "user.big": content("xattr-value", 0, 2000)}
    if not with_late:
        want["user.color"] = b"blue"
    have = {x: os.getxattr(j("xattr"), x) for x in os.listxattr(j("xattr"))}
    assert have == want, f"xattr: {sorted(have)} differ from {sorted(want)}"
    assert os.getxattr(j("dir"), "user.dir") == b"on a directory", "dir xattr"
    for n, kind, rdev in (("fifo", stat.S_IFIFO, None), ("null", stat.S_IFCHR, (1, 3)),
                          ("loop", stat.S_IFBLK, (7, 0)), ("sock", stat.S_IFSOCK, None)):
        st = os.lstat(j("special", n))
        assert stat.S_IFMT(st.st_mode) == kind, f"special/{n}: mode {st.st_mode:o}"
        if rdev:
            assert (os.major(st.st_rdev), os.minor(st.st_rdev)) == rdev, f"special/{n}"
    st = os.stat(j("owned"))
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (1000, 1000, 0o4750), "owned"
    expect_file(j("owned"), [(0, 300, "owned")], 300)
    if with_late:
        for i in range(20):
            expect_file(j("late", f"new-{i:02d}"), [(0, 3000 + 1000 * i, f"new-{i:02d}")],
                        3000 + 1000 * i)
        assert not os.path.exists(j("orphan")), "the orphan is still named"
    print(f"verify: {root}: every file as written" + (" (with the late changes)"
                                                       if with_late else ""))


def manifest(root):
    now = int(os.environ.get("MANIFEST_SINCE", "0")) * 10**9 or time.time_ns()
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        names = sorted(files + dirs)
        if dirpath == root:
            names.insert(0, "")
        for n in names:
            p = os.path.join(dirpath, n) if n else dirpath
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            kind = {stat.S_IFREG: "f", stat.S_IFDIR: "d", stat.S_IFLNK: "l",
                    stat.S_IFCHR: "c", stat.S_IFBLK: "b", stat.S_IFIFO: "p",
                    stat.S_IFSOCK: "s"}[stat.S_IFMT(st.st_mode)]
            # what a repair of this run changed has this run's time
            mtime = "now" if st.st_mtime_ns >= now else st.st_mtime_ns
            line = (f"{rel} {kind} {stat.S_IMODE(st.st_mode):04o} {st.st_uid}:{st.st_gid}"
                    f" n={st.st_nlink} size={st.st_size} mtime={mtime} ino={st.st_ino}")
            if kind == "f":
                h = hashlib.sha256()
                with open(p, "rb") as f:
                    while True:
                        b = f.read(1 << 20)
                        if not b:
                            break
                        h.update(b)
                line += " sha256=" + h.hexdigest()[:16]
            elif kind == "l":
                line += " -> " + os.readlink(p)
            elif kind in "cb":
                line += f" rdev={os.major(st.st_rdev)},{os.minor(st.st_rdev)}"
            if kind != "l":
                for x in sorted(os.listxattr(p, follow_symlinks=False)):
                    v = os.getxattr(p, x, follow_symlinks=False)
                    line += f" {x}=" + (hashlib.sha256(v).hexdigest()[:16] if len(v) > 32
                                        else v.decode(errors="backslashreplace"))
            print(line)


if __name__ == "__main__":
    cmds = {"populate": populate, "late": late, "manifest": manifest, "verify": verify}
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in cmds or \
            (len(sys.argv) == 4 and sys.argv[1:4:2] != ["verify", "late"]):
        print(__doc__.strip())
        sys.exit(2)
    try:
        cmds[sys.argv[1]](sys.argv[2], *([True] if len(sys.argv) == 4 else []))
    except AssertionError as e:
        print(f"volume.py {sys.argv[1]}: FAIL: {e}")
        sys.exit(1)
