/*
 * A communicator's life: init (from a unique id or the launcher's
 * environment), destroy and abort. This file sits above the rest of the
 * core: it assembles a communicator from the bootstrap, the backend, IPC,
 * the networks and the registration table (mem.c), and takes them apart
 * again; the communicator's own services (comm.c) never call up here or
 * into memory.
 */
#include "config.h"
#include "fault.h"
#include "comm.h"
#include "mem.h"
#include "stream.h"
#include "handles.h"
#include "log.h"
#include "param.h"
#include "hostid.h"
#include "util.h"
#include "trust.h"
#include "watch.h"
#include "weft/device.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Every integer parameter set in the environment parses and lies in its
 * range (param_list.h): checked at every communicator's start. */
static weft_status_t params_check(void)
{
    const weft_param_info_t *p;
    for (size_t i = 0; (p = weft_param_at(i)) != NULL; i++) {
        if (p->type != WEFT_PARAM_INT || p->valid)
            continue;
        weft_error(WEFT_SUB_INIT, "%s=%s is not valid: expected %s %ld .. %ld%s", p->name, p->env,
                   p->size ? "a size" : "an integer", p->min, p->max, p->size ? " (K, M, G suffixes allowed)" : "");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    return weft_fault_init();
}

static int config_int(const weft_comm_config_t *cfg, size_t offset, int fallback)
{
    /* Fields beyond the caller's struct size keep their defaults. */
    int v;
    if (!cfg || cfg->size < offset + sizeof(int))
        return fallback;
    memcpy(&v, (const char *)cfg + offset, sizeof(int));
    return v;
}

static weft_status_t check_config(const weft_comm_config_t *cfg)
{
    if (!cfg)
        return WEFT_OK;
    if (cfg->size < offsetof(weft_comm_config_t, backend) || cfg->version < 1 ||
        cfg->version > WEFT_COMM_CONFIG_VERSION) {
        weft_error_note("comm config: size %zu / version %u not understood (use WEFT_COMM_CONFIG_INIT)", cfg->size,
                        cfg->version);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (config_int(cfg, offsetof(weft_comm_config_t, device), -1) < WEFT_DEVICE_CURRENT ||
        config_int(cfg, offsetof(weft_comm_config_t, init_timeout_ms), 0) < 0 ||
        config_int(cfg, offsetof(weft_comm_config_t, op_timeout_ms), 0) < 0 ||
        config_int(cfg, offsetof(weft_comm_config_t, device_timeout_ms), 0) < 0) {
        weft_error_note("comm config: negative device or timeout");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    return WEFT_OK;
}

static const char *config_backend(const weft_comm_config_t *cfg)
{
    if (cfg && cfg->size >= offsetof(weft_comm_config_t, backend) + sizeof(char *) && cfg->backend)
        return cfg->backend;
    return weft_param_str(WEFT_P_BACKEND);
}


/* Live communicators: destroying one twice is refused (weft.h). */
static weft_handle_set_t live_comms = WEFT_HANDLE_SET_INIT;

static void comm_free(weft_comm_t *comm)
{
    weft_watch_stop(comm->watch);
    for (int i = 0; i < WEFT_NET_COUNT; i++) {
        weft_comm_net_stop(comm->net[i]);
        comm->net[i] = NULL;
    }
    weft_ipc_destroy(comm->ipc);
    weft_reg_table_free(comm);
    if (comm->ctl && comm->gctx)
        comm->gpu->host_free(comm->gctx, comm->ctl);
    free(comm->pair_seq);
    free(comm->same_device);
    if (comm->hold) {
        /* streams that outlive the communicator keep the context */
        pthread_mutex_lock(&comm->hold->lock);
        for (weft_stream_t *st = comm->hold->streams; st; st = st->next)
            st->comm = NULL;
        pthread_mutex_unlock(&comm->hold->lock);
        weft_gpu_hold_put(comm->hold);
    } else if (comm->gctx) {
        comm->gpu->fini(comm->gctx);
    }
    weft_bootstrap_destroy(comm->boot);
    if (comm->wake_fd >= 0)
        close(comm->wake_fd);
    pthread_mutex_destroy(&comm->lock);
    pthread_mutex_destroy(&comm->proxy_lock);
    memset(&comm->auth, 0, sizeof(comm->auth));
    weft_handle_bury(&live_comms, comm);
}

/* The part of init shared by weft_comm_init and weft_comm_init_from_env. */
/*
 * Which ranks run on this rank's very device: the same host and the same
 * PCI address (ranks sharing one GPU). A semaphore signal to such a rank
 * is a device-scope release, with no system-wide fence
 * (WEFT_SAME_DEVICE_SCOPE=0: system scope always). A backend with no PCI
 * address (the host backend) shares nothing this way. An allgather: every
 * rank passes it only once all have arrived.
 */
static weft_status_t find_same_device(weft_comm_t *comm)
{
    typedef struct {
        char pci[32];
    } dev_key_t;
    weft_gpu_props_t props;
    dev_key_t *keys = calloc((size_t)comm->nranks, sizeof(*keys));
    weft_status_t status;
    comm->same_device = calloc((size_t)comm->nranks, 1);
    if (!keys || !comm->same_device) {
        free(keys);
        return WEFT_ERR_NO_MEMORY;
    }
    memset(&props, 0, sizeof(props));
    if (comm->gpu->props(comm->gctx, &props) == WEFT_OK)
        memcpy(keys[comm->rank].pci, props.pci_bus_id, sizeof(keys[0].pci) - 1);
    if ((status = weft_bootstrap_allgather_raw(comm->boot, keys, sizeof(*keys))) == WEFT_OK) {
        for (int r = 0; r < comm->nranks; r++)
            comm->same_device[r] = weft_param_int(WEFT_P_SAME_DEVICE_SCOPE) && keys[comm->rank].pci[0] &&
                                   memcmp(weft_bootstrap_hostid(comm->boot, r), comm->hostid, WEFT_HOSTID_BYTES) == 0 &&
                                   strncmp(keys[r].pci, keys[comm->rank].pci, sizeof(keys[0].pci)) == 0;
    }
    free(keys);
    return status;
}

static weft_status_t comm_create(const weft_uid_info_t *uid, int nranks, int rank, const weft_comm_config_t *cfg,
                                 weft_comm_t **out)
{
    weft_comm_t *comm;
    weft_bootstrap_args_t args;
    weft_status_t status;
    const char *backend = config_backend(cfg);
    const weft_gpu_ops_t *gpu = weft_gpu_find(backend);
    int ndev = 0, device;

    if (!gpu) {
        weft_error(WEFT_SUB_INIT, "unknown or unbuilt GPU backend '%s'", backend);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    comm = calloc(1, sizeof(*comm));
    if (!comm)
        return WEFT_ERR_NO_MEMORY;
    pthread_mutex_init(&comm->lock, NULL);
    pthread_mutex_init(&comm->proxy_lock, NULL);
    comm->rank = rank;
    comm->nranks = nranks;
    comm->gpu = gpu;
    weft_auth_init(&comm->auth, uid->secret);
    comm->op_timeout_ms = config_int(cfg, offsetof(weft_comm_config_t, op_timeout_ms), 0);
    if (comm->op_timeout_ms == 0)
        comm->op_timeout_ms = (int)weft_param_int(WEFT_P_BOOTSTRAP_TIMEOUT_MS);
    comm->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (comm->wake_fd < 0) {
        weft_error(WEFT_SUB_INIT, "eventfd failed: %s", strerror(errno));
        status = WEFT_ERR_SYSTEM;
        goto err;
    }
    weft_host_identity(comm->hostid);
    weft_log_set_rank(rank);

    memset(&args, 0, sizeof(args));
    args.rank = rank;
    args.nranks = nranks;
    args.root = &uid->root;
    args.auth = &comm->auth;
    memcpy(args.hostid, comm->hostid, WEFT_HOSTID_BYTES);
    args.init_timeout_ms = config_int(cfg, offsetof(weft_comm_config_t, init_timeout_ms), 0);
    if (args.init_timeout_ms == 0)
        args.init_timeout_ms = (int)weft_param_int(WEFT_P_INIT_TIMEOUT_MS);
    args.op_timeout_ms = comm->op_timeout_ms;
    args.wake_fd = comm->wake_fd;
    if ((status = weft_bootstrap_create(&args, &comm->boot)) != WEFT_OK)
        goto err;

    for (int r = 0; r < nranks; r++) {
        if (memcmp(weft_bootstrap_hostid(comm->boot, r), comm->hostid, WEFT_HOSTID_BYTES) != 0)
            continue;
        if (r < rank)
            comm->local_rank++;
        comm->local_size++;
    }

    if ((status = gpu->device_count(&ndev)) != WEFT_OK || ndev < 1) {
        weft_error(WEFT_SUB_INIT, "rank %d: backend %s has no usable device", rank, gpu->name);
        status = WEFT_ERR_UNSUPPORTED;
        goto err;
    }
    device = config_int(cfg, offsetof(weft_comm_config_t, device), -1);
    if (device == WEFT_DEVICE_CURRENT && (status = gpu->current_device(&device)) != WEFT_OK) {
        weft_error(WEFT_SUB_INIT, "rank %d: backend %s has no current device", rank, gpu->name);
        goto err;
    }
    if (device < 0)
        device = comm->local_rank % ndev;
    if (device >= ndev) {
        weft_error(WEFT_SUB_INIT, "rank %d: device %d requested but backend %s has %d", rank, device, gpu->name,
                   ndev);
        status = WEFT_ERR_INVALID_ARGUMENT;
        goto err;
    }
    comm->device = device;
    weft_gpu_note_local_ranks(comm->local_size);
    if ((status = gpu->init(device, &comm->gctx)) != WEFT_OK) {
        weft_error(WEFT_SUB_INIT, "rank %d: backend %s failed to initialise device %d: %s", rank, gpu->name,
                   device, weft_status_string(status));
        comm->gctx = NULL;
        goto err;
    }
    if (!(comm->hold = calloc(1, sizeof(*comm->hold)))) {
        status = WEFT_ERR_NO_MEMORY;
        goto err;
    }
    pthread_mutex_init(&comm->hold->lock, NULL);
    comm->hold->gpu = gpu;
    comm->hold->gctx = comm->gctx;
    comm->hold->refs = 1;
    comm->caps = gpu->caps(comm->gctx);
    /* The switch channel (multicast) is off unless asked for, and off
     * whenever NCCL's is off: misused, NVLink multicast can take a shared
     * machine's GPUs out of service. */
    if (!weft_switch_enabled())
        comm->caps &= ~WEFT_CAP_MULTICAST;
    if ((status = gpu->host_alloc_mapped(comm->gctx, sizeof(weft_dev_ctl_t), (void **)&comm->ctl,
                                         (void **)&comm->ctl_dev)) != WEFT_OK) {
        weft_error(WEFT_SUB_INIT, "rank %d: cannot allocate the device control block", rank);
        comm->ctl = NULL;
        goto err;
    }
    memset(comm->ctl, 0, sizeof(*comm->ctl));
    comm->ctl->rank = rank;
    {
        long ms = config_int(cfg, offsetof(weft_comm_config_t, device_timeout_ms), 0);
        if (ms <= 0)
            ms = weft_param_int(WEFT_P_DEVICE_TIMEOUT_MS);
        comm->ctl->timeout_ns = (uint64_t)(ms > 0 ? ms : 60000) * 1000000ull;
    }
    comm->pair_seq = calloc((size_t)nranks, sizeof(*comm->pair_seq));
    if (!comm->pair_seq) {
        status = WEFT_ERR_NO_MEMORY;
        goto err;
    }
    /* the fd service (memory shared as fds) and the worker that maps the
     * buffers peers register (weft_reg_share) */
    if ((comm->caps & WEFT_CAP_IPC) && comm->local_size > 1 &&
        (status = weft_ipc_create(&comm->auth, rank, &comm->ipc)) != WEFT_OK)
        goto err;
    weft_ipc_set_handler(comm->ipc, weft_reg_serve, comm);
    if ((status = weft_comm_net_choose(comm->boot, rank, nranks, comm->local_size == nranks,
                                       &comm->net_transport)) != WEFT_OK)
        goto err;
    /* Everyone's services are up before anyone uses them (the allgather
     * is that barrier too). */
    if ((status = find_same_device(comm)) != WEFT_OK)
        goto err;
    if ((status = weft_watch_start(comm, &comm->watch)) != WEFT_OK)
        goto err;
    if (!weft_handle_add(&live_comms, comm)) {
        status = WEFT_ERR_NO_MEMORY;
        goto err;
    }
    /* The watch needs the links the first barrier opened, and can still
     * fail: a second barrier makes a rank that failed after the first one
     * fail every rank's init, instead of leaving them a dead peer. */
    if ((status = weft_bootstrap_barrier_raw(comm->boot)) != WEFT_OK) {
        weft_handle_take(&live_comms, comm);
        goto err;
    }
    weft_info(WEFT_SUB_INIT, "rank %d of %d ready (local %d of %d, backend %s, device %d)", rank, nranks,
              comm->local_rank, comm->local_size, gpu->name, device);
    *out = comm;
    return WEFT_OK;
err:
    comm_free(comm);
    return status;
}

weft_status_t weft_comm_init(const weft_unique_id_t *id, int nranks, int rank, const weft_comm_config_t *config,
                             weft_comm_t **comm)
{
    weft_uid_info_t uid;
    weft_status_t status;

    if (!id || !comm || nranks < 1 || nranks > WEFT_MAX_RANKS || rank < 0 || rank >= nranks) {
        weft_error_note("weft_comm_init: invalid arguments (id %p, comm %p, rank %d of %d)", (const void *)id,
                        (void *)comm, rank, nranks);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if ((status = check_config(config)) != WEFT_OK || (status = params_check()) != WEFT_OK)
        return status;
    /* A malformed id is refused here, before any network I/O. */
    if ((status = weft_uid_decode(id, &uid)) != WEFT_OK)
        return status;
    status = comm_create(&uid, nranks, rank, config, comm);
    /* A job that did not come together in time is over: the id's root, if
     * this process runs it, goes too (other failures leave the id usable). */
    if (status == WEFT_ERR_TIMEOUT || status == WEFT_ERR_ABORTED)
        weft_root_stop(&uid.root, uid.secret);
    memset(&uid, 0, sizeof(uid));
    return status;
}

/* Rank and size from the launcher's environment, first match wins. */
static int env_rank_size(int *rank, int *size)
{
    static const weft_param_id_t pairs[][2] = {
        {WEFT_P_RANK_WEFT, WEFT_P_NRANKS_WEFT},   {WEFT_P_RANK_TORCH, WEFT_P_NRANKS_TORCH},
        {WEFT_P_RANK_OMPI, WEFT_P_NRANKS_OMPI},   {WEFT_P_RANK_PMI, WEFT_P_NRANKS_PMI},
        {WEFT_P_RANK_PMIX, WEFT_P_NRANKS_PMIX},   {WEFT_P_RANK_SLURM, WEFT_P_NRANKS_SLURM},
    };
    for (size_t i = 0; i < WEFT_ARRAY_SIZE(pairs); i++) {
        const char *r = weft_param_env_now(pairs[i][0]), *s = weft_param_env_now(pairs[i][1]);
        long rv, sv;
        if (!r || !s)
            continue;
        if (!weft_parse_long(s, 1, WEFT_MAX_RANKS, &sv) || !weft_parse_long(r, 0, sv - 1, &rv)) {
            weft_error_note("launcher environment: %s=%s / %s=%s is not a valid rank and size",
                            weft_param_info(pairs[i][0])->name, r, weft_param_info(pairs[i][1])->name, s);
            return -1;
        }
        *rank = (int)rv;
        *size = (int)sv;
        return 1;
    }
    weft_error_note("no rank/size in the environment (WEFT_RANK/WEFT_NRANKS, RANK/WORLD_SIZE, "
                    "OMPI_COMM_WORLD_*, PMI_*, SLURM_PROCID/SLURM_NTASKS)");
    return 0;
}

weft_status_t weft_comm_init_from_env(const weft_comm_config_t *config, weft_comm_t **comm)
{
    /* Launch settings are read now, not cached: a process may create
     * several jobs, and launchers set them just before the call. */
    const char *root_text = weft_param_env_now(WEFT_P_ROOT);
    const char *id_text = weft_param_env_now(WEFT_P_UNIQUE_ID);
    const char *trust = weft_param_env_now(WEFT_P_TRUST_LOCAL);
    weft_uid_info_t uid;
    weft_status_t status;
    int rank, nranks, timeout;

    if (!comm)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = check_config(config)) != WEFT_OK || (status = params_check()) != WEFT_OK)
        return status;
    if (env_rank_size(&rank, &nranks) != 1)
        return WEFT_ERR_INVALID_ARGUMENT;
    memset(&uid, 0, sizeof(uid));
    if (id_text && *id_text) {
        weft_unique_id_t id;
        if ((status = weft_unique_id_parse(id_text, &id)) != WEFT_OK)
            return status;
        weft_uid_decode(&id, &uid);
    }
    if (root_text && *root_text) {
        if ((status = weft_addr_parse(root_text, &uid.root)) != WEFT_OK)
            return status;
    } else if (!(id_text && *id_text)) {
        weft_error_note("launcher start needs WEFT_ROOT=host:port or WEFT_UNIQUE_ID");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    timeout = config_int(config, offsetof(weft_comm_config_t, init_timeout_ms), 0);
    if (!timeout)
        timeout = (int)weft_param_int(WEFT_P_INIT_TIMEOUT_MS);
    if (!(id_text && *id_text)) {
        /* No shared secret: allowed only on one trusted host, by opt-in;
         * the secret is in a file only this user can read (trust.h). */
        if (!trust || strcmp(trust, "1") != 0 || !weft_addr_is_loopback(&uid.root)) {
            weft_error_note("no secret: set WEFT_UNIQUE_ID, or WEFT_TRUST_LOCAL=1 with a loopback WEFT_ROOT");
            return WEFT_ERR_INVALID_ARGUMENT;
        }
        if ((status = weft_trust_local_secret(&uid.root, rank == 0, timeout, uid.secret)) != WEFT_OK)
            return status;
    }
    if (rank == 0) {
        /* Rank 0 runs the root at the agreed address. */
        weft_auth_t auth;
        weft_auth_init(&auth, uid.secret);
        status = weft_root_start(&uid.root, &auth, nranks, timeout, NULL);
        memset(&auth, 0, sizeof(auth));
        if (status != WEFT_OK) {
            if (!(id_text && *id_text))
                weft_trust_local_forget(&uid.root);
            return status;
        }
    }
    status = comm_create(&uid, nranks, rank, config, comm);
    if (rank == 0 && !(id_text && *id_text))
        weft_trust_local_forget(&uid.root); /* every rank has joined, or init failed */
    if (rank == 0 && status != WEFT_OK)
        weft_root_stop(&uid.root, uid.secret); /* no root thread outlives a failed init */
    memset(&uid, 0, sizeof(uid));
    return status;
}

/*
 * Waits until no stream of @p comm has queued work left, polling up to
 * @p ms milliseconds. Returns how many streams were still busy. A stream
 * that cannot be queried (an error of the runtime, a capture under way)
 * counts as idle: nothing of it is known to run.
 */
static int streams_drain(weft_comm_t *comm, int ms)
{
    uint64_t deadline = weft_deadline_ms(ms);
    int busy;
    for (;;) {
        busy = 0;
        pthread_mutex_lock(&comm->hold->lock);
        for (weft_stream_t *st = comm->hold->streams; st; st = st->next)
            if (st->comm == comm && comm->gpu->stream_query(comm->gctx, st->s) == WEFT_INPROGRESS)
                busy++;
        pthread_mutex_unlock(&comm->hold->lock);
        if (busy == 0 || weft_ms_left(deadline) == 0)
            return busy;
        usleep(1000);
    }
}

/* Raises the host and device abort flags and wakes bootstrap polls;
 * with @p hangup, also hangs up the bootstrap links (the peers learn). */
static void raise_abort(weft_comm_t *comm, int hangup)
{
    uint64_t one = 1;
    __atomic_store_n(&comm->aborted, 1, __ATOMIC_RELEASE);
    weft_comm_set_async_error(comm, WEFT_ERR_ABORTED);
    /* Device waits and the proxy poll this word. */
    if (comm->ctl)
        __atomic_store_n(&comm->ctl->abort, 1u, __ATOMIC_RELEASE);
    /* Wakes any poll of the bootstrap at once. */
    if (write(comm->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        weft_warn(WEFT_SUB_INIT, "abort: cannot signal the wake fd: %s", strerror(errno));
    /* Peers waiting for this rank learn it is gone within their grace
     * period (watch.h), not at their device timeout. After the flags
     * above: this rank's own watch then sees the hang-up as its own. */
    if (hangup)
        weft_watch_hangup(comm->watch);
}

void weft_comm_fail_device(weft_comm_t *comm, const char *why)
{
    weft_error(WEFT_SUB_GPU, "rank %d: the device failed (%s): every later call on it fails, so the communicator "
               "ends its work and hangs up its links, and its peers stop waiting for it",
               comm->rank, why);
    /* before raise_abort's WEFT_ERR_ABORTED: the first recorded wins */
    weft_comm_set_async_error(comm, WEFT_ERR_BACKEND);
    raise_abort(comm, 1);
}

/* weft_handle_with_live's callback: the abort of a communicator that a
 * destroy on another thread cannot free meanwhile (it takes the handle
 * first, under the same lock). */
static void abort_live(void *h, void *hangup)
{
    raise_abort(h, hangup != NULL);
}

weft_status_t weft_comm_destroy(weft_comm_t *comm)
{
    int busy;
    if (!comm)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!weft_handle_take(&live_comms, comm)) {
        weft_error_note("weft_comm_destroy: %p is not a live communicator (destroyed already?)", (void *)comm);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    /*
     * Kernels and copies queued on this communicator's streams use its
     * memory (scratch, semaphores, the control block, the registration
     * table) and its proxies: nothing is freed while they run. Work that
     * finishes within the communicator's timeout finishes; work that does
     * not (a peer that never arrives) is aborted, and if even that does
     * not end it, everything is left allocated rather than freed under it.
     */
    if ((busy = streams_drain(comm, comm->op_timeout_ms)) > 0) {
        weft_error(WEFT_SUB_INIT, "rank %d: weft_comm_destroy: work on %d stream%s still running after %d ms; "
                   "aborting it", comm->rank, busy, busy > 1 ? "s" : "", comm->op_timeout_ms);
        raise_abort(comm, 1);
        if ((busy = streams_drain(comm, comm->op_timeout_ms)) > 0) {
            weft_error(WEFT_SUB_INIT, "rank %d: weft_comm_destroy: work on %d stream%s still running %d ms after "
                       "the abort; the communicator's memory is left allocated, not freed under it",
                       comm->rank, busy, busy > 1 ? "s" : "", comm->op_timeout_ms);
            return WEFT_ERR_TIMEOUT;
        }
    }
    /* what higher floors hung on the communicator goes first */
    while (comm->nrelease > 0)
        comm->release[--comm->nrelease](comm);
    weft_mem_free_all(comm);
    comm_free(comm);
    return WEFT_OK;
}

weft_status_t weft_comm_abort(weft_comm_t *comm)
{
    if (!comm || !weft_handle_with_live(&live_comms, comm, abort_live, comm))
        return WEFT_ERR_INVALID_ARGUMENT;
    return WEFT_OK;
}

/* weft_handle_with_live's callback: the device's abort flag alone. */
static void cancel_device_live(void *h, void *unused)
{
    weft_comm_t *comm = h;
    (void)unused;
    /* Device waits and the proxies poll this word; the host's flag and
     * the bootstrap links stay as they are (weft_comm_cancel_device). */
    if (comm->ctl)
        __atomic_store_n(&comm->ctl->abort, 1u, __ATOMIC_RELEASE);
}

weft_status_t weft_comm_cancel_device(weft_comm_t *comm)
{
    if (!comm || !weft_handle_with_live(&live_comms, comm, cancel_device_live, NULL))
        return WEFT_ERR_INVALID_ARGUMENT;
    return WEFT_OK;
}

weft_status_t weft_comm_cancel(weft_comm_t *comm)
{
    if (!comm || !weft_handle_with_live(&live_comms, comm, abort_live, NULL))
        return WEFT_ERR_INVALID_ARGUMENT;
    return WEFT_OK;
}
