/* SPDX-License-Identifier: MIT */
/*
 * json.h - the strict JSON reader and the string writer the control plane
 * (control.c) and ernicctl share: RFC 8259 text, integers only for numbers
 * (every number the control protocol carries is a count, an ID or a size),
 * nesting at most JSON_MAX_DEPTH, one document and nothing after it.
 */
#ifndef ERNIC_JSON_H
#define ERNIC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 32

enum json_type { JSON_NULL, JSON_BOOL, JSON_INT, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

/**
 * struct json - one value
 * @key: its member name inside an object, else NULL
 * @child: first element or member of an array or object
 * @next: the next sibling
 */
struct json {
	enum json_type type;
	char *key;
	char *str;
	int64_t num;
	bool b;
	struct json *child, *next;
};

/* Parse @text; 0 and *@out (free with json_free()), or -EINVAL with one line naming the offset. */
int json_parse(const char *text, struct json **out, char *err, size_t errlen);
void json_free(struct json *v);
/* The member @key of object @obj, or NULL. */
const struct json *json_get(const struct json *obj, const char *key);
/*
 * Append @s as a JSON string literal (quotes included) to @buf of @len bytes
 * at *@off; the result is NUL-terminated. Returns false when it did not fit.
 */
bool json_put_str(char *buf, size_t len, size_t *off, const char *s);

#endif /* ERNIC_JSON_H */
