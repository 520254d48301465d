#!/bin/sh
# strata_test.sh: `strata test`, Vespa's basic HTTP tests, on the fixture
# application tests/data/systemtest/app (a music schema, no models).
#
#   sh tests/strata_test.sh [STRATA]    (or STRATA=build/strata sh tests/strata_test.sh)
#
# Checked: the application's system tests pass, each step and test
# reported, with a server of its own on a temporary data folder that is
# gone afterwards (the application's store is never made); each test of
# tests/failing fails with its own first mismatch (a wrong value, type,
# number, array length, status code, a missing field) or its own error
# (a missing body file, bad JSON with file:line:column, a parameter that
# is no string, an https URI, an unknown key), and a test whose file is
# bad sends nothing (checked on a server the script runs, through
# --endpoint); --endpoint against a running server passes, against a
# stopped one fails clearly; --app for a test outside an application;
# an absolute URI sent to its own host; --help, and bad options refused.  The last line is "N passed, M failed".
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=strata_test
. "$here/clitest.sh"
APP=$T/app
cp -R "$top/tests/data/systemtest/app" "$APP"
mkdir -p "$T/tmp"

# the usage
expect_ok "help" "$STRATA" test --help
grep -q '^usage: strata test PATH \[--endpoint URL\] \[--app APP\]' "$OUT" && ok || bad "help: $(head -c 200 "$OUT")"
expect_fail "no path" 'no PATH given' "$STRATA" test
check "no path: status" "$rc" 2
expect_fail "bad option" "unknown option '--bogus'" "$STRATA" test --bogus "$APP"
check "bad option: status" "$rc" 2
expect_fail "two paths" 'one PATH only' "$STRATA" test "$APP" "$APP"
expect_fail "endpoint and app" 'give one of them' "$STRATA" test "$APP" --endpoint http://127.0.0.1:1 --app "$APP"
expect_fail "https endpoint" 'https is not supported' "$STRATA" test "$APP" --endpoint https://127.0.0.1:1
expect_fail "not http" 'not an http:// URL' "$STRATA" test "$APP" --endpoint ftp://127.0.0.1
expect_fail "no value" 'option --endpoint needs a value' "$STRATA" test "$APP" --endpoint
expect_fail "not json" 'a test is a .json file' "$STRATA" test "$APP/schemas/music.sd"
expect_fail "no tests" 'no test files' "$STRATA" test "$APP/schemas"
expect_fail "missing" 'No such file or directory' "$STRATA" test "$APP/tests/none.json"

# the system tests pass, on a server of their own
export TMPDIR=$T/tmp
if expect_ok "system tests" "$STRATA" test "$APP"; then
	check "system tests: summary" "$(jout -c '[.tests, .passed, .failed, (.failures | length)]')" "[2,2,0,0]"
	grep -q "ok $APP/tests/system-test/feed-and-search.json (Feed and search): 9 steps" "$ERR" && ok ||
		bad "system tests: no ok line: $(head -c 600 "$ERR")"
	grep -q "^  step 9: bar is gone: GET /document/v1/test/music/docid/bar?timeout=5s: ok" "$ERR" && ok ||
		bad "system tests: no step line: $(head -c 600 "$ERR")"
	grep -q '^2 tests: 2 passed, 0 failed$' "$ERR" && ok || bad "system tests: no total line"
fi
check "own store untouched" "$(ls -A "$APP" | tr '\n' ' ')" "schemas tests "
check "temporary folder removed" "$(ls -A "$T/tmp")" ""
# a folder of tests, and one file
expect_ok "system-test folder" "$STRATA" test "$APP/tests/system-test"
expect_ok "one file" "$STRATA" test "$APP/tests/system-test/feed-and-search.json"
check "one file: summary" "$(jout -c '[.tests, .passed]')" "[1,1]"
unset TMPDIR

# each failing test with its own first mismatch or error
F=$APP/tests/failing
expect_fail "failing tests" '^11 tests: 0 passed, 11 failed$' "$STRATA" test "$F"
check "failing: summary" "$(jout -c '[.tests, .passed, .failed]')" "[11,0,11]"
msg() { jq -r --arg f "$F/$1.json" '.failures[] | select(.file == $f) | "\(.step) \(.message)"' "$OUT" 2>/dev/null; }
check "wrong value" "$(msg wrong-value)" '2 Unexpected value at /root/children/0/fields/artist: expected "Foo Fighter", actual "Foo Fighters"'
check "wrong type" "$(msg wrong-type)" '2 Unexpected type at /root/children/0/fields/year: expected string "2007", actual number 2007'
check "wrong number" "$(msg wrong-number)" '2 Unexpected value at /root/children/0/relevance: expected 2007.001, actual 2007.0'
check "wrong length" "$(msg wrong-length)" '2 Unexpected number of elements at /root/children: expected 2, actual 1'
check "missing field" "$(msg missing-field)" '2 Missing expected field at /root/children/0/fields/label'
check "wrong code" "$(msg wrong-code)" '1 Unexpected status code: expected 200, actual 404'
check "missing body" "$(msg missing-body)" "0 $F/missing-body.json: step 2: cannot read the body file $F/nope.json: No such file or directory"
check "bad json" "$(msg bad-json)" "0 $F/bad-json.json:5:9: not JSON: ']' expected near '{'"
check "param not string" "$(msg param-not-string)" "0 $F/param-not-string.json: step 1: parameter \"hits\" must be a string (as in a URL)"
check "https uri" "$(msg https-uri)" "0 $F/https-uri.json: step 1: \"uri\": https://example.com/search/: https is not supported: give a plain http:// endpoint"
check "unknown key" "$(msg unknown-key)" "0 $F/unknown-key.json: step 1: unknown key \"respons\""
grep -q '^    response: {"pathId":"/document/v1/test/music/docid/nope"' "$ERR" && ok ||
	bad "failing: the response is not shown: $(grep -A3 wrong-code "$ERR" | head -c 400)"
grep -q "^FAILED $F/wrong-value.json (wrong-value): step 2: search: Unexpected value at" "$ERR" && ok ||
	bad "failing: no FAILED line for wrong-value"
expect_fail "one failing file" 'expected 2, actual 1' "$STRATA" test "$F/wrong-length.json"
check "one failing file: status" "$rc" 1

# a test outside an application needs --app
mkdir -p "$T/loose"
cat >"$T/loose/t.json" <<'EOF'
{"steps": [{"request": {"method": "POST", "uri": "/document/v1/test/music/docid/x",
                        "body": {"fields": {"artist": "X", "year": 1}}}},
           {"request": {"parameters": {"yql": "select * from music where true"}},
            "response": {"body": {"root": {"fields": {"totalCount": 1}}}}}]}
EOF
expect_fail "loose test" "not inside an application's tests/ folder: give --app APP" "$STRATA" test "$T/loose/t.json"
expect_ok "loose test with --app" "$STRATA" test "$T/loose/t.json" --app "$APP"

# --endpoint: a server of the script's own
if "$STRATA" deploy "$APP" --data "$T/data" >/dev/null 2>"$T/err"; then
	: >"$T/log"
	"$STRATA" serve "$APP" --port 0 --data "$T/data" 2>"$T/log" &
	feeder=$!
	i=0
	while ! grep -q 'listening on' "$T/log" && kill -0 "$feeder" 2>/dev/null && [ $i -lt 3000 ]; do
		i=$((i + 1))
		sleep 0.02
	done
	B=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$T/log")
	if [ -n "$B" ]; then
		# a test whose file is bad sends none of its steps: foo is not fed
		expect_fail "endpoint: bad test" 'cannot read the body file' "$STRATA" test "$F/missing-body.json" --endpoint "$B/"
		code=$(curl -s -o /dev/null -w '%{http_code}' "$B/document/v1/test/music/docid/foo")
		check "endpoint: nothing sent" "$code" 404
		expect_ok "endpoint: system tests" "$STRATA" test "$APP/tests/system-test" --endpoint "$B"
		check "endpoint: summary" "$(jout -c '[.tests, .passed]')" "[2,2]"
		code=$(curl -s -o /dev/null -w '%{http_code}' "$B/document/v1/test/music/docid/foo")
		check "endpoint: fed through it" "$code" 200
		# an absolute URI goes to its own host, not to the endpoint
		printf '{"steps": [{"request": {"uri": "%s/state/v1/health"}, "response": {"body": {"status": {"code": "up"}}}}]}\n' "$B" >"$T/loose/abs.json"
		expect_ok "absolute uri" "$STRATA" test "$T/loose/abs.json" --endpoint http://127.0.0.1:1
	else
		bad "server did not start: $(cat "$T/log")"
	fi
	kill -TERM "$feeder" 2>/dev/null
	wait "$feeder"
	feeder=
	if [ -n "$B" ]; then
		expect_fail "endpoint: stopped" "search-after.json \(search-after.json\): step 1: cannot connect to 127.0.0.1:" \
			"$STRATA" test "$APP/tests/system-test/search-after.json" --endpoint "$B"
	fi
else
	bad "deploy: $(cat "$T/err")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
