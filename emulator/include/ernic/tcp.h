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
#include "ernic/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * MAXH2CDATA advertised in ICResp: one H2CData PDU carries at most this much,
 * and C2HData goes out in PDUs of this size too. 1 MiB, a whole 1 MiB write or
 * read in one PDU: each PDU costs the host a send and the target a header read
 * (a wake-up, under an emulated CPU), and nothing here is sized by it (a RAM
 * namespace takes the data in place, a slot's buffer is the command's size).
 * Linux nvmet-tcp advertises 4 MiB.
 */
#define ERNIC_TCP_MAXH2CDATA (1024u * 1024)

struct ernic_tcp_port;

/**
 * struct ernic_tcp_tx_stats - how controller to host PDUs left a port's
 * connections: completions, C2HData and R2Ts are batched and each batch is
 * one sendmsg(), so @pdus / @sends is how many shared a system call
 * @pdus: PDUs handed to sendmsg() in batches
 * @sends: sendmsg() calls that carried them (counted before each call)
 * @c2h_in_place: reads whose data was sent straight from the namespace's
 *	memory (a RAM namespace, no data digest) instead of a copy of it
 * @c2h_spliced: C2HData PDUs of such reads whose data, 16 KiB or more, the
 *	socket took by reference (vmsplice() and splice(), with
 *	ernic_tcp_port_opts.c2h_splice): not copied at all
 * @raised_sends: sends of 64 KiB or more made at ernic_tcp_port_opts.send_nice
 * @h2c_in_place: the one receive-side count here: writes whose data, 16 KiB
 *	or more, in the capsule or by R2T, and no data digest, was received
 *	straight into a RAM namespace instead of a buffer copied into it
 */
struct ernic_tcp_tx_stats {
	uint64_t pdus;
	uint64_t sends;
	uint64_t c2h_in_place;
	uint64_t c2h_spliced;
	uint64_t raised_sends;
	uint64_t h2c_in_place;
};

/**
 * struct ernic_tcp_wait_stats - how a port's connections waited for their
 * hosts: a wait begins when recv() finds the socket drained and ends when
 * the host's next bytes come. A connection busy-polls a wait while its
 * recent spins caught the data, and sleeps in recv() once a spin's window
 * is over (transport_tcp.c, TCP_BUSY_POLL_MIN_NS). At queue depth 1 each
 * command is a wait, so @caught / @waits says how many were caught without a
 * wake-up: a slow run spent in wake-ups shows here, one spent elsewhere does not.
 * @waits: waits that ended with data (an idle connection's wait, still
 *	going, is not counted until it ends)
 * @spun: of which began with a busy-poll
 * @caught: of which the data came within the busy-poll's window
 */
struct ernic_tcp_wait_stats {
	uint64_t waits;
	uint64_t spun;
	uint64_t caught;
};

/*
 * Connections a port serves at once: each is a thread and up to
 * ERNIC_MAX_QUEUE_SIZE request slots, so a peer opening sockets in a loop
 * must not be able to exhaust the process. 256 is 64 controllers of an admin
 * and three I/O queues each.
 */
#define ERNIC_TCP_MAX_CONNECTIONS 256
/*
 * What a port's command slots may hold at once in data buffers grown past
 * their first 8 KiB: those of reads and writes whose data does not move in
 * place (a file namespace's; of a RAM namespace's, only writes under 16 KiB
 * and any I/O under a data digest). Without such a bound a host could make
 * the port hold ERNIC_TCP_MAX_CONNECTIONS queues of ERNIC_MAX_QUEUE_SIZE
 * slots of an MDTS transfer each, 4 GiB at the defaults.
 */
#define ERNIC_TCP_BUF_BUDGET (1ull << 30)
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
 *	one more takes the place of the oldest that is not a queue yet (no
 *	ICReq or no Connect), which closes within ERNIC_TCP_POLL_MS, and is
 *	closed at once when every place is a queue; discovery queues hold at
 *	most half the places (at least one), and a discovery Connect past that
 *	is Connect Controller Busy
 * @idle_timeout_ms: how long a connection may take to complete ICReq and
 *	Connect, to finish a PDU once it started, and to send the data an R2T
 *	asked for, and to take a read sent from namespace memory once a
 *	namespace removal waits on it (0: ERNIC_TCP_IDLE_TIMEOUT_MS); a
 *	connected queue idle between PDUs with nothing owed is keep-alive's to
 *	judge, not this
 * @sample_every: stamp 1 in this many commands on each I/O queue (0: none);
 *	one that is not sampled pays a decrement and a branch
 * @trace: where a writer thread puts the header of ernic/trace.h and then one
 *	line per sampled command, every ERNIC_TRACE_FLUSH_MS and when the port
 *	stops; NULL writes none (the stage sums are kept either way)
 * @trace_max_bytes: with @trace, the file's size limit, its header included
 *	(0: none): past it whole records are left out and counted
 *	(ernic_trace_stats.over_limit), so a long run cannot fill a disk
 * @c2h_splice: C2HData of 16 KiB or more of a read sent from namespace
 *	memory goes to the socket by reference (vmsplice() and splice()), not
 *	copied. Off by default: it pays where copying is dear to the CPU (an
 *	emulated one) or the data leaves on a NIC, and costs more than the copy
 *	it saves over a native loopback, where the peer copies out of the pages
 *	at once (README, "Zero-copy reads")
 * @raise_sends: a connection thread makes a send of 64 KiB or more (large
 *	reads' C2HData) at nice @send_nice and then returns to its own, so a
 *	host sharing its CPUs, whose nvme-tcp receive worker runs at nice -20,
 *	does not preempt it once per TSO segment (transport_tcp.c,
 *	TCP_RAISE_MIN). Where the system refuses (no CAP_SYS_NICE), the port
 *	logs it once and sends at the thread's own nice
 * @send_nice: -20..19; a thread already at or above it is left alone
 * @buf_budget: bytes of grown slot buffers the port holds at most (0:
 *	ERNIC_TCP_BUF_BUDGET). A write whose R2T would pass it waits, unsolicited,
 *	and a read waits before it executes, until other commands give buffers
 *	back; the connection goes on receiving meanwhile, and a slot keeps its
 *	buffer for its next command only while less than half the budget is
 *	held. A transfer larger than half the budget completes with Internal
 *	Error, as one the system has no memory for does
 */
struct ernic_tcp_port_opts {
	FILE *log;
	const char *ident;
	uint32_t maxh2cdata;
	unsigned int max_connections;
	unsigned int idle_timeout_ms;
	uint32_t sample_every;
	FILE *trace;
	uint64_t trace_max_bytes;
	bool c2h_splice;
	bool raise_sends;
	int send_nice;
	uint64_t buf_budget;
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
void ernic_tcp_port_stage_stats(struct ernic_tcp_port *port, struct ernic_trace_stats *s);
/* PDUs and sendmsg() calls so far; safe at any time from any thread. */
void ernic_tcp_port_tx_stats(struct ernic_tcp_port *port, struct ernic_tcp_tx_stats *s);
/* Waits for the host so far, busy-polled and caught; safe at any time from any thread. */
void ernic_tcp_port_wait_stats(struct ernic_tcp_port *port, struct ernic_tcp_wait_stats *s);
/*
 * Bytes the connections' command slots hold in data buffers now: a slot
 * keeps a buffer up to the default MDTS transfer (ERNIC_MAX_XFER) for its
 * next command, and frees a larger one with its command.
 */
uint64_t ernic_tcp_port_buf_bytes(struct ernic_tcp_port *port);
/*
 * struct ernic_tcp_buf_stats - the port's data buffers against its budget
 * @grown: bytes held in buffers grown past a slot's first 8 KiB now
 * @budget: the most @grown may reach (ernic_tcp_port_opts.buf_budget)
 * @waits: commands that waited for a buffer so far
 */
struct ernic_tcp_buf_stats {
	uint64_t grown;
	uint64_t budget;
	uint64_t waits;
};
/* Safe at any time from any thread. */
void ernic_tcp_port_buf_stats(struct ernic_tcp_port *port, struct ernic_tcp_buf_stats *s);
/* Stop (with a short grace) and free. */
void ernic_tcp_port_destroy(struct ernic_tcp_port *port);

#ifdef __cplusplus
}
#endif
#endif /* ERNIC_TCP_H */
