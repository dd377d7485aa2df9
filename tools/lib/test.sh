# tools/lib/test.sh -- `tools/dev test`: what CI runs.
# shellcheck shell=bash
#
# Every component reports "RESULT <suite> <passed> <failed> [<skipped>]"
# lines; they are collected in RESULTS and summed into the last line
# printed, "N passed, M failed, K skipped" (a skip is never a pass; the
# status is non-zero on any failure).  The test stack is always stopped
# at the end.

RESULTS=
# What a failing script printed about its failures, and how long each
# script took ("SECONDS NAME" lines): both shown before the summary, so
# that the end of a long log says what failed and where the time went.
FAILURES=
TIMES=
# The SKIP lines of the scripts (what this machine could not run).
SKIPS=

# Record and print one RESULT line: NAME PASSED FAILED [SKIPPED].
result() {
	local line="RESULT $1 $2 $3"
	[[ ${4:-0} == 0 ]] || line+=" $4"
	printf '%s\n' "$line"
	RESULTS+="$line"$'\n'
}

# Print the summary and exit; runs on EXIT, so also after a failure or an
# interrupt.
tests_end() {
	local rc=$? passed=0 failed=0 skipped=0 suite p f k
	trap - EXIT INT TERM
	set +e
	if [[ $rc -ne 0 && ${TESTS_DONE:-0} != 1 ]]; then
		result "tools-dev-aborted" 0 1
		say "aborted (status $rc)"
	fi
	say "stopping the test stack"
	stack_down
	while read -r _ suite p f k; do
		[[ -n ${suite:-} ]] || continue
		passed=$((passed + p))
		failed=$((failed + f))
		skipped=$((skipped + ${k:-0}))
	done <<<"$RESULTS"
	if [[ -n $TIMES ]]; then
		echo
		echo "slowest scripts (seconds):"
		sort -rn <<<"$TIMES" | sed -e "/^$/d" -e "s/^/  /" | head -n 10
		# All of them, for a look after the run.
		sort -rn <<<"$TIMES" | sed -e "/^$/d" >"$LOGDIR/times" 2>/dev/null &&
		    echo "  (all: $LOGDIR/times)"
	fi
	if [[ -n $SKIPS ]]; then
		echo
		echo "skipped:"
		printf '%s' "$SKIPS"
	fi
	if [[ -n $FAILURES ]]; then
		echo
		echo "failures:"
		printf '%s' "$FAILURES"
	fi
	echo
	echo "summary:"
	printf '%s' "$RESULTS"
	[[ -n $RESULTS ]] || echo "(no results)"
	echo "$passed passed, $failed failed, $skipped skipped"
	[[ $failed -eq 0 && $rc -eq 0 ]] && exit 0
	exit 1
}

# Record the RESULT lines of FILE (three numbers, or four with the
# skipped ones) with suite prefix PREFIX (printing them
# unless QUIET is 1); set CR_N to how many were found and CR_NF to how
# many of them report failures.
collect_results() {
	local file=$1 prefix=$2 quiet=${3:-0} suite p f k line
	CR_N=0
	CR_NF=0
	while read -r _ suite p f k; do
		line="RESULT $prefix$suite $p $f"
		[[ ${k:-0} == 0 ]] || line+=" $k"
		RESULTS+="$line"$'\n'
		[[ $quiet == 1 ]] || printf '%s\n' "$line"
		CR_N=$((CR_N + 1))
		[[ $f -gt 0 ]] && CR_NF=$((CR_NF + 1))
	done < <(awk '$1 == "RESULT" && $3 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+$/ &&
	    (NF == 4 || (NF == 5 && $5 ~ /^[0-9]+$/))' "$file" 2>/dev/null)
	return 0
}

# `make check` in build dir DIR; RESULT lines come from each test's log
# (automake's driver stores the runners' stdout there).  A test that fails
# without a failing RESULT line, or is skipped (a missing database is a
# failure here, never a skip), counts as one failure.
run_make_check() {
	local dir=$1 prefix=$2 rc trs log name res nfail=0
	find "$dir" -name '*.trs' -delete
	say "make check (in ${dir#"$REPO"/})"
	set +e
	IDEMORDERS_TEST_CONF=$CHECK_CONF ASAN_OPTIONS=detect_leaks=1 \
	    UBSAN_OPTIONS=print_stacktrace=1 \
	    make -C "$dir" -j2 check >"$dir/check.log" 2>&1 9>&-
	rc=$?
	set -e
	while read -r trs; do
		[[ -n $trs ]] || continue
		log=${trs%.trs}.log
		name=${trs#"$dir"/}
		name=${name%.trs}
		res=$(sed -n 's/^:test-result: *//p' "$trs" | head -n 1)
		collect_results "$log" "$prefix"
		nfail=$((nfail + CR_NF))
		case $res in
		PASS|XFAIL)
			[[ $CR_N -gt 0 ]] || result "$prefix$name" 1 0 ;;
		SKIP)
			result "$prefix$name(skipped)" 0 1
			nfail=$((nfail + 1)) ;;
		*)
			if [[ $CR_NF -eq 0 ]]; then
				result "$prefix$name($res)" 0 1
				nfail=$((nfail + 1))
			fi ;;
		esac
	done < <(find "$dir" -name '*.trs' | LC_ALL=C sort)
	if [[ $rc -ne 0 ]]; then
		# Failed before or beside the tests (a test that did not build).
		[[ $nfail -gt 0 ]] || result "${prefix}make-check" 0 1
		if [[ -f $dir/test-suite.log ]]; then
			say "--- ${dir#"$REPO"/}/test-suite.log ---"
			head -n 300 "$dir/test-suite.log" >&2
		else
			show_log "$dir/check.log" 60
		fi
		say "make check failed in ${dir#"$REPO"/} (see $dir/check.log)"
	fi
}

# Run the test scripts FILE... (paths in the source tree) with `make
# check-stack` in the main build: automake's harness runs them one at a
# time through tests/lib/run-script, which bounds each, checks that it
# left the stack whole and brings the stack back if not.  Their output
# is echoed as they run.  Then, from each script's log: its RESULT lines,
# the time it took, and the FAIL lines of one that failed.
run_stack_tests() {
	local rel=() s name log res rc t
	for s in "$@"; do
		[[ $s == "$REPO"/* ]] || die "not in the source tree: $s"
		rel+=("${s#"$REPO"/}")
	done
	export REPO IDEMORDERS_STACK=test DEV=$REPO/tools/dev
	export LIGHTTPD_URL APACHE_URL FCGID_URL FCGI_SOCKET MOUNT
	export SHOP_LIGHTTPD_URL SHOP_APACHE_URL BEARER_LIGHTTPD_URL BEARER_APACHE_URL
	export IDEMORDERS_BIN=$BIN IDEMORDERS_CONF=$CONF SERVE_PIDFILE
	export RUNDIR=$RUN LOGDIR
	# A `tools/dev up` of this stack from a script or from run-script
	# keeps the database (not another stack's: the bench's).
	export IDEMORDERS_DB_PREPARED=$VAR
	for s in "${rel[@]}"; do
		rm -f "$BUILD/${s%.sh}.log" "$BUILD/${s%.sh}.trs"
	done
	set +e
	IDEMORDERS_TEST_ECHO_FD=7 make -C "$BUILD" check-stack \
	    STACK_TESTS="${rel[*]}" 7>&1 >"$BUILD/check-stack.log" 2>&1 9>&-
	rc=$?
	set -e
	for s in "${rel[@]}"; do
		name=$(basename "$s" .sh)
		log=$BUILD/${s%.sh}.log
		res=$(sed -n 's/^:test-result: *//p' "$BUILD/${s%.sh}.trs" 2>/dev/null |
		    head -n 1)
		collect_results "$log" "" 1
		t=$(awk '$1 == "TIME" && NF == 3 { t = $3 } END { print t }' "$log" 2>/dev/null)
		[[ -z $t ]] || TIMES+="$t $name"$'\n'
		case $res in
		PASS)	[[ $CR_N -gt 0 ]] || result "$name(no-RESULT-line)" 0 1 ;;
		"")	result "$name(not-run)" 0 1 ;;
		*)	[[ $CR_NF -gt 0 ]] || result "$name($res)" 0 1 ;;
		esac
		# (awk: no SKIP line is no error under errexit and pipefail.)
		if [[ -f $log ]]; then
			SKIPS+=$(awk -v n="$name" '/^SKIP / { print n ": " substr($0, 1, 300) }' "$log")
		fi
		[[ -z $SKIPS || $SKIPS == *$'\n' ]] || SKIPS+=$'\n'
		if [[ $res != PASS ]]; then
			FAILURES+="--- $name ($res; ${log#"$REPO"/})"$'\n'
			FAILURES+=$(grep -A 2 '^FAIL' "$log" 2>/dev/null | cut -c 1-400 |
			    head -n 24)$'\n'
		fi
	done
	[[ $rc -eq 0 ]] ||
	    say "make check-stack: status $rc (${BUILD#"$REPO"/}/check-stack.log)"
	return 0
}

# The numbered scripts of `make check-stack` must be the ones in the
# tree: a script that is not listed in Makefile.am would not run there.
check_stack_list() {
	local listed found
	listed=$(make -s -C "$BUILD" print-stack-tests 9>&- | tr ' ' '\n' | sed '/^$/d')
	found=$(printf '%s\n' "$@" | sed "s|^$REPO/||")
	[[ ${IDEMORDERS_TEST_CLUSTER:-1} == 1 ]] ||
	    listed=$(grep -v '^tests/cluster/' <<<"$listed")
	if [[ $listed == "$found" ]]; then
		result stack-tests-listed 1 0
	else
		say "Makefile.am's STACK_TESTS and the scripts in tests/ differ:"
		diff <(echo "$listed") <(echo "$found") >&2 || true
		result "stack-tests-listed(Makefile.am)" 0 1
	fi
}

# Run "$@" in a subshell with errexit; set STEP_RC, never exit.
step() {
	set +e
	( set -e; "$@" )
	STEP_RC=$?
	set -e
}

# tools/dev test [http | SCRIPT...]
run_tests() {
	local mode=full s d scripts=()
	if [[ ${1:-} == http ]]; then
		mode=http
		shift
	fi
	for s in "$@"; do
		mode=http
		if [[ -f $s ]]; then
			scripts+=("$(readlink -f -- "$s")")
		elif [[ -f $REPO/$s ]]; then
			scripts+=("$REPO/$s")
		else
			die "no such test script: $s"
		fi
	done
	if [[ ${#scripts[@]} -eq 0 ]]; then
		# The numbered scripts of each folder, the folders in this
		# order (their numbers keep rising from one to the next): the
		# service through the web servers, the install and the Debian
		# package, the exactly-once checkers on the rows all of them
		# left, the clients.
		for d in http package audit clients; do
			while IFS= read -r s; do
				scripts+=("$s")
			done < <(find "$REPO/tests/$d" -maxdepth 1 -name '[0-9][0-9]-*.sh' -type f | LC_ALL=C sort)
		done
		# The short Galera cluster check (about 2.5 minutes; ports
		# 3311-3313, 8091-8093, 4567-4588; `tools/dev cluster check`
		# runs it alone); IDEMORDERS_TEST_CLUSTER=0 leaves it out.
		if [[ ${IDEMORDERS_TEST_CLUSTER:-1} == 1 ]]; then
			scripts+=("$REPO/tests/cluster/cluster-check.sh")
			# Network partitions of a cluster in namespaces of
			# its own (10.77.0.0/24, no fixed port; about 4
			# minutes; `tools/dev cluster partition --short`).
			scripts+=("$REPO/tests/cluster/partition-check.sh")
		else
			# Left out on purpose: said, and counted as skips.
			CLUSTER_SKIPPED=1
		fi
	fi

	trap tests_end EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	if [[ ${CLUSTER_SKIPPED:-0} == 1 ]]; then
		for s in cluster-check partition-check; do
			say "skipped: $s (IDEMORDERS_TEST_CLUSTER=0)"
			SKIPS+="$s: IDEMORDERS_TEST_CLUSTER=0"$'\n'
			result "$s(IDEMORDERS_TEST_CLUSTER=0)" 0 0 1
		done
	fi

	say "test stack: stopping anything left from an earlier run"
	stack_down
	if [[ $mode == full ]]; then
		rm -rf "$DB_DATADIR" "$BUILD" "$BUILD_ASAN" "$LOGDIR" "$VAR/pkg-cache"
	fi
	prepare_dirs
	PACKAGES+=("${TEST_PACKAGES[@]}")
	ensure_packages

	local t0=$SECONDS
	step build_main
	TIMES+="$((SECONDS - t0)) (build)"$'\n'
	if [[ $STEP_RC -ne 0 ]]; then
		result build 0 1
		TESTS_DONE=1
		exit 1
	fi
	BUILT_MAIN=1

	write_responder_confs
	step db_start
	[[ $STEP_RC -eq 0 ]] && step db_prepare "$DB_NAME" "$CONF"
	if [[ $STEP_RC -ne 0 ]]; then
		result database 0 1
		TESTS_DONE=1
		exit 1
	fi
	DB_PREPARED=1

	if [[ $mode == full ]]; then
		step db_reset_check
		if [[ $STEP_RC -ne 0 ]]; then
			result check-database 0 1
		else
			t0=$SECONDS
			run_make_check "$BUILD" ""
			TIMES+="$((SECONDS - t0)) (make check)"$'\n'
		fi

		t0=$SECONDS
		# shellcheck disable=SC2046
		step build_tree "$BUILD_ASAN" $(main_configure_args) --enable-sanitizers
		if [[ $STEP_RC -ne 0 ]]; then
			result build-asan 0 1
		else
			step db_reset_check
			if [[ $STEP_RC -ne 0 ]]; then
				result asan:check-database 0 1
			else
				run_make_check "$BUILD_ASAN" "asan:"
			fi
		fi
		TIMES+="$((SECONDS - t0)) (sanitizer build and check)"$'\n'

		# libFuzzer: each harness for FUZZ_TEST_SECONDS (10 s).
		t0=$SECONDS
		run_fuzz_tests
		TIMES+="$((SECONDS - t0)) (fuzzing)"$'\n'
	fi

	step stack_up
	if [[ $STEP_RC -ne 0 ]]; then
		result stack-up 0 1
	else
		[[ $# -gt 0 ]] || check_stack_list "${scripts[@]}"
		run_stack_tests "${scripts[@]}"
	fi
	TESTS_DONE=1
	exit 0
}
