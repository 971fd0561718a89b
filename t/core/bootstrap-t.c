/* Bootstrap operations across forked ranks: 1, 2, 3, 4 and 8 ranks. */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "tap/job.h"
#include "weft.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_unique_id_t id;

#define CHECK(cond, ...)                                                                                           \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            rank_fail(__VA_ARGS__);                                                                                \
            fails++;                                                                                               \
        }                                                                                                          \
    } while (0)

static int rank_main(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_status_t st;
    int fails = 0, v;
    (void)arg;

    if (!job_id(rank, &id))
        return 1;
    rank_step("weft_comm_init");
    st = weft_comm_init(&id, nranks, rank, NULL, &comm);
    if (st != WEFT_OK)
        return rank_fail("comm_init: %s: %s", weft_status_string(st), weft_get_last_error());
    weft_comm_rank(comm, &v);
    CHECK(v == rank, "rank %d", v);
    weft_comm_size(comm, &v);
    CHECK(v == nranks, "size %d", v);
    weft_comm_local_size(comm, &v);
    CHECK(v == nranks, "local size %d (all ranks share this host)", v);
    weft_comm_local_rank(comm, &v);
    CHECK(v == rank, "local rank %d", v);

    /* allgather of small and large (1 MiB + 3) blocks */
    size_t sizes[] = {0, 1, 13, (1u << 20) + 3};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t per = sizes[s];
        uint8_t *buf = calloc((size_t)nranks, per ? per : 1);
        for (size_t i = 0; i < per; i++)
            buf[(size_t)rank * per + i] = (uint8_t)(rank * 17 + i);
        rank_step("allgather of %zu bytes", per);
        st = weft_bootstrap_allgather(comm, buf, per);
        CHECK(st == WEFT_OK, "allgather(%zu): %s", per, weft_get_last_error());
        for (int r = 0; r < nranks && st == WEFT_OK; r++)
            for (size_t i = 0; i < per; i++)
                if (buf[(size_t)r * per + i] != (uint8_t)(r * 17 + i)) {
                    CHECK(0, "allgather(%zu): wrong byte %zu from rank %d", per, i, r);
                    break;
                }
        free(buf);
    }

    /* broadcast from every root */
    for (int root = 0; root < nranks; root++) {
        uint64_t word[33];
        for (int i = 0; i < 33; i++)
            word[i] = rank == root ? (uint64_t)(root * 1000 + i) : 0;
        rank_step("broadcast from root %d", root);
        st = weft_bootstrap_broadcast(comm, word, sizeof(word), root);
        CHECK(st == WEFT_OK, "broadcast(root %d): %s", root, weft_get_last_error());
        for (int i = 0; i < 33; i++)
            if (word[i] != (uint64_t)(root * 1000 + i)) {
                CHECK(0, "broadcast(root %d): word %d is %llu", root, i, (unsigned long long)word[i]);
                break;
            }
    }

    /* send/recv: two tags sent in one order, received in the other */
    if (nranks > 1) {
        int to = (rank + 1) % nranks, from = (rank + nranks - 1) % nranks;
        int a = rank * 10 + 1, b = rank * 10 + 2, ra = -1, rb = -1;
        rank_step("send to %d", to);
        CHECK(weft_bootstrap_send(comm, &a, sizeof(a), to, 7) == WEFT_OK, "send tag 7");
        CHECK(weft_bootstrap_send(comm, &b, sizeof(b), to, 9) == WEFT_OK, "send tag 9");
        rank_step("recv from %d", from);
        CHECK(weft_bootstrap_recv(comm, &rb, sizeof(rb), from, 9) == WEFT_OK, "recv tag 9");
        CHECK(weft_bootstrap_recv(comm, &ra, sizeof(ra), from, 7) == WEFT_OK, "recv tag 7");
        CHECK(ra == from * 10 + 1 && rb == from * 10 + 2, "tags matched the wrong messages (%d, %d)", ra, rb);
        /* many messages, same tag: order kept */
        for (int i = 0; i < 50; i++)
            weft_bootstrap_send(comm, &i, sizeof(i), to, 11);
        for (int i = 0; i < 50; i++) {
            int got = -1;
            weft_bootstrap_recv(comm, &got, sizeof(got), from, 11);
            if (got != i) {
                CHECK(0, "message %d of a stream arrived as %d", i, got);
                break;
            }
        }
        /* a message of the wrong length is an error naming the sender */
        rank_step("barrier before length check");
        weft_bootstrap_barrier(comm);
    }
    for (int i = 0; i < 20; i++) {
        rank_step("barrier %d", i);
        CHECK(weft_bootstrap_barrier(comm) == WEFT_OK, "barrier %d: %s", i, weft_get_last_error());
    }
    {
        weft_status_t err;
        weft_comm_get_async_error(comm, &err);
        CHECK(err == WEFT_OK, "async error %d after a clean run", err);
    }
    rank_step("destroy");
    weft_comm_destroy(comm);
    return fails;
}

static int size_mismatch(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    int fails = 0;
    (void)arg;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if (rank == 0) {
        uint32_t small = 5;
        weft_bootstrap_send(comm, &small, sizeof(small), 1, 3);
    } else {
        uint64_t big;
        weft_status_t st = weft_bootstrap_recv(comm, &big, sizeof(big), 0, 3);
        CHECK(st == WEFT_ERR_PROTOCOL, "recv of a 4-byte message into 8 bytes gave %d", st);
        CHECK(strstr(weft_get_last_error(), "rank 0") != NULL, "error does not name rank 0: %s",
              weft_get_last_error());
    }
    weft_comm_destroy(comm);
    return fails;
}

/* Rank 0 leaves as soon as its init returns; rank 1's last send of the
 * init barrier was read by rank 0 before it closed, so rank 1 succeeds. */
static int leave_at_once(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_status_t st;
    (void)arg;
    if (!job_id(rank, &id))
        return 1;
    st = weft_comm_init(&id, nranks, rank, NULL, &comm);
    if (st != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    weft_comm_destroy(comm);
    return 0;
}

int main(void)
{
    static const int counts[] = {1, 2, 3, 4, 8};
    int leave_ok = 1;
    plan(7);
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        ok(run_ranks(counts[i], 60000, rank_main, NULL, NULL),
           "%d rank(s): init, allgather, broadcast, send/recv, barrier", counts[i]);
    }
    ok(run_ranks(2, 30000, size_mismatch, NULL, NULL), "a message of the wrong length is refused, naming the sender");
    for (int i = 0; i < 30 && leave_ok; i++)
        leave_ok = run_ranks(2, 30000, leave_at_once, NULL, NULL);
    ok(leave_ok, "30 jobs whose ranks leave right after init: a peer closing after our last send is no error");
    return test_done();
}
