/*
 * harness.h: what the fuzz targets of tests/fuzz/ share.
 *
 * Each target, fuzz_<name>.c, defines LLVMFuzzerTestOneInput (and
 * LLVMFuzzerInitialize when it needs a fixture).  Two drivers run it:
 * libFuzzer in the clang build of `make fuzz` (build-fuzz/), and replay.c,
 * a plain main() that feeds it every file of the committed corpora
 * (tests/fuzz/corpus/<name>/) in the normal and sanitizer builds of
 * `make fuzz-replay`, which `make test` runs.
 *
 *     int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
 *     {
 *         uint64_t live = fuzz_live_bytes();
 *         ... parse data, use what came out, free it ...
 *         fuzz_check_live(live, "sd");     // aborts on a leak
 *         return 0;
 *     }
 *
 * Every input must leave the library's allocator as it found it: a leak,
 * or a block given back with another size than it was allocated with,
 * changes base_alloc_stats' live bytes, and fuzz_check_live() then aborts,
 * which both drivers report as a crash of that input.  What lives across
 * inputs (temporary folders, the fixture application, the model bytes) is
 * made once per process, before the first input takes its count, and is
 * removed at exit.  Nothing here is thread-safe: one input at a time.
 */
#ifndef FUZZ_HARNESS_H
#define FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "../../include/strata.h"
#include "../../rank/rank.h"

/* What a target defines; LLVMFuzzerInitialize is optional (it makes what
 * lives across inputs, the fixtures below). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The library's live heap bytes now (base_alloc_stats). */
uint64_t fuzz_live_bytes(void);

/* Abort, naming target, when the live bytes differ from before. */
void fuzz_check_live(uint64_t before, const char *target);

/* The input up to its first NUL byte, a new C string (free() it); aborts
 * when memory runs out. */
char *fuzz_cstring(const uint8_t *data, size_t size);

/* Print "fuzz: message" on stderr and abort (a finding). */
_Noreturn void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A new empty folder, under /dev/shm where there is one (the store's syncs
 * cost nothing there), else under $TMPDIR or /tmp.  It is removed with
 * everything in it when the process exits normally, and by the next
 * process that makes one when this one crashed.  Aborts on failure. */
const char *fuzz_tempdir(void);

/* A new application folder (a fuzz_tempdir) with an empty schemas/ in it,
 * whose path *schemas receives (both live as long as the process). */
const char *fuzz_appdir(const char **schemas);

/* Write n bytes to dir/name (created or truncated); aborts on failure. */
void fuzz_write(const char *dir, const char *name, const void *data, size_t n);

/* ---- rank applications ---------------------------------------------------------- */

struct rank_sd;

/* The rank_loader callback of fuzzed applications; no model file is read.
 * With ud NULL, every onnx-model gets y = x * w, x and y float [batch, 4].
 * With ud a parsed schema (struct rank_sd), the model for file is made to
 * fit the onnx-model blocks that name it: a float input of any shape for
 * each input they map, and for each output they name (or "y") a float
 * [batch, 1] copy of one of the inputs (which may not be [batch, 1] at run
 * time); the fixed model when that cannot be made. */
int fuzz_load_model(void *ud, const char *file, const char *path, struct rt_model **out,
                    struct strata_error *err);

/* Load the application in appdir with fuzz_load_model as its loader, whose
 * ud is sd (may be NULL). */
int fuzz_rank_load(const char *appdir, const struct rank_sd *sd, struct rank_app **out,
                   struct strata_error *err);

/* Evaluate, in app, every rank profile of sd (the resolved parse of app's
 * schema) over a few made-up documents whose attributes have the declared
 * types (the last document has none): query inputs set, a nearestNeighbor
 * item where one fits, first and second phase, match and summary features
 * (every cell of each is read), and the EXPLAIN dump.  Errors of
 * evaluation are outcomes, not findings; what it checks aborts. */
void fuzz_rank_run(const struct rank_app *app, const struct rank_sd *sd);

/* ---- the engine fixture ------------------------------------------------------------ */

/* An application opened once per process, in a temporary folder, with
 * three document types ("doc": a field of every type, "other", and the
 * example application's "product") and a few documents
 * (fuzz_engine_reset puts them back).  Call it from LLVMFuzzerInitialize:
 * what it allocates must be there before the first input's count.  Aborts
 * when it cannot be made. */
struct strata *fuzz_engine(void);

/* Bring the fixture's store back to its first documents: every document
 * a query lists is read back (which must succeed) and removed, then the
 * first documents are put again. */
void fuzz_engine_reset(struct strata *db);

#endif
