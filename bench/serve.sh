#!/bin/sh
# serve.sh: strata serve under load from wrk (make bench-serve, part of make bench).
#
#   sh bench/serve.sh STRATA MKSHOP DIR [SECONDS]
#
# In DIR (made once, reused): the example shop with 10,000 products (mkshop's
# 40 under new ids) fed through the CLI.  The server runs with a thread per
# CPU on a free port; wrk drives each case for SECONDS (default 10) with 2
# threads and 16 connections:
#   search-get    GET /search/ where true, profile cheap (attribute order)
#   search-model  POST /search/ nearestNeighbor + the ONNX re-ranker (relevance)
#   doc-get       GET /document/v1/shop/product/docid/7
# For each, wrk's requests/s and latency percentiles, the answers that were
# not 2xx (overload 503s count there), then the server's own latency figures
# from /metrics/v2/values.  A measurement, not a test: nothing is asserted
# but that the server starts and answers.
set -u
STRATA=$1
MKSHOP=$2
DIR=$3
SECS=${4:-10}
command -v wrk >/dev/null 2>&1 || { echo "bench-serve: wrk not installed (make deps-bench)"; exit 1; }
APP=$DIR/shop
if [ ! -d "$APP/.strata" ]; then
	rm -rf "$APP"
	mkdir -p "$APP"
	cp -R "$(dirname "$0")/../schemas/shop/schemas" "$APP/" || exit 1
	"$MKSHOP" "$APP" >/dev/null || exit 1
	"$STRATA" deploy "$APP" || exit 1
	awk -v n=10000 '{ p[NR] = $0 } END { for (i = 1; i <= n; i++) { l = p[(i - 1) % NR + 1]
		sub(/product::[0-9]+/, "product::" i, l); print l } }' "$APP/feed.jsonl" >"$DIR/feed.jsonl"
	"$STRATA" feed "$APP" "$DIR/feed.jsonl" >/dev/null 2>"$DIR/feed.log" || { cat "$DIR/feed.log"; exit 1; }
fi
LOG=$DIR/serve.log
"$STRATA" serve "$APP" --port 0 2>"$LOG" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' EXIT
i=0
while ! grep -q 'listening on' "$LOG"; do
	i=$((i + 1))
	if ! kill -0 $pid 2>/dev/null || [ $i -ge 3000 ]; then
		echo "bench-serve: the server did not start: $(cat "$LOG")"
		exit 1
	fi
	sleep 0.02
done
B=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$LOG")
# A wrk script that POSTs the body of a file.
body=$(jq -c '.hits = 10' "$APP/queries/running-shoes.json" | sed 's/\\/\\\\/g; s/"/\\"/g')
cat >"$DIR/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = "$body"
LUA
curl -sf -o /dev/null "$B/search/?yql=select%20*%20from%20product%20where%20true" ||
	{ echo "bench-serve: the server does not answer"; exit 1; }
echo "bench-serve: strata serve, $(nproc) threads, 10,000 products; wrk -t2 -c16 -d${SECS}s per case"
run() {
	name=$1
	shift
	out=$(wrk -t2 -c16 -d"${SECS}s" --latency "$@" 2>&1)
	rps=$(printf '%s\n' "$out" | sed -n 's/^Requests\/sec: *//p')
	lat=$(printf '%s\n' "$out" | awk '/Latency Distribution/ { on = 1; next }
		on && /%/ { printf "p%s %s  ", substr($1, 1, length($1) - 1), $2 } /requests in/ { on = 0 }')
	non2xx=$(printf '%s\n' "$out" | sed -n 's/^ *Non-2xx or 3xx responses: *//p')
	printf '%-13s %10s req/s   %s non-2xx: %s\n' "$name" "$rps" "$lat" "${non2xx:-0}"
}
run search-get "$B/search/?yql=select%20*%20from%20product%20where%20true&ranking.profile=cheap&hits=10"
run search-model -s "$DIR/post.lua" "$B/search/"
run doc-get "$B/document/v1/shop/product/docid/7"
curl -s "$B/metrics/v2/values" | jq -c '.nodes[0].services[0].metrics[0].values
	| {queries: ."queries.count", rejected: ."requests.rejected", p50_ms: ."query_latency.p50",
	   p99_ms: ."query_latency.p99", pool_hits: ."pool.hits", pool_misses: ."pool.misses"}'
