/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tcp_pdu.c - the NVMe/TCP receive path fed a byte stream.
 *
 * The input is what a host writes on one connection: it goes into one end of
 * a socketpair whose other end the port serves (ernic_tcp_serve_fd), then the
 * write side is shut; whatever the controller answers is read and dropped
 * until it closes. One target, one port and one enabled controller (cntlid
 * FUZZ_ANCHOR_CNTLID, host FUZZ_HOSTNQN, never torn down) live for the whole
 * run, so an input can carry an I/O Connect to that controller and reach the
 * I/O path (R2T, H2CData) on its single connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "transport_tcp.h"

/* The first controller of a fresh target: the one gen_corpus.c writes into its I/O Connects. */
#define FUZZ_ANCHOR_CNTLID 1
/* A controller that answers nothing for this long is stuck: a bug libFuzzer should see. */
#define FUZZ_STALL_MS 5000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ernic_target *tgt;
static struct ernic_tcp_port *port;
static struct fuzz_q anchor;

static void fuzz_tcp_setup(void)
{
	/* FUZZ_TRACE=1 logs every connect, refusal and fatal error: to see what a seed reaches. */
	/*
	 * A buffer budget of two MDTS buffers: a few writes by R2T of more than a slot's first 8 KiB fill it, so
	 * inputs reach the waits for a buffer (tcp_req_buf_in_turn()) and in-capsule data gathered in rbuf.
	 */
	struct ernic_tcp_port_opts opts = { .log = getenv("FUZZ_TRACE") ? stderr : NULL,
					    .buf_budget = 2 * ERNIC_MAX_XFER };

	tgt = fuzz_target_new();
	fuzz_q_init(&anchor, tgt);
	if (fuzz_admin_up(&anchor, false) != FUZZ_ANCHOR_CNTLID || ernic_tcp_port_create(tgt, &opts, &port)) {
		fprintf(stderr, "fuzz_tcp_pdu: setup failed\n");
		abort();
	}
}

/* Write @data while draining the answers, shut the write side, drain until the controller closes. */
static void fuzz_tcp_feed(int fd, const uint8_t *data, size_t size)
{
	char sink[64 * 1024];
	size_t off = 0;
	bool wr_open = true;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN | (wr_open ? POLLOUT : 0) };
		ssize_t n;

		if (wr_open && off == size) {
			shutdown(fd, SHUT_WR);
			wr_open = false;
			continue;
		}
		if (poll(&pfd, 1, FUZZ_STALL_MS) == 0) {
			fprintf(stderr, "fuzz_tcp_pdu: the controller neither reads nor closes\n");
			abort();
		}
		if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				return;
		}
		if (wr_open && (pfd.revents & POLLOUT)) {
			n = send(fd, data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0)
				off += (size_t)n;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				wr_open = false; /* the controller closed first (a fatal error) */
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2];

	if (!tgt)
		fuzz_tcp_setup();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	if (ernic_tcp_serve_fd(port, sv[1]))
		abort();
	fuzz_tcp_feed(sv[0], data, size);
	close(sv[0]);
	/* The next input must not meet this connection's queue on the anchor controller. */
	while (ernic_tcp_port_nr_conns(port))
		sched_yield();
	return 0;
}
