#include "config.h"

#include <errno.h>
#include <time.h>

#include "mono.h"

/* Seconds on the monotonic clock. */
time_t
mono_now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* Milliseconds on the monotonic clock. */
long long
mono_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds elapsed since start, a reading of the monotonic clock. */
double
mono_since_ms(const struct timespec *start)
{
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) * 1e3 +
	    (double)(now.tv_nsec - start->tv_nsec) / 1e6;
}

/* Sleep ms milliseconds, resuming after signals. */
void
mono_sleep_ms(long ms)
{
	struct timespec	 ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}
