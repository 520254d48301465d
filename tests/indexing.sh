#!/bin/sh
# indexing.sh: end-to-end tests of indexing scripts through the strata CLI:
# fields outside the document computed from document fields (concatenation
# with ||, lowercase, chunkers, for_each and join, arithmetic, if/else,
# binarize | pack_bits), their values after a put and after updates of the
# fields they read, a document field whose value its own script rewrites,
# fields outside the document refused in a feed, a document whose embed
# fails (no embedder here) reported with its id while the others go in, and
# deploy errors with their positions.
#
#   sh tests/indexing.sh [STRATA]
#
# The last line is "N passed, M failed"; the exit status is 1 when any failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=indexing
. "$here/clitest.sh"
APP=$T/app

mkdir -p "$APP/schemas"
cat >"$APP/schemas/doc.sd" <<'EOS'
schema doc {
    document doc {
        field title type string { indexing: summary | index }
        field body type string { indexing: summary }
        field tags type array<string> { indexing: summary }
        field code type string { indexing: input code | trim | lowercase | summary | attribute }
        field emb type tensor<float>(x[16]) { indexing: attribute | summary }
        field n type int { indexing: summary | attribute }
        field tagcsv type string { indexing: summary }
    }
    field full type string {
        indexing: (input title || "") . " - " . (input body || "") | lowercase | summary | index
    }
    field chunks type array<string> {
        indexing: input body | chunk fixed-length 10 | summary
    }
    field sentences type array<string> {
        indexing: input body | chunk sentence | summary
    }
    field bits type tensor<int8>(x[2]) {
        indexing: input emb | binarize | pack_bits | attribute | summary
    }
    field tagline type string {
        indexing {
            input tags | for_each { "#" . _ } | join " " | summary;
            input tags | for_each { _ } | join "," | summary tagcsv
        }
    }
    field n2 type long { indexing: input n * 2 + 1 | summary | attribute }
    field size type string {
        indexing: if (input n > 10) { "big" | summary } else { "small" | summary }
    }
    rank-profile default { first-phase { expression: attribute(n2) } }
}
EOS
cat >"$APP/feed.jsonl" <<'EOF'
{"put": "id:d:doc::1", "fields": {"title": "Hello World", "body": "First sentence here. Second one! Third?", "tags": ["a", "b"], "code": "  AbC ", "emb": [1, -1, 0.5, 0, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, 2], "n": 5}}
{"put": "id:d:doc::2", "fields": {"body": "Only body", "n": 20}}
EOF

expect_ok "deploy" "$STRATA" deploy "$APP"
expect_ok "feed" "$STRATA" feed "$APP" "$APP/feed.jsonl"
fields() {
	"$STRATA" query "$APP" --yql "select * from sources * where n2 = $1" >"$OUT" 2>"$ERR"
	jq -c ".root.children[0].fields | [$2]" "$OUT" 2>/dev/null || echo error
}
check "concatenation, || and lowercase" "$(fields 11 .full)" '["hello world - first sentence here. second one! third?"]'
check "|| for a missing field" "$(fields 41 .full)" '[" - only body"]'
check "chunk fixed-length" "$(fields 11 .chunks)" '[["First sentence ","here. Second ","one! Third?"]]'
check "chunk sentence" "$(fields 11 .sentences)" '[["First sentence here."," Second one!"," Third?"]]'
# 1,-1,0.5,0,1,1,1,1 -> 10101111 = 175 = -81 as int8; seven negatives, then 2 -> 00000001
check "binarize | pack_bits" "$(fields 11 .bits.values)" '[[-81,1]]'
check "for_each and join; a sink naming another field" "$(fields 11 '.tagline, .tagcsv')" '["#a #b","a,b"]'
check "arithmetic and if" "$(fields 11 '.n2, .size')" '[11,"small"]'
check "if, else branch" "$(fields 41 .size)" '["big"]'
check "a document field's own script" "$(fields 11 .code)" '["abc"]'
check "an absent input gives no value" "$(fields 41 '.bits, .tagline')" '[null,null]'
expect_ok "text index of a computed field" "$STRATA" query "$APP" --yql 'select * from sources * where full contains "only"'
check "text index of a computed field" "$(jout '[.root.children[].id] | join(",")')" "id:d:doc::2"

# Updates recompute the fields that read what changed, from the stored rest.
echo '{"update": "id:d:doc::1", "fields": {"title": {"assign": "NEW"}, "n": {"assign": 50}}}' >"$T/u1.jsonl"
expect_ok "update" "$STRATA" feed "$APP" "$T/u1.jsonl"
check "update: recomputed" "$(fields 101 '.full, .size, .chunks[0]')" \
	'["new - first sentence here. second one! third?","big","First sentence "]'
expect_ok "update: text index" "$STRATA" query "$APP" --yql 'select * from sources * where full contains "new"'
check "update: text index" "$(jout '[.root.children[].id] | join(",")')" "id:d:doc::1"
expect_ok "update: old words gone" "$STRATA" query "$APP" --yql 'select * from sources * where full contains "hello"'
check "update: old words gone" "$(jout '.root.fields.totalCount')" "0"
echo '{"update": "id:d:doc::1", "fields": {"tags": {"add": ["c"]}}}' >"$T/u2.jsonl"
expect_ok "update: add" "$STRATA" feed "$APP" "$T/u2.jsonl"
check "update: add recomputed" "$(fields 101 '.tagline, .full')" '["#a #b #c","new - first sentence here. second one! third?"]'
echo '{"update": "id:d:doc::1", "fields": {"code": {"assign": " XY "}}}' >"$T/u3.jsonl"
expect_ok "update: a field's own script" "$STRATA" feed "$APP" "$T/u3.jsonl"
check "update: a field's own script" "$(fields 101 .code)" '["xy"]'
expect_ok "get" "$STRATA" get "$APP" id:d:doc::1
check "get: document fields only" "$(jout '.fields | keys | join(",")')" "body,code,emb,n,tagcsv,tags,title"

# A field outside the document is not fed.
echo '{"put": "id:d:doc::3", "fields": {"full": "x"}}' >"$T/bad.jsonl"
expect_fail "feed a computed field" "field 'full' is outside the document: its indexing computes it" \
	"$STRATA" feed "$APP" "$T/bad.jsonl"
echo '{"put": "id:d:doc::3", "fields": {"emb": [2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5]}}' >"$T/ok.jsonl"
expect_ok "feed" "$STRATA" feed "$APP" "$T/ok.jsonl"
"$STRATA" query "$APP" --yql 'select * from sources * where true' >"$OUT" 2>"$ERR"
check "pack_bits: first and last bit" \
	"$(jq -c '[.root.children[] | select(.id == "id:d:doc::3") | .fields.bits.values]' "$OUT")" '[[-128,1]]'

# embed: no embedder runs here; the document that needs one fails with its id
# and the embedder's message, the others are written.
EMB=$T/emb
mkdir -p "$EMB/schemas"
cat >"$EMB/schemas/p.sd" <<'EOS'
schema p {
    document p {
        field text type string { indexing: summary }
        field n type int { indexing: summary | attribute }
    }
    field e type tensor<float>(x[4]) { indexing: input text | embed e5 | attribute }
    field c type tensor<int8>(chunk{}, x[2]) {
        indexing: input text | chunk sentence | embed | pack_bits | attribute
    }
}
EOS
cat >"$EMB/feed.jsonl" <<'EOF'
{"put": "id:p:p::1", "fields": {"n": 1}}
{"put": "id:p:p::2", "fields": {"text": "needs an embedder", "n": 2}}
{"put": "id:p:p::3", "fields": {"n": 3}}
EOF
expect_ok "embed: deploy" "$STRATA" deploy "$EMB"
expect_fail "embed: failing document" "feed\.jsonl:2: document 'id:p:p::2': field 'e': .*embedder '?e5" \
	"$STRATA" feed "$EMB" "$EMB/feed.jsonl"
check "embed: the others written" "$(jq -c '[.written, .failed]' "$OUT")" '[2,1]'
expect_ok "embed: get" "$STRATA" get "$EMB" id:p:p::3
expect_fail "embed: not written" "not found" "$STRATA" get "$EMB" id:p:p::2

# Deploy errors name the position.
bad_schema() {
	mkdir -p "$T/bad$1/schemas"
	cat >"$T/bad$1/schemas/b.sd"
}
bad_schema 1 <<'EOS'
schema b {
    document b { field n type int { indexing: summary } }
    field s type string { indexing: input n . "x" | summary }
}
EOS
expect_fail "deploy: concatenating a number" "b\.sd:3:43: '\.' joins strings \(or arrays\), not an int" \
	"$STRATA" deploy "$T/bad1"
bad_schema 2 <<'EOS'
schema b {
    document b { field t type string { indexing: summary } }
    field s type string { indexing: input t | embed | attribute }
}
EOS
expect_fail "deploy: embed into a string" "b\.sd:3:47: embed into field 's', which is a string, not a tensor" \
	"$STRATA" deploy "$T/bad2"
bad_schema 3 <<'EOS'
schema b {
    document b { field t type string { indexing: summary } }
    field s type string { indexing: input t | generate g | summary }
}
EOS
expect_fail "deploy: generate" "b\.sd:3:47: 'generate' .* is not supported" "$STRATA" deploy "$T/bad3"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
