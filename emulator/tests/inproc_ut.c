/* SPDX-License-Identifier: MIT */
/*
 * inproc_ut.c - the in-process rings and their poller threads, through the
 * host API: a million commands at queue depth 128 with every completion
 * accounted for exactly once, several queues driven from several threads at
 * once without mixing their data, an idle poller that sleeps and a doorbell
 * that wakes it, teardown with work in flight, connect/disconnect cycles that
 * leak nothing, and the queue-depth limit.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "target.h"
#include "ut.h"
#include "ut_fixture.h"

#define TIMEOUT_NS 20000000000ull
#define MILLION 1000000u

static struct ernic_target *target(uint32_t queues, uint32_t queue_size, uint32_t pollers, uint64_t size)
{
	struct ernic_target_opts opts = { 0 };
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt = NULL;
	char err[ERNIC_ERRLEN] = "";

	ernic_backend_cfg_init(&cfg);
	cfg.size = size;
	cfg.queues = queues;
	cfg.queue_size = queue_size;
	cfg.pollers = pollers;
	if (ut_target_start(&cfg, &opts, &tgt, err, sizeof(err)))
		fprintf(stderr, "target: %s\n", err);
	return tgt;
}

static void flush_sqe(struct nvme_sqe *sqe)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opc = NVME_CMD_FLUSH;
	sqe->nsid = 1;
}

/* ============================================= a million, every one once */

static void test_million_flushes_at_qd128_each_completes_exactly_once(void)
{
	const uint32_t total = MILLION, depth = 128;
	struct ernic_target *tgt = target(1, depth, 1, 1ull << 20);
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *qp;
	struct ernic_host_cpl cpls[128];
	struct ernic_counters c;
	uint8_t *outstanding = calloc(total / 8 + 1, 1);
	uint32_t submitted = 0, completed = 0, dups = 0, strays = 0, errors = 0, max_out = 0;
	uint64_t deadline = ernic_now_ns() + 4 * TIMEOUT_NS;
	struct nvme_sqe sqe;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	CU_ASSERT_PTR_NOT_NULL_FATAL(outstanding);
	hc = ut_host_connect(tgt, 1, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
	qp = ernic_host_io_qpair(hc, 1);
	CU_ASSERT_EQUAL_FATAL(ernic_host_qpair_depth(qp), depth);
	flush_sqe(&sqe);
	while (completed < total && ernic_now_ns() < deadline) {
		int n;

		while (submitted < total) {
			int rc = ernic_host_submit(qp, &sqe, NULL, 0, (void *)(uintptr_t)(submitted + 1));

			if (rc == -EBUSY)
				break;
			if (rc) {
				errors++;
				break;
			}
			outstanding[submitted / 8] |= (uint8_t)(1u << (submitted % 8));
			submitted++;
		}
		if (ernic_host_outstanding(qp) > max_out)
			max_out = ernic_host_outstanding(qp);
		n = ernic_host_poll(qp, cpls, 128);
		for (int i = 0; i < n; i++) {
			uintptr_t id = (uintptr_t)cpls[i].ctx;

			if (id == 0 || id > submitted) {
				strays++;
				continue;
			}
			id--;
			if (!(outstanding[id / 8] & (1u << (id % 8)))) {
				dups++;
				continue;
			}
			outstanding[id / 8] &= (uint8_t)~(1u << (id % 8));
			errors += cpls[i].status != 0;
			completed++;
		}
		if (n == 0)
			sched_yield();
	}
	CU_ASSERT_EQUAL(submitted, total);
	CU_ASSERT_EQUAL(completed, total);
	CU_ASSERT_EQUAL(dups, 0);
	CU_ASSERT_EQUAL(strays, 0);
	CU_ASSERT_EQUAL(errors, 0);
	CU_ASSERT_EQUAL(max_out, depth); /* the queue really ran full */
	CU_ASSERT_EQUAL(ernic_host_outstanding(qp), 0);
	for (uint32_t i = 0; i < total / 8 + 1; i++)
		if (outstanding[i]) {
			CU_FAIL("a submitted command never completed");
			break;
		}
	/* Nothing more arrives */
	ut_sleep_ms(5);
	CU_ASSERT_EQUAL(ernic_host_poll(qp, cpls, 128), 0);
	/* Every CID came back: the full depth can be submitted again, and no more */
	for (uint32_t i = 0; i < depth; i++)
		CU_ASSERT_EQUAL(ernic_host_submit(qp, &sqe, NULL, 0, NULL), 0);
	CU_ASSERT_EQUAL(ernic_host_submit(qp, &sqe, NULL, 0, NULL), -EBUSY);
	ernic_target_counters(tgt, &c);
	CU_ASSERT(c.io_cmds[NVME_CMD_FLUSH] >= total && c.io_cmds[NVME_CMD_FLUSH] <= total + depth);
	ernic_host_disconnect(hc);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_in_use, 0);
	CU_ASSERT_EQUAL(c.controllers, 0);
	ut_target_stop(tgt);
	free(outstanding);
}

/* Reads at full depth, each into its own buffer, each checked against its LBA. */
static void test_reads_at_qd128_return_their_own_block(void)
{
	const uint32_t depth = 128, nlbas = 512, total = MILLION / 20;
	struct ernic_target *tgt = target(1, depth, 1, (uint64_t)nlbas * 4096);
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *qp;
	struct ernic_host_cpl cpls[128];
	uint8_t (*bufs)[4096] = aligned_alloc(4096, (size_t)depth * 4096);
	uint64_t *lba_of = calloc(depth, sizeof(uint64_t));
	uint32_t free_slots[128], nr_free = depth, submitted = 0, completed = 0, bad = 0;
	uint64_t deadline = ernic_now_ns() + TIMEOUT_NS;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	CU_ASSERT_PTR_NOT_NULL_FATAL(bufs);
	CU_ASSERT_PTR_NOT_NULL_FATAL(lba_of);
	/* Each block starts with its own LBA */
	for (uint32_t l = 0; l < nlbas; l++) {
		uint64_t v = l * 0x9E3779B97F4A7C15ull;

		memcpy(tgt->ns[0].ram + (uint64_t)l * 4096, &v, sizeof(v));
		memcpy(tgt->ns[0].ram + (uint64_t)l * 4096 + 4088, &v, sizeof(v));
	}
	hc = ut_host_connect(tgt, 1, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
	qp = ernic_host_io_qpair(hc, 1);
	for (uint32_t i = 0; i < depth; i++)
		free_slots[i] = i;
	while (completed < total && ernic_now_ns() < deadline) {
		int n;

		while (submitted < total && nr_free) {
			uint32_t slot = free_slots[--nr_free];
			uint64_t lba = (submitted * 7919u) % nlbas;
			struct nvme_sqe sqe;

			ernic_host_rw_sqe(&sqe, NVME_CMD_READ, 1, lba, 1);
			memset(bufs[slot], 0, 4096);
			lba_of[slot] = lba;
			if (ernic_host_submit(qp, &sqe, bufs[slot], 4096, (void *)(uintptr_t)(slot + 1))) {
				nr_free++;
				break;
			}
			submitted++;
		}
		n = ernic_host_poll(qp, cpls, 128);
		for (int i = 0; i < n; i++) {
			uint32_t slot = (uint32_t)(uintptr_t)cpls[i].ctx - 1;
			uint64_t want = lba_of[slot] * 0x9E3779B97F4A7C15ull, got1, got2;

			memcpy(&got1, bufs[slot], 8);
			memcpy(&got2, bufs[slot] + 4088, 8);
			bad += cpls[i].status != 0 || got1 != want || got2 != want;
			free_slots[nr_free++] = slot;
			completed++;
		}
		if (!n)
			sched_yield();
	}
	CU_ASSERT_EQUAL(completed, total);
	CU_ASSERT_EQUAL(bad, 0);
	ernic_host_disconnect(hc);
	ut_target_stop(tgt);
	free(bufs);
	free(lba_of);
}

/* ==================================================== several threads at once */

#define MT_QUEUES 4
#define MT_BLOCKS 256
#define MT_DEPTH 32

struct mt_arg {
	struct ernic_host_qpair *qp;
	uint32_t q;
	uint32_t errors;
	uint32_t mismatches;
	uint32_t done;
};

static void mt_pattern(uint8_t *p, uint32_t q, uint64_t lba)
{
	for (uint32_t i = 0; i < 4096; i += 8) {
		uint64_t v = ((uint64_t)q << 56) ^ (lba << 20) ^ i;

		memcpy(p + i, &v, 8);
	}
}

/* Run @total commands at depth MT_DEPTH; write or read the thread's own range. */
static void mt_phase(struct mt_arg *a, uint8_t (*bufs)[4096], bool write)
{
	const uint64_t base = (uint64_t)a->q * MT_BLOCKS;
	uint32_t next = 0, completed = 0, nr_free = MT_DEPTH, free_slots[MT_DEPTH];
	uint64_t lba_of[MT_DEPTH];
	uint64_t deadline = ernic_now_ns() + TIMEOUT_NS;
	struct ernic_host_cpl cpls[MT_DEPTH];

	for (uint32_t i = 0; i < MT_DEPTH; i++)
		free_slots[i] = i;
	while (completed < MT_BLOCKS && ernic_now_ns() < deadline) {
		int n;

		while (next < MT_BLOCKS && nr_free) {
			uint32_t slot = free_slots[--nr_free];
			struct nvme_sqe sqe;

			ernic_host_rw_sqe(&sqe, write ? NVME_CMD_WRITE : NVME_CMD_READ, 1, base + next, 1);
			lba_of[slot] = base + next;
			if (write)
				mt_pattern(bufs[slot], a->q, base + next);
			else
				memset(bufs[slot], 0, 4096);
			if (ernic_host_submit(a->qp, &sqe, bufs[slot], 4096, (void *)(uintptr_t)(slot + 1))) {
				a->errors++;
				nr_free++;
				break;
			}
			next++;
		}
		n = ernic_host_poll(a->qp, cpls, MT_DEPTH);
		for (int i = 0; i < n; i++) {
			uint32_t slot = (uint32_t)(uintptr_t)cpls[i].ctx - 1;

			a->errors += cpls[i].status != 0;
			if (!write) {
				uint8_t want[4096];

				mt_pattern(want, a->q, lba_of[slot]);
				a->mismatches += memcmp(want, bufs[slot], 4096) != 0;
			}
			free_slots[nr_free++] = slot;
			completed++;
		}
		if (!n)
			sched_yield();
	}
	a->done += completed;
}

static void *mt_main(void *arg)
{
	struct mt_arg *a = arg;
	uint8_t (*bufs)[4096] = aligned_alloc(4096, MT_DEPTH * 4096);

	if (!bufs) {
		a->errors++;
		return NULL;
	}
	for (int round = 0; round < 2; round++) {
		mt_phase(a, bufs, true);
		mt_phase(a, bufs, false);
	}
	free(bufs);
	return NULL;
}

static void test_several_queues_from_several_threads_keep_their_data(void)
{
	struct ernic_target *tgt = target(MT_QUEUES, MT_DEPTH, 2, (uint64_t)(MT_QUEUES + 1) * MT_BLOCKS * 4096);
	struct ernic_host_ctrlr *hc;
	struct mt_arg args[MT_QUEUES];
	pthread_t th[MT_QUEUES];
	struct ernic_counters c;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	hc = ut_host_connect(tgt, MT_QUEUES, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
	CU_ASSERT_EQUAL_FATAL(ernic_host_nr_io_queues(hc), MT_QUEUES);
	for (uint32_t q = 0; q < MT_QUEUES; q++) {
		args[q] = (struct mt_arg){ .qp = ernic_host_io_qpair(hc, (uint16_t)(q + 1)), .q = q + 1 };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[q], NULL, mt_main, &args[q]), 0);
	}
	for (uint32_t q = 0; q < MT_QUEUES; q++) {
		pthread_join(th[q], NULL);
		CU_ASSERT_EQUAL(args[q].errors, 0);
		CU_ASSERT_EQUAL(args[q].mismatches, 0);
		CU_ASSERT_EQUAL(args[q].done, 4 * MT_BLOCKS);
	}
	/* Nobody wrote outside its own range: block range 0 is untouched */
	for (uint64_t off = 0; off < MT_BLOCKS * 4096; off += 4096)
		if (tgt->ns[0].ram[off] || tgt->ns[0].ram[off + 4095]) {
			CU_FAIL("a write landed outside every thread's range");
			break;
		}
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.io_cmds[NVME_CMD_WRITE], 2 * MT_QUEUES * MT_BLOCKS);
	CU_ASSERT_EQUAL(c.io_cmds[NVME_CMD_READ], 2 * MT_QUEUES * MT_BLOCKS);
	CU_ASSERT_EQUAL(c.bytes_written - (MT_QUEUES + 1) * 1024, 2ull * MT_QUEUES * MT_BLOCKS * 4096);
	ernic_host_disconnect(hc);
	ut_target_stop(tgt);
}

/* ============================================================ sleep and wake */

/* The poller thread's id by its name, or 0. */
static pid_t find_thread(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t found = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && !found) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, name, strlen(name)) &&
		    (comm[strlen(name)] == '\n' || comm[strlen(name)] == '\0'))
			found = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return found;
}

/* State letter and utime + stime in clock ticks of a thread. */
static bool thread_stat(pid_t tid, char *state, unsigned long long *ticks)
{
	char path[64], line[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	p = fgets(line, sizeof(line), f);
	fclose(f);
	if (!p || !(p = strrchr(line, ')')))
		return false;
	/* After "comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
	if (sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", state, &ut, &st) != 3)
		return false;
	*ticks = ut + st;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_idle_poller_sleeps_and_doorbell_wakes_it(void)
{
	struct ernic_target *tgt = target(1, 32, 1, 1ull << 20);
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *qp;
	unsigned long long t0 = 0, t1 = 0;
	uint64_t lat[21], worst;
	char state = '?';
	bool slept = false;
	int prompt = 0;
	pid_t tid;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	hc = ut_host_connect(tgt, 1, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
	qp = ernic_host_io_qpair(hc, 1);
	tid = find_thread("ernic-poll0");
	CU_ASSERT_FATAL(tid > 0);

	/* Idle: the poller goes to sleep and costs (next to) no CPU */
	ut_sleep_ms(50);
	for (int i = 0; i < 50 && !slept; i++) {
		CU_ASSERT_FATAL(thread_stat(tid, &state, &t0));
		slept = state == 'S';
		if (!slept)
			ut_sleep_ms(5);
	}
	CU_ASSERT_TRUE(slept);
	CU_ASSERT_FATAL(thread_stat(tid, &state, &t0));
	ut_sleep_ms(500);
	CU_ASSERT_FATAL(thread_stat(tid, &state, &t1));
	CU_ASSERT(t1 - t0 <= 5); /* a spinning poller would burn most of the 500 ms (50 ticks) */

	/* Submit after 10 ms asleep: the doorbell wakes it, the completion is prompt */
	for (int i = 0; i < 21; i++) {
		struct ernic_host_cpl cpl;
		struct nvme_sqe sqe;
		uint64_t start, deadline;

		ut_sleep_ms(10);
		flush_sqe(&sqe);
		start = ernic_now_ns();
		deadline = start + TIMEOUT_NS;
		CU_ASSERT_EQUAL_FATAL(ernic_host_submit(qp, &sqe, NULL, 0, NULL), 0);
		while (ernic_host_poll(qp, &cpl, 1) == 0 && ernic_now_ns() < deadline)
			sched_yield();
		lat[i] = ernic_now_ns() - start;
		CU_ASSERT_EQUAL(cpl.status, 0);
	}
	qsort(lat, 21, sizeof(lat[0]), cmp_u64);
	worst = lat[20];
	CU_ASSERT(worst < 1000000000ull);
	/*
	 * Without the wake-up the poller would notice only at its 100 ms futex
	 * timeout, spread evenly over 0..100 ms: about 8 of 21 under 40 ms. Woken,
	 * each is scheduling latency; 15 of 21 leaves room for a busy machine.
	 */
	for (int i = 0; i < 21; i++)
		prompt += lat[i] < 40000000ull;
	CU_ASSERT(prompt >= 15);
	if (prompt < 15 || worst >= 1000000000ull)
		fprintf(stderr, "\n  wake latency: %d of 21 under 40 ms, median %llu us, worst %llu us\n", prompt,
			(unsigned long long)lat[10] / 1000, (unsigned long long)worst / 1000);
	ernic_host_disconnect(hc);
	ut_target_stop(tgt);
}

/* ============================================================ the port */

/*
 * The target's mr_* counters are its in-process ports' tables: none before a
 * port exists (a TCP-only target, ernicd's), the table of max_mr entries
 * while one does, none again once it is gone; and a host needs a port.
 */
static void test_memory_regions_are_counted_only_while_an_inproc_port_exists(void)
{
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt = NULL;
	struct ernic_inproc_port *port = NULL;
	const struct ernic_inproc_port_opts popts = { .pollers = 2 };
	struct ernic_host_ctrlr *hc = NULL;
	struct ernic_counters c;
	char err[ERNIC_ERRLEN] = "";

	ernic_backend_cfg_init(&cfg);
	cfg.size = 1u << 20;
	cfg.max_mr = 1024;
	cfg.queues = 2;
	CU_ASSERT_EQUAL_FATAL(ernic_target_create(&cfg, NULL, &tgt, err, sizeof(err)), 0);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_max, 0);
	CU_ASSERT_EQUAL(c.mr_in_use, 0);
	CU_ASSERT_EQUAL(ernic_host_connect(NULL, NULL, &hc, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NULL(hc);
	CU_ASSERT_STRING_EQUAL(err, "no in-process port to connect to");

	CU_ASSERT_EQUAL_FATAL(ernic_inproc_port_create(tgt, &popts, &port, err, sizeof(err)), 0);
	/* The port's own pollers: the second names itself once it runs. */
	for (int i = 0; i < 1000 && !find_thread("ernic-poll1"); i++)
		ut_sleep_ms(1);
	CU_ASSERT_NOT_EQUAL(find_thread("ernic-poll1"), 0);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_max, 1024);
	CU_ASSERT_EQUAL(c.mr_in_use, 0);
	CU_ASSERT_EQUAL_FATAL(ernic_host_connect(port, NULL, &hc, err, sizeof(err)), 0);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_in_use, 2 * cfg.queue_size + ERNIC_ADMIN_QUEUE_SIZE);
	ernic_host_disconnect(hc);
	ernic_inproc_port_destroy(port);

	CU_ASSERT_EQUAL(find_thread("ernic-poll0"), 0);
	CU_ASSERT_EQUAL(find_thread("ernic-poll1"), 0);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_max, 0);
	CU_ASSERT_EQUAL(c.mr_high_water, 0);
	ernic_target_destroy(tgt);
}

/* ===================================================== teardown, depth, cycles */

static void expect_clean(struct ernic_target *tgt)
{
	struct ernic_counters c;

	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_in_use, 0);
	CU_ASSERT_EQUAL(c.controllers, 0);
	CU_ASSERT_EQUAL(c.io_queues, 0);
}

static void test_disconnect_with_nothing_submitted_leaves_nothing(void)
{
	struct ernic_target *tgt = target(4, 64, 2, 1ull << 20);
	struct ernic_host_ctrlr *hc;
	struct ernic_counters c;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	hc = ut_host_connect(tgt, 4, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_in_use, 4 * 64 + 32);
	CU_ASSERT_EQUAL(c.io_queues, 4);
	ernic_host_disconnect(hc);
	expect_clean(tgt);
	ut_target_stop(tgt);
}

static void test_disconnect_with_unreaped_commands_leaves_nothing(void)
{
	struct ernic_target *tgt = target(2, 32, 1, 1ull << 20);
	struct ernic_host_ctrlr *hc;
	uint8_t *buf = aligned_alloc(4096, 20 * 4096);

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	hc = ut_host_connect(tgt, 2, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
	for (int q = 1; q <= 2; q++)
		for (int i = 0; i < 10; i++) {
			struct nvme_sqe sqe;
			int k = (q - 1) * 10 + i;

			ernic_host_rw_sqe(&sqe, NVME_CMD_READ, 1, (uint64_t)k, 1);
			CU_ASSERT_EQUAL(ernic_host_submit(ernic_host_io_qpair(hc, (uint16_t)q), &sqe, buf + k * 4096,
							  4096, NULL),
					0);
		}
	CU_ASSERT_EQUAL(ernic_host_outstanding(ernic_host_io_qpair(hc, 1)), 10);
	ernic_host_disconnect(hc);
	expect_clean(tgt);
	/* The buffers are the caller's again: ASan would see a late RDMA WRITE into freed memory */
	free(buf);
	ut_sleep_ms(20);
	ut_target_stop(tgt);
}

static void test_100_connect_disconnect_cycles_leak_nothing(void)
{
	struct ernic_target *tgt = target(2, 32, 1, 1ull << 20);
	struct ernic_counters c;
	uint16_t prev = 0;
	int failed = 0, same_cntlid = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	for (int i = 0; i < 100; i++) {
		struct ernic_host_ctrlr *hc = ut_host_connect(tgt, 2, 0);

		if (!hc) {
			failed++;
			continue;
		}
		same_cntlid += ernic_host_cntlid(hc) == prev;
		prev = ernic_host_cntlid(hc);
		ernic_host_disconnect(hc);
	}
	CU_ASSERT_EQUAL(failed, 0);
	CU_ASSERT_EQUAL(same_cntlid, 0);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_in_use, 0);
	CU_ASSERT_EQUAL(c.controllers, 0);
	CU_ASSERT_EQUAL(c.io_queues, 0);
	CU_ASSERT_EQUAL(c.mr_high_water, 2 * 32 + 32);
	CU_ASSERT_EQUAL(c.io_cmds[NVME_FABRICS_COMMAND], 100 * 2 * 2); /* Connect + Disconnect per I/O queue */
	ut_target_stop(tgt);
}

/*
 * A keep-alive expiry tears the queue pairs down as a lost RDMA QP: the host
 * sees them gone, and the controller and its counters return to rest.
 */
static void test_keep_alive_expiry_tears_the_queue_pairs_down(void)
{
	struct ernic_target *tgt = target(2, 32, 2, 1ull << 20);
	const struct ernic_host_opts opts = { .nr_io_queues = 2, .kato_ms = 200 };
	struct ernic_host_ctrlr *hc = NULL;
	struct ernic_counters c;
	char err[ERNIC_ERRLEN] = "";
	struct nvme_sqe sqe;
	uint64_t deadline;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	CU_ASSERT_EQUAL_FATAL(ernic_host_connect(ut_port(tgt), &opts, &hc, err, sizeof(err)), 0);
	CU_ASSERT_TRUE(ernic_host_qpair_connected(ernic_host_io_qpair(hc, 1)));
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.controllers, 1);
	/* No Keep Alive: within KATO and the pollers' check period, everything goes */
	deadline = ut_now_ns() + 3000000000ull;
	do {
		ut_sleep_ms(20);
		ernic_target_counters(tgt, &c);
	} while ((c.controllers || c.io_queues) && ut_now_ns() < deadline);
	CU_ASSERT_EQUAL(c.controllers, 0);
	CU_ASSERT_EQUAL(c.io_queues, 0);
	CU_ASSERT_FALSE(ernic_host_qpair_connected(ernic_host_admin_qpair(hc)));
	for (uint16_t qid = 1; qid <= 2; qid++) {
		struct ernic_host_qpair *qp = ernic_host_io_qpair(hc, qid);

		CU_ASSERT_FALSE(ernic_host_qpair_connected(qp));
		flush_sqe(&sqe);
		CU_ASSERT_EQUAL(ernic_host_submit(qp, &sqe, NULL, 0, NULL), -ENOTCONN);
		CU_ASSERT_EQUAL(ernic_host_outstanding(qp), 0);
	}
	ernic_host_disconnect(hc);
	expect_clean(tgt);
	ut_target_stop(tgt);
}

static void test_submit_beyond_queue_depth_is_ebusy(void)
{
	struct ernic_target *tgt = target(1, 64, 1, 1ull << 20);
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *qp;
	struct ernic_host_cpl cpls[16];
	struct ernic_counters c0, c1;
	static uint8_t buf[4096];
	struct nvme_sqe sqe;
	uint64_t deadline;
	uint32_t got = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	hc = ut_host_connect(tgt, 1, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
	qp = ernic_host_io_qpair(hc, 1);
	CU_ASSERT_EQUAL_FATAL(ernic_host_qpair_depth(qp), 16);
	flush_sqe(&sqe);
	for (int i = 0; i < 16; i++)
		CU_ASSERT_EQUAL(ernic_host_submit(qp, &sqe, NULL, 0, NULL), 0);
	CU_ASSERT_EQUAL(ernic_host_outstanding(qp), 16);
	/* Completed by the target or not, nothing is free until the host reaps */
	ut_sleep_ms(5);
	ernic_target_counters(tgt, &c0);
	ernic_host_rw_sqe(&sqe, NVME_CMD_READ, 1, 0, 1);
	CU_ASSERT_EQUAL(ernic_host_submit(qp, &sqe, buf, sizeof(buf), NULL), -EBUSY);
	CU_ASSERT_EQUAL(ernic_host_submit(qp, &sqe, NULL, 0, NULL), -EBUSY);
	CU_ASSERT_EQUAL(ernic_host_outstanding(qp), 16);
	ernic_target_counters(tgt, &c1);
	CU_ASSERT_EQUAL(c1.mr_in_use, c0.mr_in_use);
	CU_ASSERT_EQUAL(c1.io_cmds[NVME_CMD_READ], 0); /* the refused ones never reached the target */
	deadline = ernic_now_ns() + TIMEOUT_NS;
	while (got < 16 && ernic_now_ns() < deadline)
		got += (uint32_t)ernic_host_poll(qp, cpls, 16);
	CU_ASSERT_EQUAL(got, 16);
	CU_ASSERT_EQUAL(ernic_host_outstanding(qp), 0);
	CU_ASSERT_EQUAL(ernic_host_submit(qp, &sqe, buf, sizeof(buf), NULL), 0);
	ernic_host_disconnect(hc);
	expect_clean(tgt);
	ut_target_stop(tgt);
}

/* ===================================================================== AER */

/*
 * A host with Namespace Attribute notices enabled and one AER (ctx 0xAE)
 * submitted on the admin queue, held by the controller. The AER's SQE stays
 * in *sqe for another submit.
 */
static struct ernic_host_ctrlr *aer_armed(struct ernic_target *tgt, struct ernic_host_qpair **aq, struct nvme_sqe *sqe)
{
	struct ernic_host_ctrlr *hc = ut_host_connect(tgt, 1, 0);

	if (!hc)
		return NULL;
	CU_ASSERT_EQUAL(ut_admin(hc, NVME_ADMIN_SET_FEATURES, NVME_FEAT_ASYNC_EVENT, NVME_CTRL_OAES_NS_ATTR, NULL), 0);
	*aq = ernic_host_admin_qpair(hc);
	memset(sqe, 0, sizeof(*sqe));
	sqe->opc = NVME_ADMIN_ASYNC_EVENT;
	CU_ASSERT_EQUAL(ernic_host_submit(*aq, sqe, NULL, 0, (void *)0xAE), 0);
	ut_sleep_ms(20);
	return hc;
}

/* The next completion of @aq within @timeout_ns into *cpl: 1, or 0 if none came. */
static int aer_wait(struct ernic_host_qpair *aq, struct ernic_host_cpl *cpl, uint64_t timeout_ns)
{
	uint64_t deadline = ernic_now_ns() + timeout_ns;
	int n;

	while ((n = ernic_host_poll(aq, cpl, 1)) == 0 && ernic_now_ns() < deadline)
		sched_yield();
	return n;
}

static void test_aer_through_admin_ring_completes_on_ns_changed(void)
{
	struct ernic_target *tgt = target(1, 32, 1, 1ull << 20);
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *aq;
	struct ernic_host_cpl cpl = { 0 };
	struct nvme_sqe sqe;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	hc = aer_armed(tgt, &aq, &sqe);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
	CU_ASSERT_EQUAL(ernic_host_poll(aq, &cpl, 1), 0); /* held */
	ernic_target_ns_changed(tgt, 1);
	CU_ASSERT_EQUAL(aer_wait(aq, &cpl, TIMEOUT_NS), 1);
	CU_ASSERT_PTR_EQUAL(cpl.ctx, (void *)0xAE);
	CU_ASSERT_EQUAL(cpl.status, 0);
	CU_ASSERT_EQUAL(cpl.dw0, 0x00040002u);
	/* A held AER at disconnect is aborted, not leaked */
	CU_ASSERT_EQUAL(ernic_host_submit(aq, &sqe, NULL, 0, (void *)0xAF), 0);
	ernic_host_disconnect(hc);
	expect_clean(tgt);
	ut_target_stop(tgt);
}

/*
 * Namespace-change notices raised while the host reads the SMART log with an
 * AER outstanding: the notifier and the poller must not deadlock. Run in a
 * child so a deadlock fails this test instead of hanging the suite.
 */
static int aer_smart_child(void)
{
	struct ernic_target *tgt = target(1, 32, 1, 1ull << 20);
	struct ernic_host_ctrlr *hc = tgt ? ut_host_connect(tgt, 1, 0) : NULL;
	struct ernic_host_qpair *aq;
	static uint8_t page[4][512];
	struct nvme_sqe aer, smart;
	int aers_out = 0;
	uint64_t stop;

	if (!hc || ut_admin(hc, NVME_ADMIN_SET_FEATURES, NVME_FEAT_ASYNC_EVENT, NVME_CTRL_OAES_NS_ATTR, NULL))
		return 2;
	aq = ernic_host_admin_qpair(hc);
	memset(&aer, 0, sizeof(aer));
	aer.opc = NVME_ADMIN_ASYNC_EVENT;
	memset(&smart, 0, sizeof(smart));
	smart.opc = NVME_ADMIN_GET_LOG_PAGE;
	smart.nsid = 0xFFFFFFFF;
	smart.cdw10 = NVME_LOG_SMART | (512 / 4 - 1) << 16;
	/* Up to 20000 rounds or 3 s, whichever ends first; a deadlock ends neither */
	stop = ernic_now_ns() + 3000000000ull;

	for (int i = 0; i < 20000 && ernic_now_ns() < stop; i++) {
		struct ernic_host_cpl cpls[16];
		int smarts = 0;

		/* Four AERs held (AERL + 1), four log reads queued, four notices raised */
		while (aers_out < ERNIC_AERL && !ernic_host_submit(aq, &aer, NULL, 0, (void *)1))
			aers_out++;
		for (int k = 0; k < 4; k++)
			if (ernic_host_submit(aq, &smart, page[k], sizeof(page[k]), (void *)2))
				return 3;
		for (int k = 0; k < 4; k++)
			ernic_target_ns_changed(tgt, 1);
		while (smarts < 4) {
			int n = ernic_host_poll(aq, cpls, 16);

			for (int k = 0; k < n; k++) {
				if (cpls[k].ctx == (void *)1)
					aers_out--;
				else
					smarts++;
			}
			if (!n)
				sched_yield();
		}
	}
	ernic_host_disconnect(hc);
	ut_target_stop(tgt);
	return 0;
}

static void test_ns_changed_during_smart_log_does_not_deadlock(void)
{
	pid_t pid;
	int status = 0;
	uint64_t deadline;

	fflush(NULL);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		_exit(aer_smart_child());
	deadline = ernic_now_ns() + 10000000000ull;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (ernic_now_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			CU_FAIL("deadlock: ernic_target_ns_changed and an admin command on the poller");
			return;
		}
		ut_sleep_ms(10);
	}
	CU_ASSERT_TRUE(WIFEXITED(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
}

/* An AER that completes while ernic_host_admin() polls the admin queue reaches the next ernic_host_poll(). */
static void test_aer_completion_survives_a_synchronous_admin_command(void)
{
	struct ernic_target *tgt = target(1, 32, 1, 1ull << 20);
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *aq;
	struct ernic_host_cpl cpl = { 0 };
	struct nvme_sqe sqe;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	hc = aer_armed(tgt, &aq, &sqe);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
	ernic_target_ns_changed(tgt, 1); /* the held AER completes: its CQE is in the admin CQ now */
	/* On the same thread, as ernic_host_admin_qpair() allows: the admin command must not swallow the AER */
	CU_ASSERT_EQUAL(ut_admin(hc, NVME_ADMIN_GET_FEATURES, NVME_FEAT_NUM_QUEUES, 0, NULL), 0);
	CU_ASSERT_EQUAL(aer_wait(aq, &cpl, 1000000000ull), 1);
	CU_ASSERT_PTR_EQUAL(cpl.ctx, (void *)0xAE);
	ernic_host_disconnect(hc);
	ut_target_stop(tgt);
}

/* A submit refused at fast registration never went out: it does not count toward 1 in N. */
static void test_a_submit_refused_at_registration_is_not_one_of_the_n(void)
{
	struct ernic_target *tgt = target(1, 8, 1, 1ull << 20);
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *qp;
	struct ernic_stage_stats s;
	static uint8_t buf[4096];
	struct nvme_sqe sqe;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	hc = ut_host_connect(tgt, 1, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
	qp = ernic_host_io_qpair(hc, 1);
	ernic_host_set_stage_sampling(hc, 3);
	ernic_host_rw_sqe(&sqe, NVME_CMD_READ, 1, 0, 1);
	CU_ASSERT_EQUAL(ernic_host_submit(qp, &sqe, buf, sizeof(buf), NULL), 0);
	/* A region that cannot be registered (addr + len wraps): refused, never goes out */
	rc = ernic_host_submit(qp, &sqe, (void *)(UINTPTR_MAX - 100), 4096, NULL);
	CU_ASSERT_EQUAL(rc, -EINVAL);
	CU_ASSERT_EQUAL(ernic_host_outstanding(qp), 1);
	CU_ASSERT_EQUAL(ernic_host_submit(qp, &sqe, buf, sizeof(buf), NULL), 0);
	CU_ASSERT_EQUAL(ut_wait_cpl(qp, NULL, NULL), 0);
	CU_ASSERT_EQUAL(ut_wait_cpl(qp, NULL, NULL), 0);
	ernic_host_stage_stats(hc, &s);
	CU_ASSERT_EQUAL(s.samples, 0); /* 1 in 3: the two that went out are not the third */
	ernic_host_disconnect(hc);
	ut_target_stop(tgt);
}

UT_MAIN("inproc", UT_CASE(test_aer_completion_survives_a_synchronous_admin_command),
	UT_CASE(test_a_submit_refused_at_registration_is_not_one_of_the_n), UT_CASE(test_million_flushes_at_qd128_each_completes_exactly_once),
	UT_CASE(test_reads_at_qd128_return_their_own_block),
	UT_CASE(test_several_queues_from_several_threads_keep_their_data),
	UT_CASE(test_idle_poller_sleeps_and_doorbell_wakes_it),
	UT_CASE(test_disconnect_with_nothing_submitted_leaves_nothing),
	UT_CASE(test_disconnect_with_unreaped_commands_leaves_nothing),
	UT_CASE(test_100_connect_disconnect_cycles_leak_nothing), UT_CASE(test_keep_alive_expiry_tears_the_queue_pairs_down), UT_CASE(test_submit_beyond_queue_depth_is_ebusy),
	UT_CASE(test_aer_through_admin_ring_completes_on_ns_changed),
	UT_CASE(test_ns_changed_during_smart_log_does_not_deadlock),
	UT_CASE(test_memory_regions_are_counted_only_while_an_inproc_port_exists))
