/* SPDX-License-Identifier: MIT */
/*
 * json.c - a strict JSON reader (RFC 8259, integers only) and a string
 * writer; see json.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"

struct json_reader {
	const char *text;
	size_t pos;
	char *err;
	size_t errlen;
};

static int json_fail(struct json_reader *r, const char *what)
{
	snprintf(r->err, r->errlen, "bad JSON at byte %zu: %s", r->pos, what);
	return -EINVAL;
}

static void json_skip_ws(struct json_reader *r)
{
	while (strchr(" \t\r\n", r->text[r->pos]) && r->text[r->pos])
		r->pos++;
}

static int json_hex4(struct json_reader *r, unsigned int *cp)
{
	*cp = 0;
	for (int i = 0; i < 4; i++) {
		char c = r->text[r->pos++];

		*cp <<= 4;
		if (c >= '0' && c <= '9')
			*cp |= (unsigned int)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*cp |= (unsigned int)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*cp |= (unsigned int)(c - 'A' + 10);
		else
			return json_fail(r, "bad \\u escape");
	}
	return 0;
}

/* UTF-8 of a code point below 0x10000 (surrogate pairs are refused: nothing here needs them). */
static size_t json_utf8(char *dst, unsigned int cp)
{
	if (cp < 0x80) {
		dst[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		dst[0] = (char)(0xC0 | cp >> 6);
		dst[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	dst[0] = (char)(0xE0 | cp >> 12);
	dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
	dst[2] = (char)(0x80 | (cp & 0x3F));
	return 3;
}

/* Unicode 15, table 3-7: no overlong form, no surrogate, nothing past U+10FFFF. */
size_t json_utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		n = 2;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		n = 3;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
		n = 4;
	else
		return 0;
	if (p[0] == 0xE0)
		lo = 0xA0;
	else if (p[0] == 0xED)
		hi = 0x9F;
	else if (p[0] == 0xF0)
		lo = 0x90;
	else if (p[0] == 0xF4)
		hi = 0x8F;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return n;
}

size_t json_utf8_bad(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = json_utf8_len(p);

		if (!n)
			return (size_t)((const char *)p - s);
		p += n;
	}
	return SIZE_MAX;
}

static int json_string(struct json_reader *r, char **out)
{
	size_t start = ++r->pos, n = 0;
	char *s;

	/* The decoded text is never longer than the literal. */
	while (r->text[r->pos] && r->text[r->pos] != '"')
		r->pos += r->text[r->pos] == '\\' && r->text[r->pos + 1] ? 2 : 1;
	if (r->text[r->pos] != '"')
		return json_fail(r, "unterminated string");
	s = malloc(r->pos - start + 1);
	if (!s)
		return -ENOMEM;
	r->pos = start;
	while (r->text[r->pos] != '"') {
		unsigned char c = (unsigned char)r->text[r->pos++];
		unsigned int cp;

		if (c < 0x20) {
			free(s);
			return json_fail(r, "control character in string");
		}
		if (c >= 0x80) {
			size_t len = json_utf8_len((const unsigned char *)r->text + --r->pos);

			if (!len) {
				free(s);
				return json_fail(r, "not UTF-8");
			}
			memcpy(s + n, r->text + r->pos, len);
			n += len;
			r->pos += len;
			continue;
		}
		if (c != '\\') {
			s[n++] = (char)c;
			continue;
		}
		c = (unsigned char)r->text[r->pos++];
		switch (c) {
		case '"': case '\\': case '/': s[n++] = (char)c; break;
		case 'b': s[n++] = '\b'; break;
		case 'f': s[n++] = '\f'; break;
		case 'n': s[n++] = '\n'; break;
		case 'r': s[n++] = '\r'; break;
		case 't': s[n++] = '\t'; break;
		case 'u':
			if (json_hex4(r, &cp) || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0) {
				free(s);
				return json_fail(r, "unsupported \\u escape");
			}
			n += json_utf8(s + n, cp);
			break;
		default:
			free(s);
			return json_fail(r, "bad escape");
		}
	}
	r->pos++;
	s[n] = '\0';
	*out = s;
	return 0;
}

static int json_value(struct json_reader *r, struct json *v, int depth);

static int json_members(struct json_reader *r, struct json *v, int depth, bool object)
{
	struct json **tail = &v->child;
	char close = object ? '}' : ']';

	r->pos++;
	json_skip_ws(r);
	if (r->text[r->pos] == close) {
		r->pos++;
		return 0;
	}
	for (;;) {
		struct json *m = calloc(1, sizeof(*m));
		int rc;

		if (!m)
			return -ENOMEM;
		*tail = m;
		tail = &m->next;
		json_skip_ws(r);
		if (object) {
			if (r->text[r->pos] != '"')
				return json_fail(r, "expected a member name");
			rc = json_string(r, &m->key);
			if (rc)
				return rc;
			/* Readers disagree on which of two same-named members wins (jq: the last): refuse both. */
			for (const struct json *o = v->child; o != m; o = o->next)
				if (!strcmp(o->key, m->key)) {
					/* The name as ernic_log_str() shows it: decoded, it may hold a newline. */
					char name[4 * 64 + 1], what[sizeof(name) + 32];

					snprintf(what, sizeof(what), "member '%s' given twice",
						 *m->key ? ernic_log_str(m->key, name, sizeof(name)) : "");
					return json_fail(r, what);
				}
			json_skip_ws(r);
			if (r->text[r->pos++] != ':')
				return json_fail(r, "expected ':'");
		}
		rc = json_value(r, m, depth + 1);
		if (rc)
			return rc;
		json_skip_ws(r);
		if (r->text[r->pos] == ',') {
			r->pos++;
			continue;
		}
		if (r->text[r->pos] != close)
			return json_fail(r, object ? "expected ',' or '}'" : "expected ',' or ']'");
		r->pos++;
		return 0;
	}
}

static int json_number(struct json_reader *r, struct json *v)
{
	const char *p = r->text + r->pos;
	char *end;

	if (!(*p == '-' || (*p >= '0' && *p <= '9')) || (p[0] == '0' && p[1] >= '0' && p[1] <= '9') ||
	    (p[0] == '-' && !(p[1] >= '0' && p[1] <= '9')))
		return json_fail(r, "unexpected character");
	errno = 0;
	v->num = strtoll(p, &end, 10);
	if (errno || *end == '.' || *end == 'e' || *end == 'E')
		return json_fail(r, "only integers that fit 64 bits are accepted");
	v->type = JSON_INT;
	r->pos += (size_t)(end - p);
	return 0;
}

static int json_value(struct json_reader *r, struct json *v, int depth)
{
	if (depth > JSON_MAX_DEPTH)
		return json_fail(r, "nested too deep");
	json_skip_ws(r);
	switch (r->text[r->pos]) {
	case '{':
		v->type = JSON_OBJECT;
		return json_members(r, v, depth, true);
	case '[':
		v->type = JSON_ARRAY;
		return json_members(r, v, depth, false);
	case '"':
		v->type = JSON_STRING;
		return json_string(r, &v->str);
	case 't':
	case 'f':
	case 'n': {
		static const char *const words[] = { "true", "false", "null" };

		for (int i = 0; i < 3; i++) {
			size_t n = strlen(words[i]);

			if (!strncmp(r->text + r->pos, words[i], n)) {
				v->type = i == 2 ? JSON_NULL : JSON_BOOL;
				v->b = i == 0;
				r->pos += n;
				return 0;
			}
		}
		return json_fail(r, "unexpected word");
	}
	default:
		return json_number(r, v);
	}
}

int json_parse_len(const char *text, size_t len, struct json **out, char *err, size_t errlen)
{
	struct json_reader r = { .text = text, .err = err, .errlen = errlen };
	const char *nul = memchr(text, '\0', len);
	struct json *v;
	int rc;

	/* The reader stops at a NUL: what follows one would be dropped unread, so the text is refused. */
	if (nul) {
		r.pos = (size_t)(nul - text);
		return json_fail(&r, "NUL byte");
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	rc = json_value(&r, v, 0);
	if (!rc) {
		json_skip_ws(&r);
		if (text[r.pos])
			rc = json_fail(&r, "text after the value");
	}
	if (rc) {
		json_free(v);
		return rc;
	}
	*out = v;
	return 0;
}

int json_parse(const char *text, struct json **out, char *err, size_t errlen)
{
	return json_parse_len(text, strlen(text), out, err, errlen);
}

void json_free(struct json *v)
{
	while (v) {
		struct json *next = v->next;

		json_free(v->child);
		free(v->key);
		free(v->str);
		free(v);
		v = next;
	}
}

const struct json *json_get(const struct json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (const struct json *m = obj->child; m; m = m->next)
		if (!strcmp(m->key, key))
			return m;
	return NULL;
}

bool json_put_str(char *buf, size_t len, size_t *off, const char *s)
{
	size_t o = *off;

#define PUT(c)                      \
	do {                        \
		if (o + 1 >= len)   \
			return false; \
		buf[o++] = (c);     \
	} while (0)
	PUT('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		size_t n = json_utf8_len(p);

		if (*p == '"' || *p == '\\') {
			PUT('\\');
			PUT((char)*p);
		} else if (*p < 0x20 || !n) {
			/* A byte that is no UTF-8 (a name from the command line, not from JSON) shows as U+FFFD. */
			if (o + 7 >= len)
				return false;
			o += (size_t)snprintf(buf + o, len - o, "\\u%04x", n ? *p : 0xFFFD);
		} else {
			for (size_t i = 0; i < n; i++)
				PUT((char)p[i]);
			p += n - 1;
		}
	}
	PUT('"');
#undef PUT
	buf[o] = '\0';
	*off = o;
	return true;
}
