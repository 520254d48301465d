/*
 * httpbench.c: the same tiny HTTP service on libmicrohttpd or on h2o, to
 * choose `strata serve`'s HTTP library by measurement (bench/http.sh, make
 * bench-http; bench/README.md has the figures).
 *
 *   httpbench mhd|h2o THREADS
 *
 * Listens on 127.0.0.1 on a free port, named on stderr as "httpbench: LIB
 * listening on PORT", and serves until killed:
 *   GET /fixed   the fixed JSON answer {"status":{"code":"up"}} (strata
 *                serve's health answer)
 *   POST /echo   the request body back
 * anything else 404.  libmicrohttpd: its own THREADS threads (a pool when
 * more than one), HTTP/1.1 only.  h2o (libh2o-evloop): THREADS event loops
 * accepting on the one listening socket (as h2o's own server does),
 * HTTP/1.1 and cleartext HTTP/2 with prior knowledge.  Each answer is as small as
 * the library makes it: the body, a Content-Type, the library's own
 * headers.
 */
#define H2O_USE_LIBUV 0

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <h2o.h>
#include <microhttpd.h>

#include "../base/base.h"
#include "common.h"

static const char fixed[] = "{\"status\":{\"code\":\"up\"}}";

/* A listening socket on 127.0.0.1, any free port (set in *port).  -1 on
 * failure. */
static int listen_on(unsigned *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
	    bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, SOMAXCONN) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/* ---- libmicrohttpd ----------------------------------------------------------------------- */

struct body {
	char *p;
	size_t n, cap;
};

static enum MHD_Result mhd_send(struct MHD_Connection *c, unsigned status, const char *p,
                                size_t n, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)p, mode);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "application/json");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result mhd_req(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **ctx)
{
	(void)cls;
	(void)version;
	/* Answered on the call after the first, as strata serve does: an answer
	 * queued on the first call closes the connection (the client might
	 * still send a body). */
	struct body *b = *ctx;
	if (!b) {
		*ctx = b = base_calloc(1, sizeof *b);
		return b ? MHD_YES : MHD_NO;
	}
	if (*upload_size) {
		if (b->n + *upload_size > b->cap) {
			size_t cap = b->cap ? b->cap * 2 : 4096;
			while (cap < b->n + *upload_size)
				cap *= 2;
			char *p = base_realloc(b->p, b->cap, cap);
			if (!p)
				return MHD_NO;
			b->p = p;
			b->cap = cap;
		}
		memcpy(b->p + b->n, upload, *upload_size);
		b->n += *upload_size;
		*upload_size = 0;
		return MHD_YES;
	}
	if (!strcmp(method, "GET") && !strcmp(url, "/fixed"))
		return mhd_send(c, 200, fixed, sizeof fixed - 1, MHD_RESPMEM_PERSISTENT);
	if (!strcmp(method, "POST") && !strcmp(url, "/echo"))
		return mhd_send(c, 200, b->p ? b->p : "", b->n, MHD_RESPMEM_MUST_COPY);
	return mhd_send(c, 404, "{}", 2, MHD_RESPMEM_PERSISTENT);
}

static void mhd_done(void *cls, struct MHD_Connection *c, void **ctx,
                     enum MHD_RequestTerminationCode toe)
{
	struct body *b = *ctx;
	(void)cls;
	(void)c;
	(void)toe;
	if (!b)
		return;
	if (b->p)
		base_free(b->p, b->cap);
	base_free(b, sizeof *b);
	*ctx = NULL;
}

static int run_mhd(long threads)
{
	unsigned port = 0;
	int fd = listen_on(&port);
	if (fd < 0)
		return bench_fail("cannot listen: %s", strerror(errno));
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, mhd_req, NULL,
		MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, mhd_done, NULL,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(threads > 1 ? threads : 0), MHD_OPTION_END);
	if (!d)
		return bench_fail("cannot start libmicrohttpd");
	fprintf(stderr, "httpbench: mhd listening on %u\n", port);
	for (;;)
		pause();
}

/* ---- h2o ------------------------------------------------------------------------------------ */

struct h2o_loop {
	h2o_context_t ctx;
	h2o_accept_ctx_t accept;
	h2o_evloop_t *loop;
	int fd;
	pthread_t thread;
};

static int h2o_req(h2o_handler_t *self, h2o_req_t *req)
{
	(void)self;
	const char *p;
	size_t n;
	if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
	    h2o_memis(req->path_normalized.base, req->path_normalized.len, H2O_STRLIT("/fixed"))) {
		p = fixed;
		n = sizeof fixed - 1;
	} else if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST")) &&
	           h2o_memis(req->path_normalized.base, req->path_normalized.len,
	                     H2O_STRLIT("/echo"))) {
		p = req->entity.base ? req->entity.base : "";
		n = req->entity.len;
	} else {
		return -1; /* h2o answers 404 */
	}
	req->res.status = 200;
	req->res.reason = "OK";
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
	               H2O_STRLIT("application/json"));
	h2o_send_inline(req, p, n);
	return 0;
}

static void h2o_on_accept(h2o_socket_t *listener, const char *err)
{
	struct h2o_loop *l = listener->data;
	if (err)
		return;
	h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
	if (sock)
		h2o_accept(&l->accept, sock);
}

static void *h2o_thread(void *arg)
{
	struct h2o_loop *l = arg;
	h2o_socket_t *s = h2o_evloop_socket_create(l->loop, l->fd, H2O_SOCKET_FLAG_DONT_READ);
	s->data = l;
	h2o_socket_read_start(s, h2o_on_accept);
	while (h2o_evloop_run(l->loop, INT32_MAX) == 0)
		;
	return NULL;
}

static int run_h2o(long threads)
{
	h2o_globalconf_t *conf = base_calloc(1, sizeof *conf);
	struct h2o_loop *loops = base_calloc((size_t)threads, sizeof *loops);
	if (!conf || !loops)
		return bench_fail("out of memory");
	h2o_config_init(conf);
	h2o_hostconf_t *host = h2o_config_register_host(conf, h2o_iovec_init(H2O_STRLIT("default")),
	                                                65535);
	h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
	h2o_handler_t *h = h2o_create_handler(path, sizeof *h);
	h->on_req = h2o_req;
	unsigned port = 0;
	int fd = listen_on(&port);
	if (fd < 0)
		return bench_fail("cannot listen: %s", strerror(errno));
	for (long i = 0; i < threads; i++) {
		struct h2o_loop *l = &loops[i];
		l->fd = fd;
		l->loop = h2o_evloop_create();
		h2o_context_init(&l->ctx, l->loop, conf);
		l->accept.ctx = &l->ctx;
		l->accept.hosts = conf->hosts;
	}
	fprintf(stderr, "httpbench: h2o listening on %u\n", port);
	for (long i = 0; i < threads; i++)
		if (pthread_create(&loops[i].thread, NULL, h2o_thread, &loops[i]))
			return bench_fail("cannot start a thread");
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	long threads = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
	if (threads < 1 || threads > 64 || (strcmp(argv[1], "mhd") && strcmp(argv[1], "h2o"))) {
		fprintf(stderr, "usage: httpbench mhd|h2o THREADS\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	return !strcmp(argv[1], "mhd") ? run_mhd(threads) : run_h2o(threads);
}
