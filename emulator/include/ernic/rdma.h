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

#ifdef __cplusplus
extern "C" {
#endif

struct ernic_rdma_port;

/**
 * struct ernic_rdma_port_opts - how a port behaves
 * @log: one line per connect, refused connection request and disconnect
 *	(host NQN, qid, cntlid, peer) and per transport error; NULL logs nothing
 * @ident: prefix of those lines (default "ernic-rdma")
 */
struct ernic_rdma_port_opts {
	FILE *log;
	const char *ident;
};

/*
 * A port of @tgt that does not listen yet: opens the RDMA CM event channel.
 * Returns 0 or -errno (-ENODEV when the kernel has no RDMA CM).
 */
int ernic_rdma_port_create(struct ernic_target *tgt, const struct ernic_rdma_port_opts *opts,
			   struct ernic_rdma_port **out);
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
/* Stop (with a short grace) and free. */
void ernic_rdma_port_destroy(struct ernic_rdma_port *port);

#ifdef __cplusplus
}
#endif
#endif /* ERNIC_RDMA_PORT_H */
