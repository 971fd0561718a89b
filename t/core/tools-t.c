/* The tools a user runs first: weft-info and weft-perf. */
#include "config.h"
#include "tap/basic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

int main(void)
{
    static char out[65536];
    char cmd[1024];
    plan(31);
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-info", TOP_BUILDDIR);
    is_int(0, run(cmd, out, sizeof(out)), "weft-info runs");
    ok(strstr(out, "GPU backends: host") && strstr(out, "networks: ethernet"), "and shows backends and networks");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-info -c", TOP_BUILDDIR);
    is_int(0, run(cmd, out, sizeof(out)), "weft-info -c runs");
    ok(strstr(out, "WEFT_INIT_TIMEOUT_MS") && strstr(out, "WEFT_SOCKET_IFNAME"), "and lists the parameters");
    ok(strstr(out, "WEFT_NET_SOCKETS") && strstr(out, "WEFT_NET_CHUNK_BYTES") && strstr(out, "1 .. 16"),
       "and the ethernet provider's own, with their ranges");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 3 bootstrap-allgather -b 8 -e 64K -f 16 -n 5 -w 1 2>&1",
             TOP_BUILDDIR);
    is_int(0, run(cmd, out, sizeof(out)), "weft-perf --ranks 3 bootstrap-allgather runs");
    ok(strstr(out, "algbw") && strstr(out, "65536") && strstr(out, "Out of bounds values : 0 OK"),
       "and prints a checked table up to 64 KiB");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 no-such-op 2>&1", TOP_BUILDDIR);
    is_int(2, run(cmd, out, sizeof(out)), "an unknown operation is a usage error");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 bootstrap-barrier -b 9 -e 8 2>&1", TOP_BUILDDIR);
    is_int(2, run(cmd, out, sizeof(out)), "a minimum above the maximum is a usage error");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 p2p -b 1K -e 64K -n 2 -R 3 2>&1", TOP_BUILDDIR);
    is_int(0, run(cmd, out, sizeof(out)), "weft-perf --ranks 2 p2p runs");
    ok(strstr(out, "memory channel signal/wait") && strstr(out, "port channel put+signal") && strstr(out, "65536"),
       "and reports channel latencies and put bandwidth up to 64 KiB");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 4 allreduce -b 8 -e 1M -f 16 -n 3 -w 1 2>&1", TOP_BUILDDIR);
    is_int(0, run(cmd, out, sizeof(out)), "weft-perf --ranks 4 allreduce runs");
    ok(strstr(out, "out-of-place") && strstr(out, "1048576") && strstr(out, "Out of bounds values : 0 OK"),
       "and prints nccl-tests' table, checked, up to 1 MiB");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 allreduce -b 8 -e 64K -f 64 -n 3 -w 1 -z 1 2>&1",
             TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 0 && strstr(out, "Out of bounds values : 0 OK"),
       "weft-perf -z 1 (each call waited for) runs, checked");
    snprintf(cmd, sizeof(cmd),
             "%s/tools/weft-perf --ranks 3 --algo packet allreduce -d bfloat16 -o max -b 2 -e 4K -f 4 -n 2 -w 1 2>&1",
             TOP_BUILDDIR);
    is_int(0, run(cmd, out, sizeof(out)), "a forced algorithm, another type and op");
    snprintf(cmd, sizeof(cmd),
             "%s/tools/weft-perf --ranks 2 reduce -d all -o all -b 0 -e 64 -f 8 -n 1 -w 0 2>&1 | "
             "grep -c 'Out of bounds values : 0 OK'", TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 0 && atoi(out) == 60, "-d all -o all: a checked sweep for each of 12 types x 5 ops");
    /* tiny scratch and 64 blocks asked for: the launches take fewer blocks
     * rather than give blocks overlapping parts of scratch */
    snprintf(cmd, sizeof(cmd),
             "WEFT_COLL_SCRATCH_BYTES=4096 WEFT_COLL_BLOCKS=64 %s/tools/weft-perf --ranks 4 reducescatter -d double "
             "-b 0 -e 64K -f 8 -n 1 -w 0 2>&1", TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 0 && strstr(out, "Out of bounds values : 0 OK"),
       "4 KiB of scratch with 64 blocks asked for: still correct (fewer blocks, no overlap)");
    for (const char *const *c = (const char *const[]){"allgather", "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv", NULL};
         *c; c++) {
        snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 3 %s -d int8 -b 3 -e 3K -f 32 -n 2 -w 1 -r 2 2>&1 | "
                 "grep -q 'Out of bounds values : 0 OK'", TOP_BUILDDIR, *c);
        if (run(cmd, out, sizeof(out)) != 0) {
            ok(0, "weft-perf %s is checked correct", *c);
            goto rest;
        }
    }
    ok(1, "weft-perf allgather, reducescatter, broadcast, reduce, alltoall and sendrecv are checked correct");
rest:
    {
        char svg[64], js[64];
        snprintf(svg, sizeof(svg), "/tmp/weft-tools-t-%d.svg", (int)getpid());
        snprintf(js, sizeof(js), "/tmp/weft-tools-t-%d.json", (int)getpid());
        snprintf(cmd, sizeof(cmd),
                 "%s/tools/weft-perf --ranks 2 --plot %s --json %s allgather -b 64 -e 64K -f 4 -n 2 -w 1 >/dev/null 2>&1 && "
                 "grep -c '<circle' %s && grep -c '\"collective\":\"allgather\"' %s",
                 TOP_BUILDDIR, svg, js, svg, js);
        is_int(0, run(cmd, out, sizeof(out)), "--plot and --json write their files");
        ok(strcmp(out, "6\n6\n") == 0, "one plotted point and one JSON line per size (got %s)", out);
        unlink(svg);
        unlink(js);
    }
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-info -a", TOP_BUILDDIR);
    is_int(0, run(cmd, out, sizeof(out)), "weft-info -a runs");
    ok(strstr(out, "allreduce") && strstr(out, "packet") && strstr(out, "rsag"), "and lists the algorithms");
    ok(strstr(out, "selection table") && strstr(out, "cpu      allreduce") && strstr(out, "gpu      allreduce"),
       "and the selection table, by platform");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 allreduce --vs nosuchlib 2>&1", TOP_BUILDDIR);
    is_int(2, run(cmd, out, sizeof(out)), "--vs with an unknown library is a usage error");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 allreduce --nccl-buffers register 2>&1", TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 2 && strstr(out, "goes with --vs nccl"),
       "--nccl-buffers without --vs nccl is a usage error that says so");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 allreduce --vs nccl --nccl-buffers some 2>&1",
             TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 2 && strstr(out, "same, register or memalloc"),
       "--nccl-buffers with an unknown kind is a usage error naming the kinds");
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 allreduce --vs nccl -b 8 -e 8 2>&1", TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 2 && strstr(out, "needs --backend cuda or hip"),
       "--vs nccl on the host backend is refused, saying it needs a GPU backend");
    /* WEFT_PROXY_CHECK_WRITES: the port channel's proxy names each write it
     * waited for (the log to a file: hundreds of lines, one kept) */
    snprintf(cmd, sizeof(cmd),
             "f=$(mktemp) && WEFT_PROXY_CHECK_WRITES=1 WEFT_LOG_LEVEL=debug WEFT_LOG_SUBSYS=proxy %s/tools/weft-perf "
             "--ranks 2 p2p -b 1K -e 1K -n 1 -w 0 -R 1 >/dev/null 2>$f; echo rc=$?; grep -m1 'proxy: write of' $f; "
             "rm -f $f",
             TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 0 && strstr(out, "rc=0") &&
           strstr(out, "proxy: write of 1024 bytes to rank 1: registration") && strstr(out, "): WEFT_OK: success"),
       "WEFT_PROXY_CHECK_WRITES=1: each proxy write is waited for and logged with its registrations and result");
    snprintf(cmd, sizeof(cmd),
             "f=$(mktemp) && WEFT_LOG_LEVEL=debug WEFT_LOG_SUBSYS=proxy %s/tools/weft-perf --ranks 2 p2p -b 1K -e 1K "
             "-n 1 -w 0 -R 1 >/dev/null 2>$f; echo rc=$?; grep -c 'proxy: write of' $f; rm -f $f",
             TOP_BUILDDIR);
    ok(run(cmd, out, sizeof(out)) == 0 && strstr(out, "rc=0\n0\n"), "without it, writes are not logged");
#ifdef WEFT_HAVE_MPI
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 allreduce --vs mpi -b 8 -e 64K -f 64 -n 3 -w 1 2>&1",
             TOP_BUILDDIR);
    is_int(0, run(cmd, out, sizeof(out)), "weft-perf --ranks 2 --vs mpi runs (under mpirun)");
    ok(strstr(out, "weft/MPI") && strstr(out, "Out of bounds values : 0 OK") && strstr(out, "memcpy bandwidth"),
       "and prints MPI's time and the ratio per size, checked, with the memcpy yardstick");
#else
    snprintf(cmd, sizeof(cmd), "%s/tools/weft-perf --ranks 2 allreduce --vs mpi 2>&1", TOP_BUILDDIR);
    is_int(2, run(cmd, out, sizeof(out)), "--vs mpi in a build without MPI is a usage error");
    ok(strstr(out, "no MPI") != NULL, "that says the build has no MPI");
#endif
    return test_done();
}
