/* `idemorders relay`: deliver the events as signed webhooks. */
#include "config.h"

#include <stdio.h>

#include "cmd.h"
#include "conf.h"
#include "relay.h"

static int	cmd_relay(struct cmd_line *);

const struct cmd_entry cmd_relay_entry = {
	"relay",
	"[-c FILE]",
	"deliver order events to webhook_url, signed as Standard Webhooks;\n"
	"runs until SIGTERM (SIGHUP reloads the configuration)",
	cmd_relay
};

/* Run the relay on the configuration's endpoint. */
static int
cmd_relay(struct cmd_line *cl)
{
	struct conf	*conf;

	conf = cmd_plain_conf(cl);
	if (conf == NULL)
		return cl->status;
	if (conf->webhook_url == NULL) {
		fprintf(stderr, "idemorders relay: %s sets no webhook_url (and "
		    "webhook_secret_file): there is nowhere to deliver events\n",
		    cl->conf_path);
		cmd_conf_free(conf);
		return CMD_USAGE;
	}
	return relay_run(cl->conf_path, conf) == 0 ? CMD_OK : CMD_FAILED;
}
