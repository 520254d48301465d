/*
 * userquery.c: the parts of a query's where tree that depend on the
 * request and the schema, rewritten before matching.  userQuery() becomes
 * the conditions of the 'query' request parameter, userInput(@p) those of
 * parameter p, in Vespa's simple query language with type all: words and
 * "quoted phrases" that must all match (a leading '+' changes nothing),
 * '-' before one that must not, and field:word for a word in another field
 * than the default index (model.defaultIndex, else "default").  Then a
 * 'contains' on a fieldset becomes an OR over the fieldset's fields.  New
 * nodes live in the query's arena, like the parsed ones.
 */
#include <string.h>

#include "../engine_int.h"

#define MAX_ITEMS 64

static struct yql_node *new_node(struct yql_query *q, int kind, int col)
{
	struct yql_node *n = base_arena_alloc(&q->arena, sizeof *n, 8);
	if (n) {
		memset(n, 0, sizeof *n);
		n->kind = kind;
		n->col = col;
		n->fidx = -1;
	}
	return n;
}

/* The string of request parameter name, or NULL. */
static const char *param(const json_t *req, const char *name)
{
	const json_t *v = eng_request_param(req, name);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Replace n by the conditions of text, words in field index. */
static int parse_user(struct yql_query *q, struct yql_node *n, const char *text, const char *index,
                      struct strata_error *err)
{
	struct yql_node *items[MAX_ITEMS];
	int k = 0, col = n->col;
	const char *p = text ? text : "";
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (!*p)
			break;
		int neg = *p == '-';
		if (*p == '-' || *p == '+')
			p++;
		const char *field = index, *w = p;
		size_t flen = strlen(index), wlen;
		const char *colon = NULL;
		for (const char *c = p; *c && *c != ' ' && *c != '"'; c++)
			if (*c == ':') {
				colon = c;
				break;
			}
		if (colon && colon > p) {
			field = p;
			flen = (size_t)(colon - p);
			p = w = colon + 1;
		}
		if (*p == '"') {
			w = ++p;
			while (*p && *p != '"')
				p++;
			wlen = (size_t)(p - w);
			if (*p)
				p++;
		} else {
			while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
				p++;
			wlen = (size_t)(p - w);
		}
		if (!wlen)
			continue;
		if (k == MAX_ITEMS)
			return base_err(err, STRATA_LIMIT, "query: more than %d words", MAX_ITEMS);
		struct yql_node *c = new_node(q, YQL_CONTAINS, col);
		if (!c || !(c->field = base_arena_strndup(&q->arena, field, flen)) ||
		    !(c->str = base_arena_strndup(&q->arena, w, wlen)))
			return base_nomem(err, "query");
		if (neg) {
			struct yql_node *x = new_node(q, YQL_NOT, col);
			if (!x || !(x->kids = base_arena_alloc(&q->arena, sizeof *x->kids, 8)))
				return base_nomem(err, "query");
			x->kids[0] = c;
			x->nkids = 1;
			c = x;
		}
		items[k++] = c;
	}
	int col0 = n->col;
	memset(n, 0, sizeof *n);
	n->col = col0;
	n->fidx = -1;
	if (!k) { /* no words: nothing matches, as in Vespa */
		n->kind = YQL_FALSE;
		return 0;
	}
	n->kind = YQL_AND;
	if (!(n->kids = base_arena_alloc(&q->arena, (size_t)k * sizeof *n->kids, 8)))
		return base_nomem(err, "query");
	memcpy(n->kids, items, (size_t)k * sizeof *items);
	n->nkids = k;
	return 0;
}

/* contains on fieldset n->field of s: an OR over its fields. */
static int fieldset(struct yql_query *q, struct yql_node *n, const struct rank_schema *s,
                    struct strata_error *err)
{
	const int *fields;
	int nf;
	if (!s || rank_schema_field_index(s, n->field) >= 0 ||
	    (nf = rank_schema_fieldset(s, n->field, &fields)) <= 0)
		return 0;
	struct yql_node **kids = base_arena_alloc(&q->arena, (size_t)nf * sizeof *kids, 8);
	if (!kids)
		return base_nomem(err, "query");
	for (int i = 0; i < nf; i++) {
		struct yql_node *c = new_node(q, YQL_CONTAINS, n->col);
		if (!c)
			return base_nomem(err, "query");
		c->field = (char *)rank_schema_field(s, fields[i])->name;
		c->str = n->str;
		kids[i] = c;
	}
	n->kind = YQL_OR;
	n->field = NULL;
	n->str = NULL;
	n->kids = kids;
	n->nkids = nf;
	return 0;
}

static int walk(struct yql_query *q, struct yql_node *n, const struct eng_request *req,
                const struct rank_schema *s, struct strata_error *err)
{
	int rc = 0;
	if (n->kind == YQL_USERQUERY || n->kind == YQL_USERINPUT) {
		const char *index = req->default_index;
		const char *text = n->kind == YQL_USERQUERY ? req->query
		                   : n->str                 ? param(req->json, n->str)
		                                            : n->field;
		if ((rc = parse_user(q, n, text, index ? index : "default", err)) != 0)
			return rc;
	}
	for (int i = 0; i < n->nkids && !rc; i++)
		rc = walk(q, n->kids[i], req, s, err);
	if (!rc && n->kind == YQL_CONTAINS)
		rc = fieldset(q, n, s, err);
	return rc;
}

int eng_text_expand(struct yql_query *q, const struct eng_request *req,
                    const struct rank_schema *s, struct strata_error *err)
{
	return q->where ? walk(q, q->where, req, s, err) : 0;
}
