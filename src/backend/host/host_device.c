/* What device code compiled for the host backend calls out to. */
#include "config.h"
#include "weft/device.h"

#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

uint64_t weft_host_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void weft_host_yield(unsigned spins)
{
    /* Ranks and their blocks often outnumber the cores, and sched_yield
     * alone lets a spinning thread keep its core for a whole time slice.
     * After a burst of yields, sleep, longer the longer we wait
     * (2 us .. 64 us), so the thread we wait for gets the core. */
    static __thread int slack_set;
    if (spins < 256) {
        sched_yield();
        return;
    }
    if (!slack_set) {
        prctl(PR_SET_TIMERSLACK, 1000ul, 0, 0, 0); /* 1 us instead of 50 us */
        slack_set = 1;
    }
    /* Short sleeps for a long while: a reply that crosses a network (tens
     * to hundreds of us) must not wait out a 64 us sleep at each end. */
    unsigned us = spins < 1024 ? 2 : spins < 16384 ? 8 : 64;
    struct timespec ts = {0, (long)us * 1000};
    nanosleep(&ts, NULL);
}
