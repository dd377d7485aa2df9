/* `idemorders stock set|list|import`: the stock rows. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>

#include "cmd.h"
#include "stock_admin.h"

static int	cmd_stock(struct cmd_line *);

const struct cmd_entry cmd_stock_entry = {
	"stock",
	"set [-c FILE] [--] SKU CURRENCY UNIT_PRICE AVAILABLE\n"
	"list [-c FILE]\n"
	"import [-c FILE] FILE.csv",
	"create, replace or list stock rows (CSV: sku,currency,unit_price,\n"
	"available; an import is one transaction)",
	cmd_stock
};

/* Run one stock command on the database of the configuration. */
static int
cmd_stock(struct cmd_line *cl)
{
	struct conf	*conf;
	char		**argv;
	int		 argc, want, rc;

	if (cmd_getopt(cl, NULL) != -1)
		return cl->status;
	argc = cl->argc - optind;
	argv = cl->argv + optind;
	if (argc == 0)
		return cmd_usage_error(cl, "set, list or import?");
	want = stock_admin_argc(argv[0]);
	if (want == -1)
		return cmd_usage_error(cl, "unknown stock command \"%s\"",
		    argv[0]);
	if (want != argc - 1)
		return cmd_usage_error(cl, "stock %s takes %d argument%s, "
		    "not %d", argv[0], want, want == 1 ? "" : "s", argc - 1);
	conf = cmd_conf_load(cl);
	if (conf == NULL)
		return cl->status;
	rc = stock_admin_run(conf, argc, argv, stdout) == 0 ? CMD_OK :
	    CMD_FAILED;
	cmd_conf_free(conf);
	return rc;
}
