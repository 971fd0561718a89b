/* Every built-in kernel body (builtins.h lists them), for the files that
 * instantiate them: the registry (kernels.c) and gpu_instantiate.h. */
#ifndef WEFT_KERNELS_BODIES_H
#define WEFT_KERNELS_BODIES_H

#include "p2p.h"
#include "coll_allreduce_packet.h"
#include "coll_allreduce_packet2.h"
#include "coll_allreduce_rsag.h"
#include "coll_allgather.h"
#include "coll_allgather_packet.h"
#include "coll_reduce_scatter.h"
#include "coll_reduce_scatter_packet.h"
#include "coll_broadcast_packet.h"
#include "coll_reduce_packet.h"
#include "coll_broadcast.h"
#include "coll_reduce.h"
#include "coll_alltoall.h"
#include "coll_alltoall_packet.h"
#include "coll_barrier.h"
#include "coll_ring.h"
#include "coll_p2p.h"
#include "coll_switch.h"
#include "scale.h"
#include "executor.h"
#include "empty.h"
#include "coll_signal.h"

#endif
