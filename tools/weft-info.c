/* weft-info: what this build of weft has, and its parameters (-c). */
#include "config.h"
#include "coll.h"
#include "backend.h"
#include "net.h"
#include "topo.h"
#include "param.h"
#include "sock.h"
#include "uid.h"
#include "weft.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: weft-info [-c] [-a] [--new-id]\n"
                 "  (no option)  build: version, GPU backends, networks, devices\n"
                 "  -c           every parameter with its value, origin and help\n"
                 "  -a           the collective algorithms\n"
                 "  --new-id     create a unique id and print its text form (for launchers:\n"
                 "               export it as WEFT_UNIQUE_ID with WEFT_ROOT=host:port)\n");
}

static void print_algo(const char *coll, const char *name, const char *help, void *arg)
{
    (void)arg;
    printf("  %-14s %-8s %s\n", coll, name, help);
}

static void print_rule(const char *platform, const char *coll, const char *layout, int min_ranks, int max_ranks,
                       uint64_t max_bytes, const char *algo, void *arg)
{
    char ranks[32], bytes[32];
    (void)arg;
    if (!min_ranks && !max_ranks)
        snprintf(ranks, sizeof(ranks), "any");
    else
        snprintf(ranks, sizeof(ranks), "%d..%s%.0d", min_ranks ? min_ranks : 1, max_ranks ? "" : "", max_ranks);
    if (max_bytes == UINT64_MAX)
        snprintf(bytes, sizeof(bytes), "any");
    else
        snprintf(bytes, sizeof(bytes), "<= %llu", (unsigned long long)max_bytes);
    printf("  %-8s %-14s %-9s ranks %-8s bytes %-10s -> %s\n", platform, coll, layout, ranks, bytes, algo);
}

static int print_algorithms(void)
{
    printf("collective algorithms, in registry order (WEFT_ALGO=collective:name forces one):\n");
    weft_coll_list_algorithms(print_algo, NULL);
    printf("selection table by platform (cpu: the host backend; gpu: cuda, hip); the first matching rule the\n"
           "communicator admits, then registry order:\n");
    weft_coll_list_table(print_rule, NULL);
    return 0;
}

/* The unique id carries the job's secret: show only that it is set and
 * where its root is. */
static const char *redacted_id(const char *text, char *buf, size_t len)
{
    weft_unique_id_t id;
    weft_uid_info_t info;
    char root[80];
    if (!*text)
        return text;
    if (weft_unique_id_parse(text, &id) != WEFT_OK || weft_uid_decode(&id, &info) != WEFT_OK) {
        snprintf(buf, len, "<set, not a valid id>");
        return buf;
    }
    weft_addr_format(&info.root, root, sizeof(root));
    snprintf(buf, len, "<set, secret hidden; root %s>", root);
    memset(&info, 0, sizeof(info));
    memset(&id, 0, sizeof(id));
    return buf;
}

static int print_params(void)
{
    const weft_param_info_t *p;
    for (size_t i = 0; (p = weft_param_at(i)) != NULL; i++) {
        char hidden[128];
        const char *value = p == weft_param_info(WEFT_P_UNIQUE_ID) ? redacted_id(p->value, hidden, sizeof(hidden))
                                                                   : p->value;
        char range[80] = "";
        if (p->type == WEFT_PARAM_INT && p->has_range)
            snprintf(range, sizeof(range), "; %ld .. %ld%s", p->min, p->max, p->size ? ", K/M/G" : "");
        printf("%-28s = %-12s (%s%s%s)\n    %s\n", p->name, *value ? value : "\"\"",
               p->from_env ? "environment" : "default", range,
               p->valid ? "" : "; environment value invalid, default used", p->help);
    }
    return 0;
}

static int print_build(void)
{
    const char *const *names = weft_gpu_names();
    weft_addr_t local;
    char text[80];

    printf("weft %s\n", PACKAGE_VERSION);
    printf("GPU backends:");
    for (int i = 0; names[i]; i++)
        printf(" %s", names[i]);
    printf("\nnetworks: %s\n", weft_net_built());
    printf("hwloc: %s\n",
#ifdef WEFT_HAVE_HWLOC
           "yes"
#else
           "no"
#endif
    );
    printf("devices:\n");
    for (int i = 0; names[i]; i++) {
        const weft_gpu_ops_t *ops = weft_gpu_find(names[i]);
        int n = 0;
        if (ops->device_count(&n) != WEFT_OK) {
            printf("  %-5s none (%s)\n", names[i], weft_get_last_error());
            continue;
        }
        for (int d = 0; d < n; d++) {
            weft_gpu_ctx_t *ctx;
            weft_gpu_props_t props;
            if (ops->init(d, &ctx) != WEFT_OK) {
                printf("  %-5s %d: cannot initialise\n", names[i], d);
                continue;
            }
            if (ops->props(ctx, &props) == WEFT_OK)
                printf("  %-5s %d: %s, %.1f GiB%s%s\n", names[i], d, props.name,
                       (double)props.total_mem / (1 << 30), props.pci_bus_id[0] ? ", PCI " : "",
                       props.pci_bus_id);
            ops->fini(ctx);
        }
    }
    if (weft_addr_pick_local(&local) == WEFT_OK) {
        weft_addr_format(&local, text, sizeof(text));
        printf("bootstrap address: %s\n", text);
    }
    {
        /* with WEFT_TOPO_FILE: what weft would make of another machine */
        weft_topo_t *topo;
        if (weft_topo_load(NULL, &topo) == WEFT_OK) {
            weft_topo_print(topo, stdout);
            weft_topo_free(topo);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 1)
        return print_build();
    if (argc == 2 && strcmp(argv[1], "-c") == 0)
        return print_params();
    if (argc == 2 && strcmp(argv[1], "-a") == 0)
        return print_algorithms();
    if (argc == 2 && strcmp(argv[1], "--new-id") == 0) {
        weft_unique_id_t id;
        char text[WEFT_UNIQUE_ID_TEXT_BYTES];
        /* The root thread of this id dies with the process: a launcher
         * uses the secret with WEFT_ROOT, where rank 0 runs the root. */
        if (weft_get_unique_id(&id) != WEFT_OK || weft_unique_id_format(&id, text, sizeof(text)) != WEFT_OK) {
            fprintf(stderr, "weft-info: %s\n", weft_get_last_error());
            return 1;
        }
        printf("%s\n", text);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return 2;
}
