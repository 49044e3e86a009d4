/* SPDX-License-Identifier: MIT */
/*
 * ns_file.c - a namespace in a file: pread/pwrite, FUA = RWF_DSYNC (or
 * fdatasync where the kernel lacks it), Flush = fdatasync, and
 * holes punched for deallocate. The file is created and sized if needed; an
 * existing larger file is never truncated. A block device is used as it is:
 * one smaller than the namespace is refused when it opens, not discovered
 * by the first write past its end.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "target.h"

static int file_read(struct ernic_ns *ns, void *buf, uint64_t off, uint32_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(ns->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		/*
		 * The file holds the whole namespace from open on (grown then, and by
		 * resize; never cut): an end inside it means the file was truncated
		 * underneath, and zeroes would pass for data a host wrote. A media
		 * error instead, as for EIO.
		 */
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint32_t)n;
	}
	return 0;
}

static int file_sync(struct ernic_ns *ns)
{
	if (fdatasync(ns->fd))
		return -errno;
	atomic_fetch_add_explicit(&ns->syncs, 1, memory_order_relaxed);
	return 0;
}

/*
 * pwrite until done; with @dsync each piece is written with RWF_DSYNC, so it
 * is on stable storage when the call returns (one sync of the range, not the
 * fdatasync of the whole file). -EOPNOTSUPP where the kernel or filesystem
 * has no RWF_DSYNC.
 */
static int file_pwrite(struct ernic_ns *ns, const void *buf, uint64_t off, uint32_t len, bool dsync)
{
	const uint8_t *p = buf;

	while (len) {
		struct iovec iov = { .iov_base = (void *)p, .iov_len = len };
		ssize_t n = dsync ? pwritev2(ns->fd, &iov, 1, (off_t)off, RWF_DSYNC) : pwrite(ns->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && dsync && errno == ENOSYS)
			return -EOPNOTSUPP;
		/*
		 * Past the process's file size limit (RLIMIT_FSIZE, SIGXFSZ ignored)
		 * the file can hold no more, as on a full filesystem: Capacity
		 * Exceeded for the one command, not a media or internal error.
		 */
		if (n < 0 && errno == EFBIG)
			return -ENOSPC;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint32_t)n;
	}
	return 0;
}

static int file_write(struct ernic_ns *ns, const void *buf, uint64_t off, uint32_t len, uint32_t flags)
{
	int rc;

	if (!(flags & ERNIC_NS_FUA))
		return file_pwrite(ns, buf, off, len, false);
	rc = file_pwrite(ns, buf, off, len, true);
	if (rc == -EOPNOTSUPP) {
		rc = file_pwrite(ns, buf, off, len, false);
		return rc ? rc : file_sync(ns);
	}
	if (!rc)
		atomic_fetch_add_explicit(&ns->syncs, 1, memory_order_relaxed);
	return rc;
}

static int file_flush(struct ernic_ns *ns)
{
	return file_sync(ns);
}

static int file_zero_by_writing(struct ernic_ns *ns, uint64_t off, uint64_t len)
{
	static const uint8_t zeroes[64 * 1024];

	while (len) {
		uint32_t n = (uint32_t)MIN(len, sizeof(zeroes));
		int rc = file_write(ns, zeroes, off, n, 0);

		if (rc)
			return rc;
		off += n;
		len -= n;
	}
	return 0;
}

static int file_write_zeroes(struct ernic_ns *ns, uint64_t off, uint64_t len)
{
	if (!fallocate(ns->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len))
		return 0;
	return file_zero_by_writing(ns, off, len);
}

static int file_deallocate(struct ernic_ns *ns, uint64_t off, uint64_t len)
{
	/* DLFEAT promises zeroes after deallocate: a punched hole reads as zeroes. */
	if (!fallocate(ns->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len))
		return 0;
	return file_zero_by_writing(ns, off, len);
}

static int file_close(struct ernic_ns *ns)
{
	int rc = 0;

	if (ns->fd >= 0) {
		if (fdatasync(ns->fd))
			rc = -errno;
		close(ns->fd);
	}
	ns->fd = -1;
	return rc;
}

static const struct ernic_ns_ops ns_file_ops = {
	.name = "file",
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
	.write_zeroes = file_write_zeroes,
	.deallocate = file_deallocate,
	.close = file_close,
};

int ernic_ns_check_device_size(const char *path, uint64_t dev_size, uint64_t size, char *err, size_t errlen)
{
	if (size <= dev_size)
		return 0;
	snprintf(err, errlen, "Error: nvmeof backend: file='%s' is a block device of %llu bytes, smaller than size %llu",
		 path, (unsigned long long)dev_size, (unsigned long long)size);
	return -EINVAL;
}

/* A block device cannot grow: it must already hold the whole namespace. */
static int file_check_blkdev(int fd, const char *path, uint64_t size, char *err, size_t errlen)
{
	uint64_t dev_size;

	if (ioctl(fd, BLKGETSIZE64, &dev_size)) {
		int e = errno;

		snprintf(err, errlen, "Error: nvmeof backend: file='%s': cannot read the device size: %s", path,
			 strerror(e));
		return -e;
	}
	return ernic_ns_check_device_size(path, dev_size, size, err, errlen);
}

int ernic_ns_file_open(struct ernic_ns *ns, const char *path, uint64_t size, uint32_t bs, char *err,
		       size_t errlen)
{
	struct stat st;
	/* A file this call creates is removed again if the namespace fails: a refused request leaves nothing. */
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	bool created = fd >= 0;

	if (fd < 0 && errno == EEXIST)
		fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "Error: nvmeof backend: file='%s': %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))) {
		snprintf(err, errlen, "Error: nvmeof backend: file='%s' is not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if (S_ISBLK(st.st_mode)) {
		int rc = file_check_blkdev(fd, path, size, err, errlen);

		if (rc) {
			close(fd);
			return rc;
		}
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < size && ftruncate(fd, (off_t)size)) {
		int e = errno;
		struct rlimit fsize;

		/* "File too large" alone would blame the size; name the limit when it is the process's. */
		if (e == EFBIG && !getrlimit(RLIMIT_FSIZE, &fsize) && fsize.rlim_cur != RLIM_INFINITY &&
		    fsize.rlim_cur < size)
			snprintf(err, errlen,
				 "Error: nvmeof backend: file='%s': cannot size to %llu bytes: "
				 "past the file size limit of %llu bytes (ulimit -f)",
				 path, (unsigned long long)size, (unsigned long long)fsize.rlim_cur);
		else
			snprintf(err, errlen, "Error: nvmeof backend: file='%s': cannot size to %llu bytes: %s", path,
				 (unsigned long long)size, strerror(e));
		close(fd);
		if (created)
			unlink(path);
		return -e;
	}
	ns->fd = fd;
	snprintf(ns->path, sizeof(ns->path), "%s", path);
	ns->lba_shift = (uint32_t)__builtin_ctz(bs);
	ns->nlb = size >> ns->lba_shift;
	ns->ops = &ns_file_ops;
	return 0;
}

int ernic_ns_file_resize(struct ernic_ns *ns, uint64_t from, uint64_t size, char *err, size_t errlen)
{
	(void)from;
	struct stat st;

	if (fstat(ns->fd, &st)) {
		snprintf(err, errlen, "cannot resize %s: %s", ns->path, strerror(errno));
		return -errno;
	}
	if (S_ISBLK(st.st_mode)) {
		uint64_t dev_size = 0;

		if (ioctl(ns->fd, BLKGETSIZE64, &dev_size))
			dev_size = 0;
		return ernic_ns_check_device_size(ns->path, dev_size, size, err, errlen);
	}
	/* As at open: grow the file to the namespace, never cut what is beyond it. */
	if ((uint64_t)st.st_size < size && ftruncate(ns->fd, (off_t)size)) {
		snprintf(err, errlen, "cannot resize %s to %llu bytes: %s", ns->path, (unsigned long long)size,
			 strerror(errno));
		return -errno;
	}
	return 0;
}
