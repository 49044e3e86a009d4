/* SPDX-License-Identifier: MIT */
/*
 * ernicctl - the command line of ernicd's control socket (ernicd --control):
 * each subcommand becomes one JSON request, its result is printed as one
 * JSON line on stdout. Exit 0 on success, 1 when ernicd refused the request
 * (its one-line reason on stderr), 2 for bad arguments or no daemon.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "json.h"
#include "log.h"

#define ERNICCTL "ernicctl"
#define ERNICCTL_DEFAULT_CONTROL "/run/ernicd.sock"
#define REQ_MAX 16384
/*
 * How long ernicctl waits to send its request and for the answer, unless
 * --timeout says otherwise. ernicd answers the clients in turn, one request
 * each, and drops one that keeps it waiting 5 s: a request waits a few of
 * those turns at worst, plus its own run (a subsystem removal flushes its
 * namespaces).
 */
#define ERNICCTL_TIMEOUT_S 30
#define ERNICCTL_TIMEOUT_MAX_S 3600

static const char usage[] =
	"Usage: " ERNICCTL " [--control PATH] [--timeout SECONDS] COMMAND ARGS...\n"
	"\n"
	"Change a running ernicd (started with --control PATH) through its control socket.\n"
	"PATH defaults to $ERNIC_CONTROL, else " ERNICCTL_DEFAULT_CONTROL ".\n"
	"\n"
	"  subsystem add NQN [--serial S] [--model M] [--allow-host HOSTNQN]... [--any-host]\n"
	"  subsystem remove NQN          controllers fail, I/O inside finishes, namespaces are flushed\n"
	"  subsystem list\n"
	"  namespace add NQN BACKEND [--nsid N] [--uuid U] [--nguid G] [--eui64 E] [--ana-group G]\n"
	"                                BACKEND: size=1G,bs=4096[,file=PATH][,fault=F] (nvmeof: optional)\n"
	"  namespace remove NQN NSID\n"
	"  namespace resize NQN NSID SIZE    SIZE in bytes or with K, M, G, T\n"
	"  listener add NQN ADDR:PORT    PORT 0 picks a free one; [ADDR]:PORT for IPv6\n"
	"  listener remove NQN ADDR:PORT\n"
	"  ana set ADDR:PORT GROUP|all STATE\n"
	"                                STATE: optimized, non-optimized, inaccessible,\n"
	"                                persistent-loss, change\n"
	"  list                          subsystems, namespaces, listeners, ANA states, discovery GENCTR\n"
	"  counters NQN                  the subsystem's counters\n"
	"  request JSON                  send one raw request: one line (no newline; jq -c makes one),\n"
	"                                under 16384 bytes\n"
	"\n"
	"Every change a host can see is announced to it (AEN, Changed Namespace List,\n"
	"ANA log, discovery log generation). No answer within --timeout (30 s; 1..3600)\n"
	"is exit 2.\n";

static void __attribute__((noreturn, format(printf, 1, 2))) die_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, ERNICCTL ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try --help)\n");
	exit(2);
}

/* A request under construction: {"method":M,"params":{...}} */
struct req {
	char buf[REQ_MAX];
	size_t off;
	bool first;
};

static void req_start(struct req *r, const char *method)
{
	r->off = 0;
	r->first = true;
	r->off += (size_t)snprintf(r->buf, sizeof(r->buf), "{\"method\":\"%s\",\"params\":{", method);
}

static void req_key(struct req *r, const char *key)
{
	if (!r->first)
		r->buf[r->off++] = ',';
	r->first = false;
	if (!json_put_str(r->buf, sizeof(r->buf), &r->off, key) || r->off + 2 >= sizeof(r->buf))
		die_usage("arguments too long");
	r->buf[r->off++] = ':';
	r->buf[r->off] = '\0';
}

/* JSON text is UTF-8: an argument that is not is refused here rather than sent changed (as U+FFFD). */
static void need_utf8(const char *key, const char *value)
{
	char shown[4 * 64 + 1];
	size_t bad = json_utf8_bad(value);

	if (bad != SIZE_MAX)
		die_usage("bad %s '%s': not UTF-8 at byte %zu", key, ernic_log_str(value, shown, sizeof(shown)), bad);
}

static void req_str(struct req *r, const char *key, const char *value)
{
	need_utf8(key, value);
	req_key(r, key);
	if (!json_put_str(r->buf, sizeof(r->buf), &r->off, value))
		die_usage("arguments too long");
}

static void req_raw(struct req *r, const char *key, const char *value)
{
	req_key(r, key);
	r->off += (size_t)snprintf(r->buf + r->off, sizeof(r->buf) - r->off, "%s", value);
	if (r->off >= sizeof(r->buf))
		die_usage("arguments too long");
}

static void req_end(struct req *r)
{
	r->off += (size_t)snprintf(r->buf + r->off, sizeof(r->buf) - r->off, "}}");
	if (r->off >= sizeof(r->buf))
		die_usage("arguments too long");
}

/* A decimal argument, as a JSON number; bad input names the argument. */
static void req_uint(struct req *r, const char *key, const char *what, const char *arg)
{
	unsigned long long v;
	char *end, num[24];

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || !arg[0] || *end || arg[0] == '-' || arg[0] == '+' || v > INT64_MAX)
		die_usage("bad %s '%s': expected a decimal number up to %lld", what, arg, (long long)INT64_MAX);
	/* As parsed, not as typed: JSON has no leading zeros ("01"). */
	snprintf(num, sizeof(num), "%llu", v);
	req_raw(r, key, num);
}

/* ADDR:PORT or [ADDR]:PORT into traddr and trsvcid. */
static void req_addr(struct req *r, const char *arg)
{
	const char *colon = strrchr(arg, ':');
	char addr[256];
	size_t n;

	if (!colon || colon == arg || !colon[1])
		die_usage("bad listener '%s': expected ADDR:PORT", arg);
	n = (size_t)(colon - arg);
	if (arg[0] == '[') {
		if (colon[-1] != ']')
			die_usage("bad listener '%s': expected [ADDR]:PORT", arg);
		arg++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(addr))
		die_usage("bad listener '%s': bad address", arg);
	memcpy(addr, arg, n);
	addr[n] = '\0';
	req_str(r, "traddr", addr);
	req_uint(r, "trsvcid", "port", colon + 1);
}

static void need(int argc, int want, const char *what)
{
	if (argc < want)
		die_usage("%s: missing arguments", what);
}

static void build_subsystem(struct req *r, int argc, char **argv)
{
	need(argc, 1, "subsystem");
	if (!strcmp(argv[0], "list") && argc == 1) {
		req_start(r, "subsystem_list");
	} else if (!strcmp(argv[0], "remove") && argc == 2) {
		req_start(r, "subsystem_remove");
		req_str(r, "nqn", argv[1]);
	} else if (!strcmp(argv[0], "add") && argc >= 2) {
		char hosts[REQ_MAX / 2];
		size_t hoff = 0;

		req_start(r, "subsystem_add");
		req_str(r, "nqn", argv[1]);
		hosts[0] = '\0';
		for (int i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "--any-host")) {
				req_raw(r, "any_host", "true");
			} else if (i + 1 < argc && !strcmp(argv[i], "--serial")) {
				req_str(r, "serial", argv[++i]);
			} else if (i + 1 < argc && !strcmp(argv[i], "--model")) {
				req_str(r, "model", argv[++i]);
			} else if (i + 1 < argc && !strcmp(argv[i], "--allow-host")) {
				if (hoff)
					hosts[hoff++] = ',';
				need_utf8("allow_hosts", argv[++i]);
				if (!json_put_str(hosts, sizeof(hosts), &hoff, argv[i]))
					die_usage("too many --allow-host");
			} else {
				die_usage("subsystem add: unexpected argument '%s'", argv[i]);
			}
		}
		if (hoff) {
			char list[REQ_MAX / 2 + 4];

			snprintf(list, sizeof(list), "[%s]", hosts);
			req_raw(r, "allow_hosts", list);
		}
	} else {
		die_usage("subsystem: expected add NQN ..., remove NQN or list");
	}
}

static void build_namespace(struct req *r, int argc, char **argv)
{
	need(argc, 1, "namespace");
	if (!strcmp(argv[0], "add") && argc >= 3) {
		req_start(r, "namespace_add");
		req_str(r, "nqn", argv[1]);
		req_str(r, "backend", argv[2]);
		for (int i = 3; i < argc; i++) {
			if (i + 1 >= argc)
				die_usage("namespace add: '%s' needs a value", argv[i]);
			if (!strcmp(argv[i], "--nsid"))
				req_uint(r, "nsid", "--nsid", argv[++i]);
			else if (!strcmp(argv[i], "--ana-group"))
				req_uint(r, "ana_group", "--ana-group", argv[++i]);
			else if (!strcmp(argv[i], "--uuid"))
				req_str(r, "uuid", argv[++i]);
			else if (!strcmp(argv[i], "--nguid"))
				req_str(r, "nguid", argv[++i]);
			else if (!strcmp(argv[i], "--eui64"))
				req_str(r, "eui64", argv[++i]);
			else
				die_usage("namespace add: unexpected argument '%s'", argv[i]);
		}
	} else if (!strcmp(argv[0], "remove") && argc == 3) {
		req_start(r, "namespace_remove");
		req_str(r, "nqn", argv[1]);
		req_uint(r, "nsid", "NSID", argv[2]);
	} else if (!strcmp(argv[0], "resize") && argc == 4) {
		req_start(r, "namespace_resize");
		req_str(r, "nqn", argv[1]);
		req_uint(r, "nsid", "NSID", argv[2]);
		req_str(r, "size", argv[3]);
	} else {
		die_usage("namespace: expected add NQN BACKEND ..., remove NQN NSID or resize NQN NSID SIZE");
	}
}

static void build_listener(struct req *r, int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[0], "add") && strcmp(argv[0], "remove")))
		die_usage("listener: expected add NQN ADDR:PORT or remove NQN ADDR:PORT");
	req_start(r, !strcmp(argv[0], "add") ? "listener_add" : "listener_remove");
	req_str(r, "nqn", argv[1]);
	req_addr(r, argv[2]);
}

static void build_ana(struct req *r, int argc, char **argv)
{
	if (argc != 4 || strcmp(argv[0], "set"))
		die_usage("ana: expected set ADDR:PORT GROUP|all STATE");
	req_start(r, "ana_set");
	req_addr(r, argv[1]);
	if (strcmp(argv[2], "all"))
		req_uint(r, "group", "GROUP", argv[2]);
	req_str(r, "state", argv[3]);
}

/*
 * A raw request, sent as given: refused when it holds a newline (ernicd would
 * run what follows it as a second request) or does not fit (a cut request may
 * still parse, as another one).
 */
static void req_line(struct req *r, const char *line)
{
	const char *nl = strchr(line, '\n');
	size_t n = strlen(line);

	if (nl)
		die_usage("bad request: a newline at byte %zu; a request is one line", (size_t)(nl - line));
	if (n >= sizeof(r->buf))
		die_usage("bad request: %zu bytes, longer than %zu", n, sizeof(r->buf) - 1);
	memcpy(r->buf, line, n + 1);
	r->off = 0;
}

/* Send @line, read one response line into *@resp (to free). 0, or exit 2 when there is no daemon or no answer. */
static void exchange(const char *path, unsigned int timeout_s, const char *line, char **resp)
{
	const struct timeval timeout = { .tv_sec = timeout_s };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		die_usage("bad --control '%s': path too long", path);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* SO_SNDTIMEO bounds connect() too, on a Unix socket whose backlog is full. */
	if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) ||
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout)))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		fprintf(stderr, ERNICCTL ": cannot reach ernicd at '%s': %s\n", path, strerror(errno));
		exit(2);
	}
	if (dprintf(fd, "%s\n", line) < 0) {
		fprintf(stderr, ERNICCTL ": cannot send to '%s': %s\n", path, strerror(errno));
		exit(2);
	}
	for (;;) {
		ssize_t n;

		if (!buf) {
			fprintf(stderr, ERNICCTL ": out of memory\n");
			exit(2);
		}
		if (len && buf[len - 1] == '\n')
			break;
		if (len + 1 >= cap)
			buf = realloc(buf, cap *= 2);
		if (!buf)
			continue;
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			fprintf(stderr, ERNICCTL ": no answer from ernicd at '%s' within %u s\n", path, timeout_s);
			exit(2);
		}
		if (n <= 0) {
			fprintf(stderr, ERNICCTL ": ernicd at '%s' closed the connection without an answer\n", path);
			exit(2);
		}
		len += (size_t)n;
	}
	buf[len - 1] = '\0';
	close(fd);
	*resp = buf;
}

int main(int argc, char **argv)
{
	const char *path = getenv("ERNIC_CONTROL");
	static struct req r;
	struct json *resp = NULL;
	const struct json *error;
	char err[256], *line;
	unsigned int timeout_s = ERNICCTL_TIMEOUT_S;
	int i = 1;

	if (!path || !path[0])
		path = ERNICCTL_DEFAULT_CONTROL;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--control") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			const char *v = argv[++i];
			char *end;
			unsigned long s = strtoul(v, &end, 10);

			if (*v < '0' || *v > '9' || *end || s < 1 || s > ERNICCTL_TIMEOUT_MAX_S)
				die_usage("bad --timeout '%s': a whole number of seconds, 1..%d", v, ERNICCTL_TIMEOUT_MAX_S);
			timeout_s = (unsigned int)s;
		} else {
			die_usage("unknown option '%s'", argv[i]);
		}
	}
	if (i == argc)
		die_usage("no command");
	if (!strcmp(argv[i], "subsystem"))
		build_subsystem(&r, argc - i - 1, argv + i + 1);
	else if (!strcmp(argv[i], "namespace"))
		build_namespace(&r, argc - i - 1, argv + i + 1);
	else if (!strcmp(argv[i], "listener"))
		build_listener(&r, argc - i - 1, argv + i + 1);
	else if (!strcmp(argv[i], "ana"))
		build_ana(&r, argc - i - 1, argv + i + 1);
	else if (!strcmp(argv[i], "list") && argc - i == 1)
		req_start(&r, "list");
	else if (!strcmp(argv[i], "counters") && argc - i == 2) {
		req_start(&r, "counters");
		req_str(&r, "nqn", argv[i + 1]);
	} else if (!strcmp(argv[i], "request") && argc - i == 2) {
		req_line(&r, argv[i + 1]);
	} else
		die_usage("unknown command '%s'", argv[i]);
	if (r.off)
		req_end(&r);

	exchange(path, timeout_s, r.buf, &line);
	if (json_parse(line, &resp, err, sizeof(err))) {
		fprintf(stderr, ERNICCTL ": unreadable answer from ernicd: %s\n", err);
		free(line);
		return 2;
	}
	error = json_get(resp, "error");
	if (error) {
		const struct json *msg = json_get(error, "message");

		fprintf(stderr, ERNICCTL ": %s\n", msg && msg->type == JSON_STRING ? msg->str : line);
		json_free(resp);
		free(line);
		return 1;
	}
	/* The result as the daemon wrote it: {"result":...} without the wrapper. */
	if (!strncmp(line, "{\"result\":", 10) && line[strlen(line) - 1] == '}') {
		line[strlen(line) - 1] = '\0';
		printf("%s\n", line + 10);
	} else {
		printf("%s\n", line);
	}
	json_free(resp);
	free(line);
	return 0;
}
