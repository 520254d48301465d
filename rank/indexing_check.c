/*
 * indexing_check.c: the indexing scripts of a schema's fields, checked
 * once its documents are resolved (docs.c calls rank_indexing_check for
 * each field whose indexing computes a value).  The value of each
 * expression gets a type, as far as it can be known here: a simple type,
 * an array of one, a tensor, or "any" (the input of a script, or what a
 * field of a collection type gives); a value of type "any" is checked when
 * the document is fed.  What must hold for the engine to run a script:
 * every field named exists (inputs are document fields), '.' joins strings
 * or arrays, every sink's field can hold the value written into it, embed
 * reads strings into a tensor field (an array of strings into a tensor
 * with one mapped dimension and indexed ones), pack_bits writes int8
 * cells, chunk reads a string, for_each an array, split's expression
 * compiles.
 */
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "rank_syntax.h"

/* A value's type: t is enum rank_field_type (0: any); an ARRAY's elements
 * are of type elem (0: any); packed: int8 cells made by pack_bits. */
struct ixt {
	int t;
	int elem;
	int packed;
};

struct chk {
	struct rank_sd *sd;
	struct rank_field *f;  /* the field whose script this is */
	struct strata_error *err;
};

static int fail(struct chk *c, const struct rank_ix *n, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(struct chk *c, const struct rank_ix *n, int code, const char *fmt, ...)
{
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return base_err(c->err, code, "%s:%d:%d: %s", c->sd->file, n->line, n->col, msg);
}

static const char *type_name(int t)
{
	static const char *const names[] = {
		"value", "string", "int", "long", "float", "double", "bool", "tensor", "array",
		"weightedset", "map", "struct",
	};
	return t >= 0 && t <= RANK_FT_STRUCT ? names[t] : "value";
}

/* "an array<string>", "a string", ... into buf. */
static const char *ixt_name(struct ixt v, char *buf, size_t n)
{
	const char *t = v.t ? type_name(v.t) : "value of any type";
	const char *a = strchr("aeiou", t[0]) ? "an" : "a";
	if (v.t == RANK_FT_ARRAY && v.elem)
		snprintf(buf, n, "an array<%s>", type_name(v.elem));
	else
		snprintf(buf, n, "%s %s", a, t);
	return buf;
}

static struct rank_field *field_named(struct chk *c, const char *name)
{
	int i = rank_sd_field_index(c->sd, name);
	return i >= 0 ? &c->sd->fields[i] : NULL;
}

static struct ixt field_ixt(const struct rank_field *f)
{
	struct ixt v = {f->type, 0, 0};
	if (f->type == RANK_FT_ARRAY && f->vtype && f->vtype->elem)
		v.elem = f->vtype->elem->type;
	return v;
}

static int is_number(int t)
{
	return t == RANK_FT_INT || t == RANK_FT_LONG || t == RANK_FT_FLOAT || t == RANK_FT_DOUBLE;
}

/* Whether a value of type a fits where type b is held (0: any). */
static int fits(int a, int b)
{
	return !a || !b || a == b || (is_number(a) && is_number(b));
}

static int fits_field(struct ixt v, const struct rank_field *f)
{
	if (!v.t)
		return 1;
	if (f->type == RANK_FT_ARRAY)
		return v.t == RANK_FT_ARRAY && fits(v.elem, field_ixt(f).elem);
	return fits(v.t, f->type);
}

static int check(struct chk *c, struct rank_ix *n, struct ixt in, struct ixt *out);

/* in must be of type want (or any) for what n does. */
static int want(struct chk *c, const struct rank_ix *n, struct ixt in, int t, const char *what)
{
	char b[64];
	if (!in.t || in.t == t)
		return 0;
	struct ixt w = {t, 0, 0};
	char b2[64];
	return fail(c, n, STRATA_TYPE, "%s takes %s, not %s", what, ixt_name(w, b2, sizeof b2),
	            ixt_name(in, b, sizeof b));
}

static int check_embed(struct chk *c, struct rank_ix *n, struct ixt in)
{
	char b[64];
	int array = in.t == RANK_FT_ARRAY;
	if (in.t && in.t != RANK_FT_STRING && !(array && fits(in.elem, RANK_FT_STRING)))
		return fail(c, n, STRATA_TYPE, "embed takes a string or an array of strings, not %s",
		            ixt_name(in, b, sizeof b));
	const struct rank_field *d = field_named(c, n->dest);
	if (!d)
		return fail(c, n, STRATA_TYPE, "embed writes into field '%s', which is not declared",
		            n->dest);
	if (d->type != RANK_FT_TENSOR)
		return fail(c, n, STRATA_TYPE, "embed into field '%s', which is %s, not a tensor",
		            d->name, ixt_name(field_ixt(d), b, sizeof b));
	int mapped = 0, at = -1;
	for (int k = 0; k < d->rank; k++) {
		mapped += d->dims[k] < 0;
		if (n->dim && strcmp(d->dim_names[k], n->dim) == 0 && d->dims[k] < 0)
			at = k;
	}
	if (n->dim && at < 0)
		return fail(c, n, STRATA_TYPE,
		            "embed ... %s: field '%s' has no mapped dimension '%s' for the elements",
		            n->dim, d->name, n->dim);
	if (n->dim && !array && in.t)
		return fail(c, n, STRATA_TYPE,
		            "embed ... %s: the dimension takes the elements of an array of strings, "
		            "not %s", n->dim, ixt_name(in, b, sizeof b));
	/* an array: one mapped dimension and indexed ones, or, with the
	 * elements' dimension named, a second mapped one (an embedder's tokens) */
	if (array && !(mapped == 1 && d->rank >= 2) && !(n->dim && mapped == 2))
		return fail(c, n, STRATA_TYPE,
		            "embedding an array of strings needs a tensor with one mapped dimension "
		            "and indexed ones (tensor<float>(p{}, x[384])), or two mapped ones, the "
		            "one the elements take named (embed id p); field '%s' has another type",
		            d->name);
	if (n->pack && (d->cell != BASE_DT_INT8 || d->dims[d->rank - 1] < 0))
		return fail(c, n, STRATA_TYPE,
		            "embed | pack_bits needs an int8 tensor whose last dimension is indexed; "
		            "field '%s' is not one", d->name);
	return 0;
}

/* A sink: the value in goes into its field. */
static int check_sink(struct chk *c, struct rank_ix *n, struct ixt in)
{
	char b[64], b2[64];
	struct rank_field *t = n->str ? field_named(c, n->str) : c->f;
	if (!t)
		return fail(c, n, STRATA_TYPE, "'%s %s' names no field of '%s'",
		            n->op == 'a' ? "attribute" : n->op == 'i' ? "index" : "summary", n->str,
		            c->sd->name);
	if (!fits_field(in, t))
		return fail(c, n, STRATA_TYPE, "field '%s' of type %s cannot hold %s", t->name,
		            strchr(ixt_name(field_ixt(t), b, sizeof b), ' ') + 1,
		            ixt_name(in, b2, sizeof b2));
	if (in.packed && (t->type != RANK_FT_TENSOR || t->cell != BASE_DT_INT8))
		return fail(c, n, STRATA_TYPE, "pack_bits gives int8 cells; field '%s' has others",
		            t->name);
	if (t == c->f) /* its flags are set (indexing.c) */
		return 0;
	if (n->op == 'a') {
		t->attribute = 1;
	} else if (n->op == 's') {
		t->summary = 1;
	} else if (!t->index && t->type != RANK_FT_TENSOR) {
		return fail(c, n, STRATA_NOT_IMPLEMENTED,
		            "'index %s' in the indexing of field '%s' is not supported (give '%s' its "
		            "own 'indexing: index')", t->name, c->f->name, t->name);
	}
	return 0;
}

static int check_func(struct chk *c, struct rank_ix *n, struct ixt in, struct ixt *out)
{
	char b[64];
	struct ixt s = {RANK_FT_STRING, 0, 0};
	switch (n->op) {
	case RANK_IXF_TO_ARRAY:
		*out = (struct ixt){RANK_FT_ARRAY, in.t == RANK_FT_ARRAY ? 0 : in.t, 0};
		return 0;
	case RANK_IXF_TO_STRING: *out = s; return 0;
	case RANK_IXF_TO_INT: *out = (struct ixt){RANK_FT_INT, 0, 0}; return 0;
	case RANK_IXF_TO_LONG: *out = (struct ixt){RANK_FT_LONG, 0, 0}; return 0;
	case RANK_IXF_TO_FLOAT: *out = (struct ixt){RANK_FT_FLOAT, 0, 0}; return 0;
	case RANK_IXF_TO_DOUBLE: *out = (struct ixt){RANK_FT_DOUBLE, 0, 0}; return 0;
	case RANK_IXF_TO_BOOL: *out = (struct ixt){RANK_FT_BOOL, 0, 0}; return 0;
	case RANK_IXF_NOW: *out = (struct ixt){RANK_FT_LONG, 0, 0}; return 0;
	case RANK_IXF_TO_EPOCH_SECOND:
	case RANK_IXF_HEX_DECODE:
		*out = (struct ixt){RANK_FT_LONG, 0, 0};
		return want(c, n, in, RANK_FT_STRING, n->op == RANK_IXF_HEX_DECODE ? "hex_decode"
		                                                                 : "to_epoch_second");
	case RANK_IXF_HEX_ENCODE:
		*out = s;
		if (in.t && !is_number(in.t))
			return fail(c, n, STRATA_TYPE, "hex_encode takes a number, not %s",
			            ixt_name(in, b, sizeof b));
		return 0;
	case RANK_IXF_PASS:
	case RANK_IXF_SET_VAR:
		*out = in;
		return 0;
	case RANK_IXF_GET_VAR: return 0; /* any type */
	case RANK_IXF_TO_WSET:
		*out = (struct ixt){RANK_FT_WSET, 0, 0};
		if (in.t && in.t != RANK_FT_STRING && in.t != RANK_FT_INT && in.t != RANK_FT_LONG)
			return fail(c, n, STRATA_TYPE, "to_wset takes a string, int or long, not %s",
			            ixt_name(in, b, sizeof b));
		return 0;
	case RANK_IXF_LOWERCASE:
	case RANK_IXF_TRIM:
	case RANK_IXF_NORMALIZE:
	case RANK_IXF_SUBSTRING:
		*out = s;
		return want(c, n, in, RANK_FT_STRING, "this function");
	case RANK_IXF_HASH:
		*out = (struct ixt){RANK_FT_LONG, 0, 0};
		return want(c, n, in, RANK_FT_STRING, "hash");
	case RANK_IXF_SPLIT: {
		regex_t re;
		*out = (struct ixt){RANK_FT_ARRAY, RANK_FT_STRING, 0};
		if (base_regex_size(n->str) > BASE_REGEX_MAX)
			return fail(c, n, STRATA_TYPE, "split: regular expression \"%s\" too complex: its "
			            "repetitions would grow to more than %d nodes", n->str, BASE_REGEX_MAX);
		int e = regcomp(&re, n->str, REG_EXTENDED);
		if (e) {
			char m[128];
			regerror(e, &re, m, sizeof m);
			return fail(c, n, STRATA_TYPE, "split: bad regular expression \"%s\": %s", n->str, m);
		}
		regfree(&re);
		return want(c, n, in, RANK_FT_STRING, "split");
	}
	case RANK_IXF_JOIN:
		*out = s;
		return want(c, n, in, RANK_FT_ARRAY, "join");
	case RANK_IXF_BINARIZE:
	case RANK_IXF_PACK_BITS:
		*out = (struct ixt){RANK_FT_TENSOR, 0, n->op == RANK_IXF_PACK_BITS};
		if (in.t && in.t != RANK_FT_TENSOR)
			return fail(c, n, STRATA_TYPE, "%s takes a tensor, not %s",
			            n->op == RANK_IXF_BINARIZE ? "binarize" : "pack_bits",
			            ixt_name(in, b, sizeof b));
		return 0;
	}
	return fail(c, n, STRATA_TYPE, "unknown indexing function %d", n->op);
}

/* For a hash whose value goes into an int field: 32 bits (num = 32). */
static void hash_widths(struct chk *c, struct rank_ix *pipe)
{
	for (int i = 0; i < pipe->nargs; i++) {
		struct rank_ix *h = pipe->args[i];
		if (h->kind != RANK_IX_FUNC || h->op != RANK_IXF_HASH)
			continue;
		for (int k = i + 1; k < pipe->nargs; k++) {
			struct rank_ix *s = pipe->args[k];
			if (s->kind != RANK_IX_SINK)
				continue;
			const struct rank_field *t = s->str ? field_named(c, s->str) : c->f;
			h->num = t && t->type == RANK_FT_INT ? 32 : 64;
			break;
		}
	}
}

static int check(struct chk *c, struct rank_ix *n, struct ixt in, struct ixt *out)
{
	char b[64];
	struct ixt v = {0, 0, 0};
	int rc = 0;
	*out = v;
	switch (n->kind) {
	case RANK_IX_SCRIPT:
		for (int i = 0; i < n->nargs && !rc; i++)
			rc = check(c, n->args[i], in, out);
		return rc;
	case RANK_IX_PIPE:
		hash_widths(c, n);
		v = in;
		for (int i = 0; i < n->nargs && !rc; i++)
			rc = check(c, n->args[i], v, &v);
		*out = v;
		return rc;
	case RANK_IX_INPUT: {
		const struct rank_field *g = field_named(c, n->str);
		if (!g || g->outside)
			return fail(c, n, STRATA_TYPE, "'input %s': '%s' is not a field of document '%s'",
			            n->str, n->str, c->sd->name);
		*out = field_ixt(g);
		return 0;
	}
	case RANK_IX_STRING: out->t = RANK_FT_STRING; return 0;
	case RANK_IX_NUMBER: out->t = n->integral ? RANK_FT_LONG : RANK_FT_DOUBLE; return 0;
	case RANK_IX_CURRENT: *out = in; return 0;
	case RANK_IX_CAT:
		for (int i = 0; i < n->nargs && !rc; i++) {
			if ((rc = check(c, n->args[i], in, &v)) != 0)
				return rc;
			if (v.t && v.t != RANK_FT_STRING && v.t != RANK_FT_ARRAY)
				return fail(c, n->args[i], STRATA_TYPE,
				            "'.' joins strings (or arrays), not %s (convert it with to_string)",
				            ixt_name(v, b, sizeof b));
			if (!out->t)
				*out = v;
		}
		return 0;
	case RANK_IX_CHOICE:
		for (int i = 0; i < n->nargs && !rc; i++) {
			rc = check(c, n->args[i], in, &v);
			if (!out->t)
				*out = v;
		}
		return rc;
	case RANK_IX_ARITH:
		out->t = RANK_FT_LONG;
		for (int i = 0; i < n->nargs && !rc; i++) {
			if ((rc = check(c, n->args[i], in, &v)) != 0)
				return rc;
			if (v.t && !is_number(v.t))
				return fail(c, n->args[i], STRATA_TYPE, "'%c' takes numbers, not %s", n->op,
				            ixt_name(v, b, sizeof b));
			if (v.t != RANK_FT_INT && v.t != RANK_FT_LONG)
				out->t = RANK_FT_DOUBLE;
		}
		return 0;
	case RANK_IX_FOR_EACH:
		if (in.t && in.t != RANK_FT_ARRAY)
			return fail(c, n, STRATA_TYPE, "for_each takes an array, not %s",
			            ixt_name(in, b, sizeof b));
		if ((rc = check(c, n->args[0], (struct ixt){in.elem, 0, 0}, &v)) != 0)
			return rc;
		*out = (struct ixt){RANK_FT_ARRAY, v.t == RANK_FT_ARRAY ? 0 : v.t, 0};
		return 0;
	case RANK_IX_IF:
		for (int i = 0; i < 4 && !rc; i++)
			if (n->args[i])
				rc = check(c, n->args[i], in, i == 2 ? out : &v);
		return rc;
	case RANK_IX_FUNC:
		return check_func(c, n, in, out);
	case RANK_IX_EMBED:
		out->t = RANK_FT_TENSOR;
		return check_embed(c, n, in);
	case RANK_IX_CHUNK:
		*out = (struct ixt){RANK_FT_ARRAY, RANK_FT_STRING, 0};
		return want(c, n, in, RANK_FT_STRING, "chunk");
	case RANK_IX_SINK:
		*out = in;
		return check_sink(c, n, in);
	case RANK_IX_GUARD:
		return check(c, n->args[0], in, out);
	}
	return fail(c, n, STRATA_TYPE, "unknown indexing expression %d", n->kind);
}

int rank_indexing_check(struct rank_sd *sd, struct rank_field *f, struct strata_error *err)
{
	struct chk c = {sd, f, err};
	struct ixt out;
	/* The script's input is the field's own value (a document field). */
	struct ixt in = f->outside ? (struct ixt){0, 0, 0} : field_ixt(f);
	return check(&c, f->indexing, in, &out);
}
