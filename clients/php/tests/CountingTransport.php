<?php

declare(strict_types=1);

namespace Idemorders\Tests;

use Idemorders\HttpResponse;
use Idemorders\Transport;

/** Passes requests to a real Transport, counting them and timing each. */
final class CountingTransport implements Transport
{
    public int $requests = 0;
    /** @var list<float> */
    public array $starts = [];
    /** @var list<float> */
    public array $ends = [];

    public function __construct(private readonly Transport $inner)
    {
    }

    public function get(string $url, array $headers, float $timeout): HttpResponse
    {
        $this->requests++;
        return $this->inner->get($url, $headers, $timeout);
    }

    public function post(string $url, array $headers, string $body, float $timeout): HttpResponse
    {
        $this->requests++;
        $this->starts[] = microtime(true);
        try {
            return $this->inner->post($url, $headers, $body, $timeout);
        } finally {
            $this->ends[] = microtime(true);
        }
    }
}
