/* The switch channel, on forked ranks over the host backend's emulated
 * multicast: off by default and under NCCL_NVLS_ENABLE=0, bad input
 * refused, and with WEFT_NVLS_ENABLE=1 a load-reduce/store round over every
 * rank's buffer (f32, f16, bf16 sums), a second channel beside the first,
 * and the allreduce algorithm over it (coll-t runs its full sweep). Always
 * the host backend: multicast on a shared GPU is never enabled by tests. */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static weft_unique_id_t id;

static int setup(int rank, int nranks, weft_comm_t **comm)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    cfg.backend = "host";
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error()), 0;
    return 1;
}

/* Disabled (arg NULL: by default; else NCCL_NVLS_ENABLE=0 beside
 * WEFT_NVLS_ENABLE=1): WEFT_ERR_UNSUPPORTED, saying why, and nothing made. */
static int disabled(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_switch_channel_t *sc = (weft_switch_channel_t *)(uintptr_t)1;
    int fails = 0;
    if (arg) {
        setenv("WEFT_NVLS_ENABLE", "1", 1);
        setenv("NCCL_NVLS_ENABLE", "0", 1);
    }
    if (!setup(rank, nranks, &comm))
        return 1;
    weft_status_t st = weft_switch_channel_create(comm, 4096, &sc);
    if (st != WEFT_ERR_UNSUPPORTED)
        fails += rank_fail("expected WEFT_ERR_UNSUPPORTED, got %s", weft_status_string(st));
    else if (!strstr(weft_get_last_error(), "disabled"))
        fails += rank_fail("the error does not say it is disabled: %s", weft_get_last_error());
    if (sc != (weft_switch_channel_t *)(uintptr_t)1)
        fails += rank_fail("the output was written on failure");
    weft_comm_destroy(comm);
    return fails;
}

static int bad_input(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_switch_channel_t *sc = NULL;
    weft_switch_channel_dev_t h;
    void *p;
    size_t n;
    int fails = 0;
    (void)arg;
    setenv("WEFT_NVLS_ENABLE", "1", 1);
    if (!setup(rank, nranks, &comm))
        return 1;
    if (weft_switch_channel_create(NULL, 4096, &sc) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_switch_channel_create(comm, 4096, NULL) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_switch_channel_create(comm, 0, &sc) != WEFT_ERR_INVALID_ARGUMENT || sc != NULL)
        fails += rank_fail("create with NULL or zero bytes was not refused cleanly");
    if (weft_switch_channel_device_handle(NULL, &h) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_switch_channel_buffer(NULL, &p, &n) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_switch_channel_destroy(NULL) != WEFT_ERR_INVALID_ARGUMENT)
        fails += rank_fail("NULL channel was not refused");
    /* the communicator still works: a channel after the refusals */
    if (weft_switch_channel_create(comm, 4096, &sc) != WEFT_OK || weft_switch_channel_destroy(sc) != WEFT_OK)
        fails += rank_fail("a good channel after bad calls: %s", weft_get_last_error());
    weft_comm_destroy(comm);
    return fails;
}

static float elem(int rank, size_t i)
{
    return (float)((rank + 1) * 3 + (int)(i % 61)) * 0.25f;
}

/* One round: every rank fills its buffer, then (after a barrier) reduces
 * its share through the object and stores it everywhere; after another
 * barrier every buffer holds the sum. Two channels at once. */
static int round_trip(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_switch_channel_t *sc[2] = {NULL, NULL};
    const size_t bytes = 100000; /* not a multiple of 16 KiB: the granularity rounds it */
    int fails = 0;
    (void)arg;
    setenv("WEFT_NVLS_ENABLE", "1", 1);
    if (!setup(rank, nranks, &comm))
        return 1;
    for (int k = 0; k < 2; k++)
        if (weft_switch_channel_create(comm, bytes + (size_t)k * 4096, &sc[k]) != WEFT_OK)
            return rank_fail("channel %d: %s", k, weft_get_last_error());
    for (int k = 0; k < 2 && !fails; k++) {
        weft_switch_channel_dev_t h;
        void *buf;
        size_t n;
        if (weft_switch_channel_device_handle(sc[k], &h) != WEFT_OK ||
            weft_switch_channel_buffer(sc[k], &buf, &n) != WEFT_OK || n < bytes || n % 16 || h.bytes != n ||
            h.nranks != nranks || h.rank != rank || h.local != buf)
            fails += rank_fail("channel %d: handle or buffer inconsistent (%zu bytes)", k, n);
        for (int t = 0; t < 3 && !fails; t++) {
            weft_dtype_t dt = t == 0 ? WEFT_FLOAT32 : t == 1 ? WEFT_FLOAT16 : WEFT_BFLOAT16;
            size_t es = weft_dtype_size(dt), count = n / es;
            for (size_t i = 0; i < count; i++) {
                float v = elem(rank, i);
                if (dt == WEFT_FLOAT32)
                    ((float *)buf)[i] = v;
                else if (dt == WEFT_FLOAT16)
                    ((weft_f16_t *)buf)[i] = weft_f32_to_f16(v);
                else
                    ((weft_bf16_t *)buf)[i] = weft_f32_to_bf16(v);
            }
            weft_bootstrap_barrier(comm);
            uint64_t units = n / 16;
            weft_sc_allreduce(&h, units * (uint64_t)rank / (uint64_t)nranks * 16,
                              units * (uint64_t)(rank + 1) / (uint64_t)nranks * 16, dt, 0, 1);
            weft_bootstrap_barrier(comm);
            for (size_t i = 0; i < count; i++) {
                float want = 0, got;
                for (int r = 0; r < nranks; r++)
                    want += elem(r, i);
                got = dt == WEFT_FLOAT32   ? ((float *)buf)[i]
                      : dt == WEFT_FLOAT16 ? weft_f16_to_f32(((weft_f16_t *)buf)[i])
                                           : weft_bf16_to_f32(((weft_bf16_t *)buf)[i]);
                if (got < want * 0.98f - 0.5f || got > want * 1.02f + 0.5f) {
                    fails += rank_fail("channel %d, type %d: element %zu is %g, want %g", k, t, i, got, want);
                    break;
                }
            }
            weft_bootstrap_barrier(comm); /* everyone checked before the next round's fill */
        }
    }
    for (int k = 0; k < 2; k++)
        weft_switch_channel_destroy(sc[k]);
    weft_comm_destroy(comm);
    return fails;
}

/* The allreduce algorithm: used for f32 sums, and a double sum (which it
 * cannot do) falls back to another algorithm, both correct. */
static int allreduce(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    const char *algo = NULL;
    const size_t n = 300001;
    int fails = 0;
    (void)arg;
    setenv("WEFT_NVLS_ENABLE", "1", 1);
    setenv("WEFT_ALGO", "allreduce:switch", 1);
    setenv("WEFT_COLL_SCRATCH_BYTES", "262144", 1); /* many chunks */
    if (!setup(rank, nranks, &comm) || weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("setup: %s", weft_get_last_error());
    if (weft_coll_algorithm(comm, "allreduce", n * 4, &algo) != WEFT_OK || strcmp(algo, "switch") != 0)
        fails += rank_fail("the switch algorithm is not chosen for f32 sums (got %s)", algo ? algo : "none");
    for (int t = 0; t < 2 && !fails; t++) {
        size_t es = t ? 8 : 4;
        unsigned char *h = malloc(n * es);
        void *d = NULL;
        for (size_t i = 0; i < n; i++) {
            if (t)
                ((double *)h)[i] = elem(rank, i);
            else
                ((float *)h)[i] = elem(rank, i);
        }
        if (!h || weft_mem_alloc(comm, n * es, &d) != WEFT_OK || weft_memcpy(s, d, h, n * es) != WEFT_OK ||
            weft_allreduce(d, d, n, t ? WEFT_FLOAT64 : WEFT_FLOAT32, WEFT_SUM, comm, s) != WEFT_OK ||
            weft_memcpy(s, h, d, n * es) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK)
            fails += rank_fail("allreduce (%s): %s", t ? "double" : "float", weft_get_last_error());
        for (size_t i = 0; i < n && !fails; i++) {
            double want = 0, got = t ? ((double *)h)[i] : ((float *)h)[i];
            for (int r = 0; r < nranks; r++)
                want += elem(r, i);
            if (got != want)
                fails += rank_fail("allreduce (%s): element %zu is %g, want %g", t ? "double" : "float", i, got,
                                   want);
        }
        if (d)
            weft_mem_free(comm, d);
        free(h);
    }
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

int main(void)
{
    /* Where the environment turns NCCL's multicast off (shared GPU hosts),
     * the switch channel stays off too, even emulated: those parts skip. */
    const char *nccl = getenv("NCCL_NVLS_ENABLE");
    int off = nccl && strcmp(nccl, "0") == 0;
    plan(6);
    ok(run_ranks(2, 30000, disabled, NULL, NULL), "off by default: WEFT_ERR_UNSUPPORTED, saying it is disabled");
    ok(run_ranks(2, 30000, disabled, (void *)1, NULL), "off with NCCL_NVLS_ENABLE=0 even with WEFT_NVLS_ENABLE=1");
    if (off) {
        for (int i = 0; i < 4; i++)
            skip("NCCL_NVLS_ENABLE=0 here: the switch channel stays off, as it must (this runs where it is unset)");
        return test_done();
    }
    ok(run_ranks(2, 30000, bad_input, NULL, NULL),
       "bad input: NULL communicator, output or channel, zero bytes: WEFT_ERR_INVALID_ARGUMENT, nothing lost");
    ok(run_ranks(4, 60000, round_trip, NULL, NULL),
       "4 ranks, two channels: load-reduce and store of every share, f32, f16 and bf16 sums, in every buffer");
    ok(run_ranks(3, 60000, round_trip, NULL, NULL), "3 ranks (uneven shares): the same");
    ok(run_ranks(4, 60000, allreduce, NULL, NULL),
       "4 ranks: allreduce by the switch algorithm (f32 sum, many chunks; a double sum falls back)");
    return test_done();
}
