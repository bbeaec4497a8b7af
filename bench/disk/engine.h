/* engine.h - how a worker's requests reach the kernel. An async engine takes
 * requests one at a time (queue) and sends every queued one in one go while
 * waiting for at least one completion (submit_reap): a worker with N
 * outstanding I/Os keeps N queued or in flight. The psync engine has no
 * engine object: N threads each issue one blocking pread/pwrite (iogen.c). */
#ifndef IOGEN_ENGINE_H
#define IOGEN_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct io {
    char *buf;        /* aligned, registered with the engine when it can */
    uint64_t off;     /* byte offset in the target */
    uint32_t len;
    bool write;
    uint16_t line;    /* the spec line it came from */
    unsigned slot;    /* index of this request's buffer */
    uint64_t t_start; /* TSC ticks at submission */
    int64_t res;      /* bytes done, or -errno */
};

struct engine {
    const struct engine_ops *ops;
    void *priv;
    uint64_t syscalls; /* system calls the engine made */
};

struct engine_ops {
    const char *name;
    /* slots: qd requests whose buffers are bufsize bytes each */
    int (*init)(struct engine *e, int fd, struct io *slots, unsigned qd, size_t bufsize, char *err, size_t errlen);
    void (*queue)(struct engine *e, struct io *io);
    /* Submits what is queued, waits for at least min completions, and
     * returns how many were stored in done[0..max), or -1 with err. */
    int (*submit_reap)(struct engine *e, unsigned min, struct io **done, unsigned max, char *err, size_t errlen);
    void (*exit)(struct engine *e);
};

extern const struct engine_ops engine_uring, engine_aio;

#endif
