/* SPDX-License-Identifier: MIT */
/*
 * ctrlr.c - the target (subsystem), its controllers and queues, and the one
 * place every command enters: ernic_req_exec().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "target.h"

uint64_t ernic_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ target */

/* Identifiers stable per subsystem and NSID, so a host sees the same namespace again. */
static void ns_default_ids(const struct ernic_target *tgt, struct ernic_ns *ns)
{
	/*
	 * Two FNV-1a 64-bit hashes of the whole NQN and the NSID, from different
	 * offset bases: every character counts, so subsystems whose NQNs differ
	 * anywhere (nqn...-1, nqn...-2) get different identifiers, which a Linux
	 * host requires of namespaces it sees through different subsystems.
	 */
	for (size_t half = 0; half < 2; half++) {
		uint64_t h = half ? 0x84222325cbf29ce4ull : 0xcbf29ce484222325ull;

		for (const char *p = tgt->subnqn; *p; p++)
			h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
		for (size_t b = 0; b < 4; b++)
			h = (h ^ (uint8_t)(ns->nsid >> (8 * b))) * 0x100000001b3ull;
		memcpy(ns->nguid + 8 * half, &h, sizeof(h));
	}
	memcpy(ns->eui64, ns->nguid, sizeof(ns->eui64));
	/* A version-4 style UUID derived from the NGUID, stable like it. */
	memcpy(ns->uuid, ns->nguid, sizeof(ns->uuid));
	ns->uuid[6] = (uint8_t)((ns->uuid[6] & 0x0F) | 0x40);
	ns->uuid[8] = (uint8_t)((ns->uuid[8] & 0x3F) | 0x80);
}

/*
 * Zero a free slot for a new namespace, all but its state. Its fields are ours
 * until the state is published, but every lookup and flush reads the state of
 * every slot (ernic_target_ns()), so that one is left to atomic stores.
 */
static void ns_clear(struct ernic_ns *ns)
{
	size_t state_end = offsetof(struct ernic_ns, state) + sizeof(ns->state);

	memset(ns, 0, offsetof(struct ernic_ns, state));
	memset((uint8_t *)ns + state_end, 0, sizeof(*ns) - state_end);
}

/*
 * A namespace's NGUID, EUI-64 and UUID identify it globally (Base 2.0 4.5.1):
 * one another namespace of the subsystem already has is refused, naming it,
 * as a Linux host would refuse the second namespace ("duplicate IDs"). Only
 * explicit IDs can collide: the default ones hash the NQN and the NSID.
 */
static int ns_ids_taken(const struct ernic_target *tgt, const struct ernic_ns *ns, char *err, size_t errlen)
{
	static const char *const names[] = { "nguid", "eui64", "uuid" };
	const uint8_t *const mine[] = { ns->nguid, ns->eui64, ns->uuid };
	const size_t lens[] = { sizeof(ns->nguid), sizeof(ns->eui64), sizeof(ns->uuid) };

	for (uint32_t i = 0; i < ERNIC_MAX_NS; i++) {
		const struct ernic_ns *o = &tgt->ns[i];
		const uint8_t *const theirs[] = { o->nguid, o->eui64, o->uuid };

		if (o == ns || atomic_load(&o->state) == ERNIC_NS_FREE)
			continue;
		for (size_t f = 0; f < ERNIC_ARRAY_SIZE(names); f++) {
			char hex[2 * 16 + 1];

			if (memcmp(mine[f], theirs[f], lens[f]))
				continue;
			for (size_t b = 0; b < lens[f]; b++)
				snprintf(hex + 2 * b, 3, "%02x", mine[f][b]);
			snprintf(err, errlen, "%s %s: namespace %u of this subsystem has it already", names[f], hex,
				 o->nsid);
			return -EEXIST;
		}
	}
	return 0;
}

int ernic_target_open_ns(struct ernic_target *tgt, uint32_t nsid, const struct ernic_backend_cfg *cfg,
			 const struct ernic_ns_ids *ids, char *err, size_t errlen)
{
	struct ernic_ns *ns;
	int rc;

	if (nsid == 0 || nsid > ERNIC_MAX_NS) {
		snprintf(err, errlen, "Error: nvmeof backend: nsid %u out of range 1..%u", nsid, ERNIC_MAX_NS);
		return -EINVAL;
	}
	ns = &tgt->ns[nsid - 1];
	if (atomic_load(&ns->state) != ERNIC_NS_FREE) {
		snprintf(err, errlen, "Error: nvmeof backend: nsid %u is in use", nsid);
		return -EEXIST;
	}
	if (ids && ids->anagrpid > ERNIC_MAX_ANA_GROUPS) {
		snprintf(err, errlen, "ana_group %u: must be 1..%u", ids->anagrpid, ERNIC_MAX_ANA_GROUPS);
		return -EINVAL;
	}
	ns_clear(ns);
	ns->fd = -1;
	ns->nsid = nsid;
	ns->anagrpid = 1;
	ns_default_ids(tgt, ns);
	if (ids && ids->has_nguid)
		memcpy(ns->nguid, ids->nguid, sizeof(ns->nguid));
	if (ids && ids->has_uuid)
		memcpy(ns->uuid, ids->uuid, sizeof(ns->uuid));
	if (ids && ids->has_eui64)
		memcpy(ns->eui64, ids->eui64, sizeof(ns->eui64));
	if (ids && ids->anagrpid)
		ns->anagrpid = ids->anagrpid;
	/* Before the backend: a namespace refused creates no file. */
	rc = ns_ids_taken(tgt, ns, err, errlen);
	if (rc)
		return rc;
	if (cfg->file[0])
		rc = ernic_ns_file_open(ns, cfg->file, cfg->size, cfg->bs, err, errlen);
	else
		rc = ernic_ns_ram_open(ns, cfg->size, cfg->bs, err, errlen);
	if (rc)
		return rc;
	ernic_ns_fault_install(ns, &cfg->fault);
	pthread_mutex_lock(&tgt->lock);
	tgt->nr_ns++;
	ns->gen = ++tgt->ns_gens;
	pthread_mutex_unlock(&tgt->lock);
	/* seq_cst: a command that sees the namespace active sees its gen. */
	atomic_store(&ns->state, ERNIC_NS_ACTIVE);
	return 0;
}

/* The lowest free NSID, 0 when every slot is taken. */
static uint32_t target_free_nsid(const struct ernic_target *tgt)
{
	for (uint32_t i = 0; i < ERNIC_MAX_NS; i++)
		if (atomic_load(&tgt->ns[i].state) == ERNIC_NS_FREE)
			return i + 1;
	return 0;
}

const char *ernic_nqn_invalid(const char *nqn)
{
	size_t len = strlen(nqn);

	if (!len || len > 223)
		return "must be 1..223 characters";
	for (const unsigned char *p = (const unsigned char *)nqn; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return "must not contain control characters";
	/* An NQN is UTF-8 (Base 2.0 4.7), as the JSON that lists it must be. */
	if (json_utf8_bad(nqn) != SIZE_MAX)
		return "must be UTF-8";
	return NULL;
}

/* An Identify ASCII field (SN, MN) holds printable ASCII only (Base 1.5), at most @max bytes. */
static bool identify_ascii_ok(const char *s, size_t max)
{
	if (strlen(s) > max)
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			return false;
	return true;
}

/* What @opts names, checked before anything is allocated: one line naming the key and value. */
static int target_opts_check(const struct ernic_target_opts *opts, char *err, size_t errlen)
{
	const char *why;

	if (!opts)
		return 0;
	if (opts->subnqn && (why = ernic_nqn_invalid(opts->subnqn))) {
		snprintf(err, errlen, "nqn '%s': %s", opts->subnqn, why);
		return -EINVAL;
	}
	if (opts->serial && !identify_ascii_ok(opts->serial, 20)) {
		snprintf(err, errlen, "serial '%s': at most 20 printable ASCII characters", opts->serial);
		return -EINVAL;
	}
	if (opts->model && !identify_ascii_ok(opts->model, 40)) {
		snprintf(err, errlen, "model '%s': at most 40 printable ASCII characters", opts->model);
		return -EINVAL;
	}
	for (const char *const *h = opts->allow_hosts; h && *h; h++) {
		if ((why = ernic_nqn_invalid(*h))) {
			snprintf(err, errlen, "allow_hosts '%s': %s", *h, why);
			return -EINVAL;
		}
	}
	return 0;
}

int ernic_target_alloc(const struct ernic_backend_cfg *cfg, const struct ernic_target_opts *opts,
		       struct ernic_target **out, char *err, size_t errlen)
{
	struct ernic_target *tgt;
	uint32_t hash = 2166136261u;
	int rc = target_opts_check(opts, err, errlen);

	if (rc)
		return rc;
	tgt = calloc(1, sizeof(*tgt));
	if (!tgt) {
		snprintf(err, errlen, "Error: out of memory creating the target");
		return -ENOMEM;
	}
	tgt->cfg = *cfg;
	tgt->max_xfer = ernic_mdts_bytes(cfg->mdts);
	snprintf(tgt->subnqn, sizeof(tgt->subnqn), "%s",
		 opts && opts->subnqn ? opts->subnqn : ERNIC_DEFAULT_SUBNQN);
	for (const char *p = tgt->subnqn; *p; p++)
		hash = (hash ^ (uint8_t)*p) * 16777619u;
	if (opts && opts->serial)
		snprintf(tgt->serial, sizeof(tgt->serial), "%s", opts->serial);
	else
		snprintf(tgt->serial, sizeof(tgt->serial), "ERNIC%08" PRIx32, hash);
	snprintf(tgt->model, sizeof(tgt->model), "%s", opts && opts->model ? opts->model : ERNIC_DEFAULT_MODEL);
	if (opts && opts->allow_hosts) {
		size_t n = 0;

		while (opts->allow_hosts[n])
			n++;
		tgt->allow_hosts = calloc(n + 1, sizeof(char *));
		for (size_t i = 0; tgt->allow_hosts && i < n; i++)
			tgt->allow_hosts[i] = strdup(opts->allow_hosts[i]);
	}
	for (uint32_t i = 0; i < ERNIC_MAX_NS; i++)
		tgt->ns[i].fd = -1;
	pthread_mutex_init(&tgt->lock, NULL);
	atomic_init(&tgt->refs, 1);
	tgt->next_cntlid = 1;
	tgt->power_on_ns = ernic_now_ns();
	tgt->trtype = NVMF_TRTYPE_RDMA;
	tgt->adrfam = NVMF_ADRFAM_IPV4;
	tgt->disc_genctr = 1;
	snprintf(tgt->traddr, sizeof(tgt->traddr), "127.0.0.1");
	snprintf(tgt->trsvcid, sizeof(tgt->trsvcid), "4420");
	*out = tgt;
	return 0;
}

int ernic_target_create(const struct ernic_backend_cfg *cfg, const struct ernic_target_opts *opts,
			struct ernic_target **out, char *err, size_t errlen)
{
	struct ernic_target *tgt;
	int rc;

	/*
	 * The memory-region budget is checked here, at the target, not in the
	 * in-process port that owns the table: cfg->queues is what every
	 * controller of this target offers in Number of Queues whatever the
	 * port, and a configuration built in code must meet the parser's
	 * refusal, in the seed's words, at startup and before any port exists
	 * (mrbudget_ut). The same cfg->max_mr then sizes each port's table.
	 */
	if (!cfg->skip_mr_budget) {
		rc = ernic_backend_check_budget(cfg, err, errlen);
		if (rc)
			return rc;
	}
	rc = ernic_target_alloc(cfg, opts, &tgt, err, errlen);
	if (rc)
		return rc;
	rc = ernic_target_open_ns(tgt, 1, cfg, NULL, err, errlen);
	if (rc) {
		ernic_target_destroy(tgt);
		return rc;
	}
	*out = tgt;
	return 0;
}

int ernic_target_add_ns(struct ernic_target *tgt, const struct ernic_backend_cfg *cfg, char *err,
			size_t errlen)
{
	uint32_t nsid = target_free_nsid(tgt);

	if (!nsid) {
		snprintf(err, errlen, "Error: nvmeof backend: at most %u namespaces", ERNIC_MAX_NS);
		return -ENOSPC;
	}
	return ernic_target_open_ns(tgt, nsid, cfg, NULL, err, errlen);
}

/*
 * The waits of ernic_target_quiesce(): a queue is past every command it had
 * inside once its sequence is even or has moved since the first look. The
 * same rule serves both sequences a queue has: commands inside the core
 * (exec_seq) and namespace memory still being sent (ns_mem_seq).
 */
struct quiesce_seen {
	const struct ernic_sq *sq;
	uint32_t seq;
};

static inline uint32_t quiesce_seq(const struct ernic_sq *sq, bool ns_mem)
{
	return atomic_load(ns_mem ? &sq->ns_mem_seq : &sq->exec_seq);
}

static bool quiesce_done(struct ernic_target *tgt, const struct quiesce_seen *seen, size_t n, bool ns_mem)
{
	for (struct ernic_sq *sq = tgt->live_sqs; sq; sq = sq->live_next) {
		uint32_t seq = quiesce_seq(sq, ns_mem);

		if (!(seq & 1))
			continue;
		for (size_t i = 0; i < n; i++)
			if (seen[i].sq == sq && seen[i].seq == seq)
				return false;
	}
	return true;
}

/*
 * A queue still holding the namespace memory it held at the first look,
 * @waited_ns later, past its transport's bound: asked to give it up.
 * Under the target's lock, which keeps the queue on the list.
 */
static void quiesce_revoke_ns_mem(struct ernic_target *tgt, const struct quiesce_seen *seen, size_t n,
				  uint64_t waited_ns)
{
	for (struct ernic_sq *sq = tgt->live_sqs; sq; sq = sq->live_next) {
		uint32_t seq = quiesce_seq(sq, true);

		if (!(seq & 1) || !sq->ns_mem_wait_ns || waited_ns < sq->ns_mem_wait_ns)
			continue;
		for (size_t i = 0; i < n; i++)
			if (seen[i].sq == sq && seen[i].seq == seq)
				atomic_store(&sq->ns_mem_revoke, true);
	}
}

static void quiesce_wait(struct ernic_target *tgt, bool ns_mem)
{
	struct quiesce_seen *seen = NULL;
	size_t n = 0, cap = 0;
	uint64_t t0 = ernic_now_ns();
	bool done;

	/* Before the first look: a hold taken after it either sees this or keeps the sequence it saw odd. */
	if (ns_mem)
		atomic_fetch_add(&tgt->ns_mem_quiescing, 1);
	pthread_mutex_lock(&tgt->lock);
	for (struct ernic_sq *sq = tgt->live_sqs; sq; sq = sq->live_next) {
		uint32_t seq = quiesce_seq(sq, ns_mem);

		if (!(seq & 1))
			continue;
		if (n == cap) {
			struct quiesce_seen *more = realloc(seen, (cap ? cap * 2 : 16) * sizeof(*seen));

			if (!more) /* keep what fits: the wait below still covers every queue seen */
				break;
			seen = more;
			cap = cap ? cap * 2 : 16;
		}
		seen[n++] = (struct quiesce_seen){ sq, seq };
	}
	pthread_mutex_unlock(&tgt->lock);
	/* The lock is not held while waiting: a command inside may take it (SMART, Connect). */
	for (;;) {
		pthread_mutex_lock(&tgt->lock);
		done = quiesce_done(tgt, seen, n, ns_mem);
		if (!done && ns_mem)
			quiesce_revoke_ns_mem(tgt, seen, n, ernic_now_ns() - t0);
		/*
		 * The last waiter done: what it revoked was given up (a queue that
		 * kept its memory past the bound has its send failed and goes), so
		 * a revoke left standing would fail a healthy queue's next slow
		 * send of namespace memory, long after.
		 */
		if (done && ns_mem && atomic_fetch_sub(&tgt->ns_mem_quiescing, 1) == 1)
			for (struct ernic_sq *sq = tgt->live_sqs; sq; sq = sq->live_next)
				atomic_store(&sq->ns_mem_revoke, false);
		pthread_mutex_unlock(&tgt->lock);
		if (done)
			break;
		usleep(100);
	}
	free(seen);
}

/*
 * Commands first, then what they left to send: a command that mapped
 * namespace memory in place did so inside the core, so once it has left,
 * its queue's ns_mem_seq is already odd, and the second wait covers it.
 */
void ernic_target_quiesce(struct ernic_target *tgt)
{
	quiesce_wait(tgt, false);
	quiesce_wait(tgt, true);
}

/* Under the lock namespace add and remove change it under: the control thread may be serving one. */
uint32_t ernic_target_nr_ns(struct ernic_target *tgt)
{
	uint32_t n;

	pthread_mutex_lock(&tgt->lock);
	n = tgt->nr_ns;
	pthread_mutex_unlock(&tgt->lock);
	return n;
}

/*
 * Close a namespace no command uses any more (REMOVING and quiesced): flush first, so no acknowledged write is lost.
 * The slot is freed even when the flush or the close's last sync fails (no host can reach the namespace any more,
 * and a retry would find the error already reported); that failure is returned, for the caller to pass on.
 */
static int target_close_ns(struct ernic_target *tgt, struct ernic_ns *ns)
{
	int rc = 0;

	if (ns->ops) {
		int r;

		rc = ns->ops->flush(ns);
		r = ns->ops->close(ns);
		if (!rc)
			rc = r;
	}
	ns->ops = NULL;
	pthread_mutex_lock(&tgt->lock);
	tgt->nr_ns--;
	pthread_mutex_unlock(&tgt->lock);
	atomic_store(&ns->state, ERNIC_NS_FREE);
	return rc;
}

int ernic_target_remove_ns(struct ernic_target *tgt, uint32_t nsid, char *err, size_t errlen)
{
	struct ernic_ns *ns = ernic_target_ns(tgt, nsid);
	int rc;

	if (!ns) {
		snprintf(err, errlen, "nsid %u: no such namespace", nsid);
		return -ENOENT;
	}
	/* New commands get Invalid Namespace from here; the ones inside finish on the backend. */
	atomic_store(&ns->state, ERNIC_NS_REMOVING);
	ernic_target_quiesce(tgt);
	rc = target_close_ns(tgt, ns);
	ernic_target_ns_changed(tgt, nsid);
	/* Gone all the same, but a write acknowledged earlier may not be on the medium: the caller must hear it. */
	if (rc)
		snprintf(err, errlen, "namespace %u removed, but its final flush failed: %s", nsid, strerror(-rc));
	return rc;
}

int ernic_target_resize_ns(struct ernic_target *tgt, uint32_t nsid, uint64_t size, char *err, size_t errlen)
{
	struct ernic_ns *ns = ernic_target_ns(tgt, nsid);
	uint64_t old, nlb;
	int rc;

	if (!ns) {
		snprintf(err, errlen, "nsid %u: no such namespace", nsid);
		return -ENOENT;
	}
	if (size == 0 || size & ((1ull << ns->lba_shift) - 1) || size > ERNIC_NS_SIZE_MAX) {
		snprintf(err, errlen, "size %llu: must be a non-zero multiple of the block size %u, at most %llu",
			 (unsigned long long)size, 1u << ns->lba_shift, ERNIC_NS_SIZE_MAX);
		return -EINVAL;
	}
	old = ernic_ns_size(ns);
	nlb = size >> ns->lba_shift;
	if (size == old)
		return 0;
	/* Growing: the medium first, then the bound commands check. Shrinking: the reverse, with a wait between. */
	if (size > old) {
		rc = ns->ram ? ernic_ns_ram_resize(ns, old, size, err, errlen)
			     : ernic_ns_file_resize(ns, old, size, err, errlen);
		if (rc)
			return rc;
		atomic_store(&ns->nlb, nlb);
	} else {
		atomic_store(&ns->nlb, nlb);
		ernic_target_quiesce(tgt);
		rc = ns->ram ? ernic_ns_ram_resize(ns, old, size, err, errlen)
			     : ernic_ns_file_resize(ns, old, size, err, errlen);
		if (rc)
			return rc;
	}
	ernic_target_ns_changed(tgt, nsid);
	return 0;
}

int ernic_target_add_ns_at(struct ernic_target *tgt, uint32_t nsid, const struct ernic_backend_cfg *cfg,
			   const struct ernic_ns_ids *ids, uint32_t *out_nsid, char *err, size_t errlen)
{
	int rc;

	if (!nsid)
		nsid = target_free_nsid(tgt);
	if (!nsid) {
		snprintf(err, errlen, "nsid: every one of 1..%u is in use", ERNIC_MAX_NS);
		return -ENOSPC;
	}
	rc = ernic_target_open_ns(tgt, nsid, cfg, ids, err, errlen);
	if (rc)
		return rc;
	if (out_nsid)
		*out_nsid = nsid;
	ernic_target_ns_changed(tgt, nsid);
	return 0;
}

int ernic_target_ns_info(struct ernic_target *tgt, uint32_t nsid, struct ernic_ns_info *info)
{
	const struct ernic_ns *ns = ernic_target_ns(tgt, nsid);

	if (!ns)
		return -ENOENT;
	memset(info, 0, sizeof(*info));
	info->nsid = nsid;
	info->size = ernic_ns_size(ns);
	info->bs = 1u << ns->lba_shift;
	info->anagrpid = ns->anagrpid;
	snprintf(info->backend, sizeof(info->backend), "%s", ns->ram ? "ram" : "file");
	info->path = ns->ram ? "" : ns->path;
	memcpy(info->nguid, ns->nguid, sizeof(info->nguid));
	memcpy(info->uuid, ns->uuid, sizeof(info->uuid));
	memcpy(info->eui64, ns->eui64, sizeof(info->eui64));
	return 0;
}

const char *ernic_target_serial(const struct ernic_target *tgt)
{
	return tgt->serial;
}

const char *ernic_target_model(const struct ernic_target *tgt)
{
	return tgt->model;
}

const char *const *ernic_target_allow_hosts(const struct ernic_target *tgt)
{
	return (const char *const *)tgt->allow_hosts;
}

/* The family of a numeric address: IPv6 if it parses as one, else IPv4 (a name or an IPv4 address). */
static uint8_t target_adrfam(const char *traddr)
{
	struct in6_addr a6;

	return inet_pton(AF_INET6, traddr, &a6) == 1 ? NVMF_ADRFAM_IPV6 : NVMF_ADRFAM_IPV4;
}

void ernic_target_set_port(struct ernic_target *tgt, uint8_t trtype, const char *traddr, const char *trsvcid)
{
	uint8_t adrfam = target_adrfam(traddr);

	pthread_mutex_lock(&tgt->lock);
	/* A host that saw the log before must see a new generation, and only then. */
	if (trtype != tgt->trtype || adrfam != tgt->adrfam || strcmp(traddr, tgt->traddr) ||
	    strcmp(trsvcid, tgt->trsvcid))
		tgt->disc_genctr++;
	tgt->trtype = trtype;
	tgt->adrfam = adrfam;
	snprintf(tgt->traddr, sizeof(tgt->traddr), "%s", traddr);
	snprintf(tgt->trsvcid, sizeof(tgt->trsvcid), "%s", trsvcid);
	pthread_mutex_unlock(&tgt->lock);
}

void ernic_target_get(struct ernic_target *tgt)
{
	atomic_fetch_add_explicit(&tgt->refs, 1, memory_order_relaxed);
}

/* The last reference: no queue, lookup or owner reaches the target any more. */
static void target_free(struct ernic_target *tgt)
{
	for (uint32_t i = 0; i < ERNIC_MAX_NS; i++)
		if (atomic_load(&tgt->ns[i].state) != ERNIC_NS_FREE && tgt->ns[i].ops)
			tgt->ns[i].ops->close(&tgt->ns[i]);
	if (tgt->allow_hosts) {
		for (char **h = tgt->allow_hosts; *h; h++)
			free(*h);
		free(tgt->allow_hosts);
	}
	pthread_mutex_destroy(&tgt->lock);
	free(tgt);
}

void ernic_target_put(struct ernic_target *tgt)
{
	if (tgt && atomic_fetch_sub_explicit(&tgt->refs, 1, memory_order_acq_rel) == 1)
		target_free(tgt);
}

void ernic_target_destroy(struct ernic_target *tgt)
{
	ernic_target_put(tgt);
}

const struct ernic_backend_cfg *ernic_target_cfg(const struct ernic_target *tgt)
{
	return &tgt->cfg;
}

const char *ernic_target_subnqn(const struct ernic_target *tgt)
{
	return tgt->subnqn;
}

void ernic_target_add_port(struct ernic_target *tgt, struct ernic_port *port)
{
	pthread_mutex_lock(&tgt->lock);
	port->next = tgt->ports;
	tgt->ports = port;
	pthread_mutex_unlock(&tgt->lock);
}

void ernic_target_remove_port(struct ernic_target *tgt, struct ernic_port *port)
{
	pthread_mutex_lock(&tgt->lock);
	for (struct ernic_port **pp = &tgt->ports; *pp; pp = &(*pp)->next) {
		if (*pp == port) {
			*pp = port->next;
			break;
		}
	}
	pthread_mutex_unlock(&tgt->lock);
}

/*
 * Regions belong to the ports' tables (an RNIC's), shared by every
 * controller; a target with no RDMA-shaped port reports none. Called with
 * tgt->lock held, which keeps each table alive.
 */
static void target_mr_usage(struct ernic_target *tgt, struct ernic_counters *c)
{
	c->mr_in_use = c->mr_high_water = c->mr_max = 0;
	for (struct ernic_port *port = tgt->ports; port; port = port->next) {
		uint32_t in_use, high_water, max;

		if (!port->mr)
			continue;
		ernic_mr_usage(port->mr, &in_use, &high_water, &max);
		c->mr_in_use += in_use;
		c->mr_high_water += high_water;
		c->mr_max += max;
	}
}

int ernic_target_flush(struct ernic_target *tgt)
{
	int rc = 0;

	for (uint32_t i = 0; i < ERNIC_MAX_NS; i++) {
		struct ernic_ns *ns = ernic_target_ns(tgt, i + 1);
		int r = ns ? ns->ops->flush(ns) : 0;

		if (r && !rc)
			rc = r;
	}
	return rc;
}

bool ernic_target_host_allowed(const struct ernic_target *tgt, const char *hostnqn)
{
	if (!tgt->allow_hosts)
		return true;
	for (char **h = tgt->allow_hosts; *h; h++)
		if (!strcmp(*h, hostnqn))
			return true;
	return false;
}

bool ernic_ctrlr_aen_notify_locked(struct ernic_ctrlr *ctrlr, uint32_t aec_bit)
{
	if (!(ctrlr->aec & aec_bit) || (ctrlr->aen_masked & aec_bit))
		return false;
	ctrlr->aen_masked |= aec_bit;
	return true;
}

void ernic_ctrlr_aen_rearm_locked(struct ernic_ctrlr *ctrlr, const struct ernic_req *req, uint32_t aec_bit)
{
	if (!(req->sqe.cdw10 & NVME_LOG_RAE))
		ctrlr->aen_masked &= ~aec_bit;
}

void ernic_ctrlr_aen_rearm(const struct ernic_req *req, uint32_t aec_bit)
{
	struct ernic_ctrlr *ctrlr = req->sq->ctrlr;

	pthread_mutex_lock(&ctrlr->lock);
	ernic_ctrlr_aen_rearm_locked(ctrlr, req, aec_bit);
	pthread_mutex_unlock(&ctrlr->lock);
}

void ernic_target_ns_changed(struct ernic_target *tgt, uint32_t nsid)
{
	pthread_mutex_lock(&tgt->lock);
	for (uint32_t i = 0; i < ERNIC_CTRLR_SLOTS; i++) {
		struct ernic_ctrlr *ctrlr = tgt->ctrlrs[i];
		bool queue;

		if (!ctrlr || ctrlr->discovery)
			continue;
		pthread_mutex_lock(&ctrlr->lock);
		if (!ctrlr->changed_ns_overflow) {
			bool seen = false;

			for (uint32_t j = 0; j < ctrlr->nr_changed_ns; j++)
				seen |= ctrlr->changed_ns[j] == nsid;
			if (!seen && ctrlr->nr_changed_ns == NVME_CHANGED_NS_MAX)
				ctrlr->changed_ns_overflow = true;
			else if (!seen)
				ctrlr->changed_ns[ctrlr->nr_changed_ns++] = nsid;
		}
		queue = ernic_ctrlr_aen_notify_locked(ctrlr, NVME_CTRL_OAES_NS_ATTR);
		pthread_mutex_unlock(&ctrlr->lock);
		if (queue)
			ernic_ctrlr_add_aen(ctrlr, NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_NS_CHANGED,
							       NVME_LOG_CHANGED_NS));
	}
	pthread_mutex_unlock(&tgt->lock);
}

void ernic_target_aen(struct ernic_target *tgt, const struct ernic_nvmf_port *port,
		      const struct ernic_target *allowed_on, uint32_t aec_bit, uint32_t aer_dw0)
{
	pthread_mutex_lock(&tgt->lock);
	for (uint32_t i = 0; i < ERNIC_CTRLR_SLOTS; i++) {
		struct ernic_ctrlr *ctrlr = tgt->ctrlrs[i];
		bool enabled;

		if (!ctrlr || (port && ctrlr->port != port) ||
		    (allowed_on && !ernic_target_host_allowed(allowed_on, ctrlr->hostnqn)))
			continue;
		pthread_mutex_lock(&ctrlr->lock);
		enabled = ernic_ctrlr_aen_notify_locked(ctrlr, aec_bit);
		pthread_mutex_unlock(&ctrlr->lock);
		if (enabled)
			ernic_ctrlr_add_aen(ctrlr, aer_dw0);
	}
	pthread_mutex_unlock(&tgt->lock);
}

/* The controller failed for good: fatal (ERNIC_CSTS_FATAL) and CSTS.CFS, which no enable clears. */
static void ctrlr_fail(struct ernic_ctrlr *ctrlr)
{
	atomic_fetch_or(&ctrlr->csts, ERNIC_CSTS_FATAL | NVME_CSTS_CFS);
}

void ernic_target_fail_ctrlrs(struct ernic_target *tgt, const struct ernic_nvmf_port *port)
{
	pthread_mutex_lock(&tgt->lock);
	for (uint32_t i = 0; i < ERNIC_CTRLR_SLOTS; i++) {
		struct ernic_ctrlr *ctrlr = tgt->ctrlrs[i];

		if (ctrlr && (!port || ctrlr->port == port))
			ctrlr_fail(ctrlr);
	}
	pthread_mutex_unlock(&tgt->lock);
}

/*
 * The one way a queue's counters reach a sum: the target's and each
 * controller's counters of retired queues, and the live sums on read.
 */
static void counters_add_sq(struct ernic_counters *c, const struct ernic_sq *sq)
{
	const struct ernic_sq_stats *s = &sq->stats;
	uint64_t *cmds = sq->qid == 0 ? c->admin_cmds : c->io_cmds;

	for (int i = 0; i < 256; i++)
		cmds[i] += s->cmds[i];
	c->bytes_read += s->bytes_read;
	c->bytes_written += s->bytes_written;
	c->io_bytes_read += s->io_bytes_read;
	c->io_bytes_written += s->io_bytes_written;
	for (int i = 0; i < NVME_STATUS_COUNT; i++)
		c->errors[i] += s->errors[i];
}

void ernic_target_counters(struct ernic_target *tgt, struct ernic_counters *c)
{
	pthread_mutex_lock(&tgt->lock);
	*c = tgt->retired;
	for (struct ernic_sq *sq = tgt->live_sqs; sq; sq = sq->live_next)
		counters_add_sq(c, sq);
	c->controllers = tgt->nr_ctrlrs;
	c->io_queues = tgt->nr_io_queues;
	target_mr_usage(tgt, c);
	pthread_mutex_unlock(&tgt->lock);
}

int ernic_target_ctrlr_counters(struct ernic_target *tgt, uint16_t cntlid, struct ernic_counters *c)
{
	struct ernic_ctrlr *ctrlr = NULL;

	pthread_mutex_lock(&tgt->lock);
	for (uint32_t i = 0; i < ERNIC_CTRLR_SLOTS && !ctrlr; i++)
		if (tgt->ctrlrs[i] && tgt->ctrlrs[i]->cntlid == cntlid)
			ctrlr = tgt->ctrlrs[i];
	if (!ctrlr) {
		pthread_mutex_unlock(&tgt->lock);
		return -ENOENT;
	}
	pthread_mutex_lock(&ctrlr->lock);
	*c = ctrlr->retired;
	for (uint32_t qid = 0; qid <= ERNIC_MAX_IO_QUEUES; qid++) {
		if (!ctrlr->sqs[qid])
			continue;
		counters_add_sq(c, ctrlr->sqs[qid]);
		c->io_queues += qid != 0;
	}
	pthread_mutex_unlock(&ctrlr->lock);
	target_mr_usage(tgt, c);
	pthread_mutex_unlock(&tgt->lock);
	c->controllers = 1;
	return 0;
}

/* ------------------------------------------------------------- controllers */

struct ernic_ctrlr *ernic_ctrlr_create(struct ernic_target *tgt, const struct nvmf_connect_data *data,
				       uint32_t kato_ms, bool discovery, struct ernic_nvmf_port *port)
{
	struct ernic_ctrlr *ctrlr = calloc(1, sizeof(*ctrlr));
	uint32_t slot, first, end;

	if (!ctrlr)
		return NULL;
	ctrlr->tgt = tgt;
	ctrlr->port = port;
	ctrlr->refs = 1;
	ctrlr->discovery = discovery;
	memcpy(ctrlr->hostid, data->hostid, sizeof(ctrlr->hostid));
	memcpy(ctrlr->hostnqn, data->hostnqn, sizeof(ctrlr->hostnqn) - 1);
	memcpy(ctrlr->subnqn, data->subnqn, sizeof(ctrlr->subnqn) - 1);
	pthread_mutex_init(&ctrlr->lock, NULL);

	/* CAP: MQES, CQR (contiguous queues required), TO = 7.5 s, NVM command set, MPSMIN = MPSMAX = 4 KiB */
	ctrlr->cap = (uint64_t)(tgt->cfg.queue_size - 1) | NVME_CAP_CQR | (15ull << NVME_CAP_TO_SHIFT) |
		     NVME_CAP_CSS_NVM;
	ctrlr->vs = NVME_VS(1, 3, 0);
	ernic_feat_init(ctrlr);
	kato_ms = ernic_ctrlr_kato_ms(ctrlr, kato_ms);
	ctrlr->kato_ms = kato_ms;
	ctrlr->nr_io_queues = discovery ? 0 : tgt->cfg.queues;
	ctrlr->vwc = 1;
	ctrlr->start_ns = ernic_now_ns();
	if (kato_ms)
		atomic_store(&ctrlr->ka_deadline_ns, ctrlr->start_ns + (uint64_t)kato_ms * 1000000ull);

	/* Each controller type has its own range of the table: discovery never takes an I/O slot. */
	first = discovery ? ERNIC_MAX_CTRLRS : 0;
	end = discovery ? ERNIC_CTRLR_SLOTS : ERNIC_MAX_CTRLRS;
	pthread_mutex_lock(&tgt->lock);
	for (slot = first; slot < end; slot++)
		if (!tgt->ctrlrs[slot])
			break;
	/* A subsystem being removed takes no new association. */
	if (slot == end || tgt->removed) {
		pthread_mutex_unlock(&tgt->lock);
		pthread_mutex_destroy(&ctrlr->lock);
		free(ctrlr);
		return NULL;
	}
	/* Dynamic controller model: CNTLID 1..0xFFEF, never one in use. */
	for (;;) {
		uint16_t id = tgt->next_cntlid++;
		bool used = false;

		if (tgt->next_cntlid > 0xFFEF)
			tgt->next_cntlid = 1;
		for (uint32_t i = 0; i < ERNIC_CTRLR_SLOTS; i++)
			used |= tgt->ctrlrs[i] && tgt->ctrlrs[i]->cntlid == id;
		if (!used) {
			ctrlr->cntlid = id;
			break;
		}
	}
	tgt->ctrlrs[slot] = ctrlr;
	tgt->nr_ctrlrs++;
	pthread_mutex_unlock(&tgt->lock);
	return ctrlr;
}

/*
 * A discovery controller nobody keeps alive would hold its slot for ever: it
 * gets a keep-alive of its own when the host asks for none, as Linux nvmet
 * does at Connect, and keeps it when Set Features KATO 0 asks again later.
 * One the host keeps alive (persistent) keeps its KATO.
 */
uint32_t ernic_ctrlr_kato_ms(const struct ernic_ctrlr *ctrlr, uint32_t kato_ms)
{
	return ctrlr->discovery && !kato_ms ? ERNIC_DISC_KATO_MS : kato_ms;
}

struct ernic_ctrlr *ernic_ctrlr_lookup(struct ernic_target *tgt, uint16_t cntlid, const char *hostnqn)
{
	struct ernic_ctrlr *found = NULL;

	pthread_mutex_lock(&tgt->lock);
	for (uint32_t i = 0; i < ERNIC_CTRLR_SLOTS; i++) {
		struct ernic_ctrlr *c = tgt->ctrlrs[i];

		if (c && c->cntlid == cntlid && !strncmp(c->hostnqn, hostnqn, NVMF_NQN_SIZE)) {
			found = c;
			found->refs++;
			break;
		}
	}
	pthread_mutex_unlock(&tgt->lock);
	return found;
}

static void ctrlr_free(struct ernic_ctrlr *ctrlr)
{
	pthread_mutex_destroy(&ctrlr->lock);
	free(ctrlr);
}

/* Drop a reference; the caller holds the target's lock. True when it was the last. */
static bool ctrlr_put_locked(struct ernic_ctrlr *ctrlr)
{
	return --ctrlr->refs == 0;
}

void ernic_ctrlr_put(struct ernic_ctrlr *ctrlr)
{
	struct ernic_target *tgt = ctrlr->tgt;
	bool last;

	pthread_mutex_lock(&tgt->lock);
	last = ctrlr_put_locked(ctrlr);
	pthread_mutex_unlock(&tgt->lock);
	if (last)
		ctrlr_free(ctrlr);
}

int ernic_ctrlr_attach_sq(struct ernic_ctrlr *ctrlr, struct ernic_sq *sq, uint16_t qid, uint16_t size)
{
	struct ernic_target *tgt = ctrlr->tgt;

	pthread_mutex_lock(&tgt->lock);
	pthread_mutex_lock(&ctrlr->lock);
	if (ctrlr->unlisted || (qid && ernic_ctrlr_failed(ctrlr))) {
		pthread_mutex_unlock(&ctrlr->lock);
		pthread_mutex_unlock(&tgt->lock);
		return -ENODEV;
	}
	if (qid > ctrlr->nr_io_queues || ctrlr->sqs[qid]) {
		int rc = qid > ctrlr->nr_io_queues ? -ERANGE : -EBUSY;

		pthread_mutex_unlock(&ctrlr->lock);
		pthread_mutex_unlock(&tgt->lock);
		return rc;
	}
	ctrlr->sqs[qid] = sq;
	ctrlr->nr_sqs++;
	ctrlr->refs++;
	sq->ctrlr = ctrlr;
	sq->qid = qid;
	sq->size = size;
	sq->connected = true;
	if (qid)
		tgt->nr_io_queues++;
	pthread_mutex_unlock(&ctrlr->lock);
	pthread_mutex_unlock(&tgt->lock);
	return 0;
}

/*
 * Complete a held AER. Its CQE reports the SQ head as it is now, not as it
 * was when the command was fetched: any number of commands may have come
 * since, and a head that old, taken modulo the queue size, can tell a host
 * that tracks it that entries it has not yet had consumed are free.
 */
static void ctrlr_complete_held(struct ernic_req *req, uint16_t status, uint32_t dw0)
{
	ernic_req_set_status(req, status);
	req->cqe.dw0 = dw0;
	req->cqe.sqhd = ernic_sq_cqe_sqhd(req->sq);
	req->sq->ops->complete(req);
}

/* Complete every held AER: the admin queue is going away. */
static void ctrlr_fail_aers(struct ernic_ctrlr *ctrlr)
{
	struct ernic_req *held[ERNIC_AERL];
	uint32_t n;

	pthread_mutex_lock(&ctrlr->lock);
	n = ctrlr->nr_aer_reqs;
	memcpy(held, ctrlr->aer_reqs, n * sizeof(held[0]));
	ctrlr->nr_aer_reqs = 0;
	pthread_mutex_unlock(&ctrlr->lock);
	for (uint32_t i = 0; i < n; i++)
		ctrlr_complete_held(held[i], NVME_SC_ABORT_SQ_DELETION, 0);
}

void ernic_sq_detach(struct ernic_sq *sq)
{
	struct ernic_ctrlr *ctrlr = sq->ctrlr;
	struct ernic_target *tgt = sq->tgt;
	bool attached, freed = false;

	if (!ctrlr)
		return;
	if (sq->qid == 0)
		ctrlr_fail_aers(ctrlr);
	pthread_mutex_lock(&tgt->lock);
	pthread_mutex_lock(&ctrlr->lock);
	attached = ctrlr->sqs[sq->qid] == sq;
	/*
	 * Without its admin queue nobody can manage the controller: a fatal
	 * error, as Linux nvmet's. Its I/O queues run no more commands
	 * (ERNIC_EXEC_CTRLR_FATAL) and their transports tear them down
	 * (ernic_sq_ctrlr_fatal()); none joins it.
	 */
	if (attached && sq->qid == 0)
		ctrlr_fail(ctrlr);
	if (attached) {
		counters_add_sq(&ctrlr->retired, sq);
		ctrlr->sqs[sq->qid] = NULL;
		ctrlr->nr_sqs--;
		if (sq->qid)
			tgt->nr_io_queues--;
	}
	/* The association ends with its last queue; a lookup still holding it keeps the memory. */
	if (ctrlr->nr_sqs == 0 && !ctrlr->unlisted) {
		ctrlr->unlisted = true;
		for (uint32_t i = 0; i < ERNIC_CTRLR_SLOTS; i++)
			if (tgt->ctrlrs[i] == ctrlr) {
				tgt->ctrlrs[i] = NULL;
				tgt->nr_ctrlrs--;
			}
	}
	pthread_mutex_unlock(&ctrlr->lock);
	sq->ctrlr = NULL;
	sq->connected = false;
	if (attached)
		freed = ctrlr_put_locked(ctrlr);
	pthread_mutex_unlock(&tgt->lock);
	if (freed)
		ctrlr_free(ctrlr);
}

/*
 * Under ctrlr->lock, as Set Features KATO changes kato_ms and the deadline
 * (ernic_feat_set_kato()): a check that saw traffic must not restart a timer
 * the host has just turned off.
 */
void ernic_ctrlr_keep_alive_locked(struct ernic_ctrlr *ctrlr)
{
	atomic_store(&ctrlr->ka_deadline_ns, ctrlr->kato_ms ? ernic_now_ns() + (uint64_t)ctrlr->kato_ms * 1000000ull : 0);
}

void ernic_ctrlr_keep_alive(struct ernic_ctrlr *ctrlr)
{
	pthread_mutex_lock(&ctrlr->lock);
	ernic_ctrlr_keep_alive_locked(ctrlr);
	pthread_mutex_unlock(&ctrlr->lock);
}

void ernic_target_check_keep_alive(struct ernic_target *tgt)
{
	/* A port of a set serves every subsystem of it: their timers run here too. */
	if (tgt->nvmf)
		ernic_nvmf_check_keep_alive(tgt->nvmf);
	else
		ernic_target_check_keep_alive_timers(tgt);
}

/*
 * Traffic Based Keep Alive (Base 2.0 section 3.9.5.2, CTRATT.TBKAS): a command
 * processed on any of the controller's queues since the last check restarts
 * the timer, as Linux nvmet does, so a host busy with I/O whose Keep Alive is
 * late under load keeps its association. Read here, every check, from the
 * queues' exec_seq: the I/O path writes nothing more for it.
 */
static bool ctrlr_saw_traffic(struct ernic_ctrlr *ctrlr)
{
	uint64_t seen = 0;
	bool moved;

	pthread_mutex_lock(&ctrlr->lock);
	for (uint32_t qid = 0; qid <= ERNIC_MAX_IO_QUEUES; qid++)
		if (ctrlr->sqs[qid])
			seen += atomic_load_explicit(&ctrlr->sqs[qid]->exec_seq, memory_order_relaxed);
	moved = seen != ctrlr->ka_traffic;
	ctrlr->ka_traffic = seen;
	pthread_mutex_unlock(&ctrlr->lock);
	return moved;
}

void ernic_target_check_keep_alive_timers(struct ernic_target *tgt)
{
	uint64_t now = ernic_now_ns();

	pthread_mutex_lock(&tgt->lock);
	for (uint32_t i = 0; i < ERNIC_CTRLR_SLOTS; i++) {
		struct ernic_ctrlr *c = tgt->ctrlrs[i];
		uint64_t deadline;

		if (!c)
			continue;
		deadline = atomic_load(&c->ka_deadline_ns);
		if (deadline && ctrlr_saw_traffic(c)) {
			ernic_ctrlr_keep_alive(c);
			continue;
		}
		/* Keep Alive Timer expired (Base 3.9.5): the controller is fatal. */
		if (deadline && now > deadline)
			ctrlr_fail(c);
	}
	pthread_mutex_unlock(&tgt->lock);
}

bool ernic_sq_ctrlr_fatal(const struct ernic_sq *sq)
{
	return sq->ctrlr && ernic_ctrlr_failed(sq->ctrlr);
}

void ernic_ctrlr_add_aen(struct ernic_ctrlr *ctrlr, uint32_t aer_dw0)
{
	struct ernic_req *req = NULL;

	pthread_mutex_lock(&ctrlr->lock);
	if (ctrlr->nr_aer_reqs) {
		req = ctrlr->aer_reqs[0];
		memmove(&ctrlr->aer_reqs[0], &ctrlr->aer_reqs[1], --ctrlr->nr_aer_reqs * sizeof(req));
	} else if (ctrlr->nr_aens < ERNIC_MAX_AEN) {
		ctrlr->aens[ctrlr->nr_aens++] = aer_dw0;
	}
	pthread_mutex_unlock(&ctrlr->lock);
	if (req)
		ctrlr_complete_held(req, NVME_SC_SUCCESS, aer_dw0);
}

void ernic_ctrlr_shutdown(struct ernic_ctrlr *ctrlr)
{
	if (!ctrlr->discovery)
		ernic_target_flush(ctrlr->tgt);
}

/* ------------------------------------------------------------------ queues */

void ernic_sq_init(struct ernic_sq *sq, struct ernic_target *tgt, const struct ernic_transport_ops *ops,
		   void *transport)
{
	memset(sq, 0, sizeof(*sq));
	sq->tgt = tgt;
	sq->ops = ops;
	sq->transport = transport;
	sq->qid_expected = ERNIC_SQ_QID_ANY;
	ernic_target_get(tgt);
	pthread_mutex_lock(&tgt->lock);
	sq->live_next = tgt->live_sqs;
	if (tgt->live_sqs)
		tgt->live_sqs->live_prev = sq;
	tgt->live_sqs = sq;
	pthread_mutex_unlock(&tgt->lock);
}

void ernic_sq_move(struct ernic_sq *sq, struct ernic_target *to)
{
	struct ernic_target *from = sq->tgt;

	if (from == to)
		return;
	ernic_target_get(to);
	pthread_mutex_lock(&from->lock);
	if (sq->live_prev)
		sq->live_prev->live_next = sq->live_next;
	else
		from->live_sqs = sq->live_next;
	if (sq->live_next)
		sq->live_next->live_prev = sq->live_prev;
	sq->live_prev = NULL;
	pthread_mutex_unlock(&from->lock);
	pthread_mutex_lock(&to->lock);
	sq->tgt = to;
	sq->live_next = to->live_sqs;
	if (to->live_sqs)
		to->live_sqs->live_prev = sq;
	to->live_sqs = sq;
	pthread_mutex_unlock(&to->lock);
	ernic_target_put(from);
}

void ernic_sq_destroy(struct ernic_sq *sq)
{
	struct ernic_target *tgt = sq->tgt;

	ernic_sq_detach(sq);
	pthread_mutex_lock(&tgt->lock);
	counters_add_sq(&tgt->retired, sq);
	if (sq->live_prev)
		sq->live_prev->live_next = sq->live_next;
	else
		tgt->live_sqs = sq->live_next;
	if (sq->live_next)
		sq->live_next->live_prev = sq->live_prev;
	sq->live_prev = sq->live_next = NULL;
	pthread_mutex_unlock(&tgt->lock);
	/* A removed subsystem's last queue takes its memory with it. */
	ernic_target_put(tgt);
}

/* ---------------------------------------------------------------- requests */

uint32_t ernic_req_sgl_len(const struct ernic_req *req)
{
	const struct nvme_sgl_desc *sgl = &req->sqe.dptr;

	if (NVME_SGL_ID_TYPE(sgl->id) == NVME_SGL_TYPE_KEYED_DATA_BLOCK)
		return nvme_keyed_sgl_len(sgl);
	return sgl->unkeyed.length;
}

uint16_t ernic_req_map_data_exact(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf)
{
	if (ERNIC_UNLIKELY(ernic_req_sgl_len(req) != len))
		return NVME_SC_SGL_INVALID_DATA_LEN;
	return req->sq->ops->map_data(req, len, dir, buf);
}

uint16_t ernic_req_map_data_atleast(struct ernic_req *req, uint32_t len, enum nvme_data_dir dir, void **buf)
{
	if (ernic_req_sgl_len(req) < len)
		return NVME_SC_SGL_INVALID_DATA_LEN;
	return req->sq->ops->map_data(req, len, dir, buf);
}

uint16_t ernic_req_map_c2h_in_place(struct ernic_req *req, uint32_t len, const void *src)
{
	if (ERNIC_UNLIKELY(ernic_req_sgl_len(req) != len))
		return NVME_SC_SGL_INVALID_DATA_LEN;
	return req->sq->ops->map_c2h_in_place(req, len, src);
}

uint16_t ernic_req_map_c2h_zero_tail(struct ernic_req *req, uint32_t len, uint32_t data_len, void **buf)
{
	const struct ernic_transport_ops *ops = req->sq->ops;
	uint16_t status;

	if (ernic_req_sgl_len(req) < len)
		return NVME_SC_SGL_INVALID_DATA_LEN;
	if (ops->map_c2h_zero_tail)
		return ops->map_c2h_zero_tail(req, len, data_len, buf);
	status = ops->map_data(req, len, NVME_DATA_CTRL_TO_HOST, buf);
	if (status == NVME_SC_SUCCESS)
		memset((uint8_t *)*buf + data_len, 0, len - data_len);
	return status;
}

static void ctrlr_log_error(struct ernic_ctrlr *ctrlr, const struct ernic_req *req)
{
	struct nvme_error_log_entry *e;

	pthread_mutex_lock(&ctrlr->lock);
	/* Newest first: shift the ring down one entry. */
	memmove(&ctrlr->errlog[1], &ctrlr->errlog[0], sizeof(ctrlr->errlog) - sizeof(ctrlr->errlog[0]));
	e = &ctrlr->errlog[0];
	memset(e, 0, sizeof(*e));
	e->error_count = ++ctrlr->err_count;
	e->sqid = req->sq->qid;
	e->cmdid = req->sqe.cid;
	e->status_field = req->cqe.status; /* the CQE's, DNR as ernic_req_set_status() chose it (Base Figure 205) */
	e->parm_error_location = 0xFFFF;
	e->nsid = req->sqe.nsid;
	if (req->sq->qid && (req->sqe.opc == NVME_CMD_READ || req->sqe.opc == NVME_CMD_WRITE))
		e->lba = (uint64_t)req->sqe.cdw10 | (uint64_t)req->sqe.cdw11 << 32;
	e->trtype = req->sq->ops->trtype;
	pthread_mutex_unlock(&ctrlr->lock);
}

void ernic_req_set_status(struct ernic_req *req, uint16_t status)
{
	struct ernic_sq *sq = req->sq;

	req->cqe.cid = req->sqe.cid;
	req->cqe.sqid = sq->qid;
	req->cqe.status = 0;
	if (ERNIC_LIKELY(status == NVME_SC_SUCCESS))
		return;
	/*
	 * Errors this emulator reports are never worth a retry of the same
	 * command, except a path error (another path, or this one once its ANA
	 * state changes, may succeed, and a multipath host fails over only
	 * without DNR) and a transport's transient one (the data came corrupted;
	 * sent again it may not be).
	 */
	req->cqe.status = (uint16_t)(NVME_CQE_STATUS(status) << 1);
	if (NVME_STATUS_SCT(status) != NVME_SCT_PATH && status != NVME_SC_TRANSIENT_TRANSPORT)
		req->cqe.status |= NVME_CQE_STATUS_DNR;
	ernic_stat_add(&sq->stats.errors[NVME_CQE_STATUS(status)], 1);
	if (sq->ctrlr)
		ctrlr_log_error(sq->ctrlr, req);
}

/*
 * The one place a command set is chosen, by queue and controller type: the
 * admin queue of a discovery controller runs discovery_cmd.c; a discovery
 * controller has no I/O command set (Fabrics 1.1 section 5).
 */
static uint16_t ctrlr_exec(struct ernic_req *req, enum ernic_exec *ex)
{
	const struct ernic_sq *sq = req->sq;
	bool discovery = sq->ctrlr->discovery;

	if (sq->qid == 0)
		return discovery ? ernic_discovery_exec(req, ex) : ernic_admin_exec(req, ex);
	if (ERNIC_UNLIKELY(discovery))
		return NVME_SC_INVALID_OPCODE;
	return ernic_io_exec(req);
}

/*
 * What every non-Fabrics command must pass before a command set sees it: a
 * connected queue, an enabled and healthy controller (only Fabrics commands
 * while it is disabled, Fabrics 3.5), SGLs and no fused operation.
 */
static inline uint16_t req_gate(const struct ernic_req *req)
{
	const struct ernic_sq *sq = req->sq;
	uint32_t csts;

	/* A Disconnect deleted the queue: what was still on its way in is aborted, and answered. */
	if (ERNIC_UNLIKELY(!sq->connected))
		return sq->deleted ? NVME_SC_ABORT_SQ_DELETION : NVME_SC_CMD_SEQ_ERROR;
	csts = atomic_load_explicit(&sq->ctrlr->csts, memory_order_relaxed);
	/* A failure sets CFS too: one test on the way in; CFS alone is a controller not enabled. */
	if (ERNIC_UNLIKELY((csts & (NVME_CSTS_RDY | NVME_CSTS_CFS)) != NVME_CSTS_RDY))
		return (csts & ERNIC_CSTS_FATAL) ? NVME_SC_ABORT_SQ_DELETION : NVME_SC_CMD_SEQ_ERROR;
	if (ERNIC_UNLIKELY((req->sqe.flags & 0xC3) != NVME_CMD_PSDT_SGL_MPTR_CONTIG))
		return NVME_SC_INVALID_FIELD; /* fused commands, or PRPs: not over fabrics */
	return NVME_SC_SUCCESS;
}

/*
 * A command is inside the core between these two (ernic_target_quiesce()).
 * The entry is a seq_cst store: ordered before the namespace state the
 * command loads next, so a remover that saw an even sequence knows the
 * command will see the namespace gone.
 */
static inline void sq_enter(struct ernic_sq *sq)
{
	atomic_store(&sq->exec_seq, atomic_load_explicit(&sq->exec_seq, memory_order_relaxed) + 1);
}

static inline void sq_leave(struct ernic_sq *sq)
{
	atomic_store_explicit(&sq->exec_seq, atomic_load_explicit(&sq->exec_seq, memory_order_relaxed) + 1,
			      memory_order_release);
}

static uint16_t req_check(struct ernic_req *req)
{
	uint16_t status;

	if (req->sqe.opc == NVME_FABRICS_COMMAND)
		return ernic_fabrics_check(req);
	status = req_gate(req);
	if (status || req->sq->qid == 0)
		return status;
	if (req->sq->ctrlr->discovery)
		return NVME_SC_INVALID_OPCODE;
	return ernic_io_check(req, &req->ns_gen);
}

uint16_t ernic_req_check(struct ernic_req *req)
{
	uint16_t status;

	sq_enter(req->sq);
	status = req_check(req);
	sq_leave(req->sq);
	return status;
}

void *ernic_req_h2c_in_place(struct ernic_req *req, uint32_t len)
{
	struct ernic_sq *sq = req->sq;
	void *dst = NULL;

	sq_enter(sq);
	if (req->sqe.opc != NVME_FABRICS_COMMAND && sq->qid && !req_gate(req) && !sq->ctrlr->discovery &&
	    !atomic_load(&sq->tgt->ns_mem_quiescing))
		dst = ernic_io_h2c_in_place(req, len);
	sq_leave(sq);
	req->h2c_in_place = dst != NULL;
	return dst;
}

bool ernic_req_c2h_in_place(struct ernic_req *req)
{
	struct ernic_sq *sq = req->sq;
	bool in_place = false;

	sq_enter(sq);
	if (req->sqe.opc != NVME_FABRICS_COMMAND && sq->qid && sq->c2h_in_place && !req_gate(req) && !sq->ctrlr->discovery)
		in_place = ernic_io_c2h_in_place(req);
	sq_leave(sq);
	return in_place;
}

static enum ernic_exec req_exec(struct ernic_req *req)
{
	struct ernic_sq *sq = req->sq;
	enum ernic_exec ex = ERNIC_EXEC_DONE;
	uint16_t status;

	req->cqe.dw0 = 0;
	req->cqe.dw1 = 0;
	req->ns = NULL;
	ernic_stat_add(&sq->stats.cmds[req->sqe.opc], 1);
	/*
	 * SQ head as the host would see it: wraps at the queue size (0 before
	 * Connect); not reported once a Connect disabled SQ flow control.
	 */
	if (!sq->sqflow_disabled) {
		uint16_t head = (uint16_t)(atomic_load_explicit(&sq->sqhd, memory_order_relaxed) + 1);

		atomic_store_explicit(&sq->sqhd, head >= sq->size ? 0 : head, memory_order_relaxed);
	}
	req->cqe.sqhd = ernic_sq_cqe_sqhd(sq);
	if (ERNIC_UNLIKELY(req->transport_status)) {
		ernic_req_set_status(req, req->transport_status);
		req->transport_status = 0;
		return ERNIC_EXEC_DONE;
	}

	if (req->sqe.opc == NVME_FABRICS_COMMAND) {
		bool disconnect = ((const struct nvmf_fabrics_cmd *)&req->sqe)->fctype == NVMF_FCTYPE_DISCONNECT;

		status = ernic_fabrics_exec(req);
		ernic_req_set_status(req, status);
		if (disconnect && status == NVME_SC_SUCCESS) {
			ernic_sq_detach(sq);
			sq->deleted = true;
		}
		return ERNIC_EXEC_DONE;
	}
	status = req_gate(req);
	if (ERNIC_LIKELY(status == NVME_SC_SUCCESS))
		status = ctrlr_exec(req, &ex);
	else if (status == NVME_SC_ABORT_SQ_DELETION && !sq->deleted)
		ex = ERNIC_EXEC_CTRLR_FATAL; /* the gate's answer to a fatal controller */
	if (ex == ERNIC_EXEC_HELD)
		return ex;
	ernic_req_set_status(req, status);
	return ex;
}

enum ernic_exec ernic_req_exec(struct ernic_req *req)
{
	struct ernic_sq *sq = req->sq;
	enum ernic_exec ex;

	sq_enter(sq);
	ex = req_exec(req);
	sq_leave(sq);
	return ex;
}
