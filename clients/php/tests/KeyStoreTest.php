<?php

declare(strict_types=1);

namespace Idemorders\Tests;

use Idemorders\FileKeyStore;
use Idemorders\KeyStore;
use Idemorders\MemoryKeyStore;
use Idemorders\SessionKeyStore;
use PHPUnit\Framework\TestCase;

final class KeyStoreTest extends TestCase
{
    private string $dir;

    protected function setUp(): void
    {
        $this->dir = sys_get_temp_dir() . '/idemorders-keys-' . bin2hex(random_bytes(6));
    }

    protected function tearDown(): void
    {
        foreach (glob($this->dir . '/*') ?: [] as $f) {
            unlink($f);
        }
        @rmdir($this->dir);
        if (session_status() === PHP_SESSION_ACTIVE) {
            session_destroy();
        }
    }

    private function exercise(KeyStore $a, KeyStore $b): void
    {
        $this->assertNull($a->get('cart/1'));
        $this->assertSame('k-1', $a->add('cart/1', 'k-1'));
        $this->assertSame('k-1', $b->get('cart/1'), 'seen by the other store');
        $this->assertSame('k-1', $b->add('cart/1', 'k-2'), 'the first key stays');
        $this->assertSame('k-3', $b->add('cart/2', 'k-3'));
        $a->forget('cart/1');
        $this->assertNull($b->get('cart/1'));
        $this->assertSame('k-3', $a->get('cart/2'));
    }

    public function testMemoryStore(): void
    {
        $s = new MemoryKeyStore();
        $this->exercise($s, $s);
    }

    public function testFileStoreIsSharedThroughItsDirectory(): void
    {
        $this->exercise(new FileKeyStore($this->dir), new FileKeyStore($this->dir));
        $this->assertCount(1, glob($this->dir . '/*.key'), 'one file per stored key, no leftovers');
    }

    public function testFileStoreRacingProcessesAgreeOnOneKey(): void
    {
        mkdir($this->dir, 0700);
        $cmd = sprintf('%s -r %s', escapeshellarg(PHP_BINARY), escapeshellarg(
            'require ' . var_export(__DIR__ . '/bootstrap.php', true) . ';' .
            '$s = new Idemorders\FileKeyStore(' . var_export($this->dir, true) . ');' .
            'echo $s->add("race", bin2hex(random_bytes(8))), "\n";'));
        $procs = [];
        for ($i = 0; $i < 6; $i++) {
            $procs[] = popen($cmd, 'r');
        }
        $keys = [];
        foreach ($procs as $p) {
            $keys[] = trim((string)stream_get_contents($p));
            pclose($p);
        }
        $this->assertMatchesRegularExpression('/^[0-9a-f]{16}$/', $keys[0]);
        $this->assertCount(1, array_unique($keys), 'one key for six racing processes: ' . implode(' ', $keys));
        $this->assertSame($keys[0], (new FileKeyStore($this->dir))->get('race'));
    }

    /**
     * A process of its own: a session starts only before any output.
     *
     * @runInSeparateProcess
     * @preserveGlobalState disabled
     */
    public function testSessionStoreKeepsKeysInTheSession(): void
    {
        session_save_path(sys_get_temp_dir());
        $this->assertTrue(session_start());
        $s = new SessionKeyStore();
        $this->exercise($s, new SessionKeyStore());
        $this->assertSame(['cart/2' => 'k-3'], $_SESSION['idemorders_keys']);
        $id = session_id();
        session_write_close();
        // The next request of the same customer finds the key.
        session_id($id);
        $this->assertTrue(session_start());
        $this->assertSame('k-3', (new SessionKeyStore())->get('cart/2'));
    }

    public function testSessionStoreRefusesToWorkWithoutASession(): void
    {
        $this->expectException(\LogicException::class);
        (new SessionKeyStore())->get('x');
    }
}
