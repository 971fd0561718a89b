/*
 * Topology: a two-socket machine described as hwloc XML (three GPUs, three
 * HCAs, one ethernet port) gives each GPU the NICs nearest to it -- one
 * HCA shared by two GPUs, two HCAs for one GPU -- and the path classes
 * between them; this machine's own topology loads (hwloc or sysfs).
 *
 * t/net/topo-2socket.xml (no comments in it: hwloc's own XML reader, used
 * where it is built without libxml2, does not accept them): GPU0 and
 * mlx5_0 behind one PCIe switch; GPU1 behind another switch of the same
 * host bridge (it shares mlx5_0); GPU2 behind a switch with two HCAs
 * (mlx5_1, mlx5_2); eth0 on socket 1's host bridge.
 */
#include "config.h"
#include "tap/basic.h"
#include "topo.h"

#include <stdlib.h>
#include <string.h>

static const char *names(const weft_topo_t *t, const int *nics, int n, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        strncat(buf, weft_topo_nic(t, nics[i])->name, len - strlen(buf) - 2);
        if (i + 1 < n)
            strncat(buf, ",", len - strlen(buf) - 1);
    }
    return buf;
}

int main(void)
{
    weft_topo_t *t = NULL;
    char path[4096], buf[256];
    const char *srcdir = getenv("srcdir");
    int nics[8], n, g;
    weft_path_t p;

#ifndef WEFT_HAVE_HWLOC
    /* sysfs only: this machine loads, an XML file is refused clearly */
    plan(2);
    is_int(WEFT_OK, weft_topo_load(NULL, &t), "this machine's topology loads from sysfs");
    if (t)
        diag("source %s: %d GPU(s), %d NIC(s)", weft_topo_source(t), weft_topo_ngpus(t), weft_topo_nnics(t));
    weft_topo_free(t);
    t = NULL;
    is_int(WEFT_ERR_UNSUPPORTED, weft_topo_load("topo.xml", &t), "an XML topology needs hwloc");
    return 0;
#endif
    plan(14);
    /* the strictest reader (hwloc's own): what hosts without libxml2 use */
    setenv("HWLOC_LIBXML_IMPORT", "0", 1);
    is_int(WEFT_OK, weft_topo_load(NULL, &t), "this machine's topology loads");
    diag("source %s: %d GPU(s), %d NIC(s)", t ? weft_topo_source(t) : "-", t ? weft_topo_ngpus(t) : 0,
         t ? weft_topo_nnics(t) : 0);
    weft_topo_free(t);
    t = NULL;
    snprintf(path, sizeof(path), "%s/t/net/topo-2socket.xml", srcdir ? srcdir : ".");
    is_int(WEFT_OK, weft_topo_load(path, &t), "load the two-socket XML");
    if (!t)
        bail("no topology");
    ok(weft_topo_ngpus(t) == 3 && weft_topo_nnics(t) == 4, "3 GPUs and 4 NICs (got %d, %d)", weft_topo_ngpus(t),
       weft_topo_nnics(t));
    ok(weft_topo_nnuma(t) == 2, "2 NUMA nodes");
    g = weft_topo_find_gpu(t, "0000:11:00.0");
    is_int(0, g, "GPU 0000:11:00.0 is gpu 0");
    is_int(2, weft_topo_find_gpu(t, "21:00.0"), "a bus id without domain finds gpu 2");
    is_int(-1, weft_topo_find_gpu(t, "0000:99:00.0"), "an unknown bus id finds nothing");
    weft_topo_nics_for_gpu(t, 0, WEFT_NIC_IB, nics, 8, &n, &p);
    is_string("mlx5_0", names(t, nics, n, buf, sizeof(buf)), "gpu 0: mlx5_0 behind its own switch (%s)",
              weft_path_name(p));
    ok(p == WEFT_PATH_PIX, "gpu 0 -> mlx5_0 is PIX");
    weft_topo_nics_for_gpu(t, 1, WEFT_NIC_IB, nics, 8, &n, &p);
    ok(n == 1 && strcmp(weft_topo_nic(t, nics[0])->name, "mlx5_0") == 0 && p == WEFT_PATH_PHB,
       "gpu 1 shares mlx5_0 through the host bridge (%s, %s)", names(t, nics, n, buf, sizeof(buf)),
       weft_path_name(p));
    weft_topo_nics_for_gpu(t, 2, WEFT_NIC_IB, nics, 8, &n, &p);
    is_string("mlx5_1,mlx5_2", names(t, nics, n, buf, sizeof(buf)), "gpu 2 gets both HCAs of its switch");
    ok(weft_topo_path(t, 0, 1) == WEFT_PATH_SYS, "gpu 0 -> mlx5_1 crosses the sockets (SYS)");
    weft_topo_nics_for_gpu(t, 2, WEFT_NIC_ETHERNET, nics, 8, &n, &p);
    ok(n == 1 && strcmp(weft_topo_nic(t, nics[0])->name, "eth0") == 0 && p == WEFT_PATH_PHB,
       "gpu 2's ethernet port: eth0 on its host bridge");
    weft_topo_free(t);
    t = NULL;
    ok(weft_topo_load("/nonexistent/topo.xml", &t) != WEFT_OK && !t, "a missing XML file is an error");
    return 0;
}
