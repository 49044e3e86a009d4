/* SPDX-License-Identifier: MIT */
/*
 * rdma.h - the NVMe/RDMA port of a target (RDMA Transport Binding 1.0) over
 * real verbs (rdma-core's librdmacm and libibverbs), the public API ernicd is
 * built on when the rdma-core headers are present (ERNIC_HAVE_RDMA).
 *
 * A port owns an RDMA CM listener and the queue pairs it accepts, each one
 * NVMe queue served by its own thread. Command capsules arrive by SEND into
 * receive buffers posted per queue; keyed SGL data moves by RDMA READ (host
 * writes) and RDMA WRITE (host reads) between the host's memory regions and a
 * registered bounce buffer per request slot; the completion goes back by SEND,
 * or SEND with Invalidate when the descriptor asks for it. Create the target
 * first (ernic_target_create()) and destroy the port before it.
 */
#ifndef ERNIC_RDMA_PORT_H
#define ERNIC_RDMA_PORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ernic/ernic.h"
#include "ernic/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ernic_rdma_port;

/*
 * Queue pairs a port serves at once: each is a thread, a completion queue and
 * registered bounce buffers of 2 x entries x 128 KiB, so a peer sending
 * connect requests in a loop must not be able to exhaust the process or the
 * device. 256 is 64 controllers of an admin and three I/O queues each, as
 * ERNIC_TCP_MAX_CONNECTIONS.
 */
#define ERNIC_RDMA_MAX_QUEUES 256
/* How long a queue pair may serve no controller: from its accept to its Connect, from its Disconnect to its close. */
#define ERNIC_RDMA_IDLE_TIMEOUT_MS 10000
/*
 * Log lines of one kind (connect, connection request rejected, connect
 * refused, disconnect, transport error) a port writes per second; the rest
 * are counted in one "suppressed N similar lines" line.
 */
#define ERNIC_RDMA_LOG_BURST 32
/*
 * The most in-capsule data a port offers per I/O queue command (and
 * nvmet-rdma's largest): every receive buffer of a queue holds that much.
 */
#define ERNIC_RDMA_MAX_IN_CAPSULE_DATA 16384u
/*
 * Bytes of Connected queues' bounce buffers a port registers, and so pins, at
 * most (ernic_rdma_port_opts.buf_budget). A queue's are 2 x entries x 128 KiB:
 * 32 MiB for a Linux host's 128-entry I/O queue, 8 MiB for its admin queue,
 * so ERNIC_RDMA_MAX_QUEUES queues could otherwise pin 8 GiB. The default is
 * half that: past it a Connect is refused, not made to wait as over NVMe/TCP,
 * so it leaves room for 30 controllers of four such I/O queues. The least a
 * budget may be is one admin queue's: less would refuse every controller.
 */
#define ERNIC_RDMA_BUF_BUDGET (4ull << 30)
#define ERNIC_RDMA_BUF_BUDGET_MIN (2ull * ERNIC_ADMIN_QUEUE_SIZE * ERNIC_MAX_XFER)

/**
 * struct ernic_rdma_port_opts - how a port behaves
 * @log: one line per connect, rejected connection request (with its NVMe/RDMA
 *	CM status), refused Connect and disconnect (host NQN, qid, cntlid, peer)
 *	and per transport error, at most ERNIC_RDMA_LOG_BURST of a kind per
 *	second; NULL logs nothing
 * @ident: prefix of those lines (default "ernic-rdma")
 * @max_queues: queue pairs served at once (0: ERNIC_RDMA_MAX_QUEUES); a
 *	connect request past them takes the place of the oldest queue pair
 *	never Connected, which closes within NVMF_RDMA_POLL_MS, and is
 *	rejected with NVME_RDMA_CM_NO_RSC when every place is a queue
 * @sample_every: stamp 1 in this many commands on each I/O queue (0: none);
 *	one that is not sampled pays a decrement and a branch
 * @trace: where a writer thread puts the header of ernic/trace.h and then one
 *	line per sampled command, every ERNIC_TRACE_FLUSH_MS and when the port
 *	stops; NULL writes none (the stage sums are kept either way)
 * @trace_max_bytes: with @trace, the file's size limit, its header included
 *	(0: none): past it whole records are left out and counted
 *	(ernic_trace_stats.over_limit), so a long run cannot fill a disk
 * @idle_timeout_ms: how long a queue pair may go without a controller: it
 *	closes when its Connect has not succeeded that long after it was
 *	accepted, or when a Disconnect's answer has not been taken that long
 *	after (a host that never posts a receive for it); 0:
 *	ERNIC_RDMA_IDLE_TIMEOUT_MS. A connected queue is keep-alive's to judge.
 * @in_capsule_data: bytes of data an I/O queue command may carry after it in
 *	its SEND (SGL Data Block, offset subtype), a multiple of 16 up to
 *	ERNIC_RDMA_MAX_IN_CAPSULE_DATA; Identify reports IOCCSZ 4 + this / 16.
 *	0, the default, is the seed's RNIC: IOCCSZ 4, every command's data moved
 *	by RDMA READ or WRITE. nvmet-rdma's default is 4096.
 * @buf_budget: bytes of Connected queues' bounce buffers the port holds at
 *	most (0: ERNIC_RDMA_BUF_BUDGET; at least ERNIC_RDMA_BUF_BUDGET_MIN). A
 *	Connect whose queue's buffers would pass it is answered Connect
 *	Controller Busy before the controller core sees it, so no controller
 *	or queue comes of it; a host may try again once another queue closes.
 */
struct ernic_rdma_port_opts {
	FILE *log;
	const char *ident;
	unsigned int max_queues;
	uint32_t sample_every;
	FILE *trace;
	uint64_t trace_max_bytes;
	uint32_t in_capsule_data;
	unsigned int idle_timeout_ms;
	uint64_t buf_budget;
};

/**
 * struct ernic_rdma_buf_stats - the port's bounce buffers against its budget
 * @held: bytes reserved for the bounce buffers of queues Connected (or
 *	Connecting) now
 * @budget: the most @held may reach (ernic_rdma_port_opts.buf_budget)
 * @refused: Connects answered Controller Busy because theirs did not fit
 */
struct ernic_rdma_buf_stats {
	uint64_t held;
	uint64_t budget;
	uint64_t refused;
};

/*
 * A port of @tgt that does not listen yet: opens the RDMA CM event channel.
 * Returns 0 or -errno with @err set (-ENODEV when the kernel has no RDMA CM,
 * -EINVAL for an @in_capsule_data the port cannot offer, a @buf_budget under
 * ERNIC_RDMA_BUF_BUDGET_MIN, or a target whose MDTS is 0 or above ERNIC_MDTS,
 * more than a slot's buffer holds).
 */
int ernic_rdma_port_create(struct ernic_target *tgt, const struct ernic_rdma_port_opts *opts,
			   struct ernic_rdma_port **out, char *err, size_t errlen);
/*
 * Bind @traddr:@trsvcid (numeric; the address of an RDMA device's netdev,
 * "0" picks a free port), listen, and tell the target's discovery log about
 * it (trtype RDMA). Returns 0 or -errno with @err set.
 */
int ernic_rdma_port_listen(struct ernic_rdma_port *port, const char *traddr, const char *trsvcid, char *err,
			   size_t errlen);
/*
 * On a set's home target (ernic/nvmf.h): the Port ID ernic_nvmf_port_add()
 * gave this listener, which a Connect must come through to reach a linked
 * subsystem. Call before ernic_rdma_port_start().
 */
void ernic_rdma_port_set_portid(struct ernic_rdma_port *port, uint16_t portid);
/* The port number actually bound (after listening on "0"). */
uint16_t ernic_rdma_port_number(const struct ernic_rdma_port *port);
/* Start the thread that takes RDMA CM events: connection requests, disconnects. */
int ernic_rdma_port_start(struct ernic_rdma_port *port);
/* Queue pairs being served now. */
unsigned int ernic_rdma_port_nr_queues(struct ernic_rdma_port *port);
/*
 * Stop accepting, give the queues up to @grace_ms to finish what they are
 * moving, disconnect every queue pair and wait for their threads.
 */
void ernic_rdma_port_stop(struct ernic_rdma_port *port, unsigned int grace_ms);
/* The stage times of the sampled commands so far; safe at any time from any thread. */
void ernic_rdma_port_stage_stats(struct ernic_rdma_port *port, struct ernic_trace_stats *s);
/* The bounce buffers against the budget; safe at any time from any thread. */
void ernic_rdma_port_buf_stats(struct ernic_rdma_port *port, struct ernic_rdma_buf_stats *s);
/* Stop (with a short grace) and free. */
void ernic_rdma_port_destroy(struct ernic_rdma_port *port);

#ifdef __cplusplus
}
#endif
#endif /* ERNIC_RDMA_PORT_H */
