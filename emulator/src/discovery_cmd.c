/* SPDX-License-Identifier: MIT */
/*
 * discovery_cmd.c - the discovery controller's admin commands (Fabrics 1.1
 * section 5, as Linux nvmet's discovery.c): Identify Controller only, the
 * Discovery log page (70h), the Keep Alive Timer and Asynchronous Event
 * Configuration features, Keep Alive and AER. ernic_req_exec() chooses this
 * file once, for an admin queue of a controller created for the discovery
 * NQN; a discovery controller has no I/O command set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

static uint16_t disc_identify(struct ernic_req *req)
{
	struct nvme_id_ctrl id;

	if ((uint8_t)req->sqe.cdw10 != NVME_ID_CNS_CTRL)
		return NVME_SC_INVALID_FIELD;
	ernic_identify_ctrlr_common(req->sq->ctrlr, req->sq, &id);
	snprintf(id.subnqn, sizeof(id.subnqn), "%s", NVMF_DISC_NQN);
	id.cntrltype = NVME_CTRL_CNTRLTYPE_DISCOVERY;
	id.maxcmd = ERNIC_ADMIN_QUEUE_SIZE;
	/* The limit ernic_req_send_log_page() holds the discovery log to. */
	id.mdts = (uint8_t)req->sq->tgt->cfg.mdts;
	/* A set's log changes at run time: a persistent discovery controller may ask to hear of it. */
	if (req->sq->tgt->nvmf)
		id.oaes = NVME_CTRL_OAES_DISC_CHANGE;
	return ernic_req_send_data(req, &id, sizeof(id));
}

/*
 * One record: the subsystem at the port the target was told about (Fabrics
 * Figure 38), or none for a host the subsystem would refuse: as Linux nvmet,
 * the log lists only what the reading host may connect to.
 */
static void disc_log_page_build(const struct ernic_ctrlr *ctrlr, struct nvmf_disc_log_hdr *hdr,
				struct nvmf_disc_log_entry *e)
{
	struct ernic_target *tgt = ctrlr->tgt;

	memset(hdr, 0, sizeof(*hdr));
	memset(e, 0, sizeof(*e));
	hdr->recfmt = 0;
	/* One snapshot: a port set meanwhile shows in the next generation, whole. */
	pthread_mutex_lock(&tgt->lock);
	hdr->genctr = tgt->disc_genctr;
	if (!ernic_target_host_allowed(tgt, ctrlr->hostnqn)) {
		pthread_mutex_unlock(&tgt->lock);
		return;
	}
	hdr->numrec = 1;
	e->trtype = tgt->trtype;
	e->adrfam = tgt->adrfam;
	e->subtype = NVMF_SUBTYPE_NVME;
	e->treq = ERNIC_DISC_TREQ;
	e->portid = 1;
	e->cntlid = NVMF_CNTLID_DYNAMIC;
	e->asqsz = ERNIC_ADMIN_QUEUE_SIZE;
	ernic_copy_padded(e->trsvcid, sizeof(e->trsvcid), tgt->trsvcid);
	ernic_copy_padded(e->traddr, sizeof(e->traddr), tgt->traddr);
	if (e->trtype == NVMF_TRTYPE_RDMA)
		ernic_disc_entry_rdma_tsas(e);
	pthread_mutex_unlock(&tgt->lock);
	snprintf(e->subnqn, sizeof(e->subnqn), "%s", tgt->subnqn);
}

void ernic_disc_entry_rdma_tsas(struct nvmf_disc_log_entry *e)
{
	/* Reliable connected queue pairs set up by the RDMA CM, as nvme-rdma expects. */
	struct nvmf_disc_rdma_tsas *tsas = (struct nvmf_disc_rdma_tsas *)e->tsas;

	tsas->qptype = NVMF_RDMA_QPTYPE_CONNECTED;
	tsas->prtype = NVMF_RDMA_PRTYPE_NOT_SPECIFIED;
	tsas->cms = NVMF_RDMA_CMS_RDMA_CM;
}

static uint16_t disc_get_log_page(struct ernic_req *req)
{
	struct {
		struct nvmf_disc_log_hdr hdr;
		struct nvmf_disc_log_entry entry;
	} page;

	_Static_assert(sizeof(page) == sizeof(page.hdr) + sizeof(page.entry), "discovery log page is packed");
	if ((uint8_t)req->sqe.cdw10 != NVME_LOG_DISC)
		return NVME_SC_INVALID_LOG_PAGE;
	if (req->sq->tgt->nvmf) {
		size_t size;
		void *log;
		uint16_t status;

		/* Read without RAE, it rearms the Discovery Log Page Change notice. */
		ernic_ctrlr_aen_rearm(req, NVME_AEC_DISC_CHANGE);
		log = ernic_nvmf_disc_log(req->sq->tgt->nvmf, req->sq->ctrlr->hostnqn, &size);
		if (!log)
			return NVME_SC_INTERNAL;
		status = ernic_req_send_log_page(req, log, size);
		free(log);
		return status;
	}
	disc_log_page_build(req->sq->ctrlr, &page.hdr, &page.entry);
	return ernic_req_send_log_page(req, &page, sizeof(page));
}

static const struct ernic_feature disc_features[] = {
	{ NVME_FEAT_ASYNC_EVENT, ernic_feat_set_async_event, ernic_feat_get_async_event },
	{ NVME_FEAT_KATO, ernic_feat_set_kato, ernic_feat_get_kato },
};

uint16_t ernic_discovery_exec(struct ernic_req *req, enum ernic_exec *held)
{
	switch (req->sqe.opc) {
	case NVME_ADMIN_IDENTIFY:
		return disc_identify(req);
	case NVME_ADMIN_GET_LOG_PAGE:
		return disc_get_log_page(req);
	case NVME_ADMIN_SET_FEATURES:
		return ernic_set_features(req, disc_features, ERNIC_ARRAY_SIZE(disc_features));
	case NVME_ADMIN_GET_FEATURES:
		return ernic_get_features(req, disc_features, ERNIC_ARRAY_SIZE(disc_features));
	default:
		return ernic_admin_exec_common(req, held);
	}
}
