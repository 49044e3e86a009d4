/* SPDX-License-Identifier: MIT */
/*
 * rdma.c - the emulated RDMA engine: a keyed SGL Data Block descriptor
 * (type 4) names a region of host memory by rkey; the controller moves data
 * with RDMA WRITE into it (host reads) or RDMA READ out of it (host writes).
 * The key, the protection domain, the bounds and the access rights are
 * checked before one byte moves; a command whose descriptor fails the check moves nothing.
 */
#include <errno.h>

#include "rdma.h"

uint16_t ernic_rdma_map_keyed_sgl(struct ernic_mr_table *tbl, uint32_t pd, const struct nvme_sgl_desc *sgl,
				  uint32_t len, enum nvme_data_dir dir, void **buf)
{
	uint8_t subtype = NVME_SGL_ID_SUBTYPE(sgl->id);
	uint32_t access;

	/* RDMA carries no in-capsule data here (IOCCSZ 4): only keyed descriptors. */
	if (ERNIC_UNLIKELY(NVME_SGL_ID_TYPE(sgl->id) != NVME_SGL_TYPE_KEYED_DATA_BLOCK))
		return NVME_SC_SGL_INVALID_TYPE;
	if (ERNIC_UNLIKELY(subtype != NVME_SGL_SUBTYPE_ADDRESS && subtype != NVME_SGL_SUBTYPE_INVALIDATE_KEY))
		return NVME_SC_SGL_INVALID_SUBTYPE;
	if (ERNIC_UNLIKELY(nvme_keyed_sgl_len(sgl) < len))
		return NVME_SC_SGL_INVALID_DATA_LEN;
	switch (dir) {
	case NVME_DATA_CTRL_TO_HOST:
		access = ERNIC_MR_REMOTE_WRITE;
		break;
	case NVME_DATA_HOST_TO_CTRL:
		access = ERNIC_MR_REMOTE_READ;
		break;
	default:
		access = ERNIC_MR_REMOTE_READ | ERNIC_MR_REMOTE_WRITE;
		break;
	}
	/* A remote access error would kill the queue pair on a real RNIC; here it fails the command. */
	if (ERNIC_UNLIKELY(ernic_mr_resolve(tbl, pd, sgl->keyed.key, sgl->addr, len, access, buf)))
		return NVME_SC_DATA_XFER_ERROR;
	return NVME_SC_SUCCESS;
}

bool ernic_rdma_send_with_invalidate(struct ernic_mr_table *tbl, uint32_t pd, const struct nvme_sgl_desc *sgl)
{
	if (NVME_SGL_ID_TYPE(sgl->id) != NVME_SGL_TYPE_KEYED_DATA_BLOCK ||
	    NVME_SGL_ID_SUBTYPE(sgl->id) != NVME_SGL_SUBTYPE_INVALIDATE_KEY || nvme_keyed_sgl_len(sgl) == 0)
		return false;
	return ernic_mr_invalidate(tbl, pd, sgl->keyed.key) == 0;
}
