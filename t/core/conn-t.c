/* Framed, authenticated connections over a socket pair: the handshake,
 * a wrong secret, frames in and out, and a peer that closes right after
 * reading our last frame (the send still counts as done). */
#include "tap/basic.h"
#include "conn.h"
#include "util.h"
#include "wire.h"

#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void pump(weft_conn_t *a, weft_conn_t *b, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        weft_conn_progress(a, POLLIN | POLLOUT);
        if (b)
            weft_conn_progress(b, POLLIN | POLLOUT);
    }
}

static void pair(const weft_auth_t *ca, const weft_auth_t *sa, weft_conn_t **c, weft_conn_t **s)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0)
        bail("socketpair");
    *c = weft_conn_new_client(fds[0], ca, WEFT_PURPOSE_PEER, NULL, "server", 1);
    *s = weft_conn_new_server(fds[1], sa, WEFT_PURPOSE_PEER, NULL, "client");
}

int main(void)
{
    uint8_t secret[WEFT_SECRET_BYTES], other[WEFT_SECRET_BYTES], tag[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    weft_auth_t auth, wrong;
    weft_conn_t *c, *s;
    weft_frame_t *f;

    plan(7);
    weft_random_bytes(secret, sizeof(secret));
    weft_random_bytes(other, sizeof(other));
    weft_auth_init(&auth, secret);
    weft_auth_init(&wrong, other);

    pair(&auth, &auth, &c, &s);
    weft_conn_queue(c, WEFT_MSG_DATA, tag, sizeof(tag), "hello", 5);
    pump(c, s, 20);
    ok(weft_conn_is_ready(c) && weft_conn_is_ready(s), "both sides authenticate with the same secret");
    f = weft_conn_frame(s);
    ok(f && f->type == WEFT_MSG_DATA && f->len == 13 && memcmp(f->payload + 8, "hello", 5) == 0,
       "a frame queued before the handshake arrives after it, intact");
    weft_conn_frame_done(s);
    ok(weft_conn_drained(c), "the sender has nothing left to send");
    weft_conn_free(s); /* the peer read our frame and leaves */
    pump(c, NULL, 5);
    ok(c->state == WEFT_CONN_FAILED && c->error == WEFT_ERR_REMOTE, "the sender sees the peer close");
    ok(weft_conn_drained(c), "and its last send still counts as done");
    weft_conn_free(c);

    pair(&wrong, &auth, &c, &s);
    pump(c, s, 20);
    ok(s->state == WEFT_CONN_FAILED && s->error == WEFT_ERR_AUTH, "a client of another job is refused");
    ok(!weft_conn_drained(c) || c->state == WEFT_CONN_FAILED, "and never becomes ready to send");
    weft_conn_free(c);
    weft_conn_free(s);
    return test_done();
}
