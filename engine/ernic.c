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
 *
 * Device mode: a filename /dev/ngXnY (or /dev/nvmeXnY, which maps to its ng
 * twin) sends the same SQEs to a namespace of a controller the kernel drives
 * (over NVMe/TCP in the lane), as NVMe passthrough: io_uring's
 * IORING_OP_URING_CMD with NVME_URING_CMD_IO, or the NVME_IOCTL_IO64_CMD
 * ioctl. Identify Controller and Identify Namespace, read through the
 * controller's admin passthrough ioctl at init, give MDTS, the LBA format and
 * the size. Each job has its own ring, so thread=1 is not needed there. The
 * status of every failed command, exactly as the controller answered it, goes
 * into ernic_stats in both modes; fio sees an errno.
 *
 *   fio --ioengine=external:./build/ernic-fio.so --filename=/dev/ng0n1 ...
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <liburing.h>

#include "fio.h"
#include "optgroup.h"

#include "ernic/ernic.h"
#include "ernic_cmd.h"
#include "../emulator/src/json.h" /* libernic's JSON string writer; fio has a json.h of its own */

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
/* Device mode: passthrough commands one job keeps in flight, at most (see ernic_dev_setup). */
#define ERNIC_DEV_MAX_INFLIGHT 32
/* Empty polls between clock reads when a getevents timeout is set. */
#define ERNIC_SPINS_PER_CLOCK 256

/*
 * Numbers and sizes come from fio as strings and are read by
 * ernic_opts_read(): fio's own parser splits a number at '-' as a range,
 * so ernic_queues=-1 printed an error and then ran with the default.
 */
struct ernic_options {
	void *pad; /* fio stores the thread_data pointer here */
	char *backend;
	char *queues_str;
	char *stats;
	char *host_checks_str;
	char *stage_sample_str;
	unsigned int passthru;
	char *fixedbufs_str;
	char *split_str;
	char *fua_str;
	char *nsid_str;
	char *opcode;
	char *size_str;
	/* What ernic_opts_read() made of the strings */
	unsigned long long queues, host_checks, stage_sample, fixedbufs, split, fua, nsid, size;
};

enum ernic_passthru {
	ERNIC_PASSTHRU_URING,
	ERNIC_PASSTHRU_IOCTL,
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
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, queues_str),
		.def	= "0",
		.help	= "I/O queues to connect, 0 to 64; job i uses queue (i mod queues) + 1 (0: all the backend offers)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_stats",
		.lname	= "ernic stats file",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, stats),
		.help	= "Write the target's counters, the engine's capsule/split counts and the first failed command "
			  "of each job as JSON to this path at exit (default: $ERNIC_STATS, else none)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_host_checks",
		.lname	= "ernic host-side checks",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, host_checks_str),
		.def	= "1",
		.help	= "Fail I/O not aligned to the namespace block size with EINVAL before sending, as the "
			  "block layer does (0: send a length off the block size and let the controller reject it; "
			  "an offset off it cannot be encoded and always fails)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_stage_sample",
		.lname	= "ernic stage sampling",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, stage_sample_str),
		.def	= "0",
		.help	= "Stamp 1 in N commands at each stage (host driver, transport to target, target driver, "
			  "storage, transport to host) and put the stage means in ernic_stats (0: off; ntprof samples 1 in 1000)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_passthru",
		.lname	= "ernic passthrough interface",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct ernic_options, passthru),
		.def	= "uring",
		.help	= "Device mode (filename=/dev/ngXnY): how commands reach the kernel",
		.posval = {
			{ .ival = "uring", .oval = ERNIC_PASSTHRU_URING,
			  .help = "io_uring IORING_OP_URING_CMD, NVME_URING_CMD_IO (falls back to ioctl without it)" },
			{ .ival = "ioctl", .oval = ERNIC_PASSTHRU_IOCTL,
			  .help = "NVME_IOCTL_IO64_CMD, one blocking ioctl per command" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_fixedbufs",
		.lname	= "ernic fixed buffers",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, fixedbufs_str),
		.def	= "0",
		.help	= "Device mode with ernic_passthru=uring: register the I/O buffers with the ring (IORING_URING_CMD_FIXED)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_split",
		.lname	= "ernic split at MDTS",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, split_str),
		.def	= "1",
		.help	= "Split an I/O larger than MDTS into several commands (0: send it as one and let it be refused)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_fua",
		.lname	= "ernic force unit access",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, fua_str),
		.def	= "0",
		.help	= "Set FUA (CDW12 bit 30) on every Write",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_nsid",
		.lname	= "ernic namespace id",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, nsid_str),
		.def	= "0",
		.help	= "NSID to put in every I/O command (0: the namespace's own; another one tests Invalid Namespace)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_opcode",
		.lname	= "ernic opcode",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, opcode),
		.help	= "Opcode (0..0xff) sent for every read and write instead of Read/Write, e.g. 0x08 Write "
			  "Zeroes; an opcode whose bits 1:0 are 00 carries no data",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ernic_size",
		.lname	= "ernic namespace size for fio",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct ernic_options, size_str),
		.def	= "0",
		.help	= "Size fio is told the namespace has (0: what Identify Namespace says); a larger one lets "
			  "offset= reach LBAs past the end",
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

/* The first failed command of a run, exactly as it ended. */
struct ernic_first_error {
	bool set;
	uint8_t opc;
	struct ernic_cmd_status st;
};

/* Failed commands by how they ended: NVMe status (SCT << 8 | SC), or an errno without one. */
struct ernic_errors {
	uint64_t status[NVME_STATUS_COUNT];
	uint64_t dnr;
	uint64_t no_status; /* the kernel or the host refused the command before any controller saw it */
	struct ernic_first_error first;
};

/*
 * One job's outcome, by fio's job number (its place in fio's report): which
 * of several job files run by one fio (each separated by a stonewall) failed
 * how.
 */
struct ernic_job_result {
	int number;
	char name[64];
	uint64_t ios;
	struct ernic_first_error first;
};

/*
 * What every job of the run shares: in process, the target and host
 * controller; in device mode only the counters and the stats file.
 */
static struct {
	pthread_mutex_t lock;
	unsigned int refs;
	bool device;
	char *backend;
	struct ernic_backend_cfg cfg;
	struct ernic_target *tgt;
	struct ernic_inproc_port *port;
	struct ernic_host_ctrlr *hc;
	struct ernic_queue *queues;
	uint32_t nr_queues;
	uint32_t lba_shift;
	uint64_t ns_size;
	uint32_t max_xfer; /* per command: Identify MDTS, and in device mode the kernel's max_hw_sectors */
	char *stats_path;
	uint32_t stage_sample; /* the first job's ernic_stage_sample, for every queue */
	uint64_t ios, capsules, split_ios;
	/* device mode: what the first job found */
	char dev_path[64];
	const char *passthru;
	bool fixedbufs;
	uint32_t nsid;
	struct ernic_errors errors;
	struct ernic_job_result *results; /* every job that ended, in the order they did */
	unsigned int nr_results;
} ernic_run = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

struct ernic_job;

/* Per io_u state, allocated once in io_u_init. */
struct ernic_io {
	struct io_u *io_u;
	struct ernic_job *job;
	uint8_t opc;
	bool data;	  /* the opcode moves data (bits 1:0 not 00) */
	uint8_t *buf;	  /* next byte to send */
	uint64_t off;	  /* its namespace offset */
	uint64_t left;	  /* bytes not yet in a command */
	uint32_t inflight; /* commands posted, not completed */
	int error;	  /* first errno seen */
	unsigned int buf_index; /* the io_u's index: its registered buffer with ernic_fixedbufs=1 */
	struct nvme_dsm_range range; /* trim: the DSM payload, registered like data */
};

/* Device mode: the namespace's generic character device and how commands reach it. */
struct ernic_dev {
	int fd;
	bool uring;
	bool fixed;
	bool ring_up;
	struct io_uring ring;
	unsigned int cmds_inflight, cmds_max;
	unsigned int unsubmitted;
	struct iovec *iovecs; /* fixed buffers, by io_u index */
	unsigned int nr_iovecs;
};

/* Per job state. */
struct ernic_job {
	bool device;
	struct ernic_queue *q;
	bool shared;
	uint16_t qid;
	uint32_t nsid;
	uint32_t lba_shift;
	uint64_t bs_mask;
	uint32_t max_xfer; /* bytes per command: MDTS, or UINT32_MAX with splitting off */
	bool split;
	bool host_checks;
	bool fua;
	int opcode; /* ernic_opcode, or -1 */
	unsigned int ring_mask; /* rings hold a power of two > iodepth entries */
	struct ernic_dev dev;

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
	struct ernic_errors *errors;
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

/* A job option's string, else the environment variable's, else NULL: how ernic_backend= and ernic_stats= default. */
static const char *ernic_opt_or_env(const char *opt, const char *name)
{
	const char *env;

	if (opt && *opt)
		return opt;
	env = getenv(name);
	return env && *env ? env : NULL;
}

static const char *ernic_backend_str(struct thread_data *td)
{
	struct ernic_options *o = td->eo;
	const char *s = ernic_opt_or_env(o->backend, "ERNIC_BACKEND");

	return s ? s : ERNIC_DEFAULT_BACKEND;
}

/*
 * Where the run's stats go: ernic_stats=, else $ERNIC_STATS. The environment
 * lets a runner keep every case's first failure without editing job files.
 */
static const char *ernic_stats_str(struct thread_data *td)
{
	struct ernic_options *o = td->eo;

	return ernic_opt_or_env(o->stats, "ERNIC_STATS");
}

/*
 * The stats file is written when the run's last job ends: a path that could
 * not be created then would lose the record after the run had passed, so
 * refuse it at init. Creates nothing: the file itself is checked if it is
 * there, else its directory.
 */
static int ernic_stats_check(struct thread_data *td)
{
	struct ernic_options *o = td->eo;
	const char *path = ernic_stats_str(td);
	struct stat st;
	char *dir;
	int rc = 0;

	if (!path)
		return 0;
	if (!stat(path, &st)) {
		if (S_ISDIR(st.st_mode))
			rc = -EISDIR;
		else if (access(path, W_OK))
			rc = -errno;
	} else if (errno != ENOENT) {
		rc = -errno;
	} else {
		dir = strdup(path);
		if (!dir)
			rc = -ENOMEM;
		else if (access(dirname(dir), W_OK | X_OK))
			rc = -errno;
		free(dir);
	}
	if (rc)
		log_err("ernic: %s=%s: cannot create: %s\n", o->stats && *o->stats ? "ernic_stats" : "ERNIC_STATS", path,
			strerror(-rc));
	return rc;
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

/* ------------------------------------------------------------------ device mode: init */

/* What Identify tells the engine about a namespace behind /dev/ngXnY. */
struct ernic_dev_info {
	char ng[64], ctrl[64];
	uint32_t nsid;
	uint32_t lba_shift;
	uint64_t size;
	uint32_t mdts_bytes;
};

/* One admin command through the controller's passthrough ioctl; the completion's status, or -errno. */
static int ernic_dev_admin(int fd, uint8_t opc, uint32_t nsid, uint32_t cdw10, void *buf, uint32_t len)
{
	struct nvme_passthru_cmd64 cmd;
	struct nvme_sqe sqe;
	int rc;

	memset(&sqe, 0, sizeof(sqe));
	sqe.opc = opc;
	sqe.nsid = nsid;
	sqe.cdw10 = cdw10;
	ernic_cmd_ioctl(&sqe, buf, len, &cmd);
	rc = ioctl(fd, NVME_IOCTL_ADMIN64_CMD, &cmd);
	return rc < 0 ? -errno : (int)NVME_CQE_STATUS((unsigned int)rc);
}

/*
 * The host's own transfer limit: the block device's max_hw_sectors_kb, which
 * passthrough honours too (the kernel refuses a larger command with EINVAL).
 */
static uint64_t ernic_dev_host_max(const char *ng)
{
	char path[128];
	unsigned long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/block/nvme%s/queue/max_hw_sectors_kb", ng + strlen("/dev/ng"));
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu", &kb) != 1)
		kb = 0;
	fclose(f);
	return (uint64_t)kb * 1024;
}

/*
 * Identify Controller (MDTS) and Identify Namespace (LBA format, size)
 * through the admin passthrough ioctl of /dev/nvmeX; where that node is not
 * the namespace's controller (multipath numbering), through the namespace's
 * own node, which the kernel routes to its controller. MDTS is in units of
 * CAP.MPSMIN, which Linux hosts and both lane targets set to 4 KiB.
 */
static int ernic_dev_identify(const char *filename, struct ernic_dev_info *info, char *err, size_t errlen)
{
	struct nvme_id_ctrl *idc = NULL;
	struct nvme_id_ns *idn = NULL;
	const struct nvme_lbaf *lbaf; /* the format in use */
	int nfd = -1, cfd = -1, rc, nsid;
	uint32_t lbads;

	memset(info, 0, sizeof(*info));
	if (ernic_dev_names(filename, info->ng, sizeof(info->ng), info->ctrl, sizeof(info->ctrl))) {
		snprintf(err, errlen, "filename=%s: not an NVMe namespace (/dev/ngXnY or /dev/nvmeXnY)", filename);
		return -EINVAL;
	}
	nfd = open(info->ng, O_RDONLY);
	if (nfd < 0) {
		rc = -errno;
		snprintf(err, errlen, "filename=%s: cannot open %s: %s", filename, info->ng, strerror(-rc));
		return rc;
	}
	nsid = ioctl(nfd, NVME_IOCTL_ID);
	if (nsid <= 0) {
		rc = nsid < 0 ? -errno : -ENXIO;
		snprintf(err, errlen, "%s: NVME_IOCTL_ID: %s", info->ng, strerror(-rc));
		goto out;
	}
	info->nsid = (uint32_t)nsid;
	if (posix_memalign((void **)&idc, ERNIC_PAGE_SIZE, sizeof(*idc)) ||
	    posix_memalign((void **)&idn, ERNIC_PAGE_SIZE, sizeof(*idn))) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	memset(idc, 0, sizeof(*idc));
	memset(idn, 0, sizeof(*idn));
	cfd = open(info->ctrl, O_RDONLY);
	rc = cfd < 0 ? -ENODEV : ernic_dev_admin(cfd, NVME_ADMIN_IDENTIFY, 0, NVME_ID_CNS_CTRL, idc, sizeof(*idc));
	if (rc)
		rc = ernic_dev_admin(nfd, NVME_ADMIN_IDENTIFY, 0, NVME_ID_CNS_CTRL, idc, sizeof(*idc));
	if (rc) {
		snprintf(err, errlen, "%s: Identify Controller failed: %s", info->ctrl,
			 rc < 0 ? strerror(-rc) : "the controller returned an error status");
		rc = rc < 0 ? rc : -EIO;
		goto out;
	}
	rc = ernic_dev_admin(cfd >= 0 ? cfd : nfd, NVME_ADMIN_IDENTIFY, info->nsid, NVME_ID_CNS_NS, idn, sizeof(*idn));
	if (rc && cfd >= 0)
		rc = ernic_dev_admin(nfd, NVME_ADMIN_IDENTIFY, info->nsid, NVME_ID_CNS_NS, idn, sizeof(*idn));
	if (rc) {
		snprintf(err, errlen, "%s: Identify Namespace %u failed: %s", info->ng, info->nsid,
			 rc < 0 ? strerror(-rc) : "the controller returned an error status");
		rc = rc < 0 ? rc : -EIO;
		goto out;
	}
	lbaf = &idn->lbaf[idn->flbas & 0xF];
	lbads = lbaf->lbads;
	if (lbads < 9 || lbads > 16 || !idn->nsze) {
		snprintf(err, errlen, "%s: Identify Namespace %u: unusable nsze %" PRIu64 " lbads %" PRIu32, info->ng,
			 info->nsid, (uint64_t)idn->nsze, lbads);
		rc = -EINVAL;
		goto out;
	}
	/* Commands carry data only: a format with metadata (extended LBAs or a separate buffer) would not fit. */
	if (lbaf->ms) {
		snprintf(err, errlen, "%s: namespace %u is formatted with %u bytes of metadata per block: not supported",
			 info->ng, info->nsid, (unsigned int)lbaf->ms);
		rc = -EINVAL;
		goto out;
	}
	info->lba_shift = lbads;
	info->size = idn->nsze << lbads;
	info->mdts_bytes = ernic_cmd_max_xfer(ernic_dev_max_xfer(idc->mdts, ERNIC_PAGE_SIZE, ernic_dev_host_max(info->ng)),
					      lbads);
	rc = 0;
out:
	free(idc);
	free(idn);
	if (cfd >= 0)
		close(cfd);
	close(nfd);
	return rc;
}

/* The job's file: a device-mode path, or the in-process label. */
static bool ernic_is_device(struct thread_data *td)
{
	char ng[64], ctrl[64];

	return td->o.nr_files && td->files && td->files[0] &&
	       !ernic_dev_names(td->files[0]->file_name, ng, sizeof(ng), ctrl, sizeof(ctrl));
}

static void ernic_dev_close(struct ernic_dev *dev)
{
	if (dev->ring_up)
		io_uring_queue_exit(&dev->ring);
	dev->ring_up = false;
	if (dev->fd >= 0)
		close(dev->fd);
	dev->fd = -1;
	free(dev->iovecs);
	dev->iovecs = NULL;
}

/*
 * A ring of @entries 128-byte SQEs and 32-byte CQEs, set up as fio's own
 * io_uring_cmd engine sets up its ring, so that the two compare on equal
 * terms: the CQ no larger than the SQ, and completions run as task work
 * only when the job asks for events (DEFER_TASKRUN; the job's thread is the
 * ring's only submitter) instead of interrupting it for each one. A kernel
 * that lacks a flag refuses it with EINVAL: retry without, newest first.
 */
static int ernic_dev_ring_init(struct io_uring *ring, unsigned int entries)
{
	static const unsigned int optional[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		IORING_SETUP_CQSIZE,
	};
	struct io_uring_params p;
	unsigned int flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32;
	int rc;

	for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++)
		flags |= optional[i];
	for (size_t i = 0;; i++) {
		memset(&p, 0, sizeof(p));
		p.flags = flags;
		p.cq_entries = entries;
		rc = io_uring_queue_init_params(entries, ring, &p);
		if (rc != -EINVAL || i == sizeof(optional) / sizeof(optional[0]))
			return rc;
		flags &= ~optional[i];
	}
}

/*
 * Open the namespace's ng node and, for ernic_passthru=uring, a ring with
 * 128-byte SQEs and 32-byte CQEs (what IORING_OP_URING_CMD carries an NVMe
 * command in). A kernel without io_uring passthrough fails the ring's setup:
 * the job falls back to the ioctl then, and says so.
 */
static int ernic_dev_setup(struct thread_data *td, struct ernic_job *job, const struct ernic_dev_info *info)
{
	struct ernic_options *o = td->eo;
	struct ernic_dev *dev = &job->dev;
	unsigned int per_io, entries = 1;
	int rc;

	dev->fd = open(info->ng, O_RDWR);
	if (dev->fd < 0) {
		rc = -errno;
		log_err("ernic: filename=%s: cannot open %s: %s\n", td->files[0]->file_name, info->ng, strerror(-rc));
		return rc;
	}
	dev->uring = o->passthru == ERNIC_PASSTHRU_URING;
	dev->fixed = dev->uring && o->fixedbufs;
	if (!dev->uring) {
		if (o->fixedbufs)
			log_info("ernic: %s: ernic_fixedbufs=1 needs ernic_passthru=uring; ignored\n", td->o.name);
		return 0;
	}
	per_io = (unsigned int)((td_max_bs(td) + job->max_xfer - 1) / job->max_xfer);
	while (entries < td->o.iodepth * (per_io ? per_io : 1) && entries < 4096)
		entries <<= 1;
	/*
	 * Commands in flight per job, at most: past the host queue's tags the
	 * kernel punts a passthrough command to io-wq, and on the lane's 6.1
	 * kernel split 1 MiB reads at queue depth 16 from 4 jobs came back
	 * EFAULT that way. 32 per job keeps 4 jobs within one 128-entry queue.
	 */
	dev->cmds_max = entries < ERNIC_DEV_MAX_INFLIGHT ? entries : ERNIC_DEV_MAX_INFLIGHT;
	if (dev->cmds_max < td->o.iodepth)
		dev->cmds_max = td->o.iodepth;
	rc = ernic_dev_ring_init(&dev->ring, entries);
	if (rc) {
		log_info("ernic: %s: io_uring with 128-byte SQEs is not available here (%s): "
			 "using NVME_IOCTL_IO64_CMD\n", td->o.name, strerror(-rc));
		dev->uring = dev->fixed = false;
		return 0;
	}
	dev->ring_up = true;
	if (dev->fixed) {
		dev->nr_iovecs = td->o.iodepth;
		dev->iovecs = calloc(dev->nr_iovecs, sizeof(*dev->iovecs));
		if (!dev->iovecs)
			return -ENOMEM;
	}
	return 0;
}

/* ------------------------------------------------------------------ in-process mode: the shared target */

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
	ernic_run.device = false;
	/*
	 * ernic_run.errors and .results stay: device jobs in stonewalled
	 * groups bring the run up and down in turn, and the stats file written
	 * last must hold every failure.
	 */
}

/*
 * The in-process target outlives the group of jobs that brought it up: fio
 * treats filename=ernic0 as one file for the whole run, so a group after a
 * stonewall (write, then verify) must find the data a RAM namespace held.
 * It goes when the engine is unloaded, as fio exits.
 */
static void __attribute__((destructor)) ernic_run_exit(void)
{
	if (ernic_run.tgt)
		ernic_run_teardown();
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
	/* Under a file size limit (ulimit -f) a Write past it then fails that command instead of killing fio. */
	if (ernic_run.cfg.file[0])
		signal(SIGXFSZ, SIG_IGN);

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
	hopts.nr_io_queues = o->queues ? (uint32_t)o->queues : ernic_run.cfg.queues;
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
	ernic_run.max_xfer = ernic_cmd_max_xfer(ernic_mdts_bytes(ernic_host_id_ctrl(ernic_run.hc)->mdts),
						ernic_run.lba_shift);
	ernic_run.nr_queues = ernic_host_nr_io_queues(ernic_run.hc);
	if (!ernic_run.nr_queues) {
		log_err("ernic: the controller granted no I/O queues\n");
		rc = -ENODEV;
		goto fail;
	}
	if (o->queues && ernic_run.nr_queues < o->queues)
		log_info("ernic: asked for %llu I/O queues, the controller granted %" PRIu32 "\n", o->queues,
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
	ernic_run.stage_sample = (uint32_t)o->stage_sample;
	if (ernic_run.stage_sample)
		ernic_host_set_stage_sampling(ernic_run.hc, ernic_run.stage_sample);
	return 0;
fail:
	ernic_run_teardown();
	return rc;
}

/* The whole-number options (0/1 for a switch): where fio put each string, where its value goes, its largest. */
static const struct ernic_number_opt {
	const char *key;
	size_t str, val;
	uint64_t max;
} ernic_number_opts[] = {
#define ERNIC_NUMBER_OPT(name, max) \
	{ "ernic_" #name, offsetof(struct ernic_options, name##_str), offsetof(struct ernic_options, name), max }
	ERNIC_NUMBER_OPT(queues, ERNIC_MAX_IO_QUEUES),
	ERNIC_NUMBER_OPT(host_checks, 1),
	ERNIC_NUMBER_OPT(stage_sample, UINT32_MAX),
	ERNIC_NUMBER_OPT(fixedbufs, 1),
	ERNIC_NUMBER_OPT(split, 1),
	ERNIC_NUMBER_OPT(fua, 1),
	ERNIC_NUMBER_OPT(nsid, UINT32_MAX),
#undef ERNIC_NUMBER_OPT
};

/*
 * Read the number and size options into struct ernic_options: 0, or 1 with
 * one line per bad one naming it and its value when @report (init reports;
 * get_file_size, which runs first in the parent, only falls back).
 */
static int ernic_opts_read(struct thread_data *td, bool report)
{
	struct ernic_options *o = td->eo;
	uint64_t size;
	int bad = 0;

	for (size_t i = 0; i < sizeof(ernic_number_opts) / sizeof(ernic_number_opts[0]); i++) {
		const struct ernic_number_opt *n = &ernic_number_opts[i];
		const char *str = *(char **)((char *)o + n->str);
		uint64_t v;

		if (ernic_parse_u64(str, n->max, &v) == 0) {
			*(unsigned long long *)((char *)o + n->val) = v;
			continue;
		}
		bad = 1;
		if (report && n->max == 1)
			log_err("ernic: %s=%s: not 0 or 1\n", n->key, str ? str : "");
		else if (report)
			log_err("ernic: %s=%s: not a whole number from 0 to %" PRIu64 " (decimal or 0x hex)\n", n->key,
				str ? str : "", n->max);
	}
	/* A size as the backend string writes one: digits and an optional K, M, G or T, all of it, in 64 bits. */
	if (o->size_str && ernic_parse_bytes(o->size_str, &size)) {
		o->size = size;
	} else {
		if (report)
			log_err("ernic: ernic_size=%s: not a size in bytes (digits and an optional K, M, G or T)\n",
				o->size_str ? o->size_str : "");
		bad = 1;
	}
	return bad;
}

/* Namespace size for fio's file size. Runs in the parent, before init. */
static int fio_ernic_get_file_size(struct thread_data *td, struct fio_file *f)
{
	struct ernic_options *o = td->eo;
	struct ernic_backend_cfg cfg = { 0 };
	struct ernic_dev_info info;
	char err[ERNIC_ERRLEN];

	if (fio_file_size_known(f))
		return 0;
	/* Bad options are reported once, by init. */
	if (ernic_opts_read(td, false) == 0 && o->size) {
		f->real_file_size = o->size;
		fio_file_set_size_known(f);
		return 0;
	}
	if (ernic_is_device(td)) {
		/* The same failure is reported by init, with the job's name: here only the size matters. */
		if (ernic_dev_identify(f->file_name, &info, err, sizeof(err)))
			f->real_file_size = td->o.size ? td->o.size : ERNIC_PAGE_SIZE;
		else
			f->real_file_size = info.size;
		fio_file_set_size_known(f);
		return 0;
	}
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
	ernic_dev_close(&job->dev);
	free(job->sq);
	free(job->done);
	free(job->events);
	free(job->errors);
	free(job);
}

/* Device mode: Identify, open, and join the run's counters. */
static int ernic_dev_init(struct thread_data *td, struct ernic_job *job)
{
	struct ernic_options *o = td->eo;
	struct ernic_dev_info info;
	char err[ERNIC_ERRLEN];
	int rc;

	/* Jobs forked as processes each hold their own run counters, and the last to end would overwrite the file. */
	if (ernic_stats_str(td) && !td->o.use_thread && thread_number > 1) {
		log_err("ernic: ernic_stats=%s with %d jobs as processes: each would overwrite it; add thread=1\n",
			ernic_stats_str(td), thread_number);
		return -EINVAL;
	}
	rc = ernic_dev_identify(td->files[0]->file_name, &info, err, sizeof(err));
	if (rc) {
		log_err("ernic: %s\n", err);
		return rc;
	}
	job->nsid = o->nsid ? (uint32_t)o->nsid : info.nsid;
	job->lba_shift = info.lba_shift;
	job->max_xfer = o->split ? info.mdts_bytes : UINT32_MAX;
	rc = ernic_dev_setup(td, job, &info);
	if (rc)
		return rc;

	pthread_mutex_lock(&ernic_run.lock);
	if (!ernic_run.refs && ernic_run.tgt)
		ernic_run_teardown();
	if (ernic_run.refs && !ernic_run.device) {
		pthread_mutex_unlock(&ernic_run.lock);
		log_err("ernic: job %s: filename=%s is a device, but this run's other jobs use the in-process "
			"target; run them separately\n", td->o.name, td->files[0]->file_name);
		return -EINVAL;
	}
	if (ernic_run.refs++ == 0) {
		ernic_run.device = true;
		snprintf(ernic_run.dev_path, sizeof(ernic_run.dev_path), "%s", info.ng);
		ernic_run.passthru = job->dev.uring ? "uring" : "ioctl";
		ernic_run.fixedbufs = job->dev.fixed;
		ernic_run.nsid = job->nsid;
		ernic_run.lba_shift = info.lba_shift;
		ernic_run.max_xfer = info.mdts_bytes;
		ernic_run.ns_size = info.size;
	}
	if (ernic_stats_str(td) && !ernic_run.stats_path)
		ernic_run.stats_path = strdup(ernic_stats_str(td));
	pthread_mutex_unlock(&ernic_run.lock);
	return 0;
}

/* In-process mode: bring up (or join) the run's target and pick this job's qpair. */
static int ernic_inproc_init(struct thread_data *td, struct ernic_job *job)
{
	struct ernic_options *o = td->eo;
	uint32_t q;
	int rc = 0;

	if (!td->o.use_thread) {
		log_err("ernic: thread=1 is required: all jobs share one emulated target and host "
			"controller in this process\n");
		return -EINVAL;
	}
	pthread_mutex_lock(&ernic_run.lock);
	if (ernic_run.refs && ernic_run.device) {
		log_err("ernic: job %s: filename=%s is the in-process target, but this run's other jobs use a "
			"device; run them separately\n", td->o.name, td->files[0]->file_name);
		rc = -EINVAL;
	} else if (ernic_run.refs == 0 && ernic_run.tgt && strcmp(ernic_backend_str(td), ernic_run.backend) != 0) {
		/* A later group asks for another target: the earlier one goes. */
		ernic_run_teardown();
		rc = ernic_run_setup(td);
	} else if (ernic_run.refs == 0 && !ernic_run.tgt) {
		rc = ernic_run_setup(td);
	} else if (strcmp(ernic_backend_str(td), ernic_run.backend) != 0) {
		log_err("ernic: job %s asks for backend '%s' but the run's target is '%s'; all jobs share one\n",
			td->o.name, ernic_backend_str(td), ernic_run.backend);
		rc = -EINVAL;
	}
	if (rc) {
		pthread_mutex_unlock(&ernic_run.lock);
		return rc;
	}
	ernic_run.refs++;
	if (ernic_stats_str(td) && !ernic_run.stats_path)
		ernic_run.stats_path = strdup(ernic_stats_str(td));
	if (o->queues && o->queues != ernic_run.nr_queues)
		log_info("ernic: job %s asks for ernic_queues=%llu; the run's target has %" PRIu32 " I/O queues\n",
			 td->o.name, o->queues, ernic_run.nr_queues);
	if (o->stage_sample != ernic_run.stage_sample)
		log_info("ernic: job %s asks for ernic_stage_sample=%llu; the run's first job set %" PRIu32
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
	job->nsid = o->nsid ? (uint32_t)o->nsid : ERNIC_NSID;
	job->lba_shift = ernic_run.lba_shift;
	job->max_xfer = o->split ? ernic_run.max_xfer : UINT32_MAX;
	pthread_mutex_unlock(&ernic_run.lock);
	return 0;
}

static int fio_ernic_init(struct thread_data *td)
{
	struct ernic_options *o = td->eo;
	struct ernic_job *job;
	int rc;

	job = calloc(1, sizeof(*job));
	if (job) {
		unsigned int entries = 2;

		job->dev.fd = -1;
		while (entries <= td->o.iodepth)
			entries <<= 1;
		job->ring_mask = entries - 1;
		job->sq = calloc(entries, sizeof(*job->sq));
		job->done = calloc(entries, sizeof(*job->done));
		job->events = calloc(entries, sizeof(*job->events));
		job->errors = calloc(1, sizeof(*job->errors));
	}
	if (!job || !job->sq || !job->done || !job->events || !job->errors) {
		log_err("ernic: out of memory\n");
		ernic_job_free(job);
		return 1;
	}
	if (ernic_opts_read(td, true)) {
		ernic_job_free(job);
		return 1;
	}
	job->opcode = -1;
	if (o->opcode && *o->opcode) {
		job->opcode = ernic_parse_opcode(o->opcode);
		if (job->opcode < 0) {
			log_err("ernic: ernic_opcode=%s: not an opcode (0..255, decimal or 0x hex)\n", o->opcode);
			ernic_job_free(job);
			return 1;
		}
	}
	/* fio's offload mode queues an I/O unit through another thread's engine data than the one that set it up. */
	if (td->o.io_submit_mode == IO_MODE_OFFLOAD) {
		log_err("ernic: io_submit_mode=offload: not supported (use inline)\n");
		ernic_job_free(job);
		return 1;
	}
	/* Every command goes to the job's one namespace (the in-process one, or files[0]'s). */
	if (td->o.nr_files > 1) {
		log_err("ernic: nrfiles=%u: one namespace per job; give each namespace a job of its own\n",
			td->o.nr_files);
		ernic_job_free(job);
		return 1;
	}
	if (ernic_stats_check(td)) {
		ernic_job_free(job);
		return 1;
	}
	job->split = o->split;
	job->host_checks = o->host_checks;
	job->fua = o->fua;
	job->device = ernic_is_device(td);
	if (!job->device && td->o.nr_files && !strncmp(td->files[0]->file_name, "/dev/", 5)) {
		log_err("ernic: filename=%s: not an NVMe namespace (/dev/ngXnY or /dev/nvmeXnY)\n",
			td->files[0]->file_name);
		ernic_job_free(job);
		return 1;
	}
	/* As device mode says of its own inapplicable ones: the job runs, without them. */
	if (!job->device && (o->passthru != ERNIC_PASSTHRU_URING || o->fixedbufs))
		log_info("ernic: %s: %s%s%s: device mode only (filename=/dev/ngXnY); ignored in process\n", td->o.name,
			 o->passthru != ERNIC_PASSTHRU_URING ? "ernic_passthru=ioctl" : "",
			 o->passthru != ERNIC_PASSTHRU_URING && o->fixedbufs ? " " : "",
			 o->fixedbufs ? "ernic_fixedbufs=1" : "");
	rc = job->device ? ernic_dev_init(td, job) : ernic_inproc_init(td, job);
	if (rc) {
		ernic_job_free(job);
		return 1;
	}
	job->bs_mask = (1ull << job->lba_shift) - 1;
	td->io_ops_data = job;
	return 0;
}

/* Fixed buffers: every io_u's buffer registered with the ring, by io_u index. */
static int fio_ernic_post_init(struct thread_data *td)
{
	struct ernic_job *job = td->io_ops_data;
	struct io_u *io_u;
	unsigned int i;
	int rc;

	if (!job->device || !job->dev.fixed)
		return 0;
	/* After io_u_init: fio gives the io_us their buffers only then. */
	io_u_qiter(&td->io_u_all, io_u, i) {
		struct ernic_io *io = io_u->engine_data;

		if (io->buf_index < job->dev.nr_iovecs) {
			job->dev.iovecs[io->buf_index].iov_base = io_u->buf;
			job->dev.iovecs[io->buf_index].iov_len = td_max_bs(td);
		}
	}
	/* The kernel takes an empty slot as a sparse entry and every command on it as EFAULT: say so here. */
	for (i = 0; i < job->dev.nr_iovecs; i++) {
		if (!job->dev.iovecs[i].iov_base) {
			log_err("ernic: %s: ernic_fixedbufs=1: no I/O buffer for io_u %u of %u\n", td->o.name, i,
				job->dev.nr_iovecs);
			return 1;
		}
	}
	rc = io_uring_register_buffers(&job->dev.ring, job->dev.iovecs, job->dev.nr_iovecs);
	if (rc) {
		log_err("ernic: %s: ernic_fixedbufs=1: registering %u buffers failed: %s\n", td->o.name,
			job->dev.nr_iovecs, strerror(-rc));
		return 1;
	}
	return 0;
}

static int fio_ernic_io_u_init(struct thread_data *td, struct io_u *io_u)
{
	struct ernic_job *job = td->io_ops_data;
	struct ernic_io *io;

	/* Aligned: the DSM range inside is registered as a data buffer. */
	if (posix_memalign((void **)&io, 64, sizeof(*io)))
		return 1;
	memset(io, 0, sizeof(*io));
	/*
	 * io_u->index shares a union with engine_data (fio's io_u.h): read
	 * it before engine_data overwrites it. fio's own io_uring engines
	 * keep no engine_data and use index as the buffer index directly.
	 */
	io->buf_index = io_u->index;
	io->io_u = io_u;
	io->job = job;
	io_u->engine_data = io;
	return 0;
}

static void fio_ernic_io_u_free(struct thread_data fio_unused *td, struct io_u *io_u)
{
	free(io_u->engine_data);
	io_u->engine_data = NULL;
}

/* In process the file is a label; in device mode init opened the namespace. */
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
		io->opc = job->opcode >= 0 ? (uint8_t)job->opcode : NVME_CMD_READ;
		break;
	case DDIR_WRITE:
		io->opc = job->opcode >= 0 ? (uint8_t)job->opcode : NVME_CMD_WRITE;
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
	/* Base 4.2 Figure 88: opcode bits 1:0 give the data direction. */
	io->data = (io->opc & 3) != NVME_DATA_NONE && io->opc != NVME_CMD_DSM;

	/*
	 * The block layer refuses what the namespace cannot address, before any
	 * command. With host checks off a length off the block size still goes
	 * out with data, for the controller to compare with the SGL's; an
	 * offset off it cannot (an SLBA cannot say it, and rounding it down
	 * would move the data), nor a length without data (Write Zeroes, a
	 * trim's range): its NLB, rounded up, is all the controller sees, and
	 * it would act on the rest of the last block too.
	 */
	if (io->opc != NVME_CMD_FLUSH &&
	    ((io_u->offset & job->bs_mask) ||
	     ((job->host_checks || !io->data) && (io_u->xfer_buflen & job->bs_mask)))) {
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}
	/* Unsplit, the I/O is one command, and NLB cannot name more blocks than ERNIC_CMD_MAX_NLB. */
	if (!job->split && io->opc != NVME_CMD_FLUSH && io->opc != NVME_CMD_DSM &&
	    io_u->xfer_buflen > (uint64_t)ERNIC_CMD_MAX_NLB << job->lba_shift) {
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

/* One command of @io ended: count a failure by its exact status, keep the io_u's first errno. */
static inline void ernic_cmd_end(struct ernic_io *io, uint8_t opc, struct ernic_cmd_status st)
{
	struct ernic_errors *e;

	if (__builtin_expect(!st.err && !st.status, 1))
		return;
	e = io->job->errors;
	if (st.nvme) {
		e->status[st.status]++;
		e->dnr += st.dnr;
	} else {
		e->no_status++;
	}
	if (!e->first.set) {
		e->first.set = true;
		e->first.opc = opc;
		e->first.st = st;
	}
	if (!io->error)
		io->error = st.err ? st.err : EIO;
}

/*
 * NLB for @len bytes, rounded up: with host checks off a short transfer
 * still names a whole block, and the controller sees the SGL length differ
 * (fio_ernic_queue() lets a short length through only with data).
 */
static inline uint32_t ernic_nlb(const struct ernic_job *job, uint64_t len)
{
	return (uint32_t)((len + job->bs_mask) >> job->lba_shift);
}

/*
 * Send one command the way the job's mode does. Returns 0 once it is in
 * flight, 1 when it already ended (the ioctl is synchronous; a refusal
 * before sending), -EBUSY when the queue is full.
 */
static inline int ernic_send(struct ernic_job *job, struct ernic_io *io, const struct nvme_sqe *sqe, void *buf,
			     uint32_t len)
{
	struct ernic_cmd_status st = { 0 };
	int rc;

	if (!job->device) {
		rc = ernic_host_submit(job->q->qp, sqe, buf, len, io);
		if (__builtin_expect(rc == 0, 1) || rc == -EBUSY)
			return rc;
		st.err = -rc;
		ernic_cmd_end(io, sqe->opc, st);
		return 1;
	}
	if (job->dev.uring) {
		struct io_uring_sqe *s;

		if (job->dev.cmds_inflight == job->dev.cmds_max)
			return -EBUSY;
		s = io_uring_get_sqe(&job->dev.ring);
		if (!s)
			return -EBUSY;
		memset(s, 0, 2 * sizeof(*s)); /* SQE128: the command spills into the second half */
		s->opcode = IORING_OP_URING_CMD;
		s->fd = job->dev.fd;
		s->cmd_op = NVME_URING_CMD_IO;
		if (job->dev.fixed && buf != &io->range) {
			s->uring_cmd_flags = IORING_URING_CMD_FIXED;
			s->buf_index = (uint16_t)io->buf_index;
		}
		ernic_cmd_uring(sqe, buf, len, (struct nvme_uring_cmd *)s->cmd);
		io_uring_sqe_set_data(s, io);
		job->dev.cmds_inflight++;
		job->dev.unsubmitted++;
		return 0;
	}
	{
		struct nvme_passthru_cmd64 pc;

		ernic_cmd_ioctl(sqe, buf, len, &pc);
		rc = ioctl(job->dev.fd, NVME_IOCTL_IO64_CMD, &pc);
		ernic_cmd_end(io, sqe->opc, ernic_cmd_passthru_status(rc < 0 ? -errno : rc));
		return 1;
	}
}

/*
 * Post the commands of @io that fit in the queue. Returns false when the
 * queue filled up first; the rest goes out once completions free slots.
 */
static bool ernic_io_submit(struct ernic_job *job, struct ernic_io *io)
{
	struct ernic_cmd cmd = { .opc = io->opc, .nsid = job->nsid };
	struct nvme_sqe sqe;
	uint32_t len;
	int rc;

	if (io->opc == NVME_CMD_FLUSH || io->opc == NVME_CMD_DSM) {
		if (io->opc == NVME_CMD_DSM) {
			io->range.cattr = 0;
			io->range.nlb = ernic_nlb(job, io->left);
			io->range.slba = io->off >> job->lba_shift;
			cmd.dsm = true;
		}
		ernic_cmd_sqe(&cmd, &sqe);
		rc = cmd.dsm ? ernic_send(job, io, &sqe, &io->range, sizeof(io->range)) :
			       ernic_send(job, io, &sqe, NULL, 0);
		if (rc == -EBUSY)
			return false;
		io->left = 0;
		job->capsules++;
		if (rc == 0)
			io->inflight = 1;
		else
			ernic_io_done(io);
		return true;
	}

	cmd.fua = job->fua && io->opc == NVME_CMD_WRITE;
	while (io->left) {
		len = io->left < job->max_xfer ? (uint32_t)io->left : job->max_xfer;
		cmd.slba = io->off >> job->lba_shift;
		cmd.nlb = ernic_nlb(job, len);
		ernic_cmd_sqe(&cmd, &sqe);
		rc = io->data ? ernic_send(job, io, &sqe, io->buf, len) : ernic_send(job, io, &sqe, NULL, 0);
		if (rc == -EBUSY)
			return false;
		io->left -= len;
		io->off += len;
		io->buf += len;
		job->capsules++;
		if (rc == 0)
			io->inflight++;
		else if (io->error)
			io->left = 0; /* the rest of a failed io_u is not sent */
	}
	if (!io->inflight)
		ernic_io_done(io);
	return true;
}

/* Post whatever committed io_us are waiting, in order; device mode rings the doorbell once. */
static inline void ernic_submit_backlog(struct ernic_job *job)
{
	while (job->sq_head != job->sq_commit) {
		if (!ernic_io_submit(job, job->sq[job->sq_head]))
			break;
		job->sq_head = (job->sq_head + 1) & job->ring_mask;
	}
	if (job->dev.unsubmitted) {
		int rc = io_uring_submit(&job->dev.ring);

		if (rc > 0)
			job->dev.unsubmitted -= (unsigned int)rc < job->dev.unsubmitted ? (unsigned int)rc :
											  job->dev.unsubmitted;
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

/* One command's completion in process: the controller's status and DNR. */
static inline void ernic_inproc_cpl(struct ernic_io *io, const struct ernic_host_cpl *cpl)
{
	if (cpl->status) {
		struct ernic_cmd_status st = {
			.status = cpl->status,
			.dnr = cpl->dnr,
			.nvme = true,
			.err = ernic_status_errno(cpl->status),
		};

		ernic_cmd_end(io, io->opc, st);
	}
	if (--io->inflight == 0 && io->left == 0)
		ernic_io_done(io);
}

/* Reap completions, finish io_us, refill the queue. Returns completions reaped. */
static int ernic_reap(struct ernic_job *job)
{
	int n = 0, i;

	if (job->device) {
		struct io_uring_cqe *cqe;
		unsigned int head;

		io_uring_for_each_cqe(&job->dev.ring, head, cqe) {
			struct ernic_io *io = io_uring_cqe_get_data(cqe);

			ernic_cmd_end(io, io->opc, ernic_cmd_passthru_status(cqe->res));
			if (--io->inflight == 0 && io->left == 0)
				ernic_io_done(io);
			n++;
		}
		io_uring_cq_advance(&job->dev.ring, (unsigned int)n);
		job->dev.cmds_inflight -= (unsigned int)n;
	} else {
		n = ernic_host_poll(job->q->qp, job->cpls, ERNIC_POLL_BATCH);
		for (i = 0; i < n; i++)
			ernic_inproc_cpl(job->cpls[i].ctx, &job->cpls[i]);
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

/*
 * Device mode with io_uring: sleep in the kernel until a completion arrives
 * (or the timeout passes). Returns false on timeout.
 */
static bool ernic_dev_wait(struct ernic_job *job, const struct timespec *t)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts;
	int rc;

	if (!job->dev.cmds_inflight)
		return false;
	if (!t) {
		rc = io_uring_wait_cqe(&job->dev.ring, &cqe);
		return rc == 0 || rc == -EINTR;
	}
	ts.tv_sec = t->tv_sec;
	ts.tv_nsec = t->tv_nsec;
	rc = io_uring_wait_cqe_timeout(&job->dev.ring, &cqe, &ts);
	return rc == 0 || rc == -EINTR;
}

static int fio_ernic_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			       const struct timespec *t)
{
	struct ernic_job *job = td->io_ops_data;
	struct timespec deadline, now;
	unsigned int spins = 0, ready;

	if (job->device) {
		for (;;) {
			if (job->dev.uring)
				ernic_reap(job);
			ready = ernic_done_count(job);
			if (ready >= min || !job->dev.uring || !ernic_dev_wait(job, t))
				break;
		}
		goto hand_over;
	}

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
	ernic_unlock(job);
hand_over:
	ernic_lock(job);
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

/* A first failure as JSON: opcode, status (SCT << 8 | SC) and its parts, DNR, errno; null when none. */
static void ernic_write_first(FILE *f, const struct ernic_first_error *first)
{
	if (!first->set)
		fputs("null", f);
	else if (first->st.nvme)
		fprintf(f,
			"{\"opc\": \"0x%02x\", \"status\": \"0x%04x\", \"sct\": %u, \"sc\": \"0x%02x\", \"dnr\": %s, "
			"\"errno\": %d}",
			first->opc, first->st.status, NVME_STATUS_SCT(first->st.status),
			NVME_STATUS_SC(first->st.status), first->st.dnr ? "true" : "false", first->st.err);
	else
		fprintf(f, "{\"opc\": \"0x%02x\", \"status\": null, \"errno\": %d}", first->opc, first->st.err);
}

/*
 * ", \"nvme_status\": {...}": the failed commands by status (SCT << 8 | SC
 * as 0x%04x), how many had DNR, how many ended without a status, and the
 * first failure exactly.
 */
static void ernic_write_errors(FILE *f, const struct ernic_errors *e)
{
	bool comma = false;

	fputs(", \"nvme_status\": {\"failed\": {", f);
	for (unsigned int st = 0; st < NVME_STATUS_COUNT; st++) {
		if (!e->status[st])
			continue;
		fprintf(f, "%s\"0x%04x\": %" PRIu64, comma ? ", " : "", st, e->status[st]);
		comma = true;
	}
	fprintf(f, "}, \"dnr\": %" PRIu64 ", \"no_status\": %" PRIu64 ", \"first\": ", e->dnr, e->no_status);
	ernic_write_first(f, &e->first);
	fputc('}', f);
}

/*
 * ", \"jobs\": [...]": per job that ended, its fio job number and name, its
 * I/Os and its first failure (what suites/run --batch judges a case by).
 */
static void ernic_write_results(FILE *f)
{
	fputs(", \"jobs\": [", f);
	for (unsigned int i = 0; i < ernic_run.nr_results; i++) {
		const struct ernic_job_result *r = &ernic_run.results[i];

		char name[6 * sizeof(r->name) + 3]; /* every byte escaped as \\u00XX at worst, and the quotes */
		size_t off = 0;

		json_put_str(name, sizeof(name), &off, r->name);
		fprintf(f, "%s{\"number\": %d, \"name\": %s, \"ios\": %" PRIu64 ", \"first\": ", i ? ", " : "",
			r->number, name, r->ios);
		ernic_write_first(f, &r->first);
		fputc('}', f);
	}
	fputc(']', f);
}

static int ernic_write_stats(const char *path)
{
	struct ernic_counters c;
	char *buf = NULL;
	FILE *f;
	int n;

	if (!ernic_run.device) {
		ernic_target_counters(ernic_run.tgt, &c);
		buf = ernic_counters_json_alloc(&c);
		if (!buf)
			return -ENOMEM;
	}
	f = fopen(path, "w");
	if (!f) {
		n = -errno;
		free(buf);
		return n;
	}
	/* The device path and the backend string (a file= path) are the user's: escaped as JSON strings. */
	if (ernic_run.device) {
		char dev[6 * sizeof(ernic_run.dev_path) + 3];
		size_t off = 0;

		json_put_str(dev, sizeof(dev), &off, ernic_run.dev_path);
		fprintf(f,
			"{\"mode\": \"device\", \"device\": %s, \"passthru\": \"%s\", \"fixedbufs\": %s, "
			"\"nsid\": %" PRIu32 ", \"lba_bytes\": %u, \"size_bytes\": %" PRIu64 ", \"mdts_bytes\": %" PRIu32,
			dev, ernic_run.passthru, ernic_run.fixedbufs ? "true" : "false", ernic_run.nsid,
			1u << ernic_run.lba_shift, ernic_run.ns_size, ernic_run.max_xfer);
	} else {
		size_t len = 6 * strlen(ernic_run.backend) + 3, off = 0;
		char *backend = malloc(len);

		if (!backend) {
			fclose(f);
			free(buf);
			return -ENOMEM;
		}
		json_put_str(backend, len, &off, ernic_run.backend);
		fprintf(f, "{\"mode\": \"inproc\", \"backend\": %s, \"io_queues\": %" PRIu32 ", \"mdts_bytes\": %u",
			backend, ernic_run.nr_queues, ernic_run.max_xfer);
		free(backend);
	}
	fprintf(f, ", \"ios\": %" PRIu64 ", \"capsules\": %" PRIu64 ", \"split_ios\": %" PRIu64, ernic_run.ios,
		ernic_run.capsules, ernic_run.split_ios);
	ernic_write_errors(f, &ernic_run.errors);
	ernic_write_results(f);
	if (buf)
		fprintf(f, ", \"target\": %s", buf);
	if (!ernic_run.device)
		ernic_write_stages(f);
	fputs("}\n", f);
	free(buf);
	if (fclose(f))
		return -errno;
	return 0;
}

static void ernic_errors_add(struct ernic_errors *to, const struct ernic_errors *from)
{
	for (unsigned int st = 0; st < NVME_STATUS_COUNT; st++)
		to->status[st] += from->status[st];
	to->dnr += from->dnr;
	to->no_status += from->no_status;
	if (!to->first.set)
		to->first = from->first;
}

/* Keep the job's outcome for the stats file. Called with ernic_run.lock held; out of memory only loses the record. */
static void ernic_result_add(struct thread_data *td, const struct ernic_job *job)
{
	struct ernic_job_result *r;

	r = realloc(ernic_run.results, (ernic_run.nr_results + 1) * sizeof(*r));
	if (!r)
		return;
	ernic_run.results = r;
	r += ernic_run.nr_results++;
	r->number = td->thread_number;
	snprintf(r->name, sizeof(r->name), "%s", td->o.name ? td->o.name : "");
	r->ios = job->ios;
	r->first = job->errors->first;
}

static void fio_ernic_cleanup(struct thread_data *td)
{
	struct ernic_job *job = td->io_ops_data;
	time_t deadline = time(NULL) + 10;

	if (!job)
		return;

	/*
	 * fio 3.33 calls this after it has reaped every I/O it issued
	 * (cleanup_pending_aio) and freed the I/O buffers (cleanup_io_u):
	 * nothing is normally in flight here, and draining cannot protect a
	 * buffer. Should a command still be in flight, its completion names
	 * this job's ernic_io and ernic_job, and on a qpair that other jobs or
	 * a later group keep using, whoever reaped it would write into this
	 * job after it is freed: let it land while the job still exists.
	 * Committed io_us with nothing posted are simply dropped.
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
			if (job->device && job->dev.uring) {
				struct timespec t = { .tv_sec = 1 };

				ernic_dev_wait(job, &t);
			} else {
				sched_yield();
			}
			ernic_lock(job);
		}
	}
	if (job->inflight_ios)
		log_err("ernic: %s: %u I/Os still in flight at exit\n", td->o.name, job->inflight_ios);
	job->done_head = job->done_tail;
	ernic_unlock(job);

	if (output_format & FIO_OUTPUT_NORMAL) {
		if (job->device)
			log_info("ernic: %s: %s (%s): %" PRIu64 " ios in %" PRIu64 " commands, %" PRIu64
				 " split at MDTS %u KiB\n",
				 td->o.name, ernic_run.dev_path, job->dev.uring ? "io_uring" : "ioctl", job->ios,
				 job->capsules, job->split_ios, job->max_xfer / 1024);
		else
			log_info("ernic: %s: qid %u: %" PRIu64 " ios in %" PRIu64 " capsules, %" PRIu64
				 " split at MDTS %u KiB\n",
				 td->o.name, job->qid, job->ios, job->capsules, job->split_ios, job->max_xfer / 1024);
	}

	pthread_mutex_lock(&ernic_run.lock);
	ernic_run.ios += job->ios;
	ernic_run.capsules += job->capsules;
	ernic_run.split_ios += job->split_ios;
	ernic_errors_add(&ernic_run.errors, job->errors);
	ernic_result_add(td, job);
	if (--ernic_run.refs == 0) {
		if (ernic_run.stats_path) {
			int rc = ernic_write_stats(ernic_run.stats_path);

			if (rc)
				log_err("ernic: writing %s: %s\n", ernic_run.stats_path, strerror(-rc));
		}
		/* The in-process target stays for a later group (ernic_run_exit()). */
		if (ernic_run.device)
			ernic_run_teardown();
	}
	pthread_mutex_unlock(&ernic_run.lock);

	ernic_job_free(job);
	td->io_ops_data = NULL;
}

struct ioengine_ops ioengine = {
	.name			= "ernic",
	.version		= FIO_IOOPS_VERSION,
	/*
	 * FIO_RAWIO as well as FIO_MEMALIGN: fio 3.33 only sizes the buffer area
	 * for alignment on the latter; the I/O buffers start on a page only for a
	 * direct or raw I/O engine. Off a page (malloc's 16 bytes), a 1 MiB
	 * passthrough spans 257 pages, one more than a bio maps at once: the
	 * kernel then makes a second bio, which an NVMe queue's virt boundary
	 * refuses to join, and the command fails with EINVAL unless the pages
	 * happen to be physically contiguous (a huge page, or a run of free
	 * pages on a fresh machine).
	 */
	.flags			= FIO_DISKLESSIO | FIO_NOEXTEND | FIO_MEMALIGN | FIO_RAWIO | FIO_ASYNCIO_SETS_ISSUE_TIME,
	.init			= fio_ernic_init,
	.post_init		= fio_ernic_post_init,
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
