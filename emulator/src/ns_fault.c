/* SPDX-License-Identifier: MIT */
/*
 * ns_fault.c - the fault= key: a namespace that fails or stalls on purpose,
 * so tests can see what a host gets from a failing medium. It wraps the
 * backend's ops when the namespace opens; without fault= it is never
 * installed and the I/O path calls the backend directly.
 *
 * The @N of eio@N / eio%N counts Reads and Writes over every queue (one
 * atomic counter per namespace), enospc's counts Writes only: the order two
 * queues reach the namespace decides which command is the Nth.
 */
#include <errno.h>
#include <stdatomic.h>
#include <time.h>

#include "target.h"

static void fault_stall(const struct ernic_ns *ns)
{
	struct timespec ts = { .tv_sec = ns->fault.delay_us / 1000000,
			       .tv_nsec = (long)(ns->fault.delay_us % 1000000) * 1000 };

	if (!ns->fault.delay_us)
		return;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* 0, or the -errno this Read (@write false) or Write fails with. */
static int fault_error(struct ernic_ns *ns, bool write)
{
	const struct ernic_fault_cfg *f = &ns->fault;
	int rc = f->error == ERNIC_FAULT_EIO ? -EIO : -ENOSPC;
	uint64_t nth;

	if (f->error == ERNIC_FAULT_NONE || (f->error == ERNIC_FAULT_ENOSPC && !write))
		return 0;
	if (f->when == ERNIC_FAULT_ALWAYS)
		return rc;
	nth = atomic_fetch_add_explicit(&ns->fault_count, 1, memory_order_relaxed) + 1;
	if (f->when == ERNIC_FAULT_ONCE ? nth == f->n : nth % f->n == 0)
		return rc;
	return 0;
}

static int fault_read(struct ernic_ns *ns, void *buf, uint64_t off, uint32_t len)
{
	int rc;

	fault_stall(ns);
	rc = fault_error(ns, false);
	return rc ? rc : ns->backend_ops->read(ns, buf, off, len);
}

static int fault_write(struct ernic_ns *ns, const void *buf, uint64_t off, uint32_t len, uint32_t flags)
{
	int rc;

	fault_stall(ns);
	rc = fault_error(ns, true);
	return rc ? rc : ns->backend_ops->write(ns, buf, off, len, flags);
}

static int fault_flush(struct ernic_ns *ns)
{
	fault_stall(ns);
	return ns->backend_ops->flush(ns);
}

static int fault_write_zeroes(struct ernic_ns *ns, uint64_t off, uint64_t len)
{
	fault_stall(ns);
	return ns->backend_ops->write_zeroes(ns, off, len);
}

static int fault_deallocate(struct ernic_ns *ns, uint64_t off, uint64_t len)
{
	fault_stall(ns);
	return ns->backend_ops->deallocate(ns, off, len);
}

static int fault_close(struct ernic_ns *ns)
{
	return ns->backend_ops->close(ns);
}

static const struct ernic_ns_ops ns_fault_ops = {
	.name = "fault",
	.read = fault_read,
	.write = fault_write,
	.flush = fault_flush,
	.write_zeroes = fault_write_zeroes,
	.deallocate = fault_deallocate,
	.close = fault_close,
};

void ernic_ns_fault_install(struct ernic_ns *ns, const struct ernic_fault_cfg *fault)
{
	if (fault->error == ERNIC_FAULT_NONE && !fault->delay_us)
		return;
	ns->fault = *fault;
	atomic_store(&ns->fault_count, 0);
	ns->backend_ops = ns->ops;
	ns->ops = &ns_fault_ops;
}
