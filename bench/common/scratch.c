/* scratch.c - files and directories a program makes for its own use and
 * must not leave behind: removed at exit and when SIGINT, SIGTERM or SIGHUP
 * ends it (the handler uses only async-signal-safe calls; a directory's
 * entries are read with getdents64), the last made first, so a directory
 * made inside another goes before it. osmscratch.h. */
#include "osmscratch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_SCRATCH 256

static struct {
    char path[4096];
    volatile sig_atomic_t used;
    bool dir;
} scratch[MAX_SCRATCH];
static bool installed;

/* A directory's entries, then the directory (one level: what we make). */
static void remove_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        char buf[4096];
        long n;
        while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
            for (long off = 0; off < n;) {
                struct dirent64 *d = (struct dirent64 *)(buf + off);
                if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
                    unlinkat(fd, d->d_name, 0);
                off += d->d_reclen;
            }
        }
        close(fd);
    }
    rmdir(path);
}

/* Last made, first removed: a directory goes after what was made in it. */
static void remove_all(void)
{
    for (int i = MAX_SCRATCH - 1; i >= 0; i--)
        if (scratch[i].used) {
            scratch[i].used = 0;
            if (scratch[i].dir)
                remove_dir(scratch[i].path);
            else
                unlink(scratch[i].path);
        }
}

static void on_signal(int sig)
{
    remove_all();
    signal(sig, SIG_DFL);
    raise(sig); /* ends the program with the signal's own status */
}

static void install(void)
{
    if (installed)
        return;
    installed = true;
    atexit(remove_all);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s = 0; s < 3; s++) {
        int sig = (int[]){ SIGINT, SIGTERM, SIGHUP }[s];
        struct sigaction old;
        sigaction(sig, NULL, &old);
        if (old.sa_handler == SIG_DFL) /* a program that handles a signal itself keeps it */
            sigaction(sig, &sa, NULL);
    }
}

static void add(const char *path, bool dir)
{
    install();
    int top = MAX_SCRATCH; /* the slot after the last one used keeps the order of making */
    while (top > 0 && !scratch[top - 1].used)
        top--;
    for (int i = top < MAX_SCRATCH ? top : 0; i < MAX_SCRATCH; i++)
        if (!scratch[i].used) {
            strncpy(scratch[i].path, path, sizeof scratch[i].path - 1);
            scratch[i].dir = dir;
            scratch[i].used = 1;
            return;
        }
}

void osm_scratch_file(const char *path) { add(path, false); }
void osm_scratch_dir(const char *path) { add(path, true); }

void osm_scratch_done(const char *path)
{
    for (int i = 0; i < MAX_SCRATCH; i++)
        if (scratch[i].used && !strcmp(scratch[i].path, path))
            scratch[i].used = 0;
}

void osm_scratch_remove(const char *path)
{
    for (int i = 0; i < MAX_SCRATCH; i++)
        if (scratch[i].used && !strcmp(scratch[i].path, path)) {
            scratch[i].used = 0;
            if (scratch[i].dir)
                remove_dir(path);
            else
                unlink(path);
        }
}

static int template(const char *dir, const char *tag, char *path, size_t n)
{
    int len = snprintf(path, n, "%s/osmeter-%s-%d-XXXXXX", dir, tag, (int)getpid());
    if (len < 0 || (size_t)len >= n) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int osm_scratch_new_file(const char *dir, const char *tag, char *path, size_t n)
{
    if (template(dir, tag, path, n) != 0)
        return -1;
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        osm_scratch_file(path);
    return fd;
}

int osm_scratch_new_dir(const char *dir, const char *tag, char *path, size_t n)
{
    if (template(dir, tag, path, n) != 0 || !mkdtemp(path))
        return -1;
    osm_scratch_dir(path);
    return 0;
}
