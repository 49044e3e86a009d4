/* SPDX-License-Identifier: MIT */
/*
 * admin_cmd.c - the I/O controller's admin commands: Identify, Get Log Page,
 * Set/Get Features, Keep Alive, Asynchronous Event Request, Abort. The parts
 * a discovery controller shares (discovery_cmd.c) are exported through
 * target.h: padded strings, sending a page, the common Identify Controller
 * fields, the log page window, the Features machinery and AER.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

#define ERNIC_VID 0x1DD8
#define ERNIC_FIRMWARE "1.0"
#define ERNIC_TEMP_KELVIN 313	 /* reported composite temperature, 40 C */
#define ERNIC_WCTEMP_KELVIN 343 /* warning composite temperature threshold, 70 C */
#define ERNIC_CCTEMP_KELVIN 358 /* critical composite temperature threshold, 85 C */

void ernic_copy_padded(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	memset(dst, ' ', len);
	memcpy(dst, src, n < len ? n : len);
}

uint16_t ernic_req_send_data(struct ernic_req *req, const void *src, uint32_t len)
{
	void *buf;
	uint16_t status;

	status = ernic_req_map_data_atleast(req, len, NVME_DATA_CTRL_TO_HOST, &buf);
	if (status)
		return status;
	memcpy(buf, src, len);
	ernic_stat_add(&req->sq->stats.bytes_read, len);
	return NVME_SC_SUCCESS;
}

static struct ernic_ns *find_ns(struct ernic_target *tgt, uint32_t nsid)
{
	return ernic_target_ns(tgt, nsid);
}

/*
 * A valid NSID is 1..NN (Base 2.0 3.2.1); with no namespace attached it is
 * inactive, and Identify of it returns a zero-filled page rather than
 * Invalid Namespace or Format, which is for NSIDs outside that range.
 */
static bool nsid_valid(uint32_t nsid)
{
	return nsid >= 1 && nsid <= ERNIC_MAX_NS;
}

/* ---------------------------------------------------------------- Identify */

void ernic_identify_ctrlr_common(const struct ernic_ctrlr *ctrlr, const struct ernic_sq *sq, struct nvme_id_ctrl *id)
{
	const struct ernic_target *tgt = ctrlr->tgt;
	uint32_t icd = sq->ops->in_capsule_data_size;

	memset(id, 0, sizeof(*id));
	id->vid = ERNIC_VID;
	id->ssvid = ERNIC_VID;
	ernic_copy_padded(id->sn, sizeof(id->sn), tgt->serial);
	ernic_copy_padded(id->mn, sizeof(id->mn), tgt->model);
	ernic_copy_padded(id->fr, sizeof(id->fr), ERNIC_FIRMWARE);
	id->rab = 6;
	id->cntlid = ctrlr->cntlid;
	id->ver = ctrlr->vs;
	id->kas = 10; /* keep-alive granularity in 100 ms units */
	id->ctratt = NVME_CTRL_CTRATT_TBKAS;
	id->sqes = (6 << 4) | 6;
	id->cqes = (4 << 4) | 4;
	/* Keyed SGL Data Blocks are RDMA's; NVMe/TCP carries data by Transport SGL Data Blocks (as nvmet reports). */
	id->sgls = NVME_CTRL_SGLS_SUPPORTED | (sq->ops->trtype != NVMF_TRTYPE_TCP ? NVME_CTRL_SGLS_KEYED : 0) |
		   (icd ? NVME_CTRL_SGLS_OFFSET : 0);
	id->ioccsz = ERNIC_IOCCSZ + icd / 16;
	id->iorcsz = ERNIC_IORCSZ;
	id->msdbd = 1;
	id->ofcs = NVME_CTRL_OFCS_DISCONNECT;
	id->aerl = ERNIC_AERL - 1;
	id->elpe = ERNIC_ERRLOG_ENTRIES - 1;
	id->lpa = NVME_CTRL_LPA_EXTENDED;
}

static void identify_ctrlr(const struct ernic_ctrlr *ctrlr, const struct ernic_sq *sq, struct nvme_id_ctrl *id)
{
	const struct ernic_target *tgt = ctrlr->tgt;

	ernic_identify_ctrlr_common(ctrlr, sq, id);
	snprintf(id->subnqn, sizeof(id->subnqn), "%s", tgt->subnqn);
	id->cntrltype = NVME_CTRL_CNTRLTYPE_IO;
	id->maxcmd = (uint16_t)tgt->cfg.queue_size;
	id->mdts = (uint8_t)tgt->cfg.mdts;
	id->oaes = NVME_CTRL_OAES_NS_ATTR;
	/*
	 * No per-namespace SMART data (bit 0): the SMART page is the controller's
	 * whatever the NSID. No bit 5 either: it promises LIDs 12h and 13h and the
	 * command scope in Commands Supported and Effects besides LID 00h (Base
	 * 2.0 Figure 275), and of those only LID 00h is served.
	 */
	id->lpa |= NVME_CTRL_LPA_CMD_EFFECTS;
	id->acl = 3;
	id->frmw = (1 << 1) | 1; /* one slot, read-only */
	id->wctemp = ERNIC_WCTEMP_KELVIN;
	id->cctemp = ERNIC_CCTEMP_KELVIN;
	/*
	 * NN is the highest valid NSID, whether or not a namespace is attached
	 * there now (Base 2.0 3.2.1): a host forgets namespaces above it, and
	 * any target gains namespaces at run time (ernic_target_add_ns_at()),
	 * so every slot is valid.
	 */
	id->nn = ERNIC_MAX_NS;
	/*
	 * ANA reporting (Base 8.1.1), as Linux nvmet: several ports and
	 * controllers may reach the subsystem, so a host builds one multipath
	 * node over them. MNAN bounds the NSIDs the ANA log page lists.
	 */
	id->cmic = NVME_CTRL_CMIC_MULTI_PORT | NVME_CTRL_CMIC_MULTI_CTRL | NVME_CTRL_CMIC_ANA;
	id->oaes |= NVME_CTRL_OAES_ANA_CHANGE;
	id->anacap = NVME_CTRL_ANACAP_ALL_STATES | NVME_CTRL_ANACAP_GRPID_STATIC;
	id->anatt = 10; /* seconds a transition may last */
	id->anagrpmax = ERNIC_MAX_ANA_GROUPS;
	id->nanagrpid = ERNIC_MAX_ANA_GROUPS;
	id->mnan = ERNIC_MAX_NS;
	id->oncs = NVME_CTRL_ONCS_DSM | NVME_CTRL_ONCS_WRITE_ZEROES;
	/* The file backend's page cache is volatile; Flush of NSID FFFFFFFFh flushes them all (io_cmd.c). */
	id->vwc = NVME_CTRL_VWC_PRESENT | NVME_CTRL_VWC_FLUSH_ALL_NS;
	id->awun = 0;
	/* One power state: 25 W max power in 0.01 W units. */
	id->psd[0].bytes[0] = 0xC4;
	id->psd[0].bytes[1] = 0x09;
}

static void identify_ns(const struct ernic_ns *ns, struct nvme_id_ns *id)
{
	/* Loaded once: a resize meanwhile must not leave NCAP or NUSE above NSZE, or NVMCAP apart from them. */
	uint64_t nlb = ns->nlb, bytes = nlb << ns->lba_shift;

	memset(id, 0, sizeof(*id));
	id->nsze = nlb;
	id->ncap = nlb;
	id->nuse = nlb;
	id->nsfeat = 0;
	id->nlbaf = 0;
	id->flbas = 0;
	id->dlfeat = 1 | (1 << 3); /* deallocated blocks read as zeroes; Write Zeroes may deallocate */
	id->lbaf[0].lbads = (uint8_t)ns->lba_shift;
	id->lbaf[0].rp = 0;
	id->nmic = NVME_NS_NMIC_SHARED;
	id->anagrpid = ns->anagrpid;
	memcpy(id->nguid, ns->nguid, sizeof(id->nguid));
	memcpy(id->eui64, ns->eui64, sizeof(id->eui64));
	/* NVMCAP: namespace capacity in bytes, 128-bit little endian. */
	memcpy(id->nvmcap, &bytes, sizeof(bytes));
}

static size_t ns_id_descs(const struct ernic_ns *ns, uint8_t *page)
{
	size_t off = 0;
	struct nvme_ns_id_desc d;

	d = (struct nvme_ns_id_desc){ .nidt = NVME_NIDT_EUI64, .nidl = 8 };
	memcpy(page + off, &d, sizeof(d));
	memcpy(page + off + sizeof(d), ns->eui64, 8);
	off += sizeof(d) + 8;
	d = (struct nvme_ns_id_desc){ .nidt = NVME_NIDT_NGUID, .nidl = 16 };
	memcpy(page + off, &d, sizeof(d));
	memcpy(page + off + sizeof(d), ns->nguid, 16);
	off += sizeof(d) + 16;
	d = (struct nvme_ns_id_desc){ .nidt = NVME_NIDT_UUID, .nidl = 16 };
	memcpy(page + off, &d, sizeof(d));
	memcpy(page + off + sizeof(d), ns->uuid, 16);
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
	switch (cns) {
	case NVME_ID_CNS_CTRL:
		identify_ctrlr(ctrlr, req->sq, (struct nvme_id_ctrl *)page);
		break;
	case NVME_ID_CNS_NS:
		ns = find_ns(tgt, nsid);
		if (ns)
			identify_ns(ns, (struct nvme_id_ns *)page);
		else if (!nsid_valid(nsid))
			return NVME_SC_INVALID_NS;
		break;
	case NVME_ID_CNS_NS_ACTIVE_LIST: {
		uint32_t *list = (uint32_t *)page, n = 0;

		if (nsid >= 0xFFFFFFFE)
			return NVME_SC_INVALID_NS;
		for (uint32_t i = nsid + 1; i <= ERNIC_MAX_NS && n < 1024; i++)
			if (find_ns(tgt, i))
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
		/* All zero for NVM namespaces, active or inactive. */
		if (!nsid_valid(nsid))
			return NVME_SC_INVALID_NS;
		break;
	default:
		return NVME_SC_INVALID_FIELD;
	}
	return ernic_req_send_data(req, page, sizeof(page));
}

/* ------------------------------------------------------------ Log pages */

static void put_u128(uint8_t dst[16], uint64_t v)
{
	memset(dst, 0, 16);
	memcpy(dst, &v, sizeof(v));
}

/*
 * Critical Warning bit 1 (Base 2.0 Figure 207): a temperature greater than or
 * equal to its over threshold, or less than or equal to its under threshold.
 * The composite and sensor 1 read the same. Called with ctrlr->lock held.
 */
static bool smart_temp_warning_locked(const struct ernic_ctrlr *ctrlr)
{
	for (uint32_t t = 0; t <= ERNIC_TEMP_SENSORS; t++)
		if (ERNIC_TEMP_KELVIN >= ctrlr->temp_thresh[t][0] || ERNIC_TEMP_KELVIN <= ctrlr->temp_thresh[t][1])
			return true;
	return false;
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
	pthread_mutex_lock(&ctrlr->lock);
	if (smart_temp_warning_locked(ctrlr))
		log->critical_warning |= NVME_SMART_CRIT_TEMPERATURE;
	pthread_mutex_unlock(&ctrlr->lock);
}

/*
 * The window a Get Log Page asks for (Base 2.0 5.16): NUMDU:NUMDL + 1 dwords
 * (up to 2^32, so counted in 64 bits) from LPO, which must be dword aligned
 * and inside the page, and no more than MDTS. LPO is a byte offset: OT set
 * asks for an index, which only a log with IOS set in Supported Log Pages
 * takes, and no page here sets it (supported_log(), nor the discovery log).
 */
static uint16_t log_page_window(const struct ernic_req *req, size_t size, uint64_t *lpo, uint64_t *len)
{
	uint64_t numd = ((uint64_t)(req->sqe.cdw10 >> 16) | (uint64_t)(req->sqe.cdw11 & 0xFFFF) << 16) + 1;

	if (req->sqe.cdw14 & NVME_LOG_OT)
		return NVME_SC_INVALID_FIELD;
	*lpo = (uint64_t)req->sqe.cdw12 | (uint64_t)req->sqe.cdw13 << 32;
	*len = numd * 4;
	if ((*lpo & 3) || *lpo > size)
		return NVME_SC_INVALID_FIELD;
	if (*len > req->sq->tgt->max_xfer)
		return NVME_SC_INVALID_FIELD;
	return NVME_SC_SUCCESS;
}

/*
 * The window of a page of @size bytes, and the host's buffer for it: @buf
 * takes @data_len bytes from the page's byte @lpo, and the transport sends
 * the rest of the window as zeros (under MDTS 0 a host may ask for up to
 * 4 GiB of a 512-byte page, which needs no buffer of that size). A log whose
 * read has side effects maps before it makes them, so that a command that
 * fails (a bad window, an SGL too short for it) clears nothing.
 */
static uint16_t log_page_map(struct ernic_req *req, size_t size, uint64_t *lpo, void **buf, uint64_t *data_len)
{
	uint64_t len;
	uint16_t status = log_page_window(req, size, lpo, &len);

	if (status)
		return status;
	*data_len = MIN(len, size - *lpo);
	status = ernic_req_map_c2h_zero_tail(req, (uint32_t)len, (uint32_t)*data_len, buf);
	if (status)
		return status;
	ernic_stat_add(&req->sq->stats.bytes_read, len);
	return NVME_SC_SUCCESS;
}

uint16_t ernic_req_send_log_page(struct ernic_req *req, const void *page, size_t size)
{
	uint64_t lpo, data_len;
	void *buf;
	uint16_t status = log_page_map(req, size, &lpo, &buf, &data_len);

	if (status)
		return status;
	if (data_len)
		memcpy(buf, (const uint8_t *)page + lpo, data_len);
	return NVME_SC_SUCCESS;
}

/*
 * ANA (0Ch): built per controller, since the states depend on the port it
 * came through (nvmf.c). Read with RAE clear, it rearms the ANA Change notice.
 */
static uint16_t admin_ana_log(struct ernic_req *req)
{
	size_t size;
	void *page;
	uint16_t status;

	ernic_ctrlr_aen_rearm(req, NVME_AEC_ANA_CHANGE);
	page = ernic_ana_log_build(req->sq->ctrlr, req->sqe.cdw10 & NVME_LOG_ANA_RGO, &size);
	if (!page)
		return NVME_SC_INTERNAL;
	status = ernic_req_send_log_page(req, page, size);
	free(page);
	return status;
}

/* The log pages an I/O controller returns; Supported Log Pages (00h) is built from this list. */
static const uint8_t admin_log_pages[] = {
	NVME_LOG_SUPPORTED, NVME_LOG_ERROR,	    NVME_LOG_SMART,
	NVME_LOG_FW_SLOT,   NVME_LOG_CHANGED_NS, NVME_LOG_CMD_EFFECTS, NVME_LOG_ANA,
};

/*
 * What each command does besides moving its data (Base 2.0 Figure 210); an
 * opcode not listed is unsupported. Kept beside the dispatch below and in
 * io_cmd.c, and checked against them by ctrlr_ut.
 */
static const struct {
	uint8_t opc;
	uint32_t effects;
} admin_cmd_effects[] = {
	{ NVME_ADMIN_GET_LOG_PAGE, NVME_CMD_EFFECTS_CSUPP },
	{ NVME_ADMIN_IDENTIFY, NVME_CMD_EFFECTS_CSUPP },
	{ NVME_ADMIN_ABORT, NVME_CMD_EFFECTS_CSUPP },
	{ NVME_ADMIN_SET_FEATURES, NVME_CMD_EFFECTS_CSUPP },
	{ NVME_ADMIN_GET_FEATURES, NVME_CMD_EFFECTS_CSUPP },
	{ NVME_ADMIN_ASYNC_EVENT, NVME_CMD_EFFECTS_CSUPP },
	{ NVME_ADMIN_KEEP_ALIVE, NVME_CMD_EFFECTS_CSUPP },
}, nvm_cmd_effects[] = {
	{ NVME_CMD_FLUSH, NVME_CMD_EFFECTS_CSUPP },
	{ NVME_CMD_WRITE, NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC },
	{ NVME_CMD_READ, NVME_CMD_EFFECTS_CSUPP },
	{ NVME_CMD_WRITE_ZEROES, NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC },
	{ NVME_CMD_DSM, NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC },
};

static void supported_log(struct nvme_supported_log *log)
{
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(admin_log_pages); i++)
		log->lid[admin_log_pages[i]] = NVME_LOG_LSUPP;
}

/* Only the NVM command set's I/O commands exist (Base 2.0 5.16.1.6: CSI selects them), as nvmet answers. */
static uint16_t cmd_effects_log(const struct ernic_req *req, struct nvme_cmd_effects_log *log)
{
	if (NVME_LOG_CSI(req->sqe.cdw14) != NVME_CSI_NVM)
		return NVME_SC_INVALID_LOG_PAGE;
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(admin_cmd_effects); i++)
		log->acs[admin_cmd_effects[i].opc] = admin_cmd_effects[i].effects;
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(nvm_cmd_effects); i++)
		log->iocs[nvm_cmd_effects[i].opc] = nvm_cmd_effects[i].effects;
	return NVME_SC_SUCCESS;
}

/*
 * Changed Namespace List: what ernic_target_ns_changed() gathered. Reading it
 * with RAE clear empties it and rearms the Namespace Attribute Notice (Base
 * 2.0 5.2: an event type stays masked until its log page is read); a read
 * that fails (log_page_map()) does neither. The list is copied and emptied
 * under the controller's lock, so a change that comes meanwhile is either in
 * this read or kept for the next.
 */
static uint16_t changed_ns_log(struct ernic_req *req)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	struct nvme_changed_ns_log log;
	uint64_t lpo, data_len;
	void *buf;
	uint16_t status = log_page_map(req, sizeof(log), &lpo, &buf, &data_len);

	if (status)
		return status;
	memset(&log, 0, sizeof(log));
	pthread_mutex_lock(&ctrlr->lock);
	if (ctrlr->changed_ns_overflow)
		log.nsid[0] = NVME_CHANGED_NS_OVERFLOW;
	else
		memcpy(log.nsid, ctrlr->changed_ns, ctrlr->nr_changed_ns * sizeof(uint32_t));
	if (!(req->sqe.cdw10 & NVME_LOG_RAE)) {
		ctrlr->nr_changed_ns = 0;
		ctrlr->changed_ns_overflow = false;
	}
	ernic_ctrlr_aen_rearm_locked(ctrlr, req, NVME_CTRL_OAES_NS_ATTR);
	pthread_mutex_unlock(&ctrlr->lock);
	if (data_len)
		memcpy(buf, (const uint8_t *)&log + lpo, data_len);
	return NVME_SC_SUCCESS;
}

static uint16_t admin_get_log_page(struct ernic_req *req)
{
	uint16_t status;
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t lid = (uint8_t)req->sqe.cdw10;
	_Alignas(8) uint8_t page[ERNIC_ERRLOG_ENTRIES * sizeof(struct nvme_error_log_entry) + 4096];
	size_t size = 0;

	memset(page, 0, sizeof(page));
	switch (lid) {
	case NVME_LOG_SUPPORTED:
		supported_log((struct nvme_supported_log *)page);
		size = sizeof(struct nvme_supported_log);
		break;
	case NVME_LOG_CMD_EFFECTS:
		status = cmd_effects_log(req, (struct nvme_cmd_effects_log *)page);
		if (status)
			return status;
		size = sizeof(struct nvme_cmd_effects_log);
		break;
	case NVME_LOG_ERROR:
		pthread_mutex_lock(&ctrlr->lock);
		memcpy(page, ctrlr->errlog, sizeof(ctrlr->errlog));
		pthread_mutex_unlock(&ctrlr->lock);
		size = sizeof(ctrlr->errlog);
		break;
	case NVME_LOG_SMART:
		if (req->sqe.nsid != 0 && req->sqe.nsid != 0xFFFFFFFF && !find_ns(ctrlr->tgt, req->sqe.nsid))
			return NVME_SC_INVALID_NS;
		/* Read with RAE clear, it rearms the Temperature Threshold event (feat_set_temp_thresh()). */
		ernic_ctrlr_aen_rearm(req, NVME_AEC_SMART_TEMPERATURE);
		smart_log(ctrlr, (struct nvme_smart_log *)page);
		size = sizeof(struct nvme_smart_log);
		break;
	case NVME_LOG_FW_SLOT: {
		struct nvme_fw_slot_log *fw = (struct nvme_fw_slot_log *)page;

		fw->afi = 1;
		ernic_copy_padded(fw->frs[0], sizeof(fw->frs[0]), ERNIC_FIRMWARE);
		size = sizeof(*fw);
		break;
	}
	case NVME_LOG_CHANGED_NS:
		return changed_ns_log(req);
	case NVME_LOG_ANA:
		return admin_ana_log(req);
	default:
		/* The discovery log page (70h) exists only on a discovery controller. */
		return NVME_SC_INVALID_LOG_PAGE;
	}
	return ernic_req_send_log_page(req, page, size);
}

/* ------------------------------------------------------------- Features */

static uint16_t feat_set_num_queues(struct ernic_req *req, uint32_t cdw11)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t nsqr = cdw11 & 0xFFFF, ncqr = cdw11 >> 16, grant;

	if (nsqr == 0xFFFF || ncqr == 0xFFFF)
		return NVME_SC_INVALID_FIELD;
	grant = MIN(MAX(nsqr, ncqr) + 1, ctrlr->tgt->cfg.queues);
	/* Under the lock an I/O Connect attaches under (ernic_ctrlr_attach_sq()): no queue past the grant. */
	pthread_mutex_lock(&ctrlr->lock);
	/* Once I/O queues exist the count is fixed, as SPDK answers. */
	if (ctrlr->nr_sqs > 1) {
		pthread_mutex_unlock(&ctrlr->lock);
		return NVME_SC_CMD_SEQ_ERROR;
	}
	ctrlr->nr_io_queues = grant;
	ctrlr->nr_queues_set = true;
	pthread_mutex_unlock(&ctrlr->lock);
	req->cqe.dw0 = (grant - 1) | (grant - 1) << 16;
	return NVME_SC_SUCCESS;
}

static uint16_t feat_get_num_queues(const struct ernic_req *req, bool current, uint32_t *dw0)
{
	const struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t n = current ? ctrlr->nr_io_queues : ctrlr->tgt->cfg.queues;

	*dw0 = (n - 1) | (n - 1) << 16;
	return NVME_SC_SUCCESS;
}

uint16_t ernic_feat_set_kato(struct ernic_req *req, uint32_t cdw11)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;

	/*
	 * Under the lock ernic_ctrlr_keep_alive() restarts the timer under; KATO
	 * 0 stops it, except on a discovery controller. Get Features reports
	 * the KATO in force.
	 */
	pthread_mutex_lock(&ctrlr->lock);
	ctrlr->kato_ms = ernic_ctrlr_kato_ms(ctrlr, cdw11);
	ernic_ctrlr_keep_alive_locked(ctrlr);
	pthread_mutex_unlock(&ctrlr->lock);
	return NVME_SC_SUCCESS;
}

uint16_t ernic_feat_get_kato(const struct ernic_req *req, bool current, uint32_t *dw0)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;

	pthread_mutex_lock(&ctrlr->lock);
	*dw0 = current ? ctrlr->kato_ms : 0;
	pthread_mutex_unlock(&ctrlr->lock);
	return NVME_SC_SUCCESS;
}

uint16_t ernic_feat_set_async_event(struct ernic_req *req, uint32_t cdw11)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;

	/* Under the lock: the control path reads it to decide whom to tell of a change. */
	pthread_mutex_lock(&ctrlr->lock);
	ctrlr->aec = cdw11;
	pthread_mutex_unlock(&ctrlr->lock);
	return NVME_SC_SUCCESS;
}

uint16_t ernic_feat_get_async_event(const struct ernic_req *req, bool current, uint32_t *dw0)
{
	const struct ernic_ctrlr *ctrlr = req->sq->ctrlr;

	*dw0 = current ? ctrlr->aec : 0;
	return NVME_SC_SUCCESS;
}

static uint16_t feat_set_vwc(struct ernic_req *req, uint32_t cdw11)
{
	req->sq->ctrlr->vwc = cdw11 & 1;
	return NVME_SC_SUCCESS;
}

static uint16_t feat_get_vwc(const struct ernic_req *req, bool current, uint32_t *dw0)
{
	const struct ernic_ctrlr *ctrlr = req->sq->ctrlr;

	*dw0 = current ? ctrlr->vwc : 1;
	return NVME_SC_SUCCESS;
}

static uint16_t feat_set_arbitration(struct ernic_req *req, uint32_t cdw11)
{
	req->sq->ctrlr->arbitration = cdw11;
	return NVME_SC_SUCCESS;
}

static uint16_t feat_get_arbitration(const struct ernic_req *req, bool current, uint32_t *dw0)
{
	const struct ernic_ctrlr *ctrlr = req->sq->ctrlr;

	*dw0 = current ? ctrlr->arbitration : 0;
	return NVME_SC_SUCCESS;
}

/* One power state, PS0: the only one a host may select. */
static uint16_t feat_set_power_mgmt(struct ernic_req *req, uint32_t cdw11)
{
	(void)req;
	return (cdw11 & 0x1F) == 0 ? NVME_SC_SUCCESS : NVME_SC_INVALID_FIELD;
}

static uint16_t feat_get_power_mgmt(const struct ernic_req *req, bool current, uint32_t *dw0)
{
	(void)req;
	(void)current;
	*dw0 = 0;
	return NVME_SC_SUCCESS;
}

/*
 * Temperature Threshold (Base 2.0 5.27.1.3): one over and one under threshold
 * for each sensor the SMART log reports, the composite (TMPSEL 0) and sensor 1,
 * chosen by TMPSEL (CDW11 19:16) and THSEL (21:20); Set with TMPSEL Fh sets
 * every sensor. A sensor the SMART log does not report (TMPSEL 2..Eh), or THSEL
 * 2 or 3, is Invalid Field.
 */
#define TEMP_TMPSEL(cdw11) (((cdw11) >> 16) & 0xF)
#define TEMP_THSEL(cdw11) (((cdw11) >> 20) & 0x3)
#define TEMP_TMPSEL_ALL 0xF

/* Over: WCTEMP for the composite, FFFFh (none) for a sensor; under: 0 (none). */
static uint16_t temp_thresh_default(uint32_t tmpsel, uint32_t thsel)
{
	if (thsel)
		return 0;
	return tmpsel ? 0xFFFF : ERNIC_WCTEMP_KELVIN;
}

void ernic_feat_init(struct ernic_ctrlr *ctrlr)
{
	for (uint32_t t = 0; t <= ERNIC_TEMP_SENSORS; t++)
		for (uint32_t th = 0; th < 2; th++)
			ctrlr->temp_thresh[t][th] = temp_thresh_default(t, th);
}

static uint16_t feat_set_temp_thresh(struct ernic_req *req, uint32_t cdw11)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t tmpsel = TEMP_TMPSEL(cdw11), thsel = TEMP_THSEL(cdw11);
	bool was, event;

	if (thsel > 1 || (tmpsel > ERNIC_TEMP_SENSORS && tmpsel != TEMP_TMPSEL_ALL))
		return NVME_SC_INVALID_FIELD;
	pthread_mutex_lock(&ctrlr->lock);
	was = smart_temp_warning_locked(ctrlr);
	for (uint32_t t = 0; t <= ERNIC_TEMP_SENSORS; t++)
		if (t == tmpsel || tmpsel == TEMP_TMPSEL_ALL)
			ctrlr->temp_thresh[t][thsel] = (uint16_t)cdw11;
	/*
	 * Critical Warning bit 1 appearing is told as a SMART / Health event
	 * (Base 2.0 5.2). The thresholds are this controller's own, so the event
	 * is too, not the target's (ernic_target_aen()).
	 */
	event = !was && smart_temp_warning_locked(ctrlr) &&
		ernic_ctrlr_aen_notify_locked(ctrlr, NVME_AEC_SMART_TEMPERATURE);
	pthread_mutex_unlock(&ctrlr->lock);
	/* Outside the lock, which ernic_ctrlr_add_aen() takes; the AER completes before this command. */
	if (event)
		ernic_ctrlr_add_aen(ctrlr, NVME_AER_DW0(NVME_AER_TYPE_SMART, NVME_AER_SMART_TEMP_THRESH, NVME_LOG_SMART));
	return NVME_SC_SUCCESS;
}

static uint16_t feat_get_temp_thresh(const struct ernic_req *req, bool current, uint32_t *dw0)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t cdw11 = req->sqe.cdw11, tmpsel = TEMP_TMPSEL(cdw11), thsel = TEMP_THSEL(cdw11);
	uint16_t t;

	if (thsel > 1 || tmpsel > ERNIC_TEMP_SENSORS)
		return NVME_SC_INVALID_FIELD;
	pthread_mutex_lock(&ctrlr->lock);
	t = current ? ctrlr->temp_thresh[tmpsel][thsel] : temp_thresh_default(tmpsel, thsel);
	pthread_mutex_unlock(&ctrlr->lock);
	*dw0 = t | tmpsel << 16 | thsel << 20;
	return NVME_SC_SUCCESS;
}

static uint16_t feat_set_err_recovery(struct ernic_req *req, uint32_t cdw11)
{
	req->sq->ctrlr->err_recovery = cdw11;
	return NVME_SC_SUCCESS;
}

static uint16_t feat_get_err_recovery(const struct ernic_req *req, bool current, uint32_t *dw0)
{
	const struct ernic_ctrlr *ctrlr = req->sq->ctrlr;

	*dw0 = current ? ctrlr->err_recovery : 0;
	return NVME_SC_SUCCESS;
}

static const struct ernic_feature admin_features[] = {
	{ NVME_FEAT_ARBITRATION, feat_set_arbitration, feat_get_arbitration },
	{ NVME_FEAT_POWER_MGMT, feat_set_power_mgmt, feat_get_power_mgmt },
	{ NVME_FEAT_TEMP_THRESH, feat_set_temp_thresh, feat_get_temp_thresh },
	{ NVME_FEAT_ERR_RECOVERY, feat_set_err_recovery, feat_get_err_recovery },
	{ NVME_FEAT_VOLATILE_WC, feat_set_vwc, feat_get_vwc },
	{ NVME_FEAT_NUM_QUEUES, feat_set_num_queues, feat_get_num_queues },
	{ NVME_FEAT_ASYNC_EVENT, ernic_feat_set_async_event, ernic_feat_get_async_event },
	{ NVME_FEAT_KATO, ernic_feat_set_kato, ernic_feat_get_kato },
};

static const struct ernic_feature *feature_find(const struct ernic_feature *feats, size_t n, uint8_t fid)
{
	for (size_t i = 0; i < n; i++)
		if (feats[i].fid == fid)
			return &feats[i];
	return NULL;
}

uint16_t ernic_set_features(struct ernic_req *req, const struct ernic_feature *feats, size_t n)
{
	const struct ernic_feature *f;

	if (req->sqe.cdw10 & (1u << 31))
		return NVME_SC_FEATURE_NOT_SAVEABLE;
	f = feature_find(feats, n, (uint8_t)req->sqe.cdw10);
	if (!f)
		return NVME_SC_INVALID_FIELD;
	return f->set(req, req->sqe.cdw11);
}

uint16_t ernic_get_features(struct ernic_req *req, const struct ernic_feature *feats, size_t n)
{
	uint32_t sel = (req->sqe.cdw10 >> 8) & 7, dw0;
	const struct ernic_feature *f;
	uint16_t status;

	if (sel > NVME_FEAT_SEL_SUPPORTED)
		return NVME_SC_INVALID_FIELD;
	f = feature_find(feats, n, (uint8_t)req->sqe.cdw10);
	if (!f)
		return NVME_SC_INVALID_FIELD;
	/* Capabilities: changeable, not saveable, not per-namespace (Base Figure 328). */
	if (sel == NVME_FEAT_SEL_SUPPORTED) {
		req->cqe.dw0 = 1u << 2;
		return NVME_SC_SUCCESS;
	}
	status = f->get(req, sel == NVME_FEAT_SEL_CURRENT, &dw0);
	if (!status)
		req->cqe.dw0 = dw0;
	return status;
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

static uint16_t admin_abort(struct ernic_req *req)
{
	/* Commands complete in order and fast: report "not aborted" (DW0 bit 0). */
	req->cqe.dw0 = 1;
	return NVME_SC_SUCCESS;
}

uint16_t ernic_admin_exec_common(struct ernic_req *req, enum ernic_exec *held)
{
	switch (req->sqe.opc) {
	case NVME_ADMIN_KEEP_ALIVE:
		ernic_ctrlr_keep_alive(req->sq->ctrlr);
		return NVME_SC_SUCCESS;
	case NVME_ADMIN_ASYNC_EVENT:
		return admin_async_event(req, held);
	case NVME_ADMIN_ABORT:
		return admin_abort(req);
	default:
		return NVME_SC_INVALID_OPCODE;
	}
}

uint16_t ernic_admin_exec(struct ernic_req *req, enum ernic_exec *held)
{
	switch (req->sqe.opc) {
	case NVME_ADMIN_IDENTIFY:
		return admin_identify(req);
	case NVME_ADMIN_GET_LOG_PAGE:
		return admin_get_log_page(req);
	case NVME_ADMIN_SET_FEATURES:
		return ernic_set_features(req, admin_features, ERNIC_ARRAY_SIZE(admin_features));
	case NVME_ADMIN_GET_FEATURES:
		return ernic_get_features(req, admin_features, ERNIC_ARRAY_SIZE(admin_features));
	default:
		return ernic_admin_exec_common(req, held);
	}
}
