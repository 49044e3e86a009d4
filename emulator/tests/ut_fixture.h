/* SPDX-License-Identifier: MIT */
/*
 * ut_fixture.h - what the CUnit programs that drive a real target share: a
 * target with its in-process port, brought up as the fio engine does it.
 *
 * A program keeps using the target pointer it always had: the port each
 * target got is found again with ut_port(), and ut_target_stop() takes both
 * down in the order the API requires (port first).
 */
#ifndef ERNIC_UT_FIXTURE_H
#define ERNIC_UT_FIXTURE_H

#include <CUnit/Basic.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ernic/ernic.h"

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

#endif /* ERNIC_UT_FIXTURE_H */
