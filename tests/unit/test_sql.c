#include "config.h"

#include <string.h>

#include <CUnit/CUnit.h>

#include "buf.h"
#include "sql.h"
#include "unit.h"

/* Values are written by type: hex literals, words quoted, numbers. */
static void
test_placeholders(void)
{
	struct buf	 b;

	buf_init(&b, 4096);
	CU_ASSERT_EQUAL(sql_printf(&b, SQL_EVENTS_SHOW, "a'\\"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.p, "WHERE webhook_id = X'61275C'"));
	buf_reset(&b);
	CU_ASSERT_EQUAL(sql_printf(&b, SQL_LEDGER_BATCH_FINISH, "SUCCEEDED",
	    201, "a\0b", (size_t)3, NULL, (size_t)0, NULL, 7ULL), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.p, "status = 'SUCCEEDED', "
	    "response_status = 201, response_headers = X'610062', "
	    "response_body = X'', resource_id = NULL, "));
	CU_ASSERT_PTR_NOT_NULL(strstr(b.p, "WHERE id = 7 AND"));
	/* A word that is not one is refused, never quoted. */
	buf_reset(&b);
	CU_ASSERT_EQUAL(sql_printf(&b, SQL_LEDGER_BATCH_FINISH,
	    "X', status = 'SUCCEEDED", 201, "", (size_t)0, "", (size_t)0,
	    NULL, 7ULL), -1);
	CU_ASSERT_PTR_NULL(strstr(b.p != NULL ? b.p : "", "X', status"));
	buf_reset(&b);
	CU_ASSERT_EQUAL(sql_printf(&b, SQL_LEDGER_BATCH_FINISH, "", 201,
	    "", (size_t)0, "", (size_t)0, NULL, 7ULL), -1);
	/* A fragment, with "%%" for a per cent sign. */
	buf_reset(&b);
	CU_ASSERT_EQUAL(sql_printf(&b, SQL_EVENTS_LIST, SQL_EVENTS_DEAD,
	    5L), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(b.p, "DATE_FORMAT(created_at, "
	    "'%Y-%m-%dT%H:%i:%sZ')"));
	CU_ASSERT_PTR_NOT_NULL(strstr(b.p, " FROM events WHERE state = 'dead' "
	    "ORDER BY id LIMIT 5"));
	/* Unknown statements are refused. */
	CU_ASSERT_PTR_NULL(sql_text(SQL_N));
	CU_ASSERT_EQUAL(sql_printf(&b, SQL_N), -1);
	/* Prepared text stands as it is. */
	CU_ASSERT_PTR_NOT_NULL(strstr(sql_text(SQL_STORE_GET_ORDER),
	    "'%Y-%m-%dT%H:%i:%sZ'"));
	buf_free(&b);
}

/* Every statement of the table has its text. */
static void
test_table_whole(void)
{
	int	 i;

	for (i = 0; i < SQL_N; i++)
		CU_ASSERT_PTR_NOT_NULL(sql_text((enum sql_id)i));
}

/* Numbers zero-padded to a width: seconds to the millisecond. */
static void
test_widths(void)
{
	struct buf	 b;

	buf_init(&b, 4096);
	CU_ASSERT_EQUAL(sql_printf(&b, SQL_DB_LIMITS, 7, 2L, 5L), 0);
	CU_ASSERT_STRING_EQUAL(b.p, "SET SESSION innodb_lock_wait_timeout = "
	    "7, max_statement_time = 2.005");
	buf_reset(&b);
	CU_ASSERT_EQUAL(sql_printf(&b, SQL_DB_LIMITS, 0, 0L, 999L), 0);
	CU_ASSERT_STRING_EQUAL(b.p, "SET SESSION innodb_lock_wait_timeout = "
	    "0, max_statement_time = 0.999");
	buf_reset(&b);
	CU_ASSERT_EQUAL(sql_printf(&b, SQL_BATCH_PAUSE, 1, 50), 0);
	CU_ASSERT_STRING_EQUAL(b.p, "DO SLEEP(1.050)");
	buf_free(&b);
}

/* The session's statements are the text db.c always sent. */
static void
test_session_text(void)
{
	CU_ASSERT_STRING_EQUAL(sql_text(SQL_DB_ISOLATION), "SET SESSION "
	    "TRANSACTION ISOLATION LEVEL READ COMMITTED");
	CU_ASSERT_STRING_EQUAL(sql_text(SQL_DB_SESSION), "SET SESSION "
	    "autocommit = 0, time_zone = '+00:00', "
	    "sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'");
	CU_ASSERT_STRING_EQUAL(sql_text(SQL_DB_GALERA), "SELECT @@wsrep_on");
	CU_ASSERT_STRING_EQUAL(sql_text(SQL_DB_CAUSAL_READS),
	    "SET SESSION wsrep_sync_wait = 1");
	CU_ASSERT_STRING_EQUAL(sql_text(SQL_DB_NODE_STATE), "SELECT "
	    "MAX(IF(VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT', "
	    "VARIABLE_VALUE, NULL)), "
	    "MAX(IF(VARIABLE_NAME = 'WSREP_CLUSTER_STATUS', "
	    "VARIABLE_VALUE, NULL)) FROM information_schema.GLOBAL_STATUS "
	    "WHERE VARIABLE_NAME IN ('WSREP_LOCAL_STATE_COMMENT', "
	    "'WSREP_CLUSTER_STATUS')");
}

static const struct unit_test tests[] = {
	{ "typed placeholders", test_placeholders },
	{ "the table is whole", test_table_whole },
	{ "zero-padded numbers", test_widths },
	{ "the session's statements", test_session_text },
	{ NULL, NULL },
};

const struct unit_suite test_sql_suite = { "sql", NULL, NULL, tests };
