/* SPDX-License-Identifier: MIT */
/*
 * ernic.h - the public API of libernic, an NVMe over Fabrics controller
 * emulator with an emulated RDMA engine.
 *
 * Four parts:
 *  - the backend configuration (the ERNIC_BACKEND string);
 *  - the target: a subsystem with its namespaces and controllers, which
 *    knows no transport;
 *  - the in-process port: the target's RDMA-shaped transport, with its
 *    memory-region table and the poller threads that serve its queue pairs
 *    (the NVMe/TCP port is in ernic/tcp.h);
 *  - the host: an initiator that connects to an in-process port exactly as a
 *    stock nvme-rdma host does and submits I/O through keyed SGLs.
 */
#ifndef ERNIC_ERNIC_H
#define ERNIC_ERNIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ernic/nvme_spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ limits */

#ifndef ERNIC_MAX_MR
/* Entries in the memory-region table; also the count the host is told. */
#define ERNIC_MAX_MR 2048
#endif
/* NVME_AQ_DEPTH: the admin queue depth, and its MR pool, of a Linux host. */
#define ERNIC_ADMIN_QUEUE_SIZE 32
#define ERNIC_DEFAULT_QUEUE_SIZE 128
/*
 * Largest queue_size. MAXCMD is 16 bits and a queue's size a uint16, so
 * 65536 would wrap both to 0; and each NVMe/TCP connection keeps one request
 * slot per entry. 1024 is the most a Linux host asks for (NVMF_MAX_QUEUE_SIZE)
 * and what Linux nvmet offers (NVMET_MAX_QUEUE_SIZE).
 */
#define ERNIC_MAX_QUEUE_SIZE 1024
#define ERNIC_DEFAULT_QUEUES 4
#define ERNIC_MAX_IO_QUEUES 64 /* NVMe allows 65535; no RNIC table here could feed that */
#define ERNIC_MDTS 5		/* mdts= default: 2^5 pages of 4 KiB = 128 KiB, as the seed's emulated RNIC reports */
#define ERNIC_PAGE_SIZE 4096u
/* The default MDTS in bytes; a target's own limit is ernic_mdts_bytes(cfg->mdts). */
#define ERNIC_MAX_XFER (ERNIC_PAGE_SIZE << ERNIC_MDTS)
/*
 * Largest namespace, 1 EiB: rounding a size up to a page, and the address
 * space a RAM namespace reserves to grow into (four times its size), never
 * wrap, so every block a namespace reports is backed.
 */
#define ERNIC_NS_SIZE_MAX (1ull << 60)
/* Largest mdts=: 4 KiB << 19 = 2 GiB, the largest power of two the 32-bit SGL length holds. */
#define ERNIC_MDTS_MAX 19
/*
 * Largest mdts= an in-process (RDMA) port serves: 2^8 pages = 1 MiB, the most
 * one memory region of a Linux nvme-rdma host maps (NVME_RDMA_MAX_SEGMENTS,
 * 256 pages). RDMA has no "no limit": mdts=0 is refused there too.
 */
#define ERNIC_INPROC_MDTS_MAX 8
#define ERNIC_IOCCSZ 4 /* 64-byte capsules: no in-capsule data over RDMA */
#define ERNIC_IORCSZ 1
#define ERNIC_DEFAULT_SUBNQN "nqn.2026-11.io.ernic:nvmeof"
#define ERNIC_DEFAULT_MODEL "ernic NVMe-oF controller"
#define ERNIC_ERRLEN 256

/* ------------------------------------------------- backend configuration */

/**
 * enum ernic_fault_error - the error an injected fault returns
 * @ERNIC_FAULT_NONE: no error is injected
 * @ERNIC_FAULT_EIO: a Read or Write fails with EIO (a media error)
 * @ERNIC_FAULT_ENOSPC: a Write fails with ENOSPC (the medium is full)
 */
enum ernic_fault_error {
	ERNIC_FAULT_NONE,
	ERNIC_FAULT_EIO,
	ERNIC_FAULT_ENOSPC,
};

/**
 * enum ernic_fault_when - which of the counted commands fail
 * @ERNIC_FAULT_ALWAYS: every one ("eio", "enospc")
 * @ERNIC_FAULT_ONCE: the Nth only, counting from 1 ("eio@N")
 * @ERNIC_FAULT_EVERY: every Nth ("eio%N")
 */
enum ernic_fault_when {
	ERNIC_FAULT_ALWAYS,
	ERNIC_FAULT_ONCE,
	ERNIC_FAULT_EVERY,
};

/**
 * struct ernic_fault_cfg - the fault= key: failures and stalls the namespace
 * injects between the commands and its backend
 * @error: the errno to inject, or none
 * @when: which commands fail; EIO counts Reads and Writes, ENOSPC Writes only
 * @n: N of @when
 * @delay_us: every backend call first stalls this long (0: no stall)
 */
struct ernic_fault_cfg {
	uint8_t error;
	uint8_t when;
	uint32_t n;
	uint32_t delay_us;
};

/**
 * struct ernic_backend_cfg - a parsed ERNIC_BACKEND string
 * @size: namespace size in bytes (a multiple of @bs)
 * @bs: logical block size, 512 or 4096
 * @file: backing file path, empty for a RAM namespace
 * @queues: I/O queues the controller offers (Set Features Number of Queues grants up to this)
 * @queue_size: entries per I/O queue; also MQES + 1 and MAXCMD
 * @max_mr: entries in the memory-region table
 * @pollers: target poller threads serving the in-process queues
 * @fault: faults the namespace injects (all zero: none, and no cost)
 * @mdts: Identify Controller MDTS, a power of two in 4 KiB pages (0..ERNIC_MDTS_MAX);
 *        0 is no limit, served over NVMe/TCP only (see ERNIC_INPROC_MDTS_MAX)
 * @skip_mr_budget: test-only: accept a queue count the MR table cannot feed,
 *                  so the connect-time failure can be reproduced
 */
struct ernic_backend_cfg {
	uint64_t size;
	uint32_t bs;
	char file[4096];
	uint32_t queues;
	uint32_t queue_size;
	uint32_t max_mr;
	uint32_t pollers;
	struct ernic_fault_cfg fault;
	uint32_t mdts;
	bool skip_mr_budget;
};

/* Largest data transfer of one command under @mdts: UINT32_MAX (the SGL length's limit) for 0. */
static inline uint32_t ernic_mdts_bytes(uint32_t mdts)
{
	return mdts ? ERNIC_PAGE_SIZE << mdts : UINT32_MAX;
}

/* The defaults: nvmeof:size=1G,bs=4096,queues=4,queue_size=128,max_mr=ERNIC_MAX_MR,mdts=5 */
void ernic_backend_cfg_init(struct ernic_backend_cfg *cfg);

/*
 * Bytes as the backend string's sizes are written: digits with an optional
 * binary K/M/G/T suffix, any case, then an optional B or iB ("64M", "1GiB").
 * False, @out untouched, for anything else or a value over 64 bits.
 */
bool ernic_parse_bytes(const char *s, uint64_t *out);

/**
 * ernic_backend_parse() - parse "nvmeof:key=value,..." into @cfg
 *
 * Starts from the defaults. On a bad key or value returns -EINVAL and writes
 * one line naming the key and value to @err; the queue budget error carries
 * the seed's exact text with numbers computed from max_mr and queue_size.
 */
int ernic_backend_parse(const char *str, struct ernic_backend_cfg *cfg, char *err, size_t errlen);

/*
 * ernic_backend_parse() for a namespace added to a target that exists (a
 * second --backend, namespace add): queues, queue_size, max_mr, pollers and
 * mdts are the target's, set by its first backend string, so one of them is
 * refused rather than dropped, -EINVAL with @err naming the string as @what
 * (NULL: not named), the key and the value: "namespace add: mdts=1: set per
 * target by the first --backend, not per namespace (a namespace takes size,
 * bs, file, fault)".
 */
int ernic_backend_parse_ns(const char *str, const char *what, struct ernic_backend_cfg *cfg, char *err,
			   size_t errlen);

/* Check the queue count: queues * queue_size + 32 <= max_mr, and at most ERNIC_MAX_IO_QUEUES. */
int ernic_backend_check_budget(const struct ernic_backend_cfg *cfg, char *err, size_t errlen);

/* Highest queue count the budget allows: (max_mr - 32) / queue_size. */
uint32_t ernic_backend_max_queues(const struct ernic_backend_cfg *cfg);

/* Format @cfg back into a backend string. */
int ernic_backend_format(const struct ernic_backend_cfg *cfg, char *buf, size_t len);

/* ------------------------------------------------------------------ target */

struct ernic_target;
struct ernic_mr_table;

/**
 * struct ernic_target_opts - what a target is besides its backend
 * @subnqn: subsystem NQN (default ERNIC_DEFAULT_SUBNQN)
 * @serial: serial number (default derived from the NQN)
 * @allow_hosts: NULL-terminated host NQN allow list; NULL allows any host
 * @model: model number Identify Controller reports (default ERNIC_DEFAULT_MODEL)
 */
struct ernic_target_opts {
	const char *subnqn;
	const char *serial;
	const char *const *allow_hosts;
	const char *model;
};

/*
 * Why @nqn cannot name a subsystem or a host, or NULL: 1..223 bytes (Base
 * 4.5), and no control characters, since every host and tool prints it.
 */
const char *ernic_nqn_invalid(const char *nqn);

/**
 * ernic_target_create() - a subsystem with the namespace @cfg describes
 *
 * Starts no transport: create a port on it (ernic_inproc_port_create(),
 * ernic_tcp_port_create()). Unless @cfg->skip_mr_budget, the queue count is
 * checked against the memory-region budget as ernic_backend_parse() does,
 * with the same text in @err.
 */
int ernic_target_create(const struct ernic_backend_cfg *cfg, const struct ernic_target_opts *opts,
			struct ernic_target **out, char *err, size_t errlen);
/*
 * Drop the creator's reference. Destroy every port of the target first: a
 * queue still open keeps the memory (and the namespaces) until it closes.
 */
void ernic_target_destroy(struct ernic_target *tgt);
/* A reference of one's own, for a pointer kept past the owner's lifetime; dropped with ernic_target_put(). */
void ernic_target_get(struct ernic_target *tgt);
void ernic_target_put(struct ernic_target *tgt);
const struct ernic_backend_cfg *ernic_target_cfg(const struct ernic_target *tgt);
const char *ernic_target_subnqn(const struct ernic_target *tgt);
/*
 * Add a namespace (NSID = count + 1) from another backend string's size, bs
 * and file; queue settings come from the first. At most ERNIC_MAX_NS.
 */
#define ERNIC_MAX_NS 8
int ernic_target_add_ns(struct ernic_target *tgt, const struct ernic_backend_cfg *cfg, char *err,
			size_t errlen);
uint32_t ernic_target_nr_ns(struct ernic_target *tgt);
/**
 * ernic_target_remove_ns() - take namespace @nsid away while hosts run I/O
 *
 * From the call on, a new command naming @nsid completes with Invalid
 * Namespace; the commands already inside the controller finish on the
 * backend, which is then flushed and closed (no acknowledged write is lost),
 * and every controller that enabled it gets Namespace Attribute Changed with
 * @nsid in its Changed Namespace List. Control path only: it waits, and two
 * calls on one target must not overlap. 0, or -ENOENT with @err set; or, when
 * the final flush fails, its -errno with @err naming the namespace and the
 * error: the namespace is removed all the same, but writes acknowledged
 * before may not be on the medium.
 */
int ernic_target_remove_ns(struct ernic_target *tgt, uint32_t nsid, char *err, size_t errlen);
/*
 * Resize namespace @nsid to @size bytes (a multiple of its block size),
 * then announce it as ernic_target_remove_ns() does. Shrinking waits for
 * the commands inside, which may reach the tail being cut. 0 or -errno with @err.
 */
int ernic_target_resize_ns(struct ernic_target *tgt, uint32_t nsid, uint64_t size, char *err, size_t errlen);

/**
 * struct ernic_ns_ids - identifiers and the ANA group of a namespace
 * @nguid, @uuid, @eui64: used when the matching has_ flag is set; otherwise
 *	each is derived from the subsystem NQN and NSID (stable across restarts)
 * @anagrpid: ANA group 1..ERNIC_MAX_ANA_GROUPS (0: keep, which is 1 at first)
 */
struct ernic_ns_ids {
	uint8_t nguid[16];
	uint8_t uuid[16];
	uint8_t eui64[8];
	bool has_nguid, has_uuid, has_eui64;
	uint32_t anagrpid;
};

/*
 * The port the discovery log page reports (trtype NVMF_TRTYPE_*); the
 * address family is IPv6 for an address that parses as one, else IPv4. The
 * log's generation counter moves when any of these changes.
 */
void ernic_target_set_port(struct ernic_target *tgt, uint8_t trtype, const char *traddr,
			   const char *trsvcid);
/* Flush every namespace (file backend: fdatasync). */
int ernic_target_flush(struct ernic_target *tgt);
/* Raise Namespace Attribute Changed on every controller that enabled it. */
void ernic_target_ns_changed(struct ernic_target *tgt, uint32_t nsid);

/**
 * struct ernic_counters - what a target has done, summed over its queues
 * @admin_cmds: admin commands by opcode (Fabrics commands under 0x7F)
 * @io_cmds: I/O commands by opcode
 * @bytes_read: bytes moved controller to host (RDMA WRITE), admin data included
 * @bytes_written: bytes moved host to controller (RDMA READ), admin data included
 * @io_bytes_read: the part of @bytes_read moved by Read commands (SMART's data units)
 * @io_bytes_written: the part of @bytes_written moved by Write commands
 * @errors: failed commands by status (SCT << 8 | SC)
 * @mr_in_use: memory regions allocated now in the tables of the target's
 *	in-process ports (0 with none, as for a TCP-only target)
 * @mr_high_water: most regions ever allocated at once, per table, summed
 * @mr_max: table sizes, summed
 * @controllers: live controllers
 * @io_queues: connected I/O queues over all controllers
 */
struct ernic_counters {
	uint64_t admin_cmds[256];
	uint64_t io_cmds[256];
	uint64_t bytes_read;
	uint64_t bytes_written;
	uint64_t io_bytes_read;
	uint64_t io_bytes_written;
	uint64_t errors[NVME_STATUS_COUNT];
	uint32_t mr_in_use;
	uint32_t mr_high_water;
	uint32_t mr_max;
	uint32_t controllers;
	uint32_t io_queues;
};

void ernic_target_counters(struct ernic_target *tgt, struct ernic_counters *c);
/*
 * One controller's counters (its queues, including ones already disconnected);
 * the MR fields are the ports' shared tables'. -ENOENT for an unknown CNTLID.
 */
int ernic_target_ctrlr_counters(struct ernic_target *tgt, uint16_t cntlid, struct ernic_counters *c);
/* The counters as one JSON object. Returns bytes written (excl. NUL) or -ENOSPC. */
int ernic_counters_json(const struct ernic_counters *c, char *buf, size_t len);
/**
 * ernic_counters_json_alloc() - the counters as one JSON object, in a buffer sized to fit
 * @c: counters from ernic_target_counters() or ernic_target_ctrlr_counters()
 *
 * The same text as ernic_counters_json(), whatever its length.
 *
 * Return: a NUL-terminated string to release with free(), or NULL when out of memory.
 */
char *ernic_counters_json_alloc(const struct ernic_counters *c);
const char *ernic_status_str(uint16_t status);

/*
 * A peer-controlled string (a host NQN) made fit for one log line: bytes
 * outside printable ASCII, and the backslash itself, become \xNN, so a
 * newline or a terminal escape in a Connect cannot forge or hide lines.
 * @out holds at least 4 * strlen(@s) + 1 bytes or the text is cut there;
 * returns @out, or "" quoted for an empty @s.
 */
const char *ernic_log_str(const char *s, char *out, size_t len);
const char *ernic_opcode_str(bool admin, uint8_t opc);

/* ---------------------------------------------------------- in-process port */

struct ernic_inproc_port;

/**
 * struct ernic_inproc_port_opts - how an in-process port runs
 * @pollers: poller threads serving its queue pairs (0: the backend's
 *	pollers key, else 1)
 * @portid: on a set's home target (ernic/nvmf.h), the Port ID
 *	ernic_nvmf_port_add() gave this port; 0 otherwise
 */
struct ernic_inproc_port_opts {
	uint32_t pollers;
	uint16_t portid;
};

/**
 * ernic_inproc_port_create() - the in-process RDMA-shaped transport of @tgt
 * @opts: NULL for the defaults
 *
 * The port owns what an RNIC and its driver would: a memory-region table of
 * the backend's max_mr entries, through which every keyed SGL is resolved,
 * and its poller threads, which also run the target's keep-alive timers.
 * Hosts connect with ernic_host_connect(). Returns 0, or -errno with @err set.
 */
int ernic_inproc_port_create(struct ernic_target *tgt, const struct ernic_inproc_port_opts *opts,
			     struct ernic_inproc_port **out, char *err, size_t errlen);
/* Stop the pollers and free the table. Disconnect every host first. */
void ernic_inproc_port_destroy(struct ernic_inproc_port *port);
/* The port's memory-region table (internal API in target.h). */
struct ernic_mr_table *ernic_inproc_port_mr_table(struct ernic_inproc_port *port);

/* -------------------------------------------------------------------- host */

struct ernic_host_ctrlr;
struct ernic_host_qpair;

/**
 * struct ernic_host_opts - a connect, as nvme connect's options
 * @hostnqn: host NQN (default: nqn.2014-08.org.nvmexpress:uuid:<random>)
 * @subnqn: the subsystem to connect (default: the target's)
 * @nr_io_queues: I/O queues to ask for; the controller may grant fewer
 * @queue_size: entries per I/O queue (0: the controller's MQES + 1)
 * @kato_ms: keep-alive timeout sent in Connect (0: none)
 */
struct ernic_host_opts {
	const char *hostnqn;
	const char *subnqn;
	uint32_t nr_io_queues;
	uint32_t queue_size;
	uint32_t kato_ms;
};

/**
 * ernic_host_connect() - bring a controller up through @port as a stock
 * nvme-rdma host does
 *
 * Admin queue (32 MRs, Connect QID 0), Property Get CAP, Property Set CC.EN,
 * wait CSTS.RDY, Identify Controller, Set Features Number of Queues, then for
 * each granted I/O queue: an MR pool of queue_size regions and Connect. On
 * failure everything taken is released and @err says what failed, e.g.
 * "failed to initialize MR pool sized 128 for QID 8".
 */
int ernic_host_connect(struct ernic_inproc_port *port, const struct ernic_host_opts *opts,
		       struct ernic_host_ctrlr **out, char *err, size_t errlen);
/* Shutdown (CC.SHN), Disconnect every queue, free every MR. */
void ernic_host_disconnect(struct ernic_host_ctrlr *hc);

uint32_t ernic_host_nr_io_queues(const struct ernic_host_ctrlr *hc);
/* The counters of the controller this host is connected to. */
int ernic_host_counters(struct ernic_host_ctrlr *hc, struct ernic_counters *c);
uint16_t ernic_host_cntlid(const struct ernic_host_ctrlr *hc);
const struct nvme_id_ctrl *ernic_host_id_ctrl(const struct ernic_host_ctrlr *hc);
/*
 * The admin queue, for asynchronous admin commands (an AER) submitted with
 * ernic_host_submit(); do not mix with ernic_host_admin() from another thread.
 */
struct ernic_host_qpair *ernic_host_admin_qpair(struct ernic_host_ctrlr *hc);
/* qid 1..nr_io_queues */
struct ernic_host_qpair *ernic_host_io_qpair(struct ernic_host_ctrlr *hc, uint16_t qid);
uint16_t ernic_host_qpair_qid(const struct ernic_host_qpair *qp);
/**
 * ernic_host_qpair_connected() - whether the target still serves @qp
 *
 * False once the target tore the queue pair down, as an nvme-rdma host sees
 * its QP enter the error state: the controller became fatal (keep-alive
 * expired, admin queue lost). Every command outstanding then completes with
 * Command Aborted due to SQ Deletion (reap them with ernic_host_poll()),
 * ernic_host_submit() returns -ENOTCONN, and the controller is gone; what
 * is left is ernic_host_disconnect() and a new ernic_host_connect().
 */
bool ernic_host_qpair_connected(const struct ernic_host_qpair *qp);
uint32_t ernic_host_qpair_depth(const struct ernic_host_qpair *qp);

/**
 * ernic_host_admin() - one synchronous admin command
 * @sqe: the command; cid and dptr are filled in here
 * @buf, @len: data buffer, registered as an MR for the command's duration
 * @cqe: the completion
 * Returns 0 when a completion arrived (check cqe->status), -errno otherwise.
 */
int ernic_host_admin(struct ernic_host_ctrlr *hc, struct nvme_sqe *sqe, void *buf, uint32_t len,
		     struct nvme_cqe *cqe);

/**
 * struct ernic_host_cpl - one reaped I/O completion
 * @ctx: the caller's pointer passed at submit
 * @status: SCT << 8 | SC (0 = success)
 * @dnr: the completion's Do Not Retry bit
 * @dw0: completion DW0
 */
struct ernic_host_cpl {
	void *ctx;
	uint16_t status;
	bool dnr;
	uint32_t dw0;
};

/**
 * ernic_host_submit() - fast-register an MR over @buf and post one capsule
 * @sqe: opcode, nsid and CDW10..15 set by the caller; cid and dptr are ours
 * Returns 0, -EBUSY when the queue is full (queue_size outstanding), or
 * -ENOTCONN once the target tore the queue pair down (see
 * ernic_host_qpair_connected()).
 * Lock-free and allocation-free; one qpair must be used by one thread.
 */
int ernic_host_submit(struct ernic_host_qpair *qp, const struct nvme_sqe *sqe, void *buf, uint32_t len,
		      void *ctx);
/* Reap up to @max completions; returns how many (0 when none are ready). */
int ernic_host_poll(struct ernic_host_qpair *qp, struct ernic_host_cpl *cpls, int max);
uint32_t ernic_host_outstanding(const struct ernic_host_qpair *qp);

/* Build the SQE of a Read or Write of @nlb blocks at @slba (CDW12 NLB is 0's based). */
void ernic_host_rw_sqe(struct nvme_sqe *sqe, uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb);

/* ------------------------------------------------ per-stage latency */

/**
 * enum ernic_stage - where a command's time goes on the in-process path, in
 * NVMe-oF terms. The first five add up to @ERNIC_STAGE_END_TO_END exactly.
 * @ERNIC_STAGE_HOST_DRIVER: ernic_host_submit() to the doorbell: the fast
 *	registration of the MR and the capsule build
 * @ERNIC_STAGE_TO_TARGET: the capsule in the SQ ring until a poller takes
 *	it; this fabric's network toward the target, queueing included
 * @ERNIC_STAGE_TARGET_DRIVER: the controller's work: dispatch, keyed SGL
 *	resolution, completion build and remote invalidation, storage excluded
 * @ERNIC_STAGE_STORAGE: the namespace backend's read, write, flush, write
 *	zeroes and deallocate calls (for a Read or Write on the RAM backend,
 *	the copy that is the RDMA WRITE or READ)
 * @ERNIC_STAGE_TO_HOST: the completion in the CQ ring until the host
 *	reaps it with ernic_host_poll()
 * @ERNIC_STAGE_END_TO_END: ernic_host_submit() to the reap
 */
enum ernic_stage {
	ERNIC_STAGE_HOST_DRIVER,
	ERNIC_STAGE_TO_TARGET,
	ERNIC_STAGE_TARGET_DRIVER,
	ERNIC_STAGE_STORAGE,
	ERNIC_STAGE_TO_HOST,
	ERNIC_STAGE_END_TO_END,
	ERNIC_STAGE_COUNT,
};

/* ntprof's rate (NSDI '25): one command in 1000 carries stamps. */
#define ERNIC_STAGE_SAMPLE_DEFAULT 1000

/**
 * struct ernic_stage_stats - stage times of the sampled commands, summed
 * over a host's I/O queues
 * @samples: commands sampled and reaped
 * @sum_ns: per stage, the sum over those commands (mean = sum_ns / samples)
 * @max_ns: per stage, the largest single value
 */
struct ernic_stage_stats {
	uint64_t samples;
	uint64_t sum_ns[ERNIC_STAGE_COUNT];
	uint64_t max_ns[ERNIC_STAGE_COUNT];
};

/**
 * ernic_host_set_stage_sampling() - stamp 1 in @every commands on each I/O queue
 * @every: the sampling interval: 1 stamps every command, 0 turns sampling off
 *	(the state after connect)
 *
 * The @every-th command submitted from now on is the first sampled, then
 * every @every-th. A sampled command reads the monotonic clock seven times;
 * one that is not sampled costs a decrement and a branch at submit, a
 * branch at the poller and at the reap, and none on the wire: the stamps
 * travel per CID beside the rings, never in the SQE or CQE. Counts already
 * gathered are kept. Call it while no thread submits on the host's I/O
 * queues (before I/O starts), or per queue from the queue's own thread
 * with ernic_host_qpair_set_stage_sampling().
 */
void ernic_host_set_stage_sampling(struct ernic_host_ctrlr *hc, uint32_t every);
void ernic_host_qpair_set_stage_sampling(struct ernic_host_qpair *qp, uint32_t every);

/**
 * ernic_host_stage_stats() - the stage times gathered so far on every I/O queue
 *
 * Safe at any time from any thread; taken while I/O runs, a sample being
 * reaped may be counted in some sums and not yet in others.
 */
void ernic_host_stage_stats(struct ernic_host_ctrlr *hc, struct ernic_stage_stats *s);

/* A stage's name as a C identifier ("host_driver", ..., "end_to_end"); NULL when out of range. */
const char *ernic_stage_name(enum ernic_stage stage);

#ifdef __cplusplus
}
#endif
#endif /* ERNIC_ERNIC_H */
