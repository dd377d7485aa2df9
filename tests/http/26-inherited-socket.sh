#!/usr/bin/env bash
# An inherited socket is held to the rules of one the pool opens
# (CONTRACT.md §2): a unix socket handed over by socket activation
# (systemd-socket-activate, whose default mode is 0666, or an abstract
# @name) or on fd 0 (spawn-fcgi -M 0666) that every local user can
# connect to is refused, with a log line naming what allows it, unless
# frontend_secret_file is set; then the secret keeps out whoever connects
# without it.  An inherited TCP socket needs frontend_secret_file, as a
# configured one does (every local user can connect to 127.0.0.1), and
# allow_peers when other hosts can reach it; a reload may not drop the
# secret it is served on.  A socket bound to a relative name by a
# spawner that then changed directory is judged by its own file (the
# kernel's unix_diag), not by what that name leads to from the pool's
# directory; when its file cannot be found, only the secret lets it
# serve.  The sockets lighttpd's bin-path and mod_fcgid create still
# serve.  About 40 s.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
# shellcheck source=tests/lib/pool.sh
. "$(dirname -- "$0")/../lib/pool.sh"

WANT_REFUSAL='every local user can connect to it.*set frontend_secret_file'

priv=$(mktemp -d /tmp/idemorders-inherit.XXXXXX)
chmod 0755 "$priv"
trap private_cleanup EXIT

pool_conf "$priv/plain.conf"
pool_conf "$priv/secret.conf" "frontend_secret_file = $RUNDIR/frontend.secret"

# knock ADDRESS: connect once as nobody (systemd-socket-activate starts
# the service on the first connection); ADDRESS may be @name.
knock() {
	runuser -u nobody -- timeout 5 /usr/bin/python3 - "$1" <<'EOF' >/dev/null 2>&1 &
import socket, sys, time
a = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("\0" + a[1:] if a.startswith("@") else a)
time.sleep(3)
EOF
}

# judge NAME PID LOG: the pool must have exited non-zero with the
# refusal in LOG.
judge_refusal() {
	local name=$1 pid=$2 log=$3 rc
	if wait_until 15 eval '! alive '"$pid"; then
		wait "$pid" 2>/dev/null
		rc=$?
	else
		rc=running
	fi
	if [[ $rc != running && $rc -ne 0 ]] && grep -q -- "$WANT_REFUSAL" "$log"; then
		ok "refused: $name: $(grep -o 'crit: .*' "$log" | head -c 160)"
	else
		fail "refused: $name" "status $rc; log: $(tail -n 2 "$log" | tr '\n' ' ')"
		alive "$pid" && kill -TERM "$pid"
	fi
}

# --- socket activation: systemd-socket-activate's default mode 0666 ----------

asock=$priv/act.sock
alog=$priv/act.log
setsid systemd-socket-activate -l "$asock" "$IDEMORDERS_BIN" serve \
    -c "$priv/plain.conf" </dev/null >"$alog" 2>&1 &
apid=$!
PIDS+=("$apid")
wait_until 10 eval '[[ -S '"$asock"' ]]'
# What a .socket unit without SocketMode= gives: 0666.
chmod 0666 "$asock"
out=$(fcgi_as_nobody "$asock")
[[ $out != *"Status: "* ]] && ok "nobody on the activated 0666 socket is not answered" ||
    fail "nobody on the activated 0666 socket" "answered: $(printf '%s' "$out" | head -n 1)"
judge_refusal "activated 0666 socket" "$apid" "$alog"

# --- socket activation: an abstract socket -----------------------------------

unique_name abstract @idemorders-inherit
blog=$priv/abstract.log
setsid systemd-socket-activate -l "$abstract" "$IDEMORDERS_BIN" serve \
    -c "$priv/plain.conf" </dev/null >"$blog" 2>&1 &
bpid=$!
PIDS+=("$bpid")
wait_until 10 grep -q "Listening on" "$blog"
knock "$abstract"
WANT_REFUSAL='abstract unix socket.*set frontend_secret_file' \
    judge_refusal "activated abstract socket $abstract" "$bpid" "$blog"

# --- fd 0: a 0666 socket, as spawn-fcgi -M 0666 passes it ---------------------

# on_fd0 SOCKET MODE CONF LOG: start the pool with a listening unix
# socket at SOCKET of MODE on fd 0.  Sets FD0_PID.
on_fd0() {
	setsid /usr/bin/python3 - "$1" "$2" "$IDEMORDERS_BIN" "$3" <<'EOF' >"$4" 2>&1 &
import os, socket, sys
path, mode, binary, conf = sys.argv[1], int(sys.argv[2], 8), sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, mode)
s.listen(16)
os.dup2(s.fileno(), 0)
os.execv(binary, [binary, "serve", "-c", conf])
EOF
	FD0_PID=$!
	PIDS+=("$FD0_PID")
}

fsock=$priv/fd0.sock
on_fd0 "$fsock" 0666 "$priv/plain.conf" "$priv/fd0.log"
wait_until 10 eval '[[ -S '"$fsock"' ]]'
sleep 0.5
out=$(fcgi_as_nobody "$fsock")
[[ $out != *"Status: "* ]] && ok "nobody on the 0666 socket on fd 0 is not answered" ||
    fail "nobody on the 0666 socket on fd 0" "answered: $(printf '%s' "$out" | head -n 1)"
judge_refusal "0666 socket on fd 0" "$FD0_PID" "$priv/fd0.log"

# The same socket with mode 0660: served.
rm -f "$fsock"
on_fd0 "$fsock" 0660 "$priv/plain.conf" "$priv/fd0-660.log"
wait_until 10 grep -q serving "$priv/fd0-660.log"
FCGI_SOCKET=$fsock fcgi_req GET "$MOUNT/_health"
expect_status 200 "a 0660 socket on fd 0"
kill -TERM "$FD0_PID"
wait_until 20 eval '! alive '"$FD0_PID"

# --- fd 0: a TCP socket other hosts can reach, as a configured one ----------------

TPORT=$((18096 + ${IDEMORDERS_PORT_OFFSET:-0}))
setsid /usr/bin/python3 - "$TPORT" "$IDEMORDERS_BIN" "$priv/plain.conf" <<'EOF' >"$priv/tcp.log" 2>&1 &
import os, socket, sys
port, binary, conf = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", port))
s.listen(16)
os.dup2(s.fileno(), 0)
os.execv(binary, [binary, "serve", "-c", conf])
EOF
tpid=$!
PIDS+=("$tpid")
WANT_REFUSAL='accepts TCP connections from other hosts.*allow_peers' \
    judge_refusal "a TCP socket on 0.0.0.0 on fd 0" "$tpid" "$priv/tcp.log"

# --- fd 0: a TCP socket on loopback: every local user can connect ------------------

# on_fd0_tcp HOST PORT CONF LOG: the pool with a listening TCP socket on
# HOST:PORT on fd 0 (spawn-fcgi -a 127.0.0.1 -p PORT).  Sets FD0_PID.
on_fd0_tcp() {
	setsid /usr/bin/python3 - "$1" "$2" "$IDEMORDERS_BIN" "$3" <<'EOF' >"$4" 2>&1 &
import os, socket, sys
host, port, binary, conf = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((host, port))
s.listen(16)
os.dup2(s.fileno(), 0)
os.execv(binary, [binary, "serve", "-c", conf])
EOF
	FD0_PID=$!
	PIDS+=("$FD0_PID")
}

on_fd0_tcp 127.0.0.1 "$TPORT" "$priv/plain.conf" "$priv/tcp-lo.log"
sleep 1
out=$(fcgi_as_nobody "127.0.0.1:$TPORT")
[[ $out != *"Status: "* ]] && ok "nobody on a loopback TCP socket on fd 0 is not answered" ||
    fail "nobody on the loopback TCP socket on fd 0" "answered: $(printf '%s' "$out" | head -n 1)"
WANT_REFUSAL='is a TCP socket: every local user can connect to it.*set frontend_secret_file' \
    judge_refusal "a TCP socket on 127.0.0.1 on fd 0" "$FD0_PID" "$priv/tcp-lo.log"

# With the secret: served, and nobody without it is answered 403.
cp "$priv/secret.conf" "$priv/tcp-secret.conf"
on_fd0_tcp 127.0.0.1 "$TPORT" "$priv/tcp-secret.conf" "$priv/tcp-lo-secret.log"
wait_until 10 grep -q serving "$priv/tcp-lo-secret.log"
FCGI_SOCKET=127.0.0.1:$TPORT fcgi_req GET "$MOUNT/_health"
expect_status 200 "a loopback TCP socket on fd 0 with frontend_secret_file: health with the secret"
out=$(fcgi_as_nobody "127.0.0.1:$TPORT")
[[ $out == *"Status: 403"*FRONTEND_SECRET_MISMATCH* ]] &&
    ok "nobody on it without the secret: 403" ||
    fail "nobody on the secret-guarded TCP socket" "$(printf '%s' "$out" | head -c 200)"
# A reload may not drop the secret the socket is served on.
cp "$priv/plain.conf" "$priv/tcp-secret.conf"
kill -HUP "$FD0_PID"
wait_until 10 grep -q 'reload failed.*has no frontend_secret_file' "$priv/tcp-lo-secret.log" &&
    ok "SIGHUP with the secret removed: $(grep -o 'reload failed.*' "$priv/tcp-lo-secret.log" | head -c 160)" ||
    fail "reload without the secret" "$(tail -n 2 "$priv/tcp-lo-secret.log" | tr '\n' ' ')"
out=$(fcgi_as_nobody "127.0.0.1:$TPORT")
[[ $out == *"Status: 403"*FRONTEND_SECRET_MISMATCH* ]] &&
    ok "after that reload, nobody without the secret still gets 403" ||
    fail "nobody after the refused reload" "$(printf '%s' "$out" | head -c 200)"
kill -TERM "$FD0_PID"
wait_until 20 eval '! alive '"$FD0_PID"

# --- fd 0: a socket bound to a relative path by a spawner that then -------------
# changes directory (as lighttpd's bin-path does): the name getsockname()
# gives is relative to a directory the pool is not in.  Only the socket
# itself can say who may connect; when its file cannot be found from
# here, it is treated as world-connectable.

# on_fd0_rel BINDDIR NAME MODE RUNDIR CONF LOG: bind NAME in BINDDIR with
# MODE, change to RUNDIR, start the pool with the socket on fd 0.
on_fd0_rel() {
	setsid /usr/bin/python3 - "$@" "$IDEMORDERS_BIN" <<'EOF' >"$6" 2>&1 &
import os, socket, sys
binddir, name, mode, rundir, conf, log, binary = sys.argv[1:8]
os.chdir(binddir)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(name)
os.chmod(name, int(mode, 8))
s.listen(16)
os.chdir(rundir)
os.dup2(s.fileno(), 0)
os.execv(binary, [binary, "serve", "-c", conf])
EOF
	FD0_PID=$!
	PIDS+=("$FD0_PID")
}

rel=$priv/rel
install -d -m 0755 "$rel/bound" "$rel/elsewhere"
WANT_REL='cannot tell who may connect.*set frontend_secret_file'

# 0666 in bound/, the pool in elsewhere/ where no such name exists.
on_fd0_rel "$rel/bound" fd0.sock 0666 "$rel/elsewhere" "$priv/plain.conf" "$priv/rel1.log"
wait_until 10 eval '[[ -S '"$rel/bound/fd0.sock"' ]]'
sleep 0.5
out=$(fcgi_as_nobody "$rel/bound/fd0.sock")
[[ $out != *"Status: "* ]] && ok "nobody on a relative 0666 socket (spawner changed directory) is not answered" ||
    fail "nobody on the relative 0666 socket" "answered: $(printf '%s' "$out" | head -n 1)"
WANT_REFUSAL=$WANT_REL judge_refusal "relative 0666 socket, not found from the pool's directory" \
    "$FD0_PID" "$priv/rel1.log"

# The same, with a 0660 socket of that name where the pool runs: a lookup
# by name finds the wrong file; the socket's own file is what counts.
rm -f "$rel/bound/fd0.sock"
/usr/bin/python3 -c 'import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o660)' \
    "$rel/elsewhere/fd0.sock"
on_fd0_rel "$rel/bound" fd0.sock 0666 "$rel/elsewhere" "$priv/plain.conf" "$priv/rel2.log"
wait_until 10 eval '[[ -S '"$rel/bound/fd0.sock"' ]]'
sleep 0.5
out=$(fcgi_as_nobody "$rel/bound/fd0.sock")
[[ $out != *"Status: "* ]] && ok "nobody on a relative 0666 socket beside a 0660 decoy is not answered" ||
    fail "nobody on the relative 0666 socket beside a decoy" "answered: $(printf '%s' "$out" | head -n 1)"
WANT_REFUSAL=$WANT_REL judge_refusal "relative 0666 socket, another 0660 socket of that name where the pool runs" \
    "$FD0_PID" "$priv/rel2.log"

# A relative 0660 socket the pool can find (no change of directory): served.
rm -f "$rel/bound/fd0.sock"
on_fd0_rel "$rel/bound" fd0.sock 0660 "$rel/bound" "$priv/plain.conf" "$priv/rel3.log"
wait_until 10 grep -q serving "$priv/rel3.log"
FCGI_SOCKET=$rel/bound/fd0.sock fcgi_req GET "$MOUNT/_health"
expect_status 200 "a relative 0660 socket found where the pool runs"
kill -TERM "$FD0_PID"
wait_until 20 eval '! alive '"$FD0_PID"

# The relative 0666 socket with frontend_secret_file: served, guarded.
rm -f "$rel/bound/fd0.sock"
on_fd0_rel "$rel/bound" fd0.sock 0666 "$rel/elsewhere" "$priv/secret.conf" "$priv/rel4.log"
wait_until 10 grep -q serving "$priv/rel4.log"
FCGI_SOCKET=$rel/bound/fd0.sock fcgi_req GET "$MOUNT/_health"
expect_status 200 "a relative 0666 socket with frontend_secret_file: health with the secret"
out=$(fcgi_as_nobody "$rel/bound/fd0.sock")
[[ $out == *"Status: 403"*FRONTEND_SECRET_MISMATCH* ]] &&
    ok "nobody on it without the secret: 403" ||
    fail "nobody on the relative secret-guarded socket" "$(printf '%s' "$out" | head -c 200)"
kill -TERM "$FD0_PID"
wait_until 20 eval '! alive '"$FD0_PID"

# --- allowed: the same 0666 activated socket with frontend_secret_file ----------

rm -f "$asock"
slog=$priv/act-secret.log
setsid systemd-socket-activate -l "$asock" "$IDEMORDERS_BIN" serve \
    -c "$priv/secret.conf" </dev/null >"$slog" 2>&1 &
spid=$!
PIDS+=("$spid")
wait_until 10 eval '[[ -S '"$asock"' ]]'
chmod 0666 "$asock"
FCGI_SOCKET=$asock fcgi_req GET "$MOUNT/_health"
expect_status 200 "activated 0666 socket with frontend_secret_file: health with the secret"
grep -q 'the frontend secret keeps out whoever does not send it' "$slog" &&
    ok "the log says the secret guards the world-connectable socket" ||
    fail "log of the allowed case" "$(tail -n 3 "$slog" | tr '\n' ' ')"
out=$(fcgi_as_nobody "$asock")
[[ $out == *"Status: 403"*FRONTEND_SECRET_MISMATCH* ]] &&
    ok "nobody on it without the secret: 403" ||
    fail "nobody on the secret-guarded socket" "$(printf '%s' "$out" | head -c 200)"
kill -TERM "$spid"
wait_until 20 eval '! alive '"$spid"

# --- sockets web servers create: mod_fcgid, lighttpd bin-path ------------------------

req GET "$FCGID_URL$MOUNT/_health"
expect_status 200 "mod_fcgid (the socket it passes on fd 0)"
echo "       mod_fcgid made: $(find "$RUNDIR/apache" -type s -printf '%m %u %g\n' 2>/dev/null | sort -u | tr '\n' ' ')"

# lighttpd spawns the responder after dropping to www-data: the config
# and the binary mod_fcgid uses, which www-data may read and run.
LPORT=$((18095 + ${IDEMORDERS_PORT_OFFSET:-0}))
ldir=$priv/lighttpd
install -d -m 0755 -o www-data -g www-data "$ldir"
install -d -m 0755 "$ldir/htdocs"
cat >"$ldir/lighttpd.conf" <<EOF
server.modules = ( "mod_fastcgi" )
server.bind = "127.0.0.1"
server.port = $LPORT
server.document-root = "$ldir/htdocs"
server.errorlog = "$ldir/error.log"
server.username = "www-data"
server.groupname = "www-data"
fastcgi.server = ( "/orders" => ( (
	"socket" => "$ldir/idemorders.sock",
	"bin-path" => "$RUNDIR/bin/idemorders serve -c $RUNDIR/idemorders-fcgid.conf",
	"max-procs" => 1,
	"check-local" => "disable",
) ) )
EOF
setsid lighttpd -D -f "$ldir/lighttpd.conf" </dev/null >"$ldir/out.log" 2>&1 &
lpid=$!
PIDS+=("$lpid")
wait_until 10 grep -q serving "$ldir/out.log"
echo "       lighttpd bin-path made: $(find "$ldir" -type s -printf '%m %u %g\n' | tr '\n' ' ')"
req GET "http://127.0.0.1:$LPORT$MOUNT/_health"
expect_status 200 "lighttpd bin-path (the socket it passes on fd 0)"
[[ $STATUS == 200 ]] || echo "       $(tail -n 3 "$ldir/error.log" "$ldir/out.log" | tr '\n' ' ')"
kill -TERM "$lpid"
wait_until 20 eval '! alive '"$lpid"

finish
