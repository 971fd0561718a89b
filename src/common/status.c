#include "config.h"
#include "weft.h"

const char *weft_status_string(weft_status_t status)
{
    switch (status) {
    case WEFT_OK: return "WEFT_OK: success";
    case WEFT_INPROGRESS: return "WEFT_INPROGRESS: operation in progress";
    case WEFT_ERR_INVALID_ARGUMENT: return "WEFT_ERR_INVALID_ARGUMENT: invalid argument";
    case WEFT_ERR_NO_MEMORY: return "WEFT_ERR_NO_MEMORY: out of memory";
    case WEFT_ERR_SYSTEM: return "WEFT_ERR_SYSTEM: system call failed";
    case WEFT_ERR_TIMEOUT: return "WEFT_ERR_TIMEOUT: deadline passed";
    case WEFT_ERR_REMOTE: return "WEFT_ERR_REMOTE: peer failed or closed";
    case WEFT_ERR_UNSUPPORTED: return "WEFT_ERR_UNSUPPORTED: not supported";
    case WEFT_ERR_AUTH: return "WEFT_ERR_AUTH: authentication failed";
    case WEFT_ERR_PROTOCOL: return "WEFT_ERR_PROTOCOL: protocol violation";
    case WEFT_ERR_ABORTED: return "WEFT_ERR_ABORTED: communicator aborted";
    case WEFT_ERR_BACKEND: return "WEFT_ERR_BACKEND: GPU runtime error";
    case WEFT_ERR_NOT_FOUND: return "WEFT_ERR_NOT_FOUND: not found";
    case WEFT_ERR_INTERNAL: return "WEFT_ERR_INTERNAL: internal error";
    }
    return "WEFT_ERR_UNKNOWN: unknown status";
}

weft_status_t weft_get_version(int *version)
{
    if (!version)
        return WEFT_ERR_INVALID_ARGUMENT;
    *version = WEFT_VERSION_CODE;
    return WEFT_OK;
}
