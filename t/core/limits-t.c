/*
 * Resource limits: a process short of file descriptors (RLIMIT_NOFILE 32,
 * nearly all in use), a root port that something else holds, address
 * space too small for an allocation or for init (RLIMIT_AS), and many
 * init/destroy cycles. Each ends in a clean error or in success, within
 * bounded time, and leaves no descriptor or memory behind.
 * WEFT_TEST_CYCLES sets the number of cycles (default 1000; as many as
 * fit in CYCLES_BUDGET_MS when they are slower, e.g. under a sanitizer,
 * said in a diag line). Each cycle also runs a checked allreduce, so the
 * collectives' state (scratch, IPC links, worker threads) is made and
 * freed every time.
 */
#include "config.h"
#include "tap/basic.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "uid.h"
#include "util.h"
#include "weft.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

#define CHECK(cond, ...)                                                                                           \
    do {                                                                                                           \
        if (!(cond))                                                                                               \
            fails += rank_fail(__VA_ARGS__);                                                                       \
    } while (0)

static weft_unique_id_t id;

/* CPU time of this process, ms */
static long cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* Open descriptors, counted without opening one (so it works with none
 * left): every number below the soft limit that fcntl knows. */
static int count_fds(void)
{
    struct rlimit rl;
    int n = 0;
    long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (long)rl.rlim_cur : 65536;
    for (long fd = 0; fd < max; fd++)
        n += fcntl((int)fd, F_GETFD) != -1;
    return n;
}

/* statm: field 1 the size of the address space, field 2 the resident set (pages) */
static long statm_kb(int field)
{
    long v[2] = {0, 0};
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &v[0], &v[1]) != 2)
        v[0] = v[1] = -1;
    fclose(f);
    return v[field - 1] * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Heap bytes in use (every arena; what malloc's threads reserve is not in it), KiB */
static long heap_kb(void)
{
    struct mallinfo2 mi = mallinfo2();
    return (long)((mi.uordblks + mi.hblkhd) / 1024);
}

/* -- EMFILE ---------------------------------------------------------------- */

/* Rank 0 runs with RLIMIT_NOFILE 32 and all but *free_fds of them open. */
static int emfile_rank(int rank, int nranks, void *arg)
{
    int free_fds = *(int *)arg, fails = 0, before, filler[64], nfill = 0;
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_comm_t *comm = NULL;
    weft_status_t st;
    long t0, took;

    if (!job_id(rank, &id))
        return 1;
    cfg.init_timeout_ms = 1500;
    cfg.op_timeout_ms = 3000;
    if (rank == 0) {
        struct rlimit rl = {32, 32};
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            return rank_fail("setrlimit(RLIMIT_NOFILE, 32): %s", strerror(errno));
        for (int fd; count_fds() < 32 - free_fds && nfill < 64 && (fd = open("/dev/null", O_RDONLY)) >= 0;)
            filler[nfill++] = fd;
    }
    before = count_fds();
    rank_step("init with %d descriptors free on rank 0", free_fds);
    t0 = now_ms();
    st = weft_comm_init(&id, nranks, rank, &cfg, &comm);
    took = now_ms() - t0;
    CHECK(took < 4000, "init took %ld ms (deadline 1500 ms)", took);
    if (st == WEFT_OK) {
        void *p = NULL;
        CHECK(comm != NULL, "init succeeded without a communicator");
        CHECK(weft_bootstrap_barrier(comm) == WEFT_OK, "barrier after init: %s", weft_get_last_error());
        st = weft_mem_alloc(comm, 4096, &p);
        CHECK(st == WEFT_OK || (st != WEFT_OK && *weft_get_last_error()), "alloc failed without a message");
        if (st == WEFT_OK)
            weft_mem_free(comm, p);
        weft_bootstrap_barrier(comm);
        CHECK(weft_comm_destroy(comm) == WEFT_OK, "destroy");
        /* (rank 0: the root's listening socket, counted before, is gone) */
        CHECK(count_fds() <= before, "%d descriptors open after destroy, %d before init", count_fds(), before);
        if (rank == 0)
            diag("%d descriptors free: init succeeded", free_fds);
    } else {
        CHECK(comm == NULL, "a failed init returned a communicator");
        CHECK(*weft_get_last_error() != '\0', "init failed (%s) without saying why", weft_status_string(st));
        if (rank == 0) {
            diag("%d descriptors free: %s (%s)", free_fds, weft_status_string(st), weft_get_last_error());
            /* nothing left spinning: the job's root (a thread here, from
             * weft_get_unique_id) lives on until its deadline, idle */
            long c0 = cpu_ms();
            usleep(800 * 1000);
            CHECK(cpu_ms() - c0 < 250, "after the failed init the process burns CPU: %ld ms in 0.8 s of sleep",
                  cpu_ms() - c0);
            /* the root ends at its deadline (WEFT_INIT_TIMEOUT_MS, set in main) */
            while (now_ms() - t0 < 3000)
                usleep(50 * 1000);
            CHECK(count_fds() <= before, "%d descriptors open after the failed init, %d before", count_fds(),
                  before);
        }
    }
    for (int i = 0; i < nfill; i++)
        close(filler[i]);
    if (rank == 0)
        *(int *)arg = st == WEFT_OK ? 1 : 2; /* a page shared with the parent */
    return fails;
}

/* A root (here, from weft_get_unique_id) whose process has no descriptor
 * left when a rank connects: it cannot accept, and must wait for one
 * without spinning on a listener that stays readable. */
static int root_full_rank(int rank, int nranks, void *arg)
{
    weft_unique_id_t rid;
    weft_uid_info_t info;
    struct rlimit rl = {32, 32};
    int fails = 0, filler[64], nfill = 0, st;
    long c0, used;
    pid_t pid;
    (void)rank;
    (void)nranks;
    (void)arg;
    if (weft_get_unique_id(&rid) != WEFT_OK || weft_uid_decode(&rid, &info) != WEFT_OK)
        return rank_fail("weft_get_unique_id: %s", weft_get_last_error());
    if ((pid = fork()) == 0) {
        /* a client with descriptors of its own: connects once the root is full */
        int fd;
        usleep(200 * 1000);
        fd = socket(info.root.u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0)
            (void)!connect(fd, &info.root.u.sa, info.root.len);
        usleep(1500 * 1000);
        _exit(0);
    }
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return rank_fail("setrlimit(RLIMIT_NOFILE, 32): %s", strerror(errno));
    for (int fd; nfill < 64 && (fd = open("/dev/null", O_RDONLY)) >= 0;)
        filler[nfill++] = fd;
    rank_step("a connection to the root while no descriptor is free");
    c0 = cpu_ms();
    usleep(1000 * 1000);
    used = cpu_ms() - c0;
    diag("CPU time in 1 s with the root unable to accept: %ld ms", used);
    CHECK(used < 150, "the root burns CPU while it cannot accept: %ld ms in 1 s", used);
    for (int i = 0; i < nfill; i++)
        close(filler[i]);
    waitpid(pid, &st, 0);
    return fails;
}

static void emfile_tests(void)
{
    static const int free_fds[] = {0, 1, 2, 3, 4, 5, 6, 8, 12};
    int failed_cleanly = 0, succeeded = 0, all_clean = 1, last_ok = 0;
    int *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        bail("mmap: %s", strerror(errno));
    for (size_t i = 0; i < WEFT_ARRAY_SIZE(free_fds); i++) {
        shared[0] = free_fds[i]; /* in: descriptors to leave free; out: 1 init worked, 2 it failed */
        if (!run_ranks(2, 20000, emfile_rank, shared, NULL)) {
            all_clean = 0;
            diag("%d descriptors free: a rank failed (above)", free_fds[i]);
            continue;
        }
        failed_cleanly += shared[0] == 2;
        succeeded += shared[0] == 1;
        last_ok = shared[0] == 1;
    }
    munmap(shared, 4096);
    ok(all_clean, "RLIMIT_NOFILE 32 with 0..12 descriptors free: every init fails cleanly or works, no crash, "
                  "no hang, no descriptor left behind");
    ok(failed_cleanly > 0, "... some of them fail (EMFILE reached inside init: %d times)", failed_cleanly);
    ok(succeeded > 0 && last_ok, "... and with 12 free, init works (%d succeeded)", succeeded);
    ok(run_ranks(1, 10000, root_full_rank, NULL, NULL),
       "a root with no descriptor left waits for one to accept a connection, without spinning");
}

/* -- a root port already in use --------------------------------------------- */

typedef struct {
    int port;
    int rank; /* the rank of the job this process plays */
} port_case_t;

static int port_in_use_rank(int proc, int nprocs, void *arg)
{
    const port_case_t *pc = arg;
    int port = pc->port, rank = pc->rank, fails = 0;
    char root[64], text[WEFT_UNIQUE_ID_TEXT_BYTES];
    weft_uid_info_t info;
    weft_unique_id_t uid;
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_comm_t *comm = NULL;
    weft_status_t st;
    long t0, took;
    (void)proc;
    (void)nprocs;

    snprintf(root, sizeof(root), "127.0.0.1:%d", port);
    memset(&info, 0, sizeof(info));
    if (weft_addr_parse(root, &info.root) != WEFT_OK || weft_random_bytes(info.secret, sizeof(info.secret)) != WEFT_OK)
        return rank_fail("making an id");
    weft_uid_encode(&info, &uid);
    weft_unique_id_format(&uid, text, sizeof(text));
    setenv("WEFT_ROOT", root, 1);
    setenv("WEFT_UNIQUE_ID", text, 1);
    setenv("WEFT_NRANKS", "2", 1);
    /* rank 0 would start the root there; rank 1 finds a stranger there */
    setenv("WEFT_RANK", rank == 0 ? "0" : "1", 1);
    cfg.init_timeout_ms = 1500;
    rank_step("init from the environment with WEFT_ROOT=%s held by another socket", root);
    t0 = now_ms();
    st = weft_comm_init_from_env(&cfg, &comm);
    took = now_ms() - t0;
    CHECK(st != WEFT_OK && comm == NULL, "init with the root's port in use gave %s", weft_status_string(st));
    CHECK(took < 4000, "the error took %ld ms (deadline 1500 ms)", took);
    if (rank == 0) {
        char want[16];
        snprintf(want, sizeof(want), "%d", port);
        CHECK(strstr(weft_get_last_error(), want) && strstr(weft_get_last_error(), "in use"),
              "the error does not name the port and say it is in use: %s", weft_get_last_error());
    }
    diag("rank %d: %s after %ld ms: %s", rank, weft_status_string(st), took, weft_get_last_error());
    return fails;
}

/* The root's port held by the root of another weft job (another secret):
 * a rank of this job connects, fails the handshake, and its init ends
 * within the deadline naming the root's address; the other job is not
 * disturbed (its rank 0 still initializes alone). */
static int port_other_job_rank(int proc, int nprocs, void *arg)
{
    weft_unique_id_t theirs, ours;
    weft_uid_info_t info;
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_comm_t *comm = NULL;
    weft_status_t st;
    char port[16];
    long t0, took;
    int fails = 0;
    (void)proc;
    (void)nprocs;
    (void)arg;
    if (weft_get_unique_id(&theirs) != WEFT_OK || weft_uid_decode(&theirs, &info) != WEFT_OK)
        return rank_fail("the other job's id: %s", weft_get_last_error());
    snprintf(port, sizeof(port), ":%d", weft_addr_port(&info.root));
    if (weft_random_bytes(info.secret, sizeof(info.secret)) != WEFT_OK)
        return rank_fail("random bytes");
    weft_uid_encode(&info, &ours);
    /* the other job's root lives WEFT_INIT_TIMEOUT_MS (2500, main) from its id: both inits fit */
    cfg.init_timeout_ms = 800;
    rank_step("init as rank 1 of a job whose root port is another job's root");
    t0 = now_ms();
    st = weft_comm_init(&ours, 2, 1, &cfg, &comm);
    took = now_ms() - t0;
    diag("a root port held by another job's root: %s after %ld ms: %s", weft_status_string(st), took,
         weft_get_last_error());
    CHECK(st != WEFT_OK && comm == NULL, "init gave %s", weft_status_string(st));
    CHECK(took < 2000, "the error took %ld ms (deadline 800 ms)", took);
    CHECK(strstr(weft_get_last_error(), port) != NULL, "the error does not name the root's port (%s): %s", port + 1,
          weft_get_last_error());
    /* the other job: its rank 0, alone, still gets through */
    cfg.init_timeout_ms = 1500;
    st = weft_comm_init(&theirs, 1, 0, &cfg, &comm);
    CHECK(st == WEFT_OK, "the other job's init after ours failed: %s", weft_get_last_error());
    if (st == WEFT_OK)
        weft_comm_destroy(comm);
    return fails;
}

static void port_in_use_tests(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        bail("a listening socket on loopback: %s", strerror(errno));
    port = ntohs(a.sin_port);
    {
        /* rank 0 of the job, alone: it would start the root there */
        port_case_t r0 = {port, 0};
        ok(run_ranks(1, 10000, port_in_use_rank, &r0, NULL),
           "WEFT_ROOT on a port another socket listens on: rank 0 fails at once, naming the port and why");
    }
    {
        /* rank 1 of the job, alone: it reaches the stranger, which never answers */
        port_case_t r1 = {port, 1};
        ok(run_ranks(1, 10000, port_in_use_rank, &r1, NULL),
           "... and a rank that connects there gets an error within its init deadline");
    }
    close(fd);
    ok(run_ranks(1, 10000, port_other_job_rank, NULL, NULL),
       "the root's port held by another weft job's root: an error naming the port within the init deadline, and "
       "the other job still works");
}

/* -- ENOMEM ------------------------------------------------------------------ */

#ifndef UNDER_SANITIZER

static int enomem_rank(int rank, int nranks, void *arg)
{
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_comm_t *comm = NULL;
    struct rlimit rl, saved;
    void *big = NULL, *small = NULL;
    int fails = 0;
    weft_status_t st;
    (void)arg;

    if (!job_id(rank, &id))
        return 1;
    cfg.init_timeout_ms = 5000;
    if (weft_comm_init(&id, nranks, rank, &cfg, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    getrlimit(RLIMIT_AS, &saved);
    rl = saved;
    rl.rlim_cur = (rlim_t)(statm_kb(1) + 256 * 1024) * 1024; /* 256 MiB more than now */
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        return rank_fail("setrlimit(RLIMIT_AS): %s", strerror(errno));
    rank_step("weft_mem_alloc of 1 GiB with 256 MiB of address space left");
    st = weft_mem_alloc(comm, (size_t)1 << 30, &big);
    CHECK(st == WEFT_ERR_NO_MEMORY && big == NULL, "alloc of 1 GiB with 256 MiB left gave %s",
          weft_status_string(st));
    CHECK(*weft_get_last_error() != '\0', "the failed alloc did not say why");
    st = weft_mem_alloc(comm, 4096, &small);
    CHECK(st == WEFT_OK, "a small alloc after the failed one: %s", weft_status_string(st));
    if (small)
        weft_mem_free(comm, small);
    setrlimit(RLIMIT_AS, &saved);
    CHECK(weft_bootstrap_barrier(comm) == WEFT_OK, "barrier after the failed alloc: %s", weft_get_last_error());
    weft_comm_destroy(comm);
    return fails;
}

/* Init with *arg KiB of address space left on rank 0 (a page shared with
 * the parent: out, 1 init worked, 2 it failed): an error or success, no
 * crash, in time. */
static int enomem_init_rank(int rank, int nranks, void *arg)
{
    int *shared = arg, slack_kb = shared[0], fails = 0;
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_comm_t *comm = NULL;
    struct rlimit rl, saved;
    weft_status_t st;
    long t0, took;

    if (!job_id(rank, &id))
        return 1;
    cfg.init_timeout_ms = 1500;
    if (rank == 0) {
        getrlimit(RLIMIT_AS, &saved);
        rl = saved;
        rl.rlim_cur = (rlim_t)(statm_kb(1) + slack_kb) * 1024;
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            return rank_fail("setrlimit(RLIMIT_AS): %s", strerror(errno));
    }
    rank_step("init with %d KiB of address space left on rank 0", slack_kb);
    t0 = now_ms();
    st = weft_comm_init(&id, nranks, rank, &cfg, &comm);
    took = now_ms() - t0;
    CHECK(took < 4000, "init took %ld ms", took);
    CHECK((st == WEFT_OK) == (comm != NULL), "init gave %s and %s communicator", weft_status_string(st),
          comm ? "a" : "no");
    CHECK(st == WEFT_OK || *weft_get_last_error() != '\0', "init failed without saying why");
    if (rank == 0)
        diag("%d KiB of address space left: %s %s", slack_kb, weft_status_string(st),
             st == WEFT_OK ? "" : weft_get_last_error());
    if (st == WEFT_OK) {
        CHECK(weft_bootstrap_barrier(comm) == WEFT_OK, "barrier: %s", weft_get_last_error());
        weft_comm_destroy(comm);
    }
    if (rank == 0)
        shared[0] = st == WEFT_OK ? 1 : 2;
    return fails;
}

#endif /* UNDER_SANITIZER */

static void enomem_tests(void)
{
#ifdef UNDER_SANITIZER
    skip("RLIMIT_AS: the sanitizer reserves more address space than any limit allows");
    skip("RLIMIT_AS: the sanitizer reserves more address space than any limit allows");
#else
    ok(run_ranks(2, 20000, enomem_rank, NULL, NULL),
       "RLIMIT_AS 256 MiB above use: a 1 GiB weft_mem_alloc gives WEFT_ERR_NO_MEMORY, and the communicator "
       "keeps working");
    {
        static const int slack_kb[] = {0, 256, 1024, 4096, 16384, 524288};
        int clean = 1, failed = 0, last_ok = 0;
        int *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shared == MAP_FAILED)
            bail("mmap: %s", strerror(errno));
        for (size_t i = 0; i < WEFT_ARRAY_SIZE(slack_kb); i++) {
            shared[0] = slack_kb[i];
            if (!run_ranks(2, 20000, enomem_init_rank, shared, NULL)) {
                clean = 0;
                continue;
            }
            failed += shared[0] == 2;
            last_ok = shared[0] == 1;
        }
        munmap(shared, 4096);
        /* Whether init needs new address space at all depends on timing:
         * its one thread may reuse the stack of the job's root, which has
         * just ended. So failures are counted, not required. A thread's
         * first malloc may reserve a 64 MiB arena: 512 MiB is enough. */
        ok(clean && last_ok,
           "RLIMIT_AS 0 .. 512 MiB above use on rank 0: init fails cleanly (%d of 6 times) or works, on both "
           "ranks, in time; with 512 MiB it works",
           failed);
    }
#endif
}

/* -- init/destroy cycles ----------------------------------------------------- */

#define CYCLES_BUDGET_MS 20000

typedef struct {
    int cycles;
    /* rank 0 publishes the id of cycle i; rank 1 waits for it; once the
     * time budget is spent rank 0 publishes the number of cycles run in
     * ran instead (then seq is -1) */
    volatile int seq;
    volatile int ran;
    weft_unique_id_t ids[2];
} cycles_t;

/* A checked allreduce of 1024 floats on a stream made and freed here. */
static int cycle_allreduce(weft_comm_t *comm, float *buf, int rank, int nranks)
{
    weft_stream_t *s;
    weft_status_t st;
    int good = 1;
    if (weft_stream_create(comm, &s) != WEFT_OK)
        return 0;
    for (int i = 0; i < 1024; i++)
        buf[i] = (float)(rank + i);
    st = weft_allreduce(buf, buf, 1024, WEFT_FLOAT32, WEFT_SUM, comm, s);
    if (st == WEFT_OK)
        st = weft_stream_synchronize(s);
    for (int i = 0; st == WEFT_OK && i < 1024; i++)
        good &= buf[i] == (float)(nranks * i + nranks * (nranks - 1) / 2);
    weft_stream_destroy(s);
    return st == WEFT_OK && good;
}

static int cycles_rank(int rank, int nranks, void *arg)
{
    cycles_t *c = arg;
    int fails = 0, warm = 10, fds0 = -1;
    long rss0 = -1, heap0 = -1, rss_half = -1, t0 = now_ms();
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;

    cfg.init_timeout_ms = 10000;
    int ran = 0;
    for (int i = 0; i < c->cycles && !fails; i++) {
        weft_unique_id_t cid;
        weft_comm_t *comm = NULL;
        void *p = NULL;
        rank_step("cycle %d of %d", i + 1, c->cycles);
        if (rank == 0 && i > warm && now_ms() - t0 > CYCLES_BUDGET_MS) {
            c->ran = i;
            __atomic_store_n(&c->seq, -1, __ATOMIC_RELEASE);
            break;
        }
        if (rank == 0) {
            if (weft_get_unique_id(&cid) != WEFT_OK)
                return rank_fail("cycle %d: weft_get_unique_id: %s", i, weft_get_last_error());
            c->ids[i & 1] = cid;
            __atomic_store_n(&c->seq, i + 1, __ATOMIC_RELEASE);
        } else {
            long deadline = now_ms() + 10000;
            int seq;
            while ((seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE)) < i + 1 && seq != -1)
                if (now_ms() > deadline)
                    return rank_fail("cycle %d: rank 0 never made the id", i);
                else
                    usleep(100);
            if (seq == -1)
                break; /* rank 0 spent the time budget */
            cid = c->ids[i & 1];
        }
        if (weft_comm_init(&cid, nranks, rank, &cfg, &comm) != WEFT_OK)
            return rank_fail("cycle %d: init: %s", i, weft_get_last_error());
        CHECK(weft_mem_alloc(comm, 65536, &p) == WEFT_OK, "cycle %d: alloc", i);
        CHECK(p && cycle_allreduce(comm, p, rank, nranks), "cycle %d: allreduce: %s", i, weft_get_last_error());
        CHECK(weft_bootstrap_barrier(comm) == WEFT_OK, "cycle %d: barrier: %s", i, weft_get_last_error());
        weft_mem_free(comm, p);
        CHECK(weft_comm_destroy(comm) == WEFT_OK, "cycle %d: destroy", i);
        ran = i + 1;
        if (i + 1 == warm || (c->cycles <= warm && i == 0)) {
            /* the root thread of this cycle may still be leaving */
            usleep(50 * 1000);
            fds0 = count_fds();
            rss0 = statm_kb(2);
            heap0 = heap_kb();
        }
        /* glibc gives new threads their own arenas, up to 8 per core: the
         * resident set grows until they exist, then stays */
        if (rss_half < 0 && (i + 1 == c->cycles / 2 || (rank == 0 && now_ms() - t0 > CYCLES_BUDGET_MS / 2)))
            rss_half = statm_kb(2);
    }
    if (!fails) {
        int fds;
        long rss, heap;
        usleep(50 * 1000);
        fds = count_fds();
        rss = statm_kb(2);
        heap = heap_kb();
        if (rss_half < 0)
            rss_half = rss0;
        diag("rank %d: %d cycles in %ld ms; after cycle %d: %d descriptors, %ld KiB resident, %ld KiB of heap in "
             "use; half-way: %ld KiB resident; at the end: %d, %ld KiB, %ld KiB",
             rank, ran, now_ms() - t0, warm, fds0, rss0, heap0, rss_half, fds, rss, heap);
        if (ran < c->cycles && rank == 0)
            diag("%d of %d cycles fit in the %d ms budget of this run (a slow build or machine)", ran, c->cycles,
                 CYCLES_BUDGET_MS);
        CHECK(fds == fds0, "descriptors grew from %d to %d over %d cycles", fds0, fds, ran - warm);
#ifndef UNDER_SANITIZER
        /* flat: allow allocator noise, not a leak per cycle (1 KiB a cycle shows in the heap); under a
         * sanitizer freed memory waits in quarantine, and leaks are the leak checker's to find */
        CHECK(heap - heap0 < 512, "heap in use grew by %ld KiB over %d cycles", heap - heap0, ran - warm);
        /* (few cycles: the arenas may not all exist by half-way) */
        CHECK(ran < 400 || rss - rss_half < 4096, "resident memory grew by %ld KiB over the second half of the cycles",
              rss - rss_half);
#endif
    }
    return fails;
}

static void cycles_tests(void)
{
    const char *env = getenv("WEFT_TEST_CYCLES");
    cycles_t *c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int n = env && *env ? atoi(env) : 1000;
    if (c == MAP_FAILED)
        bail("mmap: %s", strerror(errno));
    memset(c, 0, sizeof(*c));
    c->cycles = n > 0 ? n : 1000;
    ok(run_ranks(2, CYCLES_BUDGET_MS + 40000, cycles_rank, c, NULL),
       "up to %d init/allreduce/destroy cycles of 2 ranks: descriptors and resident memory flat", c->cycles);
    munmap(c, sizeof(*c));
}

int main(void)
{
    /* the root that weft_get_unique_id starts lives this long at most */
    setenv("WEFT_INIT_TIMEOUT_MS", "2500", 1);
    plan(10);
    emfile_tests();
    port_in_use_tests();
    enomem_tests();
    cycles_tests();
    return test_done();
}
