/* The net backend registry: providers are copied over typed stubs. */
#include "config.h"
#include "log.h"
#include "net.h"

#include <pthread.h>
#include <string.h>

static weft_status_t unsupported(const char *what)
{
    weft_error(WEFT_SUB_NET, "%s: not supported by this network provider", what);
    return WEFT_ERR_UNSUPPORTED;
}

static int stub_usable(void) { return 1; }
static weft_status_t stub_init(const weft_net_env_t *env, weft_net_ctx_t **ctx)
{
    (void)env, (void)ctx;
    return unsupported("init");
}
static void stub_fini(weft_net_ctx_t *ctx) { (void)ctx; }
static weft_status_t stub_listen(weft_net_ctx_t *ctx, uint8_t addr[WEFT_NET_ADDR_BYTES], weft_net_listener_t **l)
{
    (void)ctx, (void)addr, (void)l;
    return unsupported("listen");
}
static void stub_listen_close(weft_net_listener_t *l) { (void)l; }
static weft_status_t stub_connect(weft_net_ctx_t *ctx, const uint8_t addr[WEFT_NET_ADDR_BYTES],
                                  const weft_net_ident_t *ident, uint64_t deadline, weft_net_pending_t **p)
{
    (void)ctx, (void)addr, (void)ident, (void)deadline, (void)p;
    return unsupported("connect");
}
static weft_status_t stub_accept(weft_net_listener_t *l, const weft_net_ident_t *ident, uint64_t deadline,
                                 weft_net_pending_t **p)
{
    (void)l, (void)ident, (void)deadline, (void)p;
    return unsupported("accept");
}
static weft_status_t stub_progress(weft_net_pending_t *p, int wait_ms, weft_net_ep_t **ep)
{
    (void)p, (void)wait_ms, (void)ep;
    return unsupported("connection set-up");
}
static void stub_cancel(weft_net_pending_t *p) { (void)p; }
static weft_status_t stub_reg_mr(weft_net_ctx_t *ctx, void *ptr, size_t bytes, int device, weft_net_mr_t **mr,
                                 weft_net_rkey_t *rkey)
{
    (void)ctx, (void)ptr, (void)bytes, (void)device, (void)mr, (void)rkey;
    return unsupported("memory registration");
}
static void stub_dereg_mr(weft_net_ctx_t *ctx, weft_net_mr_t *mr) { (void)ctx, (void)mr; }
static weft_status_t stub_post_write(weft_net_ep_t *ep, weft_net_mr_t *mr, uint64_t off, const weft_net_rkey_t *rkey,
                                     uint64_t roff, uint64_t bytes, uint64_t wr_id)
{
    (void)ep, (void)mr, (void)off, (void)rkey, (void)roff, (void)bytes, (void)wr_id;
    return unsupported("write");
}
static weft_status_t stub_post_signal(weft_net_ep_t *ep, const weft_net_rkey_t *rkey, uint64_t roff, uint64_t value,
                                      int add, uint64_t wr_id)
{
    (void)ep, (void)rkey, (void)roff, (void)value, (void)add, (void)wr_id;
    return unsupported("signal");
}
static weft_status_t stub_poll(weft_net_ep_t *ep, weft_net_completion_t *out, int max, int *n)
{
    (void)ep, (void)out, (void)max;
    *n = 0;
    return unsupported("poll");
}
static weft_status_t stub_flush(weft_net_ep_t *ep, int timeout_ms)
{
    (void)ep, (void)timeout_ms;
    return unsupported("flush");
}
static void stub_close(weft_net_ep_t *ep) { (void)ep; }

static const weft_net_ops_t stubs = {
    .abi_version = WEFT_NET_ABI_VERSION, .size = sizeof(weft_net_ops_t), .name = "none",
    .usable = stub_usable, .init = stub_init, .fini = stub_fini, .listen = stub_listen, .listen_close = stub_listen_close,
    .connect = stub_connect, .accept = stub_accept, .progress = stub_progress, .cancel = stub_cancel, .reg_mr = stub_reg_mr, .dereg_mr = stub_dereg_mr,
    .post_write = stub_post_write, .post_signal = stub_post_signal, .poll = stub_poll, .flush = stub_flush,
    .close = stub_close,
};

/* Each provider's table over the stubs, field by field where it is NULL. */
#define FILL(t, p, f) (t).f = (p)->f ? (p)->f : stubs.f
static void fill(weft_net_ops_t *t, const weft_net_ops_t *p)
{
    *t = stubs;
    t->name = p->name;
    FILL(*t, p, usable); FILL(*t, p, init); FILL(*t, p, fini); FILL(*t, p, listen); FILL(*t, p, listen_close);
    FILL(*t, p, connect); FILL(*t, p, accept); FILL(*t, p, progress); FILL(*t, p, cancel); FILL(*t, p, reg_mr); FILL(*t, p, dereg_mr);
    FILL(*t, p, post_write); FILL(*t, p, post_signal); FILL(*t, p, poll); FILL(*t, p, flush);
    FILL(*t, p, close);
}

static weft_net_ops_t ethernet_table;
#ifdef WEFT_HAVE_VERBS
static weft_net_ops_t ib_table;
#endif
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void tables_init(void)
{
    fill(&ethernet_table, &weft_ethernet_ops);
#ifdef WEFT_HAVE_VERBS
    fill(&ib_table, &weft_ib_ops);
#endif
}

weft_status_t weft_net_finish(const weft_net_ops_t *ops, weft_net_pending_t *pending, weft_net_ep_t **ep)
{
    weft_status_t status;
    do
        status = ops->progress(pending, 50, ep);
    while (status == WEFT_INPROGRESS);
    return status;
}

const weft_net_ops_t *weft_net_find(unsigned transport)
{
    pthread_once(&once, tables_init);
    if (transport == WEFT_TRANSPORT_ETHERNET)
        return &ethernet_table;
#ifdef WEFT_HAVE_VERBS
    if (transport == WEFT_TRANSPORT_IB)
        return &ib_table;
#endif
    return NULL;
}

const char *weft_net_built(void)
{
#ifdef WEFT_HAVE_VERBS
    return "ethernet ib";
#else
    return "ethernet";
#endif
}
