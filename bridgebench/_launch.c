/* Starts one benchmark process and answers for everything it starts.
 *
 * Usage: launch USAGE_FILE PROGRAM [ARG...]
 *
 * 1. Honest peak RSS: Linux carries a process's peak RSS across fork and exec, so a benchmark forked
 *    straight from the harness (a Python process of ~100 MB) would report the harness's footprint. This
 *    process is ~1 MB.
 * 2. Nothing escapes: it is a child subreaper, so descendants that leave the process group (setsid,
 *    double fork) are reparented here and are still found. When the benchmark ends, when the harness asks
 *    (SIGTERM, SIGINT, SIGHUP), or when the harness dies (PR_SET_PDEATHSIG), every descendant is killed
 *    and reaped before this process exits.
 * 3. CPU time: the benchmark's own user and system time (from wait4), which the disturbance audit sets
 *    against its wall time.
 * 4. No files left behind: the benchmark gets a private temporary folder as TMPDIR (made in the TMPDIR
 *    this process was given, or /tmp), removed with all it holds once every descendant is gone. A process
 *    that dies hard cannot remove what it put there (a Go plugin's RPC server its unix socket), and over a
 *    campaign those files would pile up in /tmp; this process outlives them all, also when the harness
 *    dies. The folder's name has a fixed length, so it moves every execution's environment alike. This
 *    process holds a lock on its folder while it lives; one killed outright (SIGKILL) cannot remove its
 *    folder, so each launcher first removes the folders beside its own that no launcher holds any more
 *    (sweep). Folders named bridgebench-tmp-…, made before the lock was (2026-11-29), are left alone: nothing
 *    tells whether their launcher still runs.
 *
 * Writes "maxrss_kb N", "user_s X" and "sys_s X" lines to USAGE_FILE (opened before the benchmark starts),
 * then exits as the benchmark did:
 * with its exit status, or killed by the same signal. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCRATCH_PREFIX "bridgebench-run-" /* as long as the bridgebench-tmp- it replaced: the same layout */
#define SWEEP_AFTER_S 60 /* older than this, and unlocked: its launcher is gone (not between mkdtemp and flock) */

static volatile sig_atomic_t stop_requested = 0;
static volatile pid_t benchmark = 0;

static void on_stop(int sig) {
    (void)sig;
    stop_requested = 1;
    if (benchmark > 0) kill(benchmark, SIGKILL); /* async-signal-safe; wait4 then returns */
}

/* The parent pid of `pid`, from /proc/PID/stat (the field after the command, which may hold spaces or
 * parentheses: read from the last ')'). */
static pid_t parent_of(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *end = strrchr(buf, ')');
    char state;
    int ppid;
    if (!end || sscanf(end + 1, " %c %d", &state, &ppid) != 2) return -1;
    return (pid_t)ppid;
}

/* SIGKILL every direct child; return how many were found. Grandchildren are reparented here when their
 * parent dies, so repeating this until no child is left reaches every descendant. */
static int kill_children(void) {
    pid_t self = getpid();
    int found = 0;
    DIR *proc = opendir("/proc");
    if (!proc) return 0;
    struct dirent *entry;
    while ((entry = readdir(proc)) != NULL) {
        if (!isdigit((unsigned char)entry->d_name[0])) continue;
        pid_t pid = (pid_t)atoi(entry->d_name);
        if (parent_of(pid) == self) {
            kill(pid, SIGKILL);
            found++;
        }
    }
    closedir(proc);
    return found;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path); /* best effort: what cannot be removed stays, and the rest still goes */
    return 0;
}

/* Remove the private folders in `parent` that no launcher holds: this user's, older than SWEEP_AFTER_S, whose
 * lock can be taken (a live launcher holds its own until it exits). Best effort, like the removal itself. */
static void sweep(const char *parent) {
    int dfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return;
    DIR *dir = fdopendir(dfd);
    if (!dir) {
        close(dfd);
        return;
    }
    time_t now = time(NULL);
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (strncmp(entry->d_name, SCRATCH_PREFIX, strlen(SCRATCH_PREFIX)) != 0) continue;
        int fd = openat(dfd, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st;
        char path[4096];
        if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && now - st.st_mtime > SWEEP_AFTER_S &&
            flock(fd, LOCK_EX | LOCK_NB) == 0 &&
            (size_t)snprintf(path, sizeof path, "%s/%s", parent, entry->d_name) < sizeof path)
            nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
        close(fd);
    }
    closedir(dir);
}

/* The private temporary folder, made in the given TMPDIR (or /tmp) and locked for as long as this process lives
 * (the lock's descriptor is never closed: exiting releases it); 0, with the reason on stderr, if it cannot be
 * made. */
static int make_scratch(char *path, size_t size) {
    const char *parent = getenv("TMPDIR");
    if (!parent || !*parent) parent = "/tmp";
    sweep(parent);
    errno = 0;
    if ((size_t)snprintf(path, size, "%s/" SCRATCH_PREFIX "XXXXXX", parent) >= size || !mkdtemp(path)) {
        fprintf(stderr, "bridgebench-launch: cannot make a private temporary folder in %s: %s\n", parent,
                strerror(errno ? errno : ENAMETOOLONG));
        return 0;
    }
    int lock = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (lock >= 0 && flock(lock, LOCK_EX) < 0 && errno == EINTR) {
        /* a stop signal came in: still hold it, or a sweep could take the folder of a running benchmark */
    }
    return 1;
}

static void kill_and_reap_all(void) {
    for (;;) {
        kill_children();
        if (waitpid(-1, NULL, 0) < 0 && errno != EINTR) return; /* ECHILD: nothing is left */
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: launch USAGE_FILE PROGRAM [ARG...]\n");
        return 2;
    }
    pid_t harness = getppid();
    struct sigaction stop = {0};
    stop.sa_handler = on_stop;
    sigemptyset(&stop.sa_mask);
    sigaction(SIGTERM, &stop, NULL);
    sigaction(SIGINT, &stop, NULL);
    sigaction(SIGHUP, &stop, NULL);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != harness) return 125; /* the harness died before the death signal was armed */

    /* Opened now, close-on-exec: the benchmark never sees it, and a harness gone by the end cannot have this
     * process make its file anew. The harness passes a file without a name as /dev/fd/N; every descriptor
     * above stderr is closed at the benchmark's exec, so it starts with stdin, stdout and stderr alone. */
    FILE *out = fopen(argv[1], "we");
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);

    char scratch[4096];
    if (!make_scratch(scratch, sizeof scratch)) return 127;
    setenv("TMPDIR", scratch, 1);

    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "bridgebench-launch: fork failed: %s\n", strerror(errno));
        rmdir(scratch);
        return 126;
    }
    if (pid == 0) {
        /* The benchmark starts with default signal handling, however the harness was started (a shell
         * starts background jobs with SIGINT ignored). */
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "bridgebench-launch: cannot execute %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    benchmark = pid;
    if (stop_requested) kill(pid, SIGKILL); /* asked to stop before the pid was known */
    int status = 0;
    struct rusage usage;
    memset(&usage, 0, sizeof usage);
    for (;;) {
        pid_t r = wait4(pid, &status, 0, &usage);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "bridgebench-launch: wait4 failed: %s\n", strerror(errno));
            kill_and_reap_all();
            nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
            return 126;
        }
    }
    kill_and_reap_all(); /* whatever the benchmark left behind, in its group or not */
    nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT); /* and what they left in TMPDIR */

    if (out) {
        fprintf(out, "maxrss_kb %ld\nuser_s %ld.%06ld\nsys_s %ld.%06ld\n", usage.ru_maxrss,
                (long)usage.ru_utime.tv_sec, (long)usage.ru_utime.tv_usec, (long)usage.ru_stime.tv_sec,
                (long)usage.ru_stime.tv_usec);
        fclose(out);
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core); /* the child already dumped core if it was going to */
        signal(sig, SIG_DFL);
        prctl(PR_SET_PDEATHSIG, 0);
        raise(sig);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 126;
}
