/* SPDX-License-Identifier: MIT */
/*
 * storage_ut.c - namespace backends under faults, through the host API and
 * the in-process transport: each fault= form reaches the host as its NVMe
 * status, a stall delays only the command that meets it, and a failing
 * command leaves every other command's data, on its queue and on others,
 * intact.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "target.h"
#include "ut.h"
#include "ut_fixture.h"

#define TIMEOUT_NS 10000000000ull
#define BS 4096u
#define MAX_BATCH 32

static struct {
	struct ernic_target *tgt;
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *qp[2];
	char dir[64];
	char path[128];
} fx;

/* ------------------------------------------------------------------ fixture */

/*
 * A target from @backend (a file namespace in a fresh directory when @file),
 * two pollers, and a host with two I/O queues.
 */
static bool fx_up(const char *backend, bool file)
{
	struct ernic_target_opts opts = { 0 };
	struct ernic_host_opts hopts = { .nr_io_queues = 2 };
	struct ernic_backend_cfg cfg = { .skip_mr_budget = false };
	char err[ERNIC_ERRLEN] = "";

	memset(&fx, 0, sizeof(fx));
	if (ernic_backend_parse(backend, &cfg, err, sizeof(err))) {
		fprintf(stderr, "backend: %s\n", err);
		return false;
	}
	if (file) {
		snprintf(fx.dir, sizeof(fx.dir), "/tmp/ernic_storage_ut.XXXXXX");
		if (!mkdtemp(fx.dir))
			return false;
		snprintf(fx.path, sizeof(fx.path), "%s/ns0.img", fx.dir);
		snprintf(cfg.file, sizeof(cfg.file), "%s", fx.path);
	}
	cfg.pollers = 2;
	if (ut_target_start(&cfg, &opts, &fx.tgt, err, sizeof(err))) {
		fprintf(stderr, "target: %s\n", err);
		return false;
	}
	if (ernic_host_connect(ut_port(fx.tgt), &hopts, &fx.hc, err, sizeof(err))) {
		fprintf(stderr, "connect: %s\n", err);
		return false;
	}
	fx.qp[0] = ernic_host_io_qpair(fx.hc, 1);
	fx.qp[1] = ernic_host_io_qpair(fx.hc, 2);
	return fx.qp[0] && fx.qp[1];
}

static void fx_down(void)
{
	if (fx.hc)
		ernic_host_disconnect(fx.hc);
	if (fx.tgt)
		ut_target_stop(fx.tgt);
	if (fx.dir[0]) {
		unlink(fx.path);
		rmdir(fx.dir);
	}
	memset(&fx, 0, sizeof(fx));
}

/* ------------------------------------------------------------------ commands */

/*
 * One command of a batch: submitted with the others before any is reaped.
 * @cdw12_flags: bits ORed into CDW12 (FUA)
 */
struct op {
	uint8_t opc;
	uint64_t slba;
	uint32_t nlb;
	uint32_t cdw12_flags;
	uint8_t *buf;
	uint16_t status;
	bool done;
};

/* Submit every op (op i on queue i % @nr_queues), then reap them all. */
static void batch(struct op *ops, size_t n, unsigned nr_queues)
{
	uint64_t deadline = ernic_now_ns() + TIMEOUT_NS;
	size_t left = n;

	for (size_t i = 0; i < n; i++) {
		struct nvme_sqe sqe;

		ernic_host_rw_sqe(&sqe, ops[i].opc, 1, ops[i].slba, ops[i].nlb);
		sqe.cdw12 |= ops[i].cdw12_flags;
		ops[i].done = false;
		CU_ASSERT_EQUAL_FATAL(ernic_host_submit(fx.qp[i % nr_queues], &sqe, ops[i].buf,
							ops[i].buf ? ops[i].nlb * BS : 0, &ops[i]),
				      0);
	}
	while (left) {
		struct ernic_host_cpl cpl;
		bool got = false;

		for (unsigned q = 0; q < nr_queues; q++) {
			if (ernic_host_poll(fx.qp[q], &cpl, 1) != 1)
				continue;
			struct op *op = cpl.ctx;

			CU_ASSERT_FALSE(op->done);
			op->status = cpl.status;
			op->done = true;
			left--;
			got = true;
		}
		if (!got && ernic_now_ns() > deadline) {
			CU_FAIL("no completion within 10 s");
			return;
		}
		if (!got)
			sched_yield();
	}
}

static uint16_t io1(uint8_t opc, uint64_t slba, uint32_t nlb, uint8_t *buf, uint32_t cdw12_flags)
{
	struct op op = { .opc = opc, .slba = slba, .nlb = nlb, .buf = buf, .cdw12_flags = cdw12_flags };

	batch(&op, 1, 1);
	return op.status;
}

/* A block pattern unique to @seed */
static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 131u + seed * 7u + (i >> 9)) ^ (seed >> 3));
}

/* Whether LBA @lba reads back as fill(@seed) */
static bool block_holds(uint64_t lba, uint32_t seed)
{
	uint8_t want[BS], got[BS];

	fill(want, BS, seed);
	memset(got, 0xEE, BS);
	if (io1(NVME_CMD_READ, lba, 1, got, 0) != NVME_SC_SUCCESS)
		return false;
	return !memcmp(want, got, BS);
}

static bool block_holds_zeroes(uint64_t lba)
{
	uint8_t zero[BS] = { 0 }, got[BS];

	memset(got, 0xEE, BS);
	return io1(NVME_CMD_READ, lba, 1, got, 0) == NVME_SC_SUCCESS && !memcmp(zero, got, BS);
}

static uint16_t write_block(uint64_t lba, uint32_t seed)
{
	uint8_t buf[BS];

	fill(buf, BS, seed);
	return io1(NVME_CMD_WRITE, lba, 1, buf, 0);
}

/* ============================================================ fault= forms */

static void test_eio_at_n_fails_the_nth_read_once_as_unrecovered_read_error(void)
{
	uint8_t buf[BS];

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M,fault=eio@3", false));
	CU_ASSERT_EQUAL(write_block(0, 1), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io1(NVME_CMD_READ, 0, 1, buf, 0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io1(NVME_CMD_READ, 0, 1, buf, 0), NVME_SC_UNRECOVERED_READ);
	for (int i = 0; i < 5; i++)
		CU_ASSERT_TRUE(block_holds(0, 1));
	fx_down();
}

static void test_eio_at_n_fails_the_nth_write_as_write_fault_and_spares_its_neighbours(void)
{
	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M,fault=eio@5", true));
	for (uint32_t lba = 0; lba < 3; lba++)
		CU_ASSERT_EQUAL(write_block(lba, 10 + lba), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(write_block(0, 20), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(write_block(1, 21), NVME_SC_WRITE_FAULT);
	CU_ASSERT_EQUAL(write_block(2, 22), NVME_SC_SUCCESS);
	CU_ASSERT_TRUE(block_holds(0, 20));
	CU_ASSERT_TRUE(block_holds(1, 11)); /* the failed write changed nothing */
	CU_ASSERT_TRUE(block_holds(2, 22));
	fx_down();
}

static void test_eio_every_nth_fails_exactly_every_nth_data_command(void)
{
	uint8_t buf[BS];

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M,fault=eio%3", false));
	for (int i = 1; i <= 9; i++) {
		uint16_t st = i % 2 ? io1(NVME_CMD_READ, 7, 1, buf, 0) : io1(NVME_CMD_WRITE, 7, 1, buf, 0);
		uint16_t want = i % 3 ? NVME_SC_SUCCESS : i % 2 ? NVME_SC_UNRECOVERED_READ : NVME_SC_WRITE_FAULT;

		CU_ASSERT_EQUAL(st, want);
	}
	fx_down();
}

static void test_eio_on_one_queue_harms_no_command_in_flight_on_either_queue(void)
{
	struct op ops[MAX_BATCH];
	static uint8_t bufs[MAX_BATCH][BS];
	unsigned failed = 0, failed_i = 0;

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M,fault=eio@11", true));
	/* Ten writes set the old data; the eleventh command to reach the medium then fails. */
	for (uint32_t i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(write_block(100 + i, 1000 + i), NVME_SC_SUCCESS);
	for (uint32_t i = 0; i < MAX_BATCH; i++) {
		fill(bufs[i], BS, 2000 + i);
		ops[i] = (struct op){ .opc = NVME_CMD_WRITE, .slba = 100 + i, .nlb = 1, .buf = bufs[i] };
	}
	batch(ops, MAX_BATCH, 2);
	for (uint32_t i = 0; i < MAX_BATCH; i++) {
		if (ops[i].status == NVME_SC_SUCCESS)
			continue;
		CU_ASSERT_EQUAL(ops[i].status, NVME_SC_WRITE_FAULT);
		failed++;
		failed_i = i;
	}
	CU_ASSERT_EQUAL_FATAL(failed, 1);
	for (uint32_t i = 0; i < MAX_BATCH; i++) {
		/* The failed write's block holds what it held before: the old pattern or zeroes. */
		bool ok = i != failed_i ? block_holds(100 + i, 2000 + i) :
			  i < 10	 ? block_holds(100 + i, 1000 + i) :
					   block_holds_zeroes(100 + i);

		CU_ASSERT_TRUE(ok);
	}
	fx_down();
}

static void test_delay_stalls_every_command_at_least_the_delay(void)
{
	const uint64_t delay_ns = 20000000; /* fault=delay_us=20000 */
	uint8_t buf[BS];
	uint64_t t;

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M,fault=delay_us=20000", false));
	t = ernic_now_ns();
	CU_ASSERT_EQUAL(write_block(3, 3), NVME_SC_SUCCESS);
	CU_ASSERT(ernic_now_ns() - t >= delay_ns);
	t = ernic_now_ns();
	CU_ASSERT_EQUAL(io1(NVME_CMD_READ, 3, 1, buf, 0), NVME_SC_SUCCESS);
	CU_ASSERT(ernic_now_ns() - t >= delay_ns);
	CU_ASSERT_TRUE(block_holds(3, 3));
	fx_down();
}

static void test_unfaulted_namespace_calls_its_backend_directly(void)
{
	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M", false));
	CU_ASSERT_PTR_NULL(fx.tgt->ns[0].backend_ops);
	CU_ASSERT_STRING_EQUAL(fx.tgt->ns[0].ops->name, "ram");
	fx_down();
	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M,fault=delay_us=1", true));
	CU_ASSERT_STRING_EQUAL(fx.tgt->ns[0].ops->name, "fault");
	CU_ASSERT_STRING_EQUAL(fx.tgt->ns[0].backend_ops->name, "file");
	fx_down();
}

/* ========================================================= storage errors */

static void test_enospc_is_capacity_exceeded_and_reads_go_on(void)
{
	uint8_t buf[BS];
	struct ernic_counters c;

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M,fault=enospc@2", true));
	CU_ASSERT_EQUAL(write_block(0, 1), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(write_block(1, 2), NVME_SC_CAP_EXCEEDED);
	CU_ASSERT_EQUAL(io1(NVME_CMD_READ, 0, 1, buf, 0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(write_block(2, 3), NVME_SC_SUCCESS);
	CU_ASSERT_TRUE(block_holds(0, 1));
	CU_ASSERT_TRUE(block_holds_zeroes(1));
	CU_ASSERT_TRUE(block_holds(2, 3));
	ernic_target_counters(fx.tgt, &c);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_CAP_EXCEEDED], 1);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_INTERNAL], 0);
	fx_down();

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M,fault=enospc", false));
	CU_ASSERT_EQUAL(write_block(0, 1), NVME_SC_CAP_EXCEEDED);
	CU_ASSERT_EQUAL(write_block(0, 1), NVME_SC_CAP_EXCEEDED);
	CU_ASSERT_TRUE(block_holds_zeroes(0));
	fx_down();
}

static void test_enospc_among_reads_and_writes_in_flight_fails_only_its_write(void)
{
	struct op ops[MAX_BATCH];
	static uint8_t bufs[MAX_BATCH][BS];
	unsigned failed = 0, failed_i = 0;

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M,fault=enospc@20", true));
	/* Sixteen writes set the data the reads check; the 20th write overall then fails. */
	for (uint32_t i = 0; i < MAX_BATCH / 2; i++)
		CU_ASSERT_EQUAL(write_block(200 + i, 3000 + i), NVME_SC_SUCCESS);
	for (uint32_t i = 0; i < MAX_BATCH; i++) {
		bool rd = i % 4 < 2; /* each queue carries reads and writes */

		fill(bufs[i], BS, 4000 + i);
		ops[i] = (struct op){ .opc = rd ? NVME_CMD_READ : NVME_CMD_WRITE,
				      .slba = rd ? 200 + i / 2 : 300 + i,
				      .nlb = 1,
				      .buf = bufs[i] };
	}
	batch(ops, MAX_BATCH, 2);
	for (uint32_t i = 0; i < MAX_BATCH; i++) {
		uint8_t want[BS];

		if (ops[i].opc == NVME_CMD_READ) {
			fill(want, BS, 3000 + (uint32_t)(ops[i].slba - 200));
			CU_ASSERT_EQUAL(ops[i].status, NVME_SC_SUCCESS);
			CU_ASSERT_EQUAL(memcmp(bufs[i], want, BS), 0);
		} else if (ops[i].status != NVME_SC_SUCCESS) {
			CU_ASSERT_EQUAL(ops[i].status, NVME_SC_CAP_EXCEEDED);
			failed++;
			failed_i = i;
		}
	}
	CU_ASSERT_EQUAL_FATAL(failed, 1);
	for (uint32_t i = 0; i < MAX_BATCH; i++) {
		if (ops[i].opc != NVME_CMD_WRITE)
			continue;
		bool ok = i == failed_i ? block_holds_zeroes(300 + i) : block_holds(300 + i, 4000 + i);

		CU_ASSERT_TRUE(ok);
	}
	fx_down();
}

/*
 * A file size limit of @bytes on this process, with SIGXFSZ ignored as ernicd
 * does, so a write past it fails with EFBIG; undone by fsize_limit_undo().
 */
static struct {
	struct rlimit old;
	struct sigaction old_xfsz;
} fsize;

static bool fsize_limit(rlim_t bytes)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct rlimit lim;

	fflush(NULL); /* what the test has printed so far is not held back by the limit */
	if (getrlimit(RLIMIT_FSIZE, &fsize.old) || sigaction(SIGXFSZ, &ign, &fsize.old_xfsz))
		return false;
	lim = fsize.old;
	lim.rlim_cur = bytes;
	return !setrlimit(RLIMIT_FSIZE, &lim);
}

static void fsize_limit_undo(void)
{
	setrlimit(RLIMIT_FSIZE, &fsize.old);
	sigaction(SIGXFSZ, &fsize.old_xfsz, NULL);
}

/*
 * Past a file size limit a Write fails as on a full filesystem, Capacity
 * Exceeded, FUA or not; below it writes and everywhere reads go on.
 */
static void test_write_past_the_file_size_limit_is_capacity_exceeded(void)
{
	uint8_t w[2 * BS], r[BS];
	struct ernic_counters c;

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M", true)); /* sized before the limit, as a file that exists */
	CU_ASSERT_FATAL(fsize_limit(1 << 20));
	fill(w, sizeof(w), 8);
	CU_ASSERT_EQUAL(write_block(0, 1), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(write_block(512, 2), NVME_SC_CAP_EXCEEDED);
	CU_ASSERT_EQUAL(io1(NVME_CMD_WRITE, 600, 1, w, NVME_RW_FUA), NVME_SC_CAP_EXCEEDED);
	/* Across the limit: the first block lands, the command still fails. */
	CU_ASSERT_EQUAL(io1(NVME_CMD_WRITE, 255, 2, w, 0), NVME_SC_CAP_EXCEEDED);
	CU_ASSERT_EQUAL(io1(NVME_CMD_READ, 512, 1, r, 0), NVME_SC_SUCCESS);
	CU_ASSERT_TRUE(block_holds(0, 1));
	CU_ASSERT_TRUE(block_holds_zeroes(512));
	fsize_limit_undo();
	ernic_target_counters(fx.tgt, &c);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_CAP_EXCEEDED], 3);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_INTERNAL], 0);
	fx_down();
}

/* A new file the limit keeps from growing to the namespace is refused when it opens, naming the limit. */
static void test_file_namespace_past_the_file_size_limit_is_refused_at_open_naming_it(void)
{
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt = NULL;
	char dir[] = "/tmp/ernic_storage_ut.XXXXXX", path[64], want[ERNIC_ERRLEN], err[ERNIC_ERRLEN] = "";

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ns.img", dir);
	ernic_backend_cfg_init(&cfg);
	snprintf(cfg.file, sizeof(cfg.file), "%s", path);
	cfg.size = 4 << 20;
	CU_ASSERT_FATAL(fsize_limit(1 << 20));
	CU_ASSERT_EQUAL(ernic_target_create(&cfg, NULL, &tgt, err, sizeof(err)), -EFBIG);
	fsize_limit_undo();
	snprintf(want, sizeof(want),
		 "Error: nvmeof backend: file='%s': cannot size to 4194304 bytes: past the file size limit of "
		 "1048576 bytes (ulimit -f)",
		 path);
	CU_ASSERT_STRING_EQUAL(err, want);
	CU_ASSERT_EQUAL(access(path, F_OK), -1); /* the file it created is gone again */
	if (tgt)
		ernic_target_destroy(tgt);
	unlink(path);
	rmdir(dir);
}

/*
 * A file namespace's file holds the whole namespace from open on, so an end
 * of file inside it means the file was cut underneath: a read there is a
 * media error, not zeroes passing for what a FUA write made durable.
 */
static void test_read_past_the_end_of_a_file_cut_underneath_is_unrecovered_read_error(void)
{
	uint8_t w[BS], r[2 * BS];

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M", true));
	fill(w, BS, 7);
	CU_ASSERT_EQUAL(io1(NVME_CMD_WRITE, 10, 1, w, NVME_RW_FUA), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(write_block(9, 6), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(truncate(fx.path, 10 * BS), 0);
	CU_ASSERT_EQUAL(io1(NVME_CMD_READ, 10, 1, r, 0), NVME_SC_UNRECOVERED_READ);
	CU_ASSERT_EQUAL(io1(NVME_CMD_READ, 9, 2, r, 0), NVME_SC_UNRECOVERED_READ);
	CU_ASSERT_EQUAL(io1(NVME_CMD_READ, 100, 1, r, 0), NVME_SC_UNRECOVERED_READ);
	/* What the file still holds reads back as written. */
	CU_ASSERT_TRUE(block_holds(9, 6));
	fx_down();
}

static void test_block_device_size_check_refuses_a_namespace_larger_than_the_device(void)
{
	char err[ERNIC_ERRLEN] = "";

	CU_ASSERT_EQUAL(ernic_ns_check_device_size("/dev/sdz", 1 << 20, 1 << 20, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ernic_ns_check_device_size("/dev/sdz", 2 << 20, 1 << 20, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ernic_ns_check_device_size("/dev/sdz", 1 << 20, (1 << 20) + 4096, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "Error: nvmeof backend: file='/dev/sdz' is a block device of 1048576 bytes, "
				    "smaller than size 1052672");
}

/*
 * A loop device over a 1 MiB file, detached by the kernel when its last
 * opener closes; -1 where this host cannot make one (not root, no loop driver).
 */
static int loop_attach(const char *backing, char *dev, size_t devlen)
{
	struct loop_info64 info = { .lo_flags = LO_FLAGS_AUTOCLEAR };
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	int n = ctl < 0 ? -1 : ioctl(ctl, LOOP_CTL_GET_FREE);
	int bfd = open(backing, O_RDWR | O_CREAT | O_CLOEXEC, 0644), lfd = -1;

	if (ctl >= 0)
		close(ctl);
	if (n < 0 || bfd < 0 || ftruncate(bfd, 1 << 20))
		goto fail;
	snprintf(dev, devlen, "/dev/loop%d", n);
	lfd = open(dev, O_RDWR | O_CLOEXEC);
	if (lfd < 0 || ioctl(lfd, LOOP_SET_FD, bfd) || ioctl(lfd, LOOP_SET_STATUS64, &info))
		goto fail;
	close(bfd);
	return lfd;
fail:
	if (lfd >= 0) {
		ioctl(lfd, LOOP_CLR_FD, 0);
		close(lfd);
	}
	if (bfd >= 0)
		close(bfd);
	return -1;
}

static void test_block_device_namespace_larger_than_the_device_is_refused_at_startup(void)
{
	struct ernic_target_opts opts = { 0 };
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt = NULL;
	char dir[] = "/tmp/ernic_storage_ut.XXXXXX", backing[64], dev[32], err[ERNIC_ERRLEN] = "", want[ERNIC_ERRLEN];
	int lfd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(backing, sizeof(backing), "%s/loop.img", dir);
	lfd = loop_attach(backing, dev, sizeof(dev));
	if (lfd < 0) {
		fprintf(stderr, "skipped: no loop device here (%s)\n", strerror(errno));
		unlink(backing);
		rmdir(dir);
		return;
	}
	ernic_backend_cfg_init(&cfg);
	snprintf(cfg.file, sizeof(cfg.file), "%s", dev);
	cfg.size = 2 << 20;
	CU_ASSERT_EQUAL(ernic_target_create(&cfg, &opts, &tgt, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want),
		 "Error: nvmeof backend: file='%s' is a block device of 1048576 bytes, smaller than size 2097152",
		 dev);
	CU_ASSERT_STRING_EQUAL(err, want);
	cfg.size = 1 << 20;
	CU_ASSERT_EQUAL(ernic_target_create(&cfg, &opts, &tgt, err, sizeof(err)), 0);
	if (tgt)
		CU_ASSERT_EQUAL(tgt->ns[0].nlb, (1 << 20) / 4096);
	ernic_target_destroy(tgt);
	close(lfd);
	unlink(backing);
	rmdir(dir);
}

/* ====================================================== durability (FUA) */

static uint16_t set_vwc(uint32_t wce)
{
	struct nvme_sqe sqe = { .opc = NVME_ADMIN_SET_FEATURES, .cdw10 = NVME_FEAT_VOLATILE_WC, .cdw11 = wce };
	struct nvme_cqe cqe;

	CU_ASSERT_EQUAL_FATAL(ernic_host_admin(fx.hc, &sqe, NULL, 0, &cqe), 0);
	return nvme_cqe_status(&cqe);
}

static uint64_t ns_syncs(void)
{
	return atomic_load(&fx.tgt->ns[0].syncs);
}

static void test_fua_write_reaches_stable_storage_before_it_completes(void)
{
	uint8_t w[2 * BS];
	uint64_t before;

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M", true));
	fill(w, sizeof(w), 5);
	before = ns_syncs();
	CU_ASSERT_EQUAL(io1(NVME_CMD_WRITE, 8, 2, w, 0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(ns_syncs(), before); /* the cache is on: a plain write stays in it */
	CU_ASSERT_EQUAL(io1(NVME_CMD_WRITE, 8, 2, w, NVME_RW_FUA), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(ns_syncs(), before + 1);
	CU_ASSERT_TRUE(block_holds(8, 5));
	CU_ASSERT_EQUAL(io1(NVME_CMD_READ, 8, 2, w, NVME_RW_FUA), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(ns_syncs(), before + 1); /* FUA on a Read syncs nothing */
	CU_ASSERT_EQUAL(io1(NVME_CMD_WRITE_ZEROES, 8, 1, NULL, 0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(ns_syncs(), before + 1);
	CU_ASSERT_EQUAL(io1(NVME_CMD_WRITE_ZEROES, 9, 1, NULL, NVME_RW_FUA), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(ns_syncs(), before + 2);
	CU_ASSERT_TRUE(block_holds_zeroes(8) && block_holds_zeroes(9));
	fx_down();
}

static void test_write_cache_off_makes_every_write_durable(void)
{
	uint64_t before;

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M", true));
	CU_ASSERT_EQUAL(set_vwc(0), NVME_SC_SUCCESS);
	before = ns_syncs();
	CU_ASSERT_EQUAL(write_block(4, 4), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(write_block(5, 5), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io1(NVME_CMD_WRITE_ZEROES, 4, 1, NULL, 0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(ns_syncs(), before + 3);
	CU_ASSERT_EQUAL(set_vwc(1), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(write_block(6, 6), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(ns_syncs(), before + 3);
	CU_ASSERT_TRUE(block_holds_zeroes(4) && block_holds(5, 5) && block_holds(6, 6));
	fx_down();
}

static void test_fua_on_a_ram_namespace_succeeds_with_nothing_to_sync(void)
{
	uint8_t w[BS];

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M", false));
	fill(w, BS, 9);
	CU_ASSERT_EQUAL(io1(NVME_CMD_WRITE, 1, 1, w, NVME_RW_FUA), NVME_SC_SUCCESS);
	CU_ASSERT_TRUE(block_holds(1, 9));
	CU_ASSERT_EQUAL(ns_syncs(), 0);
	fx_down();
}

static void test_identify_reports_a_write_cache_and_flush_of_every_namespace(void)
{
	const struct nvme_id_ctrl *id;

	CU_ASSERT_FATAL(fx_up("nvmeof:size=4M", true));
	id = ernic_host_id_ctrl(fx.hc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(id);
	CU_ASSERT_EQUAL(id->vwc, NVME_CTRL_VWC_PRESENT | NVME_CTRL_VWC_FLUSH_ALL_NS);
	fx_down();
}

UT_MAIN("storage", UT_CASE(test_eio_at_n_fails_the_nth_read_once_as_unrecovered_read_error),
	UT_CASE(test_eio_at_n_fails_the_nth_write_as_write_fault_and_spares_its_neighbours),
	UT_CASE(test_eio_every_nth_fails_exactly_every_nth_data_command),
	UT_CASE(test_eio_on_one_queue_harms_no_command_in_flight_on_either_queue),
	UT_CASE(test_delay_stalls_every_command_at_least_the_delay),
	UT_CASE(test_unfaulted_namespace_calls_its_backend_directly),
	UT_CASE(test_enospc_is_capacity_exceeded_and_reads_go_on),
	UT_CASE(test_enospc_among_reads_and_writes_in_flight_fails_only_its_write),
	UT_CASE(test_write_past_the_file_size_limit_is_capacity_exceeded),
	UT_CASE(test_file_namespace_past_the_file_size_limit_is_refused_at_open_naming_it),
	UT_CASE(test_read_past_the_end_of_a_file_cut_underneath_is_unrecovered_read_error),
	UT_CASE(test_block_device_size_check_refuses_a_namespace_larger_than_the_device),
	UT_CASE(test_block_device_namespace_larger_than_the_device_is_refused_at_startup),
	UT_CASE(test_fua_write_reaches_stable_storage_before_it_completes),
	UT_CASE(test_write_cache_off_makes_every_write_durable),
	UT_CASE(test_fua_on_a_ram_namespace_succeeds_with_nothing_to_sync),
	UT_CASE(test_identify_reports_a_write_cache_and_flush_of_every_namespace))
