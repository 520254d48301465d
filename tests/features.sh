#!/bin/sh
# features.sh: end-to-end tests of Vespa's rank features through the strata
# CLI: query-term features (term(n), queryTermCount, fieldTermMatch,
# matchCount, averageFieldLength, num_docs_indexed) over text conditions and
# a fieldset, foreach, now/age/freshness with rank properties and the
# request's ranking.properties.vespa.now, strings compared by hash
# (attributes, string inputs, literals), closeness(f) of a tensor field,
# and the errors of misuse with their positions.  Every value is computed
# by hand in the comments.
#
#   sh tests/features.sh [STRATA]
#
# The last line is "N passed, M failed"; the exit status is 1 when any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=features
. "$here/clitest.sh"
APP=$T/feat

mkdir -p "$APP/schemas"
cat >"$APP/schemas/doc.sd" <<'EOS'
schema doc {
    document doc {
        field title type string {
            indexing: summary | index
        }
        field body type string {
            indexing: summary | index
        }
        field ts type long { indexing: summary | attribute }
        field n type int { indexing: summary | attribute }
        field city type string { indexing: summary | attribute }
        field words type array<string> { indexing: summary | attribute }
        field tags type weightedset<string> { indexing: summary | attribute }
        field v type tensor<float>(x[2]) {
            indexing: attribute
            attribute { distance-metric: euclidean }
        }
    }
    fieldset default { fields: title, body }
    constant sc {
        file: constants/sc.json
        type: tensor(k{})
    }
    rank-profile consts {
        constants {
            w tensor(k{}): {x: 2, "z": 1}
            m tensor<float>(k{}, i[2]): {x: [1, 2], y: [3, 4]}
            f tensor(k{}): file: constants/f.json
            v tensor(k{}, j{}): {{k: x, j: a}: 5, {j: b, k: z}: 7}
        }
        first-phase { expression: sum(tensorFromWeightedSet(attribute(tags), k) * constant(w)) + sum(constant(f)) + sum(constant(sc)) }
        match-features: constant(m) constant(v)
    }
    rank-profile terms {
        first-phase { expression: foreach(terms, t, fieldTermMatch(body, t).occurrences, true, sum) }
        match-features {
            queryTermCount
            term(0).significance
            term(1).weight
            fieldTermMatch(body, 0).occurrences
            fieldTermMatch(body, 1).firstPosition
            matchCount(body)
            averageFieldLength(body)
            num_docs_indexed
            foreach(terms, t, fieldTermMatch(body, t).occurrences, ">0", average)
            foreach(fields, f, matchCount(f), true, sum)
        }
    }
    rank-profile df {
        function df() { expression: queryTermDocumentFrequency(body) }
        function idf() { expression: log(1 + (num_docs_indexed - df + 0.5) / (df + 0.5)) }
        first-phase { expression: reduce(idf, sum, term) }
        match-features: queryTermDocumentFrequency(body) rankingExpression(idf)
    }
    rank-profile fm {
        first-phase { expression: fieldMatch(body) }
        match-features {
            fieldMatch(body).proximity
            fieldMatch(body).completeness
            fieldMatch(body).queryCompleteness
            fieldMatch(body).fieldCompleteness
            fieldMatch(body).matches
            fieldMatch(body).degradedMatches
            fieldMatch(body).earliness
            fieldMatch(body).head
            fieldMatch(body).tail
            fieldMatch(body).longestSequence
            fieldMatch(body).occurrence
            fieldMatch(body).segments
            fieldMatch(title)
            fieldMatch(body).weight
            fieldMatch(body).importance
            fieldMatch(body).weightedOccurrence
            fieldMatch(body).significantOccurrence
            textSimilarity(body)
            textSimilarity(body).proximity
            textSimilarity(body).order
            textSimilarity(body).fieldCoverage
        }
    }
    rank-profile nat {
        first-phase { expression: nativeRank(body, tags) }
        match-features: nativeProximity(body) nativeAttributeMatch(tags) nativeAttributeMatch(words) nativeAttributeMatch
    }
    rank-profile rnd {
        first-phase { expression: random }
        match-features: random random.match random(b).match
    }
    rank-profile am {
        first-phase { expression: attributeMatch(city) }
        match-features {
            attributeMatch(words).queryCompleteness
            attributeMatch(words).fieldCompleteness
            attributeMatch(words).matches
            attributeMatch(tags)
            attributeMatch(tags).totalWeight
            attributeMatch(tags).averageWeight
            attributeMatch(tags).maxWeight
            attributeMatch(tags).normalizedWeight
            attributeMatch(tags).fieldCompleteness
        }
    }
    rank-profile coll {
        first-phase { expression: sum(tensorFromWeightedSet(attribute(tags), k) * tensor(k{}):{x: 2, z: 1}) }
        match-features: tensorFromWeightedSet(attribute(tags)) tensorFromLabels(attribute(words), w)
    }
    rank-profile drop2 {
        first-phase { expression: attribute(n) }
        second-phase {
            expression: attribute(n) - 5
            rerank-count: 2
            rank-score-drop-limit: 3
        }
    }
    rank-profile drop3 {
        first-phase { expression: attribute(n) }
        global-phase {
            rank-score-drop-limit: 14
            expression: attribute(n) * 2
        }
    }
    rank-profile fresh {
        rank-properties {
            freshness(ts).maxAge: 1000
            freshness(ts).halfResponse: 100
        }
        first-phase { expression: freshness(ts) }
        match-features: now age(ts) freshness(ts).logscale
    }
    rank-profile city {
        inputs {
            query(where) string: "oslo"
        }
        first-phase { expression: if(attribute(city) == query(where), 1, 0) + if(attribute(city) == "rome", 10, 0) }
    }
    rank-profile near {
        inputs { query(q) tensor<float>(x[2]) }
        first-phase { expression: closeness(v) }
        match-features: distance(v) closeness(field, v) closeness(label, q1) distance(label, q1) closeness(label, q2) distance(label, q2)
    }
}
EOS
mkdir -p "$APP/constants"
echo '{"a": 1.5, "b": 2.5}' >"$APP/constants/f.json"
echo '{"cells": [{"address": {"k": "q"}, "value": 10}]}' >"$APP/constants/sc.json"
cat >"$T/feed.jsonl" <<'EOF'
{"put": "id:d:doc::1", "fields": {"title": "red shoes", "body": "red red shoes for running", "ts": 1000, "n": 1, "city": "oslo", "v": [0, 0], "words": ["a", "b", "c", "d"], "tags": {"x": 10, "y": 30, "z": 60}}}
{"put": "id:d:doc::2", "fields": {"title": "blue shirt", "body": "a blue shirt", "ts": 1900, "n": 7, "city": "rome", "v": [3, 4], "words": ["b", "b", "e"]}}
{"put": "id:d:doc::3", "fields": {"title": "green hat", "body": "hat", "ts": 1990, "n": 9, "city": "paris", "v": [1, 0]}}
EOF
expect_ok "deploy" "$STRATA" deploy "$APP"
expect_ok "feed" "$STRATA" feed "$APP" "$T/feed.jsonl"

# feature NAME: the match feature NAME of the first hit of the last query
feature() {
	jq -r --arg n "$1" '.root.children[0].fields.matchfeatures[$n]' "$OUT" 2>/dev/null
}

# Terms: "red" is term 0, "shoes" term 1, both searching title and body
# (the fieldset).  Document 1's body "red red shoes for running": red twice,
# shoes at position 2; bodies have 5, 3 and 1 tokens (average 3).
expect_ok "terms: query" "$STRATA" query "$APP" --profile terms \
	--yql 'select * from sources * where default contains "red" or default contains "shoes"'
check "terms: hit" "$(jout '.root.children[0].id')" "id:d:doc::1"
check "terms: first phase sums occurrences" "$(jout '.root.children[0].relevance')" "3"
check "terms: queryTermCount" "$(feature queryTermCount)" "2"
# significance of a term in 1 of 3 documents: 0.5 + 0.5 * ln(3) / ln(1e6)
sig=$(awk 'BEGIN { printf "%.6f", 0.5 + 0.5 * log(3) / log(1e6) }')
check "terms: term(0).significance" "$(feature 'term(0).significance' | awk '{ printf "%.6f", $1 }')" "$sig"
check "terms: term(1).weight" "$(feature 'term(1).weight')" "100"
check "terms: fieldTermMatch occurrences" "$(feature 'fieldTermMatch(body, 0).occurrences')" "2"
check "terms: fieldTermMatch firstPosition" "$(feature 'fieldTermMatch(body, 1).firstPosition')" "2"
check "terms: matchCount" "$(feature 'matchCount(body)')" "2"
check "terms: averageFieldLength" "$(feature 'averageFieldLength(body)')" "3"
check "terms: num_docs_indexed" "$(feature num_docs_indexed)" "3"
# (2 + 1) / 2 terms with occurrences
check "terms: foreach average" \
	"$(feature 'foreach(terms, t, fieldTermMatch(body, t).occurrences, ">0", average)')" "1.5"
# matchCount(title) 2 + matchCount(body) 2
check "terms: foreach fields" "$(feature 'foreach(fields, f, matchCount(f), true, sum)')" "4"

# queryTermDocumentFrequency(body): "red" (term 0) searches body, in 1 of 3
# documents; "blue" (term 1) searches only title: no cell.  idf of term 0:
# log(1 + (3 - 1 + 0.5) / (1 + 0.5))
expect_ok "df: query" "$STRATA" query "$APP" --profile df \
	--yql 'select * from sources * where body contains "red" or title contains "blue"'
check "df: tensor" "$(jout -c '.root.children[0].fields.matchfeatures["queryTermDocumentFrequency(body)"]')" \
	'{"type":"tensor(term{})","cells":{"0":1}}'
idf=$(awk 'BEGIN { printf "%.9f", log(1 + 2.5 / 1.5) }')
check "df: idf" "$(jout '.root.children[0].relevance' | awk '{ printf "%.9f", $1 }')" "$idf"
check "df: rankingExpression(idf)" \
	"$(jout -c '.root.children[0].fields.matchfeatures["rankingExpression(idf)"].cells | keys')" '["0"]'

# fieldMatch(body) of document 1, "red red shoes for running" (5 tokens), for
# "red" and "shoes": the best segment starts at the second "red" (adjacent to
# "shoes": proximity 1), head 1, tail 2; completeness 0.95 * 1 + 0.05 * 2/5;
# earliness 1 - 1 / (6 - 1); occurrence 2/5 + 1/5; the match is
# (0.9 * 1 * 1 * 0.97^2 + 0.05 * 0.8 + 0.05 * 1 + 0.05 * 0.6) / 1.05.
expect_ok "fieldMatch: query" "$STRATA" query "$APP" --profile fm \
	--yql 'select * from sources * where default contains "red" or default contains "shoes"'
fm=$(awk 'BEGIN { printf "%.9f", (0.9 * 0.97 * 0.97 + 0.04 + 0.05 + 0.03) / 1.05 }')
check "fieldMatch: score" "$(jout '.root.children[0].relevance' | awk '{ printf "%.9f", $1 }')" "$fm"
check "fieldMatch: metrics" "$(jq -r '.root.children[0].fields.matchfeatures | [.["fieldMatch(body).proximity"], .["fieldMatch(body).completeness"], .["fieldMatch(body).queryCompleteness"], .["fieldMatch(body).fieldCompleteness"], .["fieldMatch(body).matches"], .["fieldMatch(body).degradedMatches"]] | map(tostring) | join(",")' "$OUT")" \
	"1,0.97,1,0.4,2,0"
check "fieldMatch: placement" "$(jq -r '.root.children[0].fields.matchfeatures | [.["fieldMatch(body).earliness"], .["fieldMatch(body).head"], .["fieldMatch(body).tail"], .["fieldMatch(body).longestSequence"], .["fieldMatch(body).occurrence"], .["fieldMatch(body).segments"]] | map(tostring) | join(",")' "$OUT")" \
	"0.8,1,2,2,0.6000000000000001,1"
# both query terms matched: weight and importance 1; occurrences 2 + 1 of
# 5 each at most (the field's length): 0.3, the same weighted by the terms'
# (equal) significance
check "fieldMatch: relative to the query" "$(jq -r '.root.children[0].fields.matchfeatures | [.["fieldMatch(body).weight"], .["fieldMatch(body).importance"], .["fieldMatch(body).weightedOccurrence"], .["fieldMatch(body).significantOccurrence"]] | map(. * 1e9 | round | tostring) | join(",")' "$OUT")" \
	"1000000000,1000000000,300000000,300000000"
# textSimilarity(body): red at 0, then shoes 2 tokens on, in query order:
# proximity 1 - (1/8)^2, order 1, query coverage 1, field coverage 2/5
check "textSimilarity" "$(jq -r '.root.children[0].fields.matchfeatures | [.["textSimilarity(body)"], .["textSimilarity(body).proximity"], .["textSimilarity(body).order"], .["textSimilarity(body).fieldCoverage"]] | map(. * 1e9 | round | tostring) | join(",")' "$OUT")" \
	"874531250,984375000,1000000000,400000000"
# title "red shoes": everything matched in order, at the start
check "fieldMatch: title" "$(feature 'fieldMatch(title)')" "1"

# nativeProximity(body) of document 1: red (0, 1) then shoes (2), one token
# apart forward: 500 * exp(0), half, over 450.  nativeAttributeMatch: tags
# matches x (weight 10 of 255) for its one term; words has "b" once for its
# two terms; over all attributes: 11/255 over 3 terms.  nativeRank(body,
# tags): (100 * nativeFieldMatch(body) + 25 * proximity + 100 * 10/255) / 225,
# nativeFieldMatch(body) the mean of red (first at 0, twice) and shoes (at
# 2, once) by nativeRank's tables (tests/text.sh).
expect_ok "native: query" "$STRATA" query "$APP" --profile nat \
	--yql 'select * from sources * where body contains "red" or body contains "shoes" or tags contains "x" or words contains "b" or words contains "q"'
check "native: hit" "$(jout '.root.children[0].id')" "id:d:doc::1"
n9() { awk "function t(p, n) { return 4000 * exp(-p / 12.5) + 0.5 * (1500 + 4000 * log(1 + n / 19)) }
	function s(p, n) { return t(p, n) / t(0, 255) }
	BEGIN { printf \"%.9f\", $1 }"; }
r9() { awk '{ printf "%.9f", $1 }'; }
check "native: proximity" "$(feature 'nativeProximity(body)' | r9)" "$(n9 '250 / 450')"
check "native: attribute match" \
	"$(feature 'nativeAttributeMatch(tags)' | r9),$(feature 'nativeAttributeMatch(words)' | r9),$(feature nativeAttributeMatch | r9)" \
	"$(n9 '10 / 255'),$(n9 '1 / 255 / 2'),$(n9 '11 / 255 / 3')"
check "native: nativeRank" "$(jout '.root.children[0].relevance' | r9)" \
	"$(n9 '(100 * (s(0, 2) + s(2, 1)) / 2 + 25 * 250 / 450 + 100 * 10 / 255) / 225')"

# random: in [0, 1), the first phase's value the feature's; random.match the
# same in every query, and another for another name
expect_ok "random: query" "$STRATA" query "$APP" --profile rnd --yql 'select * from sources * where true'
check "random: one value per document" "$(jout '[.root.children[] | (.relevance == .fields.matchfeatures.random and .relevance >= 0 and .relevance < 1)] | all')" "true"
m1=$(jout -cS '[.root.children[] | {(.id): .fields.matchfeatures["random.match"]}] | add')
check "random.match: another name" "$(jout '[.root.children[].fields.matchfeatures | .["random.match"] != .["random(b).match"]] | all')" "true"
expect_ok "random: again" "$STRATA" query "$APP" --profile rnd --yql 'select * from sources * where true'
check "random.match: stable" "$(jout -cS '[.root.children[] | {(.id): .fields.matchfeatures["random.match"]}] | add')" "$m1"

# attributeMatch: five terms on attributes (words 2, tags 2, city 1).
# Document 1: words has "a" of its 4 values (query completeness 1/2, field
# completeness 1/4); tags has x (10) and y (30) of 100 in all: total 40,
# average 20, max 30, normalized 40 / (256 * 5), completeness
# 1 * (0.95 + 0.05 * 0.4); city "oslo" matches its one term: 1.
expect_ok "attributeMatch: query" "$STRATA" query "$APP" --profile am --yql 'select * from sources * where words contains "a" or words contains "q" or tags contains "x" or tags contains "y" or city contains "oslo"'
check "attributeMatch: hit" "$(jout '.root.children[0].id')" "id:d:doc::1"
check "attributeMatch: city" "$(jout '.root.children[0].relevance')" "1"
check "attributeMatch: words" "$(feature 'attributeMatch(words).queryCompleteness'),$(feature 'attributeMatch(words).fieldCompleteness'),$(feature 'attributeMatch(words).matches')" "0.5,0.25,1"
check "attributeMatch: tags weights" "$(feature 'attributeMatch(tags).totalWeight'),$(feature 'attributeMatch(tags).averageWeight'),$(feature 'attributeMatch(tags).maxWeight')" "40,20,30"
check "attributeMatch: tags normalized" "$(feature 'attributeMatch(tags).normalizedWeight'),$(feature 'attributeMatch(tags).fieldCompleteness')" "0.03125,0.4"
check "attributeMatch: tags completeness" "$(feature 'attributeMatch(tags)' | awk '{ printf "%.9f", $1 }')" "0.970000000"

# Collections as tensors: tags {x: 10, y: 30, z: 60} weighs x 2 and z 1:
# 80; words as labels, each distinct one 1; no value: the empty tensor
expect_ok "collections: query" "$STRATA" query "$APP" --profile coll --yql 'select * from sources * where true'
check "collections: order" "$(jout '[.root.children[] | "\(.id)=\(.relevance)"] | join(",")')" \
	"id:d:doc::1=80,id:d:doc::2=0,id:d:doc::3=0"
check "collections: weighted set" \
	"$(jq -cS '.root.children[0].fields.matchfeatures["tensorFromWeightedSet(attribute(tags))"]' "$OUT")" \
	'{"cells":{"x":10,"y":30,"z":60},"type":"tensor(tags{})"}'
check "collections: labels" \
	"$(jq -cS '.root.children[1].fields.matchfeatures["tensorFromLabels(attribute(words), w)"]' "$OUT")" \
	'{"cells":{"b":1,"e":1},"type":"tensor(w{})"}'
check "collections: none" \
	"$(jq -cS '.root.children[2].fields.matchfeatures["tensorFromLabels(attribute(words), w)"]' "$OUT")" \
	'{"cells":{},"type":"tensor(w{})"}'

# Mapped constants: tags {x: 10, y: 30, z: 60} * w {x: 2, z: 1} is 80; the
# file f sums to 4, the schema's constant sc to 10
expect_ok "constants: query" "$STRATA" query "$APP" --profile consts --yql 'select * from sources * where true'
check "constants: scores" "$(jout '[.root.children[] | "\(.id)=\(.relevance)"] | join(",")')" \
	"id:d:doc::1=94,id:d:doc::2=14,id:d:doc::3=14"
check "constants: mixed" "$(jq -cS '.root.children[0].fields.matchfeatures["constant(m)"]' "$OUT")" \
	'{"cells":[{"address":{"i":"0","k":"x"},"value":1},{"address":{"i":"1","k":"x"},"value":2},{"address":{"i":"0","k":"y"},"value":3},{"address":{"i":"1","k":"y"},"value":4}],"type":"tensor(k{},i[2])"}'
check "constants: verbose" "$(jq -cS '[.root.children[0].fields.matchfeatures["constant(v)"].cells[] | "\(.address.k)\(.address.j)=\(.value)"] | sort | join(",")' "$OUT")" \
	'"xa=5,zb=7"'

# rank-score-drop-limit after the second phase: n is 9, 7, 1; the best two
# are re-ranked to 4 and 2, and 2 <= 3 goes; the third, not re-ranked, stays.
expect_ok "drop2: query" "$STRATA" query "$APP" --profile drop2 --yql 'select * from sources * where true'
check "drop2: hits" "$(jout '[.root.children[] | "\(.id)=\(.relevance)"] | join(",")')" \
	"id:d:doc::3=4,id:d:doc::1=1"
check "drop2: totalCount" "$(jout '.root.fields.totalCount')" "2"
# after the global phase: 18, 14 and 2; 14 and 2 go
expect_ok "drop3: query" "$STRATA" query "$APP" --profile drop3 --yql 'select * from sources * where true'
check "drop3: hits" "$(jout '[.root.children[] | "\(.id)=\(.relevance)"] | join(",")')" "id:d:doc::3=18"

# Time: now from the request; ages 1000, 100, 10; maxAge 1000, halfResponse 100
echo '{"yql": "select * from sources * where true", "ranking.profile": "fresh",
       "ranking.properties.vespa.now": 2000}' >"$T/fresh.json"
expect_ok "fresh: query" "$STRATA" query "$APP" <"$T/fresh.json"
check "fresh: order" "$(jout '[.root.children[].id] | join(",")')" "id:d:doc::3,id:d:doc::2,id:d:doc::1"
check "fresh: freshness" "$(jout '[.root.children[].relevance] | join(",")')" "0.99,0.9,0"
check "fresh: now" "$(feature now)" "2000"
check "fresh: age" "$(feature 'age(ts)')" "10"
# logscale at age 100 (halfResponse) is 0.5
check "fresh: logscale at halfResponse" \
	"$(jq -r '.root.children[1].fields.matchfeatures["freshness(ts).logscale"]' "$OUT")" "0.5"
echo '{"yql": "select * from sources * where true", "ranking.profile": "fresh",
       "ranking.properties.vespa.now": "soon"}' >"$T/bad.json"
expect_fail "fresh: now not a number" 'vespa.now: expected a number' "$STRATA" query "$APP" <"$T/bad.json"

# Strings: equal strings hash equal; the input's default is "oslo"
expect_ok "strings: default" "$STRATA" query "$APP" --profile city \
	--yql 'select * from sources * where true'
check "strings: default oslo, literal rome" \
	"$(jout '[.root.children[] | "\(.id)=\(.relevance)"] | join(",")')" \
	"id:d:doc::2=10,id:d:doc::1=1,id:d:doc::3=0"
echo '{"yql": "select * from sources * where true", "ranking.profile": "city",
       "input.query(where)": "paris"}' >"$T/city.json"
expect_ok "strings: given" "$STRATA" query "$APP" <"$T/city.json"
check "strings: paris" "$(jout '[.root.children[] | "\(.id)=\(.relevance)"] | join(",")')" \
	"id:d:doc::2=10,id:d:doc::3=1,id:d:doc::1=0"

# closeness(v) is closeness(field, v): 1 / (1 + euclidean distance)
expect_ok "closeness(f): query" "$STRATA" query "$APP" --profile near --input 'query(q)=[0,0]' \
	--yql 'select * from sources * where {targetHits: 3}nearestNeighbor(v, q)'
check "closeness(f): order" "$(jout '[.root.children[].id] | join(",")')" "id:d:doc::1,id:d:doc::3,id:d:doc::2"
check "closeness(f): values" "$(jout '[.root.children[].relevance] | join(",")')" "1,0.5,0.16666666666666666"
check "closeness(f): distance(v)" "$(jq -r '.root.children[2].fields.matchfeatures["distance(v)"]' "$OUT")" "5"
# by the label of the nearestNeighbor item: q1 is v's, q2 is nobody's
expect_ok "closeness(label): query" "$STRATA" query "$APP" --profile near --input 'query(q)=[0,0]' \
	--yql 'select * from sources * where {label: "q1", targetHits: 3}nearestNeighbor(v, q)'
check "closeness(label): of q1" \
	"$(jq -r '.root.children[2].fields.matchfeatures | "\(.["closeness(label, q1)"]),\(.["distance(label, q1)"])"' "$OUT")" \
	"0.16666666666666666,5"
check "closeness(label): of q2" \
	"$(jq -r '.root.children[2].fields.matchfeatures | "\(.["closeness(label, q2)"]),\(.["distance(label, q2)"])"' "$OUT")" \
	"0,null"

# Misuse, with the position of what is wrong
bad_profile() {
	mkdir -p "$T/bad/schemas"
	cat >"$T/bad/schemas/doc.sd" <<EOS
schema doc {
    document doc {
        field body type string { indexing: index }
        field ts type long { indexing: attribute }
        field city type string { indexing: attribute }
    }
    rank-profile p {
$1
    }
}
EOS
}
bad_profile '        first-phase { expression: foreach(terms, x, term(x).weight, ">x", sum) }'
expect_fail "misuse: foreach condition" 'doc.sd:8:69: foreach\(\): the condition is true' \
	"$STRATA" deploy "$T/bad"
bad_profile '        first-phase { expression: freshness(city) }'
expect_fail "misuse: freshness of a string" "doc.sd:8:45: freshness\(\): 'city' is not a number attribute" \
	"$STRATA" deploy "$T/bad"
bad_profile '        rank-properties { freshness(ts).minAge: 5 }'
expect_fail "misuse: unknown property" "doc.sd:8:27: rank property 'freshness\(ts\).minAge' is not supported" \
	"$STRATA" deploy "$T/bad"
bad_profile '        first-phase { expression: fieldTermMatch(ts, 0) }'
expect_fail "misuse: fieldTermMatch of an attribute" "doc.sd:8:50: fieldTermMatch\(\): 'ts' is not a field with a text index" \
	"$STRATA" deploy "$T/bad"
bad_profile '        first-phase { expression: attributeMatch(city).weight }'
expect_fail "misuse: attributeMatch weight" 'doc.sd:8:35: attributeMatch\(f\).weight is not supported' \
	"$STRATA" deploy "$T/bad"
bad_profile '        first-phase { expression: attributeMatch(body) }'
expect_fail "misuse: attributeMatch of a text field" "doc.sd:8:50: attributeMatch\(\): 'body' is not an attribute" \
	"$STRATA" deploy "$T/bad"
bad_profile '        first-phase { expression: sum(tensorFromWeightedSet(attribute(city))) }'
expect_fail "misuse: tensorFromWeightedSet of a string" "doc.sd:8:71: tensorFromWeightedSet\(\): 'city' is not an attribute weighted set" \
	"$STRATA" deploy "$T/bad"
bad_profile '        first-phase { expression: sum(tensorFromLabels(city)) }'
expect_fail "misuse: tensorFromLabels without attribute()" 'doc.sd:8:39: tensorFromLabels\(attribute\(field\), dimension\) is expected' \
	"$STRATA" deploy "$T/bad"
bad_profile '        constants { c tensor(k{}, i[2]): {a: [1, 2, 3]} }'
expect_fail "misuse: constant block size" 'doc.sd:8:46: the block has 3 cells, its type 2' \
	"$STRATA" deploy "$T/bad"
bad_profile '        constants { c tensor(k{}, j{}): {a: 1} }'
expect_fail "misuse: constant short form" 'doc.sd:8:42: with 2 mapped dimensions each cell needs its address' \
	"$STRATA" deploy "$T/bad"
bad_profile '        first-phase { expression: fieldMatch(body).size }'
expect_fail "misuse: fieldMatch output" "doc.sd:8:35: fieldMatch\(f\) has no output 'size'" \
	"$STRATA" deploy "$T/bad"
bad_profile '        inputs { query(c) string: 3 }'
expect_fail "misuse: string default" 'doc.sd:8:35: expected a quoted string as the default of query\(c\)' \
	"$STRATA" deploy "$T/bad"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
