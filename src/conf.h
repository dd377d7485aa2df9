/*
 * The configuration file: "key = value" lines, '#' comments (a '#' at
 * the start of a line, or after a space or a tab in a value).  Unknown
 * keys and bad values are errors naming the file and the line.
 */
#ifndef IDEMORDERS_CONF_H
#define IDEMORDERS_CONF_H

#include <stddef.h>
#include <sys/types.h>

#define CONF_DEFAULT_PATH	SYSCONFDIR "/idemorders.conf"

enum log_format {
	LOG_FORMAT_TEXT = 0,
	LOG_FORMAT_JSON,	/* the request log as one JSON object a line */
};

enum out_of_stock_policy {
	OUT_OF_STOCK_FINAL = 0,
	OUT_OF_STOCK_RETRYABLE,
};

struct conf {
	/* process */
	char		*listen;	/* "unix:PATH", "HOST:PORT" or NULL: fd 0 */
	mode_t		 socket_mode;
	char		*socket_group;
	char		*allow_peers;	/* "ADDR, ADDR": TCP peers, or NULL */
	char		*user;		/* serve drops to it when root */
	char		*group;		/* NULL: the user's primary group */
	int		 workers;
	long		 max_requests;	/* 0: never recycle */
	int		 log_level;	/* LOG_ERR .. LOG_DEBUG */
	int		 log_syslog;
	int		 log_facility;	/* LOG_DAEMON, LOG_LOCAL0 ... */
	enum log_format	 log_format;

	/* HTTP */
	char		*mount;
	char		*principal_var;
	char		*frontend_secret;	/* frontend_secret_file, line 1 */
	char		*frontend_secret_prev;	/* its line 2 (a rotation), or NULL */
	char		*frontend_secret_var;
	size_t		 max_body_bytes;
	int		 metrics;	/* serve GET {mount}/_metrics */

	/* database */
	char		*db_host;
	unsigned int	 db_port;
	char		*db_socket;
	char		*db_name;
	char		*db_user;
	char		*db_password;
	long		 db_connect_timeout_ms;
	long		 lock_wait_timeout_ms;
	char		*schema_dir;

	/* idempotency */
	long long	 key_retention_ms;
	long long	 tombstone_retention_ms;	/* 0: keep for ever */
	long long	 cancel_window_ms;	/* 0: no limit */
	int		 key_reused_status;		/* 409 or 422 */
	enum out_of_stock_policy out_of_stock;
	int		 max_attempts;
	long		 request_deadline_ms;
	long		 read_deadline_ms;	/* GET and _health */
	long		 retry_backoff_ms;
	long		 retry_backoff_max_ms;
	long		 expire_batch;
	long		 expire_pause_ms;

	/* events and the relay */
	char		*webhook_url;		/* NULL: no endpoint */
	char		*webhook_secret;	/* webhook_secret_file: "whsec_..." */
	char		*webhook_ca_file;	/* NULL: the system's CAs */
	long		 webhook_timeout_ms;
	long long	 event_max_age_ms;
	long long	 event_retention_ms;
	long		 event_poll_ms;
	long		 event_backoff_ms;
	long		 event_backoff_max_ms;
	int		 relay_concurrency;
};

void	conf_defaults(struct conf *);
int	conf_load(struct conf *, const char *, char *, size_t);
int	conf_parse(struct conf *, const char *, const char *, size_t,
	    char *, size_t);
void	conf_clear(struct conf *);
int	conf_keep_restart(struct conf *, const struct conf *);
int	conf_parse_duration(const char *, long long *);
int	conf_parse_size(const char *, size_t *);
int	conf_listen_is_loopback(const char *);

#endif
