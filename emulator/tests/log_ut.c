/* SPDX-License-Identifier: MIT */
/*
 * log_ut.c - a port's rate-limited log (log.c): past the burst, lines of one
 * kind in the same second are counted, not written, and one summary line
 * names the kind and the count; another kind keeps its own burst; a port
 * without a log file writes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "ut.h"

static const char *const kinds[] = { "connection request rejected", "disconnect" };

static void test_a_flood_of_one_kind_writes_the_burst_then_one_summary_other_kinds_unaffected(void)
{
	FILE *f = tmpfile();
	struct ernic_log log;
	char *text;

	CU_ASSERT_FATAL(f != NULL);
	ernic_log_init(&log, f, "ernicd", kinds, 2, 4);
	/*
	 * Ten rejects within one window (a machine stalled for a second between
	 * two of them would open a second window: at most eight written then).
	 */
	for (unsigned int i = 0; i < 10; i++)
		ernic_log(&log, 0, "peer 10.0.0.2:%u: connection request rejected: RDMA CM status 4", 4000 + i);
	ernic_log(&log, 1, "disconnect host h qid 1");
	ernic_log_flush(&log, true);
	ernic_log_fini(&log);
	text = ut_file_text(f);
	CU_ASSERT(ut_count_lines(text, "ernicd: peer 10.0.0.2:") >= 4);
	CU_ASSERT(ut_count_lines(text, "ernicd: peer 10.0.0.2:") <= 8);
	CU_ASSERT_EQUAL(ut_count_lines(text, "ernicd: disconnect host h qid 1"), 1);
	if (ut_count_lines(text, "ernicd: peer 10.0.0.2:") == 4) {
		CU_ASSERT_PTR_NOT_NULL(strstr(text, "ernicd: suppressed 6 similar lines: connection request rejected\n"));
	}
	CU_ASSERT_EQUAL(ut_count_lines(text, "suppressed"), ut_count_lines(text, "ernicd: peer 10.0.0.2:") == 8 ? 0 : 1);
	CU_ASSERT_EQUAL(ut_count_lines(text, "similar lines: disconnect"), 0);
	free(text);
	fclose(f);
}

static void test_no_log_file_writes_nothing_and_an_unknown_kind_is_ignored(void)
{
	FILE *f = tmpfile();
	struct ernic_log log;
	char *text;

	ernic_log_init(&log, NULL, "ernicd", kinds, 2, 4);
	for (unsigned int i = 0; i < 10; i++)
		ernic_log(&log, 0, "line %u", i);
	ernic_log_flush(&log, true);
	ernic_log_fini(&log);

	CU_ASSERT_FATAL(f != NULL);
	ernic_log_init(&log, f, "ernicd", kinds, 2, 4);
	ernic_log(&log, 2, "a kind the port does not have");
	ernic_log_flush(&log, true);
	ernic_log_fini(&log);
	text = ut_file_text(f);
	CU_ASSERT_STRING_EQUAL(text, "");
	free(text);
	fclose(f);
}

UT_MAIN("log", UT_CASE(test_a_flood_of_one_kind_writes_the_burst_then_one_summary_other_kinds_unaffected),
	UT_CASE(test_no_log_file_writes_nothing_and_an_unknown_kind_is_ignored))
