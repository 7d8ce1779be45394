#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
tests/integration/format_reader.py - an independent reader of docs/FORMAT.md.

Written from the document alone (no code of ours, no ISA-L): it checks what a
reader needs to find and verify a volume's metadata -- the CRC-32C parameters and
seeding (section "Conventions"), the block header (1), the member layout and
superblock copies (2.1, 2.2), the bitmap blocks (2.3), the array block mapping
and P parity (2.1), the filesystem superblock (4.2), group descriptors (4.3),
bitmaps (4.4), the journal superblock (3.2) and, with DATA_CSUM, every data
checksum block and every set slot against its block (4.9). It prints what it read and
exits 1 naming the first check that failed, so a change of the format that the
document does not follow fails `make test`.

usage: format_reader.py MEMBER...   (member files, any order)
"""
import struct
import sys

BS = 4096


def crc32c(crc, data):
    """CRC-32C, reflected polynomial 0x82F63B78, from @crc, no final xor."""
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


def seed_of(uuid):
    return (~crc32c(0xFFFFFFFF, uuid) & 0xFFFFFFFF) or 0x4A475246


def fail(msg):
    print("format_reader: FAIL: " + msg)
    sys.exit(1)


def check_block(blk, magic, home, seed, what):
    """Section 1: magic -> crc -> version -> home address."""
    m, ver, _flags, seq, blkno, crc = struct.unpack_from("<IHHQQI", blk, 0)
    if m != magic:
        fail(f"{what}: magic {m:#x}, expected {magic:#x}")
    zeroed = bytearray(blk)
    zeroed[0x18:0x1C] = b"\0\0\0\0"
    if crc32c(seed, zeroed) != crc:
        fail(f"{what}: crc {crc:#x} does not match the document's CRC-32C")
    if ver != 1:
        fail(f"{what}: version {ver}")
    if blkno != home:
        fail(f"{what}: home {blkno}, expected {home}")
    return seq


assert (~crc32c(0xFFFFFFFF, b"123456789") & 0xFFFFFFFF) == 0xE3069283


def main(paths):
    members = {}
    for p in paths:
        with open(p, "rb") as f:
            f.seek(0)
            copies = [f.read(BS), f.read(BS)]
        uuid = copies[0][0x20:0x30]
        seed = seed_of(uuid)
        ev = [check_block(copies[c], 0x5352474A, c, seed, f"{p} superblock copy {c}")
              for c in (0, 1)]
        if ev[0] != ev[1]:
            fail(f"{p}: copies at events {ev[0]} and {ev[1]} after a clean stop")
        sb = copies[0]
        incompat, role, n, level, layout, chunk = struct.unpack_from("<IIIIII", sb, 0x3C)
        policy, state, flags = struct.unpack_from("<III", sb, 0x54)
        data_offset, data_blocks, array_blocks = struct.unpack_from("<QQQ", sb, 0x60)
        region_blocks, bm_blocks, regions = struct.unpack_from("<IIQ", sb, 0x78)
        if incompat not in (1, 5):
            fail(f"{p}: feature_incompat {incompat:#x}, expected SB_COPY (and SYNCING)")
        (sync_rows,) = struct.unpack_from("<Q", sb, 0xA8)
        if (incompat & 4) != 0 and sync_rows >= data_blocks // chunk:
            fail(f"{p}: SYNCING with sync_rows {sync_rows}, past the last row")
        if (incompat & 4) == 0 and sync_rows:
            fail(f"{p}: sync_rows {sync_rows} without SYNCING")
        ndata = n - (2 if level == 6 else 1)
        if array_blocks != data_blocks // chunk * ndata * chunk:
            fail(f"{p}: array_blocks {array_blocks} does not follow 2.2")
        first_dat = -(-(2 + bm_blocks) // chunk) * chunk
        if data_offset != first_dat:
            fail(f"{p}: data_offset {data_offset}, 2.1 gives {first_dat}")
        with open(p, "rb") as f:
            for i in range(bm_blocks):
                f.seek((2 + i) * BS)
                check_block(f.read(BS), 0x4252474A, 2 + i, seed, f"{p} bitmap block {i}")
        members[role] = p
        geo = (uuid, n, level, layout, chunk, data_offset, data_blocks, array_blocks, state,
               incompat, sync_rows)
    (uuid, n, level, layout, chunk, data_offset, data_blocks, array_blocks, state,
     incompat, sync_rows) = geo
    if sorted(members) != list(range(n)):
        fail(f"roles {sorted(members)} of {n} members")
    files = {r: open(members[r], "rb") for r in members}
    ndata = n - (2 if level == 6 else 1)

    def member_of(row, d):
        """2.1: the member holding data position d (or 'P') of a row."""
        if level == 4:
            return n - 1 if d == "P" else d
        pd = n - 1 - row % n
        if d == "P":
            return pd
        return (pd + (2 if level == 6 else 1) + d) % n

    def read_member(r, blk):
        files[r].seek(blk * BS)
        return files[r].read(BS)

    def read_array(b):
        row = b // (ndata * chunk)
        d = (b % (ndata * chunk)) // chunk
        return read_member(member_of(row, d), data_offset + row * chunk + b % chunk)

    def check_parity(b):
        row = b // (ndata * chunk)
        mblk = data_offset + row * chunk + b % chunk
        p = bytearray(BS)
        for d in range(ndata):
            for i, x in enumerate(read_member(member_of(row, d), mblk)):
                p[i] ^= x
        if bytes(p) != read_member(member_of(row, "P"), mblk):
            fail(f"array block {b}: P parity does not match 2.1")

    fsb = read_array(0)
    fseed = seed_of(fsb[0x80:0x90])
    check_block(fsb, 0x5346474A, 0, fseed, "filesystem superblock")
    blocks, _inodes, bpg, ipg, groups = struct.unpack_from("<QQIII", fsb, 0x20)
    gdt_start, gdt_blocks, itable_blocks = struct.unpack_from("<QII", fsb, 0x40)
    jstart, jblocks, first_group = struct.unpack_from("<QQQ", fsb, 0x50)
    if gdt_start != 1 or jstart != 1 + gdt_blocks or first_group != jstart + jblocks:
        fail("filesystem layout does not follow 4.1")
    if blocks > array_blocks:
        fail(f"filesystem of {blocks} blocks on an array of {array_blocks}")
    for g in range(gdt_blocks):
        check_block(read_array(gdt_start + g), 0x4447474A, gdt_start + g, fseed,
                    f"group descriptor block {g}")
    gd = read_array(gdt_start)
    free_blocks, free_inodes = struct.unpack_from("<II", gd, 32)
    bb = read_array(first_group)
    check_block(bb, 0x4242474A, first_group, fseed, "block bitmap of group 0")
    check_block(read_array(first_group + 1), 0x4249474A, first_group + 1, fseed,
                "inode bitmap of group 0")
    jsb = read_array(jstart)
    jseq = check_block(jsb, 0x4A4E4C01, jstart, seed_of(jsb[0x50:0x60]), "journal superblock")
    nblocks, first, start = struct.unpack_from("<QQQ", jsb, 0x20)
    if nblocks != jblocks or first != 1:
        fail(f"journal superblock nblocks {nblocks}, first {first}; filesystem says {jblocks}")
    # 2.2: past the initial sync's mark too, the lines mkfs wrote match their parity
    for b in (0, gdt_start, jstart, first_group, first_group + 1):
        check_parity(b)
    # 4.9: data checksums -- every checksum block, and every set slot against
    # the array block it names (crc of the 4096 bytes; 0 stored as 0xffffffff).
    # A freed block keeps its slot, so a slot is a claim only while its block
    # holds file data: format_reader.sh gives this a volume that never freed one.
    (ro_compat,) = struct.unpack_from("<I", fsb, 0x6C)
    dcsum_start, dcsum_blocks = struct.unpack_from("<QQ", fsb, 0xF8)
    slots = 0
    if ro_compat & 1:
        if dcsum_start != blocks or dcsum_blocks != -(-blocks // 1016):
            fail(f"dcsum_start {dcsum_start}, dcsum_blocks {dcsum_blocks}: 4.2 gives "
                 f"{blocks}, {-(-blocks // 1016)}")
        if dcsum_start + dcsum_blocks > array_blocks:
            fail("the data checksum region ends past the array")
        # 4.9: with LAZY_DCSUM (incompat bit 1) only the blocks below the mark
        # dcsum_init were written; those past it hold anything and mean "no slot"
        (fs_incompat,) = struct.unpack_from("<I", fsb, 0x70)
        mark = dcsum_blocks
        if fs_incompat & 2:
            (mark,) = struct.unpack_from("<Q", fsb, 0x108)
            if mark >= dcsum_blocks:
                fail(f"dcsum_init {mark} not below dcsum_blocks {dcsum_blocks}")
        for i in range(mark):
            cb = read_array(dcsum_start + i)
            check_block(cb, 0x4344474A, dcsum_start + i, fseed, f"data checksum block {i}")
            for k in range(1016):
                (want,) = struct.unpack_from("<I", cb, 0x20 + 4 * k)
                b = i * 1016 + k
                if want == 0:
                    continue
                if b >= blocks:
                    fail(f"data checksum block {i}: slot {k} set for array block {b}, "
                         f"past the filesystem")
                got = crc32c(fseed, read_array(b))
                if got != want and not (got == 0 and want == 0xFFFFFFFF):
                    fail(f"array block {b}: crc {got:#x}, its slot in data checksum "
                         f"block {i} says {want:#x}")
                slots += 1
    elif dcsum_start or dcsum_blocks:
        fail(f"dcsum_start {dcsum_start}, dcsum_blocks {dcsum_blocks} without DATA_CSUM")
    print(f"format_reader: array level {level}, {n} members, chunk {chunk}, "
          f"{array_blocks} array blocks, state {'dirty' if state else 'clean'}"
          f"{', initial sync at row %d' % sync_rows if incompat & 4 else ''}; "
          f"filesystem {blocks} blocks, {groups} groups, group 0 free "
          f"{free_blocks} blocks {free_inodes} inodes; journal {nblocks} blocks "
          f"at {jstart}, start {start}, sequence {jseq}"
          f"{'; %d data checksums verified' % slots if ro_compat & 1 else ''}: all checks pass")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    main(sys.argv[1:])
