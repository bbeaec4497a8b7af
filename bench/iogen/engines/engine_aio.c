/* engine_aio.c - Linux native AIO (io_setup, io_submit, io_getevents)
 * through raw system calls and linux/aio_abi.h. Queued iocbs go in one
 * io_submit; io_getevents then waits for at least one completion and takes
 * all that are there. */
#include "engine.h"

#include <errno.h>
#include <linux/aio_abi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct aio {
    aio_context_t ctx;
    const int *fds;
    unsigned qd, npending;
    struct iocb *cbs;
    struct iocb **pending;
    struct io_event *events;
    struct io *slots;
};

static int a_init(struct engine *e, const int *fds, unsigned nfds, struct io *slots, unsigned qd, size_t bufsize,
                  char *err, size_t errlen)
{
    (void)bufsize;
    (void)nfds;
    struct aio *a = calloc(1, sizeof *a);
    if (!a)
        return snprintf(err, errlen, "out of memory"), -1;
    a->cbs = calloc(qd, sizeof *a->cbs);
    a->pending = calloc(qd, sizeof *a->pending);
    a->events = calloc(qd, sizeof *a->events);
    if (!a->cbs || !a->pending || !a->events)
        return snprintf(err, errlen, "out of memory"), -1;
    if (syscall(__NR_io_setup, qd, &a->ctx) != 0) {
        snprintf(err, errlen, "io_setup(%u): %s%s", qd, strerror(errno),
                 errno == EAGAIN ? " (raise /proc/sys/fs/aio-max-nr)" : "");
        return -1;
    }
    a->fds = fds;
    a->qd = qd;
    a->slots = slots;
    e->priv = a;
    e->syscalls++;
    return 0;
}

static void a_queue(struct engine *e, struct io *io)
{
    struct aio *a = e->priv;
    struct iocb *cb = &a->cbs[io->slot];
    memset(cb, 0, sizeof *cb);
    cb->aio_fildes = (uint32_t)a->fds[io->target];
    cb->aio_lio_opcode = io->write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
    cb->aio_buf = (uint64_t)(uintptr_t)io->buf;
    cb->aio_nbytes = io->len;
    cb->aio_offset = (int64_t)io->off;
    cb->aio_data = io->slot;
    a->pending[a->npending++] = cb;
}

static int a_submit_reap(struct engine *e, unsigned min, struct io **done, unsigned max, char *err, size_t errlen)
{
    struct aio *a = e->priv;
    unsigned sent = 0;
    while (sent < a->npending) {
        long r = syscall(__NR_io_submit, a->ctx, (long)(a->npending - sent), a->pending + sent);
        e->syscalls++;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(err, errlen, "io_submit: %s", r < 0 ? strerror(errno) : "accepted nothing");
            return -1;
        }
        sent += (unsigned)r;
    }
    a->npending = 0;
    if (max > a->qd)
        max = a->qd;
    long n;
    do
        n = syscall(__NR_io_getevents, a->ctx, (long)min, (long)max, a->events, NULL);
    while (n < 0 && errno == EINTR);
    e->syscalls++;
    if (n < 0) {
        snprintf(err, errlen, "io_getevents: %s", strerror(errno));
        return -1;
    }
    for (long i = 0; i < n; i++) {
        struct io *io = &a->slots[a->events[i].data];
        io->res = a->events[i].res;
        done[i] = io;
    }
    return (int)n;
}

static void a_exit(struct engine *e)
{
    struct aio *a = e->priv;
    if (!a)
        return;
    syscall(__NR_io_destroy, a->ctx);
    free(a->cbs);
    free(a->pending);
    free(a->events);
    free(a);
    e->priv = NULL;
}

static const char *a_unavailable(void)
{
    static char why[128];
    aio_context_t ctx = 0;
    if (syscall(__NR_io_setup, 1, &ctx) == 0) {
        syscall(__NR_io_destroy, ctx);
        return NULL;
    }
    snprintf(why, sizeof why, "io_setup: %s", strerror(errno));
    return why;
}

const struct engine_ops engine_aio = {
    .unavailable = a_unavailable,
    .name = "aio",
    .alias = "libaio",
    .summary = "Linux native AIO (io_submit, io_getevents)",
    .max_qd = 65536, /* the default /proc/sys/fs/aio-max-nr; io_setup says when the system's is lower */
    .init = a_init,
    .queue = a_queue,
    .submit_reap = a_submit_reap,
    .exit = a_exit,
};
