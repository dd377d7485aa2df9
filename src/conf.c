#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/stat.h>

#include <strings.h>

#include "conf.h"
#include "log.h"
#include "peers.h"
#include "secret.h"
#include "text.h"
#include "webhook.h"

#define CONF_FILE_MAX	(1024 * 1024)
#define CONF_LINE_MAX	4096
#define LISTEN_HOST_MAX	255	/* a DNS name or an address */

enum conf_type {
	T_STRING,	/* non-empty string */
	T_OPTSTRING,	/* string; empty: unset */
	T_PATH,		/* string, must be absolute */
	T_INT,		/* int in [min, max] */
	T_LONG,		/* long in [min, max] */
	T_PORT,
	T_MODE,		/* octal permission bits */
	T_DURATION,	/* milliseconds in [min, max], a long */
	T_LDURATION,	/* milliseconds in [min, max], a long long */
	T_SIZE,		/* bytes in [min, max] */
	T_LISTEN,
	T_MOUNT,
	T_PASSWORD_FILE,
	T_SECRET_FILE,
	T_WEBHOOK_SECRET_FILE,	/* one line: "whsec_" and base64 */
	T_URL,		/* http:// or https:// */
	T_PRINCIPAL_VAR, /* a variable the web server's authentication sets */
	T_SECRET_VAR,	/* a variable no request can set */
	T_PEERS,
	/* An int: one of the words conf_words[] lists for the type. */
	T_LOGLEVEL,
	T_LOGTARGET,
	T_FACILITY,
	T_LOGFORMAT,
	T_REUSED_STATUS,
	T_OUT_OF_STOCK,
	T_ONOFF,	/* on 1, off 0 */
};

/* A word a word-valued key takes, and the int it stands for. */
struct conf_word {
	const char	*word;
	int		 value;
};

/*
 * A key: its type, field, range, its default as the file would write it
 * (NULL: none, the field stays zero or NULL) and whether a change takes
 * effect only after a restart (a reload keeps the running value), as the
 * rows of tmux's options-table.c carry theirs.
 */
struct conf_key {
	const char	*name;
	enum conf_type	 type;
	size_t		 off;
	long long	 min;
	long long	 max;
	const char	*dflt;
	int		 restart;
};

static int	conf_check(const struct conf *, const char *, int, char *,
		    size_t);
static int	conf_set(struct conf *, const struct conf_key *, const char *,
		    char *, size_t);

static const struct conf_word facility_words[] = {
	{ "daemon", LOG_DAEMON }, { "user", LOG_USER }, { "auth", LOG_AUTH },
	{ "authpriv", LOG_AUTHPRIV }, { "local0", LOG_LOCAL0 },
	{ "local1", LOG_LOCAL1 }, { "local2", LOG_LOCAL2 },
	{ "local3", LOG_LOCAL3 }, { "local4", LOG_LOCAL4 },
	{ "local5", LOG_LOCAL5 }, { "local6", LOG_LOCAL6 },
	{ "local7", LOG_LOCAL7 }, { NULL, 0 },
};
static const struct conf_word level_words[] = {
	{ "error", LOG_ERR }, { "warning", LOG_WARNING },
	{ "info", LOG_INFO }, { "debug", LOG_DEBUG }, { NULL, 0 },
};
static const struct conf_word target_words[] = {
	{ "stderr", 0 }, { "syslog", 1 }, { NULL, 0 },
};
static const struct conf_word format_words[] = {
	{ "text", LOG_FORMAT_TEXT }, { "json", LOG_FORMAT_JSON }, { NULL, 0 },
};
static const struct conf_word onoff_words[] = {
	{ "on", 1 }, { "off", 0 }, { NULL, 0 },
};
static const struct conf_word reused_words[] = {
	{ "409", 409 }, { "422", 422 }, { NULL, 0 },
};
static const struct conf_word out_of_stock_words[] = {
	{ "final", OUT_OF_STOCK_FINAL },
	{ "retryable", OUT_OF_STOCK_RETRYABLE }, { NULL, 0 },
};

/* A word-valued key is an int: the enums it sets must be ints. */
_Static_assert(sizeof(enum log_format) == sizeof(int), "log_format");
_Static_assert(sizeof(enum out_of_stock_policy) == sizeof(int),
    "out_of_stock");

/* The word-valued types: the words each takes, and them for an error. */
static const struct conf_words {
	enum conf_type		 type;
	const struct conf_word	*words;		/* ends with { NULL, 0 } */
	const char		*choices;
} conf_words[] = {
	{ T_LOGLEVEL,		level_words,	"error, warning, info or debug" },
	{ T_LOGTARGET,		target_words,	"stderr or syslog" },
	{ T_FACILITY,		facility_words,
	    "daemon, user, auth, authpriv or local0 to local7" },
	{ T_LOGFORMAT,		format_words,	"text or json" },
	{ T_REUSED_STATUS,	reused_words,	"409 or 422" },
	{ T_OUT_OF_STOCK,	out_of_stock_words, "final or retryable" },
	{ T_ONOFF,		onoff_words,	"on or off" },
};

#define F(m)	offsetof(struct conf, m)
#define DAY_MS	(24LL * 3600 * 1000)

static const struct conf_key conf_keys[] = {
	{ "listen",		T_LISTEN,	F(listen), 0, 0,
	    NULL, 1 },
	{ "socket_mode",	T_MODE,		F(socket_mode), 0, 07777,
	    "0660", 1 },
	{ "socket_group",	T_OPTSTRING,	F(socket_group), 0, 0,
	    NULL, 1 },
	{ "allow_peers",	T_PEERS,	F(allow_peers), 0, 0,
	    NULL, 0 },
	{ "user",		T_OPTSTRING,	F(user), 0, 0,
	    NULL, 1 },
	{ "group",		T_OPTSTRING,	F(group), 0, 0,
	    NULL, 1 },
	{ "workers",		T_INT,		F(workers), 1, 512,
	    "4", 0 },
	{ "max_requests",	T_LONG,		F(max_requests), 0, LONG_MAX,
	    "10000", 0 },
	{ "log_level",		T_LOGLEVEL,	F(log_level), 0, 0,
	    "info", 0 },
	{ "log",		T_LOGTARGET,	F(log_syslog), 0, 0,
	    "stderr", 0 },
	{ "log_facility",	T_FACILITY,	F(log_facility), 0, 0,
	    "daemon", 0 },
	{ "log_format",		T_LOGFORMAT,	F(log_format), 0, 0,
	    "text", 0 },
	{ "mount",		T_MOUNT,	F(mount), 0, 0,
	    "/orders", 0 },
	{ "principal_var",	T_PRINCIPAL_VAR, F(principal_var), 0, 0,
	    "REMOTE_USER", 0 },
	{ "frontend_secret_file", T_SECRET_FILE, F(frontend_secret), 0, 0,
	    NULL, 0 },
	{ "frontend_secret_var", T_SECRET_VAR,	F(frontend_secret_var), 0, 0,
	    "IDEMORDERS_FRONTEND_SECRET", 0 },
	{ "max_body_bytes",	T_SIZE,		F(max_body_bytes), 256, 16L << 20,
	    "64k", 0 },
	{ "metrics",		T_ONOFF,	F(metrics), 0, 0,
	    "off", 0 },
	{ "db_host",		T_STRING,	F(db_host), 0, 0,
	    "localhost", 0 },
	{ "db_port",		T_PORT,		F(db_port), 1, 65535,
	    "3306", 0 },
	{ "db_socket",		T_PATH,		F(db_socket), 0, 0,
	    NULL, 0 },
	{ "db_name",		T_STRING,	F(db_name), 0, 0,
	    "idemorders", 0 },
	{ "db_user",		T_STRING,	F(db_user), 0, 0,
	    "idemorders", 0 },
	{ "db_password",	T_OPTSTRING,	F(db_password), 0, 0,
	    NULL, 0 },
	{ "db_password_file",	T_PASSWORD_FILE, F(db_password), 0, 0,
	    NULL, 0 },
	{ "db_connect_timeout",	T_DURATION,	F(db_connect_timeout_ms), 1000, 3600000,
	    "5s", 0 },
	{ "lock_wait_timeout",	T_DURATION,	F(lock_wait_timeout_ms), 1000, 3600000,
	    "10s", 0 },
	{ "schema_dir",		T_PATH,		F(schema_dir), 0, 0,
	    PKGDATADIR "/schema", 0 },
	{ "key_retention",	T_LDURATION,	F(key_retention_ms), 1000, 3650 * DAY_MS,
	    "24h", 0 },
	{ "tombstone_retention", T_LDURATION,	F(tombstone_retention_ms), 0, 36500 * DAY_MS,
	    "30d", 0 },
	{ "cancel_window",	T_LDURATION,	F(cancel_window_ms), 0, 36500 * DAY_MS,
	    "30d", 0 },
	{ "key_reused_status",	T_REUSED_STATUS, F(key_reused_status), 0, 0,
	    "409", 0 },
	{ "out_of_stock",	T_OUT_OF_STOCK,	F(out_of_stock), 0, 0,
	    "final", 0 },
	{ "max_attempts",	T_INT,		F(max_attempts), 1, 20,
	    "3", 0 },
	{ "request_deadline",	T_DURATION,	F(request_deadline_ms), 100, 600000,
	    "30s", 0 },
	{ "read_deadline",	T_DURATION,	F(read_deadline_ms), 100, 600000,
	    "5s", 0 },
	{ "retry_backoff",	T_DURATION,	F(retry_backoff_ms), 1, 60000,
	    "50ms", 0 },
	{ "retry_backoff_max",	T_DURATION,	F(retry_backoff_max_ms), 1, 600000,
	    "1s", 0 },
	{ "expire_batch",	T_LONG,		F(expire_batch), 1, 1000000,
	    "1000", 0 },
	{ "expire_pause",	T_DURATION,	F(expire_pause_ms), 0, 60000,
	    "200ms", 0 },
	{ "webhook_url",	T_URL,		F(webhook_url), 0, 0,
	    NULL, 0 },
	{ "webhook_secret_file", T_WEBHOOK_SECRET_FILE, F(webhook_secret), 0, 0,
	    NULL, 0 },
	{ "webhook_ca_file",	T_PATH,		F(webhook_ca_file), 0, 0,
	    NULL, 0 },
	{ "webhook_timeout",	T_DURATION,	F(webhook_timeout_ms), 100, 120000,
	    "10s", 0 },
	{ "event_max_age",	T_LDURATION,	F(event_max_age_ms), 1000, 365 * DAY_MS,
	    "3d", 0 },
	{ "event_retention",	T_LDURATION,	F(event_retention_ms), 0, 36500 * DAY_MS,
	    "7d", 0 },
	{ "event_poll",		T_DURATION,	F(event_poll_ms), 50, 60000,
	    "500ms", 0 },
	{ "event_backoff",	T_DURATION,	F(event_backoff_ms), 10, 3600000,
	    "1s", 0 },
	{ "event_backoff_max",	T_DURATION,	F(event_backoff_max_ms), 10, 86400000,
	    "1h", 0 },
	{ "relay_concurrency",	T_INT,		F(relay_concurrency), 1, 256,
	    "8", 0 },
};

/*
 * Fill every field with its default from conf_keys[], through the
 * parser's own conf_set().  A default the parser refuses is a bug of
 * this file: fatal.
 */
void
conf_defaults(struct conf *c)
{
	char	 err[512];
	size_t	 i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < sizeof(conf_keys) / sizeof(conf_keys[0]); i++)
		if (conf_keys[i].dflt != NULL && conf_set(c, &conf_keys[i],
		    conf_keys[i].dflt, err, sizeof(err)) == -1)
			fatalx("default of %s: %s", conf_keys[i].name, err);
}

/*
 * In a reloaded configuration nc, keep the running value (from old) of
 * every key whose change takes effect only after a restart, and log each
 * that changed.  -1 when out of memory (nc then holds a value of its
 * own for that key).
 */
int
conf_keep_restart(struct conf *nc, const struct conf *old)
{
	const struct conf_key	*k;
	char			**np, *const *op, *keep;
	size_t			 i;

	for (i = 0; i < sizeof(conf_keys) / sizeof(conf_keys[0]); i++) {
		k = &conf_keys[i];
		if (!k->restart)
			continue;
		if (k->type == T_MODE) {
			if (*(const mode_t *)((const char *)old + k->off) ==
			    *(mode_t *)((char *)nc + k->off))
				continue;
			log_warnx("reload: \"%s\" changed; it takes effect "
			    "only after a restart (still %04o)", k->name,
			    (unsigned int)*(const mode_t *)((const char *)old +
			    k->off));
			*(mode_t *)((char *)nc + k->off) =
			    *(const mode_t *)((const char *)old + k->off);
			continue;
		}
		np = (char **)(void *)((char *)nc + k->off);
		op = (char *const *)(const void *)((const char *)old + k->off);
		if (*np == NULL && *op == NULL)
			continue;
		if (*np != NULL && *op != NULL && strcmp(*np, *op) == 0)
			continue;
		log_warnx("reload: \"%s\" changed; it takes effect only "
		    "after a restart (still %s)", k->name, *op != NULL ? *op :
		    "unset");
		keep = NULL;
		if (*op != NULL && (keep = strdup(*op)) == NULL)
			return -1;
		free(*np);
		*np = keep;
	}
	return 0;
}

/* Release every string the configuration owns. */
void
conf_clear(struct conf *c)
{
	size_t	 i;
	char	**sp;

	if (c == NULL)
		return;
	for (i = 0; i < sizeof(conf_keys) / sizeof(conf_keys[0]); i++) {
		switch (conf_keys[i].type) {
		case T_PASSWORD_FILE:
			break;		/* shares db_password */
		case T_SECRET_FILE:
			if (c->frontend_secret_prev != NULL)
				explicit_bzero(c->frontend_secret_prev,
				    strlen(c->frontend_secret_prev));
			free(c->frontend_secret_prev);
			c->frontend_secret_prev = NULL;
			/* FALLTHROUGH */
		case T_WEBHOOK_SECRET_FILE:
		case T_OPTSTRING:
			/* Secrets are wiped before they are freed. */
			sp = (char **)((char *)c + conf_keys[i].off);
			if (*sp != NULL)
				explicit_bzero(*sp, strlen(*sp));
			free(*sp);
			*sp = NULL;
			break;
		case T_STRING:
		case T_PATH:
		case T_LISTEN:
		case T_MOUNT:
		case T_PRINCIPAL_VAR:
		case T_SECRET_VAR:
		case T_PEERS:
		case T_URL:
			sp = (char **)((char *)c + conf_keys[i].off);
			free(*sp);
			*sp = NULL;
			break;
		default:
			break;
		}
	}
}

/*
 * Parse a duration: a non-negative integer followed by ms, s, m, h or d.
 * A bare 0 is allowed.  Stores milliseconds; -1 when it does not fit.
 */
int
conf_parse_duration(const char *s, long long *ms)
{
	char		*end;
	long long	 n, mul;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno != 0)
		return -1;
	if (strcmp(end, "ms") == 0)
		mul = 1;
	else if (strcmp(end, "s") == 0)
		mul = 1000;
	else if (strcmp(end, "m") == 0)
		mul = 60 * 1000;
	else if (strcmp(end, "h") == 0)
		mul = 3600 * 1000;
	else if (strcmp(end, "d") == 0)
		mul = 24LL * 3600 * 1000;
	else if (*end == '\0' && n == 0)
		mul = 1;
	else
		return -1;
	if (n > LLONG_MAX / mul)
		return -1;
	*ms = n * mul;
	return 0;
}

/* Write ms in the largest unit that divides it: 7d, 36h, 1500ms. */
static void
format_duration(long long ms, char *out, size_t outsz)
{
	static const struct {
		long long	 mul;
		const char	*unit;
	} units[] = {
		{ 24LL * 3600 * 1000, "d" }, { 3600 * 1000, "h" },
		{ 60 * 1000, "m" }, { 1000, "s" },
	};
	size_t	 i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ms != 0 && ms % units[i].mul == 0) {
			snprintf(out, outsz, "%lld%s", ms / units[i].mul,
			    units[i].unit);
			return;
		}
	snprintf(out, outsz, "%lldms", ms);
}

/* Parse a size in bytes with an optional k or m suffix (powers of 1024). */
int
conf_parse_size(const char *s, size_t *out)
{
	char			*end;
	unsigned long long	 n, mul = 1;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	if (strcasecmp(end, "k") == 0)
		mul = 1024;
	else if (strcasecmp(end, "m") == 0)
		mul = 1024 * 1024;
	else if (*end != '\0')
		return -1;
	if (n > SIZE_MAX / mul)
		return -1;
	*out = (size_t)(n * mul);
	return 0;
}

/* Parse a decimal integer that must use the whole string. */
static int
parse_long(const char *s, long *out)
{
	char	*end;
	long	 n;

	if (*s == '\0')
		return -1;
	errno = 0;
	n = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = n;
	return 0;
}

/*
 * Check the listen syntax: unix:/abs/path or HOST:PORT (an IPv6 address
 * in brackets).  err says what is wrong.
 */
static int
check_listen(const char *v, char *err, size_t errsz)
{
	const char	*colon;
	long		 port;

	if (strncmp(v, "unix:", 5) == 0) {
		if (v[5] != '/')
			goto bad;
		if (strlen(v + 5) >= 108) {
			snprintf(err, errsz, "listen: a unix socket path has "
			    "at most 107 bytes");
			return -1;
		}
		return 0;
	}
	colon = strrchr(v, ':');
	if (colon == NULL || colon == v)
		goto bad;
	if (parse_long(colon + 1, &port) == -1 || port < 1 || port > 65535)
		goto bad;
	if ((size_t)(colon - v) > LISTEN_HOST_MAX) {
		snprintf(err, errsz, "listen: the host is longer than %d bytes",
		    LISTEN_HOST_MAX);
		return -1;
	}
	return 0;
bad:
	snprintf(err, errsz, "listen must be unix:/PATH or HOST:PORT, not "
	    "\"%.200s\"", v);
	return -1;
}

/*
 * Tell whether a "HOST:PORT" listen names a loopback address only
 * (127.0.0.0/8, ::1, localhost); a wildcard or any other host does not.
 */
int
conf_listen_is_loopback(const char *listen)
{
	struct in6_addr	 a;
	char		 host[LISTEN_HOST_MAX + 1];
	const char	*colon;
	size_t		 n;

	colon = strrchr(listen, ':');
	if (colon == NULL)
		return 0;
	n = (size_t)(colon - listen);
	if (n >= 2 && listen[0] == '[' && listen[n - 1] == ']') {
		listen++;
		n -= 2;
	}
	if (n > LISTEN_HOST_MAX)
		return 0;
	memcpy(host, listen, n);
	host[n] = '\0';
	if (strcasecmp(host, "localhost") == 0)
		return 1;
	if (peers_parse_addr(host, &a) == -1)
		return 0;
	return peers_is_loopback(&a);
}

/*
 * The variables a web server sets from its own authentication, the only
 * ones principal_var may name: REMOTE_USER (Basic, LDAP, an authorizer's
 * Variable-REMOTE_USER, mod_auth_openidc), and REDIRECT_REMOTE_USER, the
 * REMOTE_USER of the request Apache authenticated before an internal
 * redirect.
 */
static const char *const principal_vars[] = {
	"REMOTE_USER", "REDIRECT_REMOTE_USER", NULL,
};

/*
 * Names that lighttpd, Apache or their modules fill themselves, from the
 * request or from their own settings (RFC 3875's meta-variables and the
 * names the servers add): frontend_secret_var may not be one, compared
 * without regard to case.  A prefix ends with '_'.
 */
static const char *const server_var_prefixes[] = {
	"AUTH_", "CONTENT_", "CONTEXT_", "DOCUMENT_", "FCGI_", "GATEWAY_",
	"HTTP_", "HTTPS_", "OIDC_", "PATH_", "PHP_", "QUERY_", "REDIRECT_",
	"REMOTE_", "REQUEST_", "SCRIPT_", "SERVER_", "SSL_", NULL,
};
static const char *const server_vars[] = {
	"HTTPS", "PATH", "UNIQUE_ID", NULL,
};

/* Tell whether name is one of list (ends with NULL); case-insensitive. */
static int
var_listed(const char *name, const char *const *list, int prefix)
{
	size_t	 i;

	for (i = 0; list[i] != NULL; i++)
		if (prefix ? strncasecmp(name, list[i], strlen(list[i])) == 0 :
		    strcasecmp(name, list[i]) == 0)
			return 1;
	return 0;
}

/*
 * Check principal_var and frontend_secret_var: a variable name that no
 * request can set.  The principal comes only from the web server's own
 * authentication; the secret only from a variable the web server's
 * configuration adds, never one it fills itself.
 */
static int
check_var(const struct conf_key *k, const char *v, char *err, size_t errsz)
{
	size_t	 i;

	if (strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789_") != strlen(v)) {
		snprintf(err, errsz, "%s must be a variable name (letters, "
		    "digits and _)", k->name);
		return -1;
	}
	if (strncasecmp(v, "HTTP_", 5) == 0) {
		snprintf(err, errsz, "%s may not be an HTTP_* variable (%s): "
		    "the web server fills those from request headers, which "
		    "any client chooses", k->name, v);
		return -1;
	}
	if (k->type == T_PRINCIPAL_VAR) {
		for (i = 0; principal_vars[i] != NULL; i++)
			if (strcmp(v, principal_vars[i]) == 0)
				return 0;
		snprintf(err, errsz, "principal_var may not be %s: it names "
		    "what the web server sets from its own authentication, "
		    "REMOTE_USER (or REDIRECT_REMOTE_USER after an Apache "
		    "internal redirect); another variable may come from the "
		    "request", v);
		return -1;
	}
	if (var_listed(v, server_vars, 0) ||
	    var_listed(v, server_var_prefixes, 1)) {
		snprintf(err, errsz, "frontend_secret_var may not be %s: the "
		    "web server sets that name itself (a request variable, "
		    "or one beginning AUTH_, CONTENT_, CONTEXT_, DOCUMENT_, "
		    "FCGI_, GATEWAY_, HTTP_, OIDC_, PATH_, PHP_, QUERY_, "
		    "REDIRECT_, REMOTE_, REQUEST_, SCRIPT_, SERVER_ or SSL_); "
		    "name one only its configuration adds, such as "
		    "IDEMORDERS_FRONTEND_SECRET", v);
		return -1;
	}
	return 0;
}

/* Check the value of a string-valued key; err says what is wrong. */
static int
check_string(const struct conf_key *k, const char *v, char *err,
    size_t errsz)
{
	char	 msg[64];

	switch (k->type) {
	case T_LISTEN:
		return check_listen(v, err, errsz);
	case T_PATH:
		if (v[0] != '/') {
			snprintf(err, errsz, "%s must be an absolute path",
			    k->name);
			return -1;
		}
		return 0;
	case T_MOUNT:
		if (v[0] != '/' || (strlen(v) > 1 && v[strlen(v) - 1] == '/') ||
		    strpbrk(v, "?#% ") != NULL) {
			snprintf(err, errsz, "mount must be a path such as "
			    "/orders, without a trailing slash");
			return -1;
		}
		return 0;
	case T_PRINCIPAL_VAR:
	case T_SECRET_VAR:
		return check_var(k, v, err, errsz);
	case T_URL:
		if ((strncmp(v, "http://", 7) != 0 || v[7] == '\0') &&
		    (strncmp(v, "https://", 8) != 0 || v[8] == '\0')) {
			snprintf(err, errsz, "%s must be an http:// or "
			    "https:// URL", k->name);
			return -1;
		}
		if (strlen(v) > 2048 || strpbrk(v, " \t\"<>\\") != NULL) {
			snprintf(err, errsz, "%s must be a URL of at most "
			    "2048 bytes without blanks, quotes or <>",
			    k->name);
			return -1;
		}
		return 0;
	case T_PEERS:
		if (peers_check(v, msg, sizeof(msg)) == -1) {
			snprintf(err, errsz, "allow_peers: \"%s\" is not an "
			    "IPv4 or IPv6 address", msg);
			return -1;
		}
		return 0;
	default:
		return 0;
	}
}

/*
 * Set a key of a word-valued type (ws) to the int its word stands for;
 * err says what is wrong.
 */
static int
set_word(void *field, const struct conf_key *k, const struct conf_words *ws,
    const char *v, char *err, size_t errsz)
{
	const struct conf_word	*w;

	for (w = ws->words; w->word != NULL; w++)
		if (strcmp(v, w->word) == 0) {
			*(int *)field = w->value;
			return 0;
		}
	snprintf(err, errsz, "%s must be %s", k->name, ws->choices);
	return -1;
}

/* Set a numeric key within [min, max]; err says what is wrong. */
static int
set_number(void *field, const struct conf_key *k, const char *v, char *err,
    size_t errsz)
{
	char		*end;
	long		 n;
	long long	 ms;
	size_t		 sz;

	switch (k->type) {
	case T_INT:
	case T_LONG:
		if (parse_long(v, &n) == -1 || n < k->min || n > k->max) {
			snprintf(err, errsz, "%s must be an integer from %lld "
			    "to %lld", k->name, k->min, k->max);
			return -1;
		}
		if (k->type == T_INT)
			*(int *)field = (int)n;
		else
			*(long *)field = n;
		return 0;
	case T_PORT:
		if (parse_long(v, &n) == -1 || n < k->min || n > k->max) {
			snprintf(err, errsz, "%s must be a port number",
			    k->name);
			return -1;
		}
		*(unsigned int *)field = (unsigned int)n;
		return 0;
	case T_MODE:
		errno = 0;
		n = strtol(v, &end, 8);
		if (v[0] != '0' || errno != 0 || *end != '\0' || n > k->max) {
			snprintf(err, errsz, "%s must be octal, such as 0660",
			    k->name);
			return -1;
		}
		*(mode_t *)field = (mode_t)n;
		return 0;
	case T_DURATION:
	case T_LDURATION:
		if (conf_parse_duration(v, &ms) == -1) {
			snprintf(err, errsz, "%s must be a duration such as "
			    "500ms, 30s, 5m, 24h or 30d", k->name);
			return -1;
		}
		if (ms < k->min || ms > k->max) {
			snprintf(err, errsz, "%s is out of range (%lldms to "
			    "%lldms)", k->name, k->min, k->max);
			return -1;
		}
		if (k->type == T_LDURATION)
			*(long long *)field = ms;
		else
			*(long *)field = (long)ms;
		return 0;
	case T_SIZE:
	default:
		if (conf_parse_size(v, &sz) == -1 || sz < (size_t)k->min ||
		    sz > (size_t)k->max) {
			snprintf(err, errsz, "%s must be a size from %lld to "
			    "%lld bytes (k and m suffixes allowed)", k->name,
			    k->min, k->max);
			return -1;
		}
		*(size_t *)field = sz;
		return 0;
	}
}

/* Put secret (or NULL) at *sp, wiping and freeing what was there. */
static void
replace_secret(char **sp, char *secret)
{
	if (*sp != NULL)
		explicit_bzero(*sp, strlen(*sp));
	free(*sp);
	*sp = secret;
}

/*
 * Read the secret file at path into the key's field: db_password_file
 * one line, frontend_secret_file the current secret and, during a
 * rotation, the previous one (frontend_secret_prev).
 */
static int
set_secret(struct conf *c, const struct conf_key *k, const char *path,
    char *err, size_t errsz)
{
	struct webhook_key key;
	char	*secret, *prev = NULL, msg[256];
	int	 lines = k->type == T_SECRET_FILE ? 2 : 1;

	if (secret_read_file(path, lines, &secret, err, errsz) == -1)
		return -1;
	if (k->type == T_SECRET_FILE) {
		if (secret_split(path, secret, &prev, err, errsz) == -1) {
			explicit_bzero(secret, strlen(secret));
			free(secret);
			return -1;
		}
		replace_secret(&c->frontend_secret_prev, prev);
	}
	if (k->type == T_WEBHOOK_SECRET_FILE &&
	    webhook_key_parse(secret, &key, msg, sizeof(msg)) == -1) {
		explicit_bzero(&key, sizeof(key));
		explicit_bzero(secret, strlen(secret));
		free(secret);
		snprintf(err, errsz, "%s: %s", path, msg);
		return -1;
	}
	explicit_bzero(&key, sizeof(key));
	replace_secret((char **)(void *)((char *)c + k->off), secret);
	return 0;
}

/* Assign one value to the key it names; err says what is wrong. */
static int
conf_set(struct conf *c, const struct conf_key *k, const char *v,
    char *err, size_t errsz)
{
	void	 *field = (char *)c + k->off;
	char	**sp = field;
	char	 *dup;
	size_t	  i;

	for (i = 0; i < sizeof(conf_words) / sizeof(conf_words[0]); i++)
		if (conf_words[i].type == k->type)
			return set_word(field, k, &conf_words[i], v, err,
			    errsz);
	switch (k->type) {
	case T_INT:
	case T_LONG:
	case T_PORT:
	case T_MODE:
	case T_DURATION:
	case T_LDURATION:
	case T_SIZE:
		return set_number(field, k, v, err, errsz);
	case T_PASSWORD_FILE:
	case T_SECRET_FILE:
	case T_WEBHOOK_SECRET_FILE:
		return set_secret(c, k, v, err, errsz);
	case T_OPTSTRING:
		if (*v != '\0')
			break;
		free(*sp);
		*sp = NULL;
		return 0;
	default:
		if (check_string(k, v, err, errsz) == -1)
			return -1;
		break;
	}
	dup = strdup(v);
	if (dup == NULL) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	free(*sp);
	*sp = dup;
	return 0;
}

/*
 * Cut a comment off a value: '#' at its start or after a space or a tab
 * begins one; a '#' inside a word (pa#ss) is part of the value.  A value
 * that must hold " #" (a password) belongs in db_password_file.
 */
static void
cut_comment(char *v)
{
	char	*p;

	for (p = v; *p != '\0'; p++)
		if (*p == '#' && (p == v || p[-1] == ' ' || p[-1] == '\t')) {
			*p = '\0';
			return;
		}
}

/*
 * Parse len bytes of configuration text into c (already holding defaults).
 * On error, err holds "NAME:LINE: message" and -1 is returned; c may then
 * hold some of the new values and should be cleared.
 */
int
conf_parse(struct conf *c, const char *name, const char *text, size_t len,
    char *err, size_t errsz)
{
	char		 line[CONF_LINE_MAX], msg[512];
	const char	*p = text, *end = text + len, *nl;
	char		*key, *val, *eq;
	size_t		 i, n;
	int		 lineno = 0, listen_line = 0;
	const struct conf_key *k;

	while (p < end) {
		lineno++;
		nl = memchr(p, '\n', (size_t)(end - p));
		n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (n >= sizeof(line)) {
			snprintf(err, errsz, "%s:%d: line too long", name,
			    lineno);
			return -1;
		}
		if (memchr(p, '\0', n) != NULL) {
			snprintf(err, errsz, "%s:%d: NUL byte in line", name,
			    lineno);
			return -1;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (nl ? 1 : 0);

		key = text_trim_line(line);
		if (*key == '\0' || *key == '#')
			continue;
		eq = strchr(key, '=');
		if (eq == NULL) {
			snprintf(err, errsz, "%s:%d: expected \"key = value\"",
			    name, lineno);
			return -1;
		}
		*eq = '\0';
		key = text_trim_line(key);
		cut_comment(eq + 1);
		val = text_trim_line(eq + 1);
		k = NULL;
		for (i = 0; i < sizeof(conf_keys) / sizeof(conf_keys[0]); i++)
			if (strcmp(conf_keys[i].name, key) == 0)
				k = &conf_keys[i];
		if (k == NULL) {
			snprintf(err, errsz, "%s:%d: unknown key \"%s\"", name,
			    lineno, key);
			return -1;
		}
		if (*val == '\0' && k->type != T_OPTSTRING) {
			snprintf(err, errsz, "%s:%d: %s needs a value", name,
			    lineno, key);
			return -1;
		}
		if (conf_set(c, k, val, msg, sizeof(msg)) == -1) {
			snprintf(err, errsz, "%s:%d: %s", name, lineno, msg);
			return -1;
		}
		if (k->type == T_LISTEN)
			listen_line = lineno;
	}
	if (conf_check(c, name, listen_line, err, errsz) == -1)
		return -1;
	return 0;
}

/*
 * Check db_host: one node, or a comma-separated list of up to 16
 * "host[:port]" (a cluster's nodes, the preferred first), no blanks.
 */
static int
conf_check_nodes(const char *list, const char *name, char *err,
    size_t errsz)
{
	const char	*p = list, *end, *colon;
	char		*num_end;
	unsigned long	 port;
	size_t		 len;
	int		 n;

	for (n = 1; ; n++) {
		end = strchr(p, ',');
		len = end != NULL ? (size_t)(end - p) : strlen(p);
		colon = memchr(p, ':', len);
		if (len == 0 || colon == p || memchr(p, ' ', len) != NULL ||
		    memchr(p, '\t', len) != NULL) {
			snprintf(err, errsz, "%s: db_host node %d is empty or "
			    "holds a blank: write host[:port],host[:port]",
			    name, n);
			return -1;
		}
		if (colon != NULL) {
			errno = 0;
			port = strtoul(colon + 1, &num_end, 10);
			if (num_end != p + len || colon + 1 == num_end ||
			    port < 1 || port > 65535 || errno != 0) {
				snprintf(err, errsz, "%s: db_host node %d: the "
				    "port must be a number from 1 to 65535",
				    name, n);
				return -1;
			}
		}
		if (n > 16) {
			snprintf(err, errsz, "%s: db_host lists more than 16 "
			    "nodes", name);
			return -1;
		}
		if (end == NULL)
			return 0;
		p = end + 1;
	}
}

/*
 * Check a TCP listen (at line of file name): every local user can
 * connect to any TCP socket, loopback included, and other hosts to one
 * beyond loopback, so it needs frontend_secret_file, and beyond loopback
 * allow_peers too.
 */
static int
check_tcp_listen(const struct conf *c, const char *name, int line,
    char *err, size_t errsz)
{
	int	 local = conf_listen_is_loopback(c->listen);

	if (!local && c->allow_peers == NULL && c->frontend_secret == NULL) {
		snprintf(err, errsz, "%s:%d: listen = %s accepts connections "
		    "from other hosts and from every local user, and whoever "
		    "connects chooses the principal: list the web servers in "
		    "allow_peers (e.g. allow_peers = 10.0.0.5, 10.0.0.6) and "
		    "set frontend_secret_file to a secret they send, or use "
		    "listen = unix:/run/idemorders/idemorders.sock", name,
		    line, c->listen);
		return -1;
	}
	if (c->frontend_secret == NULL) {
		snprintf(err, errsz, "%s:%d: listen = %s is a TCP socket: every "
		    "local user can connect to it, and whoever connects chooses "
		    "the principal: set frontend_secret_file to a secret the "
		    "web server sends (httpd-conf/*-frontend-secret.conf), or "
		    "use listen = unix:/run/idemorders/idemorders.sock with "
		    "socket_group set to the web server's group", name, line,
		    c->listen);
		return -1;
	}
	if (!local && c->allow_peers == NULL) {
		snprintf(err, errsz, "%s:%d: listen = %s accepts connections "
		    "from other hosts, and whoever connects chooses the "
		    "principal: list the web servers in allow_peers (e.g. "
		    "allow_peers = 10.0.0.5, 10.0.0.6), or listen on 127.0.0.1",
		    name, line, c->listen);
		return -1;
	}
	return 0;
}

/*
 * Check the settings that depend on one another; listen_line is the
 * line that set listen (0: none).
 */
static int
conf_check(const struct conf *c, const char *name, int listen_line,
    char *err, size_t errsz)
{
	char	 a[32], b[32];

	if (c->db_host != NULL &&
	    conf_check_nodes(c->db_host, name, err, errsz) == -1)
		return -1;

	if ((c->socket_mode & 0002) != 0) {
		snprintf(err, errsz, "%s: socket_mode %04o lets every local "
		    "user connect and act as any principal: use 0660 with "
		    "socket_group set to the web server's group", name,
		    (unsigned int)c->socket_mode);
		return -1;
	}
	if (c->listen != NULL && strncmp(c->listen, "unix:", 5) == 0 &&
	    c->allow_peers != NULL) {
		snprintf(err, errsz, "%s: allow_peers applies to a TCP listen; "
		    "a unix socket is guarded by socket_mode and socket_group",
		    name);
		return -1;
	}
	if (c->listen != NULL && strncmp(c->listen, "unix:", 5) != 0 &&
	    check_tcp_listen(c, name, listen_line, err, errsz) == -1)
		return -1;

	if (c->tombstone_retention_ms != 0 &&
	    c->tombstone_retention_ms < c->key_retention_ms) {
		format_duration(c->tombstone_retention_ms, a, sizeof(a));
		format_duration(c->key_retention_ms, b, sizeof(b));
		snprintf(err, errsz, "%s: tombstone_retention (%s) is shorter "
		    "than key_retention (%s): a tombstone must outlive the key "
		    "it ends (0 keeps tombstones for ever)", name, a, b);
		return -1;
	}
	if ((c->webhook_url == NULL) != (c->webhook_secret == NULL)) {
		snprintf(err, errsz, "%s: webhook_url and webhook_secret_file "
		    "go together: events are signed with the endpoint's "
		    "secret", name);
		return -1;
	}
	if (c->webhook_ca_file != NULL && c->webhook_url == NULL) {
		snprintf(err, errsz, "%s: webhook_ca_file is set without "
		    "webhook_url: it names the CA of the endpoint's "
		    "certificate", name);
		return -1;
	}
	if (c->webhook_ca_file != NULL &&
	    strncmp(c->webhook_url, "https://", 8) != 0) {
		snprintf(err, errsz, "%s: webhook_ca_file is set but "
		    "webhook_url is not https://", name);
		return -1;
	}
	if (c->event_backoff_max_ms < c->event_backoff_ms) {
		snprintf(err, errsz, "%s: event_backoff_max is smaller than "
		    "event_backoff", name);
		return -1;
	}
	if (c->retry_backoff_max_ms < c->retry_backoff_ms) {
		snprintf(err, errsz, "%s: retry_backoff_max is smaller than "
		    "retry_backoff", name);
		return -1;
	}
	return 0;
}

/* Load defaults, then the file at path. */
int
conf_load(struct conf *c, const char *path, char *err, size_t errsz)
{
	char	*text = NULL;
	size_t	 len = 0;
	ssize_t	 n;
	int	 fd, rc = -1;

	conf_defaults(c);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		snprintf(err, errsz, "%s: %s", path, strerror(errno));
		return -1;
	}
	text = malloc(CONF_FILE_MAX);
	if (text == NULL) {
		snprintf(err, errsz, "out of memory");
		goto out;
	}
	for (;;) {
		n = read(fd, text + len, CONF_FILE_MAX - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == CONF_FILE_MAX) {
			snprintf(err, errsz, "%s: file too large", path);
			goto out;
		}
	}
	if (n == -1) {
		snprintf(err, errsz, "%s: %s", path, strerror(errno));
		goto out;
	}
	rc = conf_parse(c, path, text, len, err, errsz);
out:
	free(text);
	close(fd);
	return rc;
}
