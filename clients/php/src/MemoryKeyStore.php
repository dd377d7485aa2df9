<?php

declare(strict_types=1);

namespace Idemorders;

/** Keys kept for the life of this object only (scripts, tests). */
final class MemoryKeyStore implements KeyStore
{
    /** @var array<string, string> */
    private array $keys = [];

    public function get(string $ref): ?string
    {
        return $this->keys[$ref] ?? null;
    }

    public function add(string $ref, string $key): string
    {
        $this->keys[$ref] ??= $key;
        return $this->keys[$ref];
    }

    public function forget(string $ref): void
    {
        unset($this->keys[$ref]);
    }
}
