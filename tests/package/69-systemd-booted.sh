#!/usr/bin/env bash
# time-limit: 900
# The Debian package under a booted systemd: Debian 12 in a container
# (systemd-nspawn --boot, a debootstrap tree; the host's network shared,
# its own PID namespace), as a sysadmin following docs/sysadmin.md meets it:
#  - first the same tree not booted (no systemd, as on a host with
#    another init): the service the init script started stops on
#    apt-get remove, and apt-get purge removes the user and the group;
#  - apt-get install of the package (with mariadb-server, Apache and
#    cron as docs/sysadmin.md's "Install on Debian" has them) asks dbconfig-common
#    nothing without a terminal and creates the database, its user and
#    the schema; the socket listens (root:www-data 0660), the timer is
#    active, the service is not started; apt brings what the shipped
#    programs need (idemorders-verify runs: curl, jq);
#  - the first order through Apache (a2enmod, a2enconf, htpasswd) starts
#    the service by socket activation; idemorders-verify passes;
#  - under load (parallel creates through Apache, each its own key),
#    `systemctl reload idemorders`, a frontend secret rotation, a
#    database password rotation (idemorders-db-password begin, reload,
#    end; dbconfig-common's record follows),
#    `systemctl restart idemorders` and an upgrade (apt-get install of
#    the same package with a higher version) lose no request: every
#    create answers 201 and the database holds exactly those orders; the
#    upgrade keeps the listening socket (the socket unit is not
#    restarted) and restarts the service on the new binary;
#  - the relay (docs/webhooks-operations.md's setup, enabled before the
#    first order) delivers to a receiver that is down until after the
#    upgrade: every event is pending through it; the upgrade restarts
#    the relay on the new binary and keeps every pending event with its
#    webhook-id; once the receiver (tests/lib/webhook-receiver.cjs, on
#    the npm standardwebhooks verifier, on the host: the network is
#    shared) is up, exactly the pending events arrive, verified, each
#    with its original webhook-id and order, at least once (duplicates
#    counted, never an id the database does not have), and every order
#    has its event;
#  - the retention timer fires its service, which succeeds;
#  - docs/sysadmin.md's backup (mariadb-dump --single-transaction) and
#    restore (stop, drop, load, audit exit 0, start): a key from before
#    the backup replays, a key first used after it gets a new order;
#  - under systemd the logs are in the journal: /var/log/idemorders
#    never exists;
#  - apt-get remove (non-interactive) stops the socket and the service
#    (no idemorders process is left), keeps the config, the database
#    and its account; apt-get purge removes the files and the user; what
#    is left on disk and in MariaDB is listed and compared with what
#    docs/sysadmin.md's "Remove and purge" says stays; a reinstall over the kept
#    database and account works (its first create answers 201); a purge
#    answered yes to deleting the database drops it and its account.
# The tree (debootstrap with those packages, and the package's
# dependencies downloaded) is built once and kept in
# /var/cache/idemorders-nspawn (IDEMORDERS_NSPAWN_CACHE); each run boots
# a copy-on-write overlay of it and throws the overlay away.  Apache in
# the container listens on 127.0.0.1:18097+IDEMORDERS_PORT_OFFSET;
# MariaDB there has no network.  Without systemd-nspawn, debootstrap or
# overlayfs, or where a container cannot boot, the script says why on a
# SKIP line, counted as a skip, never a pass (under CI it fails instead).
# It builds the package (when no earlier script did) and the tree, and
# boots a container: up to 15 minutes on a busy machine.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/package.sh"

OFF=${IDEMORDERS_PORT_OFFSET:-0}
BOOT_PORT=$((18097 + OFF))
BOOT_URL=http://127.0.0.1:$BOOT_PORT
BOOT_HASH=$(printf '%s' "$REPO" | sha1sum | cut -c1-8)
BOOT_WORK=/var/tmp/idemorders-booted-$BOOT_HASH
BOOT_CACHE=${IDEMORDERS_NSPAWN_CACHE:-/var/cache/idemorders-nspawn}
BOOT_MIRROR=${IDEMORDERS_NSPAWN_MIRROR:-http://deb.debian.org/debian}
BOOT_SUITE=bookworm
BOOT_MACHINE=idemorders-$BOOT_HASH
# What docs/sysadmin.md's "Install on Debian" has the administrator install before
# the package (and what the tree needs to boot).
BOOT_PACKAGES=(systemd-sysv dbus mariadb-server apache2 apache2-utils cron logrotate)
NSPAWN_PID='' CT_LEADER='' BOOT_MOUNTED='' LOAD_PIDS=()
T0=$SECONDS

# cannot_boot WHY: the machine cannot do this: a skip, counted as one (a
# failure under CI); the script ends.
cannot_boot() {
	if [[ -n ${CI:-} ]]; then
		fail "booted container" "$1"
	else
		skip "booted container" "$1"
	fi
	finish
}

boot_cleanup() {
	local pid i
	for pid in "${LOAD_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	if [[ -n $NSPAWN_PID ]] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
		[[ -n $CT_LEADER ]] && nsenter -t "$CT_LEADER" -a systemctl poweroff >/dev/null 2>&1
		for ((i = 0; i < 300; i++)); do
			kill -0 "$NSPAWN_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$NSPAWN_PID" 2>/dev/null
	fi
	if [[ -n $BOOT_MOUNTED ]]; then
		umount "$BOOT_WORK/root" 2>/dev/null || umount -l "$BOOT_WORK/root" 2>/dev/null
	fi
	rm -rf "$BOOT_WORK" "$T_TMP"
}
trap boot_cleanup EXIT
# The relay's receiver: on the host, on a port of this run.
WEBHOOK_SECRET_FILE=$T_TMP/webhook.secret
# shellcheck source=tests/lib/webhooks.sh
. "$(dirname -- "$0")/../lib/webhooks.sh"
WEBHOOK_PORT=$((18099 + OFF))
RECEIVER_URL=http://127.0.0.1:$WEBHOOK_PORT
trap 'receiver_stop; boot_cleanup' EXIT
# (a timeout's TERM still runs the cleanup)
trap 'exit 143' TERM
trap 'exit 130' INT

# --- can this machine boot a container? ---------------------------------------------
command -v systemd-nspawn >/dev/null || cannot_boot "no systemd-nspawn (apt-get install systemd-container)"
command -v debootstrap >/dev/null || cannot_boot "no debootstrap (apt-get install debootstrap)"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
    cannot_boot "no overlayfs in this kernel"
[[ $(id -u) == 0 ]] || cannot_boot "needs root"
if (exec 3<>"/dev/tcp/127.0.0.1/$BOOT_PORT") 2>/dev/null; then
	fail "port $BOOT_PORT" "already in use"
	finish
fi

# What a run killed before its cleanup left.
if mountpoint -q "$BOOT_WORK/root" 2>/dev/null; then
	umount "$BOOT_WORK/root" 2>/dev/null || umount -l "$BOOT_WORK/root"
fi

# --- the package: built from this tree (tests/lib/package.sh's build, which
# 72 and 74 use too), and the same package with a higher version for the
# upgrade ---------------------------------------------------------------------------
rm -rf "$BOOT_WORK"
mkdir -p "$BOOT_WORK"
if [[ -n ${BOOT_DEB:-} ]]; then
	cp "$BOOT_DEB" "$BOOT_WORK/"
else
	pkg_build || finish
	cp "$PKG_DEB" "$BOOT_WORK/"
fi
DEB=$(ls "$BOOT_WORK"/idemorders_*.deb | head -n 1)
VERSION=$(dpkg-deb -f "$DEB" Version)
# The upgrade: the same files, a higher version (dpkg runs every
# maintainer script of an upgrade for it).
mkdir -p "$BOOT_WORK/up"
dpkg-deb -R "$DEB" "$BOOT_WORK/up/pkg"
sed -i "s/^Version: .*/Version: $VERSION+up1/" "$BOOT_WORK/up/pkg/DEBIAN/control"
dpkg-deb -b "$BOOT_WORK/up/pkg" "$BOOT_WORK/idemorders-up.deb" >/dev/null
UPDEB=$(basename -- "$(ls "$BOOT_WORK"/idemorders-up.deb)")
DEBNAME=$(basename -- "$DEB")

# --- the tree, built once per package list and Depends --------------------------
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
KEY=$(printf '%s\n' 2 "$BOOT_SUITE" "$BOOT_MIRROR" "${BOOT_PACKAGES[*]}" "$DEPENDS" | sha1sum | cut -c1-12)
TREE=$BOOT_CACHE/$BOOT_SUITE-$KEY
mkdir -p "$BOOT_CACHE"
exec 7>"$BOOT_CACHE/lock"
flock -w 900 7 || { fail "tree lock" "another run holds $BOOT_CACHE/lock"; finish; }
if [[ ! -e $TREE/.complete ]]; then
	t=$SECONDS
	rm -rf "$TREE.new"
	# The tree's own package lists and archives: the package's
	# dependencies are downloaded now, so that each run installs them
	# without the network.
	if debootstrap --variant=minbase --include=systemd-sysv,dbus "$BOOT_SUITE" "$TREE.new" \
	    "$BOOT_MIRROR" >"$BOOT_CACHE/debootstrap.log" 2>&1 &&
	    printf '#!/bin/sh\nexit 101\n' >"$TREE.new/usr/sbin/policy-rc.d" &&
	    chmod 0755 "$TREE.new/usr/sbin/policy-rc.d" &&
	    mkdir -p "$TREE.new/etc/mysql/mariadb.conf.d" &&
	    printf '# the test container shares the host network: no port\n[mysqld]\nskip-networking\n' \
	        >"$TREE.new/etc/mysql/mariadb.conf.d/99-no-network.cnf" &&
	    cp "$DEB" "$TREE.new/var/cache/apt/archives/" &&
	    systemd-nspawn -q --keep-unit --register=no -D "$TREE.new" --pipe /bin/sh -c "
	        set -e
	        export DEBIAN_FRONTEND=noninteractive
	        echo 'deb $BOOT_MIRROR $BOOT_SUITE main' >/etc/apt/sources.list
	        echo 'deb $BOOT_MIRROR $BOOT_SUITE-updates main' >>/etc/apt/sources.list
	        apt-get update -q
	        apt-get install -y -q --no-install-recommends ${BOOT_PACKAGES[*]}
	        apt-get install -y -q --no-install-recommends --download-only /var/cache/apt/archives/$DEBNAME
	        rm -f /var/cache/apt/archives/$DEBNAME /usr/sbin/policy-rc.d
	        systemctl disable apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer 2>/dev/null || true
	    " </dev/null >>"$BOOT_CACHE/debootstrap.log" 2>&1; then
		touch "$TREE.new/.complete"
		mv "$TREE.new" "$TREE"
		ok "the container's tree built and cached in $TREE ($((SECONDS - t)) s)"
	else
		fail "the container's tree" "$(tail -n 8 "$BOOT_CACHE/debootstrap.log" | tr '\n' ' ')"
		rm -rf "$TREE.new"
		finish
	fi
else
	ok "the container's tree from the cache: $TREE"
fi
# Each run marks the tree it used; trees no run used for a week (other
# package lists: older versions, other clones) go (about 800 MB each).
touch "$TREE/.complete"
find "$BOOT_CACHE" -mindepth 2 -maxdepth 2 -name .complete -mtime +7 -printf '%h\n' |
    while IFS= read -r d; do rm -rf "$d"; done
exec 7>&-

# --- first without systemd: the same tree, not booted -------------------------------
# A host without systemd as PID 1 (the init script, invoke-rc.d): the
# service the init script started stops on remove, and purge removes
# the user (no process of it left).  No database runs here: serve
# answers 503, which is enough to have its processes.
NOSD=$BOOT_WORK/nosd
mkdir -p "$NOSD/upper" "$NOSD/ovl" "$NOSD/root"
if ! mount -t overlay overlay -o "lowerdir=$TREE,upperdir=$NOSD/upper,workdir=$NOSD/ovl" \
    "$NOSD/root" 2>"$T_TMP/mount"; then
	cannot_boot "cannot mount an overlay of the tree: $(cat "$T_TMP/mount")"
fi
cp "$DEB" "$NOSD/root/root/"
systemd-nspawn -q --keep-unit --register=no -D "$NOSD/root" --pipe /bin/sh -s >"$T_TMP/nosd" 2>&1 9>&- 8>&- 7>&- <<SCRIPT
export DEBIAN_FRONTEND=noninteractive
cd /root
procs() {
	n=0
	for p in /proc/[0-9]*; do
		case "\$(readlink \$p/exe 2>/dev/null)" in /usr/sbin/idemorders*) n=\$((n + 1)) ;; esac
	done
	echo "\$1 \$n"
}
apt-get install -y -q --no-install-recommends ./$DEBNAME >/root/install.log 2>&1; echo "install-rc \$?"
[ -d /run/systemd/system ] && echo "systemd-runs"
service idemorders start >/root/start.log 2>&1; echo "start-rc \$?"
procs procs-running
apt-get remove -y -q idemorders >/root/remove.log 2>&1; echo "remove-rc \$?"
procs procs-after-remove
[ -e /run/idemorders.pid ] && echo "pidfile-left"
apt-get purge -y -q idemorders >/root/purge.log 2>&1; echo "purge-rc \$?"
grep -i 'userdel\|deluser\|not removed' /root/purge.log | sed 's/^/purge-said /'
getent passwd idemorders >/dev/null && echo "user-left"
getent group idemorders >/dev/null && echo "group-left"
procs procs-after-purge
SCRIPT
umount "$NOSD/root" 2>/dev/null || umount -l "$NOSD/root"
nosd() { sed -n "s/^$1 //p" "$T_TMP/nosd"; }
if [[ $(nosd install-rc) == 0 && $(nosd start-rc) == 0 ]] && ! grep -q '^systemd-runs' "$T_TMP/nosd" &&
    [[ $(nosd procs-running) -gt 0 ]]; then
	ok "without systemd: installed, service idemorders start ($(nosd procs-running) processes)"
	[[ $(nosd remove-rc) == 0 && $(nosd procs-after-remove) == 0 ]] && ! grep -q '^pidfile-left' "$T_TMP/nosd" &&
	    ok "without systemd: apt-get remove stopped them all (no /run/idemorders.pid left)" ||
	    fail "without systemd: remove" "exit $(nosd remove-rc), $(nosd procs-after-remove) processes left$(grep -q '^pidfile-left' "$T_TMP/nosd" && echo ', /run/idemorders.pid left')"
	[[ $(nosd purge-rc) == 0 && -z $(nosd purge-said) ]] && ! grep -q '^user-left\|^group-left' "$T_TMP/nosd" &&
	    [[ $(nosd procs-after-purge) == 0 ]] &&
	    ok "without systemd: apt-get purge removed the user and the group" ||
	    fail "without systemd: purge" "exit $(nosd purge-rc), said: $(nosd purge-said | tr '\n' ' ')$(grep '^user-left\|^group-left' "$T_TMP/nosd" | tr '\n' ' ') $(nosd procs-after-purge) processes"
else
	fail "without systemd: install and start" "$(tr '\n' ' ' <"$T_TMP/nosd" | cut -c1-600)"
fi

# --- boot an overlay of it ------------------------------------------------------
mkdir -p "$BOOT_WORK/upper" "$BOOT_WORK/ovl" "$BOOT_WORK/root"
if ! mount -t overlay overlay -o "lowerdir=$TREE,upperdir=$BOOT_WORK/upper,workdir=$BOOT_WORK/ovl" \
    "$BOOT_WORK/root" 2>"$T_TMP/mount"; then
	cannot_boot "cannot mount an overlay of the tree: $(cat "$T_TMP/mount")"
fi
BOOT_MOUNTED=1
R=$BOOT_WORK/root
# Apache on a port of this run, loopback only.
echo "Listen 127.0.0.1:$BOOT_PORT" >"$R/etc/apache2/ports.conf"
sed -i "s/<VirtualHost \*:80>/<VirtualHost *:$BOOT_PORT>/" "$R/etc/apache2/sites-available/000-default.conf"
cp "$DEB" "$BOOT_WORK/idemorders-up.deb" "$R/root/"
setsid systemd-nspawn --boot --keep-unit --register=no -M "$BOOT_MACHINE" -D "$R" \
    --console=passive </dev/null >"$BOOT_WORK/nspawn.log" 2>&1 9>&- 8>&- &
NSPAWN_PID=$!
for ((i = 0; i < 300; i++)); do
	CT_LEADER=$(pgrep -P "$NSPAWN_PID" | head -n 1)
	[[ -n $CT_LEADER ]] && break
	kill -0 "$NSPAWN_PID" 2>/dev/null || break
	sleep 0.1
done
[[ -n $CT_LEADER ]] || cannot_boot "systemd-nspawn --boot did not start a container: $(tail -n 5 "$BOOT_WORK/nspawn.log" | tr '\n' ' ')"

# ct COMMAND...: in the container (its namespaces and root, a clean
# environment).  cts SCRIPT: the same through sh -c.
ct() {
	nsenter -t "$CT_LEADER" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
	    LC_ALL=C.UTF-8 "$@" 9>&- 8>&- 7>&-
}
cts() { ct sh -c "$1"; }

# Until PID 1 has made /run/systemd/system, systemctl answers "offline"
# (sd_booted() is false); until its bus is up, "Failed to connect to
# bus".  Either way it is too early to ask.
for ((i = 0; i < 600; i++)); do
	state=$(ct timeout 120 systemctl is-system-running --wait 2>&1)
	[[ $state == offline* || $state == *"Failed to connect to bus"* ]] || break
	sleep 0.1
done
if [[ $state == running ]]; then
	ok "systemd booted in the container (PID 1: $(ct cat /proc/1/comm), $(ct systemctl --version | head -n 1)) in $((SECONDS - T0)) s"
else
	fail "booted container" "system state '$state': $(ct systemctl --failed --no-legend 2>&1 | tr '\n' ' ')"
fi
[[ $(readlink "/proc/$CT_LEADER/ns/pid") != $(readlink /proc/self/ns/pid) ]] &&
    ok "the container has its own PID namespace" || fail "PID namespace" "shared with the host"

# --- install, as docs/sysadmin.md says ----------------------------------------------------
if ct sh -c "cd /root && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ./$DEBNAME" \
    >"$BOOT_WORK/install.log" 2>&1; then
	ok "apt-get install ./$DEBNAME (non-interactive)"
else
	fail "apt-get install" "$(tail -n 8 "$BOOT_WORK/install.log" | tr '\n' ' ')"
	finish
fi
grep -qi 'unable to initialize frontend\|falling back to frontend\|perl: warning' "$BOOT_WORK/install.log" &&
    fail "install, non-interactive" "$(grep -i 'frontend\|perl:' "$BOOT_WORK/install.log" | tr '\n' ' ')" ||
    ok "install, non-interactive: no debconf warning"
grep -q 'cannot be reached' "$BOOT_WORK/install.log" &&
    fail "install: database" "postinst could not reach it" ||
    ok "install: dbconfig-common made the database, postinst migrated it"
[[ $(ct systemctl is-active idemorders.socket) == active && $(ct systemctl is-enabled idemorders.socket) == enabled ]] &&
    ok "idemorders.socket: enabled, listening" ||
    fail "idemorders.socket" "$(ct systemctl status idemorders.socket 2>&1 | head -n 5 | tr '\n' ' ')"
[[ $(ct stat -c '%U:%G %a' /run/idemorders/idemorders.sock 2>&1) == "root:www-data 660" ]] &&
    ok "/run/idemorders/idemorders.sock: root:www-data 0660" ||
    fail "socket file" "$(ct stat -c '%U:%G %a' /run/idemorders/idemorders.sock 2>&1)"
[[ $(ct systemctl is-active idemorders.service) != active ]] &&
    ok "idemorders.service: not started by the install" || fail "install" "the service was started"
[[ $(ct systemctl is-active idemorders-expire.timer) == active ]] &&
    ok "idemorders-expire.timer: active" || fail "timer" "$(ct systemctl is-active idemorders-expire.timer)"
for t in jq curl; do
	ct dpkg-query -W -f='${Status}' "$t" 2>/dev/null | grep -q 'install ok installed' &&
	    ok "apt brought $t (the package depends on it)" || fail "dependencies" "$t not installed"
done

# --- the relay, its receiver down: every event waits in the database -------------
# docs/webhooks-operations.md's setup: a secret, webhook_url, the unit
# enabled; short backoffs, so that the events go out within seconds once
# the receiver is up.
webhooks_install
printf 'whsec_%s\n' "$(head -c 32 /dev/urandom | base64)" >"$WEBHOOK_SECRET_FILE"
if ct sh -c 'umask 027 && cat >/etc/idemorders/webhook.secret && chgrp idemorders /etc/idemorders/webhook.secret' \
    <"$WEBHOOK_SECRET_FILE" && cts "printf '%s\n' 'webhook_url = $RECEIVER_URL/webhook' \
    'webhook_secret_file = /etc/idemorders/webhook.secret' 'webhook_timeout = 2s' \
    'event_backoff = 200ms' 'event_backoff_max = 2s' >>/etc/idemorders/idemorders.conf &&
    idemorders check-config && systemctl enable --now idemorders-relay" >"$T_TMP/relay-setup" 2>&1 &&
    [[ $(ct systemctl is-active idemorders-relay.service) == active ]]; then
	ok "the relay: webhook_url, its secret, systemctl enable --now idemorders-relay (active; the receiver is down)"
else
	fail "the relay" "$(tail -n 5 "$T_TMP/relay-setup" | tr '\n' ' ') $(ct systemctl status idemorders-relay 2>&1 | tail -n 5 | tr '\n' ' ')"
fi
relay_main() { ct systemctl show -p MainPID --value idemorders-relay.service; }
evq() { ct mariadb -N -B idemorders -e "$1" 2>&1; }

# --- users, Apache, stock, the first order -------------------------------------------
PW=booted-secret
if cts "htpasswd -cbB /etc/idemorders/htpasswd alice $PW && htpasswd -bB /etc/idemorders/htpasswd bob $PW &&
    chgrp www-data /etc/idemorders/htpasswd && chmod 0640 /etc/idemorders/htpasswd &&
    a2enmod -q proxy_fcgi auth_basic authn_file env && a2enconf -q idemorders && systemctl restart apache2 &&
    printf 'sku,currency,unit_price,available\nA-10,KRW,6000,100000\nT-1,KRW,100,1000\n' >/root/stock.csv &&
    idemorders stock import /root/stock.csv" >"$T_TMP/setup" 2>&1; then
	ok "htpasswd, a2enmod, a2enconf, systemctl restart apache2, idemorders stock import"
else
	fail "setup" "$(tail -n 5 "$T_TMP/setup" | tr '\n' ' ')"
fi
ORDER='{"currency":"KRW","items":[{"sku":"A-10","qty":1}],"amount":6000}'
# create URL KEY: one create, its status on stdout.
create() {
	curl -s -o /dev/null -m 60 -w '%{http_code}' -u "alice:$PW" -H "Idempotency-Key: $2" \
	    -H 'Content-Type: application/json' --data "$ORDER" "$1/orders"
}
st=$(create "$BOOT_URL" "first-order-1")
[[ $st == 201 ]] && ok "first order through Apache: 201" || fail "first order" "status $st"
st=$(create "$BOOT_URL" "first-order-1")
[[ $st == 201 ]] && ok "the same again: the replay (201)" || fail "replay" "status $st"
[[ $(ct systemctl is-active idemorders.service) == active ]] &&
    ok "the first request started idemorders.service (socket activation)" ||
    fail "socket activation" "$(ct systemctl is-active idemorders.service)"
ct journalctl -u idemorders.service --no-pager -q 2>/dev/null | grep -q 'socket activation: serving fd 3' &&
    ok "its journal: serving fd 3" ||
    fail "journal" "$(ct journalctl -u idemorders.service --no-pager -q -n 5 2>&1 | tr '\n' ' ')"
[[ ! -e $R/var/log/idemorders ]] && ok "under systemd the logs are in the journal: no /var/log/idemorders" ||
    fail "/var/log/idemorders" "exists under systemd: $(ls "$R/var/log/idemorders" | tr '\n' ' ')"
if ct idemorders-verify --base "http://127.0.0.1:$BOOT_PORT/orders" --user "alice:$PW" \
    --other-user "bob:$PW" --sku T-1 >"$T_TMP/verify" 2>&1; then
	ok "idemorders-verify in the container: $(grep -c '^PASS' "$T_TMP/verify") PASS, no FAIL"
else
	fail "idemorders-verify" "$(tail -n 8 "$T_TMP/verify" | tr '\n' ' ')"
fi

# --- under load: reload, rotation, restart, upgrade ------------------------------
# LOADERS loops, each creating orders under keys of its own until the
# stop file appears; every status on a line of its file.
LOADERS=4
load_start() {
	local n
	rm -f "$T_TMP/load.stop" "$T_TMP"/load.*.out
	for ((n = 0; n < LOADERS; n++)); do
		(
			i=0
			while [[ ! -e $T_TMP/load.stop ]]; do
				i=$((i + 1))
				echo "$(create "$BOOT_URL" "load-$1-$n-$i") load-$1-$n-$i"
			done
		) >"$T_TMP/load.$1.$n.out" 9>&- 8>&- 7>&- &
		LOAD_PIDS+=("$!")
	done
}
load_stop() {
	local pid
	touch "$T_TMP/load.stop"
	for pid in "${LOAD_PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	LOAD_PIDS=()
}
# load_check WHAT: every create of the round answered 201.
load_check() {
	local total bad
	total=$(cat "$T_TMP"/load.$1.*.out | wc -l)
	bad=$(cat "$T_TMP"/load.$1.*.out | grep -vc '^201 ')
	[[ $total -gt 0 && $bad -eq 0 ]] && ok "$2 under load: $total creates, all 201, none lost" ||
	    fail "$2 under load" "$bad of $total not 201: $(cat "$T_TMP"/load.$1.*.out | grep -v '^201 ' | cut -d' ' -f1 | sort | uniq -c | tr '\n' ' ')"
	LOAD_CREATED=$((${LOAD_CREATED:-0} + total - bad))
}
# during ROUND WHAT COMMAND: COMMAND in the container while the loaders run.
during() {
	local round=$1 what=$2
	shift 2
	load_start "$round"
	sleep 2
	if ct sh -c "$*" >"$T_TMP/during.$round" 2>&1; then
		ok "$what: $(tr -s ' \t\n' ' ' <<<"$*" | cut -c1-150)"
	else
		fail "$what" "$(tail -n 5 "$T_TMP/during.$round" | tr '\n' ' ')"
	fi
	sleep 2
	load_stop
	load_check "$round" "$what"
}
sock_since() { ct systemctl show -p ActiveEnterTimestampMonotonic --value idemorders.socket; }
main_pid() { ct systemctl show -p MainPID --value idemorders.service; }

SOCK0=$(sock_since)
PID0=$(main_pid)
during reload "systemctl reload idemorders" "systemctl reload idemorders"
[[ $(main_pid) == "$PID0" ]] && ok "reload keeps the master (pid $PID0 in the container)" ||
    fail "reload" "master $PID0 -> $(main_pid)"
during rotate "frontend secret rotation" \
    "idemorders-frontend-secret begin >/dev/null && systemctl reload idemorders && sleep 1 &&
     idemorders-frontend-secret web >/dev/null && systemctl reload apache2 && sleep 1 &&
     idemorders-frontend-secret end >/dev/null && systemctl reload idemorders"
during dbpw "database password rotation" \
    "idemorders-db-password begin >/dev/null && systemctl reload idemorders && sleep 1 &&
     idemorders-db-password end >/dev/null"
[[ $(cts '. /etc/dbconfig-common/idemorders.conf && echo "$dbc_dbpass"') == "$(ct head -n 1 /etc/idemorders/db-password)" &&
    ! -e $R/etc/idemorders/db-password.old ]] && ct idemorders check-config >/dev/null 2>&1 &&
    ok "after the rotation: check-config reaches the database, dbconfig-common's record holds the new password" ||
    fail "database password rotation" "$(ct idemorders check-config 2>&1 | tail -n 1)"
during restart "systemctl restart idemorders" "systemctl restart idemorders"
PID1=$(main_pid)
[[ $PID1 != "$PID0" && $PID1 != 0 ]] && ok "restart: a new master (pid $PID1)" || fail "restart" "master $PID0 -> $PID1"
# The events of every order so far wait: the receiver is down.
evq "SELECT webhook_id, order_id, seq FROM events WHERE state = 'pending'" | sort >"$T_TMP/pending.before"
n_other=$(evq "SELECT COUNT(*) FROM events WHERE state <> 'pending'")
tried=$(evq "SELECT COALESCE(SUM(attempts), 0) FROM events")
RPID1=$(relay_main)
[[ -s $T_TMP/pending.before && $n_other == 0 && $tried -gt 0 && $RPID1 != 0 ]] &&
    ok "before the upgrade: $(wc -l <"$T_TMP/pending.before") events pending, none delivered ($tried attempts at the receiver that is down; relay pid $RPID1)" ||
    fail "before the upgrade" "$(wc -l <"$T_TMP/pending.before") pending, $n_other not pending, $tried attempts, relay pid $RPID1"
during upgrade "upgrade" "cd /root && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ./$UPDEB"
cp "$T_TMP/during.upgrade" "$BOOT_WORK/upgrade.log"
[[ $(ct dpkg-query -W -f='${Version}' idemorders) == "$VERSION+up1" ]] &&
    ok "upgraded to $VERSION+up1" || fail "upgrade" "version $(ct dpkg-query -W -f='${Version}' idemorders)"
[[ $(sock_since) == "$SOCK0" ]] &&
    ok "the upgrade kept the listening socket (idemorders.socket not restarted since the install)" ||
    fail "upgrade: the socket" "idemorders.socket was restarted (active since $SOCK0, now $(sock_since))"
PID2=$(main_pid)
[[ $PID2 != "$PID1" && $PID2 != 0 && $(ct readlink "/proc/$PID2/exe") == /usr/sbin/idemorders ]] &&
    ok "the upgrade restarted the service on the new binary (pid $PID2)" ||
    fail "upgrade: the service" "master $PID1 -> $PID2, exe $(ct readlink "/proc/$PID2/exe" 2>&1)"
n_orders=$(ct mariadb -N -B -e "SELECT COUNT(*) FROM idemorders.orders WHERE idempotency_key LIKE 'load-%'" 2>&1)
[[ $n_orders == "$LOAD_CREATED" ]] && ok "the database holds exactly the $LOAD_CREATED orders answered 201 under load" ||
    fail "orders under load" "$n_orders in the database, $LOAD_CREATED answered 201"

# --- after the upgrade the pending events go out, each as it was -------------------
RPID2=$(relay_main)
[[ $RPID2 != "$RPID1" && $RPID2 != 0 && $(ct systemctl is-active idemorders-relay.service) == active &&
    $(ct readlink "/proc/$RPID2/exe") == /usr/sbin/idemorders ]] &&
    ok "the upgrade restarted the relay on the new binary (pid $RPID1 -> $RPID2)" ||
    fail "upgrade: the relay" "pid $RPID1 -> $RPID2, $(ct systemctl is-active idemorders-relay.service), exe $(ct readlink "/proc/$RPID2/exe" 2>&1)"
evq "SELECT webhook_id, order_id, seq FROM events WHERE state = 'pending'" | sort >"$T_TMP/pending.after"
missing=$(comm -23 "$T_TMP/pending.before" "$T_TMP/pending.after" | wc -l)
[[ $missing == 0 && $(evq "SELECT COUNT(*) FROM events WHERE state <> 'pending'") == 0 ]] &&
    ok "after the upgrade: all $(wc -l <"$T_TMP/pending.before") events pending before it still pending, the same webhook-ids and orders ($(wc -l <"$T_TMP/pending.after") with the creates during it)" ||
    fail "after the upgrade" "$missing of the events pending before it are gone or changed: $(comm -23 "$T_TMP/pending.before" "$T_TMP/pending.after" | head -n 3 | tr '\n' ' ')"
receiver_start
all_delivered() { [[ $(evq "SELECT COUNT(*) FROM events WHERE state <> 'delivered'") == 0 ]]; }
t=$SECONDS
if wait_until 240 all_delivered; then
	ok "every event delivered $((SECONDS - t)) s after the receiver came up"
else
	fail "delivery after the upgrade" "$(evq "SELECT state, COUNT(*), MAX(last_error) FROM events GROUP BY state" | tr '\n\t' '; ')"
fi
# What the receiver verified and answered 2xx: "webhook-id o-ORDER type".
jq -r 'select(.verified and (.status | type) == "number" and .status < 300) | "\(.id) \(.orderId) \(.type)"' \
    "$RECEIVER_LOG" | sort >"$T_TMP/received"
sort -u "$T_TMP/received" >"$T_TMP/received.u"
awk '{ print $1, "o-" $2, ($3 == 1 ? "order.created" : "order.cancelled") }' "$T_TMP/pending.after" |
    sort >"$T_TMP/expected"
unverified=$(jq -r 'select(.verified | not) | .id' "$RECEIVER_LOG" | wc -l)
if cmp -s "$T_TMP/expected" "$T_TMP/received.u"; then
	ok "the receiver got exactly the $(wc -l <"$T_TMP/expected") pending events, each with its original webhook-id and order ($(($(wc -l <"$T_TMP/received") - $(wc -l <"$T_TMP/received.u"))) sent twice: at least once), signatures verified"
else
	fail "the events received" "not received: $(comm -23 "$T_TMP/expected" "$T_TMP/received.u" | head -n 3 | tr '\n' ';') received but not pending: $(comm -13 "$T_TMP/expected" "$T_TMP/received.u" | head -n 3 | tr '\n' ';')"
fi
[[ $unverified == 0 ]] && ok "no delivery failed the receiver's verification" ||
    fail "verification" "$unverified deliveries refused: $(jq -r 'select(.verified | not) | .why' "$RECEIVER_LOG" | sort | uniq -c | head -n 3 | tr '\n' ' ')"
lost=$(evq "SELECT COUNT(*) FROM orders o LEFT JOIN events e ON e.order_id = o.id AND e.seq = 1 WHERE e.id IS NULL")
[[ $lost == 0 && $(evq "SELECT COUNT(*) FROM orders") -gt 0 ]] &&
    ok "every order of the run has its order.created event ($(evq "SELECT COUNT(*) FROM orders") orders)" ||
    fail "orders without their event" "$lost"
receiver_stop

# --- the timer fires its service ------------------------------------------------------
# A drop-in makes it due now (its own schedule is every 15 minutes).
cts "mkdir -p /run/systemd/system/idemorders-expire.timer.d &&
    printf '[Timer]\nOnActiveSec=1s\nRandomizedDelaySec=0\nAccuracySec=1s\n' >/run/systemd/system/idemorders-expire.timer.d/now.conf &&
    systemctl daemon-reload && systemctl restart idemorders-expire.timer"
for ((i = 0; i < 150; i++)); do
	[[ $(ct systemctl show -p ExecMainExitTimestampMonotonic --value idemorders-expire.service) != 0 ]] && break
	sleep 0.2
done
res="$(ct systemctl show -p Result --value idemorders-expire.service) $(ct systemctl show -p ExecMainStatus --value idemorders-expire.service)"
[[ $res == "success 0" ]] && ct journalctl -u idemorders-expire.service --no-pager -q | grep -q 'expired=' &&
    ok "the timer fired idemorders-expire.service: success ($(ct journalctl -u idemorders-expire.service --no-pager -q -o cat | grep -m1 'expired='))" ||
    fail "timer" "$res $(ct journalctl -u idemorders-expire.service --no-pager -q -n 3 2>&1 | tr '\n' ' ')"
cts "rm -rf /run/systemd/system/idemorders-expire.timer.d && systemctl daemon-reload"

# --- backup and restore, as docs/sysadmin.md says (the dump alone: this
# MariaDB has no binary log) --------------------------------------------------------
# headers URL KEY: one create's status line and Idempotent-Replayed header.
headers() {
	curl -s -D - -o /dev/null -m 60 -u "alice:$PW" -H "Idempotency-Key: $2" \
	    -H 'Content-Type: application/json' --data "$ORDER" "$1/orders" |
	    tr -d '\r' | grep -iE '^(HTTP/|Idempotent-Replayed:)' | tr '\n' ' '
}
if cts "mariadb-dump --single-transaction --databases idemorders | gzip >/root/idemorders-backup.sql.gz" \
    >"$T_TMP/dump" 2>&1; then
	ok "mariadb-dump --single-transaction --databases idemorders | gzip"
else
	fail "backup" "$(tail -n 3 "$T_TMP/dump" | tr '\n' ' ')"
fi
st=$(create "$BOOT_URL" "after-backup-1")
[[ $st == 201 ]] && ok "an order after the backup: 201" || fail "after the backup" "status $st"
if cts "systemctl stop idemorders.socket idemorders.service &&
    mariadb -e 'DROP DATABASE idemorders' && zcat /root/idemorders-backup.sql.gz | mariadb &&
    idemorders audit && systemctl start idemorders.socket" >"$T_TMP/restore" 2>&1; then
	ok "restore: stop, drop, load the dump, idemorders audit (exit 0: the ledger and the orders agree), start"
else
	fail "restore" "$(tail -n 5 "$T_TMP/restore" | tr '\n' ' ')"
fi
h=$(headers "$BOOT_URL" "first-order-1")
[[ $h == *" 201 "*"Idempotent-Replayed: true"* ]] &&
    ok "after the restore a key from before the backup replays: $h" ||
    fail "restore: replay" "first-order-1: $h"
h=$(headers "$BOOT_URL" "after-backup-1")
[[ $h == *" 201 "* && $h != *Idempotent-Replayed* ]] &&
    ok "a key first used after the backup point is forgotten with its order: a new order ($h), as documented" ||
    fail "restore: a key after the backup" "after-backup-1: $h"

# --- remove, purge: what is left ------------------------------------------------------
# listing FILE: what of idemorders is on disk (every path whose name
# holds "idemorders", but the test's own files in /root; the database's
# own directory is listed as the database), in debconf, and in MariaDB
# (databases, accounts).
listing() {
	cts "find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /root -o -path /var/lib/mysql \\) -prune \
	    -o -iname '*idemorders*' -print 2>/dev/null; find /run -iname '*idemorders*' 2>/dev/null" |
	    sed 's/^/file /' | LC_ALL=C sort -u >"$1"
	ct debconf-show idemorders 2>/dev/null | sed 's/^[* ] *\([^:]*\):.*/debconf \1/' >>"$1"
	ct getent passwd idemorders | cut -d: -f1 | sed 's/^/user /' >>"$1"
	ct getent group idemorders | cut -d: -f1 | sed 's/^/group /' >>"$1"
	ct mariadb -N -B -e "SELECT CONCAT('database ', SCHEMA_NAME) FROM information_schema.SCHEMATA
	    WHERE SCHEMA_NAME LIKE '%idemorders%';
	    SELECT CONCAT('account ', User, '@', Host) FROM mysql.user WHERE User LIKE '%idemorders%'" >>"$1"
}
[[ -z $(find "$TREE" -xdev -iname '*idemorders*' -print -quit) ]] &&
    ok "the tree has nothing named idemorders (what the listings find, the package made)" ||
    fail "tree" "$(find "$TREE" -xdev -iname '*idemorders*' | head -n 3 | tr '\n' ' ')"

if ct sh -c "DEBIAN_FRONTEND=noninteractive apt-get remove -y -q idemorders" >"$T_TMP/remove" 2>&1; then
	ok "apt-get remove idemorders (non-interactive)"
else
	fail "apt-get remove" "$(tail -n 5 "$T_TMP/remove" | tr '\n' ' ')"
fi
grep -qi 'unable to initialize frontend\|falling back to frontend\|perl: warning' "$T_TMP/remove" &&
    fail "remove, non-interactive" "$(grep -i 'frontend\|perl:' "$T_TMP/remove" | tr '\n' ' ')" ||
    ok "remove, non-interactive: no debconf warning"
[[ $(ct systemctl is-active idemorders.service) != active && $(ct systemctl is-active idemorders.socket) != active ]] &&
    ok "remove stopped idemorders.socket and idemorders.service" ||
    fail "remove" "socket $(ct systemctl is-active idemorders.socket), service $(ct systemctl is-active idemorders.service)"
procs=$(cts 'for p in /proc/[0-9]*; do case "$(readlink $p/exe 2>/dev/null)" in *idemorders*) echo "${p#/proc/}";; esac; done')
[[ -z $procs ]] && ok "remove: no idemorders process left" || fail "remove" "processes left: $procs"
st=$(curl -s -o /dev/null -m 10 -w '%{http_code}' -u "alice:$PW" "$BOOT_URL/orders/_health")
[[ $st == 404 ]] && ok "remove: Apache no longer mounts /orders (404)" || fail "remove: Apache" "/orders/_health: $st"
[[ -f $R/etc/idemorders/idemorders.conf && -f $R/etc/idemorders/db-password ]] &&
    ok "remove keeps /etc/idemorders" || fail "remove" "/etc/idemorders is gone"
[[ $(ct mariadb -N -B -e "SELECT COUNT(*) FROM idemorders.orders" 2>&1) -gt 0 ]] &&
    ok "remove keeps the database and its orders (the answer to \"Delete the database\" is no without a terminal)" ||
    fail "remove" "the database: $(ct mariadb -N -B -e "SELECT COUNT(*) FROM idemorders.orders" 2>&1)"

if ct sh -c "DEBIAN_FRONTEND=noninteractive apt-get purge -y -q idemorders" >"$T_TMP/purge" 2>&1; then
	ok "apt-get purge idemorders (non-interactive)"
else
	fail "apt-get purge" "$(tail -n 5 "$T_TMP/purge" | tr '\n' ' ')"
fi
grep -qi 'unable to initialize frontend\|falling back to frontend\|perl: warning\|userdel\|deluser' "$T_TMP/purge" &&
    fail "purge" "$(grep -i 'frontend\|perl:\|userdel\|deluser' "$T_TMP/purge" | tr '\n' ' ')" ||
    ok "purge, non-interactive: no warning"
ct getent passwd idemorders >/dev/null && fail "purge" "the user idemorders is still there" ||
    ok "purge removed the user idemorders"
ct getent group idemorders >/dev/null && fail "purge" "the group idemorders is still there" ||
    ok "purge removed the group idemorders"
listing "$T_TMP/purged"
echo "       left after remove and purge (non-interactive): $(tr '\n' ';' <"$T_TMP/purged")"
# What docs/sysadmin.md's "Remove and purge" says stays after them: its lines
# "    stays: WHAT" (WHAT as the listing names it; * matches anything).
RMP=$(awk '/^### Remove and purge/ { on = 1; next } on && /^##/ { exit } on' "$REPO/docs/sysadmin.md")
# readme_says AFTER: the guide's list of what stays after AFTER ("purge" or
# "purge that deletes the database").
readme_says() {
	sed -n "s/^    # after $1: \(.*\)/\1/p" <<<"$RMP" | tr ';' '\n' | sed 's/^ *//; s/ *$//; /^$/d; /^nothing$/d'
}
# compare LISTING AFTER
compare() {
	local said extra missing e f m
	said=$(readme_says "$2")
	[[ -n $said || $(sed -n "s/^    # after $2: //p" <<<"$RMP") == nothing ]] ||
	    { fail "docs/sysadmin.md \"Remove and purge\"" "no line '    # after $2: ...'"; return; }
	extra='' missing=''
	while IFS= read -r f; do
		m=
		while IFS= read -r e; do
			# shellcheck disable=SC2053
			[[ -n $e && $f == $e ]] && m=1 && break
		done <<<"$said"
		[[ -n $m ]] || extra+=" [$f]"
	done <"$1"
	while IFS= read -r e; do
		m=
		while IFS= read -r f; do
			# shellcheck disable=SC2053
			[[ $f == $e ]] && m=1 && break
		done <"$1"
		[[ -n $m ]] || missing+=" [$e]"
	done <<<"$said"
	[[ -z $extra && -z $missing ]] &&
	    ok "after $2, what is left is what docs/sysadmin.md's \"Remove and purge\" says: $(tr '\n' ';' <<<"$said")" ||
	    fail "after $2: docs/sysadmin.md and the container differ" "left but not in the guide:${extra:- none}; in the guide but not left:${missing:- none}"
}
compare "$T_TMP/purged" purge

# --- reinstall over the kept database and account, then purge dropping it ------------
if ct sh -c "cd /root && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ./$UPDEB" \
    >"$T_TMP/reinstall" 2>&1 && ! grep -q 'cannot be reached' "$T_TMP/reinstall"; then
	ok "apt-get install again over the kept database and account"
else
	fail "reinstall" "$(grep -i 'error\|cannot\|fail' "$T_TMP/reinstall" | tail -n 5 | tr '\n' ' ')"
fi
# A purged package starts afresh: the snippet is enabled again, as after
# the first install.
ct sh -c "htpasswd -cbB /etc/idemorders/htpasswd alice $PW && chgrp www-data /etc/idemorders/htpasswd &&
    chmod 0640 /etc/idemorders/htpasswd && a2enconf -q idemorders && systemctl reload apache2" >/dev/null 2>&1
sleep 1
st=$(create "$BOOT_URL" "after-reinstall-1")
[[ $st == 201 ]] && ok "after the reinstall: a create through Apache, 201" || fail "after the reinstall" "status $st"
ct idemorders check-config >"$T_TMP/cc" 2>&1 && ok "check-config after the reinstall: $(cat "$T_TMP/cc")" ||
    fail "check-config after the reinstall" "$(cat "$T_TMP/cc")"
echo "idemorders idemorders/purge boolean true" | ct debconf-set-selections
if ct sh -c "DEBIAN_FRONTEND=noninteractive apt-get purge -y -q idemorders" >"$T_TMP/purge2" 2>&1; then
	ok "apt-get purge, answered yes to \"Delete the database\" (preseeded)"
else
	fail "purge (delete the database)" "$(tail -n 5 "$T_TMP/purge2" | tr '\n' ' ')"
fi
listing "$T_TMP/purged2"
echo "       left after the purge that deleted the database: $(tr '\n' ';' <"$T_TMP/purged2")"
compare "$T_TMP/purged2" "purge that deletes the database"
grep -q '^account ' "$T_TMP/purged2" && fail "purge: MariaDB" "the account is left" ||
    ok "the purge that deleted the database dropped its account too"

load_time=$((SECONDS - T0))
echo "       the booted-container test took $load_time s"
finish
