#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "utf8.h"

#define LOG_LINE_MAX	2048

static const char	*log_procname = "idemorders";
static int		 log_level = LOG_INFO;
static int		 log_to_syslog;
static int		 log_facility = LOG_DAEMON;
static int		 log_json;

static const char *level_names[] = { "emerg", "alert", "crit", "error",
    "warning", "notice", "info", "debug" };

/* Set the syslog facility the next log_init() opens with. */
void
log_set_facility(int facility)
{
	log_facility = facility;
}

/* Write every line as one JSON object (1) or as text (0). */
void
log_set_json(int json)
{
	log_json = json;
}

/* Choose the destination and the most verbose level written. */
void
log_init(const char *procname, int to_syslog, int level)
{
	if (log_to_syslog)
		closelog();
	log_procname = procname;
	log_to_syslog = to_syslog;
	log_level = level;
	if (to_syslog)
		openlog(procname, LOG_PID | LOG_NDELAY, log_facility);
}

/*
 * Append s as a JSON string (quotes included) to out, which holds *used
 * of size bytes.  Control characters are escaped and each byte that
 * starts no valid UTF-8 sequence (by utf8.c: no overlong form, no
 * surrogate, nothing above U+10FFFF) becomes U+FFFD, so the line is
 * always valid JSON and valid UTF-8; what does not fit is cut between
 * characters and the string still closes.
 */
void
log_json_string(char *out, size_t size, size_t *used, const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	const unsigned char	*end = p + strlen(s);
	char			 esc[8];
	const char		*piece;
	size_t			 n, len;

	if (*used + 3 > size)
		return;
	out[(*used)++] = '"';
	while (*p != '\0') {
		piece = esc;
		len = 1;
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			n = 2;
		} else if (*p < 0x20 || *p == 0x7f) {
			n = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", *p);
		} else if (*p < 0x80) {
			piece = (const char *)p;
			n = 1;
		} else {
			len = utf8_seq_len(p, (size_t)(end - p));
			if (len == 0) {
				memcpy(esc, "\xef\xbf\xbd", 3);	/* U+FFFD */
				n = 3;
				len = 1;
			} else {
				piece = (const char *)p;
				n = len;
			}
		}
		if (*used + n + 2 > size)
			break;
		memcpy(out + *used, piece, n);
		*used += n;
		p += len;
	}
	out[(*used)++] = '"';
	out[*used] = '\0';
}

/* Append formatted text to out, which holds *used of size bytes. */
static void
append(char *out, size_t size, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
append(char *out, size_t size, size_t *used, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	if (*used >= size - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(out + *used, size - *used, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	*used += (size_t)n < size - *used ? (size_t)n : size - *used - 1;
}

/* Write "YYYY-MM-DDTHH:MM:SS.mmmZ" of now into stamp. */
static void
timestamp(char *stamp, size_t size)
{
	struct timespec	 ts;
	struct tm	 tm;
	char		 sec[24];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp, size, "%.19s.%03dZ", sec,
	    (int)(ts.tv_nsec / 1000000 % 1000));
}

/* Write one finished line at pri: syslog, or stderr with a prefix. */
static void
emit(int pri, const char *line)
{
	char	 stamp[48];

	if (log_to_syslog) {
		syslog(pri, "%s", line);
		return;
	}
	if (log_json) {
		fprintf(stderr, "%s\n", line);
		return;
	}
	timestamp(stamp, sizeof(stamp));
	fprintf(stderr, "%s %s[%ld] %s: %s\n", stamp, log_procname,
	    (long)getpid(), level_names[pri & 7], line);
}

/* Write one line at pri, with an optional errno text appended. */
static void
vlog(int pri, int err, const char *fmt, va_list ap)
{
	char		 msg[LOG_LINE_MAX], line[LOG_LINE_MAX + 256];
	char		 stamp[48];
	size_t		 used = 0;
	int		 n;

	if (pri > log_level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (err && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s",
		    strerror(err));
	if (!log_json) {
		emit(pri, msg);
		return;
	}
	timestamp(stamp, sizeof(stamp));
	append(line, sizeof(line), &used, "{\"time\":\"%s\",\"level\":\"%s\","
	    "\"pid\":%ld,\"msg\":", stamp, level_names[pri & 7],
	    (long)getpid());
	log_json_string(line, sizeof(line) - 1, &used, msg);
	append(line, sizeof(line), &used, "}");
	emit(pri, line);
}

/*
 * Log one answered request at info level: a text line, or a JSON object
 * with time, principal, key, status, code, outcome, attempts and
 * duration_ms (and method, path, pid).
 */
void
log_request(const struct log_request *r)
{
	char		 path[512], line[LOG_LINE_MAX], stamp[48];
	size_t		 used = 0;

	if (LOG_INFO > log_level)
		return;
	snprintf(path, sizeof(path), "%s", r->uri ? r->uri : "-");
	path[strcspn(path, "?")] = '\0';
	if (!log_json) {
		snprintf(line, sizeof(line), "%s %s %d %s principal=%s key=%s "
		    "attempts=%d %.1fms", r->method ? r->method : "-", path,
		    r->status, r->code ? r->code : r->outcome ? r->outcome :
		    "-", r->principal ? r->principal : "-",
		    r->key ? r->key : "-", r->attempts, r->duration_ms);
		emit(LOG_INFO, line);
		return;
	}
	timestamp(stamp, sizeof(stamp));
	append(line, sizeof(line), &used, "{\"time\":\"%s\",\"level\":"
	    "\"info\",\"pid\":%ld,\"method\":", stamp, (long)getpid());
	log_json_string(line, sizeof(line) - 1, &used,
	    r->method ? r->method : "");
	append(line, sizeof(line), &used, ",\"path\":");
	log_json_string(line, sizeof(line) - 1, &used, path);
	append(line, sizeof(line), &used, ",\"principal\":");
	if (r->principal != NULL)
		log_json_string(line, sizeof(line) - 1, &used, r->principal);
	else
		append(line, sizeof(line), &used, "null");
	append(line, sizeof(line), &used, ",\"key\":");
	if (r->key != NULL)
		log_json_string(line, sizeof(line) - 1, &used, r->key);
	else
		append(line, sizeof(line), &used, "null");
	append(line, sizeof(line), &used, ",\"status\":%d,\"code\":",
	    r->status);
	if (r->code != NULL)
		log_json_string(line, sizeof(line) - 1, &used, r->code);
	else
		append(line, sizeof(line), &used, "null");
	append(line, sizeof(line), &used, ",\"outcome\":");
	log_json_string(line, sizeof(line) - 1, &used,
	    r->outcome ? r->outcome : "");
	append(line, sizeof(line), &used, ",\"attempts\":%d,"
	    "\"duration_ms\":%.3f}", r->attempts, r->duration_ms);
	emit(LOG_INFO, line);
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

/* Log an error the service itself must never cause (level error). */
void
log_errorx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_ERR, 0, fmt, ap);
	va_end(ap);
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
