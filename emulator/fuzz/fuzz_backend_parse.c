/* SPDX-License-Identifier: MIT */
/*
 * fuzz_backend_parse.c - ernic_backend_parse() on any string, with and
 * without the MR budget check, and the round trip: a string that parses
 * formats to one that parses again to the same configuration.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool cfg_equal(const struct ernic_backend_cfg *a, const struct ernic_backend_cfg *b)
{
	return a->size == b->size && a->bs == b->bs && !strcmp(a->file, b->file) && a->queues == b->queues &&
	       a->queue_size == b->queue_size && a->max_mr == b->max_mr && a->pollers == b->pollers &&
	       a->skip_mr_budget == b->skip_mr_budget;
}

static void fuzz_round_trip(const char *str, bool skip_mr_budget)
{
	struct ernic_backend_cfg cfg = { .skip_mr_budget = skip_mr_budget }, again = cfg;
	char err[ERNIC_ERRLEN], fmt[8192];
	int n;

	if (ernic_backend_parse(str, &cfg, err, sizeof(err))) {
		/* A refusal is one line naming the key and value. */
		if (!err[0] || strchr(err, '\n'))
			abort();
		return;
	}
	n = ernic_backend_format(&cfg, fmt, sizeof(fmt));
	if (n == -EINVAL)
		return; /* a file name the syntax cannot carry (a comma, edge blanks) */
	if (n < 0 || (size_t)n != strlen(fmt)) {
		fprintf(stderr, "format of '%s' failed: %d\n", str, n);
		abort();
	}
	if (ernic_backend_parse(fmt, &again, err, sizeof(err)) || !cfg_equal(&cfg, &again)) {
		fprintf(stderr, "'%s' formats as '%s', which parses differently: %s\n", str, fmt, err);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *str = malloc(size + 1);

	if (!str)
		return 0;
	memcpy(str, data, size);
	str[size] = '\0';
	fuzz_round_trip(str, false);
	fuzz_round_trip(str, true);
	free(str);
	return 0;
}
