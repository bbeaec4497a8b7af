/* timeline.c - a trace's calls as Chrome's trace event format (JSON), which Perfetto's UI and
 * chrome://tracing open: `show --perfetto` (the recorded times, the trace read a row at a time and written
 * as read: memory independent of its calls; what it keeps grows with its processes, threads and files, and
 * by two map entries per collective, kept after it ends) and `replay --timeline` (the replayed times, on
 * the same tracks).
 *
 * One process track per recorded process (named by its rank under MPI), one thread track per thread; each
 * call a complete event ("ph":"X") with its file, path, offset, bytes and return value; a POSIX call made
 * inside an MPI-IO call lies inside it on the same thread, so it nests under it; the calls of one
 * collective (the k-th collective call of each rank on a file, as many as its communicator's ranks) are
 * linked by a flow ("ph":"s", "t", "f"): start on the first rank to enter, end on the last. */
#include "timeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A key is never 0 (keys are built with a 1 in their top bit). */
static uint64_t *slot(struct timeline_map *m, uint64_t key)
{
    if (2 * (m->n + 1) > m->cap) {
        struct timeline_map g = {iot_xcalloc(m->cap ? 2 * m->cap : 256, 8), iot_xcalloc(m->cap ? 2 * m->cap : 256, 8),
                        m->cap ? 2 * m->cap : 256, 0};
        for (size_t i = 0; i < m->cap; i++)
            if (m->k[i])
                *slot(&g, m->k[i]) = m->v[i];
        free(m->k), free(m->v);
        *m = g;
    }
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (m->cap - 1);
    while (m->k[i] && m->k[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->k[i])
        m->k[i] = key, m->n++;
    return &m->v[i];
}

static uint64_t key2(int tag, int64_t a, int64_t b)
{
    return (1ull << 63) | ((uint64_t)tag << 58) | (((uint64_t)a & 0x1FFFFFFull) << 33) | ((uint64_t)b & 0x1FFFFFFFFull);
}

enum { K_TRACK = 1, K_COMM, K_FDSIZE, K_NTH, K_SEEN, K_FLOW };

static double us(const struct timeline *tl, uint64_t ns)
{
    return (double)(int64_t)(ns - tl->t0) / 1e3;
}

static void name_track(struct timeline *tl, const struct trace_rec *r)
{
    uint64_t *p = slot(&tl->m, key2(K_TRACK, r->pid, 0)), *t = slot(&tl->m, key2(K_TRACK, r->pid, r->tid));
    char name[64];
    if (!*p) {
        *p = 1;
        if (r->rank >= 0)
            snprintf(name, sizeof name, "rank %lld (pid %lld)", (long long)r->rank, (long long)r->pid);
        else
            snprintf(name, sizeof name, "process %lld", (long long)r->pid);
        json_obj(&tl->j), json_kstr(&tl->j, "ph", "M"), json_kstr(&tl->j, "name", "process_name");
        json_kint(&tl->j, "pid", r->pid), json_kint(&tl->j, "tid", 0), json_key(&tl->j, "args");
        json_obj(&tl->j), json_kstr(&tl->j, "name", name), json_obj_end(&tl->j), json_obj_end(&tl->j);
        json_obj(&tl->j), json_kstr(&tl->j, "ph", "M"), json_kstr(&tl->j, "name", "process_sort_index");
        json_kint(&tl->j, "pid", r->pid), json_kint(&tl->j, "tid", 0), json_key(&tl->j, "args");
        json_obj(&tl->j), json_kint(&tl->j, "sort_index", r->rank >= 0 ? r->rank : r->pid);
        json_obj_end(&tl->j), json_obj_end(&tl->j);
    }
    if (!*t) {
        *t = 1;
        snprintf(name, sizeof name, "thread %lld", (long long)r->tid);
        json_obj(&tl->j), json_kstr(&tl->j, "ph", "M"), json_kstr(&tl->j, "name", "thread_name");
        json_kint(&tl->j, "pid", r->pid), json_kint(&tl->j, "tid", r->tid), json_key(&tl->j, "args");
        json_obj(&tl->j), json_kstr(&tl->j, "name", name), json_obj_end(&tl->j), json_obj_end(&tl->j);
    }
}

/* The ranks of the communicator an MPI row's file was opened on (0 if not known), kept from the MPI_Comm
 * and MPI_File_open rows. */
static int64_t comm_ranks(struct timeline *tl, const struct trace_rec *r)
{
    char v[32];
    if (r->call == TC_MPI_COMM) {
        const char *id = trace_arg(r->args, "id", v, sizeof v);
        int64_t c = id[0] == 'c' ? atoll(id + 1) : -1;
        *slot(&tl->m, key2(K_COMM, r->rank, c)) = (uint64_t)atoll(trace_arg(r->args, "size", v, sizeof v));
    } else if (r->call == TC_MPI_FILE_OPEN) {
        const char *id = trace_arg(r->args, "comm", v, sizeof v);
        int64_t c = id[0] == 'c' ? atoll(id + 1) : -1;
        *slot(&tl->m, key2(K_FDSIZE, r->rank, r->fd)) = *slot(&tl->m, key2(K_COMM, r->rank, c));
    }
    return (int64_t)*slot(&tl->m, key2(K_FDSIZE, r->rank, r->fd));
}

/* A collective call's place in its flow: the k-th collective call of this rank on this file joins the k-th
 * of every other rank; the first to start begins the flow, the last of the communicator's ranks ends it. */
static void link_collective(struct timeline *tl, const struct trace_rec *r, int64_t nranks)
{
    uint64_t k = ++*slot(&tl->m, key2(K_NTH, r->rank, r->file));
    uint64_t inst = key2(K_SEEN, r->file, (int64_t)k), *seen = slot(&tl->m, inst);
    uint64_t *id = slot(&tl->m, key2(K_FLOW, r->file, (int64_t)k));
    if (!*seen)
        *id = ++tl->flows;
    ++*seen;
    const char *ph = *seen == 1 ? "s" : *seen >= (uint64_t)nranks ? "f" : "t";
    json_obj(&tl->j), json_kstr(&tl->j, "ph", ph), json_kstr(&tl->j, "cat", "collective");
    json_kstr(&tl->j, "name", trace_calls[r->call].name), json_kuint(&tl->j, "id", *id);
    json_kint(&tl->j, "pid", r->pid), json_kint(&tl->j, "tid", r->tid);
    json_kfixed(&tl->j, "ts", us(tl, r->t_start), 3);
    if (*ph != 's')
        json_kstr(&tl->j, "bp", "e");
    json_obj_end(&tl->j);
    if (*seen >= (uint64_t)nranks)
        *seen = 0; /* done: a reopened file's next collective k starts a new flow */
}

static void slice(struct timeline *tl, const struct trace_rec *r)
{
    const struct trace_call_info *ci = &trace_calls[r->call];
    char file[24];
    snprintf(file, sizeof file, "f%lld", (long long)r->file);
    json_obj(&tl->j), json_kstr(&tl->j, "ph", "X"), json_kstr(&tl->j, "cat", ci->mpi ? "mpi-io" : "posix");
    json_kstr(&tl->j, "name", ci->name), json_kint(&tl->j, "pid", r->pid), json_kint(&tl->j, "tid", r->tid);
    json_kfixed(&tl->j, "ts", us(tl, r->t_start), 3), json_kfixed(&tl->j, "dur", (double)(r->t_end - r->t_start) / 1e3, 3);
    json_key(&tl->j, "args"), json_obj(&tl->j), json_kuint(&tl->j, "seq", r->seq);
    if (r->path[0])
        json_kstr(&tl->j, "file", file), json_kstr(&tl->j, "path", r->path);
    if (r->offset >= 0)
        json_kint(&tl->j, "offset", r->offset);
    json_kint(&tl->j, "bytes", r->bytes), json_kint(&tl->j, "ret", r->ret);
    if (r->ret == -1)
        json_kint(&tl->j, "errno", r->err);
    if (r->rank >= 0)
        json_kint(&tl->j, "rank", r->rank);
    if (r->parent >= 0)
        json_kint(&tl->j, "parent", r->parent);
    json_obj_end(&tl->j), json_obj_end(&tl->j);
}

void timeline_begin(struct timeline *tl, const char *out, const char *trace, const char *times, uint64_t t0)
{
    *tl = (struct timeline){.t0 = t0, .out = out};
    tl->f = iot_open_beside(out, tl->tmp, sizeof tl->tmp);
    json_to_file(&tl->j, tl->f);
    json_obj(&tl->j), json_kstr(&tl->j, "displayTimeUnit", "ns");
    json_key(&tl->j, "otherData"), json_obj(&tl->j), json_kstr(&tl->j, "trace", trace);
    json_kstr(&tl->j, "times", times), json_obj_end(&tl->j);
    json_key(&tl->j, "traceEvents"), json_arr(&tl->j);
}

void timeline_row(struct timeline *tl, const struct trace_rec *r)
{
    name_track(tl, r);
    int64_t nranks = trace_calls[r->call].mpi ? comm_ranks(tl, r) : 0;
    if (trace_calls[r->call].kind == TK_DEF)
        return; /* a datatype's or communicator's definition: no call */
    slice(tl, r);
    tl->calls++;
    if (trace_calls[r->call].collective && nranks > 1)
        link_collective(tl, r, nranks);
}

void timeline_skip(struct timeline *tl, const struct trace_rec *r)
{
    if (trace_calls[r->call].mpi)
        comm_ranks(tl, r);
}

void timeline_end(struct timeline *tl, bool keep)
{
    free(tl->m.k), free(tl->m.v);
    if (!keep) {
        fclose(tl->f);
        unlink(tl->tmp);
        return;
    }
    json_arr_end(&tl->j), json_obj_end(&tl->j);
    fputc('\n', tl->f);
    if (fflush(tl->f) || ferror(tl->f) || fsync(fileno(tl->f)) || fclose(tl->f) || rename(tl->tmp, tl->out)) {
        unlink(tl->tmp);
        iot_fail(1, "cannot write %s: %s", tl->out, strerror(errno));
    }
}

int show_timeline(const char *path, const char *out)
{
    char err[512];
    struct trace_stream *s = trace_stream_open(path, err, sizeof err);
    if (!s)
        iot_fail(2, "%s", err);
    struct timeline tl;
    struct trace_rec r;
    int got = trace_stream_next(s, &r);
    timeline_begin(&tl, out, path, "recorded", got == 1 ? r.t_start : 0);
    for (; got == 1; got = trace_stream_next(s, &r))
        timeline_row(&tl, &r);
    trace_stream_close(s);
    if (got < 0) {
        timeline_end(&tl, false);
        iot_fail(2, "%s", err);
    }
    timeline_end(&tl, true);
    fprintf(stderr, "iotrace show: %zu calls of %s as a timeline in %s (%llu collectives linked)\n", tl.calls, path,
            out, (unsigned long long)tl.flows);
    return 0;
}
