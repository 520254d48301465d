/*
 * mkshop.c: generates the data of the bundled example application, a product
 * catalogue (schemas/shop).  The schema is committed; everything generated
 * here goes under build/:
 *
 *     mkshop OUTDIR
 *         OUTDIR/models/ranker.onnx   the second-phase model of the
 *                                     "relevance" profile
 *         OUTDIR/feed.jsonl           40 products, one Vespa put per line
 *         OUTDIR/queries/NAME.json    example search requests (Vespa JSON)
 *
 * The model is a small MLP laid out the way torch.onnx.export writes an
 * nn.Sequential of Linear layers: Concat(query_emb, doc_emb) -> Gemm(32->16,
 * transB=1) -> Relu -> Gemm(16->1, transB=1) -> score[batch, 1], with the
 * batch dimension symbolic so the engine can score all candidates in one run.
 * Its weights are set the way training on this catalogue would shape them
 * (see ranker_weights), so the re-ranked hits make sense to a reader.
 *
 * Everything is deterministic: one xorshift generator with a fixed seed
 * draws the weights, then the document and query embeddings, so two runs
 * write byte-identical files and the end-to-end tests can rely on them.
 * Embeddings are a per-category direction plus noise, L2-normalized, so a
 * query vector near a category finds that category's products first.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "modelbuild.h"

#define DIM 16     /* embedding cells: small, so the sample documents stay readable */
#define HIDDEN 16  /* the MLP's hidden layer */
#define SEED 20240611u

/* ---- a small deterministic generator -------------------------------------- */

static uint64_t rng_state = SEED;

/* xorshift64*: plenty for test data, and identical on every platform. */
static uint64_t rng_next(void)
{
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [lo, hi). */
static double rng_uniform(double lo, double hi)
{
	return lo + (hi - lo) * (double)(rng_next() >> 11) / 9007199254740992.0;
}

/* Standard normal (Box-Muller); one draw per call keeps the sequence simple. */
static double rng_normal(void)
{
	double u1 = rng_uniform(1e-12, 1.0), u2 = rng_uniform(0.0, 1.0);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static void normalize(float *v, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += (double)v[i] * v[i];
	s = sqrt(s);
	if (s == 0)
		return;
	for (int i = 0; i < n; i++)
		v[i] = (float)(v[i] / s);
}

/* Keep four decimals so the feed file reads well; the vector stays within
 * rounding of unit length, which the angular metric does not mind. */
static void round4(float *v, int n)
{
	for (int i = 0; i < n; i++)
		v[i] = (float)(round(v[i] * 10000.0) / 10000.0);
}

/* ---- the catalogue ---------------------------------------------------------- */

enum { HEADPHONES, RUNNING_SHOES, COFFEE_MAKERS, BACKPACKS, DESK_LAMPS, NCAT };

static const char *const category_names[NCAT] = {
	"headphones", "running-shoes", "coffee-makers", "backpacks", "desk-lamps",
};

struct product {
	const char *brand;
	const char *title;
	int category;
	double price; /* every price differs, so the "cheap" order is total */
	double rating;
	int in_stock;
};

static const struct product catalogue[] = {
	{"Sonora", "Sonora QuietWave 300 Wireless Headphones", HEADPHONES, 149.00, 4.6, 1},
	{"Arcwave", "Arcwave Studio Monitor Headphones", HEADPHONES, 89.50, 4.3, 1},
	{"Kestrel", "Kestrel Sport Earbuds", HEADPHONES, 39.99, 3.9, 1},
	{"Sonora", "Sonora QuietWave 500 Noise-Cancelling Headphones", HEADPHONES, 279.00, 4.8, 0},
	{"Arcwave", "Arcwave Bass Boost Earbuds", HEADPHONES, 24.95, 3.4, 1},
	{"Kestrel", "Kestrel Kids Volume-Limited Headphones", HEADPHONES, 19.90, 4.1, 1},
	{"Tonfield", "Tonfield Open-Back Reference Headphones", HEADPHONES, 199.00, 4.7, 1},
	{"Tonfield", "Tonfield Travel Earbuds with Case", HEADPHONES, 59.00, 4.0, 0},

	{"Stride", "Stride Cloudrunner Road Running Shoe", RUNNING_SHOES, 129.95, 4.5, 1},
	{"Peakline", "Peakline Trail Blazer GTX", RUNNING_SHOES, 164.00, 4.4, 1},
	{"Stride", "Stride Tempo Racing Flat", RUNNING_SHOES, 109.00, 4.2, 1},
	{"Nordpace", "Nordpace Everyday Trainer", RUNNING_SHOES, 74.99, 3.8, 1},
	{"Peakline", "Peakline Ultra Cushion Long-Distance Shoe", RUNNING_SHOES, 154.50, 4.6, 0},
	{"Nordpace", "Nordpace Kids Running Shoe", RUNNING_SHOES, 44.90, 4.0, 1},
	{"Stride", "Stride Minimal Barefoot Runner", RUNNING_SHOES, 94.00, 3.6, 1},
	{"Velo", "Velo Carbon Plate Marathon Shoe", RUNNING_SHOES, 229.00, 4.9, 1},

	{"Brewell", "Brewell Classic Drip Coffee Maker", COFFEE_MAKERS, 49.99, 4.1, 1},
	{"Brewell", "Brewell Thermal Carafe 12-Cup Brewer", COFFEE_MAKERS, 84.00, 4.4, 1},
	{"Cafetto", "Cafetto Espresso Pro Machine", COFFEE_MAKERS, 349.00, 4.7, 1},
	{"Cafetto", "Cafetto Milk Frother Duo", COFFEE_MAKERS, 69.95, 3.7, 0},
	{"Moka & Co", "Moka & Co Stovetop Espresso Pot", COFFEE_MAKERS, 29.50, 4.5, 1},
	{"Moka & Co", "Moka & Co French Press 1L", COFFEE_MAKERS, 34.00, 4.3, 1},
	{"Brewell", "Brewell Single-Serve Pod Brewer", COFFEE_MAKERS, 59.90, 3.5, 1},
	{"Grindhaus", "Grindhaus Burr Grinder and Pour-Over Set", COFFEE_MAKERS, 119.00, 4.6, 1},

	{"Trailmark", "Trailmark 28L Daypack", BACKPACKS, 64.00, 4.4, 1},
	{"Trailmark", "Trailmark 45L Trekking Backpack", BACKPACKS, 139.00, 4.6, 1},
	{"Cityform", "Cityform Laptop Commuter Backpack", BACKPACKS, 79.90, 4.2, 1},
	{"Cityform", "Cityform Rolltop Waterproof Pack", BACKPACKS, 99.00, 4.0, 0},
	{"Kestrel", "Kestrel Running Hydration Vest", BACKPACKS, 54.95, 3.9, 1},
	{"Trailmark", "Trailmark Kids School Backpack", BACKPACKS, 34.99, 4.1, 1},
	{"Northvale", "Northvale Travel Carry-On Backpack", BACKPACKS, 124.50, 4.5, 1},
	{"Northvale", "Northvale Packable Day Bag", BACKPACKS, 22.00, 3.6, 1},

	{"Luma", "Luma LED Desk Lamp with Wireless Charger", DESK_LAMPS, 45.00, 4.2, 1},
	{"Luma", "Luma Architect Swing-Arm Lamp", DESK_LAMPS, 69.00, 4.4, 1},
	{"Brightleaf", "Brightleaf Daylight Reading Lamp", DESK_LAMPS, 39.50, 4.0, 1},
	{"Brightleaf", "Brightleaf Clamp-On Task Light", DESK_LAMPS, 27.99, 3.7, 1},
	{"Northvale", "Northvale Brass Banker's Lamp", DESK_LAMPS, 89.95, 4.6, 0},
	{"Luma", "Luma Smart Color Desk Light", DESK_LAMPS, 54.90, 3.9, 1},
	{"Orbis", "Orbis Minimal Aluminium Lamp", DESK_LAMPS, 119.50, 4.8, 1},
	{"Orbis", "Orbis Clip Lamp for Monitors", DESK_LAMPS, 49.00, 4.3, 1},
};

#define NPRODUCTS ((int)(sizeof catalogue / sizeof catalogue[0]))

/* Unit-length direction of each category. */
static float category_dir[NCAT][DIM];

/* ---- output helpers ------------------------------------------------------------ */

static int make_dir(const char *path)
{
	if (mkdir(path, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "mkshop: cannot create %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static FILE *open_out(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "mkshop: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

static int close_out(FILE *f, const char *name)
{
	int bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		fprintf(stderr, "mkshop: error writing %s\n", name);
		return -1;
	}
	return 0;
}

static void put_vector(FILE *f, const float *v, int n)
{
	fputc('[', f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%.4f", i ? ", " : "", (double)v[i]);
	fputc(']', f);
}

/* A JSON string; the catalogue holds no characters that need escaping
 * besides these. */
static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* ---- the model ---------------------------------------------------------------------- */

static void make_category_dirs(void)
{
	for (int c = 0; c < NCAT; c++) {
		for (int i = 0; i < DIM; i++)
			category_dir[c][i] = (float)rng_normal();
		normalize(category_dir[c], DIM);
	}
}

/* Weights of a ranker as training would shape it on this catalogue.  Hidden
 * unit c < NCAT detects "query and document both lie near category c":
 * relu(dir_c . query + dir_c . doc - 1) is positive only when both align
 * with dir_c, and grows with how typical the document is.  The other units
 * carry seeded noise of nn.Linear's initial scale, U(-1/sqrt(fan_in),
 * 1/sqrt(fan_in)), and a small output weight, as unused capacity does in a
 * trained net.  Weights are stored as the exporter does: [out, in] with
 * transB=1. */
static void ranker_weights(float *w1, float *b1, float *w2, float *b2)
{
	double bound1 = 1.0 / sqrt(2.0 * DIM);
	for (int j = 0; j < HIDDEN; j++) {
		float *row = w1 + (size_t)j * 2 * DIM;
		if (j < NCAT) {
			for (int i = 0; i < DIM; i++) {
				row[i] = category_dir[j][i] + (float)rng_uniform(-0.02, 0.02);
				row[DIM + i] = category_dir[j][i] + (float)rng_uniform(-0.02, 0.02);
			}
			b1[j] = -1.0f;
			w2[j] = 1.0f + (float)rng_uniform(-0.05, 0.05);
		} else {
			for (int i = 0; i < 2 * DIM; i++)
				row[i] = (float)rng_uniform(-bound1, bound1);
			b1[j] = (float)rng_uniform(-bound1, bound1);
			w2[j] = (float)rng_uniform(-0.1, 0.1);
		}
	}
	b2[0] = (float)rng_uniform(-0.05, 0.05);
}

static void gemm(struct mb_model *m, const char *name, const char *in, const char *out, int nin,
                 int nout, const float *w, const float *b)
{
	char wname[64], bname[64], inputs[200];
	snprintf(wname, sizeof wname, "%s.weight", name);
	snprintf(bname, sizeof bname, "%s.bias", name);
	snprintf(inputs, sizeof inputs, "%s,%s,%s", in, wname, bname);
	mb_init(m, wname, BASE_DT_FLOAT, 2, (int64_t[]){nout, nin}, w);
	mb_init(m, bname, BASE_DT_FLOAT, 1, (int64_t[]){nout}, b);
	struct mb_node *n = mb_node(m, "Gemm", inputs, out);
	mb_attr_float(n, "alpha", 1.0f);
	mb_attr_float(n, "beta", 1.0f);
	mb_attr_int(n, "transB", 1);
}

static int write_model(const char *outdir)
{
	float w1[HIDDEN * 2 * DIM], b1[HIDDEN], w2[HIDDEN], b2[1];
	ranker_weights(w1, b1, w2, b2);

	struct mb_model *m = mb_new("shop_ranker", 17);
	const char *batch[] = {"batch", ""};
	mb_input(m, "query_emb", BASE_DT_FLOAT, 2, (int64_t[]){-1, DIM}, batch);
	mb_input(m, "doc_emb", BASE_DT_FLOAT, 2, (int64_t[]){-1, DIM}, batch);
	struct mb_node *cat = mb_node(m, "Concat", "query_emb,doc_emb", "concat");
	mb_attr_int(cat, "axis", 1);
	gemm(m, "fc1", "concat", "fc1_out", 2 * DIM, HIDDEN, w1, b1);
	mb_node(m, "Relu", "fc1_out", "relu");
	gemm(m, "fc2", "relu", "score", HIDDEN, 1, w2, b2);
	mb_output(m, "score", BASE_DT_FLOAT, 2, (int64_t[]){-1, 1}, batch);

	char path[4096];
	snprintf(path, sizeof path, "%s/models/ranker.onnx", outdir);
	int rc = mb_save(m, path);
	mb_free(m);
	if (rc != 0) {
		fprintf(stderr, "mkshop: cannot write %s: %s\n", path, strerror(rc));
		return -1;
	}
	return 0;
}

/* ---- documents and queries ------------------------------------------------------- */

/* The category's direction plus noise of the given strength, normalized. */
static void embed_near(int category, double noise, float *v)
{
	for (int i = 0; i < DIM; i++)
		v[i] = (float)(category_dir[category][i] + noise * rng_normal() / sqrt((double)DIM));
	normalize(v, DIM);
	round4(v, DIM);
}

static int write_feed(const char *outdir)
{
	FILE *f = open_out(outdir, "feed.jsonl");
	if (!f)
		return -1;
	for (int i = 0; i < NPRODUCTS; i++) {
		const struct product *p = &catalogue[i];
		float v[DIM];
		embed_near(p->category, 0.6, v);
		fprintf(f, "{\"put\": \"id:shop:product::%d\", \"fields\": {\"title\": ", i + 1);
		put_string(f, p->title);
		fputs(", \"brand\": ", f);
		put_string(f, p->brand);
		fputs(", \"category\": ", f);
		put_string(f, category_names[p->category]);
		fprintf(f, ", \"price\": %.2f, \"rating\": %.1f, \"in_stock\": %s, \"embedding\": ",
		        p->price, p->rating, p->in_stock ? "true" : "false");
		put_vector(f, v, DIM);
		fputs("}}\n", f);
	}
	return close_out(f, "feed.jsonl");
}

struct example_query {
	const char *file;
	const char *yql;
	const char *profile;
	int category; /* the query vector lies near this category; -1: none */
	int hits;
};

/* Three requests that show the three sides of the application: a filter
 * ordered by an attribute, nearest-neighbour retrieval re-ranked by the
 * model, and the same combined with filters. */
static const struct example_query queries[] = {
	{"cheap-headphones",
	 "select * from sources * where category contains \"headphones\"", "cheap", -1, 5},
	{"running-shoes",
	 "select * from sources * where {targetHits: 10}nearestNeighbor(embedding, q_emb)",
	 "relevance", RUNNING_SHOES, 5},
	{"coffee-in-stock",
	 "select * from sources * where {targetHits: 10}nearestNeighbor(embedding, q_emb) and "
	 "in_stock = true and price < 150",
	 "relevance", COFFEE_MAKERS, 5},
};

static int write_queries(const char *outdir)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/queries", outdir);
	if (make_dir(dir) != 0)
		return -1;
	for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
		const struct example_query *q = &queries[i];
		char name[256];
		snprintf(name, sizeof name, "%s.json", q->file);
		FILE *f = open_out(dir, name);
		if (!f)
			return -1;
		fputs("{\n  \"yql\": ", f);
		put_string(f, q->yql);
		fputs(",\n  \"ranking.profile\": ", f);
		put_string(f, q->profile);
		if (q->category >= 0) {
			float v[DIM];
			embed_near(q->category, 0.3, v);
			fputs(",\n  \"input.query(q_emb)\": ", f);
			put_vector(f, v, DIM);
		}
		fprintf(f, ",\n  \"hits\": %d\n}\n", q->hits);
		if (close_out(f, name) != 0)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: mkshop OUTDIR\n"
		                "writes OUTDIR/models/ranker.onnx, OUTDIR/feed.jsonl and "
		                "OUTDIR/queries/*.json\n");
		return 2;
	}
	const char *out = argv[1];
	char models[4096];
	snprintf(models, sizeof models, "%s/models", out);
	if (make_dir(out) != 0 || make_dir(models) != 0)
		return 1;

	/* The draw order is fixed: category directions, weights, documents,
	 * queries.  Changing it changes every generated file. */
	make_category_dirs();
	if (write_model(out) != 0 || write_feed(out) != 0 || write_queries(out) != 0)
		return 1;
	return 0;
}
