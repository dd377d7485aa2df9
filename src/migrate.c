#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "conf.h"
#include "db.h"
#include "log.h"
#include "migrate.h"

#define MIGRATION_MAX	(1024 * 1024)

static const char q_applied[] = "SELECT 1 FROM schema_migrations "
    "WHERE version = ?";
static const char q_record[] = "INSERT INTO schema_migrations (version, "
    "applied_at) VALUES (?, UTC_TIMESTAMP(6))";

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

/* Whether version is recorded in schema_migrations: 1, 0 or -1. */
static int
applied(struct db *db, const char *version)
{
	MYSQL_STMT	*st;
	MYSQL_BIND	 p[1];
	int		 rc = -1;

	st = mysql_stmt_init(db->my);
	if (st == NULL)
		return -1;
	if (mysql_stmt_prepare(st, q_applied, sizeof(q_applied) - 1) != 0)
		goto out;
	db_bind_str(&p[0], version, strlen(version));
	if (db_execute(db, st, p) != DB_OK)
		goto out;
	if (mysql_stmt_store_result(st) != 0)
		goto out;
	rc = mysql_stmt_num_rows(st) > 0;
out:
	if (rc == -1)
		log_warnx("reading schema_migrations: %s", mysql_stmt_error(st));
	mysql_stmt_close(st);
	return rc;
}

/* Run every statement of a migration script, then record it. */
static int
apply(struct db *db, const char *version, const struct buf *sql)
{
	MYSQL_STMT	*st;
	MYSQL_RES	*res;
	MYSQL_BIND	 p[1];
	int		 status, rc = -1;

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
	st = mysql_stmt_init(db->my);
	if (st == NULL)
		goto fail;
	if (mysql_stmt_prepare(st, q_record, sizeof(q_record) - 1) == 0) {
		db_bind_str(&p[0], version, strlen(version));
		if (db_execute(db, st, p) == DB_OK && db_commit(db) == DB_OK)
			rc = 0;
	}
	if (rc == -1)
		log_warnx("recording %s: %s", version, mysql_stmt_error(st));
	mysql_stmt_close(st);
	return rc;
fail:
	log_warnx("migration %s failed: %s", version, mysql_error(db->my));
	return -1;
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
	if (db_exec(&db, "DO GET_LOCK('idemorders.migrate', 60)") != DB_OK)
		goto dberr;
	locked = 1;
	if (db_exec(&db, "CREATE TABLE IF NOT EXISTS schema_migrations ("
	    "version VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin "
	    "NOT NULL PRIMARY KEY, applied_at DATETIME(6) NOT NULL) "
	    "ENGINE=InnoDB") != DB_OK || db_commit(&db) != DB_OK)
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
		switch (applied(&db, version)) {
		case 1:
			continue;
		case 0:
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
		db_exec(&db, "DO RELEASE_LOCK('idemorders.migrate')");
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	buf_free(&sql);
	db_disconnect(&db);
	return rc;
}
