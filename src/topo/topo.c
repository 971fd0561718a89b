/* Topology from hwloc (PCI tree, NUMA) or, without it, from sysfs. */
#include "config.h"
#include "topo.h"
#include "log.h"
#include "param.h"

#include <pthread.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifdef WEFT_HAVE_HWLOC
#include <hwloc.h>
#endif

struct weft_topo {
    const char *source;
    weft_topo_dev_t gpu[WEFT_TOPO_MAX], nic[WEFT_TOPO_MAX];
    int ngpus, nnics, nnuma;
    weft_path_t path[WEFT_TOPO_MAX][WEFT_TOPO_MAX]; /* [gpu][nic] */
    cpu_set_t numa_cpus[WEFT_TOPO_MAX];              /* by NUMA node */
};

const char *weft_path_name(weft_path_t p)
{
    static const char *names[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};
    return (unsigned)p < 5 ? names[p] : "?";
}

static int is_gpu_class(unsigned cls, unsigned vendor)
{
    /* display (0x0300) or 3D controller (0x0302) of NVIDIA or AMD */
    return (cls == 0x0300 || cls == 0x0302) && (vendor == 0x10de || vendor == 0x1002);
}

#ifdef WEFT_HAVE_HWLOC
/* hwloc_get_common_ancestor_obj compares depths, which I/O objects do not
 * have in a usable order: walk the parents instead. */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t x = a; x; x = x->parent)
        for (hwloc_obj_t y = b; y; y = y->parent)
            if (x == y)
                return x;
    return NULL;
}

static weft_path_t hwloc_path(hwloc_topology_t h, hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t common = common_ancestor(a, b);
    hwloc_obj_t na = hwloc_get_non_io_ancestor_obj(h, a), nb = hwloc_get_non_io_ancestor_obj(h, b);
    if (common && common->type == HWLOC_OBJ_BRIDGE) {
        if (common->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
            return WEFT_PATH_PHB;
        /* a PCI switch: the devices' own parent switch, or higher up */
        return (a->parent == common && b->parent == common) ? WEFT_PATH_PIX : WEFT_PATH_PXB;
    }
    if (common && common->type == HWLOC_OBJ_PCI_DEVICE)
        return WEFT_PATH_PIX; /* functions of one device */
    if (na && nb && na->nodeset && nb->nodeset && hwloc_bitmap_isequal(na->nodeset, nb->nodeset))
        return WEFT_PATH_NODE;
    return WEFT_PATH_SYS;
}

static int numa_of(hwloc_topology_t h, hwloc_obj_t o)
{
    hwloc_obj_t n = hwloc_get_non_io_ancestor_obj(h, o);
    if (!n || !n->nodeset || hwloc_bitmap_weight(n->nodeset) != 1)
        return -1;
    return hwloc_bitmap_first(n->nodeset);
}

static weft_status_t load_hwloc(weft_topo_t *t, const char *xml)
{
    hwloc_topology_t h;
    hwloc_obj_t gpu_obj[WEFT_TOPO_MAX], nic_obj[WEFT_TOPO_MAX];
    hwloc_obj_t o = NULL;

    if (hwloc_get_api_version() >> 16 != HWLOC_API_VERSION >> 16) {
        weft_warn(WEFT_SUB_INIT, "hwloc %x at run time, built with %x: using sysfs", hwloc_get_api_version(),
                  HWLOC_API_VERSION);
        return WEFT_ERR_UNSUPPORTED;
    }
    if (hwloc_topology_init(&h) != 0)
        return WEFT_ERR_SYSTEM;
    hwloc_topology_set_io_types_filter(h, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
#if HWLOC_API_VERSION >= 0x00020100
    /* PCI from sysfs (hwloc's linux component) rather than the libpciaccess
     * plugin, which leaks its device-name tables on every load, and names
     * are all it adds here. No GPU-runtime plugins either: they call into
     * CUDA/ROCm/OpenCL/GL from inside a process that is using the GPU
     * (GPUs are found by PCI class instead). */
    static const char *const skip[] = {"pci", "gl", "opencl", "cuda", "nvml", "rsmi", "levelzero"};
    for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
        hwloc_topology_set_components(h, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, skip[i]);
#endif
    if ((xml && hwloc_topology_set_xml(h, xml) != 0) || hwloc_topology_load(h) != 0) {
        weft_error(WEFT_SUB_INIT, "hwloc could not load %s: %s", xml ? xml : "the topology", strerror(errno));
        hwloc_topology_destroy(h);
        return xml ? WEFT_ERR_INVALID_ARGUMENT : WEFT_ERR_SYSTEM;
    }
    t->source = xml ? "hwloc (xml)" : "hwloc";
    while ((o = hwloc_get_next_pcidev(h, o)) && t->ngpus < WEFT_TOPO_MAX) {
        if (!is_gpu_class(o->attr->pcidev.class_id, o->attr->pcidev.vendor_id))
            continue;
        weft_topo_dev_t *d = &t->gpu[t->ngpus];
        snprintf(d->busid, sizeof(d->busid), "%04x:%02x:%02x.%01x", o->attr->pcidev.domain, o->attr->pcidev.bus,
                 o->attr->pcidev.dev, o->attr->pcidev.func);
        snprintf(d->name, sizeof(d->name), "%s %04x:%04x", o->attr->pcidev.vendor_id == 0x10de ? "nvidia" : "amd",
                 o->attr->pcidev.vendor_id, o->attr->pcidev.device_id);
        d->numa = numa_of(h, o);
        gpu_obj[t->ngpus++] = o;
    }
    o = NULL;
    while ((o = hwloc_get_next_osdev(h, o)) && t->nnics < WEFT_TOPO_MAX) {
        hwloc_obj_t pci = o->parent;
        weft_topo_dev_t *d;
        if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS && o->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK)
            continue;
        if (!pci || pci->type != HWLOC_OBJ_PCI_DEVICE)
            continue; /* virtual interfaces: no place in the tree */
        d = &t->nic[t->nnics];
        snprintf(d->name, sizeof(d->name), "%s", o->name ? o->name : "?");
        snprintf(d->busid, sizeof(d->busid), "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
                 pci->attr->pcidev.dev, pci->attr->pcidev.func);
        d->kind = o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS ? WEFT_NIC_IB : WEFT_NIC_ETHERNET;
        d->numa = numa_of(h, pci);
        nic_obj[t->nnics++] = pci;
    }
    for (int g = 0; g < t->ngpus; g++)
        for (int n = 0; n < t->nnics; n++)
            t->path[g][n] = hwloc_path(h, gpu_obj[g], nic_obj[n]);
    o = NULL;
    while ((o = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_NUMANODE, o))) {
        unsigned i = o->os_index, cpu;
        if (i >= WEFT_TOPO_MAX)
            continue;
        CPU_ZERO(&t->numa_cpus[i]);
        hwloc_bitmap_foreach_begin(cpu, o->cpuset)
        if (cpu < CPU_SETSIZE)
            CPU_SET(cpu, &t->numa_cpus[i]);
        hwloc_bitmap_foreach_end();
        if ((int)i + 1 > t->nnuma)
            t->nnuma = (int)i + 1;
    }
    hwloc_topology_destroy(h);
    return WEFT_OK;
}
#endif

/* -- sysfs fallback ---------------------------------------------------------- */

static long read_long(const char *path, int base)
{
    char buf[64];
    FILE *f = fopen(path, "re");
    long v = -1;
    if (f) {
        if (fgets(buf, sizeof(buf), f))
            v = strtol(buf, NULL, base);
        fclose(f);
    }
    return v;
}

static int is_pci_address(const char *s)
{
    /* dddd:bb:dd.f */
    unsigned a, b, c, d;
    char tail;
    return strlen(s) == 12 && sscanf(s, "%4x:%2x:%2x.%1x%c", &a, &b, &c, &d, &tail) == 4;
}

/* A class device's PCI address and NUMA node: the last PCI device on the
 * path its "device" link resolves to (virtio and other buses sit below
 * one). Left empty for virtual devices. */
static void class_dev(const char *cls, const char *name, weft_topo_dev_t *d)
{
    char path[512], real[PATH_MAX], *tok, *save = NULL;
    snprintf(path, sizeof(path), "/sys/class/%s/%s/device", cls, name);
    if (!realpath(path, real))
        return;
    for (tok = strtok_r(real, "/", &save); tok; tok = strtok_r(NULL, "/", &save))
        if (is_pci_address(tok))
            snprintf(d->busid, sizeof(d->busid), "%.15s", tok);
    if (d->busid[0]) {
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", d->busid);
        d->numa = (int)read_long(path, 10);
    }
}

/* NUMA nodes and their CPUs ("0-3,8-11"), for pinning. */
static void sysfs_numa(weft_topo_t *t)
{
    for (int n = 0; n < WEFT_TOPO_MAX; n++) {
        char path[96], list[4096], *tok, *save = NULL;
        FILE *f;
        snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", n);
        if (!(f = fopen(path, "re")))
            continue;
        if (fgets(list, sizeof(list), f)) {
            CPU_ZERO(&t->numa_cpus[n]);
            for (tok = strtok_r(list, ",\n", &save); tok; tok = strtok_r(NULL, ",\n", &save)) {
                int lo = -1, hi = -1;
                if (sscanf(tok, "%d-%d", &lo, &hi) < 2)
                    hi = lo;
                for (int c = lo; c >= 0 && c <= hi && c < CPU_SETSIZE; c++)
                    CPU_SET(c, &t->numa_cpus[n]);
            }
            t->nnuma = n + 1;
        }
        fclose(f);
    }
}

static void load_sysfs(weft_topo_t *t)
{
    DIR *dir;
    struct dirent *e;
    t->source = "sysfs";
    sysfs_numa(t);
    if ((dir = opendir("/sys/bus/pci/devices"))) {
        while ((e = readdir(dir)) && t->ngpus < WEFT_TOPO_MAX) {
            char path[512];
            long cls, vendor;
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/class", e->d_name);
            cls = read_long(path, 16);
            snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", e->d_name);
            vendor = read_long(path, 16);
            if (cls < 0 || !is_gpu_class((unsigned)(cls >> 8), (unsigned)vendor))
                continue;
            weft_topo_dev_t *d = &t->gpu[t->ngpus++];
            snprintf(d->busid, sizeof(d->busid), "%.15s", e->d_name);
            snprintf(d->name, sizeof(d->name), "%s", vendor == 0x10de ? "nvidia" : "amd");
            snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", e->d_name);
            d->numa = (int)read_long(path, 10);
        }
        closedir(dir);
    }
    static const struct { const char *cls; int kind; } kinds[] = {{"infiniband", WEFT_NIC_IB}, {"net", WEFT_NIC_ETHERNET}};
    for (size_t k = 0; k < 2; k++) {
        char p[64];
        snprintf(p, sizeof(p), "/sys/class/%s", kinds[k].cls);
        if (!(dir = opendir(p)))
            continue;
        while ((e = readdir(dir)) && t->nnics < WEFT_TOPO_MAX) {
            weft_topo_dev_t d;
            if (e->d_name[0] == '.' || strcmp(e->d_name, "lo") == 0)
                continue;
            memset(&d, 0, sizeof(d));
            d.numa = -1;
            class_dev(kinds[k].cls, e->d_name, &d);
            if (!d.busid[0])
                continue; /* virtual: veth, bridges, tunnels */
            snprintf(d.name, sizeof(d.name), "%.31s", e->d_name);
            d.kind = kinds[k].kind;
            t->nic[t->nnics++] = d;
        }
        closedir(dir);
    }
    for (int g = 0; g < t->ngpus; g++)
        for (int n = 0; n < t->nnics; n++)
            t->path[g][n] = t->gpu[g].numa >= 0 && t->gpu[g].numa == t->nic[n].numa ? WEFT_PATH_NODE : WEFT_PATH_SYS;
}

weft_status_t weft_topo_load(const char *xml, weft_topo_t **out)
{
    weft_topo_t *t = calloc(1, sizeof(*t));
    weft_status_t status = WEFT_ERR_UNSUPPORTED;
    if (!t)
        return WEFT_ERR_NO_MEMORY;
    if (!xml && *weft_param_str(WEFT_P_TOPO_FILE))
        xml = weft_param_str(WEFT_P_TOPO_FILE);
#ifdef WEFT_HAVE_HWLOC
    status = load_hwloc(t, xml);
#endif
    if (status != WEFT_OK) {
        if (xml) {
            if (status == WEFT_ERR_UNSUPPORTED)
                weft_error(WEFT_SUB_INIT, "reading a topology file needs hwloc (not in this build)");
            free(t);
            return status;
        }
        memset(t, 0, sizeof(*t));
        load_sysfs(t);
    }
    *out = t;
    return WEFT_OK;
}

void weft_topo_free(weft_topo_t *t)
{
    free(t);
}

const char *weft_topo_source(const weft_topo_t *t) { return t->source; }
int weft_topo_ngpus(const weft_topo_t *t) { return t->ngpus; }
int weft_topo_nnics(const weft_topo_t *t) { return t->nnics; }
int weft_topo_nnuma(const weft_topo_t *t) { return t->nnuma; }
const weft_topo_dev_t *weft_topo_gpu(const weft_topo_t *t, int i) { return i >= 0 && i < t->ngpus ? &t->gpu[i] : NULL; }
const weft_topo_dev_t *weft_topo_nic(const weft_topo_t *t, int i) { return i >= 0 && i < t->nnics ? &t->nic[i] : NULL; }

int weft_topo_find_gpu(const weft_topo_t *t, const char *busid)
{
    size_t n = strlen(busid);
    for (int g = 0; g < t->ngpus; g++) {
        size_t m = strlen(t->gpu[g].busid);
        /* "17:00.0" matches "0000:17:00.0" */
        if (n > 0 && n <= m && strcasecmp(t->gpu[g].busid + (m - n), busid) == 0)
            return g;
    }
    return -1;
}

weft_path_t weft_topo_path(const weft_topo_t *t, int gpu, int nic)
{
    if (gpu < 0 || gpu >= t->ngpus || nic < 0 || nic >= t->nnics)
        return WEFT_PATH_SYS;
    return t->path[gpu][nic];
}

void weft_topo_nics_for_gpu(const weft_topo_t *t, int gpu, int kind, int *nics, int max, int *n, weft_path_t *path)
{
    weft_path_t best = WEFT_PATH_SYS;
    *n = 0;
    for (int i = 0; i < t->nnics; i++)
        if ((!kind || t->nic[i].kind == kind) && weft_topo_path(t, gpu, i) < best)
            best = weft_topo_path(t, gpu, i);
    for (int i = 0; i < t->nnics && *n < max; i++)
        if ((!kind || t->nic[i].kind == kind) && weft_topo_path(t, gpu, i) == best)
            nics[(*n)++] = i;
    *path = best;
}

weft_status_t weft_topo_bind_near_gpu(const weft_topo_t *t, int gpu)
{
    int numa;
    if (gpu < 0 || gpu >= t->ngpus || (numa = t->gpu[gpu].numa) < 0 || numa >= WEFT_TOPO_MAX ||
        CPU_COUNT(&t->numa_cpus[numa]) == 0)
        return WEFT_OK;
    if (sched_setaffinity(0, sizeof(cpu_set_t), &t->numa_cpus[numa]) != 0) {
        weft_warn(WEFT_SUB_PROXY, "cannot pin near NUMA node %d: %s", numa, strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_OK;
}

void weft_topo_print(const weft_topo_t *t, FILE *out)
{
    fprintf(out, "topology (%s): %d NUMA node(s), %d GPU(s), %d NIC(s)\n", t->source, t->nnuma, t->ngpus, t->nnics);
    for (int n = 0; n < t->nnics; n++)
        fprintf(out, "  nic %-2d %-12s %-4s pci %-13s numa %d\n", n, t->nic[n].name,
                t->nic[n].kind == WEFT_NIC_IB ? "ib" : "eth", t->nic[n].busid, t->nic[n].numa);
    for (int g = 0; g < t->ngpus; g++) {
        int nics[WEFT_TOPO_MAX], n;
        weft_path_t p;
        fprintf(out, "  gpu %-2d %-20s pci %-13s numa %d; nearest NICs:", g, t->gpu[g].name, t->gpu[g].busid,
                t->gpu[g].numa);
        weft_topo_nics_for_gpu(t, g, 0, nics, WEFT_TOPO_MAX, &n, &p);
        for (int i = 0; i < n; i++)
            fprintf(out, " %s", t->nic[nics[i]].name);
        fprintf(out, n ? " (%s)\n" : " none\n", weft_path_name(p));
    }
}

static weft_topo_t *shared;
static pthread_once_t shared_once = PTHREAD_ONCE_INIT;

static void shared_load(void)
{
    if (weft_topo_load(NULL, &shared) != WEFT_OK)
        shared = NULL;
}

const weft_topo_t *weft_topo_shared(void)
{
    pthread_once(&shared_once, shared_load);
    return shared;
}
