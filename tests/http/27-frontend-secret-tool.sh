#!/usr/bin/env bash
# idemorders-frontend-secret, the rotation tool the package installs
# (debian/idemorders-frontend-secret), holds a frontend secret to the
# rule serve holds it to (at least 32 characters, each a letter, a digit
# or one of - . _ ~ + / =): it refuses to install, rotate from or send to
# the web servers a secret serve would refuse, says why without showing
# it, and what it makes itself passes check-config.  Each run is in a
# private mount namespace whose /etc is an overlay of the host's, so the
# host's /etc is never written.  About 5 s.
# shellcheck source=tests/lib/http.sh disable=SC2016 # snippets for the namespace's bash
. "$(dirname -- "$0")/../lib/http.sh"

TOOL=$REPO/debian/idemorders-frontend-secret
SECRET=/etc/idemorders/frontend.secret
priv=$(mktemp -d /tmp/idemorders-fstool.XXXXXX)
trap 'rm -rf "$priv" "$T_TMP"' EXIT

# The stack's database settings and the secret at its packaged path.
{
	grep -E '^[[:space:]]*(db_[a-z_]*|mount)[[:space:]]*=' "$IDEMORDERS_CONF"
	echo "frontend_secret_file = $SECRET"
} >"$priv/check.conf"

# in_etc SCRIPT: run the bash SCRIPT with /etc an overlay of the host's
# (writes go to a fresh upper directory); sets OUT (stdout and stderr)
# and RC.  TOOL, SECRET, BIN and CONF are in its environment.
in_etc() {
	rm -rf "$priv/up" "$priv/wk"
	mkdir -p "$priv/up" "$priv/wk"
	OUT=$(TOOL=$TOOL SECRET=$SECRET BIN=$IDEMORDERS_BIN CONF=$priv/check.conf \
	    unshare -m --propagation private bash -c '
		mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/up,workdir=$1/wk" /etc || exit 99
		mkdir -p /etc/idemorders /etc/apache2 /etc/lighttpd
		rm -f "$SECRET" /etc/apache2/idemorders-secret.conf /etc/lighttpd/idemorders-secret.conf
		eval "$2"' _ "$priv" "$1" 2>&1)
	RC=$?
}

# put LINE...: the snippet that writes these lines as the secret file.
put() {
	printf 'printf "%%s\\n" %s >"$SECRET"; chgrp idemorders "$SECRET"; chmod 0640 "$SECRET"; ' \
	    "$(printf '%q ' "$@")"
}

# refused NAME WANT SCRIPT: the tool must fail, saying WANT, and write no
# include for the web servers.
refused() {
	in_etc "$3"'
	    rc=$?
	    ls /etc/apache2/idemorders-secret.conf /etc/lighttpd/idemorders-secret.conf 2>/dev/null | sed "s/^/wrote: /"
	    exit $rc'
	if [[ $RC -ne 0 && $RC -ne 99 && $OUT == *"$2"* && $OUT != *wrote:* ]]; then
		ok "refused: $1: $(grep -m1 -o 'idemorders-frontend-secret: .*' <<<"$OUT" | head -c 200)"
	else
		fail "refused: $1" "status $RC (want a failure saying \"$2\"): $(head -c 300 <<<"$OUT")"
	fi
	[[ $OUT != *0123456789* ]] || fail "refused: $1" "the message shows the secret"
}

WEAK_LEN="has 1 characters; it needs at least 32"
refused "install with a one-byte secret" "$WEAK_LEN" "$(put x)"'"$TOOL" install'
refused "web with a one-byte secret" "$WEAK_LEN" "$(put x)"'"$TOOL" web'
refused "begin from a one-byte secret" "$WEAK_LEN" "$(put x)"'"$TOOL" begin'
refused "install with a secret of 40 spaces" "a character other than" \
    "$(put "$(printf '%40s' '')")"'"$TOOL" install'
refused "install with a 31-character secret" "has 31 characters" \
    "$(put 0123456789abcdef0123456789abcde)"'"$TOOL" install'
refused "web with a weak previous secret (line 2)" "line 2 of $SECRET" \
    "$(put 0123456789abcdef0123456789abcdef0123 old)"'"$TOOL" web'

# What the tool makes, through a whole rotation, passes check-config.
in_etc '
	set -e
	"$TOOL" install >/dev/null
	s1=$(head -n 1 "$SECRET")
	echo "install: $(wc -l <"$SECRET") line, ${#s1} characters"
	"$BIN" check-config -c "$CONF"
	grep -q "\"$s1\"" /etc/apache2/idemorders-secret.conf && echo "apache include: the secret"
	grep -q "\"$s1\"" /etc/lighttpd/idemorders-secret.conf && echo "lighttpd include: the secret"
	"$TOOL" begin >/dev/null
	[ "$(sed -n 2p "$SECRET")" = "$s1" ] && echo "begin: the old secret second"
	"$BIN" check-config -c "$CONF"
	"$TOOL" web >/dev/null
	"$TOOL" end >/dev/null
	echo "end: $(wc -l <"$SECRET") line"
	"$BIN" check-config -c "$CONF"
	head -n 1 "$SECRET" | grep -Eq "^[0-9a-f]{64}$" && echo "the secret: 64 hex digits"'
[[ $RC == 0 ]] && ok "install, begin, web, end: status 0" || fail "a rotation" "status $RC: $(head -c 400 <<<"$OUT")"
for want in "install: 1 line, 64 characters" "apache include: the secret" \
    "lighttpd include: the secret" "begin: the old secret second" "end: 1 line" \
    "the secret: 64 hex digits"; do
	[[ $OUT == *"$want"* ]] && ok "$want" || fail "$want" "$(head -c 400 <<<"$OUT")"
done
n=$(grep -c "configuration OK, database reachable" <<<"$OUT")
[[ $n == 3 ]] && ok "check-config accepts the tool's secret after install, begin and end" ||
    fail "check-config of the tool's secret" "$n of 3 OK: $(head -c 400 <<<"$OUT")"
finish
