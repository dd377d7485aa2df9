<?php

// The shop's bearer-token authorizer for lighttpd: a FastCGI Authorizer
// (spec section 6.3) that lets a request under /orders through as the
// `sub` of the shop's token (RS256 JWT from public/token.php).
//
//   Authorization: Bearer <JWT>, signed by the shop's key, RS256, not
//   expired, iss = jwt_issuer, aud has jwt_audience
//     -> 200, Variable-REMOTE_USER: <sub>
//   anything else (no token, another algorithm, a bad signature, expired,
//   another issuer or audience)
//     -> 401 with WWW-Authenticate: Bearer (RFC 6750)
//
// The key and the expected claims come from the shop's ini
// (IDEMSHOP_CONFIG: jwt_public_key, jwt_issuer, jwt_audience).  Apache
// does the same with mod_auth_openidc (httpd-conf/apache-bearer.conf).

declare(strict_types=1);

require __DIR__ . '/authorizer.php';
require __DIR__ . '/jwt.php';

$realm = 'realm="idemorders"';
$auth = $_SERVER['HTTP_AUTHORIZATION'] ?? '';
if (!is_string($auth) || preg_match('/\ABearer +([A-Za-z0-9._-]+)\s*\z/i', $auth, $m) !== 1) {
    authz_deny('no bearer token', "Bearer $realm");
}
$config = authz_config();
$claims = jwt_verify($m[1], $config['jwt_public_key'] ?? '',
    $config['jwt_issuer'] ?? '', $config['jwt_audience'] ?? '');
if (is_string($claims)) {
    authz_deny($claims, "Bearer $realm, error=\"invalid_token\"");
}
if (!authz_principal_ok($claims['sub'] ?? null)) {
    authz_deny('the token names no subject', "Bearer $realm, error=\"invalid_token\"");
}
authz_allow($claims['sub']);
