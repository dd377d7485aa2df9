<?php

declare(strict_types=1);

namespace Idemorders\Tests;

use Idemorders\RetryPolicy;
use PHPUnit\Framework\TestCase;

final class RetryPolicyTest extends TestCase
{
    public function testBackoffIsFullJitterUnderACappedExponentialCeiling(): void
    {
        $this->assertSame(0.0, RetryPolicy::backoffDelay(1, 0.2, 5.0, fn () => 0.0));
        $this->assertEqualsWithDelta(0.4, RetryPolicy::backoffDelay(3, 0.2, 5.0, fn () => 0.5), 1e-9);
        $this->assertEqualsWithDelta(2.5, RetryPolicy::backoffDelay(10, 0.2, 5.0, fn () => 0.5), 1e-9);
        for ($i = 0; $i < 200; $i++) {
            $d = RetryPolicy::backoffDelay(4, 0.2, 5.0, fn () => random_int(0, 999999) / 1e6);
            $this->assertGreaterThanOrEqual(0.0, $d);
            $this->assertLessThan(1.6, $d);
        }
    }

    public function testRetryAfterInSecondsOrAsAnHttpDate(): void
    {
        $now = (float)strtotime('Tue, 01 Dec 2026 12:00:00 GMT');
        $this->assertSame(3.0, RetryPolicy::parseRetryAfter('3', $now));
        $this->assertSame(0.0, RetryPolicy::parseRetryAfter(' 0 ', $now));
        $this->assertSame(5.0, RetryPolicy::parseRetryAfter('Tue, 01 Dec 2026 12:00:05 GMT', $now));
        $this->assertSame(0.0, RetryPolicy::parseRetryAfter('Tue, 01 Dec 2026 11:00:00 GMT', $now));
        $this->assertNull(RetryPolicy::parseRetryAfter('soon-ish', $now));
        $this->assertNull(RetryPolicy::parseRetryAfter('-1', $now));
        $this->assertNull(RetryPolicy::parseRetryAfter('1.5', $now));
        $this->assertNull(RetryPolicy::parseRetryAfter(null, $now));
    }

    public function testWhichAnswersAreRetried(): void
    {
        $this->assertSame('success', RetryPolicy::classify(201, null));
        foreach ([500, 502, 503, 504] as $s) {
            $this->assertSame('retry', RetryPolicy::classify($s, null), (string)$s);
        }
        $this->assertSame('retry', RetryPolicy::classify(409, 'REQUEST_IN_PROGRESS'));
        $this->assertSame('retry', RetryPolicy::classify(409, 'REQUEST_STATUS_UNCONFIRMED'));
        foreach ([[409, 'IDEMPOTENCY_KEY_REUSED'], [409, 'OUT_OF_STOCK'], [409, null],
            [410, 'IDEMPOTENCY_KEY_EXPIRED'], [422, 'UNKNOWN_SKU'], [400, 'MALFORMED_JSON'],
            [401, 'UNAUTHENTICATED'], [404, null], [429, null]] as [$s, $c]) {
            $this->assertSame('final', RetryPolicy::classify($s, $c), "$s $c");
        }
    }
}
