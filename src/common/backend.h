/*
 * The two backend tables, at the bottom of the house: the GPU table
 * (host, cuda, hip) and the net table (ethernet, ib). Backends fill them;
 * the core and the net layer drive them.
 *
 * The GPU backend table.
 *
 * A backend fills a weft_gpu_ops_t with designated initializers, leaving
 * out what it lacks; weft_gpu_register() copies it over a table of typed
 * stubs that return WEFT_ERR_UNSUPPORTED, so callers never test for NULL.
 * Algorithms choose by capability bits, never by a backend's name.
 * Every operation takes the backend's per-communicator context first.
 */
#ifndef WEFT_BACKEND_H
#define WEFT_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "auth.h"
#include "sock.h"
#include "weft.h"
#include "weft/device.h"

#define WEFT_GPU_ABI_VERSION 8

/* Capabilities. */
#define WEFT_CAP_IPC (1ull << 0)         /* peers on the host can map device memory */
#define WEFT_CAP_MULTICAST (1ull << 1)   /* switch channel (NVLS) */
#define WEFT_CAP_DMABUF (1ull << 2)      /* device memory exports a dma-buf fd */
#define WEFT_CAP_HOST_MAPPED (1ull << 3) /* host memory the device can access */
#define WEFT_CAP_IPC_FD (1ull << 4)      /* IPC handles are file descriptors */
#define WEFT_CAP_CPU_ACCESS (1ull << 5)  /* the CPU can load/store device memory */
#define WEFT_CAP_RUNTIME_STREAMS (1ull << 6) /* streams are the vendor runtime's (cudaStream_t, hipStream_t) */
#define WEFT_CAP_GPU (1ull << 7)         /* kernels run on a GPU, not on CPU threads: the selection
                                          * table's platform (src/coll/coll_table.c) */

/* mem_alloc flags. SYNC: memory that ranks poll and write across devices
 * (semaphores, LL packets, barrier words, the proxy's head): a backend whose
 * device caches such memory incoherently allocates it fine-grained or
 * uncached (hip); the others ignore the flag. */
#define WEFT_GPU_MEM_SYNC 1u

/* IPC handles are opaque blobs of at most this size. */
#define WEFT_IPC_BLOB_BYTES 96

typedef struct weft_gpu_ctx weft_gpu_ctx_t;   /* backend-private */
typedef struct weft_gpu_stream weft_gpu_stream_t;
typedef struct weft_gpu_event weft_gpu_event_t;

typedef struct {
    char name[64];
    int index;
    size_t total_mem;
    int pci_bus;            /* -1 if not a PCI device */
    char pci_bus_id[32];    /* "0000:17:00.0" or "" */
    unsigned max_blocks;    /* most blocks one launch may have */
    unsigned sm_count;      /* multiprocessors (SMs, CUs); 0 if not a GPU */
} weft_gpu_props_t;

/* One device allocation, described to the core. */
typedef struct {
    void *ptr;
    size_t size;     /* rounded up to the backend's granularity */
    void *priv;      /* backend's handle */
} weft_gpu_alloc_t;

/* An IPC export: a blob and, for fd-based handles, an fd to pass. */
typedef struct {
    uint8_t blob[WEFT_IPC_BLOB_BYTES];
    uint32_t blob_len;
    int fd;          /* -1 when the blob alone suffices; owned by the caller */
} weft_gpu_ipc_export_t;

/* A kernel body: see include/weft/device.h. */
typedef void (*weft_kernel_fn_t)(const weft_kctx_t *k, void *args);

/* A launch. GPU backends run the built-in kernel of index @p kernel
 * (weft_kernel_id_t, src/kernels/builtins.h: the same index names the same
 * body in every backend); the host backend runs @p host_fn, which may also
 * be a test's own body. @p name labels messages only. */
typedef struct {
    int kernel;             /* built-in kernel index, for GPU backends */
    const char *name;       /* for messages */
    weft_kernel_fn_t host_fn; /* body, for the host backend */
    unsigned nblocks, nthreads;
    void *args;             /* copied at launch */
    size_t args_size;
} weft_gpu_launch_t;

typedef struct weft_gpu_ops {
    uint32_t abi_version;
    size_t size;
    const char *name;

    weft_status_t (*device_count)(int *count);
    /* The device the calling thread's runtime has current (cudaGetDevice),
     * for callers that follow the runtime's convention (the NCCL API). */
    weft_status_t (*current_device)(int *device);
    weft_status_t (*init)(int device, weft_gpu_ctx_t **ctx);
    void (*fini)(weft_gpu_ctx_t *ctx);
    uint64_t (*caps)(weft_gpu_ctx_t *ctx);
    weft_status_t (*props)(weft_gpu_ctx_t *ctx, weft_gpu_props_t *props);

    weft_status_t (*mem_alloc)(weft_gpu_ctx_t *ctx, size_t bytes, unsigned flags, weft_gpu_alloc_t *out);
    weft_status_t (*mem_free)(weft_gpu_ctx_t *ctx, weft_gpu_alloc_t *alloc);
    /* Host memory the device can access: *host for the CPU, *dev for kernels. */
    weft_status_t (*host_alloc_mapped)(weft_gpu_ctx_t *ctx, size_t bytes, void **host, void **dev);
    weft_status_t (*host_free)(weft_gpu_ctx_t *ctx, void *host);

    weft_status_t (*ipc_export)(weft_gpu_ctx_t *ctx, const weft_gpu_alloc_t *alloc,
                                weft_gpu_ipc_export_t *out);
    /* Maps a peer's export; @p fd is the passed fd (or -1), consumed. */
    weft_status_t (*ipc_import)(weft_gpu_ctx_t *ctx, const uint8_t *blob, uint32_t blob_len, int fd,
                                size_t size, void **ptr, void **handle);
    weft_status_t (*ipc_close)(weft_gpu_ctx_t *ctx, void *ptr, void *handle);
    /*
     * The allocation holding device address @p ptr, whoever made it (weft,
     * the runtime's malloc, another library): *alloc gets its base, size
     * and whatever ipc_export needs of it (valid while the allocation
     * lives), *id a number that differs between two allocations made one
     * after the other at the same address (CUDA: the driver's buffer id;
     * host: a memfd allocation's serial). WEFT_ERR_NOT_FOUND, without a log
     * line: memory this backend cannot share (plain malloc on host);
     * WEFT_ERR_UNSUPPORTED: memory it knows but cannot export.
     */
    weft_status_t (*mem_query)(weft_gpu_ctx_t *ctx, const void *ptr, weft_gpu_alloc_t *alloc, uint64_t *id);

    /*
     * Multicast objects (WEFT_CAP_MULTICAST): one buffer per rank, all of
     * one size, bound to one object; a multimem store through the object's
     * mapping reaches every rank's buffer and a multimem load reduces over
     * them (include/weft/device.h, weft_sc_*). One rank creates the object
     * for @p nranks devices and exports it; the others import the export
     * (the fd consumed); then every rank adds its device, and once all have
     * (the caller's barrier), binds: @p local gets this rank's buffer
     * (zeroed), *mc_ptr the object's mapping. @p index is the rank's place
     * in the object (0 .. nranks - 1). Release undoes all of it.
     */
    weft_status_t (*mc_create)(weft_gpu_ctx_t *ctx, size_t bytes, int nranks, weft_gpu_ipc_export_t *out,
                               void **mc);
    weft_status_t (*mc_import)(weft_gpu_ctx_t *ctx, const uint8_t *blob, uint32_t blob_len, int fd, void **mc);
    weft_status_t (*mc_add_device)(weft_gpu_ctx_t *ctx, void *mc);
    weft_status_t (*mc_bind)(weft_gpu_ctx_t *ctx, void *mc, int index, weft_gpu_alloc_t *local, void **mc_ptr);
    void (*mc_release)(weft_gpu_ctx_t *ctx, void *mc, weft_gpu_alloc_t *local, void *mc_ptr);
    /* A dma-buf fd for [ptr, ptr + bytes) of device memory (WEFT_CAP_DMABUF),
     * for NICs to register; *offset is ptr's offset in it. The caller
     * closes the fd. */
    weft_status_t (*dmabuf_export)(weft_gpu_ctx_t *ctx, void *ptr, size_t bytes, int *fd, uint64_t *offset);

    weft_status_t (*stream_create)(weft_gpu_ctx_t *ctx, weft_gpu_stream_t **stream);
    weft_status_t (*stream_destroy)(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream);
    weft_status_t (*stream_sync)(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream);
    /* WEFT_OK when everything queued on the stream ran, WEFT_INPROGRESS when not. */
    weft_status_t (*stream_query)(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream);
    /* *capturing = 1 while the stream records into a CUDA/HIP graph. */
    weft_status_t (*stream_capturing)(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream, int *capturing);
    /* While @p stream records into a graph: @p release(@p arg) runs once
     * that graph is destroyed (or its capture fails), from any thread, and
     * must not call the runtime (CUDA: a user object the graph retains).
     * WEFT_ERR_UNSUPPORTED where the backend cannot tell (then release is
     * never called). */
    weft_status_t (*capture_on_release)(weft_gpu_ctx_t *ctx, weft_gpu_stream_t *stream, void (*release)(void *arg),
                                        void *arg);
    weft_status_t (*event_create)(weft_gpu_ctx_t *ctx, weft_gpu_event_t **event);
    weft_status_t (*event_destroy)(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event);
    weft_status_t (*event_record)(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event, weft_gpu_stream_t *stream);
    /* WEFT_OK when complete, WEFT_INPROGRESS when not. */
    weft_status_t (*event_query)(weft_gpu_ctx_t *ctx, weft_gpu_event_t *event);
    weft_status_t (*memcpy_async)(weft_gpu_ctx_t *ctx, void *dst, const void *src, size_t bytes,
                                  weft_gpu_stream_t *stream);
    weft_status_t (*launch)(weft_gpu_ctx_t *ctx, const weft_gpu_launch_t *launch, weft_gpu_stream_t *stream);
    /*
     * Queues a store of @p value to the 8 bytes at @p dst (device memory,
     * possibly a peer's mapped here) on @p stream: it happens after
     * everything queued before it on the stream, and whoever sees the value
     * sees those earlier writes too (a release). One stream operation, no
     * copy engine: what a port channel's signal costs. WEFT_ERR_UNSUPPORTED
     * where the device cannot; the caller then copies the value instead.
     */
    weft_status_t (*stream_write_u64)(weft_gpu_ctx_t *ctx, void *dst, uint64_t value, weft_gpu_stream_t *stream);
    /*
     * stream_write_u64 of values[i] to dst[i] for i < @p n, in order, as
     * one submission (CUDA: one cuStreamBatchMemOp): what a port channel's
     * inline put and its signal cost together. WEFT_ERR_UNSUPPORTED (and
     * nothing queued) where the backend cannot; the caller then queues
     * them one by one.
     */
    weft_status_t (*stream_write_u64_batch)(weft_gpu_ctx_t *ctx, unsigned n, void *const *dst, const uint64_t *values,
                                            weft_gpu_stream_t *stream);
    /*
     * WEFT_OK while the context works; WEFT_ERR_BACKEND, with the runtime's
     * error in @p why (@p len bytes), once it holds a fault that no later
     * call can clear (an illegal address, a kernel's trap or assert, an
     * uncorrectable ECC error): every later call fails, so its communicators
     * are over. Asked from a thread that own_thread set up, cheap enough to
     * ask every 100 ms (the peer watch, src/core/watch.c). A backend without such faults (host) leaves
     * it NULL: the table's default answers WEFT_OK.
     */
    weft_status_t (*device_failed)(weft_gpu_ctx_t *ctx, char *why, size_t len);
    /*
     * Called first by each thread of weft's own that calls the runtime for
     * @p ctx (the proxy, the registration pusher, the peer watch, the
     * ethernet transport's senders and receivers): makes
     * the context's device current for it and puts it in relaxed
     * stream-capture mode for good, so that its calls (copies on its own
     * streams, queries, imports) neither spoil nor are refused by a graph
     * that the program captures in global mode on another thread. A backend
     * with neither notion (host) leaves it NULL.
     */
    void (*own_thread)(weft_gpu_ctx_t *ctx);
} weft_gpu_ops_t;

/* Looks a backend up by name; the table returned is complete (stubs filled
 * in). NULL if the build has no such backend. */
const weft_gpu_ops_t *weft_gpu_find(const char *name);
/* Names of the backends in this build, NULL-terminated. */
const char *const *weft_gpu_names(void);

/*
 * Ranks on this host of the largest communicator this process has made,
 * noted by communicator init before it initialises the backend, for
 * backends whose policies depend on how many processes share the cores
 * (the host backend's spin budget). 0 until a communicator notes it.
 */
void weft_gpu_note_local_ranks(int n);
int weft_gpu_local_ranks(void);

/* Fills @p dst from @p src, stubs for what src leaves NULL. */
void weft_gpu_ops_complete(weft_gpu_ops_t *dst, const weft_gpu_ops_t *src);

extern const weft_gpu_ops_t weft_host_gpu_ops;
#ifdef WEFT_HAVE_CUDA
extern const weft_gpu_ops_t weft_cuda_gpu_ops;
#endif
#ifdef WEFT_HAVE_HIP
extern const weft_gpu_ops_t weft_hip_gpu_ops;
#endif

/* ---- The net backend table ---- */
/*
 * The net backend table: what the proxy and the connections need from a
 * network transport (ethernet: TCP; ib: verbs). A provider fills a table
 * with designated initializers; weft_net_find() copies it over a table of
 * typed "unsupported" stubs, so dispatch never tests for NULL.
 *
 * Model: RDMA-write semantics. A rank registers memory (reg_mr) and gets
 * a remote key it sends to peers inside its memory handle; a peer posts
 * writes from its own registered memory into [key, offset), and 64-bit
 * signals (store or atomic add) that land after every write posted
 * before them on the same endpoint. Posts are asynchronous; poll reports
 * completions in posting order; flush waits until every post so far has
 * completed locally (its source may be reused).
 *
 * Threading: one thread at a time per endpoint posts, polls and flushes
 * (the proxy, or the host caller); registration may happen from any
 * thread at any time.
 */
#define WEFT_NET_ABI_VERSION 2
#define WEFT_NET_ADDR_BYTES 64 /* a listener's address as peers see it */
#define WEFT_NET_RKEY_BYTES 16 /* a registration as peers name it */

typedef struct weft_net_ctx weft_net_ctx_t;           /* provider state of one communicator */
typedef struct weft_net_listener weft_net_listener_t;
typedef struct weft_net_ep weft_net_ep_t;             /* one connection to one peer */
typedef struct weft_net_mr weft_net_mr_t;             /* one local registration */
typedef struct weft_net_pending weft_net_pending_t;   /* a connection being set up */

typedef struct {
    uint8_t bytes[WEFT_NET_RKEY_BYTES];
} weft_net_rkey_t;

/* Who is connecting: checked by the accepting side. */
typedef struct {
    int32_t from_rank, to_rank;
    uint32_t seq; /* the pair's n-th connection */
} weft_net_ident_t;

/* What the communicator lends a provider. */
typedef struct {
    const weft_auth_t *auth;  /* the job's secret: every connection authenticates */
    int rank;
    int nranks;               /* a peer's IDENT naming a rank outside [0, nranks) is refused */
    weft_addr_t local;        /* where this rank's bootstrap listens (port 0) */
    int op_timeout_ms;        /* no progress this long on a busy endpoint: an error */
    int handshake_timeout_ms;
    int wake_fd;              /* readable once the communicator aborts */
    /* Staging for device memory that the CPU cannot reach. */
    const weft_gpu_ops_t *gpu;
    weft_gpu_ctx_t *gctx;
    /* Called once per endpoint when it fails (from any thread). */
    void (*on_error)(void *arg, int peer, weft_status_t status);
    void *on_error_arg;
} weft_net_env_t;

typedef struct {
    uint64_t wr_id;
    weft_status_t status;
} weft_net_completion_t;

typedef struct weft_net_ops {
    uint32_t abi_version;
    uint32_t size;
    const char *name;
    /* 1 when this host has what the provider needs to reach peers (ib: an
     * active port passing WEFT_IB_HCA). Absent: 1. */
    int (*usable)(void);
    weft_status_t (*init)(const weft_net_env_t *env, weft_net_ctx_t **ctx);
    void (*fini)(weft_net_ctx_t *ctx);
    /* A listener on the interface chosen by WEFT_SOCKET_IFNAME (or the
     * provider's own choice); @p addr is what peers pass to connect. */
    weft_status_t (*listen)(weft_net_ctx_t *ctx, uint8_t addr[WEFT_NET_ADDR_BYTES],
                            weft_net_listener_t **listener);
    void (*listen_close)(weft_net_listener_t *listener);
    /* Start setting up a connection, without blocking: to the listener at
     * @p addr, or (accept) the one @p ident makes to this listener; others
     * that arrive meanwhile are kept for their own accept. */
    weft_status_t (*connect)(weft_net_ctx_t *ctx, const uint8_t addr[WEFT_NET_ADDR_BYTES],
                             const weft_net_ident_t *ident, uint64_t deadline, weft_net_pending_t **pending);
    weft_status_t (*accept)(weft_net_listener_t *listener, const weft_net_ident_t *ident, uint64_t deadline,
                            weft_net_pending_t **pending);
    /* Drives a set-up, waiting for I/O at most @p wait_ms: WEFT_INPROGRESS,
     * WEFT_OK with the endpoint in *ep, or the error (WEFT_ERR_TIMEOUT past
     * the deadline, WEFT_ERR_ABORTED on abort). Unless WEFT_INPROGRESS,
     * @p pending is gone. */
    weft_status_t (*progress)(weft_net_pending_t *pending, int wait_ms, weft_net_ep_t **ep);
    void (*cancel)(weft_net_pending_t *pending);
    /* @p device: the memory is device memory the CPU cannot reach. */
    weft_status_t (*reg_mr)(weft_net_ctx_t *ctx, void *ptr, size_t bytes, int device, weft_net_mr_t **mr,
                            weft_net_rkey_t *rkey);
    void (*dereg_mr)(weft_net_ctx_t *ctx, weft_net_mr_t *mr);
    weft_status_t (*post_write)(weft_net_ep_t *ep, weft_net_mr_t *mr, uint64_t off, const weft_net_rkey_t *rkey,
                                uint64_t roff, uint64_t bytes, uint64_t wr_id);
    /* The 64-bit word at [rkey, roff) becomes @p value (add: grows by it). */
    weft_status_t (*post_signal)(weft_net_ep_t *ep, const weft_net_rkey_t *rkey, uint64_t roff, uint64_t value,
                                 int add, uint64_t wr_id);
    /* Up to @p max completions, in posting order; *n may be 0. */
    weft_status_t (*poll)(weft_net_ep_t *ep, weft_net_completion_t *out, int max, int *n);
    weft_status_t (*flush)(weft_net_ep_t *ep, int timeout_ms);
    /* Flushes what was posted (bounded), says goodbye, frees. */
    void (*close)(weft_net_ep_t *ep);
} weft_net_ops_t;

#endif
