# clitest.sh: what the CLI test scripts (e2e.sh, phases.sh, crash.sh, text.sh, ...) share; they
# source it after setting here (their folder) and suite (their name, for messages).
#
# Sets STRATA (the CLI: the first argument, $STRATA, or build/strata) and
# MKSHOP (beside it, or $MKSHOP) as absolute paths, and T, a temporary
# folder removed at exit (with the feed whose pid is in feeder, if any);
# defines ok and bad, which count checks into passed and failed, and the
# checks below (run, expect_ok, expect_fail, check, jout), which leave a
# command's output in $OUT and $ERR; start and stop run `strata serve`.  Stops with "0 passed, 1 failed" when
# a tool or jq is missing.

top=$(cd "$here/.." && pwd)
STRATA=${1:-${STRATA:-$top/build/strata}}
MKSHOP=${MKSHOP:-$(dirname "$STRATA")/tests/mkshop}
case $STRATA in /*) ;; *) STRATA=$(pwd)/$STRATA ;; esac
case $MKSHOP in /*) ;; *) MKSHOP=$(pwd)/$MKSHOP ;; esac

passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

for tool in "$STRATA" "$MKSHOP"; do
	if [ ! -x "$tool" ]; then
		echo "$suite: $tool not built (make all build/tests/mkshop)"
		echo "0 passed, 1 failed"
		exit 1
	fi
done
if ! command -v jq >/dev/null 2>&1; then
	echo "$suite: jq is needed (make deps installs it)"
	echo "0 passed, 1 failed"
	exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/strata-$suite.XXXXXX")
# feeder: the pid of a feed running in the background, killed at exit.
feeder=
cleanup() {
	[ -z "$feeder" ] || kill -9 "$feeder" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
OUT=$T/out
ERR=$T/err

# run CMD...: run it with stdout in $OUT, stderr in $ERR, status in $rc.
run() {
	"$@" >"$OUT" 2>"$ERR"
	rc=$?
}

# A crash or a sanitizer report is a failure whatever the exit status.
crashed() {
	if [ "$rc" -ge 128 ]; then
		return 0
	fi
	grep -Eq 'Sanitizer|runtime error:|Assertion|assertion failed' "$ERR"
}

# expect_ok NAME CMD...: the command succeeds cleanly.
expect_ok() {
	name=$1
	shift
	run "$@"
	if [ "$rc" -ne 0 ] || crashed; then
		bad "$name: exit $rc: $(head -c 600 "$ERR")"
		return 1
	fi
	ok
	return 0
}

# expect_fail NAME REGEX CMD...: the command fails (status 1..127) and its
# stderr matches the extended regular expression REGEX.
expect_fail() {
	name=$1
	re=$2
	shift 2
	run "$@"
	if [ "$rc" -eq 0 ]; then
		bad "$name: succeeded but should have failed"
	elif crashed; then
		bad "$name: crashed (exit $rc): $(head -c 600 "$ERR")"
	elif ! grep -Eq -- "$re" "$ERR"; then
		bad "$name: message does not match /$re/: $(head -c 600 "$ERR")"
	else
		ok
		# E2E_VERBOSE=1 shows what a user would read.
		[ -z "${E2E_VERBOSE:-}" ] || echo "ok: $name: $(head -c 300 "$ERR" | tr '\n' ' ')"
	fi
}

# check NAME GOT WANT
check() {
	if [ "$2" = "$3" ]; then
		ok
	else
		bad "$1: got '$2', want '$3'"
	fi
}

# jq over the last output; "null" when the output is not JSON.
jout() {
	jq -r "$@" "$OUT" 2>/dev/null || echo "null"
}

# feed_killed APP FILE [COMMITS [BATCH [DATA]]]: feed FILE in the background
# in batches of BATCH (1000; into the data folder DATA when given), kill it
# with SIGKILL once it reported COMMITS commits (1), and set w to the
# documents it reported written (0 when none); counts a failure when there
# were none.
feed_killed() {
	: >"$T/kerr"
	"$STRATA" feed "$1" "$2" --batch "${4:-1000}" ${5:+--data "$5"} >"$T/kout" 2>"$T/kerr" &
	feeder=$!
	i=0
	while [ "$(grep -c '^written [1-9]' "$T/kerr" 2>/dev/null)" -lt "${3:-1}" ] &&
		kill -0 "$feeder" 2>/dev/null && [ $i -lt 6000 ]; do
		i=$((i + 1))
		sleep 0.02
	done
	kill -9 "$feeder" 2>/dev/null
	wait "$feeder" 2>/dev/null
	feeder=
	w=$(sed -n 's/^written \([0-9][0-9]*\) documents, .*/\1/p' "$T/kerr" | tail -n 1 | grep . || echo 0)
	echo "killed after $w reported written"
	[ "$w" -gt 0 ] && ok || bad "killed feed: nothing reported written"
}

# ids WHERE: the ids of the hits of a query on $APP, best first, comma
# separated, each without its "id:NS:TYPE::" prefix; req JSON: the same for
# a whole request; total WHERE: the number of matches.
strip_ids='[.root.children[]?.id | sub("^id:[^:]*:[^:]*::"; "")] | join(",")'
ids() {
	if "$STRATA" query "$APP" --yql "select * from sources * where $1" >"$OUT" 2>"$ERR"; then
		jout "$strip_ids"
	else
		echo "error: $(head -c 300 "$ERR")"
	fi
}
req() {
	if echo "$1" | "$STRATA" query "$APP" >"$OUT" 2>"$ERR"; then
		jout "$strip_ids"
	else
		echo "error: $(head -c 300 "$ERR")"
	fi
}
total() {
	"$STRATA" query "$APP" --yql "select * from sources * where $1" --hits 0 2>"$ERR" |
		jq -r '.root.fields.totalCount' 2>/dev/null || echo error
}

# start ARGS...: `strata serve $APP --port 0 ARGS` (its pid in feeder, so
# that it is killed at exit; its stderr in $T/log) and B, its base URL;
# false when it did not start.
start() {
	: >"$T/log"
	"$STRATA" serve "$APP" --port 0 "$@" 2>"$T/log" &
	feeder=$!
	i=0
	while ! grep -q 'listening on' "$T/log"; do
		i=$((i + 1))
		if ! kill -0 "$feeder" 2>/dev/null || [ $i -ge 3000 ]; then
			bad "server did not start: $(cat "$T/log")"
			return 1
		fi
		sleep 0.02
	done
	B=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$T/log")
	return 0
}

# stop: SIGTERM and wait; rc is its exit status.
stop() {
	kill -TERM "$feeder" 2>/dev/null
	wait "$feeder"
	rc=$?
	feeder=
}
