<?php

// "My orders" on the session shop (lib/my-orders.php): the list comes
// from the same origin's /orders with the customer's session cookie, and
// the page's script cancels with it too.

declare(strict_types=1);

require __DIR__ . '/../lib/my-orders.php';

shop_my_orders_page('session');
