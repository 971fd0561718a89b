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
    int borrowed;        /* memory this communicator did not allocate: owned by one registration */
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
/* The allocation holding [ptr, ptr + bytes), whoever made it: this
 * communicator (weft_mem_alloc), the process's shareable allocator
 * (weft_mem_alloc_shareable) or anyone the backend can trace (mem_query);
 * *id tells two allocations at one address apart (ids from 1 << 62 up to
 * 1 << 63: weft_mem_alloc_shareable's). WEFT_ERR_NOT_FOUND: memory that
 * cannot be shared (no log line). */
weft_status_t weft_mem_identify(weft_comm_t *comm, const void *ptr, size_t bytes, weft_gpu_alloc_t *alloc,
                                uint64_t *id);
/* At destroy: frees every allocation the communicator still has
 * (weft_mem_alloc), once nothing queued uses them. */
void weft_mem_free_all(weft_comm_t *comm);
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

/*
 * The registration table: a device-visible table of the buffers this rank
 * has mapped from every rank of the host, for the zero-copy collectives.
 * Cell (row, owner) = row * nranks + owner holds a pointer and a
 * generation; the table is char *ptr[WEFT_REG_ROWS * nranks], then
 * uint64_t gen[WEFT_REG_ROWS * nranks], then one uint64_t the kernels count
 * their zero-copy collectives in. Rows below WEFT_REG_WINDOW_ROWS are the
 * collective windows' (written by every rank alike, generation 0); the
 * others are each owner's registrations: the owner alone picks the row,
 * gives it a generation it never reuses, and pushes it to every peer's
 * IPC worker (weft_reg_share), which maps it and fills its cell before
 * answering. So a cell is filled on every rank before its owner can
 * publish it in a collective, and a collective never waits on the host for
 * other ranks. Dropping pushes the same way (weft_reg_unshare).
 */
#define WEFT_REG_WINDOW_ROWS 32
#define WEFT_REG_ROWS 64
/* The device table (created on first use), or NULL on failure. */
void *weft_reg_table(weft_comm_t *comm);
/* Writes cell (@p row, @p owner) of this rank's table. */
weft_status_t weft_reg_set_cell(weft_comm_t *comm, int row, int owner, void *ptr, uint64_t gen);
/* Gives @p m (a local IPC registration) one of this rank's rows, fills our
 * cell and has every peer map it (on their IPC workers, acked); *row and
 * *gen on success. On failure no peer keeps it. Caller holds no lock. */
weft_status_t weft_reg_share(weft_comm_t *comm, weft_mem_t *m, int *row, uint64_t *gen);
/* The same from @p m's serialized handle and address (weft_mem_serialize,
 * weft_mem_ptr), for a thread that must not touch @p m: its owner may
 * deregister it meanwhile (the peers' imports then fail: not shared). */
weft_status_t weft_reg_share_handle(weft_comm_t *comm, const weft_mem_handle_t *h, void *ptr, int *row,
                                    uint64_t *gen);
/* Has every peer drop (@p row, @p gen) (@p tell: 0 at destroy, where the
 * peers free their tables themselves) and frees the row; the collectives
 * that used it have completed on this rank. */
weft_status_t weft_reg_unshare(weft_comm_t *comm, int row, uint64_t gen, int tell);
/* The IPC worker's handler (installed at init). */
weft_status_t weft_reg_serve(void *comm, uint32_t kind, const uint8_t *body, size_t len);
/* How many collectives the kernels ran zero-copy on this rank. */
uint64_t weft_reg_zc_count(weft_comm_t *comm);
/* At destroy, once the IPC service has stopped. */
void weft_reg_table_free(weft_comm_t *comm);

#endif
