/* iotrace.h - what the parts of the iotrace command share (base.c): its
 * errors, the clock, a program run, a trace loaded and laid out by process
 * and thread. The trace format itself is format/trace.h; the commands main
 * runs are ../commands.h (README.md beside iotrace.c: the parts). */
#ifndef IOTRACE_IOTRACE_H
#define IOTRACE_IOTRACE_H

#include "trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define REPLAY_MAX_BYTES (1ll << 30) /* one call's transfer */
#define REPLAY_MAX_FD (1 << 20)
#define MAX_MISMATCHES 1000 /* listed; all are counted */
#define NONE SIZE_MAX

struct thread_rows {
    int64_t pid, tid;
    size_t *rows; /* in seq order */
    size_t n;
};

struct proc_rows {
    int64_t pid;
    struct thread_rows *threads;
    size_t nthreads, nrows;
};

struct layout {
    struct proc_rows *procs;
    struct thread_rows *threads; /* all, process by process */
    size_t nprocs, nthreads;
    size_t *order; /* row indices by pid, tid, seq */
};

struct tally {
    uint64_t count, bytes, rec_ns, rep_ns, done_rec, done_rep;
};

/* The command's helpers, prefixed iot_ so that no other object's name is taken. */
/* an error: "iotrace: error: ..." on stderr, exit with status */
_Noreturn void iot_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t iot_now_ns(void);                  /* CLOCK_MONOTONIC, the recorder's clock */
void *iot_xcalloc(size_t n, size_t size);   /* calloc, or iot_fail(1) */
void iot_load_trace(const char *path, struct trace *t); /* a merged trace, or iot_fail(2) */
/* Forks and runs argv (PATH searched) after in_child(arg), where given, in the child. Returns the
 * child's pid once it runs the program, or -errno where the program could not be run (the child
 * reaped). */
pid_t iot_spawn(char **argv, void (*in_child)(void *), void *arg);
/* Rows of a merged trace are on line seq + 3 (version line, header row). */
size_t line_of(const struct trace_rec *r);
/* The trace's rows by process and thread. */
struct layout layout_of(const struct trace *t);
/* Row indices sorted by cmp; by_process: pid, then seq. */
size_t *sorted_rows(const struct trace *t, int (*cmp)(const void *, const void *));
int by_process(const void *a, const void *b);
bool moves_data(enum trace_call c);
/* A file beside out under a name nobody can guess (mkostemp; its name into tmp), mode 0666 less the umask:
 * written whole, then renamed over out (a link at out replaced, not followed), or removed. */
FILE *iot_open_beside(const char *out, char *tmp, size_t n);

#endif
