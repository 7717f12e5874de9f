/* The c-callin mechanism: the benchmark's operation from C, one GT.M call-in per node — the floor cost of
 * crossing from C into M, since GT.M has no direct C access to globals. Usage: callin ITERATIONS "OP N",
 * OP one of traverse (next^bbci per node), get (get^bbci per node), set (clear^bbci, set^bbci per node,
 * tally^bbci); prints one bridgebench/1 line. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gtmxc_types.h"

#define VALUE_BYTES (1 << 20)

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

static void traverse(long limit, char *answer, size_t size) {
    char prev[256] = "", next[256];
    long count = 0;
    unsigned long long sum = 0;
    while (count < limit) {
        gtm_status_t status = gtm_ci("next", next, prev);
        if (status != 0) fail("gtm_ci(next)", status);
        if (next[0] == '\0') break;
        count++;
        sum += strtoull(next, NULL, 10);
        strcpy(prev, next);
    }
    snprintf(answer, size, "%ld %llu", count, sum);
}

static char *value;

static void get(long limit, char *answer, size_t size) {
    char sub[32];
    unsigned long long sum = 0;
    for (long i = 1; i <= limit; i++) {
        gtm_string_t out = {VALUE_BYTES, value};
        snprintf(sub, sizeof sub, "%ld", i);
        gtm_status_t status = gtm_ci("get", sub, &out);
        if (status != 0) fail("gtm_ci(get)", status);
        value[out.length < VALUE_BYTES ? out.length : VALUE_BYTES - 1] = '\0';
        sum += strtoull(value, NULL, 10);
    }
    snprintf(answer, size, "%ld %llu", limit, sum);
}

static void set(long limit, char *answer, size_t size) {
    char sub[32];
    gtm_status_t status = gtm_ci("clear");
    if (status != 0) fail("gtm_ci(clear)", status);
    for (long i = 1; i <= limit; i++) {
        snprintf(sub, sizeof sub, "%ld", i);
        status = gtm_ci("set", sub, sub);
        if (status != 0) fail("gtm_ci(set)", status);
    }
    status = gtm_ci("tally", answer);  /* "count sum": at most 40 bytes */
    if (status != 0) fail("gtm_ci(tally)", status);
    (void)size;
}

int main(int argc, char **argv) {
    char op[16];
    long limit = 0;
    if (argc != 3 || sscanf(argv[2], "%15s %ld", op, &limit) != 2) {
        fprintf(stderr, "usage: callin ITERATIONS \"traverse|get|set N\"\n");
        return 2;
    }
    long iterations = atol(argv[1]);
    void (*run)(long, char *, size_t) = strcmp(op, "traverse") == 0 ? traverse
                                        : strcmp(op, "get") == 0    ? get
                                        : strcmp(op, "set") == 0    ? set
                                                                    : NULL;
    if (iterations < 1 || limit < 1 || run == NULL) {
        fprintf(stderr, "callin: ITERATIONS and N must be positive and OP traverse, get or set\n");
        return 2;
    }
    gtm_status_t status = gtm_init();
    if (status != 0) fail("gtm_init", status);
    double *times = malloc(sizeof(double) * (size_t)iterations);
    value = malloc(VALUE_BYTES);
    if (times == NULL || value == NULL) return 1;
    char first[64] = "", answer[64];
    for (long i = 0; i < iterations; i++) {
        double t0 = now();
        run(limit, answer, sizeof answer);
        times[i] = now() - t0;
        if (i == 0) {
            strcpy(first, answer);
        } else if (strcmp(first, answer) != 0) {
            fprintf(stderr, "callin: answers differ between iterations\n");
            return 1;
        }
    }
    gtm_exit();
    printf("{\"protocol\": \"bridgebench/1\", \"times\": [");
    for (long i = 0; i < iterations; i++) printf("%s%.9g", i ? ", " : "", times[i]);
    printf("], \"answer\": \"%s\", \"vm\": \"GT.M call-in\"}\n", first);
    return 0;
}
