#include "config.h"

#include <string.h>

#include <CUnit/CUnit.h>

#include "conf.h"
#include "relay.h"
#include "unit.h"
#include "webhook.h"

/* The example of the Standard Webhooks reference libraries. */
static void
test_sign(void)
{
	struct webhook_key	 k;
	char			 err[256], sig[WEBHOOK_SIG_MAX];
	const char		*body = "{\"test\": 2432232314}";

	CU_ASSERT_EQUAL(webhook_key_parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La"
	    "LaSw", &k, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(k.len, 24);
	CU_ASSERT_EQUAL(webhook_sign(&k, "msg_p5jXN8AQM9LWM0D4loKWxJek",
	    1614265330, body, strlen(body), sig, sizeof(sig)), 0);
	CU_ASSERT_STRING_EQUAL(sig,
	    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
	/* Another byte of the body, another signature. */
	CU_ASSERT_EQUAL(webhook_sign(&k, "msg_p5jXN8AQM9LWM0D4loKWxJek",
	    1614265330, "{\"test\": 2432232315}", strlen(body), sig,
	    sizeof(sig)), 0);
	CU_ASSERT_STRING_NOT_EQUAL(sig,
	    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

static void
test_key(void)
{
	struct webhook_key	 k;
	char			 err[256];

	/* 16 bytes: too short. */
	CU_ASSERT_EQUAL(webhook_key_parse("whsec_AAAAAAAAAAAAAAAAAAAAAA==", &k,
	    err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "too short"));
	CU_ASSERT_EQUAL(webhook_key_parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	    &k, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "whsec_"));
	CU_ASSERT_EQUAL(webhook_key_parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La"
	    "LaS!", &k, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "not base64"));
	CU_ASSERT_EQUAL(webhook_key_parse("whsec_", &k, err, sizeof(err)), -1);
}

static void
test_body(void)
{
	struct buf	 b;

	buf_init(&b, 1024);
	CU_ASSERT_EQUAL(webhook_body(&b, "order.created",
	    "2026-12-06T18:00:00Z", "{\"orderId\":\"o-1\"}", 17), 0);
	CU_ASSERT_STRING_EQUAL(b.p, "{\"type\":\"order.created\",\"timestamp\":"
	    "\"2026-12-06T18:00:00Z\",\"data\":{\"orderId\":\"o-1\"}}");
	buf_free(&b);
}

static void
test_retry_after(void)
{
	CU_ASSERT_EQUAL(relay_retry_after_ms("3", 0), 3000);
	CU_ASSERT_EQUAL(relay_retry_after_ms(" 120\r\n", 0), 120000);
	CU_ASSERT_EQUAL(relay_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT",
	    1445412470), 10000);
	CU_ASSERT_EQUAL(relay_retry_after_ms("soon", 0), -1);
	CU_ASSERT_EQUAL(relay_retry_after_ms("99999999", 0),
	    24LL * 3600 * 1000);
}

static void
test_backoff(void)
{
	struct conf	 c;
	long long	 d;
	int		 i;

	conf_defaults(&c);
	for (i = 0; i < 50; i++) {
		d = relay_backoff_ms(&c, 1);
		CU_ASSERT(d >= 500 && d <= 1000);
		d = relay_backoff_ms(&c, 4);
		CU_ASSERT(d >= 4000 && d <= 8000);
		d = relay_backoff_ms(&c, 40);
		CU_ASSERT(d >= 1800000 && d <= 3600000);
	}
	conf_clear(&c);
}

static const struct unit_test tests[] = {
	{ "Standard Webhooks signature", test_sign },
	{ "secret: whsec_, base64, at least 24 bytes", test_key },
	{ "the body sent", test_body },
	{ "Retry-After: seconds or a date", test_retry_after },
	{ "backoff doubles, with jitter, up to its cap", test_backoff },
	{ NULL, NULL },
};

const struct unit_suite test_webhook_suite = {
	"webhook", NULL, NULL, tests,
};
