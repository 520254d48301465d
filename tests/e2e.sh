#!/bin/sh
# e2e.sh: end-to-end tests of the strata CLI on the example application.
#
#   sh tests/e2e.sh [STRATA]      (or STRATA=build/strata MKSHOP=build/tests/mkshop sh tests/e2e.sh)
#
# Builds the shop application (schemas/shop + the model and documents that
# mkshop generates) in a temporary folder, deploys it, feeds it and queries
# it.  Expected results are computed here, independently of the engine, from
# the feed file: the "cheap" order by sorting prices, closeness and the first
# phase of "relevance" from the embeddings with awk.  Then every error path
# a user can hit: each must exit non-zero with a message that says what is
# wrong, never crash, and lose nothing already stored.  Compiled contexts:
# `strata compile` must give models that run exactly as their sources, and
# the contexts deploy compiles must serve queries while they are fresh and
# be passed over, with a notice, once the source or a context changed.
#
# The last line is "N passed, M failed"; the exit status is 1 when any failed.
# E2E_VERBOSE=1 also prints the message of every expected failure.
# Needs jq (make deps installs it).
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=e2e
. "$here/clitest.sh"
APP=$T/shop

# total: totalCount of "select * ... where true" (the number of stored documents).
total() {
	if "$STRATA" query "$APP" --yql 'select * from sources * where true' --hits 1 \
		>"$T/total.json" 2>"$T/total.err"; then
		jq -r '.root.fields.totalCount' "$T/total.json" 2>/dev/null || echo "bad-json"
	else
		echo "query-failed: $(head -c 300 "$T/total.err")"
	fi
}

# ---- build the application --------------------------------------------------------
mkdir -p "$APP"
cp -R "$top/schemas/shop/schemas" "$APP/"
if ! "$MKSHOP" "$APP" >"$T/mkshop.log" 2>&1; then
	echo "e2e: mkshop failed: $(cat "$T/mkshop.log")"
	echo "0 passed, 1 failed"
	exit 1
fi
FEED=$APP/feed.jsonl
NDOCS=$(wc -l <"$FEED" | tr -d ' ')
SD=$APP/schemas/product.sd
cp "$SD" "$T/product.sd.orig"
cp "$APP/models/ranker.onnx" "$T/ranker.onnx.orig"

# The generator is deterministic: a second run writes the same bytes.
if "$MKSHOP" "$T/again" >/dev/null 2>&1 && cmp -s "$FEED" "$T/again/feed.jsonl" &&
	cmp -s "$APP/models/ranker.onnx" "$T/again/models/ranker.onnx" &&
	cmp -s "$APP/queries/running-shoes.json" "$T/again/queries/running-shoes.json"; then
	ok
else
	bad "mkshop is not deterministic"
fi
check "feed documents" "$NDOCS" "40"

# ---- deploy and feed ----------------------------------------------------------------
# Deploy compiles the model into the data folder's contexts/: one context
# model, one binary, and the manifest that says what they were compiled from.
CTX=$APP/.strata/contexts
if expect_ok "deploy" "$STRATA" deploy "$APP"; then
	grep -q "1 model compiled into .*contexts" "$ERR" && ok || bad "deploy summary: $(cat "$ERR")"
fi
for f in manifest.json ranker_ctx.onnx ranker_strata.bin; do
	[ -s "$CTX/$f" ] && ok || bad "deploy wrote no $CTX/$f"
done
check "manifest models" "$(jq -c '[.models[] | [.source.file, .context.file]]' "$CTX/manifest.json" 2>&1)" \
	'[["models/ranker.onnx","ranker_ctx.onnx"]]'
check "manifest binary" "$(jq -r '.binary.file' "$CTX/manifest.json" 2>&1)" "ranker_strata.bin"

# from_context NAME: the last command loaded the model from its context (no
# notice that the source was compiled instead).
FALLBACK='compiling the source instead of a compiled context'
from_context() {
	if grep -q "$FALLBACK" "$ERR"; then bad "$1: the context was not used: $(cat "$ERR")"; else ok; fi
}

if expect_ok "feed" "$STRATA" feed "$APP" "$FEED"; then
	if grep -Eq "fed $NDOCS documents, 0 failed" "$ERR"; then ok; else
		bad "feed summary: $(cat "$ERR")"
	fi
	# What is durable, after each commit, and the summary for a program.
	check "feed commit line" "$(grep '^written ' "$ERR")" \
		"written $NDOCS documents, 0 failed, through line $NDOCS"
	check "feed summary JSON" "$(jout '[.written, .failed, (.seconds | type)] | @csv')" \
		"$NDOCS,0,\"number\""
fi
check "count after feed" "$(total)" "$NDOCS"

# ---- queries: the "cheap" profile, an order computed from the feed ---------------------
# Expected: ids by ascending price, with relevance = -price.
jq -s -r 'map(select(.put)) | sort_by(.fields.price) | .[] | "\(.put) \(.fields.price)"' "$FEED" \
	>"$T/by_price"

# compare_cheap FILE: hits in $OUT must equal FILE's lines ("id price"), with
# relevance -price (float cells: a relative tolerance).
compare_cheap() {
	jout '.root.children[] | "\(.id) \(.relevance)"' >"$T/got"
	if ! awk 'NR == FNR { id[FNR] = $1; p[FNR] = $2; n = FNR; next }
	          { m = FNR
	            if ($1 != id[FNR]) { print "hit " FNR ": " $1 ", want " id[FNR]; bad = 1 }
	            d = $2 + p[FNR]; if (d < 0) d = -d
	            if (d > 1e-4 * (p[FNR] > 1 ? p[FNR] : 1)) {
	                print "hit " FNR ": relevance " $2 ", want " (-p[FNR]); bad = 1 } }
	          END { if (m != n) { print m " hits, want " n; bad = 1 }; exit bad }' \
		"$1" "$T/got" >"$T/diff"; then
		bad "$2: $(head -5 "$T/diff" | tr '\n' ';')"
	else
		ok
	fi
}

if expect_ok "query cheap" "$STRATA" query "$APP" --yql 'select * from sources * where true' \
	--profile cheap --hits 10; then
	check "cheap totalCount" "$(jout '.root.fields.totalCount')" "$NDOCS"
	head -10 "$T/by_price" >"$T/want"
	compare_cheap "$T/want" "cheap order"
fi

if expect_ok "query cheap offset" "$STRATA" query "$APP" \
	--yql 'select * from sources * where true' --profile cheap --hits 5 --offset 5; then
	sed -n '6,10p' "$T/by_price" >"$T/want"
	compare_cheap "$T/want" "cheap order with offset"
fi

# A numeric filter: only the products under 50, still by price.
if expect_ok "query price filter" "$STRATA" query "$APP" \
	--yql 'select * from sources * where price < 50' --profile cheap --hits 100; then
	awk '$2 < 50' "$T/by_price" >"$T/want"
	check "price filter totalCount" "$(jout '.root.fields.totalCount')" "$(wc -l <"$T/want" | tr -d ' ')"
	compare_cheap "$T/want" "price filter order"
fi

# A string attribute: exact match on the category.
if expect_ok "query contains" "$STRATA" query "$APP" \
	--yql 'select * from sources * where category contains "backpacks"' --profile cheap --hits 100; then
	want=$(jq -s '[.[] | select(.fields.category == "backpacks")] | length' "$FEED")
	check "contains totalCount" "$(jout '.root.fields.totalCount')" "$want"
	check "contains categories" "$(jout '[.root.children[].fields.category] | unique | join(",")')" \
		"backpacks"
fi

# Summaries carry the document's fields.
if expect_ok "query summary" "$STRATA" query "$APP" \
	--yql 'select * from sources * where true' --profile cheap --hits 1; then
	want=$(head -1 "$T/by_price" | cut -d' ' -f1)
	want_title=$(jq -r --arg id "$want" 'select(.put == $id) | .fields.title' "$FEED")
	check "summary title" "$(jout '.root.children[0].fields.title')" "$want_title"
fi

# A request's timeout: one not reached leaves the coverage full; with the
# soft timeout off, a timeout of 0 has passed by the query's end.  (Where a
# soft timeout stops a query is tested against a clock in test_deadline.)
if expect_ok "query timeout" "$STRATA" query "$APP" --yql 'select * from sources * where true' \
	--profile cheap --hits 1 --timeout 10s; then
	check "timeout coverage" "$(jout '.root.coverage | [.full, .documents, has("degraded")] | @csv')" \
		"true,$NDOCS,false"
fi
expect_fail "query bad timeout" '"timeout": expected seconds' "$STRATA" query "$APP" \
	--yql 'select * from sources * where true' --timeout soon
echo '{"yql": "select * from sources * where true", "timeout": 0,
	"ranking.softtimeout.enable": false}' >"$T/hard.json"
expect_fail "query hard timeout" 'timed out: it ran past its timeout of 0 ms' \
	sh -c '"$0" query "$1" <"$2"' "$STRATA" "$APP" "$T/hard.json"

# ---- YQL: in, matches, order by, grouping; expected values from the feed with jq ------
if expect_ok "query in" "$STRATA" query "$APP" --profile cheap --hits 100 \
	--yql 'select * from sources * where brand in ("Northvale", "Sonora") and price < 100'; then
	want=$(jq -s '[.[] | select((.fields.brand == "Northvale" or .fields.brand == "Sonora")
		and .fields.price < 100)] | length' "$FEED")
	check "in totalCount" "$(jout '.root.fields.totalCount')" "$want"
	check "in brands" "$(jout '[.root.children[].fields.brand] | unique | join(",")')" \
		"$(jq -rs '[.[] | select((.fields.brand == "Northvale" or .fields.brand == "Sonora")
			and .fields.price < 100) | .fields.brand] | unique | join(",")' "$FEED")"
fi

# matches: unanchored and case-insensitive
if expect_ok "query matches" "$STRATA" query "$APP" --hits 100 \
	--yql 'select * from sources * where title matches "^north|lamp$"'; then
	check "matches ids" "$(jout '[.root.children[].id] | sort | join(",")')" \
		"$(jq -rs '[.[] | select(.fields.title | test("^north|lamp$"; "i")) | .put] | sort
			| join(",")' "$FEED")"
fi

# order by replaces the rank order: brand up, then price down; limit is the page's end
if expect_ok "query order by" "$STRATA" query "$APP" --profile cheap \
	--yql 'select * from sources * where true order by brand, price desc limit 7 offset 2'; then
	check "order by ids" "$(jout '[.root.children[].id] | join(",")')" \
		"$(jq -rs 'sort_by(.fields.brand, -.fields.price) | .[2:7] | map(.put) | join(",")' "$FEED")"
fi

# grouping: Vespa's group:root:0 / grouplist:category / group:string:<value>, by count
if expect_ok "query grouping" "$STRATA" query "$APP" --yql 'select * from sources * where true
	limit 0 | all(group(category) max(4) order(-count()) each(output(count(), max(rating))))'; then
	check "grouping root" "$(jout '[.root.children[0].id, .root.children[0].children[0].id,
		.root.children[0].children[0].label] | join(",")')" "group:root:0,grouplist:category,category"
	check "grouping groups" "$(jout '[.root.children[0].children[0].children[]
		| "\(.id)=\(.fields["count()"])"] | join(",")')" \
		"$(jq -rs 'group_by(.fields.category) | map({c: .[0].fields.category, n: length})
			| sort_by(-.n, .c) | .[:4] | map("group:string:\(.c)=\(.n)") | join(",")' "$FEED")"
	check "grouping hits" "$(jout '.root.children | length')" "1"
fi
# groups within groups: the counts of each brand within each category add up
if expect_ok "query nested grouping" "$STRATA" query "$APP" --yql 'select * from sources * where
	true limit 0 | all(group(category) each(output(count()) group(brand) each(output(count()))))'; then
	check "nested grouping sums" "$(jout '[.root.children[0].children[0].children[]
		| (.fields["count()"] == ([.children[0].children[].fields["count()"]] | add))] | all')" "true"
	check "nested grouping pairs" "$(jout '[.root.children[0].children[0].children[]
		| .value as $c | .children[0].children[] | "\($c)/\(.value)=\(.fields["count()"])"]
		| sort | join(",")')" \
		"$(jq -rs 'group_by([.fields.category, .fields.brand]) | map("\(.[0].fields.category)/\(
			.[0].fields.brand)=\(length)") | sort | join(",")' "$FEED")"
fi
if expect_ok "query grouping all" "$STRATA" query "$APP" \
	--yql 'select * from sources * where in_stock = true | all(output(count()))' --hits 2; then
	check "grouping all count" "$(jout '.root.children[0].fields["count()"]')" \
		"$(jq -s '[.[] | select(.fields.in_stock)] | length' "$FEED")"
	check "grouping all hits" "$(jout '.root.children | length')" "3"
fi

# ---- queries: the "relevance" profile (nearest neighbour, then the model) ---------------
QVEC=$(jq -c '."input.query(q_emb)"' "$APP/queries/running-shoes.json")

# Closeness (angular: 1 / (1 + angle)) and the first phase (closeness +
# 0.1 * rating) for every document, computed from the feed file.
jq -r --argjson q "$QVEC" '"\(.put) \(.fields.rating) \($q | join(" ")) \(.fields.embedding | join(" "))"' \
	"$FEED" | awk '{
	n = (NF - 2) / 2; dot = 0; qq = 0; dd = 0
	for (i = 1; i <= n; i++) { q = $(2 + i); d = $(2 + n + i); dot += q * d; qq += q * q; dd += d * d }
	c = dot / sqrt(qq * dd); if (c > 1) c = 1; if (c < -1) c = -1
	angle = atan2(sqrt(1 - c * c), c)
	cl = 1 / (1 + angle)
	printf "%s %.9f %.9f\n", $1, cl, cl + 0.1 * $2 }' >"$T/closeness"

# Number of a match feature whose name starts with $1 (a tensor of one cell
# counts as its cell).
MF='def num: if type == "object" then ((.values // [.cells[]?.value]) | flatten | add)
            elif type == "array" then (flatten | add) else . end;
    def mf($p): (.fields.matchfeatures // {}) | to_entries
                | map(select(.key | gsub(" "; "") | startswith($p))) | .[0].value | num;'

if expect_ok "query relevance" "$STRATA" query "$APP" \
	--yql 'select * from sources * where {targetHits: 40}nearestNeighbor(embedding, q_emb)' \
	--profile relevance --input "query(q_emb)=$QVEC" --hits 40; then
	from_context "query relevance"
	check "relevance totalCount" "$(jout '.root.fields.totalCount')" "$NDOCS"
	jout "$MF"' .root.children[] | "\(.id) \(.relevance) \(mf("closeness(field,embedding)")) \(mf("firstPhase")) \(mf("onnx(ranker)"))"' \
		>"$T/rel"
	check "relevance hits" "$(wc -l <"$T/rel" | tr -d ' ')" "$NDOCS"

	# Ordering invariants, rerank-count 20: relevance never increases; the
	# first 20 are the 20 best by first phase and score as the model says;
	# the rest follow in first-phase order.
	if awk 'NR > 1 && $2 > prev + 1e-9 { print "hit " NR " relevance " $2 " above " prev; bad = 1 }
	        { prev = $2 }
	        NR <= 20 { d = $2 - $5; if (d < 0) d = -d
	                   if ($5 == "null" || d > 1e-5) { print "hit " NR ": relevance " $2 " is not the model score " $5; bad = 1 }
	                   if (minfirst == "" || $4 < minfirst) minfirst = $4 }
	        NR > 20 { if (maxrest == "" || $4 > maxrest) maxrest = $4
	                  if (NR > 21 && $4 > prevfirst + 1e-9) { print "hit " NR ": first phase out of order"; bad = 1 }
	                  prevfirst = $4 }
	        END { if (maxrest != "" && maxrest > minfirst + 1e-9) {
	                  print "a hit outside the re-ranked 20 has a better first phase (" maxrest " > " minfirst ")"; bad = 1 }
	              exit bad }' "$T/rel" >"$T/diff"; then
		ok
	else
		bad "relevance ordering: $(head -5 "$T/diff" | tr '\n' ';')"
	fi

	# Closeness and first phase match the independent computation.
	if awk 'NR == FNR { c[$1] = $2; f[$1] = $3; next }
	        { if (!($1 in c)) { print "unknown id " $1; bad = 1; next }
	          d = $3 - c[$1]; if (d < 0) d = -d
	          if ($3 == "null" || d > 1e-4) { print $1 ": closeness " $3 ", want " c[$1]; bad = 1 }
	          d = $4 - f[$1]; if (d < 0) d = -d
	          if ($4 == "null" || d > 1e-4) { print $1 ": firstPhase " $4 ", want " f[$1]; bad = 1 } }
	        END { exit bad }' "$T/closeness" "$T/rel" >"$T/diff"; then
		ok
	else
		bad "relevance features: $(head -5 "$T/diff" | tr '\n' ';')"
	fi

	# The re-ranked 20 are the best 20 by the independent first phase.
	want=$(sort -k3,3gr "$T/closeness" | head -20 | cut -d' ' -f1 | sort | tr '\n' ' ')
	got=$(head -20 "$T/rel" | cut -d' ' -f1 | sort | tr '\n' ' ')
	check "re-ranked set" "$got" "$want"

	# The model scored the candidates in one batch; one document at a time
	# through "strata run" must give the same scores.
	for k in 1 2 3; do
		id=$(sed -n "${k}p" "$T/rel" | cut -d' ' -f1)
		score=$(sed -n "${k}p" "$T/rel" | cut -d' ' -f5)
		emb=$(jq -c --arg id "$id" 'select(.put == $id) | .fields.embedding' "$FEED")
		if expect_ok "run hit $k" "$STRATA" run "$APP/models/ranker.onnx" \
			--input "query_emb=[$QVEC]" --input "doc_emb=[$emb]"; then
			got=$(jout '.outputs.score.values[0]')
			if awk -v a="$got" -v b="$score" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "null" && d <= 1e-5) }'; then
				ok
			else
				bad "run hit $k ($id): model says $got, the query said $score"
			fi
		fi
	done
fi

# ---- strata run: the generated model against values from ONNX Runtime ----------------
# query_emb is 0.25 everywhere; doc_emb row r holds ((16r + i) mod 5) / 10.
# ONNX Runtime 1.30 gives 0.04327320 and 0.04597176 for this model.
Q=$(awk 'BEGIN { s = ""; for (i = 0; i < 16; i++) s = s (i ? "," : "") "0.25"; print "[" s "]" }')
D0=$(awk 'BEGIN { s = ""; for (i = 0; i < 16; i++) s = s (i ? "," : "") (i % 5) / 10; print "[" s "]" }')
D1=$(awk 'BEGIN { s = ""; for (i = 16; i < 32; i++) s = s (i > 16 ? "," : "") (i % 5) / 10; print "[" s "]" }')
if expect_ok "run batch" "$STRATA" run "$APP/models/ranker.onnx" \
	--input "query_emb=[$Q,$Q]" --input "doc_emb=[$D0,$D1]"; then
	check "run shape" "$(jout '.outputs.score.shape | map(tostring) | join(",")')" "2,1"
	got=$(jout '.outputs.score.values | map(tostring) | join(" ")')
	if echo "$got" | awk '{ d0 = $1 - 0.04327320; d1 = $2 - 0.04597176
	                        if (d0 < 0) d0 = -d0; if (d1 < 0) d1 = -d1
	                        exit !(NF == 2 && d0 < 1e-5 && d1 < 1e-5) }'; then
		ok
	else
		bad "run values: got '$got', want '0.04327320 0.04597176'"
	fi
fi
# --profile: the same outputs, and the second run's time per operator type
if expect_ok "run profile" "$STRATA" run "$APP/models/ranker.onnx" --profile \
	--input "query_emb=[$Q,$Q]" --input "doc_emb=[$D0,$D1]"; then
	check "run profile values" "$(jout -c '.outputs.score.values | map(. * 1e6 | round)')" "[43273,45972]"
	check "run profile rows" "$(jout '(.profile | length) as $n | [.profile[] | select(.calls >= 1 and .ms >= 0 and (.op | length) > 0)] | length == $n and $n > 0')" "true"
	check "run profile sorted" "$(jout '[.profile[].ms] == ([.profile[].ms] | sort | reverse)')" "true"
	check "run profile within run" "$(jout '([.profile[].ms] | add) <= .run_ms')" "true"
fi
expect_fail "run unknown option" "unknown option '--profil'" "$STRATA" run "$APP/models/ranker.onnx" --profil
expect_fail "run missing input" "doc_emb' \\(float \\[batch,16\\]\\) not given" "$STRATA" run "$APP/models/ranker.onnx" --input "query_emb=[$Q]"

# ---- strata inspect: the declared inputs and outputs -----------------------------------
if expect_ok "inspect" "$STRATA" inspect "$APP/models/ranker.onnx"; then
	check "inspect inputs" "$(jout -c '[.inputs[] | [.name, .dtype, .shape]]')" \
		'[["query_emb","float",["batch",16]],["doc_emb","float",["batch",16]]]'
	check "inspect outputs" "$(jout -c '[.outputs[] | [.name, .dtype, .shape]]')" \
		'[["score","float",["batch",1]]]'
fi
printf '\x08\x07\x12\xff\xff\xff\x00not a model' >"$T/garbage.onnx"
expect_fail "inspect malformed model" "not a readable ONNX model" "$STRATA" inspect "$T/garbage.onnx"
expect_fail "inspect missing model" "No such file" "$STRATA" inspect "$T/no-such.onnx"
expect_fail "run ragged input" "query_emb" "$STRATA" run "$APP/models/ranker.onnx" \
	--input "query_emb=[[1,2],[3]]" --input "doc_emb=[$D0]"

# ---- strata compile: contexts that run exactly as their sources ------------------------
CM=$T/compile
mkdir -p "$CM"
cp "$APP/models/ranker.onnx" "$CM/ranker.onnx"
cp "$APP/models/ranker.onnx" "$CM/other.onnx"
"$STRATA" run "$CM/ranker.onnx" --input "query_emb=[$Q,$Q]" --input "doc_emb=[$D0,$D1]" \
	>"$T/run.src" 2>&1
# same_run NAME MODEL: MODEL gives exactly the outputs the source gave.
same_run() {
	if expect_ok "$1: run" "$STRATA" run "$2" --input "query_emb=[$Q,$Q]" --input "doc_emb=[$D0,$D1]"; then
		if cmp -s "$OUT" "$T/run.src"; then ok; else
			bad "$1: outputs differ from the source's: $(tr -d ' \n' <"$OUT") vs $(tr -d ' \n' <"$T/run.src")"
		fi
	fi
}

# Beside the source: NAME_ctx.onnx and NAME_strata.bin.
if expect_ok "compile" "$STRATA" compile "$CM/ranker.onnx"; then
	check "compile line" "$(jout -c '[.model, .context, .binary, (.ms | type)]')" \
		"[\"$CM/ranker.onnx\",\"$CM/ranker_ctx.onnx\",\"$CM/ranker_strata.bin\",\"number\"]"
	[ -s "$CM/ranker_ctx.onnx" ] && [ -s "$CM/ranker_strata.bin" ] && ok ||
		bad "compile: no context files beside the model"
	same_run "compile" "$CM/ranker_ctx.onnx"
fi
# The context loads as compiled: compiling it again is refused.
expect_fail "compile a context" "ranker_ctx\.onnx.*compiled context already" \
	"$STRATA" compile "$CM/ranker_ctx.onnx"

# -o DIR: the files go there (the folder is created).
if expect_ok "compile -o" "$STRATA" compile "$CM/ranker.onnx" -o "$CM/out"; then
	check "compile -o context" "$(jout -r '.context')" "$CM/out/ranker_ctx.onnx"
	check "compile -o binary" "$(jout -r '.binary')" "$CM/out/ranker_strata.bin"
	[ -s "$CM/out/ranker_strata.bin" ] && ok || bad "compile -o: no binary in $CM/out"
	same_run "compile -o" "$CM/out/ranker_ctx.onnx"
fi

# --embed: the binary inside the context model, no .bin file.
if expect_ok "compile --embed" "$STRATA" compile --embed "$CM/ranker.onnx" -o "$CM/embed"; then
	check "compile --embed binary" "$(jout '.binary')" "null"
	check "compile --embed files" "$(ls "$CM/embed" | tr '\n' ' ')" "ranker_ctx.onnx "
	same_run "compile --embed" "$CM/embed/ranker_ctx.onnx"
fi

# --prefix names the compiled graph; the model runs the same.
if expect_ok "compile --prefix" "$STRATA" compile --prefix shop_ "$CM/ranker.onnx" -o "$CM/prefix"; then
	same_run "compile --prefix" "$CM/prefix/ranker_ctx.onnx"
fi

# --share: two models, two context models, one binary named after the
# first.  Their weights are the same, so it is far from twice one model's.
if expect_ok "compile --share" "$STRATA" compile --share "$CM/ranker.onnx" "$CM/other.onnx" \
	-o "$CM/shared"; then
	check "compile --share lines" "$(wc -l <"$OUT" | tr -d ' ')" "3"
	check "compile --share binaries" "$(jq -s -r '[.[0:2][] | .binary] | unique | join(" ")' "$OUT" 2>&1)" \
		"$CM/shared/ranker_strata.bin"
	check "compile --share last line" "$(jq -s -c '.[2] | [.binary, .models]' "$OUT" 2>&1)" \
		"[\"$CM/shared/ranker_strata.bin\",2]"
	check "compile --share size" "$(jq -s '.[2].bytes' "$OUT" 2>&1)" \
		"$(wc -c <"$CM/shared/ranker_strata.bin" | tr -d ' ')"
	check "compile --share files" "$(ls "$CM/shared" | tr '\n' ' ')" \
		"other_ctx.onnx ranker_ctx.onnx ranker_strata.bin "
	one=$(wc -c <"$CM/ranker_strata.bin")
	two=$(wc -c <"$CM/shared/ranker_strata.bin")
	[ "$two" -lt $((one * 3 / 2)) ] && ok ||
		bad "compile --share: the shared binary ($two bytes) does not share weights (one model: $one)"
	same_run "compile --share first" "$CM/shared/ranker_ctx.onnx"
	same_run "compile --share second" "$CM/shared/other_ctx.onnx"
fi

# Errors: each names the problem, exits non-zero, and leaves nothing behind.
expect_fail "compile missing model" "no-such\.onnx.*No such file" "$STRATA" compile "$CM/no-such.onnx"
expect_fail "compile malformed model" "garbage\.onnx.*not a readable ONNX model" \
	"$STRATA" compile "$T/garbage.onnx"
[ ! -e "$T/garbage_ctx.onnx" ] && [ ! -e "$T/garbage_strata.bin" ] && ok ||
	bad "compile malformed model: files were left behind"
expect_fail "compile unknown option" "frobnicate" "$STRATA" compile --frobnicate "$CM/ranker.onnx"
check "compile unknown option: usage exit" "$rc" "2"
expect_fail "compile --share --embed" "--share.*--embed" \
	"$STRATA" compile --share --embed "$CM/ranker.onnx" "$CM/other.onnx"
check "compile --share --embed: usage exit" "$rc" "2"
expect_fail "compile no model" "missing MODEL" "$STRATA" compile --embed
# A group that fails writes nothing: not even the first model's context.
expect_fail "compile --share failing" "garbage\.onnx" \
	"$STRATA" compile --share "$CM/ranker.onnx" "$T/garbage.onnx" -o "$CM/failed"
check "compile --share failing: files" "$(ls "$CM/failed" 2>&1 | tr '\n' ' ')" ""
check "compile --share failing: stdout" "$(wc -c <"$OUT" | tr -d ' ')" "0"

# ---- deploy's contexts: fresh ones serve queries, stale ones never do ----------------------
# relq FILE [VAR=VALUE ...]: the relevance query over every document, "id
# relevance" per hit into FILE; stderr in $ERR.
relq() {
	f=$1
	shift
	run env "$@" "$STRATA" query "$APP" \
		--yql 'select * from sources * where {targetHits: 40}nearestNeighbor(embedding, q_emb)' \
		--profile relevance --input "query(q_emb)=$QVEC" --hits 40
	if [ "$rc" -ne 0 ] || crashed; then
		bad "relevance query $*: exit $rc: $(head -c 600 "$ERR")"
	fi
	jout '.root.children[] | "\(.id) \(.relevance)"' >"$f"
}
# same_ranking NAME FILE: FILE holds the ranking the context gave.
same_ranking() {
	if cmp -s "$2" "$T/rank.ctx"; then ok; else
		bad "$1: the ranking differs: $(diff "$T/rank.ctx" "$2" | head -4 | tr '\n' ';')"
	fi
}
# notice NAME REGEX: the last query said it compiled the source, and why.
notice() {
	if grep -q "ranker\.onnx: $FALLBACK: .*$2" "$ERR"; then ok; else
		bad "$1: no notice /$2/: $(head -c 600 "$ERR")"
	fi
}
M=$APP/models/ranker.onnx
relq "$T/rank.ctx"
from_context "ranking from the context"
check "ranking from the context: hits" "$(wc -l <"$T/rank.ctx" | tr -d ' ')" "$NDOCS"
# The same hits and scores as the relevance query checked above.
check "ranking from the context: as checked" "$(head -20 "$T/rank.ctx")" \
	"$(cut -d' ' -f1,2 "$T/rel" | head -20)"

# A touched source: the context is passed over, the answer stays the same.
touch "$M"
relq "$T/rank.touched"
notice "touched source" "the source changed since deploy"
same_ranking "touched source" "$T/rank.touched"

# A changed source of the same size (the last layer's bias moves by about
# 0.1): the query follows the new model, never the old context.
off=$(grep -obUa 'fc2\.biasJ' "$M" | tail -1 | cut -d: -f1)
if [ -n "$off" ]; then
	printf '\076' | dd of="$M" bs=1 seek=$((off + 13)) conv=notrunc 2>/dev/null
	check "changed source: size" "$(wc -c <"$M" | tr -d ' ')" "$(wc -c <"$T/ranker.onnx.orig" | tr -d ' ')"
	relq "$T/rank.patched"
	notice "changed source" "the source changed since deploy"
	id=$(head -1 "$T/rank.patched" | cut -d' ' -f1)
	got=$(head -1 "$T/rank.patched" | cut -d' ' -f2)
	old=$(awk -v id="$id" '$1 == id { print $2 }' "$T/rank.ctx")
	emb=$(jq -c --arg id "$id" 'select(.put == $id) | .fields.embedding' "$FEED")
	"$STRATA" run "$M" --input "query_emb=[$QVEC]" --input "doc_emb=[$emb]" >"$T/run.patched" 2>&1
	want=$(jq '.outputs.score.values[0]' "$T/run.patched" 2>/dev/null || echo null)
	if awk -v a="$got" -v b="$want" -v o="$old" 'BEGIN {
		d = a - b; if (d < 0) d = -d; e = a - o; if (e < 0) e = -e
		exit !(b != "null" && d <= 1e-5 && e > 0.05) }'; then
		ok
	else
		bad "changed source: $id scored $got, the changed model says $want, the old context $old"
	fi
else
	bad "changed source: fc2.bias not found in $M"
fi
cp "$T/ranker.onnx.orig" "$M"
expect_ok "deploy again" "$STRATA" deploy "$APP"
relq "$T/rank.again"
from_context "after deploy again"
same_ranking "after deploy again" "$T/rank.again"

# A damaged binary, truncated or gone: the source is compiled instead.
head -c 100 "$CTX/ranker_strata.bin" >"$T/bin.head"
cp "$T/bin.head" "$CTX/ranker_strata.bin"
relq "$T/rank.truncated"
notice "truncated binary" "ranker_strata\.bin changed since deploy"
same_ranking "truncated binary" "$T/rank.truncated"
rm -f "$CTX/ranker_strata.bin"
relq "$T/rank.nobin"
notice "missing binary" "ranker_strata\.bin: No such file"
same_ranking "missing binary" "$T/rank.nobin"
# An unreadable manifest: said once, the sources are compiled.
expect_ok "deploy for the manifest" "$STRATA" deploy "$APP"
echo 'not json' >"$CTX/manifest.json"
relq "$T/rank.manifest"
grep -q "manifest\.json: .*compiled from their sources" "$ERR" && ok ||
	bad "unreadable manifest: no notice: $(head -c 300 "$ERR")"
same_ranking "unreadable manifest" "$T/rank.manifest"
expect_ok "deploy after the manifest" "$STRATA" deploy "$APP"

# --version names the kernels, the int8 ones and those of bf16_weights too;
# STRATA_CPU=avx512 holds them to AVX-512 registers (no AMX tiles),
# STRATA_CPU=avx2 to the AVX2 baseline (bf16_weights: float).
v=$("$STRATA" --version)
case $v in
"strata "*" (kernels: avx512, int8: amx-int8, bf16_weights: "*")" | \
"strata "*" (kernels: avx512, int8: avx512-vnni, bf16_weights: "*")" | \
"strata "*" (kernels: avx512, int8: avx2, bf16_weights: "*")" | \
"strata "*" (kernels: avx2, int8: avx-vnni, bf16_weights: float)" | \
"strata "*" (kernels: avx2, int8: avx2, bf16_weights: float)") ok ;;
*) bad "--version: $v" ;;
esac
case $v in
*"bf16_weights: float)" | *"bf16_weights: avx512-bf16)" | *"bf16_weights: amx-bf16)") ok ;;
*) bad "--version bf16_weights: $v" ;;
esac
v=$(STRATA_CPU=avx2 "$STRATA" --version)
case $v in
"strata "*" (kernels: avx2, int8: avx2, bf16_weights: float)") ok ;;
*) bad "STRATA_CPU=avx2 --version: $v" ;;
esac
v=$(STRATA_CPU=avx512 "$STRATA" --version)
case $v in
*"int8: amx-int8"*) bad "STRATA_CPU=avx512 --version: $v" ;;
*) ok ;;
esac

# Weights packed for the AVX-512 kernels, in a process that runs the AVX2
# ones: the runtime refuses the context (only where the CPU has AVX-512).
if "$STRATA" --version | grep -q 'kernels: avx512'; then
	relq "$T/rank.avx2" STRATA_CPU=avx2
	notice "context for other kernels" "refused it: .*AVX-512"
	if awk 'NR == FNR { r[FNR] = $0; n = FNR; next }
	        { split(r[FNR], a, " "); d = a[2] - $2; if (d < 0) d = -d
	          if (a[1] != $1 || d > 1e-5) bad = 1; m = FNR }
	        END { exit bad || m != n }' "$T/rank.ctx" "$T/rank.avx2"; then
		ok
	else
		bad "context for other kernels: the ranking differs: $(diff "$T/rank.ctx" "$T/rank.avx2" | head -4 | tr '\n' ';')"
	fi
fi
relq "$T/rank.end"
from_context "contexts fresh again"
same_ranking "contexts fresh again" "$T/rank.end"

# ---- get and remove ---------------------------------------------------------------------
ID3=id:shop:product::3
if expect_ok "get" "$STRATA" get "$APP" "$ID3"; then
	check "get id" "$(jout '.id')" "$ID3"
	check "get title" "$(jout '.fields.title')" \
		"$(jq -r --arg id "$ID3" 'select(.put == $id) | .fields.title' "$FEED")"
	check "get embedding cells" "$(jout '.fields.embedding | (if type == "object" then .values else . end) | flatten | length')" "16"
fi
expect_ok "remove" "$STRATA" remove "$APP" "$ID3"
expect_fail "get removed" "not found|no such|does not exist|$ID3" "$STRATA" get "$APP" "$ID3"
expect_fail "remove twice" "not found|no such|does not exist|$ID3" "$STRATA" remove "$APP" "$ID3"
check "count after remove" "$(total)" "$((NDOCS - 1))"
# The indexes still agree with the documents; check's own errors.
if expect_ok "check" "$STRATA" check "$APP"; then
	check "check documents" "$(jout '.doctypes[0].documents')" "$((NDOCS - 1))"
fi
expect_fail "check without APP" "missing APP" "$STRATA" check
expect_fail "check, an unknown option" "unknown option|--hits" "$STRATA" check "$APP" --hits 3
expect_fail "check, no application" "not deployed" "$STRATA" check "$T/none"
run "$STRATA" check --help
[ "$rc" = 0 ] && grep -q "usage: strata check APP" "$OUT" && ok || bad "check --help: $(head -c 300 "$OUT")"
# Put it back from standard input.
grep -F "\"$ID3\"" "$FEED" >"$T/doc3.jsonl"
if expect_ok "feed stdin" sh -c '"$1" feed "$2" - <"$3"' sh "$STRATA" "$APP" "$T/doc3.jsonl"; then
	grep -Eq "fed 1 documents?, 0 failed" "$ERR" && ok || bad "feed stdin summary: $(cat "$ERR")"
fi
check "count after re-feed" "$(total)" "$NDOCS"
# Standard input is read in pieces: a last line without its newline, a line
# longer than a piece (a 100 000-byte title), and a JSON array, all whole.
printf '%s' "$(cat "$T/doc3.jsonl")" >"$T/doc3-nonl.jsonl"
if expect_ok "feed stdin without a last newline" sh -c '"$1" feed "$2" - <"$3"' sh "$STRATA" \
	"$APP" "$T/doc3-nonl.jsonl"; then
	check "feed stdin without a last newline: JSON" "$(jout '.written')" "1"
fi
long=$(awk 'BEGIN { for (i = 0; i < 10000; i++) printf "0123456789" }')
printf '\n{"put": "%s", "fields": {"title": "%s"}}\n' "id:shop:product::900" "$long" >"$T/long.jsonl"
if expect_ok "feed stdin long line" sh -c 'cat "$3" | "$1" feed "$2" -' sh "$STRATA" "$APP" \
	"$T/long.jsonl"; then
	check "feed stdin long line: line" "$(grep '^written ' "$ERR")" \
		"written 1 documents, 0 failed, through line 2"
	"$STRATA" get "$APP" id:shop:product::900 >"$OUT" 2>"$ERR"
	check "feed stdin long line: title" "$(jout '.fields.title | length')" "100000"
fi
# A producer that pauses: what it sent is committed while it waits, and the
# end of the input adds no second line saying the same.
if expect_ok "feed stdin pause" sh -c '{ cat "$3"; sleep 1; } | "$1" feed "$2" -' sh "$STRATA" \
	"$APP" "$T/doc3.jsonl"; then
	check "feed stdin pause: one line" "$(grep -c '^written ' "$ERR")" "1"
fi
printf ' \n[%s,\n %s]\n' "$(cat "$T/doc3.jsonl")" \
	'{"remove": "id:shop:product::900"}' >"$T/array-stdin.json"
if expect_ok "feed stdin array" sh -c 'cat "$3" | "$1" feed "$2" -' sh "$STRATA" "$APP" \
	"$T/array-stdin.json"; then
	check "feed stdin array: line" "$(grep '^written ' "$ERR")" \
		"written 2 documents, 0 failed, through line 3"
fi
check "count after stdin feeds" "$(total)" "$NDOCS"
expect_fail "get malformed id" "id" "$STRATA" get "$APP" "not-a-document-id"

# An update assigns one field and keeps the others: product 1 becomes the
# cheapest, then gets its price back.
ID1=id:shop:product::1
P1=$(jq -r --arg id "$ID1" 'select(.put == $id) | .fields.price' "$FEED")
echo "{\"update\": \"$ID1\", \"fields\": {\"price\": {\"assign\": 1.25}}}" >"$T/update.jsonl"
expect_ok "feed update" "$STRATA" feed "$APP" "$T/update.jsonl"
if expect_ok "query after update" "$STRATA" query "$APP" --yql 'select * from sources * where true' \
	--profile cheap --hits 1; then
	check "updated is cheapest" "$(jout '.root.children[0].id')" "$ID1"
	check "updated price" "$(jout '.root.children[0].fields.price')" "1.25"
	check "update keeps title" "$(jout '.root.children[0].fields.title')" \
		"$(jq -r --arg id "$ID1" 'select(.put == $id) | .fields.title' "$FEED")"
fi
echo "{\"update\": \"$ID1\", \"fields\": {\"price\": {\"assign\": $P1}}}" >"$T/update.jsonl"
expect_ok "feed update back" "$STRATA" feed "$APP" "$T/update.jsonl"
echo '{"update": "id:shop:product::999", "fields": {"price": {"assign": 1}}}' >"$T/update.jsonl"
expect_fail "update missing document" "product::999" "$STRATA" feed "$APP" "$T/update.jsonl"
# Test-and-set: an update whose condition fails is reported on its line,
# counted apart and writes nothing; it is no failure.
printf '%s\n' "{\"update\": \"$ID1\", \"condition\": \"product.price < 0\", \"fields\": {\"price\": {\"assign\": 1}}}" \
	"{\"update\": \"$ID1\", \"condition\": \"product.price > 0\", \"fields\": {\"price\": {\"assign\": $P1}}}" \
	>"$T/update.jsonl"
if expect_ok "feed conditions" "$STRATA" feed "$APP" "$T/update.jsonl"; then
	check "feed conditions JSON" "$(jout '[.written, .failed, .conditionNotMet] | @csv')" "1,0,1"
	grep -q "update.jsonl:1: condition 'product.price < 0' did not match document '$ID1'" "$ERR" &&
		ok || bad "feed conditions: line 1 not reported: $(cat "$ERR")"
fi
check "count after updates" "$(total)" "$NDOCS"

# A JSON array is a feed too; the data can live outside the application.
# This copy has a second model, of the same file name in another folder:
# deploy compiles both into one binary in the data folder.
mkdir -p "$T/app2/models/v2"
cp -R "$APP/schemas" "$APP/models" "$T/app2/"
cp "$APP/models/ranker.onnx" "$T/app2/models/v2/ranker.onnx"
awk '{ line[NR] = $0 } END {
	for (i = 1; i < NR; i++) print line[i]
	print "    rank-profile relevance2 inherits with_query_embedding {"
	print "        onnx-model ranker2 {"
	print "            file: models/v2/ranker.onnx"
	print "            input \"query_emb\": query(q_emb)"
	print "            input \"doc_emb\": attribute(embedding)"
	print "            output \"score\": score"
	print "        }"
	print "        first-phase {"
	print "            expression: closeness(field, embedding)"
	print "        }"
	print "        second-phase {"
	print "            expression: sum(onnx(ranker2).score)"
	print "        }"
	print "    }"
	print line[NR] }' "$SD" >"$T/app2/schemas/product.sd"
jq -s '.[0:3]' "$FEED" >"$T/array.json"
if expect_ok "deploy --data" "$STRATA" deploy "$T/app2" --data "$T/data2"; then
	grep -q "2 models compiled into $T/data2/contexts" "$ERR" && ok ||
		bad "deploy --data summary: $(cat "$ERR")"
fi
check "deploy --data contexts" "$(ls "$T/data2/contexts" 2>&1 | tr '\n' ' ')" \
	"1-ranker_ctx.onnx manifest.json ranker_ctx.onnx ranker_strata.bin "
if expect_ok "feed array --data" "$STRATA" feed "$T/app2" "$T/array.json" --data "$T/data2"; then
	grep -Eq "fed 3 documents, 0 failed" "$ERR" && ok || bad "feed array summary: $(cat "$ERR")"
fi
if expect_ok "query --data" "$STRATA" query "$T/app2" --data "$T/data2" \
	--yql 'select * from sources * where true'; then
	check "count in --data store" "$(jout '.root.fields.totalCount')" "3"
fi
# Both models come from the shared binary; the second scores as the first.
for p in relevance relevance2; do
	if expect_ok "query --data $p" "$STRATA" query "$T/app2" --data "$T/data2" \
		--yql 'select * from sources * where {targetHits: 3}nearestNeighbor(embedding, q_emb)' \
		--profile $p --input "query(q_emb)=$QVEC"; then
		from_context "query --data $p"
		check "query --data $p hits" "$(jout '.root.children | length')" "3"
		jout '.root.children[] | "\(.id) \(.relevance)"' >"$T/data2.$p"
	fi
done
check "query --data: the two models agree" "$(cat "$T/data2.relevance2" 2>&1)" \
	"$(cat "$T/data2.relevance" 2>&1)"
if [ -e "$T/app2/.strata" ]; then bad "--data: the store was created inside the application"; else ok; fi

# ---- error paths: the feed ------------------------------------------------------------
# Line 2 does not fit the schema, line 4 is not JSON; lines 1 and 3 go in.
cat >"$T/mixed.jsonl" <<'EOF'
{"put": "id:shop:product::101", "fields": {"title": "Luma Travel Lamp", "brand": "Luma", "category": "desk-lamps", "price": 31.50, "rating": 4.0, "in_stock": true}}
{"put": "id:shop:product::102", "fields": {"title": "Broken", "price": "very cheap"}}
{"put": "id:shop:product::103", "fields": {"title": "Sonora Mini Earbuds", "brand": "Sonora", "category": "headphones", "price": 18.00, "rating": 3.8, "in_stock": true}}
{"put": "id:shop:product::104", "fields": {"title": 
EOF
expect_fail "feed bad documents" "line 2[^0-9]|:2:" "$STRATA" feed "$APP" "$T/mixed.jsonl"
grep -Eq "price" "$ERR" && ok || bad "feed bad document: message does not name the field: $(cat "$ERR")"
grep -Eq "line 4[^0-9]|:4:" "$ERR" && ok || bad "feed bad JSON: line 4 not reported: $(cat "$ERR")"
grep -Eq "fed 2 documents, 2 failed" "$ERR" && ok || bad "feed bad documents summary: $(cat "$ERR")"
check "feed bad documents commit line" "$(grep '^written ' "$ERR")" \
	"written 2 documents, 2 failed, through line 4"
check "feed bad documents JSON" "$(jout '[.written, .failed] | @csv')" "2,2"
check "count after bad feed" "$(total)" "$((NDOCS + 2))"
expect_fail "get rejected document" "." "$STRATA" get "$APP" "id:shop:product::102"

# A tensor of the wrong shape: 15 cells for x[16].
jq -c '.put = "id:shop:product::105" | .fields.embedding = .fields.embedding[0:15]' "$T/doc3.jsonl" \
	>"$T/shape.jsonl"
expect_fail "feed wrong tensor shape" "embedding" "$STRATA" feed "$APP" "$T/shape.jsonl"
grep -Eq "fed 0 documents, 1 failed" "$ERR" && ok || bad "wrong shape summary: $(cat "$ERR")"
check "count after wrong shape" "$(total)" "$((NDOCS + 2))"

# An unknown field.
echo '{"put": "id:shop:product::106", "fields": {"colour": "red"}}' >"$T/field.jsonl"
expect_fail "feed unknown field" "colour" "$STRATA" feed "$APP" "$T/field.jsonl"
expect_fail "feed missing file" "no-such-file" "$STRATA" feed "$APP" "$T/no-such-file.jsonl"
check "feed missing file JSON" "$(jout '[.written, .failed] | @csv')" "0,0"

# ---- error paths: queries and options --------------------------------------------------
expect_fail "bad YQL" "yql" "$STRATA" query "$APP" --yql 'select * from sources * where price <'
expect_fail "bad YQL position" "1:[0-9]+" "$STRATA" query "$APP" --yql 'select * frm sources *'
expect_fail "order by a tensor" "yql:1:45: order by needs a number or string attribute" \
	"$STRATA" query "$APP" --yql 'select * from sources * where true order by embedding'
expect_fail "deep grouping" "nested deeper than 8 levels" "$STRATA" query "$APP" --yql \
	'select * from sources * where true | all(group(a) each(group(b) each(group(c) each(group(d)
	each(group(e) each(group(f) each(group(g) each(group(h) each(group(i) each(output(count()))))))))))))))))))'
expect_fail "bad regex" "yql:1:45: bad regular expression" "$STRATA" query "$APP" \
	--yql 'select * from sources * where title matches "(a"'
expect_fail "in on a number" "'in' with strings needs a string field" "$STRATA" query "$APP" \
	--yql 'select * from sources * where price in ("cheap")'
expect_fail "unknown profile" "no_such_profile" "$STRATA" query "$APP" \
	--yql 'select * from sources * where true' --profile no_such_profile
expect_fail "wrong input shape" "q_emb" "$STRATA" query "$APP" \
	--yql 'select * from sources * where {targetHits: 5}nearestNeighbor(embedding, q_emb)' \
	--profile relevance --input 'query(q_emb)=[1, 2, 3]'
expect_fail "bad hits" "hits" "$STRATA" query "$APP" --yql 'select * from sources * where true' \
	--hits lots
expect_fail "bad option" "frobnicate" "$STRATA" query "$APP" --yql 'select * from sources * where true' \
	--frobnicate
expect_fail "unknown command" "frobnicate" "$STRATA" frobnicate "$APP"
expect_fail "missing app" "no-such-app" "$STRATA" query "$T/no-such-app" \
	--yql 'select * from sources * where true'
check "count after query errors" "$(total)" "$((NDOCS + 2))"

# ---- error paths: the application -------------------------------------------------------
# Each breaks the application, expects deploy to refuse it with a clear
# message, then restores it and checks that nothing stored was lost.
restore() {
	cp "$T/product.sd.orig" "$SD"
	cp "$T/ranker.onnx.orig" "$APP/models/ranker.onnx"
}

after_restore() {
	restore
	check "$1: count after restore" "$(total)" "$((NDOCS + 2))"
}

# A syntax error on a known line.
line=$(grep -n '^schema product {' "$SD" | cut -d: -f1)
line=$((line + 1))
awk -v l="$line" 'NR == l { print "    document product ] {" } { print }' "$T/product.sd.orig" >"$SD"
expect_fail "bad schema" "product\\.sd:$line:[0-9]+:.*]" "$STRATA" deploy "$APP"
after_restore "bad schema"

# An unknown feature in a profile: the message names it and where it is.
awk '/^}/ && !done { print "    rank-profile broken {"; print "        first-phase {";
                     print "            expression: attribute(colour) + 1"; print "        }";
                     print "    }"; done = 1 } { print }' "$T/product.sd.orig" >"$SD"
line=$(grep -n 'attribute(colour)' "$SD" | cut -d: -f1)
expect_fail "unknown feature" "product\\.sd:$line:[0-9]+.*colour|colour.*product\\.sd:$line" \
	"$STRATA" deploy "$APP"
after_restore "unknown feature"

# A misspelled rank feature.
sed 's/closeness(field, embedding) + 0.1/closenes(field, embedding) + 0.1/' "$T/product.sd.orig" >"$SD"
expect_fail "unknown function" "closenes" "$STRATA" deploy "$APP"
after_restore "unknown function"

# The model file is missing.
rm -f "$APP/models/ranker.onnx"
expect_fail "missing model" "ranker\\.onnx" "$STRATA" deploy "$APP"
after_restore "missing model"

# The model file is not ONNX: a fixed run of bytes whose first field claims
# more data than the file holds.
printf '\022\377\377\377\017strata: this is not a model\n\001\002\003' >"$APP/models/ranker.onnx"
expect_fail "malformed model" "ranker\\.onnx" "$STRATA" deploy "$APP"
after_restore "malformed model"

# An empty model file.
: >"$APP/models/ranker.onnx"
expect_fail "empty model" "ranker\\.onnx" "$STRATA" deploy "$APP"
after_restore "empty model"

# After all of that the application still answers as before.
if expect_ok "query after errors" "$STRATA" query "$APP" --yql 'select * from sources * where true' \
	--profile cheap --hits 3; then
	check "cheapest after errors" "$(jout '.root.children[0].id')" "id:shop:product::103"
fi

# ---- tree models: lightgbm() and xgboost() on a small application of their own ---------
TA=$T/trees
mkdir -p "$TA/schemas" "$TA/models/x"
cat >"$TA/schemas/item.sd" <<'EOS'
schema item {
    document item {
        field price type double { indexing: attribute | summary }
        field stock type int { indexing: attribute | summary }
    }
    rank-profile lgb {
        first-phase { expression: lightgbm("t.json") }
    }
    rank-profile xgb {
        first-phase { expression: xgboost("x/t.json") }
    }
}
EOS
# price <= 10 (NaN right): 1, else 2; stock <= 0 with 0 missing (default right): -1, else 5
cat >"$TA/models/t.json" <<'EOS'
{"objective": "regression", "feature_names": ["attribute(price)", "attribute(stock)"],
 "tree_info": [
  {"tree_structure": {"split_feature": 0, "threshold": 10, "decision_type": "<=",
   "default_left": false, "missing_type": "NaN",
   "left_child": {"leaf_value": 1}, "right_child": {"leaf_value": 2}}},
  {"tree_structure": {"split_feature": 1, "threshold": 0, "decision_type": "<=",
   "default_left": false, "missing_type": "Zero",
   "left_child": {"leaf_value": -1}, "right_child": {"leaf_value": 5}}}]}
EOS
echo '[{"nodeid": 0, "split": "attribute(price)", "split_condition": 15, "yes": 1, "no": 2,
  "missing": 1, "children": [{"nodeid": 1, "leaf": 0.5}, {"nodeid": 2, "leaf": -0.5}]}]' \
	>"$TA/models/x/t.json"
printf '%s\n' '{"put": "id:t:item::a", "fields": {"price": 5, "stock": 0}}' \
	'{"put": "id:t:item::b", "fields": {"price": 20, "stock": -3}}' \
	'{"put": "id:t:item::c", "fields": {"price": 10, "stock": 7}}' >"$TA/feed.jsonl"
expect_ok "trees deploy" "$STRATA" deploy "$TA"
expect_ok "trees feed" "$STRATA" feed "$TA" "$TA/feed.jsonl"
# a: 1 + 5 (0 is missing), b: 2 - 1, c: 1 (10 <= 10) + 5
if expect_ok "query lightgbm" "$STRATA" query "$TA" --profile lgb \
	--yql 'select * from sources * where true'; then
	check "lightgbm scores" "$(jout '[.root.children[] | "\(.id)=\(.relevance)"] | join(",")')" \
		"id:t:item::a=6,id:t:item::c=6,id:t:item::b=1"
fi
if expect_ok "query xgboost" "$STRATA" query "$TA" --profile xgb \
	--yql 'select * from sources * where true'; then
	check "xgboost scores" "$(jout '[.root.children[] | "\(.id)=\(.relevance)"] | join(",")')" \
		"id:t:item::a=0.5,id:t:item::c=0.5,id:t:item::b=-0.5"
fi
sed -i 's/attribute(stock)/attribute(colour)/' "$TA/models/t.json"
expect_fail "tree model feature" "item\\.sd:7:35: lightgbm model 't\\.json': feature 'attribute\\(colour\\)'" \
	"$STRATA" deploy "$TA"
sed -i 's/attribute(colour)/attribute(stock)/' "$TA/models/t.json"
rm -f "$TA/models/x/t.json"
expect_fail "tree model file" "item\\.sd:10:35: xgboost model 'x/t\\.json'" "$STRATA" deploy "$TA"

# Collection and struct fields, inheritance, a field outside the document and
# a document-summary, through the CLI.
DOCS=$T/docs
mkdir -p "$DOCS/schemas"
cat >"$DOCS/schemas/base.sd" <<'SD'
schema base {
  document base {
    field id type string { indexing: summary | attribute }
  }
}
SD
cat >"$DOCS/schemas/note.sd" <<'SD'
schema note {
  document note inherits base {
    struct who { field name type string { } }
    field tags type array<string> { indexing: summary | attribute }
    field ws type weightedset<string> { indexing: summary | attribute }
    field by type who { indexing: summary }
    field n type int { indexing: summary | attribute }
  }
  field n2 type int { indexing: input n | attribute }
  document-summary brief { summary id { } summary count { source: n } }
  rank-profile default { first-phase { expression: attribute(n2) } }
}
SD
cat >"$DOCS/feed.jsonl" <<'JL'
{"put": "id:d:note::1", "fields": {"id": "a", "tags": ["x", "y"], "ws": {"k": 2}, "by": {"name": "Ann"}, "n": 1}}
{"put": "id:d:note::2", "fields": {"id": "b", "tags": ["y"], "n": 5}}
{"update": "id:d:note::1", "fields": {"tags": {"add": ["z"]}}}
{"put": "id:d:note::3", "fields": {"tags": "x"}}
JL
if expect_ok "fields: deploy" "$STRATA" deploy "$DOCS"; then
	expect_fail "fields: feed" "feed.jsonl:4: .*field 'tags': expected an array" \
		"$STRATA" feed "$DOCS" "$DOCS/feed.jsonl"
	expect_ok "fields: get" "$STRATA" get "$DOCS" id:d:note::1 &&
		check "fields: get" "$(jq -c '.fields | [.tags, .ws, .by, .id]' "$OUT")" \
			'[["x","y","z"],{"k":2},{"name":"Ann"},"a"]'
	expect_ok "fields: contains" "$STRATA" query "$DOCS" --yql 'select * from note where tags contains "y"' &&
		check "fields: contains" "$(jout '[.root.children[].id] | join(",")')" "id:d:note::2,id:d:note::1"
	echo '{"yql": "select * from note where tags contains \"z\"", "presentation.summary": "brief"}' >"$T/brief.json"
	expect_ok "fields: summary class" "$STRATA" query "$DOCS" <"$T/brief.json" &&
		check "fields: summary class" "$(jq -c '.root.children[0].fields | [.id, .count, .tags]' "$OUT")" \
			'["a",1,null]'
fi
sed 's/type who/type whom/' "$DOCS/schemas/note.sd" >"$T/note.sd" && cp "$T/note.sd" "$DOCS/schemas/note.sd"
expect_fail "fields: unknown struct" "note\.sd:6:19: unknown field type 'whom'" "$STRATA" deploy "$DOCS"

# ---- tensors with mapped dimensions: query inputs and document fields ---------------
# Every JSON form of a mapped and a mixed tensor, and what is wrong with a bad one;
# fields are fed, returned in Vespa's short form and read by attribute().
MAP=$T/mapped
mkdir -p "$MAP/schemas"
cat >"$MAP/schemas/item.sd" <<'SD'
schema item {
  document item {
    field price type double { indexing: attribute | summary }
    field cats type tensor<float>(cat{}) { indexing: attribute | summary }
    field parts type tensor<float>(p{}, x[2]) { indexing: attribute | summary }
  }
  rank-profile fields {
    inputs { query(q) tensor<float>(cat{}) }
    first-phase { expression: sum(attribute(cats) * query(q)) + 100 * reduce(attribute(parts), sum) }
  }
  rank-profile cats {
    inputs {
      query(q) tensor<float>(cat{})
      query(m) tensor<float>(p{}, x[2])
    }
    first-phase { expression: attribute(price) + reduce(query(q), sum) + 10 * query(m){p:v,x:1} }
  }
}
SD
cat >"$MAP/feed.jsonl" <<'JL'
{"put": "id:a:item::1", "fields": {"price": 1}}
{"put": "id:a:item::2", "fields": {"cats": {"a": 2, "b": 0.5}, "parts": {"u": [1, 2]}}}
{"put": "id:a:item::3", "fields": {"cats": {"cells": [{"address": {"cat": "b"}, "value": 5}]}, "parts": {"blocks": [{"address": {"p": "w"}, "values": [3, 4]}]}}}
JL
cat >"$MAP/bad.jsonl" <<'JL'
{"put": "id:a:item::4", "fields": {"cats": {"cells": [{"address": {"dog": "a"}, "value": 1}]}}}
{"put": "id:a:item::5", "fields": {"parts": {"u": [1, 2, 3]}}}
{"update": "id:a:item::2", "fields": {"cats": {"add": {"c": 1}}}}
JL
# mapped_score INPUT...: the relevance of the one document with these inputs.
mapped_score() {
	set -- "$STRATA" query "$MAP" --yql 'select * from item where true' --profile cats "$@"
	if expect_ok "mapped inputs: query $*" "$@"; then jout '.root.children[0].relevance'; fi
}
if expect_ok "mapped inputs: deploy" "$STRATA" deploy "$MAP" &&
	expect_ok "mapped inputs: feed" "$STRATA" feed "$MAP" "$MAP/feed.jsonl"; then
	check "mapped inputs: none given" "$(mapped_score)" 1
	check "mapped inputs: short forms" "$(mapped_score --input 'query(q)={"a":2,"b":3}' \
		--input 'query(m)={"u":[1,2],"v":[3,4]}')" 46
	check "mapped inputs: cells and blocks" "$(mapped_score \
		--input 'query(q)={"cells":[{"address":{"cat":"a"},"value":5}]}' \
		--input 'query(m)={"blocks":[{"address":{"p":"v"},"values":[0,7]}]}')" 76
	check "mapped inputs: verbose literals" "$(mapped_score --input 'query(q)={{cat:a}:2,{cat:b}:3}' \
		--input 'query(m)={{p:u,x:0}:1,{p:u,x:1}:2,{p:v,x:0}:3,{p:v,x:1}:4}')" 46
	check "mapped inputs: short literals" "$(mapped_score --input "query(q)={a:2,'b':3}" \
		--input 'query(m)={u:[1,2],v:[3,4]}')" 46
	# query(q) is declared tensor<float>: its cells are floats, as Vespa keeps them
	check "mapped inputs: cells of the declared type" "$(mapped_score --input 'query(q)={"a":0.1}')" \
		1.1000000014901161
	check "mapped inputs: a literal with its type" \
		"$(mapped_score --input 'query(q)=tensor<float>(cat{}):{a:5}')" 6
	expect_fail "mapped inputs: malformed literal" \
		"query\(q\)': malformed tensor literal near '}'" \
		"$STRATA" query "$MAP" --yql 'select * from item where true' --profile cats \
		--input 'query(q)={a:}'
	expect_fail "mapped inputs: wrong dimension" \
		"query\(q\)': cell 0: address lacks dimension 'cat' \(tensor<float>\(cat\{\}\)\)" \
		"$STRATA" query "$MAP" --yql 'select * from item where true' --profile cats \
		--input 'query(q)={"cells":[{"address":{"dog":"a"},"value":5}]}'
	expect_fail "mapped inputs: bad index" "cell 0: bad index for dimension 'x'" \
		"$STRATA" query "$MAP" --yql 'select * from item where true' --profile cats \
		--input 'query(m)={"cells":[{"address":{"p":"a","x":"2"},"value":5}]}'
	expect_ok "mapped fields: query" "$STRATA" query "$MAP" --yql 'select * from item where true' \
		--profile fields --input 'query(q)={"a":10,"b":1}' &&
		check "mapped fields: scores and summaries" \
			"$(jout -c '[.root.children[] | [.id, .relevance, .fields.cats.cells, .fields.parts.blocks]]')" \
			'[["id:a:item::3",705,{"b":5},{"w":[3,4]}],["id:a:item::2",320.5,{"a":2,"b":0.5},{"u":[1,2]}],["id:a:item::1",0,null,null]]'
	expect_ok "mapped fields: get" "$STRATA" get "$MAP" id:a:item::2 &&
		check "mapped fields: get" "$(jout -c '.fields.parts')" '{"type":"tensor<float>(p{},x[2])","blocks":{"u":[1,2]}}'
	expect_fail "mapped fields: nearestNeighbor" \
		"yql:1:26: nearestNeighbor on 'cats', a tensor with mapped dimensions other than one mapped and some indexed, is not supported" \
		"$STRATA" query "$MAP" --yql 'select * from item where {targetHits:1}nearestNeighbor(cats, q)' \
		--profile fields --input 'query(q)={"a":10}'
	run "$STRATA" feed "$MAP" "$MAP/bad.jsonl"
	check "mapped fields: bad feed" "$(grep -c "address lacks dimension 'cat'\|block 'u' needs 2 numbers\|update operation 'add' is not supported" "$ERR")" 3
	expect_fail "mapped inputs: label too long" "bad label '0{40}' \(a string of 1 to 255 bytes\)" \
		"$STRATA" query "$MAP" --yql 'select * from item where true' --profile cats \
		--input "query(q)={\"$(printf '%0300d' 0)\":1}"
fi
sed 's/query(q) tensor<float>(cat{})/query(q) tensor<float>(cat{}): {}/' "$MAP/schemas/item.sd" >"$T/item.sd" &&
	cp "$T/item.sd" "$MAP/schemas/item.sd"
expect_fail "mapped inputs: default" \
	"item\.sd:13:36: default values of query inputs with mapped dimensions are not supported" \
	"$STRATA" deploy "$MAP"

# ---- embedders: a model given by URL is never downloaded ----------------------------------
EMB=$T/emb
mkdir -p "$EMB/schemas"
cat >"$EMB/schemas/doc.sd" <<'SD'
schema doc {
    document doc {
        field emb type tensor<float>(x[4]) {
            indexing: attribute
        }
    }
    rank-profile sem {
        inputs {
            query(q) tensor<float>(x[4])
        }
        first-phase {
            expression: sum(query(q) * attribute(emb))
        }
    }
}
SD
cat >"$EMB/services.xml" <<'XML'
<services version="1.0">
  <container id="default" version="1.0">
    <component id="e5" type="hugging-face-embedder">
      <transformer-model url="https://example.com/e5/model.onnx"/>
      <tokenizer-model url="https://example.com/e5/tokenizer.json"/>
    </component>
  </container>
</services>
XML
expect_ok "embedders: deploy with a URL model" "$STRATA" deploy "$EMB" &&
	check "embedders: said once" "$(grep -c "services\.xml:3:5: embedder 'e5' cannot run: .*https://example\.com/e5/" "$ERR")" 1
expect_fail "embedders: embed with a URL model" \
	"embedder 'e5' cannot run: .*https://example\.com/e5/.*never downloads.*path=" \
	"$STRATA" query "$EMB" --yql 'select * from sources * where true' --profile sem \
	--input 'query(q)=embed(e5, "running shoes")'
echo '{"yql": "select * from sources * where true", "ranking.profile": "sem",
 "input.query(q)": "embed(@text)", "text": "running shoes"}' >"$T/emb-req.json"
expect_fail "embedders: embed(@param) with the only embedder" "embedder 'e5' cannot run" \
	sh -c '"$1" query "$2" <"$3"' sh "$STRATA" "$EMB" "$T/emb-req.json"
expect_fail "embedders: unknown embedder" "no embedder 'e6'; declared: 'e5'" \
	"$STRATA" query "$EMB" --yql 'select * from sources * where true' --profile sem \
	--input 'query(q)=embed(e6, "running shoes")'
printf '<services>\n  <component id="e5" type="hugging-face-embedder">\n  </services>\n' >"$EMB/services.xml"
expect_fail "embedders: malformed services.xml" "services\.xml:3:5: mismatched tag" \
	"$STRATA" deploy "$EMB"

# ---- rank profiles in .profile files (schemas/NAME/*.profile) --------------------------
PF=$T/pfiles
mkdir -p "$PF/schemas/item"
cat >"$PF/schemas/item.sd" <<'SD'
schema item {
  document item {
    field price type double { indexing: attribute | summary }
  }
  rank-profile base {
    first-phase { expression: attribute(price) }
  }
}
SD
cat >"$PF/schemas/item/double.profile" <<'PROF'
# a profile of schema item, in a file of its own
rank-profile double inherits base {
    first-phase { expression: 2 * attribute(price) + half }
    function half() { expression: 0.5 }
}
PROF
printf '{"put": "id:a:item::1", "fields": {"price": 3}}\n' >"$PF/feed.jsonl"
if expect_ok "profile files: deploy" "$STRATA" deploy "$PF" &&
	expect_ok "profile files: feed" "$STRATA" feed "$PF" "$PF/feed.jsonl" &&
	expect_ok "profile files: query" "$STRATA" query "$PF" --yql 'select * from item where true' \
		--profile double; then
	check "profile files: the profile's score" "$(jout '.root.children[0].relevance')" 6.5
fi
printf 'rank-profile broken inherits base {\n    first-phase { expression: nosuch(1) }\n}\n' \
	>"$PF/schemas/item/broken.profile"
expect_fail "profile files: an error names the .profile file" \
	"schemas/item/broken\.profile:2:31: unknown function or feature 'nosuch'" "$STRATA" deploy "$PF"
printf 'field x type int { }\n' >"$PF/schemas/item/broken.profile"
expect_fail "profile files: only rank-profile blocks" \
	"broken\.profile:1:1: a \.profile file holds rank-profile blocks, found 'field'" \
	"$STRATA" deploy "$PF"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
