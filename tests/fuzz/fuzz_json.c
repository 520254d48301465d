/*
 * fuzz_json.c: the engine's JSON reader (engine/value/json_read.c) against
 * jansson's parser, which it must agree with.
 *
 * The input is parsed by both, as an object or array and as any value:
 * both accept or both refuse (an input with a NUL byte, which the reader
 * always refuses, excepted), and what both accept prints the same.  A
 * refusal has a reason and a line and column inside the input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../../engine/engine_int.h"

/* Text from json_dumps goes back to jansson's allocator. */
static void release(char *s)
{
	json_free_t f;
	json_get_alloc_funcs(NULL, &f);
	f(s);
}

static void check(const uint8_t *data, size_t size, size_t flags)
{
	json_error_t je1, je2;
	int oom = 0;
	const char *text = (const char *)data;
	json_t *b = eng_json_parse(text, size, flags, &je2, &oom);
	if (oom)
		fuzz_fail("out of memory reported on %zu bytes", size);
	if (!b) {
		long lines = 1;
		for (size_t i = 0; i < size; i++)
			lines += data[i] == '\n';
		if (!je2.text[0] || je2.line < 1 || je2.line > lines || je2.column < 1 ||
		    je2.position < 0 || (size_t)je2.position > size)
			fuzz_fail("refused at %d:%d (offset %d of %zu): '%s'", je2.line, je2.column,
			          je2.position, size, je2.text);
	}
	if (memchr(data, 0, size)) {
		if (b)
			fuzz_fail("accepted an input with a NUL byte");
		return;
	}
	json_t *a = json_loadb(text, size, flags, &je1);
	if (!a != !b)
		fuzz_fail("jansson %s (%s), the reader %s (%s)", a ? "accepts" : "refuses",
		          a ? "" : je1.text, b ? "accepts" : "refuses", b ? "" : je2.text);
	if (a) {
		char *da = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT);
		char *db = json_dumps(b, JSON_ENCODE_ANY | JSON_COMPACT);
		if (!da || !db || strcmp(da, db) || !json_equal(a, b))
			fuzz_fail("values differ: jansson %s, the reader %s", da ? da : "?", db ? db : "?");
		release(da);
		release(db);
	}
	json_decref(a);
	json_decref(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t live = fuzz_live_bytes();
	check(data, size, 0);
	check(data, size, JSON_DECODE_ANY);
	fuzz_check_live(live, "json");
	return 0;
}
