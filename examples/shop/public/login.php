<?php

// Sign in: the form (GET), the check (POST user, password).  On success
// the session gets a new id and names the customer; the web server's
// session authorizer then passes that principal to /orders.

declare(strict_types=1);

require __DIR__ . '/../lib/shop.php';

shop_session_start();
$error = null;
$user = '';
if ($_SERVER['REQUEST_METHOD'] === 'POST' && shop_cross_site_request()) {
    // Another site's page posting a name and password (login CSRF).
    http_response_code(403);
    $error = 'Sign in from this shop\'s own page.';
} elseif ($_SERVER['REQUEST_METHOD'] === 'POST') {
    $user = is_string($_POST['user'] ?? null) ? trim($_POST['user']) : '';
    $password = is_string($_POST['password'] ?? null) ? $_POST['password'] : '';
    $principal = shop_check_password($user, $password);
    if ($principal !== null) {
        session_regenerate_id(true);
        $_SESSION['customer'] = $principal;
        $_SESSION['name'] = $user;
        header('Location: /', true, 303);
        exit;
    }
    http_response_code(401);
    $error = 'Wrong name or password.';
}

shop_page_start('Sign in');
?>
<?php if ($error !== null): ?>
<p class="error" id="login-error"><?= h($error) ?></p>
<?php endif; ?>
<form method="post" action="/login.php" id="login-form">
  <label>Name <input name="user" id="user" value="<?= h($user) ?>" autocomplete="username" required></label>
  <label>Password <input name="password" id="password" type="password" autocomplete="current-password" required></label>
  <button type="submit" id="login-submit">Sign in</button>
</form>
<p class="hint">Demo customers: ana / ana-secret, ben / ben-secret.</p>
<?php
shop_page_end();
