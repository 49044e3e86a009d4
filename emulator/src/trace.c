/* SPDX-License-Identifier: MIT */
/*
 * trace.c - sampled commands of a fabric port: the countdown, the record,
 * the stage sums and the writer of the trace file, shared by NVMe/TCP and
 * NVMe/RDMA (the transports only stamp the moments that are theirs).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

/*
 * Sampled records on their way to the trace file: the queue thread produces,
 * the writer consumes, no lock between them.
 */
struct ernic_trace_ring {
	_Atomic uint32_t head; /* next slot the queue thread fills */
	_Atomic uint32_t tail; /* next slot the writer reads */
	struct ernic_trace_ring *next; /* the trace's list, under its lock */
	struct ernic_trace_rec rec[ERNIC_TRACE_RING];
};

static const char *const trace_stage_names[ERNIC_TRACE_STAGE_COUNT] = {
	[ERNIC_TRACE_STAGE_RECEIVED] = "received",
	[ERNIC_TRACE_STAGE_CORE_SUBMIT] = "core_submit",
	[ERNIC_TRACE_STAGE_STORAGE] = "storage",
	[ERNIC_TRACE_STAGE_CORE_COMPLETE] = "core_complete",
	[ERNIC_TRACE_STAGE_SEND] = "send",
	[ERNIC_TRACE_STAGE_DATA] = "data",
	[ERNIC_TRACE_STAGE_SEND_DONE] = "send_done",
	[ERNIC_TRACE_STAGE_TOTAL] = "total",
};

const char *ernic_trace_stage_name(enum ernic_trace_stage stage)
{
	return (unsigned int)stage < ERNIC_TRACE_STAGE_COUNT ? trace_stage_names[stage] : NULL;
}

/*
 * The stage of @rec ending at @stage, per enum ernic_trace_stage, into @ns;
 * false when the record has no such stage (its stamps were not taken).
 */
static bool trace_stage_ns(const struct ernic_trace_rec *rec, enum ernic_trace_stage stage, uint64_t *ns)
{
	switch (stage) {
	case ERNIC_TRACE_STAGE_RECEIVED:
		*ns = rec->exec - rec->rx;
		return true;
	case ERNIC_TRACE_STAGE_CORE_SUBMIT:
		*ns = rec->storage_start - rec->exec;
		return true;
	case ERNIC_TRACE_STAGE_STORAGE:
		*ns = rec->storage_done - rec->storage_start;
		return true;
	case ERNIC_TRACE_STAGE_CORE_COMPLETE:
		*ns = rec->queued - rec->storage_done;
		return true;
	case ERNIC_TRACE_STAGE_SEND:
		*ns = rec->sent - rec->queued;
		return true;
	case ERNIC_TRACE_STAGE_DATA:
		*ns = rec->data_done - rec->data_start;
		return rec->data_start && rec->data_done;
	case ERNIC_TRACE_STAGE_SEND_DONE:
		*ns = rec->send_done - rec->sent;
		return rec->send_done != 0;
	default:
		*ns = rec->sent - rec->rx;
		return true;
	}
}

void ernic_trace_stats_add(struct ernic_trace_stats *a, const struct ernic_trace_stats *b)
{
	a->samples += b->samples;
	a->dropped += b->dropped;
	a->over_limit += b->over_limit;
	a->stages |= b->stages;
	for (unsigned int s = 0; s < ERNIC_TRACE_STAGE_COUNT; s++) {
		a->count[s] += b->count[s];
		a->sum_ns[s] += b->sum_ns[s];
		a->max_ns[s] = MAX(a->max_ns[s], b->max_ns[s]);
	}
}

int ernic_trace_stats_json(const struct ernic_trace_stats *s, char *buf, size_t len)
{
	static const char *const what[] = { "mean_us", "max_us", "count" };
	size_t o = 0;
	int n;

#define TRACE_JSON(...)                                                               \
	do {                                                                          \
		n = snprintf(buf + o, o < len ? len - o : 0, __VA_ARGS__);             \
		o += n > 0 ? (size_t)n : 0;                                            \
	} while (0)
	TRACE_JSON("{\"samples\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"over_limit\":%" PRIu64, s->samples, s->dropped,
		   s->over_limit);
	for (unsigned int k = 0; k < ERNIC_ARRAY_SIZE(what); k++) {
		const char *sep = "";

		TRACE_JSON(",\"%s\":{", what[k]);
		for (unsigned int st = 0; st < ERNIC_TRACE_STAGE_COUNT; st++) {
			if (!(s->stages & (1u << st)))
				continue;
			if (k == 2)
				TRACE_JSON("%s\"%s\":%" PRIu64, sep, trace_stage_names[st], s->count[st]);
			else
				TRACE_JSON("%s\"%s\":%.3f", sep, trace_stage_names[st],
					   (k ? (double)s->max_ns[st]
					      : s->count[st] ? (double)s->sum_ns[st] / (double)s->count[st] : 0) / 1000.0);
			sep = ",";
		}
		TRACE_JSON("}");
	}
	TRACE_JSON("}");
#undef TRACE_JSON
	return o < len ? (int)o : -ENOSPC;
}

/* One record's line: two IDs, two hex fields and ten 20-digit stamps, with their blanks. */
#define ERNIC_TRACE_LINE_MAX 256
/* ... and the shortest one can be: every field a single digit ("0 0 0x00 0x0 0 0 0 0 0 0 0 0 0 0\n"). */
#define ERNIC_TRACE_LINE_MIN 33

/* Write out what @ring holds; the trace's lock held. */
static void trace_drain_locked(struct ernic_trace *t, struct ernic_trace_ring *ring)
{
	uint32_t head = atomic_load_explicit(&ring->head, memory_order_acquire);
	uint32_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);

	if (head == tail)
		return;
	/* A file with no room left for any line: the records are counted, not formatted to find that out. */
	if (t->max_bytes && t->max_bytes - MIN(t->bytes, t->max_bytes) < ERNIC_TRACE_LINE_MIN) {
		t->stats.over_limit += head - tail;
		atomic_store_explicit(&ring->tail, head, memory_order_release);
		return;
	}
	for (; tail != head; tail++) {
		const struct ernic_trace_rec *r = &ring->rec[tail % ERNIC_TRACE_RING];
		char line[ERNIC_TRACE_LINE_MAX];
		int n;

		n = snprintf(line, sizeof(line),
			     "%u %u 0x%02x 0x%x %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			     " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
			     r->qid, r->cid, r->opc, r->status, r->rx, r->exec, r->storage_start, r->storage_done,
			     r->storage_ns, r->queued, r->sent, r->data_start, r->data_done, r->send_done);
		/* Whole lines only: a file at its limit ends with the last record that fit. */
		if (t->max_bytes && t->bytes + (uint64_t)n > t->max_bytes) {
			t->stats.over_limit++;
			continue;
		}
		fwrite(line, 1, (size_t)n, t->file);
		t->bytes += (uint64_t)n;
	}
	fflush(t->file);
	atomic_store_explicit(&ring->tail, tail, memory_order_release);
}

/* Formatting and file writes stay off the queue threads: this thread does them. */
static void *trace_writer(void *arg)
{
	struct ernic_trace *t = arg;

	while (!atomic_load(&t->stop)) {
		poll(NULL, 0, ERNIC_TRACE_FLUSH_MS);
		pthread_mutex_lock(&t->lock);
		for (struct ernic_trace_ring *ring = t->rings; ring; ring = ring->next)
			trace_drain_locked(t, ring);
		pthread_mutex_unlock(&t->lock);
	}
	return NULL;
}

int ernic_trace_init(struct ernic_trace *t, const char *transport, uint32_t every, FILE *file, uint64_t max_bytes,
		     uint32_t stages)
{
	int n;

	memset(t, 0, sizeof(*t));
	t->every = every;
	t->file = file;
	t->max_bytes = max_bytes;
	t->transport = transport;
	t->stats.stages = stages;
	atomic_init(&t->stop, false);
	pthread_mutex_init(&t->lock, NULL);
	if (!file)
		return 0;
	n = fprintf(file, "%s%s %s\n", ERNIC_TRACE_HEADER_PREFIX, transport, ERNIC_TRACE_HEADER_COLUMNS);
	t->bytes = n > 0 ? (uint64_t)n : 0;
	fflush(file);
	/* ernic_trace_fini() still follows: the port's destroy calls it. */
	if (pthread_create(&t->writer, NULL, trace_writer, t))
		return -EAGAIN;
	t->writing = true;
	return 0;
}

void ernic_trace_stop(struct ernic_trace *t)
{
	/* Every queue emptied its ring as it stopped. */
	if (t->writing) {
		atomic_store(&t->stop, true);
		pthread_join(t->writer, NULL);
		t->writing = false;
	}
}

void ernic_trace_fini(struct ernic_trace *t)
{
	ernic_trace_stop(t);
	pthread_mutex_destroy(&t->lock);
}

void ernic_trace_queue_init(struct ernic_trace_queue *tq)
{
	tq->sample_left = UINT32_MAX;
	tq->ring = NULL;
}

void ernic_trace_queue_start(struct ernic_trace *t, struct ernic_trace_queue *tq)
{
	if (!t->every)
		return;
	tq->sample_left = t->every;
	if (t->file && !tq->ring) {
		struct ernic_trace_ring *ring = calloc(1, sizeof(*ring));

		if (!ring)
			return;
		pthread_mutex_lock(&t->lock);
		ring->next = t->rings;
		t->rings = ring;
		tq->ring = ring;
		pthread_mutex_unlock(&t->lock);
	}
}

void ernic_trace_queue_stop(struct ernic_trace *t, struct ernic_trace_queue *tq)
{
	struct ernic_trace_ring *ring = tq->ring;

	tq->sample_left = UINT32_MAX;
	if (!ring)
		return;
	pthread_mutex_lock(&t->lock);
	for (struct ernic_trace_ring **pp = &t->rings; *pp; pp = &(*pp)->next) {
		if (*pp == ring) {
			*pp = ring->next;
			break;
		}
	}
	trace_drain_locked(t, ring);
	pthread_mutex_unlock(&t->lock);
	tq->ring = NULL;
	free(ring);
}

bool ernic_trace_begin(struct ernic_trace *t, struct ernic_trace_queue *tq, uint16_t qid, struct ernic_req *req,
		       struct ernic_stage_stamps *st, struct ernic_trace_rec *rec)
{
	if (!qid || !t->every) {
		tq->sample_left = UINT32_MAX;
		return false;
	}
	tq->sample_left = t->every;
	memset(st, 0, sizeof(*st));
	*rec = (struct ernic_trace_rec){
		.rx = ernic_now_ns(),
		.qid = qid,
		.cid = req->sqe.cid,
		.opc = req->sqe.opc,
	};
	req->stamps = st;
	return true;
}

void ernic_trace_end(struct ernic_trace *t, struct ernic_trace_queue *tq, const struct ernic_req *req,
		     const struct ernic_stage_stamps *st, struct ernic_trace_rec *rec)
{
	struct ernic_trace_ring *ring = tq->ring;
	bool queued = false;

	rec->status = nvme_cqe_status(&req->cqe);
	rec->storage_ns = st->storage_ns;
	rec->storage_start = st->storage_start ? st->storage_start : rec->exec;
	rec->storage_done = st->storage_start ? st->storage_done : rec->exec;
	if (ring) {
		uint32_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);

		if (head - atomic_load_explicit(&ring->tail, memory_order_acquire) < ERNIC_TRACE_RING) {
			ring->rec[head % ERNIC_TRACE_RING] = *rec;
			atomic_store_explicit(&ring->head, head + 1, memory_order_release);
			queued = true;
		}
	}
	pthread_mutex_lock(&t->lock);
	t->stats.samples++;
	if (t->file && !queued)
		t->stats.dropped++;
	for (unsigned int s = 0; s < ERNIC_TRACE_STAGE_COUNT; s++) {
		uint64_t ns;

		if (!(t->stats.stages & (1u << s)) || !trace_stage_ns(rec, s, &ns))
			continue;
		t->stats.count[s]++;
		t->stats.sum_ns[s] += ns;
		t->stats.max_ns[s] = MAX(t->stats.max_ns[s], ns);
	}
	pthread_mutex_unlock(&t->lock);
}

void ernic_trace_stats(struct ernic_trace *t, struct ernic_trace_stats *s)
{
	pthread_mutex_lock(&t->lock);
	*s = t->stats;
	pthread_mutex_unlock(&t->lock);
}
