/*
 * The audit: reads the database and reports every breach of the
 * exactly-once invariants, streaming each check's rows so that memory
 * stays bounded whatever the size of the tables.
 */
#ifndef IDEMORDERS_AUDIT_H
#define IDEMORDERS_AUDIT_H

#include <stdio.h>

struct conf;

/* Exit statuses of `idemorders audit`. */
#define AUDIT_CLEAN	0	/* no breach */
#define AUDIT_BREACH	1	/* at least one breach, reported */
#define AUDIT_ERROR	2	/* usage, configuration or database error */

/* The last second FROM_UNIXTIME() takes (MariaDB before 11.5). */
#define AUDIT_SINCE_MAX		2147483647LL

int	audit_run(const struct conf *, int, long long, FILE *);
int	audit_parse_since(const char *, long long *);

#endif
