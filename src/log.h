/*
 * Logging in the shape of OpenSMTPD's log.h: stderr in the foreground,
 * syslog otherwise.  log_warn() appends strerror(errno); fatal() and
 * fatalx() log and exit, and are for start-up and the supervisor only.
 *
 * In JSON format every line is one JSON object: {"time", "level", "pid",
 * "msg"} for messages, and the request log's fields for log_request().
 * The request log has fixed fields only: no header, no body, no query
 * string, so never a credential.
 */
#ifndef IDEMORDERS_LOG_H
#define IDEMORDERS_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <syslog.h>

struct log_request {
	const char	*method;
	const char	*uri;		/* the query string is not logged */
	const char	*principal;
	const char	*key;
	const char	*code;		/* problem code, or NULL */
	const char	*outcome;
	int		 status;	/* 0: no answer was sent */
	int		 attempts;
	double		 duration_ms;
};

void	log_init(const char *, int, int);
void	log_set_facility(int);
void	log_set_json(int);
void	log_request(const struct log_request *);
void	log_json_string(char *, size_t, size_t *, const char *);
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_errorx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	fatal(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif
