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

#define TRACE_VERSION 1
#define TRACE_VERSION_LINE "# iotrace 1"
#define TRACE_HEADER "seq,pid,tid,call,t_start_ns,t_end_ns,fd,file,path,flags,mode,offset,bytes,ret,errno"
#define TRACE_NFIELDS 15
#define TRACE_PATH_MAX 4096                             /* bytes of a path kept; longer ones are cut */
#define TRACE_ROW_MAX (3 * TRACE_PATH_MAX + 16 * 24)    /* longest formatted row */

/* Every call the recorder wraps, under the name it was called by. */
enum trace_call {
    TC_OPEN, TC_OPEN64, TC_OPENAT, TC_OPENAT64, TC_CREAT, TC_CREAT64, TC_CLOSE,
    TC_READ, TC_WRITE, TC_PREAD, TC_PREAD64, TC_PWRITE, TC_PWRITE64, TC_READV, TC_WRITEV,
    TC_LSEEK, TC_LSEEK64, TC_FSYNC, TC_FDATASYNC, TC_FTRUNCATE, TC_FTRUNCATE64,
    TC_NCALLS
};

/* What a call does, which is all replay needs to know. */
enum trace_kind { TK_OPEN, TK_CLOSE, TK_READ, TK_WRITE, TK_SEEK, TK_SYNC, TK_TRUNCATE };

struct trace_call_info {
    const char *name;
    enum trace_kind kind;
    bool positioned; /* pread/pwrite: the offset is an argument */
    bool vector;     /* readv/writev: flags holds iovcnt */
};
extern const struct trace_call_info trace_calls[TC_NCALLS];

struct trace_rec {
    uint64_t seq;
    int64_t pid, tid;
    enum trace_call call;
    uint64_t t_start, t_end;   /* CLOCK_MONOTONIC, ns */
    int64_t fd;                /* the descriptor used; for opens the new one (ret) */
    int64_t file;              /* file id (f<file>), -1 when not assigned yet */
    const char *path;          /* as passed to the open; never NULL */
    int64_t flags;             /* open flags; lseek whence; readv/writev iovcnt */
    int64_t mode;              /* open/creat mode */
    int64_t offset;            /* file offset; lseek/ftruncate argument; -1 unknown */
    int64_t bytes;             /* bytes requested */
    int64_t ret, err;          /* return value, errno when ret == -1 (else 0) */
};

/* Writing. Both return the length written (not counting the NUL) or -1 if
 * it does not fit in n bytes; TRACE_ROW_MAX always suffices for a row. */
int trace_format_preamble(char *buf, size_t n);
int trace_format_row(char *buf, size_t n, const struct trace_rec *r);

/* Reading. A trace owns its rows and their path strings. */
struct trace {
    struct trace_rec *rec;
    size_t n;
    char **blocks; /* path storage, freed with the trace */
    size_t nblocks;
};

/* Parses text[0..len) (no NUL needed). `merged` also requires what a trace
 * written by `iotrace record` has: a file id on every row and seq numbers
 * 0, 1, 2 ... On error returns -1 and writes "NAME:LINE: what" into err. */
int trace_parse(const char *text, size_t len, const char *name, bool merged, struct trace *t,
                char *err, size_t errlen);
/* Reads a whole file; `nul_padded` stops at the first NUL byte (a
 * recorder's file whose process exec'd or was killed before its end was
 * trimmed). */
int trace_load(const char *path, bool merged, bool nul_padded, struct trace *t, char *err, size_t errlen);
void trace_free(struct trace *t);

/* Merges per-process traces into one: rows sorted by start time (ties keep
 * each process's order), seq renumbered 0..n-1, and every path given a file
 * id in order of its first appearance. The parts are emptied into out. */
int trace_merge(struct trace *parts, size_t nparts, struct trace *out);
int trace_write(FILE *f, const struct trace *t);

#pragma GCC visibility pop

#endif
