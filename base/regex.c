/*
 * regex.c: how large a POSIX extended regular expression grows when
 * compiled (base_regex_size, base.h).
 *
 * glibc's regcomp spells repetitions out: a+ becomes a a*, a{2,5} five
 * copies of a.  A repetition of something that is itself repeated copies
 * the copies, so a short pattern ("a+++++++..." or "((a{9}){9}){9}")
 * builds a tree exponential in its length, and regcomp takes gigabytes
 * before it returns.  Copies of an operand that can match nothing (a?, a*,
 * (), (a|)) cost more again: regcomp's epsilon closures over them grow
 * with the square of their number (measured: ()+ spelled out to 1,025
 * nodes compiles in half a second, 4,097 in ten).  Patterns come from
 * queries, documents and schemas, so they are sized here first, without
 * compiling them.
 *
 * The size counts one per character, bracket expression or escape, adds
 * the sizes of a group's parts and alternatives, and multiplies an
 * operand by the copies its repetition makes: 2 for + (4 when the operand
 * can match nothing), max(n, m) for {n,m} (n + 1 for {n,}), 1 for * and ?.
 * It saturates at SIZE_MAX / 2.
 */
#include <stdint.h>
#include <stdlib.h>

#include "base.h"

enum { MAX_DEPTH = 64 };

static size_t sat_add(size_t a, size_t b)
{
	return a > SIZE_MAX / 2 - b ? SIZE_MAX / 2 : a + b;
}

static size_t sat_mul(size_t a, size_t b)
{
	return b && a > SIZE_MAX / 2 / b ? SIZE_MAX / 2 : a * b;
}

/* The copies the interval at p ('{' ... '}') makes, its lower bound in
 * *lo and *end after it; 0 when p does not start an interval (regcomp then
 * reads '{' as itself or refuses it). */
static size_t interval(const char *p, unsigned long *lo, const char **end)
{
	char *e;
	unsigned long n = strtoul(p + 1, &e, 10), m = n;
	if (e == p + 1)
		return 0;
	if (*e == ',') {
		const char *s = e + 1;
		m = strtoul(s, &e, 10);
		if (e == s)
			m = n + 1; /* {n,}: n copies and a star */
	}
	if (*e != '}')
		return 0;
	*end = e + 1;
	*lo = n;
	return m > n ? m : n ? n : 1;
}

/* One open group: its size so far, its last operand's size, and whether
 * the operand, the operands before it in this alternative, and some
 * earlier alternative can match nothing. */
struct level {
	size_t total, last;
	int last_empty, before_empty, alt_empty;
};

static void open_level(struct level *l)
{
	*l = (struct level){0, 0, 1, 1, 0};
}

/* An operand of size n (empty: it can match nothing) after the others. */
static void operand(struct level *l, size_t n, int empty)
{
	l->before_empty = l->before_empty && l->last_empty;
	l->last_empty = empty;
	l->last = n;
	l->total = sat_add(l->total, n);
}

size_t base_regex_size(const char *p)
{
	struct level lv[MAX_DEPTH + 1];
	int d = 0;
	open_level(&lv[0]);
	while (*p) {
		struct level *l = &lv[d];
		size_t copies;
		switch (*p++) {
		case '\\':
			if (*p)
				p++;
			operand(l, 1, 0);
			continue;
		case '[': /* a bracket expression: one node, ']' first is a member */
			if (*p == '^')
				p++;
			if (*p == ']')
				p++;
			while (*p && *p != ']') {
				if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
					char close = p[1];
					p += 2;
					while (*p && !(*p == close && p[1] == ']'))
						p++;
					if (*p)
						p += 2;
					continue;
				}
				p++;
			}
			if (*p)
				p++;
			operand(l, 1, 0);
			continue;
		case '(':
			if (d == MAX_DEPTH)
				return SIZE_MAX / 2;
			open_level(&lv[++d]);
			continue;
		case ')': {
			if (!d) { /* unmatched: an ordinary character to the size */
				operand(l, 1, 0);
				continue;
			}
			int empty = l->alt_empty || (l->before_empty && l->last_empty);
			size_t n = l->total ? l->total : 1;
			operand(&lv[--d], n, empty);
			continue;
		}
		case '|':
			l->alt_empty = l->alt_empty || (l->before_empty && l->last_empty);
			l->last = 0;
			l->last_empty = l->before_empty = 1;
			continue;
		case '*':
		case '?':
			l->last_empty = 1;
			continue;
		case '+':
			copies = l->last_empty ? 4 : 2;
			break;
		case '{': {
			const char *end;
			unsigned long lo;
			copies = interval(p - 1, &lo, &end);
			if (!copies) {
				operand(l, 1, 0); /* a literal '{' */
				continue;
			}
			p = end;
			if (lo == 0)
				l->last_empty = 1;
			break;
		}
		default:
			operand(l, 1, 0);
			continue;
		}
		/* a repetition of the last operand: its copies replace it */
		size_t grown = sat_mul(l->last, copies);
		l->total = sat_add(l->total - l->last, grown);
		l->last = grown;
	}
	size_t n = lv[0].total;
	while (d > 0) /* unclosed groups: regcomp refuses them; count them anyway */
		n = sat_add(n, lv[d--].total);
	return n;
}
