<?php

// The demo shop's shared code: configuration, the stock table, the
// customer's session (who is signed in, the cart, the open checkout),
// CSRF tokens, money and escaping.  Every page starts with
//
//     require __DIR__ . '/../lib/shop.php';
//     shop_session_start();
//
// The web server's session authorizer reads the same session (name
// "idemshop", $_SESSION['customer'] = the principal) to tell idemorders
// who the customer is.  A page must session_write_close() before it calls
// /orders itself: the authorizer waits for the session's lock.

declare(strict_types=1);

require_once __DIR__ . '/../authorizer/shopsession.php';

/*
 * The customers: login name => principal and password hash (the demo
 * passwords are the name followed by "-secret").  A real shop has a
 * customers table; the principal must be the customer's own stable id.
 */
const SHOP_CUSTOMERS = [
    'ana' => ['principal' => 'customer-1001',
        'hash' => '$2y$10$CCG2GSoirMI227WSyMdS1.kc2i17tv4Rl.YKJgcl9D2CUCERm8NVa'],
    'ben' => ['principal' => 'customer-1002',
        'hash' => '$2y$10$67xGVZKZXtUsSK72AmnnUez/CF3tJ8bewJ1OjgzJo5qI.5bJpPsUS'],
];

/** Digits after the point, by currency (ISO 4217). */
const SHOP_MINOR_DIGITS = ['KRW' => 0, 'JPY' => 0, 'USD' => 2, 'EUR' => 2];

spl_autoload_register(static function (string $class): void {
    $prefix = 'Idemorders\\';
    if (str_starts_with($class, $prefix)) {
        $file = __DIR__ . '/../../../clients/php/src/' .
            str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});

/**
 * The configuration: the ini file named by IDEMSHOP_CONFIG (db_socket,
 * db_name, db_user, db_password, orders_url, jwt_issuer, jwt_audience,
 * shop_db_name: the shop's own database, webhook_secret_file: the
 * warehouse's webhook secret, outside the document root).
 *
 * @return array<string, string>
 */
function shop_config(): array
{
    static $config = null;
    if ($config !== null) {
        return $config;
    }
    $path = getenv('IDEMSHOP_CONFIG') ?: ($_SERVER['IDEMSHOP_CONFIG'] ?? '');
    if ($path === '' || !is_readable($path)) {
        throw new RuntimeException('IDEMSHOP_CONFIG does not name a readable ini file');
    }
    $ini = parse_ini_file($path, false, INI_SCANNER_RAW);
    if ($ini === false) {
        throw new RuntimeException("cannot parse $path");
    }
    $config = array_map('strval', $ini) + ['orders_url' => '/orders'];
    return $config;
}

/** The shop's read-only connection to the database. */
function shop_db(): PDO
{
    static $db = null;
    if ($db === null) {
        $c = shop_config();
        $db = new PDO(
            sprintf('mysql:unix_socket=%s;dbname=%s;charset=utf8mb4', $c['db_socket'], $c['db_name']),
            $c['db_user'],
            $c['db_password'] ?? '',
            [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION, PDO::ATTR_EMULATE_PREPARES => false],
        );
    }
    return $db;
}

/**
 * The shop's connection to its own database (shop_db_name: what its
 * warehouse recorded, examples/shop/schema.sql), as the same user.
 */
function shop_own_db(): PDO
{
    static $db = null;
    if ($db === null) {
        $c = shop_config();
        $db = new PDO(
            sprintf('mysql:unix_socket=%s;dbname=%s;charset=utf8mb4', $c['db_socket'], $c['shop_db_name']),
            $c['db_user'],
            $c['db_password'] ?? '',
            [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION, PDO::ATTR_EMULATE_PREPARES => false],
        );
    }
    return $db;
}

/**
 * Products whose SKU starts with $prefix ('' for all), by SKU.
 *
 * @return list<array{sku: string, currency: string, unit_price: int, available: int}>
 */
function shop_products(string $prefix = '', int $limit = 100): array
{
    $like = addcslashes($prefix, '\\%_') . '%';
    $st = shop_db()->prepare('SELECT sku, currency, unit_price, available FROM stock
        WHERE sku LIKE ? ORDER BY sku LIMIT ' . max(1, $limit));
    $st->execute([$like]);
    $out = [];
    foreach ($st->fetchAll(PDO::FETCH_ASSOC) as $r) {
        $out[] = ['sku' => $r['sku'], 'currency' => $r['currency'],
            'unit_price' => (int)$r['unit_price'], 'available' => (int)$r['available']];
    }
    return $out;
}

/**
 * The stock rows of $skus, by SKU.
 *
 * @param list<string> $skus
 * @return array<string, array{sku: string, currency: string, unit_price: int, available: int}>
 */
function shop_stock(array $skus): array
{
    if ($skus === []) {
        return [];
    }
    $st = shop_db()->prepare('SELECT sku, currency, unit_price, available FROM stock
        WHERE sku IN (' . implode(',', array_fill(0, count($skus), '?')) . ')');
    $st->execute(array_values($skus));
    $out = [];
    foreach ($st->fetchAll(PDO::FETCH_ASSOC) as $r) {
        $out[$r['sku']] = ['sku' => $r['sku'], 'currency' => $r['currency'],
            'unit_price' => (int)$r['unit_price'], 'available' => (int)$r['available']];
    }
    return $out;
}

/**
 * Start the customer's session (cookie: HttpOnly, SameSite=Lax), before
 * anything else the page does.  A session idle past the shop's limit
 * (session_idle) is destroyed here, file and all, and the page goes on
 * with a new, empty one: a page never revives a session the authorizer
 * already refuses.  Every page then stamps the session with now; that
 * stamp is what the limit is measured from, here, in the authorizer and
 * in token.php (authorizer/shopsession.php).
 */
function shop_session_start(): void
{
    if (session_status() === PHP_SESSION_ACTIVE) {
        return;
    }
    $config = shop_config();
    $idle = shop_session_idle($config);
    shop_session_gc_setup($config, $idle);
    session_name(SHOP_SESSION_NAME);
    session_start([
        'use_strict_mode' => true,
        'cookie_httponly' => true,
        'cookie_samesite' => 'Lax',
        'cookie_secure' => !empty($_SERVER['HTTPS']) && $_SERVER['HTTPS'] !== 'off',
        'cookie_path' => '/',
    ]);
    if (shop_session_stale($_SESSION, $idle, time())) {
        $_SESSION = [];
        session_regenerate_id(true);
    }
    $_SESSION['seen'] = time();
}

/** The signed-in customer's principal, or null. */
function shop_customer(): ?string
{
    $c = $_SESSION['customer'] ?? null;
    return is_string($c) && $c !== '' ? $c : null;
}

/** The signed-in customer's principal; else send to the login page. */
function shop_require_customer(): string
{
    $c = shop_customer();
    if ($c === null) {
        header('Location: /login.php', true, 303);
        exit;
    }
    return $c;
}

/** The principal of $user if $password is theirs, else null. */
function shop_check_password(string $user, string $password): ?string
{
    $c = SHOP_CUSTOMERS[$user] ?? null;
    if ($c === null) {
        // The same work as for a real user: no timing hint.
        password_verify($password, SHOP_CUSTOMERS['ana']['hash']);
        return null;
    }
    return password_verify($password, $c['hash']) ? $c['principal'] : null;
}

/** The session's CSRF token (made on first use). */
function shop_csrf_token(): string
{
    if (!isset($_SESSION['csrf']) || !is_string($_SESSION['csrf'])) {
        $_SESSION['csrf'] = bin2hex(random_bytes(16));
    }
    return $_SESSION['csrf'];
}

/** Answer 400 and stop unless the POST carries the session's CSRF token. */
function shop_csrf_check(): void
{
    $sent = $_POST['csrf'] ?? '';
    if ($_SERVER['REQUEST_METHOD'] !== 'POST' || !is_string($sent) ||
        !isset($_SESSION['csrf']) || !hash_equals($_SESSION['csrf'], $sent)) {
        http_response_code(400);
        header('Content-Type: text/plain; charset=utf-8');
        echo "This form has expired: go back, reload the page and try again.\n";
        exit;
    }
}

/**
 * Whether a browser sent this request from another site's page: its
 * Sec-Fetch-Site says so, or its Origin is not this host.  Browsers
 * send Origin with every POST, and a page of another site cannot
 * change either header.  A request with neither (curl, a script) is not
 * one another site's page made a visitor's browser send.  The sign-in
 * form takes no session CSRF token (the visitor has no session yet), so
 * this check is what keeps another site from signing a visitor's
 * browser in to an account of its choosing (login CSRF).
 */
function shop_cross_site_request(): bool
{
    $site = $_SERVER['HTTP_SEC_FETCH_SITE'] ?? null;
    if (is_string($site)) {
        // The browser's own verdict, where it gives one.
        return $site !== 'same-origin' && $site !== 'none';
    }
    $origin = $_SERVER['HTTP_ORIGIN'] ?? null;
    if (!is_string($origin)) {
        return false;
    }
    $https = ($_SERVER['HTTPS'] ?? '') !== '' && ($_SERVER['HTTPS'] ?? '') !== 'off';
    $self = ($https ? 'https' : 'http') . '://' . ($_SERVER['HTTP_HOST'] ?? '');
    return !hash_equals(strtolower($self), strtolower($origin));
}

/** HTML-escape $s. */
function h(string|int $s): string
{
    return htmlspecialchars((string)$s, ENT_QUOTES | ENT_SUBSTITUTE, 'UTF-8');
}

/** $minor units of $currency as text, e.g. "KRW 6,000" or "USD 19.99". */
function shop_money(int $minor, string $currency): string
{
    $d = SHOP_MINOR_DIGITS[$currency] ?? 2;
    return $currency . ' ' . number_format($minor / 10 ** $d, $d);
}

/**
 * The cart: SKU => quantity.
 *
 * @return array<string, int>
 */
function shop_cart(): array
{
    $cart = $_SESSION['cart'] ?? [];
    return is_array($cart) ? $cart : [];
}

/**
 * The order the cart makes, priced from the stock table, or an error:
 * ['order' => [...], 'lines' => [...]] or ['error' => text].
 *
 * @return array<string, mixed>
 */
function shop_cart_order(): array
{
    $cart = shop_cart();
    if ($cart === []) {
        return ['error' => 'Your cart is empty.'];
    }
    $stock = shop_stock(array_keys($cart));
    $items = [];
    $lines = [];
    $amount = 0;
    $currencies = [];
    ksort($cart, SORT_STRING);
    foreach ($cart as $sku => $qty) {
        $sku = (string)$sku;
        if (!isset($stock[$sku])) {
            return ['error' => "The product $sku is no longer sold: remove it from the cart."];
        }
        $s = $stock[$sku];
        $currencies[$s['currency']] = true;
        $items[] = ['sku' => $sku, 'qty' => $qty];
        $lines[] = $s + ['qty' => $qty, 'total' => $s['unit_price'] * $qty];
        $amount += $s['unit_price'] * $qty;
    }
    if (count($currencies) !== 1) {
        return ['error' => 'An order is paid in one currency: your cart mixes ' .
            implode(' and ', array_keys($currencies)) . '.', 'lines' => $lines];
    }
    $currency = array_key_first($currencies);
    return ['order' => ['currency' => $currency, 'items' => $items, 'amount' => $amount],
        'lines' => $lines];
}

/*
 * Checkouts.  One checkout is one order the customer means to place
 * once, and it has ONE Idempotency-Key, made here on the server and kept
 * in the session with the checkout: every way of paying it (the page's
 * script, the form without JavaScript, a second tab, a retry, a reload)
 * sends that key, so together they can make one order at most.
 *
 *  - made: when the checkout page is rendered and the session has no open
 *    checkout for exactly this cart (shop_checkout_open): a new random
 *    reference ("co-...") and a new key (a UUID v4);
 *  - kept: while the cart is unchanged, every render, tab and path finds
 *    the same reference and key;
 *  - retired: when an order was committed for it (shop_checkout_placed:
 *    the cart is emptied, the next checkout gets a new reference and
 *    key; the placed one is remembered, so that paying it again replays
 *    its order); when it was refused for good (shop_checkout_refused:
 *    out of stock, a changed price; its key can never make an order, and
 *    the next render gets a new one); and when the cart changes (the next
 *    render makes a new checkout for the new cart).
 */

/**
 * The open checkout of $order, made (reference and key) when there is
 * none or the cart has changed since.
 *
 * @param array<string, mixed> $order
 * @return array{id: string, key: string, order: array<string, mixed>}
 */
function shop_checkout_open(array $order): array
{
    $co = $_SESSION['checkout'] ?? null;
    if (is_array($co) && ($co['order'] ?? null) === $order && is_string($co['id'] ?? null) &&
        is_string($co['key'] ?? null)) {
        return $co;
    }
    $co = ['id' => 'co-' . bin2hex(random_bytes(12)), 'key' => Idemorders\Client::newKey(),
        'order' => $order];
    $_SESSION['checkout'] = $co;
    return $co;
}

/**
 * The checkout named $ref: the open one, or one already placed (paying it
 * again sends its key again, which replays its order); else null.
 *
 * @return ?array{id: string, key: string, order: array<string, mixed>, placed?: bool}
 */
function shop_checkout(string $ref): ?array
{
    $co = $_SESSION['checkout'] ?? null;
    if (is_array($co) && ($co['id'] ?? null) === $ref) {
        return $co;
    }
    $placed = $_SESSION['placed'][$ref] ?? null;
    return is_array($placed) ? $placed + ['placed' => true] : null;
}

/**
 * The checkout $ref became an order: close it, empty the cart, remember
 * it (the last few) for a later payment of the same checkout.
 */
function shop_checkout_placed(string $ref): void
{
    $co = $_SESSION['checkout'] ?? null;
    if (!is_array($co) || ($co['id'] ?? null) !== $ref) {
        return;
    }
    unset($_SESSION['checkout']);
    $_SESSION['cart'] = [];
    $placed = is_array($_SESSION['placed'] ?? null) ? $_SESSION['placed'] : [];
    $_SESSION['placed'] = array_slice([$ref => $co] + $placed, 0, 10, true);
}

/** The checkout $ref was refused for good: the next render makes a new one. */
function shop_checkout_refused(string $ref): void
{
    $co = $_SESSION['checkout'] ?? null;
    if (is_array($co) && ($co['id'] ?? null) === $ref) {
        unset($_SESSION['checkout']);
    }
}

/** Print the page's head and navigation. */
function shop_page_start(string $title): void
{
    header('Content-Type: text/html; charset=utf-8');
    header('Cache-Control: no-store');
    $customer = shop_customer();
    $items = array_sum(shop_cart());
    ?>
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title><?= h($title) ?> · Demo shop</title>
<link rel="stylesheet" href="/assets/shop.css">
</head>
<body>
<header>
  <a class="brand" href="/">Demo shop</a>
  <nav>
    <a href="/">Products</a>
    <a href="/cart.php" id="cart-link">Cart (<?= h($items) ?>)</a>
<?php if ($customer !== null): ?>
    <a href="/my-orders.php" id="my-orders-link">My orders</a>
    <span class="who" id="who"><?= h($_SESSION['name'] ?? $customer) ?> (<?= h($customer) ?>)</span>
    <form method="post" action="/logout.php" class="inline">
      <input type="hidden" name="csrf" value="<?= h(shop_csrf_token()) ?>">
      <button type="submit" id="logout">Sign out</button>
    </form>
<?php else: ?>
    <a href="/login.php" id="login-link">Sign in</a>
<?php endif; ?>
  </nav>
</header>
<main>
<h1><?= h($title) ?></h1>
<?php
}

/** Print the end of the page. */
function shop_page_end(): void
{
    echo "</main>\n</body>\n</html>\n";
}
