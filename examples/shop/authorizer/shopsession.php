<?php

// The shop's session rules, in one place for everything that reads the
// customer's session: the pages (lib/shop.php), the session authorizer
// (session.php) and the token endpoint (public/token.php).
//
//  - One idle limit: `session_idle` seconds in the shop's ini (default
//    1800).  Every page stamps the session with the time of the
//    customer's last page ($_SESSION['seen']); a session whose stamp is
//    older than the limit is expired for everyone: the authorizer and
//    token.php refuse it, and the next page destroys it before anything
//    else (it never comes back to life by being touched).  A session
//    that holds anything but has no stamp counts as expired.
//  - Reading is not creating: the authorizer and token.php read a session
//    only when the cookie names one that exists, without locking it or
//    writing it back, so a bogus cookie leaves no file behind.
//  - Old sessions are removed: the pages turn on PHP's session garbage
//    collector (probability 1 / `session_gc_divisor`, default 100) with
//    session.gc_maxlifetime = the idle limit, so files of sessions idle
//    past the limit are deleted whatever save_path the pool uses.

declare(strict_types=1);

const SHOP_SESSION_NAME = 'idemshop';
const SHOP_SESSION_IDLE = 1800;
const SHOP_SESSION_GC_DIVISOR = 100;

/**
 * The idle limit in seconds: `session_idle` of the shop's ini, 60 s to
 * 30 days; 1800 when it is not set.
 *
 * @param array<string, string> $config
 */
function shop_session_idle(array $config): int
{
    $v = $config['session_idle'] ?? '';
    if ($v === '') {
        return SHOP_SESSION_IDLE;
    }
    $n = filter_var($v, FILTER_VALIDATE_INT, ['options' => ['min_range' => 60, 'max_range' => 2592000]]);
    if ($n === false) {
        throw new RuntimeException("session_idle = $v: give seconds, 60 to 2592000");
    }
    return $n;
}

/**
 * Whether session data $data is past the idle limit at $now: its stamp
 * is older than $idle seconds, or it holds something and has no stamp.
 * An empty session (just made) is not.
 *
 * @param array<mixed> $data
 */
function shop_session_stale(array $data, int $idle, int $now): bool
{
    if ($data === []) {
        return false;
    }
    $seen = $data['seen'] ?? null;
    return !is_int($seen) || $now - $seen > $idle;
}

/**
 * Set PHP's session garbage collector for the pages' session_start():
 * sessions idle past $idle are removed with probability 1 / divisor per
 * page.  gc_maxlifetime stays what the pool fixed when it fixed it
 * (php_admin_value): keep it equal to session_idle there.
 *
 * @param array<string, string> $config
 */
function shop_session_gc_setup(array $config, int $idle): void
{
    $d = filter_var($config['session_gc_divisor'] ?? SHOP_SESSION_GC_DIVISOR, FILTER_VALIDATE_INT,
        ['options' => ['min_range' => 1, 'max_range' => 1000000]]);
    if ($d === false) {
        throw new RuntimeException('session_gc_divisor: give a whole number, 1 to 1000000');
    }
    ini_set('session.gc_probability', '1');
    ini_set('session.gc_divisor', (string)$d);
    ini_set('session.gc_maxlifetime', (string)$idle);
}

/**
 * The file of session $id when the files handler keeps the sessions
 * (save_path "[N;[MODE;]]DIR", N levels of subdirectories), else null.
 */
function shop_session_file(string $id): ?string
{
    if (ini_get('session.save_handler') !== 'files') {
        return null;
    }
    $parts = explode(';', (string)ini_get('session.save_path'));
    $dir = end($parts);
    if ($dir === '') {
        $dir = sys_get_temp_dir();
    }
    $depth = count($parts) > 1 ? (int)$parts[0] : 0;
    for ($i = 0; $i < $depth && $i < strlen($id); $i++) {
        $dir .= '/' . $id[$i];
    }
    return "$dir/sess_$id";
}

/**
 * The data of the session the request's cookie names, read without
 * creating, locking or writing a session; or a string saying why there
 * is none ("no shop session", "the shop session has expired").
 *
 * @return array<mixed>|string
 */
function shop_session_read(int $idle): array|string
{
    $id = $_COOKIE[SHOP_SESSION_NAME] ?? null;
    // PHP's own session ids (session.sid_bits_per_character 4-6).
    if (!is_string($id) || preg_match('/\A[A-Za-z0-9,-]{22,256}\z/', $id) !== 1) {
        return 'no shop session';
    }
    // The files handler makes a file for any id it is asked to read:
    // look first.
    $file = shop_session_file($id);
    if ($file !== null) {
        clearstatcache();
        if (!is_file($file)) {
            return 'no shop session';
        }
    }
    session_name(SHOP_SESSION_NAME);
    session_id($id);
    if (!session_start(['read_and_close' => true, 'use_cookies' => false,
            'use_strict_mode' => true, 'cache_limiter' => '', 'gc_probability' => 0])) {
        return 'no shop session';
    }
    $data = $_SESSION;
    $_SESSION = [];
    if (session_id() !== $id) {
        // Gone since the look: strict mode read a new, empty session.
        $new = shop_session_file(session_id());
        if ($new !== null && @filesize($new) === 0) {
            @unlink($new);
        }
        return 'no shop session';
    }
    if (shop_session_stale($data, $idle, time())) {
        return 'the shop session has expired';
    }
    return $data;
}
