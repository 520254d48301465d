/*
 * textmatch.c: 'contains' on a field with a text index.  Before a document
 * type's matching scan, each such condition's string is tokenized the way
 * the field's values were (so "Running" finds "runs" in a stemmed field)
 * and the posting list of each term is opened in the query's read
 * transaction.  The scan visits local ids in increasing order, so every
 * test is a forward seek in each list.  Several terms make a phrase, as in
 * Vespa: the terms at consecutive positions.  A string without any term
 * matches nothing.
 */
#include <string.h>

#include "engine_int.h"

#define MAX_TERMS 32
#define MAX_POS 4096

struct eng_text {
	int nterms;
	struct store_postings *pl[MAX_TERMS];
};

static void text_free(struct eng_text *t)
{
	for (int i = 0; i < t->nterms; i++)
		store_postings_close(t->pl[i]);
	base_free(t, sizeof *t);
}

static int open_one(struct store_txn *txn, const struct eng_doctype *dt, struct yql_node *n,
                    struct base_tokenizer *tk, struct strata_error *err)
{
	int flags = dt->fields[n->fidx].text & ~STORE_TEXT_ON;
	struct eng_text *t = base_calloc(1, sizeof *t);
	if (!t)
		return base_nomem(err, "a text condition");
	size_t off = 0, tn, len = strlen(n->str);
	const char *tok;
	int pos, rc = 0;
	while (base_token_next(tk, n->str, len, &off, flags, &tok, &tn, &pos) > 0) {
		if (t->nterms == MAX_TERMS) {
			rc = base_err(err, STRATA_LIMIT, "yql:1:%d: more than %d words in one 'contains'",
			              n->col, MAX_TERMS);
			break;
		}
		if ((rc = store_postings_open(txn, dt->store_id, n->fidx, tok, tn, &t->pl[t->nterms],
		                              err)) != 0)
			break;
		t->nterms++;
	}
	if (rc) {
		text_free(t);
		return rc;
	}
	n->text = t;
	return 0;
}

static int open_tree(struct store_txn *txn, const struct eng_doctype *dt, struct yql_node *n,
                     struct base_tokenizer *tk, struct strata_error *err)
{
	for (int i = 0; i < n->nkids; i++) {
		int rc = open_tree(txn, dt, n->kids[i], tk, err);
		if (rc)
			return rc;
	}
	if (n->kind == YQL_CONTAINS && n->fidx >= 0 && dt->fields[n->fidx].text)
		return open_one(txn, dt, n, tk, err);
	return 0;
}

int eng_text_open(struct store_txn *txn, const struct eng_doctype *dt, struct yql_node *where,
                  struct strata_error *err)
{
	if (!where)
		return 0;
	struct base_tokenizer *tk;
	int rc = base_tokenizer_new(&tk, err);
	if (rc)
		return rc;
	rc = open_tree(txn, dt, where, tk, err);
	base_tokenizer_free(tk);
	if (rc)
		eng_text_close(where);
	return rc;
}

void eng_text_close(struct yql_node *n)
{
	if (!n)
		return;
	for (int i = 0; i < n->nkids; i++)
		eng_text_close(n->kids[i]);
	if (n->text) {
		text_free(n->text);
		n->text = NULL;
	}
}

/* Whether the terms follow one another somewhere: term i at p + i. */
static int phrase_at(const struct eng_text *t)
{
	static _Thread_local uint32_t pos[MAX_TERMS][MAX_POS];
	uint32_t n[MAX_TERMS];
	for (int i = 0; i < t->nterms; i++) {
		n[i] = store_postings_positions(t->pl[i], pos[i], MAX_POS);
		if (n[i] > MAX_POS)
			n[i] = MAX_POS;
	}
	uint32_t at[MAX_TERMS] = {0};
	for (uint32_t k = 0; k < n[0]; k++) {
		uint32_t p = pos[0][k];
		int i;
		for (i = 1; i < t->nterms; i++) {
			while (at[i] < n[i] && pos[i][at[i]] < p + (uint32_t)i)
				at[i]++;
			if (at[i] == n[i])
				return 0;
			if (pos[i][at[i]] != p + (uint32_t)i)
				break;
		}
		if (i == t->nterms)
			return 1;
	}
	return 0;
}

int eng_text_match(const struct eng_text *t, uint32_t lid)
{
	if (!t->nterms)
		return 0;
	for (int i = 0; i < t->nterms; i++) {
		uint32_t at = lid;
		if (store_postings_seek(t->pl[i], &at) != 0 || at != lid)
			return 0;
	}
	return t->nterms == 1 || phrase_at(t);
}
