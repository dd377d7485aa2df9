/* The retention job: terminal ledger rows to tombstones, old ones purged. */
#ifndef IDEMORDERS_EXPIRE_H
#define IDEMORDERS_EXPIRE_H

struct conf;

struct expire_stats {
	long long	 expired;
	long long	 purged;
	long long	 events_purged;	/* delivered events */
	long		 batches;
};

int	expire_run(const struct conf *, long, long, int, struct expire_stats *);

#endif
