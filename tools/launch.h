/* Starting the ranks of a tool: forked locally, or from a launcher. */
#ifndef WEFT_TOOLS_LAUNCH_H
#define WEFT_TOOLS_LAUNCH_H

#include "weft.h"

typedef int (*tool_rank_fn_t)(weft_comm_t *comm, void *arg);

/*
 * nranks > 0: forks nranks local ranks sharing a fresh unique id and runs
 * fn in each; returns the first non-zero exit code (a rank that dies takes
 * the others down after @p grace_ms). nranks == 0: this process is one
 * rank of a launcher-started job (weft_comm_init_from_env).
 */
int tool_run_ranks(int nranks, const weft_comm_config_t *cfg, tool_rank_fn_t fn, void *arg, int grace_ms);

#endif
