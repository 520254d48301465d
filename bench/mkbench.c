/*
 * mkbench.c: writes the benchmark's models without the ONNX Runtime peer.
 *
 *     mkbench OUTDIR
 *         OUTDIR/mlp_ranker.onnx
 *         OUTDIR/minilm_l6_cross.onnx
 *         OUTDIR/minilm_l6_cross_decomposed.onnx
 *         OUTDIR/minilm_l6_embed.onnx
 *
 * `make bench` times Strata on the models the peer's mkmodels.js generates.
 * Where the peer is not set up it runs this program instead and times
 * Strata alone on its output, so the graphs here follow mkmodels.js node for
 * node: the same graph inputs and outputs (names, types, the symbolic dims
 * "batch" and "seq"), opset 17, the same operators in the same order with
 * the same attributes, the same initializer names and shapes.  The MLP is
 * Concat -> Gemm(transB) -> Relu -> Gemm -> Relu -> Gemm, as torch exports
 * nn.Linear layers.  MiniLM-L6 is a BERT trunk laid out as torch.onnx.export
 * writes Hugging Face's BertModel: embeddings, then per layer MatMul+Add
 * linears (weights stored [in, out]), heads split by Shape/Gather/Unsqueeze/
 * Concat/Reshape/Transpose, scaled masked Softmax attention, erf GELU and
 * LayerNormalization (or its 9-node decomposition); the cross-encoder head
 * is Gather(token 0) + Gemm, the embedder's is masked mean pooling.  Timings
 * and FLOP counts therefore compare with those taken on the peer's models.
 *
 * Only the weight values differ: they come from this file's generator, with
 * mkmodels.js's distributions (N(0, 0.02), query and key N(0, 0.05), layer
 * norm gains 1 + N(0, 0.1) and biases N(0, 0.05), torch's uniform Linear init
 * for the MLP).  Each initializer is drawn from a stream seeded by a hash of
 * its name, so the three MiniLM variants share their trunk weights (as the
 * peer's do) and the files are byte-identical from run to run.  Each model
 * is written to a temporary file and renamed, so an interrupted run leaves
 * no truncated model behind.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../tests/modelbuild.h"
#include "../tests/vecgen.h"

#define SEED 0x5eedbe7c4a11ull

/* MiniLM-L6's configuration (mkmodels.js's CFG). */
#define VOCAB 30522
#define HIDDEN 384
#define LAYERS 6
#define HEADS 12
#define HEAD_DIM (HIDDEN / HEADS)
#define FFN 1536
#define MAX_POS 512
#define TYPE_VOCAB 2
#define LN_EPS 1e-12f

/* ---- weights ------------------------------------------------------------------------ */

/* Uniform in (0, 1) from splitmix64 (tests/vecgen.h: one 64-bit state, the
 * same stream on every platform): never 0, so log() below stays finite. */
static double unit_open(uint64_t *s)
{
	return ((double)(vg_next(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* The stream of one initializer: FNV-1a of its name, mixed with SEED. */
static uint64_t stream_of(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
	return h ^ SEED;
}

static float *alloc_floats(size_t n)
{
	float *w = malloc(n * sizeof *w);
	if (!w) {
		fprintf(stderr, "mkbench: out of memory\n");
		exit(1);
	}
	return w;
}

/* An initializer of n cells of mean + std * N(0, 1).  Box-Muller gives two
 * normals per pair of uniforms; both are used, the models hold 23 million
 * cells. */
static void init_normal(struct mb_model *m, const char *name, int rank, const int64_t *dims,
                        double mean, double std)
{
	size_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= (size_t)dims[i];
	float *w = alloc_floats(n);
	uint64_t s = stream_of(name);
	for (size_t i = 0; i < n; i += 2) {
		double r = sqrt(-2.0 * log(unit_open(&s))), th = 2.0 * M_PI * unit_open(&s);
		w[i] = (float)(mean + std * r * cos(th));
		if (i + 1 < n)
			w[i + 1] = (float)(mean + std * r * sin(th));
	}
	mb_init(m, name, BASE_DT_FLOAT, rank, dims, w);
	free(w);
}

/* An initializer of n cells uniform in [-bound, bound). */
static void init_uniform(struct mb_model *m, const char *name, int rank, const int64_t *dims,
                         double bound)
{
	size_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= (size_t)dims[i];
	float *w = alloc_floats(n);
	uint64_t s = stream_of(name);
	for (size_t i = 0; i < n; i++)
		w[i] = (float)(-bound + 2.0 * bound * vg_unit(&s));
	mb_init(m, name, BASE_DT_FLOAT, rank, dims, w);
	free(w);
}

/* ---- graph building ------------------------------------------------------------------- */

/* A value name.  Small enough to pass around by value, which keeps the
 * graph code below close to mkmodels.js's expressions. */
struct val {
	char s[96];
};

/* One model under construction: the builder, a counter for fresh value
 * names, and the scalar and vector constants made so far (mkmodels.js
 * shares one initializer among equal constants; so does this). */
#define MAX_CONSTS 32
struct graph {
	struct mb_model *m;
	int counter;
	int nconsts;
	struct {
		int dtype;
		int rank;
		double v;
		struct val name;
	} consts[MAX_CONSTS];
};

static struct val fresh(struct graph *g, const char *hint)
{
	struct val v;
	snprintf(v.s, sizeof v.s, "%s_%d", hint, g->counter++);
	return v;
}

static struct val named(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct val named(const char *fmt, ...)
{
	struct val v;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v.s, sizeof v.s, fmt, ap);
	va_end(ap);
	return v;
}

/* A one-cell constant (rank 0: a scalar; rank 1: shape [1]) of dtype
 * float or int64, made once per (dtype, rank, value). */
static struct val constant(struct graph *g, int dtype, int rank, double v)
{
	for (int i = 0; i < g->nconsts; i++)
		if (g->consts[i].dtype == dtype && g->consts[i].rank == rank && g->consts[i].v == v)
			return g->consts[i].name;
	if (g->nconsts == MAX_CONSTS) {
		fprintf(stderr, "mkbench: more than %d constants\n", MAX_CONSTS);
		exit(1);
	}
	struct val name = fresh(g, "const");
	int64_t one = 1, i64 = (int64_t)v;
	float f = (float)v;
	mb_init(g->m, name.s, dtype, rank, &one, dtype == BASE_DT_FLOAT ? (void *)&f : (void *)&i64);
	g->consts[g->nconsts].dtype = dtype;
	g->consts[g->nconsts].rank = rank;
	g->consts[g->nconsts].v = v;
	g->consts[g->nconsts].name = name;
	g->nconsts++;
	return name;
}

static struct val const_f(struct graph *g, double v)
{
	return constant(g, BASE_DT_FLOAT, 0, v);
}

/* rank 0: a scalar; rank 1: a one-element vector (axes, shape pieces). */
static struct val const_i64(struct graph *g, int64_t v, int rank)
{
	return constant(g, BASE_DT_INT64, rank, (double)v);
}

/* Appends node `type` on the NULL-terminated input names; its one output is
 * out when given, else a fresh name from hint.  *node (when not NULL)
 * receives the node, for its attributes. */
static struct val op(struct graph *g, struct mb_node **node, const char *type, const char *hint,
                     const char *out, ...)
{
	char ins[512] = "";
	size_t len = 0;
	va_list ap;
	va_start(ap, out);
	for (const char *in; len < sizeof ins && (in = va_arg(ap, const char *)) != NULL;)
		len += (size_t)snprintf(ins + len, sizeof ins - len, "%s%s", len ? "," : "", in);
	va_end(ap);
	if (len >= sizeof ins) {
		fprintf(stderr, "mkbench: inputs of a %s node too long\n", type);
		exit(1);
	}
	struct val o = out ? named("%s", out) : fresh(g, hint);
	struct mb_node *n = mb_node(g->m, type, ins, o.s);
	if (node)
		*node = n;
	return o;
}

/* Writes the model to dir/file through a temporary name. */
static int save(struct mb_model *m, const char *dir, const char *file)
{
	char path[4096], tmp[4200];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	int e = mb_save(m, tmp);
	if (e == 0 && rename(tmp, path) != 0)
		e = errno;
	if (e) {
		fprintf(stderr, "mkbench: cannot write %s: %s\n", path, strerror(e));
		remove(tmp);
		return -1;
	}
	return 0;
}

/* ---- mlp_ranker ---------------------------------------------------------------------------- */

/* torch.nn.Linear exported as Gemm(x, W[out, in], b, transB=1), weights
 * and bias uniform in +-1/sqrt(in). */
static struct val mlp_linear(struct graph *g, struct val x, int nin, int nout, const char *name,
                             const char *out)
{
	double bound = 1.0 / sqrt((double)nin);
	struct val w = named("%s.weight", name), b = named("%s.bias", name);
	init_uniform(g->m, w.s, 2, (int64_t[]){ nout, nin }, bound);
	init_uniform(g->m, b.s, 1, (int64_t[]){ nout }, bound);
	struct mb_node *n;
	struct val y = op(g, &n, "Gemm", name, out, x.s, w.s, b.s, NULL);
	mb_attr_float(n, "alpha", 1.0f);
	mb_attr_float(n, "beta", 1.0f);
	mb_attr_int(n, "transB", 1);
	return y;
}

static int write_mlp(const char *dir)
{
	static const char *const batch[] = { "batch", "" };
	struct graph g = { .m = mb_new("mlp_ranker", 17) };
	mb_input(g.m, "query_emb", BASE_DT_FLOAT, 2, (int64_t[]){ -1, HIDDEN }, batch);
	mb_input(g.m, "doc_emb", BASE_DT_FLOAT, 2, (int64_t[]){ -1, HIDDEN }, batch);
	struct mb_node *n;
	struct val x = op(&g, &n, "Concat", "concat", NULL, "query_emb", "doc_emb", NULL);
	mb_attr_int(n, "axis", 1);
	x = mlp_linear(&g, x, 2 * HIDDEN, 256, "fc1", NULL);
	x = op(&g, NULL, "Relu", "relu", NULL, x.s, NULL);
	x = mlp_linear(&g, x, 256, 64, "fc2", NULL);
	x = op(&g, NULL, "Relu", "relu", NULL, x.s, NULL);
	mlp_linear(&g, x, 64, 1, "fc3", "score");
	mb_output(g.m, "score", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 1 }, batch);
	int rc = save(g.m, dir, "mlp_ranker.onnx");
	mb_free(g.m);
	return rc;
}

/* ---- MiniLM-L6 ------------------------------------------------------------------------------ */

enum head { HEAD_CROSS, HEAD_EMBED };

struct minilm {
	struct graph g;
	int decomposed_ln;
};

static struct val unsqueeze0(struct graph *g, struct val x)
{
	return op(g, NULL, "Unsqueeze", "unsqueeze", NULL, x.s, const_i64(g, 0, 1).s, NULL);
}

/* Dimension i (0 or 1) of x as a scalar, the way the exporter reads
 * x.size(i): Gather(Shape(x), i). */
static struct val dim_of(struct graph *g, struct val x, int i)
{
	struct val shape = op(g, NULL, "Shape", "shape", NULL, x.s, NULL);
	struct mb_node *n;
	struct val d = op(g, &n, "Gather", "gather", NULL, shape.s, const_i64(g, i, 0).s, NULL);
	mb_attr_int(n, "axis", 0);
	return d;
}

static struct val layer_norm(struct minilm *b, struct val x, const char *prefix)
{
	struct graph *g = &b->g;
	struct val gamma = named("%s.weight", prefix), beta = named("%s.bias", prefix);
	init_normal(g->m, gamma.s, 1, (int64_t[]){ HIDDEN }, 1.0, 0.1);
	init_normal(g->m, beta.s, 1, (int64_t[]){ HIDDEN }, 0.0, 0.05);
	struct mb_node *n;
	if (!b->decomposed_ln) {
		struct val y = op(g, &n, "LayerNormalization", "layernorm", NULL, x.s, gamma.s, beta.s, NULL);
		mb_attr_int(n, "axis", -1);
		mb_attr_float(n, "epsilon", LN_EPS);
		return y;
	}
	/* The form older exporters write: mean, centre, variance, scale. */
	static const int64_t last[] = { -1 };
	struct val mean = op(g, &n, "ReduceMean", "reducemean", NULL, x.s, NULL);
	mb_attr_ints(n, "axes", 1, last);
	mb_attr_int(n, "keepdims", 1);
	struct val d = op(g, NULL, "Sub", "sub", NULL, x.s, mean.s, NULL);
	struct val sq = op(g, NULL, "Pow", "pow", NULL, d.s, const_f(g, 2.0).s, NULL);
	struct val var = op(g, &n, "ReduceMean", "reducemean", NULL, sq.s, NULL);
	mb_attr_ints(n, "axes", 1, last);
	mb_attr_int(n, "keepdims", 1);
	struct val ve = op(g, NULL, "Add", "add", NULL, var.s, const_f(g, LN_EPS).s, NULL);
	struct val sd = op(g, NULL, "Sqrt", "sqrt", NULL, ve.s, NULL);
	struct val nrm = op(g, NULL, "Div", "div", NULL, d.s, sd.s, NULL);
	struct val sc = op(g, NULL, "Mul", "mul", NULL, nrm.s, gamma.s, NULL);
	return op(g, NULL, "Add", "add", NULL, sc.s, beta.s, NULL);
}

/* nn.Linear on a 3-D input: the exporter stores W transposed, [in, out],
 * and writes MatMul + Add. */
static struct val linear(struct graph *g, struct val x, int nin, int nout, const char *prefix,
                         double std)
{
	struct val w = named("%s.weight_T", prefix), bias = named("%s.bias", prefix);
	init_normal(g->m, w.s, 2, (int64_t[]){ nin, nout }, 0.0, std);
	init_normal(g->m, bias.s, 1, (int64_t[]){ nout }, 0.0, 0.02);
	struct val y = op(g, NULL, "MatMul", "matmul", NULL, x.s, w.s, NULL);
	return op(g, NULL, "Add", "add", NULL, y.s, bias.s, NULL);
}

/* [batch, seq, HIDDEN] -> [batch, seq, HEADS, HEAD_DIM], then transposed
 * by perm. */
static struct val split_heads(struct graph *g, struct val x, const int64_t perm[4])
{
	struct val d0 = unsqueeze0(g, dim_of(g, x, 0));
	struct val d1 = unsqueeze0(g, dim_of(g, x, 1));
	struct mb_node *n;
	struct val shape = op(g, &n, "Concat", "concat", NULL, d0.s, d1.s,
	                      const_i64(g, HEADS, 1).s, const_i64(g, HEAD_DIM, 1).s, NULL);
	mb_attr_int(n, "axis", 0);
	struct val r = op(g, NULL, "Reshape", "reshape", NULL, x.s, shape.s, NULL);
	struct val t = op(g, &n, "Transpose", "transpose", NULL, r.s, NULL);
	mb_attr_ints(n, "perm", 4, perm);
	return t;
}

static void encoder_layer(struct minilm *b, int l, struct val *h, struct val ext_mask)
{
	static const int64_t perm_qv[4] = { 0, 2, 1, 3 }, perm_k[4] = { 0, 2, 3, 1 };
	struct graph *g = &b->g;
	char p[64], name[128];
	struct mb_node *n;
	snprintf(p, sizeof p, "encoder.layer.%d", l);

	/* Query and key drawn wider than 0.02 so attention is not uniform,
	 * closer to a trained model. */
	snprintf(name, sizeof name, "%s.attention.self.query", p);
	struct val q = linear(g, *h, HIDDEN, HIDDEN, name, 0.05);
	snprintf(name, sizeof name, "%s.attention.self.key", p);
	struct val k = linear(g, *h, HIDDEN, HIDDEN, name, 0.05);
	snprintf(name, sizeof name, "%s.attention.self.value", p);
	struct val v = linear(g, *h, HIDDEN, HIDDEN, name, 0.02);
	struct val qh = split_heads(g, q, perm_qv);
	struct val kt = split_heads(g, k, perm_k);
	struct val vh = split_heads(g, v, perm_qv);

	struct val s = op(g, NULL, "MatMul", "matmul", NULL, qh.s, kt.s, NULL);
	s = op(g, NULL, "Div", "div", NULL, s.s, const_f(g, sqrt((double)HEAD_DIM)).s, NULL);
	s = op(g, NULL, "Add", "add", NULL, s.s, ext_mask.s, NULL);
	struct val pr = op(g, &n, "Softmax", "softmax", NULL, s.s, NULL);
	mb_attr_int(n, "axis", -1);
	struct val ctx = op(g, NULL, "MatMul", "matmul", NULL, pr.s, vh.s, NULL);
	ctx = op(g, &n, "Transpose", "transpose", NULL, ctx.s, NULL);
	mb_attr_ints(n, "perm", 4, perm_qv);
	struct val d0 = unsqueeze0(g, dim_of(g, ctx, 0));
	struct val d1 = unsqueeze0(g, dim_of(g, ctx, 1));
	struct val shape = op(g, &n, "Concat", "concat", NULL, d0.s, d1.s,
	                      const_i64(g, HIDDEN, 1).s, NULL);
	mb_attr_int(n, "axis", 0);
	ctx = op(g, NULL, "Reshape", "reshape", NULL, ctx.s, shape.s, NULL);

	snprintf(name, sizeof name, "%s.attention.output.dense", p);
	struct val ao = linear(g, ctx, HIDDEN, HIDDEN, name, 0.02);
	struct val sum = op(g, NULL, "Add", "add", NULL, ao.s, h->s, NULL);
	snprintf(name, sizeof name, "%s.attention.output.LayerNorm", p);
	struct val h1 = layer_norm(b, sum, name);

	snprintf(name, sizeof name, "%s.intermediate.dense", p);
	struct val f = linear(g, h1, HIDDEN, FFN, name, 0.02);
	/* GELU, erf form: x * 0.5 * (1 + erf(x / sqrt(2))). */
	struct val e = op(g, NULL, "Div", "div", NULL, f.s, const_f(g, M_SQRT2).s, NULL);
	e = op(g, NULL, "Erf", "erf", NULL, e.s, NULL);
	struct val half = op(g, NULL, "Mul", "mul", NULL, f.s, const_f(g, 0.5).s, NULL);
	struct val e1 = op(g, NULL, "Add", "add", NULL, e.s, const_f(g, 1.0).s, NULL);
	struct val gl = op(g, NULL, "Mul", "mul", NULL, half.s, e1.s, NULL);
	snprintf(name, sizeof name, "%s.output.dense", p);
	struct val f2 = linear(g, gl, FFN, HIDDEN, name, 0.02);
	sum = op(g, NULL, "Add", "add", NULL, f2.s, h1.s, NULL);
	snprintf(name, sizeof name, "%s.output.LayerNorm", p);
	*h = layer_norm(b, sum, name);
}

static int write_minilm(const char *dir, const char *name, enum head head, int decomposed_ln)
{
	static const char *const bs[] = { "batch", "seq" };
	static const char *const batch[] = { "batch", "" };
	struct minilm b = { .g = { .m = mb_new(name, 17) }, .decomposed_ln = decomposed_ln };
	struct graph *g = &b.g;
	struct mb_node *n;
	const int64_t io[2] = { -1, -1 };
	mb_input(g->m, "input_ids", BASE_DT_INT64, 2, io, bs);
	mb_input(g->m, "attention_mask", BASE_DT_INT64, 2, io, bs);
	mb_input(g->m, "token_type_ids", BASE_DT_INT64, 2, io, bs);
	/* mkmodels.js makes these three first; their order fixes the names. */
	const_i64(g, 0, 0);
	const_i64(g, 1, 0);
	const_i64(g, 0, 1);

	/* Embeddings: word + token type + position, then a layer norm.  The
	 * position ids are the first seq entries of a stored [1, MAX_POS]
	 * buffer: Slice(buffer, starts [0], ends [seq], axes [1]). */
	init_normal(g->m, "embeddings.word_embeddings.weight", 2, (int64_t[]){ VOCAB, HIDDEN }, 0, 0.02);
	init_normal(g->m, "embeddings.position_embeddings.weight", 2, (int64_t[]){ MAX_POS, HIDDEN },
	            0, 0.02);
	init_normal(g->m, "embeddings.token_type_embeddings.weight", 2,
	            (int64_t[]){ TYPE_VOCAB, HIDDEN }, 0, 0.02);
	int64_t pos[MAX_POS];
	for (int i = 0; i < MAX_POS; i++)
		pos[i] = i;
	mb_init(g->m, "embeddings.position_ids", BASE_DT_INT64, 2, (int64_t[]){ 1, MAX_POS }, pos);
	struct val ids = named("input_ids"), mask = named("attention_mask");
	struct val seq_len = unsqueeze0(g, dim_of(g, ids, 1));
	struct val pos_ids = op(g, NULL, "Slice", "slice", NULL, "embeddings.position_ids",
	                        const_i64(g, 0, 1).s, seq_len.s, const_i64(g, 1, 1).s, NULL);
	struct val e = op(g, NULL, "Gather", "gather", NULL, "embeddings.word_embeddings.weight",
	                  ids.s, NULL);
	struct val t = op(g, NULL, "Gather", "gather", NULL, "embeddings.token_type_embeddings.weight",
	                  "token_type_ids", NULL);
	e = op(g, NULL, "Add", "add", NULL, e.s, t.s, NULL);
	t = op(g, NULL, "Gather", "gather", NULL, "embeddings.position_embeddings.weight", pos_ids.s,
	       NULL);
	e = op(g, NULL, "Add", "add", NULL, e.s, t.s, NULL);
	struct val h = layer_norm(&b, e, "embeddings.LayerNorm");

	/* The extended attention mask: (1 - mask[:, None, None, :]) * -10000. */
	struct val m = op(g, NULL, "Unsqueeze", "unsqueeze", NULL, mask.s, const_i64(g, 1, 1).s, NULL);
	m = op(g, NULL, "Unsqueeze", "unsqueeze", NULL, m.s, const_i64(g, 2, 1).s, NULL);
	m = op(g, &n, "Cast", "cast", NULL, m.s, NULL);
	mb_attr_int(n, "to", BASE_DT_FLOAT);
	m = op(g, NULL, "Sub", "sub", NULL, const_f(g, 1.0).s, m.s, NULL);
	struct val ext_mask = op(g, NULL, "Mul", "mul", NULL, m.s, const_f(g, -10000.0).s, NULL);

	for (int l = 0; l < LAYERS; l++)
		encoder_layer(&b, l, &h, ext_mask);

	if (head == HEAD_CROSS) {
		/* Token 0 ([CLS]) through a 384 -> 1 classifier. */
		struct val t0 = op(g, &n, "Gather", "gather", NULL, h.s, const_i64(g, 0, 0).s, NULL);
		mb_attr_int(n, "axis", 1);
		init_normal(g->m, "classifier.weight", 2, (int64_t[]){ 1, HIDDEN }, 0, 0.02);
		init_normal(g->m, "classifier.bias", 1, (int64_t[]){ 1 }, 0, 0.02);
		op(g, &n, "Gemm", "classifier", "logits", t0.s, "classifier.weight", "classifier.bias",
		   NULL);
		mb_attr_float(n, "alpha", 1.0f);
		mb_attr_float(n, "beta", 1.0f);
		mb_attr_int(n, "transB", 1);
		mb_output(g->m, "logits", BASE_DT_FLOAT, 2, (int64_t[]){ -1, 1 }, batch);
	} else {
		/* sentence-transformers' mean pooling:
		 * sum(h * mask) / max(sum(mask), 1e-9). */
		struct val mf = op(g, NULL, "Unsqueeze", "unsqueeze", NULL, mask.s,
		                   const_i64(g, -1, 1).s, NULL);
		mf = op(g, &n, "Cast", "cast", NULL, mf.s, NULL);
		mb_attr_int(n, "to", BASE_DT_FLOAT);
		struct val ax1 = const_i64(g, 1, 1);
		struct val hm = op(g, NULL, "Mul", "mul", NULL, h.s, mf.s, NULL);
		struct val sum = op(g, &n, "ReduceSum", "reducesum", NULL, hm.s, ax1.s, NULL);
		mb_attr_int(n, "keepdims", 0);
		struct val cnt = op(g, &n, "ReduceSum", "reducesum", NULL, mf.s, ax1.s, NULL);
		mb_attr_int(n, "keepdims", 0);
		cnt = op(g, NULL, "Clip", "clip", NULL, cnt.s, const_f(g, 1e-9).s, NULL);
		op(g, NULL, "Div", "div", "sentence_embedding", sum.s, cnt.s, NULL);
		mb_output(g->m, "sentence_embedding", BASE_DT_FLOAT, 2, (int64_t[]){ -1, HIDDEN }, batch);
	}

	char file[128];
	snprintf(file, sizeof file, "%s.onnx", name);
	int rc = save(g->m, dir, file);
	mb_free(g->m);
	return rc;
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: mkbench OUTDIR\n"
		                "writes mlp_ranker.onnx, minilm_l6_cross.onnx, "
		                "minilm_l6_cross_decomposed.onnx and minilm_l6_embed.onnx in OUTDIR\n");
		return 2;
	}
	const char *dir = argv[1];
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "mkbench: cannot create %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (write_mlp(dir) != 0 ||
	    write_minilm(dir, "minilm_l6_cross", HEAD_CROSS, 0) != 0 ||
	    write_minilm(dir, "minilm_l6_cross_decomposed", HEAD_CROSS, 1) != 0 ||
	    write_minilm(dir, "minilm_l6_embed", HEAD_EMBED, 0) != 0)
		return 1;
	return 0;
}
