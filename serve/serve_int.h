/*
 * serve_int.h: the parts of `strata serve` (a program, like the CLI; not the
 * library).
 *
 *   serve.c      the program: options, the listening socket, HTTP/1.1 on
 *                libmicrohttpd, SIGTERM drain
 *   serve_h2.c   the front door: accepts each connection, tells HTTP/2
 *                (its preface) from HTTP/1.1, hands HTTP/1.1 to
 *                libmicrohttpd and serves HTTP/2 itself on libnghttp2
 *   serve_req.c  what both protocols share: a request's body and limits,
 *                the choice between answering at once and queueing, the
 *                bounded queue and its worker threads
 *   serve_api.c  what a request does: /search/, /document/v1/, /state/v1/
 *                and /metrics/v2/values, each answered as Vespa answers it
 *   serve_modeleval.c  /model-evaluation/v1/, Vespa's stateless model
 *                evaluation, on the library's strata_modeleval_* calls
 *
 * Data flow: an I/O thread (libmicrohttpd's for HTTP/1.1, the front door's
 * for HTTP/2) reads a request whole (path, query parameters, body up to
 * --max-body) into a struct srv_job.  Health and metrics are answered
 * there; everything else goes into the bounded queue (full: 503 for
 * searches, 429 for documents) until a worker has run srv_api_handle() on
 * it and called the job's answered() to give it back to its protocol.
 * Workers run queries at once; writes take srv->write_lock, the store's one
 * writer.
 *
 * Like the CLI, the server uses the library through strata.h alone, and
 * the programs' helpers of cli/tool.h (memory, the clock).
 */
#ifndef SERVE_INT_H
#define SERVE_INT_H

#include <pthread.h>
#include <sys/socket.h>
#include <stddef.h>

#include <jansson.h>

#include "../include/strata.h"
#include "../cli/tool.h"

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

struct srv_job;

struct srv {
	struct strata *db;
	pthread_mutex_t write_lock; /* held by the one thread writing the store */
	struct srv_metrics m;
	double started;             /* tool_now() at start */
	size_t max_body;            /* --max-body */
	/* the bounded queue of requests waiting for a worker */
	pthread_mutex_t lock;
	pthread_cond_t cond;        /* work queued, or stopping */
	pthread_cond_t idle;        /* a request ended (with m.lock: m.open counts them) */
	struct srv_job *head, *tail;
	int nqueued, maxqueue;
	int stopping;
};

/* One HTTP request, as read from the connection. */
struct srv_req {
	int method;
	char *path;         /* decoded path, e.g. "/search/" */
	json_t *args;       /* query parameters: name -> string */
	char *body;         /* NUL-terminated, len bytes (NULL when empty) */
	size_t len;
	double arrived;     /* tool_now() when the request began */
	/* the answer */
	int status;
	char *resp;         /* JSON text, freed by srv_job_clear() */
	int resp_lib;       /* 1: resp is the library's (strata_free), 0: the program's (tool_free) */
};

/* A request on its way through the server, embedded first in each
 * protocol's own request (HTTP/1.1's connection, HTTP/2's stream). */
struct srv_job {
	struct srv_req rq;
	size_t cap;          /* of rq.body */
	int too_big;         /* the body passed max_body (the rest is dropped) */
	int nomem;           /* the body could not be held */
	/* Called on the worker thread once rq holds the answer; from then on
	 * the job belongs to its protocol again. */
	void (*answered)(struct srv_job *j);
	struct srv_job *next; /* in the queue */
};

/* ---- serve_req.c ---- */

/* Start j (zeroed by the caller): method from its name ("GET"...), path
 * (copied, at most 4096 bytes), an empty argument object, the arrival
 * time; counts one more request open.  0, or -1 when out of memory (then
 * nothing is counted and srv_job_clear() frees what was made). */
int srv_job_begin(struct srv *s, struct srv_job *j, const char *method, const char *path,
                  size_t path_len);

/* Append n bytes of body; past s->max_body (or out of memory) the rest is
 * dropped and j->too_big (j->nomem) set. */
void srv_job_append(struct srv *s, struct srv_job *j, const char *data, size_t n);

/* The request is read whole: answer it at once on this thread and return 1
 * when it is a bad body (500, 413), health or metrics; else 0. */
int srv_job_answer_now(struct srv *s, struct srv_job *j);

/* Queue j for a worker, which calls j->answered, and return 1; or, the
 * queue being full, set the overload answer (503 or 429) and return 0. */
int srv_job_queue(struct srv *s, struct srv_job *j);

/* Set the 413 answer for a body of declared length len (over max_body). */
void srv_job_too_large(struct srv *s, struct srv_job *j, unsigned long long len);

/* Free what j holds (not j itself); counts one request less open when
 * srv_job_begin succeeded on it. */
void srv_job_clear(struct srv *s, struct srv_job *j);

/* The worker threads' loop (arg: the struct srv); returns once stopping is
 * set and the queue is empty. */
void *srv_worker(void *arg);

/* Set s->stopping and wake the workers. */
void srv_stop_workers(struct srv *s);

/* Wait (at most seconds) until no request is open; returns how many still
 * are. */
long srv_wait_idle(struct srv *s, long seconds);

/* ---- serve_h2.c ---- */

struct srv_front;

/* Hands an HTTP/1.1 connection (fd, its peer address) over; the callee
 * owns fd from then on, also on failure. */
typedef void (*srv_http1_fn)(void *arg, int fd, const struct sockaddr *peer, socklen_t len);

/* Start the front door's thread on the listening socket lfd (which it then
 * owns): each connection accepted is read until its first bytes tell
 * HTTP/2's preface from anything else; the rest go to http1(arg, ...).  A
 * connection silent for client_timeout seconds is closed.  0, or an errno
 * / -1 (out of memory) with nothing started and lfd closed. */
int srv_front_start(struct srv *s, int lfd, long client_timeout, srv_http1_fn http1, void *arg,
                    struct srv_front **out);

/* Stop accepting (the listening socket closes) and send GOAWAY on every
 * HTTP/2 connection: their streams in flight finish, then they close. */
void srv_front_quiesce(struct srv_front *f);

/* Close every connection left, stop the thread and free f.  Call after the
 * workers are stopped. */
void srv_front_free(struct srv_front *f);

/* ---- serve_modeleval.c ---- */

/* Answer rq, whose path is /model-evaluation or under it: Vespa's stateless
 * model evaluation API (strata_modeleval_*).  Safe on many threads. */
void srv_modeleval(struct srv *s, struct srv_req *rq);

/* ---- serve_api.c ---- */

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

/* The answer of rq: status, and the JSON text resp, which rq takes; lib: 1
 * when resp came from the library (strata_free), 0 from tool.h's
 * allocator.  resp NULL (out of memory) sends a fixed "out of memory"
 * text with status 500. */
void srv_req_answer(struct srv_req *rq, int status, char *resp, int lib);

#endif
