#include "config.h"

#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <CUnit/CUnit.h>

#include "peers.h"
#include "unit.h"

static void
test_parse_addr(void)
{
	struct in6_addr	 a, b;

	CU_ASSERT_EQUAL(peers_parse_addr("10.0.0.5", &a), 0);
	CU_ASSERT_EQUAL(peers_parse_addr("::ffff:10.0.0.5", &b), 0);
	CU_ASSERT_EQUAL(memcmp(&a, &b, sizeof(a)), 0);
	CU_ASSERT_EQUAL(peers_parse_addr("2001:db8::7", &a), 0);
	CU_ASSERT_EQUAL(peers_parse_addr("10.0.0.256", &a), -1);
	CU_ASSERT_EQUAL(peers_parse_addr("web1", &a), -1);
	CU_ASSERT_EQUAL(peers_parse_addr("10.0.0.5 ", &a), -1);
	CU_ASSERT_EQUAL(peers_parse_addr("", &a), -1);
}

static void
test_check(void)
{
	char	 bad[64];

	CU_ASSERT_EQUAL(peers_check("10.0.0.5", bad, sizeof(bad)), 0);
	CU_ASSERT_EQUAL(peers_check("10.0.0.5, 10.0.0.6 2001:db8::7", bad,
	    sizeof(bad)), 0);
	CU_ASSERT_EQUAL(peers_check(" ,\t10.0.0.5,,\t::1 , ", bad,
	    sizeof(bad)), 0);
	CU_ASSERT_EQUAL(peers_check("", bad, sizeof(bad)), 0);
	CU_ASSERT_EQUAL(peers_check(", \t", bad, sizeof(bad)), 0);

	CU_ASSERT_EQUAL(peers_check("10.0.0.5, web1 10.0.0.6", bad,
	    sizeof(bad)), -1);
	CU_ASSERT_STRING_EQUAL(bad, "web1");
	CU_ASSERT_EQUAL(peers_check("10.0.0.5;10.0.0.6", bad, sizeof(bad)),
	    -1);
	CU_ASSERT_STRING_EQUAL(bad, "10.0.0.5;10.0.0.6");
	CU_ASSERT_EQUAL(peers_check("10.0.0.0/8", bad, sizeof(bad)), -1);
	CU_ASSERT_STRING_EQUAL(bad, "10.0.0.0/8");
	/* Longer than any address: refused, and cut to fit bad. */
	CU_ASSERT_EQUAL(peers_check("::1 "
	    "0000:0000:0000:0000:0000:0000:0000:0000:1", bad, 8), -1);
	CU_ASSERT_STRING_EQUAL(bad, "0000:00");
}

static void
test_allowed(void)
{
	struct sockaddr_in	 a4;
	struct sockaddr_in6	 a6;
	const char		*list = "10.0.0.5, 10.0.0.6 2001:db8::7";

	memset(&a4, 0, sizeof(a4));
	a4.sin_family = AF_INET;
	inet_pton(AF_INET, "10.0.0.6", &a4.sin_addr);
	CU_ASSERT_TRUE(peers_allowed(list, (struct sockaddr *)&a4,
	    sizeof(a4)));
	inet_pton(AF_INET, "10.0.0.7", &a4.sin_addr);
	CU_ASSERT_FALSE(peers_allowed(list, (struct sockaddr *)&a4,
	    sizeof(a4)));
	memset(&a6, 0, sizeof(a6));
	a6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:10.0.0.5", &a6.sin6_addr);
	CU_ASSERT_TRUE(peers_allowed(list, (struct sockaddr *)&a6,
	    sizeof(a6)));
	inet_pton(AF_INET6, "2001:db8::7", &a6.sin6_addr);
	CU_ASSERT_TRUE(peers_allowed(list, (struct sockaddr *)&a6,
	    sizeof(a6)));
	inet_pton(AF_INET6, "2001:db8::8", &a6.sin6_addr);
	CU_ASSERT_FALSE(peers_allowed(list, (struct sockaddr *)&a6,
	    sizeof(a6)));
	/* A short address, or an empty list, lets no one in. */
	CU_ASSERT_FALSE(peers_allowed(list, (struct sockaddr *)&a6,
	    sizeof(a4)));
	inet_pton(AF_INET, "10.0.0.5", &a4.sin_addr);
	CU_ASSERT_FALSE(peers_allowed("", (struct sockaddr *)&a4,
	    sizeof(a4)));
}

static void
test_loopback(void)
{
	CU_ASSERT_TRUE(peers_addr_is_loopback("127.0.0.1"));
	CU_ASSERT_TRUE(peers_addr_is_loopback("127.3.2.1"));
	CU_ASSERT_TRUE(peers_addr_is_loopback("::1"));
	CU_ASSERT_TRUE(peers_addr_is_loopback("::ffff:127.0.0.1"));
	CU_ASSERT_FALSE(peers_addr_is_loopback("128.0.0.1"));
	CU_ASSERT_FALSE(peers_addr_is_loopback("192.0.2.7"));
	CU_ASSERT_FALSE(peers_addr_is_loopback("::2"));
	CU_ASSERT_FALSE(peers_addr_is_loopback("::ffff:10.0.0.1"));
	CU_ASSERT_FALSE(peers_addr_is_loopback("localhost"));
	CU_ASSERT_FALSE(peers_addr_is_loopback("127.0.0.1 "));
	CU_ASSERT_FALSE(peers_addr_is_loopback(""));
	CU_ASSERT_FALSE(peers_addr_is_loopback(NULL));
}

static void
test_sockaddr_loopback(void)
{
	struct sockaddr_in	 a4;
	struct sockaddr_in6	 a6;
	struct in6_addr		 a;

	memset(&a4, 0, sizeof(a4));
	a4.sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &a4.sin_addr);
	CU_ASSERT_EQUAL(peers_of_sockaddr((struct sockaddr *)&a4,
	    sizeof(a4), &a), 0);
	CU_ASSERT_TRUE(peers_is_loopback(&a));
	inet_pton(AF_INET, "0.0.0.0", &a4.sin_addr);
	CU_ASSERT_EQUAL(peers_of_sockaddr((struct sockaddr *)&a4,
	    sizeof(a4), &a), 0);
	CU_ASSERT_FALSE(peers_is_loopback(&a));
	memset(&a6, 0, sizeof(a6));
	a6.sin6_family = AF_INET6;
	a6.sin6_addr = in6addr_loopback;
	CU_ASSERT_EQUAL(peers_of_sockaddr((struct sockaddr *)&a6,
	    sizeof(a6), &a), 0);
	CU_ASSERT_TRUE(peers_is_loopback(&a));
	a6.sin6_addr = in6addr_any;
	CU_ASSERT_EQUAL(peers_of_sockaddr((struct sockaddr *)&a6,
	    sizeof(a6), &a), 0);
	CU_ASSERT_FALSE(peers_is_loopback(&a));
	a6.sin6_family = AF_UNIX;
	CU_ASSERT_EQUAL(peers_of_sockaddr((struct sockaddr *)&a6,
	    sizeof(a6), &a), -1);
}

/* The peers suite. */
static const struct unit_test tests[] = {
	{ "parse an address", test_parse_addr },
	{ "check a list", test_check },
	{ "allowed peers", test_allowed },
	{ "loopback peers", test_loopback },
	{ "loopback sockets", test_sockaddr_loopback },
	{ NULL, NULL },
};

const struct unit_suite test_peers_suite = { "peers", NULL, NULL, tests };
