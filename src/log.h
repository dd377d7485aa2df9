/*
 * Logging in the shape of OpenSMTPD's log.h: stderr in the foreground,
 * syslog otherwise.  log_warn() appends strerror(errno); fatal() and
 * fatalx() log and exit, and are for start-up and the supervisor only.
 */
#ifndef IDEMORDERS_LOG_H
#define IDEMORDERS_LOG_H

#include <stdarg.h>
#include <syslog.h>

void	log_init(const char *, int, int);
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	fatal(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif
