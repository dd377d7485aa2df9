#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dbtest.h"
#include "log.h"

struct conf	 dbtest_conf;
char		 dbtest_tag[32];

/* Load the configuration and check that the database answers. */
int
dbtest_setup(const char *path)
{
	struct db	 db;
	char		 err[512];

	if (conf_load(&dbtest_conf, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	log_init("run_db", 0, LOG_WARNING);
	snprintf(dbtest_tag, sizeof(dbtest_tag), "t%ld-%ld", (long)getpid(),
	    (long)time(NULL) % 100000);
	db_init(&db, &dbtest_conf);
	if (db_connect(&db) != DB_OK) {
		fprintf(stderr, "cannot connect to the test database: %s\n",
		    db.last_error);
		return -1;
	}
	db_disconnect(&db);
	return 0;
}

/* Release the configuration. */
void
dbtest_teardown(void)
{
	conf_clear(&dbtest_conf);
}

/* Run a formatted statement (test-controlled text only). */
int
dbtest_exec(struct db *db, const char *fmt, ...)
{
	char	 sql[2048];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	if (db_exec(db, sql) != DB_OK) {
		fprintf(stderr, "SQL failed: %s: %s\n", db->last_error, sql);
		return -1;
	}
	return 0;
}

/* Return the first column of the first row as an integer, -1 on error. */
long long
dbtest_scalar(struct db *db, const char *fmt, ...)
{
	char		 sql[2048];
	va_list		 ap;
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	long long	 v = -1;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	res = NULL;
	if (mysql_query(db->my, sql) == 0)
		res = mysql_store_result(db->my);
	if (res == NULL) {
		fprintf(stderr, "SQL failed: %s: %s\n", mysql_error(db->my),
		    sql);
		return -1;
	}
	row = mysql_fetch_row(res);
	if (row != NULL && row[0] != NULL)
		v = strtoll(row[0], NULL, 10);
	mysql_free_result(res);
	db_rollback(db);
	return v;
}
