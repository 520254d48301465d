#!/bin/sh
# vespa_readmes.sh: Vespa's sample applications followed as their READMEs and
# Vespa's tutorials tell a user to, with Strata in Vespa's place.
#
#   VESPA_APPS=../shared/vespa-apps sh tests/vespa_readmes.sh [STRATA]
#
# For each application: a copy deployed unchanged into a scratch data folder,
# fed with the files its README feeds (`vespa feed F` is `strata feed APP F`),
# served, and the README's requests (`vespa query`, `vespa document`,
# `vespa visit`, curl) run by `strata test --endpoint` from the test files
# in tests/readmes/NAME/, which hold what the README and Vespa's documents
# show or assert of the answers: the values of their result tables, the
# texts their own doc tests look for ("coverage": 100, a title, an id).
# What an application's README needs and this copy lacks (a dataset that is
# downloaded, a Java component, a model given by URL) is printed as a SKIP
# line with the reason, each checked to fail for exactly that reason where
# Strata can tell.  Without VESPA_APPS's folder everything is skipped.
# The last line is "N passed, M failed".
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=vespa_readmes
. "$here/clitest.sh"
root=${VESPA_APPS:-$top/../shared/vespa-apps}
if [ ! -d "$root" ]; then
	echo "vespa-readmes: $root not found, skipped"
	echo "0 passed, 0 failed"
	exit 0
fi
root=$(cd "$root" && pwd)
tests=$top/tests/readmes

skip() { echo "SKIP $*"; }

# follow NAME SRC [FEED...]: SRC (an application folder) copied, deployed,
# fed with each FEED, served; then every test of tests/readmes/NAME passes.
# (nm, not name: the checks of clitest.sh set name.)
follow() {
	nm=$1
	src=$2
	shift 2
	APP=$T/$nm
	rm -rf "$APP" "$T/$nm.data"
	cp -R "$src" "$APP"
	if ! expect_ok "$nm: deploy" "$STRATA" deploy "$APP" --data "$T/$nm.data"; then
		return 1
	fi
	for f in "$@"; do
		expect_ok "$nm: feed $(basename "$f")" "$STRATA" feed "$APP" "$f" --data "$T/$nm.data" ||
			return 1
		check "$nm: feed $(basename "$f"): none failed" "$(jout -c .failed)" "0"
	done
	start --data "$T/$nm.data" || return 1
	run "$STRATA" test "$tests/$nm" --endpoint "$B"
	if [ "$rc" -eq 0 ] && ! crashed; then
		ok
		echo "ok   $nm: $(jout -c '[.tests, .passed]' | tr -d '[]' | sed 's/,/ tests, passed: /')"
	else
		bad "$nm: $(grep -v '^  step .*: ok$' "$ERR" | head -c 1500)"
	fi
	stop
	check "$nm: the server exits 0" "$rc" "0"
}

# deploys NAME SRC [TEXT...]: SRC deploys unchanged, saying each TEXT (a
# notice of what it cannot run) on stderr.
deploys() {
	nm=$1
	src=$2
	shift 2
	rm -rf "$T/$nm" "$T/$nm.data"
	cp -R "$src" "$T/$nm"
	expect_ok "$nm: deploy" "$STRATA" deploy "$T/$nm" --data "$T/$nm.data" || return 1
	for text in "$@"; do
		grep -qF "$text" "$ERR" && ok || bad "$nm: deploy does not say '$text': $(head -c 600 "$ERR")"
	done
}

# album-recommendation: Vespa's getting-started guide (its README's link).
follow album-recommendation "$root/album-recommendation/app" \
	"$root/album-recommendation/dataset/documents.jsonl"

# part-purchases-demo: the grouping guide its README points to, over its feed.
follow part-purchases-demo "$root/examples/part-purchases-demo" \
	"$root/examples/part-purchases-demo/ext/feed.jsonl"

# news: the tutorial's part 1 runs on doc.json, as written.  Parts 2 and 3
# feed the MIND dataset, which their scripts download; their queries run
# here over doc.json with the checks their doc tests make of them.
follow news-1 "$root/news/app-1-getting-started" "$root/news/doc.json"
follow news-2 "$root/news/app-2-feed-and-query" "$root/news/doc.json"
follow news-3 "$root/news/app-3-searching" "$root/news/doc.json"
deploys news-5 "$root/news/app-5-recommendation"
deploys news-6 "$root/news/app-6-recommendation-with-searchers/src/main/application" \
	"searcher 'ai.vespa.example.UserProfileSearcher' (bundle 'news-recommendation-searcher', in chain 'user') is a Java component"
deploys news-7 "$root/news/app-7-parent-child/src/main/application" \
	"searchChain 'user' is a chain of Java components"
skip "news parts 2 to 7: the counts and ids they show (65238 news, 94057 users, N10864," \
	"U33527) are of the MIND dataset, which the tutorial downloads (mind/vespa.json)"
skip "news parts 6 and 7: searchChain=user is a Java searcher (UserProfileSearcher)"

# rag-blueprint: the embedder's model is a URL, which Strata never downloads.
APP=$T/rag-blueprint
cp -R "$root/rag-blueprint/app" "$APP"
if expect_ok "rag-blueprint: deploy" "$STRATA" deploy "$APP" --data "$T/rag.data"; then
	grep -q "embedder 'nomicmb' cannot run: its transformer-model is the URL" "$ERR" && ok ||
		bad "rag-blueprint: deploy does not name the embedder's URL: $(head -c 400 "$ERR")"
	head -n 1 "$root/rag-blueprint/dataset/docs.jsonl" >"$T/rag1.jsonl"
	run "$STRATA" feed "$APP" "$T/rag1.jsonl" --data "$T/rag.data"
	check "rag-blueprint: a document needing the embedder fails" "$(jout -c '[.written, .failed]')" "[0,1]"
	skip "rag-blueprint: its embedder nomicmb (services.xml) is given by URL" \
		"(data.vespa-cloud.com), and its RAG chain is a Java searcher calling OpenAI"
fi

# use-case-shopping: its data is downloaded and converted by Python scripts.
deploys use-case-shopping "$root/use-case-shopping/src/main/application" \
	"handler 'ai.vespa.example.shopping.site.SiteHandler' (bundle 'use-case-shopping') is a Java component" \
	"embedder 'encoder' cannot run: its transformer-model file 'model/e5-small-v2-int8.onnx' is not in the application"
skip "use-case-shopping: its feeds are made from downloads (meta_sports_20k_sample.json.zst," \
	"reviews), its system test (src/test/application) and its embedder's model are not in this" \
	"copy, and its site is a Java handler"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
