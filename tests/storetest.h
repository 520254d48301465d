/*
 * storetest.h: a store in a temporary folder, for the tests of the store:
 * storetest_open opens it with one document type, storetest_rmdir removes
 * the folder.  Include after cmocka.h and store.h.
 */
#ifndef STORETEST_H
#define STORETEST_H

#include <ftw.h>
#include <stdio.h>

static inline int storetest_rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline void storetest_rmdir(const char *dir)
{
	nftw(dir, storetest_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* Open the store in dir and add type: 0 with *env and *dt, or the error
 * code (nothing left open). */
static inline int storetest_open(const char *dir, const struct store_doctype *type,
                          struct store_env **env, int *dt, struct strata_error *err)
{
	int rc = store_open(dir, env, err);
	if (rc)
		return rc;
	if ((rc = store_doctype_add(*env, type, dt, err)) != 0) {
		store_close(*env);
		*env = NULL;
	}
	return rc;
}

#endif
