<?php

// What the shop's FastCGI authorizers (session.php, bearer.php) share: the
// two answers of a FastCGI Authorizer (spec section 6.3).  lighttpd
// (mod_fastcgi "mode" => "authorizer") and Apache (mod_fcgid FcgidAccessChecker) send
// the authorizer the request's headers, never its body; a 200 lets the
// request on to idemorders with the Variable-* headers as its
// environment; anything else refuses the request (lighttpd sends the
// authorizer's answer, Apache under mod_fcgid its own 401).

declare(strict_types=1);

/**
 * A principal idemorders takes as it is: 1-255 visible ASCII bytes
 * (nothing a header or a log line could be split on).
 */
function authz_principal_ok(mixed $p): bool
{
    return is_string($p) && preg_match('/\A[\x21-\x7e]{1,255}\z/', $p) === 1;
}

/** Let the request through as $principal (REMOTE_USER at idemorders). */
function authz_allow(string $principal): never
{
    // Nothing but the status and the variable: Apache would otherwise
    // keep the authorizer's other headers for the client's answer.
    ini_set('default_mimetype', '');
    header_remove();
    http_response_code(200);
    header('Variable-REMOTE_USER: ' . $principal);
    exit;
}

/**
 * Refuse: 401, a problem+json body like idemorders' own
 * (code UNAUTHENTICATED), and no Basic challenge (the browser must not
 * show a password prompt).  $challenge: a WWW-Authenticate value, or ''.
 */
function authz_deny(string $detail, string $challenge = ''): never
{
    header_remove();
    http_response_code(401);
    header('Content-Type: application/problem+json');
    header('Cache-Control: no-store');
    if ($challenge !== '') {
        header('WWW-Authenticate: ' . $challenge);
    }
    echo json_encode([
        'type' => 'about:blank',
        'title' => 'Unauthorized',
        'status' => 401,
        'detail' => $detail,
        'code' => 'UNAUTHENTICATED',
    ], JSON_UNESCAPED_SLASHES), "\n";
    exit;
}

/** The shop's configuration (the ini file named by IDEMSHOP_CONFIG). */
function authz_config(): array
{
    $path = getenv('IDEMSHOP_CONFIG') ?: ($_SERVER['IDEMSHOP_CONFIG'] ?? '');
    $ini = is_string($path) && $path !== '' && is_readable($path)
        ? parse_ini_file($path, false, INI_SCANNER_RAW) : false;
    if (!is_array($ini)) {
        error_log('authorizer: IDEMSHOP_CONFIG names no readable ini file');
        header_remove();
        http_response_code(500);
        header('Cache-Control: no-store');
        exit;
    }
    return array_map('strval', $ini);
}
