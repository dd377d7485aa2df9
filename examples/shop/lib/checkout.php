<?php

// The checkout page, for the session shop (checkout.php: the session
// cookie is the identity) and for the bearer shop (checkout-token.php:
// the page fetches a token from /token.php and sends it as
// "Authorization: Bearer").  The browser creates the order itself with
// clients/js (assets/checkout.mjs); without JavaScript the form posts to
// checkout-server.php, which creates it with clients/php.  Both send the
// checkout's one key, made on the server and kept in the session with
// the checkout (lib/shop.php): the page carries it for the script, the
// form carries only the checkout's reference.

declare(strict_types=1);

require_once __DIR__ . '/shop.php';

/** Render the checkout of the cart; $auth is 'session' or 'bearer'. */
function shop_checkout_page(string $auth): void
{
    shop_session_start();
    shop_require_customer();
    $co = shop_cart_order();
    $checkout = isset($co['order']) ? shop_checkout_open($co['order']) : null;
    $ref = $checkout['id'] ?? null;
    $csrf = shop_csrf_token();
    session_write_close();

    shop_page_start('Checkout');
    if ($ref === null) {
        echo '<p class="error" id="checkout-error">' . h($co['error']) . "</p>\n";
        echo '<p><a href="/cart.php">Back to the cart</a></p>' . "\n";
        shop_page_end();
        return;
    }
    $order = $co['order'];
    ?>
<table id="summary">
  <thead><tr><th>SKU</th><th>Price</th><th>Qty</th><th>Total</th></tr></thead>
  <tbody>
<?php foreach ($co['lines'] as $l): ?>
    <tr><td><?= h($l['sku']) ?></td><td><?= h(shop_money($l['unit_price'], $l['currency'])) ?></td>
      <td><?= h($l['qty']) ?></td><td><?= h(shop_money($l['total'], $l['currency'])) ?></td></tr>
<?php endforeach; ?>
  </tbody>
</table>
<p>To pay: <strong id="total"><?= h(shop_money($order['amount'], $order['currency'])) ?></strong></p>
<div id="checkout" data-ref="<?= h($ref) ?>" data-key="<?= h($checkout['key']) ?>" data-auth="<?= h($auth) ?>"
     data-orders-url="<?= h(shop_config()['orders_url']) ?>" data-csrf="<?= h($csrf) ?>"
     data-order="<?= h(json_encode($order, JSON_THROW_ON_ERROR)) ?>">
  <p class="ref">Checkout <code><?= h($ref) ?></code></p>
  <button type="button" id="pay" hidden>Pay</button>
  <p id="status" role="status" aria-live="polite"></p>
  <noscript>
    <form method="post" action="/checkout-server.php">
      <input type="hidden" name="csrf" value="<?= h($csrf) ?>">
      <input type="hidden" name="checkout" value="<?= h($ref) ?>">
      <input type="hidden" name="via" value="<?= h($auth) ?>">
      <button type="submit" id="pay-server">Pay</button>
    </form>
  </noscript>
</div>
<script type="module" src="/assets/checkout.mjs"></script>
<?php
    shop_page_end();
}

/*
 * The URL of /orders for a request this PHP process makes itself: the
 * configured orders_url when it is absolute, else that path on the
 * address and port this request came in on (the same virtual host, so the
 * same authorizer; never the client-supplied Host header).  lighttpd's
 * SERVER_PORT is the port the connection came to; Apache's is the Host
 * header's unless the vhost has UseCanonicalName On (with
 * UseCanonicalPhysicalPort On, as httpd-conf/apache-session.conf has).
 */
function shop_orders_url_here(string $path = ''): string
{
    $url = $path !== '' ? $path : shop_config()['orders_url'];
    if (preg_match('#^https?://#', $url)) {
        return $url;
    }
    $addr = $_SERVER['SERVER_ADDR'] ?? '127.0.0.1';
    if (str_contains($addr, ':')) {
        $addr = "[$addr]";
    }
    $https = !empty($_SERVER['HTTPS']) && $_SERVER['HTTPS'] !== 'off';
    return ($https ? 'https' : 'http') . "://$addr:" . (int)($_SERVER['SERVER_PORT'] ?? 80) . $url;
}

/**
 * A bearer token for the signed-in customer, from this shop's
 * /token.php with the customer's session cookie; null when refused.
 */
function shop_server_token(string $cookie): ?string
{
    $ch = curl_init(shop_orders_url_here('/token.php'));
    curl_setopt_array($ch, [
        CURLOPT_RETURNTRANSFER => true,
        CURLOPT_HTTPHEADER => ["Cookie: $cookie"],
        CURLOPT_TIMEOUT => 10,
    ]);
    $body = curl_exec($ch);
    $status = curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
    curl_close($ch);
    if ($body === false || $status !== 200) {
        return null;
    }
    $t = json_decode($body, true);
    return is_array($t) && is_string($t['access_token'] ?? null) ? $t['access_token'] : null;
}
