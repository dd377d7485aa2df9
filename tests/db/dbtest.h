/*
 * Shared set-up of the database suites; each test_<module>_db.c defines
 * its suite as a table of tests (tests/unit/unit.h), and run_db.c
 * registers them all with unit_add_suite().
 */
#ifndef IDEMORDERS_TESTS_DBTEST_H
#define IDEMORDERS_TESTS_DBTEST_H

#include "conf.h"
#include "db.h"
#include "unit.h"

extern struct conf	 dbtest_conf;
extern char		 dbtest_tag[32];	/* unique per run */

int	dbtest_setup(const char *);
void	dbtest_teardown(void);
long long dbtest_scalar(struct db *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	dbtest_exec(struct db *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

extern const struct unit_suite test_ledger_db_suite;
extern const struct unit_suite test_create_db_suite;
extern const struct unit_suite test_cancel_db_suite;

#endif
