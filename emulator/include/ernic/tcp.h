/* SPDX-License-Identifier: MIT */
/*
 * tcp.h - the NVMe/TCP port of a target (TCP Transport Binding 1.0), the
 * public API ernicd is built on.
 *
 * A port owns a listening socket and the connections accepted on it, each
 * one NVMe queue served by its own thread. Create the target first
 * (ernic_target_create()) and destroy the port before it.
 */
#ifndef ERNIC_TCP_H
#define ERNIC_TCP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ernic/ernic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MAXH2CDATA advertised in ICResp: one H2CData PDU carries at most this much. */
#define ERNIC_TCP_MAXH2CDATA (128u * 1024)

struct ernic_tcp_port;

/*
 * Per-stage stamps of sampled commands on the port's I/O queues, CLOCK_MONOTONIC
 * nanoseconds (the clock of Linux tracefs with trace_clock=mono, so a host
 * trace on the same machine joins them). A command passes, in this order:
 */
enum ernic_tcp_stage {
	ERNIC_TCP_STAGE_RECEIVED,      /* capsule (and in-capsule data) received -> handed to the core */
	ERNIC_TCP_STAGE_CORE_SUBMIT,   /* handed to the core -> first namespace backend call */
	ERNIC_TCP_STAGE_STORAGE,       /* first backend call -> last one returned */
	ERNIC_TCP_STAGE_CORE_COMPLETE, /* last backend call returned -> response queued */
	ERNIC_TCP_STAGE_SEND,	       /* response queued -> its last byte handed to the socket */
	ERNIC_TCP_STAGE_TOTAL,	       /* capsule received -> last response byte sent */
	ERNIC_TCP_STAGE_COUNT,
};

/**
 * struct ernic_tcp_trace_rec - one sampled command, as the trace writes it
 * @rx: the command capsule and its in-capsule data fully received
 * @exec: handed to the controller core (for data solicited by R2T: after
 *	the last H2CData, so @rx to @exec holds that round trip)
 * @storage_start: first namespace backend call entered (@exec when the
 *	command made none)
 * @storage_done: last backend call returned (@storage_start when none)
 * @storage_ns: time inside backend calls (at most @storage_done - @storage_start)
 * @queued: the completion reached the transport, its response next to send
 * @sent: the last byte of the response (CapsuleResp, or C2HData with
 *	SUCCESS) handed to the socket
 * @qid: the queue (its Connect's QID), @cid: the command identifier,
 * @opc: the opcode, @status: the completion status (SCT << 8 | SC)
 */
struct ernic_tcp_trace_rec {
	uint64_t rx;
	uint64_t exec;
	uint64_t storage_start;
	uint64_t storage_done;
	uint64_t storage_ns;
	uint64_t queued;
	uint64_t sent;
	uint16_t qid;
	uint16_t cid;
	uint16_t status;
	uint8_t opc;
};

/* The trace file's first line; then one line per record, these columns, decimal (@opc hex). */
#define ERNIC_TCP_TRACE_HEADER                                                                                      \
	"# ernic-tcp-trace clock=CLOCK_MONOTONIC unit=ns columns=qid cid opc status rx exec storage_start "         \
	"storage_done storage_ns queued sent"

/* Records a connection holds for the trace writer before it drops the next ones. */
#define ERNIC_TCP_TRACE_RING 4096
/* How often the trace writer empties the connections' rings. */
#define ERNIC_TCP_TRACE_FLUSH_MS 100

/**
 * struct ernic_tcp_stage_stats - stage times of the sampled commands, summed
 * over every I/O queue the port has served
 * @samples: commands sampled whose response was sent
 * @dropped: records the trace writer never got (a connection's ring was full)
 * @sum_ns: per stage, the sum (mean = sum_ns / samples)
 * @max_ns: per stage, the largest single value
 */
struct ernic_tcp_stage_stats {
	uint64_t samples;
	uint64_t dropped;
	uint64_t sum_ns[ERNIC_TCP_STAGE_COUNT];
	uint64_t max_ns[ERNIC_TCP_STAGE_COUNT];
};

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
 * @sample_every: stamp 1 in this many commands on each I/O queue (0: none);
 *	one that is not sampled pays a decrement and a branch
 * @trace: where a writer thread puts ERNIC_TCP_TRACE_HEADER and then one line
 *	per sampled command, every ERNIC_TCP_TRACE_FLUSH_MS and when the port
 *	stops; NULL writes none (the stage sums are kept either way)
 */
struct ernic_tcp_port_opts {
	FILE *log;
	const char *ident;
	uint32_t maxh2cdata;
	unsigned int max_connections;
	unsigned int idle_timeout_ms;
	uint32_t sample_every;
	FILE *trace;
};

/* A port of @tgt that does not listen yet. Returns 0 or -errno. */
int ernic_tcp_port_create(struct ernic_target *tgt, const struct ernic_tcp_port_opts *opts,
			  struct ernic_tcp_port **out);
/*
 * Bind and listen on @traddr:@trsvcid (numeric; "0" picks a free port) and
 * tell the target's discovery log about it. Returns 0 or -errno with @err set.
 */
int ernic_tcp_port_listen(struct ernic_tcp_port *port, const char *traddr, const char *trsvcid, char *err,
			  size_t errlen);
/*
 * On a set's home target (ernic/nvmf.h): the Port ID ernic_nvmf_port_add()
 * gave this listener. Call before ernic_tcp_port_start().
 */
void ernic_tcp_port_set_portid(struct ernic_tcp_port *port, uint16_t portid);
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
/* The stage times of the sampled commands so far; safe at any time from any thread. */
void ernic_tcp_port_stage_stats(struct ernic_tcp_port *port, struct ernic_tcp_stage_stats *s);
/* A stage's name as a C identifier ("received", ..., "total"); NULL when out of range. */
const char *ernic_tcp_stage_name(enum ernic_tcp_stage stage);
/*
 * The stage stats as one JSON object: samples, dropped, and per stage its
 * mean and max in microseconds. Returns bytes written (excl. NUL) or -ENOSPC.
 */
int ernic_tcp_stage_stats_json(const struct ernic_tcp_stage_stats *s, char *buf, size_t len);
/* Stop (with a short grace) and free. */
void ernic_tcp_port_destroy(struct ernic_tcp_port *port);

#ifdef __cplusplus
}
#endif
#endif /* ERNIC_TCP_H */
