/*
 * The unit test runner.  Its exit status is the number of failed tests
 * (capped for the shell); it prints "RESULT unit P F" for tools/dev.
 */
#include "config.h"

#include <stdio.h>

#include <CUnit/Basic.h>

#include "unit.h"

int
main(void)
{
	unsigned int	 run, failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	if (test_buf_register() == -1 || test_conf_register() == -1 ||
	    test_problem_register() == -1 || test_router_register() == -1 ||
	    test_utf8_register() == -1 || test_log_register() == -1 ||
	    test_db_register() == -1 ||
	    test_idem_key_register() == -1 ||
	    test_media_type_register() == -1 ||
	    test_json_strict_register() == -1 ||
	    test_order_input_register() == -1 ||
	    test_fingerprint_register() == -1 ||
	    test_metrics_register() == -1 ||
	    test_stock_admin_register() == -1 ||
	    test_rules_register() == -1) {
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
