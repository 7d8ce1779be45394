# SPDX-License-Identifier: MIT
# nbdkit servers for the NBD member tests (nbd_members.sh, nbd_takeover.sh),
# sourced after fuse_lib.sh (it_fail, IT_PIDS, $T).

# nbd_start I [--filter=F...] [KEY=VALUE...]: serve $T/d$I.img on $T/s$I.sock in
# the background; returns once the server listens (nbdkit writes its pid file
# then). Filter parameters go after the plugin's, as nbdkit(1) wants them.
nbd_start() {
	local i=$1 n=0 filter=()
	shift
	while [ $# -gt 0 ] && [ "${1#--filter=}" != "$1" ]; do
		filter+=("$1")
		shift
	done
	rm -f "$T/s$i.sock" "$T/p$i.pid"
	nbdkit -f --unix "$T/s$i.sock" --pidfile "$T/p$i.pid" "${filter[@]}" file "$T/d$i.img" "$@" \
		</dev/null >>"$T/nbdkit$i.log" 2>&1 &
	IT_PIDS="$IT_PIDS $!"	# fuse_lib's trap kills them
	while [ ! -s "$T/p$i.pid" ]; do
		n=$((n + 1))
		[ $n -lt 300 ] || it_fail "nbdkit $i did not start within 30 s (see $T/nbdkit$i.log)"
		sleep 0.1
	done
	eval "NBD_PID$i=$!"
}
nbd_uri() {
	echo "nbd+unix:///?socket=$T/s$1.sock"
}
# nbd_kill I: kill -9 server I and reap it
nbd_kill() {
	local pid
	eval "pid=\$NBD_PID$1"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}
