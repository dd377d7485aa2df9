#!/usr/bin/env bash
# `make distcheck`: the tarball builds, passes make check, installs and
# uninstalls from a read-only source tree.  The database tests run in it
# against a database of their own on the test stack (IDEMORDERS_TEST_CONF),
# so that nothing skips here; outside CI, a distcheck without that
# variable skips them and says so.  Then the release tarball is checked
# for the files a `make install` from it needs.
# Takes about two minutes (a full configure, build and make check).
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

DB=idemorders_distcheck
build=$(mktemp -d /var/tmp/idemorders-distcheck.XXXXXX)
cleanup() {
	chmod -R u+w "$build" 2>/dev/null
	rm -rf "$build" "$T_TMP"
	"$DEV" sql "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
}
trap cleanup EXIT

# A database for the database tests, migrated and with the demo stock.
"$DEV" sql "DROP DATABASE IF EXISTS $DB" >/dev/null
"$DEV" sql "CREATE DATABASE $DB CHARACTER SET utf8mb4" >/dev/null &&
    "$DEV" sql "GRANT ALL PRIVILEGES ON $DB.* TO 'idemorders'@'localhost'" >/dev/null ||
    { fail "database" "cannot create $DB"; finish; }
sed "s/^db_name = .*/db_name = $DB/" "$RUNDIR/idemorders-check.conf" >"$build/check.conf"
printf 'A-10,KRW,6000,100\nB-20,KRW,2500,50\nC-30,USD,1999,10\nZ-00,KRW,1000,0\n' >"$build/demo.csv"
"$IDEMORDERS_BIN" migrate -c "$build/check.conf" >/dev/null 2>&1 &&
    "$IDEMORDERS_BIN" stock import -c "$build/check.conf" "$build/demo.csv" >/dev/null ||
    { fail "database" "cannot migrate $DB"; finish; }

if (cd "$build" && "$REPO/configure" >configure.log 2>&1); then
	ok "configure (in $build)"
else
	fail "configure" "$(tail -n 5 "$build/configure.log" | tr '\n' ' ')"
	finish
fi
start=$(date +%s)
if IDEMORDERS_TEST_CONF=$build/check.conf make -C "$build" distcheck \
    DISTCHECK_CONFIGURE_FLAGS= >"$build/distcheck.log" 2>&1 9>&-; then
	ok "make distcheck ($(( $(date +%s) - start )) s)"
else
	fail "make distcheck" "$(grep -E 'FAIL|ERROR|rror' "$build/distcheck.log" | head -n 10 | tr '\n' ' ')"
	tail -n 40 "$build/distcheck.log" | sed 's/^/       /'
fi
grep -q '^PASS: tests/unit/run_unit' "$build/distcheck.log" &&
    ok "distcheck ran the unit tests" || fail "distcheck" "no PASS: tests/unit/run_unit"
grep -q '^PASS: tests/db/run_db' "$build/distcheck.log" &&
    ok "distcheck ran the database tests (not skipped)" || fail "distcheck" "no PASS: tests/db/run_db"
grep -q 'archives ready for distribution' "$build/distcheck.log" &&
    ok "distcheck: archives ready for distribution" || fail "distcheck" "no 'archives ready' line"

tarball=$(ls "$build"/idemorders-*.tar.gz 2>/dev/null | head -n 1)
if [[ -n $tarball ]]; then
	list=$(tar tzf "$tarball")
	missing=
	for f in configure man/idemorders.8 man/idemorders.conf.5 \
	    systemd/idemorders.service.in systemd/idemorders.socket \
	    scheduling/idemorders-expire.timer.in schema/001_initial.sql \
	    src/stock_admin.c; do
		grep -q "^idemorders-[^/]*/$f\$" <<<"$list" || missing+=" $f"
	done
	[[ -z $missing ]] && ok "$(basename -- "$tarball") has configure, man pages, units, schema" ||
	    fail "tarball contents" "missing:$missing"
	# tools/dev works from the tarball: every file it sources is there.
	missing=
	for f in tools/dev verify/idemorders-verify \
	    $(sed -n 's|^\. "\$REPO/\(.*\)"$|\1|p' "$REPO/tools/dev"); do
		grep -q "^idemorders-[^/]*/$f\$" <<<"$list" || missing+=" $f"
	done
	[[ -z $missing ]] && ok "the tarball has tools/dev and every file it sources" ||
	    fail "tarball: tools/dev's files" "missing:$missing"
else
	fail "make distcheck" "no tarball"
fi

# Without IDEMORDERS_TEST_CONF, make check says that the database tests
# were skipped, and why.
out=$(env -u IDEMORDERS_TEST_CONF make -s -C "$build" check-local 2>&1)
grep -q 'NOTE: the database tests (tests/db/run_db) were skipped' <<<"$out" &&
    ok "make check without a database says the database tests were skipped" ||
    fail "make check without a database" "$out"

finish
