/*
 * feed_ahead.c: a feed's operations parsed on a second thread, ahead of the
 * writer.
 *
 * The writer (the one thread that may write the store) needs a feed's
 * operations as JSON values, in order.  So a parser thread walks the
 * operations (the caller's span function says where each lies) and parses
 * them into a ring of AHEAD_SLOTS, with the text of their fields tokenized
 * (the caller's prep function); the writer takes them from it in the
 * same order, and says when it is done with one.  When the ring is full the
 * parser waits until half of it is free again; when it is empty the writer
 * waits for the next one.
 *
 * A value stays in its slot after the writer took it, and the parser frees
 * it when it comes round to that slot again (and reuses the slot's
 * tokens' buffers): every JSON value is made and freed on the parser's
 * thread, so the two threads never give memory to
 * each other (a block freed by another thread than the one that made it
 * costs the C library locks and returned pages).  Nothing else is shared:
 * the span function and its state belong to the parser until
 * eng_ahead_next() has said the end came or eng_ahead_stop() returned.
 */
#include <pthread.h>
#include <string.h>

#include "engine_int.h"

#define AHEAD_SLOTS 256

struct eng_ahead {
	eng_span_fn *next;
	eng_prep_fn *prep;
	void *ud;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t room, ready;   /* a slot came free; an operation came */
	size_t head, tail;            /* operations done with, and parsed, so far */
	int taken;                    /* the writer holds the operation at head */
	int parser_waits, writer_waits;
	int done;                     /* the parser found the end */
	int stop;                     /* the writer wants no more */
	struct eng_feed_op slot[AHEAD_SLOTS];
};

static void *parser(void *arg)
{
	struct eng_ahead *a = arg;
	for (;;) {
		pthread_mutex_lock(&a->mu);
		while (!a->stop && a->tail - a->head == AHEAD_SLOTS) {
			a->parser_waits = 1;
			pthread_cond_wait(&a->room, &a->mu);
		}
		int stop = a->stop;
		pthread_mutex_unlock(&a->mu);
		/* The slot at tail is free: the writer is done with what it held. */
		struct eng_feed_op *op = &a->slot[a->tail % AHEAD_SLOTS];
		json_decref(op->op);
		op->op = NULL;
		op->npre = 0;
		int more = !stop && a->next(a->ud, &op->text, &op->len, &op->line);
		if (more) {
			op->op = eng_json_parse(op->text, op->len, 0, &op->je, &op->oom);
			if (op->op && a->prep)
				a->prep(a->ud, op);
		}
		pthread_mutex_lock(&a->mu);
		if (more)
			a->tail++;
		else
			a->done = 1;
		if (a->writer_waits) {
			a->writer_waits = 0;
			pthread_cond_signal(&a->ready);
		}
		pthread_mutex_unlock(&a->mu);
		if (!more)
			return NULL;
	}
}

int eng_ahead_start(struct eng_ahead **out, eng_span_fn *next, eng_prep_fn *prep, void *ud,
                    struct strata_error *err)
{
	struct eng_ahead *a = base_calloc(1, sizeof *a);
	*out = NULL;
	if (!a)
		return base_nomem(err, "the feed's parser");
	a->next = next;
	a->prep = prep;
	a->ud = ud;
	int ok = pthread_mutex_init(&a->mu, NULL) == 0;
	int room = ok && pthread_cond_init(&a->room, NULL) == 0;
	int ready = room && pthread_cond_init(&a->ready, NULL) == 0;
	if (ready && pthread_create(&a->thread, NULL, parser, a) == 0) {
		*out = a;
		return 0;
	}
	if (ready)
		pthread_cond_destroy(&a->ready);
	if (room)
		pthread_cond_destroy(&a->room);
	if (ok)
		pthread_mutex_destroy(&a->mu);
	base_free(a, sizeof *a);
	return base_err(err, STRATA_ERROR, "the feed's parser could not be started");
}

const struct eng_feed_op *eng_ahead_next(struct eng_ahead *a)
{
	pthread_mutex_lock(&a->mu);
	if (a->taken) { /* done with the one before */
		a->taken = 0;
		a->head++;
		/* A parser that found the ring full goes on once half of it is
		 * free, so that the two threads do not wake each other for every
		 * operation. */
		if (a->parser_waits && a->tail - a->head <= AHEAD_SLOTS / 2) {
			a->parser_waits = 0;
			pthread_cond_signal(&a->room);
		}
	}
	while (a->head == a->tail && !a->done) {
		a->writer_waits = 1;
		pthread_cond_wait(&a->ready, &a->mu);
	}
	const struct eng_feed_op *op = NULL;
	if (a->head != a->tail) {
		op = &a->slot[a->head % AHEAD_SLOTS];
		a->taken = 1;
	}
	pthread_mutex_unlock(&a->mu);
	return op;
}

void eng_ahead_stop(struct eng_ahead *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	a->parser_waits = 0;
	pthread_cond_signal(&a->room);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->thread, NULL);
	for (size_t i = 0; i < AHEAD_SLOTS; i++) {
		json_decref(a->slot[i].op);
		for (int k = 0; k < ENG_FEED_PRE; k++)
			store_pretext_free(a->slot[i].pre[k]);
	}
	pthread_cond_destroy(&a->room);
	pthread_cond_destroy(&a->ready);
	pthread_mutex_destroy(&a->mu);
	base_free(a, sizeof *a);
}
