/*
 * selection_eval.c: a parsed document selection (selection.c) evaluated
 * against one stored document, as Vespa's document selection language
 * defines it.
 *
 * Conditions are three-valued: true, false and invalid.  A comparison is
 * invalid when it makes no sense (an order between a number and a string,
 * an operator other than == and != on null, a field of another document
 * type, a struct or tensor compared with anything but null); "and" is
 * false when one side is, else invalid when one side is; "or" is true when
 * one side is, else invalid when one side is; "not" keeps invalid.  The
 * whole selection matches only when it is true.
 *
 * Values: null (a field not set, a path that leads nowhere), integers
 * (int, long, byte, bool as 0 and 1), floats, strings, and the elements of
 * an array field or the keys of a weighted set or map field: a comparison
 * with those is made with each in turn and holds when it holds for one.
 * Integers and floats compare by value; == between a number and a string
 * is false.  '=' is a glob ('*' any run of bytes, '?' one byte) between
 * strings and == otherwise; '=~' a POSIX extended regular expression that
 * may match anywhere in the string, never matching anything but a string.
 * Arithmetic: + - * / % on numbers (integers stay integers; a division by
 * zero is invalid), + also joins strings.  Strings made here live in the
 * evaluation's arena; the JSON of collection fields in a list released at
 * the end.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../engine_int.h"

enum { V_INVALID = 0, V_NULL, V_INT, V_FLOAT, V_STRING, V_LIST, V_OTHER };
enum { T_FALSE = 0, T_TRUE = 1, T_INVALID = -1 };

struct val {
	int t;
	int64_t i;
	double d;
	const char *s;
	size_t n;
	const json_t *list; /* V_LIST: an array (its elements) or an object (its keys) */
	int numkeys;        /* V_LIST of an object: the keys are numbers */
};

struct ctx {
	const struct eng_doctype *dt;
	const char *id;
	const struct store_value *vals;
	int64_t now;
	struct base_arena arena;
	json_t *keep;       /* JSON values whose strings the values point into */
	struct strata_error *err;
	int rc;             /* STRATA_NOMEM once memory ran out: the result is void */
};

static int nomem(struct ctx *c)
{
	if (!c->rc)
		c->rc = base_nomem(c->err, "selection");
	return T_INVALID;
}

/* ---- values from JSON --------------------------------------------------------------------- */

static void from_json(const json_t *j, struct val *v)
{
	memset(v, 0, sizeof *v);
	if (!j || json_is_null(j)) {
		v->t = V_NULL;
	} else if (json_is_integer(j)) {
		v->t = V_INT;
		v->i = json_integer_value(j);
	} else if (json_is_real(j)) {
		v->t = V_FLOAT;
		v->d = json_real_value(j);
	} else if (json_is_boolean(j)) {
		v->t = V_INT;
		v->i = json_is_true(j);
	} else if (json_is_string(j)) {
		v->t = V_STRING;
		v->s = json_string_value(j);
		v->n = json_string_length(j);
	} else if (json_is_array(j)) {
		v->t = V_LIST;
		v->list = j;
	} else {
		v->t = V_OTHER; /* a struct, a position, a tensor */
	}
}

/* j kept alive until the evaluation ends; NULL when that failed. */
static json_t *keep(struct ctx *c, json_t *j)
{
	if (!j || json_array_append_new(c->keep, j)) {
		nomem(c);
		return NULL;
	}
	return j;
}

/* Follow path (".m", "[N]", "{k}" parts) into j.  A struct member of an
 * array is taken from each element. */
static const json_t *follow(struct ctx *c, const json_t *j, const char *path)
{
	while (j && *path) {
		const char *p = path + 1;
		size_t n = strcspn(p, *path == '.' ? ".[{" : *path == '[' ? "]" : "}");
		char key[256];
		snprintf(key, sizeof key, "%.*s", (int)n, p);
		if (*path == '.' && json_is_array(j)) {
			json_t *each = keep(c, json_array());
			size_t i;
			const json_t *e;
			if (!each)
				return NULL;
			json_array_foreach((json_t *)j, i, e) {
				const json_t *m = json_is_object(e) ? json_object_get(e, key) : NULL;
				if (m && json_array_append((json_t *)each, (json_t *)m)) {
					nomem(c);
					return NULL;
				}
			}
			j = each;
		} else if (*path == '[') {
			j = json_is_array(j) ? json_array_get(j, (size_t)strtoull(key, NULL, 10)) : NULL;
		} else {
			j = json_is_object(j) ? json_object_get(j, key) : NULL;
		}
		path = p + n + (*path != '.');
	}
	return j;
}

static int numeric_type(int t)
{
	return t == RANK_FT_INT || t == RANK_FT_LONG || t == RANK_FT_FLOAT || t == RANK_FT_DOUBLE ||
	       t == RANK_FT_BOOL;
}

static void field_value(struct ctx *c, const struct eng_sel_node *n, struct val *v)
{
	memset(v, 0, sizeof *v);
	if (n->dt != c->dt) {
		v->t = V_INVALID; /* a field of another document type */
		return;
	}
	const struct store_value *sv = &c->vals[n->fi];
	const struct store_field *f = &c->dt->fields[n->fi];
	const struct rank_field *rf = rank_schema_field(c->dt->schema, n->fi);
	if (!sv->set) {
		v->t = V_NULL;
		return;
	}
	if (!n->s && !eng_typed_field(rf)) {
		switch (f->type) {
		case STORE_T_STRING:
			v->t = V_STRING, v->s = sv->s, v->n = sv->n;
			return;
		case STORE_T_INT: case STORE_T_LONG: case STORE_T_BOOL:
			v->t = V_INT, v->i = sv->i;
			return;
		case STORE_T_FLOAT: case STORE_T_DOUBLE:
			v->t = V_FLOAT, v->d = sv->d;
			return;
		case STORE_T_TENSOR:
			v->t = V_OTHER;
			return;
		}
	}
	json_t *j = keep(c, eng_field_json(c->dt, n->fi, sv));
	if (!j)
		return; /* V_INVALID; c->rc says why */
	if (!n->s && json_is_object(j) && (rf->type == RANK_FT_WSET || rf->type == RANK_FT_MAP)) {
		v->t = V_LIST;
		v->list = j;
		v->numkeys = numeric_type(rf->type == RANK_FT_WSET ? rf->vtype->elem->type
		                                                   : rf->vtype->key->type);
		return;
	}
	from_json(n->s ? follow(c, j, n->s) : j, v);
	if (c->rc)
		v->t = V_INVALID;
}

/* ---- document ids --------------------------------------------------------------------------- */

/* Part part of the id "id:NS:TYPE:KV:SPECIFIC" (checked when it was fed). */
static void id_value(struct ctx *c, int part, struct val *v)
{
	const char *id = c->id;
	const char *ns = id + 3, *type = strchr(ns, ':') + 1, *kv = strchr(type, ':') + 1;
	const char *specific = strchr(kv, ':') + 1;
	memset(v, 0, sizeof *v);
	v->t = V_STRING;
	switch (part) {
	case ENG_SEL_ID_ALL: v->s = id, v->n = strlen(id); break;
	case ENG_SEL_ID_SCHEME: v->s = "id", v->n = 2; break;
	case ENG_SEL_ID_NAMESPACE: v->s = ns, v->n = (size_t)(type - 1 - ns); break;
	case ENG_SEL_ID_TYPE: v->s = type, v->n = (size_t)(kv - 1 - type); break;
	case ENG_SEL_ID_SPECIFIC: v->s = specific, v->n = strlen(specific); break;
	case ENG_SEL_ID_USER:
		if (kv[0] == 'n' && kv[1] == '=')
			v->t = V_INT, v->i = strtoll(kv + 2, NULL, 10);
		else
			v->t = V_NULL;
		break;
	case ENG_SEL_ID_GROUP:
		if (kv[0] == 'g' && kv[1] == '=')
			v->s = kv + 2, v->n = (size_t)(specific - 1 - kv - 2);
		else
			v->t = V_NULL;
		break;
	}
}

/* ---- arithmetic ----------------------------------------------------------------------------- */

static int is_num(const struct val *v)
{
	return v->t == V_INT || v->t == V_FLOAT;
}

static double num(const struct val *v)
{
	return v->t == V_INT ? (double)v->i : v->d;
}

static void value(struct ctx *c, const struct eng_sel_node *n, struct val *v);

static void arith(struct ctx *c, const struct eng_sel_node *n, struct val *v)
{
	struct val a, b;
	value(c, n->a, &a);
	value(c, n->b, &b);
	memset(v, 0, sizeof *v);
	if (n->op == '+' && a.t == V_STRING && b.t == V_STRING) {
		char *s = base_arena_alloc(&c->arena, a.n + b.n + 1, 1);
		if (!s) {
			nomem(c);
			return;
		}
		memcpy(s, a.s, a.n);
		memcpy(s + a.n, b.s, b.n);
		v->t = V_STRING, v->s = s, v->n = a.n + b.n;
		return;
	}
	if (!is_num(&a) || !is_num(&b))
		return; /* invalid */
	if (a.t == V_INT && b.t == V_INT) {
		/* Wrapping as two's complement rather than overflowing. */
		uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
		v->t = V_INT;
		switch (n->op) {
		case '+': v->i = (int64_t)(x + y); return;
		case '-': v->i = (int64_t)(x - y); return;
		case '*': v->i = (int64_t)(x * y); return;
		}
		if (b.i == 0 || (a.i == INT64_MIN && b.i == -1)) {
			v->t = V_INVALID;
			return;
		}
		v->i = n->op == '/' ? a.i / b.i : a.i % b.i;
		return;
	}
	double x = num(&a), y = num(&b);
	v->t = V_FLOAT;
	switch (n->op) {
	case '+': v->d = x + y; break;
	case '-': v->d = x - y; break;
	case '*': v->d = x * y; break;
	case '/': v->d = x / y; break;
	default: v->d = fmod(x, y); break;
	}
	if (!isfinite(v->d) && isfinite(x) && isfinite(y))
		v->t = V_INVALID; /* a division by zero */
}

static void func(struct ctx *c, const struct eng_sel_node *n, struct val *v)
{
	value(c, n->a, v);
	if (n->op == 'a') {
		if (v->t == V_INT)
			v->i = v->i < 0 ? (int64_t)(0 - (uint64_t)v->i) : v->i;
		else if (v->t == V_FLOAT)
			v->d = fabs(v->d);
		else
			v->t = V_INVALID;
		return;
	}
	if (v->t != V_STRING) {
		v->t = V_INVALID;
		return;
	}
	char *s = base_arena_alloc(&c->arena, v->n + 1, 1);
	if (!s) {
		v->t = V_INVALID;
		nomem(c);
		return;
	}
	for (size_t i = 0; i < v->n; i++)
		s[i] = (v->s[i] >= 'A' && v->s[i] <= 'Z') ? (char)(v->s[i] - 'A' + 'a') : v->s[i];
	v->s = s;
}

static void value(struct ctx *c, const struct eng_sel_node *n, struct val *v)
{
	memset(v, 0, sizeof *v);
	switch (n->kind) {
	case ENG_SEL_NULL: v->t = V_NULL; break;
	case ENG_SEL_TRUE: v->t = V_INT, v->i = 1; break;
	case ENG_SEL_FALSE: v->t = V_INT, v->i = 0; break;
	case ENG_SEL_INT: v->t = V_INT, v->i = n->i; break;
	case ENG_SEL_FLOAT: v->t = V_FLOAT, v->d = n->d; break;
	case ENG_SEL_STRING: v->t = V_STRING, v->s = n->s, v->n = n->n; break;
	case ENG_SEL_NOW: v->t = V_INT, v->i = c->now; break;
	case ENG_SEL_ID: id_value(c, n->op, v); break;
	case ENG_SEL_FIELD: field_value(c, n, v); break;
	case ENG_SEL_ARITH: arith(c, n, v); break;
	case ENG_SEL_FUNC: func(c, n, v); break;
	default: BASE_DEBUG_ASSERT(0); /* the parser lets only values here */
	}
}

/* ---- comparisons ---------------------------------------------------------------------------- */

/* Whether the n bytes of s match the glob pattern p (pn bytes). */
static int glob(const char *s, size_t n, const char *p, size_t pn)
{
	size_t i = 0, j = 0, star = (size_t)-1, mark = 0;
	while (i < n) {
		if (j < pn && (p[j] == '?' || p[j] == s[i])) {
			i++, j++;
		} else if (j < pn && p[j] == '*') {
			star = j++;
			mark = i;
		} else if (star != (size_t)-1) {
			j = star + 1;
			i = ++mark;
		} else {
			return 0;
		}
	}
	while (j < pn && p[j] == '*')
		j++;
	return j == pn;
}

static int regex_match(struct ctx *c, const regex_t *re, const struct val *a, const struct val *b)
{
	/* regexec reads NUL-terminated strings: copies, as field strings are not. */
	char *s = base_arena_strndup(&c->arena, a->s, a->n);
	if (!s)
		return nomem(c);
	if (re)
		return regexec(re, s, 0, NULL, 0) == 0;
	char *p = base_arena_strndup(&c->arena, b->s, b->n);
	regex_t own;
	if (!p)
		return nomem(c);
	if (base_regex_size(p) > BASE_REGEX_MAX || regcomp(&own, p, REG_EXTENDED | REG_NOSUB))
		return T_INVALID; /* a pattern computed from the document that is no regex */
	int r = regexec(&own, s, 0, NULL, 0) == 0;
	regfree(&own);
	return r;
}

static int compare(struct ctx *c, const struct eng_sel_node *n, const struct val *a,
                   const struct val *b);

/* The comparison of e (an element or key of a collection) with other,
 * folded into r, what the elements before it gave: true once one is. */
static int fold_one(struct ctx *c, const struct eng_sel_node *n, int r, const struct val *e,
                    const struct val *other, int list_left)
{
	int t = list_left ? compare(c, n, e, other) : compare(c, n, other, e);
	return r == T_TRUE || t == T_TRUE ? T_TRUE : r == T_INVALID || t == T_INVALID ? T_INVALID
	                                                                              : T_FALSE;
}

/* A comparison with a collection: with each element (key) in turn. */
static int compare_each(struct ctx *c, const struct eng_sel_node *n, const struct val *list,
                        const struct val *other, int list_left)
{
	int r = T_FALSE;
	struct val e;
	const json_t *x;
	if (json_is_array(list->list)) {
		size_t i;
		json_array_foreach((json_t *)list->list, i, x) {
			from_json(x, &e);
			if ((r = fold_one(c, n, r, &e, other, list_left)) == T_TRUE)
				break;
		}
		return r;
	}
	const char *key;
	json_object_foreach((json_t *)list->list, key, x) {
		memset(&e, 0, sizeof e);
		e.t = V_STRING, e.s = key, e.n = strlen(key);
		if (list->numkeys && (strchr(key, '.') || strchr(key, 'e') || strchr(key, 'E')))
			e.t = V_FLOAT, e.d = strtod(key, NULL);
		else if (list->numkeys)
			e.t = V_INT, e.i = strtoll(key, NULL, 10);
		if ((r = fold_one(c, n, r, &e, other, list_left)) == T_TRUE)
			break;
	}
	return r;
}

static int equal(const struct val *a, const struct val *b)
{
	if (is_num(a) && is_num(b))
		return a->t == V_INT && b->t == V_INT ? a->i == b->i : num(a) == num(b);
	if (a->t == V_STRING && b->t == V_STRING)
		return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
	return a->t == V_NULL && b->t == V_NULL;
}

static int compare(struct ctx *c, const struct eng_sel_node *n, const struct val *a,
                   const struct val *b)
{
	if (a->t == V_INVALID || b->t == V_INVALID)
		return T_INVALID;
	int op = n->op;
	if (a->t == V_LIST && b->t != V_NULL)
		return compare_each(c, n, a, b, 1);
	if (b->t == V_LIST && a->t != V_NULL)
		return compare_each(c, n, b, a, 0);
	int has_null = a->t == V_NULL || b->t == V_NULL;
	if (op == ENG_SEL_GLOB && (a->t != V_STRING || b->t != V_STRING))
		op = ENG_SEL_EQ; /* a glob between other values is == */
	if (op == ENG_SEL_EQ || op == ENG_SEL_NE) {
		/* A struct or tensor is only ever compared with null. */
		if (!has_null && (a->t == V_OTHER || b->t == V_OTHER || a->t == V_LIST ||
		                  b->t == V_LIST))
			return T_INVALID;
		int eq = equal(a, b);
		return op == ENG_SEL_EQ ? eq : !eq;
	}
	if (has_null)
		return T_INVALID;
	if (op == ENG_SEL_GLOB)
		return glob(a->s, a->n, b->s, b->n);
	if (op == ENG_SEL_REGEX)
		return a->t == V_STRING && b->t == V_STRING ? regex_match(c, n->re, a, b) : T_FALSE;
	int order;
	if (is_num(a) && is_num(b)) {
		if (a->t == V_INT && b->t == V_INT)
			order = (a->i > b->i) - (a->i < b->i);
		else if (isnan(num(a)) || isnan(num(b)))
			return T_FALSE;
		else
			order = (num(a) > num(b)) - (num(a) < num(b));
	} else if (a->t == V_STRING && b->t == V_STRING) {
		size_t m = a->n < b->n ? a->n : b->n;
		int r = memcmp(a->s, b->s, m);
		order = r ? (r > 0) - (r < 0) : (a->n > b->n) - (a->n < b->n);
	} else {
		return T_INVALID;
	}
	switch (op) {
	case ENG_SEL_LT: return order < 0;
	case ENG_SEL_LE: return order <= 0;
	case ENG_SEL_GT: return order > 0;
	default: return order >= 0;
	}
}

/* ---- conditions ----------------------------------------------------------------------------- */

static int cond(struct ctx *c, const struct eng_sel_node *n)
{
	struct val a, b;
	int x, y;
	switch (n->kind) {
	case ENG_SEL_TRUE: return T_TRUE;
	case ENG_SEL_FALSE: return T_FALSE;
	case ENG_SEL_DOCTYPE: return n->dt == c->dt;
	case ENG_SEL_FIELD:
		field_value(c, n, &a);
		return a.t == V_INVALID ? T_INVALID : a.t != V_NULL;
	case ENG_SEL_NOT:
		x = cond(c, n->a);
		return x == T_INVALID ? T_INVALID : !x;
	case ENG_SEL_AND:
		if ((x = cond(c, n->a)) == T_FALSE)
			return T_FALSE;
		y = cond(c, n->b);
		return y == T_FALSE ? T_FALSE : x == T_INVALID || y == T_INVALID ? T_INVALID : T_TRUE;
	case ENG_SEL_OR:
		if ((x = cond(c, n->a)) == T_TRUE)
			return T_TRUE;
		y = cond(c, n->b);
		return y == T_TRUE ? T_TRUE : x == T_INVALID || y == T_INVALID ? T_INVALID : T_FALSE;
	case ENG_SEL_CMP:
		value(c, n->a, &a);
		value(c, n->b, &b);
		return compare(c, n, &a, &b);
	}
	BASE_DEBUG_ASSERT(0); /* the parser lets only conditions here */
	return T_INVALID;
}

int eng_sel_eval(const struct eng_sel *s, const struct eng_doctype *dt, const char *id,
                 const struct store_value *vals, int *match, struct strata_error *err)
{
	*match = 0;
	struct ctx c = { .dt = dt, .id = id, .vals = vals, .now = (int64_t)time(NULL), .err = err };
	base_arena_init(&c.arena, 1024);
	if (!(c.keep = json_array())) {
		base_arena_free(&c.arena);
		return base_nomem(err, "selection");
	}
	int r = cond(&c, s->root);
	json_decref(c.keep);
	base_arena_free(&c.arena);
	if (c.rc)
		return c.rc;
	*match = r == T_TRUE;
	return 0;
}

/* ---- test-and-set --------------------------------------------------------------------------- */

int eng_sel_condition(struct strata *db, struct store_txn *w, struct eng_doctype *dt,
                      const char *id, const char *cond, int create, struct strata_error *err)
{
	struct eng_sel *s;
	int rc = eng_sel_parse(db, cond, "condition", &s, err);
	if (rc)
		return rc;
	uint32_t lid;
	if ((rc = store_lookup(w, dt->store_id, id, &lid, err)) != 0) {
		eng_sel_free(s);
		if (rc != STRATA_NOT_FOUND)
			return rc;
		return create ? 0 : base_err(err, STRATA_CONDITION_FAILED,
		                             "document '%s' does not exist", id);
	}
	size_t vsize = (size_t)(dt->nfields + 1) * sizeof(struct store_value);
	struct store_value *vals = base_calloc(1, vsize);
	int match = 0;
	if (!vals)
		rc = base_nomem(err, "document '%s'", id);
	else if ((rc = store_get(w, dt->store_id, lid, vals, err)) == 0 &&
	         (rc = eng_sel_eval(s, dt, id, vals, &match, err)) == 0 && !match)
		rc = base_err(err, STRATA_CONDITION_FAILED,
		              "condition '%.200s' did not match document '%s'", cond, id);
	if (vals)
		base_free(vals, vsize);
	eng_sel_free(s);
	return rc;
}
