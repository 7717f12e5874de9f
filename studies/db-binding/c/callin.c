/* The c-callin and c-batched mechanisms: the benchmark's operation from C through GT.M's call-ins, since
 * GT.M has no direct C access to globals. Usage: callin ITERATIONS "OP N" [batched]; prints one
 * bridgebench/1 line. OP is traverse, get or set (set: clear^bbci first, tally^bbci last).
 *   one call-in per node (c-callin): next^bbci, get^bbci, set^bbci. The floor of any binding that makes
 *     one call per node.
 *   batched (c-batched): batch^bbci, getbatch^bbci, setbatch^bbci, BATCH nodes a call-in, the same entries
 *     and reply format the Lua batched style uses. The floor of any batching binding. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gtmxc_types.h"
#include "bbstep.h" /* the stepped mode of the probe protocol (lock-step blocks) */

#define VALUE_BYTES (1 << 20)
#define BATCH 256 /* nodes a call-in, as the Lua batched style */

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

/* batched ------------------------------------------------------------------------------------------ */
static ci_name_descriptor entry(const char *name) {
    ci_name_descriptor d;
    d.rtn_name.address = (char *)name;
    d.rtn_name.length = (gtm_long_t)strlen(name);
    d.handle = NULL;
    return d;
}

/* The first limit nodes of ^BCAT("lvd",*) through a batched entry: batch (subscripts: the sum is of the
 * subscripts) or getbatch (subscript and value pairs: the sum is of the values). */
static void walk_batched(const char *name, int values, long limit, char *answer, size_t size) {
    ci_name_descriptor d = entry(name);
    char last[256] = "", number[32];
    long count = 0;
    unsigned long long sum = 0;
    while (count < limit) {
        gtm_string_t x = {(gtm_long_t)strlen(last), last}, out = {VALUE_BYTES, value};
        long n = limit - count < BATCH ? limit - count : BATCH;
        gtm_status_t status = gtm_cip(&d, "^BCAT", "lvd", &x, (gtm_long_t)n, &out);
        if (status != 0) fail(name, status);
        if (out.length == 0) break;
        const unsigned char *p = (const unsigned char *)value, *end = p + out.length;
        while (p < end) {
            size_t len = *p++;
            memcpy(last, p, len);
            last[len] = '\0';
            p += len;
            const char *counted = last;
            if (values) {
                len = ((size_t)p[0] << 16) | ((size_t)p[1] << 8) | p[2];
                p += 3;
                size_t copy = len < sizeof number - 1 ? len : sizeof number - 1;
                memcpy(number, p, copy);
                number[copy] = '\0';
                counted = number;
                p += len;
            }
            sum += strtoull(counted, NULL, 10);
            count++;
        }
    }
    snprintf(answer, size, "%ld %llu", count, sum);
}

static void traverse_batched(long limit, char *answer, size_t size) { walk_batched("batch", 0, limit, answer, size); }

static void get_batched(long limit, char *answer, size_t size) { walk_batched("getbatch", 1, limit, answer, size); }

static void set_batched(long limit, char *answer, size_t size) {
    ci_name_descriptor setbatch = entry("setbatch");
    char number[32];
    gtm_status_t status = gtm_ci("clear");
    if (status != 0) fail("gtm_ci(clear)", status);
    for (long first = 1; first <= limit; first += BATCH) {
        unsigned char *p = (unsigned char *)value;
        for (long i = first; i < first + BATCH && i <= limit; i++) {
            size_t len = (size_t)snprintf(number, sizeof number, "%ld", i);
            *p++ = (unsigned char)len; /* the subscript */
            memcpy(p, number, len);
            p += len;
            *p++ = 0; /* the value: the same digits, its length in 3 bytes */
            *p++ = 0;
            *p++ = (unsigned char)len;
            memcpy(p, number, len);
            p += len;
        }
        gtm_string_t in = {(gtm_long_t)(p - (unsigned char *)value), value};
        status = gtm_cip(&setbatch, "^BBSET", "lvd", &in);
        if (status != 0) fail("gtm_cip(setbatch)", status);
    }
    status = gtm_ci("tally", answer);
    if (status != 0) fail("gtm_ci(tally)", status);
    (void)size;
}

int main(int argc, char **argv) {
    char op[16];
    long limit = 0;
    int batched = argc == 4 && strcmp(argv[3], "batched") == 0;
    if ((argc != 3 && !batched) || sscanf(argv[2], "%15s %ld", op, &limit) != 2) {
        fprintf(stderr, "usage: callin ITERATIONS \"traverse|get|set N\" [batched]\n");
        return 2;
    }
    long iterations = atol(argv[1]);
    void (*run)(long, char *, size_t) = strcmp(op, "traverse") == 0 ? (batched ? traverse_batched : traverse)
                                        : strcmp(op, "get") == 0    ? (batched ? get_batched : get)
                                        : strcmp(op, "set") == 0    ? (batched ? set_batched : set)
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
    bbstep_ready();
    for (long i = 0; i < iterations; i++) {
        bbstep_wait();
        double t0 = now();
        run(limit, answer, sizeof answer);
        times[i] = now() - t0;
        if (i == 0) {
            strcpy(first, answer);
        } else if (strcmp(first, answer) != 0) {
            fprintf(stderr, "callin: answers differ between iterations\n");
            return 1;
        }
        bbstep_done(times[i]);
    }
    gtm_exit();
    printf("{\"protocol\": \"bridgebench/1\", \"times\": [");
    for (long i = 0; i < iterations; i++) printf("%s%.9g", i ? ", " : "", times[i]);
    printf("], \"answer\": \"%s\", \"vm\": \"GT.M call-in%s\"}\n", first, batched ? ", batched" : "");
    return 0;
}
