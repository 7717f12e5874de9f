/* The c-callin mechanism: count the first PARAM nodes of ^BCAT("lvd",*) from C, one GT.M call-in per node
 * (next^bbci) — the floor cost of crossing from C into M, since GT.M has no direct C access to globals.
 * Usage: callin ITERATIONS PARAM; prints one bridgebench/1 line. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gtmxc_types.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fail(const char *what, gtm_status_t status) {
    char msg[512];
    gtm_zstatus(msg, sizeof msg);
    fprintf(stderr, "callin: %s failed (%d): %s\n", what, (int)status, msg);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: callin ITERATIONS PARAM\n");
        return 2;
    }
    long iterations = atol(argv[1]), limit = atol(argv[2]);
    if (iterations < 1 || limit < 1) {
        fprintf(stderr, "callin: ITERATIONS and PARAM must be positive\n");
        return 2;
    }
    gtm_status_t status = gtm_init();
    if (status != 0) fail("gtm_init", status);
    double *times = malloc(sizeof(double) * (size_t)iterations);
    if (times == NULL) return 1;
    long first_count = -1;
    unsigned long long first_sum = 0;
    for (long i = 0; i < iterations; i++) {
        char prev[256] = "", next[256];
        long count = 0;
        unsigned long long sum = 0;
        double t0 = now();
        for (;;) {
            status = gtm_ci("next", next, prev);
            if (status != 0) fail("gtm_ci(next)", status);
            if (next[0] == '\0') break;
            count++;
            sum += strtoull(next, NULL, 10);
            strcpy(prev, next);
            if (count == limit) break;
        }
        times[i] = now() - t0;
        if (i == 0) {
            first_count = count;
            first_sum = sum;
        } else if (count != first_count || sum != first_sum) {
            fprintf(stderr, "callin: answers differ between iterations\n");
            return 1;
        }
    }
    gtm_exit();
    printf("{\"protocol\": \"bridgebench/1\", \"times\": [");
    for (long i = 0; i < iterations; i++) printf("%s%.9g", i ? ", " : "", times[i]);
    printf("], \"answer\": \"%ld %llu\", \"vm\": \"GT.M call-in\"}\n", first_count, first_sum);
    return 0;
}
