/*
 * fuzz_services.c: services.xml (engine/services.c).
 *
 * The input is written as a services.xml and read for its embedder
 * components.  A failure must name the file and a position
 * ("services.xml:LINE:COL: ...") unless memory ran out; a success must give
 * components with an id, a type and the model input and output names every
 * embedder that runs has.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "../../engine/engine_int.h"

static char path[512];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(path, sizeof path, "%s/services.xml", fuzz_tempdir());
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!path[0])
		LLVMFuzzerInitialize(NULL, NULL);
	char *slash = strrchr(path, '/');
	*slash = 0;
	fuzz_write(path, "services.xml", data, size);
	*slash = '/';
	uint64_t live = fuzz_live_bytes();
	struct eng_services s;
	struct strata_error err = { 0 };
	int rc = eng_services_read(path, &s, &err);
	if (rc == 0) {
		for (int i = 0; i < s.n; i++) {
			const struct eng_component *c = &s.c[i];
			if (!c->id || !*c->id || !c->type || !c->line || !c->col)
				fuzz_fail("component %d without an id, a type or a position", i);
			if (c->kind != ENG_EMB_OTHER && (!c->in_ids || !c->in_mask || !c->in_types ||
			                                 !c->output))
				fuzz_fail("component '%s' without its model names", c->id);
		}
	} else if (rc != STRATA_NOMEM &&
	           (strncmp(err.msg, path, strlen(path)) || err.msg[strlen(path)] != ':')) {
		fuzz_fail("error %d without its position: \"%s\"", rc, err.msg);
	}
	eng_services_free(&s);
	fuzz_check_live(live, "services");
	return 0;
}
