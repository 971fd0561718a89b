/* Logging and the per-thread last-error message. */
#ifndef WEFT_LOG_H
#define WEFT_LOG_H

#include "weft.h"

typedef enum {
    WEFT_LOG_NONE = 0,
    WEFT_LOG_ERROR,
    WEFT_LOG_WARN,
    WEFT_LOG_INFO,
    WEFT_LOG_DEBUG,
    WEFT_LOG_TRACE
} weft_log_level_t;

/* Subsystems, selectable with WEFT_LOG_SUBSYS=init,boot,... (or ^boot). */
typedef enum {
    WEFT_SUB_INIT = 1u << 0,
    WEFT_SUB_BOOT = 1u << 1,
    WEFT_SUB_NET = 1u << 2,
    WEFT_SUB_MEM = 1u << 3,
    WEFT_SUB_IPC = 1u << 4,
    WEFT_SUB_GPU = 1u << 5,
    WEFT_SUB_COLL = 1u << 6,
    WEFT_SUB_PROXY = 1u << 7,
    WEFT_SUB_ALL = 0xffu
} weft_log_subsys_t;

/* Rank shown in messages of this process (-1 before a communicator). */
void weft_log_set_rank(int rank);
/* That rank (-1 before a communicator); for messages of code that has no communicator at hand. */
int weft_log_rank(void);
int weft_log_enabled(weft_log_level_t level, unsigned subsys);
void weft_log_write(weft_log_level_t level, unsigned subsys, const char *fmt,
                    ...) __attribute__((format(printf, 3, 4)));

/*
 * weft_error() logs at error level *and* records the message as this
 * thread's last error (weft_get_last_error). Use it once, where the error
 * is detected; callers above propagate the status quietly.
 */
void weft_error_set(unsigned subsys, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Records the last error without logging (expected failures, e.g. probes). */
void weft_error_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define WEFT_LOG(level, sub, ...)                                            \
    do {                                                                     \
        if (weft_log_enabled((level), (sub)))                                \
            weft_log_write((level), (sub), __VA_ARGS__);                     \
    } while (0)
#define weft_warn(sub, ...) WEFT_LOG(WEFT_LOG_WARN, sub, __VA_ARGS__)
#define weft_info(sub, ...) WEFT_LOG(WEFT_LOG_INFO, sub, __VA_ARGS__)
#define weft_debug(sub, ...) WEFT_LOG(WEFT_LOG_DEBUG, sub, __VA_ARGS__)
#define weft_trace(sub, ...) WEFT_LOG(WEFT_LOG_TRACE, sub, __VA_ARGS__)
#define weft_error(sub, ...) weft_error_set((sub), __VA_ARGS__)

#endif
