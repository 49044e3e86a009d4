/* SPDX-License-Identifier: MIT */
/*
 * trace.h - what a fabric port uses to sample commands (trace.c); the record,
 * the stages and their sums are the public ernic/trace.h.
 *
 * A port holds one struct ernic_trace, each of its queues one struct
 * ernic_trace_queue. A queue thread, per command:
 *
 *	if (ernic_trace_due(&q->tq))
 *		ernic_trace_begin(&port->trace, &q->tq, qid, &r->req, &r->stamps, &r->rec);
 *	... r->rec.exec = ernic_now_ns() and so on, only when r->req.stamps ...
 *	ernic_trace_end(&port->trace, &q->tq, &r->req, &r->stamps, &r->rec);
 *
 * An unsampled command pays the decrement and the branch. The queue thread is
 * the only producer of its ring; the writer thread and ernic_trace_queue_stop()
 * are its consumers, one at a time under the trace's lock.
 */
#ifndef ERNIC_SRC_TRACE_H
#define ERNIC_SRC_TRACE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "ernic/trace.h"
#include "target.h"

struct ernic_trace_ring;

/**
 * struct ernic_trace - a port's sampling, its stage sums and its trace file
 * @every: stamp 1 in this many commands on each I/O queue (0: none)
 * @file: where the records go (NULL: none; the sums are kept either way)
 * @transport: named in the file's header ("tcp", "rdma")
 * @max_bytes: the file's size limit, its header included (0: none)
 * @bytes: written to @file so far
 * @lock: @file, @bytes, @stats and @rings
 */
struct ernic_trace {
	uint32_t every;
	FILE *file;
	uint64_t max_bytes;
	uint64_t bytes;
	const char *transport;
	pthread_mutex_t lock;
	struct ernic_trace_stats stats;
	struct ernic_trace_ring *rings;
	pthread_t writer;
	bool writing; /* @writer runs */
	atomic_bool stop;
};

/**
 * struct ernic_trace_queue - one queue's sampling state (its thread only)
 * @sample_left: commands until the next sampled one; never reaches 0 while
 *	the queue is not sampled (an admin queue, one before Connect)
 * @ring: records on their way to the file; NULL without a file
 */
struct ernic_trace_queue {
	uint32_t sample_left;
	struct ernic_trace_ring *ring;
};

/*
 * @every, @file and @max_bytes as above, @stages the stages the transport
 * stamps (ERNIC_TRACE_STAGES_*); writes the header and starts the writer when
 * there is a file. Past @max_bytes the writer leaves records out, counted in
 * the stats' over_limit; the stage sums still take every sample. Returns 0
 * or -errno.
 */
int ernic_trace_init(struct ernic_trace *t, const char *transport, uint32_t every, FILE *file, uint64_t max_bytes,
		     uint32_t stages);
/* After every queue stopped: stop the writer, which wrote all (the file stays the caller's). Idempotent. */
void ernic_trace_stop(struct ernic_trace *t);
/* Stop, and free what init took. */
void ernic_trace_fini(struct ernic_trace *t);

/* A queue not sampled (yet). */
void ernic_trace_queue_init(struct ernic_trace_queue *tq);
/*
 * An I/O queue connected: sample from now on, with a ring when there is a
 * file (without one, for lack of memory, its records count as dropped).
 */
void ernic_trace_queue_start(struct ernic_trace *t, struct ernic_trace_queue *tq);
/* The queue goes: what its ring holds is written, the ring freed. */
void ernic_trace_queue_stop(struct ernic_trace *t, struct ernic_trace_queue *tq);

/* The countdown, per command received: true when this one is due for a sample. */
static inline bool ernic_trace_due(struct ernic_trace_queue *tq)
{
	return ERNIC_UNLIKELY(--tq->sample_left == 0);
}

/*
 * A due command: stamp it (@rec.rx now, @req->stamps = @st) when @qid is a
 * sampled I/O queue (nonzero; a queue not connected passes 0) and return
 * true; otherwise the countdown wraps round and nothing is stamped.
 */
bool ernic_trace_begin(struct ernic_trace *t, struct ernic_trace_queue *tq, uint16_t qid, struct ernic_req *req,
		       struct ernic_stage_stamps *st, struct ernic_trace_rec *rec);
/*
 * A sampled command's response left (the transport stamped @rec->sent and
 * whatever else it stamps): its status and storage times completed from
 * @req and @st, its stages summed, the record queued for the writer.
 */
void ernic_trace_end(struct ernic_trace *t, struct ernic_trace_queue *tq, const struct ernic_req *req,
		     const struct ernic_stage_stamps *st, struct ernic_trace_rec *rec);

/* The sums so far; safe at any time from any thread. */
void ernic_trace_stats(struct ernic_trace *t, struct ernic_trace_stats *s);

#endif /* ERNIC_SRC_TRACE_H */
