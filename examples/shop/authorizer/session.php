<?php

// The shop's session authorizer: a FastCGI Authorizer (spec section 6.3)
// that lets a request under /orders through as the signed-in customer.
//
//   PHP session "idemshop" with $_SESSION['customer'] = "customer-1001"
//     -> 200, Variable-REMOTE_USER: customer-1001
//   no cookie, an unknown or expired session, no customer in it
//     -> 401 (problem+json, no WWW-Authenticate: no password prompt)
//
// It reads the session without locking it and never creates one (an
// unknown id is refused before session_start(), and read_and_close
// writes nothing back), and it refuses a session idle past the shop's
// limit (session_idle in the ini named by IDEMSHOP_CONFIG) by the time
// of the customer's last page stamped inside it, not by the file's age:
// shopsession.php, the same rule as the pages' and token.php's.  Run it
// where it reads the shop's sessions (the same session.save_handler and
// save_path as the shop's pages); see httpd-conf/lighttpd-session.conf
// and httpd-conf/apache-session.conf.

declare(strict_types=1);

require __DIR__ . '/authorizer.php';
require __DIR__ . '/shopsession.php';

$session = shop_session_read(shop_session_idle(authz_config()));
if (is_string($session)) {
    authz_deny($session);
}
$customer = $session['customer'] ?? null;
if (!authz_principal_ok($customer)) {
    authz_deny('not signed in');
}
authz_allow($customer);
