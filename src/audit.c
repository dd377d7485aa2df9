/*
 * `idemorders audit`: one read-only pass over the database that reports
 * every breach of the exactly-once invariants.  Each check is one SELECT
 * whose rows are the breaches; the rows are streamed (mysql_use_result)
 * and only counted, with the first AUDIT_SAMPLE of them kept, so memory
 * stays bounded on tables of any size.  Every query is one scan of one
 * table joined by primary or unique key lookups, never a temporary table
 * the size of a table (hence LEFT JOIN ... IS NULL, not NOT EXISTS, which
 * MariaDB may materialize; restock_mismatch's is one row a SKU).
 *
 * The session is READ COMMITTED: each check sees one consistent snapshot
 * of committed rows, in which an order, its items, its stock change and
 * its ledger row appear together or not at all, and in which no
 * PROCESSING row may appear (the service never commits one).
 *
 * Principals and keys are compared byte for byte whatever the columns'
 * collation (VARBINARY, *_nopad_bin or a PAD SPACE *_bin): the joins use
 * the unique keys' own equality and add a CAST(... AS BINARY) equality.
 *
 * An order without any ledger row is allowed only when its key may have
 * been purged: the retention job deletes a tombstone no earlier than
 * tombstone_retention after expires_at, itself key_retention after the
 * ledger row was written, so no order younger than key_retention +
 * tombstone_retention (less a margin of request_deadline plus a minute
 * for the clocks of the responders) may lack it; with
 * tombstone_retention = 0 none may.  The values come from the
 * configuration the audit runs with.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "audit.h"
#include "buf.h"
#include "conf.h"
#include "db.h"
#include "log.h"
#include "sql.h"
#include "utf8.h"

#define AUDIT_SAMPLE		10
#define AUDIT_SQL_MAX		2048
#define AUDIT_ID_MAX		64
#define AUDIT_DETAIL_MAX	320
#define AUDIT_FOREVER_S		(100LL * 366 * 86400)
#define AUDIT_CLOCK_MARGIN_S	60

/* The one number a check's SQL takes. */
enum audit_param {
	AP_NONE = 0,
	AP_PURGE_AGE,		/* youngest order that may lack its row, s */
	AP_RETENTION,		/* key_retention, s */
	AP_EVENT_AGE,		/* event_retention (0: for ever), s */
};

struct audit_check {
	const char		*name;
	const char		*what;
	enum audit_param	 param;
	enum sql_id		 sql;	/* rows: offending id, detail */
};

static const struct audit_check checks[] = {
	{ "order_without_ledger",
	  "orders whose key has no ledger row naming them (SUCCEEDED or an "
	  "EXPIRED tombstone) and is too young to have been purged",
	  AP_PURGE_AGE,
	  SQL_AUDIT_ORDER_WITHOUT_LEDGER },
	{ "duplicate_order_key",
	  "(principal, key) pairs with more than one order",
	  AP_NONE,
	  SQL_AUDIT_DUPLICATE_ORDER_KEY },
	{ "succeeded_without_order",
	  "SUCCEEDED ledger rows (or tombstones naming an order) whose "
	  "resource_id is not an order of the same principal and key",
	  AP_NONE,
	  SQL_AUDIT_SUCCEEDED_WITHOUT_ORDER },
	{ "cancelled_without_ledger",
	  "cancelled orders whose cancel key has no cancel-order ledger row "
	  "naming them (SUCCEEDED or an EXPIRED tombstone) and is too young "
	  "to have been purged",
	  AP_PURGE_AGE,
	  SQL_AUDIT_CANCELLED_WITHOUT_LEDGER },
	{ "cancel_without_cancelled_order",
	  "SUCCEEDED cancel-order ledger rows (or tombstones naming an order) "
	  "whose order is not one of the same principal cancelled by that key",
	  AP_NONE,
	  SQL_AUDIT_CANCEL_WITHOUT_CANCELLED_ORDER },
	{ "restock_mismatch",
	  "stock rows whose restocked count is not the quantity of their "
	  "items in cancelled orders (a cancel restocked twice, or not at all)",
	  AP_NONE,
	  SQL_AUDIT_RESTOCK_MISMATCH },
	{ "item_without_stock",
	  "items of orders not cancelled whose SKU has no stock row (a "
	  "cancel of the order is refused: it could not put them back)",
	  AP_NONE,
	  SQL_AUDIT_ITEM_WITHOUT_STOCK },
	{ "order_without_items",
	  "orders with no order_items row",
	  AP_NONE,
	  SQL_AUDIT_ORDER_WITHOUT_ITEMS },
	{ "negative_stock",
	  "stock rows with available < 0",
	  AP_NONE,
	  SQL_AUDIT_NEGATIVE_STOCK },
	{ "processing_committed",
	  "committed PROCESSING ledger rows (never committed by the service)",
	  AP_NONE,
	  SQL_AUDIT_PROCESSING_COMMITTED },
	{ "expires_at_mismatch",
	  "ledger rows whose expires_at is not created_at + key_retention "
	  "(within a second)",
	  AP_RETENTION,
	  SQL_AUDIT_EXPIRES_AT_MISMATCH },
	{ "order_without_event",
	  "orders committed since the outbox (schema 008_events) without "
	  "their order.created event or, cancelled, their order.cancelled; "
	  "younger than event_retention, so that none may have been purged",
	  AP_EVENT_AGE,
	  SQL_AUDIT_ORDER_WITHOUT_EVENT },
	{ "event_without_order",
	  "events whose order does not exist, belongs to another principal, "
	  "or (order.cancelled) is not CANCELLED",
	  AP_NONE,
	  SQL_AUDIT_EVENT_WITHOUT_ORDER },
	{ "unknown_status",
	  "ledger rows whose status is none of PROCESSING, SUCCEEDED, "
	  "FAILED_FINAL, EXPIRED",
	  AP_NONE,
	  SQL_AUDIT_UNKNOWN_STATUS },
};
#define NCHECKS	(sizeof(checks) / sizeof(checks[0]))

struct audit_sample {
	char	 id[AUDIT_ID_MAX];
	char	 detail[AUDIT_DETAIL_MAX];
};

struct audit_result {
	long long		 count;
	size_t			 nsample;
	struct audit_sample	 sample[AUDIT_SAMPLE];
};

/* Copy at most size - 1 bytes of a column, never cutting a UTF-8 char. */
static void
copy_field(char *dst, size_t size, const char *src, unsigned long len)
{
	if (src == NULL) {
		snprintf(dst, size, "NULL");
		return;
	}
	len = utf8_cut(src, len, size - 1);
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* Record the connection's last error where it happened. */
static void
conn_fail(struct db *db)
{
	db_fail(db, DB_OK, mysql_errno(db->my), mysql_error(db->my));
}

/*
 * Run one check, streaming its rows.  Returns 0, or -1 with the server's
 * error in *db (last_errno, last_error).
 */
static int
run_check(struct db *db, const struct audit_check *c, long long param,
    long long since, struct audit_result *res)
{
	MYSQL_RES	*rs = NULL;
	MYSQL_ROW	 row;
	unsigned long	*len;
	struct buf	 sql;
	int		 rc = -1;

	memset(res, 0, sizeof(*res));
	buf_init(&sql, AUDIT_SQL_MAX);
	/* Every check's SQL takes the epoch second audited from, then
	 * its parameter, if any. */
	if (sql_printf(&sql, c->sql, since, param) == -1) {
		snprintf(db->last_error, sizeof(db->last_error),
		    "%s: query too long", c->name);
		buf_free(&sql);
		return -1;
	}
	/*
	 * No deadline is set, so this lifts the read and write bounds
	 * db_connect() left on the connection (db_connect_timeout): a check
	 * may scan for minutes before its first row.
	 */
	if (db_arm(db) != DB_OK) {
		buf_free(&sql);
		return -1;
	}
	if (mysql_real_query(db->my, sql.p, (unsigned long)sql.len) != 0) {
		conn_fail(db);
		goto out;
	}
	rs = mysql_use_result(db->my);
	if (rs == NULL) {
		conn_fail(db);
		goto out;
	}
	for (;;) {
		row = mysql_fetch_row(rs);
		if (row == NULL)
			break;
		len = mysql_fetch_lengths(rs);
		if (res->nsample < AUDIT_SAMPLE) {
			copy_field(res->sample[res->nsample].id, AUDIT_ID_MAX,
			    row[0], len[0]);
			copy_field(res->sample[res->nsample].detail,
			    AUDIT_DETAIL_MAX, row[1], len[1]);
			res->nsample++;
		}
		res->count++;
	}
	if (mysql_errno(db->my) != 0) {
		conn_fail(db);
		goto out;
	}
	rc = 0;
out:
	if (rs != NULL)
		mysql_free_result(rs);
	db_rollback(db);
	buf_free(&sql);
	return rc;
}

/* Print the report for people: one line a check, samples under breaches. */
static void
print_text(FILE *fp, const struct audit_result *res, long long breaches,
    size_t nbad)
{
	size_t	 i, j;

	for (i = 0; i < NCHECKS; i++) {
		fprintf(fp, "%-7s %s: %lld\n", res[i].count ? "BREACH" : "ok",
		    checks[i].name, res[i].count);
		if (res[i].count == 0)
			continue;
		fprintf(fp, "        %s\n", checks[i].what);
		for (j = 0; j < res[i].nsample; j++)
			fprintf(fp, "        %s %s\n", res[i].sample[j].id,
			    res[i].sample[j].detail);
		if (res[i].count > (long long)res[i].nsample)
			fprintf(fp, "        ... and %lld more\n",
			    res[i].count - (long long)res[i].nsample);
	}
	if (breaches == 0)
		fprintf(fp, "audit: clean (%zu checks)\n", NCHECKS);
	else
		fprintf(fp, "audit: %lld breaches in %zu of %zu checks\n",
		    breaches, nbad, NCHECKS);
}

/* Print the report as one JSON object, for monitoring. */
static int
print_json(FILE *fp, const struct audit_result *res, long long breaches,
    long long purge_age, long long retention, long long since)
{
	json_object	*top, *all, *one, *ids;
	size_t		 i, j;
	int		 rc = -1;

	top = json_object_new_object();
	all = json_object_new_object();
	if (top == NULL || all == NULL) {
		json_object_put(all);
		goto out;
	}
	json_object_object_add(top, "clean",
	    json_object_new_boolean(breaches == 0));
	json_object_object_add(top, "breaches",
	    json_object_new_int64(breaches));
	json_object_object_add(top, "key_retention_s",
	    json_object_new_int64(retention));
	json_object_object_add(top, "purge_age_s",
	    json_object_new_int64(purge_age));
	json_object_object_add(top, "since", json_object_new_int64(since));
	json_object_object_add(top, "checks", all);
	for (i = 0; i < NCHECKS; i++) {
		one = json_object_new_object();
		ids = json_object_new_array();
		if (one == NULL || ids == NULL) {
			json_object_put(one);
			json_object_put(ids);
			goto out;
		}
		json_object_object_add(all, checks[i].name, one);
		json_object_object_add(one, "count",
		    json_object_new_int64(res[i].count));
		for (j = 0; j < res[i].nsample; j++)
			json_object_array_add(ids,
			    json_object_new_string(res[i].sample[j].id));
		json_object_object_add(one, "sample", ids);
	}
	fprintf(fp, "%s\n", json_object_to_json_string_ext(top,
	    JSON_C_TO_STRING_PLAIN));
	rc = 0;
out:
	json_object_put(top);
	return rc;
}

/*
 * Run every check on the rows created from epoch second since on (0: all)
 * and print the report (JSON when json is set) to fp.
 * Returns AUDIT_CLEAN, AUDIT_BREACH or AUDIT_ERROR.
 */
int
audit_run(const struct conf *conf, int json, long long since, FILE *fp)
{
	struct db		 db;
	struct audit_result	*res;
	long long		 breaches = 0, purge_age, retention, param;
	size_t			 i, nbad = 0;
	int			 rc = AUDIT_ERROR;
	time_t			 t = (time_t)since;
	char			 since_text[64];
	struct tm		 tm;

	res = calloc(NCHECKS, sizeof(*res));
	if (res == NULL) {
		log_warn("calloc");
		return AUDIT_ERROR;
	}
	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(since_text, sizeof(since_text), "%Y-%m-%d %H:%M:%S UTC\n",
	    &tm) == 0) {
		fprintf(stderr, "idemorders audit: since %lld: not a date\n",
		    since);
		free(res);
		return AUDIT_ERROR;
	}
	retention = conf->key_retention_ms / 1000;
	if (conf->tombstone_retention_ms == 0)
		purge_age = AUDIT_FOREVER_S;
	else
		purge_age = retention + conf->tombstone_retention_ms / 1000 -
		    conf->request_deadline_ms / 1000 - AUDIT_CLOCK_MARGIN_S;
	if (purge_age < 0)
		purge_age = 0;

	/*
	 * No deadline: a scan may run long before its first row
	 * (db_connect_timeout bounds the connect only; run_check()).
	 */
	db_init(&db, conf);
	if (db_connect(&db) != DB_OK) {
		fprintf(stderr, "idemorders audit: cannot connect to the "
		    "database: %s\n", db.last_error);
		goto out;
	}
	for (i = 0; i < NCHECKS; i++) {
		if (checks[i].param == AP_EVENT_AGE)
			param = conf->event_retention_ms > 0 ?
			    conf->event_retention_ms / 1000 : AUDIT_FOREVER_S;
		else
			param = checks[i].param == AP_PURGE_AGE ? purge_age :
			    retention;
		if (run_check(&db, &checks[i], param, since, &res[i]) == -1) {
			fprintf(stderr, "idemorders audit: %s: %s\n",
			    checks[i].name, db.last_error);
			goto out;
		}
		breaches += res[i].count;
		if (res[i].count > 0)
			nbad++;
	}
	if (json) {
		if (print_json(fp, res, breaches, purge_age, retention,
		    since) == -1) {
			fprintf(stderr, "idemorders audit: out of memory\n");
			goto out;
		}
	} else {
		if (since > 0)
			fprintf(fp, "audit: rows created since %s", since_text);
		print_text(fp, res, breaches, nbad);
	}
	if (fflush(fp) != 0) {
		log_warn("audit report");
		goto out;
	}
	rc = breaches == 0 ? AUDIT_CLEAN : AUDIT_BREACH;
out:
	db_disconnect(&db);
	free(res);
	return rc;
}

/*
 * Parse --since: "@EPOCH" (seconds, at most AUDIT_SINCE_MAX) or a
 * duration back from now ("90m", "24h").  Returns 0, or -1 if malformed
 * or out of range.
 */
int
audit_parse_since(const char *s, long long *since)
{
	char		*end;
	long long	 n;
	long long	 ms;

	if (s[0] == '@') {
		if (s[1] < '0' || s[1] > '9')
			return -1;
		errno = 0;
		n = strtoll(s + 1, &end, 10);
		if (errno != 0 || *end != '\0' || n < 0 || n > AUDIT_SINCE_MAX)
			return -1;
		*since = n;
		return 0;
	}
	if (conf_parse_duration(s, &ms) == -1)
		return -1;
	*since = (long long)time(NULL) - ms / 1000;
	if (*since < 0)
		*since = 0;
	return 0;
}
