/* SPDX-License-Identifier: MIT */
/*
 * stages_ut.c - per-stage latency sampling on the in-process path, through
 * the host API: 1 in 1 stamps every command, at queue depth 1 and with many
 * CIDs in flight, and its five stages add up to the end-to-end time; off
 * (after connect, or set back to 0) stamps none; 1 in 10 over 1000 commands
 * stamps exactly 100; a namespace backend that sleeps 100 ms shows up in the
 * storage stage and nowhere else; a submit the queue refuses is not one of
 * the N; every stage has the name the engine's JSON uses.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "target.h"
#include "ut.h"
#include "ut_fixture.h"

#define NS_SIZE (8ull << 20)
#define NLBAS (NS_SIZE / 4096)
#define TIMEOUT_NS 20000000000ull
/*
 * The slow backend's sleep: long beside what a loaded machine adds to a
 * stage by preempting a thread (about 12 ms per command in a ring stage with
 * eight busy threads on two cores), so that where the sleep is counted is
 * never in doubt.
 */
#define SLOW_STORAGE_NS 100000000ull
#define SLOW_READS 8u

static struct {
	struct ernic_target *tgt;
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *qp;
	uint8_t *bufs; /* depth buffers of 4 KiB */
} fx;

/* ------------------------------------------------------------------ fixture */

static bool fx_up(uint32_t depth)
{
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN] = "";

	memset(&fx, 0, sizeof(fx));
	ernic_backend_cfg_init(&cfg);
	cfg.size = NS_SIZE;
	cfg.queues = 1;
	cfg.queue_size = depth;
	cfg.pollers = 1;
	if (ut_target_start(&cfg, NULL, &fx.tgt, err, sizeof(err))) {
		fprintf(stderr, "target: %s\n", err);
		return false;
	}
	fx.hc = ut_host_connect(fx.tgt, 1, depth);
	if (!fx.hc)
		return false;
	fx.qp = ernic_host_io_qpair(fx.hc, 1);
	fx.bufs = aligned_alloc(4096, (size_t)depth * 4096);
	return fx.qp && fx.bufs && ernic_host_qpair_depth(fx.qp) == depth;
}

static void fx_down(void)
{
	if (fx.hc)
		ernic_host_disconnect(fx.hc);
	if (fx.tgt)
		ut_target_stop(fx.tgt);
	free(fx.bufs);
	memset(&fx, 0, sizeof(fx));
}

/*
 * @total 4 KiB reads with up to @depth in flight, each into its own buffer.
 * Returns how many completed successfully.
 */
static uint32_t reads(uint32_t total, uint32_t depth)
{
	uint64_t deadline = ernic_now_ns() + TIMEOUT_NS;
	uint32_t submitted = 0, completed = 0, ok = 0;
	uint32_t free_bufs[128], nr_free = depth;
	struct ernic_host_cpl cpls[128];

	if (depth > 128)
		return 0;
	for (uint32_t i = 0; i < depth; i++)
		free_bufs[i] = i;
	while (completed < total && ernic_now_ns() < deadline) {
		int n;

		while (submitted < total && nr_free) {
			uint32_t b = free_bufs[--nr_free];
			struct nvme_sqe sqe;

			ernic_host_rw_sqe(&sqe, NVME_CMD_READ, 1, (submitted * 7919u) % NLBAS, 1);
			if (ernic_host_submit(fx.qp, &sqe, fx.bufs + (size_t)b * 4096, 4096,
					      (void *)(uintptr_t)(b + 1))) {
				nr_free++;
				break;
			}
			submitted++;
		}
		n = ernic_host_poll(fx.qp, cpls, 128);
		for (int i = 0; i < n; i++) {
			free_bufs[nr_free++] = (uint32_t)((uintptr_t)cpls[i].ctx - 1);
			ok += cpls[i].status == 0;
			completed++;
		}
		if (n == 0)
			sched_yield();
	}
	return ok;
}

static double mean_us(const struct ernic_stage_stats *s, enum ernic_stage stage)
{
	return s->samples ? (double)s->sum_ns[stage] / (double)s->samples / 1000.0 : 0.0;
}

/*
 * The five stages of every sample add up to its end-to-end time, so their
 * sums do too; a stage computed from stamps out of order would wrap to a
 * huge unsigned value and exceed the end-to-end maximum.
 */
static void check_stages_add_up(const struct ernic_stage_stats *s)
{
	uint64_t parts = 0;

	for (int k = 0; k < ERNIC_STAGE_END_TO_END; k++) {
		parts += s->sum_ns[k];
		CU_ASSERT(s->sum_ns[k] <= s->sum_ns[ERNIC_STAGE_END_TO_END]);
		CU_ASSERT(s->max_ns[k] <= s->max_ns[ERNIC_STAGE_END_TO_END]);
	}
	CU_ASSERT_EQUAL(parts, s->sum_ns[ERNIC_STAGE_END_TO_END]);
	CU_ASSERT(s->sum_ns[ERNIC_STAGE_END_TO_END] > 0);
	/* Each sample took at least the clock reads it made (tens of ns). */
	CU_ASSERT(s->sum_ns[ERNIC_STAGE_END_TO_END] >= s->samples);
}

/* ===================================================================== tests */

static void test_one_in_one_stamps_every_command_at_qd1_and_stages_add_up(void)
{
	struct ernic_stage_stats s;

	CU_ASSERT_FATAL(fx_up(32));
	ernic_host_set_stage_sampling(fx.hc, 1);
	CU_ASSERT_EQUAL(reads(500, 1), 500);
	ernic_host_stage_stats(fx.hc, &s);
	CU_ASSERT_EQUAL(s.samples, 500);
	check_stages_add_up(&s);
	/* A Read moves 4 KiB through the backend: the storage stage is not empty. */
	CU_ASSERT(s.sum_ns[ERNIC_STAGE_STORAGE] > 0);
	fx_down();
}

/* With 32 CIDs in flight the stamps must stay with their own CID. */
static void test_one_in_one_stamps_every_command_at_qd32_and_stages_add_up(void)
{
	struct ernic_stage_stats s;

	CU_ASSERT_FATAL(fx_up(32));
	ernic_host_set_stage_sampling(fx.hc, 1);
	CU_ASSERT_EQUAL(reads(20000, 32), 20000);
	ernic_host_stage_stats(fx.hc, &s);
	CU_ASSERT_EQUAL(s.samples, 20000);
	check_stages_add_up(&s);
	fx_down();
}

static void test_off_after_connect_and_when_set_to_zero_stamps_none(void)
{
	struct ernic_stage_stats s;

	CU_ASSERT_FATAL(fx_up(32));
	CU_ASSERT_EQUAL(reads(2000, 8), 2000);
	ernic_host_stage_stats(fx.hc, &s);
	CU_ASSERT_EQUAL(s.samples, 0);
	CU_ASSERT_EQUAL(s.sum_ns[ERNIC_STAGE_END_TO_END], 0);

	ernic_host_set_stage_sampling(fx.hc, 1);
	CU_ASSERT_EQUAL(reads(50, 1), 50);
	ernic_host_set_stage_sampling(fx.hc, 0);
	CU_ASSERT_EQUAL(reads(2000, 8), 2000);
	ernic_host_stage_stats(fx.hc, &s);
	CU_ASSERT_EQUAL(s.samples, 50); /* kept, and nothing added once off */
	fx_down();
}

static void test_one_in_ten_over_1000_commands_stamps_exactly_100(void)
{
	struct ernic_stage_stats s;

	CU_ASSERT_FATAL(fx_up(32));
	ernic_host_set_stage_sampling(fx.hc, 10);
	CU_ASSERT_EQUAL(reads(1000, 16), 1000);
	ernic_host_stage_stats(fx.hc, &s);
	CU_ASSERT_EQUAL(s.samples, 100);
	check_stages_add_up(&s);
	/* 9 more make 1009: the 101st sample is the 1010th command. */
	CU_ASSERT_EQUAL(reads(9, 1), 9);
	ernic_host_stage_stats(fx.hc, &s);
	CU_ASSERT_EQUAL(s.samples, 100);
	CU_ASSERT_EQUAL(reads(1, 1), 1);
	ernic_host_stage_stats(fx.hc, &s);
	CU_ASSERT_EQUAL(s.samples, 101);
	fx_down();
}

/* A command the queue refuses (full) is not one of the N. */
static void test_refused_submit_does_not_use_up_the_sample(void)
{
	struct ernic_stage_stats s;
	struct ernic_host_cpl cpl;
	struct nvme_sqe sqe;
	uint32_t done = 0;
	uint64_t deadline;

	CU_ASSERT_FATAL(fx_up(4));
	ernic_host_set_stage_sampling(fx.hc, 5);
	memset(&sqe, 0, sizeof(sqe));
	sqe.opc = NVME_CMD_FLUSH;
	sqe.nsid = 1;
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(ernic_host_submit(fx.qp, &sqe, NULL, 0, NULL), 0);
	for (int i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(ernic_host_submit(fx.qp, &sqe, NULL, 0, NULL), -EBUSY);
	deadline = ernic_now_ns() + TIMEOUT_NS;
	while (done < 4 && ernic_now_ns() < deadline)
		done += (uint32_t)ernic_host_poll(fx.qp, &cpl, 1);
	CU_ASSERT_EQUAL(done, 4);
	ernic_host_stage_stats(fx.hc, &s);
	CU_ASSERT_EQUAL(s.samples, 0);
	/* The fifth command that went out is the sampled one. */
	CU_ASSERT_EQUAL(ernic_host_submit(fx.qp, &sqe, NULL, 0, NULL), 0);
	deadline = ernic_now_ns() + TIMEOUT_NS;
	while (ernic_host_poll(fx.qp, &cpl, 1) == 0 && ernic_now_ns() < deadline)
		sched_yield();
	ernic_host_stage_stats(fx.hc, &s);
	CU_ASSERT_EQUAL(s.samples, 1);
	fx_down();
}

/* ------------------------------------------------- a slow namespace backend */

static const struct ernic_ns_ops *real_ops;
static struct ernic_ns_ops slow_ops;

static int slow_read(struct ernic_ns *ns, void *buf, uint64_t off, uint32_t len)
{
	struct timespec ts = { 0, (long)SLOW_STORAGE_NS };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	return real_ops->read(ns, buf, off, len);
}

/*
 * Where the backend's time goes: every sampled Read sleeps SLOW_STORAGE_NS
 * inside the backend, so the storage stage holds at least that much per
 * sample (nanosleep never returns early on the clock the stamps use: a
 * lower bound, true however loaded the machine is). A stage that also
 * counted the sleep (the target driver without the storage time taken out,
 * stamps taken at the wrong place) would hold at least as much in every
 * sample too, so the check on the others is that same floor: they hold
 * only scheduler noise, which averages far below the sleep. No bound is put
 * on how fast a stage must be: this is not a benchmark.
 */
static void test_slow_backend_shows_in_the_storage_stage_only(void)
{
	const uint64_t floor_ns = SLOW_READS * SLOW_STORAGE_NS;
	struct ernic_stage_stats s;

	CU_ASSERT_FATAL(fx_up(32));
	real_ops = fx.tgt->ns[0].ops;
	slow_ops = *real_ops;
	slow_ops.name = "slow";
	slow_ops.read = slow_read;
	fx.tgt->ns[0].ops = &slow_ops;
	ernic_host_set_stage_sampling(fx.hc, 1);
	CU_ASSERT_EQUAL(reads(SLOW_READS, 1), SLOW_READS);
	fx.tgt->ns[0].ops = real_ops;
	ernic_host_stage_stats(fx.hc, &s);
	CU_ASSERT_EQUAL_FATAL(s.samples, SLOW_READS);
	check_stages_add_up(&s);
	printf("\n    slow backend: storage %.1f us of %.1f us end to end (host driver %.1f, to target %.1f, "
	       "target driver %.1f, to host %.1f) ",
	       mean_us(&s, ERNIC_STAGE_STORAGE), mean_us(&s, ERNIC_STAGE_END_TO_END),
	       mean_us(&s, ERNIC_STAGE_HOST_DRIVER), mean_us(&s, ERNIC_STAGE_TO_TARGET),
	       mean_us(&s, ERNIC_STAGE_TARGET_DRIVER), mean_us(&s, ERNIC_STAGE_TO_HOST));
	CU_ASSERT(s.sum_ns[ERNIC_STAGE_STORAGE] >= floor_ns);
	CU_ASSERT(s.max_ns[ERNIC_STAGE_STORAGE] >= SLOW_STORAGE_NS);
	for (int k = 0; k < ERNIC_STAGE_END_TO_END; k++)
		if (k != ERNIC_STAGE_STORAGE)
			CU_ASSERT(s.sum_ns[k] < floor_ns);
	fx_down();
}

static void test_stage_names_are_the_json_keys(void)
{
	static const char *const want[ERNIC_STAGE_COUNT] = {
		"host_driver", "transport_to_target", "target_driver", "storage", "transport_to_host", "end_to_end",
	};

	for (int k = 0; k < ERNIC_STAGE_COUNT; k++) {
		CU_ASSERT_PTR_NOT_NULL_FATAL(ernic_stage_name((enum ernic_stage)k));
		CU_ASSERT_STRING_EQUAL(ernic_stage_name((enum ernic_stage)k), want[k]);
	}
	CU_ASSERT_PTR_NULL(ernic_stage_name(ERNIC_STAGE_COUNT));
	CU_ASSERT_PTR_NULL(ernic_stage_name((enum ernic_stage)-1));
}

UT_MAIN("stages", UT_CASE(test_one_in_one_stamps_every_command_at_qd1_and_stages_add_up),
	UT_CASE(test_one_in_one_stamps_every_command_at_qd32_and_stages_add_up),
	UT_CASE(test_off_after_connect_and_when_set_to_zero_stamps_none),
	UT_CASE(test_one_in_ten_over_1000_commands_stamps_exactly_100),
	UT_CASE(test_refused_submit_does_not_use_up_the_sample),
	UT_CASE(test_slow_backend_shows_in_the_storage_stage_only), UT_CASE(test_stage_names_are_the_json_keys))
