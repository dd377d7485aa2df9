<?php

// Checkout on the session shop: the browser sends the order to the same
// origin's /orders; the session cookie goes with it and the web server's
// session authorizer makes the signed-in customer the principal.

declare(strict_types=1);

require __DIR__ . '/../lib/checkout.php';

shop_checkout_page('session');
