#!/usr/bin/env bash
# What `make install` puts on a host, beside the binary:
#  - idemorders(8) and idemorders.conf(5): clean under `mandoc -Tlint`
#    (warnings and worse), installed under $(mandir) and shown by man;
#  - the units under PREFIX/lib/systemd/system (systemd reads
#    /usr/local/lib/systemd/system too), with the installed paths;
#  - README.md in $(docdir) and the guides docs/*.md in $(docdir)/docs,
#    where its links find them;
#  - every key the parser knows is documented in idemorders.conf(5);
#  - the cron line of the retention job does nothing where systemd runs
#    (/run/systemd/system: the timer runs the job there) and once the
#    binary is gone (the package removed), and keeps the job's exit status and
#    prints a failed run's output (cron mails it), instead of a pipe to
#    logger that hid both.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

build=$(dirname -- "$(dirname -- "$IDEMORDERS_BIN")")
dest=$T_TMP/dest

for m in idemorders.8 idemorders.conf.5 idemorders-verify.1; do
	if out=$(mandoc -Tlint -Wwarning "$REPO/man/$m" 2>&1); then
		ok "mandoc -Tlint -Wwarning man/$m: clean"
	else
		fail "mandoc -Tlint man/$m" "$out"
	fi
done

if make -C "$build" install DESTDIR="$dest" >"$T_TMP/install.log" 2>&1; then
	ok "make install DESTDIR=..."
else
	fail "make install" "$(tail -n 10 "$T_TMP/install.log" | tr '\n' ' ')"
	finish
fi
prefix=$(sed -n 's/^prefix = //p' "$build/Makefile")
sbindir=$(sed -n 's/^sbindir = //p' "$build/Makefile")
sbindir=${sbindir/\$\{exec_prefix\}/$prefix}
sysconfdir=$(sed -n 's/^sysconfdir = //p' "$build/Makefile")
sysconfdir=${sysconfdir/\$\{prefix\}/$prefix}
for f in share/man/man8/idemorders.8 share/man/man5/idemorders.conf.5 \
    share/man/man1/idemorders-verify.1 \
    lib/systemd/system/idemorders.service lib/systemd/system/idemorders.socket \
    lib/systemd/system/idemorders-expire.service lib/systemd/system/idemorders-expire.timer \
    share/idemorders/schema/001_initial.sql; do
	if [[ -f $dest$prefix/$f ]]; then
		ok "installed $prefix/$f"
	else
		fail "make install" "no $prefix/$f"
	fi
done
# The front page and the guides, where its links find them.
docdir=$(sed -n 's/^docdir = //p' "$build/Makefile")
docdir=${docdir/\$\{datarootdir\}/$prefix/share}
docdir=${docdir/\$\{PACKAGE_TARNAME\}/idemorders}
for f in README.md "$REPO"/docs/*.md; do
	f=${f#"$REPO"/}
	[[ -f $dest$docdir/$f ]] && ok "installed $docdir/$f" || fail "make install" "no $docdir/$f"
done
grep -qx "ExecStart=$sbindir/idemorders serve -c $sysconfdir/idemorders.conf" \
    "$dest$prefix/lib/systemd/system/idemorders.service" &&
    ok "installed service runs $sbindir/idemorders with $sysconfdir/idemorders.conf" ||
    fail "installed service ExecStart" "$(grep ExecStart "$dest$prefix/lib/systemd/system/idemorders.service")"

page=$(MANPAGER=cat MANWIDTH=80 man -l "$dest$prefix/share/man/man8/idemorders.8" 2>&1)
[[ $page == *"stock import"* && $page == *SIGHUP* && $page == *"EXIT STATUS"* ]] &&
    ok "man idemorders shows subcommands, signals and exit status" ||
    fail "man idemorders" "$(head -c 300 <<<"$page")"
page=$(MANPAGER=cat MANWIDTH=80 man -l "$dest$prefix/share/man/man5/idemorders.conf.5" 2>&1)
missing=
for k in $(sed -n 's/^[[:space:]]*{ "\([a-z_]*\)",[[:space:]]*T_.*/\1/p' "$REPO/src/conf.c"); do
	grep -q "^\.It Ic $k\b" "$REPO/man/idemorders.conf.5" || missing+=" $k"
done
[[ -z $missing ]] && ok "idemorders.conf(5) documents every key of src/conf.c" ||
    fail "idemorders.conf(5)" "keys not documented:$missing"

# The cron line: what cron would run, with the binary of this build and a
# config that cannot work (its database does not exist).
line=$(grep -v '^#' "$dest$prefix/share/idemorders/scheduling/idemorders-expire.cron" |
    awk -F'\t' 'NF >= 3 { print $3 }')
cmd=${line//\\%/%}
printf 'db_socket = %s/nothing.sock\ndb_connect_timeout = 1s\n' "$T_TMP" >"$T_TMP/bad.conf"
cmd=${cmd//"$sbindir/idemorders"/$IDEMORDERS_BIN}
cmd=${cmd//"$sysconfdir/idemorders.conf"/$T_TMP/bad.conf}
out=$(sh -c "$cmd" 2>/dev/null)
rc=$?
[[ $rc -ne 0 ]] && ok "cron line: a failed job exits $rc" ||
    fail "cron line exit status" "0 for a job that failed ($cmd)"
[[ $out == *database* ]] && ok "cron line: a failed job prints its error (mailed by cron)" ||
    fail "cron line output" "'$out'"
# Where systemd runs, the timer runs the job: the line does nothing.
mkdir -p "$T_TMP/systemd-system"
out=$(sh -c "${cmd//\/run\/systemd\/system/$T_TMP/systemd-system}" 2>&1)
rc=$?
[[ $rc -eq 0 && -z $out && $cmd == "[ -d /run/systemd/system ] || "* ]] &&
    ok "cron line: steps aside where systemd runs (the timer runs the job)" ||
    fail "cron line under systemd" "rc $rc, '$out' ($cmd)"
# Once the binary is gone (the package removed, its cron line kept
# until purge): nothing, not "not found" mailed every 15 minutes.
out=$(sh -c "${cmd//"$IDEMORDERS_BIN"/$T_TMP/removed/idemorders}" 2>&1)
rc=$?
[[ $rc -eq 0 && -z $out ]] &&
    ok "cron line: does nothing once the binary is gone" ||
    fail "cron line without the binary" "rc $rc, '$out'"

finish
