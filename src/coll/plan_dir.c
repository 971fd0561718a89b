/*
 * Plans behind the collectives: the plans of WEFT_PLAN_DIR, loaded once per
 * process, and the choice of one for a collective call (plan.h).
 *
 * Every rank takes the same decision for the same call: the match depends
 * on the collective, the rank count, the sizes checked against every
 * rank's chunking, the in-place placement (the same on every rank, as
 * NCCL requires), the type and op, and the backend (the same everywhere).
 */
#include "config.h"

#include "plan.h"

#include "coll.h"
#include "comm.h"
#include "log.h"
#include "param.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    weft_plan_dir_entry_t e;
    weft_plan_t *plan;
} dir_plan_t;

static dir_plan_t *plans;
static size_t nplans, nfailed;
static pthread_once_t dir_once = PTHREAD_ONCE_INIT;

static int is_json(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 5 && strcmp(d->d_name + n - 5, ".json") == 0 && d->d_name[0] != '.';
}

/* Loads every *.json of the directory, in name order. The plans live as
 * long as the process (executors built for them go with their
 * communicators). */
static void dir_load(void)
{
    const char *dir = weft_param_str(WEFT_P_PLAN_DIR);
    struct dirent **names = NULL;
    int n;
    if (!dir || !*dir)
        return;
    if ((n = scandir(dir, &names, is_json, alphasort)) < 0) {
        weft_error(WEFT_SUB_COLL, "WEFT_PLAN_DIR %s cannot be listed: %s; no plan is used", dir, strerror(errno));
        return;
    }
    plans = calloc(n ? (size_t)n : 1, sizeof(*plans));
    for (int i = 0; i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]->d_name) + 2;
        char *path = malloc(len), *base = strdup(names[i]->d_name);
        weft_plan_t *p = NULL;
        weft_status_t status;
        if (!plans || !path || !base) {
            free(path);
            free(base);
            free(names[i]);
            nfailed++;
            continue;
        }
        snprintf(path, len, "%s/%s", dir, names[i]->d_name);
        base[strlen(base) - 5] = '\0';
        if ((status = weft_plan_load(path, &p)) != WEFT_OK) {
            /* the parser's message has the JSON path; this one the file
             * (copied: the last error is the buffer weft_error writes) */
            char why[1024];
            snprintf(why, sizeof(why), "%s", weft_get_last_error());
            weft_error(WEFT_SUB_COLL, "WEFT_PLAN_DIR: plan file %s is not used: %s", path, why);
            free(path);
            free(base);
            nfailed++;
        } else {
            plans[nplans].e.file = path;
            plans[nplans].e.base = base;
            plans[nplans].e.plan = p;
            plans[nplans].plan = p;
            weft_debug(WEFT_SUB_COLL, "WEFT_PLAN_DIR: plan %s (%s, %u ranks) from %s", p->name, p->collective,
                       p->ngpus, path);
            nplans++;
        }
        free(names[i]);
    }
    free(names);
}

const char *weft_plan_dir_path(void)
{
    const char *dir = weft_param_str(WEFT_P_PLAN_DIR);
    return dir ? dir : "";
}

size_t weft_plan_dir_count(void)
{
    pthread_once(&dir_once, dir_load);
    return nplans;
}

size_t weft_plan_dir_failed(void)
{
    pthread_once(&dir_once, dir_load);
    return nfailed;
}

const weft_plan_dir_entry_t *weft_plan_dir_entry(size_t i)
{
    pthread_once(&dir_once, dir_load);
    return i < nplans ? &plans[i].e : NULL;
}

/* The plan's collective as a weft_coll_t, or -1. */
static int plan_coll(const struct weft_plan *p)
{
    return weft_coll_from_name(p->collective);
}

/* Does @p p take this call? Sizes and placement of the call computed by the caller. */
static int matches(const weft_comm_t *comm, const struct weft_plan *p, int coll, int inplace, size_t in_bytes,
                   size_t out_bytes, weft_dtype_t dtype, weft_redop_t op)
{
    char why[512];
    return plan_coll(p) == coll && (int)p->ngpus == comm->nranks && !!p->inplace == !!inplace &&
           weft_plan_sizes_fit(p, in_bytes, out_bytes) && weft_plan_admits(comm, p, dtype, op, why, sizeof(why)) == WEFT_OK;
}

static int forced_warned;

int weft_plan_coll_run(weft_comm_t *comm, weft_stream_t *stream, int coll, const char *forced, const void *in,
                       void *out, size_t bytes, weft_dtype_t dtype, weft_redop_t op, weft_status_t *status)
{
    size_t n = (size_t)comm->nranks, in_bytes, out_bytes, total;
    const char *cin = in;
    char *cout = out;
    int inplace;
    dir_plan_t *use = NULL;

    pthread_once(&dir_once, dir_load);
    if (!nplans || !weft_mul_size(bytes, n, &total))
        return 0;
    switch (coll) {
    case WEFT_COLL_ALLREDUCE:
        in_bytes = out_bytes = bytes;
        inplace = cin == cout;
        break;
    case WEFT_COLL_ALLGATHER:
        in_bytes = bytes;
        out_bytes = total;
        inplace = cin == cout + (size_t)comm->rank * bytes;
        break;
    case WEFT_COLL_REDUCE_SCATTER:
        in_bytes = total;
        out_bytes = bytes;
        inplace = cin + (size_t)comm->rank * bytes == cout;
        break;
    case WEFT_COLL_ALLTOALL:
        in_bytes = out_bytes = total;
        inplace = cin == cout;
        break;
    default:
        return 0; /* rooted collectives: plans carry no root */
    }
    if (forced) {
        int found = 0;
        for (size_t i = 0; i < nplans && !use; i++) {
            const struct weft_plan *p = plans[i].plan;
            if (strcmp(p->name, forced) && strcmp(plans[i].e.base, forced))
                continue;
            found = 1;
            if (matches(comm, p, coll, inplace, in_bytes, out_bytes, dtype, op))
                use = &plans[i];
        }
        if (!found && !__atomic_exchange_n(&forced_warned, 1, __ATOMIC_RELAXED))
            weft_warn(WEFT_SUB_COLL, "WEFT_ALGO names plan '%s', which WEFT_PLAN_DIR (%s) does not hold; ignored",
                      forced, weft_plan_dir_path());
    }
    for (size_t i = 0; i < nplans && !use; i++)
        if (matches(comm, plans[i].plan, coll, inplace, in_bytes, out_bytes, dtype, op))
            use = &plans[i];
    if (!use)
        return 0;
    weft_debug(WEFT_SUB_COLL, "%s of %zu bytes: plan %s (%s)", weft_coll_name((weft_coll_t)coll), bytes,
               use->plan->name, use->e.file);
    *status = weft_execute(comm, use->plan, in, out, in_bytes, out_bytes, dtype, op, stream);
    return 1;
}

weft_status_t weft_plan_dir_summary(const char **dir, size_t *loaded, size_t *failed)
{
    if (dir)
        *dir = weft_plan_dir_path();
    if (loaded)
        *loaded = weft_plan_dir_count();
    if (failed)
        *failed = weft_plan_dir_failed();
    return WEFT_OK;
}

weft_status_t weft_plan_dir_get(size_t i, const weft_plan_t **plan, const char **file)
{
    const weft_plan_dir_entry_t *e;
    if (!plan || !file)
        return WEFT_ERR_INVALID_ARGUMENT;
    if (!(e = weft_plan_dir_entry(i)))
        return WEFT_ERR_NOT_FOUND;
    *plan = e->plan;
    *file = e->file;
    return WEFT_OK;
}
