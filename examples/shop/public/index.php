<?php

// The products, from the stock table, each with an "Add to cart" form.

declare(strict_types=1);

require __DIR__ . '/../lib/shop.php';

shop_session_start();
$q = is_string($_GET['q'] ?? null) ? trim($_GET['q']) : '';
$products = shop_products($q);
$csrf = shop_csrf_token();
session_write_close();

shop_page_start('Products');
?>
<form method="get" action="/" class="search">
  <label>SKU starts with <input name="q" value="<?= h($q) ?>"></label>
  <button type="submit">Search</button>
</form>
<table id="products">
  <thead><tr><th>SKU</th><th>Price</th><th>In stock</th><th></th></tr></thead>
  <tbody>
<?php foreach ($products as $p): ?>
    <tr data-sku="<?= h($p['sku']) ?>">
      <td><?= h($p['sku']) ?></td>
      <td><?= h(shop_money($p['unit_price'], $p['currency'])) ?></td>
      <td class="available"><?= h($p['available']) ?></td>
      <td>
<?php if ($p['available'] > 0): ?>
        <form method="post" action="/cart.php" class="inline">
          <input type="hidden" name="csrf" value="<?= h($csrf) ?>">
          <input type="hidden" name="action" value="add">
          <input type="hidden" name="sku" value="<?= h($p['sku']) ?>">
          <input type="number" name="qty" value="1" min="1" max="<?= h(min(10000, $p['available'])) ?>" aria-label="quantity">
          <button type="submit" class="add">Add to cart</button>
        </form>
<?php else: ?>
        sold out
<?php endif; ?>
      </td>
    </tr>
<?php endforeach; ?>
  </tbody>
</table>
<?php if ($products === []): ?>
<p>No products.</p>
<?php endif; ?>
<?php
shop_page_end();
