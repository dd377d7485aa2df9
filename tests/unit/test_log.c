#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <json-c/json.h>

#include "log.h"
#include "unit.h"
#include "utf8.h"

/* Byte sequences that RFC 3629 (and utf8.c) refuse. */
static const struct {
	const char	*name;
	const char	*bytes;
} bad[] = {
	{ "surrogate U+D800", "\xed\xa0\x80" },
	{ "overlong '/'", "\xc0\xaf" },
	{ "above U+10FFFF", "\xf4\x90\x80\x80" },
	{ "lone continuation", "\x80" },
	{ "cut short", "\xe2\x82" },
};

/* 1 when the n bytes at s are valid UTF-8 by utf8.c. */
static int
valid_utf8(const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i, k;

	for (i = 0; i < n; i += k) {
		k = utf8_seq_len(p + i, n - i);
		if (k == 0)
			return 0;
	}
	return 1;
}

/* 1 when the JSON text s parses to exactly one string (or object). */
static int
valid_json(const char *s, enum json_type want)
{
	struct json_tokener	*tok;
	struct json_object	*o;
	int			 ok;

	tok = json_tokener_new();
	if (tok == NULL)
		return 0;
	o = json_tokener_parse_ex(tok, s, (int)strlen(s));
	ok = o != NULL && json_tokener_get_error(tok) == json_tokener_success &&
	    (size_t)json_tokener_get_parse_end(tok) == strlen(s) &&
	    json_object_is_type(o, want);
	json_object_put(o);
	json_tokener_free(tok);
	return ok;
}

/* Each refused sequence, alone and between ASCII, is escaped away. */
static void
test_json_string_invalid(void)
{
	char	 in[64], out[256];
	size_t	 i, used;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(in, sizeof(in), "a%sb", bad[i].bytes);
		used = 0;
		log_json_string(out, sizeof(out), &used, in);
		CU_ASSERT_EQUAL(used, strlen(out));
		if (!valid_utf8(out, used))
			fprintf(stderr, "\n  %s: output not valid UTF-8",
			    bad[i].name);
		CU_ASSERT_TRUE(valid_utf8(out, used));
		CU_ASSERT_PTR_NULL(strstr(out, bad[i].bytes));
		CU_ASSERT_TRUE(valid_json(out, json_type_string));
		CU_ASSERT_EQUAL(out[0], '"');
		CU_ASSERT_EQUAL(out[1], 'a');
		CU_ASSERT_EQUAL(out[used - 2], 'b');
		CU_ASSERT_EQUAL(out[used - 1], '"');
	}

	/* One U+FFFD for each byte that starts no valid sequence. */
	used = 0;
	log_json_string(out, sizeof(out), &used, "\xed\xa0\x80");
	CU_ASSERT_STRING_EQUAL(out,
	    "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	used = 0;
	log_json_string(out, sizeof(out), &used, "\xc0\xaf");
	CU_ASSERT_STRING_EQUAL(out, "\"\xef\xbf\xbd\xef\xbf\xbd\"");
}

/* Valid text passes unchanged; quotes and controls are escaped. */
static void
test_json_string_valid(void)
{
	char	 out[256];
	size_t	 used;

	used = 0;
	log_json_string(out, sizeof(out), &used,
	    "caf\xc3\xa9 \xed\x9f\xbf \xf4\x8f\xbf\xbf \xf0\x9f\x98\x80");
	CU_ASSERT_STRING_EQUAL(out,
	    "\"caf\xc3\xa9 \xed\x9f\xbf \xf4\x8f\xbf\xbf \xf0\x9f\x98\x80\"");
	used = 0;
	log_json_string(out, sizeof(out), &used, "q\"b\\n\n\x01\x7f");
	CU_ASSERT_STRING_EQUAL(out, "\"q\\\"b\\\\n\\u000a\\u0001\\u007f\"");
	CU_ASSERT_TRUE(valid_json(out, json_type_string));
}

/* A string cut to fit is cut between characters and still closes. */
static void
test_json_string_cut(void)
{
	char	 out[8];
	size_t	 used;

	used = 0;
	log_json_string(out, sizeof(out), &used, "ab\xe2\x82\xac" "cd");
	CU_ASSERT_STRING_EQUAL(out, "\"ab\xe2\x82\xac\"");
	CU_ASSERT_TRUE(valid_utf8(out, used));
}

/*
 * Whole lines as the JSON log writes them, stderr caught in a file: each
 * line one JSON object, valid UTF-8, whatever bytes the message carried.
 */
static void
test_json_lines(void)
{
	char	 path[] = "/tmp/idemorders-test-log.XXXXXX";
	char	 line[4096], msg[64];
	FILE	*fp;
	size_t	 i, n, lines = 0;
	int	 fd, saved;
	struct log_request	 r;

	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd != -1);
	fflush(stderr);
	saved = dup(2);
	CU_ASSERT_FATAL(saved != -1);
	CU_ASSERT_FATAL(dup2(fd, 2) == 2);
	log_set_json(1);
	log_init("test", 0, LOG_INFO);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(msg, sizeof(msg), "key %s!", bad[i].bytes);
		log_warnx("%s", msg);
		memset(&r, 0, sizeof(r));
		r.method = "POST";
		r.uri = msg;
		r.principal = msg;
		r.key = msg;
		r.code = msg;
		r.outcome = msg;
		r.status = 503;
		log_request(&r);
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	log_set_json(0);

	fp = fdopen(fd, "r");
	CU_ASSERT_FATAL(fp != NULL);
	rewind(fp);
	while (fgets(line, sizeof(line), fp) != NULL) {
		n = strlen(line);
		CU_ASSERT_FATAL(n > 0 && line[n - 1] == '\n');
		if (n > 0)
			line[--n] = '\0';
		if (!valid_utf8(line, n))
			fprintf(stderr, "\n  log line not valid UTF-8: %s",
			    line);
		CU_ASSERT_TRUE(valid_utf8(line, n));
		CU_ASSERT_TRUE(valid_json(line, json_type_object));
		lines++;
	}
	CU_ASSERT_EQUAL(lines, 2 * sizeof(bad) / sizeof(bad[0]));
	fclose(fp);
	unlink(path);
}

/* The log suite. */
static const struct unit_test tests[] = {
	{ "JSON string: invalid UTF-8", test_json_string_invalid },
	{ "JSON string: valid text", test_json_string_valid },
	{ "JSON string: cut", test_json_string_cut },
	{ "JSON lines", test_json_lines },
	{ NULL, NULL },
};

const struct unit_suite test_log_suite = { "log", NULL, NULL, tests };
