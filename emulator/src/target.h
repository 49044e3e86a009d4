/* SPDX-License-Identifier: MIT */
/*
 * target.h - libernic's internal interfaces: namespaces, the memory-region
 * table, controllers, queues, requests and the transport contract.
 *
 * The split follows Linux nvmet: the controller core and the command files
 * know nothing of transports; a transport owns its queues, turns bytes or
 * ring entries into struct ernic_req, calls ernic_req_exec() and posts the
 * completion. Adding a transport touches no command code.
 */
#ifndef ERNIC_TARGET_H
#define ERNIC_TARGET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ernic/ernic.h"
#include "ernic/nvmf.h"

#define ERNIC_LIKELY(x) __builtin_expect(!!(x), 1)
#define ERNIC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ERNIC_CACHELINE 64
#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif
#define ERNIC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------- namespaces */

struct ernic_ns;

/* Flags of a backend write */
enum ernic_ns_write_flags {
	/* On stable storage before the call returns (FUA, or the write cache is off) */
	ERNIC_NS_FUA = 1u << 0,
};

/*
 * A backend moves bytes between its medium and a buffer the transport mapped
 * (for the RDMA transport that buffer is the host's registered region, so the
 * backend's copy is the RDMA WRITE or READ). Offsets and lengths are in bytes
 * and already checked against the namespace. Return 0 or -errno. @flags of
 * write are ERNIC_NS_*; a backend with no stable storage (RAM) ignores them.
 */
struct ernic_ns_ops {
	const char *name;
	int (*read)(struct ernic_ns *ns, void *buf, uint64_t off, uint32_t len);
	/*
	 * Optional: the medium's own bytes at @off, for a transport to send
	 * from in place instead of copying them out with @read first (RAM
	 * backend). They stay mapped until ernic_target_quiesce() has seen the
	 * queue let go of them (ernic_sq_ns_mem_hold()); a write landing
	 * meanwhile may show through, as it may while @read copies.
	 */
	const void *(*map_read)(struct ernic_ns *ns, uint64_t off, uint32_t len);
	/*
	 * Optional: the same bytes, for a transport to receive a Write's data
	 * into before exec (ernic_req_h2c_in_place()); @write then finds its
	 * buffer is the medium itself and is not called. Held as @map_read's.
	 */
	void *(*map_write)(struct ernic_ns *ns, uint64_t off, uint32_t len);
	int (*write)(struct ernic_ns *ns, const void *buf, uint64_t off, uint32_t len, uint32_t flags);
	int (*flush)(struct ernic_ns *ns);
	int (*write_zeroes)(struct ernic_ns *ns, uint64_t off, uint64_t len);
	int (*deallocate)(struct ernic_ns *ns, uint64_t off, uint64_t len);
	/* Frees the medium; 0, or the -errno of a last sync that failed (the namespace is closed all the same). */
	int (*close)(struct ernic_ns *ns);
};

/*
 * Life of a namespace slot: FREE -> ACTIVE (add) -> REMOVING (no new command
 * may use it; the control path waits until the commands already inside have
 * left, see ernic_target_quiesce()) -> FREE once its backend is closed.
 */
enum ernic_ns_state {
	ERNIC_NS_FREE,
	ERNIC_NS_ACTIVE,
	ERNIC_NS_REMOVING,
};

struct ernic_ns {
	uint32_t nsid;
	uint32_t lba_shift;
	/* Atomic for resize at run time: a plain load on the I/O path, stored by the control path. */
	_Atomic uint64_t nlb;
	_Atomic uint8_t state; /* enum ernic_ns_state */
	/* Which namespace the slot holds: each add takes a new one (ernic_target.ns_gens), so a reused NSID differs */
	uint64_t gen;
	uint32_t anagrpid;     /* the ANA group it belongs to, 1..ERNIC_MAX_ANA_GROUPS */
	const struct ernic_ns_ops *ops;
	uint8_t nguid[16];
	uint8_t uuid[16];
	uint8_t eui64[8];
	uint8_t *ram;  /* RAM backend */
	uint64_t ram_reserved; /* bytes of address space the RAM backend holds, for resize */
	int fd;	       /* file backend */
	char path[4096];
	/* Syncs to stable storage the backend issued: FUA and cache-off writes, Flushes */
	_Atomic uint64_t syncs;
	/* fault= (ns_fault.c): @ops wraps @backend_ops; unset, @ops is the backend's own */
	const struct ernic_ns_ops *backend_ops;
	struct ernic_fault_cfg fault;
	_Atomic uint64_t fault_count; /* commands the fault's @N counts, over every queue */
};

int ernic_ns_ram_open(struct ernic_ns *ns, uint64_t size, uint32_t bs, char *err, size_t errlen);
/*
 * Make the backend @size bytes from @from: grow before the namespace's NLB
 * grows, shrink after every command that could reach the tail has left.
 * 0 or -errno with @err.
 */
int ernic_ns_ram_resize(struct ernic_ns *ns, uint64_t from, uint64_t size, char *err, size_t errlen);
int ernic_ns_file_resize(struct ernic_ns *ns, uint64_t from, uint64_t size, char *err, size_t errlen);
int ernic_ns_file_open(struct ernic_ns *ns, const char *path, uint64_t size, uint32_t bs, char *err,
		       size_t errlen);
/*
 * A namespace on a block device must fit in it: 0, or -EINVAL with one line
 * naming @path and both sizes. (A regular file grows to @size instead.)
 */
int ernic_ns_check_device_size(const char *path, uint64_t dev_size, uint64_t size, char *err, size_t errlen);
/*
 * Put @fault between the namespace's commands and its backend; nothing when
 * @fault injects nothing, so an unfaulted namespace pays no indirection.
 */
void ernic_ns_fault_install(struct ernic_ns *ns, const struct ernic_fault_cfg *fault);
static inline uint64_t ernic_ns_size(const struct ernic_ns *ns)
{
	return ns->nlb << ns->lba_shift;
}

/* ------------------------------------------------------- memory regions */

/* Access rights of a region, as IB_ACCESS_* (only the ones a target checks). */
enum ernic_mr_access {
	ERNIC_MR_LOCAL_WRITE = 1u << 0,
	ERNIC_MR_REMOTE_WRITE = 1u << 1, /* the controller may RDMA WRITE into it (host reads) */
	ERNIC_MR_REMOTE_READ = 1u << 2,	 /* the controller may RDMA READ out of it (host writes) */
};

/* An rkey is the region's table index in bits 31:8 and a rotating key in 7:0. */
#define ERNIC_RKEY(index, key) ((uint32_t)(index) << 8 | (uint8_t)(key))
#define ERNIC_RKEY_INDEX(rkey) ((rkey) >> 8)
#define ERNIC_RKEY_KEY(rkey) ((uint8_t)(rkey))
#define ERNIC_MR_TABLE_LIMIT (1u << 24)

struct ernic_mr_table *ernic_mr_table_create(uint32_t max_mr);
void ernic_mr_table_destroy(struct ernic_mr_table *tbl);
/*
 * A new protection domain (ibv_alloc_pd): an id no other domain of @tbl has
 * had in the last 2^32 - 1 allocations. A region is reachable only through a
 * queue pair of its own domain; the in-process transport gives each host
 * queue pair one, shared by the target side of the queue and its host's pool.
 */
uint32_t ernic_mr_pd_alloc(struct ernic_mr_table *tbl);
/* Create a region in domain @pd: an invalid entry whose handle is its index. -ENOSPC when full. */
int ernic_mr_alloc(struct ernic_mr_table *tbl, uint32_t pd, uint32_t *handle);
/* Destroy a region; -ENOENT for a handle that is not allocated. */
int ernic_mr_destroy(struct ernic_mr_table *tbl, uint32_t handle);
/* FRWR: make the region valid over [addr, addr+len) with a new key; -EBUSY if still valid. */
int ernic_mr_fast_reg(struct ernic_mr_table *tbl, uint32_t handle, void *addr, uint64_t len,
		      uint32_t access, uint32_t *rkey);
/*
 * Local invalidate or send-with-invalidate by a queue pair of domain @pd:
 * -ENOENT for an unknown region, -EINVAL for a stale key or another domain's.
 */
int ernic_mr_invalidate(struct ernic_mr_table *tbl, uint32_t pd, uint32_t rkey);
/*
 * Resolve (rkey, addr, len) for an access by a queue pair of domain @pd: 0 and
 * *ptr on success, -EACCES for a wrong or stale key or another domain's region
 * (one remote access error, as an RNIC gives), -ERANGE outside the region,
 * -EPERM without the right.
 */
int ernic_mr_resolve(struct ernic_mr_table *tbl, uint32_t pd, uint32_t rkey, uint64_t addr, uint32_t len,
		     uint32_t access, void **ptr);
void ernic_mr_usage(struct ernic_mr_table *tbl, uint32_t *in_use, uint32_t *high_water, uint32_t *max);

/* ------------------------------------------------------- controller core */

struct ernic_req;
struct ernic_sq;

/**
 * struct ernic_transport_ops - what the core needs from a transport
 * @map_data: validate the command's data descriptor and return a buffer of
 *	exactly @len bytes for direction @dir; returns an NVMe status. Called
 *	only by ernic_req_map_data_exact() and _atleast(), after their length
 *	rule. For RDMA
 *	this resolves the keyed SGL through the MR table; for TCP it is the data
 *	already received (host to controller) or a buffer to send (controller to host).
 * @complete: post req->cqe. For I/O this runs on the queue's own thread; a held
 *	request (AER) may complete from another thread.
 */
struct ernic_transport_ops {
	const char *name;
	uint8_t trtype;
	uint16_t (*map_data)(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf);
	/*
	 * Optional, used only on a queue with c2h_in_place set, and only by
	 * ernic_req_map_c2h_in_place() after its length rule: controller to
	 * host data that is already in memory (a RAM namespace). Checks the
	 * descriptor as map_data() does and, on success, sends @len bytes from
	 * @src itself, holding the namespace memory (ernic_sq_ns_mem_hold())
	 * until they left.
	 */
	uint16_t (*map_c2h_in_place)(struct ernic_req *req, uint32_t len, const void *src);
	/*
	 * Optional, used only by ernic_req_map_c2h_zero_tail() after its
	 * length rule: controller to host data of @len bytes of which the core
	 * fills the first @data_len in *@buf; the transport sends the rest as
	 * zeros from no buffer of the command's. Without it the core zeroes a
	 * map_data() buffer of @len.
	 */
	uint16_t (*map_c2h_zero_tail)(struct ernic_req *req, uint32_t len, uint32_t data_len, void **buf);
	void (*complete)(struct ernic_req *req);
	/*
	 * Optional: an admin Connect naming the discovery subsystem, checked
	 * and about to create its controller, takes one of the places its port
	 * keeps for discovery queues; returns NVME_SC_CONNECT_CTRL_BUSY when
	 * they are all taken. The place is the connection's until it closes.
	 * Discovery is open to any host, and a connected queue is never
	 * evicted, so without this bound kept-alive discovery controllers
	 * could hold every place of a small port.
	 */
	uint16_t (*admit_discovery)(struct ernic_sq *sq);
	/*
	 * In-capsule data the transport accepts on I/O queues: 0 over RDMA (every
	 * command carries a keyed SGL, IOCCSZ 4), some KiB over TCP. Identify
	 * Controller reports IOCCSZ = 4 + in_capsule_data_size / 16.
	 */
	uint32_t in_capsule_data_size;
};

/*
 * Per-queue counters: written by the queue's thread only, summed on read by
 * any thread. Atomic so that a sum taken while the queue runs is no data race;
 * written only through ernic_stat_add().
 */
struct ernic_sq_stats {
	_Atomic uint64_t cmds[256];
	_Atomic uint64_t bytes_read;
	_Atomic uint64_t bytes_written;
	_Atomic uint64_t io_bytes_read;	   /* by Read only: SMART's data units */
	_Atomic uint64_t io_bytes_written; /* by Write only */
	_Atomic uint64_t errors[NVME_STATUS_COUNT];
};

/* One writer needs no read-modify-write: a relaxed load and store, no locked instruction. */
static inline void ernic_stat_add(_Atomic uint64_t *stat, uint64_t n)
{
	atomic_store_explicit(stat, atomic_load_explicit(stat, memory_order_relaxed) + n, memory_order_relaxed);
}

/**
 * struct ernic_sq - one submission/completion queue pair of a controller, as
 * the core sees it. A transport embeds it in its own queue and calls
 * ernic_sq_init() before the Connect arrives.
 */
#define ERNIC_SQ_QID_ANY UINT32_MAX
struct ernic_sq {
	struct ernic_target *tgt;
	struct ernic_ctrlr *ctrlr; /* set by Connect */
	const struct ernic_transport_ops *ops;
	void *transport;
	uint16_t qid;
	uint16_t size; /* entries (sqsize + 1) */
	_Atomic uint16_t sqhd; /* the queue's thread writes it; a held AER completing on another thread reads it */
	/*
	 * Set by a Connect whose CATTR disabled SQ flow control (the discovery
	 * entries offer it, ERNIC_DISC_TREQ): SQHD is then not reported.
	 */
	bool sqflow_disabled;
	bool connected;
	/*
	 * A Disconnect deleted this queue: it takes no Connect again. Its
	 * commands may still hold namespace memory of the subsystem it left,
	 * which a Connect to another would move it away from (ernic_sq_move()).
	 */
	bool deleted;
	/*
	 * The listener this queue arrived on (Port ID), set by the transport
	 * after ernic_sq_init(): a target in a set (nvmf.c) binds the queue to
	 * the subsystem the Connect names only if that port links it.
	 */
	uint16_t portid;
	/*
	 * The QID the transport set the queue up for before its Connect
	 * (NVMe/RDMA's CM private data, the in-process queue pair's), which
	 * sized it: the Connect must name the same (connect_check()), so a host
	 * cannot size an admin queue as an I/O queue. ERNIC_SQ_QID_ANY where the
	 * transport learns none (NVMe/TCP). Set by the transport after ernic_sq_init().
	 */
	uint32_t qid_expected;
	/*
	 * ANA state of each group as seen through that port (NULL: every group
	 * optimized); indexed by ANAGRPID, read once per I/O.
	 */
	const _Atomic uint8_t *ana;
	struct ernic_nvmf_port *nvmf_port; /* the port record behind @ana, NULL outside a set */
	/*
	 * Odd while the queue's thread is inside ernic_req_exec() or
	 * ernic_req_check(): what ernic_target_quiesce() waits on, as the
	 * in-process poller's epoch. One writer; seq_cst so the entry is
	 * ordered before the namespace state it loads next.
	 */
	_Atomic uint32_t exec_seq;
	/*
	 * Odd while the transport still has to send namespace memory it was
	 * handed in place (ops->map_c2h_in_place): ernic_target_quiesce() waits
	 * on it as on @exec_seq, so no namespace is unmapped under a send.
	 * Written under the transport's own lock, through ernic_sq_ns_mem_*().
	 */
	_Atomic uint32_t ns_mem_seq;
	/*
	 * How long a removal waits on @ns_mem_seq before it sets
	 * @ns_mem_revoke, asking the transport to give the memory up (close
	 * the connection): a send that keeps making some progress (a host
	 * reading slowly) would otherwise hold every namespace removal, and
	 * the control path with it, for as long as the host liked. 0: no bound.
	 * Set by the transport after ernic_sq_init().
	 */
	uint64_t ns_mem_wait_ns;
	atomic_bool ns_mem_revoke;
	/* Set by the transport while in-place sends are safe (e.g. no data digest computed ahead of the send) */
	bool c2h_in_place;
	struct ernic_sq *live_prev, *live_next; /* target's list, for counter sums */
	struct ernic_sq_stats stats;
};

/* Execution result of ernic_req_exec() */
enum ernic_exec {
	ERNIC_EXEC_DONE,  /* req->cqe is set: post it now */
	ERNIC_EXEC_HELD,  /* an AER: completed later through ops->complete */
	/*
	 * The controller is fatal (its admin queue is gone, or keep-alive
	 * expired) and the command was not run. req->cqe says Command Aborted
	 * due to SQ Deletion, for a transport that has no connection to lose;
	 * a fabric transport drops the command unanswered and closes the queue,
	 * as Linux nvmet deletes a fatal controller's queues. Answering would
	 * not stop a host that has not yet seen the failure: Linux resends a
	 * failed command at once on the same queue and gives up after 5 tries
	 * (nvme_core.max_retries), so a read would fail with EIO; the closed
	 * connection instead makes it reconnect and resend on the new
	 * association.
	 */
	ERNIC_EXEC_CTRLR_FATAL,
};

/**
 * struct ernic_stage_stamps - when a sampled command passed each stage, in
 * ernic_now_ns() time. Transport metadata, one per queue slot (CID), never
 * on the wire: the host writes @submit and @doorbell before it publishes the
 * capsule, the target the rest before it publishes the completion, each side
 * reading the other's after the ring index's acquire.
 * @submit: ernic_host_submit() entered
 * @doorbell: capsule built, MR registered; the doorbell is next
 * @pickup: a poller took the capsule off the SQ ring
 * @storage_ns: time spent inside the namespace backend's calls (io_cmd.c)
 * @storage_start: when the first backend call was entered (io_cmd.c; 0: none yet)
 * @storage_done: when the last backend call returned (io_cmd.c)
 * @post: the completion is about to be published on the CQ ring
 * @sampled: nonzero from submit until the host reaps the completion
 */
struct ernic_stage_stamps {
	uint64_t submit;
	uint64_t doorbell;
	uint64_t pickup;
	uint64_t storage_ns;
	uint64_t storage_start;
	uint64_t storage_done;
	uint64_t post;
	uint32_t sampled;
};

/**
 * struct ernic_req - one command in flight
 * @sqe: the command capsule
 * @cqe: its completion (filled by the core)
 * @sq: the queue it arrived on
 * @transport_ctx: the transport's per-request state
 * @ns: resolved namespace for I/O commands
 * @stamps: NULL, or where a sampled command's storage times go (the
 *	transport points it at its own per-slot stamps)
 */
struct ernic_req {
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	struct ernic_sq *sq;
	void *transport_ctx;
	struct ernic_ns *ns;
	/*
	 * The namespace ernic_req_check() passed the command against (its
	 * gen), 0 when it was not asked: the data then solicited must not
	 * reach another namespace added at the same NSID meanwhile.
	 */
	uint64_t ns_gen;
	/*
	 * Its data is landing in the namespace itself (ernic_req_h2c_in_place()):
	 * the write is on the medium before exec, so exec no longer refuses it
	 * for the ANA state. It was judged when its data was let in; a failure
	 * now would report a write that happened as one that did not.
	 */
	bool h2c_in_place;
	/*
	 * A status the transport settled before exec (its data came corrupted:
	 * Transient Transport Error): exec takes the SQ entry and completes the
	 * command with it, running nothing, and clears it.
	 */
	uint16_t transport_status;
	struct ernic_stage_stamps *stamps;
};

void ernic_sq_init(struct ernic_sq *sq, struct ernic_target *tgt, const struct ernic_transport_ops *ops,
		   void *transport);
/* The transport lost the queue (Disconnect, close): detach it from its controller. */
void ernic_sq_destroy(struct ernic_sq *sq);
/*
 * Detach the queue from its controller but keep it initialised: a transport
 * that tears a queue down while its host still holds it (the in-process
 * one, on a fatal controller) calls this, then ernic_sq_destroy() later.
 * Losing the admin queue makes the controller fatal.
 */
void ernic_sq_detach(struct ernic_sq *sq);
/* Run one command to completion (or hold it); fills req->cqe either way. */
enum ernic_exec ernic_req_exec(struct ernic_req *req);
/*
 * What ernic_req_exec() would refuse a command with before touching its data,
 * judged from the SQE and the queue alone: a transport that must solicit the
 * data (an NVMe/TCP R2T) asks first and, on a non-zero status, runs the
 * command without it. NVME_SC_SUCCESS means only that the data may be wanted;
 * the namespace it was judged against is noted (req->ns_gen), and exec
 * refuses the command if that one has gone by then.
 */
uint16_t ernic_req_check(struct ernic_req *req);

/* Data length the command's SGL describes (keyed or unkeyed formats). */
uint32_t ernic_req_sgl_len(const struct ernic_req *req);
/*
 * The two data length rules (Base 4.3.2, as nvmet's nvmet_check_transfer_len
 * and nvmet_check_data_len_lte); every command maps its data through one of
 * them, never through ops->map_data.
 *
 * ernic_req_map_data_exact() - the SGL describes exactly @len bytes: Read and
 *	Write (the blocks asked for, no more and no less) and the Connect data
 *	(1024 bytes). Any other length is Data SGL Length Invalid.
 * ernic_req_map_data_atleast() - the SGL describes at least @len bytes and the
 *	command moves @len: Identify and log pages (a host may offer a larger
 *	buffer) and DSM ranges. A shorter SGL is Data SGL Length Invalid.
 *
 * Either returns an NVMe status; on success *buf holds @len bytes from the
 * transport's map_data for direction @dir.
 *
 * ernic_req_map_c2h_in_place() - the exact rule for a Read the transport
 *	sends from @src itself (ops->map_c2h_in_place) instead of a buffer.
 *
 * ernic_req_map_c2h_zero_tail() - the at-least rule for controller to host
 *	data whose bytes from @data_len on are zero (a log page read past its
 *	end): *buf holds @data_len bytes to fill, the zeros after them are the
 *	transport's to send (ops->map_c2h_zero_tail), or zeroed here.
 */
uint16_t ernic_req_map_data_exact(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf);
uint16_t ernic_req_map_data_atleast(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf);
uint16_t ernic_req_map_c2h_in_place(struct ernic_req *req, uint32_t len, const void *src);
uint16_t ernic_req_map_c2h_zero_tail(struct ernic_req *req, uint32_t len, uint32_t data_len, void **buf);
/*
 * ernic_req_h2c_in_place() - where the @len bytes of a Write's data may land
 * straight from the transport, before exec: the namespace's own memory for
 * the command's LBA range, so exec copies nothing. NULL unless the command
 * passes every check exec would make now (ernic_req_check()), its SGL and its
 * blocks are both exactly @len bytes and the namespace maps its medium
 * (ops->map_write: RAM), and no removal or resize waits for the queues'
 * namespace memory (ernic_target.ns_mem_quiescing). The caller holds namespace memory
 * (ernic_sq_ns_mem_hold()) from before this call until the command completed
 * or was dropped. Should exec then fail after all (the controller was reset
 * or the path's ANA state changed in between), the blocks hold what landed,
 * as a failed write may leave them.
 */
void *ernic_req_h2c_in_place(struct ernic_req *req, uint32_t len);
/*
 * ernic_req_c2h_in_place() - whether a command would send its data to the
 * host from the namespace's own memory (a Read of a RAM namespace on a queue
 * with c2h_in_place), so that a transport need not reserve a buffer for it
 * before exec. A guess made before exec: exec decides.
 */
bool ernic_req_c2h_in_place(struct ernic_req *req);
/* Fill the CQE with @status; records the error in stats and the error log. */
void ernic_req_set_status(struct ernic_req *req, uint16_t status);
/*
 * Check a target's keep-alive timers: called periodically by a transport. A
 * controller whose timer expired gets CSTS.CFS: every command on its queues
 * then completes with Command Aborted due to SQ Deletion, and each queue
 * reports ernic_sq_ctrlr_fatal(), on which a connection-oriented transport
 * (TCP) closes the connection as a host would see an RDMA queue pair torn down.
 */
void ernic_target_check_keep_alive(struct ernic_target *tgt);
/* The same for @tgt alone, whatever set it is in. */
void ernic_target_check_keep_alive_timers(struct ernic_target *tgt);
bool ernic_sq_ctrlr_fatal(const struct ernic_sq *sq);

/* Connect host-allowed check, used by fabrics Connect. */
bool ernic_target_host_allowed(const struct ernic_target *tgt, const char *hostnqn);
/*
 * Wait until every command that was inside ernic_req_exec() or
 * ernic_req_check() on a queue of @tgt when this was called has left: after
 * a namespace left the ACTIVE state, nothing uses it any more. Control path
 * only; sleeps, takes the target's lock between looks.
 */
void ernic_target_quiesce(struct ernic_target *tgt);
/* The queue holds namespace memory to send (first in-place map) / holds none any more (all of it sent or dropped). */
static inline void ernic_sq_ns_mem_hold(struct ernic_sq *sq)
{
	atomic_fetch_add(&sq->ns_mem_seq, 1);
}

static inline void ernic_sq_ns_mem_release(struct ernic_sq *sq)
{
	atomic_fetch_add_explicit(&sq->ns_mem_seq, 1, memory_order_release);
}

/*
 * Command handlers, one per file as nvmet, chosen once by ernic_req_exec():
 * Fabrics commands on any queue, then by queue and controller type. Each
 * returns an NVMe status.
 */
uint16_t ernic_fabrics_exec(struct ernic_req *req);
uint16_t ernic_admin_exec(struct ernic_req *req, enum ernic_exec *held);
uint16_t ernic_discovery_exec(struct ernic_req *req, enum ernic_exec *held);
/* A discovery log entry's transport specific address subtype for NVMe/RDMA (RDMA binding, TSAS). */
void ernic_disc_entry_rdma_tsas(struct nvmf_disc_log_entry *e);
/*
 * A discovery log entry's transport requirements (TREQ): no secure channel
 * (there is no TLS here), and a Connect may disable SQ flow control, which
 * every transport honours (connect_install_sq()), as Linux nvmet's entries
 * say: a host that connects from the log (nvme connect-all) then asks for it.
 */
#define ERNIC_DISC_TREQ NVMF_TREQ_DISABLE_SQFLOW

/* The SQHD a CQE of @sq reports: 0 (reserved) once SQ flow control is disabled. */
static inline uint16_t ernic_sq_cqe_sqhd(const struct ernic_sq *sq)
{
	return sq->sqflow_disabled ? 0 : atomic_load_explicit(&sq->sqhd, memory_order_relaxed);
}
uint16_t ernic_io_exec(struct ernic_req *req);
/* ernic_req_check() for an I/O queue: namespace, opcode, LBA range, SGL length against MDTS; *@ns_gen the namespace's. */
uint16_t ernic_io_check(const struct ernic_req *req, uint64_t *ns_gen);
/* ernic_req_h2c_in_place() for an I/O queue. */
void *ernic_io_h2c_in_place(const struct ernic_req *req, uint32_t len);
/* ernic_req_c2h_in_place() for an I/O queue. */
bool ernic_io_c2h_in_place(const struct ernic_req *req);
/* ernic_req_check() for a Fabrics command: queue state, and for Connect its format and data length. */
uint16_t ernic_fabrics_check(const struct ernic_req *req);
/*
 * The host NQN a Connect's @data claims, as a transport's log lines show it
 * (ernic_log_str(): its 256 bytes need not end in a NUL and are the host's
 * to choose); "?" without data. @out holds at least NVMF_NQN_SIZE * 4 bytes.
 */
const char *ernic_connect_hostnqn_str(const struct nvmf_connect_data *data, char *out, size_t len);

/* ------------------------------ admin helpers shared with discovery_cmd.c */

/* Space-padded, not NUL-terminated: Identify and discovery log strings (Base 1.5). */
void ernic_copy_padded(char *dst, size_t len, const char *src);
/* Send a page the controller built to the host (at-least rule); counts the bytes read. */
uint16_t ernic_req_send_data(struct ernic_req *req, const void *src, uint32_t len);
/*
 * Send the window of a log page of @size bytes that Get Log Page's NUMD and
 * LPO select (Base 5.16); bytes past the end of the page read as zero.
 */
uint16_t ernic_req_send_log_page(struct ernic_req *req, const void *page, size_t size);
/*
 * Identify Controller fields every controller type reports alike. The caller
 * sets SUBNQN, CNTRLTYPE, MAXCMD, MDTS and what its type adds.
 */
void ernic_identify_ctrlr_common(const struct ernic_ctrlr *ctrlr, const struct ernic_sq *sq,
				 struct nvme_id_ctrl *id);

/**
 * struct ernic_feature - one Feature a controller type supports (Base 5.27.1)
 * @fid: Feature Identifier
 * @set: apply Set Features' CDW11; returns an NVMe status, may set CQE DW0
 * @get: the current value, or the default one when @current is false, into
 *	  *@dw0; returns an NVMe status (a selector in CDW11 may be invalid)
 */
struct ernic_feature {
	uint8_t fid;
	uint16_t (*set)(struct ernic_req *req, uint32_t cdw11);
	uint16_t (*get)(const struct ernic_req *req, bool current, uint32_t *dw0);
};

/* Set or Get Features over a controller type's table; an unlisted FID is Invalid Field. */
uint16_t ernic_set_features(struct ernic_req *req, const struct ernic_feature *feats, size_t n);
uint16_t ernic_get_features(struct ernic_req *req, const struct ernic_feature *feats, size_t n);
/* The Features a discovery controller has too (Fabrics 1.1 section 5.1). */
uint16_t ernic_feat_set_kato(struct ernic_req *req, uint32_t cdw11);
uint16_t ernic_feat_get_kato(const struct ernic_req *req, bool current, uint32_t *dw0);
uint16_t ernic_feat_set_async_event(struct ernic_req *req, uint32_t cdw11);
uint16_t ernic_feat_get_async_event(const struct ernic_req *req, bool current, uint32_t *dw0);
/* A new controller's Features at their defaults (those not zero). */
void ernic_feat_init(struct ernic_ctrlr *ctrlr);
/* Keep Alive, AER and Abort, alike on every controller type; any other opcode is Invalid Opcode. */
uint16_t ernic_admin_exec_common(struct ernic_req *req, enum ernic_exec *held);

/**
 * struct ernic_port - what the target knows of one of its ports: only what
 * its counters report. The core never creates, starts or polls a port; a
 * transport registers it when it is created and removes it before it goes.
 * @mr: the port's memory-region table (an RNIC's), NULL for a transport
 *	without one (TCP); the target's mr_* counters sum these tables
 * @next: the target's list, under its lock
 */
struct ernic_port {
	struct ernic_mr_table *mr;
	struct ernic_port *next;
};

void ernic_target_add_port(struct ernic_target *tgt, struct ernic_port *port);
void ernic_target_remove_port(struct ernic_target *tgt, struct ernic_port *port);

/* Monotonic clock in ns. */
uint64_t ernic_now_ns(void);


/* ------------------------------------------------ target and controllers */

#define ERNIC_MAX_CTRLRS 64	 /* I/O controllers */
#define ERNIC_MAX_DISC_CTRLRS 64 /* discovery controllers, a bound of their own */
/* Keep-alive of a discovery controller whose Connect asks for none (Linux NVMET_DISC_KATO_MS). */
#define ERNIC_DISC_KATO_MS 120000u
#define ERNIC_CTRLR_SLOTS (ERNIC_MAX_CTRLRS + ERNIC_MAX_DISC_CTRLRS)
#define ERNIC_AERL 4	    /* outstanding AERs a controller holds (AERL + 1) */
#define ERNIC_ERRLOG_ENTRIES 64 /* ELPE + 1 */
#define ERNIC_MAX_AEN 16
#define ERNIC_TEMP_SENSORS 1 /* beside the composite: the SMART log's Temperature Sensor 1 */

/*
 * A bit of ernic_ctrlr.csts that CSTS never shows: the controller failed for
 * good (keep-alive expired, admin queue lost, its path or subsystem taken
 * away), with CSTS.CFS. Its queues run nothing more and their transports
 * close them (ernic_sq_ctrlr_fatal()). CFS without it is a CC the controller
 * could not enable, which fails nothing: the host reads CSTS, resets and
 * enables again (property_set_cc()). In the same word, so that req_gate()
 * decides on one load and no enable clears the CFS of a failure.
 */
#define ERNIC_CSTS_FATAL (1u << 31)

/**
 * struct ernic_ctrlr - one host association (Fabrics 1.1 section 3.2):
 * created by the admin Connect, out of the target's table when its last
 * queue goes, freed when its last reference goes (as nvmet_ctrl_put()).
 * @refs: under the target's lock: one per attached queue, one per lookup
 *	not yet put, one for the admin Connect between create and attach
 * @unlisted: out of the table; takes no queue any more
 */
struct ernic_ctrlr {
	struct ernic_target *tgt;
	uint32_t refs;
	bool unlisted;
	uint16_t cntlid;
	bool discovery;
	char hostnqn[NVMF_NQN_SIZE];
	char subnqn[NVMF_NQN_SIZE];
	uint8_t hostid[16];

	/* Properties (Base 3.1) */
	uint64_t cap;
	uint32_t vs;
	uint32_t cc;
	_Atomic uint32_t csts; /* CSTS, with ERNIC_CSTS_FATAL beside its bits */

	/* Features */
	uint32_t kato_ms;
	_Atomic uint64_t ka_deadline_ns; /* 0: keep-alive off */
	uint64_t ka_traffic; /* its queues' exec_seq summed at the last keep-alive check */
	uint32_t nr_io_queues;		 /* granted by Set Features Number of Queues */
	bool nr_queues_set;
	uint32_t aec;
	uint32_t vwc;
	uint32_t err_recovery;
	uint32_t arbitration;
	/* Temperature Threshold (Feature 04h), per TMPSEL (composite, sensor 1) and THSEL (over, under) */
	uint16_t temp_thresh[ERNIC_TEMP_SENSORS + 1][2];

	pthread_mutex_t lock; /* queues, AERs, error log; never on the I/O path */
	struct ernic_sq *sqs[ERNIC_MAX_IO_QUEUES + 1];
	uint32_t nr_sqs;
	struct ernic_req *aer_reqs[ERNIC_AERL];
	uint32_t nr_aer_reqs;
	uint32_t aens[ERNIC_MAX_AEN]; /* pending events as AER DW0 */
	uint32_t nr_aens;
	/* The Changed Namespace List log (Base 2.0 5.16.1.5), kept whether or not its notice is enabled */
	uint32_t changed_ns[NVME_CHANGED_NS_MAX];
	uint32_t nr_changed_ns;
	bool changed_ns_overflow;  /* more than NVME_CHANGED_NS_MAX: the log says FFFFFFFFh */
	uint32_t aen_masked;	   /* AEC bits of notices sent whose log was not read since (ernic_ctrlr_aen_notify_locked()) */
	struct nvme_error_log_entry errlog[ERNIC_ERRLOG_ENTRIES];
	uint64_t err_count;
	uint64_t start_ns;
	/* The set's port the admin queue arrived on (nvmf.c), NULL outside a set: its ANA states */
	struct ernic_nvmf_port *port;
	/* What queues did before they left this controller: command, byte and error fields only. */
	struct ernic_counters retired;
};

struct ernic_target {
	struct ernic_backend_cfg cfg;
	uint32_t max_xfer; /* ernic_mdts_bytes(cfg.mdts): what one command may move */
	char subnqn[NVMF_NQN_SIZE];
	char serial[21];
	char model[41];
	char **allow_hosts;
	/* Slot NSID - 1; each slot's state says whether it is in use (enum ernic_ns_state) */
	struct ernic_ns ns[ERNIC_MAX_NS];
	uint32_t nr_ns; /* active namespaces */
	uint64_t ns_gens; /* under the lock: the last ernic_ns.gen given */
	/* The set this subsystem belongs to (nvmf.c), NULL for a target on its own */
	struct ernic_nvmf *nvmf;
	bool removed; /* under the lock: out of its set; no controller is created any more */
	/*
	 * Who may still reach this memory: its owner (the creator, or a set's
	 * table), each initialised queue (ernic_sq_init() to ernic_sq_destroy()),
	 * and each ernic_nvmf_subsys_get() not yet put. A removed subsystem goes
	 * with the last of them, as nvmet's subsystems do.
	 */
	_Atomic uint32_t refs;

	/* The port the discovery log page reports, under the lock */
	uint8_t trtype;
	uint8_t adrfam; /* NVMF_ADRFAM_*, from traddr */
	char traddr[256];
	char trsvcid[32];
	/* The log's GENCTR: one more each time what the log reports changes (Fabrics 5.3) */
	uint64_t disc_genctr;

	pthread_mutex_t lock; /* controllers, counters of retired queues, the port above */
	/* I/O controllers in the first ERNIC_MAX_CTRLRS slots, discovery controllers after */
	struct ernic_ctrlr *ctrlrs[ERNIC_CTRLR_SLOTS];
	uint32_t nr_ctrlrs;
	uint16_t next_cntlid;
	uint32_t nr_io_queues; /* connected, over all controllers */
	/* What queues already gone did: command, byte and error fields only. */
	struct ernic_counters retired;
	struct ernic_sq *live_sqs; /* every initialised queue, for counter sums */
	/*
	 * Removals and resizes waiting for the queues' namespace memory
	 * (ernic_target_quiesce()): while nonzero no write lands in place
	 * (ernic_req_h2c_in_place() says no), so that the holds a queue has
	 * drain. A host whose R2T'd writes overlap always has one open, and
	 * would otherwise keep its queue's hold, and the removal, forever.
	 */
	_Atomic unsigned int ns_mem_quiescing;
	uint64_t power_on_ns;
	struct ernic_port *ports; /* registered by the transports, for the mr_* counters */
};

/**
 * struct ernic_test_hooks - pause points a test drives to make a race
 * deterministic; all NULL outside the tests, where each costs one load and
 * a not-taken branch on a path that is not per-I/O.
 * @io_connect_looked_up: an I/O Connect found its controller and has not
 *	attached the queue yet
 */
struct ernic_test_hooks {
	void (*io_connect_looked_up)(struct ernic_req *req);
};
extern struct ernic_test_hooks ernic_test_hooks;

/* The active namespace @nsid of @tgt, or NULL. */
static inline struct ernic_ns *ernic_target_ns(struct ernic_target *tgt, uint32_t nsid)
{
	struct ernic_ns *ns;

	if (ERNIC_UNLIKELY(nsid - 1 >= ERNIC_MAX_NS))
		return NULL;
	ns = &tgt->ns[nsid - 1];
	return ERNIC_LIKELY(atomic_load(&ns->state) == ERNIC_NS_ACTIVE) ? ns : NULL;
}

/* Whether @ctrlr failed for good (ERNIC_CSTS_FATAL). */
static inline bool ernic_ctrlr_failed(struct ernic_ctrlr *ctrlr)
{
	return atomic_load(&ctrlr->csts) & ERNIC_CSTS_FATAL;
}

/* Controller life cycle (ctrlr.c), used by fabrics_cmd.c */
struct ernic_ctrlr *ernic_ctrlr_create(struct ernic_target *tgt, const struct nvmf_connect_data *data,
				       uint32_t kato_ms, bool discovery, struct ernic_nvmf_port *port);
/*
 * -EBUSY for a QID taken; -ERANGE for one past the Number of Queues granted
 * (checked under ctrlr->lock, which Set Features takes to change the grant);
 * -ENODEV for a controller that left the table, or an I/O queue of a fatal one.
 */
int ernic_ctrlr_attach_sq(struct ernic_ctrlr *ctrlr, struct ernic_sq *sq, uint16_t qid, uint16_t size);
/*
 * The controller with @cntlid that @hostnqn created, with a reference taken
 * under the target's lock (nvmet_ctrl_find_get()); NULL if none. The caller
 * drops it with ernic_ctrlr_put(). ernic_ctrlr_create() returns one too.
 */
struct ernic_ctrlr *ernic_ctrlr_lookup(struct ernic_target *tgt, uint16_t cntlid, const char *hostnqn);
void ernic_ctrlr_put(struct ernic_ctrlr *ctrlr);
/*
 * The KATO @ctrlr runs when its host asks for @kato_ms (Connect, Set
 * Features): 0 is 120 s on a discovery controller.
 */
uint32_t ernic_ctrlr_kato_ms(const struct ernic_ctrlr *ctrlr, uint32_t kato_ms);
void ernic_ctrlr_keep_alive(struct ernic_ctrlr *ctrlr);
/* The same with ctrlr->lock held: the deadline KATO from now, or none (0) when KATO is 0. */
void ernic_ctrlr_keep_alive_locked(struct ernic_ctrlr *ctrlr);
/*
 * Whether to send an event of the type @aec_bit (its Asynchronous Event
 * Configuration bit): only if the host asked for them, and one until the host
 * reads its log page with RAE clear (Base 2.0 5.2: the type stays masked till
 * then), as Linux nvmet's aen_masked. With ctrlr->lock held; true masks it.
 */
bool ernic_ctrlr_aen_notify_locked(struct ernic_ctrlr *ctrlr, uint32_t aec_bit);
/*
 * A Get Log Page of @aec_bit's log without RAE: the next such event is
 * notified again. Called before the page is built (or, for a log cleared on
 * read, in the same critical section as the clear), so that no change falls
 * between what the host reads and the notice being rearmed.
 */
void ernic_ctrlr_aen_rearm(const struct ernic_req *req, uint32_t aec_bit);
void ernic_ctrlr_aen_rearm_locked(struct ernic_ctrlr *ctrlr, const struct ernic_req *req, uint32_t aec_bit);
/* Queue an asynchronous event; completes a held AER if there is one. */
void ernic_ctrlr_add_aen(struct ernic_ctrlr *ctrlr, uint32_t aer_dw0);
/* Shutdown or disable: CC.EN 1 -> 0 or CC.SHN set */
void ernic_ctrlr_shutdown(struct ernic_ctrlr *ctrlr);

/* ------------------------------------------------ sets of subsystems (nvmf.c) */

#define ERNIC_MAX_ANA_GROUPS ERNIC_NVMF_MAX_ANA_GROUPS /* ANAGRPMAX and NANAGRPID */
#define ERNIC_NVMF_MAX_PORTS 16

/**
 * struct ernic_nvmf_port - a port of a set, as nvmet's struct nvmet_port:
 * an address hosts reach, the subsystems linked to it, and the ANA state
 * of each group through it. Slots never move or free while the set lives,
 * so a queue's pointer into @ana stays valid after the port goes.
 * @portid: 0 for a free slot
 * @subsys: which of the set's subsystem slots are linked here
 */
struct ernic_nvmf_port {
	uint16_t portid;
	uint8_t trtype;
	uint8_t adrfam;
	char traddr[256];
	char trsvcid[32];
	uint32_t subsys;
	_Atomic uint8_t ana[ERNIC_MAX_ANA_GROUPS + 1];
};

/*
 * Connect to @subnqn on a queue of a set's port: bind @sq to that subsystem
 * (to the set's home target for the discovery NQN) and to its port's ANA
 * states. An NVMe status; on failure the queue stays where it was.
 */
uint16_t ernic_nvmf_connect_bind(struct ernic_sq *sq, const char *subnqn, bool discovery);
/* A Connect refused after its bind: @sq, not connected, back at the set's home target. */
void ernic_nvmf_connect_unbind(struct ernic_sq *sq);
/*
 * The discovery log page of a set, as @hostnqn may see it, in a buffer to
 * free(); *@size its length.
 */
void *ernic_nvmf_disc_log(struct ernic_nvmf *nvmf, const char *hostnqn, size_t *size);
/* Run ernic_target_check_keep_alive() over every subsystem of the set. */
void ernic_nvmf_check_keep_alive(struct ernic_nvmf *nvmf);
/* The ANA log page (Base 5.16.1.13) for @ctrlr; *@size its length. Returns a buffer to free(). */
void *ernic_ana_log_build(struct ernic_ctrlr *ctrlr, bool rgo, size_t *size);
/* Open namespace slot @nsid of @tgt from @cfg (the slot must be free), @ids NULL for the defaults. */
int ernic_target_open_ns(struct ernic_target *tgt, uint32_t nsid, const struct ernic_backend_cfg *cfg,
			 const struct ernic_ns_ids *ids, char *err, size_t errlen);
/* A target with no namespace, for a set's subsystems and its home. */
int ernic_target_alloc(const struct ernic_backend_cfg *cfg, const struct ernic_target_opts *opts,
		       struct ernic_target **out, char *err, size_t errlen);
/* Move @sq, not yet connected, from its target to @to (Connect to another subsystem). */
void ernic_sq_move(struct ernic_sq *sq, struct ernic_target *to);
/* Mark every controller of @tgt fatal: their transports close their queues. With @port only those reached there. */
void ernic_target_fail_ctrlrs(struct ernic_target *tgt, const struct ernic_nvmf_port *port);
/*
 * Queue an event on every controller of @tgt that enabled @aec_bit (and, with
 * @port, came through it; with @allowed_on, whose host that subsystem allows).
 */
void ernic_target_aen(struct ernic_target *tgt, const struct ernic_nvmf_port *port,
		      const struct ernic_target *allowed_on, uint32_t aec_bit, uint32_t aer_dw0);

#endif /* ERNIC_TARGET_H */
