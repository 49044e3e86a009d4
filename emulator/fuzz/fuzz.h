/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what the libFuzzer targets and the seed generator share: a small
 * target, the capsules of a valid Connect and CC.EN, and a stand-in transport
 * whose map_data hands the core a heap buffer of exactly the length it asked
 * for, so a core that reads or writes past that length trips ASan.
 */
#ifndef ERNIC_FUZZ_H
#define ERNIC_FUZZ_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

#define FUZZ_HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:0f0f0f0f-1111-2222-3333-444444444444"
#define FUZZ_CC_ENABLE (NVME_CC_EN | NVME_CC_NVM_ENTRY_SIZES)
#define FUZZ_QUEUE_SIZE 32
/* A bound on what map_data hands out: a few MDTS transfers, far above any valid command. */
#define FUZZ_MAX_DATA (1u << 20)
#define FUZZ_SLOTS 8

static inline struct ernic_target *fuzz_target_new(void)
{
	struct ernic_target_opts opts = { 0 };
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt = NULL;
	char err[ERNIC_ERRLEN] = "";

	ernic_backend_cfg_init(&cfg);
	cfg.size = 1u << 20;
	cfg.queue_size = FUZZ_QUEUE_SIZE;
	if (ernic_target_create(&cfg, &opts, &tgt, err, sizeof(err))) {
		fprintf(stderr, "fuzz: target create: %s\n", err);
		abort();
	}
	return tgt;
}

/* A Connect capsule for @qid; its 1024 bytes of data follow in-capsule (offset 0) or by SGL @sgl. */
static inline void fuzz_connect_sqe(struct nvme_sqe *sqe, uint16_t cid, uint16_t qid, const struct nvme_sgl_desc *sgl)
{
	struct nvmf_connect_cmd *cmd = (struct nvmf_connect_cmd *)sqe;

	memset(sqe, 0, sizeof(*sqe));
	cmd->opc = NVME_FABRICS_COMMAND;
	cmd->cid = cid;
	cmd->fctype = NVMF_FCTYPE_CONNECT;
	cmd->sgl = *sgl;
	cmd->qid = qid;
	cmd->sqsize = FUZZ_QUEUE_SIZE - 1;
}

static inline void fuzz_connect_data(struct nvmf_connect_data *data, const char *subnqn, uint16_t cntlid)
{
	memset(data, 0, sizeof(*data));
	data->cntlid = cntlid;
	snprintf(data->subnqn, sizeof(data->subnqn), "%s", subnqn);
	snprintf(data->hostnqn, sizeof(data->hostnqn), "%s", FUZZ_HOSTNQN);
}

static inline void fuzz_prop_set_sqe(struct nvme_sqe *sqe, uint16_t cid, uint32_t ofst, uint32_t value)
{
	struct nvmf_property_cmd *cmd = (struct nvmf_property_cmd *)sqe;

	memset(sqe, 0, sizeof(*sqe));
	cmd->opc = NVME_FABRICS_COMMAND;
	cmd->cid = cid;
	cmd->fctype = NVMF_FCTYPE_PROPERTY_SET;
	cmd->ofst = ofst;
	cmd->value = value;
}

/* ------------------------------------------------------ stand-in transport */

struct fuzz_slot {
	struct ernic_req req;
	uint8_t *buf; /* what map_data handed out, freed at completion */
	bool busy;    /* executing, or held (AER) */
};

struct fuzz_q {
	struct ernic_sq sq;
	const uint8_t *data; /* the current command's data, from the fuzz input */
	size_t data_len;
	struct fuzz_slot slots[FUZZ_SLOTS];
};

static inline uint16_t fuzz_map_data(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf)
{
	struct fuzz_slot *slot = req->transport_ctx;
	struct fuzz_q *q = req->sq->transport;

	(void)dir;
	/* As the TCP transport: never more than the SGL describes. */
	if (len > ernic_req_sgl_len(req) || len > FUZZ_MAX_DATA)
		return NVME_SC_SGL_INVALID_DATA_LEN;
	free(slot->buf);
	slot->buf = malloc(len ? len : 1);
	if (!slot->buf)
		abort();
	memset(slot->buf, 0, len);
	memcpy(slot->buf, q->data, MIN((size_t)len, q->data_len));
	*buf = slot->buf;
	return NVME_SC_SUCCESS;
}

static inline void fuzz_slot_release(struct fuzz_slot *slot)
{
	free(slot->buf);
	slot->buf = NULL;
	slot->busy = false;
}

static inline void fuzz_complete(struct ernic_req *req)
{
	fuzz_slot_release(req->transport_ctx);
}

static const struct ernic_transport_ops fuzz_ops = {
	.name = "fuzz",
	.trtype = NVMF_TRTYPE_TCP,
	.map_data = fuzz_map_data,
	.complete = fuzz_complete,
	.in_capsule_data_size = 8192,
};

static inline void fuzz_q_init(struct fuzz_q *q, struct ernic_target *tgt)
{
	memset(q, 0, sizeof(*q));
	ernic_sq_init(&q->sq, tgt, &fuzz_ops, q);
}

/* Completes held AERs, which frees their buffers. */
static inline void fuzz_q_destroy(struct fuzz_q *q)
{
	ernic_sq_destroy(&q->sq);
	for (int i = 0; i < FUZZ_SLOTS; i++)
		if (q->slots[i].busy)
			abort(); /* a request the core held and never completed */
}

/* Run one command with @data behind its SGL. Returns its status, or -1 when every slot is held. */
static inline int fuzz_q_exec(struct fuzz_q *q, const struct nvme_sqe *sqe, const void *data, size_t len,
			      uint32_t *dw0)
{
	struct fuzz_slot *slot = NULL;
	uint16_t status;

	for (int i = 0; i < FUZZ_SLOTS && !slot; i++)
		if (!q->slots[i].busy)
			slot = &q->slots[i];
	if (!slot)
		return -1;
	memset(&slot->req, 0, sizeof(slot->req));
	slot->req.sqe = *sqe;
	slot->req.sq = &q->sq;
	slot->req.transport_ctx = slot;
	slot->busy = true;
	q->data = data;
	q->data_len = len;
	if (ernic_req_exec(&slot->req) == ERNIC_EXEC_HELD)
		return 0;
	status = nvme_cqe_status(&slot->req.cqe);
	if (dw0)
		*dw0 = slot->req.cqe.dw0;
	fuzz_slot_release(slot);
	return status;
}

/* A valid admin Connect (subsystem or discovery) and, for a subsystem, CC.EN. Returns the cntlid or -1. */
static inline int fuzz_admin_up(struct fuzz_q *q, bool discovery)
{
	struct nvmf_connect_data data;
	struct nvme_sgl_desc sgl = { .unkeyed.length = sizeof(data) };
	struct nvme_sqe sqe;
	uint32_t cntlid = 0;

	sgl.id = NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET);
	fuzz_connect_data(&data, discovery ? NVMF_DISC_NQN : ERNIC_DEFAULT_SUBNQN, NVMF_CNTLID_DYNAMIC);
	fuzz_connect_sqe(&sqe, 1, 0, &sgl);
	if (fuzz_q_exec(q, &sqe, &data, sizeof(data), &cntlid))
		return -1;
	fuzz_prop_set_sqe(&sqe, 2, NVME_REG_CC, discovery ? NVME_CC_EN : FUZZ_CC_ENABLE);
	if (fuzz_q_exec(q, &sqe, NULL, 0, NULL))
		return -1;
	return (int)cntlid;
}

/* A valid I/O Connect of @q as @qid of controller @cntlid. */
static inline int fuzz_io_up(struct fuzz_q *q, uint16_t qid, uint16_t cntlid)
{
	struct nvmf_connect_data data;
	struct nvme_sgl_desc sgl = { .unkeyed.length = sizeof(data) };
	struct nvme_sqe sqe;

	sgl.id = NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET);
	fuzz_connect_data(&data, ERNIC_DEFAULT_SUBNQN, cntlid);
	fuzz_connect_sqe(&sqe, 1, qid, &sgl);
	return fuzz_q_exec(q, &sqe, &data, sizeof(data), NULL);
}

#endif /* ERNIC_FUZZ_H */
