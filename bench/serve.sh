#!/bin/sh
# serve.sh: strata serve under load from wrk (make bench-serve, part of make bench).
#
#   sh bench/serve.sh STRATA MKSHOP DIR [SECONDS] [REPS]
#
# In DIR (made once, reused): the example shop with 10,000 products (mkshop's
# 40 under new ids) fed through the CLI.  The server runs on a free port;
# wrk drives each case for SECONDS (default 10) with 2 threads and 16
# connections.
#
# 1. With a thread per CPU:
#      search-get    GET /search/ where true, profile cheap (attribute order)
#      search-model  POST /search/ nearestNeighbor + the ONNX re-ranker (relevance)
#      doc-get       GET /document/v1/shop/product/docid/7
#    For each, wrk's requests/s and latency percentiles and the answers that
#    were not 2xx (overload 503s count there), then the server's own latency
#    figures from /metrics/v2/values.
# 2. Thread scaling: search-model against a server with --threads 1 and one
#    with --threads 2, REPS times each (default 3), alternating, each run
#    after a 2 s warm-up on a fresh server.  The medians of: queries/s,
#    wrk's p50 and p99, and queries per CPU second of the server process
#    (/proc/PID/stat; the steadier figure on a shared machine) and the cores
#    the server got (its CPU seconds per second); then the scaling
#    efficiency qps2 / (2 x qps1), by wall and by CPU time.
# 3. Feed over HTTP: wrk POSTs /document/v1 puts of distinct ids (a Lua
#    script, feed.lua) into a copy of the application, REPS times; the median
#    puts/s, and after each run a check that the documents stored (a search's
#    totalCount) are the puts the server acknowledged, and that wrk saw all
#    of those answered but at most one per connection (in flight when wrk
#    stopped).  A mismatch fails the bench.
# Every figure is printed with the load average of the machine at its end:
# the client shares the cores with the server, and the machine may be
# shared, so compare ratios of one run, not figures of two.  A measurement,
# not a test: besides the feed count nothing is asserted but that the
# server starts and answers.
set -u
STRATA=$1
MKSHOP=$2
DIR=$3
SECS=${4:-10}
REPS=${5:-3}
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
TICK=$(getconf CLK_TCK)
pid=
trap '[ -z "$pid" ] || kill -TERM $pid 2>/dev/null' EXIT

# start APP [serve options]: a server on a free port; sets pid and B.
start() {
	: >"$LOG" # emptied here, not only in the child: the last server's line must be gone
	"$STRATA" serve "$@" --port 0 2>>"$LOG" &
	pid=$!
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
	curl -sf -o /dev/null "$B/search/?yql=select%20*%20from%20product%20where%20true" ||
		{ echo "bench-serve: the server does not answer"; exit 1; }
}

stop() {
	kill -TERM $pid 2>/dev/null
	wait $pid 2>/dev/null
	pid=
}

# The server's CPU time so far, in clock ticks (user + system).
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$pid/stat"
}

# The server's metric $1 from /metrics/v2/values.
metric() {
	curl -s "$B/metrics/v2/values" | jq ".nodes[0].services[0].metrics[0].values.\"$1\""
}

load() {
	cut -d' ' -f1 /proc/loadavg
}

# The latency percentile $1 (50%, 99%) of wrk's output $out in ms; wrk
# prints 812.00us, 3.20ms or 1.05s.
ms() {
	printf '%s\n' "$out" | awk -v q="$1" '$1 == q {
		v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
		printf "%.2f", u == "us" ? v / 1000 : u == "s" ? v * 1000 : u == "m" ? v * 60000 : v }'
}

# wrk_run ARGS...: wrk for SECS with 2 threads and 16 connections; sets
# out (its output), rps, reqs, p50, p99 (ms), cpu (server CPU seconds).
wrk_run() {
	c0=$(cpu_ticks)
	out=$(wrk -t2 -c16 -d"${SECS}s" --latency "$@" 2>&1)
	c1=$(cpu_ticks)
	cpu=$(awk -v a="$c0" -v b="$c1" -v t="$TICK" 'BEGIN { printf "%.2f", (b - a) / t }')
	rps=$(printf '%s\n' "$out" | sed -n 's/^Requests\/sec: *//p')
	reqs=$(printf '%s\n' "$out" | sed -n 's/^ *\([0-9]*\) requests in .*/\1/p')
	p50=$(ms 50%)
	p99=$(ms 99%)
}

# The median of the numbers on standard input.
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# A wrk script that POSTs the shop's running-shoes request.
body=$(jq -c '.hits = 10' "$APP/queries/running-shoes.json" | sed 's/\\/\\\\/g; s/"/\\"/g')
cat >"$DIR/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = "$body"
LUA

# ---- 1. the cases on a thread per CPU ------------------------------------------------------
start "$APP"
echo "bench-serve: strata serve, $(nproc) threads, 10,000 products; wrk -t2 -c16 -d${SECS}s per case"
run() {
	name=$1
	shift
	wrk_run "$@"
	lat=$(printf '%s\n' "$out" | awk '/Latency Distribution/ { on = 1; next }
		on && /%/ { printf "p%s %s  ", substr($1, 1, length($1) - 1), $2 } /requests in/ { on = 0 }')
	non2xx=$(printf '%s\n' "$out" | sed -n 's/^ *Non-2xx or 3xx responses: *//p')
	printf '%-13s %10s req/s   %s non-2xx: %s  (load %s)\n' "$name" "$rps" "$lat" "${non2xx:-0}" \
		"$(load)"
}
run search-get "$B/search/?yql=select%20*%20from%20product%20where%20true&ranking.profile=cheap&hits=10"
run search-model -s "$DIR/post.lua" "$B/search/"
run doc-get "$B/document/v1/shop/product/docid/7"
curl -s "$B/metrics/v2/values" | jq -c '.nodes[0].services[0].metrics[0].values
	| {queries: ."queries.count", degraded: ."queries.degraded", rejected: ."requests.rejected",
	   p50_ms: ."query_latency.p50", p99_ms: ."query_latency.p99", pool_hits: ."pool.hits",
	   pool_misses: ."pool.misses"}'
stop

# ---- 2. thread scaling of the two-phase profile --------------------------------------------
echo "bench-serve: search-model (nearestNeighbor + ONNX second phase) at --threads 1 and 2," \
	"$REPS runs each, medians"
: >"$DIR/scale"
r=1
while [ $r -le "$REPS" ]; do
	for t in 1 2; do
		start "$APP" --threads $t
		wrk -t2 -c16 -d2s -s "$DIR/post.lua" "$B/search/" >/dev/null 2>&1 # warm-up
		wrk_run -s "$DIR/post.lua" "$B/search/"
		qcpu=$(awk -v n="$reqs" -v c="$cpu" 'BEGIN { printf "%.1f", (c > 0 ? n / c : 0) }')
		cores=$(awk -v c="$cpu" -v s="$SECS" 'BEGIN { printf "%.2f", c / s }')
		echo "$t $rps $p50 $p99 $qcpu $cores $(load)" >>"$DIR/scale"
		printf '  run %d  --threads %d  %8s q/s  p50 %7s ms  p99 %7s ms' "$r" "$t" "$rps" "$p50" "$p99"
		printf '  %7s q/cpu-s  %s cores  (load %s)\n' "$qcpu" "$cores" "$(load)"
		stop
	done
	r=$((r + 1))
done
col() { awk -v t="$1" -v c="$2" '$1 == t { print $c }' "$DIR/scale" | median; }
printf '%-10s %10s %10s %10s %10s %8s %8s\n' threads "q/s" "p50 ms" "p99 ms" "q/cpu-s" cores load
for t in 1 2; do
	printf '%-10s %10s %10s %10s %10s %8s %8s\n' "$t" "$(col $t 2)" "$(col $t 3)" "$(col $t 4)" \
		"$(col $t 5)" "$(col $t 6)" "$(col $t 7)"
done
awk -v q1="$(col 1 2)" -v q2="$(col 2 2)" -v c1="$(col 1 5)" -v c2="$(col 2 5)" 'BEGIN {
	printf "scaling efficiency qps2 / (2 x qps1): %.2f   per CPU second (c2 / c1): %.2f\n",
		(q1 > 0 ? q2 / (2 * q1) : 0), (c1 > 0 ? c2 / c1 : 0) }'

# ---- 3. feed over HTTP -------------------------------------------------------------------
doc=$(head -1 "$DIR/feed.jsonl" | jq -c '{fields: .fields}' | sed 's/\\/\\\\/g; s/"/\\"/g')
cat >"$DIR/feed.lua" <<LUA
-- Puts of distinct ids (feed-THREAD-N); counts the answers 200.
local threads = {}
function setup(thread)
	table.insert(threads, thread)
	thread:set("tid", #threads)
end
function init(args)
	n = 0
	acked = 0
	prefix = "/document/v1/shop/product/docid/feed-" .. tid .. "-"
end
function request()
	n = n + 1
	return wrk.format("POST", prefix .. n, { ["Content-Type"] = "application/json" }, "$doc")
end
function response(status, headers, body)
	if status == 200 then
		acked = acked + 1
	end
end
function done(summary, latency, requests)
	local total = 0
	for _, t in ipairs(threads) do
		total = total + t:get("acked")
	end
	io.write("acked " .. total .. "\n")
end
LUA
echo "bench-serve: feed over HTTP, POST /document/v1 puts of new ids into a copy of the" \
	"application, $(nproc) threads, $REPS runs"
: >"$DIR/feedrates"
status=0
r=1
while [ $r -le "$REPS" ]; do
	rm -rf "$DIR/feedapp"
	cp -R --sparse=always "$APP" "$DIR/feedapp" || exit 1
	start "$DIR/feedapp"
	wrk_run -s "$DIR/feed.lua" "$B/"
	acked=$(printf '%s\n' "$out" | sed -n 's/^acked //p')
	non2xx=$(printf '%s\n' "$out" | sed -n 's/^ *Non-2xx or 3xx responses: *//p')
	# the puts still running when wrk stopped end before the server's count is read
	i=0
	while [ "$(metric requests.open)" -gt 1 ] && [ $i -lt 500 ]; do
		i=$((i + 1))
		sleep 0.02
	done
	puts=$(metric feed.puts)
	total=$(curl -s "$B/search/?yql=select%20*%20from%20product%20where%20true&hits=0" |
		jq '.root.fields.totalCount')
	stored=$((total - 10000))
	verdict=ok
	if [ "$stored" -ne "$puts" ] || [ "$acked" -gt "$puts" ] || [ $((puts - acked)) -gt 16 ]; then
		verdict=MISMATCH
		status=1
	fi
	echo "$rps" >>"$DIR/feedrates"
	printf '  run %d  %10s puts/s  p50 %7s ms  p99 %7s ms  non-2xx %s  acknowledged %s (wrk %s)' \
		"$r" "$rps" "$p50" "$p99" "${non2xx:-0}" "$puts" "$acked"
	printf '  stored %s: %s  (load %s)\n' "$stored" "$verdict" "$(load)"
	stop
	r=$((r + 1))
done
rm -rf "$DIR/feedapp"
echo "feed over HTTP: median $(median <"$DIR/feedrates") puts/s (load $(load))"
exit $status
