#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char	*log_procname = "idemorders";
static int		 log_level = LOG_INFO;
static int		 log_to_syslog;

/* Choose the destination and the most verbose level written. */
void
log_init(const char *procname, int to_syslog, int level)
{
	log_procname = procname;
	log_to_syslog = to_syslog;
	log_level = level;
	if (to_syslog)
		openlog(procname, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

/* Write one line at pri, with an optional errno text appended. */
static void
vlog(int pri, int err, const char *fmt, va_list ap)
{
	static const char *names[] = { "emerg", "alert", "crit", "error",
	    "warning", "notice", "info", "debug" };
	char		 msg[2048];
	struct timespec	 ts;
	struct tm	 tm;
	char		 stamp[32];

	if (pri > log_level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_to_syslog) {
		if (err)
			syslog(pri, "%s: %s", msg, strerror(err));
		else
			syslog(pri, "%s", msg);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	if (err)
		fprintf(stderr, "%s.%03ldZ %s[%ld] %s: %s: %s\n", stamp,
		    ts.tv_nsec / 1000000, log_procname, (long)getpid(),
		    names[pri & 7], msg, strerror(err));
	else
		fprintf(stderr, "%s.%03ldZ %s[%ld] %s: %s\n", stamp,
		    ts.tv_nsec / 1000000, log_procname, (long)getpid(),
		    names[pri & 7], msg);
}

/* Log a warning with strerror(errno) appended. */
void
log_warn(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	vlog(LOG_WARNING, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* Log a warning. */
void
log_warnx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_WARNING, 0, fmt, ap);
	va_end(ap);
}

/* Log an informational line. */
void
log_info(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_INFO, 0, fmt, ap);
	va_end(ap);
}

/* Log a debugging line. */
void
log_debug(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_DEBUG, 0, fmt, ap);
	va_end(ap);
}

/* Log an error with strerror(errno) and exit. */
void
fatal(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	vlog(LOG_CRIT, saved, fmt, ap);
	va_end(ap);
	exit(1);
}

/* Log an error and exit. */
void
fatalx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
