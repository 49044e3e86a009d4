/* SPDX-License-Identifier: MIT */
/*
 * transport_inproc.c - the in-process RDMA transport, a port of a target
 * as a TCP port is: it owns the memory-region table (the RNIC's) and the
 * poller threads that take capsules off each queue pair's ring, run them
 * through the controller core and post completions, resolving keyed SGLs
 * through the emulated RDMA engine. A poller spins while there is work, yields when briefly idle and
 * sleeps on a futex when idle for long, so an idle target costs nothing and
 * a busy one answers without a system call.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inproc.h"
#include "rdma.h"

#define POLLER_MAX_QPAIRS 1024
#define POLLER_SPIN_LOOPS 256 /* empty polls (a few microseconds) before yielding the CPU */
#define POLLER_YIELD_NS 2000000ull     /* then yield the CPU this long before sleeping */
#define POLLER_SLEEP_NS 100000000ull   /* then sleep, waking this often for keep-alive */
#define POLLER_KEEP_ALIVE_NS 100000000ull

struct ernic_inproc_poller {
	_Alignas(ERNIC_CACHELINE) _Atomic uint32_t sleeping; /* futex word */
	_Alignas(ERNIC_CACHELINE) _Atomic uint64_t epoch;
	_Atomic(struct ernic_inproc_qpair *) qpairs[POLLER_MAX_QPAIRS];
	_Atomic uint32_t nr_slots;
	_Atomic bool stop;
	struct ernic_inproc_port *port;
	uint32_t id;
	pthread_t thread;
	bool started;
};

struct ernic_inproc_port {
	struct ernic_port port; /* registration with the target: its counters sum our table */
	struct ernic_target *tgt;
	struct ernic_mr_table *mr;
	uint16_t portid;
	pthread_mutex_t lock; /* slot assignment */
	uint32_t nr_pollers;
	struct ernic_inproc_poller pollers[];
};

static long futex(_Atomic uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* ------------------------------------------------------------ transport ops */

static uint16_t inproc_map_data(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf)
{
	const struct ernic_inproc_qpair *qp = req->sq->transport;

	return ernic_rdma_map_keyed_sgl(qp->port->mr, qp->pd, &req->sqe.dptr, len, dir, buf);
}

static void inproc_post(struct ernic_inproc_qpair *qp, struct ernic_req *req)
{
	struct ernic_inproc_cpl *cpl = &qp->cq_ring[qp->t_cq_tail & qp->mask];

	cpl->cqe = req->cqe;
	cpl->flags = 0;
	if (ernic_rdma_send_with_invalidate(qp->port->mr, qp->pd, &req->sqe.dptr)) {
		cpl->flags = ERNIC_INPROC_CPL_WITH_INV;
		cpl->inv_rkey = req->sqe.dptr.keyed.key;
	}
	/* Published with the completion by the release below. */
	if (ERNIC_UNLIKELY(req->stamps != NULL))
		req->stamps->post = ernic_now_ns();
	qp->t_cq_tail++;
	atomic_store_explicit(&qp->cq_tail, qp->t_cq_tail, memory_order_release);
}

/* Every request the core completes is one of qp->reqs: inproc_process() hands it no other. */
static void inproc_complete(struct ernic_req *req)
{
	struct ernic_inproc_qpair *qp = req->sq->transport;

	/* Only the admin queue completes from other threads (held AERs). */
	if (qp->admin) {
		pthread_mutex_lock(&qp->cq_lock);
		qp->held[req - qp->reqs] = 0;
		inproc_post(qp, req);
		pthread_mutex_unlock(&qp->cq_lock);
	} else {
		inproc_post(qp, req);
	}
}

/*
 * A capsule whose CID is that of a held AER: it never reaches the core and
 * owns no slot, so it is answered here. The slot (and its held mark) stays
 * the AER's; no memory region is invalidated for a command never taken.
 */
static void inproc_refuse_cid_conflict(struct ernic_inproc_qpair *qp, const struct nvme_sqe *sqe)
{
	struct ernic_inproc_cpl *cpl;
	struct ernic_req conflict = { .sqe = *sqe, .sq = &qp->sq };

	ernic_req_set_status(&conflict, NVME_SC_CMDID_CONFLICT);
	/* Held AERs exist on the admin queue only, whose CQ other threads also fill. */
	pthread_mutex_lock(&qp->cq_lock);
	cpl = &qp->cq_ring[qp->t_cq_tail & qp->mask];
	cpl->cqe = conflict.cqe;
	cpl->flags = 0;
	qp->t_cq_tail++;
	atomic_store_explicit(&qp->cq_tail, qp->t_cq_tail, memory_order_release);
	pthread_mutex_unlock(&qp->cq_lock);
}

static const struct ernic_transport_ops inproc_ops = {
	.name = "rdma",
	.trtype = NVMF_TRTYPE_RDMA,
	.map_data = inproc_map_data,
	.complete = inproc_complete,
	.in_capsule_data_size = 0,
};

/* ------------------------------------------------------------------ polling */

/*
 * A queue pair of a fatal controller goes as an RDMA QP in the error state
 * does: it leaves its controller (freed with its last queue; held AERs
 * complete with Command Aborted due to SQ Deletion), the host sees it lost
 * (ernic_host_qpair_connected()), and inproc_flush() answers whatever it
 * still posts. Called by the queue's own poller.
 */
static void inproc_lose(struct ernic_inproc_qpair *qp)
{
	ernic_sq_detach(&qp->sq);
	qp->t_lost = true;
	atomic_store_explicit(&qp->lost, 1, memory_order_release);
}

/*
 * Every capsule of a lost queue pair completes, unrun, with Command Aborted
 * due to SQ Deletion: the CQE stands in for a flushed work completion, so
 * the host reaps each command once and its MRs go back to its pool.
 */
static uint32_t inproc_flush(struct ernic_inproc_qpair *qp)
{
	uint32_t tail = atomic_load_explicit(&qp->sq_tail, memory_order_acquire);
	uint32_t head = qp->t_sq_head;
	uint32_t n = tail - head;

	while (head != tail) {
		const struct nvme_sqe *sqe = &qp->sq_ring[head & qp->mask];
		uint32_t slot = sqe->cid & qp->mask;
		struct ernic_req *req = &qp->reqs[slot];
		struct ernic_stage_stamps *st = &qp->stamps[slot];

		head++;
		req->sqe = *sqe;
		req->stamps = NULL;
		req->cqe.dw0 = 0;
		req->cqe.dw1 = 0;
		if (ERNIC_UNLIKELY(st->sampled))
			st->pickup = st->post = ernic_now_ns();
		ernic_req_set_status(req, NVME_SC_ABORT_SQ_DELETION);
		inproc_complete(req);
	}
	qp->t_sq_head = head;
	return n;
}

/* Run every capsule posted so far; returns how many. */
static uint32_t inproc_process(struct ernic_inproc_qpair *qp)
{
	uint32_t tail = atomic_load_explicit(&qp->sq_tail, memory_order_acquire);
	uint32_t head = qp->t_sq_head;
	uint32_t n = tail - head;

	if (ERNIC_UNLIKELY(qp->t_lost))
		return inproc_flush(qp);

	while (head != tail) {
		const struct nvme_sqe *sqe = &qp->sq_ring[head & qp->mask];
		uint32_t slot = sqe->cid & qp->mask;
		struct ernic_req *req = &qp->reqs[slot];
		struct ernic_stage_stamps *st = &qp->stamps[slot];

		head++;
		if (ERNIC_UNLIKELY(qp->held[slot])) {
			/* The CID of a held AER came back before the AER completed. */
			inproc_refuse_cid_conflict(qp, sqe);
			continue;
		}
		req->sqe = *sqe;
		/* The host marked the slot before its doorbell (the acquire above). */
		req->stamps = NULL;
		if (ERNIC_UNLIKELY(st->sampled)) {
			st->pickup = ernic_now_ns();
			req->stamps = st;
		}
		if (ERNIC_UNLIKELY(qp->admin)) {
			/*
			 * Marked held before it runs: an event may complete the AER on
			 * another thread before ernic_req_exec() returns. cq_lock is
			 * a leaf lock, never held across the core.
			 */
			qp->held[slot] = sqe->opc == NVME_ADMIN_ASYNC_EVENT;
			if (ernic_req_exec(req) != ERNIC_EXEC_HELD)
				inproc_complete(req);
			continue;
		}
		/* A fatal controller's commands are answered too: this queue has no connection to close. */
		if (ERNIC_LIKELY(ernic_req_exec(req) != ERNIC_EXEC_HELD))
			inproc_post(qp, req);
	}
	qp->t_sq_head = head;
	return n;
}

static bool poller_has_work(struct ernic_inproc_poller *p)
{
	uint32_t n = atomic_load(&p->nr_slots);

	for (uint32_t i = 0; i < n; i++) {
		struct ernic_inproc_qpair *qp = atomic_load(&p->qpairs[i]);

		if (qp && atomic_load_explicit(&qp->sq_tail, memory_order_acquire) != qp->t_sq_head)
			return true;
	}
	return false;
}

/*
 * A poller's periodic work: poller 0 runs the target's keep-alive timers,
 * and each poller tears down its queue pairs whose controller became fatal
 * (keep-alive expired, admin queue lost), as TCP closes their connections.
 */
static void poller_tick(struct ernic_inproc_poller *p)
{
	uint32_t n = atomic_load_explicit(&p->nr_slots, memory_order_acquire);

	if (p->id == 0)
		ernic_target_check_keep_alive(p->port->tgt);
	for (uint32_t i = 0; i < n; i++) {
		struct ernic_inproc_qpair *qp = atomic_load_explicit(&p->qpairs[i], memory_order_acquire);

		if (qp && !qp->t_lost && ernic_sq_ctrlr_fatal(&qp->sq))
			inproc_lose(qp);
	}
}

static void *poller_main(void *arg)
{
	struct ernic_inproc_poller *p = arg;
	uint64_t idle_since = 0, last_tick = ernic_now_ns(), loops = 0;
	uint32_t idle_spins = 0;
	char name[16];

	snprintf(name, sizeof(name), "ernic-poll%u", p->id);
	pthread_setname_np(pthread_self(), name);
	while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
		uint32_t work = 0, n;
		uint64_t now;

		/* A new epoch before loading slots: qpair removal waits on it. */
		atomic_fetch_add(&p->epoch, 1);
		n = atomic_load_explicit(&p->nr_slots, memory_order_acquire);
		for (uint32_t i = 0; i < n; i++) {
			struct ernic_inproc_qpair *qp = atomic_load_explicit(&p->qpairs[i], memory_order_acquire);

			if (qp)
				work += inproc_process(qp);
		}
		/* Ticks run even when the poller never goes idle. */
		if (ERNIC_UNLIKELY((++loops & 0xFFFF) == 0)) {
			now = ernic_now_ns();
			if (now - last_tick > POLLER_KEEP_ALIVE_NS) {
				poller_tick(p);
				last_tick = now;
			}
		}
		if (work) {
			idle_spins = 0;
			idle_since = 0;
			continue;
		}
		/* Short gaps between capsules: spin without touching the clock. */
		if (++idle_spins < POLLER_SPIN_LOOPS) {
			cpu_relax();
			continue;
		}
		now = ernic_now_ns();
		if (!idle_since)
			idle_since = now;
		if (now - last_tick > POLLER_KEEP_ALIVE_NS) {
			poller_tick(p);
			last_tick = now;
		}
		if (now - idle_since < POLLER_YIELD_NS) {
			sched_yield();
		} else {
			struct timespec ts = { 0, (long)POLLER_SLEEP_NS };

			/*
			 * Announce the sleep, then look once more: a doorbell rung before the store is seen here.
			 * The fence pairs with the doorbell's (Dekker): the C11 model orders a store before a later
			 * load of another variable only through seq_cst fences on both sides, whatever x86 does.
			 */
			atomic_store(&p->sleeping, 1);
			atomic_thread_fence(memory_order_seq_cst);
			if (!poller_has_work(p) && !atomic_load(&p->stop))
				futex(&p->sleeping, FUTEX_WAIT_PRIVATE, 1, &ts);
			atomic_store(&p->sleeping, 0);
			/* Woken: go on yielding for a while before sleeping again. */
			idle_since = ernic_now_ns();
		}
	}
	return NULL;
}

static void poller_wake(struct ernic_inproc_poller *p)
{
	if (atomic_load_explicit(&p->sleeping, memory_order_relaxed) &&
	    atomic_exchange(&p->sleeping, 0))
		futex(&p->sleeping, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void ernic_inproc_ring_doorbell(struct ernic_inproc_qpair *qp, uint32_t tail)
{
	atomic_store_explicit(&qp->sq_tail, tail, memory_order_release);
	/* Pairs with the poller's store to sleeping and its second look (Dekker). */
	atomic_thread_fence(memory_order_seq_cst);
	if (qp->poller)
		poller_wake(qp->poller);
}

static void inproc_stop_pollers(struct ernic_inproc_port *port)
{
	for (uint32_t i = 0; i < port->nr_pollers; i++) {
		struct ernic_inproc_poller *p = &port->pollers[i];

		if (!p->started)
			continue;
		atomic_store(&p->stop, true);
		atomic_store(&p->sleeping, 1);
		futex(&p->sleeping, FUTEX_WAKE_PRIVATE, 1, NULL);
		pthread_join(p->thread, NULL);
		p->started = false;
	}
}

static int inproc_start_pollers(struct ernic_inproc_port *port, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < port->nr_pollers; i++) {
		struct ernic_inproc_poller *p = &port->pollers[i];
		int rc;

		p->port = port;
		p->id = i;
		rc = pthread_create(&p->thread, NULL, poller_main, p);
		if (rc) {
			snprintf(err, errlen, "Error: cannot start poller thread %u: %s", i, strerror(rc));
			inproc_stop_pollers(port);
			return -rc;
		}
		p->started = true;
	}
	return 0;
}

int ernic_inproc_port_create(struct ernic_target *tgt, const struct ernic_inproc_port_opts *opts,
			     struct ernic_inproc_port **out, char *err, size_t errlen)
{
	const struct ernic_backend_cfg *cfg = ernic_target_cfg(tgt);
	uint32_t pollers = opts && opts->pollers ? opts->pollers : cfg->pollers ? cfg->pollers : 1;
	struct ernic_inproc_port *port;
	int rc;

	*out = NULL;
	/* A host's memory region maps a bounded page list: RDMA has no "no limit" (ERNIC_INPROC_MDTS_MAX). */
	if (cfg->mdts == 0 || cfg->mdts > ERNIC_INPROC_MDTS_MAX) {
		snprintf(err, errlen,
			 "Error: nvmeof backend: mdts must be 1..%u for an in-process (RDMA) port (got %" PRIu32 ")",
			 ERNIC_INPROC_MDTS_MAX, cfg->mdts);
		return -EINVAL;
	}
	port = calloc(1, sizeof(*port) + pollers * sizeof(port->pollers[0]));
	if (!port) {
		snprintf(err, errlen, "Error: out of memory starting %u pollers", pollers);
		return -ENOMEM;
	}
	port->tgt = tgt;
	port->portid = opts ? opts->portid : 0;
	port->nr_pollers = pollers;
	pthread_mutex_init(&port->lock, NULL);
	port->mr = ernic_mr_table_create(cfg->max_mr);
	if (!port->mr) {
		snprintf(err, errlen, "Error: cannot create a memory-region table of %u entries", cfg->max_mr);
		pthread_mutex_destroy(&port->lock);
		free(port);
		return -ENOMEM;
	}
	rc = inproc_start_pollers(port, err, errlen);
	if (rc) {
		ernic_mr_table_destroy(port->mr);
		pthread_mutex_destroy(&port->lock);
		free(port);
		return rc;
	}
	port->port.mr = port->mr;
	/* The port's own reference: its queues start on the target (ernic_sq_init()). */
	ernic_target_get(tgt);
	ernic_target_add_port(tgt, &port->port);
	*out = port;
	return 0;
}

void ernic_inproc_port_destroy(struct ernic_inproc_port *port)
{
	if (!port)
		return;
	ernic_target_remove_port(port->tgt, &port->port);
	inproc_stop_pollers(port);
	ernic_mr_table_destroy(port->mr);
	pthread_mutex_destroy(&port->lock);
	ernic_target_put(port->tgt);
	free(port);
}

struct ernic_mr_table *ernic_inproc_port_mr_table(struct ernic_inproc_port *port)
{
	return port->mr;
}

struct ernic_target *ernic_inproc_port_target(const struct ernic_inproc_port *port)
{
	return port->tgt;
}

/* ---------------------------------------------------------------- qpairs */

static void qpair_free(struct ernic_inproc_qpair *qp)
{
	free(qp->sq_ring);
	free(qp->cq_ring);
	free(qp->reqs);
	free(qp->held);
	free(qp->stamps);
	free(qp);
}

struct ernic_inproc_qpair *ernic_inproc_qpair_create(struct ernic_inproc_port *port, uint32_t depth,
						     uint16_t qid)
{
	struct ernic_inproc_qpair *qp;
	struct ernic_inproc_poller *p;
	uint32_t entries = 1;

	if (!port || depth == 0 || depth > 65536)
		return NULL;
	while (entries < depth)
		entries <<= 1;
	qp = aligned_alloc(ERNIC_CACHELINE, sizeof(*qp));
	if (!qp)
		return NULL;
	memset(qp, 0, sizeof(*qp));
	qp->entries = entries;
	qp->mask = entries - 1;
	qp->sq_ring = aligned_alloc(ERNIC_CACHELINE, entries * sizeof(*qp->sq_ring));
	qp->cq_ring = aligned_alloc(ERNIC_CACHELINE, entries * sizeof(*qp->cq_ring));
	qp->reqs = calloc(entries, sizeof(*qp->reqs));
	qp->held = calloc(entries, 1);
	qp->stamps = calloc(entries, sizeof(*qp->stamps));
	if (!qp->sq_ring || !qp->cq_ring || !qp->reqs || !qp->held || !qp->stamps) {
		qpair_free(qp);
		return NULL;
	}
	memset(qp->cq_ring, 0, entries * sizeof(*qp->cq_ring));
	qp->port = port;
	qp->pd = ernic_mr_pd_alloc(port->mr);
	qp->admin = qid == 0;
	pthread_mutex_init(&qp->cq_lock, NULL);
	ernic_sq_init(&qp->sq, port->tgt, &inproc_ops, qp);
	qp->sq.portid = port->portid;
	qp->sq.qid_expected = qid;
	for (uint32_t i = 0; i < entries; i++)
		qp->reqs[i].sq = &qp->sq;

	/* The admin queue and I/O queue 1 share poller 0; I/O queues spread round robin. */
	p = &port->pollers[qid ? (uint32_t)(qid - 1) % port->nr_pollers : 0];
	pthread_mutex_lock(&port->lock);
	for (qp->poller_slot = 0; qp->poller_slot < POLLER_MAX_QPAIRS; qp->poller_slot++)
		if (!atomic_load(&p->qpairs[qp->poller_slot]))
			break;
	if (qp->poller_slot == POLLER_MAX_QPAIRS) {
		pthread_mutex_unlock(&port->lock);
		ernic_sq_destroy(&qp->sq);
		pthread_mutex_destroy(&qp->cq_lock);
		qpair_free(qp);
		return NULL;
	}
	qp->poller = p;
	atomic_store(&p->qpairs[qp->poller_slot], qp);
	if (qp->poller_slot >= atomic_load(&p->nr_slots))
		atomic_store(&p->nr_slots, qp->poller_slot + 1);
	pthread_mutex_unlock(&port->lock);
	return qp;
}

void ernic_inproc_qpair_destroy(struct ernic_inproc_qpair *qp)
{
	struct ernic_inproc_poller *p;
	uint64_t epoch;

	if (!qp)
		return;
	p = qp->poller;
	atomic_store(&p->qpairs[qp->poller_slot], NULL);
	/*
	 * The poller may still be inside this qpair from a slot load made before
	 * the store above; it starts a new epoch only after leaving it.
	 */
	epoch = atomic_load(&p->epoch);
	while (p->started && !atomic_load(&p->stop) && atomic_load(&p->epoch) == epoch) {
		poller_wake(p);
		sched_yield();
	}
	ernic_sq_destroy(&qp->sq);
	pthread_mutex_destroy(&qp->cq_lock);
	qpair_free(qp);
}
