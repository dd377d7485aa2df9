<?php

declare(strict_types=1);

namespace Idemorders;

/**
 * Creates and cancels orders through idemorders, retrying safely: one
 * Idempotency-Key per logical order (or cancel), kept in a KeyStore across retries and requests;
 * exponential backoff with full jitter inside an overall deadline;
 * Retry-After honoured; network errors, 5xx and an undecided key (409
 * REQUEST_IN_PROGRESS, REQUEST_STATUS_UNCONFIRMED) retried; every other
 * 4xx final.
 *
 *     $client = new Client('https://shop.example/orders', [
 *         'headers' => ['Cookie' => session_name() . '=' . session_id()],
 *         'keyStore' => new SessionKeyStore(),
 *     ]);
 *     $key = $client->keyFor($checkoutId);
 *     session_write_close();
 *     $r = $client->createOrder($order, key: $key);
 *
 * When the browser's script can pay the same checkout too, the key is the
 * checkout's own (self::newKey() when the checkout is made, kept in the
 * session with it and rendered into the page for the script): pass it as
 * key: on every path instead of keeping one per path (clients/README.md,
 * "One checkout, one key").  A cancel is the same: the key is made once
 * with the cancel (e.g. with the order page's cancel form, kept in the
 * session) and passed on every path:
 *
 *     $r = $client->cancelOrder('o-42', reason: 'changed my mind', key: $cancelKey);
 *     if ($r->outcome === Result::CANCELLED) ... $r->body['cancelledAt']
 *
 * The caller's own orders, newest first, a page at a time (cursor paging:
 * pass a page's nextCursor as $startingAfter), or all of them:
 *
 *     $page = $client->listOrders(limit: 20);
 *     foreach ($client->allOrders() as $o) ... $o['orderId'], $o['status']
 */
final class Client
{
    /** 4xx statuses after which the key is kept: the order may exist. */
    private const KEEP_KEY_STATUSES = [401, 403, 407];

    private string $url;
    /** @var list<string> */
    private array $headers = [];
    private KeyStore $keyStore;
    private Transport $transport;
    private float $deadline;
    private int $maxAttempts;
    private float $tryTimeout;
    private float $baseDelay;
    private float $maxDelay;
    /** @var ?callable(int): array<string, string> */
    private $attemptHeaders;
    /** @var ?callable(array<string, mixed>): void */
    private $onAttempt;
    /** @var callable(float): void */
    private $sleep;
    /** @var callable(): float */
    private $clock;
    /** @var callable(): float */
    private $random;

    /**
     * $url: the mount's POST URL, e.g. https://shop.example/orders.
     * $options:
     *   auth           [user, password] for HTTP Basic
     *   headers        ['Name' => 'value'] for every attempt
     *   attemptHeaders fn(int $attempt): array, headers added to attempt N (1-based)
     *   keyStore       KeyStore (default: a MemoryKeyStore)
     *   deadline       seconds for all attempts (30)
     *   maxAttempts    attempts at most (6)
     *   tryTimeout     seconds for one attempt (15), never past the deadline
     *   baseDelay      first backoff ceiling in seconds (0.2)
     *   maxDelay       backoff ceiling cap in seconds (5)
     *   onAttempt      fn(array $info) after each attempt: attempt, status,
     *                  code, error, delay (null when it was the last)
     *   transport, sleep, clock, random   replacements, for tests
     *
     * @param array<string, mixed> $options
     */
    public function __construct(string $url, array $options = [])
    {
        $this->url = $url;
        if (isset($options['auth'])) {
            [$user, $password] = $options['auth'];
            $this->headers[] = 'Authorization: Basic ' . base64_encode("$user:$password");
        }
        foreach ($options['headers'] ?? [] as $name => $value) {
            $this->headers[] = "$name: $value";
        }
        $this->attemptHeaders = $options['attemptHeaders'] ?? null;
        $this->onAttempt = $options['onAttempt'] ?? null;
        $this->keyStore = $options['keyStore'] ?? new MemoryKeyStore();
        $this->transport = $options['transport'] ?? new CurlTransport();
        $this->deadline = (float)($options['deadline'] ?? 30.0);
        $this->maxAttempts = (int)($options['maxAttempts'] ?? 6);
        $this->tryTimeout = (float)($options['tryTimeout'] ?? 15.0);
        $this->baseDelay = (float)($options['baseDelay'] ?? 0.2);
        $this->maxDelay = (float)($options['maxDelay'] ?? 5.0);
        $this->sleep = $options['sleep'] ?? static function (float $s): void {
            usleep((int)round($s * 1e6));
        };
        $this->clock = $options['clock'] ?? static fn (): float => microtime(true);
        $this->random = $options['random'] ?? static fn (): float =>
            random_int(0, PHP_INT_MAX - 1) / PHP_INT_MAX;
        if ($this->maxAttempts < 1) {
            throw new \InvalidArgumentException('maxAttempts must be at least 1');
        }
    }

    /** Return the key of logical order $ref: the stored one, or a new one stored. */
    public function keyFor(string $ref): string
    {
        return $this->keyStore->get($ref) ?? $this->keyStore->add($ref, self::newKey());
    }

    /** Forget the key of $ref: the next call for it makes a new order (or cancel). */
    public function forget(string $ref): void
    {
        $this->keyStore->forget($ref);
    }

    /** Return a new random key (a UUID v4). */
    public static function newKey(): string
    {
        $b = random_bytes(16);
        $b[6] = chr((ord($b[6]) & 0x0f) | 0x40);
        $b[8] = chr((ord($b[8]) & 0x3f) | 0x80);
        return vsprintf('%s%s-%s-%s-%s-%s%s%s', str_split(bin2hex($b), 4));
    }

    /**
     * POST $order (an array, sent as JSON, or a JSON string) with one key
     * for all attempts: $key as given, else the key stored for $ref (made
     * and stored when there is none), else a new key for this call only.
     * Never throws for HTTP or network failures: see Result.
     *
     * @param array<string, mixed>|string $order
     */
    public function createOrder(array|string $order, ?string $ref = null, ?string $key = null): Result
    {
        $payload = is_string($order) ? $order : self::json($order);
        return $this->send($this->url, $payload, $ref, $key, Result::CREATED);
    }

    /**
     * Cancel order $orderId (POST {url}/{orderId}/cancel, with
     * {"reason": $reason} when given) under the same rules as a create:
     * one key for all attempts ($key as given, else the key stored for
     * $ref, else a new key for this call only), Retry-After honoured,
     * network errors, 5xx and an undecided key retried.  Outcome
     * CANCELLED on 200 (the order as JSON, status CANCELLED); REJECTED
     * with ORDER_NOT_FOUND, ORDER_ALREADY_CANCELLED (another key
     * cancelled it), ORDER_NOT_CANCELLABLE and the like.  A cancel puts
     * the stock back once however often it is retried with its key; it
     * never refunds a payment.  Throws \InvalidArgumentException for an
     * order id that cannot be one.
     */
    public function cancelOrder(string $orderId, ?string $reason = null, ?string $ref = null,
        ?string $key = null): Result
    {
        if (preg_match('/^[A-Za-z0-9._-]{1,64}$/', $orderId) !== 1) {
            throw new \InvalidArgumentException(
                'orderId must be 1-64 characters of A-Z a-z 0-9 . _ - (such as o-42), got ' .
                json_encode($orderId, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE));
        }
        $payload = $reason === null ? '{}' : self::json(['reason' => $reason]);
        $url = rtrim($this->url, '/') . '/' . $orderId . '/cancel';
        return $this->send($url, $payload, $ref, $key, Result::CANCELLED);
    }

    /**
     * One page of the caller's own orders, newest first (GET {url}):
     * $limit 1-100 (the server's default 20 when null), and at most one
     * cursor, $startingAfter (the orders older than this order id) or
     * $endingBefore (the newer ones).  A read: network errors and 5xx
     * are retried within the deadline, Retry-After honoured.  Never
     * throws for HTTP or network failures: see OrderPage.
     */
    public function listOrders(?int $limit = null, ?string $startingAfter = null,
        ?string $endingBefore = null): OrderPage
    {
        $q = [];
        if ($limit !== null) {
            $q['limit'] = $limit;
        }
        if ($startingAfter !== null) {
            $q['starting_after'] = $startingAfter;
        }
        if ($endingBefore !== null) {
            $q['ending_before'] = $endingBefore;
        }
        $url = $this->url . ($q ? '?' . http_build_query($q, '', '&', PHP_QUERY_RFC3986) : '');
        $deadline = ($this->clock)() + $this->deadline;
        $last = null;
        $attempt = 0;
        for (;;) {
            $left = $deadline - ($this->clock)();
            if ($left <= 0) {
                $last ??= $this->noAnswer('deadline passed before the first attempt');
                break;
            }
            $attempt++;
            try {
                $res = $this->transport->get($url, $this->headers, min($this->tryTimeout, $left));
                $last = $this->decode($res);
            } catch (TransportException $e) {
                $last = $this->noAnswer('network error: ' . $e->getMessage());
            }
            if (($last['status'] !== 0 && ($last['status'] < 500 || $last['status'] > 599))
                || $attempt >= $this->maxAttempts) {
                break;
            }
            $ra = RetryPolicy::parseRetryAfter($last['headers']['retry-after'] ?? null, ($this->clock)());
            $d = $ra ?? RetryPolicy::backoffDelay($attempt, $this->baseDelay, $this->maxDelay, $this->random);
            if (($this->clock)() + $d >= $deadline) {
                break;
            }
            ($this->sleep)($d);
        }
        return new OrderPage($last['status'], $last['code'], $last['body'], $last['text'],
            $last['headers'], $attempt, $last['error'], $startingAfter, $endingBefore);
    }

    /**
     * Every order of the caller, newest first, page by page ($limit a
     * page), from $startingAfter when given.  Throws \RuntimeException
     * when a page cannot be read.
     *
     * @return \Generator<int, array<string, mixed>>
     */
    public function allOrders(int $limit = 100, ?string $startingAfter = null): \Generator
    {
        for (;;) {
            $page = $this->listOrders($limit, $startingAfter);
            if (!$page->ok) {
                throw new \RuntimeException('listing orders failed: ' . ($page->code ?? $page->error ?? "HTTP $page->status"));
            }
            yield from $page->orders;
            if ($page->nextCursor === null) {
                return;
            }
            $startingAfter = $page->nextCursor;
        }
    }

    /**
     * @return array{status: int, headers: array<string, string>, text: string,
     *     body: ?array<string, mixed>, code: ?string, error: ?string}
     */
    private function decode(HttpResponse $res): array
    {
        $body = null;
        if ($res->body !== '') {
            $decoded = json_decode($res->body, true);
            $body = is_array($decoded) ? $decoded : null;
        }
        $code = isset($body['code']) && is_string($body['code']) ? $body['code'] : null;
        return ['status' => $res->status, 'headers' => $res->headers, 'text' => $res->body,
            'body' => $body, 'code' => $code, 'error' => null];
    }

    /** @param array<string, mixed> $value */
    private static function json(array $value): string
    {
        return json_encode($value, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
    }

    /*
     * POST $payload to $url with one key for every attempt, retrying what
     * may be retried; $done is the outcome of a 2xx.
     */
    private function send(string $url, string $payload, ?string $ref, ?string $key, string $done): Result
    {
        $givenKey = $key;
        if ($key === null) {
            $key = $ref !== null ? $this->keyFor($ref) : self::newKey();
        }
        $deadline = ($this->clock)() + $this->deadline;
        $last = null;
        $outcome = Result::UNKNOWN;
        $attempt = 0;

        for (;;) {
            $remaining = $deadline - ($this->clock)();
            if ($remaining <= 0) {
                $last ??= $this->noAnswer('deadline passed before the first attempt');
                break;
            }
            $attempt++;
            $last = $this->attempt($url, $payload, $key, $attempt, min($this->tryTimeout, $remaining));
            $verdict = $last['status'] === 0 ? RetryPolicy::RETRY :
                RetryPolicy::classify($last['status'], $last['code'],
                    RetryPolicy::parseShouldRetry($last['headers']['should-retry'] ?? null));
            $delay = null;
            if ($verdict === RetryPolicy::RETRY && $attempt < $this->maxAttempts) {
                $ra = RetryPolicy::parseRetryAfter($last['headers']['retry-after'] ?? null, ($this->clock)());
                $d = $ra ?? RetryPolicy::backoffDelay($attempt, $this->baseDelay, $this->maxDelay, $this->random);
                // No attempt starts at or past the deadline.
                if (($this->clock)() + $d < $deadline) {
                    $delay = $d;
                } else {
                    $last['error'] ??= sprintf('next attempt would start past the deadline (wait %.3f s)', $d);
                }
            }
            if ($this->onAttempt !== null) {
                ($this->onAttempt)(['attempt' => $attempt, 'status' => $last['status'],
                    'code' => $last['code'], 'error' => $last['error'], 'delay' => $delay]);
            }
            if ($verdict === RetryPolicy::SUCCESS) {
                $outcome = $done;
                break;
            }
            if ($verdict === RetryPolicy::FINAL) {
                $outcome = Result::REJECTED;
                break;
            }
            if ($delay === null) {
                break;
            }
            ($this->sleep)($delay);
        }
        if ($ref !== null && $givenKey === null && $this->forgetsKey($outcome, $last)) {
            $this->keyStore->forget($ref);
        }
        $replayed = strtolower(trim($last['headers']['idempotent-replayed'] ?? '')) === 'true';
        return new Result($outcome, $last['status'], $last['code'], $replayed, $last['body'],
            $last['text'], $last['headers'], $attempt, $key, $last['error']);
    }

    /**
     * One POST; no answer gives status 0 and the error.
     *
     * @return array{status: int, headers: array<string, string>, text: string,
     *     body: ?array<string, mixed>, code: ?string, error: ?string}
     */
    private function attempt(string $url, string $payload, string $key, int $attempt, float $timeout): array
    {
        $headers = $this->headers;
        $headers[] = 'Content-Type: application/json';
        $headers[] = 'Idempotency-Key: ' . $key;
        if ($this->attemptHeaders !== null) {
            foreach (($this->attemptHeaders)($attempt) ?? [] as $name => $value) {
                $headers[] = "$name: $value";
            }
        }
        try {
            $res = $this->transport->post($url, $headers, $payload, $timeout);
        } catch (TransportException $e) {
            return $this->noAnswer('network error: ' . $e->getMessage());
        }
        $body = null;
        if ($res->body !== '') {
            $decoded = json_decode($res->body, true);
            $body = is_array($decoded) ? $decoded : null;
        }
        $code = isset($body['code']) && is_string($body['code']) ? $body['code'] : null;
        return ['status' => $res->status, 'headers' => $res->headers, 'text' => $res->body,
            'body' => $body, 'code' => $code, 'error' => null];
    }

    /** @return array{status: int, headers: array<string, string>, text: string, body: null, code: null, error: string} */
    private function noAnswer(string $why): array
    {
        return ['status' => 0, 'headers' => [], 'text' => '', 'body' => null, 'code' => null, 'error' => $why];
    }

    /*
     * Keep the key while the order may exist (created, unknown,
     * authentication trouble, key used for another body); forget it after
     * any other final answer, so that a changed cart gets a new key.
     *
     * @param array<string, mixed> $last
     */
    private function forgetsKey(string $outcome, array $last): bool
    {
        if ($outcome !== Result::REJECTED) {
            return false;
        }
        if (in_array($last['status'], self::KEEP_KEY_STATUSES, true)) {
            return false;
        }
        return $last['code'] !== 'IDEMPOTENCY_KEY_REUSED';
    }
}
