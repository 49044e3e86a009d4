/* SPDX-License-Identifier: MIT */
/*
 * keyed_sgl_cases.h - the keyed SGL cases the emulated RDMA engine (rdma.c
 * over mr.c, driven by rdma_ut.c) and the real one (transport_rdma.c over
 * verbs, driven by nvmf_rdma_sgl inside the lane's guest against ernicd over
 * soft-RoCE) must answer alike. Each case is a one-block Write (host write:
 * the target RDMA READs) or Read (host read: the target RDMA WRITEs) through
 * a 4 KiB host region, with one thing about the descriptor wrong.
 *
 * The outcomes are the engines' common ground. MOVED: the command succeeded
 * and the block went where it should. REFUSED: a remote access error on the
 * host's region, and not one byte moved; the emulated engine completes the
 * command with Data Transfer Error, a real RNIC fails the RDMA operation and
 * takes the queue pair down with it, so the host sees the queue go instead
 * of a completion (as from nvmet-rdma).
 */
#ifndef ERNIC_KEYED_SGL_CASES_H
#define ERNIC_KEYED_SGL_CASES_H

enum ksgl_dir {
	KSGL_HOST_WRITE, /* Write: RDMA READ out of the region */
	KSGL_HOST_READ,	 /* Read: RDMA WRITE into the region */
};

enum ksgl_fault {
	KSGL_NONE,
	KSGL_WRONG_KEY,	       /* the region's rkey with its 8-bit key changed */
	KSGL_BEYOND_REGION,    /* starts 512 bytes into the region, ends 512 past it */
	KSGL_INVALIDATED,      /* the host invalidated the region before the command */
	KSGL_REMOTE_INVALIDATE, /* a first command with subtype Fh (SEND with Invalidate), then this one */
};

enum ksgl_outcome {
	KSGL_MOVED,
	KSGL_REFUSED,
};

struct ksgl_case {
	const char *name;
	enum ksgl_fault fault;
	enum ksgl_dir dir;
	enum ksgl_outcome want;
};

static const struct ksgl_case ksgl_cases[] = {
	{ "correct key, host write", KSGL_NONE, KSGL_HOST_WRITE, KSGL_MOVED },
	{ "correct key, host read", KSGL_NONE, KSGL_HOST_READ, KSGL_MOVED },
	{ "wrong key, host write", KSGL_WRONG_KEY, KSGL_HOST_WRITE, KSGL_REFUSED },
	{ "wrong key, host read", KSGL_WRONG_KEY, KSGL_HOST_READ, KSGL_REFUSED },
	{ "beyond the region, host write", KSGL_BEYOND_REGION, KSGL_HOST_WRITE, KSGL_REFUSED },
	{ "beyond the region, host read", KSGL_BEYOND_REGION, KSGL_HOST_READ, KSGL_REFUSED },
	{ "invalidated region, host write", KSGL_INVALIDATED, KSGL_HOST_WRITE, KSGL_REFUSED },
	{ "invalidated region, host read", KSGL_INVALIDATED, KSGL_HOST_READ, KSGL_REFUSED },
	{ "key of a remote invalidate, host write", KSGL_REMOTE_INVALIDATE, KSGL_HOST_WRITE, KSGL_REFUSED },
	{ "key of a remote invalidate, host read", KSGL_REMOTE_INVALIDATE, KSGL_HOST_READ, KSGL_REFUSED },
};

#define KSGL_NR_CASES (sizeof(ksgl_cases) / sizeof(ksgl_cases[0]))
#define KSGL_BLOCK 4096u
/* The one LBA every case moves (4 KiB blocks). */
#define KSGL_SLBA 2u

static inline const char *ksgl_outcome_str(enum ksgl_outcome o)
{
	return o == KSGL_MOVED ? "moved" : "refused";
}

#endif /* ERNIC_KEYED_SGL_CASES_H */
