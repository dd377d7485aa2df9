<?php

// Sign out: POST with the session's CSRF token (the "Sign out" button in
// every page's header); the session is destroyed, so the web server's
// authorizer refuses /orders (401) from now on.  Any other method is
// refused (405) before the session is even opened, and a POST without the
// token (a form on another site) is refused (400): neither signs anyone
// out.

declare(strict_types=1);

require __DIR__ . '/../lib/shop.php';

if (($_SERVER['REQUEST_METHOD'] ?? '') !== 'POST') {
    http_response_code(405);
    header('Allow: POST');
    header('Content-Type: text/plain; charset=utf-8');
    header('Cache-Control: no-store');
    echo "Sign out with the \"Sign out\" button.\n";
    exit;
}
shop_session_start();
shop_csrf_check();
$_SESSION = [];
$p = session_get_cookie_params();
setcookie(session_name(), '', [
    'expires' => 1,
    'path' => $p['path'],
    'domain' => $p['domain'],
    'secure' => $p['secure'],
    'httponly' => $p['httponly'],
    'samesite' => $p['samesite'],
]);
session_destroy();
header('Location: /login.php', true, 303);
