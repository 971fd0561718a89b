/* Multi-rank tests of weft: rank 0 makes the job's unique id and shares
 * it, so the test's parent process starts no thread before forking. */
#ifndef WEFT_TAP_JOB_H
#define WEFT_TAP_JOB_H

#include <string.h>
#include "tap/ranks.h"
#include "weft.h"

static inline int job_id(int rank, weft_unique_id_t *id)
{
    if (rank == 0 && weft_get_unique_id(id) != WEFT_OK) {
        rank_fail("weft_get_unique_id: %s", weft_get_last_error());
        memset(id, 0, sizeof(*id));
    }
    return rank_share(0, id, sizeof(*id));
}

#endif
