/* The packet buffer's layout for packet teams (src/kernels/coll_common.h,
 * "Packet teams"): how big a slot and a team's region are, and how many
 * teams a packet call launches. Pure arithmetic, shared by the registry
 * (coll.c) and the test that proves every share fits its region. */
#ifndef WEFT_COLL_PACKET_LAYOUT_H
#define WEFT_COLL_PACKET_LAYOUT_H

#include <stdint.h>

/* One rank's slot in one half of the packet buffer and, with @p teams > 1,
 * the region of each team in it (slot = teams * region), for packet
 * messages of at most @p packet_max bytes and a team per @p team_bytes of
 * the largest stream. One team: region = slot. */
void weft_packet_layout(uint64_t packet_max, unsigned teams, uint64_t team_bytes, uint64_t *slot, uint64_t *region);

/* Teams (blocks) of a packet launch whose largest stream is
 * @p stream_bytes: one per @p team_bytes, at least one, at most @p teams. */
unsigned weft_packet_launch_teams(uint64_t stream_bytes, unsigned teams, uint64_t team_bytes);

#endif
