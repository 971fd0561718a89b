#!/usr/bin/env python3
"""PyTorch's c10d collectives through weft's NCCL library, values checked.

    LD_PRELOAD=/path/to/weft/_b/.libs/libweft_nccl.so \\
        python3 scripts/torch-check.py [--ranks 2 4] [--outdir DIR]

Runs on a GPU host: every rank is a process (torch.multiprocessing), all of
them on GPU 0 (weft, unlike NCCL, runs several ranks on one GPU), with the
process group's backend "nccl" resolved to weft's library by LD_PRELOAD
(which every child inherits). Each check compares against values computed
on the host, for several dtypes where the collective reduces:

  all_reduce (sum, product, min, max, avg, premul_sum), all_gather,
  all_gather_into_tensor, reduce_scatter_tensor, reduce_scatter (lists),
  broadcast, reduce, all_to_all_single (even and uneven splits, with
  zeros), all_to_all (lists), gather, scatter, send/recv, batch_isend_irecv,
  barrier, a CUDA-graph-captured all_reduce replayed, and tensors from a
  torch.cuda.MemPool backed by ncclMemAlloc (the process group's allocator,
  or, where PyTorch refuses it on a GPU without multicast, a pluggable
  allocator over ncclMemAlloc).

Prints one line per check and exits non-zero when any fails.
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.int8,
          torch.uint8]


def close(a, b, dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return torch.allclose(a.float(), b.float(), rtol=1e-2, atol=1e-2)
    if dtype.is_floating_point:
        return torch.allclose(a, b, rtol=1e-5, atol=1e-5)
    return torch.equal(a, b)


SHIM_C = r"""
#include <stddef.h>
#include <sys/types.h>
/* ncclMemAlloc/ncclMemFree resolve to the preloaded NCCL library */
extern int ncclMemAlloc(void **ptr, size_t size);
extern int ncclMemFree(void *ptr);
static long allocs;
long shim_allocs(void) { return allocs; }
void *shim_alloc(ssize_t size, int device, void *stream)
{
    void *p = NULL;
    (void)device; (void)stream;
    if (ncclMemAlloc(&p, (size_t)size) != 0) return NULL;
    allocs++;
    return p;
}
void shim_free(void *ptr, ssize_t size, int device, void *stream)
{
    (void)size; (void)device; (void)stream;
    ncclMemFree(ptr);
}
"""


def nccl_mem_shim():
    """Builds (once per process) a pluggable-allocator shim over ncclMemAlloc."""
    d = tempfile.mkdtemp(prefix="torch-check-shim.")
    src, lib = os.path.join(d, "shim.c"), os.path.join(d, "libshim.so")
    with open(src, "w") as f:
        f.write(SHIM_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", lib, src], check=True)
    return lib


class Checker:
    def __init__(self, rank, world):
        self.rank, self.world, self.failed, self.lines = rank, world, 0, []

    def check(self, name, fn):
        try:
            ok = fn()
            msg = "" if ok else "wrong values"
        except Exception as e:  # an error is a failed check, not a crash
            ok, msg = False, "%s: %s" % (type(e).__name__, e)
            traceback.print_exc()
        if not ok:
            self.failed += 1
        self.lines.append("%s %s x%d%s" % ("ok" if ok else "FAILED", name, self.world, "" if ok else ": " + msg))


def collectives(c, dev):
    rank, world = c.rank, c.world
    n = 1024

    def ar(op, dtype):
        def f():
            x = torch.full((n,), rank + 1, dtype=dtype, device=dev)
            dist.all_reduce(x, op=op)
            vals = [r + 1 for r in range(world)]
            if op == dist.ReduceOp.SUM:
                want = sum(vals)
            elif op == dist.ReduceOp.PRODUCT:
                want = 1
                for v in vals:
                    want *= v
            elif op == dist.ReduceOp.MIN:
                want = 1
            elif op == dist.ReduceOp.MAX:
                want = world
            else:  # AVG
                want = sum(vals) / world
            return close(x, torch.full((n,), want, dtype=dtype, device=dev), dtype)
        return f

    for dtype in DTYPES:
        ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
        if dtype.is_floating_point:
            ops.append(dist.ReduceOp.AVG)
        for op in ops:
            c.check("all_reduce %s %s" % (op, dtype), ar(op, dtype))

    def premul():
        # ncclRedOpCreatePreMulSum: sum over ranks of factor * input
        x = torch.full((n,), float(rank + 1), device=dev)
        dist.all_reduce(x, op=dist._make_nccl_premul_sum(0.5))
        return close(x, torch.full((n,), 0.5 * sum(r + 1 for r in range(world)), device=dev), torch.float32)
    c.check("all_reduce premul_sum", premul)

    def premul_tensor():
        factor = torch.tensor([0.25], device=dev)  # a device-resident scalar
        x = torch.full((n,), float(rank + 1), device=dev)
        dist.all_reduce(x, op=dist._make_nccl_premul_sum(factor))
        return close(x, torch.full((n,), 0.25 * sum(r + 1 for r in range(world)), device=dev), torch.float32)
    c.check("all_reduce premul_sum (device scalar)", premul_tensor)

    def all_gather_into():
        x = torch.arange(n, device=dev, dtype=torch.float32) + rank * n
        out = torch.empty(world * n, device=dev)
        dist.all_gather_into_tensor(out, x)
        return torch.equal(out, torch.arange(world * n, device=dev, dtype=torch.float32))
    c.check("all_gather_into_tensor", all_gather_into)

    def all_gather_list():
        x = torch.full((n,), rank, device=dev, dtype=torch.int64)
        outs = [torch.empty(n, device=dev, dtype=torch.int64) for _ in range(world)]
        dist.all_gather(outs, x)
        return all(torch.equal(o, torch.full((n,), r, device=dev, dtype=torch.int64)) for r, o in enumerate(outs))
    c.check("all_gather (list)", all_gather_list)

    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        def rs(dtype=dtype):
            x = torch.arange(world * n, device=dev).to(dtype)
            out = torch.empty(n, device=dev, dtype=dtype)
            dist.reduce_scatter_tensor(out, x)
            want = (torch.arange(rank * n, (rank + 1) * n, device=dev) * world).to(dtype)
            return close(out, want, dtype)
        c.check("reduce_scatter_tensor %s" % dtype, rs)

    def rs_list():
        ins = [torch.full((n,), float(r + rank), device=dev) for r in range(world)]
        out = torch.empty(n, device=dev)
        dist.reduce_scatter(out, ins)
        return close(out, torch.full((n,), float(world * rank + sum(range(world))), device=dev), torch.float32)
    c.check("reduce_scatter (list)", rs_list)

    for root in range(world):
        def bc(root=root):
            x = torch.full((n,), 7.0 + root if rank == root else -1.0, device=dev)
            dist.broadcast(x, src=root)
            return close(x, torch.full((n,), 7.0 + root, device=dev), torch.float32)
        c.check("broadcast root %d" % root, bc)

        def rd(root=root):
            x = torch.full((n,), float(rank + 1), device=dev)
            dist.reduce(x, dst=root)
            return rank != root or close(x, torch.full((n,), float(sum(r + 1 for r in range(world))), device=dev),
                                         torch.float32)
        c.check("reduce root %d" % root, rd)

    def a2a_even():
        x = torch.arange(world * n, device=dev, dtype=torch.float32) + 1000 * rank
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x)
        want = torch.cat([torch.arange(rank * n, (rank + 1) * n, device=dev, dtype=torch.float32) + 1000 * p
                          for p in range(world)])
        return torch.equal(out, want)
    c.check("all_to_all_single (even)", a2a_even)

    def a2a_uneven():
        # rank r sends (r + p) % 3 elements to p (some zero), valued 100 r + p
        send_splits = [(rank + p) % 3 for p in range(world)]
        recv_splits = [(p + rank) % 3 for p in range(world)]
        x = torch.cat([torch.full((s,), float(100 * rank + p), device=dev) for p, s in enumerate(send_splits)])
        out = torch.empty(sum(recv_splits), device=dev)
        dist.all_to_all_single(out, x, output_split_sizes=recv_splits, input_split_sizes=send_splits)
        want = torch.cat([torch.full((s,), float(100 * p + rank), device=dev) for p, s in enumerate(recv_splits)])
        return torch.equal(out, want)
    c.check("all_to_all_single (uneven, zeros)", a2a_uneven)

    def a2a_list():
        ins = [torch.full((p + 1,), float(10 * rank + p), device=dev) for p in range(world)]
        outs = [torch.empty(rank + 1, device=dev) for _ in range(world)]
        dist.all_to_all(outs, ins)
        return all(torch.equal(o, torch.full((rank + 1,), float(10 * p + rank), device=dev))
                   for p, o in enumerate(outs))
    c.check("all_to_all (list)", a2a_list)

    for root in (0, world - 1):
        def ga(root=root):
            x = torch.full((n,), float(rank), device=dev)
            outs = [torch.empty(n, device=dev) for _ in range(world)] if rank == root else None
            dist.gather(x, outs, dst=root)
            return rank != root or all(torch.equal(o, torch.full((n,), float(p), device=dev))
                                       for p, o in enumerate(outs))
        c.check("gather root %d" % root, ga)

        def sc(root=root):
            ins = [torch.full((n,), float(p * 3), device=dev) for p in range(world)] if rank == root else None
            out = torch.empty(n, device=dev)
            dist.scatter(out, ins, src=root)
            return torch.equal(out, torch.full((n,), float(rank * 3), device=dev))
        c.check("scatter root %d" % root, sc)

    def sendrecv():
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        x = torch.full((n,), float(rank), device=dev)
        y = torch.empty(n, device=dev)
        if rank % 2 == 0:
            dist.send(x, nxt)
            dist.recv(y, prv)
        else:
            dist.recv(y, prv)
            dist.send(x, nxt)
        return torch.equal(y, torch.full((n,), float(prv), device=dev))
    c.check("send/recv ring", sendrecv)

    def batch_p2p():
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        x = torch.full((n,), float(rank), device=dev)
        y = torch.empty(n, device=dev)
        z = torch.empty(n, device=dev)
        ops = [dist.P2POp(dist.isend, x, nxt), dist.P2POp(dist.irecv, y, prv),
               dist.P2POp(dist.isend, x, prv), dist.P2POp(dist.irecv, z, nxt)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        return torch.equal(y, torch.full((n,), float(prv), device=dev)) and \
            torch.equal(z, torch.full((n,), float(nxt), device=dev))
    c.check("batch_isend_irecv (both neighbours)", batch_p2p)

    def barrier():
        dist.barrier()
        return True
    c.check("barrier", barrier)

    def graph():
        x = torch.zeros(n, device=dev)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            # warm up (sets the communicator up) outside the capture
            x.fill_(1.0)
            dist.all_reduce(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            dist.all_reduce(x)
        good = True
        for i in range(3):
            x.fill_(float(rank + i))
            g.replay()
            torch.cuda.synchronize()
            good = good and close(x, torch.full((n,), float(sum(r + i for r in range(world))), device=dev),
                                  torch.float32)
        return good
    c.check("all_reduce captured in a CUDA graph, replayed 3 times", graph)

    def mempool():
        # tensors from ncclMemAlloc/ncclMemFree. The process group's own
        # allocator (backend.mem_allocator) is refused by PyTorch itself on a
        # GPU without multicast (ProcessGroupNCCL::supportsTensorAlloc asks
        # the driver, whatever the NCCL library): there the same pool is
        # built over a two-function shim that calls ncclMemAlloc/ncclMemFree
        # of the preloaded library, and counts its calls so the check knows
        # the tensors came from it.
        try:
            backend = dist.group.WORLD._get_backend(torch.device("cuda"))
            pool, counter = torch.cuda.MemPool(backend.mem_allocator), None
        except RuntimeError as e:
            if "not supported" not in str(e):
                raise
            path = nccl_mem_shim()
            alloc = torch.cuda.memory.CUDAPluggableAllocator(path, "shim_alloc", "shim_free")
            pool, counter = torch.cuda.MemPool(alloc.allocator()), ctypes.CDLL(path).shim_allocs
            if rank == 0:
                print("mempool: PyTorch refuses its NCCL allocator here (%s); pool over ncclMemAlloc through a "
                      "pluggable allocator instead" % e)
        with torch.cuda.use_mem_pool(pool):
            x = torch.full((1 << 20,), float(rank + 1), device=dev)
            y = torch.empty((1 << 20) * world, device=dev)
        if counter is not None and counter() < 1:
            raise RuntimeError("the pool's tensors did not come from ncclMemAlloc")
        dist.all_reduce(x)
        dist.all_gather_into_tensor(y, x)
        want = float(sum(r + 1 for r in range(world)))
        good = close(x, torch.full_like(x, want), torch.float32) and close(y, torch.full_like(y, want), torch.float32)
        del x, y
        return good
    c.check("all_reduce and all_gather on tensors from a MemPool of ncclMemAlloc", mempool)


def worker(rank, world, port, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    torch.cuda.set_device(0)  # every rank on GPU 0
    dev = torch.device("cuda", 0)
    c = Checker(rank, world)
    try:
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
        collectives(c, dev)
        torch.cuda.synchronize()
        dist.destroy_process_group()
    except Exception as e:
        c.failed += 1
        c.lines.append("FAILED setup x%d: %s: %s" % (world, type(e).__name__, e))
        traceback.print_exc()
    queue.put((rank, c.failed, c.lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--outdir", default=None)
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args()
    if "libweft_nccl" not in os.environ.get("LD_PRELOAD", ""):
        print("LD_PRELOAD does not name libweft_nccl: this would test another NCCL", file=sys.stderr)
        return 2
    failed = 0
    report = []
    ctx = mp.get_context("spawn")
    for i, world in enumerate(args.ranks):
        queue = ctx.Queue()
        procs = [ctx.Process(target=worker, args=(r, world, 29500 + 17 * i + os.getpid() % 1000, queue))
                 for r in range(world)]
        for p in procs:
            p.start()
        results = {}
        try:
            for _ in range(world):
                rank, nfail, lines = queue.get(timeout=args.timeout)
                results[rank] = (nfail, lines)
        except Exception:
            report.append("FAILED x%d: ranks %s did not report within %d s" %
                          (world, sorted(set(range(world)) - set(results)), args.timeout))
            failed += 1
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
        for rank in sorted(results):
            nfail, lines = results[rank]
            failed += nfail
            report += ["rank %d: %s" % (rank, line) for line in lines if rank == 0 or not line.startswith("ok")]
    for line in report:
        print(line)
    print("torch-check: %s" % ("every check passed" if not failed else "%d failed" % failed))
    if args.outdir:
        os.makedirs(args.outdir, exist_ok=True)
        with open(os.path.join(args.outdir, "torch-check.txt"), "w") as f:
            f.write("\n".join(report) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
