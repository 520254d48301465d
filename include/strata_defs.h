/*
 * strata_defs.h: what every layer of the Strata library shares with its
 * users: the release, the error codes and the structs that describe a
 * failure.  strata.h includes it; so does base/base.h, under every other
 * layer, which is why it stands alone: it includes nothing but <stddef.h>.
 *
 * Errors: every fallible call returns 0 on success, a negative STRATA_* code
 * below, or a positive errno value passed through from the system.  When a
 * struct strata_error is given it receives the code and a message; messages
 * about a file begin with "file:line:column: ".  strata_strerror() names any
 * code.  The codes are append-only.
 */
#ifndef STRATA_DEFS_H
#define STRATA_DEFS_H

#include <stddef.h>

/* The release: contexts compiled by another release are refused. */
#define STRATA_VERSION "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

enum strata_code {
	STRATA_OK = 0,
	STRATA_ERROR = -1,            /* failure that fits no other code */
	STRATA_NOMEM = -2,            /* out of memory, or an injected allocation fault */
	STRATA_INVALID_ARGUMENT = -3, /* a bad value from the caller: option, input, shape, document */
	STRATA_NOT_FOUND = -4,        /* no such document, field, profile, feature, input or file entry */
	STRATA_PARSE = -5,            /* syntax error in a schema, expression, YQL or JSON */
	STRATA_TYPE = -6,             /* type error in a schema or expression */
	STRATA_NOT_IMPLEMENTED = -7,  /* a valid construct or operator this version lacks */
	STRATA_INVALID_GRAPH = -8,    /* a model graph that cannot be run */
	STRATA_INVALID_PROTOBUF = -9, /* a model file that is not a readable ONNX protobuf */
	STRATA_CORRUPT = -10,         /* a stored record or file fails its checks */
	STRATA_LIMIT = -11,           /* a hard limit was reached */
	STRATA_STORE = -12,           /* the store (LMDB) reported an error; the message says which */
	STRATA_TXN_FAILED = -13,      /* the transaction failed earlier and must be aborted */
	STRATA_EXISTS = -14,          /* the thing to create already exists */
	STRATA_RUNTIME = -15,         /* a model failed while running (bad index, shape mismatch) */
	STRATA_TIMEOUT = -16,         /* a search ran past its timeout (soft timeout off) */
	STRATA_CONDITION_FAILED = -17, /* a test-and-set condition did not match the stored
	                                  document, or there was none: nothing was written */
};

#define STRATA_ERRMSG_MAX 1024

/* Where a failure is described.  code repeats the return value; msg is
 * NUL-terminated and empty when there is nothing to add to the code. */
struct strata_error {
	int code;
	char msg[STRATA_ERRMSG_MAX];
};

/* Every error one check of an application found (strata_options.errors),
 * in the order found: its schema files in name order, and in each its
 * fields, rank-profiles and other items from the top.  After an error the
 * check goes on with the next field, item of a rank-profile (function,
 * phase, inputs, ...), schema item or schema file (an item is skipped to
 * its closing brace); profiles are type-checked
 * in the files that parsed, each on its own, but for those whose
 * inheritance failed (an unknown parent, a cycle).  Out of memory stops the check at once.  At most
 * STRATA_MAX_ERRORS are kept; dropped counts the others. */
#define STRATA_MAX_ERRORS 20
struct strata_errors {
	int n;
	int dropped;
	struct strata_error e[STRATA_MAX_ERRORS];
};

/* A short, static description of code (negative STRATA_* or positive errno). */
const char *strata_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif
