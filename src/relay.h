/*
 * `idemorders relay`: delivers the outbox's events (events.c) to the
 * configured endpoint as Standard Webhooks (webhook.c), with libcurl.
 */
#ifndef IDEMORDERS_RELAY_H
#define IDEMORDERS_RELAY_H

struct conf;

long long	relay_backoff_ms(const struct conf *, long);
long long	relay_retry_after_ms(const char *, long long);
int		relay_run(const char *, struct conf *);

#endif
