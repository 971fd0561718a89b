/* The portable device API on the host: copies for any alignment and
 * thread split, LL packets and their flags, bounded waits, trigger
 * encoding (including splits and high offsets, and inline puts),
 * element conversions; puts at high offsets pushed by several threads at
 * once into one channel keep each BASE beside its DATA. */
#include "tap/basic.h"
#include "weft/device.h"
#include "weft/dtype.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int copy_ok(size_t n, size_t dalign, size_t salign, size_t ntid)
{
    unsigned char src[512], dst[512], want[512];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i * 31 + 7);
    memset(dst, 0xee, sizeof(dst));
    memcpy(want, dst, sizeof(want));
    memcpy(want + 16 + dalign, src + 16 + salign, n);
    /* the threads of a launch, one after the other */
    for (size_t t = 0; t < ntid; t++)
        weft_copy(dst + 16 + dalign, src + 16 + salign, n, t, ntid);
    return memcmp(dst, want, sizeof(dst)) == 0;
}

/* Several threads put at once over one channel (the executor's lead
 * threads, one per destination, where a plan has more destinations than
 * channels): every put is at a high offset, so BASE + DATA, and the pair
 * must stay adjacent in the FIFO. Each thread's high bits and size name it. */
#define RACE_THREADS 4
#define RACE_PUTS 4096 /* 2 x 4 x 4096 slots: a power of two, as a FIFO's size */
typedef struct {
    weft_port_channel_dev_t pc;
    unsigned id;
    int bad;
} race_t;

static void *race_main(void *arg)
{
    race_t *r = arg;
    for (unsigned i = 0; i < RACE_PUTS; i++)
        r->bad |= weft_pc_put(&r->pc, ((uint64_t)(r->id + 1) << 32) + 8 * i, 0, 1000 + r->id);
    return NULL;
}

static int race_pairs_ok(void)
{
    static weft_trigger_t trig[2 * RACE_THREADS * RACE_PUTS];
    uint64_t head = 0, tail = 0;
    weft_dev_ctl_t ctl;
    race_t r[RACE_THREADS];
    pthread_t th[RACE_THREADS];
    int ok_pairs = 1;
    memset(&ctl, 0, sizeof(ctl));
    memset(trig, 0, sizeof(trig));
    for (unsigned t = 0; t < RACE_THREADS; t++) {
        memset(&r[t], 0, sizeof(r[t]));
        r[t].id = t;
        r[t].pc.fifo.triggers = trig;
        r[t].pc.fifo.head = &head;
        r[t].pc.fifo.tail = &tail;
        r[t].pc.fifo.size = 2 * RACE_THREADS * RACE_PUTS; /* room for all: nothing drains it */
        r[t].pc.fifo.ctl = &ctl;
        r[t].pc.channel = 7;
    }
    for (unsigned t = 0; t < RACE_THREADS; t++)
        pthread_create(&th[t], NULL, race_main, &r[t]);
    for (unsigned t = 0; t < RACE_THREADS; t++) {
        pthread_join(th[t], NULL);
        ok_pairs = ok_pairs && !r[t].bad;
    }
    for (size_t i = 0; i + 1 < 2 * RACE_THREADS * RACE_PUTS && ok_pairs; i += 2) {
        unsigned tb = (unsigned)(trig[i].w1 >> 60) & 7, td = (unsigned)(trig[i + 1].w1 >> 60) & 7;
        uint64_t id = (trig[i].w0 >> 32) - 1, size = trig[i + 1].w0 & 0xffffffffull;
        if (tb != WEFT_TRIGGER_BASE || td != WEFT_TRIGGER_DATA || size != 1000 + id) {
            diag("slots %zu/%zu: types %u/%u, BASE of thread %llu, DATA of %llu bytes", i, i + 1, tb, td,
                 (unsigned long long)id, (unsigned long long)size);
            ok_pairs = 0;
        }
    }
    return ok_pairs && head == 2 * RACE_THREADS * RACE_PUTS;
}

int main(void)
{
    int all = 1;
    weft_dev_ctl_t ctl;
    uint64_t word = 0;

    plan(27);
    for (size_t n = 0; n <= 200 && all; n += (n < 40 ? 1 : 23))
        for (size_t da = 0; da < 17 && all; da++)
            for (size_t sa = 0; sa < 17 && all; sa += 3)
                for (size_t nt = 1; nt <= 33 && all; nt += 8)
                    if (!copy_ok(n, da, sa, nt)) {
                        diag("copy of %zu bytes, alignments %zu/%zu, %zu threads", n, da, sa, nt);
                        all = 0;
                    }
    ok(all, "weft_copy is exact for any size, alignment and thread split, and writes nothing else");

    /* LL16 and LL8 round trips with odd sizes, split over threads */
    {
        unsigned char src[100], out[104];
        weft_ll16_t pk16[16];
        weft_ll8_t pk8[32];
        int good = 1;
        memset(&ctl, 0, sizeof(ctl));
        ctl.timeout_ns = 1000000000ull;
        for (size_t i = 0; i < sizeof(src); i++)
            src[i] = (unsigned char)(200 - i);
        memset(pk16, 0, sizeof(pk16));
        memset(out, 0x55, sizeof(out));
        for (size_t t = 0; t < 3; t++)
            weft_ll16_put(pk16, src, 77, 9, t, 3);
        for (size_t t = 0; t < 2; t++)
            good &= weft_ll16_unpack(out, pk16, 77, 9, t, 2, &ctl, 1) == 0;
        ok(good && memcmp(out, src, 77) == 0 && out[77] == 0x55, "LL16 packets carry 77 bytes exactly");
        memset(pk8, 0, sizeof(pk8));
        memset(out, 0x55, sizeof(out));
        weft_ll8_put(pk8, src, 101 - 2, 3, 0, 1);
        good = weft_ll8_unpack(out, pk8, 99, 3, 0, 1, &ctl, 1) == 0;
        ok(good && memcmp(out, src, 99) == 0 && out[99] == 0x55, "LL8 packets carry 99 bytes exactly");
        ok(pk16[0].flag0 == 9 && pk16[0].flag1 == 9, "each LL16 half carries the flag");
        ctl.timeout_ns = 50000000ull; /* 50 ms */
        ok(weft_ll16_unpack(out, pk16, 77, 10, 0, 1, &ctl, 4) == 1, "a packet with another flag is not accepted");
        ok(WEFT_DEV_ERROR_CODE(ctl.error) == WEFT_DEV_TIMEOUT && WEFT_DEV_ERROR_OP(ctl.error) == WEFT_DEV_OP_PACKET_WAIT &&
               WEFT_DEV_ERROR_PEER(ctl.error) == 4,
           "the give-up is recorded as a packet-wait timeout for the peer");
    }
    is_int(1, weft_packet_next_flag(0xffffffffu), "flags skip 0 when they wrap");
    is_int(0xffffffffu, weft_packet_next_flag(0xfffffffeu), "and count up otherwise");

    /* bounded waits */
    memset(&ctl, 0, sizeof(ctl));
    ctl.timeout_ns = 20000000ull;
    word = 5;
    ok(weft_wait_geq_u64(&ctl, &word, 5, 1, WEFT_DEV_OP_SEMA_WAIT) == 0, "a satisfied wait returns at once");
    ok(weft_wait_geq_u64(&ctl, &word, 6, 2, WEFT_DEV_OP_SEMA_WAIT) == 1 && WEFT_DEV_ERROR_CODE(ctl.error) == WEFT_DEV_TIMEOUT,
       "an unsatisfied wait times out and records it");
    memset(&ctl, 0, sizeof(ctl));
    ctl.timeout_ns = 60000000000ull;
    ctl.abort = 1;
    ok(weft_wait_geq_u64(&ctl, &word, 6, 2, WEFT_DEV_OP_SEMA_WAIT) == 1 && WEFT_DEV_ERROR_CODE(ctl.error) == WEFT_DEV_ABORTED,
       "an aborted wait gives up and records the abort");

    /* triggers: a 4 GiB + 10 put at high offsets, with a signal at the end */
    {
        weft_trigger_t trig[64];
        uint64_t head = 0, tail = 0;
        weft_port_channel_dev_t pc;
        memset(&ctl, 0, sizeof(ctl));
        memset(trig, 0, sizeof(trig));
        memset(&pc, 0, sizeof(pc));
        pc.fifo.triggers = trig;
        pc.fifo.head = &head;
        pc.fifo.tail = &tail;
        pc.fifo.size = 64;
        pc.fifo.ctl = &ctl;
        pc.channel = 1000;
        pc.dst_mem = 511;
        pc.src_mem = 3;
        uint64_t dst = (3ull << 32) + 7, src = 9, bytes = (1ull << 32) + 10;
        ok(weft_pc_put_with_signal(&pc, dst, src, bytes) == 0, "a 4 GiB + 10 put is accepted");
        is_int(4, (long)head, "and split into BASE, DATA, BASE, DATA triggers");
        unsigned t0 = (unsigned)(trig[0].w1 >> 60) & 7, t1 = (unsigned)(trig[1].w1 >> 60) & 7,
                 t3 = (unsigned)(trig[3].w1 >> 60) & 7;
        ok(t0 == WEFT_TRIGGER_BASE && (trig[0].w0 >> 32) == 3 && (uint32_t)trig[0].w0 == 0,
           "the first BASE carries the high offset words");
        ok(t1 == WEFT_TRIGGER_DATA && (trig[1].w0 & 0xffffffff) == 0xffffffffu && (trig[1].w0 >> 32) == 9 &&
               (trig[1].w1 & 0xffffffff) == 7,
           "the first DATA moves 4 GiB - 1 bytes from the low offsets");
        uint64_t src2 = src + 0xffffffffull, dst2 = dst + 0xffffffffull;
        ok((uint32_t)trig[2].w0 == (uint32_t)(src2 >> 32) && (trig[2].w0 >> 32) == (dst2 >> 32) &&
               (trig[3].w0 & 0xffffffff) == 11 && (trig[3].w0 >> 32) == (uint32_t)src2 &&
               (trig[3].w1 & 0xffffffff) == (uint32_t)dst2,
           "the second part continues where the first ended");
        ok(t3 == (WEFT_TRIGGER_DATA | WEFT_TRIGGER_SIGNAL), "only the last part carries the signal");
        ok(((trig[3].w1 >> 50) & 1023) == 1000 && ((trig[3].w1 >> 41) & 511) == 511 && ((trig[3].w1 >> 32) & 511) == 3 &&
               (trig[3].w1 >> 63),
           "channel and memory ids and the valid bit are encoded");

        /* inline puts (inline_max): 8 bytes a trigger, the bytes in w0 */
        uint64_t words[4] = {0x1122334455667788ull, 0x99aabbccddeeff00ull, 3, 4};
        memset(trig, 0, sizeof(trig));
        head = tail = 0;
        pc.inline_max = 16;
        pc.src_base = (const char *)words;
        pc.inline_mem = 3;
        ok(weft_pc_put_with_signal(&pc, 64, 0, 16) == 0 && head == 2 &&
               ((trig[0].w1 >> 32) & 511) == WEFT_TRIGGER_INLINE_MEM && trig[0].w0 == words[0] &&
               (trig[0].w1 & 0xffffffff) == 64 && ((trig[0].w1 >> 60) & 7) == WEFT_TRIGGER_DATA &&
               trig[1].w0 == words[1] && (trig[1].w1 & 0xffffffff) == 72 &&
               ((trig[1].w1 >> 60) & 7) == (WEFT_TRIGGER_DATA | WEFT_TRIGGER_SIGNAL) &&
               ((trig[1].w1 >> 41) & 511) == 511 && ((trig[1].w1 >> 50) & 1023) == 1000,
           "a 16-byte put goes inline: two triggers carrying the bytes, the signal on the last");
        memset(trig, 0, sizeof(trig));
        head = tail = 0;
        ok(weft_pc_put(&pc, (5ull << 32) + 8, 8, 8) == 0 && head == 2 && ((trig[0].w1 >> 60) & 7) == WEFT_TRIGGER_BASE &&
               (trig[0].w0 >> 32) == 5 && ((trig[1].w1 >> 32) & 511) == WEFT_TRIGGER_INLINE_MEM &&
               trig[1].w0 == words[1] && (trig[1].w1 & 0xffffffff) == 8,
           "an inline put at a high offset is preceded by a BASE trigger");
        memset(trig, 0, sizeof(trig));
        head = tail = 0;
        int copies = weft_pc_put(&pc, 64, 0, 24) == 0 && weft_pc_put(&pc, 68, 0, 8) == 0 &&
                     weft_pc_put(&pc, 64, 4, 8) == 0 && weft_pc_put(&pc, 64, 0, 12) == 0;
        pc.src_mem = 4; /* another memory than the one src_base belongs to */
        copies = copies && weft_pc_put(&pc, 64, 0, 8) == 0 && head == 5;
        for (int i = 0; i < 5; i++)
            copies = copies && ((trig[i].w1 >> 32) & 511) != WEFT_TRIGGER_INLINE_MEM;
        ok(copies, "puts above inline_max, at unaligned offsets or sizes, or from another memory are copies");
    }

    int pairs = 1;
    for (int round = 0; round < 10 && pairs; round++) /* a race: several tries */
        pairs = race_pairs_ok();
    ok(pairs, "puts at high offsets from %d threads at once over one channel: each BASE beside its DATA",
       RACE_THREADS);

    /* element conversions */
    ok(weft_f32_to_f16(1.0f) == 0x3c00 && weft_f32_to_f16(65504.0f) == 0x7bff && weft_f32_to_f16(65520.0f) == 0x7c00 &&
           weft_f32_to_f16(5.96046448e-8f) == 0x0001 && weft_f16_to_f32(0xc000) == -2.0f,
       "f16 conversions round to nearest even, overflow to infinity, keep subnormals");
    ok(weft_f32_to_bf16(1.0f) == 0x3f80 && weft_bf16_to_f32(0x4049) == 3.140625f && weft_f32_to_bf16(1.00390625f) == 0x3f80,
       "bf16 conversions round to nearest even");
    ok(weft_f32_to_e4m3(448.0f) == 0x7e && weft_f32_to_e4m3(1000.0f) == 0x7e && weft_e4m3_to_f32(0x38) == 1.0f &&
           weft_e4m3_to_f32(0x01) == 0.001953125f && isnan(weft_e4m3_to_f32(0x7f)),
       "fp8 e4m3: saturates at 448, subnormals, NaN");
    ok(weft_f32_to_e5m2(57344.0f) == 0x7b && weft_f32_to_e5m2(1e6f) == 0x7c && weft_e5m2_to_f32(0x3c) == 1.0f,
       "fp8 e5m2: max 57344, overflow to infinity");
    {
        weft_f16_t a = weft_f32_to_f16(1.5f), b = weft_f32_to_f16(2.25f);
        int32_t i = 7, j = -9;
        uint8_t e = weft_f32_to_e4m3(2.0f), f = weft_f32_to_e4m3(3.0f);
        weft_reduce_elem(WEFT_FLOAT16, WEFT_SUM, &a, &b);
        weft_reduce_elem(WEFT_INT32, WEFT_MIN, &i, &j);
        weft_reduce_elem(WEFT_FP8_E4M3, WEFT_PROD, &e, &f);
        ok(weft_f16_to_f32(a) == 3.75f && i == -9 && weft_e4m3_to_f32(e) == 6.0f, "reductions by type and op");
    }
    return test_done();
}
