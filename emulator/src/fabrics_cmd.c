/* SPDX-License-Identifier: MIT */
/*
 * fabrics_cmd.c - Fabrics commands (NVMe over Fabrics 1.1, section 3.3):
 * Connect, Property Get/Set and Disconnect.
 */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "target.h"

struct ernic_test_hooks ernic_test_hooks;

#define CONNECT_IPO(field) ((uint16_t)offsetof(struct nvmf_connect_cmd, field))
#define CONNECT_DATA_IPO(field) ((uint16_t)offsetof(struct nvmf_connect_data, field))

static uint16_t connect_invalid(struct ernic_req *req, uint32_t iattr, uint16_t ipo)
{
	req->cqe.dw0 = NVMF_CONNECT_INVALID_PARAM_DW0(iattr, ipo);
	return NVME_SC_CONNECT_INVALID_PARAM;
}

/*
 * What every Connect checks before it touches a controller: the command's
 * fields and the Connect data (Fabrics 1.1 section 3.3, Figures 20 and 21),
 * which must be exactly 1024 bytes. SQSIZE is checked here too, so a refused
 * admin Connect never creates a controller. On success @data holds the data
 * with both NQNs terminated and *@discovery says which subsystem it names.
 */
uint16_t ernic_fabrics_check(const struct ernic_req *req)
{
	const struct nvmf_connect_cmd *cmd = (const struct nvmf_connect_cmd *)&req->sqe;
	const struct ernic_sq *sq = req->sq;

	if (cmd->fctype != NVMF_FCTYPE_CONNECT)
		return sq->connected ? NVME_SC_SUCCESS : NVME_SC_CMD_SEQ_ERROR;
	if (sq->connected || sq->deleted)
		return NVME_SC_CMD_SEQ_ERROR;
	if (cmd->recfmt != 0)
		return NVME_SC_CONNECT_INCOMPATIBLE_FORMAT;
	/* The exact rule ernic_req_map_data_exact() applies to the Connect data. */
	if (ernic_req_sgl_len(req) != sizeof(struct nvmf_connect_data))
		return NVME_SC_SGL_INVALID_DATA_LEN;
	return NVME_SC_SUCCESS;
}

static uint16_t connect_check(struct ernic_req *req, struct nvmf_connect_data *data, bool *discovery)
{
	const struct nvmf_connect_cmd *cmd = (const struct nvmf_connect_cmd *)&req->sqe;
	struct ernic_sq *sq = req->sq;
	struct ernic_target *tgt;
	void *buf;
	uint16_t status;

	status = ernic_fabrics_check(req);
	if (status)
		return status;
	if (sq->qid_expected != ERNIC_SQ_QID_ANY && cmd->qid != sq->qid_expected)
		return connect_invalid(req, NVMF_CONNECT_IATTR_CMD, CONNECT_IPO(qid));
	status = ernic_req_map_data_exact(req, sizeof(*data), NVME_DATA_HOST_TO_CTRL, &buf);
	if (status)
		return status;
	memcpy(data, buf, sizeof(*data));
	ernic_stat_add(&sq->stats.bytes_written, sizeof(*data));
	data->subnqn[NVMF_NQN_SIZE - 1] = '\0';
	data->hostnqn[NVMF_NQN_SIZE - 1] = '\0';

	*discovery = !strcmp(data->subnqn, NVMF_DISC_NQN);
	/* A queue of a set's port joins the subsystem it names here, as nvmet_find_get_subsys(). */
	if (sq->tgt->nvmf) {
		status = ernic_nvmf_connect_bind(sq, data->subnqn, *discovery);
		if (status == NVME_SC_CONNECT_INVALID_PARAM)
			return connect_invalid(req, NVMF_CONNECT_IATTR_DATA, CONNECT_DATA_IPO(subnqn));
		if (status)
			return status;
	}
	tgt = sq->tgt;
	if (!*discovery && strcmp(data->subnqn, tgt->subnqn))
		return connect_invalid(req, NVMF_CONNECT_IATTR_DATA, CONNECT_DATA_IPO(subnqn));
	if (!data->hostnqn[0] && tgt->allow_hosts)
		return connect_invalid(req, NVMF_CONNECT_IATTR_DATA, CONNECT_DATA_IPO(hostnqn));
	if (!*discovery && !ernic_target_host_allowed(tgt, data->hostnqn))
		return NVME_SC_CONNECT_INVALID_HOST;
	/*
	 * SQSIZE is 0's based and 0 is invalid; MQES bounds it, except that an
	 * admin queue of 32 entries is always accepted (Fabrics 3.3, Figure 20).
	 */
	if (cmd->sqsize == 0 ||
	    cmd->sqsize > (cmd->qid ? tgt->cfg.queue_size - 1 : MAX(tgt->cfg.queue_size - 1, 31u)))
		return connect_invalid(req, NVMF_CONNECT_IATTR_CMD, CONNECT_IPO(sqsize));
	return NVME_SC_SUCCESS;
}

/*
 * The step both Connects end with, as nvmet's nvmet_install_queue: the queue
 * becomes queue QID of @ctrlr with SQSIZE + 1 entries, and the completion
 * carries the controller's CNTLID (Fabrics 3.3, Figure 22). A QID already
 * taken is Command Sequence Error, as nvmet answers since it checks for one.
 */
static uint16_t connect_install_sq(struct ernic_req *req, struct ernic_ctrlr *ctrlr)
{
	const struct nvmf_connect_cmd *cmd = (const struct nvmf_connect_cmd *)&req->sqe;
	int rc = ernic_ctrlr_attach_sq(ctrlr, req->sq, cmd->qid, (uint16_t)(cmd->sqsize + 1));

	/* A controller that went (or failed) between the lookup and here is as unknown as one never made. */
	if (rc == -ENODEV)
		return connect_invalid(req, NVMF_CONNECT_IATTR_DATA, CONNECT_DATA_IPO(cntlid));
	if (rc == -ERANGE)
		return connect_invalid(req, NVMF_CONNECT_IATTR_CMD, CONNECT_IPO(qid));
	if (rc)
		return NVME_SC_CMD_SEQ_ERROR;
	req->cqe.dw0 = ctrlr->cntlid;
	/* As Fabrics 1.1 and Linux nvmet: the response's SQHD says it is off, later CQEs leave SQHD 0. */
	if (cmd->cattr & NVMF_CONNECT_CATTR_DISABLE_SQFLOW) {
		req->sq->sqflow_disabled = true;
		req->cqe.sqhd = NVMF_SQHD_FLOW_DISABLED;
	}
	return NVME_SC_SUCCESS;
}

/* An admin Connect creates the association: a new controller (dynamic model). */
static uint16_t connect_admin(struct ernic_req *req, const struct nvmf_connect_data *data, bool discovery)
{
	const struct nvmf_connect_cmd *cmd = (const struct nvmf_connect_cmd *)&req->sqe;
	struct ernic_ctrlr *ctrlr;
	uint16_t status;

	if (data->cntlid != NVMF_CNTLID_DYNAMIC)
		return connect_invalid(req, NVMF_CONNECT_IATTR_DATA, CONNECT_DATA_IPO(cntlid));
	if (discovery && req->sq->ops->admit_discovery) {
		status = req->sq->ops->admit_discovery(req->sq);
		if (status)
			return status;
	}
	ctrlr = ernic_ctrlr_create(req->sq->tgt, data, cmd->kato, discovery, req->sq->nvmf_port);
	if (!ctrlr)
		return NVME_SC_CONNECT_CTRL_BUSY;
	/* A new controller's admin slot is empty: this cannot fail. */
	status = connect_install_sq(req, ctrlr);
	ernic_ctrlr_put(ctrlr);
	return status;
}

/*
 * An I/O Connect joins the enabled controller the host's admin Connect
 * created, holding a reference from lookup to attach: the controller's other
 * queues may all go meanwhile. It names that controller's subsystem: the
 * discovery NQN, which connect_check() lets past the subsystem and host
 * checks, names no controller with I/O queues. It comes through the port the
 * admin Connect came through: a controller's ANA states, events and removal
 * are that port's (nvmf.c), and one queue on another path would escape all
 * three, so from another port the controller is as unknown as one never made.
 */
static uint16_t connect_io(struct ernic_req *req, const struct nvmf_connect_data *data, bool discovery)
{
	const struct nvmf_connect_cmd *cmd = (const struct nvmf_connect_cmd *)&req->sqe;
	struct ernic_ctrlr *ctrlr;
	uint16_t status;

	if (discovery)
		return connect_invalid(req, NVMF_CONNECT_IATTR_DATA, CONNECT_DATA_IPO(subnqn));
	ctrlr = ernic_ctrlr_lookup(req->sq->tgt, data->cntlid, data->hostnqn);
	if (ERNIC_UNLIKELY(ernic_test_hooks.io_connect_looked_up != NULL))
		ernic_test_hooks.io_connect_looked_up(req);
	if (!ctrlr)
		return connect_invalid(req, NVMF_CONNECT_IATTR_DATA, CONNECT_DATA_IPO(cntlid));
	/* A fatal controller is on its way out (nvmet deletes it): as good as unknown. */
	if (ctrlr->discovery || ernic_ctrlr_failed(ctrlr) || ctrlr->port != req->sq->nvmf_port)
		status = connect_invalid(req, NVMF_CONNECT_IATTR_DATA, CONNECT_DATA_IPO(cntlid));
	else if (!(atomic_load(&ctrlr->csts) & NVME_CSTS_RDY))
		status = NVME_SC_CMD_SEQ_ERROR;
	else if (cmd->qid > ERNIC_MAX_IO_QUEUES) /* the grant is checked where the queue is attached */
		status = connect_invalid(req, NVMF_CONNECT_IATTR_CMD, CONNECT_IPO(qid));
	else
		status = connect_install_sq(req, ctrlr);
	ernic_ctrlr_put(ctrlr);
	return status;
}

static uint16_t fabrics_connect(struct ernic_req *req)
{
	const struct nvmf_connect_cmd *cmd = (const struct nvmf_connect_cmd *)&req->sqe;
	struct ernic_target *from = req->sq->tgt;
	struct nvmf_connect_data data;
	bool discovery;
	uint16_t status;

	status = connect_check(req, &data, &discovery);
	if (status == NVME_SC_SUCCESS)
		status = cmd->qid == 0 ? connect_admin(req, &data, discovery) : connect_io(req, &data, discovery);
	/*
	 * A refused Connect leaves no binding behind: the queue is back at its
	 * port's home target, as it came, for the host's next Connect on it
	 * (nvmet_find_get_subsys() binds nothing to the queue either).
	 */
	if (status && req->sq->tgt != from)
		ernic_nvmf_connect_unbind(req->sq);
	return status;
}

/* Bits 2:0 of ATTRIB: 0 = a 4-byte property, 1 = an 8-byte one. */
static uint16_t property_get(struct ernic_req *req)
{
	const struct nvmf_property_cmd *cmd = (const struct nvmf_property_cmd *)&req->sqe;
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;
	bool size8 = (cmd->attrib & 7) == 1;
	uint64_t value;

	if ((cmd->attrib & 7) > 1)
		return NVME_SC_INVALID_FIELD;
	switch (cmd->ofst) {
	case NVME_REG_CAP:
		if (!size8)
			return NVME_SC_INVALID_FIELD;
		value = ctrlr->cap;
		break;
	case NVME_REG_VS:
		value = ctrlr->vs;
		break;
	case NVME_REG_CC:
		value = ctrlr->cc;
		break;
	case NVME_REG_CSTS:
		value = atomic_load(&ctrlr->csts) & ~ERNIC_CSTS_FATAL;
		break;
	default:
		return NVME_SC_INVALID_FIELD;
	}
	if (size8 && cmd->ofst != NVME_REG_CAP)
		return NVME_SC_INVALID_FIELD;
	req->cqe.dw0 = (uint32_t)value;
	req->cqe.dw1 = (uint32_t)(value >> 32);
	return NVME_SC_SUCCESS;
}

/*
 * CC.EN 0 -> 1, as Linux nvmet's nvmet_start_ctrl(): ready, or CSTS.CFS
 * alone for a configuration this controller cannot run (a page size, a
 * command set, an arbitration mechanism CAP.AMS does not offer, I/O queue
 * entry sizes other than NVM's). That fails nothing (ERNIC_CSTS_FATAL): the
 * queues stay, commands other than Fabrics ones get Command Sequence Error
 * as while disabled, and the host can read CSTS, reset and enable again; a
 * valid enable clears CFS. A controller that failed stays failed.
 */
static void ctrlr_enable(struct ernic_ctrlr *ctrlr, uint32_t cc)
{
	uint32_t mps = (cc >> NVME_CC_MPS_SHIFT) & 0xF;
	uint32_t ams = (cc >> NVME_CC_AMS_SHIFT) & 0x7;
	uint32_t iosqes = (cc >> NVME_CC_IOSQES_SHIFT) & 0xF;
	uint32_t iocqes = (cc >> NVME_CC_IOCQES_SHIFT) & 0xF;
	uint32_t css = (cc >> NVME_CC_CSS_SHIFT) & 0x7;
	bool valid = mps == 0 && ams == 0 && css == 0 && (ctrlr->discovery || (iosqes == 6 && iocqes == 4));
	uint32_t csts = atomic_load(&ctrlr->csts);

	do {
		if (csts & ERNIC_CSTS_FATAL)
			return;
	} while (!atomic_compare_exchange_weak(&ctrlr->csts, &csts, (csts & ~(NVME_CSTS_RDY | NVME_CSTS_CFS)) |
									     (valid ? NVME_CSTS_RDY : NVME_CSTS_CFS)));
}

/* CC writes drive the enable and shutdown state machines (Base 3.6). */
static uint16_t property_set_cc(struct ernic_ctrlr *ctrlr, uint32_t cc)
{
	uint32_t old = ctrlr->cc;

	ctrlr->cc = cc;
	if ((cc & NVME_CC_EN) && !(old & NVME_CC_EN))
		ctrlr_enable(ctrlr, cc);
	if (!(cc & NVME_CC_EN) && (old & NVME_CC_EN)) {
		ernic_ctrlr_shutdown(ctrlr);
		atomic_fetch_and(&ctrlr->csts, ~(NVME_CSTS_RDY | NVME_CSTS_SHST_MASK));
	}
	/*
	 * Shut down, the controller is not ready, as nvmet_update_cc() clears
	 * it: admin and I/O commands get Command Sequence Error (req_gate())
	 * until a reset, CC.EN 1 -> 0 -> 1, makes it ready again (Base 3.6.2).
	 * Not ready first, so no command starts after the flush has begun.
	 */
	if ((cc & NVME_CC_SHN_MASK) && !(old & NVME_CC_SHN_MASK)) {
		atomic_fetch_and(&ctrlr->csts, ~NVME_CSTS_RDY);
		ernic_ctrlr_shutdown(ctrlr);
		atomic_fetch_or(&ctrlr->csts, NVME_CSTS_SHST_COMPLETE);
	}
	if (!(cc & NVME_CC_SHN_MASK) && (old & NVME_CC_SHN_MASK))
		atomic_fetch_and(&ctrlr->csts, ~NVME_CSTS_SHST_MASK);
	return NVME_SC_SUCCESS;
}

static uint16_t property_set(struct ernic_req *req)
{
	const struct nvmf_property_cmd *cmd = (const struct nvmf_property_cmd *)&req->sqe;

	/* CC is the only writable property over fabrics; it is 4 bytes. */
	if ((cmd->attrib & 7) != 0 || cmd->ofst != NVME_REG_CC)
		return NVME_SC_INVALID_FIELD;
	return property_set_cc(req->sq->ctrlr, (uint32_t)cmd->value);
}

uint16_t ernic_fabrics_exec(struct ernic_req *req)
{
	const struct nvmf_fabrics_cmd *cmd = (const struct nvmf_fabrics_cmd *)&req->sqe;
	struct ernic_sq *sq = req->sq;

	if (cmd->fctype == NVMF_FCTYPE_CONNECT)
		return fabrics_connect(req);
	if (!sq->connected)
		return NVME_SC_CMD_SEQ_ERROR;
	switch (cmd->fctype) {
	case NVMF_FCTYPE_PROPERTY_GET:
		return sq->qid == 0 ? property_get(req) : NVME_SC_INVALID_OPCODE;
	case NVMF_FCTYPE_PROPERTY_SET:
		return sq->qid == 0 ? property_set(req) : NVME_SC_INVALID_OPCODE;
	case NVMF_FCTYPE_DISCONNECT:
		if (((const struct nvmf_disconnect_cmd *)&req->sqe)->recfmt != 0)
			return NVME_SC_CONNECT_INCOMPATIBLE_FORMAT;
		/* Disconnect deletes an I/O queue; the admin queue goes with the association (Fabrics 1.1, 3.4). */
		return sq->qid ? NVME_SC_SUCCESS : NVME_SC_DISCONNECT_INVALID_QTYPE;
	default:
		/* No in-band authentication is offered. */
		return NVME_SC_INVALID_OPCODE;
	}
}

const char *ernic_connect_hostnqn_str(const struct nvmf_connect_data *data, char *out, size_t len)
{
	char raw[NVMF_NQN_SIZE];

	if (!data) {
		snprintf(out, len, "?");
		return out;
	}
	memcpy(raw, data->hostnqn, sizeof(raw) - 1);
	raw[sizeof(raw) - 1] = '\0';
	return ernic_log_str(raw, out, len);
}
