/* The executor's port channels: MSCCL++'s port-channel unit plans
 * (flush, fused flush, put with signal, put with signal and flush) on 2
 * forked ranks, on one host (the proxy copies over IPC) and with every rank
 * on a "host" of its own (WEFT_HOSTID: the proxy writes over the network
 * transport); the data a put moved is checked in the executor's buffers at
 * chunk sizes from 16 bytes to 1 MiB, several executions in a row, rank 0
 * starting each later one late; the put plans also with puts of 2 chunks
 * (several chunks a pws: it signals once, not once a chunk, also when
 * wide blocks or a thread-block group run it chunk by chunk). A plan
 * whose pws on rank 1 lost its signal (a put) leaves rank 0's wait
 * unanswered: rank 0 must fail within the device timeout, naming it.
 * rppkt over a port channel (a plan of the DSL's shape, inline here) moves
 * packets between hosts, and on one host; so it does over a memory
 * channel, with a single scratch buffer, and without the unpacking (its
 * packets checked where they land); ppkt over one is refused. */
#include "tap/basic.h"
#include "plan-wide.h"
#include "tap/job.h"
#include "tap/ranks.h"
#include "weft.h"
#include "comm.h"
#include "plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static weft_unique_id_t id;

typedef struct {
    const char *file; /* under t/coll/plans/mscclpp-dsl-units; NULL: rppkt_text */
    int hosts;        /* 1: one host; 0: one per rank */
    int puts;         /* the plan puts input chunk 0 to the peer's chunk 1 */
    int unsignalled;  /* rank 1's pws made a put: rank 0 must time out */
    int wide_put;     /* the pws put 2 chunks, not 1 (input chunks 0-1 to the peer's 2-3) */
    /* rppkt only (file NULL) */
    int memory;         /* over a memory channel, not a port channel */
    int single_scratch; /* use_double_scratch_buffer false */
    int no_unpack;      /* no upkt: the packets are checked in the scratch */
} job_t;

static unsigned char pattern(int rank, int round, size_t i)
{
    return (unsigned char)(rank * 53 + round * 7 + i * 13 + (i >> 8) + 1);
}

/*
 * rppkt over a port channel, as MSCCL++'s DSL prints read_put_packets on a
 * port channel (2 ranks, LL, double scratch): each rank makes packets of
 * its input in scratch chunk 0 (cpkt), its proxy puts them, flags and
 * all, into the peer's scratch chunk 1 once they are complete (rppkt),
 * and each unpacks what the peer sent into its output (upkt): the output
 * is the peer's input. Variants (job_t) take it apart where it fails: over
 * a memory channel (the kernel writes the peer's scratch itself), with a
 * single scratch buffer, and without the upkt (the test reads the packets
 * the peer's proxy put into this rank's scratch).
 */
static char *rppkt_text(const job_t *j)
{
    const char *ch = j->memory ? "memory" : "port";
    char gpu[2][2048], *s = malloc(6144);
    for (int me = 0; me < 2; me++)
        snprintf(gpu[me], sizeof(gpu[me]),
                 "{\"id\": %d, \"input_chunks\": 1, \"output_chunks\": 1, \"scratch_chunks\": 2, \"threadblocks\": "
                 "[{\"id\": 0, \"ops\": [{\"name\": \"cpkt\", \"src_buff\": [{\"type\": \"i\", \"index\": 0, "
                 "\"size\": 1}], \"dst_buff\": [{\"type\": \"s\", \"index\": 0, \"size\": 1}]}, "
                 "{\"name\": \"rppkt\", \"src_buff\": [{\"type\": \"s\", \"index\": 0, \"size\": 1}], "
                 "\"dst_buff\": [{\"buffer_id\": 0, \"index\": 1, \"size\": 1}], \"channel_ids\": [0], "
                 "\"channel_type\": \"%s\"}%s], \"channels\": [{\"channel_type\": \"%s\", \"channel_ids\": [0]}], "
                 "\"remote_buffer_refs\": [{\"access_channel_type\": \"%s\", \"remote_buffer_ids\": [0]}]}], "
                 "\"channels\": [{\"channel_type\": \"%s\", \"connected_to\": [%d]}], "
                 "\"remote_buffers\": [{\"rank\": %d, \"type\": \"s\", \"access_channel_types\": [\"%s\"]}], "
                 "\"semaphores\": []}",
                 me, ch,
                 j->no_unpack ? ""
                              : ", {\"name\": \"upkt\", \"src_buff\": [{\"type\": \"s\", \"index\": 1, \"size\": 1}], "
                                "\"dst_buff\": [{\"type\": \"o\", \"index\": 0, \"size\": 1}]}",
                 ch, ch, ch, 1 - me, 1 - me, ch);
    if (s)
        snprintf(s, 6144,
                 "{\"name\": \"%s_read_put_packets\", \"collective\": \"test\", \"protocol\": \"LL\", "
                 "\"inplace\": false, \"reuse_resources\": false, \"use_double_scratch_buffer\": %s, "
                 "\"buffer_alignment\": 16, \"num_threads_per_block\": 1024, \"min_message_size\": 0, "
                 "\"max_message_size\": 18446744073709551615, \"gpus\": [%s, %s]}",
                 ch, j->single_scratch ? "false" : "true", gpu[0], gpu[1]);
    return s;
}

/* The flags of our scratch chunk 1's packets (single scratch: bytes
 * [2 chunk, 4 chunk)) all equal those of chunk 0's, @p w the scratch. */
static int packets_complete(const uint64_t *w, size_t chunk)
{
    for (size_t u = 0; u < chunk / 8; u++)
        for (int h = 0; h < 2; h++)
            if (w[(2 * chunk + 16 * u) / 8 + (size_t)h] >> 32 != w[2 * u + (size_t)h] >> 32)
                return 0;
    return 1;
}

/* No upkt: the peer's packets, put by its proxy into our scratch chunk 1,
 * carry the peer's input, each with the flag our own packets (chunk 0)
 * carry. A flush makes a put's source reusable, not its data seen (over
 * the network, the peer's receiver may still be landing it): the flags
 * are awaited, 10 s at most. 0 when they do. */
static int check_packets(weft_comm_t *comm, weft_plan_t *p, weft_stream_t *s, int peer, int round, size_t chunk)
{
    char *dev;
    size_t bytes;
    uint64_t *w = malloc(4 * chunk);
    int fails = 0;
    for (int tries = 0;; tries++) {
        if (!w || weft_plan_buffer(comm, p, WEFT_PLAN_BUF_SCRATCH, (void **)&dev, &bytes) != WEFT_OK ||
            bytes < 4 * chunk || weft_memcpy(s, w, dev, 4 * chunk) != WEFT_OK || weft_stream_synchronize(s) != WEFT_OK) {
            free(w);
            return rank_fail("the executor's scratch: %s", weft_get_last_error());
        }
        if (packets_complete(w, chunk) || tries == 10000)
            break;
        usleep(1000);
    }
    for (size_t u = 0; u < chunk / 8 && !fails; u++) {
        const uint64_t *in = w + (2 * chunk + 16 * u) / 8, *own = w + 2 * u;
        for (int h = 0; h < 2 && !fails; h++)
            for (int b = 0; b < 4 && !fails; b++) {
                size_t i = 8 * u + 4 * (size_t)h + (size_t)b;
                unsigned got = (unsigned)(in[h] >> (8 * b)) & 0xffu;
                if (got != pattern(peer, round, i) || in[h] >> 32 != own[h] >> 32)
                    fails += rank_fail("rppkt without upkt, chunk %zu: packet %zu half %d is 0x%016llx (byte %zu: %u, "
                                       "expected %u; our flag 0x%08llx)",
                                       chunk, u, h, (unsigned long long)in[h], i, got, pattern(peer, round, i),
                                       (unsigned long long)(own[h] >> 32));
            }
    }
    free(w);
    return fails;
}

/* The file's text, rank 1's pws turned into puts where @p unsignalled. */
static char *plan_text(const job_t *j)
{
    char path[4096];
    FILE *f;
    long n;
    char *s;
    if (!j->file)
        return rppkt_text(j);
    snprintf(path, sizeof(path), "%s/t/coll/plans/mscclpp-dsl-units/%s", TOP_SRCDIR, j->file);
    if (!(f = fopen(path, "r")) || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
        !(s = calloc(1, (size_t)n + 1)) || fread(s, 1, (size_t)n, f) != (size_t)n)
        bail("cannot read %s", path);
    fclose(f);
    if (j->wide_put) {
        /* only the pws's references have an index and a size: same-length edits */
        static const char *const edits[][2] = {
            {"\"input_chunks\": 2", "\"input_chunks\": 4"}, {"\"index\": 1", "\"index\": 2"}, {"\"size\": 1", "\"size\": 2"}};
        for (size_t e = 0; e < sizeof(edits) / sizeof(edits[0]); e++)
            for (char *at = strstr(s, edits[e][0]); at; at = strstr(at + 1, edits[e][0]))
                memcpy(at, edits[e][1], strlen(edits[e][1]));
    }
    if (j->unsignalled) {
        /* gpus[1]'s op: the second "pws" of the file */
        char *first = strstr(s, "\"name\": \"pws\"");
        char *second = first ? strstr(first + 1, "\"name\": \"pws\"") : NULL;
        if (!second)
            bail("%s: no second pws", j->file);
        memcpy(second, "\"name\": \"put\"", strlen("\"name\": \"put\""));
    }
    return s;
}

static int rank_main(int rank, int nranks, void *arg)
{
    const job_t *j = arg;
    weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
    weft_comm_t *comm;
    weft_stream_t *s;
    weft_plan_t *p;
    char *text = plan_text(j);
    static const size_t chunks[] = {16, 4096, 1u << 20, 48};
    int fails = 0, peer = 1 - rank;
    char host[32];

    if (!j->hosts) {
        snprintf(host, sizeof(host), "plan-port-host-%d", rank);
        setenv("WEFT_HOSTID", host, 1);
    }
    if (j->unsignalled)
        cfg.device_timeout_ms = 1500;
    else if (!j->file)
        cfg.device_timeout_ms = 15000; /* rppkt: a hang (seen on GPUs) ends well within the test's 60 s */
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, &cfg, &comm) != WEFT_OK ||
        weft_stream_create(comm, &s) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    if (weft_plan_load_string(text, &p) != WEFT_OK)
        return rank_fail("load %s: %s", j->file ? j->file : "the rppkt plan", weft_get_last_error());
    free(text);
    for (size_t r = 0; r < (j->unsignalled ? 1 : sizeof(chunks) / sizeof(chunks[0])) && !fails; r++) {
        size_t ic = p->gpus[rank].chunks[WEFT_PLAN_BUF_INPUT], chunk = chunks[r], in_bytes = ic * chunk;
        size_t out_bytes = p->gpus[rank].chunks[WEFT_PLAN_BUF_OUTPUT] * chunk;
        char *in = NULL, *out = NULL, *host_in = malloc(in_bytes + 1), *host_out = malloc(out_bytes + 1);
        weft_status_t st;
        if (!host_in || !host_out || weft_mem_alloc(comm, in_bytes + 64, (void **)&in) != WEFT_OK ||
            weft_mem_alloc(comm, out_bytes + 64, (void **)&out) != WEFT_OK)
            return rank_fail("alloc: %s", weft_get_last_error());
        for (size_t i = 0; i < in_bytes; i++)
            host_in[i] = (char)pattern(rank, (int)r, i);
        rank_step("%s: chunk of %zu bytes on %s", j->file ? j->file : "rppkt", chunk,
                  j->hosts ? "one host" : "two hosts");
        /* rank 0 starts each later round late: a rank 1 whose waits were
         * answered by a signal too many in the round before (a pws of
         * several chunks signalling once per chunk) finishes and checks
         * before rank 0 has put anything */
        if (r > 0 && rank == 0 && j->puts)
            usleep(50000);
        st = weft_memcpy(s, in, host_in, in_bytes);
        if (st == WEFT_OK)
            st = weft_execute(comm, p, in, out, in_bytes, out_bytes, WEFT_UINT8, WEFT_SUM, s);
        if (st == WEFT_OK && out_bytes)
            st = weft_memcpy(s, host_out, out, out_bytes);
        if (st == WEFT_OK)
            st = weft_stream_synchronize(s);
        if (j->unsignalled) {
            const char *e = weft_get_last_error();
            if (rank == 0 && st == WEFT_OK)
                fails += rank_fail("%s without rank 1's signal: rank 0's wait was answered", j->file);
            else if (rank == 0 && (st != WEFT_ERR_TIMEOUT || !e || !strstr(e, "wait for rank 1")))
                fails += rank_fail("%s without rank 1's signal: %s, not a timeout of the wait for rank 1: %s", j->file,
                                   weft_status_string(st), e ? e : "(none)");
            else if (rank == 1 && st != WEFT_OK)
                fails += rank_fail("rank 1 signalled nobody waiting and failed: %s", weft_status_string(st));
            else if (rank == 0)
                diag("rank 0, unsignalled: %s: %s", weft_status_string(st), e);
        } else if (st != WEFT_OK) {
            fails += rank_fail("%s, chunk %zu: %s: %s", j->file ? j->file : "rppkt", chunk, weft_status_string(st),
                               weft_get_last_error());
        } else if (!j->file && j->no_unpack) {
            /* the peer's put was sent once the peer is past its drain's flush */
            if (weft_bootstrap_barrier(comm) != WEFT_OK)
                fails += rank_fail("barrier: %s", weft_get_last_error());
            else
                fails += check_packets(comm, p, s, peer, (int)r, chunk);
        } else if (!j->file) {
            /* the output: the peer's input, through its packets */
            for (size_t i = 0; i < out_bytes && !fails; i++)
                if ((unsigned char)host_out[i] != pattern(peer, (int)r, i))
                    fails += rank_fail("rppkt, chunk %zu: output byte %zu is %u, expected the peer's %u", chunk, i,
                                       (unsigned char)host_out[i], pattern(peer, (int)r, i));
        } else if (j->puts) {
            /* our first k chunks as we wrote them; the next k: the peer's first k, put by its proxy */
            size_t k = j->wide_put ? 2 : 1, bytes; /* chunks a put moves */
            char *dev, *buf = malloc(2 * k * chunk);
            /* the executor's buffer is device memory on a GPU: copied out */
            if (!buf || weft_plan_buffer(comm, p, WEFT_PLAN_BUF_INPUT, (void **)&dev, &bytes) != WEFT_OK ||
                bytes < 2 * k * chunk || weft_memcpy(s, buf, dev, 2 * k * chunk) != WEFT_OK ||
                weft_stream_synchronize(s) != WEFT_OK)
                return rank_fail("the executor's input buffer: %s", weft_get_last_error());
            for (size_t i = 0; i < 2 * k * chunk && !fails; i++) {
                unsigned char want = i < k * chunk ? pattern(rank, (int)r, i) : pattern(peer, (int)r, i - k * chunk);
                if ((unsigned char)buf[i] != want)
                    fails += rank_fail("%s, chunk %zu: input byte %zu is %u, expected %u (%s)", j->file, chunk, i,
                                       (unsigned char)buf[i], want, i < k * chunk ? "ours" : "the peer's put");
            }
            free(buf);
        }
        weft_mem_free(comm, in);
        weft_mem_free(comm, out);
        free(host_in);
        free(host_out);
        /* a rank with nothing to do (flush: rank 1) must not leave while
         * its peer still runs: that is a peer lost */
        if (!j->unsignalled && weft_bootstrap_barrier(comm) != WEFT_OK)
            fails += rank_fail("barrier: %s", weft_get_last_error());
    }
    /* rank 1 stays up past rank 0's device timeout: rank 0's wait must
     * give up by itself, not on seeing rank 1 leave */
    if (j->unsignalled && rank == 1)
        sleep(4);
    weft_plan_destroy(p);
    weft_stream_destroy(s);
    weft_comm_destroy(comm);
    return fails;
}

/* One rank: what the executor refuses before anything runs, naming the op. */
static int refusals(int rank, int nranks, void *arg)
{
    job_t j = {.file = "put__put_with_signal_test.json", .hosts = 1, .puts = 1};
    weft_comm_t *comm;
    weft_plan_t *p;
    char *text = plan_text(&j), *at, *edited, why[512];
    const char *pws = "\"name\": \"pws\"", *ppkt = "\"name\": \"ppkt\"";
    int fails = 0;
    weft_status_t st;
    (void)arg;
    if (!job_id(rank, &id) || weft_comm_init(&id, nranks, rank, NULL, &comm) != WEFT_OK)
        return rank_fail("init: %s", weft_get_last_error());
    /* rank 0's pws becomes a ppkt over the port channel */
    if (!(at = strstr(text, pws)) || !(edited = malloc(strlen(text) + 2)))
        return rank_fail("no pws");
    *at = 0;
    sprintf(edited, "%s%s%s", text, ppkt, at + strlen(pws));
    if (weft_plan_load_string(edited, &p) != WEFT_OK)
        return rank_fail("load the ppkt plan: %s", weft_get_last_error());
    st = weft_plan_admits(comm, p, WEFT_FLOAT32, WEFT_SUM, why, sizeof(why));
    if (st != WEFT_ERR_UNSUPPORTED || !strstr(why, "gpus[0].threadblocks[0].ops[5]: ppkt over a port channel"))
        fails += rank_fail("ppkt over a port channel: %s: %s", weft_status_string(st), why);
    weft_plan_destroy(p);
    free(text);
    free(edited);
    weft_comm_destroy(comm);
    return fails;
}

/* One case on @p nranks ranks, named by the format; skipped where
 * WEFT_TEST_ONLY leaves it out. */
static void run_case(int nranks, int (*fn)(int, int, void *), void *arg, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void run_case(int nranks, int (*fn)(int, int, void *), void *arg, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    if (!tap_only(name))
        skip("%s: not in WEFT_TEST_ONLY", name);
    else
        ok(run_ranks(nranks, 60000, fn, arg, NULL), "%s", name);
}

int main(void)
{
    plan_wide_env();
    static const job_t plans[] = {
        {.file = "flush__flush_test.json"},
        {.file = "flush__flush_fuse_test.json"},
        {.file = "put__put_with_signal_test.json", .puts = 1},
        {.file = "put__put_with_signal_and_flush_test.json", .puts = 1},
        {.file = "put__put_with_signal_test.json", .puts = 1, .wide_put = 1},
        {.file = "put__put_with_signal_and_flush_test.json", .puts = 1, .wide_put = 1},
    };
    size_t n = sizeof(plans) / sizeof(plans[0]);
    plan((int)(2 * n + 9));
    /* WEFT_TEST_ONLY picks cases by name (tap_only): "rppkt", "network", ... */
    for (int hosts = 1; hosts >= 0; hosts--)
        for (size_t i = 0; i < n; i++) {
            job_t j = plans[i];
            j.hosts = hosts;
            run_case(2, rank_main, &j, "%s%s, 2 ranks, %s", j.file, j.wide_put ? " with 2-chunk puts" : "",
                     hosts ? "one host (IPC)" : "two hosts (network)");
        }
    for (int hosts = 1; hosts >= 0; hosts--) {
        job_t j = {.hosts = hosts};
        run_case(2, rank_main, &j, "rppkt over a port channel (LL, double scratch), %s: the output is the peer's input",
                 hosts ? "one host (IPC)" : "two hosts (network)");
    }
    {
        /* the one-host case taken apart: the channel, the scratch, the upkt */
        job_t mem = {.hosts = 1, .memory = 1}, single = {.hosts = 1, .single_scratch = 1};
        run_case(2, rank_main, &mem, "rppkt over a memory channel (LL, double scratch), one host: the output is the peer's input");
        run_case(2, rank_main, &single,
                 "rppkt over a port channel (LL, single scratch), one host (IPC): the output is the peer's input");
        for (int hosts = 1; hosts >= 0; hosts--) {
            job_t j = {.hosts = hosts, .single_scratch = 1, .no_unpack = 1};
            run_case(2, rank_main, &j,
                     "rppkt over a port channel without upkt (LL, single scratch), %s: the peer's packets land in the scratch",
                     hosts ? "one host (IPC)" : "two hosts (network)");
        }
    }
    for (int hosts = 1; hosts >= 0; hosts--) {
        job_t j = {.file = "put__put_with_signal_test.json", .hosts = hosts, .puts = 1, .unsignalled = 1};
        run_case(2, rank_main, &j,
                 "put with signal, rank 1's signal removed, %s: rank 0's wait fails in bounded time, naming a rank",
                 hosts ? "one host" : "two hosts");
    }
    run_case(1, refusals, NULL, "ppkt over a port channel: refused before it runs, naming the op");
    return test_done();
}
