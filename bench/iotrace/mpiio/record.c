/*
 * record.c - the MPI-IO recorder: with posix/preload.c and format/trace.c it
 * makes libiotrace-mpi-<mpi>.so, one build per MPI implementation (their
 * ABIs differ), which `iotrace record --launcher` preloads into each rank.
 *
 * It defines the MPI_File_* routines, the completions of their requests
 * (MPI_Wait, MPI_Test and their all/any/some forms), MPI_Init,
 * MPI_Init_thread and MPI_Finalize, and calls the PMPI_ ones: the MPI
 * standard's profiling interface, so an application linked dynamically
 * against MPI is recorded without its source.
 *
 * Each MPI-IO call becomes one row of the process's trace file (the POSIX
 * recorder's: one lock, one seq), taken before the real call, so that the
 * POSIX calls the MPI library makes inside it (ROMIO's or OMPIO's reads and
 * writes, its aggregators' two-phase I/O) carry it as their parent. What
 * the recorder asks of MPI to describe a call (the file pointer, the byte
 * offset, a datatype's layout, a communicator's ranks, the hints) is asked
 * outside the timed window, with the POSIX recording held.
 *
 * Clocks: at MPI_Init, rank 0 exchanges a message with each rank eight
 * times and keeps the exchange with the least round trip (Cristian's
 * method): the rank's clock offset is its reading minus the midpoint of
 * rank 0's send and receive, known to within half that round trip. Each
 * rank's MPI_Init row holds clock_offset_ns and clock_err_ns, and the merge
 * moves its rows onto rank 0's clock.
 *
 * At MPI_Finalize each rank cuts its file and sends it to rank 0, which
 * writes it into IOTRACE_DIR on its host unless a file of that name and
 * size is already there (a file system both see); the ranks then remove
 * their own copies. Nothing is recorded after MPI_Finalize.
 */
#include "recorder.h"
#include "trace.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TLS __thread __attribute__((tls_model("initial-exec")))
#define SYNC_ROUNDS 8
#define SEND_CHUNK (1 << 26) /* bytes of a trace file per message at MPI_Finalize */

static bool made_dir;       /* this rank made IOTRACE_DIR (a host that does not see the launcher's) */
static bool active;         /* recording: between MPI_Init and MPI_Finalize, IOTRACE_DIR set */
static int world_rank = -1, world_size;
static TLS int depth;       /* inside one of our wrappers: MPI calls the library makes are not rows */
static pthread_mutex_t maps = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------- args */

struct args {
    char s[TRACE_ARGS_MAX];
    size_t n;
};

static void a_raw(struct args *a, const char *s, size_t n)
{
    if (a->n + n + 1 > sizeof a->s)
        return;
    memcpy(a->s + a->n, s, n);
    a->n += n;
    a->s[a->n] = '\0';
}

static void a_key(struct args *a, const char *key)
{
    if (a->n)
        a_raw(a, ";", 1);
    a_raw(a, key, strlen(key));
    a_raw(a, "=", 1);
}

/* A value's bytes, the separators of args and lists (; = | : space %) and
 * controls written %XX. */
static void a_esc(struct args *a, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= 0x20 || c == 0x7f || c == ';' || c == '=' || c == '|' || c == ':' || c == '%' || c == ',' ||
            c == '"') {
            char e[3] = {'%', "0123456789ABCDEF"[c >> 4], "0123456789ABCDEF"[c & 15]};
            a_raw(a, e, 3);
        } else {
            a_raw(a, (const char *)&c, 1);
        }
    }
}

static void a_str(struct args *a, const char *key, const char *v) { a_key(a, key), a_esc(a, v); }

/* Decimal without stdio: this runs on every call. */
static void a_num(struct args *a, long long v)
{
    char b[24], *q = b + sizeof b;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do
        *--q = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--q = '-';
    a_raw(a, q, (size_t)(b + sizeof b - q));
}

static void a_int(struct args *a, const char *key, long long v)
{
    a_key(a, key);
    a_num(a, v);
}

static void a_id(struct args *a, const char *key, char prefix, int64_t id)
{
    a_key(a, key);
    a_raw(a, &prefix, 1);
    a_num(a, id);
}

/* ------------------------------------------------ handle -> id tables */

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

static struct table types, comms, files, reqs;

#define KEY(h) key_of(&(h), sizeof(h))
static uint64_t key_of(const void *h, size_t n)
{
    uint64_t k = 0;
    memcpy(&k, h, n < sizeof k ? n : sizeof k);
    return k;
}

static size_t slot_of(const struct table *t, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 29)) & (t->cap - 1);
}

static struct ent *t_find(struct table *t, uint64_t key)
{
    if (!t->n)
        return NULL;
    for (size_t i = slot_of(t, key);; i = (i + 1) & (t->cap - 1)) {
        if (!t->e[i].used)
            return NULL;
        if (t->e[i].key == key)
            return &t->e[i];
    }
}

static struct ent *t_add(struct table *t, uint64_t key)
{
    if (2 * (t->n + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        struct ent *old = t->e, *e = calloc(cap, sizeof *e);
        if (!e)
            return NULL;
        size_t oldcap = t->cap;
        t->e = e, t->cap = cap;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].used) {
                size_t j = slot_of(t, old[i].key);
                while (e[j].used)
                    j = (j + 1) & (cap - 1);
                e[j] = old[i];
            }
        free(old);
    }
    size_t i = slot_of(t, key);
    while (t->e[i].used && t->e[i].key != key)
        i = (i + 1) & (t->cap - 1);
    if (!t->e[i].used)
        t->n++;
    t->e[i] = (struct ent){.key = key, .used = true, .id = t->next++};
    return &t->e[i];
}

static void t_del(struct table *t, uint64_t key)
{
    struct ent *f = t_find(t, key);
    if (!f)
        return;
    size_t i = (size_t)(f - t->e);
    f->used = false;
    t->n--;
    for (size_t j = (i + 1) & (t->cap - 1); t->e[j].used; j = (j + 1) & (t->cap - 1)) {
        size_t home = slot_of(t, t->e[j].key);
        /* move j back into the hole at i unless its home lies cyclically in (i, j] */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            t->e[i] = t->e[j];
            t->e[j].used = false;
            i = j;
        }
    }
}

/* ------------------------------------------------------------- rows */

static const char *keep(const char *s)
{
    char *d = strdup(s ? s : "");
    return d ? d : "";
}

/* A definition row (a datatype, a communicator), written once when first named. */
static void def_row(enum trace_call call, struct args *a)
{
    uint64_t t = rec_now();
    struct trace_rec r = {.call = call, .t_start = t, .t_end = t, .fd = -1, .file = -1, .path = "", .offset = -1,
                          .parent = -1, .args = a->s};
    r.seq = rec_take_seq();
    rec_write(&r);
}

static const char *combiner_name(int c)
{
    static const struct {
        int c;
        const char *name;
    } names[] = {
        {MPI_COMBINER_DUP, "dup"},       {MPI_COMBINER_CONTIGUOUS, "contiguous"},
        {MPI_COMBINER_VECTOR, "vector"}, {MPI_COMBINER_HVECTOR, "hvector"},
        {MPI_COMBINER_INDEXED, "indexed"}, {MPI_COMBINER_HINDEXED, "hindexed"},
        {MPI_COMBINER_INDEXED_BLOCK, "indexed_block"}, {MPI_COMBINER_HINDEXED_BLOCK, "hindexed_block"},
        {MPI_COMBINER_STRUCT, "struct"}, {MPI_COMBINER_SUBARRAY, "subarray"},
        {MPI_COMBINER_DARRAY, "darray"}, {MPI_COMBINER_RESIZED, "resized"},
        {MPI_COMBINER_F90_REAL, "f90_real"}, {MPI_COMBINER_F90_COMPLEX, "f90_complex"},
        {MPI_COMBINER_F90_INTEGER, "f90_integer"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].c == c)
            return names[i].name;
    return "unknown";
}

static void a_list_int(struct args *a, const char *key, const int *v, int n)
{
    char b[24];
    a_key(a, key);
    for (int i = 0; i < n; i++)
        a_raw(a, b, (size_t)snprintf(b, sizeof b, i ? " %d" : "%d", v[i]));
}

static void a_list_aint(struct args *a, const char *key, const MPI_Aint *v, int n)
{
    char b[32];
    a_key(a, key);
    for (int i = 0; i < n; i++)
        a_raw(a, b, (size_t)snprintf(b, sizeof b, i ? " %lld" : "%lld", (long long)v[i]));
}

/* The constants inside a subarray's or a darray's integers differ between
 * implementations (MPI_ORDER_C is 0 in Open MPI, 56 in MPICH): written as
 * portable codes, which the replayer maps back. order: 0 C, 1 Fortran;
 * distribution: 0 block, 1 cyclic, 2 none; a default darg: -1. */
static int portable(int v, const int *from, int n, int other)
{
    for (int i = 0; i < n; i++)
        if (v == from[i])
            return i;
    return other;
}

static void portable_ints(int comb, int *iv, int ni)
{
    const int order[] = {MPI_ORDER_C, MPI_ORDER_FORTRAN};
    const int dist[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE};
    if (comb == MPI_COMBINER_SUBARRAY && ni >= 1) {
        int nd = iv[0];
        if (3 * nd + 1 < ni)
            iv[3 * nd + 1] = portable(iv[3 * nd + 1], order, 2, iv[3 * nd + 1]);
    } else if (comb == MPI_COMBINER_DARRAY && ni >= 3) {
        int nd = iv[2];
        if (4 * nd + 3 >= ni)
            return;
        for (int d = 0; d < nd; d++) {
            iv[3 + nd + d] = portable(iv[3 + nd + d], dist, 3, iv[3 + nd + d]);
            if (iv[3 + 2 * nd + d] == MPI_DISTRIBUTE_DFLT_DARG)
                iv[3 + 2 * nd + d] = -1;
        }
        iv[3 + 4 * nd] = portable(iv[3 + 4 * nd], order, 2, iv[3 + 4 * nd]);
    }
}

/* The id of a datatype (t0, t1 ...), its layout written as an MPI_Type row
 * the first time it is seen: a predefined type by name; a derived one by
 * its combiner and the integers, addresses and datatypes of
 * MPI_Type_get_contents, those datatypes described first. maps is held. */
static int64_t type_id(MPI_Datatype dt)
{
    if (dt == MPI_DATATYPE_NULL)
        return -1;
    struct ent *e = t_find(&types, KEY(dt));
    if (e)
        return e->id;
    int ni, na, nd, comb;
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return -1;
    struct args *a = calloc(1, sizeof *a);
    if (!a)
        return -1;
    int size = 0;
    MPI_Aint lb = 0, extent = 0;
    PMPI_Type_size(dt, &size);
    PMPI_Type_get_extent(dt, &lb, &extent);
    if (comb == MPI_COMBINER_NAMED) {
        char name[MPI_MAX_OBJECT_NAME] = "";
        int len = 0;
        PMPI_Type_get_name(dt, name, &len);
        a_str(a, "named", name);
    } else {
        int *iv = malloc((size_t)(ni + 1) * sizeof *iv);
        MPI_Aint *av = malloc((size_t)(na + 1) * sizeof *av);
        MPI_Datatype *dv = malloc((size_t)(nd + 1) * sizeof *dv);
        if (!iv || !av || !dv || PMPI_Type_get_contents(dt, ni, na, nd, iv, av, dv) != MPI_SUCCESS) {
            free(iv), free(av), free(dv), free(a);
            return -1;
        }
        int64_t *sub = malloc((size_t)(nd + 1) * sizeof *sub);
        for (int i = 0; sub && i < nd; i++) {
            sub[i] = type_id(dv[i]);
            int sni, sna, snd, scomb;
            if (PMPI_Type_get_envelope(dv[i], &sni, &sna, &snd, &scomb) == MPI_SUCCESS &&
                scomb != MPI_COMBINER_NAMED) {
                /* a derived type get_contents returned is a new handle the caller frees; its id was
                 * kept under the handle, which the free may give to another type: forget it */
                t_del(&types, KEY(dv[i]));
                PMPI_Type_free(&dv[i]);
            }
        }
        portable_ints(comb, iv, ni);
        a_str(a, "comb", combiner_name(comb));
        a_list_int(a, "ints", iv, ni);
        a_list_aint(a, "addrs", av, na);
        a_key(a, "types");
        char b[32];
        for (int i = 0; sub && i < nd; i++)
            a_raw(a, b, (size_t)snprintf(b, sizeof b, i ? " t%lld" : "t%lld", (long long)sub[i]));
        free(iv), free(av), free(dv), free(sub);
    }
    e = t_add(&types, KEY(dt));
    if (!e) {
        free(a);
        return -1;
    }
    int64_t id = e->id;
    struct args head = {0};
    a_id(&head, "id", 't', id);
    a_int(&head, "size", size);
    a_int(&head, "lb", (long long)lb);
    a_int(&head, "extent", (long long)extent);
    a_raw(&head, ";", 1);
    a_raw(&head, a->s, a->n);
    def_row(TC_MPI_TYPE, &head);
    free(a);
    return id;
}

/* The id of a communicator (c0, c1 ...), its size and world ranks written as
 * an MPI_Comm row the first time (ranks as runs: "0-3 6 8-9"). maps is held. */
static int64_t comm_id(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL)
        return -1;
    struct ent *e = t_find(&comms, KEY(comm));
    if (e)
        return e->id;
    int n = 0;
    PMPI_Comm_size(comm, &n);
    int *in = malloc((size_t)n * sizeof *in), *out = malloc((size_t)n * sizeof *out);
    MPI_Group g, w;
    if (!in || !out) {
        free(in), free(out);
        return -1;
    }
    for (int i = 0; i < n; i++)
        in[i] = i;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &w);
    PMPI_Group_translate_ranks(g, n, in, w, out);
    PMPI_Group_free(&g);
    PMPI_Group_free(&w);
    e = t_add(&comms, KEY(comm));
    if (!e) {
        free(in), free(out);
        return -1;
    }
    struct args a = {0};
    a_id(&a, "id", 'c', e->id);
    a_int(&a, "size", n);
    a_key(&a, "ranks");
    char b[48];
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && out[j + 1] == out[j] + 1)
            j++;
        int len = j > i ? snprintf(b, sizeof b, "%s%d-%d", i ? " " : "", out[i], out[j])
                        : snprintf(b, sizeof b, "%s%d", i ? " " : "", out[i]);
        a_raw(&a, b, (size_t)len);
        i = j + 1;
    }
    free(in), free(out);
    def_row(TC_MPI_COMM, &a);
    return e->id;
}

/* Hints: key:value|key:value, each escaped. */
static void a_info(struct args *a, const char *key, MPI_Info info)
{
    int n = 0;
    if (info == MPI_INFO_NULL || PMPI_Info_get_nkeys(info, &n) != MPI_SUCCESS)
        return;
    a_key(a, key);
    char k[MPI_MAX_INFO_KEY + 1], v[MPI_MAX_INFO_VAL + 1];
    for (int i = 0; i < n; i++) {
        int flag = 0;
        if (PMPI_Info_get_nthkey(info, i, k) != MPI_SUCCESS)
            continue;
        if (PMPI_Info_get(info, k, MPI_MAX_INFO_VAL, v, &flag) != MPI_SUCCESS || !flag)
            continue;
        if (i)
            a_raw(a, "|", 1);
        a_esc(a, k);
        a_raw(a, ":", 1);
        a_esc(a, v);
    }
}

/* --------------------------------------------------- one MPI-IO call */

struct call {
    bool on;
    struct trace_rec r;
    struct args a;
    int64_t prev_parent;
    MPI_Datatype dt;
    int count;
};

/* Before the real call: whether to record, and what MPI says beforehand
 * (the file, the offset in etypes and in bytes, the datatype), all outside
 * the timed window. eoff: the explicit offset, or -1 for the file pointers. */
static bool call_begin(struct call *c, enum trace_call tc, MPI_File fh, MPI_Datatype dt, int count, MPI_Offset eoff)
{
    c->on = false;
    if (!active || depth)
        return false;
    depth++;
    rec_hold();
    const struct trace_call_info *ci = &trace_calls[tc];
    c->r = (struct trace_rec){.call = tc, .fd = -1, .file = -1, .path = "", .offset = -1, .parent = -1};
    c->a.n = 0, c->a.s[0] = '\0';
    c->dt = dt, c->count = count;
    pthread_mutex_lock(&maps);
    struct ent *f = fh != MPI_FILE_NULL ? t_find(&files, KEY(fh)) : NULL;
    if (f) {
        c->r.fd = f->id, c->r.path = f->path;
        if (ci->split == 2) { /* an _end: what its _begin named */
            c->dt = f->dt, c->count = (int)f->count;
        }
    }
    int64_t tid = ci->split == 2 ? (f ? f->dtype : -1) : (ci->kind == TK_MPI_READ || ci->kind == TK_MPI_WRITE)
                                                            ? type_id(dt)
                                                            : -1;
    if (f && ci->split == 1)
        f->dt = dt, f->count = count, f->dtype = tid;
    pthread_mutex_unlock(&maps);
    if (ci->kind == TK_MPI_READ || ci->kind == TK_MPI_WRITE) {
        int size = 0;
        if (c->dt != MPI_DATATYPE_NULL)
            PMPI_Type_size(c->dt, &size);
        c->r.bytes = (int64_t)size * c->count;
        a_int(&c->a, "count", c->count);
        if (tid >= 0)
            a_id(&c->a, "dtype", 't', tid);
        if (ci->split != 2) {
            MPI_Offset pos = eoff, byte = -1;
            if (ci->access == TA_INDIVIDUAL)
                PMPI_File_get_position(fh, &pos);
            else if (ci->access == TA_SHARED)
                PMPI_File_get_position_shared(fh, &pos);
            if (pos >= 0 && PMPI_File_get_byte_offset(fh, pos, &byte) == MPI_SUCCESS)
                c->r.offset = byte;
            a_int(&c->a, "eoff", pos);
        }
    }
    rec_release();
    c->r.seq = rec_take_seq();
    c->prev_parent = rec_enter((int64_t)c->r.seq);
    c->on = true;
    c->r.t_start = rec_now();
    return true;
}

/* After the real call: bytes moved from the status, the row written. */
static void call_end(struct call *c, int rc, MPI_Status *st)
{
    if (!c->r.t_end) /* else taken by the caller right after the real call */
        c->r.t_end = rec_now();
    rec_leave(c->prev_parent);
    rec_hold();
    c->r.ret = rc;
    if (st && st != MPI_STATUS_IGNORE && rc == MPI_SUCCESS && c->dt != MPI_DATATYPE_NULL) {
        int got = 0, size = 0;
        PMPI_Type_size(c->dt, &size);
        if (PMPI_Get_count(st, c->dt, &got) == MPI_SUCCESS && got != MPI_UNDEFINED)
            a_int(&c->a, "moved", (long long)got * size);
    }
    c->r.args = c->a.s;
    rec_write(&c->r);
    rec_release();
    depth--;
}

/* A nonblocking call's request, remembered until a completion names it. */
static int64_t remember(struct call *c, MPI_Request req)
{
    pthread_mutex_lock(&maps);
    struct ent *e = req != MPI_REQUEST_NULL ? t_add(&reqs, KEY(req)) : NULL;
    int64_t id = -1;
    if (e) {
        id = e->id, e->file = c->r.fd, e->path = c->r.path, e->dt = c->dt, e->count = c->count;
        e->call = c->r.call;
    }
    pthread_mutex_unlock(&maps);
    return id;
}

/* ---------------------------------------------------- data access */

#define STATUS_OF(st) MPI_Status own_; MPI_Status *s_ = (st) == MPI_STATUS_IGNORE ? &own_ : (st)

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

/* explicit offsets */
int MPI_File_read_at(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_AT, fh, dt, count, off, st, PMPI_File_read_at(fh, off, buf, count, dt, st));
}
int MPI_File_read_at_all(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_AT_ALL, fh, dt, count, off, st, PMPI_File_read_at_all(fh, off, buf, count, dt, st));
}
int MPI_File_write_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_AT, fh, dt, count, off, st, PMPI_File_write_at(fh, off, buf, count, dt, st));
}
int MPI_File_write_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_AT_ALL, fh, dt, count, off, st,
             PMPI_File_write_at_all(fh, off, buf, count, dt, st));
}
int MPI_File_iread_at(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IREAD_AT, fh, dt, count, off, req, PMPI_File_iread_at(fh, off, buf, count, dt, req));
}
int MPI_File_iread_at_all(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IREAD_AT_ALL, fh, dt, count, off, req,
                PMPI_File_iread_at_all(fh, off, buf, count, dt, req));
}
int MPI_File_iwrite_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IWRITE_AT, fh, dt, count, off, req, PMPI_File_iwrite_at(fh, off, buf, count, dt, req));
}
int MPI_File_iwrite_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt,
                           MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IWRITE_AT_ALL, fh, dt, count, off, req,
                PMPI_File_iwrite_at_all(fh, off, buf, count, dt, req));
}
int MPI_File_read_at_all_begin(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_READ_AT_ALL_BEGIN, fh, dt, count, off, PMPI_File_read_at_all_begin(fh, off, buf, count, dt));
}
int MPI_File_read_at_all_end(MPI_File fh, void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_AT_ALL_END, fh, MPI_DATATYPE_NULL, 0, -1, st, PMPI_File_read_at_all_end(fh, buf, st));
}
int MPI_File_write_at_all_begin(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_WRITE_AT_ALL_BEGIN, fh, dt, count, off,
          PMPI_File_write_at_all_begin(fh, off, buf, count, dt));
}
int MPI_File_write_at_all_end(MPI_File fh, const void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_AT_ALL_END, fh, MPI_DATATYPE_NULL, 0, -1, st,
             PMPI_File_write_at_all_end(fh, buf, st));
}

/* individual file pointers */
int MPI_File_read(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ, fh, dt, count, -1, st, PMPI_File_read(fh, buf, count, dt, st));
}
int MPI_File_read_all(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_ALL, fh, dt, count, -1, st, PMPI_File_read_all(fh, buf, count, dt, st));
}
int MPI_File_write(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE, fh, dt, count, -1, st, PMPI_File_write(fh, buf, count, dt, st));
}
int MPI_File_write_all(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_ALL, fh, dt, count, -1, st, PMPI_File_write_all(fh, buf, count, dt, st));
}
int MPI_File_iread(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IREAD, fh, dt, count, -1, req, PMPI_File_iread(fh, buf, count, dt, req));
}
int MPI_File_iread_all(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IREAD_ALL, fh, dt, count, -1, req, PMPI_File_iread_all(fh, buf, count, dt, req));
}
int MPI_File_iwrite(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IWRITE, fh, dt, count, -1, req, PMPI_File_iwrite(fh, buf, count, dt, req));
}
int MPI_File_iwrite_all(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IWRITE_ALL, fh, dt, count, -1, req, PMPI_File_iwrite_all(fh, buf, count, dt, req));
}
int MPI_File_read_all_begin(MPI_File fh, void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_READ_ALL_BEGIN, fh, dt, count, -1, PMPI_File_read_all_begin(fh, buf, count, dt));
}
int MPI_File_read_all_end(MPI_File fh, void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_ALL_END, fh, MPI_DATATYPE_NULL, 0, -1, st, PMPI_File_read_all_end(fh, buf, st));
}
int MPI_File_write_all_begin(MPI_File fh, const void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_WRITE_ALL_BEGIN, fh, dt, count, -1, PMPI_File_write_all_begin(fh, buf, count, dt));
}
int MPI_File_write_all_end(MPI_File fh, const void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_ALL_END, fh, MPI_DATATYPE_NULL, 0, -1, st, PMPI_File_write_all_end(fh, buf, st));
}

/* the shared file pointer */
int MPI_File_read_shared(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_SHARED, fh, dt, count, -1, st, PMPI_File_read_shared(fh, buf, count, dt, st));
}
int MPI_File_write_shared(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_SHARED, fh, dt, count, -1, st, PMPI_File_write_shared(fh, buf, count, dt, st));
}
int MPI_File_iread_shared(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IREAD_SHARED, fh, dt, count, -1, req, PMPI_File_iread_shared(fh, buf, count, dt, req));
}
int MPI_File_iwrite_shared(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Request *req)
{
    NONBLOCKING(TC_MPI_FILE_IWRITE_SHARED, fh, dt, count, -1, req,
                PMPI_File_iwrite_shared(fh, buf, count, dt, req));
}
int MPI_File_read_ordered(MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_ORDERED, fh, dt, count, -1, st, PMPI_File_read_ordered(fh, buf, count, dt, st));
}
int MPI_File_write_ordered(MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_ORDERED, fh, dt, count, -1, st, PMPI_File_write_ordered(fh, buf, count, dt, st));
}
int MPI_File_read_ordered_begin(MPI_File fh, void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_READ_ORDERED_BEGIN, fh, dt, count, -1, PMPI_File_read_ordered_begin(fh, buf, count, dt));
}
int MPI_File_read_ordered_end(MPI_File fh, void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_READ_ORDERED_END, fh, MPI_DATATYPE_NULL, 0, -1, st,
             PMPI_File_read_ordered_end(fh, buf, st));
}
int MPI_File_write_ordered_begin(MPI_File fh, const void *buf, int count, MPI_Datatype dt)
{
    BEGIN(TC_MPI_FILE_WRITE_ORDERED_BEGIN, fh, dt, count, -1, PMPI_File_write_ordered_begin(fh, buf, count, dt));
}
int MPI_File_write_ordered_end(MPI_File fh, const void *buf, MPI_Status *st)
{
    BLOCKING(TC_MPI_FILE_WRITE_ORDERED_END, fh, MPI_DATATYPE_NULL, 0, -1, st,
             PMPI_File_write_ordered_end(fh, buf, st));
}

/* ------------------------------------------- files and their views */

int MPI_File_open(MPI_Comm comm, const char *name, int amode, MPI_Info info, MPI_File *fh)
{
    struct call c;
    if (!call_begin(&c, TC_MPI_FILE_OPEN, MPI_FILE_NULL, MPI_DATATYPE_NULL, 0, -1))
        return PMPI_File_open(comm, name, amode, info, fh);
    rec_hold(); /* the communicator's row before the open's: a replay makes it first */
    pthread_mutex_lock(&maps);
    int64_t cid = comm_id(comm);
    pthread_mutex_unlock(&maps);
    rec_release();
    c.r.t_start = rec_now();
    int rc = PMPI_File_open(comm, name, amode, info, fh);
    c.r.t_end = rec_now();
    rec_hold();
    pthread_mutex_lock(&maps);
    struct ent *f = rc == MPI_SUCCESS ? t_add(&files, KEY(*fh)) : NULL;
    c.r.path = keep(name);
    if (f)
        f->path = c.r.path, f->dt = MPI_DATATYPE_NULL, f->dtype = -1, c.r.fd = f->id;
    pthread_mutex_unlock(&maps);
    rec_release();
    c.r.flags = amode;
    a_id(&c.a, "comm", 'c', cid);
    a_info(&c.a, "info", info);
    if (f) { /* the hints in force: what the user asked for and the implementation's own */
        MPI_Info used;
        MPI_Offset sz = -1;
        rec_hold();
        if (PMPI_File_get_size(*fh, &sz) == MPI_SUCCESS) /* what a replay must find there */
            a_int(&c.a, "size_at_open", sz);
        if (PMPI_File_get_info(*fh, &used) == MPI_SUCCESS) {
            a_info(&c.a, "hints", used);
            PMPI_Info_free(&used);
        }
        rec_release();
    }
    call_end(&c, rc, NULL);
    return rc;
}

int MPI_File_close(MPI_File *fh)
{
    MPI_File was = fh ? *fh : MPI_FILE_NULL;
    struct call c;
    if (!call_begin(&c, TC_MPI_FILE_CLOSE, was, MPI_DATATYPE_NULL, 0, -1))
        return PMPI_File_close(fh);
    int rc = PMPI_File_close(fh);
    call_end(&c, rc, NULL);
    if (rc == MPI_SUCCESS) {
        pthread_mutex_lock(&maps);
        t_del(&files, KEY(was)); /* the path stays: rows written keep pointing at it */
        pthread_mutex_unlock(&maps);
    }
    return rc;
}

int MPI_File_delete(const char *name, MPI_Info info)
{
    struct call c;
    if (!call_begin(&c, TC_MPI_FILE_DELETE, MPI_FILE_NULL, MPI_DATATYPE_NULL, 0, -1))
        return PMPI_File_delete(name, info);
    c.r.path = keep(name);
    a_info(&c.a, "info", info);
    int rc = PMPI_File_delete(name, info);
    call_end(&c, rc, NULL);
    return rc;
}

#define CONTROL(tc, fh, setup, realcall)                                                                 \
    struct call c;                                                                                       \
    if (!call_begin(&c, tc, fh, MPI_DATATYPE_NULL, 0, -1))                                               \
        return realcall;                                                                                 \
    setup;                                                                                               \
    int rc = realcall;                                                                                   \
    call_end(&c, rc, NULL);                                                                              \
    return rc

int MPI_File_set_size(MPI_File fh, MPI_Offset size)
{
    CONTROL(TC_MPI_FILE_SET_SIZE, fh, c.r.offset = size, PMPI_File_set_size(fh, size));
}
int MPI_File_preallocate(MPI_File fh, MPI_Offset size)
{
    CONTROL(TC_MPI_FILE_PREALLOCATE, fh, c.r.offset = size, PMPI_File_preallocate(fh, size));
}
int MPI_File_get_size(MPI_File fh, MPI_Offset *size)
{
    struct call c;
    if (!call_begin(&c, TC_MPI_FILE_GET_SIZE, fh, MPI_DATATYPE_NULL, 0, -1))
        return PMPI_File_get_size(fh, size);
    int rc = PMPI_File_get_size(fh, size);
    if (rc == MPI_SUCCESS)
        a_int(&c.a, "size", *size);
    call_end(&c, rc, NULL);
    return rc;
}
int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep,
                      MPI_Info info)
{
    struct call c;
    if (!call_begin(&c, TC_MPI_FILE_SET_VIEW, fh, MPI_DATATYPE_NULL, 0, -1))
        return PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
    rec_hold();
    pthread_mutex_lock(&maps);
    int64_t et = type_id(etype), ft = type_id(filetype);
    pthread_mutex_unlock(&maps);
    rec_release();
    a_int(&c.a, "disp", disp);
    a_id(&c.a, "etype", 't', et);
    a_id(&c.a, "ftype", 't', ft);
    a_str(&c.a, "datarep", datarep ? datarep : "");
    a_info(&c.a, "info", info);
    c.r.offset = disp;
    c.r.t_start = rec_now();
    int rc = PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
    call_end(&c, rc, NULL);
    return rc;
}
int MPI_File_seek(MPI_File fh, MPI_Offset off, int whence)
{
    CONTROL(TC_MPI_FILE_SEEK, fh, (c.r.flags = whence, a_int(&c.a, "eoff", off)), PMPI_File_seek(fh, off, whence));
}
int MPI_File_seek_shared(MPI_File fh, MPI_Offset off, int whence)
{
    CONTROL(TC_MPI_FILE_SEEK_SHARED, fh, (c.r.flags = whence, a_int(&c.a, "eoff", off)),
            PMPI_File_seek_shared(fh, off, whence));
}
int MPI_File_sync(MPI_File fh) { CONTROL(TC_MPI_FILE_SYNC, fh, (void)0, PMPI_File_sync(fh)); }
int MPI_File_set_atomicity(MPI_File fh, int flag)
{
    CONTROL(TC_MPI_FILE_SET_ATOMICITY, fh, a_int(&c.a, "flag", flag), PMPI_File_set_atomicity(fh, flag));
}
int MPI_File_set_info(MPI_File fh, MPI_Info info)
{
    CONTROL(TC_MPI_FILE_SET_INFO, fh, a_info(&c.a, "info", info), PMPI_File_set_info(fh, info));
}

/* ------------------------------------------------------- completions */

/* A completion row per finished I/O request: the completing call's name
 * and times, the request's file, and the bytes its status says moved. The
 * first row of a call takes the seq taken before it (seq, when not -1:
 * the POSIX calls made inside the call name it). Returns whether a row was
 * written. */
static bool completed(enum trace_call tc, uint64_t t0, uint64_t t1, int rc, uint64_t key, MPI_Status *st,
                      int64_t *seq)
{
    pthread_mutex_lock(&maps);
    struct ent *e = t_find(&reqs, key), copy;
    bool ours = e != NULL;
    if (ours) {
        copy = *e;
        t_del(&reqs, key);
    }
    pthread_mutex_unlock(&maps);
    if (!ours)
        return false;
    struct args a = {0};
    a_id(&a, "req", 'r', copy.id);
    if (st && st != MPI_STATUS_IGNORE && copy.dt != MPI_DATATYPE_NULL) {
        int got = 0, size = 0;
        PMPI_Type_size(copy.dt, &size);
        if (PMPI_Get_count(st, copy.dt, &got) == MPI_SUCCESS && got != MPI_UNDEFINED)
            a_int(&a, "moved", (long long)got * size);
    }
    struct trace_rec r = {.call = tc, .t_start = t0, .t_end = t1, .fd = copy.file, .file = -1, .path = copy.path,
                          .offset = -1, .ret = rc, .parent = -1, .args = a.s};
    r.seq = *seq >= 0 ? (uint64_t)*seq : rec_take_seq();
    *seq = -1;
    rec_write(&r);
    return true;
}

/* A test that completed none of our requests, inside which the MPI library
 * did POSIX I/O (progressing one): a row of its own, with done=0, so that
 * those rows have their parent and a replay makes the same test. */
static void progressed(enum trace_call tc, uint64_t t0, uint64_t t1, int rc, const struct ent *first, int64_t seq)
{
    if (seq < 0 || !rec_children())
        return;
    struct args a = {0};
    a_id(&a, "req", 'r', first->id);
    a_int(&a, "done", 0);
    struct trace_rec r = {.call = tc, .t_start = t0, .t_end = t1, .fd = first->file, .file = -1,
                          .path = first->path, .offset = -1, .ret = rc, .parent = -1, .args = a.s};
    r.seq = (uint64_t)seq;
    rec_write(&r);
}

/* Whether any of the requests is one of ours; the first one's entry copied into *first. */
static bool any_ours(int n, const MPI_Request *v, struct ent *first)
{
    if (!active || depth || !v)
        return false;
    bool hit = false;
    pthread_mutex_lock(&maps);
    for (int i = 0; i < n && !hit && reqs.n; i++) {
        struct ent *e = v[i] != MPI_REQUEST_NULL ? t_find(&reqs, KEY(v[i])) : NULL;
        if (e) {
            hit = true;
            *first = *e;
        }
    }
    pthread_mutex_unlock(&maps);
    return hit;
}

/* The handles before the call (a completed one becomes MPI_REQUEST_NULL), and statuses of our own where the
 * caller ignores them. */
struct many {
    uint64_t keys_small[64], *keys;
    MPI_Status st_small[64], *st;
    bool own_st;
};

static bool many_begin(struct many *m, int n, const MPI_Request *v, MPI_Status *st)
{
    m->keys = n <= 64 ? m->keys_small : malloc((size_t)n * sizeof *m->keys);
    m->own_st = st == MPI_STATUSES_IGNORE;
    m->st = !m->own_st ? st : n <= 64 ? m->st_small : malloc((size_t)n * sizeof *m->st);
    if (!m->keys || !m->st) {
        if (m->keys != m->keys_small)
            free(m->keys);
        if (m->own_st && m->st != m->st_small)
            free(m->st);
        return false;
    }
    for (int i = 0; i < n; i++)
        m->keys[i] = KEY(v[i]);
    return true;
}

static void many_end(struct many *m)
{
    if (m->keys != m->keys_small)
        free(m->keys);
    if (m->own_st && m->st != m->st_small)
        free(m->st);
}

/* Around a completion call of ours: a seq taken for its first row, POSIX calls inside it linked to that. */
#define COMPLETION_BEGIN()                                                                               \
    depth++;                                                                                             \
    int64_t seq = (int64_t)rec_take_seq(), prev = rec_enter(seq);                                        \
    uint64_t t0 = rec_now()

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
    struct ent first;
    if (!req || !any_ours(1, req, &first))
        return PMPI_Wait(req, st);
    uint64_t key = KEY(*req);
    STATUS_OF(st);
    COMPLETION_BEGIN();
    int rc = PMPI_Wait(req, s_);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    if (!completed(TC_MPI_WAIT, t0, t1, rc, key, s_, &seq))
        progressed(TC_MPI_WAIT, t0, t1, rc, &first, seq);
    depth--;
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    struct ent first;
    if (!req || !any_ours(1, req, &first))
        return PMPI_Test(req, flag, st);
    uint64_t key = KEY(*req);
    STATUS_OF(st);
    COMPLETION_BEGIN();
    int rc = PMPI_Test(req, flag, s_);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    if (!(rc == MPI_SUCCESS && *flag && completed(TC_MPI_TEST, t0, t1, rc, key, s_, &seq)))
        progressed(TC_MPI_TEST, t0, t1, rc, &first, seq);
    depth--;
    return rc;
}

int MPI_Waitall(int n, MPI_Request reqs_[], MPI_Status sts[])
{
    struct many m;
    struct ent first;
    if (!any_ours(n, reqs_, &first) || !many_begin(&m, n, reqs_, sts))
        return PMPI_Waitall(n, reqs_, sts);
    COMPLETION_BEGIN();
    int rc = PMPI_Waitall(n, reqs_, m.st);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    bool any = false;
    for (int i = 0; i < n; i++)
        any |= completed(TC_MPI_WAITALL, t0, t1, rc, m.keys[i], &m.st[i], &seq);
    if (!any)
        progressed(TC_MPI_WAITALL, t0, t1, rc, &first, seq);
    many_end(&m);
    depth--;
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs_[], int *flag, MPI_Status sts[])
{
    struct many m;
    struct ent first;
    if (!any_ours(n, reqs_, &first) || !many_begin(&m, n, reqs_, sts))
        return PMPI_Testall(n, reqs_, flag, sts);
    COMPLETION_BEGIN();
    int rc = PMPI_Testall(n, reqs_, flag, m.st);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    bool any = false;
    for (int i = 0; rc == MPI_SUCCESS && *flag && i < n; i++)
        any |= completed(TC_MPI_TESTALL, t0, t1, rc, m.keys[i], &m.st[i], &seq);
    if (!any)
        progressed(TC_MPI_TESTALL, t0, t1, rc, &first, seq);
    many_end(&m);
    depth--;
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs_[], int *index, MPI_Status *st)
{
    struct many m;
    struct ent first;
    if (!any_ours(n, reqs_, &first) || !many_begin(&m, n, reqs_, MPI_STATUSES_IGNORE))
        return PMPI_Waitany(n, reqs_, index, st);
    STATUS_OF(st);
    COMPLETION_BEGIN();
    int rc = PMPI_Waitany(n, reqs_, index, s_);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    if (!(rc == MPI_SUCCESS && *index != MPI_UNDEFINED && *index >= 0 && *index < n &&
          completed(TC_MPI_WAITANY, t0, t1, rc, m.keys[*index], s_, &seq)))
        progressed(TC_MPI_WAITANY, t0, t1, rc, &first, seq);
    many_end(&m);
    depth--;
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs_[], int *index, int *flag, MPI_Status *st)
{
    struct many m;
    struct ent first;
    if (!any_ours(n, reqs_, &first) || !many_begin(&m, n, reqs_, MPI_STATUSES_IGNORE))
        return PMPI_Testany(n, reqs_, index, flag, st);
    STATUS_OF(st);
    COMPLETION_BEGIN();
    int rc = PMPI_Testany(n, reqs_, index, flag, s_);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    if (!(rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED && *index >= 0 && *index < n &&
          completed(TC_MPI_TESTANY, t0, t1, rc, m.keys[*index], s_, &seq)))
        progressed(TC_MPI_TESTANY, t0, t1, rc, &first, seq);
    many_end(&m);
    depth--;
    return rc;
}

static int some(bool wait, int n, MPI_Request reqs_[], int *outcount, int idx[], MPI_Status sts[])
{
    struct many m;
    struct ent first;
    if (!any_ours(n, reqs_, &first) || !many_begin(&m, n, reqs_, sts))
        return wait ? PMPI_Waitsome(n, reqs_, outcount, idx, sts) : PMPI_Testsome(n, reqs_, outcount, idx, sts);
    enum trace_call tc = wait ? TC_MPI_WAITSOME : TC_MPI_TESTSOME;
    COMPLETION_BEGIN();
    int rc = wait ? PMPI_Waitsome(n, reqs_, outcount, idx, m.st) : PMPI_Testsome(n, reqs_, outcount, idx, m.st);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    bool any = false;
    for (int k = 0; rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED && k < *outcount; k++)
        if (idx[k] >= 0 && idx[k] < n)
            any |= completed(tc, t0, t1, rc, m.keys[idx[k]], &m.st[k], &seq);
    if (!any)
        progressed(tc, t0, t1, rc, &first, seq);
    many_end(&m);
    depth--;
    return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs_[], int *outcount, int idx[], MPI_Status sts[])
{
    return some(true, n, reqs_, outcount, idx, sts);
}

int MPI_Testsome(int n, MPI_Request reqs_[], int *outcount, int idx[], MPI_Status sts[])
{
    return some(false, n, reqs_, outcount, idx, sts);
}

/* A freed datatype or communicator: its handle may come back as another. */
int MPI_Type_free(MPI_Datatype *dt)
{
    if (dt && active) {
        pthread_mutex_lock(&maps);
        t_del(&types, KEY(*dt));
        pthread_mutex_unlock(&maps);
    }
    return PMPI_Type_free(dt);
}

int MPI_Comm_free(MPI_Comm *comm)
{
    if (comm && active) {
        pthread_mutex_lock(&maps);
        t_del(&comms, KEY(*comm));
        pthread_mutex_unlock(&maps);
    }
    return PMPI_Comm_free(comm);
}

/* ------------------------------------------------- start and finish */

/* Cristian's method against rank 0 (see the top of this file). */
static void clock_sync(MPI_Comm comm, int64_t *offset, int64_t *err)
{
    *offset = 0, *err = 0;
    if (world_rank == 0) {
        for (int r = 1; r < world_size; r++) {
            int64_t best_rtt = INT64_MAX, best_off = 0;
            for (int k = 0; k < SYNC_ROUNDS; k++) {
                uint64_t ta = rec_now(), tr;
                PMPI_Send(NULL, 0, MPI_BYTE, r, 1, comm);
                PMPI_Recv(&tr, 1, MPI_UINT64_T, r, 2, comm, MPI_STATUS_IGNORE);
                uint64_t tb = rec_now();
                int64_t rtt = (int64_t)(tb - ta);
                if (rtt < best_rtt)
                    best_rtt = rtt, best_off = (int64_t)tr - (int64_t)(ta + (tb - ta) / 2);
            }
            int64_t res[2] = {best_off, best_rtt / 2};
            PMPI_Send(res, 2, MPI_INT64_T, r, 3, comm);
        }
    } else {
        for (int k = 0; k < SYNC_ROUNDS; k++) {
            PMPI_Recv(NULL, 0, MPI_BYTE, 0, 1, comm, MPI_STATUS_IGNORE);
            uint64_t t = rec_now();
            PMPI_Send(&t, 1, MPI_UINT64_T, 0, 2, comm);
        }
        int64_t res[2];
        PMPI_Recv(res, 2, MPI_INT64_T, 0, 3, comm, MPI_STATUS_IGNORE);
        *offset = res[0], *err = res[1];
    }
}

static void mkdirs(const char *path)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0700);
            *s = '/';
        }
    mkdir(p, 0700);
}

static void started(enum trace_call tc, uint64_t t0, uint64_t t1, int rc, int thread)
{
    if (rc != MPI_SUCCESS || !rec_wanted())
        return;
    depth++;
    rec_hold();
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    rec_mpi_rank(world_rank);
    t0 += rec_skew(), t1 += rec_skew(); /* read before the rank was known */
    struct stat sb;
    bool made = stat(rec_dir(), &sb) != 0; /* a host that does not see the launcher's directory */
    if (made)
        mkdirs(rec_dir());
    made_dir = made;
    MPI_Comm comm;
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int64_t off, err;
    clock_sync(comm, &off, &err);
    PMPI_Comm_free(&comm);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "", host[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0, major = 0, minor = 0;
    PMPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    PMPI_Get_processor_name(host, &len);
    PMPI_Get_version(&major, &minor);
    rec_release();
    rec_mpi_start();
    active = true;
    struct args a = {0};
    a_int(&a, "size", world_size);
    a_str(&a, "host", host);
    a_str(&a, "library", lib);
    char v[16];
    snprintf(v, sizeof v, "%d.%d", major, minor);
    a_str(&a, "standard", v);
    if (thread >= 0)
        a_int(&a, "provided", thread);
    a_int(&a, "clock_offset_ns", off);
    a_int(&a, "clock_err_ns", err);
    a_int(&a, "made_dir", made);
    struct trace_rec r = {.call = tc, .t_start = t0, .t_end = t1, .fd = -1, .file = -1, .path = "", .offset = -1,
                          .ret = rc, .parent = -1, .args = a.s};
    r.seq = rec_take_seq();
    rec_write(&r);
    depth--;
}

int MPI_Init(int *argc, char ***argv)
{
    uint64_t t0 = rec_now();
    int rc = PMPI_Init(argc, argv);
    started(TC_MPI_INIT, t0, rec_now(), rc, -1);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    uint64_t t0 = rec_now();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    started(TC_MPI_INIT_THREAD, t0, rec_now(), rc, provided ? *provided : -1);
    return rc;
}

/* Rank 0 takes every rank's file (see the top of this file). */
static void gather(MPI_Comm comm)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", rec_file());
    if (world_rank != 0) {
        struct stat sb;
        long long size = path[0] && stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
        int plen = (int)strlen(path) + 1;
        PMPI_Send(&plen, 1, MPI_INT, 0, 11, comm);
        PMPI_Send(path, plen, MPI_CHAR, 0, 12, comm);
        PMPI_Send(&size, 1, MPI_LONG_LONG, 0, 13, comm);
        int need = 0;
        PMPI_Recv(&need, 1, MPI_INT, 0, 14, comm, MPI_STATUS_IGNORE);
        if (!need)
            return;
        FILE *f = fopen(path, "rbe");
        char *buf = malloc(SEND_CHUNK);
        for (long long sent = 0; sent < size;) {
            int n = (int)(size - sent < SEND_CHUNK ? size - sent : SEND_CHUNK);
            size_t got = f && buf ? fread(buf, 1, (size_t)n, f) : 0;
            if (got < (size_t)n && buf)
                memset(buf + got, 0, (size_t)n - got); /* NULs: the merge stops at the first */
            PMPI_Send(buf ? buf : "", buf ? n : 0, MPI_BYTE, 0, 15, comm);
            sent += n;
            if (!buf)
                break;
        }
        free(buf);
        if (f)
            fclose(f);
        unlink(path); /* rank 0 has it */
        if (made_dir)
            rmdir(rec_dir());
        return;
    }
    for (int r = 1; r < world_size; r++) {
        int plen = 0;
        long long size = -1;
        PMPI_Recv(&plen, 1, MPI_INT, r, 11, comm, MPI_STATUS_IGNORE);
        char *p = malloc((size_t)plen + 1);
        PMPI_Recv(p, plen, MPI_CHAR, r, 12, comm, MPI_STATUS_IGNORE);
        PMPI_Recv(&size, 1, MPI_LONG_LONG, r, 13, comm, MPI_STATUS_IGNORE);
        struct stat sb;
        int need = size > 0 && !(stat(p, &sb) == 0 && (long long)sb.st_size == size);
        PMPI_Send(&need, 1, MPI_INT, r, 14, comm);
        if (!need) {
            free(p);
            continue;
        }
        char out[PATH_MAX];
        snprintf(out, sizeof out, "%s/trace.r%d.from-host.%d", rec_dir(), r, (int)getpid());
        FILE *f = fopen(out, "wbe");
        char *buf = malloc(SEND_CHUNK);
        for (long long got = 0; got < size;) {
            int n = (int)(size - got < SEND_CHUNK ? size - got : SEND_CHUNK);
            MPI_Status st;
            PMPI_Recv(buf, buf ? n : 0, MPI_BYTE, r, 15, comm, &st);
            if (!buf)
                break;
            if (f)
                fwrite(buf, 1, (size_t)n, f);
            got += n;
        }
        free(buf);
        if (f)
            fclose(f);
        free(p);
    }
}

int MPI_Finalize(void)
{
    if (active && !depth) {
        depth++;
        uint64_t t = rec_now();
        struct trace_rec r = {.call = TC_MPI_FINALIZE, .t_start = t, .t_end = t, .fd = -1, .file = -1, .path = "",
                              .offset = -1, .parent = -1, .args = ""};
        r.seq = rec_take_seq();
        rec_write(&r);
        active = false;
        rec_stop();
        rec_hold();
        MPI_Comm comm;
        PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
        gather(comm);
        PMPI_Comm_free(&comm);
        rec_release();
        depth--;
    }
    return PMPI_Finalize();
}
