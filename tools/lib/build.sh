# tools/lib/build.sh -- out-of-tree builds for tools/dev.
# shellcheck shell=bash

# Generate ./configure when it is missing or older than configure.ac.
ensure_configure() {
	if [[ ! -x $REPO/configure || $REPO/configure -ot $REPO/configure.ac ]]; then
		say "autoreconf -fi"
		(cd "$REPO" && autoreconf -fi) || die "autoreconf failed"
	fi
	if [[ -f $REPO/config.status ]]; then
		die "$REPO is configured in place; out-of-tree builds need it clean: run 'make distclean' there"
	fi
}

# True if ./configure offers OPTION (e.g. --enable-fault-injection).
configure_has() {
	"$REPO/configure" --help 2>/dev/null | grep -q -- "$1"
}

# The configure options of the stack's build: fault injection (§7 of the
# contract) whenever configure offers it; never sanitizers.
main_configure_args() {
	if configure_has --enable-fault-injection; then
		echo --enable-fault-injection
	fi
}

# Configure (when needed) and build in DIR with configure options ARGS.
# Output goes to DIR/build.log; its tail is shown on failure.
build_tree() {
	local dir=$1; shift
	local args="$*" log
	mkdir -p "$dir"
	log=$dir/build.log
	if [[ ! -f $dir/config.status || ! -f $dir/Makefile ||
	    $dir/config.status -ot $REPO/configure ||
	    "$(cat "$dir/.configure-args" 2>/dev/null)" != "$args" ]]; then
		say "configure $args (in ${dir#"$REPO"/})"
		rm -f "$dir/.configure-args"
		# shellcheck disable=SC2086
		if ! (cd "$dir" && "$REPO/configure" $args) >"$dir/configure.log" 2>&1; then
			show_log "$dir/configure.log" 40
			say "configure failed, see $dir/configure.log"
			return 1
		fi
		printf '%s' "$args" >"$dir/.configure-args"
	fi
	say "make (in ${dir#"$REPO"/})"
	if ! make -C "$dir" -j2 >"$log" 2>&1; then
		show_log "$log" 40
		say "make failed, see $log"
		return 1
	fi
}

# Build the stack's binary (BUILD) unless that already happened.
build_main() {
	[[ ${BUILT_MAIN:-} == 1 ]] && return 0
	ensure_configure
	# shellcheck disable=SC2046
	build_tree "$BUILD" $(main_configure_args) || return 1
	[[ -x $BIN ]] || { say "build produced no $BIN"; return 1; }
	BUILT_MAIN=1
}
