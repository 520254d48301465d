/*
 * registry.c: find the operator definition of a node.  Each operator family
 * exports one table (runtime_int.h lists them); a lookup scans them all for
 * the entry of (domain, op) with the largest `since` not above the model's
 * opset, which is how ONNX versions operators: a definition serves from its
 * opset until the next one.  Runs at load time only, so a linear scan is fine.
 */
#include <string.h>

#include "../kernel.h"

static const struct rt_opdef *const tables[] = {
	rt_ops_elementwise, rt_ops_matmul, rt_ops_shape, rt_ops_reduce, rt_ops_normalize,
	rt_ops_conv, rt_ops_pool, rt_ops_nn, rt_ops_index, rt_ops_misc, rt_ops_resize,
	rt_ops_signal, rt_ops_loss, rt_ops_training, rt_ops_random, rt_ops_rnn,
	rt_ops_einsum, rt_ops_quant, rt_ops_string, rt_ops_sequence, rt_ops_control, rt_ops_fused, rt_ops_qlinear, rt_ops_epcontext,
};

const struct rt_opdef *rt_registry_find(const char *domain, const char *op, int opset,
                                        int *found_op)
{
	const struct rt_opdef *best = NULL;
	int any = 0;
	if (!domain || strcmp(domain, "ai.onnx") == 0)
		domain = "";
	for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
		for (const struct rt_opdef *d = tables[t]; d->op; d++) {
			const char *dd = d->domain ? d->domain : "";
			if (strcmp(dd, "ai.onnx") == 0)
				dd = "";
			if (strcmp(d->op, op) != 0 || strcmp(dd, domain) != 0)
				continue;
			any = 1;
			if (d->since <= opset && (!best || d->since > best->since))
				best = d;
		}
	if (found_op)
		*found_op = any && !best;
	return best;
}
