/*
 * embed.c: the embedders of an application, the components of its
 * services.xml that turn text into tensors (Vespa's 'embed' in indexing
 * statements and in query inputs).  This version has none: every embed is
 * refused with a message naming the embedder.
 */
#include "engine_int.h"

int eng_embedders_load(struct strata *db, struct strata_error *err)
{
	(void)err;
	db->embedders = NULL;
	return 0;
}

void eng_embedders_free(struct eng_embedders *e)
{
	(void)e;
}

int eng_embed(struct strata *db, const char *id, const char *text, size_t len, int for_query,
              const struct rank_field *dest, json_t **out, struct strata_error *err)
{
	(void)db, (void)text, (void)len, (void)for_query, (void)dest;
	*out = NULL;
	return base_err(err, STRATA_NOT_IMPLEMENTED, "embedder '%s': embedders are not supported",
	                id ? id : "(the default)");
}
