<?php

// An order of the signed-in customer on the session shop, with "Cancel
// this order" (lib/order.php): the browser cancels it with clients/js on
// the same origin's /orders; the session cookie is the identity.

declare(strict_types=1);

require __DIR__ . '/../lib/order.php';

shop_order_page('session');
