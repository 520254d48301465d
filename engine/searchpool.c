/*
 * searchpool.c: the worker threads a handle keeps for splitting a search's
 * first phase (strata_options.search_threads; firstphase.c uses them).
 *
 * One search holds the pool at a time: eng_pool_run takes it with a
 * trylock, and a search that finds it taken runs alone, on its own thread.
 * The workers sleep on a condition variable between runs.  A run opens:
 * it bumps the generation and wakes them, and each worker that wakes while
 * the run is still open joins it under the next free slot and calls fn
 * with it; the caller calls fn with slot 0.  When the caller's call
 * returns the run closes, and the caller waits only for the workers that
 * joined.  fn takes its work from a shared queue, so the work gets done
 * whoever joins: a worker that the machine does not schedule in time (all
 * its cores busy) costs nothing but its slot, instead of holding the
 * search up until it runs.
 */
#include <pthread.h>

#include "engine_int.h"

struct eng_pool {
	pthread_mutex_t hold;       /* held by the search using the workers */
	pthread_mutex_t mu;         /* guards what follows */
	pthread_cond_t go, done;
	unsigned long gen;          /* bumped by each run */
	int open;                   /* workers may join the current run */
	int nslots, joined;         /* slots of the run; taken by workers so far */
	int running;                /* workers in fn */
	int quit;
	eng_part_fn *fn;
	void *ud;
	int nworkers, started;
	pthread_t *threads;
};

static void *work(void *arg)
{
	struct eng_pool *p = arg;
	unsigned long seen = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->gen == seen && !p->quit)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->gen;
		if (!p->open || p->joined + 1 >= p->nslots)
			continue; /* too late, or no slot left */
		int slot = ++p->joined;
		eng_part_fn *fn = p->fn;
		void *ud = p->ud;
		p->running++;
		pthread_mutex_unlock(&p->mu);
		fn(ud, slot);
		pthread_mutex_lock(&p->mu);
		if (--p->running == 0 && !p->open)
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
		int rc = pthread_create(&p->threads[w], NULL, work, p);
		if (rc) {
			eng_pool_free(p);
			return base_err(err, rc, "starting a search thread");
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

int eng_pool_run(struct eng_pool *p, int nslots, eng_part_fn *fn, void *ud)
{
	if (!p || nslots < 2 || pthread_mutex_trylock(&p->hold) != 0) {
		fn(ud, 0);
		return 1;
	}
	BASE_DEBUG_ASSERT(nslots <= p->nworkers + 1);
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->ud = ud;
	p->nslots = nslots;
	p->joined = 0;
	p->running = 0;
	p->open = 1;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	fn(ud, 0);
	pthread_mutex_lock(&p->mu);
	p->open = 0;
	int joined = p->joined;
	while (p->running > 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&p->hold);
	return joined + 1;
}
