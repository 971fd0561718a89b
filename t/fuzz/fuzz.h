/*
 * Shared by the libFuzzer targets of t/fuzz/. Each target defines
 * LLVMFuzzerTestOneInput (and may define LLVMFuzzerInitialize); it is
 * linked with -fsanitize=fuzzer into a fuzzer (`make fuzz`), and with
 * replay.c into a TAP test that runs the seed corpus through it in every
 * build (`make check`).
 *
 * A target states its invariants with FUZZ_CHECK: a violation aborts, so
 * the fuzzer reports the input (it is no crash of the library; the
 * library itself never aborts).
 */
#ifndef WEFT_FUZZ_H
#define WEFT_FUZZ_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "conn.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond, ...)                                                                                      \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            fprintf(stderr, "fuzz invariant broken at %s:%d: ", __FILE__, __LINE__);                              \
            fprintf(stderr, __VA_ARGS__);                                                                          \
            fputc('\n', stderr);                                                                                   \
            abort();                                                                                               \
        }                                                                                                          \
    } while (0)

/* Before any parameter is read: no log lines for the millions of inputs
 * the library rightly refuses, short deadlines for set-ups. */
static inline void fuzz_env(void)
{
    setenv("WEFT_LOG_LEVEL", "none", 1);
    setenv("WEFT_HANDSHAKE_TIMEOUT_MS", "2000", 1);
}

/* The job every target speaks for: a fixed secret (the seeds carry its
 * job tag, so the fuzzer starts past the tag check). */
static inline const weft_auth_t *fuzz_auth(void)
{
    static weft_auth_t auth;
    static int done;
    if (!done) {
        uint8_t secret[WEFT_SECRET_BYTES];
        for (int i = 0; i < WEFT_SECRET_BYTES; i++)
            secret[i] = (uint8_t)(0x40 + i);
        weft_auth_init(&auth, secret);
        done = 1;
    }
    return &auth;
}

/* Drives both ends of a fresh socket pair through the handshake, in this
 * thread. 1 with *server and *client ready, 0 otherwise (nothing left). */
static inline int fuzz_conn_pair(weft_purpose_t purpose, const uint32_t *limits, weft_conn_t **server,
                                 weft_conn_t **client)
{
    int sv[2];
    weft_conn_t *s, *c;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0)
        return 0;
    s = weft_conn_new_server(sv[0], fuzz_auth(), purpose, limits, "fuzz client");
    c = weft_conn_new_client(sv[1], fuzz_auth(), purpose, limits, "fuzz server", 1);
    for (int i = 0; s && c && i < 16 && !(weft_conn_is_ready(s) && weft_conn_is_ready(c)); i++) {
        weft_conn_progress(s, POLLIN | POLLOUT);
        weft_conn_progress(c, POLLIN | POLLOUT);
    }
    if (!s || !c || !weft_conn_is_ready(s) || !weft_conn_is_ready(c)) {
        weft_conn_free(s);
        weft_conn_free(c);
        return 0;
    }
    *server = s;
    *client = c;
    return 1;
}

/* Writes @p len bytes into a non-blocking socket; what does not fit is
 * dropped (the inputs are small; a socket pair holds much more). */
static inline void fuzz_write(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0)
            break;
        p += n;
        len -= (size_t)n;
    }
}

#endif
