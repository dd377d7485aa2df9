#include "config.h"

#include <CUnit/CUnit.h>

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
