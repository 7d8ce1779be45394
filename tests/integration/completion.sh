#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/integration/completion.sh JGRFS COMPLETION - the bash completion of
# tools/cli/jgrfs.bash (issue 26) against the program it completes.
#
# In `bash --norc --noprofile` (no bash-completion package: compgen -f/-d),
# with jgrfs, mkfs.jgrfs and fsck.jgrfs on PATH (wrappers of JGRFS that log
# each call), the completion function is called as bash would (COMP_WORDS,
# COMP_CWORD, COMP_LINE, COMP_POINT) and its COMPREPLY checked:
#   1. the commands: `jgrfs mk` gives mkfs; `jgrfs ` every command of
#      `jgrfs --help` (first words); `jgrfs bench ` raid, fs, jnl
#   2. the options: for EVERY command of `jgrfs --help`, `jgrfs CMD --` gives
#      exactly the long options of the option lines of `jgrfs CMD --help`
#      (scrub: and of `jgrfs scrub --help DIR`, its online help), read here
#      with sed, not as the completion reads them; so a help text the
#      completion misreads fails here. `scrub --re` gives --repair;
#      mkfs.jgrfs and fsck.jgrfs complete as mkfs and fsck.
#   3. values: --level 4 5 6, --resync journal bitmap full off, --spare files;
#      also as --level=, split at "=" as bash does; mount -o the names of
#      `jgrfs mount --help`'s mount options
#   4. positional arguments from the usage lines: files for DEV..., directories
#      for MOUNTPOINT (status, replace, spare add|remove, resync-all on|off);
#      other tests' volumes mounted meanwhile may be offered too
#   5. each help text read once per session (the wrappers' log)
#   6. as root with /dev/fuse: a mounted jgrfs volume is offered for MOUNTPOINT
#      (from /proc/mounts), not for mkfs's DEV nor mount's MOUNTPOINT (where to
#      mount); UUID=<uuid> of its array for mount's and fsck's U; skipped
#      (that part only) otherwise
set -eu

JG=${1:?usage: completion.sh JGRFS COMPLETION}
COMP=${2:?usage: completion.sh JGRFS COMPLETION}
case $JG in /*) ;; *) JG=$PWD/$JG ;; esac
case $COMP in /*) ;; *) COMP=$PWD/$COMP ;; esac

fail() { echo "FAIL: $*" >&2; exit 1; }
log() { echo "--- $*"; }

D=$(mktemp -d "${TMPDIR:-/tmp}/jgrfs-completion.XXXXXX")
MNT=
cleanup() {
	if [ -n "$MNT" ] && grep -q " $MNT fuse" /proc/mounts; then
		fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	rm -rf "$D"
}
trap cleanup EXIT

mkdir "$D/bin" "$D/work" "$D/work/dir1"
: >"$D/work/file1"
for name in jgrfs mkfs.jgrfs fsck.jgrfs; do
	# jgrfs picks mkfs/fsck by the name it is called by
	printf '#!/bin/bash\necho "%s $*" >>"%s/calls"\nexec -a %s "%s" "$@"\n' \
		"$name" "$D" "$name" "$JG" >"$D/bin/$name"
	chmod +x "$D/bin/$name"
done

# complete LINE...: for each line, "LINE<TAB>reply reply ..." (sorted), all in
# one shell session
complete_lines() {
	(cd "$D/work" && env -i PATH="$D/bin:/usr/bin:/bin" HOME="$D" ${JGRFS_CONF:+JGRFS_CONF="$JGRFS_CONF"} \
		bash --norc --noprofile -s "$COMP" "$@") <<'EOF'
set -u
source "$1" || exit 1
shift
declare -F _jgrfs >/dev/null || { echo "no _jgrfs after sourcing" >&2; exit 1; }
for line; do
	COMP_LINE=$line
	COMP_POINT=${#line}
	# words as bash makes them: "=" of COMP_WORDBREAKS a word of its own
	read -ra ws <<<"$line"
	COMP_WORDS=()
	for w in "${ws[@]}"; do
		while [[ $w == *=* ]]; do
			[[ -n ${w%%=*} ]] && COMP_WORDS+=("${w%%=*}")
			COMP_WORDS+=("=")
			w=${w#*=}
		done
		[[ -n $w ]] && COMP_WORDS+=("$w")
	done
	[[ $line == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_jgrfs jgrfs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" ||
		{ echo "_jgrfs failed on '$line'" >&2; exit 1; }
	printf '%s\t%s\n' "$line" "$( ((${#COMPREPLY[@]})) && printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//')"
done
EOF
}

# reply LINE: the replies to LINE from $D/out
reply() {
	awk -F'\t' -v l="$1" '$1 == l && !found { print $2; found = 1 } END { exit !found }' "$D/out" ||
		fail "no completion of '$1'"
}
expect() {	# expect LINE REPLIES: exactly these (sorted, space-separated)
	local got
	got=$(reply "$1")
	[ "$got" = "$2" ] || fail "'$1<TAB>' gives '$got', not '$2'"
}
has() {	# has LINE WORD...: among the replies
	local got w
	got=" $(reply "$1") "
	shift
	for w; do
		case $got in *" $w "*) ;; *) fail "'$1<TAB>' does not offer $w: '$got'" ;; esac
	done
}
hasnt() {
	local line=$1 got w
	got=" $(reply "$line") "
	shift
	for w; do
		case $got in *" $w "*) fail "'$line<TAB>' offers $w: '$got'" ;; esac
	done
}

# the commands and the options of each, read here with sed
"$JG" --help >"$D/help"
sed -n '/^commands:/,/^$/{ /^commands:/d; /^$/d; s/^  \([^ ]*\( [^ ]*\)\{0,1\}\)  .*/\1/p; }' "$D/help" >"$D/cmds"
[ "$(wc -l <"$D/cmds")" -ge 10 ] || fail "only $(wc -l <"$D/cmds") commands in jgrfs --help"
longopts() {	# longopts CMD [ARG]: the long options of the option lines of its help
	# shellcheck disable=SC2086
	"$JG" $1 --help ${2:-} 2>&1 |
		sed -nE 's/^ +(-[A-Za-z0-9], +)?(--[a-z0-9][a-z0-9-]*)( .*)?$/\2/p'
}
lines=("jgrfs mk" "jgrfs " "jgrfs bench " "jgrfs scrub --re" "jgrfs mkfs --level "
	"jgrfs mkfs -l " "jgrfs mkfs --resync " "jgrfs mkfs --level=" "jgrfs mkfs --level=5"
	"jgrfs mkfs --resync=j" "jgrfs replace --role=1 " "mkfs.jgrfs --le" "jgrfs mount -o "
	"jgrfs mount -o ro,all"
	"fsck.jgrfs -" "jgrfs mkfs --spare " "jgrfs mkfs " "jgrfs mkfs -l 5 --size 1G d"
	"jgrfs status " "jgrfs status --json " "jgrfs replace " "jgrfs replace --role 1 dir1 "
	"jgrfs spare " "jgrfs spare add " "jgrfs spare add --size 1G dir1 " "jgrfs resync-all "
	"jgrfs resync-all on " "jgrfs scrub " "jgrfs mount -o ro " "jgrfs bench fs --dir "
	"jgrfs nosuchcommand " "jgrfs mkfs --" "jgrfs wipe " "jgrfs spare add --force dir1 ")
while read -r cmd; do
	lines+=("jgrfs $cmd --")
done <"$D/cmds"
complete_lines "${lines[@]}" >"$D/out" || fail "the completion function failed"

log "1. the commands"
expect "jgrfs mk" "mkfs"
want=$( (cut -d' ' -f1 "$D/cmds"; echo --help; echo --version) | sort -u | tr '\n' ' ' | sed 's/ $//')
expect "jgrfs " "$want"
has "jgrfs bench " raid fs jnl
expect "jgrfs nosuchcommand " ""

log "2. every command's long options"
n=0
while read -r cmd; do
	want=$(longopts "$cmd")
	[ "$cmd" = scrub ] && want=$(printf '%s\n%s\n' "$want" "$(longopts scrub "$D/work/dir1")")
	want=$(sort -u <<<"$want" | tr '\n' ' ' | sed 's/ $//')
	expect "jgrfs $cmd --" "$want"
	n=$((n + $(wc -w <<<"$want")))
done <"$D/cmds"
[ "$n" -ge 40 ] || fail "only $n long options in all the help texts: has their format changed?"
has "jgrfs mkfs --" --level --resync --spare --assume-clean --help
has "jgrfs scrub --" --repair --max-rate --background
expect "jgrfs scrub --re" "--repair"
expect "mkfs.jgrfs --le" "--level"
has "fsck.jgrfs -" -n -y -p -v
echo "$(wc -l <"$D/cmds") commands, $n long options"

log "3. option values"
expect "jgrfs mkfs --level " "4 5 6"
expect "jgrfs mkfs -l " "4 5 6"
expect "jgrfs mkfs --level=" "4 5 6"
expect "jgrfs mkfs --level=5" "5"
expect "jgrfs mkfs --resync=j" "journal"
expect "jgrfs mkfs --resync " "bitmap full journal off"
expect "jgrfs mkfs --spare " "dir1 file1"
expect "jgrfs bench fs --dir " "dir1"
want=$("$JG" mount --help | sed -n '/^mount options:/,/^$/p' |
	sed -nE 's/^  ([a-z_]+)(=?)[^ ]*  +[^ ].*/\1\2/p' | sort | tr '\n' ' ' | sed 's/ $//')
[ "$(wc -w <<<"$want")" -ge 10 ] || fail "only '$want' in jgrfs mount --help's mount options"
expect "jgrfs mount -o " "$want"
expect "jgrfs mount -o ro,all" "ro,allow_other"

log "4. positional arguments"
# MOUNTPOINT: dir1, not file1, and any jgrfs volume mounted now (other tests')
expect "jgrfs mkfs " "dir1 file1"
expect "jgrfs mkfs -l 5 --size 1G d" "dir1"
has "jgrfs status " dir1; hasnt "jgrfs status " file1
has "jgrfs status --json " dir1; hasnt "jgrfs status --json " file1
has "jgrfs replace " dir1; hasnt "jgrfs replace " file1
has "jgrfs replace --role=1 " dir1; hasnt "jgrfs replace --role=1 " file1
expect "jgrfs replace --role 1 dir1 " "dir1 file1"
expect "jgrfs spare " "add remove"
has "jgrfs spare add " dir1; hasnt "jgrfs spare add " file1
expect "jgrfs spare add --size 1G dir1 " "dir1 file1"
expect "jgrfs spare add --force dir1 " "dir1 file1"
expect "jgrfs wipe " "dir1 file1"
expect "jgrfs resync-all " "off on"
has "jgrfs resync-all on " dir1; hasnt "jgrfs resync-all on " file1
has "jgrfs scrub " dir1 file1
expect "jgrfs mount -o ro " "dir1 file1"

log "5. each help text read once"
: >"$D/calls"
complete_lines "jgrfs mkfs --" "jgrfs mkfs --" "jgrfs mkfs --level " "jgrfs st" \
	"jgrfs mkfs " "jgrfs status " >/dev/null || fail "the completion function failed"
[ "$(grep -cx 'jgrfs --help' "$D/calls")" = 1 ] || { cat "$D/calls"; fail "jgrfs --help read more than once"; }
[ "$(grep -cx 'jgrfs mkfs --help' "$D/calls")" = 1 ] ||
	{ cat "$D/calls"; fail "jgrfs mkfs --help read more than once"; }
[ "$(wc -l <"$D/calls")" = 3 ] || { cat "$D/calls"; fail "calls other than the three help texts"; }

log "6. a mounted volume for MOUNTPOINT"
if [ "$(id -u)" = 0 ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	F=
	for base in "${TMPDIR:-}" /var/tmp "$PWD"; do	# members need O_DIRECT: not tmpfs
		[ -n "$base" ] && [ -d "$base" ] && [ -w "$base" ] || continue
		[ "$(stat -f -c %T "$base")" = tmpfs ] && continue
		F=$(mktemp -d "$base/jgrfs-completion.XXXXXX") && break
	done
	[ -n "$F" ] || fail "no directory outside tmpfs for the member files"
	trap 'cleanup; rm -rf "$F"' EXIT
	MNT="$F/mnt point"	# a space: /proc/mounts writes it as \040
	mkdir "$MNT"
	"$JG" mkfs -l 5 -s 64M "$F/d0" "$F/d1" "$F/d2" >"$D/mkfs.out" 2>&1 ||
		{ cat "$D/mkfs.out"; fail "mkfs"; }
	"$JG" mount "$F/d0" "$F/d1" "$F/d2" "$MNT" >"$D/mount.out" 2>&1 ||
		{ cat "$D/mount.out"; fail "mount"; }
	grep " fuse" /proc/mounts | grep -F "${MNT// /\\040}" || fail "not in /proc/mounts"
	complete_lines "jgrfs status " "jgrfs status $F/mnt" "jgrfs mkfs " "jgrfs mount -o ro " >"$D/out" ||
		fail "the completion function failed"
	grep -qF "$MNT" <(reply "jgrfs status ") || fail "'jgrfs status <TAB>' does not offer $MNT"
	grep -qF "$MNT" <(reply "jgrfs status $F/mnt") || fail "'jgrfs status $F/mnt<TAB>' does not offer $MNT"
	grep -qF "$MNT" <(reply "jgrfs mkfs ") && fail "'jgrfs mkfs <TAB>' offers the mount point $MNT"
	grep -qF "$MNT" <(reply "jgrfs mount -o ro ") && fail "'jgrfs mount -o ro <TAB>' offers the mount point $MNT"
	fusermount3 -u "$MNT" || fail "fusermount3 -u"
	echo "offered: $MNT"
	# UUID= after a U: the arrays `jgrfs examine --scan` finds (the config file's here)
	U=$("$JG" examine "$F/d0" | awk '$1 == "uuid" { print $2; exit }')
	echo "ARRAY DEVICES=$F/d*" >"$F/jgrfs.conf"
	JGRFS_CONF=$F/jgrfs.conf complete_lines "jgrfs mount U" "fsck.jgrfs -n U" "jgrfs mount " \
		>"$D/out" || fail "the completion function failed"
	has "jgrfs mount U" "UUID=$U"
	has "fsck.jgrfs -n U" "UUID=$U"
	hasnt "jgrfs mount " "UUID=$U"	# a scan of every disk only when asked for
	echo "offered: UUID=$U"
else
	echo "SKIP (this part only): not root, or no /dev/fuse or fusermount3"
fi

echo PASS
