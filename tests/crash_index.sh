#!/bin/sh
# crash_index.sh: a feed killed with SIGKILL leaves the indexes agreeing
# with the documents: the text index (its posting blocks, their score
# bounds and field lengths, the term frequencies), the fast-search
# dictionaries and the nearest-neighbour graph.
#
#   sh tests/crash_index.sh [STRATA]
#
# An application with a text field, a fast-search int and string and an
# HNSW tensor field.  Its feed puts new documents, puts earlier ones again
# with other values and removes some, so that blocks are rewritten, cut and
# emptied and dictionary entries move.  The feed (batches of 400) is killed
# right after its n-th "written" line, for several n, each time in a fresh
# store: `strata check` then finds the indexes consistent, the fast-search
# matches equal those of testing every document, and after its puts again,
# so do they.  The last line is "N passed, M failed".
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=crash_index
. "$here/clitest.sh"
APP=$T/app
N=6000

mkdir -p "$APP/schemas"
cat >"$APP/schemas/doc.sd" <<'SD'
schema doc {
    document doc {
        field body type string {
            indexing: index | summary
            index: enable-bm25
        }
        field n type int {
            indexing: attribute | summary
            attribute: fast-search
        }
        field tag type string {
            indexing: attribute | summary
            attribute: fast-search
        }
        field m type int {
            indexing: attribute | summary
        }
        field e type tensor<float>(x[4]) {
            indexing: attribute | index
            attribute { distance-metric: euclidean }
            index { hnsw { max-links-per-node: 8 neighbors-to-explore-at-insert: 40 } }
        }
    }
    rank-profile bm { first-phase { expression: bm25(body) } }
}
SD
# Operation i: a put of document i, and now and then a put of an earlier
# one with new values or its removal.
awk -v n=$N 'BEGIN {
	split("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu", w, " ")
	s = 12345
	for (i = 1; i <= n; i++) {
		id = i
		if (i > 100 && i % 7 == 0) {
			s = (s * 1103515245 + 12345) % 2147483648
			id = s % (i - 1) + 1
			if (i % 3 == 0) { printf "{\"remove\": \"id:t:doc::%d\"}\n", id; continue }
		}
		s = (s * 1103515245 + 12345) % 2147483648
		len = 1 + s % 30
		b = ""
		for (k = 0; k < len; k++) {
			s = (s * 1103515245 + 12345) % 2147483648
			b = b (k ? " " : "") w[1 + int(s / 65536) % 12]
		}
		printf "{\"put\": \"id:t:doc::%d\", \"fields\": {\"body\": \"%s\", \"n\": %d, \"tag\": \"t%d\", \"m\": %d, \"e\": [%d, %d, %d, %d]}}\n",
			id, b, s % 50, s % 9, s % 50, s % 17, s % 13, s % 11, i % 5
	}
}' >"$T/all.jsonl"
if ! "$STRATA" deploy "$APP" --data "$T/deployed" >/dev/null 2>"$ERR"; then
	echo "crash_index: cannot deploy: $(cat "$ERR")"
	echo "0 passed, 1 failed"
	exit 1
fi

# total DATA WHERE: the number of matches of WHERE in the store in DATA.
total() {
	"$STRATA" query "$APP" --data "$1" --hits 0 --yql "select * from sources * where $2" \
		2>"$T/qerr" | jq -r '.root.fields.totalCount' 2>/dev/null || echo error
}

# consistent NAME DATA: strata check passes, and matches driven by the
# dictionaries and the text index are those of testing every document.
consistent() {
	run "$STRATA" check "$APP" --data "$2"
	if [ "$rc" = 0 ] && [ "$(jout '.doctypes[0].dictionaries')" = 2 ]; then
		ok
	else
		bad "$1: strata check: $(head -c 400 "$ERR")"
	fi
	for q in 'n = 7' 'tag contains "t3"' 'range(n, 10, 20)' 'body contains "gamma"' \
		'body contains "mu" or body contains "alpha"'; do
		a=$(total "$2" "$q")
		b=$(total "$2" "($q) or m < -1")
		[ "$a" = "$b" ] && [ "$a" != error ] && ok ||
			bad "$1: $q: $a matches, testing every document $b"
	done
}

for n in 1 3 8; do
	data=$T/kill-$n
	cp -R "$T/deployed" "$data"
	feed_killed "$APP" "$T/all.jsonl" $n 400 "$data"
	consistent "killed after commit $n" "$data"
	# the puts again (a removal of a document removed already would fail)
	if grep -v '"remove"' "$T/all.jsonl" | "$STRATA" feed "$APP" - --data "$data" >/dev/null 2>"$ERR"; then
		ok
	else
		bad "kill $n: the feed after the kill failed: $(head -c 400 "$ERR")"
	fi
	consistent "fed again after commit $n" "$data"
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
