<?php

// The shop's JSON Web Tokens (RFC 7519), RS256 only: made by
// public/token.php for the signed-in customer, checked by bearer.php (the
// lighttpd token authorizer; Apache checks them with mod_auth_openidc).

declare(strict_types=1);

function jwt_b64url_encode(string $bytes): string
{
    return rtrim(strtr(base64_encode($bytes), '+/', '-_'), '=');
}

/** The bytes of base64url text, or null when it is not base64url. */
function jwt_b64url_decode(string $text): ?string
{
    if (preg_match('/\A[A-Za-z0-9_-]*\z/', $text) !== 1 || strlen($text) % 4 === 1) {
        return null;
    }
    $bytes = base64_decode(strtr($text, '-_', '+/'), true);
    return $bytes === false ? null : $bytes;
}

/**
 * A token for $sub, signed with the PEM private key in $key_file.
 *
 * @param array<string, mixed> $claims more claims (iss, aud, ...)
 */
function jwt_sign(array $claims, string $key_file, string $kid): string
{
    $key = openssl_pkey_get_private('file://' . $key_file);
    if ($key === false) {
        throw new RuntimeException("cannot read the signing key $key_file");
    }
    $head = jwt_b64url_encode(json_encode(['alg' => 'RS256', 'typ' => 'JWT',
        'kid' => $kid], JSON_UNESCAPED_SLASHES));
    $body = jwt_b64url_encode(json_encode($claims, JSON_UNESCAPED_SLASHES));
    if (!openssl_sign("$head.$body", $sig, $key, OPENSSL_ALGO_SHA256)) {
        throw new RuntimeException('openssl_sign failed');
    }
    return "$head.$body." . jwt_b64url_encode($sig);
}

/**
 * The claims of $token when it is an RS256 JWT signed by the key in
 * $pub_file, not expired (and not before its nbf), issued by $iss for
 * $aud; otherwise a string saying why not.  $leeway: seconds of clock
 * skew allowed on exp and nbf.
 *
 * @return array<string, mixed>|string
 */
function jwt_verify(string $token, string $pub_file, string $iss, string $aud,
    int $leeway = 0): array|string
{
    if (strlen($token) > 8192) {
        return 'token too long';
    }
    $parts = explode('.', $token);
    if (count($parts) !== 3) {
        return 'not a signed JWT';
    }
    [$h64, $b64, $s64] = $parts;
    $head = json_decode((string)jwt_b64url_decode($h64), true);
    if (!is_array($head) || ($head['alg'] ?? null) !== 'RS256') {
        return 'the token is not RS256';   // "none", HS256 with the public key...
    }
    if (isset($head['crit'])) {
        return 'unknown critical header';
    }
    $sig = jwt_b64url_decode($s64);
    $key = openssl_pkey_get_public('file://' . $pub_file);
    if ($key === false) {
        throw new RuntimeException("cannot read the public key $pub_file");
    }
    if ($sig === null || $sig === ''
        || openssl_verify("$h64.$b64", $sig, $key, OPENSSL_ALGO_SHA256) !== 1) {
        return 'bad signature';
    }
    $claims = json_decode((string)jwt_b64url_decode($b64), true);
    if (!is_array($claims)) {
        return 'claims are not a JSON object';
    }
    $now = time();
    if (!is_int($claims['exp'] ?? null) || $claims['exp'] + $leeway <= $now) {
        return 'the token has expired';
    }
    if (isset($claims['nbf']) && (!is_int($claims['nbf']) || $claims['nbf'] - $leeway > $now)) {
        return 'the token is not valid yet';
    }
    if (($claims['iss'] ?? null) !== $iss) {
        return 'another issuer';
    }
    $auds = $claims['aud'] ?? null;
    if (!in_array($aud, is_array($auds) ? $auds : [$auds], true)) {
        return 'another audience';
    }
    return $claims;
}
