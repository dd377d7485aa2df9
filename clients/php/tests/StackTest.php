<?php

declare(strict_types=1);

namespace Idemorders\Tests;

use Idemorders\Client;
use Idemorders\CurlTransport;
use Idemorders\FileKeyStore;
use Idemorders\MemoryKeyStore;
use Idemorders\KeyStore;
use Idemorders\Result;
use PHPUnit\Framework\TestCase;

/**
 * The client against a real idemorders stack built with fault injection,
 * through lighttpd and Apache, judged by the rows left in the database
 * and by the requests the responder logged.  Needs LIGHTTPD_URL,
 * APACHE_URL, DEV (tools/dev) and LOGDIR, as tests/clients/80-client-php.sh
 * exports them; without them the tests are skipped (and that script
 * counts them failed).
 */
final class StackTest extends TestCase
{
    private static int $serial = 0;
    private CountingTransport $transport;
    /** @var list<float> */
    private array $sleeps = [];

    protected function setUp(): void
    {
        foreach (['LIGHTTPD_URL', 'APACHE_URL', 'DEV', 'LOGDIR'] as $v) {
            if ((string)getenv($v) === '') {
                $this->markTestSkipped("no test stack ($v is not set)");
            }
        }
    }

    /** @return iterable<string, array{string}> */
    public static function servers(): iterable
    {
        yield 'lighttpd' => ['LIGHTTPD_URL'];
        yield 'apache' => ['APACHE_URL'];
    }

    /** Return tab-separated rows from the stack's database. */
    private static function sql(string $stmt): string
    {
        $out = [];
        $rc = 0;
        exec(escapeshellarg((string)getenv('DEV')) . ' sql ' . escapeshellarg($stmt) . ' 2>&1', $out, $rc);
        if ($rc !== 0) {
            throw new \RuntimeException("tools/dev sql failed: " . implode("\n", $out));
        }
        return trim(implode("\n", $out));
    }

    private static function q(string $s): string
    {
        return "'" . str_replace("'", "''", $s) . "'";
    }

    /** Return a fresh KRW SKU with $available units at 1000 each. */
    private static function newSku(string $prefix, int $available): string
    {
        $sku = substr(sprintf('%s-%s-%d-%d', $prefix, base_convert((string)time(), 10, 36), getmypid(), ++self::$serial), 0, 64);
        self::sql("INSERT INTO stock (sku, currency, unit_price, available) VALUES (" . self::q($sku) . ", 'KRW', 1000, $available)");
        return $sku;
    }

    /** @return array<string, mixed> */
    private static function order(string $sku, int $qty): array
    {
        return ['currency' => 'KRW', 'items' => [['sku' => $sku, 'qty' => $qty]], 'amount' => $qty * 1000];
    }

    /** Assert exactly one order for alice's $key, $orderId, SUCCEEDED in the ledger, stock $stock. */
    private function assertOneOrder(string $key, string $sku, string $orderId, int $stock): void
    {
        $k = self::q($key);
        $this->assertSame($orderId, self::sql("SELECT CONCAT('o-', id) FROM orders WHERE principal_id = 'alice' AND idempotency_key = $k ORDER BY id"), 'exactly one order, the one returned');
        $this->assertSame("SUCCEEDED\t$orderId", self::sql("SELECT status, COALESCE(resource_id, 'NULL') FROM idempotency_records WHERE principal_id = 'alice' AND operation = 'create-order' AND idem_key = $k"), 'one ledger row, SUCCEEDED');
        $this->assertSame((string)$stock, self::sql('SELECT available FROM stock WHERE sku = ' . self::q($sku)));
    }

    /** Return "available<TAB>restocked" of $sku. */
    private static function stockRow(string $sku): string
    {
        return self::sql('SELECT available, restocked FROM stock WHERE sku = ' . self::q($sku));
    }

    /** Assert one SUCCEEDED cancel ledger row for alice's $key on $orderId, the order CANCELLED with $key. */
    private function assertOneCancel(string $key, string $orderId): void
    {
        $k = self::q($key);
        $this->assertSame("1\tSUCCEEDED\t200\t$orderId", self::sql("SELECT COUNT(*), MIN(status), MIN(response_status), MIN(resource_id) FROM idempotency_records WHERE principal_id = 'alice' AND operation = 'cancel-order' AND idem_key = $k"), 'one cancel ledger row, SUCCEEDED');
        $this->assertSame("CANCELLED\t$key", self::sql('SELECT status, cancel_key FROM orders WHERE id = ' . (int)substr($orderId, 2)));
    }

    /** Return how many POSTs for $key the responder logged. */
    private static function loggedPosts(string $key): int
    {
        $n = 0;
        foreach (@file(getenv('LOGDIR') . '/idemorders.log') ?: [] as $line) {
            if (str_contains($line, ' POST /orders ') && str_contains($line, " key=$key attempts=")) {
                $n++;
            }
        }
        return $n;
    }

    /** Return a client on $url whose first attempt carries $fault. */
    private function client(string $url, ?string $fault, ?KeyStore $store = null, array $options = []): Client
    {
        $this->transport = new CountingTransport(new CurlTransport());
        $this->sleeps = [];
        return new Client("$url/orders", $options + [
            'auth' => ['alice', 'alice-secret'],
            'attemptHeaders' => fn (int $n) => $n === 1 && $fault !== null ? ['X-Idemorders-Fault' => $fault] : [],
            'keyStore' => $store ?? new MemoryKeyStore(),
            'transport' => $this->transport,
            'deadline' => 60.0,
            'tryTimeout' => 30.0,
            'baseDelay' => 0.1,
            'sleep' => function (float $s): void {
                $this->sleeps[] = $s;
                usleep((int)round($s * 1e6));
            },
        ]);
    }

    /** Return a port of 127.0.0.1 where nothing listens: one just opened and closed. */
    private static function closedPort(): int
    {
        $srv = stream_socket_server('tcp://127.0.0.1:0');
        if ($srv === false) {
            throw new \RuntimeException('cannot open a local port');
        }
        $name = (string)stream_socket_get_name($srv, false);
        fclose($srv);
        return (int)substr($name, strrpos($name, ':') + 1);
    }

    /** Wait until $url answers health again (after a worker crash). */
    private static function healthy(string $url): void
    {
        for ($i = 0; $i < 100; $i++) {
            $ch = curl_init("$url/orders/_health");
            curl_setopt_array($ch, [CURLOPT_RETURNTRANSFER => true, CURLOPT_TIMEOUT => 5]);
            curl_exec($ch);
            $st = curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
            curl_close($ch);
            if ($st === 200) {
                return;
            }
            usleep(200000);
        }
    }

    /** @return iterable<string, array{string, string}> */
    public static function lostAnswers(): iterable
    {
        foreach (self::servers() as $name => [$var]) {
            yield "$name drop after commit" => [$var, 'after_commit=drop'];
            yield "$name crash after commit" => [$var, 'after_commit=crash'];
        }
    }

    /** @dataProvider lostAnswers */
    public function testLostAnswerEndsInOneOrderReplayed(string $var, string $fault): void
    {
        $url = (string)getenv($var);
        $sku = self::newSku('PHP-lost', 50);
        $dir = sys_get_temp_dir() . '/idemorders-php-keys-' . getmypid();
        $store = new FileKeyStore($dir);
        $r = $this->client($url, $fault, $store)->createOrder(self::order($sku, 2), ref: "lost-$sku");
        $this->assertSame(Result::CREATED, $r->outcome, $r->text);
        $this->assertSame(201, $r->status);
        $this->assertTrue($r->replayed, 'the recovered answer is a replay');
        $this->assertGreaterThanOrEqual(2, $r->attempts);
        $this->assertSame($r->attempts, $this->transport->requests);
        $this->assertSame($r->key, $store->get("lost-$sku"), 'the key stays stored for the order');
        $this->assertOneOrder($r->key, $sku, (string)$r->orderId, 48);
        $store->forget("lost-$sku");
        @rmdir($dir);
        self::healthy($url);
    }

    /** @dataProvider servers */
    public function testCrashBeforeCommitTheRetryCreatesOneOrder(string $var): void
    {
        $url = (string)getenv($var);
        $sku = self::newSku('PHP-crash', 50);
        $r = $this->client($url, 'before_commit=crash')->createOrder(self::order($sku, 3));
        $this->assertSame(Result::CREATED, $r->outcome, $r->text);
        $this->assertFalse($r->replayed, 'nothing was committed before');
        $this->assertGreaterThanOrEqual(2, $r->attempts);
        $this->assertOneOrder($r->key, $sku, (string)$r->orderId, 47);
        self::healthy($url);
    }

    /** @dataProvider servers */
    public function testKeyReusedIsNotRetried(string $var): void
    {
        $url = (string)getenv($var);
        $sku = self::newSku('PHP-reuse', 50);
        $key = "php-reuse-$sku";
        $a = $this->client($url, null)->createOrder(self::order($sku, 2), key: $key);
        $this->assertSame(Result::CREATED, $a->outcome, $a->text);
        $b = $this->client($url, null)->createOrder(self::order($sku, 3), key: $key);
        $this->assertSame(Result::REJECTED, $b->outcome);
        $this->assertSame(409, $b->status);
        $this->assertSame('IDEMPOTENCY_KEY_REUSED', $b->code);
        $this->assertSame(1, $b->attempts);
        $this->assertSame(1, $this->transport->requests, 'one request sent');
        $this->assertSame([], $this->sleeps);
        $this->assertSame(2, self::loggedPosts($key), 'the responder answered two requests for the key');
        $this->assertOneOrder($key, $sku, (string)$a->orderId, 48);
    }

    /** @dataProvider servers */
    public function testServiceUnavailableIsRetriedAfterRetryAfter(string $var): void
    {
        $url = (string)getenv($var);
        $sku = self::newSku('PHP-503', 50);
        $r = $this->client($url, 'after_ledger_insert=transient')->createOrder(self::order($sku, 1));
        $this->assertSame(Result::CREATED, $r->outcome, $r->text);
        $this->assertFalse($r->replayed);
        $this->assertSame(2, $r->attempts);
        $this->assertSame([1.0], $this->sleeps, 'waited Retry-After: 1');
        $gap = $this->transport->starts[1] - $this->transport->ends[0];
        $this->assertGreaterThanOrEqual(0.99, $gap, 'the second attempt came after Retry-After');
        $this->assertOneOrder($r->key, $sku, (string)$r->orderId, 49);
    }

    /** @dataProvider servers */
    public function testUnconfirmedIsRetriedAndGetsTheReplay(string $var): void
    {
        $url = (string)getenv($var);
        $sku = self::newSku('PHP-unconf', 50);
        $key = "php-unconf-$sku";
        $a = $this->client($url, null)->createOrder(self::order($sku, 2), key: $key);
        $this->assertSame(Result::CREATED, $a->outcome, $a->text);
        $r = $this->client($url, 'conflict_read=null')->createOrder(self::order($sku, 2), key: $key);
        $this->assertSame(Result::CREATED, $r->outcome);
        $this->assertTrue($r->replayed);
        $this->assertSame($a->orderId, $r->orderId);
        $this->assertSame(2, $r->attempts);
        $this->assertSame([1.0], $this->sleeps);
        $this->assertOneOrder($key, $sku, (string)$a->orderId, 48);
    }

    public function testNetworkErrorsAreRetriedAndTheStoredKeyThenCreatesTheOrder(): void
    {
        $sku = self::newSku('PHP-net', 50);
        $ref = "net-$sku";
        $store = new MemoryKeyStore();
        // Nothing listens there: connection refused.
        $a = $this->client('http://127.0.0.1:' . self::closedPort(), null, $store, ['deadline' => 3.0])
            ->createOrder(self::order($sku, 1), ref: $ref);
        $this->assertSame(Result::UNKNOWN, $a->outcome);
        $this->assertSame(0, $a->status);
        $this->assertGreaterThanOrEqual(2, $a->attempts);
        $this->assertSame($a->attempts, $this->transport->requests);
        $this->assertSame($a->key, $store->get($ref), 'key kept');
        $b = $this->client((string)getenv('LIGHTTPD_URL'), null, $store)->createOrder(self::order($sku, 1), ref: $ref);
        $this->assertSame($a->key, $b->key);
        $this->assertSame(Result::CREATED, $b->outcome);
        $this->assertFalse($b->replayed);
        $c = $this->client((string)getenv('APACHE_URL'), null, $store)->createOrder(self::order($sku, 1), ref: $ref);
        $this->assertTrue($c->replayed, 'the same logical order again: replayed');
        $this->assertSame($b->orderId, $c->orderId);
        $this->assertOneOrder($a->key, $sku, (string)$b->orderId, 49);
    }

    /** @dataProvider servers */
    public function testCancelRestocksOnceReplaysAndRefusesAnotherKey(string $var): void
    {
        $url = (string)getenv($var);
        $sku = self::newSku('PHP-cancel', 50);
        $o = $this->client($url, null)->createOrder(self::order($sku, 2));
        $this->assertSame(Result::CREATED, $o->outcome, $o->text);
        $this->assertSame("48\t0", self::stockRow($sku));
        $key = "php-cancel-$sku";
        $a = $this->client($url, null)->cancelOrder((string)$o->orderId, reason: 'changed my mind', key: $key);
        $this->assertSame(Result::CANCELLED, $a->outcome, $a->text);
        $this->assertSame(200, $a->status);
        $this->assertFalse($a->replayed);
        $this->assertSame($o->orderId, $a->orderId);
        $this->assertSame('CANCELLED', $a->body['status'] ?? null);
        $this->assertIsString($a->body['cancelledAt'] ?? null);
        $this->assertSame("50\t2", self::stockRow($sku), 'restocked once');
        $b = $this->client($url, null)->cancelOrder((string)$o->orderId, reason: 'changed my mind', key: $key);
        $this->assertSame(Result::CANCELLED, $b->outcome);
        $this->assertTrue($b->replayed);
        $this->assertSame($a->text, $b->text, 'the replay is byte for byte');
        $c = $this->client($url, null)->cancelOrder((string)$o->orderId);
        $this->assertSame(Result::REJECTED, $c->outcome);
        $this->assertSame(409, $c->status);
        $this->assertSame('ORDER_ALREADY_CANCELLED', $c->code);
        $this->assertSame(1, $c->attempts);
        $this->assertSame([], $this->sleeps);
        $this->assertSame("50\t2", self::stockRow($sku), 'still restocked once');
        $this->assertOneCancel($key, (string)$o->orderId);
    }

    /** @dataProvider lostAnswers */
    public function testLostCancelAnswerRestocksOnceReplayed(string $var, string $fault): void
    {
        $url = (string)getenv($var);
        $sku = self::newSku('PHP-cancel-lost', 50);
        $o = $this->client($url, null)->createOrder(self::order($sku, 3));
        $this->assertSame(Result::CREATED, $o->outcome, $o->text);
        $store = new MemoryKeyStore();
        $r = $this->client($url, $fault, $store)->cancelOrder((string)$o->orderId, ref: "cancel-$sku");
        $this->assertSame(Result::CANCELLED, $r->outcome, $r->text);
        $this->assertSame(200, $r->status);
        $this->assertTrue($r->replayed, 'the recovered answer is a replay');
        $this->assertGreaterThanOrEqual(2, $r->attempts);
        $this->assertSame($r->attempts, $this->transport->requests);
        $this->assertSame($r->key, $store->get("cancel-$sku"), 'one key for every attempt, kept');
        $this->assertSame("50\t3", self::stockRow($sku), 'restocked once');
        $this->assertOneCancel($r->key, (string)$o->orderId);
        self::healthy($url);
    }

    /** @dataProvider servers */
    public function testCancelServiceUnavailableIsRetriedAfterRetryAfter(string $var): void
    {
        $url = (string)getenv($var);
        $sku = self::newSku('PHP-cancel-503', 50);
        $o = $this->client($url, null)->createOrder(self::order($sku, 1));
        $r = $this->client($url, 'after_ledger_insert=transient')->cancelOrder((string)$o->orderId);
        $this->assertSame(Result::CANCELLED, $r->outcome, $r->text);
        $this->assertFalse($r->replayed);
        $this->assertSame(2, $r->attempts);
        $this->assertSame([1.0], $this->sleeps, 'waited Retry-After: 1');
        $this->assertSame("50\t1", self::stockRow($sku));
        $this->assertOneCancel($r->key, (string)$o->orderId);
    }

    /** @dataProvider servers */
    public function testListOrdersPagesThroughTheNewestOrders(string $var): void
    {
        $url = (string)getenv($var);
        $sku = self::newSku('PHP-list', 10);
        $c = $this->client($url, null);
        $made = [];
        for ($i = 0; $i < 3; $i++) {
            $r = $c->createOrder(self::order($sku, 1));
            $this->assertSame(Result::CREATED, $r->outcome, $r->text);
            array_unshift($made, (string)$r->orderId);
        }
        $p1 = $c->listOrders(2);
        $this->assertTrue($p1->ok, $p1->text);
        $this->assertSame(array_slice($made, 0, 2), array_column($p1->orders, 'orderId'));
        $this->assertTrue($p1->hasMore);
        $p2 = $c->listOrders(2, startingAfter: $p1->nextCursor);
        $this->assertSame($made[2], $p2->orders[0]['orderId']);
        $this->assertSame($made[2], $p2->prevCursor);
        $back = $c->listOrders(2, endingBefore: $p2->prevCursor);
        $this->assertSame(array_slice($made, 0, 2), array_column($back->orders, 'orderId'));
        $seen = [];
        foreach ($c->allOrders(2) as $o) {
            $seen[] = $o['orderId'];
            if (count($seen) === 3) {
                break;
            }
        }
        $this->assertSame($made, $seen);
        $bad = $c->listOrders(101);
        $this->assertSame(400, $bad->status);
        $this->assertSame('VALIDATION_FAILED', $bad->code);
    }
}
