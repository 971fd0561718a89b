/*
 * Unique id v1, 128 bytes:
 *   0 magic "WFTU" | 4 u16 version (1) | 6 u16 reserved (0) |
 *   8 root address (wire form, 24 bytes) | 32 secret (32 bytes) |
 *  64 reserved (56 bytes, zero) | 120 checksum: SHA-256(bytes 0..119)[0..8]
 */
#include "config.h"
#include "uid.h"
#include "log.h"
#include "param.h"
#include "util.h"

#include <ctype.h>
#include <string.h>

#define UID_MAGIC "WFTU"
#define UID_VERSION 1

void weft_uid_encode(const weft_uid_info_t *info, weft_unique_id_t *id)
{
    uint8_t *p = id->internal, digest[32];
    memset(id, 0, sizeof(*id));
    memcpy(p, UID_MAGIC, 4);
    p[4] = UID_VERSION;
    weft_addr_to_wire(&info->root, p + 8);
    memcpy(p + 32, info->secret, WEFT_SECRET_BYTES);
    weft_sha256(p, 120, digest);
    memcpy(p + 120, digest, 8);
}

weft_status_t weft_uid_decode(const weft_unique_id_t *id, weft_uid_info_t *info)
{
    const uint8_t *p = id->internal;
    uint8_t digest[32];
    static const uint8_t zero[56];
    weft_uid_info_t out;

    if (memcmp(p, UID_MAGIC, 4) != 0) {
        weft_error_note("unique id: bad magic (not a weft unique id)");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (p[4] != UID_VERSION || p[5] != 0 || p[6] != 0 || p[7] != 0) {
        weft_error_note("unique id: unsupported version %u", p[4] | p[5] << 8);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    weft_sha256(p, 120, digest);
    if (memcmp(digest, p + 120, 8) != 0 || memcmp(p + 64, zero, 56) != 0) {
        weft_error_note("unique id: checksum mismatch (corrupted or truncated id)");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (weft_addr_from_wire(p + 8, &out.root) != WEFT_OK) {
        weft_error_note("unique id: invalid root address");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    memcpy(out.secret, p + 32, WEFT_SECRET_BYTES);
    if (memcmp(out.secret, zero, WEFT_SECRET_BYTES) == 0) {
        weft_error_note("unique id: empty secret");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    *info = out;
    return WEFT_OK;
}

weft_status_t weft_unique_id_root(const weft_unique_id_t *id, char *text, size_t len)
{
    weft_uid_info_t info;
    char root[80];
    weft_status_t status;
    if (!id || !text || len == 0)
        return WEFT_ERR_INVALID_ARGUMENT;
    if ((status = weft_uid_decode(id, &info)) != WEFT_OK)
        return status;
    weft_addr_format(&info.root, root, sizeof(root));
    memset(&info, 0, sizeof(info)); /* the secret goes no further */
    if (strlen(root) >= len)
        return WEFT_ERR_INVALID_ARGUMENT;
    memcpy(text, root, strlen(root) + 1);
    return WEFT_OK;
}

weft_status_t weft_unique_id_validate(const weft_unique_id_t *id)
{
    weft_uid_info_t info;
    if (!id)
        return WEFT_ERR_INVALID_ARGUMENT;
    return weft_uid_decode(id, &info);
}

weft_status_t weft_unique_id_format(const weft_unique_id_t *id, char *buf, size_t len)
{
    if (!id || !buf || len < WEFT_UNIQUE_ID_TEXT_BYTES)
        return WEFT_ERR_INVALID_ARGUMENT;
    weft_hex_encode(id->internal, WEFT_UNIQUE_ID_BYTES, buf);
    return WEFT_OK;
}

weft_status_t weft_unique_id_parse(const char *text, weft_unique_id_t *id)
{
    weft_unique_id_t tmp;
    weft_status_t status;
    size_t len;

    if (!text || !id)
        return WEFT_ERR_INVALID_ARGUMENT;
    while (isspace((unsigned char)*text))
        text++;
    len = strlen(text);
    while (len > 0 && isspace((unsigned char)text[len - 1]))
        len--;
    if (len != 2 * WEFT_UNIQUE_ID_BYTES) {
        weft_error_note("unique id text has %zu characters, expected %d hex digits", len,
                        2 * WEFT_UNIQUE_ID_BYTES);
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if (!weft_hex_decode(text, WEFT_UNIQUE_ID_BYTES, tmp.internal)) {
        weft_error_note("unique id text contains a character that is not a hex digit");
        return WEFT_ERR_INVALID_ARGUMENT;
    }
    if ((status = weft_unique_id_validate(&tmp)) != WEFT_OK)
        return status;
    *id = tmp;
    return WEFT_OK;
}
