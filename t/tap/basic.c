#include "basic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int planned, run, failed;

/* Weak: a test that links only libweft_nccl (t/nccl/symbols-t's program)
 * has no weft_status_string; is_status then prints numbers. */
#pragma weak weft_status_string

void plan(int n)
{
    planned = n;
    printf("1..%d\n", n);
    fflush(stdout);
}

void skip_all(const char *fmt, ...)
{
    va_list ap;
    printf("1..0 # SKIP ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    exit(0);
}

void bail(const char *fmt, ...)
{
    va_list ap;
    printf("Bail out! ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    exit(255);
}

static int report(int success, const char *fmt, va_list ap)
{
    run++;
    if (!success)
        failed++;
    printf("%s %d - ", success ? "ok" : "not ok", run);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    return success;
}

int ok(int success, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(success, fmt, ap);
    va_end(ap);
    return success;
}

int is_int(long want, long got, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(want == got, fmt, ap);
    va_end(ap);
    if (want != got)
        diag("wanted %ld, got %ld", want, got);
    return want == got;
}

int is_string(const char *want, const char *got, const char *fmt, ...)
{
    int same = want && got ? strcmp(want, got) == 0 : want == got;
    va_list ap;
    va_start(ap, fmt);
    report(same, fmt, ap);
    va_end(ap);
    if (!same)
        diag("wanted \"%s\", got \"%s\"", want ? want : "(null)", got ? got : "(null)");
    return same;
}

int is_status(weft_status_t want, weft_status_t got, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(want == got, fmt, ap);
    va_end(ap);
    if (want != got && weft_status_string)
        diag("wanted %s, got %s", weft_status_string(want), weft_status_string(got));
    else if (want != got)
        diag("wanted status %d, got %d", (int)want, (int)got);
    return want == got;
}

int tap_strict(const char *kind)
{
    const char *spec = getenv("WEFT_TEST_STRICT");
    size_t n = strlen(kind);
    if (!spec || !*spec || strcmp(spec, "0") == 0)
        return 0;
    if (strcmp(spec, "1") == 0 || strcmp(spec, "all") == 0)
        return 1;
    for (const char *p = spec; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, kind, n) == 0)
            return 1;
        p += len + (end ? 1 : 0);
    }
    return 0;
}

void skip_all_hardware(const char *kind, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (tap_strict(kind)) {
        plan(1);
        ok(0, "%s hardware is present (WEFT_TEST_STRICT demands it): %s", kind, why);
        exit(test_done());
    }
    skip_all("%s", why);
}

int tap_only(const char *name)
{
    const char *only = getenv("WEFT_TEST_ONLY");
    return !only || !*only || strstr(name, only) != NULL;
}

void skip(const char *fmt, ...)
{
    va_list ap;
    run++;
    printf("ok %d # SKIP ", run);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

void diag(const char *fmt, ...)
{
    va_list ap;
    char buf[2048];
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    /* One "# " per line so TAP parsers keep it a comment. */
    for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        printf("# %s\n", line);
    }
    fflush(stdout);
}

int test_done(void)
{
    if (run != planned)
        diag("planned %d tests but ran %d", planned, run);
    return failed == 0 && run == planned ? 0 : 1;
}
