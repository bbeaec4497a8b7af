/* engine_uring.c - io_uring through its raw system calls and the kernel's
 * uapi header: one ring per worker sized to its queue depth, the target
 * registered as fixed file 0 and every request buffer registered, so a
 * request is READ_FIXED/WRITE_FIXED with no per-I/O file lookup or page
 * pinning. All queued SQEs go in one io_uring_enter that also waits for the
 * first completion; every completion present is reaped at once. */
#include "engine.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

struct uring {
    int ring_fd;
    unsigned qd;
    /* submission queue */
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
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

static int u_init(struct engine *e, int fd, struct io *slots, unsigned qd, size_t bufsize, char *err, size_t errlen)
{
    struct uring *u = calloc(1, sizeof *u);
    if (!u)
        return snprintf(err, errlen, "out of memory"), -1;
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    u->ring_fd = sys_setup(qd, &p);
    if (u->ring_fd < 0) {
        snprintf(err, errlen, "io_uring_setup: %s%s", strerror(errno),
                 errno == ENOSYS || errno == EPERM ? " (io_uring unavailable here: try --engine aio)" : "");
        free(u);
        return -1;
    }
    u->qd = qd;
    u->slots = slots;
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
    u->cq_head = (unsigned *)(cq + p.cq_off.head);
    u->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    u->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    u->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);

    if (sys_register(u->ring_fd, IORING_REGISTER_FILES, &fd, 1) != 0) {
        snprintf(err, errlen, "io_uring: registering the file: %s", strerror(errno));
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
    e->priv = u;
    e->syscalls += 3;
    return 0;
fail:
    close(u->ring_fd);
    free(u);
    return -1;
}

static void u_queue(struct engine *e, struct io *io)
{
    struct uring *u = e->priv;
    unsigned tail = *u->sq_tail + u->to_submit; /* only this thread writes the tail */
    unsigned idx = tail & *u->sq_mask;
    struct io_uring_sqe *sqe = &u->sqes[idx];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = io->write ? IORING_OP_WRITE_FIXED : IORING_OP_READ_FIXED;
    sqe->flags = IOSQE_FIXED_FILE;
    sqe->fd = 0; /* index into the registered files */
    sqe->off = io->off;
    sqe->addr = (uint64_t)(uintptr_t)io->buf;
    sqe->len = io->len;
    sqe->buf_index = (uint16_t)io->slot;
    sqe->user_data = io->slot;
    u->sq_array[idx] = idx;
    u->to_submit++;
}

static int u_submit_reap(struct engine *e, unsigned min, struct io **done, unsigned max, char *err, size_t errlen)
{
    struct uring *u = e->priv;
    if (u->to_submit) /* publish the new tail before the kernel looks */
        atomic_store_explicit((_Atomic unsigned *)u->sq_tail, *u->sq_tail + u->to_submit, memory_order_release);
    unsigned head = *u->cq_head;
    unsigned tail = atomic_load_explicit((_Atomic unsigned *)u->cq_tail, memory_order_acquire);
    if (u->to_submit || (tail == head && min)) {
        unsigned need = tail - head >= min ? 0 : min;
        int r;
        do
            r = sys_enter(u->ring_fd, u->to_submit, need, need ? IORING_ENTER_GETEVENTS : 0);
        while (r < 0 && errno == EINTR);
        e->syscalls++;
        if (r < 0) {
            snprintf(err, errlen, "io_uring_enter: %s", strerror(errno));
            return -1;
        }
        u->to_submit -= (unsigned)r < u->to_submit ? (unsigned)r : u->to_submit;
        tail = atomic_load_explicit((_Atomic unsigned *)u->cq_tail, memory_order_acquire);
    }
    unsigned n = 0;
    while (head != tail && n < max) {
        struct io_uring_cqe *c = &u->cqes[head & *u->cq_mask];
        struct io *io = &u->slots[c->user_data];
        io->res = c->res;
        done[n++] = io;
        head++;
    }
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
    sys_register(u->ring_fd, IORING_UNREGISTER_FILES, NULL, 0);
    sys_register(u->ring_fd, IORING_UNREGISTER_BUFFERS, NULL, 0);
    munmap(u->sqes, u->sqes_len);
    munmap(u->cq_ptr, u->cq_len);
    munmap(u->sq_ptr, u->sq_len);
    close(u->ring_fd);
    free(u);
    e->priv = NULL;
}

const struct engine_ops engine_uring = {
    .name = "uring",
    .alias = "io_uring",
    .summary = "io_uring, registered file and buffers, one system call per batch",
    .max_qd = 32768, /* IORING_MAX_ENTRIES */
    .init = u_init,
    .queue = u_queue,
    .submit_reap = u_submit_reap,
    .exit = u_exit,
};
