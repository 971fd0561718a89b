/* Registered memory on the host backend: allocate, register, serialize,
 * exchange, map a peer's buffer and write into it; a rank's own handle is
 * not imported. */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "tap/job.h"
#include "weft.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static weft_unique_id_t id;

#define CHECK(cond, ...)                                                                                           \
    do {                                                                                                           \
        if (!(cond))                                                                                               \
            fails += rank_fail(__VA_ARGS__);                                                                       \
    } while (0)

static int rank_main(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_mem_t *mine, **peers, *tmp = NULL;
    weft_mem_handle_t *handles;
    const size_t bytes = (1u << 20) + 7, off = 4096 + 3, len = bytes - off;
    uint8_t *buf, junk[64];
    int fails = 0;
    (void)arg;
    if (!job_id(rank, &id))
        return 1;

    if (weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    rank_step("alloc and register");
    CHECK(weft_mem_alloc(comm, bytes, (void **)&buf) == WEFT_OK, "alloc: %s", weft_get_last_error());
    CHECK(buf[0] == 0 && buf[bytes - 1] == 0, "allocation is not zero-filled");
    /* register a part at an odd offset */
    CHECK(weft_mem_register(comm, buf + off, len, WEFT_TRANSPORT_IPC, &mine) == WEFT_OK, "register: %s",
          weft_get_last_error());
    CHECK(weft_mem_register(comm, junk, sizeof(junk), WEFT_TRANSPORT_IPC, &tmp) == WEFT_ERR_INVALID_ARGUMENT,
          "IPC registration of non-weft memory was accepted");
    CHECK(weft_mem_free(comm, buf) == WEFT_ERR_INVALID_ARGUMENT, "freeing registered memory was accepted");
    handles = calloc((size_t)nranks, sizeof(*handles));
    peers = calloc((size_t)nranks, sizeof(*peers));
    CHECK(weft_mem_serialize(mine, &handles[rank]) == WEFT_OK, "serialize");
    rank_step("allgather handles");
    CHECK(weft_bootstrap_allgather(comm, handles, sizeof(*handles)) == WEFT_OK, "allgather");
    for (int r = 0; r < nranks; r++) {
        void *p = NULL;
        size_t sz = 0;
        int owner = -1;
        rank_step("import the buffer of rank %d", r);
        if (r == rank) {
            /* our own handle: refused (it would make us trust the address
             * it carries); we write our slot through our own pointer */
            weft_mem_t *self = NULL;
            CHECK(weft_mem_deserialize(comm, &handles[r], &self) == WEFT_ERR_INVALID_ARGUMENT && !self,
                  "a handle naming this rank (%d) as its owner was imported", rank);
            memset(buf + off + (size_t)rank * 1000, 0x40 + rank, 1000);
            continue;
        }
        CHECK(weft_mem_deserialize(comm, &handles[r], &peers[r]) == WEFT_OK, "deserialize rank %d: %s", r,
              weft_get_last_error());
        if (!peers[r])
            continue;
        CHECK(weft_mem_ptr(peers[r], &p) == WEFT_OK && p, "no pointer to rank %d's memory", r);
        weft_mem_size(peers[r], &sz);
        weft_mem_rank(peers[r], &owner);
        CHECK(sz == len && owner == r, "size %zu / owner %d of rank %d's handle", sz, owner, r);
        /* write our byte into our slot of every peer's buffer */
        if (p)
            memset((uint8_t *)p + (size_t)rank * 1000, 0x40 + rank, 1000);
    }
    rank_step("barrier after writes");
    weft_bootstrap_barrier(comm);
    for (int r = 0; r < nranks; r++)
        for (size_t i = 0; i < 1000; i++)
            if (buf[off + (size_t)r * 1000 + i] != 0x40 + r) {
                CHECK(0, "byte %zu written by rank %d is %#x", i, r, buf[off + (size_t)r * 1000 + i]);
                break;
            }
    /* corrupt handles are refused */
    {
        weft_mem_handle_t bad = handles[0];
        weft_mem_t *m = NULL;
        bad.internal[50] ^= 0x10;
        CHECK(weft_mem_deserialize(comm, &bad, &m) == WEFT_ERR_INVALID_ARGUMENT && !m,
              "a corrupt handle was accepted");
        memset(&bad, 0, sizeof(bad));
        CHECK(weft_mem_deserialize(comm, &bad, &m) == WEFT_ERR_INVALID_ARGUMENT, "a zero handle was accepted");
    }
    rank_step("barrier before deregister");
    weft_bootstrap_barrier(comm);
    for (int r = 0; r < nranks; r++)
        if (peers[r])
            weft_mem_deregister(peers[r]);
    weft_bootstrap_barrier(comm);
    CHECK(weft_mem_deregister(mine) == WEFT_OK, "deregister");
    CHECK(weft_mem_free(comm, buf) == WEFT_OK, "free after deregister");
    CHECK(weft_mem_free(comm, buf) == WEFT_ERR_INVALID_ARGUMENT, "double free was accepted");
    free(handles);
    free(peers);
    weft_comm_destroy(comm);
    return fails;
}

/* A handle withdrawn by its owner can no longer be imported. */
static int withdrawn(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_mem_t *m;
    weft_mem_handle_t h;
    void *buf;
    int fails = 0;
    (void)arg;
    if (!job_id(rank, &id))
        return 1;
    if (weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if (rank == 0) {
        weft_mem_alloc(comm, 4096, &buf);
        weft_mem_register(comm, buf, 4096, WEFT_TRANSPORT_IPC, &m);
        weft_mem_serialize(m, &h);
        weft_mem_deregister(m);
        weft_bootstrap_send(comm, &h, sizeof(h), 1, 1);
        weft_bootstrap_barrier(comm);
    } else {
        weft_mem_t *imp = NULL;
        weft_bootstrap_recv(comm, &h, sizeof(h), 0, 1);
        weft_status_t st = weft_mem_deserialize(comm, &h, &imp);
        CHECK(st == WEFT_ERR_NOT_FOUND && !imp, "import of a withdrawn buffer gave %s", weft_status_string(st));
        weft_bootstrap_barrier(comm);
    }
    weft_comm_destroy(comm);
    return fails;
}

int main(void)
{
    plan(3);
    ok(run_ranks(2, 30000, rank_main, NULL, NULL), "2 ranks map each other's registered memory");
    ok(run_ranks(4, 30000, rank_main, NULL, NULL), "4 ranks map each other's registered memory");
    ok(run_ranks(2, 30000, withdrawn, NULL, NULL), "a deregistered buffer cannot be imported any more");
    return test_done();
}
