/*
 * searchpool.c: the worker threads a handle keeps for splitting a search's
 * first phase (strata_options.search_threads; firstphase.c uses them).
 *
 * One search holds the pool at a time: eng_pool_run takes it with a
 * trylock, and a search that finds it taken runs every part itself, on its
 * own thread, one after the other.  Parts never depend on which thread runs
 * them, so the results are the same either way; only the time differs.
 * The workers sleep on a condition variable between runs: a run bumps the
 * generation, each worker runs its part (worker w the part w + 1, when
 * there is one) and counts itself done; the caller runs part 0 and waits
 * for the count.
 */
#include <pthread.h>

#include "engine_int.h"

struct eng_pool {
	pthread_mutex_t hold;       /* held by the search using the workers */
	pthread_mutex_t mu;         /* guards what follows */
	pthread_cond_t go, done;
	unsigned long gen;          /* bumped by each run */
	int nparts, ndone, quit;
	eng_part_fn *fn;
	void *ud;
	int nworkers, started;
	pthread_t *threads;
};

struct worker {
	struct eng_pool *p;
	int part;
};

static void *work(void *arg)
{
	struct eng_pool *p = ((struct worker *)arg)->p;
	int part = ((struct worker *)arg)->part;
	base_free(arg, sizeof(struct worker));
	unsigned long seen = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->gen == seen && !p->quit)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->gen;
		if (part < p->nparts) {
			eng_part_fn *fn = p->fn;
			void *ud = p->ud;
			pthread_mutex_unlock(&p->mu);
			fn(ud, part);
			pthread_mutex_lock(&p->mu);
		}
		if (++p->ndone == p->nworkers)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int eng_pool_new(int nworkers, struct eng_pool **out, struct strata_error *err)
{
	*out = NULL;
	struct eng_pool *p = base_calloc(1, sizeof *p);
	if (!p)
		return base_nomem(err, "the search threads");
	p->threads = base_calloc((size_t)nworkers, sizeof *p->threads);
	if (!p->threads) {
		base_free(p, sizeof *p);
		return base_nomem(err, "the search threads");
	}
	p->nworkers = nworkers;
	pthread_mutex_init(&p->hold, NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	for (int w = 0; w < nworkers; w++) {
		struct worker *a = base_alloc(sizeof *a);
		if (a)
			*a = (struct worker){ p, w + 1 };
		int rc = a ? pthread_create(&p->threads[w], NULL, work, a) : STRATA_NOMEM;
		if (rc) {
			base_free(a, sizeof *a);
			eng_pool_free(p);
			return rc == STRATA_NOMEM ? base_nomem(err, "the search threads")
			                          : base_err(err, rc, "starting a search thread");
		}
		p->started++;
	}
	*out = p;
	return 0;
}

void eng_pool_free(struct eng_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int w = 0; w < p->started; w++)
		pthread_join(p->threads[w], NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->go);
	pthread_mutex_destroy(&p->mu);
	pthread_mutex_destroy(&p->hold);
	base_free(p->threads, (size_t)p->nworkers * sizeof *p->threads);
	base_free(p, sizeof *p);
}

int eng_pool_size(const struct eng_pool *p)
{
	return p ? p->nworkers + 1 : 1;
}

void eng_pool_run(struct eng_pool *p, int nparts, eng_part_fn *fn, void *ud)
{
	if (!p || nparts < 2 || pthread_mutex_trylock(&p->hold) != 0) {
		for (int i = 0; i < nparts; i++)
			fn(ud, i);
		return;
	}
	BASE_DEBUG_ASSERT(nparts <= p->nworkers + 1);
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->ud = ud;
	p->nparts = nparts;
	p->ndone = 0;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	fn(ud, 0);
	pthread_mutex_lock(&p->mu);
	while (p->ndone < p->nworkers)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&p->hold);
}
