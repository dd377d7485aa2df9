<?php

declare(strict_types=1);

namespace Idemorders;

/**
 * The Transport of ext-curl.  One handle is kept, so that retries reuse
 * the connection when the server keeps it open.
 */
final class CurlTransport implements Transport
{
    private ?\CurlHandle $handle = null;

    /** @param array<int, mixed> $curlOptions extra CURLOPT_* (CA file, proxy...) */
    public function __construct(private readonly array $curlOptions = [])
    {
    }

    public function post(string $url, array $headers, string $body, float $timeout): HttpResponse
    {
        return $this->exchange($url, $headers, $body, $timeout);
    }

    public function get(string $url, array $headers, float $timeout): HttpResponse
    {
        return $this->exchange($url, $headers, null, $timeout);
    }

    /** One request: a POST of $body, or a GET when $body is null. */
    private function exchange(string $url, array $headers, ?string $body, float $timeout): HttpResponse
    {
        if ($this->handle === null) {
            $this->handle = curl_init();
        } else {
            curl_reset($this->handle);
        }
        $h = $this->handle;
        $got = [];
        $ms = max(1, (int)ceil($timeout * 1000));
        $options = [
            CURLOPT_URL => $url,
            // No "Expect: 100-continue" round trip.
            CURLOPT_HTTPHEADER => array_merge($headers, ['Expect:']),
            CURLOPT_RETURNTRANSFER => true,
            CURLOPT_FOLLOWLOCATION => false,
            CURLOPT_TIMEOUT_MS => $ms,
            CURLOPT_CONNECTTIMEOUT_MS => $ms,
            CURLOPT_NOSIGNAL => true,
            CURLOPT_HEADERFUNCTION => static function ($ch, string $line) use (&$got): int {
                $t = rtrim($line, "\r\n");
                $i = strpos($t, ':');
                if (str_starts_with($t, 'HTTP/')) {
                    $got = [];     // a new header block (after 1xx)
                } elseif ($i !== false) {
                    $name = strtolower(trim(substr($t, 0, $i)));
                    $got[$name] ??= trim(substr($t, $i + 1));
                }
                return strlen($line);
            },
        ];
        if ($body !== null) {
            $options[CURLOPT_POST] = true;
            $options[CURLOPT_POSTFIELDS] = $body;
        } else {
            $options[CURLOPT_HTTPGET] = true;
        }
        curl_setopt_array($h, $this->curlOptions + $options);
        $out = curl_exec($h);
        if ($out === false) {
            $err = curl_error($h);
            $no = curl_errno($h);
            // A broken connection is not kept for the next try.
            curl_close($h);
            $this->handle = null;
            throw new TransportException("curl error $no: $err", $no);
        }
        $status = (int)curl_getinfo($h, CURLINFO_RESPONSE_CODE);
        return new HttpResponse($status, $got, (string)$out);
    }
}
