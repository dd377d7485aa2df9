/* `idemorders expire`: the retention job. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "conf.h"
#include "expire.h"

#define EXPIRE_BATCH_MAX	1000000
#define EXPIRE_PAUSE_MAX_MS	60000

static int	cmd_expire(struct cmd_line *);

const struct cmd_entry cmd_expire_entry = {
	"expire",
	"[-c FILE] [--batch N] [--pause DURATION] [--dry-run]",
	"turn expired idempotency keys into tombstones, purge old "
	"tombstones\n"
	"and delivered events older than event_retention\n"
	"(--batch: rows per transaction; --pause: wait after each full batch;\n"
	"--dry-run: count, change nothing)",
	cmd_expire
};

/* Expire and purge in batches; print what was done. */
static int
cmd_expire(struct cmd_line *cl)
{
	static const struct option longopts[] = {
		{ "batch", required_argument, NULL, 'b' },
		{ "pause", required_argument, NULL, 'p' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct conf		*conf;
	struct expire_stats	 st;
	long			 batch = 0;
	long long		 pause_ms = -1;
	int			 ch, dry_run = 0, rc;
	char			*end;

	for (;;) {
		ch = cmd_getopt(cl, longopts);
		if (ch == -1)
			break;
		switch (ch) {
		case 'b':
			batch = strtol(optarg, &end, 10);
			if (*end != '\0' || batch < 1 ||
			    batch > EXPIRE_BATCH_MAX)
				return cmd_usage_error(cl, "--batch must be "
				    "from 1 to %d", EXPIRE_BATCH_MAX);
			break;
		case 'p':
			if (conf_parse_duration(optarg, &pause_ms) == -1 ||
			    pause_ms > EXPIRE_PAUSE_MAX_MS)
				return cmd_usage_error(cl, "--pause must be a "
				    "duration from 0 to 60s (e.g. 200ms)");
			break;
		case 'n':
			dry_run = 1;
			break;
		default:
			return cl->status;
		}
	}
	if (cmd_no_arguments(cl) == -1)
		return cl->status;
	conf = cmd_conf_load(cl);
	if (conf == NULL)
		return cl->status;
	if (expire_run(conf, batch ? batch : conf->expire_batch,
	    pause_ms >= 0 ? (long)pause_ms : conf->expire_pause_ms, dry_run,
	    &st) == 0) {
		printf("%sexpired=%lld purged=%lld batches=%ld "
		    "events_purged=%lld\n", dry_run ? "dry-run: " : "",
		    st.expired, st.purged, st.batches, st.events_purged);
		rc = CMD_OK;
	} else
		rc = CMD_FAILED;
	cmd_conf_free(conf);
	return rc;
}
