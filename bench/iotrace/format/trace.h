/*
 * trace.h - the iotrace trace format (docs/iotrace.md): one CSV row per
 * recorded call.
 *
 * The same rows are written by the recorder (preload.c, one file per
 * process, `seq` counting that process's calls, `file` empty) and by
 * `iotrace record` (one merged file sorted by start time, `seq` 0..n-1,
 * every row naming its file f0, f1 ...). This file is the one place that
 * knows the format: formatting a row (no stdio, no allocation: it runs
 * inside the traced program), and reading, validating and merging traces.
 */
#ifndef IOTRACE_TRACE_H
#define IOTRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Nothing here is exported from libiotrace.so: it must not clash with the
 * traced program's own symbols. */
#pragma GCC visibility push(hidden)

#define TRACE_VERSION 2
#define TRACE_VERSION_LINE "# iotrace 2"
#define TRACE_VERSION_NOTES 3 /* version 2's rows, then "# " notes to the end (what an import could not give) */
#define TRACE_HEADER_V1 "seq,pid,tid,call,t_start_ns,t_end_ns,fd,file,path,flags,mode,offset,bytes,ret,errno"
#define TRACE_HEADER TRACE_HEADER_V1 ",rank,parent,args"
#define TRACE_NFIELDS_V1 15
#define TRACE_NFIELDS 18
#define TRACE_PATH_MAX 4096                             /* bytes of a path kept; longer ones are cut */
#define TRACE_ARGS_MAX 8192                             /* bytes of a row's args kept */
#define TRACE_ROW_MAX (3 * TRACE_PATH_MAX + 3 * TRACE_ARGS_MAX + 20 * 24) /* longest formatted row */

/* Every call a recorder wraps, under the name it was called by: the POSIX
 * calls of posix/preload.c, then the MPI calls of mpiio/mpi_record.c (the
 * MPI-IO routines, the completions of their requests, MPI_Init and
 * MPI_Finalize) and the rows that define a datatype or a communicator the
 * MPI rows name. The MPI names are spelled as the standard spells them. */
#define TRACE_MPI_CALLS(X)                                                                                  \
    X(MPI_INIT, "MPI_Init", TK_MPI_INIT, 0, 0, 0, 0)                                                       \
    X(MPI_INIT_THREAD, "MPI_Init_thread", TK_MPI_INIT, 0, 0, 0, 0)                                         \
    X(MPI_FINALIZE, "MPI_Finalize", TK_MPI_FINALIZE, 0, 0, 0, 0)                                           \
    X(MPI_TYPE, "MPI_Type", TK_DEF, 0, 0, 0, 0)                                                            \
    X(MPI_COMM, "MPI_Comm", TK_DEF, 0, 0, 0, 0)                                                            \
    X(MPI_FILE_OPEN, "MPI_File_open", TK_MPI_OPEN, 0, 1, 0, 0)                                             \
    X(MPI_FILE_CLOSE, "MPI_File_close", TK_MPI_CLOSE, 0, 1, 0, 0)                                          \
    X(MPI_FILE_DELETE, "MPI_File_delete", TK_MPI_CONTROL, 0, 0, 0, 0)                                      \
    X(MPI_FILE_SET_SIZE, "MPI_File_set_size", TK_MPI_CONTROL, 0, 1, 0, 0)                                  \
    X(MPI_FILE_PREALLOCATE, "MPI_File_preallocate", TK_MPI_CONTROL, 0, 1, 0, 0)                            \
    X(MPI_FILE_GET_SIZE, "MPI_File_get_size", TK_MPI_CONTROL, 0, 0, 0, 0)                                  \
    X(MPI_FILE_SET_VIEW, "MPI_File_set_view", TK_MPI_CONTROL, 0, 1, 0, 0)                                  \
    X(MPI_FILE_SEEK, "MPI_File_seek", TK_MPI_CONTROL, TA_INDIVIDUAL, 0, 0, 0)                              \
    X(MPI_FILE_SEEK_SHARED, "MPI_File_seek_shared", TK_MPI_CONTROL, TA_SHARED, 1, 0, 0)                    \
    X(MPI_FILE_SYNC, "MPI_File_sync", TK_MPI_CONTROL, 0, 1, 0, 0)                                          \
    X(MPI_FILE_SET_ATOMICITY, "MPI_File_set_atomicity", TK_MPI_CONTROL, 0, 1, 0, 0)                        \
    X(MPI_FILE_SET_INFO, "MPI_File_set_info", TK_MPI_CONTROL, 0, 1, 0, 0)                                  \
    X(MPI_FILE_READ_AT, "MPI_File_read_at", TK_MPI_READ, TA_EXPLICIT, 0, 0, 0)                             \
    X(MPI_FILE_READ_AT_ALL, "MPI_File_read_at_all", TK_MPI_READ, TA_EXPLICIT, 1, 0, 0)                     \
    X(MPI_FILE_WRITE_AT, "MPI_File_write_at", TK_MPI_WRITE, TA_EXPLICIT, 0, 0, 0)                          \
    X(MPI_FILE_WRITE_AT_ALL, "MPI_File_write_at_all", TK_MPI_WRITE, TA_EXPLICIT, 1, 0, 0)                  \
    X(MPI_FILE_IREAD_AT, "MPI_File_iread_at", TK_MPI_READ, TA_EXPLICIT, 0, 1, 0)                           \
    X(MPI_FILE_IREAD_AT_ALL, "MPI_File_iread_at_all", TK_MPI_READ, TA_EXPLICIT, 1, 1, 0)                   \
    X(MPI_FILE_IWRITE_AT, "MPI_File_iwrite_at", TK_MPI_WRITE, TA_EXPLICIT, 0, 1, 0)                        \
    X(MPI_FILE_IWRITE_AT_ALL, "MPI_File_iwrite_at_all", TK_MPI_WRITE, TA_EXPLICIT, 1, 1, 0)                \
    X(MPI_FILE_READ_AT_ALL_BEGIN, "MPI_File_read_at_all_begin", TK_MPI_READ, TA_EXPLICIT, 1, 0, 1)         \
    X(MPI_FILE_READ_AT_ALL_END, "MPI_File_read_at_all_end", TK_MPI_READ, TA_EXPLICIT, 1, 0, 2)             \
    X(MPI_FILE_WRITE_AT_ALL_BEGIN, "MPI_File_write_at_all_begin", TK_MPI_WRITE, TA_EXPLICIT, 1, 0, 1)      \
    X(MPI_FILE_WRITE_AT_ALL_END, "MPI_File_write_at_all_end", TK_MPI_WRITE, TA_EXPLICIT, 1, 0, 2)          \
    X(MPI_FILE_READ, "MPI_File_read", TK_MPI_READ, TA_INDIVIDUAL, 0, 0, 0)                                 \
    X(MPI_FILE_READ_ALL, "MPI_File_read_all", TK_MPI_READ, TA_INDIVIDUAL, 1, 0, 0)                         \
    X(MPI_FILE_WRITE, "MPI_File_write", TK_MPI_WRITE, TA_INDIVIDUAL, 0, 0, 0)                              \
    X(MPI_FILE_WRITE_ALL, "MPI_File_write_all", TK_MPI_WRITE, TA_INDIVIDUAL, 1, 0, 0)                      \
    X(MPI_FILE_IREAD, "MPI_File_iread", TK_MPI_READ, TA_INDIVIDUAL, 0, 1, 0)                               \
    X(MPI_FILE_IREAD_ALL, "MPI_File_iread_all", TK_MPI_READ, TA_INDIVIDUAL, 1, 1, 0)                       \
    X(MPI_FILE_IWRITE, "MPI_File_iwrite", TK_MPI_WRITE, TA_INDIVIDUAL, 0, 1, 0)                            \
    X(MPI_FILE_IWRITE_ALL, "MPI_File_iwrite_all", TK_MPI_WRITE, TA_INDIVIDUAL, 1, 1, 0)                    \
    X(MPI_FILE_READ_ALL_BEGIN, "MPI_File_read_all_begin", TK_MPI_READ, TA_INDIVIDUAL, 1, 0, 1)             \
    X(MPI_FILE_READ_ALL_END, "MPI_File_read_all_end", TK_MPI_READ, TA_INDIVIDUAL, 1, 0, 2)                 \
    X(MPI_FILE_WRITE_ALL_BEGIN, "MPI_File_write_all_begin", TK_MPI_WRITE, TA_INDIVIDUAL, 1, 0, 1)          \
    X(MPI_FILE_WRITE_ALL_END, "MPI_File_write_all_end", TK_MPI_WRITE, TA_INDIVIDUAL, 1, 0, 2)              \
    X(MPI_FILE_READ_SHARED, "MPI_File_read_shared", TK_MPI_READ, TA_SHARED, 0, 0, 0)                       \
    X(MPI_FILE_WRITE_SHARED, "MPI_File_write_shared", TK_MPI_WRITE, TA_SHARED, 0, 0, 0)                    \
    X(MPI_FILE_IREAD_SHARED, "MPI_File_iread_shared", TK_MPI_READ, TA_SHARED, 0, 1, 0)                     \
    X(MPI_FILE_IWRITE_SHARED, "MPI_File_iwrite_shared", TK_MPI_WRITE, TA_SHARED, 0, 1, 0)                  \
    X(MPI_FILE_READ_ORDERED, "MPI_File_read_ordered", TK_MPI_READ, TA_SHARED, 1, 0, 0)                     \
    X(MPI_FILE_WRITE_ORDERED, "MPI_File_write_ordered", TK_MPI_WRITE, TA_SHARED, 1, 0, 0)                  \
    X(MPI_FILE_READ_ORDERED_BEGIN, "MPI_File_read_ordered_begin", TK_MPI_READ, TA_SHARED, 1, 0, 1)         \
    X(MPI_FILE_READ_ORDERED_END, "MPI_File_read_ordered_end", TK_MPI_READ, TA_SHARED, 1, 0, 2)             \
    X(MPI_FILE_WRITE_ORDERED_BEGIN, "MPI_File_write_ordered_begin", TK_MPI_WRITE, TA_SHARED, 1, 0, 1)      \
    X(MPI_FILE_WRITE_ORDERED_END, "MPI_File_write_ordered_end", TK_MPI_WRITE, TA_SHARED, 1, 0, 2)          \
    X(MPI_WAIT, "MPI_Wait", TK_MPI_WAIT, 0, 0, 0, 0)                                                       \
    X(MPI_WAITALL, "MPI_Waitall", TK_MPI_WAIT, 0, 0, 0, 0)                                                 \
    X(MPI_WAITANY, "MPI_Waitany", TK_MPI_WAIT, 0, 0, 0, 0)                                                 \
    X(MPI_WAITSOME, "MPI_Waitsome", TK_MPI_WAIT, 0, 0, 0, 0)                                               \
    X(MPI_TEST, "MPI_Test", TK_MPI_WAIT, 0, 0, 0, 0)                                                       \
    X(MPI_TESTALL, "MPI_Testall", TK_MPI_WAIT, 0, 0, 0, 0)                                                 \
    X(MPI_TESTANY, "MPI_Testany", TK_MPI_WAIT, 0, 0, 0, 0)                                                 \
    X(MPI_TESTSOME, "MPI_Testsome", TK_MPI_WAIT, 0, 0, 0, 0)

#define TRACE_MPI_ENUM(id, name, kind, access, coll, nb, split) TC_##id,
enum trace_call {
    TC_OPEN, TC_OPEN64, TC_OPENAT, TC_OPENAT64, TC_CREAT, TC_CREAT64, TC_CLOSE,
    TC_READ, TC_WRITE, TC_PREAD, TC_PREAD64, TC_PWRITE, TC_PWRITE64, TC_READV, TC_WRITEV,
    TC_LSEEK, TC_LSEEK64, TC_FSYNC, TC_FDATASYNC, TC_FTRUNCATE, TC_FTRUNCATE64,
    TC_NPOSIX,
    TRACE_MPI_CALLS(TRACE_MPI_ENUM)
    TC_NCALLS
};
#undef TRACE_MPI_ENUM

/* What a call does, which is all replay needs to know. The TK_MPI_ kinds
 * and TK_DEF are MPI rows; the rest POSIX. */
enum trace_kind {
    TK_OPEN, TK_CLOSE, TK_READ, TK_WRITE, TK_SEEK, TK_SYNC, TK_TRUNCATE,
    TK_MPI_INIT, TK_MPI_FINALIZE, TK_MPI_OPEN, TK_MPI_CLOSE, TK_MPI_READ, TK_MPI_WRITE, TK_MPI_CONTROL,
    TK_MPI_WAIT, TK_DEF
};
/* Which file pointer an MPI-IO data access uses. */
enum trace_access { TA_NONE, TA_EXPLICIT, TA_INDIVIDUAL, TA_SHARED };

struct trace_call_info {
    const char *name;
    enum trace_kind kind;
    bool positioned; /* pread/pwrite: the offset is an argument */
    bool vector;     /* readv/writev: flags holds iovcnt */
    bool mpi;        /* an MPI row: rank, args; ret is an MPI error code */
    enum trace_access access;
    bool collective; /* over the file's communicator */
    bool nonblocking; /* completed by a later MPI_Wait/Test row naming its request */
    int split;       /* 1: a split collective's _begin, 2: its _end */
};
extern const struct trace_call_info trace_calls[TC_NCALLS];

/* The class a replayed call's time counts in (docs/iotrace.md, "classes"): data read, data written, and
 * the rest (opens, closes, views, seeks, syncs, sizes). An MPI completion is the rest here; the MPI
 * replayer counts it in the class of the request it completed. */
enum trace_class { TCL_READ, TCL_WRITE, TCL_META, TCL_N };
extern const char *const trace_class_names[TCL_N];
enum trace_class trace_class_of(enum trace_call c);

struct trace_rec {
    uint64_t seq;
    int64_t pid, tid;
    enum trace_call call;
    uint64_t t_start, t_end;   /* CLOCK_MONOTONIC, ns (MPI: aligned to rank 0's clock by the merge) */
    int64_t fd;                /* the descriptor used; for opens the new one (ret). MPI: the file handle id */
    int64_t file;              /* file id (f<file>), -1 when not assigned yet */
    const char *path;          /* as passed to the open; never NULL */
    int64_t flags;             /* open flags; lseek whence; readv/writev iovcnt; MPI: amode, whence */
    int64_t mode;              /* open/creat mode */
    int64_t offset;            /* file offset; lseek/ftruncate argument; -1 unknown. MPI: bytes from the file's start */
    int64_t bytes;             /* bytes requested */
    int64_t ret, err;          /* return value, errno when ret == -1 (else 0). MPI: the error code, 0 */
    int64_t rank;              /* MPI_COMM_WORLD rank of the process, -1 outside MPI */
    int64_t parent;            /* the seq of the MPI-IO row this POSIX call was made inside, else -1 */
    const char *args;          /* MPI rows: key=value;... (docs/iotrace.md); never NULL */
};

/* Writing. Both return the length written (not counting the NUL) or -1 if
 * it does not fit in n bytes; TRACE_ROW_MAX always suffices for a row. */
int trace_format_preamble(char *buf, size_t n);
int trace_format_row(char *buf, size_t n, const struct trace_rec *r);

/* Reading. A trace owns its rows and their path strings. */
struct trace {
    struct trace_rec *rec;
    size_t n;
    int version; /* of the file read: 1, 2 or 3 */
    const char **notes; /* version 3: the "# " lines after the rows (without the "# "), in order */
    size_t nnotes;
    char **blocks; /* path storage, freed with the trace */
    size_t nblocks;
};

/* A trace read a row at a time, in memory independent of its length (`iotrace show --perfetto`): open
 * checks the version line and the header; next gives the next row (1), the end (0) or an error (-1, the
 * message in err as trace_parse's), with the checks of a merged trace; a row's path and args stay valid
 * until the next call. Version 3's notes are passed over. */
struct trace_stream;
struct trace_stream *trace_stream_open(const char *path, char *err, size_t errlen);
int trace_stream_version(const struct trace_stream *s);
int trace_stream_next(struct trace_stream *s, struct trace_rec *r);
void trace_stream_close(struct trace_stream *s);

/* The value of key in an args string ("" where absent), copied into buf. */
const char *trace_arg(const char *args, const char *key, char *buf, size_t n);

/* Parses text[0..len) (no NUL needed), version 2 or 1 (its rows get rank
 * and parent -1, args ""). `merged` also requires what a trace written by
 * `iotrace record` has: a file id on every row and seq numbers 0, 1, 2 ...
 * On error returns -1 and writes "NAME:LINE: what" into err. */
int trace_parse(const char *text, size_t len, const char *name, bool merged, struct trace *t,
                char *err, size_t errlen);
/* Reads a whole file; `nul_padded` stops at the first NUL byte (a
 * recorder's file whose process exec'd or was killed before its end was
 * trimmed). */
int trace_load(const char *path, bool merged, bool nul_padded, struct trace *t, char *err, size_t errlen);
void trace_free(struct trace *t);

/* Merges per-process traces into one: each MPI process's times moved onto
 * rank 0's clock (the clock_offset_ns its MPI_Init row holds), rows sorted
 * by start time (ties keep each process's order), seq renumbered 0..n-1,
 * parents renumbered with them, and every path given a file id in order of
 * its first appearance. The parts are emptied into out. Returns -1 out of
 * memory, -2 where a part's seq repeats or a parent names no row of it. */
int trace_merge(struct trace *parts, size_t nparts, struct trace *out);
int trace_write(FILE *f, const struct trace *t);

#pragma GCC visibility pop

#endif
