/* Status codes, their strings and the version. */
#include "tap/basic.h"
#include "weft.h"

#include <string.h>

int main(void)
{
    static const weft_status_t all[] = {WEFT_OK, WEFT_INPROGRESS, WEFT_ERR_INVALID_ARGUMENT, WEFT_ERR_NO_MEMORY,
                                        WEFT_ERR_SYSTEM, WEFT_ERR_TIMEOUT, WEFT_ERR_REMOTE, WEFT_ERR_UNSUPPORTED,
                                        WEFT_ERR_AUTH, WEFT_ERR_PROTOCOL, WEFT_ERR_ABORTED, WEFT_ERR_BACKEND,
                                        WEFT_ERR_NOT_FOUND, WEFT_ERR_INTERNAL};
    int distinct = 1, version = 0;

    plan(6);
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(weft_status_string(all[i]), weft_status_string(all[j])) == 0)
                distinct = 0;
    ok(distinct, "every status has its own string");
    ok(strncmp(weft_status_string(WEFT_ERR_TIMEOUT), "WEFT_ERR_TIMEOUT", 16) == 0, "strings start with the name");
    ok(weft_status_string((weft_status_t)-999) != NULL, "an unknown status still gets a string");
    is_int(WEFT_ERR_INVALID_ARGUMENT, weft_get_version(NULL), "weft_get_version(NULL) is refused");
    is_int(WEFT_OK, weft_get_version(&version), "weft_get_version works");
    is_int(WEFT_VERSION_CODE, version, "library and header versions agree");
    return test_done();
}
