/* SPDX-License-Identifier: MIT */
/*
 * nvmf_rdma_sgl - the real half of the keyed SGL engine comparison: an
 * NVMe/RDMA host written on librdmacm and libibverbs that runs every case of
 * emulator/tests/keyed_sgl_cases.h against a target over a real RDMA device
 * (the lane: ernicd --transport rdma over soft-RoCE) and checks each outcome
 * against the table the emulated engine is held to (rdma_ut.c).
 *
 * Each case gets a controller of its own: an admin queue (Connect, CC.EN), an
 * I/O queue 1 that first reads the block as it is, then the case's command
 * through a region behind a type 2 memory window, so that the host can
 * invalidate the key (local invalidate) and the target can too (SEND with
 * Invalidate). A refusal takes I/O queue 1 down: the bytes are then checked
 * through an I/O queue 2.
 *
 * Then, when Identify reports an IOCCSZ with room for a block, the
 * in-capsule data cases (icd_cases): writes whose data comes in the SEND
 * after the command (SGL Data Block, offset subtype), each checked for its
 * status and for the block's bytes afterwards.
 *
 * Then Disconnect: refused on the admin queue (Invalid Queue Type), answered on an I/O queue,
 * whose queue pair the target then closes, and the queue id free again.
 * With IDLE_TIMEOUT_S (the target's --idle-timeout), what a queue pair may
 * hold serving no controller: no READ resources offered (rejected), never
 * Connected, and a Disconnect whose answer finds no receive (both closed).
 * With TARGET_PID (the target's process, on this machine), what queue pairs
 * pin there (VmPin): one never Connected only a Connect data's worth per
 * slot and one receive buffer, one Connected its MDTS bounce buffers as well.
 * Always: a Connect naming another QID than its connection request did is
 * refused ("qid: ...", 1 check).
 *
 * With --room N, against a target whose --max-connections is N, only what a
 * full target does ("room: ...", 5 checks): a connection request at the
 * limit takes the place of the oldest queue pair never Connected, which the
 * target closes, unanswered if it sends a Connect at once, and when every
 * place is a queue it is rejected (no resources); discovery queues, open to
 * any host, hold at most half the places.
 *
 * With --budget BYTES, against a target whose --buffer-budget is BYTES, only
 * what its budget does ("budget: ...", 3 checks): the Connects whose queues'
 * bounce buffers fit are accepted, one more is Connect Controller Busy, and
 * its queue pair Connects once another queue has closed.
 *
 * Prints one line per case, "ksgl: <case>: <outcome> (table: <outcome>)",
 * then "ksgl: N/N cases as the table says", "disconnect: <check>: <outcome>"
 * and "disconnect: N/4 checks as expected", "idle: ..." and "idle: N/3 checks
 * as expected" with IDLE_TIMEOUT_S, "pin: ..." and "pin: N/3 checks as
 * expected" with TARGET_PID, then "icd: <case>: <status>
 * (expected: <status>)" and "icd: N/N cases as expected". Exit 0 when all
 * are, 1 when one is not, 2 on bad arguments, 77 when the device cannot bind
 * memory windows.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "ernic/ernic.h"
#include "ernic/nvme_spec.h"
#include "ernic/rdma.h"
#include "keyed_sgl_cases.h"

#define TOOL "nvmf_rdma_sgl"
#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:6b73676c-0000-4000-8000-000000000001"
/* What a second, refused Connect on a connected queue claims to be */
#define OTHER_HOSTNQN "nqn.2014-08.org.example:nvmf-rdma-sgl-other-host"
#define QSIZE 8
#define TIMEOUT_MS 5000
#define CANARY_HOST 0x3A
#define CC_ENABLE (NVME_CC_EN | NVME_CC_NVM_ENTRY_SIZES)

/* One host queue pair: a command buffer, QSIZE response buffers, one CQ. */
struct hq {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *cmd_mr, *rsp_mr;
	struct nvme_sqe cmd;
	struct nvme_cqe rsp[QSIZE];
	uint16_t cid;
	bool dead;
	bool target_closed; /* the target disconnected the queue pair (RDMA_CM_EVENT_DISCONNECTED seen) */
	bool keep_recvs;    /* a receive that took a response is not posted again */
};

/* What a command came back with. */
struct result {
	bool completed; /* a response arrived */
	uint16_t status;
	uint32_t dw0;
	bool with_inv;
	uint32_t inv_rkey;
	const char *why; /* when not completed */
};

static const char *addr_arg, *port_arg, *subnqn;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int cm_wait(struct hq *q, enum rdma_cm_event_type want, char *err, size_t errlen)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd = { .fd = q->ch->fd, .events = POLLIN };
	enum rdma_cm_event_type got;

	if (poll(&pfd, 1, TIMEOUT_MS) <= 0) {
		snprintf(err, errlen, "no RDMA CM event within %d ms (waiting for %s)", TIMEOUT_MS, rdma_event_str(want));
		return -1;
	}
	if (rdma_get_cm_event(q->ch, &ev)) {
		snprintf(err, errlen, "rdma_get_cm_event: %s", strerror(errno));
		return -1;
	}
	got = ev->event;
	if (got == RDMA_CM_EVENT_REJECTED && ev->param.conn.private_data_len >= sizeof(struct nvme_rdma_cm_rej)) {
		const struct nvme_rdma_cm_rej *rej = ev->param.conn.private_data;

		snprintf(err, errlen, "connection rejected, NVMe/RDMA CM status %u", rej->sts);
	} else if (got != want) {
		snprintf(err, errlen, "RDMA CM event %s, not %s", rdma_event_str(got), rdma_event_str(want));
	}
	rdma_ack_cm_event(ev);
	return got == want ? 0 : -1;
}

static void hq_close(struct hq *q)
{
	if (q->id) {
		rdma_disconnect(q->id);
		if (q->id->qp)
			rdma_destroy_qp(q->id);
	}
	if (q->cmd_mr)
		ibv_dereg_mr(q->cmd_mr);
	if (q->rsp_mr)
		ibv_dereg_mr(q->rsp_mr);
	if (q->cq)
		ibv_destroy_cq(q->cq);
	if (q->pd)
		ibv_dealloc_pd(q->pd);
	if (q->id)
		rdma_destroy_id(q->id);
	if (q->ch)
		rdma_destroy_event_channel(q->ch);
	memset(q, 0, sizeof(*q));
}

static int hq_post_recv(struct hq *q, int i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)&q->rsp[i], .length = sizeof(q->rsp[i]), .lkey = q->rsp_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(q->id->qp, &wr, &bad);
}

/*
 * Connect a queue pair for NVMe queue @qid of @entries entries (RDMA binding:
 * the CM private data; this host takes at most QSIZE commands outstanding),
 * offering @ird RDMA READs for the target to have outstanding.
 */
static int hq_open_sized(struct hq *q, uint16_t qid, uint16_t entries, uint8_t ird, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV }, *ai;
	struct nvme_rdma_cm_req req = { .recfmt = NVME_RDMA_CM_FMT_1_0, .qid = qid, .hrqsize = entries,
					.hsqsize = (uint16_t)(entries - 1), .cntlid = NVMF_CNTLID_DYNAMIC };
	/* rnr_retry_count 7: the target's SENDs meet a full receive queue without end, as a hostile host may ask. */
	struct rdma_conn_param param = { .private_data = &req, .private_data_len = sizeof(req),
					 .initiator_depth = RDMA_MAX_INIT_DEPTH,
					 .responder_resources = ird, .retry_count = 7,
					 .rnr_retry_count = 7 };
	struct ibv_qp_init_attr qpa = { .qp_type = IBV_QPT_RC,
					.cap = { .max_send_wr = 16, .max_recv_wr = QSIZE, .max_send_sge = 2,
						 .max_recv_sge = 1 } };
	int rc;

	memset(q, 0, sizeof(*q));
	q->ch = rdma_create_event_channel();
	if (!q->ch || rdma_create_id(q->ch, &q->id, NULL, RDMA_PS_TCP)) {
		snprintf(err, errlen, "cannot create an RDMA CM id: %s", strerror(errno));
		return -1;
	}
	rc = getaddrinfo(addr_arg, port_arg, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "bad address %s:%s: %s", addr_arg, port_arg, gai_strerror(rc));
		return -1;
	}
	rc = rdma_resolve_addr(q->id, NULL, ai->ai_addr, TIMEOUT_MS);
	freeaddrinfo(ai);
	if (rc) {
		snprintf(err, errlen, "rdma_resolve_addr: %s", strerror(errno));
		return -1;
	}
	if (cm_wait(q, RDMA_CM_EVENT_ADDR_RESOLVED, err, errlen))
		return -1;
	if (rdma_resolve_route(q->id, TIMEOUT_MS) || cm_wait(q, RDMA_CM_EVENT_ROUTE_RESOLVED, err, errlen))
		return -1;
	q->pd = ibv_alloc_pd(q->id->verbs);
	q->cq = q->pd ? ibv_create_cq(q->id->verbs, 32, NULL, NULL, 0) : NULL;
	if (!q->cq) {
		snprintf(err, errlen, "cannot allocate a PD and a CQ");
		return -1;
	}
	qpa.send_cq = qpa.recv_cq = q->cq;
	if (rdma_create_qp(q->id, q->pd, &qpa)) {
		snprintf(err, errlen, "rdma_create_qp: %s", strerror(errno));
		return -1;
	}
	q->cmd_mr = ibv_reg_mr(q->pd, &q->cmd, sizeof(q->cmd), 0);
	q->rsp_mr = ibv_reg_mr(q->pd, q->rsp, sizeof(q->rsp), IBV_ACCESS_LOCAL_WRITE);
	if (!q->cmd_mr || !q->rsp_mr) {
		snprintf(err, errlen, "cannot register the capsule buffers");
		return -1;
	}
	for (int i = 0; i < QSIZE; i++)
		if (hq_post_recv(q, i)) {
			snprintf(err, errlen, "cannot post a receive");
			return -1;
		}
	if (rdma_connect(q->id, &param)) {
		snprintf(err, errlen, "rdma_connect: %s", strerror(errno));
		return -1;
	}
	if (cm_wait(q, RDMA_CM_EVENT_ESTABLISHED, err, errlen))
		return -1;
	fcntl(q->ch->fd, F_SETFL, fcntl(q->ch->fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

static int hq_open_ird(struct hq *q, uint16_t qid, uint8_t ird, char *err, size_t errlen)
{
	return hq_open_sized(q, qid, QSIZE, ird, err, errlen);
}

static int hq_open(struct hq *q, uint16_t qid, char *err, size_t errlen)
{
	return hq_open_ird(q, qid, RDMA_MAX_RESP_RES, err, errlen);
}

/* Whether the target has disconnected @q by now (RDMA CM events read without waiting). */
static bool hq_target_closed(struct hq *q)
{
	struct rdma_cm_event *ev;

	while (!q->target_closed && rdma_get_cm_event(q->ch, &ev) == 0) {
		q->target_closed = ev->event == RDMA_CM_EVENT_DISCONNECTED;
		rdma_ack_cm_event(ev);
	}
	return q->target_closed;
}

/*
 * Send @sqe, followed in the same SEND by @icd when there is one (in-capsule
 * data), and wait for its response. A failed work request, a disconnect or
 * silence: not completed, with the reason.
 */
static struct result hq_cmd_icd(struct hq *q, const struct nvme_sqe *sqe, const struct ibv_sge *icd)
{
	struct result res = { 0 };
	struct ibv_sge sge[2] = { { .addr = (uintptr_t)&q->cmd, .length = sizeof(q->cmd), .lkey = q->cmd_mr->lkey } };
	struct ibv_send_wr wr = { .sg_list = sge, .num_sge = icd ? 2 : 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	uint64_t end = now_ms() + TIMEOUT_MS;
	bool sent = false;

	if (icd)
		sge[1] = *icd;
	q->cmd = *sqe;
	q->cmd.cid = ++q->cid;
	if (q->dead || ibv_post_send(q->id->qp, &wr, &bad)) {
		res.why = "queue pair unusable";
		return res;
	}
	while (now_ms() < end) {
		struct ibv_wc wc;
		struct rdma_cm_event *ev;
		int n = ibv_poll_cq(q->cq, 1, &wc);

		/*
		 * The target may answer and then disconnect (a Disconnect's
		 * answer): the response is already in the CQ when the CM event
		 * is read, so look once more before giving up on it.
		 */
		if (n == 0 && q->target_closed) {
			n = ibv_poll_cq(q->cq, 1, &wc);
			if (n == 0) {
				q->dead = true;
				res.why = "target disconnected the queue pair";
				return res;
			}
		}
		if (n == 1) {
			if (wc.status != IBV_WC_SUCCESS) {
				q->dead = true;
				res.why = ibv_wc_status_str(wc.status);
				return res;
			}
			if (wc.opcode == IBV_WC_SEND) {
				sent = true;
			} else if (wc.opcode == IBV_WC_RECV) {
				struct nvme_cqe *cqe = &q->rsp[wc.wr_id];

				res.completed = true;
				res.status = nvme_cqe_status(cqe);
				res.dw0 = cqe->dw0;
				res.with_inv = wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK);
				res.inv_rkey = wc.invalidated_rkey;
				if (!q->keep_recvs)
					hq_post_recv(q, (int)wc.wr_id);
			}
			if (res.completed && sent) {
				q->dead = q->dead || q->target_closed;
				return res;
			}
			continue;
		}
		if (rdma_get_cm_event(q->ch, &ev) == 0) {
			enum rdma_cm_event_type t = ev->event;

			rdma_ack_cm_event(ev);
			if (t == RDMA_CM_EVENT_DISCONNECTED) {
				q->target_closed = true;
				continue;
			}
		}
		usleep(200);
	}
	res.why = "no response";
	return res;
}

static struct result hq_cmd(struct hq *q, const struct nvme_sqe *sqe)
{
	return hq_cmd_icd(q, sqe, NULL);
}

static void sqe_sgl(struct nvme_sqe *sqe, uint64_t addr, uint32_t len, uint32_t rkey, uint8_t subtype)
{
	sqe->flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	nvme_keyed_sgl_set(&sqe->dptr, addr, len, rkey, subtype);
}

/* A buffer registered for the target's RDMA READ and WRITE, as a host's data buffer. */
static struct ibv_mr *reg_buf(struct hq *q, void *buf, size_t len, int extra)
{
	return ibv_reg_mr(q->pd, buf, len,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | extra);
}

/* Connect as @hostnqn to @nqn, its data behind a keyed SGL, or in the capsule when @icd (an I/O queue taking it). */
static uint16_t connect_cmd_as(struct hq *q, const char *hostnqn, const char *nqn, bool icd, uint16_t qid,
			       uint16_t cntlid, uint16_t *out_cntlid, char *err, size_t errlen)
{
	static struct nvmf_connect_data data;
	struct nvme_sqe sqe = { 0 };
	struct nvmf_connect_cmd *cmd = (struct nvmf_connect_cmd *)&sqe;
	struct ibv_mr *mr;
	struct result r;

	memset(&data, 0, sizeof(data));
	data.cntlid = cntlid;
	snprintf(data.subnqn, sizeof(data.subnqn), "%s", nqn);
	snprintf(data.hostnqn, sizeof(data.hostnqn), "%s", hostnqn);
	mr = reg_buf(q, &data, sizeof(data), 0);
	if (!mr) {
		snprintf(err, errlen, "cannot register the Connect data");
		return 0xFFFF;
	}
	cmd->opc = NVME_FABRICS_COMMAND;
	cmd->fctype = NVMF_FCTYPE_CONNECT;
	cmd->qid = qid;
	cmd->sqsize = QSIZE - 1;
	if (icd) {
		struct ibv_sge sge = { .addr = (uintptr_t)&data, .length = sizeof(data), .lkey = mr->lkey };

		sqe.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
		sqe.dptr.unkeyed.length = sizeof(data);
		sqe.dptr.id = NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET);
		r = hq_cmd_icd(q, &sqe, &sge);
	} else {
		sqe_sgl(&sqe, (uintptr_t)&data, sizeof(data), mr->rkey, NVME_SGL_SUBTYPE_ADDRESS);
		r = hq_cmd(q, &sqe);
	}
	ibv_dereg_mr(mr);
	if (!r.completed) {
		snprintf(err, errlen, "Connect qid %u: %s", qid, r.why);
		return 0xFFFF;
	}
	if (r.status)
		snprintf(err, errlen, "Connect qid %u: %s", qid, ernic_status_str(r.status));
	if (out_cntlid)
		*out_cntlid = (uint16_t)r.dw0;
	return r.status;
}

static uint16_t connect_cmd(struct hq *q, uint16_t qid, uint16_t cntlid, uint16_t *out_cntlid, char *err,
			    size_t errlen)
{
	return connect_cmd_as(q, HOSTNQN, subnqn, false, qid, cntlid, out_cntlid, err, errlen);
}

/* An admin queue with CC.EN set, and I/O queue @qid of the same controller. */
static int ctrlr_open(struct hq *admin, struct hq *io, uint16_t qid, uint16_t *cntlid, char *err, size_t errlen)
{
	struct nvme_sqe sqe = { 0 };
	struct nvmf_property_cmd *prop = (struct nvmf_property_cmd *)&sqe;
	struct result r;

	if (hq_open(admin, 0, err, errlen) || connect_cmd(admin, 0, NVMF_CNTLID_DYNAMIC, cntlid, err, errlen))
		return -1;
	prop->opc = NVME_FABRICS_COMMAND;
	prop->fctype = NVMF_FCTYPE_PROPERTY_SET;
	prop->ofst = NVME_REG_CC;
	prop->value = CC_ENABLE;
	sqe_sgl(&sqe, 0, 0, 0, NVME_SGL_SUBTYPE_ADDRESS);
	r = hq_cmd(admin, &sqe);
	if (!r.completed || r.status) {
		snprintf(err, errlen, "Property Set CC.EN: %s", r.completed ? ernic_status_str(r.status) : r.why);
		return -1;
	}
	return hq_open(io, qid, err, errlen) || connect_cmd(io, qid, *cntlid, NULL, err, errlen) ? -1 : 0;
}

static struct result rw_cmd(struct hq *q, uint8_t opc, uint64_t addr, uint32_t rkey, uint8_t subtype)
{
	struct nvme_sqe sqe = { 0 };

	sqe.opc = opc;
	sqe.nsid = 1;
	sqe.cdw10 = KSGL_SLBA;
	sqe.cdw12 = 0; /* one block */
	sqe_sgl(&sqe, addr, KSGL_BLOCK, rkey, subtype);
	return hq_cmd(q, &sqe);
}

/* Read the block through a plain region of @q into @out: 0 or -1. */
static int read_block(struct hq *q, uint8_t *out)
{
	struct ibv_mr *mr = reg_buf(q, out, KSGL_BLOCK, 0);
	struct result r;

	if (!mr)
		return -1;
	r = rw_cmd(q, NVME_CMD_READ, (uintptr_t)out, mr->rkey, NVME_SGL_SUBTYPE_ADDRESS);
	ibv_dereg_mr(mr);
	return r.completed && !r.status ? 0 : -1;
}

/* Bind the type 2 window @mw over [@addr, +@len) of @mr with a fresh key: the new rkey, or 0. */
static uint32_t mw_bind(struct hq *q, struct ibv_mw *mw, struct ibv_mr *mr, void *addr, size_t len)
{
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	uint64_t end = now_ms() + TIMEOUT_MS;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	if (ibv_post_send(q->id->qp, &wr, &bad))
		return 0;
	while (now_ms() < end) {
		if (ibv_poll_cq(q->cq, 1, &wc) == 1)
			return wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW ? rkey : 0;
	}
	return 0;
}

static int local_inv(struct hq *q, uint32_t rkey)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = rkey }, *bad;
	struct ibv_wc wc;
	uint64_t end = now_ms() + TIMEOUT_MS;

	if (ibv_post_send(q->id->qp, &wr, &bad))
		return -1;
	while (now_ms() < end)
		if (ibv_poll_cq(q->cq, 1, &wc) == 1)
			return wc.status == IBV_WC_SUCCESS ? 0 : -1;
	return -1;
}

static bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/*
 * One case: 1 when the outcome and the bytes are as the table says, 0 when
 * not, -1 when the case could not be set up (reported in @err), 77 when the
 * device has no memory windows.
 */
static int run_case(const struct ksgl_case *kc, unsigned int seq, char *line, size_t linelen, char *err,
		    size_t errlen)
{
	static _Alignas(4096) uint8_t region[3 * KSGL_BLOCK], before[KSGL_BLOCK], after[KSGL_BLOCK];
	uint8_t pattern = (uint8_t)(0x40 + seq);
	uint8_t *base = region + KSGL_BLOCK;
	struct hq admin, io, io2 = { 0 };
	struct ibv_mr *mr = NULL;
	struct ibv_mw *mw = NULL;
	uint32_t rkey = 0, key;
	uint64_t addr = (uintptr_t)base;
	struct result r;
	enum ksgl_outcome got;
	uint16_t cntlid = 0;
	bool clean = false;
	const char *inv_seen = NULL;
	int rc = -1;

	memset(&admin, 0, sizeof(admin));
	memset(&io, 0, sizeof(io));
	if (ctrlr_open(&admin, &io, 1, &cntlid, err, errlen))
		goto out;
	if (read_block(&io, before)) {
		snprintf(err, errlen, "reading the block before the case failed");
		goto out;
	}
	/*
	 * The memory region is exactly the window: rxe (6.1) checks an access
	 * through a window against the bounds of the region under it, not the
	 * window's, where an RNIC checks the window's.
	 */
	mr = reg_buf(&io, base, KSGL_BLOCK, IBV_ACCESS_MW_BIND);
	mw = mr ? ibv_alloc_mw(io.pd, IBV_MW_TYPE_2) : NULL;
	rkey = mw ? mw_bind(&io, mw, mr, base, KSGL_BLOCK) : 0;
	if (!rkey) {
		snprintf(err, errlen, "cannot bind a type 2 memory window on this device");
		rc = 77;
		goto out;
	}
	key = rkey;
	switch (kc->fault) {
	case KSGL_NONE:
		break;
	case KSGL_WRONG_KEY:
		key = ibv_inc_rkey(rkey);
		break;
	case KSGL_BEYOND_REGION:
		addr += 512;
		break;
	case KSGL_INVALIDATED:
		if (local_inv(&io, rkey)) {
			snprintf(err, errlen, "local invalidate of the window failed");
			goto out;
		}
		break;
	case KSGL_REMOTE_INVALIDATE:
		memset(base, pattern, KSGL_BLOCK);
		r = rw_cmd(&io, kc->dir == KSGL_HOST_WRITE ? NVME_CMD_WRITE : NVME_CMD_READ, (uintptr_t)base, rkey,
			   NVME_SGL_SUBTYPE_INVALIDATE_KEY);
		if (!r.completed || r.status) {
			snprintf(err, errlen, "the subtype Fh command: %s", r.completed ? ernic_status_str(r.status) : r.why);
			goto out;
		}
		/*
		 * Whether the key died is what the case command shows. The
		 * completion's flag is only reported: rxe (6.1) writes the
		 * kernel's IB_WC_WITH_INVALIDATE bit (1 << 2) where libibverbs
		 * reads IBV_WC_IP_CSUM_OK, not IBV_WC_WITH_INV (1 << 3).
		 */
		inv_seen = r.with_inv ? "SEND with Invalidate flagged" : "SEND with Invalidate not flagged";
		if (read_block(&io, before)) {
			snprintf(err, errlen, "reading the block after the subtype Fh command failed");
			goto out;
		}
		break;
	}
	memset(region, CANARY_HOST, sizeof(region));
	if (kc->dir == KSGL_HOST_WRITE)
		memset(base, pattern, KSGL_BLOCK);
	r = rw_cmd(&io, kc->dir == KSGL_HOST_WRITE ? NVME_CMD_WRITE : NVME_CMD_READ, addr, key,
		   NVME_SGL_SUBTYPE_ADDRESS);
	if (r.completed && r.status) {
		snprintf(line, linelen, "completed with %s, neither moved nor refused", ernic_status_str(r.status));
		rc = 0;
		goto out;
	}
	got = r.completed ? KSGL_MOVED : KSGL_REFUSED;
	if (kc->dir == KSGL_HOST_READ) {
		clean = got == KSGL_MOVED ? !memcmp(base, before, KSGL_BLOCK)
					  : all_bytes(region, sizeof(region), CANARY_HOST);
	} else {
		/* The bytes, through a queue that is still up: I/O queue 2 when the refusal took queue 1. */
		struct hq *check = &io;

		if (!r.completed) {
			if (hq_open(&io2, 2, err, errlen) || connect_cmd(&io2, 2, cntlid, NULL, err, errlen))
				goto out;
			check = &io2;
		}
		if (read_block(check, after)) {
			snprintf(err, errlen, "reading the block back after the case failed");
			goto out;
		}
		clean = got == KSGL_MOVED ? all_bytes(after, KSGL_BLOCK, pattern) : !memcmp(after, before, KSGL_BLOCK);
	}
	snprintf(line, linelen, "%s%s%s (table: %s)%s%s", ksgl_outcome_str(got), r.completed ? "" : ": ",
		 r.completed ? "" : r.why, ksgl_outcome_str(kc->want), inv_seen ? "; first command: " : "",
		 inv_seen ? inv_seen : "");
	if (!clean)
		snprintf(line + strlen(line), linelen - strlen(line), ", but the bytes are not where they should be");
	rc = got == kc->want && clean;
out:
	if (mw)
		ibv_dealloc_mw(mw);
	if (mr)
		ibv_dereg_mr(mr);
	hq_close(&io2);
	hq_close(&io);
	hq_close(&admin);
	return rc;
}

/* In-capsule data: the SGL says @sgl_len bytes at offset @offset of the @sent bytes after the command. */
struct icd_case {
	const char *name;
	uint8_t opc;
	uint64_t offset;
	uint32_t sgl_len, sent;
	uint16_t want; /* the status, without DNR */
};

static const struct icd_case icd_cases[] = {
	{ "write, one block in the capsule", NVME_CMD_WRITE, 0, KSGL_BLOCK, KSGL_BLOCK, NVME_SC_SUCCESS },
	{ "write, offset past the start", NVME_CMD_WRITE, 512, KSGL_BLOCK, KSGL_BLOCK, NVME_SC_SGL_INVALID_OFFSET },
	{ "write, SGL longer than the data sent", NVME_CMD_WRITE, 0, KSGL_BLOCK, KSGL_BLOCK / 2,
	  NVME_SC_SGL_INVALID_OFFSET },
	{ "write, no data after the command", NVME_CMD_WRITE, 0, KSGL_BLOCK, 0, NVME_SC_SGL_INVALID_OFFSET },
	{ "write, SGL shorter than the block", NVME_CMD_WRITE, 0, KSGL_BLOCK / 2, KSGL_BLOCK / 2,
	  NVME_SC_SGL_INVALID_DATA_LEN },
	{ "read into the capsule", NVME_CMD_READ, 0, KSGL_BLOCK, 0, NVME_SC_INVALID_FIELD },
};
#define ICD_NR_CASES (sizeof(icd_cases) / sizeof(icd_cases[0]))

/* Identify Controller's IOCCSZ over @admin, or 0 with @err set. */
static uint32_t identify_ioccsz(struct hq *admin, char *err, size_t errlen)
{
	static struct nvme_id_ctrl id;
	struct nvme_sqe sqe = { .opc = NVME_ADMIN_IDENTIFY, .cdw10 = NVME_ID_CNS_CTRL };
	struct ibv_mr *mr = reg_buf(admin, &id, sizeof(id), 0);
	struct result r;

	if (!mr) {
		snprintf(err, errlen, "cannot register the Identify buffer");
		return 0;
	}
	sqe_sgl(&sqe, (uintptr_t)&id, sizeof(id), mr->rkey, NVME_SGL_SUBTYPE_ADDRESS);
	r = hq_cmd(admin, &sqe);
	ibv_dereg_mr(mr);
	if (!r.completed || r.status) {
		snprintf(err, errlen, "Identify Controller: %s", r.completed ? ernic_status_str(r.status) : r.why);
		return 0;
	}
	return id.ioccsz;
}

/*
 * The in-capsule cases on one controller: each command's status, and the
 * block afterwards: the case's pattern after a write that succeeded, what it
 * was before after any other. Returns how many were as expected, -1 when the
 * controller could not be set up (@err), -2 when it takes no in-capsule data
 * (IOCCSZ 4: a host must not send any, and the queue pair would fail).
 */
static int run_icd_cases(char *err, size_t errlen)
{
	static _Alignas(4096) uint8_t data[KSGL_BLOCK], before[KSGL_BLOCK], after[KSGL_BLOCK];
	struct hq admin = { 0 }, io = { 0 };
	struct ibv_mr *mr = NULL;
	uint16_t cntlid = 0;
	uint32_t ioccsz;
	int ok = -1;

	if (ctrlr_open(&admin, &io, 1, &cntlid, err, errlen))
		goto out;
	ioccsz = identify_ioccsz(&admin, err, errlen);
	if (!ioccsz)
		goto out;
	if (ioccsz < ERNIC_IOCCSZ + KSGL_BLOCK / 16) {
		snprintf(err, errlen, "IOCCSZ %u: the controller takes less than a block of in-capsule data", ioccsz);
		ok = -2;
		goto out;
	}
	mr = ibv_reg_mr(io.pd, data, sizeof(data), IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		snprintf(err, errlen, "cannot register the in-capsule data buffer");
		goto out;
	}
	ok = 0;
	for (unsigned int i = 0; i < ICD_NR_CASES; i++) {
		const struct icd_case *c = &icd_cases[i];
		struct ibv_sge sge = { .addr = (uintptr_t)data, .length = c->sent, .lkey = mr->lkey };
		struct nvme_sqe sqe = { .opc = c->opc, .nsid = 1, .cdw10 = KSGL_SLBA, .flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG };
		uint8_t pattern = (uint8_t)(0x90 + i);
		bool want_written = c->want == NVME_SC_SUCCESS && c->opc == NVME_CMD_WRITE;
		struct result r;
		uint16_t got;
		bool clean;

		if (read_block(&io, before)) {
			printf("icd: %s: could not run: reading the block before the case failed\n", c->name);
			continue;
		}
		memset(data, pattern, sizeof(data));
		sqe.dptr.addr = c->offset;
		sqe.dptr.unkeyed.length = c->sgl_len;
		sqe.dptr.id = NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET);
		r = hq_cmd_icd(&io, &sqe, c->sent ? &sge : NULL);
		if (!r.completed) {
			printf("icd: %s: no completion: %s (expected: %s)  <-- differs\n", c->name, r.why,
			       ernic_status_str(c->want));
			break; /* the queue is gone: nothing after it can run */
		}
		got = r.status & (uint16_t)~NVME_CQE_STATUS_DNR;
		if (read_block(&io, after)) {
			printf("icd: %s: could not run: reading the block back failed\n", c->name);
			continue;
		}
		clean = want_written ? all_bytes(after, KSGL_BLOCK, pattern) : !memcmp(after, before, KSGL_BLOCK);
		printf("icd: %s: %s (expected: %s)%s%s\n", c->name, ernic_status_str(got), ernic_status_str(c->want),
		       clean ? "" : ", but the block is not what it should be", got == c->want && clean ? "" : "  <-- differs");
		fflush(stdout);
		ok += got == c->want && clean;
	}
out:
	if (mr)
		ibv_dereg_mr(mr);
	hq_close(&io);
	hq_close(&admin);
	return ok;
}

/*
 * Disconnect (Fabrics 1.1, 3.4): on the admin queue it is refused (Invalid
 * Queue Type: the admin queue goes with the association). A second Connect
 * on I/O queue 1 naming OTHER_HOSTNQN is refused. On I/O queue 1 it is
 * answered, then the target closes that queue pair, and the controller takes
 * a new I/O queue 1 on a new queue pair. Prints one line per check and
 * returns how many were as expected, -1 when the controller could not be set up.
 */
#define DISC_NR_CHECKS 4
static int run_disconnect_case(char *err, size_t errlen)
{
	static _Alignas(4096) uint8_t block[KSGL_BLOCK];
	struct hq admin = { 0 }, io = { 0 }, io2 = { 0 };
	struct nvme_sqe sqe = { 0 };
	struct nvmf_fabrics_cmd *cmd = (struct nvmf_fabrics_cmd *)&sqe;
	struct result r;
	uint16_t cntlid = 0, got, st;
	char why[256] = "";
	int ok = -1;
	bool icd;

	if (ctrlr_open(&admin, &io, 1, &cntlid, err, errlen))
		goto out;
	ok = 0;
	cmd->opc = NVME_FABRICS_COMMAND;
	cmd->fctype = NVMF_FCTYPE_DISCONNECT;
	sqe_sgl(&sqe, 0, 0, 0, NVME_SGL_SUBTYPE_ADDRESS);

	r = hq_cmd(&admin, &sqe);
	got = r.status & (uint16_t)~NVME_CQE_STATUS_DNR;
	printf("disconnect: on the admin queue: %s (expected: %s)%s\n", r.completed ? ernic_status_str(got) : r.why,
	       ernic_status_str(NVME_SC_DISCONNECT_INVALID_QTYPE),
	       r.completed && got == NVME_SC_DISCONNECT_INVALID_QTYPE ? "" : "  <-- differs");
	ok += r.completed && got == NVME_SC_DISCONNECT_INVALID_QTYPE;

	/*
	 * Refused; the queue's log lines keep naming its own host (phase-rdma.sh
	 * looks for OTHER_HOSTNQN's). In the capsule when the port takes it: a
	 * keyed SGL's data is never read for a command refused up front.
	 */
	why[0] = '\0';
	icd = identify_ioccsz(&admin, why, sizeof(why)) >= ERNIC_IOCCSZ + 1024 / 16;
	st = connect_cmd_as(&io, OTHER_HOSTNQN, subnqn, icd, 1, cntlid, NULL, why, sizeof(why));
	got = st & (uint16_t)~NVME_CQE_STATUS_DNR;
	printf("disconnect: a second Connect on I/O queue 1, naming another host: %s (expected: %s)%s\n",
	       st == 0xFFFF ? why : ernic_status_str(got), ernic_status_str(NVME_SC_CMD_SEQ_ERROR),
	       got == NVME_SC_CMD_SEQ_ERROR ? "" : "  <-- differs");
	ok += got == NVME_SC_CMD_SEQ_ERROR;

	r = hq_cmd(&io, &sqe);
	if (r.completed && !r.status && !io.target_closed)
		io.target_closed = cm_wait(&io, RDMA_CM_EVENT_DISCONNECTED, why, sizeof(why)) == 0;
	printf("disconnect: on I/O queue 1: %s, %s (expected: %s, then closed)%s\n",
	       r.completed ? ernic_status_str(r.status) : r.why,
	       io.target_closed ? "then the target closed the queue pair" : why[0] ? why : "the queue pair stayed open",
	       ernic_status_str(NVME_SC_SUCCESS), r.completed && !r.status && io.target_closed ? "" : "  <-- differs");
	ok += r.completed && !r.status && io.target_closed;

	why[0] = '\0';
	if (hq_open(&io2, 1, why, sizeof(why)) == 0 && connect_cmd(&io2, 1, cntlid, NULL, why, sizeof(why)) == 0 &&
	    read_block(&io2, block))
		snprintf(why, sizeof(why), "a read on it failed");
	printf("disconnect: a new I/O queue 1 of controller %u: %s%s\n", cntlid, why[0] ? why : "connected and read",
	       why[0] ? "  <-- differs" : "");
	ok += !why[0];
out:
	hq_close(&io2);
	hq_close(&io);
	hq_close(&admin);
	return ok;
}

/*
 * What a queue pair may hold without serving a controller, against a target
 * whose idle timeout is @idle_s: a host offering no RDMA READs is rejected
 * (invalid IRD); a queue pair never Connected, and one whose Disconnect's
 * answer finds no receive posted (its SEND retried without end), are each
 * closed by the target within the idle timeout (5 s of slack). Prints one
 * line per check; returns how many were as expected, -1 when the
 * controller could not be set up.
 */
#define IDLE_NR_CHECKS 3
static int run_idle_cases(unsigned int idle_s, char *err, size_t errlen)
{
	struct hq none = { 0 }, never = { 0 }, admin = { 0 }, io = { 0 };
	struct nvme_sqe sqe = { 0 };
	struct nvmf_fabrics_cmd *disc = (struct nvmf_fabrics_cmd *)&sqe;
	uint64_t t0, end;
	uint16_t cntlid = 0;
	char why[256] = "";
	int ok = -1;
	bool refused;

	refused = hq_open_ird(&none, 0, 0, why, sizeof(why)) != 0 && strstr(why, "CM status 7");
	printf("idle: a host offering no RDMA READs: %s (expected: rejected, NVMe/RDMA CM status 7, invalid IRD)%s\n",
	       why[0] ? why : "connected", refused ? "" : "  <-- differs");
	hq_close(&none);

	t0 = now_ms();
	if (hq_open(&never, 0, err, errlen) || ctrlr_open(&admin, &io, 1, &cntlid, err, errlen))
		goto out;
	ok = refused;
	/* Each Flush takes a receive for its answer and none is posted again: the Disconnect's answer finds none. */
	io.keep_recvs = true;
	for (int i = 0; i < QSIZE; i++) {
		struct nvme_sqe flush = { .opc = NVME_CMD_FLUSH, .nsid = 1 };
		struct result r;

		sqe_sgl(&flush, 0, 0, 0, NVME_SGL_SUBTYPE_ADDRESS);
		r = hq_cmd(&io, &flush);
		if (!r.completed || r.status) {
			snprintf(err, errlen, "Flush %d: %s", i, r.completed ? ernic_status_str(r.status) : r.why);
			ok = -1;
			goto out;
		}
	}
	disc->opc = NVME_FABRICS_COMMAND;
	disc->fctype = NVMF_FCTYPE_DISCONNECT;
	sqe_sgl(&sqe, 0, 0, 0, NVME_SGL_SUBTYPE_ADDRESS);
	(void)hq_cmd(&io, &sqe); /* unanswered: the host has no receive posted */
	end = t0 + (idle_s + 5) * 1000ull;
	while (now_ms() < end && !(hq_target_closed(&never) && hq_target_closed(&io)))
		usleep(20000);
	printf("idle: a queue pair never Connected: %s (expected: closed by the target within %u s)%s\n",
	       never.target_closed ? "closed by the target" : "still open", idle_s + 5,
	       never.target_closed ? "" : "  <-- differs");
	printf("idle: a Disconnect whose answer finds no receive posted: %s "
	       "(expected: closed by the target within %u s)%s\n",
	       io.target_closed ? "closed by the target" : "still open", idle_s + 5,
	       io.target_closed ? "" : "  <-- differs");
	ok += never.target_closed + io.target_closed;
out:
	hq_close(&io);
	hq_close(&admin);
	hq_close(&never);
	return ok;
}

/* The target's pinned memory (VmPin, KiB: what its memory registrations hold), or -1. */
static long vm_pin_kib(long pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* VmPin once it holds still for 300 ms (queue pairs of earlier cases are freed by the target's CM thread). */
static long vm_pin_settled(long pid)
{
	long prev = vm_pin_kib(pid), cur;

	for (int i = 0; i < 50; i++) {
		usleep(300000);
		cur = vm_pin_kib(pid);
		if (cur == prev)
			break;
		prev = cur;
	}
	return prev;
}

/*
 * What the target process @pid pins for queue pairs: PIN_NR_QPS never
 * Connected, each at most PIN_MAX_UNCONNECTED_KIB (their slots' Connect-data
 * buffers, receive buffers, responses), where MDTS bounce buffers would be
 * 2 x QSIZE x 128 KiB = 2 MiB; then a Connect on one of them registers those
 * (VmPin grows by at least that), which also shows VmPin counts the target's
 * registrations at all. Then PIN_NR_QPS I/O queue pairs of the target's
 * default queue size, never Connected: each pins its slots' Connect-data
 * buffers and responses and one receive buffer of any in-capsule data size
 * (PIN_MAX_UNCONNECTED_IO_KIB), not a receive buffer per entry (at the
 * lane's 4 KiB of in-capsule data, 128 of 4160 bytes: 520 KiB more). Prints
 * one line per check; returns how many were as expected, -1 when the cases
 * could not run.
 */
#define PIN_NR_CHECKS 3
#define PIN_NR_QPS 8
#define PIN_MAX_UNCONNECTED_KIB 256
#define PIN_IO_QSIZE ERNIC_DEFAULT_QUEUE_SIZE
/* 2 x entries slots of 1 KiB and 16 B, one command with the most in-capsule data, and a page more per registration */
#define PIN_MAX_UNCONNECTED_IO_KIB                                                                                   \
	(2L * PIN_IO_QSIZE * (1024 + 16) / 1024 + (64 + ERNIC_RDMA_MAX_IN_CAPSULE_DATA + 1023) / 1024 + 3 * 4)
static int run_pin_cases(long pid, char *err, size_t errlen)
{
	struct hq qp[PIN_NR_QPS] = { 0 }, io[PIN_NR_QPS] = { 0 };
	long base, unconnected, connected, per_qp, grew, io_base, per_io_qp;
	const long mdts_kib = 2L * QSIZE * (ERNIC_MAX_XFER / 1024);
	uint16_t cntlid;
	int ok = -1;

	base = vm_pin_settled(pid);
	if (base < 0) {
		snprintf(err, errlen, "no VmPin in /proc/%ld/status", pid);
		return -1;
	}
	for (int i = 0; i < PIN_NR_QPS; i++)
		if (hq_open(&qp[i], 0, err, errlen))
			goto out;
	unconnected = vm_pin_settled(pid);
	if (connect_cmd(&qp[0], 0, NVMF_CNTLID_DYNAMIC, &cntlid, err, errlen))
		goto out;
	connected = vm_pin_settled(pid);
	per_qp = (unconnected - base) / PIN_NR_QPS;
	grew = connected - unconnected;
	printf("pin: %d queue pairs never Connected: %ld KiB each (expected: at most %d)%s\n", PIN_NR_QPS, per_qp,
	       PIN_MAX_UNCONNECTED_KIB, per_qp <= PIN_MAX_UNCONNECTED_KIB ? "" : "  <-- differs");
	printf("pin: a Connect on one of them: %ld KiB more (expected: at least %ld, its bounce buffers)%s\n", grew,
	       mdts_kib, grew >= mdts_kib ? "" : "  <-- differs");
	ok = (per_qp <= PIN_MAX_UNCONNECTED_KIB) + (grew >= mdts_kib);
	io_base = connected;
	for (int i = 0; i < PIN_NR_QPS; i++)
		if (hq_open_sized(&io[i], 1, PIN_IO_QSIZE, RDMA_MAX_RESP_RES, err, errlen)) {
			ok = -1;
			goto out;
		}
	per_io_qp = (vm_pin_settled(pid) - io_base) / PIN_NR_QPS;
	printf("pin: %d I/O queue pairs of %d entries never Connected: %ld KiB each (expected: at most %ld, one"
	       " receive buffer)%s\n",
	       PIN_NR_QPS, PIN_IO_QSIZE, per_io_qp, PIN_MAX_UNCONNECTED_IO_KIB,
	       per_io_qp <= PIN_MAX_UNCONNECTED_IO_KIB ? "" : "  <-- differs");
	ok += per_io_qp <= PIN_MAX_UNCONNECTED_IO_KIB;
out:
	for (int i = 0; i < PIN_NR_QPS; i++) {
		hq_close(&qp[i]);
		hq_close(&io[i]);
	}
	return ok;
}

/*
 * A queue pair is sized for the QID of its connection request (an admin
 * queue at most 32 entries): a Connect naming another, here an admin Connect
 * on a queue pair requested as I/O queue 1, is Connect Invalid Parameters.
 */
#define QID_NR_CHECKS 1
static int run_qid_case(char *err, size_t errlen)
{
	struct hq q = { 0 };
	char why[256] = "";
	uint16_t st;
	int ok;

	if (hq_open(&q, 1, err, errlen))
		return -1;
	st = connect_cmd(&q, 0, NVMF_CNTLID_DYNAMIC, NULL, why, sizeof(why));
	ok = st == NVME_SC_CONNECT_INVALID_PARAM;
	printf("qid: an admin Connect on a queue pair requested for I/O queue 1: %s (expected: %s)%s\n",
	       st == 0xFFFF ? why : ernic_status_str(st), ernic_status_str(NVME_SC_CONNECT_INVALID_PARAM),
	       ok ? "" : "  <-- differs");
	hq_close(&q);
	return ok;
}

#define ROOM_NR_CHECKS 5
#define ROOM_MAX 8

/* A connection request, again while the target rejects it (a place it has yet to free), for up to 2 s. */
static int hq_open_retry(struct hq *q, char *err, size_t errlen)
{
	uint64_t end = now_ms() + 2000;
	int rc;

	while ((rc = hq_open(q, 0, err, errlen)) && now_ms() < end) {
		hq_close(q);
		usleep(50000);
	}
	return rc;
}

/*
 * Discovery Connects, open to any host, at an empty target of @places (2 or
 * more) places: half of them are accepted, one more is Connect Controller
 * Busy. Kept-alive discovery controllers would otherwise hold every place of
 * a small port, and queues are never evicted.
 */
static bool room_discovery_case(unsigned int places, char *err, size_t errlen)
{
	unsigned int admitted = places / 2;
	struct hq d[ROOM_MAX / 2 + 1] = { 0 };
	char why[256] = "";
	uint16_t st = 0xFFFF;
	bool ok = false, ran = false;

	for (unsigned int nr = 0; nr <= admitted; nr++) {
		if (hq_open_retry(&d[nr], err, errlen))
			goto out;
		st = connect_cmd_as(&d[nr], OTHER_HOSTNQN, NVMF_DISC_NQN, false, 0, NVMF_CNTLID_DYNAMIC, NULL, why,
				    sizeof(why));
		if (nr < admitted && st) {
			snprintf(err, errlen, "discovery Connect %u of %u: %.200s", nr + 1, admitted, why);
			goto out;
		}
	}
	ok = st == NVME_SC_CONNECT_CTRL_BUSY;
	printf("room: discovery Connect %u with %u places: %s (expected: %s)%s\n", admitted + 1, places,
	       st == 0xFFFF ? why : st ? ernic_status_str(st) : "accepted", ernic_status_str(NVME_SC_CONNECT_CTRL_BUSY),
	       ok ? "" : "  <-- differs");
	ran = true;
out:
	if (!ran)
		printf("room: discovery Connects with %u places: could not run: %s  <-- differs\n", places, err);
	for (unsigned int i = 0; i <= admitted; i++)
		hq_close(&d[i]);
	return ok;
}

/*
 * Against a target serving at most @places queue pairs: @places queue pairs
 * never Connected fill it; one more is accepted, and a Connect sent at once
 * on the oldest of the others, whose place it took, is not answered (else a
 * host could go past the limit one eviction at a time): the target closes
 * that queue pair (within its check period, 2 s of slack). The newcomer
 * Connects; once every place is a queue, one more is rejected with
 * NVMe/RDMA CM status 6 (no resources). Then, every queue closed, discovery
 * queues hold at most half the places (room_discovery_case()).
 */
static int run_room_cases(unsigned int places, char *err, size_t errlen)
{
	struct hq q[ROOM_MAX + 2] = { 0 };
	char why[256] = "", evicted_why[256] = "";
	uint16_t cntlid;
	uint64_t end;
	bool newcomer, evicted_unanswered, oldest_closed, rejected;
	uint16_t st;
	int ok = -1;

	for (unsigned int i = 0; i < places; i++)
		if (hq_open(&q[i], 0, err, errlen))
			goto out;
	newcomer = hq_open(&q[places], 0, why, sizeof(why)) == 0;
	st = connect_cmd(&q[0], 0, NVMF_CNTLID_DYNAMIC, NULL, evicted_why, sizeof(evicted_why));
	evicted_unanswered = st == 0xFFFF;
	printf("room: a Connect at once on the queue pair whose place it took: %s (expected: not answered)%s\n",
	       evicted_unanswered ? "not answered" : st ? evicted_why : "accepted",
	       evicted_unanswered ? "" : "  <-- differs");
	newcomer = newcomer && connect_cmd(&q[places], 0, NVMF_CNTLID_DYNAMIC, &cntlid, why, sizeof(why)) == 0;
	printf("room: a connection request at a full target, then its Connect: %s (expected: accepted)%s\n",
	       newcomer ? "accepted" : why, newcomer ? "" : "  <-- differs");
	end = now_ms() + 2000;
	while (now_ms() < end && !hq_target_closed(&q[0]))
		usleep(20000);
	oldest_closed = hq_target_closed(&q[0]);
	printf("room: the oldest queue pair never Connected: %s (expected: closed by the target)%s\n",
	       oldest_closed ? "closed by the target" : "still open", oldest_closed ? "" : "  <-- differs");
	/* Every other place becomes a queue: each its own admin queue. */
	for (unsigned int i = 1; i < places; i++)
		if (connect_cmd(&q[i], 0, NVMF_CNTLID_DYNAMIC, &cntlid, err, errlen))
			goto out;
	why[0] = '\0';
	rejected = hq_open(&q[places + 1], 0, why, sizeof(why)) != 0 && strstr(why, "CM status 6");
	printf("room: a connection request with every place a queue: %s (expected: rejected, NVMe/RDMA CM status 6,"
	       " no resources)%s\n",
	       why[0] ? why : "accepted", rejected ? "" : "  <-- differs");
	for (unsigned int i = 0; i < places + 2; i++)
		hq_close(&q[i]);
	ok = newcomer + evicted_unanswered + oldest_closed + rejected + room_discovery_case(places, err, errlen);
out:
	for (unsigned int i = 0; i < places + 2; i++)
		hq_close(&q[i]);
	return ok;
}

#define BUDGET_NR_CHECKS 3
#define BUDGET_MAX_QUEUES 32
/* What one of these queue pairs reserves at its Connect: 2 x QSIZE bounce buffers of one MDTS transfer. */
#define BUDGET_QUEUE_BYTES (2ull * QSIZE * ERNIC_MAX_XFER)

/*
 * Against a target whose --buffer-budget is @budget bytes: as many admin
 * queues Connect as their bounce buffers fit (@budget / BUDGET_QUEUE_BYTES),
 * one more is Connect Controller Busy, and its queue pair, still open,
 * Connects once another queue has closed (the target frees a closed queue's
 * reservation when it reaps it: the Connect is tried again for up to 2 s).
 */
static int run_budget_cases(uint64_t budget, char *err, size_t errlen)
{
	unsigned int fit = (unsigned int)(budget / BUDGET_QUEUE_BYTES), accepted = 0;
	struct hq q[BUDGET_MAX_QUEUES + 1] = { 0 };
	char why[256] = "";
	uint16_t st = 0xFFFF;
	bool all_fit, refused, again = false;
	uint64_t end;
	int ok = -1;

	if (fit < 2 || fit > BUDGET_MAX_QUEUES) {
		snprintf(err, errlen, "a budget of %" PRIu64 " bytes holds %u queues of %llu bytes, not 2..%d", budget, fit,
			 BUDGET_QUEUE_BYTES, BUDGET_MAX_QUEUES);
		return -1;
	}
	for (unsigned int i = 0; i <= fit; i++)
		if (hq_open_retry(&q[i], err, errlen))
			goto out;
	for (unsigned int i = 0; i < fit; i++)
		accepted += connect_cmd(&q[i], 0, NVMF_CNTLID_DYNAMIC, NULL, why, sizeof(why)) == 0;
	all_fit = accepted == fit;
	printf("budget: %u Connects whose bounce buffers fit: %u accepted (expected: %u)%s\n", fit, accepted, fit,
	       all_fit ? "" : "  <-- differs");
	st = connect_cmd(&q[fit], 0, NVMF_CNTLID_DYNAMIC, NULL, why, sizeof(why));
	refused = st == NVME_SC_CONNECT_CTRL_BUSY;
	printf("budget: one more: %s (expected: %s)%s\n", st == 0xFFFF ? why : st ? ernic_status_str(st) : "accepted",
	       ernic_status_str(NVME_SC_CONNECT_CTRL_BUSY), refused ? "" : "  <-- differs");
	hq_close(&q[0]);
	end = now_ms() + 2000;
	while (!again && now_ms() < end) {
		usleep(50000);
		st = connect_cmd(&q[fit], 0, NVMF_CNTLID_DYNAMIC, NULL, why, sizeof(why));
		again = st == 0;
		if (st != 0 && st != NVME_SC_CONNECT_CTRL_BUSY)
			break;
	}
	printf("budget: its queue pair, once another queue closed: %s (expected: accepted)%s\n",
	       again ? "accepted" : st == 0xFFFF ? why : ernic_status_str(st), again ? "" : "  <-- differs");
	ok = all_fit + refused + again;
out:
	for (unsigned int i = 0; i <= fit; i++)
		hq_close(&q[i]);
	return ok;
}

/* A group's summary line, "NAME: OK/NR checks as expected", after why it could not run (@ok < 0); whether all were. */
static bool checks_report(const char *name, int ok, int nr, const char *err)
{
	if (ok < 0)
		printf("%s: could not run: %s\n", name, err);
	printf("%s: %d/%d checks as expected\n", name, ok < 0 ? 0 : ok, nr);
	fflush(stdout);
	return ok == nr;
}

int main(int argc, char **argv)
{
	unsigned int ok = 0;
	char icd_err[256] = "", disc_err[256] = "";
	int icd_ok, disc_ok;
	bool all;

	unsigned int idle_s = 0;
	long target_pid = 0;
	char *end;

	if (argc == 6 && !strcmp(argv[1], "--room")) {
		unsigned long places = strtoul(argv[2], &end, 10);
		char room_err[256] = "";

		if (*end || places < 2 || places > ROOM_MAX) {
			fprintf(stderr, TOOL ": --room %s: not the target's --max-connections (2..%d)\n", argv[2],
				ROOM_MAX);
			return 2;
		}
		addr_arg = argv[3];
		port_arg = argv[4];
		subnqn = argv[5];
		return checks_report("room", run_room_cases((unsigned int)places, room_err, sizeof(room_err)),
				     ROOM_NR_CHECKS, room_err)
			       ? 0
			       : 1;
	}
	if (argc == 6 && !strcmp(argv[1], "--budget")) {
		unsigned long long budget = strtoull(argv[2], &end, 10);
		char budget_err[256] = "";

		if (*end || !budget) {
			fprintf(stderr, TOOL ": --budget %s: not the target's --buffer-budget in bytes\n", argv[2]);
			return 2;
		}
		addr_arg = argv[3];
		port_arg = argv[4];
		subnqn = argv[5];
		return checks_report("budget", run_budget_cases(budget, budget_err, sizeof(budget_err)), BUDGET_NR_CHECKS,
				     budget_err)
			       ? 0
			       : 1;
	}
	if (argc < 4 || argc > 6 || !strcmp(argv[1], "--help")) {
		fprintf(stderr, "Usage: " TOOL " ADDR PORT SUBNQN [IDLE_TIMEOUT_S [TARGET_PID]]\n"
				"       " TOOL " --room N ADDR PORT SUBNQN\n"
				"       " TOOL " --budget BYTES ADDR PORT SUBNQN\n");
		return 2;
	}
	if (argc == 6) {
		target_pid = strtol(argv[5], &end, 10);
		if (*end || target_pid <= 0) {
			fprintf(stderr, TOOL ": TARGET_PID=%s: not a process id\n", argv[5]);
			return 2;
		}
	}
	if (argc >= 5) {
		idle_s = (unsigned int)strtoul(argv[4], &end, 10);
		if (*end || !idle_s || idle_s > 60) {
			fprintf(stderr, TOOL ": IDLE_TIMEOUT_S=%s: not the target's idle timeout in seconds (1..60)\n",
				argv[4]);
			return 2;
		}
	}
	addr_arg = argv[1];
	port_arg = argv[2];
	subnqn = argv[3];
	for (unsigned int i = 0; i < KSGL_NR_CASES; i++) {
		char line[256] = "", err[256] = "";
		int rc = run_case(&ksgl_cases[i], i, line, sizeof(line), err, sizeof(err));

		if (rc == 77) {
			printf("ksgl: %s: skipped: %s\n", ksgl_cases[i].name, err);
			return 77;
		}
		if (rc < 0)
			printf("ksgl: %s: could not run: %s\n", ksgl_cases[i].name, err);
		else
			printf("ksgl: %s: %s%s\n", ksgl_cases[i].name, line, rc ? "" : "  <-- differs");
		fflush(stdout);
		ok += rc == 1;
	}
	printf("ksgl: %u/%zu cases as the table says\n", ok, KSGL_NR_CASES);
	disc_ok = run_disconnect_case(disc_err, sizeof(disc_err));
	all = ok == KSGL_NR_CASES && checks_report("disconnect", disc_ok, DISC_NR_CHECKS, disc_err);
	{
		char qid_err[256] = "";

		all = checks_report("qid", run_qid_case(qid_err, sizeof(qid_err)), QID_NR_CHECKS, qid_err) && all;
	}
	if (idle_s) {
		char idle_err[256] = "";
		int idle_ok = run_idle_cases(idle_s, idle_err, sizeof(idle_err));

		all = checks_report("idle", idle_ok, IDLE_NR_CHECKS, idle_err) && all;
	}
	if (target_pid) {
		char pin_err[256] = "";
		int pin_ok = run_pin_cases(target_pid, pin_err, sizeof(pin_err));

		all = checks_report("pin", pin_ok, PIN_NR_CHECKS, pin_err) && all;
	}
	icd_ok = run_icd_cases(icd_err, sizeof(icd_err));
	if (icd_ok == -2) {
		printf("icd: cases skipped: %s\n", icd_err);
		return all ? 0 : 1;
	}
	if (icd_ok < 0)
		printf("icd: could not run: %s\n", icd_err);
	printf("icd: %d/%zu cases as expected\n", icd_ok < 0 ? 0 : icd_ok, ICD_NR_CASES);
	return all && icd_ok == (int)ICD_NR_CASES ? 0 : 1;
}
