/*
 * The relay: one process, one database connection, up to
 * relay_concurrency deliveries at once on one libcurl multi handle
 * (connections kept alive between deliveries).
 *
 *	relay_run()		the loop: claim due events, one per free
 *				slot; while the last claim took all it asked
 *				for (a backlog), ahead: up to RELAY_AHEAD + 1
 *				times relay_concurrency held at once (queued,
 *				in flight or ended), whenever there is room
 *				for relay_concurrency more;
 *				start queued ones, oldest claim first, while
 *				fewer than relay_concurrency are in flight;
 *				drive the transfers; settle those that ended,
 *				together; poll the database every event_poll
 *				(500 ms) while idle, at once again while the
 *				last claim took all it asked for
 *	claim()			events.c's claim: a lease of twice
 *				webhook_timeout and a second under a token of
 *				this claim's own.  An event starts only while
 *				its lease has RELAY_START_LEASE left (the
 *				delivery's timeout, half of it more and a
 *				second), on this process's clock from before
 *				the claim was sent; else, and at SIGTERM, its
 *				lease is given back (release()).  An order's
 *				next event cannot be claimed before this one
 *				is recorded delivered (the claim's NOT EXISTS),
 *				so queued events keep per-order order
 *	start()			sign and POST one event (no redirects, TLS
 *				verified, a timeout over the whole exchange)
 *	ended(), settle()	2xx: delivered; 410: the endpoint disabled;
 *				anything else: again after Retry-After or an
 *				exponential backoff with jitter, dead once
 *				older than event_max_age.  The deliveries that
 *				ended are recorded in one transaction once
 *				relay_concurrency of them wait, or the first
 *				has waited RELAY_SETTLE_MS, or none is in
 *				flight, or before a claim; the delivered ones
 *				with one status in two statements
 *
 * SIGTERM (or SIGINT) stops claiming, gives back what is queued and waits
 * for the deliveries in flight; SIGHUP reloads the configuration.  A
 * relay killed outright leaves its leases to pass: the events are sent
 * again, with the same webhook-id.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buf.h"
#include "conf.h"
#include "db.h"
#include "db_batch.h"
#include "events.h"
#include "log.h"
#include "mono.h"
#include "notify.h"
#include "relay.h"
#include "webhook.h"

#define RELAY_DB_DEADLINE_MS	10000	/* one round trip of the relay */
#define RELAY_WAKE_MS		200	/* the longest wait for signals */
#define RELAY_ANSWER_MAX	(64 * 1024)	/* read of an answer's body */
#define RELAY_RETRY_AFTER_MAX	(24LL * 3600 * 1000)
#define RELAY_AHEAD		2	/* claimed ahead, times relay_concurrency */
#define RELAY_SETTLE_MS		20	/* the longest wait of an ended delivery */
/* The lease an event must have left to start: see claim(). */
#define RELAY_START_LEASE(c)	((c)->webhook_timeout_ms * 3 / 2 + 1000)

static volatile sig_atomic_t	relay_stop;
static volatile sig_atomic_t	relay_reload;

/* What a claimed event is doing. */
enum job {
	JOB_FREE,		/* no event */
	JOB_QUEUED,		/* claimed, not started */
	JOB_FLIGHT,		/* its delivery runs */
	JOB_DONE,		/* ended, not yet recorded */
	JOB_RELEASE,		/* not started: its lease to give back */
};

/* One claimed event and its delivery. */
struct delivery {
	enum job		 job;
	unsigned long long	 seq;		/* claim order */
	long long		 lease_end_ms;	/* mono, at the latest */
	long long		 ended_ms;
	CURL			*easy;
	struct curl_slist	*hdrs;
	struct event_row	 ev;
	struct buf		 body;
	char			 token[EVENT_TOKEN_MAX];
	long long		 started_ms;
	long long		 retry_after_ms;	/* -1: none */
	size_t			 answer_len;
	char			 errbuf[CURL_ERROR_SIZE];
	/* How it ended (ended()), until settle() records it. */
	enum event_outcome	 outcome;
	long			 status;	/* HTTP, 0: none */
	long long		 delay_ms;	/* to the next try */
	long long		 took_ms;
	char			 err[300];
};

struct relay {
	const char		*conf_path;
	struct conf		*conf;
	struct webhook_key	 key;
	struct db		 db;
	struct db_batch		 batch;
	CURLM			*multi;
	struct delivery		*slots;
	int			 nslots;	/* events held at most */
	int			 conc;		/* relay_concurrency */
	int			 queued, flight, done;
	int			 ahead;		/* the last claim was full */
	unsigned long long	 seq;
	unsigned long		 claims;
	char			 host[64];
	int			 disabled;	/* the endpoint answered 410 */
	int			 db_down;	/* logged once */
	int			 stopping;	/* logged once */
	long long		 next_poll_ms;
};

/* Signal handlers only set flags. */
static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		relay_reload = 1;
	else
		relay_stop = sig;
}

/*
 * The delay before try number attempt + 1 after attempt failures:
 * event_backoff doubled each time, at most event_backoff_max, half of it
 * fixed and half random (jitter), so that a receiver back from an
 * outage is not hit by every relay at once.
 */
long long
relay_backoff_ms(const struct conf *c, long attempt)
{
	long long	 d = c->event_backoff_ms;
	long		 i;

	for (i = 1; i < attempt && d < c->event_backoff_max_ms; i++)
		d *= 2;
	if (d > c->event_backoff_max_ms)
		d = c->event_backoff_max_ms;
	return d / 2 + random() % (d / 2 + 1);
}

/*
 * The delay a Retry-After value asks for: seconds, or an HTTP date
 * (now is the epoch in seconds); -1 when it is neither.  At most a day.
 */
long long
relay_retry_after_ms(const char *v, long long now)
{
	char		*end;
	long long	 s;
	time_t		 t;

	while (*v == ' ' || *v == '\t')
		v++;
	if (*v >= '0' && *v <= '9') {
		errno = 0;
		s = strtoll(v, &end, 10);
		while (*end == ' ' || *end == '\t' || *end == '\r' ||
		    *end == '\n')
			end++;
		if (errno != 0 || *end != '\0')
			return -1;
		s = s > RELAY_RETRY_AFTER_MAX / 1000 ?
		    RELAY_RETRY_AFTER_MAX / 1000 : s;
		return s * 1000;
	}
	t = curl_getdate(v, NULL);
	if (t == -1)
		return -1;
	s = (long long)t - now;
	if (s < 0)
		s = 0;
	return s > RELAY_RETRY_AFTER_MAX / 1000 ? RELAY_RETRY_AFTER_MAX :
	    s * 1000;
}

/* Keep at most RELAY_ANSWER_MAX bytes' count of an answer; drop them. */
static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	struct delivery	*d = arg;

	(void)p;
	d->answer_len += size * n;
	return size * n;
}

/* Note Retry-After. */
static size_t
on_header(char *p, size_t size, size_t n, void *arg)
{
	struct delivery	*d = arg;
	char		 v[128];
	size_t		 len = size * n;

	if (len > 12 && len < sizeof(v) + 12 &&
	    strncasecmp(p, "Retry-After:", 12) == 0) {
		memcpy(v, p + 12, len - 12);
		v[len - 12] = '\0';
		d->retry_after_ms = relay_retry_after_ms(v, (long long)time(NULL));
	}
	return len;
}

/* Run the batch on the relay's connection; DB_OK or a class. */
static int
run_batch(struct relay *r)
{
	int	 rc;

	db_set_deadline(&r->db, RELAY_DB_DEADLINE_MS);
	rc = db_ensure(&r->db);
	if (rc == DB_OK)
		rc = db_batch_run(&r->db, &r->batch);
	if (rc != DB_OK) {
		db_rollback(&r->db);
		if (!r->db_down)
			log_warnx("relay: database: %s (%u); trying again "
			    "every %ld ms", r->db.last_error, r->db.last_errno,
			    r->conf->event_poll_ms);
		r->db_down = 1;
		return rc;
	}
	if (r->db_down)
		log_info("relay: database back");
	r->db_down = 0;
	return DB_OK;
}

/* Whether the endpoint is disabled (it answered 410); -1: unknown. */
static int
endpoint_disabled(struct relay *r)
{
	int	 rc, disabled;

	db_batch_reset(&r->batch);
	if (events_batch_endpoint(&r->batch, r->conf->webhook_url) == -1)
		return -1;
	if (run_batch(r) != DB_OK)
		return -1;
	disabled = r->batch.res[0] != NULL &&
	    mysql_num_rows(r->batch.res[0]) > 0;
	db_batch_reset(&r->batch);
	rc = db_commit(&r->db);
	if (rc != DB_OK)
		db_rollback(&r->db);
	return disabled;
}

/* Sign and start the delivery of slot d's event. */
static int
start(struct relay *r, struct delivery *d)
{
	char		 h[256], sig[WEBHOOK_SIG_MAX];
	long long	 ts = (long long)time(NULL);
	struct curl_slist *l = NULL, *t;
	CURL		*e = d->easy;

	buf_reset(&d->body);
	if (webhook_body(&d->body, d->ev.type, d->ev.created, d->ev.payload.p,
	    d->ev.payload.len) == -1 ||
	    webhook_sign(&r->key, d->ev.webhook_id, ts, d->body.p, d->body.len,
	    sig, sizeof(sig)) == -1)
		return -1;
	curl_slist_free_all(d->hdrs);
	d->hdrs = NULL;
	l = curl_slist_append(l, "Content-Type: application/json");
	snprintf(h, sizeof(h), "webhook-id: %s", d->ev.webhook_id);
	t = l == NULL ? NULL : curl_slist_append(l, h);
	snprintf(h, sizeof(h), "webhook-timestamp: %lld", ts);
	t = t == NULL ? NULL : curl_slist_append(t, h);
	snprintf(h, sizeof(h), "webhook-signature: %s", sig);
	t = t == NULL ? NULL : curl_slist_append(t, h);
	t = t == NULL ? NULL : curl_slist_append(t, "User-Agent: "
	    PACKAGE_NAME "-relay/" PACKAGE_VERSION);
	t = t == NULL ? NULL : curl_slist_append(t, "Expect:");
	if (t == NULL) {
		curl_slist_free_all(l);
		return -1;
	}
	d->hdrs = t;
	d->retry_after_ms = -1;
	d->answer_len = 0;
	d->errbuf[0] = '\0';
	curl_easy_setopt(e, CURLOPT_URL, r->conf->webhook_url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, d->body.p);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
	    (curl_off_t)d->body.len);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, d->hdrs);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	if (r->conf->webhook_ca_file != NULL)
		curl_easy_setopt(e, CURLOPT_CAINFO, r->conf->webhook_ca_file);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, r->conf->webhook_timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
	    r->conf->webhook_timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, d);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, d);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, d->errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, d);
	if (curl_multi_add_handle(r->multi, e) != CURLM_OK)
		return -1;
	d->started_ms = mono_ms();
	d->job = JOB_FLIGHT;
	r->flight++;
	return 0;
}

/* The events the relay holds: queued, in flight, ended. */
static int
held(const struct relay *r)
{
	return r->queued + r->flight + r->done;
}

/*
 * How many events to claim now: while the last claim took all it asked
 * for (a backlog), as many as the relay may hold once relay_concurrency
 * fit; else one per free delivery slot.  0: none now.
 */
static int
room_now(const struct relay *r)
{
	int	 room;

	if (r->ahead) {
		room = r->nslots - held(r);
		return room >= r->conc ? room : 0;
	}
	room = r->conc - r->flight - r->queued;
	return room > 0 ? room : 0;
}

/*
 * Claim up to room events and queue them, under a lease that ends, on
 * this process's clock, no later than lease_ms after the claim was sent.
 */
static int
claim(struct relay *r, int room)
{
	struct delivery	*d;
	struct event_row *rows;
	char		 token[EVENT_TOKEN_MAX];
	long		 lease_ms = 2 * r->conf->webhook_timeout_ms + 1000;
	long long	 sent = mono_ms();
	int		 n, i, k = 0, rc;

	snprintf(token, sizeof(token), "%.40s/%ld/%lu", r->host,
	    (long)getpid(), ++r->claims);
	db_batch_reset(&r->batch);
	if (events_batch_claim(&r->batch, token, lease_ms, room) == -1)
		return -1;
	rc = run_batch(r);
	if (rc != DB_OK)
		return -1;
	rows = calloc((size_t)room, sizeof(*rows));
	if (rows == NULL)
		return -1;
	for (i = 0; i < room; i++)
		event_row_init(&rows[i]);
	n = events_read_claimed(r->batch.res[1], rows, room);
	db_batch_reset(&r->batch);
	for (i = 0; i < n; i++) {
		while (r->slots[k].job != JOB_FREE)
			k++;
		d = &r->slots[k];
		event_row_clear(&d->ev);
		d->ev = rows[i];
		event_row_init(&rows[i]);
		snprintf(d->token, sizeof(d->token), "%s", token);
		d->job = JOB_QUEUED;
		d->seq = ++r->seq;
		d->lease_end_ms = sent + lease_ms;
		r->queued++;
	}
	for (i = 0; i < room; i++)
		event_row_clear(&rows[i]);
	free(rows);
	return n < 0 ? -1 : n;
}

/*
 * Give back the leases of the events marked JOB_RELEASE, in one
 * statement; not recorded, they pass after their lease.
 */
static void
release(struct relay *r)
{
	struct event_lease *l;
	int		 i, n = 0;

	l = calloc((size_t)r->nslots, sizeof(*l));
	for (i = 0; l != NULL && i < r->nslots; i++)
		if (r->slots[i].job == JOB_RELEASE) {
			l[n].id = r->slots[i].ev.id;
			l[n++].token = r->slots[i].token;
		}
	db_batch_reset(&r->batch);
	if (l == NULL || (n > 0 && (events_batch_release(&r->batch, l, n) ==
	    -1 || run_batch(r) != DB_OK)))
		log_warnx("relay: the leases of %d events not started were "
		    "not given back; they pass after their lease", n);
	else if (n > 0)
		log_info("relay: gave back the leases of %d events not "
		    "started", n);
	db_batch_reset(&r->batch);
	free(l);
	for (i = 0; i < r->nslots; i++)
		if (r->slots[i].job == JOB_RELEASE)
			r->slots[i].job = JOB_FREE;
}

/*
 * Start queued events, oldest claim first, while fewer than
 * relay_concurrency are in flight; one whose lease has too little left
 * is given back instead, and so is every queued one while the relay
 * stops or the endpoint is disabled.
 */
static void
start_queued(struct relay *r)
{
	struct delivery	*d;
	int		 i, back = 0;

	while (r->queued > 0 && (r->flight < r->conc || relay_stop ||
	    r->disabled)) {
		d = NULL;
		for (i = 0; i < r->nslots; i++)
			if (r->slots[i].job == JOB_QUEUED && (d == NULL ||
			    r->slots[i].seq < d->seq))
				d = &r->slots[i];
		r->queued--;
		if (relay_stop || r->disabled || d->lease_end_ms - mono_ms() <
		    RELAY_START_LEASE(r->conf)) {
			d->job = JOB_RELEASE;
			back++;
			continue;
		}
		if (start(r, d) == -1) {
			log_warnx("relay: event %s: cannot start its delivery; "
			    "it goes again after its lease", d->ev.webhook_id);
			d->job = JOB_FREE;
		}
	}
	if (back > 0)
		release(r);
}

/* Take how slot d's delivery ended (res) from its transfer. */
static void
ended(struct relay *r, struct delivery *d, CURLcode res)
{
	d->ended_ms = mono_ms();
	d->took_ms = d->ended_ms - d->started_ms;
	d->job = JOB_DONE;
	r->flight--;
	r->done++;
	d->status = 0;
	d->delay_ms = 0;
	curl_multi_remove_handle(r->multi, d->easy);
	if (res == CURLE_OK)
		curl_easy_getinfo(d->easy, CURLINFO_RESPONSE_CODE, &d->status);
	if (res == CURLE_OK && d->status >= 200 && d->status <= 299) {
		d->outcome = EVENT_DELIVERED;
		d->err[0] = '\0';
	} else if (res == CURLE_OK && d->status == 410) {
		d->outcome = EVENT_GONE;
		snprintf(d->err, sizeof(d->err), "HTTP 410 Gone");
	} else {
		d->outcome = EVENT_RETRY;
		if (res == CURLE_OK)
			snprintf(d->err, sizeof(d->err), "HTTP %ld", d->status);
		else
			snprintf(d->err, sizeof(d->err), "%s",
			    d->errbuf[0] != '\0' ? d->errbuf :
			    curl_easy_strerror(res));
		d->delay_ms = d->retry_after_ms >= 0 ? d->retry_after_ms :
		    relay_backoff_ms(r->conf, d->ev.attempts + 1);
	}
}

/* Log how slot d's delivery ended, recorded (ok) or not, and free it. */
static void
settled(struct relay *r, struct delivery *d, int ok)
{
	if (!ok)
		log_warnx("relay: event %s: its outcome (%s) was not "
		    "recorded; it goes again after its lease",
		    d->ev.webhook_id, d->outcome == EVENT_DELIVERED ?
		    "delivered" : d->err);
	switch (d->outcome) {
	case EVENT_DELIVERED:
		log_info("event %s %s o-%llu attempt %ld: delivered, "
		    "HTTP %ld in %lld ms", d->ev.webhook_id, d->ev.type,
		    d->ev.order_id, d->ev.attempts + 1, d->status,
		    d->took_ms);
		break;
	case EVENT_GONE:
		log_warnx("event %s %s o-%llu: the endpoint answered "
		    "410 Gone: it is disabled, no event is sent to it "
		    "until `idemorders events enable`",
		    d->ev.webhook_id, d->ev.type, d->ev.order_id);
		db_batch_reset(&r->batch);
		if (events_batch_disable(&r->batch,
		    r->conf->webhook_url, "410 Gone") == -1 ||
		    run_batch(r) != DB_OK)
			log_warnx("relay: the endpoint's 410 was not "
			    "recorded");
		db_batch_reset(&r->batch);
		r->disabled = 1;
		break;
	default:
		log_info("event %s %s o-%llu attempt %ld: %s after "
		    "%lld ms; again in %lld ms%s", d->ev.webhook_id,
		    d->ev.type, d->ev.order_id, d->ev.attempts + 1,
		    d->err, d->took_ms, d->delay_ms,
		    d->retry_after_ms >= 0 ? " (Retry-After)" : "");
		break;
	}
	d->job = JOB_FREE;
	r->done--;
}

/*
 * Record how the deliveries that ended did, in one transaction (one
 * COMMIT, one flush of the redo log for them all) as far as a batch
 * holds them, then in another: the delivered ones with one HTTP status
 * in two statements, each other one in two of its own.  Not recorded
 * (the database lost), each goes again after its lease.
 */
static void
settle(struct relay *r)
{
	struct event_lease *l;
	struct delivery	**in, *d;
	int		 i, j, n, nl, stmts, ok, status;

	l = calloc((size_t)r->nslots, sizeof(*l));
	in = calloc((size_t)r->nslots, sizeof(*in));
	while (r->done > 0 && l != NULL && in != NULL) {
		db_batch_reset(&r->batch);
		n = stmts = 0;
		ok = 1;
		/* The delivered ones, one status at a time. */
		for (i = 0; ok && i < r->nslots &&
		    stmts + EVENT_SETTLE_STATEMENTS < DB_BATCH_MAX; i++) {
			d = &r->slots[i];
			if (d->job != JOB_DONE ||
			    d->outcome != EVENT_DELIVERED)
				continue;
			status = (int)d->status;
			for (j = 0; j < n; j++)
				if (in[j]->outcome == EVENT_DELIVERED &&
				    in[j]->status == status)
					break;
			if (j < n)
				continue;	/* in that status's group */
			nl = 0;
			for (j = i; j < r->nslots; j++)
				if (r->slots[j].job == JOB_DONE &&
				    r->slots[j].outcome == EVENT_DELIVERED &&
				    r->slots[j].status == status) {
					in[n++] = &r->slots[j];
					l[nl].id = r->slots[j].ev.id;
					l[nl++].token = r->slots[j].token;
				}
			ok = events_batch_settle_delivered(&r->batch, l, nl,
			    status) == 0;
			stmts += EVENT_SETTLE_STATEMENTS;
		}
		/* Every other, on its own. */
		for (i = 0; ok && i < r->nslots &&
		    stmts + EVENT_SETTLE_STATEMENTS < DB_BATCH_MAX; i++) {
			d = &r->slots[i];
			if (d->job != JOB_DONE || d->outcome == EVENT_DELIVERED)
				continue;
			in[n++] = d;
			ok = events_batch_settle(&r->batch, &d->ev, d->token,
			    d->outcome, (int)d->status, d->err, d->delay_ms,
			    r->conf->event_max_age_ms) == 0;
			stmts += EVENT_SETTLE_STATEMENTS;
		}
		if (ok)
			ok = db_batch_commit(&r->batch) == 0 &&
			    run_batch(r) == DB_OK;
		db_batch_reset(&r->batch);
		for (i = 0; i < n; i++)
			settled(r, in[i], ok);
	}
	if (r->done > 0) {		/* out of memory */
		for (i = 0; i < r->nslots; i++)
			if (r->slots[i].job == JOB_DONE)
				settled(r, &r->slots[i], 0);
	}
	free(l);
	free(in);
}

/*
 * Settle what ended once relay_concurrency deliveries wait, or the first
 * waited RELAY_SETTLE_MS, or none is in flight, or the relay stops.
 */
static void
settle_due(struct relay *r)
{
	long long	 first = 0;
	int		 i;

	if (r->done == 0)
		return;
	if (r->done < r->conc && r->flight > 0 && !relay_stop) {
		for (i = 0; i < r->nslots; i++)
			if (r->slots[i].job == JOB_DONE && (first == 0 ||
			    r->slots[i].ended_ms < first))
				first = r->slots[i].ended_ms;
		if (mono_ms() - first < RELAY_SETTLE_MS)
			return;
	}
	settle(r);
}

/* Drive the transfers; take how those that ended did. */
static void
drive(struct relay *r)
{
	struct delivery	*d;
	CURLMsg		*m;
	int		 running, left;

	curl_multi_perform(r->multi, &running);
	while ((m = curl_multi_info_read(r->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		d = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&d);
		if (d == NULL)
			continue;
		ended(r, d, m->data.result);
	}
}

static int
load_key(struct relay *r, const struct conf *c)
{
	char	 err[256];

	if (webhook_key_parse(c->webhook_secret, &r->key, err,
	    sizeof(err)) == -1) {
		log_warnx("relay: %s", err);
		return -1;
	}
	return 0;
}

/* SIGHUP: read the configuration again; keep the old one if it fails. */
static void
reload(struct relay *r)
{
	struct conf	*nc;
	char		 err[512];

	relay_reload = 0;
	notify_reloading();
	nc = calloc(1, sizeof(*nc));
	if (nc == NULL || conf_load(nc, r->conf_path, err, sizeof(err)) == -1 ||
	    nc->webhook_url == NULL) {
		log_warnx("relay: reload: %s; the old configuration stays",
		    nc == NULL ? "out of memory" : nc->webhook_url == NULL &&
		    err[0] == '\0' ? "no webhook_url" : err);
		if (nc != NULL)
			conf_clear(nc);
		free(nc);
		notify_ready();
		return;
	}
	if (load_key(r, nc) == -1) {
		conf_clear(nc);
		free(nc);
		notify_ready();
		return;
	}
	db_disconnect(&r->db);
	conf_clear(r->conf);
	free(r->conf);
	r->conf = nc;
	db_init(&r->db, nc);
	log_set_facility(nc->log_facility);
	log_set_json(nc->log_format == LOG_FORMAT_JSON);
	log_init("idemorders", nc->log_syslog, nc->log_level);
	r->disabled = endpoint_disabled(r) == 1;
	r->next_poll_ms = 0;
	log_info("relay: configuration reloaded: endpoint %s%s",
	    nc->webhook_url, r->disabled ? " (disabled: it answered 410)" : "");
	notify_ready();
}

/* Set up signals, the multi handle and the slots. */
static int
relay_open(struct relay *r)
{
	struct sigaction sa;
	int		 i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (gethostname(r->host, sizeof(r->host) - 1) == -1)
		snprintf(r->host, sizeof(r->host), "relay");
	srandom((unsigned int)(getpid() ^ time(NULL)));
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -1;
	r->multi = curl_multi_init();
	r->conc = r->conf->relay_concurrency;
	r->nslots = (RELAY_AHEAD + 1) * r->conc;
	r->slots = calloc((size_t)r->nslots, sizeof(*r->slots));
	if (r->multi == NULL || r->slots == NULL)
		return -1;
	curl_multi_setopt(r->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
	    (long)r->conc);
	for (i = 0; i < r->nslots; i++) {
		event_row_init(&r->slots[i].ev);
		buf_init(&r->slots[i].body, 17 * 1024 * 1024);
		r->slots[i].easy = curl_easy_init();
		if (r->slots[i].easy == NULL)
			return -1;
	}
	db_batch_init(&r->batch);
	db_init(&r->db, r->conf);
	return 0;
}

/* Release everything. */
static void
relay_close(struct relay *r)
{
	int	 i;

	for (i = 0; r->slots != NULL && i < r->nslots; i++) {
		if (r->slots[i].easy != NULL)
			curl_easy_cleanup(r->slots[i].easy);
		curl_slist_free_all(r->slots[i].hdrs);
		event_row_clear(&r->slots[i].ev);
		buf_free(&r->slots[i].body);
	}
	free(r->slots);
	if (r->multi != NULL)
		curl_multi_cleanup(r->multi);
	curl_global_cleanup();
	db_batch_clear(&r->batch);
	db_disconnect(&r->db);
	explicit_bzero(&r->key, sizeof(r->key));
}

/*
 * Deliver events until SIGTERM, then finish the deliveries in flight.
 * conf (the caller's, loaded from conf_path) is freed here.  Returns 0
 * after a clean stop, -1 when the relay could not start.
 */
int
relay_run(const char *conf_path, struct conf *conf)
{
	struct relay	 r;
	long long	 now, wait;
	int		 n, room, rc = -1;

	memset(&r, 0, sizeof(r));
	r.conf_path = conf_path;
	r.conf = conf;
	if (load_key(&r, conf) == -1 || relay_open(&r) == -1) {
		log_warnx("relay: cannot start");
		goto out;
	}
	notify_init();
	log_info("relay: delivering events to %s (%d at once, timeout %ld "
	    "ms, polling every %ld ms while idle)", conf->webhook_url,
	    r.conc, conf->webhook_timeout_ms, conf->event_poll_ms);
	r.disabled = endpoint_disabled(&r) == 1;
	if (r.disabled)
		log_warnx("relay: %s answered 410 Gone before: disabled until "
		    "`idemorders events enable`", conf->webhook_url);
	notify_ready();
	while (!relay_stop || held(&r) > 0) {
		if (relay_reload)
			reload(&r);
		now = mono_ms();
		if (relay_stop && !r.stopping) {
			r.stopping = 1;
			log_info("relay: %s: finishing %d deliveries in flight",
			    strsignal(relay_stop), r.flight);
			notify_stopping();
		}
		if (!relay_stop && room_now(&r) > 0 && now >= r.next_poll_ms) {
			/* An order's next event is claimable once recorded. */
			settle(&r);
			room = room_now(&r);
			r.next_poll_ms = now + r.conf->event_poll_ms;
			if (r.disabled)
				r.disabled = endpoint_disabled(&r) != 0;
			n = r.disabled || room <= 0 ? 0 : claim(&r, room);
			/* All it asked for: more may wait, claim ahead. */
			r.ahead = n > 0 && n == room;
			if (r.ahead)
				r.next_poll_ms = now;
		}
		start_queued(&r);
		drive(&r);
		settle_due(&r);
		start_queued(&r);
		now = mono_ms();
		wait = r.next_poll_ms - now;
		if (room_now(&r) <= 0 || wait > RELAY_WAKE_MS ||
		    relay_stop)
			wait = RELAY_WAKE_MS;
		if (r.done > 0 && wait > RELAY_SETTLE_MS)
			wait = RELAY_SETTLE_MS;
		if (r.queued > 0 && r.flight < r.conc)
			wait = 0;
		if (wait < 0)
			wait = 0;
		curl_multi_poll(r.multi, NULL, 0, (int)wait, NULL);
		drive(&r);
		settle_due(&r);
	}
	log_info("relay: stopped (%s)", strsignal(relay_stop));
	rc = 0;
out:
	relay_close(&r);
	conf_clear(r.conf);
	free(r.conf);
	return rc;
}
