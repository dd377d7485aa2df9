/*
 * hello-fcgi: the HTTP + FastCGI ceiling H.  The same prefork supervisor,
 * worker loop, body reader, response writer and request log as
 * idemorders, with a handler that answers a constant and touches no
 * database.  Run it behind the same web-server configuration and auth.
 *
 *	hello-fcgi -c FILE	(the idemorders configuration format)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "response.h"
#include "supervisor.h"
#include "worker.h"

/* Answer every request with a small JSON document. */
static enum handler_result
hello(struct db *db, const struct conf *conf, struct request *req,
    struct response *resp)
{
	static const char body[] = "{\"hello\":\"world\"}";

	(void)db;
	(void)conf;
	(void)req;
	response_json(resp, 200, body, sizeof(body) - 1);
	resp->outcome = OUTCOME_OK;
	return HANDLER_ANSWER;
}

static const struct worker_ops hello_ops = { hello, 0, NULL };

int
main(int argc, char *argv[])
{
	struct conf	*conf;
	const char	*path = NULL;
	char		 err[512];
	int		 ch;

	for (;;) {
		ch = getopt(argc, argv, "c:");
		if (ch == -1)
			break;
		if (ch != 'c') {
			fprintf(stderr, "usage: hello-fcgi -c FILE\n");
			return 2;
		}
		path = optarg;
	}
	if (path == NULL) {
		fprintf(stderr, "usage: hello-fcgi -c FILE\n");
		return 2;
	}
	log_init("hello-fcgi", 0, LOG_INFO);
	conf = malloc(sizeof(*conf));
	if (conf == NULL)
		fatal("malloc");
	if (conf_load(conf, path, err, sizeof(err)) == -1)
		fatalx("%s", err);
	log_init("hello-fcgi", conf->log_syslog, conf->log_level);
	return supervisor_run(path, conf, &hello_ops);
}
