/* SPDX-License-Identifier: MIT */
/*
 * transport_rdma.c - NVMe/RDMA (RDMA Transport Binding 1.0) over real verbs,
 * the third port of the controller core.
 *
 * One RDMA CM connection is one NVMe queue: a reliable connected queue pair
 * with its own protection domain, completion queue and completion channel,
 * served by one thread. Its receive queue holds one buffer per submission
 * queue entry the host announced (HSQSIZE + 1): the 64-byte command and, on
 * an I/O queue, the port's in-capsule data (none by default: IOCCSZ 4, as the
 * seed's RNIC; 4096 gives nvmet-rdma's IOCCSZ 260; the admin queue takes
 * none, as on nvmet-rdma). Until its Connect succeeds only the first of them
 * is registered and posted: a host sends nothing else on a queue pair before
 * that Connect is answered, and the rest are posted before the answer goes.
 * (A host that sends more meets receiver-not-ready until then over InfiniBand
 * and RoCE; iWARP ends its connection instead.) So a queue
 * pair that never Connects pins one receive buffer, not HSQSIZE + 1 of them:
 * 16 KiB where they would be 2 MiB at 16 KiB of in-capsule data and
 * HSQSIZE 127. Each capsule becomes a
 * struct ernic_req handed to ernic_req_exec(), as on the other ports; the
 * only thing this file adds is moving data:
 *
 *  - host to controller: in-capsule data (SGL Data Block, offset subtype)
 *    came with the command; otherwise, before exec, an RDMA READ from the
 *    host's region (the keyed SGL's address and rkey) into the slot's bounce
 *    buffer, but only for a command the core would take (ernic_req_check());
 *    the command runs when the READ completes.
 *  - controller to host: map_data hands the core the slot's bounce buffer,
 *    which then goes out as an RDMA WRITE chained before the response SEND;
 *    RC ordering puts the data in host memory before the completion.
 *
 * A slot's bounce buffer holds one MDTS transfer only once the queue serves a
 * controller: until its Connect succeeds, the only command it takes is that
 * Connect, so each slot has a Connect data's worth (1 KiB) registered at
 * accept, and the queue registers the full ones after the Connect. A queue
 * pair that never Connects pins (HSQSIZE+1) x 2 KiB of them, 256 KiB at
 * HSQSIZE 127 where MDTS transfers would pin 32 MiB. A slot takes the queue's
 * current buffers when it is taken from the free list: one still busy keeps
 * what it had. The full ones are reserved against the port's budget
 * (ernic_rdma_port_opts.buf_budget) before the Connect runs, and a Connect
 * they would not fit is answered Connect Controller Busy without running:
 * the controller core never has it, so nothing is undone. (The rest of the
 * receive queue, registered after the Connect, is not counted: at most
 * HSQSIZE x 16 KiB of in-capsule data, against 2 x HSQSIZE x 128 KiB.)
 *
 * The key, the bounds and the rights are the host RNIC's to check: a bad one
 * fails the READ or WRITE with a remote access error and, as on any RNIC, the
 * queue pair with it; the queue is then torn down (nvmet-rdma does the same).
 * Request slots are twice the receive buffers, as nvmet-rdma's: a slot stays
 * busy until its response SEND completes, and the host may already reuse the
 * command identifier before that.
 *
 * The queue's thread posts its work requests once per batch of completions
 * it polled, in one ibv_post_send() (nvmf_rdma_post_batch()).
 *
 * The free list is under a lock because a held AER completes from whichever
 * thread raised the event; everything else runs on the queue's thread.
 *
 * Sampled commands (ernicd --trace) are stamped at the verbs events: the
 * receive completion polled, the RDMA READ of a write posted and completed,
 * the core's exec and completion (the response queued for the batch), the
 * RDMA WRITE of a read's data and the response SEND posted (one post), the
 * WRITE's completion (signaled for a sampled command only) and the SEND's.
 * The record is complete when the SEND's completion frees the slot.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "ernic/rdma.h"
#include "log.h"
#include "place.h"
#include "rdma.h"
#include "trace.h"

/* A command's bounce buffer: one MDTS transfer. */
#define NVMF_RDMA_BUF_SIZE ERNIC_MAX_XFER
/* ... and a slot's before the queue is Connected: the Connect's data. */
#define NVMF_RDMA_CONNECT_BUF_SIZE ((uint32_t)sizeof(struct nvmf_connect_data))
/* Why a queue closes when its full bounce buffers cannot be had after its Connect */
#define NVMF_RDMA_NO_BUFFERS "no memory to register the queue's data buffers"
#define NVMF_RDMA_CQ_BATCH 16
#define NVMF_RDMA_BUSY_POLL_NS 50000ull
/* How often a queue wakes to check its controller, its idle timeout and shutdown, and the CM thread keep-alive. */
#define NVMF_RDMA_POLL_MS 100
/*
 * CM events the port's thread handles before it reaps closed queue pairs and
 * runs the keep-alive timers again: a host sending connection requests as
 * fast as they are set up would otherwise keep the channel from ever being
 * empty, and closed queue pairs (each evicted one among them) unreaped.
 */
#define NVMF_RDMA_CM_EVENT_BATCH 16
/* Why a queue of a failed controller closes (ERNIC_EXEC_CTRLR_FATAL). */
#define NVMF_RDMA_CTRLR_FATAL "controller fatal (keep-alive timeout or admin queue lost)"
/* Why a deleted queue closes when the host never took the Disconnect's answer (no receive posted for it). */
#define NVMF_RDMA_DISCONNECT_UNTAKEN "the Disconnect's answer was not taken within the idle timeout"
/* Why a queue pair closes that the port gave to a newer connection request (nvmf_rdma_port_make_room_locked()). */
#define NVMF_RDMA_EVICTED "its place given to a newer connection request before it became a queue"
#define NVMF_RDMA_LISTEN_BACKLOG 128

/* What a work request was, in the low bits of its wr_id (slots are 8-byte aligned). */
enum nvmf_rdma_wr_kind {
	NVMF_RDMA_WR_RECV = 0,
	NVMF_RDMA_WR_READ = 1,
	NVMF_RDMA_WR_WRITE = 2,
	NVMF_RDMA_WR_SEND = 3,
};
#define NVMF_RDMA_WR_ID(ptr, kind) ((uint64_t)(uintptr_t)(ptr) | (kind))
#define NVMF_RDMA_WR_PTR(id) ((void *)(uintptr_t)((id) & ~(uint64_t)7))
#define NVMF_RDMA_WR_KIND(id) ((enum nvmf_rdma_wr_kind)((id) & 7))
/* The kinds whose completion, or failure to post, frees the slot (a WRITE is always followed by its SEND). */
#define NVMF_RDMA_WR_ENDS_SLOT(kind) ((kind) == NVMF_RDMA_WR_READ || (kind) == NVMF_RDMA_WR_SEND)

struct nvmf_rdma_queue;

struct nvmf_rdma_req {
	struct ernic_req req;
	struct nvmf_rdma_queue *q;
	struct nvme_cqe *rsp; /* registered, what the SEND carries */
	uint8_t *buf;	      /* registered bounce buffer of buf_size bytes (taken in nvmf_rdma_req_get()) */
	uint32_t buf_size;    /* NVMF_RDMA_BUF_SIZE, or NVMF_RDMA_CONNECT_BUF_SIZE before the queue's Connect */
	uint32_t buf_lkey;
	uint32_t h2c_len;     /* bytes of host data in buf: what came in the capsule, or what the RDMA READ brought */
	uint32_t c2h_len;     /* bytes map_data gave the core to fill, to RDMA WRITE */
	bool closes_queue;    /* answered after a Disconnect deleted the queue: the queue goes once this is sent */
	/*
	 * The command's work requests: the RDMA READ of its data, or the RDMA
	 * WRITE of it chained before the response SEND. Built here, not on the
	 * stack, because the queue's thread posts them with the rest of its
	 * batch (nvmf_rdma_post_batch()).
	 */
	struct ibv_sge data_sge, rsp_sge;
	struct ibv_send_wr data_wr, rsp_wr;
	/* A sampled command's stamps (req.stamps points here); untouched otherwise */
	struct ernic_stage_stamps stamps;
	struct ernic_trace_rec rec;
	struct nvmf_rdma_req *next_free;
} __attribute__((aligned(8)));

struct nvmf_rdma_recv {
	struct nvme_sqe *capsule; /* registered, recv_size bytes: the command, then in-capsule data */
} __attribute__((aligned(8)));

struct nvmf_rdma_queue {
	struct ernic_rdma_port *port;
	struct ernic_sq sq;
	struct rdma_cm_id *cm_id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	/*
	 * capsule_mr: what receives are posted with: the first receive buffer
	 * until the Connect, then all of them (first_capsule_mr keeps the first
	 * registration, which a receive posted before may still name).
	 */
	struct ibv_mr *capsule_mr, *first_capsule_mr, *rsp_mr, *connect_buf_mr, *buf_mr;
	uint8_t *capsules;  /* nr_recv receive buffers of recv_size bytes (mmap: untouched ones cost nothing) */
	size_t capsules_len;
	uint32_t recv_size; /* a command, and the port's in-capsule data on an I/O queue */
	struct nvme_cqe *rsps;
	uint8_t *connect_bufs; /* nr_reqs of NVMF_RDMA_CONNECT_BUF_SIZE, registered at accept */
	uint8_t *bufs;	       /* nr_reqs of NVMF_RDMA_BUF_SIZE, registered after the Connect (buf_mr) */
	size_t bufs_len;
	uint64_t buf_reserved; /* of the port's budget, for bufs: from before the Connect ran until the queue goes */
	struct nvmf_rdma_recv *recvs;
	uint32_t nr_recv; /* HSQSIZE + 1, the CRQSIZE we accepted */
	struct nvmf_rdma_req *reqs;
	uint32_t nr_reqs;

	pthread_mutex_t lock; /* the free list */
	struct nvmf_rdma_req *free_reqs;

	uint16_t cm_qid; /* from the CM private data */
	struct ernic_place place; /* on the port's places (place.h) */
	/*
	 * While the queue serves no controller (not yet Connected, or deleted
	 * by a Disconnect), when it closes; 0 while it serves one. The queue's
	 * thread only.
	 */
	uint64_t idle_deadline_ns;
	uint16_t qid, cntlid;
	char hostnqn[NVMF_NQN_SIZE * 4]; /* escaped for the log by ernic_log_str() */
	char peer[INET6_ADDRSTRLEN + 8];
	_Atomic(const char *) close_reason; /* the first reason given */

	pthread_t thread;
	/* Work requests the queue's thread built since it last posted (nvmf_rdma_post_batch()) */
	struct ibv_send_wr *batch_head, **batch_tail;
	atomic_bool disconnect; /* the CM or the queue itself says: tear down */
	struct ernic_trace_queue tq; /* the queue's thread only */
	struct nvmf_rdma_queue *next;
};

/* What a log line reports; each kind is rate-limited on its own (log.h). */
enum nvmf_rdma_log_kind {
	NVMF_RDMA_LOG_CONNECT,
	NVMF_RDMA_LOG_CM_REJECT, /* a connect request rejected with an NVMe/RDMA CM status */
	NVMF_RDMA_LOG_CONNECT_REFUSED,
	NVMF_RDMA_LOG_DISCONNECT,
	NVMF_RDMA_LOG_TRANSPORT_ERROR,
	NVMF_RDMA_LOG_NR,
};

static const char *const nvmf_rdma_log_kinds[NVMF_RDMA_LOG_NR] = {
	[NVMF_RDMA_LOG_CONNECT] = "connect",
	[NVMF_RDMA_LOG_CM_REJECT] = "connection request rejected",
	[NVMF_RDMA_LOG_CONNECT_REFUSED] = "connect refused",
	[NVMF_RDMA_LOG_DISCONNECT] = "disconnect",
	[NVMF_RDMA_LOG_TRANSPORT_ERROR] = "transport error",
};

struct ernic_rdma_port {
	struct ernic_target *tgt;
	/*
	 * nvmf_rdma_ops with the in-capsule data size of ernic_rdma_port_opts:
	 * with some, a small write travels in the host's SEND with its command
	 * (no RDMA READ round trip, no memory registration on the host for it).
	 */
	struct ernic_transport_ops ops;
	struct ernic_log log;
	uint64_t idle_timeout_ns; /* ernic_rdma_port_opts.idle_timeout_ms */
	struct ernic_trace trace;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	uint16_t portnum;
	pthread_t cm_thread;
	bool running;
	atomic_bool stopping;
	_Atomic uint64_t stop_deadline_ns;
	uint16_t portid; /* in a set of subsystems (ernic/nvmf.h); 0 outside one */
	uint64_t buf_budget;		/* ernic_rdma_port_opts.buf_budget */
	_Atomic uint64_t buf_reserved;	/* the queues' buf_reserved, summed: at most buf_budget */
	_Atomic uint64_t buf_refused;	/* Connects refused for it (ernic_rdma_buf_stats.refused) */

	pthread_mutex_t lock; /* the places and the list below */
	pthread_cond_t cond;
	struct ernic_places places;	 /* each queue pair's, until it closes */
	struct nvmf_rdma_queue *zombies; /* finished threads, to join */
};

static uint16_t nvmf_rdma_map_data(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf);
static void nvmf_rdma_complete(struct ernic_req *req);
static uint16_t nvmf_rdma_admit_discovery(struct ernic_sq *sq);

static const struct ernic_transport_ops nvmf_rdma_ops = {
	.name = "rdma",
	.trtype = NVMF_TRTYPE_RDMA,
	.map_data = nvmf_rdma_map_data,
	.complete = nvmf_rdma_complete,
	.admit_discovery = nvmf_rdma_admit_discovery,
	/* The port's own copy sets it (ernic_rdma_port_opts.in_capsule_data); IOCCSZ 4 without. */
	.in_capsule_data_size = 0,
};

static void nvmf_rdma_queue_set_disconnect(struct nvmf_rdma_queue *q, const char *why)
{
	const char *none = NULL;

	atomic_compare_exchange_strong(&q->close_reason, &none, why);
	atomic_store(&q->disconnect, true);
}

/* --------------------------------------------------------------- requests */

/* A free slot, with the queue's current bounce buffer; the queue's thread only. */
static struct nvmf_rdma_req *nvmf_rdma_req_get(struct nvmf_rdma_queue *q)
{
	struct nvmf_rdma_req *r;
	size_t i;

	pthread_mutex_lock(&q->lock);
	r = q->free_reqs;
	if (r)
		q->free_reqs = r->next_free;
	pthread_mutex_unlock(&q->lock);
	if (!r)
		return NULL;
	i = (size_t)(r - q->reqs);
	if (q->buf_mr) {
		r->buf = q->bufs + i * NVMF_RDMA_BUF_SIZE;
		r->buf_size = NVMF_RDMA_BUF_SIZE;
		r->buf_lkey = q->buf_mr->lkey;
	} else {
		r->buf = q->connect_bufs + i * NVMF_RDMA_CONNECT_BUF_SIZE;
		r->buf_size = NVMF_RDMA_CONNECT_BUF_SIZE;
		r->buf_lkey = q->connect_buf_mr->lkey;
	}
	return r;
}

static void nvmf_rdma_req_put(struct nvmf_rdma_queue *q, struct nvmf_rdma_req *r)
{
	pthread_mutex_lock(&q->lock);
	r->next_free = q->free_reqs;
	q->free_reqs = r;
	pthread_mutex_unlock(&q->lock);
}

static int nvmf_rdma_post_recv(struct nvmf_rdma_queue *q, struct nvmf_rdma_recv *rv)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rv->capsule,
		.length = q->recv_size,
		.lkey = q->capsule_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = NVMF_RDMA_WR_ID(rv, NVMF_RDMA_WR_RECV), .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(q->cm_id->qp, &wr, &bad);
}

/*
 * The queue whose thread this is (NULL on any other thread). Its work
 * requests are not posted one command at a time but together, once per
 * batch of completions polled: on a software RNIC (rxe) every
 * ibv_post_send() of a user queue pair is a system call in which the kernel
 * runs the RNIC's send path, and the peer's receive when both ends are on one
 * machine, before it returns (nvmet-rdma's posts leave that to a tasklet). A
 * command completed on another thread (a held AER) posts its own at once.
 */
static __thread struct nvmf_rdma_queue *nvmf_rdma_thread_queue;

/*
 * Post the chain from @first (its last ->next is NULL). A sampled command's
 * data and send stamps are taken here, where its requests reach the RNIC.
 * On failure the queue pair is gone (in error, or torn down): the requests
 * from the one it refused on get no completion, so their slots are freed.
 */
static void nvmf_rdma_post_chain(struct nvmf_rdma_queue *q, struct ibv_send_wr *first)
{
	struct ibv_send_wr *bad = NULL, *wr, *next;
	uint64_t t0 = 0, t1;
	bool sampling = q->port->trace.every != 0;
	const char *why;
	int rc;

	if (sampling)
		t0 = ernic_now_ns();
	rc = ibv_post_send(q->cm_id->qp, first, &bad);
	if (sampling) {
		t1 = ernic_now_ns();
		for (wr = first; wr && wr != (rc ? bad : NULL); wr = wr->next) {
			struct nvmf_rdma_req *r = NVMF_RDMA_WR_PTR(wr->wr_id);

			if (ERNIC_LIKELY(r->req.stamps == NULL))
				continue;
			if (NVMF_RDMA_WR_KIND(wr->wr_id) != NVMF_RDMA_WR_SEND)
				r->rec.data_start = t0;
			else
				r->rec.sent = t1;
		}
	}
	if (ERNIC_LIKELY(rc == 0))
		return;
	why = "cannot post the response";
	for (wr = bad ? bad : first; wr; wr = next) {
		enum nvmf_rdma_wr_kind kind = NVMF_RDMA_WR_KIND(wr->wr_id);

		next = wr->next;
		if (kind == NVMF_RDMA_WR_READ)
			why = "cannot post an RDMA READ";
		if (NVMF_RDMA_WR_ENDS_SLOT(kind))
			nvmf_rdma_req_put(q, NVMF_RDMA_WR_PTR(wr->wr_id));
	}
	nvmf_rdma_queue_set_disconnect(q, why);
}

/* Queue @first..@last for the thread's next post, or post them now from any other thread. */
static void nvmf_rdma_post(struct nvmf_rdma_queue *q, struct ibv_send_wr *first, struct ibv_send_wr *last)
{
	last->next = NULL;
	if (nvmf_rdma_thread_queue != q) {
		nvmf_rdma_post_chain(q, first);
		return;
	}
	*q->batch_tail = first;
	q->batch_tail = &last->next;
}

/* The queue's thread: post what it built since it last did. */
static void nvmf_rdma_post_batch(struct nvmf_rdma_queue *q)
{
	struct ibv_send_wr *first = q->batch_head;

	if (!first)
		return;
	q->batch_head = NULL;
	q->batch_tail = &q->batch_head;
	nvmf_rdma_post_chain(q, first);
}

/*
 * A keyed SGL Data Block (Fabrics 1.1, RDMA binding: the descriptor of data
 * moved by RDMA READ or WRITE), address or invalidate subtype, that
 * describes at least @len bytes and fits @r's bounce buffer (before the
 * Connect, a Connect's data: nvmet-rdma too refuses more for a Connect).
 */
static uint16_t nvmf_rdma_sgl_check(const struct nvmf_rdma_req *r, const struct nvme_sgl_desc *sgl, uint32_t len)
{
	uint8_t subtype = NVME_SGL_ID_SUBTYPE(sgl->id);

	if (NVME_SGL_ID_TYPE(sgl->id) != NVME_SGL_TYPE_KEYED_DATA_BLOCK)
		return NVME_SC_SGL_INVALID_TYPE;
	if (subtype != NVME_SGL_SUBTYPE_ADDRESS && subtype != NVME_SGL_SUBTYPE_INVALIDATE_KEY)
		return NVME_SC_SGL_INVALID_SUBTYPE;
	if (nvme_keyed_sgl_len(sgl) < len || len > r->buf_size)
		return NVME_SC_SGL_INVALID_DATA_LEN;
	return NVME_SC_SUCCESS;
}

/*
 * In-capsule data (SGL Data Block, offset subtype: the address is an offset
 * into the data after the command, ICDOFF 0) flows host to controller only,
 * and must lie within what the capsule carried.
 */
static uint16_t nvmf_rdma_map_icd(struct nvmf_rdma_req *r, uint32_t len, enum nvme_data_dir dir, void **buf)
{
	const struct nvme_sgl_desc *sgl = &r->req.sqe.dptr;
	uint32_t sgl_len = sgl->unkeyed.length;

	if (NVME_SGL_ID_SUBTYPE(sgl->id) != NVME_SGL_SUBTYPE_OFFSET)
		return NVME_SC_SGL_INVALID_SUBTYPE;
	if (dir != NVME_DATA_HOST_TO_CTRL)
		return NVME_SC_INVALID_FIELD;
	if (sgl->addr > r->h2c_len || sgl_len > r->h2c_len - sgl->addr)
		return NVME_SC_SGL_INVALID_OFFSET;
	if (len > sgl_len)
		return NVME_SC_SGL_INVALID_DATA_LEN;
	*buf = r->buf + sgl->addr;
	return NVME_SC_SUCCESS;
}

static uint16_t nvmf_rdma_map_data(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf)
{
	struct nvmf_rdma_req *r = req->transport_ctx;
	uint16_t status;

	if (NVME_SGL_ID_TYPE(req->sqe.dptr.id) == NVME_SGL_TYPE_DATA_BLOCK)
		return nvmf_rdma_map_icd(r, len, dir, buf);
	status = nvmf_rdma_sgl_check(r, &req->sqe.dptr, len);
	if (status)
		return status;
	switch (dir) {
	case NVME_DATA_HOST_TO_CTRL:
		/* Read before exec; less only when the command was refused before its data was wanted. */
		if (r->h2c_len < len)
			return NVME_SC_SGL_INVALID_DATA_LEN;
		break;
	case NVME_DATA_CTRL_TO_HOST:
		r->c2h_len = len;
		break;
	default:
		return NVME_SC_INVALID_FIELD;
	}
	*buf = r->buf;
	return NVME_SC_SUCCESS;
}

/*
 * The response by SEND, after an RDMA WRITE of the data when the command
 * succeeded with some for the host. A descriptor with the invalidate subtype
 * gets SEND with Invalidate of its rkey (RDMA binding, Figure 3), so the host
 * skips its local invalidation. Runs on the queue's thread, which posts it
 * with its batch, or on any thread for a held AER, which posts it at once
 * (ibv_post_send is thread safe).
 */
static void nvmf_rdma_complete(struct ernic_req *req)
{
	struct nvmf_rdma_req *r = req->transport_ctx;
	struct nvmf_rdma_queue *q = r->q;
	const struct nvme_sgl_desc *sgl = &req->sqe.dptr;
	bool sampled = ERNIC_UNLIKELY(req->stamps != NULL);

	if (sampled)
		r->rec.queued = ernic_now_ns();
	*r->rsp = req->cqe;
	r->rsp_sge = (struct ibv_sge){ .addr = (uintptr_t)r->rsp, .length = sizeof(*r->rsp), .lkey = q->rsp_mr->lkey };
	r->rsp_wr = (struct ibv_send_wr){
		.wr_id = NVMF_RDMA_WR_ID(r, NVMF_RDMA_WR_SEND),
		.sg_list = &r->rsp_sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	if (sgl->id == NVME_SGL_ID(NVME_SGL_TYPE_KEYED_DATA_BLOCK, NVME_SGL_SUBTYPE_INVALIDATE_KEY) &&
	    nvme_keyed_sgl_len(sgl)) {
		r->rsp_wr.opcode = IBV_WR_SEND_WITH_INV;
		r->rsp_wr.invalidate_rkey = sgl->keyed.key;
	}
	if (nvme_cqe_status(&req->cqe) == 0 && r->c2h_len) {
		r->data_sge = (struct ibv_sge){ .addr = (uintptr_t)r->buf, .length = r->c2h_len, .lkey = r->buf_lkey };
		r->data_wr = (struct ibv_send_wr){
			.wr_id = NVMF_RDMA_WR_ID(r, NVMF_RDMA_WR_WRITE),
			.next = &r->rsp_wr,
			.sg_list = &r->data_sge,
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			/* Only a sampled command's WRITE completes on the CQ: its data stage ends there. */
			.send_flags = sampled ? IBV_SEND_SIGNALED : 0,
			.wr.rdma = { .remote_addr = sgl->addr, .rkey = sgl->keyed.key },
		};
		nvmf_rdma_post(q, &r->data_wr, &r->rsp_wr);
		return;
	}
	nvmf_rdma_post(q, &r->rsp_wr, &r->rsp_wr);
}

/*
 * A Connect's data where connect_check() reads it: in the capsule, or in the
 * buffer its RDMA READ filled (a keyed SGL, as the Linux host sends an admin
 * queue's Connect); NULL when there is none. @hostnqn gets the host NQN it
 * claims, escaped for the log.
 */
static const struct nvmf_connect_data *nvmf_rdma_connect_data(struct nvmf_rdma_req *r, char *hostnqn, size_t len)
{
	const struct nvmf_connect_data *data = NULL;
	void *icd;

	if (nvmf_rdma_map_data(&r->req, sizeof(*data), NVME_DATA_HOST_TO_CTRL, &icd) == NVME_SC_SUCCESS)
		data = icd;
	ernic_connect_hostnqn_str(data, hostnqn, len);
	return data;
}

/*
 * Reserve the queue's full bounce buffers against the port's budget, before
 * its Connect runs; false when they do not fit. The queue's thread only.
 */
static bool nvmf_rdma_buf_reserve(struct nvmf_rdma_queue *q)
{
	struct ernic_rdma_port *port = q->port;
	uint64_t need = (uint64_t)q->nr_reqs * NVMF_RDMA_BUF_SIZE;
	uint64_t held = atomic_load_explicit(&port->buf_reserved, memory_order_relaxed);

	if (q->buf_reserved)
		return true;
	do {
		if (need > port->buf_budget - MIN(held, port->buf_budget))
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&port->buf_reserved, &held, held + need, memory_order_relaxed,
						       memory_order_relaxed));
	q->buf_reserved = need;
	return true;
}

/* Give the reservation back: a Connect that failed, or a queue that goes. */
static void nvmf_rdma_buf_release(struct nvmf_rdma_queue *q)
{
	atomic_fetch_sub_explicit(&q->port->buf_reserved, q->buf_reserved, memory_order_relaxed);
	q->buf_reserved = 0;
}

/*
 * What a queue serving a controller has and a queue pair before its Connect
 * has not (see the top of the file): the full bounce buffers, and the rest of
 * the receive queue, posted before the Connect's answer is. The queue's
 * thread only.
 */
static int nvmf_rdma_queue_grow(struct nvmf_rdma_queue *q)
{
	struct ibv_mr *ring;

	if (q->buf_mr)
		return 0;
	q->bufs_len = (size_t)q->nr_reqs * NVMF_RDMA_BUF_SIZE;
	q->bufs = mmap(NULL, q->bufs_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q->bufs == MAP_FAILED) {
		q->bufs = NULL;
		return -ENOMEM;
	}
	q->buf_mr = ibv_reg_mr(q->pd, q->bufs, q->bufs_len, IBV_ACCESS_LOCAL_WRITE);
	if (!q->buf_mr)
		return -ENOMEM;
	ring = ibv_reg_mr(q->pd, q->capsules, q->capsules_len, IBV_ACCESS_LOCAL_WRITE);
	if (!ring)
		return -ENOMEM;
	q->capsule_mr = ring;
	for (uint32_t i = 1; i < q->nr_recv; i++)
		if (nvmf_rdma_post_recv(q, &q->recvs[i]))
			return -ENOMEM;
	return 0;
}

/*
 * After a Connect ran: log it, and for one that succeeded, give the queue its
 * full bounce buffers. False when they cannot be had: the queue then closes
 * with the Connect unanswered (the controller core has it already; closing is
 * what takes it off again), and the host sees a transport error.
 */
static bool nvmf_rdma_connected(struct nvmf_rdma_queue *q, struct nvmf_rdma_req *r)
{
	const struct nvmf_connect_cmd *cmd = (const struct nvmf_connect_cmd *)&r->req.sqe;
	uint16_t status = nvme_cqe_status(&r->req.cqe);
	char claimed[sizeof(q->hostnqn)];
	const struct nvmf_connect_data *data = nvmf_rdma_connect_data(r, claimed, sizeof(claimed));
	bool mapped;

	/* A later Connect on a connected queue (refused) does not rename its host. */
	if (data && !q->place.connected)
		memcpy(q->hostnqn, claimed, sizeof(claimed));
	/* The buffers before the place is settled: no newcomer may evict a queue the controller already has. */
	mapped = !status && nvmf_rdma_queue_grow(q) == 0;
	ernic_place_connect_done(&q->port->places, &q->place, mapped);
	if (status) {
		/* A refused Connect keeps nothing: the queue pair may Connect again, and reserves again then. */
		if (!q->buf_mr)
			nvmf_rdma_buf_release(q);
		ernic_log(&q->port->log, NVMF_RDMA_LOG_CONNECT_REFUSED, "connect refused host %s qid %u peer %s: %s",
			  claimed, cmd->qid, q->peer, ernic_status_str(status));
		return true;
	}
	if (!mapped) {
		ernic_log(&q->port->log, NVMF_RDMA_LOG_TRANSPORT_ERROR, "host %s qid %u peer %s: %s", q->hostnqn,
			  cmd->qid, q->peer, NVMF_RDMA_NO_BUFFERS);
		return false;
	}
	q->idle_deadline_ns = 0;
	q->qid = cmd->qid;
	q->cntlid = (uint16_t)r->req.cqe.dw0;
	if (q->qid)
		ernic_trace_queue_start(&q->port->trace, &q->tq);
	ernic_log(&q->port->log, NVMF_RDMA_LOG_CONNECT, "connect host %s qid %u cntlid %u peer %s%s", q->hostnqn, q->qid,
		  q->cntlid, q->peer, q->sq.sqflow_disabled ? " (sq flow control disabled)" : "");
	return true;
}

/* A discovery Connect takes one of the port's discovery places (ernic_transport_ops.admit_discovery). */
static uint16_t nvmf_rdma_admit_discovery(struct ernic_sq *sq)
{
	struct nvmf_rdma_queue *q = sq->transport;

	return ernic_place_admit_discovery(&q->port->places, &q->place);
}

/*
 * A Connect whose queue's bounce buffers do not fit the port's budget:
 * Connect Controller Busy, without the controller core (it would have made a
 * controller or a queue to undo). The queue pair stays as it was, and may
 * Connect again.
 */
static void nvmf_rdma_refuse_connect(struct nvmf_rdma_queue *q, struct nvmf_rdma_req *r)
{
	const struct nvmf_connect_cmd *cmd = (const struct nvmf_connect_cmd *)&r->req.sqe;
	struct ernic_rdma_port *port = q->port;
	char claimed[sizeof(q->hostnqn)];

	nvmf_rdma_connect_data(r, claimed, sizeof(claimed));
	ernic_place_connect_done(&port->places, &q->place, false);
	atomic_fetch_add_explicit(&port->buf_refused, 1, memory_order_relaxed);
	ernic_log(&port->log, NVMF_RDMA_LOG_CONNECT_REFUSED,
		  "connect refused host %s qid %u peer %s: its %u entries' buffers (%" PRIu64 " KiB) do not fit the"
		  " buffer budget, %" PRIu64 " of %" PRIu64 " KiB held: %s",
		  claimed, cmd->qid, q->peer, q->nr_recv, (uint64_t)q->nr_reqs * NVMF_RDMA_BUF_SIZE / 1024,
		  atomic_load_explicit(&port->buf_reserved, memory_order_relaxed) / 1024, port->buf_budget / 1024,
		  ernic_status_str(NVME_SC_CONNECT_CTRL_BUSY));
	ernic_req_set_status(&r->req, NVME_SC_CONNECT_CTRL_BUSY);
	nvmf_rdma_complete(&r->req);
}

static void nvmf_rdma_req_exec(struct nvmf_rdma_queue *q, struct nvmf_rdma_req *r)
{
	const struct nvmf_fabrics_cmd *fcmd = (const struct nvmf_fabrics_cmd *)&r->req.sqe;
	bool connect = fcmd->opc == NVME_FABRICS_COMMAND && fcmd->fctype == NVMF_FCTYPE_CONNECT;
	enum ernic_exec ex;

	/* A Connect on a queue pair that is no queue yet first claims its place. */
	if (connect && !q->place.connected && !ernic_place_claim(&q->port->places, &q->place)) {
		nvmf_rdma_req_put(q, r);
		nvmf_rdma_queue_set_disconnect(q, NVMF_RDMA_EVICTED);
		return;
	}
	if (connect && !nvmf_rdma_buf_reserve(q)) {
		nvmf_rdma_refuse_connect(q, r);
		return;
	}
	if (ERNIC_UNLIKELY(r->req.stamps != NULL))
		r->rec.exec = ernic_now_ns();
	ex = ernic_req_exec(&r->req);
	if (ex == ERNIC_EXEC_HELD)
		return;
	if (ERNIC_UNLIKELY(ex == ERNIC_EXEC_CTRLR_FATAL)) {
		/* Dropped unanswered and the queue closed: see ERNIC_EXEC_CTRLR_FATAL. */
		nvmf_rdma_req_put(q, r);
		nvmf_rdma_queue_set_disconnect(q, NVMF_RDMA_CTRLR_FATAL);
		return;
	}
	if (connect && !nvmf_rdma_connected(q, r)) {
		nvmf_rdma_req_put(q, r);
		nvmf_rdma_queue_set_disconnect(q, NVMF_RDMA_NO_BUFFERS);
		return;
	}
	/*
	 * A Disconnect deleted the queue (ernic_req_exec()): it takes no Connect
	 * again and no controller's keep-alive covers it, so it closes once its
	 * answer is sent, as an NVMe/TCP queue's connection does. A SEND posted
	 * after that answer completes after it, so any of them may close it.
	 */
	r->closes_queue = q->sq.deleted;
	if (ERNIC_UNLIKELY(q->sq.deleted) && !q->idle_deadline_ns)
		q->idle_deadline_ns = ernic_now_ns() + q->port->idle_timeout_ns;
	nvmf_rdma_complete(&r->req);
}

/*
 * A capsule arrived. Host to controller data is read before exec, but only
 * for a command the core would run: one it refuses (not connected, a wrong
 * namespace or range, an SGL over MDTS) runs without and gets that status.
 */
static void nvmf_rdma_handle_capsule(struct nvmf_rdma_queue *q, struct nvmf_rdma_recv *rv, uint32_t byte_len)
{
	struct nvmf_rdma_req *r;
	const struct nvme_sgl_desc *sgl;
	uint32_t len;

	if (byte_len < sizeof(struct nvme_sqe)) {
		ernic_log(&q->port->log, NVMF_RDMA_LOG_TRANSPORT_ERROR,
			  "peer %s qid %u: a %u-byte capsule, less than a command", q->peer, q->cm_qid, byte_len);
		nvmf_rdma_queue_set_disconnect(q, "transport error");
		return;
	}
	r = nvmf_rdma_req_get(q);
	if (!r) {
		/* More commands in flight than the HSQSIZE the host announced. */
		ernic_log(&q->port->log, NVMF_RDMA_LOG_TRANSPORT_ERROR, "peer %s qid %u: submission queue overrun",
			  q->peer, q->cm_qid);
		nvmf_rdma_queue_set_disconnect(q, "transport error");
		return;
	}
	memset(&r->req, 0, sizeof(r->req));
	r->req.sqe = *rv->capsule;
	r->req.sq = &q->sq;
	r->req.transport_ctx = r;
	r->h2c_len = r->c2h_len = 0;
	r->closes_queue = false;
	/*
	 * In-capsule data is copied out so that the buffer goes straight back to
	 * the receive queue (a page is cheap to copy). Bytes after a command with
	 * a keyed SGL are no data of it: ignored, as nvmet-rdma does. Before the
	 * Connect, only a Connect's data is kept: no other command runs then.
	 */
	if (byte_len > sizeof(struct nvme_sqe) && NVME_SGL_ID_TYPE(r->req.sqe.dptr.id) == NVME_SGL_TYPE_DATA_BLOCK) {
		r->h2c_len = MIN(byte_len - (uint32_t)sizeof(struct nvme_sqe), r->buf_size);
		memcpy(r->buf, rv->capsule + 1, r->h2c_len);
	}
	if (ernic_trace_due(&q->tq))
		ernic_trace_begin(&q->port->trace, &q->tq, q->place.connected ? q->qid : 0, &r->req, &r->stamps, &r->rec);
	if (nvmf_rdma_post_recv(q, rv)) {
		nvmf_rdma_req_put(q, r);
		nvmf_rdma_queue_set_disconnect(q, "cannot post a receive buffer");
		return;
	}
	sgl = &r->req.sqe.dptr;
	len = nvme_keyed_sgl_len(sgl);
	/* Only a keyed SGL passes nvmf_rdma_sgl_check(): in-capsule data is never read again. */
	if (nvme_sqe_data_dir(&r->req.sqe) == NVME_DATA_HOST_TO_CTRL && len &&
	    nvmf_rdma_sgl_check(r, sgl, len) == NVME_SC_SUCCESS && !ernic_req_check(&r->req)) {
		r->data_sge = (struct ibv_sge){ .addr = (uintptr_t)r->buf, .length = len, .lkey = r->buf_lkey };
		r->data_wr = (struct ibv_send_wr){
			.wr_id = NVMF_RDMA_WR_ID(r, NVMF_RDMA_WR_READ),
			.sg_list = &r->data_sge,
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = sgl->addr, .rkey = sgl->keyed.key },
		};
		nvmf_rdma_post(q, &r->data_wr, &r->data_wr);
		return;
	}
	nvmf_rdma_req_exec(q, r);
}

static void nvmf_rdma_handle_wc(struct nvmf_rdma_queue *q, const struct ibv_wc *wc)
{
	void *ptr = NVMF_RDMA_WR_PTR(wc->wr_id);
	enum nvmf_rdma_wr_kind kind = NVMF_RDMA_WR_KIND(wc->wr_id);
	struct nvmf_rdma_req *r = ptr;

	if (ERNIC_UNLIKELY(wc->status != IBV_WC_SUCCESS)) {
		/*
		 * A remote access error (wrong key, beyond the region, an
		 * invalidated region) leaves the queue pair in error: the
		 * queue goes, as on nvmet-rdma. Flushes follow any error.
		 */
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			ernic_log(&q->port->log, NVMF_RDMA_LOG_TRANSPORT_ERROR, "host %s qid %u peer %s: %s failed: %s",
				  q->hostnqn[0] ? q->hostnqn : "?", q->cm_qid, q->peer,
				  kind == NVMF_RDMA_WR_READ ? "RDMA READ" : kind == NVMF_RDMA_WR_WRITE ? "RDMA WRITE"
				  : kind == NVMF_RDMA_WR_SEND ? "SEND" : "RECV",
				  ibv_wc_status_str(wc->status));
		nvmf_rdma_queue_set_disconnect(q, wc->status == IBV_WC_WR_FLUSH_ERR ? "queue pair flushed"
					  : "RDMA transfer error");
		if (NVMF_RDMA_WR_ENDS_SLOT(kind))
			nvmf_rdma_req_put(q, r);
		return;
	}
	switch (kind) {
	case NVMF_RDMA_WR_RECV:
		nvmf_rdma_handle_capsule(q, ptr, wc->byte_len);
		break;
	case NVMF_RDMA_WR_READ:
		if (ERNIC_UNLIKELY(r->req.stamps != NULL))
			r->rec.data_done = ernic_now_ns();
		r->h2c_len = nvme_keyed_sgl_len(&r->req.sqe.dptr);
		nvmf_rdma_req_exec(q, r);
		break;
	case NVMF_RDMA_WR_SEND:
		/* A response that failed is no sample: it never reached the host. */
		if (ERNIC_UNLIKELY(r->req.stamps != NULL)) {
			r->rec.send_done = ernic_now_ns();
			ernic_trace_end(&q->port->trace, &q->tq, &r->req, &r->stamps, &r->rec);
		}
		if (ERNIC_UNLIKELY(r->closes_queue))
			nvmf_rdma_queue_set_disconnect(q, "host deleted the queue (Disconnect)");
		nvmf_rdma_req_put(q, r);
		break;
	case NVMF_RDMA_WR_WRITE:
		/* Signaled for a sampled command only. */
		r->rec.data_done = ernic_now_ns();
		break;
	}
}

/* ------------------------------------------------------------------ queues */

static void nvmf_rdma_queue_free(struct nvmf_rdma_queue *q)
{
	if (q->cm_id && q->cm_id->qp)
		rdma_destroy_qp(q->cm_id);
	if (q->cq)
		ibv_destroy_cq(q->cq);
	if (q->cc)
		ibv_destroy_comp_channel(q->cc);
	if (q->capsule_mr && q->capsule_mr != q->first_capsule_mr)
		ibv_dereg_mr(q->capsule_mr);
	if (q->first_capsule_mr)
		ibv_dereg_mr(q->first_capsule_mr);
	if (q->rsp_mr)
		ibv_dereg_mr(q->rsp_mr);
	if (q->connect_buf_mr)
		ibv_dereg_mr(q->connect_buf_mr);
	if (q->buf_mr)
		ibv_dereg_mr(q->buf_mr);
	if (q->pd)
		ibv_dealloc_pd(q->pd);
	if (q->bufs)
		munmap(q->bufs, q->bufs_len);
	nvmf_rdma_buf_release(q);
	free(q->connect_bufs);
	if (q->capsules)
		munmap(q->capsules, q->capsules_len);
	free(q->rsps);
	free(q->recvs);
	free(q->reqs);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

static void *nvmf_rdma_queue_thread(void *arg)
{
	struct nvmf_rdma_queue *q = arg;
	struct ernic_rdma_port *port = q->port;
	struct ibv_wc wc[NVMF_RDMA_CQ_BATCH];
	uint64_t spin_until = 0, next_check = 0;

	q->batch_head = NULL;
	q->batch_tail = &q->batch_head;
	nvmf_rdma_thread_queue = q;
	while (!atomic_load(&q->disconnect)) {
		uint64_t now;
		int n = ibv_poll_cq(q->cq, NVMF_RDMA_CQ_BATCH, wc);

		if (n < 0) {
			nvmf_rdma_queue_set_disconnect(q, "completion queue error");
			break;
		}
		for (int i = 0; i < n; i++)
			nvmf_rdma_handle_wc(q, &wc[i]);
		nvmf_rdma_post_batch(q);
		now = ernic_now_ns();
		if (n) {
			spin_until = now + NVMF_RDMA_BUSY_POLL_NS;
			if (now < next_check)
				continue;
		}
		if (now >= next_check) {
			next_check = now + NVMF_RDMA_POLL_MS * 1000000ull;
			/* The port's CM thread runs the keep-alive timers, for every queue at once (each did). */
			if (ernic_sq_ctrlr_fatal(&q->sq))
				nvmf_rdma_queue_set_disconnect(q, NVMF_RDMA_CTRLR_FATAL);
			else if (!q->place.connected && ernic_place_evicted(&q->port->places, &q->place))
				nvmf_rdma_queue_set_disconnect(q, NVMF_RDMA_EVICTED);
			else if (q->idle_deadline_ns && now >= q->idle_deadline_ns)
				nvmf_rdma_queue_set_disconnect(q, q->place.connected ? NVMF_RDMA_DISCONNECT_UNTAKEN
									       : "no Connect within the idle timeout");
			else if (atomic_load(&port->stopping) && now >= atomic_load(&port->stop_deadline_ns))
				nvmf_rdma_queue_set_disconnect(q, "target shutting down");
			continue;
		}
		if (now < spin_until)
			continue;
		/* Arm, then look once more: a completion between the last poll and the arm raises no event. */
		if (ibv_req_notify_cq(q->cq, 0)) {
			nvmf_rdma_queue_set_disconnect(q, "cannot arm the completion queue");
			break;
		}
		n = ibv_poll_cq(q->cq, NVMF_RDMA_CQ_BATCH, wc);
		for (int i = 0; i < n; i++)
			nvmf_rdma_handle_wc(q, &wc[i]);
		nvmf_rdma_post_batch(q);
		if (n) {
			spin_until = ernic_now_ns() + NVMF_RDMA_BUSY_POLL_NS;
			continue;
		}
		{
			struct pollfd pfd = { .fd = q->cc->fd, .events = POLLIN };
			struct ibv_cq *ev_cq;
			void *ev_ctx;

			if (poll(&pfd, 1, NVMF_RDMA_POLL_MS) > 0 && ibv_get_cq_event(q->cc, &ev_cq, &ev_ctx) == 0)
				ibv_ack_cq_events(ev_cq, 1);
		}
	}

	/*
	 * Teardown: the queue pair to error (every posted request flushes), then
	 * off the controller; held AERs complete through nvmf_rdma_complete() before
	 * ernic_sq_destroy() returns and their posts fail or flush, posted at once
	 * as from any other thread. What the last batch built goes unposted: its
	 * slots go with the queue.
	 */
	nvmf_rdma_thread_queue = NULL;
	q->batch_head = NULL;
	rdma_disconnect(q->cm_id);
	ernic_sq_destroy(&q->sq);
	/* No completion is polled after this: the records are all in. */
	ernic_trace_queue_stop(&port->trace, &q->tq);
	if (q->place.connected)
		ernic_log(&port->log, NVMF_RDMA_LOG_DISCONNECT, "disconnect host %s qid %u cntlid %u peer %s: %s",
			  q->hostnqn, q->qid, q->cntlid, q->peer,
			  atomic_load(&q->close_reason) ? atomic_load(&q->close_reason) : "?");
	pthread_mutex_lock(&port->lock);
	ernic_places_release_locked(&port->places, &q->place);
	q->next = port->zombies;
	port->zombies = q;
	pthread_cond_broadcast(&port->cond);
	pthread_mutex_unlock(&port->lock);
	return NULL;
}

/* Join and free finished queues; the caller holds port->lock and is the CM thread or the stopper. */
static void nvmf_rdma_port_reap_locked(struct ernic_rdma_port *port)
{
	while (port->zombies) {
		struct nvmf_rdma_queue *q = port->zombies;
		struct rdma_cm_id *id = q->cm_id;

		port->zombies = q->next;
		pthread_join(q->thread, NULL);
		nvmf_rdma_queue_free(q);
		/* After the queue pair went; waits for the CM events of @id to be acknowledged. */
		rdma_destroy_id(id);
	}
}

static void nvmf_rdma_peer_name(struct rdma_cm_id *id, char *buf, size_t len)
{
	struct sockaddr *sa = rdma_get_peer_addr(id);
	char addr[INET6_ADDRSTRLEN];

	snprintf(buf, len, "?");
	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, addr, sizeof(addr));
		snprintf(buf, len, "%s:%u", addr, ntohs(rdma_get_dst_port(id)));
	} else if (sa->sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, addr, sizeof(addr));
		snprintf(buf, len, "[%s]:%u", addr, ntohs(rdma_get_dst_port(id)));
	}
}

/* Protection domain, completion queue and channel, queue pair, buffers, the first receive posted. */
static int nvmf_rdma_queue_setup(struct nvmf_rdma_queue *q)
{
	struct rdma_cm_id *id = q->cm_id;
	struct ibv_qp_init_attr qpa = { 0 };
	uint32_t cqe;

	q->nr_reqs = 2 * q->nr_recv;
	q->pd = ibv_alloc_pd(id->verbs);
	q->cc = q->pd ? ibv_create_comp_channel(id->verbs) : NULL;
	if (!q->cc)
		return -ENOMEM;
	if (fcntl(q->cc->fd, F_SETFL, fcntl(q->cc->fd, F_GETFL) | O_NONBLOCK))
		return -errno;
	/* Each slot has at most two send requests (RDMA WRITE and SEND) or one READ; plus the receives. */
	cqe = 2 * q->nr_reqs + q->nr_recv;
	q->cq = ibv_create_cq(id->verbs, (int)cqe, q, q->cc, 0);
	if (!q->cq)
		return -ENOMEM;
	qpa.send_cq = q->cq;
	qpa.recv_cq = q->cq;
	qpa.qp_type = IBV_QPT_RC;
	qpa.cap.max_send_wr = 2 * q->nr_reqs;
	qpa.cap.max_recv_wr = q->nr_recv;
	qpa.cap.max_send_sge = 1;
	qpa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, q->pd, &qpa))
		return -errno;

	/* The host puts no data in an admin queue's capsules (nvme-rdma does not; nor does nvmet-rdma take any). */
	q->recv_size = (uint32_t)sizeof(struct nvme_sqe) + (q->cm_qid ? q->port->ops.in_capsule_data_size : 0);
	q->capsules_len = (size_t)q->nr_recv * q->recv_size;
	q->capsules = mmap(NULL, q->capsules_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q->capsules == MAP_FAILED)
		q->capsules = NULL;
	q->recvs = calloc(q->nr_recv, sizeof(*q->recvs));
	q->rsps = calloc(q->nr_reqs, sizeof(*q->rsps));
	q->reqs = calloc(q->nr_reqs, sizeof(*q->reqs));
	q->connect_bufs = calloc(q->nr_reqs, NVMF_RDMA_CONNECT_BUF_SIZE);
	if (!q->capsules || !q->recvs || !q->rsps || !q->reqs || !q->connect_bufs)
		return -ENOMEM;
	/* The first receive buffer only, until the Connect (nvmf_rdma_queue_grow()). */
	q->first_capsule_mr = ibv_reg_mr(q->pd, q->capsules, q->recv_size, IBV_ACCESS_LOCAL_WRITE);
	q->capsule_mr = q->first_capsule_mr;
	q->rsp_mr = ibv_reg_mr(q->pd, q->rsps, q->nr_reqs * sizeof(*q->rsps), 0);
	q->connect_buf_mr = ibv_reg_mr(q->pd, q->connect_bufs, (size_t)q->nr_reqs * NVMF_RDMA_CONNECT_BUF_SIZE,
				       IBV_ACCESS_LOCAL_WRITE);
	if (!q->capsule_mr || !q->rsp_mr || !q->connect_buf_mr)
		return -ENOMEM;
	for (uint32_t i = q->nr_reqs; i-- > 0;) {
		struct nvmf_rdma_req *r = &q->reqs[i];

		r->q = q;
		r->rsp = &q->rsps[i];
		r->next_free = q->free_reqs;
		q->free_reqs = r;
	}
	for (uint32_t i = 0; i < q->nr_recv; i++)
		q->recvs[i].capsule = (struct nvme_sqe *)(q->capsules + (size_t)i * q->recv_size);
	return nvmf_rdma_post_recv(q, &q->recvs[0]) ? -ENOMEM : 0;
}

static void nvmf_rdma_reject(struct rdma_cm_id *id, uint16_t sts)
{
	struct nvme_rdma_cm_rej rej = { .recfmt = NVME_RDMA_CM_FMT_1_0, .sts = sts };

	rdma_reject(id, &rej, sizeof(rej));
}

/*
 * Every place is taken: the oldest queue pair that is no queue yet (no
 * Connect) is given notice to close and the newcomer its place
 * (ernic_places_make_room_locked()). False: none to evict, and the request is
 * rejected (no resources). The CM thread only.
 */
static bool nvmf_rdma_port_make_room_locked(struct ernic_rdma_port *port)
{
	struct ernic_place *evicted = ernic_places_make_room_locked(&port->places);
	struct nvmf_rdma_queue *oldest;

	if (!evicted)
		return false;
	oldest = (struct nvmf_rdma_queue *)((char *)evicted - offsetof(struct nvmf_rdma_queue, place));
	ernic_log(&port->log, NVMF_RDMA_LOG_DISCONNECT,
		  "peer %s qid %u: closing: no Connect yet, with every one of the %u queue pairs taken and a newer"
		  " connection request waiting",
		  oldest->peer, oldest->cm_qid, port->places.max);
	return true;
}

/* A connect request: on the CM thread, which acknowledges the event afterwards. */
static void nvmf_rdma_handle_connect_request(struct ernic_rdma_port *port, struct rdma_cm_event *ev)
{
	const struct ernic_backend_cfg *cfg = ernic_target_cfg(port->tgt);
	struct rdma_cm_id *id = ev->id;
	struct rdma_conn_param param = { 0 };
	struct nvme_rdma_cm_rep rep = { .recfmt = NVME_RDMA_CM_FMT_1_0 };
	struct nvmf_rdma_queue *q;
	char peer[INET6_ADDRSTRLEN + 8];
	uint32_t nr_recv = 0;
	unsigned int nr_queues;
	uint16_t qid = 0, sts;
	int rc;

	nvmf_rdma_peer_name(id, peer, sizeof(peer));
	id->context = NULL;
	pthread_mutex_lock(&port->lock);
	nr_queues = ernic_places_held(&port->places);
	pthread_mutex_unlock(&port->lock);
	/*
	 * The event's parameters are from this side's view: its initiator
	 * depth is the RDMA READs the host's responder resources take.
	 */
	sts = ernic_rdma_cm_req_admit(cfg, ev->param.conn.private_data, ev->param.conn.private_data_len,
				      ev->param.conn.initiator_depth, nr_queues, port->places.max, &qid, &nr_recv);
	/* A request good but for the limit takes the place of a queue pair that is no queue yet, if there is one. */
	if (sts == NVME_RDMA_CM_NO_RSC) {
		pthread_mutex_lock(&port->lock);
		if (nvmf_rdma_port_make_room_locked(port))
			sts = 0;
		pthread_mutex_unlock(&port->lock);
	}
	if (sts) {
		if (sts == NVME_RDMA_CM_NO_RSC)
			ernic_log(&port->log, NVMF_RDMA_LOG_CM_REJECT,
				  "peer %s qid %u: connection request rejected: the limit is %u queue pairs", peer, qid,
				  port->places.max);
		else
			ernic_log(&port->log, NVMF_RDMA_LOG_CM_REJECT,
				  "peer %s: connection request rejected: RDMA CM status %u (%s)", peer, sts,
				  ernic_rdma_cm_status_str(sts));
		nvmf_rdma_reject(id, sts);
		goto drop;
	}
	if (atomic_load(&port->stopping)) {
		nvmf_rdma_reject(id, NVME_RDMA_CM_NO_RSC);
		goto drop;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		nvmf_rdma_reject(id, NVME_RDMA_CM_NO_RSC);
		goto drop;
	}
	q->port = port;
	q->cm_id = id;
	q->cm_qid = qid;
	q->nr_recv = nr_recv;
	snprintf(q->peer, sizeof(q->peer), "%s", peer);
	pthread_mutex_init(&q->lock, NULL);
	atomic_init(&q->disconnect, false);
	ernic_trace_queue_init(&q->tq);
	rc = nvmf_rdma_queue_setup(q);
	if (rc) {
		ernic_log(&port->log, NVMF_RDMA_LOG_CM_REJECT,
			  "peer %s qid %u: cannot set up the queue pair (%u entries): %s", peer, qid, nr_recv,
			  strerror(-rc));
		nvmf_rdma_reject(id, NVME_RDMA_CM_NO_RSC);
		nvmf_rdma_queue_free(q);
		goto drop;
	}
	ernic_sq_init(&q->sq, port->tgt, &port->ops, q);
	q->sq.portid = port->portid;
	q->sq.qid_expected = qid;
	/* Its Connect is due within the idle timeout: until then it holds registered buffers for no controller. */
	q->idle_deadline_ns = ernic_now_ns() + port->idle_timeout_ns;
	rep.crqsize = (uint16_t)nr_recv;
	param.private_data = &rep;
	param.private_data_len = sizeof(rep);
	/* librdmacm clamps these to what the host offered and the device allows. */
	param.initiator_depth = RDMA_MAX_INIT_DEPTH;
	param.responder_resources = RDMA_MAX_RESP_RES;
	param.rnr_retry_count = 7;
	param.flow_control = 1;
	id->context = q;
	if (rdma_accept(id, &param)) {
		ernic_log(&port->log, NVMF_RDMA_LOG_TRANSPORT_ERROR, "peer %s qid %u: rdma_accept: %s", peer, qid,
			  strerror(errno));
		ernic_sq_destroy(&q->sq);
		id->context = NULL;
		nvmf_rdma_queue_free(q);
		goto drop;
	}
	pthread_mutex_lock(&port->lock);
	rc = -pthread_create(&q->thread, NULL, nvmf_rdma_queue_thread, q);
	if (!rc)
		ernic_places_take_locked(&port->places, &q->place);
	pthread_mutex_unlock(&port->lock);
	if (!rc)
		return;
	rdma_disconnect(id);
	ernic_sq_destroy(&q->sq);
	id->context = NULL;
	nvmf_rdma_queue_free(q);
drop:
	/*
	 * A context of the port itself tells nvmf_rdma_handle_cm_event() to
	 * destroy the id once the event is acknowledged (rdma_destroy_id()
	 * waits for that acknowledgement).
	 */
	ev->id->context = (void *)port;
}

static void nvmf_rdma_handle_cm_event(struct ernic_rdma_port *port, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	bool destroy = false;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		nvmf_rdma_handle_connect_request(port, ev);
		destroy = id->context == (void *)port;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		if (id != port->listen_id && id->context && id->context != (void *)port)
			nvmf_rdma_queue_set_disconnect(id->context, ev->event == RDMA_CM_EVENT_DISCONNECTED
								       ? "host disconnected"
								       : rdma_event_str(ev->event));
		else if (id == port->listen_id)
			ernic_log(&port->log, NVMF_RDMA_LOG_TRANSPORT_ERROR, "listener: %s", rdma_event_str(ev->event));
		break;
	default:
		break;
	}
	rdma_ack_cm_event(ev);
	if (destroy)
		rdma_destroy_id(id);
}

static void *nvmf_rdma_cm_thread(void *arg)
{
	struct ernic_rdma_port *port = arg;

	while (!atomic_load(&port->stopping)) {
		struct pollfd pfd = { .fd = port->ch->fd, .events = POLLIN };
		struct rdma_cm_event *ev;

		/* The keep-alive clock of every controller the port serves: the queues leave it to this thread. */
		ernic_target_check_keep_alive(port->tgt);
		ernic_log_flush(&port->log, false);
		pthread_mutex_lock(&port->lock);
		nvmf_rdma_port_reap_locked(port);
		pthread_mutex_unlock(&port->lock);
		if (poll(&pfd, 1, NVMF_RDMA_POLL_MS) <= 0)
			continue;
		for (int i = 0; i < NVMF_RDMA_CM_EVENT_BATCH && rdma_get_cm_event(port->ch, &ev) == 0; i++)
			nvmf_rdma_handle_cm_event(port, ev);
	}
	return NULL;
}

/* -------------------------------------------------------------------- port */

int ernic_rdma_port_create(struct ernic_target *tgt, const struct ernic_rdma_port_opts *opts,
			   struct ernic_rdma_port **out, char *err, size_t errlen)
{
	const struct ernic_backend_cfg *cfg = ernic_target_cfg(tgt);
	struct ernic_rdma_port *port;
	int rc;

	/*
	 * Each slot's bounce buffer holds one command's data (NVMF_RDMA_BUF_SIZE):
	 * an MDTS above it, or none, would promise transfers the port refuses.
	 */
	if (cfg->mdts == 0 || ernic_mdts_bytes(cfg->mdts) > NVMF_RDMA_BUF_SIZE) {
		snprintf(err, errlen, "Error: nvmeof backend: mdts must be 1..%u for an NVMe/RDMA port (got %" PRIu32 ")",
			 ERNIC_MDTS, cfg->mdts);
		return -EINVAL;
	}
	if (opts && opts->buf_budget && opts->buf_budget < ERNIC_RDMA_BUF_BUDGET_MIN) {
		snprintf(err, errlen, "buffer budget %" PRIu64 ": at least %llu, an admin queue's bounce buffers",
			 opts->buf_budget, ERNIC_RDMA_BUF_BUDGET_MIN);
		return -EINVAL;
	}
	if (opts && opts->in_capsule_data &&
	    (opts->in_capsule_data % 16 || opts->in_capsule_data > ERNIC_RDMA_MAX_IN_CAPSULE_DATA)) {
		snprintf(err, errlen, "in-capsule data %" PRIu32 ": a multiple of 16 up to %u", opts->in_capsule_data,
			 ERNIC_RDMA_MAX_IN_CAPSULE_DATA);
		return -EINVAL;
	}
	port = calloc(1, sizeof(*port));
	if (!port) {
		snprintf(err, errlen, "cannot create the RDMA port: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	port->ops = nvmf_rdma_ops;
	if (opts && opts->in_capsule_data)
		port->ops.in_capsule_data_size = opts->in_capsule_data;
	port->ch = rdma_create_event_channel();
	if (!port->ch) {
		rc = errno ? -errno : -ENODEV;
		snprintf(err, errlen, "cannot create the RDMA port: %s", strerror(-rc));
		free(port);
		return rc;
	}
	/* Events are drained until EAGAIN after each poll wake-up. */
	if (fcntl(port->ch->fd, F_SETFL, fcntl(port->ch->fd, F_GETFL) | O_NONBLOCK)) {
		rc = -errno;
		snprintf(err, errlen, "cannot create the RDMA port: %s", strerror(-rc));
		rdma_destroy_event_channel(port->ch);
		free(port);
		return rc;
	}
	port->tgt = tgt;
	ernic_log_init(&port->log, opts ? opts->log : NULL, opts && opts->ident ? opts->ident : "ernic-rdma",
		       nvmf_rdma_log_kinds, NVMF_RDMA_LOG_NR, ERNIC_RDMA_LOG_BURST);
	port->places.max = opts && opts->max_queues ? opts->max_queues : ERNIC_RDMA_MAX_QUEUES;
	port->places.lock = &port->lock;
	port->idle_timeout_ns =
		(opts && opts->idle_timeout_ms ? opts->idle_timeout_ms : ERNIC_RDMA_IDLE_TIMEOUT_MS) * 1000000ull;
	port->buf_budget = opts && opts->buf_budget ? opts->buf_budget : ERNIC_RDMA_BUF_BUDGET;
	atomic_init(&port->buf_reserved, 0);
	atomic_init(&port->buf_refused, 0);
	atomic_init(&port->stopping, false);
	atomic_init(&port->stop_deadline_ns, 0);
	pthread_mutex_init(&port->lock, NULL);
	pthread_cond_init(&port->cond, NULL);
	/* The port's own reference: its queues start on the target (ernic_sq_init()). */
	ernic_target_get(tgt);
	if (ernic_trace_init(&port->trace, "rdma", opts ? opts->sample_every : 0, opts ? opts->trace : NULL,
			     opts ? opts->trace_max_bytes : 0, ERNIC_TRACE_STAGES_ALL)) {
		snprintf(err, errlen, "cannot create the RDMA port: %s", strerror(EAGAIN));
		ernic_rdma_port_destroy(port);
		return -EAGAIN;
	}
	*out = port;
	return 0;
}

int ernic_rdma_port_listen(struct ernic_rdma_port *port, const char *traddr, const char *trsvcid, char *err,
			   size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *ai;
	char svc[8];
	int rc;

	if (port->listen_id) {
		snprintf(err, errlen, "the port already listens");
		return -EINVAL;
	}
	rc = getaddrinfo(traddr, trsvcid, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "cannot use address %s port %s: %s", traddr, trsvcid, gai_strerror(rc));
		return -EINVAL;
	}
	if (rdma_create_id(port->ch, &port->listen_id, port, RDMA_PS_TCP)) {
		rc = -errno;
		freeaddrinfo(ai);
		port->listen_id = NULL;
		snprintf(err, errlen, "rdma_create_id: %s", strerror(-rc));
		return rc;
	}
	if (rdma_bind_addr(port->listen_id, ai->ai_addr) || rdma_listen(port->listen_id, NVMF_RDMA_LISTEN_BACKLOG)) {
		rc = -errno;
		freeaddrinfo(ai);
		rdma_destroy_id(port->listen_id);
		port->listen_id = NULL;
		snprintf(err, errlen, "cannot listen on %s port %s over RDMA: %s%s", traddr, trsvcid, strerror(-rc),
			 rc == -ENODEV || rc == -EADDRNOTAVAIL ? " (no RDMA device on that address?)" : "");
		return rc;
	}
	freeaddrinfo(ai);
	port->portnum = ntohs(rdma_get_src_port(port->listen_id));
	snprintf(svc, sizeof(svc), "%u", port->portnum);
	/* What a discovery controller reached through this port reports. */
	ernic_target_set_port(port->tgt, NVMF_TRTYPE_RDMA, traddr, svc);
	return 0;
}

void ernic_rdma_port_set_portid(struct ernic_rdma_port *port, uint16_t portid)
{
	port->portid = portid;
}

uint16_t ernic_rdma_port_number(const struct ernic_rdma_port *port)
{
	return port->portnum;
}

int ernic_rdma_port_start(struct ernic_rdma_port *port)
{
	int rc;

	if (!port->listen_id || port->running)
		return -EINVAL;
	rc = -pthread_create(&port->cm_thread, NULL, nvmf_rdma_cm_thread, port);
	if (!rc)
		port->running = true;
	return rc;
}

unsigned int ernic_rdma_port_nr_queues(struct ernic_rdma_port *port)
{
	unsigned int n;

	pthread_mutex_lock(&port->lock);
	n = port->places.nr;
	pthread_mutex_unlock(&port->lock);
	return n;
}

void ernic_rdma_port_stop(struct ernic_rdma_port *port, unsigned int grace_ms)
{
	if (!atomic_load(&port->stopping)) {
		atomic_store(&port->stop_deadline_ns, ernic_now_ns() + grace_ms * 1000000ull);
		atomic_store(&port->stopping, true);
	}
	if (port->running) {
		pthread_join(port->cm_thread, NULL);
		port->running = false;
	}
	/*
	 * Queues notice the deadline within NVMF_RDMA_POLL_MS. With the CM thread
	 * gone, events are drained here so that rdma_destroy_id() of a queue
	 * never waits for an acknowledgement nobody gives.
	 */
	pthread_mutex_lock(&port->lock);
	while (port->places.nr || port->zombies) {
		struct rdma_cm_event *ev;

		nvmf_rdma_port_reap_locked(port);
		if (!port->places.nr)
			break;
		pthread_mutex_unlock(&port->lock);
		while (rdma_get_cm_event(port->ch, &ev) == 0)
			nvmf_rdma_handle_cm_event(port, ev);
		poll(NULL, 0, 10);
		pthread_mutex_lock(&port->lock);
	}
	pthread_mutex_unlock(&port->lock);
	if (port->listen_id) {
		rdma_destroy_id(port->listen_id);
		port->listen_id = NULL;
	}
	ernic_trace_stop(&port->trace);
	ernic_log_flush(&port->log, true);
}

void ernic_rdma_port_stage_stats(struct ernic_rdma_port *port, struct ernic_trace_stats *s)
{
	ernic_trace_stats(&port->trace, s);
}

void ernic_rdma_port_buf_stats(struct ernic_rdma_port *port, struct ernic_rdma_buf_stats *s)
{
	s->held = atomic_load_explicit(&port->buf_reserved, memory_order_relaxed);
	s->budget = port->buf_budget;
	s->refused = atomic_load_explicit(&port->buf_refused, memory_order_relaxed);
}

void ernic_rdma_port_destroy(struct ernic_rdma_port *port)
{
	if (!port)
		return;
	ernic_rdma_port_stop(port, 1000);
	rdma_destroy_event_channel(port->ch);
	pthread_cond_destroy(&port->cond);
	pthread_mutex_destroy(&port->lock);
	ernic_trace_fini(&port->trace);
	ernic_log_fini(&port->log);
	ernic_target_put(port->tgt);
	free(port);
}
