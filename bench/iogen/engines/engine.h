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

/* An option an engine owns, as fio's engines do: it sits in the engine's
 * own table (engine_<name>.c), iogen's option loop finds it there, --help
 * lists it under the engine, and given with another engine it is refused
 * (options.c says which engine's it is, once). set stores the value in the
 * engine's file, read-only once the options are parsed; a bad value is a
 * usage error naming `name`. */
struct engine_option {
    const char *name;    /* "--sqpoll" */
    const char *metavar; /* "CPU"; NULL: a flag */
    const char *help;
    void (*set)(const char *name, const char *v);
};

struct target;

/* An engine's options: their table and what follows from their values. */
struct engine_options {
    const char *owner;                 /* whose they are, in messages: "... are io_uring's" */
    const struct engine_option *table; /* ended by a row without a name */
    bool (*set)(void);                 /* any set from its default: then their engine runs, and no other */
    /* Optional (NULL: nothing to say or check). The completions one call
     * waits for (the report's batch_complete; NULL: 1). A refusal of the
     * values with the job's I/O (direct: O_DIRECT), as a message. A refusal
     * of one target, before any I/O: -1 with a message in err. */
    unsigned (*batch_complete)(void);
    const char *(*refuse)(bool direct);
    int (*refuse_target)(const struct target *t, char *err, size_t errlen);
};

struct engine {
    const struct engine_ops *ops;
    void *priv;
    uint64_t syscalls; /* system calls the engine made */
    char setup[160];   /* what the engine set up, for the report */
};

struct engine_ops {
    const char *name;
    const char *alias;   /* another name it answers to, or NULL */
    const char *summary; /* one line for --help */
    bool sync;           /* the I/O happens in queue: one request per stream */
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
    /* its own options, or NULL (engines of one file may share them) */
    const struct engine_options *options;
};

/* The engine called name (or its alias), or NULL. */
const struct engine_ops *engine_find(const char *name);
/* "uring, aio or psync": the names, for messages. */
const char *engine_names(void);
/* The engines in order, i from 0; NULL past the last. */
const struct engine_ops *engine_at(size_t i);
/* The engine option called name (of length len: "--sqpoll" of
 * "--sqpoll=1"), and the options it is one of; NULL when no engine has it. */
const struct engine_option *engine_option_find(const char *name, size_t len, const struct engine_options **of);
extern const struct engine_ops *const engine_default;
/* The default engine, or the first of the others the kernel offers when it
 * does not (uring, then aio, then psync); *why says what was passed over
 * (a static string), or is NULL. */
const struct engine_ops *engine_usable_default(const char **why);

#endif
