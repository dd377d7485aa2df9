# tools/lib/fuzz.sh -- libFuzzer runs of the parsers.
# shellcheck shell=bash
#
#   tools/dev fuzz [SECONDS [NAME...]]   build the harnesses of tests/fuzz
#                                        (clang-14, ASan, UBSan, libFuzzer)
#                                        in var/<stack>/build-fuzz and run
#                                        each for SECONDS (default 60)
#
# Each run starts from the committed seeds (tests/fuzz/corpus/NAME) and a
# working corpus kept in var/<stack>/fuzz/corpus/NAME, which grows from
# run to run; `tools/dev test` uses a fresh one.  A crash, a leak, a
# timeout or a broken property is a finding: its input is saved under
# var/<stack>/fuzz/findings/ and the command to reproduce it is printed.

FUZZ_NAMES=(body key content_type conf fault router)
FUZZ_CC=clang-14

# Set the fuzz paths of the stack.
fuzz_vars() {
	BUILD_FUZZ=$VAR/build-fuzz
	FUZZ_DIR=$VAR/fuzz
}

# Build the harnesses in BUILD_FUZZ, with fault injection for fuzz_fault.
fuzz_build() {
	fuzz_vars
	PACKAGES+=("${FUZZ_PACKAGES[@]}")
	ensure_packages
	command -v "$FUZZ_CC" >/dev/null ||
	    die "$FUZZ_CC not found: apt-get install clang-14 libfuzzer-14-dev libclang-rt-14-dev"
	ensure_configure
	build_tree "$BUILD_FUZZ" --enable-fuzzing --enable-fault-injection \
	    CC="$FUZZ_CC" || return 1
	local n
	for n in "${FUZZ_NAMES[@]}"; do
		[[ -x $BUILD_FUZZ/tests/fuzz/fuzz_$n ]] ||
		    { say "build produced no tests/fuzz/fuzz_$n"; return 1; }
	done
}

# Run harness NAME for SECONDS with working corpus WORK; print one line
# with executions, coverage and findings.  Sets FUZZ_EXECS and
# FUZZ_FINDING (the saved input, empty when none); false on a finding.
fuzz_run_one() {
	local name=$1 secs=$2 work=$3 bin log dict args=() rc stat cov f
	bin=$BUILD_FUZZ/tests/fuzz/fuzz_$name
	log=$FUZZ_DIR/log/$name.log
	dict=$REPO/tests/fuzz/$name.dict
	mkdir -p "$work" "$FUZZ_DIR/log" "$FUZZ_DIR/findings"
	[[ -f $dict ]] && args+=("-dict=$dict")
	# A body of 100 items with long SKUs, or a long escaped note, needs
	# more than libFuzzer's default of 4096 bytes.
	[[ $name == body ]] && args+=(-max_len=16384)
	FUZZ_EXECS=0
	FUZZ_FINDING=
	set +e
	# -timeout: one input that takes 10 s on a loaded machine is a hang.
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    timeout -k 10 $((secs * 2 + 120)) nice -n 19 "$bin" \
	    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 \
	    -artifact_prefix="$FUZZ_DIR/findings/$name-" "${args[@]}" \
	    "$work" "$REPO/tests/fuzz/corpus/$name" </dev/null >"$log" 2>&1 9>&-
	rc=$?
	set -e
	stat=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	FUZZ_EXECS=${stat:-0}
	cov=$(grep -a -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
	f=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
	if [[ $rc -ne 0 || -n $f ]]; then
		FUZZ_FINDING=${f:-"(none saved; fuzzer status $rc)"}
		printf 'fuzz %-12s %10s executions in %ss, cov %s: FINDING\n' \
		    "$name" "$FUZZ_EXECS" "$secs" "${cov:-?}"
		grep -a -E 'ERROR: |SUMMARY: |fuzz property failed|runtime error' \
		    "$log" | head -n 5 | cut -c1-300 | sed 's/^/    /'
		printf '    input: %s\n    reproduce: %s %s\n    log: %s\n' \
		    "$FUZZ_FINDING" "$bin" "$FUZZ_FINDING" "$log"
		return 1
	fi
	printf 'fuzz %-12s %10s executions in %ss, cov %s, corpus %s: no findings\n' \
	    "$name" "$FUZZ_EXECS" "$secs" "${cov:-?}" \
	    "$(find "$work" -type f | wc -l)"
}

# tools/dev fuzz [SECONDS [NAME...]]
run_fuzz() {
	local secs=${1:-60} names=() n total=0 found=0
	[[ $secs =~ ^[1-9][0-9]*$ ]] || die "usage: $PROG fuzz [SECONDS [NAME...]]"
	[[ $# -gt 0 ]] && shift
	names=("$@")
	[[ ${#names[@]} -gt 0 ]] || names=("${FUZZ_NAMES[@]}")
	fuzz_vars
	mkdir -p "$FUZZ_DIR"
	exec 8>"$FUZZ_DIR/.lock"
	flock -n 8 || { say "waiting for another fuzz run on stack '$STACK'"; flock 8; }
	fuzz_build || die "fuzz build failed"
	for n in "${names[@]}"; do
		[[ -x $BUILD_FUZZ/tests/fuzz/fuzz_$n ]] || die "no harness fuzz_$n (${FUZZ_NAMES[*]})"
	done
	for n in "${names[@]}"; do
		fuzz_run_one "$n" "$secs" "$FUZZ_DIR/corpus/$n" || found=$((found + 1))
		total=$((total + FUZZ_EXECS))
	done
	echo "fuzz: $total executions, $found harness(es) with findings"
	[[ $found -eq 0 ]]
}

# The short run inside `tools/dev test`: a fresh build and a fresh working
# corpus, FUZZ_TEST_SECONDS (default 10) per harness, one RESULT each.
run_fuzz_tests() {
	local secs=${FUZZ_TEST_SECONDS:-10} n
	fuzz_vars
	rm -rf "$BUILD_FUZZ" "$FUZZ_DIR/test-corpus"
	step fuzz_build
	if [[ $STEP_RC -ne 0 ]]; then
		result fuzz-build 0 1
		return 0
	fi
	for n in "${FUZZ_NAMES[@]}"; do
		if fuzz_run_one "$n" "$secs" "$FUZZ_DIR/test-corpus/$n"; then
			result "fuzz:$n" 1 0
		else
			result "fuzz:$n" 0 1
		fi
	done
}
