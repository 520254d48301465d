/*
 * ctxhold.c: the context binaries a loaded model maps, held by reference
 * count, and the one piece of process-wide state on the load side.
 *
 * A holder is a mapped binary file or an embedded binary (bytes the model's
 * memory owns), opened and checked once per model (rt_cx_open).  Models
 * keep their holders in m->cx and release them at free.
 *
 * Sharing (ep.share_ep_contexts=1, as ONNX Runtime defines it): a binary
 * holding several compiled graphs is opened by the first session that needs
 * one of them and offered to the sessions that load the others, which take
 * their graph without reading the file again.  The offers are
 * process-wide by that definition, so they live here, in one list behind
 * one mutex that also guards every holder's reference count.  Nothing else
 * in the runtime is shared between models.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctxfile.h"

struct rt_cxhold {
	int refs;                /* under lock */
	struct base_map map;     /* a mapped binary file (map.data NULL otherwise) */
	struct rt_cxfile cf;
	char *path;              /* absolute path of a binary file, NULL when embedded */
	struct stat st;          /* the file as it was opened (offers check it) */
	const void *mem;         /* embedded: the bytes, owned by the model's memory */
	unsigned char *offered;  /* per section: still offered by the shared workspace */
};

/* Guards offers and every holder's refs. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Binaries whose graphs are not all taken yet, each with one reference. */
static struct {
	struct rt_cxhold **h;
	int n, cap;
} offers;

static void hold_free(struct rt_cxhold *h)
{
	if (h->map.data)
		base_unmap(&h->map);
	if (h->path)
		base_strfree(h->path);
	if (h->offered)
		base_free(h->offered, h->cf.nsections);
	base_free(h, sizeof *h);
}

void rt_cxhold_release(struct rt_cxhold *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&lock);
	int last = --h->refs == 0;
	pthread_mutex_unlock(&lock);
	if (last)
		hold_free(h);
}

const struct rt_cxfile *rt_cxhold_file(const struct rt_cxhold *h)
{
	return &h->cf;
}

/* Keep h with m (one reference, already counted). */
static int model_keep(struct rt_model *m, struct rt_cxhold *h, struct strata_error *err)
{
	if (m->ncx == m->capcx) {
		int cap = m->capcx ? 2 * m->capcx : 4;
		struct rt_cxhold **n =
			base_realloc(m->cx, (size_t)m->capcx * sizeof *n, (size_t)cap * sizeof *n);
		if (!n)
			return base_nomem(err, "a compiled context");
		m->cx = n;
		m->capcx = cap;
	}
	m->cx[m->ncx++] = h;
	return 0;
}

/* Map the binary at path (absolute) into a new holder with one reference. */
static int open_file(struct rt_model *m, const char *path, struct rt_cxhold **out,
                     struct strata_error *err)
{
	struct rt_cxhold *h = base_calloc(1, sizeof *h);
	if (!h)
		return base_nomem(err, "a compiled context");
	h->refs = 1;
	h->path = base_strdup(path);
	int rc = h->path ? base_map_file(path, &h->map, err) : base_nomem(err, "a compiled context");
	if (rc == 0 && stat(path, &h->st) != 0)
		memset(&h->st, 0, sizeof h->st);
	if (rc == 0 && ((uintptr_t)h->map.data & 63))
		rc = base_err(err, STRATA_INVALID_GRAPH, "%s: mapped at an unaligned address", path);
	if (rc == 0 && (rc = rt_cx_open(h->map.data, h->map.size, m->opts.ctx_verify, &h->cf, err)))
		base_err_prefix(err, rc, "%s", path);
	if (rc != 0) {
		hold_free(h);
		return rc;
	}
	*out = h;
	return 0;
}

/* The holder of a file binary for m, and section s of it called part ("":
 * its only one).  With sharing on, a graph another session's open offered
 * is taken without reading the file; a new open offers its other graphs. */
int rt_cxhold_open(struct rt_model *m, const char *path, const char *part,
                     struct rt_cxhold **out, struct strata_error *err)
{
	/* The key names the file by its folder's real path: the file itself may
	 * be gone while a graph of it is still offered. */
	const char *slash = strrchr(path, '/');
	char *d = slash ? base_strndup(path, (size_t)(slash - path + (slash == path))) : base_strdup(".");
	char *abs = d ? realpath(d, NULL) : NULL;
	int e = errno;
	if (d)
		base_strfree(d);
	if (!abs)
		return d ? base_err(err, e, "%s: cannot open the context binary: %s", path, strerror(e))
		         : base_nomem(err, "a compiled context");
	char key[2 * PATH_MAX];
	snprintf(key, sizeof key, "%s/%s", strcmp(abs, "/") ? abs : "", slash ? slash + 1 : path);
	free(abs);
	for (int i = 0; i < m->ncx; i++)
		if (m->cx[i]->path && strcmp(m->cx[i]->path, key) == 0) {
			*out = m->cx[i];
			return 0;
		}
	struct rt_cxhold *h = NULL;
	if (m->opts.share) {
		/* An offer stands for the file as it was opened: one written anew at
		 * the same path since then is read again (a file gone is fine, the
		 * graph is in memory). */
		struct stat now;
		int have = stat(key, &now) == 0;
		pthread_mutex_lock(&lock);
		for (int i = 0; i < offers.n && !h; i++) {
			struct rt_cxhold *o = offers.h[i];
			if (have && strcmp(o->path, key) == 0 &&
			    (now.st_ino != o->st.st_ino || now.st_dev != o->st.st_dev ||
			     now.st_size != o->st.st_size || now.st_mtim.tv_sec != o->st.st_mtim.tv_sec ||
			     now.st_mtim.tv_nsec != o->st.st_mtim.tv_nsec)) {
				offers.h[i--] = offers.h[--offers.n];
				if (--o->refs == 0)
					hold_free(o); /* no model holds it: safe outside the lock too */
				continue;
			}
			int s = strcmp(o->path, key) == 0 ? (*part ? rt_cx_find(&o->cf, part) : 0) : -1;
			if (s < 0 || !o->offered[s])
				continue;
			o->offered[s] = 0;
			o->refs++;
			h = o;
			int left = 0;
			for (uint32_t k = 0; k < o->cf.nsections; k++)
				left += o->offered[k];
			if (!left) {
				offers.h[i] = offers.h[--offers.n];
				o->refs--; /* the workspace's reference (o stays: h holds one) */
			}
		}
		pthread_mutex_unlock(&lock);
	}
	int rc = 0;
	if (!h) {
		rc = open_file(m, key, &h, err);
		if (rc != 0)
			return rc;
		if (m->opts.share && h->cf.nsections > 1 &&
		    (h->offered = base_calloc(h->cf.nsections, 1)) != NULL) {
			int s = *part ? rt_cx_find(&h->cf, part) : 0;
			for (uint32_t k = 0; k < h->cf.nsections; k++)
				h->offered[k] = (int)k != s;
			pthread_mutex_lock(&lock);
			if (offers.n == offers.cap) {
				int cap = offers.cap ? 2 * offers.cap : 4;
				struct rt_cxhold **n = base_realloc(offers.h, (size_t)offers.cap * sizeof *n,
				                                    (size_t)cap * sizeof *n);
				if (n) {
					offers.h = n;
					offers.cap = cap;
				}
			}
			if (offers.n < offers.cap) {
				offers.h[offers.n++] = h;
				h->refs++;
			}
			pthread_mutex_unlock(&lock);
		}
	}
	if ((rc = model_keep(m, h, err)) != 0) {
		rt_cxhold_release(h);
		return rc;
	}
	*out = h;
	return 0;
}

/* The holder of an embedded binary (the attribute's bytes, in m's memory). */
int rt_cxhold_embedded(struct rt_model *m, const struct rt_attr *a, struct rt_cxhold **out,
                         struct strata_error *err)
{
	for (int i = 0; i < m->ncx; i++)
		if (m->cx[i]->mem == a->s) {
			*out = m->cx[i];
			return 0;
		}
	if ((uintptr_t)a->s & 63)
		return base_err(err, STRATA_INVALID_GRAPH, "embedded context at an unaligned address");
	struct rt_cxhold *h = base_calloc(1, sizeof *h);
	if (!h)
		return base_nomem(err, "a compiled context");
	h->refs = 1;
	h->mem = a->s;
	int rc = rt_cx_open(a->s, a->slen, m->opts.ctx_verify, &h->cf, err);
	if (rc == 0)
		rc = model_keep(m, h, err);
	if (rc != 0) {
		hold_free(h);
		return rc;
	}
	*out = h;
	return 0;
}
