/* SPDX-License-Identifier: MIT */
/*
 * transport_tcp.h - the NVMe/TCP transport's internals (TCP Transport
 * Binding 1.0); its API is the public ernic/tcp.h.
 *
 * A port owns a listening socket and the connections accepted on it. Each
 * connection is one NVMe queue served by its own thread with blocking I/O;
 * every command goes through the same controller core as the in-process
 * transport (ernic_req_exec), so this file only moves PDUs.
 */
#ifndef ERNIC_TRANSPORT_TCP_H
#define ERNIC_TRANSPORT_TCP_H

#include <stdint.h>

#include "ernic/tcp.h"
#include "target.h"

/*
 * In-capsule data accepted on any queue, and reported in IOCCSZ: a Linux host
 * sends a write of up to IOCCSZ * 16 - 64 bytes with its command (and Connect
 * data on the admin queue, NVME_TCP_ADMIN_CCSZ, 8 KiB, whatever IOCCSZ says).
 * One default MDTS transfer (128 KiB), so no write within it waits for an
 * R2T and the H2CData it solicits: a round trip per command saved, and on a
 * loopback or an emulated CPU each is a wake-up of the host. The data arrives
 * unsolicited, but only into the receive buffer or the one slot being read
 * (a slot's buffer grows to it on first use, as for R2T data), and TCP's own
 * window holds the rest back.
 */
#define ERNIC_TCP_IN_CAPSULE_DATA (128u * 1024)
/* How often a connection thread wakes to check keep-alive and shutdown. */
#define ERNIC_TCP_POLL_MS 100

#endif /* ERNIC_TRANSPORT_TCP_H */
