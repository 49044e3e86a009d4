/* SPDX-License-Identifier: MIT */
/*
 * ctrlr_ut.c - the controller core alone, SPDK style.
 *
 * A stub transport (map_data hands out one test buffer after checking the
 * length the core asks for against the SGL and the buffer; complete records
 * the CQE) lets every test build a request, call ernic_req_exec() directly
 * and look at the completion. The target runs with no poller threads, so
 * nothing but the test touches a queue.
 *
 * Covers the Fabrics commands (Connect for admin and I/O queues with every
 * invalid-parameter case, Property Get/Set and the CC/CSTS state machine,
 * Disconnect), the admin command set (Identify, Get Log Page, Set/Get
 * Features, Keep Alive, AER), the discovery controller and the controller's
 * life cycle.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "target.h"
#include "ut.h"
#include "ut_fixture.h"
#include "ut_remover.h"

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
#define HOSTNQN2 "nqn.2014-08.org.nvmexpress:uuid:99999999-2222-3333-4444-555555555555"
#define CC_ENABLE (NVME_CC_EN | NVME_CC_NVM_ENTRY_SIZES)
#define STUB_BUF (256u * 1024)
#define STUB_REQS 16
#define STUB_CPLS 64

/* ------------------------------------------------------------ stub transport */

struct stub_q {
	struct ernic_sq sq;
	bool inited;
	_Alignas(64) uint8_t buf[STUB_BUF];
	unsigned map_calls;
	uint32_t map_len;
	enum nvme_data_dir map_dir;
	unsigned nr_cpl;
	struct nvme_cqe cpl[STUB_CPLS];
	struct ernic_req reqs[STUB_REQS]; /* requests that may be held (AERs) */
	unsigned next_req;
};

static uint16_t stub_map_data(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf)
{
	struct stub_q *q = req->sq->transport;

	q->map_calls++;
	q->map_len = len;
	q->map_dir = dir;
	/* The core must never ask for more than the SGL describes or the buffer holds. */
	if (len > ernic_req_sgl_len(req) || len > STUB_BUF)
		return NVME_SC_SGL_INVALID_DATA_LEN;
	*buf = q->buf;
	return NVME_SC_SUCCESS;
}

static void stub_complete(struct ernic_req *req)
{
	struct stub_q *q = req->sq->transport;

	if (q->nr_cpl < STUB_CPLS)
		q->cpl[q->nr_cpl] = req->cqe;
	q->nr_cpl++;
}

static const struct ernic_transport_ops stub_ops = {
	.name = "stub",
	.trtype = NVMF_TRTYPE_RDMA,
	.map_data = stub_map_data,
	.complete = stub_complete,
	.in_capsule_data_size = 0,
};

/* ------------------------------------------------------------------ fixture */

#define FX_QUEUES 8

static struct {
	struct ernic_target *tgt;
	struct stub_q *q[FX_QUEUES]; /* q[0]: an admin queue; others: whatever a test makes them */
	uint16_t cntlid;
} fx;

static void cfg_small(struct ernic_backend_cfg *cfg)
{
	ernic_backend_cfg_init(cfg);
	cfg->size = 4ull << 20;
	cfg->queues = 4;
	cfg->queue_size = 64;
}

static struct ernic_target *tgt_new_cfg(const struct ernic_backend_cfg *cfg, const char *const *allow)
{
	struct ernic_target_opts opts = { .allow_hosts = allow };
	char err[ERNIC_ERRLEN] = "";
	struct ernic_target *tgt = NULL;
	int rc = ernic_target_create(cfg, &opts, &tgt, err, sizeof(err));

	if (rc)
		fprintf(stderr, "target create: %s\n", err);
	return tgt;
}

static struct stub_q *q_new(void)
{
	struct stub_q *q = aligned_alloc(64, sizeof(*q));

	if (!q)
		abort();
	memset(q, 0, sizeof(*q));
	return q;
}

/* Create the target and the stub queues (not connected). */
static void fx_init_cfg(const struct ernic_backend_cfg *cfg, const char *const *allow)
{
	memset(&fx, 0, sizeof(fx));
	fx.tgt = tgt_new_cfg(cfg, allow);
	if (!fx.tgt)
		abort();
	for (int i = 0; i < FX_QUEUES; i++) {
		fx.q[i] = q_new();
		ernic_sq_init(&fx.q[i]->sq, fx.tgt, &stub_ops, fx.q[i]);
		fx.q[i]->inited = true;
	}
}

static void fx_init(void)
{
	struct ernic_backend_cfg cfg;

	cfg_small(&cfg);
	fx_init_cfg(&cfg, NULL);
}

static void q_destroy(struct stub_q *q)
{
	if (q && q->inited) {
		ernic_sq_destroy(&q->sq);
		q->inited = false;
	}
}

/* A fresh, unconnected queue in place of @q, as a transport makes for a new connection. */
static void q_reinit(struct stub_q *q)
{
	q_destroy(q);
	ernic_sq_init(&q->sq, fx.tgt, &stub_ops, q);
	q->inited = true;
}

static void fx_fini(void)
{
	/* I/O queues first, as a host tears down. */
	for (int i = FX_QUEUES - 1; i >= 0; i--) {
		q_destroy(fx.q[i]);
		free(fx.q[i]);
	}
	ernic_target_destroy(fx.tgt);
	memset(&fx, 0, sizeof(fx));
}

static struct ernic_counters *counters(void)
{
	static struct ernic_counters c;

	ernic_target_counters(fx.tgt, &c);
	return &c;
}

/* ------------------------------------------------------------- commands */

static void sqe_init(struct nvme_sqe *sqe, uint8_t opc, uint16_t cid)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opc = opc;
	sqe->flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	sqe->cid = cid;
}

/*
 * Run one command that must complete now: a keyed SGL of @sgl_len bytes over
 * the queue's buffer. Returns the 11-bit status.
 */
static enum ernic_exec run_exec(struct stub_q *q, const struct nvme_sqe *sqe, uint32_t sgl_len, struct nvme_cqe *out)
{
	struct ernic_req req;
	enum ernic_exec ex;

	memset(&req, 0, sizeof(req));
	req.sqe = *sqe;
	req.sq = &q->sq;
	if (sgl_len || NVME_SGL_ID_TYPE(sqe->dptr.id) == 0)
		nvme_keyed_sgl_set(&req.sqe.dptr, (uintptr_t)q->buf, sgl_len, 0x100, NVME_SGL_SUBTYPE_ADDRESS);
	ex = ernic_req_exec(&req);
	CU_ASSERT_EQUAL(req.cqe.cid, sqe->cid);
	*out = req.cqe;
	return ex;
}

static uint16_t run(struct stub_q *q, const struct nvme_sqe *sqe, uint32_t sgl_len, struct nvme_cqe *out)
{
	struct nvme_cqe cqe;

	CU_ASSERT_EQUAL(run_exec(q, sqe, sgl_len, &cqe), ERNIC_EXEC_DONE);
	if (out)
		*out = cqe;
	return ST(cqe);
}

static void connect_data(struct stub_q *q, uint16_t cntlid, const char *subnqn, const char *hostnqn)
{
	struct nvmf_connect_data *d = (struct nvmf_connect_data *)q->buf;

	memset(d, 0, sizeof(*d));
	for (int i = 0; i < 16; i++)
		d->hostid[i] = (uint8_t)(0xA0 + i);
	d->cntlid = cntlid;
	snprintf(d->subnqn, sizeof(d->subnqn), "%s", subnqn);
	snprintf(d->hostnqn, sizeof(d->hostnqn), "%s", hostnqn);
}

static void connect_cmd(struct nvme_sqe *sqe, uint16_t qid, uint16_t sqsize, uint32_t kato)
{
	struct nvmf_connect_cmd *cmd = (struct nvmf_connect_cmd *)sqe;

	sqe_init(sqe, NVME_FABRICS_COMMAND, (uint16_t)(0x40 + qid));
	cmd->fctype = NVMF_FCTYPE_CONNECT;
	cmd->qid = qid;
	cmd->sqsize = sqsize;
	cmd->kato = kato;
}

static uint16_t connect_full(struct stub_q *q, uint16_t qid, uint16_t sqsize, uint16_t cntlid, const char *subnqn,
			     const char *hostnqn, uint32_t kato, struct nvme_cqe *cqe)
{
	struct nvme_sqe sqe;

	connect_data(q, cntlid, subnqn, hostnqn);
	connect_cmd(&sqe, qid, sqsize, kato);
	return run(q, &sqe, sizeof(struct nvmf_connect_data), cqe);
}

static uint16_t connect_admin(struct stub_q *q, uint32_t kato, struct nvme_cqe *cqe)
{
	return connect_full(q, 0, 31, NVMF_CNTLID_DYNAMIC, ernic_target_subnqn(fx.tgt), HOSTNQN, kato, cqe);
}

static uint16_t connect_io(struct stub_q *q, uint16_t qid, uint16_t cntlid, struct nvme_cqe *cqe)
{
	return connect_full(q, qid, 31, cntlid, ernic_target_subnqn(fx.tgt), HOSTNQN, 0, cqe);
}

static uint16_t prop_get(struct stub_q *q, uint32_t ofst, bool size8, uint64_t *value)
{
	struct nvme_sqe sqe;
	struct nvmf_property_cmd *cmd = (struct nvmf_property_cmd *)&sqe;
	struct nvme_cqe cqe;
	uint16_t st;

	sqe_init(&sqe, NVME_FABRICS_COMMAND, 7);
	cmd->fctype = NVMF_FCTYPE_PROPERTY_GET;
	cmd->attrib = size8 ? 1 : 0;
	cmd->ofst = ofst;
	st = run(q, &sqe, 0, &cqe);
	if (value)
		*value = (uint64_t)cqe.dw0 | (uint64_t)cqe.dw1 << 32;
	return st;
}

static uint16_t prop_set(struct stub_q *q, uint32_t ofst, uint8_t attrib, uint64_t value)
{
	struct nvme_sqe sqe;
	struct nvmf_property_cmd *cmd = (struct nvmf_property_cmd *)&sqe;

	sqe_init(&sqe, NVME_FABRICS_COMMAND, 8);
	cmd->fctype = NVMF_FCTYPE_PROPERTY_SET;
	cmd->attrib = attrib;
	cmd->ofst = ofst;
	cmd->value = value;
	return run(q, &sqe, 0, NULL);
}

static uint32_t csts(struct stub_q *q)
{
	uint64_t v = 0;

	CU_ASSERT_EQUAL(prop_get(q, NVME_REG_CSTS, false, &v), NVME_SC_SUCCESS);
	return (uint32_t)v;
}

/* Fixture with q[0] connected as the admin queue and the controller enabled. */
static void fx_up_cfg(const struct ernic_backend_cfg *cfg)
{
	struct nvme_cqe cqe;

	fx_init_cfg(cfg, NULL);
	CU_ASSERT_EQUAL_FATAL(connect_admin(fx.q[0], 0, &cqe), NVME_SC_SUCCESS);
	fx.cntlid = (uint16_t)cqe.dw0;
	CU_ASSERT_EQUAL_FATAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(csts(fx.q[0]) & NVME_CSTS_RDY, NVME_CSTS_RDY);
}

static void fx_up(void)
{
	struct ernic_backend_cfg cfg;

	cfg_small(&cfg);
	fx_up_cfg(&cfg);
}

static uint16_t identify(struct stub_q *q, uint8_t cns, uint32_t nsid, uint16_t cid)
{
	struct nvme_sqe sqe;

	sqe_init(&sqe, NVME_ADMIN_IDENTIFY, cid);
	sqe.nsid = nsid;
	sqe.cdw10 = cns;
	memset(q->buf, 0xEE, 4096);
	return run(q, &sqe, 4096, NULL);
}

static uint16_t get_log_cdw14(struct stub_q *q, uint8_t lid, uint32_t nsid, uint32_t len, uint64_t lpo, bool rae,
			      uint32_t cdw14)
{
	struct nvme_sqe sqe;
	uint32_t numd = len / 4 - 1;

	sqe_init(&sqe, NVME_ADMIN_GET_LOG_PAGE, 0x21);
	sqe.nsid = nsid;
	sqe.cdw10 = lid | (rae ? 1u << 15 : 0) | (numd & 0xFFFF) << 16;
	sqe.cdw11 = numd >> 16;
	sqe.cdw12 = (uint32_t)lpo;
	sqe.cdw13 = (uint32_t)(lpo >> 32);
	sqe.cdw14 = cdw14;
	memset(q->buf, 0xEE, len);
	return run(q, &sqe, len, NULL);
}

static uint16_t get_log(struct stub_q *q, uint8_t lid, uint32_t nsid, uint32_t len, uint64_t lpo, bool rae)
{
	return get_log_cdw14(q, lid, nsid, len, lpo, rae, 0);
}

static uint16_t set_feat(struct stub_q *q, uint8_t fid, uint32_t cdw11, bool save, struct nvme_cqe *cqe)
{
	struct nvme_sqe sqe;

	sqe_init(&sqe, NVME_ADMIN_SET_FEATURES, 0x31);
	sqe.cdw10 = fid | (save ? 1u << 31 : 0);
	sqe.cdw11 = cdw11;
	return run(q, &sqe, 0, cqe);
}

static uint16_t get_feat_cdw11(struct stub_q *q, uint8_t fid, uint32_t sel, uint32_t cdw11, uint32_t *dw0)
{
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	uint16_t st;

	sqe_init(&sqe, NVME_ADMIN_GET_FEATURES, 0x32);
	sqe.cdw10 = fid | sel << 8;
	sqe.cdw11 = cdw11;
	st = run(q, &sqe, 0, &cqe);
	if (dw0)
		*dw0 = cqe.dw0;
	return st;
}

static uint16_t get_feat(struct stub_q *q, uint8_t fid, uint32_t sel, uint32_t *dw0)
{
	return get_feat_cdw11(q, fid, sel, 0, dw0);
}

static uint16_t simple(struct stub_q *q, uint8_t opc, uint16_t cid)
{
	struct nvme_sqe sqe;

	sqe_init(&sqe, opc, cid);
	return run(q, &sqe, 0, NULL);
}

static enum ernic_exec rw_exec(struct stub_q *q, uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb,
			      uint32_t sgl_len, struct nvme_cqe *out)
{
	struct nvme_sqe sqe;

	ernic_host_rw_sqe(&sqe, opc, nsid, slba, nlb);
	sqe.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	sqe.cid = 0x77;
	return run_exec(q, &sqe, sgl_len, out);
}

static uint16_t rw(struct stub_q *q, uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb, uint32_t sgl_len)
{
	struct nvme_cqe cqe;

	CU_ASSERT_EQUAL(rw_exec(q, opc, nsid, slba, nlb, sgl_len, &cqe), ERNIC_EXEC_DONE);
	return ST(cqe);
}

/* Submit an AER into one of the queue's persistent requests. */
static enum ernic_exec aer_submit(struct stub_q *q, uint16_t cid, struct ernic_req **out)
{
	struct ernic_req *req = &q->reqs[q->next_req++ % STUB_REQS];

	memset(req, 0, sizeof(*req));
	sqe_init(&req->sqe, NVME_ADMIN_ASYNC_EVENT, cid);
	req->sq = &q->sq;
	if (out)
		*out = req;
	return ernic_req_exec(req);
}

static uint32_t disc_dw0(uint32_t iattr, uint32_t ipo)
{
	return NVMF_CONNECT_INVALID_PARAM_DW0(iattr, ipo);
}

/* ================================================================ Connect */

static void test_connect_admin_returns_dynamic_cntlid_in_dw0(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, &cqe), NVME_SC_SUCCESS);
	/* A fresh target's first dynamic controller is CNTLID 1; never 0 or FFFFh. */
	CU_ASSERT_EQUAL(cqe.dw0, 1);
	CU_ASSERT_EQUAL(cqe.status, 0);
	CU_ASSERT_EQUAL(cqe.sqid, 0);
	CU_ASSERT_EQUAL(fx.q[0]->map_dir, NVME_DATA_HOST_TO_CTRL);
	CU_ASSERT_EQUAL(fx.q[0]->map_len, 1024);
	CU_ASSERT_EQUAL(counters()->controllers, 1);
	CU_ASSERT_EQUAL(counters()->bytes_written, 1024);
	fx_fini();
}

/*
 * A Connect whose CATTR disables SQ flow control (the discovery entries offer
 * it) is answered with SQHD FFFFh, and the queue's later CQEs leave SQHD 0;
 * without the bit SQHD counts the commands fetched, wrapping at the size.
 */
static void test_connect_disabling_sq_flow_control_stops_sqhd_reports(void)
{
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	struct nvmf_property_cmd *prop = (struct nvmf_property_cmd *)&sqe;

	fx_init();
	connect_data(fx.q[0], NVMF_CNTLID_DYNAMIC, ernic_target_subnqn(fx.tgt), HOSTNQN);
	connect_cmd(&sqe, 0, 31, 0);
	((struct nvmf_connect_cmd *)&sqe)->cattr = NVMF_CONNECT_CATTR_DISABLE_SQFLOW;
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, sizeof(struct nvmf_connect_data), &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cqe.sqhd, NVMF_SQHD_FLOW_DISABLED);
	sqe_init(&sqe, NVME_FABRICS_COMMAND, 7);
	prop->fctype = NVMF_FCTYPE_PROPERTY_GET;
	prop->ofst = NVME_REG_CSTS;
	for (int i = 0; i < 40; i++) {
		CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 0, &cqe), NVME_SC_SUCCESS);
		CU_ASSERT_EQUAL(cqe.sqhd, 0);
	}

	/* Fetched before the queue had a size, the Connect itself reports head 0. */
	CU_ASSERT_EQUAL(connect_admin(fx.q[1], 0, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cqe.sqhd, 0);
	for (int i = 1; i < 40; i++) {
		CU_ASSERT_EQUAL(run(fx.q[1], &sqe, 0, &cqe), NVME_SC_SUCCESS);
		CU_ASSERT_EQUAL(cqe.sqhd, i % 32);
	}
	fx_fini();
}

static void test_two_connects_get_different_cntlids(void)
{
	struct nvme_cqe a, b;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, &a), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_admin(fx.q[1], 0, &b), NVME_SC_SUCCESS);
	CU_ASSERT_NOT_EQUAL(a.dw0, b.dw0);
	CU_ASSERT(b.dw0 >= 1 && b.dw0 <= 0xFFEF);
	CU_ASSERT_EQUAL(counters()->controllers, 2);
	fx_fini();
}

static void test_connect_subnqn_mismatch_is_invalid_param_iattr1_ipo256(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, NVMF_CNTLID_DYNAMIC, "nqn.2026-11.io.ernic:other", HOSTNQN, 0,
				     &cqe),
			NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(1, 256));
	CU_ASSERT_EQUAL(cqe.dw0, 0x00010100u);
	CU_ASSERT(nvme_cqe_dnr(&cqe));
	CU_ASSERT_EQUAL(counters()->controllers, 0);
	CU_ASSERT_EQUAL(counters()->errors[NVME_SC_CONNECT_INVALID_PARAM], 1);
	fx_fini();
}

static void test_connect_admin_with_static_cntlid_is_invalid_param_ipo16(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, 1, ernic_target_subnqn(fx.tgt), HOSTNQN, 0, &cqe),
			NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_DATA, 16));
	CU_ASSERT_EQUAL(counters()->controllers, 0);
	/* The queue is still unbound: a correct Connect succeeds afterwards. */
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, &cqe), NVME_SC_SUCCESS);
	fx_fini();
}

static void test_connect_sqsize_zero_is_invalid_param_ipo44(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 0, NVMF_CNTLID_DYNAMIC, ernic_target_subnqn(fx.tgt), HOSTNQN, 0,
				     &cqe),
			NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_CMD, 44));
	CU_ASSERT_EQUAL(cqe.dw0, 44u);
	CU_ASSERT_EQUAL(counters()->controllers, 0);
	fx_fini();
}

static void test_connect_recfmt_nonzero_is_incompatible_format(void)
{
	struct nvme_sqe sqe;

	fx_init();
	connect_data(fx.q[0], NVMF_CNTLID_DYNAMIC, ernic_target_subnqn(fx.tgt), HOSTNQN);
	connect_cmd(&sqe, 0, 31, 0);
	((struct nvmf_connect_cmd *)&sqe)->recfmt = 1;
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 1024, NULL), NVME_SC_CONNECT_INCOMPATIBLE_FORMAT);
	CU_ASSERT_EQUAL(counters()->controllers, 0);
	fx_fini();
}

static void test_connect_host_not_on_allow_list_is_invalid_host(void)
{
	static const char *const allow[] = { HOSTNQN2, NULL };
	struct ernic_backend_cfg cfg;
	struct nvme_cqe cqe;

	cfg_small(&cfg);
	fx_init_cfg(&cfg, allow);
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, &cqe), NVME_SC_CONNECT_INVALID_HOST);
	CU_ASSERT_EQUAL(counters()->controllers, 0);
	/* The listed host gets in. */
	CU_ASSERT_EQUAL(connect_full(fx.q[1], 0, 31, NVMF_CNTLID_DYNAMIC, ernic_target_subnqn(fx.tgt), HOSTNQN2, 0,
				     &cqe),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(counters()->controllers, 1);
	fx_fini();
}

static void test_connect_sgl_length_not_1024_is_sgl_invalid_data_len(void)
{
	static const uint32_t lens[] = { 0, 512, 1023, 1025, 2048 };
	struct nvme_sqe sqe;

	fx_init();
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(lens); i++) {
		connect_data(fx.q[0], NVMF_CNTLID_DYNAMIC, ernic_target_subnqn(fx.tgt), HOSTNQN);
		connect_cmd(&sqe, 0, 31, 0);
		nvme_keyed_sgl_set(&sqe.dptr, (uintptr_t)fx.q[0]->buf, lens[i], 0x100, 0);
		CU_ASSERT_EQUAL(run(fx.q[0], &sqe, lens[i], NULL), NVME_SC_SGL_INVALID_DATA_LEN);
	}
	CU_ASSERT_EQUAL(counters()->controllers, 0);
	fx_fini();
}

static void test_second_connect_on_connected_queue_is_cmd_seq_error(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, &cqe), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT_EQUAL(counters()->controllers, 1);
	fx_fini();
}

static void test_connect_empty_hostnqn_with_allow_list_is_invalid_param_ipo512(void)
{
	static const char *const allow[] = { HOSTNQN2, NULL };
	struct ernic_backend_cfg cfg;
	struct nvme_cqe cqe;

	cfg_small(&cfg);
	fx_init_cfg(&cfg, allow);
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, NVMF_CNTLID_DYNAMIC, ernic_target_subnqn(fx.tgt), "", 0, &cqe),
			NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(1, 512));
	fx_fini();
}

static void test_connect_empty_hostnqn_without_allow_list_is_accepted(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, NVMF_CNTLID_DYNAMIC, ernic_target_subnqn(fx.tgt), "", 0, &cqe),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(counters()->controllers, 1);
	fx_fini();
}

static void test_io_connect_unknown_cntlid_is_invalid_param_ipo16(void)
{
	struct nvme_cqe cqe;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, (uint16_t)(fx.cntlid + 7), &cqe), NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_DATA, 16));
	/* A known CNTLID from another host NQN is unknown too. */
	CU_ASSERT_EQUAL(connect_full(fx.q[1], 1, 31, fx.cntlid, ernic_target_subnqn(fx.tgt), HOSTNQN2, 0, &cqe),
			NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_DATA, 16));
	CU_ASSERT_EQUAL(counters()->io_queues, 0);
	fx_fini();
}

static void test_io_connect_qid_beyond_granted_queues_is_invalid_param_ipo42(void)
{
	struct nvme_cqe cqe;

	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, 1u | 1u << 16, false, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_io(fx.q[3], 3, fx.cntlid, &cqe), NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_CMD, 42));
	CU_ASSERT_EQUAL(connect_io(fx.q[2], 2, fx.cntlid, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cqe.dw0, fx.cntlid);
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(counters()->io_queues, 2);
	fx_fini();
}

static void test_io_connect_sqsize_over_mqes_is_invalid_param_ipo44(void)
{
	struct nvme_cqe cqe;

	fx_up(); /* queue_size 64: MQES 63 */
	CU_ASSERT_EQUAL(connect_full(fx.q[1], 1, 64, fx.cntlid, ernic_target_subnqn(fx.tgt), HOSTNQN, 0, &cqe),
			NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_CMD, 44));
	CU_ASSERT_EQUAL(connect_full(fx.q[1], 1, 0, fx.cntlid, ernic_target_subnqn(fx.tgt), HOSTNQN, 0, &cqe),
			NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_CMD, 44));
	CU_ASSERT_EQUAL(connect_full(fx.q[1], 1, 63, fx.cntlid, ernic_target_subnqn(fx.tgt), HOSTNQN, 0, &cqe),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fx.q[1]->sq.size, 64);
	fx_fini();
}

static void test_io_connect_before_cc_en_is_cmd_seq_error(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, (uint16_t)cqe.dw0, &cqe), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT_EQUAL(counters()->io_queues, 0);
	fx_fini();
}

/* As nvmet (nvmet_install_queue()): a QID the controller already has is Command Sequence Error, with DNR. */
static void test_io_connect_same_qid_twice_is_cmd_seq_error(void)
{
	struct nvme_cqe cqe;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_io(fx.q[2], 1, fx.cntlid, &cqe), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT((cqe.status & NVME_CQE_STATUS_DNR) != 0);
	CU_ASSERT_EQUAL(counters()->io_queues, 1);
	CU_ASSERT_FALSE(fx.q[2]->sq.connected);
	fx_fini();
}

/*
 * An I/O Connect naming the discovery NQN, with the CNTLID and host NQN of an
 * enabled NVM controller, is Connect Invalid Parameters at SUBNQN (it joined
 * that controller, and the queue's Writes succeeded).
 */
static void test_io_connect_naming_the_discovery_nqn_is_invalid_param_ipo256(void)
{
	struct nvme_cqe cqe;

	fx_up();
	CU_ASSERT_EQUAL(connect_full(fx.q[1], 1, 31, fx.cntlid, NVMF_DISC_NQN, HOSTNQN, 0, &cqe),
			NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_DATA, 256));
	CU_ASSERT_FALSE(fx.q[1]->sq.connected);
	CU_ASSERT_EQUAL(counters()->io_queues, 0);
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, &cqe), NVME_SC_SUCCESS);
	fx_fini();
}

/* ============================================================= Properties */

static void test_property_get_cap_mqes_mpsmin_and_8_byte_only(void)
{
	uint64_t cap = 0;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_get(fx.q[0], NVME_REG_CAP, true, &cap), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(NVME_CAP_MQES(cap), 63); /* queue_size 64 */
	CU_ASSERT_EQUAL((cap >> NVME_CAP_MPSMIN_SHIFT) & 0xF, 0); /* 4 KiB */
	CU_ASSERT_EQUAL((cap >> NVME_CAP_MPSMAX_SHIFT) & 0xF, 0);
	CU_ASSERT((cap & NVME_CAP_CSS_NVM) != 0);
	CU_ASSERT((cap & NVME_CAP_CQR) != 0);
	CU_ASSERT_NOT_EQUAL((cap >> NVME_CAP_TO_SHIFT) & 0xFF, 0);
	/* CAP is 8 bytes: a 4-byte read of it is refused, as is a size code over 1. */
	CU_ASSERT_EQUAL(prop_get(fx.q[0], NVME_REG_CAP, false, NULL), NVME_SC_INVALID_FIELD);
	{
		struct nvme_sqe sqe;
		struct nvmf_property_cmd *cmd = (struct nvmf_property_cmd *)&sqe;

		sqe_init(&sqe, NVME_FABRICS_COMMAND, 9);
		cmd->fctype = NVMF_FCTYPE_PROPERTY_GET;
		cmd->attrib = 2;
		cmd->ofst = NVME_REG_CAP;
		CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 0, NULL), NVME_SC_INVALID_FIELD);
	}
	/* Unknown offset */
	CU_ASSERT_EQUAL(prop_get(fx.q[0], 0x20, false, NULL), NVME_SC_INVALID_FIELD);
	fx_fini();
}

static void test_property_get_cap_mqes_follows_queue_size_128(void)
{
	struct ernic_backend_cfg cfg;
	uint64_t cap = 0;

	cfg_small(&cfg);
	cfg.queue_size = 128;
	fx_init_cfg(&cfg, NULL);
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_get(fx.q[0], NVME_REG_CAP, true, &cap), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(NVME_CAP_MQES(cap), 127);
	fx_fini();
}

static void test_property_get_vs_at_least_1_3_and_4_byte_only(void)
{
	uint64_t vs = 0;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_get(fx.q[0], NVME_REG_VS, false, &vs), NVME_SC_SUCCESS);
	CU_ASSERT(vs >= NVME_VS(1, 3, 0));
	CU_ASSERT_EQUAL(vs >> 32, 0);
	CU_ASSERT_EQUAL(prop_get(fx.q[0], NVME_REG_VS, true, NULL), NVME_SC_INVALID_FIELD);
	fx_fini();
}

static void test_cc_en_sets_csts_rdy_and_cc_reads_back(void)
{
	uint64_t cc = 0;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]), 0);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]), NVME_CSTS_RDY);
	CU_ASSERT_EQUAL(prop_get(fx.q[0], NVME_REG_CC, false, &cc), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cc, CC_ENABLE);
	fx_fini();
}

static void test_cc_en_with_bad_iosqes_sets_cfs_not_rdy(void)
{
	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, NVME_CC_EN | (7u << NVME_CC_IOSQES_SHIFT) |
							     (4u << NVME_CC_IOCQES_SHIFT)),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & (NVME_CSTS_RDY | NVME_CSTS_CFS), NVME_CSTS_CFS);
	fx_fini();
}

/* CC.AMS other than round robin, which is all CAP.AMS offers, is a configuration error like a bad entry size. */
static void test_cc_en_with_ams_other_than_round_robin_sets_cfs_not_rdy(void)
{
	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE | (1u << NVME_CC_AMS_SHIFT)), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & (NVME_CSTS_RDY | NVME_CSTS_CFS), NVME_CSTS_CFS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, 0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE | (7u << NVME_CC_AMS_SHIFT)), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & (NVME_CSTS_RDY | NVME_CSTS_CFS), NVME_CSTS_CFS);
	fx_fini();
}

/*
 * A CC the controller cannot enable is CSTS.CFS alone, as Linux nvmet's
 * nvmet_start_ctrl() answers it, not a fatal controller: its queues are not
 * closed (a transport used to close them within 100 ms, before the host
 * could read CSTS), commands other than Fabrics ones get Command Sequence
 * Error as on a controller not enabled, and a valid enable after a reset
 * makes it ready, CFS gone. A controller that did fail (keep-alive expired)
 * stays failed whatever CC says.
 */
static void test_an_invalid_cc_is_cfs_without_failing_the_controller_and_a_valid_enable_clears_it(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 20, &cqe), NVME_SC_SUCCESS);
	fx.cntlid = (uint16_t)cqe.dw0;
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, NVME_CC_EN | (5u << NVME_CC_IOSQES_SHIFT) |
							     (4u << NVME_CC_IOCQES_SHIFT)),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]), NVME_CSTS_CFS);
	CU_ASSERT_FALSE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 1), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_CMD_SEQ_ERROR);
	/* Reset, then a valid enable */
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, 0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & NVME_CSTS_RDY, 0);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]), NVME_CSTS_RDY);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 2), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_SUCCESS);
	/* Keep-alive expired: fatal, and a reset and enable do not undo it */
	ernic_target_check_keep_alive(fx.tgt);
	ut_sleep_ms(80);
	ernic_target_check_keep_alive(fx.tgt);
	CU_ASSERT_TRUE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, 0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & (NVME_CSTS_RDY | NVME_CSTS_CFS), NVME_CSTS_CFS);
	CU_ASSERT_TRUE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	CU_ASSERT_EQUAL(rw_exec(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096, &cqe), ERNIC_EXEC_CTRLR_FATAL);
	fx_fini();
}

static void test_cc_shn_sets_csts_shst_complete(void)
{
	fx_up();
	CU_ASSERT_EQUAL(csts(fx.q[0]) & NVME_CSTS_SHST_MASK, 0);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE | (1u << NVME_CC_SHN_SHIFT)), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_COMPLETE);
	/* Abrupt shutdown (10b) reports the same */
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & NVME_CSTS_SHST_MASK, 0);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE | (2u << NVME_CC_SHN_SHIFT)), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_COMPLETE);
	fx_fini();
}

/*
 * Once shutdown processing is complete the controller is not ready (RDY 0),
 * as Linux nvmet's nvmet_update_cc() clears it: admin and I/O commands get
 * Command Sequence Error, Fabrics commands still run, no queue is lost, and
 * a reset (CC.EN 1 -> 0 -> 1, Base 3.6.2) makes it ready again. Commands used
 * to run on after the shutdown with RDY still 1.
 */
static void test_cc_shn_leaves_the_controller_not_ready_until_a_reset(void)
{
	uint32_t v;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE | (1u << NVME_CC_SHN_SHIFT)), NVME_SC_SUCCESS);
	v = csts(fx.q[0]);
	CU_ASSERT_EQUAL(v & (NVME_CSTS_RDY | NVME_CSTS_CFS | NVME_CSTS_SHST_MASK), NVME_CSTS_SHST_COMPLETE);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 1), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT_EQUAL(simple(fx.q[0], NVME_ADMIN_KEEP_ALIVE, 2), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT_FALSE(ernic_sq_ctrlr_fatal(&fx.q[1]->sq));
	/* SHN cleared alone: still not ready */
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & (NVME_CSTS_RDY | NVME_CSTS_SHST_MASK), 0);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE & ~NVME_CC_EN), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]), NVME_CSTS_RDY);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 3), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_SUCCESS);
	fx_fini();
}

static void test_cc_en_1_to_0_clears_rdy(void)
{
	fx_up();
	CU_ASSERT_EQUAL(csts(fx.q[0]) & NVME_CSTS_RDY, NVME_CSTS_RDY);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE & ~NVME_CC_EN), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & NVME_CSTS_RDY, 0);
	/* And admin commands are refused again */
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 1), NVME_SC_CMD_SEQ_ERROR);
	/* Re-enable works */
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & NVME_CSTS_RDY, NVME_CSTS_RDY);
	fx_fini();
}

static void test_property_set_read_only_property_is_invalid_field(void)
{
	uint64_t cap_before = 0, cap_after = 0;

	fx_up();
	CU_ASSERT_EQUAL(prop_get(fx.q[0], NVME_REG_CAP, true, &cap_before), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CAP, 1, 0), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_VS, 0, 0x20000), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CSTS, 0, 0), NVME_SC_INVALID_FIELD);
	/* CC is 4 bytes: an 8-byte write of it is refused too */
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 1, CC_ENABLE), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(prop_get(fx.q[0], NVME_REG_CAP, true, &cap_after), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cap_after, cap_before);
	CU_ASSERT_EQUAL(csts(fx.q[0]), NVME_CSTS_RDY);
	fx_fini();
}

static void test_admin_and_io_commands_before_cc_en_are_cmd_seq_error(void)
{
	struct nvme_cqe cqe;

	fx_init();
	/* Not even connected */
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 1), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT_EQUAL(prop_get(fx.q[0], NVME_REG_VS, false, NULL), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_CMD_SEQ_ERROR);
	/* Connected, CC.EN = 0 */
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 2), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT_EQUAL(simple(fx.q[0], NVME_ADMIN_KEEP_ALIVE, 3), NVME_SC_CMD_SEQ_ERROR);
	CU_ASSERT_EQUAL(fx.q[0]->map_calls, 1); /* only the Connect's data moved */
	/* An I/O queue of a controller disabled after it connected */
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, (uint16_t)cqe.dw0, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, 0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_CMD_SEQ_ERROR);
	fx_fini();
}

static void test_unknown_fabrics_fctype_is_invalid_opcode(void)
{
	static const uint8_t fctypes[] = { 0x02, 0x03, NVMF_FCTYPE_AUTH_SEND, NVMF_FCTYPE_AUTH_RECV, 0x7E, 0xFF };
	struct nvme_sqe sqe;

	fx_up();
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(fctypes); i++) {
		sqe_init(&sqe, NVME_FABRICS_COMMAND, (uint16_t)i);
		((struct nvmf_fabrics_cmd *)&sqe)->fctype = fctypes[i];
		CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 0, NULL), NVME_SC_INVALID_OPCODE);
	}
	/* Property Get on an I/O queue is not a thing either */
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_get(fx.q[1], NVME_REG_VS, false, NULL), NVME_SC_INVALID_OPCODE);
	fx_fini();
}

/* =============================================================== Identify */

static bool space_padded_nonempty(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && s[i] != ' ' && s[i] >= 0x21 && s[i] <= 0x7E)
		i++;
	if (i == 0)
		return false;
	for (; i < len; i++)
		if (s[i] != ' ' && !(s[i] >= 0x21 && s[i] <= 0x7E))
			return false;
	/* No NUL anywhere, and the last byte is a space or printable */
	return memchr(s, '\0', len) == NULL;
}

static void test_identify_controller_fields(void)
{
	const struct nvme_id_ctrl *id;
	struct ernic_backend_cfg cfg;

	cfg_small(&cfg);
	cfg.queue_size = 128;
	fx_up_cfg(&cfg);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 0x11), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fx.q[0]->map_dir, NVME_DATA_CTRL_TO_HOST);
	CU_ASSERT_EQUAL(fx.q[0]->map_len, 4096);
	id = (const struct nvme_id_ctrl *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(id->mdts, 5);
	CU_ASSERT_EQUAL(id->ioccsz, 4);
	CU_ASSERT_EQUAL(id->iorcsz, 1);
	CU_ASSERT_EQUAL(id->icdoff, 0);
	CU_ASSERT_EQUAL(id->maxcmd, 128);
	CU_ASSERT_EQUAL(id->msdbd, 1);
	CU_ASSERT_EQUAL(id->ofcs, NVME_CTRL_OFCS_DISCONNECT); /* Disconnect is executed, so it is reported */
	CU_ASSERT(id->sgls & NVME_CTRL_SGLS_SUPPORTED);
	CU_ASSERT(id->sgls & NVME_CTRL_SGLS_KEYED);
	CU_ASSERT_STRING_EQUAL(id->subnqn, ERNIC_DEFAULT_SUBNQN);
	CU_ASSERT(space_padded_nonempty(id->sn, sizeof(id->sn)));
	CU_ASSERT(space_padded_nonempty(id->mn, sizeof(id->mn)));
	CU_ASSERT(space_padded_nonempty(id->fr, sizeof(id->fr)));
	CU_ASSERT_EQUAL(id->nn, ERNIC_MAX_NS);
	CU_ASSERT_EQUAL(id->cntlid, fx.cntlid);
	CU_ASSERT_EQUAL(id->cntrltype, NVME_CTRL_CNTRLTYPE_IO);
	CU_ASSERT(id->ver >= NVME_VS(1, 3, 0));
	CU_ASSERT_EQUAL(id->sqes, 0x66);
	CU_ASSERT_EQUAL(id->cqes, 0x44);
	CU_ASSERT_EQUAL(id->aerl, ERNIC_AERL - 1);
	CU_ASSERT(id->oaes & NVME_CTRL_OAES_NS_ATTR);
	CU_ASSERT_NOT_EQUAL(id->kas, 0);
	/*
	 * LPA: effects log and extended data; no per-namespace SMART. Not bit 5:
	 * it promises LIDs 12h and 13h and the effects log's command scope as
	 * well as LID 00h (Base 2.0 Figure 275), and only LID 00h is served.
	 */
	CU_ASSERT_EQUAL(id->lpa, NVME_CTRL_LPA_CMD_EFFECTS | NVME_CTRL_LPA_EXTENDED);
	CU_ASSERT_EQUAL(id->lpa, 0x06);
	fx_fini();
}

static void test_identify_controller_mdts_follows_the_backend_string(void)
{
	static const uint32_t mdts[] = { 0, 1, 11, ERNIC_MDTS_MAX };
	struct ernic_backend_cfg cfg;

	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(mdts); i++) {
		cfg_small(&cfg);
		cfg.mdts = mdts[i];
		fx_up_cfg(&cfg);
		CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 0x11), NVME_SC_SUCCESS);
		CU_ASSERT_EQUAL(((const struct nvme_id_ctrl *)fx.q[0]->buf)->mdts, mdts[i]);
		fx_fini();
	}
}

static bool page_is_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * NN is every valid NSID, not the namespaces attached now: one attached at
 * NSID 3 later is still within it, and NSID 2, valid with nothing attached,
 * is inactive: Identify of it returns zeroes, not Invalid Namespace.
 */
static void test_identify_nn_covers_nsids_attached_later_and_inactive_ones_read_as_zeroes(void)
{
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN];

	fx_up();
	cfg_small(&cfg);
	CU_ASSERT_EQUAL_FATAL(ernic_target_add_ns_at(fx.tgt, 3, &cfg, NULL, NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 0x11), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(((const struct nvme_id_ctrl *)fx.q[0]->buf)->nn, ERNIC_MAX_NS);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS, 2, 0x12), NVME_SC_SUCCESS);
	CU_ASSERT_TRUE(page_is_zero(fx.q[0]->buf, 4096));
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS, 3, 0x13), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(((const struct nvme_id_ns *)fx.q[0]->buf)->nsze, (4ull << 20) / 4096);
	fx_fini();
}

static void check_identify_ns(uint32_t bs, uint8_t lbads)
{
	struct ernic_backend_cfg cfg;
	const struct nvme_id_ns *id;
	static const uint8_t zero[16];

	cfg_small(&cfg);
	cfg.bs = bs;
	fx_up_cfg(&cfg);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS, 1, 0x12), NVME_SC_SUCCESS);
	id = (const struct nvme_id_ns *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(id->nsze, (4ull << 20) / bs);
	CU_ASSERT_EQUAL(id->ncap, (4ull << 20) / bs);
	CU_ASSERT_EQUAL(id->lbaf[0].lbads, lbads);
	CU_ASSERT_EQUAL(id->lbaf[0].ms, 0);
	CU_ASSERT_EQUAL(id->flbas & 0xF, 0);
	CU_ASSERT_EQUAL(id->nlbaf, 0);
	CU_ASSERT_NOT_EQUAL(memcmp(id->nguid, zero, 16), 0);
	CU_ASSERT_EQUAL(memcmp(id->nguid, fx.tgt->ns[0].nguid, 16), 0);
	fx_fini();
}

static void test_identify_namespace_4096(void)
{
	check_identify_ns(4096, 12);
}

static void test_identify_namespace_512(void)
{
	check_identify_ns(512, 9);
}

static void test_identify_active_namespace_list(void)
{
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN];
	const uint32_t *list;

	fx_up();
	cfg_small(&cfg);
	CU_ASSERT_EQUAL(ernic_target_add_ns(fx.tgt, &cfg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ernic_target_add_ns(fx.tgt, &cfg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS_ACTIVE_LIST, 0, 0x13), NVME_SC_SUCCESS);
	list = (const uint32_t *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(list[0], 1);
	CU_ASSERT_EQUAL(list[1], 2);
	CU_ASSERT_EQUAL(list[2], 3);
	CU_ASSERT_EQUAL(list[3], 0);
	CU_ASSERT_EQUAL(list[1023], 0);
	/* Only NSIDs greater than the one given */
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS_ACTIVE_LIST, 1, 0x14), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(list[0], 2);
	CU_ASSERT_EQUAL(list[1], 3);
	CU_ASSERT_EQUAL(list[2], 0);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS_ACTIVE_LIST, 3, 0x15), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(list[0], 0);
	fx_fini();
}

/* NQNs that differ only in their last character still give their namespaces different NGUIDs and EUI-64s. */
static void test_subsystems_differing_in_the_last_nqn_character_get_different_nguids(void)
{
	static const char *const nqns[] = { "blktests-subsystem-1", "blktests-subsystem-2" };
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt[2];
	char err[ERNIC_ERRLEN];

	for (int i = 0; i < 2; i++) {
		struct ernic_target_opts opts = { .subnqn = nqns[i] };

		cfg_small(&cfg);
		CU_ASSERT_EQUAL_FATAL(ernic_target_create(&cfg, &opts, &tgt[i], err, sizeof(err)), 0);
	}
	CU_ASSERT_NOT_EQUAL(memcmp(tgt[0]->ns[0].nguid, tgt[1]->ns[0].nguid, 16), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(tgt[0]->ns[0].eui64, tgt[1]->ns[0].eui64, 8), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(tgt[0]->ns[0].uuid, tgt[1]->ns[0].uuid, 16), 0);
	for (int i = 0; i < 2; i++)
		ernic_target_destroy(tgt[i]);
}

static void test_identify_ns_id_descriptors_nguid_uuid_csi(void)
{
	uint8_t page[4096];
	bool nguid = false, uuid = false, csi = false;
	size_t off = 0;

	fx_up();
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS_DESC_LIST, 1, 0x16), NVME_SC_SUCCESS);
	memcpy(page, fx.q[0]->buf, sizeof(page));
	while (off + 4 <= sizeof(page) && page[off + 1] != 0) {
		uint8_t nidt = page[off], nidl = page[off + 1];

		CU_ASSERT_FATAL(off + 4 + nidl <= sizeof(page));
		switch (nidt) {
		case NVME_NIDT_NGUID:
			CU_ASSERT_EQUAL(nidl, 16);
			CU_ASSERT_EQUAL(memcmp(page + off + 4, fx.tgt->ns[0].nguid, 16), 0);
			nguid = true;
			break;
		case NVME_NIDT_UUID:
			CU_ASSERT_EQUAL(nidl, 16);
			CU_ASSERT_EQUAL(page[off + 4 + 6] >> 4, 4); /* version 4 */
			CU_ASSERT_EQUAL(page[off + 4 + 8] >> 6, 2); /* variant 10b */
			uuid = true;
			break;
		case NVME_NIDT_CSI:
			CU_ASSERT_EQUAL(nidl, 1);
			CU_ASSERT_EQUAL(page[off + 4], 0); /* NVM */
			csi = true;
			break;
		case NVME_NIDT_EUI64:
			CU_ASSERT_EQUAL(nidl, 8);
			break;
		default:
			CU_FAIL("unknown descriptor type");
		}
		off += 4 + nidl;
	}
	CU_ASSERT_TRUE(nguid);
	CU_ASSERT_TRUE(uuid);
	CU_ASSERT_TRUE(csi);
	/* The rest of the page is zero: the list is terminated */
	for (size_t i = off; i < sizeof(page); i++)
		if (page[i]) {
			CU_FAIL("descriptor list not zero-terminated");
			break;
		}
	fx_fini();
}

static void test_identify_unknown_nsid_is_invalid_ns(void)
{
	fx_up();
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS, ERNIC_MAX_NS + 1, 0x17), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS, 0, 0x18), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS_DESC_LIST, 9, 0x19), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS_ACTIVE_LIST, 0xFFFFFFFE, 0x1A), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(counters()->errors[NVME_SC_INVALID_NS], 4);
	fx_fini();
}

static void test_identify_unknown_cns_is_invalid_field(void)
{
	fx_up();
	CU_ASSERT_EQUAL(identify(fx.q[0], 0x04, 1, 0x1B), NVME_SC_INVALID_FIELD); /* NVM Set List */
	CU_ASSERT_EQUAL(identify(fx.q[0], 0x10, 0, 0x1C), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(identify(fx.q[0], 0xFF, 0, 0x1D), NVME_SC_INVALID_FIELD);
	fx_fini();
}

static uint16_t identify_csi(struct stub_q *q, uint8_t cns, uint32_t nsid, uint8_t csi)
{
	struct nvme_sqe sqe;

	sqe_init(&sqe, NVME_ADMIN_IDENTIFY, 0x1F);
	sqe.nsid = nsid;
	sqe.cdw10 = cns;
	sqe.cdw11 = (uint32_t)csi << 24;
	memset(q->buf, 0xEE, 4096);
	return run(q, &sqe, 4096, NULL);
}

static void test_identify_command_set_specific_nvm_only(void)
{
	fx_up();
	/* CNS 06h, CSI NVM: a page of zeroes (no limits beyond MDTS) */
	CU_ASSERT_EQUAL(identify_csi(fx.q[0], 0x06, 0, 0), NVME_SC_SUCCESS);
	for (int i = 0; i < 4096; i++)
		if (fx.q[0]->buf[i]) {
			CU_FAIL("CNS 06h page not zero");
			break;
		}
	CU_ASSERT_EQUAL(identify_csi(fx.q[0], 0x05, 1, 0), NVME_SC_SUCCESS);
	/* Another command set (Zoned Namespace, 02h) is not offered */
	CU_ASSERT_EQUAL(identify_csi(fx.q[0], 0x06, 0, 2), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(identify_csi(fx.q[0], 0x05, 1, 2), NVME_SC_INVALID_FIELD);
	/* An inactive NSID reads as zeroes here too; one beyond NN is invalid. */
	CU_ASSERT_EQUAL(identify_csi(fx.q[0], 0x05, 2, 0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(identify_csi(fx.q[0], 0x05, ERNIC_MAX_NS + 1, 0), NVME_SC_INVALID_NS);
	fx_fini();
}

static void test_identify_sgl_shorter_than_page_moves_nothing(void)
{
	struct nvme_sqe sqe;

	fx_up();
	sqe_init(&sqe, NVME_ADMIN_IDENTIFY, 0x1E);
	sqe.cdw10 = NVME_ID_CNS_CTRL;
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 2048, NULL), NVME_SC_SGL_INVALID_DATA_LEN);
	CU_ASSERT_EQUAL(fx.q[0]->map_calls, 1); /* the Connect only */
	fx_fini();
}

/* ============================================================== Log pages */

static void test_error_log_lists_failed_commands_newest_first(void)
{
	const struct nvme_error_log_entry *e;
	struct nvme_sqe sqe;
	struct nvme_cqe cqe_a, cqe_b;

	fx_up();
	sqe_init(&sqe, 0xC4, 0x1234);
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 0, &cqe_a), NVME_SC_INVALID_OPCODE);
	sqe_init(&sqe, NVME_ADMIN_IDENTIFY, 0x0055);
	sqe.cdw10 = NVME_ID_CNS_NS;
	sqe.nsid = 42;
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 4096, &cqe_b), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_ERROR, 0, 4096, 0, false), NVME_SC_SUCCESS);
	e = (const struct nvme_error_log_entry *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(e[0].cmdid, 0x0055);
	CU_ASSERT_EQUAL(e[0].sqid, 0);
	CU_ASSERT_EQUAL(nvme_sf_status(e[0].status_field), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(e[0].nsid, 42);
	CU_ASSERT_EQUAL(e[0].error_count, 2);
	CU_ASSERT_EQUAL(e[1].cmdid, 0x1234);
	CU_ASSERT_EQUAL(nvme_sf_status(e[1].status_field), NVME_SC_INVALID_OPCODE);
	CU_ASSERT_EQUAL(e[1].error_count, 1);
	CU_ASSERT_EQUAL(e[2].error_count, 0);
	fx_fini();
}

static void test_error_log_status_field_matches_the_completion(void)
{
	const struct nvme_error_log_entry *e;
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;

	fx_up();
	sqe_init(&sqe, 0xC4, 0x0101);
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 0, &cqe), NVME_SC_INVALID_OPCODE);
	CU_ASSERT(nvme_cqe_dnr(&cqe));
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_ERROR, 0, 64, 0, false), NVME_SC_SUCCESS);
	e = (const struct nvme_error_log_entry *)fx.q[0]->buf;
	/*
	 * Base 2.0 Figure 205: Status Information is the completion's Status
	 * Field (bits 15:1, DNR and More included) plus the phase tag in bit 0.
	 */
	CU_ASSERT_EQUAL(e->status_field & 0xFFFE, cqe.status & 0xFFFE);
	fx_fini();
}

static void test_error_log_records_io_lba_and_sqid(void)
{
	const struct nvme_error_log_entry *e;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0x123456789ull, 1, 4096), NVME_SC_LBA_RANGE);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_ERROR, 0, 128, 0, false), NVME_SC_SUCCESS);
	e = (const struct nvme_error_log_entry *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(e[0].sqid, 1);
	CU_ASSERT_EQUAL(e[0].cmdid, 0x77);
	CU_ASSERT_EQUAL(e[0].lba, 0x123456789ull);
	CU_ASSERT_EQUAL(e[0].nsid, 1);
	CU_ASSERT_EQUAL(nvme_sf_status(e[0].status_field), NVME_SC_LBA_RANGE);
	fx_fini();
}

static uint64_t u128_lo(const uint8_t v[16])
{
	uint64_t x;

	memcpy(&x, v, sizeof(x));
	for (int i = 8; i < 16; i++)
		CU_ASSERT_EQUAL(v[i], 0);
	return x;
}

static void test_smart_log_counts_host_reads_and_writes(void)
{
	const struct nvme_smart_log *s;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, (uint64_t)i, 1, 4096), NVME_SC_SUCCESS);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_WRITE, 1, (uint64_t)i, 1, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_SMART, 0xFFFFFFFF, 512, 0, false), NVME_SC_SUCCESS);
	s = (const struct nvme_smart_log *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(u128_lo(s->host_reads), 3);
	CU_ASSERT_EQUAL(u128_lo(s->host_writes), 2);
	CU_ASSERT_EQUAL(s->temperature, 313);
	CU_ASSERT_EQUAL(s->avail_spare, 100);
	CU_ASSERT_EQUAL(u128_lo(s->data_units_read), 1);
	CU_ASSERT_EQUAL(u128_lo(s->data_units_written), 1);
	/* A namespace that does not exist */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_SMART, 5, 512, 0, false), NVME_SC_INVALID_NS);
	fx_fini();
}

static void test_smart_data_units_read_count_only_host_reads(void)
{
	const struct nvme_smart_log *s;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	/* Exactly 1000 units of 512 bytes read by the host: 125 reads of 4 KiB */
	for (int i = 0; i < 125; i++)
		CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, (uint64_t)i, 1, 4096), NVME_SC_SUCCESS);
	/* Admin data (Identify) is not data read from the namespace */
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 0x11), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_SMART, 0xFFFFFFFF, 512, 0, false), NVME_SC_SUCCESS);
	s = (const struct nvme_smart_log *)fx.q[0]->buf;
	/* Base Figure 207: 1 means 1 to 1,000 units of 512 bytes */
	CU_ASSERT_EQUAL(u128_lo(s->data_units_read), 1);
	CU_ASSERT_EQUAL(u128_lo(s->data_units_written), 0);
	fx_fini();
}

static void test_firmware_slot_log_afi_and_frs1(void)
{
	const struct nvme_fw_slot_log *fw;

	fx_up();
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_FW_SLOT, 0, 512, 0, false), NVME_SC_SUCCESS);
	fw = (const struct nvme_fw_slot_log *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(fw->afi & 7, 1);
	CU_ASSERT_EQUAL(memcmp(fw->frs[0], "1.0     ", 8), 0);
	CU_ASSERT_EQUAL(fw->frs[1][0], 0);
	fx_fini();
}

static void test_unknown_log_page_is_invalid_log_page(void)
{
	fx_up();
	CU_ASSERT_EQUAL(get_log(fx.q[0], 0x06, 0, 512, 0, false), NVME_SC_INVALID_LOG_PAGE);
	CU_ASSERT_EQUAL(get_log(fx.q[0], 0xC0, 0, 512, 0, false), NVME_SC_INVALID_LOG_PAGE);
	/* The discovery log page only exists on a discovery controller */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_DISC, 0, 1024, 0, false), NVME_SC_INVALID_LOG_PAGE);
	fx_fini();
}

static void test_supported_log_pages_lists_exactly_the_pages_get_log_page_returns(void)
{
	struct nvme_supported_log log;

	fx_up();
	CU_ASSERT_EQUAL_FATAL(get_log(fx.q[0], NVME_LOG_SUPPORTED, 0, sizeof(log), 0, false), NVME_SC_SUCCESS);
	memcpy(&log, fx.q[0]->buf, sizeof(log));
	for (uint32_t lid = 0; lid < 256; lid++) {
		uint16_t st = get_log(fx.q[0], (uint8_t)lid, 0, 512, 0, false);

		CU_ASSERT_EQUAL(log.lid[lid], st == NVME_SC_INVALID_LOG_PAGE ? 0 : NVME_LOG_LSUPP);
		if (log.lid[lid] != (st == NVME_SC_INVALID_LOG_PAGE ? 0 : NVME_LOG_LSUPP))
			fprintf(stderr, "\n  LID %02Xh: listed %08X, Get Log Page status %03X\n", lid, log.lid[lid], st);
	}
	CU_ASSERT_EQUAL(log.lid[NVME_LOG_SUPPORTED], NVME_LOG_LSUPP);
	CU_ASSERT_EQUAL(log.lid[NVME_LOG_CHANGED_NS], NVME_LOG_LSUPP);
	CU_ASSERT_EQUAL(log.lid[NVME_LOG_CMD_EFFECTS], NVME_LOG_LSUPP);
	CU_ASSERT_EQUAL(log.lid[NVME_LOG_DISC], 0);
	/* 1024 bytes, then zeroes */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_SUPPORTED, 0, 2048, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fx.q[0]->buf[1024], 0);
	fx_fini();
}

/* Each opcode marked supported is one the controller runs, and no other: a command only listed, or only run, fails. */
static void test_cmd_effects_log_lists_exactly_the_commands_the_controller_runs(void)
{
	struct nvme_cmd_effects_log log;
	struct nvme_sqe sqe;

	fx_up();
	CU_ASSERT_EQUAL_FATAL(set_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, 0, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(get_log(fx.q[0], NVME_LOG_CMD_EFFECTS, 0, sizeof(log), 0, false), NVME_SC_SUCCESS);
	memcpy(&log, fx.q[0]->buf, sizeof(log));
	for (uint32_t opc = 0; opc < 256; opc++) {
		bool runs;

		/* An AER is held, not run now; Fabrics commands are no admin opcode (Fabrics 1.1 Figure 9). */
		if (opc == NVME_ADMIN_ASYNC_EVENT || opc == NVME_FABRICS_COMMAND)
			continue;
		runs = simple(fx.q[0], (uint8_t)opc, 0x51) != NVME_SC_INVALID_OPCODE;
		CU_ASSERT_EQUAL(!!(log.acs[opc] & NVME_CMD_EFFECTS_CSUPP), runs);
		if (!!(log.acs[opc] & NVME_CMD_EFFECTS_CSUPP) != runs)
			fprintf(stderr, "\n  admin opcode %02Xh: effects %08X\n", opc, log.acs[opc]);
	}
	CU_ASSERT_EQUAL(log.acs[NVME_ADMIN_ASYNC_EVENT], NVME_CMD_EFFECTS_CSUPP);
	for (uint32_t opc = 0; opc < 256; opc++) {
		bool runs;

		if (opc == NVME_FABRICS_COMMAND)
			continue;
		sqe_init(&sqe, (uint8_t)opc, 0x52);
		sqe.nsid = 1;
		runs = run(fx.q[1], &sqe, 0, NULL) != NVME_SC_INVALID_OPCODE;
		CU_ASSERT_EQUAL(!!(log.iocs[opc] & NVME_CMD_EFFECTS_CSUPP), runs);
		if (!!(log.iocs[opc] & NVME_CMD_EFFECTS_CSUPP) != runs)
			fprintf(stderr, "\n  I/O opcode %02Xh: effects %08X\n", opc, log.iocs[opc]);
	}
	/* Only the commands that write change logical block content */
	CU_ASSERT_EQUAL(log.iocs[NVME_CMD_WRITE], NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC);
	CU_ASSERT_EQUAL(log.iocs[NVME_CMD_WRITE_ZEROES], NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC);
	CU_ASSERT_EQUAL(log.iocs[NVME_CMD_DSM], NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC);
	CU_ASSERT_EQUAL(log.iocs[NVME_CMD_READ], NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_EQUAL(log.iocs[NVME_CMD_FLUSH], NVME_CMD_EFFECTS_CSUPP);
	for (size_t i = 0; i < sizeof(log.rsvd2048); i++)
		CU_ASSERT_EQUAL_FATAL(log.rsvd2048[i], 0);
	fx_fini();
}

static void test_cmd_effects_log_of_another_command_set_is_invalid_log_page(void)
{
	struct nvme_sqe sqe;

	fx_up();
	sqe_init(&sqe, NVME_ADMIN_GET_LOG_PAGE, 0x22);
	sqe.cdw10 = NVME_LOG_CMD_EFFECTS | (4096u / 4 - 1) << 16;
	sqe.cdw14 = 2u << 24; /* CSI 02h: Zoned Namespace */
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 4096, NULL), NVME_SC_INVALID_LOG_PAGE);
	sqe.cdw14 = 0;
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 4096, NULL), NVME_SC_SUCCESS);
	fx_fini();
}

static void test_get_log_page_with_offset(void)
{
	const struct nvme_error_log_entry *e;

	fx_up();
	/* Firmware slot log from byte 8: FRS1 first */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_FW_SLOT, 0, 8, 8, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(memcmp(fx.q[0]->buf, "1.0     ", 8), 0);
	/* Error log from the second entry */
	CU_ASSERT_EQUAL(simple(fx.q[0], 0xC5, 0xA1), NVME_SC_INVALID_OPCODE);
	CU_ASSERT_EQUAL(simple(fx.q[0], 0xC6, 0xA2), NVME_SC_INVALID_OPCODE);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_ERROR, 0, 64, 64, false), NVME_SC_SUCCESS);
	e = (const struct nvme_error_log_entry *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(e->cmdid, 0xA1);
	/* Past the end of the page reads as zeroes */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_FW_SLOT, 0, 16, 504, false), NVME_SC_SUCCESS);
	for (int i = 0; i < 16; i++)
		CU_ASSERT_EQUAL(fx.q[0]->buf[i], 0);
	/* Not dword aligned, or beyond the page */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_FW_SLOT, 0, 8, 2, false), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_FW_SLOT, 0, 8, 516, false), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_FW_SLOT, 0, 8, 1ull << 32, false), NVME_SC_INVALID_FIELD);
	fx_fini();
}

/* NUMDU:NUMDL = FFFFFFFFh asks for 2^32 dwords: far beyond MDTS, not a wrap to 0 bytes. */
static void test_get_log_page_of_2_pow_32_dwords_is_invalid_field_not_empty(void)
{
	struct nvme_sqe sqe;

	fx_up();
	sqe_init(&sqe, NVME_ADMIN_GET_LOG_PAGE, 0x63);
	sqe.nsid = 0xFFFFFFFF;
	sqe.cdw10 = NVME_LOG_SMART | 0xFFFFu << 16;
	sqe.cdw11 = 0xFFFF;
	fx.q[0]->map_len = 0;
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 4096, NULL), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(fx.q[0]->map_len, 0);
	fx_fini();
}

/*
 * CDW14 bit 23 (OT) makes LPO an index, for a log whose IOS bit is set in
 * Supported Log Pages (Base 2.0 5.16); none is, so every page refuses it with
 * Invalid Field, and reads nothing: the Changed Namespace List is still there.
 */
static void test_get_log_page_with_offset_type_index_is_invalid_field_for_every_page(void)
{
	static const uint8_t lids[] = { NVME_LOG_SUPPORTED, NVME_LOG_ERROR,	 NVME_LOG_SMART, NVME_LOG_FW_SLOT,
					NVME_LOG_CHANGED_NS, NVME_LOG_CMD_EFFECTS, NVME_LOG_ANA };
	const uint32_t ot = NVME_LOG_OT;
	const struct nvme_supported_log *sup;

	fx_up();
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_SUPPORTED, 0, 1024, 0, false), NVME_SC_SUCCESS);
	sup = (const struct nvme_supported_log *)fx.q[0]->buf;
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(lids); i++)
		CU_ASSERT_EQUAL(sup->lid[lids[i]] & NVME_LOG_IOS, 0);
	ernic_target_ns_changed(fx.tgt, 1);
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(lids); i++) {
		fx.q[0]->map_calls = 0;
		CU_ASSERT_EQUAL(get_log_cdw14(fx.q[0], lids[i], 0xFFFFFFFF, 512, 0, false, ot), NVME_SC_INVALID_FIELD);
		CU_ASSERT_EQUAL(fx.q[0]->map_calls, 0);
	}
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(((const uint32_t *)fx.q[0]->buf)[0], 1);
	/* OT clear: the same reads work */
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(lids); i++)
		CU_ASSERT_EQUAL(get_log_cdw14(fx.q[0], lids[i], 0xFFFFFFFF, 512, 0, false, 0), NVME_SC_SUCCESS);
	fx_fini();
}

/* =============================================================== Features */

/*
 * Temperature Threshold keeps an over and an under threshold per sensor
 * (TMPSEL: the composite, sensor 1; Fh sets all), chosen by THSEL. Linux's
 * hwmon reads temp1_max and writes temp1_min through it: one must not
 * overwrite the other, and the composite's over threshold starts at WCTEMP.
 */
static void test_temperature_threshold_is_kept_per_sensor_and_type_with_wctemp_default(void)
{
	uint32_t dw0 = 0, wctemp;
	struct nvme_smart_log *log;

	fx_up();
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 0x64), NVME_SC_SUCCESS);
	wctemp = ((const struct nvme_id_ctrl *)fx.q[0]->buf)->wctemp;
	CU_ASSERT_EQUAL(get_feat_cdw11(fx.q[0], NVME_FEAT_TEMP_THRESH, NVME_FEAT_SEL_CURRENT, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 0xFFFF, wctemp);
	CU_ASSERT_EQUAL(get_feat_cdw11(fx.q[0], NVME_FEAT_TEMP_THRESH, NVME_FEAT_SEL_CURRENT, 1u << 16, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 0xFFFF, 0xFFFF); /* sensor 1: no over threshold */
	CU_ASSERT_EQUAL(get_feat_cdw11(fx.q[0], NVME_FEAT_TEMP_THRESH, NVME_FEAT_SEL_CURRENT, 1u << 20, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 1u << 20); /* composite under: 0, THSEL echoed */

	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, 353, false, NULL), 0);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, 273 | 1u << 20, false, NULL), 0);
	CU_ASSERT_EQUAL(get_feat_cdw11(fx.q[0], NVME_FEAT_TEMP_THRESH, NVME_FEAT_SEL_CURRENT, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 0xFFFF, 353);
	CU_ASSERT_EQUAL(get_feat_cdw11(fx.q[0], NVME_FEAT_TEMP_THRESH, NVME_FEAT_SEL_CURRENT, 1u << 20, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 0xFFFF, 273);
	/* The default selector still reads the default */
	CU_ASSERT_EQUAL(get_feat_cdw11(fx.q[0], NVME_FEAT_TEMP_THRESH, NVME_FEAT_SEL_DEFAULT, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 0xFFFF, wctemp);
	/* TMPSEL Fh sets every sensor's over threshold */
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, 363 | 0xFu << 16, false, NULL), 0);
	CU_ASSERT_EQUAL(get_feat_cdw11(fx.q[0], NVME_FEAT_TEMP_THRESH, NVME_FEAT_SEL_CURRENT, 1u << 16, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 0xFFFF, 363);
	/* A sensor the SMART log does not report (TMPSEL 2), or THSEL 2, is Invalid Field */
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, 353 | 2u << 16, false, NULL), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, 353 | 2u << 20, false, NULL), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(get_feat_cdw11(fx.q[0], NVME_FEAT_TEMP_THRESH, NVME_FEAT_SEL_CURRENT, 0xFu << 16, &dw0),
			NVME_SC_INVALID_FIELD);

	/* An over threshold below the temperature raises SMART's critical warning */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_SMART, 0xFFFFFFFF, 512, 0, false), NVME_SC_SUCCESS);
	log = (struct nvme_smart_log *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(log->critical_warning & NVME_SMART_CRIT_TEMPERATURE, 0);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, (uint32_t)log->temperature - 1, false, NULL), 0);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_SMART, 0xFFFFFFFF, 512, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(log->critical_warning & NVME_SMART_CRIT_TEMPERATURE, NVME_SMART_CRIT_TEMPERATURE);
	fx_fini();
}

static bool smart_temp_warning(void)
{
	CU_ASSERT_EQUAL_FATAL(get_log(fx.q[0], NVME_LOG_SMART, 0xFFFFFFFF, 512, 0, true), NVME_SC_SUCCESS);
	return ((const struct nvme_smart_log *)fx.q[0]->buf)->critical_warning & NVME_SMART_CRIT_TEMPERATURE;
}

/*
 * Critical Warning bit 1 is set when a temperature is greater than or equal to
 * its over threshold, or less than or equal to its under threshold (Base 2.0
 * Figure 207): a threshold equal to the temperature counts, for the composite
 * and for sensor 1.
 */
static void test_smart_temperature_warning_includes_a_threshold_equal_to_the_temperature(void)
{
	const uint32_t temp = 313, under = 1u << 20, sensor1 = 1u << 16;

	fx_up();
	CU_ASSERT_FALSE(smart_temp_warning());
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, temp, false, NULL), 0);
	CU_ASSERT_TRUE(smart_temp_warning());
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, temp + 1, false, NULL), 0);
	CU_ASSERT_FALSE(smart_temp_warning());
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, temp | under, false, NULL), 0);
	CU_ASSERT_TRUE(smart_temp_warning());
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, (temp - 1) | under, false, NULL), 0);
	CU_ASSERT_FALSE(smart_temp_warning());
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, temp | sensor1, false, NULL), 0);
	CU_ASSERT_TRUE(smart_temp_warning());
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, 0xFFFF | sensor1, false, NULL), 0);
	CU_ASSERT_FALSE(smart_temp_warning());
	fx_fini();
}

static void test_set_features_num_queues_grants_min_and_reports_0s_based(void)
{
	struct nvme_cqe cqe;
	uint32_t dw0 = 0;

	fx_up(); /* queues=4 */
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, 1u | 1u << 16, false, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cqe.dw0, 1u | 1u << 16);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 1u | 1u << 16);
	/* Asking for more than offered gets what is offered */
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, 63u | 63u << 16, false, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cqe.dw0, 3u | 3u << 16);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 3u | 3u << 16);
	/* One queue */
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, 0, false, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(cqe.dw0, 0);
	CU_ASSERT_EQUAL(connect_io(fx.q[2], 2, fx.cntlid, NULL), NVME_SC_CONNECT_INVALID_PARAM);
	fx_fini();
}

static void test_set_features_num_queues_ffff_is_invalid_field(void)
{
	struct nvme_cqe cqe;
	uint32_t dw0 = 0;

	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, 0xFFFFu | 1u << 16, false, &cqe),
			NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, 1u | 0xFFFFu << 16, false, &cqe),
			NVME_SC_INVALID_FIELD);
	/* Nothing changed: the default grant is the configured count */
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 3u | 3u << 16);
	fx_fini();
}

static void test_set_features_num_queues_after_io_queue_is_cmd_seq_error(void)
{
	struct nvme_cqe cqe;

	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, 1u | 1u << 16, false, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, 3u | 3u << 16, false, &cqe), NVME_SC_CMD_SEQ_ERROR);
	/* The grant stands: QID 3 is still out of range */
	CU_ASSERT_EQUAL(connect_io(fx.q[3], 3, fx.cntlid, NULL), NVME_SC_CONNECT_INVALID_PARAM);
	fx_fini();
}

/*
 * A host that reconnects (a new association: Fabrics 1.1 section 3.2) asking
 * for another queue count gets it, more or fewer, whatever the previous
 * controller of the same host was granted.
 */
static void test_queue_count_changes_are_honoured_on_reconnect(void)
{
	static const uint32_t want[] = { 2, 4, 1, 3 };
	struct nvme_cqe cqe;

	fx_init();
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(want); i++) {
		uint16_t cntlid;

		for (int q = 0; q < FX_QUEUES; q++)
			q_reinit(fx.q[q]);
		CU_ASSERT_EQUAL_FATAL(connect_admin(fx.q[0], 0, &cqe), NVME_SC_SUCCESS);
		cntlid = (uint16_t)cqe.dw0;
		CU_ASSERT_EQUAL_FATAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
		CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, (want[i] - 1) | (want[i] - 1) << 16, false, &cqe),
				NVME_SC_SUCCESS);
		CU_ASSERT_EQUAL(cqe.dw0, (want[i] - 1) | (want[i] - 1) << 16);
		for (uint16_t qid = 1; qid <= want[i]; qid++)
			CU_ASSERT_EQUAL(connect_io(fx.q[qid], qid, cntlid, NULL), NVME_SC_SUCCESS);
		if (want[i] < FX_QUEUES - 1)
			CU_ASSERT_EQUAL(connect_io(fx.q[want[i] + 1], (uint16_t)(want[i] + 1), cntlid, NULL),
					NVME_SC_CONNECT_INVALID_PARAM);
		CU_ASSERT_EQUAL(counters()->io_queues, want[i]);
		/* The host goes: I/O queues first, then the admin queue */
		for (int q = FX_QUEUES - 1; q >= 0; q--)
			q_destroy(fx.q[q]);
		CU_ASSERT_EQUAL(counters()->io_queues, 0);
	}
	fx_fini();
}

static void test_get_features_round_trips_kato_aec_vwc(void)
{
	uint32_t dw0 = 0;

	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_KATO, 120000, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 120000);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_CTRL_OAES_NS_ATTR, false, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, NVME_CTRL_OAES_NS_ATTR);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_VOLATILE_WC, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 1);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_VOLATILE_WC, 0, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_VOLATILE_WC, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 0);
	/* The default of a changed feature is still the default */
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, NVME_FEAT_SEL_DEFAULT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 0);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_VOLATILE_WC, NVME_FEAT_SEL_DEFAULT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 1);
	/* Supported capabilities: changeable, not saveable */
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, NVME_FEAT_SEL_SUPPORTED, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 1u << 2);
	/* SEL 4..7 are reserved */
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, 4, &dw0), NVME_SC_INVALID_FIELD);
	fx_fini();
}

static void test_unknown_feature_id_is_invalid_field(void)
{
	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], 0x03, 0, false, NULL), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], 0xC0, 0, false, NULL), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], 0x03, NVME_FEAT_SEL_CURRENT, NULL), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], 0xC0, NVME_FEAT_SEL_CURRENT, NULL), NVME_SC_INVALID_FIELD);
	fx_fini();
}

static void test_set_features_saveable_bit_is_feature_not_saveable(void)
{
	uint32_t dw0 = 0;

	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_KATO, 5000, true, NULL), NVME_SC_FEATURE_NOT_SAVEABLE);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 0);
	fx_fini();
}

/* ============================================================= Keep Alive */

static void test_keep_alive_expiry_sets_cfs_and_queue_fatal(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 20, &cqe), NVME_SC_SUCCESS);
	fx.cntlid = (uint16_t)cqe.dw0;
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_FALSE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	/* The commands so far are traffic (TBKAS): this check restarts the timer. */
	ernic_target_check_keep_alive(fx.tgt);
	CU_ASSERT_FALSE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	ut_sleep_ms(80);
	/* Only the check declares it */
	CU_ASSERT_FALSE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	ernic_target_check_keep_alive(fx.tgt);
	CU_ASSERT_TRUE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	CU_ASSERT_TRUE(ernic_sq_ctrlr_fatal(&fx.q[1]->sq));
	CU_ASSERT_EQUAL(csts(fx.q[0]) & NVME_CSTS_CFS, NVME_CSTS_CFS);
	/* A fatal controller executes nothing, and its transports close the queues */
	CU_ASSERT_EQUAL(rw_exec(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096, &cqe), ERNIC_EXEC_CTRLR_FATAL);
	CU_ASSERT_EQUAL(ST(cqe), NVME_SC_ABORT_SQ_DELETION);
	fx_fini();
}

/*
 * Traffic Based Keep Alive: I/O on any queue, with no Keep Alive command,
 * keeps the association past its KATO, and Identify says so (CTRATT.TBKAS);
 * when the traffic stops, the timer runs out as before.
 */
static void test_io_traffic_without_keep_alive_keeps_the_controller_alive(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 50, &cqe), NVME_SC_SUCCESS);
	fx.cntlid = (uint16_t)cqe.dw0;
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 0x30), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(((const struct nvme_id_ctrl *)fx.q[0]->buf)->ctratt & NVME_CTRL_CTRATT_TBKAS,
			NVME_CTRL_CTRATT_TBKAS);
	for (int i = 0; i < 6; i++) {
		ut_sleep_ms(30);
		CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_SUCCESS);
		ernic_target_check_keep_alive(fx.tgt);
		CU_ASSERT_FALSE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	}
	/* 180 ms of I/O against a 50 ms KATO, then silence */
	ut_sleep_ms(120);
	ernic_target_check_keep_alive(fx.tgt);
	CU_ASSERT_TRUE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	fx_fini();
}

static void test_keep_alive_before_deadline_prevents_expiry(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 200, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	/* Past the Connect's deadline, but a Keep Alive arrives before the check */
	ut_sleep_ms(300);
	CU_ASSERT_EQUAL(simple(fx.q[0], NVME_ADMIN_KEEP_ALIVE, 0x18), NVME_SC_SUCCESS);
	ernic_target_check_keep_alive(fx.tgt);
	CU_ASSERT_FALSE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	CU_ASSERT_EQUAL(csts(fx.q[0]) & NVME_CSTS_CFS, 0);
	fx_fini();
}

static void test_keep_alive_off_with_kato_zero(void)
{
	struct nvme_cqe cqe;

	fx_init();
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 20, &cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_KATO, 0, false, NULL), NVME_SC_SUCCESS);
	ut_sleep_ms(60);
	ernic_target_check_keep_alive(fx.tgt);
	CU_ASSERT_FALSE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	fx_fini();
}

/*
 * Set Features KATO 0 while the keep-alive check runs: a check that saw the
 * Set Features itself as traffic must not restart the timer the host has just
 * turned off, or the controller would expire with keep-alive off.
 */
static _Atomic unsigned long ka_checks;
static _Atomic bool ka_stop;

static void *ka_checker(void *arg)
{
	(void)arg;
	while (!atomic_load(&ka_stop)) {
		ernic_target_check_keep_alive_timers(fx.tgt);
		atomic_fetch_add(&ka_checks, 1);
	}
	return NULL;
}

static void test_kato_zero_racing_the_keep_alive_check_leaves_no_deadline(void)
{
	struct ernic_ctrlr *c;
	pthread_t th;
	unsigned long live = 0;

	fx_up();
	c = fx.q[0]->sq.ctrlr;
	atomic_store(&ka_stop, false);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, ka_checker, NULL), 0);
	/* Unlocked, this left a deadline within a few thousand rounds in every run. */
	for (int i = 0; i < 5000; i++) {
		unsigned long seen;

		CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_KATO, 600000, false, NULL), 0);
		CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_KATO, 0, false, NULL), 0);
		seen = atomic_load(&ka_checks);
		while (atomic_load(&ka_checks) < seen + 2)
			;
		live += atomic_load(&c->ka_deadline_ns) != 0;
	}
	atomic_store(&ka_stop, true);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(live, 0);
	fx_fini();
}

/* ==================================================================== AER */

static void test_aer_held_then_completed_by_ns_changed(void)
{
	struct ernic_req *req;
	const uint32_t *list;

	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_CTRL_OAES_NS_ATTR, false, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(aer_submit(fx.q[0], 0x0AE1, &req), ERNIC_EXEC_HELD);
	CU_ASSERT_EQUAL(fx.q[0]->nr_cpl, 0);
	ernic_target_ns_changed(fx.tgt, 1);
	CU_ASSERT_EQUAL_FATAL(fx.q[0]->nr_cpl, 1);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[0].cid, 0x0AE1);
	CU_ASSERT_EQUAL(ST(fx.q[0]->cpl[0]), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[0].dw0, NVME_AER_DW0(NVME_AER_TYPE_NOTICE, 0, NVME_LOG_CHANGED_NS));
	CU_ASSERT_EQUAL(fx.q[0]->cpl[0].dw0, 0x00040002u);
	/* The Changed Namespace List names it; reading without RAE clears it */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, false), NVME_SC_SUCCESS);
	list = (const uint32_t *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(list[0], 1);
	CU_ASSERT_EQUAL(list[1], 0);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(list[0], 0);
	fx_fini();
}

/* A held AER's CQE reports the SQ head when it completes: five commands after it, the head they left. */
static void test_a_held_aer_reports_the_sq_head_of_when_it_completes(void)
{
	struct nvme_cqe cqe;

	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_CTRL_OAES_NS_ATTR, false, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(aer_submit(fx.q[0], 0x0AE2, NULL), ERNIC_EXEC_HELD);
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_KATO, 0, false, &cqe), NVME_SC_SUCCESS);
	ernic_target_ns_changed(fx.tgt, 1);
	CU_ASSERT_EQUAL_FATAL(fx.q[0]->nr_cpl, 1);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[0].cid, 0x0AE2);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[0].sqhd, cqe.sqhd);
	/* Aborted when the admin queue goes: the same. */
	CU_ASSERT_EQUAL(aer_submit(fx.q[0], 0x0AE3, NULL), ERNIC_EXEC_HELD);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_KATO, 0, false, &cqe), NVME_SC_SUCCESS);
	q_destroy(fx.q[0]);
	CU_ASSERT_EQUAL_FATAL(fx.q[0]->nr_cpl, 2);
	CU_ASSERT_EQUAL(ST(fx.q[0]->cpl[1]), NVME_SC_ABORT_SQ_DELETION);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[1].sqhd, cqe.sqhd);
	fx_fini();
}

static void test_changed_ns_log_retained_with_rae(void)
{
	const uint32_t *list;
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN];

	fx_up();
	cfg_small(&cfg);
	CU_ASSERT_EQUAL(ernic_target_add_ns(fx.tgt, &cfg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_CTRL_OAES_NS_ATTR, false, NULL),
			NVME_SC_SUCCESS);
	ernic_target_ns_changed(fx.tgt, 2);
	ernic_target_ns_changed(fx.tgt, 1);
	ernic_target_ns_changed(fx.tgt, 2); /* listed once */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, true), NVME_SC_SUCCESS);
	list = (const uint32_t *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(list[0], 2);
	CU_ASSERT_EQUAL(list[1], 1);
	CU_ASSERT_EQUAL(list[2], 0);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(list[0], 2);
	CU_ASSERT_EQUAL(list[1], 1);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(list[0], 0);
	fx_fini();
}

/* A Get Log Page that fails (LPO past the page) reads nothing, so it clears nothing either. */
static void test_changed_ns_list_survives_a_read_that_fails(void)
{
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN];

	fx_up();
	cfg_small(&cfg);
	CU_ASSERT_EQUAL_FATAL(ernic_target_add_ns_at(fx.tgt, 2, &cfg, NULL, NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 64, 8192, false), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 64, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(((const uint32_t *)fx.q[0]->buf)[0], 2);
	fx_fini();
}

/* Nor does one whose window is valid but whose SGL is too short for it: the transfer is checked before the list is emptied. */
static void test_changed_ns_list_survives_a_read_whose_sgl_is_short(void)
{
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN];
	struct nvme_sqe sqe;
	uint32_t numd = 4096 / 4 - 1;

	fx_up();
	cfg_small(&cfg);
	CU_ASSERT_EQUAL_FATAL(ernic_target_add_ns_at(fx.tgt, 2, &cfg, NULL, NULL, err, sizeof(err)), 0);
	sqe_init(&sqe, NVME_ADMIN_GET_LOG_PAGE, 0x21);
	sqe.cdw10 = NVME_LOG_CHANGED_NS | (numd & 0xFFFF) << 16;
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 64, NULL), NVME_SC_SGL_INVALID_DATA_LEN);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(((const uint32_t *)fx.q[0]->buf)[0], 2);
	CU_ASSERT_EQUAL(((const uint32_t *)fx.q[0]->buf)[1], 0);
	fx_fini();
}

/* Where a 4 KiB Write to @nsid on @q may land straight from the transport (ernic_req_h2c_in_place()). */
static void *h2c_in_place_4k(struct stub_q *q, uint32_t nsid)
{
	struct ernic_req req;

	memset(&req, 0, sizeof(req));
	sqe_init(&req.sqe, NVME_CMD_WRITE, 0x77);
	req.sqe.nsid = nsid;
	nvme_keyed_sgl_set(&req.sqe.dptr, (uintptr_t)q->buf, 4096, 0x100, NVME_SGL_SUBTYPE_ADDRESS);
	req.sq = &q->sq;
	return ernic_req_h2c_in_place(&req, 4096);
}

/*
 * While a removal waits for a queue's namespace memory, no write lands in
 * place, in any namespace: a host whose R2T'd writes overlap would otherwise
 * always have one holding, and the removal would wait as long as it went on.
 * The revoke the removal set on the queue that held past its bound is
 * withdrawn once the removal is done: left standing, it failed that queue's
 * next slow send of namespace memory, long after.
 */
static void test_a_removal_waiting_on_namespace_memory_lets_no_write_land_in_place(void)
{
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN];
	struct remover r = { 0 };
	struct ernic_sq *sq;
	struct nvme_cqe cqe;
	pthread_t thr;

	fx_up();
	cfg_small(&cfg);
	CU_ASSERT_EQUAL_FATAL(ernic_target_add_ns_at(fx.tgt, 2, &cfg, NULL, NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(connect_io(fx.q[1], 1, fx.cntlid, &cqe), NVME_SC_SUCCESS);
	sq = &fx.q[1]->sq;
	CU_ASSERT_PTR_NOT_NULL(h2c_in_place_4k(fx.q[1], 2));
	sq->ns_mem_wait_ns = 20 * 1000000ull;
	ernic_sq_ns_mem_hold(sq);
	r.tgt = fx.tgt;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&thr, NULL, remover_main, &r), 0);
	for (int i = 0; i < 2000 && !atomic_load(&sq->ns_mem_revoke); i++)
		poll(NULL, 0, 1);
	CU_ASSERT_TRUE(atomic_load(&sq->ns_mem_revoke));
	CU_ASSERT_FALSE(atomic_load(&r.done));
	CU_ASSERT_PTR_NULL(h2c_in_place_4k(fx.q[1], 2));
	ernic_sq_ns_mem_release(sq);
	remover_join(&r, thr, 2000);
	CU_ASSERT_FALSE(atomic_load(&sq->ns_mem_revoke));
	CU_ASSERT_PTR_NOT_NULL(h2c_in_place_4k(fx.q[1], 2));
	fx_fini();
}

static void test_changed_ns_list_of_more_than_1024_is_ffffffff_then_zeroes(void)
{
	const uint32_t *list;

	fx_up();
	for (uint32_t nsid = 1; nsid <= NVME_CHANGED_NS_MAX; nsid++)
		ernic_target_ns_changed(fx.tgt, nsid);
	ernic_target_ns_changed(fx.tgt, 5); /* already listed: still fits */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, true), NVME_SC_SUCCESS);
	list = (const uint32_t *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(list[0], 1);
	CU_ASSERT_EQUAL(list[NVME_CHANGED_NS_MAX - 1], NVME_CHANGED_NS_MAX);
	ernic_target_ns_changed(fx.tgt, NVME_CHANGED_NS_MAX + 1);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(list[0], NVME_CHANGED_NS_OVERFLOW);
	for (uint32_t i = 1; i < NVME_CHANGED_NS_MAX; i++)
		CU_ASSERT_EQUAL_FATAL(list[i], 0);
	/* Read with RAE clear: empty again, and a new change is listed by itself */
	ernic_target_ns_changed(fx.tgt, 7);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(list[0], 7);
	CU_ASSERT_EQUAL(list[1], 0);
	fx_fini();
}

/* The log reports what changed whether or not the host enabled the notice (Base 2.0 5.16.1.5). */
static void test_changed_ns_list_is_kept_with_the_notice_disabled(void)
{
	const uint32_t *list;

	fx_up();
	ernic_target_ns_changed(fx.tgt, 1);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, false), NVME_SC_SUCCESS);
	list = (const uint32_t *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(list[0], 1);
	CU_ASSERT_EQUAL(list[1], 0);
	fx_fini();
}

/* After one Namespace Attribute Notice, more wait until the host reads the log with RAE clear (Base 2.0 5.2). */
static void test_ns_attr_notice_is_masked_until_the_log_is_read(void)
{
	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_CTRL_OAES_NS_ATTR, false, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(aer_submit(fx.q[0], 0x0A01, NULL), ERNIC_EXEC_HELD);
	CU_ASSERT_EQUAL(aer_submit(fx.q[0], 0x0A02, NULL), ERNIC_EXEC_HELD);
	ernic_target_ns_changed(fx.tgt, 1);
	CU_ASSERT_EQUAL_FATAL(fx.q[0]->nr_cpl, 1);
	ernic_target_ns_changed(fx.tgt, 1);
	CU_ASSERT_EQUAL(fx.q[0]->nr_cpl, 1);
	/* RAE set keeps the event: still masked */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, true), NVME_SC_SUCCESS);
	ernic_target_ns_changed(fx.tgt, 1);
	CU_ASSERT_EQUAL(fx.q[0]->nr_cpl, 1);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 4096, 0, false), NVME_SC_SUCCESS);
	ernic_target_ns_changed(fx.tgt, 1);
	CU_ASSERT_EQUAL_FATAL(fx.q[0]->nr_cpl, 2);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[1].cid, 0x0A02);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[1].dw0, 0x00040002u);
	fx_fini();
}

static void test_aen_without_aer_is_delivered_by_next_aer(void)
{
	struct nvme_cqe cqe;
	struct ernic_req *req;

	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_CTRL_OAES_NS_ATTR, false, &cqe),
			NVME_SC_SUCCESS);
	ernic_target_ns_changed(fx.tgt, 1);
	CU_ASSERT_EQUAL(aer_submit(fx.q[0], 0x0AE2, &req), ERNIC_EXEC_DONE);
	CU_ASSERT_EQUAL(ST(req->cqe), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(req->cqe.dw0, 0x00040002u);
	CU_ASSERT_EQUAL(req->cqe.cid, 0x0AE2);
	fx_fini();
}

static void test_ns_changed_without_aec_completes_nothing(void)
{
	fx_up();
	CU_ASSERT_EQUAL(aer_submit(fx.q[0], 0x0AE3, NULL), ERNIC_EXEC_HELD);
	ernic_target_ns_changed(fx.tgt, 1);
	CU_ASSERT_EQUAL(fx.q[0]->nr_cpl, 0);
	fx_fini();
	/* fx_fini aborted the held AER through the stub: nothing to check after */
}

/*
 * A Set Features Temperature Threshold that makes Critical Warning bit 1
 * appear completes an AER of type SMART / Health Status, information
 * Temperature Threshold (01h), log page 02h, when the host enabled it in AEC
 * (bits 7:0 are the Critical Warning bits). One until the host reads the
 * SMART log with RAE clear (Base 2.0 5.2), and only when the warning goes
 * from clear to set.
 */
static void test_temperature_threshold_crossing_completes_one_smart_aer_until_the_log_is_read(void)
{
	const uint32_t smart_temp = NVME_AER_DW0(NVME_AER_TYPE_SMART, NVME_AER_SMART_TEMP_THRESH, NVME_LOG_SMART);
	const uint32_t below = 312, wctemp = 343;

	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_AEC_SMART_TEMPERATURE, false, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(aer_submit(fx.q[0], 0x0B01, NULL), ERNIC_EXEC_HELD);
	CU_ASSERT_EQUAL(aer_submit(fx.q[0], 0x0B02, NULL), ERNIC_EXEC_HELD);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, below, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(fx.q[0]->nr_cpl, 1);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[0].cid, 0x0B01);
	CU_ASSERT_EQUAL(ST(fx.q[0]->cpl[0]), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[0].dw0, smart_temp);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[0].dw0, 0x00020101u);
	/* Masked: cleared and set again, nothing; a read with RAE set leaves it masked */
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, wctemp, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, below, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_TRUE(smart_temp_warning());
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, wctemp, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, below, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fx.q[0]->nr_cpl, 1);
	/* Read with RAE clear: rearmed, but a warning that stays set is no new event */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_SMART, 0xFFFFFFFF, 512, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, below - 1, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fx.q[0]->nr_cpl, 1);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, wctemp, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fx.q[0]->nr_cpl, 1);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, below, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(fx.q[0]->nr_cpl, 2);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[1].cid, 0x0B02);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[1].dw0, smart_temp);
	fx_fini();
}

/* Without AEC bit 1 the warning appears in the SMART log only; enabled later, the next crossing is told. */
static void test_temperature_threshold_crossing_without_aec_completes_nothing(void)
{
	fx_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_CTRL_OAES_NS_ATTR, false, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(aer_submit(fx.q[0], 0x0B03, NULL), ERNIC_EXEC_HELD);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, 312, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_TRUE(smart_temp_warning());
	CU_ASSERT_EQUAL(fx.q[0]->nr_cpl, 0);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, 343, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_AEC_SMART_TEMPERATURE, false, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_TEMP_THRESH, 312, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(fx.q[0]->nr_cpl, 1);
	CU_ASSERT_EQUAL(fx.q[0]->cpl[0].dw0, NVME_AER_DW0(NVME_AER_TYPE_SMART, NVME_AER_SMART_TEMP_THRESH, NVME_LOG_SMART));
	fx_fini();
}

static void test_aer_over_aerl_is_aer_limit_exceeded(void)
{
	struct ernic_req *req;

	fx_up();
	for (int i = 0; i < ERNIC_AERL; i++)
		CU_ASSERT_EQUAL(aer_submit(fx.q[0], (uint16_t)(0x100 + i), NULL), ERNIC_EXEC_HELD);
	CU_ASSERT_EQUAL(aer_submit(fx.q[0], 0x1FF, &req), ERNIC_EXEC_DONE);
	CU_ASSERT_EQUAL(ST(req->cqe), NVME_SC_AER_LIMIT_EXCEEDED);
	CU_ASSERT_EQUAL(req->cqe.cid, 0x1FF);
	CU_ASSERT_EQUAL(fx.q[0]->nr_cpl, 0);
	fx_fini();
}

static void test_admin_sq_destroy_aborts_held_aers(void)
{
	fx_up();
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(aer_submit(fx.q[0], (uint16_t)(0x200 + i), NULL), ERNIC_EXEC_HELD);
	q_destroy(fx.q[0]);
	CU_ASSERT_EQUAL_FATAL(fx.q[0]->nr_cpl, 3);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(ST(fx.q[0]->cpl[i]), NVME_SC_ABORT_SQ_DELETION);
		CU_ASSERT_EQUAL(fx.q[0]->cpl[i].cid, 0x200 + i);
	}
	CU_ASSERT_EQUAL(counters()->controllers, 0);
	fx_fini();
}

/* ======================================================= Disconnect, life */

static void test_disconnect_io_queue_detaches_it(void)
{
	struct nvme_sqe sqe;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_io(fx.q[2], 2, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(counters()->io_queues, 2);
	sqe_init(&sqe, NVME_FABRICS_COMMAND, 0xD1);
	((struct nvmf_fabrics_cmd *)&sqe)->fctype = NVMF_FCTYPE_DISCONNECT;
	CU_ASSERT_EQUAL(run(fx.q[1], &sqe, 0, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(counters()->io_queues, 1);
	CU_ASSERT_FALSE(fx.q[1]->sq.connected);
	/* A command still on its way in (a write whose data was being read, say) is aborted, and answered. */
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_ABORT_SQ_DELETION);
	/* QID 1 is free again */
	CU_ASSERT_EQUAL(connect_io(fx.q[3], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(counters()->io_queues, 2);
	CU_ASSERT_EQUAL(counters()->controllers, 1);
	/* The admin queue is not disconnected this way (Fabrics 1.1, 3.4: Invalid Queue Type) */
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 0, NULL), NVME_SC_DISCONNECT_INVALID_QTYPE);
	CU_ASSERT_TRUE(fx.q[0]->sq.connected);
	fx_fini();
}

/*
 * An I/O Connect paused between finding its controller and attaching its
 * queue (ernic_test_hooks), while the main thread takes the controller's
 * last other queue away.
 */
static struct {
	sem_t looked_up, resume;
	struct stub_q *q;
	uint16_t qid, status;
	struct nvme_cqe cqe;
} race;

static void race_pause(struct ernic_req *req)
{
	(void)req;
	sem_post(&race.looked_up);
	while (sem_wait(&race.resume) && errno == EINTR)
		;
}

static void *race_connect(void *arg)
{
	(void)arg;
	race.status = connect_io(race.q, race.qid, fx.cntlid, &race.cqe);
	return NULL;
}

/* Start the paused I/O Connect of @q as @qid; returns once it has looked the controller up. */
static pthread_t race_start(struct stub_q *q, uint16_t qid)
{
	pthread_t t;

	race.q = q;
	race.qid = qid;
	sem_init(&race.looked_up, 0, 0);
	sem_init(&race.resume, 0, 0);
	ernic_test_hooks.io_connect_looked_up = race_pause;
	CU_ASSERT_FATAL(pthread_create(&t, NULL, race_connect, NULL) == 0);
	while (sem_wait(&race.looked_up) && errno == EINTR)
		;
	return t;
}

static void race_finish(pthread_t t)
{
	sem_post(&race.resume);
	pthread_join(t, NULL);
	ernic_test_hooks.io_connect_looked_up = NULL;
	sem_destroy(&race.looked_up);
	sem_destroy(&race.resume);
	/* The controller is gone: refused as an unknown CNTLID, nothing attached */
	CU_ASSERT_EQUAL(race.status, NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(race.cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_DATA, 16));
	CU_ASSERT_FALSE(race.q->sq.connected);
	CU_ASSERT_EQUAL(counters()->controllers, 0);
	CU_ASSERT_EQUAL(counters()->io_queues, 0);
}

static void test_io_connect_racing_the_admin_queue_close_fails_cleanly(void)
{
	pthread_t t;

	fx_up();
	t = race_start(fx.q[1], 1);
	q_destroy(fx.q[0]);
	race_finish(t);
	fx_fini();
}

static void test_io_connect_racing_the_last_io_queue_disconnect_fails_cleanly(void)
{
	struct nvme_sqe sqe;
	pthread_t t;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	q_destroy(fx.q[0]);
	t = race_start(fx.q[2], 2);
	sqe_init(&sqe, NVME_FABRICS_COMMAND, 0xD3);
	((struct nvmf_fabrics_cmd *)&sqe)->fctype = NVMF_FCTYPE_DISCONNECT;
	CU_ASSERT_EQUAL(run(fx.q[1], &sqe, 0, NULL), NVME_SC_SUCCESS);
	race_finish(t);
	fx_fini();
}

static void test_losing_the_admin_queue_makes_the_controller_fatal(void)
{
	struct nvme_cqe cqe;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_SUCCESS);
	q_destroy(fx.q[0]);
	/*
	 * As Linux nvmet: a fatal controller error. Each I/O queue reports it to
	 * its transport, and runs no more commands: a fabric transport closes
	 * the queue unanswered, one with no connection answers Command Aborted
	 * due to SQ Deletion.
	 */
	CU_ASSERT_TRUE(ernic_sq_ctrlr_fatal(&fx.q[1]->sq));
	CU_ASSERT_EQUAL(rw_exec(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096, &cqe), ERNIC_EXEC_CTRLR_FATAL);
	CU_ASSERT_EQUAL(ST(cqe), NVME_SC_ABORT_SQ_DELETION);
	/* No queue joins it any more */
	CU_ASSERT_EQUAL(connect_io(fx.q[2], 2, fx.cntlid, &cqe), NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_DATA, 16));
	CU_ASSERT_FALSE(fx.q[2]->sq.connected);
	CU_ASSERT_EQUAL(counters()->io_queues, 1);
	q_destroy(fx.q[1]);
	CU_ASSERT_EQUAL(counters()->controllers, 0);
	CU_ASSERT_EQUAL(counters()->io_queues, 0);
	fx_fini();
}

static void test_discovery_controller(void)
{
	const struct nvme_id_ctrl *id;
	const struct nvmf_disc_log_hdr *hdr;
	const struct nvmf_disc_log_entry *e;
	struct nvme_cqe cqe;
	uint16_t cntlid;

	fx_init();
	ernic_target_set_port(fx.tgt, NVMF_TRTYPE_TCP, "192.168.7.9", "4421");
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, HOSTNQN, 0, &cqe),
			NVME_SC_SUCCESS);
	cntlid = (uint16_t)cqe.dw0;
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(csts(fx.q[0]) & NVME_CSTS_RDY, NVME_CSTS_RDY);

	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_CTRL, 0, 0x61), NVME_SC_SUCCESS);
	id = (const struct nvme_id_ctrl *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(id->cntrltype, NVME_CTRL_CNTRLTYPE_DISCOVERY);
	CU_ASSERT_STRING_EQUAL(id->subnqn, NVMF_DISC_NQN);
	CU_ASSERT_EQUAL(id->cntlid, cntlid);

	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_DISC, 0, 2048, 0, false), NVME_SC_SUCCESS);
	hdr = (const struct nvmf_disc_log_hdr *)fx.q[0]->buf;
	e = (const struct nvmf_disc_log_entry *)(fx.q[0]->buf + 1024);
	CU_ASSERT_EQUAL(hdr->numrec, 1);
	CU_ASSERT_EQUAL(hdr->recfmt, 0);
	CU_ASSERT_NOT_EQUAL(hdr->genctr, 0);
	CU_ASSERT_EQUAL(e->trtype, NVMF_TRTYPE_TCP);
	/* A Connect may disable SQ flow control (test_connect_disabling_sq_flow_control_stops_sqhd_reports). */
	CU_ASSERT_EQUAL(e->treq, NVMF_TREQ_DISABLE_SQFLOW);
	CU_ASSERT_EQUAL(e->subtype, NVMF_SUBTYPE_NVME);
	CU_ASSERT_EQUAL(e->adrfam, NVMF_ADRFAM_IPV4);
	CU_ASSERT_EQUAL(e->cntlid, NVMF_CNTLID_DYNAMIC);
	CU_ASSERT_STRING_EQUAL(e->subnqn, ERNIC_DEFAULT_SUBNQN);
	CU_ASSERT_EQUAL(memcmp(e->traddr, "192.168.7.9", 11), 0);
	CU_ASSERT(e->traddr[11] == ' ' || e->traddr[11] == '\0');
	CU_ASSERT_EQUAL(memcmp(e->trsvcid, "4421", 4), 0);
	CU_ASSERT(e->trsvcid[4] == ' ' || e->trsvcid[4] == '\0');

	/* No I/O: no I/O queue connects, no I/O log pages, features or namespaces */
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, cntlid, &cqe), NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_DATA, 16));
	CU_ASSERT_EQUAL(counters()->io_queues, 0);
	CU_ASSERT_EQUAL(identify(fx.q[0], NVME_ID_CNS_NS, 1, 0x62), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_SMART, 0, 512, 0, false), NVME_SC_INVALID_LOG_PAGE);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, 0, false, NULL), NVME_SC_INVALID_FIELD);
	/* I/O opcodes on the admin queue: Flush (00h) is no admin command */
	CU_ASSERT_EQUAL(simple(fx.q[0], NVME_CMD_FLUSH, 0x63), NVME_SC_INVALID_OPCODE);
	fx_fini();
}

static void test_discovery_controller_rejects_io_commands_on_an_io_sq(void)
{
	struct nvme_cqe cqe;
	struct ernic_ctrlr *ctrlr;

	fx_init();
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, HOSTNQN, 0, &cqe),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	/* White box: bind an I/O queue to it anyway; the core still refuses I/O */
	ctrlr = fx.q[0]->sq.ctrlr;
	CU_ASSERT_PTR_NOT_NULL_FATAL(ctrlr);
	CU_ASSERT_TRUE(ctrlr->discovery);
	/* A discovery controller grants no I/O queue: past the grant, attach refuses; granted one, it binds */
	CU_ASSERT_EQUAL(ernic_ctrlr_attach_sq(ctrlr, &fx.q[1]->sq, 1, 32), -ERANGE);
	ctrlr->nr_io_queues = 1;
	CU_ASSERT_EQUAL(ernic_ctrlr_attach_sq(ctrlr, &fx.q[1]->sq, 1, 32), 0);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_INVALID_OPCODE);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_WRITE, 1, 0, 1, 4096), NVME_SC_INVALID_OPCODE);
	CU_ASSERT_EQUAL(simple(fx.q[1], NVME_CMD_FLUSH, 0x64), NVME_SC_INVALID_OPCODE);
	CU_ASSERT_EQUAL(simple(fx.q[1], NVME_CMD_DSM, 0x65), NVME_SC_INVALID_OPCODE);
	/* Nor does an I/O queue of it take admin commands */
	CU_ASSERT_EQUAL(identify(fx.q[1], NVME_ID_CNS_CTRL, 0, 0x66), NVME_SC_INVALID_OPCODE);
	CU_ASSERT_EQUAL(fx.q[1]->map_calls, 0);
	CU_ASSERT_EQUAL(counters()->errors[NVME_SC_INVALID_OPCODE], 5);
	fx_fini();
}

/* The fixture with q[0] the enabled admin queue of a discovery controller. */
static void disc_up(void)
{
	fx_init();
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, HOSTNQN, 0, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
}

static void test_discovery_controller_features_are_kato_and_async_event_only(void)
{
	uint32_t dw0 = 0;

	disc_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_KATO, 30000, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 30000);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, NVME_FEAT_SEL_DEFAULT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 0);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_CTRL_OAES_NS_ATTR, false, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_ASYNC_EVENT, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, NVME_CTRL_OAES_NS_ATTR);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, NVME_FEAT_SEL_SUPPORTED, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 1u << 2);
	/* Saveable is refused before the FID is looked at, as on an I/O controller */
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_KATO, 0, true, NULL), NVME_SC_FEATURE_NOT_SAVEABLE);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_VOLATILE_WC, 0, false, NULL), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_VOLATILE_WC, NVME_FEAT_SEL_CURRENT, NULL),
			NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_NUM_QUEUES, NVME_FEAT_SEL_CURRENT, NULL),
			NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(simple(fx.q[0], NVME_ADMIN_KEEP_ALIVE, 0x67), NVME_SC_SUCCESS);
	fx_fini();
}

static void test_discovery_log_page_honours_the_offset_and_zero_fills(void)
{
	const struct nvmf_disc_log_entry *e;

	disc_up();
	/* From LPO 1024: the first record */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_DISC, 0, 1024, 1024, false), NVME_SC_SUCCESS);
	e = (const struct nvmf_disc_log_entry *)fx.q[0]->buf;
	CU_ASSERT_EQUAL(e->subtype, NVMF_SUBTYPE_NVME);
	CU_ASSERT_STRING_EQUAL(e->subnqn, ERNIC_DEFAULT_SUBNQN);
	/* Past the one record the page reads as zeroes */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_DISC, 0, 64, 2048, false), NVME_SC_SUCCESS);
	for (int i = 0; i < 64; i++)
		CU_ASSERT_EQUAL(fx.q[0]->buf[i], 0);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_DISC, 0, 64, 2052, false), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_DISC, 0, 64, 2, false), NVME_SC_INVALID_FIELD);
	/* LPO as an index (OT, CDW14 bit 23): the discovery log has no index either */
	CU_ASSERT_EQUAL(get_log_cdw14(fx.q[0], NVME_LOG_DISC, 0, 1024, 0, false, NVME_LOG_OT), NVME_SC_INVALID_FIELD);
	/* The I/O controller's pages are not a discovery controller's */
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_ERROR, 0, 64, 0, false), NVME_SC_INVALID_LOG_PAGE);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_CHANGED_NS, 0, 64, 0, false), NVME_SC_INVALID_LOG_PAGE);
	fx_fini();
}

/* The discovery controller's MDTS is the limit its log reads are held to: up to it a read works, past it not. */
static void test_discovery_controller_mdts_is_the_limit_of_its_log_reads(void)
{
	struct nvme_sqe sqe;
	uint32_t max;

	disc_up();
	sqe_init(&sqe, NVME_ADMIN_IDENTIFY, 0x70);
	sqe.cdw10 = NVME_ID_CNS_CTRL;
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 4096, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(((const struct nvme_id_ctrl *)fx.q[0]->buf)->mdts, 5);
	max = ERNIC_PAGE_SIZE << 5;
	CU_ASSERT_FATAL(max < STUB_BUF);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_DISC, 0, max, 0, false), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_DISC, 0, max + 4, 0, false), NVME_SC_INVALID_FIELD);
	fx_fini();
}

static void test_discovery_connect_ignores_allow_list(void)
{
	static const char *const allow[] = { HOSTNQN2, NULL };
	struct ernic_backend_cfg cfg;

	cfg_small(&cfg);
	fx_init_cfg(&cfg, allow);
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, HOSTNQN, 0, NULL),
			NVME_SC_SUCCESS);
	fx_fini();
}

static void test_discovery_controllers_never_take_the_slots_of_io_controllers(void)
{
	struct stub_q *disc[ERNIC_MAX_DISC_CTRLRS + 1];
	struct nvme_cqe cqe;

	fx_init();
	for (int i = 0; i <= ERNIC_MAX_DISC_CTRLRS; i++) {
		disc[i] = q_new();
		ernic_sq_init(&disc[i]->sq, fx.tgt, &stub_ops, disc[i]);
		disc[i]->inited = true;
	}
	for (int i = 0; i < ERNIC_MAX_DISC_CTRLRS; i++)
		CU_ASSERT_EQUAL(connect_full(disc[i], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, HOSTNQN, 0, NULL),
				NVME_SC_SUCCESS);
	/* Discovery controllers have a bound of their own... */
	CU_ASSERT_EQUAL(connect_full(disc[ERNIC_MAX_DISC_CTRLRS], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, HOSTNQN,
				     0, NULL),
			NVME_SC_CONNECT_CTRL_BUSY);
	/* ...and a host still gets every I/O controller slot */
	CU_ASSERT_EQUAL(connect_admin(fx.q[0], 0, &cqe), NVME_SC_SUCCESS);
	for (int i = 1; i < FX_QUEUES; i++)
		CU_ASSERT_EQUAL(connect_full(fx.q[i], 0, 31, NVMF_CNTLID_DYNAMIC, ernic_target_subnqn(fx.tgt), HOSTNQN,
					     0, NULL),
				NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(counters()->controllers, ERNIC_MAX_DISC_CTRLRS + FX_QUEUES);
	/* A discovery slot freed is taken again */
	q_destroy(disc[0]);
	CU_ASSERT_EQUAL(connect_full(disc[ERNIC_MAX_DISC_CTRLRS], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, HOSTNQN,
				     0, NULL),
			NVME_SC_SUCCESS);
	for (int i = 0; i <= ERNIC_MAX_DISC_CTRLRS; i++) {
		q_destroy(disc[i]);
		free(disc[i]);
	}
	fx_fini();
}

static void test_io_controllers_are_bounded_apart_from_discovery_controllers(void)
{
	struct stub_q *io[ERNIC_MAX_CTRLRS + 1];

	fx_init();
	for (int i = 0; i <= ERNIC_MAX_CTRLRS; i++) {
		io[i] = q_new();
		ernic_sq_init(&io[i]->sq, fx.tgt, &stub_ops, io[i]);
		io[i]->inited = true;
	}
	for (int i = 0; i < ERNIC_MAX_CTRLRS; i++)
		CU_ASSERT_EQUAL(connect_admin(io[i], 0, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(connect_admin(io[ERNIC_MAX_CTRLRS], 0, NULL), NVME_SC_CONNECT_CTRL_BUSY);
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, HOSTNQN, 0, NULL),
			NVME_SC_SUCCESS);
	for (int i = 0; i <= ERNIC_MAX_CTRLRS; i++) {
		q_destroy(io[i]);
		free(io[i]);
	}
	fx_fini();
}

static void test_discovery_controller_with_kato_zero_gets_the_default_keep_alive_and_expires(void)
{
	struct ernic_ctrlr *ctrlr;
	uint64_t deadline, now;
	uint32_t dw0 = 0;

	disc_up();
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, ERNIC_DISC_KATO_MS);
	CU_ASSERT_EQUAL(dw0, 120000);
	/* White box: the timer runs, due 120 s from the Connect */
	ctrlr = fx.q[0]->sq.ctrlr;
	CU_ASSERT_PTR_NOT_NULL_FATAL(ctrlr);
	deadline = atomic_load(&ctrlr->ka_deadline_ns);
	now = ernic_now_ns();
	CU_ASSERT(deadline > now + 119000000000ull && deadline <= now + 120000000000ull);
	/* Its clock passes the deadline with no Keep Alive: the check declares it fatal */
	ernic_target_check_keep_alive(fx.tgt);
	CU_ASSERT_FALSE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	atomic_store(&ctrlr->ka_deadline_ns, now - 1);
	ernic_target_check_keep_alive(fx.tgt);
	CU_ASSERT_TRUE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	fx_fini();
}

static void test_discovery_controller_keeps_the_kato_its_connect_asks_for(void)
{
	uint32_t dw0 = 0;

	fx_init();
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, HOSTNQN, 30000, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 30000);
	fx_fini();
}

/*
 * Set Features KATO 0 on a discovery controller is the 120 s default, as
 * KATO 0 in its Connect is: it used to switch the timer off, so idle
 * connections could hold every discovery slot for ever. Get Features
 * reports the KATO in force; another value is kept as asked.
 */
static void test_discovery_controller_set_features_kato_zero_keeps_the_default_keep_alive(void)
{
	struct ernic_ctrlr *ctrlr;
	uint64_t deadline, now;
	uint32_t dw0 = 0;

	fx_init();
	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, HOSTNQN, 30000, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_KATO, 0, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, ERNIC_DISC_KATO_MS);
	/* White box: the timer still runs, due 120 s from the Set Features */
	ctrlr = fx.q[0]->sq.ctrlr;
	CU_ASSERT_PTR_NOT_NULL_FATAL(ctrlr);
	deadline = atomic_load(&ctrlr->ka_deadline_ns);
	now = ernic_now_ns();
	CU_ASSERT(deadline > now + 119000000000ull && deadline <= now + 120000000000ull);
	/* The commands so far are traffic the first check sees; past the deadline with none, it expires */
	ernic_target_check_keep_alive(fx.tgt);
	atomic_store(&ctrlr->ka_deadline_ns, now - 1);
	ernic_target_check_keep_alive(fx.tgt);
	CU_ASSERT_TRUE(ernic_sq_ctrlr_fatal(&fx.q[0]->sq));
	fx_fini();

	disc_up();
	CU_ASSERT_EQUAL(set_feat(fx.q[0], NVME_FEAT_KATO, 5000, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_feat(fx.q[0], NVME_FEAT_KATO, NVME_FEAT_SEL_CURRENT, &dw0), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(dw0, 5000);
	fx_fini();
}

/* Records in the discovery log page a discovery controller of @hostnqn reads on q[0]. */
static uint64_t disc_numrec_for(const char *hostnqn)
{
	const struct nvmf_disc_log_hdr *hdr = (const struct nvmf_disc_log_hdr *)fx.q[0]->buf;
	uint64_t numrec;

	CU_ASSERT_EQUAL(connect_full(fx.q[0], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, hostnqn, 0, NULL),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(fx.q[0], NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_DISC, 0, 2048, 0, false), NVME_SC_SUCCESS);
	numrec = hdr->numrec;
	/* Nothing of a record past those counted */
	for (uint32_t i = (uint32_t)(1024 * (1 + numrec)); i < 2048; i++)
		CU_ASSERT_EQUAL(fx.q[0]->buf[i], 0);
	q_destroy(fx.q[0]);
	ernic_sq_init(&fx.q[0]->sq, fx.tgt, &stub_ops, fx.q[0]);
	fx.q[0]->inited = true;
	return numrec;
}

static void test_discovery_log_hides_the_subsystem_from_a_host_not_on_the_allow_list(void)
{
	static const char *const allow[] = { HOSTNQN2, NULL };
	struct ernic_backend_cfg cfg;

	cfg_small(&cfg);
	fx_init_cfg(&cfg, allow);
	CU_ASSERT_EQUAL(disc_numrec_for(HOSTNQN), 0);
	CU_ASSERT_EQUAL(disc_numrec_for(HOSTNQN2), 1);
	fx_fini();
	/* Without an allow list every host sees it */
	fx_init();
	CU_ASSERT_EQUAL(disc_numrec_for(HOSTNQN), 1);
	fx_fini();
}

/* The discovery log as q[0] (an enabled discovery controller) reads it now. */
static const struct nvmf_disc_log_hdr *disc_log(void)
{
	CU_ASSERT_EQUAL(get_log(fx.q[0], NVME_LOG_DISC, 0, 2048, 0, false), NVME_SC_SUCCESS);
	return (const struct nvmf_disc_log_hdr *)fx.q[0]->buf;
}

static void test_discovery_log_address_family_follows_the_port_address(void)
{
	const struct nvmf_disc_log_entry *e;

	disc_up();
	e = (const struct nvmf_disc_log_entry *)(fx.q[0]->buf + 1024);
	ernic_target_set_port(fx.tgt, NVMF_TRTYPE_TCP, "::1", "4420");
	disc_log();
	CU_ASSERT_EQUAL(e->adrfam, NVMF_ADRFAM_IPV6);
	CU_ASSERT_EQUAL(memcmp(e->traddr, "::1 ", 4), 0);
	ernic_target_set_port(fx.tgt, NVMF_TRTYPE_TCP, "fd00:1:2::7", "4420");
	disc_log();
	CU_ASSERT_EQUAL(e->adrfam, NVMF_ADRFAM_IPV6);
	ernic_target_set_port(fx.tgt, NVMF_TRTYPE_TCP, "10.1.2.3", "4420");
	disc_log();
	CU_ASSERT_EQUAL(e->adrfam, NVMF_ADRFAM_IPV4);
	CU_ASSERT_EQUAL(memcmp(e->traddr, "10.1.2.3 ", 9), 0);
	fx_fini();
}

static void test_discovery_log_genctr_changes_with_the_port_and_only_then(void)
{
	uint64_t gen;

	disc_up();
	ernic_target_set_port(fx.tgt, NVMF_TRTYPE_TCP, "192.168.7.9", "4421");
	gen = disc_log()->genctr;
	/* Stable while nothing the log reports changes */
	CU_ASSERT_EQUAL(disc_log()->genctr, gen);
	ernic_target_set_port(fx.tgt, NVMF_TRTYPE_TCP, "192.168.7.9", "4421");
	CU_ASSERT_EQUAL(disc_log()->genctr, gen);
	/* A new address, a new service, a new transport: each a new generation */
	ernic_target_set_port(fx.tgt, NVMF_TRTYPE_TCP, "192.168.7.10", "4421");
	CU_ASSERT_NOT_EQUAL(disc_log()->genctr, gen);
	gen = disc_log()->genctr;
	ernic_target_set_port(fx.tgt, NVMF_TRTYPE_TCP, "192.168.7.10", "4422");
	CU_ASSERT_NOT_EQUAL(disc_log()->genctr, gen);
	gen = disc_log()->genctr;
	ernic_target_set_port(fx.tgt, NVMF_TRTYPE_RDMA, "192.168.7.10", "4422");
	CU_ASSERT_NOT_EQUAL(disc_log()->genctr, gen);
	fx_fini();
}

/* ================================================== a set's shared port */

#define SET_NQN_A "nqn.2026-11.io.ernic:a"

/* A set of subsystems (nvmf.c): subsystem A, allowing @allow (NULL: every host), linked to the first of two ports. */
static struct {
	struct ernic_nvmf *nvmf;
	struct ernic_target *a;
	uint16_t portid[2];
} set;

static void set_up(const char *const *allow)
{
	struct ernic_target_opts a = { .subnqn = SET_NQN_A, .allow_hosts = allow };
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN] = "";

	cfg_small(&cfg);
	memset(&set, 0, sizeof(set));
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_create(&cfg, &set.nvmf, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_subsys_add(set.nvmf, &a, &set.a, err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(ernic_nvmf_port_add(set.nvmf, NVMF_TRTYPE_TCP, "127.0.0.1", i ? "4421" : "4420",
							  &set.portid[i], err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_link(set.nvmf, set.portid[0], SET_NQN_A, err, sizeof(err)), 0);
}

/* A new connection's queue on the set's port @port, on the home target as a transport makes it. */
static struct stub_q *set_q(int port)
{
	struct stub_q *q = q_new();

	ernic_sq_init(&q->sq, ernic_nvmf_home(set.nvmf), &stub_ops, q);
	q->sq.portid = set.portid[port];
	q->inited = true;
	return q;
}

static void set_q_free(struct stub_q *q)
{
	q_destroy(q);
	free(q);
}

static void set_down(void)
{
	ernic_nvmf_destroy(set.nvmf);
	memset(&set, 0, sizeof(set));
}

static uint32_t tgt_controllers(struct ernic_target *tgt)
{
	struct ernic_counters c;

	ernic_target_counters(tgt, &c);
	return c.controllers;
}

/*
 * A Connect refused after it named a subsystem leaves the queue at the
 * port's home target, and a discovery Connect creates its controller there,
 * whatever Connect the queue saw before. The discovery controller used to be
 * created inside the subsystem the refused Connect named: it heard that
 * subsystem's ANA notices and no discovery log change, was counted there,
 * and went with the subsystem's removal.
 */
static void test_a_refused_connect_leaves_the_queue_home_for_a_discovery_connect(void)
{
	static const char *const allow[] = { HOSTNQN2, NULL };
	struct ernic_target *home;
	struct stub_q *q[2];
	struct nvme_cqe cqe;

	set_up(allow);
	home = ernic_nvmf_home(set.nvmf);
	q[0] = set_q(0);
	q[1] = set_q(0);
	/* SQSIZE 0 and a host the subsystem does not allow: refused once the subsystem is found */
	CU_ASSERT_EQUAL(connect_full(q[0], 0, 0, NVMF_CNTLID_DYNAMIC, SET_NQN_A, HOSTNQN2, 0, &cqe),
			NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, disc_dw0(NVMF_CONNECT_IATTR_CMD, 44));
	CU_ASSERT_EQUAL(connect_full(q[1], 0, 31, NVMF_CNTLID_DYNAMIC, SET_NQN_A, HOSTNQN, 0, NULL),
			NVME_SC_CONNECT_INVALID_HOST);
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_PTR_EQUAL(q[i]->sq.tgt, home);
		CU_ASSERT_EQUAL(connect_full(q[i], 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, HOSTNQN, 0, NULL),
				NVME_SC_SUCCESS);
		CU_ASSERT_PTR_EQUAL(q[i]->sq.tgt, home);
		CU_ASSERT_PTR_NOT_NULL_FATAL(q[i]->sq.ctrlr);
		CU_ASSERT_PTR_EQUAL(q[i]->sq.ctrlr->tgt, home);
	}
	CU_ASSERT_EQUAL(tgt_controllers(set.a), 0);
	CU_ASSERT_EQUAL(tgt_controllers(home), 2);
	set_q_free(q[0]);
	set_q_free(q[1]);
	set_down();
}

/*
 * A new queue on the set's port @port, the enabled admin queue of a discovery
 * controller of @hostnqn that asked for Discovery Log Page Change notices and
 * has an AER outstanding.
 */
static struct stub_q *set_disc_listener(int port, const char *hostnqn)
{
	struct stub_q *q = set_q(port);

	CU_ASSERT_EQUAL(connect_full(q, 0, 31, NVMF_CNTLID_DYNAMIC, NVMF_DISC_NQN, hostnqn, 0, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(prop_set(q, NVME_REG_CC, 0, CC_ENABLE), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(set_feat(q, NVME_FEAT_ASYNC_EVENT, NVME_AEC_DISC_CHANGE, false, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(aer_submit(q, 0xAE, NULL), ERNIC_EXEC_HELD);
	q->nr_cpl = 0;
	return q;
}

/*
 * Whether @q's AER completed with a Discovery Log Page Change notice; if so,
 * it reads the log (rearming the notice) and posts another AER.
 */
static bool disc_notified(struct stub_q *q)
{
	bool told = q->nr_cpl == 1 &&
		    q->cpl[0].dw0 == NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_DISC_CHANGED, NVME_LOG_DISC);

	CU_ASSERT(q->nr_cpl <= 1);
	if (told) {
		CU_ASSERT_EQUAL(get_log(q, NVME_LOG_DISC, 0, 4096, 0, false), NVME_SC_SUCCESS);
		CU_ASSERT_EQUAL(aer_submit(q, 0xAE, NULL), ERNIC_EXEC_HELD);
	}
	q->nr_cpl = 0;
	return told;
}

/*
 * A Discovery Log Page Change notice goes to the discovery controllers whose
 * host the changed subsystem allows, through either port, since each port's
 * log lists every port's records; a host it does not allow reads the same
 * records as before (only GENCTR moved) and is not told, as Linux nvmet's
 * nvmet_port_disc_changed() skips it. Every discovery controller was told.
 */
static void test_discovery_log_change_is_announced_only_to_hosts_the_subsystem_allows(void)
{
	static const char *const allow[] = { HOSTNQN, NULL };
	struct stub_q *alice[2], *mallory;
	char err[ERNIC_ERRLEN] = "";
	uint64_t gen;

	set_up(allow);
	alice[0] = set_disc_listener(0, HOSTNQN);
	alice[1] = set_disc_listener(1, HOSTNQN);
	mallory = set_disc_listener(0, HOSTNQN2);
	gen = ernic_nvmf_genctr(set.nvmf);
	CU_ASSERT_EQUAL(ernic_nvmf_link(set.nvmf, set.portid[1], SET_NQN_A, err, sizeof(err)), 0);
	CU_ASSERT_TRUE(disc_notified(alice[0]));
	CU_ASSERT_TRUE(disc_notified(alice[1]));
	CU_ASSERT_FALSE(disc_notified(mallory));
	CU_ASSERT(ernic_nvmf_genctr(set.nvmf) > gen);
	/* Unlinked: the same */
	CU_ASSERT_EQUAL(ernic_nvmf_unlink(set.nvmf, set.portid[1], SET_NQN_A, err, sizeof(err)), 0);
	CU_ASSERT_TRUE(disc_notified(alice[0]));
	CU_ASSERT_TRUE(disc_notified(alice[1]));
	CU_ASSERT_FALSE(disc_notified(mallory));
	CU_ASSERT_EQUAL(ernic_nvmf_port_remove(set.nvmf, set.portid[1], err, sizeof(err)), 0);
	CU_ASSERT_FALSE(disc_notified(alice[0])); /* it listed nothing any more */
	/* A subsystem every host may connect to: each is told */
	CU_ASSERT_EQUAL(ernic_nvmf_subsys_add(set.nvmf, &(struct ernic_target_opts){ .subnqn = SET_NQN_A "-open" },
					      NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ernic_nvmf_link(set.nvmf, set.portid[0], SET_NQN_A "-open", err, sizeof(err)), 0);
	CU_ASSERT_TRUE(disc_notified(alice[0]));
	CU_ASSERT_TRUE(disc_notified(mallory));
	/* Removing the subsystem that allows one host tells that host only */
	CU_ASSERT_EQUAL(ernic_nvmf_subsys_remove(set.nvmf, SET_NQN_A, err, sizeof(err)), 0);
	CU_ASSERT_TRUE(disc_notified(alice[0]));
	CU_ASSERT_FALSE(disc_notified(mallory));
	set_q_free(alice[0]);
	set_q_free(alice[1]);
	set_q_free(mallory);
	set_down();
}

static void test_unknown_admin_opcode_is_invalid_opcode(void)
{
	static const uint8_t opcs[] = { 0x01, 0x04, 0x05, 0x10, 0x80, 0xC0, 0xFF };

	fx_up();
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(opcs); i++)
		CU_ASSERT_EQUAL(simple(fx.q[0], opcs[i], (uint16_t)i), NVME_SC_INVALID_OPCODE);
	CU_ASSERT_EQUAL(counters()->errors[NVME_SC_INVALID_OPCODE], ERNIC_ARRAY_SIZE(opcs));
	fx_fini();
}

static void test_psdt_prp_or_fused_is_invalid_field(void)
{
	struct nvme_sqe sqe;

	fx_up();
	sqe_init(&sqe, NVME_ADMIN_IDENTIFY, 0x71);
	sqe.cdw10 = NVME_ID_CNS_CTRL;
	sqe.flags = 0; /* PSDT 00b: PRPs */
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 4096, NULL), NVME_SC_INVALID_FIELD);
	sqe.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG | 1; /* fused, first */
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 4096, NULL), NVME_SC_INVALID_FIELD);
	sqe.flags = 3u << 6; /* PSDT 11b: reserved */
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 4096, NULL), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(fx.q[0]->map_calls, 1); /* only the Connect's */
	/* On an I/O queue too */
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	ernic_host_rw_sqe(&sqe, NVME_CMD_READ, 1, 0, 1);
	sqe.flags = 0;
	CU_ASSERT_EQUAL(run(fx.q[1], &sqe, 4096, NULL), NVME_SC_INVALID_FIELD);
	fx_fini();
}

static void test_controller_freed_after_all_queues_destroyed(void)
{
	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(counters()->controllers, 1);
	CU_ASSERT_EQUAL(counters()->io_queues, 1);
	/* The admin queue goes first: the association lives on while an I/O queue does */
	q_destroy(fx.q[0]);
	CU_ASSERT_EQUAL(counters()->controllers, 1);
	CU_ASSERT_EQUAL(counters()->io_queues, 1);
	q_destroy(fx.q[1]);
	CU_ASSERT_EQUAL(counters()->controllers, 0);
	CU_ASSERT_EQUAL(counters()->io_queues, 0);
	fx_fini();
}

static void test_counters_survive_queue_destruction(void)
{
	struct ernic_counters *c;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 2, 8192), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_WRITE, 1, 0, 1, 4096), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 7, 0, 1, 4096), NVME_SC_INVALID_NS);
	q_destroy(fx.q[1]);
	q_destroy(fx.q[0]);
	c = counters();
	CU_ASSERT_EQUAL(c->io_cmds[NVME_CMD_READ], 2);
	CU_ASSERT_EQUAL(c->io_cmds[NVME_CMD_WRITE], 1);
	CU_ASSERT_EQUAL(c->io_cmds[NVME_FABRICS_COMMAND], 1);
	CU_ASSERT_EQUAL(c->admin_cmds[NVME_FABRICS_COMMAND], 3); /* Connect, Set CC, Get CSTS */
	CU_ASSERT_EQUAL(c->bytes_read, 8192);
	CU_ASSERT_EQUAL(c->bytes_written, 4096 + 2 * 1024);
	CU_ASSERT_EQUAL(c->io_bytes_read, 8192);
	CU_ASSERT_EQUAL(c->io_bytes_written, 4096);
	CU_ASSERT_EQUAL(c->errors[NVME_SC_INVALID_NS], 1);
	fx_fini();
}

static void test_controller_counters_keep_what_a_disconnected_io_queue_did(void)
{
	struct ernic_counters c;
	struct nvme_sqe sqe;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 2, 8192), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 9, 0, 1, 4096), NVME_SC_INVALID_NS);
	sqe_init(&sqe, NVME_FABRICS_COMMAND, 0xD2);
	((struct nvmf_fabrics_cmd *)&sqe)->fctype = NVMF_FCTYPE_DISCONNECT;
	CU_ASSERT_EQUAL(run(fx.q[1], &sqe, 0, NULL), NVME_SC_SUCCESS);
	/* The queue left the controller but is not destroyed: counted once, by the controller */
	CU_ASSERT_EQUAL(ernic_target_ctrlr_counters(fx.tgt, fx.cntlid, &c), 0);
	CU_ASSERT_EQUAL(c.io_cmds[NVME_CMD_READ], 2);
	CU_ASSERT_EQUAL(c.io_cmds[NVME_FABRICS_COMMAND], 2); /* Connect, Disconnect */
	CU_ASSERT_EQUAL(c.io_bytes_read, 8192);
	CU_ASSERT_EQUAL(c.errors[NVME_SC_INVALID_NS], 1);
	CU_ASSERT_EQUAL(c.io_queues, 0);
	CU_ASSERT_EQUAL(counters()->io_cmds[NVME_CMD_READ], 2);
	/* Destroyed too: the target still counts it once */
	q_destroy(fx.q[1]);
	CU_ASSERT_EQUAL(counters()->io_cmds[NVME_CMD_READ], 2);
	CU_ASSERT_EQUAL(counters()->errors[NVME_SC_INVALID_NS], 1);
	CU_ASSERT_EQUAL(ernic_target_ctrlr_counters(fx.tgt, fx.cntlid, &c), 0);
	CU_ASSERT_EQUAL(c.io_cmds[NVME_CMD_READ], 2);
	fx_fini();
}

/* A request on @q whose keyed SGL describes @sgl_len bytes of the queue's buffer. */
static void req_with_sgl(struct ernic_req *req, struct stub_q *q, uint32_t sgl_len)
{
	memset(req, 0, sizeof(*req));
	req->sq = &q->sq;
	nvme_keyed_sgl_set(&req->sqe.dptr, (uintptr_t)q->buf, sgl_len, 0x100, NVME_SGL_SUBTYPE_ADDRESS);
}

static void test_map_data_exact_refuses_a_longer_sgl_that_atleast_accepts(void)
{
	struct ernic_req req;
	void *buf = NULL;

	fx_init();
	req_with_sgl(&req, fx.q[0], 8192);
	CU_ASSERT_EQUAL(ernic_req_map_data_exact(&req, 4096, NVME_DATA_CTRL_TO_HOST, &buf),
			NVME_SC_SGL_INVALID_DATA_LEN);
	CU_ASSERT_EQUAL(fx.q[0]->map_calls, 0);
	CU_ASSERT_EQUAL(ernic_req_map_data_atleast(&req, 4096, NVME_DATA_CTRL_TO_HOST, &buf), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fx.q[0]->map_calls, 1);
	CU_ASSERT_EQUAL(fx.q[0]->map_len, 4096);
	CU_ASSERT_PTR_EQUAL(buf, fx.q[0]->buf);
	CU_ASSERT_EQUAL(ernic_req_map_data_exact(&req, 8192, NVME_DATA_HOST_TO_CTRL, &buf), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fx.q[0]->map_calls, 2);
	CU_ASSERT_EQUAL(fx.q[0]->map_dir, NVME_DATA_HOST_TO_CTRL);
	fx_fini();
}

static void test_map_data_both_rules_refuse_a_shorter_sgl_before_the_transport(void)
{
	struct ernic_req req;
	void *buf = NULL;

	fx_init();
	req_with_sgl(&req, fx.q[0], 2048);
	CU_ASSERT_EQUAL(ernic_req_map_data_exact(&req, 4096, NVME_DATA_CTRL_TO_HOST, &buf),
			NVME_SC_SGL_INVALID_DATA_LEN);
	CU_ASSERT_EQUAL(ernic_req_map_data_atleast(&req, 4096, NVME_DATA_CTRL_TO_HOST, &buf),
			NVME_SC_SGL_INVALID_DATA_LEN);
	CU_ASSERT_EQUAL(fx.q[0]->map_calls, 0);
	fx_fini();
}

static void test_read_needs_the_exact_sgl_length_identify_a_long_enough_one(void)
{
	struct nvme_sqe sqe;

	fx_up();
	CU_ASSERT_EQUAL(connect_io(fx.q[1], 1, fx.cntlid, NULL), NVME_SC_SUCCESS);
	/* One block read into an SGL of two blocks: exact rule */
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 8192), NVME_SC_SGL_INVALID_DATA_LEN);
	CU_ASSERT_EQUAL(fx.q[1]->map_calls, 1); /* the Connect's only */
	CU_ASSERT_EQUAL(rw(fx.q[1], NVME_CMD_READ, 1, 0, 1, 4096), NVME_SC_SUCCESS);
	/* A 4 KiB Identify page into an 8 KiB SGL: at-least rule, 4 KiB moved */
	sqe_init(&sqe, NVME_ADMIN_IDENTIFY, 0x91);
	sqe.cdw10 = NVME_ID_CNS_CTRL;
	CU_ASSERT_EQUAL(run(fx.q[0], &sqe, 8192, NULL), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(fx.q[0]->map_len, 4096);
	fx_fini();
}

UT_MAIN("ctrlr", UT_CASE(test_connect_admin_returns_dynamic_cntlid_in_dw0),
	UT_CASE(test_identify_controller_mdts_follows_the_backend_string),
	UT_CASE(test_supported_log_pages_lists_exactly_the_pages_get_log_page_returns),
	UT_CASE(test_cmd_effects_log_lists_exactly_the_commands_the_controller_runs),
	UT_CASE(test_cmd_effects_log_of_another_command_set_is_invalid_log_page),
	UT_CASE(test_changed_ns_list_of_more_than_1024_is_ffffffff_then_zeroes),
	UT_CASE(test_changed_ns_list_is_kept_with_the_notice_disabled),
	UT_CASE(test_changed_ns_list_survives_a_read_that_fails), UT_CASE(test_changed_ns_list_survives_a_read_whose_sgl_is_short),
	UT_CASE(test_a_removal_waiting_on_namespace_memory_lets_no_write_land_in_place),
	UT_CASE(test_ns_attr_notice_is_masked_until_the_log_is_read),
	UT_CASE(test_queue_count_changes_are_honoured_on_reconnect),
	UT_CASE(test_two_connects_get_different_cntlids),
	UT_CASE(test_connect_subnqn_mismatch_is_invalid_param_iattr1_ipo256),
	UT_CASE(test_connect_admin_with_static_cntlid_is_invalid_param_ipo16),
	UT_CASE(test_connect_sqsize_zero_is_invalid_param_ipo44),
	UT_CASE(test_connect_recfmt_nonzero_is_incompatible_format),
	UT_CASE(test_connect_host_not_on_allow_list_is_invalid_host),
	UT_CASE(test_connect_sgl_length_not_1024_is_sgl_invalid_data_len),
	UT_CASE(test_second_connect_on_connected_queue_is_cmd_seq_error),
	UT_CASE(test_connect_empty_hostnqn_with_allow_list_is_invalid_param_ipo512),
	UT_CASE(test_connect_empty_hostnqn_without_allow_list_is_accepted),
	UT_CASE(test_io_connect_unknown_cntlid_is_invalid_param_ipo16),
	UT_CASE(test_io_connect_qid_beyond_granted_queues_is_invalid_param_ipo42),
	UT_CASE(test_io_connect_sqsize_over_mqes_is_invalid_param_ipo44),
	UT_CASE(test_connect_disabling_sq_flow_control_stops_sqhd_reports),
	UT_CASE(test_io_connect_before_cc_en_is_cmd_seq_error), UT_CASE(test_io_connect_same_qid_twice_is_cmd_seq_error),
	UT_CASE(test_io_connect_naming_the_discovery_nqn_is_invalid_param_ipo256),
	UT_CASE(test_property_get_cap_mqes_mpsmin_and_8_byte_only),
	UT_CASE(test_property_get_cap_mqes_follows_queue_size_128),
	UT_CASE(test_property_get_vs_at_least_1_3_and_4_byte_only), UT_CASE(test_cc_en_sets_csts_rdy_and_cc_reads_back),
	UT_CASE(test_cc_en_with_bad_iosqes_sets_cfs_not_rdy),
	UT_CASE(test_cc_en_with_ams_other_than_round_robin_sets_cfs_not_rdy),
	UT_CASE(test_an_invalid_cc_is_cfs_without_failing_the_controller_and_a_valid_enable_clears_it),
	UT_CASE(test_cc_shn_sets_csts_shst_complete),
	UT_CASE(test_cc_shn_leaves_the_controller_not_ready_until_a_reset),
	UT_CASE(test_cc_en_1_to_0_clears_rdy), UT_CASE(test_property_set_read_only_property_is_invalid_field),
	UT_CASE(test_admin_and_io_commands_before_cc_en_are_cmd_seq_error),
	UT_CASE(test_unknown_fabrics_fctype_is_invalid_opcode), UT_CASE(test_identify_controller_fields),
	UT_CASE(test_identify_nn_covers_nsids_attached_later_and_inactive_ones_read_as_zeroes),
	UT_CASE(test_identify_namespace_4096),
	UT_CASE(test_identify_namespace_512), UT_CASE(test_identify_active_namespace_list),
	UT_CASE(test_identify_ns_id_descriptors_nguid_uuid_csi),
	UT_CASE(test_subsystems_differing_in_the_last_nqn_character_get_different_nguids), UT_CASE(test_identify_unknown_nsid_is_invalid_ns),
	UT_CASE(test_identify_unknown_cns_is_invalid_field), UT_CASE(test_identify_command_set_specific_nvm_only),
	UT_CASE(test_identify_sgl_shorter_than_page_moves_nothing),
	UT_CASE(test_error_log_lists_failed_commands_newest_first),
	UT_CASE(test_error_log_status_field_matches_the_completion), UT_CASE(test_error_log_records_io_lba_and_sqid),
	UT_CASE(test_smart_log_counts_host_reads_and_writes), UT_CASE(test_smart_data_units_read_count_only_host_reads),
	UT_CASE(test_firmware_slot_log_afi_and_frs1), UT_CASE(test_unknown_log_page_is_invalid_log_page),
	UT_CASE(test_get_log_page_with_offset), UT_CASE(test_get_log_page_of_2_pow_32_dwords_is_invalid_field_not_empty),
	UT_CASE(test_get_log_page_with_offset_type_index_is_invalid_field_for_every_page),
	UT_CASE(test_temperature_threshold_is_kept_per_sensor_and_type_with_wctemp_default),
	UT_CASE(test_smart_temperature_warning_includes_a_threshold_equal_to_the_temperature),
	UT_CASE(test_set_features_num_queues_grants_min_and_reports_0s_based),
	UT_CASE(test_set_features_num_queues_ffff_is_invalid_field),
	UT_CASE(test_set_features_num_queues_after_io_queue_is_cmd_seq_error),
	UT_CASE(test_get_features_round_trips_kato_aec_vwc), UT_CASE(test_unknown_feature_id_is_invalid_field),
	UT_CASE(test_set_features_saveable_bit_is_feature_not_saveable),
	UT_CASE(test_keep_alive_expiry_sets_cfs_and_queue_fatal),
	UT_CASE(test_io_traffic_without_keep_alive_keeps_the_controller_alive),
	UT_CASE(test_keep_alive_before_deadline_prevents_expiry), UT_CASE(test_keep_alive_off_with_kato_zero),
	UT_CASE(test_kato_zero_racing_the_keep_alive_check_leaves_no_deadline),
	UT_CASE(test_aer_held_then_completed_by_ns_changed), UT_CASE(test_a_held_aer_reports_the_sq_head_of_when_it_completes), UT_CASE(test_changed_ns_log_retained_with_rae),
	UT_CASE(test_aen_without_aer_is_delivered_by_next_aer), UT_CASE(test_ns_changed_without_aec_completes_nothing),
	UT_CASE(test_temperature_threshold_crossing_completes_one_smart_aer_until_the_log_is_read),
	UT_CASE(test_temperature_threshold_crossing_without_aec_completes_nothing),
	UT_CASE(test_aer_over_aerl_is_aer_limit_exceeded), UT_CASE(test_admin_sq_destroy_aborts_held_aers),
	UT_CASE(test_disconnect_io_queue_detaches_it),
	UT_CASE(test_io_connect_racing_the_admin_queue_close_fails_cleanly),
	UT_CASE(test_io_connect_racing_the_last_io_queue_disconnect_fails_cleanly),
	UT_CASE(test_losing_the_admin_queue_makes_the_controller_fatal), UT_CASE(test_discovery_controller),
	UT_CASE(test_discovery_controller_rejects_io_commands_on_an_io_sq),
	UT_CASE(test_discovery_controller_features_are_kato_and_async_event_only),
	UT_CASE(test_discovery_log_page_honours_the_offset_and_zero_fills),
	UT_CASE(test_discovery_controller_mdts_is_the_limit_of_its_log_reads),
	UT_CASE(test_discovery_connect_ignores_allow_list),
	UT_CASE(test_discovery_controllers_never_take_the_slots_of_io_controllers),
	UT_CASE(test_io_controllers_are_bounded_apart_from_discovery_controllers),
	UT_CASE(test_discovery_controller_with_kato_zero_gets_the_default_keep_alive_and_expires),
	UT_CASE(test_discovery_controller_keeps_the_kato_its_connect_asks_for),
	UT_CASE(test_discovery_controller_set_features_kato_zero_keeps_the_default_keep_alive),
	UT_CASE(test_discovery_log_hides_the_subsystem_from_a_host_not_on_the_allow_list),
	UT_CASE(test_discovery_log_address_family_follows_the_port_address),
	UT_CASE(test_discovery_log_genctr_changes_with_the_port_and_only_then),
	UT_CASE(test_a_refused_connect_leaves_the_queue_home_for_a_discovery_connect),
	UT_CASE(test_discovery_log_change_is_announced_only_to_hosts_the_subsystem_allows),
	UT_CASE(test_unknown_admin_opcode_is_invalid_opcode),
	UT_CASE(test_psdt_prp_or_fused_is_invalid_field), UT_CASE(test_controller_freed_after_all_queues_destroyed),
	UT_CASE(test_counters_survive_queue_destruction),
	UT_CASE(test_controller_counters_keep_what_a_disconnected_io_queue_did),
	UT_CASE(test_map_data_exact_refuses_a_longer_sgl_that_atleast_accepts),
	UT_CASE(test_map_data_both_rules_refuse_a_shorter_sgl_before_the_transport),
	UT_CASE(test_read_needs_the_exact_sgl_length_identify_a_long_enough_one))
