/*
 * options.c: session options.  A caller sets options as string keys and
 * values (the shape ONNX Runtime's session configuration has), and each key
 * is parsed strictly here, once: an unknown key, or a value that is not
 * exactly one of the accepted spellings ("1foo", "", "-1" where a count is
 * wanted), is STRATA_INVALID_ARGUMENT naming the key and the value.  The
 * loader copies what it needs into the model, so options may be freed after
 * a load.
 */
#include <stddef.h>
#include <string.h>

#include "kernel.h"
#include "runtime_int.h"

void rt_options_default(struct rt_options *o)
{
	memset(o, 0, sizeof *o);
	o->opt_level = RT_OPT_ALL;
	o->pool_gens = 1;
}

int runtime_options_new(struct rt_options **out, struct strata_error *err)
{
	*out = base_alloc(sizeof **out);
	if (!*out)
		return base_nomem(err, "session options");
	rt_options_default(*out);
	return 0;
}

void runtime_options_free(struct rt_options *o)
{
	if (o)
		base_free(o, sizeof *o);
}

/* The index of value among names (NULL-terminated), or -1. */
static int one_of(const char *value, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(value, names[i]) == 0)
			return i;
	return -1;
}

int runtime_options_set(struct rt_options *o, const char *key, const char *value,
                        struct strata_error *err)
{
	if (!o || !key || !value)
		return base_err(err, STRATA_INVALID_ARGUMENT, "session option: no key or value");
	if (strcmp(key, "session.graph_optimization_level") == 0) {
		static const char *const levels[] = { "disabled", "basic", "all", NULL };
		int v = one_of(value, levels);
		if (v < 0)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "session option %s: '%s' is not one of disabled, basic, all", key,
			                value);
		o->opt_level = v;
		return 0;
	}
	if (strcmp(key, "session.buffer_pool_generations") == 0) {
		/* digits only: no sign, no blanks, nothing after */
		long v = 0;
		const char *c = value;
		for (; *c >= '0' && *c <= '9' && v <= RUNTIME_POOL_MAX; c++)
			v = v * 10 + (*c - '0');
		if (c == value || *c || v > RUNTIME_POOL_MAX)
			return base_err(err, STRATA_INVALID_ARGUMENT,
			                "session option %s: '%s' is not a count from 0 to %d", key, value,
			                RUNTIME_POOL_MAX);
		o->pool_gens = (int)v;
		return 0;
	}
	static const struct {
		const char *key;
		size_t off;
	} flags[] = {
		{ "ep.context_enable", offsetof(struct rt_options, ctx_enable) },
		{ "ep.context_embed_mode", offsetof(struct rt_options, ctx_embed) },
		{ "ep.share_ep_contexts", offsetof(struct rt_options, share) },
		{ "ep.stop_share_ep_contexts", offsetof(struct rt_options, stop_share) },
		{ "ep.context_verify_weights", offsetof(struct rt_options, ctx_verify) },
		{ "session.check_shapes", offsetof(struct rt_options, check_shapes) },
		{ "session.bf16_weights", offsetof(struct rt_options, bf16_weights) },
	}, strs[] = {
		{ "ep.context_file_path", offsetof(struct rt_options, ctx_file_path) },
		{ "ep.context_node_name_prefix", offsetof(struct rt_options, ctx_prefix) },
		{ "session.model_external_initializers_file_folder_path",
		  offsetof(struct rt_options, ext_folder) },
		{ "ep.context_model_external_initializers_file_name",
		  offsetof(struct rt_options, ctx_ext_name) },
	};
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
		if (strcmp(key, flags[i].key) == 0) {
			static const char *const bits[] = { "0", "1", NULL };
			int v = one_of(value, bits);
			if (v < 0)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "session option %s: '%s' is not 0 or 1", key, value);
			*(int *)((char *)o + flags[i].off) = v;
			return 0;
		}
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
		if (strcmp(key, strs[i].key) == 0) {
			size_t n = strlen(value);
			if (n >= RT_OPT_STR)
				return base_err(err, STRATA_INVALID_ARGUMENT,
				                "session option %s: the value is longer than %d bytes", key,
				                RT_OPT_STR - 1);
			memcpy((char *)o + strs[i].off, value, n + 1);
			return 0;
		}
	return base_err(err, STRATA_INVALID_ARGUMENT, "unknown session option '%s'", key);
}

const char *runtime_isa(void)
{
	return rt_cpu_isa() == RT_ISA_AVX512 ? "avx512" : "avx2";
}

const char *runtime_bf16_isa(void)
{
	if (rt_cpu_isa() != RT_ISA_AVX512 || !rt_cpu_bf16_faster())
		return "float";
	return rt_cpu_amx() ? "amx-bf16" : "avx512-bf16";
}

const char *runtime_int8_isa(void)
{
	switch (rt_qgemm_isa()) {
	case RT_QGEMM_AMX: return "amx-int8";
	case RT_QGEMM_VNNI: return "avx512-vnni";
	case RT_QGEMM_VNNI256: return rt_cpu_avxvnni() ? "avx-vnni" : "avx512-vnni";
	}
	return "avx2";
}
