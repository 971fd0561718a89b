/* Authenticated peers that misbehave: after a valid handshake they send
 * an oversized or "negative" length, an out-of-range rank, a wrong rank
 * count or a duplicate rank. The root drops that connection (after an
 * ERROR frame where it can say why) and the real ranks still finish. */
#include "tap/basic.h"
#include "tap/ranks.h"
#include "tap/job.h"
#include "bootstrap.h"
#include "conn.h"
#include "sock.h"
#include "util.h"
#include "wire.h"
#include "weft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static weft_unique_id_t id;
static weft_uid_info_t info;

typedef struct {
    int closed;      /* the root closed the connection */
    int got_error;   /* an ERROR frame came first */
    char msg[256];
} outcome_t;

static weft_conn_t *authenticated(void)
{
    weft_auth_t auth;
    int fd;
    weft_status_t st = weft_sock_connect_start(&info.root, &fd);
    if (st != WEFT_OK && st != WEFT_INPROGRESS)
        return NULL;
    weft_auth_init(&auth, info.secret);
    weft_conn_t *c = weft_conn_new_client(fd, &auth, WEFT_PURPOSE_ROOT, NULL, "root", st == WEFT_OK);
    if (!c || weft_conn_wait(c, weft_conn_is_ready, weft_deadline_ms(3000), -1) != WEFT_OK ||
        weft_conn_wait(c, weft_conn_is_drained, weft_deadline_ms(3000), -1) != WEFT_OK) {
        weft_conn_free(c);
        return NULL;
    }
    return c;
}

static int frame_or_fail(weft_conn_t *c)
{
    return weft_conn_has_frame(c);
}

static outcome_t await_close(weft_conn_t *c)
{
    outcome_t o = {0, 0, ""};
    weft_status_t st = weft_conn_wait(c, frame_or_fail, weft_deadline_ms(3000), -1);
    if (st == WEFT_OK) {
        weft_frame_t *f = weft_conn_frame(c);
        if (f->type == WEFT_MSG_ERROR) {
            o.got_error = 1;
            weft_conn_error_decode(f, o.msg, sizeof(o.msg));
        }
        weft_conn_frame_done(c);
        st = weft_conn_wait(c, frame_or_fail, weft_deadline_ms(3000), -1);
    }
    o.closed = st == WEFT_ERR_REMOTE;
    return o;
}

static outcome_t raw_header(uint8_t type, uint32_t len)
{
    outcome_t o = {0, 0, "no connection"};
    weft_conn_t *c = authenticated();
    uint8_t hdr[16];
    if (!c)
        return o;
    weft_wire_put_u32(hdr, WEFT_FRAME_MAGIC);
    hdr[4] = WEFT_PROTO_VERSION;
    hdr[5] = type;
    hdr[6] = hdr[7] = 0;
    weft_wire_put_u32(hdr + 8, len);
    weft_wire_put_u32(hdr + 12, 0);
    if (write(c->fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
        return o;
    o = await_close(c); /* no payload follows: the root must not wait for it */
    weft_conn_free(c);
    return o;
}

static outcome_t bad_register(int rank, int nranks)
{
    outcome_t o = {0, 0, "no connection"};
    weft_conn_t *c = authenticated();
    weft_register_t reg;
    uint8_t payload[WEFT_REGISTER_BYTES];
    if (!c)
        return o;
    memset(&reg, 0, sizeof(reg));
    reg.rank = rank;
    reg.nranks = nranks;
    reg.addr = info.root;
    weft_wire_register_encode(&reg, payload);
    weft_conn_queue(c, WEFT_MSG_REGISTER, payload, sizeof(payload), NULL, 0);
    o = await_close(c);
    weft_conn_free(c);
    return o;
}

static outcome_t *results; /* shared with the parent */

static outcome_t *mmap_shared_results(void)
{
    void *p = mmap(NULL, 6 * sizeof(outcome_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        bail("mmap");
    memset(p, 0, 6 * sizeof(outcome_t));
    return p;
}

static int rank_main(int rank, int nranks, void *arg)
{
    (void)arg;
    if (!job_id(rank, &id) || weft_uid_decode(&id, &info) != WEFT_OK)
        return rank_fail("no unique id");
    if (rank == 2) { /* the misbehaving peer */
        usleep(300 * 1000); /* real rank 0 registers first */
        rank_step("oversized length");
        results[0] = raw_header(WEFT_MSG_REGISTER, 0x7fffffffu);
        rank_step("negative length");
        results[1] = raw_header(WEFT_MSG_DATA, 0xffffffffu);
        rank_step("out-of-range rank");
        results[2] = bad_register(5, 2);
        rank_step("wrong nranks");
        results[3] = bad_register(1, 3);
        rank_step("duplicate rank");
        results[4] = bad_register(0, 2);
        rank_step("negative rank");
        results[5] = bad_register(-1, 2);
        return 0;
    }
    if (rank == 1)
        usleep(2500 * 1000); /* after the misbehaviour */
    weft_comm_t *comm;
    rank_step("comm_init");
    weft_status_t st = weft_comm_init(&id, 2, rank, NULL, &comm);
    if (st != WEFT_OK)
        return rank_fail("comm_init: %s", weft_get_last_error());
    st = weft_bootstrap_barrier(comm);
    weft_comm_destroy(comm);
    (void)nranks;
    return st == WEFT_OK ? 0 : rank_fail("barrier: %s", weft_get_last_error());
}

int main(void)
{
    static const char *names[] = {"an oversized length", "a length of 0xffffffff", "an out-of-range rank",
                                  "a wrong rank count", "a duplicate rank", "a negative rank"};
    plan(10);
    setenv("WEFT_HANDSHAKE_TIMEOUT_MS", "2000", 1);
    results = mmap_shared_results();
    ok(run_ranks(3, 60000, rank_main, NULL, NULL), "real ranks finish despite a misbehaving authenticated peer");
    for (int i = 0; i < 6; i++)
        ok(results[i].closed, "the root drops a connection that sends %s", names[i]);
    ok(results[2].got_error && strstr(results[2].msg, "out of range"), "out-of-range rank is explained: %s",
       results[2].msg);
    ok(results[3].got_error && strstr(results[3].msg, "nranks"), "wrong rank count is explained: %s",
       results[3].msg);
    ok(results[4].got_error && strstr(results[4].msg, "twice"), "duplicate rank is explained: %s", results[4].msg);
    return test_done();
}
