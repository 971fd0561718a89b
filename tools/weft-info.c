/* weft-info: what this build of weft has, and its parameters (-c). Uses
 * only the public API (weft.h). */
#include "weft.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: weft-info [-c] [-a] [--new-id] [--check-plan FILE]\n"
                 "  (no option)  build: version, GPU backends, networks, devices\n"
                 "  -c           every parameter with its value, origin and help\n"
                 "  -a           the collective algorithms, and the plans of WEFT_PLAN_DIR\n"
                 "  --check-plan FILE  validate an execution plan without running it (exit 0 when\n"
                 "               valid; otherwise 1 and the JSON path of the first bad field, or of\n"
                 "               the op that would wait forever in a plan that can never complete)\n"
                 "  --new-id     create a unique id and print its text form (for launchers:\n"
                 "               export it as WEFT_UNIQUE_ID with WEFT_ROOT=host:port)\n");
}

static void print_rule(const weft_selection_rule_t *r)
{
    char ranks[32], bytes[32];
    if (!r->min_ranks && !r->max_ranks)
        snprintf(ranks, sizeof(ranks), "any");
    else
        snprintf(ranks, sizeof(ranks), "%d..%s%.0d", r->min_ranks ? r->min_ranks : 1, r->max_ranks ? "" : "",
                 r->max_ranks);
    if (r->max_bytes == UINT64_MAX)
        snprintf(bytes, sizeof(bytes), "any");
    else
        snprintf(bytes, sizeof(bytes), "<= %llu", (unsigned long long)r->max_bytes);
    printf("  %-8s %-14s %-9s ranks %-8s bytes %-10s -> %s\n", r->platform, r->collective, r->layout, ranks, bytes,
           r->algorithm);
}

static void size_range(uint64_t lo, uint64_t hi, char *buf, size_t len)
{
    if (hi == UINT64_MAX)
        snprintf(buf, len, ">= %llu", (unsigned long long)lo);
    else
        snprintf(buf, len, "%llu..%llu", (unsigned long long)lo, (unsigned long long)hi);
}

/* The plans of WEFT_PLAN_DIR, as the collectives see them. */
static int print_plans(void)
{
    const char *dir;
    size_t n, bad;
    weft_plan_dir_summary(&dir, &n, &bad);
    if (!*dir) {
        printf("execution plans: none (WEFT_PLAN_DIR is not set)\n");
        return 0;
    }
    printf("execution plans of WEFT_PLAN_DIR=%s, tried in this order before the table where one matches the\n"
           "call (WEFT_ALGO=collective:plan:NAME forces one):\n", dir);
    printf("  %-24s %-14s %5s %-12s %-6s %-24s %s\n", "name", "collective", "ranks", "placement", "proto",
           "message bytes", "file");
    for (size_t i = 0; i < n; i++) {
        const weft_plan_t *plan;
        const char *file;
        weft_plan_info_t info;
        char range[64];
        if (weft_plan_dir_get(i, &plan, &file) != WEFT_OK || weft_plan_info(plan, &info) != WEFT_OK)
            continue;
        size_range(info.min_bytes, info.max_bytes, range, sizeof(range));
        printf("  %-24s %-14s %5d %-12s %-6s %-24s %s\n", info.name, info.collective, info.nranks,
               info.inplace ? "in place" : "out of place", info.packet ? "LL" : "Simple", range, file);
    }
    if (!n)
        printf("  (none loaded)\n");
    if (bad)
        printf("  %zu file%s not loaded (the log above says why)\n", bad, bad == 1 ? "" : "s");
    return 0;
}

/* --check-plan: loads and validates, runs nothing. */
static int check_plan(const char *path)
{
    weft_plan_t *p;
    weft_plan_info_t info;
    char range[64];
    /* the one message is this tool's (unless the user asked for the log) */
    setenv("WEFT_LOG_LEVEL", "none", 0);
    if (weft_plan_load(path, &p) != WEFT_OK) {
        fprintf(stderr, "weft-info: %s: %s\n", path, weft_get_last_error());
        return 1;
    }
    weft_plan_info(p, &info);
    size_range(info.min_bytes, info.max_bytes, range, sizeof(range));
    printf("%s: valid plan %s: %s, %d ranks, %s, %s, message bytes %s\n", path, info.name, info.collective,
           info.nranks, info.inplace ? "in place" : "out of place", info.packet ? "LL" : "Simple", range);
    if (info.never_completes) {
        /* well-formed, but no execution could end: weft_execute refuses it */
        fprintf(stderr, "weft-info: %s: it can never complete: %s\n", path, info.never_completes);
        weft_plan_destroy(p);
        return 1;
    }
    weft_plan_destroy(p);
    return 0;
}

static int print_algorithms(void)
{
    weft_algorithm_desc_t a;
    weft_selection_rule_t r;
    printf("collective algorithms, in registry order (WEFT_ALGO=collective:name forces one):\n");
    for (size_t i = 0; weft_algorithm_describe(i, &a) == WEFT_OK; i++)
        printf("  %-14s %-8s %s\n", a.collective, a.name, a.help);
    printf("selection table by platform (cpu: the host backend; gpu: cuda, hip); the first matching rule the\n"
           "communicator admits, then registry order:\n");
    for (size_t i = 0; weft_selection_rule_describe(i, &r) == WEFT_OK; i++)
        print_rule(&r);
    return print_plans();
}

/* The unique id carries the job's secret: show only that it is set and
 * where its root is. */
static const char *redacted_id(const char *text, char *buf, size_t len)
{
    weft_unique_id_t id;
    char root[80];
    if (!*text)
        return text;
    if (weft_unique_id_parse(text, &id) != WEFT_OK || weft_unique_id_root(&id, root, sizeof(root)) != WEFT_OK) {
        snprintf(buf, len, "<set, not a valid id>");
        return buf;
    }
    snprintf(buf, len, "<set, secret hidden; root %s>", root);
    memset(&id, 0, sizeof(id));
    return buf;
}

static int print_params(void)
{
    weft_param_desc_t p;
    for (size_t i = 0; weft_param_describe(i, &p) == WEFT_OK; i++) {
        char hidden[128];
        const char *value = strcmp(p.name, "WEFT_UNIQUE_ID") == 0 ? redacted_id(p.value, hidden, sizeof(hidden))
                                                                   : p.value;
        char range[80] = "";
        if (p.is_int && p.has_range)
            snprintf(range, sizeof(range), "; %ld .. %ld%s", p.min, p.max, p.is_size ? ", K/M/G" : "");
        printf("%-28s = %-12s (%s%s%s)\n    %s\n", p.name, *value ? value : "\"\"",
               p.from_env ? "environment" : "default", range,
               p.valid ? "" : "; environment value invalid, default used", p.help);
    }
    return 0;
}

static int print_build(void)
{
    weft_build_info_t build;
    char text[80], *topo;
    char *names, *save = NULL;

    weft_build_info(&build);
    printf("weft %s\n", build.version);
    printf("GPU backends: %s\n", build.gpu_backends);
    printf("networks: %s\n", build.networks);
    printf("hwloc: %s\n", build.hwloc ? "yes" : "no");
    printf("devices:\n");
    if (!(names = strdup(build.gpu_backends)))
        return 1;
    for (char *name = strtok_r(names, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
        int n = 0;
        if (weft_backend_device_count(name, &n) != WEFT_OK || n == 0) {
            printf("  %-5s none (%s)\n", name, weft_get_last_error());
            continue;
        }
        for (int d = 0; d < n; d++) {
            weft_device_info_t dev;
            if (weft_backend_device_info(name, d, &dev) != WEFT_OK) {
                printf("  %-5s %d: cannot initialise\n", name, d);
                continue;
            }
            printf("  %-5s %d: %s, %.1f GiB%s%s\n", name, d, dev.name, (double)dev.total_mem / (1 << 30),
                   dev.pci_bus_id[0] ? ", PCI " : "", dev.pci_bus_id);
        }
    }
    free(names);
    if (weft_bootstrap_local_address(text, sizeof(text)) == WEFT_OK)
        printf("bootstrap address: %s\n", text);
    /* with WEFT_TOPO_FILE: what weft would make of another machine */
    if (weft_topology_describe(&topo) == WEFT_OK) {
        fputs(topo, stdout);
        free(topo);
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
    if (argc == 3 && strcmp(argv[1], "--check-plan") == 0)
        return check_plan(argv[2]);
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return 2;
}
