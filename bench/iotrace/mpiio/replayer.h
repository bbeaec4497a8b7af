/* replayer.h - what the parts of iotrace-mpi-replay-<mpi> share (docs/iotrace.md, "Replaying MPI-IO"):
 * mpi_replay.c (main: the trace, this rank's rows, each call issued and timed), rebuild.c (datatypes,
 * communicators and hints made again from their rows, every number checked first), watch.c (the
 * replay's time bound: where each rank waits when it runs out) and report.c (the tallies gathered
 * on rank 0, the one JSON object). */
#ifndef IOTRACE_REPLAYER_H
#define IOTRACE_REPLAYER_H

#include "hist.h"
#include "trace.h"

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_BUF (1ll << 30) /* one call's buffer */
#define MAX_LISTED 100      /* mismatches listed per rank; all are counted */

extern int me, nranks;

/* An error every rank agrees on: found() keeps the first; agree_or_exit() has the rank that found one
 * print it, then every rank finalizes and exits with status 2. */
void found(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void agree_or_exit(void);
extern char problem[1024];
/* An error one rank cannot share (the others may wait in a collective): it prints it, gives the launcher
 * END_ALL_GRACE_MS to pass it on, then MPI_Abort ends every rank with status code. */
#define END_ALL_GRACE_MS 300
_Noreturn void end_all(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A row's arguments: the value of key (%XX unescaped); an integer (dflt where absent or not one, *ok
 * false where present and not one); an id "t3"/"c1"/"r5" with its prefix (-1 where absent). */
const char *arg(const struct trace_rec *r, const char *key, char *buf, size_t n);
long long arg_int(const struct trace_rec *r, const char *key, long long dflt);
long long arg_id(const struct trace_rec *r, const char *key, char prefix);

/* Handles by the trace's ids, one table per kind. */
struct id_map {
    long long *ids;
    void *h;
    size_t n, cap, size;
};
void *map_get(struct id_map *m, long long id);
void *map_put(struct id_map *m, long long id);
extern struct id_map types, comms;

void rebuild_init(void);                       /* errors returned, not fatal, on what the replay makes */
void define_type(const struct trace_rec *r);   /* an MPI_Type row made again, or found() */
void define_comm(const struct trace_rec *r);   /* an MPI_Comm row made again, by its members */
MPI_Datatype type_of(const struct trace_rec *r, const char *key);
MPI_Info info_of(const struct trace_rec *r, const char *key);
void free_rebuilt(void);                       /* before MPI_Finalize */
/* The bytes a call's buffer spans for count items of t (from the true lower bound, extents may be
 * negative), and where in it the call's pointer goes: -1 where it overflows or passes MAX_BUF. */
long long type_span(MPI_Datatype t, long long count, long long *ptr_at);

/* The time bound: watch_start() starts a thread that, seconds after it is called, prints where this
 * rank is (watch_at) and ends it. */
void watch_start(unsigned seconds);
void watch_at(size_t line, const char *what);

/* The tallies, by call and class, and the mismatches: report() gathers them on rank 0 and prints. */
struct tally {
    unsigned long long count, bytes, moved_rec, moved_rep, rec_ns, rep_ns;
};
struct mismatch {
    long long seq;
    int rank;
    long long moved_rec, moved_rep;
    int ret_rec, ret_rep;
};
extern struct tally tally[TC_NCALLS];
extern struct hist cls[TCL_N];
extern unsigned long long cls_moved[TCL_N];
extern struct mismatch mism[MAX_LISTED];
extern long long nmism;
extern double coll_ns[TC_NCALLS];
void report(const struct trace *t, const char *path, const char *dir, const char *timing, uint64_t wall,
            uint64_t rank_ns, long long outside);

#endif
