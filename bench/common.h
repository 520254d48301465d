/*
 * common.h: what the benchmark programs of bench/ share (bench, qps,
 * textbench, ann): the median of a set of timings, error messages on
 * stderr, scratch folders and the files in them.  Their clock is base_now() (base/base.h), their
 * seeded draws tests/vecgen.h's splitmix64.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stddef.h>

/* CPU seconds this process has used (all its threads): the steadier clock
 * on a shared machine. */
double bench_cpu_now(void);

/* The median of v[0..n-1], n >= 1 (sorts v). */
double bench_median(double *v, size_t n);

/* Print "PROGRAM: message" and a newline on stderr; returns 1 (an exit
 * status). */
int bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Create the folder path; one already there is fine.  Returns 0, or 1
 * after saying why (bench_fail). */
int bench_make_dir(const char *path);

/* Write the file path (base_write_file: atomically).  Returns 0, or 1
 * after saying why. */
int bench_write_file(const char *path, const void *data, size_t n);

/* Make dir an application folder whose schemas/NAME.sd holds text.
 * Returns 0, or 1 after saying why. */
int bench_write_schema(const char *dir, const char *name, const char *text);

/* One line of a benchmark's goals, "  met|NOT MET|not measured  line",
 * counted in tally[0], [1] or [2]. */
void bench_goal(int *tally, int measured, int met, const char *line);

/* Remove path and everything under it, links not followed.  Returns 0, or
 * -1 with errno set (ENOENT when there was nothing to remove). */
int bench_remove_tree(const char *path);

#endif
