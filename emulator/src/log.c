/* SPDX-License-Identifier: MIT */
/* log.c - a port's log lines, rate-limited per kind (see log.h). */
#include <stdarg.h>
#include <string.h>

#include "log.h"
#include "target.h"

void ernic_log_init(struct ernic_log *log, FILE *file, const char *ident, const char *const *kinds,
		    unsigned int nr_kinds, unsigned int burst)
{
	memset(log, 0, sizeof(*log));
	log->file = file;
	snprintf(log->ident, sizeof(log->ident), "%s", ident);
	log->kinds = kinds;
	log->nr_kinds = MIN(nr_kinds, ERNIC_LOG_MAX_KINDS);
	log->burst = burst;
	pthread_mutex_init(&log->lock, NULL);
}

void ernic_log_fini(struct ernic_log *log)
{
	pthread_mutex_destroy(&log->lock);
}

/* Summaries of lines held back in a window that ended (every window with @force); the lock held. */
static void log_summaries_locked(struct ernic_log *log, uint64_t now, bool force)
{
	for (unsigned int k = 0; k < log->nr_kinds; k++) {
		struct ernic_log_limit *l = &log->limits[k];

		if (!l->suppressed || (!force && now - l->window_ns < ERNIC_LOG_WINDOW_NS))
			continue;
		fprintf(log->file, "%s: suppressed %u similar lines: %s\n", log->ident, l->suppressed, log->kinds[k]);
		l->suppressed = 0;
	}
	fflush(log->file);
}

void ernic_log_flush(struct ernic_log *log, bool force)
{
	if (!log->file)
		return;
	pthread_mutex_lock(&log->lock);
	log_summaries_locked(log, ernic_now_ns(), force);
	pthread_mutex_unlock(&log->lock);
}

void ernic_log(struct ernic_log *log, unsigned int kind, const char *fmt, ...)
{
	struct ernic_log_limit *l;
	char line[2048];
	uint64_t now;
	va_list ap;

	if (!log->file || kind >= log->nr_kinds)
		return;
	l = &log->limits[kind];
	pthread_mutex_lock(&log->lock);
	now = ernic_now_ns();
	log_summaries_locked(log, now, false);
	if (now - l->window_ns >= ERNIC_LOG_WINDOW_NS) {
		l->window_ns = now;
		l->lines = 0;
	}
	if (l->lines == log->burst) {
		l->suppressed++;
		pthread_mutex_unlock(&log->lock);
		return;
	}
	l->lines++;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(log->file, "%s: %s\n", log->ident, line);
	fflush(log->file);
	pthread_mutex_unlock(&log->lock);
}

const char *ernic_log_str(const char *s, char *out, size_t len)
{
	size_t o = 0;

	if (!*s)
		return "\"\"";
	for (; *s && o + 5 <= len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, len - o, "\\x%02x", c);
	}
	out[o] = '\0';
	return out;
}

void ernic_err_one_line(char *msg, size_t len)
{
	char raw[ERNIC_ERRLEN];

	if (!*msg)
		return;
	snprintf(raw, sizeof(raw), "%s", msg);
	ernic_log_str(raw, msg, len);
}
