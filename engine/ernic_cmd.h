/* SPDX-License-Identifier: MIT */
/*
 * The ernic engine's command layer, free of fio so that CUnit can test it
 * alone (engine/tests/cmd_ut.c): the SQE of one command, built once for both
 * of the engine's modes; its translation into the kernel's passthrough
 * command; the status a passthrough completion carries; the device names.
 *
 * Only engine/ernic.c and its tests include this header.
 */
#ifndef ERNIC_ENGINE_CMD_H
#define ERNIC_ENGINE_CMD_H

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/nvme_ioctl.h>

#include "ernic/nvme_spec.h"

/*
 * Linux keeps the completion's status field shifted right by one (phase tag
 * dropped): SCT << 8 | SC in bits 10:0, CRD 12:11, More 13, DNR 14. That is
 * what a passthrough ioctl returns and what an io_uring passthrough CQE
 * carries in res.
 */
#define ERNIC_LINUX_SC_DNR 0x4000u

/**
 * struct ernic_cmd - one command of an I/O, as the engine's two modes send it
 * @opc: the opcode
 * @nsid: the namespace
 * @slba: first LBA (Read, Write, Write Zeroes, other LBA-addressed opcodes)
 * @nlb: blocks, 1-based (0 for Flush), at most ERNIC_CMD_MAX_NLB
 * @fua: set Force Unit Access (writes)
 * @dsm: Dataset Management with one range, deallocate
 */
struct ernic_cmd {
	uint8_t opc;
	uint32_t nsid;
	uint64_t slba;
	uint32_t nlb;
	bool fua;
	bool dsm;
};

/* NLB (CDW12 bits 15:0) is 0's based: one LBA-addressed command names 65536 blocks at most. */
#define ERNIC_CMD_MAX_NLB 65536u

/*
 * Bytes one LBA-addressed command may carry: @max_xfer (MDTS, the host's own
 * limit), but never more blocks than NLB can say. A wrapped NLB names fewer
 * blocks than the host meant: a Read or Write then fails on its SGL length,
 * but a Write Zeroes, which has none, would zero fewer and succeed.
 */
static inline uint32_t ernic_cmd_max_xfer(uint32_t max_xfer, uint32_t lba_shift)
{
	uint64_t nlb_bytes = (uint64_t)ERNIC_CMD_MAX_NLB << lba_shift;

	return nlb_bytes < max_xfer ? (uint32_t)nlb_bytes : max_xfer;
}

/**
 * ernic_cmd_sqe() - the SQE of @cmd, the one both modes submit
 *
 * Dataset Management carries its range as data (the caller's 16-byte
 * struct nvme_dsm_range); Flush carries nothing; every other opcode is
 * LBA-addressed (NVM Command Set Figure 31's CDW10..12 layout), with @nlb
 * at most ERNIC_CMD_MAX_NLB (the caller splits or refuses past it).
 */
static inline void ernic_cmd_sqe(const struct ernic_cmd *cmd, struct nvme_sqe *sqe)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opc = cmd->opc;
	sqe->nsid = cmd->nsid;
	if (cmd->dsm) {
		sqe->cdw10 = 0; /* NR: one range, 0's based */
		sqe->cdw11 = NVME_DSM_ATTR_DEALLOCATE;
		return;
	}
	if (cmd->opc == NVME_CMD_FLUSH || !cmd->nlb)
		return;
	sqe->cdw10 = (uint32_t)cmd->slba;
	sqe->cdw11 = (uint32_t)(cmd->slba >> 32);
	sqe->cdw12 = (cmd->nlb - 1) & 0xFFFF;
	if (cmd->fua)
		sqe->cdw12 |= NVME_RW_FUA;
}

/*
 * The kernel's passthrough command for @sqe with @len bytes at @buf. The
 * layouts of struct nvme_uring_cmd and struct nvme_passthru_cmd64 agree on
 * every field set here; the kernel builds the data pointer itself.
 */
#define ERNIC_CMD_PASSTHRU(pt, sqe, buf, len)                                                                   \
	do {                                                                                                     \
		memset((pt), 0, sizeof(*(pt)));                                                                  \
		(pt)->opcode = (sqe)->opc;                                                                       \
		(pt)->nsid = (sqe)->nsid;                                                                        \
		(pt)->cdw2 = (sqe)->cdw2;                                                                        \
		(pt)->cdw3 = (sqe)->cdw3;                                                                        \
		(pt)->addr = (uint64_t)(uintptr_t)(buf);                                                         \
		(pt)->data_len = (len);                                                                          \
		(pt)->cdw10 = (sqe)->cdw10;                                                                      \
		(pt)->cdw11 = (sqe)->cdw11;                                                                      \
		(pt)->cdw12 = (sqe)->cdw12;                                                                      \
		(pt)->cdw13 = (sqe)->cdw13;                                                                      \
		(pt)->cdw14 = (sqe)->cdw14;                                                                      \
		(pt)->cdw15 = (sqe)->cdw15;                                                                      \
	} while (0)

static inline void ernic_cmd_uring(const struct nvme_sqe *sqe, void *buf, uint32_t len, struct nvme_uring_cmd *uc)
{
	ERNIC_CMD_PASSTHRU(uc, sqe, buf, len);
}

static inline void ernic_cmd_ioctl(const struct nvme_sqe *sqe, void *buf, uint32_t len,
				   struct nvme_passthru_cmd64 *pc)
{
	ERNIC_CMD_PASSTHRU(pc, sqe, buf, len);
}

/**
 * struct ernic_cmd_status - how one command ended
 * @status: SCT << 8 | SC, 0 when the controller answered success or never answered
 * @dnr: Do Not Retry was set
 * @nvme: the controller answered (@status is its answer)
 * @err: the errno fio is told, 0 on success
 */
struct ernic_cmd_status {
	uint16_t status;
	bool dnr;
	bool nvme;
	int err;
};

/*
 * errno for an NVMe status: a request the namespace cannot take as sent (a
 * field, the SGL length, an LBA range) is EINVAL, a namespace that is not
 * there ENXIO, a full one ENOSPC (Linux's nvme_error_status(): Capacity
 * Exceeded is BLK_STS_NOSPC; fio's fill_device=1 ends cleanly on it),
 * anything else an I/O error.
 */
static inline int ernic_status_errno(uint16_t status)
{
	switch (NVME_CQE_STATUS(status)) {
	case NVME_SC_SUCCESS:
		return 0;
	case NVME_SC_INVALID_FIELD:
	case NVME_SC_SGL_INVALID_DATA_LEN:
	case NVME_SC_LBA_RANGE:
		return EINVAL;
	case NVME_SC_INVALID_NS:
		return ENXIO;
	case NVME_SC_CAP_EXCEEDED:
		return ENOSPC;
	default:
		return EIO;
	}
}

/*
 * A passthrough completion's result (an ioctl's return value, a CQE's res):
 * negative, the kernel refused or failed the command itself (-errno); else
 * the controller's status field as Linux keeps it (ERNIC_LINUX_SC_DNR).
 */
static inline struct ernic_cmd_status ernic_cmd_passthru_status(int res)
{
	struct ernic_cmd_status st = { 0 };

	if (res < 0) {
		st.err = -res;
		return st;
	}
	st.nvme = true;
	st.status = NVME_CQE_STATUS((unsigned int)res);
	st.dnr = ((unsigned int)res & ERNIC_LINUX_SC_DNR) != 0;
	st.err = ernic_status_errno(st.status);
	return st;
}

/**
 * ernic_dev_names() - the generic character device and controller of a namespace path
 * @path: /dev/ngXnY, or the block device /dev/nvmeXnY, which maps to its ng twin
 * @ng: /dev/ngXnY
 * @ctrl: /dev/nvmeX, the controller's character device for admin commands
 *
 * Returns 0, or -EINVAL when @path names neither (the caller then treats the
 * file as the in-process mode's label). Partitions (/dev/nvme0n1p1) have no
 * ng twin and are refused.
 */
static inline int ernic_dev_names(const char *path, char *ng, size_t nglen, char *ctrl, size_t ctrllen)
{
	const char *p;
	unsigned long x, y;
	char *end;

	if (!strncmp(path, "/dev/ng", 7))
		p = path + 7;
	else if (!strncmp(path, "/dev/nvme", 9))
		p = path + 9;
	else
		return -EINVAL;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	x = strtoul(p, &end, 10);
	if (*end != 'n' || end[1] < '0' || end[1] > '9')
		return -EINVAL;
	y = strtoul(end + 1, &end, 10);
	if (*end || y == 0 || x > 9999 || y > 999999)
		return -EINVAL;
	snprintf(ng, nglen, "/dev/ng%lun%lu", x, y);
	snprintf(ctrl, ctrllen, "/dev/nvme%lu", x);
	return 0;
}

/*
 * The value of ernic_opcode: 0..255 in decimal or 0x hex, or -1 when @s is
 * not one (the caller names the option and value).
 */
/*
 * A whole-number option's value: decimal (a leading 0 is no octal) or 0x
 * hex, nothing around it, at most @max. 0, or -1 when it is not one (a sign,
 * a space, a suffix, a range).
 */
static inline int ernic_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	int base = 10;
	unsigned long long v;
	char *end;

	if (!s)
		return -1;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!isxdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

static inline int ernic_parse_opcode(const char *s)
{
	uint64_t v;

	return ernic_parse_u64(s, 0xFF, &v) ? -1 : (int)v;
}

/* Bytes in one command at most: MDTS (units of the minimum page, 0 = no limit) and the host's own limit. */
static inline uint32_t ernic_dev_max_xfer(uint8_t mdts, uint32_t page, uint64_t host_max)
{
	uint64_t b = mdts ? (uint64_t)page << mdts : UINT64_MAX;

	if (host_max && host_max < b)
		b = host_max;
	if (b > (1u << 30))
		b = 1u << 30;
	return (uint32_t)b;
}

#endif
