/*
 * The unique id (v1, 128 bytes): magic, format version, the root's
 * address, a 256-bit secret and a checksum. A malformed id is refused
 * before any network I/O; the secret is a bearer token, never logged.
 */
#ifndef WEFT_UID_H
#define WEFT_UID_H

#include <stdint.h>
#include "auth.h"
#include "sock.h"
#include "weft.h"

/* Decoded unique id. */
typedef struct {
    weft_addr_t root;
    uint8_t secret[WEFT_SECRET_BYTES];
} weft_uid_info_t;

weft_status_t weft_uid_decode(const weft_unique_id_t *id, weft_uid_info_t *info);
void weft_uid_encode(const weft_uid_info_t *info, weft_unique_id_t *id);

#endif
