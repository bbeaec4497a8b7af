/* json.c - the one JSON writer (json.h). It depends on libc alone. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

extern char *program_invocation_short_name; /* glibc */

static _Noreturn void fail(const char *what, int err)
{
    fprintf(stderr, "%s: error: cannot write %s: %s\n", program_invocation_short_name, what,
            err ? strerror(err) : "write error");
    exit(1);
}

void json_check_stream(FILE *f, const char *what)
{
    errno = 0;
    if (fflush(f) != 0 || ferror(f))
        fail(what, errno);
}

void json_to_file(struct json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

void json_to_buf(struct json *j)
{
    memset(j, 0, sizeof *j);
    j->cap = 256;
    j->buf = malloc(j->cap);
    if (!j->buf)
        fail("a JSON buffer", ENOMEM);
    j->buf[0] = 0;
}

void json_free(struct json *j)
{
    free(j->buf);
    j->buf = NULL;
    j->len = j->cap = 0;
}

static void put(struct json *j, const char *s, size_t n)
{
    if (j->f) {
        if (fwrite(s, 1, n, j->f) != n)
            fail("JSON output", errno);
        return;
    }
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap;
        while (j->len + n + 1 > cap)
            cap *= 2;
        char *b = realloc(j->buf, cap);
        if (!b)
            fail("a JSON buffer", ENOMEM);
        j->buf = b;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = 0;
}

static void puts_(struct json *j, const char *s) { put(j, s, strlen(s)); }

__attribute__((format(printf, 2, 3))) static void putf(struct json *j, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put(j, tmp, (size_t)(n < (int)sizeof tmp ? n : (int)sizeof tmp - 1));
}

/* Before a value: the comma its place needs. */
static void sep(struct json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->comma[j->depth])
        put(j, ", ", 2);
    j->comma[j->depth] = true;
}

static void open_(struct json *j, char c)
{
    sep(j);
    put(j, &c, 1);
    if (j->depth + 1 >= JSON_MAX_DEPTH)
        fail("JSON output (nested too deep)", 0);
    j->comma[++j->depth] = false;
}

static void close_(struct json *j, char c)
{
    put(j, &c, 1);
    if (j->depth > 0)
        j->depth--;
}

void json_obj(struct json *j) { open_(j, '{'); }
void json_obj_end(struct json *j) { close_(j, '}'); }
void json_arr(struct json *j) { open_(j, '['); }
void json_arr_end(struct json *j) { close_(j, ']'); }

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    unsigned cp = c & (0xFF >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

void json_strn(struct json *j, const char *str, size_t n)
{
    sep(j);
    const unsigned char *s = (const unsigned char *)str;
    put(j, "\"", 1);
    size_t run = 0; /* bytes that go out as they are, not yet written */
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        const char *esc = NULL;
        char tmp[8];
        size_t len = 1;
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\r')
            esc = "\\r";
        else if (c < 0x20)
            snprintf(tmp, sizeof tmp, "\\u%04x", c), esc = tmp;
        else if (c >= 0x80 && (len = utf8_len(s + i, n - i)) == 0)
            snprintf(tmp, sizeof tmp, "\\udc%02x", c), esc = tmp, len = 1;
        if (esc) {
            put(j, (const char *)s + i - run, run);
            run = 0;
            puts_(j, esc);
        } else {
            run += len;
        }
        i += len;
    }
    put(j, (const char *)s + n - run, run);
    put(j, "\"", 1);
}

void json_str(struct json *j, const char *s)
{
    if (!s) {
        json_null(j);
        return;
    }
    json_strn(j, s, strlen(s));
}

void json_key(struct json *j, const char *key)
{
    json_str(j, key);
    put(j, ": ", 2);
    j->after_key = true;
}

void json_num(struct json *j, double v)
{
    sep(j);
    if (!isfinite(v))
        puts_(j, "null");
    else if (v == nearbyint(v) && fabs(v) < 9007199254740992.0)
        putf(j, "%.0f", v);
    else
        putf(j, "%.9g", v);
}

void json_fixed(struct json *j, double v, int decimals)
{
    sep(j);
    if (!isfinite(v))
        puts_(j, "null");
    else
        putf(j, "%.*f", decimals, v);
}

void json_int(struct json *j, long long v)
{
    sep(j);
    putf(j, "%lld", v);
}

void json_uint(struct json *j, unsigned long long v)
{
    sep(j);
    putf(j, "%llu", v);
}

void json_bool(struct json *j, bool v)
{
    sep(j);
    puts_(j, v ? "true" : "false");
}

void json_null(struct json *j)
{
    sep(j);
    puts_(j, "null");
}

void json_raw(struct json *j, const char *text)
{
    sep(j);
    puts_(j, text);
}

void json_kstr(struct json *j, const char *key, const char *v) { json_key(j, key); json_str(j, v); }
void json_knum(struct json *j, const char *key, double v) { json_key(j, key); json_num(j, v); }
void json_kfixed(struct json *j, const char *key, double v, int d) { json_key(j, key); json_fixed(j, v, d); }
void json_kint(struct json *j, const char *key, long long v) { json_key(j, key); json_int(j, v); }
void json_kuint(struct json *j, const char *key, unsigned long long v) { json_key(j, key); json_uint(j, v); }
void json_kbool(struct json *j, const char *key, bool v) { json_key(j, key); json_bool(j, v); }

void json_line_end(struct json *j, const char *what)
{
    put(j, "\n", 1);
    if (j->f)
        json_check_stream(j->f, what);
}
