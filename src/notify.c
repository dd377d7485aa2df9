#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "log.h"
#include "notify.h"

static int	notify_fd = -1;	/* connected datagram socket, or -1 */

/*
 * Read $NOTIFY_SOCKET once, connect to it and unset it, so that no
 * worker speaks for the master.  Connecting now, before the master drops
 * its privileges, keeps the right to send to a socket only root may
 * write to.
 */
void
notify_init(void)
{
	struct sockaddr_un	 notify_addr;
	socklen_t		 notify_len;
	const char		*p;
	size_t			 n;

	p = getenv("NOTIFY_SOCKET");
	if (p == NULL || p[0] == '\0')
		return;
	n = strlen(p);
	if ((p[0] != '/' && p[0] != '@') || n >= sizeof(notify_addr.sun_path)) {
		log_warnx("NOTIFY_SOCKET \"%s\" is not a unix socket path or "
		    "an abstract name; not notifying", p);
		unsetenv("NOTIFY_SOCKET");
		return;
	}
	memset(&notify_addr, 0, sizeof(notify_addr));
	notify_addr.sun_family = AF_UNIX;
	memcpy(notify_addr.sun_path, p, n);
	if (p[0] == '@')
		notify_addr.sun_path[0] = '\0';	/* abstract: no NUL at the end */
	notify_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
	    (p[0] == '@' ? 0 : 1));
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (notify_fd == -1)
		log_warn("notify: socket");
	else if (connect(notify_fd, (struct sockaddr *)&notify_addr,
	    notify_len) == -1) {
		log_warn("notify: connect %s", p);
		close(notify_fd);
		notify_fd = -1;
	}
	unsetenv("NOTIFY_SOCKET");
}

/* Send one state datagram, e.g. "READY=1"; a failure is only logged. */
void
notify_send(const char *state)
{
	if (notify_fd == -1)
		return;
	if (send(notify_fd, state, strlen(state), MSG_NOSIGNAL) == -1)
		log_warn("notify: send");
}

/* The workers serve. */
void
notify_ready(void)
{
	notify_send("READY=1\nSTATUS=serving");
}

/* A reload starts; READY=1 follows when it is done. */
void
notify_reloading(void)
{
	struct timespec	 ts;
	char		 msg[96];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
	    (unsigned long long)ts.tv_sec * 1000000ULL +
	    (unsigned long long)ts.tv_nsec / 1000);
	notify_send(msg);
}

/* A graceful stop starts. */
void
notify_stopping(void)
{
	notify_send("STOPPING=1");
}
