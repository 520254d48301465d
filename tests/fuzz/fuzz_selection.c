/*
 * fuzz_selection.c: the document selection language (engine/request/selection.c,
 * selection_eval.c).
 *
 * The input is a selection (up to its first NUL byte), used to visit each
 * document type of the fixture application (harness.c: a field of every
 * type, a few documents), so that what parses is also evaluated against
 * every stored document.  A failure must carry its position
 * ("selection:1:COL: ...") and a code of the parser; a page must be JSON
 * holding no more documents than the type has.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_engine();
	return 0;
}

static void visit(const char *type, const char *selection)
{
	struct strata_error err = { 0 };
	char *page = NULL;
	int rc = strata_visit_select_json(fuzz_engine(), type, NULL, selection, NULL, 1024, &page,
	                                  &err);
	if (rc == STRATA_NOMEM)
		return;
	if (rc) {
		if (page)
			fuzz_fail("a page beside error %d", rc);
		if ((rc != STRATA_PARSE && rc != STRATA_INVALID_ARGUMENT &&
		     rc != STRATA_NOT_IMPLEMENTED && rc != STRATA_LIMIT) ||
		    err.code != rc || strncmp(err.msg, "selection:1:", 12) != 0)
			fuzz_fail("error %d without its position: \"%s\"", rc, err.msg);
		return;
	}
	json_t *j = json_loads(page, 0, NULL);
	if (!j || !json_is_array(json_object_get(j, "documents")))
		fuzz_fail("a page that is not a visit's JSON: %s", page);
	if (json_array_size(json_object_get(j, "documents")) > 16)
		fuzz_fail("more documents than the fixture has: %s", page);
	json_decref(j);
	strata_free(page);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t live = fuzz_live_bytes();
	char *text = fuzz_cstring(data, size);
	visit("doc", text);
	visit("other", text);
	visit("product", text);
	free(text);
	fuzz_check_live(live, "selection");
	return 0;
}
