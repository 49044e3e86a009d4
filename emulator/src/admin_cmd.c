/* SPDX-License-Identifier: MIT */
/*
 * admin_cmd.c - admin commands: Identify, Get Log Page, Set/Get Features,
 * Keep Alive, Asynchronous Event Request, Abort; and the discovery
 * controller's subset of them (Fabrics 1.1 section 5).
 */
#include <stdio.h>
#include <string.h>

#include "target.h"

#define ERNIC_VID 0x1DD8
#define ERNIC_MODEL "ernic NVMe-oF controller"
#define ERNIC_FIRMWARE "1.0"
#define ERNIC_TEMP_KELVIN 313 /* reported composite temperature, 40 C */

/* Space-padded, not NUL-terminated: the Identify string fields (Base 1.5). */
static void copy_padded(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	memset(dst, ' ', len);
	memcpy(dst, src, n < len ? n : len);
}

/* Copy a page the controller built into the host buffer the command describes. */
static uint16_t send_data(struct ernic_req *req, const void *src, uint32_t len)
{
	void *buf;
	uint16_t status;

	status = ernic_req_map_data(req, len, NVME_DATA_CTRL_TO_HOST, &buf);
	if (status)
		return status;
	memcpy(buf, src, len);
	ernic_stat_add(&req->sq->stats.bytes_read, len);
	return NVME_SC_SUCCESS;
}

static struct ernic_ns *find_ns(struct ernic_target *tgt, uint32_t nsid)
{
	if (nsid == 0 || nsid > tgt->nr_ns)
		return NULL;
	return &tgt->ns[nsid - 1];
}

/* ---------------------------------------------------------------- Identify */

static void identify_ctrlr(struct ernic_ctrlr *ctrlr, const struct ernic_sq *sq, struct nvme_id_ctrl *id)
{
	struct ernic_target *tgt = ctrlr->tgt;
	uint32_t icd = sq->ops->in_capsule_data_size;

	memset(id, 0, sizeof(*id));
	id->vid = ERNIC_VID;
	id->ssvid = ERNIC_VID;
	copy_padded(id->sn, sizeof(id->sn), tgt->serial);
	copy_padded(id->mn, sizeof(id->mn), ERNIC_MODEL);
	copy_padded(id->fr, sizeof(id->fr), ERNIC_FIRMWARE);
	id->rab = 6;
	id->cntlid = ctrlr->cntlid;
	id->ver = ctrlr->vs;
	id->kas = 10; /* keep-alive granularity in 100 ms units */
	id->sqes = (6 << 4) | 6;
	id->cqes = (4 << 4) | 4;
	id->maxcmd = (uint16_t)tgt->cfg.queue_size;
	id->sgls = NVME_CTRL_SGLS_SUPPORTED | NVME_CTRL_SGLS_KEYED | (icd ? NVME_CTRL_SGLS_OFFSET : 0);
	id->ioccsz = ERNIC_IOCCSZ + icd / 16;
	id->iorcsz = ERNIC_IORCSZ;
	id->msdbd = 1;
	id->aerl = ERNIC_AERL - 1;
	id->elpe = ERNIC_ERRLOG_ENTRIES - 1;
	id->lpa = NVME_CTRL_LPA_EXTENDED;
	copy_padded(id->subnqn, 0, "");
	snprintf(id->subnqn, sizeof(id->subnqn), "%s", ctrlr->discovery ? NVMF_DISC_NQN : tgt->subnqn);
	if (ctrlr->discovery) {
		id->cntrltype = NVME_CTRL_CNTRLTYPE_DISCOVERY;
		id->mdts = 0;
		id->maxcmd = ERNIC_ADMIN_QUEUE_SIZE;
		return;
	}
	id->cntrltype = NVME_CTRL_CNTRLTYPE_IO;
	id->mdts = ERNIC_MDTS;
	id->oaes = NVME_CTRL_OAES_NS_ATTR;
	id->acl = 3;
	id->frmw = (1 << 1) | 1; /* one slot, read-only */
	id->wctemp = 343;
	id->cctemp = 358;
	id->nn = tgt->nr_ns;
	id->mnan = 0;
	id->oncs = NVME_CTRL_ONCS_DSM | NVME_CTRL_ONCS_WRITE_ZEROES;
	id->vwc = 1;
	id->awun = 0;
	/* One power state: 25 W max power in 0.01 W units. */
	id->psd[0].bytes[0] = 0xC4;
	id->psd[0].bytes[1] = 0x09;
}

static void identify_ns(const struct ernic_ns *ns, struct nvme_id_ns *id)
{
	memset(id, 0, sizeof(*id));
	id->nsze = ns->nlb;
	id->ncap = ns->nlb;
	id->nuse = ns->nlb;
	id->nsfeat = 0;
	id->nlbaf = 0;
	id->flbas = 0;
	id->dlfeat = 1 | (1 << 3); /* deallocated blocks read as zeroes; Write Zeroes may deallocate */
	id->lbaf[0].lbads = (uint8_t)ns->lba_shift;
	id->lbaf[0].rp = 0;
	memcpy(id->nguid, ns->nguid, sizeof(id->nguid));
	memcpy(id->eui64, ns->nguid, sizeof(id->eui64));
	/* NVMCAP: namespace capacity in bytes, 128-bit little endian. */
	uint64_t bytes = ernic_ns_size(ns);
	memcpy(id->nvmcap, &bytes, sizeof(bytes));
}

static size_t ns_id_descs(const struct ernic_ns *ns, uint8_t *page)
{
	size_t off = 0;
	struct nvme_ns_id_desc d;
	uint8_t uuid[16];

	d = (struct nvme_ns_id_desc){ .nidt = NVME_NIDT_EUI64, .nidl = 8 };
	memcpy(page + off, &d, sizeof(d));
	memcpy(page + off + sizeof(d), ns->nguid, 8);
	off += sizeof(d) + 8;
	d = (struct nvme_ns_id_desc){ .nidt = NVME_NIDT_NGUID, .nidl = 16 };
	memcpy(page + off, &d, sizeof(d));
	memcpy(page + off + sizeof(d), ns->nguid, 16);
	off += sizeof(d) + 16;
	/* A version-4 style UUID derived from the NGUID, stable like it. */
	memcpy(uuid, ns->nguid, sizeof(uuid));
	uuid[6] = (uint8_t)((uuid[6] & 0x0F) | 0x40);
	uuid[8] = (uint8_t)((uuid[8] & 0x3F) | 0x80);
	d = (struct nvme_ns_id_desc){ .nidt = NVME_NIDT_UUID, .nidl = 16 };
	memcpy(page + off, &d, sizeof(d));
	memcpy(page + off + sizeof(d), uuid, 16);
	off += sizeof(d) + 16;
	d = (struct nvme_ns_id_desc){ .nidt = NVME_NIDT_CSI, .nidl = 1 };
	memcpy(page + off, &d, sizeof(d));
	page[off + sizeof(d)] = 0; /* NVM command set */
	off += sizeof(d) + 1;
	return off;
}

static uint16_t admin_identify(struct ernic_req *req)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	struct ernic_target *tgt = ctrlr->tgt;
	uint8_t cns = (uint8_t)req->sqe.cdw10;
	uint32_t nsid = req->sqe.nsid;
	_Alignas(8) uint8_t page[4096];
	struct ernic_ns *ns;

	memset(page, 0, sizeof(page));
	if (ctrlr->discovery && cns != NVME_ID_CNS_CTRL)
		return NVME_SC_INVALID_FIELD;
	switch (cns) {
	case NVME_ID_CNS_CTRL:
		identify_ctrlr(ctrlr, req->sq, (struct nvme_id_ctrl *)page);
		break;
	case NVME_ID_CNS_NS:
		ns = find_ns(tgt, nsid);
		if (!ns)
			return NVME_SC_INVALID_NS;
		identify_ns(ns, (struct nvme_id_ns *)page);
		break;
	case NVME_ID_CNS_NS_ACTIVE_LIST: {
		uint32_t *list = (uint32_t *)page, n = 0;

		if (nsid >= 0xFFFFFFFE)
			return NVME_SC_INVALID_NS;
		for (uint32_t i = nsid + 1; i <= tgt->nr_ns && n < 1024; i++)
			list[n++] = i;
		break;
	}
	case NVME_ID_CNS_NS_DESC_LIST:
		ns = find_ns(tgt, nsid);
		if (!ns)
			return NVME_SC_INVALID_NS;
		ns_id_descs(ns, page);
		break;
	case NVME_ID_CNS_CS_CTRL:
		/*
		 * NVM command set specific controller data: all zero says no limits
		 * beyond MDTS for Verify, Write Zeroes, Write Uncorrectable and DSM.
		 */
		if (NVME_IDENTIFY_CSI(req->sqe.cdw11) != NVME_CSI_NVM)
			return NVME_SC_INVALID_FIELD;
		break;
	case NVME_ID_CNS_CS_NS:
		if (NVME_IDENTIFY_CSI(req->sqe.cdw11) != NVME_CSI_NVM)
			return NVME_SC_INVALID_FIELD;
		if (!find_ns(tgt, nsid))
			return NVME_SC_INVALID_NS;
		break;
	default:
		return NVME_SC_INVALID_FIELD;
	}
	return send_data(req, page, sizeof(page));
}

/* ------------------------------------------------------------ Log pages */

static void put_u128(uint8_t dst[16], uint64_t v)
{
	memset(dst, 0, 16);
	memcpy(dst, &v, sizeof(v));
}

static void smart_log(struct ernic_ctrlr *ctrlr, struct nvme_smart_log *log)
{
	struct ernic_counters c;
	uint64_t reads, writes;

	ernic_target_counters(ctrlr->tgt, &c);
	reads = c.io_cmds[NVME_CMD_READ];
	writes = c.io_cmds[NVME_CMD_WRITE];
	memset(log, 0, sizeof(*log));
	log->temperature = ERNIC_TEMP_KELVIN;
	log->avail_spare = 100;
	log->spare_thresh = 10;
	log->percent_used = 0;
	/* Data units are thousands of 512-byte units, rounded up (Base Figure 207). */
	put_u128(log->data_units_read, (c.io_bytes_read / 512 + 999) / 1000);
	put_u128(log->data_units_written, (c.io_bytes_written / 512 + 999) / 1000);
	put_u128(log->host_reads, reads);
	put_u128(log->host_writes, writes);
	put_u128(log->power_cycles, 1);
	put_u128(log->power_on_hours, (ernic_now_ns() - ctrlr->tgt->power_on_ns) / 3600000000000ull);
	put_u128(log->num_err_log_entries, ctrlr->err_count);
	log->temp_sensor[0] = ERNIC_TEMP_KELVIN;
}

static size_t discovery_log(struct ernic_target *tgt, uint8_t *page, size_t cap)
{
	struct nvmf_disc_log_hdr *hdr = (struct nvmf_disc_log_hdr *)page;
	struct nvmf_disc_log_entry *e = (struct nvmf_disc_log_entry *)(page + sizeof(*hdr));

	if (cap < sizeof(*hdr) + sizeof(*e))
		return 0;
	memset(page, 0, sizeof(*hdr) + sizeof(*e));
	hdr->genctr = 1;
	hdr->numrec = 1;
	hdr->recfmt = 0;
	e->trtype = tgt->trtype;
	e->adrfam = NVMF_ADRFAM_IPV4;
	e->subtype = NVMF_SUBTYPE_NVME;
	e->treq = NVMF_TREQ_NOT_SPECIFIED;
	e->portid = 1;
	e->cntlid = NVMF_CNTLID_DYNAMIC;
	e->asqsz = ERNIC_ADMIN_QUEUE_SIZE;
	memset(e->trsvcid, ' ', sizeof(e->trsvcid));
	memcpy(e->trsvcid, tgt->trsvcid, strnlen(tgt->trsvcid, sizeof(e->trsvcid)));
	memset(e->traddr, ' ', sizeof(e->traddr));
	memcpy(e->traddr, tgt->traddr, strnlen(tgt->traddr, sizeof(e->traddr)));
	snprintf(e->subnqn, sizeof(e->subnqn), "%s", tgt->subnqn);
	return sizeof(*hdr) + sizeof(*e);
}

static uint16_t admin_get_log_page(struct ernic_req *req)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t lid = (uint8_t)req->sqe.cdw10;
	bool rae = req->sqe.cdw10 & (1u << 15);
	uint32_t numd = ((req->sqe.cdw10 >> 16) | ((req->sqe.cdw11 & 0xFFFF) << 16)) + 1;
	uint64_t lpo = (uint64_t)req->sqe.cdw12 | (uint64_t)req->sqe.cdw13 << 32;
	uint64_t len = (uint64_t)numd * 4;
	_Alignas(8) uint8_t page[ERNIC_ERRLOG_ENTRIES * sizeof(struct nvme_error_log_entry) + 4096];
	size_t size = 0;
	void *buf;
	uint16_t status;

	memset(page, 0, sizeof(page));
	if (ctrlr->discovery && lid != NVME_LOG_DISC)
		return NVME_SC_INVALID_LOG_PAGE;
	switch (lid) {
	case NVME_LOG_ERROR:
		pthread_mutex_lock(&ctrlr->lock);
		memcpy(page, ctrlr->errlog, sizeof(ctrlr->errlog));
		pthread_mutex_unlock(&ctrlr->lock);
		size = sizeof(ctrlr->errlog);
		break;
	case NVME_LOG_SMART:
		if (req->sqe.nsid != 0 && req->sqe.nsid != 0xFFFFFFFF && !find_ns(ctrlr->tgt, req->sqe.nsid))
			return NVME_SC_INVALID_NS;
		smart_log(ctrlr, (struct nvme_smart_log *)page);
		size = sizeof(struct nvme_smart_log);
		break;
	case NVME_LOG_FW_SLOT: {
		struct nvme_fw_slot_log *fw = (struct nvme_fw_slot_log *)page;

		fw->afi = 1;
		copy_padded(fw->frs[0], sizeof(fw->frs[0]), ERNIC_FIRMWARE);
		size = sizeof(*fw);
		break;
	}
	case NVME_LOG_CHANGED_NS: {
		uint32_t *list = (uint32_t *)page;

		pthread_mutex_lock(&ctrlr->lock);
		memcpy(list, ctrlr->changed_ns, ctrlr->nr_changed_ns * sizeof(uint32_t));
		if (!rae)
			ctrlr->nr_changed_ns = 0;
		pthread_mutex_unlock(&ctrlr->lock);
		size = 4096;
		break;
	}
	case NVME_LOG_DISC:
		if (!ctrlr->discovery)
			return NVME_SC_INVALID_LOG_PAGE;
		size = discovery_log(ctrlr->tgt, page, sizeof(page));
		break;
	default:
		return NVME_SC_INVALID_LOG_PAGE;
	}
	/* LPO must be dword aligned and inside the page (Base 5.16). */
	if ((lpo & 3) || lpo > size)
		return NVME_SC_INVALID_FIELD;
	if (len > ERNIC_MAX_XFER)
		return NVME_SC_INVALID_FIELD;
	status = ernic_req_map_data(req, (uint32_t)len, NVME_DATA_CTRL_TO_HOST, &buf);
	if (status)
		return status;
	/* Bytes past the end of the page read as zero. */
	memset(buf, 0, len);
	memcpy(buf, page + lpo, MIN(len, size - lpo));
	ernic_stat_add(&req->sq->stats.bytes_read, len);
	return NVME_SC_SUCCESS;
}

/* ------------------------------------------------------------- Features */

static uint16_t admin_set_features(struct ernic_req *req)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t fid = (uint8_t)req->sqe.cdw10;
	uint32_t cdw11 = req->sqe.cdw11;

	if (req->sqe.cdw10 & (1u << 31))
		return NVME_SC_FEATURE_NOT_SAVEABLE;
	if (ctrlr->discovery && fid != NVME_FEAT_KATO && fid != NVME_FEAT_ASYNC_EVENT)
		return NVME_SC_INVALID_FIELD;
	switch (fid) {
	case NVME_FEAT_NUM_QUEUES: {
		uint32_t nsqr = cdw11 & 0xFFFF, ncqr = cdw11 >> 16, grant;

		if (nsqr == 0xFFFF || ncqr == 0xFFFF)
			return NVME_SC_INVALID_FIELD;
		/* Once I/O queues exist the count is fixed, as SPDK answers. */
		if (ctrlr->nr_sqs > 1)
			return NVME_SC_CMD_SEQ_ERROR;
		grant = MIN(MAX(nsqr, ncqr) + 1, ctrlr->tgt->cfg.queues);
		ctrlr->nr_io_queues = grant;
		ctrlr->nr_queues_set = true;
		req->cqe.dw0 = (grant - 1) | (grant - 1) << 16;
		return NVME_SC_SUCCESS;
	}
	case NVME_FEAT_KATO:
		ctrlr->kato_ms = cdw11;
		if (cdw11)
			ernic_ctrlr_keep_alive(ctrlr);
		else
			atomic_store(&ctrlr->ka_deadline_ns, 0);
		return NVME_SC_SUCCESS;
	case NVME_FEAT_ASYNC_EVENT:
		/* Only Namespace Attribute Notices are generated; other bits are kept, harmless. */
		ctrlr->aec = cdw11;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_VOLATILE_WC:
		ctrlr->vwc = cdw11 & 1;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_ARBITRATION:
		ctrlr->arbitration = cdw11;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_POWER_MGMT:
		return (cdw11 & 0x1F) == 0 ? NVME_SC_SUCCESS : NVME_SC_INVALID_FIELD;
	case NVME_FEAT_TEMP_THRESH:
		ctrlr->temp_thresh = cdw11;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_ERR_RECOVERY:
		ctrlr->err_recovery = cdw11;
		return NVME_SC_SUCCESS;
	default:
		return NVME_SC_INVALID_FIELD;
	}
}

static uint16_t admin_get_features(struct ernic_req *req)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t fid = (uint8_t)req->sqe.cdw10;
	uint32_t sel = (req->sqe.cdw10 >> 8) & 7;
	bool current = sel == NVME_FEAT_SEL_CURRENT;
	uint32_t value;

	if (sel > NVME_FEAT_SEL_SUPPORTED)
		return NVME_SC_INVALID_FIELD;
	if (ctrlr->discovery && fid != NVME_FEAT_KATO && fid != NVME_FEAT_ASYNC_EVENT)
		return NVME_SC_INVALID_FIELD;
	switch (fid) {
	case NVME_FEAT_NUM_QUEUES: {
		uint32_t n = current ? ctrlr->nr_io_queues : ctrlr->tgt->cfg.queues;

		value = (n - 1) | (n - 1) << 16;
		break;
	}
	case NVME_FEAT_KATO:
		value = current ? ctrlr->kato_ms : 0;
		break;
	case NVME_FEAT_ASYNC_EVENT:
		value = current ? ctrlr->aec : 0;
		break;
	case NVME_FEAT_VOLATILE_WC:
		value = current ? ctrlr->vwc : 1;
		break;
	case NVME_FEAT_ARBITRATION:
		value = current ? ctrlr->arbitration : 0;
		break;
	case NVME_FEAT_POWER_MGMT:
		value = 0;
		break;
	case NVME_FEAT_TEMP_THRESH:
		value = current ? ctrlr->temp_thresh : 0;
		break;
	case NVME_FEAT_ERR_RECOVERY:
		value = current ? ctrlr->err_recovery : 0;
		break;
	default:
		return NVME_SC_INVALID_FIELD;
	}
	/* Capabilities: changeable, not saveable, not per-namespace (Base Figure 328). */
	if (sel == NVME_FEAT_SEL_SUPPORTED)
		value = 1u << 2;
	req->cqe.dw0 = value;
	return NVME_SC_SUCCESS;
}

/* ------------------------------------------------- Keep Alive and AER */

static uint16_t admin_async_event(struct ernic_req *req, enum ernic_exec *held)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t dw0 = 0;
	bool have_event = false;

	pthread_mutex_lock(&ctrlr->lock);
	if (ctrlr->nr_aens) {
		dw0 = ctrlr->aens[0];
		memmove(&ctrlr->aens[0], &ctrlr->aens[1], --ctrlr->nr_aens * sizeof(dw0));
		have_event = true;
	} else if (ctrlr->nr_aer_reqs == ERNIC_AERL) {
		pthread_mutex_unlock(&ctrlr->lock);
		return NVME_SC_AER_LIMIT_EXCEEDED;
	} else {
		/* Held until an event arrives or the admin queue goes away. */
		ctrlr->aer_reqs[ctrlr->nr_aer_reqs++] = req;
		*held = ERNIC_EXEC_HELD;
	}
	pthread_mutex_unlock(&ctrlr->lock);
	if (have_event)
		req->cqe.dw0 = dw0;
	return NVME_SC_SUCCESS;
}

uint16_t ernic_admin_exec(struct ernic_req *req, enum ernic_exec *held)
{
	switch (req->sqe.opc) {
	case NVME_ADMIN_IDENTIFY:
		return admin_identify(req);
	case NVME_ADMIN_GET_LOG_PAGE:
		return admin_get_log_page(req);
	case NVME_ADMIN_SET_FEATURES:
		return admin_set_features(req);
	case NVME_ADMIN_GET_FEATURES:
		return admin_get_features(req);
	case NVME_ADMIN_KEEP_ALIVE:
		ernic_ctrlr_keep_alive(req->sq->ctrlr);
		return NVME_SC_SUCCESS;
	case NVME_ADMIN_ASYNC_EVENT:
		return admin_async_event(req, held);
	case NVME_ADMIN_ABORT:
		/* Commands complete in order and fast: report "not aborted" (DW0 bit 0). */
		req->cqe.dw0 = 1;
		return NVME_SC_SUCCESS;
	default:
		return NVME_SC_INVALID_OPCODE;
	}
}
