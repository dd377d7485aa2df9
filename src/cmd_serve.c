/* `idemorders serve`: the FastCGI responder pool, in the foreground. */
#include "config.h"

#include "cmd.h"
#include "log.h"
#include "metrics.h"
#include "order_api.h"
#include "supervisor.h"

static int	cmd_serve(struct cmd_line *);

const struct cmd_entry cmd_serve_entry = {
	"serve",
	"[-c FILE]",
	"run the FastCGI responder pool (foreground)",
	cmd_serve
};

/* Run the responder pool until SIGTERM. */
static int
cmd_serve(struct cmd_line *cl)
{
	struct conf	*conf;

	conf = cmd_plain_conf(cl);
	if (conf == NULL)
		return cl->status;
	/* The pool's counters, inherited by every worker. */
	if (metrics_init() == -1)
		fatal("mmap");
	return supervisor_run(cl->conf_path, conf, &order_api_ops);
}
