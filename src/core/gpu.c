/* Backend registry and the typed "unsupported" stubs. */
#include "config.h"
#include "backend.h"
#include "log.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

static weft_status_t stub_device_count(int *count) { (void)count; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_init(int device, weft_gpu_ctx_t **ctx) { (void)device; (void)ctx; return WEFT_ERR_UNSUPPORTED; }
static void stub_fini(weft_gpu_ctx_t *ctx) { (void)ctx; }
static uint64_t stub_caps(weft_gpu_ctx_t *ctx) { (void)ctx; return 0; }
static weft_status_t stub_props(weft_gpu_ctx_t *c, weft_gpu_props_t *p) { (void)c; (void)p; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_mem_alloc(weft_gpu_ctx_t *c, size_t b, unsigned f, weft_gpu_alloc_t *o) { (void)c; (void)b; (void)f; (void)o; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_mem_free(weft_gpu_ctx_t *c, weft_gpu_alloc_t *a) { (void)c; (void)a; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_host_alloc_mapped(weft_gpu_ctx_t *c, size_t b, void **h, void **d) { (void)c; (void)b; (void)h; (void)d; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_host_free(weft_gpu_ctx_t *c, void *h) { (void)c; (void)h; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_ipc_export(weft_gpu_ctx_t *c, const weft_gpu_alloc_t *a, weft_gpu_ipc_export_t *o) { (void)c; (void)a; (void)o; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_ipc_import(weft_gpu_ctx_t *c, const uint8_t *b, uint32_t l, int fd, size_t s, void **p, void **h)
{
    (void)c; (void)b; (void)l; (void)s; (void)p; (void)h;
    if (fd >= 0)
        close(fd);
    return WEFT_ERR_UNSUPPORTED;
}
static weft_status_t stub_ipc_close(weft_gpu_ctx_t *c, void *p, void *h) { (void)c; (void)p; (void)h; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_mem_query(weft_gpu_ctx_t *c, const void *p, weft_gpu_alloc_t *a, uint64_t *id) { (void)c; (void)p; (void)a; (void)id; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_mc_create(weft_gpu_ctx_t *c, size_t b, int n, weft_gpu_ipc_export_t *o, void **m) { (void)c; (void)b; (void)n; (void)o; (void)m; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_mc_import(weft_gpu_ctx_t *c, const uint8_t *b, uint32_t l, int fd, void **m)
{
    (void)c; (void)b; (void)l; (void)m;
    if (fd >= 0)
        close(fd); /* consumed, as the table promises */
    return WEFT_ERR_UNSUPPORTED;
}
static weft_status_t stub_mc_add_device(weft_gpu_ctx_t *c, void *m) { (void)c; (void)m; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_mc_bind(weft_gpu_ctx_t *c, void *m, int i, weft_gpu_alloc_t *l, void **p) { (void)c; (void)m; (void)i; (void)l; (void)p; return WEFT_ERR_UNSUPPORTED; }
static void stub_mc_release(weft_gpu_ctx_t *c, void *m, weft_gpu_alloc_t *l, void *p) { (void)c; (void)m; (void)l; (void)p; }
static weft_status_t stub_dmabuf_export(weft_gpu_ctx_t *c, void *p, size_t n, int *fd, uint64_t *off) { (void)c; (void)p; (void)n; (void)fd; (void)off; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_current_device(int *d) { (void)d; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_stream_create(weft_gpu_ctx_t *c, weft_gpu_stream_t **s) { (void)c; (void)s; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_stream_destroy(weft_gpu_ctx_t *c, weft_gpu_stream_t *s) { (void)c; (void)s; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_stream_sync(weft_gpu_ctx_t *c, weft_gpu_stream_t *s) { (void)c; (void)s; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_stream_query(weft_gpu_ctx_t *c, weft_gpu_stream_t *s) { (void)c; (void)s; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_stream_capturing(weft_gpu_ctx_t *c, weft_gpu_stream_t *s, int *cap) { (void)c; (void)s; *cap = 0; return WEFT_OK; }
static weft_status_t stub_capture_on_release(weft_gpu_ctx_t *c, weft_gpu_stream_t *s, void (*r)(void *), void *a) { (void)c; (void)s; (void)r; (void)a; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_event_create(weft_gpu_ctx_t *c, weft_gpu_event_t **e) { (void)c; (void)e; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_event_destroy(weft_gpu_ctx_t *c, weft_gpu_event_t *e) { (void)c; (void)e; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_event_record(weft_gpu_ctx_t *c, weft_gpu_event_t *e, weft_gpu_stream_t *s) { (void)c; (void)e; (void)s; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_event_query(weft_gpu_ctx_t *c, weft_gpu_event_t *e) { (void)c; (void)e; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_stream_write_u64(weft_gpu_ctx_t *c, void *d, uint64_t v, weft_gpu_stream_t *s) { (void)c; (void)d; (void)v; (void)s; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_stream_write_u64_batch(weft_gpu_ctx_t *c, unsigned n, void *const *d, const uint64_t *v, weft_gpu_stream_t *s) { (void)c; (void)n; (void)d; (void)v; (void)s; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_memcpy_async(weft_gpu_ctx_t *c, void *d, const void *s, size_t b, weft_gpu_stream_t *st) { (void)c; (void)d; (void)s; (void)b; (void)st; return WEFT_ERR_UNSUPPORTED; }
static weft_status_t stub_device_failed(weft_gpu_ctx_t *c, char *w, size_t n) { (void)c; (void)w; (void)n; return WEFT_OK; }
static void stub_own_thread(weft_gpu_ctx_t *c) { (void)c; }
static weft_status_t stub_launch(weft_gpu_ctx_t *c, const weft_gpu_launch_t *l, weft_gpu_stream_t *s) { (void)c; (void)l; (void)s; return WEFT_ERR_UNSUPPORTED; }

void weft_gpu_ops_complete(weft_gpu_ops_t *dst, const weft_gpu_ops_t *src)
{
#define FILL(f) dst->f = src->f ? src->f : stub_##f
    dst->abi_version = WEFT_GPU_ABI_VERSION;
    dst->size = sizeof(*dst);
    dst->name = src->name;
    FILL(device_count); FILL(current_device); FILL(init); FILL(fini); FILL(caps); FILL(props);
    FILL(mem_alloc); FILL(mem_free); FILL(host_alloc_mapped); FILL(host_free);
    FILL(ipc_export); FILL(ipc_import); FILL(ipc_close); FILL(mem_query);
    FILL(mc_create); FILL(mc_import); FILL(mc_add_device); FILL(mc_bind); FILL(mc_release); FILL(dmabuf_export);
    FILL(stream_create); FILL(stream_destroy); FILL(stream_sync); FILL(stream_query); FILL(stream_capturing); FILL(capture_on_release);
    FILL(event_create); FILL(event_destroy); FILL(event_record); FILL(event_query);
    FILL(memcpy_async); FILL(launch); FILL(stream_write_u64); FILL(stream_write_u64_batch);
    FILL(device_failed); FILL(own_thread);
#undef FILL
}

static const weft_gpu_ops_t *const builtin[] = {
    &weft_host_gpu_ops,
#ifdef WEFT_HAVE_CUDA
    &weft_cuda_gpu_ops,
#endif
#ifdef WEFT_HAVE_HIP
    &weft_hip_gpu_ops,
#endif
};
#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]))

static weft_gpu_ops_t complete[NBUILTIN];
static const char *names[NBUILTIN + 1];
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

static void registry_init(void)
{
    for (size_t i = 0; i < NBUILTIN; i++) {
        /* A table built for another ABI, or a smaller one, is skipped. */
        if (builtin[i]->abi_version != WEFT_GPU_ABI_VERSION || builtin[i]->size != sizeof(weft_gpu_ops_t)) {
            weft_warn(WEFT_SUB_GPU, "backend %s has ABI %u, expected %u; ignored", builtin[i]->name,
                      builtin[i]->abi_version, WEFT_GPU_ABI_VERSION);
            continue;
        }
        weft_gpu_ops_complete(&complete[i], builtin[i]);
        names[i] = builtin[i]->name;
    }
}

static int local_ranks; /* atomic: only grows */

void weft_gpu_note_local_ranks(int n)
{
    int seen = __atomic_load_n(&local_ranks, __ATOMIC_RELAXED);
    while (n > seen && !__atomic_compare_exchange_n(&local_ranks, &seen, n, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

int weft_gpu_local_ranks(void)
{
    return __atomic_load_n(&local_ranks, __ATOMIC_RELAXED);
}

const weft_gpu_ops_t *weft_gpu_find(const char *name)
{
    pthread_once(&registry_once, registry_init);
    for (size_t i = 0; i < NBUILTIN; i++)
        if (names[i] && strcmp(names[i], name) == 0)
            return &complete[i];
    return NULL;
}

const char *const *weft_gpu_names(void)
{
    pthread_once(&registry_once, registry_init);
    return names;
}
