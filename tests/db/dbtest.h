/* Shared set-up of the database suites. */
#ifndef IDEMORDERS_TESTS_DBTEST_H
#define IDEMORDERS_TESTS_DBTEST_H

#include "conf.h"
#include "db.h"

extern struct conf	 dbtest_conf;
extern char		 dbtest_tag[32];	/* unique per run */

int	dbtest_setup(const char *);
void	dbtest_teardown(void);
long long dbtest_scalar(struct db *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	dbtest_exec(struct db *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

int	test_ledger_db_register(void);
int	test_create_db_register(void);

#endif
