/* SPDX-License-Identifier: MIT */
/* rdma.h - keyed SGL resolution and remote invalidation over the MR table. */
#ifndef ERNIC_RDMA_H
#define ERNIC_RDMA_H

#include "target.h"

/*
 * Resolve a keyed SGL for @len bytes moving in @dir on a queue pair of
 * protection domain @pd: returns an NVMe status, and in *@buf the host memory
 * the RDMA READ or WRITE touches. A key that is wrong, stale or of another
 * domain, or a range outside the region or its rights, is an RNIC's remote
 * access error: Data Transfer Error, and nothing moves.
 */
uint16_t ernic_rdma_map_keyed_sgl(struct ernic_mr_table *tbl, uint32_t pd, const struct nvme_sgl_desc *sgl,
				  uint32_t len, enum nvme_data_dir dir, void **buf);

/*
 * For a descriptor with subtype 0xF the completion goes out as a SEND with
 * Invalidate: the target invalidates the rkey, if it is one of domain @pd's.
 * Returns true if it did.
 */
bool ernic_rdma_send_with_invalidate(struct ernic_mr_table *tbl, uint32_t pd, const struct nvme_sgl_desc *sgl);

/*
 * The private data of an RDMA CM connect request (@len bytes at @pdata) for a
 * target of @cfg: 0 with the queue's qid and its receive buffers (HSQSIZE + 1),
 * or the NVMe/RDMA CM status to reject it with (enum nvme_rdma_cm_status).
 */
uint16_t ernic_rdma_cm_req_check(const struct ernic_backend_cfg *cfg, const void *pdata, size_t len, uint16_t *qid,
				 uint32_t *nr_recv);
/*
 * A connect request to a port serving @nr_queues queue pairs of at most
 * @max_queues: its private data first (ernic_rdma_cm_req_check(), so a bad
 * request is told what is wrong with it whatever the load), then the host's
 * responder resources, @host_ird (NVME_RDMA_CM_INVALID_IRD when 0: the
 * controller could read no data), then room for one more queue
 * (NVME_RDMA_CM_NO_RSC when there is none).
 */
uint16_t ernic_rdma_cm_req_admit(const struct ernic_backend_cfg *cfg, const void *pdata, size_t len,
				 uint8_t host_ird, unsigned int nr_queues, unsigned int max_queues, uint16_t *qid,
				 uint32_t *nr_recv);
/* An NVMe/RDMA CM status (enum nvme_rdma_cm_status) in words, for a log line. */
const char *ernic_rdma_cm_status_str(uint16_t sts);

#endif
