#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "db.h"
#include "db_batch.h"
#include "engine.h"
#include "events.h"
#include "fault.h"
#include "fingerprint.h"
#include "idem_key.h"
#include "ledger.h"
#include "log.h"
#include "media_type.h"
#include "metrics.h"
#include "order_api.h"
#include "order_cancel.h"
#include "order_create.h"
#include "order_input.h"
#include "order_list.h"
#include "order_view.h"
#include "peers.h"
#include "response.h"
#include "router.h"
#include "store.h"
#include "utf8.h"
#include "worker.h"

/* A parsed key fits the request's log key. */
_Static_assert(IDEM_KEY_MAX <= REQUEST_LOG_KEY_MAX, "REQUEST_LOG_KEY_MAX");

#define PRINCIPAL_MAX	255

/* Check that s is 1..PRINCIPAL_MAX bytes of UTF-8 without controls. */
static int
principal_ok(const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n = strlen(s), i, k;

	if (n == 0 || n > PRINCIPAL_MAX)
		return 0;
	for (i = 0; i < n; i += k) {
		k = utf8_seq_len(p + i, n - i);
		if (k == 0 || p[i] < 0x20 || p[i] == 0x7f)
			return 0;
	}
	return 1;
}

/* Bound a read's database waits: the smaller of the two deadlines. */
static void
read_deadline(struct db *db, const struct conf *conf)
{
	db_set_deadline(db, conf->read_deadline_ms < conf->request_deadline_ms ?
	    conf->read_deadline_ms : conf->request_deadline_ms);
}

/*
 * A read of WHAT (for the log) failed with DB class RC: 500 when the
 * database refused it, 503 when it does not answer; THING names what
 * could not be read.
 */
static void
read_failed(const struct db *db, int rc, const char *what, const char *thing,
    struct response *resp)
{
	log_warnx("%s failed: %s (%u, %s)", what, db->last_error,
	    db->last_errno, db_class_name(rc));
	if (rc == DB_ERROR)
		response_error(resp, PROBLEM_INTERNAL_ERROR, "%s could "
		    "not be read", thing);
	else
		response_error(resp, PROBLEM_SERVICE_UNAVAILABLE,
		    "the database does not answer");
}

/* GET /orders/_health: 200 when the database answers. */
static enum handler_result
handle_health(struct db *db, const struct conf *conf, struct request *req,
    const char *arg, struct response *resp)
{
	static const char ok[] = "{\"status\":\"ok\"}";

	read_deadline(db, conf);
	if (db_ping(db) == DB_OK) {
		response_json(resp, 200, ok, sizeof(ok) - 1);
		resp->outcome = OUTCOME_OK;
		return HANDLER_ANSWER;
	}
	response_error(resp, PROBLEM_SERVICE_UNAVAILABLE, "the database "
	    "does not answer");
	return HANDLER_ANSWER;
}

/* Read an order on a live connection within the read's bounds. */
static int
get_order(struct db *db, const char *principal, unsigned long long id,
    struct order_view *v, char *note)
{
	int	 rc;

	rc = db_ensure(db);
	if (rc == DB_OK)
		rc = db_read_limits(db);
	if (rc == DB_OK)
		rc = store_get_order(db, principal, id, v, note,
		    ORDER_NOTE_MAX * 4 + 1);
	return rc;
}

/*
 * GET /orders/_metrics: the pool's counters, only to a client on a
 * loopback address, whatever the web server lets through.
 */
static enum handler_result
handle_metrics(struct db *db, const struct conf *conf, struct request *req,
    const char *arg, struct response *resp)
{
	struct metrics_snapshot	 s;
	struct event_stats	 ev;
	struct db_batch		 b;
	int			 rc;

	if (!peers_addr_is_loopback(req->remote_addr)) {
		response_error(resp, PROBLEM_FORBIDDEN, "metrics are "
		    "served to loopback clients only");
		return HANDLER_ANSWER;
	}
	metrics_snapshot(&s);
	response_reset(resp);
	resp->status = 200;
	resp->outcome = OUTCOME_OK;
	response_header(resp, "Content-Type", "text/plain; version=0.0.4");
	if (metrics_render(&s, &resp->body) != 0) {
		response_error(resp, PROBLEM_INTERNAL_ERROR, "metrics too "
		    "large");
		return HANDLER_ANSWER;
	}
	/* The outbox, from the database; left out when it does not answer. */
	db_batch_init(&b);
	read_deadline(db, conf);
	rc = db_ensure(db);
	if (rc == DB_OK && events_batch_stats(&b) == -1)
		rc = DB_ERROR;
	if (rc == DB_OK)
		rc = db_batch_run(db, &b);
	if (rc == DB_OK) {
		events_read_stats(&b, 0, &ev);
		db_end_read(db);
		if (metrics_render_events(ev.pending, ev.oldest_pending_us,
		    ev.dead, &resp->body) != 0 ||
		    metrics_render_deliveries(event_outcome_names,
		    ev.deliveries, EVENT_OUTCOMES, &resp->body) != 0)
			response_error(resp, PROBLEM_INTERNAL_ERROR,
			    "metrics too large");
	} else {
		log_info("metrics: the outbox's gauges left out: %s",
		    db->last_error);
		db_rollback(db);
	}
	db_batch_clear(&b);
	return HANDLER_ANSWER;
}

/* GET /orders/{orderId}: the order as it is now, for its owner only. */
static enum handler_result
handle_get(struct db *db, const struct conf *conf, struct request *req,
    const char *arg, struct response *resp)
{
	struct order_view	*v = NULL;
	char			*note = NULL;
	unsigned long long	 id;
	int			 rc = 0;

	if (order_id_parse(arg, &id) == 0) {
		v = malloc(sizeof(*v));
		note = malloc(ORDER_NOTE_MAX * 4 + 1);
		if (v == NULL || note == NULL) {
			response_error(resp, PROBLEM_INTERNAL_ERROR,
			    "out of memory");
			goto out;
		}
		read_deadline(db, conf);
		rc = get_order(db, req->principal, id, v, note);
		if (rc == DB_LOST)	/* once more, on a new connection */
			rc = get_order(db, req->principal, id, v, note);
		db_end_read(db);
	}
	if (rc < 0) {
		read_failed(db, rc, "order lookup", "the order", resp);
		goto out;
	}
	if (rc == 0) {
		response_error(resp, PROBLEM_ORDER_NOT_FOUND, "no order "
		    "with this id");
		goto out;
	}
	response_reset(resp);
	resp->status = 200;
	resp->outcome = OUTCOME_OK;
	response_header(resp, "Content-Type", "application/json");
	if (order_view_render(v, &resp->body) != 0)
		response_error(resp, PROBLEM_INTERNAL_ERROR, "response "
		    "too large");
out:
	free(note);
	free(v);
	return HANDLER_ANSWER;
}

/* The body of a page of orders, as it is rendered. */
struct list_page {
	struct buf	*body;
	size_t		 count;
};

static int
list_emit(const struct order_view *v, void *arg)
{
	struct list_page	*pg = arg;

	if (pg->count++ > 0 && buf_addc(pg->body, ',') != 0)
		return -1;
	return order_view_render(v, pg->body);
}

/*
 * The ids of the page, checked against the cursor; 1 when the cursor is
 * not the principal's.  *from is where the page starts in ids, *n its
 * length, *more whether more orders lie beyond it in its direction.
 */
static int
list_ids(struct db *db, const char *principal, const struct order_list_query *q,
    unsigned long long *ids, size_t *from, size_t *n, int *more)
{
	size_t	 got, i;
	int	 rc;

	rc = db_ensure(db);
	if (rc == DB_OK)
		rc = db_read_limits(db);
	if (rc == DB_OK)
		rc = store_list_ids(db, principal, (int)q->dir, q->cursor,
		    q->limit, ids, &got);
	if (rc != DB_OK)
		return rc;
	*from = 0;
	if (q->dir != ORDER_LIST_FIRST) {
		if (got == 0 || ids[0] != q->cursor)
			return 1;
		*from = 1;
		got--;
	}
	*more = got > (size_t)q->limit;
	*n = *more ? (size_t)q->limit : got;
	if (q->dir == ORDER_LIST_BEFORE) {
		/* Read oldest first: newest first, as every page. */
		for (i = 0; i < *n / 2; i++) {
			unsigned long long t = ids[*from + i];

			ids[*from + i] = ids[*from + *n - 1 - i];
			ids[*from + *n - 1 - i] = t;
		}
	}
	return DB_OK;
}

/* The Link header: rel="next" to older orders, rel="prev" to newer. */
static void
list_links(const struct conf *conf, const struct order_list_query *q,
    const unsigned long long *page, size_t n, int more, struct response *resp)
{
	char	 first[ORDER_ID_MAX], last[ORDER_ID_MAX];
	int	 next, prev;

	if (n == 0)
		return;
	order_id_format(first, sizeof(first), page[0]);
	order_id_format(last, sizeof(last), page[n - 1]);
	next = q->dir == ORDER_LIST_BEFORE ? 1 : more;
	prev = q->dir == ORDER_LIST_FIRST ? 0 :
	    q->dir == ORDER_LIST_AFTER ? 1 : more;
	if (next && prev)
		response_header(resp, "Link", "<%s?limit=%d&starting_after=%s>; "
		    "rel=\"next\", <%s?limit=%d&ending_before=%s>; "
		    "rel=\"prev\"", conf->mount, q->limit, last, conf->mount,
		    q->limit, first);
	else if (next)
		response_header(resp, "Link", "<%s?limit=%d&starting_after=%s>; "
		    "rel=\"next\"", conf->mount, q->limit, last);
	else if (prev)
		response_header(resp, "Link", "<%s?limit=%d&ending_before=%s>; "
		    "rel=\"prev\"", conf->mount, q->limit, first);
}

/*
 * GET /orders: a page of the principal's own orders, newest first, each
 * as GET /orders/{orderId} shows it, read from the index on
 * (principal_id, id).
 */
static enum handler_result
handle_list(struct db *db, const struct conf *conf, struct request *req,
    const char *arg, struct response *resp)
{
	struct order_list_query	 q;
	struct problem		 p;
	struct list_page	 pg;
	unsigned long long	 ids[ORDER_LIST_LIMIT_MAX + 2];
	const char		*query;
	size_t			 from = 0, n = 0;
	int			 rc, more = 0;

	query = strchr(req->uri, '?');
	if (order_list_parse(query ? query + 1 : NULL, &q, &p) == -1) {
		response_problem(resp, &p);
		return HANDLER_ANSWER;
	}
	read_deadline(db, conf);
	rc = list_ids(db, req->principal, &q, ids, &from, &n, &more);
	if (rc == DB_LOST)	/* once more, on a new connection */
		rc = list_ids(db, req->principal, &q, ids, &from, &n, &more);
	if (rc == 1) {
		db_end_read(db);
		response_error(resp, PROBLEM_VALIDATION_FAILED, "%s must "
		    "be the id of one of your orders", q.dir == ORDER_LIST_AFTER ?
		    "starting_after" : "ending_before");
		return HANDLER_ANSWER;
	}
	response_reset(resp);
	pg.body = &resp->body;
	pg.count = 0;
	if (rc == DB_OK && buf_adds(&resp->body, "{\"data\":[") != 0)
		rc = STORE_EMIT_FAILED;
	if (rc == DB_OK)
		rc = store_list_page(db, req->principal, ids + from, n,
		    list_emit, &pg);
	db_end_read(db);
	if (rc == DB_OK && pg.count != n) {
		/* An order of the page vanished between the two reads. */
		log_warnx("order list: %zu of %zu orders read", pg.count, n);
		rc = DB_ERROR;
	}
	if (rc == STORE_EMIT_FAILED) {
		response_error(resp, PROBLEM_INTERNAL_ERROR, "response "
		    "too large");
		return HANDLER_ANSWER;
	}
	if (rc < 0) {
		read_failed(db, rc, "order list", "the orders", resp);
		return HANDLER_ANSWER;
	}
	if (buf_printf(&resp->body, "],\"has_more\":%s}", more ? "true" :
	    "false") != 0) {
		response_error(resp, PROBLEM_INTERNAL_ERROR, "response "
		    "too large");
		return HANDLER_ANSWER;
	}
	resp->status = 200;
	resp->outcome = OUTCOME_OK;
	response_header(resp, "Content-Type", "application/json");
	list_links(conf, &q, ids + from, n, more, resp);
	return HANDLER_ANSWER;
}

#ifdef ENABLE_FAULT_INJECTION
/* The fault plan a test build reads from the request; a bad one is a 400. */
static int
request_fault(const struct request *req, struct fault_plan *plan,
    struct response *resp)
{
	char	ferr[256];

	if (fault_parse(plan, req->fault, ferr, sizeof(ferr)) == -1) {
		response_error(resp, PROBLEM_FAULT_SPEC_INVALID, "%s",
		    ferr);
		return -1;
	}
	return 0;
}
#endif

/*
 * POST /orders: the request checks (key, media type, size, JSON, schema),
 * in order, then the transaction.  No check failure writes anything to the database.
 */
static enum handler_result
handle_create(struct db *db, const struct conf *conf, struct request *req,
    const char *arg, struct response *resp)
{
	char			 key[IDEM_KEY_MAX + 1];
	struct order_input	*in;
	struct engine_request	 er;
	struct problem		 p;
	char			 fp[FINGERPRINT_HEX_LEN + 1];
	enum handler_result	 result = HANDLER_ANSWER;
#ifdef ENABLE_FAULT_INJECTION
	struct fault_plan	 plan;
#endif

	req->operation = MOP_CREATE_ORDER;
	in = calloc(1, sizeof(*in));
	if (in == NULL) {
		response_error(resp, PROBLEM_INTERNAL_ERROR, "out of "
		    "memory");
		return HANDLER_ANSWER;
	}
	if (idem_key_parse(req->idempotency_key, key, &p) == -1 ||
	    media_type_json(req->content_type, &p) == -1) {
		response_problem(resp, &p);
		goto out;
	}
	memcpy(req->log_key, key, strlen(key) + 1);
	if (req->body_too_large) {
		response_error(resp, PROBLEM_PAYLOAD_TOO_LARGE, "the body "
		    "exceeds %zu bytes", conf->max_body_bytes);
		goto out;
	}
	if (order_input_parse(in, req->body ? req->body : "", req->body_len,
	    &p) == -1) {
		response_problem(resp, &p);
		goto out;
	}
	if (fingerprint(LEDGER_OPERATION_CREATE_ORDER, req->principal,
	    in->canonical, in->canonical_len, fp) == -1) {
		response_error(resp, PROBLEM_INTERNAL_ERROR, "fingerprint "
		    "failed");
		goto out;
	}
	memset(&er, 0, sizeof(er));
	er.principal = req->principal;
	er.key = key;
	er.input = in;
	er.fingerprint = fp;
#ifdef ENABLE_FAULT_INJECTION
	if (request_fault(req, &plan, resp) == -1)
		goto out;
	er.fault = &plan;
#endif
	if (engine_run(db, conf, &order_create_op, &er, resp,
	    &req->attempts) == ENGINE_SILENT)
		result = HANDLER_DROP;
out:
	order_input_clear(in);
	free(in);
	return result;
}

/*
 * POST /orders/{orderId}/cancel: the request checks of a create (key,
 * media type when there is a body, size, JSON, schema), then the
 * transaction.  No check failure writes anything to the database.  An
 * order id that does not parse is no check: the transaction answers it
 * 404 ORDER_NOT_FOUND and records it, as an unknown order (its
 * fingerprint covers the id as it was sent).
 */
static enum handler_result
handle_cancel(struct db *db, const struct conf *conf, struct request *req,
    const char *arg, struct response *resp)
{
	char			 key[IDEM_KEY_MAX + 1];
	struct cancel_input	 in;
	struct cancel_args	 args;
	struct engine_request	 er;
	struct problem		 p;
	char			 fp[FINGERPRINT_HEX_LEN + 1];
	unsigned long long	 id;
	enum handler_result	 result = HANDLER_ANSWER;
#ifdef ENABLE_FAULT_INJECTION
	struct fault_plan	 plan;
#endif

	req->operation = MOP_CANCEL_ORDER;
	memset(&in, 0, sizeof(in));
	if (idem_key_parse(req->idempotency_key, key, &p) == -1 ||
	    ((req->body_len > 0 || req->body_too_large ||
	    (req->content_type != NULL && req->content_type[0] != '\0')) &&
	    media_type_json(req->content_type, &p) == -1)) {
		response_problem(resp, &p);
		return HANDLER_ANSWER;
	}
	memcpy(req->log_key, key, strlen(key) + 1);
	if (req->body_too_large) {
		response_error(resp, PROBLEM_PAYLOAD_TOO_LARGE, "the body "
		    "exceeds %zu bytes", conf->max_body_bytes);
		return HANDLER_ANSWER;
	}
	if (cancel_input_parse(&in, arg, req->body ? req->body : "",
	    req->body_len, &p) == -1) {
		response_problem(resp, &p);
		return HANDLER_ANSWER;
	}
	if (order_id_parse(arg, &id) == -1)
		id = 0;		/* no order has it: 404, recorded */
	if (fingerprint(LEDGER_OPERATION_CANCEL_ORDER, req->principal,
	    in.canonical, in.canonical_len, fp) == -1) {
		response_error(resp, PROBLEM_INTERNAL_ERROR, "fingerprint "
		    "failed");
		goto out;
	}
	args.order = id;
	args.in = &in;
	memset(&er, 0, sizeof(er));
	er.principal = req->principal;
	er.key = key;
	er.input = &args;
	er.fingerprint = fp;
#ifdef ENABLE_FAULT_INJECTION
	if (request_fault(req, &plan, resp) == -1)
		goto out;
	er.fault = &plan;
#endif
	if (engine_run(db, conf, &order_cancel_op, &er, resp,
	    &req->attempts) == ENGINE_SILENT)
		result = HANDLER_DROP;
out:
	cancel_input_clear(&in);
	return result;
}

/*
 * What every answer says from the problem table, whatever refused it:
 * Retry-After where asking again may help; and to POST, whether sending
 * the same key and body again may get another answer (Should-Retry:
 * never for a success, a replay or a recorded rejection), and the
 * Idempotency-Key it was sent when the header is printable and of a
 * sane length.
 */
void
order_api_finish(const struct request *req, struct response *resp)
{
	const char	*raw = req->idempotency_key;
	size_t		 i;
	int		 recorded, replayed, after;

	recorded = resp->outcome == OUTCOME_REJECTED;
	replayed = resp->outcome == OUTCOME_REPLAYED ||
	    resp->outcome == OUTCOME_RECOVERED;
	after = problem_retry_after(resp->code, recorded, replayed);
	if (after > 0)
		response_header(resp, "Retry-After", "%d", after);
	if (req->method == NULL || strcmp(req->method, "POST") != 0)
		return;
	response_header(resp, "Should-Retry", "%s",
	    problem_should_retry(resp->code, recorded, replayed) ? "true" :
	    "false");
	if (raw == NULL || strlen(raw) > 2 * IDEM_KEY_MAX)
		return;
	for (i = 0; raw[i] >= 0x20 && raw[i] < 0x7f; i++)
		;
	if (raw[i] == '\0')
		response_header(resp, "Idempotency-Key", "%s", raw);
}

/*
 * The handler of each route and method, as OpenSMTPD's smtp_session.c
 * commands[] carry theirs: arg is the route's {orderId}, or "".  The
 * router (router.c) matches the path and says which methods it allows;
 * HEAD runs the GET handler.
 */
struct api_route {
	enum route_id	 route;
	const char	*method;
	enum handler_result (*handle)(struct db *, const struct conf *,
			    struct request *, const char *, struct response *);
};

static const struct api_route api_routes[] = {
	{ ROUTE_ORDERS,		"POST",	handle_create },
	{ ROUTE_ORDERS,		"GET",	handle_list },
	{ ROUTE_HEALTH,		"GET",	handle_health },
	{ ROUTE_ORDER,		"GET",	handle_get },
	{ ROUTE_CANCEL,		"POST",	handle_cancel },
	{ ROUTE_METRICS,	"GET",	handle_metrics },
};

/*
 * The checks every route shares, before its handler: a path we serve
 * (404), a method it allows (405 with Allow), a usable principal where
 * it needs one (401).  0 when the handler may run, else -1 with the
 * answer in resp.
 */
static int
route_prologue(const struct conf *conf, const struct request *req,
    const struct route_match *m, struct response *resp)
{
	if (m->id == ROUTE_NONE || (m->id == ROUTE_METRICS && !conf->metrics)) {
		response_error(resp, PROBLEM_NOT_FOUND, "no resource at "
		    "this path");
		return -1;
	}
	if (!m->method_allowed) {
		response_error(resp, PROBLEM_METHOD_NOT_ALLOWED, "%s is "
		    "not allowed here; allowed: %s", req->method, m->allow);
		response_header(resp, "Allow", "%s", m->allow);
		return -1;
	}
	if (m->needs_principal && (req->principal == NULL ||
	    !principal_ok(req->principal))) {
		response_error(resp, PROBLEM_UNAUTHENTICATED, "%s",
		    req->principal == NULL || req->principal[0] == '\0' ?
		    "no authenticated user: the web server must authenticate "
		    "requests under this path" :
		    "the authenticated user name is not usable");
		return -1;
	}
	return 0;
}

/* Answer one request. */
enum handler_result
order_api_handle(struct db *db, const struct conf *conf, struct request *req,
    struct response *resp)
{
	struct route_match	 m;
	const char		*method;
	size_t			 i;

	router_match(conf->mount, req->uri, req->method, &m);
	if (route_prologue(conf, req, &m, resp) == -1)
		return HANDLER_ANSWER;
	method = strcmp(req->method, "HEAD") == 0 ? "GET" : req->method;
	for (i = 0; i < sizeof(api_routes) / sizeof(api_routes[0]); i++)
		if (api_routes[i].route == m.id &&
		    strcmp(api_routes[i].method, method) == 0)
			return api_routes[i].handle(db, conf, req, m.arg, resp);
	response_error(resp, PROBLEM_INTERNAL_ERROR, "no handler for "
	    "this route");
	return HANDLER_ANSWER;
}

/* The order service, as the worker runs it. */
const struct worker_ops order_api_ops = {
	order_api_handle, 1, order_api_finish
};
