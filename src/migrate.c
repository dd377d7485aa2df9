#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "conf.h"
#include "db.h"
#include "log.h"
#include "migrate.h"
#include "sql.h"

#define MIGRATION_MAX	(1024 * 1024)

#define CLAIM_WAIT_S	600	/* for another run's migration */

/* A migration file name: three digits, an underscore, ".sql". */
static int
is_migration(const char *name)
{
	size_t	 n = strlen(name);

	return n > 8 && isdigit((unsigned char)name[0]) &&
	    isdigit((unsigned char)name[1]) &&
	    isdigit((unsigned char)name[2]) && name[3] == '_' &&
	    strcmp(name + n - 4, ".sql") == 0;
}

/* Order names for scandir. */
static int
name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Read a whole file into b. */
static int
read_file(const char *path, struct buf *b)
{
	FILE	*fp;
	char	 chunk[8192];
	size_t	 n;
	int	 rc = 0;

	fp = fopen(path, "r");
	if (fp == NULL) {
		log_warn("%s", path);
		return -1;
	}
	while (rc == 0) {
		n = fread(chunk, 1, sizeof(chunk), fp);
		if (n == 0)
			break;
		rc = buf_add(b, chunk, n);
	}
	if (ferror(fp))
		rc = -1;
	fclose(fp);
	return rc;
}

/*
 * Run one statement with version as its parameter and commit; for
 * SQL_MIGRATE_STATE, copy the state into state (empty when there is no row).
 */
static int
version_stmt(struct db *db, enum sql_id sql, const char *version,
    char *state, size_t size)
{
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[1], r[1];
	unsigned long	 len = 0;
	my_bool		 nul = 0;
	int		 rc;

	rc = db_stmt_prepare(db, sql_text(sql), strlen(sql_text(sql)), &st);
	if (rc != DB_OK)
		return rc;
	db_bind_str(&p[0], version, strlen(version));
	rc = db_execute(db, st, p);
	if (rc == DB_OK && state != NULL) {
		state[0] = '\0';
		db_bind_out_str(&r[0], state, size - 1, &len, &nul);
		rc = db_bind_result(db, st, r);
		if (rc == DB_OK)
			rc = db_fetch(db, st);
		if (rc == 1)
			state[len < size ? len : size - 1] = '\0';
		if (rc >= 0)
			rc = DB_OK;
		db_stmt_done(db, st);
	}
	mysql_stmt_close(st);
	if (rc == DB_OK)
		rc = db_commit(db);
	else
		db_rollback(db);
	return rc;
}

/*
 * Claim version: 1 when this run must apply it, 0 when it is applied
 * (perhaps by another run, waited for), -1 on failure.
 */
static int
claim(struct db *db, const char *version)
{
	char	 state[16];
	int	 rc, waited;

	for (waited = 0; waited <= CLAIM_WAIT_S; waited++) {
		rc = version_stmt(db, SQL_MIGRATE_CLAIM, version, NULL, 0);
		if (rc == DB_OK)
			return 1;
		if (rc != DB_DUPLICATE && rc != DB_TRANSIENT)
			goto fail;
		rc = version_stmt(db, SQL_MIGRATE_STATE, version, state, sizeof(state));
		if (rc != DB_OK)
			goto fail;
		if (strcmp(state, "applied") == 0)
			return 0;
		if (waited == 0)
			log_info("migration %s is being applied by another "
			    "run; waiting", version);
		sleep(1);
	}
	log_warnx("migration %s stayed 'applying' for %d s: if no other "
	    "migrate runs, delete its row from schema_migrations and run "
	    "again", version, CLAIM_WAIT_S);
	return -1;
fail:
	log_warnx("claiming migration %s: %s (%u)", version, db->last_error,
	    db->last_errno);
	return -1;
}

/*
 * Run every statement of a migration script, then record it applied.
 * On failure the claim is withdrawn (migrations are written to be run
 * again after a partial failure: CREATE ... IF NOT EXISTS and the like).
 */
static int
apply(struct db *db, const char *version, const struct buf *sql)
{
	MYSQL_RES	*res;
	int		 status;

	if (mysql_real_query(db->my, sql->p, sql->len) != 0)
		goto fail;
	do {
		res = mysql_store_result(db->my);
		if (res != NULL)
			mysql_free_result(res);
		status = mysql_next_result(db->my);
		if (status > 0)
			goto fail;
	} while (status == 0);
	if (version_stmt(db, SQL_MIGRATE_DONE, version, NULL, 0) != DB_OK) {
		log_warnx("recording %s: %s", version, db->last_error);
		return -1;
	}
	return 0;
fail:
	log_warnx("migration %s failed: %s (%u)", version, mysql_error(db->my),
	    mysql_errno(db->my));
	if (db_ensure(db) != DB_OK ||
	    version_stmt(db, SQL_MIGRATE_UNCLAIM, version, NULL, 0) != DB_OK)
		log_warnx("withdrawing the claim of %s: %s", version,
		    db->last_error);
	return -1;
}

/* Take the server's migrate lock; *locked says whether it was granted. */
static int
lock_take(struct db *db, int *locked)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;

	*locked = 0;
	if (mysql_query(db->my, sql_text(SQL_MIGRATE_LOCK)) != 0)
		return db_fail(db, DB_OK, mysql_errno(db->my),
		    mysql_error(db->my));
	res = mysql_store_result(db->my);
	if (res == NULL)
		return db_fail(db, DB_OK, mysql_errno(db->my),
		    mysql_error(db->my));
	row = mysql_fetch_row(res);
	*locked = row != NULL && row[0] != NULL && strcmp(row[0], "1") == 0;
	mysql_free_result(res);
	return DB_OK;
}

/*
 * Apply pending migrations from schema_dir in name order, under a named
 * lock so that two runs at once apply each migration once.  DDL commits
 * implicitly: a failed migration stops the run and is not recorded.
 */
int
migrate_run(const struct conf *conf)
{
	struct db	 db;
	struct dirent	**names = NULL;
	struct buf	 sql;
	char		 path[4096], version[256];
	int		 n = -1, i, rc = -1, done = 0, locked = 0;

	db_init(&db, conf);
	buf_init(&sql, MIGRATION_MAX);
	if (db_connect(&db) != DB_OK) {
		log_warnx("cannot connect to the database: %s", db.last_error);
		goto out;
	}
	mysql_set_server_option(db.my, MYSQL_OPTION_MULTI_STATEMENTS_ON);
	/* One run at a time on this server (GET_LOCK is node-local). */
	if (lock_take(&db, &locked) != DB_OK)
		goto dberr;
	if (!locked) {
		log_warnx("migrate: another migrate run on this server held "
		    "the lock for 60 s");
		goto out;
	}
	if (db_exec(&db, sql_text(SQL_MIGRATE_TABLE)) != DB_OK ||
	    db_exec(&db, sql_text(SQL_MIGRATE_STATE_COLUMN)) != DB_OK ||
	    db_commit(&db) != DB_OK)
		goto dberr;
	n = scandir(conf->schema_dir, &names, NULL, name_cmp);
	if (n == -1) {
		log_warn("schema_dir %s", conf->schema_dir);
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (!is_migration(names[i]->d_name))
			continue;
		snprintf(version, sizeof(version), "%.*s",
		    (int)(strlen(names[i]->d_name) - 4), names[i]->d_name);
		switch (claim(&db, version)) {
		case 0:
			continue;
		case 1:
			break;
		default:
			goto out;
		}
		snprintf(path, sizeof(path), "%s/%s", conf->schema_dir,
		    names[i]->d_name);
		buf_reset(&sql);
		if (read_file(path, &sql) == -1 || apply(&db, version,
		    &sql) == -1)
			goto out;
		log_info("applied migration %s", version);
		done++;
	}
	log_info("schema up to date (%d migration%s applied now)", done,
	    done == 1 ? "" : "s");
	rc = 0;
	goto out;
dberr:
	log_warnx("migrate: %s", db.last_error);
out:
	if (locked && db.my != NULL)
		db_exec(&db, sql_text(SQL_MIGRATE_UNLOCK));
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	buf_free(&sql);
	db_disconnect(&db);
	return rc;
}
