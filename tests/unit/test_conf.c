#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/stat.h>

#include <CUnit/CUnit.h>

#include "conf.h"
#include "unit.h"

/* Parse text over the defaults; err receives the message. */
static int
parse(struct conf *c, const char *text, char *err, size_t errsz)
{
	conf_defaults(c);
	err[0] = '\0';
	return conf_parse(c, "test.conf", text, strlen(text), err, errsz);
}

static void
test_defaults(void)
{
	struct conf	 c;
	char		 err[256];

	CU_ASSERT_EQUAL(parse(&c, "# only a comment\n\n   \n", err,
	    sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(c.listen);
	CU_ASSERT_EQUAL(c.socket_mode, 0660);
	CU_ASSERT_EQUAL(c.workers, 4);
	CU_ASSERT_EQUAL(c.max_requests, 10000);
	CU_ASSERT_STRING_EQUAL(c.mount, "/orders");
	CU_ASSERT_STRING_EQUAL(c.principal_var, "REMOTE_USER");
	CU_ASSERT_EQUAL(c.max_body_bytes, 65536);
	CU_ASSERT_EQUAL(c.key_retention_ms, 24L * 3600 * 1000);
	CU_ASSERT_EQUAL(c.tombstone_retention_ms, 30L * 24 * 3600 * 1000);
	CU_ASSERT_EQUAL(c.cancel_window_ms, 30LL * 24 * 3600 * 1000);
	CU_ASSERT_EQUAL(c.key_reused_status, 409);
	CU_ASSERT_EQUAL(c.out_of_stock, OUT_OF_STOCK_FINAL);
	CU_ASSERT_EQUAL(c.max_attempts, 3);
	CU_ASSERT_EQUAL(c.request_deadline_ms, 30000);
	CU_ASSERT_PTR_NULL(c.user);
	CU_ASSERT_PTR_NULL(c.allow_peers);
	CU_ASSERT_PTR_NULL(c.frontend_secret);
	CU_ASSERT_STRING_EQUAL(c.frontend_secret_var,
	    "IDEMORDERS_FRONTEND_SECRET");
	CU_ASSERT_EQUAL(c.log_facility, LOG_DAEMON);
	CU_ASSERT_EQUAL(c.log_format, LOG_FORMAT_TEXT);
	CU_ASSERT_EQUAL(c.log_level, LOG_INFO);
	CU_ASSERT_EQUAL(c.log_syslog, 0);
	CU_ASSERT_EQUAL(c.metrics, 0);
	CU_ASSERT_STRING_EQUAL(c.db_host, "localhost");
	CU_ASSERT_EQUAL(c.db_port, 3306);
	CU_ASSERT_STRING_EQUAL(c.db_name, "idemorders");
	CU_ASSERT_STRING_EQUAL(c.db_user, "idemorders");
	CU_ASSERT_PTR_NULL(c.db_password);
	CU_ASSERT_EQUAL(c.db_connect_timeout_ms, 5000);
	CU_ASSERT_EQUAL(c.lock_wait_timeout_ms, 10000);
	CU_ASSERT(c.schema_dir != NULL && strlen(c.schema_dir) > 7 &&
	    strcmp(c.schema_dir + strlen(c.schema_dir) - 7, "/schema") == 0);
	CU_ASSERT_EQUAL(c.read_deadline_ms, 5000);
	CU_ASSERT_EQUAL(c.retry_backoff_ms, 50);
	CU_ASSERT_EQUAL(c.retry_backoff_max_ms, 1000);
	CU_ASSERT_EQUAL(c.expire_batch, 1000);
	CU_ASSERT_EQUAL(c.expire_pause_ms, 200);
	CU_ASSERT_PTR_NULL(c.webhook_url);
	CU_ASSERT_EQUAL(c.webhook_timeout_ms, 10000);
	CU_ASSERT_EQUAL(c.event_max_age_ms, 3LL * 24 * 3600 * 1000);
	CU_ASSERT_EQUAL(c.event_retention_ms, 7LL * 24 * 3600 * 1000);
	CU_ASSERT_EQUAL(c.event_poll_ms, 500);
	CU_ASSERT_EQUAL(c.event_backoff_ms, 1000);
	CU_ASSERT_EQUAL(c.event_backoff_max_ms, 3600000);
	CU_ASSERT_EQUAL(c.relay_concurrency, 8);
	conf_clear(&c);
}

/*
 * A reload keeps the running value of a key that needs a restart (the
 * socket's, the user's) and takes every other.
 */
static void
test_keep_restart(void)
{
	struct conf	 old, nc;
	char		 err[256];

	CU_ASSERT_EQUAL_FATAL(parse(&old, "listen = unix:/run/a.sock\n"
	    "socket_mode = 0660\nuser = www-data\nworkers = 4\n", err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(parse(&nc, "listen = unix:/run/b.sock\n"
	    "socket_mode = 0600\nsocket_group = www-data\nworkers = 9\n",
	    err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(conf_keep_restart(&nc, &old), 0);
	CU_ASSERT_STRING_EQUAL(nc.listen, "unix:/run/a.sock");
	CU_ASSERT_EQUAL(nc.socket_mode, 0660);
	CU_ASSERT_PTR_NULL(nc.socket_group);
	CU_ASSERT_STRING_EQUAL(nc.user, "www-data");
	CU_ASSERT_EQUAL(nc.workers, 9);
	conf_clear(&nc);
	conf_clear(&old);
}

static void
test_every_key(void)
{
	struct conf	 c;
	char		 err[256], pwfile[] = "/tmp/idemorders-pw-XXXXXX";
	char		 text[2048];
	FILE		*fp;
	int		 fd;

	fd = mkstemp(pwfile);
	CU_ASSERT_FATAL(fd != -1);
	fp = fdopen(fd, "w");
	fputs("s3cret\n", fp);
	fclose(fp);
	snprintf(text, sizeof(text),
	    "listen = unix:/run/idemorders/sock\n"
	    "socket_mode = 0640\n"
	    "socket_group = www-data\n"
	    "user = idemorders\n"
	    "group = idemorders\n"
	    "log_facility = local3\n"
	    "log_format = json\n"
	    "frontend_secret_var = FRONT_SECRET\n"
	    "workers = 8\n"
	    "max_requests = 0\n"
	    "log_level = debug\n"
	    "log = syslog\n"
	    "mount = /shop/orders\n"
	    "principal_var = REDIRECT_REMOTE_USER\n"
	    "max_body_bytes = 128k\n"
	    "db_host = db.example\n"
	    "db_port = 3307\n"
	    "db_socket = /run/mysqld/mysqld.sock\n"
	    "db_name = shop\n"
	    "db_user = shopuser\n"
	    "db_password = inline\n"
	    "db_password_file = %s\n"
	    "db_connect_timeout = 2s\n"
	    "lock_wait_timeout = 3s\n"
	    "schema_dir = /usr/share/idemorders/schema\n"
	    "key_retention = 2d\n"
	    "tombstone_retention = 0\n"
	    "cancel_window = 2h\n"
	    "key_reused_status = 422\n"
	    "out_of_stock = retryable\n"
	    "max_attempts = 5\n"
	    "request_deadline = 1500ms\n"
	    "retry_backoff = 10ms\n"
	    "retry_backoff_max = 2s\n"
	    "expire_batch = 500\n"
	    "expire_pause = 50ms\n", pwfile);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), 0);
	if (err[0])
		fprintf(stderr, "%s\n", err);
	CU_ASSERT_STRING_EQUAL(c.listen, "unix:/run/idemorders/sock");
	CU_ASSERT_EQUAL(c.socket_mode, 0640);
	CU_ASSERT_STRING_EQUAL(c.socket_group, "www-data");
	CU_ASSERT_STRING_EQUAL(c.user, "idemorders");
	CU_ASSERT_STRING_EQUAL(c.group, "idemorders");
	CU_ASSERT_EQUAL(c.log_facility, LOG_LOCAL3);
	CU_ASSERT_EQUAL(c.log_format, LOG_FORMAT_JSON);
	CU_ASSERT_STRING_EQUAL(c.frontend_secret_var, "FRONT_SECRET");
	CU_ASSERT_EQUAL(c.workers, 8);
	CU_ASSERT_EQUAL(c.max_requests, 0);
	CU_ASSERT_EQUAL(c.log_level, LOG_DEBUG);
	CU_ASSERT_EQUAL(c.log_syslog, 1);
	CU_ASSERT_STRING_EQUAL(c.mount, "/shop/orders");
	CU_ASSERT_STRING_EQUAL(c.principal_var, "REDIRECT_REMOTE_USER");
	CU_ASSERT_EQUAL(c.max_body_bytes, 128 * 1024);
	CU_ASSERT_STRING_EQUAL(c.db_host, "db.example");
	CU_ASSERT_EQUAL(c.db_port, 3307);
	CU_ASSERT_STRING_EQUAL(c.db_socket, "/run/mysqld/mysqld.sock");
	CU_ASSERT_STRING_EQUAL(c.db_name, "shop");
	CU_ASSERT_STRING_EQUAL(c.db_user, "shopuser");
	CU_ASSERT_STRING_EQUAL(c.db_password, "s3cret");
	CU_ASSERT_EQUAL(c.db_connect_timeout_ms, 2000);
	CU_ASSERT_EQUAL(c.lock_wait_timeout_ms, 3000);
	CU_ASSERT_STRING_EQUAL(c.schema_dir, "/usr/share/idemorders/schema");
	CU_ASSERT_EQUAL(c.key_retention_ms, 2L * 24 * 3600 * 1000);
	CU_ASSERT_EQUAL(c.tombstone_retention_ms, 0);
	CU_ASSERT_EQUAL(c.cancel_window_ms, 2LL * 3600 * 1000);
	CU_ASSERT_EQUAL(c.key_reused_status, 422);
	CU_ASSERT_EQUAL(c.out_of_stock, OUT_OF_STOCK_RETRYABLE);
	CU_ASSERT_EQUAL(c.max_attempts, 5);
	CU_ASSERT_EQUAL(c.request_deadline_ms, 1500);
	CU_ASSERT_EQUAL(c.retry_backoff_ms, 10);
	CU_ASSERT_EQUAL(c.retry_backoff_max_ms, 2000);
	CU_ASSERT_EQUAL(c.expire_batch, 500);
	CU_ASSERT_EQUAL(c.expire_pause_ms, 50);
	conf_clear(&c);
	conf_clear(&c);
	remove(pwfile);
}

static void
test_durations(void)
{
	long long	 ms;
	size_t	 sz;

	CU_ASSERT_EQUAL(conf_parse_duration("250ms", &ms), 0);
	CU_ASSERT_EQUAL(ms, 250);
	CU_ASSERT_EQUAL(conf_parse_duration("30s", &ms), 0);
	CU_ASSERT_EQUAL(ms, 30000);
	CU_ASSERT_EQUAL(conf_parse_duration("5m", &ms), 0);
	CU_ASSERT_EQUAL(ms, 300000);
	CU_ASSERT_EQUAL(conf_parse_duration("24h", &ms), 0);
	CU_ASSERT_EQUAL(ms, 86400000);
	CU_ASSERT_EQUAL(conf_parse_duration("30d", &ms), 0);
	CU_ASSERT_EQUAL(ms, 2592000000L);
	CU_ASSERT_EQUAL(conf_parse_duration("0", &ms), 0);
	CU_ASSERT_EQUAL(ms, 0);
	CU_ASSERT_EQUAL(conf_parse_duration("30", &ms), -1);
	CU_ASSERT_EQUAL(conf_parse_duration("-1s", &ms), -1);
	CU_ASSERT_EQUAL(conf_parse_duration("1.5s", &ms), -1);
	CU_ASSERT_EQUAL(conf_parse_duration("s", &ms), -1);
	CU_ASSERT_EQUAL(conf_parse_duration("10 s", &ms), -1);
	CU_ASSERT_EQUAL(conf_parse_duration("1w", &ms), -1);
	CU_ASSERT_EQUAL(conf_parse_duration("99999999999999999999d", &ms), -1);
	CU_ASSERT_EQUAL(conf_parse_size("64k", &sz), 0);
	CU_ASSERT_EQUAL(sz, 65536);
	CU_ASSERT_EQUAL(conf_parse_size("1M", &sz), 0);
	CU_ASSERT_EQUAL(sz, 1048576);
	CU_ASSERT_EQUAL(conf_parse_size("1000", &sz), 0);
	CU_ASSERT_EQUAL(sz, 1000);
	CU_ASSERT_EQUAL(conf_parse_size("1g", &sz), -1);
	CU_ASSERT_EQUAL(conf_parse_size("", &sz), -1);
}

struct bad_case {
	const char	*text;
	const char	*want;	/* expected in the message */
};

static const struct bad_case bad[] = {
	{ "workers = 4\nbogus_key = 1\n", "test.conf:2: unknown key \"bogus_key\"" },
	{ "just words\n", "test.conf:1: expected \"key = value\"" },
	{ "\n\nworkers = 0\n", "test.conf:3: workers must be an integer from 1" },
	{ "workers = 4x\n", "test.conf:1: workers must be an integer" },
	{ "workers =\n", "test.conf:1: workers needs a value" },
	{ "socket_mode = 660\n", "socket_mode must be octal" },
	{ "socket_mode = 0999\n", "socket_mode must be octal" },
	{ "listen = /tmp/sock\n", "listen must be unix:/PATH or HOST:PORT" },
	{ "listen = 127.0.0.1:99999\n", "listen must be" },
	{ "listen = unix:relative\n", "listen must be" },
	{ "mount = orders\n", "mount must be a path" },
	{ "mount = /orders/\n", "mount must be a path" },
	{ "request_deadline = 30\n", "request_deadline must be a duration" },
	{ "request_deadline = 1ms\n", "request_deadline is out of range" },
	{ "key_retention = 0\n", "key_retention is out of range" },
	{ "max_body_bytes = 10\n", "max_body_bytes must be a size" },
	{ "log_level = loud\n", "log_level must be" },
	{ "log = file\n", "log must be stderr or syslog" },
	{ "key_reused_status = 400\n", "key_reused_status must be 409 or 422" },
	{ "out_of_stock = maybe\n", "out_of_stock must be final or retryable" },
	{ "db_port = 0\n", "db_port must be a port number" },
	{ "db_socket = relative.sock\n", "db_socket must be an absolute path" },
	{ "db_password_file = /nonexistent/pw\n", "cannot read /nonexistent/pw" },
	{ "retry_backoff = 2s\nretry_backoff_max = 1s\n",
	    "retry_backoff_max is smaller than retry_backoff" },
	{ "max_attempts = 0\n", "max_attempts must be an integer from 1 to 20" },
	{ "expire_pause = 2m\n", "expire_pause is out of range" },
	{ "principal_var =\n", "test.conf:1: principal_var needs a value" },
	{ "principal_var = HTTP_X_USER\n",
	    "principal_var may not be an HTTP_* variable" },
	{ "principal_var = http_remote_user\n",
	    "principal_var may not be an HTTP_* variable" },
	{ "frontend_secret_var = HTTP_X_SECRET\n",
	    "frontend_secret_var may not be an HTTP_* variable" },
	{ "principal_var = REMOTE-USER\n", "must be a variable name" },
	{ "socket_mode = 0666\n", "socket_mode 0666 lets every local user" },
	{ "db_host = a:3311, b:3312\n", "db_host node 2 is empty or holds a blank" },
	{ "db_host = a:3311,b:0\n", "db_host node 2: the port must be" },
	{ "db_host = a:x\n", "db_host node 1: the port must be" },
	{ "db_host = a,,b\n", "db_host node 2 is empty" },
	{ "socket_mode = 0662\n", "socket_mode 0662 lets every local user" },
	{ "listen = 0.0.0.0:9000\n", "listen = 0.0.0.0:9000 accepts connections "
	    "from other hosts" },
	{ "listen = [::]:9000\n", "list the web servers in allow_peers" },
	{ "listen = [::]:9000\n", "and set frontend_secret_file" },
	{ "listen = db.example:9000\n", "list the web servers in allow_peers" },
	{ "listen = unix:/run/x.sock\nallow_peers = 10.0.0.5\n",
	    "allow_peers applies to a TCP listen" },
	{ "allow_peers = 10.0.0.5, web1\n",
	    "allow_peers: \"web1\" is not an IPv4 or IPv6 address" },
	{ "log_facility = kern\n", "log_facility must be daemon" },
	{ "log_format = xml\n", "log_format must be text or json" },
	{ "frontend_secret_file = /nonexistent/s\n", "cannot read /nonexistent/s" },
	{ "db_user =   \n", "test.conf:1: db_user needs a value" },
	{ "key_retention = 7d\ntombstone_retention = 1d\n",
	    "tombstone_retention (1d) is shorter than key_retention (7d)" },
};

static void
test_bad_lines(void)
{
	struct conf	 c;
	char		 err[256];
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(parse(&c, bad[i].text, err, sizeof(err)), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].want));
		if (strstr(err, bad[i].want) == NULL)
			fprintf(stderr, "case %zu: got \"%s\"\n", i, err);
		conf_clear(&c);
	}
}

static void
test_whitespace_and_comments(void)
{
	struct conf	 c;
	char		 err[256];

	CU_ASSERT_EQUAL(parse(&c, "  workers\t=\t6  \r\n# mount = /x\n"
	    "\tmount=/api/orders\n", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.workers, 6);
	CU_ASSERT_STRING_EQUAL(c.mount, "/api/orders");
	conf_clear(&c);
	/* A later line wins. */
	CU_ASSERT_EQUAL(parse(&c, "workers = 2\nworkers = 3\n", err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.workers, 3);
	conf_clear(&c);
}

/* A secret as the documented generator makes it: 64 hex digits. */
#define SECRET_64 \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Write text to a fresh temporary file; path receives its name. */
static void
write_temp(char *path, const char *text, size_t len)
{
	int	 fd;

	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd != -1);
	CU_ASSERT_FATAL(write(fd, text, len) == (ssize_t)len);
	close(fd);
}

static void
test_trailing_comments(void)
{
	struct conf	 c;
	char		 err[256];

	/* '#' after whitespace starts a comment; inside a word it does not. */
	CU_ASSERT_EQUAL(parse(&c, "db_user = shop   # the shop's account\n"
	    "db_password = pa#ss\n"
	    "mount = /api/orders\t# where the web server mounts it\n"
	    "db_name = shop#1 # with a comment\n", err, sizeof(err)), 0);
	if (err[0])
		fprintf(stderr, "%s\n", err);
	CU_ASSERT_STRING_EQUAL(c.db_user, "shop");
	CU_ASSERT_STRING_EQUAL(c.db_password, "pa#ss");
	CU_ASSERT_STRING_EQUAL(c.mount, "/api/orders");
	CU_ASSERT_STRING_EQUAL(c.db_name, "shop#1");
	conf_clear(&c);
	/* A value that is only a comment is no value. */
	CU_ASSERT_EQUAL(parse(&c, "db_user = # none\n", err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "test.conf:1: db_user needs a value"));
	conf_clear(&c);
}

static void
test_password_file(void)
{
	struct conf	 c;
	char		 err[256], text[512], *big;
	char		 path[] = "/tmp/idemorders-pw-XXXXXX";
	size_t		 i;

	/* A long password is read whole; one trailing newline goes. */
	big = malloc(6000);
	CU_ASSERT_FATAL(big != NULL);
	for (i = 0; i < 2000; i++)
		big[i] = (char)('a' + i % 26);
	big[2000] = '\n';
	write_temp(path, big, 2001);
	snprintf(text, sizeof(text), "db_password_file = %s\n", path);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c.db_password);
	CU_ASSERT_EQUAL(strlen(c.db_password), 2000);
	CU_ASSERT_EQUAL(memcmp(c.db_password, big, 2000), 0);
	conf_clear(&c);
	remove(path);

	/* No newline at the end is fine too; CRLF loses both. */
	strcpy(path, "/tmp/idemorders-pw-XXXXXX");
	write_temp(path, "p w#1\r\n", 7);
	snprintf(text, sizeof(text), "db_password_file = %s\n", path);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c.db_password, "p w#1");
	conf_clear(&c);
	remove(path);

	/* Too large: an error, not a silent cut. */
	strcpy(path, "/tmp/idemorders-pw-XXXXXX");
	memset(big, 'x', 5000);
	write_temp(path, big, 5000);
	snprintf(text, sizeof(text), "db_password_file = %s\n", path);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "larger than 4096 bytes"));
	conf_clear(&c);
	remove(path);

	/* A second line is a mistake, not part of the password. */
	strcpy(path, "/tmp/idemorders-pw-XXXXXX");
	write_temp(path, "first\nsecond\n", 13);
	snprintf(text, sizeof(text), "db_password_file = %s\n", path);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "more than one line"));
	conf_clear(&c);
	remove(path);

	/* Readable by every user: refused. */
	strcpy(path, "/tmp/idemorders-pw-XXXXXX");
	write_temp(path, "secret\n", 7);
	chmod(path, 0644);
	snprintf(text, sizeof(text), "db_password_file = %s\n", path);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "is readable by every user (mode "
	    "0644)"));
	conf_clear(&c);
	remove(path);

	/* Empty. */
	strcpy(path, "/tmp/idemorders-pw-XXXXXX");
	write_temp(path, "\n", 1);
	snprintf(text, sizeof(text), "db_password_file = %s\n", path);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "is empty"));
	conf_clear(&c);
	remove(path);
	free(big);
}

static void
test_long_durations(void)
{
	long long	 ms;
	struct conf	 c;
	char		 err[256];

	CU_ASSERT_EQUAL(conf_parse_duration("3650d", &ms), 0);
	CU_ASSERT_EQUAL(ms, 3650LL * 24 * 3600 * 1000);
	CU_ASSERT_EQUAL(conf_parse_duration("9223372036854775807ms", &ms), 0);
	CU_ASSERT_EQUAL(conf_parse_duration("9223372036854775807s", &ms), -1);
	CU_ASSERT_EQUAL(parse(&c, "key_retention = 3650d\n"
	    "tombstone_retention = 36500d\n", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.key_retention_ms, 3650LL * 24 * 3600 * 1000);
	CU_ASSERT_EQUAL(c.tombstone_retention_ms, 36500LL * 24 * 3600 * 1000);
	conf_clear(&c);
}

static void
test_long_listen_host(void)
{
	struct conf	 c;
	char		 err[256], text[700];

	memset(text, 0, sizeof(text));
	strcpy(text, "listen = ");
	memset(text + 9, 'h', 300);
	strcat(text, ":9000\n");
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "host is longer than 255 bytes"));
	conf_clear(&c);
	CU_ASSERT_EQUAL(parse(&c, "listen = [::1]:9000\n", err,
	    sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "set frontend_secret_file"));
	conf_clear(&c);
}

static void
test_peers(void)
{
	struct conf	 c;
	char		 err[256], text[512];
	char		 path[] = "/tmp/idemorders-fs-XXXXXX";

	write_temp(path, SECRET_64 "\n", 65);
	snprintf(text, sizeof(text), "listen = 0.0.0.0:9000\n"
	    "allow_peers = 10.0.0.5, 10.0.0.6\n"
	    "frontend_secret_file = %s\n", path);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), 0);
	conf_clear(&c);
	snprintf(text, sizeof(text), "listen = 127.0.0.1:9000\n"
	    "frontend_secret_file = %s\n", path);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), 0);
	conf_clear(&c);
	remove(path);
	CU_ASSERT_TRUE(conf_listen_is_loopback("127.0.0.1:9000"));
	CU_ASSERT_TRUE(conf_listen_is_loopback("127.1.2.3:9000"));
	CU_ASSERT_TRUE(conf_listen_is_loopback("[::1]:9000"));
	CU_ASSERT_TRUE(conf_listen_is_loopback("localhost:9000"));
	CU_ASSERT_FALSE(conf_listen_is_loopback("0.0.0.0:9000"));
	CU_ASSERT_FALSE(conf_listen_is_loopback("[::]:9000"));
	CU_ASSERT_FALSE(conf_listen_is_loopback("10.0.0.1:9000"));
	CU_ASSERT_FALSE(conf_listen_is_loopback("128.0.0.1:9000"));
}

static void
test_frontend_secret(void)
{
	struct conf	 c;
	char		 err[256], text[256];
	char		 path[] = "/tmp/idemorders-fs-XXXXXX";

	write_temp(path, "0123456789abcdef0123456789abcdef\n", 33);
	snprintf(text, sizeof(text), "frontend_secret_file = %s\n", path);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c.frontend_secret,
	    "0123456789abcdef0123456789abcdef");
	conf_clear(&c);
	CU_ASSERT_PTR_NULL(c.frontend_secret);
	remove(path);
}

/*
 * A rotation: the first line is the current secret (the one the web
 * server sends), the second the previous one, accepted too until the
 * web server has the new one.  Three lines, an empty line or a stray
 * CR are refused.
 */
#define NEW	"new-4f1c2a9b8e7d6c5b4a39281706f5e4d3c2b1a0"
#define OLD	"old-0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2"

static void
test_frontend_secret_rotation(void)
{
	static const struct {
		const char	*file;
		const char	*cur, *prev;	/* NULL cur: refused */
		const char	*err;
	} t[] = {
		{ NEW "\n" OLD "\n", NEW, OLD, NULL },
		{ NEW "\r\n" OLD "\r\n", NEW, OLD, NULL },
		{ NEW "\n" OLD, NEW, OLD, NULL },
		{ NEW "\n", NEW, NULL, NULL },
		{ NEW "\n" OLD "\n" NEW "\n", NULL, NULL,
		    "more than two lines" },
		{ "\n" OLD "\n", NULL, NULL, "empty line" },
		{ NEW "\n\n", NULL, NULL, "empty line" },
		{ NEW "\n" OLD "\n\n", NULL, NULL, "more than two lines" },
		{ "ne\rw" NEW "\n" OLD "\n", NULL, NULL, "carriage return" },
		/* Each line is a secret of its own, held to the minimum. */
		{ NEW "\nold\n", NULL, NULL, "line 2 of" },
	};
	struct conf	 c;
	char		 err[512], text[256];
	size_t		 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char	 path[] = "/tmp/idemorders-fs-XXXXXX";

		write_temp(path, t[i].file, strlen(t[i].file));
		snprintf(text, sizeof(text), "frontend_secret_file = %s\n",
		    path);
		if (t[i].cur != NULL) {
			CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), 0);
			CU_ASSERT_STRING_EQUAL(c.frontend_secret, t[i].cur);
			if (t[i].prev == NULL) {
				CU_ASSERT_PTR_NULL(c.frontend_secret_prev);
			} else {
				CU_ASSERT_STRING_EQUAL(c.frontend_secret_prev,
				    t[i].prev);
			}
		} else {
			CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), -1);
			CU_ASSERT_PTR_NOT_NULL(strstr(err, t[i].err));
			if (strstr(err, t[i].err) == NULL)
				fprintf(stderr, "case %zu: %s\n", i, err);
		}
		conf_clear(&c);
		CU_ASSERT_PTR_NULL(c.frontend_secret);
		CU_ASSERT_PTR_NULL(c.frontend_secret_prev);
		remove(path);
	}
}

/*
 * Any TCP listen, loopback included, needs frontend_secret_file: every
 * local user can connect to 127.0.0.1.  The error names the listen line.
 */
static void
test_tcp_needs_secret(void)
{
	static const struct {
		const char	*text;
		const char	*want;
	} t[] = {
		{ "listen = 127.0.0.1:9000\n", "test.conf:1: listen = "
		    "127.0.0.1:9000 is a TCP socket: every local user can "
		    "connect to it" },
		{ "workers = 2\nlisten = [::1]:9000\n", "test.conf:2: listen" },
		{ "listen = localhost:9000\n", "set frontend_secret_file" },
		{ "listen = 0.0.0.0:9000\nallow_peers = 10.0.0.5\n",
		    "test.conf:1: listen = 0.0.0.0:9000 is a TCP socket" },
		{ "listen = 0.0.0.0:9000\n", "test.conf:1: listen = "
		    "0.0.0.0:9000 accepts connections from other hosts" },
	};
	struct conf	 c;
	char		 err[512], text[512];
	char		 path[] = "/tmp/idemorders-fs-XXXXXX";
	size_t		 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		CU_ASSERT_EQUAL(parse(&c, t[i].text, err, sizeof(err)), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, t[i].want));
		if (strstr(err, t[i].want) == NULL)
			fprintf(stderr, "case %zu: got \"%s\"\n", i, err);
		conf_clear(&c);
	}
	/* With the secret: served; beyond loopback allow_peers still. */
	write_temp(path, SECRET_64 "\n", 65);
	snprintf(text, sizeof(text), "listen = 127.0.0.1:9000\n"
	    "frontend_secret_file = %s\n", path);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), 0);
	conf_clear(&c);
	snprintf(text, sizeof(text), "frontend_secret_file = %s\n"
	    "listen = [::]:9000\n", path);
	CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "test.conf:2: listen = [::]:9000 "
	    "accepts connections from other hosts"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "list the web servers in "
	    "allow_peers"));
	conf_clear(&c);
	/* A unix socket needs none. */
	CU_ASSERT_EQUAL(parse(&c, "listen = unix:/run/x.sock\n", err,
	    sizeof(err)), 0);
	conf_clear(&c);
	remove(path);
}

/*
 * principal_var names only what a web server sets from its own
 * authentication; frontend_secret_var no variable a web server fills
 * from the request (or its own request variables).
 */
static void
test_envvar_names(void)
{
	static const char *principal_ok[] = {
		"REMOTE_USER", "REDIRECT_REMOTE_USER",
	};
	static const char *principal_bad[] = {
		"CONTENT_TYPE", "QUERY_STRING", "PATH_INFO", "SERVER_NAME",
		"REQUEST_URI", "SCRIPT_NAME", "AUTH_TYPE", "REMOTE_ADDR",
		"REMOTE_HOST", "REMOTE_IDENT", "SSL_CLIENT_S_DN_CN",
		"REDIRECT_QUERY_STRING", "REDIRECT_HTTP_X_USER", "remote_user",
		"AUTH_USER", "X_USER", "IDEMORDERS_FRONTEND_SECRET",
	};
	static const char *secret_ok[] = {
		"IDEMORDERS_FRONTEND_SECRET", "FRONT_SECRET", "SHOP_SECRET_2",
	};
	static const char *secret_bad[] = {
		/* RFC 3875 */
		"AUTH_TYPE", "CONTENT_LENGTH", "CONTENT_TYPE",
		"GATEWAY_INTERFACE", "PATH_INFO", "PATH_TRANSLATED",
		"QUERY_STRING", "REMOTE_ADDR", "REMOTE_HOST", "REMOTE_IDENT",
		"REMOTE_USER", "REQUEST_METHOD", "SCRIPT_NAME", "SERVER_NAME",
		"SERVER_PORT", "SERVER_PROTOCOL", "SERVER_SOFTWARE",
		/* what lighttpd, Apache and their modules add */
		"REQUEST_URI", "REQUEST_SCHEME", "REQUEST_TIME", "SCRIPT_FILENAME",
		"SCRIPT_URI", "SCRIPT_URL", "DOCUMENT_ROOT", "DOCUMENT_URI",
		"REDIRECT_STATUS", "REDIRECT_URI", "REDIRECT_REMOTE_USER",
		"CONTEXT_PREFIX", "CONTEXT_DOCUMENT_ROOT", "SERVER_ADDR",
		"SERVER_ADMIN", "SERVER_SIGNATURE", "REMOTE_PORT", "HTTPS",
		"UNIQUE_ID", "SSL_CLIENT_S_DN", "SSL_PROTOCOL", "PATH",
		"FCGI_ROLE", "PHP_VALUE", "PHP_ADMIN_VALUE", "AUTH_USER",
		"HTTP_X_SECRET", "https", "Query_String",
	};
	struct conf	 c;
	char		 err[512], text[128];
	size_t		 i;

	for (i = 0; i < sizeof(principal_ok) / sizeof(principal_ok[0]); i++) {
		snprintf(text, sizeof(text), "principal_var = %s\n",
		    principal_ok[i]);
		CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), 0);
		if (err[0] != '\0')
			fprintf(stderr, "%s: %s\n", principal_ok[i], err);
		conf_clear(&c);
	}
	for (i = 0; i < sizeof(principal_bad) / sizeof(principal_bad[0]);
	    i++) {
		snprintf(text, sizeof(text), "principal_var = %s\n",
		    principal_bad[i]);
		CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "test.conf:1: principal_var"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, principal_bad[i]));
		if (strstr(err, principal_bad[i]) == NULL)
			fprintf(stderr, "%s: got \"%s\"\n", principal_bad[i],
			    err);
		conf_clear(&c);
	}
	for (i = 0; i < sizeof(secret_ok) / sizeof(secret_ok[0]); i++) {
		snprintf(text, sizeof(text), "frontend_secret_var = %s\n",
		    secret_ok[i]);
		CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), 0);
		if (err[0] != '\0')
			fprintf(stderr, "%s: %s\n", secret_ok[i], err);
		conf_clear(&c);
	}
	for (i = 0; i < sizeof(secret_bad) / sizeof(secret_bad[0]); i++) {
		snprintf(text, sizeof(text), "frontend_secret_var = %s\n",
		    secret_bad[i]);
		CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err,
		    "test.conf:1: frontend_secret_var"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, secret_bad[i]));
		if (strstr(err, secret_bad[i]) == NULL)
			fprintf(stderr, "%s: got \"%s\"\n", secret_bad[i], err);
		conf_clear(&c);
	}
	/* The messages say what to do. */
	CU_ASSERT_EQUAL(parse(&c, "principal_var = QUERY_STRING\n", err,
	    sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "REMOTE_USER"));
	conf_clear(&c);
	CU_ASSERT_EQUAL(parse(&c, "frontend_secret_var = SERVER_NAME\n", err,
	    sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "IDEMORDERS_FRONTEND_SECRET"));
	conf_clear(&c);
}

/*
 * A frontend secret has at least 32 characters, each a letter, a digit
 * or one of - . _ ~ + / =: what the documented generator (64 hex digits),
 * base64 and base64url make, and what a web server's configuration
 * string holds without quoting.  The error never shows the secret.
 */
static void
test_frontend_secret_strength(void)
{
	static const struct {
		const char	*file;
		const char	*err;		/* NULL: accepted */
	} t[] = {
		{ SECRET_64 "\n", NULL },
		{ "0123456789abcdef0123456789abcdef\n", NULL },
		{ "q8V1+Jc0pPzX2/3kYlT9mN4rA7sW6eB5dF0gH1iK2jM=\n", NULL },
		{ "q8V1-Jc0pPzX2_3kYlT9mN4rA7sW6eB5dF0gH1iK2jM.~\n", NULL },
		{ "x\n", "line 1 of" },
		{ "x\n", "has 1 characters; it needs at least 32" },
		{ "0123456789abcdef0123456789abcde\n", "has 31 characters" },
		{ "                                        \n",
		    "a character other than" },
		{ "0123456789abcdef 0123456789abcdef\n",
		    "a character other than" },
		{ "0123456789abcdef\t0123456789abcdef\n",
		    "a character other than" },
		{ "\"0123456789abcdef0123456789abcdef\"\n",
		    "a character other than" },
		{ "0123456789abcdef0123456789abcdef\\\n",
		    "a character other than" },
		{ "${X}0123456789abcdef0123456789abcdef\n",
		    "a character other than" },
		{ "0123456789abcdef0123456789abcdef\xc3\xa9\n",
		    "a character other than" },
	};
	struct conf	 c;
	char		 err[512], text[256];
	size_t		 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char	 path[] = "/tmp/idemorders-fs-XXXXXX";

		write_temp(path, t[i].file, strlen(t[i].file));
		snprintf(text, sizeof(text), "frontend_secret_file = %s\n",
		    path);
		if (t[i].err == NULL) {
			CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), 0);
			if (err[0] != '\0')
				fprintf(stderr, "case %zu: %s\n", i, err);
		} else {
			CU_ASSERT_EQUAL(parse(&c, text, err, sizeof(err)), -1);
			CU_ASSERT_PTR_NOT_NULL(strstr(err, t[i].err));
			CU_ASSERT_PTR_NOT_NULL(strstr(err, "test.conf:1: "));
			CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
			/* The secret itself is never in the message. */
			CU_ASSERT_PTR_NULL(strstr(err, "0123456789abcdef"));
			if (strstr(err, t[i].err) == NULL)
				fprintf(stderr, "case %zu: %s\n", i, err);
		}
		conf_clear(&c);
		remove(path);
	}
}

static void
test_load_missing(void)
{
	struct conf	 c;
	char		 err[256];

	CU_ASSERT_EQUAL(conf_load(&c, "/nonexistent/idemorders.conf", err,
	    sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/idemorders.conf"));
	conf_clear(&c);
}

/* The conf suite. */
static const struct unit_test tests[] = {
	{ "defaults", test_defaults },
	{ "a reload keeps what needs a restart", test_keep_restart },
	{ "every key", test_every_key },
	{ "durations and sizes", test_durations },
	{ "bad lines", test_bad_lines },
	{ "whitespace", test_whitespace_and_comments },
	{ "missing file", test_load_missing },
	{ "trailing comments", test_trailing_comments },
	{ "password file", test_password_file },
	{ "long durations", test_long_durations },
	{ "long listen host", test_long_listen_host },
	{ "allow_peers", test_peers },
	{ "frontend secret", test_frontend_secret },
	{ "frontend secret rotation", test_frontend_secret_rotation },
	{ "frontend secret strength", test_frontend_secret_strength },
	{ "TCP listen needs the frontend secret", test_tcp_needs_secret },
	{ "principal and secret variable names", test_envvar_names },
	{ NULL, NULL },
};

const struct unit_suite test_conf_suite = { "conf", NULL, NULL, tests };
