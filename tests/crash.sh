#!/bin/sh
# crash.sh: a feed killed with SIGKILL keeps every document it reported as
# written, and leaves a store that takes the next feed.
#
#   sh tests/crash.sh [STRATA]    (or STRATA=build/strata MKSHOP=build/tests/mkshop sh tests/crash.sh)
#
# On the example shop, with a few thousand products made from mkshop's 40
# (the same documents under new ids, one put per line, ids in line order):
#
# 1. Standard input through a FIFO.  The feed commits what it has read
#    before it waits for more, and says so ("written N documents, ...").
#    Send it K lines, wait for "written K documents", kill -9 it while it
#    waits: the store holds exactly products 1..K.  Several K, some inside a
#    batch, some on a batch's end (batches of 1000: --batch).
# 2. A file.  Kill -9 the feed right after its n-th "written" line, wherever
#    it is by then (writing, committing, done): every product it reported is
#    there, and what is there is products 1..C with nothing half-written.
#
# After each kill the application is opened again: `strata get` and a
# query count what is there, then a feed of the rest and a query through
# the model profile must succeed.  Nothing here depends on timing: each
# step waits for what the feed says, and the checks hold wherever a kill
# lands.  The last line is "N passed, M failed"; the exit status is 1 when
# any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=crash
. "$here/clitest.sh"
APP=$T/shop
N=20000

mkdir -p "$APP"
cp -R "$top/schemas/shop/schemas" "$APP/"
# Every feed below goes into a data folder of its own, a copy of one that
# deploy made (a query or feed needs an application deployed).
if ! "$MKSHOP" "$APP" >/dev/null 2>"$T/err" || ! "$STRATA" deploy "$APP" 2>"$T/err" ||
	! "$STRATA" deploy "$APP" --data "$T/deployed" 2>"$T/err"; then
	echo "crash: cannot set up the shop: $(cat "$T/err")"
	echo "0 passed, 1 failed"
	exit 1
fi
# Product i (1..N) is line i: mkshop's products in turn, renumbered.
awk -v n=$N '{ p[NR] = $0 }
	END { for (i = 1; i <= n; i++) { l = p[(i - 1) % NR + 1]
		sub(/product::[0-9]+/, "product::" i, l); print l } }' "$APP/feed.jsonl" >"$T/all.jsonl"

# count DATA: how many products the store in DATA holds ("error" when the
# query fails).
count() {
	"$STRATA" query "$APP" --data "$1" --yql 'select * from sources * where true' --hits 0 \
		2>"$T/qerr" | jq -r '.root.fields.totalCount' 2>/dev/null || echo error
}

# has DATA K: product K is stored.
has() {
	"$STRATA" get "$APP" "id:shop:product::$2" --data "$1" >/dev/null 2>&1
}

# written FILE: the last count a feed reported as written in FILE, 0 before any.
written() {
	sed -n 's/^written \([0-9][0-9]*\) documents, .*/\1/p' "$1" | tail -n 1 | grep . || echo 0
}

# wait_for PID TEST: until `TEST` holds or PID has exited.  The bound
# only turns a feed that hangs into a failure; no check depends on it.
wait_for() {
	i=0
	while ! eval "$2"; do
		kill -0 "$1" 2>/dev/null || return 1
		i=$((i + 1))
		[ $i -lt 6000 ] || return 1
		sleep 0.02
	done
	return 0
}

# kill_feed: SIGKILL the feed and reap it; $how says whether the kill
# found it still at work.
kill_feed() {
	kill -9 "$feeder" 2>/dev/null
	wait "$feeder" 2>/dev/null
	case $? in
	137) how=killed ;;
	0) how="done before the kill" ;;
	*) how="exit $?" ;;
	esac
	feeder=
}

# after NAME DATA C: the store in DATA holds exactly products 1..C, then
# takes the rest of the feed and answers a query through the model.
after() {
	name=$1
	data=$2
	c=$3
	if [ "$c" -gt 0 ]; then
		has "$data" 1 && ok || bad "$name: product 1 is missing"
		has "$data" "$c" && ok || bad "$name: product $c is missing"
	fi
	if [ "$c" -lt $N ]; then
		has "$data" $((c + 1)) && bad "$name: product $((c + 1)) is there, beyond the $c counted" \
			|| ok
	fi
	tail -n +$((c + 1)) "$T/all.jsonl" >"$T/rest.jsonl"
	if "$STRATA" feed "$APP" "$T/rest.jsonl" --data "$data" >"$T/out" 2>"$T/err"; then
		ok
	else
		bad "$name: the feed after the kill failed: $(head -c 400 "$T/err")"
	fi
	got=$(count "$data")
	[ "$got" = $N ] && ok || bad "$name: $got products after feeding the rest, want $N"
	if "$STRATA" query "$APP" --data "$data" --profile relevance --hits 3 \
		--input "query(q_emb)=[$(seq -s, 16)]" --yql 'select * from sources * where price < 100' >"$T/out" 2>"$T/err" &&
		[ "$(jq -r '.root.children | length' "$T/out" 2>/dev/null)" = 3 ]; then
		ok
	else
		bad "$name: a query after the kill failed: $(head -c 400 "$T/err")"
	fi
}

# ---- 1. standard input, killed while it waits ------------------------------------
for k in 700 2000 3456; do
	data=$T/fifo-$k
	cp -R "$T/deployed" "$data"
	err=$data.err
	rm -f "$T/fifo"
	mkfifo "$T/fifo"
	: >"$err" # before the feed starts: no line of an earlier feed is read here
	"$STRATA" feed "$APP" - --batch 1000 --data "$data" <"$T/fifo" >"$T/out" 2>"$err" &
	feeder=$!
	exec 3>"$T/fifo"
	head -n $k "$T/all.jsonl" >&3
	if wait_for "$feeder" '[ "$(written "$err")" -ge $k ]'; then
		ok
	else
		bad "stdin $k: the feed never reported $k written: $(head -c 400 "$err")"
	fi
	kill_feed
	exec 3>&-
	[ "$how" = killed ] && ok || bad "stdin $k: the feed was not waiting for input ($how)"
	w=$(written "$err")
	[ "$w" = $k ] && ok || bad "stdin $k: reported $w written"
	c=$(count "$data")
	[ "$c" = $k ] && ok || bad "stdin $k: $c products stored after the kill, want $k"
	after "stdin $k" "$data" "$k"
done

# ---- 2. a file, killed after its n-th reported commit ----------------------------
for n in 2 7 13; do
	data=$T/file-$n
	cp -R "$T/deployed" "$data"
	err=$data.err
	: >"$err"
	"$STRATA" feed "$APP" "$T/all.jsonl" --batch 1000 --data "$data" >"$T/out" 2>"$err" &
	feeder=$!
	wait_for "$feeder" '[ "$(grep -c "^written " "$err")" -ge $n ]'
	kill_feed
	w=$(written "$err")
	[ "$w" -gt 0 ] && ok || bad "file $n: no commit reported: $(head -c 400 "$err")"
	c=$(count "$data")
	if [ "$c" = error ]; then
		bad "file $n: the store cannot be queried after the kill: $(cat "$T/qerr")"
		continue
	fi
	[ "$c" -ge "$w" ] && ok || bad "file $n: $c products stored, $w reported written"
	echo "file $n: $how after $w reported written; $c stored"
	after "file $n" "$data" "$c"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
