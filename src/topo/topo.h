/*
 * Topology: which GPUs, NICs and NUMA nodes are near each other.
 *
 * With hwloc the PCI tree gives each GPU-NIC pair a path class (as
 * nvidia-smi topo prints them); without hwloc, sysfs gives the NUMA node
 * of each device and the classes are only NODE or SYS. NICs are chosen per
 * GPU by path class: every NIC of the best class is the GPU's (a GPU may
 * have several; several GPUs may share one) -- never "NIC i for GPU i".
 */
#ifndef WEFT_TOPO_H
#define WEFT_TOPO_H

#include <stdio.h>
#include "weft.h"

typedef enum {
    WEFT_PATH_PIX = 0, /* behind the same PCIe switch */
    WEFT_PATH_PXB = 1, /* through several PCIe switches, not the host bridge */
    WEFT_PATH_PHB = 2, /* through the host bridge of one CPU */
    WEFT_PATH_NODE = 3, /* different host bridges of one NUMA node */
    WEFT_PATH_SYS = 4  /* across NUMA nodes (or unknown) */
} weft_path_t;

typedef enum { WEFT_NIC_IB = 1, WEFT_NIC_ETHERNET = 2 } weft_nic_kind_t;

#define WEFT_TOPO_MAX 64

typedef struct {
    char busid[16]; /* "0000:17:00.0", "" if not PCI */
    char name[32];  /* GPU: "gpu0" or vendor id; NIC: "mlx5_0", "eth0" */
    int numa;       /* -1 if unknown */
    int kind;       /* NICs: weft_nic_kind_t */
} weft_topo_dev_t;

typedef struct weft_topo weft_topo_t;

/* Loads the topology of this machine (or of WEFT_TOPO_FILE), or of the
 * hwloc XML file @p xml (WEFT_ERR_UNSUPPORTED without hwloc). */
weft_status_t weft_topo_load(const char *xml, weft_topo_t **out);
void weft_topo_free(weft_topo_t *t);
/* This machine's topology, loaded once per process; NULL if it failed. */
const weft_topo_t *weft_topo_shared(void);
/* Where the data came from: "hwloc", "hwloc (xml)" or "sysfs". */
const char *weft_topo_source(const weft_topo_t *t);
int weft_topo_ngpus(const weft_topo_t *t);
int weft_topo_nnics(const weft_topo_t *t);
int weft_topo_nnuma(const weft_topo_t *t);
const weft_topo_dev_t *weft_topo_gpu(const weft_topo_t *t, int i);
const weft_topo_dev_t *weft_topo_nic(const weft_topo_t *t, int i);
/* The GPU with this PCI bus id (case-insensitive, domain optional); -1 if none. */
int weft_topo_find_gpu(const weft_topo_t *t, const char *busid);
weft_path_t weft_topo_path(const weft_topo_t *t, int gpu, int nic);
/*
 * The NICs of @p kind (0: any) nearest to GPU @p gpu: every NIC of the
 * best path class, in NIC order, into @p nics (at most @p max); their
 * count in *n and the class in *path. *n = 0 when there is no such NIC.
 */
void weft_topo_nics_for_gpu(const weft_topo_t *t, int gpu, int kind, int *nics, int max, int *n,
                            weft_path_t *path);
/* Pins the calling thread to the CPUs of GPU @p gpu's NUMA node (no-op
 * when unknown). WEFT_OK, or WEFT_ERR_SYSTEM if the OS refused. */
weft_status_t weft_topo_bind_near_gpu(const weft_topo_t *t, int gpu);
const char *weft_path_name(weft_path_t p);
/* The whole picture, for weft-info. */
void weft_topo_print(const weft_topo_t *t, FILE *out);

#endif
