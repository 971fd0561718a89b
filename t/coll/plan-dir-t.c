/* Plans behind the collectives (WEFT_PLAN_DIR), forked ranks on the host
 * backend: a plan whose collective, rank count, in-place flag and sizes
 * match a call runs it (the plan's run counter moves, the debug log names
 * it) and gives the right result; a call no plan matches (sizes off the
 * chunking, out of place) runs the built-in algorithms, also right; a bad
 * file in the directory is reported naming the file and the JSON path of
 * the bad field, and the rest keeps working; WEFT_ALGO=allreduce:plan:NAME
 * forces a plan over the others, and one naming no plan is ignored. */
#include "tap/basic.h"
#include "collref.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static weft_unique_id_t id;
static char dir[256];

typedef struct {
    const char *algo; /* WEFT_ALGO, or NULL */
    int forced;       /* 1: the packet plan forced; 2: a plan that is not there */
} dir_case_t;

static const weft_plan_dir_entry_t *entry(const char *base)
{
    for (size_t i = 0; i < weft_plan_dir_count(); i++)
        if (!strcmp(weft_plan_dir_entry(i)->base, base)) return weft_plan_dir_entry(i);
    return NULL;
}

static uint64_t runs(const weft_plan_dir_entry_t *e)
{
    return e ? __atomic_load_n(&e->plan->runs, __ATOMIC_RELAXED) : 0;
}

/* One collective, checked; @p want_plan: the entry that must run it (NULL: none may). */
static int call(weft_comm_t *comm, weft_stream_t *s, int rank, int nranks, const char *what, int allgather,
                size_t bytes, int inplace, weft_dtype_t t, weft_redop_t op, const weft_plan_dir_entry_t *want_plan)
{
    size_t es = weft_dtype_size(t), count = bytes / es, out_bytes = allgather ? bytes * (size_t)nranks : bytes;
    char *out, *in, *want = malloc(out_bytes);
    uint64_t before[8];
    int fails = 0;
    weft_status_t st;
    size_t np = weft_plan_dir_count();
    if (!want || weft_mem_alloc(comm, 2 * out_bytes + 64, (void **)&out) != WEFT_OK)
        return rank_fail("alloc: %s", weft_get_last_error());
    in = !inplace ? out + out_bytes + 64 : allgather ? out + (size_t)rank * bytes : out;
    for (size_t i = 0; i < count; i++) collref_input(t, op, rank, i, in + i * es);
    for (size_t i = 0; i < out_bytes / es; i++) {
        if (allgather) collref_input(t, op, (int)(i / count), i % count, want + i * es);
        else collref_reduced(t, op, nranks, i, want + i * es);
    }
    for (size_t i = 0; i < np && i < 8; i++) before[i] = runs(weft_plan_dir_entry(i));
    rank_step("%s", what);
    st = allgather ? weft_allgather(in, out, count, t, comm, s) : weft_allreduce(in, out, count, t, op, comm, s);
    if (st == WEFT_OK) st = weft_stream_synchronize(s);
    if (st != WEFT_OK) {
        fails += rank_fail("%s: %s: %s", what, weft_status_string(st), weft_get_last_error());
    } else {
        for (size_t i = 0; i < out_bytes / es; i++)
            if (memcmp(out + i * es, want + i * es, es)) {
                fails += rank_fail("%s: element %zu wrong", what, i);
                break;
            }
        for (size_t i = 0; i < np && i < 8; i++) {
            const weft_plan_dir_entry_t *e = weft_plan_dir_entry(i);
            uint64_t d = runs(e) - before[i];
            if (d != (e == want_plan))
                fails += rank_fail("%s: plan %s ran %llu times, want %d", what, e->base, (unsigned long long)d,
                                   e == want_plan);
        }
    }
    weft_mem_free(comm, out);
    free(want);
    return fails;
}

static int log_has(const char *needle1, const char *needle2)
{
    char path[512], line[2048];
    int found = 0;
    FILE *f;
    snprintf(path, sizeof(path), "%s/log-%d", dir, (int)getpid());
    if (!(f = fopen(path, "r"))) return 0;
    while (!found && fgets(line, sizeof(line), f)) found = strstr(line, needle1) && strstr(line, needle2);
    fclose(f);
    return found;
}

static int rank_main(int rank, int nranks, void *arg)
{
    const dir_case_t *dc = arg;
    char logspec[512];
    weft_comm_t *comm;
    weft_stream_t *s;
    const weft_plan_dir_entry_t *ar, *pkt, *ag;
    int fails = 0;

    snprintf(logspec, sizeof(logspec), "%s/log-%%p", dir);
    setenv("WEFT_PLAN_DIR", dir, 1);
    setenv("WEFT_LOG_FILE", logspec, 1);
    setenv("WEFT_LOG_LEVEL", "debug", 1);
    setenv("WEFT_LOG_SUBSYS", "coll", 1);
    if (dc->algo) setenv("WEFT_ALGO", dc->algo, 1);
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if (weft_plan_dir_count() != 3 || weft_plan_dir_failed() != 1)
        return rank_fail("WEFT_PLAN_DIR: %zu plans loaded and %zu refused, want 3 and 1", weft_plan_dir_count(),
                         weft_plan_dir_failed());
    if (!strstr(weft_get_last_error(), "bad.json") ||
        !strstr(weft_get_last_error(), "gpus[1].threadblocks[0].ops[1].src_buff[0].index: 9 >= input_chunks 8"))
        fails += rank_fail("the bad plan's error names no file and path: %s", weft_get_last_error());
    ar = entry("allreduce");
    pkt = entry("allreduce_packet");
    ag = entry("transfer_pack");
    if (!ar || !pkt || !ag) return rank_fail("the plans of the directory are not all listed");

    if (dc->forced == 1) {
        /* the packet plan takes what allreduce.json would */
        fails += call(comm, s, rank, nranks, "forced: 1 KiB in place", 0, 1024, 1, WEFT_FLOAT32, WEFT_SUM, pkt);
        fails += call(comm, s, rank, nranks, "forced: 48 B in place (no plan fits)", 0, 48, 1, WEFT_FLOAT32,
                      WEFT_SUM, NULL);
    } else {
        fails += call(comm, s, rank, nranks, "1 KiB in place, f32 sum", 0, 1024, 1, WEFT_FLOAT32, WEFT_SUM, ar);
        fails += call(comm, s, rank, nranks, "4 KiB in place, i32 max", 0, 4096, 1, WEFT_INT32, WEFT_MAX, ar);
        fails += call(comm, s, rank, nranks, "1 KiB in place, f64 prod", 0, 1024, 1, WEFT_FLOAT64, WEFT_PROD, ar);
        /* 64 B: 4 alignment units, which do not cut into allreduce.json's 16 chunks */
        fails += call(comm, s, rank, nranks, "64 B in place", 0, 64, 1, WEFT_FLOAT32, WEFT_SUM, pkt);
        fails += call(comm, s, rank, nranks, "48 B in place (no plan fits)", 0, 48, 1, WEFT_FLOAT32, WEFT_SUM,
                      NULL);
        fails += call(comm, s, rank, nranks, "1 KiB out of place (plans are in place)", 0, 1024, 0, WEFT_FLOAT32,
                      WEFT_SUM, NULL);
        fails += call(comm, s, rank, nranks, "allgather 32 B in place", 1, 32, 1, WEFT_UINT8, WEFT_SUM, ag);
        fails += call(comm, s, rank, nranks, "allgather 32 B out of place", 1, 32, 0, WEFT_UINT8, WEFT_SUM, NULL);
        if (!log_has("allreduce of 1024 bytes: plan allreduce", "allreduce.json"))
            fails += rank_fail("the debug log does not name the plan that ran");
    }
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    if (!log_has("bad.json", "src_buff[0].index: 9 >= input_chunks 8"))
        fails += rank_fail("the log does not name the bad file and the bad field");
    if (dc->forced == 2 && !log_has("WEFT_ALGO names plan 'nosuch'", "ignored"))
        fails += rank_fail("a forced plan that is not there is not reported");
    return fails;
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[65536];
    size_t n;
    int ok_ = in && out;
    while (ok_ && (n = fread(buf, 1, sizeof(buf), in)) > 0) ok_ = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out)) ok_ = 0;
    return ok_;
}

/* rank 1's copy reads input chunk 9 of 8 */
static const char *bad =
    "{\"name\":\"bad\",\"collective\":\"allreduce\",\"protocol\":\"Simple\",\"inplace\":true,"
    "\"gpus\":["
    "{\"id\":0,\"input_chunks\":8,\"output_chunks\":8,\"scratch_chunks\":0,"
    " \"channels\":[{\"channel_type\":\"memory\",\"connected_to\":[1]}],\"remote_buffers\":[],\"semaphores\":[],"
    " \"threadblocks\":[{\"id\":0,\"channels\":[{\"channel_type\":\"memory\",\"channel_ids\":[0]}],"
    "   \"ops\":[{\"name\":\"signal\",\"channel_type\":\"memory\",\"channel_ids\":[0]}]}]},"
    "{\"id\":1,\"input_chunks\":8,\"output_chunks\":8,\"scratch_chunks\":0,"
    " \"channels\":[{\"channel_type\":\"memory\",\"connected_to\":[0]}],\"remote_buffers\":[],\"semaphores\":[],"
    " \"threadblocks\":[{\"id\":0,\"channels\":[{\"channel_type\":\"memory\",\"channel_ids\":[0]}],"
    "   \"ops\":[{\"name\":\"wait\",\"channel_type\":\"memory\",\"channel_ids\":[0]},"
    "          {\"name\":\"copy\",\"src_buff\":[{\"type\":\"i\",\"index\":9,\"size\":1}],"
    "           \"dst_buff\":[{\"type\":\"o\",\"index\":0,\"size\":1}]}]}]}]}";

int main(void)
{
    static const dir_case_t plain = {NULL, 0}, forced = {"allreduce:plan:allreduce_pkt", 1},
                            missing = {"allreduce:plan:nosuch", 2};
    static const char *const files[] = {"allreduce.json", "allreduce_packet.json", "transfer_pack.json"};
    char from[4400], to[4400];
    FILE *f;

    /* it fills and reads its buffers from the host: the host backend,
     * whatever the environment names (as coll-t) */
    setenv("WEFT_BACKEND", "host", 1);
    snprintf(dir, sizeof(dir), "%s/weft-plan-dir-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    if (mkdtemp(strcat(dir, "-XXXXXX")) == NULL) bail("cannot create a directory under /tmp");
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(from, sizeof(from), "%s/t/coll/plans/mscclpp/%s", TOP_SRCDIR, files[i]);
        snprintf(to, sizeof(to), "%s/%s", dir, files[i]);
        if (!copy_file(from, to)) bail("cannot copy %s to %s", from, to);
    }
    snprintf(to, sizeof(to), "%s/bad.json", dir);
    if (!(f = fopen(to, "w")) || fputs(bad, f) < 0 || fclose(f)) bail("cannot write %s", to);
    snprintf(to, sizeof(to), "%s/README.txt", dir); /* not a plan: not read */
    if (!(f = fopen(to, "w")) || fputs("{", f) < 0 || fclose(f)) bail("cannot write %s", to);

    plan(3);
    ok(run_ranks(2, 60000, rank_main, (void *)&plain, NULL),
       "matching calls run the directory's plans (allreduce, packet allreduce, allgather), results right; "
       "others the built-ins; the bad file is named with its bad field");
    ok(run_ranks(2, 60000, rank_main, (void *)&forced, NULL),
       "WEFT_ALGO=allreduce:plan:allreduce_pkt forces the packet plan over allreduce.json");
    ok(run_ranks(2, 60000, rank_main, (void *)&missing, NULL),
       "WEFT_ALGO naming a plan the directory lacks is reported and ignored");
    {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0) diag("could not remove %s", dir);
    }
    return test_done();
}
