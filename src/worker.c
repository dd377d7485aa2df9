#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netdb.h>
#ifdef HAVE_PRCTL
#include <sys/prctl.h>
#endif

#include <fcgiapp.h>
#include <openssl/crypto.h>

#include "buf.h"
#include "conf.h"
#include "db.h"
#include "log.h"
#include "metrics.h"
#include "mono.h"
#include "peers.h"
#include "problem.h"
#include "response.h"
#include "worker.h"

#define DRAIN_CHUNK	16384

static volatile sig_atomic_t worker_quit;

/* SIGTERM: finish the request in hand, then leave. */
static void
worker_sigterm(int sig)
{
	(void)sig;
	worker_quit = 1;
	FCGX_ShutdownPending();
}

/*
 * Read the request body into body, at most max bytes.  The rest is read
 * and thrown away: the web server expects FCGI_STDIN read to its end,
 * even for a rejected body.  Returns 1 when the body was too large.
 */
static int
read_body(FCGX_Request *fr, size_t max, struct buf *body)
{
	char		 chunk[DRAIN_CHUNK];
	const char	*cl;
	int		 n, too_large = 0;

	cl = FCGX_GetParam("CONTENT_LENGTH", fr->envp);
	if (cl != NULL && strtoull(cl, NULL, 10) > max)
		too_large = 1;
	for (;;) {
		n = FCGX_GetStr(chunk, sizeof(chunk), fr->in);
		if (n <= 0)
			break;
		if (too_large)
			continue;
		if (buf_add(body, chunk, (size_t)n) != BUF_OK) {
			too_large = 1;
			buf_reset(body);
		}
	}
	if (body->len > max) {
		too_large = 1;
		buf_reset(body);
	}
	return too_large;
}

/* Write the response to the web server. */
static void
write_response(FCGX_Request *fr, const struct response *r)
{
	FCGX_FPrintF(fr->out, "Status: %d %s\r\nCache-Control: no-store\r\n"
	    "Content-Length: %lu\r\n", r->status, http_reason(r->status),
	    (unsigned long)r->body.len);
	if (r->headers.len > 0)
		FCGX_PutStr(r->headers.p, (int)r->headers.len, fr->out);
	FCGX_PutStr("\r\n", 2, fr->out);
	if (r->body.len > 0)
		FCGX_PutStr(r->body.p, (int)r->body.len, fr->out);
}

/* Compare got with secret in constant time (only the length can show). */
static int
secret_equal(const char *got, const char *secret)
{
	size_t	 len;

	len = strlen(secret);
	return strlen(got) == len && CRYPTO_memcmp(got, secret, len) == 0;
}

/*
 * Tell whether the request carries the frontend secret: the current one
 * or, during a rotation, the previous one (the second line of
 * frontend_secret_file).  Both are compared, whichever matches.
 */
static int
frontend_secret_ok(const struct conf *conf, FCGX_ParamArray env)
{
	const char	*got;
	int		 ok;

	got = FCGX_GetParam(conf->frontend_secret_var, env);
	if (got == NULL)
		return 0;
	ok = secret_equal(got, conf->frontend_secret);
	if (conf->frontend_secret_prev != NULL)
		ok |= secret_equal(got, conf->frontend_secret_prev);
	return ok;
}

/* Serve one accepted request and log it. */
static void
serve_request(FCGX_Request *fr, const struct conf *conf,
    const struct worker_ops *ops, struct db *db, struct buf *body,
    struct response *resp)
{
	struct request		 req;
	struct log_request	 lr;
	struct timespec		 start;
	enum handler_result	 result;
	FCGX_ParamArray		 env = fr->envp;

	clock_gettime(CLOCK_MONOTONIC, &start);
	metrics_request_begin();
	memset(&req, 0, sizeof(req));
	buf_reset(body);
	response_reset(resp);
	req.method = FCGX_GetParam("REQUEST_METHOD", env);
	req.uri = FCGX_GetParam("REQUEST_URI", env);
	req.principal = FCGX_GetParam(conf->principal_var, env);
	if (req.principal != NULL && req.principal[0] == '\0')
		req.principal = NULL;
	req.remote_addr = FCGX_GetParam("REMOTE_ADDR", env);
	req.content_type = FCGX_GetParam("CONTENT_TYPE", env);
	req.idempotency_key = FCGX_GetParam("HTTP_IDEMPOTENCY_KEY", env);
#ifdef ENABLE_FAULT_INJECTION
	req.fault = FCGX_GetParam("HTTP_X_IDEMORDERS_FAULT", env);
#endif
	req.body_too_large = read_body(fr, conf->max_body_bytes, body);
	req.body = body->p;
	req.body_len = body->len;

	db->last_class = DB_OK;		/* the metrics count this request's */
	/*
	 * With a frontend secret, a request that does not carry it came
	 * from someone who connected to the socket without the web server
	 * (e.g. a script running as the web server's user): it is refused
	 * before anything else, _health included, and its principal is
	 * not believed.
	 */
	if (conf->frontend_secret != NULL && !frontend_secret_ok(conf, env)) {
		response_error(resp, PROBLEM_FRONTEND_SECRET_MISMATCH,
		    "the request did not come through the configured web "
		    "server");
		req.principal = NULL;
		result = HANDLER_ANSWER;
	} else
		result = ops->handle(ops->needs_db ? db : NULL, conf, &req,
		    resp);
	if (ops->finish != NULL)
		ops->finish(&req, resp);
	if (result == HANDLER_DROP) {
		/* Fault injection: the answer is lost on the way. */
		shutdown(fr->ipcFd, SHUT_RDWR);
		fr->keepConnection = 0;
		resp->outcome = OUTCOME_DROPPED;
	} else
		write_response(fr, resp);
	memset(&lr, 0, sizeof(lr));
	lr.method = req.method;
	lr.uri = req.uri;
	lr.principal = req.principal;
	lr.key = req.log_key[0] != '\0' ? req.log_key : NULL;
	lr.code = problem_code_name(resp->code);
	lr.outcome = outcome_name(resp->outcome);
	lr.status = result == HANDLER_DROP ? 0 : resp->status;
	lr.attempts = req.attempts;
	lr.duration_ms = mono_since_ms(&start);
	log_request(&lr);
	metrics_request_end(lr.status, resp->outcome, req.attempts,
	    lr.duration_ms);
	metrics_operation_end(req.operation, lr.status, resp->outcome);
	metrics_db_error(db->last_class);
}

/*
 * Tell whether a kept connection has a request (or its end) waiting,
 * without blocking.
 */
static int
conn_ready(int fd)
{
	struct pollfd	 pfd;

	pfd.fd = fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	return poll(&pfd, 1, 0) == 1;
}

/*
 * Close a kept connection at once.  FCGX_Free() would shut it down and
 * wait up to 2 s for the web server to close its side, which an idle
 * pooled connection never does.
 */
static void
conn_drop(FCGX_Request *fr)
{
	FCGX_Free(fr, 0);
	if (fr->ipcFd >= 0)
		close(fr->ipcFd);
	fr->ipcFd = -1;
}

/*
 * How long a new connection waits for a worker without a kept one before
 * a worker holding an idle kept connection gives that up for it.
 */
#define SWAP_WAIT_MS	200
#define SWAP_POLL_MS	10

enum accept_result {
	ACCEPT_OK,
	ACCEPT_NONE,	/* another worker won it, or it was aborted */
	ACCEPT_CLOSED,	/* the supervisor shut the listening socket */
	ACCEPT_FAILED,	/* e.g. out of file descriptors */
};

/*
 * Take the next connection from the listening socket, which is
 * non-blocking.  The worker accepts every connection itself; libfcgi
 * never sees the listening socket.
 */
static enum accept_result
accept_conn(const struct conf *conf, int listen_fd, int *fdp)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof(ss);
	char			 addr[64];
	int			 fd;

	fd = accept4(listen_fd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
	if (fd == -1) {
		switch (errno) {
		case EAGAIN:
#if EWOULDBLOCK != EAGAIN
		case EWOULDBLOCK:
#endif
		case EINTR:
		case ECONNABORTED:
		case EPROTO:
			return ACCEPT_NONE;
		case EINVAL:
			return ACCEPT_CLOSED;
		default:
			log_warn("accept");
			return ACCEPT_FAILED;
		}
	}
	/* allow_peers: only the listed web servers reach a TCP socket. */
	if (conf->allow_peers != NULL && (ss.ss_family == AF_INET ||
	    ss.ss_family == AF_INET6) &&
	    !peers_allowed(conf->allow_peers, (struct sockaddr *)&ss, len)) {
		if (getnameinfo((struct sockaddr *)&ss, len, addr,
		    sizeof(addr), NULL, 0, NI_NUMERICHOST) != 0)
			snprintf(addr, sizeof(addr), "?");
		log_warnx("refused a connection from %s: not in allow_peers",
		    addr);
		close(fd);
		return ACCEPT_NONE;
	}
	*fdp = fd;
	return ACCEPT_OK;
}

/* A worker's state, from start-up to exit. */
struct worker {
	const struct conf	*conf;
	const struct worker_ops	*ops;
	int			 listen_fd;
	FCGX_Request		 fr;		/* fr.ipcFd: the kept connection */
	struct db		 db;
	struct buf		 body;
	struct response		 resp;
	struct pollfd		 pfd[2];	/* listening socket, kept one */
	int			 nfd;		/* of pfd in use */
	sigset_t		 waitmask;	/* while in ppoll() */
	long			 served;
	long long		 waiting_since;	/* a new connection, ms */
	int			 status;	/* WORKER_EXIT_* */
};

/* What the loop does next. */
enum worker_step {
	STEP_SERVE,	/* read the next request on fr */
	STEP_AGAIN,	/* wait again */
	STEP_STOP,	/* leave; w->status says why */
};

/*
 * Install the worker's signal handlers and block SIGTERM and SIGINT but
 * while waiting with w->waitmask.
 */
static void
worker_signals(struct worker *w)
{
	struct sigaction	 sa;
	sigset_t		 block;

#ifdef HAVE_PRCTL
	prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = worker_sigterm;		/* no SA_RESTART */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_SETMASK, &block, NULL);
	sigemptyset(&w->waitmask);
}

/*
 * Set up the database connection, the buffers and libfcgi.  Returns 0,
 * or -1 when libfcgi cannot start (worker_clear() releases the rest).
 */
static int
worker_setup(struct worker *w)
{
	srandom((unsigned int)(getpid() ^ time(NULL)));
	db_init(&w->db, w->conf);
	if (w->ops->needs_db)
		db_connect(&w->db);	/* a failure is retried per request */
	buf_init(&w->body, w->conf->max_body_bytes);
	response_init(&w->resp);
	/* No listening socket for libfcgi: accept_conn() takes them all. */
	if (FCGX_Init() != 0 || FCGX_InitRequest(&w->fr, -1,
	    FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		log_warnx("FastCGI initialisation failed");
		return -1;
	}
	/* The listening socket, and a kept connection (fr.ipcFd). */
	w->pfd[0].fd = w->listen_fd;
	w->pfd[0].events = POLLIN;
	w->pfd[1].events = POLLIN;
	return 0;
}

/*
 * Wait for the listening socket or the kept connection, with signals
 * let in.  Idle for a second with a database read left open, or while
 * draining, it ends the read, or the worker.
 */
static enum worker_step
worker_wait(struct worker *w, int draining)
{
	struct timespec	 idle = { 1, 0 };
	int		 n;

	w->nfd = 1;
	if (w->fr.ipcFd >= 0) {
		w->pfd[1].fd = w->fr.ipcFd;
		w->nfd = 2;
	}
	w->pfd[0].revents = w->pfd[1].revents = 0;
	n = ppoll(w->pfd, w->nfd, w->db.read_open || draining ? &idle : NULL,
	    &w->waitmask);
	if (n == -1) {
		if (errno == EINTR)
			return STEP_AGAIN;
		/* Not a recycle: the supervisor's rate limit applies. */
		log_warn("ppoll");
		w->status = WORKER_EXIT_FAILURE;
		return STEP_STOP;
	}
	if (worker_quit)
		return STEP_STOP;
	if (n == 0) {
		if (draining)
			return STEP_STOP;	/* the web server left it idle */
		db_idle(&w->db);
		return STEP_AGAIN;
	}
	/*
	 * A shut listening socket stays readable, and ppoll() returns for
	 * it before a pending SIGTERM is delivered: stop here.
	 */
	if (w->pfd[0].revents & (POLLHUP | POLLERR | POLLNVAL))
		return STEP_STOP;
	if (w->pfd[0].revents == 0)
		w->waiting_since = 0;
	return STEP_SERVE;
}

/*
 * After a wait that found only a new connection: swap an idle kept one
 * for it (draining: make way for a fresh worker), unless a request came
 * in on the kept one since, or a worker without one may still take it.
 */
static enum worker_step
worker_take_conn(struct worker *w, int draining)
{
	struct timespec		 swap_poll = { 0, SWAP_POLL_MS * 1000000L };
	enum accept_result	 ar;
	int			 fd;

	if (w->nfd == 2 && w->pfd[1].revents != 0)
		return STEP_SERVE;	/* a request on the kept one */
	if (w->nfd == 2) {
		if (conn_ready(w->fr.ipcFd))
			return STEP_AGAIN;
		if (w->waiting_since == 0)
			w->waiting_since = mono_ms();
		if (mono_ms() - w->waiting_since < SWAP_WAIT_MS) {
			/* Watch the kept one meanwhile. */
			ppoll(&w->pfd[1], 1, &swap_poll, &w->waitmask);
			return STEP_AGAIN;
		}
		if (draining)
			return STEP_STOP;
	}
	w->waiting_since = 0;
	ar = accept_conn(w->conf, w->listen_fd, &fd);
	if (ar == ACCEPT_NONE)
		return STEP_AGAIN;
	if (ar == ACCEPT_CLOSED)
		return STEP_STOP;
	if (ar == ACCEPT_FAILED) {
		w->status = WORKER_EXIT_FAILURE;
		return STEP_STOP;
	}
	if (w->fr.ipcFd >= 0)
		conn_drop(&w->fr);
	w->fr.ipcFd = fd;
	/* FCGX_Accept_r() must not close it as finished. */
	w->fr.keepConnection = 1;
	return STEP_SERVE;
}

/*
 * With a connection in hand FCGX_Accept_r reads its next request and
 * the request is served; a closed or broken connection is closed there.
 */
static void
worker_serve_next(struct worker *w)
{
	if (FCGX_Accept_r(&w->fr) < 0)
		return;
	serve_request(&w->fr, w->conf, w->ops, &w->db, &w->body, &w->resp);
	FCGX_Finish_r(&w->fr);
	w->served++;
}

/* Release what the worker holds; a kept connection is closed. */
static void
worker_clear(struct worker *w)
{
	conn_drop(&w->fr);
	response_clear(&w->resp);
	buf_free(&w->body);
	db_disconnect(&w->db);
}

/*
 * The worker's life: handlers, one DB connection, then accept until
 * asked to stop or max_requests are served.  Signals are blocked except
 * while waiting in ppoll(), so SIGTERM either interrupts the wait or is
 * seen before the next one: a request in hand always finishes.
 *
 * A web server that keeps its connections (FCGI_KEEP_CONN, Apache's
 * enablereuse=on) sends the next request on the same connection, so a
 * worker holding one waits on it as well as on the listening socket.
 * When a new connection waits while the kept one is idle, a worker
 * without a kept connection takes it; when none has within SWAP_WAIT_MS,
 * a worker closes its idle one and takes the new one: the web server
 * reconnects when it next needs a connection it finds closed, and no
 * request waits long for a worker stuck on an idle connection.  (Closing
 * a kept connection races a request the web server may be sending on
 * it, so it is the last resort.)
 *
 * A worker that served its max_requests while holding a kept connection
 * does not close it at once: the web server hands a connection back to
 * its pool after each answer and may send the next request on it before
 * it sees the close (Apache answers 503, AH01067).  The worker takes no
 * new connection, serves the kept one, and ends when the web server
 * closes it or leaves it idle for a second, or when a new connection
 * has waited SWAP_WAIT_MS while it is idle.
 */
int
worker_main(const struct conf *conf, int listen_fd,
    const struct worker_ops *ops)
{
	struct worker		 w;
	enum worker_step	 step;
	int			 draining;

	memset(&w, 0, sizeof(w));
	w.conf = conf;
	w.ops = ops;
	w.listen_fd = listen_fd;
	w.fr.ipcFd = -1;		/* until FCGX_InitRequest() */
	w.status = WORKER_EXIT_RECYCLE;
	worker_signals(&w);
	if (getppid() == 1)
		return WORKER_EXIT_RECYCLE;	/* the master is already gone */
	if (worker_setup(&w) == -1) {
		worker_clear(&w);
		return WORKER_EXIT_FAILURE;
	}
	while (!worker_quit) {
		draining = conf->max_requests > 0 &&
		    w.served >= conf->max_requests;
		if (draining && w.fr.ipcFd < 0)
			break;
		step = worker_wait(&w, draining);
		if (step == STEP_SERVE)
			step = worker_take_conn(&w, draining);
		if (step == STEP_STOP)
			break;
		if (step == STEP_SERVE)
			worker_serve_next(&w);
	}
	/* Stopping or recycled: a kept connection is closed. */
	worker_clear(&w);
	return w.status;
}
