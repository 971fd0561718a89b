/* NULL and out-of-range arguments to every public call: an error, no side
 * effects, and the communicator stays usable. */
#include "tap/basic.h"
#include "weft.h"

#include <string.h>

#define INVAL(call, what) is_int(WEFT_ERR_INVALID_ARGUMENT, (call), what)

int main(void)
{
    weft_unique_id_t id;
    weft_comm_t *comm = NULL, *untouched = (weft_comm_t *)0x1;
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_mem_t *mem = NULL, *mem_out = (weft_mem_t *)0x1;
    weft_mem_handle_t handle;
    weft_status_t err;
    char text[WEFT_UNIQUE_ID_TEXT_BYTES];
    int x = 0, v = 123;
    void *p = NULL;
    const char *name;
    size_t sz;

    plan(77);
    weft_get_unique_id(&id);
    INVAL(weft_comm_init(NULL, 1, 0, NULL, &comm), "comm_init: NULL id");
    INVAL(weft_comm_init(&id, 0, 0, NULL, &comm), "comm_init: nranks 0");
    INVAL(weft_comm_init(&id, 1, 1, NULL, &comm), "comm_init: rank == nranks");
    INVAL(weft_comm_init(&id, 1, -1, NULL, &comm), "comm_init: rank -1");
    INVAL(weft_comm_init(&id, 1, 0, NULL, NULL), "comm_init: NULL output");
    cfg.size = 3;
    INVAL(weft_comm_init(&id, 1, 0, &cfg, &untouched), "comm_init: config of unknown size");
    cfg = (weft_comm_config_t)WEFT_COMM_CONFIG_INIT;
    cfg.version = 99;
    INVAL(weft_comm_init(&id, 1, 0, &cfg, &untouched), "comm_init: config of unknown version");
    cfg = (weft_comm_config_t)WEFT_COMM_CONFIG_INIT;
    cfg.backend = "no-such-backend";
    INVAL(weft_comm_init(&id, 1, 0, &cfg, &untouched), "comm_init: unknown backend");
    cfg = (weft_comm_config_t)WEFT_COMM_CONFIG_INIT;
    cfg.device = WEFT_DEVICE_CURRENT - 1;
    INVAL(weft_comm_init(&id, 1, 0, &cfg, &untouched), "comm_init: device below WEFT_DEVICE_CURRENT");
    INVAL(weft_backend_device_count(NULL, &x), "backend_device_count: NULL backend");
    INVAL(weft_backend_device_count("host", NULL), "backend_device_count: NULL output");
    x = 7;
    is_int(WEFT_ERR_NOT_FOUND, weft_backend_device_count("no-such-backend", &x), "backend_device_count: unknown backend");
    ok(weft_backend_device_count("host", &x) == WEFT_OK && x == 1, "backend_device_count: the host backend has one");
    ok(untouched == (weft_comm_t *)0x1, "failed inits leave the output untouched");
    INVAL(weft_comm_init_from_env(NULL, NULL), "comm_init_from_env: NULL output");
    INVAL(weft_unique_id_parse(NULL, &id), "unique_id_parse: NULL text");
    INVAL(weft_unique_id_parse("00", NULL), "unique_id_parse: NULL output");
    INVAL(weft_unique_id_format(NULL, text, sizeof(text)), "unique_id_format: NULL id");
    INVAL(weft_unique_id_format(&id, NULL, sizeof(text)), "unique_id_format: NULL buffer");

    if (weft_comm_init(&id, 1, 0, NULL, &comm) != WEFT_OK)
        bail("a 1-rank communicator: %s", weft_get_last_error());
    INVAL(weft_comm_rank(NULL, &x), "comm_rank: NULL comm");
    INVAL(weft_comm_rank(comm, NULL), "comm_rank: NULL output");
    INVAL(weft_comm_size(NULL, &x), "comm_size: NULL comm");
    INVAL(weft_comm_local_rank(comm, NULL), "comm_local_rank: NULL output");
    INVAL(weft_comm_local_size(NULL, &x), "comm_local_size: NULL comm");
    INVAL(weft_comm_device(comm, NULL), "comm_device: NULL output");
    INVAL(weft_comm_backend(comm, NULL), "comm_backend: NULL output");
    INVAL(weft_comm_get_async_error(comm, NULL), "get_async_error: NULL output");
    INVAL(weft_comm_get_async_error(NULL, &err), "get_async_error: NULL comm");
    INVAL(weft_comm_abort(NULL), "comm_abort: NULL comm");
    INVAL(weft_comm_cancel(NULL), "comm_cancel: NULL comm");
    INVAL(weft_comm_cancel_device(NULL), "comm_cancel_device: NULL comm");
    INVAL(weft_comm_destroy(NULL), "comm_destroy: NULL comm");

    INVAL(weft_bootstrap_allgather(NULL, &x, sizeof(x)), "allgather: NULL comm");
    INVAL(weft_bootstrap_allgather(comm, NULL, 4), "allgather: NULL buffer");
    INVAL(weft_bootstrap_allgather(comm, &x, SIZE_MAX), "allgather: size beyond any message");
    INVAL(weft_bootstrap_broadcast(comm, &x, sizeof(x), 1), "broadcast: root out of range");
    INVAL(weft_bootstrap_broadcast(comm, &x, sizeof(x), -1), "broadcast: negative root");
    INVAL(weft_bootstrap_barrier(NULL), "barrier: NULL comm");
    INVAL(weft_bootstrap_send(comm, &x, sizeof(x), 1, 0), "send: peer out of range");
    INVAL(weft_bootstrap_send(comm, &x, sizeof(x), 0, WEFT_TAG_RESERVED | 1), "send: reserved tag");
    INVAL(weft_bootstrap_recv(comm, NULL, 4, 0, 0), "recv: NULL buffer");
    INVAL(weft_bootstrap_recv(comm, &x, sizeof(x), -1, 0), "recv: negative peer");

    INVAL(weft_mem_alloc(NULL, 64, &p), "mem_alloc: NULL comm");
    INVAL(weft_mem_alloc(comm, 0, &p), "mem_alloc: zero bytes");
    INVAL(weft_mem_alloc(comm, 64, NULL), "mem_alloc: NULL output");
    INVAL(weft_mem_free(comm, NULL), "mem_free: NULL pointer");
    INVAL(weft_mem_free(comm, &x), "mem_free: foreign pointer");
    INVAL(weft_mem_register(comm, &x, sizeof(x), 0, &mem_out), "mem_register: no transport");
    INVAL(weft_mem_register(comm, &x, sizeof(x), 1u << 9, &mem_out), "mem_register: unknown transport");
    INVAL(weft_mem_register(comm, (void *)(uintptr_t)-16, 64, WEFT_TRANSPORT_ETHERNET, &mem_out),
          "mem_register: range wraps around");
    ok(mem_out == (weft_mem_t *)0x1, "failed registrations leave the output untouched");
    INVAL(weft_mem_deregister(NULL), "mem_deregister: NULL");
    INVAL(weft_mem_serialize(NULL, &handle), "mem_serialize: NULL mem");
    INVAL(weft_mem_deserialize(comm, NULL, &mem), "mem_deserialize: NULL handle");
    INVAL(weft_mem_ptr(NULL, &p), "mem_ptr: NULL mem");
    INVAL(weft_mem_size(NULL, &sz), "mem_size: NULL mem");

    {
        weft_connection_t *conn = NULL;
        weft_semaphore_t *sema = NULL;
        weft_memory_channel_t *mc = NULL;
        weft_proxy_t *proxy = NULL;
        weft_stream_t *stream = NULL;
        weft_sema_dev_t sd;
        uint32_t idv;
        INVAL(weft_connection_create(comm, 1, WEFT_TRANSPORT_IPC, &conn), "connection_create: peer out of range");
        INVAL(weft_connection_create(comm, 0, 0, &conn), "connection_create: no transport");
        INVAL(weft_connection_create(NULL, 0, WEFT_TRANSPORT_IPC, &conn), "connection_create: NULL comm");
        INVAL(weft_semaphore_create(NULL, &sema), "semaphore_create: NULL connection");
        INVAL(weft_semaphore_device_handle(NULL, &sd), "semaphore_device_handle: NULL");
        INVAL(weft_semaphore_wait_host(NULL, 10), "semaphore_wait_host: NULL");
        INVAL(weft_memory_channel_create(NULL, NULL, NULL, NULL, &mc), "memory_channel_create: NULLs");
        INVAL(weft_proxy_create(comm, 3, &proxy), "proxy_create: FIFO size not a power of two");
        INVAL(weft_proxy_add_memory(NULL, NULL, &idv), "proxy_add_memory: NULL");
        INVAL(weft_port_channel_device_handle(NULL, 0, 0, 0, NULL), "port_channel_device_handle: NULL");
        INVAL(weft_stream_create(comm, NULL), "stream_create: NULL output");
        INVAL(weft_stream_wrap(NULL, NULL, &stream), "stream_wrap: NULL comm");
        INVAL(weft_stream_wrap(comm, NULL, NULL), "stream_wrap: NULL output");
        is_int(WEFT_ERR_UNSUPPORTED, weft_stream_wrap(comm, NULL, &stream),
               "stream_wrap: the host backend has no runtime streams");
        INVAL(weft_launch_builtin(NULL, "p2p_mc_pingpong", 1, 1, NULL, 0), "launch_builtin: NULL stream");
        INVAL(weft_switch_channel_create(comm, 0, NULL), "switch_channel_create: zero bytes");
        ok(conn == NULL && sema == NULL && mc == NULL && proxy == NULL && stream == NULL,
           "refused constructors return nothing");
    }
    /* after all that, the communicator still works */
    is_int(WEFT_OK, weft_bootstrap_allgather(comm, &v, sizeof(v)), "the communicator still works");
    weft_comm_get_async_error(comm, &err);
    is_int(WEFT_OK, err, "and records no async error");
    weft_comm_backend(comm, &name);
    is_string("host", name, "the default backend is host");
    weft_comm_destroy(comm);
    /* WEFT_DEVICE_CURRENT: the runtime's current device (the host backend's only one) */
    cfg = (weft_comm_config_t)WEFT_COMM_CONFIG_INIT;
    cfg.device = WEFT_DEVICE_CURRENT;
    x = -1;
    comm = NULL;
    err = weft_get_unique_id(&id);
    if (err == WEFT_OK)
        err = weft_comm_init(&id, 1, 0, &cfg, &comm);
    if (err == WEFT_OK)
        err = weft_comm_device(comm, &x);
    ok(err == WEFT_OK && x == 0, "WEFT_DEVICE_CURRENT: device %d (%s)", x, weft_status_string(err));
    if (comm)
        weft_comm_destroy(comm);
    return test_done();
}
