/*
 * The CUnit suites of the unit and database runners: each test file
 * defines its suite as a table of tests, and the runner (run_unit.c,
 * tests/db/run_db.c) registers them all with unit_add_suite().  The unit
 * runner's suites are declared here, the database runner's in
 * tests/db/dbtest.h.
 */
#ifndef IDEMORDERS_TESTS_UNIT_H
#define IDEMORDERS_TESTS_UNIT_H

#include <stddef.h>

#include <CUnit/Basic.h>

struct unit_test {
	const char		*name;
	CU_TestFunc		 func;
};

struct unit_suite {
	const char		*name;
	CU_InitializeFunc	 init;		/* or NULL */
	CU_CleanupFunc		 cleanup;	/* or NULL */
	const struct unit_test	*tests;		/* ends with { NULL, NULL } */
};

int	unit_add_suite(const struct unit_suite *);
int	unit_run(const char *, const struct unit_suite *const *, size_t,
	    CU_BasicRunMode);

extern const struct unit_suite test_buf_suite;
extern const struct unit_suite test_conf_suite;
extern const struct unit_suite test_problem_suite;
extern const struct unit_suite test_router_suite;
extern const struct unit_suite test_order_list_suite;
extern const struct unit_suite test_utf8_suite;
extern const struct unit_suite test_text_suite;
extern const struct unit_suite test_log_suite;
extern const struct unit_suite test_db_suite;
extern const struct unit_suite test_idem_key_suite;
extern const struct unit_suite test_media_type_suite;
extern const struct unit_suite test_json_strict_suite;
extern const struct unit_suite test_order_input_suite;
extern const struct unit_suite test_fingerprint_suite;
extern const struct unit_suite test_metrics_suite;
extern const struct unit_suite test_stock_admin_suite;
extern const struct unit_suite test_rules_suite;
extern const struct unit_suite test_peers_suite;
extern const struct unit_suite test_webhook_suite;
extern const struct unit_suite test_sql_suite;
extern const struct unit_suite test_db_batch_suite;

#endif
