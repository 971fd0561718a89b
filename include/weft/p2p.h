/*
 * weft device API: the arguments of the point-to-point built-in kernels.
 *
 * weft_launch_builtin() runs a built-in kernel by name with a copy of an
 * argument struct whose size must match the kernel's. The point-to-point
 * kernels (the ones weft-perf p2p times) take this struct:
 *
 *   p2p_flag_pingpong  one 8-byte flag each way through the packet buffer
 *   p2p_mc_pingpong    memory channel signal and wait
 *   p2p_ll_pingpong    memory channel LL16 packets of 8 bytes
 *   p2p_pc_pingpong    port channel put + signal of 8 bytes
 *   p2p_put_bw         @c iters puts of @c bytes, then one signal
 *   p2p_pc_put_bw      the same over a port channel
 *   p2p_put_stream     the put loop spread over every block
 *
 * Rank 0 starts each exchange and rank 1 answers. The channel handles
 * come from weft_memory_channel_device_handle() and
 * weft_port_channel_device_handle(). Compiles under nvcc, hipcc and cc.
 */
#ifndef WEFT_P2P_H
#define WEFT_P2P_H

#include "weft/device.h"

typedef struct {
    weft_memory_channel_dev_t mc;   /* to the peer's data buffer */
    weft_memory_channel_dev_t mcp;  /* to the peer's packet buffer */
    weft_port_channel_dev_t pc;
    uint64_t bytes;                 /* put size (bandwidth) */
    uint32_t flag;                  /* first packet flag of this launch; values grow across launches */
    int32_t rank;                   /* 0 starts, 1 answers */
    int32_t iters;
    int32_t reserved;
} weft_p2p_args_t;

#endif
