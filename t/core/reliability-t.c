/*
 * Issue 19, items 1-10: each case as a hostile peer or a careless user
 * would meet it, with real forks and real sockets.
 *  1 a flood of plain TCP connections to a rank's own listener while it
 *    runs bootstrap operations
 *  2 WEFT_TRUST_LOCAL=1 against another local user
 *  3 numeric parameters out of range or malformed, sizes with suffixes
 *  4 nranks beyond WEFT_MAX_RANKS
 *  5 weft-info -c and the unique id's secret
 *  6 weft-perf --ranks N when a rank is killed
 *  7 a 0-byte registration at an allocation's start
 *  8 no root thread outlives a failed init
 *  9 a killed peer ends the survivors' collectives within seconds
 * 10 double destroy
 */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "tap/job.h"
#include "auth.h"
#include "bootstrap.h"
#include "comm.h"
#include "param.h"
#include "sock.h"
#include "uid.h"
#include "util.h"
#include "weft.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static weft_unique_id_t id;

static int dial(const weft_addr_t *a)
{
    int fd = socket(a->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, &a->u.sa, a->len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* ---- 1: flood of a rank's own listener ------------------------------ */

#define FLOOD_MS 2500

static char addr_file[128]; /* rank 1 publishes its listener's address here */

static int publish_addr(const weft_addr_t *a)
{
    char tmp[160];
    FILE *f;
    snprintf(tmp, sizeof(tmp), "%s.tmp", addr_file);
    if (!(f = fopen(tmp, "wb")) || fwrite(a, sizeof(*a), 1, f) != 1 || fclose(f) != 0)
        return 0;
    return rename(tmp, addr_file) == 0;
}

static int fetch_addr(weft_addr_t *a)
{
    for (long t0 = now_ms(); now_ms() - t0 < 30000; usleep(10000)) {
        FILE *f = fopen(addr_file, "rb");
        int ok = f && fread(a, sizeof(*a), 1, f) == 1;
        if (f)
            fclose(f);
        if (ok)
            return 1;
    }
    return 0;
}

/* Ranks 0-2 run barriers; rank 3 floods rank 1's bootstrap listener. */
static int flood_rank(int rank, int nranks, void *arg)
{
    int real = nranks - 1;
    weft_addr_t target;
    (void)arg;
    /* Freed memory is overwritten, so that a use after free shows even
     * without AddressSanitizer. */
    mallopt(M_PERTURB, 0xa5);
    if (!job_id(rank, &id))
        return 1;
    if (rank == real) {
        int fds[200], n = 0, opened = 0;
        long t0;
        rank_step("waiting for rank 1's listener address");
        if (!fetch_addr(&target))
            return rank_fail("no address from rank 1");
        rank_step("flooding rank 1's listener");
        t0 = now_ms();
        while (now_ms() - t0 < FLOOD_MS) {
            int fd;
            if (n == 200) { /* silent connections; keep the count up: replace the oldest */
                close(fds[0]);
                memmove(fds, fds + 1, sizeof(fds) - sizeof(fds[0]));
                n--;
            }
            if ((fd = dial(&target)) < 0) {
                if (opened == 0 && now_ms() - t0 > 1000) {
                    char text[80];
                    weft_addr_format(&target, text, sizeof(text));
                    return rank_fail("cannot connect to %s: %s", text, strerror(errno));
                }
                usleep(1000);
                continue;
            }
            fds[n++] = fd;
            opened++;
        }
        for (int i = 0; i < n; i++)
            close(fds[i]);
        return opened > 200 ? 0 : rank_fail("only %d connections opened", opened);
    }
    weft_comm_t *comm;
    weft_status_t st = weft_comm_init(&id, real, rank, NULL, &comm);
    if (st != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if (rank == 1) {
        weft_bootstrap_peer_addr(comm->boot, 1, &target);
        if (!publish_addr(&target))
            return rank_fail("cannot write %s", addr_file);
    }
    long t0 = now_ms();
    int rounds = 0, go = 1;
    rank_step("barriers while rank 1 is flooded");
    while (st == WEFT_OK && go) {
        st = weft_bootstrap_barrier(comm);
        go = now_ms() - t0 < FLOOD_MS + 500; /* rank 0's clock decides */
        if (st == WEFT_OK)
            st = weft_bootstrap_broadcast(comm, &go, sizeof(go), 0);
        rounds++;
    }
    weft_comm_destroy(comm);
    if (st != WEFT_OK)
        return rank_fail("barrier %d: %s", rounds, weft_get_last_error());
    return 0;
}

/* ---- 2: trust-local against another user ------------------------------ */

static char root_text[64];
static uid_t other_uid;

/* 1 if some file under the victim's private directories can be opened. */
static int can_read_victim_files(uid_t victim)
{
    static const char *const bases[] = {"/tmp", "/run/user/0"};
    int found = 0;
    for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
        char dir[128];
        DIR *d;
        struct dirent *e;
        snprintf(dir, sizeof(dir), "%s/weft-%u", bases[b], (unsigned)victim);
        if (!(d = opendir(dir)))
            continue;
        while ((e = readdir(d)) != NULL) {
            char path[400];
            int fd;
            if (strncmp(e->d_name, "trust-", 6) != 0)
                continue;
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            if ((fd = open(path, O_RDONLY)) >= 0) {
                close(fd);
                found = 1;
            }
        }
        closedir(d);
    }
    return found;
}

/* Ranks 0-2 are the job (rank 2 late); rank 3, another user, tries to
 * take rank 2's place: with the secret the old scheme derived from public
 * values, and through the library's own trust-local path. */
static int trust_rank(int rank, int nranks, void *arg)
{
    uid_t victim = geteuid();
    weft_comm_t *comm;
    weft_status_t st;
    char buf[16];
    (void)arg;
    (void)nranks;
    if (rank == 3) {
        weft_uid_info_t info;
        weft_unique_id_t forged;
        weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
        char text[160];
        usleep(300 * 1000); /* the root is up */
        if (setgid(other_uid) != 0 || setuid(other_uid) != 0)
            return rank_fail("cannot become uid %u: %s", (unsigned)other_uid, strerror(errno));
        if (can_read_victim_files(victim))
            return rank_fail("uid %u can open the job's secret file", (unsigned)other_uid);
        memset(&info, 0, sizeof(info));
        weft_addr_parse(root_text, &info.root);
        snprintf(text, sizeof(text), "weft-trust-local:%u:%s", (unsigned)victim, root_text);
        weft_sha256(text, strlen(text), info.secret);
        weft_uid_encode(&info, &forged);
        cfg.init_timeout_ms = 1500;
        rank_step("uid %u joins as rank 2 with a secret made from public values", (unsigned)other_uid);
        st = weft_comm_init(&forged, 3, 2, &cfg, &comm);
        if (st == WEFT_OK) {
            weft_comm_destroy(comm);
            return rank_fail("another user joined the job as rank 2");
        }
        rank_step("uid %u joins as rank 2 through WEFT_TRUST_LOCAL", (unsigned)other_uid);
        setenv("WEFT_RANK", "2", 1);
        setenv("WEFT_NRANKS", "3", 1);
        setenv("WEFT_ROOT", root_text, 1);
        setenv("WEFT_TRUST_LOCAL", "1", 1);
        st = weft_comm_init_from_env(&cfg, &comm);
        if (st == WEFT_OK) {
            weft_comm_destroy(comm);
            return rank_fail("another user joined the job through WEFT_TRUST_LOCAL");
        }
        return 0;
    }
    if (rank == 2)
        usleep(4000 * 1000); /* after the intruder tried */
    snprintf(buf, sizeof(buf), "%d", rank);
    setenv("WEFT_RANK", buf, 1);
    setenv("WEFT_NRANKS", "3", 1);
    setenv("WEFT_ROOT", root_text, 1);
    setenv("WEFT_TRUST_LOCAL", "1", 1);
    rank_step("init_from_env with WEFT_TRUST_LOCAL=1");
    st = weft_comm_init_from_env(NULL, &comm);
    if (st != WEFT_OK)
        return rank_fail("init_from_env: %s: %s", weft_status_string(st), weft_get_last_error());
    st = weft_bootstrap_barrier(comm);
    weft_comm_destroy(comm);
    return st == WEFT_OK ? 0 : rank_fail("barrier: %s", weft_get_last_error());
}

/* ---- 3, 4, 8, 10: one process each ------------------------------------ */

/* Runs fn in a child; 1 if it exits 0. */
static int in_child(int (*fn)(void *), void *arg)
{
    int status;
    pid_t pid;
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(fn(arg));
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return 0;
    if (!WIFEXITED(status))
        diag("child ended by signal %d", WTERMSIG(status));
    else if (WEXITSTATUS(status))
        diag("child exited with %d", WEXITSTATUS(status));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

typedef struct {
    const char *name, *value;
} env_case_t;

/* A value the parameter table refuses: init fails naming the variable,
 * before any network I/O. */
static int bad_param(void *arg)
{
    const env_case_t *c = arg;
    weft_unique_id_t uid;
    weft_comm_t *comm;
    weft_status_t st;
    setenv(c->name, c->value, 1);
    if (weft_get_unique_id(&uid) != WEFT_OK)
        return 2;
    st = weft_comm_init(&uid, 1, 0, NULL, &comm);
    if (st == WEFT_OK) {
        weft_comm_destroy(comm);
        fprintf(stderr, "# %s=%s accepted\n", c->name, c->value);
        return 1;
    }
    if (st != WEFT_ERR_INVALID_ARGUMENT || !strstr(weft_get_last_error(), c->name)) {
        fprintf(stderr, "# %s=%s: %s: %s\n", c->name, c->value, weft_status_string(st), weft_get_last_error());
        return 1;
    }
    return 0;
}

static int good_sizes(void *arg)
{
    weft_unique_id_t uid;
    weft_comm_t *comm;
    (void)arg;
    setenv("WEFT_COLL_SCRATCH_BYTES", "16M", 1);
    setenv("WEFT_P2P_SLOT_BYTES", "64k", 1);
    if (weft_param_int(WEFT_P_COLL_SCRATCH_BYTES) != 16L << 20 || weft_param_int(WEFT_P_P2P_SLOT_BYTES) != 65536)
        return 1;
    if (weft_get_unique_id(&uid) != WEFT_OK || weft_comm_init(&uid, 1, 0, NULL, &comm) != WEFT_OK)
        return 1;
    return weft_comm_destroy(comm) == WEFT_OK ? 0 : 1;
}

static int every_int_has_a_range(void *arg)
{
    int bad = 0;
    (void)arg;
    const weft_param_info_t *p;
    /* the core's and every backend section's */
    for (size_t i = 0; (p = weft_param_at(i)) != NULL; i++) {
        long v;
        if (p->type != WEFT_PARAM_INT)
            continue;
        if (!p->has_range || !weft_param_parse_info(p, p->def, &v)) {
            fprintf(stderr, "# %s: %s\n", p->name, p->has_range ? "default out of its range" : "no range");
            bad++;
        }
    }
    return bad == 0 ? 0 : 1;
}

static long task_count(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    long n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int huge_nranks(void *arg)
{
    weft_unique_id_t uid;
    weft_comm_t *comm;
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    long t0;
    weft_status_t st;
    struct rusage ru;
    (void)arg;
    cfg.init_timeout_ms = 1000;
    if (weft_get_unique_id(&uid) != WEFT_OK)
        return 2;
    t0 = now_ms();
    st = weft_comm_init(&uid, 100000000, 0, &cfg, &comm);
    if (st != WEFT_ERR_INVALID_ARGUMENT || now_ms() - t0 > 500) {
        fprintf(stderr, "# nranks 1e8: %s after %ld ms\n", weft_status_string(st), now_ms() - t0);
        return 1;
    }
    st = weft_comm_init(&uid, WEFT_MAX_RANKS + 1, 0, &cfg, &comm);
    if (st != WEFT_ERR_INVALID_ARGUMENT)
        return 1;
    getrusage(RUSAGE_SELF, &ru);
    if (ru.ru_maxrss > 256 * 1024) { /* KiB */
        fprintf(stderr, "# the refused inits peaked at %ld MiB\n", ru.ru_maxrss / 1024);
        return 1;
    }
    return 0;
}

/* Rank 0 of 2 alone, init deadline 500 ms, the root's 60 s: after the
 * failed init, no thread of the root (or anything else) is left. */
static int failed_init_threads(void *arg)
{
    weft_unique_id_t uid;
    weft_comm_t *comm;
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    long before = task_count(), after = -1;
    (void)arg;
    setenv("WEFT_INIT_TIMEOUT_MS", "60000", 1);
    cfg.init_timeout_ms = 500;
    if (weft_get_unique_id(&uid) != WEFT_OK)
        return 2;
    if (weft_comm_init(&uid, 2, 0, &cfg, &comm) != WEFT_ERR_TIMEOUT)
        return 3;
    for (int i = 0; i < 50 && (after = task_count()) != before; i++)
        usleep(10000);
    if (after != before)
        fprintf(stderr, "# %ld threads before, %ld after the failed init\n", before, after);
    return after == before ? 0 : 1;
}

static int double_destroy(void *arg)
{
    weft_unique_id_t uid;
    weft_comm_t *comm;
    (void)arg;
    if (weft_get_unique_id(&uid) != WEFT_OK || weft_comm_init(&uid, 1, 0, NULL, &comm) != WEFT_OK)
        return 2;
    if (weft_comm_destroy(comm) != WEFT_OK)
        return 3;
    if (weft_comm_destroy(comm) != WEFT_ERR_INVALID_ARGUMENT)
        return 4;
    if (weft_comm_abort(comm) != WEFT_ERR_INVALID_ARGUMENT || weft_comm_cancel(comm) != WEFT_ERR_INVALID_ARGUMENT ||
        weft_comm_cancel_device(comm) != WEFT_ERR_INVALID_ARGUMENT)
        return 5;
    /* a new one works, and the stale handle still names nothing */
    if (weft_get_unique_id(&uid) != WEFT_OK || weft_comm_init(&uid, 1, 0, NULL, &comm) != WEFT_OK)
        return 6;
    return weft_comm_destroy(comm) == WEFT_OK ? 0 : 7;
}

/* ---- 7: 0-byte registration at an allocation's start ------------------ */

static int zero_byte_reg(void *arg)
{
    weft_unique_id_t uid;
    weft_comm_t *comm;
    void *p[16];
    int lo = -1, hi = -1, rc = 0;
    weft_mem_t *m;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    (void)arg;
    if (weft_get_unique_id(&uid) != WEFT_OK || weft_comm_init(&uid, 1, 0, NULL, &comm) != WEFT_OK)
        return 2;
    for (int i = 0; i < 16; i++)
        if (weft_mem_alloc(comm, page, &p[i]) != WEFT_OK)
            return 3;
    for (int i = 0; i < 16 && lo < 0; i++)
        for (int k = 0; k < 16; k++)
            if ((char *)p[i] + page == (char *)p[k]) {
                lo = i;
                hi = k;
                break;
            }
    if (lo < 0) {
        fprintf(stderr, "# no two adjacent allocations\n");
        return 77;
    }
    if (weft_mem_register(comm, p[hi], 0, WEFT_TRANSPORT_IPC, &m) != WEFT_OK)
        return 4;
    /* the registration belongs to p[hi]: it cannot be freed, p[lo] can */
    if (weft_mem_free(comm, p[hi]) == WEFT_OK)
        rc = 5;
    else if (weft_mem_free(comm, p[lo]) != WEFT_OK)
        rc = 6;
    weft_mem_deregister(m);
    if (!rc && weft_mem_free(comm, p[hi]) != WEFT_OK)
        rc = 7;
    weft_comm_destroy(comm);
    return rc;
}

/* ---- 9: a killed peer -------------------------------------------------- */

static int killed_in_collectives(int rank, int nranks, void *arg)
{
    weft_comm_t *comm;
    weft_stream_t *s;
    float *buf;
    size_t n = 1 << 14;
    weft_status_t st = WEFT_OK;
    long t0 = 0, took;
    int iter = 0;
    (void)arg;
    if (!job_id(rank, &id))
        return 1;
    if (weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if (weft_stream_create(comm, &s) != WEFT_OK || weft_mem_alloc(comm, n * sizeof(float), (void **)&buf) != WEFT_OK)
        return rank_fail("stream/alloc: %s", weft_get_last_error());
    rank_step("allreduce loop");
    for (long start = now_ms(); st == WEFT_OK; iter++) {
        if (rank == 2 && now_ms() - start > 500)
            raise(SIGKILL);
        if (now_ms() - start > 20000)
            return rank_fail("the loop never failed");
        t0 = now_ms();
        st = weft_allreduce(buf, buf, n, WEFT_FLOAT32, WEFT_SUM, comm, s);
        if (st == WEFT_OK)
            st = weft_stream_synchronize(s);
    }
    took = now_ms() - t0;
    diag("rank %d: call %d failed after %ld ms: %s", rank, iter, took, weft_get_last_error());
    if (st != WEFT_ERR_REMOTE)
        return rank_fail("expected WEFT_ERR_REMOTE, got %s (%s)", weft_status_string(st), weft_get_last_error());
    if (!strstr(weft_get_last_error(), "rank 2"))
        return rank_fail("the error does not name rank 2: %s", weft_get_last_error());
    if (took > 4000)
        return rank_fail("the error took %ld ms", took);
    weft_comm_destroy(comm);
    return 0;
}

/* ---- 5, 6: the tools ----------------------------------------------------- */

static int run_capture(const char *cmd, char *out, size_t len)
{
    FILE *f = popen(cmd, "r");
    size_t got = 0;
    if (!f)
        return -1;
    while (got + 1 < len) {
        size_t k = fread(out + got, 1, len - 1 - got, f);
        if (k == 0)
            break;
        got += k;
    }
    out[got] = '\0';
    return pclose(f);
}

static int info_hides_secret(void)
{
    weft_unique_id_t uid;
    weft_uid_info_t info;
    char text[WEFT_UNIQUE_ID_TEXT_BYTES], secret[2 * WEFT_SECRET_BYTES + 1], cmd[512];
    static char out[1 << 16];
    memset(&info, 0, sizeof(info));
    weft_addr_parse("127.0.0.1:4000", &info.root);
    weft_random_bytes(info.secret, sizeof(info.secret));
    weft_uid_encode(&info, &uid);
    weft_unique_id_format(&uid, text, sizeof(text));
    weft_hex_encode(info.secret, WEFT_SECRET_BYTES, secret);
    snprintf(cmd, sizeof(cmd), "WEFT_UNIQUE_ID=%s %s/tools/weft-info -c 2>&1", text, TOP_BUILDDIR);
    if (run_capture(cmd, out, sizeof(out)) != 0 || !strstr(out, "WEFT_UNIQUE_ID"))
        return 0;
    /* neither the id nor its secret, nor any 16 hex digits of the secret */
    for (size_t i = 0; i + 16 <= 2 * WEFT_SECRET_BYTES; i++) {
        char piece[17];
        memcpy(piece, secret + i, 16);
        piece[16] = '\0';
        if (strstr(out, piece))
            return 0;
    }
    return !strstr(out, text);
}

/* Children of @p parent (from /proc); returns how many. */
static int children_of(pid_t parent, pid_t *out, int max)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL && n < max) {
        char path[300], buf[512], *p;
        FILE *f;
        long ppid;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        p = fgets(buf, sizeof(buf), f);
        fclose(f);
        if (!p || !(p = strrchr(buf, ')')) || sscanf(p + 2, "%*c %ld", &ppid) != 1)
            continue;
        if (ppid == (long)parent)
            out[n++] = (pid_t)atol(e->d_name);
    }
    closedir(d);
    return n;
}

/* weft-perf --ranks 3 on a long allreduce run; one rank is killed from
 * outside: the launcher names it and its signal, ends the others and
 * exits non-zero, within seconds. */
static int launcher_names_the_dead(void)
{
    char path[512], want[64];
    static char out[1 << 16];
    int pfd[2], status = 0, got = 0, nkids = 0;
    pid_t pid, kids[8], victim;
    long t_kill, took;
    snprintf(path, sizeof(path), "%s/tools/weft-perf", TOP_BUILDDIR);
    if (pipe(pfd) != 0)
        return 0;
    fflush(stdout);
    if ((pid = fork()) == 0) {
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        close(pfd[0]);
        close(pfd[1]);
        execl(path, path, "--ranks", "3", "allreduce", "-b", "4", "-e", "4", "-w", "1", "-n", "100000000",
              (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    for (int i = 0; i < 200 && nkids < 3; i++) {
        usleep(20000);
        nkids = children_of(pid, kids, 8);
    }
    if (nkids < 3) {
        diag("weft-perf has %d children", nkids);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        close(pfd[0]);
        return 0;
    }
    usleep(1000 * 1000); /* in the allreduce loop */
    victim = kids[nkids - 1];
    kill(victim, SIGKILL);
    t_kill = now_ms();
    for (;;) {
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        ssize_t k;
        if (poll(&p, 1, 100) > 0) {
            if ((k = read(pfd[0], out + got, sizeof(out) - 1 - (size_t)got)) <= 0)
                break;
            got += (int)k;
        }
        if (now_ms() - t_kill > 20000)
            break;
    }
    out[got] = '\0';
    close(pfd[0]);
    if (now_ms() - t_kill > 20000) {
        kill(pid, SIGKILL);
        for (int i = 0; i < nkids; i++)
            kill(kids[i], SIGKILL);
    }
    waitpid(pid, &status, 0);
    took = now_ms() - t_kill;
    diag("weft-perf exited with %d, %ld ms after the kill", WIFEXITED(status) ? WEXITSTATUS(status) : -1, took);
    snprintf(want, sizeof(want), "(pid %ld) was killed by signal 9", (long)victim);
    if (!WIFEXITED(status) || WEXITSTATUS(status) == 0 || took > 8000 || !strstr(out, want)) {
        diag("output:\n%s", out);
        return 0;
    }
    return 1;
}

/* RELIABILITY_ONLY=3,9 runs only those items (the others are skipped):
 * for checking that each case fails without its fix. */
static int want(int item, int nok)
{
    const char *only = getenv("RELIABILITY_ONLY");
    char buf[16];
    if (!only || !*only)
        return 1;
    for (const char *p = only; *p;) {
        size_t n = strcspn(p, ",");
        if (n < sizeof(buf)) {
            memcpy(buf, p, n);
            buf[n] = '\0';
            if (atoi(buf) == item)
                return 1;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    for (int i = 0; i < nok; i++)
        skip("%d: not selected (RELIABILITY_ONLY=%s)", item, only);
    return 0;
}

int main(void)
{
    static const env_case_t bad[] = {
        {"WEFT_BOOTSTRAP_MAX_PENDING", "-1"},
        {"WEFT_BOOTSTRAP_MAX_PENDING", "0"},
        {"WEFT_BOOTSTRAP_MAX_PENDING", "12abc"},
        {"WEFT_NET_SOCKETS", "99"},
        {"WEFT_NET_CHUNK_BYTES", "1K"},
        {"WEFT_COLL_SCRATCH_BYTES", "3T"},
        {"WEFT_DEVICE_TIMEOUT_MS", "-5"},
    };
    struct passwd *nobody;
    ranks_result_t res;
    int all;

    plan(12);
    setenv("WEFT_BOOTSTRAP_MAX_PENDING", "16", 1);
    setenv("WEFT_HANDSHAKE_TIMEOUT_MS", "2000", 1);

    /* 1 */
    if (want(1, 1)) {
        snprintf(addr_file, sizeof(addr_file), "/tmp/weft-reliability-%ld.addr", (long)getpid());
        ok(run_ranks(4, 60000, flood_rank, NULL, NULL),
           "1: 3 ranks run barriers while rank 1's own listener takes 200 connections at a time");
        unlink(addr_file);
    }

    /* 2 */
    nobody = getpwnam("nobody");
    if (!want(2, 1)) {
        /* skipped */
    } else if (geteuid() != 0 || !nobody) {
        skip("2: needs root to act as a second user (running as uid %u)", (unsigned)geteuid());
    } else {
        other_uid = nobody->pw_uid;
        snprintf(root_text, sizeof(root_text), "127.0.0.1:%d", tap_free_port());
        ok(run_ranks(4, 60000, trust_rank, NULL, NULL),
           "2: WEFT_TRUST_LOCAL=1: another user (uid %u) neither reads the secret nor joins; the real rank 2 does",
           (unsigned)other_uid);
    }

    /* 3 */
    if (want(3, 3)) {
        ok(in_child(every_int_has_a_range, NULL), "3: every integer parameter has a range that holds its default");
        all = 1;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            all &= in_child(bad_param, (void *)&bad[i]);
        ok(all, "3: init refuses malformed or out-of-range parameters, naming the variable");
        ok(in_child(good_sizes, NULL), "3: sizes take K/M/G suffixes");
    }

    /* 4 */
    if (want(4, 1))
        ok(in_child(huge_nranks, NULL), "4: nranks beyond WEFT_MAX_RANKS (%d) is refused at once", WEFT_MAX_RANKS);

    /* 5 */
    if (want(5, 1))
        ok(info_hides_secret(), "5: weft-info -c shows neither WEFT_UNIQUE_ID nor its secret");

    /* 6 */
    if (want(6, 1))
        ok(launcher_names_the_dead(),
           "6: weft-perf --ranks 3: a killed rank is named with its signal, the job fails fast");

    /* 7 */
    if (want(7, 1))
        ok(in_child(zero_byte_reg, NULL),
           "7: a 0-byte registration at an allocation's start belongs to it, not to the one before");

    /* 8 */
    if (want(8, 1))
        ok(in_child(failed_init_threads, NULL), "8: after a failed init no root thread is left running");

    /* 9 */
    if (want(9, 1)) {
        long t0 = now_ms();
        run_ranks(3, 40000, killed_in_collectives, NULL, &res);
        ok(!res.timed_out && res.code[2] == -SIGKILL && res.exited[0] && res.code[0] == 0 && res.exited[1] &&
               res.code[1] == 0,
           "9: a rank killed during allreduces: the others fail with WEFT_ERR_REMOTE naming it within seconds");
        diag("whole case: %ld ms", now_ms() - t0);
    }

    /* 10 */
    if (want(10, 1))
        ok(in_child(double_destroy, NULL), "10: a second weft_comm_destroy or an abort after destroy is refused");

    return test_done();
}
