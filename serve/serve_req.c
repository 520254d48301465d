/*
 * serve_req.c: what HTTP/1.1 and HTTP/2 requests share in `strata serve`.
 *
 * Each protocol reads a request into a struct srv_job (serve.c through
 * libmicrohttpd, serve_h2.c through libnghttp2) and then calls
 * srv_job_submit(), which decides the same way for both: a body that could
 * not be held or passed --max-body is answered with 500 or 413, health and
 * metrics are answered at once on the I/O thread, and everything else goes
 * into the bounded queue, or is refused with 503 (a search) or 429 (a
 * document operation) when the queue is full.  The workers take jobs in
 * order, run srv_api_handle() and give each back through its answered()
 * callback; the protocol sends the answer from its own thread.
 *
 * Invariant: s->m.open counts the jobs begun and not yet cleared, so the
 * SIGTERM drain waits for every request of either protocol.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "serve_int.h"

#define MAX_PATH_LEN 4096

static int method_of(const char *m)
{
	return !strcmp(m, "GET") ? SRV_GET : !strcmp(m, "POST") ? SRV_POST
	     : !strcmp(m, "PUT") ? SRV_PUT : !strcmp(m, "DELETE") ? SRV_DELETE : SRV_OTHER;
}

/* One more (d = 1) or one less (-1) request open. */
static void open_count(struct srv *s, int d)
{
	pthread_mutex_lock(&s->m.lock);
	s->m.open += d;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->m.lock);
}

int srv_job_begin(struct srv *s, struct srv_job *j, const char *method, const char *path,
                  size_t path_len)
{
	j->rq.method = method_of(method);
	j->rq.arrived = tool_now();
	j->rq.path = tool_strndup(path, path_len < MAX_PATH_LEN ? path_len : MAX_PATH_LEN);
	j->rq.args = json_object();
	if (!j->rq.path || !j->rq.args)
		return -1;
	open_count(s, 1);
	return 0;
}

void srv_job_append(struct srv *s, struct srv_job *j, const char *data, size_t n)
{
	if (j->too_big)
		return;
	if (j->rq.len + n > s->max_body) {
		j->too_big = 1;
		return;
	}
	size_t need = j->rq.len + n + 1;
	if (need > j->cap) {
		size_t cap = j->cap ? j->cap : 4096;
		while (cap < need)
			cap *= 2;
		char *b = tool_realloc(j->rq.body, cap);
		if (!b) {
			j->too_big = j->nomem = 1;
			return;
		}
		j->rq.body = b;
		j->cap = cap;
	}
	memcpy(j->rq.body + j->rq.len, data, n);
	j->rq.len += n;
	j->rq.body[j->rq.len] = 0;
}

void srv_job_too_large(struct srv *s, struct srv_job *j, unsigned long long len)
{
	char msg[128];
	if (len)
		snprintf(msg, sizeof msg, "the request body of %llu bytes is over the limit of %zu",
		         len, s->max_body);
	else
		snprintf(msg, sizeof msg, "the request body is over the limit of %zu bytes",
		         s->max_body);
	srv_api_reject(&j->rq, 413, msg);
}

int srv_job_answer_now(struct srv *s, struct srv_job *j)
{
	if (j->nomem) {
		srv_api_reject(&j->rq, 500, "out of memory reading the request body");
		return 1;
	}
	if (j->too_big) {
		srv_job_too_large(s, j, 0);
		return 1;
	}
	if (srv_api_inline(j->rq.path)) {
		srv_api_handle(s, &j->rq);
		return 1;
	}
	return 0;
}

int srv_job_queue(struct srv *s, struct srv_job *j)
{
	pthread_mutex_lock(&s->lock);
	if (s->nqueued >= s->maxqueue) {
		pthread_mutex_unlock(&s->lock);
		pthread_mutex_lock(&s->m.lock);
		s->m.rejected++;
		pthread_mutex_unlock(&s->m.lock);
		int doc = srv_api_is_document(j->rq.path);
		srv_api_reject(&j->rq, doc ? 429 : 503,
		               "overloaded: the request queue is full; retry later");
		return 0;
	}
	j->next = NULL;
	if (s->tail)
		s->tail->next = j;
	else
		s->head = j;
	s->tail = j;
	s->nqueued++;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 1;
}

/* Free rq's answer, from whichever allocator made it. */
static void resp_free(struct srv_req *rq)
{
	if (rq->resp_lib)
		strata_free(rq->resp);
	else
		tool_free(rq->resp);
	rq->resp = NULL;
	rq->resp_lib = 0;
}

void srv_req_answer(struct srv_req *rq, int status, char *resp, int lib)
{
	resp_free(rq);
	if (!resp) {
		status = 500;
		resp = tool_strdup("{\"message\": \"out of memory\"}");
		lib = 0;
	}
	rq->status = status;
	rq->resp = resp;
	rq->resp_lib = lib;
}

void srv_job_clear(struct srv *s, struct srv_job *j)
{
	json_decref(j->rq.args);
	tool_free(j->rq.path);
	tool_free(j->rq.body);
	resp_free(&j->rq);
	int counted = j->rq.path && j->rq.args;
	memset(j, 0, sizeof *j);
	if (counted)
		open_count(s, -1);
}

void *srv_worker(void *arg)
{
	struct srv *s = arg;
	for (;;) {
		pthread_mutex_lock(&s->lock);
		while (!s->head && !s->stopping)
			pthread_cond_wait(&s->cond, &s->lock);
		struct srv_job *j = s->head;
		if (!j) {
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		s->head = j->next;
		if (!s->head)
			s->tail = NULL;
		s->nqueued--;
		pthread_mutex_unlock(&s->lock);
		srv_api_handle(s, &j->rq);
		j->answered(j);
	}
}

void srv_stop_workers(struct srv *s)
{
	pthread_mutex_lock(&s->lock);
	s->stopping = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

long srv_wait_idle(struct srv *s, long seconds)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += seconds;
	pthread_mutex_lock(&s->m.lock);
	while (s->m.open > 0 && pthread_cond_timedwait(&s->idle, &s->m.lock, &until) == 0)
		;
	long left = s->m.open;
	pthread_mutex_unlock(&s->m.lock);
	return left;
}
