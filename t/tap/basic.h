/* A small TAP library: tests read as statements of fact. */
#ifndef WEFT_TAP_BASIC_H
#define WEFT_TAP_BASIC_H

#include <stdarg.h>

void plan(int n);
void skip_all(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void bail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
int ok(int success, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int is_int(long want, long got, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int is_string(const char *want, const char *got, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit status for main: 0 if every planned test ran and passed. */
int test_done(void);

#endif
