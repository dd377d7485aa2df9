/*
 * The unit test runner.  Its exit status is the number of failed tests
 * (capped for the shell); it prints "RESULT unit P F" for tools/dev, where
 * F also counts a suite whose set-up or clean-up failed and every test
 * that did not run (unit_run()).
 */
#include "config.h"

#include <stdio.h>

#include "unit.h"

/* Every suite of the runner, in the order they run. */
static const struct unit_suite *const suites[] = {
	&test_buf_suite,
	&test_conf_suite,
	&test_problem_suite,
	&test_router_suite,
	&test_order_list_suite,
	&test_utf8_suite,
	&test_text_suite,
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
	&test_sql_suite,
	&test_db_batch_suite,
};

int
main(void)
{
	int	 failed;

	failed = unit_run("unit", suites, sizeof(suites) / sizeof(suites[0]),
	    CU_BRM_NORMAL);
	if (failed < 0)
		return 1;
	return failed > 100 ? 100 : failed;
}
