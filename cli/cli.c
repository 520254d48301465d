/*
 * cli.c: the `strata` command: deploy, feed, query, get, remove (and the
 * model commands run, inspect and compile, in cli_run.c; serve, the HTTP
 * server, in serve.c).
 *
 * Every command is a thin layer over the library API in strata.h: it parses
 * options, calls one or two functions and prints; the program's own
 * helpers are in tool.h.  Conventions: results
 * (JSON) and nothing else go to stdout; errors are one line "strata: ..." on
 * stderr with exit code 1; a usage error prints the command's usage on
 * stderr and exits 2; progress is drawn on stderr only when it is a
 * terminal, except a feed's commits, one line each elsewhere (a program
 * reads them to know what is durable).  The library's log messages go to
 * stderr as "strata: ...".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../include/strata.h"
#include "tool.h"

struct cmd_help {
	const char *name;
	const char *usage;
};

static const struct cmd_help helps[] = {
	{ "deploy",
	  "usage: strata deploy APP [--data DIR]\n"
	  "  Parse and check the application's schemas and rank profiles, compile its\n"
	  "  models into DATA/contexts/ (one shared binary) and create its store.  DATA is\n"
	  "  APP/.strata unless --data is given.  The other commands load a model from its\n"
	  "  context while its source is unchanged, and compile the source otherwise.\n" },
	{ "feed",
	  "usage: strata feed APP [FILE|- ...] [--batch N] [--data DIR]\n"
	  "  Feed Vespa document operations from each FILE in turn (- or none: standard\n"
	  "  input): JSON Lines, a JSON array, or objects over several lines each (one\n"
	  "  pretty-printed operation).  Bad operations are reported as FILE:LINE: message\n"
	  "  (FILE:LINE:COLUMN: for JSON that does not parse) and skipped; a file whose\n"
	  "  array is broken is reported and the next file fed; the exit code is 1 when\n"
	  "  any failed.  Every file is checked readable before anything is fed.  An\n"
	  "  operation whose test-and-set \"condition\" does not match is reported too,\n"
	  "  counted in conditionNotMet, and is no failure.\n"
	  "  Writes are committed in batches of N operations (--batch, default 50000;\n"
	  "  larger batches build a text index faster, smaller ones are durable sooner).\n"
	  "  After each commit a line on stderr says what is durable (it survives a\n"
	  "  crash from then on):\n"
	  "    written N documents, M failed, through line L\n"
	  "  (every operation up to the one on line L is written or reported; with\n"
	  "  several files, \"through line L of FILE\" and the counts of all files); on a\n"
	  "  terminal one progress line is redrawn instead.  JSON Lines on standard\n"
	  "  input are fed as they arrive, and committed before the feed waits for more.\n"
	  "  At the end, \"fed N documents, M failed, R docs/s\" on stderr, and on stdout\n"
	  "  {\"written\": N, \"failed\": M, \"conditionNotMet\": C, \"seconds\": S}, also\n"
	  "  when an error stopped the feed.\n" },
	{ "query",
	  "usage: strata query APP [--yql YQL] [--profile P] [--input 'query(q)=VALUE' ...]\n"
	  "                        [--hits N] [--offset N] [--timeout T] [--data DIR]\n"
	  "  Run a search and print Vespa result JSON.  Without --yql the request (Vespa\n"
	  "  search JSON) is read from standard input.  VALUE is JSON (a number, an array,\n"
	  "  a tensor object) or a tensor literal.  T is the request's \"timeout\"\n"
	  "  (seconds, or 500ms, 2s): at half of it the query stops and prints what it\n"
	  "  has, its \"coverage\" degraded (Vespa's soft timeout).\n" },
	{ "get",
	  "usage: strata get APP ID [--data DIR]\n"
	  "  Print the document ID (id:NAMESPACE:DOCTYPE::KEY) as JSON.\n" },
	{ "remove",
	  "usage: strata remove APP ID [--data DIR]\n"
	  "  Remove the document ID.\n" },
	{ "check",
	  "usage: strata check APP [--data DIR]\n"
	  "  Check the store's indexes against its documents: each text index (its\n"
	  "  blocks and their score bounds, field lengths, frequencies), each fast-search\n"
	  "  dictionary and each nearest-neighbour graph.  Prints JSON, one entry per\n"
	  "  document type (documents, postings, dictionaries, graphs), and exits 0 when\n"
	  "  they agree; else names the first fault and exits 1.\n" },
	{ "run",
	  "usage: strata run MODEL [--input name=JSON ...] [--profile]\n"
	  "  Run an ONNX model once and print its outputs as JSON.  Each input is a\n"
	  "  JSON number or nested array; its shape is taken from the nesting and its\n"
	  "  element type from the model.\n"
	  "  --profile  run it a second time, profiled, and add \"profile\": that run's\n"
	  "             time per operator type (op, calls, ms; the costliest first)\n"
	  "             and \"run_ms\", its whole time\n" },
	{ "inspect",
	  "usage: strata inspect MODEL\n"
	  "  Print a model's inputs and outputs as JSON: name, element type and shape\n"
	  "  (a number per fixed dimension, the name of a symbolic one).\n" },
	{ "compile",
	  "usage: strata compile MODEL.onnx [MODEL.onnx ...] [--embed] [--share] [--prefix P]\n"
	  "                      [-o DIR]\n"
	  "  Compile each model into a context: MODEL_ctx.onnx and its binary\n"
	  "  MODEL_strata.bin beside the model, or in DIR.  Loading the context model (strata\n"
	  "  run, an onnx-model file) maps the compiled graph instead of compiling again.\n"
	  "  Prints one JSON line per model: model, context, binary, ms.\n"
	  "  --embed      put the binary inside the context model (no .bin file)\n"
	  "  --share      one binary for all the models, named after the first; weights\n"
	  "               they share are stored once (a last line gives its size)\n"
	  "  --prefix P   prefix of the compiled graph's name\n"
	  "  -o DIR       write into DIR (created if missing)\n" },
	{ "test",
	  "usage: strata test PATH [--endpoint URL] [--app APP]\n"
	  "  Run Vespa's basic HTTP tests: PATH is a test (.json) or a folder of them\n"
	  "  (APP/tests/system-test, staging-setup, staging-test); an application\n"
	  "  folder runs its tests/system-test.  Without --endpoint, APP (the folder\n"
	  "  above tests/, or --app) is deployed into a temporary data folder and\n"
	  "  served on a free loopback port for the run: its own store is untouched.\n"
	  "  --endpoint URL  send the requests to a running server (http:// only)\n"
	  "  A line per step and per test on stderr, the first mismatch's JSON path\n"
	  "  with expected and actual; on stdout {\"tests\", \"passed\", \"failed\",\n"
	  "  \"failures\"}.  Exit status 1 when a test failed.\n" },
};

static const char *main_usage =
	"usage: strata COMMAND [ARGS]\n"
	"commands:\n"
	"  deploy APP             check an application and create its store\n"
	"  feed APP [FILE...]     feed document operations\n"
	"  query APP --yql YQL    search\n"
	"  get APP ID             print a document\n"
	"  remove APP ID          remove a document\n"
	"  check APP              check the indexes against the documents\n"
	"  run MODEL              run an ONNX model\n"
	"  inspect MODEL          show a model's inputs and outputs\n"
	"  compile MODEL...       compile models into contexts that load without compiling\n"
	"  serve APP              serve searches and documents over HTTP, as Vespa\n"
	"  test PATH              run Vespa's basic HTTP tests (JSON) against the application\n"
	"options: --help, --version; `strata COMMAND --help` for a command's options\n";

static const char *usage_of(const char *cmd)
{
	for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++)
		if (cmd && !strcmp(helps[i].name, cmd))
			return helps[i].usage;
	return main_usage;
}

int tool_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tool_vfail(fmt, ap);
	va_end(ap);
	fputs(usage_of(cmd), stderr);
	return 2;
}

static int is_help(const char *a)
{
	return !strcmp(a, "--help") || !strcmp(a, "-h");
}

/* ---- option parsing ----------------------------------------------------------------- */

#define FEED_FILES_MAX 1024 /* files one `strata feed` takes */

/* Options common to the application commands, and positional arguments. */
struct opts {
	const char *cmd;
	const char *pos[1 + FEED_FILES_MAX]; /* APP, and a feed's files */
	int npos;
	int maxpos;
	const char *data;
	const char *yql;
	const char *profile;
	const char *hits;
	const char *offset;
	const char *batch;
	long feed_batch;      /* --batch, parsed */
	const char *timeout;
	const char *inputs[64];
	int ninputs;
	int want_help;
};

/* The value of option name at argv[*i] ("--name VALUE" or "--name=VALUE"),
 * or NULL when argv[*i] is another option. */
static int opt_value(const char *name, int argc, char **argv, int *i, const char **out,
                     const char *cmd)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*out = a + n + 1;
		return 1;
	}
	if (a[n])
		return 0;
	if (*i + 1 >= argc) {
		*out = NULL;
		return tool_usage(cmd, "option %s needs a value", name), -1;
	}
	*out = argv[++*i];
	return 1;
}

static int parse_opts(struct opts *o, int argc, char **argv, const char *allowed)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (is_help(a)) {
			o->want_help = 1;
			return 0;
		}
		if (a[0] == '-' && a[1] == '-') {
			static const char *names[] = { "--data", "--yql", "--profile", "--hits",
			                               "--offset", "--batch", "--timeout", "--input" };
			const char **slots[] = { &o->data, &o->yql, &o->profile, &o->hits, &o->offset,
			                         &o->batch, &o->timeout, NULL };
			int matched = 0;
			for (size_t k = 0; k < sizeof names / sizeof names[0] && !matched; k++) {
				if (!strstr(allowed, names[k] + 2))
					continue;
				const char *v;
				int r = opt_value(names[k], argc, argv, &i, &v, o->cmd);
				if (r < 0)
					return 2;
				if (!r)
					continue;
				matched = 1;
				if (slots[k]) {
					*slots[k] = v;
				} else {
					if (o->ninputs == (int)(sizeof o->inputs / sizeof o->inputs[0]))
						return tool_usage(o->cmd, "too many --input options");
					o->inputs[o->ninputs++] = v;
				}
			}
			if (!matched)
				return tool_usage(o->cmd, "unknown option '%s'", a);
			continue;
		}
		if (a[0] == '-' && a[1])
			return tool_usage(o->cmd, "unknown option '%s'", a);
		if (o->npos == o->maxpos)
			return tool_usage(o->cmd, "unexpected argument '%s'", a);
		o->pos[o->npos++] = a;
	}
	return 0;
}

/* Open the application: deploy it (deploy = 1) or one deployed before. */
static int open_app(const struct opts *o, int deploy, struct strata **db)
{
	struct strata_error err = { 0 };
	static struct strata_errors errs; /* the CLI opens one application */
	struct strata_options so = { .data_dir = o->data, .log = tool_log, .errors = &errs,
	                             .must_be_deployed = 1 };
	so.feed_batch = o->feed_batch;
	int rc = deploy ? strata_deploy(o->pos[0], &so, db, &err)
	                : strata_open(o->pos[0], &so, db, &err);
	if (!rc)
		return 0;
	/* Every error found, one line each, then how many when more than one. */
	for (int i = 0; i < errs.n; i++)
		tool_fail("%s", errs.e[i].msg[0] ? errs.e[i].msg : strata_strerror(errs.e[i].code));
	if (errs.n == 0)
		tool_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc));
	if (errs.n + errs.dropped > 1)
		tool_fail("%d errors%s", errs.n + errs.dropped,
		          errs.dropped ? " (the first ones are listed)" : "");
	return 1;
}

/* Print a JSON text returned by the library, indented. */
static int print_pretty(const char *text)
{
	json_error_t je;
	int oom;
	json_t *j = tool_json_parse(text, strlen(text), JSON_DECODE_ANY, &je, &oom);
	char *s = j ? strata_json_dump(j, STRATA_JSON_PRETTY) : NULL;
	json_decref(j);
	if (!s) {
		puts(text);
		return 0;
	}
	puts(s);
	strata_free(s);
	return 0;
}

/* ---- commands ----------------------------------------------------------------------- */

static int cmd_deploy(struct opts *o)
{
	if (o->npos < 1)
		return tool_usage("deploy", "missing APP");
	struct strata *db;
	if (open_app(o, 1, &db))
		return 1;
	struct strata_app_info info;
	strata_app_info(db, &info);
	fprintf(stderr, "deployed %s:", o->pos[0]);
	for (int i = 0; i < info.ndoctypes; i++)
		fprintf(stderr, " %s", strata_doctype_name(db, i));
	fprintf(stderr, "%s", info.ndoctypes ? "" : " no document types");
	if (info.ncompiled)
		fprintf(stderr, "; %d model%s compiled into %s/contexts", info.ncompiled,
		        info.ncompiled == 1 ? "" : "s", info.data_dir);
	fputc('\n', stderr);
	strata_close(db);
	return 0;
}

struct feed_ud {
	const char *file;
	int tty;
	int drew;
	int many;                   /* more than one file: commit lines name theirs */
	long ok, failed;            /* the counts of the files fed before this one */
};

/* A message of the library that begins "PREFIX line L, column C: " as
 * FILE:L:C: PREFIX rest, the form of every other position; 0 when msg is
 * not one. */
static int print_at(const char *file, const char *prefix, const char *msg)
{
	char fmt[64];
	long line;
	int col, k = 0;
	snprintf(fmt, sizeof fmt, "%sline %%ld, column %%d: %%n", prefix);
	if (sscanf(msg, fmt, &line, &col, &k) != 2 || k == 0)
		return 0;
	if (*prefix) /* "invalid JSON at " as "invalid JSON: " */
		fprintf(stderr, "%s:%ld:%d: %.*s: %s\n", file, line, col, (int)strlen(prefix) - 4,
		        prefix, msg + k);
	else
		tool_fail("%s:%ld:%d: %s", file, line, col, msg + k);
	return 1;
}

static void feed_report(void *ud, long line, int code, const char *msg)
{
	struct feed_ud *u = ud;
	if (u->drew) {
		fputs("\r\033[K", stderr);
		u->drew = 0;
	}
	if (code == STRATA_PARSE && print_at(u->file, "invalid JSON at ", msg))
		return;
	fprintf(stderr, "%s:%ld: %s\n", u->file, line, msg);
}

/* After each commit: what is durable, one line each (a program reads
 * them).  On a terminal, one line redrawn after each commit and between
 * them: written, applied, how far through the file, the rate and the time
 * left. */
static void feed_progress(void *ud, const struct strata_feed_stats *st)
{
	struct feed_ud *u = ud;
	if (!u->tty) {
		if (st->durable) {
			fprintf(stderr, "written %ld documents, %ld failed, through line %ld",
			        u->ok + st->ok, u->failed + st->failed, st->last_line);
			fprintf(stderr, u->many ? " of %s\n" : "\n", u->file);
		}
		return;
	}
	double rate = st->seconds > 0 ? (double)st->applied / st->seconds : 0;
	fprintf(stderr, "\r\033[Kwritten %ld documents, %ld failed, %.0f docs/s", u->ok + st->ok,
	        u->failed + st->failed, rate);
	if (st->bytes_total > 0) {
		double done = (double)st->bytes_done / (double)st->bytes_total;
		fprintf(stderr, ", %.1f%% of %s", 100 * done, u->file);
		if (done > 0.01 && done < 1)
			fprintf(stderr, ", %.0f s left", st->seconds * (1 - done) / done);
	}
	u->drew = 1;
}

static int cmd_feed(struct opts *o)
{
	if (o->npos < 1)
		return tool_usage("feed", "missing APP");
	static const char *from_stdin[] = { "-" };
	const char **files = o->npos > 1 ? o->pos + 1 : from_stdin;
	int nfiles = o->npos > 1 ? o->npos - 1 : 1;
	if (o->batch) {
		char *end;
		o->feed_batch = strtol(o->batch, &end, 10);
		if (!*o->batch || *end || o->feed_batch < 1 || o->feed_batch > STRATA_FEED_BATCH_MAX)
			return tool_usage("feed", "--batch needs a number from 1 to %d, got '%s'",
			                  STRATA_FEED_BATCH_MAX, o->batch);
	}
	/* Every file readable before anything is fed: a mistyped name feeds
	 * nothing. */
	int dashes = 0;
	for (int i = 0; i < nfiles; i++) {
		if (!strcmp(files[i], "-")) {
			if (dashes++)
				return tool_usage("feed", "standard input (-) can be fed once");
			continue;
		}
		FILE *f = fopen(files[i], "r");
		if (!f) {
			int e = errno;
			printf("{\"written\": 0, \"failed\": 0, \"conditionNotMet\": 0, "
			       "\"seconds\": 0.000}\n"); /* for a program, as always */
			fflush(stdout);
			return tool_fail("%s: %s", files[i], strerror(e));
		}
		fclose(f);
	}
	struct strata *db;
	if (open_app(o, 0, &db))
		return 1;
	struct feed_ud u = { NULL, isatty(2), 0, nfiles > 1, 0, 0 };
	long not_met = 0;
	double seconds = 0;
	int rc = 0, bad_files = 0;
	struct strata_error err = { 0 };
	for (int i = 0; i < nfiles; i++) {
		struct strata_feed_stats st;
		u.file = strcmp(files[i], "-") ? files[i] : "<stdin>";
		memset(&err, 0, sizeof err);
		rc = strata_feed_file_progress(db, files[i], feed_report, feed_progress, &u, &st, &err);
		if (u.drew)
			fputs("\r\033[K", stderr), u.drew = 0;
		u.ok += st.ok;
		u.failed += st.failed;
		not_met += st.not_met;
		seconds += st.seconds;
		if (rc == STRATA_PARSE) {
			/* The file's own frame is broken (its operations before the
			 * fault are in): say where, and go on with the next file. */
			if (!print_at(u.file, "", err.msg))
				tool_fail("%s: %s", u.file, err.msg[0] ? err.msg : strata_strerror(rc));
			bad_files++;
			rc = 0;
		} else if (rc && rc != STRATA_INVALID_ARGUMENT) {
			break; /* the store, memory, input: the feed stops here */
		}
	}
	strata_close(db);
	/* What was written, for a program, even when the feed was stopped. */
	printf("{\"written\": %ld, \"failed\": %ld, \"conditionNotMet\": %ld, \"seconds\": %.3f}\n",
	       u.ok, u.failed, not_met, seconds);
	fflush(stdout);
	if (rc && rc != STRATA_INVALID_ARGUMENT)
		return tool_fail("%s%s%s", nfiles > 1 ? u.file : "", nfiles > 1 ? ": " : "",
		                 err.msg[0] ? err.msg : strata_strerror(rc));
	double rate = seconds > 0 ? (double)u.ok / seconds : 0;
	fprintf(stderr, "fed %ld documents, %ld failed, %.0f docs/s", u.ok, u.failed, rate);
	if (nfiles > 1)
		fprintf(stderr, " from %d files", nfiles);
	if (bad_files)
		fprintf(stderr, "; %d file%s broken", bad_files, bad_files == 1 ? "" : "s");
	if (not_met)
		fprintf(stderr, "; %ld left out by their condition", not_met);
	fputc('\n', stderr);
	return u.failed || bad_files ? 1 : 0;
}

/* The whole of standard input as a string (tool_free). */
static int read_all_stdin(char **out)
{
	size_t cap = 65536, n = 0;
	char *buf = tool_alloc(cap);
	if (!buf)
		return -1;
	size_t r;
	while ((r = fread(buf + n, 1, cap - n - 1, stdin)) > 0) {
		n += r;
		if (cap - n - 1 == 0) {
			char *nb = tool_realloc(buf, cap * 2);
			if (!nb) {
				tool_free(buf);
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
	}
	buf[n] = 0;
	*out = buf;
	return 0;
}

/* "query(q)=VALUE" or "q=VALUE" into the request as "input.query(q)". */
static int add_input(json_t *req, const char *arg)
{
	const char *eq = strchr(arg, '=');
	const char *close = strchr(arg, ')');
	if (close && eq && close < eq + 1 && close[1] == '=')
		eq = close + 1;
	if (!eq || eq == arg)
		return tool_usage("query", "--input needs NAME=VALUE, got '%s'", arg);
	char key[512];
	size_t nl = (size_t)(eq - arg);
	if (nl > 300)
		return tool_usage("query", "--input name too long");
	if (!strncmp(arg, "query(", 6))
		snprintf(key, sizeof key, "input.%.*s", (int)nl, arg);
	else
		snprintf(key, sizeof key, "input.query(%.*s)", (int)nl, arg);
	json_object_set_new(req, key, tool_input_value(eq + 1));
	return 0;
}

/* Free a request text: the library's (strata_json_dump) or the program's. */
static void free_text(char *text, int lib_text)
{
	if (lib_text)
		strata_free(text);
	else
		tool_free(text);
}

static int cmd_query(struct opts *o)
{
	if (o->npos < 1)
		return tool_usage("query", "missing APP");
	char *text = NULL;
	int lib_text = 0; /* text is the library's (strata_free), else the program's */
	if (!o->yql) {
		if (o->profile || o->ninputs || o->hits || o->offset || o->timeout)
			return tool_usage("query", "--profile, --input, --hits, --offset and --timeout "
			                  "need --yql (a request on standard input has its own)");
		if (isatty(0))
			return tool_usage("query", "give --yql or a request on standard input");
		if (read_all_stdin(&text) != 0)
			return tool_fail("cannot read standard input");
	} else {
		json_t *req = json_object();
		json_object_set_new(req, "yql", json_string(o->yql));
		if (o->profile)
			json_object_set_new(req, "ranking.profile", json_string(o->profile));
		if (o->timeout) /* the library reads it, and says what is wrong with it */
			json_object_set_new(req, "timeout", json_string(o->timeout));
		for (int i = 0; i < o->ninputs; i++)
			if (add_input(req, o->inputs[i])) {
				json_decref(req);
				return 2;
			}
		const char *counts[2] = { o->hits, o->offset };
		const char *names[2] = { "hits", "offset" };
		for (int i = 0; i < 2; i++) {
			if (!counts[i])
				continue;
			char *end;
			long v = strtol(counts[i], &end, 10);
			if (!*counts[i] || *end || v < 0) {
				json_decref(req);
				return tool_usage("query", "--%s needs a number, got '%s'", names[i],
				                  counts[i]);
			}
			json_object_set_new(req, names[i], json_integer(v));
		}
		text = strata_json_dump(req, 0);
		json_decref(req);
		if (!text)
			return tool_fail("out of memory");
		lib_text = 1;
	}
	struct strata *db;
	if (open_app(o, 0, &db)) {
		free_text(text, lib_text);
		return 1;
	}
	char *result;
	struct strata_error err = { 0 };
	int rc = strata_query_json(db, text, &result, &err);
	free_text(text, lib_text);
	if (rc) {
		strata_close(db);
		return tool_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc));
	}
	print_pretty(result);
	strata_free(result);
	strata_close(db);
	return 0;
}

static int cmd_get(struct opts *o)
{
	if (o->npos < 2)
		return tool_usage("get", o->npos ? "missing ID" : "missing APP");
	struct strata *db;
	if (open_app(o, 0, &db))
		return 1;
	char *doc;
	struct strata_error err = { 0 };
	int rc = strata_get_json(db, o->pos[1], &doc, &err);
	if (!rc) {
		print_pretty(doc);
		strata_free(doc);
	}
	strata_close(db);
	return rc ? tool_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc)) : 0;
}

static int cmd_remove(struct opts *o)
{
	if (o->npos < 2)
		return tool_usage("remove", o->npos ? "missing ID" : "missing APP");
	struct strata *db;
	if (open_app(o, 0, &db))
		return 1;
	struct strata_error err = { 0 };
	int rc = strata_remove(db, o->pos[1], &err);
	strata_close(db);
	return rc ? tool_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc)) : 0;
}

static int cmd_check(struct opts *o)
{
	if (o->npos < 1)
		return tool_usage("check", "missing APP");
	struct strata *db;
	if (open_app(o, 0, &db))
		return 1;
	char *report = NULL;
	struct strata_error err = { 0 };
	int rc = strata_check(db, &report, &err);
	if (!rc) {
		print_pretty(report);
		strata_free(report);
	}
	strata_close(db);
	return rc ? tool_fail("%s", err.msg[0] ? err.msg : strata_strerror(rc)) : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return tool_usage(NULL, "no command given");
	const char *cmd = argv[1];
	if (is_help(cmd)) {
		fputs(main_usage, stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("strata %s (kernels: %s)\n", STRATA_VERSION, strata_kernels());
		return 0;
	}
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} model_cmds[] = {
		{ "run", cli_cmd_run },
		{ "inspect", cli_cmd_inspect },
		{ "compile", cli_cmd_compile },
		{ "serve", srv_cmd_serve }, /* prints its own --help */
		{ "test", cli_cmd_test },
	};
	for (size_t i = 0; i < sizeof model_cmds / sizeof model_cmds[0]; i++) {
		if (strcmp(model_cmds[i].name, cmd) != 0)
			continue;
		for (int k = 2; k < argc && model_cmds[i].fn != srv_cmd_serve; k++)
			if (is_help(argv[k])) {
				fputs(usage_of(cmd), stdout);
				return 0;
			}
		return model_cmds[i].fn(argc - 1, argv + 1);
	}
	static const struct {
		const char *name;
		int (*fn)(struct opts *);
		int maxpos;
		const char *allowed;
	} cmds[] = {
		{ "deploy", cmd_deploy, 1, "data" },
		{ "feed", cmd_feed, 1 + FEED_FILES_MAX, "data batch" },
		{ "query", cmd_query, 1, "data yql profile hits offset timeout input" },
		{ "get", cmd_get, 2, "data" },
		{ "remove", cmd_remove, 2, "data" },
		{ "check", cmd_check, 1, "data" },
	};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		if (strcmp(cmds[i].name, cmd) != 0)
			continue;
		struct opts o = { .cmd = cmd, .maxpos = cmds[i].maxpos };
		int rc = parse_opts(&o, argc - 1, argv + 1, cmds[i].allowed);
		if (rc)
			return rc;
		if (o.want_help) {
			fputs(usage_of(cmd), stdout);
			return 0;
		}
		return cmds[i].fn(&o);
	}
	if (cmd[0] == '-')
		return tool_usage(NULL, "unknown option '%s'", cmd);
	return tool_usage(NULL, "unknown command '%s'", cmd);
}
