/*
 * Fuzz target: the execution-plan parser and validator (src/coll/plan.c),
 * what weft_plan_load reads from a user's file or WEFT_PLAN_DIR. The input
 * is the JSON text given to weft_plan_load_string.
 * Invariants: the answer is WEFT_OK or WEFT_ERR_INVALID_ARGUMENT (or
 * WEFT_ERR_NO_MEMORY); a refused plan leaves the output untouched and says
 * why in the last error ("invalid plan: <JSON path or line>: ..."); an
 * accepted plan keeps the validator's promise, checked here again
 * independently: every index the executor follows (a block's channels
 * and remote buffers, an op's channels, semaphores, barrier, buffer
 * chunks, remote and switch targets) lies inside what the plan declares,
 * and the size checks answer without crashing.
 */
#include "config.h"
#include "fuzz.h"
#include "plan.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_env();
    return 0;
}

static void check_ref(const struct weft_plan *p, const weft_plan_gpu_t *gpu, const weft_plan_ref_t *r)
{
    uint64_t end = (uint64_t)r->index + r->size;
    FUZZ_CHECK(r->type < 3, "a reference to buffer type %u", r->type);
    if (r->kind == WEFT_PLAN_REF_LOCAL) {
        FUZZ_CHECK(end <= gpu->chunks[r->type], "local chunks %llu > %u", (unsigned long long)end,
                   gpu->chunks[r->type]);
    } else if (r->kind == WEFT_PLAN_REF_REMOTE) {
        FUZZ_CHECK(r->target < gpu->nrbuf, "remote buffer %u of %u", r->target, gpu->nrbuf);
        FUZZ_CHECK(gpu->rbuf[r->target].rank < p->ngpus, "remote buffer of rank %u", gpu->rbuf[r->target].rank);
        FUZZ_CHECK(end <= p->gpus[gpu->rbuf[r->target].rank].chunks[r->type], "remote chunks past the end");
    } else {
        FUZZ_CHECK(r->kind == WEFT_PLAN_REF_SWITCH, "reference kind %u", r->kind);
        FUZZ_CHECK(r->target < gpu->nsw, "switch channel %u of %u", r->target, gpu->nsw);
        for (uint32_t k = 0; k < gpu->sw[r->target].nranks; k++) {
            uint32_t q = gpu->sw[r->target].ranks[k];
            FUZZ_CHECK(q < p->ngpus && end <= p->gpus[q].chunks[r->type], "switch chunks past a rank's end");
        }
    }
}

static void check_plan(const struct weft_plan *p)
{
    weft_plan_info_t info;
    FUZZ_CHECK(weft_plan_info(p, &info) == WEFT_OK && info.name && info.collective, "info");
    FUZZ_CHECK(p->ngpus >= 1 && p->ngpus <= WEFT_PLAN_MAX_RANKS && p->align > 0, "ranks %u, alignment %u",
               p->ngpus, p->align);
    for (uint32_t g = 0; g < p->ngpus; g++) {
        const weft_plan_gpu_t *gpu = &p->gpus[g];
        for (int t = 1; t < WEFT_PLAN_CHAN_TYPES; t++)
            if (t != WEFT_PLAN_CHAN_SWITCH)
                for (uint32_t c = 0; c < gpu->nchan[t]; c++)
                    FUZZ_CHECK(gpu->chan[t][c] < p->ngpus && gpu->chan[t][c] != g, "gpus[%u] channel to %u", g,
                               gpu->chan[t][c]);
        for (uint32_t k = 0; k < gpu->nrbuf; k++)
            FUZZ_CHECK(gpu->rbuf[k].rank < p->ngpus && gpu->rbuf[k].type < 3, "gpus[%u] remote buffer %u", g, k);
        FUZZ_CHECK(gpu->nsem <= WEFT_PLAN_MAX_SEMAPHORES, "semaphores %u", gpu->nsem);
        for (uint32_t b = 0; b < gpu->ntb; b++) {
            const weft_plan_tb_t *tb = &gpu->tb[b];
            for (int t = 1; t < WEFT_PLAN_CHAN_TYPES; t++) {
                uint32_t lim = t == WEFT_PLAN_CHAN_SWITCH ? gpu->nsw : gpu->nchan[t];
                for (uint32_t c = 0; c < tb->nchan[t]; c++)
                    FUZZ_CHECK(tb->chan[t][c] < lim, "gpus[%u] block %u channel %u >= %u", g, b, tb->chan[t][c], lim);
                for (uint32_t c = 0; c < tb->nrbuf[t]; c++)
                    FUZZ_CHECK(tb->rbuf[t][c] < gpu->nrbuf, "gpus[%u] block %u remote buffer", g, b);
            }
            for (uint32_t i = 0; i < tb->nops; i++) {
                const weft_plan_op_t *o = &tb->ops[i];
                FUZZ_CHECK(o->code < WEFT_PLAN_OP_COUNT && o->chan_type < WEFT_PLAN_CHAN_TYPES, "op code");
                FUZZ_CHECK(o->nchan <= WEFT_PLAN_MAX_OP_CHANNELS && o->nsrc <= WEFT_PLAN_MAX_OP_BUFFERS &&
                               o->ndst <= WEFT_PLAN_MAX_OP_BUFFERS && o->nsem <= WEFT_PLAN_MAX_OP_SEMAPHORES,
                           "op counts");
                for (uint32_t c = 0; c < o->nchan; c++)
                    FUZZ_CHECK(o->chan[c] < tb->nchan[o->chan_type], "op channel %u >= %u", o->chan[c],
                               tb->nchan[o->chan_type]);
                for (uint32_t s = 0; s < o->nsem; s++)
                    FUZZ_CHECK(o->sem[s] < gpu->nsem, "op semaphore %u >= %u", o->sem[s], gpu->nsem);
                for (uint32_t s = 0; s < o->nsrc; s++) check_ref(p, gpu, &o->src[s]);
                for (uint32_t s = 0; s < o->ndst; s++) check_ref(p, gpu, &o->dst[s]);
                FUZZ_CHECK(o->tbg_size >= 1 && o->tbg_id < o->tbg_size, "thread-block group %u of %u", o->tbg_id,
                           o->tbg_size);
                if (o->code == WEFT_PLAN_OP_BARRIER)
                    FUZZ_CHECK(o->barrier_id < WEFT_PLAN_MAX_BARRIERS, "barrier %u", o->barrier_id);
                if (o->code == WEFT_PLAN_OP_PIPELINE)
                    FUZZ_CHECK(o->nops <= tb->nops - i - 1 && o->unit_size > 0, "pipeline body");
            }
        }
    }
    /* size checks answer for any sizes, quietly */
    (void)weft_plan_check_message(p, 0, 0);
    (void)weft_plan_check_message(p, (size_t)p->align * 16, (size_t)p->align * 16 * p->ngpus);
    (void)weft_plan_check_message(p, SIZE_MAX, SIZE_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    weft_plan_t *plan = (weft_plan_t *)(uintptr_t)0x5c5c;
    weft_status_t status;
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    status = weft_plan_load_string(text, &plan);
    FUZZ_CHECK(status == WEFT_OK || status == WEFT_ERR_INVALID_ARGUMENT || status == WEFT_ERR_NO_MEMORY,
               "weft_plan_load_string gave %d", status);
    if (status == WEFT_OK) {
        check_plan(plan);
        FUZZ_CHECK(weft_plan_destroy(plan) == WEFT_OK, "destroy");
    } else {
        FUZZ_CHECK(plan == (weft_plan_t *)(uintptr_t)0x5c5c, "a refused plan wrote its output");
        FUZZ_CHECK(status != WEFT_ERR_INVALID_ARGUMENT || strncmp(weft_get_last_error(), "invalid plan: ", 14) == 0,
                   "a refused plan's message names no path: '%s'", weft_get_last_error());
    }
    free(text);
    return 0;
}
