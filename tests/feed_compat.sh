#!/bin/sh
# feed_compat.sh: `strata feed` takes what Vespa's feed takes.
#
#   STRATA=build/strata MKSHOP=build/tests/mkshop sh tests/feed_compat.sh
#
# On a purchase schema (the shape of Vespa's part-purchases demo) fed the
# first lines of that demo's feed (tests/data/part_purchases/feed.jsonl,
# numbers written as strings: "price": "1000", "tax": "0.24"): those go in
# with their numbers; tensors in hex go in; a pretty-printed operation goes
# in, and a broken one gives one error with FILE:LINE:COLUMN; several files
# (and - for standard input) are fed in order, with totals and errors named
# by file; a missing file feeds nothing; a bad value is refused with the
# field and the value, and nothing stored is lost; arithmetic updates apply
# as Vespa's do, and those it cannot are refused.
#
# The last line is "N passed, M failed"; the exit status is 1 when any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=feed_compat
. "$here/clitest.sh"
APP=$T/purchases
mkdir -p "$APP/schemas"
cat >"$APP/schemas/purchase.sd" <<'EOF'
schema purchase {
    document purchase {
        field date type long { indexing: summary | attribute }
        field price type int { indexing: summary | attribute }
        field tax type double { indexing: summary | attribute }
        field item type string { indexing: summary | attribute }
        field customer type string { indexing: summary | attribute }
        field attributes type map<string, string> {
            indexing: summary
            struct-field key { indexing: attribute }
            struct-field value { indexing: attribute }
        }
        field emb type tensor<float>(x[2]) { indexing: summary | attribute }
        field codes type tensor<int8>(x[2]) { indexing: summary | attribute }
    }
}
EOF
FEED=$top/tests/data/part_purchases/feed.jsonl
expect_ok "deploy" "$STRATA" deploy "$APP"

# count: the number of purchases stored.
count() {
	"$STRATA" query "$APP" --yql 'select * from purchase where true' --hits 0 2>/dev/null |
		jq -r '.root.fields.totalCount' 2>/dev/null || echo "query failed"
}

# ---- the demo's feed: numbers as strings ---------------------------------------------
if expect_ok "demo feed" "$STRATA" feed "$APP" "$FEED"; then
	check "demo feed: summary" "$(jout '[.written, .failed] | @csv')" "3,0"
fi
run "$STRATA" get "$APP" id:purchase:purchase::0
check "demo feed: numbers" "$(jout '[.fields.price, .fields.tax, .fields.date] | @csv')" \
	"1000,0.24,1157526000"
run "$STRATA" query "$APP" --yql 'select * from purchase where price > 1500'
check "demo feed: price is a number" "$(jout '.root.fields.totalCount')" "1"

# ---- hex cells, a pretty-printed operation, several files ---------------------------------
cat >"$T/pretty.json" <<'EOF'
{
    "put": "id:purchase:purchase::10",
    "fields": {
        "price": "-3",
        "item": "Pretty",
        "emb": "3f80000040000000",
        "codes": {"values": "ff01"}
    }
}
EOF
printf '{"put": "id:purchase:purchase::11", "fields": {"price": "7"}}\n' >"$T/a.jsonl"
printf '[{"put": "id:purchase:purchase::12", "fields": {"tax": "1e-2"}}]\n' >"$T/b.json"
if expect_ok "several files" sh -c '"$1" feed "$2" "$3" - "$4" <"$5"' sh "$STRATA" "$APP" \
	"$T/a.jsonl" "$T/b.json" "$T/pretty.json"; then
	check "several files: totals" "$(jout '[.written, .failed] | @csv')" "3,0"
	grep -q "^fed 3 documents, 0 failed, .* from 3 files" "$ERR" && ok ||
		bad "several files: summary: $(cat "$ERR")"
	grep -q "^written 3 documents, 0 failed, through line 1 of .*/b.json" "$ERR" && ok ||
		bad "several files: commit lines name the file: $(cat "$ERR")"
fi
run "$STRATA" get "$APP" id:purchase:purchase::10
check "pretty: fields" "$(jout -c '[.fields.price, .fields.emb.values, .fields.codes.values]')" \
	'[-3,[1,2],[-1,1]]'
check "count" "$(count)" "6"

# ---- refusals: each names the file, the line (and column) and the value ------------------
cat >"$T/bad.json" <<'EOF'
{
    "put": "id:purchase:purchase::0",
    "fields": {
        "price": 5
        "item": "lost"
    }
}
EOF
expect_fail "pretty, broken: one error with line and column" "bad\.json:5:9: invalid JSON" \
	"$STRATA" feed "$APP" "$T/bad.json"
check "pretty, broken: one error" "$(grep -c 'bad\.json' "$ERR")" "1"
printf '%s\n' '{"put": "id:purchase:purchase::1", "fields": {"price": "12x"}}' \
	'{"put": "id:purchase:purchase::2", "fields": {"tax": "abc"}}' \
	'{"put": "id:purchase:purchase::1", "fields": {"emb": "3f800000400000"}}' \
	'{"put": "id:purchase:purchase::1", "fields": {"codes": "3f80000040000000"}}' \
	'{"put": "id:purchase:purchase::13", "fields": {"price": "8"}}' >"$T/vals.jsonl"
printf '[{"put": "id:purchase:purchase::14", "fields": {}}\n' >"$T/open.json"
expect_fail "bad values" "vals\.jsonl:1: document 'id:purchase:purchase::1': field 'price': expected an integer \(int\), got '12x'" \
	"$STRATA" feed "$APP" "$T/vals.jsonl" "$T/open.json"
grep -q "vals\.jsonl:2: .*field 'tax': expected a number (double), got 'abc'" "$ERR" && ok ||
	bad "bad double: $(cat "$ERR")"
grep -q "vals\.jsonl:3: .*field 'emb': 14 hex digits for 2 cells; expected 16" "$ERR" && ok ||
	bad "short hex: $(cat "$ERR")"
grep -q "vals\.jsonl:4: .*field 'codes': 16 hex digits for 2 cells; expected 4 (2 a cell of int8)" \
	"$ERR" && ok || bad "int8 hex of floats: $(cat "$ERR")"
grep -q "^strata: .*open\.json:2:1: the JSON array is not closed" "$ERR" && ok ||
	bad "broken array named by file: $(cat "$ERR")"
check "bad values: totals" "$(jout '[.written, .failed] | @csv')" "2,4"
run "$STRATA" get "$APP" id:purchase:purchase::1
check "bad values: stored documents kept" "$(jout '[.fields.price, .fields.item] | @csv')" \
	'1000,"Rocker arm"'
expect_fail "missing file feeds nothing" "nosuch\.json: No such file" \
	"$STRATA" feed "$APP" "$T/a.jsonl" "$T/nosuch.json"
check "missing file: count" "$(count)" "8"
expect_fail "stdin twice" "standard input \(-\) can be fed once" "$STRATA" feed "$APP" - -

# Arithmetic updates (Vespa's increment, decrement, multiply, divide): the
# operand a double, integers truncated toward zero, an absent value 0; a
# result out of the type's range, an integer divided by 0, a string field
# and a bad operand are refused with the field, and leave what is stored.
cat >"$T/arith.jsonl" <<'EOF'
{"put": "id:purchase:purchase::a1", "fields": {"price": 5, "tax": 0.5, "date": 10}}
{"update": "id:purchase:purchase::a1", "fields": {"price": {"increment": 2}, "tax": {"multiply": 3}, "date": {"decrement": "4"}}}
{"update": "id:purchase:purchase::a1", "fields": {"price": {"divide": -2}}}
{"put": "id:purchase:purchase::a2", "fields": {"item": "Bolt"}}
{"update": "id:purchase:purchase::a2", "fields": {"price": {"increment": 7}, "tax": {"divide": 4}}}
{"update": "id:purchase:purchase::a1", "fields": {"price": {"multiply": 3e9}}}
{"update": "id:purchase:purchase::a1", "fields": {"price": {"divide": 0}}}
{"update": "id:purchase:purchase::a1", "fields": {"item": {"increment": 1}}}
{"update": "id:purchase:purchase::a1", "fields": {"tax": {"increment": "much"}}}
EOF
run "$STRATA" feed "$APP" "$T/arith.jsonl"
check "arithmetic: totals" "$(jout '[.written, .failed] | @csv')" "5,4"
grep -q "arith\.jsonl:6: .*field 'price': multiply by 3e+09 gives -9000000000, out of range for int" \
	"$ERR" && ok || bad "arithmetic out of range: $(cat "$ERR")"
grep -q "arith\.jsonl:7: .*field 'price': an integer divided by 0" "$ERR" && ok ||
	bad "arithmetic divide by 0: $(cat "$ERR")"
grep -q "arith\.jsonl:8: .*field 'item': 'increment' needs a single-value number field" "$ERR" && ok ||
	bad "arithmetic on a string: $(cat "$ERR")"
grep -q "arith\.jsonl:9: .*field 'tax': 'increment' needs a finite number, got 'much'" "$ERR" && ok ||
	bad "arithmetic bad operand: $(cat "$ERR")"
run "$STRATA" get "$APP" id:purchase:purchase::a1
check "arithmetic: applied in order" "$(jout -c '[.fields.price, .fields.tax, .fields.date]')" '[-3,1.5,6]'
run "$STRATA" get "$APP" id:purchase:purchase::a2
check "arithmetic: an absent value is 0" "$(jout -c '[.fields.price, .fields.tax, .fields.item]')" \
	'[7,0,"Bolt"]'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
