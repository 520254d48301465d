/*
 * tokenizer.c: the tokenizers of embedding models, read from a HuggingFace
 * tokenizer.json (a WordPiece or a Unigram model) or a BERT vocab.txt.
 *
 * WordPiece (BERT and its kin) goes through three steps, as HuggingFace's
 * tokenizers library does them with the BERT normalizer and pre-tokenizer:
 *   1. normalize: control characters dropped, white space made a space,
 *      CJK ideographs set apart as words of their own, accents stripped
 *      (canonical decomposition, combining marks dropped: Latin-1, Latin
 *      Extended-A, Greek and a few others here, and U+0300..U+036F),
 *      lowercase;
 *   2. split at white space, every punctuation character a word of its own;
 *   3. WordPiece per word: the longest vocabulary entry that starts the
 *      word, then the longest "##" entry that continues it, and so on; a
 *      word with a part no entry matches, or longer than
 *      max_input_chars_per_word, is one [UNK].
 * Unigram (SentencePiece: XLM-R, the multilingual E5 models):
 *   1. normalize: the precompiled character map (SentencePiece's compiled
 *      NFKC rules, a double-array trie matched longest first), then the
 *      Replace, Strip and Lowercase steps the file lists;
 *   2. Metaspace: spaces become U+2581, one in front, and the text splits
 *      before each (or at white space first, with WhitespaceSplit);
 *   3. per word, the pieces whose scores sum highest (Viterbi); a
 *      character no piece covers is the unknown piece (scored 10 below the
 *      lowest), and unknowns in a row are one.
 * Before either, the added tokens written in the text as they are ("[SEP]",
 * "<s>": the file's special ones and those it does not normalize; BERT's
 * five for a vocab.txt) are taken out as their ids, longest first, with the
 * white space lstrip and rstrip ask for; the parts between are tokenized
 * one by one.  The special tokens around a text ([CLS] ... [SEP], <s> ...
 * </s>) are the post-processor's; embed.c adds them, so that it can
 * truncate in between.
 *
 * A loaded tokenizer is immutable: any number of threads may encode with
 * it at once.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine_int.h"

#define VOCAB_MAX (1 << 22)
#define WORD_BYTES 1024

enum { TOK_WORDPIECE = 1, TOK_UNIGRAM };
enum { SP_SPECIAL = 1, SP_LSTRIP = 2, SP_RSTRIP = 4, SP_RAW = 8 };
#define NORM_MAX (1 << 26)      /* bytes of a normalized text */
#define METASPACE "\xe2\x96\x81" /* U+2581 */

struct eng_tokenizer {
	int model;              /* TOK_* */
	size_t nvocab;          /* ids 0 .. nvocab-1 (a gap is NULL) */
	char **tok;
	unsigned char *special; /* per id: SP_* */
	size_t hcap;            /* a power of two */
	int64_t *hash;          /* ids by hash of their token; -1 empty */
	int64_t unk;            /* -1: none */
	char prefix[16];        /* continuing_subword_prefix */
	long max_chars;         /* max_input_chars_per_word */
	int lowercase, strip, chinese, clean;
	int64_t cls[4], sep[4];
	int ncls, nsep;
	long max_length;
	/* Unigram */
	double *score;          /* per id */
	double unk_score;
	size_t max_piece;       /* bytes of the longest piece */
	uint32_t *trie;         /* the precompiled character map: double array */
	size_t ntrie;
	char *norm;             /* its replacements, NUL-terminated, nnorm bytes */
	size_t nnorm;
	int collapse;           /* Replace " {2,}" with " " */
	int strip_left, strip_right;
	int ws_split;           /* WhitespaceSplit before Metaspace */
	int prepend;            /* Metaspace: 0 never, 1 first, 2 always */
	int meta_split;         /* Metaspace splits before each U+2581 */
	/* added tokens matched in the raw text before anything else */
	int64_t *raw;           /* their ids, longest content first */
	size_t nraw;
	unsigned char raw_first[32]; /* bitmap of their first bytes */
};

/* The per-id tables have room for one id at least. */
static size_t slots(const struct eng_tokenizer *w)
{
	return w->nvocab ? w->nvocab : 1;
}

void eng_tokenizer_free(struct eng_tokenizer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nvocab; i++)
		base_strfree(w->tok[i]);
	if (w->tok)
		base_free(w->tok, slots(w) * sizeof *w->tok);
	if (w->special)
		base_free(w->special, slots(w));
	if (w->hash)
		base_free(w->hash, w->hcap * sizeof *w->hash);
	if (w->score)
		base_free(w->score, slots(w) * sizeof *w->score);
	if (w->trie)
		base_free(w->trie, w->ntrie * sizeof *w->trie);
	if (w->norm)
		base_free(w->norm, w->nnorm);
	if (w->raw)
		base_free(w->raw, w->nraw * sizeof *w->raw);
	base_free(w, sizeof *w);
}

static int64_t lookup(const struct eng_tokenizer *w, const char *s, size_t n)
{
	size_t m = w->hcap - 1;
	for (size_t h = base_hash64(s, n, 0) & m;; h = (h + 1) & m) {
		int64_t id = w->hash[h];
		if (id < 0)
			return -1;
		const char *t = w->tok[id];
		if (strlen(t) == n && !memcmp(t, s, n))
			return id;
	}
}

/* Size the tables for ids below nvocab. */
static int tables(struct eng_tokenizer *w, size_t nvocab, const char *path,
                  struct strata_error *err)
{
	w->nvocab = nvocab;
	w->hcap = 16;
	while (w->hcap < 2 * nvocab)
		w->hcap *= 2;
	w->tok = base_calloc(slots(w), sizeof *w->tok);
	w->special = base_calloc(slots(w), 1);
	w->hash = base_alloc(w->hcap * sizeof *w->hash);
	if (!w->tok || !w->special || !w->hash)
		return base_nomem(err, "the vocabulary of %s", path);
	memset(w->hash, 0xff, w->hcap * sizeof *w->hash);
	return 0;
}

static int add_token(struct eng_tokenizer *w, const char *s, size_t n, int64_t id,
                     const char *path, struct strata_error *err)
{
	if (id < 0 || (size_t)id >= w->nvocab)
		return base_err(err, STRATA_PARSE, "%s: token id %lld out of range", path, (long long)id);
	if (w->tok[id])
		return base_err(err, STRATA_PARSE, "%s: token id %lld given twice", path, (long long)id);
	if (lookup(w, s, n) >= 0)
		return 0; /* the first one wins */
	if (!(w->tok[id] = base_strndup(s, n)))
		return base_nomem(err, "the vocabulary of %s", path);
	size_t m = w->hcap - 1, h = base_hash64(s, n, 0) & m;
	while (w->hash[h] >= 0)
		h = (h + 1) & m;
	w->hash[h] = id;
	return 0;
}

/* The added tokens matched in the raw text: marked SP_RAW in special[];
 * listed longest first, so that the longest one wins. */
static int raw_list(struct eng_tokenizer *w, const char *path, struct strata_error *err)
{
	for (size_t i = 0; i < w->nvocab; i++)
		w->nraw += (w->special[i] & SP_RAW) != 0;
	if (!w->nraw)
		return 0;
	if (!(w->raw = base_alloc(w->nraw * sizeof *w->raw)))
		return base_nomem(err, "the added tokens of %s", path);
	size_t k = 0;
	for (size_t i = 0; i < w->nvocab; i++)
		if (w->special[i] & SP_RAW) {
			size_t j = k++;
			size_t len = strlen(w->tok[i]);
			for (; j > 0 && strlen(w->tok[w->raw[j - 1]]) < len; j--)
				w->raw[j] = w->raw[j - 1];
			w->raw[j] = (int64_t)i;
			unsigned char c0 = (unsigned char)w->tok[i][0];
			w->raw_first[c0 >> 3] |= (unsigned char)(1 << (c0 & 7));
		}
	return 0;
}

static struct eng_tokenizer *wp_new(void)
{
	struct eng_tokenizer *w = base_calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->unk = -1;
	w->model = TOK_WORDPIECE;
	w->prepend = 2;
	w->meta_split = 1;
	strcpy(w->prefix, "##");
	w->max_chars = 100;
	w->max_length = -1;
	return w;
}

/* vocab.txt: token i on line i; BERT's normalizer, [CLS] text [SEP]. */
static int load_vocab_txt(struct eng_tokenizer *w, const char *text, size_t n, const char *path,
                          struct strata_error *err)
{
	size_t lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += text[i] == '\n';
	if (n && text[n - 1] != '\n')
		lines++;
	if (lines > VOCAB_MAX)
		return base_err(err, STRATA_LIMIT, "%s: more than %d tokens", path, VOCAB_MAX);
	int rc = tables(w, lines, path, err);
	int64_t id = 0;
	for (size_t i = 0; !rc && i < n; id++) {
		const char *e = memchr(text + i, '\n', n - i);
		size_t len = e ? (size_t)(e - (text + i)) : n - i;
		size_t tl = len && text[i + len - 1] == '\r' ? len - 1 : len;
		if (tl)
			rc = add_token(w, text + i, tl, id, path, err);
		i += len + 1;
	}
	if (rc)
		return rc;
	w->lowercase = w->strip = w->chinese = w->clean = 1;
	w->unk = lookup(w, "[UNK]", 5);
	int64_t cls = lookup(w, "[CLS]", 5), sep = lookup(w, "[SEP]", 5);
	const char *sp[] = { "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]" };
	for (int k = 0; k < 5; k++) {
		int64_t s = lookup(w, sp[k], strlen(sp[k]));
		if (s >= 0)
			w->special[s] = SP_SPECIAL | SP_RAW;
	}
	if (cls >= 0)
		w->cls[w->ncls++] = cls;
	if (sep >= 0)
		w->sep[w->nsep++] = sep;
	return raw_list(w, path, err);
}

static int refuse(const char *path, const char *what, const json_t *type, struct strata_error *err)
{
	return base_err(err, STRATA_NOT_IMPLEMENTED, "%s: %s '%s' is not supported", path, what,
	                json_is_string(type) ? json_string_value(type) : "?");
}

static int bool_or(const json_t *j, int dflt)
{
	return json_is_boolean(j) ? json_is_true(j) : dflt;
}

/* Precompiled: a little-endian uint32 byte count of the double array, the
 * array, then the replacement strings. */
static int charsmap(struct eng_tokenizer *w, const json_t *b64, const char *path,
                    struct strata_error *err)
{
	if (!json_is_string(b64))
		return base_err(err, STRATA_PARSE, "%s: Precompiled normalizer without a charsmap", path);
	size_t len = json_string_length(b64), cap = len / 4 * 3 + 1, n = 0;
	unsigned char *b = base_alloc(cap);
	if (!b)
		return base_nomem(err, "the character map of %s", path);
	int rc = base_b64_decode(json_string_value(b64), len, b, &n) >= 0;
	uint32_t tsize = 0;
	if (!rc && n >= 4)
		tsize = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
		        (uint32_t)b[3] << 24;
	if (rc || n < 4 || tsize % 4 || tsize < 4 || tsize > n - 4 || (n - 4 > tsize && b[n - 1])) {
		base_free(b, cap);
		return base_err(err, STRATA_PARSE, "%s: the precompiled_charsmap is damaged", path);
	}
	w->ntrie = tsize / 4;
	w->nnorm = n - 4 - tsize;
	w->trie = base_alloc(w->ntrie * sizeof *w->trie);
	w->norm = w->nnorm ? base_alloc(w->nnorm) : NULL;
	if (!w->trie || (w->nnorm && !w->norm)) {
		base_free(b, cap);
		return base_nomem(err, "the character map of %s", path);
	}
	for (size_t i = 0; i < w->ntrie; i++) {
		const unsigned char *u = b + 4 + 4 * i;
		w->trie[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 |
		             (uint32_t)u[3] << 24;
	}
	if (w->nnorm)
		memcpy(w->norm, b + 4 + tsize, w->nnorm);
	base_free(b, cap);
	return 0;
}

/* The longest key of the character map that starts s[0..n): its length
 * (0: none) and its replacement (*rep).  darts-clone's unit layout: label
 * in the low byte (bit 31 marks a value), bit 8 a value below, the offset
 * to the children above bit 10 (shifted by 8 when bit 9 is set). */
static size_t charsmap_match(const struct eng_tokenizer *w, const unsigned char *s, size_t n,
                             const char **rep)
{
	const uint32_t *a = w->trie;
#define OFFSET(u) (((u) >> 10) << (((u) & (1u << 9)) >> 6))
	size_t best = 0, pos = OFFSET(a[0]);
	for (size_t i = 0; i < n; i++) {
		pos ^= s[i];
		if (pos >= w->ntrie || (a[pos] & ((1u << 31) | 0xff)) != s[i])
			break;
		uint32_t u = a[pos];
		pos ^= OFFSET(u);
		if (pos >= w->ntrie)
			break;
		uint32_t v = a[pos] & 0x7fffffffu;
		if ((u >> 8 & 1) && v < w->nnorm) {
			best = i + 1;
			*rep = w->norm + v;
		}
	}
#undef OFFSET
	return best;
}

/* The normalizer n, or a step of a Sequence of them. */
static int normalizer(struct eng_tokenizer *w, const json_t *n, const char *path,
                      struct strata_error *err)
{
	if (!n || json_is_null(n))
		return 0;
	const json_t *type = json_object_get(n, "type");
	const char *t = json_is_string(type) ? json_string_value(type) : "";
	if (!strcmp(t, "BertNormalizer")) {
		w->clean = bool_or(json_object_get(n, "clean_text"), 1);
		w->chinese = bool_or(json_object_get(n, "handle_chinese_chars"), 1);
		w->lowercase = bool_or(json_object_get(n, "lowercase"), 1);
		w->strip = bool_or(json_object_get(n, "strip_accents"), w->lowercase);
	} else if (!strcmp(t, "Lowercase")) {
		w->lowercase = 1;
	} else if (!strcmp(t, "StripAccents")) {
		w->strip = 1;
	} else if (!strcmp(t, "NFD")) {
		/* what stripping accents needs; by itself it changes no token */
	} else if (!strcmp(t, "Precompiled")) {
		return charsmap(w, json_object_get(n, "precompiled_charsmap"), path, err);
	} else if (!strcmp(t, "Replace")) {
		const json_t *pat = json_object_get(n, "pattern");
		const json_t *re = json_object_get(pat, "Regex"), *str = json_object_get(pat, "String");
		const json_t *to = json_object_get(n, "content");
		if (!json_is_string(to) || strcmp(json_string_value(to), " ") ||
		    !((json_is_string(re) && !strcmp(json_string_value(re), " {2,}")) ||
		      (json_is_string(str) && !strcmp(json_string_value(str), "  "))))
			return base_err(err, STRATA_NOT_IMPLEMENTED,
			                "%s: normalizer 'Replace' is supported for runs of spaces only", path);
		w->collapse = 1;
	} else if (!strcmp(t, "Strip")) {
		w->strip_left = bool_or(json_object_get(n, "strip_left"), 1);
		w->strip_right = bool_or(json_object_get(n, "strip_right"), 1);
	} else if (!strcmp(t, "Sequence")) {
		const json_t *steps = json_object_get(n, "normalizers");
		size_t i;
		const json_t *s;
		json_array_foreach(steps, i, s) {
			int rc = normalizer(w, s, path, err);
			if (rc)
				return rc;
		}
	} else {
		return refuse(path, "normalizer", type, err);
	}
	return 0;
}

static int pre_tokenizer(struct eng_tokenizer *w, const json_t *p, const char *path,
                         struct strata_error *err)
{
	const json_t *type = json_object_get(p, "type");
	const char *t = json_is_string(type) ? json_string_value(type) : "";
	if (w->model == TOK_WORDPIECE && !strcmp(t, "BertPreTokenizer"))
		return 0;
	if (w->model == TOK_UNIGRAM && !strcmp(t, "WhitespaceSplit")) {
		w->ws_split = 1;
		return 0;
	}
	if (w->model == TOK_UNIGRAM && !strcmp(t, "Metaspace")) {
		const json_t *rep = json_object_get(p, "replacement");
		const json_t *scheme = json_object_get(p, "prepend_scheme");
		if (json_is_string(rep) && strcmp(json_string_value(rep), METASPACE))
			return base_err(err, STRATA_NOT_IMPLEMENTED,
			                "%s: Metaspace replacement '%s' is not supported (U+2581 only)", path,
			                json_string_value(rep));
		w->prepend = bool_or(json_object_get(p, "add_prefix_space"), 1) ? 2 : 0;
		if (json_is_string(scheme))
			w->prepend = !strcmp(json_string_value(scheme), "always") ? 2
			             : !strcmp(json_string_value(scheme), "first") ? 1
			                                                            : 0;
		w->meta_split = bool_or(json_object_get(p, "split"), 1);
		return 0;
	}
	if (!strcmp(t, "Sequence")) {
		size_t i;
		const json_t *step;
		json_array_foreach(json_object_get(p, "pretokenizers"), i, step) {
			int rc = pre_tokenizer(w, step, path, err);
			if (rc)
				return rc;
		}
		return 0;
	}
	return refuse(path, "pre-tokenizer", type, err);
}

static int special_id(struct eng_tokenizer *w, const json_t *v, int64_t *id)
{
	if (json_is_integer(v)) {
		*id = json_integer_value(v);
		return (size_t)*id < w->nvocab ? 0 : -1;
	}
	if (json_is_string(v)) {
		*id = lookup(w, json_string_value(v), json_string_length(v));
		return *id >= 0 ? 0 : -1;
	}
	return -1;
}

/* TemplateProcessing's "single" template: the ids before and after "A". */
static int template(struct eng_tokenizer *w, const json_t *p, const char *path,
                    struct strata_error *err)
{
	const json_t *single = json_object_get(p, "single");
	const json_t *specials = json_object_get(p, "special_tokens");
	int after = 0;
	size_t i;
	const json_t *item;
	json_array_foreach(single, i, item) {
		const json_t *st = json_object_get(item, "SpecialToken");
		if (!st) {
			after = 1;
			continue;
		}
		const json_t *name = json_object_get(st, "id");
		const json_t *spec = json_is_string(name) ? json_object_get(specials, json_string_value(name)) : NULL;
		const json_t *ids = json_object_get(spec, "ids");
		size_t k;
		const json_t *idv;
		if (!json_is_array(ids))
			return base_err(err, STRATA_PARSE, "%s: post_processor: special token without ids",
			                path);
		json_array_foreach(ids, k, idv) {
			int64_t id;
			int *nn = after ? &w->nsep : &w->ncls;
			if (special_id(w, idv, &id) || *nn >= 4)
				return base_err(err, STRATA_PARSE, "%s: post_processor: bad special token",
				                path);
			(after ? w->sep : w->cls)[(*nn)++] = id;
		}
	}
	return 0;
}

static int post_processor(struct eng_tokenizer *w, const json_t *p, const char *path,
                          struct strata_error *err)
{
	if (!p || json_is_null(p))
		return 0;
	const json_t *type = json_object_get(p, "type");
	const char *t = json_is_string(type) ? json_string_value(type) : "";
	if (!strcmp(t, "TemplateProcessing"))
		return template(w, p, path, err);
	if (!strcmp(t, "BertProcessing") || !strcmp(t, "RobertaProcessing")) {
		const json_t *cls = json_array_get(json_object_get(p, "cls"), 1);
		const json_t *sep = json_array_get(json_object_get(p, "sep"), 1);
		if (special_id(w, cls, &w->cls[0]) || special_id(w, sep, &w->sep[0]))
			return base_err(err, STRATA_PARSE, "%s: post_processor: bad cls or sep", path);
		w->ncls = w->nsep = 1;
		return 0;
	}
	if (!strcmp(t, "Sequence")) {
		size_t i;
		const json_t *s;
		json_array_foreach(json_object_get(p, "processors"), i, s) {
			const json_t *st = json_object_get(s, "type");
			if (json_is_string(st) && !strcmp(json_string_value(st), "ByteLevel"))
				continue;
			int rc = post_processor(w, s, path, err);
			if (rc)
				return rc;
		}
		return 0;
	}
	return refuse(path, "post-processor", type, err);
}

static int load_wordpiece(struct eng_tokenizer *w, const json_t *model, const char *path,
                          struct strata_error *err)
{
	const json_t *vocab = json_object_get(model, "vocab");
	if (!json_is_object(vocab))
		return base_err(err, STRATA_PARSE, "%s: model.vocab is not an object", path);
	int64_t maxid = -1;
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)vocab, key, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= VOCAB_MAX)
			return base_err(err, STRATA_PARSE, "%s: token '%s' has no valid id", path, key);
		if (json_integer_value(v) > maxid)
			maxid = json_integer_value(v);
	}
	int rc = tables(w, (size_t)(maxid + 1), path, err);
	json_object_foreach((json_t *)vocab, key, v) {
		if (!rc)
			rc = add_token(w, key, strlen(key), json_integer_value(v), path, err);
	}
	if (rc)
		return rc;
	const json_t *unk = json_object_get(model, "unk_token");
	if (json_is_string(unk))
		w->unk = lookup(w, json_string_value(unk), json_string_length(unk));
	const json_t *pre = json_object_get(model, "continuing_subword_prefix");
	if (json_is_string(pre)) {
		if (json_string_length(pre) >= sizeof w->prefix)
			return base_err(err, STRATA_PARSE, "%s: continuing_subword_prefix too long", path);
		strcpy(w->prefix, json_string_value(pre));
	}
	const json_t *mc = json_object_get(model, "max_input_chars_per_word");
	if (json_is_integer(mc))
		w->max_chars = (long)json_integer_value(mc);
	return 0;
}

/* Unigram: "vocab": [[piece, score], ...] (ids in order), "unk_id". */
static int load_unigram(struct eng_tokenizer *w, const json_t *model, const char *path,
                        struct strata_error *err)
{
	w->model = TOK_UNIGRAM;
	const json_t *vocab = json_object_get(model, "vocab");
	if (!json_is_array(vocab) || json_array_size(vocab) > VOCAB_MAX)
		return base_err(err, STRATA_PARSE, "%s: model.vocab is not a list of pieces", path);
	if (json_is_true(json_object_get(model, "byte_fallback")))
		return base_err(err, STRATA_NOT_IMPLEMENTED,
		                "%s: Unigram byte_fallback is not supported", path);
	size_t n = json_array_size(vocab);
	int rc = tables(w, n, path, err);
	if (!rc && !(w->score = base_calloc(slots(w), sizeof *w->score)))
		rc = base_nomem(err, "the vocabulary of %s", path);
	double lowest = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		const json_t *e = json_array_get(vocab, i);
		const json_t *piece = json_array_get(e, 0), *sc = json_array_get(e, 1);
		if (!json_is_string(piece) || !json_is_number(sc) || !json_string_length(piece))
			return base_err(err, STRATA_PARSE, "%s: vocab entry %zu is not [piece, score]",
			                path, i);
		rc = add_token(w, json_string_value(piece), json_string_length(piece), (int64_t)i,
		               path, err);
		w->score[i] = json_number_value(sc);
		if (w->score[i] < lowest)
			lowest = w->score[i];
		if (json_string_length(piece) > w->max_piece)
			w->max_piece = json_string_length(piece);
	}
	if (rc)
		return rc;
	w->unk_score = lowest - 10;
	const json_t *unk = json_object_get(model, "unk_id");
	if (json_is_integer(unk) && (size_t)json_integer_value(unk) < n)
		w->unk = json_integer_value(unk);
	return 0;
}

static int load_json(struct eng_tokenizer *w, const json_t *j, const char *path,
                     struct strata_error *err)
{
	const json_t *model = json_object_get(j, "model");
	const json_t *type = json_object_get(model, "type");
	if (!json_is_object(model))
		return base_err(err, STRATA_PARSE, "%s: no \"model\" object", path);
	const char *mt = json_is_string(type) ? json_string_value(type) : "?";
	int rc;
	if (!strcmp(mt, "Unigram"))
		rc = load_unigram(w, model, path, err);
	else if (!strcmp(mt, "WordPiece"))
		rc = load_wordpiece(w, model, path, err);
	else
		rc = base_err(err, STRATA_NOT_IMPLEMENTED,
		              "%s: tokenizer model type '%s' is not supported (WordPiece and Unigram)",
		              path, mt);
	if (rc)
		return rc;
	size_t i;
	const json_t *at;
	json_array_foreach(json_object_get(j, "added_tokens"), i, at) {
		const json_t *id = json_object_get(at, "id"), *content = json_object_get(at, "content");
		if (!json_is_integer(id) || (size_t)json_integer_value(id) >= w->nvocab)
			continue;
		size_t k = (size_t)json_integer_value(id);
		int special = json_is_true(json_object_get(at, "special"));
		/* matched in the raw text: special ones and those not normalized,
		 * when the vocabulary holds them as they are written */
		int raw = (special || json_is_false(json_object_get(at, "normalized"))) &&
		          json_is_string(content) && json_string_length(content) && w->tok[k] &&
		          !strcmp(w->tok[k], json_string_value(content));
		w->special[k] = (unsigned char)((special ? SP_SPECIAL : 0) | (raw ? SP_RAW : 0) |
		                (json_is_true(json_object_get(at, "lstrip")) ? SP_LSTRIP : 0) |
		                (json_is_true(json_object_get(at, "rstrip")) ? SP_RSTRIP : 0));
	}
	if ((rc = raw_list(w, path, err)) != 0)
		return rc;
	const json_t *tr = json_object_get(j, "truncation");
	const json_t *ml = json_object_get(tr, "max_length");
	const json_t *strat = json_object_get(tr, "strategy");
	if (json_is_integer(ml) && json_integer_value(ml) > 0 && json_is_string(strat) &&
	    !strcmp(json_string_value(strat), "LongestFirst"))
		w->max_length = (long)json_integer_value(ml);
	if ((rc = normalizer(w, json_object_get(j, "normalizer"), path, err)) != 0)
		return rc;
	const json_t *pt = json_object_get(j, "pre_tokenizer");
	if (pt && !json_is_null(pt) && (rc = pre_tokenizer(w, pt, path, err)) != 0)
		return rc;
	return post_processor(w, json_object_get(j, "post_processor"), path, err);
}

int eng_tokenizer_load(const char *path, int vocab_txt, struct eng_tokenizer **out,
                       struct strata_error *err)
{
	*out = NULL;
	char *text;
	size_t n;
	int rc = base_read_file(path, &text, &n, err);
	if (rc == ENOENT)
		return base_err(err, STRATA_NOT_FOUND, "tokenizer file %s not found", path);
	if (rc)
		return rc;
	struct eng_tokenizer *w = wp_new();
	if (!w) {
		base_free(text, n + 1);
		return base_nomem(err, "tokenizer %s", path);
	}
	if (vocab_txt) {
		rc = load_vocab_txt(w, text, n, path, err);
	} else {
		json_error_t je;
		int oom;
		json_t *j = eng_json_parse(text, n, 0, &je, &oom);
		if (!j)
			rc = oom ? base_nomem(err, "reading %s", path)
			         : base_err(err, STRATA_PARSE, "%s:%d:%d: %s", path, je.line, je.column,
			                    je.text);
		else
			rc = load_json(w, j, path, err);
		json_decref(j);
	}
	base_free(text, n + 1);
	if (rc) {
		eng_tokenizer_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* ---- encoding ------------------------------------------------------------------- */

static int is_space(long c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0xa0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200a) || c == 0x202f || c == 0x205f || c == 0x3000;
}

static int is_control(long c)
{
	return c == 0 || c == 0xfffd || (c < 0x20 && !is_space(c)) || (c >= 0x7f && c < 0xa0) ||
	       c == 0xad || (c >= 0x200b && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
	       c == 0xfeff;
}

/* ASCII punctuation and symbols count, as for BERT; beyond ASCII the
 * punctuation blocks. */
static int is_punct(long c)
{
	if (c < 0x80)
		return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
		       (c >= 123 && c <= 126);
	return c == 0xa1 || c == 0xa7 || c == 0xab || c == 0xb6 || c == 0xb7 || c == 0xbb ||
	       c == 0xbf || (c >= 0x2010 && c <= 0x2027) || (c >= 0x2030 && c <= 0x205e) ||
	       (c >= 0x3001 && c <= 0x3003) || (c >= 0x3008 && c <= 0x3011) ||
	       (c >= 0x3014 && c <= 0x301f) || (c >= 0xff01 && c <= 0xff0f && c != 0xff04 &&
	                                        c != 0xff0b) ||
	       (c >= 0xff1a && c <= 0xff20 && c != 0xff1c && c != 0xff1d && c != 0xff1e) ||
	       (c >= 0xff3b && c <= 0xff3f && c != 0xff3e) || c == 0xff5b || c == 0xff5d ||
	       (c >= 0xff5f && c <= 0xff65);
}

static int is_cjk(long c)
{
	return (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf) ||
	       (c >= 0x20000 && c <= 0x2a6df) || (c >= 0x2a700 && c <= 0x2b73f) ||
	       (c >= 0x2b740 && c <= 0x2b81f) || (c >= 0x2b820 && c <= 0x2ceaf) ||
	       (c >= 0xf900 && c <= 0xfaff) || (c >= 0x2f800 && c <= 0x2fa1f);
}

/* The base letters of U+00C0..U+017F under canonical decomposition; '.'
 * where the letter has none (Æ, Ø, Ð, ß, Ł, Œ, ...). */
static const char decomposed[] =
	"AAAAAA.CEEEEIIII" ".NOOOOO..UUUUY.." "aaaaaa.ceeeeiiii" ".nooooo..uuuuy.y"
	"AaAaAaCcCcCcCcDd" "..EeEeEeEeEeGgGg" "GgGgHh..IiIiIiIi" "I...JjKk.LlLlLl."
	"...NnNnNn...OoOo" "Oo..RrRrRrSsSsSs" "SsTtTt..UuUuUuUu" "UuUuWwYyYZzZzZz.";

/* Beyond them: Greek with tonos or dialytika, Cyrillic short i and io,
 * Romanian comma-below letters, pinyin's caron vowels. */
static const long decomposed_more[][2] = {
	{ 0x1cd, 'A' }, { 0x1ce, 'a' }, { 0x1cf, 'I' }, { 0x1d0, 'i' }, { 0x1d1, 'O' },
	{ 0x1d2, 'o' }, { 0x1d3, 'U' }, { 0x1d4, 'u' }, { 0x218, 'S' }, { 0x219, 's' },
	{ 0x21a, 'T' }, { 0x21b, 't' }, { 0x386, 0x391 }, { 0x388, 0x395 }, { 0x389, 0x397 },
	{ 0x38a, 0x399 }, { 0x38c, 0x39f }, { 0x38e, 0x3a5 }, { 0x38f, 0x3a9 }, { 0x390, 0x3b9 },
	{ 0x3aa, 0x399 }, { 0x3ab, 0x3a5 }, { 0x3ac, 0x3b1 }, { 0x3ad, 0x3b5 }, { 0x3ae, 0x3b7 },
	{ 0x3af, 0x3b9 }, { 0x3b0, 0x3c5 }, { 0x3ca, 0x3b9 }, { 0x3cb, 0x3c5 }, { 0x3cc, 0x3bf },
	{ 0x3cd, 0x3c5 }, { 0x3ce, 0x3c9 }, { 0x401, 0x415 }, { 0x419, 0x418 }, { 0x439, 0x438 },
	{ 0x451, 0x435 },
};

static long strip_accent(long c)
{
	if (c >= 0xc0 && c <= 0x17f && decomposed[c - 0xc0] != '.')
		return decomposed[c - 0xc0];
	for (size_t i = 0; c > 0x17f && c <= 0x451 &&
	                   i < sizeof decomposed_more / sizeof *decomposed_more; i++)
		if (decomposed_more[i][0] == c)
			return decomposed_more[i][1];
	return c;
}

struct enc {
	const struct eng_tokenizer *w;
	int64_t *ids;
	size_t max, n;
	char word[WORD_BYTES];
	size_t wn;        /* bytes */
	long wchars;      /* characters */
};

static void emit(struct enc *e, int64_t id)
{
	if (e->n < e->max)
		e->ids[e->n] = id;
	e->n++;
}

/* WordPiece over the word gathered in e. */
static void flush(struct enc *e)
{
	const struct eng_tokenizer *w = e->w;
	size_t n = e->wn;
	long chars = e->wchars;
	e->wn = 0;
	e->wchars = 0;
	if (!n)
		return;
	if (chars > w->max_chars || n >= WORD_BYTES) {
		if (w->unk >= 0)
			emit(e, w->unk);
		return;
	}
	int64_t pieces[WORD_BYTES];
	int np = 0;
	size_t pl = strlen(w->prefix);
	char cand[WORD_BYTES + 16];
	for (size_t start = 0; start < n;) {
		int64_t found = -1;
		size_t end = n;
		for (; end > start; end--) {
			if (end < n && ((unsigned char)e->word[end] & 0xc0) == 0x80)
				continue; /* not at a character boundary */
			size_t cl = 0;
			if (start > 0) {
				memcpy(cand, w->prefix, pl);
				cl = pl;
			}
			memcpy(cand + cl, e->word + start, end - start);
			cl += end - start;
			if ((found = lookup(w, cand, cl)) >= 0)
				break;
		}
		if (found < 0) {
			if (w->unk >= 0)
				emit(e, w->unk);
			return;
		}
		pieces[np++] = found;
		start = end;
	}
	for (int i = 0; i < np; i++)
		emit(e, pieces[i]);
}

static void add_char(struct enc *e, long c)
{
	char b[4];
	size_t k = base_utf8_encode(c, b);
	if (e->wn + k < WORD_BYTES)
		memcpy(e->word + e->wn, b, k);
	e->wn = e->wn + k < WORD_BYTES ? e->wn + k : WORD_BYTES;
	e->wchars++;
}

static void wordpiece_encode(struct enc *e, const char *text, size_t len)
{
	const struct eng_tokenizer *w = e->w;
	for (size_t i = 0; i < len && e->n <= e->max;) {
		size_t k;
		long c = base_utf8_next(text + i, len - i, &k);
		i += k;
		if (c < 0 || (w->clean && is_control(c)))
			continue;
		if (is_space(c)) {
			flush(e);
			continue;
		}
		if ((w->chinese && is_cjk(c)) || is_punct(c)) {
			flush(e);
			add_char(e, w->lowercase ? base_char_lower(c) : c);
			flush(e);
			continue;
		}
		if (w->strip) {
			if (c >= 0x300 && c <= 0x36f)
				continue;
			c = strip_accent(c);
		}
		if (w->lowercase)
			c = base_char_lower(c);
		add_char(e, c);
	}
	flush(e);
}

/* ---- Unigram --------------------------------------------------------------------- */

struct ubuf {
	char *p;
	size_t n, cap;
};

static int ubuf_put(struct ubuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap &&
	    base_grow((void **)&b->p, &b->cap, b->n + n + 1, 1, NORM_MAX))
		return -1;
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
	return 0;
}

/* The normalized text: the character map (longest keys first), lowercase,
 * runs of spaces as one, stripped as asked. */
static int unigram_normalize(const struct eng_tokenizer *w, const char *text, size_t len,
                             struct ubuf *b)
{
	for (size_t i = 0; i < len;) {
		const char *rep;
		size_t m = w->trie ? charsmap_match(w, (const unsigned char *)text + i, len - i, &rep)
		                   : 0;
		if (m) {
			if (ubuf_put(b, rep, strlen(rep)))
				return -1;
			i += m;
			continue;
		}
		size_t k;
		long c = base_utf8_next(text + i, len - i, &k);
		i += k;
		if (c < 0)
			continue;
		if (w->lowercase)
			c = base_char_lower(c);
		char u[4];
		if (ubuf_put(b, u, base_utf8_encode(c, u)))
			return -1;
	}
	if (!b->p && ubuf_put(b, "", 0))
		return -1;
	if (w->collapse) {
		size_t k = 0;
		for (size_t i = 0; i < b->n; i++)
			if (!(b->p[i] == ' ' && k && b->p[k - 1] == ' '))
				b->p[k++] = b->p[i];
		b->n = k;
		b->p[k] = 0;
	}
	size_t start = 0;
	while (w->strip_left && start < b->n && b->p[start] == ' ')
		start++;
	while (w->strip_right && b->n > start && b->p[b->n - 1] == ' ')
		b->p[--b->n] = 0;
	memmove(b->p, b->p + start, b->n - start + 1);
	b->n -= start;
	return 0;
}

/* Viterbi over the n bytes of word: ids out through emit(). */
static void unigram_word(const struct eng_tokenizer *w, const char *word, size_t n, double *best,
                         size_t *prev, int64_t *pid, struct enc *e)
{
	for (size_t i = 0; i <= n; i++)
		best[i] = -INFINITY;
	best[0] = 0;
	for (size_t s = 0; s < n; s++) {
		if (best[s] == -INFINITY || ((unsigned char)word[s] & 0xc0) == 0x80)
			continue;
		size_t cl;
		base_utf8_next(word + s, n - s, &cl);
		int single = 0;
		for (size_t end = s + 1; end <= n && end - s <= w->max_piece; end++) {
			if (end < n && ((unsigned char)word[end] & 0xc0) == 0x80)
				continue;
			int64_t id = lookup(w, word + s, end - s);
			if (id < 0)
				continue;
			single |= end == s + cl;
			double sc = best[s] + w->score[id];
			if (sc > best[end]) {
				best[end] = sc;
				prev[end] = s;
				pid[end] = id;
			}
		}
		if (!single && best[s] + w->unk_score > best[s + cl]) {
			best[s + cl] = best[s] + w->unk_score;
			prev[s + cl] = s;
			pid[s + cl] = -1;
		}
	}
	/* back from the end: the ids in reverse, into the tail of pid */
	size_t k = n + 1, at = n;
	int64_t *rev = pid; /* pid[at] is read before rev[k] is written (k > at) */
	while (at > 0) {
		int64_t id = pid[at];
		size_t p = prev[at];
		if (!(id < 0 && k <= n && rev[k] < 0))
			rev[--k] = id;
		at = p;
	}
	for (; k <= n; k++)
		if (rev[k] >= 0 || w->unk >= 0)
			emit(e, rev[k] < 0 ? w->unk : rev[k]);
}

/* Viterbi's tables for words of up to *cap - 1 bytes, grown to need. */
struct lattice {
	double *best;
	size_t *prev;
	int64_t *pid;
	size_t cap;
};

static void lattice_free(struct lattice *l)
{
	if (l->best)
		base_free(l->best, l->cap * sizeof *l->best);
	if (l->prev)
		base_free(l->prev, l->cap * sizeof *l->prev);
	if (l->pid)
		base_free(l->pid, l->cap * sizeof *l->pid);
	memset(l, 0, sizeof *l);
}

static int lattice_fit(struct lattice *l, size_t need)
{
	if (need <= l->cap)
		return 0;
	size_t cap = need < 64 ? 64 : need;
	lattice_free(l);
	l->best = base_alloc(cap * sizeof *l->best);
	l->prev = base_alloc(cap * sizeof *l->prev);
	l->pid = base_alloc(cap * sizeof *l->pid);
	l->cap = cap;
	if (!l->best || !l->prev || !l->pid) {
		lattice_free(l);
		return -1;
	}
	return 0;
}

/* Words one after the other until more than max ids are out; first: the
 * text starts the sequence (prepend_scheme "first"). */
static int unigram_encode(struct enc *e, const char *text, size_t len, int first,
                          struct strata_error *err)
{
	const struct eng_tokenizer *w = e->w;
	size_t max = e->max;
	struct ubuf t = { 0 }, word = { 0 };
	struct lattice l = { 0 };
	int rc = unigram_normalize(w, text, len, &t) || ubuf_put(&word, "", 0)
	                 ? base_nomem(err, "normalizing a text of %zu bytes", len)
	                 : 0;
	for (size_t i = 0; !rc && i <= t.n && e->n <= max;) {
		/* the next word: to white space (WhitespaceSplit), else the whole text */
		size_t j = i;
		if (w->ws_split) {
			while (i < t.n && is_space((unsigned char)t.p[i]))
				i++;
			j = i;
			while (j < t.n && !is_space((unsigned char)t.p[j]))
				j++;
			if (i == j)
				break;
		} else {
			j = t.n;
			if (!t.n)
				break;
		}
		word.n = 0;
		int pre = w->prepend == 2 || (w->prepend == 1 && first);
		if (pre && strncmp(t.p + i, METASPACE, 3) && ubuf_put(&word, METASPACE, 3))
			rc = base_nomem(err, "tokenizing a text");
		for (size_t k = i; !rc && k < j; k++)
			if (t.p[k] == ' ' ? ubuf_put(&word, METASPACE, 3) : ubuf_put(&word, t.p + k, 1))
				rc = base_nomem(err, "tokenizing a text");
		/* split before each metaspace */
		for (size_t a = 0; !rc && a < word.n && e->n <= max;) {
			size_t b = a + 1;
			while (b < word.n && !(w->meta_split && !strncmp(word.p + b, METASPACE, 3)))
				b++;
			if (lattice_fit(&l, b - a + 1))
				rc = base_nomem(err, "tokenizing a word of %zu bytes", b - a);
			else
				unigram_word(w, word.p + a, b - a, l.best, l.prev, l.pid, e);
			a = b;
		}
		first = 0;
		i = j + (j == t.n);
		if (!w->ws_split)
			break;
	}
	lattice_free(&l);
	if (t.p)
		base_free(t.p, t.cap);
	if (word.p)
		base_free(word.p, word.cap);
	return rc;
}

static int encode_part(struct enc *e, const char *text, size_t len, int first,
                       struct strata_error *err)
{
	if (e->w->model == TOK_UNIGRAM)
		return unigram_encode(e, text, len, first, err);
	wordpiece_encode(e, text, len);
	return 0;
}

static int is_ascii_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Added tokens first, as written in the text (lstrip and rstrip take the
 * white space beside them); the parts between go through the model. */
int eng_tokenizer_encode(const struct eng_tokenizer *w, const char *text, size_t len,
                         int64_t *ids, size_t max, size_t *n, struct strata_error *err)
{
	struct enc e = { .w = w, .ids = ids, .max = max };
	size_t start = 0;
	int rc = 0;
	for (size_t i = 0; w->nraw && !rc && i < len && e.n <= max; i++) {
		unsigned char c0 = (unsigned char)text[i];
		if (!(w->raw_first[c0 >> 3] & (1 << (c0 & 7))))
			continue;
		int64_t id = -1;
		size_t tl = 0;
		for (size_t k = 0; k < w->nraw && id < 0; k++) {
			tl = strlen(w->tok[w->raw[k]]);
			if (tl <= len - i && !memcmp(text + i, w->tok[w->raw[k]], tl))
				id = w->raw[k];
		}
		if (id < 0)
			continue;
		size_t end = i;
		while ((w->special[id] & SP_LSTRIP) && end > start && is_ascii_space(text[end - 1]))
			end--;
		rc = encode_part(&e, text + start, end - start, start == 0, err);
		if (!rc)
			emit(&e, id);
		i += tl;
		while ((w->special[id] & SP_RSTRIP) && i < len && is_ascii_space(text[i]))
			i++;
		start = i--;
	}
	if (!rc && e.n <= max)
		rc = encode_part(&e, text + start, len - start, start == 0, err);
	*n = e.n;
	return rc;
}

const char *eng_tokenizer_token(const struct eng_tokenizer *w, int64_t id)
{
	return id >= 0 && (size_t)id < w->nvocab ? w->tok[id] : NULL;
}

int eng_tokenizer_special(const struct eng_tokenizer *w, int64_t id)
{
	return id >= 0 && (size_t)id < w->nvocab && (w->special[id] & SP_SPECIAL);
}

void eng_tokenizer_specials(const struct eng_tokenizer *w, int64_t cls[4], int *ncls,
                            int64_t sep[4], int *nsep)
{
	memcpy(cls, w->cls, sizeof w->cls);
	memcpy(sep, w->sep, sizeof w->sep);
	*ncls = w->ncls;
	*nsep = w->nsep;
}

long eng_tokenizer_max_length(const struct eng_tokenizer *w)
{
	return w->max_length;
}
