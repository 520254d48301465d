/*
 * serve_int.h: the parts of `strata serve` (a program, like the CLI; not the
 * library).
 *
 *   serve.c      the program: options, the HTTP daemon (libmicrohttpd), the
 *                bounded request queue and its worker threads, SIGTERM drain
 *   serve_api.c  what a request does: /search/, /document/v1/, /state/v1/
 *                and /metrics/v2/values, each answered as Vespa answers it
 *
 * Data flow: libmicrohttpd's threads read a request whole (path, query
 * parameters, body up to --max-body) into a struct srv_req.  Health and
 * metrics are answered there; everything else goes into the bounded queue
 * (full: 503 for searches, 429 for documents) and its connection is
 * suspended until a worker has run srv_api_handle() on it.  Workers run
 * queries at once; writes take srv->write_lock, the store's one writer.
 */
#ifndef SERVE_INT_H
#define SERVE_INT_H

#include <pthread.h>
#include <stddef.h>

#include <jansson.h>

#include "engine_int.h"

enum srv_method { SRV_GET = 1, SRV_POST, SRV_PUT, SRV_DELETE, SRV_OTHER };

/* Latency buckets of the query histogram: bucket i holds latencies below
 * bound_us[i] microseconds (a factor 1.25 apart, from 10 us). */
#define SRV_BUCKETS 64

/* Counters since the start, under lock. */
struct srv_metrics {
	pthread_mutex_t lock;
	double bound_us[SRV_BUCKETS]; /* set by srv_metrics_init, then constant */
	unsigned long long queries, query_errors, timeouts, rejected;
	unsigned long long puts, updates, removes, gets, visits, feed_errors;
	unsigned long long not_met; /* writes left out by their test-and-set condition (412) */
	long open;                /* requests begun and not yet ended */
	unsigned long long lat[SRV_BUCKETS];
	double lat_sum, lat_max; /* seconds */
};

struct srv {
	struct strata *db;
	pthread_mutex_t write_lock; /* held by the one thread writing the store */
	struct srv_metrics m;
	double started;             /* base_now() at start */
};

/* One HTTP request, as read from the connection. */
struct srv_req {
	int method;
	char *path;         /* decoded path, e.g. "/search/" */
	json_t *args;       /* query parameters: name -> string */
	char *body;         /* NUL-terminated, len bytes (NULL when empty) */
	size_t len;
	double arrived;     /* base_now() when the request began */
	/* the answer */
	int status;
	char *resp;         /* JSON text (base_strfree) */
};

/* Whether path is answered at once on the I/O thread (health, metrics)
 * rather than queued for a worker. */
int srv_api_inline(const char *path);

/* Whether path is a document operation (429 when the queue is full) rather
 * than a search (503). */
int srv_api_is_document(const char *path);

/* Answer rq: sets rq->status and rq->resp (always a JSON text, also for
 * errors, in the shape Vespa uses for that path).  Safe on many threads at
 * once. */
void srv_api_handle(struct srv *s, struct srv_req *rq);

/* The error answer of a full queue or an oversized body for rq's path. */
void srv_api_reject(struct srv_req *rq, int status, const char *msg);

/* Metrics. */
void srv_metrics_init(struct srv_metrics *m);
void srv_metrics_query(struct srv_metrics *m, double seconds, int ok);

/* strata serve APP [options] (serve.c). */
int eng_cli_serve(int argc, char **argv);

#endif
