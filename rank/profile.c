/*
 * profile.c: the read side of a loaded schema and its compiled profiles, as
 * rank.h hands them out: fields, profiles by name, their phases and
 * declared query inputs.  Everything here only reads what app.c loaded and
 * compile.c built, and may be called from any thread.
 */
#include <string.h>

#include "rank_eval.h"

const char *rank_schema_name(const struct rank_schema *s)
{
	return s->sd->name;
}

int rank_schema_nfields(const struct rank_schema *s)
{
	return s->sd->nfields;
}

const struct rank_field *rank_schema_field(const struct rank_schema *s, int i)
{
	return i >= 0 && i < s->sd->nfields ? &s->sd->fields[i] : NULL;
}

int rank_schema_fieldset(const struct rank_schema *s, const char *name, const int **fields)
{
	for (int i = 0; i < s->sd->nfieldsets; i++)
		if (strcmp(s->sd->fieldsets[i].name, name) == 0) {
			*fields = s->sd->fieldsets[i].fields;
			return s->sd->fieldsets[i].nfields;
		}
	return -1;
}

int rank_schema_field_index(const struct rank_schema *s, const char *name)
{
	return rank_sd_field_index(s->sd, name);
}

const struct rank_summary_class *rank_schema_summary(const struct rank_schema *s, const char *name)
{
	for (int i = 0; i < s->sd->nclasses; i++)
		if (strcmp(s->sd->classes[i].name, name) == 0)
			return &s->sd->classes[i];
	return NULL;
}

const struct rank_profile *rank_profile_find(const struct rank_schema *s, const char *name)
{
	for (int i = 0; i < s->nprofiles; i++)
		if (strcmp(s->profiles[i].decl->name, name) == 0)
			return &s->profiles[i];
	return NULL;
}

const char *rank_profile_name(const struct rank_profile *p)
{
	return p->decl->name;
}

int rank_profile_has_second_phase(const struct rank_profile *p)
{
	return p->has_second;
}

int rank_profile_rerank_count(const struct rank_profile *p)
{
	return p->rerank;
}

int rank_profile_threads_per_search(const struct rank_profile *p)
{
	return p->decl->threads_per_search;
}

int rank_profile_min_hits_per_thread(const struct rank_profile *p)
{
	return p->decl->min_hits_per_thread;
}

int rank_profile_has_global_phase(const struct rank_profile *p)
{
	return p->has_global;
}

int rank_profile_global_rerank_count(const struct rank_profile *p)
{
	return p->global_rerank;
}

int rank_profile_phase_drop_limit(const struct rank_profile *p, int phase, double *limit)
{
	const struct rank_profile_decl *d = p->decl;
	int has = phase == 1 ? d->has_drop_limit : phase == 2 ? d->has_drop2 : d->has_drop3;
	if (has)
		*limit = phase == 1 ? d->drop_limit : phase == 2 ? d->drop2 : d->drop3;
	return has;
}

double rank_profile_nn_setting(const struct rank_profile *p, int which)
{
	if (p->decl->nn_given >> which & 1)
		return p->decl->nn[which];
	return rank_nn_setting_info(which)->def;
}

int rank_profile_drop_limit(const struct rank_profile *p, double *limit)
{
	if (!p->decl->has_drop_limit)
		return 0;
	*limit = p->decl->drop_limit;
	return 1;
}

/* Does prog read query input i? */
static int reads_input(const struct rank_prog *prog, int i)
{
	for (int k = 0; k < prog->ncode; k++)
		if (prog->code[k].op == RANK_OP_QUERY && prog->code[k].a == i)
			return 1;
	return 0;
}

void rank_profile_mark_inputs(struct rank_profile *p)
{
	for (int i = 0; i < p->ninputs; i++) {
		struct rank_input_info *in = &p->inputs[i];
		in->has_default = p->decl->inputs[i].has_default;
		int used = reads_input(&p->first, i) || reads_input(&p->second, i) ||
		           reads_input(&p->global, i);
		for (int k = 0; k < p->nnorms && !used; k++)
			used = reads_input(&p->norms[k].arg, i);
		for (int k = 0; k < p->nmatch && !used; k++)
			used = reads_input(&p->match[k], i);
		for (int k = 0; k < p->nsummary && !used; k++)
			used = reads_input(&p->summary[k], i);
		for (int m = 0; m < p->nmodels && !used; m++)
			if (p->models[m].state == 2)
				for (int k = 0; k < p->models[m].nin && !used; k++)
					used = reads_input(&p->models[m].src[k], i);
		in->required = used && !in->has_default && in->rank > 0 &&
		               !rank_type_mapped(&p->decl->inputs[i].type);
	}
}

int rank_profile_ninputs(const struct rank_profile *p)
{
	return p->ninputs;
}

const struct rank_input_info *rank_profile_input(const struct rank_profile *p, int i)
{
	return i >= 0 && i < p->ninputs ? &p->inputs[i] : NULL;
}

int rank_profile_input_index(const struct rank_profile *p, const char *name)
{
	for (int i = 0; i < p->ninputs; i++)
		if (strcmp(p->inputs[i].name, name) == 0)
			return i;
	return -1;
}
