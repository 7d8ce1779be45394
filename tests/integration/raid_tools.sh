#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tests/integration/raid_tools.sh JGRFS - the array commands end to end on
# sparse member files: create, examine (read-only), scrub finding and repairing
# parity damaged with dd, a foreign file refused, a lost member rebuilt, and
# (with FUSE) a member replaced offline after a power cut in data=declared:
# refused while the journal is unreplayed, or with --force resynced first, and
# every fsynced file there at the next mount.
#
# The member layout comes from `jgrfs examine --json` (data_offset_blocks,
# chunk_bytes) and docs/FORMAT.md §2: row r's chunk is at member block
# data_offset + r * chunk_blocks on every member; RAID5 left-symmetric puts the
# parity of row r on role n-1 - r % n. The data written is a fixed pattern (no
# randomness), so a failure reproduces as is.
#
# Exit 77 (skip) when not root, as the other integration tests.
set -eu

JG=${1:?usage: raid_tools.sh PATH-TO-jgrfs PATH-TO-jgrfs-crash}
case $JG in /*) ;; *) JG=$PWD/$JG ;; esac
# jgrfs with the fault options (--powercut): the power cut rounds
JGC=${2:?usage: raid_tools.sh PATH-TO-jgrfs PATH-TO-jgrfs-crash}
case $JGC in /*) ;; *) JGC=$PWD/$JGC ;; esac
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root"
	exit 77
fi

# a private directory on a real filesystem: O_DIRECT is refused or meaningless on tmpfs
D=
for base in "${TMPDIR:-}" /var/tmp "$PWD"; do
	[ -n "$base" ] && [ -d "$base" ] || continue
	[ "$(stat -f -c %T "$base")" = tmpfs ] && continue
	D=$(mktemp -d "$base/jgrfs-raidtools.XXXXXX") && break
done
[ -n "$D" ] || { echo "SKIP: no directory outside tmpfs"; exit 77; }
cleanup() {
	if grep -q " $D/mnt fuse" /proc/mounts 2>/dev/null; then
		fusermount3 -u "$D/mnt" 2>/dev/null || umount -l "$D/mnt"
	fi
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cd "$D"

step() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# run CMD..., record its exit status in $rc without tripping set -e
run() { rc=0; "$@" >out 2>err || rc=$?; }
expect_rc() {
	[ "$rc" = "$1" ] || { cat out err >&2; fail "$2: exit status $rc, expected $1"; }
}
json_num() { grep -o "\"$1\":[0-9]*" "$2" | head -n 1 | cut -d: -f2; }
# write $3 bytes of a pattern named $4 at byte offset $2 of file $1
put() { yes "$4" | head -c "$3" | dd of="$1" bs=4096 seek="$(($2 / 4096))" conv=notrunc status=none; }
# copy $3 bytes at byte offset $2 of file $1 to stdout
get() { dd if="$1" bs=4096 skip="$(($2 / 4096))" count="$(($3 / 4096))" status=none; }

M="d0.img d1.img d2.img d3.img"

step "create a RAID5 over 4 sparse files"
run "$JG" create --size 8M $M
expect_rc 0 "create"
grep -q "RAID5" out || fail "create summary names no level"
grep -q "uuid" out || fail "create summary has no UUID"
for f in $M; do [ -f "$f" ] || fail "create made no $f"; done

step "create again refuses the members without --force"
run "$JG" create --size 8M $M
[ "$rc" != 0 ] || fail "create overwrote a jgrfs member without --force"
grep -q -- "--force" err || { cat err >&2; fail "refusal does not mention --force"; }

step "examine shows every member and writes nothing"
sum_before=$(cat $M | md5sum)
run "$JG" examine $M
expect_rc 0 "examine"
for f in $M; do grep -q "$f" out || fail "examine does not list $f"; done
grep -q "RAID5" out || fail "examine shows no level"
grep -q "state  *clean" out || { cat out >&2; fail "examine does not show a clean array"; }
run "$JG" examine --json $M
expect_rc 0 "examine --json"
cp out ex.json
[ "$(cat $M | md5sum)" = "$sum_before" ] || fail "examine changed a member"
off_blocks=$(json_num data_offset_blocks ex.json)
chunk=$(json_num chunk_bytes ex.json)
rows=$(json_num rows ex.json)
[ -n "$off_blocks" ] && [ -n "$chunk" ] && [ -n "$rows" ] || fail "examine --json lacks geometry"
[ "$rows" -gt 8 ] || fail "only $rows rows"
echo "data offset $off_blocks blocks, chunk $chunk bytes, $rows rows"

step "examine one member alone shows its own superblock"
run "$JG" examine d2.img
expect_rc 0 "examine of one member"
grep -q "role  *2" out || { cat out >&2; fail "examine d2.img does not show role 2"; }

step "scrub of the new array: 0 mismatches"
run "$JG" scrub $M
expect_rc 0 "scrub of a new array"
grep -q "mismatches  *0" out || { cat out >&2; fail "scrub output"; }

# row 5: parity on role 3 - 5 % 4 = 2, data on roles 3, 0, 1
row=5
prole=$((3 - row % 4))
roff=$((off_blocks * 4096 + row * chunk))

step "data written behind the array's back: scrub counts the row, --repair fixes parity"
for r in 0 1 2 3; do
	[ "$r" = "$prole" ] || put "d$r.img" "$roff" "$chunk" "data-of-role-$r"
done
run "$JG" scrub $M
expect_rc 1 "scrub after changing data"
grep -q "mismatches  *1\$" out || { cat out >&2; fail "scrub should count 1 row"; }
run "$JG" scrub --repair $M
expect_rc 0 "scrub --repair"
grep -q "repaired  *1\$" out || { cat out >&2; fail "repair should rewrite 1 row"; }
# no filesystem on a bare array: nothing could tell data from parity, and it says so
grep -q "^checksums  *no" out && grep -q "parity was rewritten from the data" out ||
	{ cat out >&2; fail "repair of a bare array should say it had no checksums"; }
run "$JG" scrub $M
expect_rc 0 "scrub after repair"
if command -v python3 >/dev/null; then
	# independent reference: P = XOR of the data chunks of the row
	python3 - "$roff" "$chunk" "$prole" <<'EOF' || fail "parity after repair is not the XOR of the data"
import sys
off, n, p = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def chunk(r):
    with open("d%d.img" % r, "rb") as f:
        f.seek(off)
        return f.read(n)
x = bytearray(n)
for r in range(4):
    if r != p:
        for i, b in enumerate(chunk(r)):
            x[i] ^= b
sys.exit(0 if bytes(x) == chunk(p) else 1)
EOF
fi

step "a damaged parity chunk: scrub finds it, --repair restores it exactly"
get "d$prole.img" "$roff" "$chunk" > parity.good
put "d$prole.img" $((roff + 4096)) 8192 "damage"
get "d$prole.img" "$roff" "$chunk" | cmp -s - parity.good && fail "dd did not damage parity"
run "$JG" scrub --json $M
expect_rc 1 "scrub of damaged parity"
grep -q '"mismatches":1,' out || { cat out >&2; fail "scrub --json should count 1 row"; }
run "$JG" scrub --repair $M
expect_rc 0 "repair of damaged parity"
get "d$prole.img" "$roff" "$chunk" | cmp -s - parity.good || fail "repaired parity differs"
run "$JG" scrub $M
expect_rc 0 "scrub after parity repair"

step "a foreign file is refused by examine, naming it, and left as it was"
yes "not a jgrfs member" | head -c 8388608 > foreign.img
sum_foreign=$(md5sum < foreign.img)
run "$JG" examine foreign.img
[ "$rc" -ge 2 ] || { cat out err >&2; fail "examine accepted a foreign file (exit $rc)"; }
grep -q "foreign.img" err || { cat err >&2; fail "examine does not name the foreign file"; }
run "$JG" examine d0.img d1.img foreign.img d3.img
[ "$rc" -ge 2 ] || fail "examine accepted a foreign file among members (exit $rc)"
grep -q "foreign.img" err || { cat err >&2; fail "examine does not name the foreign file"; }
[ "$(md5sum < foreign.img)" = "$sum_foreign" ] || fail "examine wrote to the foreign file"
run "$JG" scrub d0.img d1.img foreign.img d3.img
[ "$rc" -ge 2 ] || fail "scrub assembled with a foreign file (exit $rc)"

step "a lost member is rebuilt onto a new file"
len=$((rows * chunk))
get d1.img $((off_blocks * 4096)) "$len" > d1.data
rm d1.img
sum_before=$(cat d0.img d2.img d3.img | md5sum)
run "$JG" examine d0.img d2.img d3.img
expect_rc 0 "examine of a degraded array"
grep -q "degraded  *yes" out || { cat out >&2; fail "examine does not say degraded"; }
run "$JG" scrub d0.img d2.img d3.img
[ "$rc" -ge 2 ] || fail "scrub of a degraded array should refuse (exit $rc)"
grep -q "degraded" err || { cat err >&2; fail "scrub refusal does not say degraded"; }
[ "$(cat d0.img d2.img d3.img | md5sum)" = "$sum_before" ] ||
	fail "examine or a refused scrub wrote to the members of a degraded array"
run "$JG" rebuild --new d1new.img d0.img d2.img d3.img
expect_rc 0 "rebuild"
get d1new.img $((off_blocks * 4096)) "$len" | cmp -s - d1.data || fail "rebuilt data area differs"
M2="d0.img d1new.img d2.img d3.img"
run "$JG" examine $M2
expect_rc 0 "examine after rebuild"
grep -q "degraded  *no" out || { cat out >&2; fail "still degraded after rebuild"; }
grep -q "role 1 .*active.*d1new.img" out || { cat out >&2; fail "d1new.img is not role 1"; }
run "$JG" scrub $M2
expect_rc 0 "scrub after rebuild"
grep -q "mismatches  *0" out || fail "scrub after rebuild output"

step "RAID6: a damaged Q chunk is found and restored; two lost members are rebuilt"
E="e0.img e1.img e2.img e3.img"
run "$JG" create --level 6 --resync bitmap --size 8M $E
expect_rc 0 "create RAID6"
run "$JG" examine --json $E
expect_rc 0 "examine RAID6"
cp out ex6.json
off6=$(($(json_num data_offset_blocks ex6.json) * 4096))
chunk6=$(json_num chunk_bytes ex6.json)
rows6=$(json_num rows ex6.json)
# row 6: P on role 3 - 6 % 4 = 1, Q on role 2, data on roles 3, 0
roff=$((off6 + 6 * chunk6))
for r in 3 0; do put "e$r.img" "$roff" "$chunk6" "raid6-data-$r"; done
run "$JG" scrub --repair $E
expect_rc 0 "RAID6 repair after changing data"
grep -q "repaired  *1\$" out || { cat out >&2; fail "RAID6 repair should rewrite 1 row"; }
get e2.img "$roff" "$chunk6" > q.good
put e2.img "$roff" 4096 "damage-q"
run "$JG" scrub $E
expect_rc 1 "RAID6 scrub of a damaged Q"
run "$JG" scrub --repair $E
expect_rc 0 "RAID6 repair of Q"
get e2.img "$roff" "$chunk6" | cmp -s - q.good || fail "repaired Q differs"
len6=$((rows6 * chunk6))
get e0.img "$off6" "$len6" > e0.data
get e1.img "$off6" "$len6" > e1.data
rm e0.img e1.img
run "$JG" rebuild --new e0new.img e2.img e3.img
[ "$rc" != 0 ] || fail "rebuild guessed a role with two missing"
grep -q -- "--role" err || { cat err >&2; fail "rebuild should ask for --role"; }
[ ! -e e0new.img ] || fail "a refused rebuild left its new file behind"
run "$JG" rebuild --role 0 --new e0new.img e2.img e3.img
expect_rc 0 "RAID6 rebuild of role 0 with two missing"
run "$JG" rebuild --new e1new.img e0new.img e2.img e3.img
expect_rc 0 "RAID6 rebuild of role 1"
get e0new.img "$off6" "$len6" | cmp -s - e0.data || fail "RAID6 rebuilt role 0 differs"
get e1new.img "$off6" "$len6" | cmp -s - e1.data || fail "RAID6 rebuilt role 1 differs"
run "$JG" scrub e0new.img e1new.img e2.img e3.img
expect_rc 0 "RAID6 scrub after rebuild"

# power_cut_round N: mkfs on f0..f3, mount in data=declared with a power cut at
# member write N (the daemon dies there: jgrfs-crash --powercut), fsynced
# files written until it comes; the ones whose dd returned are listed in done.N
power_cut_round() {
	rm -f f?.img f?new.img "done.$1"
	truncate -s 128M $F
	run "$JG" mkfs -l 5 $F
	expect_rc 0 "mkfs for the power cut"
	"$JGC" --powercut "after=$1,seed=$1,keep=50,tear,flushes" mount $F mnt >mount.log 2>&1 ||
		{ cat mount.log >&2; fail "mount with a power cut"; }
	mkdir -p "exp.$1"
	i=0
	while [ $i -lt 2000 ]; do
		i=$((i + 1))
		head -c $((i * 1013 % 70000 + 1)) /dev/urandom >"exp.$1/f$i"
		dd if="exp.$1/f$i" of="mnt/f$i" bs=64k conv=fsync status=none 2>/dev/null || break
		echo "$i" >>"done.$1"
	done
	[ $i -lt 2000 ] || fail "the power cut never came (lower after=)"
	fusermount3 -u mnt 2>/dev/null || umount -l mnt
	[ -s "done.$1" ] || fail "the power cut came before any file was fsynced (raise after=)"
}

# clean unmount of mnt; waits for the daemon to end (it holds the members' locks)
unmount_wait() {
	pid=$("$JG" status --json mnt | sed -n 's/^{"pid":\([0-9]*\).*/\1/p')
	[ -n "$pid" ] || fail "no daemon pid from status"
	fusermount3 -u mnt || fail "fusermount3 -u"
	for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
	fail "daemon $pid still running 60 s after unmount"
}

# mount $*, compare every fsynced file of round $R, unmount
check_round() {
	"$JG" mount "$@" mnt >mount.log 2>&1 || { cat mount.log >&2; fail "mount after the power cut"; }
	bad=0
	while read -r i; do
		cmp -s "exp.$R/f$i" "mnt/f$i" || { echo "f$i differs" >&2; bad=$((bad + 1)); }
	done <"done.$R"
	unmount_wait
	[ $bad = 0 ] || fail "$bad of $(wc -l <"done.$R") fsynced files lost"
}

if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	mkdir mnt
	F="f0.img f1.img f2.img f3.img"

	step "power cut in data=declared, then rebuild --fail: refused until the journal replays"
	R=400
	power_cut_round $R
	run "$JG" rebuild --role 1 --fail --new f1new.img $F
	expect_rc 2 "rebuild --fail of an array whose journal has not been replayed"
	grep -q "jnl-pending" err && grep -q "mount the volume once" err && grep -q -- "--force" err ||
		{ cat err >&2; fail "the refusal does not say why and what to do"; }
	[ ! -e f1new.img ] || fail "a refused rebuild left its new file behind"
	run "$JG" rebuild --role 1 --new f1new.img f0.img f2.img f3.img
	expect_rc 2 "degraded assembly of an array whose journal has not been replayed"
	grep -q "jnl-pending" err || { cat err >&2; fail "degraded refusal does not name jnl-pending"; }
	check_round $F
	# replayed and unmounted cleanly: now the rebuild may run
	run "$JG" rebuild --role 1 --fail --new f1new.img $F
	expect_rc 0 "rebuild --fail after the journal replayed"
	check_round f0.img f1new.img f2.img f3.img

	step "power cut in data=declared, then rebuild --fail --force: parity resynced first"
	R=700
	power_cut_round $R
	run "$JG" rebuild --role 2 --fail --force --new f2new.img $F
	expect_rc 0 "rebuild --fail --force"
	grep -q "resync" err || { cat err >&2; fail "--force did not resync first"; }
	check_round f0.img f1.img f2new.img f3.img

	step "replace on a degraded mount: a refused NEWDEV ends --wait, a working member refused, the lost one re-added"
	"$JG" mount -o degraded f0.img f1.img f3.img mnt >mount.log 2>&1 || { cat mount.log >&2; fail "degraded mount"; }
	# the daemon refuses a device too small, in its log only: --wait must not poll forever
	truncate -s 1M small.img
	run timeout 120 "$JG" replace --wait mnt small.img
	expect_rc 1 "replace --wait onto a device the daemon refuses"
	grep -q "no rebuild onto" err || { cat err >&2; fail "--wait does not say no rebuild ran"; }
	run "$JG" replace mnt "$D/./f1.img"
	expect_rc 1 "replace onto a working member"
	grep -q "working member" err || { cat err >&2; fail "the refusal does not say working member"; }
	run "$JG" replace --wait mnt f2new.img
	expect_rc 0 "replace --wait onto the lost member's own device"
	unmount_wait
	check_round f0.img f1.img f2new.img f3.img
else
	echo "== (no /dev/fuse or fusermount3: the power-cut rebuild steps are skipped)"
fi

step "bench raid runs end to end (no timing checked): full-row writes read nothing"
mkdir bench
run "$JG" bench raid --dir bench --size 4M --runs 1 --seconds 0.05 --json
expect_rc 0 "bench raid"
[ -z "$(ls bench)" ] || fail "bench raid left files behind: $(ls bench)"
if command -v python3 >/dev/null; then
	python3 - out <<'EOF' || { cat out >&2; fail "bench raid JSON"; }
import json, sys
d = json.load(open(sys.argv[1]))
for k, n in (("raid5", 3), ("raid6", 2)):
    io = d[k]["member_io"]["seq_write"]
    assert io["array_bytes"] > 0, k
    # a full-row write: no member read, members/data times the data written
    assert io["read_bytes"] == 0, (k, io)
    assert io["write_bytes"] * n == io["array_bytes"] * 4, (k, io)
    assert d[k]["member_io"]["seq_read"]["write_bytes"] == 0, k
assert d["parity"]["xor_gen_gbs"] > 0 and d["parity"]["pq_gen_gbs"] > 0
EOF
fi

echo "PASS"
