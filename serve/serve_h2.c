/*
 * serve_h2.c: the front door of `strata serve`, and HTTP/2 on libnghttp2.
 *
 * One thread (the front door) owns the listening socket and every HTTP/2
 * connection, in one poll() loop.  A connection accepted is first only
 * peeked at: as soon as its first bytes differ from HTTP/2's client preface
 * ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") it goes to libmicrohttpd as HTTP/1.1
 * (srv_http1_fn, MHD_add_connection), the bytes still unread; when they are
 * the whole preface (cleartext HTTP/2 with prior knowledge, as curl
 * --http2-prior-knowledge and Vespa's feed clients send it) it stays here
 * with an nghttp2 server session.  A partial preface is looked at again a
 * few milliseconds later (its bytes stay readable, so polling would spin).
 * `Upgrade: h2c` from HTTP/1.1 is not offered: such a request is answered
 * over HTTP/1.1.
 *
 * Each HTTP/2 stream is a struct h2s holding the same struct srv_job an
 * HTTP/1.1 request has, so it meets the same limits (--max-body: 413 as
 * soon as a content-length or the data passes it), the same answers at once
 * (health, metrics, 503/429 when the queue is full) and the same bounded
 * queue and workers.  A worker's answer comes back through the done list
 * and a byte on the wake pipe; the front door then submits the response.
 *
 * Ownership: a stream belongs to its connection, except while a worker has
 * it (queued): a stream reset, or a connection closed, meanwhile is only
 * marked, and freed when the worker gives it back; a closed connection
 * lives on (without socket or session) until its last stream is back.
 * s->m.open counts streams from their headers to their end, so the SIGTERM
 * drain waits for them; srv_front_quiesce() closes the listening socket and
 * sends GOAWAY, after which each connection closes once its streams are
 * done.  A connection that neither sent nor received for --client-timeout
 * seconds, with no stream at a worker, is closed.
 *
 * Memory: the program's own (tool.h), and nghttp2's default allocator for
 * nghttp2's.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "serve_int.h"

#define MAX_TARGET 8192          /* longest :path kept (the rest is cut) */
#define RECHECK_S 0.005          /* a partial preface is looked at again after this */
#define ACCEPT_PAUSE_S 0.1       /* accept() failed (no descriptors left): wait this long */
#define MAX_STREAMS 128          /* SETTINGS_MAX_CONCURRENT_STREAMS */
#define WINDOW (1 << 20)         /* each stream's receive window */
#define CONN_WINDOW (1 << 24)    /* the connection's */
#define OUT_BATCH (64 << 10)     /* frames gathered into one send() */

struct h2c;

/* One HTTP/2 request. */
struct h2s {
	struct srv_job j;  /* first: answered() casts back; j.next links the done list */
	struct h2c *c;
	int32_t id;
	int begun;         /* srv_job_begin succeeded */
	int queued;        /* a worker has it */
	int closed;        /* the stream ended while queued: free when given back */
	int responded;     /* the response is submitted */
	char method[16];
	char *target;      /* :path as sent (tool_free) */
	long long clen;    /* content-length, or -1 */
	size_t sent;       /* bytes of the answer given to nghttp2 */
	struct h2s *prev, *next; /* the connection's open streams */
};

/* One HTTP/2 connection. */
struct h2c {
	struct srv_front *f;
	int fd;              /* -1 once closed */
	nghttp2_session *ses;
	double last;         /* tool_now() of the last bytes read or written */
	int outstanding;     /* streams a worker has */
	struct h2s *streams;
	int pfd;             /* its slot in this round's poll set, or -1 */
	uint8_t *out;        /* frames made and not yet written: out[off..len) */
	size_t off, len, cap;
	struct h2c *next;
};

/* A connection not yet known to be HTTP/2 or HTTP/1.1. */
struct pending {
	int fd;
	struct sockaddr_storage peer;
	socklen_t len;
	double since, recheck;
	int pfd;
	struct pending *next;
};

struct srv_front {
	struct srv *s;
	long timeout;
	srv_http1_fn http1;
	void *arg;
	pthread_t thread;
	int wake[2];              /* a byte: look at the requests below */
	pthread_mutex_t lock;     /* guards done, quiesce, stop */
	struct h2s *done;         /* streams given back by workers */
	int quiesce, stop;
	/* the front door's thread only */
	int lfd;                  /* -1 once closed */
	int quiesced;
	double accept_pause;      /* no accept() before this */
	struct pending *pend;
	struct h2c *conns;
	struct pollfd *pfds;
	size_t npfds;
	nghttp2_session_callbacks *cbs;
};

/* ---- streams -------------------------------------------------------------------------------- */

static void stream_free(struct srv *s, struct h2s *st)
{
	srv_job_clear(s, &st->j);
	tool_free(st->target);
	tool_free(st);
}

static void stream_unlink(struct h2s *st)
{
	if (st->prev)
		st->prev->next = st->next;
	else
		st->c->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	st->prev = st->next = NULL;
}

/* Decode %XX (and '+' as a space when plus) in place; returns the new
 * length.  A malformed escape is kept as it is. */
static size_t url_decode(char *p, size_t n, int plus)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = p[i];
		if (ch == '%' && i + 2 < n && isxdigit((unsigned char)p[i + 1]) &&
		    isxdigit((unsigned char)p[i + 2])) {
			char hex[3] = { p[i + 1], p[i + 2], 0 };
			ch = (char)strtol(hex, NULL, 16);
			i += 2;
		} else if (plus && ch == '+') {
			ch = ' ';
		}
		p[o++] = ch;
	}
	return o;
}

/* Query parameters name=value&... into args, decoded as libmicrohttpd
 * decodes them for HTTP/1.1 (a later name wins).  0, or -1 out of memory. */
static int parse_query(char *q, size_t n, json_t *args)
{
	char *end = q + n;
	while (q < end) {
		char *amp = memchr(q, '&', (size_t)(end - q));
		char *stop = amp ? amp : end;
		char *eq = memchr(q, '=', (size_t)(stop - q));
		if (stop > q) {
			size_t kl = url_decode(q, (size_t)((eq ? eq : stop) - q), 1);
			size_t vl = eq ? url_decode(eq + 1, (size_t)(stop - eq - 1), 1) : 0;
			json_t *v = json_stringn(eq ? eq + 1 : "", vl);
			char *key = tool_strndup(q, kl);
			int bad = !v || !key || json_object_set_new(args, key, v);
			if (bad && !key)
				json_decref(v);
			tool_free(key);
			if (bad)
				return -1;
		}
		q = stop + 1;
	}
	return 0;
}

static ssize_t read_answer(nghttp2_session *ses, int32_t id, uint8_t *buf, size_t length,
                           uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	struct h2s *st = src->ptr;
	const char *body = st->j.rq.resp ? st->j.rq.resp : "{}";
	size_t len = strlen(body), n = len - st->sent;
	(void)ses;
	(void)id;
	(void)ud;
	if (n > length)
		n = length;
	memcpy(buf, body + st->sent, n);
	st->sent += n;
	if (st->sent == len)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* Submit st's answer (in st->j.rq); it is sent as the window allows. */
static void respond(struct h2s *st)
{
	char status[8], clen[24];
	const char *body = st->j.rq.resp ? st->j.rq.resp : "{}";
	snprintf(status, sizeof status, "%d", st->j.rq.status);
	snprintf(clen, sizeof clen, "%zu", strlen(body));
	static const char ctype[] = "application/json;charset=utf-8";
	nghttp2_nv nv[] = {
		{ (uint8_t *)":status", (uint8_t *)status, 7, strlen(status), NGHTTP2_NV_FLAG_NONE },
		{ (uint8_t *)"content-type", (uint8_t *)ctype, 12, sizeof ctype - 1,
		  NGHTTP2_NV_FLAG_NONE },
		{ (uint8_t *)"content-length", (uint8_t *)clen, 14, strlen(clen), NGHTTP2_NV_FLAG_NONE },
	};
	nghttp2_data_provider prd = { .source.ptr = st, .read_callback = read_answer };
	st->responded = 1;
	st->sent = 0;
	/* HEAD: the headers of the answer GET would get, and no body */
	int head = !strcmp(st->method, "HEAD");
	if (nghttp2_submit_response(st->c->ses, st->id, nv, 3, head ? NULL : &prd))
		nghttp2_submit_rst_stream(st->c->ses, NGHTTP2_FLAG_NONE, st->id,
		                          NGHTTP2_INTERNAL_ERROR);
}

/* On a worker: hand st back to the front door. */
static void answered(struct srv_job *j)
{
	struct h2s *st = (struct h2s *)j;
	struct srv_front *f = st->c->f;
	pthread_mutex_lock(&f->lock);
	j->next = (struct srv_job *)f->done;
	f->done = st;
	pthread_mutex_unlock(&f->lock);
	ssize_t w = write(f->wake[1], "a", 1); /* full pipe: a wake-up is pending anyway */
	(void)w;
}

/* The request is read whole. */
static void request_done(struct srv *s, struct h2s *st)
{
	if (st->responded)
		return;
	if (!srv_job_answer_now(s, &st->j) && srv_job_queue(s, &st->j)) {
		st->queued = 1;
		st->c->outstanding++;
		return;
	}
	respond(st);
}

/* The headers are in: make the job from :method and :path. */
static int request_begin(struct srv *s, struct h2s *st)
{
	char *t = st->target ? st->target : "";
	size_t n = strlen(t);
	char *q = memchr(t, '?', n);
	size_t pl = url_decode(t, q ? (size_t)(q - t) : n, 0);
	if (srv_job_begin(s, &st->j, st->method, t, pl))
		return -1;
	st->begun = 1;
	if (q && parse_query(q + 1, n - (size_t)(q + 1 - t), st->j.rq.args))
		return -1;
	if (st->clen >= 0 && (unsigned long long)st->clen > s->max_body) {
		srv_job_too_large(s, &st->j, (unsigned long long)st->clen);
		respond(st);
	}
	return 0;
}

/* ---- nghttp2's callbacks --------------------------------------------------------------------- */

static int on_begin_headers(nghttp2_session *ses, const nghttp2_frame *frame, void *ud)
{
	struct h2c *c = ud;
	if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	struct h2s *st = tool_calloc(1, sizeof *st);
	if (!st)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
	st->c = c;
	st->j.answered = answered;
	st->id = frame->hd.stream_id;
	st->clen = -1;
	st->next = c->streams;
	if (c->streams)
		c->streams->prev = st;
	c->streams = st;
	nghttp2_session_set_stream_user_data(ses, st->id, st);
	return 0;
}

static int on_header(nghttp2_session *ses, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud)
{
	(void)flags;
	(void)ud;
	struct h2s *st = nghttp2_session_get_stream_user_data(ses, frame->hd.stream_id);
	if (!st || frame->hd.type != NGHTTP2_HEADERS)
		return 0;
	const char *v = (const char *)value;
	if (namelen == 7 && !memcmp(name, ":method", 7)) {
		size_t n = valuelen < sizeof st->method - 1 ? valuelen : sizeof st->method - 1;
		memcpy(st->method, v, n);
		st->method[n] = 0;
	} else if (namelen == 5 && !memcmp(name, ":path", 5) && !st->target) {
		st->target = tool_strndup(v, valuelen < MAX_TARGET ? valuelen : MAX_TARGET);
		if (!st->target)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	} else if (namelen == 14 && !memcmp(name, "content-length", 14)) {
		st->clen = strtoll(v, NULL, 10); /* nghttp2 checked it is a number */
	}
	return 0;
}

static int on_frame_recv(nghttp2_session *ses, const nghttp2_frame *frame, void *ud)
{
	struct h2c *c = ud;
	struct srv *s = c->f->s;
	if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
		return 0;
	struct h2s *st = nghttp2_session_get_stream_user_data(ses, frame->hd.stream_id);
	if (!st)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST &&
	    request_begin(s, st)) {
		nghttp2_submit_rst_stream(ses, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
		st->responded = 1;
		return 0;
	}
	if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) && st->begun)
		request_done(s, st);
	return 0;
}

static int on_data(nghttp2_session *ses, uint8_t flags, int32_t id, const uint8_t *data,
                   size_t len, void *ud)
{
	struct h2c *c = ud;
	(void)flags;
	struct h2s *st = nghttp2_session_get_stream_user_data(ses, id);
	if (!st || !st->begun || st->responded)
		return 0;
	srv_job_append(c->f->s, &st->j, (const char *)data, len);
	if (st->j.too_big && !st->j.nomem) {
		srv_job_too_large(c->f->s, &st->j, 0);
		respond(st); /* at once: the rest of the body is dropped */
	}
	return 0;
}

static int on_stream_close(nghttp2_session *ses, int32_t id, uint32_t code, void *ud)
{
	struct h2c *c = ud;
	(void)code;
	struct h2s *st = nghttp2_session_get_stream_user_data(ses, id);
	if (!st)
		return 0;
	nghttp2_session_set_stream_user_data(ses, id, NULL);
	stream_unlink(st);
	if (st->queued)
		st->closed = 1;
	else
		stream_free(c->f->s, st);
	return 0;
}

/* ---- connections ------------------------------------------------------------------------------ */

static void conn_unlink_free(struct srv_front *f, struct h2c *c)
{
	struct h2c **p = &f->conns;
	while (*p != c)
		p = &(*p)->next;
	*p = c->next;
	tool_free(c);
}

/* Close c's socket and session; its streams at a worker keep it until they
 * are given back. */
static void conn_close(struct srv_front *f, struct h2c *c)
{
	if (c->fd >= 0) {
		nghttp2_session_del(c->ses); /* calls no callback */
		c->ses = NULL;
		if (c->out)
			tool_free(c->out);
		c->out = NULL;
		close(c->fd);
		c->fd = -1;
		while (c->streams) {
			struct h2s *st = c->streams;
			stream_unlink(st);
			if (st->queued)
				st->closed = 1;
			else
				stream_free(f->s, st);
		}
	}
	if (!c->outstanding)
		conn_unlink_free(f, c);
}

/* Start HTTP/2 on fd; closes fd when that fails. */
static void conn_open(struct srv_front *f, int fd)
{
	struct h2c *c = tool_calloc(1, sizeof *c);
	if (!c) {
		close(fd);
		return;
	}
	c->f = f;
	c->fd = fd;
	c->last = tool_now();
	c->pfd = -1;
	/* frames are written as nghttp2 makes them: a HEADERS frame must not
	 * wait for the peer's delayed ACK before its DATA goes */
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	nghttp2_settings_entry set[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW },
	};
	if (nghttp2_session_server_new(&c->ses, f->cbs, c) ||
	    nghttp2_submit_settings(c->ses, NGHTTP2_FLAG_NONE, set, 2) ||
	    nghttp2_session_set_local_window_size(c->ses, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW)) {
		if (c->ses)
			nghttp2_session_del(c->ses);
		close(fd);
		tool_free(c);
		return;
	}
	c->next = f->conns;
	f->conns = c;
	if (f->quiesced)
		nghttp2_submit_goaway(c->ses, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, NULL, 0);
}

/* Write what nghttp2 has for c, gathered into batches of up to OUT_BATCH
 * bytes (one send() each rather than one per frame).  0, or -1 when the
 * connection is broken (or out of memory). */
static int conn_write(struct h2c *c)
{
	for (;;) {
		while (c->off < c->len) {
			ssize_t n = send(c->fd, c->out + c->off, c->len - c->off, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
			c->off += (size_t)n;
			c->last = tool_now();
		}
		c->off = c->len = 0;
		while (c->len < OUT_BATCH) {
			const uint8_t *data;
			ssize_t n = nghttp2_session_mem_send(c->ses, &data);
			if (n < 0)
				return -1;
			if (n == 0)
				break;
			if (c->len + (size_t)n > c->cap) {
				size_t cap = c->cap ? c->cap : OUT_BATCH;
				while (cap < c->len + (size_t)n)
					cap *= 2;
				uint8_t *o = tool_realloc(c->out, cap);
				if (!o)
					return -1;
				c->out = o;
				c->cap = cap;
			}
			memcpy(c->out + c->len, data, (size_t)n);
			c->len += (size_t)n;
		}
		if (!c->len)
			return 0;
	}
}

/* Read what c has; write what nghttp2 has for it; close it when done or
 * broken.  Returns nothing: c may be freed. */
static void conn_io(struct srv_front *f, struct h2c *c, short revents)
{
	int bad = (revents & (POLLERR | POLLNVAL)) != 0;
	if (!bad && (revents & (POLLIN | POLLHUP))) {
		uint8_t buf[16384];
		for (;;) {
			ssize_t n = recv(c->fd, buf, sizeof buf, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (n <= 0) {
				bad = 1;
				break;
			}
			c->last = tool_now();
			if (nghttp2_session_mem_recv(c->ses, buf, (size_t)n) < 0) {
				bad = 1;
				break;
			}
			if ((size_t)n < sizeof buf)
				break;
		}
	}
	if (!bad && conn_write(c))
		bad = 1;
	if (bad || (c->off == c->len && !nghttp2_session_want_read(c->ses) &&
	            !nghttp2_session_want_write(c->ses)))
		conn_close(f, c);
}

/* ---- the front door ---------------------------------------------------------------------------- */

static void pending_free(struct srv_front *f, struct pending *p, int close_fd)
{
	struct pending **q = &f->pend;
	while (*q != p)
		q = &(*q)->next;
	*q = p->next;
	if (close_fd)
		close(p->fd);
	tool_free(p);
}

/* Look at p's first bytes: HTTP/2, HTTP/1.1, or not yet known. */
static void pending_sniff(struct srv_front *f, struct pending *p, double now)
{
	char buf[NGHTTP2_CLIENT_MAGIC_LEN];
	ssize_t n = recv(p->fd, buf, sizeof buf, MSG_PEEK);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		pending_free(f, p, 1);
	} else if (memcmp(buf, NGHTTP2_CLIENT_MAGIC, (size_t)n)) {
		f->http1(f->arg, p->fd, (struct sockaddr *)&p->peer, p->len);
		pending_free(f, p, 0);
	} else if (n == NGHTTP2_CLIENT_MAGIC_LEN) {
		conn_open(f, p->fd);
		pending_free(f, p, 0);
	} else {
		p->recheck = now + RECHECK_S;
	}
}

static void accept_all(struct srv_front *f, double now)
{
	for (;;) {
		struct pending *p = tool_calloc(1, sizeof *p);
		if (!p) {
			f->accept_pause = now + ACCEPT_PAUSE_S;
			return;
		}
		p->len = sizeof p->peer;
		p->fd = accept4(f->lfd, (struct sockaddr *)&p->peer, &p->len,
		                SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (p->fd < 0) {
			int e = errno;
			tool_free(p);
			if (e == EINTR || e == ECONNABORTED)
				continue;
			if (e != EAGAIN && e != EWOULDBLOCK)
				f->accept_pause = now + ACCEPT_PAUSE_S;
			return;
		}
		p->since = now;
		p->pfd = -1;
		p->next = f->pend;
		f->pend = p;
	}
}

/* Take the workers' answers, and quiesce when asked.  Returns 1 to stop. */
static int take_requests(struct srv_front *f)
{
	char drainbuf[256];
	while (read(f->wake[0], drainbuf, sizeof drainbuf) > 0)
		;
	pthread_mutex_lock(&f->lock);
	struct h2s *done = f->done;
	f->done = NULL;
	int quiesce = f->quiesce, stop = f->stop;
	pthread_mutex_unlock(&f->lock);
	while (done) {
		struct h2s *st = done;
		done = (struct h2s *)st->j.next;
		struct h2c *c = st->c;
		st->queued = 0;
		c->outstanding--;
		if (st->closed)
			stream_free(f->s, st);
		else
			respond(st);
		if (c->fd < 0 && !c->outstanding)
			conn_unlink_free(f, c);
	}
	if (quiesce && !f->quiesced) {
		f->quiesced = 1;
		close(f->lfd);
		f->lfd = -1;
		for (struct h2c *c = f->conns; c; c = c->next)
			if (c->fd >= 0)
				nghttp2_submit_goaway(c->ses, NGHTTP2_FLAG_NONE,
				                      nghttp2_session_get_last_proc_stream_id(c->ses),
				                      NGHTTP2_NO_ERROR, NULL, 0);
		/* connections that sent nothing yet will not be served */
		struct pending *p = f->pend, *next;
		for (; p; p = next) {
			char b;
			next = p->next;
			if (recv(p->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN)
				pending_free(f, p, 1);
		}
	}
	return stop;
}

static int grow_pfds(struct srv_front *f, size_t need)
{
	if (need <= f->npfds)
		return 0;
	size_t n = f->npfds ? f->npfds : 16;
	while (n < need)
		n *= 2;
	struct pollfd *p = tool_realloc(f->pfds, n * sizeof *p);
	if (!p)
		return -1;
	f->pfds = p;
	f->npfds = n;
	return 0;
}

static int add_pfd(struct srv_front *f, size_t *n, int fd, short events)
{
	f->pfds[*n] = (struct pollfd){ .fd = fd, .events = events };
	return (int)(*n)++;
}

/* The poll set of this round, and how long poll() may wait (ms). */
static size_t poll_set(struct srv_front *f, double now, int *wait_ms)
{
	size_t n = 0;
	double until = now + 1.0;
	add_pfd(f, &n, f->wake[0], POLLIN);
	if (f->lfd >= 0) {
		if (now >= f->accept_pause)
			add_pfd(f, &n, f->lfd, POLLIN);
		else if (f->accept_pause < until)
			until = f->accept_pause;
	}
	for (struct pending *p = f->pend; p; p = p->next) {
		p->pfd = -1;
		if (now >= p->recheck)
			p->pfd = add_pfd(f, &n, p->fd, POLLIN);
		else if (p->recheck < until)
			until = p->recheck;
		if (p->since + (double)f->timeout < until)
			until = p->since + (double)f->timeout;
	}
	for (struct h2c *c = f->conns; c; c = c->next) {
		c->pfd = -1;
		if (c->fd < 0)
			continue;
		/* nghttp2 wants to write only what did not fit the socket */
		short ev = (short)((nghttp2_session_want_read(c->ses) ? POLLIN : 0) |
		                   (c->off < c->len ? POLLOUT : 0));
		c->pfd = add_pfd(f, &n, c->fd, ev);
		if (c->last + (double)f->timeout < until)
			until = c->last + (double)f->timeout;
	}
	double ms = (until - now) * 1000.0 + 1.0;
	*wait_ms = ms < 0 ? 0 : (int)ms;
	return n;
}

static void *front_loop(void *arg)
{
	struct srv_front *f = arg;
	for (;;) {
		if (take_requests(f))
			return NULL;
		/* answers submitted just now go out before the wait */
		for (struct h2c *c = f->conns, *next; c; c = next) {
			next = c->next;
			if (c->fd >= 0)
				conn_io(f, c, 0);
		}
		double now = tool_now();
		size_t slots = 1 + (f->lfd >= 0);
		for (struct pending *p = f->pend; p; p = p->next)
			slots++;
		for (struct h2c *c = f->conns; c; c = c->next)
			slots++;
		int wait_ms = 0;
		if (grow_pfds(f, slots)) {
			poll(NULL, 0, 10); /* out of memory: try again shortly */
			continue;
		}
		size_t n = poll_set(f, now, &wait_ms);
		if (poll(f->pfds, (nfds_t)n, wait_ms) < 0 && errno != EINTR)
			poll(NULL, 0, 10);
		now = tool_now();
		/* the listening socket sits at slot 1 when polled */
		if (f->lfd >= 0 && n > 1 && f->pfds[1].fd == f->lfd && f->pfds[1].revents)
			accept_all(f, now);
		for (struct pending *p = f->pend, *next; p; p = next) {
			next = p->next;
			if (p->pfd >= 0 && f->pfds[p->pfd].revents)
				pending_sniff(f, p, now);
			else if (p->pfd < 0 && now >= p->recheck)
				pending_sniff(f, p, now);
			else if (now - p->since > (double)f->timeout)
				pending_free(f, p, 1);
		}
		for (struct h2c *c = f->conns, *next; c; c = next) {
			next = c->next;
			if (c->pfd < 0)
				continue;
			if (f->pfds[c->pfd].revents)
				conn_io(f, c, f->pfds[c->pfd].revents);
			else if (!c->outstanding && now - c->last > (double)f->timeout)
				conn_close(f, c);
		}
	}
}

/* ---- starting and stopping ------------------------------------------------------------------- */

static void wake(struct srv_front *f)
{
	ssize_t w = write(f->wake[1], "w", 1);
	(void)w;
}

int srv_front_start(struct srv *s, int lfd, long client_timeout, srv_http1_fn http1, void *arg,
                    struct srv_front **out)
{
	*out = NULL;
	struct srv_front *f = tool_calloc(1, sizeof *f);
	if (!f) {
		close(lfd);
		return -1;
	}
	f->s = s;
	f->lfd = lfd;
	f->timeout = client_timeout;
	f->http1 = http1;
	f->arg = arg;
	f->wake[0] = f->wake[1] = -1;
	int e = 0;
	if (fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK) ||
	    pipe2(f->wake, O_NONBLOCK | O_CLOEXEC)) {
		e = errno;
	} else if (nghttp2_session_callbacks_new(&f->cbs)) {
		e = -1;
	} else {
		nghttp2_session_callbacks_set_on_begin_headers_callback(f->cbs, on_begin_headers);
		nghttp2_session_callbacks_set_on_header_callback(f->cbs, on_header);
		nghttp2_session_callbacks_set_on_frame_recv_callback(f->cbs, on_frame_recv);
		nghttp2_session_callbacks_set_on_data_chunk_recv_callback(f->cbs, on_data);
		nghttp2_session_callbacks_set_on_stream_close_callback(f->cbs, on_stream_close);
		pthread_mutex_init(&f->lock, NULL);
		e = pthread_create(&f->thread, NULL, front_loop, f);
		if (!e) {
			*out = f;
			return 0;
		}
		pthread_mutex_destroy(&f->lock);
	}
	if (f->cbs)
		nghttp2_session_callbacks_del(f->cbs);
	for (int i = 0; i < 2; i++)
		if (f->wake[i] >= 0)
			close(f->wake[i]);
	close(lfd);
	tool_free(f);
	return e;
}

void srv_front_quiesce(struct srv_front *f)
{
	pthread_mutex_lock(&f->lock);
	f->quiesce = 1;
	pthread_mutex_unlock(&f->lock);
	wake(f);
}

void srv_front_free(struct srv_front *f)
{
	pthread_mutex_lock(&f->lock);
	f->stop = 1;
	pthread_mutex_unlock(&f->lock);
	wake(f);
	pthread_join(f->thread, NULL);
	f->stop = 0;
	take_requests(f); /* the workers are stopped: every stream is back */
	while (f->conns)
		conn_close(f, f->conns);
	while (f->pend)
		pending_free(f, f->pend, 1);
	if (f->lfd >= 0)
		close(f->lfd);
	close(f->wake[0]);
	close(f->wake[1]);
	nghttp2_session_callbacks_del(f->cbs);
	if (f->pfds)
		tool_free(f->pfds);
	pthread_mutex_destroy(&f->lock);
	tool_free(f);
}
