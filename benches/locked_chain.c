/*
 * What a locked compare-and-swap costs on this machine, alone and behind the
 * loads that feed it (BENCHMARKS.md, "Where amphi trails", seventh session).
 * One thread, no contention; each mode is a loop of 20,000,000 rounds, the
 * best of 3 runs, in ns per round:
 *
 *   0  a `lock cmpxchg` with constant operands, then a plain store
 *      (a spin lock's acquire and release, as kanal's)
 *   1  a load, then a `lock cmpxchg` whose expected value is what it loaded
 *   2  a load, a second load at an address computed from the first, then the
 *      `lock cmpxchg` (a ring's claim: `tail` or `head`, then the slot's stamp)
 *   3  mode 2 with another `lock cmpxchg` on a second line before the claim
 *
 * A locked instruction lets no later load start before it has finished, so
 * the loads in front of the next one lengthen every round.
 *
 *   cc -O2 benches/locked_chain.c -o /tmp/locked_chain && /tmp/locked_chain
 *
 * On the 2-core development VM, 2026-12-06 ~00:00 UTC: 9.31, 12.14, 17.58, 25.26;
 * at 02:00 UTC, the VM in its slow mode: 11.72, 20.74, 25.87, 29.91.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t word __attribute__((aligned(64)));
static uint64_t word2 __attribute__((aligned(64)));
static uint64_t stamps[64 * 8] __attribute__((aligned(64)));

int main(void) {
    const long n = 20000000;
    volatile uint64_t sink = 0;
    for (int mode = 0; mode < 4; mode++) {
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now();
            for (long i = 0; i < n; i++) {
                if (mode == 0) {
                    uint64_t e = 0;
                    __atomic_compare_exchange_n(&word, &e, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
                    __atomic_store_n(&word2, i, __ATOMIC_RELEASE);
                } else {
                    uint64_t e = __atomic_load_n(&word, __ATOMIC_ACQUIRE);
                    if (mode >= 2) {
                        uint64_t s = __atomic_load_n(&stamps[((e >> 4) & 63) * 8 * ((e & 1) + 1)],
                                                     __ATOMIC_ACQUIRE);
                        if (s == e)
                            sink++;
                    }
                    if (mode == 3) {
                        uint64_t f = 0;
                        __atomic_compare_exchange_n(&word2, &f, 0, 0, __ATOMIC_ACQ_REL,
                                                    __ATOMIC_RELAXED);
                    }
                    __atomic_compare_exchange_n(&word, &e, e, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
                }
            }
            double t = (now() - t0) / n * 1e9;
            if (t < best)
                best = t;
        }
        printf("mode %d: %.2f ns per round\n", mode, best);
    }
    return 0;
}
