/*
 * yql_tree.c: what the rest of the engine does with a parsed YQL condition
 * tree (yql.c makes it): walking it (yql_each), testing a number against a
 * comparison or range node, and dumping it as text for tests and
 * diagnostics.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine_int.h"

/* ---- dump (tests, diagnostics) ---------------------------------------------------- */

static void dump_to(const struct yql_node *n, char *buf, size_t cap, size_t *len)
{
	static const char *ops[] = { "", "<", "<=", ">", ">=", "=" };
	char tmp[512];
	tmp[0] = 0;
	switch (n->kind) {
	case YQL_TRUE: snprintf(tmp, sizeof tmp, "TRUE"); break;
	case YQL_FALSE: snprintf(tmp, sizeof tmp, "FALSE"); break;
	case YQL_CMP: snprintf(tmp, sizeof tmp, "%s%s%g", n->field, ops[n->op], n->num); break;
	case YQL_RANGE:
		snprintf(tmp, sizeof tmp, "RANGE(%s,%g,%g)", n->field, n->lo, n->hi);
		break;
	case YQL_CONTAINS: snprintf(tmp, sizeof tmp, "%s CONTAINS \"%s\"", n->field, n->str); break;
	case YQL_MATCHES: snprintf(tmp, sizeof tmp, "%s MATCHES \"%s\"", n->field, n->str); break;
	case YQL_IN: {
		size_t k = (size_t)snprintf(tmp, sizeof tmp, "%s IN (", n->field);
		for (int i = 0; i < n->nvals && k < sizeof tmp; i++) {
			if (n->strs)
				k += (size_t)snprintf(tmp + k, sizeof tmp - k, "%s\"%s\"", i ? "," : "",
				                      n->strs[i]);
			else
				k += (size_t)snprintf(tmp + k, sizeof tmp - k, "%s%g", i ? "," : "", n->nums[i]);
		}
		if (k < sizeof tmp)
			snprintf(tmp + k, sizeof tmp - k, ")");
		break;
	}
	case YQL_NN:
		snprintf(tmp, sizeof tmp, "NN(%s,%s,%ld%s%s)", n->field, n->input, n->target_hits,
		         n->label ? ",label=" : "", n->label ? n->label : "");
		break;
	case YQL_PREDICATE: {
		size_t k = (size_t)snprintf(tmp, sizeof tmp, "PREDICATE(%s", n->field);
		for (int i = 0; i < n->nvals && k < sizeof tmp; i++)
			k += (size_t)snprintf(tmp + k, sizeof tmp - k, ",%s=%s", n->strs[2 * i],
			                      n->strs[2 * i + 1]);
		for (int i = 0; i < n->nranges && k < sizeof tmp; i++)
			k += (size_t)snprintf(tmp + k, sizeof tmp - k, ",%s:%lld", n->rkeys[i],
			                      (long long)n->rvals[i]);
		if (k < sizeof tmp)
			snprintf(tmp + k, sizeof tmp - k, ")");
		break;
	}
	case YQL_GEO:
		snprintf(tmp, sizeof tmp, "GEO(%s,%g,%g,%s)", n->field, n->lo, n->hi, n->str);
		break;
	case YQL_USERQUERY: snprintf(tmp, sizeof tmp, "USERQUERY()"); break;
	case YQL_SAME: {
		size_t k = (size_t)snprintf(tmp, sizeof tmp, "%s SAMEELEMENT(", n->field);
		for (int i = 0; i < n->nvals && k < sizeof tmp; i++)
			k += (size_t)snprintf(tmp + k, sizeof tmp - k, "%s\"%s\"", i ? "," : "", n->strs[i]);
		if (k < sizeof tmp)
			snprintf(tmp + k, sizeof tmp - k, ")");
		break;
	}
	case YQL_WSET: {
		static const char *const names[] = { "", "DOTPRODUCT", "WAND", "WEIGHTEDSET" };
		size_t k = (size_t)snprintf(tmp, sizeof tmp, "%s(%s,{", names[n->op], n->field);
		for (int i = 0; i < n->nvals && k < sizeof tmp; i++)
			k += (size_t)snprintf(tmp + k, sizeof tmp - k, "%s\"%s\":%g", i ? "," : "",
			                      n->strs[i], n->nums[i]);
		if (k < sizeof tmp)
			snprintf(tmp + k, sizeof tmp - k, "}%s%s)", n->label ? ",label=" : "",
			         n->label ? n->label : "");
		break;
	}
	case YQL_USERINPUT:
		if (n->str)
			snprintf(tmp, sizeof tmp, "USERINPUT(@%s)", n->str);
		else
			snprintf(tmp, sizeof tmp, "USERINPUT(\"%s\")", n->field);
		break;
	case YQL_AND: case YQL_OR: case YQL_NOT: case YQL_RANK: case YQL_WEAKAND: {
		char name[48];
		if (n->kind == YQL_WEAKAND)
			snprintf(name, sizeof name, "WEAKAND(%ld;", n->target_hits);
		else
			snprintf(name, sizeof name, "%s", n->kind == YQL_AND ? "AND(" : n->kind == YQL_OR
			         ? "OR(" : n->kind == YQL_RANK ? "RANK(" : "NOT(");
		size_t l = strlen(name);
		if (*len + l < cap) {
			memcpy(buf + *len, name, l + 1);
			*len += l;
		}
		for (int i = 0; i < n->nkids; i++) {
			if (i && *len + 1 < cap) {
				buf[(*len)++] = ',';
				buf[*len] = 0;
			}
			dump_to(n->kids[i], buf, cap, len);
		}
		if (*len + 1 < cap) {
			buf[(*len)++] = ')';
			buf[*len] = 0;
		}
		return;
	}
	}
	size_t l = strlen(tmp);
	if (*len + l < cap) {
		memcpy(buf + *len, tmp, l + 1);
		*len += l;
	}
}

int yql_each(const struct yql_node *n, int kind, int (*fn)(void *ud, const struct yql_node *n),
             void *ud)
{
	if (!n)
		return 0;
	for (int i = 0; i < n->nkids; i++) {
		int rc = yql_each(n->kids[i], kind, fn, ud);
		if (rc)
			return rc;
	}
	return n->kind == kind ? fn(ud, n) : 0;
}

char *yql_dump(const struct yql_node *n)
{
	char buf[4096];
	size_t len = 0;
	buf[0] = 0;
	dump_to(n, buf, sizeof buf, &len);
	return base_strdup(buf);
}

int yql_number_test(const void *ud, double v)
{
	const struct yql_node *n = ud;
	if (n->kind == YQL_RANGE)
		return v >= n->lo && v <= n->hi;
	switch (n->op) {
	case YQL_LT: return v < n->num;
	case YQL_LE: return v <= n->num;
	case YQL_GT: return v > n->num;
	case YQL_GE: return v >= n->num;
	case YQL_EQ: return v == n->num;
	}
	return 0;
}
