/* SPDX-License-Identifier: MIT */
/*
 * ernicd - the NVMe over Fabrics daemon: subsystems of libernic's controller
 * core, served over NVMe/TCP to any host (the Linux kernel's nvme-tcp,
 * nvme-cli) or, with --transport rdma, over NVMe/RDMA to the kernel's
 * nvme-rdma through an RDMA device (an RNIC, or soft-RoCE). The command line
 * describes the first subsystem; --config and the control socket (ernicctl)
 * add, change and remove subsystems, namespaces, NVMe/TCP listeners and ANA
 * states at run time.
 *
 * Signals are blocked in every thread and taken synchronously here with
 * sigwait(), so the handlers are ordinary code: SIGUSR1 prints the counters,
 * SIGTERM/SIGINT shut down in order (stop accepting, let commands moving data
 * finish, close connections, flush namespaces, print counters).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ernic/control.h"
#include "ernic/ernic.h"
#include "ernic/nvmf.h"
#include "ernic/rdma.h" /* declarations only: ERNIC_HAVE_RDMA says whether they are built */
#include "ernic/tcp.h"

#define ERNICD "ernicd"
#define ERNICD_DEFAULT_ADDR "127.0.0.1"
#define ERNICD_DEFAULT_PORT "4420"
/* How long a shutdown waits for commands still receiving data. */
#define ERNICD_STOP_GRACE_MS 5000
#define ERNICD_MAX_ALLOW 64
#define ERNICD_DEFAULT_IDLE_S 10
/* The nice of Linux's workqueues for I/O (WQ_HIGHPRI), nvmet-tcp's and nvme-tcp's: ernic_tcp_port_opts.send_nice. */
#define ERNICD_SEND_NICE_DEFAULT -20
/* The most of one echoed value a message shows (ernicd_str()). */
#define ERNICD_SHOWN 1024
#define ERNICD_XSTR(x) #x
#define ERNICD_STR(x) ERNICD_XSTR(x)

/* The usage text below names the default. */
_Static_assert(ERNIC_TCP_MAXH2CDATA == 1048576, "--maxh2cdata's default in the usage text");

static const char usage[] =
	"Usage: " ERNICD " [--transport tcp|rdma] [--listen ADDR:PORT] [--nqn NQN] [--backend STR]... [--allow-host NQN]...\n"
	"              [--max-connections N] [--idle-timeout SECONDS] [--stats PATH]\n"
	"              [--config FILE] [--control PATH] [--trace PATH] [--trace-sample N] [--cpus LIST]\n"
	"              [--zero-copy-reads] [--send-nice N|off] [--maxh2cdata BYTES] [--in-capsule-data BYTES]\n"
	"              [--buffer-budget SIZE]\n"
	"\n"
	"Serve NVMe over Fabrics subsystems over NVMe/TCP or NVMe/RDMA.\n"
	"\n"
	"  --transport T       tcp (default) or rdma (listen on an RDMA device's address)\n"
	"  --listen ADDR:PORT  address to listen on (default " ERNICD_DEFAULT_ADDR ":" ERNICD_DEFAULT_PORT
	"; IPv6 as [ADDR]:PORT)\n"
	"  --nqn NQN           subsystem NQN (default " ERNIC_DEFAULT_SUBNQN ")\n"
	"  --backend STR       a namespace, nvmeof:size=8G,bs=4096[,file=PATH][,queues=N]...; repeat\n"
	"                      for more namespaces (the first sets queues, queue_size, max_mr,\n"
	"                      pollers and mdts, a later one may not; mdts=N caps a transfer at\n"
	"                      4 KiB << N, default 5; mdts=0 is no limit).\n"
	"                      Default: $ERNIC_BACKEND, else nvmeof:size=1G,bs=4096 in RAM\n"
	"  --allow-host NQN    accept Connect only from these host NQNs (repeat); default any host\n"
	"  --max-connections N connections (RDMA: queue pairs) served at once (1..65536, default "
	ERNICD_STR(ERNIC_TCP_MAX_CONNECTIONS) ");\n"
	"                      one more takes the place of the oldest that is not a queue yet\n"
	"                      (no ICReq or Connect), else is closed at once (RDMA: its\n"
	"                      connection request is rejected, status no resources); discovery\n"
	"                      queues, open to any host, hold at most half of them (a discovery\n"
	"                      Connect past that is Connect Controller Busy)\n"
	"  --idle-timeout SECONDS  close a connection that has not completed ICReq and Connect\n"
	"                      within SECONDS, or stops inside a PDU or leaves an R2T unanswered\n"
	"                      that long (1..3600, default "
	ERNICD_STR(ERNICD_DEFAULT_IDLE_S) "), or holds a namespace removal that long by\n"
	"                      reading slowly; over RDMA, a queue pair not Connected that long\n"
	"                      after its accept, or whose Disconnect answer is not taken;\n"
	"                      a connected queue idle between commands is keep-alive's to judge\n"
	"  --stats PATH        also write the counters JSON to PATH on SIGUSR1 and at exit\n"
	"  --config FILE       after the subsystem above is up, run the control requests in FILE\n"
	"                      (a JSON array of {\"method\":...,\"params\":{...}}); stop at the first error\n"
	"  --control PATH      serve control requests (ernicctl) on a Unix socket at PATH, mode 0600\n"
	"  --trace PATH        write one line per sampled I/O command to PATH: qid, cid, opcode,\n"
	"                      status and CLOCK_MONOTONIC ns stamps (capsule received, handed to\n"
	"                      the core, storage start and done, response queued, response sent;\n"
	"                      over RDMA also the RDMA READ or WRITE posted and completed and the\n"
	"                      response SEND completed)\n"
	"  --trace-max-size SIZE  stop writing --trace's records once the file would pass SIZE\n"
	"                      (bytes, or with K, M, G, T; at least 4K; default: no limit); the\n"
	"                      records left out are counted (\"over_limit\") and said at stop\n"
	"  --trace-sample N    stamp 1 in N commands on each I/O queue (1..1000000; default\n"
	"                      " ERNICD_STR(ERNIC_STAGE_SAMPLE_DEFAULT) " with --trace, else off); the stage means go into\n"
	"                      the counters JSON as \"tcp_stages\" (and \"rdma_stages\")\n"
	"  --cpus LIST         run every thread on these CPUs only, e.g. 2 or 0-3,6 (as taskset -c):\n"
	"                      keep the target off the cores a local initiator and its interrupts use\n"
	"  --zero-copy-reads   NVMe/TCP: send reads of 16 KiB or more of a RAM namespace by reference\n"
	"                      (vmsplice() and splice()) instead of copying them into the socket: a gain\n"
	"                      where copies are dear (an emulated CPU, a NIC), a loss over a native loopback\n"
	"  --send-nice N|off   NVMe/TCP: make each send of 64 KiB or more (large reads' data) at nice N\n"
	"                      (-20..19; default " ERNICD_STR(ERNICD_SEND_NICE_DEFAULT) ", the nice Linux runs nvme-tcp's and nvmet-tcp's\n"
	"                      I/O work at), then return to the thread's own: a host on the same CPUs\n"
	"                      does not preempt the send once per 64 KiB. Needs CAP_SYS_NICE (logged\n"
	"                      once where refused); off: every send at the thread's own nice\n"
	"  --maxh2cdata BYTES  NVMe/TCP: MAXH2CDATA to advertise in ICResp, the largest H2CData PDU a\n"
	"                      host may send (C2HData goes out in PDUs of this size too); 4096..1 GiB,\n"
	"                      a multiple of 4 (default 1048576)\n"
	"  --in-capsule-data BYTES  NVMe/RDMA: data an I/O queue command may carry in its SEND,\n"
	"                      0..16384, a multiple of 16 (IOCCSZ 4 + BYTES / 16); default 0, every\n"
	"                      command's data by RDMA READ or WRITE (nvmet-rdma's default is 4096)\n"
	"  --buffer-budget SIZE  what data buffers the port may hold at once (bytes, or with K, M, G,\n"
	"                      T). NVMe/TCP: the command slots' buffers past their first 8 KiB, for\n"
	"                      data that does not move in place (a file namespace's), at least 1M,\n"
	"                      default 1G: past it a write waits for its R2T and a read to execute\n"
	"                      until buffers come back; \"tcp_buf\" in the counters JSON. NVMe/RDMA:\n"
	"                      the bounce buffers each queue registers at its Connect (2 x entries x\n"
	"                      128 KiB), at least 8M, default 4G: a Connect past it is answered\n"
	"                      Controller Busy; \"rdma_buf\" in the counters JSON\n"
	"  --help              this text\n"
	"\n"
	"Signals: SIGUSR1 prints the counters as one JSON line on stderr; SIGTERM or SIGINT\n"
	"stops accepting, lets in-flight commands finish, closes every connection, flushes\n"
	"the namespaces, prints the counters and exits (0, or 1 if a flush, the --trace file or the\n"
	"last --stats write failed). Bad arguments, an option other than --backend and --allow-host\n"
	"given twice, and a --stats PATH whose directory ernicd cannot create files in exit 2.\n";

struct ernicd_opts {
	bool rdma;
	char addr[INET6_ADDRSTRLEN];
	char port[8];
	const char *nqn;
	const char *backends[ERNIC_MAX_NS];
	unsigned int nr_backends;
	const char *allow[ERNICD_MAX_ALLOW + 1];
	unsigned int nr_allow;
	const char *stats;
	const char *config;
	const char *control;
	unsigned int max_connections;
	unsigned int idle_timeout_s;
	const char *trace;
	const char *trace_max; /* --trace-max-size as given; NULL: not given */
	uint64_t trace_max_bytes;
	unsigned int trace_sample;
	cpu_set_t cpus; /* --cpus; empty: not given (a list names at least one CPU) */
	bool zero_copy_reads;
	bool send_nice_off; /* --send-nice off */
	int send_nice;
	unsigned int maxh2cdata; /* 0: the port's default */
	const char *in_capsule_data; /* --in-capsule-data as given; NULL: not given */
	const char *buf_budget; /* --buffer-budget as given; NULL: not given */
	uint64_t buf_budget_bytes;
	unsigned int in_capsule_bytes;
};

/* The NVMe/RDMA port, a pointer only when built without rdma-core. */
struct ernic_rdma_port;

/*
 * @s as one line shows it, into @buf of ERNICD_SHOWN bytes: a newline or a
 * terminal escape in a value could otherwise forge a line ("ernicd: stopped")
 * or split an error in two. An empty @s stays empty, for the quotes around it.
 */
static const char *ernicd_str(const char *s, char *buf)
{
	return *s ? ernic_log_str(s, buf, ERNICD_SHOWN) : "";
}

/* @why is one line already: ernicd's own text, or the backend parser's (config.c keeps its errors one line). */
static void __attribute__((noreturn)) bad_arg(const char *opt, const char *value, const char *why)
{
	char v[ERNICD_SHOWN];

	fprintf(stderr, "%s: bad %s value '%s'%s%s\n", ERNICD, opt, ernicd_str(value, v), why ? ": " : "",
		why ? why : "");
	exit(2);
}

/*
 * Decimal digits at @s, nothing before them (no space, no sign, as strtoul()
 * would take): the value in *@v, ULONG_MAX past it; the first byte after them,
 * or NULL when @s does not start with a digit.
 */
static const char *scan_dec(const char *s, unsigned long *v)
{
	if (*s < '0' || *s > '9')
		return NULL;
	for (*v = 0; *s >= '0' && *s <= '9'; s++) {
		unsigned long d = (unsigned long)(*s - '0');

		*v = *v > (ULONG_MAX - d) / 10 ? ULONG_MAX : *v * 10 + d;
	}
	return s;
}

/* @s is a decimal in [min, max] and nothing else; the one rule behind every numeric option. */
static bool parse_dec(const char *s, unsigned long min, unsigned long max, unsigned long *v)
{
	const char *end = scan_dec(s, v);

	return end && !*end && *v >= min && *v <= max;
}

/*
 * ADDR:PORT, [ADDR]:PORT for IPv6; numeric only, as a discovery log entry
 * carries it. An IPv6 address without its brackets is refused, not split at
 * its last colon: 1::2:3 would otherwise listen on 1::2, port 3.
 */
static void parse_listen(const char *arg, struct ernicd_opts *o)
{
	const char *colon = strrchr(arg, ':');
	const char *a = arg;
	bool v6 = arg[0] == '[';
	size_t alen;
	unsigned char bin[sizeof(struct in6_addr)];
	unsigned long port;

	if (!colon || colon == arg)
		bad_arg("--listen", arg, "expected ADDR:PORT");
	alen = (size_t)(colon - arg);
	if (v6) {
		if (colon[-1] != ']')
			bad_arg("--listen", arg, "expected [ADDR]:PORT");
		a++;
		alen -= 2;
	} else if (memchr(arg, ':', alen)) {
		bad_arg("--listen", arg, "an IPv6 address goes in brackets, [ADDR]:PORT");
	}
	if (alen == 0 || alen >= sizeof(o->addr))
		bad_arg("--listen", arg, "bad address");
	memcpy(o->addr, a, alen);
	o->addr[alen] = '\0';
	if (inet_pton(v6 ? AF_INET6 : AF_INET, o->addr, bin) != 1)
		bad_arg("--listen", arg, v6 ? "not a numeric IPv6 address" : "not a numeric IPv4 address");
	if (!parse_dec(colon + 1, 1, 65535, &port))
		bad_arg("--listen", arg, "port must be 1..65535");
	snprintf(o->port, sizeof(o->port), "%lu", port);
}

/* A file or socket path option: any text but the empty one. */
static const char *parse_path(const char *opt, const char *arg)
{
	if (!arg[0])
		bad_arg(opt, arg, "empty path");
	return arg;
}

/* A subsystem or host NQN, as ernic_nqn_invalid() takes it. */
static const char *parse_nqn(const char *opt, const char *arg)
{
	const char *why = ernic_nqn_invalid(arg);

	if (why)
		bad_arg(opt, arg, why);
	return arg;
}

/* A decimal in [min, max], else exit 2 naming the option and the value. */
static unsigned int parse_uint(const char *opt, const char *arg, unsigned long min, unsigned long max)
{
	char why[64];
	unsigned long v;

	if (!parse_dec(arg, min, max, &v)) {
		snprintf(why, sizeof(why), "must be %lu..%lu", min, max);
		bad_arg(opt, arg, why);
	}
	return (unsigned int)v;
}

/* A nice value, -20..19 as setpriority() takes it, else exit 2 naming the option and the value. */
static int parse_nice(const char *opt, const char *arg)
{
	bool neg = arg[0] == '-';
	unsigned long v;

	if (!parse_dec(arg + neg, 0, neg ? 20 : 19, &v))
		bad_arg(opt, arg, "must be -20..19 or off");
	return neg ? -(int)v : (int)v;
}

/* A CPU list as taskset -c takes it: N or N-M, comma-separated, each CPU one this system has. */
static void parse_cpus(const char *arg, cpu_set_t *set)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	const char *p = arg;

	CPU_ZERO(set);
	for (;;) {
		unsigned long lo, hi;
		const char *end = scan_dec(p, &lo);

		if (!end)
			bad_arg("--cpus", arg, "expected a list such as 1 or 0-3,6");
		hi = lo;
		if (*end == '-') {
			end = scan_dec(end + 1, &hi);
			if (!end || hi < lo)
				bad_arg("--cpus", arg, "expected a list such as 1 or 0-3,6");
		}
		if (hi >= (unsigned long)ncpu || hi >= CPU_SETSIZE)
			bad_arg("--cpus", arg, "names a CPU this system does not have");
		for (unsigned long c = lo; c <= hi; c++)
			CPU_SET((int)c, set);
		if (*end == '\0')
			return;
		if (*end != ',')
			bad_arg("--cpus", arg, "expected a list such as 1 or 0-3,6");
		p = end + 1;
	}
}

/*
 * --stats PATH is written as PATH.tmp and renamed over PATH (print_counters()),
 * so what it needs is a directory ernicd may create files in, and PATH not a
 * directory. Judged before the run and creating nothing: found at exit, the
 * run's counters would be lost.
 */
static void check_stats_path(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096], why[128];
	struct stat st;
	int e = 0;

	if (strlen(path) + sizeof(".tmp") > sizeof(dir))
		bad_arg("--stats", path, "path too long");
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (stat(dir, &st))
		e = errno;
	else if (!S_ISDIR(st.st_mode))
		e = ENOTDIR;
	else if (access(dir, W_OK | X_OK))
		e = errno;
	if (e) {
		snprintf(why, sizeof(why), "cannot create files in its directory: %s", strerror(e));
		bad_arg("--stats", path, why);
	}
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		bad_arg("--stats", path, "is a directory");
}

static void parse_args(int argc, char **argv, struct ernicd_opts *o)
{
	enum { OPT_LISTEN = 'l', OPT_NQN = 'n', OPT_BACKEND = 'b', OPT_ALLOW = 'a', OPT_STATS = 's', OPT_HELP = 'h',
	       OPT_MAX_CONNS = 'c', OPT_IDLE = 'i', OPT_CONFIG = 'f', OPT_CONTROL = 'C', OPT_TRACE = 't',
	       OPT_TRACE_SAMPLE = 'S', OPT_TRANSPORT = 'T', OPT_CPUS = 'P',
	       OPT_ZERO_COPY_READS = 'Z', OPT_MAXH2CDATA = 'M', OPT_IN_CAPSULE_DATA = 'D', OPT_SEND_NICE = 'N',
	       OPT_TRACE_MAX = 'X', OPT_BUF_BUDGET = 'B' };
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "nqn", required_argument, NULL, OPT_NQN },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "allow-host", required_argument, NULL, OPT_ALLOW },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "max-connections", required_argument, NULL, OPT_MAX_CONNS },
		{ "idle-timeout", required_argument, NULL, OPT_IDLE },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "control", required_argument, NULL, OPT_CONTROL },
		{ "trace", required_argument, NULL, OPT_TRACE },
		{ "trace-sample", required_argument, NULL, OPT_TRACE_SAMPLE },
		{ "trace-max-size", required_argument, NULL, OPT_TRACE_MAX },
		{ "transport", required_argument, NULL, OPT_TRANSPORT },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "zero-copy-reads", no_argument, NULL, OPT_ZERO_COPY_READS },
		{ "send-nice", required_argument, NULL, OPT_SEND_NICE },
		{ "maxh2cdata", required_argument, NULL, OPT_MAXH2CDATA },
		{ "in-capsule-data", required_argument, NULL, OPT_IN_CAPSULE_DATA },
		{ "buffer-budget", required_argument, NULL, OPT_BUF_BUDGET },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	/* Each option's value as first given: one that takes a single value is refused a second. */
	const char *given[sizeof(longopts) / sizeof(longopts[0])] = { NULL };
	char shown[ERNICD_SHOWN];
	int c, idx;

	snprintf(o->addr, sizeof(o->addr), "%s", ERNICD_DEFAULT_ADDR);
	snprintf(o->port, sizeof(o->port), "%s", ERNICD_DEFAULT_PORT);
	o->nqn = ERNIC_DEFAULT_SUBNQN;
	o->max_connections = ERNIC_TCP_MAX_CONNECTIONS;
	o->idle_timeout_s = ERNICD_DEFAULT_IDLE_S;
	o->send_nice = ERNICD_SEND_NICE_DEFAULT;
	/* getopt's own messages take two lines and no value: report here instead. */
	opterr = 0;
	while ((idx = -1, c = getopt_long(argc, argv, ":", longopts, &idx)) != -1) {
		/* Only --backend and --allow-host add one more each time; any other taking the last would hide a typo. */
		if (idx >= 0 && longopts[idx].has_arg && c != OPT_BACKEND && c != OPT_ALLOW) {
			if (given[idx]) {
				char first[ERNICD_SHOWN];

				fprintf(stderr, "%s: --%s given twice ('%s', then '%s'): it takes one value\n", ERNICD,
					longopts[idx].name, ernicd_str(given[idx], first), ernicd_str(optarg, shown));
				exit(2);
			}
			given[idx] = optarg;
		}
		switch (c) {
		case OPT_LISTEN:
			parse_listen(optarg, o);
			break;
		case OPT_NQN:
			o->nqn = parse_nqn("--nqn", optarg);
			break;
		case OPT_BACKEND:
			if (o->nr_backends == ERNIC_MAX_NS)
				bad_arg("--backend", optarg, "too many namespaces");
			o->backends[o->nr_backends++] = optarg;
			break;
		case OPT_ALLOW:
			parse_nqn("--allow-host", optarg);
			if (o->nr_allow == ERNICD_MAX_ALLOW)
				bad_arg("--allow-host", optarg, "too many hosts");
			o->allow[o->nr_allow++] = optarg;
			break;
		case OPT_STATS:
			o->stats = parse_path("--stats", optarg);
			check_stats_path(o->stats);
			break;
		case OPT_CONFIG:
			o->config = parse_path("--config", optarg);
			break;
		case OPT_CONTROL:
			o->control = parse_path("--control", optarg);
			break;
		case OPT_MAX_CONNS:
			o->max_connections = parse_uint("--max-connections", optarg, 1, 65536);
			break;
		case OPT_IDLE:
			o->idle_timeout_s = parse_uint("--idle-timeout", optarg, 1, 3600);
			break;
		case OPT_TRACE:
			o->trace = parse_path("--trace", optarg);
			break;
		case OPT_TRACE_SAMPLE:
			o->trace_sample = parse_uint("--trace-sample", optarg, 1, 1000000);
			break;
		case OPT_TRACE_MAX:
			o->trace_max = optarg;
			if (!ernic_parse_bytes(optarg, &o->trace_max_bytes) || o->trace_max_bytes < 4096)
				bad_arg("--trace-max-size", optarg, "must be a size of at least 4K, e.g. 4096, 64M or 2G");
			break;
		case OPT_TRANSPORT:
			if (strcmp(optarg, "tcp") && strcmp(optarg, "rdma"))
				bad_arg("--transport", optarg, "must be tcp or rdma");
#ifndef ERNIC_HAVE_RDMA
			if (!strcmp(optarg, "rdma"))
				bad_arg("--transport", optarg, "built without rdma-core (librdmacm-dev, libibverbs-dev)");
#endif
			o->rdma = !strcmp(optarg, "rdma");
			break;
		case OPT_CPUS:
			parse_cpus(optarg, &o->cpus);
			break;
		case OPT_ZERO_COPY_READS:
			o->zero_copy_reads = true;
			break;
		case OPT_SEND_NICE:
			o->send_nice_off = !strcmp(optarg, "off");
			if (!o->send_nice_off)
				o->send_nice = parse_nice("--send-nice", optarg);
			break;
		case OPT_MAXH2CDATA:
			o->maxh2cdata = parse_uint("--maxh2cdata", optarg, 4096, 1u << 30);
			/* A Linux host refuses a MAXH2CDATA that is not a multiple of 4. */
			if (o->maxh2cdata % 4)
				bad_arg("--maxh2cdata", optarg, "must be a multiple of 4");
			break;
		case OPT_IN_CAPSULE_DATA:
			o->in_capsule_data = optarg;
			o->in_capsule_bytes = parse_uint("--in-capsule-data", optarg, 0, ERNIC_RDMA_MAX_IN_CAPSULE_DATA);
			if (o->in_capsule_bytes % 16)
				bad_arg("--in-capsule-data", optarg, "must be a multiple of 16 (IOCCSZ counts 16-byte units)");
			break;
		case OPT_BUF_BUDGET:
			o->buf_budget = optarg;
			if (!ernic_parse_bytes(optarg, &o->buf_budget_bytes) || o->buf_budget_bytes < (1u << 20))
				bad_arg("--buffer-budget", optarg, "must be a size of at least 1M, e.g. 256M or 4G");
			break;
		case OPT_HELP:
			fputs(usage, stdout);
			exit(0);
		case ':':
			fprintf(stderr, "%s: option '%s' needs a value\n", ERNICD, ernicd_str(argv[optind - 1], shown));
			exit(2);
		default:
			fprintf(stderr, "%s: unknown option '%s' (try --help)\n", ERNICD, ernicd_str(argv[optind - 1], shown));
			exit(2);
		}
	}
	if (o->trace && !o->trace_sample)
		o->trace_sample = ERNIC_STAGE_SAMPLE_DEFAULT;
	if (o->trace_max && !o->trace)
		bad_arg("--trace-max-size", o->trace_max, "limits --trace's file: give --trace PATH too");
	/* An RDMA port's least is one admin queue's bounce buffers: less would refuse every controller. */
	if (o->buf_budget && o->rdma && o->buf_budget_bytes < ERNIC_RDMA_BUF_BUDGET_MIN)
		bad_arg("--buffer-budget", o->buf_budget,
			"must be at least 8M with --transport rdma (an admin queue's bounce buffers)");
	/* NVMe/TCP's in-capsule data is the port's own (IOCCSZ 8196). */
	if (o->in_capsule_data && !o->rdma)
		bad_arg("--in-capsule-data", o->in_capsule_data, "NVMe/RDMA only (with --transport rdma)");
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", ERNICD, ernicd_str(argv[optind], shown));
		exit(2);
	}
}

/*
 * @json with one more member, "@name": @value, JSON text (the object's
 * closing brace gives way to it); frees @json. NULL when out of memory.
 */
static char *json_add_member(char *json, const char *name, const char *value)
{
	size_t len = json ? strlen(json) : 0;
	char *out;

	if (!json || !value || len < 2 || json[len - 1] != '}' ||
	    !(out = malloc(len + strlen(name) + strlen(value) + 8))) {
		free(json);
		return NULL;
	}
	json[len - 1] = '\0';
	sprintf(out, "%s,\"%s\":%s}", json, name, value);
	free(json);
	return out;
}

/* @json with "@name": the stage stats @st (json_add_member()). */
static char *json_add_stages(char *json, const char *name, const struct ernic_trace_stats *st)
{
	char stages[2048];

	return json_add_member(json, name, ernic_trace_stats_json(st, stages, sizeof(stages)) < 0 ? NULL : stages);
}

/*
 * The target's counters JSON, with the NVMe/TCP listeners' waits for their
 * hosts as "tcp_waits" (struct ernic_tcp_wait_stats), how their PDUs left as
 * "tcp_tx" (struct ernic_tcp_tx_stats), the bytes their command slots hold
 * in data buffers as "tcp_buf_bytes" and those past a slot's first 8 KiB
 * against the budget as "tcp_buf" (struct ernic_tcp_buf_stats), over NVMe/RDMA
 * the queues' bounce buffers against the budget as "rdma_buf" (struct
 * ernic_rdma_buf_stats), the stage means as "tcp_stages" and, over NVMe/RDMA,
 * "rdma_stages" when they sample; NULL when out of memory.
 */
static char *counters_json(struct ernic_target *tgt, struct ernic_control *ctl, struct ernic_rdma_port *rport,
			   bool sampling)
{
	static struct ernic_counters c;
	struct ernic_tcp_wait_stats w;
	struct ernic_tcp_tx_stats tx;
	struct ernic_trace_stats st;
	struct ernic_tcp_buf_stats bs;
	char waits[128], sends[256], held[32], bufs[128], *buf;

	ernic_target_counters(tgt, &c);
	buf = ernic_counters_json_alloc(&c);
	ernic_control_tcp_wait_stats(ctl, &w);
	snprintf(waits, sizeof(waits), "{\"waits\":%" PRIu64 ",\"spun\":%" PRIu64 ",\"caught\":%" PRIu64 "}",
		 w.waits, w.spun, w.caught);
	buf = json_add_member(buf, "tcp_waits", waits);
	ernic_control_tcp_tx_stats(ctl, &tx);
	snprintf(sends, sizeof(sends),
		 "{\"pdus\":%" PRIu64 ",\"sends\":%" PRIu64 ",\"c2h_in_place\":%" PRIu64 ",\"c2h_spliced\":%" PRIu64
		 ",\"raised_sends\":%" PRIu64 ",\"h2c_in_place\":%" PRIu64 "}",
		 tx.pdus, tx.sends, tx.c2h_in_place, tx.c2h_spliced, tx.raised_sends, tx.h2c_in_place);
	buf = json_add_member(buf, "tcp_tx", sends);
	snprintf(held, sizeof(held), "%" PRIu64, ernic_control_tcp_buf_bytes(ctl));
	buf = json_add_member(buf, "tcp_buf_bytes", held);
	ernic_control_tcp_buf_stats(ctl, &bs);
	snprintf(bufs, sizeof(bufs), "{\"grown\":%" PRIu64 ",\"budget\":%" PRIu64 ",\"waits\":%" PRIu64 "}", bs.grown,
		 bs.budget, bs.waits);
	buf = json_add_member(buf, "tcp_buf", bufs);
#ifdef ERNIC_HAVE_RDMA
	if (rport) {
		struct ernic_rdma_buf_stats rbs;

		ernic_rdma_port_buf_stats(rport, &rbs);
		snprintf(bufs, sizeof(bufs), "{\"held\":%" PRIu64 ",\"budget\":%" PRIu64 ",\"refused\":%" PRIu64 "}",
			 rbs.held, rbs.budget, rbs.refused);
		buf = json_add_member(buf, "rdma_buf", bufs);
	}
#else
	(void)rport;
#endif
	if (!buf || !sampling)
		return buf;
	ernic_control_tcp_stage_stats(ctl, &st);
	buf = json_add_stages(buf, "tcp_stages", &st);
#ifdef ERNIC_HAVE_RDMA
	if (rport) {
		ernic_rdma_port_stage_stats(rport, &st);
		buf = json_add_stages(buf, "rdma_stages", &st);
	}
#endif
	return buf;
}

/* After the ports stopped, so every record reached the writer: what --trace-max-size left out, if any. */
static void say_trace_over_limit(struct ernic_control *ctl, struct ernic_rdma_port *rport, const struct ernicd_opts *o)
{
	struct ernic_trace_stats st = { 0 };
	char shown[ERNICD_SHOWN];

	/* One writer per file: the RDMA port's over NVMe/RDMA, else the control plane's listeners'. */
	if (!o->rdma)
		ernic_control_tcp_stage_stats(ctl, &st);
#ifdef ERNIC_HAVE_RDMA
	if (o->rdma && rport)
		ernic_rdma_port_stage_stats(rport, &st);
#else
	(void)rport;
#endif
	if (st.over_limit)
		fprintf(stderr,
			"%s: --trace '%s' reached --trace-max-size %s: %" PRIu64 " of %" PRIu64
			" sampled commands' records left out (the stage means count them all)\n",
			ERNICD, ernicd_str(o->trace, shown), o->trace_max, st.over_limit, st.samples);
}

/*
 * The subsystem whose counters SIGUSR1 and --stats report: the command line's
 * NQN as it is now, so one removed and added again through the control socket
 * is the new one; once removed and not added again, the last counters of the
 * one it had (main() holds a reference to it). Referenced: put it after use.
 */
static struct ernic_target *counters_subsys(struct ernic_nvmf *nvmf, struct ernic_target *first, const char *nqn)
{
	struct ernic_target *now = ernic_nvmf_subsys_get(nvmf, nqn);

	if (!now) {
		now = first;
		ernic_target_get(now);
	}
	return now;
}

/* The counters on stderr and, with --stats, in its file: 0, or -1 when they did not reach the file. */
static int print_counters(struct ernic_nvmf *nvmf, struct ernic_target *first, struct ernic_control *ctl,
			  struct ernic_rdma_port *rport, const struct ernicd_opts *o)
{
	struct ernic_target *tgt = counters_subsys(nvmf, first, o->nqn);
	const char *stats_path = o->stats;
	char *buf;
	int rc = 0;

	buf = counters_json(tgt, ctl, rport, o->trace_sample != 0);
	ernic_target_put(tgt);
	if (!buf) {
		fprintf(stderr, "%s: cannot format the counters: out of memory\n", ERNICD);
		return o->stats ? -1 : 0;
	}
	fprintf(stderr, "%s\n", buf);
	fflush(stderr);
	if (stats_path) {
		/* Write then rename, so a reader never sees half a file. */
		char tmp[4096], shown[ERNICD_SHOWN];
		FILE *f;

		snprintf(tmp, sizeof(tmp), "%s.tmp", stats_path);
		f = fopen(tmp, "w");
		if (!f || fprintf(f, "%s\n", buf) < 0 || fclose(f) || rename(tmp, stats_path)) {
			fprintf(stderr, "%s: cannot write --stats '%s': %s\n", ERNICD, ernicd_str(stats_path, shown),
				strerror(errno));
			if (f)
				unlink(tmp);
			rc = -1;
		}
	}
	free(buf);
	return rc;
}

/*
 * The files a start creates (file namespaces' backing files, the --trace
 * file): a refused start removes them again, and only them, so it leaves the
 * disk as it found it.
 */
struct ernicd_created {
	const char *paths[ERNIC_MAX_NS + 1];
	unsigned int nr;
};

/* Before @path is opened to be created: the start created it if it is not there yet. */
static void created_note(struct ernicd_created *c, const char *path)
{
	if (c->nr < sizeof(c->paths) / sizeof(c->paths[0]) && access(path, F_OK) && errno == ENOENT)
		c->paths[c->nr++] = path;
}

/* A refused start: remove the files it created, once nothing holds them open. */
static void created_remove(const struct ernicd_created *c)
{
	for (unsigned int i = 0; i < c->nr; i++)
		unlink(c->paths[i]);
}

/* Flush every subsystem's namespaces: 0, or the first error. */
static int flush_all(struct ernic_nvmf *nvmf)
{
	int rc = 0;

	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_SUBSYSTEMS; i++) {
		struct ernic_target *tgt = ernic_nvmf_subsys_get_at(nvmf, i);
		int r = tgt ? ernic_target_flush(tgt) : 0;

		ernic_target_put(tgt);
		if (r && !rc)
			rc = r;
	}
	return rc;
}

/* The ports, the control plane and the subsystems, after a run or a refused start alike. */
static void ernicd_teardown(struct ernic_nvmf *nvmf, struct ernic_target *tgt, struct ernic_control *ctl,
			    struct ernic_rdma_port *rport)
{
#ifdef ERNIC_HAVE_RDMA
	ernic_rdma_port_destroy(rport);
#else
	(void)rport;
#endif
	ernic_control_destroy(ctl);
	ernic_target_put(tgt);
	ernic_nvmf_destroy(nvmf);
}

int main(int argc, char **argv)
{
	static struct ernic_backend_cfg cfgs[ERNIC_MAX_NS];
	struct ernicd_opts o = { 0 };
	struct ernic_target_opts topts = { 0 };
	struct ernic_tcp_port_opts popts = { .log = stderr, .ident = ERNICD };
	struct ernic_nvmf *nvmf = NULL;
	struct ernic_target *tgt = NULL;
	struct ernic_control *ctl = NULL;
	FILE *trace = NULL;
	struct ernic_rdma_port *rport = NULL;
#ifdef ERNIC_HAVE_RDMA
	struct ernic_rdma_port_opts ropts = { .log = stderr, .ident = ERNICD };
	uint16_t rdma_portid = 0;
#endif
	struct ernicd_created created = { .nr = 0 };
	const char *env = getenv("ERNIC_BACKEND");
	char err[ERNIC_ERRLEN], desc[512], mdata[64] = "";
	char shown[ERNICD_SHOWN], shown2[ERNICD_SHOWN], shown3[ERNICD_SHOWN];
	uint16_t bound = 0;
	sigset_t sigs;
	int rc, sig, status = 0;

	/*
	 * First of all, before any thread exists (so every thread inherits the mask) and before
	 * the arguments are read: a SIGUSR1 sent while ernicd is still starting, as a script asking
	 * for the counters early does, waits for sigwait() instead of killing the daemon.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Under a file size limit (ulimit -f, LimitFSIZE=) a write past it fails with EFBIG instead of killing ernicd. */
	signal(SIGXFSZ, SIG_IGN);

	parse_args(argc, argv, &o);
	/* Before any thread exists: every one started later (ports, connections, control) inherits it. */
	if (CPU_COUNT(&o.cpus) && sched_setaffinity(0, sizeof(o.cpus), &o.cpus)) {
		fprintf(stderr, "%s: --cpus: cannot run on those CPUs: %s\n", ERNICD, strerror(errno));
		return 2;
	}

	/* --backend wins over $ERNIC_BACKEND, which wins over the built-in default. */
	if (!o.nr_backends && env && env[0])
		o.backends[o.nr_backends++] = env;
	for (unsigned int i = 0; i < o.nr_backends; i++) {
		char which[32];

		/* The first sets the queue settings; a later one setting them would be dropped unseen: refused. */
		snprintf(which, sizeof(which), "--backend #%u", i + 1);
		if (i ? ernic_backend_parse_ns(o.backends[i], which, &cfgs[i], err, sizeof(err))
		      : ernic_backend_parse(o.backends[i], &cfgs[i], err, sizeof(err)))
			bad_arg(o.backends[i] == env ? "ERNIC_BACKEND" : "--backend", o.backends[i], err);
	}
	if (!o.nr_backends)
		ernic_backend_cfg_init(&cfgs[0]);

	if (o.trace) {
		created_note(&created, o.trace);
		trace = fopen(o.trace, "we");
		if (!trace) {
			fprintf(stderr, "%s: cannot open --trace '%s': %s\n", ERNICD, ernicd_str(o.trace, shown),
				strerror(errno));
			return 1;
		}
	}
	/* One writer per file: over NVMe/RDMA the RDMA port writes it, the control plane's listeners only sum. */
	popts.trace = o.rdma ? NULL : trace;
	popts.sample_every = o.trace_sample;
	popts.trace_max_bytes = o.trace_max_bytes;
	popts.c2h_splice = o.zero_copy_reads;
	popts.raise_sends = !o.send_nice_off;
	popts.send_nice = o.send_nice;
	popts.maxh2cdata = o.maxh2cdata;
	popts.max_connections = o.max_connections;
	popts.buf_budget = o.buf_budget_bytes;
#ifdef ERNIC_HAVE_RDMA
	ropts.trace = o.rdma ? trace : NULL;
	ropts.sample_every = o.trace_sample;
	ropts.trace_max_bytes = o.trace_max_bytes;
	ropts.max_queues = o.max_connections;
	ropts.in_capsule_data = o.in_capsule_bytes;
	ropts.idle_timeout_ms = o.idle_timeout_s * 1000;
	ropts.buf_budget = o.buf_budget_bytes;
#endif
	popts.idle_timeout_ms = o.idle_timeout_s * 1000;
	topts.subnqn = o.nqn;
	topts.allow_hosts = o.nr_allow ? o.allow : NULL;
	/* The first backend's queue settings are every subsystem's. */
	rc = ernic_nvmf_create(&cfgs[0], &nvmf, err, sizeof(err));
	if (!rc)
		rc = ernic_nvmf_subsys_add(nvmf, &topts, &tgt, err, sizeof(err));
	/* Kept past a removal through the control socket: the counters report it (counters_subsys()). */
	if (!rc)
		ernic_target_get(tgt);
	if (rc)
		goto refused;
	for (unsigned int i = 0; i < o.nr_backends + !o.nr_backends; i++) {
		if (cfgs[i].file[0])
			created_note(&created, cfgs[i].file);
		rc = ernic_target_add_ns(tgt, &cfgs[i], err, sizeof(err));
		if (rc && i) {
			fprintf(stderr, "%s: --backend '%s': %s\n", ERNICD, ernicd_str(o.backends[i], shown),
				ernicd_str(err, shown2));
			goto destroy;
		}
		if (rc)
			goto refused;
	}

	rc = ernic_control_create(nvmf, &popts, &ctl);
	if (rc)
		snprintf(err, sizeof(err), "cannot create the control plane: %s", strerror(-rc));
	else if (!o.rdma)
		rc = ernic_control_listener_add(ctl, o.nqn, o.addr, o.port, &bound, err, sizeof(err));
#ifdef ERNIC_HAVE_RDMA
	/* NVMe/RDMA serves the command line's subsystem; the control plane's listeners are NVMe/TCP. */
	if (!rc && o.rdma) {
		rc = ernic_rdma_port_create(tgt, &ropts, &rport, err, sizeof(err));
		if (!rc)
			rc = ernic_rdma_port_listen(rport, o.addr, o.port, err, sizeof(err));
		/* A port record in the set, the subsystem linked to it: a Connect through the port finds it. */
		if (!rc) {
			char svc[8];

			snprintf(svc, sizeof(svc), "%u", ernic_rdma_port_number(rport));
			rc = ernic_nvmf_port_add(nvmf, NVMF_TRTYPE_RDMA, o.addr, svc, &rdma_portid, err, sizeof(err));
		}
		if (!rc)
			rc = ernic_nvmf_link(nvmf, rdma_portid, o.nqn, err, sizeof(err));
		if (!rc) {
			ernic_rdma_port_set_portid(rport, rdma_portid);
			rc = ernic_rdma_port_start(rport);
			if (rc)
				snprintf(err, sizeof(err), "cannot start the RDMA CM thread: %s", strerror(-rc));
		}
		if (!rc)
			bound = ernic_rdma_port_number(rport);
	}
#endif
	if (!rc && o.config)
		rc = ernic_control_load(ctl, o.config, err, sizeof(err));
	if (!rc && o.control)
		rc = ernic_control_listen(ctl, o.control, err, sizeof(err));
	if (rc)
		goto refused;
	ernic_backend_format(ernic_target_cfg(tgt), desc, sizeof(desc));
	if (!o.rdma)
		snprintf(mdata, sizeof(mdata), ", MAXH2CDATA %u", o.maxh2cdata ? o.maxh2cdata : ERNIC_TCP_MAXH2CDATA);
	else
		snprintf(mdata, sizeof(mdata), ", in-capsule data %u (IOCCSZ %u)", o.in_capsule_bytes,
			 ERNIC_IOCCSZ + o.in_capsule_bytes / 16);
	fprintf(stderr, "%s: listening on %s%s%s:%u%s, subsystem %s, %u namespace(s), backend %s, %s%s%s%s\n", ERNICD,
		strchr(o.addr, ':') ? "[" : "", o.addr, strchr(o.addr, ':') ? "]" : "", bound,
		o.rdma ? " (NVMe/RDMA)" : "", ernicd_str(o.nqn, shown), ernic_target_nr_ns(tgt), ernicd_str(desc, shown2),
		o.nr_allow ? "allow-listed hosts only" : "any host", o.control ? ", control " : "",
		o.control ? ernicd_str(o.control, shown3) : "", mdata);
	fflush(stderr);

	for (;;) {
		if (sigwait(&sigs, &sig))
			continue;
		if (sig == SIGUSR1) {
			print_counters(nvmf, tgt, ctl, rport, &o);
			continue;
		}
		break;
	}

	fprintf(stderr, "%s: %s: stopping\n", ERNICD, strsignal(sig));
	ernic_control_stop(ctl, ERNICD_STOP_GRACE_MS);
#ifdef ERNIC_HAVE_RDMA
	if (rport)
		ernic_rdma_port_stop(rport, ERNICD_STOP_GRACE_MS);
#endif
	rc = flush_all(nvmf);
	if (rc) {
		fprintf(stderr, "%s: flushing the namespaces failed: %s\n", ERNICD, strerror(-rc));
		status = 1;
	}
	/* The run's counters are what --stats is for: not written, the run failed. */
	if (print_counters(nvmf, tgt, ctl, rport, &o))
		status = 1;
	if (trace)
		say_trace_over_limit(ctl, rport, &o);
	ernicd_teardown(nvmf, tgt, ctl, rport);
	if (trace) {
		/*
		 * A write that failed during the run (a full disk) leaves records
		 * out of the file even when the last flush went: the stream's
		 * error flag says so, which fclose() does not.
		 */
		bool lost = ferror(trace);

		if (fclose(trace)) {
			fprintf(stderr, "%s: writing --trace '%s' failed: %s\n", ERNICD, ernicd_str(o.trace, shown),
				strerror(errno));
			status = 1;
		} else if (lost) {
			fprintf(stderr, "%s: writing --trace '%s' failed during the run: records are missing from it\n",
				ERNICD, ernicd_str(o.trace, shown));
			status = 1;
		}
	}
	fprintf(stderr, "%s: stopped\n", ERNICD);
	return status;

refused:
	fprintf(stderr, "%s: %s\n", ERNICD, ernicd_str(err, shown));
destroy:
	ernicd_teardown(nvmf, tgt, ctl, rport);
	if (trace)
		fclose(trace);
	created_remove(&created);
	return rc == -EINVAL ? 2 : 1;
}
