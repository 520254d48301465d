/*
 * inputs.c: the query inputs a rank profile reads without declaring them.
 * As in Vespa, query(x) with no x in the profile's inputs { } (nor a
 * rank-properties default) is a number, 0 unless the query gives it a
 * value: once a profile is flat (schema.c; app.c calls this next), each
 * such name is added to its inputs as a double with no default, marked
 * implicit, at the place it is first read, so that the compiler and the
 * query's inputs see it like a declared one.  The engine refuses a query
 * that gives it anything but a number.
 */
#include <string.h>

#include "rank_syntax.h"

static int declared(const struct rank_profile_decl *p, const char *name)
{
	for (int i = 0; i < p->ninputs; i++)
		if (strcmp(p->inputs[i].name, name) == 0)
			return 1;
	return 0;
}

/* Add the undeclared query(name)s a reads (the whole tree). */
static int add_from(struct rank_profile_decl *p, const struct rank_ast *a)
{
	if (!a)
		return 0;
	if (a->kind == RA_CALL && strcmp(a->name, "query") == 0 && a->nargs == 1 &&
	    (a->args[0]->kind == RA_NAME || a->args[0]->kind == RA_STR) &&
	    !declared(p, a->args[0]->name)) {
		if (rank_vec_push(&p->inputs, &p->ninputs, sizeof *p->inputs))
			return STRATA_NOMEM;
		struct rank_input_decl *in = &p->inputs[p->ninputs - 1];
		in->type.cell = BASE_DT_DOUBLE;
		in->implicit = 1;
		in->pos = a->pos;
		if (!(in->name = base_strdup(a->args[0]->name)))
			return STRATA_NOMEM;
	}
	for (int i = 0; i < a->nargs; i++) {
		int rc = add_from(p, a->args[i]);
		if (rc)
			return rc;
	}
	return 0;
}

int rank_profile_implicit_inputs(struct rank_profile_decl *p, struct strata_error *err)
{
	int rc = add_from(p, p->first_phase) || add_from(p, p->second_phase) ||
	         add_from(p, p->global_phase);
	for (int i = 0; i < p->nfunctions && !rc; i++)
		rc = add_from(p, p->functions[i].body);
	for (int i = 0; i < p->nmatch_features && !rc; i++)
		rc = add_from(p, p->match_features[i]);
	for (int i = 0; i < p->nsummary_features && !rc; i++)
		rc = add_from(p, p->summary_features[i]);
	for (int m = 0; m < p->nmodels && !rc; m++)
		for (int i = 0; i < p->models[m].ninputs && !rc; i++)
			rc = add_from(p, p->models[m].inputs[i].source);
	return rc ? base_nomem(err, "the query inputs of rank-profile '%s'", p->name) : 0;
}

/* The loader's typed inputs (struct rank_loader.typed_inputs) that p does
 * not declare itself, declared: before the implicit ones, so that query(x)
 * read undeclared takes the type given. */
int rank_profile_typed_inputs(struct rank_profile_decl *p, const struct rank_typed_input *ts,
                              int n, struct strata_error *err)
{
	for (int k = 0; k < n; k++) {
		const struct rank_typed_input *t = &ts[k];
		int have = 0;
		for (int i = 0; i < p->ninputs && !have; i++)
			have = strcmp(p->inputs[i].name, t->name) == 0;
		if (have)
			continue;
		if (rank_vec_push(&p->inputs, &p->ninputs, sizeof *p->inputs))
			return base_nomem(err, "query(%s)", t->name);
		struct rank_input_decl *in = &p->inputs[p->ninputs - 1];
		in->pos = (struct rank_pos){ t->file, t->line, t->col };
		int rc = rank_type_parse_mapped(t->type, &in->type);
		if (!rc && !(in->name = base_strdup(t->name)))
			rc = STRATA_NOMEM;
		if (rc) {
			rank_input_decl_clear(in);
			p->ninputs--;
			return rc == STRATA_NOMEM ? base_nomem(err, "query(%s)", t->name)
			                          : base_err(err, rc, "%s:%d:%d: query(%s): '%s' is not a type",
			                                     t->file, t->line, t->col, t->name, t->type);
		}
	}
	return 0;
}
