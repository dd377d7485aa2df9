<?php

// The warehouse's webhook endpoint (lib/warehouse.php): idemorders'
// relay delivers the order events here, signed with the secret in the
// file the shop's webhook_secret_file names.  No session, no CSRF token:
// the signature is what it believes.

declare(strict_types=1);

require __DIR__ . '/../lib/warehouse.php';

warehouse_receive();
