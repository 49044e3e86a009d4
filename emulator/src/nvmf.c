/* SPDX-License-Identifier: MIT */
/*
 * nvmf.c - a set of subsystems behind shared ports (ernic/nvmf.h), as Linux
 * nvmet's subsystems, ports and the links between them: the subsystem a
 * queue belongs to is chosen at Connect, the discovery log lists every
 * subsystem at every port it is linked to, and ANA states live per port.
 *
 * Lock order: the set's lock, then a target's, then a controller's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

struct ernic_nvmf {
	pthread_mutex_t lock; /* everything below */
	struct ernic_target *home;
	/* The table's reference to each (ernic_target.refs) */
	struct ernic_target *subsys[ERNIC_NVMF_MAX_SUBSYSTEMS];
	struct ernic_nvmf_port ports[ERNIC_NVMF_MAX_PORTS];
	uint16_t next_portid;
	uint64_t genctr;
	/* ANA log CHGCNT (Base Figure 212): one more at every state or membership change */
	_Atomic uint64_t ana_chgcnt;
};

int ernic_nvmf_create(const struct ernic_backend_cfg *cfg, struct ernic_nvmf **out, char *err, size_t errlen)
{
	struct ernic_target_opts topts = { .subnqn = NVMF_DISC_NQN };
	struct ernic_nvmf *nvmf;
	int rc;

	rc = ernic_backend_check_budget(cfg, err, errlen);
	if (rc)
		return rc;
	nvmf = calloc(1, sizeof(*nvmf));
	if (!nvmf) {
		snprintf(err, errlen, "Error: out of memory creating the subsystem set");
		return -ENOMEM;
	}
	rc = ernic_target_alloc(cfg, &topts, &nvmf->home, err, errlen);
	if (rc) {
		free(nvmf);
		return rc;
	}
	nvmf->home->nvmf = nvmf;
	pthread_mutex_init(&nvmf->lock, NULL);
	nvmf->next_portid = 1;
	nvmf->genctr = 1;
	atomic_init(&nvmf->ana_chgcnt, 1);
	*out = nvmf;
	return 0;
}

void ernic_nvmf_destroy(struct ernic_nvmf *nvmf)
{
	if (!nvmf)
		return;
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_SUBSYSTEMS; i++)
		ernic_target_put(nvmf->subsys[i]);
	ernic_target_put(nvmf->home);
	pthread_mutex_destroy(&nvmf->lock);
	free(nvmf);
}

struct ernic_target *ernic_nvmf_home(struct ernic_nvmf *nvmf)
{
	return nvmf->home;
}

uint64_t ernic_nvmf_genctr(struct ernic_nvmf *nvmf)
{
	uint64_t g;

	pthread_mutex_lock(&nvmf->lock);
	g = nvmf->genctr;
	pthread_mutex_unlock(&nvmf->lock);
	return g;
}

/* ----------------------------------------------------------- announcements */

/*
 * What a discovery controller's host sees when the records of the subsystems
 * in slots @changed come or go: a new GENCTR, and a Discovery Log Page Change
 * notice (Fabrics 1.1 section 5.3, persistent discovery controllers) to those
 * that asked, if one of those subsystems allows their host. Another host's
 * log lists the same records as before (ernic_nvmf_disc_log()), and Linux
 * nvmet's nvmet_port_disc_changed() skips it too. The log lists every port's
 * records whichever port a discovery controller came through, so no port is
 * left out. A controller told once stays masked until it reads the log, so
 * two of its subsystems changing tell it once. Called with the set's lock
 * held, the subsystems still in the table.
 */
static void nvmf_disc_changed_locked(struct ernic_nvmf *nvmf, uint32_t changed)
{
	nvmf->genctr++;
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_SUBSYSTEMS; i++)
		if (nvmf->subsys[i] && (changed & (1u << i)))
			ernic_target_aen(nvmf->home, NULL, nvmf->subsys[i], NVME_AEC_DISC_CHANGE,
					 NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_DISC_CHANGED,
						      NVME_LOG_DISC));
}

/* ANA Change notice (Base 8.1.1.9) to every controller reached through @port. */
static void nvmf_ana_changed_locked(struct ernic_nvmf *nvmf, const struct ernic_nvmf_port *port)
{
	atomic_fetch_add(&nvmf->ana_chgcnt, 1);
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_SUBSYSTEMS; i++)
		if (nvmf->subsys[i] && (port->subsys & (1u << i)))
			ernic_target_aen(nvmf->subsys[i], port, NULL, NVME_AEC_ANA_CHANGE,
					 NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_ANA_CHANGE, NVME_LOG_ANA));
}

/* -------------------------------------------------------------- subsystems */

static int nvmf_subsys_slot_locked(struct ernic_nvmf *nvmf, const char *subnqn)
{
	for (int i = 0; i < ERNIC_NVMF_MAX_SUBSYSTEMS; i++)
		if (nvmf->subsys[i] && !strcmp(nvmf->subsys[i]->subnqn, subnqn))
			return i;
	return -1;
}

/* Referenced under the lock, so a removal meanwhile cannot free it under the caller. */
static struct ernic_target *nvmf_subsys_get_locked(struct ernic_nvmf *nvmf, int slot)
{
	struct ernic_target *tgt = slot < 0 ? NULL : nvmf->subsys[slot];

	if (tgt)
		ernic_target_get(tgt);
	return tgt;
}

struct ernic_target *ernic_nvmf_subsys_get(struct ernic_nvmf *nvmf, const char *subnqn)
{
	struct ernic_target *tgt;

	pthread_mutex_lock(&nvmf->lock);
	tgt = nvmf_subsys_get_locked(nvmf, nvmf_subsys_slot_locked(nvmf, subnqn));
	pthread_mutex_unlock(&nvmf->lock);
	return tgt;
}

struct ernic_target *ernic_nvmf_subsys_get_at(struct ernic_nvmf *nvmf, unsigned int i)
{
	struct ernic_target *tgt;

	if (i >= ERNIC_NVMF_MAX_SUBSYSTEMS)
		return NULL;
	pthread_mutex_lock(&nvmf->lock);
	tgt = nvmf_subsys_get_locked(nvmf, (int)i);
	pthread_mutex_unlock(&nvmf->lock);
	return tgt;
}

int ernic_nvmf_subsys_add(struct ernic_nvmf *nvmf, const struct ernic_target_opts *opts,
			  struct ernic_target **out, char *err, size_t errlen)
{
	const char *nqn = opts && opts->subnqn ? opts->subnqn : ERNIC_DEFAULT_SUBNQN;
	struct ernic_target *tgt;
	int slot = -1, rc;

	/* The NQN's own rules, the serial and the model are ernic_target_alloc()'s. */
	if (!strcmp(nqn, NVMF_DISC_NQN)) {
		snprintf(err, errlen, "nqn '%s': is the discovery NQN, served on every port already", nqn);
		return -EINVAL;
	}
	rc = ernic_target_alloc(&nvmf->home->cfg, opts, &tgt, err, errlen);
	if (rc)
		return rc;
	tgt->nvmf = nvmf;
	pthread_mutex_lock(&nvmf->lock);
	if (nvmf_subsys_slot_locked(nvmf, nqn) >= 0) {
		snprintf(err, errlen, "nqn '%s': a subsystem with this NQN exists", nqn);
		rc = -EEXIST;
	} else {
		for (slot = 0; slot < ERNIC_NVMF_MAX_SUBSYSTEMS && nvmf->subsys[slot]; slot++)
			;
		if (slot == ERNIC_NVMF_MAX_SUBSYSTEMS) {
			snprintf(err, errlen, "nqn '%s': at most %u subsystems", nqn, ERNIC_NVMF_MAX_SUBSYSTEMS);
			rc = -ENOSPC;
		} else {
			nvmf->subsys[slot] = tgt;
		}
	}
	/* Linked to no port yet: the discovery log does not change. */
	pthread_mutex_unlock(&nvmf->lock);
	if (rc) {
		ernic_target_destroy(tgt);
		return rc;
	}
	if (out)
		*out = tgt;
	return 0;
}

int ernic_nvmf_subsys_remove(struct ernic_nvmf *nvmf, const char *subnqn, char *err, size_t errlen)
{
	struct ernic_target *tgt;
	uint32_t linked = 0;
	int slot, rc = 0;

	pthread_mutex_lock(&nvmf->lock);
	slot = nvmf_subsys_slot_locked(nvmf, subnqn);
	if (slot < 0) {
		pthread_mutex_unlock(&nvmf->lock);
		snprintf(err, errlen, "nqn '%s': no such subsystem", subnqn);
		return -ENOENT;
	}
	/* The table's reference is this function's now, put below. */
	tgt = nvmf->subsys[slot];
	for (unsigned int p = 0; p < ERNIC_NVMF_MAX_PORTS; p++) {
		linked |= nvmf->ports[p].subsys & (1u << slot);
		nvmf->ports[p].subsys &= ~(1u << slot);
	}
	/* Its records leave the log: announced while the table still names it, before anyone can read the log. */
	nvmf_disc_changed_locked(nvmf, linked);
	nvmf->subsys[slot] = NULL;
	pthread_mutex_unlock(&nvmf->lock);

	/* No Connect binds to it from here (out of the table), and none creates a controller. */
	pthread_mutex_lock(&tgt->lock);
	tgt->removed = true;
	pthread_mutex_unlock(&tgt->lock);
	ernic_target_fail_ctrlrs(tgt, NULL);
	/* Every namespace goes, whatever one's final flush says; the first failure is reported. */
	for (uint32_t nsid = 1; nsid <= ERNIC_MAX_NS; nsid++) {
		char why[ERNIC_ERRLEN];
		int r;

		if (!ernic_target_ns(tgt, nsid))
			continue;
		r = ernic_target_remove_ns(tgt, nsid, why, sizeof(why));
		if (r && !rc) {
			rc = r;
			snprintf(err, errlen, "nqn '%s': %s", subnqn, why);
		}
	}
	/* Its queues, closing, and any lookup still holding it keep the rest until they are done. */
	ernic_target_put(tgt);
	return rc;
}

/* ------------------------------------------------------------------- ports */

static struct ernic_nvmf_port *nvmf_port_locked(struct ernic_nvmf *nvmf, uint16_t portid)
{
	for (unsigned int i = 0; portid && i < ERNIC_NVMF_MAX_PORTS; i++)
		if (nvmf->ports[i].portid == portid)
			return &nvmf->ports[i];
	return NULL;
}

uint16_t ernic_nvmf_port_find(struct ernic_nvmf *nvmf, uint8_t trtype, const char *traddr, const char *trsvcid)
{
	uint16_t portid = 0;

	pthread_mutex_lock(&nvmf->lock);
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_PORTS && !portid; i++)
		if (nvmf->ports[i].portid && (!trtype || nvmf->ports[i].trtype == trtype) &&
		    !strcmp(nvmf->ports[i].traddr, traddr) && !strcmp(nvmf->ports[i].trsvcid, trsvcid))
			portid = nvmf->ports[i].portid;
	pthread_mutex_unlock(&nvmf->lock);
	return portid;
}

int ernic_nvmf_port_add(struct ernic_nvmf *nvmf, uint8_t trtype, const char *traddr, const char *trsvcid,
			uint16_t *portid, char *err, size_t errlen)
{
	struct ernic_nvmf_port *port = NULL;
	struct in6_addr a6;

	if (strlen(traddr) >= sizeof(port->traddr) || strlen(trsvcid) >= sizeof(port->trsvcid) || !traddr[0] ||
	    !trsvcid[0]) {
		snprintf(err, errlen, "listener '%s:%s': bad address or service", traddr, trsvcid);
		return -EINVAL;
	}
	if (ernic_nvmf_port_find(nvmf, trtype, traddr, trsvcid)) {
		snprintf(err, errlen, "listener '%s:%s': exists", traddr, trsvcid);
		return -EEXIST;
	}
	pthread_mutex_lock(&nvmf->lock);
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_PORTS && !port; i++)
		if (!nvmf->ports[i].portid)
			port = &nvmf->ports[i];
	if (!port) {
		pthread_mutex_unlock(&nvmf->lock);
		snprintf(err, errlen, "listener '%s:%s': at most %u listeners", traddr, trsvcid, ERNIC_NVMF_MAX_PORTS);
		return -ENOSPC;
	}
	port->trtype = trtype;
	port->adrfam = inet_pton(AF_INET6, traddr, &a6) == 1 ? NVMF_ADRFAM_IPV6 : NVMF_ADRFAM_IPV4;
	snprintf(port->traddr, sizeof(port->traddr), "%s", traddr);
	snprintf(port->trsvcid, sizeof(port->trsvcid), "%s", trsvcid);
	port->subsys = 0;
	for (unsigned int g = 0; g <= ERNIC_MAX_ANA_GROUPS; g++)
		atomic_store(&port->ana[g], NVME_ANA_OPTIMIZED);
	/* Port IDs are not reused while the set lives: a host never mistakes a new port for an old one. */
	port->portid = nvmf->next_portid++;
	*portid = port->portid;
	pthread_mutex_unlock(&nvmf->lock);
	return 0;
}

int ernic_nvmf_port_remove(struct ernic_nvmf *nvmf, uint16_t portid, char *err, size_t errlen)
{
	struct ernic_nvmf_port *port;

	pthread_mutex_lock(&nvmf->lock);
	port = nvmf_port_locked(nvmf, portid);
	if (!port) {
		pthread_mutex_unlock(&nvmf->lock);
		snprintf(err, errlen, "port %u: no such listener", portid);
		return -ENOENT;
	}
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_SUBSYSTEMS; i++)
		if (nvmf->subsys[i] && (port->subsys & (1u << i)))
			ernic_target_fail_ctrlrs(nvmf->subsys[i], port);
	ernic_target_fail_ctrlrs(nvmf->home, port);
	if (port->subsys)
		nvmf_disc_changed_locked(nvmf, port->subsys);
	port->subsys = 0;
	port->portid = 0;
	pthread_mutex_unlock(&nvmf->lock);
	return 0;
}

static int nvmf_link_change(struct ernic_nvmf *nvmf, uint16_t portid, const char *subnqn, bool link, char *err,
			    size_t errlen)
{
	struct ernic_nvmf_port *port;
	int slot, rc = 0;

	pthread_mutex_lock(&nvmf->lock);
	port = nvmf_port_locked(nvmf, portid);
	slot = nvmf_subsys_slot_locked(nvmf, subnqn);
	if (!port) {
		snprintf(err, errlen, "port %u: no such listener", portid);
		rc = -ENOENT;
	} else if (slot < 0) {
		snprintf(err, errlen, "nqn '%s': no such subsystem", subnqn);
		rc = -ENOENT;
	} else if (link == !!(port->subsys & (1u << slot))) {
		snprintf(err, errlen, "nqn '%s': %s listener %s:%s", subnqn, link ? "already on" : "not on",
			 port->traddr, port->trsvcid);
		rc = link ? -EEXIST : -ENOENT;
	} else if (link) {
		port->subsys |= 1u << slot;
		nvmf_disc_changed_locked(nvmf, 1u << slot);
	} else {
		port->subsys &= ~(1u << slot);
		/* The path is gone: its controllers fail, and a multipath host moves to another. */
		ernic_target_fail_ctrlrs(nvmf->subsys[slot], port);
		nvmf_disc_changed_locked(nvmf, 1u << slot);
	}
	pthread_mutex_unlock(&nvmf->lock);
	return rc;
}

int ernic_nvmf_link(struct ernic_nvmf *nvmf, uint16_t portid, const char *subnqn, char *err, size_t errlen)
{
	return nvmf_link_change(nvmf, portid, subnqn, true, err, errlen);
}

int ernic_nvmf_unlink(struct ernic_nvmf *nvmf, uint16_t portid, const char *subnqn, char *err, size_t errlen)
{
	return nvmf_link_change(nvmf, portid, subnqn, false, err, errlen);
}

uint32_t ernic_nvmf_port_links(struct ernic_nvmf *nvmf, uint16_t portid)
{
	struct ernic_nvmf_port *port;
	uint32_t links;

	pthread_mutex_lock(&nvmf->lock);
	port = nvmf_port_locked(nvmf, portid);
	links = port ? port->subsys : 0;
	pthread_mutex_unlock(&nvmf->lock);
	return links;
}

/* --------------------------------------------------------------------- ANA */

static const char *const ana_state_names[] = {
	[NVME_ANA_OPTIMIZED] = "optimized",
	[NVME_ANA_NONOPTIMIZED] = "non-optimized",
	[NVME_ANA_INACCESSIBLE] = "inaccessible",
	[NVME_ANA_PERSISTENT_LOSS] = "persistent-loss",
	[NVME_ANA_CHANGE] = "change",
};

const char *ernic_ana_state_name(uint8_t state)
{
	return state < ERNIC_ARRAY_SIZE(ana_state_names) ? ana_state_names[state] : NULL;
}

uint8_t ernic_ana_state_parse(const char *name)
{
	for (uint8_t s = 0; s < ERNIC_ARRAY_SIZE(ana_state_names); s++)
		if (ana_state_names[s] && !strcmp(ana_state_names[s], name))
			return s;
	return 0;
}

int ernic_nvmf_ana_set(struct ernic_nvmf *nvmf, uint16_t portid, uint32_t grpid, uint8_t state, char *err,
		       size_t errlen)
{
	struct ernic_nvmf_port *port;
	bool changed = false;

	if (!ernic_ana_state_name(state)) {
		snprintf(err, errlen, "state %u: not an ANA state", state);
		return -EINVAL;
	}
	if (grpid > ERNIC_MAX_ANA_GROUPS) {
		snprintf(err, errlen, "group %u: must be 1..%u (0 for every group)", grpid, ERNIC_MAX_ANA_GROUPS);
		return -EINVAL;
	}
	pthread_mutex_lock(&nvmf->lock);
	port = nvmf_port_locked(nvmf, portid);
	if (!port) {
		pthread_mutex_unlock(&nvmf->lock);
		snprintf(err, errlen, "port %u: no such listener", portid);
		return -ENOENT;
	}
	for (uint32_t g = grpid ? grpid : 1; g <= (grpid ? grpid : ERNIC_MAX_ANA_GROUPS); g++)
		changed |= atomic_exchange(&port->ana[g], state) != state;
	if (changed)
		nvmf_ana_changed_locked(nvmf, port);
	pthread_mutex_unlock(&nvmf->lock);
	return 0;
}

uint8_t ernic_nvmf_ana_get(struct ernic_nvmf *nvmf, uint16_t portid, uint32_t grpid)
{
	struct ernic_nvmf_port *port;
	uint8_t state = 0;

	pthread_mutex_lock(&nvmf->lock);
	port = nvmf_port_locked(nvmf, portid);
	if (port && grpid >= 1 && grpid <= ERNIC_MAX_ANA_GROUPS)
		state = atomic_load(&port->ana[grpid]);
	pthread_mutex_unlock(&nvmf->lock);
	return state;
}

void *ernic_ana_log_build(struct ernic_ctrlr *ctrlr, bool rgo, size_t *size)
{
	struct ernic_target *tgt = ctrlr->tgt;
	uint64_t chgcnt = tgt->nvmf ? atomic_load(&tgt->nvmf->ana_chgcnt) : 1;
	size_t cap = sizeof(struct nvme_ana_log_hdr) +
		     ERNIC_MAX_ANA_GROUPS * sizeof(struct nvme_ana_group_desc) + ERNIC_MAX_NS * sizeof(uint32_t);
	uint8_t *page = calloc(1, cap);
	struct nvme_ana_log_hdr *hdr = (struct nvme_ana_log_hdr *)page;
	size_t off = sizeof(*hdr);

	if (!page)
		return NULL;
	hdr->chgcnt = chgcnt;
	/* Every group with a namespace, in ANAGRPID order, as nvmet reports its enabled groups. */
	for (uint32_t g = 1; g <= ERNIC_MAX_ANA_GROUPS; g++) {
		struct nvme_ana_group_desc d = { .grpid = g, .chgcnt = chgcnt };
		uint32_t *nsids = (uint32_t *)(page + off + sizeof(d));

		for (uint32_t nsid = 1; nsid <= ERNIC_MAX_NS; nsid++) {
			const struct ernic_ns *ns = ernic_target_ns(tgt, nsid);

			if (ns && ns->anagrpid == g) {
				if (!rgo)
					nsids[d.nnsids] = nsid;
				d.nnsids++;
			}
		}
		if (!d.nnsids)
			continue;
		d.state = ctrlr->port ? atomic_load(&ctrlr->port->ana[g]) : NVME_ANA_OPTIMIZED;
		if (rgo)
			d.nnsids = 0;
		memcpy(page + off, &d, sizeof(d));
		off += sizeof(d) + d.nnsids * sizeof(uint32_t);
		hdr->ngrps++;
	}
	*size = off;
	return page;
}

/* ---------------------------------------------------- Connect and discovery */

uint16_t ernic_nvmf_connect_bind(struct ernic_sq *sq, const char *subnqn, bool discovery)
{
	struct ernic_nvmf *nvmf = sq->tgt->nvmf;
	struct ernic_nvmf_port *port;
	int slot = -1;

	pthread_mutex_lock(&nvmf->lock);
	port = nvmf_port_locked(nvmf, sq->portid);
	if (port && !discovery) {
		slot = nvmf_subsys_slot_locked(nvmf, subnqn);
		/* A subsystem not linked to this port is not there, as nvmet answers. */
		if (slot >= 0 && !(port->subsys & (1u << slot)))
			slot = -1;
	}
	if (!port || (!discovery && slot < 0)) {
		pthread_mutex_unlock(&nvmf->lock);
		return NVME_SC_CONNECT_INVALID_PARAM;
	}
	sq->nvmf_port = port;
	sq->ana = port->ana;
	/* The discovery controller is the port's home target's, whatever the queue was bound to before. */
	ernic_sq_move(sq, discovery ? nvmf->home : nvmf->subsys[slot]);
	pthread_mutex_unlock(&nvmf->lock);
	return NVME_SC_SUCCESS;
}

void ernic_nvmf_connect_unbind(struct ernic_sq *sq)
{
	ernic_sq_move(sq, sq->tgt->nvmf->home);
}

void ernic_nvmf_check_keep_alive(struct ernic_nvmf *nvmf)
{
	pthread_mutex_lock(&nvmf->lock);
	ernic_target_check_keep_alive_timers(nvmf->home);
	for (unsigned int i = 0; i < ERNIC_NVMF_MAX_SUBSYSTEMS; i++)
		if (nvmf->subsys[i])
			ernic_target_check_keep_alive_timers(nvmf->subsys[i]);
	pthread_mutex_unlock(&nvmf->lock);
}

void *ernic_nvmf_disc_log(struct ernic_nvmf *nvmf, const char *hostnqn, size_t *size)
{
	struct nvmf_disc_log_hdr *hdr;
	struct nvmf_disc_log_entry *e;
	uint8_t *page;

	page = calloc(1, sizeof(*hdr) +
				 (size_t)ERNIC_NVMF_MAX_PORTS * ERNIC_NVMF_MAX_SUBSYSTEMS * sizeof(*e));
	if (!page)
		return NULL;
	hdr = (struct nvmf_disc_log_hdr *)page;
	e = (struct nvmf_disc_log_entry *)(page + sizeof(*hdr));
	/* One snapshot under the lock: a change meanwhile shows in the next generation, whole. */
	pthread_mutex_lock(&nvmf->lock);
	hdr->genctr = nvmf->genctr;
	for (unsigned int p = 0; p < ERNIC_NVMF_MAX_PORTS; p++) {
		const struct ernic_nvmf_port *port = &nvmf->ports[p];

		for (unsigned int i = 0; port->portid && i < ERNIC_NVMF_MAX_SUBSYSTEMS; i++) {
			const struct ernic_target *tgt = nvmf->subsys[i];

			/* As Linux nvmet: only what the reading host may connect to. */
			if (!tgt || !(port->subsys & (1u << i)) || !ernic_target_host_allowed(tgt, hostnqn))
				continue;
			e->trtype = port->trtype;
			e->adrfam = port->adrfam;
			e->subtype = NVMF_SUBTYPE_NVME;
			e->treq = ERNIC_DISC_TREQ;
			e->portid = port->portid;
			e->cntlid = NVMF_CNTLID_DYNAMIC;
			e->asqsz = ERNIC_ADMIN_QUEUE_SIZE;
			ernic_copy_padded(e->trsvcid, sizeof(e->trsvcid), port->trsvcid);
			ernic_copy_padded(e->traddr, sizeof(e->traddr), port->traddr);
			if (e->trtype == NVMF_TRTYPE_RDMA)
				ernic_disc_entry_rdma_tsas(e);
			snprintf(e->subnqn, sizeof(e->subnqn), "%s", tgt->subnqn);
			e++;
			hdr->numrec++;
		}
	}
	pthread_mutex_unlock(&nvmf->lock);
	*size = sizeof(*hdr) + hdr->numrec * sizeof(*e);
	return page;
}
