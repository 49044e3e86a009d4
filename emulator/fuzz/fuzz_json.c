/* SPDX-License-Identifier: MIT */
/*
 * fuzz_json.c - json_parse() on any text, as the control socket and
 * ernicd --config read a request: a refusal is one line naming the offset,
 * and a document that parses, written out again, parses to the same tree.
 */
#include <inttypes.h>

#include "fuzz.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool put_raw(char *buf, size_t len, size_t *off, const char *s)
{
	size_t n = strlen(s);

	if (*off + n + 1 > len)
		return false;
	memcpy(buf + *off, s, n + 1);
	*off += n;
	return true;
}

/* @v as JSON text at *@off: the writer the round trip needs (the control plane writes its answers by hand). */
static bool json_write(const struct json *v, char *buf, size_t len, size_t *off)
{
	char num[24];
	bool ok = true;

	switch (v->type) {
	case JSON_NULL:
		return put_raw(buf, len, off, "null");
	case JSON_BOOL:
		return put_raw(buf, len, off, v->b ? "true" : "false");
	case JSON_INT:
		snprintf(num, sizeof(num), "%" PRId64, v->num);
		return put_raw(buf, len, off, num);
	case JSON_STRING:
		return json_put_str(buf, len, off, v->str);
	case JSON_ARRAY:
	case JSON_OBJECT:
		ok = put_raw(buf, len, off, v->type == JSON_ARRAY ? "[" : "{");
		for (const struct json *c = v->child; ok && c; c = c->next) {
			if (c != v->child)
				ok = put_raw(buf, len, off, ",");
			if (ok && v->type == JSON_OBJECT)
				ok = json_put_str(buf, len, off, c->key) && put_raw(buf, len, off, ":");
			ok = ok && json_write(c, buf, len, off);
		}
		return ok && put_raw(buf, len, off, v->type == JSON_ARRAY ? "]" : "}");
	}
	abort();
}

static bool json_equal(const struct json *a, const struct json *b)
{
	for (; a && b; a = a->next, b = b->next) {
		if (a->type != b->type || !a->key != !b->key || (a->key && strcmp(a->key, b->key)))
			return false;
		if ((a->type == JSON_STRING && strcmp(a->str, b->str)) || (a->type == JSON_INT && a->num != b->num) ||
		    (a->type == JSON_BOOL && a->b != b->b) || !json_equal(a->child, b->child))
			return false;
	}
	return !a && !b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[ERNIC_ERRLEN] = "", err2[ERNIC_ERRLEN] = "";
	struct json *doc = NULL, *again = NULL;
	size_t len = 6 * size + 64, off = 0;
	char *text = malloc(size + 1), *out = malloc(len);

	if (!text || !out)
		goto out;
	memcpy(text, data, size);
	text[size] = '\0';
	if (json_parse(text, &doc, err, sizeof(err))) {
		/* A refusal is one line. */
		if (!err[0] || strchr(err, '\n'))
			abort();
		goto out;
	}
	/* Every string written out takes at most 6 bytes per byte read (\u00XX): the buffer always holds it. */
	if (!json_write(doc, out, len, &off)) {
		fprintf(stderr, "'%s' parsed but does not fit %zu bytes written out\n", text, len);
		abort();
	}
	if (json_parse(out, &again, err2, sizeof(err2)) || !json_equal(doc, again)) {
		fprintf(stderr, "'%s' writes out as '%s', which parses differently: %s\n", text, out, err2);
		abort();
	}
out:
	json_free(again);
	json_free(doc);
	free(out);
	free(text);
	return 0;
}
