/* SPDX-License-Identifier: MIT */
/* counters.c - names for statuses and opcodes, and the counters as JSON. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "target.h"

const char *ernic_status_str(uint16_t status)
{
	switch (status) {
	case NVME_SC_SUCCESS: return "SUCCESS";
	case NVME_SC_INVALID_OPCODE: return "INVALID_OPCODE";
	case NVME_SC_INVALID_FIELD: return "INVALID_FIELD";
	case NVME_SC_CMDID_CONFLICT: return "CMDID_CONFLICT";
	case NVME_SC_DATA_XFER_ERROR: return "DATA_TRANSFER_ERROR";
	case NVME_SC_INTERNAL: return "INTERNAL";
	case NVME_SC_ABORT_REQ: return "ABORT_REQ";
	case NVME_SC_ABORT_SQ_DELETION: return "ABORT_SQ_DELETION";
	case NVME_SC_INVALID_NS: return "INVALID_NS";
	case NVME_SC_CMD_SEQ_ERROR: return "CMD_SEQ_ERROR";
	case NVME_SC_SGL_INVALID_LAST: return "SGL_INVALID_LAST";
	case NVME_SC_SGL_INVALID_COUNT: return "SGL_INVALID_COUNT";
	case NVME_SC_SGL_INVALID_DATA_LEN: return "SGL_INVALID_DATA_LEN";
	case NVME_SC_SGL_INVALID_METADATA: return "SGL_INVALID_METADATA";
	case NVME_SC_SGL_INVALID_TYPE: return "SGL_INVALID_TYPE";
	case NVME_SC_SGL_INVALID_OFFSET: return "SGL_INVALID_OFFSET";
	case NVME_SC_SGL_INVALID_SUBTYPE: return "SGL_INVALID_SUBTYPE";
	case NVME_SC_TRANSIENT_TRANSPORT: return "TRANSIENT_TRANSPORT_ERROR";
	case NVME_SC_LBA_RANGE: return "LBA_RANGE";
	case NVME_SC_CAP_EXCEEDED: return "CAP_EXCEEDED";
	case NVME_SC_NS_NOT_READY: return "NS_NOT_READY";
	case NVME_SC_ANA_PERSISTENT_LOSS: return "ANA_PERSISTENT_LOSS";
	case NVME_SC_ANA_INACCESSIBLE: return "ANA_INACCESSIBLE";
	case NVME_SC_ANA_TRANSITION: return "ANA_TRANSITION";
	case NVME_SC_INVALID_QID: return "INVALID_QID";
	case NVME_SC_INVALID_QUEUE_SIZE: return "INVALID_QUEUE_SIZE";
	case NVME_SC_AER_LIMIT_EXCEEDED: return "AER_LIMIT_EXCEEDED";
	case NVME_SC_INVALID_LOG_PAGE: return "INVALID_LOG_PAGE";
	case NVME_SC_INVALID_FORMAT: return "INVALID_FORMAT";
	case NVME_SC_FEATURE_NOT_SAVEABLE: return "FEATURE_NOT_SAVEABLE";
	case NVME_SC_FEATURE_NOT_CHANGEABLE: return "FEATURE_NOT_CHANGEABLE";
	case NVME_SC_CONNECT_INCOMPATIBLE_FORMAT: return "CONNECT_INCOMPATIBLE_FORMAT";
	case NVME_SC_CONNECT_CTRL_BUSY: return "CONNECT_CTRL_BUSY";
	case NVME_SC_CONNECT_INVALID_PARAM: return "CONNECT_INVALID_PARAM";
	case NVME_SC_CONNECT_RESTART_DISC: return "CONNECT_RESTART_DISC";
	case NVME_SC_CONNECT_INVALID_HOST: return "CONNECT_INVALID_HOST";
	case NVME_SC_DISCONNECT_INVALID_QTYPE: return "DISCONNECT_INVALID_QTYPE";
	case NVME_SC_WRITE_FAULT: return "WRITE_FAULT";
	case NVME_SC_UNRECOVERED_READ: return "UNRECOVERED_READ";
	default: return "UNKNOWN_STATUS";
	}
}

const char *ernic_opcode_str(bool admin, uint8_t opc)
{
	if (opc == NVME_FABRICS_COMMAND)
		return "fabrics";
	if (admin) {
		switch (opc) {
		case NVME_ADMIN_GET_LOG_PAGE: return "get_log_page";
		case NVME_ADMIN_IDENTIFY: return "identify";
		case NVME_ADMIN_ABORT: return "abort";
		case NVME_ADMIN_SET_FEATURES: return "set_features";
		case NVME_ADMIN_GET_FEATURES: return "get_features";
		case NVME_ADMIN_ASYNC_EVENT: return "async_event";
		case NVME_ADMIN_KEEP_ALIVE: return "keep_alive";
		default: return NULL;
		}
	}
	switch (opc) {
	case NVME_CMD_FLUSH: return "flush";
	case NVME_CMD_WRITE: return "write";
	case NVME_CMD_READ: return "read";
	case NVME_CMD_WRITE_ZEROES: return "write_zeroes";
	case NVME_CMD_DSM: return "dsm";
	default: return NULL;
	}
}

/*
 * A JSON text being written: into the caller's fixed buffer, or into a
 * malloc'd one that doubles until the text fits (@grow).
 */
struct jbuf {
	char *p;
	size_t len, off;
	bool grow;
	bool overflow; /* no room, or no memory: the text is lost */
};

static bool jbuf_grow(struct jbuf *j, size_t need)
{
	size_t len = j->len;
	char *p;

	while (len < need)
		len *= 2;
	p = realloc(j->p, len);
	if (!p)
		return false;
	j->p = p;
	j->len = len;
	return true;
}

__attribute__((format(printf, 2, 3))) static void jprintf(struct jbuf *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	while (!j->overflow) {
		va_start(ap, fmt);
		n = vsnprintf(j->p + j->off, j->off < j->len ? j->len - j->off : 0, fmt, ap);
		va_end(ap);
		if (n >= 0 && j->off + (size_t)n < j->len) {
			j->off += (size_t)n;
			return;
		}
		if (n < 0 || !j->grow || !jbuf_grow(j, j->off + (size_t)n + 1))
			j->overflow = true;
	}
}

static void json_opcodes(struct jbuf *j, const char *key, const uint64_t *cmds, bool admin)
{
	const char *sep = "";

	jprintf(j, "\"%s\":{", key);
	for (int i = 0; i < 256; i++) {
		const char *name = ernic_opcode_str(admin, (uint8_t)i);

		if (!cmds[i])
			continue;
		if (name)
			jprintf(j, "%s\"%s\":%llu", sep, name, (unsigned long long)cmds[i]);
		else
			jprintf(j, "%s\"0x%02x\":%llu", sep, i, (unsigned long long)cmds[i]);
		sep = ",";
	}
	jprintf(j, "}");
}

static void json_counters(struct jbuf *j, const struct ernic_counters *c)
{
	const char *sep = "";

	jprintf(j, "{");
	json_opcodes(j, "admin_cmds", c->admin_cmds, true);
	jprintf(j, ",");
	json_opcodes(j, "io_cmds", c->io_cmds, false);
	jprintf(j, ",\"bytes_read\":%llu,\"bytes_written\":%llu,\"io_bytes_read\":%llu,\"io_bytes_written\":%llu,"
		"\"errors\":{",
		(unsigned long long)c->bytes_read, (unsigned long long)c->bytes_written,
		(unsigned long long)c->io_bytes_read, (unsigned long long)c->io_bytes_written);
	for (int i = 0; i < NVME_STATUS_COUNT; i++) {
		if (!c->errors[i])
			continue;
		jprintf(j, "%s\"%s\":%llu", sep, ernic_status_str((uint16_t)i), (unsigned long long)c->errors[i]);
		sep = ",";
	}
	jprintf(j, "},\"mr_in_use\":%u,\"mr_high_water\":%u,\"mr_max\":%u,\"controllers\":%u,\"io_queues\":%u}",
		c->mr_in_use, c->mr_high_water, c->mr_max, c->controllers, c->io_queues);
}

int ernic_counters_json(const struct ernic_counters *c, char *buf, size_t len)
{
	struct jbuf j = { .p = buf, .len = len };

	json_counters(&j, c);
	return j.overflow ? -ENOSPC : (int)j.off;
}

char *ernic_counters_json_alloc(const struct ernic_counters *c)
{
	/* Idle counters fit in one page; a busy target's error table may not. */
	struct jbuf j = { .p = malloc(4096), .len = 4096, .grow = true };

	if (!j.p)
		return NULL;
	json_counters(&j, c);
	if (j.overflow) {
		free(j.p);
		return NULL;
	}
	return j.p;
}
