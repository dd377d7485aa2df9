#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "conf.h"
#include "db.h"
#include "expire.h"
#include "log.h"
#include "metrics.h"
#include "order_api.h"
#include "migrate.h"
#include "stock_admin.h"
#include "supervisor.h"
#include "worker.h"

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: idemorders COMMAND [-c FILE] [OPTIONS]\n"
	    "\n"
	    "commands:\n"
	    "  serve          run the FastCGI responder pool (foreground)\n"
	    "  migrate        apply pending schema migrations\n"
	    "  check-config   parse the configuration and connect to the "
	    "database\n"
	    "  expire [--batch N] [--dry-run]\n"
	    "                 turn expired idempotency keys into tombstones "
	    "and purge\n"
	    "                 old tombstones\n"
	    "  audit [--json] [--since @EPOCH|DURATION]\n"
	    "                 report every breach of the exactly-once "
	    "invariants\n"
	    "                 (exit 0 clean, 1 breaches, 2 error)\n"
	    "  stock set SKU CURRENCY UNIT_PRICE AVAILABLE\n"
	    "  stock list\n"
	    "  stock import FILE.csv\n"
	    "                 create, replace or list stock rows (CSV: "
	    "sku,currency,\n"
	    "                 unit_price,available; an import is one "
	    "transaction)\n"
	    "\n"
	    "options:\n"
	    "  -c FILE        configuration file (default %s)\n"
	    "  -h, --help     show this help\n"
	    "  -V, --version  show the version\n", CONF_DEFAULT_PATH);
}

/* Load the configuration or exit with the parser's message. */
static struct conf *
load(const char *path)
{
	struct conf	*c;
	char		 err[512];

	c = malloc(sizeof(*c));
	if (c == NULL)
		fatal("malloc");
	if (conf_load(c, path, err, sizeof(err)) == -1)
		fatalx("%s", err);
	return c;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "batch", required_argument, NULL, 'b' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "since", required_argument, NULL, 's' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char		*path = CONF_DEFAULT_PATH, *cmd = NULL;
	const char		*since = NULL;
	struct conf		*conf;
	struct expire_stats	 st;
	struct db		 db;
	long			 batch = 0;
	int			 ch, dry_run = 0, json = 0, rc;
	char			*end;

	log_init("idemorders", 0, LOG_INFO);
	if (argc > 1 && argv[1][0] != '-') {
		cmd = argv[1];
		argv++;
		argc--;
	}
	for (;;) {
		ch = getopt_long(argc, argv, "c:hV", longopts, NULL);
		if (ch == -1)
			break;
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'b':
			batch = strtol(optarg, &end, 10);
			if (*end != '\0' || batch < 1 || batch > 1000000)
				fatalx("--batch must be from 1 to 1000000");
			break;
		case 'n':
			dry_run = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 's':
			since = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("%s %s\n", PACKAGE_NAME, PACKAGE_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (cmd == NULL && optind < argc)
		cmd = argv[optind++];
	if (cmd != NULL && strcmp(cmd, "stock") == 0) {
		if (optind >= argc ||
		    stock_admin_argc(argv[optind]) != argc - optind - 1) {
			usage(stderr);
			return 2;
		}
	} else if (cmd == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	if ((batch || dry_run) && strcmp(cmd, "expire") != 0)
		fatalx("--batch and --dry-run belong to expire");
	if ((json || since != NULL) && strcmp(cmd, "audit") != 0) {
		fprintf(stderr, "idemorders: --json and --since belong to "
		    "audit\n");
		return 2;
	}

	if (strcmp(cmd, "audit") == 0)
		return audit_command(path, json, since);
	conf = load(path);
	log_set_facility(conf->log_facility);
	log_set_json(conf->log_format == LOG_FORMAT_JSON);
	log_init("idemorders", conf->log_syslog, conf->log_level);
	if (strcmp(cmd, "serve") == 0) {
		/* The pool's counters, inherited by every worker. */
		if (metrics_init() == -1)
			fatal("mmap");
		return supervisor_run(path, conf, &order_api_ops);
	}
	if (strcmp(cmd, "migrate") == 0)
		rc = migrate_run(conf) == 0 ? 0 : 1;
	else if (strcmp(cmd, "check-config") == 0) {
		db_init(&db, conf);
		if (db_connect(&db) != DB_OK) {
			fprintf(stderr, "%s: database: %s (%u)\n", path,
			    db.last_error, db.last_errno);
			rc = 1;
		} else {
			printf("%s: configuration OK, database reachable\n",
			    path);
			rc = 0;
		}
		db_disconnect(&db);
	} else if (strcmp(cmd, "stock") == 0) {
		rc = stock_admin_run(conf, argc - optind, argv + optind,
		    stdout) == 0 ? 0 : 1;
	} else if (strcmp(cmd, "expire") == 0) {
		if (expire_run(conf, batch ? batch : conf->expire_batch,
		    dry_run, &st) == 0) {
			printf("%sexpired=%lld purged=%lld batches=%ld\n",
			    dry_run ? "dry-run: " : "", st.expired, st.purged,
			    st.batches);
			rc = 0;
		} else
			rc = 1;
	} else {
		fprintf(stderr, "idemorders: unknown command \"%s\"\n", cmd);
		usage(stderr);
		rc = 2;
	}
	conf_clear(conf);
	free(conf);
	return rc;
}
