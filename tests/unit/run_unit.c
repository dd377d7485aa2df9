/*
 * The unit test runner.  Its exit status is the number of failed tests
 * (capped for the shell); it prints "RESULT unit P F" for tools/dev.
 */
#include "config.h"

#include <stdio.h>

#include <CUnit/Basic.h>

#include "unit.h"

/* Every suite of the runner, in the order they run. */
static const struct unit_suite *const suites[] = {
	&test_buf_suite,
	&test_conf_suite,
	&test_problem_suite,
	&test_router_suite,
	&test_utf8_suite,
	&test_log_suite,
	&test_db_suite,
	&test_idem_key_suite,
	&test_media_type_suite,
	&test_json_strict_suite,
	&test_order_input_suite,
	&test_fingerprint_suite,
	&test_metrics_suite,
	&test_stock_admin_suite,
	&test_rules_suite,
	&test_peers_suite,
	&test_webhook_suite,
};

int
main(void)
{
	unsigned int	 run, failed;
	size_t		 i;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	for (i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		if (unit_add_suite(suites[i]) == -1) {
			fprintf(stderr, "cannot register the suites: %s\n",
			    CU_get_error_msg());
			CU_cleanup_registry();
			return 1;
		}
	CU_basic_set_mode(CU_BRM_NORMAL);
	CU_basic_run_tests();
	run = CU_get_number_of_tests_run();
	failed = CU_get_number_of_tests_failed();
	printf("RESULT unit %u %u\n", run - failed, failed);
	CU_cleanup_registry();
	return failed > 100 ? 100 : (int)failed;
}
