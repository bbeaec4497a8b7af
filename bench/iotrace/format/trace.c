/* trace.c - the iotrace trace format: format, parse, validate, merge (see trace.h). */
#include "trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const struct trace_call_info trace_calls[TC_NCALLS] = {
    [TC_OPEN] = {.name = "open", .kind = TK_OPEN, .positioned = false, .vector = false},
    [TC_OPEN64] = {.name = "open64", .kind = TK_OPEN, .positioned = false, .vector = false},
    [TC_OPENAT] = {.name = "openat", .kind = TK_OPEN, .positioned = false, .vector = false},
    [TC_OPENAT64] = {.name = "openat64", .kind = TK_OPEN, .positioned = false, .vector = false},
    [TC_CREAT] = {.name = "creat", .kind = TK_OPEN, .positioned = false, .vector = false},
    [TC_CREAT64] = {.name = "creat64", .kind = TK_OPEN, .positioned = false, .vector = false},
    [TC_CLOSE] = {.name = "close", .kind = TK_CLOSE, .positioned = false, .vector = false},
    [TC_READ] = {.name = "read", .kind = TK_READ, .positioned = false, .vector = false},
    [TC_WRITE] = {.name = "write", .kind = TK_WRITE, .positioned = false, .vector = false},
    [TC_PREAD] = {.name = "pread", .kind = TK_READ, .positioned = true, .vector = false},
    [TC_PREAD64] = {.name = "pread64", .kind = TK_READ, .positioned = true, .vector = false},
    [TC_PWRITE] = {.name = "pwrite", .kind = TK_WRITE, .positioned = true, .vector = false},
    [TC_PWRITE64] = {.name = "pwrite64", .kind = TK_WRITE, .positioned = true, .vector = false},
    [TC_READV] = {.name = "readv", .kind = TK_READ, .positioned = false, .vector = true},
    [TC_WRITEV] = {.name = "writev", .kind = TK_WRITE, .positioned = false, .vector = true},
    [TC_LSEEK] = {.name = "lseek", .kind = TK_SEEK, .positioned = false, .vector = false},
    [TC_LSEEK64] = {.name = "lseek64", .kind = TK_SEEK, .positioned = false, .vector = false},
    [TC_FSYNC] = {.name = "fsync", .kind = TK_SYNC, .positioned = false, .vector = false},
    [TC_FDATASYNC] = {.name = "fdatasync", .kind = TK_SYNC, .positioned = false, .vector = false},
    [TC_FTRUNCATE] = {.name = "ftruncate", .kind = TK_TRUNCATE, .positioned = false, .vector = false},
    [TC_FTRUNCATE64] = {.name = "ftruncate64", .kind = TK_TRUNCATE, .positioned = false, .vector = false},
#define TRACE_MPI_INFO(id, name_, kind_, access_, coll, nb, split_)                                        \
    [TC_##id] = {.name = name_, .kind = kind_, .mpi = true, .access = access_, .collective = coll,          \
                 .nonblocking = nb, .split = split_},
    TRACE_MPI_CALLS(TRACE_MPI_INFO)
#undef TRACE_MPI_INFO
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

/* args are made escaped by their writer (values %XX-escaped where they hold
 * a separator); here only what would break the row is escaped. */
static void put_args(struct out *o, const char *s)
{
    for (size_t i = 0; s[i] && i < TRACE_ARGS_MAX; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || c == ',' || c == '"') {
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
    put_i64(&o, r->err), put(&o, ",", 1);
    put_i64(&o, r->rank), put(&o, ",", 1);
    put_i64(&o, r->parent), put(&o, ",", 1);
    put_args(&o, r->args ? r->args : ""), put(&o, "\n", 1);
    return finish(&o, buf);
}

/* --------------------------------------------------------------- reading */

struct parser {
    const char *name;
    size_t line;
    int version; /* of the trace being read: 1, 2 or 3 */
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
                                                     "bytes", "ret", "errno", "rank", "parent", "args"};
    int want = ps->version == 1 ? TRACE_NFIELDS_V1 : TRACE_NFIELDS;
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
    if (nf != (size_t)want)
        return fail(ps, "%zu fields, expected %d (%s)", nf, want,
                    ps->version == 1 ? TRACE_HEADER_V1 : TRACE_HEADER);

    int64_t v[TRACE_NFIELDS] = {0};
    v[15] = v[16] = -1; /* version 1: no rank, no parent */
    for (int i = 0; i < want; i++) {
        if (i == 3 || i == 7 || i == 8 || i == 17)
            continue; /* call, file, path, args */
        bool u = i == 0 || i == 4 || i == 5;
        int64_t min = i == 1 || i == 2 ? 1 : i == 6 || i == 13 || i == 15 || i == 16 ? -1 : i == 12 || i == 14 ? 0
                                                                                                       : INT64_MIN;
        if (parse_num(ps, names[i], f[i], i == 9 || i == 10 ? 0 : 10, u, u ? 0 : min, &v[i]))
            return -1;
    }
    r->seq = (uint64_t)v[0], r->pid = v[1], r->tid = v[2];
    r->t_start = (uint64_t)v[4], r->t_end = (uint64_t)v[5], r->fd = v[6];
    r->flags = v[9], r->mode = v[10], r->offset = v[11], r->bytes = v[12], r->ret = v[13], r->err = v[14];
    r->rank = v[15], r->parent = v[16];

    int c = 0;
    while (c < TC_NCALLS && (c == TC_NPOSIX || !(strlen(trace_calls[c].name) == f[3].n &&
                                                  !memcmp(trace_calls[c].name, f[3].s, f[3].n))))
        c++;
    if (c == TC_NCALLS || (ps->version == 1 && c > TC_NPOSIX))
        return fail(ps, "field call: unknown call '%.*s'", (int)(f[3].n > 40 ? 40 : f[3].n), f[3].s);
    r->call = (enum trace_call)c;
    const struct trace_call_info *ci = &trace_calls[c];

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
    r->args = "";
    if (ps->version >= 2) { /* kept as written: its values are unescaped by whoever reads them */
        if (f[17].n > TRACE_ARGS_MAX)
            return fail(ps, "field args: longer than %d bytes", TRACE_ARGS_MAX);
        char *d = *store;
        memcpy(d, f[17].s, f[17].n);
        d[f[17].n] = '\0';
        r->args = d;
        *store = d + f[17].n + 1;
    }
    if (r->t_end < r->t_start)
        return fail(ps, "t_end_ns %llu is before t_start_ns %llu", (unsigned long long)r->t_end,
                    (unsigned long long)r->t_start);
    if (ci->mpi) {
        if (r->rank < 0)
            return fail(ps, "field rank: %lld on an MPI row (ranks are 0, 1 ...)", (long long)r->rank);
        if (r->parent != -1)
            return fail(ps, "field parent: %lld on an MPI row (only POSIX rows have a parent)", (long long)r->parent);
        if (r->ret < 0 || r->err != 0)
            return fail(ps, "field ret: an MPI row holds the MPI error code (>= 0) and errno 0");
        return 0;
    }
    if (ci->kind != TK_OPEN && r->fd < 0)
        return fail(ps, "field fd: %lld is not a descriptor", (long long)r->fd);
    if (ci->kind == TK_OPEN && r->fd != (r->ret >= 0 ? r->ret : -1))
        return fail(ps, "field fd: %lld on an open that returned %lld", (long long)r->fd, (long long)r->ret);
    if (r->ret == -1 && r->err == 0)
        return fail(ps, "field errno: 0 on a call that returned -1");
    if (merged && r->parent >= (int64_t)r->seq)
        return fail(ps, "field parent: %lld is not an earlier row", (long long)r->parent);
    return 0;
}

const char *trace_arg(const char *args, const char *key, char *buf, size_t n)
{
    size_t k = strlen(key);
    if (n)
        buf[0] = '\0';
    for (const char *p = args; p && *p;) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > k && p[k] == '=' && !memcmp(p, key, k)) {
            size_t v = len - k - 1;
            if (v >= n)
                v = n ? n - 1 : 0;
            if (n) {
                memcpy(buf, p + k + 1, v);
                buf[v] = '\0';
            }
            return buf;
        }
        p = end ? end + 1 : NULL;
    }
    return buf;
}

int trace_parse(const char *text, size_t len, const char *name, bool merged, struct trace *t, char *err,
                size_t errlen)
{
    struct parser ps = {name, 0, 2, 0, err, errlen};
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
            if (n == strlen(TRACE_VERSION_LINE) && !memcmp(p, TRACE_VERSION_LINE, n)) {
                ps.version = 2;
            } else if (n == 11 && !memcmp(p, "# iotrace 1", 11)) {
                ps.version = 1;
            } else if (n == 11 && !memcmp(p, "# iotrace 3", 11)) {
                ps.version = TRACE_VERSION_NOTES;
            } else {
                fail(&ps, "format version '%.*s' is not supported (this iotrace reads 1, 2 and 3)",
                     (int)(n - 10 > 20 ? 20 : n - 10), p + 10);
                goto bad;
            }
        } else if (ps.line == 2) {
            const char *h = ps.version == 1 ? TRACE_HEADER_V1 : TRACE_HEADER;
            if (n != strlen(h) || memcmp(p, h, n)) {
                fail(&ps, "bad header row: expected '%s'", h);
                goto bad;
            }
        } else if (ps.version == TRACE_VERSION_NOTES && (t->nnotes || (n && p[0] == '#'))) {
            if (n < 2 || memcmp(p, "# ", 2)) {
                fail(&ps, "a row after the notes (in format 3, the '# ' lines end the trace)");
                goto bad;
            }
            if (!t->notes && !(t->notes = malloc(rows * sizeof *t->notes))) {
                fail(&ps, "out of memory");
                goto bad;
            }
            memcpy(store, p + 2, n - 2);
            store[n - 2] = '\0';
            t->notes[t->nnotes++] = store;
            store += n - 1;
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
            /* a recorder's file: an MPI row's seq is taken before the POSIX rows made inside it and
             * written after them, so seq increases except there (the merge checks it repeats nowhere) */
            t->n++;
        }
        p = nl + 1;
    }
    if (ps.line < 2) {
        ps.line = 0;
        fail(&ps, "no header row (the file was cut short?)");
        goto bad;
    }
    t->version = ps.version;
    return 0;
bad:
    trace_free(t);
    return -1;
}

int trace_load(const char *path, bool merged, bool nul_padded, struct trace *t, char *err, size_t errlen)
{
    struct parser ps = {path, 0, 2, 0, err, errlen};
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

/* --------------------------------------------------------------- streaming */

struct trace_stream {
    FILE *f;
    struct parser ps;
    char *line, *store;
    size_t cap, store_cap, n; /* n: rows read */
    uint64_t last_start;
    bool notes;
};

struct trace_stream *trace_stream_open(const char *path, char *err, size_t errlen)
{
    struct trace_stream *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    s->ps = (struct parser){path, 0, 2, 0, err, errlen};
    if (!(s->f = fopen(path, "rbe"))) {
        fail(&s->ps, "cannot open: %s", strerror(errno));
        free(s);
        return NULL;
    }
    for (int k = 1; k <= 2; k++) {
        ssize_t got = getline(&s->line, &s->cap, s->f);
        s->ps.line = (size_t)k;
        size_t n = got > 0 ? (size_t)got - (s->line[got - 1] == '\n') : 0;
        const char *h = s->ps.version == 1 ? TRACE_HEADER_V1 : TRACE_HEADER;
        if (got <= 0 || s->line[got - 1] != '\n') {
            fail(&s->ps, got <= 0 && k == 1 ? "empty file: not an iotrace trace" : "cut short before its header row");
        } else if (k == 1 && n == 11 && !memcmp(s->line, "# iotrace ", 10) && s->line[10] >= '1' &&
                   s->line[10] <= '3') {
            s->ps.version = s->line[10] - '0';
            continue;
        } else if (k == 1) {
            fail(&s->ps, "not an iotrace trace of a version this iotrace reads ('# iotrace 1', 2 or 3)");
        } else if (n != strlen(h) || memcmp(s->line, h, n)) {
            fail(&s->ps, "bad header row: expected '%s'", h);
        } else {
            continue;
        }
        trace_stream_close(s);
        return NULL;
    }
    return s;
}

int trace_stream_version(const struct trace_stream *s)
{
    return s->ps.version;
}

int trace_stream_next(struct trace_stream *s, struct trace_rec *r)
{
    for (;;) {
        ssize_t got = getline(&s->line, &s->cap, s->f);
        if (got <= 0)
            return ferror(s->f) ? fail(&s->ps, "cannot read: %s", strerror(errno)) : 0;
        s->ps.line++;
        if (s->line[got - 1] != '\n')
            return fail(&s->ps, "truncated: the last line has no end (the file was cut short?)");
        size_t n = (size_t)got - 1;
        if (s->ps.version == TRACE_VERSION_NOTES && (s->notes || (n && s->line[0] == '#'))) {
            if (n < 2 || memcmp(s->line, "# ", 2))
                return fail(&s->ps, "a row after the notes (in format 3, the '# ' lines end the trace)");
            s->notes = true;
            continue;
        }
        if (s->store_cap < n + 2) {
            free(s->store);
            s->store_cap = n + 2;
            if (!(s->store = malloc(s->store_cap)))
                return fail(&s->ps, "out of memory");
        }
        char *store = s->store;
        if (parse_row(&s->ps, s->line, n, true, &store, r))
            return -1;
        if (s->n && r->t_start < s->last_start)
            return fail(&s->ps, "field t_start_ns: %llu is before the previous row's (rows are sorted by start time)",
                        (unsigned long long)r->t_start);
        if (r->seq != s->n)
            return fail(&s->ps, "field seq: %llu, expected %zu (rows are numbered 0, 1, 2 ...)",
                        (unsigned long long)r->seq, s->n);
        s->last_start = r->t_start;
        s->n++;
        return 1;
    }
}

void trace_stream_close(struct trace_stream *s)
{
    if (!s)
        return;
    if (s->f)
        fclose(s->f);
    free(s->line);
    free(s->store);
    free(s);
}

void trace_free(struct trace *t)
{
    for (size_t i = 0; i < t->nblocks; i++)
        free(t->blocks[i]);
    free(t->blocks);
    free(t->rec);
    free(t->notes);
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

/* A part's clock offset against rank 0's: clock_offset_ns of its MPI_Init row, else 0. */
static int64_t clock_offset(const struct trace *t)
{
    for (size_t j = 0; j < t->n; j++)
        if (trace_calls[t->rec[j].call].kind == TK_MPI_INIT) {
            char v[32];
            trace_arg(t->rec[j].args, "clock_offset_ns", v, sizeof v);
            return v[0] ? strtoll(v, NULL, 10) : 0;
        }
    return 0;
}

static uint64_t shifted(uint64_t t, int64_t by) { return by > 0 && (uint64_t)by > t ? 0 : t - (uint64_t)by; }

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
    size_t *first = calloc(nparts + 1, sizeof *first); /* part i's seqs map through renum[first[i] ..] */
    out->rec = malloc((n + 1) * sizeof *out->rec);
    out->blocks = malloc((nb + 1) * sizeof *out->blocks);
    size_t span = 0;
    for (size_t i = 0; first && i < nparts; i++) {
        uint64_t top = 0;
        for (size_t j = 0; j < parts[i].n; j++)
            top = parts[i].rec[j].seq > top ? parts[i].rec[j].seq : top;
        first[i] = span;
        span += parts[i].n ? (size_t)top + 1 : 0;
    }
    int64_t *renum = malloc((span + 1) * sizeof *renum);
    if (!items || !paths || !ids || !first || !renum || !out->rec || !out->blocks) {
        free(items), free(paths), free(ids), free(first), free(renum), free(out->rec), free(out->blocks);
        *out = (struct trace){0};
        return -1;
    }
    for (size_t i = 0; i < span; i++)
        renum[i] = -1;
    size_t k = 0;
    for (size_t i = 0; i < nparts; i++) {
        int64_t off = clock_offset(&parts[i]);
        for (size_t j = 0; j < parts[i].n; j++) {
            struct trace_rec r = parts[i].rec[j];
            r.t_start = shifted(r.t_start, off), r.t_end = shifted(r.t_end, off);
            items[k++] = (struct item){r, i};
        }
    }
    qsort(items, n, sizeof *items, by_start);

    int rc = 0;
    int64_t next_id = 0;
    for (size_t i = 0; i < n; i++) {
        struct trace_rec r = items[i].r;
        size_t h = hash_str(r.path) & (cap - 1);
        while (paths[h] && strcmp(paths[h], r.path))
            h = (h + 1) & (cap - 1);
        if (!paths[h])
            paths[h] = r.path, ids[h] = next_id++;
        r.file = ids[h];
        int64_t *slot = &renum[first[items[i].part] + r.seq];
        if (*slot != -1)
            rc = -2; /* a seq twice in one part */
        *slot = (int64_t)i;
        r.seq = i;
        out->rec[i] = r;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t p = out->rec[i].parent;
        if (p < 0)
            continue;
        size_t part = items[i].part;
        size_t lo = first[part], hi = part + 1 < nparts ? first[part + 1] : span;
        int64_t to = (uint64_t)p < hi - lo ? renum[lo + (size_t)p] : -1;
        if (to < 0)
            rc = -2; /* a parent that is no row of its part */
        out->rec[i].parent = to;
    }
    out->n = n;
    out->version = TRACE_VERSION;
    for (size_t i = 0; i < nparts; i++) {
        for (size_t j = 0; j < parts[i].nblocks; j++)
            out->blocks[out->nblocks++] = parts[i].blocks[j];
        parts[i].nblocks = 0;
        trace_free(&parts[i]);
    }
    free(items), free(paths), free(ids), free(first), free(renum);
    return rc;
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

const char *const trace_class_names[TCL_N] = {"read", "write", "meta"};

enum trace_class trace_class_of(enum trace_call c)
{
    switch (trace_calls[c].kind) {
    case TK_READ: case TK_MPI_READ: return TCL_READ;
    case TK_WRITE: case TK_MPI_WRITE: return TCL_WRITE;
    default: return TCL_META;
    }
}
