/* SPDX-License-Identifier: MIT */
/*
 * transport_tcp.c - NVMe/TCP (TCP Transport Binding 1.0) over the controller
 * core.
 *
 * One connection is one NVMe queue, served by one thread with blocking I/O.
 * The thread reads a PDU, and for a CapsuleCmd builds a struct ernic_req and
 * hands it to ernic_req_exec(), exactly as the in-process transport does. The
 * only thing this file adds is moving data:
 *
 *  - host to controller: in-capsule data (SGL Data Block, offset subtype) is
 *    read with the capsule; otherwise (Transport SGL Data Block) the command
 *    waits in NEED_DATA while an R2T solicits the data as H2CData PDUs, and is
 *    executed once the last one arrived. Other capsules keep being served in
 *    the meantime. Where the data needs a buffer of the port's (not landing
 *    in place) and the port's budget has none free, the R2T waits for one
 *    (tcp_req_buf_in_turn()), as does such a read's exec.
 *  - controller to host: map_data hands the core a per-request buffer that is
 *    then sent as C2HData PDUs, the last one carrying SUCCESS instead of a
 *    CapsuleResp when the host disabled SQ flow control. A read of a RAM
 *    namespace skips that buffer: the PDUs' data iovecs point into the
 *    namespace itself (map_c2h_in_place), so the bytes are copied once, by
 *    sendmsg(), as nvmet-tcp sends page cache pages without a copy of its
 *    own. Not with a data digest: it is computed when the PDU is batched,
 *    and a write from another queue landing before the send would break it.
 *    With the port's c2h_splice, such data of TCP_SPLICE_MIN or more is not
 *    copied at all: vmsplice() hands the namespace's pages to a pipe and
 *    splice() moves them into the socket's send queue by reference
 *    (tcp_splice_locked()), so the only copy is the host's receive, and the
 *    kernel neither allocates nor zeroes pages for it.
 *
 * Controller to host PDUs are not sent one by one: each is appended to the
 * connection's send batch, which goes out in one sendmsg() when the thread has
 * parsed every capsule one recv() brought and is about to read again (or when
 * the batch is full). At queue depth N that is one system call for up to N
 * completions instead of one or two each, and the slots of the batched
 * commands return to the free list only once their data left.
 *
 * The batch and the sends are serialised by the connection's lock because a
 * held AER completes from whichever thread raised the event; that thread
 * sends the batch at once. The lock is never held while calling into the
 * core, which may call back into tcp_complete().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "crc32c.h"
#include "log.h"
#include "place.h"
#include "trace.h"
#include "transport_tcp.h"

#define TCP_IC_HLEN ((uint8_t)sizeof(struct nvme_tcp_icreq_pdu))
#define TCP_CMD_HLEN ((uint8_t)sizeof(struct nvme_tcp_cmd_pdu))
#define TCP_DATA_HLEN ((uint8_t)sizeof(struct nvme_tcp_data_pdu))
#define TCP_RSP_HLEN ((uint8_t)sizeof(struct nvme_tcp_rsp_pdu))
#define TCP_TERM_HLEN ((uint8_t)sizeof(struct nvme_tcp_term_pdu))
#define TCP_R2T_HLEN ((uint8_t)sizeof(struct nvme_tcp_r2t_pdu))
#define TCP_MAX_HLEN (TCP_IC_HLEN + NVME_TCP_DIGEST_LEN)
/* PDO is 8 bits, so padding before data never exceeds this. */
#define TCP_MAX_PAD 256
/*
 * One recv() brings up to this much: at queue depth 32 every 4 KiB write
 * with its data in the capsule, so one read and one send serve them all.
 */
#define TCP_RBUF_SIZE (160 * 1024)
/* Any capsule's data, padding and digest fit in rbuf (tcp_recv_icd() gathers it there when buffers are short). */
_Static_assert(TCP_RBUF_SIZE >= ERNIC_TCP_IN_CAPSULE_DATA + TCP_MAX_PAD + NVME_TCP_DIGEST_LEN, "rbuf holds in-capsule data");
/*
 * Data at least this long is received straight into its buffer instead of
 * through rbuf. While an R2T is outstanding, or the host sends writes with
 * large in-capsule data, a read into rbuf takes no more than this either, so
 * of an H2CData PDU or such a capsule at most this much is copied out of
 * rbuf and the rest lands in place (in the slot's buffer or, for a RAM
 * namespace, the namespace itself: tcp_h2c_in_place()).
 */
#define TCP_RECV_DIRECT_MIN (16 * 1024)
/*
 * The send batch: iovecs (under IOV_MAX), the header bytes they point at, and
 * the commands whose completion they carry. A PDU takes at most 5 iovecs and
 * TCP_TX_PDU_MAX header bytes.
 */
#define TCP_TX_IOV 256
#define TCP_TX_HDR_BYTES 8192
#define TCP_TX_REQS 64
#define TCP_TX_PDU_MAX (TCP_TERM_HLEN + NVME_TCP_TERM_MAX_ERRHDR + 2 * NVME_TCP_DIGEST_LEN)
/*
 * C2HData from namespace memory at least this long is spliced, not copied,
 * on a port that asks (c2h_splice): below it two more system calls and a pin
 * per page cost more than the copy anywhere; above it splicing pays where a
 * copy is dear (an emulated CPU, a NIC taking the pages), not over a native
 * loopback. The pipe holds one MAXH2CDATA PDU's data when the system allows
 * that size (fs.pipe-max-size), else its default, in several rounds.
 */
#define TCP_SPLICE_MIN (16u * 1024)
#define TCP_SPLICE_PIPE_SIZE ERNIC_TCP_MAXH2CDATA
/*
 * A send batch at least this long is made at the port's send_nice: more than
 * one 64 KiB TSO segment of a loopback. Where the host shares the target's
 * CPUs (the QEMU lane; any loopback), each segment the send hands over wakes
 * the host's receive worker, and Linux's nvme-tcp runs that at nice -20
 * (WQ_HIGHPRI): it preempts a target thread at nice 0 once per segment, so a
 * 256 KiB read cost four context switches, each flushing an emulated CPU's
 * TLB. nvmet-tcp's own work runs at that nice, so it is not preempted; at
 * send_nice a connection thread is not either, for the length of the send.
 * Its own nice comes back as the send returns (two system calls a batch this
 * large, against tens of microseconds of copying), so its receives, parsing
 * and busy-polls never compete with fio above nice 0.
 */
#define TCP_RAISE_MIN (64u * 1024)
/*
 * Busy-polling a drained socket before sleeping on it: a wake-up costs a
 * context switch, and latency (far more under an emulated CPU, where a host
 * that found the target's CPU idle answers later still), but a spin that ends
 * in sleep anyway is CPU time for nothing. So a connection spins only while
 * at least half of its recent spins caught the data: a moving average over
 * the waits that spun (each weighs 1/2^TCP_BUSY_POLL_EWMA_SHIFT). Only a spin
 * tells: a sleep's length holds the wake-up too. Below half, one wait in
 * TCP_BUSY_POLL_RETRY still spins, to notice when the host speeds up again.
 *
 * A spin lasts twice the host's recent pace (the moving average of how long
 * its next PDU took, each wait's gap counted up to the cap), between
 * TCP_BUSY_POLL_MIN_NS and TCP_BUSY_POLL_MAX_NS: a host answering within
 * microseconds (queue depth 1 on real hardware) is caught in a short window,
 * and one whose round trip is hundreds of microseconds (an emulated CPU,
 * where every wake-up is a crossing between virtual CPUs) still is, instead
 * of each command costing a sleep and a wake-up. A host that answers later
 * than the cap costs one spin in TCP_BUSY_POLL_RETRY waits.
 */
#define TCP_BUSY_POLL_MIN_NS 50000u
#define TCP_BUSY_POLL_MAX_NS 1000000u
#define TCP_BUSY_POLL_ONE 256u /* poll_hits when every recent spin caught the data */
#define TCP_BUSY_POLL_EWMA_SHIFT 3
#define TCP_BUSY_POLL_RETRY 16u
/*
 * A spin reads the clock once in this many rounds: where the clocksource has
 * no vDSO path (HPET, as in an emulated guest, or acpi_pm) every read is a
 * system call and a device access, dearer than the recv() it times.
 */
#define TCP_BUSY_POLL_CLOCK_EVERY 8u
/*
 * What a slot allocates first: enough for Connect data, admin pages and small
 * writes' in-capsule data. It grows the first time a larger transfer needs it
 * and keeps that up to the default MDTS transfer (tcp_req_put_locked()), so a
 * socket that never connects costs a few KiB, not an MDTS per slot
 * (tcp_req_buf_reserve()).
 */
#define TCP_REQ_BUF_SMALL (8u * 1024)
/* How often an idle connection with commands waiting for a buffer looks for one (tcp_req_buf_in_turn()). */
#define TCP_BUF_WAIT_POLL_MS 1
/* Bounds a send to a host that stopped reading, so shutdown cannot hang on it. */
#define TCP_SEND_TIMEOUT_S 10
/*
 * SO_SNDTIMEO: how long one blocking send waits in the kernel before it
 * returns what went (or EAGAIN), so that a slow send looks at the port and
 * the namespaces this often (tcp_send_must_end()).
 */
#define TCP_SEND_WAIT_MS 1000
/* After a C2HTermReq, how long the host gets to read it and close. */
#define TCP_TERM_LINGER_MS 1000

#define TCP_HDR_FEI(field) ((uint32_t)offsetof(struct nvme_tcp_hdr, field))

enum tcp_req_state {
	TCP_REQ_FREE,
	TCP_REQ_NEED_BUF,  /* waits for a buffer within the port's budget (tcp_req_buf_in_turn()) */
	TCP_REQ_NEED_DATA, /* R2T sent, H2CData arriving */
	TCP_REQ_EXECUTING, /* in the core, or held there (AER) */
};

/* What a log line reports; each kind is rate-limited on its own. */
enum tcp_log_kind {
	TCP_LOG_CONNECT,
	TCP_LOG_CONNECT_REFUSED,
	TCP_LOG_DISCONNECT,
	TCP_LOG_TRANSPORT_ERROR,
	TCP_LOG_CLOSED_EARLY, /* over the connection cap, or no Connect in time */
	TCP_LOG_SEND_NICE,    /* the system refused send_nice: TCP_RAISE_MIN */
	TCP_LOG_NR,
};

struct tcp_conn;

struct tcp_req {
	struct ernic_req req;
	struct tcp_conn *conn;
	enum tcp_req_state state;
	uint8_t *buf;	   /* buf_size bytes, allocated on first use, grown on demand, kept up to ERNIC_MAX_XFER */
	uint32_t buf_size;
	uint32_t h2c_len;  /* host to controller bytes held at h2c_buf */
	/* buf, in-capsule data still in the connection's rbuf (tcp_recv_icd()), or the namespace (tcp_h2c_in_place()) */
	uint8_t *h2c_buf;
	uint32_t r2t_len;  /* bytes the R2T solicited, received at h2c_buf */
	uint32_t h2c_rcvd; /* of which arrived */
	uint64_t h2c_wait_ns; /* when the R2T was sent: all its data is due within the idle timeout */
	bool ns_mem;	   /* holds namespace memory: a read sent from it, or a write landing in it */
	uint32_t c2h_len;  /* controller to host bytes to send: from c2h_data, then c2h_zeros of zeros */
	uint32_t c2h_zeros; /* the last bytes of c2h_len, zeros sent from tcp_zeros (tcp_map_c2h_zero_tail()) */
	const uint8_t *c2h_data; /* buf, or namespace memory sent in place (tcp_map_c2h_in_place()) */
	void *h2c_map;	   /* what map_data returned for host to controller data */
	/* A sampled command's stamps (req.stamps points here); untouched otherwise */
	struct ernic_stage_stamps stamps;
	struct ernic_trace_rec rec;
	struct tcp_req *next_free;
	struct tcp_req *next_done;     /* on tcp_conn.done */
	struct tcp_req *next_buf_wait; /* on tcp_conn.buf_wait_head */
};

struct tcp_conn {
	struct ernic_tcp_port *port;
	struct ernic_sq sq;
	int fd;
	pthread_t thread;
	char peer[INET6_ADDRSTRLEN + 8];

	/* Negotiated by ICReq/ICResp */
	bool ic_done;
	bool hdgst;
	bool ddgst;
	uint32_t c2h_align; /* (HPDA + 1) * 4 */

	struct ernic_place place; /* on the port's places (place.h) */
	uint16_t qid;
	uint16_t cntlid;
	char hostnqn[NVMF_NQN_SIZE * 4]; /* escaped for the log by ernic_log_str() */

	/*
	 * Held commands another thread completed, newest first, for the
	 * connection's thread to send (tcp_complete(), tcp_take_done()).
	 */
	_Atomic(struct tcp_req *) done;
	pthread_mutex_t lock; /* sends, the free list, @dead, @sqflow_disabled */
	bool dead;	      /* the socket is going away: sends are dropped */
	bool sqflow_disabled;
	struct tcp_req *reqs;
	uint32_t nr_reqs;
	struct tcp_req *free_reqs;
	uint32_t ns_mem_reqs; /* slots holding namespace memory (tcp_req.ns_mem): sq.ns_mem_seq is odd while nonzero */
	/* The send batch (under @lock): see the top of this file */
	uint32_t tx_niov, tx_hdr_used, tx_nreqs, tx_npdus;
	struct iovec tx_iov[TCP_TX_IOV];
	bool tx_splice[TCP_TX_IOV]; /* this iovec is namespace memory to splice (TCP_SPLICE_MIN) */
	int splice_pipe[2];	    /* opened at the first splice; -1 before, or where pipes fail */
	struct tcp_req *tx_reqs[TCP_TX_REQS];
	_Alignas(8) uint8_t tx_hdr[TCP_TX_HDR_BYTES];

	/* Receive side: the connection thread only */
	uint32_t nr_need_data;
	/* Commands waiting for a buffer, oldest first (tcp_req_buf_in_turn()) */
	struct tcp_req *buf_wait_head, *buf_wait_tail;
	bool large_icd; /* the last capsule carried TCP_RECV_DIRECT_MIN or more of data (tcp_handle_cmd()) */
	int own_nice;	/* the connection thread's nice as it started, where a raised send returns (TCP_RAISE_MIN) */
	uint64_t next_check_ns;
	uint64_t opened_ns;    /* ICReq and Connect are due within the idle timeout of this */
	uint64_t pdu_stall_ns; /* when a PDU, partly received, first had to wait; 0 at a boundary */
	uint64_t pdu_start_ns; /* when the thread began to read the current PDU (after the one before was done) */
	uint8_t hdr[TCP_MAX_HLEN];
	uint32_t hdr_len; /* header bytes held, for the C2HTermReq copy */
	uint8_t scratch[TCP_MAX_PAD];
	/* One recv() usually brings a whole capsule, often several: parse them from here. */
	uint32_t rhead, rtail;
	/* Busy-polling (TCP_BUSY_POLL_MIN_NS): */
	uint64_t idle_since_ns; /* when recv() first found the socket drained; 0 while data flows */
	uint64_t spin_until_ns; /* end of this wait's busy-poll window */
	uint32_t poll_hits;	/* moving share of spins that caught the data, of TCP_BUSY_POLL_ONE */
	uint32_t gap_ns;	/* moving average of drained-to-data gaps, each at most TCP_BUSY_POLL_MAX_NS */
	uint32_t poll_waits;	/* waits, counted for TCP_BUSY_POLL_RETRY */
	uint32_t spins;		/* rounds of this wait's spin, for TCP_BUSY_POLL_CLOCK_EVERY */
	bool spun;		/* this wait spins */
	bool spinning;		/* ... and its window was not seen to be over yet */
	struct ernic_trace_queue tq;
	uint8_t rbuf[TCP_RBUF_SIZE];

	struct tcp_conn *next; /* port's list */
};

struct ernic_tcp_port {
	struct ernic_target *tgt;
	struct ernic_log log; /* rate-limited per enum tcp_log_kind */
	uint32_t maxh2cdata;
	bool c2h_splice; /* ernic_tcp_port_opts.c2h_splice */
	atomic_bool raise_sends; /* ernic_tcp_port_opts.raise_sends, until the system refuses: TCP_RAISE_MIN */
	int send_nice;	  /* ernic_tcp_port_opts.send_nice */
	uint64_t idle_timeout_ns;
	int listen_fd;
	uint16_t portnum;
	uint16_t portid; /* in a set of subsystems (ernic/nvmf.h); 0 outside one */
	pthread_t accept_thread;
	bool accepting;
	atomic_bool stopping;
	_Atomic uint64_t stop_deadline_ns;

	struct ernic_trace trace;
	_Atomic uint64_t tx_pdus, tx_sends, tx_c2h_in_place, tx_c2h_spliced, tx_raised; /* struct ernic_tcp_tx_stats */
	_Atomic uint64_t rx_h2c_in_place;				       /* ditto */
	_Atomic uint64_t rx_waits, rx_waits_spun, rx_waits_caught;     /* struct ernic_tcp_wait_stats */
	_Atomic uint64_t buf_bytes; /* held in the command slots' data buffers now (tcp_req_buf_reserve()) */
	_Atomic uint64_t buf_grown; /* of which in buffers past TCP_REQ_BUF_SMALL: at most buf_budget (tcp_buf_charge()) */
	uint64_t buf_budget;
	_Atomic uint64_t buf_waits; /* commands that waited for a buffer (struct ernic_tcp_buf_stats) */

	pthread_mutex_t lock; /* the places and the list below */
	pthread_cond_t cond;
	struct ernic_places places; /* each connection's, until it closes */
	struct tcp_conn *zombies;   /* finished threads, to join */
};

static uint16_t tcp_map_data(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf);
static uint16_t tcp_map_c2h_in_place(struct ernic_req *req, uint32_t len, const void *src);
static uint16_t tcp_map_c2h_zero_tail(struct ernic_req *req, uint32_t len, uint32_t data_len, void **buf);
static void tcp_complete(struct ernic_req *req);
static uint16_t tcp_admit_discovery(struct ernic_sq *sq);
static int tcp_buf_wait_retry(struct tcp_conn *conn);

static const struct ernic_transport_ops tcp_ops = {
	.name = "tcp",
	.trtype = NVMF_TRTYPE_TCP,
	.map_data = tcp_map_data,
	.map_c2h_in_place = tcp_map_c2h_in_place,
	.map_c2h_zero_tail = tcp_map_c2h_zero_tail,
	.complete = tcp_complete,
	.admit_discovery = tcp_admit_discovery,
	.in_capsule_data_size = ERNIC_TCP_IN_CAPSULE_DATA,
};

/* -------------------------------------------------------------------- log */

static const char *const tcp_log_kind_name[TCP_LOG_NR] = {
	[TCP_LOG_CONNECT] = "connect",
	[TCP_LOG_CONNECT_REFUSED] = "connect refused",
	[TCP_LOG_DISCONNECT] = "disconnect",
	[TCP_LOG_TRANSPORT_ERROR] = "transport error",
	[TCP_LOG_CLOSED_EARLY] = "connection closed early",
	[TCP_LOG_SEND_NICE] = "send nice refused",
};

static inline uint32_t tcp_align(uint32_t v, uint32_t a)
{
	return (v + a - 1) / a * a;
}

/* ----------------------------------------------------------------- sending */

static void tcp_req_put_locked(struct tcp_conn *conn, struct tcp_req *treq);
static void tcp_sample_sent(struct tcp_conn *conn, struct tcp_req *treq);

/* A send failed: the host is gone or stopped reading. Wake the receiver too. */
static int tcp_send_failed_locked(struct tcp_conn *conn, int err)
{
	conn->dead = true;
	shutdown(conn->fd, SHUT_RDWR);
	return -err;
}

/*
 * A send still waiting after TCP_SEND_WAIT_MS (a host reading a little at a
 * time, or not at all) ends early in two cases: a stopping port's grace is
 * over, or a namespace removal has waited on the namespace memory this
 * connection holds past its bound (sq.ns_mem_revoke). 0, or the reason to
 * fail the send with.
 */
static int tcp_send_must_end(const struct tcp_conn *conn)
{
	if (ERNIC_UNLIKELY(atomic_load_explicit(&conn->port->stopping, memory_order_relaxed)) &&
	    ernic_now_ns() >= atomic_load(&conn->port->stop_deadline_ns))
		return ESHUTDOWN;
	if (ERNIC_UNLIKELY(atomic_load_explicit(&conn->sq.ns_mem_revoke, memory_order_relaxed)) && conn->ns_mem_reqs)
		return ECANCELED;
	return 0;
}

/*
 * What one blocking send call (sendmsg(), splice()) that returned @n means to
 * a send that goes on until every byte went: bytes went (@n; the stall clock
 * starts again), SO_SNDTIMEO ran out with none (0: a host may stop reading
 * for TCP_SEND_TIMEOUT_S in all), or the -errno to fail the send with.
 */
static ssize_t tcp_send_progress(ssize_t n, unsigned int *stalled_ms)
{
	if (n > 0) {
		*stalled_ms = 0;
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
	    (*stalled_ms += TCP_SEND_WAIT_MS) < TCP_SEND_TIMEOUT_S * 1000u)
		return 0;
	return n < 0 ? -errno : -EPIPE;
}

/* Send every byte of @iov; the caller holds conn->lock. */
static int tcp_sendv_locked(struct tcp_conn *conn, struct iovec *iov, int iovcnt, int flags)
{
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)iovcnt };
	unsigned int stalled_ms = 0; /* waited without a byte going */

	if (conn->dead)
		return -EPIPE;
	while (msg.msg_iovlen) {
		ssize_t n = sendmsg(conn->fd, &msg, MSG_NOSIGNAL | flags);

		if (n < 0 && errno == EINTR)
			continue;
		n = tcp_send_progress(n, &stalled_ms);
		if (n < 0)
			return tcp_send_failed_locked(conn, (int)-n);
		while (msg.msg_iovlen && (size_t)n >= msg.msg_iov->iov_len) {
			n -= (ssize_t)msg.msg_iov->iov_len;
			msg.msg_iov++;
			msg.msg_iovlen--;
		}
		if (msg.msg_iovlen) {
			int why = tcp_send_must_end(conn);

			if (ERNIC_UNLIKELY(why))
				return tcp_send_failed_locked(conn, why);
			msg.msg_iov->iov_base = (uint8_t *)msg.msg_iov->iov_base + n;
			msg.msg_iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* Set on a connection's own thread, the only one that splices: see tcp_splice_locked(). */
static __thread const struct tcp_conn *tcp_conn_self;

static bool tcp_splice_pipe_open(struct tcp_conn *conn)
{
	if (conn->splice_pipe[0] >= 0)
		return true;
	if (pipe2(conn->splice_pipe, O_CLOEXEC)) {
		conn->splice_pipe[0] = conn->splice_pipe[1] = -1;
		return false;
	}
	/* Refused past fs.pipe-max-size or a user's pipe quota: the default size takes more rounds. */
	(void)fcntl(conn->splice_pipe[1], F_SETPIPE_SZ, (int)TCP_SPLICE_PIPE_SIZE);
	return true;
}

/*
 * Send namespace memory by reference: vmsplice() pins its pages into the
 * connection's pipe and splice() moves them to the socket, which holds them
 * until the host has them. Nothing in ernicd touches the memory after this
 * returns, so releasing the slot's hold on it (ns_mem_seq) stays right; a
 * later write to those blocks may still reach a host reading them
 * concurrently, which NVMe leaves undefined for overlapping commands, and
 * no digest is at stake (none is computed over in-place data). splice() to
 * a closed socket raises SIGPIPE in the caller, so only the connection's
 * own thread, which blocks it, comes here (it is the only one that sends:
 * tcp_complete()); any other caller would copy. With no pipe, the data is
 * copied too.
 */
static int tcp_splice_locked(struct tcp_conn *conn, struct iovec data, bool more)
{
	unsigned int stalled_ms = 0;

	if (tcp_conn_self != conn || !tcp_splice_pipe_open(conn))
		return tcp_sendv_locked(conn, &data, 1, more ? MSG_MORE : 0);
	if (conn->dead)
		return -EPIPE;
	while (data.iov_len) {
		ssize_t in = vmsplice(conn->splice_pipe[1], &data, 1, 0);

		if (in <= 0) {
			if (in < 0 && errno == EINTR)
				continue;
			return tcp_send_failed_locked(conn, in < 0 ? errno : EPIPE);
		}
		data.iov_base = (uint8_t *)data.iov_base + in;
		data.iov_len -= (size_t)in;
		while (in) {
			unsigned int flags = SPLICE_F_MOVE | (more || data.iov_len ? SPLICE_F_MORE : 0);
			ssize_t n = splice(conn->splice_pipe[0], NULL, conn->fd, NULL, (size_t)in, flags);
			int why;

			if (n < 0 && errno == EINTR)
				continue;
			n = tcp_send_progress(n, &stalled_ms);
			if (n < 0)
				return tcp_send_failed_locked(conn, (int)-n);
			in -= n;
			why = in || data.iov_len ? tcp_send_must_end(conn) : 0;
			if (ERNIC_UNLIKELY(why))
				return tcp_send_failed_locked(conn, why);
		}
	}
	atomic_fetch_add_explicit(&conn->port->tx_c2h_spliced, 1, memory_order_relaxed);
	return 0;
}

/*
 * Raise the calling connection thread to the port's send_nice for a batch of
 * TCP_RAISE_MIN or more. Returns whether it did, so the caller puts its own
 * nice back. The first refusal (no CAP_SYS_NICE, RLIMIT_NICE) is logged and
 * ends the raising on the port.
 */
static bool tcp_send_raise(struct tcp_conn *conn)
{
	struct ernic_tcp_port *port = conn->port;
	size_t bytes = 0;

	if (!atomic_load_explicit(&port->raise_sends, memory_order_relaxed) || tcp_conn_self != conn ||
	    conn->own_nice <= port->send_nice)
		return false;
	for (uint32_t i = 0; i < conn->tx_niov && bytes < TCP_RAISE_MIN; i++)
		bytes += conn->tx_iov[i].iov_len;
	if (bytes < TCP_RAISE_MIN)
		return false;
	/* PRIO_PROCESS of 0 is the calling thread on Linux, not its process. */
	if (setpriority(PRIO_PROCESS, 0, port->send_nice)) {
		if (atomic_exchange(&port->raise_sends, false))
			ernic_log(&port->log, TCP_LOG_SEND_NICE, "sends of %u bytes or more stay at nice %d: nice %d: %s",
				  TCP_RAISE_MIN, conn->own_nice, port->send_nice, strerror(errno));
		return false;
	}
	atomic_fetch_add_explicit(&port->tx_raised, 1, memory_order_relaxed);
	return true;
}

/*
 * The batch's iovecs in as few system calls as its spliced data allows: one
 * sendmsg() without any, else a sendmsg() for the headers and copied data
 * between spliced pieces.
 */
static int tcp_tx_send_locked(struct tcp_conn *conn, bool more)
{
	uint32_t n = conn->tx_niov;
	bool raised = tcp_send_raise(conn);
	int rc = 0;

	for (uint32_t i = 0, j; i < n && !rc; i = j + 1) {
		for (j = i; j < n && !conn->tx_splice[j]; j++)
			;
		if (j > i)
			rc = tcp_sendv_locked(conn, conn->tx_iov + i, (int)(j - i), j < n || more ? MSG_MORE : 0);
		if (!rc && j < n)
			rc = tcp_splice_locked(conn, conn->tx_iov[j], j + 1 < n || more);
	}
	/* Back to a higher nice: that needs no privilege. */
	if (raised)
		(void)setpriority(PRIO_PROCESS, 0, conn->own_nice);
	return rc;
}

/*
 * Send the batch (tcp_tx_send_locked()), then give its commands' slots back
 * (a sampled one is stamped sent first). @more: another PDU follows at once,
 * so TCP may hold a partial segment for it. An error kills the connection;
 * the slots are freed all the same.
 */
static int tcp_tx_flush_locked(struct tcp_conn *conn, bool more)
{
	int rc = 0;

	if (conn->tx_niov) {
		/* Counted first, so a host that has read the PDUs sees them counted. */
		atomic_fetch_add_explicit(&conn->port->tx_pdus, conn->tx_npdus, memory_order_relaxed);
		atomic_fetch_add_explicit(&conn->port->tx_sends, 1, memory_order_relaxed);
		rc = tcp_tx_send_locked(conn, more);
	}
	for (uint32_t i = 0; i < conn->tx_nreqs; i++) {
		struct tcp_req *treq = conn->tx_reqs[i];

		/* A response that never left is no sample: its last byte has no time. */
		if (ERNIC_UNLIKELY(treq->req.stamps != NULL) && !rc)
			tcp_sample_sent(conn, treq);
		tcp_req_put_locked(conn, treq);
	}
	conn->tx_niov = conn->tx_hdr_used = conn->tx_nreqs = conn->tx_npdus = 0;
	return rc;
}

static int tcp_tx_flush(struct tcp_conn *conn)
{
	int rc;

	pthread_mutex_lock(&conn->lock);
	rc = tcp_tx_flush_locked(conn, false);
	pthread_mutex_unlock(&conn->lock);
	return rc;
}

/* @len bytes of the batch's header space, 8-byte aligned, flushing first when full. */
static void *tcp_tx_hdr_locked(struct tcp_conn *conn, uint32_t len, int *rc)
{
	uint8_t *p;

	if (conn->tx_niov + 5 > TCP_TX_IOV || conn->tx_hdr_used + TCP_TX_PDU_MAX > TCP_TX_HDR_BYTES)
		*rc = tcp_tx_flush_locked(conn, true);
	p = conn->tx_hdr + conn->tx_hdr_used;
	conn->tx_hdr_used += tcp_align(len, 8);
	return p;
}

static inline struct iovec *tcp_tx_iov_locked(struct tcp_conn *conn, struct iovec *iov, const void *base, size_t len,
					      bool splice)
{
	conn->tx_splice[iov - conn->tx_iov] = splice;
	*iov = (struct iovec){ (void *)base, len };
	return iov + 1;
}

/*
 * Append a controller to host PDU to the batch: @hdr has its type and
 * type-specific fields set; flags, hlen, pdo, plen and the digests negotiated
 * are added here. Data, if any, starts at the host's HPDA alignment and must
 * stay in place until the batch is sent; @ns_mem: it is namespace memory,
 * which may be spliced (no data digest is ever computed over it). @hdr is
 * copied.
 */
static int tcp_tx_pdu_locked(struct tcp_conn *conn, void *hdr, uint8_t hlen, const void *data, uint32_t datal,
			     bool ns_mem)
{
	static const uint8_t zero_pad[TCP_MAX_PAD];
	struct nvme_tcp_hdr *ch = hdr;
	uint32_t hd = conn->hdgst ? NVME_TCP_DIGEST_LEN : 0;
	uint32_t dd = conn->ddgst && datal ? NVME_TCP_DIGEST_LEN : 0;
	uint32_t pdo = datal ? tcp_align(hlen + hd, conn->c2h_align) : 0;
	struct iovec *iov;
	uint8_t *out;
	int rc = 0;

	if (conn->dead)
		return -EPIPE;
	if (hd)
		ch->flags |= NVME_TCP_F_HDGST;
	if (dd)
		ch->flags |= NVME_TCP_F_DDGST;
	ch->hlen = hlen;
	ch->pdo = (uint8_t)pdo;
	ch->plen = datal ? pdo + datal + dd : hlen + hd;

	out = tcp_tx_hdr_locked(conn, hlen + hd + dd, &rc);
	if (rc)
		return rc;
	memcpy(out, hdr, hlen);
	if (hd) {
		uint32_t hdgst = ernic_crc32c(0, hdr, hlen);

		memcpy(out + hlen, &hdgst, sizeof(hdgst));
	}
	iov = tcp_tx_iov_locked(conn, conn->tx_iov + conn->tx_niov, out, hlen + hd, false);
	if (datal) {
		if (pdo > hlen + hd)
			iov = tcp_tx_iov_locked(conn, iov, zero_pad, pdo - hlen - hd, false);
		iov = tcp_tx_iov_locked(conn, iov, data, datal,
					ns_mem && !dd && datal >= TCP_SPLICE_MIN && conn->port->c2h_splice);
	}
	if (dd) {
		uint32_t ddgst = ernic_crc32c(0, data, datal);

		memcpy(out + hlen + hd, &ddgst, sizeof(ddgst));
		iov = tcp_tx_iov_locked(conn, iov, out + hlen + hd, dd, false);
	}
	conn->tx_niov = (uint32_t)(iov - conn->tx_iov);
	conn->tx_npdus++;
	return 0;
}

static int tcp_tx_rsp_locked(struct tcp_conn *conn, const struct nvme_cqe *cqe)
{
	struct nvme_tcp_rsp_pdu rsp = { .hdr.type = NVME_TCP_RSP, .cqe = *cqe };

	return tcp_tx_pdu_locked(conn, &rsp, TCP_RSP_HLEN, NULL, 0, false);
}

/* What a zero tail is sent from (tcp_map_c2h_zero_tail()), one C2HData PDU's worth at a time. */
#define TCP_ZEROS_LEN (64u * 1024)
static const uint8_t tcp_zeros[TCP_ZEROS_LEN];

/*
 * C2HData in MAXH2CDATA-sized PDUs, then a zero tail in PDUs of
 * TCP_ZEROS_LEN at most; the last one says LAST, and SUCCESS if @success.
 */
static int tcp_tx_c2h_data_locked(struct tcp_conn *conn, struct tcp_req *treq, bool success)
{
	uint32_t data_end = treq->c2h_len - treq->c2h_zeros;
	bool ns_mem = treq->c2h_data != treq->buf;
	int rc = 0;

	/* 64-bit: under MDTS 0 a transfer may end within a chunk of 4 GiB, where a 32-bit offset would wrap to 0. */
	for (uint64_t off = 0, datal; off < treq->c2h_len && !rc; off += datal) {
		bool zeros = off >= data_end;
		struct nvme_tcp_data_pdu pdu = {
			.hdr.type = NVME_TCP_C2H_DATA,
			.cccid = treq->req.sqe.cid,
			.datao = (uint32_t)off,
		};

		datal = zeros ? MIN(TCP_ZEROS_LEN, treq->c2h_len - off) : MIN(conn->port->maxh2cdata, data_end - off);
		pdu.datal = (uint32_t)datal;
		if (off + datal == treq->c2h_len)
			pdu.hdr.flags = NVME_TCP_F_DATA_LAST | (success ? NVME_TCP_F_DATA_SUCCESS : 0);
		rc = tcp_tx_pdu_locked(conn, &pdu, TCP_DATA_HLEN, zeros ? tcp_zeros : treq->c2h_data + off, pdu.datal,
				       ns_mem && !zeros);
	}
	return rc;
}

/* Batched like a completion: the host sees it when the thread next reads. */
static int tcp_send_r2t(struct tcp_conn *conn, struct tcp_req *treq)
{
	struct nvme_tcp_r2t_pdu r2t = {
		.hdr.type = NVME_TCP_R2T,
		.cccid = treq->req.sqe.cid,
		.ttag = (uint16_t)(treq - conn->reqs),
		.r2to = 0,
		.r2tl = treq->r2t_len,
	};
	int rc;

	pthread_mutex_lock(&conn->lock);
	rc = tcp_tx_pdu_locked(conn, &r2t, TCP_R2T_HLEN, NULL, 0, false);
	pthread_mutex_unlock(&conn->lock);
	return rc;
}

/*
 * A fatal transport error (NVMe/TCP 1.0, C2HTermReq): send a C2HTermReq with the
 * offending PDU header and have the caller close the connection. TermReq PDUs
 * never carry digests.
 */
static int tcp_fatal(struct tcp_conn *conn, enum nvme_tcp_fes fes, uint32_t fei)
{
	const struct nvme_tcp_hdr *bad = (const void *)conn->hdr;
	uint32_t copy = MIN(conn->hdr_len, (uint32_t)NVME_TCP_TERM_MAX_ERRHDR);
	struct nvme_tcp_term_pdu term = {
		.hdr = {
			.type = NVME_TCP_C2H_TERM,
			.hlen = TCP_TERM_HLEN,
			.plen = TCP_TERM_HLEN + copy,
		},
		.fes = (uint16_t)fes,
		.fei = fei,
	};
	struct iovec iov[2] = { { &term, sizeof(term) }, { conn->hdr, copy } };

	ernic_log(&conn->port->log, TCP_LOG_TRANSPORT_ERROR,
		"peer %s qid %u: fatal transport error, pdu type 0x%02x: fes 0x%x fei 0x%x", conn->peer, conn->qid,
		conn->hdr_len ? bad->type : 0, fes, fei);
	pthread_mutex_lock(&conn->lock);
	/* What was batched goes first: those commands did complete. */
	tcp_tx_flush_locked(conn, true);
	tcp_sendv_locked(conn, iov, copy ? 2 : 1, 0);
	pthread_mutex_unlock(&conn->lock);
	return -EPROTO;
}

/* ----------------------------------------------------------- stage stamps */

/* The countdown reached 0: stamp this command if its queue is a sampled I/O queue. */
static void tcp_sample_start(struct tcp_conn *conn, struct tcp_req *treq)
{
	ernic_trace_begin(&conn->port->trace, &conn->tq, conn->place.connected ? conn->qid : 0, &treq->req, &treq->stamps,
			  &treq->rec);
}

void ernic_tcp_port_stage_stats(struct ernic_tcp_port *port, struct ernic_trace_stats *s)
{
	ernic_trace_stats(&port->trace, s);
}

void ernic_tcp_port_tx_stats(struct ernic_tcp_port *port, struct ernic_tcp_tx_stats *s)
{
	s->pdus = atomic_load_explicit(&port->tx_pdus, memory_order_relaxed);
	s->sends = atomic_load_explicit(&port->tx_sends, memory_order_relaxed);
	s->c2h_in_place = atomic_load_explicit(&port->tx_c2h_in_place, memory_order_relaxed);
	s->c2h_spliced = atomic_load_explicit(&port->tx_c2h_spliced, memory_order_relaxed);
	s->raised_sends = atomic_load_explicit(&port->tx_raised, memory_order_relaxed);
	s->h2c_in_place = atomic_load_explicit(&port->rx_h2c_in_place, memory_order_relaxed);
}

uint64_t ernic_tcp_port_buf_bytes(struct ernic_tcp_port *port)
{
	return atomic_load_explicit(&port->buf_bytes, memory_order_relaxed);
}

void ernic_tcp_port_buf_stats(struct ernic_tcp_port *port, struct ernic_tcp_buf_stats *s)
{
	s->grown = atomic_load_explicit(&port->buf_grown, memory_order_relaxed);
	s->budget = port->buf_budget;
	s->waits = atomic_load_explicit(&port->buf_waits, memory_order_relaxed);
}

void ernic_tcp_port_wait_stats(struct ernic_tcp_port *port, struct ernic_tcp_wait_stats *s)
{
	s->waits = atomic_load_explicit(&port->rx_waits, memory_order_relaxed);
	s->spun = atomic_load_explicit(&port->rx_waits_spun, memory_order_relaxed);
	s->caught = atomic_load_explicit(&port->rx_waits_caught, memory_order_relaxed);
}

/* --------------------------------------------------------------- requests */

/*
 * The slot holds namespace memory until it is put back: the queue's hold
 * (ernic_sq_ns_mem_hold()) is taken by the first such slot and let go by
 * the last, so ernic_target_quiesce() waits for them.
 */
static void tcp_req_hold_ns_mem(struct tcp_conn *conn, struct tcp_req *treq)
{
	pthread_mutex_lock(&conn->lock);
	if (conn->ns_mem_reqs++ == 0)
		ernic_sq_ns_mem_hold(&conn->sq);
	treq->ns_mem = true;
	pthread_mutex_unlock(&conn->lock);
}

/* The slot lets go of namespace memory it turned out not to need. */
static void tcp_req_put_ns_mem(struct tcp_conn *conn, struct tcp_req *treq)
{
	pthread_mutex_lock(&conn->lock);
	if (--conn->ns_mem_reqs == 0)
		ernic_sq_ns_mem_release(&conn->sq);
	treq->ns_mem = false;
	pthread_mutex_unlock(&conn->lock);
}

/* What a slot's buffer of @size bytes counts against the port's budget: nothing for its first one. */
static inline uint64_t tcp_buf_grown(uint64_t size)
{
	return size > TCP_REQ_BUF_SMALL ? size : 0;
}

/*
 * A slot's buffer grows from @from to @to grown bytes (tcp_buf_grown()):
 * -ENOBUFS while that would take the port past its budget (the command may
 * wait: tcp_req_buf_in_turn()), -E2BIG for a buffer of more than half the budget,
 * which idle slots' buffers may keep from ever being free
 * (tcp_req_put_locked()).
 */
static int tcp_buf_charge(struct ernic_tcp_port *port, uint64_t from, uint64_t to)
{
	uint64_t held = atomic_load_explicit(&port->buf_grown, memory_order_relaxed);

	if (to > port->buf_budget / 2)
		return -E2BIG;
	do {
		if (held - from + to > port->buf_budget)
			return -ENOBUFS;
	} while (!atomic_compare_exchange_weak_explicit(&port->buf_grown, &held, held - from + to, memory_order_relaxed,
							memory_order_relaxed));
	return 0;
}

/* Free a slot's buffer; tcp_req_get() gives it a small one again. */
static void tcp_req_buf_free(struct ernic_tcp_port *port, struct tcp_req *treq)
{
	atomic_fetch_sub_explicit(&port->buf_bytes, treq->buf_size, memory_order_relaxed);
	atomic_fetch_sub_explicit(&port->buf_grown, tcp_buf_grown(treq->buf_size), memory_order_relaxed);
	free(treq->buf);
	treq->buf = NULL;
	treq->buf_size = 0;
}

/*
 * LIFO, so a lightly loaded queue keeps reusing the same few buffers. A slot
 * that held namespace memory lets go of it here: it was sent, or never will be.
 */
static void tcp_req_put_locked(struct tcp_conn *conn, struct tcp_req *treq)
{
	struct ernic_tcp_port *port = conn->port;

	if (ERNIC_UNLIKELY(treq->ns_mem) && --conn->ns_mem_reqs == 0)
		ernic_sq_ns_mem_release(&conn->sq);
	/*
	 * A buffer grown past the default MDTS transfer (mdts=0, or a larger
	 * one) is not kept: each slot keeping its largest would let a host hold
	 * queue depth times its largest transfer (gigabytes under mdts=0) on an
	 * idle queue, where nvmet frees a command's buffer with the command.
	 * Nor is any grown buffer once half the port's budget is held: what
	 * idle slots keep then stays under half of it, so the commands in
	 * flight always have the other half to wait for (tcp_req_buf_in_turn()).
	 */
	if (ERNIC_UNLIKELY(treq->buf_size > TCP_REQ_BUF_SMALL) &&
	    (treq->buf_size > ERNIC_MAX_XFER ||
	     atomic_load_explicit(&port->buf_grown, memory_order_relaxed) > port->buf_budget / 2))
		tcp_req_buf_free(port, treq);
	treq->ns_mem = false;
	treq->c2h_data = NULL;
	treq->state = TCP_REQ_FREE;
	treq->next_free = conn->free_reqs;
	conn->free_reqs = treq;
}

static void tcp_req_put(struct tcp_conn *conn, struct tcp_req *treq)
{
	pthread_mutex_lock(&conn->lock);
	tcp_req_put_locked(conn, treq);
	pthread_mutex_unlock(&conn->lock);
}

/* The most a command's data buffer holds: one MDTS transfer of the target, or the largest in-capsule data. */
static inline uint32_t tcp_req_buf_max(const struct ernic_sq *sq)
{
	return MAX(sq->tgt->max_xfer, ERNIC_TCP_IN_CAPSULE_DATA);
}

/*
 * Make the slot's buffer hold @len bytes (at most tcp_req_buf_max()); its
 * contents are not kept. The first growth takes the default MDTS transfer at
 * once, as most I/O fits it; a larger MDTS (or none, mdts=0) grows by powers
 * of two, so a slot grows a few times at most and only as far as its host's
 * largest transfer, never to a limit of gigabytes up front. -ENOBUFS while
 * the port's budget has no room for it, -E2BIG when it may never have,
 * -ENOMEM when the system has none.
 */
static int tcp_req_buf_reserve(struct tcp_req *treq, uint32_t len)
{
	struct ernic_tcp_port *port = treq->conn->port;
	uint64_t size;
	uint8_t *buf;
	int rc;

	if (ERNIC_LIKELY(len <= treq->buf_size))
		return 0;
	size = MAX((uint64_t)ERNIC_MAX_XFER, 1ull << (64 - __builtin_clzll((uint64_t)len - 1)));
	size = MIN(size, (uint64_t)tcp_req_buf_max(treq->req.sq));
	/* Just @len where the power of two above it is more than a buffer may take (tcp_buf_charge()). */
	if (size > port->buf_budget / 2)
		size = len;
	rc = tcp_buf_charge(port, tcp_buf_grown(treq->buf_size), tcp_buf_grown(size));
	if (rc)
		return rc;
	buf = malloc(size);
	if (!buf) {
		atomic_fetch_sub_explicit(&port->buf_grown, tcp_buf_grown(size) - tcp_buf_grown(treq->buf_size),
					  memory_order_relaxed);
		return -ENOMEM;
	}
	atomic_fetch_add_explicit(&port->buf_bytes, size - treq->buf_size, memory_order_relaxed);
	free(treq->buf);
	treq->buf = buf;
	treq->buf_size = (uint32_t)size;
	return 0;
}

static struct tcp_req *tcp_req_get(struct tcp_conn *conn)
{
	struct tcp_req *treq;

	pthread_mutex_lock(&conn->lock);
	treq = conn->free_reqs;
	if (treq)
		conn->free_reqs = treq->next_free;
	pthread_mutex_unlock(&conn->lock);
	if (!treq)
		return NULL;
	if (!treq->buf) {
		treq->buf = malloc(TCP_REQ_BUF_SMALL);
		if (!treq->buf) {
			tcp_req_put(conn, treq);
			return NULL;
		}
		treq->buf_size = TCP_REQ_BUF_SMALL;
		atomic_fetch_add_explicit(&conn->port->buf_bytes, TCP_REQ_BUF_SMALL, memory_order_relaxed);
	}
	memset(&treq->req, 0, sizeof(treq->req));
	treq->req.sq = &conn->sq;
	treq->req.transport_ctx = treq;
	treq->h2c_len = treq->r2t_len = treq->h2c_rcvd = treq->c2h_len = treq->c2h_zeros = 0;
	treq->c2h_data = NULL;
	treq->h2c_map = NULL;
	treq->h2c_buf = treq->buf;
	return treq;
}

/* Controller to host data goes by C2HData PDUs only: a Transport SGL Data Block of at least @len, within MDTS. */
static uint16_t tcp_check_c2h_sgl(const struct ernic_req *req, uint32_t len)
{
	const struct nvme_sgl_desc *sgl = &req->sqe.dptr;

	switch (NVME_SGL_ID_TYPE(sgl->id)) {
	case NVME_SGL_TYPE_DATA_BLOCK:
		/* In-capsule data only ever flows host to controller. */
		return NVME_SGL_ID_SUBTYPE(sgl->id) != NVME_SGL_SUBTYPE_OFFSET ? NVME_SC_SGL_INVALID_SUBTYPE
										: NVME_SC_INVALID_FIELD;
	case NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK:
		if (NVME_SGL_ID_SUBTYPE(sgl->id) != NVME_SGL_SUBTYPE_TRANSPORT)
			return NVME_SC_SGL_INVALID_SUBTYPE;
		if (len > sgl->unkeyed.length || len > tcp_req_buf_max(req->sq))
			return NVME_SC_SGL_INVALID_DATA_LEN;
		return NVME_SC_SUCCESS;
	default:
		return NVME_SC_SGL_INVALID_TYPE;
	}
}

/*
 * NVMe/TCP data descriptors (NVMe/TCP 1.0, Capsules): SGL Data Block, offset subtype, for
 * in-capsule data; Transport SGL Data Block, transport subtype (0xA), for data
 * moved by R2T/H2CData or C2HData. Anything else was never going to arrive.
 */
static uint16_t tcp_map_data(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf)
{
	struct tcp_req *treq = req->transport_ctx;
	const struct nvme_sgl_desc *sgl = &req->sqe.dptr;
	uint32_t sgl_len = sgl->unkeyed.length;
	uint16_t status;

	if (dir == NVME_DATA_CTRL_TO_HOST) {
		status = tcp_check_c2h_sgl(req, len);
		if (status)
			return status;
		if (tcp_req_buf_reserve(treq, len))
			return NVME_SC_INTERNAL;
		treq->c2h_len = len;
		treq->c2h_data = treq->buf;
		*buf = treq->buf;
		return NVME_SC_SUCCESS;
	}
	if (dir != NVME_DATA_HOST_TO_CTRL)
		return NVME_SC_INVALID_FIELD;
	switch (NVME_SGL_ID_TYPE(sgl->id)) {
	case NVME_SGL_TYPE_DATA_BLOCK:
		if (NVME_SGL_ID_SUBTYPE(sgl->id) != NVME_SGL_SUBTYPE_OFFSET)
			return NVME_SC_SGL_INVALID_SUBTYPE;
		if (sgl->addr > treq->h2c_len || sgl_len > treq->h2c_len - sgl->addr)
			return NVME_SC_SGL_INVALID_OFFSET;
		if (len > sgl_len)
			return NVME_SC_SGL_INVALID_DATA_LEN;
		*buf = treq->h2c_map = treq->h2c_buf + sgl->addr;
		return NVME_SC_SUCCESS;
	case NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK:
		if (NVME_SGL_ID_SUBTYPE(sgl->id) != NVME_SGL_SUBTYPE_TRANSPORT)
			return NVME_SC_SGL_INVALID_SUBTYPE;
		if (len > sgl_len || len > tcp_req_buf_max(req->sq))
			return NVME_SC_SGL_INVALID_DATA_LEN;
		/* Solicited before exec; less only when the SGL was too long to solicit. */
		if (treq->h2c_len < len)
			return NVME_SC_SGL_INVALID_DATA_LEN;
		*buf = treq->h2c_map = treq->h2c_buf;
		return NVME_SC_SUCCESS;
	default:
		return NVME_SC_SGL_INVALID_TYPE;
	}
}

/*
 * A read sent from the namespace's memory: the slot holds it until the
 * batch carrying it was sent and the slot is put back (tcp_req_put_locked()).
 */
static uint16_t tcp_map_c2h_in_place(struct ernic_req *req, uint32_t len, const void *src)
{
	struct tcp_req *treq = req->transport_ctx;
	struct tcp_conn *conn = treq->conn;
	uint16_t status = tcp_check_c2h_sgl(req, len);

	if (status)
		return status;
	tcp_req_hold_ns_mem(conn, treq);
	treq->c2h_len = len;
	treq->c2h_data = src;
	atomic_fetch_add_explicit(&conn->port->tx_c2h_in_place, 1, memory_order_relaxed);
	return NVME_SC_SUCCESS;
}

/*
 * A log page read past its end: the page's @data_len bytes in the slot's
 * buffer, the zeros after them sent from tcp_zeros, so that a Get Log Page
 * asking 4 GiB of a 512-byte page (NUMD up to 2^32 under MDTS 0) grows no
 * buffer and touches no memory.
 */
static uint16_t tcp_map_c2h_zero_tail(struct ernic_req *req, uint32_t len, uint32_t data_len, void **buf)
{
	struct tcp_req *treq = req->transport_ctx;
	uint16_t status = tcp_check_c2h_sgl(req, len);

	if (status)
		return status;
	if (tcp_req_buf_reserve(treq, data_len))
		return NVME_SC_INTERNAL;
	treq->c2h_len = len;
	treq->c2h_zeros = len - data_len;
	treq->c2h_data = treq->buf;
	*buf = treq->buf;
	return NVME_SC_SUCCESS;
}

/*
 * Batch a command's completion: C2HData first when it succeeded with data for
 * the host, then the CapsuleResp unless the last C2HData said SUCCESS, which
 * NVMe/TCP allows only with SQ flow control disabled (no SQHD to report), and
 * which a host takes for a CQE of zeroes but the CID (Linux, FreeBSD), so
 * only when DW0 and DW1 have nothing to say either, as SPDK's target checks.
 * The slot is freed when the batch has been sent.
 */
static void tcp_tx_completion_locked(struct tcp_conn *conn, struct tcp_req *treq)
{
	struct ernic_req *req = &treq->req;
	bool ok = nvme_cqe_status(&req->cqe) == 0;
	bool data = ok && treq->c2h_len;
	bool success = conn->sqflow_disabled && !req->cqe.dw0 && !req->cqe.dw1;
	int rc = 0;

	if (conn->tx_nreqs == TCP_TX_REQS)
		tcp_tx_flush_locked(conn, true);
	if (data)
		rc = tcp_tx_c2h_data_locked(conn, treq, success);
	if (!rc && (!data || !success))
		rc = tcp_tx_rsp_locked(conn, &req->cqe);
	if (rc) {
		tcp_req_put_locked(conn, treq);
		return;
	}
	conn->tx_reqs[conn->tx_nreqs++] = treq;
}

/* A sampled command's response left: its record is complete. */
static void tcp_sample_sent(struct tcp_conn *conn, struct tcp_req *treq)
{
	treq->rec.sent = ernic_now_ns();
	ernic_trace_end(&conn->port->trace, &conn->tq, &treq->req, &treq->stamps, &treq->rec);
}

/*
 * The core's completion callback, for a held command (an AER). It completes
 * on whichever thread raised the event, with the target's locks held
 * (ernic_target_aen()), and that thread must not send: a host that reads
 * slowly, or not at all, would hold every Connect, every keep-alive check and
 * the control socket behind its socket (a send gives up only after
 * TCP_SEND_TIMEOUT_S without a byte going). So another thread only hands the
 * command to the connection's own, which batches it before its next read
 * (tcp_take_done()): within ERNIC_TCP_POLL_MS, the longest it sleeps in
 * recv(). On the connection's own thread (its teardown ending its held AERs)
 * the completion goes out at once. Commands that complete inside
 * tcp_req_exec() are batched by the connection thread instead.
 */
static void tcp_complete(struct ernic_req *req)
{
	struct tcp_req *treq = req->transport_ctx;
	struct tcp_conn *conn = treq->conn;

	if (ERNIC_UNLIKELY(req->stamps != NULL))
		treq->rec.queued = ernic_now_ns();
	if (tcp_conn_self != conn) {
		struct tcp_req *head = atomic_load(&conn->done);

		do
			treq->next_done = head;
		while (!atomic_compare_exchange_weak(&conn->done, &head, treq));
		return;
	}
	pthread_mutex_lock(&conn->lock);
	tcp_tx_completion_locked(conn, treq);
	tcp_tx_flush_locked(conn, false);
	pthread_mutex_unlock(&conn->lock);
}

/* Batch what other threads completed (tcp_complete()), oldest first; the connection's thread only. */
static void tcp_take_done(struct tcp_conn *conn)
{
	struct tcp_req *treq = atomic_exchange(&conn->done, NULL), *fifo = NULL;

	while (treq) {
		struct tcp_req *next = treq->next_done;

		treq->next_done = fifo;
		fifo = treq;
		treq = next;
	}
	if (!fifo)
		return;
	pthread_mutex_lock(&conn->lock);
	for (; fifo; fifo = fifo->next_done)
		tcp_tx_completion_locked(conn, fifo);
	pthread_mutex_unlock(&conn->lock);
}

static void tcp_conn_connected(struct tcp_conn *conn, struct tcp_req *treq)
{
	const struct nvmf_connect_cmd *cmd = (const struct nvmf_connect_cmd *)&treq->req.sqe;
	const struct nvmf_connect_data *data = treq->h2c_map;

	uint16_t status = nvme_cqe_status(&treq->req.cqe);
	char claimed[sizeof(conn->hostnqn)];

	ernic_connect_hostnqn_str(data, claimed, sizeof(claimed));
	/* A later Connect on a connected queue (refused) does not rename its host. */
	if (data && !conn->place.connected)
		memcpy(conn->hostnqn, claimed, sizeof(claimed));
	ernic_place_connect_done(&conn->port->places, &conn->place, !status);
	if (status) {
		/* Worth a line: an allow list or a wrong NQN shows up here first. */
		ernic_log(&conn->port->log, TCP_LOG_CONNECT_REFUSED, "connect refused host %s qid %u peer %s: %s",
			  claimed, cmd->qid, conn->peer, ernic_status_str(status));
		return;
	}
	conn->qid = cmd->qid;
	conn->cntlid = (uint16_t)treq->req.cqe.dw0;
	if (conn->qid)
		ernic_trace_queue_start(&conn->port->trace, &conn->tq);
	pthread_mutex_lock(&conn->lock);
	/* The controller's own record (connect_install_sq()), copied under the lock the send path reads it under. */
	conn->sqflow_disabled = conn->sq.sqflow_disabled;
	pthread_mutex_unlock(&conn->lock);
	ernic_log(&conn->port->log, TCP_LOG_CONNECT, "connect host %s qid %u cntlid %u peer %s%s", conn->hostnqn, conn->qid,
		conn->cntlid, conn->peer, conn->sqflow_disabled ? " (sq flow control disabled)" : "");
}

/* An evicted connection closes (-EUSERS), at its next check or at its Connect (ernic_place_claim()). */
static int tcp_conn_close_evicted(struct tcp_conn *conn)
{
	ernic_log(&conn->port->log, TCP_LOG_CLOSED_EARLY,
		  "peer %s: closed: not a queue after %" PRIu64 " ms, with every one of the %u connections taken"
		  " and a newer one waiting",
		  conn->peer, (ernic_now_ns() - conn->opened_ns) / 1000000, conn->port->places.max);
	return -EUSERS;
}

/* A discovery Connect takes one of the port's discovery places (ernic_transport_ops.admit_discovery). */
static uint16_t tcp_admit_discovery(struct ernic_sq *sq)
{
	struct tcp_conn *conn = sq->transport;

	return ernic_place_admit_discovery(&conn->port->places, &conn->place);
}

static int tcp_req_exec(struct tcp_conn *conn, struct tcp_req *treq)
{
	const struct nvmf_fabrics_cmd *fcmd = (const struct nvmf_fabrics_cmd *)&treq->req.sqe;
	bool connect = fcmd->opc == NVME_FABRICS_COMMAND && fcmd->fctype == NVMF_FCTYPE_CONNECT;
	enum ernic_exec ex;

	/* A Connect on a connection that is no queue yet first claims its place. */
	if (connect && !conn->place.connected && !ernic_place_claim(&conn->port->places, &conn->place)) {
		tcp_req_put(conn, treq);
		return tcp_conn_close_evicted(conn);
	}
	/* Set before exec: a held request may complete on another thread before exec returns. */
	treq->state = TCP_REQ_EXECUTING;
	if (ERNIC_UNLIKELY(treq->req.stamps != NULL))
		treq->rec.exec = ernic_now_ns();
	ex = ernic_req_exec(&treq->req);
	if (ex == ERNIC_EXEC_HELD)
		return 0;
	if (ERNIC_UNLIKELY(ex == ERNIC_EXEC_CTRLR_FATAL)) {
		tcp_req_put(conn, treq);
		return -ETIMEDOUT; /* closed unanswered: see ERNIC_EXEC_CTRLR_FATAL */
	}
	if (connect)
		tcp_conn_connected(conn, treq);
	if (ERNIC_UNLIKELY(treq->req.stamps != NULL))
		treq->rec.queued = ernic_now_ns();
	pthread_mutex_lock(&conn->lock);
	tcp_tx_completion_locked(conn, treq);
	pthread_mutex_unlock(&conn->lock);
	/*
	 * A Disconnect deleted the queue (ernic_req_exec()): the connection
	 * closes once its answer is out (tcp_conn_close() sends what is
	 * batched), as SPDK's target does. The queue takes no Connect again, and
	 * no controller's keep-alive covers it any more.
	 */
	return conn->sq.deleted ? -ENOTCONN : 0;
}

/* -------------------------------------------------------------- receiving */

/*
 * Periodic work of a connection thread: the target's keep-alive timers, and
 * whether this connection should close (its controller failed, or the port
 * is stopping and no command is waiting for data).
 */
static int tcp_conn_check(struct tcp_conn *conn, bool at_boundary)
{
	struct ernic_tcp_port *port = conn->port;
	uint64_t now = ernic_now_ns();

	conn->next_check_ns = now + ERNIC_TCP_POLL_MS * 1000000ull;
	ernic_target_check_keep_alive(port->tgt);
	ernic_log_flush(&port->log, false);
	if (ernic_sq_ctrlr_fatal(&conn->sq))
		return -ETIMEDOUT;
	/*
	 * A peer holding a thread and its slots without becoming a queue, or
	 * stopping in the middle of a PDU. An idle connected queue is left to
	 * keep-alive, as a host with KATO 0 asked for.
	 */
	if (!conn->place.connected && ernic_place_evicted(&port->places, &conn->place))
		return tcp_conn_close_evicted(conn);
	if (!conn->place.connected && now - conn->opened_ns >= port->idle_timeout_ns) {
		ernic_log(&port->log, TCP_LOG_CLOSED_EARLY, "peer %s: closed: no Connect within %" PRIu64 " ms", conn->peer,
			port->idle_timeout_ns / 1000000);
		return -ETIME;
	}
	if (!at_boundary && conn->pdu_stall_ns && now - conn->pdu_stall_ns >= port->idle_timeout_ns)
		return -ETIME;
	/* An R2T the host leaves unanswered holds its slot, and perhaps the namespace (tcp_h2c_in_place()). */
	for (uint32_t i = 0, n = conn->nr_need_data; n && i < conn->nr_reqs; i++) {
		const struct tcp_req *treq = &conn->reqs[i];

		if (treq->state != TCP_REQ_NEED_DATA)
			continue;
		n--;
		if (now - treq->h2c_wait_ns >= port->idle_timeout_ns) {
			ernic_log(&port->log, TCP_LOG_TRANSPORT_ERROR,
				  "peer %s qid %u: closed: the H2CData for cid %u not all in within %" PRIu64 " ms of its R2T",
				  conn->peer, conn->qid, treq->req.sqe.cid, port->idle_timeout_ns / 1000000);
			return -ETIME;
		}
	}
	if (atomic_load(&port->stopping)) {
		if (at_boundary && !conn->nr_need_data)
			return -ESHUTDOWN;
		if (now >= atomic_load(&port->stop_deadline_ns))
			return -ESHUTDOWN;
	}
	return 0;
}

/*
 * Data came at @now after recv() found the socket drained: the gap goes into
 * the host's pace, and if this wait spun, whether the spin caught it.
 */
static void tcp_busy_poll_account(struct tcp_conn *conn, uint64_t now)
{
	uint32_t hit = conn->spinning ? TCP_BUSY_POLL_ONE : 0;
	uint32_t gap = (uint32_t)MIN(now - conn->idle_since_ns, (uint64_t)TCP_BUSY_POLL_MAX_NS);

	conn->gap_ns = (uint32_t)((int64_t)conn->gap_ns +
				  (((int64_t)gap - (int64_t)conn->gap_ns) >> TCP_BUSY_POLL_EWMA_SHIFT));
	conn->idle_since_ns = 0;
	atomic_fetch_add_explicit(&conn->port->rx_waits, 1, memory_order_relaxed);
	if (!conn->spun)
		return;
	atomic_fetch_add_explicit(&conn->port->rx_waits_spun, 1, memory_order_relaxed);
	if (hit)
		atomic_fetch_add_explicit(&conn->port->rx_waits_caught, 1, memory_order_relaxed);
	conn->poll_hits = (uint32_t)((int32_t)conn->poll_hits +
				     (((int32_t)hit - (int32_t)conn->poll_hits) >> TCP_BUSY_POLL_EWMA_SHIFT));
}

/*
 * Read exactly @len bytes into @buf, or with @buf NULL gather them in rbuf
 * from rhead on (at most TCP_RBUF_SIZE), where they stay. @boundary: this
 * starts a PDU, where a stopping port may close the connection and commands
 * waiting for a buffer are looked at again (tcp_buf_wait_retry()). Returns 0,
 * -ECONNRESET at end of stream, or what tcp_conn_check() decided.
 */
static int tcp_recv_full(struct tcp_conn *conn, void *buf, size_t len, bool boundary)
{
	uint8_t *p = buf;
	bool gather = !buf;
	size_t got = 0;
	uint64_t now;
	int rc;

	if (gather && len > sizeof(conn->rbuf))
		return -EMSGSIZE;
	while (gather ? conn->rtail - conn->rhead < len : got < len) {
		size_t avail = conn->rtail - conn->rhead;
		bool direct, sleep, wait_buf;
		ssize_t n;

		if (avail && !gather) {
			n = (ssize_t)MIN(avail, len - got);
			memcpy(p + got, conn->rbuf + conn->rhead, (size_t)n);
			conn->rhead += (uint32_t)n;
			got += (size_t)n;
			continue;
		}
		if (gather && conn->rhead)
			memmove(conn->rbuf, conn->rbuf + conn->rhead, avail);
		conn->rhead = 0;
		conn->rtail = gather ? (uint32_t)avail : 0;
		/* Every capsule at hand is parsed: what they completed goes out before the next read. */
		if (ERNIC_UNLIKELY(atomic_load_explicit(&conn->done, memory_order_relaxed) != NULL))
			tcp_take_done(conn);
		wait_buf = boundary && got == 0 && conn->buf_wait_head;
		if (ERNIC_UNLIKELY(wait_buf)) {
			rc = tcp_buf_wait_retry(conn);
			if (rc)
				return rc;
			wait_buf = conn->buf_wait_head != NULL;
		}
		rc = tcp_tx_flush(conn);
		if (rc)
			return rc;
		/* A large remainder (data) goes straight to its destination, copied once. */
		direct = !gather && len - got >= TCP_RECV_DIRECT_MIN;
		/*
		 * Once the busy-poll window of this wait is over, recv() itself
		 * sleeps (up to SO_RCVTIMEO, ERNIC_TCP_POLL_MS): one system call
		 * where poll() and then recv() took two.
		 */
		sleep = conn->idle_since_ns && !conn->spinning;
		/*
		 * A command waits for a buffer that another queue may give back at
		 * any moment, and only a new PDU boundary looks again: no sleep of
		 * ERNIC_TCP_POLL_MS while it waits, a look every millisecond.
		 */
		if (ERNIC_UNLIKELY(wait_buf && sleep)) {
			struct pollfd pfd = { .fd = conn->fd, .events = POLLIN };

			sleep = false;
			if (poll(&pfd, 1, TCP_BUF_WAIT_POLL_MS) == 0) {
				if (ernic_now_ns() >= conn->next_check_ns) {
					rc = tcp_conn_check(conn, true);
					if (rc)
						return rc;
				}
				continue;
			}
		}
		n = recv(conn->fd, direct ? p + got : conn->rbuf + conn->rtail,
			 direct		? len - got
			 : gather	? sizeof(conn->rbuf) - conn->rtail
			 : conn->nr_need_data || conn->large_icd ? TCP_RECV_DIRECT_MIN
								 : sizeof(conn->rbuf),
			 sleep ? 0 : MSG_DONTWAIT);
		if (n > 0) {
			if (direct)
				got += (size_t)n;
			else
				conn->rtail += (uint32_t)n;
			if (!conn->idle_since_ns)
				continue;
			now = ernic_now_ns();
			tcp_busy_poll_account(conn, now);
			/*
			 * Spun or slept: a PDU trickled in, each piece caught by the
			 * spin, never sleeps, and must still meet its stall timer,
			 * its R2T's deadline and a stopping port.
			 */
			if (now >= conn->next_check_ns) {
				rc = tcp_conn_check(conn, false);
				if (rc)
					return rc;
			}
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (sleep) {
			/* SO_RCVTIMEO ran out: time for the periodic checks. */
			rc = tcp_conn_check(conn, boundary && got == 0);
			if (rc)
				return rc;
			continue;
		}
		/*
		 * Busy-poll before sleeping while it pays (see TCP_BUSY_POLL_MIN_NS):
		 * a sleep costs a wake-up on another CPU, milliseconds under an
		 * emulated one.
		 */
		if (!conn->idle_since_ns) {
			now = ernic_now_ns();
			conn->idle_since_ns = now;
			/* A stall inside a PDU is timed from its first wait, spun or slept: the fast path reads no clock. */
			if (!(boundary && got == 0) && !conn->pdu_stall_ns)
				conn->pdu_stall_ns = now;
			/* Not before Connect: a peer that is no queue yet gets no CPU spun for it. */
			conn->spun = conn->place.connected && (conn->poll_hits >= TCP_BUSY_POLL_ONE / 2 ||
							 ++conn->poll_waits % TCP_BUSY_POLL_RETRY == 0);
			conn->spinning = conn->spun;
			conn->spins = 0;
			conn->spin_until_ns = now + (conn->spun ? MIN(MAX(2 * conn->gap_ns, TCP_BUSY_POLL_MIN_NS),
									TCP_BUSY_POLL_MAX_NS) : 0);
		} else if (conn->spinning && ++conn->spins % TCP_BUSY_POLL_CLOCK_EVERY == 0 &&
			   ernic_now_ns() >= conn->spin_until_ns) {
			conn->spinning = false;
		}
		if (conn->spinning)
			sched_yield();
	}
	return 0;
}

/*
 * A data digest error is no fatal transport error (TCP 1.0 defines no FES
 * for it, as it does for a header digest): the PDU was framed right, so the
 * stream is still in step, and only the command's data is suspect. The
 * command completes with Transient Transport Error, which a host may retry,
 * once all its data is in, running nothing (ernic_req.transport_status), as
 * SPDK's target does; under a data digest no data lands in the namespace
 * before exec (tcp_h2c_in_place()). Linux nvmet closes the connection.
 */
static void tcp_ddgst_error(struct tcp_conn *conn, struct tcp_req *treq, uint32_t rcvd, uint32_t crc)
{
	ernic_log(&conn->port->log, TCP_LOG_TRANSPORT_ERROR,
		  "peer %s qid %u: data digest error, cid %u: received 0x%08x, computed 0x%08x: Transient Transport Error",
		  conn->peer, conn->qid, treq->req.sqe.cid, rcvd, crc);
	treq->req.transport_status = NVME_SC_TRANSIENT_TRANSPORT;
}

static void tcp_check_ddgst(struct tcp_conn *conn, struct tcp_req *treq, const uint8_t *data, uint32_t datal,
			    uint32_t rcvd)
{
	uint32_t crc = ernic_crc32c(0, data, datal);

	if (ERNIC_UNLIKELY(rcvd != crc))
		tcp_ddgst_error(conn, treq, rcvd, crc);
}

/* Skip @pad bytes, read @datal bytes of @treq's data into @dst, check the data digest. */
static int tcp_recv_data(struct tcp_conn *conn, struct tcp_req *treq, uint8_t *dst, uint32_t pad, uint32_t datal)
{
	uint32_t rcvd;
	int rc;

	if (pad) {
		rc = tcp_recv_full(conn, conn->scratch, pad, false);
		if (rc)
			return rc;
	}
	rc = tcp_recv_full(conn, dst, datal, false);
	if (rc || !conn->ddgst)
		return rc;
	rc = tcp_recv_full(conn, &rcvd, sizeof(rcvd), false);
	if (rc)
		return rc;
	tcp_check_ddgst(conn, treq, dst, datal, rcvd);
	return 0;
}

/*
 * A large Write's data, in the capsule but not all received yet or solicited
 * by R2T, straight into the namespace (a RAM one) where the core says its
 * blocks are (ernic_req_h2c_in_place()): the kernel's copy out of the socket
 * is then the only one, where the slot's buffer took a second into the
 * namespace at exec. Not with a data digest, which must be checked before
 * any byte reaches the medium, and only for the plain layouts a host sends
 * (in-capsule data at offset 0, or a Transport SGL Data Block; exactly the
 * blocks either way). A host that stops inside the data, or never sends what
 * an R2T asked for, is closed by the idle timeout (tcp_conn_check()), and the
 * hold ends with its queue.
 */
static uint8_t *tcp_h2c_in_place(struct tcp_conn *conn, struct tcp_req *treq, uint32_t len)
{
	const struct nvme_sgl_desc *sgl = &treq->req.sqe.dptr;
	uint8_t *dst;

	if (conn->ddgst || len < TCP_RECV_DIRECT_MIN || sgl->unkeyed.length != len)
		return NULL;
	if (sgl->id != NVME_SGL_ID(NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK, NVME_SGL_SUBTYPE_TRANSPORT) &&
	    (sgl->id != NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET) || sgl->addr))
		return NULL;
	/* Held before the core looks the namespace up: a removal then waits for this slot (ernic_target_quiesce()). */
	tcp_req_hold_ns_mem(conn, treq);
	dst = ernic_req_h2c_in_place(&treq->req, len);
	if (!dst) {
		tcp_req_put_ns_mem(conn, treq);
		return NULL;
	}
	atomic_fetch_add_explicit(&conn->port->rx_h2c_in_place, 1, memory_order_relaxed);
	return dst;
}

/*
 * In-capsule data: when the whole of it (and its digest) is already in rbuf,
 * as a small write's usually is, the command executes from there, one copy
 * fewer than through the slot's buffer. That holds until the next recv(),
 * which comes only after tcp_req_exec(): the core executes every command with
 * data synchronously (only an AER is held, and it carries none). Otherwise
 * the data is read into the namespace itself (tcp_h2c_in_place()) or into the
 * slot's buffer, grown to it if need be, or gathered in rbuf when the port's
 * budget has no room for that; -ENOMEM when the system has none, before
 * anything of the data was read.
 */
static int tcp_recv_icd(struct tcp_conn *conn, struct tcp_req *treq, uint32_t pad, uint32_t datal)
{
	uint32_t dd = conn->ddgst ? NVME_TCP_DIGEST_LEN : 0;
	uint8_t *data = conn->rbuf + conn->rhead + pad;
	uint32_t rcvd;
	int rc;

	if (conn->rtail - conn->rhead < pad + datal + dd) {
		uint8_t *dst = tcp_h2c_in_place(conn, treq, datal);

		if (dst) {
			treq->h2c_buf = dst;
			return tcp_recv_data(conn, treq, dst, pad, datal);
		}
		rc = tcp_req_buf_reserve(treq, datal);
		if (!rc) {
			treq->h2c_buf = treq->buf;
			return tcp_recv_data(conn, treq, treq->buf, pad, datal);
		}
		/*
		 * No room in the port's budget: the data comes into rbuf, which
		 * holds any in-capsule data, and the command runs from there. The
		 * capsule cannot wait as an R2T's write does: its data is on its way.
		 */
		if (rc == -ENOMEM)
			return rc;
		rc = tcp_recv_full(conn, NULL, pad + datal + dd, false);
		if (rc)
			return rc;
		data = conn->rbuf + conn->rhead + pad;
	}
	conn->rhead += pad + datal + dd;
	treq->h2c_buf = data;
	if (!dd)
		return 0;
	memcpy(&rcvd, data + datal, sizeof(rcvd));
	tcp_check_ddgst(conn, treq, data, datal, rcvd);
	return 0;
}

/*
 * PDO and PLEN of a CapsuleCmd or H2CData (common header): data, if any, starts at
 * PDO (at or after the header and its digest; CPDA 0 asks no alignment) and
 * runs to PLEN less the data digest.
 */
static int tcp_check_data_layout(struct tcp_conn *conn, bool may_be_empty, uint32_t *datal, uint32_t *pad)
{
	const struct nvme_tcp_hdr *ch = (const void *)conn->hdr;
	uint32_t hd = conn->hdgst ? NVME_TCP_DIGEST_LEN : 0;
	uint32_t dd = conn->ddgst ? NVME_TCP_DIGEST_LEN : 0;

	*datal = *pad = 0;
	if (ch->pdo == 0) {
		if (!may_be_empty)
			return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(pdo));
		if (ch->plen != ch->hlen + hd)
			return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(plen));
		if (ch->flags & NVME_TCP_F_DDGST)
			return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(flags));
		return 0;
	}
	if (ch->pdo < ch->hlen + hd)
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(pdo));
	if (ch->plen <= ch->pdo + dd)
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(plen));
	if (!!(ch->flags & NVME_TCP_F_DDGST) != conn->ddgst)
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(flags));
	*datal = ch->plen - ch->pdo - dd;
	*pad = ch->pdo - ch->hlen - hd;
	return 0;
}

static int tcp_handle_icreq(struct tcp_conn *conn)
{
	const struct nvme_tcp_icreq_pdu *icreq = (const void *)conn->hdr;
	struct nvme_tcp_icresp_pdu icresp = {
		.hdr = {
			.type = NVME_TCP_ICRESP,
			.hlen = TCP_IC_HLEN,
			.plen = TCP_IC_HLEN,
		},
		.pfv = NVME_TCP_PFV_1_0,
		.cpda = 0,
		.maxdata = conn->port->maxh2cdata,
	};
	struct iovec iov = { &icresp, sizeof(icresp) };
	int rc;

	if (conn->ic_done)
		return tcp_fatal(conn, NVME_TCP_FES_PDU_SEQ_ERR, 0);
	if (icreq->hdr.pdo != 0)
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(pdo));
	if (icreq->hdr.plen != TCP_IC_HLEN)
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(plen));
	if (icreq->pfv != NVME_TCP_PFV_1_0)
		return tcp_fatal(conn, NVME_TCP_FES_UNSUPPORTED_PARAM, offsetof(struct nvme_tcp_icreq_pdu, pfv));
	/* HPDA is 0..31, in dwords, 0's based (ICReq). */
	if (icreq->hpda > 31)
		return tcp_fatal(conn, NVME_TCP_FES_UNSUPPORTED_PARAM, offsetof(struct nvme_tcp_icreq_pdu, hpda));

	/* Both digests are supported, so the host gets exactly what it asked for. */
	conn->hdgst = icreq->digest & NVME_TCP_HDR_DIGEST_ENABLE;
	conn->ddgst = icreq->digest & NVME_TCP_DATA_DIGEST_ENABLE;
	conn->sq.c2h_in_place = !conn->ddgst;
	conn->c2h_align = (icreq->hpda + 1u) * 4;
	icresp.digest = icreq->digest & (NVME_TCP_HDR_DIGEST_ENABLE | NVME_TCP_DATA_DIGEST_ENABLE);

	/* ICResp never carries digests, whatever was negotiated. */
	pthread_mutex_lock(&conn->lock);
	rc = tcp_sendv_locked(conn, &iov, 1, 0);
	pthread_mutex_unlock(&conn->lock);
	conn->ic_done = true;
	return rc;
}

/* Complete a command the queue has no room for, without the core. */
static int tcp_reject_cmd(struct tcp_conn *conn, const struct nvme_sqe *sqe, uint32_t pad, uint32_t datal)
{
	struct tcp_req tmp = { .conn = conn, .req = { .sqe = *sqe, .sq = &conn->sq } };
	uint32_t crc = 0;
	int rc;

	/*
	 * The in-capsule data still has to be read past, and its digest checked:
	 * corrupted, the command is failed as one that could have run would be
	 * (tcp_check_ddgst()), Transient Transport Error rather than the want of
	 * a slot.
	 */
	for (uint32_t left = datal; left;) {
		uint32_t n = MIN(left, (uint32_t)sizeof(conn->scratch));

		rc = tcp_recv_full(conn, conn->scratch, pad, false);
		if (rc)
			return rc;
		pad = 0;
		rc = tcp_recv_full(conn, conn->scratch, n, false);
		if (rc)
			return rc;
		if (conn->ddgst)
			crc = ernic_crc32c(crc, conn->scratch, n);
		left -= n;
	}
	if (datal && conn->ddgst) {
		uint32_t rcvd;

		rc = tcp_recv_full(conn, &rcvd, sizeof(rcvd), false);
		if (rc)
			return rc;
		if (rcvd != crc)
			tcp_ddgst_error(conn, &tmp, rcvd, crc);
	}
	ernic_req_set_status(&tmp.req, tmp.req.transport_status ? tmp.req.transport_status : NVME_SC_INTERNAL);
	tmp.req.cqe.sqhd = ernic_sq_cqe_sqhd(&conn->sq);
	pthread_mutex_lock(&conn->lock);
	rc = tcp_tx_rsp_locked(conn, &tmp.req.cqe);
	pthread_mutex_unlock(&conn->lock);
	return rc;
}

/* Ask for a write's data (R2T), which lands at treq->h2c_buf. */
static int tcp_solicit(struct tcp_conn *conn, struct tcp_req *treq)
{
	treq->state = TCP_REQ_NEED_DATA;
	treq->r2t_len = treq->req.sqe.dptr.unkeyed.length;
	/*
	 * Timed from now, not from pdu_start_ns: that is when the thread began to wait for the capsule,
	 * which on a queue idle for longer than idle_timeout_ns would have the R2T expire at once.
	 */
	treq->h2c_wait_ns = ernic_now_ns();
	conn->nr_need_data++;
	return tcp_send_r2t(conn, treq);
}

/*
 * The slot's buffer for the data its SGL describes, a write's to be solicited
 * or a read's to execute, taken in turn: behind the connection's commands
 * already waiting, if any. When the port's budget (ernic_tcp_port_opts.buf_budget)
 * has no room for it, the command waits, with nothing of it done yet and its
 * slot taken, while the connection serves the rest, and this returns
 * -ENOBUFS. Buffers come back as other commands complete, on any queue of the
 * port; the connection looks again at each PDU boundary, and every
 * TCP_BUF_WAIT_POLL_MS while idle (tcp_recv_full(), tcp_buf_wait_retry()).
 * SPDK's target queues such a request for its shared buffer pool alike;
 * nvmet-tcp allocates without a bound. Else as tcp_req_buf_reserve().
 */
static int tcp_req_buf_in_turn(struct tcp_conn *conn, struct tcp_req *treq)
{
	int rc = conn->buf_wait_head ? -ENOBUFS : tcp_req_buf_reserve(treq, treq->req.sqe.dptr.unkeyed.length);

	if (rc != -ENOBUFS)
		return rc;
	treq->state = TCP_REQ_NEED_BUF;
	treq->next_buf_wait = NULL;
	if (conn->buf_wait_tail)
		conn->buf_wait_tail->next_buf_wait = treq;
	else
		conn->buf_wait_head = treq;
	conn->buf_wait_tail = treq;
	atomic_fetch_add_explicit(&conn->port->buf_waits, 1, memory_order_relaxed);
	return rc;
}

/* Give the connection's waiting commands their buffers while the budget has room, oldest first. */
static int tcp_buf_wait_retry(struct tcp_conn *conn)
{
	struct tcp_req *treq;
	int rc;

	while ((treq = conn->buf_wait_head) != NULL) {
		rc = tcp_req_buf_reserve(treq, treq->req.sqe.dptr.unkeyed.length);
		if (rc == -ENOBUFS)
			return 0;
		conn->buf_wait_head = treq->next_buf_wait;
		if (!conn->buf_wait_head)
			conn->buf_wait_tail = NULL;
		if (treq->req.sqe.opc == NVME_CMD_READ) {
			rc = tcp_req_exec(conn, treq);
		} else if (rc) {
			struct nvme_sqe sqe = treq->req.sqe;

			tcp_req_put(conn, treq);
			rc = tcp_reject_cmd(conn, &sqe, 0, 0);
		} else {
			treq->h2c_buf = treq->buf;
			rc = tcp_solicit(conn, treq);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int tcp_handle_cmd(struct tcp_conn *conn)
{
	const struct nvme_tcp_cmd_pdu *pdu = (const void *)conn->hdr;
	const struct nvme_sgl_desc *sgl = &pdu->cmd.dptr;
	struct tcp_req *treq;
	uint32_t datal, pad;
	int rc;

	rc = tcp_check_data_layout(conn, true, &datal, &pad);
	if (rc)
		return rc;
	if (datal > ERNIC_TCP_IN_CAPSULE_DATA)
		return tcp_fatal(conn, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, 0);

	treq = tcp_req_get(conn);
	if (!treq)
		return tcp_reject_cmd(conn, &pdu->cmd, pad, datal);
	treq->req.sqe = pdu->cmd;
	/* Another like it is likely next: its data should land in place, not in rbuf (TCP_RECV_DIRECT_MIN). */
	conn->large_icd = datal >= TCP_RECV_DIRECT_MIN;
	if (datal) {
		rc = tcp_recv_icd(conn, treq, pad, datal);
		if (rc == -ENOMEM) {
			/* Out of memory for it: this command fails, the connection goes on. */
			tcp_req_put(conn, treq);
			return tcp_reject_cmd(conn, &pdu->cmd, pad, datal);
		}
		if (rc)
			return rc;
		treq->h2c_len = datal;
	}
	if (ernic_trace_due(&conn->tq))
		tcp_sample_start(conn, treq);

	/*
	 * Host to controller data not in the capsule is solicited before exec,
	 * but only for a command that can use it: one the core would refuse
	 * (not connected, a wrong namespace or LBA range, an SGL over MDTS) runs
	 * without its data and completes with that status, no R2T sent.
	 */
	if (!datal && nvme_sqe_data_dir(&treq->req.sqe) == NVME_DATA_HOST_TO_CTRL &&
	    sgl->id == NVME_SGL_ID(NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK, NVME_SGL_SUBTYPE_TRANSPORT) &&
	    sgl->unkeyed.length && sgl->unkeyed.length <= tcp_req_buf_max(&conn->sq) && !ernic_req_check(&treq->req)) {
		treq->h2c_buf = tcp_h2c_in_place(conn, treq, sgl->unkeyed.length);
		if (treq->h2c_buf)
			return tcp_solicit(conn, treq);
		rc = tcp_req_buf_in_turn(conn, treq);
		if (rc == -ENOBUFS)
			return 0;
		if (rc) {
			tcp_req_put(conn, treq);
			return tcp_reject_cmd(conn, &pdu->cmd, 0, 0);
		}
		treq->h2c_buf = treq->buf;
		return tcp_solicit(conn, treq);
	}
	/*
	 * A read whose data does not go from the namespace itself takes its
	 * buffer now, while it can still wait for one; one that cannot have
	 * it at all is failed by tcp_map_data() during exec.
	 */
	if (!datal && treq->req.sqe.opc == NVME_CMD_READ && conn->qid && sgl->unkeyed.length > treq->buf_size &&
	    sgl->id == NVME_SGL_ID(NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK, NVME_SGL_SUBTYPE_TRANSPORT) &&
	    sgl->unkeyed.length <= tcp_req_buf_max(&conn->sq) && !ernic_req_c2h_in_place(&treq->req) &&
	    tcp_req_buf_in_turn(conn, treq) == -ENOBUFS)
		return 0;
	return tcp_req_exec(conn, treq);
}

static int tcp_handle_h2c_data(struct tcp_conn *conn)
{
	const struct nvme_tcp_data_pdu *pdu = (const void *)conn->hdr;
	struct tcp_req *treq;
	uint32_t datal, pad;
	bool last;
	int rc;

	rc = tcp_check_data_layout(conn, false, &datal, &pad);
	if (rc)
		return rc;
	if (pdu->datal != datal)
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, offsetof(struct nvme_tcp_data_pdu, datal));
	if (pdu->ttag >= conn->nr_reqs || conn->reqs[pdu->ttag].state != TCP_REQ_NEED_DATA)
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, offsetof(struct nvme_tcp_data_pdu, ttag));
	treq = &conn->reqs[pdu->ttag];
	if (pdu->cccid != treq->req.sqe.cid)
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, offsetof(struct nvme_tcp_data_pdu, cccid));
	/* In order and inside what the R2T asked for (H2CData: DATAO, DATAL). */
	if (pdu->datao != treq->h2c_rcvd || (uint64_t)pdu->datao + datal > treq->r2t_len)
		return tcp_fatal(conn, NVME_TCP_FES_DATA_OUT_OF_RANGE, 0);
	if (datal > conn->port->maxh2cdata)
		return tcp_fatal(conn, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, 0);
	last = pdu->datao + datal == treq->r2t_len;
	if (!!(pdu->hdr.flags & NVME_TCP_F_DATA_LAST) != last)
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(flags));

	rc = tcp_recv_data(conn, treq, treq->h2c_buf + pdu->datao, pad, datal);
	if (rc)
		return rc;
	treq->h2c_rcvd += datal;
	/*
	 * The R2T's whole data stays timed from the R2T: a host trickling a byte
	 * at a time would otherwise hold the slot, and the namespace the write
	 * lands in (a removal waits for it), as long as it liked.
	 */
	if (!last)
		return 0;
	treq->h2c_len = treq->r2t_len;
	conn->nr_need_data--;
	return tcp_req_exec(conn, treq);
}

static int tcp_handle_h2c_term(struct tcp_conn *conn)
{
	const struct nvme_tcp_term_pdu *term = (const void *)conn->hdr;

	/* The host is closing: a TermReq is never answered with one. */
	ernic_log(&conn->port->log, TCP_LOG_TRANSPORT_ERROR, "peer %s qid %u: host terminated the connection: fes 0x%x fei 0x%x",
		conn->peer, conn->qid, term->fes, term->fei);
	return -ECONNABORTED;
}

/* Receive one PDU and act on it. Non-zero closes the connection. */
static int tcp_recv_pdu(struct tcp_conn *conn)
{
	const struct nvme_tcp_hdr *ch = (const void *)conn->hdr;
	uint32_t hd = 0, hlen, rcvd;
	int rc;

	conn->hdr_len = 0;
	conn->pdu_stall_ns = 0;
	conn->pdu_start_ns = ernic_now_ns();
	if (conn->pdu_start_ns >= conn->next_check_ns) {
		rc = tcp_conn_check(conn, true);
		if (rc)
			return rc;
	}
	rc = tcp_recv_full(conn, conn->hdr, sizeof(*ch), true);
	if (rc)
		return rc;
	conn->hdr_len = sizeof(*ch);

	switch (ch->type) {
	case NVME_TCP_ICREQ:
		hlen = TCP_IC_HLEN;
		break;
	case NVME_TCP_H2C_TERM:
		hlen = TCP_TERM_HLEN;
		break;
	case NVME_TCP_CMD:
		hlen = TCP_CMD_HLEN;
		hd = conn->hdgst ? NVME_TCP_DIGEST_LEN : 0;
		break;
	case NVME_TCP_H2C_DATA:
		hlen = TCP_DATA_HLEN;
		hd = conn->hdgst ? NVME_TCP_DIGEST_LEN : 0;
		break;
	default:
		/* Unknown, or a controller to host type. */
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(type));
	}
	if (ch->hlen != hlen) {
		/* A malformed TermReq still ends the connection, unanswered like any TermReq. */
		if (ch->type == NVME_TCP_H2C_TERM) {
			ernic_log(&conn->port->log, TCP_LOG_TRANSPORT_ERROR,
				  "peer %s qid %u: host terminated the connection with a TermReq of hlen %u", conn->peer,
				  conn->qid, ch->hlen);
			return -ECONNABORTED;
		}
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(hlen));
	}
	rc = tcp_recv_full(conn, conn->hdr + sizeof(*ch), hlen - sizeof(*ch) + hd, false);
	if (rc)
		return rc;
	conn->hdr_len = hlen;

	if (ch->type == NVME_TCP_H2C_TERM)
		return tcp_handle_h2c_term(conn);
	if (ch->type == NVME_TCP_ICREQ)
		return tcp_handle_icreq(conn);
	/* Nothing but ICReq before the connection is initialised. */
	if (!conn->ic_done)
		return tcp_fatal(conn, NVME_TCP_FES_PDU_SEQ_ERR, 0);

	if (!!(ch->flags & NVME_TCP_F_HDGST) != conn->hdgst)
		return tcp_fatal(conn, NVME_TCP_FES_INVALID_PDU_HDR, TCP_HDR_FEI(flags));
	if (hd) {
		memcpy(&rcvd, conn->hdr + hlen, sizeof(rcvd));
		if (rcvd != ernic_crc32c(0, conn->hdr, hlen))
			return tcp_fatal(conn, NVME_TCP_FES_HDR_DIGEST_ERR, rcvd);
	}
	if (ch->type == NVME_TCP_CMD)
		return tcp_handle_cmd(conn);
	return tcp_handle_h2c_data(conn);
}

/* ------------------------------------------------------------- connections */

static void tcp_conn_free(struct tcp_conn *conn)
{
	for (uint32_t i = 0; i < conn->nr_reqs; i++) {
		tcp_req_buf_free(conn->port, &conn->reqs[i]);
	}
	free(conn->reqs);
	for (int i = 0; i < 2; i++)
		if (conn->splice_pipe[i] >= 0)
			close(conn->splice_pipe[i]);
	pthread_mutex_destroy(&conn->lock);
	free(conn);
}

/* After a C2HTermReq: let the host read it before the socket goes. */
static void tcp_conn_linger(struct tcp_conn *conn)
{
	uint64_t end = ernic_now_ns() + TCP_TERM_LINGER_MS * 1000000ull;

	/* FIN after the TermReq; reading on avoids a reset that could discard it. */
	shutdown(conn->fd, SHUT_WR);
	while (ernic_now_ns() < end) {
		struct pollfd pfd = { .fd = conn->fd, .events = POLLIN };

		if (poll(&pfd, 1, ERNIC_TCP_POLL_MS) > 0 && recv(conn->fd, conn->scratch, sizeof(conn->scratch), 0) <= 0)
			break;
	}
}

static const char *tcp_close_reason(int rc)
{
	switch (rc) {
	case -ECONNRESET:
		return "host closed the connection";
	case -ETIMEDOUT:
		return "controller fatal (keep-alive timeout or admin queue lost)";
	case -ESHUTDOWN:
		return "target shutting down";
	case -EPROTO:
		return "transport error";
	case -ECONNABORTED:
		return "host terminated the connection";
	case -ETIME:
		return "idle timeout inside a PDU";
	case -ENOTCONN:
		return "host deleted the queue (Disconnect)";
	case -ECANCELED:
		return "a namespace removal waited on a send this slow past --idle-timeout";
	default:
		return strerror(-rc);
	}
}

static void tcp_conn_close(struct tcp_conn *conn, int reason)
{
	struct ernic_tcp_port *port = conn->port;

	if (reason == -EPROTO)
		tcp_conn_linger(conn);
	/*
	 * What other threads completed and this one has not taken yet (an AER an
	 * event released just before the port stopped) goes out with the rest.
	 */
	tcp_take_done(conn);
	pthread_mutex_lock(&conn->lock);
	/* Completions still batched: sent if the host is still there, their slots freed either way. */
	tcp_tx_flush_locked(conn, false);
	conn->dead = true;
	pthread_mutex_unlock(&conn->lock);
	/*
	 * Detach from the controller. Held AERs complete through tcp_complete()
	 * before this returns; with @dead set they only free their slots, as do
	 * those another thread completed before (the core completes them under
	 * the target's lock, which the detach waits for).
	 */
	ernic_sq_destroy(&conn->sq);
	tcp_take_done(conn);
	tcp_tx_flush(conn);
	if (conn->place.connected)
		ernic_log(&port->log, TCP_LOG_DISCONNECT, "disconnect host %s qid %u cntlid %u peer %s: %s", conn->hostnqn, conn->qid,
			conn->cntlid, conn->peer, tcp_close_reason(reason));
	close(conn->fd);
	conn->fd = -1;

	pthread_mutex_lock(&port->lock);
	ernic_places_release_locked(&port->places, &conn->place);
	ernic_trace_queue_stop(&port->trace, &conn->tq);
	conn->next = port->zombies;
	port->zombies = conn;
	pthread_cond_broadcast(&port->cond);
	pthread_mutex_unlock(&port->lock);
}

static void *tcp_conn_thread(void *arg)
{
	struct tcp_conn *conn = arg;
	sigset_t pipe_sig;
	int rc;

	/* A splice() to a socket the host closed raises SIGPIPE (no MSG_NOSIGNAL there): tcp_splice_locked(). */
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);
	tcp_conn_self = conn;
	errno = 0;
	conn->own_nice = getpriority(PRIO_PROCESS, 0);
	if (conn->own_nice == -1 && errno)
		conn->own_nice = INT_MIN; /* unknown: never raised (tcp_send_raise()) */
	do
		rc = tcp_recv_pdu(conn);
	while (!rc);
	tcp_conn_close(conn, rc);
	return NULL;
}

/* Join and free finished connection threads; the caller holds port->lock. */
static void tcp_port_reap_locked(struct ernic_tcp_port *port)
{
	while (port->zombies) {
		struct tcp_conn *conn = port->zombies;

		port->zombies = conn->next;
		pthread_join(conn->thread, NULL);
		tcp_conn_free(conn);
	}
}

static void tcp_peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char addr[INET6_ADDRSTRLEN];

	snprintf(buf, len, "local");
	if (getpeername(fd, (struct sockaddr *)&ss, &sl))
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)&ss;

		inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof(addr));
		snprintf(buf, len, "%s:%u", addr, ntohs(sin->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)&ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, addr, sizeof(addr));
		snprintf(buf, len, "[%s]:%u", addr, ntohs(sin6->sin6_port));
	}
}

int ernic_tcp_serve_fd(struct ernic_tcp_port *port, int fd)
{
	const struct ernic_backend_cfg *cfg = ernic_target_cfg(port->tgt);
	struct timeval snd_to = { .tv_sec = TCP_SEND_WAIT_MS / 1000, .tv_usec = TCP_SEND_WAIT_MS % 1000 * 1000 };
	struct timeval rcv_to = { .tv_usec = ERNIC_TCP_POLL_MS * 1000 };
	struct tcp_conn *conn;
	int rc;

	conn = calloc(1, sizeof(*conn));
	if (!conn) {
		close(fd);
		return -ENOMEM;
	}
	conn->port = port;
	conn->fd = fd;
	conn->splice_pipe[0] = conn->splice_pipe[1] = -1;
	conn->c2h_align = 4;
	conn->opened_ns = ernic_now_ns();
	ernic_trace_queue_init(&conn->tq);
	/* A new queue spins until its host's pace says otherwise. */
	conn->poll_hits = TCP_BUSY_POLL_ONE;
	pthread_mutex_init(&conn->lock, NULL);
	/* One slot per queue entry the host may fill (the admin queue takes 32 whatever MQES says). */
	conn->nr_reqs = MAX(cfg->queue_size, (uint32_t)ERNIC_ADMIN_QUEUE_SIZE);
	conn->reqs = calloc(conn->nr_reqs, sizeof(*conn->reqs));
	if (!conn->reqs) {
		close(fd);
		tcp_conn_free(conn);
		return -ENOMEM;
	}
	for (uint32_t i = conn->nr_reqs; i-- > 0;) {
		conn->reqs[i].conn = conn;
		tcp_req_put_locked(conn, &conn->reqs[i]);
	}
	tcp_peer_name(fd, conn->peer, sizeof(conn->peer));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd_to, sizeof(snd_to));
	/* The connection thread sleeps in recv(): it wakes this often for keep-alive and shutdown. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv_to, sizeof(rcv_to));
	ernic_sq_init(&conn->sq, port->tgt, &tcp_ops, conn);
	conn->sq.portid = port->portid;
	conn->sq.ns_mem_wait_ns = port->idle_timeout_ns;

	/* The port lock covers pthread_create, so conn->thread is set before anyone joins it. */
	pthread_mutex_lock(&port->lock);
	tcp_port_reap_locked(port);
	if (atomic_load(&port->stopping)) {
		rc = -ESHUTDOWN;
	} else if (ernic_places_held(&port->places) >= port->places.max && !ernic_places_make_room_locked(&port->places)) {
		/* Every place is a queue's: the newcomer is closed (place.h). */
		rc = -EBUSY;
	} else {
		rc = -pthread_create(&conn->thread, NULL, tcp_conn_thread, conn);
		if (!rc)
			ernic_places_take_locked(&port->places, &conn->place);
	}
	pthread_mutex_unlock(&port->lock);
	if (rc == -EBUSY)
		ernic_log(&port->log, TCP_LOG_CLOSED_EARLY, "peer %s: closed at once: the limit is %u connections", conn->peer,
			port->places.max);
	if (rc) {
		ernic_sq_destroy(&conn->sq);
		close(fd);
		tcp_conn_free(conn);
	}
	return rc;
}

/* -------------------------------------------------------------------- port */

int ernic_tcp_port_create(struct ernic_target *tgt, const struct ernic_tcp_port_opts *opts,
			  struct ernic_tcp_port **out)
{
	struct ernic_tcp_port *port = calloc(1, sizeof(*port));
	uint32_t maxh2cdata = opts && opts->maxh2cdata ? opts->maxh2cdata : ERNIC_TCP_MAXH2CDATA;

	/* A Linux host refuses MAXH2CDATA below 4 KiB or not a multiple of 4. */
	if (maxh2cdata < 4096 || maxh2cdata % 4) {
		free(port);
		return -EINVAL;
	}
	if (!port)
		return -ENOMEM;
	port->tgt = tgt;
	ernic_log_init(&port->log, opts ? opts->log : NULL, opts && opts->ident ? opts->ident : "ernic-tcp",
		       tcp_log_kind_name, TCP_LOG_NR, ERNIC_TCP_LOG_BURST);
	port->maxh2cdata = maxh2cdata;
	port->c2h_splice = opts && opts->c2h_splice;
	port->buf_budget = opts && opts->buf_budget ? opts->buf_budget : ERNIC_TCP_BUF_BUDGET;
	atomic_init(&port->raise_sends, opts && opts->raise_sends);
	port->send_nice = opts ? opts->send_nice : 0;
	port->places.max = opts && opts->max_connections ? opts->max_connections : ERNIC_TCP_MAX_CONNECTIONS;
	port->places.lock = &port->lock;
	port->idle_timeout_ns =
		(opts && opts->idle_timeout_ms ? opts->idle_timeout_ms : ERNIC_TCP_IDLE_TIMEOUT_MS) * 1000000ull;
	port->listen_fd = -1;
	atomic_init(&port->stopping, false);
	atomic_init(&port->stop_deadline_ns, 0);
	pthread_mutex_init(&port->lock, NULL);
	pthread_cond_init(&port->cond, NULL);
	/* The port's own reference: its queues start on the target (ernic_sq_init()). */
	ernic_target_get(tgt);
	if (ernic_trace_init(&port->trace, "tcp", opts ? opts->sample_every : 0, opts ? opts->trace : NULL,
			     opts ? opts->trace_max_bytes : 0, ERNIC_TRACE_STAGES_COMMON)) {
		ernic_tcp_port_destroy(port);
		return -EAGAIN;
	}
	*out = port;
	return 0;
}

int ernic_tcp_port_listen(struct ernic_tcp_port *port, const char *traddr, const char *trsvcid, char *err,
			  size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *ai;
	char svc[8];
	int fd, one = 1, rc;

	rc = getaddrinfo(traddr, trsvcid, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "cannot use address %s port %s: %s", traddr, trsvcid, gai_strerror(rc));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		freeaddrinfo(ai);
		snprintf(err, errlen, "socket: %s", strerror(-rc));
		return rc;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
		rc = -errno;
		freeaddrinfo(ai);
		close(fd);
		snprintf(err, errlen, "cannot listen on %s port %s: %s", traddr, trsvcid, strerror(-rc));
		return rc;
	}
	freeaddrinfo(ai);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	port->portnum = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						       : ((struct sockaddr_in *)&ss)->sin_port);
	port->listen_fd = fd;
	snprintf(svc, sizeof(svc), "%u", port->portnum);
	/* What a discovery controller reached through this port reports. */
	ernic_target_set_port(port->tgt, NVMF_TRTYPE_TCP, traddr, svc);
	return 0;
}

void ernic_tcp_port_set_portid(struct ernic_tcp_port *port, uint16_t portid)
{
	port->portid = portid;
}

uint16_t ernic_tcp_port_number(const struct ernic_tcp_port *port)
{
	return port->portnum;
}

static void *tcp_accept_thread(void *arg)
{
	struct ernic_tcp_port *port = arg;

	while (!atomic_load(&port->stopping)) {
		struct pollfd pfd = { .fd = port->listen_fd, .events = POLLIN };
		int one = 1, fd;

		/* Also the keep-alive clock for controllers whose queues are all idle. */
		ernic_target_check_keep_alive(port->tgt);
		ernic_log_flush(&port->log, false);
		pthread_mutex_lock(&port->lock);
		tcp_port_reap_locked(port);
		pthread_mutex_unlock(&port->lock);
		if (poll(&pfd, 1, ERNIC_TCP_POLL_MS) <= 0)
			continue;
		fd = accept4(port->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			/* Out of descriptors: back off rather than spin on the pending connection. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
				poll(NULL, 0, ERNIC_TCP_POLL_MS);
			continue;
		}
		/* PDUs are small and latency bound: no Nagle delay. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		ernic_tcp_serve_fd(port, fd);
	}
	return NULL;
}

int ernic_tcp_port_start(struct ernic_tcp_port *port)
{
	int rc;

	if (port->listen_fd < 0 || port->accepting)
		return -EINVAL;
	rc = -pthread_create(&port->accept_thread, NULL, tcp_accept_thread, port);
	if (!rc)
		port->accepting = true;
	return rc;
}

unsigned int ernic_tcp_port_nr_conns(struct ernic_tcp_port *port)
{
	unsigned int n;

	pthread_mutex_lock(&port->lock);
	n = port->places.nr;
	pthread_mutex_unlock(&port->lock);
	return n;
}

void ernic_tcp_port_stop(struct ernic_tcp_port *port, unsigned int grace_ms)
{
	if (!atomic_load(&port->stopping)) {
		atomic_store(&port->stop_deadline_ns, ernic_now_ns() + grace_ms * 1000000ull);
		atomic_store(&port->stopping, true);
	}
	if (port->accepting) {
		pthread_join(port->accept_thread, NULL);
		port->accepting = false;
	}
	if (port->listen_fd >= 0) {
		close(port->listen_fd);
		port->listen_fd = -1;
	}
	/* Connection threads notice within ERNIC_TCP_POLL_MS and close themselves. */
	pthread_mutex_lock(&port->lock);
	while (port->places.nr)
		pthread_cond_wait(&port->cond, &port->lock);
	tcp_port_reap_locked(port);
	pthread_mutex_unlock(&port->lock);
	ernic_log_flush(&port->log, true);
	ernic_trace_stop(&port->trace);
}

void ernic_tcp_port_destroy(struct ernic_tcp_port *port)
{
	if (!port)
		return;
	ernic_tcp_port_stop(port, 1000);
	pthread_cond_destroy(&port->cond);
	pthread_mutex_destroy(&port->lock);
	ernic_trace_fini(&port->trace);
	ernic_log_fini(&port->log);
	ernic_target_put(port->tgt);
	free(port);
}
