/*
 * Replays a fuzz target's seed corpus (and any files or directories named
 * on the command line) through its LLVMFuzzerTestOneInput, as a TAP test:
 * the targets and their corpora are exercised by every build, under the
 * sanitizers in CI, also where no libFuzzer exists. An input that breaks
 * an invariant or the library aborts the test, naming the input first.
 */
#include "config.h"
#include "fuzz.h"
#include "tap/basic.h"

#include <dirent.h>
#include <sys/stat.h>

#ifndef FUZZ_CORPUS
#error "FUZZ_CORPUS names the seed directory"
#endif

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

typedef struct {
    char **path;
    int n, cap;
} list_t;

static void add(list_t *l, const char *path)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->path = realloc(l->path, (size_t)l->cap * sizeof(*l->path));
        if (!l->path)
            bail("out of memory");
    }
    l->path[l->n++] = strdup(path);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect(list_t *l, const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    if (stat(path, &st) != 0)
        bail("cannot read %s", path);
    if (!S_ISDIR(st.st_mode)) {
        add(l, path);
        return;
    }
    if (!(d = opendir(path)))
        bail("cannot open %s", path);
    while ((e = readdir(d))) {
        char full[4096];
        if (e->d_name[0] == '.')
            continue;
        snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
        add(l, full);
    }
    closedir(d);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    if (!f)
        return NULL;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            buf = realloc(buf, cap);
            if (!buf)
                break;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        if (got == 0)
            break;
        n += got;
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    list_t l = {0};
    LLVMFuzzerInitialize(&argc, &argv);
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            collect(&l, argv[i]);
    } else {
        collect(&l, FUZZ_CORPUS);
    }
    qsort(l.path, (size_t)l.n, sizeof(*l.path), by_name);
    plan(l.n + 1);
    ok(l.n > 0, "the seed corpus %s has inputs (%d)", argc > 1 ? argv[1] : FUZZ_CORPUS, l.n);
    for (int i = 0; i < l.n; i++) {
        size_t len = 0;
        uint8_t *data = slurp(l.path[i], &len);
        const char *name = strrchr(l.path[i], '/');
        if (!data) {
            ok(0, "read %s", l.path[i]);
            continue;
        }
        diag("input %s (%zu bytes)", l.path[i], len);
        /* a copy of exactly len bytes, so an overread is the sanitizer's to see */
        uint8_t *exact = malloc(len ? len : 1);
        memcpy(exact, data, len);
        LLVMFuzzerTestOneInput(exact, len);
        ok(1, "%s: the target returned", name ? name + 1 : l.path[i]);
        free(exact);
        free(data);
        free(l.path[i]);
    }
    free(l.path);
    return test_done();
}
