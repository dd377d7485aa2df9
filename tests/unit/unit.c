#include "config.h"

#include <stdio.h>

#include <CUnit/Basic.h>

#include "unit.h"

/* Add a suite and its tests to the registry: 0, or -1 when CUnit fails. */
int
unit_add_suite(const struct unit_suite *us)
{
	const struct unit_test	*t;
	CU_pSuite		 s;

	s = CU_add_suite(us->name, us->init, us->cleanup);
	if (s == NULL)
		return -1;
	for (t = us->tests; t->name != NULL; t++)
		if (CU_add_test(s, t->name, t->func) == NULL)
			return -1;
	return 0;
}

/*
 * Register the n suites, run them and print "RESULT name passed failed".
 * A failure is a failed test, a suite whose set-up or clean-up failed
 * (CUnit then runs none of its tests, or has run them) and a registered
 * test that did not run: a broken fixture is never a green run.  Returns
 * the failure count, or -1 when CUnit itself fails.
 */
int
unit_run(const char *name, const struct unit_suite *const *suites, size_t n,
    CU_BasicRunMode mode)
{
	const struct unit_test	*t;
	unsigned int		 expected = 0, run, failed, suites_failed;
	unsigned int		 not_run;
	size_t			 i;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return -1;
	for (i = 0; i < n; i++) {
		if (unit_add_suite(suites[i]) == -1) {
			fprintf(stderr, "cannot register the suites: %s\n",
			    CU_get_error_msg());
			CU_cleanup_registry();
			return -1;
		}
		for (t = suites[i]->tests; t->name != NULL; t++)
			expected++;
	}
	CU_basic_set_mode(mode);
	CU_basic_run_tests();
	run = CU_get_number_of_tests_run();
	failed = CU_get_number_of_tests_failed();
	suites_failed = CU_get_number_of_suites_failed();
	not_run = run < expected ? expected - run : 0;
	if (suites_failed > 0)
		fprintf(stderr, "%s: %u suite set-up(s) or clean-up(s) "
		    "failed\n", name, suites_failed);
	if (run != expected)
		fprintf(stderr, "%s: %u of %u tests ran\n", name, run,
		    expected);
	CU_cleanup_registry();
	printf("RESULT %s %u %u\n", name, run - failed,
	    failed + suites_failed + not_run);
	return (int)(failed + suites_failed + not_run);
}
