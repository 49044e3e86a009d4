/* SPDX-License-Identifier: MIT */
/*
 * rdma_ut.c - the keyed SGL path through the in-process transport.
 *
 * Raw capsules go straight into an ernic_inproc_qpair's ring (no host
 * library in between), so each test can corrupt exactly one thing about a
 * descriptor: its key, the region's validity, the address range, the access
 * rights, the type or the subtype. A refused transfer must fail the command
 * and move not one byte, which a canary pattern on both sides checks. Then
 * send-with-invalidate, and the MR budget of a connect as a stock nvme-rdma
 * host makes it, including the seed's QID 8 failure.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inproc.h"
#include "keyed_sgl_cases.h"
#include "rdma.h"
#include "ut.h"
#include "ut_fixture.h"
#ifdef ERNIC_HAVE_RDMA
#include "ernic/rdma.h"
#endif

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:0badc0de-0000-4000-8000-000000000001"
#define CC_ENABLE (NVME_CC_EN | NVME_CC_NVM_ENTRY_SIZES)
#define TIMEOUT_NS 10000000000ull
#define NS_BYTES (1u << 20)
#define CANARY_NS 0xC5
#define CANARY_HOST 0x3A
#define NR_MR 4
#define RW_ACCESS (ERNIC_MR_REMOTE_READ | ERNIC_MR_REMOTE_WRITE | ERNIC_MR_LOCAL_WRITE)

/* A queue pair driven by hand, with the regions of its protection domain. */
struct raw_q {
	struct ernic_inproc_qpair *qp;
	uint32_t tail, head;
	uint16_t cid;
	uint32_t h[NR_MR]; /* UINT32_MAX: destroyed by the test */
};

static struct {
	struct ernic_target *tgt;
	struct ernic_mr_table *mr;
	struct raw_q admin, io, io2;
	uint16_t cntlid;
	_Alignas(4096) uint8_t buf[3][16384];
} fx;

/* ----------------------------------------------------------- raw capsules */

/* Post @sqe with the CID @cid, whatever else is outstanding. */
static void raw_post(struct raw_q *q, const struct nvme_sqe *sqe, uint16_t cid)
{
	struct ernic_inproc_qpair *qp = q->qp;
	struct nvme_sqe *dst = &qp->sq_ring[q->tail & qp->mask];

	*dst = *sqe;
	dst->cid = cid;
	ernic_inproc_ring_doorbell(qp, ++q->tail);
}

/* The next completion on @q; false (and a failure) after TIMEOUT_NS without one. */
static bool raw_reap(struct raw_q *q, struct ernic_inproc_cpl *out)
{
	struct ernic_inproc_qpair *qp = q->qp;
	uint64_t deadline = ernic_now_ns() + TIMEOUT_NS;

	while (atomic_load_explicit(&qp->cq_tail, memory_order_acquire) == q->head) {
		if (ernic_now_ns() > deadline) {
			CU_FAIL("no completion within 10 s");
			return false;
		}
		sched_yield();
	}
	*out = qp->cq_ring[q->head & qp->mask];
	q->head++;
	return true;
}

static bool raw_cmd(struct raw_q *q, const struct nvme_sqe *sqe, struct ernic_inproc_cpl *out)
{
	uint16_t cid = (uint16_t)(q->cid++ & q->qp->mask);

	raw_post(q, sqe, cid);
	if (!raw_reap(q, out))
		return false;
	CU_ASSERT_EQUAL(out->cqe.cid, cid);
	return true;
}

/* Run @sqe whose dptr the caller built; returns the 11-bit status. */
static uint16_t raw_status(struct raw_q *q, const struct nvme_sqe *sqe, struct ernic_inproc_cpl *cpl)
{
	struct ernic_inproc_cpl c;

	if (!raw_cmd(q, sqe, &c))
		return 0xFFFF;
	if (cpl)
		*cpl = c;
	return ST(c.cqe);
}

/* A region in @q's protection domain, as its host's MR pool allocates them. */
static int mr_alloc_on(struct raw_q *q, uint32_t *h)
{
	return ernic_mr_alloc(fx.mr, q->qp->pd, h);
}

/* Register @buf in region @i of @q; returns the rkey. */
static uint32_t reg_on(struct raw_q *q, int i, void *buf, uint32_t len, uint32_t access)
{
	uint32_t rkey = 0;

	CU_ASSERT_EQUAL(ernic_mr_fast_reg(fx.mr, q->h[i], buf, len, access, &rkey), 0);
	return rkey;
}

/* Local invalidate by @q's host, ignoring a region the target already invalidated. */
static void unreg_on(struct raw_q *q, uint32_t rkey)
{
	ernic_mr_invalidate(fx.mr, q->qp->pd, rkey);
}

/* The target side of @q resolving @rkey over the first 4 KiB of @buf: 0 or -errno. */
static int resolve_on(struct raw_q *q, uint32_t rkey, void *buf, uint32_t access)
{
	void *p;

	return ernic_mr_resolve(fx.mr, q->qp->pd, rkey, (uintptr_t)buf, 4096, access, &p);
}

/* The same on I/O queue 1, where most tests run. */
static uint32_t reg(int i, void *buf, uint32_t len, uint32_t access)
{
	return reg_on(&fx.io, i, buf, len, access);
}

static void unreg(uint32_t rkey)
{
	unreg_on(&fx.io, rkey);
}

static void sqe_init(struct nvme_sqe *sqe, uint8_t opc)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opc = opc;
	sqe->flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
}

/* A command with a correctly keyed SGL over @buf, subtype @st. */
static uint16_t keyed_cmd(struct raw_q *q, struct nvme_sqe *sqe, void *buf, uint32_t len, uint32_t access,
			  uint8_t st, struct ernic_inproc_cpl *cpl)
{
	uint32_t rkey = reg_on(q, 0, buf, len, access);
	uint16_t status;

	nvme_keyed_sgl_set(&sqe->dptr, (uintptr_t)buf, len, rkey, st);
	status = raw_status(q, sqe, cpl);
	unreg_on(q, rkey);
	return status;
}

static uint16_t connect_raw(struct raw_q *q, uint16_t qid, uint16_t cntlid, uint32_t *dw0)
{
	struct nvmf_connect_data *d = (struct nvmf_connect_data *)fx.buf[2];
	struct nvme_sqe sqe;
	struct nvmf_connect_cmd *cmd = (struct nvmf_connect_cmd *)&sqe;
	struct ernic_inproc_cpl cpl;
	uint16_t st;

	memset(d, 0, sizeof(*d));
	d->cntlid = cntlid;
	snprintf(d->subnqn, sizeof(d->subnqn), "%s", ernic_target_subnqn(fx.tgt));
	snprintf(d->hostnqn, sizeof(d->hostnqn), "%s", HOSTNQN);
	sqe_init(&sqe, NVME_FABRICS_COMMAND);
	cmd->fctype = NVMF_FCTYPE_CONNECT;
	cmd->qid = qid;
	cmd->sqsize = 31;
	st = keyed_cmd(q, &sqe, d, sizeof(*d), ERNIC_MR_REMOTE_READ, NVME_SGL_SUBTYPE_ADDRESS, &cpl);
	if (dw0)
		*dw0 = cpl.cqe.dw0;
	return st;
}

static uint16_t cc_set(uint32_t cc)
{
	struct nvme_sqe sqe;
	struct nvmf_property_cmd *cmd = (struct nvmf_property_cmd *)&sqe;

	sqe_init(&sqe, NVME_FABRICS_COMMAND);
	cmd->fctype = NVMF_FCTYPE_PROPERTY_SET;
	cmd->ofst = NVME_REG_CC;
	cmd->value = cc;
	nvme_keyed_sgl_set(&sqe.dptr, 0, 0, 0, 0);
	return raw_status(&fx.admin, &sqe, NULL);
}

/* A queue pair on the fixture's port with its NR_MR regions; not connected. */
static void raw_q_open(struct raw_q *q, uint16_t qid)
{
	memset(q, 0, sizeof(*q));
	q->qp = ernic_inproc_qpair_create(ut_port(fx.tgt), 32, qid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q->qp);
	for (int i = 0; i < NR_MR; i++)
		CU_ASSERT_EQUAL_FATAL(mr_alloc_on(q, &q->h[i]), 0);
}

static void raw_q_close(struct raw_q *q)
{
	ernic_inproc_qpair_destroy(q->qp);
	for (int i = 0; i < NR_MR; i++)
		if (q->h[i] != UINT32_MAX)
			CU_ASSERT_EQUAL(ernic_mr_destroy(fx.mr, q->h[i]), 0);
	memset(q, 0, sizeof(*q));
}

static void fx_up(void)
{
	struct ernic_target_opts opts = { 0 };
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN] = "";
	uint32_t dw0 = 0;

	memset(&fx, 0, sizeof(fx));
	ernic_backend_cfg_init(&cfg);
	cfg.size = NS_BYTES;
	cfg.queues = 2;
	cfg.queue_size = 32;
	if (ut_target_start(&cfg, &opts, &fx.tgt, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	fx.mr = ernic_inproc_port_mr_table(ut_port(fx.tgt));
	raw_q_open(&fx.admin, 0);
	raw_q_open(&fx.io, 1);
	raw_q_open(&fx.io2, 2);
	CU_ASSERT_EQUAL_FATAL(connect_raw(&fx.admin, 0, NVMF_CNTLID_DYNAMIC, &dw0), NVME_SC_SUCCESS);
	fx.cntlid = (uint16_t)dw0;
	CU_ASSERT_EQUAL_FATAL(cc_set(CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(connect_raw(&fx.io, 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(connect_raw(&fx.io2, 2, fx.cntlid, NULL), NVME_SC_SUCCESS);
	/* The namespace's first MiB carries a canary */
	memset(fx.tgt->ns[0].ram, CANARY_NS, NS_BYTES);
}

static void fx_down(void)
{
	struct ernic_counters c;

	raw_q_close(&fx.io2);
	raw_q_close(&fx.io);
	raw_q_close(&fx.admin);
	ernic_target_counters(fx.tgt, &c);
	CU_ASSERT_EQUAL(c.controllers, 0);
	CU_ASSERT_EQUAL(c.mr_in_use, 0);
	ut_target_stop(fx.tgt);
	memset(&fx, 0, sizeof(fx));
}

static bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static bool ns_untouched(void)
{
	return all_bytes(fx.tgt->ns[0].ram, NS_BYTES, CANARY_NS);
}

static void rw_sqe(struct nvme_sqe *sqe, uint8_t opc, uint64_t slba, uint32_t nlb)
{
	ernic_host_rw_sqe(sqe, opc, 1, slba, nlb);
	sqe->flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
}

/* A Write of one block from fx.buf[0] (pattern) with the descriptor @sgl. */
static uint16_t write_with(const struct nvme_sgl_desc *sgl, struct ernic_inproc_cpl *cpl)
{
	struct nvme_sqe sqe;

	rw_sqe(&sqe, NVME_CMD_WRITE, 2, 1);
	sqe.dptr = *sgl;
	return raw_status(&fx.io, &sqe, cpl);
}

/* A Read of one block into fx.buf[1] (canary) with the descriptor @sgl. */
static uint16_t read_with(const struct nvme_sgl_desc *sgl, struct ernic_inproc_cpl *cpl)
{
	struct nvme_sqe sqe;

	rw_sqe(&sqe, NVME_CMD_READ, 2, 1);
	sqe.dptr = *sgl;
	return raw_status(&fx.io, &sqe, cpl);
}

static void bufs_prepare(void)
{
	memset(fx.buf[0], 0x77, sizeof(fx.buf[0]));
	memset(fx.buf[1], CANARY_HOST, sizeof(fx.buf[1]));
}

static bool host_untouched(void)
{
	return all_bytes(fx.buf[1], sizeof(fx.buf[1]), CANARY_HOST);
}

/* ============================================================== the baseline */

/*
 * A queue pair is sized for the QID its connection request named (an admin
 * queue at most 32 entries, an I/O queue up to MQES): a Connect naming
 * another QID is refused pointing at QID, so a host cannot make an admin
 * controller, say a discovery one that any host may reach, on a queue pair
 * sized for I/O (over NVMe/RDMA, with its bounce buffers registered).
 */
static void test_a_connect_naming_another_qid_than_its_queue_pair_is_refused(void)
{
	struct raw_q q;
	uint32_t dw0 = 0;

	fx_up();
	raw_q_open(&q, 1);
	CU_ASSERT_EQUAL(connect_raw(&q, 0, NVMF_CNTLID_DYNAMIC, &dw0), NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(dw0, NVMF_CONNECT_INVALID_PARAM_DW0(NVMF_CONNECT_IATTR_CMD,
							    offsetof(struct nvmf_connect_cmd, qid)));
	raw_q_close(&q);
	raw_q_open(&q, 0);
	CU_ASSERT_EQUAL(connect_raw(&q, 2, fx.cntlid, &dw0), NVME_SC_CONNECT_INVALID_PARAM);
	/* The same queue pair takes the Connect its QID says. */
	CU_ASSERT_EQUAL(connect_raw(&q, 0, NVMF_CNTLID_DYNAMIC, NULL), NVME_SC_SUCCESS);
	raw_q_close(&q);
	fx_down();
}

static void test_correct_key_moves_data_both_ways(void)
{
	struct nvme_sgl_desc sgl;
	uint32_t rkey;

	fx_up();
	bufs_prepare();
	rkey = reg(1, fx.buf[0], 4096, ERNIC_MR_REMOTE_READ);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[0], 4096, rkey, NVME_SGL_SUBTYPE_ADDRESS);
	CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_SUCCESS);
	unreg(rkey);
	CU_ASSERT_TRUE(all_bytes(fx.tgt->ns[0].ram + 2 * 4096, 4096, 0x77));
	CU_ASSERT_TRUE(all_bytes(fx.tgt->ns[0].ram, 2 * 4096, CANARY_NS));
	CU_ASSERT_TRUE(all_bytes(fx.tgt->ns[0].ram + 3 * 4096, NS_BYTES - 3 * 4096, CANARY_NS));
	rkey = reg(1, fx.buf[1], 4096, ERNIC_MR_REMOTE_WRITE | ERNIC_MR_LOCAL_WRITE);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, rkey, NVME_SGL_SUBTYPE_ADDRESS);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_SUCCESS);
	unreg(rkey);
	CU_ASSERT_TRUE(all_bytes(fx.buf[1], 4096, 0x77));
	CU_ASSERT_TRUE(all_bytes(fx.buf[1] + 4096, sizeof(fx.buf[1]) - 4096, CANARY_HOST));
	fx_down();
}

/* =================================================== corrupted descriptors */

static void test_wrong_key_is_data_transfer_error_and_nothing_moves(void)
{
	struct nvme_sgl_desc sgl;
	uint32_t wr, rd, other;
	struct ernic_counters c;

	fx_up();
	bufs_prepare();
	wr = reg(1, fx.buf[0], 4096, RW_ACCESS);
	rd = reg(2, fx.buf[1], 4096, RW_ACCESS);
	/* Same region, wrong 8-bit key */
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[0], 4096, ERNIC_RKEY(ERNIC_RKEY_INDEX(wr), ERNIC_RKEY_KEY(wr) + 1),
			   0);
	CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, ERNIC_RKEY(ERNIC_RKEY_INDEX(rd), ERNIC_RKEY_KEY(rd) - 1),
			   0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	/* Another region's key (allocated, never registered) */
	other = ERNIC_RKEY(fx.io.h[3], 1);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[0], 4096, other, 0);
	CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	/* An index past the table */
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, 0xFFFFFF01u, 0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	/* Key 0 of region 0 */
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, 0, 0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_TRUE(ns_untouched());
	CU_ASSERT_TRUE(host_untouched());
	ernic_target_counters(fx.tgt, &c);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_DATA_XFER_ERROR], 5);
	CU_ASSERT_EQUAL(c.bytes_read, 0);
	CU_ASSERT_EQUAL(c.bytes_written, 3 * 1024); /* the three Connects only */
	unreg(wr);
	unreg(rd);
	fx_down();
}

static void test_stale_key_after_invalidate_is_data_transfer_error(void)
{
	struct nvme_sgl_desc sgl;
	uint32_t old, fresh;

	fx_up();
	bufs_prepare();
	old = reg(1, fx.buf[0], 4096, RW_ACCESS);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(fx.mr, fx.io.qp->pd, old), 0);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[0], 4096, old, 0);
	CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	/* Re-registered: the old key stays stale, the new one works */
	fresh = reg(1, fx.buf[1], 4096, RW_ACCESS);
	CU_ASSERT_NOT_EQUAL(fresh, old);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, old, 0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_TRUE(ns_untouched());
	CU_ASSERT_TRUE(host_untouched());
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, fresh, 0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_TRUE(all_bytes(fx.buf[1], 4096, CANARY_NS));
	unreg(fresh);
	fx_down();
}

static void test_destroyed_region_key_is_data_transfer_error(void)
{
	struct nvme_sgl_desc sgl;
	uint32_t rkey, h;

	fx_up();
	bufs_prepare();
	rkey = reg(3, fx.buf[0], 4096, RW_ACCESS);
	CU_ASSERT_EQUAL(ernic_mr_destroy(fx.mr, fx.io.h[3]), 0);
	fx.io.h[3] = UINT32_MAX;
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[0], 4096, rkey, 0);
	CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	/* The entry reused by a new region does not revive the old key */
	CU_ASSERT_EQUAL(mr_alloc_on(&fx.io, &h), 0);
	fx.io.h[3] = h;
	CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_TRUE(ns_untouched());
	fx_down();
}

static void test_address_outside_region_is_data_transfer_error(void)
{
	struct nvme_sgl_desc sgl;
	uintptr_t base0, base1;
	uint32_t wr, rd;

	fx_up();
	bufs_prepare();
	base0 = (uintptr_t)fx.buf[0] + 4096;
	base1 = (uintptr_t)fx.buf[1] + 4096;
	/* Regions are the middle 4 KiB of each buffer */
	wr = reg(1, (void *)base0, 4096, RW_ACCESS);
	rd = reg(2, (void *)base1, 4096, RW_ACCESS);
	/* Starting inside, ending past */
	nvme_keyed_sgl_set(&sgl, base0 + 512, 4096, wr, 0);
	CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	nvme_keyed_sgl_set(&sgl, base1 + 4095, 4096, rd, 0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	/* Starting before */
	nvme_keyed_sgl_set(&sgl, base0 - 1, 4096, wr, 0);
	CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	nvme_keyed_sgl_set(&sgl, base1 - 4096, 4096, rd, 0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	/* Far away, and wrapping */
	nvme_keyed_sgl_set(&sgl, base1 + (1ull << 40), 4096, rd, 0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	nvme_keyed_sgl_set(&sgl, UINT64_MAX - 100, 4096, rd, 0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_TRUE(ns_untouched());
	CU_ASSERT_TRUE(host_untouched());
	unreg(wr);
	unreg(rd);
	fx_down();
}

static void test_missing_access_right_is_data_transfer_error(void)
{
	struct nvme_sgl_desc sgl;
	uint32_t rkey;

	fx_up();
	bufs_prepare();
	/* A host read into a region the controller may only RDMA READ */
	rkey = reg(1, fx.buf[1], 4096, ERNIC_MR_REMOTE_READ | ERNIC_MR_LOCAL_WRITE);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, rkey, 0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_TRUE(host_untouched());
	unreg(rkey);
	/* A host write out of a region the controller may only RDMA WRITE */
	rkey = reg(1, fx.buf[0], 4096, ERNIC_MR_REMOTE_WRITE | ERNIC_MR_LOCAL_WRITE);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[0], 4096, rkey, 0);
	CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_TRUE(ns_untouched());
	unreg(rkey);
	/* A local-write-only region is good for neither */
	rkey = reg(1, fx.buf[1], 4096, ERNIC_MR_LOCAL_WRITE);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, rkey, 0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_TRUE(host_untouched());
	unreg(rkey);
	fx_down();
}

static void test_keyed_length_shorter_than_transfer_moves_nothing(void)
{
	struct nvme_sgl_desc sgl;
	uint32_t rkey;

	fx_up();
	bufs_prepare();
	rkey = reg(1, fx.buf[1], 8192, RW_ACCESS);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 2048, rkey, 0);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_SGL_INVALID_DATA_LEN);
	CU_ASSERT_TRUE(host_untouched());
	unreg(rkey);
	fx_down();
}

static void test_identify_with_wrong_key_leaves_buffer_alone(void)
{
	struct nvme_sqe sqe;
	uint32_t rkey;

	fx_up();
	bufs_prepare();
	rkey = reg_on(&fx.admin, 1, fx.buf[1], 4096, RW_ACCESS);
	sqe_init(&sqe, NVME_ADMIN_IDENTIFY);
	sqe.cdw10 = NVME_ID_CNS_CTRL;
	nvme_keyed_sgl_set(&sqe.dptr, (uintptr_t)fx.buf[1], 4096, rkey ^ 0x80, 0);
	CU_ASSERT_EQUAL(raw_status(&fx.admin, &sqe, NULL), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_TRUE(host_untouched());
	nvme_keyed_sgl_set(&sqe.dptr, (uintptr_t)fx.buf[1], 4096, rkey, 0);
	CU_ASSERT_EQUAL(raw_status(&fx.admin, &sqe, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(((const struct nvme_id_ctrl *)fx.buf[1])->cntlid, fx.cntlid);
	unreg_on(&fx.admin, rkey);
	fx_down();
}

static void test_connect_with_wrong_key_creates_no_controller(void)
{
	struct raw_q q;
	struct nvmf_connect_data *d = (struct nvmf_connect_data *)fx.buf[2];
	struct nvme_sqe sqe;
	struct nvmf_connect_cmd *cmd = (struct nvmf_connect_cmd *)&sqe;
	struct ernic_counters c;
	uint32_t rkey;

	fx_up();
	raw_q_open(&q, 0);
	memset(d, 0, sizeof(*d));
	d->cntlid = NVMF_CNTLID_DYNAMIC;
	snprintf(d->subnqn, sizeof(d->subnqn), "%s", ernic_target_subnqn(fx.tgt));
	snprintf(d->hostnqn, sizeof(d->hostnqn), "%s", HOSTNQN);
	sqe_init(&sqe, NVME_FABRICS_COMMAND);
	cmd->fctype = NVMF_FCTYPE_CONNECT;
	cmd->sqsize = 31;
	rkey = reg_on(&q, 1, d, 1024, ERNIC_MR_REMOTE_READ);
	nvme_keyed_sgl_set(&sqe.dptr, (uintptr_t)d, 1024, rkey + 1, 0);
	CU_ASSERT_EQUAL(raw_status(&q, &sqe, NULL), NVME_SC_DATA_XFER_ERROR);
	unreg_on(&q, rkey);
	ernic_target_counters(fx.tgt, &c);
	CU_ASSERT_EQUAL(c.controllers, 1); /* the fixture's only */
	raw_q_close(&q);
	fx_down();
}

static void test_sgl_type_not_keyed_is_sgl_invalid_type(void)
{
	static const uint8_t types[] = { NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_TYPE_BIT_BUCKET, NVME_SGL_TYPE_SEGMENT,
					 NVME_SGL_TYPE_LAST_SEGMENT, NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK, 0xE };
	struct nvme_sgl_desc sgl;
	struct nvme_sqe sqe;
	uint32_t rkey;

	fx_up();
	bufs_prepare();
	rkey = reg(1, fx.buf[0], 4096, RW_ACCESS);
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(types); i++) {
		/* A well-formed unkeyed descriptor of the right length over the same buffer */
		memset(&sgl, 0, sizeof(sgl));
		sgl.addr = (uintptr_t)fx.buf[0];
		sgl.unkeyed.length = 4096;
		sgl.id = NVME_SGL_ID(types[i], 0);
		CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_SGL_INVALID_TYPE);
		/* In-capsule data (type 0, subtype 1 offset) is not offered over RDMA */
		sgl.addr = types[i] == 0 ? 0 : (uintptr_t)fx.buf[1];
		sgl.id = NVME_SGL_ID(types[i], types[i] == 0 ? NVME_SGL_SUBTYPE_OFFSET : 0);
		CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_SGL_INVALID_TYPE);
	}
	CU_ASSERT_TRUE(ns_untouched());
	CU_ASSERT_TRUE(host_untouched());
	/* Admin commands too */
	sqe_init(&sqe, NVME_ADMIN_IDENTIFY);
	sqe.cdw10 = NVME_ID_CNS_CTRL;
	sqe.dptr.addr = (uintptr_t)fx.buf[1];
	sqe.dptr.unkeyed.length = 4096;
	sqe.dptr.id = NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_ADDRESS);
	CU_ASSERT_EQUAL(raw_status(&fx.admin, &sqe, NULL), NVME_SC_SGL_INVALID_TYPE);
	CU_ASSERT_TRUE(host_untouched());
	unreg(rkey);
	fx_down();
}

static void test_keyed_subtype_not_0_or_f_is_sgl_invalid_subtype(void)
{
	static const uint8_t subtypes[] = { 0x1, 0x2, 0x9, 0xA, 0xE };
	struct nvme_sgl_desc sgl;
	uint32_t rkey;

	fx_up();
	bufs_prepare();
	rkey = reg(1, fx.buf[0], 4096, RW_ACCESS);
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(subtypes); i++) {
		nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[0], 4096, rkey, subtypes[i]);
		CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_SGL_INVALID_SUBTYPE);
		CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_SGL_INVALID_SUBTYPE);
	}
	CU_ASSERT_TRUE(ns_untouched());
	/* The region survived all of that: subtype 0 still works with its key */
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[0], 4096, rkey, 0);
	CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_SUCCESS);
	unreg(rkey);
	fx_down();
}

/* ===================================================== send with invalidate */

static void test_subtype_f_invalidates_rkey_and_flags_completion(void)
{
	struct ernic_inproc_cpl cpl;
	struct nvme_sgl_desc sgl;
	uint32_t rkey;

	fx_up();
	bufs_prepare();
	rkey = reg(1, fx.buf[1], 4096, RW_ACCESS);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, rkey, NVME_SGL_SUBTYPE_INVALIDATE_KEY);
	CU_ASSERT_EQUAL(read_with(&sgl, &cpl), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cpl.flags & ERNIC_INPROC_CPL_WITH_INV, ERNIC_INPROC_CPL_WITH_INV);
	CU_ASSERT_EQUAL(cpl.inv_rkey, rkey);
	CU_ASSERT_EQUAL(resolve_on(&fx.io, rkey, fx.buf[1], ERNIC_MR_REMOTE_WRITE), -EACCES);
	/* Already invalid: a local invalidate now is refused, and the key is dead for I/O */
	CU_ASSERT_EQUAL(ernic_mr_invalidate(fx.mr, fx.io.qp->pd, rkey), -EINVAL);
	CU_ASSERT_EQUAL(read_with(&sgl, &cpl), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_EQUAL(cpl.flags & ERNIC_INPROC_CPL_WITH_INV, 0);
	/* The region can be registered again at once (it is not still valid) */
	rkey = reg(1, fx.buf[0], 4096, RW_ACCESS);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[0], 4096, rkey, NVME_SGL_SUBTYPE_INVALIDATE_KEY);
	CU_ASSERT_EQUAL(write_with(&sgl, &cpl), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cpl.flags & ERNIC_INPROC_CPL_WITH_INV, ERNIC_INPROC_CPL_WITH_INV);
	CU_ASSERT_EQUAL(cpl.inv_rkey, rkey);
	CU_ASSERT_EQUAL(resolve_on(&fx.io, rkey, fx.buf[0], ERNIC_MR_REMOTE_READ), -EACCES);
	fx_down();
}

static void test_subtype_0_leaves_rkey_valid(void)
{
	struct ernic_inproc_cpl cpl;
	struct nvme_sgl_desc sgl;
	uint32_t rkey;

	fx_up();
	bufs_prepare();
	rkey = reg(1, fx.buf[1], 4096, RW_ACCESS);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, rkey, NVME_SGL_SUBTYPE_ADDRESS);
	CU_ASSERT_EQUAL(read_with(&sgl, &cpl), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cpl.flags & ERNIC_INPROC_CPL_WITH_INV, 0);
	CU_ASSERT_EQUAL(resolve_on(&fx.io, rkey, fx.buf[1], ERNIC_MR_REMOTE_WRITE), 0);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(fx.mr, fx.io.qp->pd, rkey), 0);
	fx_down();
}

static void test_subtype_f_with_wrong_key_invalidates_nothing(void)
{
	struct ernic_inproc_cpl cpl;
	struct nvme_sgl_desc sgl;
	uint32_t rkey;

	fx_up();
	bufs_prepare();
	rkey = reg(1, fx.buf[1], 4096, RW_ACCESS);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, rkey + 1, NVME_SGL_SUBTYPE_INVALIDATE_KEY);
	CU_ASSERT_EQUAL(read_with(&sgl, &cpl), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_EQUAL(cpl.flags & ERNIC_INPROC_CPL_WITH_INV, 0);
	CU_ASSERT_TRUE(host_untouched());
	/* The real key is untouched */
	CU_ASSERT_EQUAL(resolve_on(&fx.io, rkey, fx.buf[1], ERNIC_MR_REMOTE_WRITE), 0);
	unreg(rkey);
	fx_down();
}

/* ====================================================== protection domains */

/*
 * Each host queue pair is its own protection domain: I/O queue 1 presenting
 * an rkey that I/O queue 2's host registered is a remote access error, as a
 * wrong key is. The command fails with Data Transfer Error and moves not
 * one byte either way; queue 2 itself still uses the same rkey.
 */
static void test_rkey_of_another_queue_is_data_transfer_error_and_nothing_moves(void)
{
	struct ernic_counters before, after;
	struct nvme_sgl_desc sgl;
	struct nvme_sqe sqe;
	uint32_t rd, wr;

	fx_up();
	bufs_prepare();
	rd = reg_on(&fx.io2, 1, fx.buf[1], 4096, RW_ACCESS);
	wr = reg_on(&fx.io2, 2, fx.buf[0], 4096, RW_ACCESS);
	ernic_target_counters(fx.tgt, &before);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, rd, NVME_SGL_SUBTYPE_ADDRESS);
	CU_ASSERT_EQUAL(read_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[0], 4096, wr, NVME_SGL_SUBTYPE_ADDRESS);
	CU_ASSERT_EQUAL(write_with(&sgl, NULL), NVME_SC_DATA_XFER_ERROR);
	/* The admin queue is a domain of its own too */
	sqe_init(&sqe, NVME_ADMIN_IDENTIFY);
	sqe.cdw10 = NVME_ID_CNS_CTRL;
	nvme_keyed_sgl_set(&sqe.dptr, (uintptr_t)fx.buf[1], 4096, rd, NVME_SGL_SUBTYPE_ADDRESS);
	CU_ASSERT_EQUAL(raw_status(&fx.admin, &sqe, NULL), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_TRUE(host_untouched());
	CU_ASSERT_TRUE(ns_untouched());
	ernic_target_counters(fx.tgt, &after);
	CU_ASSERT_EQUAL(after.errors[NVME_SC_DATA_XFER_ERROR] - before.errors[NVME_SC_DATA_XFER_ERROR], 3);
	CU_ASSERT_EQUAL(after.bytes_read, before.bytes_read);
	CU_ASSERT_EQUAL(after.bytes_written, before.bytes_written);
	CU_ASSERT_EQUAL(after.io_bytes_read, before.io_bytes_read);
	CU_ASSERT_EQUAL(after.io_bytes_written, before.io_bytes_written);

	/* The same rkeys on the queue whose host registered them */
	rw_sqe(&sqe, NVME_CMD_READ, 2, 1);
	nvme_keyed_sgl_set(&sqe.dptr, (uintptr_t)fx.buf[1], 4096, rd, NVME_SGL_SUBTYPE_ADDRESS);
	CU_ASSERT_EQUAL(raw_status(&fx.io2, &sqe, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_TRUE(all_bytes(fx.buf[1], 4096, CANARY_NS));
	rw_sqe(&sqe, NVME_CMD_WRITE, 2, 1);
	nvme_keyed_sgl_set(&sqe.dptr, (uintptr_t)fx.buf[0], 4096, wr, NVME_SGL_SUBTYPE_ADDRESS);
	CU_ASSERT_EQUAL(raw_status(&fx.io2, &sqe, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_TRUE(all_bytes(fx.tgt->ns[0].ram + 2 * 4096, 4096, 0x77));
	unreg_on(&fx.io2, rd);
	unreg_on(&fx.io2, wr);
	fx_down();
}

/*
 * A SEND with Invalidate names an rkey of the queue's own domain; another
 * queue's rkey is left valid, whether the command failed on it (a Read) or
 * moved no data (a Flush carrying the descriptor).
 */
static void test_send_with_invalidate_of_another_queues_rkey_invalidates_nothing(void)
{
	struct ernic_inproc_cpl cpl;
	struct nvme_sgl_desc sgl;
	struct nvme_sqe sqe;
	uint32_t rkey;

	fx_up();
	bufs_prepare();
	rkey = reg_on(&fx.io2, 1, fx.buf[1], 4096, RW_ACCESS);
	nvme_keyed_sgl_set(&sgl, (uintptr_t)fx.buf[1], 4096, rkey, NVME_SGL_SUBTYPE_INVALIDATE_KEY);
	CU_ASSERT_EQUAL(read_with(&sgl, &cpl), NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_EQUAL(cpl.flags & ERNIC_INPROC_CPL_WITH_INV, 0);
	memset(&sqe, 0, sizeof(sqe));
	sqe.opc = NVME_CMD_FLUSH;
	sqe.nsid = 1;
	sqe.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	sqe.dptr = sgl;
	CU_ASSERT_EQUAL(raw_status(&fx.io, &sqe, &cpl), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cpl.flags & ERNIC_INPROC_CPL_WITH_INV, 0);
	CU_ASSERT_TRUE(host_untouched());
	/* Still valid for its own queue, which may invalidate it */
	rw_sqe(&sqe, NVME_CMD_READ, 2, 1);
	sqe.dptr = sgl;
	CU_ASSERT_EQUAL(raw_status(&fx.io2, &sqe, &cpl), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cpl.flags & ERNIC_INPROC_CPL_WITH_INV, ERNIC_INPROC_CPL_WITH_INV);
	CU_ASSERT_EQUAL(cpl.inv_rkey, rkey);
	CU_ASSERT_TRUE(all_bytes(fx.buf[1], 4096, CANARY_NS));
	fx_down();
}

static void test_host_submit_completes_with_invalidate_and_leaks_no_region(void)
{
	struct ernic_target_opts opts = { 0 };
	struct ernic_host_opts hopts = { .nr_io_queues = 1, .queue_size = 16 };
	struct ernic_backend_cfg cfg;
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *qp;
	struct ernic_target *tgt;
	struct ernic_counters c;
	char err[ERNIC_ERRLEN] = "";
	static uint8_t buf[4096];
	int bad = 0;

	ernic_backend_cfg_init(&cfg);
	cfg.size = NS_BYTES;
	CU_ASSERT_EQUAL_FATAL(ut_target_start(&cfg, &opts, &tgt, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_host_connect(ut_port(tgt), &hopts, &hc, err, sizeof(err)), 0);
	qp = ernic_host_io_qpair(hc, 1);
	for (int i = 0; i < 500; i++) {
		struct nvme_sqe sqe;
		struct ernic_host_cpl cpl = { .status = 0xFFFF };
		uint64_t deadline = ernic_now_ns() + TIMEOUT_NS;

		ernic_host_rw_sqe(&sqe, (i & 1) ? NVME_CMD_READ : NVME_CMD_WRITE, 1, (uint64_t)(i % 64), 1);
		if (ernic_host_submit(qp, &sqe, buf, sizeof(buf), NULL)) {
			bad++;
			break;
		}
		while (ernic_host_poll(qp, &cpl, 1) == 0 && ernic_now_ns() < deadline)
			sched_yield();
		bad += cpl.status != 0;
	}
	CU_ASSERT_EQUAL(bad, 0);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_in_use, 32 + 16);
	CU_ASSERT_EQUAL(c.mr_high_water, 32 + 16);
	ernic_host_disconnect(hc);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_in_use, 0);
	ut_target_stop(tgt);
}

/* ============================================================ CID conflicts */

/*
 * A host that reuses the CID of an outstanding AER gets Command ID Conflict
 * for the new command; the AER keeps its slot, stays held, and completes
 * with the right CID and notice when the event comes. The conflict's
 * completion must touch no other slot's state: held[] is compared slot by
 * slot before and after.
 */
static void test_cid_of_held_aer_reused_is_cid_conflict_and_aer_survives(void)
{
	const uint16_t cid = 7;
	struct ernic_inproc_qpair *aq;
	struct ernic_inproc_cpl cpl;
	struct ernic_counters c;
	struct nvme_sqe sqe;
	uint8_t held[32];

	fx_up();
	aq = fx.admin.qp;
	CU_ASSERT_EQUAL_FATAL(aq->entries, sizeof(held));
	sqe_init(&sqe, NVME_ADMIN_SET_FEATURES);
	sqe.cdw10 = NVME_FEAT_ASYNC_EVENT;
	sqe.cdw11 = NVME_CTRL_OAES_NS_ATTR;
	CU_ASSERT_EQUAL(raw_status(&fx.admin, &sqe, NULL), NVME_SC_SUCCESS);
	/* The fixture's own commands used CIDs below this one; none is outstanding now. */
	fx.admin.cid = cid + 1;

	sqe_init(&sqe, NVME_ADMIN_ASYNC_EVENT);
	raw_post(&fx.admin, &sqe, cid);
	/* The AER was taken once a later command on the same ring completes. */
	sqe_init(&sqe, NVME_ADMIN_KEEP_ALIVE);
	CU_ASSERT_EQUAL(raw_status(&fx.admin, &sqe, NULL), NVME_SC_SUCCESS);
	memcpy(held, aq->held, sizeof(held));
	CU_ASSERT_EQUAL(held[cid], 1);

	/* The same CID again, while the AER holds it */
	sqe_init(&sqe, NVME_ADMIN_KEEP_ALIVE);
	raw_post(&fx.admin, &sqe, cid);
	CU_ASSERT_FATAL(raw_reap(&fx.admin, &cpl));
	CU_ASSERT_EQUAL(cpl.cqe.cid, cid);
	CU_ASSERT_EQUAL(ST(cpl.cqe), NVME_SC_CMDID_CONFLICT);
	CU_ASSERT_EQUAL(cpl.flags, 0);
	CU_ASSERT_EQUAL(memcmp(held, aq->held, sizeof(held)), 0);
	CU_ASSERT_EQUAL(atomic_load(&aq->cq_tail), fx.admin.head); /* nothing else completed */

	/* The queue goes on answering, and the AER completes on the event */
	sqe_init(&sqe, NVME_ADMIN_KEEP_ALIVE);
	CU_ASSERT_EQUAL(raw_status(&fx.admin, &sqe, NULL), NVME_SC_SUCCESS);
	ernic_target_ns_changed(fx.tgt, 1);
	CU_ASSERT_FATAL(raw_reap(&fx.admin, &cpl));
	CU_ASSERT_EQUAL(cpl.cqe.cid, cid);
	CU_ASSERT_EQUAL(ST(cpl.cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cpl.cqe.dw0, NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_NS_CHANGED, NVME_LOG_CHANGED_NS));
	held[cid] = 0;
	CU_ASSERT_EQUAL(memcmp(held, aq->held, sizeof(held)), 0);
	ernic_target_counters(fx.tgt, &c);
	CU_ASSERT_EQUAL(c.controllers, 1);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_CMDID_CONFLICT], 1);
	fx_down();
}

/* =================================================================== MR budget */

static struct ernic_target *budget_target(uint32_t max_mr, uint32_t queues, bool skip)
{
	struct ernic_target_opts opts = { 0 };
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt = NULL;
	char err[ERNIC_ERRLEN] = "";

	ernic_backend_cfg_init(&cfg);
	cfg.size = NS_BYTES;
	cfg.max_mr = max_mr;
	cfg.queues = queues;
	cfg.queue_size = 128;
	cfg.skip_mr_budget = skip;
	if (ut_target_start(&cfg, &opts, &tgt, err, sizeof(err)))
		fprintf(stderr, "%s\n", err);
	return tgt;
}

static void test_mrs_in_use_after_connect_are_n_queue_size_plus_32(void)
{
	static const uint32_t ns[] = { 1, 2, 4, 7, 15 };
	struct ernic_target *tgt = budget_target(2048, 15, false);
	char err[ERNIC_ERRLEN] = "";

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(ns); i++) {
		struct ernic_host_opts hopts = { .nr_io_queues = ns[i] };
		struct ernic_host_ctrlr *hc = NULL;
		struct ernic_counters c;

		CU_ASSERT_EQUAL_FATAL(ernic_host_connect(ut_port(tgt), &hopts, &hc, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(ernic_host_nr_io_queues(hc), ns[i]);
		CU_ASSERT_EQUAL(ernic_host_qpair_depth(ernic_host_io_qpair(hc, 1)), 128);
		CU_ASSERT_EQUAL(ernic_host_qpair_depth(ernic_host_admin_qpair(hc)), 32);
		ernic_target_counters(tgt, &c);
		CU_ASSERT_EQUAL(c.mr_in_use, ns[i] * 128 + 32);
		CU_ASSERT_EQUAL(c.io_queues, ns[i]);
		CU_ASSERT_EQUAL(c.controllers, 1);
		ernic_host_disconnect(hc);
		ernic_target_counters(tgt, &c);
		CU_ASSERT_EQUAL(c.mr_in_use, 0);
		CU_ASSERT_EQUAL(c.io_queues, 0);
		CU_ASSERT_EQUAL(c.controllers, 0);
	}
	ut_target_stop(tgt);
}

static void test_full_table_of_15_queues_fits_2048_exactly_with_room_for_32(void)
{
	struct ernic_target *tgt = budget_target(2048, 15, false);
	struct ernic_host_ctrlr *hc = NULL;
	struct ernic_counters c;
	char err[ERNIC_ERRLEN] = "";

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	CU_ASSERT_EQUAL_FATAL(ernic_host_connect(ut_port(tgt), NULL, &hc, err, sizeof(err)), 0);
	ernic_target_counters(tgt, &c);
	CU_ASSERT_EQUAL(c.mr_in_use, 15 * 128 + 32);
	CU_ASSERT_EQUAL(c.mr_max, 2048);
	CU_ASSERT_EQUAL(c.mr_high_water, 1952);
	ernic_host_disconnect(hc);
	ut_target_stop(tgt);
}

static void test_seed_1024_table_with_8_queues_fails_at_qid_8_twice(void)
{
	struct ernic_target *tgt = budget_target(1024, 8, true);
	struct ernic_host_ctrlr *hc = NULL;
	struct ernic_counters c;
	char err[ERNIC_ERRLEN];

	CU_ASSERT_PTR_NOT_NULL_FATAL(tgt);
	for (int attempt = 0; attempt < 2; attempt++) {
		memset(err, 0, sizeof(err));
		CU_ASSERT_NOT_EQUAL(ernic_host_connect(ut_port(tgt), NULL, &hc, err, sizeof(err)), 0);
		CU_ASSERT_STRING_EQUAL(err, "failed to initialize MR pool sized 128 for QID 8");
		ernic_target_counters(tgt, &c);
		CU_ASSERT_EQUAL(c.mr_in_use, 0);
		CU_ASSERT_EQUAL(c.controllers, 0);
		CU_ASSERT_EQUAL(c.io_queues, 0);
		/* It got as far as the whole table: 32 + 7 * 128 + 96 */
		CU_ASSERT_EQUAL(c.mr_high_water, 1024);
	}
	/* Nothing leaked: seven queues (928 regions) still fit */
	{
		struct ernic_host_opts hopts = { .nr_io_queues = 7 };

		CU_ASSERT_EQUAL(ernic_host_connect(ut_port(tgt), &hopts, &hc, err, sizeof(err)), 0);
		ernic_target_counters(tgt, &c);
		CU_ASSERT_EQUAL(c.mr_in_use, 7 * 128 + 32);
		ernic_host_disconnect(hc);
	}
	ut_target_stop(tgt);
}

static void test_budget_check_refuses_the_seed_config_up_front(void)
{
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt = NULL;
	char err[ERNIC_ERRLEN] = "";

	ernic_backend_cfg_init(&cfg);
	cfg.size = NS_BYTES;
	cfg.max_mr = 1024;
	cfg.queues = 8;
	CU_ASSERT_NOT_EQUAL(ut_target_start(&cfg, NULL, &tgt, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(tgt);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "queues"));
}

/* ===================================================== RDMA CM private data */

/*
 * The connect request's private data as nvme-rdma sends it is accepted with
 * HSQSIZE + 1 receive buffers; each bad field is rejected with the binding's
 * status for that field, checked in the order of the figure.
 */
static void test_cm_connect_request_bad_fields_get_the_bindings_reject_status(void)
{
	struct ernic_backend_cfg cfg;
	struct nvme_rdma_cm_req ok = { .recfmt = NVME_RDMA_CM_FMT_1_0, .qid = 3, .hrqsize = 128, .hsqsize = 127 };
	struct nvme_rdma_cm_req r;
	uint8_t padded[56] = { 0 };
	uint16_t qid = 0;
	uint32_t nr = 0;

	ernic_backend_cfg_init(&cfg);
	cfg.queue_size = 128;
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_check(&cfg, &ok, sizeof(ok), &qid, &nr), 0);
	CU_ASSERT_EQUAL(qid, 3);
	CU_ASSERT_EQUAL(nr, 128);
	/* RoCE pads REQ private data to 56 bytes */
	memcpy(padded, &ok, sizeof(ok));
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_check(&cfg, padded, sizeof(padded), &qid, &nr), 0);
	/* The admin queue as nvme-rdma opens it: 32 entries */
	r = ok;
	r.qid = 0;
	r.hsqsize = 31;
	r.hrqsize = 32;
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_check(&cfg, &r, sizeof(r), &qid, &nr), 0);
	CU_ASSERT_EQUAL(nr, 32);

	CU_ASSERT_EQUAL(ernic_rdma_cm_req_check(&cfg, NULL, 0, &qid, &nr), NVME_RDMA_CM_INVALID_LEN);
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_check(&cfg, &ok, sizeof(ok) - 1, &qid, &nr), NVME_RDMA_CM_INVALID_LEN);
	r = ok;
	r.recfmt = 1;
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_check(&cfg, &r, sizeof(r), &qid, &nr), NVME_RDMA_CM_INVALID_RECFMT);
	r = ok;
	r.qid = ERNIC_MAX_IO_QUEUES + 1;
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_check(&cfg, &r, sizeof(r), &qid, &nr), NVME_RDMA_CM_INVALID_QID);
	r = ok;
	r.hsqsize = 128; /* 129 entries on a target of 128 */
	r.hrqsize = 129;
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_check(&cfg, &r, sizeof(r), &qid, &nr), NVME_RDMA_CM_INVALID_HSQSIZE);
	r = ok;
	r.qid = 0; /* an admin queue of 33 entries */
	r.hsqsize = 32;
	r.hrqsize = 33;
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_check(&cfg, &r, sizeof(r), &qid, &nr), NVME_RDMA_CM_INVALID_HSQSIZE);
	r = ok;
	r.hsqsize = 0;
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_check(&cfg, &r, sizeof(r), &qid, &nr), NVME_RDMA_CM_INVALID_HSQSIZE);
	r = ok;
	r.hrqsize = 127; /* fewer completions than commands */
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_check(&cfg, &r, sizeof(r), &qid, &nr), NVME_RDMA_CM_INVALID_HRQSIZE);
}

/*
 * The connection cap: below it a good request is admitted; at it a good one
 * is rejected with no resources, while a bad one still hears what is wrong
 * with it (its own status, not the cap's); a host offering no responder
 * resources is refused with invalid IRD; the statuses have words for the log.
 */
static void test_cm_connect_request_at_the_queue_cap_is_no_resources_a_bad_one_keeps_its_status(void)
{
	struct ernic_backend_cfg cfg;
	struct nvme_rdma_cm_req ok = { .recfmt = NVME_RDMA_CM_FMT_1_0, .qid = 1, .hrqsize = 128, .hsqsize = 127 };
	struct nvme_rdma_cm_req bad = ok;
	const uint8_t IRD = 16; /* a soft-RoCE host's responder resources */
	uint16_t qid = 0;
	uint32_t nr = 0;

	ernic_backend_cfg_init(&cfg);
	cfg.queue_size = 128;
	bad.hrqsize = 1;
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_admit(&cfg, &ok, sizeof(ok), IRD, 0, 4, &qid, &nr), 0);
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_admit(&cfg, &ok, sizeof(ok), IRD, 3, 4, &qid, &nr), 0);
	CU_ASSERT_EQUAL(qid, 1);
	CU_ASSERT_EQUAL(nr, 128);
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_admit(&cfg, &ok, sizeof(ok), IRD, 4, 4, &qid, &nr), NVME_RDMA_CM_NO_RSC);
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_admit(&cfg, &ok, sizeof(ok), IRD, 5, 4, &qid, &nr), NVME_RDMA_CM_NO_RSC);
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_admit(&cfg, &bad, sizeof(bad), IRD, 4, 4, &qid, &nr),
			NVME_RDMA_CM_INVALID_HRQSIZE);
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_admit(&cfg, &bad, sizeof(bad), IRD, 0, 4, &qid, &nr),
			NVME_RDMA_CM_INVALID_HRQSIZE);
	/* No responder resources: the controller could read no data, not even an admin queue's Connect. */
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_admit(&cfg, &ok, sizeof(ok), 0, 0, 4, &qid, &nr), NVME_RDMA_CM_INVALID_IRD);
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_admit(&cfg, &ok, sizeof(ok), 1, 0, 4, &qid, &nr), 0);
	CU_ASSERT_EQUAL(ernic_rdma_cm_req_admit(&cfg, &bad, sizeof(bad), 0, 0, 4, &qid, &nr),
			NVME_RDMA_CM_INVALID_HRQSIZE);
	CU_ASSERT_STRING_EQUAL(ernic_rdma_cm_status_str(NVME_RDMA_CM_INVALID_IRD), "invalid IRD");
	CU_ASSERT_STRING_EQUAL(ernic_rdma_cm_status_str(NVME_RDMA_CM_NO_RSC), "no resources");
	CU_ASSERT_STRING_EQUAL(ernic_rdma_cm_status_str(NVME_RDMA_CM_INVALID_HRQSIZE), "invalid HRQSIZE");
	CU_ASSERT_STRING_EQUAL(ernic_rdma_cm_status_str(0), "unknown status");
	CU_ASSERT_STRING_EQUAL(ernic_rdma_cm_status_str(0xffff), "unknown status");
}

/* ============================================ the cases shared with the real engine */

/*
 * One case of keyed_sgl_cases.h on the emulated engine: the region is the
 * middle 4 KiB of the case's host buffer. Returns the outcome, or -1 for a
 * status that is neither (reported by the caller); *@clean says whether the
 * bytes are where the outcome says (moved: the block arrived; refused:
 * both sides untouched).
 */
static int ksgl_run_emulated(const struct ksgl_case *kc, bool *clean, uint16_t *status)
{
	uint8_t *host = kc->dir == KSGL_HOST_WRITE ? fx.buf[0] : fx.buf[1];
	uintptr_t base = (uintptr_t)host + KSGL_BLOCK;
	uint8_t *block = fx.tgt->ns[0].ram + KSGL_SLBA * KSGL_BLOCK;
	uint32_t rkey, key;
	uint64_t addr = base;
	struct nvme_sgl_desc sgl;
	uint16_t st;

	rkey = reg(1, (void *)base, KSGL_BLOCK, RW_ACCESS);
	key = rkey;
	switch (kc->fault) {
	case KSGL_NONE:
		break;
	case KSGL_WRONG_KEY:
		key = ERNIC_RKEY(ERNIC_RKEY_INDEX(rkey), ERNIC_RKEY_KEY(rkey) + 1);
		break;
	case KSGL_BEYOND_REGION:
		addr = base + 512;
		break;
	case KSGL_INVALIDATED:
		CU_ASSERT_EQUAL(ernic_mr_invalidate(fx.mr, fx.io.qp->pd, rkey), 0);
		break;
	case KSGL_REMOTE_INVALIDATE:
		nvme_keyed_sgl_set(&sgl, base, KSGL_BLOCK, rkey, NVME_SGL_SUBTYPE_INVALIDATE_KEY);
		st = kc->dir == KSGL_HOST_WRITE ? write_with(&sgl, NULL) : read_with(&sgl, NULL);
		CU_ASSERT_EQUAL(st, NVME_SC_SUCCESS);
		break;
	}
	/* Both sides carry their canaries from here: anything that moves shows. */
	bufs_prepare();
	memset(fx.tgt->ns[0].ram, CANARY_NS, NS_BYTES);
	nvme_keyed_sgl_set(&sgl, addr, KSGL_BLOCK, key, NVME_SGL_SUBTYPE_ADDRESS);
	st = kc->dir == KSGL_HOST_WRITE ? write_with(&sgl, NULL) : read_with(&sgl, NULL);
	unreg(rkey);
	*status = st;
	if (st == NVME_SC_SUCCESS) {
		*clean = kc->dir == KSGL_HOST_WRITE ? all_bytes(block, KSGL_BLOCK, 0x77)
						     : all_bytes((uint8_t *)base, KSGL_BLOCK, CANARY_NS);
		return KSGL_MOVED;
	}
	*clean = ns_untouched() && host_untouched();
	return st == NVME_SC_DATA_XFER_ERROR ? KSGL_REFUSED : -1;
}

/*
 * The emulated half of the engine comparison: every case of the table the
 * lane's nvmf_rdma_sgl runs against ernicd over soft-RoCE answers as the
 * table says, here as a status (Data Transfer Error for a refusal).
 */
static void test_keyed_sgl_cases_shared_with_the_real_engine_answer_as_the_table_says(void)
{
	fx_up();
	for (size_t i = 0; i < KSGL_NR_CASES; i++) {
		const struct ksgl_case *kc = &ksgl_cases[i];
		bool clean = false;
		uint16_t status = 0;
		int got = ksgl_run_emulated(kc, &clean, &status);

		if (got != (int)kc->want || !clean)
			fprintf(stderr, "keyed SGL case '%s': %s (status 0x%x), bytes %s; the table says %s\n", kc->name,
				got < 0 ? "neither" : ksgl_outcome_str(got), status, clean ? "as expected" : "wrong",
				ksgl_outcome_str(kc->want));
		CU_ASSERT_EQUAL(got, (int)kc->want);
		CU_ASSERT_TRUE(clean);
	}
	fx_down();
}

#ifdef ERNIC_HAVE_RDMA
/*
 * The NVMe/RDMA port moves each command's data through a slot buffer of
 * ERNIC_MAX_XFER: a target whose MDTS promises more, or no limit, is refused
 * at port creation in one line naming mdts, rather than failing every larger
 * transfer a host sends within that MDTS with SGL Data Block Length Invalid.
 */
static void test_rdma_port_refuses_an_mdts_its_slot_buffers_cannot_serve(void)
{
	static const uint32_t bad[] = { 0, ERNIC_MDTS + 1, 8 };
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt;
	struct ernic_rdma_port *port = NULL;
	char err[ERNIC_ERRLEN];
	int rc;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[64];

		ernic_backend_cfg_init(&cfg);
		cfg.size = 1u << 20;
		cfg.mdts = bad[i];
		CU_ASSERT_EQUAL_FATAL(ernic_target_create(&cfg, NULL, &tgt, err, sizeof(err)), 0);
		err[0] = '\0';
		CU_ASSERT_EQUAL(ernic_rdma_port_create(tgt, NULL, &port, err, sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want), "(got %u)", bad[i]);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "mdts must be 1..5"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
		ernic_target_destroy(tgt);
	}
	/* At the default the MDTS check passes: what follows depends on the machine's RDMA CM. */
	ernic_backend_cfg_init(&cfg);
	cfg.size = 1u << 20;
	CU_ASSERT_EQUAL_FATAL(ernic_target_create(&cfg, NULL, &tgt, err, sizeof(err)), 0);
	err[0] = '\0';
	rc = ernic_rdma_port_create(tgt, NULL, &port, err, sizeof(err));
	CU_ASSERT_PTR_NULL(strstr(err, "mdts"));
	if (rc == 0)
		ernic_rdma_port_destroy(port);
	ernic_target_destroy(tgt);
}
#define RDMA_PORT_CASES UT_CASE(test_rdma_port_refuses_an_mdts_its_slot_buffers_cannot_serve),
#else
#define RDMA_PORT_CASES
#endif

UT_MAIN("rdma", RDMA_PORT_CASES UT_CASE(test_correct_key_moves_data_both_ways),
	UT_CASE(test_a_connect_naming_another_qid_than_its_queue_pair_is_refused),
	UT_CASE(test_wrong_key_is_data_transfer_error_and_nothing_moves),
	UT_CASE(test_stale_key_after_invalidate_is_data_transfer_error),
	UT_CASE(test_destroyed_region_key_is_data_transfer_error),
	UT_CASE(test_address_outside_region_is_data_transfer_error),
	UT_CASE(test_missing_access_right_is_data_transfer_error),
	UT_CASE(test_keyed_length_shorter_than_transfer_moves_nothing),
	UT_CASE(test_identify_with_wrong_key_leaves_buffer_alone),
	UT_CASE(test_connect_with_wrong_key_creates_no_controller), UT_CASE(test_sgl_type_not_keyed_is_sgl_invalid_type),
	UT_CASE(test_keyed_subtype_not_0_or_f_is_sgl_invalid_subtype),
	UT_CASE(test_subtype_f_invalidates_rkey_and_flags_completion), UT_CASE(test_subtype_0_leaves_rkey_valid),
	UT_CASE(test_subtype_f_with_wrong_key_invalidates_nothing),
	UT_CASE(test_rkey_of_another_queue_is_data_transfer_error_and_nothing_moves),
	UT_CASE(test_send_with_invalidate_of_another_queues_rkey_invalidates_nothing),
	UT_CASE(test_host_submit_completes_with_invalidate_and_leaks_no_region),
	UT_CASE(test_cid_of_held_aer_reused_is_cid_conflict_and_aer_survives),
	UT_CASE(test_mrs_in_use_after_connect_are_n_queue_size_plus_32),
	UT_CASE(test_full_table_of_15_queues_fits_2048_exactly_with_room_for_32),
	UT_CASE(test_seed_1024_table_with_8_queues_fails_at_qid_8_twice),
	UT_CASE(test_budget_check_refuses_the_seed_config_up_front),
	UT_CASE(test_keyed_sgl_cases_shared_with_the_real_engine_answer_as_the_table_says),
	UT_CASE(test_cm_connect_request_bad_fields_get_the_bindings_reject_status),
	UT_CASE(test_cm_connect_request_at_the_queue_cap_is_no_resources_a_bad_one_keeps_its_status))
