/*
 * replay.c - iotrace-mpi-replay-<mpi>: an MPI program that replays a trace
 * recorded under MPI (docs/iotrace.md, "Replaying MPI-IO"). `iotrace
 * replay --launcher` starts it under the launcher, one build per MPI.
 *
 * Rank 0 reads the trace and broadcasts it, so other hosts need not see it.
 * Every rank takes its own rows: its MPI-IO calls, their completions, and
 * the POSIX calls it made itself (not those the MPI library made inside an
 * MPI-IO call: the library makes them again). Datatypes are rebuilt from
 * the MPI_Type rows (their combiners and MPI_Type_get_contents' arrays) and
 * checked against the recorded size; communicators from the MPI_Comm rows
 * (MPI_Comm_create_group over their world ranks); views, hints and the
 * requests of nonblocking calls as recorded. Files are DIR/f<id>. Each call
 * is timed alone; --timing recorded keeps the recorded gap between a
 * rank's calls. Rank 0 gathers the tallies and prints one JSON object.
 *
 * usage: iotrace-mpi-replay-<mpi> TRACE --dir DIR [--timing asap|recorded] [--started FILE]
 */
#include "hist.h"
#include "trace.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_BUF (1ll << 30)
#define MAX_LISTED 100

static int me, nranks;
static const char *dir;
static struct trace T;

static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An error every rank agrees on: printed by the rank that found it (rank 0
 * prints its own), then all finalize and exit with status 2. */
static char problem[1024];

__attribute__((format(printf, 1, 2))) static void found(const char *fmt, ...)
{
    if (problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
}

static void agree_or_exit(void)
{
    int bad = problem[0] != '\0', any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any)
        return;
    if (bad)
        fprintf(stderr, "iotrace: error: %s\n", problem);
    MPI_Finalize();
    exit(2);
}

/* ----------------------------------------------------- args and lists */

static int unhex(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; }

static void unescape(char *dst, size_t n, const char *src);

/* The value of key, %XX unescaped. */
static const char *arg(const struct trace_rec *r, const char *key, char *buf, size_t n)
{
    char raw[TRACE_ARGS_MAX];
    trace_arg(r->args, key, raw, sizeof raw);
    unescape(buf, n, raw);
    return buf;
}

static long long arg_int(const struct trace_rec *r, const char *key, long long dflt)
{
    char v[64];
    trace_arg(r->args, key, v, sizeof v);
    if (!v[0])
        return dflt;
    char *end;
    long long x = strtoll(v, &end, 10);
    return *end ? dflt : x;
}

/* "t3" / "c1" / "r5" -> 3, or -1. */
static long long arg_id(const struct trace_rec *r, const char *key, char prefix)
{
    char v[64];
    trace_arg(r->args, key, v, sizeof v);
    if (v[0] != prefix || !v[1])
        return -1;
    char *end;
    long long x = strtoll(v + 1, &end, 10);
    return *end || x < 0 ? -1 : x;
}

/* Space-separated integers into a new array; *n their number. */
static long long *ints_of(const char *s, int *n)
{
    int cap = 8, k = 0;
    long long *v = malloc((size_t)cap * sizeof *v);
    for (const char *p = s; v && *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        char *end;
        long long x = strtoll(p, &end, 10);
        if (end == p) {
            free(v);
            return NULL;
        }
        if (k == cap)
            v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        if (v)
            v[k++] = x;
        p = end;
    }
    *n = k;
    return v;
}

/* ------------------------------------------------------- datatypes */

struct id_map {
    long long *ids;
    void *h; /* handles */
    size_t n, cap, size;
};

static void *map_get(struct id_map *m, long long id)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->ids[i] == id)
            return (char *)m->h + i * m->size;
    return NULL;
}

static void *map_put(struct id_map *m, long long id)
{
    void *old = map_get(m, id);
    if (old)
        return old;
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 16;
        m->ids = realloc(m->ids, m->cap * sizeof *m->ids);
        m->h = realloc(m->h, m->cap * m->size);
        if (!m->ids || !m->h) {
            fprintf(stderr, "iotrace: error: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    m->ids[m->n] = id;
    return (char *)m->h + m->n++ * m->size;
}

static struct id_map types = {.size = sizeof(MPI_Datatype)}, comms = {.size = sizeof(MPI_Comm)},
                     files = {.size = sizeof(MPI_File)}, reqs = {.size = sizeof(MPI_Request)},
                     rbufs = {.size = sizeof(char *)}, rtypes = {.size = sizeof(MPI_Datatype)},
                     early = {.size = sizeof(MPI_Status)}, /* requests a done=0 test completed early */
                     rclass = {.size = sizeof(int)};       /* the class of the call that started a request */

/* The derived datatypes rebuilt, freed before MPI_Finalize (MPICH names the ones left). */
static void free_types(void)
{
    for (size_t i = 0; i < types.n; i++) {
        MPI_Datatype *t = (MPI_Datatype *)((char *)types.h + i * types.size);
        int ni, na, nd, comb;
        if (MPI_Type_get_envelope(*t, &ni, &na, &nd, &comb) == MPI_SUCCESS && comb != MPI_COMBINER_NAMED)
            MPI_Type_free(t);
    }
}

static MPI_Datatype named(const char *name)
{
#define N(t) {#t, t}
    static const struct {
        const char *name;
        MPI_Datatype t;
    } tab[] = {
        N(MPI_CHAR), N(MPI_SIGNED_CHAR), N(MPI_UNSIGNED_CHAR), N(MPI_BYTE), N(MPI_SHORT), N(MPI_UNSIGNED_SHORT),
        N(MPI_INT), N(MPI_UNSIGNED), N(MPI_LONG), N(MPI_UNSIGNED_LONG), N(MPI_LONG_LONG_INT), N(MPI_LONG_LONG),
        N(MPI_UNSIGNED_LONG_LONG), N(MPI_FLOAT), N(MPI_DOUBLE), N(MPI_LONG_DOUBLE), N(MPI_WCHAR), N(MPI_C_BOOL),
        N(MPI_INT8_T), N(MPI_INT16_T), N(MPI_INT32_T), N(MPI_INT64_T), N(MPI_UINT8_T), N(MPI_UINT16_T),
        N(MPI_UINT32_T), N(MPI_UINT64_T), N(MPI_C_FLOAT_COMPLEX), N(MPI_C_DOUBLE_COMPLEX), N(MPI_AINT),
        N(MPI_OFFSET), N(MPI_COUNT), N(MPI_PACKED), N(MPI_FLOAT_INT), N(MPI_DOUBLE_INT), N(MPI_LONG_INT),
        N(MPI_2INT), N(MPI_SHORT_INT), N(MPI_LONG_DOUBLE_INT), N(MPI_CHARACTER), N(MPI_INTEGER), N(MPI_REAL),
        N(MPI_DOUBLE_PRECISION), N(MPI_LOGICAL), N(MPI_COMPLEX), N(MPI_DOUBLE_COMPLEX),
    };
#undef N
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(tab[i].name, name))
            return tab[i].t;
    return MPI_DATATYPE_NULL;
}

static int to_order(long long v) { return v == 1 ? MPI_ORDER_FORTRAN : MPI_ORDER_C; }
static int to_dist(long long v)
{
    return v == 1 ? MPI_DISTRIBUTE_CYCLIC : v == 2 ? MPI_DISTRIBUTE_NONE : MPI_DISTRIBUTE_BLOCK;
}

/* An MPI_Type row rebuilt; a problem found where it cannot be. */
static void define_type(const struct trace_rec *r)
{
    long long id = arg_id(r, "id", 't'), want = arg_int(r, "size", -1);
    char comb[64], name[128], buf[TRACE_ARGS_MAX];
    arg(r, "comb", comb, sizeof comb);
    arg(r, "named", name, sizeof name);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int rc = MPI_SUCCESS;
    if (id < 0)
        return found("line %zu: an MPI_Type row without its id", (size_t)r->seq + 3);
    if (name[0]) {
        t = named(name);
        if (t == MPI_DATATYPE_NULL && want > 0) /* a predefined type this MPI lacks: its bytes */
            rc = MPI_Type_contiguous((int)want, MPI_BYTE, &t);
        else if (t == MPI_DATATYPE_NULL)
            return found("line %zu: datatype t%lld: the predefined type %s is not in this MPI", (size_t)r->seq + 3,
                         id, name);
        *(MPI_Datatype *)map_put(&types, id) = t;
        if (t != named(name))
            MPI_Type_commit((MPI_Datatype *)map_get(&types, id));
        return;
    }
    int ni = 0, na = 0, nd = 0;
    long long *iv = ints_of(arg(r, "ints", buf, sizeof buf), &ni);
    long long *av = ints_of(arg(r, "addrs", buf, sizeof buf), &na);
    arg(r, "types", buf, sizeof buf);
    MPI_Datatype dv[64];
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && nd < 64; w = strtok_r(NULL, " ", &save)) {
        MPI_Datatype *x = w[0] == 't' ? map_get(&types, strtoll(w + 1, NULL, 10)) : NULL;
        if (!x) {
            free(iv), free(av);
            return found("line %zu: datatype t%lld names %s, which no earlier MPI_Type row defines",
                         (size_t)r->seq + 3, id, w);
        }
        dv[nd++] = *x;
    }
    int *I = malloc((size_t)(ni + 1) * sizeof *I);
    MPI_Aint *A = malloc((size_t)(na + 1) * sizeof *A);
    for (int i = 0; I && i < ni; i++)
        I[i] = (int)iv[i];
    for (int i = 0; A && i < na; i++)
        A[i] = (MPI_Aint)av[i];
    bool ok = iv && av && I && A && nd >= 1;
#define NEED(ni_, na_) (ok && ni >= (ni_) && na >= (na_))
    if (!strcmp(comb, "dup") && ok)
        rc = MPI_Type_dup(dv[0], &t);
    else if (!strcmp(comb, "contiguous") && NEED(1, 0))
        rc = MPI_Type_contiguous(I[0], dv[0], &t);
    else if (!strcmp(comb, "vector") && NEED(3, 0))
        rc = MPI_Type_vector(I[0], I[1], I[2], dv[0], &t);
    else if (!strcmp(comb, "hvector") && NEED(2, 1))
        rc = MPI_Type_create_hvector(I[0], I[1], A[0], dv[0], &t);
    else if (!strcmp(comb, "indexed") && NEED(1, 0) && ni >= 1 + 2 * I[0])
        rc = MPI_Type_indexed(I[0], I + 1, I + 1 + I[0], dv[0], &t);
    else if (!strcmp(comb, "hindexed") && NEED(1, 0) && ni >= 1 + I[0] && na >= I[0])
        rc = MPI_Type_create_hindexed(I[0], I + 1, A, dv[0], &t);
    else if (!strcmp(comb, "indexed_block") && NEED(2, 0) && ni >= 2 + I[0])
        rc = MPI_Type_create_indexed_block(I[0], I[1], I + 2, dv[0], &t);
    else if (!strcmp(comb, "hindexed_block") && NEED(2, 0) && na >= I[0])
        rc = MPI_Type_create_hindexed_block(I[0], I[1], A, dv[0], &t);
    else if (!strcmp(comb, "struct") && NEED(1, 0) && ni >= 1 + I[0] && na >= I[0] && nd >= I[0])
        rc = MPI_Type_create_struct(I[0], I + 1, A, dv, &t);
    else if (!strcmp(comb, "subarray") && NEED(1, 0) && ni >= 2 + 3 * I[0])
        rc = MPI_Type_create_subarray(I[0], I + 1, I + 1 + I[0], I + 1 + 2 * I[0], to_order(I[1 + 3 * I[0]]), dv[0],
                                      &t);
    else if (!strcmp(comb, "darray") && NEED(3, 0) && ni >= 4 + 4 * I[2]) {
        int nd_ = I[2];
        for (int d = 0; d < nd_; d++) {
            I[3 + nd_ + d] = to_dist(I[3 + nd_ + d]);
            if (I[3 + 2 * nd_ + d] == -1)
                I[3 + 2 * nd_ + d] = MPI_DISTRIBUTE_DFLT_DARG;
        }
        rc = MPI_Type_create_darray(I[0], I[1], nd_, I + 3, I + 3 + nd_, I + 3 + 2 * nd_, I + 3 + 3 * nd_,
                                    to_order(I[3 + 4 * nd_]), dv[0], &t);
    } else if (!strcmp(comb, "resized") && NEED(0, 2))
        rc = MPI_Type_create_resized(dv[0], A[0], A[1], &t);
    else
        rc = MPI_ERR_TYPE;
#undef NEED
    free(iv), free(av), free(I), free(A);
    int size = -1;
    if (rc == MPI_SUCCESS && t != MPI_DATATYPE_NULL)
        rc = MPI_Type_commit(&t);
    if (rc == MPI_SUCCESS)
        MPI_Type_size(t, &size);
    if (rc != MPI_SUCCESS || t == MPI_DATATYPE_NULL)
        return found("line %zu: datatype t%lld (%s) cannot be rebuilt from its row", (size_t)r->seq + 3, id,
                     comb[0] ? comb : "no combiner");
    if (want >= 0 && size != want)
        return found("line %zu: datatype t%lld (%s) rebuilt has %d bytes, the recorded one %lld", (size_t)r->seq + 3,
                     id, comb, size, want);
    *(MPI_Datatype *)map_put(&types, id) = t;
}

static MPI_Datatype type_of(const struct trace_rec *r, const char *key)
{
    long long id = arg_id(r, key, 't');
    MPI_Datatype *t = id >= 0 ? map_get(&types, id) : NULL;
    return t ? *t : MPI_DATATYPE_NULL;
}

/* --------------------------------------------------------- the rest */

static void define_comm(const struct trace_rec *r)
{
    long long id = arg_id(r, "id", 'c');
    char buf[TRACE_ARGS_MAX];
    arg(r, "ranks", buf, sizeof buf);
    int *ranks = malloc(((size_t)nranks + 1) * sizeof *ranks), n = 0;
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && ranks; w = strtok_r(NULL, " ", &save)) {
        long a = strtol(w, NULL, 10), b = a;
        char *dash = strchr(w, '-');
        if (dash)
            b = strtol(dash + 1, NULL, 10);
        for (long x = a; x <= b && n < nranks; x++)
            ranks[n++] = (int)x;
    }
    MPI_Group world, g;
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, ranks, &g);
    if (MPI_Comm_create_group(MPI_COMM_WORLD, g, (int)(id & 0x7fff), &c) != MPI_SUCCESS)
        found("line %zu: communicator c%lld could not be made again", (size_t)r->seq + 3, id);
    MPI_Group_free(&g);
    MPI_Group_free(&world);
    free(ranks);
    *(MPI_Comm *)map_put(&comms, id) = c;
}

/* src with its %XX escapes undone, into dst (n bytes). */
static void unescape(char *dst, size_t n, const char *src)
{
    size_t k = 0;
    for (size_t i = 0; src[i] && k + 1 < n; i++) {
        if (src[i] == '%' && unhex(src[i + 1]) >= 0 && unhex(src[i + 2]) >= 0) {
            dst[k++] = (char)(unhex(src[i + 1]) << 4 | unhex(src[i + 2]));
            i += 2;
        } else {
            dst[k++] = src[i];
        }
    }
    dst[k] = '\0';
}

/* Hints as recorded: key:value|key:value, each escaped. */
static MPI_Info info_of(const struct trace_rec *r, const char *key)
{
    char raw[TRACE_ARGS_MAX];
    trace_arg(r->args, key, raw, sizeof raw);
    if (!raw[0])
        return MPI_INFO_NULL;
    MPI_Info info;
    MPI_Info_create(&info);
    for (char *save = NULL, *kv = strtok_r(raw, "|", &save); kv; kv = strtok_r(NULL, "|", &save)) {
        char *colon = strchr(kv, ':');
        if (!colon)
            continue;
        *colon = '\0';
        char k[MPI_MAX_INFO_KEY + 1], v[MPI_MAX_INFO_VAL + 1];
        unescape(k, sizeof k, kv);
        unescape(v, sizeof v, colon + 1);
        MPI_Info_set(info, k, v);
    }
    return info;
}

struct tally {
    unsigned long long count, bytes, moved_rec, moved_rep, rec_ns, rep_ns;
};

struct mismatch {
    long long seq;
    int rank;
    long long moved_rec, moved_rep;
    int ret_rec, ret_rep;
};

static struct tally tally[TC_NCALLS];
static struct hist cls[TCL_N]; /* each call's replayed time, by class (a completion: its request's) */
static unsigned long long cls_moved[TCL_N]; /* bytes moved, by class */
static struct mismatch mism[MAX_LISTED];
static long long nmism;
/* per collective call type, the ranks' time in it, for the slowest rank of each */
static double *coll_ns; /* [TC_NCALLS] this rank's total */

/* A call's buffer: count x the datatype's extent (or the bytes, if more), filled with the rank's byte.
 * Blocking calls share one buffer, grown and filled only when a call needs more, so the replay does
 * not spend its time between calls filling memory; a nonblocking or split call has its own until its
 * completion (own: set when the caller must free it). */
static char *buffer(long long bytes, MPI_Datatype t, int count, bool keep, bool *own)
{
    static char *shared;
    static long long shared_size;
    MPI_Aint lb = 0, extent = 0;
    if (t != MPI_DATATYPE_NULL)
        MPI_Type_get_extent(t, &lb, &extent);
    long long need = (long long)count * (extent > 0 ? (long long)extent : 1) + (lb > 0 ? lb : 0);
    if (need < bytes)
        need = bytes;
    if (need > MAX_BUF)
        return NULL;
    *own = keep;
    if (!keep && need <= shared_size)
        return shared;
    char *b = malloc((size_t)need + 1);
    if (b)
        memset(b, 0x5a ^ me, (size_t)need + 1);
    if (!keep && b) {
        free(shared);
        shared = b, shared_size = need;
    }
    return b;
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

/* One MPI row of this rank, issued and timed. */
static void replay_mpi(const struct trace_rec *r)
{
    const struct trace_call_info *ci = &trace_calls[r->call];
    MPI_File *fh = r->fd >= 0 ? map_get(&files, r->fd) : NULL;
    MPI_Datatype dt = type_of(r, "dtype");
    int count = (int)arg_int(r, "count", 0);
    MPI_Offset off = (MPI_Offset)arg_int(r, "eoff", 0);
    MPI_Status st;
    MPI_Request *rq = NULL;
    char *buf = NULL, path[PATH_MAX];
    bool own = false;
    int ret = MPI_SUCCESS;
    long long moved = -1;
    if (ci->kind != TK_MPI_OPEN && ci->kind != TK_MPI_WAIT && r->call != TC_MPI_FILE_DELETE && !fh) {
        found("line %zu: %s on file handle %lld, which no replayed open made", (size_t)r->seq + 3, ci->name,
              (long long)r->fd);
        return;
    }
    if (ci->kind == TK_MPI_READ || ci->kind == TK_MPI_WRITE) {
        if (ci->split == 2) {
            char **held = map_get(&rbufs, -1 - r->fd);
            buf = held ? *held : NULL;
        } else {
            buf = buffer(r->bytes, dt, count, ci->nonblocking || ci->split == 1, &own);
            if (!buf) {
                found("line %zu: %s moves more than 1 GiB", (size_t)r->seq + 3, ci->name);
                return;
            }
        }
    }
    if (ci->nonblocking) {
        long long id = arg_id(r, "req", 'r');
        rq = map_put(&reqs, id);
        *(char **)map_put(&rbufs, id) = buf;
        *(MPI_Datatype *)map_put(&rtypes, id) = dt;
        *(int *)map_put(&rclass, id) = (int)trace_class_of(r->call);
    }
    MPI_Info info = MPI_INFO_NULL;
    MPI_Datatype et = MPI_DATATYPE_NULL, ft = MPI_DATATYPE_NULL;
    MPI_Comm *comm = NULL;
    if (ci->kind == TK_MPI_OPEN) {
        snprintf(path, sizeof path, "%s/f%lld", dir, (long long)r->file);
        comm = map_get(&comms, arg_id(r, "comm", 'c'));
        if (!comm) {
            found("line %zu: MPI_File_open on a communicator no MPI_Comm row defines", (size_t)r->seq + 3);
            return;
        }
        info = info_of(r, "info");
    } else if (r->call == TC_MPI_FILE_DELETE) {
        snprintf(path, sizeof path, "%s/f%lld", dir, (long long)r->file);
        info = info_of(r, "info");
    } else if (r->call == TC_MPI_FILE_SET_VIEW || r->call == TC_MPI_FILE_SET_INFO) {
        info = info_of(r, "info");
        et = type_of(r, "etype"), ft = type_of(r, "ftype");
    }
    char datarep[64];
    arg(r, "datarep", datarep, sizeof datarep);
    MPI_Request *done = NULL;
    long long done_id = -1;
    if (ci->kind == TK_MPI_WAIT) {
        done_id = arg_id(r, "req", 'r');
        done = done_id >= 0 ? map_get(&reqs, done_id) : NULL;
        if (!done) {
            found("line %zu: %s completes request r%lld, which no replayed call started", (size_t)r->seq + 3, ci->name,
                  done_id);
            return;
        }
    }
    MPI_File f = fh ? *fh : MPI_FILE_NULL;

    uint64_t t0 = now();
    switch (r->call) {
    case TC_MPI_FILE_OPEN: ret = MPI_File_open(*comm, path, (int)r->flags, info, &f); break;
    case TC_MPI_FILE_CLOSE: ret = MPI_File_close(&f); break;
    case TC_MPI_FILE_DELETE: ret = MPI_File_delete(path, info); break;
    case TC_MPI_FILE_SET_SIZE: ret = MPI_File_set_size(f, (MPI_Offset)r->offset); break;
    case TC_MPI_FILE_PREALLOCATE: ret = MPI_File_preallocate(f, (MPI_Offset)r->offset); break;
    case TC_MPI_FILE_GET_SIZE: { MPI_Offset s; ret = MPI_File_get_size(f, &s); break; }
    case TC_MPI_FILE_SET_VIEW:
        ret = MPI_File_set_view(f, (MPI_Offset)arg_int(r, "disp", 0), et, ft, datarep[0] ? datarep : "native", info);
        break;
    case TC_MPI_FILE_SEEK: ret = MPI_File_seek(f, off, (int)r->flags); break;
    case TC_MPI_FILE_SEEK_SHARED: ret = MPI_File_seek_shared(f, off, (int)r->flags); break;
    case TC_MPI_FILE_SYNC: ret = MPI_File_sync(f); break;
    case TC_MPI_FILE_SET_ATOMICITY: ret = MPI_File_set_atomicity(f, (int)arg_int(r, "flag", 0)); break;
    case TC_MPI_FILE_SET_INFO: ret = MPI_File_set_info(f, info); break;
    case TC_MPI_FILE_READ_AT: ret = MPI_File_read_at(f, off, buf, count, dt, &st); break;
    case TC_MPI_FILE_READ_AT_ALL: ret = MPI_File_read_at_all(f, off, buf, count, dt, &st); break;
    case TC_MPI_FILE_WRITE_AT: ret = MPI_File_write_at(f, off, buf, count, dt, &st); break;
    case TC_MPI_FILE_WRITE_AT_ALL: ret = MPI_File_write_at_all(f, off, buf, count, dt, &st); break;
    case TC_MPI_FILE_IREAD_AT: ret = MPI_File_iread_at(f, off, buf, count, dt, rq); break;
    case TC_MPI_FILE_IREAD_AT_ALL: ret = MPI_File_iread_at_all(f, off, buf, count, dt, rq); break;
    case TC_MPI_FILE_IWRITE_AT: ret = MPI_File_iwrite_at(f, off, buf, count, dt, rq); break;
    case TC_MPI_FILE_IWRITE_AT_ALL: ret = MPI_File_iwrite_at_all(f, off, buf, count, dt, rq); break;
    case TC_MPI_FILE_READ_AT_ALL_BEGIN: ret = MPI_File_read_at_all_begin(f, off, buf, count, dt); break;
    case TC_MPI_FILE_READ_AT_ALL_END: ret = MPI_File_read_at_all_end(f, buf, &st); break;
    case TC_MPI_FILE_WRITE_AT_ALL_BEGIN: ret = MPI_File_write_at_all_begin(f, off, buf, count, dt); break;
    case TC_MPI_FILE_WRITE_AT_ALL_END: ret = MPI_File_write_at_all_end(f, buf, &st); break;
    case TC_MPI_FILE_READ: ret = MPI_File_read(f, buf, count, dt, &st); break;
    case TC_MPI_FILE_READ_ALL: ret = MPI_File_read_all(f, buf, count, dt, &st); break;
    case TC_MPI_FILE_WRITE: ret = MPI_File_write(f, buf, count, dt, &st); break;
    case TC_MPI_FILE_WRITE_ALL: ret = MPI_File_write_all(f, buf, count, dt, &st); break;
    case TC_MPI_FILE_IREAD: ret = MPI_File_iread(f, buf, count, dt, rq); break;
    case TC_MPI_FILE_IREAD_ALL: ret = MPI_File_iread_all(f, buf, count, dt, rq); break;
    case TC_MPI_FILE_IWRITE: ret = MPI_File_iwrite(f, buf, count, dt, rq); break;
    case TC_MPI_FILE_IWRITE_ALL: ret = MPI_File_iwrite_all(f, buf, count, dt, rq); break;
    case TC_MPI_FILE_READ_ALL_BEGIN: ret = MPI_File_read_all_begin(f, buf, count, dt); break;
    case TC_MPI_FILE_READ_ALL_END: ret = MPI_File_read_all_end(f, buf, &st); break;
    case TC_MPI_FILE_WRITE_ALL_BEGIN: ret = MPI_File_write_all_begin(f, buf, count, dt); break;
    case TC_MPI_FILE_WRITE_ALL_END: ret = MPI_File_write_all_end(f, buf, &st); break;
    case TC_MPI_FILE_READ_SHARED: ret = MPI_File_read_shared(f, buf, count, dt, &st); break;
    case TC_MPI_FILE_WRITE_SHARED: ret = MPI_File_write_shared(f, buf, count, dt, &st); break;
    case TC_MPI_FILE_IREAD_SHARED: ret = MPI_File_iread_shared(f, buf, count, dt, rq); break;
    case TC_MPI_FILE_IWRITE_SHARED: ret = MPI_File_iwrite_shared(f, buf, count, dt, rq); break;
    case TC_MPI_FILE_READ_ORDERED: ret = MPI_File_read_ordered(f, buf, count, dt, &st); break;
    case TC_MPI_FILE_WRITE_ORDERED: ret = MPI_File_write_ordered(f, buf, count, dt, &st); break;
    case TC_MPI_FILE_READ_ORDERED_BEGIN: ret = MPI_File_read_ordered_begin(f, buf, count, dt); break;
    case TC_MPI_FILE_READ_ORDERED_END: ret = MPI_File_read_ordered_end(f, buf, &st); break;
    case TC_MPI_FILE_WRITE_ORDERED_BEGIN: ret = MPI_File_write_ordered_begin(f, buf, count, dt); break;
    case TC_MPI_FILE_WRITE_ORDERED_END: ret = MPI_File_write_ordered_end(f, buf, &st); break;
    default: /* the completions: each recorded one completes its own request; a test recorded as completing
              * none (done=0: the MPI library progressed it there) tests it once */
        if (arg_int(r, "done", 1) == 0) {
            int flag = 0;
            ret = *done == MPI_REQUEST_NULL ? MPI_SUCCESS : MPI_Test(done, &flag, &st);
            if (flag)
                *(MPI_Status *)map_put(&early, done_id) = st;
        } else if (*done == MPI_REQUEST_NULL && map_get(&early, done_id)) {
            st = *(MPI_Status *)map_get(&early, done_id);
        } else {
            ret = MPI_Wait(done, &st);
        }
        break;
    }
    uint64_t t1 = now();

    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    bool blocking_data = (ci->kind == TK_MPI_READ || ci->kind == TK_MPI_WRITE) && !ci->nonblocking && ci->split != 1;
    if (ret == MPI_SUCCESS && blocking_data)
        moved = moved_of(&st, ci->split == 2 ? type_of(r, "dtype") : dt);
    if (ci->kind == TK_MPI_WAIT && ret == MPI_SUCCESS && arg_int(r, "done", 1)) { /* moved: against its type */
        MPI_Datatype *rt = map_get(&rtypes, done_id);
        moved = rt ? moved_of(&st, *rt) : -1;
        char **held = map_get(&rbufs, done_id);
        if (held) {
            free(*held);
            *held = NULL;
        }
    }
    if (ci->kind == TK_MPI_OPEN && ret == MPI_SUCCESS)
        *(MPI_File *)map_put(&files, r->fd) = f;
    if (ci->split == 1)
        *(char **)map_put(&rbufs, -1 - r->fd) = buf; /* the _end uses the _begin's buffer */
    else if (ci->split == 2 && buf) {
        free(buf);
        *(char **)map_put(&rbufs, -1 - r->fd) = NULL;
    } else if (own && !ci->nonblocking)
        free(buf);
    int *started_as = ci->kind == TK_MPI_WAIT ? map_get(&rclass, done_id) : NULL;
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

/* A POSIX call this rank made itself, on DIR/f<id>, in order. */
static int posix_fd[4096];

static void replay_posix(const struct trace_rec *r)
{
    const struct trace_call_info *ci = &trace_calls[r->call];
    char path[PATH_MAX];
    int fd = r->fd >= 0 && r->fd < 4096 ? posix_fd[r->fd] : -1;
    long long ret = -1;
    char *buf = (ci->kind == TK_READ || ci->kind == TK_WRITE) && r->bytes >= 0 && r->bytes <= MAX_BUF
                    ? calloc(1, (size_t)r->bytes + 1)
                    : NULL;
    uint64_t t0 = now();
    switch (ci->kind) {
    case TK_OPEN:
        snprintf(path, sizeof path, "%s/f%lld", dir, (long long)r->file);
        ret = open(path, (int)r->flags, (mode_t)r->mode);
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

static void json_tally(const char *name, const struct tally *x, bool comma)
{
    printf("%s\"%s\": {\"count\": %llu, \"bytes\": %llu, \"moved_recorded\": %llu, \"moved_replayed\": %llu, "
           "\"recorded_ns\": %llu, \"replayed_ns\": %llu}",
           comma ? ", " : "", name, x->count, x->bytes, x->moved_rec, x->moved_rep, x->rec_ns, x->rep_ns);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const char *path = NULL, *timing = "asap", *mark = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--started") && i + 1 < argc)
            mark = argv[++i];
        else if (!strcmp(argv[i], "--timing") && i + 1 < argc)
            timing = argv[++i];
        else if (!path && argv[i][0] != '-')
            path = argv[i];
        else
            found("unknown argument '%s' (iotrace-mpi-replay TRACE --dir DIR [--timing asap|recorded] [--started "
              "FILE])", argv[i]);
    }
    if (me == 0 && mark) { /* iotrace replay waits for it to know that the launcher started every rank */
        int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
    }
    if (!path || !dir)
        found("usage: iotrace-mpi-replay TRACE --dir DIR [--timing asap|recorded]");
    else if (strcmp(timing, "asap") && strcmp(timing, "recorded"))
        found("--timing %s: asap or recorded", timing);
    agree_or_exit();

    /* rank 0 reads, everyone parses the same bytes */
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
            text = malloc((size_t)len + 1);
            if (!text || fread(text, 1, (size_t)len, f) != (size_t)len)
                found("%s: cannot read", path);
            fclose(f);
        }
    }
    agree_or_exit();
    MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (me)
        text = malloc((size_t)len + 1);
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
    int recorded = 0;
    for (size_t i = 0; i < T.n; i++)
        if (trace_calls[T.rec[i].call].kind == TK_MPI_INIT)
            recorded++;
    if (!recorded)
        found("%s: no MPI_Init row: the trace was not recorded under MPI (replay it with iotrace replay)", path);
    else if (recorded != nranks)
        found("%s: the trace has %d ranks; replaying with %d is not possible (each recorded rank replays in a rank "
              "of its own: start the launcher with %d)", path, recorded, nranks, recorded);
    agree_or_exit();

    for (int i = 0; i < 4096; i++)
        posix_fd[i] = -1;
    coll_ns = calloc(TC_NCALLS, sizeof *coll_ns);
    for (int c = 0; c < TCL_N; c++)
        hist_clear(&cls[c]);
    /* this rank's rows */
    size_t *mine = malloc((T.n + 1) * sizeof *mine), n = 0;
    for (size_t i = 0; i < T.n; i++) {
        const struct trace_rec *r = &T.rec[i];
        const struct trace_call_info *ci = &trace_calls[r->call];
        if (r->rank != me || ci->kind == TK_MPI_INIT || ci->kind == TK_MPI_FINALIZE)
            continue;
        if (!ci->mpi && r->parent >= 0)
            continue; /* the MPI library's own POSIX calls: it makes them again */
        mine[n++] = i;
    }
    for (size_t k = 0; k < n; k++) /* datatypes first: all or none (before anything is timed) */
        if (T.rec[mine[k]].call == TC_MPI_TYPE)
            define_type(&T.rec[mine[k]]);
    agree_or_exit();

    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t start = now(), prev_rep_end = start, prev_rec_end = 0;
    for (size_t k = 0; k < n && !problem[0]; k++) {
        const struct trace_rec *r = &T.rec[mine[k]];
        if (r->call == TC_MPI_TYPE)
            continue;
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
        if (trace_calls[r->call].mpi)
            replay_mpi(r);
        else
            replay_posix(r);
        prev_rec_end = r->t_end;
        prev_rep_end = now();
    }
    if (problem[0]) { /* a rank that stopped leaves the others in a collective: end them all */
        fprintf(stderr, "iotrace: error: rank %d: %s\n", me, problem);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    uint64_t mine_end = now();
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t wall = now() - start, rank_ns = mine_end - start;

    /* rank 0 gathers: tallies summed, each rank's time, the slowest rank per collective call */
    struct hist cls_all[TCL_N];
    unsigned long long all_moved[TCL_N];
    MPI_Reduce(cls_moved, all_moved, TCL_N, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int c = 0; c < TCL_N; c++) {
        hist_clear(&cls_all[c]);
        uint64_t mine[2] = {cls[c].count, cls[c].sum}, got[2] = {0, 0};
        MPI_Reduce(cls[c].b, cls_all[c].b, HIST_BUCKETS, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(mine, got, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&cls[c].min, &cls_all[c].min, 1, MPI_UINT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&cls[c].max, &cls_all[c].max, 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
        cls_all[c].count = got[0], cls_all[c].sum = got[1];
    }
    struct tally sum[TC_NCALLS];
    MPI_Reduce(tally, sum, (int)(TC_NCALLS * sizeof(struct tally) / sizeof(unsigned long long)),
               MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    unsigned long long *rank_times = me == 0 ? calloc((size_t)nranks, sizeof *rank_times) : NULL;
    unsigned long long rt = rank_ns;
    MPI_Gather(&rt, 1, MPI_UNSIGNED_LONG_LONG, rank_times, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    char host[64] = "", *hosts = me == 0 ? calloc((size_t)nranks, sizeof host) : NULL;
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++) /* a host name is letters, digits, '-' and '.'; anything else is not JSON-safe */
        if (!(isalnum((unsigned char)*c) || *c == '-' || *c == '.'))
            *c = '?';
    MPI_Gather(host, sizeof host, MPI_CHAR, hosts, sizeof host, MPI_CHAR, 0, MPI_COMM_WORLD);
    double *coll_all = me == 0 ? calloc((size_t)nranks * TC_NCALLS, sizeof *coll_all) : NULL;
    MPI_Gather(coll_ns, TC_NCALLS, MPI_DOUBLE, coll_all, TC_NCALLS, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    long long total_mism = 0;
    MPI_Reduce(&nmism, &total_mism, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    int listed = (int)(nmism < MAX_LISTED ? nmism : MAX_LISTED), *counts = NULL, *displs = NULL;
    struct mismatch *all = NULL;
    if (me == 0) {
        counts = calloc((size_t)nranks, sizeof *counts), displs = calloc((size_t)nranks, sizeof *displs);
    }
    MPI_Gather(&listed, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int bytes_per = (int)sizeof(struct mismatch), total_listed = 0;
    if (me == 0) {
        for (int i = 0; i < nranks; i++) {
            displs[i] = total_listed * bytes_per;
            total_listed += counts[i];
            counts[i] *= bytes_per;
        }
        all = calloc((size_t)total_listed + 1, sizeof *all);
    }
    MPI_Gatherv(mism, listed * bytes_per, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);

    if (me == 0) {
        uint64_t rec_first = UINT64_MAX, rec_last = 0;
        unsigned long long moved = 0;
        for (size_t i = 0; i < T.n; i++) {
            const struct trace_rec *r = &T.rec[i];
            if (trace_calls[r->call].kind == TK_MPI_INIT || trace_calls[r->call].kind == TK_MPI_FINALIZE ||
                trace_calls[r->call].kind == TK_DEF)
                continue;
            rec_first = r->t_start < rec_first ? r->t_start : rec_first;
            rec_last = r->t_end > rec_last ? r->t_end : rec_last;
        }
        for (int c = TC_NPOSIX + 1; c < TC_NCALLS; c++)
            moved += sum[c].moved_rep;
        printf("{\"trace\": \"%s\", \"dir\": \"%s\", \"ranks\": %d, \"timing\": \"%s\", ", path, dir, nranks, timing);
        printf("\"recorded_wall_ns\": %llu, \"replayed_wall_ns\": %llu, \"mpi_bytes_moved\": %llu, "
               "\"bandwidth_mbs\": %.3f, ",
               (unsigned long long)(rec_first < rec_last ? rec_last - rec_first : 0), (unsigned long long)wall, moved,
               wall ? (double)moved / ((double)wall / 1e9) / 1e6 : 0.0);
        printf("\"calls\": {");
        bool comma = false;
        for (int c = 0; c < TC_NCALLS; c++)
            if (sum[c].count) {
                json_tally(trace_calls[c].name, &sum[c], comma);
                comma = true;
            }
        printf("}, \"rank_ns\": [");
        for (int i = 0; i < nranks; i++)
            printf("%s%llu", i ? ", " : "", rank_times[i]);
        printf("], \"rank_hosts\": [");
        for (int i = 0; i < nranks; i++)
            printf("%s\"%s\"", i ? ", " : "", hosts + (size_t)i * sizeof host);
        printf("], \"classes\": {");
        for (int c = 0; c < TCL_N; c++) {
            const struct hist *h = &cls_all[c];
            printf("%s\"%s\": {\"moved\": %llu, \"ns\": %llu, \"lat_ns\": {\"count\": %llu, \"mean\": %.1f, "
                   "\"min\": %llu, \"max\": %llu, \"p50\": %llu, \"p90\": %llu, \"p99\": %llu, \"p99_9\": %llu, "
                   "\"p99_99\": %llu, \"hist\": {\"sub_bits\": %d, \"counts\": [",
                   c ? ", " : "", trace_class_names[c], all_moved[c], (unsigned long long)h->sum,
                   (unsigned long long)h->count, hist_mean(h), (unsigned long long)(h->count ? h->min : 0),
                   (unsigned long long)h->max, (unsigned long long)hist_pct(h, 0.5),
                   (unsigned long long)hist_pct(h, 0.9), (unsigned long long)hist_pct(h, 0.99),
                   (unsigned long long)hist_pct(h, 0.999), (unsigned long long)hist_pct(h, 0.9999), HIST_SUB_BITS);
            bool first = true;
            for (unsigned b = 0; b < HIST_BUCKETS; b++)
                if (h->b[b]) {
                    printf("%s[%u, %llu]", first ? "" : ", ", b, (unsigned long long)h->b[b]);
                    first = false;
                }
            printf("]}}}");
        }
        printf("}, \"slowest_rank\": {");
        comma = false;
        for (int c = 0; c < TC_NCALLS; c++) {
            if (!trace_calls[c].collective || !sum[c].count)
                continue;
            int worst = 0;
            for (int i = 1; i < nranks; i++)
                if (coll_all[(size_t)i * TC_NCALLS + c] > coll_all[(size_t)worst * TC_NCALLS + c])
                    worst = i;
            printf("%s\"%s\": {\"rank\": %d, \"ns\": %.0f}", comma ? ", " : "", trace_calls[c].name, worst,
                   coll_all[(size_t)worst * TC_NCALLS + c]);
            comma = true;
        }
        printf("}, \"mismatch_count\": %lld, \"mismatches\": [", total_mism);
        for (int i = 0; i < total_listed; i++) {
            const struct mismatch *m = &all[i];
            const struct trace_rec *r = &T.rec[m->seq];
            printf("%s{\"seq\": %lld, \"line\": %lld, \"rank\": %d, \"call\": \"%s\", \"moved_recorded\": %lld, "
                   "\"moved_replayed\": %lld, \"ret_recorded\": %lld, \"ret_replayed\": %d}",
                   i ? ", " : "", m->seq, m->seq + 3, m->rank, trace_calls[r->call].name, m->moved_rec, m->moved_rep,
                   (long long)r->ret, m->ret_rep);
        }
        printf("]}\n");
        fflush(stdout);
    }
    free_types();
    MPI_Finalize();
    return 0;
}
