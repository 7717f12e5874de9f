/* A pointer chase for `bridgebench doctor`: each load's address is what the load before it read, in a random
 * cycle through every cache line of a buffer, so an iteration's time is the memory's latency at that size and
 * nothing else. Over a buffer that fits a core's own cache it reads the core; over one that fits only the
 * cache the core shares with other tenants of the host, it reads how much of that cache is left to us: the
 * reference loop (constant.c, 32 KiB) cannot see that, and memory-heavy benchmarks feel it.
 * Usage: chase ITERATIONS BYTES LOADS   (LOADS: dependent loads an iteration; the answer is the cycle's
 * length and where the chase ended, the same on every machine for the same arguments) */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bbstep.h"

#define LINE 64 /* bytes a node takes: one cache line, so that no two nodes share one */

struct node {
    struct node *next;
    char pad[LINE - sizeof(struct node *)];
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift64: a fixed sequence, so the cycle is the same in every execution (and the answer with it) */
static uint64_t draw(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: chase ITERATIONS BYTES LOADS\n");
        return 2;
    }
    long iterations = atol(argv[1]);
    long bytes = atol(argv[2]);
    long loads = atol(argv[3]);
    if (iterations < 1 || bytes < 2 * LINE || loads < 1) {
        fprintf(stderr, "chase: ITERATIONS and LOADS must be positive, BYTES at least %d\n", 2 * LINE);
        return 2;
    }
    size_t count = (size_t)bytes / LINE;
    struct node *nodes = aligned_alloc(LINE, count * sizeof(struct node));
    size_t *order = malloc(count * sizeof(size_t));
    double *times = malloc(sizeof(double) * (size_t)iterations);
    if (!nodes || !order || !times) {
        fprintf(stderr, "chase: out of memory for %ld bytes\n", bytes);
        return 1;
    }
    /* Sattolo's shuffle: one cycle through every node, in an order no prefetcher can follow */
    for (size_t i = 0; i < count; i++) order[i] = i;
    uint64_t state = 0x9e3779b97f4a7c15u;
    for (size_t i = count - 1; i > 0; i--) {
        size_t j = (size_t)(draw(&state) % i);
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < count; i++) nodes[order[i]].next = &nodes[order[(i + 1) % count]];
    struct node *p = &nodes[0];
    for (size_t i = 0; i < count; i++) p = p->next; /* one lap untimed: the pages are touched, the cache filled */
    bbstep_ready();
    for (long i = 0; i < iterations; i++) {
        bbstep_wait();
        double t0 = now();
        for (long k = 0; k < loads; k++) p = p->next;
        times[i] = now() - t0;
        bbstep_done(times[i]);
    }
    printf("{\"protocol\":\"bridgebench/1\",\"answer\":\"nodes=%zu end=%zu\",\"times\":[", count, (size_t)(p - nodes));
    for (long i = 0; i < iterations; i++) printf("%s%.9e", i ? "," : "", times[i]);
    printf("]}\n");
    free(times);
    free(order);
    free(nodes);
    return 0;
}
