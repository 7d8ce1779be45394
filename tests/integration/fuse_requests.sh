#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/fuse_requests.sh - FUSE requests per operation (issue 28).
#
# The mount's first create (with the once-a-mount CREATE, OPEN and FLUSH, and
# no RELEASE: (V10)), a reopen, a small file's create, write and close, its
# stat, an overwrite with fsync and the unlink, each counted by the daemon (FOP_IOC_REQUESTS: requests by kind
# since mount) and compared with the table EXPECTED below. More requests than
# the table fails, printing the counts: a change that costs a round trip per
# file shows here. Fewer fails too, so that the table stays what the kernel
# sends (lower it in the same commit as the change that saves them). Then the
# semantics that the cuts must keep: times after a write as stat shows them, and
# the setuid bit cleared by a write of another user.
#
# One python process does every step on an open descriptor of the mount root:
# each snapshot is one ioctl (counted, and taken off) with no path walk. A
# snapshot is taken again until two agree 0.3 s apart: release is sent by the
# kernel in the background after close. forget is left out of the comparison:
# the kernel sends it when it evicts an inode, whenever that is.
. "$(dirname "$0")/fuse_lib.sh"
it_setup "$@"
command -v python3 >/dev/null || it_skip "no python3"
command -v setpriv >/dev/null || it_skip "no setpriv"

it_make_members 3 64M
it_mkfs -l 5
# allow_other, and $T searchable: the setuid check writes as nobody
chmod 711 "$T"
it_mount -o allow_other

cat >"$T/requests.py" <<'EOF'
import fcntl, os, struct, sys, time

MNT = sys.argv[1]
# enum fop_req (include/jgrfs/fop.h): the index of each kind in fop_requests.count
KINDS = ["lookup", "forget", "getattr", "setattr", "readlink", "mknod", "mkdir", "unlink",
         "rmdir", "symlink", "rename", "link", "open", "read", "write", "flush", "release",
         "fsync", "opendir", "readdir", "readdirplus", "releasedir", "fsyncdir", "statfs",
         "setxattr", "getxattr", "listxattr", "removexattr", "create", "fallocate", "ioctl"]
# The requests each step costs, by kind (forget left out, see above).
EXPECTED = {
    # The mount's first file: the CREATE answered ENOSYS, the kernel's MKNOD
    # and its OPEN answered ENOSYS too, and the one FLUSH of the mount, also
    # ENOSYS ((V10), (V8), (V6) of src/fuse/ops.c). No RELEASE: before (V10),
    # every file made while no OPEN had come yet sent one.
    "first_create": {"lookup": 1, "create": 1, "mknod": 1, "open": 1, "flush": 1,
                     "getxattr": 1, "write": 1},
    # the file opened again and closed: no OPEN, RELEASE nor FLUSH; the getattr
    # is the kernel's, for the attributes its write-back of the data dropped
    "open_close": {"getattr": 1},
    # no setattr: the create stamps the times with the kernel's coarse clock,
    # so a write in the same tick finds them current (TICK below)
    "create_write_close": {"lookup": 1, "mknod": 1, "getxattr": 1, "write": 1},
    "stat": {"getattr": 2},
    "overwrite_fsync": {"getxattr": 1, "write": 1, "setattr": 1, "fsync": 1},
    "unlink": {"unlink": 1, "setattr": 1},
}

REQ_SIZE = 8 + 8 * 64  # struct fop_requests
FOP_IOC_REQUESTS = (2 << 30) | (REQ_SIZE << 16) | (ord("J") << 8) | 0x46
root = os.open(MNT, os.O_RDONLY | os.O_DIRECTORY)
nsnaps = 0


def snap():
    buf = fcntl.ioctl(root, FOP_IOC_REQUESTS, bytes(REQ_SIZE))
    version, nkinds = struct.unpack_from("<II", buf)
    assert version == 1 and nkinds >= len(KINDS), (version, nkinds)
    global nsnaps
    nsnaps += 1
    return dict(zip(KINDS, struct.unpack_from("<%dQ" % len(KINDS), buf, 8)), snaps=nsnaps)


def settled():
    """A snapshot after the background requests (release) came in."""
    prev = snap()
    while True:
        time.sleep(0.3)
        cur = snap()
        if dict(cur, ioctl=cur["ioctl"] - 1, snaps=prev["snaps"]) == prev:
            return cur
        prev = cur


def delta(a, b):
    d = {k: b[k] - a[k] for k in KINDS if b[k] != a[k]}
    d["ioctl"] = d.get("ioctl", 0) - (b["snaps"] - a["snaps"])  # our own snapshots
    return {k: v for k, v in d.items() if v and k != "forget"}


def fmt(d):
    return " ".join("%s=%d" % (k, d[k]) for k in KINDS if d.get(k)) or "(none)"


D = os.path.join(MNT, "d")
F = os.path.join(D, "f")
W = os.path.join(D, "warm")
data = b"x" * 4096


def create_write_close():
    fd = os.open(F, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
    os.write(fd, data)
    os.close(fd)


def first_create():
    fd = os.open(W, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
    os.write(fd, data)
    os.close(fd)


def open_close():
    os.close(os.open(W, os.O_RDONLY))


def stat():
    os.stat(F)


def overwrite_fsync():
    fd = os.open(F, os.O_WRONLY)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)


def unlink():
    os.unlink(F)


# Warm up: the directory. What happens once per mount is first_create's.
os.mkdir(D)
os.stat(D)

failed = []
seen = {}
# Steps whose write may land in the kernel's next clock tick after the create
# (4 ms at HZ=250): the kernel then stamps a newer mtime and sends it with a
# SETATTR at close. Such a step is tried again, up to TICK_TRIES times; a
# daemon stamping with a finer clock than the kernel's sends it every time.
# first_create cannot be tried again (it is the mount's first): there, that
# SETATTR is taken off with a note.
TICK = {"create_write_close"}
TICK_TRIES = 5
for name, fn in [("first_create", first_create), ("open_close", open_close),
                 ("create_write_close", create_write_close), ("stat", stat),
                 ("overwrite_fsync", overwrite_fsync), ("unlink", unlink)]:
    for attempt in range(TICK_TRIES if name in TICK else 1):
        before = settled()
        fn()
        after = settled()
        got = delta(before, after)
        if got != dict(EXPECTED[name], setattr=EXPECTED[name].get("setattr", 0) + 1):
            break
        if name == "first_create":
            print("%-20s a SETATTR of the times (the write in the next tick?): not counted" % name)
            got = dict(EXPECTED[name])
            break
        if attempt + 1 < TICK_TRIES:
            print("%-20s a SETATTR of the times (the write in the next tick?): again" % name)
            F = os.path.join(D, "f%d" % (attempt + 1))  # a name not looked up yet
            os.stat(D)  # the create made the kernel drop D's attributes: not this step's
    seen[name] = got
    want = EXPECTED[name]
    total, want_total = sum(got.values()), sum(want.values())
    print("%-20s %2d requests: %s" % (name, total, fmt(got)))
    if got != want:
        more = [k for k in KINDS if got.get(k, 0) > want.get(k, 0)]
        failed.append("%s: %s than expected (%s): got %d: %s; expected %d: %s" %
                      (name, "more" if more else "fewer", ", ".join(more) or "-", total,
                       fmt(got), want_total, fmt(want)))
for f in failed:
    print("FAIL:", f, file=sys.stderr)
sys.exit(1 if failed else 0)
EOF

it_log "requests per operation"
python3 "$T/requests.py" "$MNT" || it_fail "FUSE requests per operation differ from the table (above)"

# ---- semantics the cuts must keep
it_log "times after a write, as stat shows them"
f=$MNT/times
python3 - "$f" <<'EOF' || it_fail "times after write"
import os, sys, time
f = sys.argv[1]
fd = os.open(f, os.O_CREAT | os.O_WRONLY, 0o644)
os.close(fd)
st0 = os.stat(f)
time.sleep(0.05)
fd = os.open(f, os.O_WRONLY)
os.write(fd, b"y" * 4096)
st1 = os.fstat(fd)
os.close(fd)
st2 = os.stat(f)
for st in (st1, st2):
    assert st.st_size == 4096, st
    assert st.st_mtime_ns > st0.st_mtime_ns, ("mtime did not move", st0, st)
    assert st.st_ctime_ns > st0.st_ctime_ns, ("ctime did not move", st0, st)
assert st2.st_mtime_ns == st1.st_mtime_ns, ("mtime after close differs", st1, st2)
time.sleep(0.05)
fd = os.open(f, os.O_WRONLY)
os.write(fd, b"z" * 100)
os.fsync(fd)
os.close(fd)
st3 = os.stat(f)
assert st3.st_mtime_ns > st2.st_mtime_ns and st3.st_size == 4096, ("overwrite", st2, st3)
EOF

it_log "a write by another user clears setuid and setgid"
s=$MNT/suid
printf 'abc' >"$s"
chmod 6777 "$s"
[ "$(stat -c %a "$s")" = 6777 ] || it_fail "chmod 6777: $(stat -c %a "$s")"
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "printf x 1<>'$s'" ||
	it_fail "write as nobody"
mode=$(stat -c %a "$s")
[ "$mode" = 777 ] || it_fail "mode after a write by nobody: $mode (expected 777)"
# root (CAP_FSETID) keeps them
chmod 6777 "$s"
printf y 1<>"$s"
mode=$(stat -c %a "$s")
[ "$mode" = 6777 ] || it_fail "mode after a write by root: $mode (expected 6777)"
# a truncate by another user clears them too
setpriv --reuid=65534 --regid=65534 --clear-groups truncate -s 1 "$s" ||
	it_fail "truncate as nobody"
mode=$(stat -c %a "$s")
[ "$mode" = 777 ] || it_fail "mode after a truncate by nobody: $mode (expected 777)"

# the same counters for people: jgrfs status --json
"$JGRFS" status --json "$MNT" | python3 -c '
import json, sys
r = json.load(sys.stdin)["fuse_requests"]
assert r["create"] == 1 and r["mknod"] >= 3 and r["ioctl"] >= 1 and r["unlink"] >= 1, r
' || it_fail "status --json fuse_requests"

it_unmount
it_fsck_clean
it_finish
