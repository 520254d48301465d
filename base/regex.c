/*
 * regex.c: how large a POSIX extended regular expression grows when
 * compiled (base_regex_size, base.h).
 *
 * glibc's regcomp spells repetitions out: a+ becomes a a*, a{2,5} five
 * copies of a.  A repetition of something that is itself repeated copies
 * the copies, so a short pattern ("a+++++++..." or "((a{9}){9}){9}")
 * builds a tree exponential in its length, and regcomp takes gigabytes
 * before it returns.  Patterns come from queries, documents and schemas,
 * so they are sized here first, without compiling them.
 *
 * The size counts one per character, bracket expression or escape, adds
 * the sizes of a group's parts and alternatives, and multiplies an
 * operand by the copies its repetition makes: 2 for +, max(n, m) for
 * {n,m} (n + 1 for {n,}), 1 for * and ?.  It saturates at SIZE_MAX / 2.
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

/* The copies the interval at p ('{' ... '}') makes, with *end after it;
 * 0 when p does not start an interval (regcomp then reads '{' as itself
 * or refuses it). */
static size_t interval(const char *p, const char **end)
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
	return m > n ? m : n ? n : 1;
}

/* An operand of size n at level d: the group's last operand, added to it. */
static void operand(size_t *total, size_t *last, size_t n)
{
	*last = n;
	*total = sat_add(*total, n);
}

size_t base_regex_size(const char *p)
{
	/* per open group: its size so far and the size of its last operand */
	size_t total[MAX_DEPTH + 1] = {0}, last[MAX_DEPTH + 1] = {0};
	int d = 0;
	while (*p) {
		size_t copies;
		switch (*p++) {
		case '\\':
			if (*p)
				p++;
			operand(&total[d], &last[d], 1);
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
			operand(&total[d], &last[d], 1);
			continue;
		case '(':
			if (d == MAX_DEPTH)
				return SIZE_MAX / 2;
			d++;
			total[d] = last[d] = 0;
			continue;
		case ')':
			if (!d) { /* unmatched: an ordinary character to the size */
				operand(&total[d], &last[d], 1);
				continue;
			}
			d--;
			operand(&total[d], &last[d], total[d + 1] ? total[d + 1] : 1);
			continue;
		case '|':
			last[d] = 0;
			continue;
		case '*':
		case '?':
			continue;
		case '+':
			copies = 2;
			break;
		case '{': {
			const char *end;
			copies = interval(p - 1, &end);
			if (copies) {
				p = end;
				break;
			}
			operand(&total[d], &last[d], 1); /* a literal '{' */
			continue;
		}
		default:
			operand(&total[d], &last[d], 1);
			continue;
		}
		/* a repetition of the last operand: its copies replace it */
		size_t grown = sat_mul(last[d], copies);
		total[d] = sat_add(total[d] - last[d], grown);
		last[d] = grown;
	}
	size_t n = total[0];
	while (d > 0) /* unclosed groups: regcomp refuses them; count them anyway */
		n = sat_add(n, total[d--]);
	return n;
}
