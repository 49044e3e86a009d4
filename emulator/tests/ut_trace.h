/* SPDX-License-Identifier: MIT */
/*
 * ut_trace.h - a trace file (ernic/trace.h) read back by the CUnit programs:
 * its header checked, its records parsed.
 */
#ifndef ERNIC_UT_TRACE_H
#define ERNIC_UT_TRACE_H

#include <CUnit/Basic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ernic/trace.h"

/*
 * The record lines of @trace (a tmpfile the port wrote, now complete) into
 * @recs; asserts the header names @transport and every line has every column.
 * Returns how many.
 */
static inline unsigned int ut_trace_records(FILE *trace, const char *transport, struct ernic_trace_rec *recs,
					    unsigned int max)
{
	char header[256], line[512];
	unsigned int n = 0;

	fflush(trace);
	rewind(trace);
	snprintf(header, sizeof(header), "%s%s %s\n", ERNIC_TRACE_HEADER_PREFIX, transport, ERNIC_TRACE_HEADER_COLUMNS);
	CU_ASSERT_FATAL(fgets(line, sizeof(line), trace) != NULL);
	CU_ASSERT(strcmp(line, header) == 0);
	while (fgets(line, sizeof(line), trace)) {
		struct ernic_trace_rec r = { 0 };
		unsigned int qid, cid, opc, status;

		CU_ASSERT_FATAL(n < max);
		CU_ASSERT(sscanf(line,
				 "%u %u %x %x %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
				 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
				 &qid, &cid, &opc, &status, &r.rx, &r.exec, &r.storage_start, &r.storage_done,
				 &r.storage_ns, &r.queued, &r.sent, &r.data_start, &r.data_done, &r.send_done) == 14);
		r.qid = (uint16_t)qid;
		r.cid = (uint16_t)cid;
		r.opc = (uint8_t)opc;
		r.status = (uint16_t)status;
		recs[n++] = r;
	}
	return n;
}

#endif /* ERNIC_UT_TRACE_H */
