/*
 * docs.c: what the schemas of an application share through their
 * documents, resolved once every .sd file is parsed (fields.c and parse.c
 * built the parts) and before profiles are flattened and compiled.
 *
 *   - inheritance: "document a inherits b" puts b's document fields before
 *     a's own (parents resolved first, depth first; a field declared again is
 *     an error);
 *     "schema a inherits b" also brings b's fields outside the document,
 *     document-summaries and rank profiles that a does not declare itself;
 *   - struct types: found by name in the document or its parents;
 *   - indexing scripts: a field outside the document that only reads a
 *     document field of its type takes its value; other scripts are
 *     checked (indexing_check.c);
 *   - summary classes: "default" from the fields, then every
 *     document-summary, its parent's fields first.
 *
 * Copied fields own their names but point at the parent's type nodes:
 * every schema lives as long as the application.
 */
#include <stdio.h>
#include <string.h>

#include "rank_syntax.h"

static int fail(struct strata_error *err, const struct rank_pos *pos, int code, const char *fmt,
                ...) __attribute__((format(printf, 4, 5)));

static int fail(struct strata_error *err, const struct rank_pos *pos, int code, const char *fmt,
                ...)
{
	char msg[STRATA_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return base_err(err, code, "%s:%d:%d: %s", pos->file, pos->line, pos->col, msg);
}

static struct rank_sd *find_sd(struct rank_sd **sds, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(sds[i]->name, name) == 0)
			return sds[i];
	return NULL;
}

/* ---- inheritance -------------------------------------------------------------------- */

/* Append a copy of field f (from a parent) to sd. */
static int copy_field(struct rank_sd *sd, const struct rank_field *f, struct strata_error *err)
{
	if (rank_vec_push(&sd->fields, &sd->nfields, sizeof *sd->fields))
		return base_nomem(err, "inheriting field '%s'", f->name);
	struct rank_field *d = &sd->fields[sd->nfields - 1];
	*d = *f;
	memset(d->dim_names, 0, sizeof d->dim_names);
	int bad = !(d->name = base_strdup(f->name));
	for (int k = 0; k < f->rank && !bad; k++)
		bad = !(d->dim_names[k] = base_strdup(f->dim_names[k]));
	return bad ? base_nomem(err, "inheriting field '%s'", f->name) : 0;
}

/* A copy of the source declarations src[ns] appended to *dst. */
static int copy_sources(struct rank_source_decl **dst, int *nd, const struct rank_source_decl *src,
                        int ns, struct strata_error *err)
{
	for (int i = 0; i < ns; i++) {
		if (rank_vec_push(dst, nd, sizeof **dst))
			return base_nomem(err, "inheriting '%s'", src[i].name);
		struct rank_source_decl *d = &(*dst)[*nd - 1];
		d->pos = src[i].pos;
		d->tokens = src[i].tokens;
		d->transform = src[i].transform;
		d->name = base_strdup(src[i].name);
		d->source = src[i].source ? base_strdup(src[i].source) : NULL;
		d->select_by = src[i].select_by ? base_strdup(src[i].select_by) : NULL;
		if (!d->name || (src[i].source && !d->source) || (src[i].select_by && !d->select_by))
			return base_nomem(err, "inheriting '%s'", src[i].name);
	}
	return 0;
}

static int copy_summary(struct rank_sd *sd, const struct rank_summary_decl *s,
                        struct strata_error *err)
{
	if (rank_vec_push(&sd->summaries, &sd->nsummaries, sizeof *sd->summaries))
		return base_nomem(err, "inheriting document-summary '%s'", s->name);
	struct rank_summary_decl *d = &sd->summaries[sd->nsummaries - 1];
	d->pos = s->pos;
	d->inherits_pos = s->inherits_pos;
	d->omit_summary_features = s->omit_summary_features;
	if (!(d->name = base_strdup(s->name)) || (s->inherits && !(d->inherits = base_strdup(s->inherits))))
		return base_nomem(err, "inheriting document-summary '%s'", s->name);
	return copy_sources(&d->fields, &d->nfields, s->fields, s->nfields, err);
}

/* What schema inheritance adds beyond the document: fields outside it,
 * document-summaries and rank profiles the child lacks. */
static int inherit_schema(struct rank_sd *sd, const struct rank_sd *parent, struct strata_error *err)
{
	int rc;
	for (int i = 0; i < parent->nfields; i++) {
		const struct rank_field *f = &parent->fields[i];
		if (!f->outside || rank_sd_field_index(sd, f->name) >= 0)
			continue;
		if ((rc = copy_field(sd, f, err)) != 0)
			return rc;
		sd->fields[sd->nfields - 1].source = -2;
	}
	if ((rc = copy_sources(&sd->field_summaries, &sd->nfield_summaries, parent->field_summaries,
	                       parent->nfield_summaries, err)) != 0)
		return rc;
	for (int i = 0; i < parent->nsummaries; i++) {
		int own = 0;
		for (int k = 0; k < sd->nsummaries && !own; k++)
			own = strcmp(sd->summaries[k].name, parent->summaries[i].name) == 0;
		if (!own && (rc = copy_summary(sd, &parent->summaries[i], err)) != 0)
			return rc;
	}
	for (int i = 0; i < parent->nprofiles; i++) {
		int own = 0;
		for (int k = 0; k < sd->nprofiles && !own; k++)
			own = strcmp(sd->profiles[k].name, parent->profiles[i].name) == 0;
		if (own)
			continue;
		if (rank_vec_push(&sd->profiles, &sd->nprofiles, sizeof *sd->profiles) ||
		    rank_profile_decl_copy(&sd->profiles[sd->nprofiles - 1], &parent->profiles[i]))
			return base_nomem(err, "inheriting rank-profile '%s'", parent->profiles[i].name);
	}
	return 0;
}

/* The document fields of parent, put before sd's own (after those of
 * earlier parents, whose count is *next), as Vespa orders them. */
static int inherit_document(struct rank_sd *sd, const struct rank_sd *parent, int *next,
                            struct strata_error *err)
{
	for (int i = 0; i < parent->nfields; i++) {
		const struct rank_field *f = &parent->fields[i];
		if (f->outside || f->imported) /* imported fields belong to their schema */
			continue;
		int j = rank_sd_field_index(sd, f->name);
		if (j >= 0) {
			if (!sd->fields[j].outside && sd->fields[j].line == f->line &&
			    sd->fields[j].vtype == f->vtype && sd->fields[j].type == f->type)
				continue; /* the same field, through two parents */
			struct rank_pos at = {sd->file, sd->fields[j].line, sd->fields[j].col};
			return fail(err, &at, STRATA_TYPE,
			            "field '%s' is also in document '%s', which '%s' inherits",
			            f->name, parent->name, sd->name);
		}
		int rc = copy_field(sd, f, err);
		if (rc)
			return rc;
		struct rank_field moved = sd->fields[sd->nfields - 1];
		memmove(&sd->fields[*next + 1], &sd->fields[*next],
		        (size_t)(sd->nfields - 1 - *next) * sizeof *sd->fields);
		sd->fields[(*next)++] = moved;
	}
	return 0;
}

enum { UNSEEN = 0, VISITING, DONE };

/* A walk over the schemas: each one's state (VISITING, DONE) and, when
 * errors go on a list, the list and whether the error returned is on it. */
struct walk {
	unsigned char *state;
	struct strata_errors *errs;
	int listed;
};

static int resolve_docs(struct rank_sd **sds, int n, int i, struct walk *w,
                        struct strata_error *err);

/* Resolve the parent called name of sds[i] first, then take from it. */
static int inherit_one(struct rank_sd **sds, int n, int i, struct walk *w, const char *name,
                       const struct rank_pos *pos, int schema, int *at, struct strata_error *err)
{
	struct rank_sd *sd = sds[i];
	struct rank_sd *parent = find_sd(sds, n, name);
	if (!parent)
		return fail(err, pos, STRATA_TYPE, "%s '%s' inherits '%s', which is not in the application",
		            schema ? "schema" : "document", sd->name, name);
	int j = 0;
	while (sds[j] != parent)
		j++;
	if (w->state[j] == VISITING)
		return fail(err, pos, STRATA_TYPE, "'%s' inherits '%s', which inherits it back", sd->name,
		            name);
	int rc = resolve_docs(sds, n, j, w, err);
	if (rc)
		return rc;
	if (!schema)
		return inherit_document(sd, parent, at, err);
	/* A schema's document inherits its parent's, said or not. */
	int listed = 0;
	for (int k = 0; k < sd->ndoc_inherits; k++)
		listed |= strcmp(sd->doc_inherits[k].name, name) == 0;
	if (!listed && (rc = inherit_document(sd, parent, at, err)) != 0)
		return rc;
	return inherit_schema(sd, parent, err);
}

/* The struct called name in sd's document or its parents'. */
static const struct rank_struct *lookup_struct(struct rank_sd **sds, int n, const struct rank_sd *sd,
                                               const char *name, int depth)
{
	for (int i = 0; i < sd->nstructs; i++)
		if (strcmp(sd->structs[i]->name, name) == 0)
			return &sd->structs[i]->pub;
	for (int k = 0; k < sd->ndoc_inherits && depth < 64; k++) {
		const struct rank_sd *parent = find_sd(sds, n, sd->doc_inherits[k].name);
		const struct rank_struct *s = parent ? lookup_struct(sds, n, parent, name, depth + 1) : NULL;
		if (s)
			return s;
	}
	return NULL;
}

/* Whether two value types are the same (structs resolved). */
static int same_vtype(const struct rank_vtype *a, const struct rank_vtype *b)
{
	if (a == b)
		return 1;
	if (!a || !b || a->type != b->type)
		return 0;
	if (a->type == RANK_FT_STRUCT)
		return a->st == b->st;
	return same_vtype(a->elem, b->elem) && same_vtype(a->key, b->key);
}

static int same_type(const struct rank_field *a, const struct rank_field *b)
{
	if (a->type != b->type || !same_vtype(a->vtype, b->vtype))
		return 0;
	if (a->type != RANK_FT_TENSOR)
		return 1;
	if (a->cell != b->cell || a->rank != b->rank)
		return 0;
	for (int d = 0; d < a->rank; d++)
		if (a->dims[d] != b->dims[d] || strcmp(a->dim_names[d], b->dim_names[d]) != 0)
			return 0;
	return 1;
}

/* A script that only reads one document field into the field's own
 * sinks ("input g | attribute"): g, else NULL. */
static const char *plain_input(const struct rank_ix *script)
{
	if (!script || script->nargs != 1)
		return NULL;
	const struct rank_ix *s = script->args[0];
	if (s->kind != RANK_IX_PIPE || s->args[0]->kind != RANK_IX_INPUT)
		return NULL;
	for (int i = 1; i < s->nargs; i++)
		if (s->args[i]->kind != RANK_IX_SINK || s->args[i]->str)
			return NULL;
	return s->args[0]->str;
}

/* The fields whose indexing computes a value: a field outside the document
 * that only reads a document field of its type takes that field's value
 * (source); every other script is checked. */
static int resolve_inputs(struct rank_sd *sd, struct strata_error *err)
{
	for (int i = 0; i < sd->nfields; i++) {
		struct rank_field *f = &sd->fields[i];
		if (!f->outside && !f->indexing)
			continue;
		struct rank_pos at = {sd->file, f->line, f->col};
		if (!f->indexing)
			return fail(err, &at, STRATA_NOT_IMPLEMENTED,
			            "field '%s' outside the document needs 'indexing: input FIELD | ...'",
			            f->name);
		const char *g = f->outside ? plain_input(f->indexing) : NULL;
		int j = g ? rank_sd_field_index(sd, g) : -1;
		f->source = -1;
		if (j >= 0 && !sd->fields[j].outside && same_type(f, &sd->fields[j])) {
			f->source = j;
			continue;
		}
		int rc = rank_indexing_check(sd, f, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- summary classes ----------------------------------------------------------------- */

/* Add (or replace by name) the field f in class c, whose array fs has
 * room for it. */
static void class_put(struct rank_summary_class *c, struct rank_summary_field *fs,
                      struct rank_summary_field f)
{
	for (int i = 0; i < c->nfields; i++)
		if (strcmp(fs[i].name, f.name) == 0) {
			fs[i] = f;
			return;
		}
	fs[c->nfields++] = f;
}

static int class_index(const struct rank_sd *sd, const char *name)
{
	for (int i = 0; i < sd->nclasses; i++)
		if (sd->classes[i].name && strcmp(sd->classes[i].name, name) == 0)
			return i;
	return -1;
}

/* Whether summary field name may show field f through transform (at pos). */
static int check_transform(const struct rank_field *f, int transform, const char *name,
                           const struct rank_pos *pos, struct strata_error *err)
{
	static const char *const names[] = {
		[RANK_SUMMARY_DYNAMIC] = "dynamic", [RANK_SUMMARY_BOLDING] = "bolding: on",
		[RANK_SUMMARY_MATCHED_ELEMENTS] = "matched-elements-only",
	};
	int t = f->type;
	if ((transform == RANK_SUMMARY_DYNAMIC || transform == RANK_SUMMARY_BOLDING) &&
	    t != RANK_FT_STRING && !(t == RANK_FT_ARRAY && rank_field_holds_text(f)))
		return fail(err, pos, STRATA_NOT_IMPLEMENTED,
		            "summary field '%s': %s on '%s', which is not a string or an array of "
		            "strings, is not supported", name, names[transform], f->name);
	if (transform == RANK_SUMMARY_MATCHED_ELEMENTS && t != RANK_FT_ARRAY && t != RANK_FT_WSET &&
	    t != RANK_FT_MAP)
		return fail(err, pos, STRATA_TYPE,
		            "summary field '%s': matched-elements-only on '%s', which is not an array, "
		            "weighted set or map", name, f->name);
	return 0;
}

/* Whether summary field src may show field f by select-elements-by: an
 * array, without tokens or another transform. */
static int check_select(const struct rank_field *f, const struct rank_source_decl *src,
                        int transform, struct strata_error *err)
{
	if (f->type != RANK_FT_ARRAY)
		return fail(err, &src->pos, STRATA_NOT_IMPLEMENTED,
		            "summary field '%s': select-elements-by on '%s', which is not an array, "
		            "is not supported", src->name, f->name);
	if (src->tokens || transform)
		return fail(err, &src->pos, STRATA_NOT_IMPLEMENTED,
		            "summary field '%s': select-elements-by with another summary setting is "
		            "not supported", src->name);
	return 0;
}

/* The fields of srcs[n] into class c (fs has room).  A source named
 * documentid that no field has is the document id; a summary field showing
 * a field of the same name without a setting of its own takes the field's
 * (summary: dynamic, ...). */
static int class_sources(const struct rank_sd *sd, struct rank_summary_class *c,
                         struct rank_summary_field *fs, const struct rank_source_decl *srcs, int n,
                         struct strata_error *err)
{
	for (int k = 0; k < n; k++) {
		const char *src = srcs[k].source ? srcs[k].source : srcs[k].name;
		int fi = rank_sd_field_index(sd, src), transform = srcs[k].transform;
		if (fi < 0 && strcmp(src, "documentid") == 0 && !srcs[k].tokens && !transform &&
		    !srcs[k].select_by) {
			class_put(c, fs, (struct rank_summary_field){srcs[k].name, -1, 0,
			                                             RANK_SUMMARY_DOCUMENTID, NULL});
			continue;
		}
		if (fi < 0)
			return fail(err, &srcs[k].pos, STRATA_TYPE,
			            "summary field '%s' shows '%s', which is not a field of '%s'",
			            srcs[k].name, src, sd->name);
		if (srcs[k].tokens && sd->fields[fi].type != RANK_FT_STRING &&
		    rank_field_token_flags(&sd->fields[fi]) >= 0)
			return fail(err, &srcs[k].pos, STRATA_NOT_IMPLEMENTED,
			            "summary field '%s' shows the tokens of '%s', a collection: not "
			            "supported", srcs[k].name, src);
		if (srcs[k].tokens && rank_field_token_flags(&sd->fields[fi]) < 0)
			return fail(err, &srcs[k].pos, STRATA_TYPE,
			            "summary field '%s' shows the tokens of '%s', which has no text index "
			            "(indexing: index on a string)",
			            srcs[k].name, src);
		if (srcs[k].tokens && transform)
			return fail(err, &srcs[k].pos, STRATA_NOT_IMPLEMENTED,
			            "summary field '%s': tokens with another summary setting is not "
			            "supported", srcs[k].name);
		if (!transform && !srcs[k].tokens && strcmp(srcs[k].name, src) == 0)
			transform = sd->fields[fi].summary_transform;
		int rc = check_transform(&sd->fields[fi], transform, srcs[k].name, &srcs[k].pos, err);
		if (!rc && srcs[k].select_by)
			rc = check_select(&sd->fields[fi], &srcs[k], transform, err);
		if (rc)
			return rc;
		class_put(c, fs, (struct rank_summary_field){srcs[k].name, fi, srcs[k].tokens, transform,
		                                             srcs[k].select_by});
	}
	return 0;
}

static int build_class(struct rank_sd *sd, int i, unsigned char *state, struct strata_error *err)
{
	struct rank_summary_class *c = &sd->classes[i + 1];
	const struct rank_summary_decl *s = &sd->summaries[i];
	if (state[i] == DONE)
		return 0;
	state[i] = VISITING;
	const struct rank_summary_class *parent = NULL;
	if (s->inherits) {
		int j = class_index(sd, s->inherits);
		if (j < 0)
			for (int k = 0; k < sd->nsummaries && j < 0; k++)
				if (strcmp(sd->summaries[k].name, s->inherits) == 0)
					j = k + 1;
		if (j < 0)
			return fail(err, &s->inherits_pos, STRATA_TYPE,
			            "document-summary '%s' inherits '%s', which is not defined", s->name,
			            s->inherits);
		if (j > 0 && state[j - 1] == VISITING)
			return fail(err, &s->inherits_pos, STRATA_TYPE,
			            "document-summary '%s' inherits '%s', which inherits it back", s->name,
			            s->inherits);
		int rc = j > 0 ? build_class(sd, j - 1, state, err) : 0;
		if (rc)
			return rc;
		parent = &sd->classes[j];
	}
	size_t cap = (size_t)s->nfields + (parent ? (size_t)parent->nfields : 0);
	struct rank_summary_field *fs = cap ? base_calloc(cap, sizeof *fs) : NULL;
	if (cap && !fs)
		return base_nomem(err, "document-summary '%s'", s->name);
	c->name = s->name;
	c->fields = fs;
	c->omit_summary_features = s->omit_summary_features;
	for (int k = 0; parent && k < parent->nfields; k++)
		class_put(c, fs, parent->fields[k]);
	int rc = class_sources(sd, c, fs, s->fields, s->nfields, err);
	/* Free by the capacity: remember it as the count of a full array. */
	if (!rc && (size_t)c->nfields != cap) {
		struct rank_summary_field *t = c->nfields ? base_calloc((size_t)c->nfields, sizeof *t) : NULL;
		if (c->nfields && !t)
			rc = base_nomem(err, "document-summary '%s'", s->name);
		else {
			if (t)
				memcpy(t, fs, (size_t)c->nfields * sizeof *t);
			base_free(fs, cap * sizeof *fs);
			c->fields = t;
		}
	}
	if (rc) {
		/* The class frees by its count: keep the array as big. */
		c->nfields = (int)cap;
		return rc;
	}
	state[i] = DONE;
	return 0;
}

static int build_classes(struct rank_sd *sd, struct strata_error *err)
{
	sd->classes = base_calloc((size_t)sd->nsummaries + 1, sizeof *sd->classes);
	if (!sd->classes)
		return base_nomem(err, "summary classes of '%s'", sd->name);
	sd->nclasses = sd->nsummaries + 1;
	struct rank_summary_class *d = &sd->classes[0];
	size_t cap = (size_t)sd->nfields + (size_t)sd->nfield_summaries;
	struct rank_summary_field *fs = cap ? base_calloc(cap, sizeof *fs) : NULL;
	if (cap && !fs)
		return base_nomem(err, "summary classes of '%s'", sd->name);
	d->name = "default";
	d->fields = fs;
	for (int i = 0; i < sd->nfields; i++) {
		const struct rank_field *f = &sd->fields[i];
		if (f->summary_tokens && f->type != RANK_FT_STRING && rank_field_token_flags(f) >= 0) {
			base_free(fs, cap * sizeof *fs);
			d->fields = NULL;
			struct rank_pos pos = { sd->file, f->line, f->col };
			return fail(err, &pos, STRATA_NOT_IMPLEMENTED,
			            "'summary: tokens' on '%s', a collection, is not supported", f->name);
		}
		if (f->summary_tokens && rank_field_token_flags(f) < 0) {
			base_free(fs, cap * sizeof *fs);
			d->fields = NULL;
			struct rank_pos pos = { sd->file, f->line, f->col };
			return fail(err, &pos, STRATA_TYPE,
			            "'summary: tokens' on '%s', which has no text index (indexing: index "
			            "on a string)", f->name);
		}
		struct rank_pos pos = { sd->file, f->line, f->col };
		int rc = check_transform(f, f->summary_transform, f->name, &pos, err);
		if (rc) {
			base_free(fs, cap * sizeof *fs);
			d->fields = NULL;
			return rc;
		}
		if (f->summary)
			class_put(d, fs, (struct rank_summary_field){f->name, i, f->summary_tokens,
			                                             f->summary_transform, NULL});
	}
	d->omit_summary_features = sd->default_omit_summary_features;
	int rc = class_sources(sd, d, fs, sd->field_summaries, sd->nfield_summaries, err);
	d->nfields = (int)cap; /* freed by its capacity; the count is set below */
	if (rc)
		return rc;
	d->nfields = 0;
	for (size_t i = 0; i < cap && fs[i].name; i++)
		d->nfields++;
	if ((size_t)d->nfields != cap) {
		/* Keep the array exactly as long as its count, which frees it. */
		struct rank_summary_field *t = d->nfields ? base_calloc((size_t)d->nfields, sizeof *t) : NULL;
		if (d->nfields && !t) {
			d->nfields = (int)cap;
			return base_nomem(err, "summary classes of '%s'", sd->name);
		}
		if (t)
			memcpy(t, fs, (size_t)d->nfields * sizeof *t);
		base_free(fs, cap * sizeof *fs);
		d->fields = t;
	}
	unsigned char *state = sd->nsummaries ? base_calloc((size_t)sd->nsummaries, 1) : NULL;
	if (sd->nsummaries && !state)
		return base_nomem(err, "summary classes of '%s'", sd->name);
	for (int i = 0; i < sd->nsummaries && !rc; i++)
		rc = build_class(sd, i, state, err);
	if (state)
		base_free(state, (size_t)sd->nsummaries);
	return rc;
}

/* ---- the whole application ---------------------------------------------------------- */

static int resolve_docs(struct rank_sd **sds, int n, int i, struct walk *w,
                        struct strata_error *err)
{
	struct rank_sd *sd = sds[i];
	if (w->state[i] == DONE)
		return 0;
	w->state[i] = VISITING;
	int rc = 0, at = 0;
	for (int k = 0; k < sd->ndoc_inherits && !rc; k++)
		rc = inherit_one(sds, n, i, w, sd->doc_inherits[k].name, &sd->doc_inherits[k].pos, 0,
		                 &at, err);
	if (!rc && sd->inherits)
		rc = inherit_one(sds, n, i, w, sd->inherits, &sd->inherits_pos, 1, &at, err);
	/* Unknown types are independent errors: with a list, each goes on it. */
	struct strata_error first;
	for (int k = 0; k < sd->nvtypes && (!rc || (w->errs && w->listed)); k++) {
		struct rank_vtype_decl *v = sd->vtypes[k];
		if (!v->struct_name || v->pub.st)
			continue;
		if (!(v->pub.st = lookup_struct(sds, n, sd, v->struct_name, 0))) {
			int r = fail(err, &v->pos, STRATA_TYPE, "unknown field type '%s' (no struct of "
			             "that name in document '%s')", v->struct_name, sd->name);
			if (!w->errs) {
				rc = r;
				break;
			}
			if (!rc)
				first = *err;
			base_errs_add(w->errs, err);
			w->listed = 1;
			rc = r;
		}
	}
	if (rc && w->listed) {
		*err = first;
		return rc;
	}
	if (!rc)
		rc = resolve_inputs(sd, err);
	if (!rc)
		rc = build_classes(sd, err);
	if (!rc)
		rc = rank_fieldsets_resolve(sd, err);
	if (!rc) {
		w->state[i] = DONE;
		sd->docs_resolved = 1;
	}
	return rc;
}

int rank_sds_inherit(struct rank_sd **sds, int n, struct strata_errors *errs,
                     struct strata_error *err)
{
	if (n <= 0)
		return 0;
	struct walk w = { base_calloc((size_t)n, 1), errs, 0 };
	if (!w.state)
		return base_nomem(err, "resolving documents");
	/* With a list, each schema is resolved on its own: one that fails
	 * (and those inheriting from it) stays unresolved, the others go on. */
	int rc = 0;
	struct strata_error first;
	for (int i = 0; i < n && (!rc || (errs && rc != STRATA_NOMEM)); i++) {
		w.listed = 0;
		int r = resolve_docs(sds, n, i, &w, err);
		if (!r)
			continue;
		if (errs && !w.listed)
			base_errs_add(errs, err);
		if (!rc || r == STRATA_NOMEM) {
			rc = r;
			first = *err;
		}
	}
	base_free(w.state, (size_t)n);
	if (rc)
		*err = first;
	return rc;
}
