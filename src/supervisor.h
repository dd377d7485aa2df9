/*
 * The prefork master of "idemorders serve": takes the listening socket
 * (listener.c), drops privileges, forks the workers, respawns them with
 * a rate limit, reloads on SIGHUP and stops gracefully on SIGTERM.
 */
#ifndef IDEMORDERS_SUPERVISOR_H
#define IDEMORDERS_SUPERVISOR_H

struct conf;
struct worker_ops;

int	supervisor_run(const char *, struct conf *, const struct worker_ops *);

#endif
