/* clock.h - timestamps for profiles (module prefix tgTm_).
 *
 * Profiles time things that may take a few nanoseconds (a call of a small
 * compiled function, one rule tried), where clock_gettime costs tens of
 * nanoseconds on some machines (virtual ones).  So the hot paths read a
 * tick counter (the time-stamp counter on x86, which counts at a constant
 * rate on the CPUs this runs on; the monotonic clock in nanoseconds
 * elsewhere), and ticks become milliseconds by a rate measured against
 * the monotonic clock, so no fixed rate is assumed. */
#ifndef TG_CLOCK_H
#define TG_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define TGTM_TSC 1
#endif

static inline double tgTm_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline uint64_t tgTm_ticks(void)
{
#ifdef TGTM_TSC
    return __rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* A time and a tick count read together. */
typedef struct tgTm_mark {
    double ms;
    uint64_t ticks;
} tgTm_mark;

static inline tgTm_mark tgTm_now(void)
{
    tgTm_mark m = {tgTm_ms(), tgTm_ticks()};
    return m;
}

/* Milliseconds per tick, measured once per file that asks (a
 * millisecond's wait the first time). */
static inline double tgTm_calibrated(void)
{
    static double r;
    if (r <= 0) {
        tgTm_mark m = tgTm_now(), n;
        do
            n = tgTm_now();
        while (n.ms - m.ms < 1.0);
        r = n.ticks > m.ticks ? (n.ms - m.ms) / (double)(n.ticks - m.ticks) : 1e-6;
    }
    return r;
}

/* Milliseconds per tick measured from mark m to now, when long enough
 * ago to tell (else tgTm_calibrated). */
static inline double tgTm_ms_per_tick(tgTm_mark m)
{
    tgTm_mark n = tgTm_now();
    if (n.ticks <= m.ticks || n.ms - m.ms < 10)
        return tgTm_calibrated();
    return (n.ms - m.ms) / (double)(n.ticks - m.ticks);
}

#endif
