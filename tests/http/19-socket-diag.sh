#!/usr/bin/env bash
# serve reads the mode of a socket it is handed from the socket's own
# file, which the kernel names through netlink (sock_diag, unix_diag).
# When it cannot ask, the log says why, what it means and what to do:
#  - under the shipped idemorders.service's RestrictAddressFamilies= (the
#    same seccomp filter systemd installs: socket() of any other family
#    fails with EAFNOSUPPORT) serve can ask, and says nothing of it;
#  - without AF_NETLINK it says that netlink is refused to the process
#    (RestrictAddressFamilies=, allow AF_NETLINK), not that a module is
#    missing, and that the check holds when only root can replace files
#    in the socket's directory (an info line, not a warning);
#  - in a directory others can write, a warning says that the check is
#    weaker there and what to do.
# The pool runs on a 0660 socket handed over on fd 0, as lighttpd's
# bin-path and spawn-fcgi hand it.  About 5 s.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
# shellcheck source=tests/lib/pool.sh
. "$(dirname -- "$0")/../lib/pool.sh"

priv=$(mktemp -d /tmp/idemorders-diag.XXXXXX)
chmod 0755 "$priv"
trap private_cleanup EXIT
{
	echo "user = idemorders"
	echo "workers = 1"
	grep -E '^[[:space:]]*(db_[a-z_]*|mount)[[:space:]]*=' "$IDEMORDERS_CONF"
} >"$priv/plain.conf"

# The families the shipped unit allows.
unit_families=$(sed -n 's/^RestrictAddressFamilies=//p' "$REPO/systemd/idemorders.service.in" | tail -n 1)
[[ -n $unit_families ]] && ok "idemorders.service restricts address families: $unit_families" ||
    fail "idemorders.service" "no RestrictAddressFamilies= line"

# restricted SOCKET LOG FAMILIES...: the pool on a 0660 socket at SOCKET
# on fd 0, under a seccomp filter that lets socket() open only these
# families (EAFNOSUPPORT for any other, as systemd's
# RestrictAddressFamilies= does); its log in LOG.  Sets RPID.
restricted() {
	local sock=$1 log=$2
	shift 2
	setsid /usr/bin/python3 - "$sock" "$IDEMORDERS_BIN" "$priv/plain.conf" "$@" \
	    <<'EOF' >"$log" 2>&1 &
import ctypes, os, socket, struct, sys
path, binary, conf = sys.argv[1:4]
allowed = [getattr(socket, f) for f in sys.argv[4:]]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o660)
s.listen(16)
os.dup2(s.fileno(), 0)
# BPF: x86-64 socket(2) with a family not in allowed -> EAFNOSUPPORT.
LD, JEQ, RET = 0x20, 0x15, 0x06
ALLOW, ERRNO = 0x7fff0000, 0x00050000 | 97
n = len(allowed)
prog = [(LD, 0, 0, 4), (JEQ, 0, n + 4, 0xc000003e), (LD, 0, 0, 0),
        (JEQ, 0, n + 2, 41), (LD, 0, 0, 16)]
for i, fam in enumerate(allowed):
    prog.append((JEQ, n - i, 0, fam))
prog += [(RET, 0, 0, ERRNO), (RET, 0, 0, ALLOW)]
buf = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *f) for f in prog))
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fp = Fprog(len(prog), ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fp), 0, 0) != 0:
    sys.exit("seccomp: errno %d" % ctypes.get_errno())
os.execv(binary, [binary, "serve", "-c", conf])
EOF
	RPID=$!
	PIDS+=("$RPID")
}

# serving SOCKET: the pool answers health on SOCKET (within 20 s).
serving() {
	wait_until 20 eval 'env -i REQUEST_METHOD=GET REQUEST_URI=$MOUNT/_health \
	    SCRIPT_NAME=$MOUNT PATH_INFO=/_health SERVER_PROTOCOL=HTTP/1.1 \
	    timeout 5 cgi-fcgi -bind -connect '"$1"' 2>/dev/null | grep -q "\"ok\""'
}

# stop PID: the pool gone.
stop() {
	kill -TERM "$1" 2>/dev/null
	wait_until 15 eval '! alive '"$1"
}

# 1. The shipped unit's families.
# shellcheck disable=SC2086
restricted "$priv/unit.sock" "$priv/unit.log" $unit_families
serving "$priv/unit.sock" && ok "under the unit's families: serves" ||
    fail "under the unit's families" "no health: $(tail -n 3 "$priv/unit.log")"
expect_absent "under the unit's families: serve asks the kernel (no fallback line)" \
    "$priv/unit.log" 'cannot ask the kernel'
stop "$RPID"

# 2. Without AF_NETLINK, the socket in a directory of root's (0755).
restricted "$priv/root.sock" "$priv/root.log" AF_UNIX AF_INET AF_INET6
serving "$priv/root.sock" && ok "without AF_NETLINK: still serves a 0660 socket" ||
    fail "without AF_NETLINK" "no health: $(tail -n 3 "$priv/root.log")"
line=$(grep 'cannot ask the kernel' "$priv/root.log" | head -n 1)
echo "       log: $line"
[[ $line == *"RestrictAddressFamilies="*"allow AF_NETLINK"* ]] &&
    ok "without AF_NETLINK: the log names the cause and the cure" ||
    fail "without AF_NETLINK: the cause" "log: '$line'"
[[ $line != *"load the"*"module"* ]] &&
    ok "without AF_NETLINK: no module is blamed" ||
    fail "without AF_NETLINK: a module is blamed" "log: '$line'"
[[ $line == *"info: "*"as good here: only root can replace files in $priv"* ]] &&
    ok "without AF_NETLINK, a directory of root's: the check holds (info)" ||
    fail "without AF_NETLINK, a directory of root's" "log: '$line'"
stop "$RPID"

# 3. The same in a directory everyone can write.
install -d -m 1777 "$priv/open"
restricted "$priv/open/open.sock" "$priv/open.log" AF_UNIX AF_INET AF_INET6
serving "$priv/open/open.sock" || fail "open directory" "no health: $(tail -n 3 "$priv/open.log")"
line=$(grep 'cannot ask the kernel' "$priv/open.log" | head -n 1)
echo "       log: $line"
[[ $line == *"warning: "*"$priv/open lets users other than root replace that file"*"allow AF_NETLINK"* ]] &&
    ok "without AF_NETLINK, a directory others write: a warning says the check is weaker" ||
    fail "without AF_NETLINK, a directory others write" "log: '$line'"
stop "$RPID"

finish
