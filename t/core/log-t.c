/* The last-error message: formatting it from itself keeps it whole. */
#include "tap/basic.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char want[1024];
    char longer[600];

    /* errors go to stderr; keep the TAP output readable */
    setenv("WEFT_LOG_LEVEL", "none", 1);
    plan(5);

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
