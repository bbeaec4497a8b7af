/* show.c - show: a trace's processes, threads, files and calls. */
#include "commands.h"
#include "iotrace.h"
#include "osm.h"
#include "timeline.h"

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

/* Ranks as runs ("0-3 6"), into out. */
static void rank_list(const bool *on, size_t n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && len < cap;) {
        if (!on[i]) {
            i++;
            continue;
        }
        size_t j = i;
        while (j + 1 < n && on[j + 1])
            j++;
        len += (size_t)(j > i ? snprintf(out + len, cap - len, "%s%zu-%zu", len ? " " : "", i, j)
                              : snprintf(out + len, cap - len, "%s%zu", len ? " " : "", i));
        i = j + 1;
    }
}

/* The MPI part of a trace: per MPI call, its count, bytes and time, and the
 * POSIX calls the MPI library made inside it (their time, and on which
 * ranks: a collective's aggregators); per rank, the same; and the ranks'
 * clocks as MPI_Init aligned them. */
static void show_mpi(const struct trace *t)
{
    size_t nranks = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->rec[i].rank >= 0 && (size_t)t->rec[i].rank + 1 > nranks)
            nranks = (size_t)t->rec[i].rank + 1;
    if (!nranks)
        return;
    struct per {
        uint64_t count, bytes, ns, posix, posix_ns, posix_bytes;
    };
    struct per *call = iot_xcalloc(TC_NCALLS, sizeof *call), *rank = iot_xcalloc(nranks, sizeof *rank);
    bool *under = iot_xcalloc((size_t)TC_NCALLS * nranks, sizeof *under);
    for (size_t i = 0; i < t->n; i++) {
        const struct trace_rec *r = &t->rec[i];
        const struct trace_call_info *ci = &trace_calls[r->call];
        if (ci->mpi && ci->kind != TK_DEF && ci->kind != TK_MPI_INIT && ci->kind != TK_MPI_FINALIZE) {
            call[r->call].count++, call[r->call].bytes += (uint64_t)r->bytes;
            call[r->call].ns += r->t_end - r->t_start;
            rank[r->rank].count++, rank[r->rank].bytes += (uint64_t)r->bytes;
            rank[r->rank].ns += r->t_end - r->t_start;
        }
        if (!ci->mpi && r->parent >= 0 && (size_t)r->parent < t->n && r->rank >= 0) {
            enum trace_call pc = t->rec[r->parent].call;
            uint64_t moved = moves_data(r->call) && r->ret > 0 ? (uint64_t)r->ret : 0;
            call[pc].posix++, call[pc].posix_ns += r->t_end - r->t_start, call[pc].posix_bytes += moved;
            rank[r->rank].posix++, rank[r->rank].posix_ns += r->t_end - r->t_start;
            rank[r->rank].posix_bytes += moved;
            under[(size_t)pc * nranks + (size_t)r->rank] = true;
        }
    }
    printf("\nMPI-IO: %zu ranks. Per call: the POSIX calls the MPI library made inside it, and the ranks that "
           "made them\n", nranks);
    printf("%-30s %8s %14s %12s %8s %12s %14s  %s\n", "call", "count", "bytes", "total ms", "posix", "posix ms",
           "posix bytes", "ranks with posix I/O");
    char ranks[256];
    for (int c = TC_NPOSIX + 1; c < TC_NCALLS; c++) {
        const struct per *x = &call[c];
        if (!x->count)
            continue;
        rank_list(under + (size_t)c * nranks, nranks, ranks, sizeof ranks);
        printf("%-30s %8llu %14llu %12.3f %8llu %12.3f %14llu  %s\n", trace_calls[c].name,
               (unsigned long long)x->count, (unsigned long long)x->bytes, (double)x->ns / 1e6,
               (unsigned long long)x->posix, (double)x->posix_ns / 1e6, (unsigned long long)x->posix_bytes,
               ranks[0] ? ranks : "-");
    }
    printf("\n%-6s %-16s %8s %14s %12s %8s %12s %14s %14s\n", "rank", "host", "mpi-io", "bytes", "mpi-io ms",
           "posix", "posix ms", "posix bytes", "clock +-ns");
    for (size_t k = 0; k < nranks; k++) {
        char host[64] = "?", err[32] = "?", off[32] = "";
        for (size_t i = 0; i < t->n; i++)
            if (t->rec[i].rank == (int64_t)k && trace_calls[t->rec[i].call].kind == TK_MPI_INIT) {
                trace_arg(t->rec[i].args, "host", host, sizeof host);
                trace_arg(t->rec[i].args, "clock_err_ns", err, sizeof err);
                trace_arg(t->rec[i].args, "clock_offset_ns", off, sizeof off);
            }
        printf("%-6zu %-16s %8llu %14llu %12.3f %8llu %12.3f %14llu %14s\n", k, host,
               (unsigned long long)rank[k].count, (unsigned long long)rank[k].bytes, (double)rank[k].ns / 1e6,
               (unsigned long long)rank[k].posix, (double)rank[k].posix_ns / 1e6,
               (unsigned long long)rank[k].posix_bytes, err);
    }
    free(call), free(rank), free(under);
}


int cmd_show(int argc, char **argv)
{
    const char *perfetto = NULL, *path = NULL;
    const struct osm_opt rows[] = {
        OSM_OPT_STR("perfetto", perfetto, "write the trace as a timeline (Chrome's trace event format, which "
                    "Perfetto's UI opens) into OUT instead of the summary", .arg = "OUT.json"),
        {0},
    };
    const struct osm_command cmd = {
        .name = "iotrace show", .operands = "TRACE", .opts = rows, .max_operands = 1,
        .summary = "Prints a trace's processes, threads, files and calls, or writes it as a timeline.",
    };
    if (osm_parse_command(&cmd, argc, argv, &path) == 0)
        osm_usage_error("show takes one trace: iotrace show TRACE [--perfetto OUT.json]");
    if (perfetto)
        return show_timeline(path, perfetto);
    argv[0] = (char *)path;
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
    printf("trace %s (iotrace format %d)\n", argv[0], t.version);
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
        if (fpath[f] && fpath[f][0]) /* MPI_Init, MPI_Type ... rows name no file: their path is empty */
            printf("f%-5zu %6llu %8llu %12llu %8llu %12llu  %s\n", f, (unsigned long long)opens[f],
                   (unsigned long long)fread_[f].count, (unsigned long long)fread_[f].done_rec,
                   (unsigned long long)fwrite_[f].count, (unsigned long long)fwrite_[f].done_rec, fpath[f]);

    printf("\n%-28s %8s %14s %14s %12s\n", "call", "count", "bytes", "total ns", "mean ns");
    for (int c = 0; c <= TC_NCALLS; c++) {
        const struct tally *x = c < TC_NCALLS ? &calls[c] : &total;
        if (c < TC_NCALLS && !x->count)
            continue;
        printf("%-28s %8llu %14llu %14llu %12.0f\n", c < TC_NCALLS ? trace_calls[c].name : "total",
               (unsigned long long)x->count, (unsigned long long)x->bytes, (unsigned long long)x->rec_ns,
               x->count ? (double)x->rec_ns / (double)x->count : 0.0);
    }
    show_mpi(&t);
    if (t.nnotes)
        printf("\nNotes (what the trace's source could not give):\n");
    for (size_t i = 0; i < t.nnotes; i++)
        printf("- %s\n", t.notes[i]);
    return 0;
}
