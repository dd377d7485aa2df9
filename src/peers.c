#include "config.h"

#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "peers.h"

/* Parse one numeric IPv4 or IPv6 address into a v4-mapped in6_addr. */
int
peers_parse_addr(const char *s, struct in6_addr *out)
{
	struct in_addr	 a4;

	if (inet_pton(AF_INET6, s, out) == 1)
		return 0;
	if (inet_pton(AF_INET, s, &a4) != 1)
		return -1;
	memset(out, 0, sizeof(*out));
	out->s6_addr[10] = 0xff;
	out->s6_addr[11] = 0xff;
	memcpy(&out->s6_addr[12], &a4, 4);
	return 0;
}

/*
 * Take the address of an IPv4 or IPv6 socket address sa (salen bytes),
 * v4-mapped; -1 for another family or a short sa.
 */
int
peers_of_sockaddr(const struct sockaddr *sa, socklen_t salen,
    struct in6_addr *out)
{
	if (sa->sa_family == AF_INET6 &&
	    salen >= (socklen_t)sizeof(struct sockaddr_in6)) {
		*out = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		return 0;
	}
	if (sa->sa_family == AF_INET &&
	    salen >= (socklen_t)sizeof(struct sockaddr_in)) {
		memset(out, 0, sizeof(*out));
		out->s6_addr[10] = 0xff;
		out->s6_addr[11] = 0xff;
		memcpy(&out->s6_addr[12],
		    &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return 0;
	}
	return -1;
}

/* Tell whether a is a loopback address: 127.0.0.0/8 or ::1. */
int
peers_is_loopback(const struct in6_addr *a)
{
	if (IN6_IS_ADDR_LOOPBACK(a))
		return 1;
	return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
}

/* Tell whether a numeric address (REMOTE_ADDR) is a loopback one. */
int
peers_addr_is_loopback(const char *addr)
{
	struct in6_addr	 a;

	if (addr == NULL || peers_parse_addr(addr, &a) == -1)
		return 0;
	return peers_is_loopback(&a);
}

/*
 * Call fn for each address of a list "A, B C": commas and blanks
 * separate.  Returns -1 at the first entry that is not an address (its
 * text in bad), 1 as soon as fn returns 1, else 0.
 */
static int
peers_each(const char *list, int (*fn)(const struct in6_addr *, void *),
    void *arg, char *bad, size_t badsz)
{
	struct in6_addr	 a;
	const char	*p = list;
	char		 one[INET6_ADDRSTRLEN + 1];
	size_t		 n;

	for (;;) {
		p += strspn(p, ", \t");
		if (*p == '\0')
			return 0;
		n = strcspn(p, ", \t");
		if (n < sizeof(one)) {
			memcpy(one, p, n);
			one[n] = '\0';
		}
		if (n >= sizeof(one) || peers_parse_addr(one, &a) == -1) {
			if (bad != NULL)
				snprintf(bad, badsz, "%.*s", (int)n, p);
			return -1;
		}
		if (fn != NULL && fn(&a, arg) == 1)
			return 1;
		p += n;
	}
}

/*
 * Check an allow_peers list: 0, or -1 with the first entry that is not
 * an address in bad (badsz bytes, cut to fit).
 */
int
peers_check(const char *list, char *bad, size_t badsz)
{
	return peers_each(list, NULL, NULL, bad, badsz);
}

/* peers_each() callback: does the entry equal the peer? */
static int
peer_equal(const struct in6_addr *a, void *arg)
{
	return memcmp(a, arg, sizeof(*a)) == 0;
}

/*
 * Tell whether a connection from sa is allowed by list (allow_peers):
 * its address must be one of the list's.  An IPv4 peer on an IPv6 socket
 * (::ffff:a.b.c.d) matches a.b.c.d.
 */
int
peers_allowed(const char *list, const struct sockaddr *sa, socklen_t salen)
{
	struct in6_addr	 peer;

	if (peers_of_sockaddr(sa, salen, &peer) == -1)
		return 0;
	return peers_each(list, peer_equal, &peer, NULL, 0) == 1;
}
