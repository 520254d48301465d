/*
 * test_embedder.c: embedders declared in services.xml.
 *
 * The application is made here: a tokenizer.json (and vocab.txt) with a
 * small WordPiece vocabulary, and tiny transformer-shaped models built with
 * modelbuild.c: the hidden state of token t is row ids[t] of an embedding
 * table plus row types[t] of a token-type table, times mask[t].  So every
 * expected value is computed here from the tables and token ids found by
 * hand: tokens of tricky strings, pooled and normalized vectors, packed
 * bits, ColBERT's per-token vectors, SPLADE's term weights, token ids.
 * Then the errors: an embedder whose model is a URL (open logs it once,
 * embedding says what to do), malformed services.xml with line:col, an
 * unknown embedder id, a destination type an embedder cannot make, and
 * allocation failures.  Then embed() as a query input, end to end, and an
 * array embedded under the dimension embed's argument names.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../engine/engine_int.h"
#include "apptest.h"
#include "modelbuild.h"

/* ---- the vocabulary ------------------------------------------------------------------ */

static const char *const vocab[] = {
	"[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", /* 0 */
	"world", "cafe", "un", "##aff", "##able", ",", ".", "!",                        /* 8 */
	"\xe4\xb8\xad", "\xe6\x96\x87", "the", "shoe", "##s", "\xc3\xb8", "s",           /* 16 */
	"##\xc3\xb8", "##ren", "running", "query", ":", "passage",                       /* 23 */
	"\xce\xb1\xce\xb8\xce\xb7\xce\xbd\xce\xb1",                                            /* 29 */
};
#define V ((int)(sizeof vocab / sizeof *vocab))
#define D 8
enum { PAD = 0, UNK = 3, CLS = 4, SEP = 5, MASK = 6, HELLO = 7, WORLD = 8, CAFE = 9,
       UN = 10, AFF = 11, ABLE = 12, COMMA = 13, BANG = 15, ZHONG = 16, WEN = 17, SHOE = 19,
       PL_S = 20, S = 22, O_SLASH = 23, REN = 24, QUERY = 26, COLON = 27, PASSAGE = 28,
       ATHENS = 29 };

static char *tokenizer_json(void)
{
	static char buf[8192];
	int n = snprintf(buf, sizeof buf,
		"{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n"
		" \"added_tokens\": [");
	const int specials[] = { PAD, UNK, CLS, SEP, MASK };
	for (int i = 0; i < 5; i++)
		n += snprintf(buf + n, sizeof buf - (size_t)n,
		              "%s{\"id\": %d, \"content\": \"%s\", \"special\": true}", i ? ", " : "",
		              specials[i], vocab[specials[i]]);
	n += snprintf(buf + n, sizeof buf - (size_t)n,
		"],\n \"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true,"
		" \"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": true},\n"
		" \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},\n"
		" \"post_processor\": {\"type\": \"TemplateProcessing\","
		" \"single\": [{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}},"
		" {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}},"
		" {\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}],"
		" \"special_tokens\": {\"[CLS]\": {\"id\": \"[CLS]\", \"ids\": [4], \"tokens\": [\"[CLS]\"]},"
		" \"[SEP]\": {\"id\": \"[SEP]\", \"ids\": [5], \"tokens\": [\"[SEP]\"]}}},\n"
		" \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\","
		" \"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100,"
		" \"vocab\": {");
	for (int i = 0; i < V; i++)
		n += snprintf(buf + n, sizeof buf - (size_t)n, "%s\"%s\": %d", i ? ", " : "", vocab[i], i);
	snprintf(buf + n, sizeof buf - (size_t)n, "}}}\n");
	return buf;
}

static char *vocab_txt(void)
{
	static char buf[1024];
	int n = 0;
	for (int i = 0; i < V; i++)
		n += snprintf(buf + n, sizeof buf - (size_t)n, "%s\n", vocab[i]);
	return buf;
}

/* ---- a Unigram tokenizer ------------------------------------------------------------ */

/* SentencePiece's precompiled character map is a darts-clone double array
 * (each unit: label in the low byte, bit 8 a value below, the offset to the
 * children from bit 10; a value unit has bit 31 set), built here for a few
 * keys: node p's children sit at (p ^ offset) ^ label, its value at
 * p ^ offset. */
struct dkey {
	const char *k;
	uint32_t v;
};

static void da_place(uint32_t *a, unsigned char *used, size_t cap, size_t p,
                     const struct dkey *keys, int nk, size_t depth)
{
	int labels[256] = { 0 }, leaf = -1;
	for (int i = 0; i < nk; i++) {
		if (strlen(keys[i].k) == depth)
			leaf = i;
		else
			labels[(unsigned char)keys[i].k[depth]] = 1;
	}
	size_t o = 1, base = 0;
	for (; o < cap; o++) {
		base = p ^ o;
		int ok = base < cap && !(leaf >= 0 && used[base]);
		for (int l = 1; l < 256 && ok; l++)
			ok = !labels[l] || ((base ^ (size_t)l) < cap && !used[base ^ (size_t)l]);
		if (ok)
			break;
	}
	assert_true(o < cap && o < (1u << 21));
	a[p] |= (uint32_t)o << 10;
	if (leaf >= 0) {
		a[p] |= 1u << 8;
		a[base] = keys[leaf].v | 1u << 31;
		used[base] = 1;
	}
	for (int l = 1; l < 256; l++)
		if (labels[l]) {
			used[base ^ (size_t)l] = 1;
			a[base ^ (size_t)l] = (uint32_t)l;
		}
	for (int l = 1; l < 256; l++) {
		if (!labels[l])
			continue;
		struct dkey sub[8];
		int ns = 0;
		for (int i = 0; i < nk; i++)
			if (strlen(keys[i].k) > depth && (unsigned char)keys[i].k[depth] == l)
				sub[ns++] = keys[i];
		da_place(a, used, cap, base ^ (size_t)l, sub, ns, depth + 1);
	}
}

/* Fullwidth A to "a", the fi ligature to "fi", no-break space to " ". */
static char *unigram_json(void)
{
	enum { CAP = 1024 };
	static uint32_t a[CAP];
	static unsigned char used[CAP], bytes[4 + 4 * CAP + 16];
	static char b64[sizeof bytes * 2], buf[sizeof b64 + 4096];
	memset(a, 0, sizeof a);
	memset(used, 0, sizeof used);
	used[0] = 1;
	const struct dkey keys[] = { { "\xef\xbc\xa1", 0 }, { "\xef\xac\x81", 2 }, { "\xc2\xa0", 5 } };
	da_place(a, used, CAP, 0, keys, 3, 0);
	uint32_t tsize = 4 * CAP;
	memcpy(bytes, &tsize, 4);
	memcpy(bytes + 4, a, sizeof a);
	memcpy(bytes + 4 + sizeof a, "a\0fi\0 \0", 7);
	b64[base_b64_encode(bytes, 4 + sizeof a + 7, b64)] = 0;
	snprintf(buf, sizeof buf,
		"{\"added_tokens\": [{\"id\": 0, \"content\": \"<s>\", \"special\": true},"
		" {\"id\": 2, \"content\": \"</s>\", \"special\": true},"
		" {\"id\": 3, \"content\": \"<unk>\", \"special\": true}],\n"
		" \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": ["
		"{\"type\": \"Precompiled\", \"precompiled_charsmap\": \"%s\"},"
		" {\"type\": \"Replace\", \"pattern\": {\"Regex\": \" {2,}\"}, \"content\": \" \"}]},\n"
		" \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\","
		" \"prepend_scheme\": \"always\", \"split\": true},\n"
		" \"post_processor\": {\"type\": \"TemplateProcessing\","
		" \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}},"
		" {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}},"
		" {\"SpecialToken\": {\"id\": \"</s>\", \"type_id\": 0}}],"
		" \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [0], \"tokens\": [\"<s>\"]},"
		" \"</s>\": {\"id\": \"</s>\", \"ids\": [2], \"tokens\": [\"</s>\"]}}},\n"
		" \"model\": {\"type\": \"Unigram\", \"unk_id\": 3, \"vocab\": ["
		"[\"<s>\", 0.0], [\"<pad>\", 0.0], [\"</s>\", 0.0], [\"<unk>\", 0.0],"
		" [\"\xe2\x96\x81\", -2.0], [\"\xe2\x96\x81hello\", -1.0], [\"\xe2\x96\x81world\", -1.0],"
		" [\"\xe2\x96\x81he\", -3.0], [\"llo\", -3.0], [\"\xe2\x96\x81wor\", -2.0], [\"ld\", -2.5],"
		" [\"\xe2\x96\x81\x61\", -2.0], [\"b\", -2.0], [\"\xe2\x96\x81\x61\x62\", -5.0], [\"fi\", -1.0],"
		" [\"\xe2\x96\x81\x66i\", -1.5]]}}\n", b64);
	return buf;
}

/* ---- the models ------------------------------------------------------------------------ */

/* Row i of the embedding table (width w). */
static float table(int i, int d)
{
	return (float)(((i * 31 + d * 17) % 13) - 6) / 4.0f;
}

/* Row t of the token-type table. */
static float type_row(int t)
{
	return t == 0 ? 0.5f : -1.0f;
}

/* hidden[t] = (E[ids[t]] + T[types[t]]) * mask[t], E of width w; with_types
 * 0: no token_type_ids input (and no T). */
static void write_model(const char *path, int w, const char *out, int with_types)
{
	struct mb_model *m = mb_new("embedder", 17);
	const char *dn[2] = { "batch", "seq" };
	mb_input(m, "input_ids", BASE_DT_INT64, 2, (int64_t[]){ -1, -1 }, dn);
	mb_input(m, "attention_mask", BASE_DT_INT64, 2, (int64_t[]){ -1, -1 }, dn);
	if (with_types)
		mb_input(m, "token_type_ids", BASE_DT_INT64, 2, (int64_t[]){ -1, -1 }, dn);
	float *e = malloc((size_t)V * (size_t)w * sizeof *e), tt[2 * V];
	for (int i = 0; i < V; i++)
		for (int d = 0; d < w; d++)
			e[i * w + d] = table(i, d);
	for (int i = 0; i < 2; i++)
		for (int d = 0; d < w; d++)
			tt[i * w + d] = type_row(i);
	mb_init(m, "E", BASE_DT_FLOAT, 2, (int64_t[]){ V, w }, e);
	mb_init(m, "axes", BASE_DT_INT64, 1, (int64_t[]){ 1 }, (int64_t[]){ 2 });
	mb_node(m, "Gather", "E,input_ids", "g");
	if (with_types) {
		mb_init(m, "T", BASE_DT_FLOAT, 2, (int64_t[]){ 2, w }, tt);
		mb_node(m, "Gather", "T,token_type_ids", "gt");
		mb_node(m, "Add", "g,gt", "s");
	} else {
		mb_node(m, "Identity", "g", "s");
	}
	struct mb_node *c = mb_node(m, "Cast", "attention_mask", "mf");
	mb_attr_int(c, "to", BASE_DT_FLOAT);
	mb_node(m, "Unsqueeze", "mf,axes", "m3");
	mb_node(m, "Mul", "s,m3", out);
	mb_output(m, out, BASE_DT_FLOAT, 3, (int64_t[]){ -1, -1, w },
	          (const char *[]){ "batch", "seq", "" });
	assert_int_equal(mb_save(m, path), 0);
	mb_free(m);
	free(e);
}

/* The model's hidden state of token id with type 0 and mask 1. */
static double hidden(int id, int d)
{
	return (double)table(id, d) + type_row(0);
}

/* ---- the application ------------------------------------------------------------------- */

static const char *services_xml =
	"<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n"
	"<services version=\"1.0\">\n"
	"  <container id=\"default\" version=\"1.0\">\n"
	"    <component id=\"e5\" type=\"hugging-face-embedder\">\n"
	"      <transformer-model path=\"models/emb.onnx\"/>\n"
	"      <tokenizer-model path=\"models/tokenizer.json\"/>\n"
	"      <normalize>true</normalize>\n"
	"      <prepend>\n"
	"        <query>query:</query>\n"
	"        <document>passage:</document>\n"
	"      </prepend>\n"
	"      <onnx-intraop-threads>4</onnx-intraop-threads>\n"
	"    </component>\n"
	"    <component id=\"mean\" type=\"hugging-face-embedder\">\n"
	"      <transformer-model path=\"models/emb.onnx\"/>\n"
	"      <tokenizer-model path=\"models/tokenizer.json\"/>\n"
	"      <max-tokens>5</max-tokens>\n"
	"    </component>\n"
	"    <component id=\"cls\" type=\"hugging-face-embedder\">\n"
	"      <transformer-model path=\"models/emb.onnx\"/>\n"
	"      <tokenizer-model path=\"models/tokenizer.json\"/>\n"
	"      <pooling-strategy>cls</pooling-strategy>\n"
	"    </component>\n"
	"    <component id=\"bert\" type=\"bert-embedder\">\n"
	"      <transformer-model path=\"models/emb.onnx\"/>\n"
	"      <tokenizer-vocab path=\"models/vocab.txt\"/>\n"
	"      <transformer-output>last_hidden_state</transformer-output>\n"
	"      <transformer-start-sequence-token>4</transformer-start-sequence-token>\n"
	"      <transformer-end-sequence-token>5</transformer-end-sequence-token>\n"
	"    </component>\n"
	"    <component id=\"colbert\" type=\"colbert-embedder\">\n"
	"      <transformer-model path=\"models/colbert.onnx\"/>\n"
	"      <tokenizer-model path=\"models/tokenizer.json\"/>\n"
	"      <max-query-tokens>8</max-query-tokens>\n"
	"      <transformer-start-sequence-token>4</transformer-start-sequence-token>\n"
	"      <transformer-end-sequence-token>5</transformer-end-sequence-token>\n"
	"      <transformer-mask-token>6</transformer-mask-token>\n"
	"    </component>\n"
	"    <component id=\"splade\" type=\"splade-embedder\">\n"
	"      <transformer-model path=\"models/splade.onnx\"/>\n"
	"      <tokenizer-model path=\"models/tokenizer.json\"/>\n"
	"      <term-score-threshold>0.5</term-score-threshold>\n"
	"    </component>\n"
	"    <component id=\"tok\" type=\"hugging-face-tokenizer\">\n"
	"      <model path=\"models/tokenizer.json\"/>\n"
	"    </component>\n"
	"    <component id=\"remote\" type=\"hugging-face-embedder\">\n"
	"      <transformer-model url=\"https://example.com/e5/model.onnx\"/>\n"
	"      <tokenizer-model url=\"https://example.com/e5/tokenizer.json\"/>\n"
	"    </component>\n"
	"    <component id=\"xlmr\" type=\"hugging-face-embedder\">\n"
	"      <transformer-model path=\"models/emb.onnx\"/>\n"
	"      <tokenizer-model path=\"models/unigram.json\"/>\n"
	"    </component>\n"
	"    <component id=\"gone\" type=\"bert-embedder\">\n"
	"      <transformer-model path=\"models/gone.onnx\"/>\n"
	"      <tokenizer-vocab path=\"models/vocab.txt\"/>\n"
	"    </component>\n"
	"    <component id=\"ai.example.Searcher\" bundle=\"x\"/>\n"
	"    <search/>\n"
	"  </container>\n"
	"</services>\n";

static const char *doc_sd =
	"schema doc {\n"
	"    document doc {\n"
	"        field emb type tensor<float>(x[4]) {\n"
	"            indexing: attribute | summary\n"
	"        }\n"
	"    }\n"
	"    rank-profile q {\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[4])\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: sum(query(q) * attribute(emb))\n"
	"        }\n"
	"    }\n"
	"}\n";

/* The same input name with another type. */
static const char *wide_sd =
	"schema wide {\n"
	"    document wide {\n"
	"        field emb type tensor<float>(x[8]) {\n"
	"            indexing: attribute | summary\n"
	"        }\n"
	"    }\n"
	"    rank-profile q {\n"
	"        inputs {\n"
	"            query(q) tensor<float>(x[8])\n"
	"        }\n"
	"        first-phase {\n"
	"            expression: sum(query(q) * attribute(emb))\n"
	"        }\n"
	"    }\n"
	"}\n";

struct logged {
	int n;
	char msg[4][STRATA_ERRMSG_MAX];
};

static void log_cb(void *ud, int level, const char *msg)
{
	struct logged *l = ud;
	assert_int_equal(level, STRATA_LOG_WARNING);
	if (l->n < 4)
		snprintf(l->msg[l->n], sizeof l->msg[0], "%s", msg);
	l->n++;
}

struct fixture {
	char *dir;
	struct strata *db;
	struct logged log;
};

static void make_app(char *dir, const char *services)
{
	char models[600];
	snprintf(models, sizeof models, "%s/models", dir);
	apptest_write(models, "tokenizer.json", tokenizer_json());
	apptest_write(models, "vocab.txt", vocab_txt());
	apptest_write(models, "unigram.json", unigram_json());
	char path[700];
	snprintf(path, sizeof path, "%s/emb.onnx", models);
	write_model(path, D, "last_hidden_state", 1);
	snprintf(path, sizeof path, "%s/colbert.onnx", models);
	write_model(path, D, "contextual", 0);
	snprintf(path, sizeof path, "%s/splade.onnx", models);
	write_model(path, V, "logits", 1);
	char schemas[600];
	snprintf(schemas, sizeof schemas, "%s/schemas", dir);
	apptest_write(schemas, "doc.sd", doc_sd);
	apptest_write(schemas, "wide.sd", wide_sd);
	apptest_write(dir, "services.xml", services);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	f->dir = apptest_new("embedder");
	make_app(f->dir, services_xml);
	struct strata_options opts = { .log = log_cb, .log_ud = &f->log };
	struct strata_error err = { 0 };
	if (strata_open(f->dir, &opts, &f->db, &err) != 0)
		fail_msg("open: %s", err.msg);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	strata_close(f->db);
	apptest_remove(f->dir);
	free(f);
	return 0;
}

/* ---- tokens ----------------------------------------------------------------------------- */

static void expect_ids(const struct eng_tokenizer *w, const char *text, const int64_t *want,
                       size_t n)
{
	int64_t ids[64];
	size_t got;
	assert_int_equal(eng_tokenizer_encode(w, text, strlen(text), ids, 64, &got, NULL), 0);
	if (got != n)
		fail_msg("'%s': %zu tokens, expected %zu", text, got, n);
	for (size_t i = 0; i < n; i++)
		if (ids[i] != want[i])
			fail_msg("'%s': token %zu is %lld, expected %lld", text, i, (long long)ids[i],
			         (long long)want[i]);
}

#define IDS(...) (const int64_t[]){ __VA_ARGS__ }, sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)

static void check_tricky(const struct eng_tokenizer *w)
{
	expect_ids(w, "Hello, World!", IDS(HELLO, COMMA, WORLD, BANG));
	expect_ids(w, "CAF\xc3\x89", IDS(CAFE));            /* É: accent and case */
	expect_ids(w, "cafe\xcc\x81", IDS(CAFE));           /* e + combining acute */
	expect_ids(w, "\xc8\x98hoes", IDS(SHOE, PL_S));      /* S with comma below */
	expect_ids(w, "\xce\x91\xce\xb8\xce\xae\xce\xbd\xce\xb1", IDS(ATHENS)); /* Greek tonos */
	expect_ids(w, "unaffable", IDS(UN, AFF, ABLE));
	expect_ids(w, "shoes", IDS(SHOE, PL_S));
	expect_ids(w, "S\xc3\x98ren", IDS(S, O_SLASH, REN)); /* Ø: no decomposition */
	expect_ids(w, "\xe4\xb8\xad\xe6\x96\x87hello", IDS(ZHONG, WEN, HELLO)); /* CJK apart */
	expect_ids(w, "xyz unaffablex", IDS(UNK, UNK));     /* no pieces: one [UNK] a word */
	expect_ids(w, "hel\x01lo\twor\xc2\xa0world", IDS(HELLO, UNK, WORLD)); /* control, NBSP */
	expect_ids(w, " \n ", NULL, 0);
	expect_ids(w, "hello[SEP]World [MASK].", IDS(HELLO, SEP, WORLD, MASK, 14)); /* added */
	expect_ids(w, "[sep] [SEP", IDS(UNK, UNK, UNK, UNK, UNK));             /* as written */
}

static void test_tokenizer_json(void **state)
{
	struct fixture *f = *state;
	char path[600];
	snprintf(path, sizeof path, "%s/models/tokenizer.json", f->dir);
	struct eng_tokenizer *w;
	struct strata_error err;
	assert_int_equal(eng_tokenizer_load(path, 0, &w, &err), 0);
	check_tricky(w);
	int64_t cls[4], sep[4];
	int ncls, nsep;
	eng_tokenizer_specials(w, cls, &ncls, sep, &nsep);
	assert_int_equal(ncls, 1);
	assert_int_equal(nsep, 1);
	assert_int_equal(cls[0], CLS);
	assert_int_equal(sep[0], SEP);
	assert_true(eng_tokenizer_special(w, PAD));
	assert_false(eng_tokenizer_special(w, HELLO));
	assert_string_equal(eng_tokenizer_token(w, AFF), "##aff");
	/* truncated: the first two ids, the count of all */
	int64_t ids[2];
	size_t n;
	assert_int_equal(eng_tokenizer_encode(w, "hello world hello", 17, ids, 2, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[1], WORLD);
	eng_tokenizer_free(w);
	snprintf(path, sizeof path, "%s/models/vocab.txt", f->dir);
	assert_int_equal(eng_tokenizer_load(path, 1, &w, &err), 0);
	check_tricky(w);
	eng_tokenizer_free(w);
}

static void test_tokenizer_errors(void **state)
{
	struct fixture *f = *state;
	char dir[600];
	snprintf(dir, sizeof dir, "%s/models", f->dir);
	apptest_write(dir, "bpe.json",
	              "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}");
	apptest_write(dir, "broken.json", "{\"model\": {\n  \"type\": }");
	struct eng_tokenizer *w;
	struct strata_error err;
	char path[700];
	snprintf(path, sizeof path, "%s/bpe.json", dir);
	assert_int_equal(eng_tokenizer_load(path, 0, &w, &err), STRATA_NOT_IMPLEMENTED);
	assert_non_null(strstr(err.msg, "model type 'BPE' is not supported"));
	assert_non_null(strstr(err.msg, "bpe.json"));
	snprintf(path, sizeof path, "%s/broken.json", dir);
	assert_int_equal(eng_tokenizer_load(path, 0, &w, &err), STRATA_PARSE);
	assert_non_null(strstr(err.msg, "broken.json:2:"));
	snprintf(path, sizeof path, "%s/none.json", dir);
	assert_int_equal(eng_tokenizer_load(path, 0, &w, &err), STRATA_NOT_FOUND);
	assert_non_null(strstr(err.msg, "none.json"));
	/* a character map that is not base64, or too short to hold its trie */
	const char *maps[] = { "AAAA!AAA", "AAAAAA", "AAAA" };
	for (int i = 0; i < 3; i++) {
		char json[300];
		snprintf(json, sizeof json,
		         "{\"normalizer\": {\"type\": \"Precompiled\", \"precompiled_charsmap\": "
		         "\"%s\"}, \"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", -1]]}}",
		         maps[i]);
		apptest_write(dir, "charsmap.json", json);
		snprintf(path, sizeof path, "%s/charsmap.json", dir);
		assert_int_equal(eng_tokenizer_load(path, 0, &w, &err), STRATA_PARSE);
		assert_non_null(strstr(err.msg, "the precompiled_charsmap is damaged"));
	}
}

/* ---- embedding ---------------------------------------------------------------------------- */

static json_t *embed(struct fixture *f, const char *id, const char *text, int for_query,
                     int cell, int rank, const int64_t *dims)
{
	struct eng_ttype t = { cell, rank, dims, (const char *const[]){ "dt", "x" } };
	json_t *out;
	struct strata_error err;
	if (eng_embed_type(f->db, id, text, strlen(text), for_query, &t, "field 'f'", &out, &err))
		fail_msg("embed %s '%s': %s", id, text, err.msg);
	return out;
}

/* Mean of the hidden states of ids, its first n values, normalized if asked. */
static void mean_of(const int *ids, int nids, int n, int norm, double *v)
{
	for (int d = 0; d < n; d++) {
		v[d] = 0;
		for (int i = 0; i < nids; i++)
			v[d] += hidden(ids[i], d) / nids;
	}
	double sq = 0;
	for (int d = 0; d < n; d++)
		sq += v[d] * v[d];
	for (int d = 0; norm && d < n; d++)
		v[d] /= sqrt(sq);
}

static void expect_values(const json_t *arr, const double *v, size_t n)
{
	assert_int_equal(json_array_size(arr), n);
	for (size_t i = 0; i < n; i++) {
		double got = json_number_value(json_array_get(arr, i));
		if (fabs(got - v[i]) > 1e-6 * (1 + fabs(v[i])))
			fail_msg("value %zu is %.9g, expected %.9g", i, got, v[i]);
	}
}

static void test_unigram(void **state)
{
	struct fixture *f = *state;
	char path[600];
	snprintf(path, sizeof path, "%s/models/unigram.json", f->dir);
	struct eng_tokenizer *w;
	struct strata_error err;
	if (eng_tokenizer_load(path, 0, &w, &err))
		fail_msg("%s", err.msg);
	expect_ids(w, "hello world", IDS(5, 6));              /* whole words beat pieces */
	expect_ids(w, "ab", IDS(11, 12));                     /* -4 beats -5 */
	expect_ids(w, "abz", IDS(11, 12, 3));                 /* z: unknown */
	expect_ids(w, "zz", IDS(4, 3));                       /* unknowns in a row: one */
	expect_ids(w, "\xef\xac\x81  \xef\xbc\xa1\x62", IDS(15, 11, 12)); /* map, spaces */
	expect_ids(w, "hello\xc2\xa0\xc2\xa0world", IDS(5, 6)); /* mapped spaces collapse */
	expect_ids(w, "", NULL, 0);
	expect_ids(w, "hello</s>world<s>", IDS(5, 2, 6, 0)); /* added tokens as written */
	int64_t cls[4], sep[4];
	int ncls, nsep;
	eng_tokenizer_specials(w, cls, &ncls, sep, &nsep);
	assert_true(ncls == 1 && cls[0] == 0 && nsep == 1 && sep[0] == 2);
	/* a long text is read until there are more ids than asked for */
	size_t big = 600000, got;
	char *text = malloc(big + 1);
	for (size_t i = 0; i < big; i += 6)
		memcpy(text + i, "hello ", 6);
	text[big] = 0;
	int64_t ids[4];
	assert_int_equal(eng_tokenizer_encode(w, text, big, ids, 4, &got, NULL), 0);
	assert_int_equal(got, 5);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ids[i], 5);
	/* its buffers may all fail */
	long failures = 0;
	for (long k = 1;; k++) {
		struct base_alloc_stats before, after;
		base_alloc_stats(&before);
		base_alloc_fail_after(k);
		int rc = eng_tokenizer_encode(w, "\xef\xac\x81 ab zz", 10, ids, 4, &got, &err);
		base_alloc_fail_after(0);
		base_alloc_stats(&after);
		assert_int_equal(after.live_bytes, before.live_bytes);
		if (rc == 0)
			break;
		assert_int_equal(rc, STRATA_NOMEM);
		failures++;
	}
	assert_true(failures >= 3);
	free(text);
	eng_tokenizer_free(w);
	/* an embedder with it: <s> hello world </s> */
	json_t *j = embed(f, "xlmr", "hello  world", 0, BASE_DT_FLOAT, 1, (int64_t[]){ D });
	double v[D];
	mean_of((int[]){ 0, 5, 6, 2 }, 4, D, 0, v);
	expect_values(json_object_get(j, "values"), v, D);
	json_decref(j);
}

static void test_hugging_face(void **state)
{
	struct fixture *f = *state;
	double v[D];
	/* e5: "query: Hello" for a query, "passage: Hello" for a document,
	 * the first 4 values of the mean, normalized */
	json_t *j = embed(f, "e5", "Hello", 1, BASE_DT_FLOAT, 1, (int64_t[]){ 4 });
	mean_of((int[]){ CLS, QUERY, COLON, HELLO, SEP }, 5, 4, 1, v);
	expect_values(json_object_get(j, "values"), v, 4);
	json_decref(j);
	j = embed(f, "e5", "Hello", 0, BASE_DT_FLOAT, 1, (int64_t[]){ 4 });
	mean_of((int[]){ CLS, PASSAGE, COLON, HELLO, SEP }, 5, 4, 1, v);
	expect_values(json_object_get(j, "values"), v, 4);
	json_decref(j);
	/* mean: max-tokens 5 keeps [CLS] and three tokens before [SEP] */
	j = embed(f, "mean", "the shoes hello world", 0, BASE_DT_FLOAT, 1, (int64_t[]){ D });
	mean_of((int[]){ CLS, 18, SHOE, PL_S, SEP }, 5, D, 0, v);
	expect_values(json_object_get(j, "values"), v, D);
	json_decref(j);
	/* cls: the first token's state */
	j = embed(f, "cls", "hello world", 0, BASE_DT_DOUBLE, 1, (int64_t[]){ D });
	for (int d = 0; d < D; d++)
		v[d] = hidden(CLS, d);
	expect_values(json_object_get(j, "values"), v, D);
	json_decref(j);
	/* int8: the 8 values binarized into one cell, the first in the high bit */
	j = embed(f, "mean", "hello", 0, BASE_DT_INT8, 1, (int64_t[]){ 1 });
	mean_of((int[]){ CLS, HELLO, SEP }, 3, D, 0, v);
	int bits = 0;
	for (int d = 0; d < D; d++)
		bits = bits << 1 | (v[d] > 0);
	assert_int_equal(json_array_size(json_object_get(j, "values")), 1);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(j, "values"), 0)),
	                 bits > 127 ? bits - 256 : bits);
	json_decref(j);
	/* bert-embedder: vocab.txt and its own start and end tokens */
	j = embed(f, "bert", "Caf\xc3\xa9 shoes", 0, BASE_DT_FLOAT, 1, (int64_t[]){ D });
	mean_of((int[]){ CLS, CAFE, SHOE, PL_S, SEP }, 5, D, 0, v);
	expect_values(json_object_get(j, "values"), v, D);
	json_decref(j);
}

static void test_colbert(void **state)
{
	struct fixture *f = *state;
	/* query: [CLS] [unused0] hello , world [SEP] [MASK] [MASK], masks 0 */
	json_t *j = embed(f, "colbert", "Hello, world", 1, BASE_DT_FLOAT, 2, (int64_t[]){ -1, D });
	const json_t *blocks = json_object_get(j, "blocks");
	const int q[8] = { CLS, 1, HELLO, COMMA, WORLD, SEP, MASK, MASK };
	assert_int_equal(json_object_size(blocks), 8);
	/* the form a fed mixed tensor takes */
	struct eng_sparse sp;
	struct strata_error err;
	struct eng_ttype mixed = { BASE_DT_DOUBLE, 2, (int64_t[]){ -1, D },
	                           (const char *const[]){ "qt", "x" } };
	if (eng_sparse_from_json(j, &mixed, &sp, "qt", &err))
		fail_msg("%s", err.msg);
	assert_int_equal(sp.nblocks, 8);
	eng_sparse_free(&sp);
	for (int t = 0; t < 8; t++) {
		char label[16];
		snprintf(label, sizeof label, "%d", t);
		double v[D];
		for (int d = 0; d < D; d++)
			v[d] = t < 6 ? table(q[t], d) : 0; /* no token types here */
		expect_values(json_object_get(blocks, label), v, D);
	}
	json_decref(j);
	/* document into int8: [CLS] [unused1] hello world [SEP] (no comma) */
	j = embed(f, "colbert", "Hello, world", 0, BASE_DT_INT8, 2, (int64_t[]){ -1, 1 });
	blocks = json_object_get(j, "blocks");
	const int doc[5] = { CLS, 2, HELLO, WORLD, SEP };
	assert_int_equal(json_object_size(blocks), 5);
	for (int t = 0; t < 5; t++) {
		char label[16];
		snprintf(label, sizeof label, "%d", t);
		int bits = 0;
		for (int d = 0; d < D; d++)
			bits = bits << 1 | (table(doc[t], d) > 0);
		const json_t *a = json_object_get(blocks, label);
		assert_int_equal(json_array_size(a), 1);
		assert_int_equal(json_integer_value(json_array_get(a, 0)), bits > 127 ? bits - 256 : bits);
	}
	json_decref(j);
}

static void test_splade(void **state)
{
	struct fixture *f = *state;
	json_t *j = embed(f, "splade", "hello shoes", 0, BASE_DT_FLOAT, 1, (int64_t[]){ -1 });
	const json_t *cells = json_object_get(j, "cells");
	const int toks[5] = { CLS, HELLO, SHOE, PL_S, SEP };
	size_t kept = 0;
	for (int v = 0; v < V; v++) {
		double m = 0;
		for (int t = 0; t < 5; t++)
			m = fmax(m, hidden(toks[t], v));
		double score = log(1 + m);
		int special = v == PAD || v == UNK || v == CLS || v == SEP || v == MASK;
		const json_t *c = json_object_get(cells, vocab[v]);
		if (score > 0.5 && !special) {
			kept++;
			if (!c || fabs(json_number_value(c) - score) > 1e-6)
				fail_msg("term '%s': %g, expected %g", vocab[v], json_number_value(c), score);
		} else if (c) {
			fail_msg("term '%s' (%g) kept", vocab[v], score);
		}
	}
	assert_true(kept > 0);
	assert_int_equal(json_object_size(cells), kept);
	/* the form a fed mapped tensor takes */
	struct eng_sparse sp;
	struct strata_error err;
	struct eng_ttype mapped = { BASE_DT_DOUBLE, 1, (int64_t[]){ -1 },
	                            (const char *const[]){ "token" } };
	if (eng_sparse_from_json(j, &mapped, &sp, "t", &err))
		fail_msg("%s", err.msg);
	assert_int_equal(sp.nblocks, kept);
	eng_sparse_free(&sp);
	json_decref(j);
}

static void test_token_ids(void **state)
{
	struct fixture *f = *state;
	json_t *j = embed(f, "tok", "Hello world", 0, BASE_DT_FLOAT, 1, (int64_t[]){ 6 });
	expect_values(json_object_get(j, "values"), (double[]){ CLS, HELLO, WORLD, SEP, 0, 0 }, 6);
	json_decref(j);
	j = embed(f, "tok", "hello world hello world", 0, BASE_DT_FLOAT, 1, (int64_t[]){ 4 });
	expect_values(json_object_get(j, "values"), (double[]){ CLS, HELLO, WORLD, SEP }, 4);
	json_decref(j);
}

/* Deploy compiles each model file once into a context, whatever the
 * number of embedders that use it; the next open embeds from the contexts
 * as from the sources, and says nothing but what it said before. */
static void test_deploy(void **state)
{
	struct fixture *f = *state;
	json_t *before = embed(f, "e5", "Hello", 1, BASE_DT_FLOAT, 1, (int64_t[]){ 4 });
	strata_close(f->db);
	struct strata_error err;
	if (eng_open(f->dir, NULL, ENG_OPEN_DEPLOY, &f->db, &err))
		fail_msg("deploy: %s", err.msg);
	assert_int_equal(f->db->ncontexts, 3); /* emb, colbert, splade */
	strata_close(f->db);
	struct strata_options opts = { .log = log_cb, .log_ud = &f->log };
	f->log.n = 0;
	if (strata_open(f->dir, &opts, &f->db, &err))
		fail_msg("open: %s", err.msg);
	assert_int_equal(f->log.n, 2); /* 'remote' and 'gone' again, no stale context */
	json_t *after = embed(f, "e5", "Hello", 1, BASE_DT_FLOAT, 1, (int64_t[]){ 4 });
	assert_true(json_equal(before, after));
	json_decref(before);
	json_decref(after);
}

/* ---- errors --------------------------------------------------------------------------------- */

static void test_unavailable(void **state)
{
	struct fixture *f = *state;
	/* open said it once for each */
	assert_int_equal(f->log.n, 2);
	assert_non_null(strstr(f->log.msg[0], "services.xml:47:5: embedder 'remote' cannot run"));
	assert_non_null(strstr(f->log.msg[0], "transformer-model is the URL "
	                                      "https://example.com/e5/model.onnx"));
	assert_non_null(strstr(f->log.msg[0], "tokenizer-model is the URL "
	                                      "https://example.com/e5/tokenizer.json"));
	assert_non_null(strstr(f->log.msg[1], "services.xml:55:5: embedder 'gone' cannot run: its "
	                                      "transformer-model file 'models/gone.onnx' is not in "
	                                      "the application ("));
	assert_non_null(strstr(f->log.msg[1], "services.xml:56:7)"));
	struct eng_ttype t = { BASE_DT_FLOAT, 1, (int64_t[]){ 4 }, NULL };
	json_t *out;
	struct strata_error err;
	assert_int_equal(eng_embed_type(f->db, "remote", "x", 1, 0, &t, "field 'f'", &out, &err),
	                 STRATA_NOT_IMPLEMENTED);
	assert_null(out);
	assert_non_null(strstr(err.msg, "embedder 'remote'"));
	assert_non_null(strstr(err.msg, "https://example.com/e5/"));
	assert_non_null(strstr(err.msg, "path=\""));
	assert_non_null(strstr(err.msg, "never downloads"));
	/* declared all the same: schemas may name it */
	assert_int_equal(eng_embedder_find(f->db, "remote", &err), 0);
}

static void test_unknown_id(void **state)
{
	struct fixture *f = *state;
	struct strata_error err;
	assert_int_equal(eng_embedder_find(f->db, "e5", &err), 0);
	assert_int_equal(eng_embedder_find(f->db, "e6", &err), STRATA_NOT_FOUND);
	assert_non_null(strstr(err.msg, "'e6'"));
	assert_non_null(strstr(err.msg, "'e5', 'mean', 'cls'"));
	/* no id with several declared */
	assert_int_equal(eng_embedder_find(f->db, NULL, &err), STRATA_NOT_FOUND);
	assert_non_null(strstr(err.msg, "exactly one"));
	struct eng_ttype t = { BASE_DT_FLOAT, 1, (int64_t[]){ 4 }, NULL };
	json_t *out;
	assert_int_equal(eng_embed_type(f->db, "e6", "x", 1, 0, &t, "field 'f'", &out, &err),
	                 STRATA_NOT_FOUND);
}

static void test_bad_types(void **state)
{
	struct fixture *f = *state;
	struct strata_error err;
	json_t *out;
	const char *const names[] = { "dt", "x" };
	struct eng_ttype big = { BASE_DT_FLOAT, 1, (int64_t[]){ 16 }, names };
	assert_int_equal(eng_embed_type(f->db, "e5", "x", 1, 0, &big, "field 'f'", &out, &err),
	                 STRATA_TYPE);
	assert_non_null(strstr(err.msg, "makes 8 values"));
	assert_non_null(strstr(err.msg, "needs 16"));
	struct eng_ttype mapped = { BASE_DT_FLOAT, 1, (int64_t[]){ -1 }, names };
	assert_int_equal(eng_embed_type(f->db, "e5", "x", 1, 0, &mapped, "field 'f'", &out, &err),
	                 STRATA_TYPE);
	assert_non_null(strstr(err.msg, "dense vector"));
	assert_int_equal(eng_embed_type(f->db, "splade", "x", 1, 0, &big, "field 'f'", &out, &err),
	                 STRATA_TYPE);
	assert_non_null(strstr(err.msg, "token{}"));
	struct eng_ttype q8 = { BASE_DT_INT8, 2, (int64_t[]){ -1, 1 }, names };
	assert_int_equal(eng_embed_type(f->db, "colbert", "x", 1, 1, &q8, "field 'f'", &out, &err),
	                 STRATA_TYPE);
	assert_non_null(strstr(err.msg, "not int8"));
}

/* Every allocation of an embed fails in turn: STRATA_NOMEM, nothing kept. */
static void test_alloc_failures(void **state)
{
	struct fixture *f = *state;
	const char *ids[] = { "e5", "colbert", "splade", "tok" };
	struct eng_ttype types[] = {
		{ BASE_DT_FLOAT, 1, (int64_t[]){ 4 }, NULL },
		{ BASE_DT_FLOAT, 2, (int64_t[]){ -1, D }, NULL },
		{ BASE_DT_FLOAT, 1, (int64_t[]){ -1 }, NULL },
		{ BASE_DT_FLOAT, 1, (int64_t[]){ 6 }, NULL },
	};
	for (int k = 0; k < 4; k++) {
		long failures = 0;
		/* twice first: the model keeps the run context it ends with,
		 * sized by its runs */
		for (int w = 0; w < 2; w++)
			json_decref(embed(f, ids[k], "Hello, world", 1, types[k].cell, types[k].rank,
			                  types[k].dims));
		for (long n = 1;; n++) {
			struct base_alloc_stats before, after;
			base_alloc_stats(&before);
			base_alloc_fail_after(n);
			json_t *out;
			struct strata_error err;
			int rc = eng_embed_type(f->db, ids[k], "Hello, world", 12, 1, &types[k], "f",
			                        &out, &err);
			base_alloc_fail_after(0);
			json_decref(out);
			base_alloc_stats(&after);
			if (after.live_bytes != before.live_bytes)
				fail_msg("%s, allocation %ld failing: %lld bytes more (%s)", ids[k], n,
				         (long long)(after.live_bytes - before.live_bytes), rc ? err.msg : "");
			if (rc == 0)
				break;
			assert_int_equal(rc, STRATA_NOMEM);
			assert_non_null(strstr(err.msg, "out of memory"));
			failures++;
		}
		assert_true(failures > 3);
	}
}

static void expect_services_error(const char *xml, int code, const char *where, const char *what)
{
	char *dir = apptest_new("embedder-bad");
	make_app(dir, xml);
	struct strata *db = NULL;
	struct strata_error err = { 0 };
	int rc = strata_open(dir, NULL, &db, &err);
	strata_close(db);
	if (rc != code || !strstr(err.msg, where) || !strstr(err.msg, what))
		fail_msg("expected %d '%s' '%s', got %d: %s", code, where, what, rc, err.msg);
	apptest_remove(dir);
}

static void test_services_errors(void **state)
{
	(void)state;
	expect_services_error("<services>\n  <container>\n  </services>\n", STRATA_PARSE,
	                      "services.xml:3:5:", "mismatched tag");
	expect_services_error("<services>\n"
	                      "  <component id=\"e\" type=\"hugging-face-embedder\">\n"
	                      "    <transformer-model path=\"models/emb.onnx\"/>\n"
	                      "    <tokenizer-model path=\"models/tokenizer.json\"/>\n"
	                      "    <pooling-strategy>max</pooling-strategy>\n"
	                      "  </component>\n</services>\n",
	                      STRATA_PARSE, "services.xml:5:5:", "<pooling-strategy> is 'max'");
	expect_services_error("<services>\n"
	                      "  <component id=\"e\" type=\"hugging-face-embedder\">\n"
	                      "      <flavour>mint</flavour>\n"
	                      "  </component>\n</services>\n",
	                      STRATA_NOT_IMPLEMENTED, "services.xml:3:7:", "setting <flavour>");
	expect_services_error("<services>\n"
	                      "  <component id=\"e\" type=\"hugging-face-embedder\">\n"
	                      "    <tokenizer-model path=\"models/tokenizer.json\"/>\n"
	                      "  </component>\n</services>\n",
	                      STRATA_PARSE, "services.xml:2:3:", "needs <transformer-model>");
	expect_services_error("<services>\n"
	                      "  <component id=\"e\" type=\"hugging-face-embedder\">\n"
	                      "    <transformer-model path=\"models/emb.onnx\"/>\n"
	                      "    <tokenizer-model path=\"models/tokenizer.json\"/>\n"
	                      "    <transformer-output>pooled</transformer-output>\n"
	                      "  </component>\n</services>\n",
	                      STRATA_INVALID_ARGUMENT, "services.xml:3:5:",
	                      "no output 'pooled' (it has last_hidden_state)");
	expect_services_error("<services>\n"
	                      "  <component id=\"t\" type=\"hugging-face-tokenizer\">\n"
	                      "    <model language=\"en\" path=\"models/tokenizer.json\"/>\n"
	                      "    <model language=\"de\" path=\"models/tokenizer.json\"/>\n"
	                      "  </component>\n</services>\n",
	                      STRATA_NOT_IMPLEMENTED, "services.xml:4:5:", "<model> is given twice");
	expect_services_error("<services>\n"
	                      "  <component type=\"splade-embedder\"/>\n</services>\n",
	                      STRATA_INVALID_ARGUMENT, "services.xml:2:3:", "has no id");
	expect_services_error("<services>\n"
	                      "  <component id=\"a\" type=\"my-own-embedder\"/>\n"
	                      "  <component id=\"a\" type=\"my-own-embedder\"/>\n</services>\n",
	                      STRATA_INVALID_ARGUMENT, "services.xml:3:3:", "declared twice");
}

/* ---- embed() as a query input ------------------------------------------------------------------- */

/* The relevance of the hits of document ids a and b (NaN when missing). */
static void relevance(struct fixture *f, const char *req, int *rc, struct strata_error *err,
                      double *ra, double *rb)
{
	char *out;
	*ra = *rb = NAN;
	*rc = strata_query_json(f->db, req, &out, err);
	if (*rc)
		return;
	json_t *j = json_loads(out, 0, NULL);
	strata_free(out);
	size_t i;
	json_t *hit;
	json_array_foreach(json_object_get(json_object_get(j, "root"), "children"), i, hit) {
		const char *id = json_string_value(json_object_get(hit, "id"));
		double r = json_number_value(json_object_get(hit, "relevance"));
		if (id && !strcmp(id, "id:x:doc::1"))
			*ra = r;
		else if (id && !strcmp(id, "id:x:wide::1"))
			*rb = r;
	}
	json_decref(j);
}

static void test_query_input(void **state)
{
	struct fixture *f = *state;
	struct strata_error err;
	assert_int_equal(strata_feed_json(f->db, "{\"put\": \"id:x:doc::1\", \"fields\": "
	                                  "{\"emb\": [1, 2, 0, 0]}}", &err), 0);
	assert_int_equal(strata_feed_json(f->db, "{\"put\": \"id:x:wide::1\", \"fields\": "
	                                  "{\"emb\": [0, 0, 0, 0, 0, 0, 0, 1]}}", &err), 0);
	/* each type its own embedding: x[4] normalized over 4 values, x[8] over 8 */
	double v[D], w8[D];
	const int toks[6] = { CLS, QUERY, COLON, HELLO, WORLD, SEP };
	mean_of(toks, 6, 4, 1, v);
	mean_of(toks, 6, 8, 1, w8);
	double want = (double)(float)v[0] + 2 * (double)(float)v[1];
	double want8 = (double)(float)w8[7];
	const char *reqs[] = {
		"{\"yql\": \"select * from sources * where true\", \"ranking.profile\": \"q\","
		" \"input.query(q)\": \"embed(e5, @text)\", \"text\": \"Hello world\"}",
		"{\"yql\": \"select * from sources * where true\", \"ranking.profile\": \"q\","
		" \"input.query(q)\": \"embed(e5, \\\"Hello world\\\")\"}",
		"{\"yql\": \"select * from sources * where true\", \"ranking.profile\": \"q\","
		" \"input.query(q)\": \"embed( e5 , 'Hello world' )\"}",
		"{\"yql\": \"select * from sources * where true\", \"ranking.profile\": \"q\","
		" \"input.query(q)\": \"embed(e5, @my.text)\", \"my\": {\"text\": \"Hello world\"}}",
	};
	for (size_t i = 0; i < sizeof reqs / sizeof *reqs; i++) {
		int rc;
		double r, r8;
		relevance(f, reqs[i], &rc, &err, &r, &r8);
		if (rc)
			fail_msg("query %zu: %s", i, err.msg);
		if (!(fabs(r - want) <= 1e-5) || !(fabs(r8 - want8) <= 1e-5))
			fail_msg("query %zu: relevance %.9g and %.9g, expected %.9g and %.9g", i, r, r8,
			         want, want8);
	}
	struct {
		const char *input, *extra;
		int code;
		const char *msg;
	} bad[] = {
		{ "embed(e5, @text)", "", STRATA_INVALID_ARGUMENT, "'text' is not given" },
		{ "embed(e5, @text)", ", \"text\": 3", STRATA_INVALID_ARGUMENT, "is not a string" },
		{ "embed(e5, words)", "", STRATA_INVALID_ARGUMENT, "quoted string or @parameter" },
		{ "embed(e5, \\\"x\\\"", "", STRATA_INVALID_ARGUMENT, "malformed" },
		{ "embed(\\\"x\\\")", "", STRATA_NOT_FOUND, "exactly one" },
		{ "embed(nope, \\\"x\\\")", "", STRATA_NOT_FOUND, "no embedder 'nope'" },
		{ "embed(remote, \\\"x\\\")", "", STRATA_NOT_IMPLEMENTED, "never downloads" },
		{ "embed(splade, \\\"x\\\")", "", STRATA_TYPE, "query input 'query(q)'" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char req[512];
		snprintf(req, sizeof req,
		         "{\"yql\": \"select * from sources * where true\", \"ranking.profile\": \"q\","
		         " \"input.query(q)\": \"%s\"%s}", bad[i].input, bad[i].extra);
		int rc;
		double r, r8;
		relevance(f, req, &rc, &err, &r, &r8);
		if (rc != bad[i].code || !strstr(err.msg, bad[i].msg))
			fail_msg("%s: got %d %s", bad[i].input, rc, err.msg);
	}
}

/* ---- embed with the elements' dimension ----------------------------------------------------- */

/* input texts | embed colbert context into (context{}, token{}, v[1]):
 * element i's token vectors under context i, each as the embedder gives
 * for the element alone (test_colbert checks those against the tables). */
static void test_embed_array_dim(void **state)
{
	(void)state;
	char *dir = apptest_new("embedder_dim");
	make_app(dir, services_xml);
	char schemas[600];
	snprintf(schemas, sizeof schemas, "%s/schemas", dir);
	apptest_write(schemas, "chunks.sd",
	              "schema chunks {\n"
	              "    document chunks {\n"
	              "        field texts type array<string> { indexing: summary }\n"
	              "        field tok type tensor<int8>(context{}, token{}, v[1]) {\n"
	              "            indexing: input texts | embed colbert context | attribute | summary\n"
	              "        }\n"
	              "    }\n"
	              "}\n");
	struct strata *db;
	struct strata_error err = { 0 };
	if (strata_open(dir, NULL, &db, &err))
		fail_msg("open: %s", err.msg);
	const char *texts[2] = { "Hello, world", "the shoes" };
	if (strata_feed_json(db, "{\"put\": \"id:x:chunks::1\", \"fields\": {\"texts\": "
	                         "[\"Hello, world\", \"the shoes\"]}}", &err))
		fail_msg("feed: %s", err.msg);
	char *doc;
	if (strata_get_json(db, "id:x:chunks::1", &doc, &err))
		fail_msg("get: %s", err.msg);
	json_t *j = json_loads(doc, 0, NULL);
	strata_free(doc);
	const char *const names[3] = { "context", "token", "v" };
	struct eng_ttype t = { BASE_DT_INT8, 3, (int64_t[]){ -1, -1, 1 }, names };
	struct eng_sparse sp;
	if (eng_sparse_from_json(json_object_get(json_object_get(j, "fields"), "tok"), &t, &sp, "tok",
	                         &err))
		fail_msg("%s", err.msg);
	size_t seen = 0;
	for (int i = 0; i < 2; i++) {
		/* the element alone, into (token{}, v[1]) */
		struct eng_ttype te = { BASE_DT_INT8, 2, (int64_t[]){ -1, 1 }, names + 1 };
		json_t *one;
		if (eng_embed_type(db, "colbert", texts[i], strlen(texts[i]), 0, &te, "f", &one, &err))
			fail_msg("%s", err.msg);
		const char *label;
		json_t *v;
		json_object_foreach(json_object_get(one, "blocks"), label, v) {
			size_t b;
			for (b = 0; b < sp.nblocks; b++)
				if (atoi(sp.labels[2 * b]) == i && strcmp(sp.labels[2 * b + 1], label) == 0)
					break;
			assert_true(b < sp.nblocks);
			assert_true(sp.cells[b] == (double)json_integer_value(json_array_get(v, 0)));
			seen++;
		}
		json_decref(one);
	}
	assert_int_equal(seen, sp.nblocks);
	/* [CLS] [unused1] hello world [SEP]; [CLS] [unused1] the shoe ##s [SEP] */
	assert_int_equal(seen, 5 + 6);
	eng_sparse_free(&sp);
	json_decref(j);
	strata_close(db);
	apptest_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tokenizer_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tokenizer_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unigram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hugging_face, setup, teardown),
		cmocka_unit_test_setup_teardown(test_colbert, setup, teardown),
		cmocka_unit_test_setup_teardown(test_splade, setup, teardown),
		cmocka_unit_test_setup_teardown(test_token_ids, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deploy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unavailable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_types, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
		cmocka_unit_test(test_services_errors),
		cmocka_unit_test_setup_teardown(test_query_input, setup, teardown),
		cmocka_unit_test(test_embed_array_dim),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
