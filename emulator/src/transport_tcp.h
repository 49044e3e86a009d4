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
 * In-capsule data accepted on any queue. Identify reports IOCCSZ for the
 * RDMA-shaped core, but a Linux host sends Connect data in-capsule on the admin
 * queue (NVME_TCP_ADMIN_CCSZ, 8 KiB) whatever IOCCSZ says.
 */
#define ERNIC_TCP_IN_CAPSULE_DATA (8u * 1024)
/* How often a connection thread wakes to check keep-alive and shutdown. */
#define ERNIC_TCP_POLL_MS 100

#endif /* ERNIC_TRANSPORT_TCP_H */
