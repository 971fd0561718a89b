/*
 * The packet buffer's layout for packet teams: see packet_layout.h and
 * src/kernels/coll_common.h ("Packet teams"). t/coll/packet-layout-t
 * checks, for many team counts, team sizes and message limits, that every
 * share weft_coll_pkt_part gives a team fits the region sized here.
 */
#include "config.h"
#include "packet_layout.h"

/* Least bytes a team: the streams of one call differ by an element at
 * most (under 16 bytes), so with two 16-byte units a team or more the
 * smallest stream still has a unit for each team of the launch; with one,
 * a team could be left without a share of a stream, and so without a wait
 * for its sender (the room rule of coll_common.h needs one). */
#define LEAST_TEAM_BYTES 32

static uint64_t least(uint64_t team_bytes)
{
    return team_bytes < LEAST_TEAM_BYTES ? LEAST_TEAM_BYTES : team_bytes;
}

/*
 * A slot holds a whole message as LL16 packets (twice its bytes), or, for
 * the two-step allreduce, a block's in each half (coll_allreduce_packet2).
 * With teams the slot is that many regions, team b's packets in region b,
 * each sized for the largest share a team takes:
 * - all K teams launched: a share is at most max / K plus a 16-byte unit
 *   and the tail, under max / K + 32 bytes, 2 max / K + 76 as packets;
 * - fewer (the largest stream under K team-bytes): under two team-bytes
 *   and the tail, 2 t + 31 bytes, 4 t + 76 as packets.
 * The two-step's streams are at most half the largest message (two ranks
 * or more) plus an element and get half a region each: half of both
 * bounds, plus the element, stays under half the region below.
 */
void weft_packet_layout(uint64_t packet_max, unsigned teams, uint64_t team_bytes, uint64_t *slot, uint64_t *region)
{
    uint64_t max = (packet_max + 7) / 8 * 8, k = teams, r;
    team_bytes = least(team_bytes);
    if (k <= 1) {
        *slot = *region = 2 * max + 128;
        return;
    }
    r = 8 * team_bytes + 160;
    if (r < 2 * ((max + k - 1) / k) + 192)
        r = 2 * ((max + k - 1) / k) + 192;
    *region = (r + 31) / 32 * 32; /* its half stays on 16 bytes */
    *slot = k * *region;
}

unsigned weft_packet_launch_teams(uint64_t stream_bytes, unsigned teams, uint64_t team_bytes)
{
    uint64_t n = stream_bytes / least(team_bytes);
    if (n > teams)
        n = teams;
    return n ? (unsigned)n : 1;
}
