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
#include <stdint.h>

#include "ernic/ernic.h"

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

/*
 * A backend moves bytes between its medium and a buffer the transport mapped
 * (for the RDMA transport that buffer is the host's registered region, so the
 * backend's copy is the RDMA WRITE or READ). Offsets and lengths are in bytes
 * and already checked against the namespace. Return 0 or -errno.
 */
struct ernic_ns_ops {
	const char *name;
	int (*read)(struct ernic_ns *ns, void *buf, uint64_t off, uint32_t len);
	int (*write)(struct ernic_ns *ns, const void *buf, uint64_t off, uint32_t len);
	int (*flush)(struct ernic_ns *ns);
	int (*write_zeroes)(struct ernic_ns *ns, uint64_t off, uint64_t len);
	int (*deallocate)(struct ernic_ns *ns, uint64_t off, uint64_t len);
	void (*close)(struct ernic_ns *ns);
};

struct ernic_ns {
	uint32_t nsid;
	uint32_t lba_shift;
	uint64_t nlb;
	const struct ernic_ns_ops *ops;
	uint8_t nguid[16];
	uint8_t *ram;  /* RAM backend */
	int fd;	       /* file backend */
	char path[4096];
};

int ernic_ns_ram_open(struct ernic_ns *ns, uint64_t size, uint32_t bs, char *err, size_t errlen);
int ernic_ns_file_open(struct ernic_ns *ns, const char *path, uint64_t size, uint32_t bs, char *err,
		       size_t errlen);
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
/* Create a region: an invalid entry whose handle is its index. -ENOSPC when full. */
int ernic_mr_alloc(struct ernic_mr_table *tbl, uint32_t *handle);
/* Destroy a region; -ENOENT for a handle that is not allocated. */
int ernic_mr_destroy(struct ernic_mr_table *tbl, uint32_t handle);
/* FRWR: make the region valid over [addr, addr+len) with a new key; -EBUSY if still valid. */
int ernic_mr_fast_reg(struct ernic_mr_table *tbl, uint32_t handle, void *addr, uint64_t len,
		      uint32_t access, uint32_t *rkey);
/* Local invalidate or send-with-invalidate; -ENOENT/-EINVAL for an unknown or stale key. */
int ernic_mr_invalidate(struct ernic_mr_table *tbl, uint32_t rkey);
/*
 * Resolve (rkey, addr, len) for an access: 0 and *ptr on success, -EACCES for a
 * wrong or stale key, -ERANGE outside the region, -EPERM without the right.
 */
int ernic_mr_resolve(struct ernic_mr_table *tbl, uint32_t rkey, uint64_t addr, uint32_t len,
		     uint32_t access, void **ptr);
void ernic_mr_usage(struct ernic_mr_table *tbl, uint32_t *in_use, uint32_t *high_water, uint32_t *max);

/* ------------------------------------------------------- controller core */

struct ernic_req;
struct ernic_sq;

/**
 * struct ernic_transport_ops - what the core needs from a transport
 * @map_data: validate the command's data descriptor and return a buffer of
 *	exactly @len bytes for direction @dir; returns an NVMe status. For RDMA
 *	this resolves the keyed SGL through the MR table; for TCP it is the data
 *	already received (host to controller) or a buffer to send (controller to host).
 * @complete: post req->cqe. For I/O this runs on the queue's own thread; a held
 *	request (AER) may complete from another thread.
 */
struct ernic_transport_ops {
	const char *name;
	uint8_t trtype;
	uint16_t (*map_data)(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf);
	void (*complete)(struct ernic_req *req);
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
struct ernic_sq {
	struct ernic_target *tgt;
	struct ernic_ctrlr *ctrlr; /* set by Connect */
	const struct ernic_transport_ops *ops;
	void *transport;
	uint16_t qid;
	uint16_t size; /* entries (sqsize + 1) */
	uint16_t sqhd;
	bool connected;
	struct ernic_sq *live_prev, *live_next; /* target's list, for counter sums */
	struct ernic_sq_stats stats;
};

/* Execution result of ernic_req_exec() */
enum ernic_exec {
	ERNIC_EXEC_DONE,  /* req->cqe is set: post it now */
	ERNIC_EXEC_HELD,  /* an AER: completed later through ops->complete */
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
 * @post: the completion is about to be published on the CQ ring
 * @sampled: nonzero from submit until the host reaps the completion
 */
struct ernic_stage_stamps {
	uint64_t submit;
	uint64_t doorbell;
	uint64_t pickup;
	uint64_t storage_ns;
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
 * @stamps: NULL, or where a sampled command's storage time goes; a
 *	transport that does not sample (TCP) leaves it NULL
 */
struct ernic_req {
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	struct ernic_sq *sq;
	void *transport_ctx;
	struct ernic_ns *ns;
	struct ernic_stage_stamps *stamps;
};

void ernic_sq_init(struct ernic_sq *sq, struct ernic_target *tgt, const struct ernic_transport_ops *ops,
		   void *transport);
/* The transport lost the queue (Disconnect, close): detach it from its controller. */
void ernic_sq_destroy(struct ernic_sq *sq);
/* Run one command to completion (or hold it); fills req->cqe either way. */
enum ernic_exec ernic_req_exec(struct ernic_req *req);

/* Data length the command's SGL describes (keyed or unkeyed formats). */
uint32_t ernic_req_sgl_len(const struct ernic_req *req);
/*
 * Map @len bytes of the command's data for a command that moves at most what
 * its SGL describes: a shorter SGL is Data SGL Length Invalid, else the
 * transport's map_data decides.
 */
uint16_t ernic_req_map_data(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf);
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
bool ernic_sq_ctrlr_fatal(const struct ernic_sq *sq);

/* Connect host-allowed check, used by fabrics Connect. */
bool ernic_target_host_allowed(const struct ernic_target *tgt, const char *hostnqn);

/* Command handlers, one per file as nvmet. Each returns an NVMe status. */
uint16_t ernic_fabrics_exec(struct ernic_req *req);
uint16_t ernic_admin_exec(struct ernic_req *req, enum ernic_exec *held);
uint16_t ernic_io_exec(struct ernic_req *req);

/* The in-process transport's poller threads: started by ernic_target_create. */
int ernic_inproc_start(struct ernic_target *tgt, uint32_t pollers, char *err, size_t errlen);
void ernic_inproc_stop(struct ernic_target *tgt);

/* Monotonic clock in ns. */
uint64_t ernic_now_ns(void);


/* ------------------------------------------------ target and controllers */

#define ERNIC_MAX_CTRLRS 64
#define ERNIC_AERL 4	    /* outstanding AERs a controller holds (AERL + 1) */
#define ERNIC_ERRLOG_ENTRIES 64 /* ELPE + 1 */
#define ERNIC_MAX_AEN 16

/**
 * struct ernic_ctrlr - one host association (Fabrics 1.1 section 3.2):
 * created by the admin Connect, freed when its last queue goes.
 */
struct ernic_ctrlr {
	struct ernic_target *tgt;
	uint16_t cntlid;
	bool discovery;
	char hostnqn[NVMF_NQN_SIZE];
	char subnqn[NVMF_NQN_SIZE];
	uint8_t hostid[16];

	/* Properties (Base 3.1) */
	uint64_t cap;
	uint32_t vs;
	uint32_t cc;
	_Atomic uint32_t csts;

	/* Features */
	uint32_t kato_ms;
	_Atomic uint64_t ka_deadline_ns; /* 0: keep-alive off */
	uint32_t nr_io_queues;		 /* granted by Set Features Number of Queues */
	bool nr_queues_set;
	uint32_t aec;
	uint32_t vwc;
	uint32_t err_recovery;
	uint32_t arbitration;
	uint32_t temp_thresh;

	pthread_mutex_t lock; /* queues, AERs, error log; never on the I/O path */
	struct ernic_sq *sqs[ERNIC_MAX_IO_QUEUES + 1];
	uint32_t nr_sqs;
	struct ernic_req *aer_reqs[ERNIC_AERL];
	uint32_t nr_aer_reqs;
	uint32_t aens[ERNIC_MAX_AEN]; /* pending events as AER DW0 */
	uint32_t nr_aens;
	uint32_t changed_ns[ERNIC_MAX_NS];
	uint32_t nr_changed_ns;
	struct nvme_error_log_entry errlog[ERNIC_ERRLOG_ENTRIES];
	uint64_t err_count;
	uint64_t start_ns;
	struct ernic_counters detached; /* what queues did before they left this controller */
};

struct ernic_inproc;

struct ernic_target {
	struct ernic_backend_cfg cfg;
	char subnqn[NVMF_NQN_SIZE];
	char serial[21];
	char **allow_hosts;
	struct ernic_ns ns[ERNIC_MAX_NS];
	uint32_t nr_ns;
	struct ernic_mr_table *mr;

	/* The port the discovery log page reports */
	uint8_t trtype;
	char traddr[256];
	char trsvcid[32];

	pthread_mutex_t lock; /* controllers, counters of retired queues */
	struct ernic_ctrlr *ctrlrs[ERNIC_MAX_CTRLRS];
	uint32_t nr_ctrlrs;
	uint16_t next_cntlid;
	uint32_t nr_io_queues; /* connected, over all controllers */
	struct ernic_sq_stats retired; /* bytes and errors of queues already gone */
	uint64_t retired_admin_cmds[256];
	uint64_t retired_io_cmds[256];
	struct ernic_sq *live_sqs; /* every initialised queue, for counter sums */
	uint64_t power_on_ns;

	struct ernic_inproc *inproc;
};

/* Controller life cycle (ctrlr.c), used by fabrics_cmd.c */
struct ernic_ctrlr *ernic_ctrlr_create(struct ernic_target *tgt, const struct nvmf_connect_data *data,
				       uint32_t kato_ms, bool discovery);
int ernic_ctrlr_attach_sq(struct ernic_ctrlr *ctrlr, struct ernic_sq *sq, uint16_t qid, uint16_t size);
struct ernic_ctrlr *ernic_ctrlr_lookup(struct ernic_target *tgt, uint16_t cntlid, const char *hostnqn);
void ernic_ctrlr_keep_alive(struct ernic_ctrlr *ctrlr);
/* Queue an asynchronous event; completes a held AER if there is one. */
void ernic_ctrlr_add_aen(struct ernic_ctrlr *ctrlr, uint32_t aer_dw0);
/* Shutdown or disable: CC.EN 1 -> 0 or CC.SHN set */
void ernic_ctrlr_shutdown(struct ernic_ctrlr *ctrlr);

#endif /* ERNIC_TARGET_H */
