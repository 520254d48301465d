/*
 * qgemm.c: the int8 GEMM driver behind MatMulInteger, QLinearMatMul and
 * the fused dynamically quantized linear layer (fused.c): packing, zero
 * points and CPU dispatch.
 *
 * C[M,N] = (A - za) (B - zb), A and B each uint8 or int8, accumulated in
 * int32 (exact modulo 2^32, the wrap MatMulInteger's int32 output has).
 * The kernels multiply unsigned A by signed B (vpdpbusd's operand types,
 * and what ONNX Runtime's dynamic quantization emits: uint8 activations,
 * int8 weights); the other combinations are moved there exactly by
 * flipping the top bit: an int8 a is stored a + 128 with za + 128, a uint8
 * b is stored b - 128 with zb - 128, which leaves every difference a - za
 * and b - zb as it was.  The zero points never enter the inner loop:
 *   sum_k (a - za)(b - zb) = sum_k a b - zb * sum_k a - za * (sum_k b - K zb)
 * so A's row sums (taken while A is packed) and B's column sums (taken
 * when B is packed) finish each cell (qgemm_kern.h).
 *
 * B is packed once at load when it is a weight (rt_qgemm_pack_b), at run
 * time into scratch otherwise; A is packed at every call (M x K bytes,
 * small beside the M x K x N products).  The kernel is qgemm_vnni.c's when
 * the machine has AVX512-VNNI and AVX-512 is in use, qgemm_vnni256.c's on
 * a machine with AVX-VNNI (unless STRATA_CPU=avx2 holds the kernels to the
 * baseline), qgemm_avx2.c's otherwise, decided on every call like the float
 * GEMM's, so a test may switch between calls.  All read the same packed B,
 * so a model packed on one path runs on the others.
 *
 * Invariants: reentrant, allocates nothing at run time (the caller gives
 * the scratch, rt_qgemm_scratch_bytes of it).
 */
#include <immintrin.h>
#include <string.h>

#include "gemm_kern.h"
#include "qgemm_kern.h"

static int64_t quads(int64_t K)
{
	return (K + 3) / 4;
}

/* Quads a strip of packed B holds: whole AMX tiles of k. */
static int64_t strip_quads(int64_t K)
{
	return (quads(K) + 15) / 16 * 16;
}

static int64_t padded(int64_t N)
{
	return (N + QG_PANEL - 1) / QG_PANEL * QG_PANEL;
}

static size_t round64(size_t n)
{
	return (n + 63) / 64 * 64;
}

size_t rt_qgemm_pack_bytes(int64_t K, int64_t N)
{
	return round64((size_t)(strip_quads(K) * 4) * (size_t)padded(N)) +
	       round64((size_t)padded(N) * sizeof(int32_t));
}

/* Where a packing of K x N at mem keeps its column sums. */
static int32_t *colsum_of(void *mem, int64_t K, int64_t N)
{
	return (int32_t *)((char *)mem + round64((size_t)(strip_quads(K) * 4) * (size_t)padded(N)));
}

/* One quad of k (4 rows of B, rows ldb bytes apart) by 16 columns into
 * the packed layout: for each column its 4 bytes in k order (a 4 x 16 byte
 * transpose), top bits flipped by flip.  Returns the 16 columns' sums of
 * the four stored bytes (int16). */
static __m256i pack_quad16(const uint8_t *src, int64_t ldb, __m128i flip, int8_t *d)
{
	__m128i r0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)src), flip);
	__m128i r1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(src + ldb)), flip);
	__m128i r2 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(src + 2 * ldb)), flip);
	__m128i r3 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(src + 3 * ldb)), flip);
	__m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1);
	__m128i t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
	_mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi16(t0, t2));
	_mm_storeu_si128((__m128i *)(d + 16), _mm_unpackhi_epi16(t0, t2));
	_mm_storeu_si128((__m128i *)(d + 32), _mm_unpacklo_epi16(t1, t3));
	_mm_storeu_si128((__m128i *)(d + 48), _mm_unpackhi_epi16(t1, t3));
	return _mm256_add_epi16(_mm256_add_epi16(_mm256_cvtepi8_epi16(r0), _mm256_cvtepi8_epi16(r1)),
	                        _mm256_add_epi16(_mm256_cvtepi8_epi16(r2), _mm256_cvtepi8_epi16(r3)));
}

void rt_qgemm_pack_into(int bdt, int64_t K, int64_t N, const void *B, int64_t ldb, void *mem,
                        struct rt_qpacked_b *pb)
{
	int64_t kq = strip_quads(K);
	memset(pb, 0, sizeof *pb);
	pb->K = K;
	pb->N = N;
	pb->bdt = bdt;
	pb->bytes = rt_qgemm_pack_bytes(K, N);
	pb->data = mem;
	pb->colsum = colsum_of(mem, K, N);
	memset(mem, 0, pb->bytes);
	const uint8_t *src = B;
	/* an uint8 b is stored b - 128: the same byte with its top bit flipped */
	uint8_t flip = bdt == BASE_DT_UINT8 ? 0x80 : 0;
	const __m128i vflip = _mm_set1_epi8((char)flip);
	/* whole quads of whole strips by transposes, the ragged edges by cell */
	int64_t kfull = K / 4 * 4, nfull = N / QG_STRIP * QG_STRIP;
	for (int64_t j = 0; j < nfull; j += QG_STRIP) {
		__m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
		for (int64_t k = 0; k < kfull; k += 4) {
			__m256i s16 = pack_quad16(src + k * ldb + j, ldb, vflip,
			                          pb->data + (j / QG_STRIP) * kq * 64 + (k / 4) * 64);
			lo = _mm256_add_epi32(lo, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(s16)));
			hi = _mm256_add_epi32(hi, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(s16, 1)));
		}
		_mm256_storeu_si256((__m256i *)(pb->colsum + j), lo);
		_mm256_storeu_si256((__m256i *)(pb->colsum + j + 8), hi);
	}
	for (int64_t k = 0; k < K; k++) {
		const uint8_t *row = src + k * ldb;
		int64_t q = k / 4, kk = k % 4;
		for (int64_t j = k < kfull ? nfull : 0; j < N; j++) {
			int8_t v = (int8_t)(row[j] ^ flip);
			pb->data[(j / QG_STRIP) * kq * 64 + q * 64 + (j % QG_STRIP) * 4 + kk] = v;
			pb->colsum[j] += v;
		}
	}
}

int rt_qgemm_pack_b(int bdt, int64_t K, int64_t N, const void *B, int64_t ldb,
                    struct rt_qpacked_b *pb)
{
	size_t bytes = rt_qgemm_pack_bytes(K, N);
	void *mem = base_alloc(bytes);
	if (!mem)
		return STRATA_NOMEM;
	rt_qgemm_pack_into(bdt, K, N, B, ldb, mem, pb);
	pb->owned = 1;
	return 0;
}

int rt_node_qpack_b(struct rt_node *n, int bdt, int64_t K, int64_t N, const void *B, int64_t ldb,
                    struct rt_qpacked_b *pb, struct rt_packed_b *rec, struct strata_error *err)
{
	size_t bytes = rt_qgemm_pack_bytes(K, N);
	const struct rt_packed_b *p;
	int rc = rt_node_next_pack(n, &p, err);
	if (rc)
		return rc;
	if (p) {
		if (p->version != RT_QPACK_VERSION || p->K != K || p->N != N || p->isa != bdt ||
		    p->bytes != bytes || !p->data || ((uintptr_t)p->data & 63) != 0)
			return rt_node_err(n, err, STRATA_INVALID_GRAPH,
			                   "packed int8 weights %d of the context do not fit (%lldx%lld "
			                   "wanted, %lldx%lld of layout %d found)",
			                   n->npacks, (long long)K, (long long)N, (long long)p->K,
			                   (long long)p->N, p->version);
		*pb = (struct rt_qpacked_b){ .K = K, .N = N, .bdt = bdt, .data = (int8_t *)p->data,
		                             .colsum = colsum_of(p->data, K, N), .bytes = bytes };
	} else if (!B) {
		return rt_node_err(n, err, STRATA_INVALID_GRAPH, "the weights have no data");
	} else if (rt_qgemm_pack_b(bdt, K, N, B, ldb, pb) != 0) {
		return rt_node_nomem(n, err, "packing the weights");
	}
	*rec = (struct rt_packed_b){ .K = K, .N = N, .version = RT_QPACK_VERSION, .bytes = bytes,
	                             .data = (float *)(void *)pb->data, .isa = bdt };
	n->packs[n->npacks++] = rec;
	return 0;
}

void rt_qpacked_b_free(struct rt_qpacked_b *pb)
{
	if (pb && pb->owned)
		base_free(pb->data, pb->bytes);
	if (pb)
		memset(pb, 0, sizeof *pb);
}

size_t rt_qgemm_scratch_bytes(int64_t M, int64_t K, int64_t N)
{
	size_t rowbytes = (size_t)(strip_quads(K) * 4);
	return round64((size_t)M * rowbytes) + 2 * round64((size_t)M * 4) +
	       4 * round64((size_t)padded(N) * 4) + 32 * rowbytes;
}

/* 0, or the kernel rt_qgemm_force chose. */
static int qforced;

int rt_qgemm_isa(void)
{
	int f = __atomic_load_n(&qforced, __ATOMIC_RELAXED);
	if (f)
		return f;
	if (rt_cpu_amx())
		return RT_QGEMM_AMX;
	if (rt_cpu_isa() == RT_ISA_AVX512 && rt_cpu_vnni())
		return RT_QGEMM_VNNI;
	return rt_cpu_avxvnni() && !rt_cpu_baseline_only() ? RT_QGEMM_VNNI256 : RT_QGEMM_AVX2;
}

/* The 256-bit VNNI kernel runs in the VEX encoding on AVX-VNNI machines, in
 * the EVEX one on AVX-512 ones with VNNI. */
static int vnni256_runs(void)
{
	return rt_cpu_avxvnni() || (rt_cpu_best() == RT_ISA_AVX512 && rt_cpu_vnni());
}

int rt_qgemm_force(int kind)
{
	if (kind != 0 && kind != RT_QGEMM_AVX2 && kind != RT_QGEMM_VNNI && kind != RT_QGEMM_VNNI256 &&
	    kind != RT_QGEMM_AMX)
		return STRATA_INVALID_ARGUMENT;
	if ((kind == RT_QGEMM_VNNI && !(rt_cpu_best() == RT_ISA_AVX512 && rt_cpu_vnni())) ||
	    (kind == RT_QGEMM_VNNI256 && !vnni256_runs()) ||
	    (kind == RT_QGEMM_AMX && !rt_cpu_amx_usable()))
		return STRATA_NOT_IMPLEMENTED;
	__atomic_store_n(&qforced, kind, __ATOMIC_RELAXED);
	return 0;
}

/* A zero point's value at index i (step 0: one value), as the stored
 * operand sees it (flip: +128 for int8 A, -128 for uint8 B). */
static int32_t zp_at(const void *z, int dt, int step, int64_t i, int32_t flip)
{
	if (!z)
		return flip;
	int64_t k = step ? i : 0;
	int32_t v = dt == BASE_DT_INT8 ? ((const int8_t *)z)[k] : ((const uint8_t *)z)[k];
	return v + flip;
}

/* Copy a row of K bytes into lda (a multiple of 4), flipping the top bit
 * of each (flip 0x80) and zero-filling the padding. */
static void pack_row(const uint8_t *src, int64_t K, int64_t lda, uint8_t flip, uint8_t *d)
{
	const __m256i f = _mm256_set1_epi8((char)flip);
	int64_t k = 0;
	for (; k + 32 <= K; k += 32)
		_mm256_storeu_si256((__m256i *)(d + k),
		                    _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(src + k)), f));
	for (; k < K; k++)
		d[k] = src[k] ^ flip;
	for (; k < lda; k++)
		d[k] = 0;
}

/* The sum of K unsigned bytes (vpsadbw against zero sums 8 at a time). */
static int32_t row_sum(const uint8_t *p, int64_t K)
{
	__m256i acc = _mm256_setzero_si256();
	int64_t k = 0;
	for (; k + 32 <= K; k += 32)
		acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_loadu_si256((const __m256i *)(p + k)),
		                                            _mm256_setzero_si256()));
	uint64_t t[4];
	_mm256_storeu_si256((__m256i *)t, acc);
	uint64_t s = t[0] + t[1] + t[2] + t[3];
	for (; k < K; k++)
		s += p[k];
	return (int32_t)(uint32_t)s;
}

void rt_qgemm(const struct rt_qgemm_args *g, const struct rt_qpacked_b *pb, void *scratch)
{
	int64_t M = g->M, K = pb->K, N = pb->N;
	if (M <= 0 || N <= 0)
		return;
	int64_t kq = quads(K), kqs = strip_quads(K), lda = kqs * 4, npad = padded(N);
	int kind = rt_qgemm_isa();
	char *p = scratch;
	uint8_t *ap = (uint8_t *)p;
	p += round64((size_t)M * (size_t)lda);
	int32_t *rs = (int32_t *)p;
	p += round64((size_t)M * 4);
	int32_t *za = (int32_t *)p;
	p += round64((size_t)M * 4);
	int32_t *zb = (int32_t *)p;
	p += round64((size_t)npad * 4);
	int32_t *cb = (int32_t *)p;
	p += round64((size_t)npad * 4);
	float *sc = (float *)p;
	p += round64((size_t)npad * 4);
	int32_t *zc = (int32_t *)p;
	p += round64((size_t)npad * 4);
	uint8_t *tail = (uint8_t *)p;

	/* A as unsigned bytes with K a whole number of quads (of AMX tiles of
	 * k, 64 bytes, for the AMX kernel), and its row sums.  uint8 A with K
	 * such a multiple (what quantize_dynamic makes, on transformer widths)
	 * is read in place; otherwise it is copied with its top bits flipped
	 * (int8) and zero padding. */
	uint8_t aflip = g->adt == BASE_DT_INT8 ? 0x80 : 0;
	const uint8_t *arows = ap;
	int64_t ald = lda;
	if (!aflip && K == (kind == RT_QGEMM_AMX ? lda : kq * 4)) {
		arows = g->A;
		ald = g->lda;
	}
	for (int64_t i = 0; i < M; i++) {
		const uint8_t *src = (const uint8_t *)g->A + i * g->lda;
		if (arows == ap)
			pack_row(src, K, lda, aflip, ap + i * lda);
		rs[i] = row_sum(arows + i * ald, K);
		za[i] = zp_at(g->za, g->adt, g->zastep, i, aflip ? 128 : 0);
	}
	int zb_zero = 1;
	for (int64_t j = 0; j < npad; j++) {
		if (j < N) {
			zb[j] = zp_at(g->zb, pb->bdt, g->zbstep, j, pb->bdt == BASE_DT_UINT8 ? -128 : 0);
			cb[j] = (int32_t)((uint32_t)K * (uint32_t)zb[j] - (uint32_t)pb->colsum[j]);
			zb_zero &= zb[j] == 0;
			zc[j] = (int32_t)((uint32_t)za[0] * (uint32_t)cb[j]);
			sc[j] = g->cf ? g->ascale * g->bscale[g->bsstep ? j : 0] : 0.0f;
		} else {
			zb[j] = cb[j] = zc[j] = 0;
			sc[j] = 0.0f;
		}
	}
	struct qgemm_fin f = {rs, za, zb, cb, g->ci, g->cf, sc, g->bias, g->ldc,
	                      zb_zero, g->zastep ? NULL : zc, g->act, g->res, g->ldr};
	int64_t sstride = kqs * 64;
	if (kind == RT_QGEMM_AMX) {
		rt_qgemm_amx(M, kqs, arows, ald, pb->data, sstride, N, &f, tail);
		return;
	}
	qgemm_tile_fn *tile = kind == RT_QGEMM_VNNI      ? rt_qgemm_tile_vnni
	                      : kind == RT_QGEMM_AVX2    ? rt_qgemm_tile_avx2
	                      : rt_cpu_avxvnni()         ? rt_qgemm_tile_avxvnni
	                                                 : rt_qgemm_tile_vnni256_evex;
	int64_t mr = kind == RT_QGEMM_VNNI      ? QG_MR_VNNI
	             : kind == RT_QGEMM_VNNI256 ? QG_MR_VNNI256
	                                        : QG_MR_AVX2;
	/* Rows in blocks whose A takes a quarter of L2, so that A is read from
	 * memory once, not once per panel of B (a batch of 16 sequences is 2048
	 * rows); within a block each B panel serves every row tile. */
	int64_t l1, l2;
	rt_cpu_caches(&l1, &l2);
	int64_t mc = l2 / 4 / (lda ? lda : 1) / mr * mr;
	mc = mc < mr ? mr : mc;
	for (int64_t i0 = 0; i0 < M; i0 += mc) {
		int64_t iend = M - i0 < mc ? M : i0 + mc;
		for (int64_t j = 0; j < N; j += QG_PANEL) {
			const int8_t *b = pb->data + (j / QG_STRIP) * sstride;
			int64_t ncols = N - j < QG_PANEL ? N - j : QG_PANEL;
			for (int64_t i = i0; i < iend; i += mr) {
				int64_t rows = iend - i < mr ? iend - i : mr;
				tile(rows, kq, arows + i * ald, ald, b, sstride, i, j, ncols, &f);
			}
		}
	}
}
