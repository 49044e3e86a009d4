/* SPDX-License-Identifier: MIT */
/*
 * config.c - the ERNIC_BACKEND string and the memory-region budget.
 *
 *   nvmeof:size=8G,bs=4096[,file=PATH][,queues=N][,queue_size=128][,max_mr=2048][,pollers=N][,fault=F]
 *
 * fault= makes the namespace fail or stall, for testing what a host sees:
 * F is one error and/or one stall, joined by ':' (fault=eio@3:delay_us=500):
 *   eio       every Read and Write fails with EIO (Unrecovered Read Error / Write Fault)
 *   eio@N     the Nth Read or Write, counted from 1, fails; once
 *   eio%N     every Nth Read or Write fails
 *   enospc    every Write fails with ENOSPC (Capacity Exceeded); @N and %N count Writes
 *   delay_us=N  every backend call stalls N microseconds first (1..10000000)
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
#include <stddef.h>
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
	cfg->mdts = ERNIC_MDTS;
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
static int cfg_check_queues(const struct ernic_backend_cfg *cfg, const char *raw, bool budget, bool cap, char *err,
			    size_t errlen)
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
	if (cfg->queues >= 1 && cfg->queues <= max)
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
	return cfg_check_queues(cfg, raw, true, true, err, errlen);
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

bool ernic_parse_bytes(const char *s, uint64_t *out)
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

#define FAULT_DELAY_MAX_US 10000000u
#define FAULT_FORMS "eio|enospc[@N|%%N] and/or delay_us=N, joined by ':'"
static const char *const fault_errors[] = { [ERNIC_FAULT_EIO] = "eio", [ERNIC_FAULT_ENOSPC] = "enospc" };

/* A fault= count or stall: decimal, 1..@hi. */
static bool parse_fault_u32(const char *s, uint32_t hi, uint32_t *out)
{
	uint64_t v;

	if (!parse_dec(s, &v) || v < 1 || v > hi)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* One part of a fault= value: an error with its schedule, or a stall. */
static bool parse_fault_part(char *part, struct ernic_fault_cfg *f)
{
	size_t n;

	if (!strncmp(part, "delay_us=", 9))
		return !f->delay_us && parse_fault_u32(part + 9, FAULT_DELAY_MAX_US, &f->delay_us);
	for (uint8_t e = ERNIC_FAULT_EIO; e <= ERNIC_FAULT_ENOSPC; e++) {
		n = strlen(fault_errors[e]);
		if (strncmp(part, fault_errors[e], n) || f->error)
			continue;
		f->error = e;
		if (!part[n]) {
			f->when = ERNIC_FAULT_ALWAYS;
			return true;
		}
		f->when = part[n] == '@' ? ERNIC_FAULT_ONCE : ERNIC_FAULT_EVERY;
		return (part[n] == '@' || part[n] == '%') && parse_fault_u32(part + n + 1, UINT32_MAX, &f->n);
	}
	return false;
}

/* A whole fault= value into @f; false if any part is not one of FAULT_FORMS. */
static bool parse_fault(const char *val, struct ernic_fault_cfg *f)
{
	char buf[CFG_RAW_MAX + 1];
	char *part, *next;

	if (strlen(val) >= sizeof(buf))
		return false;
	snprintf(buf, sizeof(buf), "%s", val);
	memset(f, 0, sizeof(*f));
	for (part = buf; part; part = next) {
		next = strchr(part, ':');
		if (next)
			*next++ = '\0';
		if (!parse_fault_part(part, f))
			return false;
	}
	return true;
}

/* The fault= value parse_fault() reads back as @f; "" for none. */
static void format_fault(const struct ernic_fault_cfg *f, char *buf, size_t len)
{
	static const char when[] = { [ERNIC_FAULT_ONCE] = '@', [ERNIC_FAULT_EVERY] = '%' };
	size_t off = 0;

	buf[0] = '\0';
	if (f->error == ERNIC_FAULT_EIO || f->error == ERNIC_FAULT_ENOSPC) {
		off += (size_t)snprintf(buf, len, "%s", fault_errors[f->error]);
		if (f->when != ERNIC_FAULT_ALWAYS && off < len)
			off += (size_t)snprintf(buf + off, len - off, "%c%" PRIu32, when[f->when], f->n);
	}
	if (f->delay_us && off < len)
		snprintf(buf + off, len - off, "%sdelay_us=%" PRIu32, off ? ":" : "", f->delay_us);
}

/* How a key's value is read. */
enum cfg_kind {
	CFG_DEC,   /* parse_dec() */
	CFG_BYTES, /* ernic_parse_bytes() */
	CFG_PATH,  /* a non-empty string that fits the field, without control characters (cfg_path_cntrl()) */
	CFG_FAULT, /* parse_fault() */
};

/*
 * One row per key. A numeric value outside lo..hi (or, when @either is set,
 * other than its two values) is refused with "<name> must be <lo>..<hi>" (or
 * "<either0> or <either1>"), naming the value as typed.
 */
struct cfg_key {
	const char *name;
	enum cfg_kind kind;
	size_t off, width; /* the field in struct ernic_backend_cfg: uint32_t, uint64_t or a char array */
	uint64_t lo, hi;
	uint64_t either[2];
	/*
	 * Judged against other keys once every key is in (size by bs, queues by
	 * the MR budget), since those may come later: a value that does not parse
	 * is kept as 0 for that check to refuse, with the text it was given.
	 */
	bool late;
	/*
	 * The target's, taken from its first backend string alone (ernicd's
	 * first --backend): a namespace added later has none of its own, so
	 * ernic_backend_parse_ns() refuses it rather than drop it unseen.
	 */
	bool target;
};

#define CFG_FIELD(f) offsetof(struct ernic_backend_cfg, f), sizeof(((struct ernic_backend_cfg *)0)->f)

static const struct cfg_key cfg_keys[] = {
	{ "size", CFG_BYTES, CFG_FIELD(size), 0, UINT64_MAX, { 0 }, true },
	{ "bs", CFG_BYTES, CFG_FIELD(bs), 512, 4096, { 512, 4096 }, false },
	{ "file", CFG_PATH, CFG_FIELD(file), 0, 0, { 0 }, false },
	{ "queues", CFG_DEC, CFG_FIELD(queues), 0, UINT32_MAX, { 0 }, true, true },
	/* ERNIC_MAX_QUEUE_SIZE: no 16-bit field (MAXCMD, the SQ size) wraps; see ernic.h. */
	{ "queue_size", CFG_DEC, CFG_FIELD(queue_size), 2, ERNIC_MAX_QUEUE_SIZE, { 0 }, false, true },
	{ "max_mr", CFG_DEC, CFG_FIELD(max_mr), 64, ERNIC_MR_TABLE_LIMIT, { 0 }, false, true },
	{ "pollers", CFG_DEC, CFG_FIELD(pollers), 1, 64, { 0 }, false, true },
	{ "fault", CFG_FAULT, CFG_FIELD(fault), 0, 0, { 0 }, false },
	/* 0: no limit (Base 2.0 Figure 275, MDTS); a transport may bound it further (ERNIC_INPROC_MDTS_MAX). */
	{ "mdts", CFG_DEC, CFG_FIELD(mdts), 0, ERNIC_MDTS_MAX, { 0 }, false, true },
};
#define CFG_NR_KEYS (sizeof(cfg_keys) / sizeof(cfg_keys[0]))

/*
 * A control character in a path: refused, since a path is echoed in log lines
 * and errors, where a newline would forge a line of its own.
 */
static bool cfg_path_cntrl(const char *val)
{
	for (; *val; val++)
		if (iscntrl((unsigned char)*val))
			return true;
	return false;
}

static void cfg_store(struct ernic_backend_cfg *cfg, const struct cfg_key *key, uint64_t v)
{
	char *field = (char *)cfg + key->off;

	if (key->width == sizeof(uint64_t)) {
		memcpy(field, &v, sizeof(v));
	} else {
		uint32_t v32 = (uint32_t)v;

		memcpy(field, &v32, sizeof(v32));
	}
}

/* Reads @val into @key's field; false, with the field untouched, if it is not one @key accepts. */
static bool cfg_set(struct ernic_backend_cfg *cfg, const struct cfg_key *key, const char *val)
{
	uint64_t v;

	switch (key->kind) {
	case CFG_PATH:
		if (!*val || strlen(val) >= key->width || cfg_path_cntrl(val))
			return false;
		memcpy((char *)cfg + key->off, val, strlen(val) + 1);
		return true;
	case CFG_FAULT:
		return parse_fault(val, (struct ernic_fault_cfg *)((char *)cfg + key->off));
	case CFG_BYTES:
		if (!ernic_parse_bytes(val, &v))
			return false;
		break;
	case CFG_DEC:
	default:
		if (!parse_dec(val, &v))
			return false;
		break;
	}
	if (v < key->lo || v > key->hi || (key->either[0] && v != key->either[0] && v != key->either[1]))
		return false;
	cfg_store(cfg, key, v);
	return true;
}

static void cfg_err_value(const struct cfg_key *key, const char *val, char *err, size_t errlen)
{
	if (key->kind == CFG_FAULT)
		cfg_err(err, errlen, CFG_ERR "fault must be " FAULT_FORMS " (got '%.*s')", CFG_RAW_MAX, val);
	else if (key->kind == CFG_PATH && cfg_path_cntrl(val))
		cfg_err(err, errlen, CFG_ERR "%s cannot hold a control character such as a newline (got '%.*s')",
			key->name, CFG_RAW_MAX, val);
	else if (key->kind == CFG_PATH)
		cfg_err(err, errlen, CFG_ERR "%s must be a non-empty path shorter than %zu bytes (got '%.*s')",
			key->name, key->width, CFG_RAW_MAX, val);
	else if (key->either[0])
		cfg_err(err, errlen, CFG_ERR "%s must be %" PRIu64 " or %" PRIu64 " (got '%.*s')", key->name,
			key->either[0], key->either[1], CFG_RAW_MAX, val);
	else
		cfg_err(err, errlen, CFG_ERR "%s must be %" PRIu64 "..%" PRIu64 " (got '%.*s')", key->name, key->lo,
			key->hi, CFG_RAW_MAX, val);
}

static const struct cfg_key *cfg_key_find(const char *name)
{
	for (size_t k = 0; k < CFG_NR_KEYS; k++)
		if (strcmp(name, cfg_keys[k].name) == 0)
			return &cfg_keys[k];
	return NULL;
}

/* A late key's value as typed, or @dflt when the string did not set it. */
static const char *cfg_raw(const char *const *raw, const char *name, const char *dflt)
{
	const char *v = raw[cfg_key_find(name) - cfg_keys];

	return v ? v : dflt;
}

/*
 * A key of the target's, set in the namespace string @what names: one line naming the string, the key, its
 * value and what a namespace takes.
 */
static void cfg_err_target_key(const char *what, const char *name, const char *val, char *err, size_t errlen)
{
	char ns_keys[64] = "";
	size_t off = 0;

	for (size_t k = 0; k < CFG_NR_KEYS; k++)
		if (!cfg_keys[k].target && off < sizeof(ns_keys))
			off += (size_t)snprintf(ns_keys + off, sizeof(ns_keys) - off, "%s%s", off ? ", " : "",
						cfg_keys[k].name);
	cfg_err(err, errlen,
		"%s%s%s=%.*s: set per target by the first --backend, not per namespace (a namespace takes %s)",
		what ? what : "", what ? ": " : "", name, CFG_RAW_MAX, val, ns_keys);
}

/*
 * One "key=value" entry; @raw keeps each key's value as typed, and so also says which keys were seen; *@keyp
 * is the entry's key once it is known. With @ns_only a key of the target's is refused, naming the string @what.
 */
static int cfg_parse_item(struct ernic_backend_cfg *cfg, char *item, const char **raw, const struct cfg_key **keyp,
			  bool ns_only, const char *what, char *err, size_t errlen)
{
	const struct cfg_key *key;
	char *eq = strchr(item, '='), *name, *val;

	if (!eq) {
		cfg_err(err, errlen, CFG_ERR "expected key=value (in '%.*s')", CFG_RAW_MAX, item);
		return -EINVAL;
	}
	*eq = '\0';
	name = trim(item);
	val = trim(eq + 1);
	key = *keyp = cfg_key_find(name);
	if (!key) {
		cfg_err(err, errlen, CFG_ERR "unknown key '%.*s' (in '%.*s=%.*s')", CFG_RAW_MAX, name, CFG_RAW_MAX,
			name, CFG_RAW_MAX, val);
		return -EINVAL;
	}
	if (ns_only && key->target) {
		cfg_err_target_key(what, name, val, err, errlen);
		return -EINVAL;
	}
	if (raw[key - cfg_keys]) {
		cfg_err(err, errlen, CFG_ERR "duplicate key '%s' (in '%s=%.*s')", name, name, CFG_RAW_MAX, val);
		return -EINVAL;
	}
	raw[key - cfg_keys] = val;
	if (cfg_set(cfg, key, val))
		return 0;
	if (!key->late) {
		cfg_err_value(key, val, err, errlen);
		return -EINVAL;
	}
	cfg_store(cfg, key, 0);
	return 0;
}

static int cfg_parse(const char *str, struct ernic_backend_cfg *cfg, bool ns_only, const char *what, char *err,
		     size_t errlen)
{
	bool skip_mr_budget = cfg->skip_mr_budget;
	/* Each key's value as typed, for the checks made once every key is in. */
	const char *raw[CFG_NR_KEYS] = { NULL };
	char queues_raw[16];
	char *copy, *p, *item, *save = NULL;
	const struct cfg_key *key = NULL; /* the entry before's */
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
		save = strchr(item, ',');
		if (save)
			*save++ = '\0';
		item = trim(item);
		/* The rest of a path cut at its comma: say so rather than "expected key=value". */
		if (key && key->kind == CFG_PATH && *item && !strchr(item, '=')) {
			cfg_err(err, errlen, CFG_ERR "%s cannot hold ',', which separates the keys (got '%.*s,%.*s')",
				key->name, CFG_RAW_MAX, raw[key - cfg_keys], CFG_RAW_MAX, item);
			goto out;
		}
		key = NULL;
		if (cfg_parse_item(cfg, item, raw, &key, ns_only, what, err, errlen))
			goto out;
	}

	if (cfg->size == 0 || cfg->size % cfg->bs) {
		cfg_err(err, errlen, CFG_ERR "size must be a positive multiple of bs %" PRIu32 " (got '%.*s')", cfg->bs,
			CFG_RAW_MAX, cfg_raw(raw, "size", "1G"));
		goto out;
	}
	if (cfg->size > ERNIC_NS_SIZE_MAX) {
		cfg_err(err, errlen, CFG_ERR "size must be at most %llu bytes, 1 EiB (got '%.*s')", ERNIC_NS_SIZE_MAX,
			CFG_RAW_MAX, cfg_raw(raw, "size", "1G"));
		goto out;
	}
	rc = cfg_check_queues(cfg, cfg_raw(raw, "queues", queues_raw), !cfg->skip_mr_budget, true, err, errlen);
out:
	free(copy);
	return rc;
}

int ernic_backend_parse(const char *str, struct ernic_backend_cfg *cfg, char *err, size_t errlen)
{
	return cfg_parse(str, cfg, false, NULL, err, errlen);
}

int ernic_backend_parse_ns(const char *str, const char *what, struct ernic_backend_cfg *cfg, char *err,
			   size_t errlen)
{
	return cfg_parse(str, cfg, true, what, err, errlen);
}

int ernic_backend_format(const struct ernic_backend_cfg *cfg, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	char size[32], fault[64];
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

	format_fault(&cfg->fault, fault, sizeof(fault));
	n = snprintf(buf, len,
		     CFG_PREFIX ":size=%s,bs=%" PRIu32 "%s%s,queues=%" PRIu32 ",queue_size=%" PRIu32
				",max_mr=%" PRIu32 ",pollers=%" PRIu32 ",mdts=%" PRIu32 "%s%s",
		     size, cfg->bs, flen ? ",file=" : "", flen ? cfg->file : "", cfg->queues, cfg->queue_size,
		     cfg->max_mr, cfg->pollers, cfg->mdts, fault[0] ? ",fault=" : "", fault);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len)
		return -ENOSPC;
	return n;
}
