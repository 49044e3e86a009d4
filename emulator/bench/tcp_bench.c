/* SPDX-License-Identifier: MIT */
/*
 * tcp_bench - target CPU time per I/O of an NVMe/TCP target, with an
 * initiator of our own.
 *
 * A minimal NVMe/TCP (TCP Transport Binding 1.0) host: ICReq, Connect of the
 * admin queue, Property Set CC.EN, Connect of one I/O queue, then random
 * reads or writes of --bs bytes kept --qd deep for --seconds. Writes up to
 * --icd bytes carry their data in the capsule, as a Linux host does for writes
 * within the controller's in-capsule size; larger ones are solicited by R2T
 * and sent as H2CData. The client batches as a host does: every capsule made
 * ready while reading one batch of responses goes out in one send().
 *
 * The target's CPU time is utime + stime of --pid (every thread) from
 * /proc/PID/stat before and after the measured seconds; divided by the I/Os
 * completed in them it is the CPU cost per I/O. Pin the target and this client
 * to different cores (taskset) so the one does not time-share with the other.
 *
 * Prints one line per run; --csv appends a row of kind tcpbench
 * (suites/csv-columns). Exit 0 when every I/O succeeded, 1 on a transport or
 * NVMe error, 2 on bad arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ernic/ernic.h"
#include "ernic/nvme_spec.h"

#define BENCH "tcp_bench"
#define BENCH_HOSTNQN "nqn.2024-01.org.ernic:tcp-bench"
#define BENCH_MAX_QD 1024u
#define BENCH_MAX_BS (1024u * 1024)
#define BENCH_RBUF (256u * 1024)
/* The admin queue uses cid 0..; I/O cids are slot numbers. */
#define BENCH_ADMIN_CID 0xfff0

static const char usage[] =
	"Usage: " BENCH " --pid PID [--addr ADDR] [--port PORT] [--nqn NQN] [--rw randread|randwrite]\n"
	"                 [--bs BYTES] [--qd N] [--seconds S] [--warmup S] [--span BYTES] [--icd BYTES]\n"
	"                 [--lba BYTES] [--csv FILE --commit ID]\n"
	"\n"
	"Random reads or writes on namespace 1 of an NVMe/TCP target over one I/O queue;\n"
	"prints IOPS and the target's CPU microseconds per I/O (utime+stime of PID).\n"
	"\n"
	"  --pid PID       the target process whose CPU time is measured\n"
	"  --addr ADDR     target IPv4 address (default 127.0.0.1)\n"
	"  --port PORT     target port (default 4420)\n"
	"  --nqn NQN       subsystem NQN (default " ERNIC_DEFAULT_SUBNQN ")\n"
	"  --rw MODE       randread or randwrite (default randread)\n"
	"  --bs BYTES      I/O size, a multiple of 512 up to 1 MiB (default 4096)\n"
	"  --qd N          commands kept outstanding, 1..1024 (default 32)\n"
	"  --seconds S     measured time (default 5)\n"
	"  --warmup S      unmeasured time before it (default 1)\n"
	"  --span BYTES    I/O falls in the first BYTES of the namespace (default 256 MiB)\n"
	"  --icd BYTES     writes up to this size go in the capsule; larger ones by R2T\n"
	"                  (default 131072, ernicd's in-capsule data size; 0: always R2T)\n"
	"  --lba BYTES     the namespace's LBA data size (default 4096, ernicd's bs=)\n"
	"  --csv FILE      append one row of kind tcpbench (suites/csv-columns) to FILE\n"
	"  --commit ID     the commit column of that row\n";

struct bench_opts {
	struct sockaddr_in sin;
	const char *nqn;
	const char *csv;
	const char *commit;
	int pid;
	bool write;
	uint32_t bs;
	uint32_t qd;
	double seconds;
	double warmup;
	uint64_t span;
	uint32_t icd;
	uint32_t lba; /* the namespace's LBA data size */
};

struct bench_conn {
	int fd;
	uint32_t maxh2cdata;
	uint8_t *rbuf;
	uint32_t rhead, rtail;
	uint8_t *tx; /* capsules waiting for the next flush */
	size_t tx_len, tx_cap;
	uint8_t *wdata; /* what every write sends */
};

static void __attribute__((noreturn)) bad_arg(const char *opt, const char *value, const char *why)
{
	fprintf(stderr, "%s: bad %s value '%s': %s\n", BENCH, opt, value, why);
	exit(2);
}

static uint64_t parse_u64(const char *opt, const char *value, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(value, &end, 10);
	if (errno || !value[0] || *end || value[0] == '-' || v < min || v > max) {
		char why[96];

		snprintf(why, sizeof(why), "expected a whole number %llu..%llu", (unsigned long long)min,
			 (unsigned long long)max);
		bad_arg(opt, value, why);
	}
	return v;
}

static double parse_seconds(const char *opt, const char *value)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(value, &end);
	if (errno || !value[0] || *end || !(v >= 0 && v <= 3600))
		bad_arg(opt, value, "expected seconds, 0..3600");
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime + stime of every thread of @pid, in seconds; negative when it cannot be read. */
static double proc_cpu_s(int pid, double *user)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: fields count from the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	*user = (double)ut / (double)sysconf(_SC_CLK_TCK);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int bench_flush(struct bench_conn *c)
{
	int err = send_all(c->fd, c->tx, c->tx_len);

	c->tx_len = 0;
	return err;
}

static void *bench_tx_reserve(struct bench_conn *c, size_t len)
{
	void *p;

	if (c->tx_len + len > c->tx_cap && bench_flush(c))
		return NULL;
	p = c->tx + c->tx_len;
	c->tx_len += len;
	return p;
}

/* At least @len bytes buffered; 0 or an errno. */
static int bench_fill(struct bench_conn *c, uint32_t len)
{
	if (len > BENCH_RBUF)
		return EMSGSIZE;
	if (c->rhead + len > BENCH_RBUF) {
		memmove(c->rbuf, c->rbuf + c->rhead, c->rtail - c->rhead);
		c->rtail -= c->rhead;
		c->rhead = 0;
	}
	while (c->rtail - c->rhead < len) {
		ssize_t n = recv(c->fd, c->rbuf + c->rtail, BENCH_RBUF - c->rtail, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? ETIMEDOUT : errno;
		if (n == 0)
			return ECONNRESET;
		c->rtail += (uint32_t)n;
	}
	return 0;
}

/* The next whole PDU, left in rbuf at *pdu until the next call. */
static int bench_next_pdu(struct bench_conn *c, const struct nvme_tcp_hdr **pdu)
{
	const struct nvme_tcp_hdr *ch;
	int err = bench_fill(c, sizeof(*ch));

	if (err)
		return err;
	ch = (const void *)(c->rbuf + c->rhead);
	if (ch->type == NVME_TCP_C2H_TERM || ch->plen < sizeof(*ch))
		return EPROTO;
	err = bench_fill(c, ch->plen);
	if (err)
		return err;
	*pdu = (const void *)(c->rbuf + c->rhead);
	c->rhead += (*pdu)->plen;
	return 0;
}

static int bench_capsule(struct bench_conn *c, const struct nvme_sqe *sqe, const void *data, uint32_t dlen)
{
	struct nvme_tcp_cmd_pdu *pdu = bench_tx_reserve(c, sizeof(*pdu) + dlen);

	if (!pdu)
		return EPIPE;
	memset(pdu, 0, sizeof(*pdu));
	pdu->hdr.type = NVME_TCP_CMD;
	pdu->hdr.hlen = sizeof(*pdu);
	/* No digests and CPDA 0 (our ICReq asked for neither): data follows the header. */
	pdu->hdr.pdo = dlen ? sizeof(*pdu) : 0;
	pdu->hdr.plen = (uint32_t)sizeof(*pdu) + dlen;
	pdu->cmd = *sqe;
	if (dlen)
		memcpy(pdu + 1, data, dlen);
	return 0;
}

/* One admin command with optional in-capsule data; its CQE status, or -errno. */
static int bench_admin(struct bench_conn *c, const void *sqe, const void *data, uint32_t dlen, struct nvme_cqe *cqe)
{
	const struct nvme_tcp_hdr *pdu;
	int err = bench_capsule(c, sqe, data, dlen);

	if (!err)
		err = bench_flush(c);
	if (!err)
		err = bench_next_pdu(c, &pdu);
	if (err)
		return -err;
	if (pdu->type != NVME_TCP_RSP)
		return -EPROTO;
	*cqe = ((const struct nvme_tcp_rsp_pdu *)pdu)->cqe;
	return nvme_cqe_status(cqe);
}

static int bench_connect(struct bench_conn *c, const struct bench_opts *o, uint16_t qid, uint16_t sqsize,
			 uint16_t *cntlid)
{
	struct nvme_tcp_icreq_pdu icreq = {
		.hdr = { .type = NVME_TCP_ICREQ, .hlen = sizeof(icreq), .plen = sizeof(icreq) },
		.pfv = NVME_TCP_PFV_1_0,
	};
	struct nvmf_connect_cmd cmd = {
		.opc = NVME_FABRICS_COMMAND,
		.cid = BENCH_ADMIN_CID,
		.fctype = NVMF_FCTYPE_CONNECT,
		.qid = qid,
		.sqsize = sqsize,
	};
	const struct nvme_tcp_icresp_pdu *icresp;
	const struct nvme_tcp_hdr *pdu;
	struct nvmf_connect_data data;
	struct nvme_cqe cqe;
	int one = 1, err, st;

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return errno;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (const struct sockaddr *)&o->sin, sizeof(o->sin)))
		return errno;
	err = send_all(c->fd, &icreq, sizeof(icreq));
	if (!err)
		err = bench_next_pdu(c, &pdu);
	if (err)
		return err;
	icresp = (const void *)pdu;
	if (pdu->type != NVME_TCP_ICRESP || pdu->plen != sizeof(*icresp) || icresp->maxdata < 4096)
		return EPROTO;
	c->maxh2cdata = icresp->maxdata;

	memset(&data, 0, sizeof(data));
	memcpy(data.hostid, "ernic-tcp-bench", 15);
	data.cntlid = *cntlid;
	snprintf(data.subnqn, sizeof(data.subnqn), "%s", o->nqn);
	snprintf(data.hostnqn, sizeof(data.hostnqn), "%s", BENCH_HOSTNQN);
	cmd.sgl.id = NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET);
	cmd.sgl.unkeyed.length = sizeof(data);
	st = bench_admin(c, &cmd, &data, sizeof(data), &cqe);
	if (st) {
		fprintf(stderr, "%s: Connect qid %u: %s\n", BENCH, qid, st < 0 ? strerror(-st) : ernic_status_str((uint16_t)st));
		return st < 0 ? -st : EPROTO;
	}
	*cntlid = (uint16_t)cqe.dw0;
	return 0;
}

/* CC.EN with the entry sizes an NVM controller requires (Base 3.1.5: IOSQES 6, IOCQES 4). */
static int bench_enable(struct bench_conn *c)
{
	struct nvmf_property_cmd cmd = {
		.opc = NVME_FABRICS_COMMAND,
		.cid = BENCH_ADMIN_CID,
		.fctype = NVMF_FCTYPE_PROPERTY_SET,
		.ofst = NVME_REG_CC,
		.value = NVME_CC_EN | NVME_CC_NVM_ENTRY_SIZES,
	};
	struct nvme_cqe cqe;
	int st = bench_admin(c, &cmd, NULL, 0, &cqe);

	if (st)
		fprintf(stderr, "%s: Property Set CC.EN: %s\n", BENCH, st < 0 ? strerror(-st) : ernic_status_str((uint16_t)st));
	return st ? EPROTO : 0;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Queue I/O command @cid at a random offset. */
static int bench_submit(struct bench_conn *c, const struct bench_opts *o, uint16_t cid, uint64_t *rnd)
{
	uint64_t slots = o->span / o->bs;
	uint64_t slba = xorshift(rnd) % slots * (o->bs / o->lba);
	struct nvme_sqe sqe = {
		.opc = o->write ? NVME_CMD_WRITE : NVME_CMD_READ,
		.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG,
		.cid = cid,
		.nsid = 1,
		.cdw10 = (uint32_t)slba,
		.cdw11 = (uint32_t)(slba >> 32),
		.cdw12 = o->bs / o->lba - 1,
	};
	bool icd = o->write && o->bs <= o->icd;

	sqe.dptr.unkeyed.length = o->bs;
	sqe.dptr.id = icd ? NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET)
			  : NVME_SGL_ID(NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK, NVME_SGL_SUBTYPE_TRANSPORT);
	return bench_capsule(c, &sqe, icd ? c->wdata : NULL, icd ? o->bs : 0);
}

/* H2CData for what an R2T asked, in PDUs of at most MAXH2CDATA. */
static int bench_h2c(struct bench_conn *c, const struct nvme_tcp_r2t_pdu *r2t)
{
	for (uint32_t off = 0; off < r2t->r2tl;) {
		uint32_t len = r2t->r2tl - off < c->maxh2cdata ? r2t->r2tl - off : c->maxh2cdata;
		struct nvme_tcp_data_pdu pdu = {
			.hdr = { .type = NVME_TCP_H2C_DATA, .hlen = sizeof(pdu), .pdo = sizeof(pdu),
				 .plen = (uint32_t)sizeof(pdu) + len },
			.cccid = r2t->cccid,
			.ttag = r2t->ttag,
			.datao = r2t->r2to + off,
			.datal = len,
		};
		struct iovec iov[2] = { { &pdu, sizeof(pdu) }, { c->wdata + off, len } };
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
		size_t want = sizeof(pdu) + len;

		if (off + len == r2t->r2tl)
			pdu.hdr.flags = NVME_TCP_F_DATA_LAST;
		/* Capsules queued so far go first; the target reads PDUs in order either way. */
		if (c->tx_len && bench_flush(c))
			return EPIPE;
		while (want) {
			ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n < 0 ? errno : ECONNRESET;
			want -= (size_t)n;
			while (msg.msg_iovlen && (size_t)n >= msg.msg_iov->iov_len) {
				n -= (ssize_t)msg.msg_iov->iov_len;
				msg.msg_iov++;
				msg.msg_iovlen--;
			}
			if (msg.msg_iovlen) {
				msg.msg_iov->iov_base = (uint8_t *)msg.msg_iov->iov_base + n;
				msg.msg_iov->iov_len -= (size_t)n;
			}
		}
		off += len;
	}
	return 0;
}

struct bench_result {
	uint64_t ios;
	double seconds;
	double cpu_s, user_s;
};

/*
 * Keep @o->qd commands outstanding until the warm-up and the measured time
 * are over; every completion is answered by a new command, flushed once per
 * batch of responses read.
 */
static int bench_run(struct bench_conn *c, const struct bench_opts *o, struct bench_result *r)
{
	uint64_t rnd = 0x9e3779b97f4a7c15ull, ios = 0, ios0 = 0;
	double t0 = now_s(), start = 0, cpu0 = 0, user0 = 0, user1, end;
	bool measuring = false, stopping = false;
	uint32_t outstanding = 0;
	int err;

	for (uint16_t cid = 0; cid < o->qd; cid++) {
		err = bench_submit(c, o, cid, &rnd);
		if (err)
			return err;
		outstanding++;
	}
	while (outstanding) {
		const struct nvme_tcp_hdr *pdu;

		if (c->tx_len && c->rhead == c->rtail && (err = bench_flush(c)))
			return err;
		err = bench_next_pdu(c, &pdu);
		if (err)
			return err;
		if (pdu->type == NVME_TCP_C2H_DATA) {
			const struct nvme_tcp_data_pdu *d = (const void *)pdu;

			/* SUCCESS on the last C2HData stands for the CapsuleResp (SQ flow control disabled). */
			if (!(d->hdr.flags & NVME_TCP_F_DATA_SUCCESS))
				continue;
		} else if (pdu->type == NVME_TCP_R2T) {
			err = bench_h2c(c, (const void *)pdu);
			if (err)
				return err;
			continue;
		} else if (pdu->type != NVME_TCP_RSP) {
			return EPROTO;
		} else if (nvme_cqe_status(&((const struct nvme_tcp_rsp_pdu *)pdu)->cqe)) {
			fprintf(stderr, "%s: I/O failed: %s\n", BENCH,
				ernic_status_str(nvme_cqe_status(&((const struct nvme_tcp_rsp_pdu *)pdu)->cqe)));
			return EIO;
		}
		outstanding--;
		ios++;
		if (stopping)
			continue;
		end = now_s();
		if (!measuring && end - t0 >= o->warmup) {
			measuring = true;
			start = end;
			ios0 = ios;
			cpu0 = proc_cpu_s(o->pid, &user0);
			if (cpu0 < 0)
				return ESRCH;
		} else if (measuring && end - start >= o->seconds) {
			r->cpu_s = proc_cpu_s(o->pid, &user1) - cpu0;
			r->user_s = user1 - user0;
			r->seconds = end - start;
			r->ios = ios - ios0;
			stopping = true;
			continue;
		}
		err = bench_submit(c, o, (uint16_t)(pdu->type == NVME_TCP_RSP ? ((const struct nvme_tcp_rsp_pdu *)pdu)->cqe.cid
									    : ((const struct nvme_tcp_data_pdu *)pdu)->cccid),
				   &rnd);
		if (err)
			return err;
		outstanding++;
	}
	return 0;
}

static void bench_parse(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },     { "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'P' },    { "nqn", required_argument, NULL, 'n' },
		{ "rw", required_argument, NULL, 'r' },	     { "bs", required_argument, NULL, 'b' },
		{ "qd", required_argument, NULL, 'q' },	     { "seconds", required_argument, NULL, 's' },
		{ "warmup", required_argument, NULL, 'w' },  { "span", required_argument, NULL, 'S' },
		{ "icd", required_argument, NULL, 'i' },     { "csv", required_argument, NULL, 'c' },
		{ "commit", required_argument, NULL, 'C' },  { "lba", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	*o = (struct bench_opts){ .nqn = ERNIC_DEFAULT_SUBNQN, .bs = 4096, .qd = 32, .seconds = 5, .warmup = 1,
				  .span = 256ull << 20, .icd = 131072, .lba = 4096, .commit = "unknown" };
	o->sin.sin_family = AF_INET;
	o->sin.sin_port = htons(4420);
	o->sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			o->pid = (int)parse_u64("--pid", optarg, 1, 0x7fffffff);
			break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &o->sin.sin_addr) != 1)
				bad_arg("--addr", optarg, "not a numeric IPv4 address");
			break;
		case 'P':
			o->sin.sin_port = htons((uint16_t)parse_u64("--port", optarg, 1, 65535));
			break;
		case 'n':
			if (!optarg[0] || strlen(optarg) >= NVMF_NQN_SIZE)
				bad_arg("--nqn", optarg, "empty or longer than 223 bytes");
			o->nqn = optarg;
			break;
		case 'r':
			if (strcmp(optarg, "randread") && strcmp(optarg, "randwrite"))
				bad_arg("--rw", optarg, "expected randread or randwrite");
			o->write = !strcmp(optarg, "randwrite");
			break;
		case 'b':
			o->bs = (uint32_t)parse_u64("--bs", optarg, 512, BENCH_MAX_BS);
			if (o->bs % 512)
				bad_arg("--bs", optarg, "not a multiple of 512");
			break;
		case 'q':
			o->qd = (uint32_t)parse_u64("--qd", optarg, 1, BENCH_MAX_QD);
			break;
		case 's':
			o->seconds = parse_seconds("--seconds", optarg);
			break;
		case 'w':
			o->warmup = parse_seconds("--warmup", optarg);
			break;
		case 'S':
			o->span = parse_u64("--span", optarg, 512, 1ull << 50);
			break;
		case 'i':
			o->icd = (uint32_t)parse_u64("--icd", optarg, 0, 1u << 20);
			break;
		case 'l':
			o->lba = (uint32_t)parse_u64("--lba", optarg, 512, 65536);
			if (o->lba & (o->lba - 1))
				bad_arg("--lba", optarg, "not a power of two");
			break;
		case 'c':
			o->csv = optarg;
			break;
		case 'C':
			o->commit = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fputs(usage, stderr);
			exit(2);
		}
	}
	if (optind < argc)
		bad_arg("argument", argv[optind], "no positional arguments are taken");
	if (!o->pid) {
		fprintf(stderr, "%s: --pid is required: the target whose CPU time is measured\n", BENCH);
		exit(2);
	}
	if (o->bs % o->lba)
		bad_arg("--bs", "(not a multiple of --lba)", "an I/O is whole LBAs");
	if (o->span < o->bs)
		bad_arg("--span", "(smaller than --bs)", "must hold at least one I/O");
}

int main(int argc, char **argv)
{
	struct bench_conn admin = { .fd = -1 }, io = { .fd = -1 };
	struct bench_opts o;
	struct bench_result r = { 0 };
	uint16_t cntlid = NVMF_CNTLID_DYNAMIC;
	char host[64] = "unknown";
	double user;
	int err;

	bench_parse(argc, argv, &o);
	if (proc_cpu_s(o.pid, &user) < 0) {
		fprintf(stderr, "%s: bad --pid value '%d': no /proc/%d/stat to read\n", BENCH, o.pid, o.pid);
		return 2;
	}
	admin.rbuf = malloc(BENCH_RBUF);
	io.rbuf = malloc(BENCH_RBUF);
	admin.tx_cap = 64 * 1024;
	io.tx_cap = (size_t)o.qd * (sizeof(struct nvme_tcp_cmd_pdu) + (o.bs <= o.icd ? o.bs : 0));
	admin.tx = malloc(admin.tx_cap);
	io.tx = malloc(io.tx_cap);
	io.wdata = calloc(1, o.bs);
	if (!admin.rbuf || !io.rbuf || !admin.tx || !io.tx || !io.wdata) {
		fprintf(stderr, "%s: out of memory\n", BENCH);
		return 1;
	}
	memset(io.wdata, 0xa5, o.bs);
	err = bench_connect(&admin, &o, 0, 31, &cntlid);
	if (!err)
		err = bench_enable(&admin);
	/* SQSIZE is 0's based: qd + 1 entries, so qd commands never fill the queue. */
	if (!err)
		err = bench_connect(&io, &o, 1, (uint16_t)o.qd, &cntlid);
	if (!err)
		err = bench_run(&io, &o, &r);
	if (err) {
		fprintf(stderr, "%s: %s\n", BENCH, strerror(err));
		return 1;
	}
	double iops = (double)r.ios / r.seconds;
	double us_per_io = r.ios ? r.cpu_s * 1e6 / (double)r.ios : 0;
	double util = r.cpu_s / r.seconds;

	printf("%s bs=%u qd=%u: %.0f IOPS, target %.2f CPU-us/IO (%.0f%% of a core, %.0f%% of it user)\n",
	       o.write ? "randwrite" : "randread", o.bs, o.qd, iops, us_per_io, util * 100,
	       r.cpu_s > 0 ? r.user_s * 100 / r.cpu_s : 0);
	if (o.csv) {
		FILE *f = fopen(o.csv, "a");
		time_t t = time(NULL);
		char ts[32];

		if (!f) {
			fprintf(stderr, "%s: cannot append to %s: %s\n", BENCH, o.csv, strerror(errno));
			return 1;
		}
		gethostname(host, sizeof(host) - 1);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
		fprintf(f, "%s,%s,%s,%s,%u,%u,%.1f,%.0f,%.3f,%.3f\n", ts, o.commit, host,
			o.write ? "randwrite" : "randread", o.bs, o.qd, r.seconds, iops, us_per_io, util);
		fclose(f);
	}
	close(admin.fd);
	close(io.fd);
	return 0;
}
