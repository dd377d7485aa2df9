/* `idemorders audit`: every breach of the exactly-once invariants. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>

#include "audit.h"
#include "cmd.h"

static int	cmd_audit(struct cmd_line *);

const struct cmd_entry cmd_audit_entry = {
	"audit",
	"[-c FILE] [--json] [--since @EPOCH|DURATION]",
	"report every breach of the exactly-once invariants\n"
	"(exit 0 clean, 1 breaches, 2 a usage, configuration or database "
	"error)",
	cmd_audit
};

/* Audit the rows created since --since (every row without), to stdout. */
static int
cmd_audit(struct cmd_line *cl)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "since", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct conf	*conf;
	const char	*since_arg = NULL;
	long long	 since = 0;
	int		 ch, json = 0, rc;

	for (;;) {
		ch = cmd_getopt(cl, longopts);
		if (ch == -1)
			break;
		switch (ch) {
		case 'j':
			json = 1;
			break;
		case 's':
			since_arg = optarg;
			break;
		default:
			return cl->status;
		}
	}
	if (cmd_no_arguments(cl) == -1)
		return cl->status;
	if (since_arg != NULL && audit_parse_since(since_arg, &since) == -1)
		return cmd_usage_error(cl, "--since \"%s\": expected "
		    "@EPOCH_SECONDS (0 to %lld, the database's FROM_UNIXTIME "
		    "range) or a duration such as 90m or 24h", since_arg,
		    (long long)AUDIT_SINCE_MAX);
	conf = cmd_conf_load(cl);
	if (conf == NULL)
		return cl->status;
	rc = audit_run(conf, json, since, stdout);
	cmd_conf_free(conf);
	return rc;
}
