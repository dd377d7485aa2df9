/* `idemorders migrate`: the pending schema migrations. */
#include "config.h"

#include "cmd.h"
#include "migrate.h"

static int	cmd_migrate(struct cmd_line *);

const struct cmd_entry cmd_migrate_entry = {
	"migrate",
	"[-c FILE]",
	"apply pending schema migrations",
	cmd_migrate
};

/* Apply the migrations not applied yet. */
static int
cmd_migrate(struct cmd_line *cl)
{
	struct conf	*conf;
	int		 rc;

	conf = cmd_plain_conf(cl);
	if (conf == NULL)
		return cl->status;
	rc = migrate_run(conf) == 0 ? CMD_OK : CMD_FAILED;
	cmd_conf_free(conf);
	return rc;
}
