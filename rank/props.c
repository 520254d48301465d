/*
 * props.c: rank properties that tune rank features, as Vespa's
 * rank-properties give them:
 *
 *     rank-properties {
 *         bm25(title).k1: 0.9                 # term frequency saturation (1.2)
 *         bm25(title).b: 0.4                  # length normalization (0.75)
 *         bm25(title).averageFieldLength: 200 # instead of the index's average
 *     }
 *
 * parse_profile.c hands each "feature(args).property: number" here; the
 * profile keeps them by their whole key (so inheritance merges them one by
 * one, schema.c), compile.c checks them once the fields are known and
 * makes the profile's table of each field's parameters
 * (rank_fprops_resolve), and the engine reads the values of a field through rank_profile_bm25().  Other
 * features' properties are refused by name.
 *
 * A property of bm25(f) where f is no field of the schema, or a field
 * without a text index, is accepted: as in Vespa, where rank properties go
 * to the back end as they are and one no feature reads changes nothing (a
 * bm25(f) that could read it is refused where an expression names it).
 * rank_fprop_notice() gives the line the loader passes up to say so.
 *
 * A profile's "rank f { element-gap: N }" (parse_field.c) comes here as the
 * property "elementGap(f)" (-1: infinity); f must be a field with a text
 * index, and rank_profile_element_gap() gives the engine its value.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rank_compile.h"
#include "rank_syntax.h"

enum { BM25_K1, BM25_B, BM25_AVGDL, BM25_NPROPS };
static const char *const bm25_props[BM25_NPROPS] = {"k1", "b", "averageFieldLength"};

/* key is "bm25(FIELD).PROP": the field name (*f, *fn bytes) and which
 * property (-1 when PROP is not bm25's); 0 when key has not that form. */
static int split_bm25(const char *key, size_t n, const char **f, size_t *fn, int *which)
{
	if (n < 8 || memcmp(key, "bm25(", 5) != 0)
		return 0;
	const char *close = memchr(key, ')', n);
	if (!close || close + 1 >= key + n || close[1] != '.')
		return 0;
	*f = key + 5;
	*fn = (size_t)(close - *f);
	const char *prop = close + 2;
	size_t pn = (size_t)(key + n - prop);
	*which = -1;
	for (int i = 0; i < BM25_NPROPS; i++)
		if (strlen(bm25_props[i]) == pn && memcmp(bm25_props[i], prop, pn) == 0)
			*which = i;
	return 1;
}

int rank_fprop_parse(struct rank_parser *p, struct rank_profile_decl *pr,
                     const struct rank_tok *key, double value)
{
	const char *f;
	size_t fn;
	int which;
	if (!split_bm25(key->s, key->len, &f, &fn, &which))
		return rank_parser_fail(p, key, STRATA_NOT_IMPLEMENTED,
		                        "rank property '%.*s' is not supported: only query(name) and "
		                        "$name, a query input's default, bm25(field).k1, .b and "
		                        ".averageFieldLength, and freshness(f).maxAge and "
		                        ".halfResponse are",
		                        (int)key->len, key->s);
	if (which < 0 || fn == 0)
		return rank_parser_fail(p, key, STRATA_NOT_IMPLEMENTED,
		                        "rank property '%.*s' is not supported: bm25 takes k1, b and "
		                        "averageFieldLength",
		                        (int)key->len, key->s);
	for (int i = 0; i < pr->nfprops; i++)
		if (strlen(pr->fprops[i].name) == key->len &&
		    memcmp(pr->fprops[i].name, key->s, key->len) == 0)
			return rank_parser_fail(p, key, STRATA_TYPE, "rank property '%.*s' is given twice",
			                        (int)key->len, key->s);
	int rc = rank_parser_push(p, &pr->fprops, &pr->nfprops, sizeof *pr->fprops);
	if (rc)
		return rc;
	struct rank_fprop_decl *d = &pr->fprops[pr->nfprops - 1];
	d->value = value;
	d->pos = rank_parser_pos(p, key);
	if (!(d->name = rank_parser_tokdup(p, key)))
		return STRATA_NOMEM;
	return 0;
}

static int field_named(const struct rank_sd *sd, const char *s, size_t n)
{
	for (int i = 0; i < sd->nfields; i++)
		if (strlen(sd->fields[i].name) == n && memcmp(sd->fields[i].name, s, n) == 0)
			return i;
	return -1;
}

static void bm25_defaults(struct rank_bm25 *b)
{
	b->k1 = 1.2;
	b->b = 0.75;
	b->avgdl = 0;
}

/* name is "elementGap(FIELD)": the field's name in *f, *fn bytes. */
static int split_gap(const char *name, const char **f, size_t *fn)
{
	size_t n = strlen(name);
	if (n < 12 || memcmp(name, "elementGap(", 11) != 0 || name[n - 1] != ')')
		return 0;
	*f = name + 11;
	*fn = n - 12;
	return 1;
}

/* The element gap property fp of profile p into its table. */
static int resolve_gap(struct rank_profile *p, const struct rank_fprop_decl *fp, const char *f,
                       size_t fn, struct strata_error *err)
{
	int fi = field_named(p->sd, f, fn);
	if (fi < 0 || rank_field_token_flags(&p->sd->fields[fi]) < 0)
		return base_err(err, STRATA_TYPE, "%s:%d:%d: rank %.*s { element-gap }: '%.*s' is %s",
		                fp->pos.file, fp->pos.line, fp->pos.col, (int)fn, f, (int)fn, f,
		                fi < 0 ? "no field of the schema" : "a field without a text index");
	if (!p->elem_gap) {
		p->elem_gap = base_arena_alloc(&p->pool, (size_t)p->sd->nfields * sizeof *p->elem_gap,
		                               _Alignof(int));
		if (!p->elem_gap)
			return base_nomem(err, "profile '%s'", p->decl->name);
		for (int k = 0; k < p->sd->nfields; k++)
			p->elem_gap[k] = -1;
	}
	p->elem_gap[fi] = (int)fp->value;
	return 0;
}

int rank_profile_element_gap(const struct rank_profile *p, int field)
{
	return p && p->elem_gap && field >= 0 && field < p->sd->nfields ? p->elem_gap[field] : -1;
}

int rank_fprops_resolve(struct rank_profile *p, struct strata_error *err)
{
	const struct rank_profile_decl *d = p->decl;
	for (int i = 0; i < d->nfprops; i++) {
		const struct rank_fprop_decl *fp = &d->fprops[i];
		const char *f;
		size_t fn;
		int which, rc;
		if (split_gap(fp->name, &f, &fn)) {
			if ((rc = resolve_gap(p, fp, f, fn, err)) != 0)
				return rc;
			continue;
		}
		split_bm25(fp->name, strlen(fp->name), &f, &fn, &which);
		int fi = field_named(p->sd, f, fn);
		if (fi < 0 || rank_field_token_flags(&p->sd->fields[fi]) < 0)
			continue; /* changes nothing: rank_fprop_notice */
		double v = fp->value;
		if ((which == BM25_K1 && v < 0) || (which == BM25_B && (v < 0 || v > 1)) ||
		    (which == BM25_AVGDL && v <= 0))
			return base_err(err, STRATA_TYPE, "%s:%d:%d: rank property '%s' is %g: %s",
			                fp->pos.file, fp->pos.line, fp->pos.col, fp->name, v,
			                which == BM25_K1 ? "k1 may not be negative"
			                : which == BM25_B ? "b lies in [0, 1]"
			                                  : "an average length is positive");
		if (!p->bm25) {
			/* one entry per field, made once: bm25 reads it per document */
			p->bm25 = base_arena_alloc(&p->pool, (size_t)p->sd->nfields * sizeof *p->bm25,
			                           _Alignof(struct rank_bm25));
			if (!p->bm25)
				return base_nomem(err, "profile '%s'", d->name);
			for (int k = 0; k < p->sd->nfields; k++)
				bm25_defaults(&p->bm25[k]);
		}
		struct rank_bm25 *b = &p->bm25[fi];
		if (which == BM25_K1)
			b->k1 = v;
		else if (which == BM25_B)
			b->b = v;
		else
			b->avgdl = v;
	}
	return 0;
}

int rank_fprop_notice(const struct rank_profile *p, int i, char *buf, size_t n)
{
	const struct rank_fprop_decl *fp = &p->decl->fprops[i];
	const char *f;
	size_t fn;
	int which;
	if (split_gap(fp->name, &f, &fn)) /* refused at compile when it changes nothing */
		return 0;
	split_bm25(fp->name, strlen(fp->name), &f, &fn, &which);
	int fi = field_named(p->sd, f, fn);
	if (fi >= 0 && rank_field_token_flags(&p->sd->fields[fi]) >= 0)
		return 0;
	snprintf(buf, n, "%s:%d:%d: rank property '%s' changes nothing: '%.*s' is %s", fp->pos.file,
	         fp->pos.line, fp->pos.col, fp->name, (int)fn, f,
	         fi < 0 ? "no field of the schema" : "a field without a text index");
	return 1;
}

void rank_profile_bm25(const struct rank_profile *p, int field, struct rank_bm25 *out)
{
	if (p && p->bm25 && field >= 0 && field < p->sd->nfields)
		*out = p->bm25[field];
	else
		bm25_defaults(out);
}
