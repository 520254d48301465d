/*
 * bench.h: what the two parts of bench share.  bench.c holds main, the
 * inference cases and the helpers below; loads.c times session creation on
 * the models of the same cases.  Private to build/bench/bench; common.h is
 * what every benchmark program shares.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "../runtime/runtime.h"
#include "common.h"

/* One inference case (bench.c); loads.c takes its models and the sizes of
 * each model's first case. */
struct bench_case {
	const char *model;
	int batch;
	int seq;          /* 0: the model has no sequence dimension */
	int rounds;
	int per_round;
	int warmup;
};

/* The table of cases, in bench.c; NCASES is its length (checked there). */
#define NCASES 14
extern const struct bench_case cases[];
/* 1 when model names a "_bf16" case: its float model's file, run with
 * session.bf16_weights (bench.c). */
int bench_is_bf16(const char *model);

struct options {
	const char *peer;      /* NULL: no peer */
	const char *script;
	const char *models;
	double scale;
	const char *only;
	const char *ctxdir;    /* scratch folder of the session-creation part */
	int loads;             /* LOADS_*: which parts run */
};

enum { LOADS_AFTER, LOADS_SKIP, LOADS_ONLY };

#define MAX_INPUTS 16

/* The inputs of one case: tensors in model input order, their buffers, and
 * the sum of every cell (the peer computes the same sum). */
struct feeds {
	int n;
	struct rt_tensor t[MAX_INPUTS];
	size_t bytes[MAX_INPUTS];
	double checksum;
};

/* bench.c: the peer's input generator. */
int make_feeds(const struct rt_model *m, int batch, int seq, struct feeds *f,
               char *why, size_t cap);
void feeds_free(struct feeds *f);

/* bench.c: small helpers. */
double now_ms(void);
void note_vadd(char *note, size_t cap, const char *fmt, va_list ap);
int write_all(int fd, const void *buf, size_t n);
size_t read_all(int fd, void *buf, size_t n);
int scaled(int n, double scale);
int selected(const struct options *o, const char *model);
void put_ms(double ms, int w);
void put_num(double v, int w, int prec);
void json_num(const char *key, double v, int present);

/* peak.c: the FMA roof of one core in GFLOP/s, on the vector width of the
 * runtime's kernels (runtime_isa()), timed in CPU time (a few ms). */
double bench_fma_peak(void);
/* peak.c: the int8 roof of one core in GOPS (a register-only vpdpbusd loop
 * on zmm registers, CPU time), or -1 where the runtime's kernels do not use
 * AVX512-VNNI (runtime_isa() not "avx512", or no VNNI on the CPU). */
double bench_vnni_peak(void);
/* peak.c: the calling thread's CPU time in ms. */
double bench_cpu_ms(void);

/* loads.c: the session-creation part.  Returns 0, or 1 when Strata could
 * not load some model. */
int run_loads(const struct options *o);

#endif
