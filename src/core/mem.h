/* Device memory and registrations: what the core's files share of them. */
#ifndef WEFT_MEM_H
#define WEFT_MEM_H

#include "comm.h"

/* One allocation of the communicator's backend (weft_mem_alloc). */
typedef struct weft_alloc_rec {
    struct weft_alloc_rec *next;
    weft_gpu_alloc_t a;
    int nregs;           /* registrations that use it */
    int exported;        /* IPC export registered with the fd service */
    uint64_t export_id;
    weft_gpu_ipc_export_t ipc;
} weft_alloc_rec_t;

/* A registration (local) or an import of a peer's (imported). */
struct weft_mem {
    weft_comm_t *comm;
    int owner;
    int imported;           /* came from weft_mem_deserialize */
    void *ptr;              /* NULL if not reachable by load/store */
    size_t size;
    unsigned transports;
    weft_alloc_rec_t *alloc; /* local: the backing allocation, if any */
    size_t offset;
    void *map_base;         /* imported: the mapping and the backend's handle */
    void *map_handle;
    weft_net_mr_t *net_mr[WEFT_NET_COUNT];    /* local: network registrations */
    weft_net_rkey_t net_rkey[WEFT_NET_COUNT]; /* how peers name it on each network */
};

/* weft_mem_alloc with mem_alloc flags (WEFT_GPU_MEM_SYNC for memory polled
 * across devices); freed by weft_mem_free. */
weft_status_t weft_mem_alloc_flags(weft_comm_t *comm, size_t bytes, unsigned flags, void **ptr);
/* What a network transport needs of a registration. */
weft_net_mr_t *weft_mem_net_mr(const weft_mem_t *mem, int idx);
const weft_net_rkey_t *weft_mem_net_rkey(const weft_mem_t *mem, int idx);
/* The address of [off, off + size) of @p mem, or NULL (logged, naming
 * @p what) when it is out of range or not reachable by load/store. */
char *weft_mem_range(const weft_mem_t *mem, uint64_t off, uint64_t size, const char *what);
/* Pairwise: this registration for the peer's, imported here. */
weft_status_t weft_mem_pair_exchange(weft_comm_t *comm, int peer, const weft_mem_t *local, weft_mem_t **remote);
/* Collective: serializes @p local, gathers every rank's, imports the
 * peers' into remote[p] (remote[rank] untouched). */
weft_status_t weft_mem_exchange(weft_comm_t *comm, weft_mem_t *local, weft_mem_t **remote);

#endif
