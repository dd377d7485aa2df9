<?php

declare(strict_types=1);

namespace Idemorders;

/**
 * Keys kept as one file per logical order in a directory (cron jobs,
 * workers, CLI scripts).  Adding is atomic across processes: the file is
 * written aside and linked into place (created exclusively where hard
 * links are not supported), so two processes adding a key for the same
 * $ref end up using the same key.
 */
final class FileKeyStore implements KeyStore
{
    private string $dir;

    public function __construct(string $dir)
    {
        if (!is_dir($dir) && !@mkdir($dir, 0700, true) && !is_dir($dir)) {
            throw new \RuntimeException("FileKeyStore: cannot create directory $dir");
        }
        $this->dir = rtrim($dir, '/');
    }

    public function get(string $ref): ?string
    {
        $k = @file_get_contents($this->path($ref));
        if ($k === false) {
            return null;
        }
        $k = trim($k);
        return $k === '' ? null : $k;
    }

    public function add(string $ref, string $key): string
    {
        $path = $this->path($ref);
        $tmp = $path . '.' . bin2hex(random_bytes(6)) . '.tmp';
        if (@file_put_contents($tmp, $key . "\n") === false) {
            throw new \RuntimeException("FileKeyStore: cannot write $tmp");
        }
        $linked = @link($tmp, $path);
        @unlink($tmp);
        if ($linked) {
            return $key;
        }
        $have = $this->get($ref);
        if ($have !== null) {
            return $have;
        }
        // A file system without hard links: create the file exclusively.
        $fh = @fopen($path, 'x');
        if ($fh !== false) {
            $ok = fwrite($fh, $key . "\n") !== false;
            fclose($fh);
            if ($ok) {
                return $key;
            }
        }
        // Another process created it and is writing its key.
        for ($i = 0; $i < 50; $i++) {
            $have = $this->get($ref);
            if ($have !== null) {
                return $have;
            }
            usleep(10000);
        }
        throw new \RuntimeException("FileKeyStore: cannot store the key in $path");
    }

    public function forget(string $ref): void
    {
        @unlink($this->path($ref));
    }

    /* The file of $ref: a hash, so that any $ref makes a safe name. */
    private function path(string $ref): string
    {
        return $this->dir . '/' . hash('sha256', $ref) . '.key';
    }
}
