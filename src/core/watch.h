/*
 * Peer-loss watch: a thread per communicator that watches the bootstrap
 * links this rank holds. When a peer's link hangs up and the
 * communicator is still in use a grace period later
 * (WEFT_PEER_LOSS_GRACE_MS), it records WEFT_DEV_PEER_LOST naming that
 * rank in the device control block, so every device wait (and the host
 * backend's kernels) gives up at once and the call returns
 * WEFT_ERR_REMOTE naming the rank, instead of waiting for the device
 * timeout.
 *
 * Only peers with a bootstrap link are watched: every peer up to 3 ranks,
 * the ranks at distances 1, 2, 4, ... (the init barrier's links) beyond.
 * A rank that fails closes its links, so loss spreads to the others; a
 * rank whose communicator is aborted (weft_comm_abort, or a destroy that
 * gives up on its streams) hangs its links up at once (weft_watch_hangup),
 * so its peers' waits give up after the grace period, naming it, while
 * its process lives on, instead of at their device timeout.
 *
 * The thread also asks the backend, every 100 ms, whether the device has
 * failed for good (device_failed: a fault no later call can clear); if so
 * it fails the communicator and hangs its links up the same way
 * (weft_comm_fail_device), since nothing this rank does can end its part
 * of the peers' waits any more.
 */
#ifndef WEFT_WATCH_H
#define WEFT_WATCH_H

#include "comm.h"

typedef struct weft_watch weft_watch_t;

weft_status_t weft_watch_start(weft_comm_t *comm, weft_watch_t **out);
/* Stops and frees; NULL is fine. */
void weft_watch_stop(weft_watch_t *w);
/* Shuts down every bootstrap link the watch holds, so the peers at their
 * other ends see this rank gone (and this rank's own bootstrap calls fail
 * from then on). Any thread; NULL is fine. */
void weft_watch_hangup(weft_watch_t *w);

#endif
