/* spec_read.c - the line reader both workload formats use (spec_read.h). */
#include "spec_read.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


int rd_fail_at(struct rd *r, int line, const char *fmt, ...)
{
    if (r->errlen == 0)
        return -1;
    int n = line > 0 ? snprintf(r->err, r->errlen, "%s:%d: ", r->path, line)
                     : snprintf(r->err, r->errlen, "%s: ", r->path); /* an empty file */
    if (n >= 0 && (size_t)n < r->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#define rd_fail(r, ...) rd_fail_at((r), (r)->lineno, __VA_ARGS__)

char *rd_trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

int rd_open(struct rd *r, const char *path, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->err = err;
    r->errlen = errlen;
    r->f = fopen(path, "r");
    if (!r->f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* 1: a line is in r->text; 0: end of file; -1: error (in r->err). */
int rd_next(struct rd *r)
{
    if (r->pushed) {
        r->pushed = false;
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t got = getline(&line, &cap, r->f);
    if (got < 0) {
        free(line);
        return 0;
    }
    r->lineno++;
    size_t n = (size_t)got;
    bool nul = memchr(line, 0, n) != NULL;
    if (!nul && n < sizeof r->buf)
        memcpy(r->buf, line, n + 1);
    free(line);
    if (nul)
        return rd_fail(r, "the line holds a NUL byte: not a text file");
    if (n >= sizeof r->buf)
        return rd_fail(r, "line longer than %zu characters", sizeof r->buf - 2);
    char *s = r->buf;
    if (r->lineno == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0) /* UTF-8 byte order mark */
        s += 3;
    r->text = rd_trim(s);
    return 1;
}

void rd_back(struct rd *r)
{
    r->pushed = true;
}

/* Splits s in place at sep: ',' splits at every comma (fields trimmed, empty
 * ones kept); ' ' splits at runs of blanks. Returns the number of fields, or
 * max + 1 when there are more than max. */
int rd_split(char *s, char sep, char **field, int max)
{
    int n = 0;
    if (sep == ',') {
        for (;;) {
            char *c = strchr(s, ',');
            if (c)
                *c = '\0';
            if (n == max)
                return max + 1;
            field[n++] = rd_trim(s);
            if (!c)
                return n;
            s = c + 1;
        }
    }
    char *save;
    for (char *tok = strtok_r(s, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (n == max)
            return max + 1;
        field[n++] = tok;
    }
    return n;
}

/* The one number parser: a decimal count, with a K/M/G (x1024) suffix when
 * sizes are allowed, at most max. Errors name the field. */
int rd_num(struct rd *r, const char *text, const char *what, bool size_suffix, uint64_t max,
               uint64_t *out)
{
    const char *kind = size_suffix ? "a size" : "a number";
    if (!isdigit((unsigned char)text[0]))
        return rd_fail(r, "%s: '%s' is not %s", what, text, kind);
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE)
        return rd_fail(r, "%s: %s is too large", what, text);
    if (size_suffix && *end) {
        unsigned shift = 0;
        switch (*end) {
        case 'K': case 'k': shift = 10; break;
        case 'M': case 'm': shift = 20; break;
        case 'G': case 'g': shift = 30; break;
        }
        if (shift) {
            if (v > (ULLONG_MAX >> shift))
                return rd_fail(r, "%s: %s is too large", what, text);
            v <<= shift;
            end++;
        }
    }
    if (*end)
        return rd_fail(r, "%s: '%s' is not %s", what, text, kind);
    if (v > max)
        return rd_fail(r, "%s is %s; it must be at most %llu", what, text, (unsigned long long)max);
    *out = v;
    return 0;
}

int rd_num_u(struct rd *r, const char *text, const char *what, unsigned max, unsigned *out)
{
    uint64_t v;
    if (rd_num(r, text, what, false, max, &v))
        return -1;
    *out = (unsigned)v;
    return 0;
}

int rd_copy_name(struct rd *r, char *dst, size_t dstlen, const char *src, const char *what)
{
    if (!*src)
        return rd_fail(r, "%s is empty", what);
    if (strlen(src) >= dstlen)
        return rd_fail(r, "%s '%.40s...' is longer than %zu characters", what, src, dstlen - 1);
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* Checks a finished spec; a fault is reported at the file line of the spec
 * line at fault, or of the spec's header. */
int rd_finish_spec(struct rd *r, const struct spec *s, int header_line, const int *line_at)
{
    char msg[512];
    int bad;
    if (spec_check_lines(s, &bad, msg, sizeof msg) == 0)
        return 0;
    return rd_fail_at(r, bad >= 0 ? line_at[bad] : header_line, "%s", msg);
}
