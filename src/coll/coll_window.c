/*
 * Collective windows: user buffers that every rank of the host has mapped
 * from every other, so that the large-message allreduce reads its peers'
 * inputs and writes their outputs, and allgather and reduce-scatter read
 * their peers' inputs, in place of staging through scratch
 * (weft_coll_zc_* in src/kernels/coll_common.h).
 *
 * Registration is collective and in the same order on every rank: the k-th
 * window of every rank takes the same slot, and the device table holds,
 * for slot w, each rank's buffer as mapped here (table[w * nranks + p]).
 * A collective looks its buffers up by address; a kernel learns its peers'
 * slots and offsets at its first barrier, so ranks may pass different
 * offsets, and all of them take the zero-copy path or none does.
 */
#include "config.h"
#include "coll.h"
#include "comm.h"
#include "mem.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

struct weft_comm_window {
    weft_comm_t *comm;
    int slot;
    char *base;
    size_t bytes;
    weft_mem_t *mem;     /* our registration */
    weft_mem_t **remote; /* [nranks]: the peers' buffers, imported */
};

struct weft_window_set {
    weft_comm_window_t *slot[WEFT_COLL_MAX_WINDOWS];
    weft_gpu_alloc_t table; /* device-visible: char *[WEFT_COLL_MAX_WINDOWS * nranks] */
};

static void window_free(weft_comm_window_t *w)
{
    for (int p = 0; w->remote && p < w->comm->nranks; p++)
        if (w->remote[p])
            weft_mem_deregister(w->remote[p]);
    if (w->mem)
        weft_mem_deregister(w->mem);
    free(w->remote);
    free(w);
}

static weft_status_t window_set(weft_comm_t *comm, struct weft_window_set **out)
{
    struct weft_window_set *set = comm->windows;
    weft_status_t status;
    if (!set) {
        if ((status = weft_comm_on_destroy(comm, weft_window_set_destroy)) != WEFT_OK)
            return status;
        if (!(set = calloc(1, sizeof(*set))))
            return WEFT_ERR_NO_MEMORY;
        status = comm->gpu->mem_alloc(comm->gctx, WEFT_COLL_MAX_WINDOWS * (size_t)comm->nranks * sizeof(char *), 0,
                                      &set->table);
        if (status != WEFT_OK) {
            free(set);
            return status;
        }
        comm->windows = set;
    }
    *out = set;
    return WEFT_OK;
}

/* Every rank says whether its registration worked, so that one rank's
 * failure fails all of them instead of leaving them in the exchange;
 * *bad: the first rank that failed, or -1. */
static weft_status_t registered_everywhere(weft_comm_t *comm, weft_status_t mine, int *bad)
{
    int32_t *ok = calloc((size_t)comm->nranks, sizeof(*ok));
    weft_status_t status;
    *bad = -1;
    if (!ok)
        return WEFT_ERR_NO_MEMORY;
    ok[comm->rank] = mine == WEFT_OK;
    status = weft_bootstrap_allgather(comm, ok, sizeof(*ok));
    for (int p = 0; p < comm->nranks && status == WEFT_OK; p++)
        if (!ok[p]) {
            *bad = p;
            status = mine != WEFT_OK ? mine : WEFT_ERR_REMOTE;
        }
    free(ok);
    return status;
}

weft_status_t weft_comm_window_register(weft_comm_t *comm, void *buf, size_t bytes, weft_comm_window_t **out)
{
    struct weft_window_set *set;
    weft_comm_window_t *w;
    char **row;
    weft_status_t status;
    int slot = -1, bad = -1;

    if (!comm || !buf || bytes == 0 || !out)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (comm->local_size != comm->nranks || !(comm->caps & WEFT_CAP_IPC)) {
        weft_error_note("window: every rank must be on this host and the backend share memory (%d of %d ranks "
                        "are here)",
                        comm->local_size, comm->nranks);
        return WEFT_ERR_UNSUPPORTED;
    }
    if ((status = window_set(comm, &set)) != WEFT_OK)
        return status;
    for (int s = 0; s < WEFT_COLL_MAX_WINDOWS && slot < 0; s++)
        if (!set->slot[s])
            slot = s;
    if (slot < 0) {
        weft_error_note("window: at most %d windows at once", WEFT_COLL_MAX_WINDOWS);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    w = calloc(1, sizeof(*w));
    row = calloc((size_t)comm->nranks, sizeof(*row));
    if (!w || !row || !(w->remote = calloc((size_t)comm->nranks, sizeof(*w->remote)))) {
        free(w);
        free(row);
        return WEFT_ERR_NO_MEMORY;
    }
    w->comm = comm;
    w->slot = slot;
    w->base = buf;
    w->bytes = bytes;
    status = registered_everywhere(comm, weft_mem_register(comm, buf, bytes, WEFT_TRANSPORT_IPC, &w->mem), &bad);
    if (status == WEFT_OK)
        status = weft_mem_exchange(comm, w->mem, w->remote);
    row[comm->rank] = buf;
    for (int p = 0; p < comm->nranks && status == WEFT_OK; p++)
        if (p != comm->rank)
            status = weft_mem_ptr(w->remote[p], (void **)&row[p]);
    if (status == WEFT_OK)
        status = weft_comm_to_device(comm, (char **)set->table.ptr + (size_t)slot * (size_t)comm->nranks, row,
                                     (size_t)comm->nranks * sizeof(*row));
    free(row);
    if (status != WEFT_OK) {
        if (bad >= 0)
            weft_error(WEFT_SUB_COLL, "rank %d: window registration failed: rank %d could not register its buffer",
                       comm->rank, bad);
        else
            weft_error(WEFT_SUB_COLL, "rank %d: window registration failed: %s", comm->rank,
                       weft_status_string(status));
        window_free(w);
        return status;
    }
    set->slot[slot] = w;
    *out = w;
    return WEFT_OK;
}

weft_status_t weft_comm_window_deregister(weft_comm_window_t *w)
{
    weft_comm_t *comm;
    weft_status_t status;
    if (!w)
        return WEFT_ERR_INVALID_ARGUMENT;
    comm = w->comm;
    /* no peer still reads or writes through it: every rank is here */
    status = weft_bootstrap_barrier(comm);
    comm->windows->slot[w->slot] = NULL;
    window_free(w);
    return status;
}

int weft_window_find(const weft_comm_t *comm, const void *ptr, size_t bytes, uint64_t *off)
{
    const char *p = ptr;
    for (int s = 0; comm->windows && s < WEFT_COLL_MAX_WINDOWS; s++) {
        const weft_comm_window_t *w = comm->windows->slot[s];
        if (w && p >= w->base && bytes <= w->bytes && (size_t)(p - w->base) <= w->bytes - bytes) {
            *off = (uint64_t)(p - w->base);
            return s;
        }
    }
    return -1;
}

char *const *weft_window_table(const weft_comm_t *comm)
{
    return comm->windows ? (char *const *)comm->windows->table.ptr : NULL;
}

void weft_window_set_destroy(weft_comm_t *comm)
{
    struct weft_window_set *set = comm->windows;
    if (!set)
        return;
    for (int s = 0; s < WEFT_COLL_MAX_WINDOWS; s++)
        if (set->slot[s])
            window_free(set->slot[s]);
    comm->gpu->mem_free(comm->gctx, &set->table);
    free(set);
    comm->windows = NULL;
}

int weft_window_peer(const weft_comm_t *comm, const weft_comm_window_t *w, int peer, char **ptr, size_t *bytes)
{
    void *p = NULL;
    int found = 0;
    for (int s = 0; w && comm->windows && s < WEFT_COLL_MAX_WINDOWS && !found; s++)
        found = comm->windows->slot[s] == w;
    if (!found)
        return 0;
    if (peer == comm->rank) {
        *ptr = w->base;
        *bytes = w->bytes;
        return 1;
    }
    if (!w->remote[peer])
        return -1;
    if (weft_mem_ptr(w->remote[peer], &p) != WEFT_OK)
        p = NULL;
    *ptr = p;
    return weft_mem_size(w->remote[peer], bytes) == WEFT_OK ? 1 : -1;
}
