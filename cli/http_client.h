/*
 * http_client.h: a small HTTP/1.1 client for the programs (`strata test`
 * sends its requests with it).  Plain http only: an https:// URL is
 * refused.  One request per connection (Connection: close); the answer is
 * read whole, by Content-Length, chunked, or up to the close.
 *
 *     struct http_response r;
 *     struct strata_error err = { 0 };
 *     const char *hdrs[] = { "Content-Type: application/json", NULL };
 *     if (http_fetch("POST", "http://127.0.0.1:8080/search/", hdrs, body, len, 60, &r, &err))
 *         return tool_fail("%s", err.msg);
 *     ... r.status, r.body (r.len bytes, NUL-terminated) ...
 *     http_response_free(&r);
 *
 * Memory: the response's body is the program's (tool_alloc), freed by
 * http_response_free().  Threads: the functions share nothing; any thread
 * may call them.
 */
#ifndef HTTP_CLIENT_H
#define HTTP_CLIENT_H

#include <stddef.h>

#include "../include/strata.h"

/* The largest response body read: past it the request fails with STRATA_LIMIT. */
#define HTTP_MAX_RESPONSE (256u << 20)

struct http_response {
	int status;   /* the status code, 100-999 */
	char *body;   /* the body, decoded when it came chunked, with a NUL after it */
	size_t len;   /* its length in bytes */
};

/* Split an http URL "http://HOST[:PORT][/PATH][?QUERY]" (HOST a name, an
 * IPv4 address or [IPv6]).  On success *host and *port are new strings
 * (tool_free; port "80" when the URL has none) and *path points into url
 * at the path ("" when there is none, to be sent as "/").  Errors:
 * STRATA_NOT_IMPLEMENTED for https://, STRATA_INVALID_ARGUMENT for any
 * other URL that is not http://, has no host or a bad port,
 * STRATA_NOMEM. */
int http_url_split(const char *url, char **host, char **port, const char **path,
                   struct strata_error *err);

/* Send one request, method (GET, POST, ...) to url, with the header lines
 * in headers (each "Name: value", the array ended by NULL; may be NULL)
 * beside Host, Connection: close and, when body is not NULL or the method
 * is POST or PUT, Content-Length; and read the answer into *out.  Waits at
 * most timeout seconds for each connect, write and read.  Returns 0, or
 * http_url_split()'s errors, a positive errno (the message names the host
 * and what failed: connecting, sending, reading; ETIMEDOUT when the server
 * was silent too long), STRATA_PARSE when the answer is not HTTP/1.x,
 * STRATA_LIMIT when its body is over HTTP_MAX_RESPONSE.  On failure *out
 * holds nothing to free. */
int http_fetch(const char *method, const char *url, const char *const *headers, const char *body,
               size_t len, double timeout, struct http_response *out, struct strata_error *err);

/* Free what *r holds and clear it; a cleared response is ignored. */
void http_response_free(struct http_response *r);

#endif
