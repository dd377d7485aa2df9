#!/usr/bin/env bash
# A unix socket the pool is handed (fd 0 here; socket activation is
# judged alike) with write permission for its group lets every member of
# that group connect and choose the principal (CONTRACT.md §2).  Without
# frontend_secret_file it is served only when that group is root's or
# the configured socket_group (the web server's); any other group is
# refused with a line naming it, and with the secret the group's members
# who do not send it get 403.  About 15 s.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
# shellcheck source=tests/lib/pool.sh
. "$(dirname -- "$0")/../lib/pool.sh"

GROUP=nogroup	# user nobody's own group

priv=$(mktemp -d /tmp/idemorders-sockgroup.XXXXXX)
chmod 0755 "$priv"
trap private_cleanup EXIT

# on_fd0 SOCKET MODE GROUP CONF LOG: the pool with a listening unix
# socket at SOCKET of MODE and GROUP on fd 0.  Sets FD0_PID.
on_fd0() {
	rm -f "$1"
	setsid /usr/bin/python3 - "$1" "$2" "$3" "$IDEMORDERS_BIN" "$4" <<'EOF' >"$5" 2>&1 &
import grp, os, socket, sys
path, mode, group, binary, conf = sys.argv[1], int(sys.argv[2], 8), sys.argv[3], sys.argv[4], sys.argv[5]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chown(path, 0, grp.getgrnam(group).gr_gid)
os.chmod(path, mode)
s.listen(16)
os.dup2(s.fileno(), 0)
os.execv(binary, [binary, "serve", "-c", conf])
EOF
	FD0_PID=$!
	PIDS+=("$FD0_PID")
}

stop_fd0() {
	kill -TERM "$FD0_PID" 2>/dev/null
	wait_until 20 eval '! alive '"$FD0_PID"
	wait "$FD0_PID" 2>/dev/null
}

sock=$priv/fd0.sock

# --- 0660 with another group, no secret: refused ------------------------------
pool_conf "$priv/plain.conf"
on_fd0 "$sock" 0660 "$GROUP" "$priv/plain.conf" "$priv/plain.log"
if wait_until 15 eval '! alive '"$FD0_PID"; then
	wait "$FD0_PID" 2>/dev/null
	rc=$?
else
	rc=running
fi
want="with mode 0660 and group $GROUP: every member of $GROUP can connect to it.*socket_group.*frontend_secret_file"
if [[ $rc != running && $rc -ne 0 ]] && grep -q -- "$want" "$priv/plain.log"; then
	ok "refused: a 0660 socket of group $GROUP: $(grep -o 'crit: .*' "$priv/plain.log" | head -c 160)"
else
	out=$(fcgi_as_nobody "$sock")
	fail "a 0660 socket of group $GROUP without a secret" \
	    "status $rc; nobody (in $GROUP) claiming alice got: $(printf '%s' "$out" | head -n 1); log: $(tail -n 2 "$priv/plain.log" | tr '\n' ' ')"
	stop_fd0
fi

# --- the same group named as socket_group: served -----------------------------
pool_conf "$priv/named.conf" "socket_group = $GROUP"
on_fd0 "$sock" 0660 "$GROUP" "$priv/named.conf" "$priv/named.log"
wait_until 15 grep -qs serving "$priv/named.log"
FCGI_SOCKET=$sock fcgi_req GET "$MOUNT/_health"
expect_status 200 "a 0660 socket of group $GROUP with socket_group = $GROUP"
stop_fd0

# --- root's group: served -----------------------------------------------------
on_fd0 "$sock" 0660 root "$priv/plain.conf" "$priv/root.log"
wait_until 15 grep -qs serving "$priv/root.log"
FCGI_SOCKET=$sock fcgi_req GET "$MOUNT/_health"
expect_status 200 "a 0660 socket of group root"
stop_fd0

# --- another group with the secret: its members get 403 without it -------------
pool_conf "$priv/secret.conf" "frontend_secret_file = $RUNDIR/frontend.secret"
on_fd0 "$sock" 0660 "$GROUP" "$priv/secret.conf" "$priv/secret.log"
wait_until 15 grep -qs serving "$priv/secret.log"
grep -q "every member of $GROUP can connect to it; the frontend secret keeps out" "$priv/secret.log" &&
    ok "served on the secret, and the log says why" ||
    fail "secret log line" "$(grep -v '^$' "$priv/secret.log" | tail -n 3 | tr '\n' ' ')"
out=$(fcgi_as_nobody "$sock")
[[ $out == *"Status: 403"*FRONTEND_SECRET_MISMATCH* ]] &&
    ok "nobody (in $GROUP) without the secret: 403" ||
    fail "nobody without the secret" "$(printf '%s' "$out" | head -c 300)"
FCGI_SOCKET=$sock fcgi_req GET "$MOUNT/_health"
expect_status 200 "with the secret"
stop_fd0

finish
