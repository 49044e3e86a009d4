/* SPDX-License-Identifier: MIT */
/*
 * nvme_spec.h - NVMe, NVMe over Fabrics and NVMe/TCP wire formats.
 *
 * Every structure that crosses the wire is declared here once, packed, and
 * checked with a static assert on its size and on the offset of each field
 * another file reads.  Section numbers refer to NVMe Base 2.0, NVMe over
 * Fabrics 1.1 and the NVMe/TCP Transport Binding 1.0.
 */
#ifndef ERNIC_NVME_SPEC_H
#define ERNIC_NVME_SPEC_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NVME_CHECK_SIZE(type, size) \
	static_assert(sizeof(type) == (size), #type " must be " #size " bytes")
#define NVME_CHECK_OFFSET(type, field, off) \
	static_assert(offsetof(type, field) == (off), #type "." #field " must be at " #off)

/* ---------------------------------------------------------------- SGL (4.1.8) */

enum nvme_sgl_type {
	NVME_SGL_TYPE_DATA_BLOCK = 0x0,
	NVME_SGL_TYPE_BIT_BUCKET = 0x1,
	NVME_SGL_TYPE_SEGMENT = 0x2,
	NVME_SGL_TYPE_LAST_SEGMENT = 0x3,
	NVME_SGL_TYPE_KEYED_DATA_BLOCK = 0x4,
	NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK = 0x5,
};

enum nvme_sgl_subtype {
	NVME_SGL_SUBTYPE_ADDRESS = 0x0,
	NVME_SGL_SUBTYPE_OFFSET = 0x1,
	NVME_SGL_SUBTYPE_TRANSPORT = 0xA,
	NVME_SGL_SUBTYPE_INVALIDATE_KEY = 0xF,
};

/* Byte 15 of every SGL descriptor: type in the high nibble, subtype in the low. */
#define NVME_SGL_ID(type, subtype) ((uint8_t)(((type) << 4) | (subtype)))
#define NVME_SGL_ID_TYPE(id) ((uint8_t)(id) >> 4)
#define NVME_SGL_ID_SUBTYPE(id) ((uint8_t)(id) & 0xF)

/* Keyed SGL Data Block: 24-bit length, 32-bit key (RDMA rkey). */
#define NVME_KEYED_SGL_MAX_LEN 0xFFFFFFu

struct nvme_sgl_desc {
	uint64_t addr;
	union {
		struct {
			uint32_t length;
			uint8_t rsvd[3];
		} __attribute__((packed)) unkeyed;
		struct {
			uint8_t length[3]; /* little endian */
			uint32_t key;
		} __attribute__((packed)) keyed;
	};
	uint8_t id;
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_sgl_desc, 16);
NVME_CHECK_OFFSET(struct nvme_sgl_desc, keyed.length, 8);
NVME_CHECK_OFFSET(struct nvme_sgl_desc, keyed.key, 11);
NVME_CHECK_OFFSET(struct nvme_sgl_desc, id, 15);

static inline uint32_t nvme_keyed_sgl_len(const struct nvme_sgl_desc *sgl)
{
	return (uint32_t)sgl->keyed.length[0] | (uint32_t)sgl->keyed.length[1] << 8 |
	       (uint32_t)sgl->keyed.length[2] << 16;
}

static inline void nvme_keyed_sgl_set(struct nvme_sgl_desc *sgl, uint64_t addr, uint32_t len,
				      uint32_t key, uint8_t subtype)
{
	sgl->addr = addr;
	sgl->keyed.length[0] = (uint8_t)len;
	sgl->keyed.length[1] = (uint8_t)(len >> 8);
	sgl->keyed.length[2] = (uint8_t)(len >> 16);
	sgl->keyed.key = key;
	sgl->id = NVME_SGL_ID(NVME_SGL_TYPE_KEYED_DATA_BLOCK, subtype);
}

/* ------------------------------------------------- Submission queue entry (4.2) */

/* CDW0 flags byte: PSDT bits 7:6; 01b/10b select SGLs (required over fabrics). */
#define NVME_CMD_PSDT_SGL_MPTR_CONTIG (1u << 6)

struct nvme_sqe {
	uint8_t opc;
	uint8_t flags;
	uint16_t cid;
	uint32_t nsid;
	uint32_t cdw2;
	uint32_t cdw3;
	uint64_t mptr;
	struct nvme_sgl_desc dptr;
	uint32_t cdw10;
	uint32_t cdw11;
	uint32_t cdw12;
	uint32_t cdw13;
	uint32_t cdw14;
	uint32_t cdw15;
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_sqe, 64);
NVME_CHECK_OFFSET(struct nvme_sqe, cid, 2);
NVME_CHECK_OFFSET(struct nvme_sqe, nsid, 4);
NVME_CHECK_OFFSET(struct nvme_sqe, dptr, 24);
NVME_CHECK_OFFSET(struct nvme_sqe, cdw10, 40);
NVME_CHECK_OFFSET(struct nvme_sqe, cdw15, 60);

/* Bits 1:0 of an opcode give the data direction (Base 4.2, Figure 88); see nvme_sqe_data_dir(). */
enum nvme_data_dir {
	NVME_DATA_NONE = 0,
	NVME_DATA_HOST_TO_CTRL = 1,
	NVME_DATA_CTRL_TO_HOST = 2,
	NVME_DATA_BIDIR = 3,
};

/* ------------------------------------------------- Completion queue entry (4.6) */

struct nvme_cqe {
	uint32_t dw0;
	uint32_t dw1;
	uint16_t sqhd;
	uint16_t sqid;
	uint16_t cid;
	uint16_t status; /* bit 0 phase, 8:1 SC, 11:9 SCT, 13:12 CRD, 14 M, 15 DNR */
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_cqe, 16);
NVME_CHECK_OFFSET(struct nvme_cqe, sqhd, 8);
NVME_CHECK_OFFSET(struct nvme_cqe, cid, 12);
NVME_CHECK_OFFSET(struct nvme_cqe, status, 14);

/*
 * Status values in this project are the 11-bit (SCT << 8 | SC) form; the CQE
 * status field holds it shifted left by one with DNR in bit 15.
 */
#define NVME_SCT_GENERIC 0x0
#define NVME_SCT_CMD_SPECIFIC 0x1
#define NVME_SCT_MEDIA 0x2
#define NVME_SCT_PATH 0x3
#define NVME_STATUS(sct, sc) ((uint16_t)(((sct) << 8) | (sc)))
#define NVME_STATUS_SCT(st) (((st) >> 8) & 0x7)
#define NVME_STATUS_SC(st) ((st) & 0xFF)
#define NVME_CQE_STATUS_DNR (1u << 15)
#define NVME_CQE_STATUS(st) ((uint16_t)((st) & 0x7FF))
#define NVME_STATUS_COUNT 0x800

/*
 * A Status Field word: the CQE's DW3 bits 31:16 (Base 4.6.1), also bytes 15:14
 * of an Error Information log entry. Bit 0 is the phase tag; bits 13:12 CRD,
 * 14 More and 15 DNR are not part of the status.
 */
static inline uint16_t nvme_sf_status(uint16_t sf)
{
	return NVME_CQE_STATUS(sf >> 1);
}

static inline bool nvme_sf_dnr(uint16_t sf)
{
	return (sf & NVME_CQE_STATUS_DNR) != 0;
}

/* The completion's status, SCT << 8 | SC: 0 is success. */
static inline uint16_t nvme_cqe_status(const struct nvme_cqe *cqe)
{
	return nvme_sf_status(cqe->status);
}

/* Do Not Retry: the same command would fail again. */
static inline bool nvme_cqe_dnr(const struct nvme_cqe *cqe)
{
	return nvme_sf_dnr(cqe->status);
}

enum nvme_status {
	NVME_SC_SUCCESS = NVME_STATUS(0, 0x00),
	NVME_SC_INVALID_OPCODE = NVME_STATUS(0, 0x01),
	NVME_SC_INVALID_FIELD = NVME_STATUS(0, 0x02),
	NVME_SC_CMDID_CONFLICT = NVME_STATUS(0, 0x03),
	NVME_SC_DATA_XFER_ERROR = NVME_STATUS(0, 0x04),
	NVME_SC_INTERNAL = NVME_STATUS(0, 0x06),
	NVME_SC_ABORT_REQ = NVME_STATUS(0, 0x07),
	NVME_SC_ABORT_SQ_DELETION = NVME_STATUS(0, 0x08),
	NVME_SC_INVALID_NS = NVME_STATUS(0, 0x0B),
	NVME_SC_CMD_SEQ_ERROR = NVME_STATUS(0, 0x0C),
	NVME_SC_SGL_INVALID_LAST = NVME_STATUS(0, 0x0D),
	NVME_SC_SGL_INVALID_COUNT = NVME_STATUS(0, 0x0E),
	NVME_SC_SGL_INVALID_DATA_LEN = NVME_STATUS(0, 0x0F),
	NVME_SC_SGL_INVALID_METADATA = NVME_STATUS(0, 0x10),
	NVME_SC_SGL_INVALID_TYPE = NVME_STATUS(0, 0x11),
	NVME_SC_SGL_INVALID_OFFSET = NVME_STATUS(0, 0x16),
	NVME_SC_SGL_INVALID_SUBTYPE = NVME_STATUS(0, 0x17),
	NVME_SC_TRANSIENT_TRANSPORT = NVME_STATUS(0, 0x22),
	NVME_SC_LBA_RANGE = NVME_STATUS(0, 0x80),
	NVME_SC_CAP_EXCEEDED = NVME_STATUS(0, 0x81),
	NVME_SC_NS_NOT_READY = NVME_STATUS(0, 0x82),

	NVME_SC_INVALID_QID = NVME_STATUS(1, 0x01),
	NVME_SC_INVALID_QUEUE_SIZE = NVME_STATUS(1, 0x02),
	NVME_SC_AER_LIMIT_EXCEEDED = NVME_STATUS(1, 0x05),
	NVME_SC_INVALID_LOG_PAGE = NVME_STATUS(1, 0x09),
	NVME_SC_INVALID_FORMAT = NVME_STATUS(1, 0x0A),
	NVME_SC_FEATURE_NOT_SAVEABLE = NVME_STATUS(1, 0x0D),
	NVME_SC_FEATURE_NOT_CHANGEABLE = NVME_STATUS(1, 0x0E),
	/* Fabrics command-specific (Fabrics 1.1, Figure 8) */
	NVME_SC_CONNECT_INCOMPATIBLE_FORMAT = NVME_STATUS(1, 0x80),
	NVME_SC_CONNECT_CTRL_BUSY = NVME_STATUS(1, 0x81),
	NVME_SC_CONNECT_INVALID_PARAM = NVME_STATUS(1, 0x82),
	NVME_SC_CONNECT_RESTART_DISC = NVME_STATUS(1, 0x83),
	NVME_SC_CONNECT_INVALID_HOST = NVME_STATUS(1, 0x84),
	NVME_SC_DISCONNECT_INVALID_QTYPE = NVME_STATUS(1, 0x85), /* Invalid Queue Type: a Disconnect on the admin queue */

	NVME_SC_WRITE_FAULT = NVME_STATUS(2, 0x80),
	NVME_SC_UNRECOVERED_READ = NVME_STATUS(2, 0x81),
	/* Path Related Status (SCT 3): another path may succeed, so never with DNR */
	NVME_SC_ANA_PERSISTENT_LOSS = NVME_STATUS(3, 0x01),
	NVME_SC_ANA_INACCESSIBLE = NVME_STATUS(3, 0x02),
	NVME_SC_ANA_TRANSITION = NVME_STATUS(3, 0x03),
};

/* --------------------------------------------------------------- Opcodes */

enum nvme_admin_opcode {
	NVME_ADMIN_GET_LOG_PAGE = 0x02,
	NVME_ADMIN_IDENTIFY = 0x06,
	NVME_ADMIN_ABORT = 0x08,
	NVME_ADMIN_SET_FEATURES = 0x09,
	NVME_ADMIN_GET_FEATURES = 0x0A,
	NVME_ADMIN_ASYNC_EVENT = 0x0C,
	NVME_ADMIN_KEEP_ALIVE = 0x18,
	NVME_FABRICS_COMMAND = 0x7F,
};

enum nvme_io_opcode {
	NVME_CMD_FLUSH = 0x00,
	NVME_CMD_WRITE = 0x01,
	NVME_CMD_READ = 0x02,
	NVME_CMD_WRITE_ZEROES = 0x08,
	NVME_CMD_DSM = 0x09,
};

/* ------------------------------------------------------ Fabrics (Fabrics 3.3) */

enum nvmf_fctype {
	NVMF_FCTYPE_PROPERTY_SET = 0x00,
	NVMF_FCTYPE_CONNECT = 0x01,
	NVMF_FCTYPE_PROPERTY_GET = 0x04,
	NVMF_FCTYPE_AUTH_SEND = 0x05,
	NVMF_FCTYPE_AUTH_RECV = 0x06,
	NVMF_FCTYPE_DISCONNECT = 0x08,
};

/* Common layout of every Fabrics command capsule's first 40 bytes. */
struct nvmf_fabrics_cmd {
	uint8_t opc;
	uint8_t rsvd1;
	uint16_t cid;
	uint8_t fctype;
	uint8_t rsvd2[19];
	struct nvme_sgl_desc sgl;
	uint8_t specific[24];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvmf_fabrics_cmd, 64);
NVME_CHECK_OFFSET(struct nvmf_fabrics_cmd, fctype, 4);
NVME_CHECK_OFFSET(struct nvmf_fabrics_cmd, sgl, 24);

/*
 * The direction of a command's data: bits 1:0 of the opcode (Base 4.2,
 * Figure 88), or of a Fabrics command's fctype, which carries them instead
 * (Fabrics 1.1, Figure 10: Connect sends data, Authentication Receive
 * returns it, Property Get has none, its value rides in the CQE).
 */
static inline enum nvme_data_dir nvme_sqe_data_dir(const struct nvme_sqe *sqe)
{
	uint8_t bits = sqe->opc;

	if (sqe->opc == NVME_FABRICS_COMMAND)
		bits = ((const struct nvmf_fabrics_cmd *)sqe)->fctype;
	return (enum nvme_data_dir)(bits & 3);
}

struct nvmf_connect_cmd {
	uint8_t opc;
	uint8_t rsvd1;
	uint16_t cid;
	uint8_t fctype;
	uint8_t rsvd2[19];
	struct nvme_sgl_desc sgl;
	uint16_t recfmt;
	uint16_t qid;
	uint16_t sqsize; /* 0's based */
	uint8_t cattr;
	uint8_t rsvd3;
	uint32_t kato; /* milliseconds */
	uint8_t rsvd4[12];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvmf_connect_cmd, 64);
NVME_CHECK_OFFSET(struct nvmf_connect_cmd, recfmt, 40);
NVME_CHECK_OFFSET(struct nvmf_connect_cmd, qid, 42);
NVME_CHECK_OFFSET(struct nvmf_connect_cmd, sqsize, 44);
NVME_CHECK_OFFSET(struct nvmf_connect_cmd, cattr, 46);
NVME_CHECK_OFFSET(struct nvmf_connect_cmd, kato, 48);
/* Connect CATTR bit 2 (Fabrics 1.1 Figure 20): the host asks to disable SQ flow control. */
#define NVMF_CONNECT_CATTR_DISABLE_SQFLOW (1u << 2)
/* The Connect response's SQHD when the controller disabled SQ flow control. */
#define NVMF_SQHD_FLOW_DISABLED 0xffffu

/* Disconnect (Fabrics 1.1): deletes the I/O queue it comes on; RECFMT 0 is the only record format. */
struct nvmf_disconnect_cmd {
	uint8_t opc;
	uint8_t rsvd1;
	uint16_t cid;
	uint8_t fctype;
	uint8_t rsvd2[35];
	uint16_t recfmt;
	uint8_t rsvd3[22];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvmf_disconnect_cmd, 64);
NVME_CHECK_OFFSET(struct nvmf_disconnect_cmd, recfmt, 40);

#define NVMF_NQN_SIZE 256
#define NVMF_CNTLID_DYNAMIC 0xFFFF
#define NVMF_DISC_NQN "nqn.2014-08.org.nvmexpress.discovery"

struct nvmf_connect_data {
	uint8_t hostid[16];
	uint16_t cntlid;
	uint8_t rsvd1[238];
	char subnqn[NVMF_NQN_SIZE];
	char hostnqn[NVMF_NQN_SIZE];
	uint8_t rsvd2[256];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvmf_connect_data, 1024);
NVME_CHECK_OFFSET(struct nvmf_connect_data, cntlid, 16);
NVME_CHECK_OFFSET(struct nvmf_connect_data, subnqn, 256);
NVME_CHECK_OFFSET(struct nvmf_connect_data, hostnqn, 512);

/*
 * Connect response DW0 for Connect Invalid Parameters (Fabrics 1.1 Figure 21):
 * IPO, the byte offset of the bad field, in bits 15:0; IATTR (0: the command,
 * 1: the Connect data) in bits 23:16, as a Linux host decodes it.
 */
#define NVMF_CONNECT_IATTR_CMD 0u
#define NVMF_CONNECT_IATTR_DATA 1u
#define NVMF_CONNECT_INVALID_PARAM_DW0(iattr, ipo) ((uint32_t)(iattr) << 16 | (uint16_t)(ipo))

struct nvmf_property_cmd {
	uint8_t opc;
	uint8_t rsvd1;
	uint16_t cid;
	uint8_t fctype;
	uint8_t rsvd2[35];
	uint8_t attrib; /* bits 2:0 size: 0 = 4 bytes, 1 = 8 bytes */
	uint8_t rsvd3[3];
	uint32_t ofst;
	uint64_t value; /* Property Set only */
	uint8_t rsvd4[8];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvmf_property_cmd, 64);
NVME_CHECK_OFFSET(struct nvmf_property_cmd, attrib, 40);
NVME_CHECK_OFFSET(struct nvmf_property_cmd, ofst, 44);
NVME_CHECK_OFFSET(struct nvmf_property_cmd, value, 48);

/* ------------------------------------------------- Controller properties (3.1) */

enum nvme_reg {
	NVME_REG_CAP = 0x00,
	NVME_REG_VS = 0x08,
	NVME_REG_CC = 0x14,
	NVME_REG_CSTS = 0x1C,
};

#define NVME_CAP_MQES(cap) ((uint32_t)((cap) & 0xFFFF))
#define NVME_CAP_CQR (1ull << 16)
#define NVME_CAP_TO_SHIFT 24 /* 500 ms units */
#define NVME_CAP_CSS_NVM (1ull << 37)
#define NVME_CAP_MPSMIN_SHIFT 48 /* 2^(12 + MPSMIN) */
#define NVME_CAP_MPSMAX_SHIFT 52

#define NVME_VS(mjr, mnr, ter) (((uint32_t)(mjr) << 16) | ((uint32_t)(mnr) << 8) | (ter))

#define NVME_CC_EN (1u << 0)
#define NVME_CC_CSS_SHIFT 4
#define NVME_CC_MPS_SHIFT 7
#define NVME_CC_AMS_SHIFT 11
#define NVME_CC_SHN_SHIFT 14
#define NVME_CC_SHN_MASK (3u << NVME_CC_SHN_SHIFT)
#define NVME_CC_IOSQES_SHIFT 16
#define NVME_CC_IOCQES_SHIFT 20
/* I/O queue entry sizes the NVM command set requires (Base 3.1.5: 64-byte SQEs, 16-byte CQEs), as CC fields. */
#define NVME_CC_NVM_ENTRY_SIZES ((6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT))

#define NVME_CSTS_RDY (1u << 0)
#define NVME_CSTS_CFS (1u << 1)
#define NVME_CSTS_SHST_SHIFT 2
#define NVME_CSTS_SHST_MASK (3u << NVME_CSTS_SHST_SHIFT)
#define NVME_CSTS_SHST_COMPLETE (2u << NVME_CSTS_SHST_SHIFT)

/* ---------------------------------------------------------- Identify (5.17) */

enum nvme_identify_cns {
	NVME_ID_CNS_NS = 0x00,
	NVME_ID_CNS_CTRL = 0x01,
	NVME_ID_CNS_NS_ACTIVE_LIST = 0x02,
	NVME_ID_CNS_NS_DESC_LIST = 0x03,
	NVME_ID_CNS_CS_NS = 0x05,
	NVME_ID_CNS_CS_CTRL = 0x06,
};
/* Command Set Identifier, Identify CDW11 bits 31:24 */
#define NVME_CSI_NVM 0
#define NVME_IDENTIFY_CSI(cdw11) ((uint8_t)((cdw11) >> 24))

struct nvme_lbaf {
	uint16_t ms;
	uint8_t lbads;
	uint8_t rp;
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_lbaf, 4);

struct nvme_psd {
	uint8_t bytes[32];
};
NVME_CHECK_SIZE(struct nvme_psd, 32);

struct nvme_id_ctrl {
	uint16_t vid;
	uint16_t ssvid;
	char sn[20];
	char mn[40];
	char fr[8];
	uint8_t rab;
	uint8_t ieee[3];
	uint8_t cmic;
	uint8_t mdts;
	uint16_t cntlid;
	uint32_t ver;
	uint32_t rtd3r;
	uint32_t rtd3e;
	uint32_t oaes;
	uint32_t ctratt;
	uint16_t rrls;
	uint8_t rsvd102[9];
	uint8_t cntrltype;
	uint8_t fguid[16];
	uint16_t crdt[3];
	uint8_t rsvd134[119];
	uint8_t nvmsr;
	uint8_t vwci;
	uint8_t mec;
	uint16_t oacs;
	uint8_t acl;
	uint8_t aerl;
	uint8_t frmw;
	uint8_t lpa;
	uint8_t elpe;
	uint8_t npss;
	uint8_t avscc;
	uint8_t apsta;
	uint16_t wctemp;
	uint16_t cctemp;
	uint16_t mtfa;
	uint32_t hmpre;
	uint32_t hmmin;
	uint8_t tnvmcap[16];
	uint8_t unvmcap[16];
	uint32_t rpmbs;
	uint16_t edstt;
	uint8_t dsto;
	uint8_t fwug;
	uint16_t kas;
	uint16_t hctma;
	uint16_t mntmt;
	uint16_t mxtmt;
	uint32_t sanicap;
	uint32_t hmminds;
	uint16_t hmmaxd;
	uint16_t nsetidmax;
	uint16_t endgidmax;
	uint8_t anatt;
	uint8_t anacap;
	uint32_t anagrpmax;
	uint32_t nanagrpid;
	uint32_t pels;
	uint16_t domainid;
	uint8_t rsvd358[10];
	uint8_t megcap[16];
	uint8_t rsvd384[128];
	uint8_t sqes;
	uint8_t cqes;
	uint16_t maxcmd;
	uint32_t nn;
	uint16_t oncs;
	uint16_t fuses;
	uint8_t fna;
	uint8_t vwc;
	uint16_t awun;
	uint16_t awupf;
	uint8_t icsvscc;
	uint8_t nwpc;
	uint16_t acwu;
	uint16_t ocfs;
	uint32_t sgls;
	uint32_t mnan;
	uint8_t maxdna[16];
	uint32_t maxcna;
	uint8_t rsvd564[204];
	char subnqn[NVMF_NQN_SIZE];
	uint8_t rsvd1024[768];
	/* Fabrics-specific (Fabrics 1.1, Figure 28) */
	uint32_t ioccsz;
	uint32_t iorcsz;
	uint16_t icdoff;
	uint8_t fcatt;
	uint8_t msdbd;
	uint16_t ofcs; /* Optional Fabrics Commands Supported: NVME_CTRL_OFCS_* */
	uint8_t rsvd1806[242];
	struct nvme_psd psd[32];
	uint8_t vs[1024];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_id_ctrl, 4096);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, sn, 4);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, mn, 24);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, fr, 64);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, mdts, 77);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, cntlid, 78);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, ver, 80);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, oaes, 92);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, cntrltype, 111);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, oacs, 256);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, aerl, 259);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, lpa, 261);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, elpe, 262);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, kas, 320);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, sqes, 512);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, maxcmd, 514);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, nn, 516);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, oncs, 520);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, vwc, 525);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, sgls, 536);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, subnqn, 768);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, ioccsz, 1792);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, iorcsz, 1796);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, icdoff, 1800);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, msdbd, 1803);
NVME_CHECK_OFFSET(struct nvme_id_ctrl, psd, 2048);

/* SGLS field bits (Base Figure 275) */
#define NVME_CTRL_SGLS_SUPPORTED (1u << 0)
#define NVME_CTRL_SGLS_KEYED (1u << 2)
#define NVME_CTRL_SGLS_OFFSET (1u << 20)
#define NVME_CTRL_OFCS_DISCONNECT (1u << 0) /* the Disconnect command */
/*
 * VWC (Identify Controller byte 525, Base 1.4 and later): a volatile write cache is present (bit 0), and
 * bits 2:1 = 11b: Flush with NSID FFFFFFFFh is supported and flushes every
 * namespace.
 */
#define NVME_CTRL_VWC_PRESENT (1u << 0)
#define NVME_CTRL_VWC_FLUSH_ALL_NS (3u << 1)
/* ONCS bits */
#define NVME_CTRL_ONCS_DSM (1u << 2)
#define NVME_CTRL_ONCS_WRITE_ZEROES (1u << 3)
/* OAES: Namespace Attribute Notices */
#define NVME_CTRL_OAES_NS_ATTR (1u << 8)
/* CTRATT: Traffic Based Keep Alive (Base 2.0 section 3.9.5.2): any command restarts the timer. */
#define NVME_CTRL_CTRATT_TBKAS (1u << 6)
/* LPA (Base 2.0 Figure 275): Commands Supported and Effects, extended data for Get Log Page */
#define NVME_CTRL_LPA_CMD_EFFECTS (1u << 1)
#define NVME_CTRL_LPA_EXTENDED (1u << 2)
#define NVME_CTRL_CNTRLTYPE_IO 1
#define NVME_CTRL_CNTRLTYPE_DISCOVERY 2

struct nvme_id_ns {
	uint64_t nsze;
	uint64_t ncap;
	uint64_t nuse;
	uint8_t nsfeat;
	uint8_t nlbaf;
	uint8_t flbas;
	uint8_t mc;
	uint8_t dpc;
	uint8_t dps;
	uint8_t nmic;
	uint8_t rescap;
	uint8_t fpi;
	uint8_t dlfeat;
	uint16_t nawun;
	uint16_t nawupf;
	uint16_t nacwu;
	uint16_t nabsn;
	uint16_t nabo;
	uint16_t nabspf;
	uint16_t noiob;
	uint8_t nvmcap[16];
	uint16_t npwg;
	uint16_t npwa;
	uint16_t npdg;
	uint16_t npda;
	uint16_t nows;
	uint8_t rsvd74[18];
	uint32_t anagrpid;
	uint8_t rsvd96[3];
	uint8_t nsattr;
	uint16_t nvmsetid;
	uint16_t endgid;
	uint8_t nguid[16];
	uint8_t eui64[8];
	struct nvme_lbaf lbaf[16];
	uint8_t rsvd192[3648];
	uint8_t vs[256];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_id_ns, 4096);
NVME_CHECK_OFFSET(struct nvme_id_ns, nsfeat, 24);
NVME_CHECK_OFFSET(struct nvme_id_ns, flbas, 26);
NVME_CHECK_OFFSET(struct nvme_id_ns, dlfeat, 33);
NVME_CHECK_OFFSET(struct nvme_id_ns, nvmcap, 48);
NVME_CHECK_OFFSET(struct nvme_id_ns, anagrpid, 92);
NVME_CHECK_OFFSET(struct nvme_id_ns, nguid, 104);
NVME_CHECK_OFFSET(struct nvme_id_ns, eui64, 120);
NVME_CHECK_OFFSET(struct nvme_id_ns, lbaf, 128);

/* Namespace Identification Descriptor (Base Figure 280) */
enum nvme_nidt {
	NVME_NIDT_EUI64 = 0x1,
	NVME_NIDT_NGUID = 0x2,
	NVME_NIDT_UUID = 0x3,
	NVME_NIDT_CSI = 0x4,
};

struct nvme_ns_id_desc {
	uint8_t nidt;
	uint8_t nidl;
	uint16_t rsvd;
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_ns_id_desc, 4);

/* --------------------------------------------------------- Log pages (5.16) */

enum nvme_log_page {
	NVME_LOG_SUPPORTED = 0x00,
	NVME_LOG_ERROR = 0x01,
	NVME_LOG_SMART = 0x02,
	NVME_LOG_FW_SLOT = 0x03,
	NVME_LOG_CHANGED_NS = 0x04,
	NVME_LOG_CMD_EFFECTS = 0x05,
	NVME_LOG_DISC = 0x70,
};

/* Get Log Page CDW10 bit 15, Retain Asynchronous Event: the read leaves the event's log and mask as they were */
#define NVME_LOG_RAE (1u << 15)
/* Get Log Page CDW14 bit 23, Offset Type: LPO is an index into the page rather than a byte offset. */
#define NVME_LOG_OT (1u << 23)
/* Get Log Page CDW14 bits 31:24: the command set a log page such as Commands Supported and Effects is for. */
#define NVME_LOG_CSI(cdw14) ((uint8_t)((cdw14) >> 24))

/*
 * Supported Log Pages (LID 00h, Base 2.0 5.16.1.1): one LID Supported and
 * Effects dword per log identifier.
 */
#define NVME_LOG_LSUPP (1u << 0) /* the log page is supported */
#define NVME_LOG_IOS (1u << 1)	 /* Index Offset Supported: LPO may be an index */
struct nvme_supported_log {
	uint32_t lid[256];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_supported_log, 1024);
NVME_CHECK_OFFSET(struct nvme_supported_log, lid[NVME_LOG_CHANGED_NS], 16);

/*
 * Changed Namespace List (LID 04h, Base 2.0 5.16.1.5): up to 1024 NSIDs; when
 * more changed, the first entry is FFFFFFFFh and the rest are zero.
 */
#define NVME_CHANGED_NS_MAX 1024
#define NVME_CHANGED_NS_OVERFLOW 0xFFFFFFFFu
struct nvme_changed_ns_log {
	uint32_t nsid[NVME_CHANGED_NS_MAX];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_changed_ns_log, 4096);

/*
 * Commands Supported and Effects (LID 05h, Base 2.0 5.16.1.6): a dword per
 * admin opcode, then one per I/O opcode of the command set CDW14.CSI names.
 */
#define NVME_CMD_EFFECTS_CSUPP (1u << 0) /* the command is supported */
#define NVME_CMD_EFFECTS_LBCC (1u << 1)	 /* it may change logical block content */
#define NVME_CMD_EFFECTS_NCC (1u << 2)	 /* it may change namespace capabilities */
#define NVME_CMD_EFFECTS_NIC (1u << 3)	 /* it may change the namespace inventory */
#define NVME_CMD_EFFECTS_CCC (1u << 4)	 /* it may change controller capabilities */
struct nvme_cmd_effects_log {
	uint32_t acs[256];
	uint32_t iocs[256];
	uint8_t rsvd2048[2048];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_cmd_effects_log, 4096);
NVME_CHECK_OFFSET(struct nvme_cmd_effects_log, iocs, 1024);

struct nvme_error_log_entry {
	uint64_t error_count;
	uint16_t sqid;
	uint16_t cmdid;
	uint16_t status_field;
	uint16_t parm_error_location;
	uint64_t lba;
	uint32_t nsid;
	uint8_t vs;
	uint8_t trtype;
	uint8_t rsvd30[2];
	uint64_t cs;
	uint16_t trtype_spec_info;
	uint8_t rsvd42[22];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_error_log_entry, 64);
NVME_CHECK_OFFSET(struct nvme_error_log_entry, status_field, 12);
NVME_CHECK_OFFSET(struct nvme_error_log_entry, lba, 16);
NVME_CHECK_OFFSET(struct nvme_error_log_entry, nsid, 24);

/* SMART / Health Information Critical Warning bit 1: a temperature is beyond one of its thresholds */
#define NVME_SMART_CRIT_TEMPERATURE (1u << 1)

struct nvme_smart_log {
	uint8_t critical_warning;
	uint16_t temperature; /* Kelvin */
	uint8_t avail_spare;
	uint8_t spare_thresh;
	uint8_t percent_used;
	uint8_t endu_grp_crit_warn;
	uint8_t rsvd7[25];
	uint8_t data_units_read[16]; /* 1000 x 512 bytes, 128-bit little endian */
	uint8_t data_units_written[16];
	uint8_t host_reads[16];
	uint8_t host_writes[16];
	uint8_t ctrl_busy_time[16];
	uint8_t power_cycles[16];
	uint8_t power_on_hours[16];
	uint8_t unsafe_shutdowns[16];
	uint8_t media_errors[16];
	uint8_t num_err_log_entries[16];
	uint32_t warning_temp_time;
	uint32_t critical_comp_time;
	uint16_t temp_sensor[8];
	uint8_t rsvd216[296];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_smart_log, 512);
NVME_CHECK_OFFSET(struct nvme_smart_log, temperature, 1);
NVME_CHECK_OFFSET(struct nvme_smart_log, avail_spare, 3);
NVME_CHECK_OFFSET(struct nvme_smart_log, data_units_read, 32);
NVME_CHECK_OFFSET(struct nvme_smart_log, host_reads, 64);
NVME_CHECK_OFFSET(struct nvme_smart_log, power_on_hours, 128);
NVME_CHECK_OFFSET(struct nvme_smart_log, num_err_log_entries, 176);
NVME_CHECK_OFFSET(struct nvme_smart_log, warning_temp_time, 192);

struct nvme_fw_slot_log {
	uint8_t afi;
	uint8_t rsvd1[7];
	char frs[7][8];
	uint8_t rsvd64[448];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_fw_slot_log, 512);
NVME_CHECK_OFFSET(struct nvme_fw_slot_log, frs, 8);

/* Discovery log page (Fabrics 5.3) */
struct nvmf_disc_log_entry {
	uint8_t trtype;
	uint8_t adrfam;
	uint8_t subtype;
	uint8_t treq;
	uint16_t portid;
	uint16_t cntlid;
	uint16_t asqsz;
	uint16_t eflags;
	uint8_t rsvd12[20];
	char trsvcid[32];
	uint8_t rsvd64[192];
	char subnqn[NVMF_NQN_SIZE];
	char traddr[256];
	uint8_t tsas[256];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvmf_disc_log_entry, 1024);
NVME_CHECK_OFFSET(struct nvmf_disc_log_entry, trsvcid, 32);
NVME_CHECK_OFFSET(struct nvmf_disc_log_entry, subnqn, 256);
NVME_CHECK_OFFSET(struct nvmf_disc_log_entry, traddr, 512);

struct nvmf_disc_log_hdr {
	uint64_t genctr;
	uint64_t numrec;
	uint16_t recfmt;
	uint8_t rsvd[1006];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvmf_disc_log_hdr, 1024);

#define NVMF_TRTYPE_RDMA 1
#define NVMF_TRTYPE_TCP 3
#define NVMF_ADRFAM_IPV4 1
#define NVMF_ADRFAM_IPV6 2
#define NVMF_SUBTYPE_DISCOVERY 1
#define NVMF_SUBTYPE_NVME 2
#define NVMF_TREQ_NOT_SPECIFIED 0
#define NVMF_TREQ_DISABLE_SQFLOW (1u << 2)

/* ---------------------------------------------------------- Features (5.27) */

enum nvme_feature_id {
	NVME_FEAT_ARBITRATION = 0x01,
	NVME_FEAT_POWER_MGMT = 0x02,
	NVME_FEAT_TEMP_THRESH = 0x04,
	NVME_FEAT_ERR_RECOVERY = 0x05,
	NVME_FEAT_VOLATILE_WC = 0x06,
	NVME_FEAT_NUM_QUEUES = 0x07,
	NVME_FEAT_IRQ_COALESCE = 0x08,
	NVME_FEAT_WRITE_ATOMIC = 0x0A,
	NVME_FEAT_ASYNC_EVENT = 0x0B,
	NVME_FEAT_KATO = 0x0F,
};

/* Get Features CDW10 SEL (bits 10:8) */
#define NVME_FEAT_SEL_CURRENT 0
#define NVME_FEAT_SEL_DEFAULT 1
#define NVME_FEAT_SEL_SAVED 2
#define NVME_FEAT_SEL_SUPPORTED 3

/* Asynchronous event completion DW0 (Base Figure 146) */
enum nvme_aer_type {
	NVME_AER_TYPE_ERROR = 0,
	NVME_AER_TYPE_SMART = 1,
	NVME_AER_TYPE_NOTICE = 2,
};
/* SMART / Health event information (Base 2.0 Figure 149): a temperature beyond a threshold */
#define NVME_AER_SMART_TEMP_THRESH 0x01
#define NVME_AER_NOTICE_NS_CHANGED 0x00
#define NVME_AER_NOTICE_ANA_CHANGE 0x03
#define NVME_AER_NOTICE_DISC_CHANGED 0xF0

/* ----------------------------------------- Asymmetric Namespace Access (8.1.1) */

/* Get Log Page LID 0Ch; CDW10 bit 8 (RGO): groups only, no NSID lists */
#define NVME_LOG_ANA 0x0C
#define NVME_LOG_ANA_RGO (1u << 8)
/*
 * Asynchronous Event Configuration bits (Base Figure 325); bits 7:0 enable a
 * SMART / Health event for each Critical Warning bit.
 */
#define NVME_AEC_SMART_TEMPERATURE NVME_SMART_CRIT_TEMPERATURE
#define NVME_AEC_ANA_CHANGE (1u << 11)
#define NVME_AEC_DISC_CHANGE (1u << 31)
#define NVME_CTRL_OAES_ANA_CHANGE (1u << 11)
#define NVME_CTRL_OAES_DISC_CHANGE (1u << 31)
/* CMIC: more than one port, more than one controller, ANA reporting */
#define NVME_CTRL_CMIC_MULTI_PORT (1u << 0)
#define NVME_CTRL_CMIC_MULTI_CTRL (1u << 1)
#define NVME_CTRL_CMIC_ANA (1u << 3)
/* ANACAP: the states reported, and ANAGRPID not changing while attached (bit 6) */
#define NVME_CTRL_ANACAP_ALL_STATES 0x1F
#define NVME_CTRL_ANACAP_GRPID_STATIC (1u << 6)
/* NMIC bit 0: the namespace may be attached to more than one controller */
#define NVME_NS_NMIC_SHARED (1u << 0)

enum nvme_ana_state {
	NVME_ANA_OPTIMIZED = 0x01,
	NVME_ANA_NONOPTIMIZED = 0x02,
	NVME_ANA_INACCESSIBLE = 0x03,
	NVME_ANA_PERSISTENT_LOSS = 0x04,
	NVME_ANA_CHANGE = 0x0F,
};

struct nvme_ana_log_hdr {
	uint64_t chgcnt;
	uint16_t ngrps;
	uint8_t rsvd[6];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_ana_log_hdr, 16);

/* One group descriptor; NNSIDS NSIDs follow it (Base Figure 213) */
struct nvme_ana_group_desc {
	uint32_t grpid;
	uint32_t nnsids;
	uint64_t chgcnt;
	uint8_t state;
	uint8_t rsvd[15];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_ana_group_desc, 32);
NVME_CHECK_OFFSET(struct nvme_ana_group_desc, state, 16);
#define NVME_AER_DW0(type, info, lid) \
	((uint32_t)(type) | (uint32_t)(info) << 8 | (uint32_t)(lid) << 16)

/* Dataset Management range (Base Figure 364) */
#define NVME_DSM_ATTR_DEALLOCATE (1u << 2)
/* Read/Write CDW12 bit 30, Force Unit Access: the data is on non-volatile media before completion */
#define NVME_RW_FUA (1u << 30)
struct nvme_dsm_range {
	uint32_t cattr;
	uint32_t nlb;
	uint64_t slba;
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_dsm_range, 16);

/* ------------------------------------------------ NVMe/TCP PDUs (TCP 3.6) */

enum nvme_tcp_pdu_type {
	NVME_TCP_ICREQ = 0x00,
	NVME_TCP_ICRESP = 0x01,
	NVME_TCP_H2C_TERM = 0x02,
	NVME_TCP_C2H_TERM = 0x03,
	NVME_TCP_CMD = 0x04,
	NVME_TCP_RSP = 0x05,
	NVME_TCP_H2C_DATA = 0x06,
	NVME_TCP_C2H_DATA = 0x07,
	NVME_TCP_R2T = 0x09,
};

enum nvme_tcp_pdu_flags {
	NVME_TCP_F_HDGST = 1u << 0,
	NVME_TCP_F_DDGST = 1u << 1,
	NVME_TCP_F_DATA_LAST = 1u << 2,
	NVME_TCP_F_DATA_SUCCESS = 1u << 3,
};

/* ICReq/ICResp DGST field */
#define NVME_TCP_HDR_DIGEST_ENABLE (1u << 0)
#define NVME_TCP_DATA_DIGEST_ENABLE (1u << 1)
#define NVME_TCP_PFV_1_0 0
#define NVME_TCP_DIGEST_LEN 4

/* Fatal error status for TermReq (TCP Figure 23) */
enum nvme_tcp_fes {
	NVME_TCP_FES_INVALID_PDU_HDR = 0x01,
	NVME_TCP_FES_PDU_SEQ_ERR = 0x02,
	NVME_TCP_FES_HDR_DIGEST_ERR = 0x03,
	NVME_TCP_FES_DATA_OUT_OF_RANGE = 0x04,
	NVME_TCP_FES_R2T_LIMIT_EXCEEDED = 0x05,
	NVME_TCP_FES_DATA_LIMIT_EXCEEDED = 0x05,
	NVME_TCP_FES_UNSUPPORTED_PARAM = 0x06,
};

struct nvme_tcp_hdr {
	uint8_t type;
	uint8_t flags;
	uint8_t hlen;
	uint8_t pdo;
	uint32_t plen;
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_tcp_hdr, 8);
NVME_CHECK_OFFSET(struct nvme_tcp_hdr, plen, 4);

struct nvme_tcp_icreq_pdu {
	struct nvme_tcp_hdr hdr;
	uint16_t pfv;
	uint8_t hpda;
	uint8_t digest;
	uint32_t maxr2t; /* 0's based */
	uint8_t rsvd[112];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_tcp_icreq_pdu, 128);
NVME_CHECK_OFFSET(struct nvme_tcp_icreq_pdu, hpda, 10);
NVME_CHECK_OFFSET(struct nvme_tcp_icreq_pdu, maxr2t, 12);

struct nvme_tcp_icresp_pdu {
	struct nvme_tcp_hdr hdr;
	uint16_t pfv;
	uint8_t cpda;
	uint8_t digest;
	uint32_t maxdata; /* MAXH2CDATA */
	uint8_t rsvd[112];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_tcp_icresp_pdu, 128);
NVME_CHECK_OFFSET(struct nvme_tcp_icresp_pdu, maxdata, 12);

struct nvme_tcp_term_pdu {
	struct nvme_tcp_hdr hdr;
	uint16_t fes;
	uint32_t fei; /* field offset or digest value */
	uint8_t rsvd[10];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_tcp_term_pdu, 24);
NVME_CHECK_OFFSET(struct nvme_tcp_term_pdu, fei, 10);
#define NVME_TCP_TERM_MAX_ERRHDR 152 /* the offending header copied after the TermReq */

struct nvme_tcp_cmd_pdu {
	struct nvme_tcp_hdr hdr;
	struct nvme_sqe cmd;
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_tcp_cmd_pdu, 72);

struct nvme_tcp_rsp_pdu {
	struct nvme_tcp_hdr hdr;
	struct nvme_cqe cqe;
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_tcp_rsp_pdu, 24);

struct nvme_tcp_data_pdu {
	struct nvme_tcp_hdr hdr;
	uint16_t cccid;
	uint16_t ttag;
	uint32_t datao;
	uint32_t datal;
	uint8_t rsvd[4];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_tcp_data_pdu, 24);
NVME_CHECK_OFFSET(struct nvme_tcp_data_pdu, datao, 12);
NVME_CHECK_OFFSET(struct nvme_tcp_data_pdu, datal, 16);

struct nvme_tcp_r2t_pdu {
	struct nvme_tcp_hdr hdr;
	uint16_t cccid;
	uint16_t ttag;
	uint32_t r2to;
	uint32_t r2tl;
	uint8_t rsvd[4];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_tcp_r2t_pdu, 24);
NVME_CHECK_OFFSET(struct nvme_tcp_r2t_pdu, r2tl, 16);

/* ------------------------------------------ NVMe/RDMA (RDMA Transport Binding 1.0) */

/* RDMA CM private data format (RECFMT) 0, the only one defined. */
#define NVME_RDMA_CM_FMT_1_0 0

/*
 * Private data of the RDMA CM connect request: the queue it opens and its
 * sizes. HSQSIZE is 0's based, HRQSIZE is not (Figure 7 of the binding).
 */
struct nvme_rdma_cm_req {
	uint16_t recfmt;
	uint16_t qid;
	uint16_t hrqsize;
	uint16_t hsqsize;
	uint16_t cntlid;
	uint8_t rsvd[22];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_rdma_cm_req, 32);
NVME_CHECK_OFFSET(struct nvme_rdma_cm_req, qid, 2);
NVME_CHECK_OFFSET(struct nvme_rdma_cm_req, hrqsize, 4);
NVME_CHECK_OFFSET(struct nvme_rdma_cm_req, hsqsize, 6);
NVME_CHECK_OFFSET(struct nvme_rdma_cm_req, cntlid, 8);

/* Private data of the accept: the controller's receive queue size (command capsules it can hold). */
struct nvme_rdma_cm_rep {
	uint16_t recfmt;
	uint16_t crqsize;
	uint8_t rsvd[28];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_rdma_cm_rep, 32);
NVME_CHECK_OFFSET(struct nvme_rdma_cm_rep, crqsize, 2);

/* Private data of a reject: why the queue was refused. */
struct nvme_rdma_cm_rej {
	uint16_t recfmt;
	uint16_t sts;
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvme_rdma_cm_rej, 4);
NVME_CHECK_OFFSET(struct nvme_rdma_cm_rej, sts, 2);

/* RDMA CM reject status codes (the binding's Figure 9) */
enum nvme_rdma_cm_status {
	NVME_RDMA_CM_INVALID_LEN = 0x01,
	NVME_RDMA_CM_INVALID_RECFMT = 0x02,
	NVME_RDMA_CM_INVALID_QID = 0x03,
	NVME_RDMA_CM_INVALID_HSQSIZE = 0x04,
	NVME_RDMA_CM_INVALID_HRQSIZE = 0x05,
	NVME_RDMA_CM_NO_RSC = 0x06,
	NVME_RDMA_CM_INVALID_IRD = 0x07,
	NVME_RDMA_CM_INVALID_ORD = 0x08,
	NVME_RDMA_CM_INVALID_CNTLID = 0x09,
};

/* Transport specific address subtype of an RDMA discovery log entry (Fabrics Figure 38) */
struct nvmf_disc_rdma_tsas {
	uint8_t qptype;
	uint8_t prtype;
	uint8_t cms;
	uint8_t rsvd3[5];
	uint16_t pkey;
	uint8_t rsvd10[246];
} __attribute__((packed));
NVME_CHECK_SIZE(struct nvmf_disc_rdma_tsas, 256);
NVME_CHECK_OFFSET(struct nvmf_disc_rdma_tsas, pkey, 8);

#define NVMF_RDMA_QPTYPE_CONNECTED 1
#define NVMF_RDMA_PRTYPE_NOT_SPECIFIED 1
#define NVMF_RDMA_CMS_RDMA_CM 1

#endif /* ERNIC_NVME_SPEC_H */
