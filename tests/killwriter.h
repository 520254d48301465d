/*
 * killwriter.h: a writer killed with SIGKILL in the middle of its work, for
 * the crash tests.  kill_after forks a child that commits forever, writing
 * a byte to a pipe after each commit; the parent waits for a number of
 * commits, kills the child, reaps it and checks that the signal ended it.
 * kill_writer does so with a child that opens a store and commits
 * transactions of batch writes.  Include after cmocka.h and store.h.
 */
#ifndef KILLWRITER_H
#define KILLWRITER_H

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "storetest.h"

struct kill_feed {
	const char *dir;                     /* the store */
	const struct store_doctype *type;    /* its one document type */
	/* write j of transaction k in w (document type dt): 0 or an error
	 * (the child exits) */
	int (*write)(void *ud, struct store_txn *w, int dt, long k, int j);
	int batch;  /* writes per transaction */
	long from;  /* the first transaction's k */
	void *ud;
};

static inline void kill_child(void *ud, int fd)
{
	const struct kill_feed *kf = ud;
	struct store_env *env;
	struct strata_error err = {0};
	int dt;
	if (storetest_open(kf->dir, kf->type, &env, &dt, &err) != 0)
		_exit(2);
	for (long k = kf->from;; k++) {
		struct store_txn *w;
		if (store_txn_begin(env, 1, &w, &err) != 0)
			_exit(3);
		for (int j = 0; j < kf->batch; j++)
			if (kf->write(kf->ud, w, dt, k, j) != 0)
				_exit(4);
		if (store_txn_commit(w, &err) != 0)
			_exit(5);
		if (write(fd, "x", 1) != 1)
			_exit(6);
	}
}

/* Fork a child running child(ud, fd), which writes a byte to fd after
 * each commit and never returns; after commits bytes, kill it. */
static inline void kill_after(int commits, void (*child)(void *ud, int fd), void *ud)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child(ud, p[1]);
		_exit(1);
	}
	close(p[1]);
	char buf[64];
	int seen = 0;
	while (seen < commits) {
		ssize_t got = read(p[0], buf, sizeof buf);
		assert_true(got > 0);
		seen += (int)got;
	}
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	close(p[0]);
	assert_true(WIFSIGNALED(st));
}

/* The store writer kf killed after commits commits. */
static inline void kill_writer(int commits, const struct kill_feed *kf)
{
	kill_after(commits, kill_child, (void *)kf);
}

#endif
