/*
 * The configuration parser on a buffer: no memory error or leak whatever
 * the text, an error names the file and line, and an accepted text gives
 * values inside the ranges the service relies on.
 *
 * A db_password_file line opens the file it names; the seeds only name
 * files that the harness creates or that do not exist.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "conf.h"
#include "fuzz_check.h"

/* Tell whether a name that must be set is a non-empty string. */
static int
name_ok(const char *s)
{
	return s != NULL && s[0] != '\0';
}

/* Check the values of an accepted configuration. */
static void
check_conf(const struct conf *c)
{
	if (c->workers < 1 || c->workers > 512)
		fuzz_fail("workers %d", c->workers);
	if (c->max_requests < 0)
		fuzz_fail("max_requests %ld", c->max_requests);
	if (c->log_level < LOG_ERR || c->log_level > LOG_DEBUG)
		fuzz_fail("log_level %d", c->log_level);
	if (c->mount == NULL || c->mount[0] != '/' ||
	    strpbrk(c->mount, "?#% ") != NULL ||
	    (strlen(c->mount) > 1 && c->mount[strlen(c->mount) - 1] == '/'))
		fuzz_fail("mount \"%s\"", c->mount ? c->mount : "NULL");
	if (c->max_body_bytes < 256 || c->max_body_bytes > 16 << 20)
		fuzz_fail("max_body_bytes %zu", c->max_body_bytes);
	if (c->db_port < 1 || c->db_port > 65535)
		fuzz_fail("db_port %u", c->db_port);
	if (c->key_reused_status != 409 && c->key_reused_status != 422)
		fuzz_fail("key_reused_status %d", c->key_reused_status);
	if (c->max_attempts < 1 || c->max_attempts > 20)
		fuzz_fail("max_attempts %d", c->max_attempts);
	if (c->request_deadline_ms < 100 || c->request_deadline_ms > 600000)
		fuzz_fail("request_deadline %ld", c->request_deadline_ms);
	if (c->retry_backoff_ms < 1 ||
	    c->retry_backoff_max_ms < c->retry_backoff_ms)
		fuzz_fail("retry_backoff %ld, max %ld", c->retry_backoff_ms,
		    c->retry_backoff_max_ms);
	if (c->key_retention_ms < 1000 || (c->tombstone_retention_ms != 0 &&
	    c->tombstone_retention_ms < c->key_retention_ms))
		fuzz_fail("retention %lld, tombstones %lld",
		    c->key_retention_ms, c->tombstone_retention_ms);
	if (c->read_deadline_ms < 100 || c->read_deadline_ms > 600000)
		fuzz_fail("read_deadline %ld", c->read_deadline_ms);
	if (c->log_format != LOG_FORMAT_TEXT && c->log_format != LOG_FORMAT_JSON)
		fuzz_fail("log_format %d", (int)c->log_format);
	if (!name_ok(c->principal_var) || !name_ok(c->frontend_secret_var) ||
	    strncasecmp(c->principal_var, "HTTP_", 5) == 0 ||
	    strncasecmp(c->frontend_secret_var, "HTTP_", 5) == 0)
		fuzz_fail("principal_var \"%s\", frontend_secret_var \"%s\"",
		    c->principal_var ? c->principal_var : "NULL",
		    c->frontend_secret_var ? c->frontend_secret_var : "NULL");
	if (!name_ok(c->db_host) || !name_ok(c->db_name) ||
	    !name_ok(c->db_user))
		fuzz_fail("an empty db_host, db_name or db_user");
	if (c->lock_wait_timeout_ms < 1000 || c->db_connect_timeout_ms < 1000)
		fuzz_fail("timeouts %ld, %ld", c->lock_wait_timeout_ms,
		    c->db_connect_timeout_ms);
	if (c->expire_batch < 1 || c->expire_batch > 1000000)
		fuzz_fail("expire_batch %ld", c->expire_batch);
	if (c->socket_mode > 07777)
		fuzz_fail("socket_mode %o", (unsigned int)c->socket_mode);
	if (c->db_socket != NULL && c->db_socket[0] != '/')
		fuzz_fail("db_socket \"%s\"", c->db_socket);
	if (c->schema_dir != NULL && c->schema_dir[0] != '/')
		fuzz_fail("schema_dir \"%s\"", c->schema_dir);
}

/* Judge one input; a broken property aborts. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf	 c;
	char		 err[512];
	int		 rc;

	if (size > 64 * 1024)
		return 0;
	conf_defaults(&c);
	memset(err, 'Z', sizeof(err));
	rc = conf_parse(&c, "fuzz.conf", (const char *)data, size, err,
	    sizeof(err));
	if (rc == -1) {
		if (memchr(err, '\0', sizeof(err)) == NULL)
			fuzz_fail("error message not NUL-terminated");
		if (strncmp(err, "fuzz.conf:", 10) != 0)
			fuzz_fail("error does not name the file: %s", err);
	} else if (rc == 0)
		check_conf(&c);
	else
		fuzz_fail("conf_parse returned %d", rc);
	conf_clear(&c);
	return 0;
}
