/*
 * string.c: the text operators: StringNormalizer and TfIdfVectorizer.
 *
 * StringNormalizer drops the stop words from a [C] or [1, C] string tensor
 * and may lower- or upper-case what is left.  Text is UTF-8; case mapping
 * is Unicode's simple one-to-one mapping, taken from towlower_l/towupper_l
 * under the C.UTF-8 locale, which glibc always provides, and opened with
 * newlocale so that the process's global locale is never touched.  The
 * 'locale' attribute is accepted but does not change the mapping (the
 * language-specific rules it could select, such as Turkish dotted i, are not
 * implemented).  Bytes that are not valid UTF-8 pass through unchanged.
 * When every cell is a stop word the result is one empty string, shaped [1]
 * or [1, 1] after the input.
 *
 * TfIdfVectorizer counts, in each row of a [C] or [N, C] tensor of integers
 * or strings, the n-grams of a fixed pool, allowing up to max_skip_count
 * cells to be skipped between the items of an n-gram (the same gap between
 * every two items), and writes the counts (TF), their presence (IDF) or
 * both (TFIDF), optionally weighted, at the output positions ngram_indexes
 * gives.  The pool is laid out by length: ngram_counts[i] is where the
 * (i+1)-grams start in pool_int64s / pool_strings.  init() validates that
 * layout once and builds, per length, the n-grams sorted by content, so a
 * run looks each candidate up by binary search.  Unigrams are counted once,
 * not once per skip distance, since a gap means nothing to a single item.
 *
 * State is allocated with base_alloc at load and freed by fini; the runs
 * allocate only their outputs and cells (rt_output, rt_string, rt_scratch).
 */
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include "../kernel.h"

static int has_input(const struct rt_node *n, int i)
{
	return i < n->nin && n->in[i] >= 0;
}

static int has_output(const struct rt_node *n, int i)
{
	return i < n->nout && n->out[i] >= 0;
}

/* ---- UTF-8 ------------------------------------------------------------------------- */

/* Decode one code point of s (len bytes left) into *cp; the bytes used, or 0
 * when s does not start a valid, shortest-form UTF-8 sequence. */
static size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
	uint32_t c = s[0];
	size_t need;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0)
		need = 2, c &= 0x1f;
	else if ((c & 0xf0) == 0xe0)
		need = 3, c &= 0x0f;
	else if ((c & 0xf8) == 0xf0)
		need = 4, c &= 0x07;
	else
		return 0;
	if (len < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	static const uint32_t min_of[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (c < min_of[need] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return need;
}

static size_t utf8_encode(uint32_t c, char *out)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

enum { CASE_NONE, CASE_LOWER, CASE_UPPER };

/* Map the case of s (len bytes) into out, which holds at least 4 * len + 1
 * bytes (one code point never grows past 4 bytes, and takes at least 1);
 * the bytes written (out is NUL-terminated).  loc may be 0: ASCII only. */
static size_t map_case(const char *s, size_t len, int action, locale_t loc, char *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k = 0;
	while (i < len) {
		uint32_t cp;
		size_t used = utf8_decode(u + i, len - i, &cp);
		if (used == 0) {
			out[k++] = s[i++];
			continue;
		}
		uint32_t m = cp;
		if (loc)
			m = (uint32_t)(action == CASE_LOWER ? towlower_l((wint_t)cp, loc)
			                                    : towupper_l((wint_t)cp, loc));
		else if (cp < 0x80)
			m = (uint32_t)(action == CASE_LOWER ? (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp)
			                                    : (cp >= 'a' && cp <= 'z' ? cp - 32 : cp));
		if (m > 0x10ffff || (m >= 0xd800 && m <= 0xdfff))
			m = cp;
		k += utf8_encode(m, out + k);
		i += used;
	}
	out[k] = 0;
	return k;
}

/* ---- StringNormalizer --------------------------------------------------------------- */

struct strnorm {
	size_t bytes;            /* of this block, for base_free */
	int action;              /* CASE_* */
	int sensitive;
	locale_t loc;            /* C.UTF-8, or 0 when unavailable (ASCII mapping) */
	size_t nstop;
	char **stop;             /* lower-cased when !sensitive; in this block */
};

static int is_stop(const struct strnorm *st, const char *s)
{
	for (size_t i = 0; i < st->nstop; i++)
		if (strcmp(st->stop[i], s) == 0)
			return 1;
	return 0;
}

static int run_strnorm(struct rt_node *n, struct rt_exec *x)
{
	const struct strnorm *st = n->state;
	const struct rt_tensor *in = rt_input(x, n, 0);
	struct rt_tensor *out;
	int rc;
	if (!in)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	if (in->rank < 1 || in->rank > 2 || (in->rank == 2 && in->dims[0] != 1))
		return rt_fail(x, n, STRATA_RUNTIME, "takes a [C] or [1, C] tensor (rank %d%s)",
		               in->rank, in->rank == 2 ? ", first dimension not 1" : "");
	int64_t c = runtime_tensor_count(in);
	char *const *cells = in->data;
	/* Which cells survive; the folded copy of a cell is needed only to
	 * compare it case-insensitively. */
	unsigned char *keep = rt_scratch(x, c > 0 ? (size_t)c : 1);
	if (!keep)
		return rt_nomem(x, n, "kernel scratch");
	size_t maxlen = 0;
	for (int64_t i = 0; i < c; i++) {
		if (!cells[i])
			return rt_fail(x, n, STRATA_RUNTIME, "cell %lld is not a string", (long long)i);
		size_t l = strlen(cells[i]);
		maxlen = l > maxlen ? l : maxlen;
	}
	if (maxlen > ((size_t)1 << 40))
		return rt_fail(x, n, STRATA_RUNTIME, "a cell is too long");
	char *buf = rt_scratch(x, 4 * maxlen + 1);
	if (!buf)
		return rt_nomem(x, n, "kernel scratch");
	int64_t kept = 0;
	for (int64_t i = 0; i < c; i++) {
		const char *probe = cells[i];
		if (!st->sensitive) {
			map_case(cells[i], strlen(cells[i]), CASE_LOWER, st->loc, buf);
			probe = buf;
		}
		keep[i] = !is_stop(st, probe);
		kept += keep[i];
	}
	int64_t dims[2];
	int r = in->rank;
	if (r == 1)
		dims[0] = kept ? kept : 1;
	else
		dims[0] = 1, dims[1] = kept ? kept : 1;
	if ((rc = rt_output(x, n, 0, BASE_DT_STRING, r, dims, &out)) != 0)
		return rc;
	char **o = out->data;
	if (!kept) {
		/* Every cell was a stop word: one empty string stands for none. */
		if (!(o[0] = rt_string(x, "", 0)))
			return rt_nomem(x, n, "kernel scratch");
		return 0;
	}
	int64_t k = 0;
	for (int64_t i = 0; i < c; i++) {
		if (!keep[i])
			continue;
		size_t l = strlen(cells[i]);
		const char *src = cells[i];
		if (st->action != CASE_NONE) {
			l = map_case(cells[i], l, st->action, st->loc, buf);
			src = buf;
		}
		if (!(o[k++] = rt_string(x, src, l)))
			return rt_nomem(x, n, "kernel scratch");
	}
	return 0;
}

static void fini_strnorm(struct rt_node *n)
{
	struct strnorm *st = n->state;
	if (!st)
		return;
	if (st->loc)
		freelocale(st->loc);
	base_free(st, st->bytes);
	n->state = NULL;
}

static int init_strnorm(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin != 1 || !has_input(n, 0) || !has_output(n, 0))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "takes one input and one output");
	int dt = rt_graph_dtype(g, n->in[0]);
	if (dt != BASE_DT_STRING)
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "StringNormalizer (opset %d): input of %s", n->opset,
		                   base_dtype_name(dt));
	const char *act = rt_attr_string(n, "case_change_action", "NONE");
	int action;
	if (!strcmp(act, "NONE"))
		action = CASE_NONE;
	else if (!strcmp(act, "LOWER"))
		action = CASE_LOWER;
	else if (!strcmp(act, "UPPER"))
		action = CASE_UPPER;
	else
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "case_change_action '%.40s' is not NONE, LOWER or UPPER", act);
	int64_t sens = rt_attr_int(n, "is_case_sensitive", 0);
	if (sens != 0 && sens != 1)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "is_case_sensitive = %lld",
		                   (long long)sens);
	const struct rt_attr *sw = rt_attr_find(n, "stopwords");
	if (sw && sw->type != RT_ATTR_STRINGS)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "stopwords is not a list of strings");
	size_t nstop = sw ? sw->n : 0;
	/* One block: the header, the pointers, then each stop word with room
	 * for its folded form (at most 4 bytes per input byte). */
	size_t bytes = sizeof(struct strnorm) + nstop * sizeof(char *);
	for (size_t i = 0; i < nstop; i++) {
		size_t l = sw->strings[i] ? strlen(sw->strings[i]) : 0;
		if (l > ((size_t)1 << 30))
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "stop word %zu is too long", i);
		bytes += 4 * l + 1;
	}
	struct strnorm *st = base_alloc(bytes);
	if (!st)
		return rt_node_nomem(n, err, "kernel state");
	memset(st, 0, bytes);
	st->bytes = bytes;
	st->action = action;
	st->sensitive = (int)sens;
	st->loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	st->nstop = nstop;
	st->stop = (char **)(st + 1);
	char *p = (char *)(st->stop + nstop);
	for (size_t i = 0; i < nstop; i++) {
		const char *w = sw->strings[i] ? sw->strings[i] : "";
		size_t l = strlen(w);
		st->stop[i] = p;
		if (st->sensitive)
			memcpy(p, w, l + 1), p += l + 1;
		else
			p += map_case(w, l, CASE_LOWER, st->loc, p) + 1;
	}
	n->state = st;
	rt_graph_set_dtype(g, n->out[0], BASE_DT_STRING);
	n->run = run_strnorm;
	return 0;
}

/* ---- TfIdfVectorizer ------------------------------------------------------------------ */

enum { TF, IDF, TFIDF };

struct tfidf {
	size_t bytes;            /* of this block, for base_free */
	int mode;
	int is_str;
	int64_t min_n, max_n;    /* max_n capped at the longest n-gram of the pool */
	int64_t max_skip;
	int64_t out_size;        /* max(ngram_indexes) + 1 */
	int nlev;                /* n-gram lengths in the pool: 1 .. nlev */
	int64_t *lev_pool;       /* [nlev]: where the n-grams of length l+1 start in the pool */
	int64_t *lev_first;      /* [nlev + 1]: ordinal of the first n-gram of each length */
	int64_t *order;          /* [total]: per length, ordinals sorted by content */
	const int64_t *pool_i;   /* the pool (owned by the graph) */
	const char *const *pool_s;
	const int64_t *indexes;  /* [total]: output position of each n-gram */
	const float *weights;    /* NULL or [out_size or more] */
};

/* Compare n-gram ord (of length len) with the items q[0..len). */
static int cmp_ngram(const struct tfidf *t, int64_t ord, int lev, const int64_t *qi,
                     const char *const *qs)
{
	int len = lev + 1;
	int64_t at = t->lev_pool[lev] + (ord - t->lev_first[lev]) * len;
	for (int k = 0; k < len; k++) {
		if (t->is_str) {
			int c = strcmp(t->pool_s[at + k] ? t->pool_s[at + k] : "", qs[k]);
			if (c)
				return c;
		} else if (t->pool_i[at + k] != qi[k]) {
			return t->pool_i[at + k] < qi[k] ? -1 : 1;
		}
	}
	return 0;
}

struct sortctx {
	const struct tfidf *t;
	int lev;
};

static int cmp_sort(const void *a, const void *b, void *arg)
{
	const struct sortctx *c = arg;
	const struct tfidf *t = c->t;
	int len = c->lev + 1;
	int64_t oa = *(const int64_t *)a, ob = *(const int64_t *)b;
	int64_t pa = t->lev_pool[c->lev] + (oa - t->lev_first[c->lev]) * len;
	int64_t pb = t->lev_pool[c->lev] + (ob - t->lev_first[c->lev]) * len;
	for (int k = 0; k < len; k++) {
		if (t->is_str) {
			const char *sa = t->pool_s[pa + k] ? t->pool_s[pa + k] : "";
			const char *sb = t->pool_s[pb + k] ? t->pool_s[pb + k] : "";
			int r = strcmp(sa, sb);
			if (r)
				return r;
		} else if (t->pool_i[pa + k] != t->pool_i[pb + k]) {
			return t->pool_i[pa + k] < t->pool_i[pb + k] ? -1 : 1;
		}
	}
	return oa < ob ? -1 : oa > ob; /* equal n-grams: the first one wins */
}

/* The ordinal of the n-gram of length lev+1 equal to q, or -1. */
static int64_t find_ngram(const struct tfidf *t, int lev, const int64_t *qi, const char *const *qs)
{
	int64_t lo = t->lev_first[lev], hi = t->lev_first[lev + 1] - 1, found = -1;
	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2;
		int c = cmp_ngram(t, t->order[mid], lev, qi, qs);
		if (c < 0) {
			lo = mid + 1;
		} else {
			if (c == 0)
				found = t->order[mid];
			hi = mid - 1; /* keep looking left for the first duplicate */
		}
	}
	return found;
}

static int run_tfidf(struct rt_node *n, struct rt_exec *x)
{
	const struct tfidf *t = n->state;
	const struct rt_tensor *in = rt_input(x, n, 0);
	struct rt_tensor *out;
	int rc;
	if (!in)
		return rt_fail(x, n, STRATA_RUNTIME, "missing input");
	if (in->rank < 1 || in->rank > 2)
		return rt_fail(x, n, STRATA_RUNTIME, "takes a [C] or [N, C] tensor, not rank %d",
		               in->rank);
	int64_t rows = in->rank == 2 ? in->dims[0] : 1;
	int64_t C = in->dims[in->rank - 1];
	int64_t dims[2] = { rows, t->out_size };
	if (in->rank == 1)
		dims[0] = t->out_size;
	if ((rc = rt_output(x, n, 0, BASE_DT_FLOAT, in->rank, dims, &out)) != 0)
		return rc;
	float *y = out->data;
	for (int64_t i = 0; i < rows * t->out_size; i++)
		y[i] = 0;
	int64_t qi[64];
	const char *qs[64];
	if (t->is_str)
		for (int64_t i = 0; i < rows * C; i++)
			if (!((char *const *)in->data)[i])
				return rt_fail(x, n, STRATA_RUNTIME, "cell %lld is not a string",
				               (long long)i);
	/* A gap of C or more cells leaves no room for a second item. */
	int64_t max_d = t->max_skip + 1 < C ? t->max_skip + 1 : C;
	for (int64_t r = 0; r < rows; r++) {
		float *row = y + r * t->out_size;
		int64_t base = r * C;
		int64_t start_n = t->min_n;
		for (int64_t d = 1; d <= max_d && start_n <= t->max_n; d++) {
			for (int64_t s = 0; s < C; s++) {
				if (s + d * (start_n - 1) >= C)
					break;
				for (int64_t len = 1; len <= t->max_n; len++) {
					int64_t p = s + (len - 1) * d;
					if (p >= C)
						break;
					if (t->is_str)
						qs[len - 1] = ((char *const *)in->data)[base + p];
					else if (in->dtype == BASE_DT_INT64)
						qi[len - 1] = ((const int64_t *)in->data)[base + p];
					else
						qi[len - 1] = ((const int32_t *)in->data)[base + p];
					if (len < start_n)
						continue;
					int64_t ord = find_ngram(t, (int)len - 1, qi, qs);
					if (ord >= 0)
						row[t->indexes[ord]] += 1;
				}
			}
			/* Unigrams are counted at the first distance only. */
			if (start_n == 1)
				start_n = 2;
		}
		for (int64_t j = 0; j < t->out_size; j++) {
			float w = t->weights ? t->weights[j] : 1;
			if (t->mode == IDF)
				row[j] = row[j] > 0 ? w : 0;
			else if (t->mode == TFIDF)
				row[j] *= w;
		}
	}
	return 0;
}

static void fini_tfidf(struct rt_node *n)
{
	struct tfidf *t = n->state;
	if (t)
		base_free(t, t->bytes);
	n->state = NULL;
}

static int init_tfidf(struct rt_node *n, struct rt_graph *g, struct strata_error *err)
{
	if (n->nin != 1 || !has_input(n, 0) || !has_output(n, 0))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "takes one input and one output");
	int dt = rt_graph_dtype(g, n->in[0]);
	const char *mode = rt_attr_string(n, "mode", "");
	int m;
	if (!strcmp(mode, "TF"))
		m = TF;
	else if (!strcmp(mode, "IDF"))
		m = IDF;
	else if (!strcmp(mode, "TFIDF"))
		m = TFIDF;
	else
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "mode '%.40s' is not TF, IDF or TFIDF", mode);
	int64_t min_n = rt_attr_int(n, "min_gram_length", -1);
	int64_t max_n = rt_attr_int(n, "max_gram_length", -1);
	int64_t skip = rt_attr_int(n, "max_skip_count", -1);
	if (min_n < 1 || max_n < min_n || skip < 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "min_gram_length %lld, max_gram_length %lld, max_skip_count %lld",
		                   (long long)min_n, (long long)max_n, (long long)skip);
	size_t ncounts, nidx;
	const int64_t *counts = rt_attr_ints(n, "ngram_counts", &ncounts);
	const int64_t *idx = rt_attr_ints(n, "ngram_indexes", &nidx);
	const struct rt_attr *pi = rt_attr_find(n, "pool_int64s");
	const struct rt_attr *ps = rt_attr_find(n, "pool_strings");
	const struct rt_attr *wa = rt_attr_find(n, "weights");
	if ((pi != NULL) == (ps != NULL))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "needs exactly one of pool_int64s and pool_strings");
	if ((pi && pi->type != RT_ATTR_INTS) || (ps && ps->type != RT_ATTR_STRINGS) ||
	    (wa && wa->type != RT_ATTR_FLOATS))
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "a pool or weights of the wrong type");
	int is_str = ps != NULL;
	if (is_str ? dt != BASE_DT_STRING : (dt != BASE_DT_INT32 && dt != BASE_DT_INT64))
		return rt_node_err(n, err, STRATA_NOT_IMPLEMENTED,
		                   "TfIdfVectorizer (opset %d): input of %s with a pool of %s",
		                   n->opset, base_dtype_name(dt), is_str ? "strings" : "int64s");
	size_t pool = is_str ? ps->n : pi->n;
	if (ncounts == 0 || ncounts > 64)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "ngram_counts has %zu entries (1 to 64 n-gram lengths)", ncounts);
	/* Validate the layout: starts non-decreasing within the pool, each
	 * length's segment a whole number of n-grams. */
	int64_t total = 0;
	for (size_t l = 0; l < ncounts; l++) {
		int64_t b = counts[l], e = l + 1 < ncounts ? counts[l + 1] : (int64_t)pool;
		if (b < 0 || b > e || e > (int64_t)pool)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "ngram_counts[%zu] = %lld does not fit a pool of %zu", l,
			                   (long long)b, pool);
		if ((e - b) % (int64_t)(l + 1) != 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "%lld pool items are not a whole number of %zu-grams",
			                   (long long)(e - b), l + 1);
		total += (e - b) / (int64_t)(l + 1);
	}
	if (counts[0] != 0)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "ngram_counts[0] = %lld, not 0",
		                   (long long)counts[0]);
	if ((int64_t)nidx != total)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "ngram_indexes has %zu entries for %lld n-grams", nidx,
		                   (long long)total);
	int64_t out_size = 0;
	for (size_t i = 0; i < nidx; i++) {
		if (idx[i] < 0 || idx[i] >= INT32_MAX)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH, "ngram_indexes[%zu] = %lld",
			                   i, (long long)idx[i]);
		out_size = idx[i] + 1 > out_size ? idx[i] + 1 : out_size;
	}
	if (wa && (int64_t)wa->n < out_size)
		return rt_node_err(n, err, STRATA_INVALID_GRAPH,
		                   "weights has %zu entries for %lld outputs", wa->n,
		                   (long long)out_size);

	size_t bytes = sizeof(struct tfidf) + (2 * ncounts + 1 + (size_t)total) * sizeof(int64_t);
	struct tfidf *t = base_alloc(bytes);
	if (!t)
		return rt_node_nomem(n, err, "kernel state");
	memset(t, 0, bytes);
	t->bytes = bytes;
	t->mode = m;
	t->is_str = is_str;
	t->min_n = min_n;
	/* No n-gram is longer than the pool's longest length. */
	t->max_n = max_n < (int64_t)ncounts ? max_n : (int64_t)ncounts;
	t->max_skip = skip;
	t->out_size = out_size;
	t->nlev = (int)ncounts;
	t->lev_pool = (int64_t *)(t + 1);
	t->lev_first = t->lev_pool + ncounts;
	t->order = t->lev_first + ncounts + 1;
	t->pool_i = pi ? pi->ints : NULL;
	t->pool_s = ps ? ps->strings : NULL;
	t->indexes = idx;
	t->weights = wa ? wa->floats : NULL;
	int64_t ord = 0;
	for (int l = 0; l < t->nlev; l++) {
		int64_t b = counts[l], e = l + 1 < t->nlev ? counts[l + 1] : (int64_t)pool;
		t->lev_pool[l] = b;
		t->lev_first[l] = ord;
		for (int64_t k = 0; k < (e - b) / (l + 1); k++, ord++)
			t->order[ord] = ord;
		struct sortctx c = { t, l };
		qsort_r(t->order + t->lev_first[l], (size_t)(ord - t->lev_first[l]),
		        sizeof(int64_t), cmp_sort, &c);
	}
	t->lev_first[t->nlev] = ord;
	n->state = t;
	rt_graph_set_dtype(g, n->out[0], BASE_DT_FLOAT);
	n->run = run_tfidf;
	return 0;
}

const struct rt_opdef rt_ops_string[] = {
	{ "", "StringNormalizer", 10, init_strnorm, fini_strnorm },
	{ "", "TfIdfVectorizer", 9, init_tfidf, fini_tfidf },
	{ .op = NULL },
};
