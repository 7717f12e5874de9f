/* Stepped mode of the probe protocol (bridgebench/lockstep.py), for C probes. With BRIDGEBENCH_STEPPED=1
 * the probe says "bridgebench-stepped/1 ready" once set up, then runs each iteration only when the harness
 * sends "g" on stdin, and answers with that iteration's seconds on a line of its own; the JSON object
 * still comes last. Without it these are no-ops, and the probe runs its iterations back to back. */
#ifndef BBSTEP_H
#define BBSTEP_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bbstep_on = 0;

static void bbstep_ready(void) {
    const char *s = getenv("BRIDGEBENCH_STEPPED");
    bbstep_on = s != NULL && strcmp(s, "1") == 0;
    if (!bbstep_on) return;
    fputs("bridgebench-stepped/1 ready\n", stdout);
    fflush(stdout);
}

/* Waits for the harness's turn; anything but "g" ends the process (the harness records why). */
static void bbstep_wait(void) {
    if (!bbstep_on) return;
    errno = 0;
    int c = getchar();
    /* A library's timer signal (GT.M's flush timer, a second after a database write) interrupts the wait:
     * wait again, as the harness has not closed anything. */
    while (c == EOF && ferror(stdin) && errno == EINTR) {
        clearerr(stdin);
        errno = 0;
        c = getchar();
    }
    if (c != 'g') {
        if (c == EOF && ferror(stdin)) fprintf(stderr, "probe: stepped mode: reading stdin: %s\n", strerror(errno));
        else if (c == EOF) fputs("probe: stepped mode: expected \"g\" on stdin, got end of input\n", stderr);
        else fprintf(stderr, "probe: stepped mode: expected \"g\" on stdin, got byte %d\n", c);
        exit(2);
    }
}

static void bbstep_done(double seconds) {
    if (!bbstep_on) return;
    printf("%.9e\n", seconds);
    fflush(stdout);
}
#endif
