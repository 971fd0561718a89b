/* The plan tests' wide variants (t/coll/plan-wide-t and friends, built
 * with -DPLAN_T_WIDE=N): every plan thread block run by N blocks
 * (WEFT_EXEC_WIDE, src/kernels/executor.h), set before any rank starts. */
#ifndef WEFT_T_COLL_PLAN_WIDE_H
#define WEFT_T_COLL_PLAN_WIDE_H

#include <stdio.h>
#include <stdlib.h>

static void plan_wide_env(void)
{
#ifdef PLAN_T_WIDE
    char wide[16];
    snprintf(wide, sizeof(wide), "%d", PLAN_T_WIDE);
    setenv("WEFT_EXEC_WIDE", wide, 1);
#endif
}

#endif
