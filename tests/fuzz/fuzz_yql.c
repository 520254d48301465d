/*
 * fuzz_yql.c: the YQL parser (engine/request/yql.c).
 *
 * The input is a YQL statement (up to its first NUL byte: yql_parse reads a
 * C string).  A failure must carry its position ("yql:LINE:COL: ...").  A
 * statement that parses is dumped, then run as the "yql" of a search
 * request on the fixture application (harness.c: three document types,
 * one with a field of every type, a few documents), with a query tensor for
 * nearestNeighbor.  The request may fail (an unknown field, say) but not
 * as a parse error, and a result must be JSON.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../../engine/engine_int.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_engine();
	return 0;
}

/* Free a text of json_dumps with jansson's own free function: the library
 * may have given jansson its allocator. */
static void json_text_free(char *s)
{
	json_malloc_t alloc_fn;
	json_free_t free_fn;
	json_get_alloc_funcs(&alloc_fn, &free_fn);
	free_fn(s);
}

static void run_request(const char *yql, size_t len)
{
	json_t *req = json_pack("{s:s%, s:[f,f,f,f], s:i}", "yql", yql, len, "input.query(q)", 0.5,
	                        -1.0, 2.0, 0.0, "hits", 5);
	if (!req)
		return; /* not UTF-8: no JSON request can carry it */
	char *text = json_dumps(req, 0);
	json_decref(req);
	if (!text)
		fuzz_fail("out of memory");
	struct strata_error err = { 0 };
	char *res;
	int rc = strata_query_json(fuzz_engine(), text, &res, &err);
	json_text_free(text);
	if (rc == STRATA_PARSE)
		fuzz_fail("the YQL parses alone, not in a request: %s", err.msg);
	if (rc)
		return;
	json_t *j = json_loads(res, 0, NULL);
	if (!j)
		fuzz_fail("a result that is not JSON: %s", res);
	json_decref(j);
	strata_free(res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t live = fuzz_live_bytes();
	char *text = fuzz_cstring(data, size);
	struct strata_error err = { 0 };
	struct yql_query *q;
	int rc = yql_parse(text, &q, &err);
	if (rc == 0) {
		if (q->where)
			base_strfree(yql_dump(q->where));
		yql_free(q);
		run_request(text, strlen(text));
	} else if (rc != STRATA_NOMEM && (err.code != rc || strncmp(err.msg, "yql:", 4) != 0)) {
		fuzz_fail("error %d without its position: \"%s\"", rc, err.msg);
	}
	free(text);
	fuzz_check_live(live, "yql");
	return 0;
}
