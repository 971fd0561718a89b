/* Collectives: the algorithm registry (see coll.c); names and the selection table in coll_table.h. */
#ifndef WEFT_COLL_H
#define WEFT_COLL_H

#include "coll_common.h"
#include "coll_table.h"
#include "comm.h"

#include <stddef.h>
#include <stdint.h>

/* The blocks one rank may launch with every block of every rank on its
 * device resident at once: the device's multiprocessors (rounded down to
 * a power of two) shared among the ranks on it; 0 where the backend has
 * no multiprocessor count (the host backend). */
unsigned weft_coll_device_blocks(const weft_comm_t *comm);
/* Releases the collectives' channels (registered with weft_comm_on_destroy). */
void weft_coll_ctx_destroy(weft_comm_t *comm);
/* Launches the communicator's last collective kernel again with the very
 * same arguments, as a replayed CUDA/HIP graph does: what tests use to
 * check that nothing a kernel needs to differ between calls is fixed at
 * launch (t/coll/replay-t). */
weft_status_t weft_coll_replay_last(weft_comm_t *comm, weft_stream_t *stream);

/* coll_p2p.c: how many heap allocations the group recorder has made in
 * this process (entry arrays, argument copies, large groups' scratch): a
 * thread's steady stream of groups of deferred calls makes none (tests). */
uint64_t weft_group_allocs(void);
/* coll_p2p.c: releases the send/recv links. */
void weft_p2p_ctx_destroy(weft_comm_t *comm);
/* The bytes of @p comm's capture arenas, and of those held by captured
 * groups whose graphs live (for tests). */
void weft_p2p_capture_bytes(weft_comm_t *comm, size_t *total, size_t *held);
/* All-to-all of @p bytes per rank over the point-to-point links (ranks on
 * several hosts); arguments already checked. */
weft_status_t weft_p2p_alltoall(weft_comm_t *comm, weft_stream_t *stream, const void *sendbuf, void *recvbuf,
                                size_t bytes);
/* Broadcast of @p bytes from @p root down a binomial tree of links. */
weft_status_t weft_p2p_tree_broadcast(weft_comm_t *comm, weft_stream_t *stream, const void *sendbuf, void *recvbuf,
                                      size_t bytes, int root);

/* coll_window.c: the slot of the window holding [ptr, ptr + bytes) and the
 * offset there (*off), or -1; the device table of windows and registered
 * buffers (made on first use; NULL where ranks span hosts);
 * releasing every window at communicator destruction. */
int weft_window_find(const weft_comm_t *comm, const void *ptr, size_t bytes, uint64_t *off);
char *const *weft_window_table(weft_comm_t *comm);
void weft_window_set_destroy(weft_comm_t *comm);
/* Where rank @p peer's buffer of window @p w is mapped here (*ptr, NULL if
 * it is not: on another host) and its size: 1; 0 if @p w is no window of
 * @p comm; -1 if @p peer has no buffer in it. */
int weft_window_peer(const weft_comm_t *comm, const weft_comm_window_t *w, int peer, char **ptr, size_t *bytes);
/* coll_window.c, at a collective's launch: the registration-table row
 * holding [ptr, ptr + bytes) (a window's, or a registration of this
 * rank's, made now by the cache where it is on, the buffer has at least
 * WEFT_REG_MIN_BYTES and @p capturing is 0), with its generation and the
 * offset; -1: none, stage. Waits on no other rank's user thread. @p plan:
 * the executor asks (its default threshold is 1 MiB on every backend; the
 * built-in collectives' is every size on the host backend). */
int weft_reg_find(weft_comm_t *comm, weft_stream_t *stream, const void *ptr, size_t bytes, int capturing, int plan,
                  uint64_t *gen, uint64_t *off);
/* How many collectives the kernels ran zero-copy on this rank (tests). */
uint64_t weft_reg_zc_calls(weft_comm_t *comm);

#endif
