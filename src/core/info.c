/*
 * What a tool shows of this build and this machine (weft.h: weft_build_info,
 * weft_backend_device_info, weft_bootstrap_local_address,
 * weft_topology_describe), so that weft-info needs only the public API.
 */
#include "config.h"
#include "backend.h"
#include "log.h"
#include "net.h"
#include "sock.h"
#include "topo.h"
#include "weft.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char gpu_backends[128];
static pthread_once_t build_once = PTHREAD_ONCE_INIT;

static void build_load(void)
{
    const char *const *names = weft_gpu_names();
    size_t used = 0;
    for (int i = 0; names[i] && used < sizeof(gpu_backends); i++) {
        int n = snprintf(gpu_backends + used, sizeof(gpu_backends) - used, "%s%s", i ? " " : "", names[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

weft_status_t weft_build_info(weft_build_info_t *out)
{
    if (!out)
        return WEFT_ERR_INVALID_ARGUMENT;
    pthread_once(&build_once, build_load);
    *out = (weft_build_info_t){.version = PACKAGE_VERSION,
                               .gpu_backends = gpu_backends,
                               .networks = weft_net_built(),
#ifdef WEFT_HAVE_HWLOC
                               .hwloc = 1
#else
                               .hwloc = 0
#endif
    };
    return WEFT_OK;
}

weft_status_t weft_backend_device_info(const char *backend, int device, weft_device_info_t *out)
{
    const weft_gpu_ops_t *ops;
    weft_gpu_ctx_t *ctx;
    weft_gpu_props_t props;
    weft_status_t status;
    int n = 0;
    if (!backend || !out || device < 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(ops = weft_gpu_find(backend))) {
        weft_error_note("no GPU backend \"%s\" in this build", backend);
        return WEFT_ERR_NOT_FOUND;
    }
    if ((status = ops->device_count(&n)) != WEFT_OK)
        return status;
    if (device >= n) {
        weft_error_note("%s backend: no device %d (%d here)", backend, device, n);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if ((status = ops->init(device, &ctx)) != WEFT_OK)
        return status;
    status = ops->props(ctx, &props);
    ops->fini(ctx);
    if (status != WEFT_OK)
        return status;
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", props.name);
    out->total_mem = props.total_mem;
    snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "%s", props.pci_bus_id);
    return WEFT_OK;
}

weft_status_t weft_bootstrap_local_address(char *text, size_t len)
{
    weft_addr_t local;
    char buf[80];
    weft_status_t status;
    if (!text || len == 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_addr_pick_local(&local)) != WEFT_OK)
        return status;
    weft_addr_format(&local, buf, sizeof(buf));
    if (strlen(buf) >= len)
        return WEFT_ERR_INVALID_ARGUMENT;
    memcpy(text, buf, strlen(buf) + 1);
    return WEFT_OK;
}

weft_status_t weft_topology_describe(char **text)
{
    weft_topo_t *topo;
    weft_status_t status;
    char *buf = NULL;
    size_t size = 0;
    FILE *f;
    if (!text)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_topo_load(NULL, &topo)) != WEFT_OK)
        return status;
    if (!(f = open_memstream(&buf, &size))) {
        weft_topo_free(topo);
        return WEFT_ERR_NO_MEMORY;
    }
    weft_topo_print(topo, f);
    weft_topo_free(topo);
    if (fclose(f) != 0 || !buf) {
        free(buf);
        return WEFT_ERR_NO_MEMORY;
    }
    *text = buf;
    return WEFT_OK;
}
