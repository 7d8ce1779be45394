# SPDX-License-Identifier: MIT
# bash completion for jgrfs, mkfs.jgrfs and fsck.jgrfs (issue 26), installed
# by `meson install` into bash-completion's completions directory.
#
# Nothing here lists a command or an option: they are read, at completion
# time, from the program being completed, so they cannot drift from it:
#   jgrfs --help          the commands: the lines of its "commands:" section
#                         ("  NAME   summary", NAME one or two words: "bench fs")
#   jgrfs CMD --help      the options: lines "  -x, --long ARG  text",
#                         "      --long  text", "  -x ARG  text" (an upper-case
#                         ARG after one space: the option takes a value), and
#                         the positional arguments: its "usage:" forms
#                         (MOUNTPOINT, DEV..., literal words such as add|remove)
# A help text that names "jgrfs CMD --help MOUNTPOINT" (scrub) has a second
# one for a mount point: its options are offered as well. Each help text is
# read once per shell session (cached per program and command).
#
# Values: --level 4 5 6, --resync journal bitmap full off, -o OPTIONS the
# names of a "mount options:" section (jgrfs mount), DIR a directory,
# MOUNTPOINT a directory or a mounted jgrfs volume (/proc/mounts: fuse, source
# jgrfs), UUID=<uuid> after a U the arrays `jgrfs examine --scan` finds,
# anything else that names a file (DEV, PATH, FILE...) files; numbers
# and sizes nothing. Works with and without the bash-completion package
# (_filedir when it is loaded, compgen -f otherwise).

# per "PROG|CMD": the help text's options, those that take a value, the usage
# forms, the -o options of its "mount options:" (name, or name= for a value)
declare -gA _jgrfs_c_opts _jgrfs_c_args _jgrfs_c_forms _jgrfs_c_done _jgrfs_c_mopts
# per PROG: its commands, one a line
declare -gA _jgrfs_c_cmds

# _jgrfs_parse_help PROG|CMD < help text: fill the caches of one command.
_jgrfs_parse_help()
{
	local key=$1 line opts=" " args=" " forms="" form="" in_usage=0 in_mopts=0 mopts="" w
	local re_mopt='^  ([a-z_]+)(=?)[^ ]*  +[^ ]'
	local re_form='^ +(jgrfs|mkfs\.jgrfs|fsck\.jgrfs) '
	local re_opt='^ +(-[A-Za-z0-9])?(, )?(--[a-z0-9][a-z0-9-]*)?( [A-Z][A-Z0-9_]*)?( |$)'
	while IFS= read -r line; do
		if [[ $line == usage:* ]]; then
			in_usage=1
			form=${line#usage:}
			continue
		fi
		if ((in_usage)); then
			if [[ -z ${line// /} ]]; then
				in_usage=0
				forms+=$form$'\n'
				form=""
			elif [[ $line =~ $re_form ]]; then
				forms+=$form$'\n'	# a new form
				form=$line
			else
				form+=" $line"	# a form continued on the next line
			fi
			continue
		fi
		# mount options: "  name=VALUE   text", "  name   text", to a blank line
		if [[ $line == "mount options:"* ]]; then
			in_mopts=1
			continue
		fi
		if ((in_mopts)); then
			[[ -z ${line// /} ]] && in_mopts=0
			[[ $line =~ $re_mopt ]] && mopts+="${BASH_REMATCH[1]}${BASH_REMATCH[2]} "
			continue
		fi
		# option lines: "  -x, --long ARG", "      --long", "  --long ARG", "  -x ARG"
		[[ $line =~ $re_opt ]] || continue
		[[ -n ${BASH_REMATCH[1]}${BASH_REMATCH[3]} ]] || continue
		# "-x, --long" needs the comma; "-x --long" is no option line
		[[ -n ${BASH_REMATCH[1]} && -n ${BASH_REMATCH[3]} && -z ${BASH_REMATCH[2]} ]] && continue
		for w in ${BASH_REMATCH[1]} ${BASH_REMATCH[3]}; do
			# once (scrub's two help texts share options)
			[[ " ${_jgrfs_c_opts[$key]:-}$opts" == *" $w "* ]] && continue
			opts+="$w "
			[[ -n ${BASH_REMATCH[4]} ]] && args+="$w=${BASH_REMATCH[4]# } "
		done
	done
	[[ -n $form ]] && forms+=$form$'\n'
	_jgrfs_c_opts[$key]+=$opts
	_jgrfs_c_args[$key]+=$args
	_jgrfs_c_forms[$key]+=$forms
	_jgrfs_c_mopts[$key]+=$mopts
}

# _jgrfs_load PROG CMD: read `PROG CMD --help` (PROG --help for mkfs.jgrfs
# and fsck.jgrfs: CMD is their own) once.
_jgrfs_load()
{
	local prog=$1 cmd=$2 key="$1|$2" text
	[[ -n ${_jgrfs_c_done[$key]:-} ]] && return
	_jgrfs_c_done[$key]=1
	local -a words=()
	[[ $prog == *mkfs.jgrfs || $prog == *fsck.jgrfs ]] || read -ra words <<<"$cmd"
	text=$("$prog" "${words[@]}" --help 2>&1 </dev/null)
	_jgrfs_parse_help "$key" <<<"$text"
	# a second help text for a mount point (jgrfs scrub --help MOUNTPOINT)
	if [[ $text == *"$cmd --help MOUNTPOINT"* ]]; then
		_jgrfs_parse_help "$key" < <("$prog" "${words[@]}" --help / 2>&1 </dev/null)
	fi
}

# _jgrfs_load_commands PROG: read the commands of `PROG --help` once, into
# _jgrfs_c_cmds[PROG] (one a line). Not in a $(subshell): the cache would go.
_jgrfs_load_commands()
{
	local prog=$1 line in_cmds=0 cmds="" re='^  ([^ ]+( [^ ]+)?)  +[^ ]'
	[[ -n ${_jgrfs_c_cmds[$prog]+set} ]] && return
	while IFS= read -r line; do
		if [[ $line == commands:* ]]; then
			in_cmds=1
		elif ((in_cmds)); then
			[[ $line =~ $re ]] || break
			cmds+=${BASH_REMATCH[1]}$'\n'
		fi
	done < <("$prog" --help 2>&1 </dev/null)
	_jgrfs_c_cmds[$prog]=$cmds
}

# _jgrfs_mounts: the mount points of mounted jgrfs volumes
_jgrfs_mounts()
{
	local src dir type rest
	[[ -r /proc/mounts ]] || return 0
	while read -r src dir type rest; do
		[[ $type == fuse.jgrfs || ($src == jgrfs && $type == fuse*) ]] || continue
		printf '%b\n' "$dir"	# /proc/mounts writes a space as \040
	done </proc/mounts
}

# _jgrfs_uuids PROG: UUID=<uuid> of each array `jgrfs examine --scan` finds
_jgrfs_uuids()
{
	local prog=$1 u rest
	[[ ${prog##*/} == jgrfs ]] || prog=jgrfs	# mkfs.jgrfs, fsck.jgrfs: no examine
	while read -r u rest; do
		[[ $u == UUID ]] || printf 'UUID=%s\n' "$u"
	done < <("$prog" examine --scan -q 2>/dev/null </dev/null)
}

_jgrfs_files()
{
	local cur=$1
	if declare -F _filedir >/dev/null; then
		_filedir
	else
		compopt -o filenames 2>/dev/null
		mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$cur")
	fi
}

_jgrfs_dirs()
{
	local cur=$1
	if declare -F _filedir >/dev/null; then
		_filedir -d
	else
		compopt -o filenames 2>/dev/null
		mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -d -- "$cur")
	fi
}

_jgrfs_mountpoints()
{
	local cur=$1 m
	_jgrfs_dirs "$cur"
	while IFS= read -r m; do
		[[ $m == "$cur"* ]] && COMPREPLY+=("$m")
	done < <(_jgrfs_mounts)
}

# _jgrfs_value KIND OPTION CUR KEY: the values of an option's argument
_jgrfs_value()
{
	local kind=$1 opt=$2 cur=$3 key=$4
	case $opt in
	--level | -l) [[ $kind == N ]] && mapfile -t COMPREPLY < <(compgen -W "4 5 6" -- "$cur") ;;
	--resync | -r)
		if [[ $kind == POLICY ]]; then
			mapfile -t COMPREPLY < <(compgen -W "journal bitmap full off" -- "$cur")
		fi
		;;
	esac
	((${#COMPREPLY[@]})) && return
	# -o OPTIONS of mount: the names of "mount options:", after a comma too
	if [[ $kind == OPTIONS && -n ${_jgrfs_c_mopts[$key]:-} ]]; then
		local pre=""
		[[ $cur == *,* ]] && pre=${cur%,*},
		mapfile -t COMPREPLY < <(compgen -P "$pre" -W "${_jgrfs_c_mopts[$key]}" -- "${cur##*,}")
		[[ ${COMPREPLY[*]} == *=* ]] && compopt -o nospace 2>/dev/null
		return 0
	fi
	case $kind in
	DIR) _jgrfs_dirs "$cur" ;;
	MOUNTPOINT) _jgrfs_mountpoints "$cur" ;;
	DEV* | NEWDEV | PATH | FILE) _jgrfs_files "$cur" ;;
	esac
	return 0
}

# _jgrfs_positional KEY N CUR: the Nth (from 1) positional argument, from the
# usage forms whose literal words match those given
_jgrfs_positional()
{
	local key=$1 n=$2 cur=$3 form tok kinds=" " i k ok var
	shift 3
	local -a given=("$@") toks cw args
	local re_opt='\[[^][]*\]' re_rem='\([^()]*\)'
	while IFS= read -r form; do
		[[ -n $form ]] || continue
		# no [optional] groups, no (remarks)
		while [[ $form =~ $re_opt ]]; do form=${form/"${BASH_REMATCH[0]}"/}; done
		while [[ $form =~ $re_rem ]]; do form=${form/"${BASH_REMATCH[0]}"/}; done
		read -ra toks <<<"$form"
		# toks: PROG [CMD words] ARGS...; the program and the command's words go
		toks=("${toks[@]:1}")
		read -ra cw <<<"${key#*|}"
		for ((i = 0; i < ${#cw[@]}; i++)); do
			[[ ${toks[0]:-} == "${cw[i]}" ]] || break
			toks=("${toks[@]:1}")
		done
		# and the options left outside brackets, with their values (-o OPTIONS)
		args=()
		for ((i = 0; i < ${#toks[@]}; i++)); do
			if [[ ${toks[i]} == -* ]]; then
				[[ ${toks[i]} != *=* && " ${_jgrfs_c_args[$key]:-} " == *" ${toks[i]}="* ]] && ((i++))
				continue
			fi
			args+=("${toks[i]}")
		done
		# literal words before the Nth must match what was typed
		ok=1 var=""
		for ((i = 0; i < n - 1 && i < ${#args[@]}; i++)); do
			tok=${args[i]}
			[[ $tok == *... ]] && { var=${tok%...}; break; }
			if [[ $tok == [a-z]* ]]; then
				[[ "|$tok|" == *"|${given[i]}|"* ]] || { ok=0; break; }
			fi
		done
		((ok)) || continue
		if [[ -n $var ]]; then
			kinds+="$var "
		elif ((n - 1 < ${#args[@]})); then
			tok=${args[n - 1]}
			[[ $tok == *... ]] && tok=${tok%...}
			kinds+="$tok "
		fi
	done <<<"${_jgrfs_c_forms[$key]:-}"
	for k in $kinds; do
		if [[ $k == [a-z]* ]]; then
			mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -W "${k//|/ }" -- "$cur")
		elif [[ $k == MOUNTPOINT && ${key#*|} == mount ]]; then
			_jgrfs_dirs "$cur"	# where to mount: not a volume mounted already
		elif [[ $k == MOUNTPOINT ]]; then
			_jgrfs_mountpoints "$cur"
		elif [[ $k == UUID=* ]]; then
			# the arrays found (a scan of every block device): asked for by a U
			[[ $cur == U* ]] && mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < \
				<(compgen -W "$(_jgrfs_uuids "${key%%|*}")" -- "$cur")
		else
			_jgrfs_files "$cur"
		fi
	done
	# the same candidate from two forms once
	if ((${#COMPREPLY[@]} > 1)); then
		mapfile -t COMPREPLY < <(printf '%s\n' "${COMPREPLY[@]}" | sort -u)
	fi
	return 0
}

_jgrfs()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev="" cword=$COMP_CWORD
	local prog=${COMP_WORDS[0]} cmd="" first=1 i
	COMPREPLY=()
	((cword > 0)) && prev=${COMP_WORDS[cword - 1]}
	[[ $prog == "~"/* ]] && prog=$HOME/${prog#"~"/}
	command -v "$prog" >/dev/null 2>&1 || return 0

	case ${prog##*/} in
	mkfs.jgrfs) cmd=mkfs ;;
	fsck.jgrfs) cmd=fsck ;;
	*)
		# the command: one word, or two (bench fs)
		local cmds
		_jgrfs_load_commands "$prog"
		cmds=${_jgrfs_c_cmds[$prog]}
		if ((cword == 1)); then
			mapfile -t COMPREPLY < <(compgen -W "$(cut -d' ' -f1 <<<"$cmds" | sort -u) --help --version" -- "$cur")
			return 0
		fi
		cmd=${COMP_WORDS[1]}
		first=2
		if grep -qx -- "$cmd [^ ]*" <<<"$cmds"; then
			if ((cword == 2)) && [[ $cur != -* ]]; then
				mapfile -t COMPREPLY < <(compgen -W "$(sed -n "s/^$cmd \([^ ]*\)\$/\1/p" <<<"$cmds")" -- "$cur")
				return 0
			fi
			if grep -qx -- "$cmd ${COMP_WORDS[2]}" <<<"$cmds"; then
				cmd="$cmd ${COMP_WORDS[2]}"
				first=3
			fi
		fi
		grep -qx -- "$cmd" <<<"$cmds" || return 0
		;;
	esac

	local key="$prog|$cmd"
	_jgrfs_load "$prog" "$cmd"

	# --opt=value: bash splits it as --opt = value ("=" is in COMP_WORDBREAKS;
	# the word at the cursor is "=" right after it), else it is one word,
	# replaced whole: the replies carry "--opt="
	local eq=""
	if [[ $cur == = && $prev == --* ]]; then
		cur=""
	elif [[ $prev == = && $cword -ge 2 ]]; then
		prev=${COMP_WORDS[cword - 2]}
	elif [[ $cur == --*=* ]]; then
		prev=${cur%%=*}
		eq=$prev=
		cur=${cur#*=}
	fi
	# the value of an option that takes one
	local a
	for a in ${_jgrfs_c_args[$key]:-}; do
		if [[ ${a%%=*} == "$prev" ]]; then
			_jgrfs_value "${a#*=}" "$prev" "$cur" "$key"
			[[ -n $eq ]] && COMPREPLY=("${COMPREPLY[@]/#/$eq}")
			return 0
		fi
	done

	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "${_jgrfs_c_opts[$key]:-}" -- "$cur")
		return 0
	fi

	# the positional arguments typed so far (options and their values skipped)
	local -a given=()
	local w skip=0
	for ((i = first; i < cword; i++)); do
		w=${COMP_WORDS[i]}
		# --opt = value: the value goes
		[[ $w == = ]] && { skip=1; continue; }
		if ((skip)); then
			skip=0
			continue
		fi
		if [[ $w == -* ]]; then
			[[ $w == *=* ]] && continue
			[[ " ${_jgrfs_c_args[$key]:-} " == *" $w="* ]] && skip=1
			continue
		fi
		given+=("$w")
	done
	_jgrfs_positional "$key" $((${#given[@]} + 1)) "$cur" "${given[@]}"
}

complete -F _jgrfs jgrfs mkfs.jgrfs fsck.jgrfs
