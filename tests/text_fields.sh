#!/bin/sh
# text_fields.sh: end-to-end tests of text indexes on arrays and weighted
# sets of strings through the strata CLI: 'contains' on any element, checked
# against a scan of the fed documents; phrases that never span two elements;
# bm25 and fieldLength over all elements, computed here, with and without
# bm25's rank properties; updates that add, remove and assign elements, and
# removes, keeping the index exact; match: gram on Chinese, Japanese and
# Latin text; a feed killed with SIGKILL after which documents and index
# agree.
#
#   sh tests/text_fields.sh [STRATA]
#
# The last line is "N passed, M failed"; the exit status is 1 when any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=text_fields
. "$here/clitest.sh"
APP=$T/docs

mkdir -p "$APP/schemas"
cat >"$APP/schemas/doc.sd" <<'EOS'
schema doc {
    document doc {
        field tags type array<string> {
            indexing: summary | index
            index: enable-bm25
        }
        field kw type weightedset<string> {
            indexing: summary | index
            match: word
        }
        field n type int { indexing: summary | attribute }
    }
    fieldset default { fields: tags }
    rank-profile default { first-phase { expression: attribute(n) } }
    rank-profile bm25 {
        first-phase { expression: bm25(tags) }
        match-features: bm25(tags) fieldLength(tags) fieldLength(kw) matches(kw)
    }
    rank-profile tuned inherits bm25 {
        rank-properties {
            bm25(tags).k1: 0.9
            bm25(tags).b: 0.4
        }
    }
    rank-profile avg inherits tuned {
        rank-properties { bm25(tags).averageFieldLength: 10 }
    }
    rank-profile ew {
        first-phase { expression: sum(elementwise(bm25(tags), e, float)) }
        match-features: elementwise(bm25(tags),e,float) elementwise(bm25(tags),x)
    }
    rank-profile ewtuned inherits ew {
        rank-properties { bm25(tags).k1: 0.9 }
    }
    rank-profile prox {
        first-phase { expression: nativeProximity(tags) }
    }
    rank-profile gap0 inherits prox { rank tags { element-gap: 0 } }
    rank-profile gap3 inherits gap0 {
        rank tags {
            element-gap: 3
        }
    }
    rank-profile gapinf inherits gap3 { rank tags { element-gap: infinity } }
}
EOS
cat >"$APP/feed.jsonl" <<'EOS'
{"put": "id:doc:doc::1", "fields": {"tags": ["New York", "big apple"], "kw": {"Red Car": 3, "blue": 5}, "n": 1}}
{"put": "id:doc:doc::2", "fields": {"tags": ["new", "york city \"quoted\" \u00e9t\u00e9"], "kw": {"red car": 1}, "n": 2}}
{"put": "id:doc:doc::3", "fields": {"tags": ["apple pie", "apples", "running shoes"], "n": 3}}
{"put": "id:doc:doc::4", "fields": {"tags": [], "kw": {}, "n": 4}}
EOS
expect_ok "deploy" "$STRATA" deploy "$APP"
expect_ok "feed" "$STRATA" feed "$APP" "$APP/feed.jsonl"

# The documents (in rank order: n descending) whose elements hold all the
# words, by a scan of the feed with jq: the same words lowercased, accents
# and quotes gone; an independent check of 'contains' on the index.
scan() {
	jq -rs --arg w "$1" '[.[] | select(.put) |
	  select([.fields.tags[]? | ascii_downcase | gsub("\u00e9"; "e") | gsub("[^a-z0-9]+"; " ") |
	          split(" ")[]] as $t | ($w | split(" ")) | all(. as $x | $t | index([$x]) != null)) |
	  .fields.n] | sort | reverse | map(tostring) | join(",")' "$APP/feed.jsonl"
}
for w in york apple new big pie ete quoted city running nothing; do
	check "contains '$w' = scan" "$(ids "tags contains \"$w\"")" "$(scan "$w")"
done
check "stemmed like a string field" "$(ids 'tags contains "apple"')" "3,1"
check "phrase in one element" "$(ids 'tags contains phrase("new", "york")')" "1"
check "phrase never spans two elements" "$(ids 'tags contains phrase("york", "big")')" ""
check "phrase, second element" "$(ids 'tags contains "york city"')" "2"
check "a phrase over the end of one element" "$(ids 'tags contains phrase("new", "york", "city")')" ""
check "fieldset" "$(ids 'default contains "pie"')" "3"
# sameElement: all the strings in one element, against a scan with jq
scan_same() {
	jq -rs --arg w "$1" '[.[] | select(.put) | select(any(.fields.tags[]?;
	  (ascii_downcase | gsub("[^a-z0-9]+"; " ") | split(" ")) as $t |
	  ($w | split(" ")) | all(. as $x | $t | index([$x]) != null))) |
	  .fields.n] | sort | reverse | map(tostring) | join(",")' "$APP/feed.jsonl"
}
for w in "new york" "york city" "big" "running shoes" "new quoted" "pie running"; do
	q=$(echo "$w" | sed 's/\([^ ]*\)/"\1"/g; s/ /, /g')
	check "sameElement($q) = scan" "$(ids "tags contains sameElement($q)")" "$(scan_same "$w")"
done
check "sameElement: stems" "$(ids 'tags contains sameElement("apples", "pie")')" "3"
check "sameElement: a phrase in one" "$(ids 'tags contains sameElement("big apple")')" "1"
check "sameElement: a phrase out of order" "$(ids 'tags contains sameElement("apple big")')" ""
expect_fail "sameElement without a text index" "yql:1:31: sameElement needs a field with a text index" \
	"$STRATA" query "$APP" --yql 'select * from sources * where n contains sameElement("a")'
expect_fail "sameElement over struct fields" "yql:1:57: sameElement over the fields of structs or maps is not supported" \
	"$STRATA" query "$APP" --yql 'select * from sources * where tags contains sameElement(a contains "b")'
check "userQuery" "$(req '{"yql": "select * from sources * where userQuery()", "query": "apple -pie"}')" "1"
check "weighted set key, word match" "$(ids 'kw contains "RED CAR"')" "2,1"
check "weighted set key, not part of one" "$(ids 'kw contains "red"')" ""
check "weighted set, other key" "$(ids 'kw contains "blue"')" "1"

# bm25 over all elements: field length the sum of the elements' (doc 1: 4,
# doc 2: 5, doc 3: 5, doc 4: 0), average over the 4 documents with a value
bm25() { # TF DL DF [TERMS [K1 B AVGDL]]: TERMS terms alike
	awk -v tf="$1" -v dl="$2" -v df="$3" -v k="${4:-1}" -v k1="${5:-1.2}" -v b="${6:-0.75}" \
		-v avg="${7:-3.5}" 'BEGIN { idf = log(1 + (4 - df + 0.5) / (df + 0.5))
		printf "%d", k * 1e9 * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avg)) + 0.5 }'
}
if expect_ok "bm25" "$STRATA" query "$APP" --profile bm25 \
	--yql 'select * from sources * where tags contains "york" or tags contains "apple"'; then
	check "bm25 values" "$(jout '[.root.children[] | [(.id | sub("id:doc:doc::"; "")),
		(.relevance * 1e9 | round | tostring)] | join(":")] | join(",")')" \
		"1:$(bm25 1 4 2 2),3:$(bm25 2 5 2),2:$(bm25 1 5 2)"
	for p in tuned avg; do
		expect_ok "bm25, $p" "$STRATA" query "$APP" --profile $p \
			--yql 'select * from sources * where tags contains "york" or tags contains "apple"'
		a=3.5
		[ $p = avg ] && a=10
		check "bm25 with rank-properties, $p" "$(jout '[.root.children[] |
			[(.id | sub("id:doc:doc::"; "")), (.relevance * 1e9 | round | tostring)] |
			join(":")] | sort | join(",")')" \
			"1:$(bm25 1 4 2 2 0.9 0.4 $a),2:$(bm25 1 5 2 1 0.9 0.4 $a),3:$(bm25 2 5 2 1 0.9 0.4 $a)"
	done
	expect_ok "bm25, again" "$STRATA" query "$APP" --profile bm25 \
		--yql 'select * from sources * where tags contains "york" or tags contains "apple"'
	check "field lengths" "$(jout '[.root.children[].fields.matchfeatures |
		"\(."fieldLength(tags)")/\(."fieldLength(kw)")"] | join(",")')" "4/2,5/0,5/1"
fi

# elementwise(bm25(tags)): bm25 of each element alone, its length over the
# average element length (14 tokens in 7 elements: 2), labelled by element
elem() { # TF LEN DF [K1 [AVGEL [N]]]: one element's bm25, as %.6f
	awk -v tf="$1" -v len="$2" -v df="$3" -v k1="${4:-1.2}" -v avg="${5:-2}" -v n="${6:-4}" \
		'BEGIN { idf = log(1 + (n - df + 0.5) / (df + 0.5))
		printf "%.6f", idf * tf * (k1 + 1) / (tf + k1 * (0.25 + 0.75 * len / avg)) }'
}
ewcells='[.root.children[] | (.id | sub("id:doc:doc::"; "")) + "=" + ([.fields.matchfeatures[$f].cells |
	to_entries[] | "\(.key):\(.value * 1e6 | round / 1e6)"] | join(";"))] | join(",")'
# "apple" and "apples" stem alike: doc 3 has it in elements 0 (2 tokens) and
# 1 (1 token), doc 1 in element 1 (2 tokens)
if expect_ok "elementwise bm25" "$STRATA" query "$APP" --profile ew \
	--yql 'select * from sources * where tags contains "apple"'; then
	r=$(jout --arg f 'elementwise(bm25(tags),x)' "$ewcells")
	check "elementwise bm25 cells" "$r" \
		"3=0:$(elem 1 2 2);1:$(elem 1 1 2),1=1:$(elem 1 2 2)"
	check "elementwise bm25, float cells" "$(jout --arg f 'elementwise(bm25(tags),e,float)' "$ewcells")" "$r"
	check "elementwise bm25, type" "$(jout -r '.root.children[0].fields.matchfeatures."elementwise(bm25(tags),e,float)".type')" "tensor(e{})"
fi
expect_ok "elementwise bm25, k1" "$STRATA" query "$APP" --profile ewtuned \
	--yql 'select * from sources * where tags contains "apple"' &&
	check "elementwise bm25 follows bm25(f).k1" "$(jout --arg f 'elementwise(bm25(tags),x)' "$ewcells")" \
		"3=0:$(elem 1 2 2 0.9);1:$(elem 1 1 2 0.9),1=1:$(elem 1 2 2 0.9)"
# two terms in one element add up; a document without a match has no cells
expect_ok "elementwise bm25, two terms" "$STRATA" query "$APP" --profile ew \
	--yql 'select * from sources * where tags contains "york" or tags contains "city"' &&
	check "elementwise bm25, two terms" "$(jout --arg f 'elementwise(bm25(tags),x)' "$ewcells")" \
		"2=1:$(awk -v a="$(elem 1 4 2)" -v b="$(elem 1 4 1)" 'BEGIN { printf "%.6f", a + b }'),1=0:$(elem 1 2 2)"
expect_ok "elementwise bm25, no text condition" "$STRATA" query "$APP" --profile ew \
	--yql 'select * from sources * where n = 1' &&
	check "elementwise bm25, no text condition" "$(jout --arg f 'elementwise(bm25(tags),x)' "$ewcells")" "1="
# nativeProximity across elements: doc 1 is ["New York", "big apple"]; york
# ends element 0 and big begins element 1.  By default (infinity) they never
# pair; element-gap 0: 1 apart (forward 500/2 of 450 from york to big, or
# reverse 400/2 of 450), gap 3: 4 apart
prox() { # PROFILE WHERE: doc 1's relevance
	"$STRATA" query "$APP" --profile "$1" --yql "select * from sources * where $2" 2>"$ERR" |
		jq -r '.root.children[] | select(.id == "id:doc:doc::1") | .relevance * 1e6 | round' 2>/dev/null
}
near() { awk -v s="$1" -v d="$2" 'BEGIN { printf "%d", 1e6 * 0.5 * s * exp(-(d - 1) / 3) / 450 + 0.5 }'; }
YB='tags contains "york" and tags contains "big"'
BY='tags contains "big" and tags contains "york"'
check "nativeProximity: elements apart by default" "$(prox prox "$YB")/$(prox prox "$BY")" "0/0"
check "nativeProximity: element-gap 0" "$(prox gap0 "$YB")/$(prox gap0 "$BY")" "$(near 500 1)/$(near 400 1)"
check "nativeProximity: element-gap 3, inherited and changed" "$(prox gap3 "$YB")/$(prox gap3 "$BY")" \
	"$(near 500 4)/$(near 400 4)"
check "nativeProximity: element-gap infinity" "$(prox gapinf "$YB")" "0"
check "nativeProximity: within an element" "$(prox prox 'tags contains "new" and tags contains "york"')" \
	"$(near 500 1)"
expect_ok "check after elementwise" "$STRATA" check "$APP"

# updates: elements added, removed and assigned; the index follows
cat >"$T/upd.jsonl" <<'EOS'
{"update": "id:doc:doc::1", "fields": {"tags": {"add": ["green fields"]}}}
{"update": "id:doc:doc::3", "fields": {"tags": {"remove": ["apples", "apple pie"]}}}
{"update": "id:doc:doc::2", "fields": {"kw": {"assign": {"green": 2}}}}
{"update": "id:doc:doc::1", "fields": {"kw": {"remove": {"blue": 0}}}}
{"remove": "id:doc:doc::4"}
EOS
expect_ok "updates" "$STRATA" feed "$APP" "$T/upd.jsonl"
check "added element found" "$(ids 'tags contains "green"')" "1"
check "old elements kept" "$(ids 'tags contains phrase("big", "apple")')" "1"
check "removed elements gone" "$(ids 'tags contains "apple"')" "1"
check "kept element" "$(ids 'tags contains "running"')" "3"
check "assigned weighted set" "$(ids 'kw contains "green"')" "2"
check "assigned away" "$(ids 'kw contains "red car"')" "1"
check "removed key" "$(ids 'kw contains "blue"')" ""
if expect_ok "lengths after updates" "$STRATA" query "$APP" --profile bm25 \
	--yql 'select * from sources * where true'; then
	check "lengths after updates" "$(jout '[.root.children[] | "\(.id | sub("id:doc:doc::"; "")):\(
		.fields.matchfeatures."fieldLength(tags)")/\(.fields.matchfeatures."fieldLength(kw)")"] |
		sort | join(",")')" "1:6/1,2:5/1,3:2/0"
fi
# the average element length follows: 13 tokens in 6 elements, 3 documents
expect_ok "elementwise bm25 after updates" "$STRATA" query "$APP" --profile ew \
	--yql 'select * from sources * where tags contains "green"' &&
	check "elementwise bm25 after updates" "$(jout --arg f 'elementwise(bm25(tags),x)' "$ewcells")" \
		"1=2:$(elem 1 2 1 1.2 "$(awk 'BEGIN { printf "%.17g", 13 / 6 }')" 3)"
expect_ok "check after updates" "$STRATA" check "$APP"

# match: gram: the text and the query's words split into grams alike, the
# query's grams a phrase
MAIN=$APP
APP=$T/grams
mkdir -p "$APP/schemas"
cat >"$APP/schemas/doc.sd" <<'EOS'
schema doc {
    document doc {
        field title type string {
            indexing: summary | index
            index: enable-bm25
            match {
                gram
                gram-size: 2
            }
        }
        field body type string {
            indexing: summary | index
            match {
                gram
                gram-size: 3
            }
        }
        field tags type array<string> {
            indexing: index
            match: gram
        }
        field n type int { indexing: summary | attribute }
    }
    rank-profile default {
        first-phase { expression: attribute(n) }
        match-features: fieldLength(title) fieldLength(body)
    }
}
EOS
cat >"$APP/feed.jsonl" <<'EOS'
{"put": "id:doc:doc::1", "fields": {"title": "東京都庁の展望台", "body": "Hello World", "tags": ["ab", "cd"], "n": 1}}
{"put": "id:doc:doc::2", "fields": {"title": "京都の寺", "body": "yellow Mellow", "tags": ["abcd"], "n": 2}}
{"put": "id:doc:doc::3", "fields": {"title": "Écoles", "body": "ab", "n": 3}}
EOS
expect_ok "gram: deploy" "$STRATA" deploy "$APP"
expect_ok "gram: feed" "$STRATA" feed "$APP" "$APP/feed.jsonl"
check "gram: a word inside a CJK run" "$(ids 'title contains "京都"')" "2,1"
check "gram: two grams in a row" "$(ids 'title contains "展望台"')" "1"
check "gram: not in a row" "$(ids 'title contains "東台"')" ""
check "gram: one character, shorter than a gram" "$(ids 'title contains "京"')" ""
check "gram: accents and case" "$(ids 'title contains "ECOLE"')" "3"
check "gram: inside a word" "$(ids 'body contains "ello"')" "2,1"
check "gram: across words, in a row" "$(ids 'body contains "llo wor"')" "1"
check "gram: across words, the next word's first gram" "$(ids 'body contains "low mel"')" "2"
check "gram: across words, not in a row" "$(ids 'body contains "llo mel"')" ""
check "gram: not there" "$(ids 'body contains "elm"')" ""
check "gram: a short word is one gram" "$(ids 'body contains "ab"')" "3"
check "gram: elements kept apart" "$(ids 'tags contains "abcd"')" "2"
check "gram: an element" "$(ids 'tags contains "cd"')" "2,1"
check "gram: not across elements" "$(ids 'tags contains "bc"')" "2"
if expect_ok "gram: lengths" "$STRATA" query "$APP" --yql 'select * from sources * where n = 1'; then
	check "gram: lengths are grams" "$(jout '.root.children[0].fields.matchfeatures |
		"\(."fieldLength(title)")/\(."fieldLength(body)")"')" "7/6"
fi

# dotProduct, wand and weightedSet, their rawScore and itemRawScore,
# against the same sums computed here with jq over the fed documents
APP=$T/wset
mkdir -p "$APP/schemas"
cat >"$APP/schemas/doc.sd" <<'EOS'
schema doc {
    document doc {
        field nb type weightedset<string> {
            indexing: summary | index
            match: word
        }
        field ids type weightedset<long> { indexing: summary | attribute }
        field tags type array<string> { indexing: summary | attribute }
        field cat type string { indexing: summary | attribute }
        field n type int { indexing: summary | attribute }
        field d type double { indexing: attribute }
    }
    rank-profile default {
        first-phase { expression: rawScore(nb) + rawScore(ids) + rawScore(tags) }
        match-features: rawScore(nb) rawScore(ids) rawScore(tags) rawScore(cat) rawScore(n) itemRawScore(l)
    }
}
EOS
awk 'BEGIN { srand(7); split("Red blue GREEN red Blue x y z", w, " ")
	for (i = 1; i <= 40; i++) {
		nb = ""; k = 0; split("", seen)
		for (j = 1; j <= 8; j++) if (rand() < 0.3 && !(tolower(w[j]) in seen)) {
			seen[tolower(w[j])] = 1
			nb = nb (k++ ? ", " : "") "\"" w[j] "\": " int(rand() * 21) - 10 }
		ids = ""; k = 0
		for (j = 1; j <= 5; j++) if (rand() < 0.4) ids = ids (k++ ? ", " : "") "\"" j * 10 "\": " int(rand() * 9) + 1
		tags = ""; k = 0
		for (j = 1; j <= 4; j++) if (rand() < 0.5) tags = tags (k++ ? ", " : "") "\"" w[int(rand() * 3) + 6] "\""
		printf "{\"put\": \"id:doc:doc::%d\", \"fields\": {\"nb\": {%s}, \"ids\": {%s}, \"tags\": [%s], \"cat\": \"%s\", \"n\": %d}}\n",
			i, nb, ids, tags, w[int(rand() * 8) + 1], i }
}' >"$APP/feed.jsonl"
expect_ok "wset: deploy" "$STRATA" deploy "$APP"
expect_ok "wset: feed" "$STRATA" feed "$APP" "$APP/feed.jsonl"
# want FIELD QUERY [THRESHOLD]: "id:score" of each document holding one of
# the tokens (and scoring above THRESHOLD), sorted by id
want() {
	jq -rs --arg f "$1" --argjson q "$2" --argjson t "${3:-null}" '[.[] | .put as $id |
	  .fields[$f] as $v | (if $f == "nb" then ($v | to_entries | map(.key |= ascii_downcase))
	    elif ($v | type) == "object" then ($v | to_entries)
	    elif ($v | type) == "array" then ($v | map({key: ., value: 1}))
	    else [{key: $v, value: 1}] end) |
	  map(select($q[.key] != null) | $q[.key] * .value) |
	  select(length > 0 and ($t == null or add > $t)) |
	  "\($id | sub("id:doc:doc::"; "")):\(add)"] | sort | join(",")' "$APP/feed.jsonl"
}
# got YQL FEATURE: the same from the query's hits
got() {
	if "$STRATA" query "$APP" --hits 100 --yql "select * from sources * where $1" >"$OUT" 2>"$ERR"; then
		jout --arg f "$2" '[.root.children[] | "\(.id | sub("id:doc:doc::"; "")):\(
			.fields.matchfeatures[$f])"] | sort | join(",")'
	else
		echo "error: $(head -c 300 "$ERR")"
	fi
}
Q='{"red": 2, "blue": -1, "x": 5}'
check "dotProduct on an indexed weighted set (word match)" \
	"$(got "dotProduct(nb, {\"RED\": 2, \"blue\": -1, \"x\": 5})" 'rawScore(nb)')" "$(want nb "$Q")"
check "dotProduct on a weighted set of longs" \
	"$(got 'dotProduct(ids, {10: 3, 30: 1, "50": 2})' 'rawScore(ids)')" "$(want ids '{"10": 3, "30": 1, "50": 2}')"
check "dotProduct on an array, repeats counted" \
	"$(got 'dotProduct(tags, {"x": 2, "z": 7})' 'rawScore(tags)')" "$(want tags '{"x": 2, "z": 7}')"
check "wand, no threshold: every match" \
	"$(got "{targetHits: 2}wand(nb, {\"red\": 2, \"blue\": -1, \"x\": 5})" 'rawScore(nb)')" "$(want nb "$Q")"
check "wand with scoreThreshold" \
	"$(got "{scoreThreshold: 10}wand(nb, {\"red\": 2, \"blue\": -1, \"x\": 5})" 'rawScore(nb)')" \
	"$(want nb "$Q" 10)"
check "itemRawScore of a label" \
	"$(got '{label: "l"}dotProduct(ids, {20: 2, 40: 5})' 'itemRawScore(l)')" "$(want ids '{"20": 2, "40": 5}')"
check "weightedSet: a filter without a score" \
	"$(got 'weightedSet(cat, {"x": 1, "Red": 2})' 'rawScore(cat)')" \
	"$(want cat '{"x": 1, "Red": 2}' | sed 's/:[0-9-]*/:0/g')"
check "two operators: rawScore per field" \
	"$(got 'dotProduct(ids, {10: 1}) and dotProduct(ids, {20: 1})' 'rawScore(ids)')" \
	"$(jq -rs '[.[] | select(.fields.ids["10"] and .fields.ids["20"]) |
	  "\(.put | sub("id:doc:doc::"; "")):\(.fields.ids["10"] + .fields.ids["20"])"] | sort | join(",")' "$APP/feed.jsonl")"
# the index answers on nb (match: word): the weights it keeps follow updates
cat >"$T/wupd.jsonl" <<'EOS'
{"update": "id:doc:doc::1", "fields": {"nb": {"assign": {"X": 4, "red": 1}}}}
{"update": "id:doc:doc::2", "fields": {"nb": {"add": {"Zed": 6}}}}
{"update": "id:doc:doc::2", "fields": {"nb": {"remove": {"red": 0, "Red": 0}}}}
EOS
expect_ok "wset: updates" "$STRATA" feed "$APP" "$T/wupd.jsonl"
check "dotProduct after assign" "$(got 'dotProduct(nb, {"x": 2, "RED": 3})' 'rawScore(nb)' |
	tr , '\n' | grep '^1:')" "1:11"
check "dotProduct after add and remove" "$(got 'dotProduct(nb, {"zed": 2, "red": 5})' 'rawScore(nb)' |
	tr , '\n' | grep '^2:')" "2:12"
check "dotProduct on an int" "$(got 'dotProduct(n, {7: 3, 9: 1})' 'rawScore(n)')" "7:3,9:1"
expect_fail "wset: a field of another type" "yql:1:31: dotProduct needs a weighted set, an array or a single value of strings or integers; 'd' is not one" \
	"$STRATA" query "$APP" --yql 'select * from sources * where dotProduct(d, {"a": 1})'
APP=$MAIN

# killed mid-feed: documents and index agree
N=20000
awk -v n=$N 'BEGIN { for (i = 1; i <= n; i++)
	printf "{\"put\": \"id:doc:doc::k%d\", \"fields\": {\"tags\": [\"common words\", \"number %d\"], \"n\": %d}}\n", i, i, i + 10 }' \
	>"$T/many.jsonl"
feed_killed "$APP" "$T/many.jsonl"
stored=$(total 'n > 10')
indexed=$(total 'tags contains "common words"')
check "killed feed: index agrees with the store" "$indexed" "$stored"
[ "$indexed" -ge "$w" ] 2>/dev/null && ok || bad "killed feed: $indexed found, $w reported written"
check "killed feed: no phrase across elements" "$(total 'tags contains phrase("words", "number")')" "0"
check "killed feed: last written found" "$(ids "tags contains \"number $w\"" | cut -d, -f1)" "k$w"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
