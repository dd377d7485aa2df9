#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "conf.h"
#include "log.h"

/* The commands, in the order of the summary. */
static const struct cmd_entry *const cmd_table[] = {
	&cmd_serve_entry,
	&cmd_migrate_entry,
	&cmd_check_config_entry,
	&cmd_expire_entry,
	&cmd_audit_entry,
	&cmd_stock_entry,
	&cmd_relay_entry,
	&cmd_events_entry,
};

#define CMD_COUNT	(sizeof(cmd_table) / sizeof(cmd_table[0]))

/* Print the summary of every command, the options and the exit statuses. */
static void
usage(FILE *fp)
{
	size_t	 i;

	fprintf(fp, "usage: idemorders COMMAND [-c FILE] [OPTIONS]\n"
	    "       idemorders -h | -V\n\ncommands:\n");
	for (i = 0; i < CMD_COUNT; i++)
		cmd_summary(cmd_table[i], fp);
	fprintf(fp, "\n"
	    "options:\n"
	    "  -c FILE        configuration file (default %s)\n"
	    "  -h, --help     show this help; after COMMAND, its own\n"
	    "  -V, --version  show the version\n"
	    "\n"
	    "exit status: 0 done; 1 found something or the operation failed "
	    "(audit: a\n"
	    "breach; a failed migration, job or stock change; check-config: "
	    "the database\n"
	    "unreachable); 2 a usage or configuration error\n",
	    CONF_DEFAULT_PATH);
}

/* Return the entry of the command called name, or NULL. */
static const struct cmd_entry *
cmd_find(const char *name)
{
	size_t	 i;

	for (i = 0; i < CMD_COUNT; i++)
		if (strcmp(cmd_table[i]->name, name) == 0)
			return cmd_table[i];
	return NULL;
}

/*
 * Take -c FILE, -h and -V before the command.  Returns -1 to go on with
 * the command at argv[optind], or the exit status.
 */
static int
global_options(int argc, char *argv[], struct cmd_line *cl)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int	 ch;

	for (;;) {
		ch = getopt_long(argc, argv, "+:c:hV", longopts, NULL);
		if (ch == -1)
			return -1;
		switch (ch) {
		case 'c':
			cl->conf_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return CMD_OK;
		case 'V':
			printf("%s %s\n", PACKAGE_NAME, PACKAGE_VERSION);
			return CMD_OK;
		default:
			cmd_option_error(NULL, argv, longopts, ch);
			usage(stderr);
			return CMD_USAGE;
		}
	}
}

/*
 * Find the command and run it on the rest of the arguments: it parses
 * its own options (GNU getopt starts afresh when optind is 0).
 */
int
main(int argc, char *argv[])
{
	struct cmd_line	 cl = { .conf_path = CONF_DEFAULT_PATH };
	int		 rc;

	log_init("idemorders", 0, LOG_INFO);
	rc = global_options(argc, argv, &cl);
	if (rc != -1)
		return rc;
	if (optind == argc) {
		usage(stderr);
		return CMD_USAGE;
	}
	cl.entry = cmd_find(argv[optind]);
	if (cl.entry == NULL) {
		fprintf(stderr, "idemorders: unknown command \"%s\"\n",
		    argv[optind]);
		usage(stderr);
		return CMD_USAGE;
	}
	cl.argc = argc - optind;
	cl.argv = argv + optind;
	optind = 0;
	return cl.entry->exec(&cl);
}
