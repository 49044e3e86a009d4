/* SPDX-License-Identifier: MIT */
/*
 * nvmf_tcp_load - load an NVMe/TCP target with connections and controllers.
 *
 * Speaks just enough NVMe/TCP (TCP Transport Binding 1.0) to make a target
 * create and destroy controllers: ICReq, then a Fabrics Connect on the admin
 * queue with its data in the capsule, optionally a Property Set of CC.EN, then
 * close. No Identify, no I/O queue, no Keep Alive: a host the target must
 * still account for and clean up after.
 *
 *   --connections N   N connections opened and closed one after another
 *   --discovery N     N discovery controllers, all held open at once
 *   --controllers N   N admin queues of the subsystem NQN from N distinct host
 *                     NQNs, all held open at once (after the discovery ones)
 *   --hold SECONDS    how long the held ones stay open before all are closed
 *
 * Prints one line: per mode, Connects that succeeded, those refused with an
 * NVMe status (counted by status) and those that failed at the transport
 * (refused TCP connect, reset, timeout, TermReq). Exit 0 when nothing failed
 * at the transport, 1 otherwise, 2 on bad arguments. A refusal is an answer,
 * not a failure: which refusals are right is for the caller to judge.
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ernic/ernic.h"
#include "ernic/nvme_spec.h"

#define LOAD "nvmf_tcp_load"
#define LOAD_HOSTNQN_FMT "nqn.2024-01.org.ernic:load-host-%u"
/* Failures printed in full on stderr; the rest are only counted. */
#define LOAD_MAX_REPORTS 5
#define LOAD_MAX_COUNT 1000000u
#define LOAD_MAX_HOLD_S 3600u

static const char usage[] =
	"Usage: " LOAD " [--addr ADDR] [--port PORT] [--nqn NQN] [--connections N] [--discovery N]\n"
	"              [--controllers N] [--hold SECONDS] [--enable] [--kato MS] [--timeout SECONDS]\n"
	"\n"
	"Open NVMe/TCP connections to a target: ICReq, an admin Connect (data in the capsule),\n"
	"optionally Property Set CC.EN, close.\n"
	"\n"
	"  --addr ADDR         target IPv4 address (default 127.0.0.1)\n"
	"  --port PORT         target port (default 4420)\n"
	"  --nqn NQN           subsystem NQN for --connections and --controllers (default " ERNIC_DEFAULT_SUBNQN
	")\n"
	"  --connections N     open and close N connections, one after another\n"
	"  --discovery N       hold N discovery controllers open at once\n"
	"  --controllers N     hold N controllers of NQN open at once, from N distinct host NQNs\n"
	"  --hold SECONDS      how long the held controllers stay open (default 0)\n"
	"  --enable            Property Set CC.EN after each successful Connect\n"
	"  --kato MS           Keep Alive Timeout sent in Connect (default 0: none asked for)\n"
	"  --timeout SECONDS   wait for each response at most this long (default 10)\n"
	"\n"
	"Prints one line: per mode, ok / refused (by NVMe status) / failed (transport). Exit 0 when\n"
	"no Connect failed at the transport, 1 otherwise, 2 on bad arguments.\n";

struct load_opts {
	struct sockaddr_in sin;
	const char *subnqn;
	unsigned int connections;
	unsigned int discovery;
	unsigned int controllers;
	unsigned int hold_s;
	unsigned int kato_ms;
	unsigned int timeout_s;
	bool enable;
};

/* What one mode saw. */
struct load_result {
	const char *mode;
	unsigned int tried;
	unsigned int ok;
	unsigned int refused;
	unsigned int failed;
	unsigned int by_status[NVME_STATUS_COUNT];
	unsigned int enable_failed; /* Property Set CC.EN answered with a status */
	double seconds;
};

static unsigned int reports;

static void __attribute__((noreturn)) bad_arg(const char *opt, const char *value, const char *why)
{
	fprintf(stderr, "%s: bad %s value '%s': %s\n", LOAD, opt, value, why);
	exit(2);
}

static unsigned int parse_uint(const char *opt, const char *value, unsigned int max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno || !value[0] || *end || value[0] == '-' || v > max) {
		char why[64];

		snprintf(why, sizeof(why), "expected a whole number 0..%u", max);
		bad_arg(opt, value, why);
	}
	return (unsigned int)v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(const char *mode, unsigned int host, const char *what, int err)
{
	if (reports++ >= LOAD_MAX_REPORTS)
		return;
	fprintf(stderr, "%s: %s #%u: %s%s%s\n", LOAD, mode, host, what, err ? ": " : "", err ? strerror(err) : "");
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

static int recv_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? ETIMEDOUT : errno;
		if (n == 0)
			return ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Send one capsule (with in-capsule data when dlen is not 0) and read its
 * CapsuleResp. Returns 0 with the CQE, or an errno; EPROTO for a TermReq or a
 * PDU that is not the response.
 */
static int load_exec(int fd, const struct nvme_sqe *sqe, const void *data, uint32_t dlen, struct nvme_cqe *cqe)
{
	struct {
		struct nvme_tcp_cmd_pdu pdu;
		uint8_t data[sizeof(struct nvmf_connect_data)];
	} __attribute__((packed)) capsule;
	struct nvme_tcp_rsp_pdu rsp;
	int err;

	if (dlen > sizeof(capsule.data))
		return EINVAL;
	memset(&capsule.pdu, 0, sizeof(capsule.pdu));
	capsule.pdu.hdr.type = NVME_TCP_CMD;
	capsule.pdu.hdr.hlen = sizeof(capsule.pdu);
	/* No header digest and CPDA 0 (our ICReq asked for neither), so data follows the header. */
	capsule.pdu.hdr.pdo = dlen ? sizeof(capsule.pdu) : 0;
	capsule.pdu.hdr.plen = (uint32_t)sizeof(capsule.pdu) + dlen;
	capsule.pdu.cmd = *sqe;
	if (dlen)
		memcpy(capsule.data, data, dlen);
	err = send_all(fd, &capsule, sizeof(capsule.pdu) + dlen);
	if (err)
		return err;
	err = recv_all(fd, &rsp.hdr, sizeof(rsp.hdr));
	if (err)
		return err;
	if (rsp.hdr.type != NVME_TCP_RSP || rsp.hdr.plen != sizeof(rsp))
		return EPROTO;
	err = recv_all(fd, &rsp.cqe, sizeof(rsp.cqe));
	if (err)
		return err;
	*cqe = rsp.cqe;
	return 0;
}

static int load_icreq(int fd)
{
	struct nvme_tcp_icreq_pdu icreq = {
		.hdr = { .type = NVME_TCP_ICREQ, .hlen = sizeof(icreq), .plen = sizeof(icreq) },
		.pfv = NVME_TCP_PFV_1_0,
	};
	struct nvme_tcp_icresp_pdu icresp;
	int err = send_all(fd, &icreq, sizeof(icreq));

	if (!err)
		err = recv_all(fd, &icresp, sizeof(icresp));
	if (!err && (icresp.hdr.type != NVME_TCP_ICRESP || icresp.hdr.plen != sizeof(icresp)))
		err = EPROTO;
	return err;
}

/* Fabrics Connect on the admin queue (Fabrics 3.3), its 1 KiB of data in the capsule. */
static int load_connect(int fd, const struct load_opts *o, const char *subnqn, unsigned int host, struct nvme_cqe *cqe)
{
	struct nvmf_connect_cmd cmd = {
		.opc = NVME_FABRICS_COMMAND,
		.cid = 1,
		.fctype = NVMF_FCTYPE_CONNECT,
		.qid = 0,
		.sqsize = 31, /* 0's based: the 32-entry admin queue every controller accepts */
		.kato = o->kato_ms,
	};
	struct nvmf_connect_data data;

	memset(&data, 0, sizeof(data));
	/* A distinct Host Identifier per host NQN, as distinct hosts would have. */
	memcpy(data.hostid, "ernic-load-", 11);
	data.hostid[12] = (uint8_t)(host >> 24);
	data.hostid[13] = (uint8_t)(host >> 16);
	data.hostid[14] = (uint8_t)(host >> 8);
	data.hostid[15] = (uint8_t)host;
	data.cntlid = NVMF_CNTLID_DYNAMIC;
	snprintf(data.subnqn, sizeof(data.subnqn), "%s", subnqn);
	snprintf(data.hostnqn, sizeof(data.hostnqn), LOAD_HOSTNQN_FMT, host);
	cmd.sgl.id = NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET);
	cmd.sgl.addr = 0;
	cmd.sgl.unkeyed.length = sizeof(data);
	return load_exec(fd, (const struct nvme_sqe *)&cmd, &data, sizeof(data), cqe);
}

/* CC.EN with the entry sizes an NVM controller requires (Base 3.1.5: IOSQES 6, IOCQES 4). */
static int load_enable(int fd, struct nvme_cqe *cqe)
{
	struct nvmf_property_cmd cmd = {
		.opc = NVME_FABRICS_COMMAND,
		.cid = 2,
		.fctype = NVMF_FCTYPE_PROPERTY_SET,
		.attrib = 0,
		.ofst = NVME_REG_CC,
		.value = NVME_CC_EN | NVME_CC_NVM_ENTRY_SIZES,
	};

	return load_exec(fd, (const struct nvme_sqe *)&cmd, NULL, 0, cqe);
}

/*
 * One host: TCP connect, ICReq, Connect, CC.EN if asked. Returns the socket
 * when the Connect succeeded, -1 otherwise (the outcome counted in r).
 */
static int load_open(const struct load_opts *o, const char *subnqn, unsigned int host, struct load_result *r)
{
	struct timeval tv = { .tv_sec = o->timeout_s };
	struct nvme_cqe cqe;
	int one = 1;
	uint16_t status;
	int fd, err;

	r->tried++;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		report(r->mode, host, "socket", errno);
		r->failed++;
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (const struct sockaddr *)&o->sin, sizeof(o->sin))) {
		err = errno;
		report(r->mode, host, "TCP connect", err);
		goto failed;
	}
	err = load_icreq(fd);
	if (err) {
		report(r->mode, host, "ICReq/ICResp", err);
		goto failed;
	}
	err = load_connect(fd, o, subnqn, host, &cqe);
	if (err) {
		report(r->mode, host, "Connect", err);
		goto failed;
	}
	status = nvme_cqe_status(&cqe);
	if (status) {
		r->refused++;
		r->by_status[status]++;
		close(fd);
		return -1;
	}
	r->ok++;
	if (o->enable) {
		err = load_enable(fd, &cqe);
		if (err) {
			/* The Connect was accepted: the controller exists, the transport then broke. */
			report(r->mode, host, "Property Set CC.EN", err);
			r->ok--;
			goto failed;
		}
		if (nvme_cqe_status(&cqe))
			r->enable_failed++;
	}
	return fd;
failed:
	r->failed++;
	close(fd);
	return -1;
}

static void load_churn(const struct load_opts *o, struct load_result *r)
{
	double t0 = now_s();

	for (unsigned int i = 0; i < o->connections; i++) {
		int fd = load_open(o, o->subnqn, i, r);

		if (fd >= 0)
			close(fd);
	}
	r->seconds = now_s() - t0;
}

/* Open n hosts and keep the sockets of those that connected in fds[]. */
static void load_hold_open(const struct load_opts *o, const char *subnqn, unsigned int n, unsigned int host0,
			   struct load_result *r, int *fds)
{
	double t0 = now_s();

	for (unsigned int i = 0; i < n; i++)
		fds[i] = load_open(o, subnqn, host0 + i, r);
	r->seconds = now_s() - t0;
}

static void print_result(const struct load_result *r, bool first)
{
	unsigned int shown = 0;

	printf("%s%s: tried=%u ok=%u refused=%u", first ? "" : "; ", r->mode, r->tried, r->ok, r->refused);
	for (unsigned int s = 0; s < NVME_STATUS_COUNT; s++) {
		if (!r->by_status[s])
			continue;
		printf("%s%s=%u", shown++ ? "," : " (", ernic_status_str((uint16_t)s), r->by_status[s]);
	}
	if (shown)
		printf(")");
	printf(" failed=%u", r->failed);
	if (r->enable_failed)
		printf(" cc_en_refused=%u", r->enable_failed);
	printf(" seconds=%.2f", r->seconds);
}

static void raise_fd_limit(unsigned int need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need + 16)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need + 16 ? need + 16 : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

static void parse_args(int argc, char **argv, struct load_opts *o)
{
	enum { OPT_ADDR = 'a', OPT_PORT = 'p', OPT_NQN = 'n', OPT_CONNECTIONS = 'c', OPT_DISCOVERY = 'd',
	       OPT_CONTROLLERS = 'C', OPT_HOLD = 'H', OPT_ENABLE = 'e', OPT_KATO = 'k', OPT_TIMEOUT = 't',
	       OPT_HELP = 'h' };
	static const struct option longopts[] = {
		{ "addr", required_argument, NULL, OPT_ADDR },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "nqn", required_argument, NULL, OPT_NQN },
		{ "connections", required_argument, NULL, OPT_CONNECTIONS },
		{ "discovery", required_argument, NULL, OPT_DISCOVERY },
		{ "controllers", required_argument, NULL, OPT_CONTROLLERS },
		{ "hold", required_argument, NULL, OPT_HOLD },
		{ "enable", no_argument, NULL, OPT_ENABLE },
		{ "kato", required_argument, NULL, OPT_KATO },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->sin.sin_family = AF_INET;
	o->sin.sin_port = htons(4420);
	o->sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	o->subnqn = ERNIC_DEFAULT_SUBNQN;
	o->timeout_s = 10;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ADDR:
			if (inet_pton(AF_INET, optarg, &o->sin.sin_addr) != 1)
				bad_arg("--addr", optarg, "not a numeric IPv4 address");
			break;
		case OPT_PORT: {
			unsigned int port = parse_uint("--port", optarg, 65535);

			if (!port)
				bad_arg("--port", optarg, "port must be 1..65535");
			o->sin.sin_port = htons((uint16_t)port);
			break;
		}
		case OPT_NQN:
			/* An NQN is at most 223 bytes (Base 4.5). */
			if (!optarg[0] || strlen(optarg) > 223)
				bad_arg("--nqn", optarg, "must be 1..223 characters");
			o->subnqn = optarg;
			break;
		case OPT_CONNECTIONS:
			o->connections = parse_uint("--connections", optarg, LOAD_MAX_COUNT);
			break;
		case OPT_DISCOVERY:
			o->discovery = parse_uint("--discovery", optarg, LOAD_MAX_COUNT);
			break;
		case OPT_CONTROLLERS:
			o->controllers = parse_uint("--controllers", optarg, LOAD_MAX_COUNT);
			break;
		case OPT_HOLD:
			o->hold_s = parse_uint("--hold", optarg, LOAD_MAX_HOLD_S);
			break;
		case OPT_ENABLE:
			o->enable = true;
			break;
		case OPT_KATO:
			o->kato_ms = parse_uint("--kato", optarg, UINT32_MAX);
			break;
		case OPT_TIMEOUT:
			o->timeout_s = parse_uint("--timeout", optarg, LOAD_MAX_HOLD_S);
			if (!o->timeout_s)
				bad_arg("--timeout", optarg, "must be at least 1");
			break;
		case OPT_HELP:
			fputs(usage, stdout);
			exit(0);
		case ':':
			fprintf(stderr, "%s: option '%s' needs a value\n", LOAD, argv[optind - 1]);
			exit(2);
		default:
			fprintf(stderr, "%s: unknown option '%s' (try --help)\n", LOAD, argv[optind - 1]);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", LOAD, argv[optind]);
		exit(2);
	}
	if (!o->connections && !o->discovery && !o->controllers) {
		fprintf(stderr, "%s: nothing to do: give --connections, --discovery or --controllers (try --help)\n",
			LOAD);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	static struct load_result churn = { .mode = "connections" }, disc = { .mode = "discovery" },
				  ctrl = { .mode = "controllers" };
	struct load_opts o = { 0 };
	int *fds;
	bool first = true;

	parse_args(argc, argv, &o);
	raise_fd_limit(o.discovery + o.controllers);
	fds = calloc((size_t)o.discovery + o.controllers + 1, sizeof(*fds));
	if (!fds) {
		fprintf(stderr, "%s: out of memory\n", LOAD);
		return 1;
	}

	if (o.connections)
		load_churn(&o, &churn);
	/* Discovery controllers first: they must not take the slots the subsystem's hosts need. */
	load_hold_open(&o, NVMF_DISC_NQN, o.discovery, 0, &disc, fds);
	load_hold_open(&o, o.subnqn, o.controllers, o.discovery, &ctrl, fds + o.discovery);
	if (o.discovery + o.controllers && o.hold_s)
		sleep(o.hold_s);
	for (unsigned int i = 0; i < o.discovery + o.controllers; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);

	printf("%s: ", LOAD);
	if (o.connections) {
		print_result(&churn, first);
		first = false;
	}
	if (o.discovery) {
		print_result(&disc, first);
		first = false;
	}
	if (o.controllers)
		print_result(&ctrl, first);
	printf("\n");
	fflush(stdout);
	return churn.failed || disc.failed || ctrl.failed ? 1 : 0;
}
