<?php

// Sign out: the session is destroyed, so the web server's authorizer
// refuses /orders (401) from now on.

declare(strict_types=1);

require __DIR__ . '/../lib/shop.php';

shop_session_start();
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
