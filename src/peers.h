/*
 * Peer addresses: the allow_peers list (numeric IPv4 and IPv6 addresses
 * separated by commas and blanks) and the one loopback check, for the
 * listen setting, the listening socket and REMOTE_ADDR.  Pure: it reads
 * no file and no socket.  IPv4 addresses are held v4-mapped
 * (::ffff:a.b.c.d), so that one comparison serves both families.
 */
#ifndef IDEMORDERS_PEERS_H
#define IDEMORDERS_PEERS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>

int	peers_parse_addr(const char *, struct in6_addr *);
int	peers_of_sockaddr(const struct sockaddr *, socklen_t,
	    struct in6_addr *);
int	peers_is_loopback(const struct in6_addr *);
int	peers_addr_is_loopback(const char *);
int	peers_check(const char *, char *, size_t);
int	peers_allowed(const char *, const struct sockaddr *, socklen_t);

#endif
