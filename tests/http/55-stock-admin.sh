#!/usr/bin/env bash
# `idemorders stock set|list|import` against the test database:
#  - set creates and replaces a row; a create through lighttpd then uses
#    the new price and count;
#  - every bad value (SKU charset and length, currency, price, count) is
#    refused with a message naming the field, and writes nothing;
#  - list prints CSV that imports again unchanged;
#  - import takes a header, comments, blank lines and CRLF; a bad line
#    anywhere, a SKU named twice, or a row the database refuses halfway
#    (a trigger of this script's own) names FILE:LINE and leaves every
#    row as it was.
# Only SKUs starting with T55- are touched.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/orders.sh"

BIN=$IDEMORDERS_BIN
CONF=$IDEMORDERS_CONF

cleanup() {
	sql "DROP TRIGGER IF EXISTS t55_refuse" >/dev/null 2>&1
	rm -rf "$T_TMP"
}
trap cleanup EXIT

# stock ARGS...: run the command; OUT, ERR and RC hold what it did.
stock() {
	"$BIN" stock -c "$CONF" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	RC=$?
	OUT=$(cat "$T_TMP/out")
	ERR=$(cat "$T_TMP/err")
}

# expect_rc N WHAT
expect_rc() {
	if [[ $RC == "$1" ]]; then
		ok "$2: exit $1"
	else
		fail "$2: exit status" "expected $1, got $RC (stderr: $ERR)"
	fi
}

# expect_err TEXT WHAT: stderr contains TEXT.
expect_err() {
	if [[ $ERR == *"$1"* ]]; then
		ok "$2: stderr names '$1'"
	else
		fail "$2: stderr" "expected '$1' in '$ERR'"
	fi
}

row() {
	sql "SELECT CONCAT_WS(' ', currency, unit_price, available) FROM stock WHERE sku = '$1'"
}

t55_rows() {
	sql "SELECT COUNT(*) FROM stock WHERE sku LIKE 'T55-%'"
}

sql "DROP TRIGGER IF EXISTS t55_refuse"
sql "DELETE FROM stock WHERE sku LIKE 'T55-%' AND sku NOT IN (SELECT sku FROM order_items)"
sql "UPDATE stock SET currency = 'KRW', unit_price = 1, available = 0 WHERE sku LIKE 'T55-%'"

# --- set ----------------------------------------------------------------------
stock set T55-A KRW 700 5
expect_rc 0 "stock set T55-A (new)"
[[ $OUT == *"T55-A KRW unit_price=700 available=5: "* ]] &&
    ok "stock set prints the row" || fail "stock set output" "$OUT"
expect_sql "SELECT CONCAT_WS(' ', currency, unit_price, available) FROM stock WHERE sku = 'T55-A'" "KRW 700 5"

stock set T55-A KRW 750 3
expect_rc 0 "stock set T55-A (replace)"
[[ $OUT == *": updated" ]] && ok "stock set on an existing SKU says updated" ||
    fail "stock set replace output" "$OUT"
expect_sql "SELECT CONCAT_WS(' ', currency, unit_price, available) FROM stock WHERE sku = 'T55-A'" "KRW 750 3"

stock set T55-A KRW 750 3
expect_rc 0 "stock set T55-A (same values)"
[[ $OUT == *": unchanged" ]] && ok "stock set with the same values says unchanged" ||
    fail "stock set unchanged output" "$OUT"

# The responders see it at once.
post "$LIGHTTPD_URL" "$ALICE" "$(unique_key t55)" \
    '{"currency":"KRW","items":[{"sku":"T55-A","qty":2}],"amount":1500}'
expect_status 201 "order on a SKU made by stock set"
expect_sql "SELECT available FROM stock WHERE sku = 'T55-A'" 1

# --- set: bad values write nothing -------------------------------------------
bad_set() {
	local what=$1 text=$2
	shift 2
	stock set -- "$@"
	expect_rc 1 "stock set $what"
	expect_err "$text" "stock set $what"
}
long=T55-$(printf 'x%.0s' {1..61})
bad_set "SKU with a space" "sku \"T55 B\" has an invalid character at position 4" "T55 B" KRW 1 1
bad_set "SKU with a quote" "invalid character at position 4" "T55'B" KRW 1 1
bad_set "SKU of 65 characters" "sku must be 1 to 64 characters long, not 65" "$long" KRW 1 1
bad_set "empty SKU" "sku must be 1 to 64 characters long, not 0" "" KRW 1 1
bad_set "lower-case currency" "currency must be three upper-case letters A-Z, not \"krw\"" T55-B krw 1 1
bad_set "four-letter currency" "currency must be three" T55-B KRWX 1 1
bad_set "negative price" "unit_price must be an integer in minor units from 0 to 1000000000000000, not \"-1\"" T55-B KRW -1 1
bad_set "fractional price" "unit_price must be an integer" T55-B KRW 1.5 1
bad_set "price above 10^15" "unit_price must be an integer" T55-B KRW 1000000000000001 1
bad_set "count above INT" "available must be an integer from 0 to 2147483647, not \"2147483648\"" T55-B KRW 1 2147483648
bad_set "count with a sign" "available must be an integer" T55-B KRW 1 +5
expect_sql "SELECT COUNT(*) FROM stock WHERE sku LIKE 'T55-B%' OR sku = '$long'" 0 "no row from a refused stock set"

stock set T55-B KRW 1
expect_rc 2 "stock set with three arguments (usage)"
stock frobnicate
expect_rc 2 "stock with an unknown subcommand (usage)"
stock list extra
expect_rc 2 "stock list with an argument (usage)"

# --- import ------------------------------------------------------------------
good=$T_TMP/good.csv
printf 'sku,currency,unit_price,available\r\n# spring prices\r\n\r\nT55-C,USD,1999,10\r\n T55-D , KRW , 0 , 0 \r\nT55-A,KRW,800,7\r\n' >"$good"
stock import "$good"
expect_rc 0 "import a good CSV (header, comment, blank line, CRLF, spaces)"
[[ $OUT == "$good: 3 rows: 2 created, 1 updated, 0 unchanged" ]] &&
    ok "import reports created/updated counts" || fail "import output" "$OUT"
expect_sql "SELECT GROUP_CONCAT(CONCAT_WS(' ', sku, currency, unit_price, available) ORDER BY sku SEPARATOR ';') FROM stock WHERE sku LIKE 'T55-%'" \
    "T55-A KRW 800 7;T55-C USD 1999 10;T55-D KRW 0 0"

# list, then import what it printed: nothing changes.
stock list
expect_rc 0 "stock list"
[[ $(head -n 1 <<<"$OUT") == "sku,currency,unit_price,available" ]] &&
    ok "stock list starts with the CSV header" || fail "stock list header" "$(head -n 1 <<<"$OUT")"
grep -qx 'T55-C,USD,1999,10' <<<"$OUT" && ok "stock list shows T55-C" ||
    fail "stock list rows" "$OUT"
n_db=$(sql "SELECT COUNT(*) FROM stock")
n_list=$(($(wc -l <<<"$OUT") - 1))
[[ $n_list == "$n_db" ]] && ok "stock list prints every row ($n_db)" ||
    fail "stock list count" "$n_list lines, $n_db rows"
grep '^sku,\|^T55-' <<<"$OUT" >"$T_TMP/listed.csv"
stock import "$T_TMP/listed.csv"
expect_rc 0 "import the listed rows"
[[ $OUT == *": 3 rows: 0 created, 0 updated, 3 unchanged" ]] &&
    ok "re-importing the list changes nothing" || fail "re-import output" "$OUT"

# bad_import WHAT TEXT: FILE ($T_TMP/bad.csv) is refused naming TEXT, and
# the T55 rows stay exactly as they were.
bad_import() {
	local what=$1 text=$2 before after
	before=$(sql "SELECT GROUP_CONCAT(CONCAT_WS(' ', sku, currency, unit_price, available) ORDER BY sku SEPARATOR ';') FROM stock WHERE sku LIKE 'T55-%'")
	stock import "$T_TMP/bad.csv"
	expect_rc 1 "import $what"
	expect_err "$text" "import $what"
	after=$(sql "SELECT GROUP_CONCAT(CONCAT_WS(' ', sku, currency, unit_price, available) ORDER BY sku SEPARATOR ';') FROM stock WHERE sku LIKE 'T55-%'")
	[[ $after == "$before" ]] && ok "import $what: nothing written" ||
	    fail "import $what: rows changed" "before '$before', after '$after'"
}

bad=$T_TMP/bad.csv
printf 'sku,currency,unit_price,available\nT55-E,KRW,100,1\nT55-A,KRW,900,9\nT55-F,usd,100,1\nT55-G,KRW,100,1\n' >"$bad"
bad_import "with a bad currency on line 4" "$bad:4: currency must be three upper-case letters A-Z, not \"usd\""
expect_sql "SELECT COUNT(*) FROM stock WHERE sku IN ('T55-E', 'T55-G')" 0 "no row of the refused file"

printf 'T55-E,KRW,100,1\nT55-E;KRW;100;1\n' >"$bad"
bad_import "with semicolons" "$bad:2: 1 field, expected 4"
printf 'T55-E,KRW,100,1,extra\n' >"$bad"
bad_import "with five fields" "$bad:1: more than 4 fields"
printf 'T55-E,KRW,100,1\n"T55-H",KRW,100,1\n' >"$bad"
bad_import "with quotes" "$bad:2: quotes are not allowed"
printf 'T55-E,KRW,100,1\nT55-H,KRW,100,\n' >"$bad"
bad_import "with an empty count" "$bad:2: available must be an integer"
printf 'T55-H,KRW,100,1\nT55-E,KRW,100,1\nT55-H,KRW,200,2\n' >"$bad"
bad_import "naming a SKU twice" "$bad:3: sku \"T55-H\" repeats line 1"
printf 'sku,currency,unit_price,available\n# nothing\n' >"$bad"
bad_import "without rows" "$bad: no stock rows"
printf 'T55-E,KRW,100,1\nT55-\xff,KRW,100,1\n' >"$bad"
bad_import "with a non-ASCII SKU" "$bad:2: sku"

stock import "$T_TMP/missing.csv"
expect_rc 1 "import a missing file"
expect_err "$T_TMP/missing.csv: No such file or directory" "import a missing file"

# The database refuses the last row (in SKU order) after the others were
# written in the same transaction: all of them are rolled back.
# (The trigger makes its price negative, which the table's CHECK refuses.)
sql "CREATE TRIGGER t55_refuse BEFORE INSERT ON stock FOR EACH ROW
    SET NEW.unit_price = IF(NEW.sku = 'T55-ZZ', -1, NEW.unit_price)" ||
    fail "trigger" "cannot create t55_refuse"
printf 'T55-ZZ,KRW,1,1\nT55-A,KRW,1000,10\nT55-E,KRW,100,1\n' >"$bad"
bad_import "that the database refuses halfway" "$bad:1: database: CONSTRAINT \`stock_price_nonneg\` failed"
sql "DROP TRIGGER IF EXISTS t55_refuse"
expect_sql "SELECT CONCAT_WS(' ', currency, unit_price, available) FROM stock WHERE sku = 'T55-A'" "KRW 800 7" \
    "T55-A keeps its values after the rolled-back import"

finish
