/*
 * weft device-side API: what portable kernel bodies (src/kernels/) may use.
 *
 * Compiles as C (the host backend, where a "kernel" is a set of CPU
 * threads), as CUDA C++ under nvcc and as HIP under hipcc. Bodies are
 * plain functions marked WEFT_DEVICE taking a const weft_kctx_t *; they
 * must be correct for any nthreads >= 1 (grid-stride loops over
 * block * nthreads + thread).
 *
 * Memory model. Everything a peer or the proxy observes goes through the
 * atomics below with an explicit order and system scope:
 *   - a writer publishes data with weft_store_release_* or weft_fetch_add_release_*
 *     after the data stores;
 *   - a reader observes the flag with weft_load_acquire_* before the data.
 * Each pairing is named at its use.
 *
 * Waits never hang: weft_wait_geq_u64() and the packet waits give up when
 * the communicator's control block says "abort" or when its timeout
 * passes, record who waited for whom in the block, and return non-zero;
 * kernel bodies then return early and the host reports the error.
 */
#ifndef WEFT_DEVICE_H
#define WEFT_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define WEFT_ON_GPU 1
#define WEFT_CUDA 1
#include <cuda/atomic>
#elif defined(__HIPCC__)
#define WEFT_ON_GPU 1
#define WEFT_HIP 1
#include <hip/hip_runtime.h>
#else
#define WEFT_ON_GPU 0
#include <string.h>
/* Host backend services, in libweft (kept out of line so this header
 * needs no POSIX feature macros). */
#ifdef __cplusplus
extern "C" {
#endif
__attribute__((visibility("default"))) uint64_t weft_host_clock_ns(void);
__attribute__((visibility("default"))) void weft_host_yield(unsigned spins);
#ifdef __cplusplus
}
#endif
#endif

/* WEFT_DEVICE_OUTLINE: a large device function compiled once, called
 * where it is used (its loops dwarf a call's cost). */
#if WEFT_ON_GPU
#define WEFT_DEVICE static __device__ __forceinline__
#define WEFT_DEVICE_OUTLINE static __device__ __noinline__
#define WEFT_GLOBAL_ALIGN(n) __align__(n)
#else
#define WEFT_DEVICE static inline
#define WEFT_DEVICE_OUTLINE static __attribute__((unused))
#define WEFT_GLOBAL_ALIGN(n) __attribute__((aligned(n)))
#endif

#ifdef __cplusplus
extern "C++" {
#endif

/* ------------------------------------------------------------------ */
/* Launch context                                                      */
/* ------------------------------------------------------------------ */

/* Where the calling thread sits in its launch. */
typedef struct {
    unsigned block, nblocks;   /* this block, blocks in the launch */
    unsigned thread, nthreads; /* this thread, threads per block */
} weft_kctx_t;

/* All threads of the block meet (a no-op on the host: one thread). */
WEFT_DEVICE void weft_block_sync(const weft_kctx_t *k)
{
    (void)k;
#if WEFT_ON_GPU
    __syncthreads();
#endif
}

/* weft_block_sync that also tells every thread whether @p pred was
 * non-zero in any thread of the block. */
WEFT_DEVICE int weft_block_sync_or(const weft_kctx_t *k, int pred)
{
    (void)k;
#if WEFT_ON_GPU
    return __syncthreads_or(pred);
#else
    return pred != 0;
#endif
}

/* Index and count of a thread across the whole launch. */
WEFT_DEVICE size_t weft_gtid(const weft_kctx_t *k)
{
    return (size_t)k->block * k->nthreads + k->thread;
}
WEFT_DEVICE size_t weft_gnthreads(const weft_kctx_t *k)
{
    return (size_t)k->nblocks * k->nthreads;
}

/* ------------------------------------------------------------------ */
/* Atomics (system scope) and fences                                   */
/* ------------------------------------------------------------------ */

#if defined(WEFT_CUDA)
#define WEFT_ATOMIC_REF(T, p) cuda::atomic_ref<T, cuda::thread_scope_system>(*(p))
WEFT_DEVICE uint64_t weft_load_acquire_u64(uint64_t *p) { return WEFT_ATOMIC_REF(uint64_t, p).load(cuda::memory_order_acquire); }
WEFT_DEVICE uint64_t weft_load_relaxed_u64(uint64_t *p) { return WEFT_ATOMIC_REF(uint64_t, p).load(cuda::memory_order_relaxed); }
WEFT_DEVICE void weft_store_release_u64(uint64_t *p, uint64_t v) { WEFT_ATOMIC_REF(uint64_t, p).store(v, cuda::memory_order_release); }
WEFT_DEVICE void weft_store_relaxed_u64(uint64_t *p, uint64_t v) { WEFT_ATOMIC_REF(uint64_t, p).store(v, cuda::memory_order_relaxed); }
WEFT_DEVICE uint64_t weft_fetch_add_release_u64(uint64_t *p, uint64_t v) { return WEFT_ATOMIC_REF(uint64_t, p).fetch_add(v, cuda::memory_order_release); }
WEFT_DEVICE uint64_t weft_fetch_add_relaxed_u64(uint64_t *p, uint64_t v) { return WEFT_ATOMIC_REF(uint64_t, p).fetch_add(v, cuda::memory_order_relaxed); }
WEFT_DEVICE uint32_t weft_load_acquire_u32(uint32_t *p) { return WEFT_ATOMIC_REF(uint32_t, p).load(cuda::memory_order_acquire); }
WEFT_DEVICE uint32_t weft_load_relaxed_u32(uint32_t *p) { return WEFT_ATOMIC_REF(uint32_t, p).load(cuda::memory_order_relaxed); }
WEFT_DEVICE void weft_store_release_u32(uint32_t *p, uint32_t v) { WEFT_ATOMIC_REF(uint32_t, p).store(v, cuda::memory_order_release); }
WEFT_DEVICE int weft_cas_u64(uint64_t *p, uint64_t expect, uint64_t v) { return WEFT_ATOMIC_REF(uint64_t, p).compare_exchange_strong(expect, v, cuda::memory_order_acq_rel); }
WEFT_DEVICE void weft_fence_system(void) { cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system); }
/* A release that only threads of this device need to see (device scope:
 * no system-wide fence, which costs a microsecond or so). */
WEFT_DEVICE void weft_store_release_device_u64(uint64_t *p, uint64_t v) { cuda::atomic_ref<uint64_t, cuda::thread_scope_device>(*p).store(v, cuda::memory_order_release); }
#elif defined(WEFT_HIP)
#define WEFT_HA(op, ...) __hip_atomic_##op(__VA_ARGS__, __HIP_MEMORY_SCOPE_SYSTEM)
WEFT_DEVICE uint64_t weft_load_acquire_u64(uint64_t *p) { return WEFT_HA(load, p, __ATOMIC_ACQUIRE); }
WEFT_DEVICE uint64_t weft_load_relaxed_u64(uint64_t *p) { return WEFT_HA(load, p, __ATOMIC_RELAXED); }
WEFT_DEVICE void weft_store_release_u64(uint64_t *p, uint64_t v) { WEFT_HA(store, p, v, __ATOMIC_RELEASE); }
WEFT_DEVICE void weft_store_relaxed_u64(uint64_t *p, uint64_t v) { WEFT_HA(store, p, v, __ATOMIC_RELAXED); }
WEFT_DEVICE uint64_t weft_fetch_add_release_u64(uint64_t *p, uint64_t v) { return WEFT_HA(fetch_add, p, v, __ATOMIC_RELEASE); }
WEFT_DEVICE uint64_t weft_fetch_add_relaxed_u64(uint64_t *p, uint64_t v) { return WEFT_HA(fetch_add, p, v, __ATOMIC_RELAXED); }
WEFT_DEVICE uint32_t weft_load_acquire_u32(uint32_t *p) { return WEFT_HA(load, p, __ATOMIC_ACQUIRE); }
WEFT_DEVICE uint32_t weft_load_relaxed_u32(uint32_t *p) { return WEFT_HA(load, p, __ATOMIC_RELAXED); }
WEFT_DEVICE void weft_store_release_u32(uint32_t *p, uint32_t v) { WEFT_HA(store, p, v, __ATOMIC_RELEASE); }
WEFT_DEVICE void weft_store_release_device_u64(uint64_t *p, uint64_t v) { __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT); }
WEFT_DEVICE int weft_cas_u64(uint64_t *p, uint64_t expect, uint64_t v) { return WEFT_HA(compare_exchange_strong, p, &expect, v, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE); }
WEFT_DEVICE void weft_fence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); __threadfence_system(); }
#else
WEFT_DEVICE uint64_t weft_load_acquire_u64(uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
WEFT_DEVICE uint64_t weft_load_relaxed_u64(uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
WEFT_DEVICE void weft_store_release_u64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
WEFT_DEVICE void weft_store_relaxed_u64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
WEFT_DEVICE uint64_t weft_fetch_add_release_u64(uint64_t *p, uint64_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELEASE); }
WEFT_DEVICE uint64_t weft_fetch_add_relaxed_u64(uint64_t *p, uint64_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
WEFT_DEVICE uint32_t weft_load_acquire_u32(uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
WEFT_DEVICE uint32_t weft_load_relaxed_u32(uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
WEFT_DEVICE void weft_store_release_u32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
WEFT_DEVICE void weft_store_release_device_u64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
WEFT_DEVICE int weft_cas_u64(uint64_t *p, uint64_t expect, uint64_t v) { return __atomic_compare_exchange_n(p, &expect, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE); }
#if defined(__SANITIZE_THREAD__)
/* TSan models no standalone fences: a seq_cst read-modify-write orders the same. */
WEFT_DEVICE void weft_fence_system(void) { static int f; __atomic_fetch_add(&f, 0, __ATOMIC_SEQ_CST); }
#else
WEFT_DEVICE void weft_fence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif
#endif

/* Nanoseconds from a clock that only moves forward. */
WEFT_DEVICE uint64_t weft_clock_ns(void)
{
#if defined(WEFT_CUDA)
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#elif defined(WEFT_HIP)
#if defined(__HIP_DEVICE_COMPILE__)
    return (uint64_t)__builtin_amdgcn_s_memrealtime() * 10u; /* 100 MHz constant clock on CDNA */
#else
    return 0; /* host pass of a HIP compile: never called */
#endif
#else
    return weft_host_clock_ns();
#endif
}

/* One step of a spin loop that has spun @p spins times. On the host,
 * ranks share few cores: yield, then sleep a little longer each time. */
WEFT_DEVICE void weft_spin_pause(unsigned spins)
{
    (void)spins;
#if WEFT_ON_GPU
#if defined(WEFT_CUDA) && __CUDA_ARCH__ >= 700
    __nanosleep(32);
#elif defined(WEFT_HIP) && defined(__HIP_DEVICE_COMPILE__)
    __builtin_amdgcn_s_sleep(1); /* about 64 clocks: leaves the memory system to the peers */
#endif
#else
    weft_host_yield(spins);
#endif
}

/* ------------------------------------------------------------------ */
/* Control block, errors and bounded waits                             */
/* ------------------------------------------------------------------ */

/* Device error codes recorded in weft_dev_ctl_t.error. */
#define WEFT_DEV_OK 0u
#define WEFT_DEV_TIMEOUT 1u
#define WEFT_DEV_ABORTED 2u
#define WEFT_DEV_PROXY_FAILED 3u /* the proxy could not execute a trigger */
#define WEFT_DEV_PEER_LOST 4u    /* a network connection to the peer failed */
#define WEFT_DEV_STALE_REG 5u    /* a peer published a registered buffer this rank has not mapped */

/* What a wait was part of (weft_dev_ctl_t.op). */
#define WEFT_DEV_OP_SEMA_WAIT 1u
#define WEFT_DEV_OP_PACKET_WAIT 2u
#define WEFT_DEV_OP_FIFO_PUSH 3u
#define WEFT_DEV_OP_FLUSH 4u

/*
 * One per communicator, in host-mapped memory. The host writes abort and
 * timeout_ns. The first failing wait records, in one compare-and-swap of
 * error from 0, everything the host reports: code, operation and peer
 * (so a reader that sees the code sees its details too).
 */
typedef struct {
    uint32_t abort;      /* host: 1 = every wait gives up now */
    int32_t rank;        /* this rank, for messages */
    uint64_t error;      /* 0, or WEFT_DEV_ERROR(code, op, peer) */
    uint64_t timeout_ns; /* a wait longer than this fails */
} weft_dev_ctl_t;

/* peer -1 means the proxy */
#define WEFT_DEV_ERROR(code, op, peer)                                                                             \
    ((uint64_t)(code) | (uint64_t)(op) << 8 | (uint64_t)(uint32_t)(peer) << 32)
#define WEFT_DEV_ERROR_CODE(e) ((uint32_t)((e) & 0xff))
#define WEFT_DEV_ERROR_OP(e) ((uint32_t)(((e) >> 8) & 0xff))
#define WEFT_DEV_ERROR_PEER(e) ((int32_t)(uint32_t)((e) >> 32))

WEFT_DEVICE void weft_dev_record(weft_dev_ctl_t *ctl, uint32_t code, int32_t peer, uint32_t op)
{
    weft_cas_u64(&ctl->error, 0, WEFT_DEV_ERROR(code, op, peer));
}

/* Should a wait that started at @p start give up? Records why. */
WEFT_DEVICE int weft_dev_give_up(weft_dev_ctl_t *ctl, uint64_t start, int32_t peer, uint32_t op)
{
    if (weft_load_relaxed_u32(&ctl->abort)) {
        weft_dev_record(ctl, WEFT_DEV_ABORTED, peer, op);
        return 1;
    }
    if (weft_load_relaxed_u64(&ctl->error))
        return 1; /* another wait already failed: stop too */
    if (weft_clock_ns() - start > ctl->timeout_ns) {
        weft_dev_record(ctl, WEFT_DEV_TIMEOUT, peer, op);
        return 1;
    }
    return 0;
}

/* Waits until *word >= value (acquire). 0 on success, 1 on give-up. */
WEFT_DEVICE int weft_wait_geq_u64(weft_dev_ctl_t *ctl, uint64_t *word, uint64_t value, int32_t peer, uint32_t op)
{
    uint64_t start = 0;
    unsigned spins = 0;
    while (weft_load_acquire_u64(word) < value) {
        if (spins++ == 0)
            start = weft_clock_ns();
        else if ((spins & 63) == 0 && weft_dev_give_up(ctl, start, peer, op))
            return 1;
        weft_spin_pause(spins);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Copies                                                              */
/* ------------------------------------------------------------------ */

/*
 * Memory-level parallelism. A load's latency (about a microsecond from
 * HBM) is paid once for all the loads a thread has issued before it uses
 * any, so a loop that loads one vector, stores it, then loads the next
 * keeps one access per thread in flight and moves a fraction of what the
 * memory can. The bulk loops below load WEFT_MLP_UNROLL vectors (of the
 * thread's next ones, a team stride apart, so a warp's accesses stay
 * coalesced), then use them. WEFT_UNROLL asks the GPU compiler to unroll
 * the constant-count loops that hold them in registers.
 */
#define WEFT_MLP_UNROLL 4
#if WEFT_ON_GPU
#define WEFT_UNROLL _Pragma("unroll")
#else
#define WEFT_UNROLL
#endif

/* The copy of one access width: UNROLL loads, then their stores, while a
 * thread has that many left; then one at a time. */
#define WEFT_COPY_BODY(T)                                                                                          \
    do {                                                                                                           \
        T *d_ = (T *)dst;                                                                                          \
        const T *s_ = (const T *)src;                                                                              \
        for (i = tid; i + (WEFT_MLP_UNROLL - 1) * ntid < body; i += WEFT_MLP_UNROLL * ntid) {                      \
            T v_[WEFT_MLP_UNROLL];                                                                                 \
            WEFT_UNROLL for (int u_ = 0; u_ < WEFT_MLP_UNROLL; u_++) v_[u_] = s_[i + u_ * ntid];                   \
            WEFT_UNROLL for (int u_ = 0; u_ < WEFT_MLP_UNROLL; u_++) d_[i + u_ * ntid] = v_[u_];                   \
        }                                                                                                          \
        for (; i < body; i += ntid)                                                                                \
            d_[i] = s_[i];                                                                                         \
    } while (0)

/* Sixteen bytes, moved by one access (ld/st.v2.u64 on a GPU). */
#if WEFT_ON_GPU
typedef ulonglong2 weft_v16_t;
#else
typedef struct WEFT_GLOBAL_ALIGN(16) {
    uint64_t lo, hi;
} weft_v16_t;
#endif

/*
 * Copies @p bytes from src to dst, the work shared by threads tid of
 * ntid. The widest access that both pointers' relative alignment allows
 * (16, 8, 4 or 1 bytes) is used for the body, WEFT_MLP_UNROLL accesses in
 * flight a thread; head and tail bytewise. Not for overlapping ranges
 * (other than dst == src).
 */
WEFT_DEVICE void weft_copy(void *dst_, const void *src_, size_t bytes, size_t tid, size_t ntid)
{
    char *dst = (char *)dst_;
    const char *src = (const char *)src_;
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    size_t width = ((d ^ s) & 15) == 0 ? 16 : ((d ^ s) & 7) == 0 ? 8 : ((d ^ s) & 3) == 0 ? 4 : 1;
    size_t head = (width - (d & (width - 1))) & (width - 1);
    size_t body, tail, i;

#if !WEFT_ON_GPU
    /* a host-backend block is one thread: the C library's copy (wide
     * vector loads, non-temporal stores for large sizes) */
    if (ntid == 1) {
        if (dst != src)
            memcpy(dst, src, bytes);
        return;
    }
#endif
    if (head > bytes)
        head = bytes;
    body = (bytes - head) / width;
    tail = bytes - head - body * width;
    for (i = tid; i < head; i += ntid)
        dst[i] = src[i];
    dst += head;
    src += head;
    switch (width) {
    case 16: WEFT_COPY_BODY(weft_v16_t); break;
    case 8: WEFT_COPY_BODY(uint64_t); break;
    case 4: WEFT_COPY_BODY(uint32_t); break;
    default:
        for (i = tid; i < body; i += ntid)
            dst[i] = src[i];
    }
    dst += body * width;
    src += body * width;
    for (i = tid; i < tail; i += ntid)
        dst[i] = src[i];
}

/* ------------------------------------------------------------------ */
/* LL packets: data and flag written together, so no separate signal   */
/* ------------------------------------------------------------------ */

/*
 * LL16: 8 data bytes per 16-byte packet, as two 8-byte halves {data,
 * flag}. Each half is written with one 8-byte store, so a reader that
 * sees the flag in a half sees that half's data; it checks both halves.
 * LL8: 4 data bytes per 8-byte packet {data, flag}, one 8-byte store.
 * Flags are never 0 (fresh buffers are zero): see weft_packet_next_flag.
 */
typedef struct WEFT_GLOBAL_ALIGN(16) {
    uint32_t data0, flag0, data1, flag1;
} weft_ll16_t;

typedef struct WEFT_GLOBAL_ALIGN(8) {
    uint32_t data, flag;
} weft_ll8_t;

WEFT_DEVICE uint32_t weft_packet_next_flag(uint32_t flag)
{
    return flag + 1 == 0 ? 1 : flag + 1;
}

WEFT_DEVICE uint64_t weft_ll_half(uint32_t data, uint32_t flag)
{
    return (uint64_t)data | (uint64_t)flag << 32;
}

/* Reads up to 8 bytes of src at byte offset off (< bytes), zero-padded. */
WEFT_DEVICE uint64_t weft_load_tail8(const char *src, size_t off, size_t bytes)
{
    uint64_t v = 0;
    size_t n = bytes - off < 8 ? bytes - off : 8;
    if (n == 8 && ((uintptr_t)(src + off) & 7) == 0)
        return *(const uint64_t *)(src + off);
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)(unsigned char)src[off + i] << (8 * i);
    return v;
}

WEFT_DEVICE void weft_store_tail8(char *dst, size_t off, size_t bytes, uint64_t v)
{
    size_t n = bytes - off < 8 ? bytes - off : 8;
    if (n == 8 && ((uintptr_t)(dst + off) & 7) == 0) {
        *(uint64_t *)(dst + off) = v;
        return;
    }
    for (size_t i = 0; i < n; i++)
        dst[off + i] = (char)(v >> (8 * i));
}

/* Writes @p bytes of src as LL16 packets into dst (a peer's buffer). */
WEFT_DEVICE void weft_ll16_put(weft_ll16_t *dst, const void *src, size_t bytes, uint32_t flag, size_t tid,
                               size_t ntid)
{
    size_t n = (bytes + 7) / 8;
    for (size_t i = tid; i < n; i += ntid) {
        uint64_t v = weft_load_tail8((const char *)src, i * 8, bytes);
        uint64_t *p = (uint64_t *)&dst[i];
        /* relaxed: the flag inside each half is the signal */
        weft_store_relaxed_u64(&p[0], weft_ll_half((uint32_t)v, flag));
        weft_store_relaxed_u64(&p[1], weft_ll_half((uint32_t)(v >> 32), flag));
    }
}

/*
 * Waits until both halves of the LL16 packet at @p s carry @p flag
 * (bounded, as every device wait: @p peer is named on give-up) and puts
 * its data in *data. 0 once they carry it, 1 if the wait gave up.
 */
WEFT_DEVICE int weft_ll16_get(const weft_ll16_t *s, uint32_t flag, uint64_t *data, weft_dev_ctl_t *ctl, int32_t peer)
{
    uint64_t *p = (uint64_t *)s;
    uint64_t lo, hi, start = 0;
    unsigned spins = 0;
    for (;;) {
        lo = weft_load_relaxed_u64(&p[0]);
        hi = weft_load_relaxed_u64(&p[1]);
        if ((uint32_t)(lo >> 32) == flag && (uint32_t)(hi >> 32) == flag)
            break;
        if (spins++ == 0)
            start = weft_clock_ns();
        else if ((spins & 63) == 0 && weft_dev_give_up(ctl, start, peer, WEFT_DEV_OP_PACKET_WAIT))
            return 1;
        weft_spin_pause(spins);
    }
    *data = (uint64_t)(uint32_t)lo | (uint64_t)(uint32_t)hi << 32;
    return 0;
}

/* Waits for LL16 packets carrying @p flag in src and copies their data to
 * dst. 0 on success, 1 if the wait gave up. */
WEFT_DEVICE int weft_ll16_unpack(void *dst, weft_ll16_t *src, size_t bytes, uint32_t flag, size_t tid, size_t ntid,
                                 weft_dev_ctl_t *ctl, int32_t peer)
{
    size_t n = (bytes + 7) / 8;
    for (size_t i = tid; i < n; i += ntid) {
        uint64_t v;
        if (weft_ll16_get(&src[i], flag, &v, ctl, peer))
            return 1;
        weft_store_tail8((char *)dst, i * 8, bytes, v);
    }
    return 0;
}

/* LL8: the same with 4 data bytes per 8-byte packet. */
WEFT_DEVICE void weft_ll8_put(weft_ll8_t *dst, const void *src, size_t bytes, uint32_t flag, size_t tid,
                              size_t ntid)
{
    size_t n = (bytes + 3) / 4;
    for (size_t i = tid; i < n; i += ntid) {
        uint32_t v = 0;
        size_t left = bytes - i * 4 < 4 ? bytes - i * 4 : 4;
        for (size_t b = 0; b < left; b++)
            v |= (uint32_t)((const unsigned char *)src)[i * 4 + b] << (8 * b);
        weft_store_relaxed_u64((uint64_t *)&dst[i], weft_ll_half(v, flag));
    }
}

WEFT_DEVICE int weft_ll8_unpack(void *dst, weft_ll8_t *src, size_t bytes, uint32_t flag, size_t tid, size_t ntid,
                                weft_dev_ctl_t *ctl, int32_t peer)
{
    size_t n = (bytes + 3) / 4;
    for (size_t i = tid; i < n; i += ntid) {
        uint64_t v, start = 0;
        unsigned spins = 0;
        while ((uint32_t)((v = weft_load_relaxed_u64((uint64_t *)&src[i])) >> 32) != flag) {
            if (spins++ == 0)
                start = weft_clock_ns();
            else if ((spins & 63) == 0 && weft_dev_give_up(ctl, start, peer, WEFT_DEV_OP_PACKET_WAIT))
                return 1;
            weft_spin_pause(spins);
        }
        size_t left = bytes - i * 4 < 4 ? bytes - i * 4 : 4;
        for (size_t b = 0; b < left; b++)
            ((unsigned char *)dst)[i * 4 + b] = (unsigned char)(v >> (8 * b));
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Semaphores                                                          */
/* ------------------------------------------------------------------ */

/*
 * Device handle of a semaphore between this rank and a peer. The three
 * counters live in this rank's memory; remote_inbound is the peer's
 * inbound counter mapped here (memory semaphore) or NULL (the proxy
 * signals for us: port channels).
 *
 * Protocol: counters only grow. signal: outbound += 1, then store it to
 * the peer's inbound (release: pairs with the acquire in the peer's
 * wait). wait: expected += 1, then wait until inbound >= expected
 * (acquire). One thread at a time signals (resp. waits on) a semaphore.
 */
typedef struct {
    uint64_t *inbound;
    uint64_t *outbound;
    uint64_t *expected;
    uint64_t *remote_inbound;
    weft_dev_ctl_t *ctl;
    int32_t peer;
    uint32_t flags; /* WEFT_SEMA_* */
} weft_sema_dev_t;

/* The peer runs on this very device (ranks sharing a GPU): its wait needs
 * only a device-scope release, not a system-wide fence. */
#define WEFT_SEMA_SAME_DEVICE 1u

WEFT_DEVICE void weft_sema_signal(weft_sema_dev_t *s)
{
    uint64_t out = *s->outbound + 1;
    *s->outbound = out;
    /* pairs with weft_sema_wait's acquire */
    if (s->flags & WEFT_SEMA_SAME_DEVICE)
        weft_store_release_device_u64(s->remote_inbound, out);
    else
        weft_store_release_u64(s->remote_inbound, out);
}

WEFT_DEVICE void weft_sema_relaxed_signal(weft_sema_dev_t *s)
{
    uint64_t out = *s->outbound + 1;
    *s->outbound = out;
    weft_store_relaxed_u64(s->remote_inbound, out);
}

WEFT_DEVICE int weft_sema_wait(weft_sema_dev_t *s)
{
    uint64_t exp = *s->expected + 1;
    *s->expected = exp;
    return weft_wait_geq_u64(s->ctl, s->inbound, exp, s->peer, WEFT_DEV_OP_SEMA_WAIT);
}

/* Relaxed wait: orders nothing after it; for pure flow control. */
WEFT_DEVICE int weft_sema_relaxed_wait(weft_sema_dev_t *s)
{
    uint64_t exp = *s->expected + 1, start = 0;
    unsigned spins = 0;
    *s->expected = exp;
    while (weft_load_relaxed_u64(s->inbound) < exp) {
        if (spins++ == 0)
            start = weft_clock_ns();
        else if ((spins & 63) == 0 && weft_dev_give_up(s->ctl, start, s->peer, WEFT_DEV_OP_SEMA_WAIT))
            return 1;
        weft_spin_pause(spins);
    }
    return 0;
}

/* Has a signal arrived that nobody waited for yet? (non-blocking) */
WEFT_DEVICE int weft_sema_poll(weft_sema_dev_t *s)
{
    if (weft_load_acquire_u64(s->inbound) <= *s->expected)
        return 0;
    *s->expected += 1;
    return 1;
}

/* ------------------------------------------------------------------ */
/* Memory channel: load/store straight into a peer's mapped memory     */
/* ------------------------------------------------------------------ */

typedef struct {
    weft_sema_dev_t sema;
    char *dst;      /* the peer's buffer, mapped here */
    char *src;      /* this rank's buffer */
    char *packets;  /* this rank's buffer the peer writes packets into */
} weft_memory_channel_dev_t;

/* Copies src[src_off..+bytes) to the peer's dst[dst_off..), shared by
 * threads tid of ntid (any number, any alignment). */
WEFT_DEVICE void weft_mc_put(weft_memory_channel_dev_t *c, size_t dst_off, size_t src_off, size_t bytes, size_t tid,
                             size_t ntid)
{
    weft_copy(c->dst + dst_off, c->src + src_off, bytes, tid, ntid);
}

/* Copies the peer's dst[src_off..+bytes) into this rank's src[dst_off..). */
WEFT_DEVICE void weft_mc_get(weft_memory_channel_dev_t *c, size_t dst_off, size_t src_off, size_t bytes, size_t tid,
                             size_t ntid)
{
    weft_copy(c->src + dst_off, c->dst + src_off, bytes, tid, ntid);
}

#define WEFT_MC_READ(T, c, index) (((const T *)(c)->dst)[index])
#define WEFT_MC_WRITE(T, c, index, v) (((T *)(c)->dst)[index] = (v))

WEFT_DEVICE void weft_mc_signal(weft_memory_channel_dev_t *c) { weft_sema_signal(&c->sema); }
WEFT_DEVICE void weft_mc_relaxed_signal(weft_memory_channel_dev_t *c) { weft_sema_relaxed_signal(&c->sema); }
WEFT_DEVICE int weft_mc_wait(weft_memory_channel_dev_t *c) { return weft_sema_wait(&c->sema); }
WEFT_DEVICE int weft_mc_relaxed_wait(weft_memory_channel_dev_t *c) { return weft_sema_relaxed_wait(&c->sema); }

/* LL16/LL8 packets of src[src_off..+bytes) into the peer's dst at byte
 * offset dst_off (a multiple of the packet size). */
WEFT_DEVICE void weft_mc_put_packets16(weft_memory_channel_dev_t *c, size_t dst_off, size_t src_off, size_t bytes,
                                       uint32_t flag, size_t tid, size_t ntid)
{
    weft_ll16_put((weft_ll16_t *)(c->dst + dst_off), c->src + src_off, bytes, flag, tid, ntid);
}
WEFT_DEVICE int weft_mc_unpack_packets16(weft_memory_channel_dev_t *c, size_t dst_off, size_t pkt_off, size_t bytes,
                                         uint32_t flag, size_t tid, size_t ntid)
{
    return weft_ll16_unpack(c->src + dst_off, (weft_ll16_t *)(c->packets + pkt_off), bytes, flag, tid, ntid,
                            c->sema.ctl, c->sema.peer);
}
WEFT_DEVICE void weft_mc_put_packets8(weft_memory_channel_dev_t *c, size_t dst_off, size_t src_off, size_t bytes,
                                      uint32_t flag, size_t tid, size_t ntid)
{
    weft_ll8_put((weft_ll8_t *)(c->dst + dst_off), c->src + src_off, bytes, flag, tid, ntid);
}
WEFT_DEVICE int weft_mc_unpack_packets8(weft_memory_channel_dev_t *c, size_t dst_off, size_t pkt_off, size_t bytes,
                                        uint32_t flag, size_t tid, size_t ntid)
{
    return weft_ll8_unpack(c->src + dst_off, (weft_ll8_t *)(c->packets + pkt_off), bytes, flag, tid, ntid,
                           c->sema.ctl, c->sema.peer);
}

/* ------------------------------------------------------------------ */
/* Port channel: triggers through a FIFO to the proxy                  */
/* ------------------------------------------------------------------ */

/*
 * A trigger is 16 bytes, two 64-bit words:
 *   w0 = size (32 bits) | src offset low 32 bits << 32
 *   w1 = dst offset low 32 bits | src memory id (9) << 32 |
 *        dst memory id (9) << 41 | channel id (10) << 50 |
 *        type (3) << 60 | valid (1) << 63
 * type bits: DATA, SIGNAL, FLUSH (any mix); type 0 is BASE, whose w0
 * holds the high 32 bits of the src (low word) and dst (high word)
 * offsets of the channel's next DATA trigger. Larger transfers are split.
 *
 * Inline DATA: src memory id WEFT_TRIGGER_INLINE_MEM (never a memory's
 * id) means w0 is the 8 bytes themselves, put at the dst offset as one
 * 64-bit store after the channel's earlier writes (no copy): puts of at
 * most inline_max bytes (see weft_port_channel_dev_t) travel so, 8 bytes
 * a trigger, read from the source when pushed.
 *
 * FIFO protocol: a pusher takes a slot with fetch_add on head, waits
 * until slot - tail < size, writes w0, then w1 with the valid bit
 * (release: pairs with the proxy's acquire of w1). The proxy clears the
 * slot, executes it and then stores tail = slot + 1 (release: pairs with
 * the acquire in weft_fifo_push / weft_pc_flush).
 */
#define WEFT_TRIGGER_DATA 1u
#define WEFT_TRIGGER_SIGNAL 2u
#define WEFT_TRIGGER_FLUSH 4u
#define WEFT_TRIGGER_BASE 0u
#define WEFT_TRIGGER_MAX_SIZE 0xffffffffull
#define WEFT_TRIGGER_MAX_MEM 511u
#define WEFT_TRIGGER_INLINE_MEM WEFT_TRIGGER_MAX_MEM /* memory ids stop one below */
#define WEFT_TRIGGER_MAX_CHANNEL 1023u

typedef struct WEFT_GLOBAL_ALIGN(16) {
    uint64_t w0, w1;
} weft_trigger_t;

typedef struct {
    weft_trigger_t *triggers; /* host-mapped, size entries */
    uint64_t *head;           /* device memory */
    uint64_t *tail;           /* host-mapped, written by the proxy */
    uint64_t size;            /* a power of two */
    weft_dev_ctl_t *ctl;
} weft_fifo_dev_t;

/* Reserves @p n consecutive slots at once (no other thread's trigger comes
 * between them) and waits for room for the last, which is room for all:
 * the proxy frees slots in order. Returns the first, or UINT64_MAX if the
 * wait gave up. */
WEFT_DEVICE uint64_t weft_fifo_reserve(weft_fifo_dev_t *f, uint64_t n)
{
    uint64_t slot = weft_fetch_add_relaxed_u64(f->head, n);
    if (slot + n > f->size && weft_wait_geq_u64(f->ctl, f->tail, slot + n - f->size, -1, WEFT_DEV_OP_FIFO_PUSH))
        return UINT64_MAX;
    return slot;
}

/* Writes a trigger into a reserved slot. */
WEFT_DEVICE void weft_fifo_fill(weft_fifo_dev_t *f, uint64_t slot, uint64_t w0, uint64_t w1)
{
    weft_trigger_t *t = &f->triggers[slot & (f->size - 1)];
    weft_store_relaxed_u64(&t->w0, w0);
    weft_store_release_u64(&t->w1, w1 | (1ull << 63)); /* pairs with the proxy's acquire */
}

/* Pushes a trigger; returns its slot, or UINT64_MAX if the wait for room
 * gave up. */
WEFT_DEVICE uint64_t weft_fifo_push(weft_fifo_dev_t *f, uint64_t w0, uint64_t w1)
{
    uint64_t slot = weft_fifo_reserve(f, 1);
    if (slot != UINT64_MAX)
        weft_fifo_fill(f, slot, w0, w1);
    return slot;
}

/* Pushes two triggers into consecutive slots: a BASE trigger (the high
 * offset bits the proxy keeps per channel) and the DATA trigger it
 * qualifies. Two threads putting over one channel at once could otherwise
 * each take the other's BASE. Returns the second slot, or UINT64_MAX if
 * the wait for room gave up. */
WEFT_DEVICE uint64_t weft_fifo_push2(weft_fifo_dev_t *f, uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
    uint64_t slot = weft_fifo_reserve(f, 2);
    if (slot == UINT64_MAX)
        return slot;
    weft_fifo_fill(f, slot, a0, a1);
    weft_fifo_fill(f, slot + 1, b0, b1);
    return slot + 1;
}

/* Waits until the proxy has executed slot (and everything before it). */
WEFT_DEVICE int weft_fifo_sync(weft_fifo_dev_t *f, uint64_t slot)
{
    if (slot == UINT64_MAX)
        return 1;
    return weft_wait_geq_u64(f->ctl, f->tail, slot + 1, -1, WEFT_DEV_OP_FLUSH);
}

typedef struct {
    weft_fifo_dev_t fifo;
    weft_sema_dev_t sema; /* inbound written by the peer's proxy */
    uint32_t channel;     /* the proxy's id of this channel */
    uint32_t dst_mem;     /* proxy ids of the memories */
    uint32_t src_mem;
    /* Puts of at most this many bytes (a multiple of 8, with 8-aligned
     * offsets) travel inline in the triggers, while src_mem is inline_mem,
     * whose address here is src_base (WEFT_PORT_INLINE_BYTES; 0: never). */
    uint32_t inline_max;
    const char *src_base;
    uint32_t inline_mem;
    uint32_t reserved;
} weft_port_channel_dev_t;

WEFT_DEVICE uint64_t weft_pc_w1(const weft_port_channel_dev_t *c, uint64_t dst_off_lo, unsigned type)
{
    return (dst_off_lo & 0xffffffffull) | (uint64_t)c->src_mem << 32 | (uint64_t)c->dst_mem << 41 |
           (uint64_t)c->channel << 50 | (uint64_t)type << 60;
}

/* Does a put of @p bytes travel inline (weft_pc_push_inline)? */
WEFT_DEVICE int weft_pc_inline_ok(const weft_port_channel_dev_t *c, uint64_t dst_off, uint64_t src_off,
                                  uint64_t bytes)
{
    return bytes && bytes <= c->inline_max && c->src_base && c->src_mem == c->inline_mem &&
           ((dst_off | src_off | bytes) & 7u) == 0;
}

/* Pushes one inline DATA trigger per 8 bytes of src[src_off..+bytes),
 * read now (the source may be reused at once); @p last_type is or-ed into
 * the final one. Returns the last slot. */
WEFT_DEVICE uint64_t weft_pc_push_inline(weft_port_channel_dev_t *c, uint64_t dst_off, uint64_t src_off,
                                         uint64_t bytes, unsigned last_type)
{
    uint64_t slot = UINT64_MAX;
    for (uint64_t i = 0; i < bytes; i += 8) {
        uint64_t v, d = dst_off + i;
        unsigned type = WEFT_TRIGGER_DATA | (i + 8 == bytes ? last_type : 0u);
#if WEFT_ON_GPU
        v = *(const uint64_t *)(c->src_base + src_off + i);
#else
        memcpy(&v, c->src_base + src_off + i, 8);
#endif
        uint64_t w1 = (weft_pc_w1(c, d, type) & ~((uint64_t)WEFT_TRIGGER_MAX_MEM << 32)) |
                      (uint64_t)WEFT_TRIGGER_INLINE_MEM << 32;
        if (d >> 32)
            slot = weft_fifo_push2(&c->fifo, (d >> 32) << 32, weft_pc_w1(c, 0, WEFT_TRIGGER_BASE), v, w1);
        else
            slot = weft_fifo_push(&c->fifo, v, w1);
        if (slot == UINT64_MAX)
            return slot;
    }
    return slot;
}

/* Pushes DATA triggers (split at 4 GiB, BASE triggers for high offsets;
 * inline where weft_pc_inline_ok); @p last_type is or-ed into the final
 * trigger. Returns the last slot. */
WEFT_DEVICE uint64_t weft_pc_push_data(weft_port_channel_dev_t *c, uint64_t dst_off, uint64_t src_off,
                                       uint64_t bytes, unsigned last_type)
{
    uint64_t slot = UINT64_MAX;
    if (weft_pc_inline_ok(c, dst_off, src_off, bytes))
        return weft_pc_push_inline(c, dst_off, src_off, bytes, last_type);
    do {
        uint64_t n = bytes > WEFT_TRIGGER_MAX_SIZE ? WEFT_TRIGGER_MAX_SIZE : bytes;
        unsigned type = WEFT_TRIGGER_DATA | (n == bytes ? last_type : 0u);
        uint64_t w0 = n | (src_off & 0xffffffffull) << 32, w1 = weft_pc_w1(c, dst_off, type);
        if ((src_off >> 32) || (dst_off >> 32))
            slot = weft_fifo_push2(&c->fifo, (src_off >> 32) | (dst_off >> 32) << 32,
                                   weft_pc_w1(c, 0, WEFT_TRIGGER_BASE), w0, w1);
        else
            slot = weft_fifo_push(&c->fifo, w0, w1);
        if (slot == UINT64_MAX)
            return slot;
        bytes -= n;
        src_off += n;
        dst_off += n;
    } while (bytes > 0);
    return slot;
}

/* put: copy src[src_off..+bytes) to the peer's dst[dst_off..). */
WEFT_DEVICE int weft_pc_put(weft_port_channel_dev_t *c, uint64_t dst_off, uint64_t src_off, uint64_t bytes)
{
    return bytes == 0 ? 0 : weft_pc_push_data(c, dst_off, src_off, bytes, 0) == UINT64_MAX;
}

WEFT_DEVICE int weft_pc_signal(weft_port_channel_dev_t *c)
{
    return weft_fifo_push(&c->fifo, 0, weft_pc_w1(c, 0, WEFT_TRIGGER_SIGNAL)) == UINT64_MAX;
}

WEFT_DEVICE int weft_pc_put_with_signal(weft_port_channel_dev_t *c, uint64_t dst_off, uint64_t src_off,
                                        uint64_t bytes)
{
    if (bytes == 0)
        return weft_pc_signal(c);
    return weft_pc_push_data(c, dst_off, src_off, bytes, WEFT_TRIGGER_SIGNAL) == UINT64_MAX;
}

/* Waits until the proxy has carried out every earlier trigger of this
 * channel: its sources may be reused. Over IPC the bytes have landed at the
 * peer; over a network they are on their way and reach the peer's memory
 * before any later signal. */
WEFT_DEVICE int weft_pc_flush(weft_port_channel_dev_t *c)
{
    return weft_fifo_sync(&c->fifo, weft_fifo_push(&c->fifo, 0, weft_pc_w1(c, 0, WEFT_TRIGGER_FLUSH)));
}

WEFT_DEVICE int weft_pc_put_with_signal_and_flush(weft_port_channel_dev_t *c, uint64_t dst_off, uint64_t src_off,
                                                  uint64_t bytes)
{
    uint64_t slot = bytes == 0
                        ? weft_fifo_push(&c->fifo, 0, weft_pc_w1(c, 0, WEFT_TRIGGER_SIGNAL | WEFT_TRIGGER_FLUSH))
                        : weft_pc_push_data(c, dst_off, src_off, bytes, WEFT_TRIGGER_SIGNAL | WEFT_TRIGGER_FLUSH);
    return weft_fifo_sync(&c->fifo, slot);
}

WEFT_DEVICE int weft_pc_wait(weft_port_channel_dev_t *c) { return weft_sema_wait(&c->sema); }

#ifdef __cplusplus
}
#endif

#endif /* WEFT_DEVICE_H */
