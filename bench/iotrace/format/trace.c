/* trace.c - the iotrace trace format: format, parse, validate, merge (see trace.h). */
#include "trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const struct trace_call_info trace_calls[TC_NCALLS] = {
    [TC_OPEN] = {"open", TK_OPEN, false, false},
    [TC_OPEN64] = {"open64", TK_OPEN, false, false},
    [TC_OPENAT] = {"openat", TK_OPEN, false, false},
    [TC_OPENAT64] = {"openat64", TK_OPEN, false, false},
    [TC_CREAT] = {"creat", TK_OPEN, false, false},
    [TC_CREAT64] = {"creat64", TK_OPEN, false, false},
    [TC_CLOSE] = {"close", TK_CLOSE, false, false},
    [TC_READ] = {"read", TK_READ, false, false},
    [TC_WRITE] = {"write", TK_WRITE, false, false},
    [TC_PREAD] = {"pread", TK_READ, true, false},
    [TC_PREAD64] = {"pread64", TK_READ, true, false},
    [TC_PWRITE] = {"pwrite", TK_WRITE, true, false},
    [TC_PWRITE64] = {"pwrite64", TK_WRITE, true, false},
    [TC_READV] = {"readv", TK_READ, false, true},
    [TC_WRITEV] = {"writev", TK_WRITE, false, true},
    [TC_LSEEK] = {"lseek", TK_SEEK, false, false},
    [TC_LSEEK64] = {"lseek64", TK_SEEK, false, false},
    [TC_FSYNC] = {"fsync", TK_SYNC, false, false},
    [TC_FDATASYNC] = {"fdatasync", TK_SYNC, false, false},
    [TC_FTRUNCATE] = {"ftruncate", TK_TRUNCATE, false, false},
    [TC_FTRUNCATE64] = {"ftruncate64", TK_TRUNCATE, false, false},
};

/* ------------------------------------------------------------ formatting */
/* No stdio and no allocation: this runs inside the traced program. */

struct out {
    char *p, *end;
    bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->full || (size_t)(o->end - o->p) < n) {
        o->full = true;
        return;
    }
    memcpy(o->p, s, n);
    o->p += n;
}

static void put_str(struct out *o, const char *s) { put(o, s, strlen(s)); }

static void put_u64(struct out *o, uint64_t v, unsigned base)
{
    char tmp[24], *q = tmp + sizeof tmp;
    do {
        *--q = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    put(o, q, (size_t)(tmp + sizeof tmp - q));
}

static void put_i64(struct out *o, int64_t v)
{
    if (v < 0) {
        put(o, "-", 1);
        put_u64(o, -(uint64_t)v, 10);
    } else {
        put_u64(o, (uint64_t)v, 10);
    }
}

/* Bytes that would break a row (controls, comma, quote) and '%' itself are
 * written %XX; everything else, UTF-8 included, as it is. */
static bool needs_escape(unsigned char c) { return c < 0x20 || c == 0x7f || c == ',' || c == '"' || c == '%'; }

static void put_path(struct out *o, const char *s)
{
    for (size_t i = 0; s[i] && i < TRACE_PATH_MAX; i++) {
        unsigned char c = (unsigned char)s[i];
        if (needs_escape(c)) {
            char esc[3] = {'%', "0123456789ABCDEF"[c >> 4], "0123456789ABCDEF"[c & 15]};
            put(o, esc, 3);
        } else {
            put(o, (const char *)&c, 1);
        }
    }
}

static int finish(struct out *o, char *buf)
{
    if (o->full || o->p >= o->end)
        return -1;
    *o->p = '\0';
    return (int)(o->p - buf);
}

int trace_format_preamble(char *buf, size_t n)
{
    struct out o = {buf, buf + n, false};
    put_str(&o, TRACE_VERSION_LINE "\n" TRACE_HEADER "\n");
    return finish(&o, buf);
}

int trace_format_row(char *buf, size_t n, const struct trace_rec *r)
{
    struct out o = {buf, buf + n, false};
    put_u64(&o, r->seq, 10), put(&o, ",", 1);
    put_i64(&o, r->pid), put(&o, ",", 1);
    put_i64(&o, r->tid), put(&o, ",", 1);
    put_str(&o, trace_calls[r->call].name), put(&o, ",", 1);
    put_u64(&o, r->t_start, 10), put(&o, ",", 1);
    put_u64(&o, r->t_end, 10), put(&o, ",", 1);
    put_i64(&o, r->fd), put(&o, ",", 1);
    if (r->file >= 0)
        put(&o, "f", 1), put_i64(&o, r->file);
    put(&o, ",", 1);
    put_path(&o, r->path), put(&o, ",", 1);
    put(&o, "0x", 2), put_u64(&o, (uint64_t)r->flags & 0xffffffffu, 16), put(&o, ",", 1);
    put(&o, "0", 1), put_u64(&o, (uint64_t)r->mode & 0xffffffffu, 8), put(&o, ",", 1);
    put_i64(&o, r->offset), put(&o, ",", 1);
    put_i64(&o, r->bytes), put(&o, ",", 1);
    put_i64(&o, r->ret), put(&o, ",", 1);
    put_i64(&o, r->err), put(&o, "\n", 1);
    return finish(&o, buf);
}

/* --------------------------------------------------------------- reading */

struct parser {
    const char *name;
    size_t line;
    int64_t next_file; /* merged traces number files densely, in order */
    char *err;
    size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct parser *ps, const char *fmt, ...)
{
    int n = ps->line ? snprintf(ps->err, ps->errlen, "%s:%zu: ", ps->name, ps->line)
                     : snprintf(ps->err, ps->errlen, "%s: ", ps->name);
    if (n < 0 || (size_t)n >= ps->errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

struct field {
    const char *s;
    size_t n;
};

/* A whole number, the whole field: decimal, or with base 0 also 0x.. and 0.. */
static int parse_num(struct parser *ps, const char *what, struct field f, int base, bool is_unsigned,
                     int64_t min, int64_t *v)
{
    char tmp[32];
    if (f.n == 0 || f.n >= sizeof tmp)
        return fail(ps, "field %s: '%.*s' is not a number", what, (int)(f.n > 40 ? 40 : f.n), f.s);
    memcpy(tmp, f.s, f.n);
    tmp[f.n] = '\0';
    char *end;
    errno = 0;
    if (is_unsigned) {
        if (tmp[0] == '-' || tmp[0] == '+' || tmp[0] == ' ')
            return fail(ps, "field %s: '%s' is not a whole number >= 0", what, tmp);
        unsigned long long u = strtoull(tmp, &end, base);
        if (errno || *end || u > INT64_MAX)
            return fail(ps, "field %s: '%s' is not a number", what, tmp);
        *v = (int64_t)u;
    } else {
        if (tmp[0] == ' ' || tmp[0] == '+')
            return fail(ps, "field %s: '%s' is not a number", what, tmp);
        long long s = strtoll(tmp, &end, base);
        if (errno || *end)
            return fail(ps, "field %s: '%s' is not a number", what, tmp);
        *v = s;
    }
    if (*v < min)
        return fail(ps, "field %s: %s is below %lld", what, tmp, (long long)min);
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int parse_path(struct parser *ps, struct field f, char **store, const char **out)
{
    char *d = *store;
    *out = d;
    for (size_t i = 0; i < f.n; i++) {
        if (f.s[i] != '%') {
            *d++ = f.s[i];
            continue;
        }
        int hi = i + 2 < f.n ? hexval(f.s[i + 1]) : -1, lo = hi >= 0 ? hexval(f.s[i + 2]) : -1;
        if (lo < 0)
            return fail(ps, "field path: '%%' not followed by two hex digits");
        if (hi == 0 && lo == 0)
            return fail(ps, "field path: %%00 (a NUL byte) cannot be in a path");
        *d++ = (char)(hi << 4 | lo);
        i += 2;
    }
    *d++ = '\0';
    *store = d;
    return 0;
}

static int parse_row(struct parser *ps, const char *s, size_t n, bool merged, char **store, struct trace_rec *r)
{
    static const char *const names[TRACE_NFIELDS] = {"seq", "pid", "tid", "call", "t_start_ns", "t_end_ns",
                                                     "fd", "file", "path", "flags", "mode", "offset",
                                                     "bytes", "ret", "errno"};
    struct field f[TRACE_NFIELDS];
    size_t nf = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] == '\0')
            return fail(ps, "a NUL byte in the row");
        if (i == n || s[i] == ',') {
            if (nf < TRACE_NFIELDS)
                f[nf] = (struct field){s + start, i - start};
            nf++;
            start = i + 1;
        }
    }
    if (nf != TRACE_NFIELDS)
        return fail(ps, "%zu fields, expected %d (%s)", nf, TRACE_NFIELDS, TRACE_HEADER);

    int64_t v[TRACE_NFIELDS] = {0};
    for (int i = 0; i < TRACE_NFIELDS; i++) {
        if (i == 3 || i == 7 || i == 8)
            continue; /* call, file, path */
        bool u = i == 0 || i == 4 || i == 5;
        int64_t min = i == 1 || i == 2 ? 1 : i == 6 || i == 13 ? -1 : i == 12 || i == 14 ? 0 : INT64_MIN;
        if (parse_num(ps, names[i], f[i], i == 9 || i == 10 ? 0 : 10, u, u ? 0 : min, &v[i]))
            return -1;
    }
    r->seq = (uint64_t)v[0], r->pid = v[1], r->tid = v[2];
    r->t_start = (uint64_t)v[4], r->t_end = (uint64_t)v[5], r->fd = v[6];
    r->flags = v[9], r->mode = v[10], r->offset = v[11], r->bytes = v[12], r->ret = v[13], r->err = v[14];

    int c = 0;
    while (c < TC_NCALLS && !(strlen(trace_calls[c].name) == f[3].n && !memcmp(trace_calls[c].name, f[3].s, f[3].n)))
        c++;
    if (c == TC_NCALLS)
        return fail(ps, "field call: unknown call '%.*s'", (int)(f[3].n > 40 ? 40 : f[3].n), f[3].s);
    r->call = (enum trace_call)c;

    r->file = -1;
    if (f[7].n) {
        struct field id = {f[7].s + 1, f[7].n - 1};
        if (f[7].s[0] != 'f' || id.n == 0 || id.s[0] == '-' || id.s[0] == '+' ||
            parse_num(ps, "file", id, 10, true, 0, &r->file))
            return fail(ps, "field file: '%.*s' is not a file id (f0, f1 ...)", (int)(f[7].n > 40 ? 40 : f[7].n),
                        f[7].s);
    } else if (merged) {
        return fail(ps, "field file: empty (a merged trace names the file of every row)");
    }
    if (merged && r->file > ps->next_file)
        return fail(ps, "field file: f%lld skips ids (files are numbered in order; expected at most f%lld)",
                    (long long)r->file, (long long)ps->next_file);
    if (merged && r->file == ps->next_file)
        ps->next_file++;
    if (parse_path(ps, f[8], store, &r->path))
        return -1;
    if (r->t_end < r->t_start)
        return fail(ps, "t_end_ns %llu is before t_start_ns %llu", (unsigned long long)r->t_end,
                    (unsigned long long)r->t_start);
    if (trace_calls[r->call].kind != TK_OPEN && r->fd < 0)
        return fail(ps, "field fd: %lld is not a descriptor", (long long)r->fd);
    if (trace_calls[r->call].kind == TK_OPEN && r->fd != (r->ret >= 0 ? r->ret : -1))
        return fail(ps, "field fd: %lld on an open that returned %lld", (long long)r->fd, (long long)r->ret);
    if (r->ret == -1 && r->err == 0)
        return fail(ps, "field errno: 0 on a call that returned -1");
    return 0;
}

int trace_parse(const char *text, size_t len, const char *name, bool merged, struct trace *t, char *err,
                size_t errlen)
{
    struct parser ps = {name, 0, 0, err, errlen};
    *t = (struct trace){0};
    if (len == 0)
        return fail(&ps, "empty file: not an iotrace trace (no '%s' line)", TRACE_VERSION_LINE);

    size_t rows = 0;
    for (size_t i = 0; i < len; i++)
        rows += text[i] == '\n';
    t->blocks = malloc(sizeof *t->blocks);
    char *store = malloc(len + 1);
    t->rec = malloc((rows + 1) * sizeof *t->rec);
    if (!t->blocks || !store || !t->rec) {
        free(store);
        trace_free(t);
        return fail(&ps, "out of memory");
    }
    t->blocks[t->nblocks++] = store;

    const char *p = text, *end = text + len;
    while (p < end) {
        ps.line++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            fail(&ps, "truncated: the last line has no end (the file was cut short?)");
            goto bad;
        }
        size_t n = (size_t)(nl - p);
        if (ps.line == 1) {
            if (n < 10 || memcmp(p, "# iotrace ", 10)) {
                fail(&ps, "not an iotrace trace: the first line must be '%s'", TRACE_VERSION_LINE);
                goto bad;
            }
            if (n != strlen(TRACE_VERSION_LINE) || memcmp(p, TRACE_VERSION_LINE, n)) {
                fail(&ps, "format version '%.*s' is not supported (this iotrace reads %d)",
                     (int)(n - 10 > 20 ? 20 : n - 10), p + 10, TRACE_VERSION);
                goto bad;
            }
        } else if (ps.line == 2) {
            if (n != strlen(TRACE_HEADER) || memcmp(p, TRACE_HEADER, n)) {
                fail(&ps, "bad header row: expected '%s'", TRACE_HEADER);
                goto bad;
            }
        } else {
            struct trace_rec *r = &t->rec[t->n];
            if (parse_row(&ps, p, n, merged, &store, r))
                goto bad;
            if (merged && t->n && r->t_start < t->rec[t->n - 1].t_start) {
                fail(&ps, "field t_start_ns: %llu is before the previous row's (rows are sorted by start time)",
                     (unsigned long long)r->t_start);
                goto bad;
            }
            if (merged && r->seq != t->n) {
                fail(&ps, "field seq: %llu, expected %zu (rows are numbered 0, 1, 2 ...)",
                     (unsigned long long)r->seq, t->n);
                goto bad;
            }
            if (!merged && t->n && r->seq <= t->rec[t->n - 1].seq) {
                fail(&ps, "field seq: %llu does not increase", (unsigned long long)r->seq);
                goto bad;
            }
            t->n++;
        }
        p = nl + 1;
    }
    if (ps.line < 2) {
        ps.line = 0;
        fail(&ps, "no header row (the file was cut short?)");
        goto bad;
    }
    return 0;
bad:
    trace_free(t);
    return -1;
}

int trace_load(const char *path, bool merged, bool nul_padded, struct trace *t, char *err, size_t errlen)
{
    struct parser ps = {path, 0, 0, err, errlen};
    *t = (struct trace){0};
    FILE *f = fopen(path, "rbe");
    if (!f)
        return fail(&ps, "cannot open: %s", strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    bool bad = !buf || ferror(f);
    int e = errno;
    fclose(f);
    if (bad) {
        free(buf);
        return fail(&ps, "cannot read: %s", buf ? strerror(e) : "out of memory");
    }
    if (nul_padded) {
        char *z = memchr(buf, '\0', len);
        if (z)
            len = (size_t)(z - buf);
    }
    int rc = trace_parse(buf, len, path, merged, t, err, errlen);
    free(buf);
    return rc;
}

void trace_free(struct trace *t)
{
    for (size_t i = 0; i < t->nblocks; i++)
        free(t->blocks[i]);
    free(t->blocks);
    free(t->rec);
    *t = (struct trace){0};
}

/* --------------------------------------------------------------- merging */

struct item {
    struct trace_rec r;
    size_t part;
};

static int by_start(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->r.t_start != y->r.t_start)
        return x->r.t_start < y->r.t_start ? -1 : 1;
    if (x->part != y->part)
        return x->part < y->part ? -1 : 1;
    return x->r.seq < y->r.seq ? -1 : x->r.seq > y->r.seq;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

int trace_merge(struct trace *parts, size_t nparts, struct trace *out)
{
    *out = (struct trace){0};
    size_t n = 0, nb = 0;
    for (size_t i = 0; i < nparts; i++)
        n += parts[i].n, nb += parts[i].nblocks;
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    struct item *items = malloc((n + 1) * sizeof *items);
    const char **paths = calloc(cap, sizeof *paths); /* open addressing: path -> id */
    int64_t *ids = malloc(cap * sizeof *ids);
    out->rec = malloc((n + 1) * sizeof *out->rec);
    out->blocks = malloc((nb + 1) * sizeof *out->blocks);
    if (!items || !paths || !ids || !out->rec || !out->blocks) {
        free(items), free(paths), free(ids), free(out->rec), free(out->blocks);
        *out = (struct trace){0};
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < nparts; i++)
        for (size_t j = 0; j < parts[i].n; j++)
            items[k++] = (struct item){parts[i].rec[j], i};
    qsort(items, n, sizeof *items, by_start);

    int64_t next_id = 0;
    for (size_t i = 0; i < n; i++) {
        struct trace_rec r = items[i].r;
        size_t h = hash_str(r.path) & (cap - 1);
        while (paths[h] && strcmp(paths[h], r.path))
            h = (h + 1) & (cap - 1);
        if (!paths[h])
            paths[h] = r.path, ids[h] = next_id++;
        r.file = ids[h];
        r.seq = i;
        out->rec[i] = r;
    }
    out->n = n;
    for (size_t i = 0; i < nparts; i++) {
        for (size_t j = 0; j < parts[i].nblocks; j++)
            out->blocks[out->nblocks++] = parts[i].blocks[j];
        parts[i].nblocks = 0;
        trace_free(&parts[i]);
    }
    free(items), free(paths), free(ids);
    return 0;
}

int trace_write(FILE *f, const struct trace *t)
{
    char buf[TRACE_ROW_MAX];
    int n = trace_format_preamble(buf, sizeof buf);
    fwrite(buf, 1, (size_t)n, f);
    for (size_t i = 0; i < t->n; i++) {
        n = trace_format_row(buf, sizeof buf, &t->rec[i]);
        if (n < 0)
            return -1;
        fwrite(buf, 1, (size_t)n, f);
    }
    return fflush(f) || ferror(f) ? -1 : 0;
}
