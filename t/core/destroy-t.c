/*
 * weft_comm_destroy with work still queued: an allreduce that completes
 * is waited for (its result is whole afterwards), one whose peer never
 * arrives is aborted after the communicator's timeout, and neither has
 * memory freed under it (run under ASan in CI). A stream made from the
 * communicator can still be destroyed after it.
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define COUNT (1u << 18)
#define OP_TIMEOUT_MS 1500

static weft_unique_id_t id;
static volatile int *done_flag; /* shared by the forked ranks: rank 0 has destroyed */

typedef struct {
    weft_comm_t *comm;
    weft_stream_t *stream;
    float *in, *out;
} job_t;

/* A communicator with a stream, and one allreduce run to completion
 * (the first collective sets up, collectively, on the host). */
static int setup(int rank, int nranks, job_t *j)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    cfg.op_timeout_ms = OP_TIMEOUT_MS;
    cfg.device_timeout_ms = 120000; /* the kernel alone would wait far longer than the test */
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, &j->comm) != WEFT_OK ||
        weft_stream_create(j->comm, &j->stream) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    j->in = malloc(COUNT * sizeof(float));
    j->out = malloc(COUNT * sizeof(float));
    if (!j->in || !j->out)
        return rank_fail("out of memory");
    for (unsigned i = 0; i < COUNT; i++)
        j->in[i] = (float)(rank + 1) + (float)(i % 7);
    rank_step("warm-up allreduce");
    if (weft_allreduce(j->in, j->out, COUNT, WEFT_FLOAT32, WEFT_SUM, j->comm, j->stream) != WEFT_OK ||
        weft_stream_synchronize(j->stream) != WEFT_OK)
        return rank_fail("warm-up allreduce: %s", weft_get_last_error());
    return 0;
}

/* The stream outlives its communicator: destroying it still works. */
static int stream_after(job_t *j)
{
    rank_step("destroy the stream after its communicator");
    if (weft_stream_destroy(j->stream) != WEFT_OK)
        return rank_fail("stream destroy after the communicator failed");
    free(j->in);
    free(j->out);
    return 0;
}

/* Both ranks queue an allreduce and destroy at once: destroy waits for it. */
static int in_flight_completes(int rank, int nranks, void *arg)
{
    job_t j;
    weft_status_t status;
    long t0;
    (void)arg;
    if (setup(rank, nranks, &j))
        return 1;
    memset(j.out, 0, COUNT * sizeof(float));
    if (weft_allreduce(j.in, j.out, COUNT, WEFT_FLOAT32, WEFT_SUM, j.comm, j.stream) != WEFT_OK)
        return rank_fail("allreduce: %s", weft_get_last_error());
    rank_step("destroy with the allreduce queued");
    t0 = now_ms();
    status = weft_comm_destroy(j.comm);
    if (status != WEFT_OK)
        return rank_fail("destroy: %s: %s", weft_status_string(status), weft_get_last_error());
    if (now_ms() - t0 >= OP_TIMEOUT_MS)
        return rank_fail("destroy took %ld ms: it should not have needed the timeout", now_ms() - t0);
    for (unsigned i = 0; i < COUNT; i++) {
        float want = 0;
        for (int r = 0; r < nranks; r++)
            want += (float)(r + 1) + (float)(i % 7);
        if (j.out[i] != want)
            return rank_fail("element %u is %g, not %g: the allreduce did not complete before destroy returned", i,
                             (double)j.out[i], (double)want);
    }
    return stream_after(&j);
}

/* Rank 0 queues an allreduce rank 1 never joins, then destroys. */
static int peer_never_arrives(int rank, int nranks, void *arg)
{
    job_t j;
    weft_status_t status;
    long t0, took;
    (void)arg;
    if (setup(rank, nranks, &j))
        return 1;
    if (rank != 0) {
        /* alive, but never joins: wait for rank 0 to be done */
        rank_step("waiting for rank 0's destroy");
        while (!__atomic_load_n(done_flag, __ATOMIC_ACQUIRE))
            usleep(10000);
        weft_comm_destroy(j.comm);
        return stream_after(&j);
    }
    if (weft_allreduce(j.in, j.out, COUNT, WEFT_FLOAT32, WEFT_SUM, j.comm, j.stream) != WEFT_OK)
        return rank_fail("allreduce: %s", weft_get_last_error());
    usleep(200 * 1000); /* the kernel is waiting for rank 1 by now */
    rank_step("destroy with an allreduce rank 1 never joins");
    t0 = now_ms();
    status = weft_comm_destroy(j.comm);
    took = now_ms() - t0;
    __atomic_store_n(done_flag, 1, __ATOMIC_RELEASE);
    if (status != WEFT_OK)
        return rank_fail("destroy: %s: %s", weft_status_string(status), weft_get_last_error());
    if (took < OP_TIMEOUT_MS - 100 || took > 2 * OP_TIMEOUT_MS + 1000)
        return rank_fail("destroy took %ld ms: expected the timeout (%d ms), then an abort that ends the kernel",
                         took, OP_TIMEOUT_MS);
    if (!strstr(weft_get_last_error(), "rank 0: weft_comm_destroy: work on 1 stream still running"))
        return rank_fail("destroy did not say what it aborted: \"%s\"", weft_get_last_error());
    return stream_after(&j);
}

int main(void)
{
    done_flag = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (done_flag == MAP_FAILED)
        bail("mmap failed");
    setenv("WEFT_BACKEND", "host", 1);
    plan(3);
    ok(run_ranks(2, 60000, in_flight_completes, NULL, NULL),
       "destroy with an allreduce in flight waits for it; the result is whole and nothing is freed under it");
    ok(run_ranks(2, 60000, peer_never_arrives, NULL, NULL),
       "destroy with an allreduce whose peer never arrives returns after the timeout, aborting it");
    *done_flag = 0;
    ok(run_ranks(3, 60000, in_flight_completes, NULL, NULL), "the same on three ranks");
    return test_done();
}
