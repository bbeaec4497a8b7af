/* A replay's preparation: bounded, checked, and undone when interrupted (prepare.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "iotrace.h"
#include "osmconfine.h"
#include "prepare.h"

#define CHUNK (1 << 20)

static char (*made)[NAME_MAX + 1]; /* the files prepared so far, removed on an interrupt or a failure */
static int at_dir = -1;
static size_t nmade, capmade;
static volatile sig_atomic_t stop_sig;
static struct sigaction saved[3];
static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};

void prepare_check(const char *dir, long long total, long long limit, const char *why)
{
    if (total > limit)
        iot_fail(2, "%s: the replay would first write %lld bytes of files the program found already there, over "
                    "the limit of %lld (--prepare-limit)", why, total, limit);
    struct statvfs fs;
    if (total > 0 && !statvfs(dir, &fs)) {
        long double avail = (long double)fs.f_bavail * (long double)fs.f_frsize;
        if ((long double)total > avail)
            iot_fail(2, "%s: the replay would first write %lld bytes of files the program found already there; "
                        "%s has %.0Lf bytes free", why, total, dir, avail);
    }
}

static void on_signal(int sig)
{
    stop_sig = sig;
}

void prepare_begin(int dirfd)
{
    at_dir = dirfd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a write in progress returns EINTR */
    sigemptyset(&sa.sa_mask);
    stop_sig = 0;
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &saved[i]);
}

static void remove_made(void)
{
    for (size_t i = 0; i < nmade; i++)
        unlinkat(at_dir, made[i], 0);
}

static _Noreturn void interrupted(void)
{
    remove_made();
    fprintf(stderr, "iotrace: interrupted while preparing the replay's files; the %zu it had made are removed\n",
            nmade);
    exit(128 + stop_sig);
}

void prepare_end(void)
{
    if (stop_sig)
        interrupted();
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &saved[i], NULL);
    free(made);
    made = NULL, nmade = capmade = 0;
}

void prepare_fill(const char *name, long long size, const char *buf)
{
    if (stop_sig)
        interrupted();
    if (nmade == capmade) {
        capmade = capmade ? 2 * capmade : 16;
        made = realloc(made, capmade * sizeof *made);
        if (!made)
            iot_fail(1, "out of memory");
    }
    if (unlinkat(at_dir, name, 0) && errno != ENOENT) {
        int e = errno;
        remove_made();
        iot_fail(1, "cannot remove %s before making it anew: %s", name, strerror(e));
    }
    snprintf(made[nmade++], NAME_MAX + 1, "%s", name);
    int fd = osm_confined_open(at_dir, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        int e = errno;
        nmade--;
        remove_made();
        iot_fail(1, "cannot create %s in the replay's directory: %s", name, osm_confined_why(e));
    }
    for (long long done = 0; done < size;) {
        if (stop_sig)
            close(fd), interrupted();
        size_t n = size - done < CHUNK ? (size_t)(size - done) : CHUNK;
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            remove_made();
            iot_fail(1, "cannot write %s: %s (the files prepared are removed)", name, w < 0 ? strerror(e) :
                     "no progress");
        }
        done += w;
    }
    if (close(fd)) {
        int e = errno;
        remove_made();
        iot_fail(1, "cannot write %s: %s (the files prepared are removed)", name, strerror(e));
    }
}
