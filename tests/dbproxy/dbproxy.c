/*
 * dbproxy -- a TCP proxy that breaks database connections on command.
 *
 *	dbproxy -l PORT -u UPSTREAM -c CONTROL_PORT [-p PIDFILE]
 *
 * Listens on 127.0.0.1:PORT and forwards every connection to UPSTREAM
 * (HOST:PORT, or the path of a unix socket), one process, one poll()
 * loop.  A test commands it over 127.0.0.1:CONTROL_PORT, one line per
 * command, one line of answer ("ok ..." or "error ..."):
 *
 *	pass			forward everything (the default); clears
 *				hold, delay, refuse, stalls and any armed cut
 *	cut			close every proxied connection now
 *	cut-after-bytes N server|client
 *				forward N more bytes in that direction,
 *				then close the connection that carried them
 *				(N = 0: the next bytes are not forwarded)
 *	hold			black hole: keep connections open, forward
 *				nothing, new connections are held too
 *	delay MS		forward each chunk MS milliseconds late
 *	refuse			close new connections at once
 *	stall-after-login	new connections forward the server's greeting,
 *				the client's login packet and the server's
 *				answer, then nothing the client sends: a
 *				server that hangs after the handshake
 *	stats			counters and the current mode
 *	trace on|off		log the size of every chunk read to stderr
 *
 * A test tool, not installed.  It trusts its control port.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAIRS	256
#define MAX_CONTROL	8
#define CHUNK_SIZE	16384
#define QUEUE_MAX	(4 * 1024 * 1024)
#define LINE_MAX_LEN	256

enum dir {
	C2S = 0,		/* client to server */
	S2C = 1,		/* server to client */
};

struct chunk {
	struct chunk	*next;
	long long	 due_ms;	/* not forwarded before */
	size_t		 len, off;
	char		 data[];
};

struct queue {
	struct chunk	*head, *tail;
	size_t		 bytes;
	int		 eof;		/* the source closed */
};

struct pair {
	int		 fd[2];		/* [0] client, [1] server */
	struct queue	 q[2];		/* indexed by enum dir */
	unsigned long	 id;
	int		 stall;		/* stall after the login packet */
	long long	 login_left;	/* its bytes not yet forwarded, -1
					   before its header is read */
};

struct control {
	int		 fd;
	char		 line[LINE_MAX_LEN];
	size_t		 len;
};

struct proxy {
	int		 listen_fd, control_fd;
	const char	*upstream;
	struct pair	*pairs[MAX_PAIRS];
	struct control	 controls[MAX_CONTROL];
	int		 hold, refuse, trace, stall_login;
	long		 delay_ms;
	long long	 cut_left[2];	/* bytes before a cut, -1 unarmed */
	unsigned long	 accepted, refused, cuts, next_id;
	unsigned long long moved[2];
};

static volatile sig_atomic_t quit;

/* Print a message and exit. */
static void
fatalx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	fprintf(stderr, "dbproxy: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

/* Note a handled signal. */
static void
on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

/* The monotonic clock in milliseconds. */
static long long
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Make fd non-blocking and close-on-exec. */
static void
set_nonblock(int fd)
{
	int	 fl;

	fl = fcntl(fd, F_GETFL);
	if (fl != -1)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* Listen on 127.0.0.1:port. */
static int
listen_local(const char *port)
{
	struct sockaddr_in	 sin;
	char			*end;
	long			 p;
	int			 fd, one = 1;

	p = strtol(port, &end, 10);
	if (*port == '\0' || *end != '\0' || p < 1 || p > 65535)
		fatalx("bad port \"%s\"", port);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd == -1)
		fatalx("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)p);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		fatalx("bind 127.0.0.1:%s: %s", port, strerror(errno));
	if (listen(fd, 128) == -1)
		fatalx("listen: %s", strerror(errno));
	set_nonblock(fd);
	return fd;
}

/* Connect to the upstream (blocking: it is local); -1 on failure. */
static int
connect_upstream(const char *up)
{
	struct sockaddr_un	 sun;
	struct sockaddr_in	 sin;
	char			 host[64];
	const char		*colon;
	long			 p;
	int			 fd, one = 1;

	if (up[0] == '/') {
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		if (strlen(up) >= sizeof(sun.sun_path))
			return -1;
		strcpy(sun.sun_path, up);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd == -1)
			return -1;
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
			close(fd);
			return -1;
		}
		set_nonblock(fd);
		return fd;
	}
	colon = strrchr(up, ':');
	if (colon == NULL || (size_t)(colon - up) >= sizeof(host))
		return -1;
	memcpy(host, up, (size_t)(colon - up));
	host[colon - up] = '\0';
	p = strtol(colon + 1, NULL, 10);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)p);
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	set_nonblock(fd);
	return fd;
}

/* Drop every queued chunk of q. */
static void
queue_clear(struct queue *q)
{
	struct chunk	*c, *next;

	for (c = q->head; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	q->head = q->tail = NULL;
	q->bytes = 0;
}

/* Close both ends of pair slot i and free it. */
static void
pair_close(struct proxy *px, int i)
{
	struct pair	*p = px->pairs[i];

	if (p == NULL)
		return;
	close(p->fd[0]);
	close(p->fd[1]);
	queue_clear(&p->q[C2S]);
	queue_clear(&p->q[S2C]);
	free(p);
	px->pairs[i] = NULL;
}

/* Accept one client and connect it to the upstream. */
static void
accept_client(struct proxy *px)
{
	struct pair	*p;
	int		 fd, up, i, one = 1;

	fd = accept(px->listen_fd, NULL, NULL);
	if (fd == -1)
		return;
	px->accepted++;
	if (px->refuse) {
		px->refused++;
		close(fd);
		return;
	}
	for (i = 0; i < MAX_PAIRS && px->pairs[i] != NULL; i++)
		;
	if (i == MAX_PAIRS) {
		fprintf(stderr, "dbproxy: too many connections\n");
		close(fd);
		return;
	}
	up = connect_upstream(px->upstream);
	if (up == -1) {
		fprintf(stderr, "dbproxy: connect %s: %s\n", px->upstream,
		    strerror(errno));
		close(fd);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		close(fd);
		close(up);
		return;
	}
	set_nonblock(fd);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	p->fd[0] = fd;
	p->fd[1] = up;
	p->id = ++px->next_id;
	p->stall = px->stall_login;
	p->login_left = -1;
	px->pairs[i] = p;
}

/* Read what the source of direction d has; 0, or -1 to close the pair. */
static int
pair_read(struct proxy *px, struct pair *p, enum dir d)
{
	struct queue	*q = &p->q[d];
	struct chunk	*c;
	ssize_t		 n;

	c = malloc(sizeof(*c) + CHUNK_SIZE);
	if (c == NULL)
		return -1;
	n = read(p->fd[d == C2S ? 0 : 1], c->data, CHUNK_SIZE);
	if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
		free(c);
		return 0;
	}
	if (n <= 0) {
		free(c);
		q->eof = 1;
		return q->head == NULL ? -1 : 0;
	}
	if (px->trace)
		fprintf(stderr, "dbproxy: conn %lu %s %zd bytes\n", p->id,
		    d == C2S ? "client->server" : "server->client", n);
	c->next = NULL;
	c->len = (size_t)n;
	c->off = 0;
	c->due_ms = now_ms() + px->delay_ms;
	if (q->tail != NULL)
		q->tail->next = c;
	else
		q->head = c;
	q->tail = c;
	q->bytes += (size_t)n;
	return 0;
}

/* Whether direction d of p forwards nothing more (stalled after login). */
static int
stalled(const struct pair *p, int d)
{
	return d == C2S && p->stall && p->login_left == 0;
}

/*
 * Write the due chunks of direction d to its destination; 0, or -1 to
 * close the pair (an error, the source's end, or an armed cut reached).
 */
static int
pair_write(struct proxy *px, struct pair *p, enum dir d)
{
	struct queue	*q = &p->q[d];
	struct chunk	*c;
	long long	 now = now_ms();
	size_t		 len;
	ssize_t		 n;

	while (!px->hold && q->head != NULL && q->head->due_ms <= now) {
		c = q->head;
		len = c->len - c->off;
		if (d == C2S && p->stall) {
			/* The login packet: 3 bytes of length, 1 of sequence. */
			if (p->login_left == -1 && c->off == 0 && c->len >= 3)
				p->login_left = 4 + ((long long)(unsigned char)
				    c->data[0] | (unsigned char)c->data[1] << 8 |
				    (unsigned char)c->data[2] << 16);
			if (p->login_left <= 0)
				return 0;
			if ((long long)len > p->login_left)
				len = (size_t)p->login_left;
		}
		if (px->cut_left[d] == 0) {
			px->cut_left[d] = -1;
			px->cuts++;
			return -1;
		}
		if (px->cut_left[d] > 0 && (long long)len > px->cut_left[d])
			len = (size_t)px->cut_left[d];
		n = write(p->fd[d == C2S ? 1 : 0], c->data + c->off, len);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0)
			return -1;
		px->moved[d] += (unsigned long long)n;
		if (d == C2S && p->stall)
			p->login_left -= n;
		if (px->cut_left[d] > 0) {
			px->cut_left[d] -= n;
			if (px->cut_left[d] == 0) {
				px->cut_left[d] = -1;
				px->cuts++;
				return -1;
			}
		}
		c->off += (size_t)n;
		q->bytes -= (size_t)n;
		if (c->off == c->len) {
			q->head = c->next;
			if (q->head == NULL)
				q->tail = NULL;
			free(c);
		}
	}
	if (q->head == NULL && q->eof)
		return -1;
	return 0;
}

/* Count the open proxied connections. */
static int
open_pairs(struct proxy *px)
{
	int	 i, n = 0;

	for (i = 0; i < MAX_PAIRS; i++)
		if (px->pairs[i] != NULL)
			n++;
	return n;
}

/* Run one control command line; write the answer into out. */
static void
control_run(struct proxy *px, char *line, char *out, size_t outsz)
{
	char		*cmd, *arg1, *arg2, *end, *save;
	long long	 n;
	int		 i, closed;

	cmd = strtok_r(line, " \t\r", &save);
	arg1 = strtok_r(NULL, " \t\r", &save);
	arg2 = strtok_r(NULL, " \t\r", &save);
	if (cmd == NULL) {
		snprintf(out, outsz, "error empty command");
		return;
	}
	if (strcmp(cmd, "pass") == 0) {
		px->hold = px->refuse = px->stall_login = 0;
		for (i = 0; i < MAX_PAIRS; i++)
			if (px->pairs[i] != NULL)
				px->pairs[i]->stall = 0;
		px->delay_ms = 0;
		px->cut_left[C2S] = px->cut_left[S2C] = -1;
		snprintf(out, outsz, "ok pass");
	} else if (strcmp(cmd, "cut") == 0) {
		closed = 0;
		for (i = 0; i < MAX_PAIRS; i++)
			if (px->pairs[i] != NULL) {
				pair_close(px, i);
				closed++;
			}
		px->cuts += (unsigned long)closed;
		snprintf(out, outsz, "ok cut %d", closed);
	} else if (strcmp(cmd, "cut-after-bytes") == 0) {
		if (arg1 == NULL || arg2 == NULL) {
			snprintf(out, outsz, "error usage: cut-after-bytes N "
			    "server|client");
			return;
		}
		n = strtoll(arg1, &end, 10);
		if (*end != '\0' || n < 0) {
			snprintf(out, outsz, "error bad byte count");
			return;
		}
		if (strcmp(arg2, "server") == 0)
			px->cut_left[S2C] = n;
		else if (strcmp(arg2, "client") == 0)
			px->cut_left[C2S] = n;
		else {
			snprintf(out, outsz, "error direction is server or "
			    "client");
			return;
		}
		snprintf(out, outsz, "ok cut-after-bytes %lld %s", n, arg2);
	} else if (strcmp(cmd, "hold") == 0) {
		px->hold = 1;
		snprintf(out, outsz, "ok hold");
	} else if (strcmp(cmd, "delay") == 0) {
		n = arg1 == NULL ? -1 : strtoll(arg1, &end, 10);
		if (arg1 == NULL || *end != '\0' || n < 0 || n > 600000) {
			snprintf(out, outsz, "error usage: delay MS");
			return;
		}
		px->delay_ms = (long)n;
		snprintf(out, outsz, "ok delay %lld", n);
	} else if (strcmp(cmd, "stall-after-login") == 0) {
		px->stall_login = 1;
		snprintf(out, outsz, "ok stall-after-login");
	} else if (strcmp(cmd, "refuse") == 0) {
		px->refuse = 1;
		snprintf(out, outsz, "ok refuse");
	} else if (strcmp(cmd, "trace") == 0) {
		px->trace = arg1 != NULL && strcmp(arg1, "on") == 0;
		snprintf(out, outsz, "ok trace %s", px->trace ? "on" : "off");
	} else if (strcmp(cmd, "stats") == 0) {
		snprintf(out, outsz, "ok open=%d accepted=%lu refused=%lu "
		    "cuts=%lu to_server=%llu to_client=%llu hold=%d "
		    "refuse=%d delay=%ld cut_server=%lld cut_client=%lld",
		    open_pairs(px), px->accepted, px->refused, px->cuts,
		    px->moved[C2S], px->moved[S2C], px->hold, px->refuse,
		    px->delay_ms, px->cut_left[S2C], px->cut_left[C2S]);
	} else
		snprintf(out, outsz, "error unknown command \"%s\"", cmd);
}

/* Read from control client i and answer each complete line. */
static void
control_read(struct proxy *px, int i)
{
	struct control	*cl = &px->controls[i];
	char		 out[512], *nl;
	ssize_t		 n;
	size_t		 linelen;

	n = read(cl->fd, cl->line + cl->len, sizeof(cl->line) - 1 - cl->len);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close(cl->fd);
		cl->fd = -1;
		cl->len = 0;
		return;
	}
	cl->len += (size_t)n;
	cl->line[cl->len] = '\0';
	for (;;) {
		nl = strchr(cl->line, '\n');
		if (nl == NULL)
			break;
		*nl = '\0';
		linelen = (size_t)(nl - cl->line) + 1;
		control_run(px, cl->line, out, sizeof(out) - 1);
		strcat(out, "\n");
		/* Answers are short; a control client reads them. */
		if (write(cl->fd, out, strlen(out)) == -1)
			fprintf(stderr, "dbproxy: control write: %s\n",
			    strerror(errno));
		memmove(cl->line, cl->line + linelen, cl->len - linelen + 1);
		cl->len -= linelen;
	}
	if (cl->len == sizeof(cl->line) - 1) {
		close(cl->fd);
		cl->fd = -1;
		cl->len = 0;
	}
}

/* Accept a control client. */
static void
control_accept(struct proxy *px)
{
	int	 fd, i;

	fd = accept(px->control_fd, NULL, NULL);
	if (fd == -1)
		return;
	for (i = 0; i < MAX_CONTROL; i++)
		if (px->controls[i].fd == -1) {
			set_nonblock(fd);
			px->controls[i].fd = fd;
			px->controls[i].len = 0;
			return;
		}
	close(fd);
}

/* The poll timeout: until the first delayed chunk is due. */
static int
poll_timeout(struct proxy *px)
{
	long long	 now = now_ms(), first = -1, due;
	int		 i, d;

	if (px->hold)
		return -1;
	for (i = 0; i < MAX_PAIRS; i++) {
		if (px->pairs[i] == NULL)
			continue;
		for (d = 0; d < 2; d++) {
			if (px->pairs[i]->q[d].head == NULL ||
			    stalled(px->pairs[i], d))
				continue;
			due = px->pairs[i]->q[d].head->due_ms;
			if (first == -1 || due < first)
				first = due;
		}
	}
	if (first == -1)
		return -1;
	if (first <= now)
		return 0;
	return first - now > INT_MAX ? INT_MAX : (int)(first - now);
}

/* Serve until a signal. */
static void
proxy_loop(struct proxy *px)
{
	struct pollfd	 pfd[2 + MAX_CONTROL + 2 * MAX_PAIRS];
	int		 slot[2 + MAX_CONTROL + 2 * MAX_PAIRS];
	struct pair	*p;
	nfds_t		 n;
	int		 i, d, k, close_it;
	long long	 now;

	while (!quit) {
		n = 0;
		pfd[n].fd = px->listen_fd;
		pfd[n++].events = POLLIN;
		pfd[n].fd = px->control_fd;
		pfd[n++].events = POLLIN;
		for (i = 0; i < MAX_CONTROL; i++) {
			slot[n] = i;
			pfd[n].fd = px->controls[i].fd;
			pfd[n++].events = POLLIN;
		}
		now = now_ms();
		for (i = 0; i < MAX_PAIRS; i++) {
			p = px->pairs[i];
			if (p == NULL)
				continue;
			for (k = 0; k < 2; k++) {
				/* fd k reads for direction k, writes for !k. */
				slot[n] = i;
				pfd[n].fd = p->fd[k];
				pfd[n].events = 0;
				if (!p->q[k].eof && p->q[k].bytes < QUEUE_MAX)
					pfd[n].events |= POLLIN;
				if (!px->hold && p->q[!k].head != NULL &&
				    !stalled(p, !k) &&
				    p->q[!k].head->due_ms <= now)
					pfd[n].events |= POLLOUT;
				n++;
			}
		}
		if (poll(pfd, n, poll_timeout(px)) == -1) {
			if (errno == EINTR)
				continue;
			fatalx("poll: %s", strerror(errno));
		}
		if (pfd[0].revents & POLLIN)
			accept_client(px);
		if (pfd[1].revents & POLLIN)
			control_accept(px);
		for (k = 2; k < 2 + MAX_CONTROL; k++)
			if (pfd[k].fd != -1 && pfd[k].revents != 0)
				control_read(px, slot[k]);
		for (k = 2 + MAX_CONTROL; k < (int)n; k += 2) {
			i = slot[k];
			p = px->pairs[i];
			/* Closed by a control command meanwhile. */
			if (p == NULL || p->fd[0] != pfd[k].fd)
				continue;
			close_it = 0;
			for (d = 0; d < 2 && !close_it; d++)
				if ((pfd[k + d].revents & (POLLIN | POLLHUP |
				    POLLERR)) && pair_read(px, p, d) == -1)
					close_it = 1;
			for (d = 0; d < 2 && !close_it; d++)
				if (pair_write(px, p, d) == -1)
					close_it = 1;
			if (close_it)
				pair_close(px, i);
		}
	}
}

/* Write our pid to path. */
static void
write_pidfile(const char *path)
{
	FILE	*fp;

	fp = fopen(path, "w");
	if (fp == NULL)
		fatalx("%s: %s", path, strerror(errno));
	fprintf(fp, "%ld\n", (long)getpid());
	fclose(fp);
}

/* Parse the options, open the ports, proxy until SIGTERM. */
int
main(int argc, char *argv[])
{
	struct proxy		 px;
	struct sigaction	 sa;
	const char		*lport = NULL, *cport = NULL, *pidfile = NULL;
	int			 ch, i;

	memset(&px, 0, sizeof(px));
	for (;;) {
		ch = getopt(argc, argv, "c:l:p:u:");
		if (ch == -1)
			break;
		switch (ch) {
		case 'c':
			cport = optarg;
			break;
		case 'l':
			lport = optarg;
			break;
		case 'p':
			pidfile = optarg;
			break;
		case 'u':
			px.upstream = optarg;
			break;
		default:
			fatalx("usage: dbproxy -l PORT -u HOST:PORT|SOCKET "
			    "-c CONTROL_PORT [-p PIDFILE]");
		}
	}
	if (lport == NULL || cport == NULL || px.upstream == NULL)
		fatalx("usage: dbproxy -l PORT -u HOST:PORT|SOCKET "
		    "-c CONTROL_PORT [-p PIDFILE]");
	px.listen_fd = listen_local(lport);
	px.control_fd = listen_local(cport);
	px.cut_left[C2S] = px.cut_left[S2C] = -1;
	for (i = 0; i < MAX_CONTROL; i++)
		px.controls[i].fd = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (pidfile != NULL)
		write_pidfile(pidfile);
	proxy_loop(&px);
	for (i = 0; i < MAX_PAIRS; i++)
		pair_close(&px, i);
	return 0;
}
