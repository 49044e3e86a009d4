/* SPDX-License-Identifier: MIT */
/*
 * trace.h - per-stage stamps of sampled commands on a fabric port (NVMe/TCP,
 * NVMe/RDMA), the same record and the same stage sums whatever the transport.
 *
 * A port that samples stamps 1 command in N on each I/O queue, in
 * CLOCK_MONOTONIC nanoseconds: the clock of Linux tracefs with
 * trace_clock=mono, so a host trace taken on the same machine joins the
 * records by (qid, cid) and time (suites/lad/fabric-report). A record is
 * complete when the response left; its stage times are summed per port and
 * the record goes to the port's trace file, written by a thread of its own so
 * the queue threads never format or write.
 */
#ifndef ERNIC_TRACE_H
#define ERNIC_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The stages of a record, in the order a command passes them (a stage ends at
 * the stamp it is named after in struct ernic_trace_rec):
 * @ERNIC_TRACE_STAGE_RECEIVED: @rx -> @exec: the capsule received until the
 *	core has it; holds the data transfer a host write needs first (NVMe/TCP:
 *	the R2T round trip, NVMe/RDMA: the RDMA READ)
 * @ERNIC_TRACE_STAGE_CORE_SUBMIT: @exec -> @storage_start
 * @ERNIC_TRACE_STAGE_STORAGE: @storage_start -> @storage_done
 * @ERNIC_TRACE_STAGE_CORE_COMPLETE: @storage_done -> @queued
 * @ERNIC_TRACE_STAGE_SEND: @queued -> @sent: the response (and a read's data)
 *	handed to the network
 * @ERNIC_TRACE_STAGE_DATA: @data_start -> @data_done: the RDMA READ of a
 *	host write or the RDMA WRITE of a host read, posted until its work
 *	completion was polled (NVMe/RDMA only, commands that move data)
 * @ERNIC_TRACE_STAGE_SEND_DONE: @sent -> @send_done: the response SEND
 *	posted until its work completion was polled, i.e. the host's RNIC
 *	acknowledged it (NVMe/RDMA only)
 * @ERNIC_TRACE_STAGE_TOTAL: @rx -> @sent
 */
enum ernic_trace_stage {
	ERNIC_TRACE_STAGE_RECEIVED,
	ERNIC_TRACE_STAGE_CORE_SUBMIT,
	ERNIC_TRACE_STAGE_STORAGE,
	ERNIC_TRACE_STAGE_CORE_COMPLETE,
	ERNIC_TRACE_STAGE_SEND,
	ERNIC_TRACE_STAGE_DATA,
	ERNIC_TRACE_STAGE_SEND_DONE,
	ERNIC_TRACE_STAGE_TOTAL,
	ERNIC_TRACE_STAGE_COUNT,
};

/* The stages every fabric port stamps; NVMe/RDMA adds DATA and SEND_DONE. */
#define ERNIC_TRACE_STAGES_COMMON                                                                       \
	((1u << ERNIC_TRACE_STAGE_RECEIVED) | (1u << ERNIC_TRACE_STAGE_CORE_SUBMIT) |                    \
	 (1u << ERNIC_TRACE_STAGE_STORAGE) | (1u << ERNIC_TRACE_STAGE_CORE_COMPLETE) |                   \
	 (1u << ERNIC_TRACE_STAGE_SEND) | (1u << ERNIC_TRACE_STAGE_TOTAL))
#define ERNIC_TRACE_STAGES_ALL ((1u << ERNIC_TRACE_STAGE_COUNT) - 1)

/**
 * struct ernic_trace_rec - one sampled command, as the trace writes it
 * @rx: the command capsule received (NVMe/TCP: it and its in-capsule data
 *	fully read from the socket; NVMe/RDMA: its receive completion polled)
 * @exec: handed to the controller core (after the data of a host write)
 * @storage_start: first namespace backend call entered (@exec when the
 *	command made none)
 * @storage_done: last backend call returned (@storage_start when none)
 * @storage_ns: time inside backend calls (at most @storage_done - @storage_start)
 * @queued: the completion reached the transport, its response next to send
 * @sent: the response handed to the network (NVMe/TCP: the last byte of the
 *	CapsuleResp, or of C2HData with SUCCESS, to the socket; NVMe/RDMA: the
 *	response SEND posted, chained after the RDMA WRITE of a read's data)
 * @data_start: the RDMA READ or RDMA WRITE of the command's data posted
 *	(0: none, or a transport that does not stamp it)
 * @data_done: its work completion polled (0 as @data_start)
 * @send_done: the response SEND's work completion polled (0: not stamped)
 * @qid: the queue (its Connect's QID), @cid: the command identifier,
 * @opc: the opcode, @status: the completion status (SCT << 8 | SC)
 */
struct ernic_trace_rec {
	uint64_t rx;
	uint64_t exec;
	uint64_t storage_start;
	uint64_t storage_done;
	uint64_t storage_ns;
	uint64_t queued;
	uint64_t sent;
	uint64_t data_start;
	uint64_t data_done;
	uint64_t send_done;
	uint16_t qid;
	uint16_t cid;
	uint16_t status;
	uint8_t opc;
};

/*
 * The trace file's first line, "# ernic-trace transport=<name> " and then
 * this; then one line per record, these columns, decimal (@opc and @status
 * hex). The first eleven columns are those of the NVMe/TCP trace before
 * NVMe/RDMA stamped more.
 */
#define ERNIC_TRACE_HEADER_PREFIX "# ernic-trace transport="
#define ERNIC_TRACE_HEADER_COLUMNS                                                                      \
	"clock=CLOCK_MONOTONIC unit=ns columns=qid cid opc status rx exec storage_start storage_done "  \
	"storage_ns queued sent data_start data_done send_done"

/* Records a queue holds for the trace writer before it drops the next ones. */
#define ERNIC_TRACE_RING 4096
/* How often the trace writer empties the queues' rings. */
#define ERNIC_TRACE_FLUSH_MS 100

/**
 * struct ernic_trace_stats - stage times of the sampled commands, summed
 * over every I/O queue a port has served
 * @samples: commands sampled whose response was sent
 * @dropped: records the trace writer never got (a queue's ring was full)
 * @over_limit: records the writer left out because the file had reached its
 *	size limit (the port's trace_max_bytes; ernicd --trace-max-size)
 * @stages: the stages the port stamps (bit 1 << enum ernic_trace_stage)
 * @count: per stage, the samples that passed it (a flush moves no data)
 * @sum_ns: per stage, the sum (mean = sum_ns / count)
 * @max_ns: per stage, the largest single value
 */
struct ernic_trace_stats {
	uint64_t samples;
	uint64_t dropped;
	uint64_t over_limit;
	uint32_t stages;
	uint64_t count[ERNIC_TRACE_STAGE_COUNT];
	uint64_t sum_ns[ERNIC_TRACE_STAGE_COUNT];
	uint64_t max_ns[ERNIC_TRACE_STAGE_COUNT];
};

/* A stage's name as a C identifier ("received", ..., "total"); NULL when out of range. */
const char *ernic_trace_stage_name(enum ernic_trace_stage stage);
/* Add @b's samples to @a (two ports' stats into one). */
void ernic_trace_stats_add(struct ernic_trace_stats *a, const struct ernic_trace_stats *b);
/*
 * The stats as one JSON object: samples, dropped, over_limit, and for each stage the port
 * stamps its mean and max in microseconds ("mean_us", "max_us") and how many
 * samples passed it ("count"). Returns bytes written (excl. NUL) or -ENOSPC.
 */
int ernic_trace_stats_json(const struct ernic_trace_stats *s, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* ERNIC_TRACE_H */
