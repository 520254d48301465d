/*
 * fuzz_tokenizer.c: tokenizer files (engine/tokenizer.c).
 *
 * The input is written as a tokenizer.json and loaded, then as a vocab.txt.
 * What loads encodes a few texts and the input itself (accents, CJK,
 * punctuation, spaces, bad UTF-8): every id must be a token of the
 * vocabulary.  A load that fails names the file.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "../../engine/engine_int.h"

static char dir[512];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(dir, sizeof dir, "%s", fuzz_tempdir());
	return 0;
}

static void encode(const struct eng_tokenizer *w, const char *text, size_t len)
{
	int64_t ids[64];
	size_t n;
	struct strata_error err = { 0 };
	int rc = eng_tokenizer_encode(w, text, len, ids, 64, &n, &err);
	if (rc && rc != STRATA_NOMEM)
		fuzz_fail("encode failed with %d: %s", rc, err.msg);
	for (size_t i = 0; !rc && i < n && i < 64; i++)
		if (!eng_tokenizer_token(w, ids[i]))
			fuzz_fail("id %lld of token %zu is no token", (long long)ids[i], i);
}

static void load(const char *name, int vocab_txt, const uint8_t *data, size_t size)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	fuzz_write(dir, name, data, size);
	struct eng_tokenizer *w;
	struct strata_error err = { 0 };
	int rc = eng_tokenizer_load(path, vocab_txt, &w, &err);
	if (rc) {
		if (rc != STRATA_NOMEM && !strstr(err.msg, path))
			fuzz_fail("error %d without the file: \"%s\"", rc, err.msg);
		return;
	}
	static const char *const texts[] = {
		"Hello, World!", "Caf\xc3\xa9 cr\xc3\xa8me \xe4\xb8\xad\xe6\x96\x87", "  a  b  ",
		"\xff\xfe bad \xc3", "unaffable\tx\ny\xc2\xa0z", "",
	};
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
		encode(w, texts[i], strlen(texts[i]));
	encode(w, (const char *)data, size);
	eng_tokenizer_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0])
		LLVMFuzzerInitialize(NULL, NULL);
	uint64_t live = fuzz_live_bytes();
	load("tokenizer.json", 0, data, size);
	load("vocab.txt", 1, data, size);
	fuzz_check_live(live, "tokenizer");
	return 0;
}
