/* SPDX-License-Identifier: MIT */
/*
 * place.h - a port's places: how many connections (NVMe/TCP) or queue pairs
 * (NVMe/RDMA) it serves at once, and who gets one.
 *
 * Each connection holds a place from the moment its port takes it until it
 * closes. A host could otherwise hold every place with sockets or queue pairs
 * that never Connect, reopened as they close, and keep allowed hosts out for
 * as long as it liked (nvmet-tcp has no limit to hold). So when every place is
 * taken the oldest connection that is no queue yet (no Connect) is given
 * notice and the newcomer its place; a queue is never evicted. Discovery is
 * open to any host, so discovery queues hold at most half the places.
 *
 * The rules are the same for both transports and live here, under the port's
 * lock (ernic_places.lock): the _locked forms for a caller that holds it, the
 * others take it. Each transport does the rest (closing an evicted
 * connection, logging) its own way.
 */
#ifndef ERNIC_PLACE_H
#define ERNIC_PLACE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ernic/nvme_spec.h"

/* One connection's hold on its port's place; every field under the port's lock. */
struct ernic_place {
	struct ernic_place *next; /* in ernic_places.head, newest first */
	/*
	 * Its Connect succeeded. The connection's own thread reads it without
	 * the lock: it is the only writer.
	 */
	bool connected;
	/* Its Connect is running: the port gives its place to no newer connection meanwhile. */
	bool connecting;
	/*
	 * The port gave its place to a newer connection before it Connected
	 * (ernic_places_make_room_locked()): it closes at its next check, or at
	 * its Connect, which does not run (ernic_place_claim_locked()).
	 */
	bool evicted;
	/* It holds one of the port's discovery places (ernic_place_admit_discovery_locked()). */
	bool discovery;
};

/* A port's places; under @lock. */
struct ernic_places {
	pthread_mutex_t *lock;	   /* the port's, which guards more than these */
	unsigned int max;	   /* places: connections, or RDMA queue pairs */
	unsigned int nr;	   /* taken, the evicted not closed yet among them */
	unsigned int nr_evicted;   /* of @nr, evicted and not closed yet */
	unsigned int nr_discovery; /* of @nr, those holding a discovery place */
	struct ernic_place *head;  /* every taken place, newest first */
};

/* Places held by connections that stay: an evicted one is on its way out. */
static inline unsigned int ernic_places_held(const struct ernic_places *ps)
{
	return ps->nr - ps->nr_evicted;
}

static inline void ernic_places_take_locked(struct ernic_places *ps, struct ernic_place *p)
{
	p->next = ps->head;
	ps->head = p;
	ps->nr++;
}

/* The connection closed: its place, and its discovery place if it held one, are free. */
static inline void ernic_places_release_locked(struct ernic_places *ps, struct ernic_place *p)
{
	for (struct ernic_place **pp = &ps->head; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	ps->nr--;
	if (p->evicted)
		ps->nr_evicted--;
	if (p->discovery)
		ps->nr_discovery--;
}

/*
 * Every place is taken: give the oldest connection that is no queue yet
 * notice to close, so that a newcomer can have its place. Returns the place
 * evicted, or NULL: none to evict, or already as many evicted and not
 * closed yet as there are places (a burst of newcomers faster than the
 * evicted close, within a check period each, would otherwise hold a thread
 * and its buffers apiece meanwhile).
 */
static inline struct ernic_place *ernic_places_make_room_locked(struct ernic_places *ps)
{
	struct ernic_place *oldest = NULL;

	if (ps->nr_evicted >= ps->max)
		return NULL;
	/* Newest first: the last one found is the oldest. */
	for (struct ernic_place *p = ps->head; p; p = p->next)
		if (!p->evicted && !p->connected && !p->connecting)
			oldest = p;
	if (oldest) {
		oldest->evicted = true;
		ps->nr_evicted++;
	}
	return oldest;
}

/*
 * A Connect on a connection that is no queue yet first claims its place:
 * one the port has given to a newer connection closes instead, its Connect
 * not run. Were an evicted connection's Connect to keep its place, a host
 * could take the port one over its limit with each eviction, as often as it
 * liked. Claimed, the place is not given away until the Connect is done
 * (ernic_place_connect_done_locked()).
 */
static inline bool ernic_place_claim_locked(struct ernic_place *p)
{
	p->connecting = !p->evicted;
	return p->connecting;
}

/*
 * The Connect is done: the connection is a queue now (@connected), or it is
 * again one that may be evicted. One step, so that no newcomer finds it
 * neither connecting nor connected in between.
 */
static inline void ernic_place_connect_done_locked(struct ernic_place *p, bool connected)
{
	p->connecting = false;
	if (connected)
		p->connected = true;
}

/* ernic_place_claim_locked(), taking the port's lock. */
static inline bool ernic_place_claim(struct ernic_places *ps, struct ernic_place *p)
{
	bool claimed;

	pthread_mutex_lock(ps->lock);
	claimed = ernic_place_claim_locked(p);
	pthread_mutex_unlock(ps->lock);
	return claimed;
}

/* ernic_place_connect_done_locked(), taking the port's lock. */
static inline void ernic_place_connect_done(struct ernic_places *ps, struct ernic_place *p, bool connected)
{
	pthread_mutex_lock(ps->lock);
	ernic_place_connect_done_locked(p, connected);
	pthread_mutex_unlock(ps->lock);
}

/* Whether the port gave this connection's place to a newer one (ernic_places_make_room_locked()). */
static inline bool ernic_place_evicted(struct ernic_places *ps, const struct ernic_place *p)
{
	bool evicted;

	pthread_mutex_lock(ps->lock);
	evicted = p->evicted;
	pthread_mutex_unlock(ps->lock);
	return evicted;
}

/*
 * Of @places, how many discovery queues may hold at once: half, and at
 * least one, so a host that may not reach the subsystem still finds as many
 * free for those that may.
 */
static inline unsigned int ernic_discovery_places(unsigned int places)
{
	return places > 1 ? places / 2 : 1;
}

/*
 * A Connect naming the discovery NQN (ernic_transport_ops.admit_discovery):
 * a connection already holding a discovery place keeps it; else it takes
 * one while there are fewer than ernic_discovery_places(). Held until the
 * connection closes (ernic_places_release_locked()). Returns the Connect's
 * status: Connect Controller Busy when they are all taken.
 */
static inline uint16_t ernic_place_admit_discovery_locked(struct ernic_places *ps, struct ernic_place *p)
{
	if (!p->discovery && ps->nr_discovery < ernic_discovery_places(ps->max)) {
		p->discovery = true;
		ps->nr_discovery++;
	}
	return p->discovery ? NVME_SC_SUCCESS : NVME_SC_CONNECT_CTRL_BUSY;
}

/* ernic_place_admit_discovery_locked(), taking the port's lock. */
static inline uint16_t ernic_place_admit_discovery(struct ernic_places *ps, struct ernic_place *p)
{
	uint16_t status;

	pthread_mutex_lock(ps->lock);
	status = ernic_place_admit_discovery_locked(ps, p);
	pthread_mutex_unlock(ps->lock);
	return status;
}

#endif /* ERNIC_PLACE_H */
