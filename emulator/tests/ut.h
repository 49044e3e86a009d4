/* SPDX-License-Identifier: MIT */
/* ut.h - shared CUnit scaffolding: one suite per test program, exit status = failures. */
#ifndef ERNIC_UT_H
#define ERNIC_UT_H

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ut_case {
	const char *name;
	void (*fn)(void);
};

#define UT_CASE(fn) { #fn, fn }

/* What was written to @f (a tmpfile), NUL-terminated; the caller frees it. */
static inline char *ut_file_text(FILE *f)
{
	long n;
	char *buf;

	fflush(f);
	n = ftell(f);
	CU_ASSERT_FATAL(n >= 0);
	buf = calloc(1, (size_t)n + 1);
	CU_ASSERT_FATAL(buf != NULL);
	rewind(f);
	CU_ASSERT(fread(buf, 1, (size_t)n, f) == (size_t)n);
	return buf;
}

/* Lines of @text that contain @has (every line when @has is NULL). */
static inline unsigned int ut_count_lines(const char *text, const char *has)
{
	unsigned int n = 0;

	for (const char *l = text; *l;) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);

		if (!has || memmem(l, len, has, strlen(has)))
			n++;
		l += len + (end ? 1 : 0);
	}
	return n;
}

static inline int ut_run(const char *suite_name, const struct ut_case *cases, size_t n)
{
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	CU_pSuite suite = CU_add_suite(suite_name, NULL, NULL);
	if (!suite)
		return 2;
	for (size_t i = 0; i < n; i++)
		if (!CU_add_test(suite, cases[i].name, cases[i].fn))
			return 2;
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	unsigned failed = CU_get_number_of_tests_failed() + CU_get_number_of_failures();
	unsigned ran = CU_get_number_of_tests_run();
	CU_cleanup_registry();
	if (ran != n) {
		fprintf(stderr, "%s: ran %u of %zu tests\n", suite_name, ran, n);
		return 1;
	}
	return failed ? 1 : 0;
}

#define UT_MAIN(suite_name, ...)                                                   \
	int main(void)                                                             \
	{                                                                          \
		static const struct ut_case cases[] = { __VA_ARGS__ };             \
		return ut_run(suite_name, cases, sizeof(cases) / sizeof(cases[0])); \
	}

#endif
