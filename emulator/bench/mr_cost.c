/* SPDX-License-Identifier: MIT */
/*
 * mr_cost.c - per-I/O cost against the size of a nearly full MR table.
 *
 * The seed's dp_reg_mr() walked the whole memory-region table on every fast
 * registration, so each command paid for the table's size and the table was
 * kept small on purpose. Here fast registration indexes the entry by its
 * handle. This benchmark shows which design is running: for each table size
 * it starts a target with one I/O queue, fills the table to 90% with extra
 * regions that stay fast-registered (valid, as other queues' in-flight
 * registrations would be), then measures
 *  - 4 KiB Reads through ernic_host_submit/poll at a fixed depth: fast-reg,
 *    capsule, the controller's RDMA WRITE, response, invalidate;
 *  - ernic_mr_fast_reg + ernic_mr_invalidate alone on a table filled the same
 *    way, cycling over one queue's worth of regions, without the poller.
 * Each round gives every size the same time in short slices, the sizes
 * alternating in a rotating order, so a noisy neighbour smears over every size
 * instead of landing on one. IOPS and ns are medians over rounds; the ratio to
 * the 256-entry table is the median over passes (one slice of every size,
 * back to back) of each pass's own ratio.
 *
 * With an O(1) fast registration the 65536-entry table delivers the IOPS of
 * the 256-entry one; the seed's walk would cost 256 times as many entry
 * visits. The ratio is printed with PASS/MISS against 0.95 but never decides
 * the exit status: this is a measurement, not a test. Exit status is non-zero
 * only when a target cannot be set up or an I/O fails.
 *
 * Usage: mr_cost [--rounds N] [--seconds S] [--depth D] [--fill PCT]
 *                [--sizes A,B,...] [--csv PATH|none] [--commit ID] [--verbose]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

#define BENCH_MAX_SIZES 8
#define BENCH_MAX_ROUNDS 32
#define BENCH_BLOCK 4096u
#define BENCH_NS_SIZE (16u << 20)
#define BENCH_BASELINE_MR 256u
#define BENCH_RATIO_GOAL 0.95
/* Regions the micro-measure cycles over: one I/O queue's MR pool. */
#define BENCH_MICRO_POOL ERNIC_DEFAULT_QUEUE_SIZE
#define BENCH_WARMUP_NS 100000000ull
/* A round's time per size is cut into slices this long, sizes alternating. */
#define BENCH_SLICE_S 0.05

struct bench_opts {
	uint32_t rounds;
	double seconds;
	uint32_t depth;
	uint32_t fill_pct;
	uint32_t sizes[BENCH_MAX_SIZES];
	uint32_t nr_sizes;
	const char *csv;
	const char *commit;
	bool verbose;
};

/* One table size: its target, connect, fill regions and per-round results. */
struct bench_case {
	uint32_t max_mr;
	struct ernic_target *tgt;
	struct ernic_inproc_port *port;
	struct ernic_host_ctrlr *hc;
	struct ernic_host_qpair *qp;
	uint32_t in_use;	/* regions in use while measuring */
	uint32_t *fill;		/* the extra regions that bring the table to fill_pct */
	uint32_t nr_fill;
	uint8_t *bufs;		/* depth buffers of BENCH_BLOCK */
	uint64_t nlb;
	uint64_t lcg;
	struct ernic_mr_table *micro_tbl; /* the micro-measure's own table, filled the same way */
	uint32_t micro_pool[BENCH_MICRO_POOL];
	uint32_t micro_pd; /* the protection domain of micro_pool, as a queue's pool has one */
	double iops[BENCH_MAX_ROUNDS];
	double micro_ns[BENCH_MAX_ROUNDS];
};

static uint8_t fill_target[BENCH_BLOCK] __attribute__((aligned(BENCH_BLOCK)));

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of @n values; sorts @v in place. */
static double median_sort(double *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double median(const double *v, uint32_t n)
{
	double s[BENCH_MAX_ROUNDS];

	memcpy(s, v, n * sizeof(*v));
	return median_sort(s, n);
}

/* (max - min) / median in percent: how much the machine moved under a case. */
static double spread_pct(const double *v, uint32_t n)
{
	double lo = v[0], hi = v[0], m = median(v, n);

	for (uint32_t i = 1; i < n; i++) {
		lo = MIN(lo, v[i]);
		hi = MAX(hi, v[i]);
	}
	return m > 0 ? (hi - lo) / m * 100 : 0;
}

static uint32_t fill_count(uint32_t max_mr, uint32_t fill_pct)
{
	return (uint32_t)((uint64_t)max_mr * fill_pct / 100);
}

/*
 * fast_reg + invalidate alone on a table of the case's size filled the same
 * way as the target's: everything valid but one queue's pool, which the loop
 * registers and invalidates in turn, as a queue's commands would.
 */
static int micro_setup(struct bench_case *bc, uint32_t fill_pct)
{
	uint32_t fill = MAX(fill_count(bc->max_mr, fill_pct), (uint32_t)BENCH_MICRO_POOL);
	uint32_t h, rkey;

	if (fill > bc->max_mr)
		return -EINVAL;
	bc->micro_tbl = ernic_mr_table_create(bc->max_mr);
	if (!bc->micro_tbl)
		return -ENOMEM;
	bc->micro_pd = ernic_mr_pd_alloc(bc->micro_tbl);
	for (uint32_t i = 0; i < fill; i++) {
		if (ernic_mr_alloc(bc->micro_tbl, bc->micro_pd, &h))
			return -ENOSPC;
		if (i >= fill - BENCH_MICRO_POOL)
			bc->micro_pool[i - (fill - BENCH_MICRO_POOL)] = h;
		else if (ernic_mr_fast_reg(bc->micro_tbl, h, fill_target, sizeof(fill_target), ERNIC_MR_REMOTE_WRITE,
					   &rkey))
			return -EINVAL;
	}
	return 0;
}

static int case_setup(struct bench_case *bc, const struct bench_opts *o)
{
	const struct ernic_host_opts hopts = { .nr_io_queues = 1 };
	struct ernic_backend_cfg cfg;
	struct ernic_mr_table *tbl;
	struct ernic_counters c;
	char backend[128], err[ERNIC_ERRLEN];
	uint32_t want, fill_pd;
	int rc;

	snprintf(backend, sizeof(backend), "nvmeof:size=%u,bs=%u,queues=1,max_mr=%" PRIu32, BENCH_NS_SIZE,
		 BENCH_BLOCK, bc->max_mr);
	cfg.skip_mr_budget = false;
	rc = ernic_backend_parse(backend, &cfg, err, sizeof(err));
	if (!rc)
		rc = ernic_target_create(&cfg, NULL, &bc->tgt, err, sizeof(err));
	if (!rc)
		rc = ernic_inproc_port_create(bc->tgt, NULL, &bc->port, err, sizeof(err));
	if (!rc)
		rc = ernic_host_connect(bc->port, &hopts, &bc->hc, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "mr_cost: %s: %s\n", backend, err);
		return rc;
	}
	bc->qp = ernic_host_io_qpair(bc->hc, 1);
	if (o->depth > ernic_host_qpair_depth(bc->qp)) {
		fprintf(stderr, "mr_cost: depth %u exceeds the queue's %u entries\n", o->depth,
			ernic_host_qpair_depth(bc->qp));
		return -EINVAL;
	}

	ernic_target_counters(bc->tgt, &c);
	want = fill_count(bc->max_mr, o->fill_pct);
	tbl = ernic_inproc_port_mr_table(bc->port);
	bc->nr_fill = want > c.mr_in_use ? want - c.mr_in_use : 0;
	bc->fill = calloc(bc->nr_fill ? bc->nr_fill : 1, sizeof(*bc->fill));
	if (!bc->fill)
		return -ENOMEM;
	/* The fill stands for other hosts' queues: a domain the measured queue cannot reach. */
	fill_pd = ernic_mr_pd_alloc(tbl);
	for (uint32_t i = 0; i < bc->nr_fill; i++) {
		uint32_t rkey;

		rc = ernic_mr_alloc(tbl, fill_pd, &bc->fill[i]);
		if (!rc)
			rc = ernic_mr_fast_reg(tbl, bc->fill[i], fill_target, sizeof(fill_target),
					       ERNIC_MR_REMOTE_WRITE | ERNIC_MR_LOCAL_WRITE, &rkey);
		if (rc) {
			fprintf(stderr, "mr_cost: max_mr %u: filling region %u: %s\n", bc->max_mr, i, strerror(-rc));
			bc->nr_fill = i;
			return rc;
		}
	}
	ernic_target_counters(bc->tgt, &c);
	bc->in_use = c.mr_in_use;

	if (posix_memalign((void **)&bc->bufs, BENCH_BLOCK, (size_t)o->depth * BENCH_BLOCK))
		return -ENOMEM;
	memset(bc->bufs, 0, (size_t)o->depth * BENCH_BLOCK);
	bc->nlb = BENCH_NS_SIZE / BENCH_BLOCK;
	bc->lcg = 0x9E3779B97F4A7C15ull ^ bc->max_mr;
	rc = micro_setup(bc, o->fill_pct);
	if (rc)
		fprintf(stderr, "mr_cost: max_mr %u: micro-measure table: %s\n", bc->max_mr, strerror(-rc));
	return rc;
}

static void case_teardown(struct bench_case *bc)
{
	struct ernic_mr_table *tbl = bc->port ? ernic_inproc_port_mr_table(bc->port) : NULL;

	for (uint32_t i = 0; tbl && i < bc->nr_fill; i++)
		ernic_mr_destroy(tbl, bc->fill[i]);
	if (bc->hc)
		ernic_host_disconnect(bc->hc);
	ernic_inproc_port_destroy(bc->port);
	if (bc->tgt)
		ernic_target_destroy(bc->tgt);
	ernic_mr_table_destroy(bc->micro_tbl);
	free(bc->fill);
	free(bc->bufs);
}

static int submit_read(struct bench_case *bc, uint32_t slot)
{
	struct nvme_sqe sqe;

	bc->lcg = bc->lcg * 6364136223846793005ull + 1442695040888963407ull;
	ernic_host_rw_sqe(&sqe, NVME_CMD_READ, 1, (bc->lcg >> 33) % bc->nlb, 1);
	return ernic_host_submit(bc->qp, &sqe, bc->bufs + (size_t)slot * BENCH_BLOCK, BENCH_BLOCK,
				 (void *)(uintptr_t)slot);
}

/*
 * Keep @depth Reads in flight for @ns, then drain. Adds completions and
 * elapsed ns to *@done and *@elapsed; returns 0, or -1 when an I/O failed.
 */
static int io_slice(struct bench_case *bc, uint32_t depth, uint64_t ns, uint64_t *done, uint64_t *elapsed)
{
	struct ernic_host_cpl cpls[32];
	uint64_t start, now, end, n_done = 0;
	int rc;

	start = ernic_now_ns();
	end = start + ns;
	for (uint32_t i = 0; i < depth; i++) {
		rc = submit_read(bc, i);
		if (rc) {
			fprintf(stderr, "mr_cost: max_mr %u: submit: %s\n", bc->max_mr, strerror(-rc));
			return -1;
		}
	}
	for (;;) {
		int n = ernic_host_poll(bc->qp, cpls, (int)ERNIC_ARRAY_SIZE(cpls));

		for (int i = 0; i < n; i++) {
			if (cpls[i].status) {
				fprintf(stderr, "mr_cost: max_mr %u: Read failed: %s\n", bc->max_mr,
					ernic_status_str(cpls[i].status));
				return -1;
			}
			rc = submit_read(bc, (uint32_t)(uintptr_t)cpls[i].ctx);
			if (rc) {
				fprintf(stderr, "mr_cost: max_mr %u: submit: %s\n", bc->max_mr, strerror(-rc));
				return -1;
			}
		}
		n_done += (uint64_t)n;
		/*
		 * Nothing ready: give the CPU away. On a machine with more runnable
		 * threads than cores a spinning host starves the poller it waits for.
		 */
		if (n == 0)
			sched_yield();
		/* The clock is read once per 256 completions, or when idle. */
		if (n && (n_done & ~255ull) == ((n_done - (uint64_t)n) & ~255ull))
			continue;
		now = ernic_now_ns();
		if (now >= end)
			break;
	}
	/* The slice ends here: what is still in flight is drained, not counted. */
	while (ernic_host_outstanding(bc->qp))
		if (ernic_host_poll(bc->qp, cpls, (int)ERNIC_ARRAY_SIZE(cpls)) == 0)
			sched_yield();
	*done += n_done;
	*elapsed += now - start;
	return 0;
}

static int micro_slice(struct bench_case *bc, uint64_t ns, uint64_t *ops, uint64_t *elapsed)
{
	uint64_t start = ernic_now_ns(), now, n = 0;
	uint32_t rkey;

	do {
		for (uint32_t i = 0; i < 4096; i++) {
			uint32_t handle = bc->micro_pool[i % BENCH_MICRO_POOL];

			if (ernic_mr_fast_reg(bc->micro_tbl, handle, fill_target, sizeof(fill_target),
					      ERNIC_MR_REMOTE_WRITE, &rkey) ||
			    ernic_mr_invalidate(bc->micro_tbl, bc->micro_pd, rkey))
				return -1;
		}
		n += 4096;
		now = ernic_now_ns();
	} while (now - start < ns);
	*ops += n;
	*elapsed += now - start;
	return 0;
}

static int parse_sizes(const char *s, struct bench_opts *o)
{
	char *copy = strdup(s), *tok, *save = NULL;

	if (!copy)
		return -ENOMEM;
	o->nr_sizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || v < 64 || v > ERNIC_MR_TABLE_LIMIT || o->nr_sizes == BENCH_MAX_SIZES) {
			free(copy);
			return -EINVAL;
		}
		o->sizes[o->nr_sizes++] = (uint32_t)v;
	}
	free(copy);
	return o->nr_sizes ? 0 : -EINVAL;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: mr_cost [--rounds N] [--seconds S] [--depth D] [--fill PCT] [--sizes A,B,...]\n"
		   "               [--csv PATH|none] [--commit ID] [--verbose]\n"
		   "Defaults: 5 rounds of 1 s per size, depth 32, fill 90%%, sizes 256,2048,16384,65536,\n"
		   "csv results/mrbudget.csv.\n");
}

static int parse_opts(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longopts[] = {
		{ "rounds", required_argument, NULL, 'r' }, { "seconds", required_argument, NULL, 's' },
		{ "depth", required_argument, NULL, 'd' },  { "fill", required_argument, NULL, 'f' },
		{ "sizes", required_argument, NULL, 'z' },  { "csv", required_argument, NULL, 'c' },
		{ "commit", required_argument, NULL, 'C' }, { "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	*o = (struct bench_opts){ .rounds = 5, .seconds = 1.0, .depth = 32, .fill_pct = 90,
				  .sizes = { 256, 2048, 16384, 65536 }, .nr_sizes = 4,
				  .csv = "results/mrbudget.csv", .commit = "unknown" };
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		char *end = NULL;

		switch (ch) {
		case 'r':
			o->rounds = (uint32_t)strtoul(optarg, &end, 10);
			if (*end || o->rounds < 1 || o->rounds > BENCH_MAX_ROUNDS)
				return -EINVAL;
			break;
		case 's':
			o->seconds = strtod(optarg, &end);
			if (*end || !(o->seconds >= 0.01 && o->seconds <= 600))
				return -EINVAL;
			break;
		case 'd':
			o->depth = (uint32_t)strtoul(optarg, &end, 10);
			if (*end || o->depth < 1 || o->depth > ERNIC_DEFAULT_QUEUE_SIZE)
				return -EINVAL;
			break;
		case 'f':
			o->fill_pct = (uint32_t)strtoul(optarg, &end, 10);
			if (*end || o->fill_pct > 100)
				return -EINVAL;
			break;
		case 'z':
			if (parse_sizes(optarg, o))
				return -EINVAL;
			break;
		case 'c':
			o->csv = strcmp(optarg, "none") ? optarg : NULL;
			break;
		case 'C':
			o->commit = optarg;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	return optind == argc ? 0 : -EINVAL;
}

static int csv_append(const struct bench_opts *o, const struct bench_case *cases, const double *iops,
		      const double *ratio)
{
	char stamp[32], host[256] = "unknown", dir[4096], *slash;
	time_t t = time(NULL);
	struct tm tm;
	struct stat st;
	bool header;
	FILE *f;

	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	gethostname(host, sizeof(host) - 1);
	snprintf(dir, sizeof(dir), "%s", o->csv);
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		mkdir(dir, 0777);
	}
	header = stat(o->csv, &st) != 0 || st.st_size == 0;
	f = fopen(o->csv, "a");
	if (!f) {
		fprintf(stderr, "mr_cost: %s: %s\n", o->csv, strerror(errno));
		return -errno;
	}
	if (header)
		fprintf(f, "timestamp_utc,commit,host,max_mr,fill_pct,iops,ns_per_io,ratio_vs_256\n");
	for (uint32_t i = 0; i < o->nr_sizes; i++) {
		fprintf(f, "%s,%s,%s,%" PRIu32 ",%.1f,%.0f,%.1f,", stamp, o->commit, host, cases[i].max_mr,
			100.0 * cases[i].in_use / cases[i].max_mr, iops[i], 1e9 / iops[i]);
		if (ratio[i] > 0)
			fprintf(f, "%.3f", ratio[i]);
		fputc('\n', f);
	}
	return fclose(f) ? -errno : 0;
}

int main(int argc, char **argv)
{
	struct bench_case cases[BENCH_MAX_SIZES] = { 0 };
	double iops[BENCH_MAX_SIZES], micro[BENCH_MAX_SIZES], ratio[BENCH_MAX_SIZES] = { 0 };
	double *pass_iops = NULL, *pass_ratio = NULL;
	uint64_t slice_ns;
	uint32_t slices, nr_passes;
	struct bench_opts o;
	int base = -1, top = -1, rc = 0;

	if (parse_opts(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	for (uint32_t i = 0; i < o.nr_sizes; i++) {
		cases[i].max_mr = o.sizes[i];
		rc = case_setup(&cases[i], &o);
		if (rc)
			goto out;
		if (o.sizes[i] == BENCH_BASELINE_MR)
			base = (int)i;
		if (top < 0 || o.sizes[i] > o.sizes[top])
			top = (int)i;
	}

	slices = MAX(1u, (uint32_t)(o.seconds / BENCH_SLICE_S + 0.5));
	slice_ns = (uint64_t)(o.seconds * 1e9 / slices);
	nr_passes = o.rounds * slices;
	pass_iops = calloc((size_t)nr_passes * o.nr_sizes, sizeof(*pass_iops));
	pass_ratio = calloc(nr_passes, sizeof(*pass_ratio));
	if (!pass_iops || !pass_ratio) {
		rc = 1;
		goto out;
	}
	printf("mr_cost: 4 KiB Reads at depth %u, %u round(s) of %.2f s per size in %u interleaved slice(s), "
	       "table filled to %u%%\n",
	       o.depth, o.rounds, o.seconds, slices, o.fill_pct);
	/* One uncounted pass: first touches of buffers, namespaces and tables. */
	for (uint32_t i = 0; i < o.nr_sizes; i++) {
		uint64_t a = 0, b = 0;

		if (io_slice(&cases[i], o.depth, BENCH_WARMUP_NS, &a, &b) ||
		    micro_slice(&cases[i], BENCH_WARMUP_NS / 4, &a, &b)) {
			rc = 1;
			goto out;
		}
	}
	for (uint32_t r = 0; r < o.rounds; r++) {
		uint64_t io_done[BENCH_MAX_SIZES] = { 0 }, io_ns[BENCH_MAX_SIZES] = { 0 };
		uint64_t mi_ops[BENCH_MAX_SIZES] = { 0 }, mi_ns[BENCH_MAX_SIZES] = { 0 };

		for (uint32_t sl = 0; sl < slices; sl++) {
			for (uint32_t k = 0; k < o.nr_sizes; k++) {
				/* The order rotates every slice: no size always follows the same one. */
				uint32_t i = (k + sl + r) % o.nr_sizes;

				uint64_t done = 0, elapsed = 0;

				if (micro_slice(&cases[i], slice_ns / 4, &mi_ops[i], &mi_ns[i]) ||
				    io_slice(&cases[i], o.depth, slice_ns, &done, &elapsed)) {
					fprintf(stderr, "mr_cost: max_mr %u: measurement failed\n", cases[i].max_mr);
					rc = 1;
					goto out;
				}
				io_done[i] += done;
				io_ns[i] += elapsed;
				pass_iops[(size_t)(r * slices + sl) * o.nr_sizes + i] = (double)done * 1e9 / (double)elapsed;
			}
		}
		for (uint32_t i = 0; i < o.nr_sizes; i++) {
			cases[i].iops[r] = (double)io_done[i] * 1e9 / (double)io_ns[i];
			cases[i].micro_ns[r] = (double)mi_ns[i] / (double)mi_ops[i];
			if (o.verbose)
				printf("  round %u  max_mr %8u  %10.0f IOPS  %6.1f ns fast_reg+invalidate\n", r + 1,
				       cases[i].max_mr, cases[i].iops[r], cases[i].micro_ns[r]);
		}
	}

	for (uint32_t i = 0; i < o.nr_sizes; i++) {
		iops[i] = median(cases[i].iops, o.rounds);
		micro[i] = median(cases[i].micro_ns, o.rounds);
	}
	/*
	 * The ratio is the median over passes of each pass's own ratio: within
	 * a pass (one slice of every size, back to back) the sizes shared the
	 * machine; across passes they did not.
	 */
	for (uint32_t i = 0; base >= 0 && i < o.nr_sizes; i++) {
		for (uint32_t p = 0; p < nr_passes; p++)
			pass_ratio[p] = pass_iops[p * o.nr_sizes + i] / pass_iops[p * o.nr_sizes + (uint32_t)base];
		ratio[i] = median_sort(pass_ratio, nr_passes);
	}
	printf("\n%8s %8s %6s %10s %8s %8s %9s %16s\n", "max_mr", "in_use", "fill%", "IOPS", "ns/IO", "spread%",
	       "vs_256", "fastreg+inv_ns");
	for (uint32_t i = 0; i < o.nr_sizes; i++) {
		char vs[16] = "-";

		if (ratio[i] > 0)
			snprintf(vs, sizeof(vs), "%.3f", ratio[i]);
		printf("%8" PRIu32 " %8" PRIu32 " %6.1f %10.0f %8.0f %8.1f %9s %16.1f\n", cases[i].max_mr,
		       cases[i].in_use, 100.0 * cases[i].in_use / cases[i].max_mr, iops[i], 1e9 / iops[i],
		       spread_pct(cases[i].iops, o.rounds), vs, micro[i]);
	}
	if (base >= 0 && top >= 0 && top != base) {
		printf("\n%" PRIu32 "/%u IOPS ratio: %.3f (goal >= %.2f: %s); fast_reg+invalidate %.1f ns vs %.1f ns\n",
		       o.sizes[top], BENCH_BASELINE_MR, ratio[top], BENCH_RATIO_GOAL,
		       ratio[top] >= BENCH_RATIO_GOAL ? "PASS" : "MISS", micro[top], micro[base]);
	}
	if (o.csv) {
		if (csv_append(&o, cases, iops, ratio) == 0)
			printf("rows appended to %s\n", o.csv);
		else
			rc = 1;
	}
out:
	free(pass_iops);
	free(pass_ratio);
	for (uint32_t i = 0; i < o.nr_sizes; i++)
		case_teardown(&cases[i]);
	return rc ? 1 : 0;
}
