/*
 * What every command shares: its usage text, -c FILE and -h, --help,
 * the messages of a usage error, and loading the configuration.
 */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "conf.h"
#include "log.h"

/* The long options of a command that has none of its own. */
static const struct option plain_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Print every line of text, the first after first, the others after lead. */
static void
put_lines(FILE *fp, const char *first, const char *lead, const char *text)
{
	const char	*p = text, *nl;
	int		 len;

	for (;;) {
		nl = strchr(p, '\n');
		len = nl == NULL ? (int)strlen(p) : (int)(nl - p);
		fprintf(fp, "%s%.*s\n", p == text ? first : lead, len, p);
		if (nl == NULL)
			break;
		p = nl + 1;
	}
}

/* Print the usage lines of a command. */
static void
usage_lines(const struct cmd_entry *e, FILE *fp)
{
	char	 first[64], lead[64];

	snprintf(first, sizeof(first), "usage: idemorders %s ", e->name);
	snprintf(lead, sizeof(lead), "       idemorders %s ", e->name);
	put_lines(fp, first, lead, e->usage);
}

/* Print the usage lines of a command and what it does. */
void
cmd_usage(const struct cmd_entry *e, FILE *fp)
{
	usage_lines(e, fp);
	fputc('\n', fp);
	put_lines(fp, "", "", e->about);
}

/* Print a command's entry in the summary of idemorders -h. */
void
cmd_summary(const struct cmd_entry *e, FILE *fp)
{
	char	 lead[64];

	snprintf(lead, sizeof(lead), "  %s ", e->name);
	put_lines(fp, lead, lead, e->usage);
	put_lines(fp, "      ", "      ", e->about);
}

/*
 * Return the value of the long option arg ("--name[=value]", name as
 * written, perhaps abbreviated), or 0.
 */
static int
long_val(const char *arg, const struct option *longopts)
{
	const struct option	*o;
	size_t			 len;

	len = strcspn(arg + 2, "=");
	for (o = longopts; o->name != NULL; o++)
		if (len > 0 && strncmp(o->name, arg + 2, len) == 0)
			return o->val;
	return 0;
}

/*
 * Report the option getopt_long() refused with ch ('?' or ':') as
 * "idemorders [WHO: ]...", naming it as it was written.  who may be NULL.
 */
void
cmd_option_error(const char *who, char **argv, const struct option *longopts,
    int ch)
{
	const char	*arg = argv[optind - 1], *what;
	char		 name[64];
	int		 written_long;

	written_long = strncmp(arg, "--", 2) == 0 &&
	    (optopt == 0 || long_val(arg, longopts) == optopt);
	if (written_long)
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg, "="),
		    arg);
	else
		snprintf(name, sizeof(name), "-%c", optopt);
	if (ch == ':')
		what = "needs an argument";
	else if (written_long && optopt != 0)
		what = "takes no argument";
	else
		what = NULL;
	fprintf(stderr, "idemorders%s%s: ", who != NULL ? " " : "",
	    who != NULL ? who : "");
	if (what != NULL)
		fprintf(stderr, "option %s %s\n", name, what);
	else
		fprintf(stderr, "unknown option %s\n", name);
}

/*
 * getopt_long() over a command's arguments, with -c FILE and -h, --help
 * handled here (longopts, or NULL for none of the command's own, must
 * list "help").  Returns the command's next own option, -1 after the
 * last option, or CMD_OPT_EXIT when the command is done: -h printed its
 * usage, or a bad option was reported; it then exits with cl->status.
 */
int
cmd_getopt(struct cmd_line *cl, const struct option *longopts)
{
	int	 ch;

	if (longopts == NULL)
		longopts = plain_options;
	for (;;) {
		ch = getopt_long(cl->argc, cl->argv, ":c:h", longopts, NULL);
		if (ch != 'c')
			break;
		cl->conf_path = optarg;
	}
	if (ch == 'h') {
		cmd_usage(cl->entry, stdout);
		cl->status = CMD_OK;
		return CMD_OPT_EXIT;
	}
	if (ch == '?' || ch == ':') {
		cmd_option_error(cl->entry->name, cl->argv, longopts, ch);
		usage_lines(cl->entry, stderr);
		cl->status = CMD_USAGE;
		return CMD_OPT_EXIT;
	}
	return ch;
}

/*
 * Report a usage error of a command, then its usage, on stderr.  Returns
 * CMD_USAGE, also left in cl->status.
 */
int
cmd_usage_error(struct cmd_line *cl, const char *fmt, ...)
{
	va_list	 ap;

	fprintf(stderr, "idemorders %s: ", cl->entry->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage_lines(cl->entry, stderr);
	cl->status = CMD_USAGE;
	return CMD_USAGE;
}

/*
 * Refuse arguments left after the options.  Returns 0, or -1 when there
 * is one: the command exits with cl->status.
 */
int
cmd_no_arguments(struct cmd_line *cl)
{
	if (optind >= cl->argc)
		return 0;
	cmd_usage_error(cl, "unexpected argument \"%s\"", cl->argv[optind]);
	return -1;
}

/*
 * Load the configuration of -c FILE (or the default) and log as it says.
 * Returns it (owned by the caller: cmd_conf_free(), or a supervisor that
 * replaces it), or NULL after printing what is wrong: the command exits
 * with cl->status, CMD_USAGE.
 */
struct conf *
cmd_conf_load(struct cmd_line *cl)
{
	struct conf	*conf;
	char		 err[512];

	conf = calloc(1, sizeof(*conf));
	if (conf == NULL)
		fatal("calloc");
	if (conf_load(conf, cl->conf_path, err, sizeof(err)) == -1) {
		fprintf(stderr, "idemorders %s: %s\n", cl->entry->name, err);
		cmd_conf_free(conf);
		cl->status = CMD_USAGE;
		return NULL;
	}
	log_set_facility(conf->log_facility);
	log_set_json(conf->log_format == LOG_FORMAT_JSON);
	log_init("idemorders", conf->log_syslog, conf->log_level);
	return conf;
}

/*
 * For a command without options of its own (-c and -h only) nor
 * arguments: parse them, then load the configuration.  Returns it as
 * cmd_conf_load() does, or NULL when the command is done (-h, or an
 * error reported) and exits with cl->status.
 */
struct conf *
cmd_plain_conf(struct cmd_line *cl)
{
	if (cmd_getopt(cl, NULL) != -1 || cmd_no_arguments(cl) == -1)
		return NULL;
	return cmd_conf_load(cl);
}

/* Free a configuration of cmd_conf_load(); NULL is allowed. */
void
cmd_conf_free(struct conf *conf)
{
	conf_clear(conf);
	free(conf);
}
