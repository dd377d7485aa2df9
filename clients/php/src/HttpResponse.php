<?php

declare(strict_types=1);

namespace Idemorders;

/** One HTTP answer: status, headers (names lower-cased) and body. */
final class HttpResponse
{
    /** @param array<string, string> $headers */
    public function __construct(
        public readonly int $status,
        public readonly array $headers,
        public readonly string $body,
    ) {
    }

    /** Return header $name (any case), or null. */
    public function header(string $name): ?string
    {
        return $this->headers[strtolower($name)] ?? null;
    }
}
