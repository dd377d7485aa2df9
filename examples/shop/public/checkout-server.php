<?php

// Pay without JavaScript: PHP creates the order with clients/php, acting
// for the signed-in customer, never for a shared account: it forwards the
// customer's own session cookie to /orders of this virtual host (the
// session authorizer reads it), or on the bearer shop the customer's own
// token.  The key is the checkout's own, kept in the session with it
// (lib/shop.php), the same key the page's script sends: a second submit,
// or this checkout already paid by the script in another tab (its answer
// lost or not), gets the same order, never a second one.

declare(strict_types=1);

use Idemorders\Client;
use Idemorders\Result;

require __DIR__ . '/../lib/checkout.php';

shop_session_start();
shop_require_customer();
shop_csrf_check();
$ref = is_string($_POST['checkout'] ?? null) ? $_POST['checkout'] : '';
$via = ($_POST['via'] ?? '') === 'bearer' ? 'bearer' : 'session';
$co = shop_checkout($ref);
if ($co === null) {
    // The cart changed since the page was rendered (or this checkout was
    // refused for good, or placed long ago): its key is not sent again.
    session_write_close();
    shop_page_start('Checkout');
    echo '<p class="error" id="status" data-outcome="closed">This checkout is closed: the cart has changed. <a href="/cart.php">See the cart</a>.</p>' . "\n";
    shop_page_end();
    exit;
}

$key = $co['key'];
$cookie = session_name() . '=' . session_id();
// The authorizer reads this session: release its lock before calling.
session_write_close();

$headers = ['Cookie' => $cookie];
if ($via === 'bearer') {
    $token = shop_server_token($cookie);
    $headers = $token !== null ? ['Authorization' => "Bearer $token"] : [];
}
$client = new Client(shop_orders_url_here(), ['headers' => $headers]);
$r = $client->createOrder($co['order'], key: $key);

shop_session_start();
if ($r->outcome === Result::CREATED) {
    shop_checkout_placed($ref);
} elseif ($r->outcome === Result::REJECTED && !in_array($r->status, [401, 403, 407], true) &&
    $r->code !== 'IDEMPOTENCY_KEY_REUSED') {
    // Refused for good: this key can never make an order; the corrected
    // cart gets a new checkout.
    shop_checkout_refused($ref);
}
session_write_close();

$orderId = $r->orderId ?? '';
if ($r->outcome === Result::CREATED) {
    $text = $r->replayed ?
        "Your order $orderId is placed. This checkout had already been submitted: nothing was ordered twice." :
        "Thank you: your order $orderId is placed.";
} elseif ($r->outcome === Result::REJECTED) {
    $text = match (true) {
        $r->status === 401 => 'You are signed out: sign in again, then pay. Nothing was ordered.',
        $r->code === 'OUT_OF_STOCK' => 'Sorry: there is not enough stock for this order. Change your cart.',
        $r->code === 'IDEMPOTENCY_KEY_REUSED' => 'This checkout was already submitted with other contents: check your orders before paying again.',
        default => 'The order was refused (' . ($r->code ?? "status $r->status") . ').',
    };
} else {
    $text = 'We could not confirm your order yet. Pay again: it cannot order twice.';
}

shop_page_start('Checkout');
?>
<p id="status" data-outcome="<?= h($r->outcome) ?>" data-order-id="<?= h($orderId) ?>"
   data-replayed="<?= $r->replayed ? 'true' : 'false' ?>" data-code="<?= h($r->code ?? '') ?>"><?= h($text) ?></p>
<?php if ($r->outcome === Result::UNKNOWN || ($r->outcome === Result::REJECTED && $r->status === 401)): ?>
<form method="post" action="/checkout-server.php">
  <input type="hidden" name="csrf" value="<?= h(shop_csrf_token()) ?>">
  <input type="hidden" name="checkout" value="<?= h($ref) ?>">
  <input type="hidden" name="via" value="<?= h($via) ?>">
  <button type="submit" id="pay-server">Try again</button>
</form>
<?php endif; ?>
<?php if ($r->outcome === Result::CREATED): ?>
<p><a id="order-link" href="/<?= $via === 'bearer' ? 'order-token.php' : 'order.php' ?>?id=<?= h($orderId) ?>">See your order <?= h($orderId) ?></a></p>
<?php endif; ?>
<p><a href="/">Back to the products</a></p>
<?php
shop_page_end();
