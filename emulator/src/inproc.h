/* SPDX-License-Identifier: MIT */
/*
 * inproc.h - the in-process capsule path shared by the target side
 * (transport_inproc.c) and the host side (host.c).
 *
 * One queue pair is two single-producer single-consumer rings: 64-byte
 * command capsules host -> target, completions target -> host. The host
 * never has more than its queue depth outstanding, so neither ring can
 * overflow and neither side needs a lock or a full check on the I/O path.
 */
#ifndef ERNIC_INPROC_H
#define ERNIC_INPROC_H

#include "target.h"

/* The completion as it arrives at the host: the CQE plus what an RDMA work completion adds. */
struct ernic_inproc_cpl {
	struct nvme_cqe cqe;
	uint32_t inv_rkey; /* with ERNIC_INPROC_CPL_WITH_INV: the rkey the target invalidated */
	uint32_t flags;
	uint64_t rsvd;
};
#define ERNIC_INPROC_CPL_WITH_INV (1u << 0)
NVME_CHECK_SIZE(struct ernic_inproc_cpl, 32);

struct ernic_inproc_poller;

struct ernic_inproc_qpair {
	/* Each index on its own cache line: one writer each. */
	_Alignas(ERNIC_CACHELINE) _Atomic uint32_t sq_tail; /* host */
	_Alignas(ERNIC_CACHELINE) _Atomic uint32_t cq_tail; /* target */
	/*
	 * Target: nonzero once the queue pair is torn down (its controller
	 * failed), as a host sees an RDMA QP enter the error state. Beside
	 * cq_tail, which the host reads anyway.
	 */
	_Atomic uint32_t lost;

	_Alignas(ERNIC_CACHELINE) uint32_t entries; /* a power of two */
	uint32_t mask;
	struct nvme_sqe *sq_ring;
	struct ernic_inproc_cpl *cq_ring;
	/* Stage stamps of sampled commands, indexed by CID & mask like reqs. */
	struct ernic_stage_stamps *stamps;

	/* Target side */
	_Alignas(ERNIC_CACHELINE) uint32_t t_sq_head;
	uint32_t t_cq_tail;
	struct ernic_req *reqs; /* indexed by CID & mask */
	uint8_t *held;
	struct ernic_sq sq;
	struct ernic_inproc_port *port;
	/* The host queue pair's protection domain: its MR pool is allocated in it. */
	uint32_t pd;
	struct ernic_inproc_poller *poller;
	uint32_t poller_slot;
	bool admin;
	bool t_lost; /* the poller's copy of lost */
	pthread_mutex_t cq_lock; /* admin queue only: held AERs complete from other threads */
};

/* The target a port serves (the host reads its configuration and counters). */
struct ernic_target *ernic_inproc_port_target(const struct ernic_inproc_port *port);

/*
 * Create a queue pair of at least @depth entries on @port, in a protection
 * domain of its own, and hand it to one of its pollers (@qid picks which).
 * The host allocates the queue's memory regions in qp->pd: the target side
 * resolves and invalidates only those. The Connect capsule that binds it to
 * a controller travels through it like any other.
 */
struct ernic_inproc_qpair *ernic_inproc_qpair_create(struct ernic_inproc_port *port, uint32_t depth,
						     uint16_t qid);
/* Take the queue pair from its poller, detach it from its controller, free it. */
void ernic_inproc_qpair_destroy(struct ernic_inproc_qpair *qp);
/* Publish new capsules up to @tail and wake the poller if it sleeps. */
void ernic_inproc_ring_doorbell(struct ernic_inproc_qpair *qp, uint32_t tail);

#endif
