/* SPDX-License-Identifier: MIT */
/*
 * control.h - the run-time control plane of a set of subsystems served over
 * NVMe/TCP (ernicd --control, ernicctl): line-delimited JSON requests on a
 * Unix socket, the same requests from a file at start (--config).
 *
 * A request is one JSON object on one line:
 *	{"method":"subsystem_add","params":{"nqn":"nqn.2026-11.io.ernic:a"}}
 * and its response one line: {"result":...} or
 *	{"error":{"code":ERRNO,"message":"one line naming the key and value"}}
 * The methods and their parameters are listed in README.md and by
 * `ernicctl --help`. Requests run one at a time, in arrival order.
 */
#ifndef ERNIC_CONTROL_H
#define ERNIC_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "ernic/nvmf.h"
#include "ernic/tcp.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ernic_control;

/*
 * A control plane over @nvmf; each listener it adds is an NVMe/TCP port
 * created with @tcp_opts (NULL for the defaults). It owns those ports.
 */
int ernic_control_create(struct ernic_nvmf *nvmf, const struct ernic_tcp_port_opts *tcp_opts,
			 struct ernic_control **out);
/*
 * Stop serving the socket and stop every listener as ernic_tcp_port_stop()
 * does, commands moving data given up to @grace_ms; the set stays.
 */
void ernic_control_stop(struct ernic_control *ctl, unsigned int grace_ms);
/* ernic_control_stop() with a short grace, then free every listener. */
void ernic_control_destroy(struct ernic_control *ctl);

/*
 * Run one request line; returns its response line (no newline), to free().
 * NULL only when out of memory.
 */
char *ernic_control_request(struct ernic_control *ctl, const char *line);

/*
 * Run every request of the JSON file @path: an array of request objects, or
 * one object with a "requests" array. Stops at the first that fails: -errno
 * with @err naming the file, the request's index and method, and the error.
 */
int ernic_control_load(struct ernic_control *ctl, const char *path, char *err, size_t errlen);

/*
 * Serve requests on a Unix stream socket at @path (mode 0600, replacing a
 * stale socket file), one connection at a time, from a thread of its own.
 */
int ernic_control_listen(struct ernic_control *ctl, const char *path, char *err, size_t errlen);

/*
 * What ernicd's command line does through the same code as the requests:
 * add a listener of @subnqn at @traddr:@trsvcid ("0" picks a free port,
 * whose number *@bound gets).
 */
int ernic_control_listener_add(struct ernic_control *ctl, const char *subnqn, const char *traddr,
			       const char *trsvcid, uint16_t *bound, char *err, size_t errlen);

/* The stage times of the sampled commands over every listener's NVMe/TCP port (ernic_tcp_port_stage_stats). */
void ernic_control_tcp_stage_stats(struct ernic_control *ctl, struct ernic_trace_stats *s);
/* The waits for hosts over every listener's NVMe/TCP port (ernic_tcp_port_wait_stats), summed. */
void ernic_control_tcp_wait_stats(struct ernic_control *ctl, struct ernic_tcp_wait_stats *s);
/* How PDUs left every listener's NVMe/TCP port (ernic_tcp_port_tx_stats), summed. */
void ernic_control_tcp_tx_stats(struct ernic_control *ctl, struct ernic_tcp_tx_stats *s);
/* What every listener's NVMe/TCP command slots hold in data buffers now (ernic_tcp_port_buf_bytes), summed. */
uint64_t ernic_control_tcp_buf_bytes(struct ernic_control *ctl);
/* Every listener's NVMe/TCP data buffers against its budget (ernic_tcp_port_buf_stats), summed. */
void ernic_control_tcp_buf_stats(struct ernic_control *ctl, struct ernic_tcp_buf_stats *s);

#ifdef __cplusplus
}
#endif
#endif /* ERNIC_CONTROL_H */
