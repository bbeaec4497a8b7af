/* base.c - what the parts of the iotrace command share (iotrace.h): its
 * errors, the recorder's clock, a program run with its exec error reported,
 * a merged trace loaded and laid out by process and thread. */
#include "iotrace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

_Noreturn void iot_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("iotrace: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(status);
}

uint64_t iot_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void *iot_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        iot_fail(1, "out of memory");
    return p;
}

pid_t iot_spawn(char **argv, void (*in_child)(void *), void *arg)
{
    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC))
        iot_fail(1, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t child = fork();
    if (child < 0)
        iot_fail(1, "fork: %s", strerror(errno));
    if (child == 0) {
        if (in_child)
            in_child(arg);
        execvp(argv[0], argv);
        int e = errno;
        if (write(errpipe[1], &e, sizeof e) < 0)
            _exit(127);
        _exit(127);
    }
    close(errpipe[1]);
    int exec_err = 0;
    ssize_t got;
    while ((got = read(errpipe[0], &exec_err, sizeof exec_err)) < 0 && errno == EINTR)
        ;
    close(errpipe[0]);
    if (got != (ssize_t)sizeof exec_err)
        return child; /* the pipe closed on exec: it runs */
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
        ;
    return -exec_err;
}

void iot_load_trace(const char *path, struct trace *t)
{
    char err[512];
    if (trace_load(path, true, false, t, err, sizeof err))
        iot_fail(2, "%s", err);
}

/* Rows of a merged trace are on line seq + 3 (version line, header row). */
size_t line_of(const struct trace_rec *r) { return (size_t)r->seq + 3; }

bool moves_data(enum trace_call c)
{
    return trace_calls[c].kind == TK_READ || trace_calls[c].kind == TK_WRITE;
}

/* --------------------------------------------- processes and threads */

static const struct trace *sort_trace;

static int by_thread(const void *a, const void *b)
{
    const struct trace_rec *x = &sort_trace->rec[*(const size_t *)a], *y = &sort_trace->rec[*(const size_t *)b];
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int by_process(const void *a, const void *b)
{
    const struct trace_rec *x = &sort_trace->rec[*(const size_t *)a], *y = &sort_trace->rec[*(const size_t *)b];
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

size_t *sorted_rows(const struct trace *t, int (*cmp)(const void *, const void *))
{
    size_t *idx = iot_xcalloc(t->n, sizeof *idx);
    for (size_t i = 0; i < t->n; i++)
        idx[i] = i;
    sort_trace = t;
    qsort(idx, t->n, sizeof *idx, cmp);
    return idx;
}

/* Processes by pid, each with its threads by tid, each thread's rows in order. */
struct layout layout_of(const struct trace *t)
{
    struct layout L = {0};
    L.order = sorted_rows(t, by_thread);
    L.procs = iot_xcalloc(t->n, sizeof *L.procs);
    struct thread_rows *threads = L.threads = iot_xcalloc(t->n, sizeof *threads);
    for (size_t k = 0; k < t->n; k++) {
        const struct trace_rec *r = &t->rec[L.order[k]];
        if (!L.nthreads || threads[L.nthreads - 1].pid != r->pid || threads[L.nthreads - 1].tid != r->tid)
            threads[L.nthreads++] = (struct thread_rows){r->pid, r->tid, &L.order[k], 0};
        threads[L.nthreads - 1].n++;
        if (!L.nprocs || L.procs[L.nprocs - 1].pid != r->pid)
            L.procs[L.nprocs++] = (struct proc_rows){r->pid, &threads[L.nthreads - 1], 0, 0};
        struct proc_rows *p = &L.procs[L.nprocs - 1];
        p->nthreads = (size_t)(&threads[L.nthreads - 1] - p->threads) + 1;
        p->nrows++;
    }
    return L;
}

/* A file written whole, then renamed over out (a trace, a timeline): made beside out under a name nobody
 * can guess (mkstemp), so that a command that fails leaves out as it was (a trace kept there is never
 * lost) and a link at out is replaced, not followed. Its mode is a new file's (0666 less the umask). */
FILE *iot_open_beside(const char *out, char *tmp, size_t n)
{
    if (snprintf(tmp, n, "%s.XXXXXX", out) >= (int)n)
        iot_fail(2, "%s: the path is too long", out);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        iot_fail(2, "cannot write %s: %s", out, strerror(errno));
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    FILE *f = fdopen(fd, "w");
    if (!f)
        iot_fail(1, "cannot write %s: %s", out, strerror(errno));
    return f;
}
