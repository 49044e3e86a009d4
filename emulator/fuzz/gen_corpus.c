/* SPDX-License-Identifier: MIT */
/*
 * gen_corpus.c - writes the seed corpus of every fuzz target, so the
 * committed seeds can be rebuilt and checked byte for byte.
 *
 * Usage: gen_corpus DIR     writes DIR/<target>/<seed>
 *
 * fuzz_tcp_pdu seeds are what a host writes on one NVMe/TCP connection, PDUs
 * back to back, never waiting for an answer: each later PDU's fields (the
 * R2T's TTAG, the anchor controller's CNTLID) are the ones the controller
 * will have chosen. fuzz_req_exec seeds use that target's record format, and
 * fuzz_mr_sgl seeds its 16-byte operations.
 */
#include <errno.h>
#include <sys/stat.h>

#include "crc32c.h"
#include "fuzz.h"

/* The first controller of fuzz_tcp_pdu's target, which its I/O Connects join. */
#define SEED_ANCHOR_CNTLID 1
#define SEED_BLOCK 4096

struct seed {
	uint8_t buf[64 * 1024];
	size_t len;
	bool hdgst, ddgst;
};

static const char *out_dir;

static void put(struct seed *s, const void *p, size_t len)
{
	if (s->len + len > sizeof(s->buf))
		abort();
	memcpy(s->buf + s->len, p, len);
	s->len += len;
}

static void seed_write(const char *target, const char *name, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out_dir, target);
	if (mkdir(path, 0755) && errno != EEXIST)
		abort();
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* ----------------------------------------------------------- NVMe/TCP PDUs */

/* One host to controller PDU: header, its digest, data at PDO, data digest (as negotiated). */
static void pdu(struct seed *s, void *hdr, uint8_t hlen, const void *data, uint32_t datal)
{
	struct nvme_tcp_hdr *ch = hdr;
	bool tcp_ic = ch->type == NVME_TCP_ICREQ || ch->type == NVME_TCP_H2C_TERM;
	uint32_t hd = s->hdgst && !tcp_ic ? NVME_TCP_DIGEST_LEN : 0;
	uint32_t dd = s->ddgst && datal ? NVME_TCP_DIGEST_LEN : 0;
	uint32_t crc;

	ch->hlen = hlen;
	ch->flags |= (hd ? NVME_TCP_F_HDGST : 0) | (dd ? NVME_TCP_F_DDGST : 0);
	ch->pdo = datal ? (uint8_t)(hlen + hd) : 0;
	ch->plen = hlen + hd + datal + dd;
	put(s, hdr, hlen);
	if (hd) {
		crc = ernic_crc32c(0, hdr, hlen);
		put(s, &crc, sizeof(crc));
	}
	if (datal) {
		put(s, data, datal);
		if (dd) {
			crc = ernic_crc32c(0, data, datal);
			put(s, &crc, sizeof(crc));
		}
	}
}

static void icreq(struct seed *s, uint8_t digest)
{
	struct nvme_tcp_icreq_pdu ic = { .hdr.type = NVME_TCP_ICREQ, .pfv = NVME_TCP_PFV_1_0, .digest = digest };

	s->len = 0;
	pdu(s, &ic, sizeof(ic), NULL, 0);
	s->hdgst = digest & NVME_TCP_HDR_DIGEST_ENABLE;
	s->ddgst = digest & NVME_TCP_DATA_DIGEST_ENABLE;
}

static void capsule(struct seed *s, const struct nvme_sqe *sqe, const void *data, uint32_t datal)
{
	struct nvme_tcp_cmd_pdu cmd = { .hdr.type = NVME_TCP_CMD, .cmd = *sqe };

	pdu(s, &cmd, sizeof(cmd), data, datal);
}

static void h2c_data(struct seed *s, uint16_t cid, uint16_t ttag, const void *data, uint32_t datal)
{
	struct nvme_tcp_data_pdu d = {
		.hdr = { .type = NVME_TCP_H2C_DATA, .flags = NVME_TCP_F_DATA_LAST },
		.cccid = cid,
		.ttag = ttag,
		.datal = datal,
	};

	pdu(s, &d, sizeof(d), data, datal);
}

static struct nvme_sgl_desc sgl_in_capsule(uint32_t len)
{
	struct nvme_sgl_desc sgl = { .unkeyed.length = len };

	sgl.id = NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET);
	return sgl;
}

static struct nvme_sgl_desc sgl_transport(uint32_t len)
{
	struct nvme_sgl_desc sgl = { .unkeyed.length = len };

	sgl.id = NVME_SGL_ID(NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK, NVME_SGL_SUBTYPE_TRANSPORT);
	return sgl;
}

static void connect_in_capsule(struct seed *s, uint16_t qid, uint16_t cntlid)
{
	struct nvme_sgl_desc sgl = sgl_in_capsule(sizeof(struct nvmf_connect_data));
	struct nvmf_connect_data data;
	struct nvme_sqe sqe;

	fuzz_connect_data(&data, ERNIC_DEFAULT_SUBNQN, cntlid);
	fuzz_connect_sqe(&sqe, 1, qid, &sgl);
	capsule(s, &sqe, &data, sizeof(data));
}

static void sqe_init(struct nvme_sqe *sqe, uint8_t opc, uint16_t cid, uint32_t nsid, struct nvme_sgl_desc sgl)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opc = opc;
	sqe->flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	sqe->cid = cid;
	sqe->nsid = nsid;
	sqe->dptr = sgl;
}

static void gen_tcp_pdu(void)
{
	static struct seed s;
	static uint8_t block[SEED_BLOCK];
	struct nvmf_connect_data data;
	struct nvme_tcp_term_pdu term = { .hdr.type = NVME_TCP_H2C_TERM, .fes = NVME_TCP_FES_INVALID_PDU_HDR };
	struct nvme_sqe sqe;
	struct nvme_sgl_desc none = { 0 };

	for (uint32_t i = 0; i < sizeof(block); i++)
		block[i] = (uint8_t)(i * 7 + 1);

	icreq(&s, 0);
	seed_write("fuzz_tcp_pdu", "icreq", s.buf, s.len);

	icreq(&s, 0);
	connect_in_capsule(&s, 0, NVMF_CNTLID_DYNAMIC);
	seed_write("fuzz_tcp_pdu", "icreq_admin_connect_in_capsule", s.buf, s.len);

	icreq(&s, 0);
	connect_in_capsule(&s, 0, NVMF_CNTLID_DYNAMIC);
	fuzz_prop_set_sqe(&sqe, 2, NVME_REG_CC, FUZZ_CC_ENABLE);
	capsule(&s, &sqe, NULL, 0);
	sqe_init(&sqe, NVME_ADMIN_IDENTIFY, 3, 0, sgl_transport(SEED_BLOCK));
	sqe.cdw10 = 1; /* CNS 1: Identify Controller */
	capsule(&s, &sqe, NULL, 0);
	seed_write("fuzz_tcp_pdu", "icreq_connect_enable_identify", s.buf, s.len);

	icreq(&s, NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE);
	connect_in_capsule(&s, 0, NVMF_CNTLID_DYNAMIC);
	fuzz_prop_set_sqe(&sqe, 2, NVME_REG_CC, FUZZ_CC_ENABLE);
	capsule(&s, &sqe, NULL, 0);
	seed_write("fuzz_tcp_pdu", "icreq_digests_connect_enable", s.buf, s.len);

	/* Connect data solicited by R2T: the first slot (TTAG 0) of a fresh connection. */
	icreq(&s, 0);
	fuzz_connect_data(&data, ERNIC_DEFAULT_SUBNQN, NVMF_CNTLID_DYNAMIC);
	none = sgl_transport(sizeof(data));
	fuzz_connect_sqe(&sqe, 7, 0, &none);
	capsule(&s, &sqe, NULL, 0);
	h2c_data(&s, 7, 0, &data, sizeof(data));
	seed_write("fuzz_tcp_pdu", "icreq_admin_connect_r2t", s.buf, s.len);

	/* An I/O queue of the anchor controller: Write by R2T/H2CData (slot 0 again), Read back, Flush. */
	for (int digest = 0; digest < 2; digest++) {
		icreq(&s, digest ? NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE : 0);
		connect_in_capsule(&s, 1, SEED_ANCHOR_CNTLID);
		sqe_init(&sqe, NVME_CMD_WRITE, 9, 1, sgl_transport(SEED_BLOCK));
		capsule(&s, &sqe, NULL, 0);
		h2c_data(&s, 9, 0, block, sizeof(block));
		sqe_init(&sqe, NVME_CMD_READ, 10, 1, sgl_transport(SEED_BLOCK));
		capsule(&s, &sqe, NULL, 0);
		sqe_init(&sqe, NVME_CMD_WRITE, 11, 1, sgl_in_capsule(SEED_BLOCK));
		sqe.cdw10 = 1;
		capsule(&s, &sqe, block, sizeof(block));
		sqe_init(&sqe, NVME_CMD_FLUSH, 12, 1, (struct nvme_sgl_desc){ 0 });
		capsule(&s, &sqe, NULL, 0);
		seed_write("fuzz_tcp_pdu", digest ? "io_write_r2t_read_digests" : "io_write_r2t_read", s.buf, s.len);
	}

	icreq(&s, 0);
	pdu(&s, &term, sizeof(term), NULL, 0);
	seed_write("fuzz_tcp_pdu", "icreq_termreq", s.buf, s.len);
}

/* ------------------------------------------------------------- req_exec */

static void rec(struct seed *s, uint8_t q, const struct nvme_sqe *sqe, const void *data, uint16_t len)
{
	uint8_t le[2] = { (uint8_t)len, (uint8_t)(len >> 8) };

	put(s, &q, 1);
	put(s, sqe, sizeof(*sqe));
	put(s, le, 2);
	if (len)
		put(s, data, len);
}

static struct nvme_sgl_desc sgl_keyed(uint32_t len)
{
	struct nvme_sgl_desc sgl;

	nvme_keyed_sgl_set(&sgl, 0x10000, len, 0x100, NVME_SGL_SUBTYPE_ADDRESS);
	return sgl;
}

static void gen_req_exec(void)
{
	static struct seed s;
	static uint8_t block[SEED_BLOCK];
	struct nvme_dsm_range range = { .nlb = 1, .slba = 0 };
	struct nvmf_connect_data data;
	struct nvme_sgl_desc sgl;
	struct nvme_sqe sqe;
	uint8_t setup;

	/* Admin command set on an enabled controller. */
	s.len = 0;
	setup = 1;
	put(&s, &setup, 1);
	sqe_init(&sqe, NVME_ADMIN_IDENTIFY, 3, 0, sgl_keyed(SEED_BLOCK));
	sqe.cdw10 = 1;
	rec(&s, 0, &sqe, NULL, 0);
	sqe.nsid = 1;
	sqe.cdw10 = 0;
	rec(&s, 0, &sqe, NULL, 0);
	sqe_init(&sqe, NVME_ADMIN_GET_LOG_PAGE, 4, 0xFFFFFFFF, sgl_keyed(512));
	sqe.cdw10 = 0x02 | (127u << 16); /* SMART, 512 bytes */
	rec(&s, 0, &sqe, NULL, 0);
	sqe_init(&sqe, NVME_ADMIN_SET_FEATURES, 5, 0, (struct nvme_sgl_desc){ 0 });
	sqe.cdw10 = 0x07; /* Number of Queues */
	sqe.cdw11 = 0x00030003;
	rec(&s, 0, &sqe, NULL, 0);
	sqe_init(&sqe, NVME_ADMIN_GET_FEATURES, 6, 0, (struct nvme_sgl_desc){ 0 });
	sqe.cdw10 = 0x0F; /* Keep Alive Timer */
	rec(&s, 0, &sqe, NULL, 0);
	sqe_init(&sqe, NVME_ADMIN_ASYNC_EVENT, 7, 0, (struct nvme_sgl_desc){ 0 });
	rec(&s, 0, &sqe, NULL, 0);
	sqe_init(&sqe, NVME_ADMIN_KEEP_ALIVE, 8, 0, (struct nvme_sgl_desc){ 0 });
	rec(&s, 0, &sqe, NULL, 0);
	seed_write("fuzz_req_exec", "admin_commands", s.buf, s.len);

	/* I/O command set on queue 1. */
	s.len = 0;
	setup = 3;
	put(&s, &setup, 1);
	for (uint32_t i = 0; i < sizeof(block); i++)
		block[i] = (uint8_t)i;
	sqe_init(&sqe, NVME_CMD_WRITE, 1, 1, sgl_keyed(SEED_BLOCK));
	rec(&s, 1, &sqe, block, sizeof(block));
	sqe_init(&sqe, NVME_CMD_READ, 2, 1, sgl_keyed(SEED_BLOCK));
	rec(&s, 1, &sqe, NULL, 0);
	sqe_init(&sqe, NVME_CMD_WRITE_ZEROES, 3, 1, (struct nvme_sgl_desc){ 0 });
	sqe.cdw12 = 7;
	rec(&s, 1, &sqe, NULL, 0);
	sqe_init(&sqe, NVME_CMD_DSM, 4, 1, sgl_keyed(sizeof(range)));
	sqe.cdw11 = 1u << 2; /* AD: deallocate */
	rec(&s, 1, &sqe, &range, sizeof(range));
	sqe_init(&sqe, NVME_CMD_FLUSH, 5, 1, (struct nvme_sgl_desc){ 0 });
	rec(&s, 1, &sqe, NULL, 0);
	seed_write("fuzz_req_exec", "io_commands", s.buf, s.len);

	/* Fabrics commands before and after a Connect the input carries itself. */
	s.len = 0;
	setup = 0;
	put(&s, &setup, 1);
	fuzz_prop_set_sqe(&sqe, 1, NVME_REG_CC, FUZZ_CC_ENABLE);
	rec(&s, 0, &sqe, NULL, 0);
	fuzz_connect_data(&data, ERNIC_DEFAULT_SUBNQN, NVMF_CNTLID_DYNAMIC);
	sgl = sgl_keyed(sizeof(data));
	fuzz_connect_sqe(&sqe, 2, 0, &sgl);
	rec(&s, 0, &sqe, &data, sizeof(data));
	fuzz_prop_set_sqe(&sqe, 3, NVME_REG_CC, FUZZ_CC_ENABLE);
	rec(&s, 0, &sqe, NULL, 0);
	fuzz_prop_set_sqe(&sqe, 4, NVME_REG_CAP, 0);
	((struct nvmf_property_cmd *)&sqe)->fctype = NVMF_FCTYPE_PROPERTY_GET;
	((struct nvmf_property_cmd *)&sqe)->attrib = 1;
	rec(&s, 0, &sqe, NULL, 0);
	fuzz_prop_set_sqe(&sqe, 5, NVME_REG_CC, FUZZ_CC_ENABLE | (1u << 14)); /* SHN normal */
	rec(&s, 0, &sqe, NULL, 0);
	seed_write("fuzz_req_exec", "fabrics_connect_properties", s.buf, s.len);

	/* The discovery controller and its log page. */
	s.len = 0;
	setup = 1 | 4;
	put(&s, &setup, 1);
	sqe_init(&sqe, NVME_ADMIN_GET_LOG_PAGE, 4, 0, sgl_keyed(SEED_BLOCK));
	sqe.cdw10 = 0x70 | (1023u << 16);
	rec(&s, 0, &sqe, NULL, 0);
	sqe_init(&sqe, NVME_ADMIN_IDENTIFY, 3, 0, sgl_keyed(SEED_BLOCK));
	sqe.cdw10 = 1;
	rec(&s, 0, &sqe, NULL, 0);
	seed_write("fuzz_req_exec", "discovery", s.buf, s.len);
}

/* --------------------------------------------------------- backend strings */

/* Text seeds of @target, one file each, named @prefix0, @prefix1, ... */
static void seed_strings(const char *target, const char *prefix, const char *const *seeds, size_t n)
{
	char name[32];

	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%zu", prefix, i);
		seed_write(target, name, seeds[i], strlen(seeds[i]));
	}
}

static void gen_backend_parse(void)
{
	static const char *const seeds[] = {
		"nvmeof:size=8G,bs=4096",
		"nvmeof:size=1GiB,bs=512,queues=8,queue_size=64,max_mr=4096,pollers=2",
		"nvmeof:size=64M,file=/tmp/ernic.img,queues=1",
		"nvmeof:size=4KB,bs=4096,queue_size=65536,max_mr=16777216",
		" nvmeof : size = 2T , queues = 15 ",
		"nvmeof",
	};

	seed_strings("fuzz_backend_parse", "string", seeds, ERNIC_ARRAY_SIZE(seeds));
}

/* ------------------------------------------------- control requests (JSON) */

static void gen_json(void)
{
	static const char *const seeds[] = {
		"{\"method\":\"list\"}",
		"{\"method\":\"namespace_add\",\"params\":{\"nqn\":\"nqn.2026-11.io.ernic:b\","
		"\"backend\":\"size=4M\",\"nsid\":4,\"ana_group\":3}}",
		"[{\"method\":\"subsystem_add\",\"params\":{\"nqn\":\"nqn.x\",\"any_host\":true,"
		"\"allow_hosts\":[\"h1\",\"h2\"]}},{\"method\":\"listener_add\",\"params\":"
		"{\"traddr\":\"127.0.0.1\",\"trsvcid\":0}}]",
		" { \"s\" : \"\\u00e9\\\"\\\\\\/\\b\\f\\n\\r\\t\\ud83d\\ude00\" , \"n\" : -9223372036854775808 , \"z\" : null } ",
	};

	seed_strings("fuzz_json", "request", seeds, ERNIC_ARRAY_SIZE(seeds));
}

/* ------------------------------------------------------------ MR and SGL */

static void op(struct seed *s, uint8_t code, uint8_t a, uint8_t b, uint8_t c, uint32_t u1, uint32_t u2, uint8_t d,
	       uint8_t e)
{
	uint8_t o[16] = { code, a, b, c, (uint8_t)u1, (uint8_t)(u1 >> 8), (uint8_t)(u1 >> 16), (uint8_t)(u1 >> 24),
			  (uint8_t)u2, (uint8_t)(u2 >> 8), (uint8_t)(u2 >> 16), (uint8_t)(u2 >> 24), d, e, 0, 0 };

	put(s, o, sizeof(o));
}

static void gen_mr_sgl(void)
{
	static struct seed s;
	const uint8_t rw = ERNIC_MR_REMOTE_READ | ERNIC_MR_REMOTE_WRITE;

	/* alloc, fast_reg entry 0 over 4 KiB with both rights, resolve, map, send with invalidate, destroy */
	s.len = 0;
	op(&s, 0, 0, 0, 0, 0, 0, 0, 0);
	op(&s, 2, 0, 2, rw, 0, SEED_BLOCK, 0, 0);
	op(&s, 4, 0, 1, 0, 0, SEED_BLOCK, 0, 0);
	s.buf[s.len - 10] = NVME_DATA_CTRL_TO_HOST;
	op(&s, 5, 0, 1, 0, 0, 512, 1, NVME_SGL_ID(NVME_SGL_TYPE_KEYED_DATA_BLOCK, NVME_SGL_SUBTYPE_ADDRESS));
	op(&s, 6, 0, 1, 0, 0, 512, 1, NVME_SGL_ID(NVME_SGL_TYPE_KEYED_DATA_BLOCK, NVME_SGL_SUBTYPE_INVALIDATE_KEY));
	op(&s, 4, 0, 1, 0, 0, 16, 0, 0);
	op(&s, 1, 0, 0, 0, 0, 0, 0, 0);
	seed_write("fuzz_mr_sgl", "register_map_invalidate", s.buf, s.len);

	/* two regions, a read-only one refused for RDMA WRITE, a local invalidate, re-registration */
	s.len = 0;
	op(&s, 0, 0, 0, 0, 0, 0, 0, 0);
	op(&s, 0, 0, 0, 0, 0, 0, 0, 0);
	op(&s, 2, 1, 3, ERNIC_MR_REMOTE_READ, 100, 60000, 0, 0);
	op(&s, 5, 1, 1, 0, 200, 4096, 1, NVME_SGL_ID(NVME_SGL_TYPE_KEYED_DATA_BLOCK, NVME_SGL_SUBTYPE_ADDRESS));
	s.buf[s.len - 10] = NVME_DATA_CTRL_TO_HOST;
	op(&s, 3, 1, 1, 0, 0, 0, 0, 0);
	op(&s, 2, 1, 1, rw, 0, 512, 0, 0);
	op(&s, 5, 1, 1, 0, 0, 512, 1, NVME_SGL_ID(NVME_SGL_TYPE_KEYED_DATA_BLOCK, NVME_SGL_SUBTYPE_ADDRESS));
	seed_write("fuzz_mr_sgl", "read_only_then_reregister", s.buf, s.len);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	out_dir = argv[1];
	if (mkdir(out_dir, 0755) && errno != EEXIST) {
		perror(out_dir);
		return 1;
	}
	gen_tcp_pdu();
	gen_req_exec();
	gen_backend_parse();
	gen_json();
	gen_mr_sgl();
	return 0;
}
