/*
 * Fault points (see fault.h): WEFT_FAULT is parsed once into a small rule
 * table; each site counts its passes and, on the pass a rule names, does
 * the rule's action.
 */
#include "config.h"
#include "fault.h"
#include "log.h"
#include "param.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_RULES 16

typedef enum { ACT_KILL, ACT_STOP, ACT_CLOSE, ACT_RESET, ACT_EINTR, ACT_SHORT, ACT_DELAY, ACT_ERRNO } fault_action_t;

typedef struct {
    weft_fault_site_t site;
    unsigned long nth;
    int and_later; /* "nth+" */
    fault_action_t action;
    long arg;      /* delay: ms; errno: the number */
} fault_rule_t;

/* What a site can do besides kill, stop, delay and errno: it has a
 * socket (close, reset), a system call that may fail with EINTR, one that
 * moves bytes (short). */
enum { CAN_FD = 1, CAN_EINTR = 2, CAN_SHORT = 4, CAN_IO = CAN_EINTR | CAN_SHORT };

static const struct {
    const char *name;
    unsigned can;
    unsigned subsys;
} sites[WEFT_FAULT_SITE_COUNT] = {
    [WEFT_FAULT_BOOT_CONNECT] = {"boot.connect", 0, WEFT_SUB_BOOT},
    [WEFT_FAULT_BOOT_SEND] = {"boot.send", CAN_FD | CAN_IO, WEFT_SUB_BOOT},
    [WEFT_FAULT_BOOT_RECV] = {"boot.recv", CAN_FD | CAN_IO, WEFT_SUB_BOOT},
    [WEFT_FAULT_BOOT_ACCEPT] = {"boot.accept", CAN_EINTR, WEFT_SUB_BOOT},
    [WEFT_FAULT_PROXY_REQUEST] = {"proxy.request", 0, WEFT_SUB_PROXY},
    [WEFT_FAULT_PROXY_COMPLETION] = {"proxy.completion", 0, WEFT_SUB_PROXY},
    [WEFT_FAULT_NET_SEND] = {"net.send", CAN_FD | CAN_IO, WEFT_SUB_NET},
    [WEFT_FAULT_NET_RECV] = {"net.recv", CAN_FD | CAN_IO, WEFT_SUB_NET},
    [WEFT_FAULT_NET_SIDEBAND] = {"net.sideband", CAN_FD | CAN_IO, WEFT_SUB_NET},
    [WEFT_FAULT_COLL_LAUNCH] = {"coll.launch", 0, WEFT_SUB_COLL},
    [WEFT_FAULT_COLL_WAIT] = {"coll.wait", 0, WEFT_SUB_COLL},
    [WEFT_FAULT_REG_SERVE] = {"reg.serve", 0, WEFT_SUB_MEM},
    [WEFT_FAULT_DEVICE_LOST] = {"device.lost", 0, WEFT_SUB_GPU},
};

static const struct {
    const char *name;
    fault_action_t action;
    unsigned needs;
} actions[] = {
    {"kill", ACT_KILL, 0},   {"stop", ACT_STOP, 0},     {"close", ACT_CLOSE, CAN_FD},
    {"reset", ACT_RESET, CAN_FD}, {"eintr", ACT_EINTR, CAN_EINTR}, {"short", ACT_SHORT, CAN_SHORT},
    {"delay", ACT_DELAY, 0}, {"errno", ACT_ERRNO, 0},
};

/* The errors a test may ask for by name. */
static const struct {
    const char *name;
    int value;
} errnos[] = {
    {"ECONNRESET", ECONNRESET}, {"ECONNREFUSED", ECONNREFUSED}, {"ECONNABORTED", ECONNABORTED},
    {"EPIPE", EPIPE},           {"ETIMEDOUT", ETIMEDOUT},       {"EHOSTUNREACH", EHOSTUNREACH},
    {"ENETUNREACH", ENETUNREACH}, {"ENOMEM", ENOMEM},           {"ENOBUFS", ENOBUFS},
    {"EMFILE", EMFILE},         {"ENFILE", ENFILE},             {"EIO", EIO},
    {"EAGAIN", EAGAIN},         {"EINTR", EINTR},               {"EINVAL", EINVAL},
};

int weft_fault_armed;
static fault_rule_t rules[MAX_RULES];
static int nrules;
static unsigned long hits[WEFT_FAULT_SITE_COUNT];
static unsigned long fired;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static weft_status_t init_status = WEFT_OK;

static int parse_ulong(const char *s, size_t n, unsigned long min, unsigned long max, unsigned long *out)
{
    unsigned long v = 0;
    if (n == 0 || n > 10)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    if (v < min || v > max)
        return 0;
    *out = v;
    return 1;
}

/* One entry "site:nth:action[=arg]" of @p n bytes at @p s. */
static int parse_rule(const char *s, size_t n, fault_rule_t *r, char *why, size_t len)
{
    const char *c1 = memchr(s, ':', n), *c2, *end = s + n, *act, *eq;
    size_t k;
    int i;

    if (!c1 || !(c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1)))) {
        snprintf(why, len, "'%.*s' is not site:nth:action", (int)WEFT_MIN(n, 64), s);
        return 0;
    }
    for (i = 0; i < WEFT_FAULT_SITE_COUNT; i++)
        if (strlen(sites[i].name) == (size_t)(c1 - s) && memcmp(sites[i].name, s, (size_t)(c1 - s)) == 0)
            break;
    if (i == WEFT_FAULT_SITE_COUNT) {
        snprintf(why, len, "unknown site '%.*s'", (int)WEFT_MIN((size_t)(c1 - s), 32), s);
        return 0;
    }
    r->site = (weft_fault_site_t)i;
    k = (size_t)(c2 - c1 - 1);
    r->and_later = k > 0 && c1[k] == '+';
    if (!parse_ulong(c1 + 1, k - (size_t)r->and_later, 1, 1000000000ul, &r->nth)) {
        snprintf(why, len, "'%.*s': nth must be a number from 1 (optionally followed by +)", (int)WEFT_MIN(n, 64),
                 s);
        return 0;
    }
    act = c2 + 1;
    eq = memchr(act, '=', (size_t)(end - act));
    k = (size_t)((eq ? eq : end) - act);
    for (i = 0; i < (int)WEFT_ARRAY_SIZE(actions); i++)
        if (strlen(actions[i].name) == k && memcmp(actions[i].name, act, k) == 0)
            break;
    if (i == (int)WEFT_ARRAY_SIZE(actions)) {
        snprintf(why, len, "unknown action '%.*s'", (int)WEFT_MIN(k, 32), act);
        return 0;
    }
    r->action = actions[i].action;
    if ((actions[i].needs & sites[r->site].can) != actions[i].needs) {
        snprintf(why, len, "action %s needs %s, which site %s has not", actions[i].name,
                 actions[i].needs == CAN_FD      ? "a socket"
                 : actions[i].needs == CAN_EINTR ? "a system call"
                                                 : "a system call that moves bytes",
                 sites[r->site].name);
        return 0;
    }
    r->arg = r->action == ACT_DELAY ? 1000 : r->action == ACT_ERRNO ? ECONNRESET : 0;
    if (eq) {
        unsigned long ms;
        size_t alen = (size_t)(end - eq - 1);
        if (r->action == ACT_DELAY && parse_ulong(eq + 1, alen, 0, 3600000ul, &ms)) {
            r->arg = (long)ms;
        } else if (r->action == ACT_ERRNO) {
            for (i = 0; i < (int)WEFT_ARRAY_SIZE(errnos); i++)
                if (strlen(errnos[i].name) == alen && memcmp(errnos[i].name, eq + 1, alen) == 0)
                    break;
            if (i == (int)WEFT_ARRAY_SIZE(errnos)) {
                snprintf(why, len, "unknown errno '%.*s'", (int)WEFT_MIN(alen, 32), eq + 1);
                return 0;
            }
            r->arg = errnos[i].value;
        } else {
            snprintf(why, len, "'%.*s': bad argument of %s", (int)WEFT_MIN(n, 64), s, actions[r->action].name);
            return 0;
        }
    }
    return 1;
}

/* Parses @p spec into @p out (at most MAX_RULES); 1 on success. */
static int parse_spec(const char *spec, fault_rule_t *out, int *count, char *why, size_t len)
{
    int n = 0;
    const char *p = spec;
    if (!spec)
        return 0;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t k = comma ? (size_t)(comma - p) : strlen(p);
        if (n == MAX_RULES) {
            snprintf(why, len, "more than %d entries", MAX_RULES);
            return 0;
        }
        if (!parse_rule(p, k, &out[n], why, len))
            return 0;
        n++;
        p += k;
        if (*p == ',' && !*++p) {
            snprintf(why, len, "an empty entry at the end");
            return 0;
        }
    }
    *count = n;
    return 1;
}

weft_status_t weft_fault_parse(const char *spec, char *why, size_t len)
{
    fault_rule_t tmp[MAX_RULES];
    char buf[160];
    int n;
    if (!why || len == 0) {
        why = buf;
        len = sizeof(buf);
    }
    why[0] = '\0';
    if (!spec) {
        snprintf(why, len, "no text");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    return parse_spec(spec, tmp, &n, why, len) ? WEFT_OK : WEFT_ERR_INVALID_ARGUMENT;
}

static void fault_load(void)
{
    const char *spec = weft_param_str(WEFT_P_FAULT);
    char why[160] = "";
    if (!spec || !*spec)
        return;
    if (!parse_spec(spec, rules, &nrules, why, sizeof(why))) {
        nrules = 0;
        init_status = WEFT_ERR_INVALID_ARGUMENT;
        weft_error(WEFT_SUB_INIT, "WEFT_FAULT=%s is not valid: %s", spec, why);
        return;
    }
    weft_warn(WEFT_SUB_INIT, "fault points armed: WEFT_FAULT=%s", spec);
    /* release: the rules are written before any site sees the flag */
    __atomic_store_n(&weft_fault_armed, nrules > 0, __ATOMIC_RELEASE);
}

weft_status_t weft_fault_init(void)
{
    pthread_once(&fault_once, fault_load);
    if (init_status != WEFT_OK)
        weft_error_note("WEFT_FAULT=%s is not valid", weft_param_str(WEFT_P_FAULT));
    return init_status;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int weft_fault_hit(weft_fault_site_t site, int fd, size_t *len)
{
    unsigned long n;
    int ret = 0;

    if ((int)site < 0 || site >= WEFT_FAULT_SITE_COUNT || !__atomic_load_n(&weft_fault_armed, __ATOMIC_ACQUIRE))
        return 0;
    n = __atomic_add_fetch(&hits[site], 1, __ATOMIC_RELAXED);
    for (int i = 0; i < nrules; i++) {
        const fault_rule_t *r = &rules[i];
        if (r->site != site || !(n == r->nth || (r->and_later && n > r->nth)))
            continue;
        /* a fault a test asked for: said at info level, the error it
         * causes is logged where it is detected */
        weft_info(sites[site].subsys, "fault point %s, pass %lu: %s", sites[site].name, n, actions[r->action].name);
        __atomic_add_fetch(&fired, 1, __ATOMIC_RELAXED);
        switch (r->action) {
        case ACT_KILL:
            kill(getpid(), SIGKILL);
            break;
        case ACT_STOP:
            kill(getpid(), SIGSTOP);
            break;
        case ACT_CLOSE:
            if (fd >= 0)
                shutdown(fd, SHUT_RDWR);
            break;
        case ACT_RESET:
            if (fd >= 0) {
                /* Disconnecting a TCP socket sends a reset and keeps the
                 * descriptor (its owner still closes it); other sockets
                 * are shut down. */
                struct sockaddr sa = {.sa_family = AF_UNSPEC};
                struct linger lg = {1, 0};
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
                if (connect(fd, &sa, sizeof(sa)) != 0)
                    shutdown(fd, SHUT_RDWR);
            }
            break;
        case ACT_EINTR:
            errno = EINTR;
            ret = -1;
            break;
        case ACT_SHORT:
            if (len && *len > 1)
                *len /= 2;
            break;
        case ACT_DELAY:
            sleep_ms(r->arg);
            break;
        case ACT_ERRNO:
            errno = (int)r->arg;
            ret = -1;
            break;
        }
        if (ret < 0)
            return ret;
    }
    return 0;
}

unsigned long weft_fault_fired(void)
{
    return __atomic_load_n(&fired, __ATOMIC_RELAXED);
}

weft_status_t weft_fault_status(weft_fault_site_t site)
{
    weft_status_t status;
    int err;
    if (weft_fault_hit(site, -1, NULL) == 0)
        return WEFT_OK;
    err = errno;
    switch (err) {
    case ENOMEM:
    case ENOBUFS:
        status = WEFT_ERR_NO_MEMORY;
        break;
    case ETIMEDOUT:
        status = WEFT_ERR_TIMEOUT;
        break;
    case ECONNRESET:
    case ECONNREFUSED:
    case ECONNABORTED:
    case EPIPE:
    case EHOSTUNREACH:
    case ENETUNREACH:
        status = WEFT_ERR_REMOTE;
        break;
    default:
        status = WEFT_ERR_SYSTEM;
    }
    weft_error(sites[site].subsys, "rank %d: %s failed (injected fault): %s", weft_log_rank(), sites[site].name,
               strerror(err));
    return status;
}

ssize_t weft_fault_send(weft_fault_site_t site, int fd, const void *buf, size_t len, int flags)
{
    if (weft_fault_hit(site, fd, &len) < 0)
        return -1;
    return send(fd, buf, len, flags);
}

ssize_t weft_fault_recv(weft_fault_site_t site, int fd, void *buf, size_t len, int flags)
{
    if (weft_fault_hit(site, fd, &len) < 0)
        return -1;
    return recv(fd, buf, len, flags);
}

/* A copy of @p msg whose iovecs end after @p len bytes (iov: room for all). */
static struct msghdr msg_cut(const struct msghdr *msg, struct iovec *iov, size_t len)
{
    struct msghdr m = *msg;
    size_t k = 0;
    for (; k < msg->msg_iovlen && len > 0; k++) {
        iov[k] = msg->msg_iov[k];
        iov[k].iov_len = WEFT_MIN(iov[k].iov_len, len);
        len -= iov[k].iov_len;
    }
    m.msg_iov = iov;
    m.msg_iovlen = k;
    return m;
}

static ssize_t msg_io(weft_fault_site_t site, int fd, struct msghdr *msg, int flags, int sending)
{
    size_t total = 0, len;
    for (size_t k = 0; k < msg->msg_iovlen; k++)
        total += msg->msg_iov[k].iov_len;
    len = total;
    if (weft_fault_hit(site, fd, &len) < 0)
        return -1;
    if (len < total && msg->msg_iovlen <= 64) {
        struct iovec iov[64];
        struct msghdr m = msg_cut(msg, iov, len);
        ssize_t n = sending ? sendmsg(fd, &m, flags) : recvmsg(fd, &m, flags);
        if (!sending) {
            msg->msg_flags = m.msg_flags;
            msg->msg_controllen = m.msg_controllen;
        }
        return n;
    }
    return sending ? sendmsg(fd, msg, flags) : recvmsg(fd, msg, flags);
}

ssize_t weft_fault_sendmsg(weft_fault_site_t site, int fd, const struct msghdr *msg, int flags)
{
    return msg_io(site, fd, (struct msghdr *)msg, flags, 1);
}

ssize_t weft_fault_recvmsg(weft_fault_site_t site, int fd, struct msghdr *msg, int flags)
{
    return msg_io(site, fd, msg, flags, 0);
}
