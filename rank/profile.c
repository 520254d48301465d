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

int rank_schema_field_index(const struct rank_schema *s, const char *name)
{
	for (int i = 0; i < s->sd->nfields; i++)
		if (strcmp(s->sd->fields[i].name, name) == 0)
			return i;
	return -1;
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
