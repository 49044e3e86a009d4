/* SPDX-License-Identifier: MIT */
/*
 * tcp_ut.c - the NVMe/TCP transport, driven PDU by PDU over a socketpair (and
 * once over a loopback TCP socket) by a small host written here, against the
 * real controller core on a RAM namespace.
 *
 * Happy paths prove negotiation, every data path (in-capsule, R2T/H2CData,
 * C2HData with and without SUCCESS), digests, held AERs and discovery; the
 * bad-input tests prove each malformed PDU draws a C2HTermReq with the right
 * FES, FEI and header copy, and then a close.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "crc32c.h"
#include "target.h"
#include "transport_tcp.h"
#include "ut.h"
#include "ut_remover.h"
#include "ut_trace.h"

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:7e1e1c8a-0b0d-4c55-9a4b-3f1f5a0c0001"
#define SUBNQN "nqn.2026-11.io.ernic:tcp-ut"
#define NS_SIZE (16u << 20)
#define BS 4096u
#define CC_ENABLE (NVME_CC_EN | NVME_CC_NVM_ENTRY_SIZES)
#define SGL_ICD NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET)
#define SGL_TRANSPORT NVME_SGL_ID(NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK, NVME_SGL_SUBTYPE_TRANSPORT)
#define CATTR_DISABLE_SQFLOW (1u << 2)
/* The largest PDU the target sends: C2HData of MAXH2CDATA with its header, padding and digest. */
#define PDU_MAX (ERNIC_TCP_MAXH2CDATA + 4096u)

/* ------------------------------------------------------------ a tiny host */

struct th {
	struct ernic_target *tgt;
	struct ernic_tcp_port *port;
	int fd;
	bool hd, dd;
	uint32_t maxh2cdata;
	uint32_t h2c_chunk; /* H2CData PDU size the host uses (<= maxh2cdata) */
	uint32_t split_at;  /* th_send_pdu: this many bytes, a pause, then the rest (0: all at once) */
	uint16_t cid;
	uint16_t cntlid;
	bool saw_success; /* the last command completed by a C2HData SUCCESS flag */
	struct nvme_tcp_r2t_pdu r2t_held[2]; /* R2Ts left open by th_budget_full() */
	uint8_t pdu[PDU_MAX];
};

static struct th g_th;
/* SO_SNDBUF of the target's end of the sockets th_attach() makes (0: the system's). */
static int g_serve_sndbuf;
/* c2h_splice of the ports th_setup() creates. */
static bool g_c2h_splice;
/* file= of the targets th_setup() creates (NULL: RAM); a test that sets it puts NULL back. */
static const char *g_ns_file;
/* mdts= of the targets th_setup() creates; a test that changes it puts ERNIC_MDTS back. */
static uint32_t g_mdts = ERNIC_MDTS;

static struct ernic_target *tgt_create_allow(const char *const *allow_hosts)
{
	struct ernic_backend_cfg cfg;
	struct ernic_target_opts opts = { .subnqn = SUBNQN, .allow_hosts = allow_hosts };
	struct ernic_target *tgt = NULL;
	char err[ERNIC_ERRLEN];

	ernic_backend_cfg_init(&cfg);
	cfg.size = NS_SIZE;
	cfg.bs = BS;
	cfg.queues = 4;
	cfg.mdts = g_mdts;
	if (g_ns_file)
		snprintf(cfg.file, sizeof(cfg.file), "%s", g_ns_file);
	if (ernic_target_create(&cfg, &opts, &tgt, err, sizeof(err)))
		fprintf(stderr, "%s\n", err);
	return tgt;
}

static struct ernic_target *tgt_create(void)
{
	return tgt_create_allow(NULL);
}

static void set_timeout(int fd)
{
	struct timeval tv = { .tv_sec = 5 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A fresh connection on a socketpair, served by @port. */
static int th_attach(struct th *th)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	th->fd = sv[0];
	set_timeout(th->fd);
	if (g_serve_sndbuf)
		setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &g_serve_sndbuf, sizeof(g_serve_sndbuf));
	th->hd = th->dd = false;
	th->cid = 0;
	th->h2c_chunk = 4096;
	return ernic_tcp_serve_fd(th->port, sv[1]);
}

static struct th *th_setup_opts(const struct ernic_tcp_port_opts *opts, const char *const *allow_hosts)
{
	struct th *th = &g_th;

	memset(th, 0, offsetof(struct th, pdu));
	th->fd = -1;
	th->tgt = tgt_create_allow(allow_hosts);
	CU_ASSERT_FATAL(th->tgt != NULL);
	CU_ASSERT_FATAL(ernic_tcp_port_create(th->tgt, opts, &th->port) == 0);
	th->maxh2cdata = opts && opts->maxh2cdata ? opts->maxh2cdata : ERNIC_TCP_MAXH2CDATA;
	CU_ASSERT_FATAL(th_attach(th) == 0);
	return th;
}

static struct th *th_setup(uint32_t maxh2cdata)
{
	struct ernic_tcp_port_opts opts = { .maxh2cdata = maxh2cdata, .c2h_splice = g_c2h_splice };

	return th_setup_opts(&opts, NULL);
}

static void th_teardown(struct th *th)
{
	if (th->fd >= 0)
		close(th->fd);
	th->fd = -1;
	ernic_tcp_port_destroy(th->port);
	ernic_target_destroy(th->tgt);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Send a host PDU laid out as a Linux host does: data right after header and digest. */
static void th_send_pdu(struct th *th, void *hdr, uint8_t hlen, const void *data, uint32_t datal)
{
	static _Thread_local uint8_t out[PDU_MAX + 256]; /* one host thread per connection */
	struct nvme_tcp_hdr *ch = hdr;
	uint32_t hd = th->hd ? 4 : 0, dd = th->dd && datal ? 4 : 0, off;
	uint32_t crc;

	ch->flags |= (hd ? NVME_TCP_F_HDGST : 0) | (dd ? NVME_TCP_F_DDGST : 0);
	ch->hlen = hlen;
	ch->pdo = datal ? (uint8_t)(hlen + hd) : 0;
	ch->plen = hlen + hd + datal + dd;
	memcpy(out, hdr, hlen);
	off = hlen;
	if (hd) {
		crc = ernic_crc32c(0, hdr, hlen);
		memcpy(out + off, &crc, 4);
		off += 4;
	}
	if (datal) {
		memcpy(out + off, data, datal);
		off += datal;
	}
	if (dd) {
		crc = ernic_crc32c(0, data, datal);
		memcpy(out + off, &crc, 4);
		off += 4;
	}
	if (th->split_at && th->split_at < off) {
		/* The target reads the first part on its own before the rest arrives. */
		CU_ASSERT(write_all(th->fd, out, th->split_at) == 0);
		usleep(20 * 1000);
		CU_ASSERT(write_all(th->fd, out + th->split_at, off - th->split_at) == 0);
		return;
	}
	CU_ASSERT(write_all(th->fd, out, off) == 0);
}

/*
 * Receive one controller PDU into th->pdu, checking its digests. Returns its
 * type, or -1 at end of stream.
 */
static int th_recv_pdu(struct th *th)
{
	struct nvme_tcp_hdr *ch = (struct nvme_tcp_hdr *)th->pdu;
	uint32_t crc;

	if (read_all(th->fd, th->pdu, sizeof(*ch)))
		return -1;
	CU_ASSERT_FATAL(ch->plen >= ch->hlen && ch->plen <= PDU_MAX);
	if (read_all(th->fd, th->pdu + sizeof(*ch), ch->plen - sizeof(*ch)))
		return -1;
	if (ch->type == NVME_TCP_C2H_TERM || ch->type == NVME_TCP_ICRESP) {
		CU_ASSERT(!(ch->flags & (NVME_TCP_F_HDGST | NVME_TCP_F_DDGST)));
		return ch->type;
	}
	CU_ASSERT(!!(ch->flags & NVME_TCP_F_HDGST) == th->hd);
	if (th->hd) {
		memcpy(&crc, th->pdu + ch->hlen, 4);
		CU_ASSERT(crc == ernic_crc32c(0, th->pdu, ch->hlen));
	}
	if (ch->pdo) {
		uint32_t datal = ch->plen - ch->pdo - (th->dd ? 4 : 0);

		CU_ASSERT(!!(ch->flags & NVME_TCP_F_DDGST) == th->dd);
		if (th->dd) {
			memcpy(&crc, th->pdu + ch->plen - 4, 4);
			CU_ASSERT(crc == ernic_crc32c(0, th->pdu + ch->pdo, datal));
		}
	}
	return ch->type;
}

/* The controller closed: end of stream within the receive timeout. */
static bool th_closed(struct th *th)
{
	uint8_t b;

	return recv(th->fd, &b, 1, 0) == 0;
}

static void th_icreq(struct th *th, uint8_t digest)
{
	struct nvme_tcp_icreq_pdu icreq = { .hdr.type = NVME_TCP_ICREQ, .hdr.hlen = 128, .hdr.plen = 128,
					    .digest = digest };
	struct nvme_tcp_icresp_pdu *icresp = (struct nvme_tcp_icresp_pdu *)th->pdu;

	CU_ASSERT_FATAL(write_all(th->fd, &icreq, sizeof(icreq)) == 0);
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_ICRESP);
	CU_ASSERT(icresp->hdr.hlen == 128);
	CU_ASSERT(icresp->hdr.plen == 128);
	CU_ASSERT(icresp->hdr.pdo == 0);
	CU_ASSERT(icresp->pfv == NVME_TCP_PFV_1_0);
	CU_ASSERT(icresp->cpda == 0);
	CU_ASSERT(icresp->digest == digest);
	CU_ASSERT(icresp->maxdata == th->maxh2cdata);
	th->hd = digest & NVME_TCP_HDR_DIGEST_ENABLE;
	th->dd = digest & NVME_TCP_DATA_DIGEST_ENABLE;
}

/*
 * Send @sqe as a CapsuleCmd with the next CID (set in @sqe): @out (host to
 * controller) in the capsule when @icd, else left for an R2T; @inlen
 * (controller to host) to arrive by C2HData.
 */
static void th_cmd_send(struct th *th, struct nvme_sqe *sqe, const void *out, uint32_t outlen, uint32_t inlen,
			bool icd)
{
	struct nvme_tcp_cmd_pdu cmd = { .hdr.type = NVME_TCP_CMD };

	sqe->cid = ++th->cid;
	if (sqe->opc != NVME_FABRICS_COMMAND)
		sqe->flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	memset(&sqe->dptr, 0, sizeof(sqe->dptr));
	sqe->dptr.unkeyed.length = outlen ? outlen : inlen;
	sqe->dptr.id = outlen && icd ? SGL_ICD : SGL_TRANSPORT;
	cmd.cmd = *sqe;
	th_send_pdu(th, &cmd, sizeof(cmd), outlen && icd ? out : NULL, outlen && icd ? outlen : 0);
}

/*
 * Run one command to completion (th_cmd_send(), then its R2Ts, data and
 * completion). Returns the status (SCT << 8 | SC); @cqe gets the completion.
 */
static uint16_t th_cmd(struct th *th, struct nvme_sqe *sqe, const void *out, uint32_t outlen, void *in,
		       uint32_t inlen, bool icd, struct nvme_cqe *cqe_out)
{
	uint32_t c2h_rcvd = 0;
	struct nvme_cqe cqe = { 0 };

	th_cmd_send(th, sqe, out, outlen, inlen, icd);
	th->saw_success = false;

	for (;;) {
		int type = th_recv_pdu(th);

		if (type == NVME_TCP_R2T) {
			struct nvme_tcp_r2t_pdu r2t = *(struct nvme_tcp_r2t_pdu *)th->pdu;

			CU_ASSERT_FATAL(outlen && !icd);
			CU_ASSERT(r2t.cccid == sqe->cid);
			CU_ASSERT(r2t.r2to == 0);
			CU_ASSERT(r2t.r2tl == outlen);
			for (uint32_t off = r2t.r2to; off < r2t.r2to + r2t.r2tl; off += th->h2c_chunk) {
				struct nvme_tcp_data_pdu data = { .hdr.type = NVME_TCP_H2C_DATA };

				data.cccid = r2t.cccid;
				data.ttag = r2t.ttag;
				data.datao = off;
				data.datal = r2t.r2to + r2t.r2tl - off < th->h2c_chunk ? r2t.r2to + r2t.r2tl - off
										      : th->h2c_chunk;
				if (off + data.datal == r2t.r2to + r2t.r2tl)
					data.hdr.flags = NVME_TCP_F_DATA_LAST;
				th_send_pdu(th, &data, sizeof(data), (const uint8_t *)out + off, data.datal);
			}
			continue;
		}
		if (type == NVME_TCP_C2H_DATA) {
			struct nvme_tcp_data_pdu *data = (struct nvme_tcp_data_pdu *)th->pdu;

			CU_ASSERT_FATAL(data->datao + data->datal <= inlen);
			CU_ASSERT(data->cccid == sqe->cid);
			CU_ASSERT(data->datao == c2h_rcvd);
			CU_ASSERT(data->hdr.pdo == sizeof(*data) + (th->hd ? 4 : 0));
			memcpy((uint8_t *)in + data->datao, th->pdu + data->hdr.pdo, data->datal);
			c2h_rcvd += data->datal;
			if (data->hdr.flags & NVME_TCP_F_DATA_SUCCESS) {
				CU_ASSERT(data->hdr.flags & NVME_TCP_F_DATA_LAST);
				th->saw_success = true;
				cqe.cid = sqe->cid;
				break;
			}
			continue;
		}
		CU_ASSERT_FATAL(type == NVME_TCP_RSP);
		cqe = ((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe;
		CU_ASSERT(cqe.cid == sqe->cid);
		break;
	}
	if (cqe_out)
		*cqe_out = cqe;
	return nvme_cqe_status(&cqe);
}

/* Connect as @hostnqn; @cqe_out (may be NULL) gets the completion. */
static uint16_t th_connect_as(struct th *th, const char *hostnqn, const char *subnqn, uint16_t qid,
			      struct nvme_cqe *cqe_out)
{
	struct nvmf_connect_data data = { .cntlid = qid ? th->cntlid : NVMF_CNTLID_DYNAMIC };
	struct nvmf_connect_cmd cmd = { .opc = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_CONNECT };
	struct nvme_cqe cqe;
	uint16_t status;

	memset(data.hostid, 0x5a, sizeof(data.hostid));
	snprintf(data.subnqn, sizeof(data.subnqn), "%s", subnqn);
	snprintf(data.hostnqn, sizeof(data.hostnqn), "%s", hostnqn);
	cmd.qid = qid;
	cmd.sqsize = qid ? 127 : 31;
	status = th_cmd(th, (struct nvme_sqe *)&cmd, &data, sizeof(data), NULL, 0, true, &cqe);
	if (!status)
		th->cntlid = (uint16_t)cqe.dw0;
	if (cqe_out)
		*cqe_out = cqe;
	return status;
}

static uint16_t th_connect(struct th *th, const char *subnqn, uint16_t qid, uint16_t cntlid, uint32_t kato,
			   uint8_t cattr, bool icd)
{
	struct nvmf_connect_data data = { .cntlid = cntlid };
	struct nvmf_connect_cmd cmd = { .opc = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_CONNECT };
	struct nvme_cqe cqe;
	uint16_t status;

	memset(data.hostid, 0x5a, sizeof(data.hostid));
	snprintf(data.subnqn, sizeof(data.subnqn), "%s", subnqn);
	snprintf(data.hostnqn, sizeof(data.hostnqn), "%s", HOSTNQN);
	cmd.qid = qid;
	cmd.sqsize = qid ? 127 : 31;
	cmd.kato = kato;
	cmd.cattr = cattr;
	status = th_cmd(th, (struct nvme_sqe *)&cmd, &data, sizeof(data), NULL, 0, icd, &cqe);
	if (!status)
		th->cntlid = (uint16_t)cqe.dw0;
	return status;
}

static uint16_t th_prop_get(struct th *th, uint32_t ofst, bool size8, uint64_t *value)
{
	struct nvmf_property_cmd cmd = { .opc = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_PROPERTY_GET };
	struct nvme_cqe cqe;
	uint16_t status;

	cmd.attrib = size8 ? 1 : 0;
	cmd.ofst = ofst;
	status = th_cmd(th, (struct nvme_sqe *)&cmd, NULL, 0, NULL, 0, false, &cqe);
	*value = (uint64_t)cqe.dw0 | (uint64_t)cqe.dw1 << 32;
	return status;
}

static uint16_t th_prop_set(struct th *th, uint32_t ofst, uint32_t value)
{
	struct nvmf_property_cmd cmd = { .opc = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_PROPERTY_SET };

	cmd.ofst = ofst;
	cmd.value = value;
	return th_cmd(th, (struct nvme_sqe *)&cmd, NULL, 0, NULL, 0, false, NULL);
}

/* Admin queue up: ICReq, Connect, CC.EN, and for I/O the number of queues. */
static void th_admin_up(struct th *th, uint8_t digest, const char *subnqn, uint32_t kato, uint8_t cattr)
{
	uint64_t csts;

	th_icreq(th, digest);
	CU_ASSERT_FATAL(th_connect(th, subnqn, 0, NVMF_CNTLID_DYNAMIC, kato, cattr, true) == 0);
	CU_ASSERT_FATAL(th_prop_set(th, NVME_REG_CC, CC_ENABLE) == 0);
	CU_ASSERT_FATAL(th_prop_get(th, NVME_REG_CSTS, false, &csts) == 0);
	CU_ASSERT_FATAL(csts & NVME_CSTS_RDY);
	if (strcmp(subnqn, NVMF_DISC_NQN)) {
		struct nvme_sqe sqe = { .opc = NVME_ADMIN_SET_FEATURES, .cdw10 = NVME_FEAT_NUM_QUEUES,
					.cdw11 = 3u | 3u << 16 };

		CU_ASSERT_FATAL(th_cmd(th, &sqe, NULL, 0, NULL, 0, false, NULL) == 0);
	}
}

/* A Read or Write of namespace 1: @len bytes at block @slba. */
static struct nvme_sqe th_rw_sqe(uint8_t opc, uint64_t slba, uint32_t len)
{
	struct nvme_sqe sqe = { .opc = opc, .nsid = 1 };

	sqe.cdw10 = (uint32_t)slba;
	sqe.cdw11 = (uint32_t)(slba >> 32);
	sqe.cdw12 = len / BS - 1;
	return sqe;
}

static uint16_t th_rw(struct th *th, uint8_t opc, uint64_t slba, void *buf, uint32_t len, bool icd)
{
	struct nvme_sqe sqe = th_rw_sqe(opc, slba, len);

	if (opc == NVME_CMD_WRITE)
		return th_cmd(th, &sqe, buf, len, NULL, 0, icd, NULL);
	return th_cmd(th, &sqe, NULL, 0, buf, len, false, NULL);
}

static void fill(uint8_t *buf, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
}

/* ------------------------------------------------------------------ CRC32C */

static void test_crc32c_check_value_and_chaining(void)
{
	const char *s = "123456789";

	CU_ASSERT(ernic_crc32c(0, s, 9) == 0xE3069283);
	CU_ASSERT(ernic_crc32c(ernic_crc32c(0, s, 4), s + 4, 5) == 0xE3069283);
	CU_ASSERT(ernic_crc32c(0, s, 0) == 0);
}

/* ------------------------------------------------------------- happy paths */

static void test_icreq_without_digests(void)
{
	struct th *th = th_setup(0);

	th_icreq(th, 0);
	th_teardown(th);
}

/* No options at all is every default: ICResp advertises ERNIC_TCP_MAXH2CDATA (th_icreq() checks it). */
static void test_a_port_made_without_options_has_the_defaults(void)
{
	struct th *th = th_setup_opts(NULL, NULL);

	th_icreq(th, 0);
	CU_ASSERT_EQUAL(th->maxh2cdata, ERNIC_TCP_MAXH2CDATA);
	th_teardown(th);
}

static void test_icreq_with_digests_and_small_maxh2cdata(void)
{
	struct th *th = th_setup(8192);

	th_icreq(th, NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE);
	th_teardown(th);
}

static void test_connect_in_capsule_then_properties(void)
{
	struct th *th = th_setup(0);
	uint64_t cap, vs, cc, csts;

	th_icreq(th, 0);
	CU_ASSERT(th_connect(th, SUBNQN, 0, NVMF_CNTLID_DYNAMIC, 0, 0, true) == 0);
	CU_ASSERT(th->cntlid != 0 && th->cntlid != NVMF_CNTLID_DYNAMIC);
	CU_ASSERT(th_prop_get(th, NVME_REG_CAP, true, &cap) == 0);
	CU_ASSERT(NVME_CAP_MQES(cap) == ERNIC_DEFAULT_QUEUE_SIZE - 1);
	CU_ASSERT(th_prop_get(th, NVME_REG_VS, false, &vs) == 0);
	CU_ASSERT(vs >= NVME_VS(1, 3, 0));
	CU_ASSERT(th_prop_set(th, NVME_REG_CC, CC_ENABLE) == 0);
	CU_ASSERT(th_prop_get(th, NVME_REG_CC, false, &cc) == 0);
	CU_ASSERT(cc == CC_ENABLE);
	CU_ASSERT(th_prop_get(th, NVME_REG_CSTS, false, &csts) == 0);
	CU_ASSERT(csts & NVME_CSTS_RDY);
	th_teardown(th);
}

static void test_connect_by_r2t_and_wrong_subnqn_rejected(void)
{
	struct th *th = th_setup(0);

	th_icreq(th, 0);
	/* Connect data solicited by R2T, as a Linux host does on I/O queues of a 64-byte IOCCSZ. */
	CU_ASSERT(th_connect(th, "nqn.2026-11.io.ernic:nope", 0, NVMF_CNTLID_DYNAMIC, 0, 0, false) ==
		  NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT(th_connect(th, SUBNQN, 0, NVMF_CNTLID_DYNAMIC, 0, 0, false) == 0);
	th_teardown(th);
}

static void test_identify_by_c2h_data_then_capsule_resp(void)
{
	struct th *th = th_setup(0);
	struct nvme_sqe sqe = { .opc = NVME_ADMIN_IDENTIFY, .cdw10 = NVME_ID_CNS_CTRL };
	static struct nvme_id_ctrl id;

	th_admin_up(th, 0, SUBNQN, 0, 0);
	memset(&id, 0, sizeof(id));
	CU_ASSERT(th_cmd(th, &sqe, NULL, 0, &id, sizeof(id), false, NULL) == 0);
	/* SQ flow control on: the data ends with LAST alone and a CapsuleResp follows. */
	CU_ASSERT(!th->saw_success);
	CU_ASSERT(!strcmp(id.subnqn, SUBNQN));
	CU_ASSERT(id.cntlid == th->cntlid);
	/* In-capsule data advertised for I/O queues: IOCCSZ = 4 + 128 KiB / 16. */
	CU_ASSERT(id.ioccsz == ERNIC_IOCCSZ + ERNIC_TCP_IN_CAPSULE_DATA / 16);
	CU_ASSERT(id.sgls & NVME_CTRL_SGLS_SUPPORTED);
	/* No Keyed SGL Data Block over NVMe/TCP (tcp_map_data() refuses one): not advertised either. */
	CU_ASSERT_FALSE(id.sgls & NVME_CTRL_SGLS_KEYED);
	th_teardown(th);
}

/* I/O queue on a second connection, as a host does; returns the admin fd kept open. */
static int th_io_queue_up(struct th *th, uint8_t digest, uint8_t cattr)
{
	int admin_fd;

	th_admin_up(th, digest, SUBNQN, 0, cattr);
	admin_fd = th->fd;
	CU_ASSERT_FATAL(th_attach(th) == 0);
	th_icreq(th, digest);
	CU_ASSERT_FATAL(th_connect(th, SUBNQN, 1, th->cntlid, 0, cattr, false) == 0);
	return admin_fd;
}

static void test_write_r2t_read_success_flag(void)
{
	struct th *th = th_setup(0);
	static uint8_t wbuf[64 * 1024], rbuf[64 * 1024];
	struct nvme_sqe flush = { .opc = NVME_CMD_FLUSH, .nsid = 1 };
	int admin_fd = th_io_queue_up(th, 0, CATTR_DISABLE_SQFLOW);

	fill(wbuf, sizeof(wbuf), 1);
	/* 64 KiB by R2T, sent as sixteen 4 KiB H2CData PDUs. */
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 8, wbuf, sizeof(wbuf), false) == 0);
	CU_ASSERT(!th->saw_success);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 8, rbuf, sizeof(rbuf), false) == 0);
	CU_ASSERT(th->saw_success);
	CU_ASSERT(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	/* No CapsuleResp was left behind the SUCCESS: the next PDU is the flush's. */
	CU_ASSERT(th_cmd(th, &flush, NULL, 0, NULL, 0, false, NULL) == 0);
	close(admin_fd);
	th_teardown(th);
}

static void test_read_without_sqflow_disable_sends_capsule_resp(void)
{
	struct th *th = th_setup(0);
	static uint8_t wbuf[8192], rbuf[8192];
	int admin_fd = th_io_queue_up(th, 0, 0);

	fill(wbuf, sizeof(wbuf), 2);
	th->h2c_chunk = sizeof(wbuf); /* one H2CData PDU for the whole R2T */
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 100, wbuf, sizeof(wbuf), false) == 0);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 100, rbuf, sizeof(rbuf), false) == 0);
	CU_ASSERT(!th->saw_success);
	CU_ASSERT(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	close(admin_fd);
	th_teardown(th);
}

static void test_write_in_capsule(void)
{
	struct th *th = th_setup(0);
	static uint8_t wbuf[8192], rbuf[8192];
	int admin_fd = th_io_queue_up(th, 0, 0);

	fill(wbuf, sizeof(wbuf), 3);
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 200, wbuf, sizeof(wbuf), true) == 0);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 200, rbuf, sizeof(rbuf), false) == 0);
	CU_ASSERT(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	close(admin_fd);
	th_teardown(th);
}

/*
 * A write with its data in the capsule, sent cut after @split bytes (0:
 * whole), or by R2T (@icd false), then read back; returns how many writes
 * landed in the namespace in place meanwhile (h2c_in_place).
 */
static uint64_t th_write_read_back(struct th *th, uint64_t slba, uint8_t *wbuf, uint8_t *rbuf, uint32_t len, bool icd,
				   uint32_t split)
{
	struct ernic_tcp_tx_stats before, after;

	ernic_tcp_port_tx_stats(th->port, &before);
	th->split_at = split;
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, slba, wbuf, len, icd) == 0);
	th->split_at = 0;
	CU_ASSERT(th_rw(th, NVME_CMD_READ, slba, rbuf, len, false) == 0);
	CU_ASSERT(!memcmp(wbuf, rbuf, len));
	ernic_tcp_port_tx_stats(th->port, &after);
	return after.h2c_in_place - before.h2c_in_place;
}

/*
 * A whole default MDTS transfer in the capsule, as a Linux host sends a write
 * of up to IOCCSZ * 16 - 64 bytes: whole, or cut (then it lands in the
 * namespace itself as it arrives), and on a file namespace, which cannot
 * take it in place, gathered in the slot's buffer, which grows to it.
 */
static void test_write_of_128_kib_in_capsule(void)
{
	static uint8_t wbuf[ERNIC_TCP_IN_CAPSULE_DATA], rbuf[ERNIC_TCP_IN_CAPSULE_DATA];
	char path[] = "/tmp/ernic-tcp-ut-XXXXXX";
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0);
	uint64_t landed;
	int fd;

	for (uint32_t split = 0; split <= 72 + 70000; split += 72 + 70000) {
		fill(wbuf, sizeof(wbuf), 11 + split);
		landed = th_write_read_back(th, 512, wbuf, rbuf, sizeof(wbuf), true, split);
		if (split)
			CU_ASSERT_EQUAL(landed, 1);
	}
	close(admin_fd);
	th_teardown(th);

	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	g_ns_file = path;
	th = th_setup(0);
	g_ns_file = NULL;
	admin_fd = th_io_queue_up(th, 0, 0);
	fill(wbuf, sizeof(wbuf), 12);
	CU_ASSERT_EQUAL(th_write_read_back(th, 512, wbuf, rbuf, sizeof(wbuf), true, 72 + 70000), 0);
	close(admin_fd);
	th_teardown(th);
	unlink(path);
}

/*
 * In-capsule data of 16 KiB or more that is not all there at once lands in
 * the RAM namespace itself: the kernel's copy is the only one. Not below
 * 16 KiB, not under a data digest (checked before a byte may reach the
 * medium), and not for a write the core refuses, whose blocks stay as they were.
 */
static void test_large_in_capsule_writes_land_in_the_namespace_unless_small_digested_or_refused(void)
{
	static uint8_t wbuf[64 * 1024], rbuf[64 * 1024], last[32 * 1024];
	uint64_t end = NS_SIZE / BS;
	struct ernic_tcp_tx_stats a, b;
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0);

	fill(wbuf, sizeof(wbuf), 21);
	CU_ASSERT_EQUAL(th_write_read_back(th, 1024, wbuf, rbuf, sizeof(wbuf), true, 72 + 5000), 1);
	CU_ASSERT_EQUAL(th_write_read_back(th, 2048, wbuf, rbuf, 8192, true, 72 + 3000), 0);
	ernic_tcp_port_tx_stats(th->port, &a);

	/* 16 blocks from 8 before the end: LBA Out of Range, and the last 8 blocks untouched. */
	CU_ASSERT(th_rw(th, NVME_CMD_READ, end - 8, last, sizeof(last), false) == 0);
	fill(wbuf, sizeof(wbuf), 22);
	th->split_at = 72 + 5000;
	CU_ASSERT_EQUAL(th_rw(th, NVME_CMD_WRITE, end - 8, wbuf, sizeof(wbuf), true), NVME_SC_LBA_RANGE);
	th->split_at = 0;
	CU_ASSERT(th_rw(th, NVME_CMD_READ, end - 8, rbuf, sizeof(last), false) == 0);
	CU_ASSERT(!memcmp(rbuf, last, sizeof(last)));
	ernic_tcp_port_tx_stats(th->port, &b);
	CU_ASSERT_EQUAL(b.h2c_in_place, a.h2c_in_place);
	close(admin_fd);
	close(th->fd);

	CU_ASSERT_FATAL(th_attach(th) == 0);
	admin_fd = th_io_queue_up(th, NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE, 0);
	fill(wbuf, sizeof(wbuf), 23);
	CU_ASSERT_EQUAL(th_write_read_back(th, 1024, wbuf, rbuf, sizeof(wbuf), true, 72 + 4 + 5000), 0);
	close(admin_fd);
	th_teardown(th);
}


static void test_write_in_capsule_arriving_in_two_parts(void)
{
	struct th *th = th_setup(0);
	static uint8_t wbuf[8192], rbuf[8192];
	uint8_t digest = NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE;
	int admin_fd = th_io_queue_up(th, digest, 0);

	/*
	 * Whole, the data is written from the receive buffer; cut in the
	 * middle of the data, and then of its digest, it is gathered first.
	 */
	for (uint32_t split = 72 + 4 + 1000; split <= 72 + 4 + 8192 + 2; split += 8192 + 2 - 1000) {
		fill(wbuf, sizeof(wbuf), split);
		(void)th_write_read_back(th, 300, wbuf, rbuf, sizeof(wbuf), true, split);
	}
	close(admin_fd);
	th_teardown(th);
}

static void test_digests_round_trip(void)
{
	struct th *th = th_setup(16384);
	static uint8_t wbuf[128 * 1024], rbuf[128 * 1024], small[4096];
	uint8_t digest = NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE;
	int admin_fd = th_io_queue_up(th, digest, 0);

	/* A whole MDTS transfer in 16 KiB H2CData PDUs, and C2HData split likewise. */
	fill(wbuf, sizeof(wbuf), 4);
	th->h2c_chunk = 16384;
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 0, wbuf, sizeof(wbuf), false) == 0);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 0, rbuf, sizeof(rbuf), false) == 0);
	CU_ASSERT(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	fill(small, sizeof(small), 5);
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 1000, small, sizeof(small), true) == 0);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 1000, rbuf, sizeof(small), false) == 0);
	CU_ASSERT(!memcmp(small, rbuf, sizeof(small)));
	close(admin_fd);
	th_teardown(th);
}

/*
 * A read of a RAM namespace goes out from the namespace itself (no copy into
 * the slot's buffer first) unless the connection computes data digests,
 * which must match what is sent; the bytes are the same either way.
 */
static void test_reads_of_a_ram_namespace_are_sent_in_place_except_under_a_data_digest(void)
{
	struct th *th;

	g_c2h_splice = true;
	th = th_setup(16384);
	g_c2h_splice = false;
	static uint8_t wbuf[128 * 1024], rbuf[128 * 1024];
	struct ernic_tcp_tx_stats before, after;
	struct nvme_sqe read = { .opc = NVME_CMD_READ, .nsid = 1 };
	int admin_fd = th_io_queue_up(th, 0, 0);

	fill(wbuf, sizeof(wbuf), 7);
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 64, wbuf, sizeof(wbuf), false) == 0);
	ernic_tcp_port_tx_stats(th->port, &before);
	/* A whole MDTS transfer, C2HData in 16 KiB PDUs, each pointing into the namespace. */
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 64, rbuf, sizeof(rbuf), false) == 0);
	CU_ASSERT(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 64 + 31, rbuf, BS, false) == 0);
	CU_ASSERT(!memcmp(wbuf + 31 * BS, rbuf, BS));
	ernic_tcp_port_tx_stats(th->port, &after);
	CU_ASSERT_EQUAL(after.c2h_in_place - before.c2h_in_place, 2);
	/* The 16 KiB PDUs went by reference (TCP_SPLICE_MIN), the 4 KiB read was copied. */
	CU_ASSERT_EQUAL(after.c2h_spliced - before.c2h_spliced, sizeof(rbuf) / 16384);
	/* A descriptor shorter than the blocks is refused before anything is held. */
	read.cdw12 = 0;
	CU_ASSERT_EQUAL(th_cmd(th, &read, NULL, 0, rbuf, BS, false, NULL), NVME_SC_SUCCESS);
	read.cdw12 = 1; /* 8 KiB asked, a 4 KiB descriptor */
	CU_ASSERT_EQUAL(th_cmd(th, &read, NULL, 0, rbuf, BS, false, NULL), NVME_SC_SGL_INVALID_DATA_LEN);
	ernic_tcp_port_tx_stats(th->port, &before);
	CU_ASSERT_EQUAL(before.c2h_in_place - after.c2h_in_place, 1);
	close(admin_fd);
	close(th->fd);

	/* With data digests: copied, digested, and still the same bytes. */
	CU_ASSERT_FATAL(th_attach(th) == 0);
	admin_fd = th_io_queue_up(th, NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE, 0);
	memset(rbuf, 0, sizeof(rbuf));
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 64, rbuf, sizeof(rbuf), false) == 0);
	CU_ASSERT(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	ernic_tcp_port_tx_stats(th->port, &after);
	CU_ASSERT_EQUAL(after.c2h_in_place, before.c2h_in_place);
	CU_ASSERT_EQUAL(after.c2h_spliced, before.c2h_spliced);
	close(admin_fd);
	th_teardown(th);
}

/* A loopback TCP connection served by @port, both ends' buffers @buf bytes: the host's end, or -1. */
static int tcp_pair_serve(struct ernic_tcp_port *port, int buf)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c = -1, s = -1;

	if (l < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sin, &len))
		goto fail;
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || setsockopt(c, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf)) ||
	    connect(c, (struct sockaddr *)&sin, sizeof(sin)))
		goto fail;
	s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf)) || ernic_tcp_serve_fd(port, s))
		goto fail;
	close(l);
	set_timeout(c);
	return c;
fail:
	if (s >= 0)
		close(s);
	if (c >= 0)
		close(c);
	if (l >= 0)
		close(l);
	return -1;
}

/*
 * A host reading a read's data a little at a time holds the namespace memory
 * it is sent from: a removal waits on it no longer than the port's idle
 * timeout (1 s here), then that connection is closed and the removal done.
 * Before, it waited as long as the host took to read (26 s here), and every
 * other removal and the control path with it.
 */
static void test_a_slow_reader_holds_a_namespace_removal_no_longer_than_the_idle_timeout(void)
{
	struct ernic_tcp_port_opts opts = { .idle_timeout_ms = 1000 };
	const uint32_t len = 1u << 20;
	static uint8_t chunk[4096];
	struct remover r = { 0 };
	struct nvme_sqe sqe;
	uint64_t t0, waited_ms;
	bool closed = false;
	struct th *th;
	pthread_t thr;
	int admin_fd;

	g_mdts = 0; /* one 1 MiB read, in one C2HData PDU */
	th = th_setup_opts(&opts, NULL);
	admin_fd = th_io_queue_up(th, 0, 0);
	/*
	 * I/O queue 2 over loopback TCP (a Unix socket's send waits per buffer,
	 * not per call), small buffers; queue 1's socket may still be closing.
	 */
	close(th->fd);
	th->fd = tcp_pair_serve(th->port, 16384);
	CU_ASSERT_FATAL(th->fd >= 0);
	th_icreq(th, 0);
	CU_ASSERT_FATAL(th_connect(th, SUBNQN, 2, th->cntlid, 0, 0, true) == 0);
	r.tgt = th->tgt;
	sqe = th_rw_sqe(NVME_CMD_READ, 0, len);
	th_cmd_send(th, &sqe, NULL, 0, len, false);
	poll(NULL, 0, 200);
	t0 = ernic_now_ns();
	CU_ASSERT_EQUAL_FATAL(pthread_create(&thr, NULL, remover_main, &r), 0);
	/* 4 KiB every 100 ms, about 40 KB/s. */
	while (!atomic_load(&r.done) && ernic_now_ns() - t0 < 15000000000ull) {
		ssize_t n = recv(th->fd, chunk, sizeof(chunk), MSG_DONTWAIT);

		closed = closed || n == 0;
		poll(NULL, 0, 100);
	}
	waited_ms = (ernic_now_ns() - t0) / 1000000;
	CU_ASSERT(waited_ms < 5000);
	remover_join(&r, thr, 1000);
	/* The connection was closed under the host: the rest of its stream ends (not the receive timeout). */
	while (!closed) {
		ssize_t n = recv(th->fd, chunk, sizeof(chunk), 0);

		if (n < 0)
			break;
		closed = n == 0;
	}
	CU_ASSERT(closed);
	close(admin_fd);
	th_teardown(th);
	g_mdts = ERNIC_MDTS;
}

/*
 * Data solicited by R2T lands in the namespace too, however many H2CData PDUs
 * bring it; below 16 KiB and under a data digest it goes through the buffer.
 */
static void test_writes_by_r2t_land_in_the_namespace_unless_small_or_digested(void)
{
	static uint8_t wbuf[64 * 1024], rbuf[64 * 1024];
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0);

	/* Sixteen 4 KiB H2CData PDUs. */
	fill(wbuf, sizeof(wbuf), 31);
	CU_ASSERT_EQUAL(th_write_read_back(th, 1536, wbuf, rbuf, sizeof(wbuf), false, 0), 1);
	fill(wbuf, sizeof(wbuf), 32);
	CU_ASSERT_EQUAL(th_write_read_back(th, 1700, wbuf, rbuf, 8192, false, 0), 0);
	close(admin_fd);
	close(th->fd);

	CU_ASSERT_FATAL(th_attach(th) == 0);
	admin_fd = th_io_queue_up(th, NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE, 0);
	fill(wbuf, sizeof(wbuf), 33);
	CU_ASSERT_EQUAL(th_write_read_back(th, 1536, wbuf, rbuf, sizeof(wbuf), false, 0), 0);
	close(admin_fd);
	th_teardown(th);
}

/*
 * A host gone in the middle of a write landing in place: its connection
 * closes, its queue with it, and the namespace it was writing into can be
 * removed at once.
 */
static void test_a_host_gone_inside_a_write_landing_in_place_lets_the_namespace_go(void)
{
	struct nvme_tcp_cmd_pdu cmd = { .hdr = { .type = NVME_TCP_CMD, .hlen = 72, .pdo = 72, .plen = 72 + 65536 } };
	static uint8_t part[20000];
	struct th *th = th_setup(0);
	struct remover r = { .tgt = th->tgt };
	struct ernic_tcp_tx_stats a, b;
	int admin_fd = th_io_queue_up(th, 0, 0);
	pthread_t thr;

	cmd.cmd.opc = NVME_CMD_WRITE;
	cmd.cmd.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	cmd.cmd.cid = 9;
	cmd.cmd.nsid = 1;
	cmd.cmd.cdw12 = 65536 / BS - 1;
	cmd.cmd.dptr.id = SGL_ICD;
	cmd.cmd.dptr.unkeyed.length = 65536;
	ernic_tcp_port_tx_stats(th->port, &a);
	CU_ASSERT(write_all(th->fd, &cmd, sizeof(cmd)) == 0);
	CU_ASSERT(write_all(th->fd, part, sizeof(part)) == 0);
	b = a;
	for (int i = 0; i < 200 && b.h2c_in_place == a.h2c_in_place; i++) {
		poll(NULL, 0, 10);
		ernic_tcp_port_tx_stats(th->port, &b);
	}
	CU_ASSERT_EQUAL_FATAL(b.h2c_in_place - a.h2c_in_place, 1);
	close(th->fd);
	for (int i = 0; i < 200 && ernic_tcp_port_nr_conns(th->port) > 1; i++)
		poll(NULL, 0, 10);
	CU_ASSERT_EQUAL(ernic_tcp_port_nr_conns(th->port), 1);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&thr, NULL, remover_main, &r), 0);
	remover_join(&r, thr, 5000);
	close(admin_fd);
	th_teardown(th);
}

/*
 * A queue that still has namespace memory to send keeps the namespace mapped:
 * removing it waits until the queue lets go, and no longer.
 */
static void test_namespace_removal_waits_for_namespace_memory_still_to_be_sent(void)
{
	static const struct ernic_transport_ops none = { .name = "none" };
	struct ernic_target *tgt = tgt_create();
	struct remover r = { .tgt = tgt };
	struct ernic_sq sq;
	pthread_t thr;

	CU_ASSERT_FATAL(tgt != NULL);
	ernic_sq_init(&sq, tgt, &none, NULL);
	ernic_sq_ns_mem_hold(&sq);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&thr, NULL, remover_main, &r), 0);
	usleep(100 * 1000);
	CU_ASSERT_FALSE(atomic_load(&r.done));
	ernic_sq_ns_mem_release(&sq);
	pthread_join(thr, NULL);
	CU_ASSERT(atomic_load(&r.done));
	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(ernic_target_nr_ns(tgt), 0);
	ernic_sq_destroy(&sq);
	ernic_target_destroy(tgt);
}

/*
 * Reads of a namespace being removed, over TCP: each completes, successfully
 * or with Invalid Namespace; the connection never fails under them (a send
 * from unmapped memory would fail it with EFAULT, or crash the process).
 */
static void test_reads_in_place_while_the_namespace_is_removed_complete_cleanly(void)
{
	struct th *th = th_setup(0);
	static uint8_t rbuf[128 * 1024];
	struct remover r = { .tgt = th->tgt };
	unsigned int ok = 0, invalid = 0, other = 0;
	pthread_t thr;
	int admin_fd = th_io_queue_up(th, 0, 0);

	CU_ASSERT_EQUAL_FATAL(pthread_create(&thr, NULL, remover_main, &r), 0);
	for (int i = 0; i < 100000 && !(atomic_load(&r.done) && invalid > 0); i++) {
		uint16_t status = th_rw(th, NVME_CMD_READ, (uint64_t)(i % 64) * 32, rbuf, sizeof(rbuf), false);

		if (status == NVME_SC_SUCCESS)
			ok++;
		else if (status == NVME_SC_INVALID_NS)
			invalid++;
		else
			other++;
	}
	pthread_join(thr, NULL);
	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT(invalid > 0);
	CU_ASSERT_EQUAL(other, 0);
	(void)ok;
	close(admin_fd);
	th_teardown(th);
}

static void test_bad_sgl_completes_with_status(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_cmd_pdu cmd = { .hdr.type = NVME_TCP_CMD };
	int admin_fd = th_io_queue_up(th, 0, 0);
	struct nvme_cqe cqe;

	/* A keyed SGL means nothing over TCP: SGL Descriptor Type Invalid, connection kept. */
	cmd.cmd.opc = NVME_CMD_READ;
	cmd.cmd.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	cmd.cmd.cid = 77;
	cmd.cmd.nsid = 1;
	nvme_keyed_sgl_set(&cmd.cmd.dptr, 0x1000, BS, 0x1234, 0);
	th_send_pdu(th, &cmd, sizeof(cmd), NULL, 0);
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
	cqe = ((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe;
	CU_ASSERT(cqe.cid == 77);
	CU_ASSERT(nvme_cqe_status(&cqe) == NVME_SC_SGL_INVALID_TYPE);

	/* Transport SGL with a wrong subtype. */
	cmd.cmd.cid = 78;
	memset(&cmd.cmd.dptr, 0, sizeof(cmd.cmd.dptr));
	cmd.cmd.dptr.unkeyed.length = BS;
	cmd.cmd.dptr.id = NVME_SGL_ID(NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK, NVME_SGL_SUBTYPE_ADDRESS);
	th_send_pdu(th, &cmd, sizeof(cmd), NULL, 0);
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
	cqe = ((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe;
	CU_ASSERT(nvme_cqe_status(&cqe) == NVME_SC_SGL_INVALID_SUBTYPE);

	/* A read whose SGL is shorter than the blocks asked for. */
	cmd.cmd.cid = 79;
	cmd.cmd.dptr.id = SGL_TRANSPORT;
	cmd.cmd.dptr.unkeyed.length = BS / 2;
	th_send_pdu(th, &cmd, sizeof(cmd), NULL, 0);
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
	cqe = ((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe;
	CU_ASSERT(nvme_cqe_status(&cqe) == NVME_SC_SGL_INVALID_DATA_LEN);
	close(admin_fd);
	th_teardown(th);
}

/* Namespace Attribute notices on, then Asynchronous Event Requests with CIDs @first.. @first + @n - 1, held by the core. */
static void th_aers_held(struct th *th, uint16_t first, int n)
{
	struct nvme_sqe aec = { .opc = NVME_ADMIN_SET_FEATURES, .cdw10 = NVME_FEAT_ASYNC_EVENT,
				.cdw11 = NVME_CTRL_OAES_NS_ATTR };
	struct nvme_tcp_cmd_pdu aer = { .hdr.type = NVME_TCP_CMD };

	CU_ASSERT(th_cmd(th, &aec, NULL, 0, NULL, 0, false, NULL) == 0);
	aer.cmd.opc = NVME_ADMIN_ASYNC_EVENT;
	aer.cmd.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	for (int i = 0; i < n; i++) {
		aer.cmd.cid = (uint16_t)(first + i);
		th_send_pdu(th, &aer, sizeof(aer), NULL, 0);
	}
}

/* AER held by the core, completed from another thread by an event, then one left held at close. */
static void test_aer_completes_from_another_thread_and_on_close(void)
{
	struct th *th = th_setup(0);
	struct nvme_cqe cqe;

	th_admin_up(th, 0, SUBNQN, 0, 0);
	th_aers_held(th, 500, 2);
	/* Both are held: the queue still answers other commands. */
	{
		uint64_t csts;

		CU_ASSERT(th_prop_get(th, NVME_REG_CSTS, false, &csts) == 0);
	}
	ernic_target_ns_changed(th->tgt, 1);
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
	cqe = ((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe;
	CU_ASSERT(cqe.cid == 500);
	CU_ASSERT(cqe.dw0 == NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_NS_CHANGED, NVME_LOG_CHANGED_NS));
	/* cid 501 is still held when the host goes away; closing must neither hang nor leak. */
	close(th->fd);
	th->fd = -1;
	for (int i = 0; i < 50 && ernic_tcp_port_nr_conns(th->port); i++)
		poll(NULL, 0, 100);
	CU_ASSERT(ernic_tcp_port_nr_conns(th->port) == 0);
	th_teardown(th);
}

/*
 * An event for a host that does not read its socket: the AER completion it
 * releases is sent by that host's connection thread, not by the thread that
 * raised the event, which holds the target's lock while it does. Before, the
 * raiser waited in the blocked send (10 s, and as long as the host kept
 * reading a little at a time), and every Connect, keep-alive check and
 * control request with it.
 */
static void test_an_event_for_a_host_that_does_not_read_holds_no_other_thread(void)
{
	struct th *th = th_setup(0);
	const uint32_t len = 32 * 1024;
	uint64_t t0, raised_ms;
	bool got_aer = false;

	/* The admin queue over loopback TCP with small buffers (a Unix socket's send waits per buffer). */
	close(th->fd);
	th->fd = tcp_pair_serve(th->port, 16384);
	CU_ASSERT_FATAL(th->fd >= 0);
	th_admin_up(th, 0, SUBNQN, 0, 0);
	th_aers_held(th, 500, 1);
	/* 512 KiB of log pages the host does not read: the connection's thread waits in its send. */
	for (int i = 0; i < 16; i++) {
		struct nvme_sqe sqe = { .opc = NVME_ADMIN_GET_LOG_PAGE, .cdw10 = NVME_LOG_SMART | (len / 4 - 1) << 16 };

		th_cmd_send(th, &sqe, NULL, 0, len, false);
	}
	poll(NULL, 0, 300);
	t0 = ernic_now_ns();
	ernic_target_ns_changed(th->tgt, 1);
	raised_ms = (ernic_now_ns() - t0) / 1000000;
	CU_ASSERT(raised_ms < 2000);
	/* The host reads again: the log pages, then the AER's completion. */
	while (!got_aer) {
		int type = th_recv_pdu(th);
		const struct nvme_cqe *cqe = &((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe;

		if (type < 0)
			break;
		got_aer = type == NVME_TCP_RSP && cqe->cid == 500;
		if (got_aer)
			CU_ASSERT(cqe->dw0 == NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_NS_CHANGED,
							   NVME_LOG_CHANGED_NS));
	}
	CU_ASSERT(got_aer);
	th_teardown(th);
}

static void test_keep_alive_timeout_closes_connection(void)
{
	struct th *th = th_setup(0);
	struct ernic_counters c;
	struct nvme_sqe ka = { .opc = NVME_ADMIN_KEEP_ALIVE };
	uint64_t start;

	th_admin_up(th, 0, SUBNQN, 1000, 0);
	/* Keep Alive commands every 300 ms hold it open past the timeout... */
	for (int i = 0; i < 5; i++) {
		poll(NULL, 0, 300);
		CU_ASSERT(th_cmd(th, &ka, NULL, 0, NULL, 0, false, NULL) == 0);
	}
	/* ...and silence closes it within the timeout plus a poll period or so. */
	start = ernic_now_ns();
	CU_ASSERT(th_closed(th));
	CU_ASSERT(ernic_now_ns() - start < 2500000000ull);
	for (int i = 0; i < 50 && ernic_tcp_port_nr_conns(th->port); i++)
		poll(NULL, 0, 100);
	ernic_target_counters(th->tgt, &c);
	CU_ASSERT(c.controllers == 0);
	th_teardown(th);
}

/*
 * Disconnect deletes the I/O queue: answered, then the connection closes, so
 * no Connect on the same socket can move it to another subsystem while its
 * R2T still holds the namespace memory a write lands in.
 */
static void test_disconnect_is_answered_then_the_connection_closes_even_with_an_r2t_open(void)
{
	struct th *th = th_setup(0);
	struct nvme_sqe write = th_rw_sqe(NVME_CMD_WRITE, 0, 64 * 1024);
	struct nvmf_fabrics_cmd disc = { .opc = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_DISCONNECT };
	struct nvmf_disconnect_cmd other = { .opc = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_DISCONNECT,
					     .recfmt = 1 };
	int admin_fd = th_io_queue_up(th, 0, 0);
	uint8_t buf[BS];

	/* A record format other than 0 is refused, and the queue stays. */
	CU_ASSERT_EQUAL(th_cmd(th, (struct nvme_sqe *)&other, NULL, 0, NULL, 0, false, NULL),
			NVME_SC_CONNECT_INCOMPATIBLE_FORMAT);
	CU_ASSERT_EQUAL(th_rw(th, NVME_CMD_READ, 0, buf, sizeof(buf), false), 0);
	/* A write whose R2T the host never answers. */
	write.cid = 7;
	th_cmd_send(th, &write, NULL, 64 * 1024, 0, false);
	CU_ASSERT_EQUAL_FATAL(th_recv_pdu(th), NVME_TCP_R2T);
	CU_ASSERT_EQUAL(th_cmd(th, (struct nvme_sqe *)&disc, NULL, 0, NULL, 0, false, NULL), 0);
	CU_ASSERT_TRUE(th_closed(th));
	close(admin_fd);
	th_teardown(th);
}

/* As Linux nvmet: losing the admin queue is a fatal controller error, its I/O connections go too. */
static void test_closing_the_admin_connection_closes_the_io_connections(void)
{
	struct th *th = th_setup(0);
	struct ernic_counters c;
	int admin_fd = th_io_queue_up(th, 0, 0);
	uint16_t cntlid = th->cntlid;

	close(admin_fd);
	/* The target closes the I/O connection: end of stream within the receive timeout */
	CU_ASSERT(th_closed(th));
	close(th->fd);
	/* A new I/O Connect to that controller is refused as for an unknown CNTLID */
	CU_ASSERT_FATAL(th_attach(th) == 0);
	th_icreq(th, 0);
	CU_ASSERT(th_connect(th, SUBNQN, 2, cntlid, 0, 0, true) == NVME_SC_CONNECT_INVALID_PARAM);
	for (int i = 0; i < 50 && ernic_tcp_port_nr_conns(th->port) > 1; i++)
		poll(NULL, 0, 100);
	ernic_target_counters(th->tgt, &c);
	CU_ASSERT(c.controllers == 0);
	CU_ASSERT(c.io_queues == 0);
	th_teardown(th);
}

/*
 * The I/O connection of a failed controller answers no command: each one
 * that reaches it after the admin queue is gone is dropped and the
 * connection closes. An error status (Command Aborted due to SQ Deletion)
 * would go to a host that has not seen the failure yet, and Linux resends
 * such a command at once on the same queue and fails it with EIO after 5.
 */
static void test_io_commands_after_the_admin_queue_is_lost_are_not_answered(void)
{
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0), io_fd = th->fd;
	uint16_t cntlid = th->cntlid, qid;
	bool closed = false;
	uint64_t start;

	close(admin_fd);
	/*
	 * Until the target has seen the admin queue go: from then on an I/O
	 * Connect to the controller is refused. The I/O connection's own check
	 * comes every ERNIC_TCP_POLL_MS, so the reads below land before it.
	 */
	for (qid = 2;; qid++) {
		uint16_t status;

		CU_ASSERT_FATAL(qid <= 4);
		CU_ASSERT_FATAL(th_attach(th) == 0);
		th_icreq(th, 0);
		status = th_connect(th, SUBNQN, qid, cntlid, 0, 0, true);
		close(th->fd);
		if (status == NVME_SC_CONNECT_INVALID_PARAM)
			break;
		CU_ASSERT_FATAL(status == NVME_SC_SUCCESS);
		poll(NULL, 0, 1);
	}
	th->fd = io_fd;
	start = ernic_now_ns();
	while (!closed && ernic_now_ns() - start < 5000000000ull) {
		struct nvme_tcp_cmd_pdu cmd = { .hdr.type = NVME_TCP_CMD };

		cmd.cmd.opc = NVME_CMD_READ;
		cmd.cmd.nsid = 1;
		cmd.cmd.cid = ++th->cid;
		cmd.cmd.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
		cmd.cmd.dptr.id = SGL_TRANSPORT;
		cmd.cmd.dptr.unkeyed.length = BS;
		th_send_pdu(th, &cmd, sizeof(cmd), NULL, 0);
		for (;;) {
			int type = th_recv_pdu(th);

			if (type < 0) {
				closed = true;
				break;
			}
			if (type == NVME_TCP_C2H_DATA)
				continue;
			CU_ASSERT_FATAL(type == NVME_TCP_RSP);
			/* The old answer was Command Aborted due to SQ Deletion */
			CU_ASSERT_EQUAL(nvme_cqe_status(&((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe), NVME_SC_SUCCESS);
			break;
		}
	}
	CU_ASSERT(closed);
	th_teardown(th);
}

/* Discovery over a real loopback TCP socket, through the accept thread. */
static void test_discovery_log_over_loopback_tcp(void)
{
	struct th *th = &g_th;
	struct ernic_tcp_port_opts opts = { 0 };
	static uint8_t log[2048];
	const struct nvmf_disc_log_hdr *hdr = (const void *)log;
	const struct nvmf_disc_log_entry *e = (const void *)(log + sizeof(*hdr));
	struct nvme_sqe glp = { .opc = NVME_ADMIN_GET_LOG_PAGE };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char err[ERNIC_ERRLEN], svc[8];

	memset(th, 0, offsetof(struct th, pdu));
	th->tgt = tgt_create();
	CU_ASSERT_FATAL(th->tgt != NULL);
	CU_ASSERT_FATAL(ernic_tcp_port_create(th->tgt, &opts, &th->port) == 0);
	th->maxh2cdata = ERNIC_TCP_MAXH2CDATA;
	CU_ASSERT_FATAL(ernic_tcp_port_listen(th->port, "127.0.0.1", "0", err, sizeof(err)) == 0);
	CU_ASSERT_FATAL(ernic_tcp_port_number(th->port) != 0);
	CU_ASSERT_FATAL(ernic_tcp_port_start(th->port) == 0);

	th->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(th->fd >= 0);
	set_timeout(th->fd);
	sin.sin_port = htons(ernic_tcp_port_number(th->port));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CU_ASSERT_FATAL(connect(th->fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	th->h2c_chunk = 4096;

	th_admin_up(th, 0, NVMF_DISC_NQN, 0, 0);
	glp.cdw10 = NVME_LOG_DISC | (uint32_t)(sizeof(log) / 4 - 1) << 16;
	CU_ASSERT(th_cmd(th, &glp, NULL, 0, log, sizeof(log), false, NULL) == 0);
	CU_ASSERT(hdr->numrec == 1);
	CU_ASSERT(e->trtype == NVMF_TRTYPE_TCP);
	CU_ASSERT(e->subtype == NVMF_SUBTYPE_NVME);
	CU_ASSERT(!strcmp(e->subnqn, SUBNQN));
	CU_ASSERT(!strncmp(e->traddr, "127.0.0.1 ", 10));
	snprintf(svc, sizeof(svc), "%u ", ernic_tcp_port_number(th->port));
	CU_ASSERT(!strncmp(e->trsvcid, svc, strlen(svc)));
	CU_ASSERT(ernic_tcp_port_nr_conns(th->port) == 1);

	/* Stopping the port closes the idle connection. */
	ernic_tcp_port_stop(th->port, 1000);
	CU_ASSERT(th_closed(th));
	CU_ASSERT(ernic_tcp_port_nr_conns(th->port) == 0);
	th_teardown(th);
}

/* A port listening on IPv6 loopback reports the IPv6 family and address. */
static void test_discovery_log_of_a_port_on_ipv6_loopback(void)
{
	struct th *th = &g_th;
	struct ernic_tcp_port_opts opts = { 0 };
	static uint8_t log[2048];
	const struct nvmf_disc_log_hdr *hdr = (const void *)log;
	const struct nvmf_disc_log_entry *e = (const void *)(log + sizeof(*hdr));
	struct nvme_sqe glp = { .opc = NVME_ADMIN_GET_LOG_PAGE };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	char err[ERNIC_ERRLEN];

	memset(th, 0, offsetof(struct th, pdu));
	th->tgt = tgt_create();
	CU_ASSERT_FATAL(th->tgt != NULL);
	CU_ASSERT_FATAL(ernic_tcp_port_create(th->tgt, &opts, &th->port) == 0);
	th->maxh2cdata = ERNIC_TCP_MAXH2CDATA;
	if (ernic_tcp_port_listen(th->port, "::1", "0", err, sizeof(err))) {
		fprintf(stderr, "SKIP: IPv6 loopback unavailable here (%s)\n", err);
		th->fd = -1;
		th_teardown(th);
		return;
	}
	CU_ASSERT_FATAL(ernic_tcp_port_start(th->port) == 0);
	th->fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(th->fd >= 0);
	set_timeout(th->fd);
	sin6.sin6_port = htons(ernic_tcp_port_number(th->port));
	CU_ASSERT_FATAL(connect(th->fd, (struct sockaddr *)&sin6, sizeof(sin6)) == 0);
	th->h2c_chunk = 4096;

	th_admin_up(th, 0, NVMF_DISC_NQN, 0, 0);
	glp.cdw10 = NVME_LOG_DISC | (uint32_t)(sizeof(log) / 4 - 1) << 16;
	CU_ASSERT(th_cmd(th, &glp, NULL, 0, log, sizeof(log), false, NULL) == 0);
	CU_ASSERT(hdr->numrec == 1);
	CU_ASSERT(e->trtype == NVMF_TRTYPE_TCP);
	CU_ASSERT(e->adrfam == NVMF_ADRFAM_IPV6);
	CU_ASSERT(!strncmp(e->traddr, "::1 ", 4));
	th_teardown(th);
}

/* Several I/O queues of one controller at once, each on its own connection and thread. */
#define MQ_QUEUES 4
#define MQ_ROUNDS 64

struct mq_worker {
	struct th *th;
	uint16_t qid;
	unsigned int failures;
};

static void *mq_worker_run(void *arg)
{
	struct mq_worker *w = arg;
	struct th *th = w->th;
	static _Thread_local uint8_t wbuf[16384], rbuf[16384];

	for (unsigned int i = 0; i < MQ_ROUNDS; i++) {
		/* Alternate in-capsule and R2T writes of 8 and 16 KiB, on LBAs no other queue touches. */
		uint32_t len = i & 1 ? 16384 : 8192;
		uint64_t slba = (uint64_t)(w->qid - 1) * 256 + (i % 16) * 4;

		fill(wbuf, len, w->qid * 1000 + i);
		if (th_rw(th, NVME_CMD_WRITE, slba, wbuf, len, !(i & 1)) ||
		    th_rw(th, NVME_CMD_READ, slba, rbuf, len, false) || memcmp(wbuf, rbuf, len))
			w->failures++;
	}
	return NULL;
}

static void test_io_queues_in_parallel(void)
{
	struct th *admin = th_setup(0);
	struct mq_worker w[MQ_QUEUES];
	pthread_t tid[MQ_QUEUES];
	struct ernic_counters c;

	th_admin_up(admin, 0, SUBNQN, 0, 0);
	for (int i = 0; i < MQ_QUEUES; i++) {
		struct th *th = malloc(sizeof(*th));

		CU_ASSERT_FATAL(th != NULL);
		memset(th, 0, offsetof(struct th, pdu));
		th->tgt = admin->tgt;
		th->port = admin->port;
		th->maxh2cdata = admin->maxh2cdata;
		CU_ASSERT_FATAL(th_attach(th) == 0);
		/* Half the queues with both digests: negotiation is per connection. */
		th_icreq(th, i & 1 ? NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE : 0);
		CU_ASSERT_FATAL(th_connect(th, SUBNQN, (uint16_t)(i + 1), admin->cntlid, 0, 0, true) == 0);
		w[i] = (struct mq_worker){ .th = th, .qid = (uint16_t)(i + 1) };
	}
	ernic_target_counters(admin->tgt, &c);
	CU_ASSERT(c.controllers == 1);
	CU_ASSERT(c.io_queues == MQ_QUEUES);
	for (int i = 0; i < MQ_QUEUES; i++)
		CU_ASSERT_FATAL(pthread_create(&tid[i], NULL, mq_worker_run, &w[i]) == 0);
	for (int i = 0; i < MQ_QUEUES; i++) {
		pthread_join(tid[i], NULL);
		CU_ASSERT(w[i].failures == 0);
		close(w[i].th->fd);
		free(w[i].th);
	}
	for (int i = 0; i < 50 && ernic_tcp_port_nr_conns(admin->port) > 1; i++)
		poll(NULL, 0, 100);
	ernic_target_counters(admin->tgt, &c);
	CU_ASSERT(c.io_queues == 0);
	CU_ASSERT(c.io_cmds[NVME_CMD_WRITE] == MQ_QUEUES * MQ_ROUNDS);
	CU_ASSERT(c.io_cmds[NVME_CMD_READ] == MQ_QUEUES * MQ_ROUNDS);
	th_teardown(admin);
}

/* ---------------------------------------------------------- resource limits */

/* Wait up to @ms for the controller to close @fd; true if it did. */
/*
 * How long a test waits for the port to close a connection it should close:
 * the port acts within a check period or two, but on a machine short of CPU
 * its threads may not run for seconds. Only a connection left open waits
 * this long.
 */
#define CLOSE_WAIT_MS 5000

/* Whether the port sends anything (or closes) within @ms. */
static bool readable_within(int fd, unsigned int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, (int)ms) != 0;
}

static bool closed_within(int fd, unsigned int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	uint8_t b;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return recv(fd, &b, 1, 0) == 0;
}

static void test_connection_over_max_connections_is_closed_others_keep_working(void)
{
	struct ernic_tcp_port_opts opts = { .max_connections = 2 };
	struct th *th = th_setup_opts(&opts, NULL);
	struct nvme_sqe ka = { .opc = NVME_ADMIN_KEEP_ALIVE };
	static uint8_t wbuf[8192], rbuf[8192];
	int admin_fd = th_io_queue_up(th, 0, 0);
	int sv[2];

	CU_ASSERT(ernic_tcp_port_nr_conns(th->port) == 2);
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CU_ASSERT(ernic_tcp_serve_fd(th->port, sv[1]) == -EBUSY);
	CU_ASSERT(closed_within(sv[0], CLOSE_WAIT_MS));
	close(sv[0]);
	CU_ASSERT(ernic_tcp_port_nr_conns(th->port) == 2);

	/* The two within the cap still run commands. */
	fill(wbuf, sizeof(wbuf), 9);
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 300, wbuf, sizeof(wbuf), false) == 0);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 300, rbuf, sizeof(rbuf), false) == 0);
	CU_ASSERT(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	th->fd = admin_fd;
	CU_ASSERT(th_cmd(th, &ka, NULL, 0, NULL, 0, false, NULL) == 0);
	th_teardown(th);
}

/*
 * At a full port, sockets that are no queue yet give their place to a
 * newcomer, oldest first (they would otherwise hold every place for the
 * idle timeout, again and again as they reopen, and keep allowed hosts
 * out); queues never do, so with every place a queue the newcomer is
 * closed (the test above).
 */
static void test_a_full_port_gives_the_place_of_its_oldest_connection_not_yet_a_queue(void)
{
	struct ernic_tcp_port_opts opts = { .max_connections = 2 };
	struct th *th = th_setup_opts(&opts, NULL);
	int oldest = th->fd, b[2], d[2];

	/* Two silent sockets fill the port. */
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b) == 0);
	CU_ASSERT(ernic_tcp_serve_fd(th->port, b[1]) == 0);
	/* A third is taken; the oldest of the two is closed within a check or two. */
	CU_ASSERT_FATAL(th_attach(th) == 0);
	CU_ASSERT(closed_within(oldest, CLOSE_WAIT_MS));
	close(oldest);
	/* The newcomer becomes a queue; the other silent one stays meanwhile. */
	th_icreq(th, 0);
	CU_ASSERT(th_connect_as(th, HOSTNQN, SUBNQN, 0, NULL) == 0);
	CU_ASSERT(!closed_within(b[0], 300));
	/* A fourth takes the silent one's place, not the queue's. */
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, d) == 0);
	CU_ASSERT(ernic_tcp_serve_fd(th->port, d[1]) == 0);
	CU_ASSERT(closed_within(b[0], CLOSE_WAIT_MS));
	close(b[0]);
	/* The evicted one leaves the count just after its socket closes. */
	for (int i = 0; i < 100 && ernic_tcp_port_nr_conns(th->port) != 2; i++)
		usleep(10 * 1000);
	CU_ASSERT(ernic_tcp_port_nr_conns(th->port) == 2);
	CU_ASSERT(!closed_within(th->fd, 300));
	close(d[0]);
	th_teardown(th);
}

/*
 * The place an evicted connection gave up is not won back by Connecting
 * before its next check: else each newcomer, then a Connect on the socket
 * it evicted, would take the port one over its limit, as often as a host
 * liked. The eviction is marked before ernic_tcp_serve_fd() returns, so the
 * Connect sent just after always finds it.
 */
static void test_an_evicted_connection_does_not_connect_its_way_past_the_limit(void)
{
	struct ernic_tcp_port_opts opts = { .max_connections = 1 };
	struct th *th = th_setup_opts(&opts, NULL);
	struct nvmf_connect_data data = { .cntlid = NVMF_CNTLID_DYNAMIC };
	struct nvmf_connect_cmd cmd = { .opc = NVME_FABRICS_COMMAND, .fctype = NVMF_FCTYPE_CONNECT, .sqsize = 31 };

	snprintf(data.subnqn, sizeof(data.subnqn), "%s", SUBNQN);
	snprintf(data.hostnqn, sizeof(data.hostnqn), "%s", HOSTNQN);
	for (int i = 0; i < 5; i++) {
		int evicted = th->fd, newcomer;

		th_icreq(th, 0);
		CU_ASSERT_FATAL(th_attach(th) == 0);
		newcomer = th->fd;
		/* Closed unanswered: no CapsuleResp comes first. */
		th->fd = evicted;
		th_cmd_send(th, (struct nvme_sqe *)&cmd, &data, sizeof(data), 0, true);
		CU_ASSERT(closed_within(evicted, CLOSE_WAIT_MS));
		close(evicted);
		th->fd = newcomer;
	}
	for (int i = 0; i < 100 && ernic_tcp_port_nr_conns(th->port) != 1; i++)
		usleep(10 * 1000);
	CU_ASSERT(ernic_tcp_port_nr_conns(th->port) == 1);
	/* The last newcomer, never evicted, becomes a queue. */
	th_icreq(th, 0);
	CU_ASSERT(th_connect_as(th, HOSTNQN, SUBNQN, 0, NULL) == 0);
	th_teardown(th);
}

/*
 * A burst of newcomers, faster than the connections they evict close: at
 * most as many evicted as places, so the port never holds more than twice
 * its limit (each evicted one a thread and its buffers until it closes).
 */
static void test_a_burst_of_newcomers_evicts_at_most_as_many_as_there_are_places(void)
{
	struct ernic_tcp_port_opts opts = { .max_connections = 2 };
	struct th *th = th_setup_opts(&opts, NULL);
	unsigned int most = 0, refused = 0;
	int fds[40];

	for (int i = 0; i < 40; i++) {
		int sv[2];

		CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
		fds[i] = sv[0];
		if (ernic_tcp_serve_fd(th->port, sv[1]) == -EBUSY)
			refused++;
		most = MAX(most, ernic_tcp_port_nr_conns(th->port));
	}
	CU_ASSERT(most <= 2 * opts.max_connections);
	CU_ASSERT(refused > 0);
	for (int i = 0; i < 40; i++)
		close(fds[i]);
	th_teardown(th);
}

/*
 * Discovery is open to any host and a connected queue is never evicted: at
 * most half a port's places hold discovery queues, so kept-alive discovery
 * controllers of a host that may not reach the subsystem leave the others
 * to hosts that may. One more is Controller Busy, and is let in once a
 * discovery queue has closed.
 */
static void test_discovery_queues_hold_at_most_half_the_places(void)
{
	static const char *const allow[] = { HOSTNQN, NULL };
	static const char stranger[] = "nqn.2014-08.org.nvmexpress:uuid:7e1e1c8a-0b0d-4c55-9a4b-3f1f5a0c0bad";
	struct ernic_tcp_port_opts opts = { .max_connections = 4 };
	struct th *th = th_setup_opts(&opts, allow);
	static uint8_t rbuf[4096];
	int disc[3], admin_fd;

	for (int i = 0; i < 3; i++) {
		if (i)
			CU_ASSERT_FATAL(th_attach(th) == 0);
		disc[i] = th->fd;
		th_icreq(th, 0);
		CU_ASSERT(th_connect_as(th, stranger, NVMF_DISC_NQN, 0, NULL) ==
			  (i < 2 ? NVME_SC_SUCCESS : NVME_SC_CONNECT_CTRL_BUSY));
	}
	/* The allowed host's admin queue takes the last place, its I/O queue the refused one's. */
	CU_ASSERT_FATAL(th_attach(th) == 0);
	admin_fd = th_io_queue_up(th, 0, 0);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 0, rbuf, sizeof(rbuf), false) == 0);
	CU_ASSERT(closed_within(disc[2], CLOSE_WAIT_MS));
	close(disc[2]);
	close(th->fd);

	/* A discovery queue closed gives its place back. */
	close(disc[0]);
	for (int i = 0; i < 100 && ernic_tcp_port_nr_conns(th->port) != 2; i++)
		usleep(10 * 1000);
	CU_ASSERT(ernic_tcp_port_nr_conns(th->port) == 2);
	CU_ASSERT_FATAL(th_attach(th) == 0);
	th_icreq(th, 0);
	CU_ASSERT(th_connect_as(th, stranger, NVMF_DISC_NQN, 0, NULL) == NVME_SC_SUCCESS);
	close(disc[1]);
	close(admin_fd);
	th_teardown(th);
}

#define SHORT_IDLE_MS 200

static uint16_t th_rsp_status(struct th *th)
{
	return nvme_cqe_status(&((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe);
}


static void test_idle_socket_that_never_sends_is_closed(void)
{
	struct ernic_tcp_port_opts opts = { .idle_timeout_ms = SHORT_IDLE_MS };
	/* Before the connection exists: its idle clock starts when the port takes it. */
	uint64_t start = ernic_now_ns();
	struct th *th = th_setup_opts(&opts, NULL);

	CU_ASSERT(closed_within(th->fd, CLOSE_WAIT_MS));
	CU_ASSERT(ernic_now_ns() - start >= SHORT_IDLE_MS * 1000000ull);
	th_teardown(th);
}

static void test_busy_socket_that_never_connects_is_closed(void)
{
	struct ernic_tcp_port_opts opts = { .idle_timeout_ms = SHORT_IDLE_MS };
	struct th *th = th_setup_opts(&opts, NULL);
	struct nvme_tcp_cmd_pdu pdu = { .hdr = { .type = NVME_TCP_CMD, .hlen = 72, .plen = 72 } };
	struct nvmf_property_cmd *get = (struct nvmf_property_cmd *)&pdu.cmd;

	/* Active but never connected: a Property Get every 50 ms does not keep it open. */
	th_icreq(th, 0);
	get->opc = NVME_FABRICS_COMMAND;
	get->fctype = NVMF_FCTYPE_PROPERTY_GET;
	for (int i = 0; i < 20; i++) {
		poll(NULL, 0, 50);
		if (write_all(th->fd, &pdu, sizeof(pdu)) || th_recv_pdu(th) != NVME_TCP_RSP)
			break;
		CU_ASSERT(th_rsp_status(th) == NVME_SC_CMD_SEQ_ERROR);
	}
	CU_ASSERT(closed_within(th->fd, CLOSE_WAIT_MS));
	th_teardown(th);
}

static void test_half_pdu_header_on_connected_queue_is_closed(void)
{
	struct ernic_tcp_port_opts opts = { .idle_timeout_ms = SHORT_IDLE_MS };
	struct th *th = th_setup_opts(&opts, NULL);
	struct nvme_tcp_cmd_pdu cmd = { .hdr = { .type = NVME_TCP_CMD, .hlen = 72, .plen = 72 } };

	th_admin_up(th, 0, SUBNQN, 0, 0);
	CU_ASSERT(write_all(th->fd, &cmd, sizeof(cmd) / 2) == 0);
	CU_ASSERT(closed_within(th->fd, CLOSE_WAIT_MS));
	th_teardown(th);
}

static void test_half_in_capsule_data_on_connected_queue_is_closed(void)
{
	struct ernic_tcp_port_opts opts = { .idle_timeout_ms = SHORT_IDLE_MS };
	struct th *th = th_setup_opts(&opts, NULL);
	struct nvme_tcp_cmd_pdu cmd = { .hdr = { .type = NVME_TCP_CMD, .hlen = 72, .pdo = 72, .plen = 72 + 4096 } };
	static uint8_t half[2048];

	th_admin_up(th, 0, SUBNQN, 0, 0);
	cmd.cmd.opc = NVME_ADMIN_SET_FEATURES;
	cmd.cmd.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	cmd.cmd.dptr.id = SGL_ICD;
	cmd.cmd.dptr.unkeyed.length = 4096;
	CU_ASSERT(write_all(th->fd, &cmd, sizeof(cmd)) == 0);
	CU_ASSERT(write_all(th->fd, half, sizeof(half)) == 0);
	CU_ASSERT(closed_within(th->fd, CLOSE_WAIT_MS));
	th_teardown(th);
}

static void test_connected_idle_admin_queue_stays_open(void)
{
	struct ernic_tcp_port_opts opts = { .idle_timeout_ms = SHORT_IDLE_MS };
	struct th *th = th_setup_opts(&opts, NULL);
	uint64_t csts;

	th_admin_up(th, 0, SUBNQN, 0, 0);
	/* Idle between PDUs for three timeouts: keep-alive (off here) is what judges that. */
	CU_ASSERT(!closed_within(th->fd, 3 * SHORT_IDLE_MS));
	set_timeout(th->fd);
	CU_ASSERT(th_prop_get(th, NVME_REG_CSTS, false, &csts) == 0);
	CU_ASSERT(csts & NVME_CSTS_RDY);
	th_teardown(th);
}

/* Send a Write capsule whose data the controller would solicit; return the next PDU's type. */
static int th_write_capsule(struct th *th, uint32_t nsid, uint64_t slba, uint32_t nlb, uint32_t sgl_len)
{
	struct nvme_tcp_cmd_pdu cmd = { .hdr.type = NVME_TCP_CMD };

	cmd.cmd.opc = NVME_CMD_WRITE;
	cmd.cmd.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	cmd.cmd.cid = ++th->cid;
	cmd.cmd.nsid = nsid;
	cmd.cmd.cdw10 = (uint32_t)slba;
	cmd.cmd.cdw11 = (uint32_t)(slba >> 32);
	cmd.cmd.cdw12 = nlb - 1;
	cmd.cmd.dptr.unkeyed.length = sgl_len;
	cmd.cmd.dptr.id = SGL_TRANSPORT;
	th_send_pdu(th, &cmd, sizeof(cmd), NULL, 0);
	return th_recv_pdu(th);
}

static void test_write_before_connect_is_sequence_error_without_r2t(void)
{
	struct th *th = th_setup(0);

	th_icreq(th, 0);
	CU_ASSERT_FATAL(th_write_capsule(th, 1, 0, ERNIC_MAX_XFER / BS, ERNIC_MAX_XFER) == NVME_TCP_RSP);
	CU_ASSERT(th_rsp_status(th) == NVME_SC_CMD_SEQ_ERROR);
	/* The queue is still usable: Connect comes next. */
	CU_ASSERT(th_connect(th, SUBNQN, 0, NVMF_CNTLID_DYNAMIC, 0, 0, false) == 0);
	th_teardown(th);
}

/*
 * A write's data solicited by R2T, the namespace removed and another added
 * at its NSID before the data comes: the write is refused (Invalid
 * Namespace), and the new namespace's blocks stay as they were. Its data
 * went to the new namespace, with success, before the command remembered
 * which namespace it was checked against.
 */
static void test_a_write_whose_namespace_was_replaced_before_its_data_came_is_refused(void)
{
	static uint8_t data[2 * BS], back[2 * BS], zeros[2 * BS];
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0);
	struct nvme_tcp_r2t_pdu r2t;
	struct nvme_tcp_data_pdu h2c = { .hdr.type = NVME_TCP_H2C_DATA, .hdr.flags = NVME_TCP_F_DATA_LAST };
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN];

	/* 8 KiB: below the size a RAM namespace takes in place, so it waits in the slot's buffer. */
	CU_ASSERT_FATAL(th_write_capsule(th, 1, 100, 2, sizeof(data)) == NVME_TCP_R2T);
	r2t = *(struct nvme_tcp_r2t_pdu *)th->pdu;
	CU_ASSERT_FATAL(ernic_target_remove_ns(th->tgt, 1, err, sizeof(err)) == 0);
	ernic_backend_cfg_init(&cfg);
	cfg.size = NS_SIZE;
	cfg.bs = BS;
	CU_ASSERT_FATAL(ernic_target_add_ns(th->tgt, &cfg, err, sizeof(err)) == 0);
	CU_ASSERT_FATAL(ernic_target_nr_ns(th->tgt) == 1);

	memset(data, 0xD7, sizeof(data));
	h2c.cccid = r2t.cccid;
	h2c.ttag = r2t.ttag;
	h2c.datal = sizeof(data);
	th_send_pdu(th, &h2c, sizeof(h2c), data, sizeof(data));
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
	CU_ASSERT(th_rsp_status(th) == NVME_SC_INVALID_NS);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 100, back, sizeof(back), false) == 0);
	CU_ASSERT(!memcmp(back, zeros, sizeof(back)));
	close(admin_fd);
	th_teardown(th);
}

static void test_invalid_write_completes_without_r2t(void)
{
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0);
	uint64_t nlb = NS_SIZE / BS;

	/* Past the last LBA. */
	CU_ASSERT_FATAL(th_write_capsule(th, 1, nlb - 1, 2, 2 * BS) == NVME_TCP_RSP);
	CU_ASSERT(th_rsp_status(th) == NVME_SC_LBA_RANGE);
	/* No such namespace. */
	CU_ASSERT_FATAL(th_write_capsule(th, 9, 0, 1, BS) == NVME_TCP_RSP);
	CU_ASSERT(th_rsp_status(th) == NVME_SC_INVALID_NS);
	/* An SGL that does not match the blocks. */
	CU_ASSERT_FATAL(th_write_capsule(th, 1, 0, 1, 2 * BS) == NVME_TCP_RSP);
	CU_ASSERT(th_rsp_status(th) == NVME_SC_SGL_INVALID_DATA_LEN);
	/* More than MDTS: Invalid Field (Base 2.0 Figure 275). */
	CU_ASSERT_FATAL(th_write_capsule(th, 1, 0, 2 * ERNIC_MAX_XFER / BS, 2 * ERNIC_MAX_XFER) == NVME_TCP_RSP);
	CU_ASSERT(th_rsp_status(th) == NVME_SC_INVALID_FIELD);
	/* A valid one still gets its R2T. */
	CU_ASSERT(th_write_capsule(th, 1, nlb - 2, 2, 2 * BS) == NVME_TCP_R2T);
	close(admin_fd);
	th_teardown(th);
}

/* The port's slot buffers once under @below, waiting for the put after the response's send (at most 1 s). */
static uint64_t buf_bytes_settled(struct th *th, uint64_t below)
{
	uint64_t n = ernic_tcp_port_buf_bytes(th->port);

	for (int i = 0; i < 100 && n >= below; i++) {
		usleep(10 * 1000);
		n = ernic_tcp_port_buf_bytes(th->port);
	}
	return n;
}

/*
 * A slot keeps its data buffer for the next command up to the default MDTS
 * transfer; one grown past it (mdts=0) goes with its command. Each slot kept
 * its largest before, so a host could hold queue depth times its largest
 * transfer (under mdts=0, gigabytes) on a queue it then left idle. With data
 * digest every transfer goes through a slot's buffer.
 */
static void test_a_slot_buffer_past_the_default_mdts_goes_with_its_command(void)
{
	const uint32_t len = 1u << 20;
	uint8_t *wbuf = malloc(len), *rbuf = calloc(1, len);
	struct th *th;
	int admin_fd;

	CU_ASSERT_FATAL(wbuf && rbuf);
	g_mdts = 0;
	th = th_setup(0);
	admin_fd = th_io_queue_up(th, NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE, 0);
	fill(wbuf, len, 7);
	th->h2c_chunk = 64 * 1024;
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 0, wbuf, len, false) == 0);
	CU_ASSERT(buf_bytes_settled(th, len) < len);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 0, rbuf, len, false) == 0);
	CU_ASSERT(!memcmp(wbuf, rbuf, len));
	CU_ASSERT(buf_bytes_settled(th, len) < len);
	/* A transfer within the default MDTS keeps its buffer: the count moves by nothing more. */
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 0, wbuf, ERNIC_MAX_XFER, false) == 0);
	CU_ASSERT(ernic_tcp_port_buf_bytes(th->port) >= ERNIC_MAX_XFER);
	CU_ASSERT(ernic_tcp_port_buf_bytes(th->port) < len);
	close(admin_fd);
	th_teardown(th);
	g_mdts = ERNIC_MDTS;
	free(wbuf);
	free(rbuf);
}

/* Nothing arrives on @fd for @ms milliseconds. */
static bool quiet_for(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 0;
}

/* Answer the R2T in th->pdu with @len bytes of @data, in th->h2c_chunk pieces. */
static void th_answer_r2t(struct th *th, const uint8_t *data)
{
	const struct nvme_tcp_r2t_pdu r2t = *(const struct nvme_tcp_r2t_pdu *)th->pdu;

	for (uint32_t off = r2t.r2to; off < r2t.r2to + r2t.r2tl; off += th->h2c_chunk) {
		struct nvme_tcp_data_pdu pdu = { .hdr.type = NVME_TCP_H2C_DATA, .cccid = r2t.cccid, .ttag = r2t.ttag };

		pdu.datao = off;
		pdu.datal = MIN(th->h2c_chunk, r2t.r2to + r2t.r2tl - off);
		if (off + pdu.datal == r2t.r2to + r2t.r2tl)
			pdu.hdr.flags = NVME_TCP_F_DATA_LAST;
		th_send_pdu(th, &pdu, sizeof(pdu), data + off, pdu.datal);
	}
}

/*
 * A file namespace (no data in place) behind a port whose budget holds two
 * MDTS buffers, with two writes' R2Ts open: they hold all of it.
 */
static struct th *th_budget_full(uint8_t *wbuf, struct nvme_sqe *w, char *path, int *admin_fd)
{
	struct ernic_tcp_port_opts opts = { .buf_budget = 2 * ERNIC_MAX_XFER };
	struct th *th;
	int fd = mkstemp(path);

	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	g_ns_file = path;
	th = th_setup_opts(&opts, NULL);
	g_ns_file = NULL;
	*admin_fd = th_io_queue_up(th, 0, 0);
	fill(wbuf, 3 * ERNIC_MAX_XFER, 21);
	for (int i = 0; i < 2; i++) {
		w[i] = th_rw_sqe(NVME_CMD_WRITE, (uint64_t)i * ERNIC_MAX_XFER / BS, ERNIC_MAX_XFER);
		th_cmd_send(th, &w[i], NULL, ERNIC_MAX_XFER, 0, false);
		CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_R2T);
		CU_ASSERT(((struct nvme_tcp_r2t_pdu *)th->pdu)->cccid == w[i].cid);
		memcpy(&th->r2t_held[i], th->pdu, sizeof(th->r2t_held[i]));
	}
	return th;
}

/* Answer held R2T @i; its write completes with success. */
static void th_budget_release(struct th *th, const uint8_t *wbuf, int i)
{
	memcpy(th->pdu, &th->r2t_held[i], sizeof(th->r2t_held[i]));
	th_answer_r2t(th, wbuf);
}

static void th_budget_done(struct th *th, char *path, int admin_fd)
{
	struct ernic_tcp_buf_stats bs;

	/* Idle, the slots keep buffers only up to half the budget. */
	ernic_tcp_port_buf_stats(th->port, &bs);
	CU_ASSERT(bs.grown <= bs.budget / 2);
	close(admin_fd);
	th_teardown(th);
	unlink(path);
}

static void test_a_write_past_the_buffer_budget_gets_its_r2t_once_another_gives_its_buffer_back(void)
{
	uint8_t *wbuf = malloc(3 * ERNIC_MAX_XFER), *rbuf = calloc(1, 3 * ERNIC_MAX_XFER);
	char path[] = "/tmp/ernic-tcp-ut-XXXXXX";
	struct ernic_tcp_buf_stats bs;
	struct nvme_sqe w[3];
	bool rsp0 = false, r2t2 = false;
	int admin_fd;
	struct th *th;

	CU_ASSERT_FATAL(wbuf && rbuf);
	th = th_budget_full(wbuf, w, path, &admin_fd);
	w[2] = th_rw_sqe(NVME_CMD_WRITE, 2 * ERNIC_MAX_XFER / BS, ERNIC_MAX_XFER);
	th_cmd_send(th, &w[2], NULL, ERNIC_MAX_XFER, 0, false);
	/* No R2T for the third while the budget is held. */
	CU_ASSERT(quiet_for(th->fd, 300));
	ernic_tcp_port_buf_stats(th->port, &bs);
	CU_ASSERT_EQUAL(bs.waits, 1);
	CU_ASSERT_EQUAL(bs.grown, bs.budget);
	/* The first write's data: it completes, its buffer goes back, the third is solicited. */
	th_budget_release(th, wbuf, 0);
	for (int n = 0; n < 2; n++) {
		int type = th_recv_pdu(th);

		if (type == NVME_TCP_RSP) {
			CU_ASSERT(((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe.cid == w[0].cid);
			CU_ASSERT(th_rsp_status(th) == 0);
			rsp0 = true;
		} else {
			CU_ASSERT_FATAL(type == NVME_TCP_R2T);
			CU_ASSERT(((struct nvme_tcp_r2t_pdu *)th->pdu)->cccid == w[2].cid);
			th_answer_r2t(th, wbuf + 2 * ERNIC_MAX_XFER);
			r2t2 = true;
		}
	}
	CU_ASSERT(rsp0 && r2t2);
	th_budget_release(th, wbuf + ERNIC_MAX_XFER, 1);
	for (int n = 0; n < 2; n++) {
		CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
		CU_ASSERT(th_rsp_status(th) == 0);
	}
	/* Every block as written. */
	for (int i = 0; i < 3; i++)
		CU_ASSERT(th_rw(th, NVME_CMD_READ, (uint64_t)i * ERNIC_MAX_XFER / BS, rbuf + i * ERNIC_MAX_XFER,
				ERNIC_MAX_XFER, false) == 0);
	CU_ASSERT(!memcmp(wbuf, rbuf, 3 * ERNIC_MAX_XFER));
	th_budget_done(th, path, admin_fd);
	free(wbuf);
	free(rbuf);
}

static void test_a_read_past_the_buffer_budget_executes_once_a_write_gives_its_buffer_back(void)
{
	uint8_t *wbuf = malloc(3 * ERNIC_MAX_XFER), *rbuf = calloc(1, ERNIC_MAX_XFER);
	char path[] = "/tmp/ernic-tcp-ut-XXXXXX";
	struct ernic_tcp_buf_stats bs;
	struct nvme_sqe w[2], r;
	uint32_t got = 0;
	int admin_fd;
	struct th *th;

	CU_ASSERT_FATAL(wbuf && rbuf);
	th = th_budget_full(wbuf, w, path, &admin_fd);
	r = th_rw_sqe(NVME_CMD_READ, 0, ERNIC_MAX_XFER);
	th_cmd_send(th, &r, NULL, 0, ERNIC_MAX_XFER, false);
	CU_ASSERT(quiet_for(th->fd, 300));
	ernic_tcp_port_buf_stats(th->port, &bs);
	CU_ASSERT_EQUAL(bs.waits, 1);
	/* The write to the read's blocks completes first; the read then sees its data. */
	th_budget_release(th, wbuf, 0);
	while (got < ERNIC_MAX_XFER) {
		int type = th_recv_pdu(th);
		const struct nvme_tcp_data_pdu *data = (const struct nvme_tcp_data_pdu *)th->pdu;

		if (type == NVME_TCP_RSP) {
			CU_ASSERT(((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe.cid == w[0].cid);
			continue;
		}
		CU_ASSERT_FATAL(type == NVME_TCP_C2H_DATA);
		CU_ASSERT_FATAL(data->cccid == r.cid && data->datao == got);
		memcpy(rbuf + got, th->pdu + data->hdr.pdo, data->datal);
		got += data->datal;
	}
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
	CU_ASSERT(((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe.cid == r.cid);
	CU_ASSERT(th_rsp_status(th) == 0);
	CU_ASSERT(!memcmp(wbuf, rbuf, ERNIC_MAX_XFER));
	th_budget_release(th, wbuf + ERNIC_MAX_XFER, 1);
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
	CU_ASSERT(th_rsp_status(th) == 0);
	th_budget_done(th, path, admin_fd);
	free(wbuf);
	free(rbuf);
}

/* In-capsule data is on its way already: with no room in the budget it is gathered in the receive buffer. */
static void test_an_in_capsule_write_with_the_buffer_budget_held_still_completes(void)
{
	uint8_t *wbuf = malloc(3 * ERNIC_MAX_XFER), *rbuf = calloc(1, ERNIC_MAX_XFER);
	char path[] = "/tmp/ernic-tcp-ut-XXXXXX";
	struct ernic_tcp_buf_stats bs;
	struct nvme_sqe w[2];
	int admin_fd;
	struct th *th;

	CU_ASSERT_FATAL(wbuf && rbuf);
	th = th_budget_full(wbuf, w, path, &admin_fd);
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 2 * ERNIC_MAX_XFER / BS, wbuf + 2 * ERNIC_MAX_XFER, ERNIC_MAX_XFER, true) ==
		  0);
	ernic_tcp_port_buf_stats(th->port, &bs);
	CU_ASSERT_EQUAL(bs.waits, 0);
	CU_ASSERT_EQUAL(bs.grown, bs.budget);
	for (int i = 0; i < 2; i++) {
		th_budget_release(th, wbuf + i * ERNIC_MAX_XFER, i);
		CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
		CU_ASSERT(th_rsp_status(th) == 0);
	}
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 2 * ERNIC_MAX_XFER / BS, rbuf, ERNIC_MAX_XFER, false) == 0);
	CU_ASSERT(!memcmp(wbuf + 2 * ERNIC_MAX_XFER, rbuf, ERNIC_MAX_XFER));
	th_budget_done(th, path, admin_fd);
	free(wbuf);
	free(rbuf);
}

/* Under mdts=0 a transfer may need more than half the budget, which kept buffers may never leave free. */
static void test_a_transfer_over_half_the_buffer_budget_is_internal_error_not_a_wait(void)
{
	struct ernic_tcp_port_opts opts = { .buf_budget = 2 * ERNIC_MAX_XFER };
	char path[] = "/tmp/ernic-tcp-ut-XXXXXX";
	static uint8_t wbuf[ERNIC_MAX_XFER];
	struct ernic_tcp_buf_stats bs;
	int fd = mkstemp(path), admin_fd;
	struct th *th;

	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	g_ns_file = path;
	g_mdts = 0;
	th = th_setup_opts(&opts, NULL);
	g_ns_file = NULL;
	g_mdts = ERNIC_MDTS;
	admin_fd = th_io_queue_up(th, 0, 0);
	CU_ASSERT_FATAL(th_write_capsule(th, 1, 0, 2 * ERNIC_MAX_XFER / BS, 2 * ERNIC_MAX_XFER) == NVME_TCP_RSP);
	CU_ASSERT(th_rsp_status(th) == NVME_SC_INTERNAL);
	ernic_tcp_port_buf_stats(th->port, &bs);
	CU_ASSERT_EQUAL(bs.waits, 0);
	/* Half the budget is allowed. */
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 0, wbuf, ERNIC_MAX_XFER, false) == 0);
	close(admin_fd);
	th_teardown(th);
	unlink(path);
}

/*
 * mdts=0 is no limit over TCP: a 4 MiB write and read each go in one command
 * (nvme-cli passthrough sends such), the slot's buffer growing to it; mdts=1
 * refuses 12 KiB without an R2T.
 */
static void test_mdts_0_moves_4_mib_in_one_command_and_mdts_1_refuses_12_kib(void)
{
	const uint32_t len = 4u << 20;
	uint8_t *wbuf = malloc(len), *rbuf = calloc(1, len);
	struct th *th;
	int admin_fd;

	CU_ASSERT_FATAL(wbuf && rbuf);
	g_mdts = 0;
	th = th_setup(0);
	admin_fd = th_io_queue_up(th, 0, 0);
	fill(wbuf, len, 6);
	th->h2c_chunk = 64 * 1024;
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 0, wbuf, len, false) == 0);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 0, rbuf, len, false) == 0);
	CU_ASSERT(!memcmp(wbuf, rbuf, len));
	close(admin_fd);
	th_teardown(th);

	g_mdts = 1;
	th = th_setup(0);
	admin_fd = th_io_queue_up(th, 0, 0);
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 0, wbuf, 8192, false) == 0);
	CU_ASSERT_FATAL(th_write_capsule(th, 1, 0, 3, 3 * BS) == NVME_TCP_RSP);
	CU_ASSERT(th_rsp_status(th) == NVME_SC_INVALID_FIELD);
	close(admin_fd);
	th_teardown(th);
	g_mdts = ERNIC_MDTS;
	free(wbuf);
	free(rbuf);
}

/*
 * Under MDTS 0 one Get Log Page may ask for 4 GiB of a 512-byte page: the
 * page, then zeros the target sends from no buffer of the command's
 * (tcp_map_c2h_zero_tail()). 256 MiB of the SMART log here, read PDU by PDU:
 * a slot buffer grown to 256 MiB and zeroed would raise this process's peak
 * resident size (the target runs in it) by as much.
 */
static void test_a_log_page_read_far_past_its_end_costs_the_target_no_buffer(void)
{
	const uint32_t len = 256u << 20, numd = len / 4 - 1;
	static uint8_t page[512];
	struct nvme_sqe sqe = { .opc = NVME_ADMIN_GET_LOG_PAGE, .nsid = 0xFFFFFFFF };
	struct rusage before, after;
	uint64_t rcvd = 0, tail_nonzero = 0;
	bool head_same = true, last = false;
	struct th *th;

	g_mdts = 0;
	th = th_setup(0);
	th_admin_up(th, 0, SUBNQN, 0, 0);
	sqe.cdw10 = NVME_LOG_SMART | (uint32_t)(sizeof(page) / 4 - 1) << 16;
	CU_ASSERT_FATAL(th_cmd(th, &sqe, NULL, 0, page, sizeof(page), false, NULL) == 0);

	CU_ASSERT_FATAL(getrusage(RUSAGE_SELF, &before) == 0);
	sqe.cdw10 = NVME_LOG_SMART | (numd & 0xFFFF) << 16;
	sqe.cdw11 = numd >> 16;
	th_cmd_send(th, &sqe, NULL, 0, len, false);
	while (!last) {
		const struct nvme_tcp_data_pdu *data = (const struct nvme_tcp_data_pdu *)th->pdu;
		const uint8_t *p;

		CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_C2H_DATA);
		CU_ASSERT_FATAL(data->datao == rcvd && data->datal <= len - rcvd);
		p = th->pdu + data->hdr.pdo;
		for (uint32_t i = 0; i < data->datal; i++) {
			uint64_t at = rcvd + i;

			if (at < sizeof(page))
				head_same = head_same && p[i] == page[at];
			else
				tail_nonzero += p[i] != 0;
		}
		rcvd += data->datal;
		last = data->hdr.flags & NVME_TCP_F_DATA_LAST;
	}
	CU_ASSERT(rcvd == len);
	CU_ASSERT(head_same);
	CU_ASSERT(tail_nonzero == 0);
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
	CU_ASSERT(th_rsp_status(th) == 0);
	CU_ASSERT_FATAL(getrusage(RUSAGE_SELF, &after) == 0);
	/* ru_maxrss is in KiB: well under the 256 MiB a buffer of the command's would have taken. */
	CU_ASSERT(after.ru_maxrss - before.ru_maxrss < 32 * 1024);
	th_teardown(th);
	g_mdts = ERNIC_MDTS;
}

/*
 * The same from an offset inside the page, with digests on and MAXH2CDATA
 * 16 KiB: the page's last 256 bytes, then 99,744 zeros (C2HData of 64 KiB at
 * most), every digest checked by th_recv_pdu().
 */
static void test_a_log_page_read_past_its_end_from_an_offset_with_digests(void)
{
	const uint32_t lpo = 256, len = 100000;
	static uint8_t page[512], in[100000], zeros[100000];
	struct nvme_sqe sqe = { .opc = NVME_ADMIN_GET_LOG_PAGE, .nsid = 0xFFFFFFFF };
	struct th *th = th_setup(16384);

	th_admin_up(th, NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE, SUBNQN, 0, 0);
	sqe.cdw10 = NVME_LOG_SMART | (uint32_t)(sizeof(page) / 4 - 1) << 16;
	CU_ASSERT_FATAL(th_cmd(th, &sqe, NULL, 0, page, sizeof(page), false, NULL) == 0);
	sqe.cdw10 = NVME_LOG_SMART | (len / 4 - 1) << 16;
	sqe.cdw12 = lpo;
	memset(in, 0xA5, sizeof(in));
	CU_ASSERT(th_cmd(th, &sqe, NULL, 0, in, len, false, NULL) == 0);
	CU_ASSERT(!memcmp(in, page + lpo, sizeof(page) - lpo));
	CU_ASSERT(!memcmp(in + sizeof(page) - lpo, zeros, len - (sizeof(page) - lpo)));
	th_teardown(th);
}

/* ---------------------------------------------------------------- logging */

/* A port logging to a temporary file (*@log), and a connection to it past ICReq. */
static struct th *th_setup_logged(FILE **log)
{
	struct ernic_tcp_port_opts opts = { .log = tmpfile() };
	struct th *th;

	CU_ASSERT_FATAL(opts.log != NULL);
	*log = opts.log;
	th = th_setup_opts(&opts, NULL);
	th_icreq(th, 0);
	return th;
}

static void test_host_nqn_in_log_lines_is_escaped(void)
{
	FILE *log;
	struct th *th = th_setup_logged(&log);
	char *text;

	CU_ASSERT(th_connect_as(th, "nqn.2014-08.org.example:\n\x1b[31mred\\", SUBNQN, 0, NULL) == 0);
	th_teardown(th);
	text = ut_file_text(log);
	/* A connect line and a disconnect line, nothing unprintable in either. */
	CU_ASSERT(ut_count_lines(text, NULL) == 2);
	CU_ASSERT(ut_count_lines(text, "nqn.2014-08.org.example:\\x0a\\x1b[31mred\\x5c ") == 2);
	for (const char *c = text; *c; c++)
		CU_ASSERT_FATAL(*c == '\n' || (*c >= 0x20 && *c < 0x7f));
	free(text);
	fclose(log);
}

/*
 * A second Connect on a connected queue is refused before its data is
 * looked at, and the queue's log lines keep naming its own host (over RDMA
 * the refused Connect's NQN once replaced it).
 */
static void test_a_second_connect_naming_another_host_does_not_rename_the_queue(void)
{
	FILE *log;
	struct th *th = th_setup_logged(&log);
	char *text;

	CU_ASSERT(th_connect_as(th, HOSTNQN, SUBNQN, 0, NULL) == 0);
	CU_ASSERT(th_connect_as(th, "nqn.2014-08.org.example:someone-else", SUBNQN, 0, NULL) == NVME_SC_CMD_SEQ_ERROR);
	th_teardown(th);
	text = ut_file_text(log);
	/* connect, connect refused, disconnect of the first host */
	CU_ASSERT(ut_count_lines(text, NULL) == 3);
	CU_ASSERT(ut_count_lines(text, "connect refused host ? qid 0 peer local: CMD_SEQ_ERROR") == 1);
	CU_ASSERT(ut_count_lines(text, "disconnect host " HOSTNQN " qid 0") == 1);
	free(text);
	fclose(log);
}

#define FLOOD_CONNECTS 1000

static void test_refused_connects_are_rate_limited_with_a_summary(void)
{
	FILE *log = tmpfile();
	struct ernic_tcp_port_opts opts = { .log = log };
	unsigned int refused, suppressed = 0, summaries = 0;
	uint64_t start, secs;
	struct th *th;
	char *text;

	CU_ASSERT_FATAL(log != NULL);
	th = th_setup_opts(&opts, NULL);
	th_icreq(th, 0);
	start = ernic_now_ns();
	for (int i = 0; i < FLOOD_CONNECTS; i++)
		CU_ASSERT(th_connect_as(th, HOSTNQN, "nqn.2026-11.io.ernic:nope", 0, NULL) ==
			  NVME_SC_CONNECT_INVALID_PARAM);
	secs = (ernic_now_ns() - start) / 1000000000ull + 1;
	th_teardown(th);
	text = ut_file_text(log);
	refused = ut_count_lines(text, "connect refused host");
	CU_ASSERT(refused >= 1);
	CU_ASSERT(refused <= ERNIC_TCP_LOG_BURST * secs);
	for (const char *l = strstr(text, "suppressed "); l; l = strstr(l + 1, "suppressed ")) {
		unsigned int k;

		CU_ASSERT_FATAL(sscanf(l, "suppressed %u similar lines", &k) == 1);
		suppressed += k;
		summaries++;
	}
	CU_ASSERT(summaries >= 1);
	CU_ASSERT(refused + suppressed == FLOOD_CONNECTS);
	free(text);
	fclose(log);
}

static void test_empty_host_nqn_accepted_when_any_host_is(void)
{
	struct th *th = th_setup(0);

	/* As SPDK's target: its initiator sends no host NQN unless told to. */
	th_icreq(th, 0);
	CU_ASSERT(th_connect_as(th, "", SUBNQN, 0, NULL) == 0);
	th_teardown(th);
}

static void test_empty_host_nqn_refused_with_an_allow_list(void)
{
	static const char *const allow[] = { HOSTNQN, NULL };
	struct ernic_tcp_port_opts opts = { 0 };
	struct th *th = th_setup_opts(&opts, allow);
	struct nvme_cqe cqe;

	th_icreq(th, 0);
	CU_ASSERT(th_connect_as(th, "", SUBNQN, 0, &cqe) == NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT(cqe.dw0 == NVMF_CONNECT_INVALID_PARAM_DW0(NVMF_CONNECT_IATTR_DATA,
							      offsetof(struct nvmf_connect_data, hostnqn)));
	CU_ASSERT(th_connect_as(th, HOSTNQN, SUBNQN, 0, NULL) == 0);
	th_teardown(th);
}

/* A TermReq is never answered with one, a malformed one (HLEN not 24) included: the controller just closes. */
static void test_h2c_term_with_a_wrong_hlen_is_not_answered(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_term_pdu term = { .hdr = { .type = NVME_TCP_H2C_TERM, .hlen = 72, .plen = 72 },
					  .fes = NVME_TCP_FES_INVALID_PDU_HDR };
	uint8_t pad[48] = { 0 };

	th_icreq(th, 0);
	CU_ASSERT(write_all(th->fd, &term, sizeof(term)) == 0);
	/* The rest of the header may find the socket closed already: the controller reads no further. */
	(void)write_all(th->fd, pad, sizeof(pad));
	CU_ASSERT_EQUAL(th_recv_pdu(th), -1);
	th_teardown(th);
}

/* ---------------------------------------------------------- bad input */

/* Expect a C2HTermReq with @fes, @fei and the first @hlen bytes of @bad, then a close. */
static void expect_term(struct th *th, uint16_t fes, uint32_t fei, const void *bad, uint32_t hlen)
{
	const struct nvme_tcp_term_pdu *term = (const void *)th->pdu;

	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_C2H_TERM);
	CU_ASSERT(term->hdr.hlen == sizeof(*term));
	CU_ASSERT(term->hdr.pdo == 0);
	CU_ASSERT(term->fes == fes);
	CU_ASSERT(term->fei == fei);
	CU_ASSERT(term->hdr.plen == sizeof(*term) + hlen);
	CU_ASSERT(!memcmp(th->pdu + sizeof(*term), bad, hlen));
	CU_ASSERT(th_closed(th));
}

/* After a TermReq the port still serves a fresh connection. */
static void expect_port_still_serves(struct th *th)
{
	close(th->fd);
	CU_ASSERT_FATAL(th_attach(th) == 0);
	th_icreq(th, 0);
	CU_ASSERT(th_connect(th, SUBNQN, 0, NVMF_CNTLID_DYNAMIC, 0, 0, true) == 0);
}

static void test_capsule_before_icreq_is_sequence_error(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_cmd_pdu cmd = { .hdr = { .type = NVME_TCP_CMD, .hlen = 72, .plen = 72 } };

	CU_ASSERT(write_all(th->fd, &cmd, sizeof(cmd)) == 0);
	expect_term(th, NVME_TCP_FES_PDU_SEQ_ERR, 0, &cmd, sizeof(cmd));
	expect_port_still_serves(th);
	th_teardown(th);
}

static void test_second_icreq_is_sequence_error(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_icreq_pdu icreq = { .hdr = { .type = NVME_TCP_ICREQ, .hlen = 128, .plen = 128 } };

	th_icreq(th, 0);
	CU_ASSERT(write_all(th->fd, &icreq, sizeof(icreq)) == 0);
	/* The copy is capped at NVME_TCP_TERM_MAX_ERRHDR, which 128 fits. */
	expect_term(th, NVME_TCP_FES_PDU_SEQ_ERR, 0, &icreq, sizeof(icreq));
	th_teardown(th);
}

static void test_icreq_unsupported_pfv(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_icreq_pdu icreq = { .hdr = { .type = NVME_TCP_ICREQ, .hlen = 128, .plen = 128 },
					    .pfv = 1 };

	CU_ASSERT(write_all(th->fd, &icreq, sizeof(icreq)) == 0);
	expect_term(th, NVME_TCP_FES_UNSUPPORTED_PARAM, offsetof(struct nvme_tcp_icreq_pdu, pfv), &icreq,
		    sizeof(icreq));
	th_teardown(th);
}

static void test_unknown_pdu_type(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_hdr ch = { .type = 0x0B, .hlen = 24, .plen = 24 };

	th_icreq(th, 0);
	CU_ASSERT(write_all(th->fd, &ch, sizeof(ch)) == 0);
	/* Only the common header was read: that is what comes back. */
	expect_term(th, NVME_TCP_FES_INVALID_PDU_HDR, offsetof(struct nvme_tcp_hdr, type), &ch, sizeof(ch));
	expect_port_still_serves(th);
	th_teardown(th);
}

static void test_controller_pdu_type_from_host(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_rsp_pdu rsp = { .hdr = { .type = NVME_TCP_RSP, .hlen = 24, .plen = 24 } };

	th_icreq(th, 0);
	CU_ASSERT(write_all(th->fd, &rsp, sizeof(rsp)) == 0);
	expect_term(th, NVME_TCP_FES_INVALID_PDU_HDR, offsetof(struct nvme_tcp_hdr, type), &rsp, 8);
	th_teardown(th);
}

static void test_bad_hlen(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_cmd_pdu cmd = { .hdr = { .type = NVME_TCP_CMD, .hlen = 64, .plen = 72 } };

	th_icreq(th, 0);
	CU_ASSERT(write_all(th->fd, &cmd, sizeof(cmd)) == 0);
	expect_term(th, NVME_TCP_FES_INVALID_PDU_HDR, offsetof(struct nvme_tcp_hdr, hlen), &cmd, 8);
	th_teardown(th);
}

static void test_bad_pdo(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_cmd_pdu cmd = { .hdr = { .type = NVME_TCP_CMD, .hlen = 72, .pdo = 40, .plen = 72 + 1024 } };

	th_icreq(th, 0);
	CU_ASSERT(write_all(th->fd, &cmd, sizeof(cmd)) == 0);
	expect_term(th, NVME_TCP_FES_INVALID_PDU_HDR, offsetof(struct nvme_tcp_hdr, pdo), &cmd, sizeof(cmd));
	th_teardown(th);
}

static void test_bad_plen(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_cmd_pdu cmd = { .hdr = { .type = NVME_TCP_CMD, .hlen = 72, .plen = 80 } };

	th_icreq(th, 0);
	CU_ASSERT(write_all(th->fd, &cmd, sizeof(cmd)) == 0);
	expect_term(th, NVME_TCP_FES_INVALID_PDU_HDR, offsetof(struct nvme_tcp_hdr, plen), &cmd, sizeof(cmd));
	th_teardown(th);
}

static void test_in_capsule_data_over_limit(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_cmd_pdu cmd = { .hdr = { .type = NVME_TCP_CMD, .hlen = 72, .pdo = 72 } };

	th_icreq(th, 0);
	cmd.hdr.plen = 72 + ERNIC_TCP_IN_CAPSULE_DATA + 4;
	CU_ASSERT(write_all(th->fd, &cmd, sizeof(cmd)) == 0);
	expect_term(th, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, 0, &cmd, sizeof(cmd));
	th_teardown(th);
}

static void test_header_digest_mismatch(void)
{
	struct th *th = th_setup(0);
	struct {
		struct nvme_tcp_cmd_pdu cmd;
		uint32_t hdgst;
	} __attribute__((packed)) pdu = { .cmd.hdr = { .type = NVME_TCP_CMD, .flags = NVME_TCP_F_HDGST,
						       .hlen = 72, .plen = 76 } };

	th_icreq(th, NVME_TCP_HDR_DIGEST_ENABLE);
	pdu.cmd.cmd.opc = NVME_ADMIN_KEEP_ALIVE;
	pdu.hdgst = ernic_crc32c(0, &pdu.cmd, sizeof(pdu.cmd)) ^ 0x100;
	CU_ASSERT(write_all(th->fd, &pdu, sizeof(pdu)) == 0);
	expect_term(th, NVME_TCP_FES_HDR_DIGEST_ERR, pdu.hdgst, &pdu.cmd, sizeof(pdu.cmd));
	expect_port_still_serves(th);
	th_teardown(th);
}

static void test_header_digest_flag_missing(void)
{
	struct th *th = th_setup(0);
	struct {
		struct nvme_tcp_cmd_pdu cmd;
		uint32_t hdgst;
	} __attribute__((packed)) pdu = { .cmd.hdr = { .type = NVME_TCP_CMD, .hlen = 72, .plen = 76 } };

	th_icreq(th, NVME_TCP_HDR_DIGEST_ENABLE);
	pdu.hdgst = ernic_crc32c(0, &pdu.cmd, sizeof(pdu.cmd));
	CU_ASSERT(write_all(th->fd, &pdu, sizeof(pdu)) == 0);
	expect_term(th, NVME_TCP_FES_INVALID_PDU_HDR, offsetof(struct nvme_tcp_hdr, flags), &pdu.cmd,
		    sizeof(pdu.cmd));
	th_teardown(th);
}

/*
 * A data digest error is no fatal transport error (TCP 1.0 has no FES for
 * it): command @cid completes with Transient Transport Error, without DNR so
 * that the host may send it again, and the connection goes on.
 */
static void expect_transient(struct th *th, uint16_t cid)
{
	const struct nvme_cqe *cqe = &((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe;

	CU_ASSERT_EQUAL_FATAL(th_recv_pdu(th), NVME_TCP_RSP);
	CU_ASSERT_EQUAL(cqe->cid, cid);
	CU_ASSERT_EQUAL(th_rsp_status(th), NVME_SC_TRANSIENT_TRANSPORT);
	CU_ASSERT_FALSE(nvme_cqe_dnr(cqe));
}

static void test_data_digest_mismatch_in_capsule(void)
{
	struct th *th = th_setup(0);
	struct {
		struct nvme_tcp_cmd_pdu cmd;
		struct nvmf_connect_data data;
		uint32_t ddgst;
	} __attribute__((packed)) pdu = { .cmd.hdr = { .type = NVME_TCP_CMD, .flags = NVME_TCP_F_DDGST, .hlen = 72,
						       .pdo = 72, .plen = 72 + 1024 + 4 } };

	th_icreq(th, NVME_TCP_DATA_DIGEST_ENABLE);
	pdu.cmd.cmd.opc = NVME_FABRICS_COMMAND;
	pdu.cmd.cmd.dptr.id = SGL_ICD;
	pdu.cmd.cmd.dptr.unkeyed.length = 1024;
	((struct nvmf_connect_cmd *)&pdu.cmd.cmd)->fctype = NVMF_FCTYPE_CONNECT;
	snprintf(pdu.data.hostnqn, sizeof(pdu.data.hostnqn), "%s", HOSTNQN);
	pdu.ddgst = ~ernic_crc32c(0, &pdu.data, sizeof(pdu.data));
	CU_ASSERT(write_all(th->fd, &pdu, sizeof(pdu)) == 0);
	expect_transient(th, 0);
	/* The stream is still in step: the same Connect with its digest right is taken. */
	CU_ASSERT_EQUAL(th_connect(th, SUBNQN, 0, NVMF_CNTLID_DYNAMIC, 0, 0, true), 0);
	th_teardown(th);
}

/*
 * A command refused for want of a slot still has its in-capsule data read
 * past and its digest checked: one that does not match fails it as it would
 * a command that could run (Transient Transport Error), and the next capsule
 * is read in step (refused too: every slot is still taken).
 */
static void test_data_digest_mismatch_refused_command(void)
{
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, NVME_TCP_DATA_DIGEST_ENABLE, CATTR_DISABLE_SQFLOW);
	struct {
		struct nvme_tcp_cmd_pdu cmd;
		uint8_t data[BS];
		uint32_t ddgst;
	} __attribute__((packed)) pdu = { .cmd.hdr = { .type = NVME_TCP_CMD, .flags = NVME_TCP_F_DDGST, .hlen = 72,
						       .pdo = 72, .plen = 72 + BS + 4 } };
	uint16_t cid;

	/* Every slot held by a write waiting for the data its R2T asked for. */
	for (cid = 0; cid < ERNIC_DEFAULT_QUEUE_SIZE; cid++) {
		struct nvme_tcp_cmd_pdu cmd = { .hdr.type = NVME_TCP_CMD };

		cmd.cmd.opc = NVME_CMD_WRITE;
		cmd.cmd.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
		cmd.cmd.cid = cid;
		cmd.cmd.nsid = 1;
		cmd.cmd.dptr.unkeyed.length = BS;
		cmd.cmd.dptr.id = SGL_TRANSPORT;
		th_send_pdu(th, &cmd, sizeof(cmd), NULL, 0);
		CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_R2T);
	}
	pdu.cmd.cmd.opc = NVME_CMD_WRITE;
	pdu.cmd.cmd.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	pdu.cmd.cmd.cid = cid;
	pdu.cmd.cmd.nsid = 1;
	pdu.cmd.cmd.dptr.id = SGL_ICD;
	pdu.cmd.cmd.dptr.unkeyed.length = BS;
	fill(pdu.data, sizeof(pdu.data), 3);
	pdu.ddgst = ~ernic_crc32c(0, pdu.data, sizeof(pdu.data));
	CU_ASSERT(write_all(th->fd, &pdu, sizeof(pdu)) == 0);
	expect_transient(th, cid);
	pdu.cmd.cmd.cid = (uint16_t)(cid + 1);
	pdu.ddgst = ernic_crc32c(0, pdu.data, sizeof(pdu.data));
	CU_ASSERT(write_all(th->fd, &pdu, sizeof(pdu)) == 0);
	CU_ASSERT_EQUAL_FATAL(th_recv_pdu(th), NVME_TCP_RSP);
	CU_ASSERT_EQUAL(((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe.cid, cid + 1);
	CU_ASSERT_EQUAL(th_rsp_status(th), NVME_SC_INTERNAL);
	close(admin_fd);
	th_teardown(th);
}

/* A write left waiting for data after its R2T; returns the R2T. */
static struct nvme_tcp_r2t_pdu th_write_until_r2t(struct th *th, uint32_t len)
{
	struct nvme_tcp_cmd_pdu cmd = { .hdr.type = NVME_TCP_CMD };

	cmd.cmd.opc = NVME_CMD_WRITE;
	cmd.cmd.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	cmd.cmd.cid = 42;
	cmd.cmd.nsid = 1;
	cmd.cmd.cdw12 = len / BS - 1;
	cmd.cmd.dptr.unkeyed.length = len;
	cmd.cmd.dptr.id = SGL_TRANSPORT;
	th_send_pdu(th, &cmd, sizeof(cmd), NULL, 0);
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_R2T);
	return *(struct nvme_tcp_r2t_pdu *)th->pdu;
}

/* Send an H2CData header (and no data yet): the controller judges the header alone. */
static struct nvme_tcp_data_pdu th_h2c_hdr(struct th *th, const struct nvme_tcp_r2t_pdu *r2t, uint32_t datao,
					   uint32_t datal, uint8_t flags)
{
	struct nvme_tcp_data_pdu data = { .hdr = { .type = NVME_TCP_H2C_DATA, .flags = flags, .hlen = 24,
						   .pdo = 24, .plen = 24 + datal } };

	data.cccid = r2t->cccid;
	data.ttag = r2t->ttag;
	data.datao = datao;
	data.datal = datal;
	CU_ASSERT(write_all(th->fd, &data, sizeof(data)) == 0);
	return data;
}

/*
 * Subsystem SUBNQN (namespace 1) in a set, linked to @nr NVMe/TCP ports of the
 * set (4420, 4421, ...), each served by a port of its own in @ports; the
 * host's connection on the first. th_teardown_set() undoes it.
 */
static struct ernic_nvmf *th_setup_set(struct th *th, unsigned int nr, struct ernic_tcp_port **ports,
				       uint16_t *portids)
{
	struct ernic_target_opts topts = { .subnqn = SUBNQN };
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN] = "";
	struct ernic_nvmf *nvmf;
	struct ernic_target *sub;

	ernic_backend_cfg_init(&cfg);
	cfg.size = NS_SIZE;
	cfg.bs = BS;
	cfg.queues = 4;
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_create(&cfg, &nvmf, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_subsys_add(nvmf, &topts, &sub, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_target_add_ns_at(sub, 1, &cfg, NULL, NULL, err, sizeof(err)), 0);
	memset(th, 0, offsetof(struct th, pdu));
	th->fd = -1;
	th->tgt = sub;
	th->maxh2cdata = ERNIC_TCP_MAXH2CDATA;
	for (unsigned int i = 0; i < nr; i++) {
		char svc[8];

		snprintf(svc, sizeof(svc), "%u", 4420 + i);
		CU_ASSERT_EQUAL_FATAL(ernic_nvmf_port_add(nvmf, NVMF_TRTYPE_TCP, "127.0.0.1", svc, &portids[i], err,
							  sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(ernic_nvmf_link(nvmf, portids[i], SUBNQN, err, sizeof(err)), 0);
		CU_ASSERT_FATAL(ernic_tcp_port_create(ernic_nvmf_home(nvmf), NULL, &ports[i]) == 0);
		ernic_tcp_port_set_portid(ports[i], portids[i]);
	}
	th->port = ports[0];
	CU_ASSERT_FATAL(th_attach(th) == 0);
	return nvmf;
}

static void th_teardown_set(struct th *th, struct ernic_nvmf *nvmf, unsigned int nr, struct ernic_tcp_port **ports)
{
	if (th->fd >= 0)
		close(th->fd);
	th->fd = -1;
	for (unsigned int i = 0; i < nr; i++)
		ernic_tcp_port_destroy(ports[i]);
	ernic_nvmf_destroy(nvmf);
}

/*
 * ANA Inaccessible set between a write's R2T and its data. A write whose data
 * lands in the namespace itself (16 KiB or more, no data digest) is on the
 * medium before it executes: it completes with success, as a command already
 * being processed when the state changed. One received into a buffer is
 * refused with the path status and leaves its blocks as they were. Before,
 * the first was refused too, with its data written all the same.
 */
static void test_ana_inaccessible_between_r2t_and_data_fails_no_write_that_landed(void)
{
	static uint8_t old[32768], wbuf[32768], rbuf[32768];
	char err[ERNIC_ERRLEN] = "";
	struct th *th = &g_th;
	struct ernic_tcp_port *port;
	uint16_t portid;
	struct ernic_nvmf *nvmf = th_setup_set(th, 1, &port, &portid);
	int admin_fd = th_io_queue_up(th, 0, 0);

	for (int in_place = 1; in_place >= 0; in_place--) {
		uint32_t len = in_place ? sizeof(wbuf) : 8192;
		struct nvme_tcp_r2t_pdu r2t;

		fill(old, len, (uint8_t)(40 + in_place));
		CU_ASSERT_FATAL(th_rw(th, NVME_CMD_WRITE, 0, old, len, false) == 0);
		r2t = th_write_until_r2t(th, len);
		CU_ASSERT_EQUAL(ernic_nvmf_ana_set(nvmf, portid, 1, NVME_ANA_INACCESSIBLE, err, sizeof(err)), 0);
		fill(wbuf, len, (uint8_t)(50 + in_place));
		th_h2c_hdr(th, &r2t, 0, len, NVME_TCP_F_DATA_LAST);
		CU_ASSERT_FATAL(write_all(th->fd, wbuf, len) == 0);
		CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
		CU_ASSERT_EQUAL(th_rsp_status(th), in_place ? NVME_SC_SUCCESS : NVME_SC_ANA_INACCESSIBLE);
		CU_ASSERT_EQUAL(ernic_nvmf_ana_set(nvmf, portid, 1, NVME_ANA_OPTIMIZED, err, sizeof(err)), 0);
		CU_ASSERT_FATAL(th_rw(th, NVME_CMD_READ, 0, rbuf, len, false) == 0);
		CU_ASSERT(!memcmp(rbuf, in_place ? wbuf : old, len));
	}
	close(admin_fd);
	th_teardown_set(th, nvmf, 1, &port);
}

/*
 * Subsystem A behind two ports of a set: an I/O Connect through the second
 * port naming the controller the first port's admin Connect made is refused
 * as naming an unknown controller (it joined before, and served I/O with the
 * second port's ANA states while the controller's log showed the first's,
 * and outlived the removal of the second port's link). Through the first
 * port the same Connect joins.
 */
static void test_an_io_connect_through_another_port_than_its_controller_s_is_refused(void)
{
	struct th *th = &g_th;
	struct ernic_tcp_port *ports[2];
	uint16_t portids[2];
	struct ernic_nvmf *nvmf = th_setup_set(th, 2, ports, portids);
	struct nvme_cqe cqe;
	int admin_fd;

	th_admin_up(th, 0, SUBNQN, 0, 0);
	admin_fd = th->fd;

	th->port = ports[1];
	CU_ASSERT_FATAL(th_attach(th) == 0);
	th_icreq(th, 0);
	CU_ASSERT_EQUAL(th_connect_as(th, HOSTNQN, SUBNQN, 1, &cqe), NVME_SC_CONNECT_INVALID_PARAM);
	CU_ASSERT_EQUAL(cqe.dw0, NVMF_CONNECT_INVALID_PARAM_DW0(NVMF_CONNECT_IATTR_DATA,
								 offsetof(struct nvmf_connect_data, cntlid)));
	close(th->fd);

	th->port = ports[0];
	CU_ASSERT_FATAL(th_attach(th) == 0);
	th_icreq(th, 0);
	CU_ASSERT_EQUAL(th_connect_as(th, HOSTNQN, SUBNQN, 1, &cqe), 0);
	close(admin_fd);
	th_teardown_set(th, nvmf, 2, ports);
}

static void test_h2c_data_unknown_ttag(void)
{
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0);
	struct nvme_tcp_r2t_pdu r2t = th_write_until_r2t(th, 8192);
	struct nvme_tcp_data_pdu data;

	r2t.ttag ^= 0x40;
	data = th_h2c_hdr(th, &r2t, 0, 8192, NVME_TCP_F_DATA_LAST);
	expect_term(th, NVME_TCP_FES_INVALID_PDU_HDR, offsetof(struct nvme_tcp_data_pdu, ttag), &data, sizeof(data));
	close(admin_fd);
	th_teardown(th);
}

static void test_h2c_data_unknown_cccid(void)
{
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0);
	struct nvme_tcp_r2t_pdu r2t = th_write_until_r2t(th, 8192);
	struct nvme_tcp_data_pdu data;

	r2t.cccid++;
	data = th_h2c_hdr(th, &r2t, 0, 8192, NVME_TCP_F_DATA_LAST);
	expect_term(th, NVME_TCP_FES_INVALID_PDU_HDR, offsetof(struct nvme_tcp_data_pdu, cccid), &data,
		    sizeof(data));
	close(admin_fd);
	th_teardown(th);
}

static void test_h2c_data_past_command_length(void)
{
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0);
	struct nvme_tcp_r2t_pdu r2t = th_write_until_r2t(th, 8192);
	struct nvme_tcp_data_pdu data;

	data = th_h2c_hdr(th, &r2t, 4096, 8192, NVME_TCP_F_DATA_LAST);
	expect_term(th, NVME_TCP_FES_DATA_OUT_OF_RANGE, 0, &data, sizeof(data));
	close(admin_fd);
	th_teardown(th);
}

static void test_h2c_data_over_maxh2cdata(void)
{
	struct th *th = th_setup(4096);
	int admin_fd = th_io_queue_up(th, 0, 0);
	struct nvme_tcp_r2t_pdu r2t = th_write_until_r2t(th, 8192);
	struct nvme_tcp_data_pdu data;

	data = th_h2c_hdr(th, &r2t, 0, 8192, NVME_TCP_F_DATA_LAST);
	expect_term(th, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, 0, &data, sizeof(data));
	close(admin_fd);
	th_teardown(th);
}

static void test_h2c_data_digest_mismatch(void)
{
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, NVME_TCP_DATA_DIGEST_ENABLE, 0);
	struct nvme_tcp_r2t_pdu r2t = th_write_until_r2t(th, 8192);
	static uint8_t payload[4096], back[8192], zeros[8192];
	uint32_t digest[2];

	/*
	 * Two H2CData PDUs, the first with a wrong digest: no answer after it,
	 * the second still read in step, then Transient Transport Error for the
	 * write, whose blocks stay as they were.
	 */
	fill(payload, sizeof(payload), 6);
	digest[0] = ernic_crc32c(0, payload, sizeof(payload)) + 1;
	digest[1] = digest[0] - 1;
	for (uint32_t i = 0; i < 2; i++) {
		struct nvme_tcp_data_pdu data = {
			.hdr = { .type = NVME_TCP_H2C_DATA, .flags = (uint8_t)(NVME_TCP_F_DDGST | (i ? NVME_TCP_F_DATA_LAST : 0)),
				 .hlen = 24, .pdo = 24, .plen = 24 + 4096 + 4 },
			.cccid = r2t.cccid, .ttag = r2t.ttag, .datao = i * 4096, .datal = 4096,
		};

		CU_ASSERT(write_all(th->fd, &data, sizeof(data)) == 0);
		CU_ASSERT(write_all(th->fd, payload, sizeof(payload)) == 0);
		CU_ASSERT(write_all(th->fd, &digest[i], sizeof(digest[i])) == 0);
		if (i == 0)
			CU_ASSERT_FALSE(readable_within(th->fd, 50));
	}
	expect_transient(th, 42);
	CU_ASSERT_EQUAL(th_rw(th, NVME_CMD_READ, 0, back, sizeof(back), false), 0);
	CU_ASSERT_EQUAL(memcmp(back, zeros, sizeof(back)), 0);
	/* The same write sent again, its digests right, lands. */
	fill(back, sizeof(back), 6);
	CU_ASSERT_EQUAL(th_rw(th, NVME_CMD_WRITE, 0, back, sizeof(back), false), 0);
	CU_ASSERT_EQUAL(th_rw(th, NVME_CMD_READ, 0, zeros, sizeof(zeros), false), 0);
	CU_ASSERT_EQUAL(memcmp(back, zeros, sizeof(back)), 0);
	close(admin_fd);
	th_teardown(th);
}

/*
 * A host that takes an R2T and never sends the data: its queue is closed
 * after the idle timeout, a line says why, and a namespace removal that was
 * waiting for the write landing in place goes on then.
 */
static void test_an_r2t_left_unanswered_closes_the_queue_and_lets_the_namespace_go(void)
{
	struct ernic_tcp_port_opts opts = { .idle_timeout_ms = SHORT_IDLE_MS, .log = tmpfile() };
	struct th *th = th_setup_opts(&opts, NULL);
	struct remover r = { .tgt = th->tgt };
	struct ernic_tcp_tx_stats a, b;
	int admin_fd = th_io_queue_up(th, 0, 0);
	char line[512];
	bool logged = false;
	pthread_t thr;

	CU_ASSERT_FATAL(opts.log != NULL);
	ernic_tcp_port_tx_stats(th->port, &a);
	(void)th_write_until_r2t(th, 65536);
	ernic_tcp_port_tx_stats(th->port, &b);
	CU_ASSERT_EQUAL(b.h2c_in_place - a.h2c_in_place, 1);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&thr, NULL, remover_main, &r), 0);
	poll(NULL, 0, SHORT_IDLE_MS / 4);
	CU_ASSERT_FALSE(atomic_load(&r.done));
	CU_ASSERT(closed_within(th->fd, 20 * SHORT_IDLE_MS));
	remover_join(&r, thr, 2000);
	close(admin_fd);
	th_teardown(th);
	rewind(opts.log);
	while (fgets(line, sizeof(line), opts.log))
		logged |= strstr(line, "the H2CData for cid 42 not all in within 200 ms of its R2T") != NULL;
	CU_ASSERT(logged);
	fclose(opts.log);
}

/*
 * An R2T is timed from when it was sent: a write that comes to a queue idle for longer than the timeout still
 * has the whole timeout for its data (it used to be timed from when the thread began to wait for the capsule,
 * and expired at the next check).
 */
static void test_an_r2t_after_a_long_idle_gets_the_whole_timeout(void)
{
	struct ernic_tcp_port_opts opts = { .idle_timeout_ms = SHORT_IDLE_MS };
	struct th *th = th_setup_opts(&opts, NULL);
	int admin_fd = th_io_queue_up(th, 0, 0);

	CU_ASSERT(!closed_within(th->fd, 3 * SHORT_IDLE_MS));
	(void)th_write_until_r2t(th, 65536);
	/* Not before the timeout has run from the R2T (the checks come every ERNIC_TCP_POLL_MS). */
	CU_ASSERT(!closed_within(th->fd, 3 * SHORT_IDLE_MS / 4));
	CU_ASSERT(closed_within(th->fd, 20 * SHORT_IDLE_MS));
	close(admin_fd);
	th_teardown(th);
}

/*
 * The data of an R2T is due within the timeout as a whole: a host sending four
 * bytes every quarter of it (it used to restart the clock with each PDU) is
 * closed all the same, and a namespace removal waiting for the write goes on.
 */
static void test_an_r2t_answered_a_few_bytes_at_a_time_still_closes_on_time(void)
{
	struct ernic_tcp_port_opts opts = { .idle_timeout_ms = SHORT_IDLE_MS };
	struct th *th = th_setup_opts(&opts, NULL);
	struct remover r = { .tgt = th->tgt };
	int admin_fd = th_io_queue_up(th, 0, 0);
	struct nvme_tcp_r2t_pdu r2t = th_write_until_r2t(th, 65536);
	static const uint8_t four[4] = { 1, 2, 3, 4 };
	bool closed = false;
	pthread_t thr;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&thr, NULL, remover_main, &r), 0);
	for (uint32_t off = 0; off < 80 && !closed; off += 4) {
		(void)th_h2c_hdr(th, &r2t, off, 4, 0);
		(void)write_all(th->fd, four, sizeof(four));
		closed = closed_within(th->fd, SHORT_IDLE_MS / 4);
	}
	CU_ASSERT_TRUE(closed);
	remover_join(&r, thr, 2000);
	close(admin_fd);
	th_teardown(th);
}

/*
 * The same, a few bytes at a time, each piece coming while the connection's
 * thread still busy-polls for it, so that the thread never sleeps. Its
 * periodic checks ran only after a sleep: the R2T's deadline passed unseen
 * until the host happened to be late once, which on a quiet machine may be
 * never (a 1 MiB H2CData at this pace takes half a minute). The queue now
 * closes at the first piece after a check falls due, spun for or not:
 * within the idle timeout and a check period of its R2T, with room here for a
 * busy machine.
 */
static void test_an_r2t_answered_inside_the_busy_poll_window_still_closes_on_time(void)
{
	struct ernic_tcp_port_opts opts = { .idle_timeout_ms = SHORT_IDLE_MS };
	struct th *th = th_setup_opts(&opts, NULL);
	int admin_fd = th_io_queue_up(th, 0, 0);
	struct nvme_tcp_r2t_pdu r2t = th_write_until_r2t(th, 65536);
	uint64_t r2t_ns = ernic_now_ns(), bound_ns = (SHORT_IDLE_MS + 4 * ERNIC_TCP_POLL_MS) * 1000000ull;
	struct pollfd pfd = { .fd = th->fd, .events = POLLIN };
	static const uint8_t piece[16];
	uint32_t off;
	ssize_t n;
	uint8_t b;

	CU_ASSERT_FATAL(r2t.r2tl == 65536);
	(void)th_h2c_hdr(th, &r2t, 0, r2t.r2tl, NVME_TCP_F_DATA_LAST);
	/* 450 us apart: the thread spins up to twice the host's pace (TCP_BUSY_POLL_MAX_NS). */
	for (off = 0; off < r2t.r2tl && ernic_now_ns() - r2t_ns < bound_ns; off += sizeof(piece)) {
		uint64_t next = ernic_now_ns() + 450000;

		if (send(th->fd, piece, sizeof(piece), MSG_NOSIGNAL) != sizeof(piece) || poll(&pfd, 1, 0) != 0)
			break;
		while (ernic_now_ns() < next)
			;
	}
	/* Closed (the pieces sent after the close may have drawn a reset), not answered. */
	CU_ASSERT(ernic_now_ns() - r2t_ns < bound_ns);
	n = recv(th->fd, &b, 1, 0);
	CU_ASSERT(n == 0 || (n < 0 && errno == ECONNRESET));
	close(admin_fd);
	th_teardown(th);
}

/*
 * A host whose R2T'd writes to namespace 2 overlap, one always open, each
 * landing in place: a removal of namespace 1 waited for as long as the chain
 * went on (the queue never let go of all its holds at once, and each was
 * within its bound). Writes now take the slot's buffer while a removal
 * waits, so the holds drain and the removal is done at once, the chain going on.
 */
static void test_overlapping_writes_landing_in_place_do_not_hold_a_removal(void)
{
	struct ernic_tcp_port_opts opts = { .idle_timeout_ms = 1000 };
	static uint8_t wbuf[16384];
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN];
	struct th *th = th_setup_opts(&opts, NULL);
	struct remover r = { .tgt = th->tgt };
	struct nvme_tcp_r2t_pdu open_r2t;
	struct ernic_tcp_tx_stats a, b;
	int admin_fd = th_io_queue_up(th, 0, 0);
	unsigned int n = 0, after = 0;
	struct nvme_sqe w;
	uint64_t t0;
	pthread_t thr;

	ernic_backend_cfg_init(&cfg);
	cfg.size = 16u << 20;
	cfg.bs = BS;
	CU_ASSERT_EQUAL_FATAL(ernic_target_add_ns(th->tgt, &cfg, err, sizeof(err)), 0);
	ernic_tcp_port_tx_stats(th->port, &a);
	w = th_rw_sqe(NVME_CMD_WRITE, 0, sizeof(wbuf));
	w.nsid = 2;
	th_cmd_send(th, &w, wbuf, sizeof(wbuf), 0, false);
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_R2T);
	open_r2t = *(struct nvme_tcp_r2t_pdu *)th->pdu;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&thr, NULL, remover_main, &r), 0);
	t0 = ernic_now_ns();
	/* The next R2T opened, then the one before answered; 100 more writes after the removal is done. */
	while (after < 100 && ernic_now_ns() - t0 < 5000000000ull) {
		struct nvme_tcp_r2t_pdu next;

		w = th_rw_sqe(NVME_CMD_WRITE, (n % 64) * (sizeof(wbuf) / BS), sizeof(wbuf));
		w.nsid = 2;
		th_cmd_send(th, &w, wbuf, sizeof(wbuf), 0, false);
		CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_R2T);
		next = *(struct nvme_tcp_r2t_pdu *)th->pdu;
		(void)th_h2c_hdr(th, &open_r2t, 0, sizeof(wbuf), NVME_TCP_F_DATA_LAST);
		CU_ASSERT_FATAL(write_all(th->fd, wbuf, sizeof(wbuf)) == 0);
		CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
		CU_ASSERT_EQUAL(th_rsp_status(th), NVME_SC_SUCCESS);
		open_r2t = next;
		n++;
		after += atomic_load(&r.done);
		poll(NULL, 0, 1);
	}
	CU_ASSERT_EQUAL(after, 100);
	(void)th_h2c_hdr(th, &open_r2t, 0, sizeof(wbuf), NVME_TCP_F_DATA_LAST);
	CU_ASSERT(write_all(th->fd, wbuf, sizeof(wbuf)) == 0);
	CU_ASSERT(th_recv_pdu(th) == NVME_TCP_RSP);
	remover_join(&r, thr, 1000);
	ernic_tcp_port_tx_stats(th->port, &b);
	/* They landed in place before the removal, and do again after it. */
	CU_ASSERT(b.h2c_in_place - a.h2c_in_place >= 100);
	close(admin_fd);
	th_teardown(th);
}

static void test_host_term_req_closes_quietly(void)
{
	struct th *th = th_setup(0);
	struct nvme_tcp_term_pdu term = { .hdr = { .type = NVME_TCP_H2C_TERM, .hlen = 24, .plen = 24 },
					  .fes = NVME_TCP_FES_INVALID_PDU_HDR };

	th_icreq(th, 0);
	CU_ASSERT(write_all(th->fd, &term, sizeof(term)) == 0);
	/* No C2HTermReq answers an H2CTermReq: just the close. */
	CU_ASSERT(th_closed(th));
	th_teardown(th);
}

/* ----------------------------------------------------------- stage stamps */

/*
 * The last sample is counted just after its response left, so the host may
 * read the response first: wait (up to 2 s) for @samples.
 */
static void stage_stats_when(struct ernic_tcp_port *port, uint64_t samples, struct ernic_trace_stats *st)
{
	for (unsigned int i = 0; i < 200; i++) {
		ernic_tcp_port_stage_stats(port, st);
		if (st->samples >= samples)
			return;
		poll(NULL, 0, 10);
	}
}

static void test_one_in_four_io_commands_is_stamped_in_order_and_written_to_the_trace(void)
{
	FILE *trace = tmpfile();
	struct ernic_tcp_port_opts opts = { .sample_every = 4, .trace = trace };
	struct ernic_trace_rec recs[16];
	struct ernic_trace_stats st;
	static uint8_t buf[BS];
	uint64_t parts = 0;
	unsigned int n;
	char json[1024];
	struct th *th;
	int admin_fd;

	CU_ASSERT_FATAL(trace != NULL);
	th = th_setup_opts(&opts, NULL);
	/* Five admin commands (Connect, properties) and the I/O queue's Connect: none sampled. */
	admin_fd = th_io_queue_up(th, 0, 0);
	for (unsigned int i = 0; i < 20; i++)
		CU_ASSERT(th_rw(th, NVME_CMD_READ, i, buf, BS, false) == 0);
	stage_stats_when(th->port, 5, &st);

	CU_ASSERT(st.samples == 5);
	CU_ASSERT(st.dropped == 0);
	/* NVMe/TCP's stages follow each other from receive to send: they add up to the total. */
	for (unsigned int s = ERNIC_TRACE_STAGE_RECEIVED; s <= ERNIC_TRACE_STAGE_SEND; s++)
		parts += st.sum_ns[s];
	CU_ASSERT(parts == st.sum_ns[ERNIC_TRACE_STAGE_TOTAL]);
	CU_ASSERT(st.sum_ns[ERNIC_TRACE_STAGE_TOTAL] > 0);
	CU_ASSERT(st.count[ERNIC_TRACE_STAGE_TOTAL] == 5);
	CU_ASSERT(st.count[ERNIC_TRACE_STAGE_DATA] == 0 && st.count[ERNIC_TRACE_STAGE_SEND_DONE] == 0);
	CU_ASSERT(ernic_trace_stats_json(&st, json, sizeof(json)) > 0);
	CU_ASSERT(strstr(json, "\"samples\":5,") != NULL);
	CU_ASSERT(strstr(json, "\"mean_us\":{\"received\":") != NULL);
	/* Stages the transport does not stamp are not shown as 0. */
	CU_ASSERT(strstr(json, "\"data\"") == NULL && strstr(json, "\"send_done\"") == NULL);
	CU_ASSERT(ernic_trace_stats_json(&st, json, 10) == -ENOSPC);
	close(admin_fd);
	th_teardown(th);

	/* The I/O queue's Connect was CID 1, the reads 2..21: the 4th, 8th, ... read is sampled. */
	n = ut_trace_records(trace, "tcp", recs, 16);
	CU_ASSERT_FATAL(n == 5);
	for (unsigned int i = 0; i < n; i++) {
		const struct ernic_trace_rec *r = &recs[i];

		CU_ASSERT(r->qid == 1);
		CU_ASSERT(r->cid == 5 + 4 * i);
		CU_ASSERT(r->opc == NVME_CMD_READ);
		CU_ASSERT(r->status == 0);
		CU_ASSERT(r->rx > 0);
		CU_ASSERT(r->rx <= r->exec);
		CU_ASSERT(r->exec <= r->storage_start);
		CU_ASSERT(r->storage_start <= r->storage_done);
		CU_ASSERT(r->storage_done <= r->queued);
		CU_ASSERT(r->queued <= r->sent);
		CU_ASSERT(r->storage_ns <= r->storage_done - r->storage_start);
		CU_ASSERT(r->data_start == 0 && r->data_done == 0 && r->send_done == 0);
		if (i)
			CU_ASSERT(r->rx > recs[i - 1].sent);
	}
	fclose(trace);
}

static void test_sampling_off_stamps_nothing_and_the_trace_is_only_its_header(void)
{
	FILE *trace = tmpfile();
	struct ernic_tcp_port_opts opts = { .trace = trace };
	struct ernic_trace_rec recs[4];
	struct ernic_trace_stats st;
	static uint8_t buf[BS];
	struct th *th;
	int admin_fd;

	CU_ASSERT_FATAL(trace != NULL);
	th = th_setup_opts(&opts, NULL);
	admin_fd = th_io_queue_up(th, 0, 0);
	for (unsigned int i = 0; i < 8; i++)
		CU_ASSERT(th_rw(th, NVME_CMD_WRITE, i, buf, BS, true) == 0);
	ernic_tcp_port_stage_stats(th->port, &st);
	CU_ASSERT(st.samples == 0);
	close(admin_fd);
	th_teardown(th);
	CU_ASSERT(ut_trace_records(trace, "tcp", recs, 4) == 0);
	fclose(trace);
}

static void test_every_command_sampled_with_a_write_by_r2t_stamped_at_exec_after_its_data(void)
{
	FILE *trace = tmpfile();
	struct ernic_tcp_port_opts opts = { .sample_every = 1, .trace = trace };
	struct ernic_trace_rec recs[4];
	static uint8_t buf[16 * 1024];
	struct th *th;
	int admin_fd;

	CU_ASSERT_FATAL(trace != NULL);
	th = th_setup_opts(&opts, NULL);
	admin_fd = th_io_queue_up(th, 0, 0);
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 0, buf, sizeof(buf), false) == 0);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 0, buf, sizeof(buf), false) == 0);
	close(admin_fd);
	th_teardown(th);
	CU_ASSERT_FATAL(ut_trace_records(trace, "tcp", recs, 4) == 2);
	CU_ASSERT(recs[0].opc == NVME_CMD_WRITE && recs[0].cid == 2);
	CU_ASSERT(recs[1].opc == NVME_CMD_READ && recs[1].cid == 3);
	for (unsigned int i = 0; i < 2; i++) {
		CU_ASSERT(recs[i].rx <= recs[i].exec);
		CU_ASSERT(recs[i].exec <= recs[i].storage_start);
		CU_ASSERT(recs[i].storage_done <= recs[i].queued);
		CU_ASSERT(recs[i].queued <= recs[i].sent);
	}
	fclose(trace);
}


/*
 * Eight reads written to the socket at once are parsed from one recv(), and
 * their sixteen PDUs (C2HData and CapsuleResp each) leave in fewer sendmsg()
 * calls than there were commands: completions are coalesced, not sent one by
 * one.
 */
static void test_reads_written_together_are_answered_in_fewer_sends_than_commands(void)
{
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0);
	struct nvme_tcp_cmd_pdu cmds[8];
	struct ernic_tcp_tx_stats before, after;
	unsigned int rsps = 0, datas = 0;

	ernic_tcp_port_tx_stats(th->port, &before);
	for (unsigned int i = 0; i < 8; i++) {
		cmds[i] = (struct nvme_tcp_cmd_pdu){
			.hdr = { .type = NVME_TCP_CMD, .hlen = sizeof(cmds[i]), .plen = sizeof(cmds[i]) },
			.cmd = { .opc = NVME_CMD_READ, .flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG, .cid = (uint16_t)(100 + i),
				 .nsid = 1, .cdw10 = i },
		};
		cmds[i].cmd.dptr.id = SGL_TRANSPORT;
		cmds[i].cmd.dptr.unkeyed.length = BS;
	}
	CU_ASSERT_FATAL(write_all(th->fd, cmds, sizeof(cmds)) == 0);
	while (rsps < 8) {
		int type = th_recv_pdu(th);

		CU_ASSERT_FATAL(type == NVME_TCP_C2H_DATA || type == NVME_TCP_RSP);
		if (type == NVME_TCP_RSP) {
			CU_ASSERT(nvme_cqe_status(&((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe) == 0);
			rsps++;
		} else {
			datas++;
		}
	}
	ernic_tcp_port_tx_stats(th->port, &after);
	CU_ASSERT(datas == 8);
	CU_ASSERT(after.pdus - before.pdus == 16);
	CU_ASSERT(after.sends - before.sends >= 1 && after.sends - before.sends < 8);
	close(admin_fd);
	th_teardown(th);
}

/*
 * The state letter and nice of every thread of this process but the caller,
 * into @state and @nice (up to @max); returns how many.
 */
static unsigned int task_stats(char *state, int *nice, unsigned int max)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *de;
	unsigned int n = 0;
	char self[32];

	CU_ASSERT_FATAL(dir != NULL);
	snprintf(self, sizeof(self), "%ld", (long)gettid());
	while ((de = readdir(dir)) && n < max) {
		char path[300], buf[1024], *p;
		FILE *f;
		char c;
		int v;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, self))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* the thread ended */
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		/* After the name: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
		 * cutime cstime priority nice. */
		if (p && sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %d", &c, &v) == 2) {
			state[n] = c;
			nice[n++] = v;
		}
	}
	closedir(dir);
	return n;
}

/*
 * Until every other thread of this process sleeps, for at most 5 s: the
 * port's threads have then ended any busy-poll and wait in recv() (a spin
 * yields, so it runs or is runnable, never asleep). A fixed pause is not
 * enough where CPU is short: the thread may not have run at all by then.
 */
static void others_asleep(void)
{
	for (int tries = 0; tries < 5000; tries++) {
		char state[256];
		int nice[256];
		unsigned int n = task_stats(state, nice, 256), asleep = 0;

		for (unsigned int i = 0; i < n; i++)
			asleep += state[i] == 'S';
		if (asleep == n)
			return;
		usleep(1000);
	}
	CU_FAIL("a thread of the port still running after 5 s");
}

/*
 * Each wait for the host is counted: a host silent for 30 ms outlasts any
 * busy-poll window (at most 1 ms), so that wait spun (a new queue spins) and
 * was not caught; a host answering at once is caught at least once in 200
 * reads (the window is at least 50 us, and twice the host's recent pace).
 */
static void test_waits_for_the_host_are_counted_busy_polled_and_caught(void)
{
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0);
	struct ernic_tcp_wait_stats a, b, c;
	uint8_t buf[BS];

	CU_ASSERT(th_rw(th, NVME_CMD_READ, 0, buf, sizeof(buf), false) == 0);
	/* The response is out before the wait begins: let it begin, spin and give way to a sleep. */
	poll(NULL, 0, 30);
	others_asleep();
	ernic_tcp_port_wait_stats(th->port, &a);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 1, buf, sizeof(buf), false) == 0);
	ernic_tcp_port_wait_stats(th->port, &b);
	CU_ASSERT(b.waits > a.waits);
	CU_ASSERT(b.spun > a.spun);
	CU_ASSERT(b.spun - b.caught > a.spun - a.caught);
	for (unsigned int i = 0; i < 200; i++)
		CU_ASSERT_FATAL(th_rw(th, NVME_CMD_READ, i, buf, sizeof(buf), false) == 0);
	ernic_tcp_port_wait_stats(th->port, &c);
	/* Not a wait each: a command that is in before the thread's next recv() needs none. */
	CU_ASSERT(c.waits > b.waits && c.waits <= b.waits + 200);
	CU_ASSERT(c.caught > b.caught);
	CU_ASSERT(c.caught <= c.spun && c.spun <= c.waits);
	close(admin_fd);
	th_teardown(th);
}

/*
 * An event raised just before the port stops: the AER it completes on
 * another thread waits for the connection's thread to take it, and a
 * connection closing for the stop sends it before it closes.
 */
static void test_an_aer_completed_just_before_the_port_stops_is_sent(void)
{
	struct th *th = th_setup(0);
	struct nvme_cqe cqe;

	th_admin_up(th, 0, SUBNQN, 0, 0);
	th_aers_held(th, 500, 1);
	/* The connection's thread asleep in recv(): it takes what other threads completed when it wakes. */
	poll(NULL, 0, 30);
	others_asleep();
	ernic_target_ns_changed(th->tgt, 1);
	ernic_tcp_port_stop(th->port, 0);
	CU_ASSERT_FATAL(th_recv_pdu(th) == NVME_TCP_RSP);
	cqe = ((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe;
	CU_ASSERT(cqe.cid == 500);
	CU_ASSERT(cqe.dw0 == NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_NS_CHANGED, NVME_LOG_CHANGED_NS));
	CU_ASSERT(th_closed(th));
	th_teardown(th);
}

/* A peer that is no queue yet (no Connect) waits asleep: no CPU is spun for it. */
static void test_no_busy_poll_before_connect(void)
{
	struct th *th = th_setup(0);
	struct ernic_tcp_wait_stats a, b;

	th_icreq(th, 0);
	/* The ICResp is out before the wait begins: let it begin, then stay silent. */
	poll(NULL, 0, 30);
	others_asleep();
	ernic_tcp_port_wait_stats(th->port, &a);
	CU_ASSERT_FATAL(th_connect(th, SUBNQN, 0, 0xFFFF, 0, 0, false) == 0);
	ernic_tcp_port_wait_stats(th->port, &b);
	CU_ASSERT(b.waits > a.waits);
	CU_ASSERT_EQUAL(b.spun, a.spun);
	th_teardown(th);
}

/*
 * splice() into a socket the host has closed raises SIGPIPE, which would end
 * the whole process: a host that sends large reads and hangs up before
 * reading a byte costs its own connection only, and the port serves the next.
 */
static void test_a_host_gone_while_reads_are_spliced_costs_only_its_connection(void)
{
	struct th *th;
	int admin_fd;
	struct nvme_tcp_cmd_pdu cmds[16];
	struct ernic_tcp_tx_stats before, after;
	static uint8_t rbuf[ERNIC_MAX_XFER];
	uint8_t b;

	g_c2h_splice = true;
	th = th_setup(0);
	g_c2h_splice = false;
	/* A send buffer far under one PDU's data: the target is inside splice() when the host stops reading. */
	g_serve_sndbuf = 4096;
	admin_fd = th_io_queue_up(th, 0, 0);
	g_serve_sndbuf = 0;

	ernic_tcp_port_tx_stats(th->port, &before);
	for (unsigned int i = 0; i < 16; i++) {
		cmds[i] = (struct nvme_tcp_cmd_pdu){
			.hdr = { .type = NVME_TCP_CMD, .hlen = sizeof(cmds[i]), .plen = sizeof(cmds[i]) },
			.cmd = { .opc = NVME_CMD_READ, .flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG, .cid = (uint16_t)(200 + i),
				 .nsid = 1, .cdw12 = sizeof(rbuf) / BS - 1 },
		};
		cmds[i].cmd.dptr.id = SGL_TRANSPORT;
		cmds[i].cmd.dptr.unkeyed.length = sizeof(rbuf);
	}
	CU_ASSERT_FATAL(write_all(th->fd, cmds, sizeof(cmds)) == 0);
	/* The first bytes are here, the rest of 2 MiB is not: stop reading (the target's sends fail with EPIPE). */
	CU_ASSERT_FATAL(recv(th->fd, &b, 1, MSG_PEEK) == 1);
	CU_ASSERT_FATAL(shutdown(th->fd, SHUT_RD) == 0);
	usleep(200000);
	close(th->fd);
	th->fd = -1;
	ernic_tcp_port_tx_stats(th->port, &after);
	CU_ASSERT(after.c2h_in_place > before.c2h_in_place);
	CU_ASSERT(after.c2h_spliced - before.c2h_spliced < 16);
	close(admin_fd);
	CU_ASSERT_FATAL(th_attach(th) == 0);
	admin_fd = th_io_queue_up(th, 0, 0);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 0, rbuf, sizeof(rbuf), false) == 0);
	close(admin_fd);
	th_teardown(th);
}

/* Within 2 s: some thread of this process at @nice, or with @every, every one. */
static bool task_nice_seen(int nice, bool every)
{
	for (int tries = 0; tries < 400; tries++) {
		char state[256];
		int v[256];
		unsigned int n = task_stats(state, v, 256), at = 0;

		for (unsigned int i = 0; i < n; i++)
			at += v[i] == nice;
		if (every ? at == n : at > 0)
			return true;
		usleep(5000);
	}
	return false;
}

struct nice_probe {
	int nice;
	bool allowed;
};

/* On a thread of its own, which then ends: may this process raise a thread to ->nice? */
static void *nice_probe_main(void *arg)
{
	struct nice_probe *p = arg;

	p->allowed = !setpriority(PRIO_PROCESS, 0, p->nice);
	return NULL;
}

/*
 * A send of 64 KiB or more is made at the port's send_nice and the
 * connection thread returns to its own nice after it; a small one is not.
 * The target's socket buffer is small and the host reads nothing at first,
 * so the thread waits inside such a send, where its nice shows. Where this
 * process may not raise a thread's priority, nothing is raised, the port says
 * so once in its log, and the reads complete all the same.
 */
static void test_large_sends_are_made_at_send_nice_and_the_thread_returns_to_its_own(void)
{
	enum { READS = 8 };
	static uint8_t wbuf[READS * ERNIC_MAX_XFER], rbuf[READS * ERNIC_MAX_XFER];
	char logbuf[4096] = "";
	FILE *log = tmpfile();
	int own = getpriority(PRIO_PROCESS, 0);
	struct ernic_tcp_port_opts opts = { .raise_sends = true, .send_nice = own - 5 };
	struct nice_probe probe_nice = { .nice = own - 5 };
	struct ernic_tcp_tx_stats before, after;
	struct nvme_sqe read;
	uint16_t first_cid = 0;
	unsigned int done = 0;
	bool can_raise;
	pthread_t probe;
	struct th *th;
	int admin_fd;

	CU_ASSERT_FATAL(log != NULL);
	/* Five steps above this process's own nice, so a test run at the lowest nice (-20) cannot show one. */
	CU_ASSERT_FATAL(own > -15);
	CU_ASSERT_FATAL(pthread_create(&probe, NULL, nice_probe_main, &probe_nice) == 0);
	pthread_join(probe, NULL);
	can_raise = probe_nice.allowed;
	opts.log = log;
	g_serve_sndbuf = 16384;
	th = th_setup_opts(&opts, NULL);
	admin_fd = th_io_queue_up(th, 0, 0);
	g_serve_sndbuf = 0;
	fill(wbuf, sizeof(wbuf), 11);
	for (unsigned int i = 0; i < READS; i++)
		CU_ASSERT(th_rw(th, NVME_CMD_WRITE, i * (ERNIC_MAX_XFER / BS), wbuf + i * ERNIC_MAX_XFER, ERNIC_MAX_XFER,
				false) == 0);

	/* A 4 KiB read: a small send, made at the thread's own nice. */
	ernic_tcp_port_tx_stats(th->port, &before);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 0, rbuf, BS, false) == 0);
	ernic_tcp_port_tx_stats(th->port, &after);
	CU_ASSERT_EQUAL(after.raised_sends, before.raised_sends);

	/* READS whole-MDTS reads sent at once, nothing read back yet. */
	for (unsigned int i = 0; i < READS; i++) {
		read = th_rw_sqe(NVME_CMD_READ, i * (ERNIC_MAX_XFER / BS), ERNIC_MAX_XFER);
		th_cmd_send(th, &read, NULL, 0, ERNIC_MAX_XFER, false);
		if (!i)
			first_cid = read.cid;
	}
	/* The connection thread stalls in a raised send, or (refused) no thread is ever raised. */
	CU_ASSERT(task_nice_seen(opts.send_nice, false) == can_raise);
	while (done < READS) {
		int type = th_recv_pdu(th);

		if (type == NVME_TCP_C2H_DATA) {
			struct nvme_tcp_data_pdu *data = (struct nvme_tcp_data_pdu *)th->pdu;
			unsigned int i = (uint16_t)(data->cccid - first_cid);

			CU_ASSERT_FATAL(i < READS && data->datao + data->datal <= ERNIC_MAX_XFER);
			memcpy(rbuf + i * ERNIC_MAX_XFER + data->datao, th->pdu + data->hdr.pdo, data->datal);
			done += !!(data->hdr.flags & NVME_TCP_F_DATA_SUCCESS);
			continue;
		}
		CU_ASSERT_FATAL(type == NVME_TCP_RSP);
		CU_ASSERT_EQUAL(nvme_cqe_status(&((struct nvme_tcp_rsp_pdu *)th->pdu)->cqe), NVME_SC_SUCCESS);
		done++;
	}
	CU_ASSERT(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	/* Every thread back at its own nice once the sends returned. */
	CU_ASSERT(task_nice_seen(own, true));
	ernic_tcp_port_tx_stats(th->port, &after);
	if (can_raise) {
		CU_ASSERT(after.raised_sends > before.raised_sends);
	} else {
		CU_ASSERT_EQUAL(after.raised_sends, before.raised_sends);
	}
	close(admin_fd);
	th_teardown(th);
	rewind(log);
	CU_ASSERT(fread(logbuf, 1, sizeof(logbuf) - 1, log) > 0); /* the connects */
	CU_ASSERT((strstr(logbuf, "stay at nice") != NULL) == !can_raise);
	fclose(log);
}

/*
 * Splicing is the port's choice (ernicd --zero-copy-reads): by default a large
 * read in place is copied by sendmsg(), at the connection thread's own nice.
 */
static void test_reads_in_place_are_copied_unless_the_port_splices(void)
{
	struct th *th = th_setup(0);
	int admin_fd = th_io_queue_up(th, 0, 0);
	static uint8_t wbuf[ERNIC_MAX_XFER], rbuf[ERNIC_MAX_XFER];
	struct ernic_tcp_tx_stats before, after;

	fill(wbuf, sizeof(wbuf), 9);
	CU_ASSERT(th_rw(th, NVME_CMD_WRITE, 8, wbuf, sizeof(wbuf), false) == 0);
	ernic_tcp_port_tx_stats(th->port, &before);
	CU_ASSERT(th_rw(th, NVME_CMD_READ, 8, rbuf, sizeof(rbuf), false) == 0);
	CU_ASSERT(!memcmp(wbuf, rbuf, sizeof(rbuf)));
	ernic_tcp_port_tx_stats(th->port, &after);
	CU_ASSERT_EQUAL(after.c2h_in_place - before.c2h_in_place, 1);
	CU_ASSERT_EQUAL(after.c2h_spliced, before.c2h_spliced);
	/* Nor is the send raised to another nice unless the port asks (raise_sends). */
	CU_ASSERT_EQUAL(after.raised_sends, 0);
	close(admin_fd);
	th_teardown(th);
}

UT_MAIN("transport_tcp", UT_CASE(test_mdts_0_moves_4_mib_in_one_command_and_mdts_1_refuses_12_kib),
	UT_CASE(test_a_log_page_read_far_past_its_end_costs_the_target_no_buffer),
	UT_CASE(test_a_log_page_read_past_its_end_from_an_offset_with_digests),
	UT_CASE(test_crc32c_check_value_and_chaining),
	UT_CASE(test_icreq_without_digests),
	UT_CASE(test_a_port_made_without_options_has_the_defaults),
	UT_CASE(test_large_sends_are_made_at_send_nice_and_the_thread_returns_to_its_own),
	UT_CASE(test_icreq_with_digests_and_small_maxh2cdata),
	UT_CASE(test_connect_in_capsule_then_properties),
	UT_CASE(test_connect_by_r2t_and_wrong_subnqn_rejected),
	UT_CASE(test_identify_by_c2h_data_then_capsule_resp),
	UT_CASE(test_write_r2t_read_success_flag),
	UT_CASE(test_read_without_sqflow_disable_sends_capsule_resp),
	UT_CASE(test_write_in_capsule),
	UT_CASE(test_write_in_capsule_arriving_in_two_parts),
	UT_CASE(test_digests_round_trip),
	UT_CASE(test_bad_sgl_completes_with_status),
	UT_CASE(test_aer_completes_from_another_thread_and_on_close),
	UT_CASE(test_an_event_for_a_host_that_does_not_read_holds_no_other_thread),
	UT_CASE(test_ana_inaccessible_between_r2t_and_data_fails_no_write_that_landed),
	UT_CASE(test_an_io_connect_through_another_port_than_its_controller_s_is_refused),
	UT_CASE(test_keep_alive_timeout_closes_connection),
	UT_CASE(test_closing_the_admin_connection_closes_the_io_connections),
	UT_CASE(test_disconnect_is_answered_then_the_connection_closes_even_with_an_r2t_open),
	UT_CASE(test_io_commands_after_the_admin_queue_is_lost_are_not_answered),
	UT_CASE(test_discovery_log_over_loopback_tcp),
	UT_CASE(test_discovery_log_of_a_port_on_ipv6_loopback),
	UT_CASE(test_io_queues_in_parallel),
	UT_CASE(test_connection_over_max_connections_is_closed_others_keep_working),
	UT_CASE(test_a_full_port_gives_the_place_of_its_oldest_connection_not_yet_a_queue),
	UT_CASE(test_an_evicted_connection_does_not_connect_its_way_past_the_limit),
	UT_CASE(test_a_burst_of_newcomers_evicts_at_most_as_many_as_there_are_places),
	UT_CASE(test_discovery_queues_hold_at_most_half_the_places),
	UT_CASE(test_a_slot_buffer_past_the_default_mdts_goes_with_its_command),
	UT_CASE(test_a_write_past_the_buffer_budget_gets_its_r2t_once_another_gives_its_buffer_back),
	UT_CASE(test_a_read_past_the_buffer_budget_executes_once_a_write_gives_its_buffer_back),
	UT_CASE(test_an_in_capsule_write_with_the_buffer_budget_held_still_completes),
	UT_CASE(test_a_transfer_over_half_the_buffer_budget_is_internal_error_not_a_wait),
	UT_CASE(test_idle_socket_that_never_sends_is_closed),
	UT_CASE(test_busy_socket_that_never_connects_is_closed),
	UT_CASE(test_half_pdu_header_on_connected_queue_is_closed),
	UT_CASE(test_half_in_capsule_data_on_connected_queue_is_closed),
	UT_CASE(test_connected_idle_admin_queue_stays_open),
	UT_CASE(test_write_before_connect_is_sequence_error_without_r2t),
	UT_CASE(test_invalid_write_completes_without_r2t),
	UT_CASE(test_host_nqn_in_log_lines_is_escaped),
	UT_CASE(test_a_second_connect_naming_another_host_does_not_rename_the_queue),
	UT_CASE(test_a_write_whose_namespace_was_replaced_before_its_data_came_is_refused),
	UT_CASE(test_a_slow_reader_holds_a_namespace_removal_no_longer_than_the_idle_timeout),
	UT_CASE(test_refused_connects_are_rate_limited_with_a_summary),
	UT_CASE(test_empty_host_nqn_accepted_when_any_host_is),
	UT_CASE(test_empty_host_nqn_refused_with_an_allow_list),
	UT_CASE(test_capsule_before_icreq_is_sequence_error),
	UT_CASE(test_second_icreq_is_sequence_error),
	UT_CASE(test_icreq_unsupported_pfv),
	UT_CASE(test_unknown_pdu_type),
	UT_CASE(test_controller_pdu_type_from_host),
	UT_CASE(test_bad_hlen),
	UT_CASE(test_bad_pdo),
	UT_CASE(test_bad_plen),
	UT_CASE(test_in_capsule_data_over_limit),
	UT_CASE(test_header_digest_mismatch),
	UT_CASE(test_header_digest_flag_missing),
	UT_CASE(test_data_digest_mismatch_in_capsule),
	UT_CASE(test_data_digest_mismatch_refused_command),
	UT_CASE(test_h2c_data_unknown_ttag),
	UT_CASE(test_h2c_data_unknown_cccid),
	UT_CASE(test_h2c_data_past_command_length),
	UT_CASE(test_h2c_data_over_maxh2cdata),
	UT_CASE(test_h2c_data_digest_mismatch),
	UT_CASE(test_an_r2t_left_unanswered_closes_the_queue_and_lets_the_namespace_go),
	UT_CASE(test_an_r2t_after_a_long_idle_gets_the_whole_timeout),
	UT_CASE(test_an_r2t_answered_a_few_bytes_at_a_time_still_closes_on_time),
	UT_CASE(test_an_r2t_answered_inside_the_busy_poll_window_still_closes_on_time),
	UT_CASE(test_overlapping_writes_landing_in_place_do_not_hold_a_removal),
	UT_CASE(test_host_term_req_closes_quietly),
	UT_CASE(test_one_in_four_io_commands_is_stamped_in_order_and_written_to_the_trace),
	UT_CASE(test_sampling_off_stamps_nothing_and_the_trace_is_only_its_header),
	UT_CASE(test_every_command_sampled_with_a_write_by_r2t_stamped_at_exec_after_its_data),
	UT_CASE(test_reads_written_together_are_answered_in_fewer_sends_than_commands),
	UT_CASE(test_reads_of_a_ram_namespace_are_sent_in_place_except_under_a_data_digest),
	UT_CASE(test_namespace_removal_waits_for_namespace_memory_still_to_be_sent),
	UT_CASE(test_reads_in_place_while_the_namespace_is_removed_complete_cleanly),
	UT_CASE(test_waits_for_the_host_are_counted_busy_polled_and_caught),
	UT_CASE(test_no_busy_poll_before_connect),
	UT_CASE(test_an_aer_completed_just_before_the_port_stops_is_sent),
	UT_CASE(test_a_host_gone_while_reads_are_spliced_costs_only_its_connection),
	UT_CASE(test_reads_in_place_are_copied_unless_the_port_splices),
	UT_CASE(test_write_of_128_kib_in_capsule),
	UT_CASE(test_large_in_capsule_writes_land_in_the_namespace_unless_small_digested_or_refused),
	UT_CASE(test_a_host_gone_inside_a_write_landing_in_place_lets_the_namespace_go),
	UT_CASE(test_writes_by_r2t_land_in_the_namespace_unless_small_or_digested),
	UT_CASE(test_h2c_term_with_a_wrong_hlen_is_not_answered))
