<?php

// The order page, for the session shop (order.php) and the bearer shop
// (order-token.php): the signed-in customer's order, read from /orders
// as that customer, with "Cancel this order".  The cancel has ONE
// Idempotency-Key, made here on the server when the page is first
// rendered for the order and kept in the session with it: the page's
// script (assets/order.mjs, clients/js) sends it, and so does the form
// without JavaScript (order-cancel.php, clients/php).  Every click,
// retry, reload and tab of this cancel sends that key, so the order's
// stock goes back once, however often it is pressed.  A cancel never
// refunds a payment: a real shop does that on its own.

declare(strict_types=1);

require_once __DIR__ . '/checkout.php';
require_once __DIR__ . '/warehouse.php';

/**
 * The cancel key of $orderId in the session: the stored one, or a new
 * one stored (the session keeps the keys of the last 100 orders it
 * rendered a Cancel button for: the order page, every row of "My
 * orders").
 */
function shop_cancel_key(string $orderId): string
{
    $keys = is_array($_SESSION['cancels'] ?? null) ? $_SESSION['cancels'] : [];
    $key = $keys[$orderId] ?? null;
    if (!is_string($key)) {
        $key = Idemorders\Client::newKey();
    }
    unset($keys[$orderId]);
    $_SESSION['cancels'] = array_slice([$orderId => $key] + $keys, 0, 100, true);
    return $key;
}

/** The order id of the request ($_GET or $_POST 'id'), or null. */
function shop_order_id(array $from): ?string
{
    $id = $from['id'] ?? null;
    return is_string($id) && preg_match('/^o-[1-9][0-9]{0,18}$/', $id) ? $id : null;
}

/**
 * The headers that make this request's customer the principal of a call
 * from PHP: the session cookie, or on the bearer shop a token for it.
 * Call with the session closed (the authorizer reads it).
 *
 * @return array<string, string>
 */
function shop_customer_headers(string $cookie, string $via): array
{
    if ($via !== 'bearer') {
        return ['Cookie' => $cookie];
    }
    $token = shop_server_token($cookie);
    return $token !== null ? ['Authorization' => "Bearer $token"] : [];
}

/**
 * GET $url (/orders or under it) as the customer: [status, the JSON
 * object of a 200 or null].
 *
 * @param array<string, string> $headers
 * @return array{int, ?array<string, mixed>}
 */
function shop_get_json(string $url, array $headers): array
{
    $lines = [];
    foreach ($headers as $n => $v) {
        $lines[] = "$n: $v";
    }
    $ch = curl_init($url);
    curl_setopt_array($ch, [CURLOPT_RETURNTRANSFER => true, CURLOPT_HTTPHEADER => $lines,
        CURLOPT_TIMEOUT => 15]);
    $body = curl_exec($ch);
    $status = (int)curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
    curl_close($ch);
    $json = is_string($body) ? json_decode($body, true) : null;
    return [$status, $status === 200 && is_array($json) ? $json : null];
}

/**
 * GET /orders/$orderId as the customer: [status, the order or null].
 *
 * @param array<string, string> $headers
 * @return array{int, ?array<string, mixed>}
 */
function shop_fetch_order(string $orderId, array $headers): array
{
    return shop_get_json(rtrim(shop_orders_url_here(), '/') . '/' . $orderId, $headers);
}

/*
 * What the shop shows for an order's status, and whether it offers the
 * Cancel button: by the status the service gives the order (its
 * "status"), never by anything the shop remembers.  A status not listed
 * here is shown as it is, without a button.
 */
const SHOP_ORDER_STATUSES = [
    'CREATED' => ['label' => 'created', 'cancel' => true],
    'CANCELLED' => ['label' => 'cancelled', 'cancel' => false],
    // Set once the warehouse has packed the order: no longer offered for
    // cancelling (the service's cancel rule decides in the end).
    'PACKED' => ['label' => 'packed', 'cancel' => false],
];

/**
 * The status the shop shows for each of $orders (as GET /orders gives
 * them), by order id: the service's status joined to the shop's own
 * table, so that a CREATED order the warehouse packed (warehouse.php,
 * on its order.created webhook) is PACKED.  While the shop's database
 * does not answer, the service's status alone.
 *
 * @param list<array<string, mixed>> $orders
 * @return array<string, string>
 */
function shop_shown_statuses(array $orders): array
{
    $shown = [];
    foreach ($orders as $o) {
        $shown[(string)($o['orderId'] ?? '')] = (string)($o['status'] ?? '');
    }
    $created = array_keys(array_filter($shown, static fn (string $s): bool => $s === 'CREATED'));
    try {
        $packed = warehouse_packed(array_map('strval', $created));
    } catch (PDOException $e) {
        error_log('shop: the warehouse\'s table cannot be read: ' . $e->getMessage());
        $packed = [];
    }
    foreach ($packed as $id => $_) {
        $shown[(string)$id] = 'PACKED';
    }
    return $shown;
}

/** The label of status $status and whether the shop offers to cancel. */
function shop_order_status(string $status): array
{
    return SHOP_ORDER_STATUSES[$status] ?? ['label' => strtolower($status), 'cancel' => false];
}

/** Render the order page; $auth is 'session' or 'bearer'. */
function shop_order_page(string $auth): void
{
    shop_session_start();
    shop_require_customer();
    $orderId = shop_order_id($_GET);
    $key = $orderId !== null ? shop_cancel_key($orderId) : null;
    $csrf = shop_csrf_token();
    $cookie = session_name() . '=' . session_id();
    session_write_close();

    [$status, $order] = $orderId !== null ?
        shop_fetch_order($orderId, shop_customer_headers($cookie, $auth)) : [404, null];
    if ($order === null) {
        http_response_code($status === 404 ? 404 : 502);
        shop_page_start('Order');
        echo '<p class="error" id="order-error">' . ($status === 404 ?
            'No such order of yours.' : h("The order cannot be shown now (status $status): reload the page.")) .
            "</p>\n";
        shop_page_end();
        return;
    }
    $cancelled = ($order['status'] ?? '') === 'CANCELLED';
    // The service's status joined to the warehouse's (PACKED).
    $shown = shop_shown_statuses([$order])[$orderId] ?? (string)($order['status'] ?? '');
    // Offered only while the order's status allows (SHOP_ORDER_STATUSES).
    $show = shop_order_status($shown);
    shop_page_start("Order $orderId");
    ?>
<table id="items">
  <thead><tr><th>SKU</th><th>Price</th><th>Qty</th></tr></thead>
  <tbody>
<?php foreach ($order['items'] ?? [] as $i): ?>
    <tr><td><?= h((string)$i['sku']) ?></td><td><?= h(shop_money((int)$i['unitPrice'], (string)$order['currency'])) ?></td>
      <td><?= h((int)$i['qty']) ?></td></tr>
<?php endforeach; ?>
  </tbody>
</table>
<p>Total: <strong><?= h(shop_money((int)$order['amount'], (string)$order['currency'])) ?></strong>;
  status <strong id="order-status"><?= h($shown) ?></strong></p>
<div id="order" data-order-id="<?= h($orderId) ?>" data-key="<?= h((string)$key) ?>" data-auth="<?= h($auth) ?>"
     data-orders-url="<?= h(shop_config()['orders_url']) ?>" data-status="<?= h($shown) ?>">
<?php if ($cancelled): ?>
  <p id="status" data-outcome="cancelled">This order is cancelled.</p>
<?php elseif (!$show['cancel']): ?>
  <p id="status" data-outcome="closed">This order is <?= h($show['label']) ?>: it can no longer be cancelled here.</p>
<?php else: ?>
  <p>Cancelling puts the items back on the shelf; a payment is refunded separately.</p>
  <button type="button" id="cancel" hidden>Cancel this order</button>
  <p id="status" role="status" aria-live="polite"></p>
  <noscript>
    <form method="post" action="/order-cancel.php">
      <input type="hidden" name="csrf" value="<?= h($csrf) ?>">
      <input type="hidden" name="id" value="<?= h($orderId) ?>">
      <input type="hidden" name="via" value="<?= h($auth) ?>">
      <button type="submit" id="cancel-server">Cancel this order</button>
    </form>
  </noscript>
<?php endif; ?>
</div>
<?php if ($show['cancel']): ?>
<script type="module" src="/assets/order.mjs"></script>
<?php endif; ?>
<p><a href="/">Back to the products</a></p>
<?php
    shop_page_end();
}
