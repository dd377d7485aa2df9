#!/usr/bin/env bash
# One writer of SQL text: no C source under src/ holds SQL outside the
# statements table of src/sql.c.  Every C string literal of src/
# (adjacent literals joined, as the compiler joins them; comments
# dropped) is read for the shapes of SQL this program writes: a
# statement's head (SELECT, INSERT INTO, UPDATE t SET, DELETE FROM,
# SET SESSION/@var, CREATE/ALTER TABLE, SAVEPOINT, ROLLBACK, COMMIT, DO
# f(...), START TRANSACTION) or a clause of one (FROM t, WHERE c, JOIN t,
# VALUES (, ORDER BY, LIMIT n, ON DUPLICATE KEY, FOR UPDATE,
# UTC_TIMESTAMP(, INTERVAL).  Migrations (schema/*.sql) are not C.
# SQL_WRITERS lists the files allowed to hold SQL text: sql.c alone, the
# lowest floor (string formatting, no database client), from which db.c
# takes its session statements and db_batch.c, a floor above db.c, its
# batches.  And the include graph: sql.c does not see the database
# client, db.c does not stand on db_batch.c, the cancel does not stand
# on the create, the business rules do not see the database client.
# Needs no stack: it reads the tree.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

SQL_WRITERS=(src/sql.c)

# sql_scan DIR ALLOWED...: "file:line: literal" for each literal of
# DIR/src/*.[ch] that holds SQL, the files ALLOWED (src/NAME) apart.
sql_scan() {
	(cd "$1" && shift && python3 - "$@" <<'PY'
import glob, re, sys
allowed = set(sys.argv[1:])
SQL = re.compile(r"""
    \bSELECT\s+[\w@*(`'] | \bINSERT\s+(IGNORE\s+)?INTO\b | \bREPLACE\s+INTO\b
  | \bUPDATE\s+\w+(\s+\w+)?\s+(SET|JOIN)\b | \bDELETE\s+FROM\b
  | \b(CREATE|ALTER|DROP|TRUNCATE)\s+TABLE\b
  | \bSET\s+(SESSION|GLOBAL|TRANSACTION|autocommit|@) | \bSTART\s+TRANSACTION\b
  | \bSAVEPOINT\s+\w | \bROLLBACK\b | ^\s*COMMIT\s*$ | \bDO\s+[A-Z_]+\s*\(
  | \bFROM\s+[a-z_]+\b | \bWHERE\s+[a-z_(] | \bJOIN\s+[a-z_]+\b
  | \bVALUES\s*\( | \bORDER\s+BY\b | \bGROUP\s+BY\b | \bLIMIT\s+[%?0-9]
  | \bON\s+DUPLICATE\s+KEY\b | \bFOR\s+UPDATE\b | \bUTC_TIMESTAMP\s*\(
  | \bINTERVAL\s+[%?0-9]
""", re.X)
# A C token stream light enough for this: comments, string and char
# literals; adjacent string literals are one literal.
TOK = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|\s+|.', re.S)
for path in sorted(glob.glob('src/*.[ch]')):
    if path in allowed:
        continue
    text = open(path, encoding='utf-8', errors='replace').read()
    line, lit, start = 1, None, 0
    for m in TOK.finditer(text):
        t = m.group(0)
        if t.startswith('"'):
            if lit is None:
                lit, start = '', line
            lit += t[1:-1]
        elif t.isspace() or t.startswith('/*') or t.startswith('//'):
            pass
        else:
            if lit is not None and SQL.search(lit):
                print('%s:%d: "%s"' % (path, start, lit[:90]))
            lit = None
        line += t.count('\n')
    if lit is not None and SQL.search(lit):
        print('%s:%d: "%s"' % (path, start, lit[:90]))
PY
	)
}

found=$(sql_scan "$REPO" "${SQL_WRITERS[@]}")
n=$(grep -c . <<<"$found")
[[ -z $found ]] && ok "no SQL text in src/ outside ${SQL_WRITERS[*]}" ||
    fail "SQL text outside ${SQL_WRITERS[*]}" "$n literals: $(head -n 60 <<<"$found")"

# The floors of the include graph: what a file reaches through the
# quoted includes of src/, transitively ("includes FILE" prints them,
# and the system headers they name as <name>).
includes() {
	python3 - "$REPO/src" "$1" <<'PY'
import os, re, sys
src, seen, todo = sys.argv[1], set(), [sys.argv[2]]
while todo:
    f = todo.pop()
    try:
        text = open(os.path.join(src, f)).read()
    except OSError:
        continue
    for q, name in re.findall(r'^#\s*include\s+([<"])([^>"]+)', text, re.M):
        key = name if q == '"' else "<%s>" % name
        if key not in seen:
            seen.add(key)
            if q == '"':
                todo.append(name)
print("\n".join(sorted(seen)))
PY
}
inc=$(includes sql.c)
[[ -n $inc ]] && ! grep -qx '<mysql.h>' <<<"$inc" &&
    ok "src/sql.c (the SQL text) does not reach <mysql.h>" ||
    fail "sql.c's includes" "$(tr '\n' ' ' <<<"$inc")"
inc=$(includes db.c)
grep -qx 'sql.h' <<<"$inc" && ! grep -qx 'db_batch.h' <<<"$inc" &&
    ok "src/db.c takes its statements from sql.h, not db_batch.h" ||
    fail "db.c's includes" "$(tr '\n' ' ' <<<"$inc")"
inc=$(includes order_cancel.c)
[[ -n $inc ]] && ! grep -qx 'order_create.h' <<<"$inc" &&
    ok "src/order_cancel.c does not reach order_create.h" ||
    fail "the cancel stands beside the create" "src/order_cancel.c reaches: $(tr '\n' ' ' <<<"$inc")"
# The reader itself: the API's handlers do reach it.
grep -qx 'order_create.h' <<<"$(includes order_api.c)" &&
    ok "the include reader sees order_api.c reach order_create.h" ||
    fail "the include reader" "order_api.c does not reach order_create.h"
inc=$(includes rules.c)
[[ -n $inc ]] && ! grep -qx '<mysql.h>' <<<"$inc" &&
    ok "src/rules.c (the business rules) does not reach <mysql.h>" ||
    fail "rules.c's includes" "$(tr '\n' ' ' <<<"$inc")"

# The scanner finds what it must (a statement split over literals and
# lines) and nothing in prose (a log line naming a COMMIT).
probe=$(mktemp -d)
mkdir "$probe/src"
printf '%s\n' 'static const char q[] = "UPDATE t "' '    "SET a = 1";' \
    '/* SELECT x FROM t */' 'log_warnx("outcome of COMMIT unknown");' \
    'f(b, "x = "' '  "1 WHERE id = %llu", id);' >"$probe/src/x.c"
hits=$(sql_scan "$probe" | cut -d: -f2 | tr '\n' ' ')
[[ $hits == "1 5 " ]] && ok "the scanner finds split statements and not prose" ||
    fail "the scanner's own probe" "lines found: '$hits' (want '1 5 ')"
rm -rf "$probe"
finish
