/* SPDX-License-Identifier: MIT */
/*
 * log.h - a port's log lines, rate-limited per kind (log.c).
 *
 * Any peer can make a port refuse, fail or close as often as it likes: past
 * @burst lines of one kind in a second, lines are counted and summed up in
 * one "suppressed N similar lines: <kind>" line once the second is over (or
 * at ernic_log_flush() with @force), so a flood neither fills the disk nor
 * hides what else happened.
 */
#ifndef ERNIC_SRC_LOG_H
#define ERNIC_SRC_LOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ernic/ernic.h"

#define ERNIC_LOG_WINDOW_NS 1000000000ull
/* Kinds a port may have. */
#define ERNIC_LOG_MAX_KINDS 8

struct ernic_log_limit {
	uint64_t window_ns; /* start of the current one-second window */
	unsigned int lines; /* written in it */
	unsigned int suppressed;
};

/**
 * struct ernic_log - where a port's lines go
 * @file: NULL logs nothing
 * @ident: each line's prefix
 * @kinds: each kind's name, for the summary line
 * @burst: lines of one kind per second before they are counted instead
 */
struct ernic_log {
	FILE *file;
	char ident[64];
	const char *const *kinds;
	unsigned int nr_kinds;
	unsigned int burst;
	pthread_mutex_t lock; /* @limits, and one line at a time */
	struct ernic_log_limit limits[ERNIC_LOG_MAX_KINDS];
};

void ernic_log_init(struct ernic_log *log, FILE *file, const char *ident, const char *const *kinds,
		    unsigned int nr_kinds, unsigned int burst);
void ernic_log_fini(struct ernic_log *log);
/* One line of @kind "<ident>: <fmt...>", unless the kind's burst is spent this second. */
void ernic_log(struct ernic_log *log, unsigned int kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The summaries of windows that ended (all of them with @force, as a port stops). */
void ernic_log_flush(struct ernic_log *log, bool force);

/* ernic_log_str(), a peer-controlled string made fit for one log line: ernic/ernic.h */
/*
 * An error message that quotes what an operator or a peer sent, made one
 * line in place as ernic_log_str() shows a string (cut at @len): a control
 * client prints it, and a newline in a path or an address would make it two.
 */
void ernic_err_one_line(char *msg, size_t len);

#endif /* ERNIC_SRC_LOG_H */
