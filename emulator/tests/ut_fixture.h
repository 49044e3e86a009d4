/* SPDX-License-Identifier: MIT */
/*
 * ut_fixture.h - what the CUnit programs that drive a real target share: a
 * target with its in-process port, brought up as the fio engine does it, a
 * host connected to it, a command waited for, and a CQE's status.
 *
 * A program keeps using the target pointer it always had: the port each
 * target got is found again with ut_port(), and ut_target_stop() takes both
 * down in the order the API requires (port first).
 */
#ifndef ERNIC_UT_FIXTURE_H
#define ERNIC_UT_FIXTURE_H

#include <CUnit/Basic.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ernic/ernic.h"

/* A CQE's status as SCT << 8 | SC, the form ernic_status_str() and the NVME_SC_* names take. */
#define ST(cqe) nvme_cqe_status(&(cqe))

/* How long a test waits for one completion before it fails. */
#define UT_TIMEOUT_NS 10000000000ull

static inline uint64_t ut_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void ut_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Targets a program may have up at once. */
#define UT_MAX_TARGETS 8

static struct {
	struct ernic_target *tgt;
	struct ernic_inproc_port *port;
} ut_targets[UT_MAX_TARGETS];

/*
 * ernic_target_create() then ernic_inproc_port_create(), with the same
 * contract: 0 and *@out, or -errno with @err set and *@out NULL.
 */
static inline int ut_target_start(const struct ernic_backend_cfg *cfg, const struct ernic_target_opts *opts,
				  struct ernic_target **out, char *err, size_t errlen)
{
	struct ernic_inproc_port *port;
	struct ernic_target *tgt;
	size_t slot;
	int rc;

	*out = NULL;
	for (slot = 0; slot < UT_MAX_TARGETS && ut_targets[slot].tgt; slot++)
		;
	if (slot == UT_MAX_TARGETS) {
		snprintf(err, errlen, "more than %d test targets at once", UT_MAX_TARGETS);
		return -ENOSPC;
	}
	rc = ernic_target_create(cfg, opts, &tgt, err, errlen);
	if (rc)
		return rc;
	rc = ernic_inproc_port_create(tgt, NULL, &port, err, errlen);
	if (rc) {
		ernic_target_destroy(tgt);
		return rc;
	}
	ut_targets[slot].tgt = tgt;
	ut_targets[slot].port = port;
	*out = tgt;
	return 0;
}

/* The in-process port ut_target_start() gave @tgt; NULL for another target. */
static inline struct ernic_inproc_port *ut_port(const struct ernic_target *tgt)
{
	for (size_t i = 0; tgt && i < UT_MAX_TARGETS; i++)
		if (ut_targets[i].tgt == tgt)
			return ut_targets[i].port;
	return NULL;
}

/* Destroy @tgt's port, then @tgt; NULL is a no-op. */
static inline void ut_target_stop(struct ernic_target *tgt)
{
	for (size_t i = 0; tgt && i < UT_MAX_TARGETS; i++) {
		if (ut_targets[i].tgt != tgt)
			continue;
		ernic_inproc_port_destroy(ut_targets[i].port);
		ut_targets[i].tgt = NULL;
		ut_targets[i].port = NULL;
	}
	ernic_target_destroy(tgt);
}

/*
 * A host on @tgt's port asking for @nr_io queues of @queue_size entries (0:
 * the target's defaults); NULL, with the reason on stderr, when it fails.
 */
static inline struct ernic_host_ctrlr *ut_host_connect(const struct ernic_target *tgt, uint32_t nr_io,
						       uint32_t queue_size)
{
	const struct ernic_host_opts opts = { .nr_io_queues = nr_io, .queue_size = queue_size };
	struct ernic_host_ctrlr *hc = NULL;
	char err[ERNIC_ERRLEN] = "";

	if (ernic_host_connect(ut_port(tgt), &opts, &hc, err, sizeof(err)))
		fprintf(stderr, "connect: %s\n", err);
	return hc;
}

/*
 * The next completion on @qp, which must be the command submitted with @ctx:
 * its status, and DW0 in *@dw0 if asked. 0xFFFF (and a failure) after
 * UT_TIMEOUT_NS without one.
 */
static inline uint16_t ut_wait_cpl(struct ernic_host_qpair *qp, void *ctx, uint32_t *dw0)
{
	uint64_t deadline = ut_now_ns() + UT_TIMEOUT_NS;
	struct ernic_host_cpl cpl;

	for (;;) {
		if (ernic_host_poll(qp, &cpl, 1) == 1) {
			CU_ASSERT_PTR_EQUAL(cpl.ctx, ctx);
			if (dw0)
				*dw0 = cpl.dw0;
			return cpl.status;
		}
		if (ut_now_ns() > deadline) {
			CU_FAIL("no completion within UT_TIMEOUT_NS");
			return 0xFFFF;
		}
		sched_yield();
	}
}

/*
 * One admin command without data (Set/Get Features and the like): its
 * status, and DW0 in *@dw0 if asked. 0xFFFF (and a failure) when no
 * completion arrived.
 */
static inline uint16_t ut_admin(struct ernic_host_ctrlr *hc, uint8_t opc, uint32_t cdw10, uint32_t cdw11,
				uint32_t *dw0)
{
	struct nvme_sqe sqe = { .opc = opc, .cdw10 = cdw10, .cdw11 = cdw11 };
	struct nvme_cqe cqe;
	int rc = ernic_host_admin(hc, &sqe, NULL, 0, &cqe);

	CU_ASSERT_EQUAL(rc, 0);
	if (rc)
		return 0xFFFF;
	if (dw0)
		*dw0 = cqe.dw0;
	return ST(cqe);
}

#endif /* ERNIC_UT_FIXTURE_H */
