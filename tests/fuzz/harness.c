/*
 * harness.c: the fuzz targets' shared fixtures (harness.h): the leak check,
 * temporary folders, the model handed to fuzzed applications, made-up
 * documents for ranking, and the engine application that the feed and YQL
 * targets work on.
 *
 * This is test code: it allocates its own memory with malloc, never with
 * the library's allocator, so that the live-byte count is the library's
 * alone; and it aborts on anything it cannot set up.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "../../rank/rank_int.h"
#include "../modelbuild.h"

/* ---- the leak check and failures --------------------------------------------------- */

uint64_t fuzz_live_bytes(void)
{
	struct base_alloc_stats st;
	base_alloc_stats(&st);
	return st.live_bytes;
}

void fuzz_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("fuzz: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

char *fuzz_cstring(const uint8_t *data, size_t size)
{
	size_t len = strnlen((const char *)data, size);
	char *text = malloc(len + 1);
	if (!text)
		fuzz_fail("out of memory");
	memcpy(text, data, len);
	text[len] = 0;
	return text;
}

void fuzz_check_live(uint64_t before, const char *target)
{
	uint64_t now = fuzz_live_bytes();
	if (now != before)
		fuzz_fail("%s: the library's live heap went from %llu to %llu bytes over one input "
		          "(a leak, or a block freed with the wrong size)",
		          target, (unsigned long long)before, (unsigned long long)now);
}

/* ---- temporary folders ----------------------------------------------------------------- */

#define MAX_TEMPDIRS 8
static char *tempdirs[MAX_TEMPDIRS];
static char *subdirs[MAX_TEMPDIRS]; /* fuzz_appdir's schemas/ of tempdirs[i], or NULL */
static int ntempdirs;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void remove_tempdirs(void)
{
	for (int i = 0; i < ntempdirs; i++) {
		nftw(tempdirs[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(tempdirs[i]);
		free(subdirs[i]);
	}
	ntempdirs = 0;
}

/* A process that crashed (a finding, or each run of a crash being
 * minimized) left its folders: "strata-fuzz-PID-*" whose PID is gone. */
static void remove_stale(const char *root)
{
	DIR *d = opendir(root);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		long pid;
		char rest;
		if (sscanf(de->d_name, "strata-fuzz-%ld-%c", &pid, &rest) != 2 || pid <= 0 ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", root, de->d_name);
		nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	closedir(d);
}

const char *fuzz_tempdir(void)
{
	struct stat st;
	const char *root = getenv("TMPDIR");
	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0)
		root = "/dev/shm";
	else if (!root || !*root)
		root = "/tmp";
	if (ntempdirs == MAX_TEMPDIRS)
		fuzz_fail("more than %d temporary folders", MAX_TEMPDIRS);
	if (ntempdirs == 0)
		remove_stale(root);
	size_t n = strlen(root) + 64;
	char *dir = malloc(n);
	if (!dir)
		fuzz_fail("out of memory");
	snprintf(dir, n, "%s/strata-fuzz-%ld-XXXXXX", root, (long)getpid());
	if (!mkdtemp(dir))
		fuzz_fail("mkdtemp %s: %s", dir, strerror(errno));
	if (ntempdirs == 0)
		atexit(remove_tempdirs);
	tempdirs[ntempdirs++] = dir;
	return dir;
}

void fuzz_write(const char *dir, const char *name, const void *data, size_t n)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0)
		fuzz_fail("writing %s: %s", path, strerror(errno));
}

const char *fuzz_appdir(const char **schemas)
{
	const char *dir = fuzz_tempdir();
	size_t n = strlen(dir) + sizeof "/schemas";
	char *sub = malloc(n);
	if (!sub)
		fuzz_fail("out of memory");
	snprintf(sub, n, "%s/schemas", dir);
	if (mkdir(sub, 0700) != 0)
		fuzz_fail("mkdir %s: %s", sub, strerror(errno));
	subdirs[ntempdirs - 1] = sub;
	*schemas = sub;
	return dir;
}

/* ---- the model of fuzzed applications ------------------------------------------------ */

#define MAX_NAMES 32

static void add_name(const char **names, int *n, const char *name)
{
	if (!name || !*name || strchr(name, ',') || *n == MAX_NAMES)
		return;
	for (int i = 0; i < *n; i++)
		if (strcmp(names[i], name) == 0)
			return;
	names[(*n)++] = name;
}

static void decl_names(const struct rank_model_decl *d, int nd, const char *file,
                       const char **in, int *nin, const char **out, int *nout)
{
	for (int i = 0; i < nd; i++) {
		if (!d[i].file || strcmp(d[i].file, file) != 0)
			continue;
		for (int k = 0; k < d[i].ninputs; k++)
			add_name(in, nin, d[i].inputs[k].name);
		for (int k = 0; k < d[i].noutputs; k++)
			add_name(out, nout, d[i].outputs[k].name);
	}
}

/* The model the onnx-model blocks of sd that name file describe: a float
 * input of any shape for each input they map, and each output they name
 * (or "y") a float [batch, 1] copy of one of the inputs.  1 when no block
 * names file, none maps an input, or every output is named as an input. */
static int described_model(const struct rank_sd *sd, const char *file, struct rt_model **model,
                           struct strata_error *err)
{
	const char *in[MAX_NAMES], *out[MAX_NAMES];
	int nin = 0, nout = 0;
	decl_names(sd->models, sd->nmodels, file, in, &nin, out, &nout);
	for (int p = 0; p < sd->nprofiles; p++)
		decl_names(sd->profiles[p].models, sd->profiles[p].nmodels, file, in, &nin, out, &nout);
	if (nin == 0)
		return 1;
	if (nout == 0)
		out[nout++] = "y";
	/* A name may not be an input and an output both. */
	int k = 0;
	for (int o = 0; o < nout; o++) {
		int clash = 0;
		for (int i = 0; i < nin; i++)
			clash |= strcmp(out[o], in[i]) == 0;
		if (!clash)
			out[k++] = out[o];
	}
	if ((nout = k) == 0)
		return 1;
	const char *names[2] = { "batch", "" };
	struct mb_model *m = mb_new("fuzz", 17);
	for (int i = 0; i < nin; i++)
		mb_input(m, in[i], BASE_DT_FLOAT, -1, NULL, NULL);
	for (int o = 0; o < nout; o++) {
		mb_output(m, out[o], BASE_DT_FLOAT, 2, (int64_t[]){ -1, 1 }, names);
		mb_node(m, "Identity", in[o % nin], out[o]);
	}
	void *bytes;
	size_t size;
	if (mb_serialize(m, &bytes, &size) != 0)
		fuzz_fail("serializing a model");
	mb_free(m);
	int rc = runtime_model_load_buffer(bytes, size, NULL, model, err);
	free(bytes);
	return rc;
}

static void *model_bytes;
static size_t model_size;

static void free_model_bytes(void)
{
	free(model_bytes);
	model_bytes = NULL;
}

int fuzz_load_model(void *ud, const char *file, const char *path, struct rt_model **out,
                    struct strata_error *err)
{
	(void)path;
	int rc = ud ? described_model(ud, file, out, err) : 1;
	if (rc <= 0)
		return rc;
	if (!model_bytes) {
		static const float w[4] = { 0.5f, -1, 2, 0.25f };
		const char *names[2] = { "batch", "" };
		struct mb_model *m = mb_new("fuzz", 17);
		mb_input(m, "x", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, names);
		mb_output(m, "y", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 4 }, names);
		mb_init(m, "w", BASE_DT_FLOAT, 1, (int64_t[]){ 4 }, w);
		mb_node(m, "Mul", "x,w", "y");
		if (mb_serialize(m, &model_bytes, &model_size) != 0)
			fuzz_fail("serializing the fixture model");
		mb_free(m);
		atexit(free_model_bytes);
	}
	return runtime_model_load_buffer(model_bytes, model_size, NULL, out, err);
}

int fuzz_rank_load(const char *appdir, const struct rank_sd *sd, struct rank_app **out,
                   struct strata_error *err)
{
	struct rank_loader loader = { .load = fuzz_load_model, .ud = (void *)sd };
	return rank_app_load_with(appdir, &loader, out, err);
}

/* ---- made-up documents -------------------------------------------------------------------- */

#define NDOCS 4
#define DOC_MAX_BYTES ((size_t)1 << 20) /* a field value larger than this is left missing */

struct docs {
	const struct rank_schema *s;
	int nfields;
	void **vals;     /* [field * NDOCS + lid], malloc'd; NULL: no value */
};

static void *field_value(const struct rank_field *f, uint32_t lid)
{
	int cell;
	size_t n = 1;
	switch (f->type) {
	case RANK_FT_INT: cell = BASE_DT_INT32; break;
	case RANK_FT_LONG: cell = BASE_DT_INT64; break;
	case RANK_FT_FLOAT: cell = BASE_DT_FLOAT; break;
	case RANK_FT_DOUBLE: cell = BASE_DT_DOUBLE; break;
	case RANK_FT_BOOL: cell = BASE_DT_UINT8; break;
	case RANK_FT_TENSOR:
		cell = f->cell;
		for (int d = 0; d < f->rank; d++) {
			if (f->dims[d] <= 0 || (size_t)f->dims[d] > DOC_MAX_BYTES / n)
				return NULL;
			n *= (size_t)f->dims[d];
		}
		break;
	default:
		return NULL; /* strings are not read through attributes */
	}
	size_t esz = base_dtype_size(cell);
	if (!esz || n > DOC_MAX_BYTES / esz)
		return NULL;
	void *v = malloc(n * esz);
	if (!v)
		fuzz_fail("out of memory");
	for (size_t i = 0; i < n; i++) {
		double x = (double)((i * 7 + lid * 3) % 11) - 5 + 0.25 * lid;
		if (cell == BASE_DT_BFLOAT16)
			((uint16_t *)v)[i] = base_f32_to_bf16((float)x);
		else if (cell == BASE_DT_UINT8)
			((uint8_t *)v)[i] = (uint8_t)((i + lid) & 1);
		else
			base_store_double(cell, v, i, x);
	}
	return v;
}

static void docs_init(struct docs *d, const struct rank_schema *s)
{
	d->s = s;
	d->nfields = rank_schema_nfields(s);
	d->vals = calloc((size_t)d->nfields * NDOCS + 1, sizeof *d->vals);
	if (!d->vals)
		fuzz_fail("out of memory");
	for (int f = 0; f < d->nfields; f++)
		for (uint32_t lid = 0; lid + 1 < NDOCS; lid++)
			d->vals[f * NDOCS + lid] = field_value(rank_schema_field(s, f), lid);
}

static void docs_free(struct docs *d)
{
	for (int i = 0; i < d->nfields * NDOCS; i++)
		free(d->vals[i]);
	free(d->vals);
}

static const void *docs_attr(void *ud, int field, uint32_t lid)
{
	struct docs *d = ud;
	if (field < 0 || field >= d->nfields || lid >= NDOCS)
		fuzz_fail("ranking asked for field %d of document %u (%d fields, %d documents)", field,
		          lid, d->nfields, NDOCS);
	return d->vals[field * NDOCS + lid];
}

/* ---- running profiles ----------------------------------------------------------------- */

static volatile double sink;

/* Every cell and label of a feature is read: a wrong count or a dangling
 * pointer shows under the sanitizers.  A type with mapped dimensions (dims
 * -1) comes as sparse blocks of ncells cells each (rank.h). */
static int feature_cb(void *ud, const struct rank_feature *f)
{
	(void)ud;
	size_t n = 1;
	int mapped = 0;
	for (int i = 0; i < f->rank; i++) {
		if (f->dims[i] < 0)
			mapped++;
		else
			n *= (size_t)f->dims[i];
	}
	if (n != f->ncells || !f->name || (mapped ? !f->sparse || f->cells : !f->cells))
		fuzz_fail("feature %s: %zu cells for its dimensions, %zu given%s",
		          f->name ? f->name : "(no name)", n, f->ncells,
		          mapped ? (f->sparse ? "" : ", no blocks") : "");
	double s = 0;
	if (!mapped) {
		for (size_t i = 0; i < f->ncells; i++)
			s += f->cells[i];
	} else {
		for (size_t b = 0; b < f->sparse->nblocks; b++) {
			for (int m = 0; m < mapped; m++)
				s += (double)strlen(f->sparse->labels[b * (size_t)mapped + (size_t)m]);
			for (size_t i = 0; i < f->ncells; i++)
				s += f->sparse->cells[b * f->ncells + i];
		}
	}
	sink = s;
	return 0;
}

static void set_inputs(struct rank_query *q, const struct rank_profile *p,
                       const struct rank_schema *s)
{
	struct strata_error err = { 0 };
	for (int i = 0; i < rank_profile_ninputs(p); i++) {
		const struct rank_input_info *in = rank_profile_input(p, i);
		if (in->ncells > DOC_MAX_BYTES / sizeof(double))
			continue;
		double *cells = malloc((in->ncells + 1) * sizeof *cells);
		if (!cells)
			fuzz_fail("out of memory");
		for (size_t k = 0; k < in->ncells; k++)
			cells[k] = (double)(k % 7) - 3 + 0.5;
		int mapped = 0;
		for (int d = 0; d < in->rank; d++)
			mapped += in->dims[d] < 0;
		int rc;
		if (mapped) { /* one block, every mapped dimension labelled "a" */
			const char *labels[RANK_MAX_RANK];
			for (int m = 0; m < mapped; m++)
				labels[m] = "a";
			rc = rank_query_set_input_sparse(q, in->name, 1, labels, cells, &err);
		} else {
			rc = rank_query_set_input(q, in->name, cells, in->ncells, &err);
		}
		if (rc != 0)
			fuzz_fail("query(%s): a declared input of %zu cells refused: %s", in->name,
			          in->ncells, err.msg);
		free(cells);
	}
	/* The first tensor attribute and input that fit make the nearestNeighbor item. */
	for (int f = 0; f < rank_schema_nfields(s); f++) {
		const struct rank_field *rf = rank_schema_field(s, f);
		if (rf->type != RANK_FT_TENSOR || !rf->attribute)
			continue;
		for (int i = 0; i < rank_profile_ninputs(p); i++)
			if (rank_query_set_nn(q, rf->name, rank_profile_input(p, i)->name, &err) == 0)
				return;
	}
}

static void run_profile(const struct rank_profile *p, struct docs *d)
{
	static const uint32_t lids[NDOCS] = { 0, 1, 2, 3 };
	struct rank_docs rd = { .ud = d, .attr = docs_attr };
	struct strata_error err = { 0 };
	struct rank_query *q;
	char *explain = rank_profile_explain(p);
	base_strfree(explain);
	if (rank_query_new(p, &q, &err) != 0)
		return;
	set_inputs(q, p, d->s);
	double first[NDOCS], second[NDOCS];
	if (rank_query_first_phase(q, &rd, lids, NDOCS, first, &err) == 0 &&
	    (!rank_profile_has_second_phase(p) ||
	     rank_query_second_phase(q, &rd, lids, first, NDOCS, second, &err) == 0)) {
		for (int i = 0; i < NDOCS; i++) {
			rank_query_features(q, &rd, lids[i], first[i], RANK_MATCH_FEATURES, feature_cb,
			                    NULL, &err);
			rank_query_features(q, &rd, lids[i], first[i], RANK_SUMMARY_FEATURES, feature_cb,
			                    NULL, &err);
		}
	}
	rank_query_free(q);
}

void fuzz_rank_run(const struct rank_app *app, const struct rank_sd *sd)
{
	const struct rank_schema *s = rank_app_schema_find(app, sd->name);
	if (!s)
		fuzz_fail("schema %s was parsed but is not in its application", sd->name);
	struct docs d;
	docs_init(&d, s);
	for (int k = 0; k < sd->nprofiles; k++) {
		const struct rank_profile *p = rank_profile_find(s, sd->profiles[k].name);
		if (!p)
			fuzz_fail("profile %s was parsed but is not in its application",
			          sd->profiles[k].name);
		run_profile(p, &d);
	}
	docs_free(&d);
}

/* ---- the engine fixture ------------------------------------------------------------------- */

static const char engine_doc_sd[] =
	"schema doc {\n"
	"  document doc {\n"
	"    field title type string { indexing: summary | attribute }\n"
	"    field body type string { indexing: summary }\n"
	"    field n type int { indexing: summary | attribute }\n"
	"    field l type long { indexing: summary | attribute }\n"
	"    field f type float { indexing: summary | attribute }\n"
	"    field d type double { indexing: summary | attribute }\n"
	"    field b type bool { indexing: summary | attribute }\n"
	"    field emb type tensor<float>(x[4]) {\n"
	"      indexing: summary | attribute\n"
	"      attribute { distance-metric: angular }\n"
	"    }\n"
	"    field m type tensor<double>(x[2],y[3]) { indexing: summary | attribute }\n"
	"    field i8 type tensor<int8>(x[3]) { indexing: summary | attribute }\n"
	"    field bf type tensor<bfloat16>(x[2]) { indexing: summary | attribute }\n"
	"    field i32 type tensor<int32>(x[2]) { indexing: summary | attribute }\n"
	"    field i64 type tensor<int64>(x[2]) { indexing: summary }\n"
	"  }\n"
	"  field tb type string {\n"
	"    indexing: (input title || \"\") . \" \" . (input body || \"\") | lowercase | summary\n"
	"  }\n"
	"  field ch type array<string> { indexing: input body | chunk sentence | summary }\n"
	"  field bits type tensor<int8>(x[1]) { indexing: input emb | binarize | pack_bits | attribute }\n"
	"  rank-profile default {\n"
	"    inputs { query(q) tensor<float>(x[4]) }\n"
	"    first-phase { expression: attribute(f) + attribute(n) + closeness(field, emb) }\n"
	"    second-phase {\n"
	"      rerank-count: 2\n"
	"      expression: firstPhase + sum(attribute(m)) + sum(attribute(i8))\n"
	"    }\n"
	"    match-features: attribute(d) attribute(emb) firstPhase\n"
	"    summary-features: sum(attribute(bf) * attribute(i32))\n"
	"  }\n"
	"}\n";

static const char engine_other_sd[] =
	"schema other {\n"
	"  document other {\n"
	"    field name type string { indexing: summary | attribute }\n"
	"    field score type double { indexing: attribute }\n"
	"    field tiny type byte { indexing: summary | attribute }\n"
	"    field blob type raw { indexing: summary }\n"
	"    field target type predicate { indexing: attribute | summary\n index { arity: 2 } }\n"
	"    field loc type position { indexing: attribute | summary }\n"
	"    field owner type reference<doc> { indexing: attribute }\n"
	"  }\n"
	"  import field owner.n as owner_n {}\n"
	"  document-summary owned { summary owner_n {} summary blob {} }\n"
	"  rank-profile default {\n"
	"    inputs { query(q) tensor<float>(x[4]) }\n"
	"    first-phase { expression: attribute(score) + attribute(tiny) + attribute(owner_n) }\n"
	"    summary-features: closeness(loc) subqueries(target).lsb\n"
	"  }\n"
	"}\n";

/* The example application's document type, so that its feed fits. */
static const char engine_product_sd[] =
	"schema product {\n"
	"  document product {\n"
	"    field title type string { indexing: summary | attribute }\n"
	"    field brand type string { indexing: attribute | summary }\n"
	"    field category type string { indexing: attribute | summary }\n"
	"    field price type float { indexing: attribute | summary }\n"
	"    field rating type float { indexing: attribute | summary }\n"
	"    field in_stock type bool { indexing: attribute | summary }\n"
	"    field embedding type tensor<float>(x[16]) {\n"
	"      indexing: attribute | summary\n"
	"      attribute { distance-metric: angular }\n"
	"    }\n"
	"  }\n"
	"  rank-profile default {\n"
	"    inputs { query(q) tensor<float>(x[4]) }\n"
	"    first-phase { expression: attribute(rating) - attribute(price) / 100 }\n"
	"  }\n"
	"}\n";

static const char *const engine_docs[] = {
	"{\"put\": \"id:fz:doc::1\", \"fields\": {\"title\": \"lamp\", \"body\": \"a desk lamp\","
	" \"n\": 3, \"l\": 40000000000, \"f\": 1.5, \"d\": -2.25, \"b\": true,"
	" \"emb\": [1, 2, 3, 4], \"m\": [[1, 2, 3], [4, 5, 6]], \"i8\": [1, -2, 3],"
	" \"bf\": [0.5, 2], \"i32\": [7, -8], \"i64\": [9, 10]}}",
	"{\"put\": \"id:fz:doc::2\", \"fields\": {\"title\": \"chair\", \"n\": -1, \"f\": 30,"
	" \"emb\": {\"values\": [0, 1, 0, 1]}, \"b\": false}}",
	"{\"put\": \"id:fz:doc:g=blue:3\", \"fields\": {\"title\": \"desk\", \"d\": 1e10}}",
	"{\"put\": \"id:fz:other::1\", \"fields\": {\"name\": \"x\", \"score\": 2, \"tiny\": -3,"
	" \"blob\": \"AP8=\", \"target\": \"a in [b] and c in [1..5]\", \"loc\": \"N1.5;W2\","
	" \"owner\": \"id:fz:doc::1\"}}",
	"{\"put\": \"id:shop:product::1\", \"fields\": {\"title\": \"kettle\", \"price\": 25,"
	" \"rating\": 4.5, \"in_stock\": true,"
	" \"embedding\": [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5]}}",
};

static struct strata *engine_db;

static void close_engine(void)
{
	strata_close(engine_db);
	engine_db = NULL;
}

static void feed_first_docs(struct strata *db)
{
	struct strata_error err = { 0 };
	for (size_t i = 0; i < sizeof engine_docs / sizeof *engine_docs; i++)
		if (strata_feed_json(db, engine_docs[i], &err) != 0)
			fuzz_fail("the fixture's document %zu: %s", i, err.msg);
}

struct strata *fuzz_engine(void)
{
	if (engine_db)
		return engine_db;
	const char *sub;
	const char *dir = fuzz_appdir(&sub);
	fuzz_write(sub, "doc.sd", engine_doc_sd, sizeof engine_doc_sd - 1);
	fuzz_write(sub, "other.sd", engine_other_sd, sizeof engine_other_sd - 1);
	fuzz_write(sub, "product.sd", engine_product_sd, sizeof engine_product_sd - 1);
	/* No pools: state kept for the next query would count as a leak. */
	struct strata_options opts = { .pool_generations = -1 };
	struct strata_error err = { 0 };
	if (strata_open(dir, &opts, &engine_db, &err) != 0)
		fuzz_fail("the fixture application: %s", err.msg);
	atexit(close_engine);
	feed_first_docs(engine_db);
	return engine_db;
}

/* Read back and remove every document one query page lists; returns how
 * many there were in all (totalCount). */
static long remove_listed(struct strata *db)
{
	static const char list[] = "{\"yql\": \"select * from sources * where true\", \"hits\": 400}";
	struct strata_error err = { 0 };
	char *res;
	if (strata_query_json(db, list, &res, &err) != 0)
		fuzz_fail("listing the fixture's documents: %s", err.msg);
	json_t *j = json_loads(res, 0, NULL);
	strata_free(res);
	json_t *root = json_object_get(j, "root");
	json_t *total = json_object_get(json_object_get(root, "fields"), "totalCount");
	if (!json_is_integer(total))
		fuzz_fail("a result without root.fields.totalCount");
	long n = (long)json_integer_value(total);
	json_t *kids = json_object_get(root, "children");
	for (size_t i = 0; i < json_array_size(kids); i++) {
		const char *id = json_string_value(json_object_get(json_array_get(kids, i), "id"));
		char *doc;
		if (!id)
			fuzz_fail("a hit without an id");
		if (strata_get_json(db, id, &doc, &err) != 0)
			fuzz_fail("document %s was listed but cannot be read: %s", id, err.msg);
		strata_free(doc);
		if (strata_remove(db, id, &err) != 0)
			fuzz_fail("document %s was listed but cannot be removed: %s", id, err.msg);
	}
	json_decref(j);
	return n;
}

void fuzz_engine_reset(struct strata *db)
{
	long n;
	for (int round = 0; (n = remove_listed(db)) > 0; round++)
		if (round == 1000)
			fuzz_fail("%ld documents left after removing 1000 pages of them", n);
	feed_first_docs(db);
}
