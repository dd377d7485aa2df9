<?php

// The shop's session authorizer: a FastCGI Authorizer (spec section 6.3)
// that lets a request under /orders through as the signed-in customer.
//
//   PHP session "idemshop" with $_SESSION['customer'] = "customer-1001"
//     -> 200, Variable-REMOTE_USER: customer-1001
//   no cookie, an unknown or expired session, no customer in it
//     -> 401 (problem+json, no WWW-Authenticate: no password prompt)
//
// It reads the session without locking it and never creates one: an
// unknown id is refused before session_start(), and read_and_close
// writes nothing back.  Run it in the shop's php-fpm pool (the same
// session.save_handler and save_path as the shop's pages); see
// httpd-conf/lighttpd-session.conf and httpd-conf/apache-session.conf.

declare(strict_types=1);

require __DIR__ . '/authorizer.php';

const SESSION_NAME = 'idemshop';

session_name(SESSION_NAME);
$id = $_COOKIE[SESSION_NAME] ?? null;
// PHP's own session ids (session.sid_bits_per_character 4-6).
if (!is_string($id) || preg_match('/\A[A-Za-z0-9,-]{22,256}\z/', $id) !== 1) {
    authz_deny('no shop session');
}

// The files handler would create a session for an unknown id: look
// first.  An idle session older than session.gc_maxlifetime is expired,
// whether or not the garbage collector has removed it yet.
if (ini_get('session.save_handler') === 'files') {
    $dir = (string)ini_get('session.save_path');
    $dir = substr($dir, (int)strrpos(';' . $dir, ';'));   // "N;MODE;/path"
    clearstatcache();
    $mtime = @filemtime(($dir === '' ? sys_get_temp_dir() : $dir) . '/sess_' . $id);
    if ($mtime === false) {
        authz_deny('no shop session');
    }
    if ($mtime < time() - (int)ini_get('session.gc_maxlifetime')) {
        authz_deny('the shop session has expired');
    }
}

session_id($id);
if (!session_start(['read_and_close' => true, 'use_cookies' => false,
        'cache_limiter' => ''])) {
    authz_deny('no shop session');
}
$customer = $_SESSION['customer'] ?? null;
if (!authz_principal_ok($customer)) {
    authz_deny('not signed in');
}
authz_allow($customer);
