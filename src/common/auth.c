#include "config.h"
#include "auth.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>
#include <sys/random.h>

/* hello layout (little-endian fields, fixed size):
 *  0 u32 magic | 4 u16 version | 6 u16 purpose | 8 job tag[16] |
 * 24 nonce[32] | 56 reserved[8] (zero) */

void weft_sha256(const void *data, size_t len, uint8_t out[32])
{
    unsigned int n = 32;
    EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
}

void weft_auth_init(weft_auth_t *auth, const uint8_t secret[WEFT_SECRET_BYTES])
{
    uint8_t buf[9 + WEFT_SECRET_BYTES], digest[32];
    memcpy(auth->secret, secret, WEFT_SECRET_BYTES);
    memcpy(buf, "weft-job:", 9);
    memcpy(buf + 9, secret, WEFT_SECRET_BYTES);
    weft_sha256(buf, sizeof(buf), digest);
    memcpy(auth->job, digest, WEFT_JOB_TAG_BYTES);
    OPENSSL_cleanse(buf, sizeof(buf));
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
}
static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

weft_status_t weft_hello_make(const weft_auth_t *auth, weft_purpose_t purpose,
                              uint8_t hello[WEFT_HELLO_BYTES])
{
    memset(hello, 0, WEFT_HELLO_BYTES);
    put_u32(hello, WEFT_HELLO_MAGIC);
    put_u16(hello + 4, WEFT_PROTO_VERSION);
    put_u16(hello + 6, (uint16_t)purpose);
    memcpy(hello + 8, auth->job, WEFT_JOB_TAG_BYTES);
    return weft_random_bytes(hello + 24, 32);
}

weft_status_t weft_hello_check(const weft_auth_t *auth, weft_purpose_t purpose,
                               const uint8_t hello[WEFT_HELLO_BYTES])
{
    static const uint8_t zero[8];
    if (get_u32(hello) != WEFT_HELLO_MAGIC || get_u16(hello + 4) != WEFT_PROTO_VERSION ||
        get_u16(hello + 6) != purpose || memcmp(hello + 56, zero, 8) != 0)
        return WEFT_ERR_PROTOCOL;
    if (CRYPTO_memcmp(hello + 8, auth->job, WEFT_JOB_TAG_BYTES) != 0)
        return WEFT_ERR_AUTH;
    return WEFT_OK;
}

void weft_proof_make(const weft_auth_t *auth, int server_side,
                     const uint8_t hello_c[WEFT_HELLO_BYTES],
                     const uint8_t hello_s[WEFT_HELLO_BYTES],
                     uint8_t proof[WEFT_PROOF_BYTES])
{
    uint8_t msg[12 + 2 * WEFT_HELLO_BYTES];
    unsigned int len = WEFT_PROOF_BYTES;
    memset(msg, 0, 12);
    memcpy(msg, server_side ? "weft-server" : "weft-client", 11);
    memcpy(msg + 12, hello_c, WEFT_HELLO_BYTES);
    memcpy(msg + 12 + WEFT_HELLO_BYTES, hello_s, WEFT_HELLO_BYTES);
    HMAC(EVP_sha256(), auth->secret, WEFT_SECRET_BYTES, msg, sizeof(msg), proof, &len);
}

int weft_proof_check(const weft_auth_t *auth, int server_side,
                     const uint8_t hello_c[WEFT_HELLO_BYTES],
                     const uint8_t hello_s[WEFT_HELLO_BYTES],
                     const uint8_t proof[WEFT_PROOF_BYTES])
{
    uint8_t expect[WEFT_PROOF_BYTES];
    int ok;
    weft_proof_make(auth, server_side, hello_c, hello_s, expect);
    ok = CRYPTO_memcmp(expect, proof, WEFT_PROOF_BYTES) == 0;
    OPENSSL_cleanse(expect, sizeof(expect));
    return ok;
}

weft_status_t weft_random_bytes(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            weft_error(WEFT_SUB_INIT, "getrandom failed: %s", strerror(errno));
            return WEFT_ERR_SYSTEM;
        }
        p += n;
        len -= (size_t)n;
    }
    return WEFT_OK;
}
