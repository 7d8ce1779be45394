#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/install.sh MESON BUILD_ROOT JGRFS JGRFS_CRASH - what `meson install` puts
# where users look (issue 23): the man pages and the systemd units of the
# monthly scrub, and pages that cannot drift from the code; the bash completion
# (issue 26).
#
#   1. `meson install --destdir` into a private directory: every file meson
#      says it installs (introspect --installed) is there, among them the four
#      pages and, unless -Dsystemd=false, both units; the service runs the
#      installed jgrfs; mkfs.jgrfs, fsck.jgrfs and mount.jgrfs link to it.
#   2. Each installed page renders with `groff -man -ww -z` without a warning,
#      carries the version of `jgrfs --version`, and its SEE ALSO names of our
#      pages are installed.
#   3. `systemd-analyze verify` of the units, when systemd-analyze exists (that
#      part alone is skipped otherwise): the templates as installed, with
#      ExecStart pointed at the jgrfs under the destdir.
#   4. Against `jgrfs --help` and each `jgrfs COMMAND --help`: every command
#      has its .SS in jgrfs.8; every long option of a command's help, and every
#      short option of its option list, is named in its section of jgrfs.8
#      (mkfs, fsck, mount: in mkfs.jgrfs.8, fsck.jgrfs.8, jgrfs-mount.8); every
#      -o option of `jgrfs mount --help` is in jgrfs-mount.8. One direction
#      only: a page may document more (the online scrub's options were
#      documented ahead of its code).
#   5. The installed jgrfs has no fault injection (issue 24): jgrfs-crash, the
#      test program that has it, is not installed; the installed binary holds
#      none of the names that switched faults on (JGRFS_POWERCUT,
#      JGRFS_BADBLOCKS, JGRFS_OPOINTS, --powercut, --badblocks); and with those
#      variables set it makes and reads an array as without them. The controls:
#      jgrfs-crash given the same faults as options dies at the cut and fails
#      the read (else this test could not see a fault at all).
#
#   6. The bash completion (issue 26) is installed as jgrfs, mkfs.jgrfs and
#      fsck.jgrfs in bash-completion's completionsdir with our datadir (its
#      .pc), else DATADIR/bash-completion/completions, or -Dbashcompletiondir;
#      sourced in `bash --norc` it registers the three names and completes
#      with the installed jgrfs (tests/integration/completion.sh checks it
#      in depth).
#
# Needs no root and no FUSE. groff (groff-base, `make deps`) is required.
set -eu

MESON=${1:?usage: install.sh MESON BUILD_ROOT JGRFS JGRFS_CRASH}
BUILD=${2:?usage: install.sh MESON BUILD_ROOT JGRFS JGRFS_CRASH}
JG=${3:?usage: install.sh MESON BUILD_ROOT JGRFS JGRFS_CRASH}
JGC=${4:?usage: install.sh MESON BUILD_ROOT JGRFS JGRFS_CRASH}
case $JG in /*) ;; *) JG=$PWD/$JG ;; esac
case $JGC in /*) ;; *) JGC=$PWD/$JGC ;; esac

fail() { echo "FAIL: $*" >&2; exit 1; }
log() { echo "--- $*"; }

command -v groff >/dev/null || fail "groff not found (apt-get install groff-base; make deps does)"
command -v python3 >/dev/null || fail "python3 not found"

D=$(mktemp -d "${TMPDIR:-/tmp}/jgrfs-install.XXXXXX")
trap 'rm -rf "$D"' EXIT
DEST=$D/dest

log "meson install --destdir $DEST"
"$MESON" install -C "$BUILD" --no-rebuild --quiet --destdir "$DEST" >"$D/install.out" 2>&1 ||
	{ cat "$D/install.out" >&2; fail "meson install"; }
"$MESON" introspect "$BUILD" --installed >"$D/installed.json" || fail "meson introspect --installed"
"$MESON" introspect "$BUILD" --buildoptions >"$D/options.json" || fail "meson introspect --buildoptions"

# where each thing went: one "key path" line each (paths under DEST)
python3 - "$D/installed.json" "$D/options.json" "$DEST" >"$D/where" <<'EOF' || fail "installed files"
import json, os, sys
installed = json.load(open(sys.argv[1]))
opts = {o["name"]: o["value"] for o in json.load(open(sys.argv[2]))}
dest = sys.argv[3]
bad = 0
for src, path in installed.items():
    if not os.path.lexists(dest + path):
        print(f"FAIL: {src} not installed at {path}", file=sys.stderr)
        bad = 1
by_name = {os.path.basename(p): p for p in installed.values()}
want = ["jgrfs.8", "mkfs.jgrfs.8", "fsck.jgrfs.8", "jgrfs-mount.8"]
if opts["systemd"]:
    want += ["jgrfs-scrub@.service", "jgrfs-scrub@.timer"]
for name in want:
    if name not in by_name:
        print(f"FAIL: meson does not install {name}", file=sys.stderr)
        bad = 1
        continue
    p = by_name[name]
    if name.endswith(".8") and os.path.basename(os.path.dirname(p)) != "man8":
        print(f"FAIL: {name} installed at {p}, not in a man8 directory", file=sys.stderr)
        bad = 1
    print(name, dest + p)
# the bash completion: as jgrfs in bash-completion's completionsdir (its .pc
# with our datadir), else DATADIR/bash-completion/completions, or -Dbashcompletiondir
import subprocess
compdir = opts.get("bashcompletiondir", "")
if not compdir:
    r = subprocess.run(["pkg-config",
                        "--define-variable=datadir=" + os.path.join(opts["prefix"], opts["datadir"]),
                        "--variable=completionsdir", "bash-completion"],
                       capture_output=True, text=True)
    compdir = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else \
        os.path.join(opts["prefix"], opts["datadir"], "bash-completion", "completions")
    if not compdir.startswith(opts["prefix"].rstrip("/") + "/"):
        print(f"FAIL: the bash completion would go to {compdir}, outside the prefix", file=sys.stderr)
        bad = 1
comp = [p for s, p in installed.items() if s.endswith("tools/cli/jgrfs.bash")]
if comp != [os.path.join(compdir, "jgrfs")]:
    print(f"FAIL: the bash completion installed at {comp}, not {compdir}/jgrfs", file=sys.stderr)
    bad = 1
for name in ["jgrfs", "mkfs.jgrfs", "fsck.jgrfs"]:
    p = dest + os.path.join(compdir, name)
    if not os.path.isfile(p):
        print(f"FAIL: no bash completion {p} (for {name})", file=sys.stderr)
        bad = 1
print("completions", dest + compdir)
jg = os.path.join(opts["prefix"], opts["bindir"], "jgrfs")
if jg not in installed.values():
    print(f"FAIL: jgrfs not installed as {jg}", file=sys.stderr)
    bad = 1
print("bin", jg)
# the names mkfs(8), fsck(8) and mount(8) call: links to jgrfs in sbindir
for name in ["mkfs.jgrfs", "fsck.jgrfs", "mount.jgrfs"]:
    p = os.path.join(opts["prefix"], opts["sbindir"], name)
    if not os.path.islink(dest + p) or os.readlink(dest + p) != jg:
        print(f"FAIL: {p} is not a link to {jg}", file=sys.stderr)
        bad = 1
sys.exit(bad)
EOF
where() { awk -v k="$1" '$1 == k { print $2 }' "$D/where"; }
BIN=$(where bin)
MANDIR=$(dirname "$(where jgrfs.8)")
log "installed: $(cut -d' ' -f2- "$D/where" | sed "s|^$DEST||" | tr '\n' ' ')"

# 2. the pages render without a warning, carry our version, and name pages we install
VERSION=$("$JG" --version)
for page in jgrfs.8 mkfs.jgrfs.8 fsck.jgrfs.8 jgrfs-mount.8; do
	f=$MANDIR/$page
	log "groff -man -ww -z $page"
	groff -man -ww -z "$f" >"$D/groff.out" 2>&1 || { cat "$D/groff.out" >&2; fail "groff on $page"; }
	[ ! -s "$D/groff.out" ] || { cat "$D/groff.out" >&2; fail "groff warns on $page"; }
	grep -q "^\.TH .*\"$VERSION\"" "$f" || fail "$page: .TH does not carry \"$VERSION\" (jgrfs --version)"
	for ref in $(grep -oE '^\.BR (jgrfs|mkfs\.jgrfs|fsck\.jgrfs)[a-z\\-]* \(8\)' "$f" |
			awk '{ gsub(/\\-/, "-", $2); print $2 }'); do
		[ -f "$MANDIR/$ref.8" ] || fail "$page: SEE ALSO $ref(8), which is not installed"
	done
done

# 3. the units
SERVICE=$(where jgrfs-scrub@.service)
TIMER=$(where jgrfs-scrub@.timer)
if [ -n "$SERVICE" ]; then
	log "units: $(basename "$SERVICE") $(basename "$TIMER")"
	grep -qxF "ExecStart=$BIN scrub %f" "$SERVICE" ||
		fail "$SERVICE: no 'ExecStart=$BIN scrub %f': $(grep ExecStart= "$SERVICE")"
	grep -qx 'Type=oneshot' "$SERVICE" || fail "$SERVICE: not Type=oneshot"
	grep -q -- '--repair' <(grep -v '^#' "$SERVICE") && fail "$SERVICE: scrubs with --repair"
	grep -qx 'Persistent=true' "$TIMER" || fail "$TIMER: not Persistent=true"
	grep -qx 'OnCalendar=monthly' "$TIMER" || fail "$TIMER: not OnCalendar=monthly"
	if command -v systemd-analyze >/dev/null; then
		# verify wants ExecStart's program to exist: point it at the one under DEST
		mkdir "$D/units"
		sed "s|^ExecStart=$BIN |ExecStart=$DEST$BIN |" "$SERVICE" >"$D/units/jgrfs-scrub@.service"
		cp "$TIMER" "$D/units/"
		log "systemd-analyze verify"
		(cd "$D/units" && systemd-analyze verify --man=no ./jgrfs-scrub@.service ./jgrfs-scrub@.timer) \
			>"$D/verify.out" 2>&1 || { cat "$D/verify.out" >&2; fail "systemd-analyze verify"; }
		[ ! -s "$D/verify.out" ] || { cat "$D/verify.out" >&2; fail "systemd-analyze verify warns"; }
	else
		echo "SKIP (this part only): no systemd-analyze, the units are not verified"
	fi
else
	echo "no units installed (-Dsystemd=false)"
fi

# 4. the pages against the code's help texts
log "every command and option of the help texts in the pages"
"$JG" --help >"$D/help" 2>&1 || fail "jgrfs --help"
python3 - "$JG" "$D/help" "$MANDIR" <<'EOF' || fail "the pages have drifted from the code (above)"
import re, subprocess, sys
jg, helpfile, mandir = sys.argv[1:4]

def text(page):
    """The page's source with roff escapes taken out: \\- is -, fonts go."""
    s = open(f"{mandir}/{page}").read()
    s = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", s)
    s = s.replace("\\-", "-").replace("\\(em", "-").replace("\\~", " ").replace("\\&", "")
    s = re.sub(r"\\\|", "", s)
    return s

def section(s, cmd):
    """From '.SS cmd' (or '.SS "cmd"', or '.SH cmd') to the next .SS or .SH."""
    m = re.search(r'^\.S[SH] "?' + re.escape(cmd) + r'"?\s*$', s, re.M)
    if not m:
        return None
    end = re.search(r"^\.S[SH] ", s[m.end():], re.M)
    return s[m.start():m.end() + end.start()] if end else s[m.start():]

def named(s, opt):
    return re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", s) is not None

cmds = []
in_cmds = False
for line in open(helpfile):
    if line.startswith("commands:"):
        in_cmds = True
    elif in_cmds:
        m = re.match(r"  (\S+(?: \S+)?)\s{2,}\S", line)
        if not m:
            break
        cmds.append(m.group(1))
if len(cmds) < 10:
    sys.exit(f"FAIL: only {len(cmds)} commands found in jgrfs --help")

main = text("jgrfs.8")
common = {"-h", "--help", "-v", "--verbose", "-q", "--quiet"}
for opt in sorted(common):
    if not named(section(main, "OPTIONS") or "", opt):
        sys.exit(f"FAIL: jgrfs.8's OPTIONS does not name {opt} (taken by every command)")
own = {"mkfs": "mkfs.jgrfs.8", "fsck": "fsck.jgrfs.8", "mount": "jgrfs-mount.8"}
bad = 0
checked = 0
for cmd in cmds:
    sec = section(main, cmd)
    if sec is None:
        print(f"FAIL: jgrfs.8 has no '.SS {cmd}' (jgrfs --help lists it)")
        bad = 1
        continue
    r = subprocess.run([jg] + cmd.split() + ["--help"], capture_output=True, text=True)
    help_text = r.stdout + r.stderr
    if r.returncode != 0 or "usage:" not in help_text:
        print(f"FAIL: jgrfs {cmd} --help: exit {r.returncode}")
        bad = 1
        continue
    where = own.get(cmd, "jgrfs.8")
    page = text(where) if cmd in own else sec
    opts = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", help_text))
    # short options: those of the option list ("  -x, --long" or "  -x   text")
    opts |= set(re.findall(r"^ {2,4}(-[A-Za-z])\b", help_text, re.M))
    # -h, --help, -v, --verbose, -q, --quiet: every command's, named once in
    # jgrfs.8's OPTIONS, and in the pages of their own
    for opt in sorted(common):
        if opt not in opts:
            print(f"FAIL: jgrfs {cmd} --help does not name {opt}, which every command takes")
            bad = 1
    if cmd not in own:
        opts -= common
    for opt in sorted(opts):
        checked += 1
        if not named(page, opt):
            print(f"FAIL: jgrfs {cmd} --help has {opt}, which {where}"
                  + ("" if cmd in own else f" (.SS {cmd})") + " does not name")
            bad = 1
    if cmd == "mount":
        mo = help_text.split("mount options:", 1)
        if len(mo) != 2:
            print("FAIL: jgrfs mount --help has no 'mount options:'")
            bad = 1
            continue
        for m in re.finditer(r"^  ([a-z_]+)(=?)\S*\s{2,}\S", mo[1], re.M):
            checked += 1
            name = m.group(1) + m.group(2)
            pat = (r"(?<![\w-])" + re.escape(name)) if m.group(2) else \
                  (r"(?<![\w-])" + re.escape(name) + r"(?![\w=-])")
            if not re.search(pat, page):
                print(f"FAIL: jgrfs mount --help has -o {name}, which jgrfs-mount.8 does not name")
                bad = 1
print(f"{len(cmds)} commands, {checked} options and mount options checked")
sys.exit(bad)
EOF
# 5. no fault injection in what is installed
log "the installed jgrfs has no fault injection"
grep -q 'jgrfs-crash' "$D/installed.json" && fail "meson installs jgrfs-crash, a test program"
for name in JGRFS_POWERCUT JGRFS_BADBLOCKS JGRFS_OPOINTS -powercut -badblocks; do
	grep -aq -- "$name" "$DEST$BIN" && fail "the installed jgrfs holds '$name'"
done
grep -aq -- '--powercut' "$JGC" || fail "the control: jgrfs-crash does not hold '--powercut'"
# member files where O_DIRECT works (not tmpfs)
F=
for base in "${TMPDIR:-}" /var/tmp "$BUILD"; do
	[ -n "$base" ] && [ -d "$base" ] && [ -w "$base" ] || continue
	[ "$(stat -f -c %T "$base")" = tmpfs ] && continue
	F=$(mktemp -d "$base/jgrfs-nofault.XXXXXX") && break
done
if [ -n "$F" ]; then
	trap 'rm -rf "$D" "$F"' EXIT
	M="$F/m0.img $F/m1.img $F/m2.img $F/m3.img"
	# shellcheck disable=SC2086
	truncate -s 64M $M
	# a power cut at the first write and the superblocks unreadable, if it listened
	export JGRFS_POWERCUT=after=1,seed=1 JGRFS_BADBLOCKS=0:0,1:0,2:0,3:0
	rc=0
	# shellcheck disable=SC2086
	"$DEST$BIN" mkfs -l 5 $M >"$F/mkfs.out" 2>&1 || rc=$?
	[ $rc = 0 ] || { cat "$F/mkfs.out" >&2; fail "jgrfs mkfs with JGRFS_POWERCUT set: exit $rc"; }
	rc=0
	# shellcheck disable=SC2086
	"$DEST$BIN" fsck -n $M >"$F/fsck.out" 2>&1 || rc=$?
	[ $rc = 0 ] || { cat "$F/fsck.out" >&2; fail "jgrfs fsck -n with JGRFS_BADBLOCKS set: exit $rc"; }
	grep -q 'cannot read' "$F/fsck.out" &&
		{ cat "$F/fsck.out" >&2; fail "jgrfs fsck -n with JGRFS_BADBLOCKS set failed a read"; }
	unset JGRFS_POWERCUT JGRFS_BADBLOCKS
	# the controls: the same faults as options of jgrfs-crash
	rc=0
	# shellcheck disable=SC2086
	"$JGC" --badblocks 0:0,1:0,2:0,3:0 fsck -n $M >"$F/fsck.out" 2>&1 || rc=$?
	grep -q 'cannot read member superblock' "$F/fsck.out" ||
		{ cat "$F/fsck.out" >&2; fail "the control: jgrfs-crash --badblocks read the superblocks"; }
	rc=0
	# shellcheck disable=SC2086
	"$JGC" --powercut after=1,seed=1 mkfs -f -l 5 $M >"$F/mkfs.out" 2>&1 || rc=$?
	[ $rc = 137 ] || { cat "$F/mkfs.out" >&2; fail "the control: jgrfs-crash --powercut after=1 mkfs: exit $rc, not 137 (SIGKILL at the cut)"; }
	log "JGRFS_POWERCUT and JGRFS_BADBLOCKS ignored; the controls (jgrfs-crash) fault"
else
	echo "SKIP (this part only): no directory outside tmpfs for the member files"
fi

# 6. the bash completion as installed: sourced in a bare bash, it completes the
# three names (mkfs.jgrfs and fsck.jgrfs: the symlinks) with the installed jgrfs
COMPDIR=$(where completions)
log "bash completion in $COMPDIR"
for name in mkfs.jgrfs fsck.jgrfs; do
	cmp -s "$COMPDIR/jgrfs" "$COMPDIR/$name" || fail "$COMPDIR/$name is not the completion of jgrfs"
done
# shellcheck disable=SC2016
out=$(env -i PATH="$DEST$(dirname "$BIN"):/usr/bin:/bin" bash --norc --noprofile -c '
	for name in jgrfs mkfs.jgrfs fsck.jgrfs; do
		source "$1/$name" || exit 1
	done
	complete -p jgrfs mkfs.jgrfs fsck.jgrfs || exit 1
	COMP_WORDS=(jgrfs mk) COMP_CWORD=1 COMP_LINE="jgrfs mk" COMP_POINT=8
	_jgrfs jgrfs mk jgrfs && echo "jgrfs mk: ${COMPREPLY[*]}"
	COMP_WORDS=(jgrfs mkfs --le) COMP_CWORD=2 COMP_LINE="jgrfs mkfs --le" COMP_POINT=15
	_jgrfs jgrfs --le mkfs && echo "jgrfs mkfs --le: ${COMPREPLY[*]}"' bash "$COMPDIR" 2>&1) ||
	{ echo "$out" >&2; fail "sourcing the installed bash completion"; }
for want in "complete -F _jgrfs jgrfs" "complete -F _jgrfs mkfs.jgrfs" "complete -F _jgrfs fsck.jgrfs" \
	"jgrfs mk: mkfs" "jgrfs mkfs --le: --level"; do
	grep -qxF "$want" <<<"$out" || { echo "$out" >&2; fail "the installed bash completion: no '$want'"; }
done
# as users get it: bash-completion loads it on demand, by the command's name,
# from completions/ of a directory in XDG_DATA_DIRS (our prefix's share/)
BC=/usr/share/bash-completion/bash_completion
if [ -f "$BC" ]; then
	log "bash-completion loads it on demand"
	# shellcheck disable=SC2016
	out=$(cd "$D" && env -i PATH="$DEST$(dirname "$BIN"):/usr/bin:/bin" HOME="$D" \
		XDG_DATA_DIRS="$(dirname "$(dirname "$COMPDIR")")" bash --norc --noprofile -c '
		source "$1" || exit 1
		mkdir -p dir1 && : >file1
		for name in jgrfs mkfs.jgrfs fsck.jgrfs; do
			__load_completion "$name" || { echo "$name not loaded"; exit 1; }
		done
		complete -p jgrfs mkfs.jgrfs fsck.jgrfs || exit 1
		# (mkfs.jgrfs under DEST links to jgrfs outside it: not run here)
		COMP_WORDS=(jgrfs mkfs --level "") COMP_CWORD=3 COMP_LINE="jgrfs mkfs --level " COMP_POINT=19
		_jgrfs jgrfs "" --level && echo "jgrfs mkfs --level: ${COMPREPLY[*]}"
		COMP_WORDS=(jgrfs status "") COMP_CWORD=2 COMP_LINE="jgrfs status " COMP_POINT=13
		_jgrfs jgrfs "" status && echo "jgrfs status: ${COMPREPLY[*]}"' bash "$BC" 2>&1) ||
		{ echo "$out" >&2; fail "bash-completion did not load the installed completion"; }
	for want in "complete -F _jgrfs jgrfs" "complete -F _jgrfs mkfs.jgrfs" \
		"complete -F _jgrfs fsck.jgrfs" "jgrfs mkfs --level: 4 5 6"; do
		grep -qxF "$want" <<<"$out" || { echo "$out" >&2; fail "bash-completion's loading: no '$want'"; }
	done
	# _filedir: directories for MOUNTPOINT (and a mounted volume, if any)
	if ! grep -qE '^jgrfs status: (.* )?dir1( |$)' <<<"$out" || grep -q '^jgrfs status: .*file1' <<<"$out"; then
		echo "$out" >&2
		fail "bash-completion's loading: jgrfs status <TAB>"
	fi
else
	echo "SKIP (this part only): no $BC (Debian's bash-completion), on-demand loading not checked"
fi

echo "PASS"
