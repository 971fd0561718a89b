/* What device code compiled for the host backend calls out to, and the
 * host backend's wait policy (host.h). */
#include "config.h"
#include "host.h"
#include "backend.h"
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

/* How long a waiting thread spins in place before it yields, ns: set by
 * weft_host_spin_init (host_init); -1: auto, decided at each wait from the
 * cores and the ranks on this host (weft_gpu_local_ranks), which a
 * communicator notes before it initialises the backend. Relaxed: any
 * value either ever held is a valid policy. */
static long spin_ns = -1;
static int spin_cpus = 1;

void weft_host_spin_init(long param_ns)
{
    cpu_set_t set;
    int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    __atomic_store_n(&spin_cpus, cpus, __ATOMIC_RELAXED);
    __atomic_store_n(&spin_ns, param_ns < 0 ? -1 : param_ns, __ATOMIC_RELAXED);
}

long weft_host_spin_budget(void)
{
    long ns = __atomic_load_n(&spin_ns, __ATOMIC_RELAXED);
    int cpus, ranks;
    if (ns >= 0)
        return ns;
    /* auto (host.h); 4 cores or more spin as measured before the rank
     * count was known here */
    cpus = __atomic_load_n(&spin_cpus, __ATOMIC_RELAXED);
    ranks = weft_gpu_local_ranks();
    return cpus >= 4 || (ranks > 0 && ranks <= cpus) ? WEFT_HOST_SPIN_AUTO_NS : 0;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* This thread's current wait: until when it spins in place (0: done
 * spinning), and the spin count at which it stopped. */
static __thread uint64_t spin_until;
static __thread unsigned spin_spent;

int weft_host_poll_step(unsigned spins, unsigned yields)
{
    if (spins <= 1) {
        long b = weft_host_spin_budget();
        spin_spent = 0;
        spin_until = b > 0 ? weft_host_clock_ns() + (uint64_t)b : 0;
    }
    if (spin_until) {
        /* the clock read once per 16 looks: read at every look it was a
         * fifth of a small collective's time, and a look's latency */
        if ((spins & 15) != 0 || weft_host_clock_ns() < spin_until) {
            /* one pause per look: a flag a peer raises is seen about a
             * pause after it lands (four made each look cost ~4x) */
            cpu_relax();
            spin_spent = spins;
            return 1;
        }
        spin_until = 0;
    }
    if (spins - spin_spent > yields)
        return 0;
    sched_yield();
    return 1;
}

void weft_host_yield(unsigned spins)
{
    /* Where the cores allow (weft_host_spin_init), spin in place first: a
     * peer's flag is seen within nanoseconds, where a yield costs a system
     * call per look. Then yield: ranks and their blocks often outnumber
     * the cores, and sched_yield alone lets a spinning thread keep its core
     * for a whole time slice. After a burst of yields, sleep, longer the
     * longer we wait (2 us .. 64 us), so the thread we wait for gets the
     * core. */
    static __thread int slack_set;
    if (weft_host_poll_step(spins, 256))
        return;
    spins -= spin_spent; /* the schedule below counts from the end of spinning */
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
