/*
 * file.c: reading files.  Models and external tensor data are memory-mapped
 * read-only, never copied; schemas and feeds are read whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

int base_map_file(const char *path, struct base_map *m, struct strata_error *err)
{
	m->data = NULL;
	m->size = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return base_err(err, errno, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return base_err(err, e, "%s: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return base_err(err, EINVAL, "%s: not a regular file", path);
	}
	if (st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			int e = errno;
			close(fd);
			return base_err(err, e, "%s: cannot map: %s", path, strerror(e));
		}
		m->data = p;
		m->size = (size_t)st.st_size;
	}
	close(fd);
	return 0;
}

void base_unmap(struct base_map *m)
{
	if (m->data && m->size)
		munmap((void *)m->data, m->size);
	m->data = NULL;
	m->size = 0;
}

int base_read_file(const char *path, char **out, size_t *n, struct strata_error *err)
{
	*out = NULL;
	*n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return base_err(err, errno, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		int e = errno ? errno : EINVAL;
		close(fd);
		return base_err(err, e, "%s: not a readable regular file", path);
	}
	size_t size = (size_t)st.st_size;
	char *buf = base_alloc(size + 1);
	if (!buf) {
		close(fd);
		return base_nomem(err, "%s: %zu bytes", path, size);
	}
	size_t got = 0;
	while (got < size) {
		ssize_t r = read(fd, buf + got, size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? errno : EIO;
			close(fd);
			base_free(buf, size + 1);
			return base_err(err, e, "%s: read failed: %s", path, strerror(e));
		}
		got += (size_t)r;
	}
	close(fd);
	buf[size] = 0;
	*out = buf;
	*n = size;
	return 0;
}

int base_write_file(const char *path, const void *p, size_t n, struct strata_error *err)
{
	size_t len = strlen(path);
	char *tmp = base_alloc(len + 5);
	if (!tmp)
		return base_nomem(err, "writing %s", path);
	memcpy(tmp, path, len);
	memcpy(tmp + len, ".tmp", 5);
	int rc = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = base_err(err, errno, "%s: cannot create: %s", tmp, strerror(errno));
		base_free(tmp, len + 5);
		return rc;
	}
	const char *c = p;
	size_t done = 0;
	int e = 0;
	while (done < n && !e) {
		ssize_t w = write(fd, c + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			e = w < 0 ? errno : EIO;
		else
			done += (size_t)w;
	}
	if (close(fd) != 0 && !e)
		e = errno;
	if (!e && rename(tmp, path) != 0)
		e = errno;
	if (e) {
		unlink(tmp);
		rc = base_err(err, e, "%s: cannot write: %s", path, strerror(e));
	}
	base_free(tmp, len + 5);
	return rc;
}

char *base_path_join(const char *dir, const char *name)
{
	if (name[0] == '/' || !dir || !dir[0])
		return base_strdup(name);
	size_t a = strlen(dir), b = strlen(name);
	int slash = dir[a - 1] != '/';
	char *p = base_alloc(a + slash + b + 1);
	if (!p)
		return NULL;
	memcpy(p, dir, a);
	if (slash)
		p[a] = '/';
	memcpy(p + a + slash, name, b + 1);
	return p;
}

double base_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
