/*
 * `idemorders stock`: the stock table without hand-written SQL.
 *
 *   stock set SKU CURRENCY UNIT_PRICE AVAILABLE   create or replace a row
 *   stock list                                    every row, as CSV
 *   stock import FILE.csv                         create or replace many
 *
 * The CSV form is "sku,currency,unit_price,available", one row a line,
 * with an optional header line of exactly those names; blank lines and
 * lines starting with '#' are skipped; CRLF line ends are accepted.
 * `stock list` prints the same form, so its output imports again.
 *
 * An import reads and checks the whole file first (a SKU twice is an
 * error too), then writes every row in one transaction, in SKU order,
 * the order in which order transactions lock stock rows.  Any error
 * rolls everything back: the file's rows are all written or none is.
 * SKUs that the file does not name are left alone.  A deadlock, a lock
 * wait timeout or a lost connection retries the whole transaction a
 * few times.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "db.h"
#include "sql.h"
#include "stock_admin.h"
#include "text.h"

#define STOCK_ATTEMPTS	3
#define CSV_LINE_MAX	1024

static const char csv_header[] = "sku,currency,unit_price,available";

struct stock_counts {
	long	 created;
	long	 updated;
	long	 unchanged;
};

/* Tell whether c may appear in a SKU (the order schema's charset). */
static int
sku_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* Parse a decimal integer of digits only, from 0 to max. */
static int
parse_count(const char *s, long long max, long long *out)
{
	long long	 n = 0;
	size_t		 i;

	if (s[0] == '\0')
		return -1;
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (n > (max - (s[i] - '0')) / 10)
			return -1;
		n = n * 10 + (s[i] - '0');
	}
	*out = n;
	return 0;
}

/*
 * Check the four fields of one stock row and fill r.  On error, err
 * says which field is wrong and why, and -1 is returned.
 */
int
stock_row_parse(struct stock_row *r, const char *sku, const char *currency,
    const char *price, const char *available, char *err, size_t errsz)
{
	size_t	 len, i;

	len = strlen(sku);
	if (len < 1 || len > ORDER_SKU_MAX) {
		snprintf(err, errsz, "sku must be 1 to %d characters long, "
		    "not %zu", ORDER_SKU_MAX, len);
		return -1;
	}
	for (i = 0; i < len; i++) {
		if (!sku_char((unsigned char)sku[i])) {
			snprintf(err, errsz, "sku \"%.64s\" has an invalid "
			    "character at position %zu (allowed: A-Z a-z 0-9 "
			    ". _ -)", sku, i + 1);
			return -1;
		}
	}
	if (strlen(currency) != 3 || currency[0] < 'A' || currency[0] > 'Z' ||
	    currency[1] < 'A' || currency[1] > 'Z' || currency[2] < 'A' ||
	    currency[2] > 'Z') {
		snprintf(err, errsz, "currency must be three upper-case "
		    "letters A-Z, not \"%.16s\"", currency);
		return -1;
	}
	if (parse_count(price, STOCK_PRICE_MAX, &r->unit_price) == -1) {
		snprintf(err, errsz, "unit_price must be an integer in minor "
		    "units from 0 to %lld, not \"%.32s\"", STOCK_PRICE_MAX,
		    price);
		return -1;
	}
	if (parse_count(available, STOCK_AVAILABLE_MAX, &r->available) == -1) {
		snprintf(err, errsz, "available must be an integer from 0 to "
		    "%lld, not \"%.32s\"", STOCK_AVAILABLE_MAX, available);
		return -1;
	}
	memcpy(r->sku, sku, len + 1);
	memcpy(r->currency, currency, 4);
	r->line = 0;
	return 0;
}

/*
 * Parse one CSV line (no line end) into r.  Returns 1 for a row, 0 for
 * a line to skip (blank, comment, header), -1 with err set otherwise.
 * The line is cut up in place.
 */
int
stock_csv_line(char *line, struct stock_row *r, char *err, size_t errsz)
{
	char	*f[4], *p, *s;
	int	 n = 0;

	s = text_trim(line);
	if (*s == '\0' || *s == '#')
		return 0;
	if (strcmp(s, csv_header) == 0)
		return 0;
	p = s;
	for (;;) {
		if (n == 4) {
			snprintf(err, errsz, "more than 4 fields (expected "
			    "%s)", csv_header);
			return -1;
		}
		f[n++] = p;
		p = strchr(p, ',');
		if (p == NULL)
			break;
		*p++ = '\0';
	}
	if (n != 4) {
		snprintf(err, errsz, "%d field%s, expected 4 (%s)", n,
		    n == 1 ? "" : "s", csv_header);
		return -1;
	}
	if (strpbrk(s, "\"") != NULL) {
		snprintf(err, errsz, "quotes are not allowed (no field can "
		    "contain a comma)");
		return -1;
	}
	return stock_row_parse(r, text_trim(f[0]), text_trim(f[1]), text_trim(f[2]),
	    text_trim(f[3]), err, errsz) == -1 ? -1 : 1;
}

/* How many arguments a stock subcommand takes, or -1 for an unknown one. */
int
stock_admin_argc(const char *sub)
{
	if (strcmp(sub, "set") == 0)
		return 4;
	if (strcmp(sub, "list") == 0)
		return 0;
	if (strcmp(sub, "import") == 0)
		return 1;
	return -1;
}

/* Order rows by SKU, then by line, for duplicate checks and lock order. */
static int
row_cmp(const void *a, const void *b)
{
	const struct stock_row	*x = a, *y = b;
	int			 c;

	c = strcmp(x->sku, y->sku);
	if (c != 0)
		return c;
	return (x->line > y->line) - (x->line < y->line);
}

/*
 * Read and check every row of path into *rowsp (owned by the caller,
 * free() it).  On error, prints "path:line: what" and returns -1.
 */
static int
read_rows(const char *path, struct stock_row **rowsp, size_t *np)
{
	FILE			*fp;
	struct stock_row	*rows = NULL, *nrows, r;
	size_t			 n = 0, cap = 0, len, i;
	char			 line[CSV_LINE_MAX + 2], err[256];
	long			 lineno = 0;
	int			 rc = -1, got;

	fp = fopen(path, "r");
	if (fp == NULL) {
		fprintf(stderr, "idemorders: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		lineno++;
		len = strlen(line);
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		else if (!feof(fp)) {
			fprintf(stderr, "idemorders: %s:%ld: line longer than "
			    "%d bytes\n", path, lineno, CSV_LINE_MAX);
			goto out;
		}
		if (len > 0 && line[len - 1] == '\r')
			line[--len] = '\0';
		if (memchr(line, '\0', len) != NULL || strlen(line) != len) {
			fprintf(stderr, "idemorders: %s:%ld: NUL byte in "
			    "line\n", path, lineno);
			goto out;
		}
		got = stock_csv_line(line, &r, err, sizeof(err));
		if (got == -1) {
			fprintf(stderr, "idemorders: %s:%ld: %s\n", path,
			    lineno, err);
			goto out;
		}
		if (got == 0)
			continue;
		if (n == STOCK_IMPORT_ROWS_MAX) {
			fprintf(stderr, "idemorders: %s:%ld: more than %d "
			    "rows; split the file\n", path, lineno,
			    STOCK_IMPORT_ROWS_MAX);
			goto out;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			nrows = reallocarray(rows, cap, sizeof(*rows));
			if (nrows == NULL) {
				fprintf(stderr, "idemorders: out of memory\n");
				goto out;
			}
			rows = nrows;
		}
		r.line = lineno;
		rows[n++] = r;
	}
	if (ferror(fp)) {
		fprintf(stderr, "idemorders: %s: read error\n", path);
		goto out;
	}
	if (n == 0) {
		fprintf(stderr, "idemorders: %s: no stock rows (expected "
		    "lines of %s)\n", path, csv_header);
		goto out;
	}
	qsort(rows, n, sizeof(*rows), row_cmp);
	for (i = 1; i < n; i++) {
		if (strcmp(rows[i].sku, rows[i - 1].sku) == 0) {
			fprintf(stderr, "idemorders: %s:%ld: sku \"%s\" "
			    "repeats line %ld\n", path, rows[i].line,
			    rows[i].sku, rows[i - 1].line);
			goto out;
		}
	}
	rc = 0;
out:
	fclose(fp);
	if (rc == 0) {
		*rowsp = rows;
		*np = n;
	} else
		free(rows);
	return rc;
}

/*
 * Write rows in one transaction and commit.  Returns a db_err class;
 * on failure the transaction is rolled back and failed_line holds the
 * line of the row being written (0 when the commit failed).
 */
static int
write_rows(struct db *db, const struct stock_row *rows, size_t n,
    struct stock_counts *cnt, long *failed_line)
{
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[4];
	long long	 price, avail;
	my_ulonglong	 aff;
	size_t		 i;
	int		 rc;

	memset(cnt, 0, sizeof(*cnt));
	*failed_line = n > 0 ? rows[0].line : 0;
	rc = db_stmt_prepare(db, sql_text(SQL_STOCK_UPSERT),
	    strlen(sql_text(SQL_STOCK_UPSERT)), &st);
	if (rc != DB_OK)
		return rc;
	for (i = 0; i < n; i++) {
		*failed_line = rows[i].line;
		price = rows[i].unit_price;
		avail = rows[i].available;
		db_bind_str(&p[0], rows[i].sku, strlen(rows[i].sku));
		db_bind_str(&p[1], rows[i].currency, 3);
		db_bind_i64(&p[2], &price);
		db_bind_i64(&p[3], &avail);
		rc = db_execute(db, st, p);
		if (rc != DB_OK)
			goto out;
		aff = mysql_stmt_affected_rows(st);
		if (aff == 1)
			cnt->created++;
		else if (aff == 2)
			cnt->updated++;
		else
			cnt->unchanged++;
	}
	*failed_line = 0;
	rc = db_commit(db);
out:
	mysql_stmt_close(st);
	if (rc != DB_OK)
		db_rollback(db);
	return rc;
}

/*
 * Connect, then write rows.  Every row sets absolute values, so writing
 * them again is harmless: a deadlock, a lost connection or a COMMIT
 * whose answer was lost is retried a few times.
 */
static int
store_rows(const struct conf *conf, const char *what,
    const struct stock_row *rows, size_t n, struct stock_counts *cnt)
{
	struct db	 db;
	long		 line = 0;
	int		 attempt, rc = DB_ERROR;

	db_init(&db, conf);
	for (attempt = 1; attempt <= STOCK_ATTEMPTS; attempt++) {
		rc = db_ensure(&db);
		if (rc == DB_OK)
			rc = write_rows(&db, rows, n, cnt, &line);
		if (rc == DB_OK)
			break;
		if ((rc != DB_TRANSIENT && rc != DB_LOST && rc != DB_UNKNOWN) ||
		    attempt == STOCK_ATTEMPTS) {
			if (line > 0)
				fprintf(stderr, "idemorders: %s:%ld: database: "
				    "%s (nothing written)\n", what, line,
				    db.last_error);
			else if (rc == DB_UNKNOWN)
				fprintf(stderr, "idemorders: %s: database: %s "
				    "(the commit's outcome is unknown: run it "
				    "again, or look with stock list)\n", what,
				    db.last_error);
			else
				fprintf(stderr, "idemorders: %s: database: %s "
				    "(nothing written)\n", what,
				    db.last_error);
			break;
		}
	}
	db_disconnect(&db);
	return rc == DB_OK ? 0 : -1;
}

/* stock set SKU CURRENCY UNIT_PRICE AVAILABLE */
static int
cmd_set(const struct conf *conf, char **argv, FILE *out)
{
	struct stock_row	 r;
	struct stock_counts	 cnt;
	char			 err[256];

	if (stock_row_parse(&r, argv[0], argv[1], argv[2], argv[3], err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "idemorders: stock set: %s\n", err);
		return -1;
	}
	if (store_rows(conf, "stock set", &r, 1, &cnt) == -1)
		return -1;
	fprintf(out, "%s %s unit_price=%lld available=%lld: %s\n", r.sku,
	    r.currency, r.unit_price, r.available, cnt.created ? "created" :
	    cnt.updated ? "updated" : "unchanged");
	return 0;
}

/* stock import FILE.csv */
static int
cmd_import(const struct conf *conf, const char *path, FILE *out)
{
	struct stock_row	*rows = NULL;
	struct stock_counts	 cnt;
	size_t			 n = 0;
	int			 rc;

	if (read_rows(path, &rows, &n) == -1)
		return -1;
	rc = store_rows(conf, path, rows, n, &cnt);
	if (rc == 0)
		fprintf(out, "%s: %zu rows: %ld created, %ld updated, %ld "
		    "unchanged\n", path, n, cnt.created, cnt.updated,
		    cnt.unchanged);
	free(rows);
	return rc;
}

/* stock list: every row as CSV, header first. */
static int
cmd_list(const struct conf *conf, FILE *out)
{
	struct db	 db;
	MYSQL_STMT	*st = NULL;
	MYSQL_BIND	 r[4];
	char		 sku[ORDER_SKU_MAX + 1], cur[8];
	unsigned long	 sku_len, cur_len;
	my_bool		 sku_null, cur_null;
	long long	 price, avail;
	int		 rc = -1, f;

	db_init(&db, conf);
	if (db_connect(&db) != DB_OK ||
	    db_stmt_prepare(&db, sql_text(SQL_STOCK_LIST),
	    strlen(sql_text(SQL_STOCK_LIST)), &st) != DB_OK ||
	    db_execute(&db, st, NULL) != DB_OK) {
		fprintf(stderr, "idemorders: stock list: database: %s\n",
		    db.last_error);
		goto out;
	}
	db_bind_out_str(&r[0], sku, sizeof(sku), &sku_len, &sku_null);
	db_bind_out_str(&r[1], cur, sizeof(cur), &cur_len, &cur_null);
	db_bind_i64(&r[2], &price);
	db_bind_i64(&r[3], &avail);
	if (db_bind_result(&db, st, r) != DB_OK) {
		fprintf(stderr, "idemorders: stock list: database: %s\n",
		    db.last_error);
		goto out;
	}
	fprintf(out, "%s\n", csv_header);
	for (;;) {
		f = db_fetch(&db, st);
		if (f != 1)
			break;
		fprintf(out, "%.*s,%.*s,%lld,%lld\n", (int)sku_len, sku,
		    (int)cur_len, cur, price, avail);
	}
	if (f != 0) {
		fprintf(stderr, "idemorders: stock list: database: %s\n",
		    db.last_error);
		goto out;
	}
	if (fflush(out) != 0) {
		fprintf(stderr, "idemorders: stock list: %s\n",
		    strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (st != NULL)
		mysql_stmt_close(st);
	db_rollback(&db);
	db_disconnect(&db);
	return rc;
}

/*
 * Run `stock SUB ARGS...` (argv[0] is SUB; argc already checked with
 * stock_admin_argc).  Returns 0, or -1 after printing what went wrong.
 */
int
stock_admin_run(const struct conf *conf, int argc, char **argv, FILE *out)
{
	if (argc < 1 || stock_admin_argc(argv[0]) != argc - 1)
		return -1;
	if (strcmp(argv[0], "set") == 0)
		return cmd_set(conf, argv + 1, out);
	if (strcmp(argv[0], "import") == 0)
		return cmd_import(conf, argv[1], out);
	return cmd_list(conf, out);
}
