<?php

// The shop's warehouse: the endpoint idemorders' relay delivers the
// order events to (public/warehouse.php), signed as Standard Webhooks
// sign.  It believes a delivery only when the signature made with the
// shared secret matches the exact bytes received and the timestamp is
// recent, and it acts once per webhook-id: the id is recorded in the
// shop's own database in the same transaction as the effect (the order
// packed), so that a redelivery (the relay sends at least once) finds
// the id and does nothing more.  A 2xx is sent only after the COMMIT.
//
//   order.created    the order is packed (a row in warehouse_packed);
//                    the order pages show it as "packed"
//   order.cancelled  recorded, nothing more (the service's CANCELLED is
//                    what the pages show)
//   another type     recorded, nothing more: a newer service may send
//                    types this shop does not know

declare(strict_types=1);

require_once __DIR__ . '/shop.php';

/** How far webhook-timestamp may be from now, in seconds (either way). */
const WAREHOUSE_TOLERANCE = 300;

/** The largest body the warehouse reads (an order is a few KiB). */
const WAREHOUSE_MAX_BODY = 1 << 20;

/**
 * The key of a secret as idemorders writes it ("whsec_" and base64 of the
 * key bytes), or null when it is not one.
 */
function warehouse_key(string $secret): ?string
{
    $secret = trim($secret);
    if (str_starts_with($secret, 'whsec_')) {
        $secret = substr($secret, 6);
    }
    $key = base64_decode($secret, true);
    return $key === false || strlen($key) < 16 ? null : $key;
}

/**
 * Check one delivery: null when it is genuine, else why not
 * ['status' => 4xx, 'reason' => text].  $signatures is the
 * webhook-signature header: space-separated "v1,<base64>" entries (more
 * than one while a secret is being replaced); one that matches is enough.
 * The comparison takes the same time whatever the bytes (hash_equals).
 *
 * @return ?array{status: int, reason: string}
 */
function warehouse_verify(string $key, string $id, string $timestamp, string $signatures,
    string $body, int $now): ?array
{
    if ($id === '' || strlen($id) > 255 || preg_match('/^[\x21-\x7e]+$/', $id) !== 1) {
        return ['status' => 400, 'reason' => 'webhook-id missing or not 1-255 visible ASCII'];
    }
    if (preg_match('/^[0-9]{1,12}$/', $timestamp) !== 1) {
        return ['status' => 400, 'reason' => 'webhook-timestamp missing or not Unix seconds'];
    }
    if (abs($now - (int)$timestamp) > WAREHOUSE_TOLERANCE) {
        return ['status' => 400, 'reason' => 'webhook-timestamp more than ' .
            WAREHOUSE_TOLERANCE . ' s from now (a replayed or delayed delivery)'];
    }
    if (trim($signatures) === '') {
        return ['status' => 400, 'reason' => 'webhook-signature missing'];
    }
    $expected = base64_encode(hash_hmac('sha256', "$id.$timestamp.$body", $key, true));
    $match = false;
    foreach (preg_split('/ +/', trim($signatures)) ?: [] as $entry) {
        [$version, $sig] = array_pad(explode(',', $entry, 2), 2, '');
        // Every entry is compared: no early exit on the first match.
        if ($version === 'v1' && hash_equals($expected, $sig)) {
            $match = true;
        }
    }
    return $match ? null : ['status' => 401, 'reason' => 'no webhook-signature matches'];
}

/**
 * What a verified body asks: [type, order id] or null when it is not an
 * event of idemorders ({"type": ..., "data": {"orderId": "o-N", ...}}).
 *
 * @return ?array{string, string}
 */
function warehouse_event(string $body): ?array
{
    $e = json_decode($body, true, 64);
    if (!is_array($e) || !is_string($e['type'] ?? null) || !is_array($e['data'] ?? null)) {
        return null;
    }
    $type = $e['type'];
    $orderId = $e['data']['orderId'] ?? null;
    if (preg_match('/^[a-z0-9._-]{1,64}$/', $type) !== 1 || !is_string($orderId) ||
        preg_match('/^o-[1-9][0-9]{0,18}$/', $orderId) !== 1) {
        return null;
    }
    return [$type, $orderId];
}

/**
 * Act on a verified event once: record its webhook-id and the effect in
 * one transaction.  Returns true when this delivery acted, false when
 * the id was there already (a redelivery: nothing done).  The INSERT of
 * the id is the only "seen" test: a second delivery running at the same
 * time waits for the first one's row and then finds it (1062).  An order
 * packed already stays as it was (its first packing's webhook-id).
 */
function warehouse_apply(PDO $db, string $id, string $type, string $orderId): bool
{
    $db->beginTransaction();
    try {
        $db->prepare('INSERT INTO warehouse_webhooks (webhook_id, type, order_id, received_at)
            VALUES (?, ?, ?, NOW(6))')->execute([$id, $type, $orderId]);
    } catch (PDOException $e) {
        $db->rollBack();
        if ((int)($e->errorInfo[1] ?? 0) === 1062) {
            return false;
        }
        throw $e;
    }
    try {
        if ($type === 'order.created') {
            $db->prepare('INSERT INTO warehouse_packed (order_id, webhook_id, packed_at)
                VALUES (?, ?, NOW(6)) ON DUPLICATE KEY UPDATE order_id = order_id')
                ->execute([$orderId, $id]);
        }
        $db->commit();
    } catch (PDOException $e) {
        if ($db->inTransaction()) {
            $db->rollBack();
        }
        throw $e;
    }
    return true;
}

/**
 * The orders of $orderIds the warehouse packed, as a set (id => true).
 *
 * @param list<string> $orderIds
 * @return array<string, true>
 */
function warehouse_packed(array $orderIds): array
{
    if ($orderIds === []) {
        return [];
    }
    $st = shop_own_db()->prepare('SELECT order_id FROM warehouse_packed WHERE order_id IN (' .
        implode(',', array_fill(0, count($orderIds), '?')) . ')');
    $st->execute(array_values($orderIds));
    return array_fill_keys($st->fetchAll(PDO::FETCH_COLUMN), true);
}

/** Answer $status with a line of text and stop. */
function warehouse_answer(int $status, string $text, array $headers = []): never
{
    http_response_code($status);
    header('Content-Type: text/plain; charset=utf-8');
    header('Cache-Control: no-store');
    foreach ($headers as $h) {
        header($h);
    }
    echo $text, "\n";
    exit;
}

/** The page: verify the delivery, act once, answer. */
function warehouse_receive(): never
{
    if (($_SERVER['REQUEST_METHOD'] ?? '') !== 'POST') {
        warehouse_answer(405, 'POST a webhook here.', ['Allow: POST']);
    }
    $len = $_SERVER['CONTENT_LENGTH'] ?? '';
    if ($len !== '' && (int)$len > WAREHOUSE_MAX_BODY) {
        warehouse_answer(413, 'The body is larger than the warehouse reads.');
    }
    $body = (string)file_get_contents('php://input', false, null, 0, WAREHOUSE_MAX_BODY + 1);
    if (strlen($body) > WAREHOUSE_MAX_BODY) {
        warehouse_answer(413, 'The body is larger than the warehouse reads.');
    }
    $file = shop_config()['webhook_secret_file'] ?? '';
    $secret = $file !== '' && is_readable($file) ? file_get_contents($file) : false;
    $key = is_string($secret) ? warehouse_key($secret) : null;
    if ($key === null) {
        error_log('warehouse: webhook_secret_file does not hold a whsec_ secret');
        warehouse_answer(503, 'The warehouse has no webhook secret.', ['Retry-After: 60']);
    }
    $id = (string)($_SERVER['HTTP_WEBHOOK_ID'] ?? '');
    $bad = warehouse_verify($key, $id, (string)($_SERVER['HTTP_WEBHOOK_TIMESTAMP'] ?? ''),
        (string)($_SERVER['HTTP_WEBHOOK_SIGNATURE'] ?? ''), $body, time());
    if ($bad !== null) {
        warehouse_answer($bad['status'], 'Refused: ' . $bad['reason'] . '.');
    }
    $event = warehouse_event($body);
    if ($event === null) {
        warehouse_answer(400, 'Refused: the body is not an order event.');
    }
    [$type, $orderId] = $event;
    try {
        $acted = warehouse_apply(shop_own_db(), $id, $type, $orderId);
    } catch (PDOException $e) {
        error_log('warehouse: ' . $e->getMessage());
        warehouse_answer(503, 'The warehouse cannot record it now.', ['Retry-After: 10']);
    }
    warehouse_answer(200, $acted ? "$type $orderId: done." : "$id: received before, nothing done again.");
}
