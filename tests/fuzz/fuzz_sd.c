/*
 * fuzz_sd.c: the .sd schema parser (rank/parse.c and its lexer).
 *
 * The input is the text of one .sd file.  It is parsed from memory, exactly
 * its bytes (no terminating NUL to lean on), and its profiles' inheritance
 * resolved.  A failure must carry its position ("fuzz.sd:LINE:COL: ...").
 * Text that parses is then loaded as an application the way strata deploy
 * does (rank_app_load: types checked, every expression compiled, each
 * onnx-model given a model made to fit its block), and every profile is
 * evaluated over made-up documents (harness.c).
 */
#include <string.h>

#include "harness.h"
#include "../../rank/rank_int.h"

static const char *appdir, *schemas;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	appdir = fuzz_appdir(&schemas);
	return 0;
}

/* A failure's message begins with the file's name and a position. */
static void check_message(int rc, const struct strata_error *err, const char *file)
{
	if (rc == STRATA_NOMEM)
		return;
	if (err->code != rc || strncmp(err->msg, file, strlen(file)) != 0 ||
	    err->msg[strlen(file)] != ':')
		fuzz_fail("error %d without its position: \"%s\"", rc, err->msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t live = fuzz_live_bytes();
	struct strata_error err = { 0 };
	struct rank_sd *sd;
	int rc = rank_sd_parse("fuzz.sd", (const char *)data, size, &sd, &err);
	if (rc == 0 && (rc = rank_sd_resolve(sd, &err)) != 0)
		rank_sd_free(sd);
	if (rc) {
		check_message(rc, &err, "fuzz.sd");
		fuzz_check_live(live, "sd");
		return 0;
	}
	fuzz_write(schemas, "fuzz.sd", data, size);
	struct rank_app *app;
	rc = fuzz_rank_load(appdir, sd, &app, &err);
	if (rc == STRATA_PARSE)
		fuzz_fail("parsed from memory, but its application fails to parse: %s", err.msg);
	if (rc == 0) {
		fuzz_rank_run(app, sd);
		rank_app_free(app);
	}
	rank_sd_free(sd);
	fuzz_check_live(live, "sd");
	return 0;
}
