#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
tests/integration/owners_find.py - find tagged file blocks on the members of an
array without our code: each data block the test wrote starts with
"OWNERS:<path>:<logical block>:". The members' data areas are read and each
tagged block's array block number computed as docs/FORMAT.md 2.1 says (RAID4,
RAID5/6 left-symmetric). Prints "ARRAY_BLOCK<tab>LOGICAL<tab>PATH" per tagged
block, sorted, after a first line "row_blocks<tab>N".

usage: owners_find.py MEMBER...   (member files, any order, all present)
       owners_find.py --where B MEMBER...   the member file and member block that
                                              hold array block B: "PATH<tab>BLOCK"
"""
import struct
import sys

BS = 4096
TAG = b"OWNERS:"


def main(paths):
    where = None
    if paths[0] == "--where":
        where, paths = int(paths[1]), paths[2:]
    members = {}
    for p in paths:
        with open(p, "rb") as f:
            sb = f.read(BS)
        if struct.unpack_from("<I", sb, 0)[0] != 0x5352474A:
            sys.exit(f"{p}: not a member superblock")
        _incompat, role, n, level, _layout, chunk = struct.unpack_from("<IIIIII", sb, 0x3C)
        data_offset, data_blocks, _array_blocks = struct.unpack_from("<QQQ", sb, 0x60)
        members[role] = p
    if sorted(members) != list(range(n)):
        sys.exit(f"roles {sorted(members)} of {n} members")
    ndata = n - (2 if level == 6 else 1)
    npar = n - ndata
    if where is not None:
        row, rest = divmod(where, ndata * chunk)
        d, k = divmod(rest, chunk)
        role = d if level == 4 else (n - 1 - row % n + npar + d) % n
        print(f"{members[role]}\t{data_offset + row * chunk + k}")
        return
    print(f"row_blocks\t{ndata * chunk}")
    found = []
    for role, p in members.items():
        with open(p, "rb") as f:
            f.seek(data_offset * BS)
            for mb in range(data_blocks):
                blk = f.read(BS)
                if not blk.startswith(TAG):
                    continue
                row, k = divmod(mb, chunk)
                if level == 4:
                    d = role if role < ndata else None
                else:
                    pd = n - 1 - row % n
                    d = (role - pd - npar) % n
                    d = d if d < ndata else None
                if d is None:
                    continue  # a parity chunk that happens to equal a tagged block
                _tag, path, lblk, _rest = blk.split(b":", 3)
                found.append((row * ndata * chunk + d * chunk + k, path.decode(), int(lblk)))
    for b, path, lblk in sorted(found):
        print(f"{b}\t{lblk}\t{path}")


if __name__ == "__main__":
    main(sys.argv[1:])
