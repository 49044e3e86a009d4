/* SPDX-License-Identifier: MIT */
/*
 * nvmf_ut.c - a set of subsystems behind shared ports, changed at run time
 * while hosts are connected (through the in-process host): Connect picks the
 * subsystem by SUBNQN and the port's links, the discovery log and its
 * generation counter follow every change, namespaces added, resized and
 * removed are announced (AEN, Changed Namespace List) and a removal under a
 * write loop loses no acknowledged write, ANA states reach the Identify
 * fields, the ANA log, the AEN and the I/O status, and taking a subsystem
 * or a listener away fails exactly the controllers that used it; and the
 * rules of a port's places that both transports share (place.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "ernic/control.h"
#include "place.h"
#include "target.h"
#include "ut.h"
#include "ut_fixture.h"

#define NQN_A "nqn.2026-11.io.ernic:a"
#define NQN_B "nqn.2026-11.io.ernic:b"
#define NS_SIZE (4u << 20)

struct fx {
	struct ernic_nvmf *nvmf;
	struct ernic_target *a, *b;
	uint16_t portid[2];
	struct ernic_inproc_port *port[2];
	char path[64];
};

static struct ernic_backend_cfg ns_cfg(const char *file)
{
	struct ernic_backend_cfg cfg;

	ernic_backend_cfg_init(&cfg);
	cfg.size = NS_SIZE;
	cfg.queues = 2;
	cfg.queue_size = 32;
	if (file)
		snprintf(cfg.file, sizeof(cfg.file), "%s", file);
	return cfg;
}

/* A and B, each with NSID 1 (A's in a file when @file_a); A on both ports, B on the first only. */
static void fx_up(struct fx *fx, bool file_a)
{
	struct ernic_backend_cfg cfg = ns_cfg(NULL), fcfg;
	struct ernic_target_opts a = { .subnqn = NQN_A }, b = { .subnqn = NQN_B };
	char err[ERNIC_ERRLEN] = "";

	memset(fx, 0, sizeof(*fx));
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_create(&cfg, &fx->nvmf, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_subsys_add(fx->nvmf, &a, &fx->a, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_subsys_add(fx->nvmf, &b, &fx->b, err, sizeof(err)), 0);
	if (file_a) {
		int fd;

		snprintf(fx->path, sizeof(fx->path), "/tmp/ernic-nvmf-ut-XXXXXX");
		fd = mkstemp(fx->path);
		CU_ASSERT_FATAL(fd >= 0);
		close(fd);
	}
	fcfg = ns_cfg(file_a ? fx->path : NULL);
	CU_ASSERT_EQUAL_FATAL(ernic_target_add_ns_at(fx->a, 1, &fcfg, NULL, NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_target_add_ns_at(fx->b, 1, &cfg, NULL, NULL, err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++) {
		struct ernic_inproc_port_opts po = { .pollers = 1 };
		const char *svc = i ? "4421" : "4420";

		CU_ASSERT_EQUAL_FATAL(ernic_nvmf_port_add(fx->nvmf, NVMF_TRTYPE_RDMA, "10.0.0.1", svc, &fx->portid[i],
							  err, sizeof(err)), 0);
		po.portid = fx->portid[i];
		CU_ASSERT_EQUAL_FATAL(ernic_inproc_port_create(ernic_nvmf_home(fx->nvmf), &po, &fx->port[i], err,
							       sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(ernic_nvmf_link(fx->nvmf, fx->portid[i], NQN_A, err, sizeof(err)), 0);
	}
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_link(fx->nvmf, fx->portid[0], NQN_B, err, sizeof(err)), 0);
}

static void fx_down(struct fx *fx)
{
	for (int i = 0; i < 2; i++)
		ernic_inproc_port_destroy(fx->port[i]);
	ernic_nvmf_destroy(fx->nvmf);
	if (fx->path[0])
		unlink(fx->path);
}

static struct ernic_host_ctrlr *connect_to(struct fx *fx, int port, const char *nqn, char *err, size_t errlen)
{
	const struct ernic_host_opts opts = { .subnqn = nqn, .hostnqn = "nqn.2014-08.org.nvmexpress:uuid:ut",
					      .nr_io_queues = 1 };
	struct ernic_host_ctrlr *hc = NULL;

	if (ernic_host_connect(fx->port[port], &opts, &hc, err, errlen))
		return NULL;
	return hc;
}

static uint16_t io(struct ernic_host_ctrlr *hc, uint8_t opc, uint32_t nsid, uint64_t slba, void *buf)
{
	struct ernic_host_qpair *qp = ernic_host_io_qpair(hc, 1);
	struct nvme_sqe sqe;

	ernic_host_rw_sqe(&sqe, opc, nsid, slba, 1);
	if (ernic_host_submit(qp, &sqe, buf, 4096, (void *)0x10))
		return 0xFFFF;
	return ut_wait_cpl(qp, (void *)0x10, NULL);
}

static uint16_t get_page(struct ernic_host_ctrlr *hc, uint8_t opc, uint32_t cdw10, uint32_t nsid, void *buf,
			 uint32_t len)
{
	struct nvme_sqe sqe = { .opc = opc, .nsid = nsid, .cdw10 = cdw10 };
	struct nvme_cqe cqe;

	if (opc == NVME_ADMIN_GET_LOG_PAGE)
		sqe.cdw10 |= (len / 4 - 1) << 16;
	if (ernic_host_admin(hc, &sqe, buf, len, &cqe))
		return 0xFFFF;
	return ST(cqe);
}

/* Submit an AER on @hc's admin queue (the caller waits with ut_wait_cpl()). */
static void aer_submit(struct ernic_host_ctrlr *hc, void *ctx)
{
	struct nvme_sqe sqe = { .opc = NVME_ADMIN_ASYNC_EVENT };

	CU_ASSERT_EQUAL(ernic_host_submit(ernic_host_admin_qpair(hc), &sqe, NULL, 0, ctx), 0);
}

/* ======================================================= Connect by SUBNQN */

static void test_connect_on_a_shared_port_joins_the_subsystem_its_subnqn_names(void)
{
	struct fx fx;
	struct ernic_host_ctrlr *ha, *hb;
	char err[ERNIC_ERRLEN] = "";
	static uint8_t buf[4096], back[4096];

	fx_up(&fx, false);
	ha = connect_to(&fx, 0, NQN_A, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(ha);
	hb = connect_to(&fx, 0, NQN_B, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(hb);
	CU_ASSERT_STRING_EQUAL(ernic_host_id_ctrl(ha)->subnqn, NQN_A);
	CU_ASSERT_STRING_EQUAL(ernic_host_id_ctrl(hb)->subnqn, NQN_B);
	/* The same NSID on the same port reaches two different media. */
	memset(buf, 0xA5, sizeof(buf));
	CU_ASSERT_EQUAL(io(ha, NVME_CMD_WRITE, 1, 7, buf), 0);
	CU_ASSERT_EQUAL(io(hb, NVME_CMD_READ, 1, 7, back), 0);
	CU_ASSERT_EQUAL(back[0], 0);
	CU_ASSERT_EQUAL(io(ha, NVME_CMD_READ, 1, 7, back), 0);
	CU_ASSERT_EQUAL(memcmp(back, buf, sizeof(buf)), 0);
	ernic_host_disconnect(ha);
	ernic_host_disconnect(hb);
	fx_down(&fx);
}

static void test_connect_to_a_subsystem_not_linked_to_the_port_is_refused(void)
{
	struct fx fx;
	char err[ERNIC_ERRLEN] = "";

	fx_up(&fx, false);
	CU_ASSERT_PTR_NULL(connect_to(&fx, 1, NQN_B, err, sizeof(err)));
	CU_ASSERT_PTR_NULL(connect_to(&fx, 0, "nqn.2026-11.io.ernic:nobody", err, sizeof(err)));
	fx_down(&fx);
}

/* ================================================================ discovery */

static void test_discovery_log_lists_each_subsystem_at_each_linked_port_and_genctr_moves(void)
{
	struct fx fx;
	char err[ERNIC_ERRLEN] = "";
	struct nvmf_disc_log_hdr *hdr;
	struct nvmf_disc_log_entry *e;
	uint64_t gen;
	size_t size;
	int a_seen = 0, b_seen = 0;

	fx_up(&fx, false);
	hdr = ernic_nvmf_disc_log(fx.nvmf, "nqn.host", &size);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hdr);
	CU_ASSERT_EQUAL(hdr->numrec, 3);
	CU_ASSERT_EQUAL(size, sizeof(*hdr) + 3 * sizeof(*e));
	e = (struct nvmf_disc_log_entry *)(hdr + 1);
	for (uint64_t i = 0; i < hdr->numrec; i++) {
		a_seen += !strcmp(e[i].subnqn, NQN_A);
		b_seen += !strcmp(e[i].subnqn, NQN_B);
		CU_ASSERT(e[i].portid == fx.portid[0] || e[i].portid == fx.portid[1]);
		CU_ASSERT_EQUAL(memcmp(e[i].trsvcid, e[i].portid == fx.portid[0] ? "4420" : "4421", 4), 0);
	}
	CU_ASSERT_EQUAL(a_seen, 2);
	CU_ASSERT_EQUAL(b_seen, 1);
	gen = hdr->genctr;
	free(hdr);
	CU_ASSERT_EQUAL(ernic_nvmf_unlink(fx.nvmf, fx.portid[0], NQN_B, err, sizeof(err)), 0);
	CU_ASSERT(ernic_nvmf_genctr(fx.nvmf) > gen);
	hdr = ernic_nvmf_disc_log(fx.nvmf, "nqn.host", &size);
	CU_ASSERT_EQUAL(hdr->numrec, 2);
	free(hdr);
	/* Bad requests name what is wrong and change nothing. */
	gen = ernic_nvmf_genctr(fx.nvmf);
	CU_ASSERT_EQUAL(ernic_nvmf_unlink(fx.nvmf, fx.portid[0], NQN_B, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, NQN_B));
	CU_ASSERT_EQUAL(ernic_nvmf_subsys_add(fx.nvmf, &(struct ernic_target_opts){ .subnqn = NQN_A }, NULL, err,
					      sizeof(err)), -EEXIST);
	CU_ASSERT_EQUAL(ernic_nvmf_genctr(fx.nvmf), gen);
	fx_down(&fx);
}

/*
 * TREQ: every entry says SQ flow control may be disabled, which every
 * transport honours and which makes nvme connect-all ask for it, over the
 * fixture's RDMA ports and an NVMe/TCP port alike.
 */
static void test_discovery_entries_offer_sq_flow_control_disable(void)
{
	struct fx fx;
	char err[ERNIC_ERRLEN] = "";
	struct nvmf_disc_log_hdr *hdr;
	struct nvmf_disc_log_entry *e;
	uint16_t tcp_portid = 0;
	size_t size;
	int tcp_seen = 0;

	fx_up(&fx, false);
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_port_add(fx.nvmf, NVMF_TRTYPE_TCP, "127.0.0.1", "4430", &tcp_portid, err,
						  sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_link(fx.nvmf, tcp_portid, NQN_B, err, sizeof(err)), 0);
	hdr = ernic_nvmf_disc_log(fx.nvmf, "nqn.host", &size);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hdr);
	CU_ASSERT_EQUAL(hdr->numrec, 4);
	e = (struct nvmf_disc_log_entry *)(hdr + 1);
	for (uint64_t i = 0; i < hdr->numrec; i++) {
		tcp_seen += e[i].portid == tcp_portid;
		CU_ASSERT_EQUAL(e[i].trtype, e[i].portid == tcp_portid ? NVMF_TRTYPE_TCP : NVMF_TRTYPE_RDMA);
		CU_ASSERT_EQUAL(e[i].treq, NVMF_TREQ_DISABLE_SQFLOW);
	}
	CU_ASSERT_EQUAL(tcp_seen, 1);
	free(hdr);
	fx_down(&fx);
}

/* =============================================================== namespaces */

static void test_namespace_added_at_run_time_is_announced_listed_and_usable(void)
{
	struct fx fx;
	struct ernic_host_ctrlr *ha;
	struct ernic_backend_cfg cfg = ns_cfg(NULL);
	struct ernic_ns_ids ids = { .anagrpid = 2, .has_uuid = true };
	char err[ERNIC_ERRLEN] = "";
	static uint8_t page[4096];
	uint32_t dw0 = 0, nsid = 0;

	fx_up(&fx, false);
	ha = connect_to(&fx, 0, NQN_A, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(ha);
	CU_ASSERT_EQUAL(ut_admin(ha, NVME_ADMIN_SET_FEATURES, NVME_FEAT_ASYNC_EVENT, NVME_CTRL_OAES_NS_ATTR, NULL), 0);
	aer_submit(ha, (void *)0xAE);
	memset(ids.uuid, 0x5C, sizeof(ids.uuid));
	CU_ASSERT_EQUAL(ernic_target_add_ns_at(fx.a, 5, &cfg, &ids, &nsid, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(nsid, 5);
	CU_ASSERT_EQUAL(ut_wait_cpl(ernic_host_admin_qpair(ha), (void *)0xAE, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_NS_CHANGED, NVME_LOG_CHANGED_NS));
	CU_ASSERT_EQUAL(get_page(ha, NVME_ADMIN_GET_LOG_PAGE, NVME_LOG_CHANGED_NS, 0, page, sizeof(page)), 0);
	CU_ASSERT_EQUAL(((uint32_t *)page)[0], 5);
	CU_ASSERT_EQUAL(get_page(ha, NVME_ADMIN_IDENTIFY, NVME_ID_CNS_NS_ACTIVE_LIST, 0, page, sizeof(page)), 0);
	CU_ASSERT_EQUAL(((uint32_t *)page)[0], 1);
	CU_ASSERT_EQUAL(((uint32_t *)page)[1], 5);
	CU_ASSERT_EQUAL(get_page(ha, NVME_ADMIN_IDENTIFY, NVME_ID_CNS_NS, 5, page, sizeof(page)), 0);
	CU_ASSERT_EQUAL(((struct nvme_id_ns *)page)->anagrpid, 2);
	CU_ASSERT_EQUAL(((struct nvme_id_ns *)page)->nmic, NVME_NS_NMIC_SHARED);
	CU_ASSERT_EQUAL(io(ha, NVME_CMD_WRITE, 5, 0, page), 0);
	/* The slot taken and a group out of range: one line naming the value */
	CU_ASSERT_EQUAL(ernic_target_add_ns_at(fx.a, 5, &cfg, NULL, NULL, err, sizeof(err)), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "nsid 5"));
	ids.anagrpid = ERNIC_NVMF_MAX_ANA_GROUPS + 1;
	CU_ASSERT_EQUAL(ernic_target_add_ns_at(fx.a, 6, &cfg, &ids, NULL, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "ana_group 9"));
	/*
	 * An identifier namespace 5 has already (Base 2.0 4.5.1: they are
	 * unique; a Linux host refuses the second as "duplicate IDs"): refused
	 * before any backend is made, naming it and its holder; in another
	 * subsystem it is another matter.
	 */
	ids.anagrpid = 0;
	cfg = ns_cfg("/tmp/ernic-nvmf-ut-dup-id.img");
	unlink(cfg.file);
	CU_ASSERT_EQUAL(ernic_target_add_ns_at(fx.a, 6, &cfg, &ids, NULL, err, sizeof(err)), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "uuid 5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c: namespace 5"));
	CU_ASSERT_EQUAL(access(cfg.file, F_OK), -1);
	ids.has_uuid = false;
	ids.has_eui64 = true;
	memcpy(ids.eui64, ernic_target_ns(fx.a, 1)->eui64, sizeof(ids.eui64));
	CU_ASSERT_EQUAL(ernic_target_add_ns_at(fx.a, 6, &cfg, &ids, NULL, err, sizeof(err)), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, ": namespace 1 of this subsystem"));
	cfg = ns_cfg(NULL);
	CU_ASSERT_EQUAL(ernic_target_add_ns_at(fx.b, 6, &cfg, &ids, NULL, err, sizeof(err)), 0);
	ernic_host_disconnect(ha);
	fx_down(&fx);
}

static void test_resize_moves_the_lba_range_and_is_announced(void)
{
	struct fx fx;
	struct ernic_host_ctrlr *ha;
	char err[ERNIC_ERRLEN] = "";
	static uint8_t page[4096];
	uint64_t last = NS_SIZE / 4096;

	fx_up(&fx, false);
	ha = connect_to(&fx, 0, NQN_A, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(ha);
	CU_ASSERT_EQUAL(io(ha, NVME_CMD_WRITE, 1, last, page), NVME_SC_LBA_RANGE);
	CU_ASSERT_EQUAL(ernic_target_resize_ns(fx.a, 1, 2 * NS_SIZE, err, sizeof(err)), 0);
	memset(page, 0x3C, sizeof(page));
	CU_ASSERT_EQUAL(io(ha, NVME_CMD_WRITE, 1, last, page), 0);
	CU_ASSERT_EQUAL(get_page(ha, NVME_ADMIN_IDENTIFY, NVME_ID_CNS_NS, 1, page, sizeof(page)), 0);
	CU_ASSERT_EQUAL(((struct nvme_id_ns *)page)->nsze, 2 * last);
	CU_ASSERT_EQUAL(get_page(ha, NVME_ADMIN_GET_LOG_PAGE, NVME_LOG_CHANGED_NS, 0, page, sizeof(page)), 0);
	CU_ASSERT_EQUAL(ernic_target_resize_ns(fx.a, 1, NS_SIZE / 2, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(io(ha, NVME_CMD_READ, 1, last / 2, page), NVME_SC_LBA_RANGE);
	/* Grown again, the cut blocks read as zeroes */
	CU_ASSERT_EQUAL(ernic_target_resize_ns(fx.a, 1, 2 * NS_SIZE, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(io(ha, NVME_CMD_READ, 1, last, page), 0);
	CU_ASSERT_EQUAL(page[0], 0);
	CU_ASSERT_EQUAL(ernic_target_resize_ns(fx.a, 1, 1000, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "size 1000"));
	CU_ASSERT_EQUAL(ernic_target_resize_ns(fx.a, 3, NS_SIZE, err, sizeof(err)), -ENOENT);
	ernic_host_disconnect(ha);
	fx_down(&fx);
}

/* Cut inside a 4 KiB page (512-byte blocks) and grown again, a RAM namespace's cut blocks read as zeroes too. */
static void test_a_ram_namespace_cut_inside_a_page_reads_zeroes_when_grown_again(void)
{
	struct ernic_ns ns = { 0 };
	static uint8_t blk[512], zeros[512];
	char err[ERNIC_ERRLEN] = "";

	CU_ASSERT_EQUAL_FATAL(ernic_ns_ram_open(&ns, 8192, 512, err, sizeof(err)), 0);
	memset(blk, 0xEE, sizeof(blk));
	for (uint64_t off = 0; off < 8192; off += sizeof(blk))
		CU_ASSERT_EQUAL(ns.ops->write(&ns, blk, off, sizeof(blk), 0), 0);
	CU_ASSERT_EQUAL(ernic_ns_ram_resize(&ns, 8192, 4608, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ernic_ns_ram_resize(&ns, 4608, 8192, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ns.ops->read(&ns, blk, 4096, sizeof(blk)), 0); /* kept: block 8 */
	CU_ASSERT_EQUAL(blk[0], 0xEE);
	for (uint64_t off = 4608; off < 8192; off += sizeof(blk)) {
		CU_ASSERT_EQUAL(ns.ops->read(&ns, blk, off, sizeof(blk)), 0);
		CU_ASSERT(!memcmp(blk, zeros, sizeof(blk)));
	}
	ns.ops->close(&ns);
}

/*
 * A writer at queue depth 8 stamps each block with its own sequence number
 * and records which writes were acknowledged, until the namespace goes.
 */
struct writer {
	struct ernic_host_ctrlr *hc;
	_Atomic bool stop;
	uint32_t acked[NS_SIZE / 4096]; /* last sequence acknowledged per block, 0 = none */
	_Atomic uint64_t ok; /* read by the test thread while the writer runs */
	uint64_t invalid_ns, other;
	_Atomic bool lost; /* the queue pair went away; read by the test thread while the writer runs */
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct ernic_host_qpair *qp = ernic_host_io_qpair(w->hc, 1);
	static uint8_t bufs[8][4096];
	uint32_t seq = 0, out = 0, blocks = NS_SIZE / 4096;
	uint32_t slot_seq[8] = { 0 }, slot_lba[8] = { 0 };
	bool busy[8] = { false };
	struct ernic_host_cpl cpls[8];
	uint64_t deadline = ut_now_ns() + UT_TIMEOUT_NS;

	while ((!atomic_load(&w->stop) || out) && ut_now_ns() < deadline) {
		for (int s = 0; s < 8 && !atomic_load(&w->stop); s++) {
			struct nvme_sqe sqe;

			if (busy[s])
				continue;
			slot_seq[s] = ++seq;
			slot_lba[s] = (seq * 7919u) % blocks;
			memset(bufs[s], 0, sizeof(bufs[s]));
			memcpy(bufs[s], &slot_seq[s], sizeof(slot_seq[s]));
			ernic_host_rw_sqe(&sqe, NVME_CMD_WRITE, 1, slot_lba[s], 1);
			if (ernic_host_submit(qp, &sqe, bufs[s], 4096, (void *)(uintptr_t)(s + 1)))
				break;
			busy[s] = true;
			out++;
		}
		if (!ernic_host_qpair_connected(qp))
			w->lost = true;
		for (int n = ernic_host_poll(qp, cpls, 8), i = 0; i < n; i++) {
			int s = (int)(uintptr_t)cpls[i].ctx - 1;

			busy[s] = false;
			out--;
			if (cpls[i].status == 0) {
				atomic_fetch_add(&w->ok, 1);
				if (slot_seq[s] > w->acked[slot_lba[s]])
					w->acked[slot_lba[s]] = slot_seq[s];
			} else if (cpls[i].status == NVME_SC_INVALID_NS) {
				w->invalid_ns++;
			} else {
				w->other++;
			}
		}
		if (w->lost && !ernic_host_poll(qp, cpls, 0) && out == 0)
			break;
		if (w->lost && out)
			sched_yield();
	}
	return NULL;
}

/* Every acknowledged write is in the file: the block holds its sequence or a later one. */
static void check_acked_in_file(const char *path, const struct writer *w)
{
	int fd = open(path, O_RDONLY);
	uint32_t lost = 0;

	CU_ASSERT_FATAL(fd >= 0);
	for (uint32_t lba = 0; lba < NS_SIZE / 4096; lba++) {
		uint32_t v = 0;

		if (!w->acked[lba])
			continue;
		CU_ASSERT_EQUAL(pread(fd, &v, sizeof(v), (off_t)lba * 4096), (ssize_t)sizeof(v));
		lost += v < w->acked[lba];
	}
	close(fd);
	CU_ASSERT_EQUAL(lost, 0);
}

static void test_namespace_removed_under_a_write_loop_fails_new_io_and_loses_no_acknowledged_write(void)
{
	struct fx fx;
	static struct writer w;
	pthread_t th;
	char err[ERNIC_ERRLEN] = "";
	uint64_t ok_before;

	fx_up(&fx, true);
	memset(&w, 0, sizeof(w));
	w.hc = connect_to(&fx, 0, NQN_A, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(w.hc);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, writer_main, &w), 0);
	ut_sleep_ms(50);
	CU_ASSERT_EQUAL(ernic_target_remove_ns(fx.a, 1, err, sizeof(err)), 0);
	ok_before = atomic_load(&w.ok);
	ut_sleep_ms(50);
	atomic_store(&w.stop, true);
	pthread_join(th, NULL);
	CU_ASSERT(ok_before > 0);
	CU_ASSERT(w.invalid_ns > 0);
	CU_ASSERT_EQUAL(w.other, 0);
	CU_ASSERT_FALSE(w.lost);
	/* Nothing succeeds on the removed NSID: every later write was refused. */
	CU_ASSERT_EQUAL(io(w.hc, NVME_CMD_WRITE, 1, 0, (uint8_t[4096]){ 0 }), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(ernic_target_remove_ns(fx.a, 1, err, sizeof(err)), -ENOENT);
	check_acked_in_file(fx.path, &w);
	ernic_host_disconnect(w.hc);
	fx_down(&fx);
}

static void test_subsystem_removed_under_a_write_loop_drops_its_paths_and_loses_no_acknowledged_write(void)
{
	struct fx fx;
	static struct writer w;
	struct ernic_host_ctrlr *hb;
	pthread_t th;
	char err[ERNIC_ERRLEN] = "";
	static uint8_t page[4096];

	fx_up(&fx, true);
	memset(&w, 0, sizeof(w));
	w.hc = connect_to(&fx, 0, NQN_A, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(w.hc);
	hb = connect_to(&fx, 0, NQN_B, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(hb);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, writer_main, &w), 0);
	ut_sleep_ms(50);
	CU_ASSERT_EQUAL(ernic_nvmf_subsys_remove(fx.nvmf, NQN_A, err, sizeof(err)), 0);
	/* The host sees its queue pairs go once a poller's periodic check finds the controller fatal. */
	for (int i = 0; i < 500 && !atomic_load(&w.lost); i++)
		ut_sleep_ms(10);
	atomic_store(&w.stop, true);
	pthread_join(th, NULL);
	CU_ASSERT(w.ok > 0);
	CU_ASSERT_TRUE(w.lost);
	check_acked_in_file(fx.path, &w);
	/* Gone for new hosts; the other subsystem on the same port is untouched. */
	CU_ASSERT_PTR_NULL(connect_to(&fx, 0, NQN_A, err, sizeof(err)));
	CU_ASSERT_EQUAL(io(hb, NVME_CMD_WRITE, 1, 0, page), 0);
	CU_ASSERT_EQUAL(ernic_nvmf_subsys_remove(fx.nvmf, NQN_A, err, sizeof(err)), -ENOENT);
	ernic_host_disconnect(w.hc);
	ernic_host_disconnect(hb);
	fx_down(&fx);
}

/* A Flush as fdatasync() answers once writeback of the file has failed. */
static int eio_flush(struct ernic_ns *ns)
{
	(void)ns;
	return -EIO;
}

/* Namespace 1 of A again, in its file, its backend's Flush failing with EIO. */
static void add_ns_failing_flush(struct fx *fx, struct ernic_ns_ops *ops)
{
	struct ernic_backend_cfg cfg = ns_cfg(fx->path);
	char err[ERNIC_ERRLEN] = "";
	struct ernic_ns *ns;

	if (!ernic_target_ns(fx->a, 1))
		CU_ASSERT_EQUAL_FATAL(ernic_target_add_ns_at(fx->a, 1, &cfg, NULL, NULL, err, sizeof(err)), 0);
	ns = ernic_target_ns(fx->a, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ns);
	*ops = *ns->ops;
	ops->flush = eio_flush;
	ns->ops = ops;
}

/*
 * A removal whose final flush fails cannot be undone, so the namespace or
 * subsystem goes; but a write acknowledged before may not be on the medium,
 * so the caller (and ernicctl, through the control methods) hears of it,
 * naming the namespace and the error.
 */
static void test_a_failed_final_flush_is_reported_by_namespace_and_subsystem_remove(void)
{
	static struct ernic_ns_ops ops;
	struct ernic_control *ctl;
	struct fx fx;
	char err[ERNIC_ERRLEN] = "", req[256], *r;

	fx_up(&fx, true);
	add_ns_failing_flush(&fx, &ops);
	CU_ASSERT_EQUAL(ernic_target_remove_ns(fx.a, 1, err, sizeof(err)), -EIO);
	CU_ASSERT_STRING_EQUAL(err, "namespace 1 removed, but its final flush failed: Input/output error");
	CU_ASSERT_PTR_NULL(ernic_target_ns(fx.a, 1));

	CU_ASSERT_EQUAL_FATAL(ernic_control_create(fx.nvmf, NULL, &ctl), 0);
	add_ns_failing_flush(&fx, &ops);
	snprintf(req, sizeof(req), "{\"method\":\"namespace_remove\",\"params\":{\"nqn\":\"%s\",\"nsid\":1}}", NQN_A);
	r = ernic_control_request(ctl, req);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r, "{\"error\":{\"code\":5,\"message\":"
				  "\"namespace 1 removed, but its final flush failed: Input/output error\"}}");
	free(r);
	CU_ASSERT_PTR_NULL(ernic_target_ns(fx.a, 1));

	add_ns_failing_flush(&fx, &ops);
	snprintf(req, sizeof(req), "{\"method\":\"subsystem_remove\",\"params\":{\"nqn\":\"%s\"}}", NQN_A);
	r = ernic_control_request(ctl, req);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r, "{\"error\":{\"code\":5,\"message\":\"nqn '" NQN_A
				  "': namespace 1 removed, but its final flush failed: Input/output error\"}}");
	free(r);
	CU_ASSERT_PTR_NULL(ernic_nvmf_subsys_get(fx.nvmf, NQN_A));
	ernic_control_destroy(ctl);
	fx_down(&fx);
}

/*
 * A removed subsystem's memory goes with the last of its references: the
 * queues still open on it and a lookup taken before the removal. Before,
 * every removed subsystem stayed until the set was destroyed (2,000 add and
 * remove cycles through the control socket cost ernicd 105 MB).
 */
static void test_removed_subsystem_lives_until_its_last_queue_and_lookup_are_gone(void)
{
	struct fx fx;
	struct ernic_host_ctrlr *hc;
	struct ernic_target *held;
	char err[ERNIC_ERRLEN] = "";
	uint32_t with_queues;

	fx_up(&fx, false);
	/* The table's reference alone before a host comes. */
	CU_ASSERT_EQUAL(atomic_load(&fx.a->refs), 1);
	hc = connect_to(&fx, 0, NQN_A, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
	held = ernic_nvmf_subsys_get(fx.nvmf, NQN_A);
	CU_ASSERT_PTR_EQUAL_FATAL(held, fx.a);
	with_queues = atomic_load(&held->refs);
	/* Table, lookup, and the admin and I/O queues. */
	CU_ASSERT_EQUAL(with_queues, 4);
	CU_ASSERT_EQUAL(ernic_nvmf_subsys_remove(fx.nvmf, NQN_A, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(atomic_load(&held->refs), with_queues - 1);
	CU_ASSERT_PTR_NULL(ernic_nvmf_subsys_get(fx.nvmf, NQN_A));
	CU_ASSERT_STRING_EQUAL(ernic_target_subnqn(held), NQN_A);
	ernic_host_disconnect(hc);
	CU_ASSERT_EQUAL(atomic_load(&held->refs), 1);
	/* The last reference: freed here (ASan reports any later use, LeakSanitizer a reference never put). */
	ernic_target_put(held);
	/* Add and remove cycles leave nothing behind. */
	for (int i = 0; i < 100; i++) {
		struct ernic_target_opts a = { .subnqn = NQN_A };
		struct ernic_backend_cfg cfg = ns_cfg(NULL);

		CU_ASSERT_EQUAL_FATAL(ernic_nvmf_subsys_add(fx.nvmf, &a, &fx.a, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(ernic_target_add_ns_at(fx.a, 1, &cfg, NULL, NULL, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(ernic_nvmf_subsys_remove(fx.nvmf, NQN_A, err, sizeof(err)), 0);
	}
	fx_down(&fx);
}

/* ====================================================================== ANA */

static void test_identify_reports_ana_and_shared_namespaces_for_multipath(void)
{
	struct fx fx;
	struct ernic_host_ctrlr *ha;
	char err[ERNIC_ERRLEN] = "";
	const struct nvme_id_ctrl *id;

	fx_up(&fx, false);
	ha = connect_to(&fx, 1, NQN_A, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(ha);
	id = ernic_host_id_ctrl(ha);
	CU_ASSERT_EQUAL(id->cmic & NVME_CTRL_CMIC_ANA, NVME_CTRL_CMIC_ANA);
	CU_ASSERT_EQUAL(id->cmic & NVME_CTRL_CMIC_MULTI_CTRL, NVME_CTRL_CMIC_MULTI_CTRL);
	CU_ASSERT_EQUAL(id->anacap & NVME_CTRL_ANACAP_ALL_STATES, NVME_CTRL_ANACAP_ALL_STATES);
	CU_ASSERT_EQUAL(id->anagrpmax, ERNIC_NVMF_MAX_ANA_GROUPS);
	CU_ASSERT_EQUAL(id->nanagrpid, ERNIC_NVMF_MAX_ANA_GROUPS);
	CU_ASSERT(id->mnan >= ERNIC_MAX_NS);
	CU_ASSERT_EQUAL(id->nn, ERNIC_MAX_NS);
	CU_ASSERT(id->oaes & NVME_CTRL_OAES_ANA_CHANGE);
	ernic_host_disconnect(ha);
	fx_down(&fx);
}

static void test_ana_state_change_is_announced_logged_and_fails_io_on_that_path_only(void)
{
	struct fx fx;
	struct ernic_host_ctrlr *h0, *h1;
	char err[ERNIC_ERRLEN] = "";
	static uint8_t page[4096];
	const struct nvme_ana_log_hdr *hdr = (const void *)page;
	const struct nvme_ana_group_desc *d = (const void *)(page + sizeof(*hdr));
	uint64_t chgcnt;
	uint32_t dw0 = 0;

	fx_up(&fx, false);
	h0 = connect_to(&fx, 0, NQN_A, err, sizeof(err));
	h1 = connect_to(&fx, 1, NQN_A, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(h0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h1);
	CU_ASSERT_EQUAL(get_page(h0, NVME_ADMIN_GET_LOG_PAGE, NVME_LOG_ANA, 0, page, sizeof(page)), 0);
	CU_ASSERT_EQUAL(hdr->ngrps, 1);
	CU_ASSERT_EQUAL(d->grpid, 1);
	CU_ASSERT_EQUAL(d->state, NVME_ANA_OPTIMIZED);
	CU_ASSERT_EQUAL(d->nnsids, 1);
	CU_ASSERT_EQUAL(((const uint32_t *)(d + 1))[0], 1);
	chgcnt = hdr->chgcnt;

	CU_ASSERT_EQUAL(ut_admin(h0, NVME_ADMIN_SET_FEATURES, NVME_FEAT_ASYNC_EVENT, NVME_AEC_ANA_CHANGE, NULL), 0);
	CU_ASSERT_EQUAL(ut_admin(h1, NVME_ADMIN_SET_FEATURES, NVME_FEAT_ASYNC_EVENT, NVME_AEC_ANA_CHANGE, NULL), 0);
	aer_submit(h0, (void *)0xA0);
	aer_submit(h1, (void *)0xA1);
	CU_ASSERT_EQUAL(ernic_nvmf_ana_set(fx.nvmf, fx.portid[0], 1, NVME_ANA_INACCESSIBLE, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ut_wait_cpl(ernic_host_admin_qpair(h0), (void *)0xA0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_ANA_CHANGE, NVME_LOG_ANA));
	CU_ASSERT_EQUAL(get_page(h0, NVME_ADMIN_GET_LOG_PAGE, NVME_LOG_ANA, 0, page, sizeof(page)), 0);
	CU_ASSERT_EQUAL(d->state, NVME_ANA_INACCESSIBLE);
	CU_ASSERT(hdr->chgcnt > chgcnt);
	/* The path through the other port is unchanged, and was not told anything. */
	CU_ASSERT_EQUAL(get_page(h1, NVME_ADMIN_GET_LOG_PAGE, NVME_LOG_ANA, 0, page, sizeof(page)), 0);
	CU_ASSERT_EQUAL(d->state, NVME_ANA_OPTIMIZED);
	CU_ASSERT_EQUAL(ernic_host_poll(ernic_host_admin_qpair(h1), &(struct ernic_host_cpl){ 0 }, 1), 0);
	CU_ASSERT_EQUAL(io(h0, NVME_CMD_WRITE, 1, 0, page), NVME_SC_ANA_INACCESSIBLE);
	CU_ASSERT_EQUAL(io(h1, NVME_CMD_WRITE, 1, 0, page), 0);
	/* Groups only (RGO): the descriptor without its NSIDs */
	CU_ASSERT_EQUAL(get_page(h0, NVME_ADMIN_GET_LOG_PAGE, NVME_LOG_ANA | NVME_LOG_ANA_RGO, 0, page,
				 sizeof(page)), 0);
	CU_ASSERT_EQUAL(hdr->ngrps, 1);
	CU_ASSERT_EQUAL(d->nnsids, 0);
	CU_ASSERT_EQUAL(ernic_nvmf_ana_set(fx.nvmf, fx.portid[0], 1, NVME_ANA_OPTIMIZED, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(io(h0, NVME_CMD_WRITE, 1, 0, page), 0);
	CU_ASSERT_EQUAL(ernic_nvmf_ana_set(fx.nvmf, fx.portid[0], 1, 7, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(ernic_nvmf_ana_set(fx.nvmf, 99, 1, NVME_ANA_OPTIMIZED, err, sizeof(err)), -ENOENT);
	ernic_host_disconnect(h0);
	ernic_host_disconnect(h1);
	fx_down(&fx);
}

/*
 * One ANA Change notice until the host reads the ANA log without RAE (Base
 * 2.0 5.2), as for Namespace Attribute notices: a second change before the
 * read completes no AER; once read, the next change does.
 */
static void test_ana_change_notice_is_masked_until_the_ana_log_is_read(void)
{
	struct fx fx;
	struct ernic_host_ctrlr *h;
	char err[ERNIC_ERRLEN] = "";
	struct ernic_host_cpl cpl;
	static uint8_t page[4096];
	uint32_t dw0 = 0;

	fx_up(&fx, false);
	h = connect_to(&fx, 0, NQN_A, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	CU_ASSERT_EQUAL(ut_admin(h, NVME_ADMIN_SET_FEATURES, NVME_FEAT_ASYNC_EVENT, NVME_AEC_ANA_CHANGE, NULL), 0);
	aer_submit(h, (void *)0xA0);
	CU_ASSERT_EQUAL(ernic_nvmf_ana_set(fx.nvmf, fx.portid[0], 1, NVME_ANA_NONOPTIMIZED, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ut_wait_cpl(ernic_host_admin_qpair(h), (void *)0xA0, &dw0), 0);
	aer_submit(h, (void *)0xA1);
	CU_ASSERT_EQUAL(ernic_nvmf_ana_set(fx.nvmf, fx.portid[0], 1, NVME_ANA_OPTIMIZED, err, sizeof(err)), 0);
	ut_sleep_ms(50);
	CU_ASSERT_EQUAL(ernic_host_poll(ernic_host_admin_qpair(h), &cpl, 1), 0);
	CU_ASSERT_EQUAL(get_page(h, NVME_ADMIN_GET_LOG_PAGE, NVME_LOG_ANA, 0, page, sizeof(page)), 0);
	CU_ASSERT_EQUAL(ernic_nvmf_ana_set(fx.nvmf, fx.portid[0], 1, NVME_ANA_NONOPTIMIZED, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ut_wait_cpl(ernic_host_admin_qpair(h), (void *)0xA1, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_ANA_CHANGE, NVME_LOG_ANA));
	ernic_host_disconnect(h);
	fx_down(&fx);
}

/*
 * In a set NN is every NSID slot: NSID 2 with nothing attached is inactive,
 * and the Error Information entry of a path error keeps DNR clear, as its
 * completion did, so a multipath host's view of it matches.
 */
static void test_inactive_nsid_reads_as_zeroes_and_a_path_error_is_logged_without_dnr(void)
{
	struct fx fx;
	struct ernic_host_ctrlr *h;
	char err[ERNIC_ERRLEN] = "";
	static uint8_t page[4096];
	const struct nvme_error_log_entry *e = (const void *)page;
	bool zero = true;

	fx_up(&fx, false);
	h = connect_to(&fx, 0, NQN_A, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	CU_ASSERT_EQUAL(ernic_host_id_ctrl(h)->nn, ERNIC_MAX_NS);
	memset(page, 0xEE, sizeof(page));
	CU_ASSERT_EQUAL(get_page(h, NVME_ADMIN_IDENTIFY, NVME_ID_CNS_NS, 2, page, sizeof(page)), 0);
	for (size_t i = 0; i < sizeof(page); i++)
		zero &= page[i] == 0;
	CU_ASSERT_TRUE(zero);
	CU_ASSERT_EQUAL(ernic_nvmf_ana_set(fx.nvmf, fx.portid[0], 1, NVME_ANA_INACCESSIBLE, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(io(h, NVME_CMD_READ, 1, 0, page), NVME_SC_ANA_INACCESSIBLE);
	CU_ASSERT_EQUAL(get_page(h, NVME_ADMIN_GET_LOG_PAGE, NVME_LOG_ERROR, 0, page, 64), 0);
	CU_ASSERT_EQUAL(nvme_sf_status(e->status_field), NVME_SC_ANA_INACCESSIBLE);
	CU_ASSERT_FALSE(nvme_sf_dnr(e->status_field));
	ernic_host_disconnect(h);
	fx_down(&fx);
}

/* A resize past ERNIC_NS_SIZE_MAX is refused, naming the size: near 2^64 it used to map nothing and say yes. */
static void test_resize_beyond_the_largest_namespace_is_refused(void)
{
	struct fx fx;
	char err[ERNIC_ERRLEN] = "";

	fx_up(&fx, false);
	CU_ASSERT_EQUAL(ernic_target_resize_ns(fx.a, 1, 18446744073709551104ull, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "size 18446744073709551104"));
	CU_ASSERT_EQUAL(ernic_target_resize_ns(fx.a, 1, ERNIC_NS_SIZE_MAX + 4096, err, sizeof(err)), -EINVAL);
	fx_down(&fx);
}

/*
 * What a host prints is checked before a subsystem exists: an NQN of 1..223
 * bytes without control characters, SN and MN printable ASCII (a newline in
 * one used to reach Identify and every discovery log as it was).
 */
static void test_subsystem_names_a_host_would_print_badly_are_refused(void)
{
	static const char *const hosts[] = { "nqn.h:1", "nqn.h:\r2", NULL };
	const struct {
		struct ernic_target_opts opts;
		const char *why;
	} bad[] = {
		{ { .subnqn = "" }, "nqn '': must be 1..223" },
		{ { .subnqn = "nqn.2026-11.io.ernic:a\nb" }, "nqn 'nqn.2026-11.io.ernic:a\nb': must not contain control" },
		{ { .subnqn = "nqn.2026-11.io.ernic:a\x7f" }, "must not contain control" },
		{ { .subnqn = "nqn.2026-11.io.ernic:\xff\xfe" }, "must be UTF-8" },
		{ { .subnqn = "nqn.2026-11.io.ernic:\xc3" }, "must be UTF-8" },
		{ { .subnqn = NQN_A "x", .serial = "SN\t1" }, "serial 'SN\t1': at most 20 printable ASCII" },
		{ { .subnqn = NQN_A "x", .serial = "123456789012345678901" }, "serial '123456789012345678901'" },
		{ { .subnqn = NQN_A "x", .model = "model \xc3\xa9" }, "model 'model \xc3\xa9': at most 40 printable" },
		{ { .subnqn = NQN_A "x", .allow_hosts = hosts },
		  "allow_hosts 'nqn.h:\r2': must not contain control" },
	};
	struct fx fx;
	char err[ERNIC_ERRLEN];

	fx_up(&fx, false);
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(bad); i++) {
		struct ernic_target *tgt = NULL;

		err[0] = '\0';
		CU_ASSERT_EQUAL(ernic_nvmf_subsys_add(fx.nvmf, &bad[i].opts, &tgt, err, sizeof(err)), -EINVAL);
		CU_ASSERT_PTR_NULL(tgt);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].why));
	}
	/* Nothing was added, and the same names made printable are taken. */
	CU_ASSERT_PTR_NULL(ernic_nvmf_subsys_get(fx.nvmf, "nqn.2026-11.io.ernic:a\nb"));
	CU_ASSERT_EQUAL(ernic_nvmf_subsys_add(fx.nvmf,
					      &(struct ernic_target_opts){ .subnqn = NQN_A "x", .serial = "SN 1",
									   .model = "model e" },
					      NULL, err, sizeof(err)),
			0);
	/* UTF-8 beyond ASCII is an NQN's to use. */
	CU_ASSERT_EQUAL(ernic_nvmf_subsys_add(fx.nvmf, &(struct ernic_target_opts){ .subnqn = NQN_A "\xc3\xa9" }, NULL,
					      err, sizeof(err)),
			0);
	fx_down(&fx);
}

/* A TCP port number free on loopback right now. */
static uint16_t free_tcp_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint16_t port = 0;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) && !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/*
 * ernicd --transport rdma records its RDMA CM port in the set; a control
 * plane listener (NVMe/TCP) at the same address and number is another port,
 * not that record, which the control plane never opened (it used to be taken
 * for one of its own listeners and dereferenced as NULL).
 */
static void test_control_listener_at_an_rdma_ports_address_is_a_tcp_port_of_its_own(void)
{
	struct ernic_backend_cfg cfg;
	struct ernic_nvmf *nvmf;
	struct ernic_control *ctl;
	char err[ERNIC_ERRLEN] = "", req[256], want[64];
	uint16_t rdma_portid = 0, port = free_tcp_port();
	char svc[8], *r;

	CU_ASSERT_FATAL(port != 0);
	snprintf(svc, sizeof(svc), "%u", port);
	ernic_backend_cfg_init(&cfg);
	cfg.size = 1u << 20;
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_create(&cfg, &nvmf, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_subsys_add(nvmf, &(struct ernic_target_opts){ .subnqn = NQN_A }, NULL, err,
						    sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_subsys_add(nvmf, &(struct ernic_target_opts){ .subnqn = NQN_B }, NULL, err,
						    sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_nvmf_port_add(nvmf, NVMF_TRTYPE_RDMA, "127.0.0.1", svc, &rdma_portid, err,
						  sizeof(err)), 0);
	CU_ASSERT_EQUAL(ernic_nvmf_link(nvmf, rdma_portid, NQN_A, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_control_create(nvmf, NULL, &ctl), 0);
	snprintf(req, sizeof(req),
		 "{\"method\":\"listener_add\",\"params\":{\"nqn\":\"%s\",\"traddr\":\"127.0.0.1\",\"trsvcid\":%u}}",
		 NQN_B, port);
	r = ernic_control_request(ctl, req);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	snprintf(want, sizeof(want), "\"trsvcid\":\"%u\"", port);
	CU_ASSERT_PTR_NOT_NULL(strstr(r, want));
	CU_ASSERT_PTR_NULL(strstr(r, "error"));
	CU_ASSERT_NOT_EQUAL(ernic_nvmf_port_find(nvmf, NVMF_TRTYPE_TCP, "127.0.0.1", svc), rdma_portid);
	CU_ASSERT_EQUAL(ernic_nvmf_port_find(nvmf, NVMF_TRTYPE_RDMA, "127.0.0.1", svc), rdma_portid);
	free(r);
	ernic_control_destroy(ctl);
	ernic_nvmf_destroy(nvmf);
}

static void test_removing_a_listener_fails_the_controllers_reached_through_it_only(void)
{
	struct fx fx;
	struct ernic_host_ctrlr *h0, *h1;
	char err[ERNIC_ERRLEN] = "";
	static uint8_t page[4096];
	uint64_t deadline;

	fx_up(&fx, false);
	h0 = connect_to(&fx, 0, NQN_A, err, sizeof(err));
	h1 = connect_to(&fx, 1, NQN_A, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(h0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h1);
	CU_ASSERT_EQUAL(ernic_nvmf_port_remove(fx.nvmf, fx.portid[1], err, sizeof(err)), 0);
	deadline = ut_now_ns() + UT_TIMEOUT_NS;
	while (ernic_host_qpair_connected(ernic_host_io_qpair(h1, 1)) && ut_now_ns() < deadline)
		ut_sleep_ms(5);
	CU_ASSERT_FALSE(ernic_host_qpair_connected(ernic_host_io_qpair(h1, 1)));
	CU_ASSERT_TRUE(ernic_host_qpair_connected(ernic_host_io_qpair(h0, 1)));
	CU_ASSERT_EQUAL(io(h0, NVME_CMD_WRITE, 1, 0, page), 0);
	CU_ASSERT_EQUAL(ernic_nvmf_port_remove(fx.nvmf, fx.portid[1], err, sizeof(err)), -ENOENT);
	ernic_host_disconnect(h0);
	ernic_host_disconnect(h1);
	fx_down(&fx);
}


/* ----------------------------------------------------- a port's places */

/*
 * place.h's rules without a transport: the oldest connection that is no
 * queue yet is evicted, never a queue or one whose Connect runs; an evicted
 * connection's Connect is not claimed; no more evicted than places.
 */
static void test_places_evict_the_oldest_that_is_no_queue_yet(void)
{
	struct ernic_places ps = { .max = 3 };
	struct ernic_place a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };

	ernic_places_take_locked(&ps, &a);
	ernic_places_take_locked(&ps, &b);
	ernic_places_take_locked(&ps, &c);
	CU_ASSERT_EQUAL(ernic_places_held(&ps), 3);
	/* a is a queue, b's Connect runs: c is the oldest that may go. */
	CU_ASSERT_TRUE(ernic_place_claim_locked(&a));
	ernic_place_connect_done_locked(&a, true);
	CU_ASSERT_TRUE(ernic_place_claim_locked(&b));
	CU_ASSERT_PTR_EQUAL(ernic_places_make_room_locked(&ps), &c);
	CU_ASSERT_TRUE(c.evicted);
	CU_ASSERT_EQUAL(ernic_places_held(&ps), 2);
	/* c's Connect, arriving late, does not run. */
	CU_ASSERT_FALSE(ernic_place_claim_locked(&c));
	CU_ASSERT_FALSE(c.connecting);
	ernic_places_take_locked(&ps, &d);
	/* Every place a queue's or claimed: none to evict. */
	CU_ASSERT_TRUE(ernic_place_claim_locked(&d));
	CU_ASSERT_PTR_NULL(ernic_places_make_room_locked(&ps));
	/* b's Connect failed: b may go again, d's still runs. */
	ernic_place_connect_done_locked(&b, false);
	CU_ASSERT_FALSE(b.connected);
	CU_ASSERT_PTR_EQUAL(ernic_places_make_room_locked(&ps), &b);
	/* c and b evicted, not closed yet. */
	CU_ASSERT_EQUAL(ps.nr, 4);
	CU_ASSERT_EQUAL(ps.nr_evicted, 2);
	ernic_places_release_locked(&ps, &c);
	ernic_places_release_locked(&ps, &b);
	CU_ASSERT_EQUAL(ps.nr, 2);
	CU_ASSERT_EQUAL(ps.nr_evicted, 0);
	CU_ASSERT_PTR_EQUAL(ps.head, &d);
	CU_ASSERT_PTR_EQUAL(d.next, &a);
	CU_ASSERT_PTR_NULL(a.next);
}

static void test_places_evict_no_more_than_there_are_places(void)
{
	struct ernic_place p[4] = { 0 };
	struct ernic_places ps = { .max = 2 };

	for (int i = 0; i < 4; i++)
		ernic_places_take_locked(&ps, &p[i]);
	/* Oldest first: p[0], then p[1]; p[2] would be a third evicted of two places. */
	CU_ASSERT_PTR_EQUAL(ernic_places_make_room_locked(&ps), &p[0]);
	CU_ASSERT_PTR_EQUAL(ernic_places_make_room_locked(&ps), &p[1]);
	CU_ASSERT_PTR_NULL(ernic_places_make_room_locked(&ps));
	CU_ASSERT_FALSE(p[2].evicted);
	ernic_places_release_locked(&ps, &p[0]);
	CU_ASSERT_PTR_EQUAL(ernic_places_make_room_locked(&ps), &p[2]);
}

static void test_places_discovery_takes_at_most_half(void)
{
	struct ernic_place p[4] = { 0 };
	struct ernic_places ps = { .max = 4 }, one = { .max = 1 };

	for (int i = 0; i < 4; i++)
		ernic_places_take_locked(&ps, &p[i]);
	CU_ASSERT_EQUAL(ernic_place_admit_discovery_locked(&ps, &p[0]), NVME_SC_SUCCESS);
	/* A second discovery Connect on the same connection keeps its one place. */
	CU_ASSERT_EQUAL(ernic_place_admit_discovery_locked(&ps, &p[0]), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(ernic_place_admit_discovery_locked(&ps, &p[1]), NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(ps.nr_discovery, 2);
	CU_ASSERT_EQUAL(ernic_place_admit_discovery_locked(&ps, &p[2]), NVME_SC_CONNECT_CTRL_BUSY);
	CU_ASSERT_FALSE(p[2].discovery);
	ernic_places_release_locked(&ps, &p[0]);
	CU_ASSERT_EQUAL(ps.nr_discovery, 1);
	CU_ASSERT_EQUAL(ernic_place_admit_discovery_locked(&ps, &p[2]), NVME_SC_SUCCESS);
	/* A port of one place still lets one discovery queue in. */
	ernic_places_take_locked(&one, &p[3]);
	CU_ASSERT_EQUAL(ernic_place_admit_discovery_locked(&one, &p[3]), NVME_SC_SUCCESS);
}

UT_MAIN("nvmf", UT_CASE(test_connect_on_a_shared_port_joins_the_subsystem_its_subnqn_names),
	UT_CASE(test_connect_to_a_subsystem_not_linked_to_the_port_is_refused),
	UT_CASE(test_discovery_log_lists_each_subsystem_at_each_linked_port_and_genctr_moves),
	UT_CASE(test_discovery_entries_offer_sq_flow_control_disable),
	UT_CASE(test_namespace_added_at_run_time_is_announced_listed_and_usable),
	UT_CASE(test_resize_moves_the_lba_range_and_is_announced),
	UT_CASE(test_a_ram_namespace_cut_inside_a_page_reads_zeroes_when_grown_again),
	UT_CASE(test_namespace_removed_under_a_write_loop_fails_new_io_and_loses_no_acknowledged_write),
	UT_CASE(test_subsystem_removed_under_a_write_loop_drops_its_paths_and_loses_no_acknowledged_write),
	UT_CASE(test_a_failed_final_flush_is_reported_by_namespace_and_subsystem_remove),
	UT_CASE(test_removed_subsystem_lives_until_its_last_queue_and_lookup_are_gone),
	UT_CASE(test_identify_reports_ana_and_shared_namespaces_for_multipath),
	UT_CASE(test_ana_state_change_is_announced_logged_and_fails_io_on_that_path_only),
	UT_CASE(test_ana_change_notice_is_masked_until_the_ana_log_is_read),
	UT_CASE(test_inactive_nsid_reads_as_zeroes_and_a_path_error_is_logged_without_dnr),
	UT_CASE(test_control_listener_at_an_rdma_ports_address_is_a_tcp_port_of_its_own),
	UT_CASE(test_resize_beyond_the_largest_namespace_is_refused),
	UT_CASE(test_subsystem_names_a_host_would_print_badly_are_refused),
	UT_CASE(test_removing_a_listener_fails_the_controllers_reached_through_it_only),
	UT_CASE(test_places_evict_the_oldest_that_is_no_queue_yet),
	UT_CASE(test_places_evict_no_more_than_there_are_places),
	UT_CASE(test_places_discovery_takes_at_most_half))
