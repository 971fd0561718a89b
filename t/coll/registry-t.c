/*
 * The kernel registry (src/kernels/kernels.c) and the selection table
 * (src/coll/coll_table.c): every kernel index names its body, a name finds
 * its index, a launch carries both; the table picks by platform (the
 * backend's WEFT_CAP_GPU), never by a backend's name.
 */
#include "tap/basic.h"
#include "backend.h"
#include "coll.h"
#include "kernels.h"
#include "bodies.h"

#include <string.h>

/* The table's algorithm for one call, after skipping @p skip rules. */
static const char *pick(uint64_t caps, weft_coll_t coll, int nranks, int one_host, uint64_t bytes, int skip)
{
    size_t pos = 0;
    const char *a = NULL;
    for (int i = 0; i <= skip; i++)
        a = weft_coll_table_next(caps, coll, nranks, one_host, bytes, &pos);
    return a ? a : "(none)";
}

/* Each kernel's argument struct, from the one list of kernels. */
#define WANT_SIZE(name, body, args_t, max_threads) sizeof(args_t),
static const size_t want_size[] = {WEFT_BUILTIN_KERNELS(WANT_SIZE)};
#undef WANT_SIZE

int main(void)
{
    int ids_ok = 1, sizes_ok = 1;
    weft_gpu_launch_t l;
    char args[8];

    plan(36);
    for (int id = 0; id < WEFT_KERNEL_COUNT; id++) {
        const weft_builtin_kernel_t *k = weft_kernel_get((weft_kernel_id_t)id);
        if (!k->name || !k->host_fn || weft_kernel_find(k->name) != id) {
            diag("kernel %d (%s) does not round-trip", id, k->name ? k->name : "unnamed");
            ids_ok = 0;
        }
        if (k->args_size != want_size[id])
            sizes_ok = 0;
    }
    ok(ids_ok && WEFT_KERNEL_COUNT > 20, "every kernel index has a body and its name finds it again (%d kernels)",
       (int)WEFT_KERNEL_COUNT);
    ok(sizes_ok, "every kernel's argument size is its argument struct's");
    is_int(WEFT_KERNEL_coll_allreduce_rsag, weft_kernel_find("coll_allreduce_rsag"), "a name finds its index");
    is_int(-1, weft_kernel_find("coll_no_such_kernel"), "an unknown name finds none");
    weft_kernel_launch_init(&l, WEFT_KERNEL_coll_p2p, 3, 7, args, sizeof(args));
    ok(l.kernel == WEFT_KERNEL_coll_p2p && l.host_fn == weft_kernel_get(WEFT_KERNEL_coll_p2p)->host_fn &&
           strcmp(l.name, "coll_p2p") == 0 && l.nblocks == 3 && l.nthreads == 7 && l.args == args &&
           l.args_size == sizeof(args),
       "a launch carries the kernel's index, body and name");

    /* the CPU platform (the host backend reports no WEFT_CAP_GPU, even with multicast) */
    uint64_t cpu = WEFT_CAP_IPC | WEFT_CAP_MULTICAST, gpu = WEFT_CAP_IPC | WEFT_CAP_GPU;
    is_string("packet", pick(cpu, WEFT_COLL_ALLREDUCE, 2, 1, 256, 0), "cpu, 2 ranks, 256 B: the one-shot");
    is_string("rsag", pick(cpu, WEFT_COLL_ALLREDUCE, 2, 1, 512, 0), "cpu, 2 ranks, 512 B: rsag");
    is_string("packet", pick(cpu, WEFT_COLL_ALLREDUCE, 4, 1, 1024, 0), "cpu, 4 ranks, 1 KiB: the one-shot");
    is_string("rsag", pick(cpu, WEFT_COLL_ALLREDUCE, 4, 1, 4096, 0), "cpu, 4 ranks, 4 KiB: rsag");
    is_string("packet2", pick(cpu, WEFT_COLL_ALLREDUCE, 8, 1, 2048, 0), "cpu, 8 ranks, 2 KiB: the two-step");
    is_string("rsag", pick(cpu, WEFT_COLL_ALLREDUCE, 4, 1, 1 << 20, 0), "cpu, 1 MiB: rsag, never the switch");
    is_string("packet", pick(cpu, WEFT_COLL_ALLGATHER, 8, 1, 64, 0), "cpu, allgather of 64 B a rank: packets");
    is_string("(none)", pick(cpu, WEFT_COLL_ALLGATHER, 8, 1, 128, 0),
              "cpu, allgather of 128 B a rank: no rule (the mesh, first of the algorithms)");
    is_string("packet", pick(cpu, WEFT_COLL_REDUCE_SCATTER, 2, 1, 256, 0), "cpu, reduce-scatter of 256 B a rank: packets");
    is_string("(none)", pick(cpu, WEFT_COLL_REDUCE_SCATTER, 2, 1, 512, 0),
              "cpu, reduce-scatter of 512 B a rank: no rule (the mesh)");
    is_string("packet", pick(cpu, WEFT_COLL_BROADCAST, 4, 1, 1024, 0), "cpu, broadcast of 1 KiB: packets");
    is_string("packet", pick(cpu, WEFT_COLL_REDUCE, 2, 1, 256, 0), "cpu, 2 ranks, reduce of 256 B: packets");
    is_string("(none)", pick(cpu, WEFT_COLL_REDUCE, 2, 1, 512, 0), "cpu, 2 ranks, reduce of 512 B: the mesh");
    is_string("packet", pick(cpu, WEFT_COLL_REDUCE, 4, 1, 1024, 0), "cpu, 4 ranks, reduce of 1 KiB: packets");
    is_string("packet", pick(cpu, WEFT_COLL_ALLTOALL, 8, 1, 128, 0), "cpu, all-to-all of 128 B a rank: packets");
    is_string("(none)", pick(cpu, WEFT_COLL_ALLTOALL, 2, 1, 256, 0),
              "cpu, all-to-all of 256 B a rank: no rule (the mesh)");
    is_string("packet", pick(gpu, WEFT_COLL_ALLTOALL, 2, 1, 64, 0), "gpu, all-to-all of 64 B a rank: packets");
    is_string("packet", pick(gpu, WEFT_COLL_ALLTOALL, 8, 1, 65536, 0), "gpu, 8 ranks, all-to-all of 64 KiB a rank: packets");
    is_string("(none)", pick(gpu, WEFT_COLL_ALLTOALL, 8, 1, 131072, 0),
              "gpu, all-to-all of 128 KiB a rank: no rule (the mesh)");
    /* the GPU platform */
    is_string("packet", pick(gpu, WEFT_COLL_ALLREDUCE, 4, 1, 32768, 0), "gpu, 4 ranks, 32 KiB: the one-shot");
    is_string("switch", pick(gpu, WEFT_COLL_ALLREDUCE, 4, 1, 1 << 20, 0),
              "gpu, 1 MiB: the switch first (admitted only with WEFT_CAP_MULTICAST)");
    is_string("rsag", pick(gpu, WEFT_COLL_ALLREDUCE, 4, 1, 1 << 20, 1), "then rsag");
    is_string("packet", pick(gpu, WEFT_COLL_BROADCAST, 8, 1, 16384, 0), "gpu, 8 ranks, broadcast of 16 KiB: packets");
    is_string("(none)", pick(gpu, WEFT_COLL_BROADCAST, 8, 1, 32768, 0), "gpu, 8 ranks, broadcast of 32 KiB: the mesh");
    is_string("packet", pick(gpu, WEFT_COLL_REDUCE, 2, 1, 65536, 0), "gpu, 2 ranks, reduce of 64 KiB: packets");
    is_string("packet", pick(gpu, WEFT_COLL_ALLREDUCE, 8, 1, 65536, 0), "gpu, 8 ranks, allreduce of 64 KiB: the one-shot");
    is_string("packet", pick(gpu, WEFT_COLL_ALLGATHER, 2, 1, 65536, 0), "gpu, 2 ranks, allgather of 64 KiB a rank: packets");
    is_string("packet", pick(gpu, WEFT_COLL_ALLGATHER, 8, 1, 65536, 0), "gpu, 8 ranks, allgather of 64 KiB a rank: packets");
    is_string("(none)", pick(gpu, WEFT_COLL_ALLGATHER, 8, 1, 131072, 0),
              "gpu, 8 ranks, allgather of 128 KiB a rank: the mesh");
    is_string("packet", pick(gpu, WEFT_COLL_REDUCE_SCATTER, 4, 1, 65536, 0),
              "gpu, 4 ranks, reduce-scatter of 64 KiB a rank: packets");
    /* any platform */
    is_string("tree", pick(gpu, WEFT_COLL_BROADCAST, 4, 0, 4096, 0), "several hosts: a small broadcast down the tree");
    return 0;
}
