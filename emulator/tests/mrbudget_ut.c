/* SPDX-License-Identifier: MIT */
/*
 * mrbudget_ut.c - the memory-region budget, end to end: backend string,
 * target start, nvme-rdma style connect, and the MR table's accounting.
 *
 * Proves, against a real target with its pollers and the host's connect:
 *  - every queue count the budget admits (N * queue_size + 32 <= max_mr, at
 *    most ERNIC_MAX_IO_QUEUES) starts, connects every queue and moves data
 *    on the last one, with exactly N * queue_size + 32 regions in use;
 *  - the first count past the bound, 0, negative and non-numeric counts are
 *    refused at startup with the seed's text carrying the right numbers;
 *  - with the startup check skipped, max_mr=1024 queues=8 fails its connect
 *    at QID 8 naming the MR pool, gives every region back, and fails at QID 8
 *    again rather than earlier (the seed's leak made the retry die at QID 2);
 *  - connect/disconnect cycles of 15 queues end at 0 regions with the
 *    high-water mark of one connect (ERNIC_MRBUDGET_CYCLES, default 1000);
 *  - handles cover every table size the suite uses, and destroying an unknown
 *    or already-destroyed handle is -ENOENT with nothing changed.
 *
 * Expectations are computed here from the formula, never read back from the
 * library's own ernic_backend_max_queues().
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"
#include "ut.h"
#include "ut_fixture.h"

/* The seed's tables (256-entry map, old 1024, current 2048) and one larger. */
static const uint32_t suite_max_mr[] = { 256, 1024, 2048, 4096 };
/*
 * The stock queue size, and 32, whose 4096-entry budget (127 queues) is past
 * ERNIC_MAX_IO_QUEUES so the absolute cap binds instead of the budget.
 */
static const uint32_t suite_queue_size[] = { 128, 32 };

static char err[ERNIC_ERRLEN];

/* The protection domain of regions these tests make by hand; no command reaches them. */
#define UT_PD 1u

/* CU_ASSERT that also prints the case it failed for; the loops below run hundreds. */
#define EXPECT(cond, ...)                                                                      \
	do {                                                                                   \
		bool ok_ = (cond);                                                             \
		CU_assertImplementation(ok_, __LINE__, #cond, __FILE__, "", CU_FALSE);         \
		if (!ok_) {                                                                    \
			fprintf(stderr, "\n  %s:%d: ", __FILE__, __LINE__);                    \
			fprintf(stderr, __VA_ARGS__);                                          \
			fputc('\n', stderr);                                                   \
		}                                                                              \
	} while (0)

/* floor((max_mr - 32) / queue_size), then the controller's absolute cap. */
static uint32_t budget_queues(uint32_t max_mr, uint32_t queue_size)
{
	return (max_mr - ERNIC_ADMIN_QUEUE_SIZE) / queue_size;
}

static uint32_t admitted_queues(uint32_t max_mr, uint32_t queue_size)
{
	return MIN(budget_queues(max_mr, queue_size), (uint32_t)ERNIC_MAX_IO_QUEUES);
}

/* The one line a refused queue count must produce, with @raw quoted back. */
static void refusal_text(char *buf, size_t len, uint32_t max_mr, uint32_t queue_size, const char *raw)
{
	uint32_t budget = budget_queues(max_mr, queue_size);

	if (budget <= ERNIC_MAX_IO_QUEUES)
		snprintf(buf, len,
			 "Error: nvmeof backend: queues must be 1..%" PRIu32 ", one per %" PRIu32
			 " memory regions in a table of %" PRIu32 " (got '%s')",
			 budget, queue_size, max_mr, raw);
	else
		snprintf(buf, len,
			 "Error: nvmeof backend: queues must be 1..%d, the most I/O queues this controller offers "
			 "(got '%s')",
			 ERNIC_MAX_IO_QUEUES, raw);
}

static int parse_backend(const char *s, bool skip_mr_budget, struct ernic_backend_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->skip_mr_budget = skip_mr_budget;
	memset(err, 0, sizeof(err));
	return ernic_backend_parse(s, cfg, err, sizeof(err));
}

/* Startup as the daemon and the fio engine do it: parse, then create with pollers. */
static int start_target(const char *backend, bool skip_mr_budget, struct ernic_target **tgt)
{
	const struct ernic_target_opts opts = { 0 };
	struct ernic_backend_cfg cfg;
	int rc;

	*tgt = NULL;
	rc = parse_backend(backend, skip_mr_budget, &cfg);
	if (rc)
		return rc;
	return ut_target_start(&cfg, &opts, tgt, err, sizeof(err));
}

static int connect_queues(struct ernic_target *tgt, uint32_t nr_io_queues, struct ernic_host_ctrlr **hc)
{
	const struct ernic_host_opts opts = { .nr_io_queues = nr_io_queues };

	*hc = NULL;
	memset(err, 0, sizeof(err));
	return ernic_host_connect(ut_port(tgt), &opts, hc, err, sizeof(err));
}

/* One 4 KiB Read on @qid, waited for: the queue's MR pool really carries data. */
static int read_one_block(struct ernic_host_ctrlr *hc, uint16_t qid)
{
	static uint8_t block[4096] __attribute__((aligned(4096)));
	struct ernic_host_qpair *qp = ernic_host_io_qpair(hc, qid);
	struct nvme_sqe sqe;
	int rc;

	if (!qp)
		return -ENOENT;
	ernic_host_rw_sqe(&sqe, NVME_CMD_READ, 1, qid, 1);
	rc = ernic_host_submit(qp, &sqe, block, sizeof(block), block);
	if (rc)
		return rc;
	return ut_wait_cpl(qp, block, NULL) ? -EIO : 0;
}

/* ------------------------------------------------------------------ limits */

static void test_every_admitted_queue_count_connects_with_exact_mr_demand(void)
{
	for (size_t m = 0; m < ERNIC_ARRAY_SIZE(suite_max_mr); m++) {
		for (size_t s = 0; s < ERNIC_ARRAY_SIZE(suite_queue_size); s++) {
			uint32_t max_mr = suite_max_mr[m], qs = suite_queue_size[s];
			uint32_t max_q = admitted_queues(max_mr, qs);

			EXPECT(max_q >= 1, "max_mr %u queue_size %u admits no queue", max_mr, qs);
			for (uint32_t n = 1; n <= max_q; n++) {
				struct ernic_target *tgt;
				struct ernic_host_ctrlr *hc;
				struct ernic_counters c;
				char backend[128];
				int rc;

				snprintf(backend, sizeof(backend),
					 "nvmeof:size=1M,bs=4096,max_mr=%u,queue_size=%u,queues=%u", max_mr, qs, n);
				rc = start_target(backend, false, &tgt);
				EXPECT(rc == 0, "%s: start refused: %s", backend, err);
				if (rc)
					continue;
				rc = connect_queues(tgt, n, &hc);
				EXPECT(rc == 0, "%s: connect failed: %s", backend, err);
				if (rc == 0) {
					ernic_target_counters(tgt, &c);
					EXPECT(ernic_host_nr_io_queues(hc) == n, "%s: %u queues granted", backend,
					       ernic_host_nr_io_queues(hc));
					EXPECT(c.io_queues == n && c.controllers == 1,
					       "%s: target sees %u I/O queues, %u controllers", backend, c.io_queues,
					       c.controllers);
					EXPECT(c.mr_in_use == n * qs + ERNIC_ADMIN_QUEUE_SIZE,
					       "%s: %u regions in use, want %u", backend, c.mr_in_use,
					       n * qs + ERNIC_ADMIN_QUEUE_SIZE);
					EXPECT(c.mr_max == max_mr, "%s: table of %u", backend, c.mr_max);
					/* The last queue's pool took the last regions: it must move data too. */
					rc = read_one_block(hc, (uint16_t)n);
					EXPECT(rc == 0, "%s: Read on QID %u: %d", backend, n, rc);
					ernic_host_disconnect(hc);
					ernic_target_counters(tgt, &c);
					EXPECT(c.mr_in_use == 0 && c.io_queues == 0 && c.controllers == 0,
					       "%s: after disconnect %u regions, %u queues, %u controllers", backend,
					       c.mr_in_use, c.io_queues, c.controllers);
				}
				ut_target_stop(tgt);
			}
		}
	}
}

static void test_queue_counts_past_bound_or_not_positive_refused_at_startup(void)
{
	for (size_t m = 0; m < ERNIC_ARRAY_SIZE(suite_max_mr); m++) {
		for (size_t s = 0; s < ERNIC_ARRAY_SIZE(suite_queue_size); s++) {
			uint32_t max_mr = suite_max_mr[m], qs = suite_queue_size[s];
			char past[16], want[ERNIC_ERRLEN], backend[128];
			const char *bad[] = { past, "0", "-1", "-8", "abc", "8x", "" };

			snprintf(past, sizeof(past), "%u", admitted_queues(max_mr, qs) + 1);
			for (size_t i = 0; i < ERNIC_ARRAY_SIZE(bad); i++) {
				struct ernic_target *tgt;
				int rc;

				snprintf(backend, sizeof(backend), "nvmeof:size=1M,bs=4096,max_mr=%u,queue_size=%u,queues=%s",
					 max_mr, qs, bad[i]);
				refusal_text(want, sizeof(want), max_mr, qs, bad[i]);
				rc = start_target(backend, false, &tgt);
				EXPECT(rc == -EINVAL && tgt == NULL, "%s: started (rc %d)", backend, rc);
				EXPECT(strcmp(err, want) == 0, "%s:\n    got:  %s\n    want: %s", backend, err, want);
				if (tgt)
					ut_target_stop(tgt);
			}
		}
	}
}

/*
 * A configuration built in code rather than parsed (ernicd's and the fio
 * engine's callers may do that) meets the same refusal in ernic_target_create.
 */
static void test_target_create_refuses_what_the_parser_refuses(void)
{
	const struct ernic_target_opts opts = { 0 };

	for (size_t m = 0; m < ERNIC_ARRAY_SIZE(suite_max_mr); m++) {
		for (size_t s = 0; s < ERNIC_ARRAY_SIZE(suite_queue_size); s++) {
			uint32_t max_mr = suite_max_mr[m], qs = suite_queue_size[s];
			uint32_t max_q = admitted_queues(max_mr, qs);
			const uint32_t bad[] = { max_q + 1, 0 };
			struct ernic_backend_cfg cfg;
			struct ernic_target *tgt;
			char raw[16], want[ERNIC_ERRLEN];
			int rc;

			ernic_backend_cfg_init(&cfg);
			cfg.size = 1u << 20;
			cfg.max_mr = max_mr;
			cfg.queue_size = qs;
			cfg.queues = max_q;
			tgt = NULL;
			rc = ernic_target_create(&cfg, &opts, &tgt, err, sizeof(err));
			EXPECT(rc == 0, "max_mr %u queue_size %u queues %u refused: %s", max_mr, qs, max_q, err);
			ernic_target_destroy(tgt);

			for (size_t i = 0; i < ERNIC_ARRAY_SIZE(bad); i++) {
				cfg.queues = bad[i];
				snprintf(raw, sizeof(raw), "%u", bad[i]);
				refusal_text(want, sizeof(want), max_mr, qs, raw);
				tgt = NULL;
				memset(err, 0, sizeof(err));
				rc = ernic_target_create(&cfg, &opts, &tgt, err, sizeof(err));
				EXPECT(rc == -EINVAL && tgt == NULL, "max_mr %u queue_size %u queues %u: created (rc %d)",
				       max_mr, qs, bad[i], rc);
				EXPECT(strcmp(err, want) == 0, "max_mr %u queue_size %u queues %u:\n    got:  %s\n    want: %s",
				       max_mr, qs, bad[i], err, want);
				if (tgt)
					ernic_target_destroy(tgt);
			}
		}
	}
}

/*
 * Past ERNIC_MAX_IO_QUEUES even the test switch cannot take a controller: a
 * configuration built in code that skips every startup check still gets no
 * I/O queue beyond the controller's queue array, and the connect that asked
 * for one fails cleanly.
 */
static void test_skipped_check_never_connects_past_controller_cap(void)
{
	const struct ernic_target_opts opts = { 0 };
	const uint32_t want = ERNIC_MAX_IO_QUEUES + 6;
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt = NULL;
	struct ernic_host_ctrlr *hc;
	struct ernic_counters c;
	char qid_text[32];
	int rc;

	ernic_backend_cfg_init(&cfg);
	cfg.size = 1u << 20;
	cfg.max_mr = 8192;
	cfg.queue_size = 32;
	cfg.queues = want;
	cfg.skip_mr_budget = true;
	CU_ASSERT_EQUAL_FATAL(ut_target_start(&cfg, &opts, &tgt, err, sizeof(err)), 0);
	rc = connect_queues(tgt, want, &hc);
	CU_ASSERT_NOT_EQUAL(rc, 0);
	snprintf(qid_text, sizeof(qid_text), "QID %d ", ERNIC_MAX_IO_QUEUES + 1);
	EXPECT(strstr(err, qid_text) != NULL, "connect of %u queues: '%s'", want, err);
	if (rc == 0)
		ernic_host_disconnect(hc);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_in_use, 0);
	CU_ASSERT_EQUAL(c.io_queues, 0);
	CU_ASSERT_EQUAL(c.controllers, 0);
	ut_target_stop(tgt);
}

static void test_seed_text_for_queues_16_in_table_of_2048(void)
{
	struct ernic_target *tgt;

	CU_ASSERT_EQUAL(start_target("nvmeof:size=64M,bs=4096,max_mr=2048,queues=16", false, &tgt), -EINVAL);
	CU_ASSERT_PTR_NULL(tgt);
	CU_ASSERT_STRING_EQUAL(err, "Error: nvmeof backend: queues must be 1..15, one per 128 memory regions in a "
				    "table of 2048 (got '16')");
}

/* -------------------------------------------------- historical reproduction */

static void expect_connect_dies_at_qid_8(struct ernic_target *tgt, int attempt)
{
	struct ernic_host_ctrlr *hc;
	struct ernic_counters c;
	int rc;

	rc = connect_queues(tgt, 8, &hc);
	EXPECT(rc == -ENOSPC && hc == NULL, "attempt %d: connect rc %d", attempt, rc);
	/* The seed's kernel log line, with the pool size and the QID it died on. */
	EXPECT(strcmp(err, "failed to initialize MR pool sized 128 for QID 8") == 0, "attempt %d: '%s'", attempt,
	       err);
	ernic_target_counters(tgt, &c);
	EXPECT(c.mr_in_use == 0, "attempt %d: %u regions still in use after the failed connect", attempt,
	       c.mr_in_use);
	/* The admin queue and QIDs 1..7 took 928; QID 8 ran the table dry at 1024. */
	EXPECT(c.mr_high_water == 1024, "attempt %d: high water %u", attempt, c.mr_high_water);
	EXPECT(c.io_queues == 0 && c.controllers == 0, "attempt %d: %u queues, %u controllers left", attempt,
	       c.io_queues, c.controllers);
	if (hc)
		ernic_host_disconnect(hc);
}

static void test_table_of_1024_with_8_queues_fails_at_qid_8_every_time(void)
{
	struct ernic_target *tgt;
	struct ernic_host_ctrlr *hc;
	struct ernic_counters c;

	/* Without the switch this never gets past startup. */
	CU_ASSERT_EQUAL(start_target("nvmeof:size=1M,max_mr=1024,queues=8", false, &tgt), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "Error: nvmeof backend: queues must be 1..7, one per 128 memory regions in a "
				    "table of 1024 (got '8')");

	CU_ASSERT_EQUAL_FATAL(start_target("nvmeof:size=1M,max_mr=1024,queues=8", true, &tgt), 0);
	/* The seed's retry died at QID 2: every attempt here must reach QID 8, not earlier. */
	for (int attempt = 1; attempt <= 3; attempt++)
		expect_connect_dies_at_qid_8(tgt, attempt);

	/* Nothing was lost on the way: the seven queues the table can feed still connect. */
	CU_ASSERT_EQUAL(connect_queues(tgt, 7, &hc), 0);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_in_use, 7 * 128 + 32);
	CU_ASSERT_EQUAL(c.io_queues, 7);
	if (hc)
		ernic_host_disconnect(hc);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_in_use, 0);
	ut_target_stop(tgt);
}

/* ---------------------------------------------------------------- accounting */

/*
 * `make test` runs this program twice: the plain build does the full 1000
 * cycles, the ASan build (several times slower per connect) a tenth of them.
 * The nightly sets ERNIC_MRBUDGET_CYCLES=1000 for both.
 */
#ifdef __SANITIZE_ADDRESS__
#define MRBUDGET_DEFAULT_CYCLES 100
#else
#define MRBUDGET_DEFAULT_CYCLES 1000
#endif

static unsigned long cycles_from_env(void)
{
	const char *s = getenv("ERNIC_MRBUDGET_CYCLES");
	char *end;
	unsigned long n;

	if (!s || !*s)
		return MRBUDGET_DEFAULT_CYCLES;
	n = strtoul(s, &end, 10);
	if (*end || n == 0) {
		fprintf(stderr, "\n  ERNIC_MRBUDGET_CYCLES='%s' is not a positive count: using %d\n", s,
			MRBUDGET_DEFAULT_CYCLES);
		return MRBUDGET_DEFAULT_CYCLES;
	}
	return n;
}

static void test_connect_disconnect_cycles_of_15_queues_return_every_region(void)
{
	const uint32_t demand = 15 * 128 + ERNIC_ADMIN_QUEUE_SIZE;
	unsigned long cycles = cycles_from_env(), bad_connect = 0, bad_in_use = 0, bad_after = 0;
	struct ernic_target *tgt;
	struct ernic_counters c;
	uint32_t first_high_water = 0;
	uint64_t t0 = ernic_now_ns();

	CU_ASSERT_EQUAL_FATAL(start_target("nvmeof:size=1M,max_mr=2048,queues=15", false, &tgt), 0);
	for (unsigned long i = 0; i < cycles; i++) {
		struct ernic_host_ctrlr *hc;

		if (connect_queues(tgt, 15, &hc)) {
			if (!bad_connect++)
				fprintf(stderr, "\n  cycle %lu: connect failed: %s\n", i, err);
			continue;
		}
		ernic_target_counters(tgt, &c);
		bad_in_use += c.mr_in_use != demand || c.io_queues != 15;
		ernic_host_disconnect(hc);
		ernic_target_counters(tgt, &c);
		bad_after += c.mr_in_use != 0 || c.io_queues != 0 || c.controllers != 0;
		if (i == 0)
			first_high_water = c.mr_high_water;
	}
	ernic_target_counters(tgt, &c);
	EXPECT(bad_connect == 0, "%lu of %lu connects failed", bad_connect, cycles);
	EXPECT(bad_in_use == 0, "%lu of %lu connects did not hold exactly %u regions", bad_in_use, cycles, demand);
	EXPECT(bad_after == 0, "%lu of %lu disconnects left regions, queues or controllers", bad_after, cycles);
	EXPECT(c.mr_in_use == 0, "%u regions in use after %lu cycles", c.mr_in_use, cycles);
	EXPECT(first_high_water == demand && c.mr_high_water == demand,
	       "high water %u after the first cycle, %u after %lu, want %u", first_high_water, c.mr_high_water,
	       cycles, demand);
	fprintf(stderr, " [%lu cycles, %.2f s] ", cycles, (double)(ernic_now_ns() - t0) / 1e9);
	ut_target_stop(tgt);
}

/*
 * After a real connect and disconnect the table holds nothing: every handle is
 * -ENOENT on destroy (none silently 0), and the table hands out all of its
 * handles again, those past the seed's 256th included.
 */
static void test_disconnect_leaves_no_handle_behind(void)
{
	const uint32_t max_mr = 2048, demand = 15 * 128 + ERNIC_ADMIN_QUEUE_SIZE;
	struct ernic_target *tgt;
	struct ernic_host_ctrlr *hc;
	struct ernic_mr_table *tbl;
	uint32_t h, in_use, spare[2048], nr_spare = 0;
	uint8_t *seen;
	unsigned long silent = 0, dup = 0;

	CU_ASSERT_EQUAL_FATAL(start_target("nvmeof:size=1M,max_mr=2048,queues=15", false, &tgt), 0);
	tbl = ernic_inproc_port_mr_table(ut_port(tgt));
	CU_ASSERT_EQUAL_FATAL(connect_queues(tgt, 15, &hc), 0);

	/* The table agrees with the connect: exactly max_mr - demand regions are left. */
	while (ernic_mr_alloc(tbl, UT_PD, &h) == 0 && nr_spare < ERNIC_ARRAY_SIZE(spare))
		spare[nr_spare++] = h;
	CU_ASSERT_EQUAL(nr_spare, max_mr - demand);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), -ENOSPC);
	for (uint32_t i = 0; i < nr_spare; i++)
		CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, spare[i]), 0);
	ernic_host_disconnect(hc);

	for (h = 0; h < max_mr; h++)
		silent += ernic_mr_destroy(tbl, h) != -ENOENT;
	EXPECT(silent == 0, "%lu handles were still destroyable after disconnect", silent);
	ernic_mr_usage(tbl, &in_use, NULL, NULL);
	CU_ASSERT_EQUAL(in_use, 0);

	seen = calloc(max_mr, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
	for (uint32_t i = 0; i < max_mr; i++) {
		if (ernic_mr_alloc(tbl, UT_PD, &h) != 0 || h >= max_mr || seen[h]) {
			dup++;
			break;
		}
		seen[h] = 1;
	}
	EXPECT(dup == 0, "the table did not hand out all %u handles after the disconnect", max_mr);
	free(seen);
	ut_target_stop(tgt);
}

/* -------------------------------------------------------------- handle table */

static void test_handles_cover_every_suite_table_size(void)
{
	static const uint32_t sizes[] = { 256, 1024, 2048, 4096, 16384, 65536 };
	static uint8_t region[4096];

	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(sizes); i++) {
		const uint32_t max = sizes[i];
		struct ernic_mr_table *tbl = ernic_mr_table_create(max);
		uint8_t *seen = calloc(max, 1);
		unsigned long bad_alloc = 0, bad_use = 0, bad_destroy = 0, silent = 0;
		uint32_t h, in_use, hw;

		CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
		CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
		for (uint32_t n = 0; n < max; n++) {
			if (ernic_mr_alloc(tbl, UT_PD, &h) || h >= max || seen[h]) {
				bad_alloc++;
				continue;
			}
			seen[h] = 1;
		}
		EXPECT(bad_alloc == 0, "table %u: %lu allocations failed or repeated a handle", max, bad_alloc);
		EXPECT(ernic_mr_alloc(tbl, UT_PD, &h) == -ENOSPC, "table %u: allocation past the end", max);
		/* Every handle is a usable region whose rkey names it. */
		for (h = 0; h < max; h++) {
			uint32_t rkey;
			void *p;

			bad_use += ernic_mr_fast_reg(tbl, h, region, sizeof(region), ERNIC_MR_REMOTE_WRITE, &rkey) ||
				   ERNIC_RKEY_INDEX(rkey) != h ||
				   ernic_mr_resolve(tbl, UT_PD, rkey, (uintptr_t)region, 512, ERNIC_MR_REMOTE_WRITE,
						    &p) ||
				   ernic_mr_invalidate(tbl, UT_PD, rkey);
		}
		EXPECT(bad_use == 0, "table %u: %lu handles not usable", max, bad_use);
		for (h = 0; h < max; h++)
			bad_destroy += ernic_mr_destroy(tbl, h) != 0;
		for (h = 0; h < max; h++)
			silent += ernic_mr_destroy(tbl, h) != -ENOENT;
		EXPECT(bad_destroy == 0, "table %u: %lu destroys failed", max, bad_destroy);
		EXPECT(silent == 0, "table %u: %lu second destroys did not fail with -ENOENT", max, silent);
		ernic_mr_usage(tbl, &in_use, &hw, NULL);
		EXPECT(in_use == 0 && hw == max, "table %u: %u in use, high water %u", max, in_use, hw);
		free(seen);
		ernic_mr_table_destroy(tbl);
	}
}

/* A refused destroy changes nothing: not the count, not a live region elsewhere. */
static void test_refused_destroy_changes_nothing(void)
{
	static uint8_t region[4096];
	const uint32_t max = 1024;
	struct ernic_mr_table *tbl = ernic_mr_table_create(max);
	const uint32_t unknown[] = { 1000, max, max + 1, 1u << 24, UINT32_MAX };
	uint32_t live, gone, rkey, in_use, hw;
	void *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &live), 0);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &gone), 0);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, live, region, sizeof(region), ERNIC_MR_REMOTE_READ, &rkey), 0);
	CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, gone), 0);

	for (int round = 0; round < 3; round++) {
		CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, gone), -ENOENT);
		for (size_t i = 0; i < ERNIC_ARRAY_SIZE(unknown); i++)
			CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, unknown[i]), -ENOENT);
	}
	ernic_mr_usage(tbl, &in_use, &hw, NULL);
	CU_ASSERT_EQUAL(in_use, 1);
	CU_ASSERT_EQUAL(hw, 2);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, (uintptr_t)region, sizeof(region), ERNIC_MR_REMOTE_READ, &p),
			0);
	/* The table still fills to exactly max: no entry was lost or double-freed. */
	for (uint32_t i = 1; i < max; i++)
		CU_ASSERT_EQUAL_FATAL(ernic_mr_alloc(tbl, UT_PD, &gone), 0);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &gone), -ENOSPC);
	ernic_mr_table_destroy(tbl);
}

UT_MAIN("mrbudget", UT_CASE(test_every_admitted_queue_count_connects_with_exact_mr_demand),
	UT_CASE(test_queue_counts_past_bound_or_not_positive_refused_at_startup),
	UT_CASE(test_target_create_refuses_what_the_parser_refuses),
	UT_CASE(test_skipped_check_never_connects_past_controller_cap),
	UT_CASE(test_seed_text_for_queues_16_in_table_of_2048),
	UT_CASE(test_table_of_1024_with_8_queues_fails_at_qid_8_every_time),
	UT_CASE(test_connect_disconnect_cycles_of_15_queues_return_every_region),
	UT_CASE(test_disconnect_leaves_no_handle_behind), UT_CASE(test_handles_cover_every_suite_table_size),
	UT_CASE(test_refused_destroy_changes_nothing))
