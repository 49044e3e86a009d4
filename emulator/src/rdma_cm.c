/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm.c - the RDMA CM private data of an NVMe/RDMA connect request (RDMA
 * Transport Binding 1.0, Figure 7), judged apart from any verbs so that the
 * unit tests reach it on a machine without rdma-core.
 */
#include "rdma.h"

uint16_t ernic_rdma_cm_req_check(const struct ernic_backend_cfg *cfg, const void *pdata, size_t len, uint16_t *qid,
				 uint32_t *nr_recv)
{
	const struct nvme_rdma_cm_req *req = pdata;
	uint32_t max;

	/* Transports may pad the private data (RoCE carries 56 bytes): at least, not exactly. */
	if (!req || len < sizeof(*req))
		return NVME_RDMA_CM_INVALID_LEN;
	if (req->recfmt != NVME_RDMA_CM_FMT_1_0)
		return NVME_RDMA_CM_INVALID_RECFMT;
	if (req->qid > ERNIC_MAX_IO_QUEUES)
		return NVME_RDMA_CM_INVALID_QID;
	max = req->qid ? cfg->queue_size : ERNIC_ADMIN_QUEUE_SIZE;
	/* HSQSIZE is 0's based; a queue of one entry cannot hold a command and its successor. */
	if (req->hsqsize == 0 || (uint32_t)req->hsqsize + 1 > max)
		return NVME_RDMA_CM_INVALID_HSQSIZE;
	/* The host takes a completion for each command it may have outstanding. */
	if (req->hrqsize < (uint32_t)req->hsqsize + 1)
		return NVME_RDMA_CM_INVALID_HRQSIZE;
	*qid = req->qid;
	*nr_recv = (uint32_t)req->hsqsize + 1;
	return 0;
}

uint16_t ernic_rdma_cm_req_admit(const struct ernic_backend_cfg *cfg, const void *pdata, size_t len,
				 uint8_t host_ird, unsigned int nr_queues, unsigned int max_queues, uint16_t *qid,
				 uint32_t *nr_recv)
{
	uint16_t sts = ernic_rdma_cm_req_check(cfg, pdata, len, qid, nr_recv);

	if (sts)
		return sts;
	/*
	 * The host's responder resources are the RDMA READs the controller may
	 * have outstanding against it: with none, no keyed-SGL data (an admin
	 * queue's Connect data among it) could ever be read.
	 */
	if (host_ird == 0)
		return NVME_RDMA_CM_INVALID_IRD;
	return nr_queues >= max_queues ? NVME_RDMA_CM_NO_RSC : 0;
}

const char *ernic_rdma_cm_status_str(uint16_t sts)
{
	static const char *const names[] = {
		[NVME_RDMA_CM_INVALID_LEN] = "invalid private data length",
		[NVME_RDMA_CM_INVALID_RECFMT] = "invalid RECFMT",
		[NVME_RDMA_CM_INVALID_QID] = "invalid QID",
		[NVME_RDMA_CM_INVALID_HSQSIZE] = "invalid HSQSIZE",
		[NVME_RDMA_CM_INVALID_HRQSIZE] = "invalid HRQSIZE",
		[NVME_RDMA_CM_NO_RSC] = "no resources",
		[NVME_RDMA_CM_INVALID_IRD] = "invalid IRD",
		[NVME_RDMA_CM_INVALID_ORD] = "invalid ORD",
		[NVME_RDMA_CM_INVALID_CNTLID] = "invalid CNTLID",
	};

	return sts < ERNIC_ARRAY_SIZE(names) && names[sts] ? names[sts] : "unknown status";
}
