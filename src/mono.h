/*
 * The monotonic clock (CLOCK_MONOTONIC), for timeouts, durations and
 * sleeps that a change of the wall clock must not move.
 */
#ifndef IDEMORDERS_MONO_H
#define IDEMORDERS_MONO_H

#include <time.h>

time_t	mono_now(void);
long long mono_ms(void);
double	mono_since_ms(const struct timespec *);
void	mono_sleep_ms(long);

#endif
