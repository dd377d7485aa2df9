<?php

// The cart, kept in the session: GET shows it; POST (with the CSRF token)
// adds, removes or empties; "ordered" closes the checkout the browser has
// just placed, so that the next checkout is a new order (with a new key);
// "refused" drops a checkout the service refused for good (out of stock,
// a changed price), so that the next render makes a new one.

declare(strict_types=1);

require __DIR__ . '/../lib/shop.php';

shop_session_start();
if ($_SERVER['REQUEST_METHOD'] === 'POST') {
    shop_csrf_check();
    $action = $_POST['action'] ?? '';
    $sku = is_string($_POST['sku'] ?? null) ? $_POST['sku'] : '';
    $cart = shop_cart();
    if ($action === 'add' && preg_match('/^[A-Za-z0-9._-]{1,64}$/', $sku)) {
        $qty = filter_var($_POST['qty'] ?? 1, FILTER_VALIDATE_INT,
            ['options' => ['min_range' => 1, 'max_range' => 10000]]);
        if ($qty !== false && shop_stock([$sku]) !== []) {
            $cart[$sku] = min(10000, ($cart[$sku] ?? 0) + $qty);
        }
        $_SESSION['cart'] = $cart;
    } elseif ($action === 'remove') {
        unset($cart[$sku]);
        $_SESSION['cart'] = $cart;
    } elseif ($action === 'empty') {
        $_SESSION['cart'] = [];
    } elseif ($action === 'ordered' || $action === 'refused') {
        $ref = is_string($_POST['checkout'] ?? null) ? $_POST['checkout'] : '';
        $action === 'ordered' ? shop_checkout_placed($ref) : shop_checkout_refused($ref);
        http_response_code(204);
        exit;
    }
    header('Location: /cart.php', true, 303);
    exit;
}

$co = shop_cart_order();
$csrf = shop_csrf_token();
session_write_close();

shop_page_start('Cart');
?>
<?php if (isset($co['lines'])): ?>
<table id="cart">
  <thead><tr><th>SKU</th><th>Price</th><th>Qty</th><th>Total</th><th></th></tr></thead>
  <tbody>
<?php foreach ($co['lines'] as $l): ?>
    <tr data-sku="<?= h($l['sku']) ?>">
      <td><?= h($l['sku']) ?></td>
      <td><?= h(shop_money($l['unit_price'], $l['currency'])) ?></td>
      <td><?= h($l['qty']) ?></td>
      <td><?= h(shop_money($l['total'], $l['currency'])) ?></td>
      <td>
        <form method="post" action="/cart.php" class="inline">
          <input type="hidden" name="csrf" value="<?= h($csrf) ?>">
          <input type="hidden" name="action" value="remove">
          <input type="hidden" name="sku" value="<?= h($l['sku']) ?>">
          <button type="submit">Remove</button>
        </form>
      </td>
    </tr>
<?php endforeach; ?>
  </tbody>
</table>
<?php endif; ?>
<?php if (isset($co['error'])): ?>
<p class="error"><?= h($co['error']) ?></p>
<?php else: ?>
<p>Total: <strong id="total"><?= h(shop_money($co['order']['amount'], $co['order']['currency'])) ?></strong></p>
<p><a class="button" href="/checkout.php" id="checkout">Checkout</a></p>
<?php endif; ?>
<?php if (shop_cart() !== []): ?>
<form method="post" action="/cart.php">
  <input type="hidden" name="csrf" value="<?= h($csrf) ?>">
  <input type="hidden" name="action" value="empty">
  <button type="submit" id="empty-cart">Empty the cart</button>
</form>
<?php endif; ?>
<?php
shop_page_end();
