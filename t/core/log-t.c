/* The last-error message: formatting it from itself keeps it whole. The
 * log settings: NCCL_DEBUG stands in for an unset WEFT_LOG_LEVEL, and
 * weft_log_reset re-reads them (ncclResetDebugInit). */
#include "tap/basic.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char want[1024];
    char longer[600];

    /* before weft reads its parameters: NCCL's level, weft's unset */
    unsetenv("WEFT_LOG_LEVEL");
    setenv("NCCL_DEBUG", "INFO", 1);
    plan(10);
    ok(weft_log_enabled(WEFT_LOG_INFO, WEFT_SUB_INIT) && !weft_log_enabled(WEFT_LOG_DEBUG, WEFT_SUB_INIT),
       "NCCL_DEBUG=INFO stands in for an unset WEFT_LOG_LEVEL");
    setenv("NCCL_DEBUG", "TRACE", 1);
    ok(!weft_log_enabled(WEFT_LOG_TRACE, WEFT_SUB_INIT), "read once: a later change is not seen");
    weft_log_reset();
    ok(weft_log_enabled(WEFT_LOG_TRACE, WEFT_SUB_INIT), "until weft_log_reset");
    setenv("NCCL_DEBUG", "nonsense", 1);
    weft_log_reset();
    ok(weft_log_enabled(WEFT_LOG_WARN, WEFT_SUB_INIT) && !weft_log_enabled(WEFT_LOG_INFO, WEFT_SUB_INIT),
       "an NCCL_DEBUG weft does not know leaves the default (warn)");
    /* errors go to stderr; keep the TAP output readable */
    setenv("NCCL_DEBUG", "TRACE", 1);
    setenv("WEFT_LOG_LEVEL", "none", 1);
    weft_log_reset();
    ok(!weft_log_enabled(WEFT_LOG_ERROR, WEFT_SUB_INIT), "WEFT_LOG_LEVEL, when set, wins over NCCL_DEBUG");

    weft_error_note("connect to rank %d failed: %s", 3, "connection refused");
    is_string("connect to rank 3 failed: connection refused", weft_get_last_error(), "weft_error_note records");

    weft_error(WEFT_SUB_INIT, "init failed: %s", weft_get_last_error());
    is_string("init failed: connect to rank 3 failed: connection refused", weft_get_last_error(),
              "weft_error with the last error as an argument prefixes it, not garbles it");

    weft_error_note("%s (%s)", weft_get_last_error(), weft_get_last_error());
    snprintf(want, sizeof(want), "%s (%s)", "init failed: connect to rank 3 failed: connection refused",
             "init failed: connect to rank 3 failed: connection refused");
    is_string(want, weft_get_last_error(), "weft_error_note may read the last error twice");

    /* a message longer than the buffer is cut, still from the old text */
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    weft_error_note("%s", longer);
    weft_error(WEFT_SUB_INIT, "outer: %s", weft_get_last_error());
    ok(strncmp(weft_get_last_error(), "outer: xxxxxxxx", 15) == 0, "a cut message keeps its prefix");
    ok(strspn(weft_get_last_error() + 7, "x") == strlen(weft_get_last_error()) - 7,
       "and only the old text after it");
    return test_done();
}
