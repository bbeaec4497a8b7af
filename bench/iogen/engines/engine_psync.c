/* engine_psync.c - plain pread/pwrite, one blocking call per request. The
 * call happens in queue; submit_reap hands the finished request back.
 * Synchronous: iogen runs one stream (a thread) per outstanding request. */
#include "engine.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

struct psync {
    const int *fds;
    struct io **done;
    unsigned ndone, cap;
};

static int p_init(struct engine *e, const int *fds, unsigned nfds, struct io *slots, unsigned n, size_t bufsize,
                  char *err, size_t errlen)
{
    (void)nfds;
    (void)slots;
    (void)bufsize;
    struct psync *p = calloc(1, sizeof *p);
    if (p)
        p->done = calloc(n, sizeof *p->done);
    if (!p || !p->done) {
        free(p);
        return snprintf(err, errlen, "out of memory"), -1;
    }
    p->fds = fds;
    p->cap = n;
    e->priv = p;
    return 0;
}

static void p_queue(struct engine *e, struct io *io)
{
    struct psync *p = e->priv;
    int fd = p->fds[io->target];
    ssize_t r = io->write ? pwrite(fd, io->buf, io->len, (off_t)io->off) : pread(fd, io->buf, io->len, (off_t)io->off);
    io->res = r < 0 ? -errno : r;
    e->syscalls++;
    p->done[p->ndone++] = io;
}

static int p_submit_reap(struct engine *e, unsigned min, struct io **done, unsigned max, char *err, size_t errlen)
{
    (void)min;
    (void)err;
    (void)errlen;
    struct psync *p = e->priv;
    unsigned n = p->ndone < max ? p->ndone : max;
    for (unsigned i = 0; i < n; i++)
        done[i] = p->done[i];
    for (unsigned i = n; i < p->ndone; i++)
        p->done[i - n] = p->done[i];
    p->ndone -= n;
    return (int)n;
}

static void p_exit(struct engine *e)
{
    struct psync *p = e->priv;
    if (p)
        free(p->done);
    free(p);
    e->priv = NULL;
}

const struct engine_ops engine_psync = {
    .name = "psync",
    .summary = "pread/pwrite, one thread per outstanding request",
    .sync = true,
    .init = p_init,
    .queue = p_queue,
    .submit_reap = p_submit_reap,
    .exit = p_exit,
};
