/*
 * fuzz_feed.c: Vespa document operations checked against a schema
 * (engine/feed.c, tensor_json.c and the store under them).
 *
 * The input is a feed as `strata feed` reads it: JSON Lines or one JSON
 * array of operations.  It is fed into the fixture application (harness.c:
 * three document types, one with a field of every type), where each
 * operation is parsed against its document type's schema and written, or
 * reported with its line and skipped.  A reported line must lie inside the input.  When
 * something was written, every document is read back and removed, and the
 * fixture's first documents put back, so that each input starts from the
 * same store.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"

static const char *dir;
static char path[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_engine();
	dir = fuzz_tempdir();
	snprintf(path, sizeof path, "%s/feed.jsonl", dir);
	return 0;
}

static void report(void *ud, long line, int code, const char *msg)
{
	long lines = *(const long *)ud;
	if (line < 1 || line > lines || code >= 0 || !msg || !*msg)
		fuzz_fail("a failure reported at line %ld of %ld, code %d: %s", line, lines, code,
		          msg ? msg : "(no message)");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t live = fuzz_live_bytes();
	long lines = 1;
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	fuzz_write(dir, "feed.jsonl", data, size);
	struct strata *db = fuzz_engine();
	struct strata_feed_stats st = { 0 };
	struct strata_error err = { 0 };
	strata_feed_file(db, path, report, &lines, &st, &err);
	if (st.ok < 0 || st.failed < 0)
		fuzz_fail("feed statistics: %ld ok, %ld failed", st.ok, st.failed);
	if (st.ok > 0)
		fuzz_engine_reset(db);
	fuzz_check_live(live, "feed");
	return 0;
}
