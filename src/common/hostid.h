/* The host identity: which ranks can share memory. */
#ifndef WEFT_HOSTID_H
#define WEFT_HOSTID_H

#include <stdint.h>
#include "weft.h"

#define WEFT_HOSTID_BYTES 16

/* Same value for processes that can share memory (same kernel boot and
 * network namespace), overridable with WEFT_HOSTID. */
weft_status_t weft_host_identity(uint8_t out[WEFT_HOSTID_BYTES]);

#endif
