/*
 * The monotonic clock (CLOCK_MONOTONIC), for timeouts and durations that
 * a change of the wall clock must not move.
 */
#ifndef IDEMORDERS_MONO_H
#define IDEMORDERS_MONO_H

#include <time.h>

time_t	mono_now(void);
long long mono_ms(void);
double	mono_since_ms(const struct timespec *);

#endif
