/* What a tool may ask of the build and the machine through the public API
 * (weft-info uses nothing else): parameters with their ranges, the
 * algorithms and the selection table, the build, devices, the bootstrap
 * address, the topology, and an id's root without its secret. Links the
 * public library only. */
#include "tap/basic.h"
#include "weft.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The parameter named @p name, or 0. */
static int find_param(const char *name, weft_param_desc_t *out)
{
    for (size_t i = 0; weft_param_describe(i, out) == WEFT_OK; i++)
        if (strcmp(out->name, name) == 0)
            return 1;
    return 0;
}

int main(void)
{
    weft_param_desc_t p;
    weft_algorithm_desc_t a;
    weft_selection_rule_t r;
    weft_build_info_t b;
    weft_device_info_t d;
    weft_unique_id_t id;
    char root[80];
    weft_status_t st;
    char *topo = NULL;
    size_t n;
    int count = -1, seen_allreduce = 0;

    setenv("WEFT_NET_CHUNK_BYTES", "1M", 1);
    setenv("WEFT_BOOTSTRAP_MAX_PENDING", "0", 1);
    plan(24);

    ok(find_param("WEFT_NET_SOCKETS", &p) && p.is_int && p.has_range && p.min == 1 && p.max == 16 && p.valid &&
           !p.is_size,
       "a backend's parameter is listed with its range (WEFT_NET_SOCKETS 1 .. 16)");
    ok(find_param("WEFT_NET_CHUNK_BYTES", &p) && p.is_size && p.from_env && p.int_value == 1L << 20,
       "a size parameter takes its suffix (WEFT_NET_CHUNK_BYTES=1M)");
    ok(find_param("WEFT_BOOTSTRAP_MAX_PENDING", &p) && !p.valid && p.int_value == 64,
       "an out-of-range value is marked invalid, the default in effect");
    ok(find_param("WEFT_LOG_LEVEL", &p) && !p.is_int && !p.has_range, "a string parameter has no range");
    ok(find_param("OMPI_COMM_WORLD_RANK", &p), "launchers' variables that weft reads are listed too");
    for (n = 0; weft_param_describe(n, &p) == WEFT_OK; n++)
        ;
    is_status(WEFT_ERR_NOT_FOUND, weft_param_describe(n, &p), "past the last parameter: WEFT_ERR_NOT_FOUND");
    is_status(WEFT_ERR_INVALID_ARGUMENT, weft_param_describe(0, NULL), "a NULL output is refused");

    ok(weft_algorithm_describe(0, &a) == WEFT_OK && a.collective && a.name && a.help, "algorithm 0 is described");
    for (n = 0; weft_algorithm_describe(n, &a) == WEFT_OK; n++)
        seen_allreduce |= strcmp(a.collective, "allreduce") == 0 && strcmp(a.name, "rsag") == 0;
    ok(seen_allreduce, "allreduce:rsag is among the %zu algorithms", n);
    is_status(WEFT_ERR_NOT_FOUND, weft_algorithm_describe(n, &a), "past the last algorithm: WEFT_ERR_NOT_FOUND");
    is_status(WEFT_ERR_INVALID_ARGUMENT, weft_algorithm_describe(0, NULL), "a NULL output is refused");

    ok(weft_selection_rule_describe(0, &r) == WEFT_OK && strcmp(r.platform, "cpu") == 0 &&
           strcmp(r.collective, "allreduce") == 0 && strcmp(r.layout, "one host") == 0 && r.max_bytes > 0 &&
           strcmp(r.algorithm, "packet") == 0,
       "rule 0: small allreduces on one host's CPUs take the one-shot packets");
    for (n = 0; weft_selection_rule_describe(n, &r) == WEFT_OK; n++)
        ;
    is_status(WEFT_ERR_NOT_FOUND, weft_selection_rule_describe(n, &r), "past the last rule: WEFT_ERR_NOT_FOUND");
    is_status(WEFT_ERR_INVALID_ARGUMENT, weft_selection_rule_describe(0, NULL), "a NULL output is refused");

    /* (the calls come before the ok whose message prints their results) */
    memset(&b, 0, sizeof(b));
    st = weft_build_info(&b);
    ok(st == WEFT_OK && strncmp(b.gpu_backends, "host", 4) == 0 && strstr(b.networks, "ethernet") && b.version[0],
       "the build: version %s, backends %s, networks %s", b.version, b.gpu_backends, b.networks);
    memset(&d, 0, sizeof(d));
    st = weft_backend_device_count("host", &count);
    if (st == WEFT_OK && count >= 1)
        st = weft_backend_device_info("host", 0, &d);
    ok(st == WEFT_OK && count >= 1 && d.name[0] && d.total_mem > 0, "host device 0: %s", d.name);
    is_status(WEFT_ERR_INVALID_ARGUMENT, weft_backend_device_info("host", count, &d),
              "a device past the count is refused");
    is_status(WEFT_ERR_NOT_FOUND, weft_backend_device_info("no-such-backend", 0, &d),
              "a backend this build lacks: WEFT_ERR_NOT_FOUND");

    root[0] = '\0';
    st = weft_bootstrap_local_address(root, sizeof(root));
    ok(st == WEFT_OK && strstr(root, ":0"), "the bootstrap address, port 0: %s", root);
    is_status(WEFT_ERR_INVALID_ARGUMENT, weft_bootstrap_local_address(root, 2), "a buffer too short is refused");

    ok(weft_topology_describe(&topo) == WEFT_OK && topo && strncmp(topo, "topology (", 10) == 0,
       "the topology, as text");
    free(topo);

    root[0] = '\0';
    st = weft_get_unique_id(&id);
    if (st == WEFT_OK)
        st = weft_unique_id_root(&id, root, sizeof(root));
    ok(st == WEFT_OK && strchr(root, ':'), "an id's root (%s)", root);
    memset(&id, 0, sizeof(id));
    is_status(WEFT_ERR_INVALID_ARGUMENT, weft_unique_id_root(&id, root, sizeof(root)), "a malformed id is refused");
    is_status(WEFT_ERR_INVALID_ARGUMENT, weft_unique_id_root(NULL, root, sizeof(root)), "a NULL id is refused");
    return test_done();
}
