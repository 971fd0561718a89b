/*
 * Fuzz target: the data frames of the ethernet provider as its receivers
 * read them (src/net/ethernet/ethernet_ep.c): headers, bounds of writes
 * and signals against the registered regions, and the signals' counts of
 * frames to wait for on the other sockets.
 *
 * Two regions are registered (ids 1 and 2 with the keys below, so seeds
 * can name them): 4096 bytes in the middle of a guarded buffer, and four
 * 64-bit signal words. Input: u8 sockets (1..4), then chunks u8 socket |
 * u8 length | bytes, written to that socket as the peer's stream; then
 * the peer closes every socket.
 * Invariants: no byte outside the registered ranges changes (the guards),
 * the receivers end (an error, a goodbye or EOF) within their deadlines,
 * and the endpoint closes.
 */
#include "config.h"
#include "ethernet.h"
#include "fuzz.h"
#include "wire.h"

#include <errno.h>

#define KEY_A 0x6b65792d41414141ull /* "AAAA-yek" */
#define KEY_B 0x6b65792d42424242ull
#define GUARD 256
#define A_BYTES 4096

static const weft_gpu_ops_t *gpu;
static weft_gpu_ctx_t *gctx;
static weft_net_env_t env;
static weft_net_ctx_t *ctx;
static uint8_t *buf_a;   /* GUARD | region 1 | GUARD */
static uint64_t *words;  /* region 2 */
static weft_net_mr_t *mr_a, *mr_b;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    weft_net_rkey_t rk;
    (void)argc;
    (void)argv;
    fuzz_env();
    setenv("WEFT_NET_SOCKETS", "4", 1);
    gpu = weft_gpu_find("host");
    if (!gpu || gpu->init(0, &gctx) != WEFT_OK)
        abort();
    env.auth = fuzz_auth();
    env.rank = 1;
    env.nranks = 4;
    env.op_timeout_ms = 200;
    env.handshake_timeout_ms = 200;
    env.wake_fd = -1;
    env.gpu = gpu;
    env.gctx = gctx;
    if (weft_ethernet_ops.init(&env, &ctx) != WEFT_OK)
        abort();
    buf_a = malloc(A_BYTES + 2 * GUARD);
    words = calloc(4, sizeof(uint64_t));
    if (!buf_a || !words || weft_ethernet_ops.reg_mr(ctx, buf_a + GUARD, A_BYTES, 0, &mr_a, &rk) != WEFT_OK ||
        weft_ethernet_ops.reg_mr(ctx, words, 4 * sizeof(uint64_t), 0, &mr_b, &rk) != WEFT_OK)
        abort();
    /* fixed names, so that seeds can address the regions */
    mr_a->region->id = 1;
    mr_a->region->key = KEY_A;
    mr_b->region->id = 2;
    mr_b->region->key = KEY_B;
    memset(buf_a, 0xee, A_BYTES + 2 * GUARD);
    return 0;
}

static int receivers_done(weft_net_ep_t *ep)
{
    int failed;
    pthread_mutex_lock(&ep->lock);
    failed = ep->error != WEFT_OK || ep->stopping;
    pthread_mutex_unlock(&ep->lock);
    return failed || __atomic_load_n(&ep->peer_said_bye, __ATOMIC_ACQUIRE) == ep->nsock;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int peer[WEFT_ETH_MAX_SOCKETS], nsock;
    weft_net_ep_t *ep;
    uint64_t t0;

    if (size < 1)
        return 0;
    if (!ctx)
        LLVMFuzzerInitialize(NULL, NULL);
    nsock = 1 + data[0] % 4;
    data++;
    size--;
    if (!(ep = weft_eth_ep_new(ctx, 0, nsock)))
        return 0;
    for (int i = 0; i < nsock; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
            abort();
        ep->sock[i].fd = sv[0];
        peer[i] = sv[1];
    }
    while (size >= 2) {
        size_t len = WEFT_MIN((size_t)data[1], size - 2);
        fuzz_write(peer[data[0] % nsock], data + 2, len);
        data += 2 + len;
        size -= 2 + len;
    }
    for (int i = 0; i < nsock; i++)
        shutdown(peer[i], SHUT_WR);
    if (weft_eth_ep_start(ep) != WEFT_OK)
        abort();
    /* the receivers read everything, then EOF (or a goodbye) ends them */
    t0 = weft_now_ns();
    while (!receivers_done(ep)) {
        FUZZ_CHECK(weft_now_ns() - t0 < 5000000000ull, "the receivers did not end within 5 s");
        usleep(200);
    }
    weft_eth_close(ep);
    for (int i = 0; i < nsock; i++)
        close(peer[i]);
    for (int i = 0; i < GUARD; i++)
        FUZZ_CHECK(buf_a[i] == 0xee && buf_a[GUARD + A_BYTES + i] == 0xee,
                   "a byte outside region 1 changed (guard offset %d)", i);
    return 0;
}
