<?php

declare(strict_types=1);

namespace Idemorders;

/** Which answers are retried, and how long to wait before the next try. */
final class RetryPolicy
{
    /** Problem codes of a 409 that mean "not decided yet: retry the key". */
    public const RETRYABLE_CODES = ['REQUEST_IN_PROGRESS', 'REQUEST_STATUS_UNCONFIRMED'];

    public const SUCCESS = 'success';
    public const RETRY = 'retry';
    public const FINAL = 'final';

    /**
     * Classify an answer: 2xx success; else as Should-Retry said
     * ($shouldRetry true or false) when the server sent it; else 5xx and
     * a 409 whose code says the key is not decided yet are retried and
     * every other status is final.
     */
    public static function classify(int $status, ?string $code, ?bool $shouldRetry = null): string
    {
        if ($status >= 200 && $status < 300) {
            return self::SUCCESS;
        }
        // The server's word, when it said it (Should-Retry: true or false).
        if ($shouldRetry !== null) {
            return $shouldRetry ? self::RETRY : self::FINAL;
        }
        if ($status >= 500 && $status < 600) {
            return self::RETRY;
        }
        if ($status === 409 && in_array($code, self::RETRYABLE_CODES, true)) {
            return self::RETRY;
        }
        return self::FINAL;
    }

    /** Return a Should-Retry header value as true, false, or null (absent or neither word). */
    public static function parseShouldRetry(?string $value): ?bool
    {
        $v = strtolower(trim($value ?? ''));
        return $v === 'true' ? true : ($v === 'false' ? false : null);
    }

    /**
     * Return the delay in seconds before retry number $retry (1 for the
     * first retry): full jitter, uniform in [0, min($cap, $base * 2^($retry-1))).
     * $random returns a float in [0, 1).
     */
    public static function backoffDelay(int $retry, float $base, float $cap, callable $random): float
    {
        $ceiling = min($cap, $base * (2 ** max(0, $retry - 1)));
        return $random() * $ceiling;
    }

    /**
     * Return a Retry-After value in seconds from $now: delta-seconds or an
     * HTTP-date (a past date is 0); null when absent or unreadable.
     */
    public static function parseRetryAfter(?string $value, float $now): ?float
    {
        if ($value === null) {
            return null;
        }
        $v = trim($value);
        if ($v === '') {
            return null;
        }
        if (preg_match('/^[0-9]+$/', $v) === 1) {
            return (float)$v;
        }
        // An HTTP-date names its weekday or month.
        if (preg_match('/[A-Za-z]/', $v) !== 1) {
            return null;
        }
        $t = strtotime($v);
        if ($t === false) {
            return null;
        }
        return max(0.0, $t - $now);
    }
}
