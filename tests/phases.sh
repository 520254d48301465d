#!/bin/sh
# phases.sh: end-to-end tests of what a rank profile does around its
# expressions, through the strata CLI on a small application of five items:
# the global phase (normalize_linear, reciprocal_rank_fusion, its
# rerank-count and the shift of the hits it leaves), first-phase
# rank-score-drop-limit, query inputs a query leaves out, and an
# application that was never deployed.  Expected orders and scores are
# worked out here by hand from the five documents.
#
#   sh tests/phases.sh [STRATA]
#
# The last line is "N passed, M failed"; the exit status is 1 when any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=phases
. "$here/clitest.sh"
APP=$T/items

mkdir -p "$APP/schemas"
cat >"$APP/schemas/item.sd" <<'EOF'
schema item {
    document item {
        field a type double { indexing: attribute | summary }
        field b type double { indexing: attribute | summary }
        field v type tensor<float>(x[3]) { indexing: attribute | summary }
    }
    rank-profile base {
        first-phase { expression: attribute(a) }
    }
    rank-profile lin inherits base {
        global-phase {
            expression: normalize_linear(attribute(a)) + 2 * normalize_linear(attribute(b))
        }
    }
    rank-profile rrf inherits base {
        global-phase {
            expression: reciprocal_rank_fusion(attribute(a), attribute(b))
            rerank-count: 3
        }
    }
    rank-profile both inherits base {
        second-phase { expression: 10 - attribute(a) }
        global-phase { expression: firstPhase * 100 }
    }
    rank-profile drop inherits base {
        first-phase { rank-score-drop-limit: 2 }
    }
    rank-profile need {
        inputs { query(q) tensor<float>(x[3]) }
        first-phase { expression: sum(query(q) * attribute(v)) }
    }
    rank-profile cst {
        constants {
            c tensor<float>(x[3]): file: constants/c.json
            k double: 2
            d tensor(x[3]): [1, 1, 1]
        }
        first-phase { expression: sum(constant(c) * attribute(v)) * constant(k) + sum(constant(d) * attribute(v)) }
    }
    rank-profile dflt {
        inputs { query(q) tensor<float>(x[3]): [1, 2, 3] }
        first-phase { expression: sum(query(q) * attribute(v)) }
    }
}
EOF
mkdir -p "$APP/constants"
echo '{"values": [1, 10, 100]}' >"$APP/constants/c.json"
cat >"$T/feed.jsonl" <<'EOF'
{"put": "id:t:item::1", "fields": {"a": 1, "b": 50, "v": [1, 0, 0]}}
{"put": "id:t:item::2", "fields": {"a": 2, "b": 40, "v": [0, 1, 0]}}
{"put": "id:t:item::3", "fields": {"a": 3, "b": 30, "v": [0, 0, 1]}}
{"put": "id:t:item::4", "fields": {"a": 4, "b": 0, "v": [1, 1, 1]}}
{"put": "id:t:item::5", "fields": {"a": 5, "b": 10, "v": [2, 0, 0]}}
EOF

# order PROFILE [ARGS...]: the ids of the result, in order, by number.
order() {
	p=$1
	shift
	run "$STRATA" query "$APP" --yql 'select * from sources * where true' --profile "$p" "$@"
	jout '[.root.children[]?.id | ltrimstr("id:t:item::")] | join(" ")'
}

# ---- never deployed ---------------------------------------------------------------
expect_fail "query before deploy" "not deployed|deploy" "$STRATA" query "$APP" \
	--yql 'select * from sources * where true'
expect_fail "feed before deploy" "not deployed|deploy" "$STRATA" feed "$APP" "$T/feed.jsonl"
[ -e "$APP/.strata" ] && bad "a query or feed before deploy created the store" || ok

expect_ok "deploy" "$STRATA" deploy "$APP"
expect_ok "feed" "$STRATA" feed "$APP" "$T/feed.jsonl"

# ---- the global phase ------------------------------------------------------------
check "first phase only" "$(order base)" "5 4 3 2 1"
# (a - 1) / 4 + 2 * b / 50: 2, 1.85, 1.7, 0.75, 1.4
check "normalize_linear order" "$(order lin)" "1 2 3 5 4"
check "normalize_linear score" "$(jout '.root.children[1].relevance')" "1.85"
# Only the best 3 by first phase (5, 4, 3) are re-ranked: a ranks them
# 5, 4, 3 and b 3, 5, 4, so 5 scores 1/61 + 1/62, 3 1/63 + 1/61, 4 1/62 + 1/63.
check "reciprocal_rank_fusion order" "$(order rrf)" "5 3 4 2 1"
check "reciprocal_rank_fusion score" \
	"$(jout '.root.children[0].relevance * 1e12 | round')" \
	"$(awk 'BEGIN { printf "%.0f", (1/61 + 1/62) * 1e12 }')"
# 2 and 1 keep their order below the lowest re-ranked: 2 at 1/62 + 1/63, 1 one lower.
check "not re-ranked shifted" \
	"$(jout '[.root.children[3,4].relevance] | (.[0] - .[1]) * 1e9 | round')" "1000000000"
check "not re-ranked below" "$(jout '.root.children[2].relevance >= .root.children[3].relevance')" \
	"true"
# Second phase reverses the first; the global phase restores it.
check "second phase then global" "$(order both)" "5 4 3 2 1"
check "global score" "$(jout '.root.children[0].relevance')" "500"
check "global paging" "$(order lin --hits 2 --offset 1)" "2 3"

# ---- rank-score-drop-limit ----------------------------------------------------------
check "drop limit" "$(order drop)" "5 4 3"
check "drop limit count" "$(jout '.root.fields.totalCount')" "3"

# ---- constants ------------------------------------------------------------------------
# 2 * (c . v) + sum(v): 3, 21, 201, 225, 6
check "constants from a file and inline" "$(order cst)" "4 3 2 5 1"
check "constant score" "$(jout '.root.children[0].relevance')" "225"

# ---- query inputs ----------------------------------------------------------------------
check "declared default" "$(order dflt)" "4 3 2 5 1"
check "declared default score" "$(jout '.root.children[0].relevance')" "6"
expect_fail "missing tensor input" "query\\(q\\) is not given.*item\\.sd:[0-9]+:[0-9]+" \
	"$STRATA" query "$APP" --yql 'select * from sources * where true' --profile need
expect_fail "nearestNeighbor without its tensor" "nearestNeighbor: query\\(q\\) is not given" \
	"$STRATA" query "$APP" --profile need \
	--yql 'select * from sources * where {targetHits: 2}nearestNeighbor(v, q)'
check "given input" "$(order need --input 'query(q)=[0, 0, 1]')" "3 4 1 2 5"
check "nearestNeighbor with its tensor" \
	"$(run "$STRATA" query "$APP" --profile need --input 'query(q)=[1, 0, 0]' \
		--yql 'select * from sources * where {targetHits: 2}nearestNeighbor(v, q)'
	   jout '[.root.children[]?.id | ltrimstr("id:t:item::")] | sort | join(" ")')" "1 5"

# ---- deploy errors: constant files ------------------------------------------------------
# Each breaks the constant file; deploy names the schema position and the file.
line=$(grep -n 'file: constants/c.json' "$APP/schemas/item.sd" | cut -d: -f1)
mv "$APP/constants/c.json" "$T/c.json"
expect_fail "missing constant file" "item\.sd:$line:[0-9]+: constant 'c'.*c\.json not found" \
	"$STRATA" deploy "$APP"
echo '{"values": [1, 10' >"$APP/constants/c.json"
expect_fail "constant file not JSON" "item\.sd:$line:[0-9]+: constant 'c'.*c\.json:[0-9]+:[0-9]+:" \
	"$STRATA" deploy "$APP"
echo '{"values": [1, 10]}' >"$APP/constants/c.json"
expect_fail "constant file of the wrong shape" "item\.sd:$line:[0-9]+: constant 'c'.*c\.json" \
	"$STRATA" deploy "$APP"
mv "$T/c.json" "$APP/constants/c.json"
check "after constant errors" "$(order cst)" "4 3 2 5 1"

# ---- deploy lists every error ----------------------------------------------------------
BAD=$T/bad
mkdir -p "$BAD/schemas"
cat >"$BAD/schemas/a.sd" <<'EOF'
schema a {
    document a {
        field x type double { indexing: attribute }
    }
    rank-profile p1 { first-phase { expression: attribute(x) + } }
    rank-profile p2 { first-phase { expression: attribute(x) } }
}
EOF
cat >"$BAD/schemas/b.sd" <<'EOF'
schema b {
    document b { field x type double { indexing: attribute } }
    rank-profile p1 { first-phase { expression: attribute(nope) } }
    rank-profile p2 { first-phase { expression: closenes(field, x) } }
}
EOF
cat >"$BAD/schemas/c.sd" <<'EOF'
schema c {
    document c { field y type strin { indexing: attribute } }
}
EOF
# every file parses first, then the documents resolve, then the profiles compile
expect_fail "deploy with four errors" "4 errors" "$STRATA" deploy "$BAD"
check "every error listed" "$(grep -c '^strata: .*\.sd:[0-9]*:[0-9]*: ' "$ERR")" "4"
check "errors in order" "$(grep -o '[abc]\.sd:[0-9]*:[0-9]*' "$ERR" | tr '\n' ' ')" \
	"a.sd:5:64 c.sd:2:31 b.sd:3:59 b.sd:4:49 "
[ -e "$BAD/.strata" ] && bad "a failed deploy created the store" || ok

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
