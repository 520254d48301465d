/*
 * serve.c: `strata serve APP`, the HTTP server: HTTP/1.1 on libmicrohttpd,
 * HTTP/2 (cleartext, prior knowledge) on libnghttp2, on one port.
 *
 * The program opens the listening socket itself and gives it to the front
 * door (serve_h2.c), which keeps HTTP/2 connections and hands every other
 * one to libmicrohttpd (MHD_add_connection; the daemon has no listening
 * socket of its own).  libmicrohttpd's threads (--io-threads) read HTTP/1.1
 * requests and write answers; they never run a query.  A request read
 * whole goes through serve_req.c: health and metrics are answered at once,
 * everything else waits in the bounded queue (--queue) for the --threads
 * workers, and when the queue is full the client gets 503 (a search) or 429
 * (a document operation) at once.  While a worker has it, the connection is
 * suspended, and the worker resumes it with the answer.  A body over
 * --max-body is refused with 413 as soon as its length is known; a client
 * silent for --client-timeout seconds is disconnected.
 *
 * Queries run on all the workers at once; writes take the one writer lock
 * (the store has one writer).  A document operation is committed before its
 * 200 is sent, so an acknowledged write survives kill -9.
 *
 * SIGTERM or SIGINT: the listening socket closes, HTTP/2 connections get
 * GOAWAY, the requests being read, queued or run are finished and answered
 * (for at most --drain seconds), then the daemon stops and the store is
 * closed.
 */
#include <arpa/inet.h>
#include <errno.h>
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

static const char *serve_usage =
	"usage: strata serve APP [--port N] [--threads N] [--queue N] [--data DIR]\n"
	"                        [--max-body BYTES] [--client-timeout S] [--drain S]\n"
	"                        [--io-threads N] [--bind ADDR]\n"
	"  Serve the application over HTTP: /search/ (GET and POST), /document/v1/,\n"
	"  /state/v1/health and /metrics/v2/values, as Vespa does.  HTTP/1.1 and\n"
	"  HTTP/2 with prior knowledge (h2c, as curl --http2-prior-knowledge and\n"
	"  Vespa's feed clients speak it) on the same port.\n"
	"  --port N            port to listen on (default 8080; 0: any free port)\n"
	"  --threads N         threads running requests (default: the number of CPUs)\n"
	"  --queue N           requests waiting for a thread before 503/429 (default 64)\n"
	"  --max-body BYTES    the largest request body, else 413 (default 64 MiB)\n"
	"  --client-timeout S  disconnect a client silent this long (default 30)\n"
	"  --drain S           on SIGTERM, wait this long for requests in flight (default 30)\n"
	"  --io-threads N      threads reading and writing HTTP/1.1 connections (default 2;\n"
	"                      HTTP/2 connections have one thread of their own)\n"
	"  --bind ADDR         the IPv4 address to listen on (default 127.0.0.1; 0.0.0.0: all)\n"
	"  Once listening, one line on stderr: \"strata: listening on http://ADDR:PORT\".\n";

/* An HTTP/1.1 request, on its libmicrohttpd connection. */
struct job {
	struct srv_job j;   /* first: the answered() callback casts back */
	struct srv *s;
	struct MHD_Connection *conn;
	int queued;      /* handed to the workers */
	int done;        /* the answer is in j.rq */
};

/* ---- HTTP/1.1 requests ------------------------------------------------------------------- */

static void job_free(struct job *jb)
{
	srv_job_clear(jb->s, &jb->j);
	tool_free(jb);
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
	json_t *args = cls;
	(void)kind;
	json_object_set_new(args, key, json_string(value ? value : ""));
	return MHD_YES;
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

/* On a worker: the answer is in; resuming orders done before the I/O
 * thread's next look at the connection. */
static void answered(struct srv_job *j)
{
	struct job *jb = (struct job *)j;
	jb->done = 1;
	MHD_resume_connection(jb->conn);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **ctx)
{
	struct srv *s = cls;
	struct job *jb = *ctx;
	(void)version;
	if (!jb) {
		jb = tool_calloc(1, sizeof *jb);
		if (!jb)
			return MHD_NO;
		jb->s = s;
		jb->conn = c;
		jb->j.answered = answered;
		if (srv_job_begin(s, &jb->j, method, url, strlen(url))) {
			job_free(jb);
			return MHD_NO;
		}
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, jb->j.rq.args);
		*ctx = jb;
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		                                             MHD_HTTP_HEADER_CONTENT_LENGTH);
		unsigned long long len = cl ? strtoull(cl, NULL, 10) : 0;
		if (len > s->max_body) {
			srv_job_too_large(s, &jb->j, len);
			return send_answer(c, &jb->j.rq);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		srv_job_append(s, &jb->j, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (jb->done)
		return send_answer(c, &jb->j.rq);
	if (jb->queued)
		return MHD_YES; /* resumed before the answer: cannot happen, wait */
	if (srv_job_answer_now(s, &jb->j))
		return send_answer(c, &jb->j.rq);
	/* suspended before the job is queued: a worker may resume it at once */
	MHD_suspend_connection(c);
	jb->queued = 1;
	if (!srv_job_queue(s, &jb->j))
		answered(&jb->j); /* refused: sent once resumed */
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_RequestTerminationCode toe)
{
	struct job *jb = *ctx;
	(void)cls;
	(void)c;
	(void)toe;
	if (!jb)
		return;
	job_free(jb);
	*ctx = NULL;
}

/* The front door hands an HTTP/1.1 connection over. */
static void to_mhd(void *arg, int fd, const struct sockaddr *peer, socklen_t len)
{
	struct MHD_Daemon *d = arg;
	MHD_add_connection(d, fd, peer, len); /* closes fd on failure */
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
		return tool_usage("serve", "%s needs a number from %lld to %lld, got '%s'", name, min,
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
				return tool_usage("serve", "unexpected argument '%s'", a);
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
				return tool_usage("serve", "unknown option '%s'", a);
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
			return tool_usage("serve", "option %.*s needs a value", (int)nl, a);
		i += took;
	}
	if (!o->app)
		return tool_usage("serve", "missing APP");
	return 0;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	fputs("strata: http: ", stderr);
	vfprintf(stderr, fmt, ap);
}

/* The listening socket on addr: its fd, or -1 with errno set. */
static int listen_on(const struct sockaddr_in *addr, unsigned *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	struct sockaddr_in got;
	socklen_t len = sizeof got;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
	    bind(fd, (const struct sockaddr *)addr, sizeof *addr) || listen(fd, SOMAXCONN) ||
	    getsockname(fd, (struct sockaddr *)&got, &len)) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	*port = ntohs(got.sin_port);
	return fd;
}

/* Finish what is in flight (at most drain seconds), then stop. */
static void drain(struct srv *s, struct srv_front *front, long drain_s)
{
	srv_front_quiesce(front);
	long left = srv_wait_idle(s, drain_s);
	srv_stop_workers(s);
	if (left)
		fprintf(stderr, "strata: %ld requests still open after %ld s, closed\n", left, drain_s);
}

int srv_cmd_serve(int argc, char **argv)
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
		return tool_usage("serve", "--bind needs an IPv4 address, got '%s'", o.bind);

	/* Signals are taken by sigwait() below: blocked in every thread. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	static struct srv sv; /* one server per process; its threads point here */
	struct strata_error err = { 0 };
	struct strata_options so = { .data_dir = o.data, .log = tool_log, .must_be_deployed = 1,
	                             .pool_generations = (int)(o.threads < 1024 ? o.threads : 1024) };
	if (strata_open(o.app, &so, &sv.db, &err))
		return tool_fail("%s", err.msg[0] ? err.msg : strata_strerror(err.code));
	pthread_mutex_init(&sv.write_lock, NULL);
	srv_metrics_init(&sv.m);
	sv.started = tool_now();
	pthread_mutex_init(&sv.lock, NULL);
	pthread_cond_init(&sv.cond, NULL);
	pthread_cond_init(&sv.idle, NULL);
	sv.maxqueue = (int)o.queue;
	sv.max_body = (size_t)o.max_body;

	rc = 1;
	struct MHD_Daemon *d = NULL;
	struct srv_front *front = NULL;
	pthread_t *workers = tool_calloc((size_t)o.threads, sizeof *workers);
	int nworkers = 0;
	while (workers && nworkers < o.threads &&
	       !pthread_create(&workers[nworkers], NULL, srv_worker, &sv))
		nworkers++;
	if (nworkers < o.threads) {
		tool_fail("cannot start %ld threads", o.threads);
		goto stop;
	}
	unsigned port = 0;
	int lfd = listen_on(&addr, &port);
	if (lfd < 0) {
		tool_fail("cannot listen on %s:%ld: %s", o.bind, o.port, strerror(errno));
		goto stop;
	}
	/* Connections come from the front door (MHD_add_connection), which
	 * keeps HTTP/2 for itself. */
	d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
	                     MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG,
	                     0, NULL, NULL, on_request, &sv,
	                     MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
	                     MHD_OPTION_THREAD_POOL_SIZE, (unsigned)o.io_threads,
	                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o.client_timeout,
	                     MHD_OPTION_NOTIFY_COMPLETED, on_completed, &sv,
	                     MHD_OPTION_END);
	if (!d) {
		close(lfd);
		tool_fail("cannot start the HTTP/1.1 server");
		goto stop;
	}
	int e = srv_front_start(&sv, lfd, o.client_timeout, to_mhd, d, &front);
	if (e) {
		tool_fail("cannot start accepting connections: %s",
		          e > 0 ? strerror(e) : "out of memory");
		goto stop;
	}
	fprintf(stderr, "strata: listening on http://%s:%u\n", o.bind, port);
	fflush(stderr);
	int sig = 0;
	sigwait(&sigs, &sig);
	fprintf(stderr, "strata: %s: finishing the requests in flight\n",
	        sig == SIGTERM ? "SIGTERM" : "SIGINT");
	drain(&sv, front, o.drain);
	rc = 0;
stop:
	srv_stop_workers(&sv);
	for (int i = 0; i < nworkers; i++)
		pthread_join(workers[i], NULL);
	if (front)
		srv_front_free(front);
	if (d)
		MHD_stop_daemon(d);
	tool_free(workers);
	strata_close(sv.db);
	if (!rc)
		fprintf(stderr, "strata: stopped\n");
	return rc ? 1 : 0;
}
