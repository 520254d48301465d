/*
 * samematch.c: f contains sameElement("a", "b c") on a field with a text
 * index, as Vespa matches it on an array of strings: a document matches
 * when one element holds every string, each string's words in a row (a
 * string of several words is a phrase).  The strings are tokenized the way
 * the field's values were and their terms' posting lists opened before the
 * scan; a string's occurrences are the positions where its first term
 * starts its phrase, and the index's element table
 * (store_text_element) says in which element each lies.  A string field
 * is one element.  sameElement adds nothing to rank features.
 */
#include <string.h>

#include "../engine_int.h"

#define MAX_SAME 16      /* sameElement conditions of one query */
#define MAX_STRINGS 16   /* strings of one sameElement */
#define MAX_WORDS 16     /* terms of one string */
#define MAX_OCC 256      /* occurrences of a string looked at in one document */

struct sstring {
	int nterms;                          /* 0: a string with no term, never found */
	struct store_postings *pl[MAX_WORDS];
};

struct sitem {
	const struct yql_node *n;
	int nstr;
	struct sstring str[MAX_STRINGS];
};

struct eng_same {
	struct store_txn *txn;
	const struct eng_doctype *dt;
	struct strata_error *err;    /* while opening */
	struct base_tokenizer *tk;   /* while opening */
	int n;
	struct sitem item[MAX_SAME];
};

int eng_same_check(const struct eng_doctype *dt, const struct yql_node *n,
                   struct strata_error *err)
{
	if (!dt->fields[n->fidx].text)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "yql:1:%d: sameElement needs a field with a text index (an array of "
		                "strings with indexing: index); '%s' has none", n->col, n->field);
	if (n->nvals > MAX_STRINGS)
		return base_err(err, STRATA_LIMIT, "yql:1:%d: more than %d strings in sameElement",
		                n->col, MAX_STRINGS);
	return 0;
}

static int open_item(struct eng_same *s, struct base_tokenizer *tk, const struct yql_node *n,
                     struct strata_error *err)
{
	struct sitem *it = &s->item[s->n++];
	it->n = n;
	int flags = STORE_TEXT_TOKEN_FLAGS(s->dt->fields[n->fidx].text);
	for (int i = 0; i < n->nvals && i < MAX_STRINGS; i++, it->nstr++) {
		struct sstring *str = &it->str[i];
		size_t off = 0, tn;
		const char *t;
		int pos;
		while (base_token_next(tk, n->strs[i], strlen(n->strs[i]), &off, flags, &t, &tn, &pos) > 0) {
			if (str->nterms == MAX_WORDS)
				return base_err(err, STRATA_LIMIT, "yql:1:%d: more than %d words in a string "
				                "of sameElement", n->col, MAX_WORDS);
			int rc = store_postings_open(s->txn, s->dt->store_id, n->fidx, t, tn,
			                             &str->pl[str->nterms], err);
			if (rc)
				return rc;
			str->nterms++;
		}
	}
	return 0;
}

/* yql_each: one condition, or (no ud) the finding that there is one. */
static int open_node(void *ud, const struct yql_node *n)
{
	struct eng_same *s = ud;
	if (!s)
		return 1;
	if (n->fidx < 0)
		return 0;
	if (s->n == MAX_SAME)
		return base_err(s->err, STRATA_LIMIT, "yql:1:%d: more than %d sameElement conditions",
		                n->col, MAX_SAME);
	return open_item(s, s->tk, n, s->err);
}

int eng_same_open(struct store_txn *txn, const struct eng_doctype *dt,
                  const struct yql_node *where, struct eng_same **out, struct strata_error *err)
{
	*out = NULL;
	if (!yql_each(where, YQL_SAME, open_node, NULL))
		return 0;
	struct eng_same *s = base_calloc(1, sizeof *s);
	if (!s)
		return base_nomem(err, "sameElement conditions");
	s->txn = txn;
	s->dt = dt;
	s->err = err;
	int rc = base_tokenizer_new(&s->tk, err);
	if (!rc)
		rc = yql_each(where, YQL_SAME, open_node, s);
	base_tokenizer_free(s->tk);
	s->tk = NULL;
	if (rc) {
		eng_same_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void eng_same_close(struct eng_same *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		for (int k = 0; k < s->item[i].nstr; k++)
			for (int t = 0; t < s->item[i].str[k].nterms; t++)
				store_postings_close(s->item[i].str[k].pl[t]);
	base_free(s, sizeof *s);
}

/* The elements of lid where string str occurs (its terms in a row), into
 * elems (at most MAX_OCC, increasing); their number. */
static int elements_of(struct eng_same *s, const struct yql_node *n, const struct sstring *str,
                       uint32_t lid, uint32_t *elems)
{
	if (!str->nterms)
		return 0;
	for (int t = 0; t < str->nterms; t++) {
		uint32_t at = lid;
		if (store_postings_seek(str->pl[t], &at) != 0 || at != lid)
			return 0;
	}
	uint32_t start[MAX_OCC];
	uint32_t ns = eng_phrase_starts(str->pl, str->nterms, MAX_OCC, start, MAX_OCC);
	/* the phrase's starts' elements, read from one element table */
	uint32_t e[MAX_OCC];
	int32_t w[MAX_OCC];
	if (!ns || store_text_elements(s->txn, s->dt->store_id, n->fidx, lid, start, ns, e, w, NULL))
		return 0;
	int ne = 0;
	for (uint32_t k = 0; k < ns; k++)
		if (e[k] != UINT32_MAX && (!ne || elems[ne - 1] != e[k]))
			elems[ne++] = e[k];
	return ne;
}

int eng_same_match(struct eng_same *s, const struct yql_node *n, uint32_t lid)
{
	const struct sitem *it = NULL;
	for (int i = 0; s && i < s->n && !it; i++)
		if (s->item[i].n == n)
			it = &s->item[i];
	if (!it || !it->nstr)
		return 0;
	/* the elements of the first string, kept while every other has them */
	uint32_t cand[MAX_OCC], other[MAX_OCC];
	int nc = elements_of(s, n, &it->str[0], lid, cand);
	for (int k = 1; k < it->nstr && nc; k++) {
		int no = elements_of(s, n, &it->str[k], lid, other), keep = 0;
		for (int a = 0, b = 0; a < nc && b < no;) {
			if (cand[a] == other[b]) {
				cand[keep++] = cand[a];
				a++, b++;
			} else if (cand[a] < other[b]) {
				a++;
			} else {
				b++;
			}
		}
		nc = keep;
	}
	return nc > 0;
}

/* ---- the sameElement operator ------------------------------------------------------ */

static int same_match(struct eng_match *m, const struct yql_node *n, uint32_t lid)
{
	return eng_same_match(m->same, n, lid);
}

const struct eng_op eng_op_same = { "sameElement", 0, eng_same_check, same_match, NULL };
