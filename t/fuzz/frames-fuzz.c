/*
 * Fuzz target: what a bootstrap peer sends before and after it has
 * authenticated (src/common/auth.c, src/bootstrap/conn.c,
 * src/common/wire.c). The first byte picks where the bytes arrive:
 *   0  at a listener, as the client's hello and proof (server side);
 *   1  at a client, as the server's hello and proof;
 *   2  on an authenticated connection, as a stream of frames, each one
 *      then decoded as its type says (REGISTER, TABLE, ERROR, ...);
 *   3  on an authenticated connection, as the reply to an fd request
 *      (the IPC service's fd frames);
 * the second byte picks the purpose of the connection. The bytes arrive
 * in one piece, then the peer closes.
 * Invariants: the connection ends failed or idle, never both ready and
 * with a frame it did not check; decoded frames keep their fields in
 * range; nothing is read outside a frame.
 */
#include "config.h"
#include "fuzz.h"
#include "conn.h"
#include "wire.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_env();
    return 0;
}

static void decode_frame(const weft_frame_t *f, const uint32_t *limits)
{
    FUZZ_CHECK(f->type > 0 && f->type < WEFT_MSG_TYPE_COUNT && limits[f->type] != 0,
               "a frame of type %u was let through", f->type);
    FUZZ_CHECK(f->len <= limits[f->type], "a frame of %u bytes exceeds its type's %u", f->len, limits[f->type]);
    switch (f->type) {
    case WEFT_MSG_REGISTER: {
        weft_register_t reg;
        if (weft_wire_register_decode(f->payload, f->len, &reg) == WEFT_OK) {
            uint8_t again[WEFT_REGISTER_BYTES];
            FUZZ_CHECK(f->len == WEFT_REGISTER_BYTES, "a REGISTER of %u bytes decoded", f->len);
            FUZZ_CHECK(reg.rank >= -1 && reg.nranks >= -1, "REGISTER: rank %d of %d", reg.rank, reg.nranks);
            FUZZ_CHECK(weft_addr_port(&reg.addr) != 0, "REGISTER: an address without a port decoded");
            weft_wire_register_encode(&reg, again);
        }
        break;
    }
    case WEFT_MSG_TABLE:
        /* what a rank does with the root's table: u32 nranks, then entries */
        if (f->len >= 4) {
            uint32_t n = weft_wire_get_u32(f->payload);
            if (n > 0 && n <= (f->len - 4) / WEFT_TABLE_ENTRY_BYTES)
                for (uint32_t i = 0; i < n; i++) {
                    weft_register_t reg;
                    if (weft_wire_table_entry_decode(f->payload + 4 + (size_t)i * WEFT_TABLE_ENTRY_BYTES, &reg) !=
                        WEFT_OK)
                        break;
                }
        }
        break;
    case WEFT_MSG_ERROR: {
        char msg[256];
        weft_status_t status = weft_conn_error_decode(f, msg, sizeof(msg));
        FUZZ_CHECK(status < 0, "an ERROR frame decoded to success (%d)", status);
        FUZZ_CHECK(strlen(msg) < sizeof(msg), "ERROR: message not terminated");
        for (const char *p = msg; *p; p++)
            FUZZ_CHECK(*p >= 32 && *p <= 126, "ERROR: an unprintable byte reached the message");
        break;
    }
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const weft_purpose_t purposes[4] = {WEFT_PURPOSE_ROOT, WEFT_PURPOSE_PEER, WEFT_PURPOSE_IPC,
                                               WEFT_PURPOSE_NET};
    const uint32_t *limits = weft_conn_default_limits();
    weft_purpose_t purpose;
    weft_conn_t *c = NULL, *peer = NULL;
    int mode, sv[2], rawfd;

    if (size < 2)
        return 0;
    mode = data[0] % 4;
    purpose = purposes[data[1] % 4];
    data += 2;
    size -= 2;

    if (mode < 2) {
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0)
            return 0;
        c = mode == 0 ? weft_conn_new_server(sv[0], fuzz_auth(), purpose, limits, "fuzz")
                      : weft_conn_new_client(sv[0], fuzz_auth(), purpose, limits, "fuzz", 1);
        rawfd = sv[1];
        if (size >= WEFT_HELLO_BYTES) {
            weft_status_t status = weft_hello_check(fuzz_auth(), purpose, data);
            FUZZ_CHECK(status == WEFT_OK || status == WEFT_ERR_PROTOCOL || status == WEFT_ERR_AUTH,
                       "hello check gave %d", status);
        }
    } else {
        if (!fuzz_conn_pair(purpose, limits, &c, &peer))
            return 0;
        rawfd = peer->fd;
    }
    if (!c) {
        close(rawfd);
        weft_conn_free(peer);
        return 0;
    }
    fuzz_write(rawfd, data, size);
    shutdown(rawfd, SHUT_WR);

    if (mode == 3) {
        uint8_t rep[4];
        int fd = -1;
        weft_status_t status =
            weft_conn_recv_fd_frame(c, WEFT_MSG_IPC_REP, rep, sizeof(rep), &fd, weft_deadline_ms(200));
        FUZZ_CHECK(status != WEFT_OK || fd == -1, "an fd arrived that nobody sent");
        FUZZ_CHECK(status == WEFT_OK || !weft_conn_is_ready(c), "a refused fd reply left the connection ready");
    } else {
        /* until the connection fails (EOF at the latest) */
        for (int i = 0; i < 4096; i++) {
            weft_status_t status = weft_conn_progress(c, POLLIN | POLLOUT);
            weft_frame_t *f;
            if (status != WEFT_OK)
                break;
            if ((f = weft_conn_frame(c)) != NULL) {
                FUZZ_CHECK(mode == 2, "a frame arrived before the handshake ended");
                decode_frame(f, limits);
                weft_conn_frame_done(c);
            }
        }
        FUZZ_CHECK(!weft_conn_is_ready(c) || mode == 2, "an unauthenticated peer made the connection ready");
    }
    weft_conn_free(c);
    if (peer)
        weft_conn_free(peer);
    else
        close(rawfd);
    return 0;
}
