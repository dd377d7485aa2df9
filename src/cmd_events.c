/*
 * `idemorders events`: the outbox for people: list pending, dead or
 * delivered events, show one, redeliver (dead) events, enable an
 * endpoint that answered 410 again.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "conf.h"
#include "db.h"
#include "db_batch.h"
#include "log.h"
#include "sql.h"

#define EVENTS_LIST_MAX	100000

static int	cmd_events(struct cmd_line *);

const struct cmd_entry cmd_events_entry = {
	"events",
	"[-c FILE] list [--state pending|dead|delivered|all] [--limit N]\n"
	"[-c FILE] show WEBHOOK_ID\n"
	"[-c FILE] redeliver WEBHOOK_ID... | --dead\n"
	"[-c FILE] enable",
	"the order events and their deliveries: list them (pending and dead\n"
	"by default), show one with its payload, deliver dead ones again,\n"
	"enable webhook_url again after it answered 410 Gone",
	cmd_events
};

/* Print every row of res tab-separated, after a header of its columns. */
static void
print_rows(MYSQL_RES *res, int header)
{
	MYSQL_FIELD	*f;
	MYSQL_ROW	 row;
	unsigned int	 i, n = mysql_num_fields(res);

	f = mysql_fetch_fields(res);
	for (i = 0; header && i < n; i++)
		printf("%s%s", i ? "\t" : "", f[i].name);
	if (header)
		putchar('\n');
	while ((row = mysql_fetch_row(res)) != NULL) {
		for (i = 0; i < n; i++)
			printf("%s%s", i ? "\t" : "", row[i] ? row[i] : "-");
		putchar('\n');
	}
}

/* Run b on a fresh connection; print its last result.  CMD_ status. */
static int
run(const struct conf *conf, struct db_batch *b, int header)
{
	struct db	 db;
	int		 rc;

	db_init(&db, conf);
	db_set_deadline(&db, 60000);
	rc = db_connect(&db);
	if (rc == DB_OK)
		rc = db_batch_run(&db, b);
	if (rc != DB_OK) {
		fprintf(stderr, "idemorders events: database: %s\n",
		    db.last_error);
		db_rollback(&db);
		db_disconnect(&db);
		return CMD_FAILED;
	}
	if (b->n > 0 && b->res[b->n - 1] != NULL)
		print_rows(b->res[b->n - 1], header);
	db_rollback(&db);
	db_disconnect(&db);
	return CMD_OK;
}

/* events list */
static int
events_list(struct cmd_line *cl, const struct conf *conf, struct db_batch *b,
    int argc, char **argv)
{
	const char	*state = NULL;
	enum sql_id	 where;
	long		 limit = 100;
	char		*end;
	int		 i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--state") == 0 && i + 1 < argc)
			state = argv[++i];
		else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
			limit = strtol(argv[++i], &end, 10);
			if (*end != '\0' || limit < 1 || limit > EVENTS_LIST_MAX)
				return cmd_usage_error(cl, "--limit must be "
				    "from 1 to %d", EVENTS_LIST_MAX);
		} else
			return cmd_usage_error(cl, "list: unexpected \"%s\"",
			    argv[i]);
	}
	if (state == NULL)
		where = SQL_EVENTS_OPEN;
	else if (strcmp(state, "pending") == 0)
		where = SQL_EVENTS_PENDING;
	else if (strcmp(state, "dead") == 0)
		where = SQL_EVENTS_DEAD;
	else if (strcmp(state, "delivered") == 0)
		where = SQL_EVENTS_DELIVERED;
	else if (strcmp(state, "all") == 0)
		where = SQL_EVENTS_ALL;
	else
		return cmd_usage_error(cl, "--state must be pending, dead, "
		    "delivered or all");
	if (db_batch_sql(b, DB_ROWS_RESULT, SQL_EVENTS_LIST, where, limit) ==
	    -1)
		return CMD_FAILED;
	return run(conf, b, 1);
}

/* events show ID */
static int
events_show(struct cmd_line *cl, const struct conf *conf, struct db_batch *b,
    int argc, char **argv)
{
	if (argc != 2)
		return cmd_usage_error(cl, "show needs one WEBHOOK_ID");
	if (db_batch_sql(b, DB_ROWS_RESULT, SQL_EVENTS_SHOW, argv[1]) == -1)
		return CMD_FAILED;
	return run(conf, b, 1);
}

/* events redeliver ID... | --dead */
static int
events_redeliver(struct cmd_line *cl, const struct conf *conf,
    struct db_batch *b, int argc, char **argv)
{
	int		 i, rc;

	if (argc < 2)
		return cmd_usage_error(cl, "redeliver needs WEBHOOK_ID... or "
		    "--dead");
	if (argc == 2 && strcmp(argv[1], "--dead") == 0) {
		if (db_batch_sql(b, DB_ROWS_ANY, SQL_EVENTS_REDELIVER,
		    SQL_EVENTS_DEAD) == -1)
			return CMD_FAILED;
	} else {
		if (db_batch_sql(b, DB_ROWS_ANY, SQL_EVENTS_REDELIVER,
		    SQL_EVENTS_NOT_PENDING) == -1)
			return CMD_FAILED;
		for (i = 1; i < argc; i++)
			if (db_batch_more(b, i == 1 ? SQL_LIST_FIRST :
			    SQL_LIST_NEXT, argv[i]) == -1)
				return CMD_FAILED;
		if (db_batch_more(b, SQL_LIST_END) == -1)
			return CMD_FAILED;
	}
	if (db_batch_commit(b) == -1)
		return CMD_FAILED;
	rc = run(conf, b, 0);
	if (rc == CMD_OK)
		printf("redelivery scheduled\n");
	return rc;
}

/* events enable: webhook_url takes events again. */
static int
events_enable(struct cmd_line *cl, const struct conf *conf,
    struct db_batch *b, int argc)
{
	int	 rc;

	if (argc != 1)
		return cmd_usage_error(cl, "enable takes no argument");
	if (conf->webhook_url == NULL) {
		fprintf(stderr, "idemorders events: no webhook_url set\n");
		return CMD_USAGE;
	}
	if (db_batch_sql(b, DB_ROWS_ANY, SQL_EVENTS_ENABLE,
	    conf->webhook_url) == -1 || db_batch_commit(b) == -1)
		return CMD_FAILED;
	rc = run(conf, b, 0);
	if (rc == CMD_OK)
		printf("%s enabled\n", conf->webhook_url);
	return rc;
}

/* Dispatch the subcommand. */
static int
cmd_events(struct cmd_line *cl)
{
	struct conf	*conf;
	struct db_batch	 b;
	const char	*sub;
	char		**argv;
	int		 argc, rc;

	/* Options after the subcommand are its own: stop at it. */
	for (;;) {
		rc = getopt_long(cl->argc, cl->argv, "+:c:h", NULL, NULL);
		if (rc == 'c')
			cl->conf_path = optarg;
		else if (rc == 'h') {
			cmd_usage(cl->entry, stdout);
			return CMD_OK;
		} else if (rc == -1)
			break;
		else
			return cmd_usage_error(cl, "unknown option");
	}
	if (optind >= cl->argc)
		return cmd_usage_error(cl, "which: list, show, redeliver or "
		    "enable?");
	argv = cl->argv + optind;
	argc = cl->argc - optind;
	sub = argv[0];
	if (strcmp(sub, "list") != 0 && strcmp(sub, "show") != 0 &&
	    strcmp(sub, "redeliver") != 0 && strcmp(sub, "enable") != 0)
		return cmd_usage_error(cl, "unknown subcommand \"%s\"", sub);
	conf = cmd_conf_load(cl);
	if (conf == NULL)
		return cl->status;
	db_batch_init(&b);
	if (strcmp(sub, "list") == 0)
		rc = events_list(cl, conf, &b, argc, argv);
	else if (strcmp(sub, "show") == 0)
		rc = events_show(cl, conf, &b, argc, argv);
	else if (strcmp(sub, "redeliver") == 0)
		rc = events_redeliver(cl, conf, &b, argc, argv);
	else
		rc = events_enable(cl, conf, &b, argc);
	db_batch_clear(&b);
	cmd_conf_free(conf);
	return rc;
}
