/*
 * The ib provider's logic that needs no device: HCA choice by name, port,
 * activity and distance from the GPU; RoCE/IB GID choice; the work
 * requests it posts; how verbs errors and async events become weft
 * errors. Also says whether this machine has a device at all.
 */
#include "config.h"
#include "ib.h"
#include "tap/basic.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

static void gid_set(weft_ib_gid_t *g, const char *v6, int type)
{
    memset(g, 0, sizeof(*g));
    if (v6)
        inet_pton(AF_INET6, v6, g->raw);
    g->type = type;
}

int main(void)
{
    weft_ib_port_info_t ports[5] = {
        {"mlx5_0", 1, 1, IBV_LINK_LAYER_INFINIBAND}, {"mlx5_1", 1, 1, IBV_LINK_LAYER_INFINIBAND},
        {"mlx5_2", 1, 1, IBV_LINK_LAYER_INFINIBAND}, {"mlx5_2", 2, 0, IBV_LINK_LAYER_INFINIBAND},
        {"mlx5_3", 1, 1, IBV_LINK_LAYER_INFINIBAND}};
    weft_ib_gid_t gids[6];
    weft_topo_t *topo = NULL;
    char xml[4096];
    const char *srcdir = getenv("srcdir");
    int out[8], n;
    const char *why;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    uint64_t value = 42;
    struct ibv_device **devs;
    int ndev = 0, active = 0;

    plan(33);
    /* WEFT_IB_HCA */
    ok(weft_ib_hca_match("", "mlx5_0", 1), "empty spec: every HCA");
    ok(weft_ib_hca_match("mlx5", "mlx5_1", 1), "prefix match");
    ok(!weft_ib_hca_match("=mlx5", "mlx5_1", 1), "'=' asks for the exact name");
    ok(weft_ib_hca_match("=mlx5_1", "mlx5_1", 2), "exact name, any port");
    ok(weft_ib_hca_match("mlx5_0:1", "mlx5_0", 1) && !weft_ib_hca_match("mlx5_0:1", "mlx5_0", 2), "name:port");
    ok(!weft_ib_hca_match("^mlx5_0", "mlx5_0", 1) && weft_ib_hca_match("^mlx5_0", "mlx5_1", 1), "'^' excludes");
    ok(weft_ib_hca_match("mlx5_0,mlx5_2", "mlx5_2", 1) && !weft_ib_hca_match("mlx5_0,mlx5_2", "mlx5_1", 1),
       "a list");

    /* choice by distance (the two-socket machine of topo-t) */
    snprintf(xml, sizeof(xml), "%s/t/net/topo-2socket.xml", srcdir ? srcdir : ".");
#ifdef WEFT_HAVE_HWLOC
    weft_topo_load(xml, &topo);
#endif
    n = weft_ib_select(ports, 5, "", NULL, -1, out, 8);
    ok(n == 4 && out[0] == 0 && out[3] == 4, "no topology: every active port (%d)", n);
    n = weft_ib_select(ports, 5, "^mlx5_3", NULL, -1, out, 8);
    is_int(3, n, "... less the excluded one");
    if (topo) {
        n = weft_ib_select(ports, 5, "", topo, 0, out, 8);
        ok(n == 1 && out[0] == 0, "gpu 0: mlx5_0, behind its switch");
        n = weft_ib_select(ports, 5, "", topo, 2, out, 8);
        ok(n == 2 && out[0] == 1 && out[1] == 2, "gpu 2: both HCAs of its switch (port 1 of mlx5_2; port 2 is down)");
        n = weft_ib_select(ports, 5, "", topo, 1, out, 8);
        ok(n == 1 && out[0] == 0, "gpu 1 shares mlx5_0 with gpu 0");
        n = weft_ib_select(ports, 5, "^mlx5_0", topo, 0, out, 8);
        ok(n == 3 && out[0] == 1 && out[2] == 4,
           "gpu 0 with mlx5_0 excluded: every other port is as far (SYS; mlx5_3 is not in the topology)");
        n = weft_ib_select(ports, 5, "", topo, 2, out, 1);
        is_int(1, n, "at most max choices");
    } else {
        for (int i = 0; i < 5; i++)
            skip("topology checks need hwloc");
    }
    weft_topo_free(topo);

    /* GIDs */
    gid_set(&gids[0], "fe80::1", WEFT_GID_ROCE_V1);
    gid_set(&gids[1], "fe80::1", WEFT_GID_ROCE_V2);
    gid_set(&gids[2], "::ffff:10.0.0.1", WEFT_GID_ROCE_V1);
    gid_set(&gids[3], "::ffff:10.0.0.1", WEFT_GID_ROCE_V2);
    gid_set(&gids[4], "2001:db8::1", WEFT_GID_ROCE_V2);
    gid_set(&gids[5], NULL, WEFT_GID_ROCE_V2);
    is_int(3, weft_ib_gid_pick(gids, 6, IBV_LINK_LAYER_ETHERNET, -1), "RoCE: v2 with an IPv4 address first");
    is_int(4, weft_ib_gid_pick(gids, 3, IBV_LINK_LAYER_ETHERNET, -1) == 0 ? 4 : -1,
           "RoCE without v2 IPv4/IPv6 entries: the first v1");
    gids[3].type = WEFT_GID_ROCE_V1;
    is_int(4, weft_ib_gid_pick(gids, 6, IBV_LINK_LAYER_ETHERNET, -1), "then v2 with a global IPv6 address");
    is_int(2, weft_ib_gid_pick(gids, 6, IBV_LINK_LAYER_ETHERNET, 2), "WEFT_IB_GID_INDEX is obeyed");
    is_int(-1, weft_ib_gid_pick(gids, 6, IBV_LINK_LAYER_ETHERNET, 5), "... but not to an empty entry");
    is_int(-1, weft_ib_gid_pick(gids, 6, IBV_LINK_LAYER_ETHERNET, 9), "... nor past the table");
    is_int(0, weft_ib_gid_pick(gids, 6, IBV_LINK_LAYER_INFINIBAND, -1), "InfiniBand: index 0");
    is_int(-1, weft_ib_gid_pick(gids + 5, 1, IBV_LINK_LAYER_ETHERNET, -1), "only empty entries: none");

    /* work requests */
    weft_ib_wr_write(&wr, &sge, 0x1000, 7, 0x2000, 9, 4096, 5, 1);
    ok(wr.opcode == IBV_WR_RDMA_WRITE && sge.addr == 0x1000 && sge.lkey == 7 && sge.length == 4096 &&
           wr.wr.rdma.remote_addr == 0x2000 && wr.wr.rdma.rkey == 9 && wr.wr_id == 5 &&
           wr.send_flags == IBV_SEND_SIGNALED && wr.num_sge == 1 && !wr.next,
       "RDMA write: addresses, keys, length, signalled");
    weft_ib_wr_write(&wr, &sge, 0x1000, 7, 0x2000, 9, 0, 5, 0);
    ok(wr.num_sge == 0 && wr.send_flags == 0, "a zero-byte write carries no SGE; unsignalled when asked");
    weft_ib_wr_store(&wr, &sge, &value, 0x3008, 11, 6);
    ok(wr.opcode == IBV_WR_RDMA_WRITE && (wr.send_flags & IBV_SEND_INLINE) && (wr.send_flags & IBV_SEND_SIGNALED) &&
           sge.length == 8 && sge.addr == (uint64_t)(uintptr_t)&value && wr.wr.rdma.remote_addr == 0x3008,
       "store signal: an inline 8-byte write of the value");
    weft_ib_wr_fetch_add(&wr, &sge, 0x4000, 3, 0x5010, 12, 1, 7);
    ok(wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD && wr.wr.atomic.compare_add == 1 &&
           wr.wr.atomic.remote_addr == 0x5010 && wr.wr.atomic.rkey == 12 && (wr.send_flags & IBV_SEND_FENCE) &&
           sge.length == 8 && sge.lkey == 3,
       "add signal: a fenced fetch-add into a registered result word");

    {
        uint64_t target = 0x7000;
        weft_ib_wr_imm_add(&wr, &sge, &target, 0x9000 + 3 * 8, 21, 1, 8);
        ok(wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM && ntohl(wr.imm_data) == 1 && (wr.send_flags & IBV_SEND_INLINE) &&
               sge.addr == (uint64_t)(uintptr_t)&target && sge.length == 8 && wr.wr.rdma.remote_addr == 0x9018 &&
               wr.wr.rdma.rkey == 21,
           "add signal without atomics: the target address into the peer's mailbox slot, the value as immediate");
    }
    {
        weft_ib_range_t r[2] = {{0x1000, 64}, {0x8000, 4096}};
        ok(weft_ib_target_ok(r, 2, 0x1000) && weft_ib_target_ok(r, 2, 0x1038) && weft_ib_target_ok(r, 2, 0x8ff8),
           "add-signal targets inside registrations are accepted");
        ok(!weft_ib_target_ok(r, 2, 0x1040) && !weft_ib_target_ok(r, 2, 0x1004) && !weft_ib_target_ok(r, 2, 0xff8) &&
               !weft_ib_target_ok(r, 2, 0x9000) && !weft_ib_target_ok(r, 0, 0x1000),
           "... past the end, misaligned, before the start or with no registration: refused");
    }

    /* errors */
    {
        weft_status_t st = weft_ib_wc_status(IBV_WC_RETRY_EXC_ERR, &why);
        ok(st == WEFT_ERR_REMOTE && strstr(why, "peer"), "retries exhausted: WEFT_ERR_REMOTE (%s)", why);
    }
    ok(weft_ib_wc_status(IBV_WC_REM_ACCESS_ERR, &why) == WEFT_ERR_REMOTE &&
           weft_ib_wc_status(IBV_WC_LOC_PROT_ERR, &why) == WEFT_ERR_SYSTEM &&
           weft_ib_wc_status(IBV_WC_SUCCESS, &why) == WEFT_OK,
       "remote access error is the peer's, local protection error ours");
    ok(weft_ib_event_status(IBV_EVENT_QP_FATAL) == WEFT_ERR_REMOTE &&
           weft_ib_event_status(IBV_EVENT_PORT_ERR) == WEFT_ERR_SYSTEM &&
           weft_ib_event_status(IBV_EVENT_DEVICE_FATAL) == WEFT_ERR_SYSTEM &&
           weft_ib_event_status(IBV_EVENT_PORT_ACTIVE) == WEFT_OK,
       "async events: QP fatal, port error and device fatal fail connections; port active does not");

    /* WEFT_NET_TRANSPORT=auto asks the provider whether this host has an
     * active port: the answer must match what verbs report here. */
    devs = ibv_get_device_list(&ndev);
    for (int d = 0; devs && d < ndev; d++) {
        struct ibv_context *c = ibv_open_device(devs[d]);
        struct ibv_device_attr da;
        if (c && ibv_query_device(c, &da) == 0)
            for (int p = 1; p <= da.phys_port_cnt; p++) {
                struct ibv_port_attr pa;
                if (ibv_query_port(c, (uint8_t)p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
                    active++;
            }
        if (c)
            ibv_close_device(c);
    }
    if (devs)
        ibv_free_device_list(devs);
    is_int(active > 0, weft_ib_ops.usable(), "usable (what auto transport asks): %d device(s), %d active port(s)",
           ndev, active);
    return 0;
}
