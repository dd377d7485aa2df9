/*
 * The rules of the create-order transaction as pure functions: the
 * final business rules judged on the locked stock rows, and the backoff
 * between attempts.  Nothing here touches the database or FastCGI.
 */
#ifndef IDEMORDERS_RULES_H
#define IDEMORDERS_RULES_H

struct conf;
struct order_input;
struct problem;
struct stock_row;

int	rules_judge(const struct order_input *, const struct stock_row *,
	    struct problem *);
int	rules_cancel_judge(int, const char *, long long, long long,
	    struct problem *);
long	rules_backoff_cap(const struct conf *, int);
long	rules_backoff_ms(const struct conf *, int);

#endif
