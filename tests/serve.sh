#!/bin/sh
# serve.sh: `strata serve` driven with curl, on the example shop.
#
#   sh tests/serve.sh [STRATA]    (or STRATA=build/strata MKSHOP=build/tests/mkshop sh tests/serve.sh)
#
# The server listens on a free port it picks itself (--port 0) and names on
# stderr.  Checked: documents put, got, updated and removed through
# /document/v1 and then found by /search/ GET and POST with the values
# written, and visited page by page with continuations, each once; the
# test-and-set conditions on puts, updates and removes (412 and nothing
# written when one fails; create lets a write through to a missing
# document); visits with a selection; the
# error answers (status and Vespa's JSON) of malformed JSON, bad YQL, an
# unknown document type or profile, a bad condition, a body over --max-body
# (with and without a length), a timeout, a bad soft timeout setting (the
# library's own error, so the query gets the request's settings) and a
# timeout not reached (full coverage); nothing of the store changes
# through them; a client that stops sending is disconnected after
# --client-timeout while others are served; health and metrics count what
# was done; a burst on one thread gets results or 503s, each counted;
# SIGTERM answers the request still being read, then exits 0; a feed
# through the server killed with -9 keeps every document it answered 200
# for; and tests/serve_client.py, Python's http.client on one keep-alive
# connection (chunked bodies included).  The same port speaks HTTP/2 with
# prior knowledge (curl --http2-prior-knowledge): searches and document
# operations answer as over HTTP/1.1, ten streams at once on one connection
# (nghttp) each get the answer HTTP/1.1 gives, bodies over --max-body get
# 413, a silent stream is disconnected, a stream in flight at SIGTERM gets
# GOAWAY, is answered and its write kept, and an Upgrade: h2c request is answered over
# HTTP/1.1.  No check depends on timing but the
# timeout one, whose limit is a microsecond.  The last line is "N passed,
# M failed".
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=serve
. "$here/clitest.sh"
APP=$T/shop

if ! command -v curl >/dev/null 2>&1; then
	echo "serve: curl is needed (make deps-test installs it)"
	echo "0 passed, 1 failed"
	exit 1
fi
mkdir -p "$APP"
cp -R "$top/schemas/shop/schemas" "$APP/"
if ! "$MKSHOP" "$APP" >/dev/null 2>"$T/err" || ! "$STRATA" deploy "$APP" 2>"$T/err"; then
	echo "serve: cannot set up the shop: $(cat "$T/err")"
	echo "0 passed, 1 failed"
	exit 1
fi

# req NAME WANT_STATUS CURL_ARGS...: one request; its body in $OUT, and a
# failure unless the status is WANT_STATUS.
req() {
	name=$1
	want=$2
	shift 2
	code=$(curl -s -o "$OUT" -w '%{http_code}' "$@" 2>"$ERR")
	check "$name: status ($(head -c 200 "$OUT"))" "$code" "$want"
}

# ---- the command line ----
expect_fail "serve without APP" 'missing APP' "$STRATA" serve
expect_fail "serve bad port" '--port needs a number from 0 to 65535' "$STRATA" serve "$APP" --port 70000
expect_fail "serve unknown option" "unknown option '--nope'" "$STRATA" serve "$APP" --nope 1
expect_fail "serve bad bind" '--bind needs an IPv4 address' "$STRATA" serve "$APP" --bind nowhere
expect_fail "serve undeployed" 'not deployed' "$STRATA" serve "$APP" --data "$T/none"
run "$STRATA" serve --help
check "serve --help" "$(grep -c '^usage: strata serve APP' "$OUT")" "1"

start --threads 2 || { echo "$passed passed, $failed failed"; exit 1; }

# ---- documents ----
for i in 1 2 3 4 5; do
	sed -n "${i}p" "$APP/feed.jsonl" | jq -c '{fields}' >"$T/doc$i.json"
	req "put $i" 200 -X POST -H 'Content-Type: application/json' --data-binary "@$T/doc$i.json" \
		"$B/document/v1/shop/product/docid/$i"
done
check "put answer" "$(jout '.id + " " + .pathId')" "id:shop:product::5 /document/v1/shop/product/docid/5"
req "get" 200 "$B/document/v1/shop/product/docid/2"
want=$(sed -n 2p "$APP/feed.jsonl" | jq -r '.fields.title')
check "get title" "$(jout '.fields.title')" "$want"
check "get id" "$(jout '.id')" "id:shop:product::2"
check "get pathId" "$(jout '.pathId')" "/document/v1/shop/product/docid/2"
check "get members" "$(jout -c 'keys_unsorted')" '["id","fields","pathId"]'
req "get missing" 404 "$B/document/v1/shop/product/docid/99"
check "get missing answer" "$(jout '.id')" "id:shop:product::99"
req "update" 200 -X PUT -d '{"fields": {"price": {"assign": 1.25}}}' \
	"$B/document/v1/shop/product/docid/2"
req "get updated" 200 "$B/document/v1/shop/product/docid/2"
check "updated price" "$(jout '.fields.price')" "1.25"
req "update missing" 404 -X PUT -d '{"fields": {"price": {"assign": 3}}}' \
	"$B/document/v1/shop/product/docid/77"
check "update missing message" "$(jout '.message')" "document 'id:shop:product::77' not found"
req "update create" 200 -X PUT -d '{"fields": {"price": {"assign": 3}}}' \
	"$B/document/v1/shop/product/docid/77?create=true"
req "get created" 200 "$B/document/v1/shop/product/docid/77"
check "created price" "$(jout '.fields.price')" "3"
req "remove" 200 -X DELETE "$B/document/v1/shop/product/docid/77"
req "removed" 404 "$B/document/v1/shop/product/docid/77"
req "remove again" 200 -X DELETE "$B/document/v1/shop/product/docid/77"

# ---- test-and-set: a condition on a write, 412 and nothing written when it fails ----
D=$B/document/v1/shop/product/docid
req "condition met" 200 -X PUT -d '{"fields": {"price": {"assign": 2.5}}}' \
	"$D/2?condition=product.price%3D%3D1.25"
req "condition met: get" 200 "$D/2"
check "condition met: written" "$(jout '.fields.price')" "2.5"
req "condition not met" 412 -X PUT -d '{"fields": {"price": {"assign": 9}}}' \
	"$D/2?condition=product.price%3E100"
check "412 members" "$(jout -c 'keys_unsorted')" '["pathId","id","message"]'
check "412 message" "$(jout '.id + " " + .message')" \
	"id:shop:product::2 ReturnCode(TEST_AND_SET_CONDITION_FAILED, condition 'product.price>100' did not match document 'id:shop:product::2')"
req "condition in the body" 412 -X PUT \
	-d '{"condition": "product.price < 1", "fields": {"price": {"assign": 9}}}' "$D/2"
req "conditional put" 412 -X POST -d '{"fields": {"price": 9}}' "$D/2?condition=false"
req "conditional remove" 412 -X DELETE "$D/2?condition=not%20product.price"
req "condition not met: get" 200 "$D/2"
check "condition not met: nothing written" "$(jout '.fields.price')" "2.5"
req "condition back" 200 -X PUT -d '{"fields": {"price": {"assign": 1.25}}}' \
	"$D/2?condition=product.price%3D%3D2.5%20and%20id.specific%3D%3D%222%22"
req "condition on a missing document" 412 -X DELETE "$D/78?condition=true"
check "missing document message" "$(jout '.message')" \
	"ReturnCode(TEST_AND_SET_CONDITION_FAILED, document 'id:shop:product::78' does not exist)"
req "conditional put with create" 200 -X POST -d '{"fields": {"price": 4}}' \
	"$D/78?create=true&condition=product.price%3E100"
req "conditional remove met" 200 -X DELETE "$D/78?condition=product.price%3D%3D4"
req "conditionally removed" 404 "$D/78"
req "bad condition" 400 -X PUT -d '{"fields": {"price": {"assign": 9}}}' \
	"$D/2?condition=product.price%3E"
check "bad condition message" "$(jout '.message')" "condition:1:15: the condition ends where a value or condition belongs"

# ---- searches ----
yql='select%20title,price%20from%20product%20where%20true'
req "search GET" 200 "$B/search/?yql=$yql&ranking.profile=cheap&hits=2"
# The two cheapest by an independent sort of what was put (product 2 now at 1.25).
want=$(head -n 5 "$APP/feed.jsonl" | jq -rs 'map({id: (.put | sub("^id:[^:]*:[^:]*::"; "")),
	p: (if .put == "id:shop:product::2" then 1.25 else .fields.price end)}) | sort_by(.p)
	| .[:2] | map(.id) | join(",")')
check "cheapest first" "$(jout "$strip_ids")" "$want"
check "search total" "$(jout '.root.fields.totalCount')" "5"
req "search POST" 200 -X POST -H 'Content-Type: application/json' \
	-d '{"yql": "select title from product where price < 2", "ranking.profile": "cheap"}' "$B/search/"
check "POST hits" "$(jout '[.root.children[].id] | join(",")')" "id:shop:product::2"
req "search POST with parameters" 200 -X POST \
	-d '{"yql": "select title from product where true"}' "$B/search/?hits=1&ranking.profile=cheap"
check "parameters merged" "$(jout '[.root.children[].id] | join(",")')" "id:shop:product::2"
q16=$(seq -s, 1 16)
req "input parameter" 200 "$B/search/?yql=$yql&ranking.profile=relevance&input.query%28q_emb%29=%5B$q16%5D"
check "input parameter total" "$(jout '.root.fields.totalCount')" "5"
req "input parameter of the wrong size" 400 \
	"$B/search/?yql=$yql&ranking.profile=relevance&input.query%28q_emb%29=%5B1,2%5D"
req "trace" 200 "$B/search/?yql=$yql&trace.level=1"
check "trace messages" "$(jout '.trace.children | length')" "2"
# Vespa's aliases, and its parameters Strata does not honour refused by name
req "tracelevel alias" 200 "$B/search/?yql=$yql&tracelevel=1&count=1"
check "tracelevel alias trace" "$(jout '.trace.children | length') $(jout '.root.children | length')" "2 1"
req "presentation.timing" 200 "$B/search/?yql=$yql&presentation.timing=true"
check "timing members" "$(jout -c '.timing | keys_unsorted')" '["querytime","summaryfetchtime","searchtime"]'
req "refused parameter" 400 "$B/search/?yql=$yql&ranking.freshness=now"
check "refused parameter message" "$(jout '.root.errors[0].message')" \
	"request parameter 'ranking.freshness' is not supported: use the freshness rank feature"
req "sorting parameter" 200 "$B/search/?yql=$yql&sorting=-price%20%5Brelevance%5D&hits=5"
check "sorting parameter: by price, descending" \
	"$(jout '[.root.children[].fields.price] | (length > 1 and . == (sort | reverse))')" "true"
req "bad sorting parameter" 400 "$B/search/?yql=$yql&sorting=-price,title"
check "bad sorting parameter message" "$(jout '.root.errors[0].message')" \
	"sorting:1:7: expected a space between sort expressions"
req "query without yql" 200 "$B/search/?query=nosuchwordanywhere&type=all&default-index=title"
check "query without yql hits" "$(jout '.root.fields.totalCount')" "0"

# ---- visiting: every document once, page by page ----
cont=
: >"$T/visited"
pages=0
while :; do
	req "visit page $pages" 200 "$B/document/v1/shop/product/docid?cluster=default&wantedDocumentCount=2${cont:+&continuation=$cont}"
	jout '.documents[] | .id + " " + (.fields.title // "")' >>"$T/visited"
	check "visit page size $pages" "$(jout '.documentCount <= 2 and .documentCount == (.documents | length)')" "true"
	cont=$(jout '.continuation // empty')
	pages=$((pages + 1))
	[ -n "$cont" ] && [ $pages -lt 10 ] || break
done
check "visit pages" "$pages" "3"
want=$(for i in 1 2 3 4 5; do echo "id:shop:product::$i $(jq -r '.fields.title' "$T/doc$i.json")"; done)
check "visited every document once" "$(sort "$T/visited")" "$want"
req "visit other namespace" 200 "$B/document/v1/other/product/docid"
check "other namespace empty" "$(jout '.documentCount')" "0"
check "visit members" "$(jout -c 'keys_unsorted')" '["documents","documentCount","pathId"]'
check "visit pathId" "$(jout '.pathId')" "/document/v1/other/product/docid"
req "visit selection" 200 "$B/document/v1/shop/product/docid?selection=id.specific%3D%3D%223%22%20or%20id.specific%3D%275%27"
check "visit selection ids" "$(jout -c '[.documents[].id] | sort')" '["id:shop:product::3","id:shop:product::5"]'
# Those under 50, by jq over what was put (product 2 at 1.25), in pages of 1.
under=$(head -n 5 "$APP/feed.jsonl" | jq -rs 'map(select(.put == "id:shop:product::2" or .fields.price < 50)
	| .put) | sort | join(" ")')
cont=
got=
spages=0
while :; do
	spages=$((spages + 1))
	req "visit selection page" 200 "$B/document/v1/shop/product/docid?wantedDocumentCount=1&selection=product.price%20%3C%2050${cont:+&continuation=$cont}"
	got="$got $(jout -r '.documents[].id')"
	cont=$(jout '.continuation // empty')
	[ -n "$cont" ] || break
done
check "visit selection pages" "$(echo $got | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')" "$under"
req "visit bad selection" 400 "$B/document/v1/shop/product/docid?selection=product.nope%3D%3D1"
check "visit bad selection message" "$(jout '.message')" "selection:1:9: 'nope' is not a field of document type 'product'"
req "visit fieldSet" 400 "$B/document/v1/shop/product/docid?fieldSet=x"
check "visit fieldSet message" "$(jout '.message')" "fieldSet must be [all], [document] or TYPE:[document] (every field), not 'x'"
req "visit bad continuation" 400 "$B/document/v1/shop/product/docid?continuation=xyz"
req "visit unknown type" 400 "$B/document/v1/shop/nope/docid"

# ---- bad requests: clear errors, nothing stored changes ----
req "malformed search JSON" 400 -X POST -d '{"yql": ' "$B/search/"
check "malformed search error" "$(jout '.root.errors[0].code, .root.errors[0].summary' | tr '\n' ' ')" \
	"3 Illegal query "
req "bad yql" 400 "$B/search/?yql=select%20*%20from%20product%20where"
check "bad yql message" "$(jout '.root.errors[0].message' | grep -c 'yql:1:')" "1"
req "unknown profile" 400 "$B/search/?yql=$yql&ranking.profile=nope"
check "unknown profile error" "$(jout '.root.errors[0].code')" "4"
req "no yql" 400 "$B/search/"
req "bad timeout" 400 "$B/search/?yql=$yql&timeout=soon"
req "timeout" 504 "$B/search/?yql=$yql&timeout=0.001ms"
check "timeout error" "$(jout '.root.errors[0].code, .root.errors[0].summary' | tr '\n' ' ')" \
	"12 Timed out "
# the query runs with what is left of the timeout, its soft timeout settings read by the library
req "soft timeout factor" 400 "$B/search/?yql=$yql&timeout=5s&ranking.softtimeout.factor=2"
check "soft timeout factor message" "$(jout '.root.errors[0].code, .root.errors[0].message' | tr '\n' ' ')" \
	"4 \"ranking.softtimeout.factor\": expected a number above 0 and at most 1 "
req "timeout not reached" 200 "$B/search/?yql=$yql&timeout=30s&ranking.softtimeout.enable=false"
check "timeout not reached coverage" "$(jout '.root.coverage | [.full, has("degraded")] | @csv')" "true,false"
req "malformed document JSON" 400 -X POST -d '{"fields": {"price": ' \
	"$B/document/v1/shop/product/docid/6"
check "malformed document message" "$(jout '.message' | grep -c 'not JSON: line 1')" "1"
req "unknown doc type" 400 -X POST -d '{"fields": {"price": 3}}' "$B/document/v1/shop/nope/docid/6"
check "unknown doc type message" "$(jout '.message' | grep -c "unknown document type 'nope'")" "1"
req "unknown field" 400 -X POST -d '{"fields": {"nope": 3}}' "$B/document/v1/shop/product/docid/6"
req "unknown body key" 400 -X POST -d '{"fields": {}, "put": "x"}' "$B/document/v1/shop/product/docid/6"
req "condition" 400 -X POST -d '{"fields": {"price": 3}}' \
	"$B/document/v1/shop/product/docid/1?condition=product.price%3E%3E1"
check "condition message" "$(jout '.message' | grep -c 'condition:1:15: unexpected')" "1"
req "bad path" 400 "$B/document/v1/shop/product/1"
req "unknown resource" 404 "$B/nope"
req "wrong method" 405 -X DELETE "$B/search/"
req "still 5" 200 "$B/search/?yql=$yql"
check "nothing stored changed" "$(jout '.root.fields.totalCount')" "5"
req "price kept" 200 "$B/document/v1/shop/product/docid/1"
check "condition wrote nothing" "$(jout '.fields.price')" "$(jq '.fields.price' "$T/doc1.json")"

# ---- health and metrics ----
req "health" 200 "$B/state/v1/health"
check "health up" "$(jout '.status.code')" "up"
req "metrics" 200 "$B/metrics/v2/values"
m='.nodes[0].services[0].metrics[0].values'
check "metrics puts" "$(jout "$m.\"feed.puts\"")" "6"
check "metrics updates" "$(jout "$m.\"feed.updates\"")" "4"
check "metrics not met" "$(jout "$m.\"feed.condition_not_met\"")" "5"
check "metrics visits" "$(jout "$m.\"document.visits\"")" "$((pages + 2 + spages))"
check "metrics timeouts" "$(jout "$m.\"queries.timeouts\"")" "1"
check "metrics degraded" "$(jout "$m.\"queries.degraded\"")" "0"
check "metrics latency" "$(jout "$m.\"query_latency.p99\" > 0 and $m.\"query_latency.p50\" <= $m.\"query_latency.p99\"")" "true"
req "state metrics" 200 "$B/state/v1/metrics"
check "state metrics queries" "$(jout '.metrics.values[] | select(.name == "queries.count") | .values.value')" \
	"$(curl -s "$B/metrics/v2/values" | jq "$m.\"queries.count\"")"
# An application without services.xml has one content cluster, "default".
req "visit cluster default" 200 "$B/document/v1/?cluster=default&wantedDocumentCount=100"
check "cluster default holds every document" "$(jout '.documentCount')" "5"
req "visit a cluster the shop lacks" 400 "$B/document/v1/?cluster=content"
check "wrong cluster message" "$(jout '.message')" "no content cluster 'content', only 'default'"
# ---- HTTP/2 with prior knowledge, on the same port ----
# req2 NAME WANT_STATUS CURL_ARGS...: as req, over HTTP/2 (and a failure
# unless the answer came over HTTP/2).
req2() {
	name=$1
	want=$2
	shift 2
	code=$(curl -s --http2-prior-knowledge -o "$OUT" -w '%{http_code} %{http_version}' "$@" 2>"$ERR")
	check "$name: status over HTTP/2 ($(head -c 200 "$OUT"))" "$code" "$want 2"
}
# same NAME CURL_ARGS...: the answer over HTTP/2 is the one over HTTP/1.1.
same() {
	name=$1
	shift
	curl -s --http1.1 -o "$T/h1" "$@"
	req2 "$name" 200 "$@"
	check "$name: the same as over HTTP/1.1" "$(jq -cS . "$OUT")" "$(jq -cS . "$T/h1")"
}
same "h2 search GET" "$B/search/?yql=$yql&ranking.profile=cheap&hits=3"
check "h2 search hits" "$(jout '.root.children | length')" "3"
same "h2 search POST" -X POST -H 'Content-Type: application/json' \
	-d '{"yql": "select title from product where price < 2", "ranking.profile": "cheap"}' "$B/search/"
check "h2 POST hits" "$(jout '[.root.children[].id] | join(",")')" "id:shop:product::2"
same "h2 get" "$B/document/v1/shop/product/docid/3"
req2 "h2 put" 200 -X POST -d '{"fields": {"title": "over h2", "price": 4.5}}' \
	"$B/document/v1/shop/product/docid/60"
check "h2 put answer" "$(jout '.id')" "id:shop:product::60"
req "h2 put read over HTTP/1.1" 200 "$B/document/v1/shop/product/docid/60"
check "h2 put stored" "$(jout '.fields.title + " " + (.fields.price | tostring)')" "over h2 4.5"
req2 "h2 update" 200 -X PUT -d '{"fields": {"price": {"assign": 6}}}' \
	"$B/document/v1/shop/product/docid/60"
req2 "h2 get updated" 200 "$B/document/v1/shop/product/docid/60"
check "h2 updated price" "$(jout '.fields.price')" "6"
req2 "h2 delete" 200 -X DELETE "$B/document/v1/shop/product/docid/60"
req2 "h2 deleted" 404 "$B/document/v1/shop/product/docid/60"
req2 "h2 malformed JSON" 400 -X POST -d '{"yql": ' "$B/search/"
check "h2 malformed error" "$(jout '.root.errors[0].code')" "3"
req2 "h2 unknown field" 400 -X POST -d '{"fields": {"nope": 3}}' "$B/document/v1/shop/product/docid/6"
req2 "h2 unknown resource" 404 "$B/nope"
req2 "h2 health" 200 "$B/state/v1/health"
check "h2 health up" "$(jout '.status.code')" "up"
# HEAD: the status and length GET gets, no body (a body would break the
# stream).
code=$(curl -s --http2-prior-knowledge -I -o "$OUT" -w '%{http_code} %{http_version}' \
	"$B/state/v1/health" 2>"$ERR")
check "h2 HEAD" "$code $(tr -d '\r' <"$OUT" | sed -n 's/^content-length: //p')" "200 2 24"
# An upgrade request (curl --http2 on http://) is not taken up: it is
# answered over HTTP/1.1.
code=$(curl -s --http2 -o "$OUT" -w '%{http_code} %{http_version}' "$B/state/v1/health" 2>"$ERR")
check "Upgrade: h2c answered over HTTP/1.1" "$code" "200 1.1"
req2 "h2 decoded parameters" 200 "$B/search/?yql=select+title+from+product+where+price+%3C+2&ranking.profile=cheap"
check "h2 decoded parameters hits" "$(jout '[.root.children[].id] | join(",")')" "id:shop:product::2"
# Several streams at once on one connection.  nghttp (nghttp2-client) opens
# one connection and sends every request on it without waiting (Debian's
# curl 7.88 fails the second transfer it multiplexes on a connection).
if command -v nghttp >/dev/null 2>&1; then
	set --
	j=1
	while [ $j -le 8 ]; do
		set -- "$@" "$B/search/?yql=$yql&ranking.profile=cheap&hits=$j"
		j=$((j + 1))
	done
	nghttp -s -n "$@" "$B/document/v1/shop/product/docid/4" "$B/document/v1/shop/product/docid/99" \
		>"$OUT" 2>"$ERR"
	check "h2 concurrent streams" "$?" "0"
	# id, code, size per request; the sizes are the sizes over HTTP/1.1
	awk '$1 ~ /^[0-9]+$/ && NF >= 7 { print $5, $6, $7 }' "$OUT" | sort -k3 >"$T/streams"
	: >"$T/want"
	for u in "$@" "$B/document/v1/shop/product/docid/4" "$B/document/v1/shop/product/docid/99"; do
		c=$(curl -s --http1.1 -o "$T/h1" -w '%{http_code}' "$u")
		echo "$c $(wc -c <"$T/h1" | tr -d ' ') ${u#"$B"}" >>"$T/want"
	done
	check "h2 concurrent answers" "$(sort -k3 "$T/streams")" "$(sort -k3 "$T/want")"
	check "h2 ten streams" "$(wc -l <"$T/streams" | tr -d ' ')" "10"
else
	bad "nghttp is needed for several HTTP/2 streams at once (make deps-test installs nghttp2-client)"
fi
# The same server through Python's HTTP client, on one keep-alive connection.
if command -v python3 >/dev/null 2>&1; then
	python3 "$here/serve_client.py" "$B" >"$OUT" 2>&1 && ok || bad "python client: $(cat "$OUT")"
	tail -n 1 "$OUT"
else
	bad "python3 is needed for tests/serve_client.py (make deps-test installs it)"
fi

stop
check "SIGTERM exit" "$rc" "0"

# ---- limits: huge bodies, slow clients ----
# wait_open N: until the server counts N requests open (this one included).
wait_open() {
	while [ "$(curl -s "$B/metrics/v2/values" | jq "$m.\"requests.open\"")" != "$1" ]; do
		sleep 0.02
	done
}
start --max-body 100000 --client-timeout 1 || { echo "$passed passed, $failed failed"; exit 1; }
head -c 200000 /dev/zero | tr '\0' 'a' >"$T/big"
req "huge body" 413 -X POST --data-binary "@$T/big" "$B/document/v1/shop/product/docid/8"
check "huge body message" "$(jout '.message' | grep -c 'over the limit of 100000')" "1"
req "huge chunked body" 413 -X POST -H 'Transfer-Encoding: chunked' --data-binary "@$T/big" "$B/search/"
check "huge chunked error" "$(jout '.root.errors[0].code')" "2"
req2 "h2 huge body" 413 -X POST --data-binary "@$T/big" "$B/document/v1/shop/product/docid/8"
check "h2 huge body message" "$(jout '.message')" "the request body of 200000 bytes is over the limit of 100000"
req2 "h2 huge body without a length" 413 -X POST -H 'Content-Length:' --data-binary "@$T/big" "$B/search/"
check "h2 huge body without a length message" "$(jout '.root.errors[0].message')" \
	"the request body is over the limit of 100000 bytes"
req2 "h2 served after a huge body" 200 "$B/state/v1/health"
# A client that sends part of its body and then nothing.
mkfifo "$T/fifo"
curl -s -o "$T/slow" -w '%{http_code}' -X POST -H 'Expect:' -H 'Content-Length: 100' -T "$T/fifo" \
	"$B/document/v1/shop/product/docid/9" >"$T/slowcode" 2>/dev/null &
slow=$!
exec 3>"$T/fifo"
printf '{"fields": ' >&3
req "served beside a silent client" 200 "$B/state/v1/health"
# It is disconnected once silent for --client-timeout: then only the
# metrics request itself is open.
m='.nodes[0].services[0].metrics[0].values'
wait_open 1
exec 3>&-
wait "$slow"
check "silent client disconnected" "$(cat "$T/slowcode")" "000"
req "silent client stored nothing" 404 "$B/document/v1/shop/product/docid/9"
# The same over HTTP/2: a stream whose body stops coming.
curl -s --http2-prior-knowledge -o "$T/slow" -w '%{http_code}' -X POST -H 'Content-Length: 100' \
	-T "$T/fifo" "$B/document/v1/shop/product/docid/9" >"$T/slowcode" 2>/dev/null &
slow=$!
exec 3>"$T/fifo"
printf '{"fields": ' >&3
wait_open 2
wait_open 1
exec 3>&-
wait "$slow"
check "silent HTTP/2 client disconnected" "$(cat "$T/slowcode")" "000"
req2 "silent HTTP/2 client stored nothing" 404 "$B/document/v1/shop/product/docid/9"
# SIGTERM while a request is being read: it is answered, then the server exits.
curl -s -o "$T/late" -w '%{http_code}' -X PUT -T "$T/fifo" \
	"$B/document/v1/shop/product/docid/3" >"$T/latecode" 2>/dev/null &
late=$!
exec 3>"$T/fifo"
printf '{"fields": {"price": ' >&3
# And one over HTTP/2 (tests/serve_h2drain.py): it gets GOAWAY naming its
# stream as the last, then sends the rest of its body and is answered.
python3 "$here/serve_h2drain.py" "$B" /document/v1/shop/product/docid/4 \
	'{"fields": {"price": {"assign": 8}}}' 22 >"$T/h2drain" 2>&1 &
late2=$!
# Once the server has both open (the metrics request is the third).
wait_open 3
kill -TERM "$feeder"
while ! grep -q 'finishing the requests' "$T/log"; do sleep 0.02; done
printf '{"assign": 7}}}' >&3
exec 3>&-
wait "$late"
check "request in flight at SIGTERM answered" "$(cat "$T/latecode")" "200"
wait "$late2" && ok || bad "HTTP/2 stream in flight at SIGTERM: $(cat "$T/h2drain")"
tail -n 1 "$T/h2drain"
wait "$feeder"
check "drained exit" "$?" "0"
feeder=
check "drain log" "$(grep -c '^strata: stopped' "$T/log")" "1"
run "$STRATA" get "$APP" id:shop:product::3
check "write in flight at SIGTERM kept" "$(jout '.fields.price')" "7"
run "$STRATA" get "$APP" id:shop:product::4
check "HTTP/2 write in flight at SIGTERM kept" "$(jout '.fields.price')" "8"

# ---- kill -9 during a feed ----
start --threads 2 || { echo "$passed passed, $failed failed"; exit 1; }
: >"$T/acked"
(
	i=1000
	while [ $i -lt 3000 ]; do
		c=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d "{\"fields\": {\"title\": \"p$i\", \"price\": $i}}" \
			"$B/document/v1/shop/product/docid/$i" 2>/dev/null)
		[ "$c" = 200 ] && echo $i >>"$T/acked"
		i=$((i + 1))
	done
) &
client=$!
while [ "$(wc -l <"$T/acked")" -lt 200 ]; do
	kill -0 "$client" 2>/dev/null || break
	sleep 0.02
done
kill -9 "$feeder"
wait "$feeder" 2>/dev/null
feeder=
wait "$client"
n=$(wc -l <"$T/acked")
echo "killed the server after $n acknowledged puts"
[ "$n" -ge 200 ] && ok || bad "only $n puts acknowledged before the kill"
start --threads 1 --queue 1 || { echo "$passed passed, $failed failed"; exit 1; }
missing=0
while read -r i; do
	c=$(curl -s -o "$OUT" -w '%{http_code}' "$B/document/v1/shop/product/docid/$i")
	if [ "$c" != 200 ] || [ "$(jout '.fields.title')" != "p$i" ]; then
		missing=$((missing + 1))
	fi
done <"$T/acked"
check "every acknowledged put survives kill -9" "$missing" "0"
req "store usable after kill -9" 200 -X POST -d '{"fields": {"title": "after", "price": 1}}' \
	"$B/document/v1/shop/product/docid/5000"
# A burst on one thread and a queue of one: each answer is a result or
# Vespa's overload error, and the metrics count every 503 (how many there
# are depends on timing; none is also right).
j=0
pids=
while [ $j -lt 40 ]; do
	curl -s -o "$T/burst$j" -w '%{http_code}\n' "$B/search/?yql=$yql&ranking.profile=cheap" \
		>"$T/burstcode$j" 2>/dev/null &
	pids="$pids $!"
	j=$((j + 1))
done
for p in $pids; do wait "$p"; done
n503=0
odd=0
j=0
while [ $j -lt 40 ]; do
	c=$(cat "$T/burstcode$j")
	if [ "$c" = 503 ]; then
		n503=$((n503 + 1))
		[ "$(jq -r '.root.errors[0].message' "$T/burst$j")" = \
			"overloaded: the request queue is full; retry later" ] || odd=$((odd + 1))
	elif [ "$c" != 200 ] || [ "$(jq '.root.fields.totalCount > 0' "$T/burst$j")" != true ]; then
		odd=$((odd + 1))
	fi
	j=$((j + 1))
done
echo "burst of 40 searches: $n503 answered 503"
check "burst answers" "$odd" "0"
req "metrics after burst" 200 "$B/metrics/v2/values"
check "rejections counted" "$(jout "$m.\"requests.rejected\"")" "$n503"
# The same burst as 40 streams on one HTTP/2 connection (h2load, from
# nghttp2-client): each a result or a 503, every 503 counted.
if command -v h2load >/dev/null 2>&1; then
	h2load -n 40 -c 1 -m 40 "$B/search/?yql=$yql&ranking.profile=cheap" >"$OUT" 2>&1
	codes=$(sed -n 's/^status codes: \([0-9]*\) 2xx, \([0-9]*\) 3xx, \([0-9]*\) 4xx, \([0-9]*\) 5xx.*/\1 \2 \3 \4/p' "$OUT")
	echo "burst of 40 HTTP/2 streams: $(echo "$codes" | cut -d' ' -f4) answered 5xx"
	check "h2 burst answers" "$(echo "$codes" | awk '{ print $1 + $4, $2 + $3 }')" "40 0"
	n5=$(echo "$codes" | cut -d' ' -f4)
	req "metrics after the HTTP/2 burst" 200 "$B/metrics/v2/values"
	check "h2 rejections counted" "$(jout "$m.\"requests.rejected\"")" "$((n503 + ${n5:-0}))"
else
	bad "h2load is needed for a burst of HTTP/2 streams (make deps-test installs nghttp2-client)"
fi
stop
check "restarted server stops cleanly" "$rc" "0"

# ---- /document/v1 over content clusters: visiting and removing by selection ----
# Two document types in two clusters of services.xml: "all" holds both,
# "books" only book.  Documents not selected survive each removal; `strata
# check` finds the indexes in step with the documents afterwards.
TWO=$T/two
mkdir -p "$TWO/schemas"
cat >"$TWO/schemas/music.sd" <<'SD'
schema music {
    document music {
        field title type string {
            indexing: index | summary
        }
        field year type int {
            indexing: attribute | summary
            attribute: fast-search
        }
    }
}
SD
cat >"$TWO/schemas/book.sd" <<'SD'
schema book {
    document book {
        field title type string {
            indexing: index | summary
        }
        field pages type int {
            indexing: attribute | summary
        }
    }
}
SD
cat >"$TWO/services.xml" <<'XML'
<?xml version="1.0" encoding="utf-8" ?>
<services version="1.0">
  <container id="default" version="1.0">
    <document-api/>
    <search/>
  </container>
  <content id="all" version="1.0">
    <redundancy>1</redundancy>
    <documents>
      <document type="music" mode="index"/>
      <document type="book" mode="index"/>
    </documents>
  </content>
  <content id="books" version="1.0">
    <documents>
      <document type="book" mode="index"/>
    </documents>
  </content>
</services>
XML
{
	for i in 1 2 3 4 5 6; do
		echo "{\"put\": \"id:mus:music::$i\", \"fields\": {\"title\": \"song $i\", \"year\": $((1990 + i))}}"
	done
	echo '{"put": "id:mus:music:g=red:7", "fields": {"title": "red song", "year": 2000}}'
	echo '{"put": "id:mus:music:n=5:8", "fields": {"title": "five song", "year": 2001}}'
	for i in 1 2 3 4; do
		echo "{\"put\": \"id:lib:book::$i\", \"fields\": {\"title\": \"book $i\", \"pages\": $((100 * i))}}"
	done
} >"$T/two.jsonl"
run "$STRATA" deploy "$TWO"
check "two clusters: deploy ($(cat "$ERR"))" "$rc" "0"
run "$STRATA" feed "$TWO" "$T/two.jsonl"
check "two clusters: feed" "$rc" "0"
APP=$TWO
start --threads 2 || { echo "$passed passed, $failed failed"; exit 1; }
V=$B/document/v1

# visiting the whole of a cluster, page by page: each document once
cont=
: >"$T/visited"
pages=0
while :; do
	req "cluster visit page $pages" 200 "$V/?cluster=all&wantedDocumentCount=5${cont:+&continuation=$cont}"
	jout -r '.documents[].id' >>"$T/visited"
	cont=$(jout -r '.continuation // empty')
	pages=$((pages + 1))
	[ -n "$cont" ] && [ $pages -lt 10 ] || break
done
check "cluster visit pages" "$pages" "3"
check "cluster visit: every document of both types once" "$(LC_ALL=C sort "$T/visited" | tr '\n' ' ')" \
	"id:lib:book::1 id:lib:book::2 id:lib:book::3 id:lib:book::4 id:mus:music::1 id:mus:music::2 id:mus:music::3 id:mus:music::4 id:mus:music::5 id:mus:music::6 id:mus:music:g=red:7 id:mus:music:n=5:8 "
check "cluster visit pathId" "$(jout '.pathId')" "/document/v1/"
req "cluster of one type" 200 "$V/?cluster=books"
check "cluster books holds books only" "$(jout -c '[.documents[].id] | sort')" \
	'["id:lib:book::1","id:lib:book::2","id:lib:book::3","id:lib:book::4"]'
req "cluster visit with selection" 200 "$V/?cluster=all&selection=music.year%3E1994"
check "cluster selection" "$(jout -c '[.documents[].id] | sort')" \
	'["id:mus:music::5","id:mus:music::6","id:mus:music:g=red:7","id:mus:music:n=5:8"]'
req "unknown cluster" 400 "$V/?cluster=nope"
check "unknown cluster message" "$(jout '.message')" "no content cluster 'nope', only 'all', 'books'"
req "root visit without a cluster" 400 "$V/"
req "type not in the cluster" 400 "$V/mus/music/docid?cluster=books"
check "type not in the cluster message" "$(jout '.message')" \
	"no document type 'music' in content cluster 'books', only 'book'"
req "typed visit in its cluster" 200 "$V/mus/music/docid?cluster=all"
check "typed visit in its cluster count" "$(jout '.documentCount')" "8"
req "typed continuation to a cluster visit" 400 "$V/?cluster=all&continuation=v1.2"
req "group visit" 200 "$V/mus/music/group/red"
check "group visit ids" "$(jout -c '[.documents[].id]')" '["id:mus:music:g=red:7"]'
req "number visit" 200 "$V/mus/music/number/5/"
check "number visit ids" "$(jout -c '[.documents[].id]')" '["id:mus:music:n=5:8"]'
req "visit slices" 400 "$V/?cluster=all&slices=2&sliceId=0"
check "visit slices message" "$(jout '.message')" \
	"visiting does not take the request parameter 'slices'; it takes cluster, selection, continuation, wantedDocumentCount, concurrency, timeout, fieldSet, bucketSpace"
req "visit global bucket space" 400 "$V/?cluster=all&bucketSpace=global"

# removing by selection
req "remove where" 200 -X DELETE "$V/?cluster=all&selection=music.year%3C1993"
check "remove where answer" "$(jout -c '.')" '{"pathId":"/document/v1/","documentCount":2}'
req "removed by selection" 404 "$V/mus/music/docid/1"
req "removed by selection 2" 404 "$V/mus/music/docid/2"
req "not selected: kept" 200 "$V/mus/music/docid/3"
req "books not selected: kept" 200 "$V/?cluster=books"
check "books all kept" "$(jout '.documentCount')" "4"
req "remove where needs a cluster" 400 -X DELETE "$V/?selection=true"
check "remove where cluster message" "$(jout '.message')" "removing by selection needs ?cluster= at '/document/v1/'"
req "remove where needs a selection" 400 -X DELETE "$V/?cluster=all"
req "remove where bad selection" 400 -X DELETE "$V/?cluster=all&selection=music.year%3C%3C2"
check "remove where bad selection message" "$(jout '.message' | grep -c '^selection:1:')" "1"
req "remove where unknown cluster" 400 -X DELETE "$V/?cluster=nope&selection=true"
req "remove where wantedDocumentCount" 400 -X DELETE "$V/?cluster=all&selection=true&wantedDocumentCount=3"
req "nothing removed by the refusals" 200 "$V/?cluster=all&wantedDocumentCount=100"
check "ten left" "$(jout '.documentCount')" "10"
req "typed remove where" 200 -X DELETE "$V/lib/book/docid/?cluster=books&selection=book.pages%3E250"
check "typed remove where count" "$(jout '.documentCount')" "2"
req "typed remove where: rest kept" 200 "$V/lib/book/docid"
check "books left" "$(jout -c '[.documents[].id] | sort')" '["id:lib:book::1","id:lib:book::2"]'
req "group remove where" 200 -X DELETE "$V/mus/music/group/red?cluster=all&selection=true"
check "group remove where count" "$(jout '.documentCount')" "1"
req "group removed" 404 "$V/mus/music/group/red/7"
req "other group kept" 200 "$V/mus/music/number/5/8"
req "remove where other namespace" 200 -X DELETE "$V/nope/music/docid?cluster=all&selection=true"
check "other namespace: none removed" "$(jout '.documentCount')" "0"

# dryRun: checked, answered as a write, nothing written
req "dry put" 200 -X POST -d '{"fields": {"title": "dry", "year": 1}}' "$V/mus/music/docid/50?dryRun=true"
check "dry put answer" "$(jout -c '.')" '{"pathId":"/document/v1/mus/music/docid/50","id":"id:mus:music::50"}'
req "dry put wrote nothing" 404 "$V/mus/music/docid/50"
req "dry update" 200 -X PUT -d '{"fields": {"year": {"assign": 1}}}' "$V/mus/music/docid/3?dryRun=true"
req "dry remove" 200 -X DELETE "$V/mus/music/docid/3?dryRun=true"
req "dry writes: document unchanged" 200 "$V/mus/music/docid/3"
check "dry writes: year kept" "$(jout '.fields.year')" "1993"
req "dry put of an unknown type" 400 -X POST -d '{"fields": {}}' "$V/mus/nope/docid/1?dryRun=true"
req "dry put with a bad condition" 400 -X POST -d '{"fields": {}}' \
	"$V/mus/music/docid/3?dryRun=true&condition=music.year%3E"
check "dry bad condition message" "$(jout '.message' | grep -c '^condition:1:')" "1"
req "dry put with a bad body" 400 -X POST -d '{"fields": ' "$V/mus/music/docid/3?dryRun=true"
req "dryRun not a boolean" 400 -X POST -d '{"fields": {}}' "$V/mus/music/docid/3?dryRun=maybe"
req "dryRun false writes" 200 -X POST -d '{"fields": {"title": "wet", "year": 2}}' "$V/mus/music/docid/50?dryRun=false"
req "dryRun false written" 200 "$V/mus/music/docid/50"

# the id in a body: the path's is accepted, another refused
req "body put key, same id" 200 -X POST -d '{"put": "id:mus:music::51", "fields": {"title": "t", "year": 3}}' \
	"$V/mus/music/docid/51"
req "body put key: written" 200 "$V/mus/music/docid/51"
check "body put key: fields" "$(jout '.fields.year')" "3"
req "body put key, another id" 400 -X POST -d '{"put": "id:mus:music::52", "fields": {"title": "x", "year": 9}}' \
	"$V/mus/music/docid/51"
check "body put key, another id message" "$(jout '.message')" \
	"the body's \"put\" names another document than the path: 'id:mus:music::52', not 'id:mus:music::51'"
req "body update key" 200 -X PUT -d '{"update": "id:mus:music::51", "fields": {"year": {"assign": 4}}}' \
	"$V/mus/music/docid/51"
req "body put key in an update" 400 -X PUT -d '{"put": "id:mus:music::51", "fields": {"year": {"assign": 5}}}' \
	"$V/mus/music/docid/51"
req "body remove key, another id" 400 -X DELETE -d '{"remove": "id:mus:music::99"}' "$V/mus/music/docid/51"
req "body keys refused: nothing written" 200 "$V/mus/music/docid/51"
check "body keys refused: year 4" "$(jout '.fields.year')" "4"
req "another id never written" 404 "$V/mus/music/docid/52"
req "body remove key, same id" 200 -X DELETE -d '{"remove": "id:mus:music::51"}' "$V/mus/music/docid/51"
req "body remove key: removed" 404 "$V/mus/music/docid/51"

# parameters Strata does not honour are refused, named
req "get tracelevel" 400 "$V/mus/music/docid/3?tracelevel=3"
check "get tracelevel message" "$(jout '.message')" \
	"a get does not take the request parameter 'tracelevel'; it takes cluster, timeout, fieldSet"
req "put route" 400 -X POST -d '{"fields": {}}' "$V/mus/music/docid/3?route=default"
req "remove create" 400 -X DELETE "$V/mus/music/docid/3?create=true"
req "get in a cluster without its type" 400 "$V/mus/music/docid/3?cluster=books"
req "get in its cluster" 200 "$V/mus/music/docid/3?cluster=all"
req "get fieldSet [all]" 200 "$V/mus/music/docid/3?fieldSet=%5Ball%5D"
req "update by selection" 405 -X PUT -d '{"fields": {}}' "$V/mus/music/docid?cluster=all&selection=true"
req "after all that" 200 "$V/?cluster=all&wantedDocumentCount=100"
check "documents left" "$(jout -c '[.documents[].id] | sort')" \
	'["id:lib:book::1","id:lib:book::2","id:mus:music::3","id:mus:music::4","id:mus:music::5","id:mus:music::50","id:mus:music::6","id:mus:music:n=5:8"]'
stop
check "two clusters: server stops cleanly" "$rc" "0"
run "$STRATA" check "$TWO"
check "two clusters: indexes agree with the documents ($(cat "$ERR"))" "$rc" "0"
check "two clusters: documents in the store" "$(jq -c '[.doctypes[] | [.name, .documents]]' "$OUT")" \
	'[["book",2],["music",6]]'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
