/* describe.c - what the MPI-IO recorder writes about a call besides its
 * times (mpirec.h): the args, the handle tables, the datatypes,
 * communicators and hints, each described once per process. */
#include "mpirec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- args */


void a_raw(struct args *a, const char *s, size_t n)
{
    if (a->n + n + 1 > sizeof a->s)
        return;
    memcpy(a->s + a->n, s, n);
    a->n += n;
    a->s[a->n] = '\0';
}

void a_key(struct args *a, const char *key)
{
    if (a->n)
        a_raw(a, ";", 1);
    a_raw(a, key, strlen(key));
    a_raw(a, "=", 1);
}

/* A value's bytes, the separators of args and lists (; = | : space %) and
 * controls written %XX. */
void a_esc(struct args *a, const char *s)
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

void a_str(struct args *a, const char *key, const char *v) { a_key(a, key), a_esc(a, v); }

/* Decimal without stdio: this runs on every call. */
void a_num(struct args *a, long long v)
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

void a_int(struct args *a, const char *key, long long v)
{
    a_key(a, key);
    a_num(a, v);
}

void a_id(struct args *a, const char *key, char prefix, int64_t id)
{
    a_key(a, key);
    a_raw(a, &prefix, 1);
    a_num(a, id);
}

/* ------------------------------------------------ handle -> id tables */


struct table types, comms, files, reqs;

uint64_t key_of(const void *h, size_t n)
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

struct ent *t_find(struct table *t, uint64_t key)
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

struct ent *t_add(struct table *t, uint64_t key)
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

void t_del(struct table *t, uint64_t key)
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

const char *keep(const char *s)
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
int64_t type_id(MPI_Datatype dt)
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
int64_t comm_id(MPI_Comm comm)
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
void a_info(struct args *a, const char *key, MPI_Info info)
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
