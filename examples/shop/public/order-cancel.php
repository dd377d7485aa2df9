<?php

// Cancel without JavaScript: PHP cancels the order with clients/php,
// acting for the signed-in customer (their session cookie, or on the
// bearer shop their token), with the cancel's one key kept in the
// session (lib/order.php), the same key the page's script sends: a second
// submit, a reload, or a cancel the script already sent (its answer lost
// or not) reaches the service as the same cancel and restocks once.

declare(strict_types=1);

use Idemorders\Client;
use Idemorders\Result;

require __DIR__ . '/../lib/order.php';

shop_session_start();
shop_require_customer();
shop_csrf_check();
$orderId = shop_order_id($_POST);
$via = ($_POST['via'] ?? '') === 'bearer' ? 'bearer' : 'session';
// Where "Back" goes: the list ("My orders") or the order's own page.
$back = ($_POST['back'] ?? '') === 'list' ? 'list' : 'order';
if ($orderId === null) {
    session_write_close();
    http_response_code(404);
    shop_page_start('Order');
    echo '<p class="error" id="status" data-outcome="rejected">No such order of yours.</p>' . "\n";
    shop_page_end();
    exit;
}
$key = shop_cancel_key($orderId);
$cookie = session_name() . '=' . session_id();
// The authorizer reads this session: release its lock before calling.
session_write_close();

$client = new Client(shop_orders_url_here(), ['headers' => shop_customer_headers($cookie, $via)]);
$r = $client->cancelOrder($orderId, key: $key);

if ($r->outcome === Result::CANCELLED) {
    $kind = $r->replayed ? 'replayed' : 'cancelled';
    $text = $r->replayed ?
        "Your order $orderId is cancelled. It had already been cancelled by an earlier click: its items went back once." :
        "Your order $orderId is cancelled.";
} elseif ($r->outcome === Result::REJECTED) {
    $kind = 'rejected';
    $text = match (true) {
        $r->status === 401 => 'You are signed out: sign in again, then cancel. Nothing was changed.',
        $r->code === 'ORDER_ALREADY_CANCELLED' => "Your order $orderId was already cancelled.",
        $r->code === 'ORDER_NOT_CANCELLABLE' => "Your order $orderId can no longer be cancelled.",
        $r->code === 'ORDER_NOT_FOUND' => 'No such order of yours.',
        default => 'The cancel was refused (' . ($r->code ?? "status $r->status") . ').',
    };
} else {
    $kind = 'unknown';
    $text = 'We could not confirm the cancel yet. Try again: it cannot cancel twice.';
}

shop_page_start("Order $orderId");
?>
<p id="status" data-outcome="<?= h($kind) ?>" data-order-id="<?= h($orderId) ?>"
   data-replayed="<?= $r->replayed ? 'true' : 'false' ?>" data-code="<?= h($r->code ?? '') ?>"
   data-key="<?= h($key) ?>"><?= h($text) ?></p>
<?php if ($r->outcome === Result::UNKNOWN): ?>
<form method="post" action="/order-cancel.php">
  <input type="hidden" name="csrf" value="<?= h(shop_csrf_token()) ?>">
  <input type="hidden" name="id" value="<?= h($orderId) ?>">
  <input type="hidden" name="via" value="<?= h($via) ?>">
  <input type="hidden" name="back" value="<?= h($back) ?>">
  <button type="submit" id="cancel-server">Try again</button>
</form>
<?php endif; ?>
<?php if ($back === 'list'): ?>
<p><a id="back" href="/<?= $via === 'bearer' ? 'my-orders-token.php' : 'my-orders.php' ?>">Back to my orders</a></p>
<?php else: ?>
<p><a id="back" href="/<?= $via === 'bearer' ? 'order-token.php' : 'order.php' ?>?id=<?= h($orderId) ?>">Back to the order</a></p>
<?php endif; ?>
<?php
shop_page_end();
