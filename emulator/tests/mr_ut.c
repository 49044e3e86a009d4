/* SPDX-License-Identifier: MIT */
/*
 * mr_ut.c - the emulated RNIC's memory-region table.
 *
 * Proves that the table cannot leak (exhaustion is -ENOSPC, everything
 * allocated can be destroyed, a destroyed or unknown handle is -ENOENT and
 * never a silent 0, handles cover the whole table past the seed's 256-entry
 * map), and that the per-I/O path enforces keys, protection domains, bounds
 * and access rights as an RNIC does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"
#include "ut.h"

#define RW (ERNIC_MR_REMOTE_READ | ERNIC_MR_REMOTE_WRITE)
/* The protection domain of the regions these tests make; the domain tests add others. */
#define UT_PD 1u

static uint8_t buf[8192];

static void test_table_create_rejects_bad_sizes(void)
{
	struct ernic_mr_table *tbl;

	CU_ASSERT_PTR_NULL(ernic_mr_table_create(0));
	CU_ASSERT_PTR_NULL(ernic_mr_table_create(ERNIC_MR_TABLE_LIMIT + 1));
	tbl = ernic_mr_table_create(1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	ernic_mr_table_destroy(tbl);
	ernic_mr_table_destroy(NULL);
}

static void test_handles_cover_whole_table_past_256(void)
{
	const uint32_t max = ERNIC_MAX_MR;
	struct ernic_mr_table *tbl = ernic_mr_table_create(max);
	uint8_t *seen = calloc(max, 1);
	uint32_t h, in_use, hw, tmax;
	bool ok = true;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
	for (uint32_t i = 0; i < max; i++) {
		if (ernic_mr_alloc(tbl, UT_PD, &h) != 0 || h >= max || seen[h]) {
			ok = false;
			break;
		}
		seen[h] = 1;
	}
	CU_ASSERT_TRUE(ok);
	ernic_mr_usage(tbl, &in_use, &hw, &tmax);
	CU_ASSERT_EQUAL(in_use, max);
	CU_ASSERT_EQUAL(tmax, max);
	/* Every handle, including those past the 256th, can be used and destroyed. */
	for (h = 0; h < max && ok; h++) {
		uint32_t rkey;
		void *p;

		ok = ernic_mr_fast_reg(tbl, h, buf, sizeof(buf), RW, &rkey) == 0 &&
		     ERNIC_RKEY_INDEX(rkey) == h &&
		     ernic_mr_resolve(tbl, UT_PD, rkey, (uintptr_t)buf, 16, ERNIC_MR_REMOTE_READ, &p) == 0 &&
		     ernic_mr_destroy(tbl, h) == 0;
	}
	CU_ASSERT_TRUE(ok);
	ernic_mr_usage(tbl, &in_use, NULL, NULL);
	CU_ASSERT_EQUAL(in_use, 0);
	free(seen);
	ernic_mr_table_destroy(tbl);
}

static void test_exhaustion_is_enospc_and_leaks_nothing(void)
{
	const uint32_t max = 300;
	struct ernic_mr_table *tbl = ernic_mr_table_create(max);
	uint32_t h, in_use, hw;
	int fails = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	for (int round = 0; round < 3; round++) {
		for (uint32_t i = 0; i < max; i++)
			fails += ernic_mr_alloc(tbl, UT_PD, &h) != 0;
		CU_ASSERT_EQUAL(fails, 0);
		CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), -ENOSPC);
		CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), -ENOSPC);
		ernic_mr_usage(tbl, &in_use, &hw, NULL);
		CU_ASSERT_EQUAL(in_use, max);
		/* A failed alloc takes nothing: destroying every handle empties the table. */
		for (h = 0; h < max; h++)
			fails += ernic_mr_destroy(tbl, h) != 0;
		CU_ASSERT_EQUAL(fails, 0);
		ernic_mr_usage(tbl, &in_use, &hw, NULL);
		CU_ASSERT_EQUAL(in_use, 0);
		CU_ASSERT_EQUAL(hw, max);
	}
	ernic_mr_table_destroy(tbl);
}

static void test_high_water_mark(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	uint32_t h[10], in_use, hw, max;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	ernic_mr_usage(tbl, &in_use, &hw, &max);
	CU_ASSERT_EQUAL(in_use, 0);
	CU_ASSERT_EQUAL(hw, 0);
	CU_ASSERT_EQUAL(max, 64);
	for (int i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h[i]), 0);
	for (int i = 0; i < 7; i++)
		CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, h[i]), 0);
	ernic_mr_usage(tbl, &in_use, &hw, NULL);
	CU_ASSERT_EQUAL(in_use, 3);
	CU_ASSERT_EQUAL(hw, 10);
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h[i]), 0);
	ernic_mr_usage(tbl, &in_use, &hw, NULL);
	CU_ASSERT_EQUAL(in_use, 8);
	CU_ASSERT_EQUAL(hw, 10);
	for (int i = 5; i < 9; i++)
		CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h[i]), 0);
	ernic_mr_usage(tbl, &in_use, &hw, NULL);
	CU_ASSERT_EQUAL(in_use, 12);
	CU_ASSERT_EQUAL(hw, 12);
	ernic_mr_table_destroy(tbl);
}

static void test_destroy_unknown_or_twice_is_enoent(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(512);
	uint32_t h, in_use;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, 0), -ENOENT);   /* never allocated */
	CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, 300), -ENOENT); /* past the old 256 map, never allocated */
	CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, 512), -ENOENT); /* out of range */
	CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, UINT32_MAX), -ENOENT);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), 0);
	CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, h), 0);
	CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, h), -ENOENT);
	ernic_mr_usage(tbl, &in_use, NULL, NULL);
	CU_ASSERT_EQUAL(in_use, 0);
	ernic_mr_table_destroy(tbl);
}

static void test_fast_reg_rotates_key_and_wraps_after_256(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	uint32_t h, first, prev, rkey;
	bool distinct = true, same_index = true;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_mr_fast_reg(tbl, h, buf, sizeof(buf), RW, &first), 0);
	CU_ASSERT_EQUAL(ERNIC_RKEY_INDEX(first), h);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, UT_PD, first), 0);
	CU_ASSERT_EQUAL_FATAL(ernic_mr_fast_reg(tbl, h, buf, sizeof(buf), RW, &rkey), 0);
	CU_ASSERT_NOT_EQUAL(rkey, first);
	CU_ASSERT_EQUAL(ERNIC_RKEY_INDEX(rkey), h);

	/* 256 registrations in all: every key distinct from its predecessor, then back to the first. */
	prev = rkey;
	for (int i = 2; i < 256; i++) {
		CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, UT_PD, prev), 0);
		CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, sizeof(buf), RW, &rkey), 0);
		distinct &= rkey != prev && rkey != first;
		same_index &= ERNIC_RKEY_INDEX(rkey) == h;
		prev = rkey;
	}
	CU_ASSERT_TRUE(distinct);
	CU_ASSERT_TRUE(same_index);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, UT_PD, prev), 0);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, sizeof(buf), RW, &rkey), 0);
	CU_ASSERT_EQUAL(rkey, first);
	ernic_mr_table_destroy(tbl);
}

static void test_key_survives_destroy_so_old_rkey_stays_stale(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	uint32_t h, h2, old, rkey;
	void *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), 0);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, sizeof(buf), RW, &old), 0);
	CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, h), 0);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, old, (uintptr_t)buf, 1, ERNIC_MR_REMOTE_READ, &p), -EACCES);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h2), 0);
	CU_ASSERT_EQUAL_FATAL(h2, h); /* the free stack hands the same entry back */
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h2, buf, sizeof(buf), RW, &rkey), 0);
	CU_ASSERT_NOT_EQUAL(rkey, old);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, old, (uintptr_t)buf, 1, ERNIC_MR_REMOTE_READ, &p), -EACCES);
	ernic_mr_table_destroy(tbl);
}

static void test_fast_reg_on_valid_region_is_ebusy(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	uint32_t h, rkey, rkey2 = 0;
	void *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), 0);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, sizeof(buf), RW, &rkey), 0);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, 16, RW, &rkey2), -EBUSY);
	CU_ASSERT_EQUAL(rkey2, 0);
	/* The first registration is untouched by the refused one. */
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, (uintptr_t)buf + 100, 100, ERNIC_MR_REMOTE_READ, &p), 0);
	ernic_mr_table_destroy(tbl);
}

static void test_fast_reg_unknown_handle_is_enoent(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	uint32_t h, rkey;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, 3, buf, sizeof(buf), RW, &rkey), -ENOENT);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, 64, buf, sizeof(buf), RW, &rkey), -ENOENT);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), 0);
	CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, h), 0);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, sizeof(buf), RW, &rkey), -ENOENT);
	ernic_mr_table_destroy(tbl);
}

static void test_stale_key_after_invalidate_is_eacces(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	uint32_t h, rkey, rkey2;
	void *p = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), 0);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, sizeof(buf), RW, &rkey), 0);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, (uintptr_t)buf, sizeof(buf), ERNIC_MR_REMOTE_WRITE, &p), 0);
	CU_ASSERT_PTR_EQUAL(p, buf);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, UT_PD, rkey), 0);
	/* Invalid region, same key */
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, (uintptr_t)buf, 1, ERNIC_MR_REMOTE_WRITE, &p), -EACCES);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, sizeof(buf), RW, &rkey2), 0);
	/* Valid region, old key */
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, (uintptr_t)buf, 1, ERNIC_MR_REMOTE_WRITE, &p), -EACCES);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey2, (uintptr_t)buf, 1, ERNIC_MR_REMOTE_WRITE, &p), 0);
	/* Index outside the table, and an index never allocated */
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, ERNIC_RKEY(64, 1), 0, 1, ERNIC_MR_REMOTE_WRITE, &p), -EACCES);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, ERNIC_RKEY(h + 1, 1), 0, 1, ERNIC_MR_REMOTE_WRITE, &p), -EACCES);
	ernic_mr_table_destroy(tbl);
}

static void test_invalidate_wrong_key_einval_unknown_enoent(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	uint32_t h, rkey;
	void *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), 0);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, sizeof(buf), RW, &rkey), 0);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, UT_PD, ERNIC_RKEY(h, ERNIC_RKEY_KEY(rkey) + 1)), -EINVAL);
	/* A refused invalidate leaves the region valid. */
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, (uintptr_t)buf, 1, ERNIC_MR_REMOTE_READ, &p), 0);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, UT_PD, rkey), 0);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, UT_PD, rkey), -EINVAL); /* already invalid */
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, UT_PD, ERNIC_RKEY(64, 0)), -ENOENT);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, UT_PD, ERNIC_RKEY(h + 1, 0)), -ENOENT);
	CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, h), 0);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, UT_PD, rkey), -ENOENT);
	ernic_mr_table_destroy(tbl);
}

static void test_resolve_bounds_are_erange(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	uintptr_t base = (uintptr_t)buf + 4096;
	uint32_t h, rkey;
	void *p = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), 0);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, (void *)base, 1024, RW, &rkey), 0);
	/* The whole region, its last byte, and an empty transfer at its end fit. */
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, base, 1024, ERNIC_MR_REMOTE_READ, &p), 0);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, base + 1023, 1, ERNIC_MR_REMOTE_READ, &p), 0);
	CU_ASSERT_PTR_EQUAL(p, (void *)(base + 1023));
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, base + 1024, 0, ERNIC_MR_REMOTE_READ, &p), 0);
	/* Start before */
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, base - 1, 16, ERNIC_MR_REMOTE_READ, &p), -ERANGE);
	/* End past */
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, base + 1, 1024, ERNIC_MR_REMOTE_READ, &p), -ERANGE);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, base, 1025, ERNIC_MR_REMOTE_READ, &p), -ERANGE);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, base + 1024, 1, ERNIC_MR_REMOTE_READ, &p), -ERANGE);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, base + 4096, 1, ERNIC_MR_REMOTE_READ, &p), -ERANGE);
	/* addr + len wrapping past 2^64 must not land back inside */
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, UINT64_MAX - 2, 16, ERNIC_MR_REMOTE_READ, &p), -ERANGE);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, base + 512, UINT32_MAX, ERNIC_MR_REMOTE_READ, &p), -ERANGE);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rkey, UINT64_MAX, 0, ERNIC_MR_REMOTE_READ, &p), -ERANGE);
	ernic_mr_table_destroy(tbl);
}

static void test_resolve_access_rights_are_eperm(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	uint32_t h[2], rd, wr;
	void *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h[0]), 0);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h[1]), 0);
	/* A host write buffer: the controller may only RDMA READ it. */
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h[0], buf, 512, ERNIC_MR_REMOTE_READ, &rd), 0);
	/* A host read buffer: the controller may only RDMA WRITE into it. */
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h[1], buf + 512, 512,
					  ERNIC_MR_REMOTE_WRITE | ERNIC_MR_LOCAL_WRITE, &wr), 0);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rd, (uintptr_t)buf, 512, ERNIC_MR_REMOTE_READ, &p), 0);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, rd, (uintptr_t)buf, 512, ERNIC_MR_REMOTE_WRITE, &p), -EPERM);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, wr, (uintptr_t)buf + 512, 512, ERNIC_MR_REMOTE_WRITE, &p), 0);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, wr, (uintptr_t)buf + 512, 512, ERNIC_MR_REMOTE_READ, &p), -EPERM);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, UT_PD, wr, (uintptr_t)buf + 512, 512, RW, &p), -EPERM);
	ernic_mr_table_destroy(tbl);
}

static void test_fast_reg_rejects_unknown_access_and_wrapping_range(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	uint32_t h, rkey;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, UT_PD, &h), 0);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, 16, 1u << 7, &rkey), -EINVAL);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, (void *)(UINTPTR_MAX - 8), 16, RW, &rkey), -EINVAL);
	/* Neither refusal made the region valid. */
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, 16, RW, &rkey), 0);
	ernic_mr_table_destroy(tbl);
}

static void test_pd_alloc_gives_distinct_nonzero_domains(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	uint32_t pd[64];

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	for (size_t i = 0; i < ERNIC_ARRAY_SIZE(pd); i++) {
		pd[i] = ernic_mr_pd_alloc(tbl);
		CU_ASSERT_NOT_EQUAL(pd[i], 0);
		for (size_t k = 0; k < i; k++)
			CU_ASSERT_NOT_EQUAL(pd[i], pd[k]);
	}
	ernic_mr_table_destroy(tbl);
}

/*
 * A region is reached only from its own protection domain: another domain
 * presenting the right rkey gets what a wrong key gets (-EACCES to resolve,
 * -EINVAL to invalidate) and changes nothing.
 */
static void test_other_domain_cannot_resolve_or_invalidate(void)
{
	struct ernic_mr_table *tbl = ernic_mr_table_create(64);
	const uint32_t mine = UT_PD, other = UT_PD + 1;
	uint32_t h, h2, rkey, rkey2;
	void *p = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tbl);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, mine, &h), 0);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h, buf, 4096, RW, &rkey), 0);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, other, rkey, (uintptr_t)buf, 4096, ERNIC_MR_REMOTE_READ, &p), -EACCES);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, other, rkey), -EINVAL);
	/* Still valid, and still its own domain's */
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, mine, rkey, (uintptr_t)buf, 4096, ERNIC_MR_REMOTE_READ, &p), 0);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, mine, rkey), 0);
	/* The entry reused by the other domain: the first loses it, the second gains it */
	CU_ASSERT_EQUAL(ernic_mr_destroy(tbl, h), 0);
	CU_ASSERT_EQUAL(ernic_mr_alloc(tbl, other, &h2), 0);
	CU_ASSERT_EQUAL(h2, h);
	CU_ASSERT_EQUAL(ernic_mr_fast_reg(tbl, h2, buf, 4096, RW, &rkey2), 0);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, mine, rkey2, (uintptr_t)buf, 16, ERNIC_MR_REMOTE_WRITE, &p), -EACCES);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, mine, rkey2), -EINVAL);
	CU_ASSERT_EQUAL(ernic_mr_resolve(tbl, other, rkey2, (uintptr_t)buf, 16, ERNIC_MR_REMOTE_WRITE, &p), 0);
	CU_ASSERT_EQUAL(ernic_mr_invalidate(tbl, other, rkey2), 0);
	ernic_mr_table_destroy(tbl);
}

UT_MAIN("mr", UT_CASE(test_table_create_rejects_bad_sizes), UT_CASE(test_handles_cover_whole_table_past_256),
	UT_CASE(test_exhaustion_is_enospc_and_leaks_nothing), UT_CASE(test_high_water_mark),
	UT_CASE(test_destroy_unknown_or_twice_is_enoent), UT_CASE(test_fast_reg_rotates_key_and_wraps_after_256),
	UT_CASE(test_key_survives_destroy_so_old_rkey_stays_stale), UT_CASE(test_fast_reg_on_valid_region_is_ebusy),
	UT_CASE(test_fast_reg_unknown_handle_is_enoent), UT_CASE(test_stale_key_after_invalidate_is_eacces),
	UT_CASE(test_invalidate_wrong_key_einval_unknown_enoent), UT_CASE(test_resolve_bounds_are_erange),
	UT_CASE(test_resolve_access_rights_are_eperm),
	UT_CASE(test_fast_reg_rejects_unknown_access_and_wrapping_range),
	UT_CASE(test_pd_alloc_gives_distinct_nonzero_domains), UT_CASE(test_other_domain_cannot_resolve_or_invalidate))
