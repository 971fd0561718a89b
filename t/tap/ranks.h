/*
 * Multi-rank tests: fork N ranks, bound their run time, and report who
 * was waiting for what if they do not finish.
 *
 * Each rank runs fn(rank, nranks, arg) in a child process and returns 0
 * on success. A rank describes what it is doing with rank_step() (shown if
 * it hangs) and records failures with rank_fail() (shown by the parent).
 */
#ifndef WEFT_TAP_RANKS_H
#define WEFT_TAP_RANKS_H

#include <stddef.h>

typedef int (*rank_fn_t)(int rank, int nranks, void *arg);

#define RANKS_MAX 64

typedef struct {
    int exited[RANKS_MAX];     /* 1 if the rank exited by itself */
    int code[RANKS_MAX];       /* exit code (fn's return value) or -signal */
    int timed_out;             /* 1 if the parent had to kill ranks */
} ranks_result_t;

/*
 * Runs fn on @p nranks forked ranks; kills them all after @p timeout_ms.
 * Returns 1 if every rank exited 0 in time; else prints diagnostics.
 */
int run_ranks(int nranks, int timeout_ms, rank_fn_t fn, void *arg, ranks_result_t *result);
/* In a rank: what it is doing now (shown on timeout). */
void rank_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* In a rank: a failed check (shown by the parent). Returns 1. */
int rank_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* In a rank: its index, -1 in the parent. */
int rank_self(void);
/*
 * In a rank: rank @p from publishes @p len (<= 4096) bytes, every other
 * rank waits (up to 30 s) and receives them. Returns 1 on success. Used to
 * hand out a unique id made by rank 0, so the parent never starts threads
 * before forking.
 */
int rank_share(int from, void *buf, size_t len);
/* Milliseconds since an arbitrary start (monotonic). */
long now_ms(void);

/* A loopback TCP port free a moment ago (for WEFT_ROOT in tests). */
int tap_free_port(void);

#endif
