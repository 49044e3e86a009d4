/* SPDX-License-Identifier: MIT */
/*
 * transport_tcp.h - the NVMe/TCP transport (TCP Transport Binding 1.0).
 *
 * A port owns a listening socket and the connections accepted on it. Each
 * connection is one NVMe queue served by its own thread with blocking I/O;
 * every command goes through the same controller core as the in-process
 * transport (ernic_req_exec), so this file only moves PDUs.
 */
#ifndef ERNIC_TRANSPORT_TCP_H
#define ERNIC_TRANSPORT_TCP_H

#include <stdint.h>
#include <stdio.h>

#include "target.h"

/* MAXH2CDATA advertised in ICResp: one H2CData PDU carries at most this much. */
#define ERNIC_TCP_MAXH2CDATA (128u * 1024)
/*
 * In-capsule data accepted on any queue. Identify reports IOCCSZ for the
 * RDMA-shaped core, but a Linux host sends Connect data in-capsule on the admin
 * queue (NVME_TCP_ADMIN_CCSZ, 8 KiB) whatever IOCCSZ says.
 */
#define ERNIC_TCP_IN_CAPSULE_DATA (8u * 1024)
/*
 * Connections a port serves at once: each is a thread and up to
 * ERNIC_MAX_QUEUE_SIZE request slots, so a peer opening sockets in a loop
 * must not be able to exhaust the process. 256 is 64 controllers of an admin
 * and three I/O queues each.
 */
#define ERNIC_TCP_MAX_CONNECTIONS 256
/* Time to complete ICReq and Connect, or to finish a PDU once started. */
#define ERNIC_TCP_IDLE_TIMEOUT_MS 10000
/*
 * Log lines of one kind (connect, connect refused, disconnect, transport
 * error, connection closed early) a port writes per second; the rest are
 * counted in one "suppressed N similar lines" line.
 */
#define ERNIC_TCP_LOG_BURST 32
/* How often a connection thread wakes to check keep-alive and shutdown. */
#define ERNIC_TCP_POLL_MS 100

struct ernic_tcp_port;

/**
 * struct ernic_tcp_port_opts - how a port behaves
 * @log: one line per connect and disconnect (host NQN, qid, cntlid, peer)
 *	and per fatal transport error, at most ERNIC_TCP_LOG_BURST of a kind per
 *	second, host NQNs escaped; NULL logs nothing
 * @ident: prefix of those lines (default "ernic-tcp")
 * @maxh2cdata: MAXH2CDATA to advertise (0: ERNIC_TCP_MAXH2CDATA); at least 4096
 *	and a multiple of 4, as a Linux host requires
 * @max_connections: connections served at once (0: ERNIC_TCP_MAX_CONNECTIONS);
 *	one more is closed as soon as it is accepted
 * @idle_timeout_ms: how long a connection may take to complete ICReq and
 *	Connect, and to finish a PDU once it started (0: ERNIC_TCP_IDLE_TIMEOUT_MS);
 *	a connected queue idle between PDUs is keep-alive's to judge, not this
 */
struct ernic_tcp_port_opts {
	FILE *log;
	const char *ident;
	uint32_t maxh2cdata;
	unsigned int max_connections;
	unsigned int idle_timeout_ms;
};

int ernic_tcp_port_create(struct ernic_target *tgt, const struct ernic_tcp_port_opts *opts,
			  struct ernic_tcp_port **out);
/*
 * Bind and listen on @traddr:@trsvcid (numeric; "0" picks a free port) and
 * tell the target's discovery log about it. Returns 0 or -errno with @err set.
 */
int ernic_tcp_port_listen(struct ernic_tcp_port *port, const char *traddr, const char *trsvcid, char *err,
			  size_t errlen);
/* The port number actually bound (after listening on "0"). */
uint16_t ernic_tcp_port_number(const struct ernic_tcp_port *port);
/* Start the thread that accepts connections and serves each on its own thread. */
int ernic_tcp_port_start(struct ernic_tcp_port *port);
/*
 * Serve one already connected stream socket (any family, e.g. one end of a
 * socketpair) as an NVMe/TCP connection on its own thread. Takes @fd.
 */
int ernic_tcp_serve_fd(struct ernic_tcp_port *port, int fd);
/* Connections being served now. */
unsigned int ernic_tcp_port_nr_conns(struct ernic_tcp_port *port);
/*
 * Stop accepting, let each connection finish the command it is moving data
 * for (up to @grace_ms), close every connection and wait for their threads.
 */
void ernic_tcp_port_stop(struct ernic_tcp_port *port, unsigned int grace_ms);
/* Stop (with a short grace) and free. */
void ernic_tcp_port_destroy(struct ernic_tcp_port *port);

#endif /* ERNIC_TRANSPORT_TCP_H */
