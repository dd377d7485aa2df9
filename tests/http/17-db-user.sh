#!/usr/bin/env bash
# The development stack's MariaDB is a door to every customer's orders:
# it runs as its own OS user (mysql), never as root; its unix socket
# sits in a directory that only root, mysql and the database's clients
# (the pool's user and the web server's, in the group idemorders-db)
# can traverse, so that user nobody cannot reach it at all; its data,
# error log and secure_file_priv directory are mysql's alone.  About 5 s.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

my_cnf=$REPO/var/$IDEMORDERS_STACK/my.cnf
pidfile=$(sed -n 's/^pid-file = //p' "$my_cnf" | head -n 1)
sock=$(sed -n 's/^socket = //p' "$my_cnf" | head -n 1)
datadir=$(sed -n 's/^datadir = //p' "$my_cnf" | head -n 1)
filesdir=$(sed -n 's/^secure_file_priv = //p' "$my_cnf" | head -n 1)

pid=$(cat "$pidfile" 2>/dev/null)
if [[ -n $pid ]] && owner=$(stat -c %U "/proc/$pid" 2>/dev/null); then
	[[ $owner == mysql ]] && ok "mariadbd (pid $pid) runs as mysql" ||
	    fail "mariadbd's user" "pid $pid runs as $owner, not mysql"
	got=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$pid/status")
	want="$(id -u mysql) $(id -u mysql) $(id -u mysql) $(id -u mysql)"
	[[ $got == "$want" ]] && ok "mariadbd has no root uid left ($got)" ||
	    fail "mariadbd's uids" "want $want, got $got"
else
	fail "mariadbd's pid" "no live pid in $pidfile"
fi

# nobody cannot reach the socket: the connection fails on the file
# system (errno 13 or 2), before any account is asked for.
out=$(timeout 10 runuser -u nobody -- mariadb --no-defaults -S "$sock" -u root \
    -N -e 'SELECT 1' 2>&1)
[[ $out == *"(13)"* || $out == *"(2)"* ]] &&
    ok "nobody cannot reach the database's socket: ${out:0:120}" ||
    fail "nobody reaches the database's socket" "$out"
# The database's clients reach it (and are then asked who they are).
for u in idemorders www-data; do
	out=$(timeout 10 runuser -u "$u" -- mariadb --no-defaults -S "$sock" \
	    -u "no-such-account-$u" -N -e 'SELECT 1' 2>&1)
	[[ $out == *"Access denied"* ]] &&
	    ok "$u reaches the socket and is asked for an account" ||
	    fail "$u and the database's socket" "$out"
done
got=$(stat -c '%a %U %G' "$(dirname -- "$sock")")
[[ $got == "750 mysql idemorders-db" ]] && ok "the socket's directory: $got" ||
    fail "the socket's directory" "want '750 mysql idemorders-db', got '$got'"

for d in "$datadir" "$filesdir"; do
	got=$(stat -c '%U %a' "$d" 2>&1)
	[[ $got == "mysql 700" || $got == "mysql 750" ]] && ok "$d: $got" ||
	    fail "$d" "want mysql's own (0700 or 0750), got '$got'"
	if runuser -u nobody -- ls "$d" >/dev/null 2>&1; then
		fail "nobody lists $d" "$(stat -c '%a %U:%G' "$d")"
	else
		ok "nobody cannot list $d"
	fi
done

finish
