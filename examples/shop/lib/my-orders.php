<?php

// "My orders", for the session shop (my-orders.php) and the bearer shop
// (my-orders-token.php): the signed-in customer's own orders from
// GET /orders as that customer, newest first, a page at a time, each
// with its status and, while it can be cancelled, a Cancel button.
//
// Each button's cancel has ONE Idempotency-Key, the same as the order
// page's (shop_cancel_key, lib/order.php): made here on the server when
// the button is first rendered and kept in the session with the order.
// The row carries it for the page's script (assets/my-orders.mjs,
// clients/js); the button is also a plain form to order-cancel.php, which
// reads the same key from the session (clients/php).  A double click, a
// retry, a reload, a second tab and the form without JavaScript all send
// that key, so the order's stock goes back once.

declare(strict_types=1);

require_once __DIR__ . '/order.php';

/** Orders a page shows by default, and at most (?limit=N). */
const SHOP_ORDERS_PAGE = 10;
const SHOP_ORDERS_PAGE_MAX = 50;

/**
 * GET /orders as the customer: [status, the list ({"data": [...],
 * "has_more": bool}) or null].  $cursor is ['starting_after' => id] or
 * ['ending_before' => id] or [].
 *
 * @param array<string, string> $headers
 * @param array<string, string> $cursor
 * @return array{int, ?array<string, mixed>}
 */
function shop_list_orders(array $headers, int $limit, array $cursor): array
{
    $url = rtrim(shop_orders_url_here(), '/') . '?' .
        http_build_query(['limit' => $limit] + $cursor, '', '&', PHP_QUERY_RFC3986);
    [$status, $list] = shop_get_json($url, $headers);
    if ($list !== null && !is_array($list['data'] ?? null)) {
        return [502, null];
    }
    return [$status, $list];
}

/** Render "My orders"; $auth is 'session' or 'bearer'. */
function shop_my_orders_page(string $auth): void
{
    shop_session_start();
    shop_require_customer();
    $limit = filter_var($_GET['limit'] ?? SHOP_ORDERS_PAGE, FILTER_VALIDATE_INT,
        ['options' => ['min_range' => 1, 'max_range' => SHOP_ORDERS_PAGE_MAX]]);
    $limit = $limit === false ? SHOP_ORDERS_PAGE : $limit;
    $after = shop_order_id(['id' => $_GET['after'] ?? null]);
    $before = $after === null ? shop_order_id(['id' => $_GET['before'] ?? null]) : null;
    $cursor = $after !== null ? ['starting_after' => $after] :
        ($before !== null ? ['ending_before' => $before] : []);
    $csrf = shop_csrf_token();
    $cookie = session_name() . '=' . session_id();
    // The authorizer reads this session: release its lock before calling.
    session_write_close();

    [$status, $list] = shop_list_orders(shop_customer_headers($cookie, $auth), $limit, $cursor);
    if ($list === null) {
        http_response_code($status === 401 ? 401 : 502);
        shop_page_start('My orders');
        echo '<p class="error" id="orders-error">' . ($status === 401 ?
            'You are signed out: sign in again to see your orders.' :
            h("Your orders cannot be shown now (status $status): reload the page.")) . "</p>\n";
        shop_page_end();
        return;
    }

    // The keys of the buttons this page shows, made now and kept.
    $orders = array_values(array_filter($list['data'], 'is_array'));
    // The service's status joined to the warehouse's (PACKED).
    $shown = shop_shown_statuses($orders);
    $keys = [];
    shop_session_start();
    foreach ($orders as $o) {
        $id = (string)($o['orderId'] ?? '');
        if (shop_order_id(['id' => $id]) !== null && shop_order_status($shown[$id] ?? '')['cancel']) {
            $keys[$id] = shop_cancel_key($id);
        }
    }
    session_write_close();

    // Newest first in either direction; has_more is about the direction
    // the page was asked for (Stripe's convention).
    $more = ($list['has_more'] ?? false) === true;
    $first = $orders !== [] ? (string)$orders[0]['orderId'] : null;
    $last = $orders !== [] ? (string)$orders[count($orders) - 1]['orderId'] : null;
    $older = $last !== null && ($before !== null || $more);
    $newer = $first !== null && ($after !== null || ($before !== null && $more));
    $orderPage = $auth === 'bearer' ? '/order-token.php' : '/order.php';
    $self = $auth === 'bearer' ? '/my-orders-token.php' : '/my-orders.php';
    $query = static fn (array $q): string => $self . '?' . http_build_query(
        ($limit !== SHOP_ORDERS_PAGE ? ['limit' => $limit] : []) + $q);

    shop_page_start('My orders');
    ?>
<p>Cancelling an order puts its items back on the shelf; a payment is refunded separately.</p>
<table id="orders" data-auth="<?= h($auth) ?>" data-orders-url="<?= h(shop_config()['orders_url']) ?>">
  <colgroup><col class="id"><col class="placed"><col class="total"><col class="status"><col class="act"><col></colgroup>
  <thead><tr><th>Order</th><th>Placed</th><th>Total</th><th>Status</th><th></th><th></th></tr></thead>
  <tbody>
<?php foreach ($orders as $o):
        $id = (string)($o['orderId'] ?? '');
        $st = $shown[$id] ?? (string)($o['status'] ?? '');
        $show = shop_order_status($st);
        $key = $keys[$id] ?? null; ?>
    <tr data-order-id="<?= h($id) ?>" data-status="<?= h($st) ?>"<?= $key !== null ? ' data-key="' . h($key) . '"' : '' ?>>
      <td><a href="<?= h($orderPage) ?>?id=<?= h($id) ?>"><?= h($id) ?></a></td>
      <td><?= h(str_replace('T', ' ', substr((string)($o['createdAt'] ?? ''), 0, 16))) ?></td>
      <td><?= h(shop_money((int)($o['amount'] ?? 0), (string)($o['currency'] ?? ''))) ?></td>
      <td class="status"><?= h($show['label']) ?></td>
      <td>
<?php if ($key !== null): ?>
        <form method="post" action="/order-cancel.php" class="inline">
          <input type="hidden" name="csrf" value="<?= h($csrf) ?>">
          <input type="hidden" name="id" value="<?= h($id) ?>">
          <input type="hidden" name="via" value="<?= h($auth) ?>">
          <input type="hidden" name="back" value="list">
          <button type="submit" class="cancel">Cancel</button>
        </form>
<?php endif; ?>
      </td>
      <td class="message" role="status" aria-live="polite"></td>
    </tr>
<?php endforeach; ?>
  </tbody>
</table>
<?php if ($orders === []): ?>
<p id="no-orders">No orders<?= $cursor !== [] ? ' on this page' : ' yet' ?>.</p>
<?php endif; ?>
<p class="paging">
<?php if ($newer): ?>
  <a id="prev" href="<?= h($query(['before' => $first])) ?>">Newer orders</a>
<?php endif; ?>
<?php if ($older): ?>
  <a id="next" href="<?= h($query(['after' => $last])) ?>">Older orders</a>
<?php endif; ?>
</p>
<script type="module" src="/assets/my-orders.mjs"></script>
<?php
    shop_page_end();
}
