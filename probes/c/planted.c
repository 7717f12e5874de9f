/* A benchmark with a known amount of work, for bridgebench's self-test: it can plant a warm-up phase,
 * a slowdown, or a change in the amount of work, so the harness's verdicts can be checked against truth.
 * Usage: planted ITERATIONS WORK[/WARMUP_ITERS:FACTOR[/SLOWDOWN_FROM:FACTOR]]   ("-" for no phase)
 * The environment variable PLANTED_SCALE multiplies the work (1.05 plants a 5% slowdown). PLANTED_MODE=F plants
 * process modes, as LuaJIT has them: each process draws, at even odds, whether its work is multiplied by F
 * for its whole life (1.06: each process 0 % or 6 % slower); the JSON says which it drew ("mode").
 * PLANTED_LATE=N:F plants a step in every process of a mechanism, whatever its benchmark's phases: from iteration
 * N on the work is F times larger (105:1.3 of 120 iterations: no steady state, where A has one).
 * Under callgrind (`run --metric instructions`) each iteration's work is bracketed: the counters are
 * zeroed before it and dumped after it, one dump an iteration (no-ops outside valgrind). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bbcount.h"
#include "bbstep.h"

static double clock_s(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC_RAW); }
static double cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); } /* read outside the timed region */

/* A dependent chain of integer operations the compiler cannot fold away: time grows with `units`. */
static unsigned long long work(long units) {
    unsigned long long x = 88172645463325252ULL;
    for (long i = 0; i < units; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

static void phase(const char *arg, long *iters, double *factor) {
    *iters = 0;
    *factor = 1.0;
    if (strcmp(arg, "-") != 0 && sscanf(arg, "%ld:%lf", iters, factor) != 2) {
        fprintf(stderr, "planted: bad phase %s (expected N:FACTOR)\n", arg);
        exit(2);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: planted ITERATIONS WORK[/WARMUP_ITERS:FACTOR[/SLOWDOWN_FROM:FACTOR]]\n");
        return 2;
    }
    long iterations = atol(argv[1]);
    long base = 0;
    char warm[64] = "-", slow[64] = "-";
    if (sscanf(argv[2], "%ld/%63[^/]/%63s", &base, warm, slow) < 1) {
        fprintf(stderr, "planted: bad parameter %s\n", argv[2]);
        return 2;
    }
    const char *scale_env = getenv("PLANTED_SCALE");
    double scale = scale_env ? atof(scale_env) : 1.0;
    const char *mode_env = getenv("PLANTED_MODE");
    double mode = 1.0;
    if (mode_env) {
        unsigned char coin = 0;
        FILE *urandom = fopen("/dev/urandom", "rb");
        if (!urandom || fread(&coin, 1, 1, urandom) != 1) {
            fprintf(stderr, "planted: cannot read /dev/urandom for PLANTED_MODE\n");
            return 1;
        }
        fclose(urandom);
        mode = (coin & 1) ? atof(mode_env) : 1.0;
        scale *= mode;
    }
    long warm_iters, slow_from, late_from;
    double warm_factor, slow_factor, late_factor;
    phase(warm, &warm_iters, &warm_factor);
    phase(slow, &slow_from, &slow_factor);
    const char *late_env = getenv("PLANTED_LATE");
    phase(late_env ? late_env : "-", &late_from, &late_factor);
    if (iterations < 1 || base < 1 || scale <= 0) {
        fprintf(stderr, "planted: ITERATIONS, WORK and PLANTED_SCALE must be positive\n");
        return 2;
    }
    double *times = malloc(sizeof(double) * (size_t)iterations);
    double *cpu_s = malloc(sizeof(double) * (size_t)iterations);
    if (!times || !cpu_s) return 1;
    volatile unsigned long long sink = 0;
    bbstep_ready();
    for (long i = 0; i < iterations; i++) {
        bbstep_wait();
        double factor = scale;
        if (i < warm_iters) factor *= warm_factor;
        if (slow_from > 0 && i >= slow_from) factor *= slow_factor;
        if (late_from > 0 && i >= late_from) factor *= late_factor;
        long units = (long)((double)base * factor);
        double c0 = cpu();
        CALLGRIND_ZERO_STATS;
        double t0 = now();
        unsigned long long r = work(units);
        double t1 = now();
        CALLGRIND_DUMP_STATS;
        cpu_s[i] = cpu() - c0;
        times[i] = t1 - t0;
        sink ^= r;  /* keeps the work live */
        bbstep_done(times[i]);
    }
    /* The answer is the work asked for, not the work done, so every mechanism agrees. */
    printf("{\"protocol\":\"bridgebench/1\",\"answer\":\"work=%ld\",\"times\":[", base);
    for (long i = 0; i < iterations; i++) printf("%s%.9e", i ? "," : "", times[i]);
    printf("],\"counters\":{\"cpu_s\":[");
    for (long i = 0; i < iterations; i++) printf("%s%.9e", i ? "," : "", cpu_s[i]);
    printf("]}");
    if (mode_env) printf(",\"mode\":%g", mode);
    printf("}\n");
    free(times);
    free(cpu_s);
    return 0;
}
