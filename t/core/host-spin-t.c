/* The host backend's wait policy (spin in place, then yield, then sleep)
 * and the block pool's hand-off under it: launches of one and of several
 * blocks, copies and events stay in stream order, whatever the budget. */
#include "config.h"
#include "tap/basic.h"
#include "backend.h"
#include "host.h"
#include "weft.h"

#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int *arrived;  /* blocks of this launch that have arrived */
    int *log;      /* the launch order, written by block 0 */
    int *nlog;
    int id;
} step_args_t;

/* Every block waits for all of its launch's blocks (only correct if they
 * run at once); block 0 then appends the launch's id to the log. */
static void step(const weft_kctx_t *k, void *a)
{
    step_args_t *s = a;
    __atomic_fetch_add(s->arrived, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(s->arrived, __ATOMIC_ACQUIRE) < (int)k->nblocks)
        sched_yield();
    if (k->block == 0)
        s->log[(*s->nlog)++] = s->id;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void on_alarm(int sig)
{
    static const char msg[] = "Bail out! host-spin-t: a stream did not finish in 120 s (a lost wake-up?)\n";
    (void)sig;
    (void)!write(1, msg, sizeof(msg) - 1);
    _exit(1);
}

/* 600 launches (one block, or 2..5 blocks meeting), a copy after every
 * tenth, an event at the end: all in order and complete. */
static int run_stream(const weft_gpu_ops_t *ops, weft_gpu_ctx_t *ctx)
{
    enum { N = 600 };
    static int arrived[N], log[N], nlog;
    static step_args_t args[N];
    static char src[N], dst[N];
    weft_gpu_stream_t *s;
    weft_gpu_event_t *e;
    int good = 1;
    memset(arrived, 0, sizeof(arrived));
    nlog = 0;
    if (ops->stream_create(ctx, &s) != WEFT_OK || ops->event_create(ctx, &e) != WEFT_OK)
        return 0;
    for (int i = 0; i < N; i++) {
        weft_gpu_launch_t l = {.name = "step", .host_fn = step, .nblocks = i % 3 == 0 ? 1u : 2u + (unsigned)i % 4,
                               .nthreads = 1, .args = &args[i], .args_size = sizeof(args[i])};
        args[i] = (step_args_t){&arrived[i], log, &nlog, i};
        src[i] = (char)(i * 7 + 1);
        good &= ops->launch(ctx, &l, s) == WEFT_OK;
        if (i % 10 == 9)
            good &= ops->memcpy_async(ctx, dst + i - 9, src + i - 9, 10, s) == WEFT_OK;
    }
    ops->event_record(ctx, e, s);
    if (ops->stream_sync(ctx, s) != WEFT_OK || ops->event_query(ctx, e) != WEFT_OK)
        good = 0;
    good &= nlog == N && memcmp(src, dst, N) == 0;
    for (int i = 0; i < N && good; i++)
        good &= log[i] == i;
    ops->event_destroy(ctx, e);
    ops->stream_destroy(ctx, s);
    return good;
}

int main(void)
{
    const weft_gpu_ops_t *ops = weft_gpu_find("host");
    weft_gpu_ctx_t *ctx;
    cpu_set_t set;
    int cpus, spun, all;
    double t0;

    plan(12);
    signal(SIGALRM, on_alarm);
    alarm(120);
    if (!ops || ops->init(0, &ctx) != WEFT_OK)
        bail("the host backend does not initialise");

    weft_host_spin_init(-1);
    cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    /* no communicator has noted its ranks yet: the core count alone */
    is_int(cpus >= 4 ? WEFT_HOST_SPIN_AUTO_NS : 0, (int)weft_host_spin_budget(),
           "auto, ranks unknown: %d ns with %d cores to run on (%d from 4 cores up, none below)",
           (int)weft_host_spin_budget(), cpus, WEFT_HOST_SPIN_AUTO_NS);
    /* as many ranks as cores: the thread that runs each rank's kernels
     * has a core, so waits spin */
    weft_gpu_note_local_ranks(cpus);
    is_int(WEFT_HOST_SPIN_AUTO_NS, (int)weft_host_spin_budget(), "auto, %d ranks on %d cores: waits spin", cpus,
           cpus);
    /* more ranks than cores: no spinning below 4 cores (the rank count
     * only grows) */
    weft_gpu_note_local_ranks(cpus + 1);
    is_int(cpus >= 4 ? WEFT_HOST_SPIN_AUTO_NS : 0, (int)weft_host_spin_budget(),
           "auto, %d ranks on %d cores: waits spin only from 4 cores up", cpus + 1, cpus);
    weft_gpu_note_local_ranks(1);
    is_int(cpus + 1, weft_gpu_local_ranks(), "the largest rank count noted stays");

    weft_host_spin_init(0);
    ok(weft_host_poll_step(1, 3) && weft_host_poll_step(2, 3) && weft_host_poll_step(3, 3) &&
           !weft_host_poll_step(4, 3),
       "no budget: a poll yields as often as asked, then tells its caller to sleep");
    ok(!weft_host_poll_step(1, 0), "no budget and no yields: sleep at once");

    weft_host_spin_init(200 * 1000 * 1000); /* 200 ms */
    t0 = now_ms();
    spun = 1;
    for (unsigned i = 1; i <= 10000; i++)
        spun &= weft_host_poll_step(i, 0);
    ok(spun && now_ms() - t0 < 200, "within the budget a poll spins in place, with no yield (%d, %.1f ms)", spun,
       now_ms() - t0);

    weft_host_spin_init(2 * 1000 * 1000); /* 2 ms */
    ok(weft_host_poll_step(1, 2), "a new wait spins");
    usleep(10000);
    /* the clock is read once per 16 looks: the budget's end is seen at
     * look 16, the last spin having been look 15 */
    spun = 1;
    for (unsigned i = 2; i < 16; i++)
        spun &= weft_host_poll_step(i, 2);
    ok(spun && weft_host_poll_step(16, 2) && weft_host_poll_step(17, 2) && !weft_host_poll_step(18, 2),
       "past the budget (seen at the next 16th look) it yields as often as asked, counted from the end of its "
       "spinning");
    ok(weft_host_poll_step(1, 0), "the next wait has a budget again");

    all = 1;
    weft_host_spin_init(20000);
    all &= run_stream(ops, ctx);
    ok(all, "spinning (20 us): 600 launches of 1 to 5 blocks meeting, copies and an event, in stream order");
    weft_host_spin_init(0);
    ok(run_stream(ops, ctx), "no spinning (yield, sleep): the same");
    ops->fini(ctx);
    return test_done();
}
