#!/usr/bin/env bash
# Started as root, the master never changes owner or mode through a path
# the pool's user can replace (CONTRACT.md §2).  The socket's directory
# belongs to that user, as /run/idemorders does in the Debian package; an
# LD_PRELOAD shim (tests/lib/bind-race.c) lets a process of that user
# act right after bind(): it swaps the new socket for a symlink to a
# root:root 0600 file, or for a socket of its own.  The file must keep
# its owner, group and mode, and the pool must either serve on a socket
# with the configured group and mode or refuse with a clear error.  A
# set-group-ID directory (new files would get its group, not
# socket_group) is refused too, and a group-writable one is warned
# about.  About 10 s.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
# shellcheck source=tests/lib/pool.sh
. "$(dirname -- "$0")/../lib/pool.sh"

POOL_USER=idemorders

priv=$(mktemp -d /tmp/idemorders-race.XXXXXX)
chmod 0755 "$priv"
trap private_cleanup EXIT

shim=$priv/bind-race.so
if ! cc -shared -fPIC -Wall -o "$shim" "$REPO/tests/lib/bind-race.c" -ldl \
    2>"$priv/cc.log"; then
	fail "build the bind() shim" "$(head -c 300 "$priv/cc.log")"
	finish
fi

# The socket's directory belongs to the pool's user; the file the swap
# points at is root's alone.
sdir=$priv/run
install -d -m 0755 -o "$POOL_USER" -g "$POOL_USER" "$sdir"
sock=$sdir/idemorders.sock
target=$priv/precious
want_target="root root 600 precious"

{
	echo "listen = unix:$sock"
	echo "socket_mode = 0660"
	echo "socket_group = www-data"
	echo "user = $POOL_USER"
	echo "workers = 1"
	echo "frontend_secret_file = $RUNDIR/frontend.secret"
	grep -E '^[[:space:]]*(db_[a-z_]*|mount)[[:space:]]*=' "$IDEMORDERS_CONF"
} >"$priv/pool.conf"

# target_state: owner, group, mode and content of the target file.
target_state() {
	printf '%s %s' "$(stat -c '%U %G %a' "$target")" "$(cat "$target")"
}

# serve_plain NAME: the pool without the shim serves on a socket with
# the configured mode and group.
serve_plain() {
	local log=$priv/plain.log pid got
	rm -f "$sock" "$sock.aside" "$sock.done"
	: >"$log"
	setsid "$IDEMORDERS_BIN" serve -c "$priv/pool.conf" </dev/null >"$log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	wait_until 15 eval 'grep -q "serving" "$log" || ! alive '"$pid"
	got=$(stat -c '%F %a %U %G' "$sock" 2>&1)
	[[ $got == "socket 660 root www-data" ]] && ok "$1: serves on $got" ||
	    fail "$1: socket" "$got; $(tail -n 2 "$log" | tr '\n' ' ')"
	FCGI_SOCKET=$sock fcgi_req GET "$MOUNT/_health"
	expect_status 200 "$1: health"
	kill -TERM "$pid"
	wait_until 20 eval '! alive '"$pid"
	wait "$pid" 2>/dev/null
	cp "$log" "$priv/plain-last.log"
}

# race MODE: start the pool as root with the shim racing in MODE, then
# judge the target file, the socket and the pool.
race() {
	local mode=$1 log=$priv/$1.log pid got
	rm -f "$sock" "$sock.aside" "$sock.done" "$target"
	echo precious >"$target"
	chown root:root "$target"
	chmod 0600 "$target"
	: >"$log"
	setsid env LD_PRELOAD="$shim" BIND_RACE_MODE="$mode" \
	    BIND_RACE_PATH="$sock" BIND_RACE_TARGET="$target" \
	    BIND_RACE_UID="$(id -u "$POOL_USER")" \
	    BIND_RACE_GID="$(id -g "$POOL_USER")" \
	    "$IDEMORDERS_BIN" serve -c "$priv/pool.conf" </dev/null >"$log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	wait_until 15 eval 'grep -q "serving" "$log" || ! alive '"$pid"
	echo "       $mode: the shim did: $(cat "$sock.done" 2>/dev/null || echo '(no mark)')"
	got=$(target_state)
	[[ $got == "$want_target" ]] &&
	    ok "$mode: the root:root 0600 file is untouched ($got)" ||
	    fail "$mode: the root:root 0600 file changed" "want '$want_target', got '$got'"
	if alive "$pid" && grep -q "serving" "$log"; then
		got=$(stat -c '%F %a %U %G' "$sock" 2>&1)
		[[ $got == "socket 660 root www-data" ]] &&
		    ok "$mode: serves on $sock: $got" ||
		    fail "$mode: the socket at the path" "want 'socket 660 root www-data', got '$got'"
		FCGI_SOCKET=$sock fcgi_req GET "$MOUNT/_health"
		expect_status 200 "$mode: health on the socket at the path"
		kill -TERM "$pid"
		wait_until 20 eval '! alive '"$pid"
	else
		wait "$pid" 2>/dev/null
		got=$(grep -E 'crit:|fatal|error' "$log" | tail -n 1)
		[[ -n $got ]] && ok "$mode: refused: $got" ||
		    fail "$mode: neither served nor refused clearly" "$(tail -n 3 "$log" | tr '\n' ' ')"
		got=$(stat -c '%F %U' "$sock" 2>/dev/null)
		[[ $got != "socket root" ]] && ok "$mode: no socket of root left at the path" ||
		    fail "$mode: refusal" "left its socket at $sock"
	fi
	wait "$pid" 2>/dev/null
	got=$(find "$sdir" -mindepth 1 ! -path "$sock" ! -path "$sock.aside" \
	    ! -path "$sock.done" -print 2>/dev/null)
	[[ -z $got ]] && ok "$mode: nothing else left in the socket's directory" ||
	    fail "$mode: left behind" "$got"
}

serve_plain "the pool user's 0755 directory, no race"
race swap
race own

# The pool without the shim: a set-group-ID directory would give the
# socket the directory's group.
chmod 2755 "$sdir"
rm -f "$sock" "$sock.aside" "$sock.done"
timeout 20 "$IDEMORDERS_BIN" serve -c "$priv/pool.conf" </dev/null >"$priv/sgid.log" 2>&1
rc=$?
if [[ $rc -ne 0 && $rc -ne 124 ]] && grep -q 'set-group-ID' "$priv/sgid.log"; then
	ok "set-group-ID directory refused: $(grep -o 'created with gid.*' "$priv/sgid.log" | head -c 120)"
else
	fail "set-group-ID directory" "status $rc; $(tail -n 2 "$priv/sgid.log" | tr '\n' ' ')"
fi
[[ ! -e $sock ]] && ok "no socket left after the set-group-ID refusal" ||
    fail "set-group-ID refusal" "left $(ls -l "$sock")"

# A group-writable directory: served, with a warning.
chmod g-s,g+w "$sdir"
serve_plain "group-writable directory"
grep -q "other users can replace the socket" "$priv/plain-last.log" &&
    ok "group-writable directory warned: $(grep -o 'has mode.*' "$priv/plain-last.log" | head -c 100)" ||
    fail "group-writable directory warning" "$(tail -n 3 "$priv/plain-last.log" | tr '\n' ' ')"

finish
