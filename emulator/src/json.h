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

/*
 * Parse @text; 0 and *@out (free with json_free()), or -EINVAL with one line
 * naming the offset. Strings must be UTF-8 (RFC 8259 section 8.1).
 */
int json_parse(const char *text, struct json **out, char *err, size_t errlen);
/* json_parse() on @len bytes read from a file or a socket: a NUL byte among them is refused, naming its offset. */
int json_parse_len(const char *text, size_t len, struct json **out, char *err, size_t errlen);
void json_free(struct json *v);
/* The member @key of object @obj, or NULL. */
const struct json *json_get(const struct json *obj, const char *key);
/*
 * The length of the well-formed UTF-8 sequence at @p, or 0. JSON text is
 * UTF-8 (RFC 8259 section 8.1): the reader refuses anything else, and the
 * writer never emits it.
 */
size_t json_utf8_len(const unsigned char *p);
/* The offset of the first byte of @s that is not UTF-8 (json_utf8_len()), or SIZE_MAX when all of it is. */
size_t json_utf8_bad(const char *s);
/*
 * Append @s as a JSON string literal (quotes included) to @buf of @len bytes
 * at *@off; the result is NUL-terminated. A byte of @s that is not UTF-8 is
 * written as \ufffd, so the literal is always valid JSON; at most 6 bytes
 * are written per byte of @s, plus the quotes. Returns false when it did not fit.
 */
bool json_put_str(char *buf, size_t len, size_t *off, const char *s);

#endif /* ERNIC_JSON_H */
