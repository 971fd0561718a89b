/* The plan parser under mutation: thousands of plans derived from the
 * tree's plans — a field given the wrong type, removed, set out of range
 * or to a huge count, an array cut short, the text truncated or a byte
 * changed — never crash (run it under ASan) and, when refused, are
 * refused with WEFT_ERR_INVALID_ARGUMENT and a message naming where:
 * the JSON path of the bad field, or the line and column of bad text. */
#include "tap/basic.h"
#include "weft.h"

#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS_PER_PLAN 64

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Collects every node (with its parent) of a tree. */
typedef struct {
    json_t *node, *parent;
    const char *key; /* in an object parent; NULL in an array */
    size_t index;
} slot_t;

static size_t collect(json_t *node, json_t *parent, const char *key, size_t index, slot_t *out, size_t n,
                      size_t cap)
{
    if (n < cap) out[n++] = (slot_t){node, parent, key, index};
    if (json_is_object(node)) {
        const char *k;
        json_t *v;
        json_object_foreach(node, k, v) n = collect(v, node, k, 0, out, n, cap);
    } else if (json_is_array(node)) {
        for (size_t i = 0; i < json_array_size(node); i++) n = collect(json_array_get(node, i), node, NULL, i, out, n, cap);
    }
    return n;
}

static void put(const slot_t *s, json_t *v)
{
    if (!s->parent) {
        json_decref(v);
        return;
    }
    if (s->key) json_object_set_new(s->parent, s->key, v);
    else json_array_set_new(s->parent, s->index, v);
}

static json_t *odd_value(void)
{
    static const double huge[] = {-1, 9, 255, 65536, 1e9, 4294967296.0, 1e15, 1.8446744073709552e19, 1e300, 0.5};
    switch (rnd() % 8) {
    case 0: return json_string("x");
    case 1: return json_null();
    case 2: return json_true();
    case 3: return json_array();
    case 4: return json_object();
    default: return json_real(huge[rnd() % (sizeof(huge) / sizeof(huge[0]))]);
    }
}

/* One mutation of the tree. */
static void mutate_tree(json_t *root)
{
    static slot_t slots[200000];
    size_t n = collect(root, NULL, NULL, 0, slots, 0, sizeof(slots) / sizeof(slots[0]));
    slot_t *s = &slots[rnd() % n];
    switch (rnd() % 6) {
    case 0: /* wrong type or out-of-range value */
    case 1:
        put(s, odd_value());
        break;
    case 2: /* a field removed */
        if (s->parent && s->key) json_object_del(s->parent, s->key);
        else put(s, odd_value());
        break;
    case 3: /* an array cut short, or emptied */
        if (json_is_array(s->node) && json_array_size(s->node)) {
            size_t keep = rnd() % json_array_size(s->node);
            while (json_array_size(s->node) > keep) json_array_remove(s->node, json_array_size(s->node) - 1);
        } else {
            put(s, odd_value());
        }
        break;
    case 4: /* a number nudged: off by one (indices just past the end) */
        if (json_is_number(s->node)) put(s, json_real(json_number_value(s->node) + ((rnd() & 1) ? 1 : -1)));
        else put(s, odd_value());
        break;
    default: /* an array grown with copies of its last element */
        if (json_is_array(s->node) && json_array_size(s->node)) {
            json_t *last = json_array_get(s->node, json_array_size(s->node) - 1);
            for (int k = 0; k < 3; k++) json_array_append_new(s->node, json_deep_copy(last));
        } else {
            put(s, odd_value());
        }
        break;
    }
}

/* A refusal names where: "invalid plan: <path>: why" or "... line N column M: why". */
static int names_where(const char *msg)
{
    const char *p = strstr(msg, "invalid plan: ");
    if (!p) return 0;
    p += strlen("invalid plan: ");
    if (!strncmp(p, "line ", 5)) return 1;
    if (!strncmp(p, "(top): ", 7)) return 1;
    /* a path: identifiers, indices and dots, then ": " */
    const char *e = strstr(p, ": ");
    if (!e || e == p) return 0;
    for (const char *q = p; q < e; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || strchr("_.[]", *q))) return 0;
    return 1;
}

int main(void)
{
    static const char *const dirs[] = {"mscclpp", "mscclpp-dsl-units"};
    char path[4096];
    int files = 0, tries = 0, refused = 0, accepted = 0, bad_status = 0, unnamed = 0;
    char first_bad[512] = "";

    /* thousands of refusals: keep the log quiet unless asked */
    setenv("WEFT_LOG_LEVEL", getenv("WEFT_PLAN_FUZZ_LOG") ? "error" : "none", 1);
    plan(4);
    for (size_t d = 0; d < 2; d++) {
        struct dirent **names;
        snprintf(path, sizeof(path), "%s/t/coll/plans/%s", TOP_SRCDIR, dirs[d]);
        int n = scandir(path, &names, NULL, alphasort);
        if (n < 0) bail("cannot list %s", path);
        for (int i = 0; i < n; i++) {
            json_error_t jerr;
            json_t *orig;
            if (!strstr(names[i]->d_name, ".json")) {
                free(names[i]);
                continue;
            }
            snprintf(path, sizeof(path), "%s/t/coll/plans/%s/%s", TOP_SRCDIR, dirs[d], names[i]->d_name);
            free(names[i]);
            orig = json_load_file(path, JSON_DECODE_INT_AS_REAL, &jerr);
            if (!orig) bail("%s: %s", path, jerr.text);
            files++;
            for (int r = 0; r < ROUNDS_PER_PLAN; r++) {
                json_t *m = json_deep_copy(orig);
                char *text;
                weft_plan_t *p = NULL;
                int nmut = 1 + (int)(rnd() % 3);
                for (int k = 0; k < nmut; k++) mutate_tree(m);
                text = json_dumps(m, JSON_COMPACT | JSON_REAL_PRECISION(17));
                json_decref(m);
                if (!text) continue;
                if (r % 8 == 7) { /* text-level: truncated, or one byte changed */
                    size_t len = strlen(text);
                    if (rnd() & 1) text[rnd() % (len ? len : 1)] = '\0';
                    else if (len) text[rnd() % len] = "{}[],:\"0x-"[rnd() % 10];
                }
                tries++;
                weft_status_t st = weft_plan_load_string(text, &p);
                if (st == WEFT_OK) {
                    accepted++;
                    weft_plan_destroy(p);
                } else {
                    refused++;
                    if (st != WEFT_ERR_INVALID_ARGUMENT) bad_status++;
                    if (!names_where(weft_get_last_error())) {
                        if (!unnamed++) snprintf(first_bad, sizeof(first_bad), "%s", weft_get_last_error());
                    }
                }
                free(text);
            }
            json_decref(orig);
        }
        free(names);
    }
    diag("%d mutated plans: %d refused, %d still valid", tries, refused, accepted);
    ok(tries >= 3000, "%d mutated plans from %d files", tries, files);
    is_int(0, bad_status, "every refusal is WEFT_ERR_INVALID_ARGUMENT");
    ok(unnamed == 0, "every refusal names a path or a text position%s%s", unnamed ? ": " : "", first_bad);
    ok(refused > tries / 2, "most mutations are refused (%d of %d)", refused, tries);
    return test_done();
}
