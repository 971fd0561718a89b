/*
 * Test helper: a full mesh of memory channels between all ranks on the
 * host backend, and launches of kernel bodies on a stream of the
 * communicator's backend. Header-only, for tests that link the core.
 */
#ifndef WEFT_TAP_MESH_H
#define WEFT_TAP_MESH_H

#include <stdlib.h>
#include <string.h>
#include "comm.h"
#include "backend.h"
#include "tap/ranks.h"
#include "weft.h"

#define MESH_MAX 16

typedef struct {
    weft_comm_t *comm;
    int rank, nranks;
    size_t bytes;
    char *buf, *pkt;               /* local data and packet buffers */
    weft_mem_t *buf_mem, *pkt_mem;
    weft_connection_t *conn[MESH_MAX];
    weft_semaphore_t *sema[MESH_MAX];
    weft_mem_t *rbuf[MESH_MAX], *rpkt[MESH_MAX]; /* peers' buffers, imported */
    weft_memory_channel_t *mc[MESH_MAX], *mcp[MESH_MAX];
    weft_memory_channel_dev_t dev[MESH_MAX];     /* dst: the peer's data buffer */
    weft_memory_channel_dev_t devp[MESH_MAX];    /* dst: the peer's packet buffer */
    weft_gpu_stream_t *stream;
} mesh_t;

static inline int mesh_exchange(mesh_t *m, weft_mem_t *local, weft_mem_t **remote)
{
    weft_mem_handle_t *h = calloc((size_t)m->nranks, sizeof(*h));
    int ok = h && weft_mem_serialize(local, &h[m->rank]) == WEFT_OK &&
             weft_bootstrap_allgather(m->comm, h, sizeof(*h)) == WEFT_OK;
    for (int p = 0; ok && p < m->nranks; p++)
        if (p != m->rank)
            ok = weft_mem_deserialize(m->comm, &h[p], &remote[p]) == WEFT_OK;
    free(h);
    return ok;
}

/* Sets up the mesh; 1 on success (else a rank_fail was recorded). */
static inline int mesh_setup(mesh_t *m, weft_comm_t *comm, size_t bytes)
{
    memset(m, 0, sizeof(*m));
    m->comm = comm;
    m->bytes = bytes;
    weft_comm_rank(comm, &m->rank);
    weft_comm_size(comm, &m->nranks);
    if (m->nranks > MESH_MAX)
        return !rank_fail("mesh: too many ranks");
    if (weft_mem_alloc(comm, bytes, (void **)&m->buf) != WEFT_OK ||
        weft_mem_alloc(comm, bytes, (void **)&m->pkt) != WEFT_OK ||
        weft_mem_register(comm, m->buf, bytes, WEFT_TRANSPORT_IPC, &m->buf_mem) != WEFT_OK ||
        weft_mem_register(comm, m->pkt, bytes, WEFT_TRANSPORT_IPC, &m->pkt_mem) != WEFT_OK)
        return !rank_fail("mesh: buffers: %s", weft_get_last_error());
    if (!mesh_exchange(m, m->buf_mem, m->rbuf) || !mesh_exchange(m, m->pkt_mem, m->rpkt))
        return !rank_fail("mesh: exchange: %s", weft_get_last_error());
    for (int p = 0; p < m->nranks; p++) {
        if (p == m->rank)
            continue;
        if (weft_connection_create(comm, p, WEFT_TRANSPORT_IPC, &m->conn[p]) != WEFT_OK ||
            weft_semaphore_create(m->conn[p], &m->sema[p]) != WEFT_OK ||
            weft_memory_channel_create(m->sema[p], m->rbuf[p], m->buf_mem, m->pkt_mem, &m->mc[p]) != WEFT_OK ||
            weft_memory_channel_create(m->sema[p], m->rpkt[p], m->buf_mem, m->pkt_mem, &m->mcp[p]) != WEFT_OK)
            return !rank_fail("mesh: channel to rank %d: %s", p, weft_get_last_error());
        weft_memory_channel_device_handle(m->mc[p], &m->dev[p]);
        weft_memory_channel_device_handle(m->mcp[p], &m->devp[p]);
    }
    if (comm->gpu->stream_create(comm->gctx, &m->stream) != WEFT_OK)
        return !rank_fail("mesh: stream");
    return 1;
}

/* Launches a body on the mesh's stream and waits for it; returns the
 * device status (WEFT_OK or the recorded timeout/abort). */
static inline weft_status_t mesh_launch(mesh_t *m, weft_kernel_fn_t fn, unsigned nblocks, void *args, size_t size)
{
    weft_gpu_launch_t l = {.name = "test", .host_fn = fn, .nblocks = nblocks, .nthreads = 1, .args = args,
                           .args_size = size};
    weft_status_t st = m->comm->gpu->launch(m->comm->gctx, &l, m->stream);
    if (st != WEFT_OK)
        return st;
    m->comm->gpu->stream_sync(m->comm->gctx, m->stream);
    return weft_comm_check_device(m->comm);
}

static inline void mesh_teardown(mesh_t *m)
{
    weft_bootstrap_barrier(m->comm); /* nobody touches a peer's memory any more */
    if (m->stream)
        m->comm->gpu->stream_destroy(m->comm->gctx, m->stream);
    for (int p = 0; p < m->nranks; p++) {
        if (m->mc[p])
            weft_memory_channel_destroy(m->mc[p]);
        if (m->mcp[p])
            weft_memory_channel_destroy(m->mcp[p]);
        if (m->sema[p])
            weft_semaphore_destroy(m->sema[p]);
        if (m->conn[p])
            weft_connection_destroy(m->conn[p]);
        if (m->rbuf[p])
            weft_mem_deregister(m->rbuf[p]);
        if (m->rpkt[p])
            weft_mem_deregister(m->rpkt[p]);
    }
    weft_bootstrap_barrier(m->comm);
    if (m->buf_mem)
        weft_mem_deregister(m->buf_mem);
    if (m->pkt_mem)
        weft_mem_deregister(m->pkt_mem);
    weft_mem_free(m->comm, m->buf);
    weft_mem_free(m->comm, m->pkt);
}

#endif
