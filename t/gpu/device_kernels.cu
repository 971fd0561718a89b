/*
 * Every part of the portable device API used from a GPU kernel, so that
 * compile-t can check it compiles under nvcc and hipcc (the host side is
 * compiled by every C test).
 */
#include "weft/device.h"
#include "weft/dtype.h"
#include "weft/switch.h"

struct all_args {
    weft_memory_channel_dev_t mc;
    weft_port_channel_dev_t pc;
    weft_sema_dev_t sema;
    weft_switch_channel_dev_t sc;
    weft_dev_ctl_t *ctl;
    uint64_t *word;
    void *buf;
    size_t bytes;
    uint32_t flag;
};

__global__ void weft_compile_all(all_args a)
{
    weft_kctx_t k = {blockIdx.x, gridDim.x, threadIdx.x, blockDim.x};
    size_t tid = weft_gtid(&k), nt = weft_gnthreads(&k);
    if (weft_block_sync_or(&k, a.bytes == 0))
        return;
    weft_mc_put(&a.mc, 0, 16, a.bytes, tid, nt);
    weft_mc_get(&a.mc, 0, 16, a.bytes, tid, nt);
    weft_block_sync(&k);
    if (k.thread == 0) {
        weft_mc_signal(&a.mc);
        weft_mc_relaxed_signal(&a.mc);
        if (weft_mc_wait(&a.mc))
            return;
        weft_sema_poll(&a.sema);
        weft_mc_relaxed_wait(&a.mc);
    }
    weft_mc_put_packets16(&a.mc, 0, 0, a.bytes, a.flag, tid, nt);
    weft_mc_unpack_packets16(&a.mc, 0, 0, a.bytes, a.flag, tid, nt);
    weft_mc_put_packets8(&a.mc, 0, 0, a.bytes, a.flag, tid, nt);
    weft_mc_unpack_packets8(&a.mc, 0, 0, a.bytes, a.flag, tid, nt);
    WEFT_MC_WRITE(float, &a.mc, tid, WEFT_MC_READ(float, &a.mc, tid) + 1.0f);
    if (k.thread == 0) {
        weft_pc_put(&a.pc, 0, 0, a.bytes);
        weft_pc_signal(&a.pc);
        weft_pc_put_with_signal(&a.pc, 0, 0, a.bytes);
        weft_pc_put_with_signal_and_flush(&a.pc, 1ull << 33, 0, a.bytes);
        weft_pc_flush(&a.pc);
        weft_pc_wait(&a.pc);
        weft_fetch_add_release_u64(a.word, 1);
        weft_store_relaxed_u64(a.word, weft_load_relaxed_u64(a.word));
        weft_fence_system();
    }
    /* the switch channel (compiled only: never run on shared GPUs) */
    if (weft_sc_reduces(WEFT_FLOAT32, WEFT_SUM)) {
        weft_sc_allreduce(&a.sc, 0, a.bytes, WEFT_FLOAT32, tid, nt);
        weft_sc_allreduce(&a.sc, 0, a.bytes, WEFT_FLOAT16, tid, nt);
        weft_sc_store16(&a.sc, 0, weft_sc_reduce16(&a.sc, 0, WEFT_BFLOAT16));
    }
    char *b = (char *)a.buf;
    for (size_t i = tid; i < a.bytes / 16; i += nt) {
        weft_reduce_elem(WEFT_FLOAT16, WEFT_SUM, b + 2 * i, b + 2 * i + 2);
        weft_reduce_elem(WEFT_BFLOAT16, WEFT_MAX, b + 2 * i, b + 2 * i + 2);
        weft_reduce_elem(WEFT_FP8_E4M3, WEFT_PROD, b + i, b + i + 1);
        weft_reduce_elem(WEFT_FP8_E5M2, WEFT_MIN, b + i, b + i + 1);
        weft_reduce_elem(WEFT_FLOAT64, WEFT_SUM, b + 8 * i, b + 8 * i + 8);
        weft_reduce_elem(WEFT_INT64, WEFT_PROD, b + 8 * i, b + 8 * i + 8);
    }
}
