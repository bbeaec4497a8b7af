/* show.c - show: a trace's processes, threads, files and calls. */
#include "iotrace.h"
#include "osm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* --------------------------------------------------------------- show */


int cmd_show(int argc, char **argv)
{
    if (argc != 1)
        osm_usage_error("show takes one trace: iotrace show TRACE");
    struct trace t;
    iot_load_trace(argv[0], &t);
    struct layout L = layout_of(&t);
    uint64_t span = 0;
    if (t.n) {
        uint64_t end = 0;
        for (size_t i = 0; i < t.n; i++)
            end = t.rec[i].t_end > end ? t.rec[i].t_end : end;
        span = end - t.rec[0].t_start;
    }
    printf("trace %s (iotrace format %d)\n", argv[0], TRACE_VERSION);
    printf("%zu calls, %zu processes, %zu threads, %.3f ms from first call to last\n\n", t.n, L.nprocs,
           L.nthreads, (double)span / 1e6);

    printf("%-10s %8s %10s\n", "process", "threads", "calls");
    for (size_t p = 0; p < L.nprocs; p++)
        printf("%-10lld %8zu %10zu\n", (long long)L.procs[p].pid, L.procs[p].nthreads, L.procs[p].nrows);

    size_t nfiles = 0;
    for (size_t i = 0; i < t.n; i++)
        nfiles = (size_t)t.rec[i].file + 1 > nfiles ? (size_t)t.rec[i].file + 1 : nfiles;
    const char **fpath = iot_xcalloc(nfiles, sizeof *fpath);
    struct tally *fread_ = iot_xcalloc(nfiles, sizeof *fread_), *fwrite_ = iot_xcalloc(nfiles, sizeof *fwrite_);
    uint64_t *opens = iot_xcalloc(nfiles, sizeof *opens);
    struct tally calls[TC_NCALLS] = {{0}}, total = {0};
    for (size_t i = 0; i < t.n; i++) {
        const struct trace_rec *r = &t.rec[i];
        if (!fpath[r->file])
            fpath[r->file] = r->path;
        enum trace_kind k = trace_calls[r->call].kind;
        uint64_t done = r->ret > 0 && moves_data(r->call) ? (uint64_t)r->ret : 0;
        opens[r->file] += k == TK_OPEN;
        if (k == TK_READ)
            fread_[r->file].done_rec += done, fread_[r->file].count++;
        if (k == TK_WRITE)
            fwrite_[r->file].done_rec += done, fwrite_[r->file].count++;
        struct tally *c = &calls[r->call];
        c->count++, c->bytes += (uint64_t)r->bytes, c->rec_ns += r->t_end - r->t_start;
        total.count++, total.bytes += (uint64_t)r->bytes, total.rec_ns += r->t_end - r->t_start;
    }
    printf("\n%-6s %6s %8s %12s %8s %12s  %s\n", "file", "opens", "reads", "bytes read", "writes", "bytes written",
           "path");
    for (size_t f = 0; f < nfiles; f++)
        if (fpath[f])
            printf("f%-5zu %6llu %8llu %12llu %8llu %12llu  %s\n", f, (unsigned long long)opens[f],
                   (unsigned long long)fread_[f].count, (unsigned long long)fread_[f].done_rec,
                   (unsigned long long)fwrite_[f].count, (unsigned long long)fwrite_[f].done_rec, fpath[f]);

    printf("\n%-12s %8s %14s %14s %12s\n", "call", "count", "bytes", "total ns", "mean ns");
    for (int c = 0; c <= TC_NCALLS; c++) {
        const struct tally *x = c < TC_NCALLS ? &calls[c] : &total;
        if (c < TC_NCALLS && !x->count)
            continue;
        printf("%-12s %8llu %14llu %14llu %12.0f\n", c < TC_NCALLS ? trace_calls[c].name : "total",
               (unsigned long long)x->count, (unsigned long long)x->bytes, (unsigned long long)x->rec_ns,
               x->count ? (double)x->rec_ns / (double)x->count : 0.0);
    }
    return 0;
}
