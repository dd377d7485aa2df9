#!/usr/bin/env bash
# tools/dev's apt waits for the dpkg lock instead of failing at once
# (a fresh cloud VM runs unattended-upgrades at boot, which holds it):
#  - while another process holds /var/lib/dpkg/lock-frontend and
#    /var/lib/dpkg/lock for 3 s, a plain `apt-get install` of an
#    installed package fails at once ("Could not get lock": the check
#    can fail), and tools/dev's apt_get (tools/lib/common.sh) waits and
#    succeeds;
#  - the same for /var/lib/apt/lists/lock and tools/dev's apt_update
#    (apt's DPkg::Lock::Timeout does not cover that lock);
#  - every apt-get that tools/ and tests/lib run goes through them or
#    carries -o DPkg::Lock::Timeout.
# Installs nothing: the package asked for is one the host has.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

HOLDER=$T_TMP/hold.py
cat >"$HOLDER" <<'EOF'
import fcntl, os, sys, time
fds = []
for p in sys.argv[2:]:
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o640)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    fds.append(fd)
print("held", flush=True)
time.sleep(float(sys.argv[1]))
EOF

# hold SECONDS LOCK...: hold the locks (fcntl, as apt and dpkg take
# them) in the background; returns once they are held.
hold() {
	python3 "$HOLDER" "$@" >"$T_TMP/held" 2>&1 &
	HOLD_PID=$!
	wait_until 10 grep -q held "$T_TMP/held"
}

# lib FUNCTION ARGS...: a function of tools/lib/common.sh, as tools/dev runs it.
lib() {
	# shellcheck disable=SC2034 # common.sh reads PROG
	(PROG=dev; . "$REPO/tools/lib/common.sh" && "$@")
}

DPKG_LOCKS=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock)
hold 3 "${DPKG_LOCKS[@]}" || fail "lock holder" "$(cat "$T_TMP/held")"
out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y -q coreutils 2>&1)
rc=$?
[[ $rc -ne 0 ]] && grep -q 'Could not get lock' <<<"$out" &&
    ok "plain apt-get while the dpkg lock is held: fails at once (\"$(grep -m1 'Could not get lock' <<<"$out" | cut -c1-80)\")" ||
    fail "plain apt-get under the lock" "exit $rc: $out"
out=$(DEBIAN_FRONTEND=noninteractive lib apt_get install -y -q coreutils 2>&1)
rc=$?
[[ $rc -eq 0 ]] && ! kill -0 "$HOLD_PID" 2>/dev/null &&
    ok "tools/dev's apt_get waited for the dpkg lock, then succeeded" ||
    fail "apt_get under the lock" "exit $rc, holder $(kill -0 "$HOLD_PID" 2>/dev/null && echo 'still holds it' || echo gone): $(tail -n 3 <<<"$out" | tr '\n' ' ')"
wait "$HOLD_PID" 2>/dev/null

hold 3 /var/lib/apt/lists/lock || fail "lock holder" "$(cat "$T_TMP/held")"
out=$(lib apt_update 2>&1)
rc=$?
[[ $rc -eq 0 ]] && ! kill -0 "$HOLD_PID" 2>/dev/null &&
    ok "tools/dev's apt_update waited for the lists lock, then succeeded" ||
    fail "apt_update under the lock" "exit $rc: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
wait "$HOLD_PID" 2>/dev/null

# Every apt-get in tools/ and tests/lib: the wrappers themselves, or
# with the lock timeout.
bad=$(grep -rn --include='*.sh' --include=dev -E '(^|[;&|({[:space:]])apt-get ' "$REPO/tools" "$REPO/tests/lib" |
    grep -v 'DPkg::Lock::Timeout' | grep -Ev ':[0-9]+:[[:space:]]*#' | grep -Ev '(die|ok|fail) "' | sed "s|^$REPO/||")
[[ -z $bad ]] && ok "every apt-get in tools/ and tests/lib waits for the lock" ||
    fail "apt-get without the lock timeout" "$(tr '\n' ' ' <<<"$bad")"

finish
