#!/bin/sh
# summary.sh: end-to-end tests of summaries made from the query through the
# strata CLI: bolding: on and summary: dynamic on text fields, the snippet
# of a schema's own document-summary default, matched-elements-only on an
# array and a map, select-elements-by (with top) on arrays, a
# document-summary with the documentid source chosen by
# presentation.summary (both request forms), order by with a field's
# sorting settings, and the deploy errors of these settings.
#
#   sh tests/summary.sh [STRATA]
#
# The last line is "N passed, M failed"; the exit status is 1 when any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=summary
. "$here/clitest.sh"
APP=$T/docs

mkdir -p "$APP/schemas" "$T/bad/schemas"
cat >"$APP/schemas/doc.sd" <<'EOS'
schema doc {
    document doc {
        field title type string {
            indexing: summary | index
            bolding: on
            weight: 200
        }
        field body type string {
            indexing: summary | index
            summary: dynamic
            linguistics { profile: lowerFolding }
        }
        field tags type array<string> {
            indexing: summary | attribute
            summary: matched-elements-only
        }
        field m type map<string, int> {
            indexing: summary
            summary: matched-elements-only
        }
        field name type string {
            indexing: summary | attribute
            sorting { order: descending  function: lowercase }
        }
        field chunks type array<string> {
            indexing: summary
        }
        field sims type tensor<float>(chunk{}) {
            indexing: attribute
        }
    }
    fieldset default { fields: title, body }
    document-summary default {
        summary lead { source: body  bolding: on }
    }
    document-summary ids {
        summary documentid {}
        summary title {}
    }
    rank-profile picking {
        function picks() {
            expression: tensor(chunk{}):{"1": 2.0, "x": 1.0, "5": 1.0}
        }
        function top_sims() {
            expression: top(3, attribute(sims))
        }
        summary-features {
            picks
            top_sims
        }
    }
    document-summary picked {
        summary tags_picked {
            source: tags
            select-elements-by: picks
        }
        summary top_chunks {
            source: chunks
            select-elements-by: top_sims
        }
    }
}
EOS
cat >"$APP/feed.jsonl" <<'EOS'
{"put": "id:doc:doc::1", "fields": {"title": "Running shoes for runners", "body": "Shoes that run far.", "tags": ["red", "blue"], "m": {"a": 1, "b": 5}, "name": "alice", "chunks": ["c0", "c1", "c2", "c3"], "sims": {"cells": {"0": 0.1, "1": 0.9, "2": 0.5, "3": 0.7, "9": 0.8}}}}
{"put": "id:doc:doc::2", "fields": {"title": "Café crème", "body": "A café serving crème brûlée.", "tags": ["green"], "name": "Bob"}}
EOS
expect_ok "deploy" "$STRATA" deploy "$APP"
expect_ok "feed" "$STRATA" feed "$APP" "$APP/feed.jsonl"

# q JSON-REQUEST JQ: the request's result through jq
q() {
	if echo "$1" | "$STRATA" query "$APP" >"$OUT" 2>"$ERR"; then
		jout "$2"
	else
		echo "error: $(head -c 300 "$ERR")"
	fi
}
Y='"yql": "select * from doc where'
check "bolding: on, stems" "$(q "{$Y title contains \\\"run\\\"\"}" '.root.children[0].fields.title')" \
	"<hi>Running</hi> shoes for runners"
check "dynamic, a short field whole" \
	"$(q "{$Y body contains \\\"runs\\\" or title contains \\\"shoe\\\"\"}" '.root.children[0].fields.body')" \
	"Shoes that <hi>run</hi> far."
check "document-summary default: an added field" "$(jout '.root.children[0].fields.lead')" \
	"Shoes that <hi>run</hi> far."
check "userQuery through the default fieldset, accents" \
	"$(q "{$Y userQuery()\", \"query\": \"CREME\"}" '.root.children[0].fields | "\(.title)|\(.body)"')" \
	"Café <hi>crème</hi>|A café serving <hi>crème</hi> brûlée."
check "matched-elements-only" \
	"$(q "{$Y tags contains \\\"blue\\\" or m.value > 2\"}" '.root.children[0].fields | "\(.tags)|\(.m)"')" \
	'["blue"]|{"b":5}'
check "matched-elements-only, nothing matched" \
	"$(q "{$Y title contains \\\"cafe\\\"\"}" '.root.children[0].fields | has("tags")')" "false"
check "presentation.summary: documentid" \
	"$(q "{$Y title contains \\\"cafe\\\"\", \"presentation.summary\": \"ids\"}" \
		'.root.children[0].fields | "\(.documentid)|\(.title)|\(has("body"))"')" \
	"id:doc:doc::2|<hi>Café</hi> crème|false"
check "presentation: {summary}" \
	"$(q "{$Y true\", \"presentation\": {\"summary\": \"ids\"}}" '[.root.children[].fields.documentid] | sort | join(",")')" \
	"id:doc:doc::1,id:doc:doc::2"
check "select documentid, sddocname" \
	"$(q "{\"yql\": \"select documentid, sddocname, name from doc where title contains \\\"cafe\\\"\"}" \
		'.root.children[0].fields | to_entries | map("\(.key)=\(.value)") | sort | join(",")')" \
	"documentid=id:doc:doc::2,name=Bob,sddocname=doc"
P='"presentation.summary": "picked"'
check "select-elements-by: the labels that are indexes, in array order" \
	"$(q "{$Y true order by name\", \"ranking\": \"picking\", $P}" \
		'[.root.children[].fields.tags_picked | tostring] | join(",")')" \
	'[],["blue"]'
check "select-elements-by top(3, ...): the largest three's labels, 9 no index" \
	"$(q "{$Y true order by name\", \"ranking\": \"picking\", $P}" \
		'[.root.children[].fields.top_chunks | tostring] | join(",")')" \
	'null,["c1","c3"]'
check "select-elements-by: a profile without the summary-feature" \
	"$(q "{$Y true\", $P}" '.')" \
	"error: strata: select-elements-by: 'picks' is not a summary-feature of rank profile 'default'"
check "sorting: descending, lowercase" \
	"$(q '{"yql": "select * from doc where true order by name"}' '[.root.children[].fields.name] | join(",")')" \
	"Bob,alice"
check "order by asc overrides it" \
	"$(q '{"yql": "select * from doc where true order by name asc"}' '[.root.children[].fields.name] | join(",")')" \
	"alice,Bob"

# deploy errors, with their positions
sed '/field m type/,/}/s/summary: matched-elements-only/summary: dynamic/' "$APP/schemas/doc.sd" \
	>"$T/bad/schemas/doc.sd"
expect_fail "dynamic on a map" \
	"doc\\.sd:17:15: summary field 'm': dynamic on 'm', which is not a string or an array of strings" \
	"$STRATA" deploy "$T/bad"
sed 's/summary title {}/summary title { source: title  select-elements-by: picks }/' \
	"$APP/schemas/doc.sd" >"$T/bad/schemas/doc.sd"
expect_fail "select-elements-by on a string" \
	"doc\\.sd:38:17: summary field 'title': select-elements-by on 'title', which is not an array" \
	"$STRATA" deploy "$T/bad"
sed 's/weight: 200/alias: heading/' "$APP/schemas/doc.sd" >"$T/bad/schemas/doc.sd"
expect_fail "alias refused" "doc\\.sd:6:13: field setting 'alias' is not supported" \
	"$STRATA" deploy "$T/bad"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
