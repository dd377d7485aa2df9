<?php

declare(strict_types=1);

namespace Idemorders;

/**
 * What createOrder() or cancelOrder() ended with.
 *
 * outcome: CREATED (createOrder, 2xx: the order exists; $replayed tells
 * whether this answer is the stored one of an earlier attempt),
 * CANCELLED (cancelOrder, 2xx: the order is cancelled and its stock put
 * back once; $replayed as for CREATED), REJECTED (a final 4xx:
 * $code says why; retrying the same request cannot change it) or UNKNOWN
 * (the client gave up: deadline or attempts spent on network errors, 5xx
 * or an undecided key; the key is kept, retrying later is safe).
 */
final class Result
{
    public const CREATED = 'created';
    public const REJECTED = 'rejected';
    public const UNKNOWN = 'unknown';
    public const CANCELLED = 'cancelled';

    public readonly bool $ok;
    public readonly ?string $orderId;

    /**
     * @param array<string, mixed>|null $body the JSON body, decoded
     * @param array<string, string> $headers the last answer's headers, names lower-cased
     */
    public function __construct(
        public readonly string $outcome,
        public readonly int $status,
        public readonly ?string $code,
        public readonly bool $replayed,
        public readonly ?array $body,
        public readonly string $text,
        public readonly array $headers,
        public readonly int $attempts,
        public readonly string $key,
        public readonly ?string $error,
    ) {
        $this->ok = $outcome === self::CREATED || $outcome === self::CANCELLED;
        $id = $body['orderId'] ?? null;
        $this->orderId = is_string($id) ? $id : null;
    }
}
