/*
 * serve.c: `strata serve APP`, the HTTP server, on libmicrohttpd.
 *
 * libmicrohttpd's own threads (--io-threads) read requests and write
 * answers; they never run a query.  A request read whole is answered at
 * once when it is health or metrics, and otherwise goes into a bounded
 * queue (--queue) for the --threads workers: when the queue is full the
 * client gets 503 (a search) or 429 (a document operation) at once.  While
 * a worker has it, the connection is suspended, and the worker resumes it
 * with the answer.  A body over --max-body is refused with 413 as soon as
 * its length is known; a client silent for --client-timeout seconds is
 * disconnected.
 *
 * Queries run on all the workers at once; writes take the one writer lock
 * (the store has one writer).  A document operation is committed before its
 * 200 is sent, so an acknowledged write survives kill -9.
 *
 * SIGTERM or SIGINT: the listening socket closes, the requests being read,
 * queued or run are finished and answered (for at most --drain seconds),
 * then the daemon stops and the store is closed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "serve_int.h"

#define MAX_PATH_LEN 4096

static const char *serve_usage =
	"usage: strata serve APP [--port N] [--threads N] [--queue N] [--data DIR]\n"
	"                        [--max-body BYTES] [--client-timeout S] [--drain S]\n"
	"                        [--io-threads N] [--bind ADDR]\n"
	"  Serve the application over HTTP: /search/ (GET and POST), /document/v1/,\n"
	"  /state/v1/health and /metrics/v2/values, as Vespa does.\n"
	"  --port N            port to listen on (default 8080; 0: any free port)\n"
	"  --threads N         threads running requests (default: the number of CPUs)\n"
	"  --queue N           requests waiting for a thread before 503/429 (default 64)\n"
	"  --max-body BYTES    the largest request body, else 413 (default 64 MiB)\n"
	"  --client-timeout S  disconnect a client silent this long (default 30)\n"
	"  --drain S           on SIGTERM, wait this long for requests in flight (default 30)\n"
	"  --io-threads N      threads reading and writing connections (default 2)\n"
	"  --bind ADDR         the IPv4 address to listen on (default 127.0.0.1; 0.0.0.0: all)\n"
	"  Once listening, one line on stderr: \"strata: listening on http://ADDR:PORT\".\n";

struct job {
	struct srv_req rq;
	struct MHD_Connection *conn;
	size_t cap;      /* of rq.body */
	int too_big;
	int nomem;       /* the body could not be held */
	int queued;      /* handed to the workers */
	int done;        /* the answer is in rq */
	struct job *next;
};

struct server {
	struct srv s;
	struct MHD_Daemon *d;
	pthread_mutex_t lock;
	pthread_cond_t cond;  /* work queued, or stopping */
	pthread_cond_t idle;  /* a request ended (with s.m.lock: s.m.open counts them) */
	struct job *head, *tail;
	int nqueued, maxqueue;
	int stopping;
	size_t max_body;
};

/* ---- requests ---------------------------------------------------------------------------- */

static void job_free(struct job *j)
{
	json_decref(j->rq.args);
	base_strfree(j->rq.path);
	if (j->rq.body)
		base_free(j->rq.body, j->cap);
	base_strfree(j->rq.resp);
	base_free(j, sizeof *j);
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
	json_t *args = cls;
	(void)kind;
	json_object_set_new(args, key, json_string(value ? value : ""));
	return MHD_YES;
}

static int method_of(const char *m)
{
	return !strcmp(m, "GET") ? SRV_GET : !strcmp(m, "POST") ? SRV_POST
	     : !strcmp(m, "PUT") ? SRV_PUT : !strcmp(m, "DELETE") ? SRV_DELETE : SRV_OTHER;
}

/* Send rq's answer as JSON.  The answer is not copied: rq lives until
 * on_completed, when the connection is done sending it. */
static enum MHD_Result send_answer(struct MHD_Connection *c, const struct srv_req *rq)
{
	const char *body = rq->resp ? rq->resp : "{}";
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
	                                                         MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "application/json;charset=utf-8");
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)rq->status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reject(struct MHD_Connection *c, struct job *j, int status, const char *msg)
{
	srv_api_reject(&j->rq, status, msg);
	return send_answer(c, &j->rq);
}

/* Append upload data to the body; past max_body the rest is dropped. */
static void append_body(struct server *sv, struct job *j, const char *data, size_t n)
{
	if (j->too_big)
		return;
	if (j->rq.len + n > sv->max_body) {
		j->too_big = 1;
		return;
	}
	size_t need = j->rq.len + n + 1;
	if (need > j->cap) {
		size_t cap = j->cap ? j->cap : 4096;
		while (cap < need)
			cap *= 2;
		char *b = base_realloc(j->rq.body, j->cap, cap);
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

/* One more (d = 1) or one less (-1) request open. */
static void open_count(struct server *sv, int d)
{
	pthread_mutex_lock(&sv->s.m.lock);
	sv->s.m.open += d;
	pthread_cond_broadcast(&sv->idle);
	pthread_mutex_unlock(&sv->s.m.lock);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **ctx)
{
	struct server *sv = cls;
	struct job *j = *ctx;
	(void)version;
	if (!j) {
		j = base_calloc(1, sizeof *j);
		if (!j)
			return MHD_NO;
		j->conn = c;
		j->rq.method = method_of(method);
		j->rq.arrived = base_now();
		j->rq.path = base_strndup(url, strnlen(url, MAX_PATH_LEN));
		j->rq.args = json_object();
		if (!j->rq.path || !j->rq.args) {
			job_free(j);
			return MHD_NO;
		}
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, j->rq.args);
		*ctx = j;
		open_count(sv, 1);
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		                                             MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > sv->max_body) {
			char msg[128];
			snprintf(msg, sizeof msg, "the request body of %s bytes is over the limit of %zu",
			         cl, sv->max_body);
			return reject(c, j, 413, msg);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		append_body(sv, j, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (j->done)
		return send_answer(c, &j->rq);
	if (j->queued)
		return MHD_YES; /* resumed before the answer: cannot happen, wait */
	if (j->nomem)
		return reject(c, j, 500, "out of memory reading the request body");
	if (j->too_big) {
		char msg[128];
		snprintf(msg, sizeof msg, "the request body is over the limit of %zu bytes",
		         sv->max_body);
		return reject(c, j, 413, msg);
	}
	if (srv_api_inline(j->rq.path)) {
		srv_api_handle(&sv->s, &j->rq);
		return send_answer(c, &j->rq);
	}
	pthread_mutex_lock(&sv->lock);
	if (sv->nqueued >= sv->maxqueue) {
		pthread_mutex_unlock(&sv->lock);
		pthread_mutex_lock(&sv->s.m.lock);
		sv->s.m.rejected++;
		pthread_mutex_unlock(&sv->s.m.lock);
		int doc = srv_api_is_document(j->rq.path);
		return reject(c, j, doc ? 429 : 503, "overloaded: the request queue is full; retry later");
	}
	j->queued = 1;
	MHD_suspend_connection(c);
	if (sv->tail)
		sv->tail->next = j;
	else
		sv->head = j;
	sv->tail = j;
	sv->nqueued++;
	pthread_cond_signal(&sv->cond);
	pthread_mutex_unlock(&sv->lock);
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_RequestTerminationCode toe)
{
	struct server *sv = cls;
	struct job *j = *ctx;
	(void)c;
	(void)toe;
	if (!j)
		return;
	job_free(j);
	*ctx = NULL;
	open_count(sv, -1);
}

static void *worker(void *arg)
{
	struct server *sv = arg;
	for (;;) {
		pthread_mutex_lock(&sv->lock);
		while (!sv->head && !sv->stopping)
			pthread_cond_wait(&sv->cond, &sv->lock);
		struct job *j = sv->head;
		if (!j) {
			pthread_mutex_unlock(&sv->lock);
			return NULL;
		}
		sv->head = j->next;
		if (!sv->head)
			sv->tail = NULL;
		sv->nqueued--;
		pthread_mutex_unlock(&sv->lock);
		srv_api_handle(&sv->s, &j->rq);
		/* the queue is not touched: resuming orders done before the I/O
		 * thread's next look at the connection */
		j->done = 1;
		MHD_resume_connection(j->conn);
	}
}

/* ---- the program --------------------------------------------------------------------------- */

struct serve_opts {
	const char *app, *data, *bind;
	long port, threads, queue, io_threads, client_timeout, drain;
	long long max_body;
};

static int parse_num(const char *name, const char *v, long long min, long long max,
                     long long *out)
{
	char *end;
	long long x = v ? strtoll(v, &end, 10) : 0;
	if (!v || !*v || *end || x < min || x > max)
		return eng_cli_usage("serve", "%s needs a number from %lld to %lld, got '%s'", name, min,
		                     max, v ? v : "");
	*out = x;
	return 0;
}

static int parse_serve_opts(int argc, char **argv, struct serve_opts *o)
{
	static const struct {
		const char *name;
		long long min, max;
	} nums[] = {
		{ "--port", 0, 65535 }, { "--threads", 1, 1024 }, { "--queue", 1, 1 << 20 },
		{ "--io-threads", 1, 64 }, { "--client-timeout", 1, 86400 }, { "--drain", 0, 86400 },
		{ "--max-body", 1, 1LL << 34 },
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-') {
			if (o->app)
				return eng_cli_usage("serve", "unexpected argument '%s'", a);
			o->app = a;
			continue;
		}
		const char *eq = strchr(a, '=');
		size_t nl = eq ? (size_t)(eq - a) : strlen(a);
		const char *v = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
		int took = !eq;
		if (!strncmp(a, "--data", nl) && nl == 6) {
			o->data = v;
		} else if (!strncmp(a, "--bind", nl) && nl == 6) {
			o->bind = v;
		} else {
			size_t k = 0;
			while (k < sizeof nums / sizeof nums[0] &&
			       (strlen(nums[k].name) != nl || strncmp(a, nums[k].name, nl)))
				k++;
			if (k == sizeof nums / sizeof nums[0])
				return eng_cli_usage("serve", "unknown option '%s'", a);
			long long x = 0;
			if (parse_num(nums[k].name, v, nums[k].min, nums[k].max, &x))
				return 2;
			long *slots[] = { &o->port, &o->threads, &o->queue, &o->io_threads,
			                  &o->client_timeout, &o->drain };
			if (k < 6)
				*slots[k] = (long)x;
			else
				o->max_body = x;
		}
		if (!v)
			return eng_cli_usage("serve", "option %.*s needs a value", (int)nl, a);
		i += took;
	}
	if (!o->app)
		return eng_cli_usage("serve", "missing APP");
	return 0;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	fputs("strata: http: ", stderr);
	vfprintf(stderr, fmt, ap);
}

/* Finish what is in flight (at most drain seconds), then stop. */
static void drain(struct server *sv, long drain_s)
{
	MHD_socket ls = MHD_quiesce_daemon(sv->d);
	if (ls != MHD_INVALID_SOCKET)
		close(ls);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += drain_s;
	pthread_mutex_lock(&sv->s.m.lock);
	while (sv->s.m.open > 0 &&
	       pthread_cond_timedwait(&sv->idle, &sv->s.m.lock, &until) == 0)
		;
	long left = sv->s.m.open;
	pthread_mutex_unlock(&sv->s.m.lock);
	pthread_mutex_lock(&sv->lock);
	sv->stopping = 1;
	pthread_cond_broadcast(&sv->cond);
	pthread_mutex_unlock(&sv->lock);
	if (left)
		fprintf(stderr, "strata: %ld requests still open after %ld s, closed\n", left, drain_s);
}

int eng_cli_serve(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(serve_usage, stdout);
			return 0;
		}
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct serve_opts o = { .bind = "127.0.0.1", .port = 8080, .threads = ncpu > 0 ? ncpu : 1,
	                        .queue = 64, .io_threads = 2, .client_timeout = 30, .drain = 30,
	                        .max_body = 64LL << 20 };
	int rc = parse_serve_opts(argc, argv, &o);
	if (rc)
		return rc;
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)o.port) };
	if (inet_pton(AF_INET, o.bind, &addr.sin_addr) != 1)
		return eng_cli_usage("serve", "--bind needs an IPv4 address, got '%s'", o.bind);

	/* Signals are taken by sigwait() below: blocked in every thread. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	static struct server sv; /* one server per process; its threads point here */
	struct strata_error err = { 0 };
	struct strata_options so = { .data_dir = o.data, .log = eng_cli_log,
	                             .pool_generations = (int)(o.threads < 1024 ? o.threads : 1024) };
	if (eng_open(o.app, &so, ENG_OPEN_DEPLOYED, &sv.s.db, &err))
		return eng_cli_fail("%s", err.msg[0] ? err.msg : strata_strerror(err.code));
	pthread_mutex_init(&sv.s.write_lock, NULL);
	srv_metrics_init(&sv.s.m);
	sv.s.started = base_now();
	pthread_mutex_init(&sv.lock, NULL);
	pthread_cond_init(&sv.cond, NULL);
	pthread_cond_init(&sv.idle, NULL);
	sv.maxqueue = (int)o.queue;
	sv.max_body = (size_t)o.max_body;

	rc = 1;
	pthread_t *workers = base_calloc((size_t)o.threads, sizeof *workers);
	int nworkers = 0;
	while (workers && nworkers < o.threads &&
	       !pthread_create(&workers[nworkers], NULL, worker, &sv))
		nworkers++;
	if (nworkers < o.threads) {
		eng_cli_fail("cannot start %ld threads", o.threads);
		goto stop;
	}
	sv.d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
	                        MHD_USE_ERROR_LOG,
	                        0, NULL, NULL, on_request, &sv,
	                        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
	                        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	                        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)o.io_threads,
	                        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o.client_timeout,
	                        MHD_OPTION_NOTIFY_COMPLETED, on_completed, &sv,
	                        MHD_OPTION_END);
	if (!sv.d) {
		eng_cli_fail("cannot listen on %s:%ld (in use, or not allowed)", o.bind, o.port);
		goto stop;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(sv.d, MHD_DAEMON_INFO_BIND_PORT);
	fprintf(stderr, "strata: listening on http://%s:%u\n", o.bind,
	        info ? (unsigned)info->port : (unsigned)o.port);
	fflush(stderr);
	int sig = 0;
	sigwait(&sigs, &sig);
	fprintf(stderr, "strata: %s: finishing the requests in flight\n",
	        sig == SIGTERM ? "SIGTERM" : "SIGINT");
	drain(&sv, o.drain);
	rc = 0;
stop:
	pthread_mutex_lock(&sv.lock);
	sv.stopping = 1;
	pthread_cond_broadcast(&sv.cond);
	pthread_mutex_unlock(&sv.lock);
	for (int i = 0; i < nworkers; i++)
		pthread_join(workers[i], NULL);
	if (sv.d)
		MHD_stop_daemon(sv.d);
	if (workers)
		base_free(workers, (size_t)o.threads * sizeof *workers);
	strata_close(sv.s.db);
	if (!rc)
		fprintf(stderr, "strata: stopped\n");
	return rc ? 1 : 0;
}
