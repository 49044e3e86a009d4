/*
 * tcp_rtt: the round trip of a bare request/response exchange over loopback
 * TCP between two processes of this machine, with no NVMe in it: the least a
 * target in userspace pays per command at queue depth 1 before it does any
 * work, to set beside what the kernel's target takes for a whole I/O on the
 * same machine (the lane prints both).
 *
 * The sizes default to a 4 KiB NVMe/TCP read: a command capsule out (8 byte
 * common header and 64 byte SQE), C2HData with its data and the response
 * capsule back. Each placement runs the server in a child process:
 *
 *   one cpu, sleeping   server and client on CPU A; the server sleeps in recv()
 *   one cpu, polling    the server polls (recv(MSG_DONTWAIT), sched_yield())
 *   two cpus, sleeping  server on CPU B, client on CPU A
 *   two cpus, polling   the same, the server polling, as ernicd's connection
 *                       threads do while the host keeps pace
 *
 * Usage: tcp_rtt [--exchanges N] [--request BYTES] [--response BYTES] [--cpus A,B]
 * Prints one line per placement: tcp_rtt: PLACEMENT: median X us, p90 Y us (N exchanges)
 * Exits 0, 1 if an exchange failed, 2 on bad arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RTT_TOOL "tcp_rtt"
/* The first round trips set up the connection's windows and caches: not counted. */
#define RTT_WARMUP 100u
#define RTT_MAX_BYTES (1u << 20)

struct rtt_opts {
	unsigned int exchanges;
	unsigned int request;
	unsigned int response;
	int cpu_a, cpu_b; /* -1: not given */
};

static uint64_t rtt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void bad_arg(const char *key, const char *val, const char *why)
{
	fprintf(stderr, "%s: %s %s: %s\n", RTT_TOOL, key, val, why);
	exit(2);
}

static unsigned int parse_uint(const char *key, const char *val, unsigned int min, unsigned int max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(val, &end, 10);
	if (errno || end == val || *end || v < min || v > max) {
		char why[64];

		snprintf(why, sizeof(why), "expected a number %u..%u", min, max);
		bad_arg(key, val, why);
	}
	return (unsigned int)v;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Read exactly @len bytes; @poll: never sleep in recv(). Returns 0 or -1 (end of stream or error). */
static int recv_all(int fd, uint8_t *buf, size_t len, bool poll)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, buf + got, len - got, poll ? MSG_DONTWAIT : 0);

		if (n > 0) {
			got += (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && poll) {
			sched_yield();
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else {
			return -1;
		}
	}
	return 0;
}

static int send_all(int fd, const uint8_t *buf, size_t len)
{
	size_t sent = 0;

	while (sent < len) {
		ssize_t n = send(fd, buf + sent, len - sent, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		sent += (size_t)n;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void server(int lfd, const struct rtt_opts *o, int cpu, bool poll, uint8_t *buf)
{
	int one = 1, fd;

	if (pin(cpu))
		_exit(1);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		_exit(1);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (unsigned int i = 0; i < RTT_WARMUP + o->exchanges; i++) {
		if (recv_all(fd, buf, o->request, poll) || send_all(fd, buf, o->response))
			_exit(1);
	}
	_exit(0);
}

/* One placement: the server on @server_cpu, the client on @client_cpu. Returns 0 or -1. */
static int placement(const struct rtt_opts *o, const char *name, int client_cpu, int server_cpu, bool poll,
		     uint8_t *buf, uint64_t *rtt)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t salen = sizeof(sa);
	int one = 1, lfd, fd = -1, status, rc = -1;
	pid_t child;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &salen)) {
		fprintf(stderr, "%s: %s: cannot listen on 127.0.0.1: %s\n", RTT_TOOL, name, strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return -1;
	}
	child = fork();
	if (child < 0) {
		fprintf(stderr, "%s: %s: fork: %s\n", RTT_TOOL, name, strerror(errno));
		close(lfd);
		return -1;
	}
	if (child == 0)
		server(lfd, o, server_cpu, poll, buf);
	close(lfd);
	if (pin(client_cpu)) {
		fprintf(stderr, "%s: %s: cannot run on cpu %d: %s\n", RTT_TOOL, name, client_cpu, strerror(errno));
		goto out;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "%s: %s: connect: %s\n", RTT_TOOL, name, strerror(errno));
		goto out;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (unsigned int i = 0; i < RTT_WARMUP + o->exchanges; i++) {
		uint64_t t0 = rtt_now_ns();

		if (send_all(fd, buf, o->request) || recv_all(fd, buf, o->response, false)) {
			fprintf(stderr, "%s: %s: exchange %u failed: %s\n", RTT_TOOL, name, i,
				errno ? strerror(errno) : "server closed the connection");
			goto out;
		}
		if (i >= RTT_WARMUP)
			rtt[i - RTT_WARMUP] = rtt_now_ns() - t0;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc)
		kill(child, SIGKILL);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
		if (!rc)
			fprintf(stderr, "%s: %s: the server failed\n", RTT_TOOL, name);
		rc = -1;
	}
	if (rc)
		return rc;
	qsort(rtt, o->exchanges, sizeof(*rtt), cmp_u64);
	printf("%s: %s: median %.1f us, p90 %.1f us (%u exchanges, %u B out, %u B back)\n", RTT_TOOL, name,
	       rtt[o->exchanges / 2] / 1000.0, rtt[o->exchanges * 9 / 10] / 1000.0, o->exchanges, o->request,
	       o->response);
	fflush(stdout);
	return 0;
}

/* The first two CPUs this process may run on (@b = -1 when there is one). */
static int default_cpus(int *a, int *b)
{
	cpu_set_t set;

	*a = *b = -1;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (*a < 0)
			*a = c;
		else if (*b < 0)
			*b = c;
	}
	return *a < 0 ? -1 : 0;
}

static void parse_args(int argc, char **argv, struct rtt_opts *o)
{
	enum { OPT_EXCHANGES = 'n', OPT_REQUEST = 'q', OPT_RESPONSE = 'r', OPT_CPUS = 'c', OPT_HELP = 'h' };
	static const struct option longopts[] = {
		{ "exchanges", required_argument, NULL, OPT_EXCHANGES },
		{ "request", required_argument, NULL, OPT_REQUEST },
		{ "response", required_argument, NULL, OPT_RESPONSE },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_EXCHANGES:
			o->exchanges = parse_uint("--exchanges", optarg, 10, 1000000);
			break;
		case OPT_REQUEST:
			o->request = parse_uint("--request", optarg, 1, RTT_MAX_BYTES);
			break;
		case OPT_RESPONSE:
			o->response = parse_uint("--response", optarg, 1, RTT_MAX_BYTES);
			break;
		case OPT_CPUS: {
			char *end;
			long a = strtol(optarg, &end, 10), b;

			if (end == optarg || *end != ',' || a < 0 || a >= CPU_SETSIZE)
				bad_arg("--cpus", optarg, "expected two CPUs A,B such as 0,1");
			b = strtol(end + 1, &end, 10);
			if (*end || b < 0 || b >= CPU_SETSIZE || b == a)
				bad_arg("--cpus", optarg, "expected two different CPUs A,B such as 0,1");
			o->cpu_a = (int)a;
			o->cpu_b = (int)b;
			break;
		}
		case OPT_HELP:
			printf("Usage: %s [--exchanges N] [--request BYTES] [--response BYTES] [--cpus A,B]\n"
			       "Round trips of a bare request/response exchange over loopback TCP between two\n"
			       "processes, the server on the client's CPU A or on CPU B, sleeping in recv() or\n"
			       "polling. Defaults: 2000 exchanges of a 4 KiB NVMe/TCP read's sizes (72 B out,\n"
			       "4144 B back), the first two CPUs this process may use.\n",
			       RTT_TOOL);
			exit(0);
		default:
			exit(2);
		}
	}
	if (optind < argc)
		bad_arg("argument", argv[optind], "unexpected");
}

int main(int argc, char **argv)
{
	/* 72: common header and SQE; 4144: C2HData header (24) and data (4096), CapsuleResp (8 + 16). */
	struct rtt_opts o = { .exchanges = 2000, .request = 72, .response = 24 + 4096 + 24, .cpu_a = -1, .cpu_b = -1 };
	uint8_t *buf;
	uint64_t *rtt;
	int rc = 0;

	parse_args(argc, argv, &o);
	if (o.cpu_a < 0 && default_cpus(&o.cpu_a, &o.cpu_b)) {
		fprintf(stderr, "%s: cannot read this process's CPUs: %s\n", RTT_TOOL, strerror(errno));
		return 1;
	}
	buf = calloc(1, o.request > o.response ? o.request : o.response);
	rtt = calloc(o.exchanges, sizeof(*rtt));
	if (!buf || !rtt) {
		fprintf(stderr, "%s: out of memory\n", RTT_TOOL);
		return 1;
	}
	rc |= placement(&o, "one cpu, sleeping", o.cpu_a, o.cpu_a, false, buf, rtt);
	rc |= placement(&o, "one cpu, polling", o.cpu_a, o.cpu_a, true, buf, rtt);
	if (o.cpu_b >= 0) {
		rc |= placement(&o, "two cpus, sleeping", o.cpu_a, o.cpu_b, false, buf, rtt);
		rc |= placement(&o, "two cpus, polling", o.cpu_a, o.cpu_b, true, buf, rtt);
	} else {
		printf("%s: two cpus: skipped, this process may use one CPU only\n", RTT_TOOL);
	}
	free(buf);
	free(rtt);
	return rc ? 1 : 0;
}
