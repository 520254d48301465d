#!/bin/sh
# demo.sh: runs the example queries of the shop application and prints the
# ranked hits as a table.
#
#   sh tests/demo.sh STRATA APPDIR
#
# APPDIR is a deployed and fed copy of schemas/shop with the files that
# build/tests/mkshop writes (make demo prepares it).  Each APPDIR/queries/
# *.json is a Vespa search request; its yql, ranking.profile,
# input.query(q_emb) and hits become strata query options.  Needs jq.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: sh tests/demo.sh STRATA APPDIR" >&2
	exit 2
fi
STRATA=$1
APP=$2

for req in "$APP"/queries/*.json; do
	name=$(basename "$req" .json)
	yql=$(jq -r '.yql' "$req")
	profile=$(jq -r '."ranking.profile" // "default"' "$req")
	hits=$(jq -r '.hits // 10' "$req")
	qvec=$(jq -c '."input.query(q_emb)" // empty' "$req")

	echo
	echo "== $name (profile $profile)"
	echo "   $yql"
	if [ -n "$qvec" ]; then
		echo "   query(q_emb) = $qvec"
		result=$("$STRATA" query "$APP" --yql "$yql" --profile "$profile" --hits "$hits" \
			--input "query(q_emb)=$qvec")
	else
		result=$("$STRATA" query "$APP" --yql "$yql" --profile "$profile" --hits "$hits")
	fi

	printf '%s\n' "$result" | jq -r '"   \(.root.fields.totalCount) matches, top \(.root.children | length):"'
	# One line per hit: rank, relevance, title, brand, category, price,
	# rating, stock, and the model's score when the profile has one.
	printf '%s\n' "$result" | jq -r '
		def num: if type == "object" then ((.values // [.cells[]?.value]) | flatten | add)
		         elif type == "array" then (flatten | add) else . end;
		.root.children[]
		| [ .relevance, .fields.title, .fields.brand, .fields.category, .fields.price,
		    .fields.rating, (if .fields.in_stock then "in stock" else "sold out" end),
		    ((.fields.matchfeatures // {}) | to_entries
		     | map(select(.key | startswith("onnx"))) | (.[0].value | num) // "") ]
		| @tsv' |
		awk -F '\t' '{
			model = ($8 == "") ? "" : sprintf("  model %+.3f", $8)
			printf "   %2d. %9.4f  %-48s %-10s %-14s %8.2f  %.1f  %-8s%s\n",
			       NR, $1, $2, $3, $4, $5, $6, $7, model }'
done
