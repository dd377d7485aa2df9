/*
 * The database test runner: CUnit suites against a real MariaDB named by
 * the configuration file in IDEMORDERS_TEST_CONF.  Without it the suites
 * skip (exit 77) on a developer's machine, but fail under CI.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <CUnit/Basic.h>
#include <mysql.h>

#include "dbtest.h"

/* Every suite of the runner, in the order they run. */
static const struct unit_suite *const suites[] = {
	&test_ledger_db_suite,
	&test_create_db_suite,
	&test_cancel_db_suite,
};

int
main(void)
{
	const char	*path = getenv("IDEMORDERS_TEST_CONF");
	unsigned int	 run, failed;
	size_t		 i;

	if (path == NULL || *path == '\0') {
		if (getenv("CI") != NULL) {
			fprintf(stderr, "IDEMORDERS_TEST_CONF is not set under "
			    "CI: the database tests cannot run\n");
			printf("RESULT db 0 1\n");
			return 1;
		}
		fprintf(stderr, "IDEMORDERS_TEST_CONF not set: skipping the "
		    "database tests\n");
		return 77;
	}
	if (mysql_library_init(0, NULL, NULL) != 0)
		return 1;
	if (dbtest_setup(path) == -1) {
		printf("RESULT db 0 1\n");
		return 1;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	for (i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		if (unit_add_suite(suites[i]) == -1) {
			fprintf(stderr, "cannot register: %s\n",
			    CU_get_error_msg());
			return 1;
		}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	run = CU_get_number_of_tests_run();
	failed = CU_get_number_of_tests_failed();
	printf("RESULT db %u %u\n", run - failed, failed);
	CU_cleanup_registry();
	dbtest_teardown();
	mysql_library_end();
	return failed > 100 ? 100 : (int)failed;
}
