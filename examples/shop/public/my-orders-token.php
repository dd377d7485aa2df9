<?php

// "My orders" on the bearer shop (lib/my-orders.php): the list comes from
// /orders with a token for the customer, and the page's script fetches a
// token from /token.php and cancels with "Authorization: Bearer" (and no
// cookie).

declare(strict_types=1);

require __DIR__ . '/../lib/my-orders.php';

shop_my_orders_page('bearer');
