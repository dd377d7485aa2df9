# bench/bench-events.sh -- `tools/dev bench --events`: what the
# transactional outbox and `idemorders relay` cost, and how fast events
# reach a receiver.
# shellcheck shell=bash
#
#   tools/dev bench --events [--quick] [--keep] [--out DIR]
#
# On the bench stack (bench/bench.sh: its own ports, a fresh database,
# a build without fault injection, 4 workers), with the relay
# (`idemorders relay`, the stack's config: log_level = warning,
# relay_concurrency 8) delivering to tests/lib/webhook-receiver.cjs (node,
# every delivery verified by the npm standardwebhooks library, one log
# line each) on the bench stack's webhook port.
#
# Every create writes its event in its own transaction: no setting turns
# that off (CONTRACT, "Events").  What a shop chooses is whether a relay
# delivers them (webhook_url set, the unit enabled).  So the runs, wrk
# creates through lighttpd at c16 (bench/orders.lua), BENCH_SECONDS each:
#
#   no-outbox      the baseline "events off", bench only: the events
#                  table swapped for an empty BLACKHOLE one (the plugin
#                  ha_blackhole, loaded by the bench's database server) during the run
#                  (the INSERT ... SELECT runs and answers one row, nothing
#                  is stored), the relay stopped;
#   relay-stopped  events stored, no relay (no webhook endpoint): they pile
#                  up pending;
#   relay-on       events stored and delivered while the creates run: the
#                  product with webhooks.  Every event of the run is timed
#                  from its created_at (written in the order's transaction,
#                  just before COMMIT) to the receiver's 2xx (its log's
#                  answeredAt, the same host clock): p50 and p99.
#
# After relay-stopped, the relay starts on its backlog: relay throughput
# is those events over the time from its start until none is pending
# (polled every 0.2 s).  The kinds alternate over BENCH_EVENTS_ROUNDS (2)
# rounds, the order reversed in every other one; ratios are of sums.
# Last, idle: mariadbd's CPU (and the relay's) over BENCH_EVENTS_IDLE (20)
# seconds with the relay running and nothing to deliver, then as long
# with it stopped, and the statements the server ran meanwhile
# (Questions).
#
# Report: DIR/events.md and .tsv (--quick: quick-events.*, 1 round, 2 s
# runs, 3 s idle; DIR: var/bench/results, or --out DIR).  Nothing
# asserts a speed: the targets are reported.  Knobs: BENCH_SECONDS,
# BENCH_EVENTS_ROUNDS, BENCH_EVENTS_IDLE, BENCH_WORKERS.

run_bench_events() {
	BENCH_QUICK=0 BENCH_KEEP=0 BENCH_OUT=
	# shellcheck disable=SC2034
	while [[ $# -gt 0 ]]; do
		case $1 in
		--quick)	BENCH_QUICK=1 ;;
		--keep)		BENCH_KEEP=1 ;;
		--out)		[[ $# -ge 2 ]] || die "--out needs a directory"
				BENCH_OUT=$2; shift ;;
		*)		die "usage: $PROG bench --events [--quick] [--keep] [--out DIR]" ;;
		esac
		shift
	done
	export IDEMORDERS_STACK=bench
	stack_vars
	PACKAGES+=(wrk jq nodejs)
	# shellcheck disable=SC2034
	BENCH_SERVERS=lighttpd
	# shellcheck disable=SC2034
	BENCH_PROFILE=0
	if [[ $BENCH_QUICK == 1 ]]; then
		BENCH_SECONDS=${BENCH_SECONDS:-2}
		BENCH_EVENTS_ROUNDS=${BENCH_EVENTS_ROUNDS:-1}
		BENCH_EVENTS_IDLE=${BENCH_EVENTS_IDLE:-3}
		BENCH_NAME=quick-events
	else
		BENCH_SECONDS=${BENCH_SECONDS:-10}
		BENCH_EVENTS_ROUNDS=${BENCH_EVENTS_ROUNDS:-2}
		BENCH_EVENTS_IDLE=${BENCH_EVENTS_IDLE:-20}
		BENCH_NAME=events
	fi
	BENCH_WORKERS=${BENCH_WORKERS:-4}
	BENCH_WRK_THREADS=${BENCH_WRK_THREADS:-2}
	: "${BENCH_OUT:=$VAR/results}"
	[[ $BENCH_SECONDS =~ ^[0-9]+$ && $BENCH_SECONDS -gt 0 ]] ||
	    die "BENCH_SECONDS must be a positive number of seconds"
	[[ $BENCH_EVENTS_ROUNDS =~ ^[0-9]+$ && $BENCH_EVENTS_ROUNDS -gt 0 ]] ||
	    die "BENCH_EVENTS_ROUNDS must be a positive number"
	[[ $BENCH_EVENTS_IDLE =~ ^[0-9]+$ && $BENCH_EVENTS_IDLE -gt 0 ]] ||
	    die "BENCH_EVENTS_IDLE must be a positive number of seconds"
	with_lock bench_events_main
}

# ------------------------------------------------------------ the receiver

# The verifier the tests' receiver uses (tests/lib/webhooks.sh's version,
# in the same directory), installed once.
ev_receiver_install() {
	local v dir=$REPO/var/node-webhooks have
	v=$(sed -n 's/^STANDARDWEBHOOKS_VERSION=//p' "$REPO/tests/lib/webhooks.sh")
	[[ -n $v ]] || die "bench --events: no STANDARDWEBHOOKS_VERSION in tests/lib/webhooks.sh"
	have=$(node -p "try { require('$dir/node_modules/standardwebhooks/package.json').version } catch { '' }" 2>/dev/null)
	[[ $have == "$v" ]] && return 0
	say "bench --events: npm install standardwebhooks@$v in ${dir#"$REPO"/}"
	mkdir -p "$dir"
	[[ -f $dir/package.json ]] || echo '{ "private": true }' >"$dir/package.json"
	(cd "$dir" && timeout 300 npm install --no-audit --no-fund --loglevel=error \
	    "standardwebhooks@$v") >"$BENCH_LOG/npm.out" 2>&1 ||
	    { show_log "$BENCH_LOG/npm.out"; die "bench --events: npm install failed"; }
}

ev_receiver_start() {
	local i
	need_free_port "$WEBHOOK_PORT" "the webhook receiver"
	EV_RECEIVER_LOG=$BENCH_LOG/receiver.jsonl
	: >"$EV_RECEIVER_LOG"
	NODE_PATH=$REPO/var/node-webhooks/node_modules setsid node \
	    "$REPO/tests/lib/webhook-receiver.cjs" "$WEBHOOK_PORT" \
	    "$WEBHOOK_SECRET_FILE" "$EV_RECEIVER_LOG" </dev/null \
	    >"$BENCH_LOG/receiver.out" 2>&1 9>&- &
	EV_RECEIVER_PID=$!
	for ((i = 0; i < 100; i++)); do
		[[ $(curl -s -o /dev/null -m 2 -w '%{http_code}' \
		    "http://127.0.0.1:$WEBHOOK_PORT/_health") == 200 ]] && return 0
		sleep 0.1
	done
	show_log "$BENCH_LOG/receiver.out"
	die "bench --events: the receiver does not answer on port $WEBHOOK_PORT"
}

ev_receiver_stop() {
	[[ -n ${EV_RECEIVER_PID:-} ]] || return 0
	kill -TERM "$EV_RECEIVER_PID" 2>/dev/null || true
	wait "$EV_RECEIVER_PID" 2>/dev/null || true
	EV_RECEIVER_PID=
}

# ------------------------------------------------------------ the runs

ev_sql() { db_root -N -B "$DB_NAME" -e "$1"; }

ev_relay_start() {
	BENCH_RELAY=1 relay_start >/dev/null
	EV_RELAY_PID=$(pid_alive "$RELAY_PIDFILE" " relay -c ") ||
	    die "bench --events: the relay does not run"
}

ev_relay_stop() {
	relay_stop >/dev/null
	EV_RELAY_PID=
}

# Seconds (to 0.01) until no event is pending; at most 600.
ev_wait_delivered() {
	local t0 i
	t0=$(date +%s%N)
	for ((i = 0; i < 3000; i++)); do
		[[ $(ev_sql "SELECT COUNT(*) FROM events WHERE state <> 'delivered'") == 0 ]] && break
		sleep 0.2
	done
	[[ $i -lt 3000 ]] || die "bench --events: events still pending after 600 s: $(ev_sql \
	    "SELECT state, COUNT(*), MAX(last_error) FROM events GROUP BY state" | tr '\n\t' '; ')"
	awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'
}

# ev_metric NAME VALUE: one line of the events' figures.
ev_metric() { printf '%s\t%s\n' "$1" "$2" >>"$EV_TSV"; }

# The create runs of one kind.
ev_create() {
	bench_wrk ev "$1" lighttpd "$BENCH_HOT_C" create 201
}

ev_no_outbox() {
	local n0 n1
	n0=$(ev_sql "SELECT COUNT(*) FROM events")
	ev_sql "RENAME TABLE events TO events_bench_kept; CREATE TABLE events LIKE events_bench_kept;
	    ALTER TABLE events ENGINE=BLACKHOLE" ||
	    die "bench --events: cannot swap the events table for a BLACKHOLE one"
	ev_create no-outbox
	ev_sql "DROP TABLE events; RENAME TABLE events_bench_kept TO events" ||
	    die "bench --events: cannot put the events table back"
	n1=$(ev_sql "SELECT COUNT(*) FROM events")
	[[ $n0 == "$n1" ]] || die "bench --events: no-outbox stored events ($n0 -> $n1)"
}

# The server's counters that tell what a delivery costs it, "NAME VALUE".
ev_status() {
	ev_sql "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions',
	    'Com_commit', 'Innodb_log_writes', 'Innodb_data_fsyncs')"
}

# relay-stopped, then the relay on its backlog: its time, and the CPU of
# mariadbd, the relay and the receiver, the statements, COMMITs and
# redo log writes it took.
ev_stopped_and_drain() {
	local n secs s0 s1 d0 d1 r0 r1 v0 v1
	ev_create relay-stopped
	n=$(ev_sql "SELECT COUNT(*) FROM events WHERE state = 'pending'")
	bench_pids -
	s0=$(ev_status) d0=$(bench_ticks "$B_DB") v0=$(bench_ticks "$EV_RECEIVER_PID")
	ev_relay_start
	r0=$(bench_ticks "$EV_RELAY_PID")
	secs=$(ev_wait_delivered)
	s1=$(ev_status) d1=$(bench_ticks "$B_DB") v1=$(bench_ticks "$EV_RECEIVER_PID")
	r1=$(bench_ticks "$EV_RELAY_PID")
	ev_metric drain_events "$n"
	ev_metric drain_seconds "$secs"
	ev_metric drain_db_ticks $((d1 - d0))
	ev_metric drain_relay_ticks $((r1 - r0))
	ev_metric drain_receiver_ticks $((v1 - v0))
	# (the polls of ev_wait_delivered count in: 5 a second)
	awk -F'\t' 'FNR == NR { b[$1] = $2; next } { printf "drain_%s\t%d\n", $1, $2 - b[$1] }' \
	    <(printf '%s\n' "$s0") <(printf '%s\n' "$s1") >>"$EV_TSV"
	printf '  %-16s %7s events in %6s s: %8s events/s\n' relay-drain "$n" "$secs" \
	    "$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')"
}

# relay-on: the relay delivers while the creates run; every event of the
# run timed from created_at to the receiver's first verified 2xx.
ev_relay_on() {
	local from n
	from=$(ev_sql "SELECT COALESCE(MAX(id), 0) FROM events")
	ev_create relay-on
	ev_wait_delivered >/dev/null
	ev_sql "SET time_zone = '+00:00'; SELECT webhook_id,
	    ROUND(UNIX_TIMESTAMP(created_at) * 1000, 3) FROM events WHERE id > $from" \
	    >"$BENCH_LOG/created.$BENCH_N"
	jq -r 'select(.verified and (.status | type) == "number" and .status < 300) |
	    "\(.id)\t\(.answeredAt)"' "$EV_RECEIVER_LOG" |
	    awk -F'\t' 'FNR == NR { if (!($1 in got)) got[$1] = $2; next }
		($1 in got) { printf "%.3f\n", got[$1] - $2; n++ }
		!($1 in got) { miss++ }
		END { if (miss) print "missing " miss > "/dev/stderr" }' \
	    - "$BENCH_LOG/created.$BENCH_N" >>"$BENCH_LOG/latency.ms" ||
	    die "bench --events: latency join failed"
	n=$(wc -l <"$BENCH_LOG/created.$BENCH_N")
	ev_metric latency_events "$n"
}

# Idle: CPU ticks of mariadbd and of the relay, and Questions, over
# BENCH_EVENTS_IDLE seconds; KIND relay or norelay.
ev_idle() {
	local kind=$1 q0 q1 t0 t1 r0=0 r1=0
	bench_pids -
	q0=$(ev_sql "SHOW GLOBAL STATUS LIKE 'Questions'" | cut -f2)
	t0=$(bench_ticks "$B_DB")
	[[ -z ${EV_RELAY_PID:-} ]] || r0=$(bench_ticks "$EV_RELAY_PID")
	sleep "$BENCH_EVENTS_IDLE"
	t1=$(bench_ticks "$B_DB")
	[[ -z ${EV_RELAY_PID:-} ]] || r1=$(bench_ticks "$EV_RELAY_PID")
	q1=$(ev_sql "SHOW GLOBAL STATUS LIKE 'Questions'" | cut -f2)
	# (the two SHOW STATUS of the measurement itself: 2 questions)
	ev_metric "idle_${kind}_db_ticks" $((t1 - t0))
	ev_metric "idle_${kind}_relay_ticks" $((r1 - r0))
	ev_metric "idle_${kind}_questions" $((q1 - q0 - 1))
	printf '  idle %-8s %3s s: mariadbd %s ticks, relay %s ticks, %s statements\n' \
	    "$kind" "$BENCH_EVENTS_IDLE" $((t1 - t0)) $((r1 - r0)) $((q1 - q0 - 1))
}

# The receiver, then bench_end with the status the shell exits with.
bench_events_end() {
	local rc=$?
	set +e
	ev_receiver_stop
	(exit "$rc")
	bench_end
}

bench_events_main() {
	local start load r
	start=$(date +%s)
	load=$(cut -d' ' -f1 /proc/loadavg)
	bench_begin
	trap bench_events_end EXIT
	EV_TSV=$BENCH_LOG/events.tsv
	: >"$EV_TSV"
	: >"$BENCH_LOG/latency.ms"
	say "bench --events: load average $load; $BENCH_EVENTS_ROUNDS rounds of ${BENCH_SECONDS}s runs; idle ${BENCH_EVENTS_IDLE}s"
	ensure_packages
	ev_receiver_install
	bench_build
	# Debian's MariaDB ships BLACKHOLE as a plugin, not loaded: the bench
	# stack's server loads it at start (an INSTALL SONAME at run time
	# once failed with "Plugin '(null)' is not loaded").
	export DB_CNF_EXTRA="plugin_load_add = ha_blackhole"
	bench_stack_up
	[[ $(ev_sql "SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = 'BLACKHOLE'") =~ ^(YES|DEFAULT)$ ]] ||
	    die "bench --events: this MariaDB has no BLACKHOLE engine (ha_blackhole)"
	ev_receiver_start
	bench_warmup app 201
	for ((r = 1; r <= BENCH_EVENTS_ROUNDS; r++)); do
		echo "round $r"
		if ((r % 2 == 1)); then
			ev_no_outbox
			ev_stopped_and_drain
			ev_relay_on
			ev_relay_stop
		else
			ev_relay_start
			ev_relay_on
			ev_relay_stop
			ev_no_outbox
			ev_stopped_and_drain
			ev_relay_stop
		fi
	done
	echo "idle"
	ev_relay_start
	ev_idle relay
	ev_relay_stop
	ev_idle norelay
	ev_receiver_stop

	local md=$BENCH_OUT/$BENCH_NAME.md tsv=$BENCH_OUT/$BENCH_NAME.tsv
	bench_events_report "$load" $(($(date +%s) - start)) >"$md.tmp"
	mv -f "$md.tmp" "$md"
	cat "$BENCH_TSV" "$EV_TSV" >"$tsv.tmp" && mv -f "$tsv.tmp" "$tsv"
	echo
	cat "$md"
	echo
	say "bench --events: wrote $md and $tsv (raw output: ${BENCH_LOG#"$REPO"/})"
}

# ------------------------------------------------------------ the report

bench_events_report() {
	local load=$1 secs=$2 p50 p99 nlat
	read -r nlat p50 p99 < <(sort -n "$BENCH_LOG/latency.ms" | awk '{ v[NR] = $1 }
	    END { if (NR == 0) { print 0, 0, 0; exit }
		i50 = int(0.50 * NR + 0.999999); i99 = int(0.99 * NR + 0.999999)
		printf "%d %.1f %.1f\n", NR, v[i50 < 1 ? 1 : i50], v[i99 < 1 ? 1 : i99] }')
	cat <<EOF
# idemorders bench: events (the outbox and the relay)

\`tools/dev bench --events$([[ $BENCH_QUICK == 1 ]] && echo ' --quick')\` on $(date -u '+%Y-%m-%d %H:%M UTC'), ${secs} s in all; load average before the run: $load; $(nproc) cores.

$(bench_versions)
- bench stack: fresh database, build without fault injection,
  \`workers = $BENCH_WORKERS\`, \`log_level = warning\`; wrk -t$BENCH_WRK_THREADS -c$BENCH_HOT_C creates
  through lighttpd (bench/orders.lua), ${BENCH_SECONDS} s a run, $BENCH_EVENTS_ROUNDS round(s), kinds
  alternating; \`idemorders relay\` with the stack's config
  (\`relay_concurrency\` 8, \`event_poll\` 500 ms) delivering to
  tests/lib/webhook-receiver.cjs (node; every delivery verified with
  the npm standardwebhooks library and logged), all on the same cores.
- no-outbox: the events table swapped for a BLACKHOLE one during the run
  (bench only: no setting turns events off); relay-stopped: events
  stored, no relay; relay-on: events stored and delivered during the run.
- latency: from the event's \`created_at\` (written in the order's
  transaction, just before COMMIT) to the receiver's 2xx, for every event
  of the relay-on runs ($nlat).

EOF
	awk -F'\t' -v hz="$(getconf CLK_TCK)" -v idle="$BENCH_EVENTS_IDLE" \
	    -v p50="$p50" -v p99="$p99" -v nlat="$nlat" -f - "$BENCH_TSV" "$EV_TSV" <<'AWK'
function ms(v) { return v == "" ? "-" : sprintf("%.2f", v) }
FNR == NR {
	if ($1 != "ev") next
	rows[++nr] = $0
	N[$2] += $9; T[$2] += $8 / (($5 > 0) ? $5 : 1); U[$2] += $10; SE[$2] += $17
	DBUS[$2] += $14 * $8; RSP[$2] += $13 * $8; A[$2] += $8
	next
}
{ M[$1] += $2 }
function per(k) { return M["drain_events"] > 0 ? M[k] / M["drain_events"] : 0 }
function rate(k) { return T[k] > 0 ? A[k] / T[k] : 0 }
function yes(ok) { return ok ? "**met**" : "**missed**" }
END {
	print "## Runs\n"
	print "| run | c | req/s | p50 ms | p99 ms | answers | unexpected status | socket errors | CPU µs/req web | responders | MariaDB | other CPU % | steal % |"
	print "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	for (i = 1; i <= nr; i++) {
		split(rows[i], f, "\t")
		printf "| %s | %s | %.0f | %s | %s | %d | %d | %d | %s | %s | %s | %s | %s |\n",
		    f[2], f[4], f[5], ms(f[6]), ms(f[7]), f[8], f[10], f[17], f[12], f[13], f[14], f[18], (f[19] == "" ? "-" : f[19])
	}
	off = rate("no-outbox"); st = rate("relay-stopped"); on = rate("relay-on")
	drain = M["drain_seconds"] > 0 ? M["drain_events"] / M["drain_seconds"] : 0
	printf "\n## Targets (reported, not asserted; one run on a shared machine: read the ratios, not the rates)\n\n"
	print "| target | measured | |"
	print "|---|---|---|"
	printf "| creates with events on (relay-on) ≥ 0.9 × off (no-outbox) | %.0f vs %.0f req/s = %.2f × | %s |\n",
	    on, off, (off > 0 ? on / off : 0), yes(off > 0 && on >= 0.9 * off)
	printf "| (events stored, no relay: relay-stopped against no-outbox) | %.0f vs %.0f req/s = %.2f × | |\n",
	    st, off, (off > 0 ? st / off : 0)
	printf "| (mariadbd µs per create: no-outbox, relay-stopped, relay-on) | %.0f, %.0f, %.0f | |\n",
	    (A["no-outbox"] ? DBUS["no-outbox"] / A["no-outbox"] : 0),
	    (A["relay-stopped"] ? DBUS["relay-stopped"] / A["relay-stopped"] : 0),
	    (A["relay-on"] ? DBUS["relay-on"] / A["relay-on"] : 0)
	printf "| relay throughput to the local receiver ≥ 2 × the create rate (relay-on) | %d events in %.2f s = %.0f events/s vs %.0f req/s = %.2f × | %s |\n",
	    M["drain_events"], M["drain_seconds"], drain, on, (on > 0 ? drain / on : 0), yes(on > 0 && drain >= 2 * on)
	printf "| (what a delivered event costs, relay throughput runs: µs of CPU of mariadbd, the relay, the receiver; statements, COMMITs, redo log writes) | %.0f, %.0f, %.0f µs; %.1f, %.1f, %.1f | |\n",
	    per("drain_db_ticks") / hz * 1e6, per("drain_relay_ticks") / hz * 1e6, per("drain_receiver_ticks") / hz * 1e6,
	    per("drain_Questions"), per("drain_Com_commit"), per("drain_Innodb_log_writes")
	printf "| delivery latency, COMMIT to the receiver's 2xx, at the create rate of relay-on (%.0f/s): p99 < 1 s | p50 %s ms, p99 %s ms (%d events) | %s |\n",
	    on, p50, p99, nlat, yes(nlat > 0 && p99 + 0 < 1000)
	dbr = M["idle_relay_db_ticks"] / hz; dbn = M["idle_norelay_db_ticks"] / hz
	printf "| the relay idle does not poll hot: mariadbd CPU over %d s, relay running vs stopped | %.2f s vs %.2f s (%.2f %% vs %.2f %% of a core); the relay itself %.2f s; %d vs %d statements (%.1f/s) | %s |\n",
	    idle, dbr, dbn, 100 * dbr / idle, 100 * dbn / idle, M["idle_relay_relay_ticks"] / hz,
	    M["idle_relay_questions"], M["idle_norelay_questions"], M["idle_relay_questions"] / idle,
	    yes(dbr - dbn <= 0.02 * idle)
	printf "| zero unexpected statuses | %d | %s |\n", U["no-outbox"] + U["relay-stopped"] + U["relay-on"],
	    yes(U["no-outbox"] + U["relay-stopped"] + U["relay-on"] == 0)
}
AWK
}
