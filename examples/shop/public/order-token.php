<?php

// An order of the signed-in customer on the bearer shop, with "Cancel
// this order" (lib/order.php): the page fetches a token from /token.php
// and cancels with "Authorization: Bearer" (and no cookie).

declare(strict_types=1);

require __DIR__ . '/../lib/order.php';

shop_order_page('bearer');
