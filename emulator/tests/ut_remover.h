/* SPDX-License-Identifier: MIT */
/*
 * ut_remover.h - a namespace removal run on a thread of its own, for the
 * tests that hold namespace memory (or stop holding it) while it waits.
 */
#ifndef ERNIC_UT_REMOVER_H
#define ERNIC_UT_REMOVER_H

#include <CUnit/Basic.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "target.h"

/* Removes namespace 1 of @tgt (remover_main()); @done once it returned, with @rc. */
struct remover {
	struct ernic_target *tgt;
	atomic_bool done;
	int rc;
};

static inline void *remover_main(void *arg)
{
	struct remover *r = arg;
	char err[ERNIC_ERRLEN];

	r->rc = ernic_target_remove_ns(r->tgt, 1, err, sizeof(err));
	atomic_store(&r->done, true);
	return NULL;
}

/* The removal @thr runs is done within @ms, and succeeded; fatal otherwise, as a removal still waiting cannot be joined. */
static inline void remover_join(struct remover *r, pthread_t thr, unsigned int ms)
{
	for (unsigned int i = 0; i < ms / 10 && !atomic_load(&r->done); i++)
		poll(NULL, 0, 10);
	CU_ASSERT_FATAL(atomic_load(&r->done));
	pthread_join(thr, NULL);
	CU_ASSERT_EQUAL(r->rc, 0);
}

#endif /* ERNIC_UT_REMOVER_H */
