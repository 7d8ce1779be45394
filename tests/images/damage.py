#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
tests/images/damage.py - damage a RAID5 volume the way a bad disk, a bug or an
attacker would, written from docs/FORMAT.md alone (no code of ours): the
damaged images of tests/images are made by something else than the code that
reads them.

usage: damage.py KIND MEMBER...   (the members of a cleanly stopped RAID5 array)

KIND:
  bbitmap INO     clear, in its group's block bitmap, the bit of the first
                  data block of inode INO (the block stays in use)
  nlink INO N     set the link count of inode INO to N
  dirent NAME INO point the root directory's entry NAME at inode INO
  itable-crc INO  change a byte of inode INO's mode without fixing the table
                  block's crc
  itable-tear INO fill inode INO's 256 bytes with 0xa5 (a torn write), crc
                  left stale
  member-sb ROLE  change a byte of member ROLE's superblock copy 0 (its crc no
                  longer matches)

Changes of array blocks keep the P parity of their row (FORMAT.md 2.1) and,
but for the crc kinds, the block's crc32c (FORMAT.md 1) right.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from format_reader import BS, crc32c, seed_of  # noqa: E402


def fail(msg):
    print("damage: " + msg, file=sys.stderr)
    sys.exit(1)


class Array:
    """A RAID5 array of member files (FORMAT.md 2.1, 2.2), read and written."""

    def __init__(self, paths):
        self.files = {}
        for p in paths:
            f = open(p, "r+b")
            sb = f.read(BS)
            incompat, role, n, level, layout, chunk = struct.unpack_from("<IIIIII", sb, 0x3C)
            if level != 5:
                fail(f"{p}: level {level}; only RAID5 is supported")
            self.n, self.chunk = n, chunk
            self.data_offset = struct.unpack_from("<Q", sb, 0x60)[0]
            self.files[role] = f
        if sorted(self.files) != list(range(self.n)):
            fail(f"members {sorted(self.files)} of {self.n}")
        self.ndata = self.n - 1

    def _where(self, b):
        row = b // (self.ndata * self.chunk)
        d = (b % (self.ndata * self.chunk)) // self.chunk
        pd = self.n - 1 - row % self.n
        mblk = self.data_offset + row * self.chunk + b % self.chunk
        return (pd + 1 + d) % self.n, pd, mblk

    def _rw(self, role, mblk, data=None):
        f = self.files[role]
        f.seek(mblk * BS)
        if data is None:
            return f.read(BS)
        f.write(data)

    def read(self, b):
        role, _pd, mblk = self._where(b)
        return self._rw(role, mblk)

    def write(self, b, data):
        role, pd, mblk = self._where(b)
        old = self._rw(role, mblk)
        p = bytearray(self._rw(pd, mblk))
        for i in range(BS):
            p[i] ^= old[i] ^ data[i]
        self._rw(role, mblk, bytes(data))
        self._rw(pd, mblk, bytes(p))

    def close(self):
        for f in self.files.values():
            f.flush()
            os.fsync(f.fileno())
            f.close()


class Fs:
    """The filesystem on the array (FORMAT.md 4)."""

    def __init__(self, arr):
        self.arr = arr
        sb = arr.read(0)
        self.seed = seed_of(sb[0x80:0x90])
        (self.bpg, self.ipg) = struct.unpack_from("<II", sb, 0x30)
        self.first_group = struct.unpack_from("<Q", sb, 0x60)[0]
        self.hash_seed = struct.unpack_from("<Q", sb, 0xD0)[0]

    def seal(self, blk):
        """Recompute the crc of a metadata block (FORMAT.md 1)."""
        blk[0x18:0x1C] = b"\0\0\0\0"
        struct.pack_into("<I", blk, 0x18, crc32c(self.seed, bytes(blk)))

    def inode_loc(self, ino):
        g, s = divmod(ino - 1, self.ipg)
        return self.first_group + g * self.bpg + 2 + s // 15, 256 * (s % 15 + 1)

    def inode(self, ino):
        b, off = self.inode_loc(ino)
        return bytearray(self.arr.read(b)), b, off

    def bmap(self, ino_blk, off, logical):
        """Array block of a directory or file's logical block (direct or single indirect)."""
        ptrs = struct.unpack_from("<14Q", ino_blk, off + 0x90)
        if logical < 11:
            return ptrs[logical]
        if logical < 11 + 508 and ptrs[11]:
            ind = self.arr.read(ptrs[11])
            return struct.unpack_from("<Q", ind, 32 + 8 * (logical - 11))[0]
        fail(f"logical block {logical} is past the single indirect block")


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2)
    kind, args = argv[1], argv[2:]
    nargs = {"bbitmap": 1, "nlink": 2, "dirent": 2, "itable-crc": 1, "itable-tear": 1, "member-sb": 1}
    if kind not in nargs:
        fail(f"unknown kind {kind}")
    params, members = args[:nargs[kind]], args[nargs[kind]:]
    if kind == "member-sb":
        role = int(params[0])
        for p in members:
            with open(p, "r+b") as f:
                if struct.unpack_from("<I", f.read(BS), 0x40)[0] == role:
                    f.seek(0x90)
                    b = f.read(1)
                    f.seek(0x90)
                    f.write(bytes([b[0] ^ 0x01]))
                    print(f"damage: member {role} ({p}): superblock copy 0 byte 0x90 changed")
                    return
        fail(f"no member with role {role}")
    arr = Array(members)
    fs = Fs(arr)
    if kind == "bbitmap":
        ino = int(params[0])
        blk, b, off = fs.inode(ino)
        data = fs.bmap(blk, off, 0)
        g, bit = divmod(data - fs.first_group, fs.bpg)
        bb_no = fs.first_group + g * fs.bpg
        bb = bytearray(arr.read(bb_no))
        if not bb[64 + bit // 8] & (1 << bit % 8):
            fail(f"block {data} is already free in the bitmap")
        bb[64 + bit // 8] &= ~(1 << bit % 8) & 0xFF
        fs.seal(bb)
        arr.write(bb_no, bb)
        print(f"damage: block {data} (inode {ino} block 0) cleared in the bitmap of group {g}")
    elif kind == "nlink":
        ino, n = int(params[0]), int(params[1])
        blk, b, off = fs.inode(ino)
        old = struct.unpack_from("<I", blk, off + 4)[0]
        struct.pack_into("<I", blk, off + 4, n)
        fs.seal(blk)
        arr.write(b, blk)
        print(f"damage: inode {ino} links {old} -> {n}")
    elif kind == "dirent":
        name, ino = params[0].encode(), int(params[1])
        rblk, _b, roff = fs.inode(1)
        buckets = struct.unpack_from("<I", rblk, roff + 0x88)[0]
        for lb in range(65, 65 + buckets):
            bno = fs.bmap(rblk, roff, lb)
            bk = bytearray(arr.read(bno))
            count, used = struct.unpack_from("<HH", bk, 0x24)
            pos = 0x28
            for _ in range(count):
                _h, eino, nlen, _t = struct.unpack_from("<QQBB", bk, pos)
                if bk[pos + 18:pos + 18 + nlen] == name:
                    struct.pack_into("<Q", bk, pos + 8, ino)
                    fs.seal(bk)
                    arr.write(bno, bk)
                    print(f"damage: root entry {params[0]} inode {eino} -> {ino}")
                    return
                pos += 18 + nlen
        fail(f"no entry {params[0]} in the root directory")
    elif kind == "itable-crc":
        ino = int(params[0])
        blk, b, off = fs.inode(ino)
        blk[off + 1] ^= 0x01        # the mode's permission bits
        arr.write(b, blk)
        print(f"damage: inode {ino} mode changed in table block {b}, crc left stale")
    elif kind == "itable-tear":
        ino = int(params[0])
        blk, b, off = fs.inode(ino)
        blk[off:off + 256] = b"\xa5" * 256
        arr.write(b, blk)
        print(f"damage: inode {ino} overwritten in table block {b}, crc left stale")
    arr.close()


if __name__ == "__main__":
    main(sys.argv)
