<?php

declare(strict_types=1);

namespace Idemorders;

/**
 * Keys kept in the PHP session ($_SESSION[$name][$ref]), so that the
 * customer's next request (a reload, a second click) finds the key of
 * the same checkout.  The session must be started before use.
 */
final class SessionKeyStore implements KeyStore
{
    public function __construct(private readonly string $name = 'idemorders_keys')
    {
    }

    public function get(string $ref): ?string
    {
        $this->needSession();
        $k = $_SESSION[$this->name][$ref] ?? null;
        return is_string($k) ? $k : null;
    }

    public function add(string $ref, string $key): string
    {
        $this->needSession();
        if (!isset($_SESSION[$this->name]) || !is_array($_SESSION[$this->name])) {
            $_SESSION[$this->name] = [];
        }
        $have = $_SESSION[$this->name][$ref] ?? null;
        if (is_string($have)) {
            return $have;
        }
        $_SESSION[$this->name][$ref] = $key;
        return $key;
    }

    public function forget(string $ref): void
    {
        $this->needSession();
        unset($_SESSION[$this->name][$ref]);
    }

    /* Refuse to work without a session: keys would silently not persist. */
    private function needSession(): void
    {
        if (session_status() !== PHP_SESSION_ACTIVE) {
            throw new \LogicException('SessionKeyStore: call session_start() first');
        }
    }
}
