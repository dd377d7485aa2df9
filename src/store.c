#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "db.h"
#include "db_batch.h"
#include "sql.h"
#include "store.h"

/*
 * Bump the version of every locked stock row a rejection was judged on,
 * so that on a multi-primary cluster the rejecting transaction conflicts
 * with any concurrent change of those rows on another node (the loser is
 * rolled back with 1213 and judges again).
 */
int
store_touch_stock(struct db *db, const struct order_input *in,
    const struct stock_row *rows)
{
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[1];
	size_t		 i;
	int		 rc;

	rc = db_stmt(db, sql_text(SQL_STORE_TOUCH), &st);
	if (rc != DB_OK)
		return rc;
	for (i = 0; i < in->nitems; i++) {
		if (!rows[i].found)
			continue;
		db_bind_str(&p[0], in->items[i].sku, strlen(in->items[i].sku));
		rc = db_execute(db, st, p);
		if (rc != DB_OK)
			return rc;
	}
	return DB_OK;
}

/*
 * Read one order of principal into v, with its items, in one statement;
 * the note is copied into notebuf.  Returns 1, 0 when the principal has
 * no such order, or a db_err.
 */
int
store_get_order(struct db *db, const char *principal, unsigned long long id,
    struct order_view *v, char *notebuf, size_t notesz)
{
	MYSQL_STMT		*st;
	MYSQL_BIND		 p[2], r[10];
	unsigned long		 len[10];
	my_bool			 nul[10];
	long long		 oid = (long long)id, amount, price;
	char			 sku[ORDER_SKU_MAX + 1];
	struct order_view_item	*it;
	int			 rc, qty;

	memset(v, 0, sizeof(*v));
	rc = db_stmt(db, sql_text(SQL_STORE_GET_ORDER), &st);
	if (rc != DB_OK)
		return rc;
	db_bind_i64(&p[0], &oid);
	p[0].is_unsigned = 1;
	db_bind_str(&p[1], principal, strlen(principal));
	rc = db_execute(db, st, p);
	if (rc != DB_OK)
		return rc;
	db_bind_out_str(&r[0], v->status, sizeof(v->status) - 1, &len[0],
	    &nul[0]);
	db_bind_out_str(&r[1], v->currency, sizeof(v->currency), &len[1],
	    &nul[1]);
	db_bind_i64(&r[2], &amount);
	db_bind_out_str(&r[3], v->shipping, sizeof(v->shipping) - 1, &len[3],
	    &nul[3]);
	db_bind_out_str(&r[4], notebuf, notesz, &len[4], &nul[4]);
	db_bind_out_str(&r[5], v->created_at, sizeof(v->created_at) - 1,
	    &len[5], &nul[5]);
	db_bind_out_str(&r[6], sku, sizeof(sku) - 1, &len[6], &nul[6]);
	db_bind_int(&r[7], &qty);
	db_bind_i64(&r[8], &price);
	db_bind_out_str(&r[9], v->cancelled_at, sizeof(v->cancelled_at) - 1,
	    &len[9], &nul[9]);
	rc = db_bind_result(db, st, r);
	if (rc != DB_OK) {
		db_stmt_done(db, st);
		return rc;
	}
	for (;;) {
		rc = db_fetch(db, st);
		if (rc != 1)
			break;
		if (v->nitems == ORDER_ITEMS_MAX || len[6] > ORDER_SKU_MAX ||
		    len[4] >= notesz)
			continue;
		it = &v->items[v->nitems++];
		memcpy(it->sku, sku, len[6]);
		it->sku[len[6]] = '\0';
		it->qty = qty;
		it->unit_price = price;
		notebuf[len[4]] = '\0';
		v->note_len = len[4];
		v->currency[len[1] < 3 ? len[1] : 3] = '\0';
		v->amount = amount;
		if (nul[9])
			v->cancelled_at[0] = '\0';
		else
			v->cancelled_at[len[9] < sizeof(v->cancelled_at) ?
			    len[9] : sizeof(v->cancelled_at) - 1] = '\0';
	}
	db_stmt_done(db, st);
	if (rc < 0)
		return rc;
	if (v->nitems == 0)
		return 0;
	v->note = notebuf;
	order_id_format(v->id, sizeof(v->id), id);
	return 1;
}

/*
 * Find the order a key of principal created: 1 with *id and *age (its
 * age in seconds, by the database's clock), 0, or db_err.
 */
int
store_order_by_key(struct db *db, const char *principal, const char *key,
    unsigned long long *id, long long *age)
{
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[2], r[2];
	long long	 v = 0, a = 0;
	int		 rc;

	/* Rare path (a purged tombstone): prepared for this use only. */
	rc = db_stmt_prepare(db, sql_text(SQL_STORE_BY_KEY),
	    strlen(sql_text(SQL_STORE_BY_KEY)), &st);
	if (rc != DB_OK)
		return rc;
	db_bind_str(&p[0], principal, strlen(principal));
	db_bind_str(&p[1], key, strlen(key));
	rc = db_execute(db, st, p);
	if (rc != DB_OK)
		goto out;
	db_bind_i64(&r[0], &v);
	r[0].is_unsigned = 1;
	db_bind_i64(&r[1], &a);
	rc = db_bind_result(db, st, r);
	if (rc != DB_OK)
		goto out;
	rc = db_fetch(db, st);
	if (rc == 1) {
		*id = (unsigned long long)v;
		*age = a;
	}
out:
	mysql_stmt_close(st);
	return rc;
}

/*
 * Batched forms: the same statements, written for
 * db_batch_run() with every string as a hex literal and every number
 * formatted here.
 */

/* Append "(X'sku', ...)", the order's SKUs, to the statement. */
static int
batch_sku_list(struct db_batch *b, const struct order_input *in)
{
	size_t	 i;

	for (i = 0; i < in->nitems; i++)
		if (db_batch_more(b, i > 0 ? SQL_LIST_NEXT : SQL_LIST_FIRST,
		    in->items[i].sku) == -1)
			return -1;
	return db_batch_more(b, SQL_LIST_END);
}

/*
 * Add the read of every SKU's stock row, in SKU order: locked (SELECT
 * ... FOR UPDATE) when lock is set, else the latest committed rows, read
 * without a lock.
 */
int
store_batch_stock(struct db_batch *b, const struct order_input *in, int lock)
{
	if (db_batch_sql(b, DB_ROWS_RESULT, SQL_STORE_STOCK) == -1 ||
	    batch_sku_list(b, in) == -1)
		return -1;
	return db_batch_more(b, lock ? SQL_STORE_STOCK_LOCK :
	    SQL_STORE_STOCK_ORDER);
}

/* Fill rows[i] for in->items[i] from the result of store_batch_stock(). */
void
store_read_stock(MYSQL_RES *res, const struct order_input *in,
    struct stock_row *rows)
{
	MYSQL_ROW	 row;
	unsigned long	*len;
	size_t		 i, j = 0;

	for (i = 0; i < in->nitems; i++)
		rows[i].found = 0;
	for (;;) {
		row = mysql_fetch_row(res);
		if (row == NULL)
			break;
		len = mysql_fetch_lengths(res);
		if (row[0] == NULL || row[1] == NULL || row[2] == NULL ||
		    row[3] == NULL || len[0] > ORDER_SKU_MAX || len[1] != 3)
			continue;
		/* Both lists are in SKU order: merge. */
		while (j < in->nitems && strcmp(in->items[j].sku, row[0]) < 0)
			j++;
		if (j < in->nitems && strcmp(in->items[j].sku, row[0]) == 0) {
			rows[j].found = 1;
			memcpy(rows[j].sku, row[0], len[0] + 1);
			memcpy(rows[j].currency, row[1], 4);
			rows[j].unit_price = strtoll(row[2], NULL, 10);
			rows[j].available = strtoll(row[3], NULL, 10);
		}
	}
}

/*
 * Add the order row, with the id the caller allocated: the id of its
 * ledger claim, whose row must exist (db_batch_own_from()).
 */
int
store_batch_order(struct db_batch *b, unsigned long long id,
    const char *principal, const char *key, const struct order_input *in,
    time_t created)
{
	if (db_batch_sql(b, 1, SQL_STORE_ORDER, id, principal, key,
	    in->currency, (size_t)3, in->amount, shipping_name(in->shipping),
	    in->note, in->note_len, (long long)created) == -1)
		return -1;
	return db_batch_own_from(b, id);
}

/*
 * Add the stock decrease of every item, taking each row's lock, and a
 * guard that stops the batch unless every row still holds what the
 * rules were judged on: the same currency and unit price, and at least
 * the quantity available.  The rows are locked in SKU order (the
 * primary key's), as SELECT ... FOR UPDATE locks them.  It changes rows
 * only while the ledger claim claim exists (db_batch_own_join()).
 */
int
store_batch_take(struct db_batch *b, unsigned long long claim,
    const struct order_input *in, const struct stock_row *rows)
{
	size_t	 i;

	if (db_batch_sql(b, DB_ROWS_ANY, SQL_STORE_STOCK_UPDATE) == -1 ||
	    db_batch_own_join(b, claim) == -1)
		return -1;
	if (in->nitems == 1) {
		/* One SKU, the common order: no CASE to evaluate. */
		if (db_batch_more(b, SQL_STORE_TAKE_ONE, in->items[0].qty,
		    in->items[0].sku, in->items[0].qty, rows[0].unit_price,
		    in->currency, (size_t)3) == -1)
			return -1;
		return db_batch_guard(b, 1);
	}
	if (db_batch_more(b, SQL_STORE_TAKE_CASE) == -1)
		return -1;
	for (i = 0; i < in->nitems; i++)
		if (db_batch_more(b, SQL_CASE_WHEN_QTY, in->items[i].sku,
		    in->items[i].qty) == -1)
			return -1;
	if (db_batch_more(b, SQL_STORE_TAKE_WHERE) == -1 ||
	    batch_sku_list(b, in) == -1 ||
	    db_batch_more(b, SQL_STORE_TAKE_CHECK, in->currency, (size_t)3) ==
	    -1)
		return -1;
	for (i = 0; i < in->nitems; i++)
		if (db_batch_more(b, SQL_STORE_TAKE_WHEN, in->items[i].sku,
		    in->items[i].qty, rows[i].unit_price) == -1)
			return -1;
	if (db_batch_more(b, SQL_CASE_END) == -1)
		return -1;
	return db_batch_guard(b, (long long)in->nitems);
}

/*
 * Add the order's items at the prices judged, each inserted only while
 * the ledger claim id (the order's id) exists (db_batch_own_from()).
 */
int
store_batch_lines(struct db_batch *b, unsigned long long id,
    const struct order_input *in, const struct stock_row *rows)
{
	size_t	 i;

	if (db_batch_sql(b, (long long)in->nitems, SQL_STORE_LINES) == -1)
		return -1;
	for (i = 0; i < in->nitems; i++)
		if (db_batch_more(b, i > 0 ? SQL_STORE_LINE_NEXT :
		    SQL_STORE_LINE, id, in->items[i].sku, in->items[i].qty,
		    rows[i].unit_price) == -1 ||
		    db_batch_own_from(b, id) == -1)
			return -1;
	return 0;
}

/*
 * A cancel's reads, after its claim: the order row of principal, locked
 * (SELECT ... FOR UPDATE: it orders two cancels of one order), its items
 * in SKU order with whether each SKU has a stock row, and the order the
 * cancel key key already cancelled, if any.  No stock row is locked
 * here: the order row alone decides, and only the restock locks stock
 * (store_batch_cancel()).  Three statements.
 */
int
store_batch_cancel_read(struct db_batch *b, unsigned long long id,
    const char *principal, const char *key)
{
	if (db_batch_sql(b, DB_ROWS_RESULT, SQL_STORE_CANCEL_ORDER, id,
	    principal) == -1 ||
	    db_batch_sql(b, DB_ROWS_RESULT, SQL_STORE_CANCEL_ITEMS, id) == -1 ||
	    db_batch_sql(b, DB_ROWS_RESULT, SQL_STORE_CANCEL_KEY, principal,
	    key) == -1)
		return -1;
	return 0;
}

/*
 * Fill v (note copied into notebuf of notesz bytes) and *created from the
 * first two results of store_batch_cancel_read(), and missing (of
 * ORDER_SKU_MAX + 1 bytes) with the first item's SKU that has no stock
 * row, or "": 1, or 0 when the principal has no such order.
 */
int
store_read_cancel(MYSQL_RES *order, MYSQL_RES *items, unsigned long long id,
    struct order_view *v, char *notebuf, size_t notesz, long long *created,
    char *missing)
{
	struct order_view_item	*it;
	MYSQL_ROW		 row;
	unsigned long		*len;

	memset(v, 0, sizeof(*v));
	missing[0] = '\0';
	row = mysql_fetch_row(order);
	if (row == NULL)
		return 0;
	len = mysql_fetch_lengths(order);
	if (row[0] == NULL || row[1] == NULL || row[2] == NULL ||
	    row[3] == NULL || row[4] == NULL || row[5] == NULL ||
	    row[6] == NULL || len[4] >= notesz)
		return 0;
	snprintf(v->status, sizeof(v->status), "%s", row[0]);
	snprintf(v->currency, sizeof(v->currency), "%s", row[1]);
	v->amount = strtoll(row[2], NULL, 10);
	snprintf(v->shipping, sizeof(v->shipping), "%s", row[3]);
	memcpy(notebuf, row[4], len[4]);
	notebuf[len[4]] = '\0';
	v->note = notebuf;
	v->note_len = len[4];
	snprintf(v->created_at, sizeof(v->created_at), "%s", row[5]);
	*created = strtoll(row[6], NULL, 10);
	order_id_format(v->id, sizeof(v->id), id);
	while ((row = mysql_fetch_row(items)) != NULL) {
		len = mysql_fetch_lengths(items);
		if (row[0] == NULL || row[1] == NULL || row[2] == NULL ||
		    row[3] == NULL || len[0] > ORDER_SKU_MAX ||
		    v->nitems == ORDER_ITEMS_MAX)
			continue;
		it = &v->items[v->nitems++];
		memcpy(it->sku, row[0], len[0]);
		it->sku[len[0]] = '\0';
		it->qty = atoi(row[1]);
		it->unit_price = strtoll(row[2], NULL, 10);
		if (strcmp(row[3], "1") != 0 && missing[0] == '\0')
			memcpy(missing, it->sku, len[0] + 1);
	}
	return 1;
}

/*
 * From the third result of store_batch_cancel_read(): 1 with *id, the
 * order the cancel key already cancelled, and *age, the seconds since
 * (by the database's clock; -1 when unknown), or 0.
 */
int
store_read_cancel_key(MYSQL_RES *res, unsigned long long *id, long long *age)
{
	MYSQL_ROW	 row;

	row = mysql_fetch_row(res);
	if (row == NULL || row[0] == NULL)
		return 0;
	*id = strtoull(row[0], NULL, 10);
	*age = row[1] != NULL ? strtoll(row[1], NULL, 10) : -1;
	return 1;
}

/* Append " CASE s.sku WHEN X'sku' THEN qty ... END" for items. */
static int
batch_qty_case(struct db_batch *b, const struct order_view_item *items,
    size_t n)
{
	size_t	 i;

	if (db_batch_more(b, SQL_CASE_SKU) == -1)
		return -1;
	for (i = 0; i < n; i++)
		if (db_batch_more(b, SQL_CASE_WHEN_QTY, items[i].sku,
		    items[i].qty) == -1)
			return -1;
	return db_batch_more(b, SQL_CASE_END);
}

/*
 * A cancel's writes: put each of the n items' quantity back (and count
 * it as restocked), naming the SKUs (in SKU order, as the create's
 * decrease does: the rows are locked in the primary key's order), with
 * a guard that stops the batch unless every one of the n stock rows
 * changed; then mark the order CANCELLED with its cancel key, guarded
 * to stop it unless the order was still CREATED.  Both change rows only
 * while the cancel's ledger claim claim exists (db_batch_own_join()).
 */
int
store_batch_cancel(struct db_batch *b, unsigned long long claim,
    unsigned long long id, const struct order_view_item *items, size_t n,
    time_t cancelled, const char *key, const char *reason, size_t reason_len)
{
	size_t	 i;

	if (n > 0) {
		if (db_batch_sql(b, DB_ROWS_ANY, SQL_STORE_STOCK_UPDATE) == -1 ||
		    db_batch_own_join(b, claim) == -1)
			return -1;
		if (n == 1) {
			if (db_batch_more(b, SQL_STORE_RESTOCK_ONE,
			    items[0].qty, items[0].qty, items[0].sku) == -1)
				return -1;
		} else {
			if (db_batch_more(b, SQL_STORE_RESTOCK_AVAILABLE) ==
			    -1 || batch_qty_case(b, items, n) == -1 ||
			    db_batch_more(b, SQL_STORE_RESTOCK_RESTOCKED) ==
			    -1 || batch_qty_case(b, items, n) == -1 ||
			    db_batch_more(b, SQL_STORE_RESTOCK_WHERE) == -1)
				return -1;
			for (i = 0; i < n; i++)
				if (db_batch_more(b, i > 0 ? SQL_LIST_NEXT :
				    SQL_LIST_FIRST, items[i].sku) == -1)
					return -1;
			if (db_batch_more(b, SQL_LIST_END) == -1)
				return -1;
		}
		if (db_batch_guard(b, (long long)n) == -1)
			return -1;
	}
	if (db_batch_sql(b, DB_ROWS_ANY, SQL_STORE_ORDER_UPDATE) == -1 ||
	    db_batch_own_join(b, claim) == -1 ||
	    db_batch_more(b, SQL_STORE_CANCEL_SET, (long long)cancelled,
	    reason, reason_len, key, id) == -1)
		return -1;
	return db_batch_guard(b, 1);
}

/*
 * The ids of a page of principal's orders, from the index on
 * (principal_id, id), into ids (room for limit + 2): dir 0 the newest,
 * 1 those older than cursor, 2 those newer (enum order_list_dir).  With
 * a cursor the first id read is the cursor itself when it is the
 * principal's, so that one statement checks it.  Returns the count in
 * *n and DB_OK, or a db_err.  FORCE INDEX: left to itself, MariaDB 10.11
 * reads "principal_id = ? AND id <= ? ORDER BY id DESC" by ref on the
 * principal alone, backwards from the principal's newest order, through
 * every order newer than the cursor.
 */
int
store_list_ids(struct db *db, const char *principal, int dir,
    unsigned long long cursor, int limit, unsigned long long *ids, size_t *n)
{
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[3], r[1];
	long long	 c = (long long)cursor, lim, v = 0;
	int		 rc, k = 0;

	*n = 0;
	if (dir == 0)
		rc = db_stmt(db, sql_text(SQL_STORE_LIST_FIRST), &st);
	else
		rc = db_stmt(db, sql_text(dir == 1 ? SQL_STORE_LIST_AFTER :
		    SQL_STORE_LIST_BEFORE), &st);
	if (rc != DB_OK)
		return rc;
	lim = limit + (dir == 0 ? 1 : 2);
	db_bind_str(&p[k++], principal, strlen(principal));
	if (dir != 0) {
		db_bind_i64(&p[k], &c);
		p[k++].is_unsigned = 1;
	}
	db_bind_i64(&p[k++], &lim);
	rc = db_execute(db, st, p);
	if (rc != DB_OK)
		return rc;
	db_bind_i64(&r[0], &v);
	r[0].is_unsigned = 1;
	rc = db_bind_result(db, st, r);
	if (rc != DB_OK) {
		db_stmt_done(db, st);
		return rc;
	}
	while ((rc = db_fetch(db, st)) == 1)
		if (*n < (size_t)lim)
			ids[(*n)++] = (unsigned long long)v;
	db_stmt_done(db, st);
	return rc < 0 ? rc : DB_OK;
}

/*
 * Read the orders ids[0..n-1] (newest first, principal's, contiguous in
 * the index) with their items in one statement and call emit on each,
 * as GET /orders/{orderId} shows it.  Returns DB_OK, a db_err, or
 * STORE_EMIT_FAILED.  The orders are read first, from the index, then
 * their items (STRAIGHT_JOIN): driven from order_items, the id range
 * would read the items of every other principal's order in it.
 */
int
store_list_page(struct db *db, const char *principal,
    const unsigned long long *ids, size_t n,
    int (*emit)(const struct order_view *, void *), void *arg)
{
	const size_t		 notesz = ORDER_NOTE_MAX * 4 + 1;
	MYSQL_STMT		*st;
	MYSQL_BIND		 p[3], r[11];
	unsigned long		 len[11];
	my_bool			 nul[11];
	long long		 lo, hi, oid, amount, price;
	unsigned long long	 cur = 0;
	char			 sku[ORDER_SKU_MAX + 1], status[17];
	char			 currency[4], shipping[17], created[32];
	char			 cancelled[32], *note = NULL, *notebuf = NULL;
	struct order_view	*v = NULL;
	struct order_view_item	*it;
	size_t			 next = 0;
	int			 rc, qty, failed = 0;

	if (n == 0)
		return DB_OK;
	v = malloc(sizeof(*v));
	note = malloc(notesz);
	notebuf = malloc(notesz);
	if (v == NULL || note == NULL || notebuf == NULL) {
		rc = STORE_EMIT_FAILED;
		goto out;
	}
	hi = (long long)ids[0];
	lo = (long long)ids[n - 1];
	rc = db_stmt(db, sql_text(SQL_STORE_LIST_PAGE), &st);
	if (rc != DB_OK)
		goto out;
	db_bind_str(&p[0], principal, strlen(principal));
	db_bind_i64(&p[1], &lo);
	p[1].is_unsigned = 1;
	db_bind_i64(&p[2], &hi);
	p[2].is_unsigned = 1;
	rc = db_execute(db, st, p);
	if (rc != DB_OK)
		goto out;
	db_bind_i64(&r[0], &oid);
	r[0].is_unsigned = 1;
	db_bind_out_str(&r[1], status, sizeof(status) - 1, &len[1], &nul[1]);
	db_bind_out_str(&r[2], currency, sizeof(currency), &len[2], &nul[2]);
	db_bind_i64(&r[3], &amount);
	db_bind_out_str(&r[4], shipping, sizeof(shipping) - 1, &len[4],
	    &nul[4]);
	db_bind_out_str(&r[5], note, notesz, &len[5], &nul[5]);
	db_bind_out_str(&r[6], created, sizeof(created) - 1, &len[6], &nul[6]);
	db_bind_out_str(&r[7], sku, sizeof(sku) - 1, &len[7], &nul[7]);
	db_bind_int(&r[8], &qty);
	db_bind_i64(&r[9], &price);
	db_bind_out_str(&r[10], cancelled, sizeof(cancelled) - 1, &len[10],
	    &nul[10]);
	rc = db_bind_result(db, st, r);
	if (rc != DB_OK) {
		db_stmt_done(db, st);
		goto out;
	}
	for (;;) {
		rc = db_fetch(db, st);
		if (rc != 1)
			break;
		if (failed)
			continue;
		if ((unsigned long long)oid != cur) {
			/* A new order: emit the one before it. */
			if (cur != 0 && emit(v, arg) != 0) {
				failed = 1;
				continue;
			}
			cur = 0;
			/* Skip ids the first read did not see (committed
			   since, with an older auto-increment value). */
			while (next < n && ids[next] > (unsigned long long)oid)
				next++;
			if (next == n || ids[next] != (unsigned long long)oid)
				continue;
			next++;
			cur = (unsigned long long)oid;
			memset(v, 0, sizeof(*v));
			order_id_format(v->id, sizeof(v->id), cur);
			memcpy(v->status, status, len[1] < 16 ? len[1] : 16);
			memcpy(v->currency, currency, len[2] < 3 ? len[2] : 3);
			v->amount = amount;
			memcpy(v->shipping, shipping, len[4] < 16 ? len[4] : 16);
			if (len[5] >= notesz)
				len[5] = notesz - 1;
			memcpy(notebuf, note, len[5]);
			notebuf[len[5]] = '\0';
			v->note = notebuf;
			v->note_len = len[5];
			memcpy(v->created_at, created, len[6] < 31 ? len[6] :
			    31);
			if (!nul[10])
				memcpy(v->cancelled_at, cancelled, len[10] < 31 ?
				    len[10] : 31);
		}
		if (cur == 0 || v->nitems == ORDER_ITEMS_MAX ||
		    len[7] > ORDER_SKU_MAX)
			continue;
		it = &v->items[v->nitems++];
		memcpy(it->sku, sku, len[7]);
		it->sku[len[7]] = '\0';
		it->qty = qty;
		it->unit_price = price;
	}
	db_stmt_done(db, st);
	if (rc >= 0 && !failed && cur != 0 && emit(v, arg) != 0)
		failed = 1;
	if (rc >= 0)
		rc = failed ? STORE_EMIT_FAILED : DB_OK;
out:
	free(notebuf);
	free(note);
	free(v);
	return rc;
}
