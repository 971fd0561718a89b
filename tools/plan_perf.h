/* weft-perf --plan (plan_perf.c). */
#ifndef WEFT_TOOLS_PLAN_PERF_H
#define WEFT_TOOLS_PLAN_PERF_H

#include "perf.h"
#include "weft.h"

/*
 * Runs weft-perf --plan @p path @p operation: the plan's collective
 * (@p operation names it) swept as o's options say, with @p vs_builtin the
 * built-in algorithm beside it; or, for operation "run", the plan executed
 * to completion. @p nranks: forked ranks (0: a launcher's job, or the
 * plan's rank count when no launcher started this process). Returns the
 * exit code.
 */
int plan_perf_main(const perf_opts_t *o, const char *path, const char *operation, int vs_builtin, int nranks,
                   const weft_comm_config_t *cfg);

#endif
