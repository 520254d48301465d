/*
 * schema.c: ownership and inheritance of the schema AST.  parse.c builds a
 * struct rank_sd; this file frees it, copies its parts, and flattens rank
 * profile inheritance (rank_sd_resolve) so that compile.c sees every profile
 * complete, with no reference to its parents.
 *
 * Invariants: every array of the AST was grown by rank_vec_push, so its
 * capacity is rank_vec_cap(count) and can be freed knowing only the count;
 * an element is zeroed when pushed, so a half-built AST (after a parse error
 * or a failed allocation) frees cleanly.
 *
 * Inheritance: a profile's parents are resolved first (depth first, in any
 * order of declaration).  Inputs, constants, functions and models are merged
 * by name: the parents' in the order listed (a later parent replaces an
 * earlier one's definition of the same name), then the profile's own, which
 * win.  Phases, rerank counts, the rank-score-drop-limit and feature lists
 * come from the profile when it sets them, else from the last parent listed
 * that sets them.
 */
#include <stdio.h>
#include <string.h>

#include "rank_syntax.h"

#define VEC_MAX (1 << 24) /* elements in any one AST array */

/* ---- growable arrays ---------------------------------------------------------- */

size_t rank_vec_cap(int n)
{
	if (n <= 0)
		return 0;
	size_t c = 4;
	while (c < (size_t)n)
		c *= 2;
	return c;
}

int rank_vec_push(void *arrp, int *n, size_t elem)
{
	void **arr = arrp;
	if (*n >= VEC_MAX)
		return STRATA_LIMIT;
	size_t cap = rank_vec_cap(*n), need = rank_vec_cap(*n + 1);
	if (need != cap) {
		void *q = base_realloc(*arr, cap * elem, need * elem);
		if (!q)
			return STRATA_NOMEM;
		*arr = q;
	}
	memset((char *)*arr + (size_t)*n * elem, 0, elem);
	(*n)++;
	return 0;
}

void rank_vec_free(void *arr, int n, size_t elem)
{
	if (arr)
		base_free(arr, rank_vec_cap(n) * elem);
}

int rank_sd_field_index(const struct rank_sd *sd, const char *name)
{
	for (int i = 0; i < sd->nfields; i++)
		if (strcmp(sd->fields[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- freeing -------------------------------------------------------------------- */

void rank_ix_free(struct rank_ix *n)
{
	if (!n)
		return;
	for (int i = 0; i < n->nargs; i++)
		rank_ix_free(n->args[i]);
	rank_vec_free(n->args, n->nargs, sizeof *n->args);
	base_strfree(n->str);
	base_strfree(n->dest);
	base_strfree(n->dim);
	base_free(n, sizeof *n);
}

void rank_ast_free(struct rank_ast *a)
{
	if (!a)
		return;
	for (int i = 0; i < a->nargs; i++)
		rank_ast_free(a->args[i]);
	rank_vec_free(a->args, a->nargs, sizeof *a->args);
	for (int i = 0; i < a->nparams; i++)
		base_strfree(a->params[i]);
	rank_vec_free(a->params, a->nparams, sizeof *a->params);
	base_strfree(a->name);
	base_strfree(a->out);
	base_strfree(a->text);
	base_free(a, sizeof *a);
}

static void free_strings(char **v, int n)
{
	for (int i = 0; i < n; i++)
		base_strfree(v[i]);
	rank_vec_free(v, n, sizeof *v);
}

static void free_asts(struct rank_ast **v, int n)
{
	for (int i = 0; i < n; i++)
		rank_ast_free(v[i]);
	rank_vec_free(v, n, sizeof *v);
}

void rank_function_decl_clear(struct rank_function_decl *f)
{
	base_strfree(f->name);
	free_strings(f->params, f->nparams);
	rank_ast_free(f->body);
	memset(f, 0, sizeof *f);
}

/* What inputs and constants own alike: a name, a type and n cells. */
static void clear_value(char *name, struct rank_type *type, double *cells, size_t n)
{
	base_strfree(name);
	rank_type_clear(type);
	if (cells)
		base_free(cells, n * sizeof *cells);
}

void rank_input_decl_clear(struct rank_input_decl *in)
{
	clear_value(in->name, &in->type, in->dflt, in->ncells);
	memset(in, 0, sizeof *in);
}

void rank_constant_decl_clear(struct rank_constant_decl *c)
{
	size_t nl = c->nblocks * (size_t)rank_type_mapped(&c->type);
	for (size_t i = 0; c->labels && i < nl; i++)
		base_strfree(c->labels[i]);
	if (c->labels)
		base_free(c->labels, (nl ? nl : 1) * sizeof *c->labels);
	clear_value(c->name, &c->type, c->cells, c->ncells);
	base_strfree(c->file);
	memset(c, 0, sizeof *c);
}

void rank_model_decl_clear(struct rank_model_decl *m)
{
	base_strfree(m->name);
	base_strfree(m->file);
	for (int i = 0; i < m->ninputs; i++) {
		base_strfree(m->inputs[i].name);
		rank_ast_free(m->inputs[i].source);
	}
	rank_vec_free(m->inputs, m->ninputs, sizeof *m->inputs);
	for (int i = 0; i < m->noutputs; i++) {
		base_strfree(m->outputs[i].name);
		base_strfree(m->outputs[i].alias);
	}
	rank_vec_free(m->outputs, m->noutputs, sizeof *m->outputs);
	memset(m, 0, sizeof *m);
}

void rank_fprop_decl_clear(struct rank_fprop_decl *f)
{
	base_strfree(f->name);
	memset(f, 0, sizeof *f);
}

int rank_fprop_decl_copy(struct rank_fprop_decl *dst, const struct rank_fprop_decl *src)
{
	*dst = *src;
	return (dst->name = base_strdup(src->name)) != NULL ? 0 : STRATA_NOMEM;
}

void rank_profile_decl_clear(struct rank_profile_decl *p)
{
	base_strfree(p->name);
	free_strings(p->inherits, p->ninherits);
	rank_vec_free(p->inherits_pos, p->ninherits, sizeof *p->inherits_pos);
	for (int i = 0; i < p->ninputs; i++)
		rank_input_decl_clear(&p->inputs[i]);
	rank_vec_free(p->inputs, p->ninputs, sizeof *p->inputs);
	for (int i = 0; i < p->nconstants; i++)
		rank_constant_decl_clear(&p->constants[i]);
	rank_vec_free(p->constants, p->nconstants, sizeof *p->constants);
	for (int i = 0; i < p->nfunctions; i++)
		rank_function_decl_clear(&p->functions[i]);
	rank_vec_free(p->functions, p->nfunctions, sizeof *p->functions);
	for (int i = 0; i < p->nmodels; i++)
		rank_model_decl_clear(&p->models[i]);
	rank_vec_free(p->models, p->nmodels, sizeof *p->models);
	for (int i = 0; i < p->nfprops; i++)
		rank_fprop_decl_clear(&p->fprops[i]);
	rank_vec_free(p->fprops, p->nfprops, sizeof *p->fprops);
	rank_ast_free(p->first_phase);
	rank_ast_free(p->second_phase);
	rank_ast_free(p->global_phase);
	free_asts(p->match_features, p->nmatch_features);
	free_asts(p->summary_features, p->nsummary_features);
	memset(p, 0, sizeof *p);
}

static void fieldsets_free(struct rank_sd *sd)
{
	for (int i = 0; i < sd->nfieldsets; i++) {
		struct rank_fieldset *fs = &sd->fieldsets[i];
		base_strfree(fs->name);
		for (int j = 0; j < fs->nfields; j++)
			base_strfree(fs->names[j]);
		rank_vec_free(fs->names, fs->nfields, sizeof *fs->names);
		if (fs->fields)
			base_free(fs->fields, (size_t)fs->nfields * sizeof *fs->fields);
	}
	rank_vec_free(sd->fieldsets, sd->nfieldsets, sizeof *sd->fieldsets);
	sd->fieldsets = NULL;
	sd->nfieldsets = 0;
}

static void clear_sources(struct rank_source_decl *v, int n)
{
	for (int i = 0; i < n; i++) {
		base_strfree(v[i].name);
		base_strfree(v[i].source);
		base_strfree(v[i].select_by);
	}
	rank_vec_free(v, n, sizeof *v);
}

void rank_sd_docs_free(struct rank_sd *sd)
{
	for (int i = 0; i < sd->nvtypes; i++) {
		base_strfree(sd->vtypes[i]->struct_name);
		base_free(sd->vtypes[i], sizeof *sd->vtypes[i]);
	}
	rank_vec_free(sd->vtypes, sd->nvtypes, sizeof *sd->vtypes);
	for (int i = 0; i < sd->nstructs; i++) {
		struct rank_struct_decl *s = sd->structs[i];
		for (int k = 0; k < s->nfields; k++)
			base_strfree((char *)s->fields[k].name);
		rank_vec_free(s->fields, s->nfields, sizeof *s->fields);
		base_strfree(s->name);
		base_free(s, sizeof *s);
	}
	rank_vec_free(sd->structs, sd->nstructs, sizeof *sd->structs);
	for (int i = 0; i < sd->nsummaries; i++) {
		struct rank_summary_decl *s = &sd->summaries[i];
		base_strfree(s->name);
		base_strfree(s->inherits);
		clear_sources(s->fields, s->nfields);
	}
	rank_vec_free(sd->summaries, sd->nsummaries, sizeof *sd->summaries);
	for (int i = 0; i < sd->nixs; i++)
		rank_ix_free(sd->ixs[i]);
	rank_vec_free(sd->ixs, sd->nixs, sizeof *sd->ixs);
	clear_sources(sd->field_summaries, sd->nfield_summaries);
	clear_sources(sd->doc_inherits, sd->ndoc_inherits);
	clear_sources(sd->refs, sd->nrefs);
	clear_sources(sd->imports, sd->nimports);
	base_strfree(sd->inherits);
	for (int i = 0; i < sd->nclasses; i++)
		base_free((void *)sd->classes[i].fields,
		          (size_t)sd->classes[i].nfields * sizeof *sd->classes[i].fields);
	base_free(sd->classes, (size_t)sd->nclasses * sizeof *sd->classes);
}

void rank_sd_free(struct rank_sd *sd)
{
	if (!sd)
		return;
	for (int i = 0; i < sd->npfiles; i++)
		base_strfree(sd->pfiles[i]);
	rank_vec_free(sd->pfiles, sd->npfiles, sizeof *sd->pfiles);
	for (int i = 0; i < sd->nfields; i++) {
		struct rank_field *f = &sd->fields[i];
		base_strfree((char *)f->name);
		for (int d = 0; d < RANK_MAX_RANK; d++)
			base_strfree((char *)f->dim_names[d]);
	}
	rank_vec_free(sd->fields, sd->nfields, sizeof *sd->fields);
	fieldsets_free(sd);
	for (int i = 0; i < sd->nmodels; i++)
		rank_model_decl_clear(&sd->models[i]);
	rank_vec_free(sd->models, sd->nmodels, sizeof *sd->models);
	for (int i = 0; i < sd->nconstants; i++)
		rank_constant_decl_clear(&sd->constants[i]);
	rank_vec_free(sd->constants, sd->nconstants, sizeof *sd->constants);
	for (int i = 0; i < sd->nprofiles; i++)
		rank_profile_decl_clear(&sd->profiles[i]);
	rank_vec_free(sd->profiles, sd->nprofiles, sizeof *sd->profiles);
	rank_sd_docs_free(sd);
	base_strfree(sd->name);
	base_strfree(sd->file);
	base_free(sd, sizeof *sd);
}

/* ---- copying -------------------------------------------------------------------- */

/* Copy of s, or NULL for NULL; *bad is set when memory runs out. */
static char *dup_or(const char *s, int *bad)
{
	if (!s)
		return NULL;
	char *d = base_strdup(s);
	if (!d)
		*bad = 1;
	return d;
}

struct rank_ast *rank_ast_copy(const struct rank_ast *a)
{
	if (!a)
		return NULL;
	struct rank_ast *c = base_calloc(1, sizeof *c);
	if (!c)
		return NULL;
	int bad = 0;
	c->kind = a->kind;
	c->op = a->op;
	c->num = a->num;
	c->pos = a->pos;
	c->name = dup_or(a->name, &bad);
	c->out = dup_or(a->out, &bad);
	c->text = dup_or(a->text, &bad);
	for (int i = 0; i < a->nargs && !bad; i++) {
		if (rank_vec_push(&c->args, &c->nargs, sizeof *c->args) ||
		    !(c->args[i] = rank_ast_copy(a->args[i])))
			bad = 1;
	}
	for (int i = 0; i < a->nparams && !bad; i++) {
		if (rank_vec_push(&c->params, &c->nparams, sizeof *c->params) ||
		    !(c->params[i] = base_strdup(a->params[i])))
			bad = 1;
	}
	if (bad) {
		rank_ast_free(c);
		return NULL;
	}
	return c;
}

static int copy_cells(double **dst, const double *src, size_t n)
{
	*dst = NULL;
	if (!src)
		return 0;
	if (!(*dst = base_alloc(n * sizeof **dst)))
		return STRATA_NOMEM;
	memcpy(*dst, src, n * sizeof **dst);
	return 0;
}

/* Copy what inputs and constants have alike (see clear_value); STRATA_NOMEM
 * leaves what was copied for the caller's clear. */
static int copy_value(char **name, struct rank_type *type, double **cells, const char *sname,
                      const struct rank_type *stype, const double *scells, size_t n)
{
	int bad = 0;
	*name = dup_or(sname, &bad);
	if (bad || rank_type_copy(type, stype) || copy_cells(cells, scells, n))
		return STRATA_NOMEM;
	return 0;
}

static int copy_input(struct rank_input_decl *d, const struct rank_input_decl *s)
{
	memset(d, 0, sizeof *d);
	d->pos = s->pos;
	d->has_default = s->has_default;
	d->string = s->string;
	d->implicit = s->implicit;
	d->ncells = s->ncells;
	if (copy_value(&d->name, &d->type, &d->dflt, s->name, &s->type, s->dflt, s->ncells)) {
		rank_input_decl_clear(d);
		return STRATA_NOMEM;
	}
	return 0;
}

static int copy_constant(struct rank_constant_decl *d, const struct rank_constant_decl *s)
{
	memset(d, 0, sizeof *d);
	d->pos = s->pos;
	d->file_pos = s->file_pos;
	d->ncells = s->ncells;
	int bad = 0;
	d->file = s->file ? dup_or(s->file, &bad) : NULL;
	if (bad ||
	    copy_value(&d->name, &d->type, &d->cells, s->name, &s->type, s->cells, s->ncells)) {
		rank_constant_decl_clear(d);
		return STRATA_NOMEM;
	}
	size_t nl = s->nblocks * (size_t)rank_type_mapped(&s->type);
	if (s->labels && !(d->labels = base_calloc(nl ? nl : 1, sizeof *d->labels)))
		bad = 1;
	d->nblocks = d->labels ? s->nblocks : 0;
	for (size_t i = 0; d->labels && i < nl && !bad; i++)
		bad = !(d->labels[i] = base_strdup(s->labels[i]));
	if (bad) {
		rank_constant_decl_clear(d);
		return STRATA_NOMEM;
	}
	return 0;
}

static int copy_function(struct rank_function_decl *d, const struct rank_function_decl *s)
{
	int bad = 0;
	memset(d, 0, sizeof *d);
	d->name = dup_or(s->name, &bad);
	d->pos = s->pos;
	for (int i = 0; i < s->nparams && !bad; i++)
		if (rank_vec_push(&d->params, &d->nparams, sizeof *d->params) ||
		    !(d->params[i] = base_strdup(s->params[i])))
			bad = 1;
	if (!bad && s->body && !(d->body = rank_ast_copy(s->body)))
		bad = 1;
	if (bad) {
		rank_function_decl_clear(d);
		return STRATA_NOMEM;
	}
	return 0;
}

static int copy_model(struct rank_model_decl *d, const struct rank_model_decl *s)
{
	int bad = 0;
	memset(d, 0, sizeof *d);
	d->name = dup_or(s->name, &bad);
	d->file = dup_or(s->file, &bad);
	d->pos = s->pos;
	for (int i = 0; i < s->ninputs && !bad; i++) {
		if (rank_vec_push(&d->inputs, &d->ninputs, sizeof *d->inputs)) {
			bad = 1;
			break;
		}
		d->inputs[i].pos = s->inputs[i].pos;
		d->inputs[i].name = dup_or(s->inputs[i].name, &bad);
		if (s->inputs[i].source && !(d->inputs[i].source = rank_ast_copy(s->inputs[i].source)))
			bad = 1;
	}
	for (int i = 0; i < s->noutputs && !bad; i++) {
		if (rank_vec_push(&d->outputs, &d->noutputs, sizeof *d->outputs)) {
			bad = 1;
			break;
		}
		d->outputs[i].pos = s->outputs[i].pos;
		d->outputs[i].name = dup_or(s->outputs[i].name, &bad);
		d->outputs[i].alias = dup_or(s->outputs[i].alias, &bad);
	}
	if (bad) {
		rank_model_decl_clear(d);
		return STRATA_NOMEM;
	}
	return 0;
}

static int copy_asts(struct rank_ast ***dst, int *nd, struct rank_ast *const *src, int ns)
{
	*dst = NULL;
	*nd = 0;
	for (int i = 0; i < ns; i++) {
		if (rank_vec_push(dst, nd, sizeof **dst) || !((*dst)[i] = rank_ast_copy(src[i]))) {
			free_asts(*dst, *nd);
			*dst = NULL;
			*nd = 0;
			return STRATA_NOMEM;
		}
	}
	return 0;
}

/* ---- inheritance -------------------------------------------------------------------- */

/* Merge one kind of named declaration: copy each of src into (*dst, *nd),
 * replacing an element of the same name.  T is the element type; NAME the
 * name field. */
#define MERGE_FN(fname, T, copyfn, clearfn)                                         \
	static int fname(T **dst, int *nd, const T *src, int ns)                    \
	{                                                                           \
		for (int i = 0; i < ns; i++) {                                      \
			int at = -1;                                                \
			for (int j = 0; j < *nd; j++)                               \
				if (strcmp((*dst)[j].name, src[i].name) == 0)       \
					at = j;                                     \
			T tmp;                                                      \
			if (copyfn(&tmp, &src[i]))                                  \
				return STRATA_NOMEM;                                \
			if (at < 0) {                                               \
				if (rank_vec_push(dst, nd, sizeof **dst)) {         \
					clearfn(&tmp);                              \
					return STRATA_NOMEM;                        \
				}                                                   \
				at = *nd - 1;                                       \
			} else {                                                    \
				clearfn(&(*dst)[at]);                               \
			}                                                           \
			(*dst)[at] = tmp;                                           \
		}                                                                   \
		return 0;                                                           \
	}

MERGE_FN(merge_inputs, struct rank_input_decl, copy_input, rank_input_decl_clear)
MERGE_FN(merge_constants, struct rank_constant_decl, copy_constant, rank_constant_decl_clear)
MERGE_FN(merge_functions, struct rank_function_decl, copy_function, rank_function_decl_clear)
MERGE_FN(merge_models, struct rank_model_decl, copy_model, rank_model_decl_clear)
MERGE_FN(merge_fprops, struct rank_fprop_decl, rank_fprop_decl_copy, rank_fprop_decl_clear)

/* Merge the named declarations of src (a resolved parent, or the profile's
 * own) into acc. */
static int merge_decls(struct rank_profile_decl *acc, const struct rank_profile_decl *src)
{
	if (merge_inputs(&acc->inputs, &acc->ninputs, src->inputs, src->ninputs) ||
	    merge_constants(&acc->constants, &acc->nconstants, src->constants, src->nconstants) ||
	    merge_functions(&acc->functions, &acc->nfunctions, src->functions, src->nfunctions) ||
	    merge_models(&acc->models, &acc->nmodels, src->models, src->nmodels) ||
	    merge_fprops(&acc->fprops, &acc->nfprops, src->fprops, src->nfprops))
		return STRATA_NOMEM;
	return 0;
}

/* *dst becomes a copy of the parent's src, unless the profile sets its own
 * or the parent sets none. */
static int inherit_ast(struct rank_ast **dst, const struct rank_ast *own, const struct rank_ast *src)
{
	if (own || !src)
		return 0;
	rank_ast_free(*dst);
	return (*dst = rank_ast_copy(src)) != NULL ? 0 : STRATA_NOMEM;
}

/* The same for a feature list. */
static int inherit_asts(struct rank_ast ***dst, int *nd, int own_n, struct rank_ast *const *src,
                        int ns)
{
	if (own_n || !ns)
		return 0;
	free_asts(*dst, *nd);
	return copy_asts(dst, nd, src, ns);
}

/* Fill what p leaves unset from parent. */
static int inherit_phases(struct rank_profile_decl *p, const struct rank_profile_decl *parent,
                          struct rank_profile_decl *own)
{
	/* own is p as declared: a setting the profile made itself is never
	 * replaced, a setting taken from an earlier parent may be. */
	if (inherit_ast(&p->first_phase, own->first_phase, parent->first_phase) ||
	    inherit_ast(&p->second_phase, own->second_phase, parent->second_phase) ||
	    inherit_ast(&p->global_phase, own->global_phase, parent->global_phase))
		return STRATA_NOMEM;
	if (own->rerank_count < 0 && parent->rerank_count >= 0)
		p->rerank_count = parent->rerank_count;
	if (own->global_rerank_count < 0 && parent->global_rerank_count >= 0)
		p->global_rerank_count = parent->global_rerank_count;
	if (!own->threads_per_search)
		p->threads_per_search = parent->threads_per_search;
	if (!own->min_hits_per_thread)
		p->min_hits_per_thread = parent->min_hits_per_thread;
	if (!own->has_drop_limit && parent->has_drop_limit) {
		p->has_drop_limit = 1;
		p->drop_limit = parent->drop_limit;
	}
	if (!own->has_drop2 && parent->has_drop2) {
		p->has_drop2 = 1;
		p->drop2 = parent->drop2;
	}
	if (!own->has_drop3 && parent->has_drop3) {
		p->has_drop3 = 1;
		p->drop3 = parent->drop3;
	}
	for (int i = 0; i < RANK_NN_NSETTINGS; i++)
		if (!(own->nn_given >> i & 1) && (parent->nn_given >> i & 1)) {
			p->nn_given |= 1u << i;
			p->nn[i] = parent->nn[i];
		}
	if (inherit_asts(&p->match_features, &p->nmatch_features, own->nmatch_features,
	                 parent->match_features, parent->nmatch_features) ||
	    inherit_asts(&p->summary_features, &p->nsummary_features, own->nsummary_features,
	                 parent->summary_features, parent->nsummary_features))
		return STRATA_NOMEM;
	return 0;
}

int rank_profile_decl_copy(struct rank_profile_decl *dst, const struct rank_profile_decl *src)
{
	memset(dst, 0, sizeof *dst);
	int bad = 0;
	dst->name = dup_or(src->name, &bad);
	dst->pos = src->pos;
	dst->rerank_count = src->rerank_count;
	dst->global_rerank_count = src->global_rerank_count;
	dst->threads_per_search = src->threads_per_search;
	dst->min_hits_per_thread = src->min_hits_per_thread;
	for (int k = 0; k < src->ninherits && !bad; k++) {
		int npos = dst->ninherits;
		if (rank_vec_push(&dst->inherits_pos, &npos, sizeof *dst->inherits_pos) ||
		    rank_vec_push(&dst->inherits, &dst->ninherits, sizeof *dst->inherits)) {
			/* Keep the counts equal for the free below. */
			if (npos != dst->ninherits) {
				rank_vec_free(dst->inherits_pos, npos, sizeof *dst->inherits_pos);
				dst->inherits_pos = NULL;
				dst->ninherits = 0;
			}
			bad = 1;
			break;
		}
		dst->inherits_pos[k] = src->inherits_pos[k];
		dst->inherits[k] = dup_or(src->inherits[k], &bad);
	}
	struct rank_profile_decl none;
	memset(&none, 0, sizeof none);
	none.rerank_count = none.global_rerank_count = -1;
	if (bad || merge_decls(dst, src) || inherit_phases(dst, src, &none)) {
		rank_profile_decl_clear(dst);
		return STRATA_NOMEM;
	}
	return 0;
}

/* "rank-profile default inherits default" redefines the built-in default
 * profile, which is empty: that parent adds nothing and is no cycle. */
static int builtin_parent(const struct rank_profile_decl *p, int k)
{
	return strcmp(p->name, "default") == 0 && strcmp(p->inherits[k], "default") == 0;
}

static int find_profile(const struct rank_sd *sd, const char *name)
{
	for (int i = 0; i < sd->nprofiles; i++)
		if (strcmp(sd->profiles[i].name, name) == 0)
			return i;
	return -1;
}

enum { UNSEEN = 0, VISITING, DONE, FAILED };

/* resolve_one's answer for a profile whose parent failed to resolve: it
 * fails too, with no error of its own (one already names the cause). */
#define PARENT_FAILED 1

static int resolve_one(struct rank_sd *sd, int i, unsigned char *state, struct strata_error *err)
{
	struct rank_profile_decl *p = &sd->profiles[i];
	if (state[i] == DONE)
		return 0;
	if (state[i] == FAILED)
		return PARENT_FAILED;
	state[i] = VISITING;
	for (int k = 0; k < p->ninherits; k++) {
		if (builtin_parent(p, k))
			continue;
		int j = find_profile(sd, p->inherits[k]);
		const struct rank_pos *ps = &p->inherits_pos[k];
		if (j < 0)
			return base_err(err, STRATA_TYPE,
			                "%s:%d:%d: rank-profile '%s' inherits '%s', which is not defined",
			                ps->file, ps->line, ps->col, p->name, p->inherits[k]);
		if (state[j] == VISITING)
			return base_err(err, STRATA_TYPE,
			                "%s:%d:%d: rank-profile '%s' inherits '%s', which inherits it back "
			                "(inheritance cycle)",
			                ps->file, ps->line, ps->col, p->name, p->inherits[k]);
		int rc = resolve_one(sd, j, state, err);
		if (rc)
			return rc;
		p = &sd->profiles[i]; /* the array does not move here, but stay safe */
	}
	if (p->ninherits == 0) {
		state[i] = DONE;
		return 0;
	}

	/* Build the flat profile in acc, then swap it in. */
	struct rank_profile_decl acc;
	memset(&acc, 0, sizeof acc);
	int rc = 0;
	for (int k = 0; k < p->ninherits && !rc; k++)
		if (!builtin_parent(p, k))
			rc = merge_decls(&acc, &sd->profiles[find_profile(sd, p->inherits[k])]);
	if (!rc)
		rc = merge_decls(&acc, p);
	if (!rc) {
		struct rank_profile_decl own = *p;
		for (int k = 0; k < p->ninherits && !rc; k++)
			if (!builtin_parent(p, k))
				rc = inherit_phases(p, &sd->profiles[find_profile(sd, p->inherits[k])],
				                    &own);
	}
	if (rc) {
		rank_profile_decl_clear(&acc);
		return base_nomem(err, "resolving rank-profile '%s'", p->name);
	}
	/* Swap the merged declarations in; free the profile's own originals. */
	struct rank_profile_decl old;
	memset(&old, 0, sizeof old);
#define SWAP(arr, cnt)                  \
	do {                            \
		old.arr = p->arr;       \
		old.cnt = p->cnt;       \
		p->arr = acc.arr;       \
		p->cnt = acc.cnt;       \
	} while (0)
	SWAP(inputs, ninputs);
	SWAP(constants, nconstants);
	SWAP(functions, nfunctions);
	SWAP(models, nmodels);
	SWAP(fprops, nfprops);
#undef SWAP
	rank_profile_decl_clear(&old);
	state[i] = DONE;
	return 0;
}

static int add_default(struct rank_sd *sd, struct strata_error *err)
{
	if (find_profile(sd, "default") >= 0)
		return 0;
	if (rank_vec_push(&sd->profiles, &sd->nprofiles, sizeof *sd->profiles))
		return base_nomem(err, "default rank-profile");
	struct rank_profile_decl *p = &sd->profiles[sd->nprofiles - 1];
	p->rerank_count = -1;
	p->global_rerank_count = -1;
	p->pos = sd->pos;
	if (!(p->name = base_strdup("default")))
		return base_nomem(err, "default rank-profile");
	return 0;
}

int rank_sd_resolve(struct rank_sd *sd, struct strata_error *err)
{
	return rank_sd_resolve_all(sd, NULL, err);
}

int rank_sd_resolve_all(struct rank_sd *sd, struct strata_errors *errs, struct strata_error *err)
{
	if (sd->resolved)
		return 0;
	/* "default" exists before inheritance so that profiles may inherit it
	 * without declaring it, as they may in Vespa. */
	int rc = add_default(sd, err);
	if (rc)
		return rc;
	unsigned char *state = base_calloc((size_t)sd->nprofiles, 1);
	if (!state)
		return base_nomem(err, "resolving rank profiles");
	int first_rc = 0;
	struct strata_error first = { 0 };
	for (int i = 0; i < sd->nprofiles && !rc; i++) {
		rc = resolve_one(sd, i, state, err);
		if (!rc || !errs || rc == STRATA_NOMEM)
			continue;
		/* Note it, and mark the profiles it stopped (this one, and those
		 * on the way to it) as failed: the others resolve all the same. */
		if (rc != PARENT_FAILED) {
			base_errs_add(errs, err);
			if (!first_rc) {
				first_rc = rc;
				if (err)
					first = *err;
			}
		}
		for (int k = 0; k < sd->nprofiles; k++)
			if (state[k] == VISITING)
				state[k] = FAILED;
		state[i] = FAILED;
		rc = 0;
	}
	for (int i = 0; i < sd->nprofiles; i++)
		sd->profiles[i].unresolved = state[i] == FAILED;
	base_free(state, (size_t)sd->nprofiles);
	if (!rc && first_rc) {
		rc = first_rc;
		if (err)
			*err = first;
	}
	if (!rc)
		sd->resolved = 1;
	return rc;
}
