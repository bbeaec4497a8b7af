/* engine_uring.c - io_uring through its raw system calls and the kernel's
 * uapi header: one ring per stream sized to its queue depth, the target
 * registered as fixed file 0 and every request buffer registered, so a
 * request is READ_FIXED/WRITE_FIXED with no per-I/O file lookup or page
 * pinning. All queued SQEs go in one io_uring_enter that also waits for
 * the first completion (or --batch-complete N of them); every completion
 * present is reaped at once.
 *
 * The ring is set up single-issuer with deferred task work where the kernel
 * has it (6.1+): completions are run when the stream asks for them, not by
 * interrupting it. Its options (the table below, also engine_nop's):
 * --sqpoll CPU (a kernel thread on CPU polls the submission queue: no
 * system call to submit), --iopoll (completions polled from the device,
 * where its driver has poll queues), --register-ring (io_uring_enter
 * through a registered ring descriptor), --batch-complete, --taskrun,
 * --async.
 *
 * engine_nop is the same machinery with every request an IORING_OP_NOP: no
 * device at all, so it measures iogen's own cost per request.
 */
#include "engine.h"
#include "osm.h"
#include "target.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* ------------------------------------------------------------ options */

/* How to drive the kernel: set while iogen parses its options, read-only after. */
static struct uring_opts {
    int sqpoll_cpu;          /* >= 0: a kernel thread on this CPU polls the submissions */
    bool iopoll;             /* completions polled from the device */
    bool register_ring;      /* io_uring_enter through a registered ring descriptor */
    unsigned batch_complete; /* wait for at least this many completions (default 1) */
    int taskrun;             /* io_uring's completion work: 0 deferred (default), 1 cooperative, 2 plain */
    int async;               /* requests straight to io-wq: 0 auto (where the target refuses nowait reads), 1 on, 2 off */
} opts = { .sqpoll_cpu = -1, .batch_complete = 1 };

static void set_sqpoll(const char *n, const char *v) { opts.sqpoll_cpu = (int)osm_parse_u64(n, v, 0, CPU_SETSIZE - 1); }
static void set_iopoll(const char *n, const char *v) { (void)n, (void)v; opts.iopoll = true; }
static void set_register_ring(const char *n, const char *v) { (void)n, (void)v; opts.register_ring = true; }
static void set_batch_complete(const char *n, const char *v) { opts.batch_complete = (unsigned)osm_parse_u64(n, v, 1, 65536); }
/* The index of v among three choices, or a usage error naming them. */
static int choice(const char *n, const char *v, const char *const names[3])
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(v, names[i]))
            return i;
    osm_usage_error("%s: expected %s, %s or %s, got '%s'", n, names[0], names[1], names[2], v);
}
static void set_taskrun(const char *n, const char *v) { opts.taskrun = choice(n, v, (const char *const[3]){ "defer", "coop", "plain" }); }
static void set_async(const char *n, const char *v) { opts.async = choice(n, v, (const char *const[3]){ "auto", "on", "off" }); }

static const struct engine_option options[] = {
    { "--sqpoll", "CPU", "a kernel thread on CPU polls the submissions (io_uring's SQPOLL)", set_sqpoll },
    { "--iopoll", NULL, "poll the device for completions (drivers with poll queues, such as NVMe)", set_iopoll },
    { "--register-ring", NULL, "enter io_uring through a registered ring descriptor", set_register_ring },
    { "--batch-complete", "N", "wait for at least N completions per call (default 1; more inflates latency)",
      set_batch_complete },
    { "--taskrun", "MODE", "io_uring's completion work: defer (default: run when iogen waits), coop, plain",
      set_taskrun },
    { "--async", "MODE", "hand requests straight to io_uring's workers: auto (default: where the target refuses "
      "nowait reads), on, off", set_async },
    { NULL, NULL, NULL, NULL },
};

static bool u_options_set(void)
{
    return opts.sqpoll_cpu >= 0 || opts.iopoll || opts.register_ring || opts.batch_complete > 1 || opts.taskrun ||
           opts.async;
}

static unsigned u_batch_complete(void) { return opts.batch_complete; }

static const char *u_refuse_options(bool direct)
{
    return opts.iopoll && !direct ? "--iopoll needs O_DIRECT: not with --buffered" : NULL;
}

static int u_refuse_target(const struct target *t, char *err, size_t errlen)
{
    char why[512];
    if (!opts.iopoll || target_pollable(t, why, sizeof why))
        return 0;
    snprintf(err, errlen, "--iopoll: %s", why);
    return -1;
}

static const struct engine_options uring_options = {
    .owner = "io_uring",
    .table = options,
    .set = u_options_set,
    .batch_complete = u_batch_complete,
    .refuse = u_refuse_options,
    .refuse_target = u_refuse_target,
};

/* --------------------------------------------------------------- rings */

struct uring {
    int ring_fd;
    int enter_fd;         /* ring_fd, or the registered ring's index */
    unsigned enter_flags; /* IORING_ENTER_REGISTERED_RING when registered */
    unsigned qd;
    bool nop, sqpoll, iopoll, defer;
    bool async;           /* IOSQE_ASYNC: the target cannot take a request without blocking */
    unsigned batch_complete;
    unsigned inflight;    /* queued or submitted, not yet reaped */
    /* submission queue */
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array, *sq_flags;
    struct io_uring_sqe *sqes;
    unsigned to_submit;
    /* completion queue */
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_cqe *cqes;
    void *sq_ptr, *cq_ptr;
    size_t sq_len, cq_len, sqes_len;
    struct io *slots;
};

static int sys_setup(unsigned entries, struct io_uring_params *p)
{
    return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int sys_enter(int fd, unsigned submit, unsigned min, unsigned flags)
{
    return (int)syscall(__NR_io_uring_enter, fd, submit, min, flags, NULL, 0);
}

static int sys_register(int fd, unsigned op, void *arg, unsigned n)
{
    return (int)syscall(__NR_io_uring_register, fd, op, arg, n);
}

/* The ring, with the best task-work mode this kernel accepts. */
static int setup(struct uring *u, unsigned qd, const struct uring_opts *o, struct io_uring_params *p, char *setup,
                 size_t setuplen)
{
    struct { unsigned flags; const char *name; } modes[] = {
        { IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "single-issuer, deferred task work" },
        { IORING_SETUP_COOP_TASKRUN, "cooperative task work" },
        { 0, "plain" },
    };
    unsigned extra = 0;
    if (o && o->sqpoll_cpu >= 0)
        extra |= IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF;
    if (o && o->iopoll)
        extra |= IORING_SETUP_IOPOLL;
    for (size_t m = o ? (size_t)o->taskrun : 0; m < sizeof modes / sizeof modes[0]; m++) {
        if ((extra & IORING_SETUP_SQPOLL) && (modes[m].flags & IORING_SETUP_DEFER_TASKRUN))
            continue; /* deferred task work needs the task itself to submit */
        memset(p, 0, sizeof *p);
        p->flags = modes[m].flags | extra;
        if (extra & IORING_SETUP_SQPOLL) {
            p->sq_thread_cpu = (unsigned)o->sqpoll_cpu;
            p->sq_thread_idle = 1000; /* ms before the poll thread sleeps */
        }
        int fd = sys_setup(qd, p);
        if (fd >= 0) {
            u->defer = modes[m].flags & IORING_SETUP_DEFER_TASKRUN;
            snprintf(setup, setuplen, "%s%s%s", modes[m].name, extra & IORING_SETUP_SQPOLL ? ", sqpoll" : "",
                     extra & IORING_SETUP_IOPOLL ? ", iopoll" : "");
            return fd;
        }
        if (errno != EINVAL)
            return -1;
    }
    return -1;
}

static int init(struct engine *e, const int *fds, unsigned nfds, struct io *slots, unsigned qd, size_t bufsize,
                bool nop, char *err, size_t errlen)
{
    const struct uring_opts *o = &opts;
    struct uring *u = calloc(1, sizeof *u);
    if (!u)
        return snprintf(err, errlen, "out of memory"), -1;
    struct io_uring_params p;
    u->ring_fd = setup(u, qd, o, &p, e->setup, sizeof e->setup);
    if (u->ring_fd < 0) {
        snprintf(err, errlen, "io_uring_setup: %s%s", strerror(errno),
                 errno == ENOSYS || errno == EPERM ? " (io_uring unavailable here: try --engine aio)"
                 : errno == EINVAL && o && o->sqpoll_cpu >= 0 ? " (--sqpoll: is that CPU online and allowed?)"
                                                               : "");
        free(u);
        return -1;
    }
    u->qd = qd;
    u->slots = slots;
    u->nop = nop;
    u->sqpoll = o && o->sqpoll_cpu >= 0;
    u->iopoll = o && o->iopoll;
    u->batch_complete = o && o->batch_complete ? o->batch_complete : 1;
    u->enter_fd = u->ring_fd;
    u->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    u->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    u->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
    u->sq_ptr = mmap(NULL, u->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->ring_fd,
                     IORING_OFF_SQ_RING);
    u->cq_ptr = mmap(NULL, u->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->ring_fd,
                     IORING_OFF_CQ_RING);
    u->sqes = mmap(NULL, u->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->ring_fd,
                   IORING_OFF_SQES);
    if (u->sq_ptr == MAP_FAILED || u->cq_ptr == MAP_FAILED || u->sqes == MAP_FAILED) {
        snprintf(err, errlen, "mapping the io_uring rings: %s", strerror(errno));
        close(u->ring_fd);
        free(u);
        return -1;
    }
    char *sq = u->sq_ptr, *cq = u->cq_ptr;
    u->sq_head = (unsigned *)(sq + p.sq_off.head);
    u->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    u->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    u->sq_array = (unsigned *)(sq + p.sq_off.array);
    u->sq_flags = (unsigned *)(sq + p.sq_off.flags);
    u->cq_head = (unsigned *)(cq + p.cq_off.head);
    u->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    u->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    u->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    e->syscalls++;

    if (!nop) {
        if (sys_register(u->ring_fd, IORING_REGISTER_FILES, (void *)fds, nfds) != 0) {
            snprintf(err, errlen, "io_uring: registering the files: %s", strerror(errno));
            goto fail;
        }
        struct iovec *iov = calloc(qd, sizeof *iov);
        if (!iov)
            goto fail;
        for (unsigned i = 0; i < qd; i++) {
            iov[i].iov_base = slots[i].buf;
            iov[i].iov_len = bufsize;
        }
        int r = sys_register(u->ring_fd, IORING_REGISTER_BUFFERS, iov, qd);
        free(iov);
        if (r != 0) {
            snprintf(err, errlen, "io_uring: registering %u buffers of %zu bytes: %s%s", qd, bufsize, strerror(errno),
                     errno == ENOMEM ? " (RLIMIT_MEMLOCK too low?)" : "");
            goto fail;
        }
        e->syscalls += 2;
    }
    if (o && o->register_ring) {
        struct io_uring_rsrc_update up = { .offset = -1U, .data = (uint64_t)u->ring_fd };
        if (sys_register(u->ring_fd, IORING_REGISTER_RING_FDS, &up, 1) != 1) {
            snprintf(err, errlen, "io_uring: --register-ring: %s (kernel 5.18 or newer)", strerror(errno));
            goto fail;
        }
        u->enter_fd = (int)up.offset;
        u->enter_flags = IORING_ENTER_REGISTERED_RING;
        e->syscalls++;
        strncat(e->setup, ", registered ring", sizeof e->setup - strlen(e->setup) - 1);
    }
    e->priv = u;
    return 0;
fail:
    close(u->ring_fd);
    free(u);
    return -1;
}

static int u_init(struct engine *e, const int *fds, unsigned nfds, struct io *slots, unsigned qd, size_t bufsize,
                  char *err, size_t errlen)
{
    const struct uring_opts *o = &opts;
    /* auto: IOSQE_ASYNC where the target refuses nowait, which hands each request to io-wq at once (fio's
     * force_async) instead of trying it inline, failing, and handing it over then */
    int mode = o ? o->async : 0;
    if (init(e, fds, nfds, slots, qd, bufsize, false, err, errlen) != 0)
        return -1;
    struct uring *u = e->priv;
    bool refuses = false;
    for (unsigned i = 0; i < nfds; i++)
        refuses = refuses || target_refuses_nowait(fds[i], bufsize);
    u->async = mode == 1 || (mode == 0 && !u->sqpoll && !u->iopoll && refuses);
    if (u->async)
        strncat(e->setup, mode == 1 ? ", async" : ", async (target refuses nowait)",
                sizeof e->setup - strlen(e->setup) - 1);
    return 0;
}

static int n_init(struct engine *e, const int *fds, unsigned nfds, struct io *slots, unsigned qd, size_t bufsize,
                  char *err, size_t errlen)
{
    return init(e, fds, nfds, slots, qd, bufsize, true, err, errlen);
}

static void u_queue(struct engine *e, struct io *io)
{
    struct uring *u = e->priv;
    unsigned tail = *u->sq_tail + u->to_submit; /* only this thread writes the tail */
    unsigned idx = tail & *u->sq_mask;
    struct io_uring_sqe *sqe = &u->sqes[idx];
    memset(sqe, 0, sizeof *sqe);
    if (u->nop) {
        sqe->opcode = IORING_OP_NOP;
    } else {
        sqe->opcode = io->write ? IORING_OP_WRITE_FIXED : IORING_OP_READ_FIXED;
        sqe->flags = IOSQE_FIXED_FILE | (u->async ? IOSQE_ASYNC : 0);
        sqe->fd = io->target; /* index into the registered files */
        sqe->off = io->off;
        sqe->addr = (uint64_t)(uintptr_t)io->buf;
        sqe->len = io->len;
        sqe->buf_index = (uint16_t)io->slot;
    }
    sqe->user_data = io->slot;
    u->sq_array[idx] = idx;
    u->to_submit++;
    u->inflight++;
}

static int enter(struct engine *e, unsigned submit, unsigned min, unsigned flags)
{
    struct uring *u = e->priv;
    int r;
    do
        r = sys_enter(u->enter_fd, submit, min, flags | u->enter_flags);
    while (r < 0 && errno == EINTR);
    e->syscalls++;
    return r;
}

static int u_submit_reap(struct engine *e, unsigned min, struct io **done, unsigned max, char *err, size_t errlen)
{
    struct uring *u = e->priv;
    if (u->to_submit) /* publish the new tail before the kernel looks */
        atomic_store_explicit((_Atomic unsigned *)u->sq_tail, *u->sq_tail + u->to_submit, memory_order_release);
    unsigned head = *u->cq_head;
    unsigned tail = atomic_load_explicit((_Atomic unsigned *)u->cq_tail, memory_order_acquire);
    if (min && u->batch_complete > min) { /* --batch-complete: more per wait, never more than in flight */
        min = u->batch_complete;
        if (min > u->inflight)
            min = u->inflight;
        if (min > max)
            min = max;
    }
    bool need_wait = min && tail - head < min;
    int r = 0;
    if (u->sqpoll) {
        /* the poll thread takes the submissions; it only needs a nudge when it has gone to sleep */
        unsigned flags = 0;
        if (u->to_submit && (atomic_load_explicit((_Atomic unsigned *)u->sq_flags, memory_order_acquire) &
                             IORING_SQ_NEED_WAKEUP))
            flags |= IORING_ENTER_SQ_WAKEUP;
        if (need_wait || u->iopoll)
            flags |= IORING_ENTER_GETEVENTS;
        if (flags)
            r = enter(e, u->to_submit, need_wait ? min : 0, flags);
        u->to_submit = 0;
    } else if (u->to_submit || need_wait || (u->defer && min) || u->iopoll) {
        /* deferred task work runs only when we ask for events; polled completions only when we poll */
        unsigned want = need_wait ? min : 0;
        r = enter(e, u->to_submit, want, (want || u->defer || u->iopoll) ? IORING_ENTER_GETEVENTS : 0);
        if (r >= 0)
            u->to_submit -= (unsigned)r < u->to_submit ? (unsigned)r : u->to_submit;
    }
    if (r < 0) {
        snprintf(err, errlen, "io_uring_enter: %s", strerror(errno));
        return -1;
    }
    tail = atomic_load_explicit((_Atomic unsigned *)u->cq_tail, memory_order_acquire);
    unsigned n = 0;
    while (head != tail && n < max) {
        struct io_uring_cqe *c = &u->cqes[head & *u->cq_mask];
        struct io *io = &u->slots[c->user_data];
        io->res = u->nop && c->res == 0 ? (int64_t)io->len : (int64_t)c->res;
        if (u->iopoll && c->res == -EOPNOTSUPP) {
            snprintf(err, errlen, "--iopoll: the device refused a polled request (its driver has no poll queues)");
            atomic_store_explicit((_Atomic unsigned *)u->cq_head, head + 1, memory_order_release);
            return -1;
        }
        done[n++] = io;
        head++;
    }
    u->inflight -= n;
    atomic_store_explicit((_Atomic unsigned *)u->cq_head, head, memory_order_release);
    return (int)n;
}

static void u_exit(struct engine *e)
{
    struct uring *u = e->priv;
    if (!u)
        return;
    /* Drop the ring's reference to the target now: freeing a ring is
     * deferred to a kernel worker, and until then a block device opened with
     * O_EXCL stays claimed, so the next run would find it "in use". */
    if (!u->nop) {
        sys_register(u->ring_fd, IORING_UNREGISTER_FILES, NULL, 0);
        sys_register(u->ring_fd, IORING_UNREGISTER_BUFFERS, NULL, 0);
    }
    munmap(u->sqes, u->sqes_len);
    munmap(u->cq_ptr, u->cq_len);
    munmap(u->sq_ptr, u->sq_len);
    close(u->ring_fd);
    free(u);
    e->priv = NULL;
}

/* Can this process make a ring at all? */
static const char *u_unavailable(void)
{
    static char why[128];
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int fd = sys_setup(1, &p);
    if (fd >= 0) {
        close(fd);
        return NULL;
    }
    snprintf(why, sizeof why, "io_uring_setup: %s", strerror(errno));
    return why;
}

const struct engine_ops engine_uring = {
    .unavailable = u_unavailable,
    .name = "uring",
    .alias = "io_uring",
    .summary = "io_uring, registered file and buffers, one system call per batch",
    .options = &uring_options,
    .max_qd = 32768, /* IORING_MAX_ENTRIES */
    .init = u_init,
    .queue = u_queue,
    .submit_reap = u_submit_reap,
    .exit = u_exit,
};

const struct engine_ops engine_nop = {
    .name = "nop",
    .summary = "io_uring NOP requests, no device: iogen's own cost per I/O (no --target needed)",
    .no_target = true,
    .options = &uring_options,
    .max_qd = 32768,
    .init = n_init,
    .queue = u_queue,
    .submit_reap = u_submit_reap,
    .exit = u_exit,
};
