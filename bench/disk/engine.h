/* engine.h - how a stream's requests reach the kernel, fio's way: every
 * engine is a table of operations in engine_<name>.c, listed once in
 * engine.c and looked up by name.
 *
 * A stream queues requests one at a time (queue) and then sends everything
 * queued in one go while waiting for at least `min` completions
 * (submit_reap). An asynchronous engine (io_uring, AIO) keeps all of a
 * worker's outstanding requests in flight from one thread. A synchronous
 * engine (sync = true: psync) does the I/O inside queue and hands it back
 * from submit_reap; iogen then gives each outstanding request a stream and
 * a thread of its own, so N outstanding I/Os are N blocking calls at once.
 */
#ifndef IOGEN_ENGINE_H
#define IOGEN_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct io {
    char *buf;        /* aligned, registered with the engine when it can */
    uint64_t off;     /* byte offset in the target */
    uint32_t len;
    bool write;
    bool verify_stable; /* --verify: no write to a block it reads was in flight at its issue */
    uint16_t line;    /* the spec line it came from */
    uint8_t target;   /* index into its worker's targets (the engine's files) */
    bool random;      /* at a random offset (else the target's sequential position) */
    unsigned slot;    /* index of this request among its stream's */
    uint64_t t_start; /* ticks at submission */
    int64_t res;      /* bytes done, or -errno */
    uint64_t verify_seq; /* --verify: its blocks' write counts at its issue */
};

/* How to drive the kernel, where an engine offers a choice (io_uring's
 * engines do; others refuse these). */
struct engine_opts {
    int sqpoll_cpu;          /* >= 0: a kernel thread on this CPU polls the submissions */
    bool iopoll;             /* completions polled from the device */
    bool register_ring;      /* io_uring_enter through a registered ring descriptor */
    unsigned batch_complete; /* wait for at least this many completions (default 1) */
    int taskrun;             /* io_uring's completion work: 0 deferred (default), 1 cooperative, 2 plain */
    int async;               /* requests straight to io-wq: 0 auto (where the target refuses nowait reads), 1 on, 2 off */
};

struct engine {
    const struct engine_ops *ops;
    const struct engine_opts *opts;
    void *priv;
    uint64_t syscalls; /* system calls the engine made */
    char setup[160];   /* what the engine set up, for the report */
};

struct engine_ops {
    const char *name;
    const char *alias;   /* another name it answers to, or NULL */
    const char *summary; /* one line for --help */
    bool sync;           /* the I/O happens in queue: one request per stream */
    bool tunable;        /* takes engine_opts (--sqpoll, --iopoll, --register-ring, --batch-complete) */
    bool no_target;      /* does no I/O: needs no --target (nop) */
    unsigned max_qd;     /* the most requests one instance can hold (0 = no limit of its own) */
    /* fds: the worker's targets (io->target indexes them); slots: n requests whose buffers are bufsize bytes each */
    int (*init)(struct engine *e, const int *fds, unsigned nfds, struct io *slots, unsigned n, size_t bufsize,
                char *err, size_t errlen);
    void (*queue)(struct engine *e, struct io *io);
    /* Submits what is queued, waits for at least min completions, and
     * returns how many were stored in done[0..max), or -1 with err. */
    int (*submit_reap)(struct engine *e, unsigned min, struct io **done, unsigned max, char *err, size_t errlen);
    void (*exit)(struct engine *e);
    /* NULL where the kernel offers this engine, else why not ("io_uring_setup:
     * Function not implemented": qemu-user, or kernel.io_uring_disabled) */
    const char *(*unavailable)(void);
};

/* The engine called name (or its alias), or NULL. */
const struct engine_ops *engine_find(const char *name);
/* "uring, aio or psync": the names, for messages. */
const char *engine_names(void);
/* One line per engine: "  name  summary", or a Markdown table. */
void engine_list(FILE *f, bool markdown);
extern const struct engine_ops *const engine_default;
/* The default engine, or the first of the others the kernel offers when it
 * does not (uring, then aio, then psync); *why says what was passed over
 * (a static string), or is NULL. */
const struct engine_ops *engine_usable_default(const char **why);

#endif
