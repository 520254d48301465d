/*
 * http_client.c: the programs' HTTP/1.1 client (http_client.h).
 *
 * One connection per request, with Connection: close.  The answer is read
 * into one growing buffer until it is whole: the head (status line and
 * header lines) and then the body by Content-Length, by chunks (decoded
 * in place after the head when the last chunk is in), or up to the
 * server's close when it gives neither.  Every wait (connect, send,
 * receive) is bounded by the caller's timeout, every buffer by
 * HTTP_MAX_RESPONSE.
 */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "http_client.h"
#include "tool.h"

static int fail(struct strata_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct strata_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return code;
}

int http_url_split(const char *url, char **host, char **port, const char **path,
                   struct strata_error *err)
{
	*host = *port = NULL;
	*path = "";
	if (!strncasecmp(url, "https://", 8))
		return fail(err, STRATA_NOT_IMPLEMENTED,
		            "%s: https is not supported: give a plain http:// endpoint", url);
	if (strncasecmp(url, "http://", 7) != 0)
		return fail(err, STRATA_INVALID_ARGUMENT, "%s: not an http:// URL", url);
	const char *h = url + 7, *he, *p;
	if (*h == '[') {
		he = strchr(h, ']');
		if (!he)
			return fail(err, STRATA_INVALID_ARGUMENT, "%s: no ']' after the IPv6 address", url);
		p = he + 1;
		h++;
	} else {
		he = h + strcspn(h, ":/?#");
		p = he;
	}
	if (he == h)
		return fail(err, STRATA_INVALID_ARGUMENT, "%s: no host", url);
	const char *pe = p;
	if (*p == ':') {
		p++;
		pe = p + strspn(p, "0123456789");
		if (pe == p || pe - p > 5 || atoi(p) < 1 || atoi(p) > 65535 ||
		    (*pe && !strchr("/?#", *pe)))
			return fail(err, STRATA_INVALID_ARGUMENT, "%s: bad port", url);
	} else if (*p && !strchr("/?#", *p)) {
		return fail(err, STRATA_INVALID_ARGUMENT, "%s: bad host", url);
	}
	*host = tool_strndup(h, (size_t)(he - h));
	*port = p == pe ? tool_strdup("80") : tool_strndup(p, (size_t)(pe - p));
	if (!*host || !*port) {
		tool_free(*host);
		tool_free(*port);
		*host = *port = NULL;
		return tool_nomem(err, "a URL");
	}
	*path = pe;
	return 0;
}

/* A connected socket to host:port with send and receive timeouts, or -1
 * with err set. */
static int dial(const char *host, const char *port, double timeout, struct strata_error *err,
                int *code)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	int g = getaddrinfo(host, port, &hints, &ai);
	if (g) {
		*code = g == EAI_SYSTEM ? errno : ENOENT;
		fail(err, *code, "cannot find host %s: %s", host, gai_strerror(g));
		return -1;
	}
	struct timeval tv = { .tv_sec = (time_t)timeout,
	                      .tv_usec = (suseconds_t)((timeout - (double)(time_t)timeout) * 1e6) };
	int fd = -1, e = ECONNREFUSED;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		/* SO_SNDTIMEO bounds connect() too (Linux). */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		while (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
			if (errno == EINTR)
				continue;
			e = errno == EINPROGRESS ? ETIMEDOUT : errno;
			close(fd);
			fd = -1;
			break;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		*code = e;
		fail(err, e, "cannot connect to %s:%s: %s", host, port, strerror(e));
	}
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The value of header name in the head [h, e) (lines after the status
 * line), or NULL; *vlen its length. */
static const char *header(const char *h, const char *e, const char *name, size_t *vlen)
{
	size_t n = strlen(name);
	for (const char *l = h; l < e;) {
		const char *le = memchr(l, '\n', (size_t)(e - l));
		if (!le)
			le = e;
		if ((size_t)(le - l) > n && l[n] == ':' && !strncasecmp(l, name, n)) {
			const char *v = l + n + 1, *ve = le;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			*vlen = (size_t)(ve - v);
			return v;
		}
		l = le + 1;
	}
	return NULL;
}

/* Whether the chunked body at b[0, n) is whole, and when write is 1 decode
 * it in place.  1: whole, its length in *out; 0: more is needed (nothing
 * moved); -1: malformed. */
static int dechunk(char *b, size_t n, int write, size_t *out)
{
	size_t r = 0, w = 0;
	for (;;) {
		char *le = memchr(b + r, '\n', n - r);
		if (!le)
			return 0;
		char *end;
		errno = 0;
		unsigned long long sz = strtoull(b + r, &end, 16);
		if (end == b + r || errno || (*end != '\r' && *end != ';' && *end != '\n'))
			return -1;
		size_t data = (size_t)(le - b) + 1;
		if (sz == 0) {
			/* the last chunk, trailers, and the empty line */
			for (size_t t = data;;) {
				char *te = memchr(b + t, '\n', n - t);
				if (!te)
					return 0;
				if (te == b + t || (te == b + t + 1 && b[t] == '\r')) {
					*out = w;
					return 1;
				}
				t = (size_t)(te - b) + 1;
			}
		}
		if (sz > n - data)
			return 0;
		if (n - data - sz < 2)
			return 0;
		if (write)
			memmove(b + w, b + data, sz);
		w += sz;
		r = data + sz;
		if (b[r] == '\r')
			r++;
		if (b[r] != '\n')
			return -1;
		r++;
	}
}

/* Whether buf[0, n) holds a whole answer (eof: the server closed).  1: it
 * does, *out filled (its body taken from buf); 0: read on; < 0: an error. */
static int parse(char *buf, size_t n, int eof, const char *method, struct http_response *out,
                 const char *host, struct strata_error *err)
{
again:;
	char *he = NULL;
	for (size_t i = 0; i + 1 < n && !he; i++)
		if (buf[i] == '\n' && (buf[i + 1] == '\n' || (buf[i + 1] == '\r' && i + 2 < n &&
		                                               buf[i + 2] == '\n')))
			he = buf + i + (buf[i + 1] == '\n' ? 2 : 3);
	if (!he)
		return eof ? fail(err, STRATA_PARSE, "%s: the answer ended before its header did", host)
		           : 0;
	if (n < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ' || buf[9] < '1' ||
	    buf[9] > '9' || buf[10] < '0' || buf[10] > '9' || buf[11] < '0' || buf[11] > '9')
		return fail(err, STRATA_PARSE, "%s: the answer is not HTTP/1.x: %.40s", host, buf);
	int status = atoi(buf + 9);
	char *lines = memchr(buf, '\n', n);
	lines++;
	if (status >= 100 && status < 200) {
		/* an interim answer (100 Continue): the real one follows */
		n -= (size_t)(he - buf);
		buf = he;
		goto again;
	}
	size_t hl = (size_t)(he - buf), vlen = 0, blen;
	const char *te = header(lines, he, "Transfer-Encoding", &vlen);
	const char *cl;
	if (!strcmp(method, "HEAD") || status == 204 || status == 304) {
		blen = 0;
	} else if (te && vlen >= 7 && !strncasecmp(te + vlen - 7, "chunked", 7)) {
		int c = dechunk(he, n - hl, 0, &blen);
		if (c > 0)
			dechunk(he, n - hl, 1, &blen);
		if (c < 0)
			return fail(err, STRATA_PARSE, "%s: a malformed chunked body", host);
		if (!c)
			return eof ? fail(err, STRATA_PARSE, "%s: the chunked body was cut short", host) : 0;
	} else if ((cl = header(lines, he, "Content-Length", &vlen)) != NULL) {
		char *end;
		unsigned long long want = strtoull(cl, &end, 10);
		if (end == cl || end != cl + vlen)
			return fail(err, STRATA_PARSE, "%s: a bad Content-Length", host);
		if (want > HTTP_MAX_RESPONSE)
			return fail(err, STRATA_LIMIT, "%s: the answer's body is over %u bytes", host,
			            HTTP_MAX_RESPONSE);
		if (n - hl < want)
			return eof ? fail(err, STRATA_PARSE, "%s: the body was cut short (%zu of %llu bytes)",
			                  host, n - hl, want)
			           : 0;
		blen = (size_t)want;
	} else {
		if (!eof)
			return 0;
		blen = n - hl;
	}
	out->body = tool_alloc(blen + 1);
	if (!out->body)
		return tool_nomem(err, "an HTTP answer");
	memcpy(out->body, he, blen);
	out->body[blen] = 0;
	out->len = blen;
	out->status = status;
	return 1;
}

int http_fetch(const char *method, const char *url, const char *const *headers, const char *body,
               size_t len, double timeout, struct http_response *out, struct strata_error *err)
{
	memset(out, 0, sizeof *out);
	char *host = NULL, *port = NULL, *req = NULL, *buf = NULL;
	const char *path;
	int rc = http_url_split(url, &host, &port, &path, err);
	if (rc)
		return rc;
	int fd = -1;
	/* the request's head */
	size_t cap = strlen(method) + strlen(path) + strlen(host) + strlen(port) + 256;
	for (const char *const *h = headers; h && *h; h++)
		cap += strlen(*h) + 2;
	req = tool_alloc(cap);
	if (!req) {
		rc = tool_nomem(err, "an HTTP request");
		goto done;
	}
	int ipv6 = strchr(host, ':') != NULL;
	size_t hn = (size_t)snprintf(req, cap, "%s %s%s HTTP/1.1\r\nHost: %s%s%s%s%s\r\n"
	                             "Connection: close\r\nUser-Agent: strata\r\n",
	                             method, *path == '/' ? "" : "/", path, ipv6 ? "[" : "", host,
	                             ipv6 ? "]" : "", strcmp(port, "80") ? ":" : "",
	                             strcmp(port, "80") ? port : "");
	for (const char *const *h = headers; h && *h; h++)
		hn += (size_t)snprintf(req + hn, cap - hn, "%s\r\n", *h);
	if (body || !strcmp(method, "POST") || !strcmp(method, "PUT"))
		hn += (size_t)snprintf(req + hn, cap - hn, "Content-Length: %zu\r\n", body ? len : 0);
	hn += (size_t)snprintf(req + hn, cap - hn, "\r\n");

	fd = dial(host, port, timeout, err, &rc);
	if (fd < 0)
		goto done;
	int e = send_all(fd, req, hn);
	if (!e && body && len)
		e = send_all(fd, body, len);
	if (e) {
		rc = fail(err, e, "sending to %s:%s: %s", host, port, strerror(e));
		goto done;
	}
	size_t n = 0, bcap = 0;
	for (;;) {
		if (bcap - n < 4096) {
			if (bcap > HTTP_MAX_RESPONSE + 65536) {
				rc = fail(err, STRATA_LIMIT, "%s:%s: the answer is over %u bytes", host, port,
				          HTTP_MAX_RESPONSE);
				goto done;
			}
			size_t nc = bcap ? bcap * 2 : 16384;
			char *nb = tool_realloc(buf, nc + 1);
			if (!nb) {
				rc = tool_nomem(err, "an HTTP answer");
				goto done;
			}
			buf = nb;
			bcap = nc;
		}
		ssize_t r = recv(fd, buf + n, bcap - n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
			rc = fail(err, e, "reading from %s:%s: %s", host, port,
			          e == ETIMEDOUT ? "no answer in time" : strerror(e));
			goto done;
		}
		n += (size_t)r;
		buf[n] = 0;
		int p = parse(buf, n, r == 0, method, out, host, err);
		if (p < 0) {
			rc = p;
			goto done;
		}
		if (p)
			break;
	}
	rc = 0;
done:
	if (fd >= 0)
		close(fd);
	tool_free(buf);
	tool_free(req);
	tool_free(host);
	tool_free(port);
	return rc;
}

void http_response_free(struct http_response *r)
{
	tool_free(r->body);
	memset(r, 0, sizeof *r);
}
