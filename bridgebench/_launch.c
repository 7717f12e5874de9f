/* Starts one benchmark process from a process of ~1 MB, so that the peak RSS wait4 reports is the
 * benchmark's own: Linux carries a process's peak RSS across fork and exec, so a benchmark forked
 * straight from the harness (a Python process of ~100 MB) would report the harness's footprint.
 *
 * Usage: launch RSS_FILE PROGRAM [ARG...]
 * Writes the child's ru_maxrss (KiB) to RSS_FILE, then exits as the child did: with its exit status,
 * or killed by the same signal. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: launch RSS_FILE PROGRAM [ARG...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "bridgebench-launch: fork failed: %s\n", strerror(errno));
        return 126;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        fprintf(stderr, "bridgebench-launch: cannot execute %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage usage;
    while (wait4(pid, &status, 0, &usage) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "bridgebench-launch: wait4 failed: %s\n", strerror(errno));
            return 126;
        }
    }
    FILE *out = fopen(argv[1], "w");
    if (out) {
        fprintf(out, "%ld\n", usage.ru_maxrss);
        fclose(out);
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);  /* the child already dumped core if it was going to */
        signal(sig, SIG_DFL);
        raise(sig);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 126;
}
