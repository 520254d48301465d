/*
 * firstsum.c: whether a first phase is a non-negative weighted sum of
 * bm25(f), read from its compiled program.
 *
 * The program is run symbolically: each value on the stack is a linear
 * form, a constant plus a weight per field's bm25.  Numbers push a
 * constant, bm25(f) a form of weight 1 on f; +, - and a product or
 * quotient with a constant combine forms; anything else (another feature,
 * a function, a jump, a local) is not such a sum.  The result must have
 * every weight at least 0, so that it grows with each bm25.
 */
#include <math.h>

#include "rank_eval.h"

#define STACK 16

struct form {
	double bias;
	double w[RANK_SUM_FIELDS];
	int field[RANK_SUM_FIELDS];
	int n;
};

/* x + k * y */
static int add(struct form *x, const struct form *y, double k)
{
	x->bias += k * y->bias;
	for (int i = 0; i < y->n; i++) {
		int j = 0;
		while (j < x->n && x->field[j] != y->field[i])
			j++;
		if (j == x->n) {
			if (x->n == RANK_SUM_FIELDS)
				return -1;
			x->field[x->n] = y->field[i];
			x->w[x->n++] = 0;
		}
		x->w[j] += k * y->w[i];
	}
	return 0;
}

static void scale(struct form *x, double k)
{
	x->bias *= k;
	for (int i = 0; i < x->n; i++)
		x->w[i] *= k;
}

int rank_profile_bm25_sum(const struct rank_profile *p, struct rank_bm25_sum *out)
{
	const struct rank_prog *g = &p->first;
	struct form st[STACK];
	int sp = 0;
	if (!p->has_first || g->nlocals)
		return 0;
	for (int pc = 0; pc < g->ncode; pc++) {
		const struct rank_ins *in = &g->code[pc];
		switch (in->op) {
		case RANK_OP_NUM:
		case RANK_OP_TEXT:
			if (sp == STACK || (in->op == RANK_OP_TEXT && in->a != RANK_TF_BM25))
				return 0;
			st[sp] = (struct form){.bias = in->op == RANK_OP_NUM ? in->k : 0};
			if (in->op == RANK_OP_TEXT) {
				st[sp].n = 1;
				st[sp].field[0] = in->b;
				st[sp].w[0] = 1;
			}
			sp++;
			break;
		case RANK_OP_BIN: {
			if (sp < 2)
				return 0;
			struct form *x = &st[sp - 2], *y = &st[sp - 1];
			int rc = 0;
			if (in->a == RB_ADD || in->a == RB_SUB)
				rc = add(x, y, in->a == RB_ADD ? 1 : -1);
			else if (in->a == RB_MUL && !y->n)
				scale(x, y->bias);
			else if (in->a == RB_MUL && !x->n) {
				double k = x->bias;
				*x = *y;
				scale(x, k);
			} else if (in->a == RB_DIV && !y->n && y->bias != 0)
				scale(x, 1 / y->bias);
			else
				return 0;
			if (rc)
				return 0;
			sp--;
			break;
		}
		case RANK_OP_RET: {
			if (sp != 1 || !isfinite(st[0].bias))
				return 0;
			const struct form *r = &st[0];
			int any = 0;
			for (int i = 0; i < r->n; i++) {
				if (!(r->w[i] >= 0) || !isfinite(r->w[i]))
					return 0;
				any |= r->w[i] > 0;
			}
			if (!any)
				return 0;
			out->n = r->n;
			out->bias = r->bias;
			for (int i = 0; i < r->n; i++) {
				out->field[i] = r->field[i];
				out->weight[i] = r->w[i];
			}
			return 1;
		}
		default:
			return 0;
		}
	}
	return 0;
}
