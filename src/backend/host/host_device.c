/* What device code compiled for the host backend calls out to. */
#include "config.h"
#include "weft/device.h"

#include <sched.h>
#include <time.h>

uint64_t weft_host_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void weft_host_yield(void)
{
    /* Ranks and their blocks share few cores: give the CPU away. */
    sched_yield();
}
