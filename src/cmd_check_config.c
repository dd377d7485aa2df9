/* `idemorders check-config`: the configuration, and the database it names. */
#include "config.h"

#include <stdio.h>

#include "cmd.h"
#include "db.h"

static int	cmd_check_config(struct cmd_line *);

const struct cmd_entry cmd_check_config_entry = {
	"check-config",
	"[-c FILE]",
	"parse the configuration and connect to the database",
	cmd_check_config
};

/* Load the configuration and connect once; say what is wrong. */
static int
cmd_check_config(struct cmd_line *cl)
{
	struct conf	*conf;
	struct db	 db;
	int		 rc;

	conf = cmd_plain_conf(cl);
	if (conf == NULL)
		return cl->status;
	db_init(&db, conf);
	if (db_connect(&db) != DB_OK) {
		fprintf(stderr, "%s: database: %s (%u)\n", cl->conf_path,
		    db.last_error, db.last_errno);
		rc = CMD_FAILED;
	} else {
		printf("%s: configuration OK, database reachable\n",
		    cl->conf_path);
		rc = CMD_OK;
	}
	db_disconnect(&db);
	cmd_conf_free(conf);
	return rc;
}
