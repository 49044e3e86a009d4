/* SPDX-License-Identifier: MIT */
/*
 * crc32c.c - CRC32C through ISA-L.
 *
 * ISA-L's crc32_iscsi() neither inverts its seed nor its result: it runs the
 * raw reflected register. The standard CRC32C (iSCSI, NVMe/TCP) starts the
 * register at ~0 and inverts at the end, so a finished CRC is turned back into
 * a register by inverting it, which is also what lets calls chain.
 */
#include <isa-l/crc.h>
#include <limits.h>

#include "crc32c.h"

uint32_t ernic_crc32c(uint32_t crc, const void *buf, size_t len)
{
	unsigned char *p = (unsigned char *)buf;
	uint32_t reg = ~crc;

	/* crc32_iscsi() takes an int length. */
	while (len) {
		int chunk = len > INT_MAX ? INT_MAX : (int)len;

		reg = crc32_iscsi(p, chunk, reg);
		p += chunk;
		len -= (size_t)chunk;
	}
	return ~reg;
}
