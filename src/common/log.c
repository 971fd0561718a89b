#include "config.h"
#include "log.h"
#include "param.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static weft_log_level_t log_level = WEFT_LOG_WARN;
static unsigned log_subsys = WEFT_SUB_ALL;
static FILE *log_file; /* NULL: stderr */
static char log_host[64] = "?";
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_rank = -1;
static __thread char last_error[512];

static const struct {
    const char *name;
    unsigned bit;
} subsys_names[] = {
    {"init", WEFT_SUB_INIT}, {"boot", WEFT_SUB_BOOT}, {"net", WEFT_SUB_NET},
    {"mem", WEFT_SUB_MEM},   {"ipc", WEFT_SUB_IPC},   {"gpu", WEFT_SUB_GPU},
    {"coll", WEFT_SUB_COLL}, {"proxy", WEFT_SUB_PROXY}, {"all", WEFT_SUB_ALL},
};

static const char *level_names[] = {"NONE", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

static unsigned parse_subsys(const char *spec)
{
    int exclude = spec[0] == '^';
    unsigned mask = 0;
    char buf[256];
    char *save = NULL;

    snprintf(buf, sizeof(buf), "%s", spec + exclude);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (size_t i = 0; i < sizeof(subsys_names) / sizeof(subsys_names[0]); i++)
            if (strcasecmp(tok, subsys_names[i].name) == 0)
                mask |= subsys_names[i].bit;
    }
    return exclude ? (WEFT_SUB_ALL & ~mask) : mask;
}

static void open_log_file(const char *pattern)
{
    char path[4096];
    size_t o = 0;
    for (const char *p = pattern; *p && o + 32 < sizeof(path); p++) {
        if (p[0] == '%' && p[1] == 'h') {
            o += (size_t)snprintf(path + o, sizeof(path) - o, "%s", log_host);
            p++;
        } else if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(path + o, sizeof(path) - o, "%d", (int)getpid());
            p++;
        } else {
            path[o++] = *p;
        }
    }
    path[o] = '\0';
    log_file = fopen(path, "ae");
}

/* Takes the level, subsystems and file (log_lock held). Level and
 * subsystems are atomics: weft_log_enabled reads them without the lock. */
static void log_configure(const char *lvl, const char *subsys, const char *file)
{
    weft_log_level_t level = WEFT_LOG_WARN;
    for (int i = 0; i <= WEFT_LOG_TRACE; i++)
        if (strcasecmp(lvl, level_names[i]) == 0)
            level = (weft_log_level_t)i;
    __atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
    __atomic_store_n(&log_subsys, parse_subsys(subsys), __ATOMIC_RELAXED);
    if (log_file)
        fclose(log_file); /* writers hold log_lock too */
    log_file = NULL;
    if (file && *file)
        open_log_file(file);
}

static void log_init(void)
{
    if (gethostname(log_host, sizeof(log_host)) != 0)
        snprintf(log_host, sizeof(log_host), "?");
    log_host[sizeof(log_host) - 1] = '\0';
    pthread_mutex_lock(&log_lock);
    log_configure(weft_param_str(WEFT_P_LOG_LEVEL), weft_param_str(WEFT_P_LOG_SUBSYS),
                  weft_param_str(WEFT_P_LOG_FILE));
    pthread_mutex_unlock(&log_lock);
}

void weft_log_reset(void)
{
    pthread_once(&log_once, log_init);
    pthread_mutex_lock(&log_lock);
    log_configure(weft_param_str_now(WEFT_P_LOG_LEVEL), weft_param_str_now(WEFT_P_LOG_SUBSYS),
                  weft_param_str_now(WEFT_P_LOG_FILE));
    pthread_mutex_unlock(&log_lock);
}

void weft_log_set_rank(int rank)
{
    __atomic_store_n(&log_rank, rank, __ATOMIC_RELAXED);
}

int weft_log_rank(void)
{
    return __atomic_load_n(&log_rank, __ATOMIC_RELAXED);
}

int weft_log_enabled(weft_log_level_t level, unsigned subsys)
{
    pthread_once(&log_once, log_init);
    return level <= __atomic_load_n(&log_level, __ATOMIC_RELAXED) &&
           (subsys & __atomic_load_n(&log_subsys, __ATOMIC_RELAXED));
}

static void log_vwrite(weft_log_level_t level, const char *fmt, va_list ap)
{
    char msg[1024];
    FILE *out;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    pthread_mutex_lock(&log_lock);
    out = log_file ? log_file : stderr;
    /* Never stdout: applications own it. */
    fprintf(out, "[%s:%d:%d] weft %s: %s\n", log_host, (int)getpid(),
            __atomic_load_n(&log_rank, __ATOMIC_RELAXED), level_names[level], msg);
    fflush(out);
    pthread_mutex_unlock(&log_lock);
}

void weft_log_write(weft_log_level_t level, unsigned subsys, const char *fmt, ...)
{
    va_list ap;
    (void)subsys;
    va_start(ap, fmt);
    log_vwrite(level, fmt, ap);
    va_end(ap);
}

/*
 * Formats into a temporary first and copies after: an argument may be
 * weft_get_last_error() itself (the buffer this writes), and vsnprintf
 * with overlapping source and destination garbles the message.
 */
static void last_error_vset(const char *fmt, va_list ap)
{
    char tmp[sizeof(last_error)];
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    memcpy(last_error, tmp, sizeof(last_error));
}

void weft_error_set(unsigned subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    last_error_vset(fmt, ap);
    va_end(ap);
    if (weft_log_enabled(WEFT_LOG_ERROR, subsys))
        weft_log_write(WEFT_LOG_ERROR, subsys, "%s", last_error);
}

void weft_error_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    last_error_vset(fmt, ap);
    va_end(ap);
}

const char *weft_get_last_error(void)
{
    return last_error;
}
