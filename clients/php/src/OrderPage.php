<?php

declare(strict_types=1);

namespace Idemorders;

/**
 * What listOrders() read: one page of the caller's own orders, newest
 * first.
 *
 * ok: a 200 with its data.  $orders: each as GET {url}/{orderId} shows
 * it.  $hasMore: more orders lie beyond the page in the direction it was
 * read (older ones; newer ones when read with endingBefore).
 * $nextCursor: the startingAfter of the next (older) page, null when
 * there is none; $prevCursor: the endingBefore of the previous (newer)
 * page, or null.  A refusal (400 VALIDATION_FAILED naming the parameter,
 * 401) is ok false with its $code; no answer at all is status 0 with
 * $error.
 */
final class OrderPage
{
    public readonly bool $ok;
    /** @var list<array<string, mixed>> */
    public readonly array $orders;
    public readonly bool $hasMore;
    public readonly ?string $nextCursor;
    public readonly ?string $prevCursor;

    /**
     * @param array<string, mixed>|null $body the JSON body, decoded
     * @param array<string, string> $headers the last answer's headers, names lower-cased
     */
    public function __construct(
        public readonly int $status,
        public readonly ?string $code,
        public readonly ?array $body,
        public readonly string $text,
        public readonly array $headers,
        public readonly int $attempts,
        ?string $error,
        ?string $startingAfter,
        ?string $endingBefore,
    ) {
        $this->ok = $status === 200 && isset($body['data']) && is_array($body['data']);
        $this->orders = $this->ok ? array_values($body['data']) : [];
        $this->hasMore = $this->ok && ($body['has_more'] ?? false) === true;
        $n = count($this->orders);
        $older = $n > 0 && ($endingBefore !== null || $this->hasMore);
        $newer = $n > 0 && ($endingBefore !== null ? $this->hasMore : $startingAfter !== null);
        $this->nextCursor = $older ? (string)$this->orders[$n - 1]['orderId'] : null;
        $this->prevCursor = $newer ? (string)$this->orders[0]['orderId'] : null;
        $this->error = $this->ok ? null : ($error ?? ($status !== 0 ? "HTTP $status" : null));
    }

    public readonly ?string $error;
}
