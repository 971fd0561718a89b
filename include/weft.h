/*
 * weft — vendor-neutral GPU communication runtime: public host API.
 *
 * Conventions (all calls):
 * - every call returns weft_status_t: WEFT_OK (0), WEFT_INPROGRESS, or a
 *   negative WEFT_ERR_*; weft_status_string() names it and
 *   weft_get_last_error() gives this thread's last error message, which
 *   names the rank, operation and peer involved;
 * - output parameters come last and are written only on success;
 * - invalid arguments return WEFT_ERR_INVALID_ARGUMENT and change nothing;
 * - the library never calls exit() or abort() and never writes to stdout.
 *
 * Thread safety: calls on one communicator are serialized internally;
 * weft_comm_abort() and weft_comm_get_async_error() may be called from any
 * thread at any time, including while another thread is blocked in a call
 * on the same communicator.
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>

#include "weft/device.h"
#include "weft/dtype.h"
#include "weft/switch.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
/** Encoded as major * 10000 + minor * 100 + patch. */
#define WEFT_VERSION_CODE                                                    \
    (WEFT_VERSION_MAJOR * 10000 + WEFT_VERSION_MINOR * 100 + WEFT_VERSION_PATCH)

/* ------------------------------------------------------------------ */
/* Status                                                              */
/* ------------------------------------------------------------------ */

typedef enum {
    WEFT_OK = 0,
    /** Not finished yet; call again (non-blocking calls only). */
    WEFT_INPROGRESS = 1,
    /** A NULL, out-of-range or inconsistent argument; nothing changed. */
    WEFT_ERR_INVALID_ARGUMENT = -1,
    WEFT_ERR_NO_MEMORY = -2,
    /** A system call failed (the message names it and errno). */
    WEFT_ERR_SYSTEM = -3,
    /** A deadline passed (the message names what was awaited). */
    WEFT_ERR_TIMEOUT = -4,
    /** A peer closed, reset, died or reported an error. */
    WEFT_ERR_REMOTE = -5,
    /** The backend or build lacks what was asked for. */
    WEFT_ERR_UNSUPPORTED = -6,
    /** A peer failed authentication. */
    WEFT_ERR_AUTH = -7,
    /** A peer sent something the protocol does not allow. */
    WEFT_ERR_PROTOCOL = -8,
    /** The communicator was aborted. */
    WEFT_ERR_ABORTED = -9,
    /** A GPU runtime or driver call failed. */
    WEFT_ERR_BACKEND = -10,
    /** The named object (buffer, peer, algorithm) does not exist. */
    WEFT_ERR_NOT_FOUND = -11,
    /** An internal invariant failed: a bug in weft. */
    WEFT_ERR_INTERNAL = -12
} weft_status_t;

/** A static string naming @p status ("WEFT_ERR_TIMEOUT: ..."). Never NULL. */
WEFT_API const char *weft_status_string(weft_status_t status);

/**
 * The message of the last error detected in the calling thread (empty
 * string if none). Valid until the thread's next weft call.
 */
WEFT_API const char *weft_get_last_error(void);

/**
 * Re-reads the log settings from the environment now: WEFT_LOG_LEVEL,
 * WEFT_LOG_SUBSYS and WEFT_LOG_FILE, or where those are unset NCCL_DEBUG
 * and NCCL_DEBUG_FILE (ncclResetDebugInit). Thread-safe.
 */
WEFT_API void weft_log_reset(void);

/** Library version as WEFT_VERSION_CODE; useful against header mismatch. */
WEFT_API weft_status_t weft_get_version(int *version);

/** One parameter of weft's table (WEFT_* environment variables). */
typedef struct {
    const char *name;  /**< the variable, e.g. "WEFT_LOG_LEVEL" */
    const char *value; /**< the effective text (environment or default) */
    const char *def;   /**< the default */
    const char *help;
    int is_int;   /**< 1: an integer (int_value holds it); 0: a string */
    int from_env; /**< 1: set in the environment */
    long int_value;
    int valid;     /**< 0: the environment's text was refused (does not parse
                        or lies out of range); the default is in effect and
                        communicator init fails naming the variable */
    int has_range; /**< integers: [min, max] is the range */
    long min, max;
    int is_size;   /**< integers: takes K, M, G suffixes (powers of 1024) */
} weft_param_desc_t;
/**
 * Parameter @p index (0, 1, ... : the core's in table order, then each
 * backend's) as read at the first call of the process;
 * WEFT_ERR_NOT_FOUND past the last one. Variables that launchers and
 * other runtimes set, and that weft reads, are listed too. The strings
 * live as long as the process. Thread-safe.
 */
WEFT_API weft_status_t weft_param_describe(size_t index, weft_param_desc_t *out);

/* ------------------------------------------------------------------ */
/* Unique id and bootstrap                                             */
/* ------------------------------------------------------------------ */

#define WEFT_UNIQUE_ID_BYTES 128
/** Text form: 256 hex digits and a terminating NUL. */
#define WEFT_UNIQUE_ID_TEXT_BYTES 257

/**
 * Identifies one job: the root's address and a 256-bit secret that every
 * rank proves it knows. The secret is a bearer token: pass the id only to
 * the job's own ranks. Never logged.
 */
typedef struct {
    unsigned char internal[WEFT_UNIQUE_ID_BYTES];
} weft_unique_id_t;

/**
 * Creates a new id and starts the bootstrap root for it in this process
 * (a thread that lives until every rank has registered, or until the init
 * deadline WEFT_INIT_TIMEOUT_MS). The root binds to WEFT_SOCKET_IFNAME's
 * address, else the first usable non-loopback interface, else loopback.
 */
WEFT_API weft_status_t weft_get_unique_id(weft_unique_id_t *id);

/** Writes @p id as text (256 hex digits + NUL) into @p buf of @p len >= 257. */
WEFT_API weft_status_t weft_unique_id_format(const weft_unique_id_t *id,
                                             char *buf, size_t len);

/**
 * Parses the text form (surrounding whitespace ignored) and validates it
 * (magic, version, address, checksum). A malformed id is refused with
 * WEFT_ERR_INVALID_ARGUMENT before any network I/O.
 */
WEFT_API weft_status_t weft_unique_id_parse(const char *text,
                                            weft_unique_id_t *id);

/**
 * Writes the root address of @p id ("host:port", NUL-terminated) to
 * @p text of @p len bytes (64 are enough): what a tool may show of an id,
 * whose secret it must not. WEFT_ERR_INVALID_ARGUMENT for a malformed id
 * or a short buffer. Thread-safe.
 */
WEFT_API weft_status_t weft_unique_id_root(const weft_unique_id_t *id, char *text, size_t len);

/** Validates a binary id; WEFT_OK or WEFT_ERR_INVALID_ARGUMENT. */
WEFT_API weft_status_t weft_unique_id_validate(const weft_unique_id_t *id);

/* ------------------------------------------------------------------ */
/* Communicator                                                        */
/* ------------------------------------------------------------------ */

typedef struct weft_comm weft_comm_t;

/** Optional communicator settings. Start from WEFT_COMM_CONFIG_INIT. */
typedef struct {
    size_t size;          /**< sizeof(weft_comm_config_t) */
    unsigned version;     /**< WEFT_COMM_CONFIG_VERSION */
    const char *backend;  /**< "host", "cuda", "hip"; NULL: WEFT_BACKEND */
    int device;           /**< device index; -1: local rank modulo count;
                               WEFT_DEVICE_CURRENT: the device current in the
                               calling thread (cudaGetDevice; host: 0) */
    int init_timeout_ms;  /**< 0: WEFT_INIT_TIMEOUT_MS */
    int op_timeout_ms;    /**< bootstrap op deadline; 0: WEFT_BOOTSTRAP_TIMEOUT_MS */
    int device_timeout_ms; /**< longest device-side wait; 0: WEFT_DEVICE_TIMEOUT_MS */
} weft_comm_config_t;

#define WEFT_DEVICE_CURRENT (-2)
#define WEFT_COMM_CONFIG_VERSION 1
#define WEFT_COMM_CONFIG_INIT                                                \
    { sizeof(weft_comm_config_t), WEFT_COMM_CONFIG_VERSION, NULL, -1, 0, 0, 0 }

/**
 * How many devices GPU backend @p backend ("host", "cuda", "hip") sees here:
 * WEFT_ERR_NOT_FOUND if this build lacks it, 0 devices if it has no device
 * or driver. Starts no communicator; lets a caller pick a backend.
 */
WEFT_API weft_status_t weft_backend_device_count(const char *backend, int *count);

/** What this build of weft has (weft_build_info). */
typedef struct {
    const char *version;      /**< e.g. "0.1.0" */
    const char *gpu_backends; /**< the GPU backends built, space-separated: "host cuda hip" */
    const char *networks;     /**< the network transports built: "ethernet ib" */
    int hwloc;                /**< 1: the topology comes from hwloc */
} weft_build_info_t;

/**
 * Describes this build. The strings live as long as the process.
 * WEFT_ERR_INVALID_ARGUMENT if @p out is NULL. Thread-safe.
 */
WEFT_API weft_status_t weft_build_info(weft_build_info_t *out);

/** One device of a GPU backend (weft_backend_device_info). */
typedef struct {
    char name[64];        /**< as the backend names it */
    size_t total_mem;     /**< bytes */
    char pci_bus_id[32];  /**< "0000:17:00.0", or "" when not a PCI device */
} weft_device_info_t;

/**
 * Opens device @p device of GPU backend @p backend, describes it and
 * closes it again; starts no communicator. WEFT_ERR_NOT_FOUND if this
 * build lacks the backend; WEFT_ERR_INVALID_ARGUMENT for a NULL argument
 * or a device outside [0, weft_backend_device_count); the backend's error
 * if the device cannot be opened. Thread-safe.
 */
WEFT_API weft_status_t weft_backend_device_info(const char *backend, int device, weft_device_info_t *out);

/**
 * The address this process would offer its peers at bootstrap (chosen by
 * WEFT_SOCKET_IFNAME and WEFT_SOCKET_FAMILY), as text, port 0, into
 * @p text of @p len bytes (64 are enough). WEFT_ERR_SYSTEM if the
 * interfaces cannot be read; WEFT_ERR_INVALID_ARGUMENT for a NULL or
 * short buffer. Thread-safe.
 */
WEFT_API weft_status_t weft_bootstrap_local_address(char *text, size_t len);

/**
 * The machine's topology as weft sees it (or the one WEFT_TOPO_FILE
 * describes): NUMA nodes, GPUs and NICs, one line each after a summary,
 * as a NUL-terminated string in *@p text that the caller releases with
 * free(). WEFT_ERR_UNSUPPORTED where it cannot be read (a build without
 * hwloc); WEFT_ERR_INVALID_ARGUMENT if @p text is NULL. Thread-safe.
 */
WEFT_API weft_status_t weft_topology_describe(char **text);

/** The most ranks a communicator may have; weft_comm_init refuses more
 * with WEFT_ERR_INVALID_ARGUMENT before allocating anything per rank. */
#define WEFT_MAX_RANKS 65536

/**
 * Joins the job named by @p id as @p rank of @p nranks. Blocks until every
 * rank has joined or the init deadline passes (WEFT_ERR_TIMEOUT, naming
 * the ranks that never arrived where the root knows them).
 * @param config may be NULL for defaults.
 */
WEFT_API weft_status_t weft_comm_init(const weft_unique_id_t *id, int nranks,
                                      int rank,
                                      const weft_comm_config_t *config,
                                      weft_comm_t **comm);

/**
 * Joins a job started by an external launcher. Rank and size come from
 * WEFT_RANK/WEFT_NRANKS, RANK/WORLD_SIZE (torchrun), OMPI_COMM_WORLD_*,
 * PMI_RANK/PMI_SIZE or SLURM_PROCID/SLURM_NTASKS (first found). The root is
 * WEFT_ROOT=host:port (rank 0 starts it there) or the address inside
 * WEFT_UNIQUE_ID; the secret comes from WEFT_UNIQUE_ID, or, with
 * WEFT_TRUST_LOCAL=1 and a loopback WEFT_ROOT only, from the user id.
 */
WEFT_API weft_status_t weft_comm_init_from_env(const weft_comm_config_t *config,
                                               weft_comm_t **comm);

/**
 * Frees the communicator. Not collective; safe after abort or errors.
 * Work still queued on the communicator's streams uses its memory, so
 * destroy first waits for it, up to the communicator's op timeout
 * (weft_comm_config_t.op_timeout_ms); work still running then is aborted
 * (as by weft_comm_abort) and waited for as long again. Returns WEFT_OK
 * once everything is freed; WEFT_ERR_TIMEOUT (logged) when work still ran
 * after the abort: the communicator's memory is then left allocated,
 * never freed under a running kernel. Destroying it again returns
 * WEFT_ERR_INVALID_ARGUMENT (the handle is no longer live) and touches
 * nothing. Streams made from it may be destroyed before or after it; any
 * other use of a destroyed communicator (or of objects made from it) is
 * undefined.
 */
WEFT_API weft_status_t weft_comm_destroy(weft_comm_t *comm);

/**
 * Aborts the communicator: every call blocked on it returns
 * WEFT_ERR_ABORTED within a bounded time, and later calls fail with it.
 * Its peers learn of it too: the rank hangs up its bootstrap links, so a
 * peer that holds one fails its waits on this communicator with
 * WEFT_ERR_REMOTE naming this rank after WEFT_PEER_LOSS_GRACE_MS, even
 * while this process lives on (a peer without a link learns when one that
 * has it destroys or aborts its own). Callable from any thread. Still call
 * weft_comm_destroy afterwards.
 */
WEFT_API weft_status_t weft_comm_abort(weft_comm_t *comm);

/**
 * As weft_comm_abort for this rank (every call blocked on the
 * communicator returns WEFT_ERR_ABORTED within a bounded time, later
 * calls fail with it), but the bootstrap links stay up and the peers are
 * not told: for a rank that stops its own work while the others go on
 * (ncclCommRevoke). Callable from any thread. Still call
 * weft_comm_destroy afterwards.
 */
WEFT_API weft_status_t weft_comm_cancel(weft_comm_t *comm);

/**
 * Ends the device work on the communicator's streams: every device wait
 * of its kernels, copies and proxies gives up at once (the stream's
 * synchronisation reports WEFT_ERR_ABORTED), and device work queued later
 * gives up at its first wait. Host calls and the bootstrap links are left
 * as they are, so that bootstrap exchanges (split, a shrink's hand-out)
 * still work, and the peers are not told. For a rank that revokes a
 * communicator whose kernels wait for peers that will not come
 * (ncclCommRevoke, ncclCommShrink with NCCL_SHRINK_ABORT). Callable from
 * any thread. Still call weft_comm_destroy afterwards.
 */
WEFT_API weft_status_t weft_comm_cancel_device(weft_comm_t *comm);

/**
 * The first asynchronous error of the communicator (a dead peer, a
 * timeout, an abort), or WEFT_OK. Callable from any thread.
 */
WEFT_API weft_status_t weft_comm_get_async_error(weft_comm_t *comm,
                                                 weft_status_t *error);

WEFT_API weft_status_t weft_comm_rank(const weft_comm_t *comm, int *rank);
WEFT_API weft_status_t weft_comm_size(const weft_comm_t *comm, int *nranks);
/** Rank among the ranks of the same host (same host identity). */
WEFT_API weft_status_t weft_comm_local_rank(const weft_comm_t *comm, int *rank);
WEFT_API weft_status_t weft_comm_local_size(const weft_comm_t *comm, int *n);
/** Name of the GPU backend in use ("host", "cuda", "hip"). */
WEFT_API weft_status_t weft_comm_backend(const weft_comm_t *comm,
                                         const char **name);
WEFT_API weft_status_t weft_comm_device(const weft_comm_t *comm, int *device);

/* ------------------------------------------------------------------ */
/* Bootstrap operations (host-side, over the authenticated TCP links)  */
/* ------------------------------------------------------------------ */

/** Tags with this bit set are reserved for weft itself. */
#define WEFT_TAG_RESERVED (UINT64_C(1) << 63)

/**
 * Every rank contributes @p bytes_per_rank bytes at
 * buf + rank * bytes_per_rank; on return buf holds all contributions.
 * Collective; every rank passes the same size. Deadline: op timeout.
 */
WEFT_API weft_status_t weft_bootstrap_allgather(weft_comm_t *comm, void *buf,
                                                size_t bytes_per_rank);
/** Copies @p bytes from @p root's @p buf into every rank's @p buf. */
WEFT_API weft_status_t weft_bootstrap_broadcast(weft_comm_t *comm, void *buf,
                                                size_t bytes, int root);
/** Returns once every rank has entered the barrier. */
WEFT_API weft_status_t weft_bootstrap_barrier(weft_comm_t *comm);
/**
 * Sends @p bytes to @p peer under @p tag (reserved bit clear). Messages
 * with the same (peer, tag) arrive in order. Returns once the data is
 * handed to the kernel; does not wait for the matching receive.
 */
WEFT_API weft_status_t weft_bootstrap_send(weft_comm_t *comm, const void *buf,
                                           size_t bytes, int peer,
                                           uint64_t tag);
/**
 * Receives exactly @p bytes from @p peer under @p tag. A message of another
 * length is a WEFT_ERR_PROTOCOL naming the peer.
 */
WEFT_API weft_status_t weft_bootstrap_recv(weft_comm_t *comm, void *buf,
                                           size_t bytes, int peer,
                                           uint64_t tag);

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

/** Transports a registration is made for (bit set). */
typedef enum {
    WEFT_TRANSPORT_IPC = 1u << 0,      /**< same host: mapped by peers */
    WEFT_TRANSPORT_ETHERNET = 1u << 1, /**< TCP net backend */
    WEFT_TRANSPORT_IB = 1u << 2        /**< verbs net backend */
} weft_transport_t;

#define WEFT_TRANSPORT_ALL                                                   \
    (WEFT_TRANSPORT_IPC | WEFT_TRANSPORT_ETHERNET | WEFT_TRANSPORT_IB)

/**
 * Allocates @p bytes of device memory that peers on the same host can map
 * (host backend: a memfd mapping; cuda: cuMem VMM; hip: hipMalloc).
 * Zero-filled. Free with weft_mem_free on the same communicator.
 */
WEFT_API weft_status_t weft_mem_alloc(weft_comm_t *comm, size_t bytes,
                                      void **ptr);
/**
 * Frees memory from weft_mem_alloc. Registrations of it must have been
 * deregistered first (else WEFT_ERR_INVALID_ARGUMENT, nothing freed).
 */
WEFT_API weft_status_t weft_mem_free(weft_comm_t *comm, void *ptr);

/**
 * Allocates @p bytes of shareable device memory without a communicator
 * (what ncclMemAlloc gives), on @p backend's device that the caller's
 * runtime has current: a memfd mapping (host), cuMem VMM with file
 * descriptor handles (cuda), IPC-able memory (hip). Any communicator on
 * that backend registers and exports it like its own memory, and its
 * collectives use it without copies with no further call (see
 * weft_comm_register). Zero-filled. Thread-safe.
 * @return WEFT_ERR_INVALID_ARGUMENT for a NULL @p backend or @p ptr or
 * @p bytes 0; WEFT_ERR_NOT_FOUND: no such backend in this build.
 */
WEFT_API weft_status_t weft_mem_alloc_shareable(const char *backend, size_t bytes, void **ptr);
/** Frees memory from weft_mem_alloc_shareable (WEFT_ERR_INVALID_ARGUMENT
 * for any other pointer, or one freed already). Deregister it from every
 * communicator first. Thread-safe. */
WEFT_API weft_status_t weft_mem_free_shareable(void *ptr);

/** A registered buffer: local, or a peer's imported through a handle. */
typedef struct weft_mem weft_mem_t;

/** Serialized registration: fixed size so it can be allgathered. */
#define WEFT_MEM_HANDLE_BYTES 256
typedef struct {
    unsigned char internal[WEFT_MEM_HANDLE_BYTES];
} weft_mem_handle_t;

/**
 * Registers [ptr, ptr + bytes) for @p transports. WEFT_TRANSPORT_IPC needs
 * memory from weft_mem_alloc (the registration may cover part of it).
 *
 * Lifetime: the registration holds the memory's export open; deregister
 * it before freeing the memory. Peers that imported it keep a mapping
 * that stays valid until *they* deregister their imported handle, but the
 * owner must not reuse the memory until peers are done with it (agree on
 * that with a barrier).
 */
WEFT_API weft_status_t weft_mem_register(weft_comm_t *comm, void *ptr,
                                         size_t bytes, unsigned transports,
                                         weft_mem_t **mem);
/** Releases a local registration or an imported one (unmapping it). */
WEFT_API weft_status_t weft_mem_deregister(weft_mem_t *mem);
/** Serializes a local registration for sending to peers. */
WEFT_API weft_status_t weft_mem_serialize(const weft_mem_t *mem,
                                          weft_mem_handle_t *handle);
/**
 * Imports a peer's serialized registration. On the same host with the IPC
 * transport, the memory is mapped into this process (weft_mem_ptr gives
 * the address). Handles of another job, a corrupt or truncated handle:
 * WEFT_ERR_INVALID_ARGUMENT.
 */
WEFT_API weft_status_t weft_mem_deserialize(weft_comm_t *comm,
                                            const weft_mem_handle_t *handle,
                                            weft_mem_t **mem);
/**
 * The address through which this process reaches the memory: the local
 * pointer, or the mapping of an imported peer buffer. WEFT_ERR_UNSUPPORTED
 * when the memory is reachable only through a network transport.
 */
WEFT_API weft_status_t weft_mem_ptr(const weft_mem_t *mem, void **ptr);
WEFT_API weft_status_t weft_mem_size(const weft_mem_t *mem, size_t *bytes);
/** The rank that owns the memory. */
WEFT_API weft_status_t weft_mem_rank(const weft_mem_t *mem, int *rank);

/* ------------------------------------------------------------------ */
/* Device errors                                                       */
/* ------------------------------------------------------------------ */

/**
 * Checks the communicator's device control block after kernels ran:
 * WEFT_OK, or WEFT_ERR_TIMEOUT / WEFT_ERR_ABORTED / WEFT_ERR_REMOTE with a
 * message naming the rank, the operation and the peer it waited for. The
 * error is also recorded as the async error.
 */
WEFT_API weft_status_t weft_comm_check_device(weft_comm_t *comm);

/* ------------------------------------------------------------------ */
/* Streams and built-in kernels                                        */
/* ------------------------------------------------------------------ */

/** An in-order queue of device work on the communicator's device. */
typedef struct weft_stream weft_stream_t;
WEFT_API weft_status_t weft_stream_create(weft_comm_t *comm, weft_stream_t **stream);
WEFT_API weft_status_t weft_stream_destroy(weft_stream_t *stream);
/** Waits for the queued work, then reports device errors as
 * weft_comm_check_device does. */
WEFT_API weft_status_t weft_stream_synchronize(weft_stream_t *stream);
/** The GPU runtime's own stream under @p stream (a cudaStream_t or
 * hipStream_t), for work of other libraries ordered with weft's; the host
 * backend has none: WEFT_ERR_UNSUPPORTED. */
WEFT_API weft_status_t weft_stream_native(const weft_stream_t *stream, void **native);
/**
 * A weft stream over the caller's runtime stream @p native (cudaStream_t or
 * hipStream_t; NULL is the runtime's default stream): weft queues its work
 * there, ordered with the caller's, and weft_stream_destroy leaves the
 * runtime stream alone. The host backend has none: WEFT_ERR_UNSUPPORTED.
 */
WEFT_API weft_status_t weft_stream_wrap(weft_comm_t *comm, void *native, weft_stream_t **stream);
/** Queues a copy between any host or device memory of the backend. */
WEFT_API weft_status_t weft_memcpy(weft_stream_t *stream, void *dst, const void *src, size_t bytes);
/**
 * Queues built-in kernel @p name (src/kernels/) with a copy of @p args,
 * whose size must match the kernel's argument struct.
 */
WEFT_API weft_status_t weft_launch_builtin(weft_stream_t *stream, const char *name, unsigned nblocks,
                                           unsigned nthreads, const void *args, size_t args_size);

/* ------------------------------------------------------------------ */
/* Collectives                                                         */
/* ------------------------------------------------------------------ */

/*
 * Stream-ordered collectives over the ranks of the communicator (on one
 * host through memory channels; across hosts as rings over port channels,
 * README). Counts are in elements; any count (0 included), any alignment,
 * in place or not (in place as NCCL defines it). Buffers are device memory
 * of the communicator's backend. The first collective of a communicator
 * sets up its channels and scratch (collectively); later calls allocate
 * nothing and can be captured in a CUDA/HIP graph and replayed (a set-up
 * under capture is refused: WEFT_ERR_UNSUPPORTED).
 * Errors: WEFT_ERR_INVALID_ARGUMENT (nothing queued) for NULL buffers with
 * a non-zero count, unknown types or ops, out-of-range roots, size
 * overflow; with WEFT_CHECK_ARGS=1 mismatched counts across ranks are
 * found first and named. Device-side failures surface at
 * weft_stream_synchronize.
 */
WEFT_API weft_status_t weft_allreduce(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
                                      weft_redop_t op, weft_comm_t *comm, weft_stream_t *stream);

/** A buffer every rank of the host has mapped from every other. */
typedef struct weft_comm_window weft_comm_window_t;
/**
 * Collective (every rank, in the same order): registers @p buf, @p bytes
 * of memory the backend can share (weft_mem_alloc, weft_mem_alloc_shareable,
 * cudaMalloc on cuda; sizes may differ by rank), as a window; where one
 * rank's cannot be shared, it fails on every rank.
 * Where every rank's buffers lie in windows (at any offsets, aligned to
 * the element size), the large-message algorithms skip scratch: an
 * allreduce by reduce-scatter+allgather (input and output in windows)
 * reads its peers' inputs and writes their outputs; allgather,
 * reduce-scatter, reduce and all-to-all (inputs in windows; for
 * all-to-all, not overlapping the output) read the peers' inputs, and a
 * broadcast reads the root's input where that alone lies in a window.
 * Otherwise they stage as before. Every rank of the communicator must be on this
 * host: WEFT_ERR_UNSUPPORTED otherwise. At most 32 windows at once.
 */
WEFT_API weft_status_t weft_comm_window_register(weft_comm_t *comm, void *buf, size_t bytes,
                                                 weft_comm_window_t **win);
/** Collective: releases a window once every collective that used it has
 * completed on every rank (synchronize the streams first). A window
 * deregistered already, or freed with its communicator, is refused with
 * WEFT_ERR_INVALID_ARGUMENT (no rank waits). */
WEFT_API weft_status_t weft_comm_window_deregister(weft_comm_window_t *win);

/*
 * One-sided puts and signals over windows (what the NCCL library's
 * ncclPutSignal, ncclSignal and ncclWaitSignal run on). Each rank has a
 * signal area: one counter per source rank, mapped by the ranks of its
 * host. Stream-ordered and capturable in CUDA/HIP graphs (the counts a
 * wait expects advance on the device). Signals to and waits on one peer
 * accumulate: two signals satisfy a wait for two, or two waits for one.
 */
/**
 * Collective (every rank, once; later calls return at once): sets up this
 * rank's signal area and maps the peers' on this host.
 */
WEFT_API weft_status_t weft_signal_setup(weft_comm_t *comm);
/**
 * Queues on @p stream a copy of @p bytes from @p src into rank @p peer's
 * buffer of window @p win at byte @p offset, then a signal to @p peer,
 * which arrives after the data. With @p bytes 0 only the signal (@p win
 * may then be NULL). Bad arguments, a window of another communicator, a
 * range past the peer's buffer: WEFT_ERR_INVALID_ARGUMENT (nothing
 * queued); a peer on another host (no mapping of its memory here), no
 * weft_signal_setup yet: WEFT_ERR_UNSUPPORTED.
 */
WEFT_API weft_status_t weft_put_signal(const void *src, size_t bytes, int peer, weft_comm_window_t *win,
                                       size_t offset, weft_comm_t *comm, weft_stream_t *stream);
/**
 * Queues on @p stream a wait until, for every i < @p n, @p counts[i] more
 * signals than waited for so far have come from rank @p peers[i]. A wait
 * that gives up (device timeout) reports the peer (weft_stream_synchronize).
 * Errors as weft_put_signal.
 */
WEFT_API weft_status_t weft_wait_signal(int n, const int *peers, const uint64_t *counts, weft_comm_t *comm,
                                        weft_stream_t *stream);
/** The buffer @p win was registered over, into *buf (ncclWinGetUserPtr). */
WEFT_API weft_status_t weft_comm_window_buffer(const weft_comm_window_t *win, void **buf);

/** A buffer registered by one rank for collectives (weft_comm_register). */
typedef struct weft_comm_reg weft_comm_reg_t;
/**
 * Local (not collective): registers [buf, buf + bytes) of device memory
 * for zero-copy collectives. Any memory the backend can share qualifies:
 * weft_mem_alloc, weft_mem_alloc_shareable, and on cuda memory from
 * cudaMalloc (the allocation's base is exported, the offset carried).
 * Memory the backend cannot share (plain malloc on the host backend) is
 * refused with WEFT_ERR_INVALID_ARGUMENT on this rank only.
 *
 * The buffer is pushed to every peer of the host, whose IPC service
 * thread maps it and answers; the call returns once they all have (it
 * waits on those threads, not on the peers' own calls, so one thread may
 * drive several ranks). Where a peer cannot map it the registration still
 * succeeds, and collectives on it stage. A collective whose buffers are
 * registered (or in windows) on every rank goes zero-copy; otherwise
 * every rank stages: the kernels agree at their first barrier.
 * Buffers not registered are registered on first use by collectives of at
 * least WEFT_REG_MIN_BYTES where WEFT_REG_CACHE=1 (weft_mem_alloc_shareable's
 * memory always), checked against their allocation's identity at each use.
 * Not thread-safe against other calls on @p comm.
 */
WEFT_API weft_status_t weft_comm_register(weft_comm_t *comm, void *buf, size_t bytes, weft_comm_reg_t **reg);
/** Local: releases a registration (its peers unmap it) once the collectives
 * that used it have completed (synchronize the streams first);
 * WEFT_ERR_INVALID_ARGUMENT for NULL or a registration released already. */
WEFT_API weft_status_t weft_comm_deregister(weft_comm_reg_t *reg);
/** recvbuf holds nranks * sendcount elements, rank r's at r * sendcount. */
WEFT_API weft_status_t weft_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, weft_dtype_t dtype,
                                      weft_comm_t *comm, weft_stream_t *stream);
/** sendbuf holds nranks * recvcount elements; block r, reduced, lands here. */
WEFT_API weft_status_t weft_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                           weft_dtype_t dtype, weft_redop_t op, weft_comm_t *comm,
                                           weft_stream_t *stream);
WEFT_API weft_status_t weft_broadcast(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
                                      int root, weft_comm_t *comm, weft_stream_t *stream);
/** recvbuf is used on the root only (may be NULL elsewhere). */
WEFT_API weft_status_t weft_reduce(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
                                   weft_redop_t op, int root, weft_comm_t *comm, weft_stream_t *stream);
/** count elements go from every rank to every rank (blocks of count). In
 *  place (sendbuf == recvbuf) works; buffers that partly overlap do not. */
WEFT_API weft_status_t weft_alltoall(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
                                     weft_comm_t *comm, weft_stream_t *stream);
/**
 * All-to-all with a count and a displacement (in elements) per rank:
 * sendcounts[p] elements from sendbuf + sdispls[p] go to rank p, which
 * receives them at recvbuf + rdispls[its p]; recvcounts[p] must equal what
 * rank p sends here. Runs as a group of sends and receives (inside the
 * caller's group, if one is open).
 */
WEFT_API weft_status_t weft_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                                      void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                                      weft_dtype_t dtype, weft_comm_t *comm, weft_stream_t *stream);
WEFT_API weft_status_t weft_barrier(weft_comm_t *comm, weft_stream_t *stream);

/*
 * Point-to-point, stream-ordered, with NCCL's group semantics. Outside a
 * group each call runs alone (a send waits, on its stream, for the
 * matching receive). Between weft_group_start() and weft_group_end()
 * (nestable, per thread) calls are only checked and recorded; the
 * outermost weft_group_end() issues them all as one operation per
 * communicator, so a rank may send to and receive from any set of peers
 * in one group without ordering them. A group's calls on one
 * communicator must use one stream. A group may be captured into a
 * CUDA/HIP graph and the graph replayed any number of times, between
 * uncaptured groups too, once an uncaptured group has set up the link to
 * each peer it names (a set-up under capture: WEFT_ERR_UNSUPPORTED).
 * Several sends to one peer in a group
 * form one message (in call order), as do several receives; the byte
 * counts must match the peer's (WEFT_CHECK_ARGS=1 compares them and names
 * the peer; otherwise a mismatch can time out naming it). The first group
 * that names a peer sets up the link to it (both ranks: pairwise,
 * bounded). Bad arguments: WEFT_ERR_INVALID_ARGUMENT, nothing recorded.
 * Collectives called inside a group are issued at the call.
 */
WEFT_API weft_status_t weft_group_start(void);
WEFT_API weft_status_t weft_group_end(void);
/** How many weft_group_start() of this thread are open (0: none). */
WEFT_API int weft_group_depth(void);
/** Ends the innermost open group of this thread without issuing
 * anything: at the outermost level, what the group recorded is dropped
 * (deferred calls are released, their run never called). What
 * ncclGroupSimulateEnd does. WEFT_ERR_INVALID_ARGUMENT if none is open. */
WEFT_API weft_status_t weft_group_cancel(void);

/** A call deferred to the end of a group (weft_group_defer). */
typedef weft_status_t (*weft_group_run_fn_t)(void *arg);
/** Its release: @p status is the outcome of its communicator's share of
 * the group (the first failure of its deferred calls and its sends and
 * receives), or WEFT_ERR_ABORTED when the group was cancelled; returns
 * the status to report for the call. Called once, whatever happened. */
typedef weft_status_t (*weft_group_done_fn_t)(void *arg, weft_status_t status);

/**
 * Defers @p run (with @p arg) on @p comm to the outermost
 * weft_group_end(), so that libraries above weft (the NCCL API) record
 * any call, collectives included, in weft's one group per thread. There
 * each communicator's share runs as a group of its own: its deferred
 * calls in call order (a failure stops the rest of that share), any
 * weft_send/weft_recv they or the caller made on it, then each deferred
 * call's @p done. A group that spans several communicators and defers
 * calls runs each communicator's share from a thread of its own (one
 * thread may drive several ranks: a communicator's first operations
 * wait for its peers, which are in the same group); the failure of the
 * first share that failed is this thread's last error.
 * Outside a group: runs at once as a group of its own and returns what
 * @p done returns. Inside: returns WEFT_OK (WEFT_ERR_NO_MEMORY after
 * calling @p done with it). @p comm NULL or @p run or @p done NULL:
 * WEFT_ERR_INVALID_ARGUMENT, nothing called. Per thread, like the group.
 */
WEFT_API weft_status_t weft_group_defer(weft_comm_t *comm, weft_group_run_fn_t run, weft_group_done_fn_t done,
                                        void *arg);
/**
 * weft_group_defer of a copy of @p arg (@p bytes): run and done get a
 * pointer to the copy, which lives until done returns; the caller's @p arg
 * may go as soon as this returns. The copies come from storage the thread
 * reuses (up to 512 bytes each), so that a steady stream of deferred calls
 * allocates nothing (what the NCCL API records each call with). @p comm,
 * @p run, @p done or @p arg NULL, or @p bytes 0: WEFT_ERR_INVALID_ARGUMENT,
 * nothing called. No memory for the copy: done is called with @p arg
 * itself and WEFT_ERR_NO_MEMORY, which is returned. Otherwise as
 * weft_group_defer. Per thread, like the group.
 */
WEFT_API weft_status_t weft_group_defer_copy(weft_comm_t *comm, weft_group_run_fn_t run, weft_group_done_fn_t done,
                                             void *arg, size_t bytes);
WEFT_API weft_status_t weft_send(const void *buf, size_t count, weft_dtype_t dtype, int peer, weft_comm_t *comm,
                                 weft_stream_t *stream);
WEFT_API weft_status_t weft_recv(void *buf, size_t count, weft_dtype_t dtype, int peer, weft_comm_t *comm,
                                 weft_stream_t *stream);
/*
 * Execution plans: the JSON plans that MSCCL++'s DSL prints (its current
 * snake_case format), run by weft's executor. A plan lists, per rank and
 * per thread block, the channel operations of one collective; weft
 * honours each op's reduce_op (sum, prod, min, max, avg).
 */
typedef struct weft_plan weft_plan_t;

/** What a loaded plan declares. The strings live as long as the plan. */
typedef struct {
    const char *name;
    const char *collective; /* "allreduce", "allgather", ..., or "test" */
    int nranks;
    int inplace;            /* the plan runs with recvbuf == sendbuf (as NCCL places it) */
    int packet;             /* protocol LL */
    uint64_t min_bytes, max_bytes; /* message sizes it admits (input; output for allgather) */
    /* NULL, or why the plan can never complete whatever the message (a
     * wait on a channel no op of the peer signals, packets read from
     * scratch no op writes): weft_execute refuses such a plan with
     * WEFT_ERR_INVALID_ARGUMENT before anything runs */
    const char *never_completes;
} weft_plan_info_t;

/**
 * Loads and validates the plan in the file at @p path. Every field is
 * type-checked and every index (buffer chunk, channel, remote buffer,
 * semaphore, thread block, barrier) is checked against what the plan
 * declares. Returns WEFT_ERR_INVALID_ARGUMENT for a bad plan, with a last
 * error naming the JSON path of the first bad field
 * ("gpus[1].threadblocks[3].ops[7].src_buff[0].index: 9 >= input_chunks 8");
 * WEFT_ERR_NOT_FOUND if there is no such file. Thread-safe; the plan is
 * independent of any communicator.
 */
WEFT_API weft_status_t weft_plan_load(const char *path, weft_plan_t **plan);
/** As weft_plan_load, from the NUL-terminated JSON text @p json. */
WEFT_API weft_status_t weft_plan_load_string(const char *json, weft_plan_t **plan);
/**
 * Frees a plan and what the executor built for it (connections, scratch,
 * semaphores) on every communicator that ran it. The streams it ran on
 * must be synchronized first. NULL is a no-op.
 */
WEFT_API weft_status_t weft_plan_destroy(weft_plan_t *plan);
/** What @p plan declares. */
WEFT_API weft_status_t weft_plan_info(const weft_plan_t *plan, weft_plan_info_t *info);
/**
 * Whether weft_execute would accept @p send_bytes of input and
 * @p recv_bytes of output for @p plan on every one of its ranks (the
 * chunking rule and min/max_message_size; see weft_execute): WEFT_OK, or
 * WEFT_ERR_INVALID_ARGUMENT, nothing logged (tools use it to pick the
 * sizes of a sweep). Thread-safe.
 */
WEFT_API weft_status_t weft_plan_check_message(const weft_plan_t *plan, size_t send_bytes, size_t recv_bytes);
/**
 * The plans of WEFT_PLAN_DIR, which the collectives try before their
 * built-in table (loaded once per process, on first use): *dir the
 * directory ("" when WEFT_PLAN_DIR is unset), *loaded the plans that
 * loaded, *failed the files that did not (the log says why). Any output
 * pointer may be NULL.
 */
WEFT_API weft_status_t weft_plan_dir_summary(const char **dir, size_t *loaded, size_t *failed);
/**
 * Plan @p i (0 .. loaded - 1, in the order the collectives try them) of
 * WEFT_PLAN_DIR and its file's path; WEFT_ERR_NOT_FOUND past the last,
 * WEFT_ERR_INVALID_ARGUMENT for NULL outputs. The plan belongs to weft:
 * never destroy it.
 */
WEFT_API weft_status_t weft_plan_dir_get(size_t i, const weft_plan_t **plan, const char **file);

/**
 * Runs @p plan's collective on @p comm: collective over the plan's ranks
 * (the plan's rank count must be the communicator's size), stream-ordered
 * on @p stream. @p sendbuf holds @p send_bytes of input and @p recvbuf
 * receives @p recv_bytes of output (device memory of the communicator's
 * backend; they may be the same buffer, or overlap as NCCL places an
 * in-place allgather). The sizes must satisfy the plan's chunking rule:
 * multiples of buffer_alignment cut evenly into the rank's input_chunks
 * and output_chunks, equal chunks, within min/max_message_size. Every
 * reducing op of the plan uses @p op on @p dtype (sum, prod, min, max; avg
 * is a sum divided at the end, allreduce plans only); a plan op that names
 * another reduce_op than sum must agree with @p op.
 * The first execution on a communicator builds the plan's resources
 * (buffers, channels, semaphores; collectively, bounded) and later ones
 * reuse them; once built, an execution may be captured in a CUDA/HIP
 * graph and replayed (the kernel counts executions on the device, so each
 * replay pairs with the peers' replays). Errors: WEFT_ERR_INVALID_ARGUMENT
 * (nothing queued) for bad arguments or sizes, with a message naming the
 * rule; WEFT_ERR_UNSUPPORTED for what the backend or this executor cannot
 * run (switch channels without multicast, port channels, capturing an
 * execution that would build the plan's resources);
 * device-side failures (a peer that never signals) surface at
 * weft_stream_synchronize as WEFT_ERR_TIMEOUT naming the rank.
 */
WEFT_API weft_status_t weft_execute(weft_comm_t *comm, weft_plan_t *plan, const void *sendbuf, void *recvbuf,
                                    size_t send_bytes, size_t recv_bytes, weft_dtype_t dtype, weft_redop_t op,
                                    weft_stream_t *stream);

/**
 * One op of a traced execution (WEFT_EXEC_TRACE=1): a top-level op of a
 * thread block's list (a pipeline counts as one, its iterations inside),
 * when it started and how long it took, from the device's clock
 * (nanoseconds; starts counted from the earliest block's first op of
 * that execution on this rank).
 */
typedef struct {
    uint32_t block;     /**< thread block */
    uint32_t op;        /**< index among the block's top-level ops */
    const char *name;   /**< the op's name in the plan ("ppkt", "pipeline", ...); static */
    uint64_t start_ns;  /**< since this rank's first op of the execution started */
    uint64_t ns;        /**< until the block's next op started (the last: until its end) */
} weft_plan_trace_op_t;

/**
 * The per-op timeline of this rank's last execution of @p plan on
 * @p comm, for finding where a plan's time goes: with WEFT_EXEC_TRACE=1
 * when the plan's resources were built (its first execution on @p comm),
 * every thread block stamps the device clock before each top-level op and
 * at its end (a block-wide barrier before each stamp: tracing changes the
 * timing a little). Synchronize the execution's stream first. Fills up to
 * @p max entries of @p ops, block by block, and sets *n to how many there
 * are. WEFT_ERR_NOT_FOUND if @p plan never ran on @p comm;
 * WEFT_ERR_UNSUPPORTED if it ran untraced; WEFT_ERR_INVALID_ARGUMENT for
 * NULL arguments (or NULL @p ops with @p max > 0).
 */
WEFT_API weft_status_t weft_plan_trace(weft_comm_t *comm, const weft_plan_t *plan, weft_plan_trace_op_t *ops,
                                       size_t max, size_t *n);

/** One algorithm of the registry (weft_algorithm_describe). */
typedef struct {
    const char *collective; /**< "allreduce", "allgather", ... */
    const char *name;       /**< what WEFT_ALGO=collective:name forces */
    const char *help;
} weft_algorithm_desc_t;

/**
 * Algorithm @p index (0, 1, ... in registry order) of the built-in
 * collectives; WEFT_ERR_NOT_FOUND past the last one,
 * WEFT_ERR_INVALID_ARGUMENT if @p out is NULL. The strings are static.
 * Thread-safe.
 */
WEFT_API weft_status_t weft_algorithm_describe(size_t index, weft_algorithm_desc_t *out);

/** One rule of the selection table (weft_selection_rule_describe): a call
 *  it matches uses @p algorithm where the communicator admits it. */
typedef struct {
    const char *platform;   /**< "cpu" (the host backend), "gpu" (cuda, hip) or "*" */
    const char *collective;
    const char *layout;     /**< "one host", "hosts" (ranks on several) or "any" */
    int min_ranks, max_ranks; /**< 0: no bound */
    uint64_t max_bytes;     /**< count x type size, inclusive (allgather, reduce-scatter, all-to-all:
                                 one rank's block); UINT64_MAX: any */
    const char *algorithm;
} weft_selection_rule_t;

/**
 * Rule @p index (0, 1, ... in the order they are tried) of the default
 * selection table; WEFT_ERR_NOT_FOUND past the last one,
 * WEFT_ERR_INVALID_ARGUMENT if @p out is NULL. The strings are static.
 * Thread-safe.
 */
WEFT_API weft_status_t weft_selection_rule_describe(size_t index, weft_selection_rule_t *out);

/** The algorithm the next call of @p collective on @p bytes would use
 *  (for a float sum: an algorithm may admit only some types and ops). */
WEFT_API weft_status_t weft_coll_algorithm(weft_comm_t *comm, const char *collective, size_t bytes,
                                           const char **name);

/**
 * How many collective launches on @p comm have run zero copy (reading the
 * peers' buffers in windows or registered on first use, no scratch), since
 * the communicator was created; stream-ordered work not yet run is not
 * counted (synchronize first). A diagnostic for benchmarks and tests: on a
 * GPU it copies the counter from device memory. WEFT_ERR_INVALID_ARGUMENT
 * if @p comm or @p count is NULL.
 */
WEFT_API weft_status_t weft_comm_zero_copy_calls(weft_comm_t *comm, uint64_t *count);

/* ------------------------------------------------------------------ */
/* Connections                                                         */
/* ------------------------------------------------------------------ */

/** A link to one peer over one transport, used by semaphores and the proxy. */
typedef struct weft_connection weft_connection_t;

/**
 * Connects to @p peer over @p transport. Same-host peers (and this rank
 * itself) use WEFT_TRANSPORT_IPC: local, no communication happens; a peer
 * on another host with IPC is WEFT_ERR_INVALID_ARGUMENT.
 * WEFT_TRANSPORT_ETHERNET / WEFT_TRANSPORT_IB reach any other rank: both
 * ranks of the pair call this, in the same order for their connections
 * with each other; the set-up is authenticated and bounded by the
 * communicator's operation deadline. Memory used over a network
 * connection must be registered for that transport. A network peer that
 * dies, resets or stops reading fails the connection with
 * WEFT_ERR_REMOTE naming it (also the communicator's async error).
 */
WEFT_API weft_status_t weft_connection_create(weft_comm_t *comm, int peer, unsigned transport,
                                              weft_connection_t **conn);
WEFT_API weft_status_t weft_connection_destroy(weft_connection_t *conn);

/* ------------------------------------------------------------------ */
/* Semaphores                                                          */
/* ------------------------------------------------------------------ */

typedef struct weft_semaphore weft_semaphore_t;

/**
 * Creates a semaphore between this rank and the connection's peer. Pairwise
 * and blocking: the peer calls it too, and both create their semaphores to
 * each other in the same order. The counters live in this rank's device
 * memory; the peer's inbound counter is mapped for memory semaphores.
 */
WEFT_API weft_status_t weft_semaphore_create(weft_connection_t *conn, weft_semaphore_t **sema);
WEFT_API weft_status_t weft_semaphore_destroy(weft_semaphore_t *sema);
/** Device handle (memory semaphore: the device signals the peer directly). */
WEFT_API weft_status_t weft_semaphore_device_handle(const weft_semaphore_t *sema, weft_sema_dev_t *out);
/** Host-side signal, through the connection (host<->host and host->device). */
WEFT_API weft_status_t weft_semaphore_signal_host(weft_semaphore_t *sema);
/** Host-side wait for the next signal; WEFT_ERR_TIMEOUT names the peer. */
WEFT_API weft_status_t weft_semaphore_wait_host(weft_semaphore_t *sema, int timeout_ms);

/* ------------------------------------------------------------------ */
/* Channels                                                            */
/* ------------------------------------------------------------------ */

typedef struct weft_memory_channel weft_memory_channel_t;

/**
 * A memory channel: the device reads and writes @p remote_dst (a peer's
 * registration imported here, mapped) and @p local_src directly.
 * @p local_packets (may be NULL) is where the peer's LL packets land.
 */
WEFT_API weft_status_t weft_memory_channel_create(weft_semaphore_t *sema, weft_mem_t *remote_dst,
                                                  weft_mem_t *local_src, weft_mem_t *local_packets,
                                                  weft_memory_channel_t **channel);
WEFT_API weft_status_t weft_memory_channel_device_handle(const weft_memory_channel_t *channel,
                                                         weft_memory_channel_dev_t *out);
WEFT_API weft_status_t weft_memory_channel_destroy(weft_memory_channel_t *channel);

/**
 * The proxy: a host thread that executes the triggers device code pushes
 * into its FIFO (port channels). One per communicator is typical.
 * @p fifo_size: a power of two >= 2 (0: 512).
 */
typedef struct weft_proxy weft_proxy_t;
WEFT_API weft_status_t weft_proxy_create(weft_comm_t *comm, size_t fifo_size, weft_proxy_t **proxy);
/** Makes a local registration or an imported peer registration addressable
 * by triggers; returns its id. Before or after weft_proxy_start (ids are
 * only ever appended); not concurrently with another add on this proxy. */
WEFT_API weft_status_t weft_proxy_add_memory(weft_proxy_t *proxy, weft_mem_t *mem, uint32_t *id);
/** Makes a semaphore (and its connection) addressable; returns the channel id. */
WEFT_API weft_status_t weft_proxy_add_semaphore(weft_proxy_t *proxy, weft_semaphore_t *sema, uint32_t *id);
WEFT_API weft_status_t weft_proxy_start(weft_proxy_t *proxy);
/** Stops the thread (after the triggers already pushed). Bounded time. */
WEFT_API weft_status_t weft_proxy_stop(weft_proxy_t *proxy);
WEFT_API weft_status_t weft_proxy_destroy(weft_proxy_t *proxy);
/**
 * Device handle of a port channel: transfers from local memory @p src_mem
 * to the peer memory @p dst_mem over channel @p channel's connection; the
 * channel's semaphore receives the peer proxy's signals. Over IPC, with
 * WEFT_PORT_INLINE_BYTES set when the proxy was created, puts from
 * @p src_mem of at most that many bytes (a multiple of 8 at 8-aligned
 * offsets) carry their bytes in the triggers (weft/device.h).
 */
WEFT_API weft_status_t weft_port_channel_device_handle(weft_proxy_t *proxy, uint32_t channel, uint32_t dst_mem,
                                                       uint32_t src_mem, weft_port_channel_dev_t *out);

/**
 * Switch channel: one buffer of @p bytes per rank, all bound to one
 * multicast object (NVLink SHARP on NVIDIA GPUs that have it; emulated by
 * the host backend), driven from kernels with include/weft/switch.h:
 * a load-reduce over every rank's buffer, a store into every rank's.
 * Collective over @p comm, whose ranks must all be on this host. Off unless
 * WEFT_NVLS_ENABLE=1 (and never when NCCL_NVLS_ENABLE=0): otherwise, or
 * without multicast, WEFT_ERR_UNSUPPORTED, and algorithms use memory
 * channels. @p bytes is rounded up to the object's granularity.
 */
typedef struct weft_switch_channel weft_switch_channel_t;
WEFT_API weft_status_t weft_switch_channel_create(weft_comm_t *comm, size_t bytes,
                                                  weft_switch_channel_t **channel);
WEFT_API weft_status_t weft_switch_channel_device_handle(const weft_switch_channel_t *channel,
                                                         weft_switch_channel_dev_t *out);
/** This rank's buffer (device memory) and its size. */
WEFT_API weft_status_t weft_switch_channel_buffer(const weft_switch_channel_t *channel, void **ptr, size_t *bytes);
/** Releases this rank's part; call once no rank uses the channel (after a barrier). */
WEFT_API weft_status_t weft_switch_channel_destroy(weft_switch_channel_t *channel);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_H */
