/*
 * exec_int.h: the executor.  exec.c runs a graph on a run context,
 * buffers.c keeps the context's buffers, plan.c its static memory plans,
 * binding.c its IO binding; model.c makes, pools and frees contexts.
 * Kernels never touch these fields (kernel.h is their interface).
 */
#ifndef RUNTIME_EXEC_INT_H
#define RUNTIME_EXEC_INT_H

#include "runtime_int.h"

/* ---- static memory plans (plan.c) --------------------------------------------
 * One buffer of a recorded run: alive from step start to step end (node
 * indices, both included).  rt_plan_place sets every off (and rounds bytes
 * up to RT_PLAN_ALIGN) so that items alive at the same step never share a
 * byte, and *total to the arena size.  Returns 0 or STRATA_NOMEM. */
#define RT_PLAN_ALIGN 64
struct rt_plan_item {
	size_t bytes;
	int start, end;
	size_t off;
};
int rt_plan_place(struct rt_plan_item *it, size_t n, size_t *total);

/* The plan cache of a top run context (buffers.c keys runs, plan.c keeps the
 * plans).  A plan holds, for one input-shape class, each value's slot (off,
 * cap; cap 0: none), which values the recorded run made views, and the
 * scratch slots in request order.  All plans share one arena: one run at a
 * time uses it. */
#define RT_PLAN_MAX 8                        /* plans kept, least recently used evicted */
#define RT_PLAN_MAX_BYTES ((size_t)1 << 31)  /* bound on one plan's arena */
struct rt_plan_scratch {
	int step;                /* the node that asked */
	size_t bytes;
	size_t off;
};
struct rt_plan {
	int64_t *key;            /* rank and dims of every input */
	size_t nkey;
	size_t bytes;            /* of the arena it needs */
	int fresh;               /* not run yet */
	size_t *off;             /* per value: offset in the arena */
	size_t *cap;             /* per value: slot size, 0 when it has none */
	unsigned char *aliased;  /* per value: the recorded run made it a view */
	struct rt_plan_scratch *tmp;
	size_t ntmp;
	uint64_t used;           /* LRU clock */
};
struct rt_plans {
	struct rt_plan plans[RT_PLAN_MAX];
	int nplans;
	void *arena;
	size_t arena_bytes;
	uint64_t clock;
	int64_t *key;            /* this run's class, filled by the caller */
	size_t nkey, capkey;
	/* A recording run (buffers.c writes these as buffers come and go): */
	size_t *rbytes;          /* per value, bytes asked */
	int *rstart, *rend;      /* per value, first and last step alive; -1: none */
	unsigned char *ralias;   /* per value, made a view */
	struct rt_plan_scratch *trec; /* scratch requests */
	size_t ntrec, captrec;
	int rec_bad;             /* a record could not be kept: build no plan */
};
/* Arrays for a graph of nvalues values and ninputs inputs (c zeroed first).
 * Returns 0 or STRATA_NOMEM; rt_plans_free releases a partial init. */
int rt_plans_init(struct rt_plans *c, int nvalues, int ninputs);
void rt_plans_free(struct rt_plans *c, int nvalues);
/* The plan of class c->key[0..nkey), marked most recently used, or NULL. */
struct rt_plan *rt_plans_find(struct rt_plans *c);
/* Start recording a run of class c->key. */
void rt_plans_record(struct rt_plans *c, int nvalues);
/* Turn the finished recording into a plan of class c->key (evicting the
 * least recently used one past RT_PLAN_MAX, growing the arena when
 * needed).  Returns 0, STRATA_NOMEM or STRATA_LIMIT (over
 * RT_PLAN_MAX_BYTES); on failure the class stays unplanned. */
int rt_plans_build(struct rt_plans *c, int nvalues);

/* ---- the run context (exec.c runs it, buffers.c keeps its buffers) ----------
 * Only exec.c and buffers.c touch these fields; kernels go through the
 * functions of "what a kernel sees" above.  The invariants of the buffers
 * are stated at the top of buffers.c. */

/* A buffer: from the heap (cap > 0) or a slice of a plan's arena (cap 0,
 * never freed nor pooled). */
struct rt_buf {
	void *p;
	size_t cap;
};

/* How a run draws its buffers: from the pool, from the pool while recording
 * a plan, or from the slots of a plan. */
enum rt_mode { RT_MODE_POOL, RT_MODE_REC, RT_MODE_PLAN };

/* Released buffers kept for reuse, shared by a top context and its children. */
struct rt_pool {
	struct rt_buf *b;
	size_t n, cap;
	size_t bytes;
	/* During the first run of a new plan, what the pool held before it:
	 * drawn from when the pool has nothing, freed after that run. */
	struct rt_buf *old;
	size_t nold, capold;
};

/* A sequence value.  s.items is own[] when the context made the items, or
 * borrowed (a graph input, a captured value, a subgraph input). */
struct rt_seqv {
	struct rt_sequence s;
	struct rt_tensor *own;   /* cap item views */
	struct rt_buf *bufs;     /* the buffer of own[i], i < nbufs */
	int cap;
	int nbufs;
};

/* What a value holds in the current run. */
enum rt_hold { RT_HOLD_EMPTY, RT_HOLD_TENSOR, RT_HOLD_SEQ, RT_HOLD_NONE };

struct rt_child {
	const struct rt_graph *g;
	struct rt_exec *x;
};

struct rt_sym;             /* a symbolic input dimension (exec.c) */

/* IO binding (binding.c; runtime.h's "IO binding").  A top context's
 * binding table, made at its first bind or bound run: per graph input the
 * caller's view, per graph output the caller's region or none.  Binding
 * and rebinding only write these arrays, so they never allocate once the
 * table exists. */
struct rt_bind_out {
	struct rt_tensor t;      /* the caller's region as a view (data: base + offset) */
	int set;                 /* bound; else the context allocates the output */
};
struct rt_binding {
	struct rt_tensor *in;    /* per graph input: the bound view */
	unsigned char *in_set;   /* per graph input: bound */
	struct rt_bind_out *out; /* per graph output */
	struct rt_tensor *view;  /* per graph output: what runtime_bound_output returns */
	int running;             /* a bound run is under way: rt_output consults out[] */
	int done;                /* the last bound run succeeded: view[] is valid */
};

struct rt_exec {
	const struct rt_model *m;
	const struct rt_graph *g;
	struct rt_exec *outer;   /* the context running the enclosing graph, or NULL */
	struct rt_tensor *vals;  /* one view per value */
	struct rt_buf *vbuf;     /* the buffer each value holds in this run */
	unsigned char *hold;     /* RT_HOLD_* per value */
	struct rt_seqv *seqs;    /* per value; used by sequence values */
	struct rt_pool *pool;    /* the top context's */
	struct rt_pool own_pool;
	struct rt_buf *temp;     /* scratch and omitted outputs of the running node */
	size_t ntemp, captemp;
	struct rt_tensor *tmp_out; /* views of omitted outputs, one per output slot */
	int max_nout;
	struct rt_sym *sym;
	int capsym;
	int nsym;                /* symbolic input dims (top context); sizes bound per run */
	int check;               /* compare produced tensors with static shapes */
	struct strata_error *err;
	int failed;              /* rt_fail() was called by the running kernel */
	struct base_arena *strings; /* the top context's */
	struct base_arena own_strings; /* bytes of strings made by kernels, reset per run */
	struct rt_child *kids;   /* contexts of subgraphs, made on first use */
	size_t nkids, capkids;
	struct rt_buf *later;    /* released when the current run of this child ends */
	size_t nlater, caplater;
	struct rt_seqv *later_seq;
	size_t nlater_seq, caplater_seq;
	int *root;               /* per value: the value owning the buffer it views, or -1 */
	int *refs;               /* per value: live views of its buffer */
	int *symidx;             /* per input dim (k * RT_MAX_RANK + d): symbol or -1 */
	int all_tensor;          /* every graph input and output is a tensor */
	 /* Plans: only the top context of runtime_run/runtime_run_args. */
	int planning;
	int mode;                /* RT_MODE_*: how this run draws its buffers */
	int step;                /* the running node (g->nnodes after the last) */
	struct rt_plan *plan;    /* RT_MODE_PLAN */
	size_t tnext;            /* RT_MODE_PLAN: next scratch slot */
	struct rt_plans pc;      /* the plans, the arena and the recording (plan.c) */
	struct rt_binding *bind; /* top context: its IO binding, NULL until first used */
	struct rt_prof *prof;    /* top context: its profile (profile.c), NULL when off */
};

/* buffers.c: where the buffers of a run context come from and go back to.
 * Functions returning int return 0, STRATA_NOMEM or STRATA_LIMIT. */
/* A buffer of at least n bytes into *b: the smallest pooled one that fits,
 * else a new one. */
int rt_pool_get(struct rt_exec *x, size_t n, struct rt_buf *b);
/* A buffer that lives until the running node returns (its planned scratch
 * slot when it fits), or NULL. */
void *rt_temp_get(struct rt_exec *x, size_t n);
/* Give back the running node's scratch buffers. */
void rt_temp_release(struct rt_exec *x);
/* The buffer of value v (bytes long) into *b: place when it is not NULL
 * (caller memory bound to graph output v: cap 0, never freed, pooled or
 * given to another value), else its planned slot when it fits, else from
 * the pool.  A recording run notes the request either way, so that one
 * plan serves the runs of its class with and without the binding. */
int rt_value_get(struct rt_exec *x, int v, size_t bytes, void *place, struct rt_buf *b);
/* Value v no longer holds anything of its own; a buffer other values still
 * view stays until the last view goes. */
void rt_value_release(struct rt_exec *x, int v);
/* Value v becomes a view of the buffer behind value s (counted, so that
 * the buffer outlives every view; none when s views memory x does not own). */
void rt_value_view(struct rt_exec *x, int v, int s);
/* Room for one more owned item in sv. */
int rt_seqv_reserve(struct rt_seqv *sv);
/* Give back everything x and its children hold (between top-level runs). */
void rt_exec_release_all(struct rt_exec *x);
/* Child context c: move what its values still hold (the previous run's
 * outputs) to its later lists, which the next rt_exec_release_later gives
 * back; the new run's inputs may view them. */
int rt_exec_defer(struct rt_exec *c);
void rt_exec_release_later(struct rt_exec *x);
/* Before a top-level run (inputs bound): pick how it draws its buffers. */
void rt_exec_mode_start(struct rt_exec *x);
/* After it (rc: its result): turn a successful recording into a plan, end
 * a plan's first run, return to the pool. */
void rt_exec_mode_end(struct rt_exec *x, int rc);
/* Debug builds (STRATA_DEBUG): assert the invariants of buffers.c on x:
 * views name owners that still hold their buffers, view counts match,
 * no scratch outlives its node; ended: a run just ended, so every value
 * but the graph's inputs, outputs and constants has been released.  Does
 * nothing in other builds. */
void rt_exec_check(const struct rt_exec *x, int ended);
/* Free every buffer x holds or keeps (its own pool too, for a top context);
 * the per-value arrays and the binding table stay. */
void rt_exec_buffers_free(struct rt_exec *x);

/* ---- IO binding (runtime.h) ---------------------------------------------------
 * binding.c keeps a context's table (struct rt_binding above) and serves
 * the public calls; exec.c runs with it. */

/* ---- profiling (runtime.h) ---------------------------------------------------
 * profile.c keeps a top context's table; exec.c times each node into it. */
struct rt_prof {
	double own;              /* seconds added so far: a node's own time is its
	                            elapsed time less what its subgraphs added */
	int nrows;
	struct rt_op_time rows[RUNTIME_PROFILE_ROWS + 1]; /* the last: "(other)" */
};
/* Add seconds of a node of type op to p. */
void rt_prof_add(struct rt_prof *p, const char *op, double seconds);

/* The public face of a top run context (model.c makes and pools them). */
struct rt_ctx {
	struct rt_exec x;
};
/* exec.c: set up x (zeroed by the caller) as a top context running m's
 * graph with static memory plans.  Returns 0 or STRATA_NOMEM; a partial
 * setup is undone by rt_exec_fini. */
int rt_exec_init(struct rt_exec *x, const struct rt_model *m);
/* exec.c: free everything x holds (its children and buffers too), not its
 * binding table (rt_bind_free). */
void rt_exec_fini(struct rt_exec *x);
/* exec.c: runtime_run on x.  While x->bind->running, an output bound in
 * x->bind->out[] is written in the caller's region (in place when its
 * kernel asks for exactly the bound type and shape, else copied there at
 * the end); out[k] then still views where the run produced it. */
int rt_run_tensors(struct rt_exec *x, const struct rt_tensor *in, struct rt_tensor *out,
                   struct strata_error *err);
/* exec.c: what a run checks of tensor t given for input k (or bound to
 * output k), short of the agreement of symbolic dimensions across inputs:
 * element type, rank, fixed dimensions, size, data.  Returns 0 or
 * STRATA_INVALID_ARGUMENT with runtime_run's message ("input \"x\":
 * expected float [batch,4], given float [1,3]"). */
int rt_check_input(struct rt_exec *x, int k, const struct rt_tensor *t, struct strata_error *err);
int rt_check_output(struct rt_exec *x, int k, const struct rt_tensor *t, struct strata_error *err);
/* binding.c: forget every binding of x (the table stays, so that binding
 * again allocates nothing).  A context leaving its caller must forget
 * them: runtime_ctx_free has to call it before retiring the context into
 * the session buffer pool, whose next taker would otherwise read and write
 * the previous owner's memory. */
void rt_bind_reset(struct rt_exec *x);
/* binding.c: free x's binding table (none: nothing to do). */
void rt_bind_free(struct rt_exec *x);

#endif
