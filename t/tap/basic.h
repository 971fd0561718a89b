/* A small TAP library: tests read as statements of fact. */
#ifndef WEFT_TAP_BASIC_H
#define WEFT_TAP_BASIC_H

#include <stdarg.h>
#include "weft.h"

void plan(int n);
void skip_all(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void bail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
int ok(int success, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int is_int(long want, long got, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int is_string(const char *want, const char *got, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Like is_int for weft_status_t: a failure names both statuses. */
int is_status(weft_status_t want, weft_status_t got, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/*
 * The hardware of @p kind ("gpu", "ib") this test needs is missing.
 * WEFT_TEST_STRICT names the kinds a run demands (a comma list, or "1" /
 * "all" for every kind): for those this is one failed test, else the
 * whole file is skipped with the reason. Never returns.
 */
void skip_all_hardware(const char *kind, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
/* 1 when WEFT_TEST_STRICT demands hardware of @p kind. */
int tap_strict(const char *kind);
void skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 unless WEFT_TEST_ONLY is set and @p name does not contain it: a test
 * that honours it skips its other cases (chasing one case, on a GPU host
 * under a slow tool such as compute-sanitizer). */
int tap_only(const char *name);
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit status for main: 0 if every planned test ran and passed. */
int test_done(void);

#endif
