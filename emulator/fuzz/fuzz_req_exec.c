/* SPDX-License-Identifier: MIT */
/*
 * fuzz_req_exec.c - ernic_req_exec() with arbitrary capsules and data.
 *
 * Input: one byte of set-up flags, then records of
 *   queue (1 byte: 0 admin, 1 and 2 I/O) | SQE (64 bytes) | data length (2 bytes LE) | data
 * Set-up flags: FUZZ_SETUP_ADMIN runs a valid admin Connect and CC.EN first
 * (FUZZ_SETUP_DISCOVERY: to the discovery subsystem instead), FUZZ_SETUP_IO a
 * valid I/O Connect of queue 1; without them every command meets the queues
 * before Connect. The stand-in transport gives the core exactly the length it
 * asks for, from the record's data. Every queue is torn down after the input,
 * so each input starts on a target with no controller.
 */
#include "fuzz.h"

#define FUZZ_SETUP_ADMIN (1u << 0)
#define FUZZ_SETUP_IO (1u << 1)
#define FUZZ_SETUP_DISCOVERY (1u << 2)
#define FUZZ_NR_QUEUES 3
#define FUZZ_MAX_CMDS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ernic_target *tgt;
static struct fuzz_q queues[FUZZ_NR_QUEUES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *end = data + size;
	uint8_t setup;
	int cntlid = -1;

	if (!tgt)
		tgt = fuzz_target_new();
	if (size < 1)
		return 0;
	setup = *data++;
	for (int i = 0; i < FUZZ_NR_QUEUES; i++)
		fuzz_q_init(&queues[i], tgt);
	if (setup & FUZZ_SETUP_ADMIN)
		cntlid = fuzz_admin_up(&queues[0], setup & FUZZ_SETUP_DISCOVERY);
	if ((setup & FUZZ_SETUP_IO) && cntlid >= 0)
		fuzz_io_up(&queues[1], 1, (uint16_t)cntlid);

	for (int n = 0; n < FUZZ_MAX_CMDS && end - data >= 1 + 64 + 2; n++) {
		struct fuzz_q *q = &queues[*data % FUZZ_NR_QUEUES];
		struct nvme_sqe sqe;
		size_t len;
		int status;

		memcpy(&sqe, data + 1, sizeof(sqe));
		len = MIN((size_t)(data[65] | data[66] << 8), (size_t)(end - data - 67));
		status = fuzz_q_exec(q, &sqe, data + 67, len, NULL);
		/* FUZZ_TRACE=1: one line per command, to see what a seed reaches. */
		if (getenv("FUZZ_TRACE"))
			fprintf(stderr, "q%u opc 0x%02x: %s\n", *data % FUZZ_NR_QUEUES, sqe.opc,
				status < 0 ? "no free slot" : ernic_status_str((uint16_t)status));
		data += 67 + len;
	}
	/* I/O queues first, as a host tears down; the admin queue's going frees the controller. */
	for (int i = FUZZ_NR_QUEUES - 1; i >= 0; i--)
		fuzz_q_destroy(&queues[i]);
	return 0;
}
