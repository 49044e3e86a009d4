/* SPDX-License-Identifier: MIT */
/*
 * crc32c.h - CRC32C (Castagnoli), the NVMe/TCP header and data digest.
 */
#ifndef ERNIC_CRC32C_H
#define ERNIC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * ernic_crc32c() - continue a CRC32C over @buf
 * @crc: 0 to start, or the result of a previous call to chain buffers
 *
 * Returns the finished CRC32C (initial value ~0, final inversion), so
 * ernic_crc32c(0, "123456789", 9) == 0xE3069283 and the result is what
 * NVMe/TCP carries, little endian, in HDGST and DDGST.
 */
uint32_t ernic_crc32c(uint32_t crc, const void *buf, size_t len);

#endif /* ERNIC_CRC32C_H */
