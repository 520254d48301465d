/*
 * common.c: the helpers every benchmark program of bench/ shares
 * (common.h).
 */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "../base/base.h"
#include "common.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int bench_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", program_invocation_short_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 1;
}

int bench_make_dir(const char *path)
{
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return bench_fail("cannot create %s: %s", path, strerror(errno));
	return 0;
}

int bench_write_file(const char *path, const void *data, size_t n)
{
	struct strata_error err = {0};
	if (base_write_file(path, data, n, &err) != 0)
		return bench_fail("%s", err.msg);
	return 0;
}

int bench_write_schema(const char *dir, const char *name, const char *text)
{
	char path[4096];
	if (bench_make_dir(dir))
		return 1;
	snprintf(path, sizeof path, "%s/schemas", dir);
	if (bench_make_dir(path))
		return 1;
	snprintf(path, sizeof path, "%s/schemas/%s.sd", dir, name);
	return bench_write_file(path, text, strlen(text));
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

int bench_remove_tree(const char *path)
{
	return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

double bench_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_goal(int *tally, int measured, int met, const char *line)
{
	static const char *const word[] = { "met", "NOT MET", "not measured" };
	int k = !measured ? 2 : met ? 0 : 1;
	tally[k]++;
	printf("  %-13s %s\n", word[k], line);
}
