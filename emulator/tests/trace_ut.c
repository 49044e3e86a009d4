/* SPDX-License-Identifier: MIT */
/*
 * trace_ut.c - the sampling shared by the fabric ports (trace.c), driven as a
 * transport drives it: 1 in N commands of a connected I/O queue is stamped
 * and none of a queue not connected; an NVMe/RDMA-shaped record (READ or
 * WRITE, SEND completion) adds the data and send_done stages, counted only
 * for the samples that passed them, while the stages a transport does not
 * stamp stay out of the JSON; records reach the file in order with the
 * transport named in its header when the queue stops, before the writer's
 * next round; without a file the sums are kept and nothing counts as dropped.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"
#include "ut.h"
#include "ut_trace.h"

struct fake_cmd {
	struct ernic_req req;
	struct ernic_stage_stamps stamps;
	struct ernic_trace_rec rec;
};

/* A command received on @tq: the countdown, and the stamps if it is due. */
static bool fake_receive(struct ernic_trace *t, struct ernic_trace_queue *tq, uint16_t qid, struct fake_cmd *c,
			 uint16_t cid, uint8_t opc)
{
	memset(c, 0, sizeof(*c));
	c->req.sqe.cid = cid;
	c->req.sqe.opc = opc;
	if (!ernic_trace_due(tq))
		return false;
	return ernic_trace_begin(t, tq, qid, &c->req, &c->stamps, &c->rec);
}

/*
 * The stamps as a transport and the core would take them, 1 µs apart (fixed
 * values, so every stage has a known length): storage 2 µs, with data moved
 * when @data, the SEND completion when @send_done.
 */
static void fake_stamp(struct fake_cmd *c, bool data, bool send_done)
{
	uint64_t t0 = c->rec.rx;

	c->rec.exec = t0 + 1000;
	c->stamps.storage_start = t0 + 2000;
	c->stamps.storage_done = t0 + 4000;
	c->stamps.storage_ns = 2000;
	c->rec.queued = t0 + 5000;
	if (data) {
		c->rec.data_start = t0 + 5500;
		c->rec.data_done = t0 + 8000;
	}
	c->rec.sent = t0 + 6000;
	if (send_done)
		c->rec.send_done = t0 + 9000;
}

static void test_one_in_three_commands_of_a_connected_io_queue_is_stamped_none_before_connect(void)
{
	struct ernic_trace t;
	struct ernic_trace_queue tq;
	struct fake_cmd c;
	unsigned int sampled = 0;

	CU_ASSERT_FATAL(ernic_trace_init(&t, "rdma", 3, NULL, 0, ERNIC_TRACE_STAGES_ALL) == 0);
	ernic_trace_queue_init(&tq);
	/* Before Connect the countdown never reaches 0 in a test's lifetime. */
	for (unsigned int i = 0; i < 10; i++)
		CU_ASSERT_FALSE(fake_receive(&t, &tq, 0, &c, (uint16_t)i, NVME_CMD_READ));
	ernic_trace_queue_start(&t, &tq);
	for (unsigned int i = 1; i <= 30; i++) {
		bool due = fake_receive(&t, &tq, 1, &c, (uint16_t)i, NVME_CMD_READ);

		CU_ASSERT_EQUAL(due, i % 3 == 0);
		if (!due) {
			CU_ASSERT_PTR_NULL(c.req.stamps);
			continue;
		}
		sampled++;
		CU_ASSERT_PTR_EQUAL(c.req.stamps, &c.stamps);
		CU_ASSERT(c.rec.rx > 0);
		CU_ASSERT_EQUAL(c.rec.qid, 1);
		CU_ASSERT_EQUAL(c.rec.cid, i);
	}
	CU_ASSERT_EQUAL(sampled, 10);
	/* A due command on a queue that is no I/O queue (qid 0) is not stamped and wraps the countdown. */
	tq.sample_left = 1;
	CU_ASSERT_FALSE(fake_receive(&t, &tq, 0, &c, 1, NVME_CMD_READ));
	CU_ASSERT_EQUAL(tq.sample_left, UINT32_MAX);
	ernic_trace_queue_stop(&t, &tq);
	ernic_trace_fini(&t);
}

static void test_rdma_records_sum_data_and_send_done_only_for_the_samples_that_passed_them(void)
{
	struct ernic_trace t;
	struct ernic_trace_queue tq;
	struct ernic_trace_stats st;
	struct fake_cmd c;
	char json[2048];

	CU_ASSERT_FATAL(ernic_trace_init(&t, "rdma", 1, NULL, 0, ERNIC_TRACE_STAGES_ALL) == 0);
	ernic_trace_queue_init(&tq);
	ernic_trace_queue_start(&t, &tq);
	/* A read with its RDMA WRITE, then a flush that moves no data. */
	CU_ASSERT_FATAL(fake_receive(&t, &tq, 2, &c, 7, NVME_CMD_READ));
	fake_stamp(&c, true, true);
	ernic_trace_end(&t, &tq, &c.req, &c.stamps, &c.rec);
	CU_ASSERT_EQUAL(c.rec.storage_start - c.rec.rx, 2000);
	CU_ASSERT_FATAL(fake_receive(&t, &tq, 2, &c, 8, NVME_CMD_FLUSH));
	fake_stamp(&c, false, true);
	ernic_trace_end(&t, &tq, &c.req, &c.stamps, &c.rec);
	ernic_trace_stats(&t, &st);

	CU_ASSERT_EQUAL(st.samples, 2);
	CU_ASSERT_EQUAL(st.dropped, 0);
	CU_ASSERT_EQUAL(st.count[ERNIC_TRACE_STAGE_RECEIVED], 2);
	CU_ASSERT_EQUAL(st.count[ERNIC_TRACE_STAGE_DATA], 1);
	CU_ASSERT_EQUAL(st.count[ERNIC_TRACE_STAGE_SEND_DONE], 2);
	CU_ASSERT_EQUAL(st.sum_ns[ERNIC_TRACE_STAGE_RECEIVED], 2000);
	CU_ASSERT_EQUAL(st.sum_ns[ERNIC_TRACE_STAGE_CORE_SUBMIT], 2000);
	CU_ASSERT_EQUAL(st.sum_ns[ERNIC_TRACE_STAGE_STORAGE], 4000);
	CU_ASSERT_EQUAL(st.sum_ns[ERNIC_TRACE_STAGE_CORE_COMPLETE], 2000);
	CU_ASSERT_EQUAL(st.sum_ns[ERNIC_TRACE_STAGE_SEND], 2000);
	CU_ASSERT_EQUAL(st.sum_ns[ERNIC_TRACE_STAGE_DATA], 2500);
	CU_ASSERT_EQUAL(st.sum_ns[ERNIC_TRACE_STAGE_SEND_DONE], 6000);
	CU_ASSERT_EQUAL(st.sum_ns[ERNIC_TRACE_STAGE_TOTAL], 12000);
	CU_ASSERT_EQUAL(st.max_ns[ERNIC_TRACE_STAGE_DATA], 2500);
	CU_ASSERT(ernic_trace_stats_json(&st, json, sizeof(json)) > 0);
	/* The data stage's mean is over the one sample that moved data. */
	CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"data\":2.500,\"send_done\":3.000,\"total\":6.000}"));
	CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"count\":{\"received\":2,"));
	CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"data\":1,"));
	CU_ASSERT_EQUAL(ernic_trace_stats_json(&st, json, 16), -ENOSPC);

	/* A TCP-shaped port sums two ports' worth, and shows its own stages only. */
	st.stages = ERNIC_TRACE_STAGES_COMMON;
	ernic_trace_stats_add(&st, &st);
	CU_ASSERT_EQUAL(st.samples, 4);
	CU_ASSERT_EQUAL(st.count[ERNIC_TRACE_STAGE_DATA], 2);
	CU_ASSERT(ernic_trace_stats_json(&st, json, sizeof(json)) > 0);
	CU_ASSERT_PTR_NULL(strstr(json, "\"data\""));
	CU_ASSERT_PTR_NULL(strstr(json, "\"send_done\""));
	ernic_trace_queue_stop(&t, &tq);
	ernic_trace_fini(&t);
}

static void test_records_reach_the_file_in_order_when_the_queue_stops_header_names_the_transport(void)
{
	FILE *file = tmpfile();
	struct ernic_trace t;
	struct ernic_trace_queue tq;
	struct ernic_trace_rec recs[8];
	struct ernic_trace_stats st;
	struct fake_cmd c;
	unsigned int n;

	CU_ASSERT_FATAL(file != NULL);
	CU_ASSERT_FATAL(ernic_trace_init(&t, "rdma", 2, file, 0, ERNIC_TRACE_STAGES_ALL) == 0);
	ernic_trace_queue_init(&tq);
	ernic_trace_queue_start(&t, &tq);
	for (unsigned int i = 1; i <= 10; i++) {
		if (!fake_receive(&t, &tq, 3, &c, (uint16_t)(100 + i), i % 4 ? NVME_CMD_READ : NVME_CMD_WRITE))
			continue;
		fake_stamp(&c, true, true);
		c.req.cqe.status = (uint16_t)(i == 10 ? NVME_SC_INVALID_FIELD << 1 : 0);
		ernic_trace_end(&t, &tq, &c.req, &c.stamps, &c.rec);
	}
	/* Stopping the queue writes what its ring holds, whenever the writer last ran. */
	ernic_trace_queue_stop(&t, &tq);
	CU_ASSERT_PTR_NULL(tq.ring);
	ernic_trace_stats(&t, &st);
	ernic_trace_fini(&t);

	CU_ASSERT_EQUAL(st.samples, 5);
	CU_ASSERT_EQUAL(st.dropped, 0);
	n = ut_trace_records(file, "rdma", recs, 8);
	CU_ASSERT_FATAL(n == 5);
	for (unsigned int i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(recs[i].qid, 3);
		CU_ASSERT_EQUAL(recs[i].cid, 102 + 2 * i);
		CU_ASSERT_EQUAL(recs[i].opc, (102 + 2 * i - 100) % 4 ? NVME_CMD_READ : NVME_CMD_WRITE);
		CU_ASSERT_EQUAL(recs[i].storage_done - recs[i].storage_start, 2000);
		CU_ASSERT_EQUAL(recs[i].data_done - recs[i].data_start, 2500);
		CU_ASSERT_EQUAL(recs[i].send_done - recs[i].sent, 3000);
		if (i)
			CU_ASSERT(recs[i].rx >= recs[i - 1].rx);
	}
	CU_ASSERT_EQUAL(recs[4].status, NVME_SC_INVALID_FIELD);
	fclose(file);
}

static void test_stage_names_are_the_json_keys_and_out_of_range_is_null(void)
{
	CU_ASSERT_STRING_EQUAL(ernic_trace_stage_name(ERNIC_TRACE_STAGE_RECEIVED), "received");
	CU_ASSERT_STRING_EQUAL(ernic_trace_stage_name(ERNIC_TRACE_STAGE_DATA), "data");
	CU_ASSERT_STRING_EQUAL(ernic_trace_stage_name(ERNIC_TRACE_STAGE_SEND_DONE), "send_done");
	CU_ASSERT_STRING_EQUAL(ernic_trace_stage_name(ERNIC_TRACE_STAGE_TOTAL), "total");
	CU_ASSERT_PTR_NULL(ernic_trace_stage_name(ERNIC_TRACE_STAGE_COUNT));
}

/* Ten sampled reads with the same stamps (so the same record length) into @file, limited to @max_bytes. */
static void ten_records(FILE *file, uint64_t max_bytes, struct ernic_trace_stats *st)
{
	struct ernic_trace t;
	struct ernic_trace_queue tq;
	struct fake_cmd c;

	CU_ASSERT_FATAL(ernic_trace_init(&t, "tcp", 1, file, max_bytes, ERNIC_TRACE_STAGES_COMMON) == 0);
	ernic_trace_queue_init(&tq);
	ernic_trace_queue_start(&t, &tq);
	for (unsigned int i = 0; i < 10; i++) {
		CU_ASSERT_FATAL(fake_receive(&t, &tq, 1, &c, (uint16_t)(10 + i), NVME_CMD_READ));
		c.rec.rx = 1000000000000000000ull;
		fake_stamp(&c, false, false);
		ernic_trace_end(&t, &tq, &c.req, &c.stamps, &c.rec);
	}
	ernic_trace_queue_stop(&t, &tq);
	ernic_trace_stats(&t, st);
	ernic_trace_fini(&t);
	fflush(file);
}

/*
 * A size limit: records are written whole while they fit, the header
 * counted; the ones past it are counted over_limit, and the stage sums still
 * take every sample. Past the point where no line could fit, records are
 * counted without being formatted.
 */
static void test_a_size_limit_keeps_whole_records_and_counts_the_rest(void)
{
	FILE *file = tmpfile();
	struct ernic_trace_rec recs[16];
	struct ernic_trace_stats st;
	char json[1024];
	long header, rec_len, size;
	unsigned int n;

	CU_ASSERT_FATAL(file != NULL);
	/* No limit: the header and ten records of one length. */
	ten_records(file, 0, &st);
	CU_ASSERT_EQUAL(st.over_limit, 0);
	CU_ASSERT_FATAL(ut_trace_records(file, "tcp", recs, 16) == 10);
	rewind(file);
	CU_ASSERT_FATAL(fgets(json, sizeof(json), file) != NULL);
	header = (long)strlen(json);
	fseek(file, 0, SEEK_END);
	rec_len = (ftell(file) - header) / 10;
	CU_ASSERT_FATAL(rec_len > 0 && header + 10 * rec_len == ftell(file));

	/* Room for the header and three and a half records. */
	rewind(file);
	CU_ASSERT_FATAL(ftruncate(fileno(file), 0) == 0);
	ten_records(file, (uint64_t)(header + 3 * rec_len + rec_len / 2), &st);
	fseek(file, 0, SEEK_END);
	size = ftell(file);
	CU_ASSERT_EQUAL(size, header + 3 * rec_len);
	n = ut_trace_records(file, "tcp", recs, 16);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	for (unsigned int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(recs[i].cid, 10 + i);
	CU_ASSERT_EQUAL(st.samples, 10);
	CU_ASSERT_EQUAL(st.dropped, 0);
	CU_ASSERT_EQUAL(st.over_limit, 7);
	CU_ASSERT_EQUAL(st.count[ERNIC_TRACE_STAGE_TOTAL], 10);
	CU_ASSERT(ernic_trace_stats_json(&st, json, sizeof(json)) > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"over_limit\":7"));

	/* Room for the header and less than any line: nothing more is written, and each record counted once. */
	rewind(file);
	CU_ASSERT_FATAL(ftruncate(fileno(file), 0) == 0);
	ten_records(file, (uint64_t)(header + 10), &st);
	fseek(file, 0, SEEK_END);
	CU_ASSERT_EQUAL(ftell(file), header);
	CU_ASSERT_EQUAL(st.samples, 10);
	CU_ASSERT_EQUAL(st.over_limit, 10);
	fclose(file);
}

UT_MAIN("trace", UT_CASE(test_one_in_three_commands_of_a_connected_io_queue_is_stamped_none_before_connect),
	UT_CASE(test_rdma_records_sum_data_and_send_done_only_for_the_samples_that_passed_them),
	UT_CASE(test_records_reach_the_file_in_order_when_the_queue_stops_header_names_the_transport),
	UT_CASE(test_stage_names_are_the_json_keys_and_out_of_range_is_null),
	UT_CASE(test_a_size_limit_keeps_whole_records_and_counts_the_rest))
