/* A constant program for `bridgebench calibrate`: every iteration does the same work, so whatever moves its
 * time is the machine's doing. The work is floating point over a small array (loads, stores and a
 * dependent multiply-add chain), on purpose unlike the self-test's planted integer chain (planted.c): the
 * δ this calibrates is then checked by the self-test on a workload it was not fitted to.
 * Usage: constant ITERATIONS WORK [CELLS]   (WORK: passes over the array per iteration; CELLS: its length in
 * doubles, 4096 unless given: a larger array measures what another process's turn costs in the caches) */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bbstep.h"

#define CELLS 4096 /* 32 KiB of doubles: fits the first-level cache of the CPUs this runs on */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double work(double *cells, long length, long passes) {
    double carry = 1.0;
    for (long p = 0; p < passes; p++) {
        for (long i = 1; i < length; i++) {
            cells[i] = cells[i] * 0.999 + cells[i - 1] * 0.001 + carry * 1e-9;
            carry = cells[i];
        }
    }
    return carry;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: constant ITERATIONS WORK [CELLS]\n");
        return 2;
    }
    long iterations = atol(argv[1]);
    long passes = atol(argv[2]);
    long length = argc == 4 ? atol(argv[3]) : CELLS;
    if (iterations < 1 || passes < 1 || length < 2) {
        fprintf(stderr, "constant: ITERATIONS and WORK must be positive, CELLS at least 2\n");
        return 2;
    }
    double *times = malloc(sizeof(double) * (size_t)iterations);
    double *cells = malloc(sizeof(double) * (size_t)length);
    if (!times || !cells) return 1;
    for (long i = 0; i < length; i++) cells[i] = 1.0 + (double)i / (double)length;
    volatile double sink = 0.0;
    bbstep_ready();
    for (long i = 0; i < iterations; i++) {
        bbstep_wait();
        double t0 = now();
        double r = work(cells, length, passes);
        times[i] = now() - t0;
        sink += r; /* keeps the work live */
        bbstep_done(times[i]);
    }
    printf("{\"protocol\":\"bridgebench/1\",\"answer\":\"passes=%ld\",\"times\":[", passes);
    for (long i = 0; i < iterations; i++) printf("%s%.9e", i ? "," : "", times[i]);
    printf("]}\n");
    free(times);
    free(cells);
    return 0;
}
