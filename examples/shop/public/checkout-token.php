<?php

// Checkout on the bearer shop: the page first fetches a token for the
// signed-in customer from /token.php, then sends the order with
// "Authorization: Bearer <token>" (and no cookie): /orders there trusts
// the token only.

declare(strict_types=1);

require __DIR__ . '/../lib/checkout.php';

shop_checkout_page('bearer');
