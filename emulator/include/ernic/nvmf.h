/* SPDX-License-Identifier: MIT */
/*
 * nvmf.h - a set of subsystems behind shared ports, configured at run time,
 * as Linux nvmet's configfs tree: subsystems, ports, and the links between
 * them.
 *
 * A set has a home target that holds no namespace: a transport's port is
 * created on it (ernic_tcp_port_create(ernic_nvmf_home(set), ...)) and told
 * its Port ID, and each queue it accepts is bound at Connect to the
 * subsystem the Connect names, if that subsystem is linked to the port. The
 * discovery NQN is served on every port, with a log page listing every
 * subsystem times every port it is linked to that the reading host may use.
 *
 * Every change is announced as the spec says: a discovery log change to the
 * discovery controllers that asked for it (and a new GENCTR), an ANA change
 * to the controllers reached through the port whose state changed, and
 * namespace changes through ernic_target_*_ns(). The functions here are the
 * control path: call them from one thread at a time.
 */
#ifndef ERNIC_NVMF_H
#define ERNIC_NVMF_H

#include <stddef.h>
#include <stdint.h>

#include "ernic/ernic.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ernic_nvmf;

/**
 * ernic_nvmf_create() - an empty set
 * @cfg: queue settings (queues, queue_size, max_mr) every subsystem of the
 *	set offers, checked against the memory-region budget; its namespace
 *	fields are not used
 */
int ernic_nvmf_create(const struct ernic_backend_cfg *cfg, struct ernic_nvmf **out, char *err, size_t errlen);
/* Destroy every transport port on the home target first. */
void ernic_nvmf_destroy(struct ernic_nvmf *nvmf);
/* The target transports' ports are created on. */
struct ernic_target *ernic_nvmf_home(struct ernic_nvmf *nvmf);

/*
 * Add a subsystem without namespaces: -EEXIST for an NQN in use, -EINVAL for
 * the discovery NQN, -ENOSPC past ERNIC_NVMF_MAX_SUBSYSTEMS. *@out stays
 * valid until ernic_nvmf_subsys_remove() (ernic_target_get() for longer).
 */
#define ERNIC_NVMF_MAX_SUBSYSTEMS 32
int ernic_nvmf_subsys_add(struct ernic_nvmf *nvmf, const struct ernic_target_opts *opts,
			  struct ernic_target **out, char *err, size_t errlen);
/*
 * The subsystem named @subnqn, or NULL; with a reference, dropped with
 * ernic_target_put(), so a removal from another thread cannot free it.
 */
struct ernic_target *ernic_nvmf_subsys_get(struct ernic_nvmf *nvmf, const char *subnqn);
/* The subsystem in slot @i (0..ERNIC_NVMF_MAX_SUBSYSTEMS-1), or NULL: for listings. Referenced as above. */
struct ernic_target *ernic_nvmf_subsys_get_at(struct ernic_nvmf *nvmf, unsigned int i);
/**
 * ernic_nvmf_subsys_remove() - take a subsystem away while hosts use it
 *
 * It leaves the discovery log at once; its controllers become fatal (each
 * transport closes their queues: a host sees the path go), commands already
 * inside finish, and its namespaces are flushed and closed. Its memory goes
 * with the last queue leaving it or the last reference put, whichever is later.
 * 0; -ENOENT with @err set; or, when a namespace's final flush fails, its
 * -errno with @err naming the namespace: the subsystem is removed all the same.
 */
int ernic_nvmf_subsys_remove(struct ernic_nvmf *nvmf, const char *subnqn, char *err, size_t errlen);

/*
 * Add a port record (trtype NVMF_TRTYPE_*, numeric address and service as
 * the discovery log reports them); every ANA group starts optimized. Gives
 * its Port ID, which the transport's port must be told. -EEXIST for an
 * address and service in use.
 */
int ernic_nvmf_port_add(struct ernic_nvmf *nvmf, uint8_t trtype, const char *traddr, const char *trsvcid,
			uint16_t *portid, char *err, size_t errlen);
/* Remove a port record: every controller reached through it becomes fatal. */
int ernic_nvmf_port_remove(struct ernic_nvmf *nvmf, uint16_t portid, char *err, size_t errlen);
/*
 * The Port ID at @traddr/@trsvcid of transport @trtype (NVMF_TRTYPE_*; 0 for
 * any), 0 when none. TCP ports and RDMA CM ports are numbered apart: one
 * address and number can be a port of each.
 */
uint16_t ernic_nvmf_port_find(struct ernic_nvmf *nvmf, uint8_t trtype, const char *traddr, const char *trsvcid);
/* Link or unlink a subsystem and a port; unlinking makes the controllers of that path fatal. */
int ernic_nvmf_link(struct ernic_nvmf *nvmf, uint16_t portid, const char *subnqn, char *err, size_t errlen);
int ernic_nvmf_unlink(struct ernic_nvmf *nvmf, uint16_t portid, const char *subnqn, char *err, size_t errlen);
/* Subsystems linked to @portid, as a mask over ernic_nvmf_subsys_get_at() slots (0 for an unknown port). */
uint32_t ernic_nvmf_port_links(struct ernic_nvmf *nvmf, uint16_t portid);
/*
 * Set ANA group @grpid (1..ERNIC_NVMF_MAX_ANA_GROUPS, or 0 for every group)
 * to @state (NVME_ANA_*) through port @portid, and announce it. 0 or -errno
 * with @err.
 */
#define ERNIC_NVMF_MAX_ANA_GROUPS 8
int ernic_nvmf_ana_set(struct ernic_nvmf *nvmf, uint16_t portid, uint32_t grpid, uint8_t state, char *err,
		       size_t errlen);
/* The state of @grpid through @portid; 0 for an unknown port or group. */
uint8_t ernic_nvmf_ana_get(struct ernic_nvmf *nvmf, uint16_t portid, uint32_t grpid);
/* "optimized", "non-optimized", "inaccessible", "persistent-loss", "change"; NULL for another value. */
const char *ernic_ana_state_name(uint8_t state);
/* The state named, or 0. */
uint8_t ernic_ana_state_parse(const char *name);
/* The discovery log's generation counter. */
uint64_t ernic_nvmf_genctr(struct ernic_nvmf *nvmf);

/**
 * ernic_target_add_ns_at() - add a namespace at run time and announce it
 * @nsid: the NSID to use, 0 for the lowest free one
 * @cfg: size, bs, file and fault of a backend string
 * @ids: identifiers and ANA group, NULL for the defaults
 * @out_nsid: the NSID given, may be NULL
 *
 * Controllers that enabled it get Namespace Attribute Changed. 0, or
 * -errno with one line in @err naming the key and value.
 */
int ernic_target_add_ns_at(struct ernic_target *tgt, uint32_t nsid, const struct ernic_backend_cfg *cfg,
			   const struct ernic_ns_ids *ids, uint32_t *out_nsid, char *err, size_t errlen);

/**
 * struct ernic_ns_info - what a listing shows of a namespace
 */
struct ernic_ns_info {
	uint32_t nsid;
	uint64_t size;
	uint32_t bs;
	uint32_t anagrpid;
	char backend[16]; /* "ram" or "file" */
	const char *path; /* the file, or "" */
	uint8_t nguid[16];
	uint8_t uuid[16];
	uint8_t eui64[8];
};
/* Namespace @nsid's details: 0, or -ENOENT when it is not active. */
int ernic_target_ns_info(struct ernic_target *tgt, uint32_t nsid, struct ernic_ns_info *info);
const char *ernic_target_serial(const struct ernic_target *tgt);
const char *ernic_target_model(const struct ernic_target *tgt);
/* NULL-terminated allow list, or NULL for any host. */
const char *const *ernic_target_allow_hosts(const struct ernic_target *tgt);

#ifdef __cplusplus
}
#endif
#endif /* ERNIC_NVMF_H */
