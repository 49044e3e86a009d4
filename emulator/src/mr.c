/* SPDX-License-Identifier: MIT */
/*
 * mr.c - the emulated RNIC's memory-region table.
 *
 * Two paths with different rules:
 *  - connect time (alloc, destroy): a host builds one pool of queue_size
 *    regions per queue. These take the table mutex and pop or push a free
 *    stack of indices, so both are O(1) and nothing walks the table.
 *  - per I/O (fast_reg, invalidate, resolve): a region belongs to one host
 *    queue, and to its protection domain: no other queue pair can resolve
 *    or invalidate it. The host thread fast-registers it, the target's
 *    poller resolves the keyed SGL against it, either side invalidates it,
 *    and the queue's ring orders those steps. So each entry needs only plain
 *    fields for the range plus one atomic state word: its release store
 *    publishes the range, the acquire load on the other side sees it. No
 *    lock, no allocation.
 *
 * The handle is the table index and every index is a handle: there is no
 * smaller map from driver ids to handles, so a region can never exist without
 * a way to destroy it (the 256-entry map that leaked regions past the 256th
 * cannot be rebuilt here).
 */
#include <errno.h>
#include <stdlib.h>

#include "target.h"

/*
 * State word: the rotating 8-bit key in bits 7:0, then the two flags, and
 * the protection domain in bits 63:32. Key, validity and domain live in one
 * word so that an access checks all three with one load and one compare,
 * and a region destroyed and reallocated to another domain is never seen
 * half-changed.
 */
#define MR_KEY_MASK 0xffull
#define MR_VALID (1ull << 8)	 /* fast-registered, not yet invalidated */
#define MR_ALLOCATED (1ull << 9) /* created and not destroyed */
#define MR_PD_SHIFT 32
#define MR_PD_MASK (0xffffffffull << MR_PD_SHIFT)
#define MR_PD(pd) ((uint64_t)(pd) << MR_PD_SHIFT)

/* The only state in which domain @pd may use key @key. */
#define MR_USABLE(pd, key) (MR_PD(pd) | MR_ALLOCATED | MR_VALID | (uint64_t)(key))

struct ernic_mr {
	_Atomic uint64_t state;
	uint32_t access;
	uintptr_t addr;
	uint64_t len;
};

struct ernic_mr_table {
	pthread_mutex_t lock; /* alloc/destroy and the counters only */
	_Atomic uint32_t last_pd;
	uint32_t max_mr;
	uint32_t nr_free;
	uint32_t in_use;
	uint32_t high_water;
	uint32_t *free_stack; /* indices of unallocated entries; top at nr_free - 1 */
	struct ernic_mr *mrs;
};

struct ernic_mr_table *ernic_mr_table_create(uint32_t max_mr)
{
	struct ernic_mr_table *tbl;

	if (max_mr == 0 || max_mr > ERNIC_MR_TABLE_LIMIT) {
		errno = EINVAL;
		return NULL;
	}
	tbl = calloc(1, sizeof(*tbl));
	if (!tbl)
		return NULL;
	tbl->mrs = calloc(max_mr, sizeof(*tbl->mrs));
	tbl->free_stack = calloc(max_mr, sizeof(*tbl->free_stack));
	if (!tbl->mrs || !tbl->free_stack || pthread_mutex_init(&tbl->lock, NULL)) {
		free(tbl->mrs);
		free(tbl->free_stack);
		free(tbl);
		errno = ENOMEM;
		return NULL;
	}
	tbl->max_mr = max_mr;
	/* Lowest index on top: a fresh table hands out 0, 1, 2, ... like an RNIC. */
	for (uint32_t i = 0; i < max_mr; i++) {
		tbl->free_stack[i] = max_mr - 1 - i;
		atomic_init(&tbl->mrs[i].state, 0);
	}
	tbl->nr_free = max_mr;
	return tbl;
}

void ernic_mr_table_destroy(struct ernic_mr_table *tbl)
{
	if (!tbl)
		return;
	pthread_mutex_destroy(&tbl->lock);
	free(tbl->free_stack);
	free(tbl->mrs);
	free(tbl);
}

uint32_t ernic_mr_pd_alloc(struct ernic_mr_table *tbl)
{
	uint32_t pd = atomic_fetch_add_explicit(&tbl->last_pd, 1, memory_order_relaxed) + 1;

	/* 0 is never handed out: a queue pair whose domain was never set shares it with no host. */
	return pd ? pd : atomic_fetch_add_explicit(&tbl->last_pd, 1, memory_order_relaxed) + 1;
}

int ernic_mr_alloc(struct ernic_mr_table *tbl, uint32_t pd, uint32_t *handle)
{
	struct ernic_mr *mr;
	uint64_t state;
	uint32_t idx;

	pthread_mutex_lock(&tbl->lock);
	if (tbl->nr_free == 0) {
		pthread_mutex_unlock(&tbl->lock);
		return -ENOSPC;
	}
	idx = tbl->free_stack[--tbl->nr_free];
	mr = &tbl->mrs[idx];
	/*
	 * The key is kept across the entry's lives, so an rkey of a destroyed
	 * region stays stale for the region that reuses the entry.
	 */
	state = atomic_load_explicit(&mr->state, memory_order_relaxed);
	atomic_store_explicit(&mr->state, MR_PD(pd) | MR_ALLOCATED | (state & MR_KEY_MASK), memory_order_release);
	if (++tbl->in_use > tbl->high_water)
		tbl->high_water = tbl->in_use;
	pthread_mutex_unlock(&tbl->lock);
	*handle = idx;
	return 0;
}

int ernic_mr_destroy(struct ernic_mr_table *tbl, uint32_t handle)
{
	struct ernic_mr *mr;
	uint64_t state;

	if (handle >= tbl->max_mr)
		return -ENOENT;
	mr = &tbl->mrs[handle];
	pthread_mutex_lock(&tbl->lock);
	state = atomic_load_explicit(&mr->state, memory_order_acquire);
	if (!(state & MR_ALLOCATED)) {
		/* Never a silent success: a lost handle must show, not leak. */
		pthread_mutex_unlock(&tbl->lock);
		return -ENOENT;
	}
	/* Deregistering a still-valid region is allowed, as ibv_dereg_mr allows it. */
	atomic_store_explicit(&mr->state, state & MR_KEY_MASK, memory_order_release);
	tbl->free_stack[tbl->nr_free++] = handle;
	tbl->in_use--;
	pthread_mutex_unlock(&tbl->lock);
	return 0;
}

int ernic_mr_fast_reg(struct ernic_mr_table *tbl, uint32_t handle, void *addr, uint64_t len, uint32_t access,
		      uint32_t *rkey)
{
	const uint32_t known = ERNIC_MR_LOCAL_WRITE | ERNIC_MR_REMOTE_WRITE | ERNIC_MR_REMOTE_READ;
	struct ernic_mr *mr;
	uint64_t state;
	uint8_t key;

	if (ERNIC_UNLIKELY(handle >= tbl->max_mr))
		return -ENOENT;
	mr = &tbl->mrs[handle];
	state = atomic_load_explicit(&mr->state, memory_order_acquire);
	if (ERNIC_UNLIKELY(!(state & MR_ALLOCATED)))
		return -ENOENT;
	if (ERNIC_UNLIKELY(state & MR_VALID))
		return -EBUSY;
	if (ERNIC_UNLIKELY((access & ~known) || len > UINTPTR_MAX - (uintptr_t)addr))
		return -EINVAL;

	mr->addr = (uintptr_t)addr;
	mr->len = len;
	mr->access = access;
	/* A new key on every registration, so an rkey from before is stale. */
	key = (uint8_t)(state + 1);
	atomic_store_explicit(&mr->state, (state & MR_PD_MASK) | MR_ALLOCATED | MR_VALID | key, memory_order_release);
	*rkey = ERNIC_RKEY(handle, key);
	return 0;
}

int ernic_mr_invalidate(struct ernic_mr_table *tbl, uint32_t pd, uint32_t rkey)
{
	uint32_t idx = ERNIC_RKEY_INDEX(rkey);
	struct ernic_mr *mr;
	uint64_t state;

	if (ERNIC_UNLIKELY(idx >= tbl->max_mr))
		return -ENOENT;
	mr = &tbl->mrs[idx];
	state = atomic_load_explicit(&mr->state, memory_order_acquire);
	do {
		if (ERNIC_UNLIKELY(!(state & MR_ALLOCATED)))
			return -ENOENT;
		if (ERNIC_UNLIKELY(state != MR_USABLE(pd, ERNIC_RKEY_KEY(rkey))))
			return -EINVAL;
		/*
		 * Host (local invalidate) and target (send with invalidate) may
		 * both try: the exchange lets exactly one of them succeed.
		 */
	} while (!atomic_compare_exchange_weak_explicit(&mr->state, &state, state & ~MR_VALID,
							 memory_order_acq_rel, memory_order_acquire));
	return 0;
}

int ernic_mr_resolve(struct ernic_mr_table *tbl, uint32_t pd, uint32_t rkey, uint64_t addr, uint32_t len,
		     uint32_t access, void **ptr)
{
	uint32_t idx = ERNIC_RKEY_INDEX(rkey);
	const struct ernic_mr *mr;
	uint64_t state;
	uint64_t off;

	if (ERNIC_UNLIKELY(idx >= tbl->max_mr))
		return -EACCES;
	mr = &tbl->mrs[idx];
	state = atomic_load_explicit(&mr->state, memory_order_acquire);
	/* Another domain's region answers as a wrong key does: nothing tells them apart. */
	if (ERNIC_UNLIKELY(state != MR_USABLE(pd, ERNIC_RKEY_KEY(rkey))))
		return -EACCES;
	/* addr - base and len are compared against what is left, never summed. */
	if (ERNIC_UNLIKELY(addr < mr->addr))
		return -ERANGE;
	off = addr - mr->addr;
	if (ERNIC_UNLIKELY(off > mr->len || len > mr->len - off))
		return -ERANGE;
	if (ERNIC_UNLIKELY(access & ~mr->access))
		return -EPERM;
	/* In-process emulation: the registered virtual address is the pointer. */
	*ptr = (void *)(uintptr_t)addr;
	return 0;
}

void ernic_mr_usage(struct ernic_mr_table *tbl, uint32_t *in_use, uint32_t *high_water, uint32_t *max)
{
	pthread_mutex_lock(&tbl->lock);
	if (in_use)
		*in_use = tbl->in_use;
	if (high_water)
		*high_water = tbl->high_water;
	if (max)
		*max = tbl->max_mr;
	pthread_mutex_unlock(&tbl->lock);
}
