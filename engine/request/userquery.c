/*
 * userquery.c: the parts of a query's where tree that depend on the
 * request and the schema, rewritten before matching.  userQuery() becomes
 * the conditions of the 'query' request parameter, userInput(@p) those of
 * parameter p, in Vespa's simple query language with type all: words and
 * "quoted phrases" that must all match (a leading '+' changes nothing),
 * '-' before one that must not, and field:word for a word in another field
 * than the default index (model.defaultIndex, else "default"); model.filter
 * adds its terms to userQuery()'s.  Then a
 * 'contains' on a fieldset becomes an OR over the fieldset's fields.  New
 * nodes live in the query's arena, like the parsed ones.
 */
#include <string.h>

#include "../engine_int.h"

#define MAX_ITEMS 64

/* How one userQuery() or userInput() reads its text. */
struct eng_user_opts {
	struct eng_grammar grammar;
	long target_hits;      /* of weakAnd; -1: Vespa's 100 */
	struct yql_term term;  /* the annotations its words get */
	int allow_empty;       /* no words match nothing, rather than fail */
	const char *what;      /* for messages */
	const struct rank_schema *schema; /* the first searched type's, or NULL */
};

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

static struct yql_node *parent(struct yql_query *q, int kind, int col, struct yql_node **kids,
                               int n)
{
	struct yql_node *p = new_node(q, kind, col);
	if (!p || !(p->kids = base_arena_alloc(&q->arena, (size_t)(n ? n : 1) * sizeof *kids, 8)))
		return NULL;
	memcpy(p->kids, kids, (size_t)n * sizeof *kids);
	p->nkids = n;
	return p;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The items of text in Vespa's simple (or web) syntax, at *p. */
struct items {
	struct yql_node *req[MAX_ITEMS], *opt[MAX_ITEMS], *neg[MAX_ITEMS];
	int nreq, nopt, nneg;
};

static int add_item(struct yql_node **v, int *n, struct yql_node *c, struct strata_error *err)
{
	if (*n == MAX_ITEMS)
		return base_err(err, STRATA_LIMIT, "query: more than %d words", MAX_ITEMS);
	v[(*n)++] = c;
	return 0;
}

/* A contains of word w (wlen bytes) in field (flen bytes), or NULL. */
static struct yql_node *term(struct yql_query *q, int col, const char *field, size_t flen,
                             const char *w, size_t wlen, const struct eng_user_opts *o)
{
	struct yql_node *c = new_node(q, YQL_CONTAINS, col);
	if (!c || !(c->field = base_arena_strndup(&q->arena, field, flen)) ||
	    !(c->str = base_arena_strndup(&q->arena, w, wlen)))
		return NULL;
	c->term = o->term;
	return c;
}

static int parse_simple(struct yql_query *q, int col, const char *p, const char *index,
                        const struct eng_user_opts *o, int web, struct items *it,
                        struct strata_error *err)
{
	int or_next = 0; /* web: the item before was followed by OR */
	for (;;) {
		while (is_space(*p))
			p++;
		if (!*p)
			break;
		if (web && !strncmp(p, "OR", 2) && (is_space(p[2]) || !p[2]) && it->nopt + it->nreq) {
			or_next = 1;
			p += 2;
			continue;
		}
		int neg = *p == '-', plus = *p == '+';
		if (neg || plus)
			p++;
		const char *field = index, *w = p;
		size_t flen = strlen(index), wlen;
		const char *colon = NULL;
		for (const char *c = p; *c && !is_space(*c) && *c != '"'; c++)
			if (*c == ':') {
				colon = c;
				break;
			}
		if (colon && colon > p) {
			field = p;
			flen = (size_t)(colon - p);
			p = w = colon + 1;
		}
		struct eng_user_opts to = *o;
		if (*p == '"') {
			w = ++p;
			while (*p && *p != '"')
				p++;
			wlen = (size_t)(p - w);
			if (*p)
				p++;
		} else {
			while (*p && !is_space(*p))
				p++;
			wlen = (size_t)(p - w);
			if (wlen > 1 && w[wlen - 1] == '*') { /* gr*: a prefix */
				wlen--;
				to.term.prefix = 1;
			}
		}
		if (!wlen)
			continue;
		struct yql_node *c = term(q, col, field, flen, w, wlen, &to);
		if (!c)
			return base_nomem(err, "query");
		int rc;
		if (neg) {
			rc = add_item(it->neg, &it->nneg, c, err);
		} else if (or_next) { /* web: a OR b is one item */
			struct yql_node **last = it->nopt ? &it->opt[it->nopt - 1] : &it->req[it->nreq - 1];
			if ((*last)->kind == YQL_OR) {
				struct yql_node *kids[MAX_ITEMS];
				if ((*last)->nkids == MAX_ITEMS)
					return base_err(err, STRATA_LIMIT, "query: more than %d words", MAX_ITEMS);
				memcpy(kids, (*last)->kids, (size_t)(*last)->nkids * sizeof *kids);
				kids[(*last)->nkids] = c;
				*last = parent(q, YQL_OR, col, kids, (*last)->nkids + 1);
			} else {
				struct yql_node *kids[2] = { *last, c };
				*last = parent(q, YQL_OR, col, kids, 2);
			}
			rc = *last ? 0 : base_nomem(err, "query");
		} else if (plus) {
			rc = add_item(it->req, &it->nreq, c, err);
		} else {
			rc = add_item(it->opt, &it->nopt, c, err);
		}
		or_next = 0;
		if (rc)
			return rc;
	}
	return 0;
}

/* Words of text with no syntax: every run of letters and digits. */
static int parse_none(struct yql_query *q, int col, const char *p, const char *index,
                      const struct eng_user_opts *o, struct items *it, struct strata_error *err)
{
	for (;;) {
		while (*p && (is_space(*p) || strchr("\"+-:*()[]{}!?.,;", *p)))
			p++;
		if (!*p)
			return 0;
		const char *w = p;
		while (*p && !is_space(*p) && !strchr("\"+-:*()[]{}!?.,;", *p))
			p++;
		struct yql_node *c = term(q, col, index, strlen(index), w, (size_t)(p - w), o);
		if (!c)
			return base_nomem(err, "query");
		int rc = add_item(it->opt, &it->nopt, c, err);
		if (rc)
			return rc;
	}
}

/* Whether weakAnd can take c: a single word, no prefix, in a text field or
 * a fieldset. */
static int weak_term(const struct yql_node *c, const struct rank_schema *s,
                     struct base_tokenizer *tk)
{
	if (c->kind != YQL_CONTAINS || c->term.prefix || !s)
		return 0;
	/* one token as the text fields' tokenizer finds them (b2b is three) */
	size_t off = 0, tn, len = strlen(c->str);
	const char *tok;
	int pos, n = 0;
	while (n < 2 && base_token_next(tk, c->str, len, &off, BASE_TOKEN_TEXT, &tok, &tn, &pos) > 0)
		n++;
	if (n != 1)
		return 0;
	int f = rank_schema_field_index(s, c->field);
	const int *fields;
	if (f >= 0)
		return rank_schema_field(s, f)->index;
	int nf = rank_schema_fieldset(s, c->field, &fields);
	for (int i = 0; i < nf; i++)
		if (!rank_schema_field(s, fields[i])->index)
			return 0;
	return nf > 0;
}

/* Replace n by the conditions of text as grammar g reads it, words in field
 * index. */
static int parse_user(struct yql_query *q, struct yql_node *n, const char *text, const char *index,
                      const struct eng_user_opts *o, struct strata_error *err)
{
	struct items it = { 0 };
	int col = n->col, rc;
	const char *p = text ? text : "";
	const struct eng_grammar *g = &o->grammar;
	struct yql_node *pos = NULL;
	if (g->composite == ENG_COMPOSITE_PHRASE) {
		while (is_space(*p))
			p++;
		size_t len = strlen(p);
		while (len && is_space(p[len - 1]))
			len--;
		if (len && !(pos = term(q, col, index, strlen(index), p, len, o)))
			return base_nomem(err, "query");
	} else {
		rc = g->syntax == ENG_SYNTAX_NONE ? parse_none(q, col, p, index, o, &it, err)
		     : parse_simple(q, col, p, index, o, g->syntax == ENG_SYNTAX_WEB, &it, err);
		if (rc)
			return rc;
		struct yql_node *any = NULL;
		if (g->composite == ENG_COMPOSITE_AND) {
			for (int i = 0; i < it.nopt; i++)
				if ((rc = add_item(it.req, &it.nreq, it.opt[i], err)) != 0)
					return rc;
			it.nopt = 0;
		} else if (it.nopt == 1) {
			any = it.opt[0];
		} else if (it.nopt) {
			int kind = g->composite == ENG_COMPOSITE_OR ? YQL_OR : YQL_WEAKAND;
			/* weakAnd takes single words of text fields; over others it is
			 * the or it approximates, exact */
			struct base_tokenizer *tk = NULL;
			if (kind == YQL_WEAKAND && (rc = base_tokenizer_new(&tk, err)) != 0)
				return rc;
			for (int i = 0; i < it.nopt && kind == YQL_WEAKAND; i++)
				if (!weak_term(it.opt[i], o->schema, tk))
					kind = YQL_OR;
			base_tokenizer_free(tk);
			if (!(any = parent(q, kind, col, it.opt, it.nopt)))
				return base_nomem(err, "query");
			any->target_hits = o->target_hits > 0 ? o->target_hits : YQL_WEAKAND_TARGET;
		}
		struct yql_node *all = it.nreq == 1 ? it.req[0]
		                       : it.nreq ? parent(q, YQL_AND, col, it.req, it.nreq) : NULL;
		if (it.nreq > 1 && !all)
			return base_nomem(err, "query");
		/* +a b (any, weakAnd): a must match, b only ranks, as Vespa's rank() */
		if (all && any) {
			struct yql_node *kids[2] = { all, any };
			if (!(pos = parent(q, YQL_RANK, col, kids, 2)))
				return base_nomem(err, "query");
		} else {
			pos = all ? all : any;
		}
	}
	for (int i = 0; i < it.nneg; i++) {
		struct yql_node *x = parent(q, YQL_NOT, col, &it.neg[i], 1);
		if (!x)
			return base_nomem(err, "query");
		it.neg[i] = x;
	}
	int col0 = n->col;
	memset(n, 0, sizeof *n);
	n->col = col0;
	n->fidx = -1;
	if (!pos && !it.nneg) { /* no words */
		if (!o->allow_empty)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "yql:1:%d: %s: the query text has no words to search for (Vespa "
			                "refuses it too; annotate {allowEmpty: true} to match nothing)",
			                col0, o->what);
		n->kind = YQL_FALSE;
		return 0;
	}
	if (pos && !it.nneg) {
		*n = *pos;
		return 0;
	}
	struct yql_node *kids[MAX_ITEMS + 1];
	int k = 0;
	if (pos)
		kids[k++] = pos;
	memcpy(kids + k, it.neg, (size_t)it.nneg * sizeof *kids);
	k += it.nneg;
	n->kind = YQL_AND;
	if (!(n->kids = base_arena_alloc(&q->arena, (size_t)k * sizeof *kids, 8)))
		return base_nomem(err, "query");
	memcpy(n->kids, kids, (size_t)k * sizeof *kids);
	n->nkids = k;
	return 0;
}

/* model.filter over userQuery() n, as Vespa reads it: the filter in the
 * simple syntax, its +words and "phrases" required (as filters: matched,
 * not ranked), its -words excluded, its other words ranking only:
 * rank(n and +... and !-..., words...). */
static int add_filter(struct yql_query *q, struct yql_node *n, const char *filter,
                      const char *index, const struct eng_user_opts *uo, struct strata_error *err)
{
	struct items it = { 0 };
	struct eng_user_opts o = *uo;
	int rc = parse_simple(q, n->col, filter, index, &o, 0, &it, err);
	if (rc)
		return rc;
	struct yql_node *all[2 * MAX_ITEMS + 1], *ranked[MAX_ITEMS + 1];
	int na = 0, nr = 0;
	struct yql_node *self = new_node(q, YQL_TRUE, n->col);
	if (!self)
		return base_nomem(err, "model.filter");
	*self = *n;
	all[na++] = self;
	ranked[nr++] = NULL; /* the and, below */
	for (int i = 0; i < it.nreq; i++)
		all[na++] = it.req[i];
	for (int i = 0; i < it.nopt; i++) /* a phrase filters; a word ranks */
		if (it.opt[i]->str && strchr(it.opt[i]->str, ' '))
			all[na++] = it.opt[i];
		else
			ranked[nr++] = it.opt[i];
	for (int i = 0; i < na; i++)
		if (i && all[i]->kind == YQL_CONTAINS)
			all[i]->term.unranked = 1;
	for (int i = 0; i < it.nneg; i++)
		if (!(all[na++] = parent(q, YQL_NOT, n->col, &it.neg[i], 1)))
			return base_nomem(err, "model.filter");
	struct yql_node *and = na == 1 ? self : parent(q, YQL_AND, n->col, all, na);
	if (!and)
		return base_nomem(err, "model.filter");
	ranked[0] = and;
	struct yql_node *top = nr == 1 ? and : parent(q, YQL_RANK, n->col, ranked, nr);
	if (!top)
		return base_nomem(err, "model.filter");
	*n = *top;
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
		c->term = n->term;
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
                const struct rank_schema *s, int *filtered, struct strata_error *err)
{
	int rc = 0;
	if (n->kind == YQL_USERQUERY || n->kind == YQL_USERINPUT) {
		int is_query = n->kind == YQL_USERQUERY;
		struct eng_user_opts o = { .grammar = req->grammar, .target_hits = n->target_hits,
		                           .term = n->term, .allow_empty = 1, .schema = s };
		const char *index = req->default_index;
		const char *text = req->query;
		o.what = "userQuery()";
		if (n->kind == YQL_USERINPUT) {
			const struct yql_user *u = n->user;
			o.what = "userInput()";
			text = n->str ? param(req->json, n->str) : n->field;
			if (n->str && !text)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "yql:1:%d: userInput(@%s): the request has no parameter '%s'",
				                n->col, n->str, n->str);
			/* Vespa's userInput() reads weakAnd over the simple syntax unless
			 * annotated; the request's model.type is userQuery()'s */
			eng_grammar_named("weakAnd", &o.grammar);
			o.allow_empty = 0;
			if (u) {
				if (u->grammar)
					o.grammar = u->grammar_of;
				if (u->default_index)
					index = u->default_index;
				o.allow_empty = u->allow_empty;
				if (u->raw) { /* the text as one term, unparsed */
					o.grammar.composite = ENG_COMPOSITE_PHRASE;
				}
			}
		}
		if ((rc = parse_user(q, n, text, index ? index : "default", &o, err)) != 0)
			return rc;
		if (is_query && req->filter) {
			if (!text || !*text)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "model.filter: it filters userQuery()'s matches, and the "
				                "request has no model.queryString (query) to match");
			o.term = (struct yql_term){ 0 };
			if ((rc = add_filter(q, n, req->filter, index ? index : "default", &o, err)) != 0)
				return rc;
			(*filtered)++;
		}
	}
	for (int i = 0; i < n->nkids && !rc; i++)
		rc = walk(q, n->kids[i], req, s, filtered, err);
	if (!rc && n->kind == YQL_CONTAINS)
		rc = fieldset(q, n, s, err);
	return rc;
}

int eng_text_expand(struct yql_query *q, const struct eng_request *req,
                    const struct rank_schema *s, struct strata_error *err)
{
	int filtered = 0;
	int rc = q->where ? walk(q, q->where, req, s, &filtered, err) : 0;
	if (!rc && req->filter && !filtered)
		return base_err(err, STRATA_INVALID_ARGUMENT,
		                "model.filter: it filters userQuery()'s matches, and the YQL has no "
		                "userQuery()");
	return rc;
}
