/*
 * The commands of idemorders (`idemorders COMMAND [-c FILE] ...`): each
 * cmd_NAME.c parses its own options and calls the module that does the
 * work; main.c holds the table of their entries.  Every command exits
 * with one of the statuses below.
 */
#ifndef IDEMORDERS_CMD_H
#define IDEMORDERS_CMD_H

#include <stdio.h>

#define CMD_OK		0	/* done */
#define CMD_FAILED	1	/* found something, or the operation failed */
#define CMD_USAGE	2	/* a usage or configuration error */

/* cmd_getopt(): the command is done and returns cmd_line.status. */
#define CMD_OPT_EXIT	(-2)

struct conf;
struct option;
struct cmd_line;

/* Runs a command; returns its exit status. */
typedef int (*cmd_exec)(struct cmd_line *);

struct cmd_entry {
	const char	*name;
	const char	*usage;		/* after "idemorders NAME ", a line each */
	const char	*about;		/* what it does, a line each */
	cmd_exec	 exec;
};

/* One command's arguments: argv[0] is its name. */
struct cmd_line {
	const struct cmd_entry	*entry;
	int			 argc;
	char			**argv;
	const char		*conf_path;	/* the default, or -c FILE */
	int			 status;	/* when cmd_getopt() says so */
};

extern const struct cmd_entry	cmd_serve_entry;
extern const struct cmd_entry	cmd_migrate_entry;
extern const struct cmd_entry	cmd_check_config_entry;
extern const struct cmd_entry	cmd_expire_entry;
extern const struct cmd_entry	cmd_audit_entry;
extern const struct cmd_entry	cmd_stock_entry;
extern const struct cmd_entry	cmd_relay_entry;
extern const struct cmd_entry	cmd_events_entry;

void		 cmd_usage(const struct cmd_entry *, FILE *);
void		 cmd_summary(const struct cmd_entry *, FILE *);
int		 cmd_getopt(struct cmd_line *, const struct option *);
void		 cmd_option_error(const char *, char **,
		    const struct option *, int);
int		 cmd_usage_error(struct cmd_line *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
int		 cmd_no_arguments(struct cmd_line *);
struct conf	*cmd_conf_load(struct cmd_line *);
struct conf	*cmd_plain_conf(struct cmd_line *);
void		 cmd_conf_free(struct conf *);

#endif
