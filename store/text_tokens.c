/*
 * text_tokens.c: a text value's tokens, as the index is built from them;
 * and text tokenized ahead of its write (store_pretext).
 *
 * A write tokenizes each text value into a buffer of records (position,
 * length, bytes; struct store_tok_rec), then makes its postings from them
 * (text.c).  Tokenizing needs nothing of the transaction, so a feed may do
 * it for the next operations on another thread while the writer writes:
 * store_pretext_make() keeps a value's tokens beside a copy of where the
 * value lies, store_txn_pretext() offers such values to a transaction's
 * next write, and the write takes the tokens of a field whose value is the
 * same bytes, with the same settings, instead of tokenizing it again.  An
 * offer that does not match (an indexing expression changed the value, the
 * value is a collection) is ignored: the tokens are the same either way.
 */
#include <string.h>

#include "store_int.h"

#define TBUF_MAX ((size_t)1 << 31) /* bytes of one value's token records */

size_t store_tok_rec_size(size_t n)
{
	return (sizeof(struct store_tok_rec) + n + 7) & ~(size_t)7;
}

static int tgrow(struct store_tokbuf *tb, size_t need, struct strata_error *err)
{
	if (need <= tb->cap)
		return 0;
	if (need > TBUF_MAX)
		return base_err(err, STRATA_LIMIT, "a document's text has too many tokens to index");
	size_t cap = tb->cap ? tb->cap : 4096;
	while (cap < need)
		cap *= 2;
	uint8_t *p = base_realloc(tb->buf, tb->cap, cap);
	if (!p)
		return base_nomem(err, "indexing text");
	tb->buf = p;
	tb->cap = cap;
	return 0;
}

int store_tokenize(struct store_tokbuf *tb, int flags, const char *s, size_t n, uint32_t base,
                   size_t *used, uint32_t *count, struct strata_error *err)
{
	if (!tb->tok) {
		int rc = base_tokenizer_new(&tb->tok, err);
		if (rc)
			return rc;
	}
	size_t off = 0, tn;
	const char *t;
	int pos;
	*count = 0;
	while (base_token_next(tb->tok, s, n, &off, flags, &t, &tn, &pos) > 0) {
		(*count)++;
		if (tn == 0)
			continue;
		size_t sz = store_tok_rec_size(tn);
		int rc = tgrow(tb, *used + sz, err);
		if (rc)
			return rc;
		struct store_tok_rec *r = (struct store_tok_rec *)(tb->buf + *used);
		r->pos = base + (uint32_t)pos;
		r->n = (uint16_t)tn;
		memcpy(r->s, t, tn);
		*used += sz;
	}
	return 0;
}

void store_tokbuf_free(struct store_tokbuf *tb)
{
	base_tokenizer_free(tb->tok);
	base_free(tb->buf, tb->cap);
	*tb = (struct store_tokbuf){0};
}

/* ---- ahead of the write ------------------------------------------------------------ */

struct store_pretext {
	const struct doctype *dt;
	int sf, tf;             /* the stored field and its text settings */
	const char *s;          /* the value (the caller's) */
	size_t n;
	struct store_tokbuf tb; /* its token records: used bytes, count tokens */
	size_t used;
	uint32_t count;
};

int store_pretext_make(struct store_env *env, int doctype, int field, const char *s, size_t n,
                       struct store_pretext **pre, struct strata_error *err)
{
	if (doctype < 0 || doctype >= env->ntypes || !env->types[doctype])
		return base_err(err, STRATA_INVALID_ARGUMENT, "no document type %d", doctype);
	const struct doctype *dt = env->types[doctype];
	if (field < 0 || field >= dt->nuser)
		return base_err(err, STRATA_INVALID_ARGUMENT, "no field %d", field);
	int sf = dt->ufield[field], tf = dt->stored[sf].text;
	if (!tf || (tf & (STORE_TEXT_ARRAY | STORE_TEXT_WSET)))
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "field %d is not a text field of single strings", field);
	struct store_pretext *p = *pre;
	if (!p && !(p = *pre = base_calloc(1, sizeof *p)))
		return base_nomem(err, "indexing text");
	p->dt = NULL; /* matches nothing until made */
	p->used = 0;
	int rc = store_tokenize(&p->tb, STORE_TEXT_TOKEN_FLAGS(tf), s, n, 0, &p->used, &p->count, err);
	if (rc)
		return rc;
	*p = (struct store_pretext){dt, sf, tf, s, n, p->tb, p->used, p->count};
	return 0;
}

void store_pretext_free(struct store_pretext *pre)
{
	if (!pre)
		return;
	store_tokbuf_free(&pre->tb);
	base_free(pre, sizeof *pre);
}

void store_txn_pretext(struct store_txn *w, struct store_pretext *const *pre, int n)
{
	w->pre = n > 0 ? pre : NULL;
	w->npre = n > 0 ? n : 0;
}

int store_pretext_find(const struct store_txn *w, const struct doctype *dt, int sf, const char *s,
                       size_t n, const uint8_t **toks, size_t *used, uint32_t *count)
{
	for (int i = 0; i < w->npre; i++) {
		const struct store_pretext *p = w->pre[i];
		if (p && p->dt == dt && p->sf == sf && p->tf == dt->stored[sf].text && p->n == n &&
		    memcmp(p->s, s, n) == 0) {
			*toks = p->tb.buf;
			*used = p->used;
			*count = p->count;
			return 1;
		}
	}
	return 0;
}
