#!/bin/sh
# text.sh: end-to-end tests of text search through the strata CLI: a
# schema with text-indexed fields (match: text with stemming, match: word,
# a fieldset, a field outside the document), 'contains' with single words,
# phrases and accents, weakAnd and its pruning, update and remove keeping
# the index exact, and a feed killed with SIGKILL after which the documents
# and the text index agree.
#
#   sh tests/text.sh [STRATA]
#
# The last line is "N passed, M failed"; the exit status is 1 when any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=text
. "$here/clitest.sh"
APP=$T/docs

mkdir -p "$APP/schemas"
cat >"$APP/schemas/doc.sd" <<'EOS'
schema doc {
    document doc {
        field title type string {
            indexing: summary | index
            index: enable-bm25
        }
        field tag type string {
            indexing: summary | attribute | index
            match: word
        }
        field n type int { indexing: summary | attribute }
        field code type string {
            indexing: summary | index
            match: prefix
        }
        field note type string {
            indexing: summary | index
            summary: tokens
        }
    }
    document-summary debug {
        summary title {}
        summary title_tokens {
            source: title
            tokens
        }
        summary tag_tokens { source: tag  tokens }
    }
    fieldset default { fields: title }
    rank-profile default { first-phase { expression: attribute(n) } }
    rank-profile bm25 {
        first-phase { expression: bm25(title) }
        match-features: bm25(title) fieldLength(title) matches(title) matches(tag)
    }
    rank-profile native {
        first-phase { expression: nativeRank }
        second-phase { expression: nativeRank(title, tag) * 2 }
        match-features: nativeRank nativeRank(title) nativeRank(tag) nativeRank(n) nativeFieldMatch nativeFieldMatch(title)
    }
    field heading type string { indexing: input title | index }
}
EOS
cat >"$APP/feed.jsonl" <<'EOS'
{"put": "id:doc:doc::1", "fields": {"title": "Running shoes for runners", "tag": "New York", "n": 1, "code": "Strata engine", "note": "Big DOGS, 2 cats"}}
{"put": "id:doc:doc::2", "fields": {"title": "The shoe runs", "tag": "new york", "n": 2, "code": "stratum"}}
{"put": "id:doc:doc::3", "fields": {"title": "Café crème, shoes running", "tag": "Paris", "n": 3}}
EOS
expect_ok "deploy" "$STRATA" deploy "$APP"
expect_ok "feed" "$STRATA" feed "$APP" "$APP/feed.jsonl"

check "stemmed word" "$(ids 'title contains "run"')" "3,2,1"
check "field outside the document" "$(ids 'heading contains "run"')" "3,2,1"
check "case and stem" "$(ids 'title contains "RUNNING"')" "3,2,1"
check "phrase" "$(ids 'title contains "running shoes"')" "1"
check "phrase of stems" "$(ids 'title contains "shoes running"')" "3,2"
check "accents removed" "$(ids 'title contains "CAFE"')" "3"
check "no such word" "$(ids 'title contains "sandal"')" ""
check "match: word, whole value" "$(ids 'tag contains "NEW YORK"')" "2,1"
check "match: word, not a part" "$(ids 'tag contains "new"')" ""
check "and, not" "$(ids 'title contains "run" and !(title contains "cafe")')" "2,1"
check "match: prefix" "$(ids 'code contains "STRAT"')" "2,1"
check "match: prefix, whole word" "$(ids 'code contains "stratum"')" "2"
check "match: prefix, two words" "$(ids 'code contains "eng str"')" "1"
check "match: prefix, no term" "$(ids 'code contains "x"')" ""
check "or, with a filter" "$(ids '(title contains "creme" or title contains "runner") and n < 3')" "1"

# bm25 against the formula, computed here: k1 1.2, b 0.75, N 3 documents,
# idf(n) = log(1 + (N - n + 0.5) / (n + 0.5)), average length 11/3 (the
# titles tokenize to run shoe for runner / the shoe run / cafe creme shoe run)
bm25() { # TF DL N: one term's score
	awk -v tf="$1" -v dl="$2" -v n="$3" 'BEGIN { idf = log(1 + (3 - n + 0.5) / (n + 0.5))
		printf "%.9f", idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / (11 / 3))) }'
}
if expect_ok "query bm25" "$STRATA" query "$APP" --profile bm25 \
	--yql 'select * from sources * where title contains "running" or title contains "cafe" or tag contains "paris"'; then
	check "bm25 order" "$(jout '[.root.children[].id | sub("id:doc:doc::"; "")] | join(",")')" "3,2,1"
	check "bm25 values" "$(jout '[.root.children[] | .relevance * 1e9 | round] | map(tostring) | join(",")')" \
		"$(awk -v a="$(bm25 1 4 3)" -v b="$(bm25 1 4 1)" -v c="$(bm25 1 3 3)" -v d="$(bm25 1 4 3)" \
			'BEGIN { printf "%d,%d,%d", (a + b) * 1e9 + 0.5, c * 1e9 + 0.5, d * 1e9 + 0.5 }')"
	check "text match-features" "$(jout '[.root.children[].fields.matchfeatures | "\(.["fieldLength(title)"]) \(.["matches(title)"]) \(.["matches(tag)"])"] | join(",")')" \
		"4 1 1,3 1 0,4 1 0"
fi
mkdir -p "$T/bad/schemas"
sed 's/expression: bm25(title)/expression: bm25(tag)/' "$APP/schemas/doc.sd" >"$T/bad/schemas/doc.sd"
expect_fail "bm25 needs enable-bm25" "doc\\.sd:32:40: bm25\\(tag\\) needs 'index: enable-bm25'" \
	"$STRATA" deploy "$T/bad"

# nativeRank against its tables, computed here: a word first at token pos,
# n times, scores (0.5 * 8000 * exp(-pos / 12.5) + 0.5 * (1500 + 4000 *
# log(1 + n / 19))) over the same at pos 0 and n 255; nativeFieldMatch(fields)
# is the mean over the query's words on those fields, each weighted by its
# weight (100) times its significance, Vespa's 0.5 + 0.5 * (ln 1e6 - ln
# max(1, df * 1e6 / 3)) / ln 1e6 for a word in df of the 3 documents: R for
# running (in every title), C for cafe and paris (in one document each).
# Query words: running and cafe on title, paris on tag.  nativeProximity: only document 3 has the
# pair (running, cafe) on title, cafe 3 tokens before: the reverse table
# 400 * exp(-(3 - 1) / 3), half of it, over 450: p = 4/9 * exp(-2/3).
# nativeRank is (100 * fieldMatch + 25 * proximity + 100 * attributeMatch)
# over the weights of the parts its fields use: text fields the first two,
# attributes without a text index (n) the third, 0 here (no term on them).
native() { # EXPR over s(pos, n): the value times 1e9, rounded
	awk "function t(p, n) { return 4000 * exp(-p / 12.5) + 0.5 * (1500 + 4000 * log(1 + n / 19)) }
		function s(p, n) { return t(p, n) / t(0, 255) }
		function g(df,   f) { f = df * 1e6 / 3; if (f < 1) f = 1; return 0.5 + 0.5 * (log(1e6) - log(f)) / log(1e6) }
		BEGIN { R = g(3); C = g(1); printf \"%d\", ($1) * 1e9 + 0.5 }"
}
if expect_ok "query nativeRank" "$STRATA" query "$APP" --profile native \
	--yql 'select * from sources * where title contains "running" or title contains "cafe" or tag contains "paris"'; then
	check "nativeRank order" "$(jout '[.root.children[].id | sub("id:doc:doc::"; "")] | join(",")')" "3,1,2"
	check "nativeRank(title, tag) in the second phase" \
		"$(jout '[.root.children[] | .relevance * 1e9 | round] | map(tostring) | join(",")')" \
		"$(native '2 * (0.8 * (R * s(3, 1) + 2 * C * s(0, 1)) / (R + 2 * C) + 0.2 * 4 / 9 * exp(-2 / 3))'),$(native '2 * 0.8 * R * s(0, 1) / (R + 2 * C)'),$(native '2 * 0.8 * R * s(2, 1) / (R + 2 * C)')"
	check "nativeRank match-features" \
		"$(jout '[.root.children[].fields.matchfeatures | [.nativeRank, .["nativeRank(title)"], .["nativeRank(tag)"], .["nativeRank(n)"]] | map(. * 1e9 | round | tostring) | join(" ")] | join(",")')" \
		"$(native '(100 * (R * s(3, 1) + 2 * C * s(0, 1)) / (R + 2 * C) + 25 * 4 / 9 * exp(-2 / 3)) / 225') $(native '0.8 * (R * s(3, 1) + C * s(0, 1)) / (R + C) + 0.2 * 4 / 9 * exp(-2 / 3)') $(native '0.8 * s(0, 1)') 0,$(native '100 * R * s(0, 1) / (R + 2 * C) / 225') $(native '0.8 * R * s(0, 1) / (R + C)') 0 0,$(native '100 * R * s(2, 1) / (R + 2 * C) / 225') $(native '0.8 * R * s(2, 1) / (R + C)') 0 0"
	check "nativeFieldMatch match-features" \
		"$(jout '[.root.children[].fields.matchfeatures | [.nativeFieldMatch, .["nativeFieldMatch(title)"]] | map(. * 1e9 | round | tostring) | join(" ")] | join(",")')" \
		"$(native '(R * s(3, 1) + 2 * C * s(0, 1)) / (R + 2 * C)') $(native '(R * s(3, 1) + C * s(0, 1)) / (R + C)'),$(native 'R * s(0, 1) / (R + 2 * C)') $(native 'R * s(0, 1) / (R + C)'),$(native 'R * s(2, 1) / (R + 2 * C)') $(native 'R * s(2, 1) / (R + C)')"
fi
# {weight: 300} on cafe: it weighs three times running in nativeFieldMatch
if expect_ok "query nativeRank, a weight" "$STRATA" query "$APP" --profile native \
	--yql 'select * from sources * where title contains "running" or title contains ({weight: 300}"cafe")'; then
	check "nativeFieldMatch(title) with a term's weight" \
		"$(jout '[.root.children[] | [.id, (.fields.matchfeatures["nativeFieldMatch(title)"] * 1e9 | round | tostring)] | join(" ")] | join(",")')" \
		"id:doc:doc::3 $(native '(R * s(3, 1) + 3 * C * s(0, 1)) / (R + 3 * C)'),id:doc:doc::1 $(native 'R * s(0, 1) / (R + 3 * C)'),id:doc:doc::2 $(native 'R * s(2, 1) / (R + 3 * C)')"
fi
sed 's/expression: nativeRank }/expression: nativeRank(title, nosuch) }/' "$APP/schemas/doc.sd" >"$T/bad/schemas/doc.sd"
expect_fail "nativeRank of an unknown field" "doc\\.sd:[0-9]*:[0-9]*: nativeRank\\(\\): unknown field 'nosuch'" \
	"$STRATA" deploy "$T/bad"
sed 's/expression: nativeRank }/expression: nativeRank(title, 1) }/' "$APP/schemas/doc.sd" >"$T/bad/schemas/doc.sd"
expect_fail "nativeRank of a number" "nativeRank\\(\\) takes field names" "$STRATA" deploy "$T/bad"

# the summary setting tokens: the terms the text index holds
req '{"yql": "select * from sources * where n = 3", "presentation.summary": "debug"}' >/dev/null
check "tokens in a document-summary" \
	"$(jout '.root.children[0].fields | "\(.title)|\(.title_tokens | join(" "))|\(.tag_tokens | join(" "))"')" \
	"Café crème, shoes running|cafe creme shoe run|paris"
req '{"yql": "select * from sources * where n = 1"}' >/dev/null
check "summary: tokens on a field" "$(jout '.root.children[0].fields.note | join(" ")')" "big dog 2 cat"
sed 's/source: tag  tokens/source: n tokens/' "$APP/schemas/doc.sd" >"$T/bad/schemas/doc.sd"
expect_fail "tokens of a field without a text index" \
	"doc\\.sd:[0-9]*:[0-9]*: summary field 'tag_tokens' shows the tokens of 'n', which has no text index" \
	"$STRATA" deploy "$T/bad"
sed '/field note/,/}/s/indexing: summary | index$/indexing: summary/' "$APP/schemas/doc.sd" >"$T/bad/schemas/doc.sd"
expect_fail "summary: tokens without a text index" \
	"doc\\.sd:[0-9]*:[0-9]*: 'summary: tokens' on 'note', which has no text index" \
	"$STRATA" deploy "$T/bad"
sed 's/source: title$/source: title  tokens tokens geopos/' "$APP/schemas/doc.sd" >"$T/bad/schemas/doc.sd"
expect_fail "another transform still refused" "summary setting 'geopos' is not supported" \
	"$STRATA" deploy "$T/bad"
Y='"yql": "select * from sources * where'
check "userQuery, default fieldset, -word" "$(req "{$Y userQuery()\", \"query\": \"running -cafe\"}")" "2,1"
check "userQuery, model.defaultIndex" \
	"$(req "{$Y userQuery()\", \"query\": \"+shoe\", \"model\": {\"defaultIndex\": \"title\"}}")" "3,2,1"
check "userQuery, field:word" "$(req "{$Y userQuery()\", \"query\": \"tag:paris\"}")" "3"
check "userQuery, no words" "$(req "{$Y userQuery()\", \"query\": \"  \"}")" ""
check "userInput, a phrase" "$(req "{$Y userInput(@q)\", \"q\": \"\\\"shoes running\\\"\"}")" "3,2"
check "phrase()" "$(ids 'title contains phrase("running", "shoes")')" "1"
check "weakAnd with targetHits >= matches: every match" \
	"$(ids '{targetHits: 3}weakAnd(title contains "cafe", title contains "shoe")')" "3,2,1"
# targetHits 1: 1 enters the empty heap, 2 ties with it and is skipped, 3
# (cafe and shoe) scores above it
check "weakAnd with targetHits 1 prunes" \
	"$(ids '{targetHits: 1}weakAnd(title contains "cafe", title contains "shoe")')" "3,1"
check "weakAnd default targetHits" "$(ids 'weakAnd(title contains "runner", tag contains "paris")')" "3,1"
check "weakAnd over a fieldset" "$(ids 'weakAnd(default contains "cafe")')" "3"
check "weakAnd of a phrase refused" \
	"$(ids 'weakAnd(title contains "running shoes")')" \
	'error: strata: yql:1:39: a phrase in weakAnd() ("running shoes": several words) is not supported'
check "weakAnd on match: prefix refused" "$(ids 'weakAnd(code contains "str")')" \
	"error: strata: yql:1:39: weakAnd() over 'code' (match: prefix) is not supported"
check "contains on a fieldset" "$(ids 'default contains "runner"')" "1"
if expect_ok "rank()" "$STRATA" query "$APP" --profile bm25 \
	--yql 'select * from sources * where rank(title contains "cafe", title contains "shoe")'; then
	check "rank(): matches by its first, ranks by all" \
		"$(jout '[.root.children[] | .id, (.relevance * 1e9 | round)] | map(tostring) | join(",")')" \
		"$(awk -v a="$(bm25 1 4 1)" -v b="$(bm25 1 4 3)" 'BEGIN { printf "id:doc:doc::3,%d", (a + b) * 1e9 + 0.5 }')"
fi

# update and remove keep the index exact
printf '%s\n' '{"update": "id:doc:doc::2", "fields": {"title": {"assign": "A red sandal"}}}' \
	'{"remove": "id:doc:doc::3"}' >"$T/ops.jsonl"
expect_ok "update and remove" "$STRATA" feed "$APP" "$T/ops.jsonl"
check "updated: old words gone" "$(ids 'title contains "shoe"')" "1"
check "updated: new words found" "$(ids 'title contains "sandals"')" "2"
check "updated: the field outside the document follows" "$(ids 'heading contains "sandals"')" "2"
check "updated: untouched field kept" "$(ids 'tag contains "new york"')" "2,1"
check "removed" "$(ids 'title contains "cafe"')" ""

# killed mid-feed: every document the feed reported written is stored, and
# the index finds exactly the stored documents
N=20000
awk -v n=$N 'BEGIN { for (i = 1; i <= n; i++)
	printf "{\"put\": \"id:doc:doc::k%d\", \"fields\": {\"title\": \"common words number %d\", \"n\": %d}}\n", i, i, i }' \
	>"$T/many.jsonl"
feed_killed "$APP" "$T/many.jsonl"
stored=$(total 'n > 10 or title contains "common"')
indexed=$(total 'title contains "common words"')
check "killed feed: index agrees with the store" "$indexed" "$stored"
[ "$indexed" -ge "$w" ] 2>/dev/null && ok || bad "killed feed: $indexed found, $w reported written"
check "killed feed: last written found" "$(ids "title contains \"number $w\"" | cut -d, -f1)" "k$w"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
