<?php

declare(strict_types=1);

namespace Idemorders\Tests;

use Idemorders\Client;
use Idemorders\HttpResponse;
use Idemorders\MemoryKeyStore;
use Idemorders\Result;
use Idemorders\TransportException;
use PHPUnit\Framework\TestCase;

/** The retry loop against a scripted transport on a fake clock. */
final class ClientTest extends TestCase
{
    private const ORDER = ['currency' => 'KRW', 'items' => [['sku' => 'A-10', 'qty' => 1]], 'amount' => 6000];

    private float $t = 1_000_000.0;
    /** @var list<float> */
    private array $sleeps = [];
    private MemoryKeyStore $store;

    /** @param array<string, mixed> $options */
    private function client(ScriptedTransport $tr, array $options = []): Client
    {
        $this->store = new MemoryKeyStore();
        return new Client('http://shop.invalid/orders', $options + [
            'transport' => $tr,
            'keyStore' => $this->store,
            'clock' => fn (): float => $this->t,
            'sleep' => function (float $s): void {
                $this->sleeps[] = $s;
                $this->t += $s;
            },
            'random' => fn (): float => 0.5,
        ]);
    }

    /** @return iterable<string, array{callable}> */
    public static function retried(): iterable
    {
        yield '500' => [fn () => ScriptedTransport::problem(500, 'UNKNOWN_IDEMPOTENCY_STATE')];
        yield '502 from a gateway' => [fn () => new HttpResponse(502, ['content-type' => 'text/html'], '<html/>')];
        yield '503' => [fn () => ScriptedTransport::problem(503, 'RETRY_LIMIT_REACHED')];
        yield '504' => [fn () => new HttpResponse(504, [], '')];
        yield '409 REQUEST_IN_PROGRESS' => [fn () => ScriptedTransport::problem(409, 'REQUEST_IN_PROGRESS')];
        yield '409 REQUEST_STATUS_UNCONFIRMED' => [fn () => ScriptedTransport::problem(409, 'REQUEST_STATUS_UNCONFIRMED')];
        yield 'a network error' => [fn () => new TransportException('curl error 7: Connection refused')];
    }

    /** @dataProvider retried */
    public function testRetriedThenTheReplayWithOneKey(callable $failure): void
    {
        $tr = new ScriptedTransport([$failure, $failure, ScriptedTransport::created('o-7', true)]);
        $r = $this->client($tr)->createOrder(self::ORDER, ref: 'cart-1');
        $this->assertSame(Result::CREATED, $r->outcome);
        $this->assertTrue($r->ok);
        $this->assertTrue($r->replayed);
        $this->assertSame('o-7', $r->orderId);
        $this->assertSame(3, $r->attempts);
        $this->assertCount(3, $tr->requests);
        foreach ([0, 1, 2] as $i) {
            $this->assertSame($r->key, $tr->header($i, 'Idempotency-Key'));
            $this->assertSame('application/json', $tr->header($i, 'Content-Type'));
            $this->assertSame(json_encode(self::ORDER), $tr->requests[$i]['body']);
        }
        $this->assertSame($r->key, $this->store->get('cart-1'), 'key kept after success');
    }

    /** @dataProvider retried */
    public function testCancelRetriedWithOneKeyToItsOwnUrl(callable $failure): void
    {
        $cancelled = new HttpResponse(200, ['content-type' => 'application/json', 'idempotent-replayed' => 'true'],
            json_encode(['orderId' => 'o-7', 'status' => 'CANCELLED']));
        $tr = new ScriptedTransport([$failure, $failure, $cancelled]);
        $r = $this->client($tr)->cancelOrder('o-7', reason: 'changed "my" mind', ref: 'cancel-o-7');
        $this->assertSame(Result::CANCELLED, $r->outcome);
        $this->assertTrue($r->ok);
        $this->assertTrue($r->replayed);
        $this->assertSame('o-7', $r->orderId);
        $this->assertSame(3, $r->attempts);
        foreach ([0, 1, 2] as $i) {
            $this->assertSame('http://shop.invalid/orders/o-7/cancel', $tr->requests[$i]['url']);
            $this->assertSame($r->key, $tr->header($i, 'Idempotency-Key'));
            $this->assertSame('application/json', $tr->header($i, 'Content-Type'));
            $this->assertSame('{"reason":"changed \\"my\\" mind"}', $tr->requests[$i]['body']);
        }
        $this->assertSame($r->key, $this->store->get('cancel-o-7'), 'key kept after success');
    }

    public function testCancelWithoutReasonSendsAnEmptyObjectAndHonoursRetryAfter(): void
    {
        $tr = new ScriptedTransport([
            ScriptedTransport::problem(503, 'RETRY_LIMIT_REACHED', ['Retry-After' => '2']),
            new HttpResponse(200, ['content-type' => 'application/json'], '{"orderId":"o-9","status":"CANCELLED"}'),
        ]);
        $r = $this->client($tr)->cancelOrder('o-9', key: 'cancel-key-1');
        $this->assertSame(Result::CANCELLED, $r->outcome);
        $this->assertFalse($r->replayed);
        $this->assertSame([2.0], $this->sleeps);
        $this->assertSame('{}', $tr->requests[1]['body']);
        $this->assertSame('cancel-key-1', $tr->header(0, 'Idempotency-Key'));
        $this->assertSame('cancel-key-1', $tr->header(1, 'Idempotency-Key'));
    }

    public function testCancelAlreadyCancelledIsFinalAndForgetsTheStoredKey(): void
    {
        $tr = new ScriptedTransport([ScriptedTransport::problem(409, 'ORDER_ALREADY_CANCELLED')]);
        $r = $this->client($tr)->cancelOrder('o-3', ref: 'cancel-o-3');
        $this->assertSame(Result::REJECTED, $r->outcome);
        $this->assertFalse($r->ok);
        $this->assertSame('ORDER_ALREADY_CANCELLED', $r->code);
        $this->assertSame(1, $r->attempts);
        $this->assertSame([], $this->sleeps);
        $this->assertNull($this->store->get('cancel-o-3'));
    }

    public function testCancelRefusesAnOrderIdThatCannotBeOne(): void
    {
        $tr = new ScriptedTransport([ScriptedTransport::problem(500, 'X')]);
        $this->expectException(\InvalidArgumentException::class);
        $this->expectExceptionMessage('orderId must be 1-64 characters');
        try {
            $this->client($tr)->cancelOrder('../o-1');
        } finally {
            $this->assertSame([], $tr->requests, 'nothing sent');
        }
    }

    /** @return iterable<string, array{int, string, bool}> */
    public static function final(): iterable
    {
        yield '400' => [400, 'VALIDATION_FAILED', false];
        yield '401' => [401, 'UNAUTHENTICATED', true];
        yield '404' => [404, 'NOT_FOUND', false];
        yield '409 reused' => [409, 'IDEMPOTENCY_KEY_REUSED', true];
        yield '409 out of stock' => [409, 'OUT_OF_STOCK', false];
        yield '410' => [410, 'IDEMPOTENCY_KEY_EXPIRED', false];
        yield '415' => [415, 'UNSUPPORTED_MEDIA_TYPE', false];
        yield '422' => [422, 'AMOUNT_MISMATCH', false];
    }

    /** @dataProvider final */
    public function testNotRetried(int $status, string $code, bool $keyKept): void
    {
        $tr = new ScriptedTransport([ScriptedTransport::problem($status, $code, ['Retry-After' => '1']),
            ScriptedTransport::created('o-1')]);
        $r = $this->client($tr)->createOrder(self::ORDER, ref: 'cart-2');
        $this->assertCount(1, $tr->requests, 'exactly one request');
        $this->assertSame([], $this->sleeps);
        $this->assertSame(Result::REJECTED, $r->outcome);
        $this->assertFalse($r->ok);
        $this->assertSame($status, $r->status);
        $this->assertSame($code, $r->code);
        $this->assertSame($keyKept, $this->store->get('cart-2') !== null);
    }

    public function testRetryAfterSecondsIsWaitedFor(): void
    {
        $tr = new ScriptedTransport([ScriptedTransport::problem(503, 'RETRY_LIMIT_REACHED', ['Retry-After' => '2']),
            ScriptedTransport::created('o-2')]);
        $r = $this->client($tr)->createOrder(self::ORDER);
        $this->assertSame(Result::CREATED, $r->outcome);
        $this->assertFalse($r->replayed);
        $this->assertSame([2.0], $this->sleeps);
    }

    public function testRetryAfterHttpDateIsWaitedForUntilThatDate(): void
    {
        $this->t = (float)strtotime('Tue, 01 Dec 2026 12:00:00 GMT');
        $tr = new ScriptedTransport([
            ScriptedTransport::problem(409, 'REQUEST_IN_PROGRESS', ['Retry-After' => 'Tue, 01 Dec 2026 12:00:04 GMT']),
            ScriptedTransport::created('o-3', true)]);
        $c = $this->client($tr);
        $this->t = (float)strtotime('Tue, 01 Dec 2026 12:00:00 GMT');
        $r = $c->createOrder(self::ORDER);
        $this->assertSame([4.0], $this->sleeps);
        $this->assertTrue($r->replayed);
    }

    public function testRetryAfterPastTheDeadlineEndsTheRetries(): void
    {
        $tr = new ScriptedTransport([ScriptedTransport::problem(503, 'RETRY_LIMIT_REACHED', ['Retry-After' => '60'])]);
        $r = $this->client($tr, ['deadline' => 10.0])->createOrder(self::ORDER, ref: 'cart-4');
        $this->assertCount(1, $tr->requests);
        $this->assertSame([], $this->sleeps);
        $this->assertSame(Result::UNKNOWN, $r->outcome);
        $this->assertSame(503, $r->status);
        $this->assertStringContainsString('past the deadline', (string)$r->error);
        $this->assertSame($r->key, $this->store->get('cart-4'), 'key kept: the outcome is unknown');
    }

    public function testBackoffGrowsUnderItsCeilings(): void
    {
        $tr = new ScriptedTransport([ScriptedTransport::problem(500, 'X')]);
        $r = $this->client($tr, ['maxAttempts' => 5, 'random' => fn () => 0.999,
            'baseDelay' => 0.1, 'maxDelay' => 0.3])->createOrder(self::ORDER);
        $this->assertSame(Result::UNKNOWN, $r->outcome);
        $this->assertSame(5, $r->attempts);
        $this->assertEqualsWithDelta([0.0999, 0.1998, 0.2997, 0.2997], $this->sleeps, 1e-9);
    }

    public function testTheDeadlineBoundsTheAttempts(): void
    {
        $tr = new ScriptedTransport([function () {
            $this->t += 4.0;
            return ScriptedTransport::problem(503, 'X');
        }]);
        $r = $this->client($tr, ['deadline' => 10.0, 'maxAttempts' => 100, 'random' => fn () => 0.0])
            ->createOrder(self::ORDER);
        $this->assertSame(Result::UNKNOWN, $r->outcome);
        $this->assertCount(3, $tr->requests, 'attempts at 0 s, 4 s, 8 s; none at 12 s');
        $this->assertEqualsWithDelta(2.0, $tr->requests[2]['timeout'], 1e-9, 'the last try gets what remains');
    }

    public function testMaxAttemptsBoundsTheAttempts(): void
    {
        $tr = new ScriptedTransport([new TransportException('curl error 7: refused')]);
        $r = $this->client($tr, ['maxAttempts' => 4])->createOrder(self::ORDER);
        $this->assertCount(4, $tr->requests);
        $this->assertSame(0, $r->status);
        $this->assertStringContainsString('network error', (string)$r->error);
    }

    public function testAttemptHeadersOnTheAttemptsTheyName(): void
    {
        $tr = new ScriptedTransport([ScriptedTransport::problem(502, 'X'), ScriptedTransport::created('o-5')]);
        $this->client($tr, [
            'auth' => ['alice', 'alice-secret'],
            'attemptHeaders' => fn (int $n) => $n === 1 ? ['X-Trace' => 'first'] : [],
        ])->createOrder(self::ORDER);
        $this->assertSame('first', $tr->header(0, 'X-Trace'));
        $this->assertNull($tr->header(1, 'X-Trace'));
        $this->assertSame('Basic ' . base64_encode('alice:alice-secret'), $tr->header(1, 'Authorization'));
    }

    public function testOneKeyPerLogicalOrder(): void
    {
        $tr = new ScriptedTransport([new TransportException('refused')]);
        $c = $this->client($tr, ['maxAttempts' => 2]);
        $a = $c->createOrder(self::ORDER, ref: 'cart-9');
        $b = $c->createOrder(self::ORDER, ref: 'cart-9');
        $this->assertSame($a->key, $b->key);
        $this->assertNotSame($a->key, $c->createOrder(self::ORDER, ref: 'cart-10')->key);
        $c->forget('cart-9');
        $this->assertNotSame($a->key, $c->createOrder(self::ORDER, ref: 'cart-9')->key);
        $this->assertMatchesRegularExpression('/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/', $a->key);
        $this->assertCount(8, $tr->requests);
    }

    public function testAGivenKeyIsUsedAsIsAndNeverStored(): void
    {
        $tr = new ScriptedTransport([ScriptedTransport::problem(422, 'AMOUNT_MISMATCH')]);
        $r = $this->client($tr)->createOrder('{"x":1}', ref: 'cart-k', key: 'my-key-1');
        $this->assertSame('my-key-1', $tr->header(0, 'Idempotency-Key'));
        $this->assertSame('{"x":1}', $tr->requests[0]['body']);
        $this->assertSame('my-key-1', $r->key);
        $this->assertNull($this->store->get('cart-k'));
    }

    public function testShouldRetryTrueRetriesAConflictWithTheSameKey(): void
    {
        $tr = new ScriptedTransport([
            ScriptedTransport::problem(409, 'OUT_OF_STOCK', ['Should-Retry' => 'true', 'Retry-After' => '2']),
            ScriptedTransport::created('o-8')]);
        $r = $this->client($tr)->createOrder(self::ORDER, ref: 'cart-sr');
        $this->assertSame(Result::CREATED, $r->outcome);
        $this->assertSame([2.0], $this->sleeps);
        $this->assertSame($tr->header(0, 'Idempotency-Key'), $tr->header(1, 'Idempotency-Key'));
    }

    public function testShouldRetryFalseMakesA500Final(): void
    {
        $tr = new ScriptedTransport([ScriptedTransport::problem(500, 'INTERNAL_ERROR', ['Should-Retry' => 'false'])]);
        $r = $this->client($tr)->cancelOrder('o-5', 'r', key: 'k-sr');
        $this->assertSame(Result::REJECTED, $r->outcome);
        $this->assertCount(1, $tr->requests);
    }

    public function testCancelKeepsItsKeyUntilTheFinalAnswer(): void
    {
        $tr = new ScriptedTransport([
            ScriptedTransport::problem(503, 'SERVICE_UNAVAILABLE', ['Should-Retry' => 'true', 'Retry-After' => '1']),
            ScriptedTransport::problem(409, 'REQUEST_IN_PROGRESS', ['Should-Retry' => 'true']),
            new HttpResponse(200, ['content-type' => 'application/json'], '{"orderId":"o-4","status":"CANCELLED"}')]);
        $r = $this->client($tr)->cancelOrder('o-4', 'changed my mind', ref: 'cancel-o-4');
        $this->assertSame(Result::CANCELLED, $r->outcome);
        $this->assertSame(1.0, $this->sleeps[0]);
        $keys = array_map(fn (int $i) => $tr->header($i, 'Idempotency-Key'), [0, 1, 2]);
        $this->assertCount(1, array_unique($keys));
        $this->assertSame('{"reason":"changed my mind"}', $tr->requests[2]['body']);
    }

    public function testListOrdersReadsAPageAndItsCursors(): void
    {
        $tr = new ScriptedTransport([new HttpResponse(200, ['content-type' => 'application/json'],
            '{"data":[{"orderId":"o-9"},{"orderId":"o-7"}],"has_more":true}')]);
        $p = $this->client($tr)->listOrders(2, startingAfter: 'o-10');
        $this->assertSame('http://shop.invalid/orders?limit=2&starting_after=o-10', $tr->requests[0]['url']);
        $this->assertSame('GET', $tr->requests[0]['method']);
        $this->assertNull($tr->header(0, 'Idempotency-Key'));
        $this->assertTrue($p->ok);
        $this->assertSame(['o-9', 'o-7'], array_column($p->orders, 'orderId'));
        $this->assertTrue($p->hasMore);
        $this->assertSame('o-7', $p->nextCursor);
        $this->assertSame('o-9', $p->prevCursor);
    }

    public function testListOrdersRetriesA503AndNotA400(): void
    {
        $tr = new ScriptedTransport([
            ScriptedTransport::problem(503, 'SERVICE_UNAVAILABLE', ['Retry-After' => '1']),
            new HttpResponse(200, [], '{"data":[],"has_more":false}')]);
        $p = $this->client($tr)->listOrders(endingBefore: 'o-3');
        $this->assertTrue($p->ok);
        $this->assertSame([1.0], $this->sleeps);
        $this->assertNull($p->nextCursor);
        $tr = new ScriptedTransport([ScriptedTransport::problem(400, 'VALIDATION_FAILED')]);
        $p = $this->client($tr)->listOrders(0);
        $this->assertFalse($p->ok);
        $this->assertSame('VALIDATION_FAILED', $p->code);
        $this->assertCount(1, $tr->requests);
    }

    public function testAllOrdersWalksEveryPage(): void
    {
        $tr = new ScriptedTransport([
            new HttpResponse(200, [], '{"data":[{"orderId":"o-6"},{"orderId":"o-5"}],"has_more":true}'),
            new HttpResponse(200, [], '{"data":[{"orderId":"o-3"}],"has_more":false}')]);
        $ids = [];
        foreach ($this->client($tr)->allOrders(2) as $o) {
            $ids[] = $o['orderId'];
        }
        $this->assertSame(['o-6', 'o-5', 'o-3'], $ids);
        $this->assertSame('http://shop.invalid/orders?limit=2&starting_after=o-5', $tr->requests[1]['url']);
    }
}
