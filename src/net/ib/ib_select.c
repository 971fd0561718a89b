/* Choosing HCAs and GIDs, and naming verbs errors: pure functions. */
#include "config.h"
#include "ib.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

int weft_ib_hca_match(const char *spec, const char *name, int port)
{
    return weft_name_list_match(spec, name, port);
}

int weft_ib_select(const weft_ib_port_info_t *ports, int n, const char *spec, const weft_topo_t *topo, int gpu,
                   int *out, int max)
{
    int cand[64], ncand = 0, k = 0;
    weft_path_t best = WEFT_PATH_SYS, path[64];

    for (int i = 0; i < n && ncand < 64; i++)
        if (ports[i].active && weft_ib_hca_match(spec, ports[i].name, ports[i].port))
            cand[ncand++] = i;
    /* distance from the GPU, where the topology knows both */
    for (int c = 0; c < ncand; c++) {
        path[c] = WEFT_PATH_SYS;
        if (topo && gpu >= 0)
            for (int j = 0; j < weft_topo_nnics(topo); j++)
                if (strcmp(weft_topo_nic(topo, j)->name, ports[cand[c]].name) == 0)
                    path[c] = weft_topo_path(topo, gpu, j);
        if (path[c] < best)
            best = path[c];
    }
    for (int c = 0; c < ncand && k < max; c++)
        if (path[c] == best)
            out[k++] = cand[c];
    return k;
}

static int gid_zero(const uint8_t *g)
{
    static const uint8_t zero[16];
    return memcmp(g, zero, 16) == 0;
}

static int gid_v4_mapped(const uint8_t *g)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(g, prefix, 12) == 0;
}

static int gid_link_local(const uint8_t *g)
{
    return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

int weft_ib_gid_pick(const weft_ib_gid_t *gids, int n, int link_layer, int forced)
{
    if (forced >= 0)
        return forced < n && !gid_zero(gids[forced].raw) ? forced : -1;
    if (link_layer != IBV_LINK_LAYER_ETHERNET)
        return n > 0 && !gid_zero(gids[0].raw) ? 0 : -1;
    /* RoCE: routable v2 first (IPv4 before IPv6), then v1 */
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < n; i++) {
            const uint8_t *g = gids[i].raw;
            if (gid_zero(g))
                continue;
            if (pass == 0 && gids[i].type == WEFT_GID_ROCE_V2 && gid_v4_mapped(g))
                return i;
            if (pass == 1 && gids[i].type == WEFT_GID_ROCE_V2 && !gid_link_local(g))
                return i;
            if (pass == 2 && gids[i].type == WEFT_GID_ROCE_V1)
                return i;
        }
    return -1;
}

weft_status_t weft_ib_wc_status(enum ibv_wc_status st, const char **why)
{
    switch (st) {
    case IBV_WC_SUCCESS:
        *why = "success";
        return WEFT_OK;
    case IBV_WC_RETRY_EXC_ERR:
        *why = "the peer does not answer (transport retries exhausted)";
        return WEFT_ERR_REMOTE;
    case IBV_WC_RNR_RETRY_EXC_ERR:
        *why = "the peer is not ready to receive (RNR retries exhausted)";
        return WEFT_ERR_REMOTE;
    case IBV_WC_REM_ACCESS_ERR:
        *why = "the peer refused access to its memory (bad key or range)";
        return WEFT_ERR_REMOTE;
    case IBV_WC_REM_OP_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
        *why = "the peer could not execute the request";
        return WEFT_ERR_REMOTE;
    case IBV_WC_WR_FLUSH_ERR:
        *why = "flushed: the queue pair failed earlier";
        return WEFT_ERR_REMOTE;
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
        *why = "local memory protection error (buffer not registered?)";
        return WEFT_ERR_SYSTEM;
    case IBV_WC_LOC_LEN_ERR:
    case IBV_WC_LOC_QP_OP_ERR:
        *why = "local queue pair error";
        return WEFT_ERR_SYSTEM;
    default:
        *why = ibv_wc_status_str(st);
        return WEFT_ERR_SYSTEM;
    }
}

weft_status_t weft_ib_event_status(enum ibv_event_type ev)
{
    switch (ev) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_PATH_MIG_ERR:
        return WEFT_ERR_REMOTE;
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_DEVICE_FATAL:
    case IBV_EVENT_SRQ_ERR:
        return WEFT_ERR_SYSTEM;
    default:
        return WEFT_OK; /* port active, LID/GID/pkey changes, migrations done, ... */
    }
}

int weft_ib_target_ok(const weft_ib_range_t *ranges, int n, uint64_t target)
{
    if (target & 7)
        return 0;
    for (int i = 0; i < n; i++)
        if (target >= ranges[i].addr && ranges[i].bytes >= 8 && target - ranges[i].addr <= ranges[i].bytes - 8)
            return 1;
    return 0;
}
