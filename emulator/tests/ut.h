/* SPDX-License-Identifier: MIT */
/* ut.h - shared CUnit scaffolding: one suite per test program, exit status = failures. */
#ifndef ERNIC_UT_H
#define ERNIC_UT_H

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>

struct ut_case {
	const char *name;
	void (*fn)(void);
};

#define UT_CASE(fn) { #fn, fn }

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
