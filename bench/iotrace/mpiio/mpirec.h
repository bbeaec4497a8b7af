/* mpirec.h - what the parts of the MPI-IO recorder share (mpi_record.c: the
 * data-access and file wrappers; complete.c: the requests' completions;
 * describe.c: args, handle tables, datatypes, communicators, hints;
 * start.c: MPI_Init, the clocks, MPI_Finalize and the gather). They are one
 * library with posix/preload.c (posix/recorder.h); nothing here is
 * exported from it but the MPI_ functions. */
#ifndef IOTRACE_MPIREC_H
#define IOTRACE_MPIREC_H

#include "recorder.h"
#include "trace.h"

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define TLS __thread __attribute__((tls_model("initial-exec")))

extern bool active;               /* recording: between MPI_Init and MPI_Finalize, IOTRACE_DIR set */
extern int world_rank, world_size;
extern TLS int depth;             /* inside one of our wrappers: MPI calls the library makes are not rows */
extern pthread_mutex_t maps;      /* the handle tables */

/* args: key=value;... (docs/iotrace.md), values escaped */
struct args {
    char s[TRACE_ARGS_MAX];
    size_t n;
};
void a_raw(struct args *a, const char *s, size_t n);
void a_key(struct args *a, const char *key);
void a_esc(struct args *a, const char *s);
void a_str(struct args *a, const char *key, const char *v);
void a_num(struct args *a, long long v);
void a_int(struct args *a, const char *key, long long v);
void a_id(struct args *a, const char *key, char prefix, int64_t id);
void a_info(struct args *a, const char *key, MPI_Info info); /* hints: key:value|... */

/* Open addressing on a handle's bits (MPI handles are integers or
 * pointers, at most 8 bytes), deletion by backward shift. */
struct ent {
    uint64_t key;
    int64_t id;
    bool used;
    /* files: their name and the split collective begun on them; requests: their file and call */
    const char *path;
    int64_t file, dtype, count, size;
    enum trace_call call;
    MPI_Datatype dt;
};

struct table {
    struct ent *e;
    size_t cap, n;
    int64_t next;
};
extern struct table types, comms, files, reqs;
#define KEY(h) key_of(&(h), sizeof(h))
uint64_t key_of(const void *h, size_t n);
struct ent *t_find(struct table *t, uint64_t key);
struct ent *t_add(struct table *t, uint64_t key);
void t_del(struct table *t, uint64_t key);

const char *keep(const char *s);                    /* a string kept for the rows (never freed) */
int64_t type_id(MPI_Datatype dt);                   /* tN, its MPI_Type row written once; maps held */
int64_t comm_id(MPI_Comm comm);                     /* cN, its MPI_Comm row written once; maps held */

/* One MPI-IO call (mpi_record.c) */
struct call {
    bool on;
    struct trace_rec r;
    struct args a;
    int64_t prev_parent;
    MPI_Datatype dt;
    long long count; /* an MPI-4 large-count call's too (mpi_record_large.c) */
};
bool call_begin(struct call *c, enum trace_call tc, MPI_File fh, MPI_Datatype dt, long long count, MPI_Offset eoff);
void call_end(struct call *c, int rc, MPI_Status *st);
int64_t remember(struct call *c, MPI_Request req);
#define STATUS_OF(st) MPI_Status own_; MPI_Status *s_ = (st) == MPI_STATUS_IGNORE ? &own_ : (st)

/* A wrapper's body (mpi_record.c, mpi_record_large.c): the row begun, the real call, the row ended. */
#define BLOCKING(tc, fh, dt, count, eoff, st, realcall)                                                  \
    struct call c;                                                                                       \
    if (!call_begin(&c, tc, fh, dt, count, eoff))                                                        \
        return realcall;                                                                                 \
    STATUS_OF(st);                                                                                       \
    (void)own_;                                                                                          \
    st = s_;                                                                                             \
    int rc = realcall;                                                                                   \
    call_end(&c, rc, st);                                                                                \
    return rc

#define NONBLOCKING(tc, fh, dt, count, eoff, req, realcall)                                              \
    struct call c;                                                                                       \
    if (!call_begin(&c, tc, fh, dt, count, eoff))                                                        \
        return realcall;                                                                                 \
    int rc = realcall;                                                                                   \
    int64_t id_ = rc == MPI_SUCCESS ? remember(&c, *(req)) : -1;                                         \
    if (id_ >= 0)                                                                                        \
        a_id(&c.a, "req", 'r', id_);                                                                     \
    call_end(&c, rc, NULL);                                                                              \
    return rc

#define BEGIN(tc, fh, dt, count, eoff, realcall)                                                         \
    struct call c;                                                                                       \
    if (!call_begin(&c, tc, fh, dt, count, eoff))                                                        \
        return realcall;                                                                                 \
    int rc = realcall;                                                                                   \
    call_end(&c, rc, NULL);                                                                              \
    return rc

#pragma GCC visibility pop

#endif
