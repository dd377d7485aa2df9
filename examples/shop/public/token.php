<?php

// A bearer token for the signed-in customer, for a page or an app that
// calls /orders with `Authorization: Bearer <token>` instead of the
// session cookie:
//
//   200 {"access_token": "<JWT>", "token_type": "Bearer", "expires_in": N}
//   401 {"error": "not signed in"} without a session, or with one idle
//       past the shop's limit (session_idle)
//
// It only reads the session (authorizer/shopsession.php): a cookie that
// names no session creates none, and an idle session is refused as the
// authorizer refuses it.
//
// The JWT is RS256, signed with the shop's key (jwt_private_key in the
// ini named by IDEMSHOP_CONFIG): sub = the customer's principal, iss and
// aud fixed (jwt_issuer, jwt_audience), exp short (jwt_ttl seconds).
// Apache checks it with mod_auth_openidc, lighttpd with
// authorizer/bearer.php.

declare(strict_types=1);

require __DIR__ . '/../authorizer/jwt.php';
require __DIR__ . '/../authorizer/shopsession.php';

header('Content-Type: application/json');
header('Cache-Control: no-store');

$path = getenv('IDEMSHOP_CONFIG') ?: '';
$config = $path !== '' && is_readable($path)
    ? parse_ini_file($path, false, INI_SCANNER_RAW) : false;
if (!is_array($config)) {
    http_response_code(500);
    echo json_encode(['error' => 'no shop configuration']), "\n";
    exit;
}

$session = shop_session_read(shop_session_idle(array_map('strval', $config)));
$customer = is_array($session) ? ($session['customer'] ?? null) : null;
if (!is_string($customer) || $customer === '') {
    http_response_code(401);
    echo json_encode(['error' => 'not signed in']), "\n";
    exit;
}

$ttl = max(30, (int)($config['jwt_ttl'] ?? 300));
$now = time();
$token = jwt_sign([
    'iss' => (string)$config['jwt_issuer'],
    'sub' => $customer,
    'aud' => (string)$config['jwt_audience'],
    'iat' => $now,
    'nbf' => $now,
    'exp' => $now + $ttl,
    'jti' => bin2hex(random_bytes(12)),
], (string)$config['jwt_private_key'], (string)($config['jwt_kid'] ?? ''));

echo json_encode(['access_token' => $token, 'token_type' => 'Bearer',
    'expires_in' => $ttl], JSON_UNESCAPED_SLASHES), "\n";
