/* rebuild.c - what a replayed call refers to, made again from its row (replayer.h): datatypes from the
 * MPI_Type rows (their combiners and MPI_Type_get_contents' arrays), communicators from the MPI_Comm
 * rows (by their members' world ranks), hints. Every number read from the trace is checked before
 * any arithmetic is done with it; MPI's own errors on what is made here come back as return codes
 * (MPI_ERRORS_RETURN), so a row MPI rejects is named with its line, not ended by MPI's fatal handler. */
#include "replayer.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- rows' arguments */

static int unhex(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; }

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

const char *arg(const struct trace_rec *r, const char *key, char *buf, size_t n)
{
    char raw[TRACE_ARGS_MAX];
    trace_arg(r->args, key, raw, sizeof raw);
    unescape(buf, n, raw);
    return buf;
}

long long arg_int(const struct trace_rec *r, const char *key, long long dflt)
{
    char v[64];
    trace_arg(r->args, key, v, sizeof v);
    if (!v[0])
        return dflt;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    return *end || errno ? dflt : x;
}

long long arg_id(const struct trace_rec *r, const char *key, char prefix)
{
    char v[64];
    trace_arg(r->args, key, v, sizeof v);
    if (v[0] != prefix || !v[1])
        return -1;
    char *end;
    errno = 0;
    long long x = strtoll(v + 1, &end, 10);
    return *end || errno || x < 0 ? -1 : x;
}

/* Space-separated integers, each within [lo, hi], into a new array; *n their number. NULL where one
 * is not an integer or out of range. */
static long long *ints_of(const char *s, int *n, long long lo, long long hi)
{
    int cap = 8, k = 0;
    long long *v = malloc((size_t)cap * sizeof *v);
    for (const char *p = s; v && *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (end == p || errno || x < lo || x > hi || k == INT_MAX) {
            free(v);
            return NULL;
        }
        if (k == cap) {
            long long *w = realloc(v, (size_t)(cap *= 2) * sizeof *v);
            if (!w)
                free(v);
            v = w;
        }
        if (v)
            v[k++] = x;
        p = end;
    }
    *n = k;
    return v;
}

/* ------------------------------------------------------------- handles by id */

void *map_get(struct id_map *m, long long id)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->ids[i] == id)
            return (char *)m->h + i * m->size;
    return NULL;
}

void *map_put(struct id_map *m, long long id)
{
    void *old = map_get(m, id);
    if (old)
        return old;
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 16;
        m->ids = realloc(m->ids, m->cap * sizeof *m->ids);
        m->h = realloc(m->h, m->cap * m->size);
        if (!m->ids || !m->h) {
            end_all(1, "out of memory");
        }
    }
    m->ids[m->n] = id;
    return (char *)m->h + m->n++ * m->size;
}

struct id_map types = {.size = sizeof(MPI_Datatype)}, comms = {.size = sizeof(MPI_Comm)};

void rebuild_init(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN); /* what every file opened inherits */
}

void free_rebuilt(void)
{
    for (size_t i = 0; i < types.n; i++) {
        MPI_Datatype *t = (MPI_Datatype *)((char *)types.h + i * types.size);
        int ni, na, nd, comb;
        if (MPI_Type_get_envelope(*t, &ni, &na, &nd, &comb) == MPI_SUCCESS && comb != MPI_COMBINER_NAMED)
            MPI_Type_free(t);
    }
    for (size_t i = 0; i < comms.n; i++) {
        MPI_Comm *c = (MPI_Comm *)((char *)comms.h + i * comms.size);
        if (*c != MPI_COMM_NULL)
            MPI_Comm_free(c);
    }
}

/* ------------------------------------------------------------- datatypes */

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

/* The arrays of a derived type's row: ints (each an int), addresses, the types it is made of. */
struct contents {
    int ni, na, nd;
    int *I;
    MPI_Aint *A;
    MPI_Datatype *D;
};

/* How many of each array comb needs, given its first integers (I[0] a count, darray's ndims I[2]),
 * computed in long long from values already known to be ints: false where the row has fewer. */
static bool enough(const char *comb, const struct contents *c)
{
    long long k = c->ni >= 1 ? c->I[0] : -1, ni = 0, na = 0, nd = 1;
    if (!strcmp(comb, "dup"))
        ;
    else if (!strcmp(comb, "contiguous"))
        ni = 1;
    else if (!strcmp(comb, "vector"))
        ni = 3;
    else if (!strcmp(comb, "hvector"))
        ni = 2, na = 1;
    else if (!strcmp(comb, "resized"))
        na = 2;
    else if (k < 0) /* the rest count their blocks in I[0] */
        return false;
    else if (!strcmp(comb, "indexed"))
        ni = 1 + 2 * k;
    else if (!strcmp(comb, "hindexed"))
        ni = 1 + k, na = k;
    else if (!strcmp(comb, "indexed_block"))
        ni = 2 + k;
    else if (!strcmp(comb, "hindexed_block"))
        ni = 2, na = k;
    else if (!strcmp(comb, "struct"))
        ni = 1 + k, na = k, nd = k;
    else if (!strcmp(comb, "subarray"))
        ni = 2 + 3 * k;
    else if (!strcmp(comb, "darray")) {
        long long dims = c->ni >= 3 ? c->I[2] : -1;
        if (dims < 0)
            return false;
        ni = 4 + 4 * dims;
    } else
        return false;
    return c->ni >= ni && c->na >= na && c->nd >= nd;
}

static int make(const char *comb, struct contents *c, MPI_Datatype *t)
{
    int *I = c->I;
    MPI_Aint *A = c->A;
    MPI_Datatype *D = c->D;
    if (!strcmp(comb, "dup"))
        return MPI_Type_dup(D[0], t);
    if (!strcmp(comb, "contiguous"))
        return MPI_Type_contiguous(I[0], D[0], t);
    if (!strcmp(comb, "vector"))
        return MPI_Type_vector(I[0], I[1], I[2], D[0], t);
    if (!strcmp(comb, "hvector"))
        return MPI_Type_create_hvector(I[0], I[1], A[0], D[0], t);
    if (!strcmp(comb, "indexed"))
        return MPI_Type_indexed(I[0], I + 1, I + 1 + I[0], D[0], t);
    if (!strcmp(comb, "hindexed"))
        return MPI_Type_create_hindexed(I[0], I + 1, A, D[0], t);
    if (!strcmp(comb, "indexed_block"))
        return MPI_Type_create_indexed_block(I[0], I[1], I + 2, D[0], t);
    if (!strcmp(comb, "hindexed_block"))
        return MPI_Type_create_hindexed_block(I[0], I[1], A, D[0], t);
    if (!strcmp(comb, "struct"))
        return MPI_Type_create_struct(I[0], I + 1, A, D, t);
    if (!strcmp(comb, "subarray"))
        return MPI_Type_create_subarray(I[0], I + 1, I + 1 + I[0], I + 1 + 2 * I[0], to_order(I[1 + 3 * I[0]]), D[0],
                                        t);
    if (!strcmp(comb, "darray")) {
        int nd = I[2];
        for (int d = 0; d < nd; d++) {
            I[3 + nd + d] = to_dist(I[3 + nd + d]);
            if (I[3 + 2 * nd + d] == -1)
                I[3 + 2 * nd + d] = MPI_DISTRIBUTE_DFLT_DARG;
        }
        return MPI_Type_create_darray(I[0], I[1], nd, I + 3, I + 3 + nd, I + 3 + 2 * nd, I + 3 + 3 * nd,
                                      to_order(I[3 + 4 * nd]), D[0], t);
    }
    if (!strcmp(comb, "resized"))
        return MPI_Type_create_resized(D[0], A[0], A[1], t);
    return MPI_ERR_TYPE;
}

/* The row's arrays, each number in range; NULL with a problem found. */
static bool contents_of(const struct trace_rec *r, long long id, struct contents *c)
{
    char buf[TRACE_ARGS_MAX];
    long long *iv = ints_of(arg(r, "ints", buf, sizeof buf), &c->ni, INT_MIN, INT_MAX);
    long long *av = iv ? ints_of(arg(r, "addrs", buf, sizeof buf), &c->na, LLONG_MIN, LLONG_MAX) : NULL;
    bool ok = iv && av;
    c->I = malloc((size_t)c->ni * sizeof *c->I + 1);
    c->A = malloc((size_t)c->na * sizeof *c->A + 1);
    arg(r, "types", buf, sizeof buf);
    c->D = malloc((strlen(buf) / 2 + 1) * sizeof *c->D); /* at most one per two characters ("t0 t1") */
    c->nd = 0;
    if (!c->I || !c->A || !c->D) {
        free(iv), free(av);
        found("out of memory");
        return false;
    }
    for (int i = 0; ok && i < c->ni; i++)
        c->I[i] = (int)iv[i];
    for (int i = 0; ok && i < c->na; i++)
        c->A[i] = (MPI_Aint)av[i];
    free(iv), free(av);
    if (!ok) {
        found("line %zu: datatype t%lld: an integer of its row is not a number MPI takes", (size_t)r->seq + 3, id);
        return false;
    }
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        long long of = -1;
        if (w[0] == 't' && w[1]) {
            char *end;
            errno = 0;
            of = strtoll(w + 1, &end, 10);
            of = *end || errno ? -1 : of;
        }
        MPI_Datatype *x = of >= 0 ? map_get(&types, of) : NULL;
        if (!x) {
            found("line %zu: datatype t%lld names %s, which no earlier MPI_Type row defines", (size_t)r->seq + 3, id,
                  w);
            return false;
        }
        c->D[c->nd++] = *x;
    }
    return true;
}

void define_type(const struct trace_rec *r)
{
    long long id = arg_id(r, "id", 't'), want = arg_int(r, "size", -1);
    long long want_lb = arg_int(r, "lb", LLONG_MIN), want_extent = arg_int(r, "extent", LLONG_MIN);
    char comb[64], name[128];
    arg(r, "comb", comb, sizeof comb);
    arg(r, "named", name, sizeof name);
    size_t line = (size_t)r->seq + 3;
    if (id < 0)
        return found("line %zu: an MPI_Type row without its id", line);
    if (map_get(&types, id))
        return found("line %zu: datatype t%lld is defined twice", line, id);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    if (name[0]) {
        t = named(name);
        if (t == MPI_DATATYPE_NULL && want > 0 && want <= INT_MAX) { /* a predefined type this MPI lacks: its bytes */
            if (MPI_Type_contiguous((int)want, MPI_BYTE, &t) != MPI_SUCCESS || MPI_Type_commit(&t) != MPI_SUCCESS)
                return found("line %zu: datatype t%lld: %s cannot be made as its %lld bytes", line, id, name, want);
        } else if (t == MPI_DATATYPE_NULL)
            return found("line %zu: datatype t%lld: the predefined type %s is not in this MPI", line, id, name);
        *(MPI_Datatype *)map_put(&types, id) = t;
        return;
    }
    struct contents c = {0};
    bool have = contents_of(r, id, &c);
    int rc = !have ? MPI_ERR_ARG : !enough(comb, &c) ? MPI_ERR_TYPE : make(comb, &c, &t);
    free(c.I), free(c.A), free(c.D);
    if (!have)
        return;
    if (rc == MPI_SUCCESS && t != MPI_DATATYPE_NULL)
        rc = MPI_Type_commit(&t);
    if (rc != MPI_SUCCESS || t == MPI_DATATYPE_NULL) {
        char why[MPI_MAX_ERROR_STRING] = "its arguments are fewer than its combiner needs";
        int len = 0;
        if (rc != MPI_ERR_TYPE || t != MPI_DATATYPE_NULL)
            MPI_Error_string(rc, why, &len);
        return found("line %zu: datatype t%lld (%s) cannot be rebuilt from its row: %s", line, id,
                     comb[0] ? comb : "no combiner", why);
    }
    *(MPI_Datatype *)map_put(&types, id) = t; /* freed at the end, whatever follows */
    MPI_Count size = -1, lb = 0, extent = 0;
    MPI_Type_size_x(t, &size);
    MPI_Type_get_extent_x(t, &lb, &extent);
    if (want >= 0 && size != want)
        return found("line %zu: datatype t%lld (%s) rebuilt has %lld bytes, the recorded one %lld", line, id, comb,
                     (long long)size, want);
    if ((want_lb != LLONG_MIN && lb != want_lb) || (want_extent != LLONG_MIN && extent != want_extent))
        return found("line %zu: datatype t%lld (%s) rebuilt spans lb %lld extent %lld, the recorded one lb %lld "
                     "extent %lld", line, id, comb, (long long)lb, (long long)extent, want_lb, want_extent);
}

MPI_Datatype type_of(const struct trace_rec *r, const char *key)
{
    long long id = arg_id(r, key, 't');
    MPI_Datatype *t = id >= 0 ? map_get(&types, id) : NULL;
    return t ? *t : MPI_DATATYPE_NULL;
}

long long type_span(MPI_Datatype t, long long count, long long *ptr_at)
{
    MPI_Count tlb = 0, text = 0, lb = 0, ext = 0;
    *ptr_at = 0;
    if (count < 0)
        return -1;
    if (t == MPI_DATATYPE_NULL || count == 0)
        return 0;
    MPI_Type_get_true_extent_x(t, &tlb, &text);
    MPI_Type_get_extent_x(t, &lb, &ext);
    /* item i covers [tlb + i*ext, tlb + i*ext + text): the lowest and highest byte over all items */
    long long step, lo, hi, span;
    if (__builtin_mul_overflow((long long)ext, count - 1, &step) || __builtin_add_overflow((long long)tlb, step < 0 ? step : 0, &lo) ||
        __builtin_add_overflow((long long)tlb + 0, (long long)text, &hi) || __builtin_add_overflow(hi, step > 0 ? step : 0, &hi))
        return -1;
    lo = lo < 0 ? lo : 0, hi = hi > 0 ? hi : 0;
    if (__builtin_sub_overflow(hi, lo, &span) || span > MAX_BUF)
        return -1;
    *ptr_at = -lo;
    return span;
}

/* ------------------------------------------------------------- communicators */

/* The members' world ranks of an MPI_Comm row ("0-3 6 8-9"), each a rank of this replay, none twice;
 * n their number. NULL with a problem found. */
static int *members(const struct trace_rec *r, long long id, int *n)
{
    char buf[TRACE_ARGS_MAX];
    size_t line = (size_t)r->seq + 3;
    arg(r, "ranks", buf, sizeof buf);
    int *ranks = malloc(((size_t)nranks + 1) * sizeof *ranks);
    bool *in = calloc((size_t)nranks + 1, sizeof *in);
    *n = 0;
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && ranks && in; w = strtok_r(NULL, " ", &save)) {
        char *end;
        errno = 0;
        long a = strtol(w, &end, 10), b = a;
        if (end != w && *end == '-') {
            char *from = end + 1;
            b = strtol(from, &end, 10);
            if (end == from)
                b = -1;
        }
        if (end == w || *end || errno || a < 0 || b < a || b >= nranks) {
            found("line %zu: communicator c%lld: '%s' is not a run of ranks of this replay (0-%d)", line, id, w,
                  nranks - 1);
            break;
        }
        for (long x = a; x <= b; x++) {
            if (in[x]) {
                found("line %zu: communicator c%lld names rank %ld twice", line, id, x);
                break;
            }
            in[x] = true;
            ranks[(*n)++] = (int)x;
        }
    }
    bool mine = in && in[me];
    free(in);
    if (!problem[0] && !mine)
        found("line %zu: communicator c%lld of rank %d's rows does not hold rank %d", line, id, me, me);
    long long size = arg_int(r, "size", -1);
    if (!problem[0] && size != *n)
        found("line %zu: communicator c%lld has %d ranks, its row says size=%lld", line, id, *n, size);
    if (problem[0]) {
        free(ranks);
        return NULL;
    }
    return ranks;
}

/* A communicator's members make it together with MPI_Comm_create_group. Its tag comes from the members
 * alone (their world ranks in order), since the trace's ids are each process's own count: a rank that
 * opened a file on MPI_COMM_SELF first numbers the same group otherwise than its peers. Members make
 * their shared groups in the order of their rows, which is the order their program first used them for
 * a file: collective on those members, so the same order on each of them. */
void define_comm(const struct trace_rec *r)
{
    long long id = arg_id(r, "id", 'c');
    size_t line = (size_t)r->seq + 3;
    if (id < 0)
        return found("line %zu: an MPI_Comm row without its id", line);
    if (map_get(&comms, id))
        return found("line %zu: communicator c%lld is defined twice", line, id);
    int n = 0, *ranks = members(r, id, &n);
    if (!ranks)
        return;
    unsigned h = 2166136261u; /* FNV-1a over the members' ranks */
    for (int i = 0; i < n; i++)
        for (int b = 0; b < 4; b++)
            h = (h ^ (((unsigned)ranks[i] >> (8 * b)) & 0xff)) * 16777619u;
    MPI_Group world, g;
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int rc = MPI_Group_incl(world, n, ranks, &g);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Comm_create_group(MPI_COMM_WORLD, g, (int)(h & 0x7fff), &c);
        MPI_Group_free(&g);
    }
    MPI_Group_free(&world);
    free(ranks);
    if (rc != MPI_SUCCESS || c == MPI_COMM_NULL)
        return found("line %zu: communicator c%lld could not be made again", line, id);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    *(MPI_Comm *)map_put(&comms, id) = c;
}

/* ------------------------------------------------------------- hints */

MPI_Info info_of(const struct trace_rec *r, const char *key)
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
        if (k[0])
            MPI_Info_set(info, k, v);
    }
    return info;
}
