/* SPDX-License-Identifier: MIT */
/*
 * ns_ram.c - a namespace in anonymous memory. Up to 4 GiB it is faulted in
 * when opened; a larger one is mapped on first touch, so an 8 GiB namespace
 * costs only what a run writes. Deallocated ranges are handed back.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "target.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
/* Namespaces up to this size are faulted in when opened. */
#define ERNIC_RAM_PREFAULT_MAX (4ull << 30)
/*
 * Address space held for a namespace to grow into without moving (a command
 * may be copying to it while it grows): four times its size, at least this.
 * It is PROT_NONE and reserves no memory.
 */
#define ERNIC_RAM_RESERVE_MIN (16ull << 30)

static uint64_t ram_page_up(uint64_t n)
{
	return (n + ERNIC_PAGE_SIZE - 1) & ~(uint64_t)(ERNIC_PAGE_SIZE - 1);
}

static int ram_read(struct ernic_ns *ns, void *buf, uint64_t off, uint32_t len)
{
	memcpy(buf, ns->ram + off, len);
	return 0;
}

static const void *ram_map_read(struct ernic_ns *ns, uint64_t off, uint32_t len)
{
	(void)len;
	return ns->ram + off;
}

static void *ram_map_write(struct ernic_ns *ns, uint64_t off, uint32_t len)
{
	(void)len;
	return ns->ram + off;
}

static int ram_write(struct ernic_ns *ns, const void *buf, uint64_t off, uint32_t len, uint32_t flags)
{
	(void)flags; /* nothing here outlives the process: FUA has no medium to reach */
	memcpy(ns->ram + off, buf, len);
	return 0;
}

static int ram_flush(struct ernic_ns *ns)
{
	(void)ns;
	return 0;
}

static int ram_write_zeroes(struct ernic_ns *ns, uint64_t off, uint64_t len)
{
	uint64_t page = ERNIC_PAGE_SIZE;
	uint64_t start = (off + page - 1) & ~(page - 1), end = (off + len) & ~(page - 1);

	/* Whole pages go back to the kernel (they read as zero); the edges are cleared. */
	if (end > start) {
		memset(ns->ram + off, 0, start - off);
		if (madvise(ns->ram + start, end - start, MADV_DONTNEED))
			memset(ns->ram + start, 0, end - start);
		memset(ns->ram + end, 0, off + len - end);
	} else {
		memset(ns->ram + off, 0, len);
	}
	return 0;
}

static int ram_close(struct ernic_ns *ns)
{
	if (ns->ram)
		munmap(ns->ram, ns->ram_reserved);
	ns->ram = NULL;
	return 0;
}

static const struct ernic_ns_ops ns_ram_ops = {
	.name = "ram",
	.read = ram_read,
	.map_read = ram_map_read,
	.map_write = ram_map_write,
	.write = ram_write,
	.flush = ram_flush,
	.write_zeroes = ram_write_zeroes,
	.deallocate = ram_write_zeroes,
	.close = ram_close,
};

int ernic_ns_ram_open(struct ernic_ns *ns, uint64_t size, uint32_t bs, char *err, size_t errlen)
{
	uint64_t reserve = MAX(ram_page_up(size) * 4, ERNIC_RAM_RESERVE_MIN);
	void *p = mmap(NULL, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p != MAP_FAILED && mprotect(p, ram_page_up(size), PROT_READ | PROT_WRITE)) {
		munmap(p, reserve);
		p = MAP_FAILED;
	}
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "Error: nvmeof backend: cannot map a RAM namespace of %llu bytes: %s",
			 (unsigned long long)size, strerror(errno));
		return -errno;
	}
	/*
	 * A namespace should cost a memory access, not a page fault: back it
	 * with huge pages where the kernel allows, and fault small ones in up
	 * front (a fault per first touch is tens of microseconds, more than
	 * the whole capsule path).
	 */
	madvise(p, size, MADV_HUGEPAGE);
	if (size <= ERNIC_RAM_PREFAULT_MAX)
		madvise(p, size, MADV_POPULATE_WRITE);
	ns->ram = p;
	ns->ram_reserved = reserve;
	ns->lba_shift = (uint32_t)__builtin_ctz(bs);
	ns->nlb = size >> ns->lba_shift;
	ns->ops = &ns_ram_ops;
	return 0;
}

int ernic_ns_ram_resize(struct ernic_ns *ns, uint64_t from, uint64_t size, char *err, size_t errlen)
{
	uint64_t old = ram_page_up(from), want = ram_page_up(size);

	if (want > ns->ram_reserved) {
		snprintf(err, errlen, "size %llu: a RAM namespace of %llu bytes grows to %llu at most",
			 (unsigned long long)size, (unsigned long long)from,
			 (unsigned long long)ns->ram_reserved);
		return -ENOSPC;
	}
	if (want > old && mprotect(ns->ram + old, want - old, PROT_READ | PROT_WRITE)) {
		snprintf(err, errlen, "size %llu: cannot map the RAM namespace's new blocks: %s",
			 (unsigned long long)size, strerror(errno));
		return -errno;
	}
	/*
	 * The tail goes back to the kernel: grown again, it reads as zeroes.
	 * So must the blocks cut inside the last page kept (512-byte blocks),
	 * which the kernel does not take back.
	 */
	if (size < from)
		memset(ns->ram + size, 0, MIN(want, from) - size);
	if (want < old) {
		madvise(ns->ram + want, old - want, MADV_DONTNEED);
		mprotect(ns->ram + want, old - want, PROT_NONE);
	}
	return 0;
}
