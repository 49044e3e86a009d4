/* SPDX-License-Identifier: MIT */
/*
 * config.c - the ERNIC_BACKEND string and the memory-region budget.
 *
 *   nvmeof:size=8G,bs=4096[,file=PATH][,queues=N][,queue_size=128][,max_mr=2048][,pollers=N]
 *
 * A stock nvme-rdma host (register_always) allocates queue_size MRs per I/O
 * queue and NVME_AQ_DEPTH = 32 for the admin queue at connect time, before the
 * first capsule moves. A queue count the MR table cannot feed therefore fails
 * deep inside the host's connect ("failed to initialize MR pool sized 128 for
 * QID 8"); refusing it here, with the arithmetic spelled out, is the point of
 * this file.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

#define CFG_PREFIX "nvmeof"
#define CFG_ERR "Error: nvmeof backend: "
/* Longest raw value quoted back in an error; ERNIC_ERRLEN bounds the line anyway. */
#define CFG_RAW_MAX 64

static void cfg_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void cfg_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	/* The message is one line whatever the user typed into a value. */
	for (char *p = err; *p; p++)
		if (iscntrl((unsigned char)*p))
			*p = '?';
}

void ernic_backend_cfg_init(struct ernic_backend_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = 1ull << 30;
	cfg->bs = 4096;
	cfg->queues = ERNIC_DEFAULT_QUEUES;
	cfg->queue_size = ERNIC_DEFAULT_QUEUE_SIZE;
	cfg->max_mr = ERNIC_MAX_MR;
	cfg->pollers = 1;
	cfg->skip_mr_budget = false;
}

uint32_t ernic_backend_max_queues(const struct ernic_backend_cfg *cfg)
{
	if (!cfg->queue_size || cfg->max_mr < ERNIC_ADMIN_QUEUE_SIZE)
		return 0;
	return (cfg->max_mr - ERNIC_ADMIN_QUEUE_SIZE) / cfg->queue_size;
}

/*
 * The one check behind every queue count error. @raw is the value as the user
 * wrote it, quoted back verbatim. @budget applies the MR budget, @cap the
 * absolute ERNIC_MAX_IO_QUEUES; the message names whichever limit is lower.
 */
static int cfg_check_queues(const struct ernic_backend_cfg *cfg, const char *raw, bool valid, bool budget, bool cap,
			    char *err, size_t errlen)
{
	uint32_t max_budget = ernic_backend_max_queues(cfg);
	uint32_t max = UINT32_MAX;
	bool by_budget = false;

	if (budget && max_budget == 0) {
		cfg_err(err, errlen,
			CFG_ERR "max_mr %" PRIu32 " cannot hold one I/O queue of queue_size %" PRIu32
				" after the admin queue's %d memory regions (got queues '%.*s')",
			cfg->max_mr, cfg->queue_size, ERNIC_ADMIN_QUEUE_SIZE, CFG_RAW_MAX, raw);
		return -EINVAL;
	}
	if (cap)
		max = ERNIC_MAX_IO_QUEUES;
	if (budget && max_budget <= max) {
		max = max_budget;
		by_budget = true;
	}
	if (valid && cfg->queues >= 1 && cfg->queues <= max)
		return 0;

	if (by_budget)
		cfg_err(err, errlen,
			CFG_ERR "queues must be 1..%" PRIu32 ", one per %" PRIu32
				" memory regions in a table of %" PRIu32 " (got '%.*s')",
			max, cfg->queue_size, cfg->max_mr, CFG_RAW_MAX, raw);
	else
		cfg_err(err, errlen,
			CFG_ERR "queues must be 1..%" PRIu32 ", the most I/O queues this controller offers (got '%.*s')",
			max, CFG_RAW_MAX, raw);
	return -EINVAL;
}

int ernic_backend_check_budget(const struct ernic_backend_cfg *cfg, char *err, size_t errlen)
{
	char raw[16];

	snprintf(raw, sizeof(raw), "%" PRIu32, cfg->queues);
	return cfg_check_queues(cfg, raw, true, true, true, err, errlen);
}

/* A decimal integer, nothing else: no sign, no suffix, no base prefix. */
static bool parse_dec(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

/* Bytes with an optional binary K/M/G/T suffix, any case, then an optional B or iB. */
static bool parse_bytes(const char *s, uint64_t *out)
{
	static const char units[] = "kmgt";
	char digits[32];
	size_t n = strspn(s, "0123456789");
	const char *u;
	uint64_t v;
	unsigned shift = 0;

	if (n == 0 || n >= sizeof(digits))
		return false;
	memcpy(digits, s, n);
	digits[n] = '\0';
	if (!parse_dec(digits, &v))
		return false;
	s += n;
	if (*s && (u = strchr(units, tolower((unsigned char)*s)))) {
		shift = 10 * (unsigned)(u - units + 1);
		s++;
		/* "Ki" alone is no unit: the i only ever comes with its B. */
		if (tolower((unsigned char)*s) == 'i' && tolower((unsigned char)s[1]) != 'b')
			return false;
		if (tolower((unsigned char)*s) == 'i')
			s++;
	}
	if (tolower((unsigned char)*s) == 'b')
		s++;
	if (*s)
		return false;
	if (shift && v > (UINT64_MAX >> shift))
		return false;
	*out = v << shift;
	return true;
}

static bool parse_u32_range(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v;

	if (!parse_dec(s, &v) || v < lo || v > hi)
		return false;
	*out = (uint32_t)v;
	return true;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

enum cfg_key {
	CFG_SIZE,
	CFG_BS,
	CFG_FILE,
	CFG_QUEUES,
	CFG_QUEUE_SIZE,
	CFG_MAX_MR,
	CFG_POLLERS,
	CFG_NR_KEYS,
};

static const char *const cfg_keys[CFG_NR_KEYS] = {
	[CFG_SIZE] = "size",
	[CFG_BS] = "bs",
	[CFG_FILE] = "file",
	[CFG_QUEUES] = "queues",
	[CFG_QUEUE_SIZE] = "queue_size",
	[CFG_MAX_MR] = "max_mr",
	[CFG_POLLERS] = "pollers",
};

int ernic_backend_parse(const char *str, struct ernic_backend_cfg *cfg, char *err, size_t errlen)
{
	bool skip_mr_budget = cfg->skip_mr_budget;
	bool seen[CFG_NR_KEYS] = { false };
	char size_raw[CFG_RAW_MAX + 1] = "1G";
	char queues_raw[CFG_RAW_MAX + 1] = "";
	bool queues_valid = true;
	uint64_t v;
	char *copy, *p, *item, *save = NULL;
	int rc = -EINVAL;

	if (err && errlen)
		err[0] = '\0';
	ernic_backend_cfg_init(cfg);
	cfg->skip_mr_budget = skip_mr_budget;
	snprintf(queues_raw, sizeof(queues_raw), "%" PRIu32, cfg->queues);

	if (!str) {
		cfg_err(err, errlen, CFG_ERR "no backend string given");
		return -EINVAL;
	}
	copy = strdup(str);
	if (!copy) {
		cfg_err(err, errlen, CFG_ERR "out of memory");
		return -ENOMEM;
	}
	p = trim(copy);
	if (strncmp(p, CFG_PREFIX, strlen(CFG_PREFIX)) != 0 ||
	    (p[strlen(CFG_PREFIX)] != ':' && p[strlen(CFG_PREFIX)] != '\0')) {
		cfg_err(err, errlen, CFG_ERR "expected 'nvmeof:key=value,...' (got '%.*s')", CFG_RAW_MAX, p);
		goto out;
	}
	p += strlen(CFG_PREFIX);
	if (*p == ':')
		p++;

	/*
	 * strtok_r would fold ",," into one separator; an empty entry is a typo
	 * worth reporting, so split by hand.
	 */
	p = trim(p);
	for (item = *p ? p : NULL; item; item = save) {
		char *eq, *key, *val;
		int k;

		save = strchr(item, ',');
		if (save)
			*save++ = '\0';
		item = trim(item);
		eq = strchr(item, '=');
		if (!eq) {
			cfg_err(err, errlen, CFG_ERR "expected key=value (in '%.*s')", CFG_RAW_MAX, item);
			goto out;
		}
		*eq = '\0';
		key = trim(item);
		val = trim(eq + 1);
		for (k = 0; k < CFG_NR_KEYS; k++)
			if (strcmp(key, cfg_keys[k]) == 0)
				break;
		if (k == CFG_NR_KEYS) {
			cfg_err(err, errlen, CFG_ERR "unknown key '%.*s' (in '%.*s=%.*s')", CFG_RAW_MAX, key,
				CFG_RAW_MAX, key, CFG_RAW_MAX, val);
			goto out;
		}
		if (seen[k]) {
			cfg_err(err, errlen, CFG_ERR "duplicate key '%s' (in '%s=%.*s')", key, key, CFG_RAW_MAX,
				val);
			goto out;
		}
		seen[k] = true;

		switch (k) {
		case CFG_SIZE:
			/* Checked against bs once every key is in: bs may come later. */
			snprintf(size_raw, sizeof(size_raw), "%s", val);
			if (!parse_bytes(val, &cfg->size))
				cfg->size = 0;
			break;
		case CFG_BS:
			if (!parse_bytes(val, &v) || (v != 512 && v != 4096)) {
				cfg_err(err, errlen, CFG_ERR "bs must be 512 or 4096 (got '%.*s')", CFG_RAW_MAX, val);
				goto out;
			}
			cfg->bs = (uint32_t)v;
			break;
		case CFG_FILE:
			if (!*val || strlen(val) >= sizeof(cfg->file)) {
				cfg_err(err, errlen,
					CFG_ERR "file must be a non-empty path shorter than %zu bytes (got '%.*s')",
					sizeof(cfg->file), CFG_RAW_MAX, val);
				goto out;
			}
			memcpy(cfg->file, val, strlen(val) + 1);
			break;
		case CFG_QUEUES:
			/* Judged against the budget once max_mr and queue_size are known. */
			snprintf(queues_raw, sizeof(queues_raw), "%s", val);
			queues_valid = parse_dec(val, &v) && v <= UINT32_MAX;
			cfg->queues = queues_valid ? (uint32_t)v : 0;
			break;
		case CFG_QUEUE_SIZE:
			if (!parse_u32_range(val, 2, ERNIC_MAX_QUEUE_SIZE, &cfg->queue_size)) {
				cfg_err(err, errlen, CFG_ERR "queue_size must be 2..%u (got '%.*s')", ERNIC_MAX_QUEUE_SIZE,
					CFG_RAW_MAX, val);
				goto out;
			}
			break;
		case CFG_MAX_MR:
			if (!parse_u32_range(val, 64, ERNIC_MR_TABLE_LIMIT, &cfg->max_mr)) {
				cfg_err(err, errlen, CFG_ERR "max_mr must be 64..%u (got '%.*s')", ERNIC_MR_TABLE_LIMIT,
					CFG_RAW_MAX, val);
				goto out;
			}
			break;
		case CFG_POLLERS:
			if (!parse_u32_range(val, 1, 64, &cfg->pollers)) {
				cfg_err(err, errlen, CFG_ERR "pollers must be 1..64 (got '%.*s')", CFG_RAW_MAX, val);
				goto out;
			}
			break;
		}
	}

	if (cfg->size == 0 || cfg->size % cfg->bs) {
		cfg_err(err, errlen, CFG_ERR "size must be a positive multiple of bs %" PRIu32 " (got '%s')", cfg->bs,
			size_raw);
		goto out;
	}
	rc = cfg_check_queues(cfg, queues_raw, queues_valid, !cfg->skip_mr_budget, true, err, errlen);
out:
	free(copy);
	return rc;
}

int ernic_backend_format(const struct ernic_backend_cfg *cfg, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	char size[32];
	uint64_t sz = cfg->size;
	size_t flen = strnlen(cfg->file, sizeof(cfg->file));
	int u = -1, n;

	/* A path the parser would split or trim cannot come back as itself. */
	if (flen == sizeof(cfg->file) || strchr(cfg->file, ',') ||
	    (flen && (isspace((unsigned char)cfg->file[0]) || isspace((unsigned char)cfg->file[flen - 1]))))
		return -EINVAL;

	while (sz && sz % 1024 == 0 && u < 3) {
		sz /= 1024;
		u++;
	}
	if (u >= 0)
		snprintf(size, sizeof(size), "%" PRIu64 "%c", sz, units[u]);
	else
		snprintf(size, sizeof(size), "%" PRIu64, sz);

	n = snprintf(buf, len,
		     CFG_PREFIX ":size=%s,bs=%" PRIu32 "%s%s,queues=%" PRIu32 ",queue_size=%" PRIu32
				",max_mr=%" PRIu32 ",pollers=%" PRIu32,
		     size, cfg->bs, flen ? ",file=" : "", flen ? cfg->file : "", cfg->queues, cfg->queue_size,
		     cfg->max_mr, cfg->pollers);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len)
		return -ENOSPC;
	return n;
}
