/*
 * The prefork master of "idemorders serve": owns the listening socket,
 * forks the workers, respawns them with a rate limit, reloads on SIGHUP
 * and stops gracefully on SIGTERM.
 */
#ifndef IDEMORDERS_SUPERVISOR_H
#define IDEMORDERS_SUPERVISOR_H

struct conf;
struct worker_ops;

int	supervisor_run(const char *, struct conf *, const struct worker_ops *);

#endif
