/*
 * Plans behind the NCCL API: with WEFT_PLAN_DIR holding MSCCL++ plans, an
 * NCCL program's ncclAllReduce / ncclAllGather whose placement and size
 * match a plan run that plan (the coll debug log names it), with the right
 * results; an out-of-place call (the plans are in place) runs the built-in
 * algorithm. Host backend, forked ranks, only include/weft/nccl.h.
 */
#include "tap/basic.h"
#include "collref.h"
#include "tap/ranks.h"
#include "weft/nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ncclUniqueId id;
static char dir[256];

/* Lines of this rank's log holding both strings. */
static int log_count(const char *a, const char *b)
{
    char path[512], line[2048];
    int n = 0;
    FILE *f;
    snprintf(path, sizeof(path), "%s/log-%d", dir, (int)getpid());
    if (!(f = fopen(path, "r"))) return 0;
    while (fgets(line, sizeof(line), f)) n += strstr(line, a) && strstr(line, b);
    fclose(f);
    return n;
}

static int rank_main(int rank, int nranks, void *arg)
{
    char logspec[512];
    ncclComm_t comm;
    float *buf = malloc(256 * sizeof(float)), *in = malloc(256 * sizeof(float));
    unsigned char *ag = malloc(64);
    int fails = 0;
    (void)arg;
    snprintf(logspec, sizeof(logspec), "%s/log-%%p", dir);
    /* the buffers are host memory: the host backend, whatever the build */
    setenv("WEFT_BACKEND", "host", 1);
    setenv("WEFT_PLAN_DIR", dir, 1);
    setenv("WEFT_LOG_FILE", logspec, 1);
    setenv("WEFT_LOG_LEVEL", "debug", 1);
    setenv("WEFT_LOG_SUBSYS", "coll", 1);
    if (!buf || !in || !ag) return rank_fail("malloc");
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) return rank_fail("ncclGetUniqueId: %s", ncclGetLastError(NULL));
    if (!rank_share(0, &id, sizeof(id)) || ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess)
        return rank_fail("ncclCommInitRank: %s", ncclGetLastError(NULL));
    for (int round = 0; round < 2; round++) {
        /* round 0 in place (allreduce.json), round 1 out of place (built-in) */
        float *src = round == 0 ? buf : in;
        for (size_t i = 0; i < 256; i++) collref_input(WEFT_FLOAT32, WEFT_SUM, rank, i, &src[i]);
        if (ncclAllReduce(src, buf, 256, ncclFloat, ncclSum, comm, NULL) != ncclSuccess)
            fails += rank_fail("ncclAllReduce: %s", ncclGetLastError(comm));
        for (size_t i = 0; i < 256 && !fails; i++) {
            float want;
            collref_reduced(WEFT_FLOAT32, WEFT_SUM, nranks, i, &want);
            if (buf[i] != want) fails += rank_fail("allreduce round %d: element %zu is %g, want %g", round, i, buf[i], want);
        }
    }
    for (size_t i = 0; i < 32; i++) collref_input(WEFT_UINT8, WEFT_SUM, rank, i, &ag[(size_t)rank * 32 + i]);
    if (ncclAllGather(ag + (size_t)rank * 32, ag, 32, ncclUint8, comm, NULL) != ncclSuccess)
        fails += rank_fail("ncclAllGather: %s", ncclGetLastError(comm));
    for (size_t i = 0; i < 64 && !fails; i++) {
        unsigned char want;
        collref_input(WEFT_UINT8, WEFT_SUM, (int)(i / 32), i % 32, &want);
        if (ag[i] != want) fails += rank_fail("allgather: byte %zu is %u, want %u", i, ag[i], want);
    }
    ncclCommDestroy(comm);
    if (log_count("allreduce of 1024 bytes: plan allreduce", "allreduce.json") != 1)
        fails += rank_fail("the in-place ncclAllReduce did not run allreduce.json once (or the out-of-place one did)");
    if (log_count("allgather of 32 bytes: plan transfer_pack", "transfer_pack.json") != 1)
        fails += rank_fail("the in-place ncclAllGather did not run transfer_pack.json");
    free(buf);
    free(in);
    free(ag);
    return fails;
}

static int copy_file(const char *from, const char *to)
{
    FILE *i = fopen(from, "rb"), *o = fopen(to, "wb");
    char b[65536];
    size_t n;
    int good = i && o;
    while (good && (n = fread(b, 1, sizeof(b), i)) > 0) good = fwrite(b, 1, n, o) == n;
    if (i) fclose(i);
    if (o && fclose(o)) good = 0;
    return good;
}

int main(void)
{
    static const char *const files[] = {"allreduce.json", "transfer_pack.json"};
    char from[4400], to[4400], cmd[600];
    snprintf(dir, sizeof(dir), "%s/weft-nccl-plan-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) bail("cannot create a directory");
    for (size_t i = 0; i < 2; i++) {
        snprintf(from, sizeof(from), "%s/t/coll/plans/mscclpp/%s", TOP_SRCDIR, files[i]);
        snprintf(to, sizeof(to), "%s/%s", dir, files[i]);
        if (!copy_file(from, to)) bail("cannot copy %s", from);
    }
    plan(1);
    ok(run_ranks(2, 60000, rank_main, NULL, NULL),
       "ncclAllReduce and ncclAllGather in place run WEFT_PLAN_DIR's plans, results right; out of place the built-in");
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) diag("could not remove %s", dir);
    return test_done();
}
