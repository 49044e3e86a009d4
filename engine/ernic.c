// SPDX-License-Identifier: MIT
/*
 * ernic engine
 *
 * A fio I/O engine that drives an NVMe over Fabrics controller emulated in
 * process by libernic, through libernic's host: the same connect sequence a
 * stock nvme-rdma initiator performs, one keyed SGL per capsule, one
 * fast-registered memory region per command.
 *
 * All jobs of a run share one target and one host controller (hence
 * thread=1): the first init brings both up, the last cleanup tears them
 * down. Job i drives I/O queue (i mod queues) + 1. When there are more jobs
 * than queues, the jobs sharing a qpair serialise on its mutex, because a
 * host qpair is single-threaded; with one job per queue the I/O path takes
 * no lock and allocates nothing.
 *
 * An io_u larger than MDTS (the controller's Identify MDTS: 128 KiB by
 * default, mdts= in the backend string) becomes several
 * commands, as the Linux initiator splits a bio against max_hw_sectors; the
 * io_u completes when its last command does, with the first error seen.
 *
 *   fio --thread=1 --ioengine=external:./build/ernic-fio.so --filename=ernic0 ...
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fio.h"
#include "optgroup.h"

#include "ernic/ernic.h"

#define ERNIC_DEFAULT_BACKEND "nvmeof:size=1G,bs=4096,queues=4"
#define ERNIC_NSID 1
/* Completions reaped per ernic_host_poll() call. */
#define ERNIC_POLL_BATCH 32
/*
 * Empty polls before getevents yields the CPU. A yield with nothing else
 * runnable costs a system call; one withheld from a target poller that
 * shares this CPU costs the whole round trip, so yield early (a few
 * microseconds of spinning).
 */
#define ERNIC_SPINS_BEFORE_YIELD 256
/* Empty polls between clock reads when a getevents timeout is set. */
#define ERNIC_SPINS_PER_CLOCK 256

struct ernic_options {
	void *pad; /* fio stores the thread_data pointer here */
	char *backend;
	unsigned int queues;
	char *stats;
	unsigned int host_checks;
	unsigned int stage_sample;
};

static struct fio_option options[] = {
	{
		.name	= "ernic_backend",
		.lname	= "ernic backend",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, backend),
		.help	= "Emulated NVMe-oF target, as ERNIC_BACKEND (default: $ERNIC_BACKEND, else "
			  ERNIC_DEFAULT_BACKEND ")",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_queues",
		.lname	= "ernic I/O queues",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct ernic_options, queues),
		.minval	= 0,
		.maxval	= ERNIC_MAX_IO_QUEUES,
		.def	= "0",
		.help	= "I/O queues to connect; job i uses queue (i mod queues) + 1 (0: all the backend offers)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_stats",
		.lname	= "ernic stats file",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, stats),
		.help	= "Write the target's counters and the engine's capsule/split counts as JSON to this path at exit",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_host_checks",
		.lname	= "ernic host-side checks",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct ernic_options, host_checks),
		.def	= "1",
		.help	= "Fail I/O not aligned to the namespace block size with EINVAL before sending, as the "
			  "block layer does (0: send it and let the controller reject it)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_stage_sample",
		.lname	= "ernic stage sampling",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct ernic_options, stage_sample),
		.minval	= 0,
		.def	= "0",
		.help	= "Stamp 1 in N commands at each stage (host driver, transport to target, target driver, "
			  "storage, transport to host) and put the stage means in ernic_stats (0: off; ntprof samples 1 in 1000)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= NULL,
	},
};

/*
 * One host I/O qpair and what serialises it. Cache-line aligned: qpairs
 * driven by different threads must not share a line.
 */
struct ernic_queue {
	struct ernic_host_qpair *qp;
	pthread_mutex_t lock; /* only taken when more than one job drives this qpair */
} __attribute__((aligned(64)));

/* The target and host controller every job of the run shares. */
static struct {
	pthread_mutex_t lock;
	unsigned int refs;
	char *backend;
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt;
	struct ernic_inproc_port *port;
	struct ernic_host_ctrlr *hc;
	struct ernic_queue *queues;
	uint32_t nr_queues;
	uint32_t lba_shift;
	uint64_t ns_size;
	uint32_t max_xfer; /* from the MDTS Identify Controller reports, as a host knows it */
	char *stats_path;
	uint32_t stage_sample; /* the first job's ernic_stage_sample, for every queue */
	uint64_t ios, capsules, split_ios;
} ernic_run = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

struct ernic_job;

/* Per io_u state, allocated once in io_u_init. */
struct ernic_io {
	struct io_u *io_u;
	struct ernic_job *job;
	uint8_t opc;
	uint8_t *buf;	  /* next byte to send */
	uint64_t off;	  /* its namespace offset */
	uint64_t left;	  /* bytes not yet in a capsule */
	uint32_t inflight; /* capsules posted, not completed */
	int error;	  /* first errno seen */
	struct nvme_dsm_range range; /* trim: the DSM payload, registered like data */
};

/* Per job state. */
struct ernic_job {
	struct ernic_queue *q;
	bool shared;
	uint16_t qid;
	uint32_t lba_shift;
	uint32_t max_xfer;
	uint64_t bs_mask;
	bool host_checks;
	unsigned int ring_mask; /* rings hold a power of two > iodepth entries */

	/*
	 * io_us from queue() to full submission, in order: [sq_head, sq_commit)
	 * are committed and wait for queue slots, [sq_commit, sq_tail) wait
	 * for commit(). At most iodepth io_us exist, so the ring never wraps
	 * onto itself.
	 */
	struct ernic_io **sq;
	unsigned int sq_head, sq_commit, sq_tail;

	/* Completed io_us not yet handed to fio: [done_head, done_tail). */
	struct io_u **done;
	unsigned int done_head, done_tail;
	/* What the last getevents handed to fio, for event(). */
	struct io_u **events;

	unsigned int inflight_ios;
	uint64_t ios, capsules, split_ios;
	struct ernic_host_cpl cpls[ERNIC_POLL_BATCH];
};

static inline void ernic_lock(struct ernic_job *job)
{
	if (job->shared)
		pthread_mutex_lock(&job->q->lock);
}

static inline void ernic_unlock(struct ernic_job *job)
{
	if (job->shared)
		pthread_mutex_unlock(&job->q->lock);
}

static const char *ernic_backend_str(struct thread_data *td)
{
	struct ernic_options *o = td->eo;
	const char *env;

	if (o->backend && *o->backend)
		return o->backend;
	env = getenv("ERNIC_BACKEND");
	return env && *env ? env : ERNIC_DEFAULT_BACKEND;
}

/*
 * errno for an NVMe status: a request the namespace cannot take as sent (a
 * field, the SGL length, an LBA range) is EINVAL, a namespace that is not
 * there ENXIO, anything else an I/O error.
 */
static int ernic_status_errno(uint16_t status)
{
	switch (NVME_CQE_STATUS(status)) {
	case NVME_SC_INVALID_FIELD:
	case NVME_SC_SGL_INVALID_DATA_LEN:
	case NVME_SC_LBA_RANGE:
		return EINVAL;
	case NVME_SC_INVALID_NS:
		return ENXIO;
	default:
		return EIO;
	}
}

/* Identify Namespace: the block size and size the host will address. */
static int ernic_identify_ns(char *err, size_t errlen)
{
	struct nvme_id_ns *id;
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	uint32_t lbads;
	int rc;

	if (posix_memalign((void **)&id, ERNIC_PAGE_SIZE, sizeof(*id))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memset(id, 0, sizeof(*id));
	memset(&sqe, 0, sizeof(sqe));
	sqe.opc = NVME_ADMIN_IDENTIFY;
	sqe.nsid = ERNIC_NSID;
	sqe.cdw10 = NVME_ID_CNS_NS;
	rc = ernic_host_admin(ernic_run.hc, &sqe, id, sizeof(*id), &cqe);
	if (rc == 0 && nvme_cqe_status(&cqe))
		rc = -ernic_status_errno(nvme_cqe_status(&cqe));
	if (rc) {
		snprintf(err, errlen, "Identify Namespace %d failed: %s", ERNIC_NSID, strerror(-rc));
		free(id);
		return rc;
	}
	lbads = id->lbaf[id->flbas & 0xF].lbads;
	if (lbads < 9 || lbads > 16 || !id->nsze) {
		snprintf(err, errlen, "Identify Namespace %d: unusable nsze %" PRIu64 " lbads %" PRIu32,
			 ERNIC_NSID, (uint64_t)id->nsze, lbads);
		free(id);
		return -EINVAL;
	}
	ernic_run.lba_shift = lbads;
	ernic_run.ns_size = id->nsze << lbads;
	free(id);
	return 0;
}

static void ernic_run_teardown(void)
{
	if (ernic_run.hc)
		ernic_host_disconnect(ernic_run.hc);
	ernic_inproc_port_destroy(ernic_run.port);
	if (ernic_run.tgt)
		ernic_target_destroy(ernic_run.tgt);
	if (ernic_run.queues) {
		for (uint32_t i = 0; i < ernic_run.nr_queues; i++)
			pthread_mutex_destroy(&ernic_run.queues[i].lock);
	}
	free(ernic_run.queues);
	free(ernic_run.backend);
	free(ernic_run.stats_path);
	ernic_run.hc = NULL;
	ernic_run.port = NULL;
	ernic_run.tgt = NULL;
	ernic_run.queues = NULL;
	ernic_run.backend = NULL;
	ernic_run.stats_path = NULL;
	ernic_run.nr_queues = 0;
	ernic_run.stage_sample = 0;
	ernic_run.ios = ernic_run.capsules = ernic_run.split_ios = 0;
}

/* Bring up the target and connect the host. Called with ernic_run.lock held. */
static int ernic_run_setup(struct thread_data *td)
{
	struct ernic_options *o = td->eo;
	struct ernic_host_opts hopts = { 0 };
	const char *backend = ernic_backend_str(td);
	char err[ERNIC_ERRLEN];
	int rc;

	rc = ernic_backend_parse(backend, &ernic_run.cfg, err, sizeof(err));
	if (rc) {
		log_err("%s\n", err);
		return rc;
	}
	ernic_run.backend = strdup(backend);
	if (!ernic_run.backend)
		return -ENOMEM;

	/*
	 * The poller threads inherit this thread's CPU mask; a job pinned
	 * with cpus_allowed must not pin the target onto its own CPU, where
	 * every capsule would wait for a context switch. Start them with the
	 * process's mask instead.
	 */
	{
		cpu_set_t job_mask, proc_mask;
		bool widen = !pthread_getaffinity_np(pthread_self(), sizeof(job_mask), &job_mask) &&
			     !sched_getaffinity(getpid(), sizeof(proc_mask), &proc_mask) &&
			     !CPU_EQUAL(&job_mask, &proc_mask) &&
			     !pthread_setaffinity_np(pthread_self(), sizeof(proc_mask), &proc_mask);

		rc = ernic_target_create(&ernic_run.cfg, NULL, &ernic_run.tgt, err, sizeof(err));
		if (!rc)
			rc = ernic_inproc_port_create(ernic_run.tgt, NULL, &ernic_run.port, err, sizeof(err));
		if (widen)
			pthread_setaffinity_np(pthread_self(), sizeof(job_mask), &job_mask);
	}
	if (rc) {
		log_err("ernic: target: %s\n", err);
		goto fail;
	}
	hopts.nr_io_queues = o->queues ? o->queues : ernic_run.cfg.queues;
	rc = ernic_host_connect(ernic_run.port, &hopts, &ernic_run.hc, err, sizeof(err));
	if (rc) {
		log_err("ernic: connect: %s\n", err);
		goto fail;
	}
	rc = ernic_identify_ns(err, sizeof(err));
	if (rc) {
		log_err("ernic: %s\n", err);
		goto fail;
	}

	/* MDTS is in units of CAP.MPSMIN, 4 KiB here (Base 2.0 Figure 275). */
	ernic_run.max_xfer = ernic_mdts_bytes(ernic_host_id_ctrl(ernic_run.hc)->mdts);
	ernic_run.nr_queues = ernic_host_nr_io_queues(ernic_run.hc);
	if (!ernic_run.nr_queues) {
		log_err("ernic: the controller granted no I/O queues\n");
		rc = -ENODEV;
		goto fail;
	}
	if (o->queues && ernic_run.nr_queues < o->queues)
		log_info("ernic: asked for %u I/O queues, the controller granted %" PRIu32 "\n", o->queues,
			 ernic_run.nr_queues);
	if (posix_memalign((void **)&ernic_run.queues, 64, ernic_run.nr_queues * sizeof(*ernic_run.queues))) {
		ernic_run.queues = NULL;
		rc = -ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < ernic_run.nr_queues; i++) {
		ernic_run.queues[i].qp = ernic_host_io_qpair(ernic_run.hc, (uint16_t)(i + 1));
		pthread_mutex_init(&ernic_run.queues[i].lock, NULL);
	}
	/* Before any job submits: every job's init waits for this one's under ernic_run.lock. */
	ernic_run.stage_sample = o->stage_sample;
	if (ernic_run.stage_sample)
		ernic_host_set_stage_sampling(ernic_run.hc, ernic_run.stage_sample);
	return 0;
fail:
	ernic_run_teardown();
	return rc;
}

/* Namespace size for fio's file size. Runs in the parent, before init. */
static int fio_ernic_get_file_size(struct thread_data *td, struct fio_file *f)
{
	struct ernic_backend_cfg cfg;
	char err[ERNIC_ERRLEN];

	if (fio_file_size_known(f))
		return 0;
	/*
	 * A bad backend string is reported once, by init; here it only
	 * leaves the size at fio's size= so setup gets that far.
	 */
	if (ernic_backend_parse(ernic_backend_str(td), &cfg, err, sizeof(err))) {
		f->real_file_size = td->o.size ? td->o.size : ERNIC_PAGE_SIZE;
		fio_file_set_size_known(f);
		return 0;
	}
	f->real_file_size = cfg.size;
	fio_file_set_size_known(f);
	return 0;
}

static void ernic_job_free(struct ernic_job *job)
{
	if (!job)
		return;
	free(job->sq);
	free(job->done);
	free(job->events);
	free(job);
}

static int fio_ernic_init(struct thread_data *td)
{
	struct ernic_options *o = td->eo;
	struct ernic_job *job;
	uint32_t q;
	int rc = 0;

	if (!td->o.use_thread) {
		log_err("ernic: thread=1 is required: all jobs share one emulated target and host "
			"controller in this process\n");
		return 1;
	}

	job = calloc(1, sizeof(*job));
	if (job) {
		unsigned int entries = 2;

		while (entries <= td->o.iodepth)
			entries <<= 1;
		job->ring_mask = entries - 1;
		job->sq = calloc(entries, sizeof(*job->sq));
		job->done = calloc(entries, sizeof(*job->done));
		job->events = calloc(entries, sizeof(*job->events));
	}
	if (!job || !job->sq || !job->done || !job->events) {
		log_err("ernic: out of memory\n");
		ernic_job_free(job);
		return 1;
	}

	pthread_mutex_lock(&ernic_run.lock);
	if (ernic_run.refs == 0)
		rc = ernic_run_setup(td);
	else if (strcmp(ernic_backend_str(td), ernic_run.backend) != 0) {
		log_err("ernic: job %s asks for backend '%s' but the run's target is '%s'; all jobs share one\n",
			td->o.name, ernic_backend_str(td), ernic_run.backend);
		rc = -EINVAL;
	}
	if (rc) {
		pthread_mutex_unlock(&ernic_run.lock);
		ernic_job_free(job);
		return 1;
	}
	ernic_run.refs++;
	if (o->stats && *o->stats && !ernic_run.stats_path)
		ernic_run.stats_path = strdup(o->stats);
	if (o->stage_sample != ernic_run.stage_sample)
		log_info("ernic: job %s asks for ernic_stage_sample=%u; the run's first job set %" PRIu32
			 " for every queue\n",
			 td->o.name, o->stage_sample, ernic_run.stage_sample);

	/*
	 * thread_number is the count of jobs in the run: a qpair is shared
	 * when a later job number maps onto it too. Stonewalled jobs never
	 * run together, but taking the lock for them costs only speed.
	 */
	q = (td->thread_number - 1) % ernic_run.nr_queues;
	job->q = &ernic_run.queues[q];
	job->qid = (uint16_t)(q + 1);
	job->shared = q + ernic_run.nr_queues < thread_number;
	job->lba_shift = ernic_run.lba_shift;
	job->max_xfer = ernic_run.max_xfer;
	job->bs_mask = (1ull << ernic_run.lba_shift) - 1;
	job->host_checks = o->host_checks;
	pthread_mutex_unlock(&ernic_run.lock);

	td->io_ops_data = job;
	return 0;
}

static int fio_ernic_io_u_init(struct thread_data *td, struct io_u *io_u)
{
	struct ernic_io *io;

	/* Aligned: the DSM range inside is registered as a data buffer. */
	if (posix_memalign((void **)&io, 64, sizeof(*io)))
		return 1;
	memset(io, 0, sizeof(*io));
	io->io_u = io_u;
	io->job = td->io_ops_data;
	io_u->engine_data = io;
	return 0;
}

static void fio_ernic_io_u_free(struct thread_data fio_unused *td, struct io_u *io_u)
{
	free(io_u->engine_data);
	io_u->engine_data = NULL;
}

/* The file is a label; the namespace is open while the run's target lives. */
static int fio_ernic_open_file(struct thread_data fio_unused *td, struct fio_file fio_unused *f)
{
	return 0;
}

static int fio_ernic_close_file(struct thread_data fio_unused *td, struct fio_file fio_unused *f)
{
	return 0;
}

static enum fio_q_status fio_ernic_queue(struct thread_data *td, struct io_u *io_u)
{
	struct ernic_job *job = td->io_ops_data;
	struct ernic_io *io = io_u->engine_data;

	fio_ro_check(td, io_u);

	switch (io_u->ddir) {
	case DDIR_READ:
		io->opc = NVME_CMD_READ;
		break;
	case DDIR_WRITE:
		io->opc = NVME_CMD_WRITE;
		break;
	case DDIR_TRIM:
		io->opc = NVME_CMD_DSM;
		break;
	case DDIR_SYNC:
	case DDIR_DATASYNC:
		io->opc = NVME_CMD_FLUSH;
		break;
	default:
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}

	/* The block layer refuses what the namespace cannot address, before any capsule. */
	if (io->opc != NVME_CMD_FLUSH && job->host_checks &&
	    ((io_u->offset | io_u->xfer_buflen) & job->bs_mask)) {
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}

	io->buf = io_u->xfer_buf;
	io->off = io_u->offset;
	io->left = io->opc == NVME_CMD_FLUSH ? 0 : io_u->xfer_buflen;
	io->inflight = 0;
	io->error = 0;
	job->sq[job->sq_tail] = io;
	job->sq_tail = (job->sq_tail + 1) & job->ring_mask;
	return FIO_Q_QUEUED;
}

/* io_u done: hand it to the job that owns it (another job's poll may have reaped it). */
static inline void ernic_io_done(struct ernic_io *io)
{
	struct ernic_job *owner = io->job;

	io->io_u->error = io->error;
	if (io->error)
		io->io_u->resid = io->io_u->xfer_buflen;
	owner->done[owner->done_tail] = io->io_u;
	owner->done_tail = (owner->done_tail + 1) & owner->ring_mask;
	owner->inflight_ios--;
}

/*
 * NLB for @len bytes, rounded up: with host checks off a short transfer
 * still names a whole block, and the controller sees the SGL length differ.
 */
static inline uint32_t ernic_nlb(const struct ernic_job *job, uint64_t len)
{
	return (uint32_t)((len + job->bs_mask) >> job->lba_shift);
}

/*
 * Post the capsules of @io that fit in the qpair. Returns false when the
 * qpair filled up first; the rest goes out once completions free slots.
 */
static bool ernic_io_submit(struct ernic_job *job, struct ernic_io *io)
{
	struct ernic_host_qpair *qp = job->q->qp;
	struct nvme_sqe sqe;
	uint32_t len;
	int rc;

	if (io->opc == NVME_CMD_FLUSH || io->opc == NVME_CMD_DSM) {
		memset(&sqe, 0, sizeof(sqe));
		sqe.opc = io->opc;
		sqe.nsid = ERNIC_NSID;
		if (io->opc == NVME_CMD_DSM) {
			io->range.cattr = 0;
			io->range.nlb = ernic_nlb(job, io->left);
			io->range.slba = io->off >> job->lba_shift;
			sqe.cdw10 = 0; /* NR: one range, 0's based */
			sqe.cdw11 = NVME_DSM_ATTR_DEALLOCATE;
			rc = ernic_host_submit(qp, &sqe, &io->range, sizeof(io->range), io);
		} else {
			rc = ernic_host_submit(qp, &sqe, NULL, 0, io);
		}
		if (rc == -EBUSY)
			return false;
		io->left = 0;
		if (rc) {
			io->error = -rc;
			ernic_io_done(io);
			return true;
		}
		io->inflight = 1;
		job->capsules++;
		return true;
	}

	while (io->left) {
		len = io->left < job->max_xfer ? (uint32_t)io->left : job->max_xfer;
		ernic_host_rw_sqe(&sqe, io->opc, ERNIC_NSID, io->off >> job->lba_shift, ernic_nlb(job, len));
		rc = ernic_host_submit(qp, &sqe, io->buf, len, io);
		if (rc == -EBUSY)
			return false;
		if (rc) {
			if (!io->error)
				io->error = -rc;
			io->left = 0;
			break;
		}
		io->inflight++;
		io->left -= len;
		io->off += len;
		io->buf += len;
		job->capsules++;
	}
	if (!io->inflight)
		ernic_io_done(io);
	return true;
}

/* Post whatever committed io_us are waiting, in order. */
static inline void ernic_submit_backlog(struct ernic_job *job)
{
	while (job->sq_head != job->sq_commit) {
		if (!ernic_io_submit(job, job->sq[job->sq_head]))
			return;
		job->sq_head = (job->sq_head + 1) & job->ring_mask;
	}
}

static int fio_ernic_commit(struct thread_data *td)
{
	struct ernic_job *job = td->io_ops_data;
	struct timespec now;
	unsigned int i, n = 0;
	bool stamp = fio_fill_issue_time(td);

	if (job->sq_commit == job->sq_tail)
		return 0;
	if (stamp)
		fio_gettime(&now, NULL);
	for (i = job->sq_commit; i != job->sq_tail; i = (i + 1) & job->ring_mask) {
		struct ernic_io *io = job->sq[i];

		/* Only data moves under MDTS; one DSM range covers any trim. */
		if (io->left > job->max_xfer && io->opc != NVME_CMD_DSM)
			job->split_ios++;
		if (stamp) {
			io->io_u->issue_time = now;
			io_u_queued(td, io->io_u);
		}
		n++;
	}
	job->ios += n;
	job->sq_commit = job->sq_tail;
	io_u_mark_submit(td, n);

	ernic_lock(job);
	job->inflight_ios += n;
	ernic_submit_backlog(job);
	ernic_unlock(job);
	return 0;
}

/* Reap completions, finish io_us, refill the qpair. Returns completions reaped. */
static int ernic_reap(struct ernic_job *job)
{
	int n, i;

	n = ernic_host_poll(job->q->qp, job->cpls, ERNIC_POLL_BATCH);
	for (i = 0; i < n; i++) {
		struct ernic_io *io = job->cpls[i].ctx;

		if (job->cpls[i].status && !io->error)
			io->error = ernic_status_errno(job->cpls[i].status);
		if (--io->inflight == 0 && io->left == 0)
			ernic_io_done(io);
	}
	/*
	 * Unconditionally: on a shared qpair another job's reap may have
	 * freed the slots this job's backlog waits for.
	 */
	ernic_submit_backlog(job);
	return n;
}

static inline unsigned int ernic_done_count(const struct ernic_job *job)
{
	return (job->done_tail - job->done_head) & job->ring_mask;
}

static int fio_ernic_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			       const struct timespec *t)
{
	struct ernic_job *job = td->io_ops_data;
	struct timespec deadline, now;
	unsigned int spins = 0, ready;

	if (t) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += t->tv_sec;
		deadline.tv_nsec += t->tv_nsec;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}

	ernic_lock(job);
	for (;;) {
		/* Reap even when enough are ready: completions waiting in the CQ are free events. */
		if (ernic_reap(job)) {
			spins = 0;
			continue;
		}
		ready = ernic_done_count(job);
		if (ready >= min)
			break;
		ernic_unlock(job);
		if (++spins % ERNIC_SPINS_BEFORE_YIELD == 0)
			sched_yield();
		if (t && spins % ERNIC_SPINS_PER_CLOCK == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec > deadline.tv_sec ||
			    (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec)) {
				ernic_lock(job);
				ready = ernic_done_count(job);
				break;
			}
		}
		ernic_lock(job);
	}
	if (ready > max)
		ready = max;
	for (unsigned int i = 0; i < ready; i++) {
		job->events[i] = job->done[job->done_head];
		job->done_head = (job->done_head + 1) & job->ring_mask;
	}
	ernic_unlock(job);
	return (int)ready;
}

static struct io_u *fio_ernic_event(struct thread_data *td, int event)
{
	struct ernic_job *job = td->io_ops_data;

	return job->events[event];
}

/* ", \"stages\": {...}" with the sampled stage means and maxima in us, or nothing when off. */
static void ernic_write_stages(FILE *f)
{
	struct ernic_stage_stats s;

	if (!ernic_run.stage_sample)
		return;
	ernic_host_stage_stats(ernic_run.hc, &s);
	fprintf(f, ", \"stages\": {\"sample_every\": %" PRIu32 ", \"samples\": %" PRIu64, ernic_run.stage_sample,
		s.samples);
	for (int k = 0; k < ERNIC_STAGE_COUNT; k++)
		fprintf(f, ", \"%s_us\": %.3f, \"%s_max_us\": %.3f", ernic_stage_name((enum ernic_stage)k),
			s.samples ? (double)s.sum_ns[k] / (double)s.samples / 1000.0 : 0.0,
			ernic_stage_name((enum ernic_stage)k), (double)s.max_ns[k] / 1000.0);
	fputc('}', f);
}

static int ernic_write_stats(const char *path)
{
	struct ernic_counters c;
	char *buf;
	FILE *f;
	int n;

	ernic_target_counters(ernic_run.tgt, &c);
	buf = ernic_counters_json_alloc(&c);
	if (!buf)
		return -ENOMEM;
	f = fopen(path, "w");
	if (!f) {
		n = -errno;
		free(buf);
		return n;
	}
	fprintf(f,
		"{\"backend\": \"%s\", \"io_queues\": %" PRIu32 ", \"mdts_bytes\": %u, \"ios\": %" PRIu64
		", \"capsules\": %" PRIu64 ", \"split_ios\": %" PRIu64 ", \"target\": %s",
		ernic_run.backend, ernic_run.nr_queues, ernic_run.max_xfer, ernic_run.ios, ernic_run.capsules,
		ernic_run.split_ios, buf);
	ernic_write_stages(f);
	fputs("}\n", f);
	free(buf);
	if (fclose(f))
		return -errno;
	return 0;
}

static void fio_ernic_cleanup(struct thread_data *td)
{
	struct ernic_job *job = td->io_ops_data;
	time_t deadline = time(NULL) + 10;

	if (!job)
		return;

	/*
	 * Commands still in flight (a job stopped on an error) point into
	 * io_u buffers fio is about to free: let them land first. Committed
	 * io_us with nothing posted are simply dropped.
	 */
	ernic_lock(job);
	for (; job->sq_head != job->sq_commit; job->sq_head = (job->sq_head + 1) & job->ring_mask) {
		struct ernic_io *io = job->sq[job->sq_head];

		io->left = 0;
		if (!io->inflight)
			job->inflight_ios--;
	}
	job->sq_commit = job->sq_tail = job->sq_head;
	while (job->inflight_ios && time(NULL) < deadline) {
		if (!ernic_reap(job)) {
			ernic_unlock(job);
			sched_yield();
			ernic_lock(job);
		}
	}
	if (job->inflight_ios)
		log_err("ernic: %s: %u I/Os still in flight at exit\n", td->o.name, job->inflight_ios);
	job->done_head = job->done_tail;
	ernic_unlock(job);

	if (output_format & FIO_OUTPUT_NORMAL)
		log_info("ernic: %s: qid %u: %" PRIu64 " ios in %" PRIu64 " capsules, %" PRIu64
			 " split at MDTS %u KiB\n",
			 td->o.name, job->qid, job->ios, job->capsules, job->split_ios, job->max_xfer / 1024);

	pthread_mutex_lock(&ernic_run.lock);
	ernic_run.ios += job->ios;
	ernic_run.capsules += job->capsules;
	ernic_run.split_ios += job->split_ios;
	if (--ernic_run.refs == 0) {
		if (ernic_run.stats_path) {
			int rc = ernic_write_stats(ernic_run.stats_path);

			if (rc)
				log_err("ernic: writing %s: %s\n", ernic_run.stats_path, strerror(-rc));
		}
		ernic_run_teardown();
	}
	pthread_mutex_unlock(&ernic_run.lock);

	ernic_job_free(job);
	td->io_ops_data = NULL;
}

struct ioengine_ops ioengine = {
	.name			= "ernic",
	.version		= FIO_IOOPS_VERSION,
	.flags			= FIO_DISKLESSIO | FIO_NOEXTEND | FIO_MEMALIGN | FIO_ASYNCIO_SETS_ISSUE_TIME,
	.init			= fio_ernic_init,
	.io_u_init		= fio_ernic_io_u_init,
	.io_u_free		= fio_ernic_io_u_free,
	.get_file_size		= fio_ernic_get_file_size,
	.open_file		= fio_ernic_open_file,
	.close_file		= fio_ernic_close_file,
	.queue			= fio_ernic_queue,
	.commit			= fio_ernic_commit,
	.getevents		= fio_ernic_getevents,
	.event			= fio_ernic_event,
	.cleanup		= fio_ernic_cleanup,
	.options		= options,
	.option_struct_size	= sizeof(struct ernic_options),
};
