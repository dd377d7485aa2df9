<?php

declare(strict_types=1);

namespace Idemorders;

/**
 * Where the Idempotency-Key of each logical order (one checkout) is kept
 * between retries and between requests.
 */
interface KeyStore
{
    /** Return the key stored for $ref, or null. */
    public function get(string $ref): ?string;

    /**
     * Store $key for $ref unless a key is stored already; return the key
     * that is stored (the earlier one if there was one).
     */
    public function add(string $ref, string $key): string;

    /** Forget the key of $ref. */
    public function forget(string $ref): void;
}
