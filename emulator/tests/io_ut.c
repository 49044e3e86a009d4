/* SPDX-License-Identifier: MIT */
/*
 * io_ut.c - NVM I/O commands end to end through the host API and the
 * in-process transport: Read/Write round trips on RAM and file namespaces at
 * 512 and 4096-byte blocks, Flush, Write Zeroes, Dataset Management, every
 * range/length/namespace/opcode refusal, backend failures mapped to media
 * and internal errors, and the counters (and their JSON) to the exact number.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target.h"
#include "ut.h"
#include "ut_fixture.h"

#define NS_SIZE (8ull << 20)
#define FILE_NS_SIZE (4ull << 20)

static struct {
	struct ernic_target *tgt;
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *qp;
	char dir[64];
	char path[128];
} fx;

/* ------------------------------------------------------------------ fixture */

static void cfg_base(struct ernic_backend_cfg *cfg, uint32_t bs, uint64_t size, const char *file)
{
	ernic_backend_cfg_init(cfg);
	cfg->size = size;
	cfg->bs = bs;
	cfg->queues = 2;
	cfg->queue_size = 32;
	cfg->pollers = 1;
	if (file)
		snprintf(cfg->file, sizeof(cfg->file), "%s", file);
}

static void make_dir(void)
{
	snprintf(fx.dir, sizeof(fx.dir), "/tmp/ernic_io_ut.XXXXXX");
	if (!mkdtemp(fx.dir))
		abort();
	snprintf(fx.path, sizeof(fx.path), "%s/ns0.img", fx.dir);
}

static bool fx_up_cfg(const struct ernic_backend_cfg *cfg)
{
	char err[ERNIC_ERRLEN] = "";

	if (ut_target_start(cfg, NULL, &fx.tgt, err, sizeof(err))) {
		fprintf(stderr, "target: %s\n", err);
		return false;
	}
	fx.hc = ut_host_connect(fx.tgt, 1, 0);
	if (!fx.hc)
		return false;
	fx.qp = ernic_host_io_qpair(fx.hc, 1);
	return fx.qp != NULL;
}

static bool fx_up(uint32_t bs, bool file)
{
	struct ernic_backend_cfg cfg;

	memset(&fx, 0, sizeof(fx));
	if (file)
		make_dir();
	cfg_base(&cfg, bs, file ? FILE_NS_SIZE : NS_SIZE, file ? fx.path : NULL);
	return fx_up_cfg(&cfg);
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

static uint16_t cmd(struct nvme_sqe *sqe, void *buf, uint32_t len)
{
	static char ctx;
	int rc = ernic_host_submit(fx.qp, sqe, buf, len, &ctx);

	CU_ASSERT_EQUAL(rc, 0);
	if (rc)
		return 0xFFFF;
	return ut_wait_cpl(fx.qp, &ctx, NULL);
}

static uint16_t io_rw(uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb, void *buf, uint32_t len)
{
	struct nvme_sqe sqe;

	ernic_host_rw_sqe(&sqe, opc, nsid, slba, nlb);
	return cmd(&sqe, buf, len);
}

static uint16_t io_flush(uint32_t nsid)
{
	struct nvme_sqe sqe;

	memset(&sqe, 0, sizeof(sqe));
	sqe.opc = NVME_CMD_FLUSH;
	sqe.nsid = nsid;
	return cmd(&sqe, NULL, 0);
}

static uint16_t io_write_zeroes(uint32_t nsid, uint64_t slba, uint32_t nlb)
{
	struct nvme_sqe sqe;

	ernic_host_rw_sqe(&sqe, NVME_CMD_WRITE_ZEROES, nsid, slba, nlb);
	return cmd(&sqe, NULL, 0);
}

static uint16_t io_dsm(uint32_t nsid, const struct nvme_dsm_range *r, uint32_t nr, uint32_t attr)
{
	struct nvme_sqe sqe;
	struct nvme_dsm_range ranges[8];

	memcpy(ranges, r, nr * sizeof(*r));
	memset(&sqe, 0, sizeof(sqe));
	sqe.opc = NVME_CMD_DSM;
	sqe.nsid = nsid;
	sqe.cdw10 = nr - 1;
	sqe.cdw11 = attr;
	return cmd(&sqe, ranges, nr * (uint32_t)sizeof(*r));
}

/* A pattern unique to (seed, byte offset) */
static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 131u + seed * 7u + (i >> 9)) ^ (seed >> 3));
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* ================================================================ round trips */

static void round_trip(uint32_t bs)
{
	const uint32_t max_nlb = ERNIC_MAX_XFER / bs;
	static const uint64_t lbas[] = { 0, 1, 7, 100 };
	uint8_t *w = malloc(ERNIC_MAX_XFER), *r = malloc(ERNIC_MAX_XFER);
	uint64_t last = (fx.tgt->ns[0].nlb) - 1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	/* Single blocks at a few LBAs, including the very last one */
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(lbas) + 1; i++) {
		uint64_t lba = i < ERNIC_ARRAY_SIZE(lbas) ? lbas[i] : last;

		fill(w, bs, (uint32_t)(lba + 1));
		memset(r, 0xEE, bs);
		CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, lba, 1, w, bs), NVME_SC_SUCCESS);
		CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, lba, 1, r, bs), NVME_SC_SUCCESS);
		CU_ASSERT_EQUAL(memcmp(w, r, bs), 0);
	}
	/* A maximum transfer (MDTS: 128 KiB) */
	fill(w, ERNIC_MAX_XFER, 99);
	memset(r, 0, ERNIC_MAX_XFER);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 200, max_nlb, w, ERNIC_MAX_XFER), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 200, max_nlb, r, ERNIC_MAX_XFER), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(memcmp(w, r, ERNIC_MAX_XFER), 0);
	/* Read a sub-range of it back: the offsets line up block by block */
	memset(r, 0, ERNIC_MAX_XFER);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 203, 2, r, 2 * bs), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(memcmp(w + 3 * bs, r, 2 * bs), 0);
	free(w);
	free(r);
}

static void test_ram_4096_write_read_round_trip(void)
{
	CU_ASSERT_FATAL(fx_up(4096, false));
	CU_ASSERT_EQUAL(fx.tgt->ns[0].nlb, NS_SIZE / 4096);
	round_trip(4096);
	fx_down();
}

static void test_ram_512_write_read_round_trip(void)
{
	CU_ASSERT_FATAL(fx_up(512, false));
	CU_ASSERT_EQUAL(fx.tgt->ns[0].nlb, NS_SIZE / 512);
	round_trip(512);
	fx_down();
}

static void file_round_trip(uint32_t bs)
{
	struct stat st;
	uint8_t w[4096], f[4096];
	int fd;

	CU_ASSERT_FATAL(fx_up(bs, true));
	/* Created and sized */
	CU_ASSERT_EQUAL_FATAL(stat(fx.path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)FILE_NS_SIZE);
	CU_ASSERT_EQUAL(fx.tgt->ns[0].nlb, FILE_NS_SIZE / bs);
	round_trip(bs);
	/* The bytes are in the file, at LBA * bs */
	fill(w, bs, 4242);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 33, 1, w, bs), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_flush(1), NVME_SC_SUCCESS);
	fd = open(fx.path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, f, bs, 33 * (off_t)bs), (ssize_t)bs);
	CU_ASSERT_EQUAL(memcmp(w, f, bs), 0);
	close(fd);
	fx_down();
}

static void test_file_4096_round_trip_created_and_sized(void)
{
	file_round_trip(4096);
}

static void test_file_512_round_trip_created_and_sized(void)
{
	file_round_trip(512);
}

static void test_file_data_survives_target_restart(void)
{
	struct ernic_backend_cfg cfg;
	uint8_t w[4096], r[4096];

	CU_ASSERT_FATAL(fx_up(4096, true));
	fill(w, sizeof(w), 77);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 9, 1, w, 4096), NVME_SC_SUCCESS);
	ernic_host_disconnect(fx.hc);
	ut_target_stop(fx.tgt);
	fx.hc = NULL;
	fx.tgt = NULL;
	cfg_base(&cfg, 4096, FILE_NS_SIZE, fx.path);
	CU_ASSERT_FATAL(fx_up_cfg(&cfg));
	memset(r, 0, sizeof(r));
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 9, 1, r, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(memcmp(w, r, 4096), 0);
	fx_down();
}

static void test_file_existing_larger_is_not_truncated(void)
{
	const off_t big = 2 * (off_t)FILE_NS_SIZE;
	struct ernic_backend_cfg cfg;
	uint8_t tail[4096], got[4096];
	struct stat st;
	int fd;

	memset(&fx, 0, sizeof(fx));
	make_dir();
	fd = open(fx.path, O_RDWR | O_CREAT, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(ftruncate(fd, big), 0);
	fill(tail, sizeof(tail), 1234);
	CU_ASSERT_EQUAL(pwrite(fd, tail, sizeof(tail), big - 4096), 4096);
	close(fd);

	cfg_base(&cfg, 4096, FILE_NS_SIZE, fx.path);
	CU_ASSERT_FATAL(fx_up_cfg(&cfg));
	/* The namespace is the configured size, the file keeps its own */
	CU_ASSERT_EQUAL(fx.tgt->ns[0].nlb, FILE_NS_SIZE / 4096);
	CU_ASSERT_EQUAL(stat(fx.path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, big);
	/* I/O past the namespace (but inside the file) is refused */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, FILE_NS_SIZE / 4096, 1, got, 4096), NVME_SC_LBA_RANGE);
	ernic_host_disconnect(fx.hc);
	ut_target_stop(fx.tgt);
	fx.hc = NULL;
	fx.tgt = NULL;
	CU_ASSERT_EQUAL(stat(fx.path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, big);
	fd = open(fx.path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, got, sizeof(got), big - 4096), 4096);
	CU_ASSERT_EQUAL(memcmp(tail, got, sizeof(got)), 0);
	close(fd);
	fx_down();
}

static void test_flush_succeeds_file_and_ram_and_all_namespaces(void)
{
	CU_ASSERT_FATAL(fx_up(4096, true));
	CU_ASSERT_EQUAL(io_flush(1), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_flush(0xFFFFFFFF), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_flush(2), NVME_SC_INVALID_NS);
	fx_down();
	CU_ASSERT_FATAL(fx_up(4096, false));
	CU_ASSERT_EQUAL(io_flush(1), NVME_SC_SUCCESS);
	fx_down();
}

/* ================================================ Write Zeroes, deallocate */

static void zeroes_check(uint32_t bs, bool file, bool dsm)
{
	const uint32_t nlb = bs == 512 ? 40 : 20; /* the whole span stays under MDTS */
	const uint64_t slba = 3;		   /* with bs 512: starts and ends inside 4 KiB pages */
	uint8_t *w = malloc((nlb + 6) * bs), *r = malloc((nlb + 6) * bs);

	CU_ASSERT_FATAL(fx_up(bs, file));
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	/* Blocks slba-2 .. slba+nlb+3 hold a pattern */
	fill(w, (nlb + 6) * bs, 5);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, slba - 2, nlb + 6, w, (nlb + 6) * bs), NVME_SC_SUCCESS);
	if (dsm) {
		struct nvme_dsm_range ranges[2] = {
			{ .cattr = 0, .nlb = nlb / 2, .slba = slba },
			{ .cattr = 0, .nlb = nlb - nlb / 2, .slba = slba + nlb / 2 },
		};

		CU_ASSERT_EQUAL(io_dsm(1, ranges, 2, NVME_DSM_ATTR_DEALLOCATE), NVME_SC_SUCCESS);
	} else {
		CU_ASSERT_EQUAL(io_write_zeroes(1, slba, nlb), NVME_SC_SUCCESS);
	}
	memset(r, 0xEE, (nlb + 6) * bs);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, slba - 2, nlb + 6, r, (nlb + 6) * bs), NVME_SC_SUCCESS);
	/* The two blocks before and four after are untouched, the range reads zero */
	CU_ASSERT_EQUAL(memcmp(r, w, 2 * bs), 0);
	CU_ASSERT_TRUE(all_zero(r + 2 * bs, nlb * bs));
	CU_ASSERT_EQUAL(memcmp(r + (2 + nlb) * bs, w + (2 + nlb) * bs, 4 * bs), 0);
	fx_down();
	free(w);
	free(r);
}

static void test_write_zeroes_reads_zeroes_ram_512(void)
{
	zeroes_check(512, false, false);
}

static void test_write_zeroes_reads_zeroes_ram_4096(void)
{
	zeroes_check(4096, false, false);
}

static void test_write_zeroes_reads_zeroes_file_512(void)
{
	zeroes_check(512, true, false);
}

static void test_dsm_deallocate_reads_zeroes_ram_512(void)
{
	zeroes_check(512, false, true);
}

static void test_dsm_deallocate_reads_zeroes_file_4096(void)
{
	zeroes_check(4096, true, true);
}

static void test_dsm_without_deallocate_changes_nothing(void)
{
	struct nvme_dsm_range range = { .cattr = 0, .nlb = 4, .slba = 0 };
	uint8_t w[4 * 4096], r[4 * 4096];

	CU_ASSERT_FATAL(fx_up(4096, false));
	fill(w, sizeof(w), 8);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, 4, w, sizeof(w)), NVME_SC_SUCCESS);
	/* Integral read and write hints only */
	CU_ASSERT_EQUAL(io_dsm(1, &range, 1, 3), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 4, r, sizeof(r)), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(memcmp(w, r, sizeof(w)), 0);
	fx_down();
}

/* ================================================================== refusals */

static void test_range_past_end_is_lba_range(void)
{
	uint8_t buf[8192];
	uint64_t nlb;
	struct nvme_dsm_range range;

	CU_ASSERT_FATAL(fx_up(4096, false));
	nlb = fx.tgt->ns[0].nlb;
	memset(buf, 0x5A, sizeof(buf));
	/* The last block is fine, one past it is not, nor a range straddling the end */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, nlb - 1, 1, buf, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, nlb, 1, buf, 4096), NVME_SC_LBA_RANGE);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, nlb - 1, 2, buf, 8192), NVME_SC_LBA_RANGE);
	/* slba + nlb wrapping past 2^64 */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, UINT64_MAX, 2, buf, 8192), NVME_SC_LBA_RANGE);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, UINT64_MAX - 1, 2, buf, 8192), NVME_SC_LBA_RANGE);
	/* slba << lba_shift overflowing into range */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 1ull << 52, 1, buf, 4096), NVME_SC_LBA_RANGE);
	CU_ASSERT_EQUAL(io_write_zeroes(1, nlb - 1, 2), NVME_SC_LBA_RANGE);
	CU_ASSERT_EQUAL(io_write_zeroes(1, UINT64_MAX, 1), NVME_SC_LBA_RANGE);
	range = (struct nvme_dsm_range){ .nlb = 2, .slba = nlb - 1 };
	CU_ASSERT_EQUAL(io_dsm(1, &range, 1, NVME_DSM_ATTR_DEALLOCATE), NVME_SC_LBA_RANGE);
	range = (struct nvme_dsm_range){ .nlb = 0xFFFFFFFF, .slba = 1 };
	CU_ASSERT_EQUAL(io_dsm(1, &range, 1, NVME_DSM_ATTR_DEALLOCATE), NVME_SC_LBA_RANGE);
	fx_down();
}

static void test_unknown_nsid_is_invalid_ns(void)
{
	uint8_t buf[4096];

	CU_ASSERT_FATAL(fx_up(4096, false));
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 0, 0, 1, buf, 4096), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 2, 0, 1, buf, 4096), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 0xFFFFFFFF, 0, 1, buf, 4096), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(io_write_zeroes(3, 0, 1), NVME_SC_INVALID_NS);
	fx_down();
}

/* mdts= sets the limit per target: 8 KiB at mdts=1, 1 MiB at mdts=8 (the in-process port's largest). */
static void test_transfer_limit_follows_the_configured_mdts(void)
{
	const uint32_t mib = 1u << 20;
	uint8_t *w = malloc(mib + 4096), *r = calloc(1, mib + 4096);
	struct ernic_backend_cfg cfg;

	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	fill(w, mib + 4096, 11);
	memset(&fx, 0, sizeof(fx));
	cfg_base(&cfg, 4096, NS_SIZE, NULL);
	cfg.mdts = 1;
	CU_ASSERT_FATAL(fx_up_cfg(&cfg));
	CU_ASSERT_EQUAL(ernic_host_id_ctrl(fx.hc)->mdts, 1);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, 2, w, 8192), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, 3, w, 12288), NVME_SC_INVALID_FIELD);
	/* The default's limit is over this target's too */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, ERNIC_MAX_XFER / 4096, r, ERNIC_MAX_XFER),
			NVME_SC_INVALID_FIELD);
	fx_down();

	memset(&fx, 0, sizeof(fx));
	cfg_base(&cfg, 4096, NS_SIZE, NULL);
	cfg.mdts = ERNIC_INPROC_MDTS_MAX;
	CU_ASSERT_FATAL(fx_up_cfg(&cfg));
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, mib / 4096, w, mib), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, mib / 4096, r, mib), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(memcmp(w, r, mib), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, mib / 4096 + 1, w, mib + 4096), NVME_SC_INVALID_FIELD);
	fx_down();
	free(w);
	free(r);
}

/* RDMA has no "no limit" and a host MR maps at most 1 MiB: the port refuses, in one line naming mdts. */
static void test_inproc_port_refuses_mdts_0_and_over_its_bound(void)
{
	static const uint32_t bad[] = { 0, ERNIC_INPROC_MDTS_MAX + 1, ERNIC_MDTS_MAX };
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt;
	struct ernic_inproc_port *port;
	char err[ERNIC_ERRLEN], want[ERNIC_ERRLEN];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cfg_base(&cfg, 4096, NS_SIZE, NULL);
		cfg.mdts = bad[i];
		CU_ASSERT_EQUAL_FATAL(ernic_target_create(&cfg, NULL, &tgt, err, sizeof(err)), 0);
		port = (struct ernic_inproc_port *)1;
		CU_ASSERT_EQUAL(ernic_inproc_port_create(tgt, NULL, &port, err, sizeof(err)), -EINVAL);
		CU_ASSERT_PTR_NULL(port);
		snprintf(want, sizeof(want),
			 "Error: nvmeof backend: mdts must be 1..8 for an in-process (RDMA) port (got %u)", bad[i]);
		CU_ASSERT_STRING_EQUAL(err, want);
		ernic_target_destroy(tgt);
	}
}

static void test_transfer_over_mdts_is_invalid_field_as_base_figure_275_says(void)
{
	const uint32_t big = 256 * 1024;
	uint8_t *buf = calloc(1, big);
	struct ernic_counters c;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_FATAL(fx_up(4096, false));
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, big / 4096, buf, big), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, big / 4096, buf, big), NVME_SC_INVALID_FIELD);
	/* One block over, with a matching SGL */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, ERNIC_MAX_XFER / 4096 + 1, buf, ERNIC_MAX_XFER + 4096),
			NVME_SC_INVALID_FIELD);
	/* Exactly MDTS is fine */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, ERNIC_MAX_XFER / 4096, buf, ERNIC_MAX_XFER), NVME_SC_SUCCESS);
	ernic_target_counters(fx.tgt, &c);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_INVALID_FIELD], 3);
	fx_down();
	free(buf);
}

static void test_sgl_length_not_nlb_times_bs_is_sgl_invalid_data_len(void)
{
	uint8_t buf[3 * 4096];

	CU_ASSERT_FATAL(fx_up(4096, false));
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 2, buf, 4096), NVME_SC_SGL_INVALID_DATA_LEN);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 1, buf, 8192), NVME_SC_SGL_INVALID_DATA_LEN);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, 1, buf, 4095), NVME_SC_SGL_INVALID_DATA_LEN);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, 3, buf, 0), NVME_SC_SGL_INVALID_DATA_LEN);
	fx_down();
	CU_ASSERT_FATAL(fx_up(512, false));
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 1, buf, 4096), NVME_SC_SGL_INVALID_DATA_LEN);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 8, buf, 4096), NVME_SC_SUCCESS);
	fx_down();
}

static void test_unknown_io_opcode_is_invalid_opcode(void)
{
	static const uint8_t opcs[] = { 0x04, 0x05, 0x0C, 0x0D, 0x11, 0x7E, 0x80, 0xFF };
	struct nvme_sqe sqe;

	CU_ASSERT_FATAL(fx_up(4096, false));
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(opcs); i++) {
		memset(&sqe, 0, sizeof(sqe));
		sqe.opc = opcs[i];
		sqe.nsid = 1;
		CU_ASSERT_EQUAL(cmd(&sqe, NULL, 0), NVME_SC_INVALID_OPCODE);
	}
	fx_down();
}

/* ========================================================= backend failures */

static int fail_rc;
static unsigned fail_flushes;
static const struct ernic_ns_ops *real_ops;

static int bad_read(struct ernic_ns *ns, void *buf, uint64_t off, uint32_t len)
{
	(void)ns, (void)buf, (void)off, (void)len;
	return fail_rc;
}

static unsigned fua_writes;

static int bad_write(struct ernic_ns *ns, const void *buf, uint64_t off, uint32_t len, uint32_t flags)
{
	(void)ns, (void)buf, (void)off, (void)len;
	if (flags & ERNIC_NS_FUA)
		fua_writes++;
	return fail_rc;
}

static int bad_flush(struct ernic_ns *ns)
{
	(void)ns;
	fail_flushes++;
	return fail_rc;
}

static int bad_range(struct ernic_ns *ns, uint64_t off, uint64_t len)
{
	(void)ns, (void)off, (void)len;
	return fail_rc;
}

static const struct ernic_ns_ops bad_ops = {
	.name = "failing",
	.read = bad_read,
	.write = bad_write,
	.flush = bad_flush,
	.write_zeroes = bad_range,
	.deallocate = bad_range,
	.close = NULL,
};

static void swap_in_bad_ops(int rc)
{
	fail_rc = rc;
	fail_flushes = 0;
	fua_writes = 0;
	real_ops = fx.tgt->ns[0].ops;
	fx.tgt->ns[0].ops = &bad_ops;
}

static void swap_back(void)
{
	fx.tgt->ns[0].ops = real_ops;
}

static void test_backend_eio_is_media_error(void)
{
	struct nvme_dsm_range range = { .nlb = 1, .slba = 0 };
	uint8_t buf[4096];

	CU_ASSERT_FATAL(fx_up(4096, false));
	swap_in_bad_ops(-EIO);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 1, buf, 4096), NVME_SC_UNRECOVERED_READ);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, 1, buf, 4096), NVME_SC_WRITE_FAULT);
	CU_ASSERT_EQUAL(io_flush(1), NVME_SC_WRITE_FAULT);
	CU_ASSERT_EQUAL(io_write_zeroes(1, 0, 1), NVME_SC_WRITE_FAULT);
	CU_ASSERT_EQUAL(io_dsm(1, &range, 1, NVME_DSM_ATTR_DEALLOCATE), NVME_SC_WRITE_FAULT);
	swap_back();
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 1, buf, 4096), NVME_SC_SUCCESS);
	fx_down();
}

static void test_backend_other_errno_is_internal_error(void)
{
	uint8_t buf[4096];
	struct ernic_counters c;

	CU_ASSERT_FATAL(fx_up(4096, false));
	swap_in_bad_ops(-EBADF);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, 1, buf, 4096), NVME_SC_INTERNAL);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 1, buf, 4096), NVME_SC_INTERNAL);
	CU_ASSERT_EQUAL(io_write_zeroes(1, 0, 1), NVME_SC_INTERNAL);
	swap_back();
	ernic_target_counters(fx.tgt, &c);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_INTERNAL], 3);
	/* A failed write moved no bytes as far as the counters are concerned */
	CU_ASSERT_EQUAL(c.io_cmds[NVME_CMD_WRITE], 1);
	CU_ASSERT_EQUAL(c.bytes_written, 2 * 1024);
	CU_ASSERT_EQUAL(c.bytes_read, 4096);
	CU_ASSERT_EQUAL(c.io_bytes_written, 0);
	CU_ASSERT_EQUAL(c.io_bytes_read, 0);
	fx_down();
}

static void test_vwc_off_makes_every_write_durable(void)
{
	uint8_t buf[4096];

	CU_ASSERT_FATAL(fx_up(4096, false));
	CU_ASSERT_EQUAL(ut_admin(fx.hc, NVME_ADMIN_SET_FEATURES, NVME_FEAT_VOLATILE_WC, 0, NULL), NVME_SC_SUCCESS);
	swap_in_bad_ops(0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, 1, buf, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 1, 1, buf, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fua_writes, 2);
	/* A durable write that fails fails the command */
	fail_rc = -EIO;
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 2, 1, buf, 4096), NVME_SC_WRITE_FAULT);
	swap_back();
	CU_ASSERT_EQUAL(ut_admin(fx.hc, NVME_ADMIN_SET_FEATURES, NVME_FEAT_VOLATILE_WC, 1, NULL), NVME_SC_SUCCESS);
	swap_in_bad_ops(0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, 1, buf, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fua_writes, 0);
	CU_ASSERT_EQUAL(fail_flushes, 0);
	swap_back();
	fx_down();
}

static void test_second_namespace_is_separate(void)
{
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN];
	uint8_t a[4096], b[4096], r[4096];

	CU_ASSERT_FATAL(fx_up(4096, false));
	cfg_base(&cfg, 4096, 1ull << 20, NULL);
	CU_ASSERT_EQUAL(ernic_target_add_ns(fx.tgt, &cfg, err, sizeof(err)), 0);
	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 5, 1, a, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 2, 5, 1, b, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 5, 1, r, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(memcmp(r, a, 4096), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 2, 5, 1, r, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(memcmp(r, b, 4096), 0);
	/* Its own size */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 2, 256, 1, r, 4096), NVME_SC_LBA_RANGE);
	fx_down();
}

/* ================================================================== counters */

/* A small JSON checker: true if @s is exactly one well-formed value. */
static const char *json_value(const char *s, int depth);

static const char *json_ws(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	return s;
}

static const char *json_string(const char *s)
{
	if (*s++ != '"')
		return NULL;
	while (*s && *s != '"') {
		if ((unsigned char)*s < 0x20)
			return NULL;
		if (*s == '\\') {
			s++;
			if (!*s || !strchr("\"\\/bfnrtu", *s))
				return NULL;
		}
		s++;
	}
	return *s == '"' ? s + 1 : NULL;
}

static const char *json_number(const char *s)
{
	const char *start;

	if (*s == '-')
		s++;
	start = s;
	if (*s == '0')
		s++;
	else
		while (*s >= '0' && *s <= '9')
			s++;
	if (s == start)
		return NULL;
	if (*s == '.') {
		s++;
		if (!(*s >= '0' && *s <= '9'))
			return NULL;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return s;
}

static const char *json_value(const char *s, int depth)
{
	if (depth > 32)
		return NULL;
	s = json_ws(s);
	if (*s == '{' || *s == '[') {
		char close = *s == '{' ? '}' : ']';
		bool obj = *s == '{';

		s = json_ws(s + 1);
		if (*s == close)
			return s + 1;
		for (;;) {
			if (obj) {
				s = json_string(json_ws(s));
				if (!s)
					return NULL;
				s = json_ws(s);
				if (*s++ != ':')
					return NULL;
			}
			s = json_value(s, depth + 1);
			if (!s)
				return NULL;
			s = json_ws(s);
			if (*s == ',') {
				s++;
				continue;
			}
			return *s == close ? s + 1 : NULL;
		}
	}
	if (*s == '"')
		return json_string(s);
	if (!strncmp(s, "true", 4) || !strncmp(s, "null", 4))
		return s + 4;
	if (!strncmp(s, "false", 5))
		return s + 5;
	return json_number(s);
}

static bool json_ok(const char *s)
{
	const char *end = json_value(s, 0);

	return end && *json_ws(end) == '\0';
}

static void test_json_checker_rejects_malformed(void)
{
	CU_ASSERT_TRUE(json_ok("{\"a\":{\"b\":1},\"c\":[1,2],\"d\":\"x\"}"));
	CU_ASSERT_FALSE(json_ok("{\"a\":1,}"));
	CU_ASSERT_FALSE(json_ok("{\"a\":1"));
	CU_ASSERT_FALSE(json_ok("{\"a\" 1}"));
	CU_ASSERT_FALSE(json_ok("{a:1}"));
	CU_ASSERT_FALSE(json_ok("{\"a\":1}}"));
}

static bool has(const char *json, const char *needle)
{
	bool found = strstr(json, needle) != NULL;

	if (!found)
		fprintf(stderr, "\n  missing %s in %s\n", needle, json);
	return found;
}

static void test_counters_exact_after_connect_and_io(void)
{
	struct ernic_counters c0, c;
	uint8_t buf[2 * 4096];
	char json[16384], want[64];
	int n;

	CU_ASSERT_FATAL(fx_up(4096, false));
	ernic_target_counters(fx.tgt, &c0);
	/* The connect: Connect, Property Get CAP, Property Set CC, Property Get CSTS on the admin queue */
	CU_ASSERT_EQUAL(c0.admin_cmds[NVME_FABRICS_COMMAND], 4);
	CU_ASSERT_EQUAL(c0.admin_cmds[NVME_ADMIN_IDENTIFY], 1);
	CU_ASSERT_EQUAL(c0.admin_cmds[NVME_ADMIN_SET_FEATURES], 1);
	CU_ASSERT_EQUAL(c0.io_cmds[NVME_FABRICS_COMMAND], 1);
	CU_ASSERT_EQUAL(c0.bytes_written, 2 * 1024); /* two Connect data blocks */
	CU_ASSERT_EQUAL(c0.bytes_read, 4096);	     /* Identify Controller */
	CU_ASSERT_EQUAL(c0.io_bytes_written, 0);     /* none of it is user data */
	CU_ASSERT_EQUAL(c0.io_bytes_read, 0);
	CU_ASSERT_EQUAL(c0.controllers, 1);
	CU_ASSERT_EQUAL(c0.io_queues, 1);
	CU_ASSERT_EQUAL(c0.mr_in_use, 32 + 32);

	fill(buf, sizeof(buf), 3);
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, (uint64_t)i * 2, 2, buf, 8192), NVME_SC_SUCCESS);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, (uint64_t)i, 1, buf, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, fx.tgt->ns[0].nlb, 1, buf, 4096), NVME_SC_LBA_RANGE);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 9, 0, 1, buf, 4096), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 9, 0, 1, buf, 4096), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(io_flush(1), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(io_write_zeroes(1, 100, 4), NVME_SC_SUCCESS);

	ernic_target_counters(fx.tgt, &c);
	CU_ASSERT_EQUAL(c.io_cmds[NVME_CMD_WRITE], 6);
	CU_ASSERT_EQUAL(c.io_cmds[NVME_CMD_READ], 5);
	CU_ASSERT_EQUAL(c.io_cmds[NVME_CMD_FLUSH], 1);
	CU_ASSERT_EQUAL(c.io_cmds[NVME_CMD_WRITE_ZEROES], 1);
	CU_ASSERT_EQUAL(c.bytes_written - c0.bytes_written, 5 * 8192);
	CU_ASSERT_EQUAL(c.bytes_read - c0.bytes_read, 3 * 4096);
	CU_ASSERT_EQUAL(c.io_bytes_written, 5 * 8192);
	CU_ASSERT_EQUAL(c.io_bytes_read, 3 * 4096);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_LBA_RANGE], 1);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_INVALID_NS], 2);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_SUCCESS], 0);
	CU_ASSERT_EQUAL(c.mr_in_use, 64);
	CU_ASSERT_EQUAL(c.mr_max, ERNIC_MAX_MR);

	n = ernic_counters_json(&c, json, sizeof(json));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL((size_t)n, strlen(json));
	CU_ASSERT_TRUE(json_ok(json));
	CU_ASSERT_TRUE(has(json, "\"io_cmds\":{"));
	CU_ASSERT_TRUE(has(json, "\"write\":6"));
	CU_ASSERT_TRUE(has(json, "\"read\":5"));
	CU_ASSERT_TRUE(has(json, "\"flush\":1"));
	CU_ASSERT_TRUE(has(json, "\"write_zeroes\":1"));
	CU_ASSERT_TRUE(has(json, "\"identify\":1"));
	CU_ASSERT_TRUE(has(json, "\"LBA_RANGE\":1"));
	CU_ASSERT_TRUE(has(json, "\"INVALID_NS\":2"));
	snprintf(want, sizeof(want), "\"bytes_read\":%llu,", (unsigned long long)(4096 + 3 * 4096));
	CU_ASSERT_TRUE(has(json, want));
	snprintf(want, sizeof(want), "\"bytes_written\":%llu,", (unsigned long long)(2048 + 5 * 8192));
	CU_ASSERT_TRUE(has(json, want));
	CU_ASSERT_TRUE(has(json, "\"io_bytes_read\":12288,"));
	CU_ASSERT_TRUE(has(json, "\"io_bytes_written\":40960,"));
	CU_ASSERT_TRUE(has(json, "\"mr_in_use\":64,"));
	CU_ASSERT_TRUE(has(json, "\"controllers\":1,"));
	CU_ASSERT_TRUE(has(json, "\"io_queues\":1}"));
	/* Too small a buffer is -ENOSPC, never a truncated object */
	CU_ASSERT_EQUAL(ernic_counters_json(&c, json, (size_t)n), -ENOSPC);
	CU_ASSERT_EQUAL(ernic_counters_json(&c, json, 10), -ENOSPC);
	CU_ASSERT_EQUAL(ernic_counters_json(&c, json, (size_t)n + 1), n);
	fx_down();
}

static void test_counters_after_disconnect(void)
{
	struct ernic_counters c;
	uint8_t buf[4096];
	char json[8192];

	CU_ASSERT_FATAL(fx_up(4096, false));
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 1, buf, 4096), NVME_SC_SUCCESS);
	ernic_host_disconnect(fx.hc);
	fx.hc = NULL;
	ernic_target_counters(fx.tgt, &c);
	CU_ASSERT_EQUAL(c.controllers, 0);
	CU_ASSERT_EQUAL(c.io_queues, 0);
	CU_ASSERT_EQUAL(c.mr_in_use, 0);
	CU_ASSERT_EQUAL(c.mr_high_water, 64);
	/* Retired queues still count */
	CU_ASSERT_EQUAL(c.io_cmds[NVME_CMD_READ], 1);
	CU_ASSERT_EQUAL(c.bytes_read, 4096 + 4096);
	CU_ASSERT(ernic_counters_json(&c, json, sizeof(json)) > 0);
	CU_ASSERT_TRUE(json_ok(json));
	CU_ASSERT_TRUE(has(json, "\"mr_in_use\":0,"));
	CU_ASSERT_TRUE(has(json, "\"errors\":{}"));
	fx_down();
}

static void test_counters_json_of_zeroes(void)
{
	struct ernic_counters c;
	char json[1024];
	int n;

	memset(&c, 0, sizeof(c));
	c.errors[NVME_SC_WRITE_FAULT] = 7;
	c.io_cmds[0x85] = 2; /* an opcode with no name */
	n = ernic_counters_json(&c, json, sizeof(json));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_TRUE(json_ok(json));
	CU_ASSERT_TRUE(has(json, "\"admin_cmds\":{}"));
	CU_ASSERT_TRUE(has(json, "\"0x85\":2"));
	CU_ASSERT_TRUE(has(json, "\"WRITE_FAULT\":7"));
}

/* Every opcode and status counted, at 20 digits each: the text is past 64 KiB, and comes back whole. */
static void test_counters_json_alloc_holds_counters_past_64_kib(void)
{
	static struct ernic_counters c;
	static char fixed[1 << 20];
	char *json;
	int n;

	for (int i = 0; i < 256; i++)
		c.admin_cmds[i] = c.io_cmds[i] = UINT64_MAX;
	for (int i = 0; i < NVME_STATUS_COUNT; i++)
		c.errors[i] = UINT64_MAX;
	c.mr_max = UINT32_MAX;
	json = ernic_counters_json_alloc(&c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(json);
	CU_ASSERT(strlen(json) > 64 * 1024);
	CU_ASSERT_TRUE(json_ok(json));
	CU_ASSERT_TRUE(has(json, "\"mr_max\":4294967295,"));
	CU_ASSERT_TRUE(has(json, "\"io_queues\":0}"));
	n = ernic_counters_json(&c, fixed, sizeof(fixed));
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL((size_t)n, strlen(json));
	CU_ASSERT_STRING_EQUAL(json, fixed);
	free(json);
}

static void test_counters_json_alloc_of_zeroes_matches_the_fixed_buffer(void)
{
	struct ernic_counters c;
	char fixed[1024];
	char *json;

	memset(&c, 0, sizeof(c));
	CU_ASSERT_FATAL(ernic_counters_json(&c, fixed, sizeof(fixed)) > 0);
	json = ernic_counters_json_alloc(&c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(json);
	CU_ASSERT_STRING_EQUAL(json, fixed);
	free(json);
}

/* Two hosts on one target: each controller counts its own commands and bytes, the target the sum. */
static void test_per_controller_counters_split_by_host(void)
{
	struct ernic_host_opts hopts = { .nr_io_queues = 1 };
	struct ernic_host_ctrlr *hc2 = NULL;
	struct ernic_host_qpair *qp1;
	struct ernic_counters c1, c2, all;
	char err[ERNIC_ERRLEN] = "";
	uint8_t *buf = aligned_alloc(4096, 8192);

	CU_ASSERT_FATAL(fx_up(4096, false));
	CU_ASSERT_EQUAL_FATAL(ernic_host_connect(ut_port(fx.tgt), &hopts, &hc2, err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(ernic_host_cntlid(hc2), ernic_host_cntlid(fx.hc));
	fill(buf, 8192, 7);
	/* Host 1: three 4 KiB reads; host 2: one 8 KiB write. */
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, (uint64_t)i, 1, buf, 4096), NVME_SC_SUCCESS);
	qp1 = fx.qp;
	fx.qp = ernic_host_io_qpair(hc2, 1);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 10, 2, buf, 8192), NVME_SC_SUCCESS);
	fx.qp = qp1;

	CU_ASSERT_EQUAL(ernic_host_counters(fx.hc, &c1), 0);
	CU_ASSERT_EQUAL(ernic_host_counters(hc2, &c2), 0);
	ernic_target_counters(fx.tgt, &all);
	CU_ASSERT_EQUAL(c1.io_cmds[NVME_CMD_READ], 3);
	CU_ASSERT_EQUAL(c1.io_cmds[NVME_CMD_WRITE], 0);
	CU_ASSERT_EQUAL(c1.io_bytes_read, 3 * 4096);
	CU_ASSERT_EQUAL(c2.io_cmds[NVME_CMD_WRITE], 1);
	CU_ASSERT_EQUAL(c2.io_cmds[NVME_CMD_READ], 0);
	CU_ASSERT_EQUAL(c2.io_bytes_written, 8192);
	CU_ASSERT_EQUAL(c1.controllers, 1);
	CU_ASSERT_EQUAL(c1.io_queues, 1);
	CU_ASSERT_EQUAL(all.io_cmds[NVME_CMD_READ], 3);
	CU_ASSERT_EQUAL(all.io_cmds[NVME_CMD_WRITE], 1);
	CU_ASSERT_EQUAL(all.controllers, 2);
	/* A CNTLID no controller has */
	CU_ASSERT_EQUAL(ernic_target_ctrlr_counters(fx.tgt, 0xFFEE, &c1), -ENOENT);
	ernic_host_disconnect(hc2);
	free(buf);
	fx_down();
}

UT_MAIN("io", UT_CASE(test_ram_4096_write_read_round_trip), UT_CASE(test_ram_512_write_read_round_trip),
	UT_CASE(test_file_4096_round_trip_created_and_sized), UT_CASE(test_file_512_round_trip_created_and_sized),
	UT_CASE(test_file_data_survives_target_restart), UT_CASE(test_file_existing_larger_is_not_truncated),
	UT_CASE(test_flush_succeeds_file_and_ram_and_all_namespaces), UT_CASE(test_write_zeroes_reads_zeroes_ram_512),
	UT_CASE(test_write_zeroes_reads_zeroes_ram_4096), UT_CASE(test_write_zeroes_reads_zeroes_file_512),
	UT_CASE(test_dsm_deallocate_reads_zeroes_ram_512), UT_CASE(test_dsm_deallocate_reads_zeroes_file_4096),
	UT_CASE(test_dsm_without_deallocate_changes_nothing), UT_CASE(test_range_past_end_is_lba_range),
	UT_CASE(test_unknown_nsid_is_invalid_ns), UT_CASE(test_transfer_over_mdts_is_invalid_field_as_base_figure_275_says),
	UT_CASE(test_transfer_limit_follows_the_configured_mdts), UT_CASE(test_inproc_port_refuses_mdts_0_and_over_its_bound),
	UT_CASE(test_sgl_length_not_nlb_times_bs_is_sgl_invalid_data_len),
	UT_CASE(test_unknown_io_opcode_is_invalid_opcode), UT_CASE(test_backend_eio_is_media_error),
	UT_CASE(test_backend_other_errno_is_internal_error), UT_CASE(test_vwc_off_makes_every_write_durable),
	UT_CASE(test_second_namespace_is_separate), UT_CASE(test_json_checker_rejects_malformed),
	UT_CASE(test_counters_exact_after_connect_and_io), UT_CASE(test_counters_after_disconnect),
	UT_CASE(test_counters_json_of_zeroes),
	UT_CASE(test_counters_json_alloc_holds_counters_past_64_kib),
	UT_CASE(test_counters_json_alloc_of_zeroes_matches_the_fixed_buffer), UT_CASE(test_per_controller_counters_split_by_host))
