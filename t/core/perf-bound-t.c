/* weft-perf --bound: the bytes each collective moves, the bound, and the
 * columns, JSON fields and header lines that show them. */
#include "config.h"
#include "perf.h"
#include "tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* bound.c's clock, which weft-perf's coll_bench.c provides */
double perf_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int run(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");
    size_t n = 0;
    int status;
    if (!p)
        return -1;
    while (n + 1 < len && fgets(out + n, (int)(len - n), p))
        n += strlen(out + n);
    out[n] = '\0';
    status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int near(double got, double want)
{
    return fabs(got - want) <= 1e-9 * fabs(want) + 1e-9;
}

/* The number after "key": in the first JSON object of @p s holding @p key, or NAN. */
static double json_num(const char *s, const char *key)
{
    char pat[64];
    const char *at;
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    at = strstr(s, pat);
    return at ? atof(at + strlen(pat)) : NAN;
}

int main(void)
{
    static char out[65536];
    char cmd[1024], js[64];
    const char *path = NULL;
    const double S = 1 << 20, M = 1 << 20;
    plan(28);

    /* the formulas, per collective and path (README, Performance) */
    ok(near(perf_bytes_per_rank(PERF_ALLREDUCE, "rsag", 1, 2, M, &path), 2 * S) && strcmp(path, "zero-copy") == 0,
       "allreduce zero-copy: each rank reads S and writes S");
    ok(near(perf_bytes_per_rank(PERF_ALLREDUCE, "rsag", 0, 4, M, &path), (4 + 0.5) * S) && strcmp(path, "staged") == 0,
       "allreduce staged: (4 + 2/n) S, the copies into and out of scratch added");
    ok(near(perf_bytes_per_rank(PERF_ALLREDUCE, "packet", 0, 2, M, &path), 6 * S) && strcmp(path, "packet") == 0,
       "allreduce one-shot packets: (2 + 4(n-1)) S");
    ok(near(perf_bytes_per_rank(PERF_ALLREDUCE, "packet2", 1, 8, M, &path), (2 + 7.0) * S),
       "allreduce two-step packets: (2 + 8(n-1)/n) S, windows or not");
    ok(near(perf_bytes_per_rank(PERF_ALLGATHER, "mesh", 1, 4, M, NULL), 1.25 * S) &&
           near(perf_bytes_per_rank(PERF_ALLGATHER, "mesh", 0, 4, M, NULL), 1.75 * S),
       "allgather: S + S/n zero-copy (a block read by every rank counted once), S + 3S/n staged");
    ok(near(perf_bytes_per_rank(PERF_REDUCE_SCATTER, "mesh", 1, 4, M, NULL), 1.25 * S) &&
           near(perf_bytes_per_rank(PERF_REDUCE_SCATTER, "mesh", 0, 4, M, NULL), 3.75 * S),
       "reduce-scatter: S + S/n zero-copy, 3S + 3S/n staged");
    ok(near(perf_bytes_per_rank(PERF_ALLGATHER, "packet", 1, 4, M, &path), (1.25 + 3) * S) && strcmp(path, "packet") == 0 &&
           near(perf_bytes_per_rank(PERF_REDUCE_SCATTER, "packet", 0, 4, M, NULL), (1.25 + 3) * S),
       "allgather and reduce-scatter by packets: S + S/n + 4(n-1)S/n, windows or not");
    ok(near(perf_bytes_per_rank(PERF_BROADCAST, "packet", 1, 4, M, &path), 17.0 / 4 * S) && strcmp(path, "packet") == 0 &&
           near(perf_bytes_per_rank(PERF_REDUCE, "packet", 0, 4, M, NULL), 17.0 / 4 * S),
       "broadcast and reduce by packets: the mean (2 + 5(n-1)) S / n");
    ok(near(perf_bytes_per_rank(PERF_BROADCAST, "mesh", 1, 4, M, NULL), 1.25 * S) &&
           near(perf_bytes_per_rank(PERF_BROADCAST, "mesh", 0, 4, M, NULL), 1.75 * S),
       "broadcast: S(n+1)/n zero-copy, S(n+3)/n staged (the mean over ranks, the root's input read once)");
    ok(near(perf_bytes_per_rank(PERF_REDUCE, "mesh", 1, 4, M, NULL), 1.25 * S) &&
           near(perf_bytes_per_rank(PERF_REDUCE, "mesh", 0, 4, M, NULL), 3.75 * S),
       "reduce: S(n+1)/n zero-copy, 3S + 3S/n staged");
    ok(near(perf_bytes_per_rank(PERF_ALLTOALL, "mesh", 1, 8, M, NULL), 2 * S) &&
           near(perf_bytes_per_rank(PERF_ALLTOALL, "mesh", 0, 8, M, NULL), 4 * S),
       "all-to-all: 2S zero-copy, 4S staged");
    ok(near(perf_bytes_per_rank(PERF_ALLTOALL, "packet", 0, 4, M, &path), 5 * S) && strcmp(path, "packet") == 0,
       "all-to-all by packets: 2S + 4(n-1)S/n");
    ok(perf_bytes_per_rank(PERF_ALLREDUCE, "ring", 0, 8, M, &path) < 0 && strcmp(path, "network") == 0,
       "no memory bound for an algorithm that crosses a network");
    ok(perf_bytes_per_rank(PERF_BARRIER, "mesh", 0, 8, 0, &path) < 0 && strcmp(path, "none") == 0,
       "no memory bound for the barrier (only the launch floor)");
    ok(near(perf_bytes_per_rank(PERF_ALLREDUCE, "rsag", 0, 1, M, &path), 2 * S) && strcmp(path, "copy") == 0,
       "one rank: a copy");
    /* issue 18's figures: 2nS over B = 4 TB/s gives busbw 2(n-1)/n S / that */
    {
        double t2 = perf_bound_us(perf_bytes_per_rank(PERF_ALLREDUCE, "rsag", 1, 2, M, NULL), 2, 4000);
        double t8 = perf_bound_us(perf_bytes_per_rank(PERF_ALLREDUCE, "rsag", 1, 8, M, NULL), 8, 4000);
        ok(near(S / t2 / 1e3, 1000) && near(2.0 * 7 / 8 * S / t8 / 1e3, 437.5),
           "allreduce zero-copy bound busbw at 4 TB/s: 1000 GB/s at 2 ranks, 437.5 at 8 (got %.1f, %.1f)",
           S / t2 / 1e3, 2.0 * 7 / 8 * S / t8 / 1e3);
        ok(near(perf_bound_us(2 * S, 1, 4000), 2 * S / 4000 / 1e3),
           "ranks on their own devices: each device's own bytes");
        ok(perf_bound_us(-1, 2, 4000) < 0 && perf_bound_us(S, 2, 0) < 0, "no bound without bytes or a rate");
    }

    /* the tool */
    snprintf(js, sizeof(js), "/tmp/weft-perf-bound-t-%d.json", (int)getpid());
    /* registration on first use off: the calls stage, and the path says so */
    snprintf(cmd, sizeof(cmd),
             "WEFT_REG_MIN_BYTES=1099511627776 %s/tools/weft-perf --ranks 2 allreduce --bound --json %s -b 64K -e 1M "
             "-f 16 -n 3 -w 1 2>&1",
             TOP_BUILDDIR, js);
    is_int(0, run(cmd, out, sizeof(out)), "weft-perf --bound runs");
    ok(strstr(out, "# copy rate B") && strstr(out, "# launch floor") && strstr(out, "Out of bounds values : 0 OK"),
       "and says the copy rate and the launch floor it measured, results checked");
    ok(strstr(out, "moved") && strstr(out, "/floor") && strstr(out, "   staged ") && strstr(out, "# Bound ratio"),
       "with the path, bytes moved, bound, ratio and time/floor columns, and a summary line");
    {
        FILE *f = fopen(js, "r");
        size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
        out[n] = '\0';
        if (f)
            fclose(f);
        double ratio = json_num(out, "ratio"), rate = json_num(out, "copy_rate_gbs");
        double floor_us = json_num(out, "launch_floor_us"), moved = json_num(out, "moved_bytes_per_rank");
        double t = json_num(out, "oop_time_us"), bound = json_num(out, "bound_us");
        ok(rate > 0 && floor_us > 0, "JSON: the copy rate (%g GB/s) and launch floor (%g us) are measured", rate,
           floor_us);
        /* the JSON rounds the rate to 3 decimals: 1e-3 relative */
        ok(near(moved, 5.0 * 65536) && fabs(bound - moved * 2 / rate / 1e3) < 1e-3 * bound,
           "JSON: 64 KiB staged moves 5 x 64 KiB per rank, bound = 2 ranks' bytes / B (%g, %g us)", moved, bound);
        ok(ratio > 0 && fabs(ratio - bound / t) < 1e-3 * (bound / t) + 1e-3, "JSON: ratio = bound / time (%g)", ratio);
        unlink(js);
    }
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 allreduce --bound --window -b 1M -e 1M -n 2 -w 1 2>&1",
             TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 0 && strstr(out, " zero-copy ") && strstr(out, "Out of bounds values : 0 OK"),
       "--window: the zero-copy path's bound");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 allreduce --bound -b 1M -e 1M -n 2 -w 1 2>&1",
             TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 0 && strstr(out, " zero-copy ") && !strstr(out, " staged ") &&
           strstr(out, "Out of bounds values : 0 OK"),
       "buffers outside windows that the registration cache took: the path is what ran, zero-copy");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 allreduce -b 64K -e 64K -n 2 -w 1 2>&1", TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 0 && !strstr(out, "/floor") && !strstr(out, "copy rate") &&
           strstr(out, "#wrong       time    algbw    busbw #wrong\n"),
       "without --bound the table is nccl-tests' as before");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 p2p --bound -e 4K -n 2 -R 3 2>&1", TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 0 && strstr(out, "x flag") && strstr(out, "bw/bound") &&
           strstr(out, "# launch floor"),
       "p2p --bound: latencies against the flag round trip, puts against B / 2");
    return test_done();
}
