/*
 * The packet buffer's layout for packet teams (src/coll/packet_layout.c)
 * against the kernels' split of a stream among teams (weft_coll_pkt_part,
 * src/kernels/coll_common.h), on the host, for many team counts, bytes
 * per team and packet limits: every launch's shares cover each stream
 * once, each team has a share of every non-empty stream when there are
 * two teams or more (the room rule needs it), and every share's LL16
 * packets fit its team's region, and the regions the slot, in the
 * one-shot layout and in the two-step's halves.
 */
#include "tap/basic.h"
#include "coll_common.h"
#include "packet_layout.h"

#include <stdio.h>

static const unsigned teams[] = {1, 2, 3, 5, 7, 8, 16, 33, 64};
static const uint64_t team_bytes[] = {16 /* taken as 32, the least */, 32, 48, 2048, 4096};
static const uint64_t limits[] = {8, 100, 1228, 4096, 65536, 100000};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The next size to try after @p s (every size while small, then a
 * stride, then every size of the last 40 below @p max). */
static uint64_t next_size(uint64_t s, uint64_t max)
{
    if (s < 4096 || s + 40 >= max)
        return s + 1;
    return s + 37 < max - 40 ? s + 37 : max - 40;
}

/* LL16 packets for @p n data bytes: 16 bytes per 8. */
static uint64_t packet_bytes(uint64_t n)
{
    return (n + 7) / 8 * 16;
}

/*
 * Checks the launch for one stream of @p bytes as @p nb teams, whose
 * packets go to at most @p room bytes a region (@p region apart, the
 * slot's first @p avail bytes). 0, or 1 after printing what broke.
 */
static int check_stream(const char *what, uint64_t bytes, unsigned nb, unsigned k, uint64_t region, uint64_t room,
                        uint64_t avail)
{
    weft_coll_args_t a = {0};
    uint64_t end = 0;
    a.per_block = k > 1;
    for (unsigned b = 0; b < nb; b++) {
        weft_kctx_t kc = {b, nb, 0, 1};
        uint64_t off, n, at = a.per_block ? b * region : 0;
        weft_coll_pkt_part(&kc, &a, bytes, &off, &n);
        if (off != end || (nb > 1 && n == 0 && bytes > 0) || (off % 16 && n)) {
            diag("%s: %llu bytes, team %u of %u: share [%llu, +%llu) after %llu", what, (unsigned long long)bytes, b,
                 nb, (unsigned long long)off, (unsigned long long)n, (unsigned long long)end);
            return 1;
        }
        if (packet_bytes(n) > room || at + packet_bytes(n) > avail) {
            diag("%s: %llu bytes, team %u of %u (of %u): %llu packet bytes, region %llu at %llu, room %llu of %llu",
                 what, (unsigned long long)bytes, b, nb, k, (unsigned long long)packet_bytes(n),
                 (unsigned long long)region, (unsigned long long)at, (unsigned long long)room,
                 (unsigned long long)avail);
            return 1;
        }
        end = off + n;
    }
    if (end != bytes) {
        diag("%s: %llu bytes: the shares end at %llu", what, (unsigned long long)bytes, (unsigned long long)end);
        return 1;
    }
    return 0;
}

/* The one-shot bodies: one stream of the message, whole slot per team
 * region. */
static int check_one_shot(unsigned k, uint64_t t, uint64_t max)
{
    uint64_t slot, region;
    char what[96];
    weft_packet_layout(max, k, t, &slot, &region);
    snprintf(what, sizeof(what), "one-shot, %u teams, %llu B a team, limit %llu", k, (unsigned long long)t,
             (unsigned long long)max);
    for (uint64_t s = 1; s <= max; s = next_size(s, max))
        if (check_stream(what, s, weft_packet_launch_teams(s, k, t), k, region, region, slot))
            return 1;
    return 0;
}

/* The two-step: streams of a rank's block (the blocks of count over
 * nranks differ by an element at most), half a region each. */
static int check_two_step(unsigned k, uint64_t t, uint64_t max)
{
    uint64_t slot, region, half;
    char what[96];
    weft_packet_layout(max, k, t, &slot, &region);
    half = region / 2 / 16 * 16;
    for (int r = 2; r <= 9; r++) {
        for (uint64_t es = 1; es <= 8; es *= 2) {
            snprintf(what, sizeof(what), "two-step, %d ranks, %llu-byte elements, %u teams, %llu B a team, limit %llu",
                     r, (unsigned long long)es, k, (unsigned long long)t, (unsigned long long)max);
            for (uint64_t count = 1; count <= max / es; count = next_size(count, max / es)) {
                uint64_t biggest = (count + (uint64_t)r - 1) / (uint64_t)r * es;
                unsigned nb = weft_packet_launch_teams(biggest, k, t);
                for (int p = 0; p < r; p++) {
                    uint64_t lo = count * (uint64_t)p / (uint64_t)r, hi = count * (uint64_t)(p + 1) / (uint64_t)r;
                    /* the first half (phase one) and the second alike */
                    if (check_stream(what, (hi - lo) * es, nb, k, region, half, k > 1 ? slot - half : half))
                        return 1;
                }
            }
        }
    }
    return 0;
}

int main(void)
{
    int bad_one = 0, bad_two = 0;
    plan(4);
    for (size_t i = 0; i < NELEM(teams); i++)
        for (size_t j = 0; j < NELEM(team_bytes); j++)
            for (size_t m = 0; m < NELEM(limits); m++) {
                bad_one += check_one_shot(teams[i], team_bytes[j], limits[m]);
                bad_two += check_two_step(teams[i], team_bytes[j], limits[m]);
            }
    ok(bad_one == 0, "one-shot: every share of every size fits its region, %d layouts broke", bad_one);
    ok(bad_two == 0, "two-step: every block's share fits half its region, %d layouts broke", bad_two);
    /* the launch: one team per team-bytes of the largest stream */
    ok(weft_packet_launch_teams(0, 8, 2048) == 1 && weft_packet_launch_teams(4095, 8, 2048) == 1 &&
           weft_packet_launch_teams(4096, 8, 2048) == 2 && weft_packet_launch_teams(1 << 20, 8, 2048) == 8,
       "teams of a launch: one per 2 KiB of the largest stream, at least 1, at most 8");
    {
        uint64_t slot, region;
        weft_packet_layout(65536, 1, 2048, &slot, &region);
        ok(slot == region && slot == 2 * 65536 + 128, "one team: the slot is a whole message as packets");
    }
    return test_done();
}
