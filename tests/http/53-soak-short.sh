#!/usr/bin/env bash
# A 60 s soak (tests/soak/run, `tools/dev soak` for longer runs): creates,
# replays, conflicts, GETs and final rejections through lighttpd and
# Apache while the workers are recycled every 50 requests; the
# invariants are checked every 20 s and at the end (one order per key,
# stock conserved, no PROCESSING committed, every 201's orderId exists).
export SOAK_NAME=53-soak-short
exec "$(dirname -- "$0")/../soak/run" --seconds 60 --check-every 20
