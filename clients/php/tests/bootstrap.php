<?php

// Load the client without composer: the PSR-4 map of composer.json,
// src/ for Idemorders\, tests/ for Idemorders\Tests\.

declare(strict_types=1);

spl_autoload_register(static function (string $class): void {
    $map = [
        'Idemorders\\Tests\\' => __DIR__ . '/',
        'Idemorders\\' => dirname(__DIR__) . '/src/',
    ];
    foreach ($map as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) {
                require $file;
            }
            return;
        }
    }
});

if (!extension_loaded('curl')) {
    fwrite(STDERR, "the PHP client needs ext-curl (Debian: php-curl)\n");
    exit(1);
}
