/* SPDX-License-Identifier: MIT */
/*
 * io_cmd.c - NVM command set I/O commands: Read, Write, Flush, Write Zeroes
 * and Dataset Management (deallocate). Backend-neutral: the namespace's ops
 * move the bytes.
 */
#include <errno.h>
#include <string.h>

#include "target.h"

#define NVME_DSM_MAX_RANGES 256

static inline uint64_t cmd_slba(const struct nvme_sqe *sqe)
{
	return (uint64_t)sqe->cdw10 | (uint64_t)sqe->cdw11 << 32;
}

static inline uint32_t cmd_nlb(const struct nvme_sqe *sqe)
{
	return (sqe->cdw12 & 0xFFFF) + 1; /* 0's based */
}

static inline bool lba_range_ok(const struct ernic_ns *ns, uint64_t slba, uint64_t nlb)
{
	/* One load: a resize may store a new NLB meanwhile (ernic_target_resize_ns()). */
	uint64_t ns_nlb = atomic_load_explicit(&ns->nlb, memory_order_relaxed);

	return slba < ns_nlb && nlb <= ns_nlb - slba;
}

/*
 * The storage stage of a sampled command (req->stamps set by the transport):
 * the time inside the namespace backend's calls, and when the first began
 * and the last ended. A command that is not sampled pays one branch per call.
 */
static inline uint64_t storage_enter(const struct ernic_req *req)
{
	uint64_t now;

	if (ERNIC_LIKELY(req->stamps == NULL))
		return 0;
	now = ernic_now_ns();
	if (!req->stamps->storage_start)
		req->stamps->storage_start = now;
	return now;
}

static inline void storage_leave(const struct ernic_req *req, uint64_t since)
{
	if (ERNIC_UNLIKELY(req->stamps != NULL)) {
		req->stamps->storage_done = ernic_now_ns();
		req->stamps->storage_ns += req->stamps->storage_done - since;
	}
}

/*
 * A backend failure is a media error where one applies; a full medium is
 * Capacity Exceeded (Base, Generic Command Status 81h: the command would
 * exceed the capacity of the namespace), as Linux nvmet maps ENOSPC; anything
 * else is Internal Error.
 */
static uint16_t backend_status(int rc, bool write)
{
	if (rc == -EIO)
		return write ? NVME_SC_WRITE_FAULT : NVME_SC_UNRECOVERED_READ;
	if (rc == -ENOSPC)
		return NVME_SC_CAP_EXCEEDED;
	return NVME_SC_INTERNAL;
}

/*
 * A write is durable before it completes when the host asks (FUA, CDW12 bit
 * 30) or when the volatile write cache is off (Set Features, FID 06h).
 */
static inline uint32_t write_flags(const struct ernic_req *req)
{
	return (req->sqe.cdw12 & NVME_RW_FUA) || !req->sq->ctrlr->vwc ? ERNIC_NS_FUA : 0;
}

/* What a Read or Write's CDWs alone decide, before its data is mapped. */
static inline uint16_t io_rw_check(const struct ernic_req *req, const struct ernic_ns *ns)
{
	uint32_t nlb = cmd_nlb(&req->sqe);

	/*
	 * No more than this target's MDTS allows: a host that splits correctly
	 * never sees this. Base 2.0 Figure 275 (MDTS): such a command is
	 * aborted with Invalid Field in Command.
	 */
	if (ERNIC_UNLIKELY(((uint64_t)nlb << ns->lba_shift) > req->sq->tgt->max_xfer))
		return NVME_SC_INVALID_FIELD;
	if (ERNIC_UNLIKELY(!lba_range_ok(ns, cmd_slba(&req->sqe), nlb)))
		return NVME_SC_LBA_RANGE;
	return NVME_SC_SUCCESS;
}

/*
 * The path error for a namespace whose ANA group is in @state through the
 * queue's port (Base 8.1.1.4, Figure 114): I/O runs in the optimized and
 * non-optimized states only.
 */
static uint16_t ana_status(uint8_t state)
{
	switch (state) {
	case NVME_ANA_OPTIMIZED:
	case NVME_ANA_NONOPTIMIZED:
		return NVME_SC_SUCCESS;
	case NVME_ANA_INACCESSIBLE:
		return NVME_SC_ANA_INACCESSIBLE;
	case NVME_ANA_PERSISTENT_LOSS:
		return NVME_SC_ANA_PERSISTENT_LOSS;
	default:
		return NVME_SC_ANA_TRANSITION;
	}
}

/*
 * The namespace an I/O command names; NULL with success for a Flush of
 * every namespace. A namespace being removed is already gone here
 * (ernic_target_remove_ns()), and so is one other than the command was
 * checked against before its data was solicited (req->ns_gen): removed and
 * another added at its NSID while the data was on its way.
 */
static inline uint16_t io_resolve_ns(const struct ernic_req *req, struct ernic_ns **ns)
{
	const struct ernic_sq *sq = req->sq;
	uint32_t nsid = req->sqe.nsid;

	*ns = ernic_target_ns(sq->tgt, nsid);
	if (ERNIC_UNLIKELY(!*ns))
		return req->sqe.opc == NVME_CMD_FLUSH && nsid == 0xFFFFFFFF ? NVME_SC_SUCCESS : NVME_SC_INVALID_NS;
	if (ERNIC_UNLIKELY(req->ns_gen && req->ns_gen != (*ns)->gen)) {
		*ns = NULL;
		return NVME_SC_INVALID_NS;
	}
	/* A write already landing in the namespace was let in by this check (ernic_req.h2c_in_place). */
	if (sq->ana && !req->h2c_in_place)
		return ana_status(atomic_load_explicit(&sq->ana[(*ns)->anagrpid], memory_order_relaxed));
	return NVME_SC_SUCCESS;
}

/*
 * A read the transport sends straight from the medium (a RAM namespace over
 * TCP): one copy fewer, the one into a buffer of the transport's. Storage is
 * then only the lookup; the bytes are copied when the transport sends them.
 */
static uint16_t io_read_in_place(struct ernic_req *req, struct ernic_ns *ns, uint64_t off, uint32_t len)
{
	struct ernic_sq *sq = req->sq;
	const void *src;
	uint64_t t;
	uint16_t status;

	t = storage_enter(req);
	src = ns->ops->map_read(ns, off, len);
	storage_leave(req, t);
	status = ernic_req_map_c2h_in_place(req, len, src);
	if (ERNIC_UNLIKELY(status))
		return status;
	ernic_stat_add(&sq->stats.bytes_read, len);
	ernic_stat_add(&sq->stats.io_bytes_read, len);
	return NVME_SC_SUCCESS;
}

static uint16_t io_rw(struct ernic_req *req, bool write)
{
	struct ernic_ns *ns = req->ns;
	struct ernic_sq *sq = req->sq;
	uint64_t slba = cmd_slba(&req->sqe);
	uint32_t nlb = cmd_nlb(&req->sqe);
	uint64_t len = (uint64_t)nlb << ns->lba_shift;
	void *buf;
	uint64_t t;
	uint16_t status;
	int rc;

	status = io_rw_check(req, ns);
	if (ERNIC_UNLIKELY(status))
		return status;
	if (!write && sq->c2h_in_place && ns->ops->map_read)
		return io_read_in_place(req, ns, slba << ns->lba_shift, (uint32_t)len);
	status = ernic_req_map_data_exact(req, (uint32_t)len,
					  write ? NVME_DATA_HOST_TO_CTRL : NVME_DATA_CTRL_TO_HOST, &buf);
	if (ERNIC_UNLIKELY(status))
		return status;
	t = storage_enter(req);
	if (write) {
		/* Landed in place (ernic_req_h2c_in_place()): on the medium already, and RAM has no FUA to honour. */
		if (ns->ops->map_write && buf == ns->ops->map_write(ns, slba << ns->lba_shift, (uint32_t)len))
			rc = 0;
		else
			rc = ns->ops->write(ns, buf, slba << ns->lba_shift, (uint32_t)len, write_flags(req));
		storage_leave(req, t);
		if (ERNIC_UNLIKELY(rc))
			return backend_status(rc, true);
		ernic_stat_add(&sq->stats.bytes_written, len);
		ernic_stat_add(&sq->stats.io_bytes_written, len);
	} else {
		rc = ns->ops->read(ns, buf, slba << ns->lba_shift, (uint32_t)len);
		storage_leave(req, t);
		if (ERNIC_UNLIKELY(rc))
			return backend_status(rc, false);
		ernic_stat_add(&sq->stats.bytes_read, len);
		ernic_stat_add(&sq->stats.io_bytes_read, len);
	}
	return NVME_SC_SUCCESS;
}

static uint16_t io_flush(struct ernic_req *req)
{
	struct ernic_target *tgt = req->sq->tgt;
	uint64_t t = storage_enter(req);
	int rc;

	/* NSID FFFFFFFFh flushes every namespace (Base 7.1). */
	if (req->sqe.nsid == 0xFFFFFFFF)
		rc = ernic_target_flush(tgt);
	else
		rc = req->ns->ops->flush(req->ns);
	storage_leave(req, t);
	return rc ? NVME_SC_WRITE_FAULT : NVME_SC_SUCCESS;
}

static uint16_t io_write_zeroes(struct ernic_req *req)
{
	struct ernic_ns *ns = req->ns;
	uint64_t slba = cmd_slba(&req->sqe);
	uint32_t nlb = cmd_nlb(&req->sqe);
	uint64_t t;
	int rc;

	if (!lba_range_ok(ns, slba, nlb))
		return NVME_SC_LBA_RANGE;
	t = storage_enter(req);
	rc = ns->ops->write_zeroes(ns, slba << ns->lba_shift, (uint64_t)nlb << ns->lba_shift);
	if (!rc && write_flags(req))
		rc = ns->ops->flush(ns);
	storage_leave(req, t);
	return rc ? backend_status(rc, true) : NVME_SC_SUCCESS;
}

static uint16_t io_dsm(struct ernic_req *req)
{
	struct ernic_ns *ns = req->ns;
	uint32_t nr = (req->sqe.cdw10 & 0xFF) + 1;
	uint32_t len = nr * (uint32_t)sizeof(struct nvme_dsm_range);
	struct nvme_dsm_range ranges[NVME_DSM_MAX_RANGES];
	void *buf;
	uint64_t t;
	uint16_t status;
	int rc = 0;

	status = ernic_req_map_data_atleast(req, len, NVME_DATA_HOST_TO_CTRL, &buf);
	if (status)
		return status;
	memcpy(ranges, buf, len);
	ernic_stat_add(&req->sq->stats.bytes_written, len);
	/* Only deallocate has an effect; the other attributes are hints. */
	if (!(req->sqe.cdw11 & NVME_DSM_ATTR_DEALLOCATE))
		return NVME_SC_SUCCESS;
	for (uint32_t i = 0; i < nr; i++)
		if (!lba_range_ok(ns, ranges[i].slba, ranges[i].nlb))
			return NVME_SC_LBA_RANGE;
	t = storage_enter(req);
	for (uint32_t i = 0; i < nr && !rc; i++) {
		if (!ranges[i].nlb)
			continue;
		rc = ns->ops->deallocate(ns, ranges[i].slba << ns->lba_shift,
					 (uint64_t)ranges[i].nlb << ns->lba_shift);
	}
	storage_leave(req, t);
	return rc ? backend_status(rc, true) : NVME_SC_SUCCESS;
}

uint16_t ernic_io_exec(struct ernic_req *req)
{
	uint16_t status = io_resolve_ns(req, &req->ns);

	if (ERNIC_UNLIKELY(status))
		return status;
	switch (req->sqe.opc) {
	case NVME_CMD_READ:
		return io_rw(req, false);
	case NVME_CMD_WRITE:
		return io_rw(req, true);
	case NVME_CMD_FLUSH:
		return io_flush(req);
	case NVME_CMD_WRITE_ZEROES:
		return io_write_zeroes(req);
	case NVME_CMD_DSM:
		return io_dsm(req);
	default:
		return NVME_SC_INVALID_OPCODE;
	}
}

void *ernic_io_h2c_in_place(const struct ernic_req *req, uint32_t len)
{
	struct ernic_ns *ns;

	if (req->sqe.opc != NVME_CMD_WRITE || io_resolve_ns(req, &ns) || !ns || !ns->ops->map_write)
		return NULL;
	if (io_rw_check(req, ns) || (uint64_t)cmd_nlb(&req->sqe) << ns->lba_shift != len || ernic_req_sgl_len(req) != len)
		return NULL;
	return ns->ops->map_write(ns, cmd_slba(&req->sqe) << ns->lba_shift, len);
}

bool ernic_io_c2h_in_place(const struct ernic_req *req)
{
	struct ernic_ns *ns;

	/* As io_rw() chooses io_read_in_place(). */
	return req->sqe.opc == NVME_CMD_READ && !io_resolve_ns(req, &ns) && ns && ns->ops->map_read;
}

uint16_t ernic_io_check(const struct ernic_req *req, uint64_t *ns_gen)
{
	struct ernic_ns *ns;
	uint16_t status = io_resolve_ns(req, &ns);

	if (status)
		return status;
	if (ns)
		*ns_gen = ns->gen;
	switch (req->sqe.opc) {
	case NVME_CMD_READ:
	case NVME_CMD_WRITE:
		status = io_rw_check(req, ns);
		/* The exact rule ernic_req_map_data_exact() applies next. */
		if (!status && ernic_req_sgl_len(req) != (uint64_t)cmd_nlb(&req->sqe) << ns->lba_shift)
			status = NVME_SC_SGL_INVALID_DATA_LEN;
		return status;
	case NVME_CMD_FLUSH:
	case NVME_CMD_WRITE_ZEROES:
	case NVME_CMD_DSM:
		return NVME_SC_SUCCESS;
	default:
		return NVME_SC_INVALID_OPCODE;
	}
}
