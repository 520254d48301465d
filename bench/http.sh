#!/bin/sh
# http.sh: libmicrohttpd against h2o on the same tiny service (make bench-http).
#
#   sh bench/http.sh HTTPBENCH STRATA DIR [SECONDS] [ROUNDS]
#
# HTTPBENCH (bench/httpbench.c) serves GET /fixed (a 24-byte JSON answer)
# and POST /echo (the body back) on libmicrohttpd or h2o, with 1 and 2
# server threads.  Each case runs SECONDS (default 5):
#   h1  wrk -t2 -c16 --latency: HTTP/1.1, 16 connections, keep-alive
#   h2  h2load -t2 -c4 -m4: HTTP/2 with prior knowledge, 4 connections of 4
#       streams each (16 requests in flight, as for h1); where the library
#       has it (h2o; libmicrohttpd has no HTTP/2)
# POST bodies are 1 KiB.  For comparison, strata serve itself (a one-field
# application, deployed in DIR once) on /state/v1/health, the same 24 bytes,
# answered on the I/O thread: over libmicrohttpd for h1 and over the
# libnghttp2 front door for h2, --threads and --io-threads set to the
# case's count.  The cases run ROUNDS times (default 3), the libraries in
# turn within a round; printed per case, each the median over the rounds:
# requests/s, the p99 latency (wrk's own; from h2load's per-request log for
# h2) and the server's CPU time (user + system, /proc) per request, the
# figure least moved by other work on a shared machine; with uptime's load
# average at the start and end.  A measurement, not a
# test: nothing is asserted.
set -u
HB=$1
STRATA=$2
DIR=$3
SECS=${4:-5}
ROUNDS=${5:-3}
for t in wrk h2load; do
	command -v $t >/dev/null 2>&1 || { echo "bench-http: $t not installed (make deps-bench)"; exit 1; }
done
APP=$DIR/app
if [ ! -d "$APP/.strata" ]; then
	rm -rf "$APP"
	mkdir -p "$APP/schemas"
	cat >"$APP/schemas/doc.sd" <<SD
schema doc {
    document doc {
        field title type string { indexing: summary }
    }
}
SD
	"$STRATA" deploy "$APP" >/dev/null || exit 1
fi
head -c 1024 /dev/zero | tr '\0' 'x' >"$DIR/body"
cat >"$DIR/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = "$(cat "$DIR/body")"
LUA
: >"$DIR/results"

# start NAME THREADS: the server NAME (mhd, h2o, strata) on THREADS
# threads; sets pid and the base URL U.
start() {
	: >"$DIR/log" # before the server starts: the last one's line must not be read
	if [ "$1" = strata ]; then
		"$STRATA" serve "$APP" --port 0 --threads "$2" --io-threads "$2" 2>"$DIR/log" &
	else
		"$HB" "$1" "$2" 2>"$DIR/log" &
	fi
	pid=$!
	i=0
	while ! grep -q 'listening on' "$DIR/log"; do
		i=$((i + 1))
		if ! kill -0 $pid 2>/dev/null || [ $i -ge 500 ]; then
			echo "bench-http: $1 did not start: $(cat "$DIR/log")"
			exit 1
		fi
		sleep 0.02
	done
	port=$(sed -n 's/.*listening on \(http:\/\/[^:]*:\)\{0,1\}\([0-9]*\).*/\2/p' "$DIR/log")
	U=http://127.0.0.1:$port
}

# result LIB THREADS PROTO CASE RPS P99MS CPU_US OUTPUT: one figure for
# the medians, or, when the tool gave none, its output's first lines.
result() {
	if [ -z "$5" ] || [ "$5" = 0 ]; then
		echo "bench-http: $1 $2 $3 $4: no result: $(head -n 3 "$8" | tr '\n' ' ')"
		return
	fi
	echo "$1 $2 $3 $4 $5 $6 $7" >>"$DIR/results"
}

# The server's CPU time so far (user + system), in clock ticks.
ticks() {
	awk '{ print $14 + $15 }' "/proc/$pid/stat"
}

# cpu_us TICKS0 REQUESTS: the server's CPU microseconds per request since
# TICKS0.
cpu_us() {
	awk -v t0="$1" -v t1="$(ticks)" -v hz="$(getconf CLK_TCK)" -v n="$2" \
		'BEGIN { printf "%.2f\n", (n > 0 ? (t1 - t0) * 1e6 / hz / n : 0) }'
}

# h1 LIB THREADS CASE URL [wrk args]: wrk's requests/s and p99 (ms).
h1() {
	lib=$1 th=$2 case=$3 url=$4
	shift 4
	t0=$(ticks)
	wrk -t2 -c16 -d"${SECS}s" --latency "$@" "$url" >"$DIR/wrk" 2>&1
	cpu=$(cpu_us "$t0" "$(awk '/ requests in / { print $1 }' "$DIR/wrk")")
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$DIR/wrk")
	p99=$(awk '$1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 }
		else if (v ~ /ms$/) sub(/ms$/, "", v); else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 }
		print v }' "$DIR/wrk")
	result "$lib" "$th" h1 "$case" "$rps" "$p99" "$cpu" "$DIR/wrk"
}

# h2 LIB THREADS CASE URL [h2load args]: h2load's requests/s and the p99
# of its per-request log (microseconds in the third column).
h2() {
	lib=$1 th=$2 case=$3 url=$4
	shift 4
	t0=$(ticks)
	h2load -t2 -c4 -m4 -D "$SECS" --log-file="$DIR/h2log" "$@" "$url" >"$DIR/h2out" 2>&1
	cpu=$(cpu_us "$t0" "$(sed -n 's/^requests: .* \([0-9]*\) done,.*/\1/p' "$DIR/h2out")")
	rps=$(sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' "$DIR/h2out")
	p99=$(cut -f3 "$DIR/h2log" | sort -n | awk '{ v[NR] = $1 } END { i = int(NR * 0.99);
		if (i < 1) i = 1; if (NR) printf "%.3f\n", v[i] / 1000 }')
	result "$lib" "$th" h2 "$case" "$rps" "$p99" "$cpu" "$DIR/h2out"
}

echo "bench-http: ${SECS}s per case, $ROUNDS rounds; load average at start:$(uptime | sed 's/.*average://')"
r=1
while [ "$r" -le "$ROUNDS" ]; do
	for th in 1 2; do
		for lib in mhd h2o strata; do
			start $lib $th
			if [ $lib = strata ]; then
				h1 $lib $th fixed "$U/state/v1/health"
				h2 $lib $th fixed "$U/state/v1/health"
			else
				h1 $lib $th fixed "$U/fixed"
				h1 $lib $th echo "$U/echo" -s "$DIR/post.lua"
				if [ $lib = h2o ]; then
					h2 $lib $th fixed "$U/fixed"
					h2 $lib $th echo "$U/echo" -d "$DIR/body"
				fi
			fi
			kill $pid
			wait $pid 2>/dev/null
		done
	done
	r=$((r + 1))
done
echo "bench-http: load average at end:$(uptime | sed 's/.*average://')"
printf '%-7s %-8s %-6s %-6s %10s %9s %13s\n' library threads proto case "req/s" "p99 ms" "server CPU us"
# medians over the rounds, per library, threads, protocol and case
sort -k1,1 -k2,2n -k3,3 -k4,4 "$DIR/results" | awk '
function med(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function flush() { if (n) printf "%-7s %-8s %-6s %-6s %10.0f %9.2f %13.2f\n", k1, k2, k3, k4, med(rps, n), med(p99, n), med(cpu, n) }
{ key = $1 " " $2 " " $3 " " $4
  if (key != last) { flush(); n = 0; last = key; k1 = $1; k2 = $2; k3 = $3; k4 = $4 }
  n++; rps[n] = $5 + 0; p99[n] = $6 + 0; cpu[n] = $7 + 0 }
END { flush() }'
