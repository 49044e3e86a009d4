/* SPDX-License-Identifier: MIT */
/*
 * control.c - the run-time control plane (ernic/control.h): JSON requests
 * turned into changes of a set of subsystems (nvmf.c) and of the NVMe/TCP
 * ports that serve it, in the spirit of SPDK's JSON-RPC and nvmetcli.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "target.h"
#include "ernic/control.h"

#define CTL_MAX_LINE (64 * 1024)
#define CTL_POLL_MS 100
/* A client silent this long, not reading, or this long on one request line, is dropped (ctl_thread()). */
#define CTL_IDLE_MS 5000

/* One NVMe/TCP port per listener address; its set's port record has the same Port ID. */
struct ctl_listener {
	uint16_t portid;
	struct ernic_tcp_port *port;
};

struct ernic_control {
	struct ernic_nvmf *nvmf;
	struct ernic_tcp_port_opts tcp_opts;
	pthread_mutex_t lock; /* one request at a time */
	struct ctl_listener listeners[ERNIC_NVMF_MAX_PORTS];
	int listen_fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t thread;
	bool serving;
	_Atomic bool stopping;
};

/* ------------------------------------------------------------------ output */

/* A growing response; @failed once out of memory (the response becomes NULL). */
struct ctl_out {
	char *p;
	size_t len, off;
	bool failed;
};

static bool out_reserve(struct ctl_out *o, size_t more)
{
	char *p;

	if (o->failed)
		return false;
	if (o->off + more + 1 <= o->len)
		return true;
	p = realloc(o->p, MAX(o->len * 2, o->off + more + 1024));
	if (!p) {
		o->failed = true;
		return false;
	}
	o->p = p;
	o->len = MAX(o->len * 2, o->off + more + 1024);
	return true;
}

static void __attribute__((format(printf, 2, 3))) outf(struct ctl_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !out_reserve(o, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(o->p + o->off, o->len - o->off, fmt, ap);
	va_end(ap);
	o->off += (size_t)n;
}

static void out_str(struct ctl_out *o, const char *s)
{
	/* Worst case: every byte a \u escape, plus the quotes. */
	if (out_reserve(o, strlen(s) * 6 + 2))
		json_put_str(o->p, o->len, &o->off, s);
}

static void out_hex(struct ctl_out *o, const uint8_t *b, size_t n)
{
	outf(o, "\"");
	for (size_t i = 0; i < n; i++)
		outf(o, "%02x", b[i]);
	outf(o, "\"");
}

/* ---------------------------------------------------------------- requests */

/* A request's failure: errno and one line naming the key and value. */
struct ctl_err {
	int code;
	char msg[ERNIC_ERRLEN];
};

static int __attribute__((format(printf, 3, 4))) fail(struct ctl_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	e->code = code;
	return code;
}

/* Parameter readers: a missing required key or a wrong type is one line naming the key. */
static int param_str(const struct json *params, const char *key, bool required, const char **out,
		     struct ctl_err *e)
{
	const struct json *v = json_get(params, key);

	*out = NULL;
	if (!v)
		return required ? fail(e, -EINVAL, "%s: missing", key) : 0;
	if (v->type != JSON_STRING)
		return fail(e, -EINVAL, "%s: must be a string", key);
	*out = v->str;
	return 0;
}

static int param_uint(const struct json *params, const char *key, bool required, uint64_t max, uint64_t *out,
		      struct ctl_err *e)
{
	const struct json *v = json_get(params, key);
	char *end;

	if (!v)
		return required ? fail(e, -EINVAL, "%s: missing", key) : 0;
	/* A number, or a decimal string (a service such as "4420" is both). */
	if (v->type == JSON_INT && v->num >= 0 && (uint64_t)v->num <= max) {
		*out = (uint64_t)v->num;
		return 0;
	}
	if (v->type == JSON_STRING && v->str[0] >= '0' && v->str[0] <= '9') {
		errno = 0;
		*out = strtoull(v->str, &end, 10);
		if (!errno && !*end && *out <= max)
			return 0;
	}
	if (v->type == JSON_STRING)
		return fail(e, -EINVAL, "%s '%s': must be an integer 0..%" PRIu64, key, v->str, max);
	if (v->type == JSON_INT)
		return fail(e, -EINVAL, "%s %" PRId64 ": must be an integer 0..%" PRIu64, key, v->num, max);
	return fail(e, -EINVAL, "%s: must be an integer 0..%" PRIu64, key, max);
}

/*
 * A size in bytes above 0: an integer, or a string as --backend's size= reads
 * it (ernic_parse_bytes(): digits and an optional K, M, G or T, powers of
 * 1024), so no sign or white space is taken (strtoull() would wrap "-4096").
 */
static int param_size(const struct json *params, const char *key, uint64_t *out, struct ctl_err *e)
{
	const struct json *v = json_get(params, key);

	if (!v)
		return fail(e, -EINVAL, "%s: missing", key);
	if (v->type == JSON_INT && v->num > 0) {
		*out = (uint64_t)v->num;
		return 0;
	}
	if (v->type == JSON_STRING && ernic_parse_bytes(v->str, out) && *out)
		return 0;
	if (v->type == JSON_STRING)
		return fail(e, -EINVAL, "%s '%s': must be a size above 0 such as 1073741824 or \"1G\"", key, v->str);
	if (v->type == JSON_INT)
		return fail(e, -EINVAL, "%s %" PRId64 ": must be a size above 0 such as 1073741824 or \"1G\"", key,
			    v->num);
	return fail(e, -EINVAL, "%s: must be a size above 0 such as 1073741824 or \"1G\"", key);
}

/* A hex identifier of @n bytes (dashes allowed, as in a UUID). */
static int param_hex(const struct json *params, const char *key, uint8_t *dst, size_t n, bool *set,
		     struct ctl_err *e)
{
	const char *s;
	size_t got = 0;
	int rc = param_str(params, key, false, &s, e);

	if (rc || !s)
		return rc;
	for (const char *p = s; *p; p++) {
		unsigned int x;

		if (*p == '-')
			continue;
		/* isxdigit() first: sscanf's %x would skip white space and read the next digit in its place. */
		if (got == n * 2 || !isxdigit((unsigned char)*p) || sscanf(p, "%1x", &x) != 1)
			return fail(e, -EINVAL, "%s '%s': must be %zu hex digits", key, s, n * 2);
		dst[got / 2] = (uint8_t)(got & 1 ? dst[got / 2] | x : x << 4);
		got++;
	}
	if (got != n * 2)
		return fail(e, -EINVAL, "%s '%s': must be %zu hex digits", key, s, n * 2);
	*set = true;
	return 0;
}

/* The subsystem params.nqn names, referenced (the caller puts it), or NULL with the error in @e. */
static struct ernic_target *find_subsys(struct ernic_control *ctl, const struct json *params, struct ctl_err *e)
{
	struct ernic_target *tgt;
	const char *nqn;

	if (param_str(params, "nqn", true, &nqn, e))
		return NULL;
	tgt = ernic_nvmf_subsys_get(ctl->nvmf, nqn);
	if (!tgt)
		fail(e, -ENOENT, "nqn '%s': no such subsystem", nqn);
	return tgt;
}

static int m_subsystem_add(struct ernic_control *ctl, const struct json *params, struct ctl_out *o,
			   struct ctl_err *e)
{
	struct ernic_target_opts opts = { 0 };
	const struct json *hosts = json_get(params, "allow_hosts"), *any = json_get(params, "any_host");
	const char *list[65] = { NULL };
	size_t n = 0;
	int rc;

	if (param_str(params, "nqn", true, &opts.subnqn, e) || param_str(params, "serial", false, &opts.serial, e) ||
	    param_str(params, "model", false, &opts.model, e))
		return e->code;
	if (any && any->type != JSON_BOOL)
		return fail(e, -EINVAL, "any_host: must be true or false");
	if (hosts && hosts->type != JSON_ARRAY)
		return fail(e, -EINVAL, "allow_hosts: must be an array of host NQNs");
	for (const struct json *h = hosts ? hosts->child : NULL; h; h = h->next) {
		if (h->type != JSON_STRING)
			return fail(e, -EINVAL, "allow_hosts: each must be a host NQN");
		if (n == 64)
			return fail(e, -EINVAL, "allow_hosts: at most 64 hosts");
		list[n++] = h->str;
	}
	/* Any host unless an allow list is given; both at once is a contradiction. */
	if (n && any && any->b)
		return fail(e, -EINVAL, "any_host: true contradicts allow_hosts");
	if (!n && any && !any->b)
		return fail(e, -EINVAL, "any_host: false needs allow_hosts");
	opts.allow_hosts = n ? list : NULL;
	rc = ernic_nvmf_subsys_add(ctl->nvmf, &opts, NULL, e->msg, sizeof(e->msg));
	if (rc)
		return e->code = rc;
	outf(o, "{\"nqn\":");
	out_str(o, opts.subnqn);
	outf(o, "}");
	return 0;
}

/* Every listener of @ctl whose port links nothing any more goes, port and record. */
static void ctl_listeners_gc(struct ernic_control *ctl)
{
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_PORTS; i++) {
		struct ctl_listener *l = &ctl->listeners[i];
		char ignored[ERNIC_ERRLEN];

		if (!l->port || ernic_nvmf_port_links(ctl->nvmf, l->portid))
			continue;
		/* The record first: its controllers fail, so the port's connections close soon. */
		ernic_nvmf_port_remove(ctl->nvmf, l->portid, ignored, sizeof(ignored));
		ernic_tcp_port_destroy(l->port);
		l->port = NULL;
		l->portid = 0;
	}
}

static int m_subsystem_remove(struct ernic_control *ctl, const struct json *params, struct ctl_out *o,
			      struct ctl_err *e)
{
	const char *nqn;
	int rc;

	if (param_str(params, "nqn", true, &nqn, e))
		return e->code;
	rc = ernic_nvmf_subsys_remove(ctl->nvmf, nqn, e->msg, sizeof(e->msg));
	/* Removed even when a namespace's final flush failed: the listeners it leaves linking nothing go too. */
	ctl_listeners_gc(ctl);
	if (rc)
		return e->code = rc;
	outf(o, "true");
	return 0;
}

static int m_namespace_add(struct ernic_target *tgt, const struct json *params, struct ctl_out *o,
			   struct ctl_err *e)
{
	struct ernic_backend_cfg cfg;
	struct ernic_ns_ids ids = { 0 };
	const char *backend;
	char str[4200];
	uint64_t nsid = 0, grp = 0;
	uint32_t got;
	int rc;

	if (param_str(params, "backend", true, &backend, e) ||
	    param_uint(params, "nsid", false, ERNIC_MAX_NS, &nsid, e) ||
	    param_uint(params, "ana_group", false, ERNIC_NVMF_MAX_ANA_GROUPS, &grp, e) ||
	    param_hex(params, "uuid", ids.uuid, sizeof(ids.uuid), &ids.has_uuid, e) ||
	    param_hex(params, "nguid", ids.nguid, sizeof(ids.nguid), &ids.has_nguid, e) ||
	    param_hex(params, "eui64", ids.eui64, sizeof(ids.eui64), &ids.has_eui64, e))
		return e->code;
	/* The nvmeof: prefix may be left out; queue settings come from the set, and setting one here is refused. */
	if ((size_t)snprintf(str, sizeof(str), "%s%s", strncmp(backend, "nvmeof:", 7) ? "nvmeof:" : "", backend) >=
	    sizeof(str))
		return fail(e, -EINVAL, "backend: longer than %zu bytes", sizeof(str) - 1);
	ernic_backend_cfg_init(&cfg);
	rc = ernic_backend_parse_ns(str, "namespace add", &cfg, e->msg, sizeof(e->msg));
	if (rc)
		return e->code = rc;
	ids.anagrpid = (uint32_t)grp;
	rc = ernic_target_add_ns_at(tgt, (uint32_t)nsid, &cfg, &ids, &got, e->msg, sizeof(e->msg));
	if (rc)
		return e->code = rc;
	outf(o, "{\"nsid\":%u}", got);
	return 0;
}

static int m_namespace_remove(struct ernic_target *tgt, const struct json *params, struct ctl_out *o,
			      struct ctl_err *e)
{
	uint64_t nsid = 0;
	int rc;

	if (param_uint(params, "nsid", true, UINT32_MAX, &nsid, e))
		return e->code;
	rc = ernic_target_remove_ns(tgt, (uint32_t)nsid, e->msg, sizeof(e->msg));
	if (rc)
		return e->code = rc;
	outf(o, "true");
	return 0;
}

static int m_namespace_resize(struct ernic_target *tgt, const struct json *params, struct ctl_out *o,
			      struct ctl_err *e)
{
	uint64_t nsid = 0, size = 0;
	int rc;

	if (param_uint(params, "nsid", true, UINT32_MAX, &nsid, e) || param_size(params, "size", &size, e))
		return e->code;
	rc = ernic_target_resize_ns(tgt, (uint32_t)nsid, size, e->msg, sizeof(e->msg));
	if (rc)
		return e->code = rc;
	outf(o, "true");
	return 0;
}

/* traddr and trsvcid of a request, the service as a decimal 1..65535 (or 0 to pick one, when adding). */
static int param_addr(const struct json *params, bool adding, const char **traddr, char *svc, size_t svclen,
		      struct ctl_err *e)
{
	uint64_t port = 0;

	if (param_str(params, "traddr", true, traddr, e) || param_uint(params, "trsvcid", true, 65535, &port, e))
		return e->code;
	if (port == 0 && !adding)
		return fail(e, -EINVAL, "trsvcid: must be 1..65535");
	snprintf(svc, svclen, "%" PRIu64, port);
	return 0;
}

static struct ctl_listener *ctl_listener(struct ernic_control *ctl, uint16_t portid)
{
	for (unsigned int i = 0; portid && i < ERNIC_NVMF_MAX_PORTS; i++)
		if (ctl->listeners[i].portid == portid)
			return &ctl->listeners[i];
	return NULL;
}

/* A new NVMe/TCP port at @traddr:@svc with its record in the set. */
static int ctl_listener_open(struct ernic_control *ctl, const char *traddr, const char *svc, uint16_t *portid,
			     char *err, size_t errlen)
{
	struct ctl_listener *l = ctl_listener(ctl, 0);
	struct ernic_tcp_port *port;
	char bound[8];
	int rc;

	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_PORTS && !l; i++)
		if (!ctl->listeners[i].port)
			l = &ctl->listeners[i];
	if (!l) {
		snprintf(err, errlen, "traddr '%s': at most %u listeners", traddr, ERNIC_NVMF_MAX_PORTS);
		return -ENOSPC;
	}
	rc = ernic_tcp_port_create(ernic_nvmf_home(ctl->nvmf), &ctl->tcp_opts, &port);
	if (rc) {
		snprintf(err, errlen, "traddr '%s': cannot create the port: %s", traddr, strerror(-rc));
		return rc;
	}
	rc = ernic_tcp_port_listen(port, traddr, svc, err, errlen);
	if (!rc) {
		snprintf(bound, sizeof(bound), "%u", ernic_tcp_port_number(port));
		rc = ernic_nvmf_port_add(ctl->nvmf, NVMF_TRTYPE_TCP, traddr, bound, portid, err, errlen);
	}
	if (!rc) {
		ernic_tcp_port_set_portid(port, *portid);
		rc = ernic_tcp_port_start(port);
		if (rc) {
			snprintf(err, errlen, "traddr '%s': cannot start accepting: %s", traddr, strerror(-rc));
			ernic_nvmf_port_remove(ctl->nvmf, *portid, bound, sizeof(bound));
		}
	}
	if (rc) {
		ernic_tcp_port_destroy(port);
		return rc;
	}
	l->port = port;
	l->portid = *portid;
	return 0;
}

int ernic_control_listener_add(struct ernic_control *ctl, const char *subnqn, const char *traddr,
			       const char *trsvcid, uint16_t *bound, char *err, size_t errlen)
{
	/* The control plane's listeners are NVMe/TCP: an RDMA port at the same address and number is another port. */
	uint16_t portid = strcmp(trsvcid, "0") ? ernic_nvmf_port_find(ctl->nvmf, NVMF_TRTYPE_TCP, traddr, trsvcid) : 0;
	struct ernic_target *tgt = ernic_nvmf_subsys_get(ctl->nvmf, subnqn);
	bool opened = false;
	int rc = 0;

	if (!tgt) {
		snprintf(err, errlen, "nqn '%s': no such subsystem", subnqn);
		return -ENOENT;
	}
	ernic_target_put(tgt);
	/* Several subsystems share one listener: only the first opens the port. */
	if (portid && !ctl_listener(ctl, portid)) {
		snprintf(err, errlen, "listener '%s:%s': a port record the control plane did not open", traddr, trsvcid);
		return -EEXIST;
	}
	if (!portid) {
		rc = ctl_listener_open(ctl, traddr, trsvcid, &portid, err, errlen);
		opened = !rc;
	}
	if (!rc)
		rc = ernic_nvmf_link(ctl->nvmf, portid, subnqn, err, errlen);
	if (rc && opened)
		ctl_listeners_gc(ctl);
	if (!rc && bound)
		*bound = ernic_tcp_port_number(ctl_listener(ctl, portid)->port);
	return rc;
}

static int m_listener_add(struct ernic_control *ctl, const struct json *params, struct ctl_out *o,
			  struct ctl_err *e)
{
	const char *nqn, *traddr;
	char svc[8];
	uint16_t bound;
	int rc;

	if (param_str(params, "nqn", true, &nqn, e) || param_addr(params, true, &traddr, svc, sizeof(svc), e))
		return e->code;
	rc = ernic_control_listener_add(ctl, nqn, traddr, svc, &bound, e->msg, sizeof(e->msg));
	if (rc)
		return e->code = rc;
	snprintf(svc, sizeof(svc), "%u", bound);
	outf(o, "{\"portid\":%u,\"traddr\":", ernic_nvmf_port_find(ctl->nvmf, NVMF_TRTYPE_TCP, traddr, svc));
	out_str(o, traddr);
	outf(o, ",\"trsvcid\":\"%u\"}", bound);
	return 0;
}

static int m_listener_remove(struct ernic_control *ctl, const struct json *params, struct ctl_out *o,
			     struct ctl_err *e)
{
	const char *nqn, *traddr;
	char svc[8];
	uint16_t portid;
	int rc;

	if (param_str(params, "nqn", true, &nqn, e) || param_addr(params, false, &traddr, svc, sizeof(svc), e))
		return e->code;
	portid = ernic_nvmf_port_find(ctl->nvmf, NVMF_TRTYPE_TCP, traddr, svc);
	if (!portid)
		return fail(e, -ENOENT, "traddr '%s' trsvcid '%s': no such listener", traddr, svc);
	rc = ernic_nvmf_unlink(ctl->nvmf, portid, nqn, e->msg, sizeof(e->msg));
	if (rc)
		return e->code = rc;
	ctl_listeners_gc(ctl);
	outf(o, "true");
	return 0;
}

static int m_ana_set(struct ernic_control *ctl, const struct json *params, struct ctl_out *o, struct ctl_err *e)
{
	const char *traddr, *state;
	char svc[8];
	uint64_t grp = 0;
	uint16_t portid;
	uint8_t st;
	int rc;

	if (param_addr(params, false, &traddr, svc, sizeof(svc), e) ||
	    param_uint(params, "group", false, ERNIC_NVMF_MAX_ANA_GROUPS, &grp, e) ||
	    param_str(params, "state", true, &state, e))
		return e->code;
	st = ernic_ana_state_parse(state);
	if (!st)
		return fail(e, -EINVAL,
			    "state '%s': must be optimized, non-optimized, inaccessible, persistent-loss or change",
			    state);
	/* Any transport's port: ANA states belong to the port record, NVMe/TCP or NVMe/RDMA. */
	portid = ernic_nvmf_port_find(ctl->nvmf, 0, traddr, svc);
	if (!portid)
		return fail(e, -ENOENT, "traddr '%s' trsvcid '%s': no such listener", traddr, svc);
	rc = ernic_nvmf_ana_set(ctl->nvmf, portid, (uint32_t)grp, st, e->msg, sizeof(e->msg));
	if (rc)
		return e->code = rc;
	outf(o, "true");
	return 0;
}

static void out_subsys(struct ernic_control *ctl, unsigned int slot, struct ernic_target *tgt, struct ctl_out *o)
{
	const char *const *hosts = ernic_target_allow_hosts(tgt);
	const char *sep = "";

	outf(o, "{\"nqn\":");
	out_str(o, ernic_target_subnqn(tgt));
	outf(o, ",\"serial\":");
	out_str(o, ernic_target_serial(tgt));
	outf(o, ",\"model\":");
	out_str(o, ernic_target_model(tgt));
	outf(o, ",\"any_host\":%s,\"allow_hosts\":[", hosts ? "false" : "true");
	for (; hosts && *hosts; hosts++, sep = ",") {
		outf(o, "%s", sep);
		out_str(o, *hosts);
	}
	outf(o, "],\"namespaces\":[");
	sep = "";
	for (uint32_t nsid = 1; nsid <= ERNIC_MAX_NS; nsid++) {
		struct ernic_ns_info ni;

		if (ernic_target_ns_info(tgt, nsid, &ni))
			continue;
		outf(o, "%s{\"nsid\":%u,\"size\":%" PRIu64 ",\"bs\":%u,\"ana_group\":%u,\"backend\":\"%s\",\"file\":",
		     sep, ni.nsid, ni.size, ni.bs, ni.anagrpid, ni.backend);
		out_str(o, ni.path);
		outf(o, ",\"nguid\":");
		out_hex(o, ni.nguid, sizeof(ni.nguid));
		outf(o, ",\"uuid\":");
		out_hex(o, ni.uuid, sizeof(ni.uuid));
		outf(o, ",\"eui64\":");
		out_hex(o, ni.eui64, sizeof(ni.eui64));
		outf(o, "}");
		sep = ",";
	}
	outf(o, "],\"listeners\":[");
	sep = "";
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_PORTS; i++) {
		const struct ctl_listener *l = &ctl->listeners[i];

		if (l->port && (ernic_nvmf_port_links(ctl->nvmf, l->portid) & (1u << slot))) {
			outf(o, "%s%u", sep, l->portid);
			sep = ",";
		}
	}
	outf(o, "]}");
}

static int m_subsystem_list(struct ernic_control *ctl, const struct json *params, struct ctl_out *o,
			    struct ctl_err *e)
{
	const char *sep = "";

	(void)params;
	(void)e;
	outf(o, "[");
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_SUBSYSTEMS; i++) {
		struct ernic_target *tgt = ernic_nvmf_subsys_get_at(ctl->nvmf, i);

		if (!tgt)
			continue;
		outf(o, "%s", sep);
		out_subsys(ctl, i, tgt, o);
		ernic_target_put(tgt);
		sep = ",";
	}
	outf(o, "]");
	return 0;
}

static int m_list(struct ernic_control *ctl, const struct json *params, struct ctl_out *o, struct ctl_err *e)
{
	const char *sep = "";

	outf(o, "{\"subsystems\":");
	m_subsystem_list(ctl, params, o, e);
	outf(o, ",\"listeners\":[");
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_PORTS; i++) {
		const struct ctl_listener *l = &ctl->listeners[i];
		uint32_t links;
		const char *sep2 = "";

		if (!l->port)
			continue;
		links = ernic_nvmf_port_links(ctl->nvmf, l->portid);
		outf(o, "%s{\"portid\":%u,\"trtype\":\"tcp\",\"trsvcid\":\"%u\",\"subsystems\":[", sep, l->portid,
		     ernic_tcp_port_number(l->port));
		for (unsigned int s = 0; s < ERNIC_NVMF_MAX_SUBSYSTEMS; s++) {
			struct ernic_target *tgt = (links & (1u << s)) ? ernic_nvmf_subsys_get_at(ctl->nvmf, s) : NULL;

			if (tgt) {
				outf(o, "%s", sep2);
				out_str(o, ernic_target_subnqn(tgt));
				ernic_target_put(tgt);
				sep2 = ",";
			}
		}
		outf(o, "],\"ana\":{");
		for (uint32_t g = 1; g <= ERNIC_NVMF_MAX_ANA_GROUPS; g++)
			outf(o, "%s\"%u\":\"%s\"", g == 1 ? "" : ",", g,
			     ernic_ana_state_name(ernic_nvmf_ana_get(ctl->nvmf, l->portid, g)));
		outf(o, "}}");
		sep = ",";
	}
	outf(o, "],\"discovery_genctr\":%" PRIu64 "}", ernic_nvmf_genctr(ctl->nvmf));
	return 0;
}

static int m_counters(struct ernic_target *tgt, const struct json *params, struct ctl_out *o, struct ctl_err *e)
{
	static struct ernic_counters c; /* large; requests run one at a time */
	char *json;

	(void)params;
	ernic_target_counters(tgt, &c);
	json = ernic_counters_json_alloc(&c);
	if (!json)
		return fail(e, -ENOMEM, "counters: out of memory");
	outf(o, "%s", json);
	free(json);
	return 0;
}

/*
 * A method runs on the control plane (run), or on the subsystem its
 * params.nqn names (run_subsys). @params names every key it reads: any other
 * is refused before it runs, since a misspelt optional key ("allow_host")
 * would otherwise run it with that key's default (a subsystem open to any host).
 */
static const struct ctl_method {
	const char *name;
	int (*run)(struct ernic_control *ctl, const struct json *params, struct ctl_out *o, struct ctl_err *e);
	int (*run_subsys)(struct ernic_target *tgt, const struct json *params, struct ctl_out *o, struct ctl_err *e);
	const char *params[8]; /* NULL-terminated */
} methods[] = {
	{ "subsystem_add", m_subsystem_add, NULL, { "nqn", "serial", "model", "allow_hosts", "any_host" } },
	{ "subsystem_remove", m_subsystem_remove, NULL, { "nqn" } },
	{ "subsystem_list", m_subsystem_list, NULL, { NULL } },
	{ "namespace_add", NULL, m_namespace_add, { "nqn", "backend", "nsid", "uuid", "nguid", "eui64", "ana_group" } },
	{ "namespace_remove", NULL, m_namespace_remove, { "nqn", "nsid" } },
	{ "namespace_resize", NULL, m_namespace_resize, { "nqn", "nsid", "size" } },
	{ "listener_add", m_listener_add, NULL, { "nqn", "traddr", "trsvcid" } },
	{ "listener_remove", m_listener_remove, NULL, { "nqn", "traddr", "trsvcid" } },
	{ "ana_set", m_ana_set, NULL, { "traddr", "trsvcid", "group", "state" } },
	{ "list", m_list, NULL, { NULL } },
	{ "counters", NULL, m_counters, { "nqn" } },
};

/* Every member of @params is a key @m reads; else one line naming the first that is not, and what @m takes. */
static int ctl_check_params(const struct ctl_method *m, const struct json *params, struct ctl_err *e)
{
	for (const struct json *p = params ? params->child : NULL; p; p = p->next) {
		char takes[128] = "";
		size_t i, off = 0;

		for (i = 0; m->params[i] && strcmp(m->params[i], p->key); i++)
			;
		if (m->params[i])
			continue;
		for (i = 0; m->params[i]; i++)
			off += (size_t)snprintf(takes + off, sizeof(takes) - off, "%s%s", i ? ", " : "", m->params[i]);
		return fail(e, -EINVAL, "params: unknown key '%s' for %s (it takes %s)", p->key, m->name,
			    off ? takes : "none");
	}
	return 0;
}

/* Run one parsed request; the result or the error into @o. Returns 0 or the error's code. */
static int ctl_run(struct ernic_control *ctl, const struct json *req, struct ctl_out *o, struct ctl_err *e)
{
	const struct json *method = json_get(req, "method"), *params = json_get(req, "params");
	struct ctl_out res = { 0 };
	int rc = -EINVAL;

	if (!req || req->type != JSON_OBJECT)
		fail(e, -EINVAL, "request: must be a JSON object with \"method\" and \"params\"");
	else if (!method || method->type != JSON_STRING)
		fail(e, -EINVAL, "method: missing or not a string");
	else if (params && params->type != JSON_OBJECT)
		fail(e, -EINVAL, "params: must be an object");
	else {
		size_t i;

		for (i = 0; i < ERNIC_ARRAY_SIZE(methods); i++)
			if (!strcmp(methods[i].name, method->str))
				break;
		if (i == ERNIC_ARRAY_SIZE(methods)) {
			fail(e, -EINVAL, "method '%s': unknown", method->str);
		} else if (ctl_check_params(&methods[i], params, e)) {
			rc = e->code;
		} else {
			pthread_mutex_lock(&ctl->lock);
			if (methods[i].run) {
				rc = methods[i].run(ctl, params, &res, e);
			} else {
				/* Held over the method: a removal elsewhere cannot free it meanwhile. */
				struct ernic_target *tgt = find_subsys(ctl, params, e);

				rc = tgt ? methods[i].run_subsys(tgt, params, &res, e) : e->code;
				ernic_target_put(tgt);
			}
			pthread_mutex_unlock(&ctl->lock);
		}
	}
	if (!rc && res.failed)
		rc = fail(e, -ENOMEM, "out of memory");
	if (rc) {
		/* Values are quoted as given: escaped here, once, for every method. */
		ernic_err_one_line(e->msg, sizeof(e->msg));
		outf(o, "{\"error\":{\"code\":%d,\"message\":", -rc);
		out_str(o, e->msg);
		outf(o, "}}");
	} else {
		outf(o, "{\"result\":%s}", res.p ? res.p : "null");
	}
	free(res.p);
	return rc;
}

/* ernic_control_request() on the @len bytes of a line read from a client, a NUL among them refused. */
static char *ctl_request_len(struct ernic_control *ctl, const char *line, size_t len)
{
	struct ctl_out o = { 0 };
	struct ctl_err e = { 0 };
	struct json *req = NULL;
	int rc = json_parse_len(line, len, &req, e.msg, sizeof(e.msg));

	if (rc) {
		outf(&o, "{\"error\":{\"code\":%d,\"message\":", -rc);
		out_str(&o, e.msg);
		outf(&o, "}}");
	} else {
		ctl_run(ctl, req, &o, &e);
	}
	json_free(req);
	if (o.failed) {
		free(o.p);
		return NULL;
	}
	return o.p;
}

char *ernic_control_request(struct ernic_control *ctl, const char *line)
{
	return ctl_request_len(ctl, line, strlen(line));
}

int ernic_control_load(struct ernic_control *ctl, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct json *doc = NULL;
	const struct json *list;
	char *text = NULL;
	size_t len = 0;
	ssize_t got;
	unsigned int idx = 0;
	int rc;

	if (!f) {
		snprintf(err, errlen, "config '%s': %s", path, strerror(errno));
		return -errno;
	}
	/* Up to the first NUL, which json_parse_len() then refuses: the file is text. */
	got = getdelim(&text, &len, '\0', f);
	fclose(f);
	if (got < 0) {
		free(text);
		snprintf(err, errlen, "config '%s': cannot read it", path);
		return -EIO;
	}
	rc = json_parse_len(text, (size_t)got, &doc, err, errlen);
	free(text);
	if (rc) {
		char why[ERNIC_ERRLEN];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "config '%s': %s", path, why);
		return rc;
	}
	list = doc->type == JSON_OBJECT ? json_get(doc, "requests") : doc;
	if (!list || list->type != JSON_ARRAY) {
		json_free(doc);
		snprintf(err, errlen, "config '%s': must be an array of requests or {\"requests\": [...]}", path);
		return -EINVAL;
	}
	for (const struct json *req = list->child; req; req = req->next, idx++) {
		struct ctl_out o = { 0 };
		struct ctl_err e = { 0 };
		const struct json *m = json_get(req, "method");

		rc = ctl_run(ctl, req, &o, &e);
		free(o.p);
		if (rc) {
			char method[64];

			snprintf(err, errlen, "config '%s': request %u (%s): %s", path, idx,
				 m && m->type == JSON_STRING ? ernic_log_str(m->str, method, sizeof(method)) : "?",
				 e.msg);
			break;
		}
	}
	json_free(doc);
	return rc;
}

/* ------------------------------------------------------------------ socket */

/*
 * The control thread holds up to CTL_MAX_CLIENTS connections and answers one
 * line of each per turn, so a client sending request after request cannot
 * shut the others out (README: clients are served in turn). One that sends
 * nothing for CTL_IDLE_MS, takes longer than that to send one line (a byte
 * now and then) or to read its answer, is dropped: it would hold a slot.
 */
#define CTL_MAX_CLIENTS 8

struct ctl_client {
	int fd;
	char *buf; /* CTL_MAX_LINE bytes: what came of the lines not yet answered */
	size_t have;
	uint64_t heard_ns;	/* its last byte, or its answer, or its connect */
	uint64_t line_start_ns; /* the first byte of the line not yet answered */
};

static void ctl_client_drop(struct ctl_client *c)
{
	close(c->fd);
	free(c->buf);
	*c = (struct ctl_client){ .fd = -1 };
}

static void ctl_client_accept(struct ernic_control *ctl, struct ctl_client *c)
{
	const struct timeval snd = { .tv_sec = CTL_IDLE_MS / 1000, .tv_usec = CTL_IDLE_MS % 1000 * 1000 };
	int fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	/* Reads never wait (MSG_DONTWAIT, after poll()); an answer's write waits CTL_IDLE_MS at most. */
	*c = (struct ctl_client){ .fd = fd, .buf = malloc(CTL_MAX_LINE), .heard_ns = ernic_now_ns() };
	if (!c->buf || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd)))
		ctl_client_drop(c);
}

/* What the client sent since; false when it closed or its line outgrew CTL_MAX_LINE (told so). */
static bool ctl_client_read(struct ctl_client *c, uint64_t now)
{
	ssize_t n;

	/* A whole line waits for its turn: the rest stays in the socket until then. */
	if (memchr(c->buf, '\n', c->have))
		return true;
	n = recv(c->fd, c->buf + c->have, CTL_MAX_LINE - 1 - c->have, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0)
		return false;
	if (!c->have)
		c->line_start_ns = now;
	c->have += (size_t)n;
	c->heard_ns = now;
	if (c->have == CTL_MAX_LINE - 1 && !memchr(c->buf, '\n', c->have)) {
		dprintf(c->fd, "{\"error\":{\"code\":%d,\"message\":\"request: longer than %d bytes\"}}\n", E2BIG,
			CTL_MAX_LINE - 1);
		return false;
	}
	return true;
}

/* Answer the client's first whole line, if it sent one; false when the answer could not be sent. */
static bool ctl_client_answer(struct ernic_control *ctl, struct ctl_client *c)
{
	char *nl = memchr(c->buf, '\n', c->have), *resp;
	bool sent;

	if (!nl)
		return true;
	*nl = '\0';
	resp = ctl_request_len(ctl, c->buf, (size_t)(nl - c->buf));
	sent = resp && dprintf(c->fd, "%s\n", resp) >= 0;
	free(resp);
	c->have -= (size_t)(nl + 1 - c->buf);
	memmove(c->buf, nl + 1, c->have);
	/* Its silence, and the next line's time, count from the answer: the request's own run is not the client's. */
	c->heard_ns = c->line_start_ns = ernic_now_ns();
	return sent;
}

/* Silent for CTL_IDLE_MS, or that long on one line: dropped. A whole line waiting is the thread's delay, not its. */
static bool ctl_client_overdue(const struct ctl_client *c, uint64_t now)
{
	if (memchr(c->buf, '\n', c->have))
		return false;
	if (c->have && now - c->line_start_ns >= CTL_IDLE_MS * 1000000ull)
		return true;
	return now - c->heard_ns >= CTL_IDLE_MS * 1000000ull;
}

static void *ctl_thread(void *arg)
{
	struct ernic_control *ctl = arg;
	struct ctl_client clients[CTL_MAX_CLIENTS];

	for (unsigned int i = 0; i < CTL_MAX_CLIENTS; i++)
		clients[i] = (struct ctl_client){ .fd = -1 };
	while (!atomic_load(&ctl->stopping)) {
		struct pollfd pfd[1 + CTL_MAX_CLIENTS];
		int timeout = CTL_POLL_MS;
		struct ctl_client *free_slot = NULL;
		uint64_t now;

		for (unsigned int i = 0; i < CTL_MAX_CLIENTS; i++) {
			struct ctl_client *c = &clients[i];

			/* poll() passes over a negative fd. */
			pfd[1 + i] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
			if (c->fd < 0 && !free_slot)
				free_slot = c;
			if (c->fd >= 0 && memchr(c->buf, '\n', c->have))
				timeout = 0;
		}
		/* All slots taken: a new client waits in the backlog until one is dropped or closes. */
		pfd[0] = (struct pollfd){ .fd = free_slot ? ctl->listen_fd : -1, .events = POLLIN };
		if (poll(pfd, 1 + CTL_MAX_CLIENTS, timeout) < 0)
			continue;
		now = ernic_now_ns();
		for (unsigned int i = 0; i < CTL_MAX_CLIENTS; i++) {
			struct ctl_client *c = &clients[i];

			if (c->fd >= 0 && pfd[1 + i].revents && !ctl_client_read(c, now))
				ctl_client_drop(c);
			else if (c->fd >= 0 && ctl_client_overdue(c, now))
				ctl_client_drop(c);
		}
		/* One line each per turn. */
		for (unsigned int i = 0; i < CTL_MAX_CLIENTS; i++)
			if (clients[i].fd >= 0 && !ctl_client_answer(ctl, &clients[i]))
				ctl_client_drop(&clients[i]);
		if (pfd[0].revents & POLLIN)
			ctl_client_accept(ctl, free_slot);
	}
	for (unsigned int i = 0; i < CTL_MAX_CLIENTS; i++)
		if (clients[i].fd >= 0)
			ctl_client_drop(&clients[i]);
	return NULL;
}

int ernic_control_listen(struct ernic_control *ctl, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, rc;

	if (!path[0] || strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "control path '%s': must be 1..%zu bytes", path, sizeof(sun.sun_path) - 1);
		return -EINVAL;
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "control path '%s': socket: %s", path, strerror(errno));
		return -errno;
	}
	/*
	 * A socket file left by a daemon that died is replaced; one a live
	 * daemon answers on is not (it would lose its only way in), nor is
	 * anything that is not a socket.
	 */
	{
		struct stat st;

		if (!lstat(path, &st) && S_ISSOCK(st.st_mode)) {
			int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			bool live = probe >= 0 && !connect(probe, (struct sockaddr *)&sun, sizeof(sun));

			if (probe >= 0)
				close(probe);
			if (live) {
				snprintf(err, errlen, "control path '%s': another ernicd answers there", path);
				close(fd);
				return -EADDRINUSE;
			}
			unlink(path);
		}
	}
	/* Root-only from the first instant: no window in which another user could connect. */
	old = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc || listen(fd, 8)) {
		rc = -errno;
		snprintf(err, errlen, "control path '%s': %s", path, strerror(-rc));
		close(fd);
		return rc;
	}
	chmod(path, 0600);
	ctl->listen_fd = fd;
	snprintf(ctl->path, sizeof(ctl->path), "%s", path);
	rc = -pthread_create(&ctl->thread, NULL, ctl_thread, ctl);
	if (rc) {
		snprintf(err, errlen, "control path '%s': cannot start its thread: %s", path, strerror(-rc));
		close(fd);
		unlink(path);
		ctl->listen_fd = -1;
		return rc;
	}
	ctl->serving = true;
	return 0;
}

/* ---------------------------------------------------------------- lifetime */

/* Both sums below: each listener's port, under the lock that keeps it from going away. */
static void control_sum_tcp_ports(struct ernic_control *ctl, void (*add)(struct ernic_tcp_port *port, void *sum),
				  void *sum)
{
	pthread_mutex_lock(&ctl->lock);
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_PORTS; i++)
		if (ctl->listeners[i].port)
			add(ctl->listeners[i].port, sum);
	pthread_mutex_unlock(&ctl->lock);
}

static void add_stage_stats(struct ernic_tcp_port *port, void *sum)
{
	struct ernic_trace_stats p;

	ernic_tcp_port_stage_stats(port, &p);
	ernic_trace_stats_add(sum, &p);
}

void ernic_control_tcp_stage_stats(struct ernic_control *ctl, struct ernic_trace_stats *s)
{
	memset(s, 0, sizeof(*s));
	control_sum_tcp_ports(ctl, add_stage_stats, s);
}

static void add_wait_stats(struct ernic_tcp_port *port, void *sum)
{
	struct ernic_tcp_wait_stats p, *s = sum;

	ernic_tcp_port_wait_stats(port, &p);
	s->waits += p.waits;
	s->spun += p.spun;
	s->caught += p.caught;
}

void ernic_control_tcp_wait_stats(struct ernic_control *ctl, struct ernic_tcp_wait_stats *s)
{
	memset(s, 0, sizeof(*s));
	control_sum_tcp_ports(ctl, add_wait_stats, s);
}

static void add_tx_stats(struct ernic_tcp_port *port, void *sum)
{
	struct ernic_tcp_tx_stats p, *s = sum;

	ernic_tcp_port_tx_stats(port, &p);
	s->pdus += p.pdus;
	s->sends += p.sends;
	s->c2h_in_place += p.c2h_in_place;
	s->c2h_spliced += p.c2h_spliced;
	s->raised_sends += p.raised_sends;
	s->h2c_in_place += p.h2c_in_place;
}

void ernic_control_tcp_tx_stats(struct ernic_control *ctl, struct ernic_tcp_tx_stats *s)
{
	memset(s, 0, sizeof(*s));
	control_sum_tcp_ports(ctl, add_tx_stats, s);
}

static void add_buf_bytes(struct ernic_tcp_port *port, void *sum)
{
	*(uint64_t *)sum += ernic_tcp_port_buf_bytes(port);
}

uint64_t ernic_control_tcp_buf_bytes(struct ernic_control *ctl)
{
	uint64_t sum = 0;

	control_sum_tcp_ports(ctl, add_buf_bytes, &sum);
	return sum;
}

static void add_buf_stats(struct ernic_tcp_port *port, void *sum)
{
	struct ernic_tcp_buf_stats p, *s = sum;

	ernic_tcp_port_buf_stats(port, &p);
	s->grown += p.grown;
	s->budget += p.budget;
	s->waits += p.waits;
}

void ernic_control_tcp_buf_stats(struct ernic_control *ctl, struct ernic_tcp_buf_stats *s)
{
	memset(s, 0, sizeof(*s));
	control_sum_tcp_ports(ctl, add_buf_stats, s);
}

int ernic_control_create(struct ernic_nvmf *nvmf, const struct ernic_tcp_port_opts *tcp_opts,
			 struct ernic_control **out)
{
	struct ernic_control *ctl = calloc(1, sizeof(*ctl));

	if (!ctl)
		return -ENOMEM;
	ctl->nvmf = nvmf;
	if (tcp_opts)
		ctl->tcp_opts = *tcp_opts;
	ctl->listen_fd = -1;
	pthread_mutex_init(&ctl->lock, NULL);
	atomic_init(&ctl->stopping, false);
	*out = ctl;
	return 0;
}

void ernic_control_stop(struct ernic_control *ctl, unsigned int grace_ms)
{
	atomic_store(&ctl->stopping, true);
	if (ctl->serving)
		pthread_join(ctl->thread, NULL);
	ctl->serving = false;
	if (ctl->listen_fd >= 0) {
		close(ctl->listen_fd);
		unlink(ctl->path);
		ctl->listen_fd = -1;
	}
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_PORTS; i++)
		if (ctl->listeners[i].port)
			ernic_tcp_port_stop(ctl->listeners[i].port, grace_ms);
}

void ernic_control_destroy(struct ernic_control *ctl)
{
	if (!ctl)
		return;
	ernic_control_stop(ctl, 1000);
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_PORTS; i++)
		ernic_tcp_port_destroy(ctl->listeners[i].port);
	pthread_mutex_destroy(&ctl->lock);
	free(ctl);
}
