/* SPDX-License-Identifier: MIT */
/*
 * host.c - the host side of the in-process capsule path: an initiator that
 * brings a controller up the way a stock nvme-rdma host does
 * (register_always: a pool of queue_size memory regions per queue, allocated
 * at connect), and submits I/O with one fast registration and one keyed SGL
 * per command.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inproc.h"

#define HOST_ADMIN_TIMEOUT_NS 10000000000ull
#define HOST_READY_TIMEOUT_NS 5000000000ull

struct ernic_host_slot {
	void *ctx;
	uint32_t mr_handle;
	uint32_t rkey;
	bool mr_valid;
	bool sampled;	/* its command carries stage stamps */
	bool abandoned; /* ernic_host_admin() gave up on it: its completion only frees the CID */
};

/*
 * Stage times of a queue's sampled commands. One writer (the thread that
 * reaps the queue), readers anywhere: relaxed atomics, plain moves on x86.
 */
struct ernic_host_stage_acc {
	_Atomic uint64_t samples;
	_Atomic uint64_t sum_ns[ERNIC_STAGE_COUNT];
	_Atomic uint64_t max_ns[ERNIC_STAGE_COUNT];
};

struct ernic_host_qpair {
	struct ernic_host_ctrlr *hc;
	struct ernic_inproc_qpair *tq;
	struct ernic_mr_table *mr;
	uint16_t qid;
	uint32_t depth;
	uint32_t sq_tail;
	uint32_t cq_head;
	uint32_t nr_free;
	uint16_t *free_cids;
	struct ernic_host_slot *slots;
	/*
	 * Completions ernic_host_admin() reaped that were not its own (an AER
	 * that fired meanwhile), handed out first by the next ernic_host_poll().
	 * One per outstanding command at most, so @depth entries.
	 */
	struct ernic_host_cpl *held;
	uint32_t nr_held;
	uint32_t nr_mrs; /* regions allocated so far for this queue's pool */
	/* Commands until the next sampled one; UINT64_MAX (never, in practice) when off. */
	uint64_t sample_left;
	uint32_t sample_every;
	struct ernic_host_stage_acc stages;
};

struct ernic_host_ctrlr {
	struct ernic_inproc_port *port;
	struct ernic_target *tgt;
	struct ernic_host_qpair admin;
	struct ernic_host_qpair *io;
	uint32_t nr_io;
	uint16_t cntlid;
	uint32_t queue_size;
	uint32_t kato_ms;
	uint64_t cap; /* read by the enable step; MQES bounds the I/O queue depth */
	pthread_mutex_t admin_lock;
	struct nvme_id_ctrl id;
	struct nvmf_connect_data connect_data;
};

/* ----------------------------------------------------------------- qpairs */

static void host_qpair_fini(struct ernic_host_qpair *qp)
{
	if (qp->tq)
		ernic_inproc_qpair_destroy(qp->tq);
	qp->tq = NULL;
	for (uint32_t i = 0; i < qp->nr_mrs; i++)
		ernic_mr_destroy(qp->mr, qp->slots[i].mr_handle);
	qp->nr_mrs = 0;
	free(qp->slots);
	free(qp->free_cids);
	free(qp->held);
	qp->slots = NULL;
	qp->free_cids = NULL;
	qp->held = NULL;
}

/*
 * The transport queue and its MR pool, as nvme_rdma_create_queue_ib() does
 * before the Connect capsule is sent. The pool is allocated in the transport
 * queue's protection domain, so the queue reaches its own regions only.
 */
static int host_qpair_init(struct ernic_host_ctrlr *hc, struct ernic_host_qpair *qp, uint16_t qid,
			   uint32_t depth, char *err, size_t errlen)
{
	memset(qp, 0, sizeof(*qp));
	qp->hc = hc;
	qp->qid = qid;
	qp->depth = depth;
	qp->mr = ernic_inproc_port_mr_table(hc->port);
	qp->sample_left = UINT64_MAX;
	qp->slots = calloc(depth, sizeof(*qp->slots));
	qp->free_cids = calloc(depth, sizeof(*qp->free_cids));
	qp->held = calloc(depth, sizeof(*qp->held));
	if (!qp->slots || !qp->free_cids || !qp->held) {
		snprintf(err, errlen, "out of memory for QID %u", qid);
		host_qpair_fini(qp);
		return -ENOMEM;
	}
	qp->tq = ernic_inproc_qpair_create(hc->port, depth, qid);
	if (!qp->tq) {
		snprintf(err, errlen, "cannot create the transport queue for QID %u", qid);
		host_qpair_fini(qp);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < depth; i++) {
		int rc = ernic_mr_alloc(qp->mr, qp->tq->pd, &qp->slots[i].mr_handle);

		if (rc) {
			snprintf(err, errlen, "failed to initialize MR pool sized %u for QID %u", depth, qid);
			host_qpair_fini(qp);
			return rc;
		}
		qp->nr_mrs++;
	}
	/* CIDs pop from the top: 0 first. */
	for (uint32_t i = 0; i < depth; i++)
		qp->free_cids[i] = (uint16_t)(depth - 1 - i);
	qp->nr_free = depth;
	return 0;
}

static uint32_t data_access(const struct nvme_sqe *sqe)
{
	switch (nvme_sqe_data_dir(sqe)) {
	case NVME_DATA_HOST_TO_CTRL:
		return ERNIC_MR_REMOTE_READ;
	case NVME_DATA_CTRL_TO_HOST:
		return ERNIC_MR_REMOTE_WRITE | ERNIC_MR_LOCAL_WRITE;
	default:
		return ERNIC_MR_REMOTE_READ | ERNIC_MR_REMOTE_WRITE | ERNIC_MR_LOCAL_WRITE;
	}
}

/* ernic_host_submit(), and the CID the command took in @cid_out. */
static int host_submit(struct ernic_host_qpair *qp, const struct nvme_sqe *sqe, void *buf, uint32_t len, void *ctx,
		       uint16_t *cid_out)
{
	struct ernic_inproc_qpair *tq = qp->tq;
	struct ernic_host_slot *slot;
	struct nvme_sqe *dst;
	uint64_t t_submit = 0;
	uint16_t cid;

	if (ERNIC_UNLIKELY(!qp->nr_free))
		return -EBUSY;
	if (ERNIC_UNLIKELY(atomic_load_explicit(&tq->lost, memory_order_relaxed)))
		return -ENOTCONN;
	if (ERNIC_UNLIKELY(len > NVME_KEYED_SGL_MAX_LEN))
		return -EINVAL;
	/*
	 * The clock is read before the registration, which the host driver
	 * stage includes; the count moves only once the command goes out
	 * (below), so 1 in N is of the commands that do.
	 */
	if (ERNIC_UNLIKELY(qp->sample_left == 1))
		t_submit = ernic_now_ns();
	cid = qp->free_cids[qp->nr_free - 1];
	slot = &qp->slots[cid];
	dst = &tq->sq_ring[qp->sq_tail & tq->mask];
	*dst = *sqe;
	dst->cid = cid;
	dst->flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	if (len) {
		uint32_t rkey;
		int rc;

		/* FRWR: a new key for every registration, so a stale rkey can never hit. */
		rc = ernic_mr_fast_reg(qp->mr, slot->mr_handle, buf, len, data_access(sqe), &rkey);
		if (ERNIC_UNLIKELY(rc))
			return rc;
		slot->rkey = rkey;
		slot->mr_valid = true;
		nvme_keyed_sgl_set(&dst->dptr, (uint64_t)(uintptr_t)buf, len, rkey,
				   NVME_SGL_SUBTYPE_INVALIDATE_KEY);
	} else {
		nvme_keyed_sgl_set(&dst->dptr, 0, 0, 0, NVME_SGL_SUBTYPE_ADDRESS);
	}
	slot->ctx = ctx;
	slot->abandoned = false;
	qp->nr_free--;
	if (ERNIC_UNLIKELY(--qp->sample_left == 0))
		qp->sample_left = qp->sample_every ? qp->sample_every : UINT64_MAX;
	else
		t_submit = 0;
	if (ERNIC_UNLIKELY(t_submit)) {
		struct ernic_stage_stamps *st = &tq->stamps[cid & tq->mask];

		/* Published to the poller by the doorbell's release. */
		st->submit = t_submit;
		st->pickup = 0;
		st->storage_ns = 0;
		st->storage_start = 0;
		st->post = 0;
		st->sampled = 1;
		slot->sampled = true;
		st->doorbell = ernic_now_ns();
	}
	ernic_inproc_ring_doorbell(tq, ++qp->sq_tail);
	if (cid_out)
		*cid_out = cid;
	return 0;
}

int ernic_host_submit(struct ernic_host_qpair *qp, const struct nvme_sqe *sqe, void *buf, uint32_t len, void *ctx)
{
	return host_submit(qp, sqe, buf, len, ctx, NULL);
}

static inline void stage_add(struct ernic_host_stage_acc *acc, enum ernic_stage stage, uint64_t ns)
{
	uint64_t sum = atomic_load_explicit(&acc->sum_ns[stage], memory_order_relaxed);
	uint64_t max = atomic_load_explicit(&acc->max_ns[stage], memory_order_relaxed);

	atomic_store_explicit(&acc->sum_ns[stage], sum + ns, memory_order_relaxed);
	if (ns > max)
		atomic_store_explicit(&acc->max_ns[stage], ns, memory_order_relaxed);
}

/* A sampled command's completion reached the host: split its time into stages. */
static void host_stage_account(struct ernic_host_qpair *qp, struct ernic_stage_stamps *st)
{
	struct ernic_host_stage_acc *acc = &qp->stages;
	uint64_t reap = ernic_now_ns();

	st->sampled = 0;
	/* A completion the poller never stamped (it cannot happen on this path) counts nothing. */
	if (ERNIC_UNLIKELY(!st->pickup || !st->post))
		return;
	stage_add(acc, ERNIC_STAGE_HOST_DRIVER, st->doorbell - st->submit);
	stage_add(acc, ERNIC_STAGE_TO_TARGET, st->pickup - st->doorbell);
	stage_add(acc, ERNIC_STAGE_TARGET_DRIVER, st->post - st->pickup - st->storage_ns);
	stage_add(acc, ERNIC_STAGE_STORAGE, st->storage_ns);
	stage_add(acc, ERNIC_STAGE_TO_HOST, reap - st->post);
	stage_add(acc, ERNIC_STAGE_END_TO_END, reap - st->submit);
	atomic_store_explicit(&acc->samples, atomic_load_explicit(&acc->samples, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/*
 * The command in @slot is done with its buffer (completed, or given up on):
 * its region is invalidated, as nvme-rdma does, so a transfer the controller
 * might still start fails on the stale key rather than touching the buffer.
 */
static void host_slot_invalidate(struct ernic_host_qpair *qp, struct ernic_host_slot *slot)
{
	if (slot->mr_valid) {
		ernic_mr_invalidate(qp->mr, qp->tq->pd, slot->rkey);
		slot->mr_valid = false;
	}
}

/* Completions from the queue's ring only (ernic_host_poll() hands out the held ones first). */
static int host_poll_ring(struct ernic_host_qpair *qp, struct ernic_host_cpl *cpls, int max)
{
	struct ernic_inproc_qpair *tq = qp->tq;
	uint32_t tail = atomic_load_explicit(&tq->cq_tail, memory_order_acquire);
	int n = 0;

	while (qp->cq_head != tail && n < max) {
		const struct ernic_inproc_cpl *cpl = &tq->cq_ring[qp->cq_head & tq->mask];
		uint16_t cid = cpl->cqe.cid;
		struct ernic_host_slot *slot;

		qp->cq_head++;
		if (ERNIC_UNLIKELY(cid >= qp->depth))
			continue; /* not ours: a target bug, never a host crash */
		slot = &qp->slots[cid];
		if (ERNIC_UNLIKELY(slot->sampled)) {
			host_stage_account(qp, &tq->stamps[cid & tq->mask]);
			slot->sampled = false;
		}
		/* A SEND with Invalidate for our key has done it already. */
		if ((cpl->flags & ERNIC_INPROC_CPL_WITH_INV) && cpl->inv_rkey == slot->rkey)
			slot->mr_valid = false;
		host_slot_invalidate(qp, slot);
		qp->free_cids[qp->nr_free++] = cid;
		if (ERNIC_UNLIKELY(slot->abandoned)) {
			slot->abandoned = false;
			continue;
		}
		cpls[n].ctx = slot->ctx;
		cpls[n].status = nvme_cqe_status(&cpl->cqe);
		cpls[n].dnr = nvme_cqe_dnr(&cpl->cqe);
		cpls[n].dw0 = cpl->cqe.dw0;
		n++;
	}
	return n;
}

int ernic_host_poll(struct ernic_host_qpair *qp, struct ernic_host_cpl *cpls, int max)
{
	int n = 0;

	while (ERNIC_UNLIKELY(qp->nr_held) && n < max) {
		cpls[n++] = qp->held[0];
		memmove(&qp->held[0], &qp->held[1], --qp->nr_held * sizeof(qp->held[0]));
	}
	return n + host_poll_ring(qp, cpls + n, max - n);
}

void ernic_host_qpair_set_stage_sampling(struct ernic_host_qpair *qp, uint32_t every)
{
	qp->sample_every = every;
	qp->sample_left = every ? every : UINT64_MAX;
}

void ernic_host_set_stage_sampling(struct ernic_host_ctrlr *hc, uint32_t every)
{
	for (uint32_t i = 0; i < hc->nr_io; i++)
		ernic_host_qpair_set_stage_sampling(&hc->io[i], every);
}

void ernic_host_stage_stats(struct ernic_host_ctrlr *hc, struct ernic_stage_stats *s)
{
	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < hc->nr_io; i++) {
		struct ernic_host_stage_acc *acc = &hc->io[i].stages;

		s->samples += atomic_load_explicit(&acc->samples, memory_order_relaxed);
		for (int k = 0; k < ERNIC_STAGE_COUNT; k++) {
			uint64_t max = atomic_load_explicit(&acc->max_ns[k], memory_order_relaxed);

			s->sum_ns[k] += atomic_load_explicit(&acc->sum_ns[k], memory_order_relaxed);
			if (max > s->max_ns[k])
				s->max_ns[k] = max;
		}
	}
}

const char *ernic_stage_name(enum ernic_stage stage)
{
	static const char *const names[ERNIC_STAGE_COUNT] = {
		[ERNIC_STAGE_HOST_DRIVER] = "host_driver",
		[ERNIC_STAGE_TO_TARGET] = "transport_to_target",
		[ERNIC_STAGE_TARGET_DRIVER] = "target_driver",
		[ERNIC_STAGE_STORAGE] = "storage",
		[ERNIC_STAGE_TO_HOST] = "transport_to_host",
		[ERNIC_STAGE_END_TO_END] = "end_to_end",
	};

	return (unsigned)stage < ERNIC_STAGE_COUNT ? names[stage] : NULL;
}

uint32_t ernic_host_outstanding(const struct ernic_host_qpair *qp)
{
	return qp->depth - qp->nr_free;
}

bool ernic_host_qpair_connected(const struct ernic_host_qpair *qp)
{
	return qp->tq && !atomic_load_explicit(&qp->tq->lost, memory_order_acquire);
}

uint16_t ernic_host_qpair_qid(const struct ernic_host_qpair *qp)
{
	return qp->qid;
}

uint32_t ernic_host_qpair_depth(const struct ernic_host_qpair *qp)
{
	return qp->depth;
}

void ernic_host_rw_sqe(struct nvme_sqe *sqe, uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opc = opc;
	sqe->nsid = nsid;
	sqe->cdw10 = (uint32_t)slba;
	sqe->cdw11 = (uint32_t)(slba >> 32);
	sqe->cdw12 = (nlb - 1) & 0xFFFF;
}

/* ------------------------------------------------------------------ admin */

static int host_qpair_cmd(struct ernic_host_qpair *qp, struct nvme_sqe *sqe, void *buf, uint32_t len,
			  struct nvme_cqe *cqe)
{
	struct ernic_host_cpl cpl;
	char marker;
	uint64_t deadline;
	uint16_t cid;
	int rc;

	rc = host_submit(qp, sqe, buf, len, &marker, &cid);
	if (rc)
		return rc;
	deadline = ernic_now_ns() + HOST_ADMIN_TIMEOUT_NS;
	for (;;) {
		if (host_poll_ring(qp, &cpl, 1) == 1) {
			/* Another command's completion (an AER that fired): kept for the next ernic_host_poll(). */
			if (cpl.ctx != &marker) {
				qp->held[qp->nr_held++] = cpl;
				continue;
			}
			memset(cqe, 0, sizeof(*cqe));
			cqe->dw0 = cpl.dw0;
			cqe->status = (uint16_t)(cpl.status << 1);
			cqe->sqid = qp->qid;
			return 0;
		}
		if (ernic_now_ns() > deadline)
			break;
		sched_yield();
	}
	/*
	 * Given up on: the caller may free @buf, so the region over it goes now,
	 * as nvme-rdma's does before it fails a request. Its completion,
	 * whenever it comes, frees the CID only; no later call takes it for its own.
	 */
	host_slot_invalidate(qp, &qp->slots[cid]);
	qp->slots[cid].abandoned = true;
	return -ETIMEDOUT;
}

int ernic_host_admin(struct ernic_host_ctrlr *hc, struct nvme_sqe *sqe, void *buf, uint32_t len,
		     struct nvme_cqe *cqe)
{
	int rc;

	pthread_mutex_lock(&hc->admin_lock);
	rc = host_qpair_cmd(&hc->admin, sqe, buf, len, cqe);
	pthread_mutex_unlock(&hc->admin_lock);
	return rc;
}

struct ernic_host_qpair *ernic_host_admin_qpair(struct ernic_host_ctrlr *hc)
{
	return &hc->admin;
}

static int host_connect_queue(struct ernic_host_ctrlr *hc, struct ernic_host_qpair *qp, char *err,
			      size_t errlen)
{
	struct nvmf_connect_cmd cmd = { 0 };
	struct nvme_cqe cqe;
	int rc;

	cmd.opc = NVME_FABRICS_COMMAND;
	cmd.fctype = NVMF_FCTYPE_CONNECT;
	cmd.qid = qp->qid;
	cmd.sqsize = (uint16_t)(qp->depth - 1);
	cmd.kato = qp->qid ? 0 : hc->kato_ms;
	hc->connect_data.cntlid = qp->qid ? hc->cntlid : NVMF_CNTLID_DYNAMIC;
	rc = host_qpair_cmd(qp, (struct nvme_sqe *)&cmd, &hc->connect_data, sizeof(hc->connect_data), &cqe);
	if (rc) {
		snprintf(err, errlen, "Connect for QID %u: %s", qp->qid, strerror(-rc));
		return rc;
	}
	if (nvme_cqe_status(&cqe)) {
		snprintf(err, errlen, "Connect for QID %u failed: %s (dw0 0x%x)", qp->qid,
			 ernic_status_str(nvme_cqe_status(&cqe)), cqe.dw0);
		return -EIO;
	}
	if (!qp->qid)
		hc->cntlid = (uint16_t)cqe.dw0;
	return 0;
}

static int host_property(struct ernic_host_ctrlr *hc, uint8_t fctype, uint32_t ofst, bool size8,
			 uint64_t *value)
{
	struct nvmf_property_cmd cmd = { 0 };
	struct nvme_cqe cqe;
	int rc;

	cmd.opc = NVME_FABRICS_COMMAND;
	cmd.fctype = fctype;
	cmd.attrib = size8 ? 1 : 0;
	cmd.ofst = ofst;
	if (fctype == NVMF_FCTYPE_PROPERTY_SET)
		cmd.value = *value;
	rc = ernic_host_admin(hc, (struct nvme_sqe *)&cmd, NULL, 0, &cqe);
	if (rc)
		return rc;
	if (nvme_cqe_status(&cqe))
		return -EIO;
	if (fctype == NVMF_FCTYPE_PROPERTY_GET)
		*value = (uint64_t)cqe.dw0 | (uint64_t)cqe.dw1 << 32;
	return 0;
}

static int host_wait_csts(struct ernic_host_ctrlr *hc, uint32_t mask, uint32_t want)
{
	uint64_t deadline = ernic_now_ns() + HOST_READY_TIMEOUT_NS;
	uint64_t csts;

	for (;;) {
		int rc = host_property(hc, NVMF_FCTYPE_PROPERTY_GET, NVME_REG_CSTS, false, &csts);

		if (rc)
			return rc;
		if (csts & NVME_CSTS_CFS)
			return -EIO;
		if ((csts & mask) == want)
			return 0;
		if (ernic_now_ns() > deadline)
			return -ETIMEDOUT;
		sched_yield();
	}
}

static void random_bytes(uint8_t *p, size_t n)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? read(fd, p, n) : -1;

	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)n) {
		uint64_t x = ernic_now_ns() ^ (uintptr_t)p;

		for (size_t i = 0; i < n; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			p[i] = (uint8_t)(x >> 56);
		}
	}
}

/* The host's identity: a random Host Identifier and, unless given, the NQN nvme-cli derives from it. */
static struct ernic_host_ctrlr *host_ctrlr_alloc(struct ernic_inproc_port *port, const struct ernic_host_opts *opts)
{
	struct ernic_host_ctrlr *hc = calloc(1, sizeof(*hc));
	struct nvmf_connect_data *data;

	if (!hc)
		return NULL;
	data = &hc->connect_data;
	hc->port = port;
	hc->tgt = ernic_inproc_port_target(port);
	hc->kato_ms = opts ? opts->kato_ms : 0;
	pthread_mutex_init(&hc->admin_lock, NULL);
	random_bytes(data->hostid, sizeof(data->hostid));
	snprintf(data->subnqn, sizeof(data->subnqn), "%s",
		 opts && opts->subnqn ? opts->subnqn : ernic_target_subnqn(hc->tgt));
	if (opts && opts->hostnqn) {
		snprintf(data->hostnqn, sizeof(data->hostnqn), "%s", opts->hostnqn);
	} else {
		const uint8_t *u = data->hostid;

		snprintf(data->hostnqn, sizeof(data->hostnqn),
			 "nqn.2014-08.org.nvmexpress:uuid:%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			 "%02x%02x%02x%02x%02x%02x",
			 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
			 u[14], u[15]);
	}
	return hc;
}

/* The admin queue: NVME_AQ_DEPTH entries and as many regions, then Connect QID 0. */
static int host_connect_admin_queue(struct ernic_host_ctrlr *hc, char *err, size_t errlen)
{
	int rc = host_qpair_init(hc, &hc->admin, 0, ERNIC_ADMIN_QUEUE_SIZE, err, errlen);

	return rc ? rc : host_connect_queue(hc, &hc->admin, err, errlen);
}

/* Read CAP, set CC.EN with the queue entry sizes, wait for CSTS.RDY. */
static int host_enable_ctrlr(struct ernic_host_ctrlr *hc, char *err, size_t errlen)
{
	uint64_t cc = NVME_CC_EN | NVME_CC_NVM_ENTRY_SIZES;
	int rc;

	rc = host_property(hc, NVMF_FCTYPE_PROPERTY_GET, NVME_REG_CAP, true, &hc->cap);
	if (rc) {
		snprintf(err, errlen, "Property Get CAP failed");
		return rc;
	}
	rc = host_property(hc, NVMF_FCTYPE_PROPERTY_SET, NVME_REG_CC, false, &cc);
	if (!rc)
		rc = host_wait_csts(hc, NVME_CSTS_RDY, NVME_CSTS_RDY);
	if (rc)
		snprintf(err, errlen, "controller did not become ready (CSTS.RDY): %s", strerror(-rc));
	return rc;
}

static int host_identify_ctrlr(struct ernic_host_ctrlr *hc, char *err, size_t errlen)
{
	struct nvme_sqe sqe = { .opc = NVME_ADMIN_IDENTIFY, .cdw10 = NVME_ID_CNS_CTRL };
	struct nvme_cqe cqe;
	int rc;

	rc = ernic_host_admin(hc, &sqe, &hc->id, sizeof(hc->id), &cqe);
	if (rc || nvme_cqe_status(&cqe)) {
		snprintf(err, errlen, "Identify Controller failed");
		return rc ? rc : -EIO;
	}
	return 0;
}

/* Set Features Number of Queues: the controller may grant fewer than asked. */
static int host_set_nr_queues(struct ernic_host_ctrlr *hc, uint32_t want, char *err, size_t errlen)
{
	struct nvme_sqe sqe = { .opc = NVME_ADMIN_SET_FEATURES, .cdw10 = NVME_FEAT_NUM_QUEUES };
	struct nvme_cqe cqe;
	uint32_t grant;
	int rc;

	sqe.cdw11 = (want - 1) | (want - 1) << 16;
	rc = ernic_host_admin(hc, &sqe, NULL, 0, &cqe);
	if (rc || nvme_cqe_status(&cqe)) {
		snprintf(err, errlen, "Set Features Number of Queues (%u) failed: %s", want,
			 rc ? strerror(-rc) : ernic_status_str(nvme_cqe_status(&cqe)));
		return rc ? rc : -EIO;
	}
	grant = MIN(cqe.dw0 & 0xFFFF, cqe.dw0 >> 16) + 1;
	hc->nr_io = MIN(want, grant);
	return 0;
}

/*
 * Each granted I/O queue, one at a time: its MR pool, then Connect. The depth
 * asked for is bounded by CAP.MQES + 1 and by MAXCMD.
 */
static int host_connect_io_queues(struct ernic_host_ctrlr *hc, uint32_t queue_size, char *err, size_t errlen)
{
	uint32_t mqes = NVME_CAP_MQES(hc->cap);

	hc->queue_size = queue_size ? MIN(queue_size, mqes + 1) : mqes + 1;
	hc->queue_size = MIN(hc->queue_size, hc->id.maxcmd ? hc->id.maxcmd : hc->queue_size);
	hc->io = calloc(hc->nr_io, sizeof(*hc->io));
	if (!hc->io) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t q = 1; q <= hc->nr_io; q++) {
		int rc = host_qpair_init(hc, &hc->io[q - 1], (uint16_t)q, hc->queue_size, err, errlen);

		if (!rc)
			rc = host_connect_queue(hc, &hc->io[q - 1], err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

int ernic_host_connect(struct ernic_inproc_port *port, const struct ernic_host_opts *opts,
		       struct ernic_host_ctrlr **out, char *err, size_t errlen)
{
	struct ernic_host_ctrlr *hc;
	uint32_t want;
	int rc;

	if (!port) {
		snprintf(err, errlen, "no in-process port to connect to");
		return -EINVAL;
	}
	hc = host_ctrlr_alloc(port, opts);
	if (!hc) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	want = opts && opts->nr_io_queues ? opts->nr_io_queues : ernic_target_cfg(hc->tgt)->queues;
	rc = host_connect_admin_queue(hc, err, errlen);
	if (!rc)
		rc = host_enable_ctrlr(hc, err, errlen);
	if (!rc)
		rc = host_identify_ctrlr(hc, err, errlen);
	if (!rc)
		rc = host_set_nr_queues(hc, want, err, errlen);
	if (!rc)
		rc = host_connect_io_queues(hc, opts ? opts->queue_size : 0, err, errlen);
	if (rc) {
		ernic_host_disconnect(hc);
		return rc;
	}
	*out = hc;
	return 0;
}

void ernic_host_disconnect(struct ernic_host_ctrlr *hc)
{
	struct nvmf_fabrics_cmd disc = { 0 };
	struct nvme_cqe cqe;

	if (!hc)
		return;
	disc.opc = NVME_FABRICS_COMMAND;
	disc.fctype = NVMF_FCTYPE_DISCONNECT;
	for (uint32_t i = 0; hc->io && i < hc->nr_io; i++) {
		struct ernic_host_qpair *qp = &hc->io[i];

		if (qp->tq && qp->nr_free == qp->depth)
			host_qpair_cmd(qp, (struct nvme_sqe *)&disc, NULL, 0, &cqe);
		host_qpair_fini(qp);
	}
	free(hc->io);
	if (hc->admin.tq && hc->cntlid) {
		/* Normal shutdown (CC.SHN = 01b), waiting for CSTS.SHST complete, as the kernel does. */
		uint64_t cc = NVME_CC_EN | (1u << NVME_CC_SHN_SHIFT) | NVME_CC_NVM_ENTRY_SIZES;

		if (!host_property(hc, NVMF_FCTYPE_PROPERTY_SET, NVME_REG_CC, false, &cc))
			host_wait_csts(hc, NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_COMPLETE);
	}
	host_qpair_fini(&hc->admin);
	pthread_mutex_destroy(&hc->admin_lock);
	free(hc);
}

uint32_t ernic_host_nr_io_queues(const struct ernic_host_ctrlr *hc)
{
	return hc->nr_io;
}

int ernic_host_counters(struct ernic_host_ctrlr *hc, struct ernic_counters *c)
{
	return ernic_target_ctrlr_counters(hc->tgt, hc->cntlid, c);
}

uint16_t ernic_host_cntlid(const struct ernic_host_ctrlr *hc)
{
	return hc->cntlid;
}

const struct nvme_id_ctrl *ernic_host_id_ctrl(const struct ernic_host_ctrlr *hc)
{
	return &hc->id;
}

struct ernic_host_qpair *ernic_host_io_qpair(struct ernic_host_ctrlr *hc, uint16_t qid)
{
	if (qid == 0 || qid > hc->nr_io)
		return NULL;
	return &hc->io[qid - 1];
}
