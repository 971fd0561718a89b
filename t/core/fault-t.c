/*
 * Fault points (WEFT_FAULT, src/common/fault.h) on forked ranks over real
 * sockets. In each case rank 2 runs with one fault while three ranks
 * create a communicator and run allreduces (checked); then the processes
 * still alive make a new communicator and run a checked allreduce.
 *  - a fault the library must survive (EINTR, short I/O, a short delay, a
 *    refused first connect): every rank's results are right;
 *  - any other: the job ends in an error that names a rank, within the
 *    case's deadline (time-to-error printed per rank), never a hang.
 * Cases marked "net" give every rank its own host (WEFT_HOSTID), so the
 * collectives cross TCP through the proxy and the ethernet transport.
 * Also: WEFT_FAULT with bad syntax fails init with a clear error.
 *
 * The cases below are a selection that fits the test's time (every site,
 * every action, each with the outcome it must have). WEFT_TEST_FAULT_ALL=1
 * runs every site/action pair the fault points accept instead (about two
 * minutes): EINTR, short I/O and delays must be survived; kill, stop,
 * close, reset and errors must end either in right results (a fault that
 * hit a socket no longer needed) or in errors naming a rank in time.
 */
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "fault.h"
#include "weft.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NRANKS 3
#define VICTIM 2
#define COUNT (1 << 15) /* floats per allreduce: 128 KiB */
#define ITERS 6

typedef enum { SURVIVE, FAIL, EITHER } outcome_t;

typedef struct {
    const char *spec;
    int net;           /* one host per rank */
    outcome_t want;
    int deadline_ms;   /* for FAIL: the slowest rank's time-to-error */
} fault_case_t;

static const fault_case_t cases[] = {
    /* the bootstrap */
    {"boot.connect:1:errno=ECONNREFUSED", 0, SURVIVE, 0},
    {"boot.connect:2:kill", 0, FAIL, 8000},
    {"boot.send:2:eintr", 0, SURVIVE, 0},
    {"boot.send:1+:short", 0, SURVIVE, 0},
    {"boot.send:4:reset", 0, FAIL, 8000},
    {"boot.recv:3:eintr", 0, SURVIVE, 0},
    {"boot.recv:1+:short", 0, SURVIVE, 0},
    {"boot.recv:8:close", 0, FAIL, 8000},
    {"boot.recv:6:errno=ECONNRESET", 0, FAIL, 8000},
    {"boot.recv:5:stop", 0, FAIL, 8000},
    {"boot.accept:1:eintr", 0, SURVIVE, 0},
    {"boot.accept:1:kill", 0, FAIL, 8000},
    /* the net transport and its side-band, the proxy */
    {"net.sideband:2:short,net.sideband:3:eintr", 1, SURVIVE, 0},
    {"net.sideband:1:reset", 1, FAIL, 8000},
    {"net.send:1+:short,net.send:3:eintr,net.send:4:delay=200", 1, SURVIVE, 0},
    {"net.send:6:reset", 1, FAIL, 8000},
    {"net.recv:1+:short,net.recv:5:eintr", 1, SURVIVE, 0},
    {"net.recv:8:close", 1, FAIL, 8000},
    {"proxy.request:4:errno=EIO", 1, FAIL, 8000},
    {"proxy.completion:3:kill", 1, FAIL, 8000},
    {"proxy.completion:2:delay=100", 1, SURVIVE, 0},
    /* collective steps */
    {"coll.launch:3:kill", 0, FAIL, 8000},
    {"coll.launch:2:errno=ENOMEM", 0, FAIL, 8000},
    {"coll.launch:2:stop", 0, FAIL, 8000},
    {"coll.wait:2:errno=EIO", 0, FAIL, 8000},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* WEFT_TEST_FAULT_ALL: every pair, at a pass of each site in mid-job. */
static const struct {
    const char *site;
    int nth, net;
} all_sites[] = {
    {"boot.connect", 2, 0}, {"boot.send", 4, 0},   {"boot.recv", 6, 0},    {"boot.accept", 1, 0},
    {"proxy.request", 4, 1}, {"proxy.completion", 3, 1}, {"net.send", 6, 1}, {"net.recv", 8, 1},
    {"net.sideband", 2, 1}, {"coll.launch", 3, 0}, {"coll.wait", 2, 0},
};
static const char *const all_actions[] = {"kill", "stop", "close", "reset", "eintr", "short", "delay=300", "errno"};
#define MAX_ALL_CASES ((int)(sizeof(all_sites) / sizeof(all_sites[0]) * 8))
static fault_case_t all_cases[MAX_ALL_CASES];
static char all_specs[MAX_ALL_CASES][64];

static int make_all_cases(void)
{
    int n = 0;
    for (size_t s = 0; s < sizeof(all_sites) / sizeof(all_sites[0]); s++)
        for (size_t a = 0; a < sizeof(all_actions) / sizeof(all_actions[0]); a++) {
            snprintf(all_specs[n], sizeof(all_specs[n]), "%s:%d:%s", all_sites[s].site, all_sites[s].nth,
                     all_actions[a]);
            if (weft_fault_parse(all_specs[n], NULL, 0) != WEFT_OK)
                continue; /* a pair that makes no sense */
            all_cases[n].spec = all_specs[n];
            all_cases[n].net = all_sites[s].net;
            all_cases[n].want = !strcmp(all_actions[a], "eintr") || !strcmp(all_actions[a], "short") ||
                                        !strncmp(all_actions[a], "delay", 5)
                                    ? SURVIVE
                                    : EITHER;
            all_cases[n].deadline_ms = 8000;
            n++;
        }
    return n;
}

/* What the ranks tell the parent, in a page shared across the fork. */
typedef struct {
    pid_t pid[NRANKS];
    int status[NRANKS];    /* the first failure of the faulty job, or WEFT_OK */
    long took_ms[NRANKS];  /* how long the failing call ran */
    char what[NRANKS][48]; /* which call failed */
    char err[NRANKS][320];
    unsigned long fired;   /* actions the victim's fault points did (before a kill or stop: 0) */
    int id2_ready;
    weft_unique_id_t id2;  /* the survivors' new job */
} shared_t;

static shared_t *sh;
static weft_unique_id_t id;

static int alive_after(const fault_case_t *c)
{
    return !strstr(c->spec, ":kill") && !strstr(c->spec, ":stop");
}

static int check_sum(const float *buf, size_t n, int nranks, int iter)
{
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int r = 0; r < nranks; r++)
            want += (float)((r + 1) * ((i + (size_t)iter) % 97));
        if (buf[i] != want)
            return rank_fail("iteration %d: element %zu is %g, expected %g", iter, i, buf[i], want), 0;
    }
    return 1;
}

static void fill(float *buf, size_t n, int rank, int iter)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (float)((rank + 1) * ((i + (size_t)iter) % 97));
}

/* init, then ITERS checked allreduces; WEFT_OK or the first failure (its
 * call and duration in the shared page). */
static weft_status_t faulty_job(int rank, int nranks, weft_comm_t **commp, weft_stream_t **sp)
{
    weft_comm_t *comm = NULL;
    weft_stream_t *s = NULL;
    float *buf = NULL;
    weft_status_t st;
    long t0 = now_ms();

    snprintf(sh->what[rank], sizeof(sh->what[rank]), "init");
    rank_step("init");
    st = weft_comm_init(&id, nranks, rank, NULL, &comm);
    if (st == WEFT_OK && ((st = weft_stream_create(comm, &s)) != WEFT_OK ||
                          (st = weft_mem_alloc(comm, COUNT * sizeof(float), (void **)&buf)) != WEFT_OK))
        snprintf(sh->what[rank], sizeof(sh->what[rank]), "stream or memory");
    *commp = comm;
    *sp = s;
    for (int it = 0; st == WEFT_OK && it < ITERS; it++) {
        snprintf(sh->what[rank], sizeof(sh->what[rank]), "allreduce %d", it);
        rank_step("allreduce %d", it);
        fill(buf, COUNT, rank, it);
        t0 = now_ms();
        st = weft_allreduce(buf, buf, COUNT, WEFT_FLOAT32, WEFT_SUM, comm, s);
        if (st == WEFT_OK)
            st = weft_stream_synchronize(s);
        if (st == WEFT_OK && !check_sum(buf, COUNT, nranks, it))
            st = WEFT_ERR_INTERNAL;
    }
    sh->took_ms[rank] = now_ms() - t0;
    sh->status[rank] = st;
    if (st != WEFT_OK)
        snprintf(sh->err[rank], sizeof(sh->err[rank]), "%s", weft_get_last_error());
    return st;
}

/* The processes alive after the fault make a new communicator. */
static int new_job(int rank, const fault_case_t *c)
{
    int n = alive_after(c) ? NRANKS : NRANKS - 1, me = rank; /* the victim is the last rank */
    weft_comm_t *comm;
    weft_stream_t *s;
    float *buf;
    weft_status_t st;
    if (me == 0) {
        if (weft_get_unique_id(&sh->id2) != WEFT_OK)
            return rank_fail("second unique id: %s", weft_get_last_error());
        __atomic_store_n(&sh->id2_ready, 1, __ATOMIC_RELEASE);
    } else {
        for (long t0 = now_ms(); !__atomic_load_n(&sh->id2_ready, __ATOMIC_ACQUIRE); usleep(2000))
            if (now_ms() - t0 > 15000)
                return rank_fail("no second unique id from rank 0");
    }
    rank_step("the new communicator's init");
    if ((st = weft_comm_init(&sh->id2, n, me, NULL, &comm)) != WEFT_OK)
        return rank_fail("the new communicator's init: %s", weft_get_last_error());
    if (weft_stream_create(comm, &s) != WEFT_OK ||
        weft_mem_alloc(comm, COUNT * sizeof(float), (void **)&buf) != WEFT_OK)
        return rank_fail("the new communicator's stream/alloc: %s", weft_get_last_error());
    fill(buf, COUNT, me, 7);
    rank_step("the new communicator's allreduce");
    st = weft_allreduce(buf, buf, COUNT, WEFT_FLOAT32, WEFT_SUM, comm, s);
    if (st == WEFT_OK)
        st = weft_stream_synchronize(s);
    if (st != WEFT_OK)
        return rank_fail("the new communicator's allreduce: %s", weft_get_last_error());
    if (!check_sum(buf, COUNT, n, 7))
        return 1;
    weft_comm_destroy(comm);
    return 0;
}

static int fault_rank(int rank, int nranks, void *arg)
{
    const fault_case_t *c = arg;
    weft_comm_t *comm = NULL;
    weft_stream_t *s = NULL;
    sh->pid[rank] = getpid();
    /* deadlines short enough for 2 cores and a bounded test */
    setenv("WEFT_INIT_TIMEOUT_MS", "6000", 1);
    setenv("WEFT_BOOTSTRAP_TIMEOUT_MS", "4000", 1);
    setenv("WEFT_HANDSHAKE_TIMEOUT_MS", "2000", 1);
    setenv("WEFT_DEVICE_TIMEOUT_MS", "4000", 1);
    setenv("WEFT_LOG_LEVEL", "none", 1);
    if (c->net) {
        char host[32];
        snprintf(host, sizeof(host), "fault-test-host-%d", rank);
        setenv("WEFT_HOSTID", host, 1);
    }
    if (rank == VICTIM)
        setenv("WEFT_FAULT", c->spec, 1);
    if (!job_id(rank, &id))
        return 1;
    faulty_job(rank, nranks, &comm, &s);
    if (rank == VICTIM)
        sh->fired = weft_fault_fired();
    /* a failed job: abort (work still queued returns), then free */
    if (comm && sh->status[rank] != WEFT_OK)
        weft_comm_abort(comm);
    if (s)
        weft_stream_destroy(s);
    if (comm)
        weft_comm_destroy(comm);
    if (rank == VICTIM && !alive_after(c))
        return 0; /* a stopped victim is ended by rank 0 */
    if (rank == 0 && strstr(c->spec, ":stop"))
        kill(sh->pid[VICTIM], SIGKILL);
    unsetenv("WEFT_HOSTID"); /* the new communicator on one host: quick */
    return new_job(rank, c);
}

static void run_case(const fault_case_t *c)
{
    ranks_result_t res;
    int all, named = 1, failed = 0, in_time = 1, victim_ok;
    long slowest = 0;

    memset(sh, 0, sizeof(*sh));
    all = run_ranks(NRANKS, 30000, fault_rank, (void *)c, &res);
    for (int r = 0; r < NRANKS; r++) {
        if (sh->status[r] == WEFT_OK)
            continue;
        failed++;
        slowest = sh->took_ms[r] > slowest ? sh->took_ms[r] : slowest;
        diag("%s: rank %d: %s failed after %ld ms: %s", c->spec, r, sh->what[r], sh->took_ms[r], sh->err[r]);
        if (!strstr(sh->err[r], "rank "))
            named = 0;
        if (c->want == FAIL && sh->took_ms[r] > c->deadline_ms)
            in_time = 0;
    }
    /* the victim: exits by itself unless killed or stopped (then killed) */
    victim_ok = alive_after(c) ? res.exited[VICTIM] && res.code[VICTIM] == 0 : res.code[VICTIM] == -SIGKILL;
    if (c->want == SURVIVE) {
        /* the fault must have happened for its survival to mean anything */
        if (sh->fired == 0)
            diag("%s: the fault never fired", c->spec);
        ok(all && failed == 0 && sh->fired > 0, "%s: survived, every result right", c->spec);
        return;
    }
    if (!alive_after(c))
        all = !res.timed_out && victim_ok && res.exited[0] && res.code[0] == 0 && res.exited[1] && res.code[1] == 0;
    if (c->want == EITHER && failed == 0) {
        ok(all, "%s: survived (the fault hit nothing needed), every result right", c->spec);
        return;
    }
    diag("%s: time-to-error %ld ms (deadline %d ms)", c->spec, slowest, c->deadline_ms);
    ok(all && failed > 0 && named && in_time && (!alive_after(c) || sh->fired > 0),
       "%s: ends in an error naming a rank within %d ms, then a new communicator works", c->spec, c->deadline_ms);
}

/* Bad syntax: init refuses it, naming the variable (one rank: no peers). */
static int bad_spec_rank(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_status_t st;
    (void)nranks;
    setenv("WEFT_FAULT", (const char *)arg, 1);
    if (!job_id(rank, &id))
        return 1;
    st = weft_comm_init(&id, 1, 0, NULL, &comm);
    if (st != WEFT_ERR_INVALID_ARGUMENT)
        return rank_fail("init with WEFT_FAULT=%s gave %s", (const char *)arg, weft_status_string(st));
    if (!strstr(weft_get_last_error(), "WEFT_FAULT"))
        return rank_fail("the error does not name WEFT_FAULT: %s", weft_get_last_error());
    return 0;
}

int main(void)
{
    static const char *const bad[] = {"boot.send", "nosuch.site:1:kill", "boot.send:0:kill", "boot.send:x:kill",
                                      "boot.send:1:explode", "coll.launch:1:close", "coll.wait:1:short",
                                      "boot.accept:1:short", "boot.send:1:errno=EWHAT", "boot.send:1:delay=abc", "boot.send:1:kill,"};
    static const char *const good[] = {"boot.send:1:kill", "net.recv:3+:short,coll.wait:2:delay=5",
                                       "proxy.request:1:errno=ENOMEM", "boot.accept:2:eintr"};
    int nbad = (int)(sizeof(bad) / sizeof(bad[0])), ngood = (int)(sizeof(good) / sizeof(good[0]));
    const char *all_env = getenv("WEFT_TEST_FAULT_ALL");
    int all = all_env && !strcmp(all_env, "1"), ncases = all ? make_all_cases() : NCASES;
    const fault_case_t *list = all ? all_cases : cases;
    long t0 = now_ms();

    plan(nbad + ngood + 1 + ncases);
    alarm(all ? 900 : 170); /* the cases bound themselves; this is the last word */
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        bail("mmap failed");
    for (int i = 0; i < nbad; i++) {
        char why[160];
        ok(weft_fault_parse(bad[i], why, sizeof(why)) == WEFT_ERR_INVALID_ARGUMENT && why[0],
           "WEFT_FAULT=%s is refused: %s", bad[i], why);
    }
    for (int i = 0; i < ngood; i++)
        ok(weft_fault_parse(good[i], NULL, 0) == WEFT_OK, "WEFT_FAULT=%s parses", good[i]);
    ok(run_ranks(1, 20000, bad_spec_rank, (void *)"boot.send:1:explode", NULL),
       "communicator init refuses a bad WEFT_FAULT, naming it");
    for (int i = 0; i < ncases; i++) {
        long c0 = now_ms();
        run_case(&list[i]);
        diag("%s: the case took %ld ms", list[i].spec, now_ms() - c0);
    }
    diag("%d cases: %ld ms", ncases, now_ms() - t0);
    return test_done();
}
