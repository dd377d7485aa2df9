<?php

declare(strict_types=1);

namespace Idemorders\Tests;

use Idemorders\HttpResponse;
use Idemorders\Transport;
use Idemorders\TransportException;

/**
 * A Transport that plays a script, one entry per request (the last one
 * repeats): an HttpResponse, a TransportException to throw, or a callable
 * returning either.  It records every request.
 */
final class ScriptedTransport implements Transport
{
    /** @var list<array{url: string, headers: list<string>, body: string, timeout: float, method: string}> */
    public array $requests = [];

    /** @param list<HttpResponse|TransportException|callable> $script */
    public function __construct(private array $script)
    {
    }

    public function get(string $url, array $headers, float $timeout): HttpResponse
    {
        return $this->post($url, $headers, '', $timeout, 'GET');
    }

    public function post(string $url, array $headers, string $body, float $timeout,
        string $method = 'POST'): HttpResponse
    {
        $this->requests[] = ['url' => $url, 'headers' => $headers, 'body' => $body, 'timeout' => $timeout,
            'method' => $method];
        $next = $this->script[min(count($this->requests), count($this->script)) - 1];
        if (is_callable($next)) {
            $next = $next();
        }
        if ($next instanceof TransportException) {
            throw $next;
        }
        return $next;
    }

    /** Return header $name of request $i (0-based), or null. */
    public function header(int $i, string $name): ?string
    {
        foreach ($this->requests[$i]['headers'] as $line) {
            [$n, $v] = explode(':', $line, 2);
            if (strcasecmp($n, $name) === 0) {
                return trim($v);
            }
        }
        return null;
    }

    public static function problem(int $status, string $code, array $headers = []): HttpResponse
    {
        return new HttpResponse($status, array_change_key_case($headers + [
            'content-type' => 'application/problem+json'], CASE_LOWER),
            json_encode(['status' => $status, 'code' => $code]));
    }

    public static function created(string $orderId, bool $replayed = false): HttpResponse
    {
        $h = ['content-type' => 'application/json', 'location' => "/orders/$orderId"];
        if ($replayed) {
            $h['idempotent-replayed'] = 'true';
        }
        return new HttpResponse(201, $h, json_encode(['orderId' => $orderId, 'status' => 'CREATED']));
    }
}
