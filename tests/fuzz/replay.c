/*
 * replay.c: runs a fuzz target without libFuzzer, over files.
 *
 *     build/tests/fuzz/replay_sd tests/fuzz/corpus/sd [more dirs or files]
 *
 * Linked with one fuzz_<name>.c (the same source libFuzzer drives in make
 * fuzz), it calls LLVMFuzzerInitialize once and LLVMFuzzerTestOneInput on
 * every regular file of each directory, in name order, each in a buffer of
 * exactly its size so that the sanitizers see any read past the end.  A
 * finding aborts or ends in a sanitizer report, and the file that caused
 * it is named on stderr; the summary line counts the inputs.  make fuzz-replay runs it over the committed corpora, where every
 * input that once crashed stays as a regression test.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Present in sanitizer builds: called before a report ends the process. */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static const char *current; /* the input being run */

static void name_current(void)
{
	if (!current)
		return;
	static const char what[] = "replay: the finding above comes from ";
	(void)!write(2, what, sizeof what - 1);
	(void)!write(2, current, strlen(current));
	(void)!write(2, "\n", 1);
}

static void on_signal(int sig)
{
	name_current();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Name the input that ends the process: through the sanitizers' death
 * callback where they run (they own the fatal signals), else from the
 * signals themselves. */
static void catch_findings(void)
{
	if (__sanitizer_set_death_callback) {
		__sanitizer_set_death_callback(name_current);
		signal(SIGABRT, on_signal); /* fuzz_fail() aborts without a report */
		return;
	}
	int sigs[] = { SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL };
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		signal(sigs[i], on_signal);
}

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fileno(f), &st) != 0) {
		fclose(f);
		return -1;
	}
	size_t n = (size_t)st.st_size;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf || fread(buf, 1, n, f) != n) {
		fprintf(stderr, "replay: %s: cannot read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	current = path;
	LLVMFuzzerTestOneInput(buf, n);
	current = NULL;
	free(buf);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays every regular file of dir; returns how many, or -1. */
static long replay_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			char **grown = realloc(names, cap * sizeof *names);
			if (!grown)
				abort();
			names = grown;
		}
		size_t len = strlen(dir) + strlen(de->d_name) + 2;
		if (!(names[n] = malloc(len)))
			abort();
		snprintf(names[n++], len, "%s/%s", dir, de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof *names, by_name);
	long count = 0;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
			if (replay_file(names[i]) != 0)
				count = -1;
			else if (count >= 0)
				count++;
		}
		free(names[i]);
	}
	free(names);
	return count;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	catch_findings();
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	long total = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		long k;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			k = replay_dir(argv[i]);
		else
			k = replay_file(argv[i]) == 0 ? 1 : -1;
		if (k < 0) {
			fprintf(stderr, "replay: %s: nothing replayed\n", argv[i]);
			return 1;
		}
		total += k;
	}
	const char *name = strrchr(argv[0], '/');
	printf("%s: %ld inputs replayed, no finding\n", name ? name + 1 : argv[0], total);
	return 0;
}
