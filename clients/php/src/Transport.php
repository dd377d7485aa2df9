<?php

declare(strict_types=1);

namespace Idemorders;

/** Sends one HTTP request. */
interface Transport
{
    /**
     * POST $body to $url with $headers ("Name: value" lines), waiting at
     * most $timeout seconds for the whole exchange.
     *
     * @param list<string> $headers
     * @throws TransportException when no HTTP answer arrived
     */
    public function post(string $url, array $headers, string $body, float $timeout): HttpResponse;

    /**
     * GET $url with $headers, waiting at most $timeout seconds.
     *
     * @param list<string> $headers
     * @throws TransportException when no HTTP answer arrived
     */
    public function get(string $url, array $headers, float $timeout): HttpResponse;
}
