/*
 * mpi_replay.c - iotrace-mpi-replay-<mpi>: an MPI program that replays a trace
 * recorded under MPI (docs/iotrace.md, "Replaying MPI-IO"). `iotrace
 * replay --launcher` starts it under the launcher, one build per MPI; its
 * parts are replayer.h's.
 *
 * Rank 0 reads the trace and broadcasts it, so other hosts need not see it.
 * Every rank takes its own rows: its MPI-IO calls, their completions, and
 * the POSIX calls it made itself (not those the MPI library made inside an
 * MPI-IO call: the library makes them again). Before anything is timed,
 * every row is checked: ranks the trace has, datatypes rebuilt (rebuild.c),
 * counts, buffers and sizes within bounds. Files are DIR/f<id>, opened only
 * inside DIR (osmconfine.h). Each call is timed alone; --timing recorded
 * keeps the recorded gap between a rank's calls; --timeout bounds the whole
 * replay (watch.c). Rank 0 gathers the tallies and prints one JSON object
 * (report.c).
 *
 * usage: iotrace-mpi-replay-<mpi> TRACE --dir DIR [--timing asap|recorded] [--started NAME]
 *        [--timeout S] [--prepare-limit BYTES]
 */
#include "osm.h"
#include "osmconfine.h"
#include "replayer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

int me, nranks;
static const char *dir;
static int dirfd_ = -1;
static struct trace T;

/* --times NAME: each replayed row's start and end, ns after this rank left the barrier before the first call,
 * plus 1 (0: not replayed here), gathered to rank 0, which writes them into DIR/NAME for iotrace replay's
 * timeline */
static const char *times_name;
static uint64_t (*row_times)[2], release;

static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

char problem[1024];

void found(const char *fmt, ...)
{
    if (problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
}

/* MPICH's hydra ends its proxies as soon as a rank's MPI_Abort reaches it: a line the rank wrote just before
 * was lost in 5 replays of 100 here; after a pause it was in every one. */
_Noreturn void end_all(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("iotrace: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    nanosleep(&(struct timespec){.tv_nsec = END_ALL_GRACE_MS * 1000000L}, NULL);
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code); /* MPI_Abort does not return; the compiler is not told so */
}

void agree_or_exit(void)
{
    int bad = problem[0] != '\0', any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any)
        return;
    if (bad)
        fprintf(stderr, "iotrace: error: %s\n", problem);
    free_rebuilt();
    MPI_Finalize();
    exit(2);
}

static struct id_map files = {.size = sizeof(MPI_File)}, reqs = {.size = sizeof(MPI_Request)},
                     rbufs = {.size = sizeof(char *)}, rtypes = {.size = sizeof(MPI_Datatype)},
                     early = {.size = sizeof(MPI_Status)}, /* requests a done=0 test completed early */
                     rclass = {.size = sizeof(int)},       /* the class of the call that started a request */
                     rbases = {.size = sizeof(char *)},    /* the allocation each held buffer is in */
                     fcomms = {.size = sizeof(MPI_Comm)};  /* the communicator each file was opened on */

/* DIR/f<id>'s name inside DIR, checked for MPI_File_open (which opens by path): absent, or a regular
 * file of one link. Its full path in path. */
static bool mpi_file_path(const struct trace_rec *r, char *path, size_t n)
{
    char name[32];
    snprintf(name, sizeof name, "f%lld", (long long)r->file);
    snprintf(path, n, "%s/%s", dir, name);
    if (osm_confined_check(dirfd_, name)) {
        found("line %zu: %s: %s", (size_t)r->seq + 3, path, osm_confined_why(errno));
        return false;
    }
    return true;
}

/* A call's buffer: what count items of the datatype span, from its true lower bound (type_span; the
 * recorded bytes, if more), filled with the rank's byte. Blocking calls share one buffer, grown and filled
 * only when a call needs more, so the replay does not spend its time between calls filling memory; a
 * nonblocking or split call has its own until its completion (own: set when the caller must free it).
 * *base is the allocation (to free), the return value where the call's pointer goes; NULL over MAX_BUF. */
static char *buffer(long long bytes, MPI_Datatype t, long long count, bool keep, bool *own, char **base)
{
    static char *shared;
    static long long shared_size;
    long long at = 0, need = type_span(t, count, &at);
    if (need < 0)
        return NULL;
    if (need < bytes)
        need = bytes;
    if (need > MAX_BUF)
        return NULL;
    *own = keep;
    if (!keep && need <= shared_size)
        return *base = shared, shared + at;
    char *b = malloc((size_t)need + 1);
    if (b)
        memset(b, 0x5a ^ me, (size_t)need + 1);
    if (!keep && b) {
        free(shared);
        shared = b, shared_size = need;
    }
    *base = b;
    return b ? b + at : NULL;
}

static void mismatch(const struct trace_rec *r, int ret, long long moved)
{
    long long rec_moved = arg_int(r, "moved", -1);
    bool ret_differs = (r->ret == 0) != (ret == MPI_SUCCESS);
    bool moved_differs = rec_moved >= 0 && moved >= 0 && rec_moved != moved;
    if (!ret_differs && !moved_differs)
        return;
    if (nmism < MAX_LISTED)
        mism[nmism] = (struct mismatch){(long long)r->seq, me, rec_moved, moved, (int)r->ret, ret};
    nmism++;
}

static long long moved_of(MPI_Status *st, MPI_Datatype t)
{
    int got = 0, size = 0;
    if (t == MPI_DATATYPE_NULL || MPI_Get_count(st, t, &got) != MPI_SUCCESS || got == MPI_UNDEFINED)
        return -1;
    MPI_Type_size(t, &size);
    return (long long)got * size;
}

/* What one MPI row is issued with, taken from the trace and this rank's maps. */
struct mpi_args {
    MPI_File f;
    MPI_Comm *comm;                          /* an open's communicator */
    MPI_Info info;                           /* made from the row: freed after */
    MPI_Datatype dt, et, ft;                 /* the data's type; a view's etype and filetype */
    MPI_Offset off;
    long long count, done_id;                /* items; the request a completion completes */
    char *buf, *base;                        /* the data's buffer and its allocation */
    bool own;                                /* base is this row's own (freed after) */
    MPI_Request *rq, *done;                  /* a nonblocking call's request; a completion's */
    MPI_Status st;
    char path[PATH_MAX], datarep[64];
};

/* The data buffer of a read or write: the one its _begin kept (a split collective's _end), or a new one.
 * False (found) where it cannot be had. */
static bool data_buffer(const struct trace_rec *r, const struct trace_call_info *ci, struct mpi_args *a)
{
    if (ci->split == 2) {
        char **held = map_get(&rbufs, -1 - r->fd), **hb = map_get(&rbases, -1 - r->fd);
        a->buf = held ? *held : NULL, a->base = hb ? *hb : NULL;
        return true;
    }
    a->buf = buffer(r->bytes, a->dt, a->count, ci->nonblocking || ci->split == 1, &a->own, &a->base);
    if (!a->buf)
        found("line %zu: %s of %lld items: its buffer would pass 1 GiB or is not a size", (size_t)r->seq + 3,
              ci->name, a->count);
    return a->buf != NULL;
}

/* A row's arguments (mpi_args); false (found) where the row names a handle, a communicator or a request no
 * replayed call made. A nonblocking call's request is entered in the maps here, with its buffer. */
static bool mpi_args_of(const struct trace_rec *r, const struct trace_call_info *ci, struct mpi_args *a)
{
    MPI_File *fh = r->fd >= 0 ? map_get(&files, r->fd) : NULL;
    *a = (struct mpi_args){.info = MPI_INFO_NULL, .et = MPI_DATATYPE_NULL, .ft = MPI_DATATYPE_NULL, .done_id = -1};
    a->dt = type_of(r, "dtype");
    a->count = arg_int(r, "count", 0);
    a->off = (MPI_Offset)arg_int(r, "eoff", 0);
    if (ci->kind != TK_MPI_OPEN && ci->kind != TK_MPI_WAIT && r->call != TC_MPI_FILE_DELETE && !fh) {
        found("line %zu: %s on file handle %lld, which no replayed open made", (size_t)r->seq + 3, ci->name,
              (long long)r->fd);
        return false;
    }
    if ((ci->kind == TK_MPI_READ || ci->kind == TK_MPI_WRITE) && !data_buffer(r, ci, a))
        return false;
    if (ci->nonblocking) {
        long long id = arg_id(r, "req", 'r');
        a->rq = map_put(&reqs, id);
        *(char **)map_put(&rbufs, id) = a->buf;
        *(char **)map_put(&rbases, id) = a->base;
        *(MPI_Datatype *)map_put(&rtypes, id) = a->dt;
        *(int *)map_put(&rclass, id) = (int)trace_class_of(r->call);
    }
    if (ci->kind == TK_MPI_OPEN) {
        if (!mpi_file_path(r, a->path, sizeof a->path))
            return false;
        a->comm = map_get(&comms, arg_id(r, "comm", 'c'));
        if (!a->comm) {
            found("line %zu: MPI_File_open on a communicator no MPI_Comm row defines", (size_t)r->seq + 3);
            return false;
        }
        a->info = info_of(r, "info");
    } else if (r->call == TC_MPI_FILE_DELETE) {
        if (!mpi_file_path(r, a->path, sizeof a->path))
            return false;
        a->info = info_of(r, "info");
    } else if (r->call == TC_MPI_FILE_SET_VIEW || r->call == TC_MPI_FILE_SET_INFO) {
        a->info = info_of(r, "info");
        a->et = type_of(r, "etype"), a->ft = type_of(r, "ftype");
    }
    arg(r, "datarep", a->datarep, sizeof a->datarep);
    if (ci->kind == TK_MPI_WAIT) {
        a->done_id = arg_id(r, "req", 'r');
        a->done = a->done_id >= 0 ? map_get(&reqs, a->done_id) : NULL;
        if (!a->done) {
            found("line %zu: %s completes request r%lld, which no replayed call started", (size_t)r->seq + 3, ci->name,
                  a->done_id);
            return false;
        }
    }
    a->f = fh ? *fh : MPI_FILE_NULL;
    return true;
}

/* The row's call, as the program made it: its MPI return. */
static int mpi_issue(const struct trace_rec *r, struct mpi_args *a)
{
    MPI_File f = a->f;
    MPI_Offset off = a->off;
    MPI_Datatype dt = a->dt;
    MPI_Status *st = &a->st;
    MPI_Request *rq = a->rq;
    void *buf = a->buf;
    int n = (int)a->count, ret = MPI_SUCCESS;
    switch (r->call) {
    case TC_MPI_FILE_OPEN: ret = MPI_File_open(*a->comm, a->path, (int)r->flags, a->info, &a->f); break;
    case TC_MPI_FILE_CLOSE: ret = MPI_File_close(&a->f); break;
    case TC_MPI_FILE_DELETE: ret = MPI_File_delete(a->path, a->info); break;
    case TC_MPI_FILE_SET_SIZE: ret = MPI_File_set_size(f, (MPI_Offset)r->offset); break;
    case TC_MPI_FILE_PREALLOCATE: ret = MPI_File_preallocate(f, (MPI_Offset)r->offset); break;
    case TC_MPI_FILE_GET_SIZE: { MPI_Offset s; ret = MPI_File_get_size(f, &s); break; }
    case TC_MPI_FILE_SET_VIEW:
        ret = MPI_File_set_view(f, (MPI_Offset)arg_int(r, "disp", 0), a->et, a->ft, a->datarep[0] ? a->datarep : "native",
                                a->info);
        break;
    case TC_MPI_FILE_SEEK: ret = MPI_File_seek(f, off, (int)r->flags); break;
    case TC_MPI_FILE_SEEK_SHARED: ret = MPI_File_seek_shared(f, off, (int)r->flags); break;
    case TC_MPI_FILE_SYNC: ret = MPI_File_sync(f); break;
    case TC_MPI_FILE_SET_ATOMICITY: ret = MPI_File_set_atomicity(f, (int)arg_int(r, "flag", 0)); break;
    case TC_MPI_FILE_SET_INFO: ret = MPI_File_set_info(f, a->info); break;
    case TC_MPI_FILE_READ_AT: ret = MPI_File_read_at(f, off, buf, n, dt, st); break;
    case TC_MPI_FILE_READ_AT_ALL: ret = MPI_File_read_at_all(f, off, buf, n, dt, st); break;
    case TC_MPI_FILE_WRITE_AT: ret = MPI_File_write_at(f, off, buf, n, dt, st); break;
    case TC_MPI_FILE_WRITE_AT_ALL: ret = MPI_File_write_at_all(f, off, buf, n, dt, st); break;
    case TC_MPI_FILE_IREAD_AT: ret = MPI_File_iread_at(f, off, buf, n, dt, rq); break;
    case TC_MPI_FILE_IREAD_AT_ALL: ret = MPI_File_iread_at_all(f, off, buf, n, dt, rq); break;
    case TC_MPI_FILE_IWRITE_AT: ret = MPI_File_iwrite_at(f, off, buf, n, dt, rq); break;
    case TC_MPI_FILE_IWRITE_AT_ALL: ret = MPI_File_iwrite_at_all(f, off, buf, n, dt, rq); break;
    case TC_MPI_FILE_READ_AT_ALL_BEGIN: ret = MPI_File_read_at_all_begin(f, off, buf, n, dt); break;
    case TC_MPI_FILE_READ_AT_ALL_END: ret = MPI_File_read_at_all_end(f, buf, st); break;
    case TC_MPI_FILE_WRITE_AT_ALL_BEGIN: ret = MPI_File_write_at_all_begin(f, off, buf, n, dt); break;
    case TC_MPI_FILE_WRITE_AT_ALL_END: ret = MPI_File_write_at_all_end(f, buf, st); break;
    case TC_MPI_FILE_READ: ret = MPI_File_read(f, buf, n, dt, st); break;
    case TC_MPI_FILE_READ_ALL: ret = MPI_File_read_all(f, buf, n, dt, st); break;
    case TC_MPI_FILE_WRITE: ret = MPI_File_write(f, buf, n, dt, st); break;
    case TC_MPI_FILE_WRITE_ALL: ret = MPI_File_write_all(f, buf, n, dt, st); break;
    case TC_MPI_FILE_IREAD: ret = MPI_File_iread(f, buf, n, dt, rq); break;
    case TC_MPI_FILE_IREAD_ALL: ret = MPI_File_iread_all(f, buf, n, dt, rq); break;
    case TC_MPI_FILE_IWRITE: ret = MPI_File_iwrite(f, buf, n, dt, rq); break;
    case TC_MPI_FILE_IWRITE_ALL: ret = MPI_File_iwrite_all(f, buf, n, dt, rq); break;
    case TC_MPI_FILE_READ_ALL_BEGIN: ret = MPI_File_read_all_begin(f, buf, n, dt); break;
    case TC_MPI_FILE_READ_ALL_END: ret = MPI_File_read_all_end(f, buf, st); break;
    case TC_MPI_FILE_WRITE_ALL_BEGIN: ret = MPI_File_write_all_begin(f, buf, n, dt); break;
    case TC_MPI_FILE_WRITE_ALL_END: ret = MPI_File_write_all_end(f, buf, st); break;
    case TC_MPI_FILE_READ_SHARED: ret = MPI_File_read_shared(f, buf, n, dt, st); break;
    case TC_MPI_FILE_WRITE_SHARED: ret = MPI_File_write_shared(f, buf, n, dt, st); break;
    case TC_MPI_FILE_IREAD_SHARED: ret = MPI_File_iread_shared(f, buf, n, dt, rq); break;
    case TC_MPI_FILE_IWRITE_SHARED: ret = MPI_File_iwrite_shared(f, buf, n, dt, rq); break;
    case TC_MPI_FILE_READ_ORDERED: ret = MPI_File_read_ordered(f, buf, n, dt, st); break;
    case TC_MPI_FILE_WRITE_ORDERED: ret = MPI_File_write_ordered(f, buf, n, dt, st); break;
    case TC_MPI_FILE_READ_ORDERED_BEGIN: ret = MPI_File_read_ordered_begin(f, buf, n, dt); break;
    case TC_MPI_FILE_READ_ORDERED_END: ret = MPI_File_read_ordered_end(f, buf, st); break;
    case TC_MPI_FILE_WRITE_ORDERED_BEGIN: ret = MPI_File_write_ordered_begin(f, buf, n, dt); break;
    case TC_MPI_FILE_WRITE_ORDERED_END: ret = MPI_File_write_ordered_end(f, buf, st); break;
    default: /* the completions: each recorded one completes its own request; a test recorded as completing
              * none (done=0: the MPI library progressed it there) tests it once */
        if (arg_int(r, "done", 1) == 0) {
            int flag = 0;
            ret = *a->done == MPI_REQUEST_NULL ? MPI_SUCCESS : MPI_Test(a->done, &flag, st);
            if (flag)
                *(MPI_Status *)map_put(&early, a->done_id) = *st;
        } else if (*a->done == MPI_REQUEST_NULL && map_get(&early, a->done_id)) {
            *st = *(MPI_Status *)map_get(&early, a->done_id);
        } else {
            ret = MPI_Wait(a->done, st);
        }
        break;
    }
    return ret;
}

/* After the call: the row's handles, buffers and requests kept or let go, and its time, bytes and result
 * counted (the class it was started in, for a completion) and set against the recorded ones. */
static void mpi_account(const struct trace_rec *r, const struct trace_call_info *ci, struct mpi_args *a, int ret,
                        uint64_t t0, uint64_t t1)
{
    long long moved = -1;
    if (a->info != MPI_INFO_NULL)
        MPI_Info_free(&a->info);
    bool blocking_data = (ci->kind == TK_MPI_READ || ci->kind == TK_MPI_WRITE) && !ci->nonblocking && ci->split != 1;
    if (ret == MPI_SUCCESS && blocking_data)
        moved = moved_of(&a->st, ci->split == 2 ? type_of(r, "dtype") : a->dt);
    if (ci->kind == TK_MPI_WAIT && ret == MPI_SUCCESS && arg_int(r, "done", 1)) { /* moved: against its type */
        MPI_Datatype *rt = map_get(&rtypes, a->done_id);
        moved = rt ? moved_of(&a->st, *rt) : -1;
        char **held = map_get(&rbufs, a->done_id), **hb = map_get(&rbases, a->done_id);
        if (held && hb) {
            free(*hb);
            *held = *hb = NULL;
        }
    }
    if (ci->kind == TK_MPI_OPEN && ret == MPI_SUCCESS)
        *(MPI_File *)map_put(&files, r->fd) = a->f, *(MPI_Comm *)map_put(&fcomms, r->fd) = *a->comm;
    if (ci->split == 1)
        *(char **)map_put(&rbufs, -1 - r->fd) = a->buf,
        *(char **)map_put(&rbases, -1 - r->fd) = a->base; /* the _end's */
    else if (ci->split == 2 && a->base) {
        free(a->base);
        *(char **)map_put(&rbufs, -1 - r->fd) = *(char **)map_put(&rbases, -1 - r->fd) = NULL;
    } else if (a->own && !ci->nonblocking)
        free(a->base);
    int *started_as = ci->kind == TK_MPI_WAIT ? map_get(&rclass, a->done_id) : NULL;
    int in = started_as ? *started_as : (int)trace_class_of(r->call);
    hist_add(&cls[in], t1 - t0);
    struct tally *x = &tally[r->call];
    x->count++, x->bytes += (unsigned long long)(r->bytes > 0 ? r->bytes : 0);
    x->rec_ns += r->t_end - r->t_start, x->rep_ns += t1 - t0;
    long long rec_moved = arg_int(r, "moved", -1);
    if (rec_moved > 0)
        x->moved_rec += (unsigned long long)rec_moved;
    if (moved > 0)
        x->moved_rep += (unsigned long long)moved, cls_moved[in] += (unsigned long long)moved;
    if (ci->collective)
        coll_ns[r->call] += (double)(t1 - t0);
    mismatch(r, ret, blocking_data || ci->kind == TK_MPI_WAIT ? moved : -1);
}

/* One MPI row of this rank, issued and timed. */
static void replay_mpi(const struct trace_rec *r)
{
    const struct trace_call_info *ci = &trace_calls[r->call];
    struct mpi_args a;
    if (!mpi_args_of(r, ci, &a))
        return;
    /* A collective call on the shared pointer (a shared seek, an ordered read or write) moves it for every
     * rank: the program's own synchronization before it (a barrier, messages) is not in the trace, and without
     * it a rank's earlier independent shared read or write could take the pointer after the collective moved
     * it. Every rank of the file's group waits here, untimed, for the others. */
    bool on_shared = r->call == TC_MPI_FILE_SEEK_SHARED || r->call == TC_MPI_FILE_READ_ORDERED ||
                     r->call == TC_MPI_FILE_WRITE_ORDERED || r->call == TC_MPI_FILE_READ_ORDERED_BEGIN ||
                     r->call == TC_MPI_FILE_WRITE_ORDERED_BEGIN;
    MPI_Comm *on = on_shared ? map_get(&fcomms, r->fd) : NULL;
    if (on)
        MPI_Barrier(*on);
    uint64_t t0 = now();
    int ret = mpi_issue(r, &a);
    uint64_t t1 = now();
    if (row_times)
        row_times[r->seq][0] = t0 - release + 1, row_times[r->seq][1] = t1 - release + 1;
    mpi_account(r, ci, &a, ret, t0, t1);
}

/* A POSIX call this rank made itself, on DIR/f<id>, in order. */
static int posix_fd[4096];

static void replay_posix(const struct trace_rec *r)
{
    const struct trace_call_info *ci = &trace_calls[r->call];
    char name[32];
    int fd = r->fd >= 0 && r->fd < 4096 ? posix_fd[r->fd] : -1, err = 0;
    long long ret = -1;
    char *buf = (ci->kind == TK_READ || ci->kind == TK_WRITE) && r->bytes >= 0 && r->bytes <= MAX_BUF
                    ? calloc(1, (size_t)r->bytes + 1)
                    : NULL;
    uint64_t t0 = now();
    switch (ci->kind) {
    case TK_OPEN:
        snprintf(name, sizeof name, "f%lld", (long long)r->file);
        ret = osm_confined_open(dirfd_, name, (int)r->flags, (mode_t)r->mode);
        err = errno;
        break;
    case TK_CLOSE: ret = fd >= 0 ? close(fd) : -1; break;
    case TK_READ: ret = fd >= 0 && buf ? pread(fd, buf, (size_t)r->bytes, r->offset >= 0 ? r->offset : 0) : -1; break;
    case TK_WRITE: ret = fd >= 0 && buf ? pwrite(fd, buf, (size_t)r->bytes, r->offset >= 0 ? r->offset : 0) : -1; break;
    case TK_SEEK: ret = fd >= 0 ? lseek(fd, r->ret >= 0 ? r->ret : r->offset, SEEK_SET) : -1; break;
    case TK_SYNC: ret = fd >= 0 ? fsync(fd) : -1; break;
    case TK_TRUNCATE: ret = fd >= 0 ? ftruncate(fd, r->offset) : -1; break;
    default: break;
    }
    uint64_t t1 = now();
    free(buf);
    if (row_times)
        row_times[r->seq][0] = t0 - release + 1, row_times[r->seq][1] = t1 - release + 1;
    if (ci->kind == TK_OPEN && ret < 0 && (err == ELOOP || err == EMLINK || err == ENODEV))
        return found("line %zu: %s/%s: %s", (size_t)r->seq + 3, dir, name, osm_confined_why(err));
    hist_add(&cls[trace_class_of(r->call)], t1 - t0);
    if ((ci->kind == TK_READ || ci->kind == TK_WRITE) && ret > 0)
        cls_moved[trace_class_of(r->call)] += (unsigned long long)ret;
    if (ci->kind == TK_OPEN && r->ret >= 0 && r->ret < 4096)
        posix_fd[r->ret] = (int)ret;
    if (ci->kind == TK_OPEN && r->ret < 0 && ret >= 0)
        close((int)ret);
    struct tally *x = &tally[r->call];
    x->count++, x->bytes += (unsigned long long)(r->bytes > 0 ? r->bytes : 0);
    x->rec_ns += r->t_end - r->t_start, x->rep_ns += t1 - t0;
    if ((ci->kind == TK_READ || ci->kind == TK_WRITE) && r->ret > 0)
        x->moved_rec += (unsigned long long)r->ret;
    if ((ci->kind == TK_READ || ci->kind == TK_WRITE) && ret > 0)
        x->moved_rep += (unsigned long long)ret;
    if ((ci->kind == TK_OPEN ? (ret >= 0) != (r->ret >= 0) : ret != r->ret)) {
        if (nmism < MAX_LISTED)
            mism[nmism] = (struct mismatch){(long long)r->seq, me, r->ret, ret, 0, 0};
        nmism++;
    }
}

/* The options, parsed on every rank alike (the launcher gives each the same). */
static const char *path, *timing = "asap", *mark;
static unsigned timeout_s;
static long long limit = -1;

/* A usage error, as any error the replayer finds: every rank parses the same words and finds it, says
 * it and finalizes MPI, then exits 2 (agree_or_exit). */
static void usage_found(const char *message)
{
    found("%s", message);
    agree_or_exit();
}

static void options(int argc, char **argv)
{
    uint64_t limit_ = 0;
    bool limit_given = false;
    const struct osm_opt rows[] = {
        OSM_OPT_STR("dir", dir, "the directory the replay writes its files into", .arg = "DIR"),
        OSM_OPT_STR("timing", timing, "as soon as possible, or the recorded gaps", .arg = "asap|recorded"),
        OSM_OPT_STR("started", mark, "a file rank 0 makes in DIR once every rank has started", .arg = "NAME"),
        OSM_OPT_STR("times", times_name, "a file rank 0 writes into DIR: each row's replayed times", .arg = "NAME"),
        OSM_OPT_UINT("timeout", timeout_s, 0, 30 * 86400, "the watch's bound, seconds (0: none)", .arg = "S"),
        OSM_OPT_U64("prepare-limit", limit_, 0, INT64_MAX, "the largest offset a prepared file may reach",
                    .seen = &limit_given, .arg = "BYTES", .def = "none"),
        {0},
    };
    const struct osm_command cmd = {
        .name = "iotrace-mpi-replay", .operands = "TRACE", .opts = rows, .max_operands = 1,
        .summary = "One rank of an MPI-IO replay (iotrace replay --launcher starts it, through iotrace replay-rank).",
    };
    osm_usage_hook = usage_found;
    if (osm_parse_command(&cmd, argc - 1, argv + 1, &path) == 0)
        path = NULL;
    if (limit_given)
        limit = (long long)limit_;
    if (!path || !dir)
        found("usage: iotrace-mpi-replay TRACE --dir DIR [--timing asap|recorded]");
    else if (strcmp(timing, "asap") && strcmp(timing, "recorded"))
        found("--timing %s: asap or recorded", timing);
    else if ((dirfd_ = osm_dir_open(dir)) < 0)
        found("--dir %s: %s", dir, strerror(errno));
}

/* Every rank's row times, to rank 0 (each row is one rank's: the others hold 0), into DIR/--times. */
static void write_times(void)
{
    for (size_t at = 0; at < 2 * T.n; at += 1u << 28) {
        int count = (int)(2 * T.n - at < (1u << 28) ? 2 * T.n - at : (1u << 28));
        uint64_t *part = (uint64_t *)row_times + at;
        MPI_Reduce(me == 0 ? MPI_IN_PLACE : part, part, count, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    }
    if (me != 0)
        return;
    int fd = osm_confined_open(dirfd_, times_name, O_WRONLY | O_CREAT | O_EXCL, 0600);
    size_t left = T.n * sizeof *row_times;
    const char *p = (const char *)row_times;
    for (ssize_t w = 0; fd >= 0 && left > 0; p += w, left -= (size_t)w)
        if ((w = write(fd, p, left)) <= 0)
            break;
    if (fd < 0 || left > 0)
        fprintf(stderr, "iotrace: the replay's times could not be written to %s/%s: %s\n", dir, times_name,
                fd < 0 ? osm_confined_why(errno) : strerror(errno));
    if (fd >= 0)
        close(fd);
}

/* Rank 0 reads the trace, every rank parses the same bytes. */
static void load(void)
{
    long long len = 0;
    char *text = NULL;
    if (me == 0) {
        FILE *f = fopen(path, "rbe");
        if (!f)
            found("%s: cannot open: %s", path, strerror(errno));
        else {
            fseek(f, 0, SEEK_END);
            len = ftell(f);
            rewind(f);
            text = len >= 0 ? malloc((size_t)len + 1) : NULL;
            if (!text || fread(text, 1, (size_t)len, f) != (size_t)len)
                found("%s: cannot read", path);
            fclose(f);
        }
    }
    agree_or_exit();
    MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (me)
        text = malloc((size_t)len + 1);
    if (!text) {
        end_all(1, "rank %d: out of memory for the trace's %lld bytes", me, len);
    }
    for (long long at = 0; at < len;) {
        int n = (int)(len - at < (1 << 30) ? len - at : (1 << 30));
        MPI_Bcast(text + at, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        at += n;
    }
    char err[1024];
    if (trace_parse(text, (size_t)len, path, true, &T, err, sizeof err))
        found("%s", err);
    free(text);
    agree_or_exit();
}

/* Opens ordered across ranks. A rank's MPI_File_open without MPI_MODE_CREATE of a file another rank
 * created just before (the latest such open that ended before it began, on the ranks' aligned clocks) was
 * ordered by the program with a message or a barrier the trace does not hold (ADIOS's MPI method: rank 0
 * creates the file on MPI_COMM_SELF, then the others open it). The creating rank sends the opening one an
 * empty message once its open is replayed, the opening rank waits for it, untimed: the tag names the file,
 * and for one file and pair of ranks the creates and the opens that wait on them come in the same order. */
struct edge {
    size_t row;  /* a row of this rank */
    int peer;    /* the rank it waits for (an open) or tells (a create) */
};
static struct edge *waits, *tells;
static size_t nwaits, ntells;

static int edge_tag(const struct trace_rec *r) { return 1 + (int)(r->file % 30000); }

static void order_opens(void)
{
    waits = calloc(T.n + 1, sizeof *waits), tells = calloc(T.n + 1, sizeof *tells);
    if (!waits || !tells)
        return found("out of memory");
    size_t *opens = malloc((T.n + 1) * sizeof *opens), nopens = 0; /* the opens, to pair among themselves */
    if (!opens)
        return found("out of memory");
    for (size_t i = 0; i < T.n; i++)
        if (T.rec[i].call == TC_MPI_FILE_OPEN && T.rec[i].ret == 0)
            opens[nopens++] = i;
    for (size_t a = 0; a < nopens; a++) {
        size_t i = opens[a];
        const struct trace_rec *r = &T.rec[i];
        if (r->flags & MPI_MODE_CREATE)
            continue;
        size_t from = T.n;
        for (size_t b = 0; b < nopens; b++) {
            size_t j = opens[b];
            const struct trace_rec *c = &T.rec[j];
            if ((c->flags & MPI_MODE_CREATE) && c->file == r->file &&
                c->rank != r->rank && c->t_end <= r->t_start && (from == T.n || c->t_end > T.rec[from].t_end))
                from = j;
        }
        if (from == T.n)
            continue;
        if (r->rank == me)
            waits[nwaits++] = (struct edge){i, (int)T.rec[from].rank};
        if (T.rec[from].rank == me)
            tells[ntells++] = (struct edge){from, (int)r->rank};
    }
    free(opens);
}

static void wait_for_creates(size_t row)
{
    for (size_t k = 0; k < nwaits; k++)
        if (waits[k].row == row) {
            static char what[96];
            snprintf(what, sizeof what, "a message that rank %d created f%lld (its open replayed)", waits[k].peer,
                     (long long)T.rec[row].file);
            watch_at((size_t)T.rec[row].seq + 3, what);
            MPI_Recv(NULL, 0, MPI_BYTE, waits[k].peer, edge_tag(&T.rec[row]), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
}

static void tell_creates(size_t row)
{
    for (size_t k = 0; k < ntells; k++)
        if (tells[k].row == row)
            MPI_Send(NULL, 0, MPI_BYTE, tells[k].peer, edge_tag(&T.rec[row]), MPI_COMM_WORLD);
}

static long long outside; /* rows of no rank (-1: before MPI_Init or in a process no launcher started) */

/* This rank's rows (*n of them), after every row of the trace is checked against what the replay can
 * do: ranks the trace has, counts MPI takes, sizes within --prepare-limit and DIR's free space. */
static size_t *rows_of_this_rank(size_t *n)
{
    int recorded = 0;
    for (size_t i = 0; i < T.n; i++)
        recorded += trace_calls[T.rec[i].call].kind == TK_MPI_INIT;
    if (!recorded)
        found("%s: no MPI_Init row: the trace was not recorded under MPI (replay it with iotrace replay)", path);
    else if (recorded != nranks)
        found("%s: the trace has %d ranks; replaying with %d is not possible (each recorded rank replays in a rank "
              "of its own: start the launcher with %d)", path, recorded, nranks, recorded);
    agree_or_exit();
    struct statvfs fs;
    long double avail = fstatvfs(dirfd_, &fs) ? -1 : (long double)fs.f_bavail * (long double)fs.f_frsize;
    size_t *mine = malloc((T.n + 1) * sizeof *mine);
    *n = 0;
    for (size_t i = 0; i < T.n && mine && !problem[0]; i++) {
        const struct trace_rec *r = &T.rec[i];
        const struct trace_call_info *ci = &trace_calls[r->call];
        size_t line = (size_t)r->seq + 3;
        if (r->rank < -1 || r->rank >= recorded)
            found("line %zu: a row of rank %lld, which the trace does not have (its ranks are 0 to %d)", line,
                  (long long)r->rank, recorded - 1);
        else if (r->rank == -1)
            outside++;
        if (r->rank != me || ci->kind == TK_MPI_INIT || ci->kind == TK_MPI_FINALIZE)
            continue;
        if (!ci->mpi && r->parent >= 0)
            continue; /* the MPI library's own POSIX calls: it makes them again */
        long long count = arg_int(r, "count", 0);
        if ((ci->kind == TK_MPI_READ || ci->kind == TK_MPI_WRITE) && (count < 0 || count > INT_MAX))
            found("line %zu: %s of %lld items: not a count MPI takes", line, ci->name, count);
        if (r->call == TC_MPI_FILE_PREALLOCATE || r->call == TC_MPI_FILE_SET_SIZE) {
            if (r->offset < 0)
                found("line %zu: %s to %lld bytes: not a size", line, ci->name, (long long)r->offset);
            else if (limit >= 0 && r->offset > limit)
                found("line %zu: %s to %lld bytes is over the limit of %lld (--prepare-limit)", line, ci->name,
                      (long long)r->offset, limit);
            else if (r->call == TC_MPI_FILE_PREALLOCATE && avail >= 0 && (long double)r->offset > avail)
                found("line %zu: %s to %lld bytes; %s has %.0Lf bytes free", line, ci->name, (long long)r->offset,
                      dir, avail);
        }
        mine[(*n)++] = i;
    }
    if (!mine)
        found("out of memory");
    agree_or_exit();
    return mine;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    rebuild_init();
    options(argc, argv);
    if (me == 0 && mark && !problem[0]) { /* iotrace replay waits for it: the launcher started every rank */
        int fd = osm_confined_open(dirfd_, mark, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd < 0)
            found("--started %s/%s: %s", dir, mark, osm_confined_why(errno));
        else
            close(fd);
    }
    agree_or_exit();
    watch_start(timeout_s);
    load();
    size_t n = 0, *mine = rows_of_this_rank(&n);
    for (int c = 0; c < TCL_N; c++)
        hist_clear(&cls[c]);
    for (int i = 0; i < 4096; i++)
        posix_fd[i] = -1;
    order_opens();
    for (size_t k = 0; k < n && !problem[0]; k++) /* datatypes first: all or none (before anything is timed) */
        if (T.rec[mine[k]].call == TC_MPI_TYPE)
            define_type(&T.rec[mine[k]]);
    agree_or_exit();

    watch_at(0, "the barrier before the first call");
    if (times_name && !(row_times = calloc(T.n ? T.n : 1, sizeof *row_times)))
        found("out of memory for --times");
    agree_or_exit();
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t start = release = now(), prev_rep_end = start, prev_rec_end = 0;
    for (size_t k = 0; k < n && !problem[0]; k++) {
        const struct trace_rec *r = &T.rec[mine[k]];
        if (r->call == TC_MPI_TYPE)
            continue;
        watch_at((size_t)r->seq + 3, trace_calls[r->call].name);
        if (r->call == TC_MPI_COMM) {
            define_comm(r);
            continue;
        }
        if (!strcmp(timing, "recorded") && prev_rec_end && r->t_start > prev_rec_end) {
            uint64_t until = prev_rep_end + (r->t_start - prev_rec_end);
            for (uint64_t t = now(); t < until; t = now()) { /* sleep most of it, spin the last 50 us */
                uint64_t left = until - t;
                struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u - (left > 50000 ? 50000 : 0))};
                if (left > 50000)
                    nanosleep(&ts, NULL);
            }
        }
        if (r->call == TC_MPI_FILE_OPEN)
            wait_for_creates(mine[k]);
        if (trace_calls[r->call].mpi)
            replay_mpi(r);
        else
            replay_posix(r);
        if (r->call == TC_MPI_FILE_OPEN)
            tell_creates(mine[k]);
        prev_rec_end = r->t_end;
        prev_rep_end = now();
    }
    if (problem[0]) { /* a rank that stopped leaves the others in a collective: end them all */
        end_all(2, "rank %d: %s", me, problem);
    }
    uint64_t mine_end = now();
    watch_at(0, "the barrier after its last call (the other ranks' calls)");
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t wall = now() - start;
    watch_at(0, "the gathering of the results");
    if (row_times)
        write_times();
    report(&T, path, dir, timing, wall, mine_end - start, outside);
    free(mine);
    free_rebuilt();
    MPI_Finalize();
    return 0;
}
