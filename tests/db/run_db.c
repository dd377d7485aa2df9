/*
 * The database test runner: CUnit suites against a real MariaDB named by
 * the configuration file in IDEMORDERS_TEST_CONF.  Without it the suites
 * skip (exit 77) on a developer's machine, but fail under CI.  A suite
 * whose set-up fails (its fixture cannot be made) and every test that did
 * not run count as failures in "RESULT db P F" (unit_run()).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

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
	int		 failed;

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
	failed = unit_run("db", suites, sizeof(suites) / sizeof(suites[0]),
	    CU_BRM_VERBOSE);
	dbtest_teardown();
	mysql_library_end();
	if (failed < 0)
		return 1;
	return failed > 100 ? 100 : failed;
}
