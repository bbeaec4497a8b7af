/* spec.c - access specifications: the shipped workloads, validation, the
 * native spec format, Iometer .icf import, and the job as JSON.
 * The formats are described in docs/spec-format.md. */
#include "spec.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the job ------------------------------------------------------------ */

void job_init(struct job *job)
{
    memset(job, 0, sizeof *job);
}

static int find_spec(const struct job *job, const char *name)
{
    for (int i = 0; i < job->nspecs; i++)
        if (strcmp(job->specs[i].name, name) == 0)
            return i;
    return -1;
}

/* ---- shipped workloads --------------------------------------------------- */

struct mix {
    uint64_t size;
    unsigned access;
};

static const struct builtin {
    const char *name;
    const char *desc;
    unsigned read, random;
    uint64_t align; /* 0: sector (logical block) alignment, as Iometer's align 0 */
    int n;
    struct mix mix[10];
} builtins[] = {
    {"file-server",
     "Intel's File Server access specification as shipped with Iometer (StorageReview.com's "
     "file server test; PenguinoMeter paper, appendix): 512 B to 64 KiB, mostly 4 KiB, "
     "80% read, 100% random",
     80, 100, 0, 8,
     {{512, 10}, {1024, 5}, {2048, 5}, {4096, 60}, {8192, 2}, {16384, 4}, {32768, 4}, {65536, 10}}},
    {"web-server",
     "Web Server access specification distributed with Iometer (PenguinoMeter paper, appendix): "
     "512 B to 512 KiB, mostly 4 KiB, 100% read, 100% random",
     100, 100, 0, 10,
     {{512, 22}, {1024, 15}, {2048, 8}, {4096, 23}, {8192, 15}, {16384, 2}, {32768, 6},
      {65536, 7}, {131072, 1}, {524288, 1}}},
    {"database",
     "Database (OLTP) access specification, Intel/StorageReview.com as shipped with Iometer: "
     "8 KiB, 67% read, 100% random",
     67, 100, 0, 1, {{8192, 100}}},
    {"workstation",
     "StorageReview.com's Workstation access specification: 8 KiB, 80% read, 80% random",
     80, 80, 0, 1, {{8192, 100}}},
    {"4k-random-read", "4 KiB random reads: 100% read, 100% random, 4 KiB aligned", 100, 100, 4096, 1,
     {{4096, 100}}},
    {"4k-random-write", "4 KiB random writes: 0% read, 100% random, 4 KiB aligned", 0, 100, 4096, 1,
     {{4096, 100}}},
    {"1m-seq-read", "1 MiB sequential reads: 100% read, 0% random", 100, 0, 0, 1, {{1048576, 100}}},
    {"1m-seq-write", "1 MiB sequential writes: 0% read, 0% random", 0, 0, 0, 1, {{1048576, 100}}},
};

#define NBUILTINS ((int)(sizeof builtins / sizeof builtins[0]))

int spec_builtin(const char *name, struct spec *out)
{
    for (int b = 0; b < NBUILTINS; b++) {
        const struct builtin *bi = &builtins[b];
        if (strcmp(bi->name, name) != 0)
            continue;
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", bi->name);
        out->nlines = bi->n;
        for (int i = 0; i < bi->n; i++)
            out->line[i] = (struct spec_line){.size = bi->mix[i].size, .access = bi->mix[i].access,
                                              .read = bi->read, .random = bi->random, .burst = 1,
                                              .align = bi->align};
        return 0;
    }
    return -1;
}

void spec_list_builtins(FILE *f)
{
    for (int b = 0; b < NBUILTINS; b++)
        fprintf(f, "%s\t%s\n", builtins[b].name, builtins[b].desc);
}

/* ---- validation ---------------------------------------------------------- */

/* The rules, in one place. On a fault in one line, *bad is that line's index;
 * on a fault of the whole spec, -1. */
static int spec_check(const struct spec *s, int *bad, char *err, size_t errlen)
{
    *bad = -1;
    if (s->nlines <= 0) {
        snprintf(err, errlen, "spec '%s' has no lines", s->name);
        return -1;
    }
    if (s->nlines > SPEC_MAX_LINES) {
        snprintf(err, errlen, "spec '%s' has %d lines; at most %d are allowed", s->name, s->nlines,
                 SPEC_MAX_LINES);
        return -1;
    }
    uint64_t sum = 0;
    for (int i = 0; i < s->nlines; i++) {
        const struct spec_line *l = &s->line[i];
        const char *pct = NULL;
        unsigned v = 0;
        if (l->size == 0) {
            *bad = i;
            snprintf(err, errlen, "spec '%s': line %d: size is 0; it must be at least 1 byte", s->name, i + 1);
            return -1;
        }
        if (l->burst < 1) {
            *bad = i;
            snprintf(err, errlen, "spec '%s': line %d: burst is 0; it must be at least 1", s->name, i + 1);
            return -1;
        }
        if (l->access > 100) {
            pct = "% of accesses";
            v = l->access;
        } else if (l->read > 100) {
            pct = "% read";
            v = l->read;
        } else if (l->random > 100) {
            pct = "% random";
            v = l->random;
        }
        if (pct) {
            *bad = i;
            snprintf(err, errlen, "spec '%s': line %d: %s is %u; it must be within 0..100", s->name, i + 1, pct, v);
            return -1;
        }
        sum += l->access;
    }
    if (sum != 100) {
        snprintf(err, errlen, "spec '%s': the lines' %% of accesses add up to %llu, not 100", s->name,
                 (unsigned long long)sum);
        return -1;
    }
    return 0;
}

int spec_validate(const struct spec *s, char *err, size_t errlen)
{
    int bad;
    return spec_check(s, &bad, err, errlen);
}

static const char *qd_check(unsigned start, unsigned end, unsigned step, bool exponential)
{
    if (start < 1)
        return "the queue depth cycle starts at 0; it must start at 1 or more";
    if (end < start)
        return "the queue depth cycle ends below its start";
    if (step < 1)
        return "the queue depth cycle's step is 0; it must be at least 1";
    if (exponential && step < 2)
        return "an exponential queue depth cycle needs a step (factor) of at least 2";
    return NULL;
}

/* ---- the line reader, shared by both formats ----------------------------- */

struct rd {
    FILE *f;
    const char *path;
    int lineno;
    bool pushed; /* give the current line again */
    char buf[4096];
    char *text; /* the line without surrounding blanks */
    char *err;
    size_t errlen;
};

static int fail_at(struct rd *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(struct rd *r, int line, const char *fmt, ...)
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

#define fail(r, ...) fail_at((r), (r)->lineno, __VA_ARGS__)

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static int rd_open(struct rd *r, const char *path, char *err, size_t errlen)
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
static int rd_next(struct rd *r)
{
    if (r->pushed) {
        r->pushed = false;
        return 1;
    }
    if (!fgets(r->buf, sizeof r->buf, r->f))
        return 0;
    r->lineno++;
    size_t n = strlen(r->buf);
    if (n > 0 && r->buf[n - 1] != '\n' && !feof(r->f))
        return fail(r, "line longer than %zu characters", sizeof r->buf - 2);
    char *s = r->buf;
    if (r->lineno == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0) /* UTF-8 byte order mark */
        s += 3;
    r->text = trim(s);
    return 1;
}

static void rd_back(struct rd *r)
{
    r->pushed = true;
}

/* Splits s in place at sep: ',' splits at every comma (fields trimmed, empty
 * ones kept); ' ' splits at runs of blanks. Returns the number of fields, or
 * max + 1 when there are more than max. */
static int split(char *s, char sep, char **field, int max)
{
    int n = 0;
    if (sep == ',') {
        for (;;) {
            char *c = strchr(s, ',');
            if (c)
                *c = '\0';
            if (n == max)
                return max + 1;
            field[n++] = trim(s);
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
static int num(struct rd *r, const char *text, const char *what, bool size_suffix, uint64_t max,
               uint64_t *out)
{
    const char *kind = size_suffix ? "a size" : "a number";
    if (!isdigit((unsigned char)text[0]))
        return fail(r, "%s: '%s' is not %s", what, text, kind);
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE)
        return fail(r, "%s: %s is too large", what, text);
    if (size_suffix && *end) {
        unsigned shift = 0;
        switch (*end) {
        case 'K': case 'k': shift = 10; break;
        case 'M': case 'm': shift = 20; break;
        case 'G': case 'g': shift = 30; break;
        }
        if (shift) {
            if (v > (ULLONG_MAX >> shift))
                return fail(r, "%s: %s is too large", what, text);
            v <<= shift;
            end++;
        }
    }
    if (*end)
        return fail(r, "%s: '%s' is not %s", what, text, kind);
    if (v > max)
        return fail(r, "%s is %s; it must be at most %llu", what, text, (unsigned long long)max);
    *out = v;
    return 0;
}

static int num_u(struct rd *r, const char *text, const char *what, unsigned max, unsigned *out)
{
    uint64_t v;
    if (num(r, text, what, false, max, &v))
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int copy_name(struct rd *r, char *dst, size_t dstlen, const char *src, const char *what)
{
    if (!*src)
        return fail(r, "%s is empty", what);
    if (strlen(src) >= dstlen)
        return fail(r, "%s '%.40s...' is longer than %zu characters", what, src, dstlen - 1);
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* Checks a finished spec; a fault is reported at the file line of the spec
 * line at fault, or of the spec's header. */
static int finish_spec(struct rd *r, const struct spec *s, int header_line, const int *line_at)
{
    char msg[512];
    int bad;
    if (spec_check(s, &bad, msg, sizeof msg) == 0)
        return 0;
    return fail_at(r, bad >= 0 ? line_at[bad] : header_line, "%s", msg);
}

/* ---- Iometer .icf -------------------------------------------------------- */

struct icf {
    int spec_line[SPEC_MAX_SPECS];  /* where each spec's name is */
    int reply_line[SPEC_MAX_SPECS]; /* the first line with a reply size, 0 if none */
    uint64_t reply[SPEC_MAX_SPECS];
    int line_at[SPEC_MAX_LINES];    /* file lines of the spec being read */
    char assigned[SPEC_MAX_WORKERS][SPEC_NAME_LEN];
    int assigned_line[SPEC_MAX_WORKERS];
    int worker_line[SPEC_MAX_WORKERS];
    unsigned sections;              /* bit per section seen */
};

static const char *const test_types[] = {
    "NORMAL", "CYCLE_TARGETS", "CYCLE_WORKERS", "INCREMENT_TARGETS_PARALLEL", "INCREMENT_TARGETS_SERIAL",
    "CYCLE_WORKERS_AND_TARGETS", "CYCLE_OUTSTANDING_IOS", "CYCLE_OUTSTANDING_IOS_AND_TARGETS",
};
enum { TEST_NORMAL = 0, TEST_CYCLE_OUTSTANDING_IOS = 6 };

static const char *const sections[] = {"'TEST SETUP", "'RESULTS DISPLAY", "'ACCESS SPECIFICATIONS",
                                       "'MANAGER LIST"};

static bool hdr_is(const char *text, const char *hdr)
{
    return strcasecmp(text, hdr) == 0;
}

static bool hdr_starts(const char *text, const char *prefix)
{
    return strncasecmp(text, prefix, strlen(prefix)) == 0;
}

static bool is_section_start(const char *text)
{
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (hdr_starts(text, sections[i]))
            return true;
    return false;
}

static int truncated(struct rd *r, const char *section, const char *end)
{
    return fail(r, "the file ends inside the %s section, before %s: is it truncated?", section, end);
}

/* The next header line ('...), skipping blank lines. */
static int icf_header(struct rd *r, const char *section, const char *end, const char **hdr)
{
    int n;
    while ((n = rd_next(r)) > 0 && !*r->text)
        ;
    if (n < 0)
        return -1;
    if (n == 0)
        return truncated(r, section, end);
    if (r->text[0] != '\'')
        return fail(r, "expected a header line (starting with ') in the %s section, found '%s'", section,
                    r->text);
    *hdr = r->text;
    return 0;
}

/* The value line under header hdr, skipping column captions ("'<TAB>hours
 * minutes seconds"). A blank line is an empty value. The text lives until
 * the next read. */
static int icf_value(struct rd *r, const char *section, const char *end, const char *hdr,
                     const char **val)
{
    char h[160];
    snprintf(h, sizeof h, "%s", hdr);
    int n;
    while ((n = rd_next(r)) > 0 && r->text[0] == '\'' && (r->text[1] == ' ' || r->text[1] == '\t'))
        ;
    if (n < 0)
        return -1;
    if (n == 0)
        return truncated(r, section, end);
    if (r->text[0] == '\'')
        return fail(r, "%s has no value line (found the header %s instead)", h, r->text);
    *val = r->text;
    return 0;
}

/* A value line split at commas or blanks into exactly nf fields. */
static int icf_fields(struct rd *r, const char *section, const char *end, const char *hdr, char sep,
                      char **f, int nf)
{
    char h[160];
    const char *v;
    snprintf(h, sizeof h, "%s", hdr);
    if (icf_value(r, section, end, h, &v))
        return -1;
    char *s = r->text;
    int n = split(s, sep, f, nf);
    if (n != nf)
        return fail(r, "%s: expected %d values %s, found %s", h, nf,
                    sep == ',' ? "separated by commas" : "separated by blanks", n > nf ? "more" : "fewer");
    return 0;
}

static int enabled(struct rd *r, const char *text, const char *what, bool *out)
{
    if (strcasecmp(text, "ENABLED") == 0)
        *out = true;
    else if (strcasecmp(text, "DISABLED") == 0)
        *out = false;
    else
        return fail(r, "%s: expected ENABLED or DISABLED, found '%s'", what, text);
    return 0;
}

static int icf_version(struct rd *r, const char *text)
{
    const char *p = text + strlen("Version");
    if (!isspace((unsigned char)*p))
        return fail(r, "expected 'Version 1.1.0' or 'Version yyyy.mm.dd', found '%s'", text);
    while (isspace((unsigned char)*p))
        p++;
    for (int part = 0; part < 3; part++) {
        if (!isdigit((unsigned char)*p))
            return fail(r, "'%s' is not an Iometer version (1.1.0 or yyyy.mm.dd)", text);
        while (isdigit((unsigned char)*p))
            p++;
        if (part < 2 && *p++ != '.')
            return fail(r, "'%s' is not an Iometer version (1.1.0 or yyyy.mm.dd)", text);
    }
    if (*p && *p != '-' && !isspace((unsigned char)*p)) /* "2003.12.16-post" is a real one */
        return fail(r, "'%s' is not an Iometer version (1.1.0 or yyyy.mm.dd)", text);
    return 0;
}

static int icf_test_setup(struct rd *r, struct job *job)
{
    static const char S[] = "TEST SETUP", E[] = "'END test setup";
    unsigned qd[3] = {0, 0, 0};
    bool qd_exp = false;
    int qd_line = 0, test_type = TEST_NORMAL;
    const char *h, *v;
    char *f[4];
    for (;;) {
        if (icf_header(r, S, E, &h))
            return -1;
        if (hdr_is(h, E))
            break;
        if (hdr_is(h, "'Test Description")) {
            if (icf_value(r, S, E, h, &v))
                return -1;
            if (strlen(v) >= sizeof job->description)
                return fail(r, "the test description is longer than %zu characters",
                            sizeof job->description - 1);
            snprintf(job->description, sizeof job->description, "%s", v);
        } else if (hdr_is(h, "'Run Time")) {
            if (icf_fields(r, S, E, h, ' ', f, 3))
                return -1;
            uint64_t hms[3];
            static const char *const what[] = {"run time hours", "run time minutes", "run time seconds"};
            for (int i = 0; i < 3; i++)
                if (num(r, f[i], what[i], false, UINT32_MAX, &hms[i]))
                    return -1;
            job->run_s = (double)(hms[0] * 3600 + hms[1] * 60 + hms[2]);
        } else if (hdr_starts(h, "'Ramp Up Time")) {
            uint64_t s;
            if (icf_value(r, S, E, h, &v) || num(r, v, "ramp up time", false, UINT32_MAX, &s))
                return -1;
            job->ramp_s = (double)s;
        } else if (hdr_is(h, "'Default Disk Workers to Spawn") || hdr_is(h, "'Default Workers to Spawn")) {
            /* Informational: the MANAGER LIST says which workers run. */
            uint64_t n;
            if (icf_value(r, S, E, h, &v))
                return -1;
            if (strcasecmp(v, "NUMBER_OF_CPUS") != 0 && num(r, v, "disk workers to spawn", false, UINT32_MAX, &n))
                return -1;
        } else if (hdr_is(h, "'Default Network Workers to Spawn") || hdr_is(h, "'Record Results") ||
                   hdr_is(h, "'Worker Cycling") || hdr_is(h, "'Disk Cycling")) {
            /* Display and recording settings, and the cycling of workers and
             * targets, which only unsupported test types use. */
            if (icf_value(r, S, E, h, &v))
                return -1;
        } else if (hdr_is(h, "'Queue Depth Cycling")) {
            if (icf_fields(r, S, E, h, ' ', f, 4))
                return -1;
            static const char *const what[] = {"queue depth cycling start", "queue depth cycling end",
                                               "queue depth cycling step"};
            for (int i = 0; i < 3; i++)
                if (num_u(r, f[i], what[i], UINT_MAX, &qd[i]))
                    return -1;
            if (strcasecmp(f[3], "LINEAR") == 0 || strcmp(f[3], "0") == 0)
                qd_exp = false;
            else if (strcasecmp(f[3], "EXPONENTIAL") == 0 || strcmp(f[3], "1") == 0)
                qd_exp = true;
            else
                return fail(r, "queue depth cycling step type: expected LINEAR or EXPONENTIAL, found '%s'", f[3]);
            qd_line = r->lineno;
        } else if (hdr_is(h, "'Test Type")) {
            if (icf_value(r, S, E, h, &v))
                return -1;
            int n = (int)(sizeof test_types / sizeof test_types[0]);
            test_type = -1;
            for (int i = 0; i < n; i++)
                if (strcasecmp(v, test_types[i]) == 0 || (v[0] == '0' + i && v[1] == '\0'))
                    test_type = i;
            if (test_type < 0)
                return fail(r, "unknown Test Type '%s'", v);
            if (test_type != TEST_NORMAL && test_type != TEST_CYCLE_OUTSTANDING_IOS)
                return fail(r, "Test Type %s is not supported: osmeter runs the workers the file lists, "
                               "and cycles only outstanding I/Os", test_types[test_type]);
        } else {
            return fail(r, "unknown header %s in the TEST SETUP section", h);
        }
    }
    if (test_type == TEST_CYCLE_OUTSTANDING_IOS) {
        if (!qd_line)
            return fail(r, "Test Type CYCLE_OUTSTANDING_IOS needs a 'Queue Depth Cycling line");
        const char *bad = qd_check(qd[0], qd[1], qd[2], qd_exp);
        if (bad)
            return fail_at(r, qd_line, "%s", bad);
        job->cycle_qd = true;
        job->qd_start = qd[0];
        job->qd_end = qd[1];
        job->qd_step = qd[2];
        job->qd_exponential = qd_exp;
    }
    return 0;
}

static int icf_results_display(struct rd *r)
{
    static const char S[] = "RESULTS DISPLAY", E[] = "'END results display";
    int n;
    while ((n = rd_next(r)) > 0) {
        if (hdr_is(r->text, E))
            return 0;
        if (is_section_start(r->text))
            return fail(r, "%s begins inside the %s section (no %s before it)", r->text, S, E);
    }
    return n < 0 ? -1 : truncated(r, S, E);
}

/* One spec line: size, % of size, % reads, % random, delay, burst, align[, reply]. */
static int icf_spec_line(struct rd *r, struct icf *c, struct job *job, int nf)
{
    struct spec *s = &job->specs[job->nspecs - 1];
    if (s->nlines == SPEC_MAX_LINES)
        return fail(r, "spec '%s' has more than %d lines", s->name, SPEC_MAX_LINES);
    char *f[8];
    int n = split(r->text, ',', f, 8);
    if (n != nf)
        return fail(r, "spec '%s': expected %d comma-separated values (size,%% of size,%% reads,"
                       "%% random,delay,burst,align%s), found %d",
                    s->name, nf, nf == 8 ? ",reply" : "", n);
    struct spec_line *l = &s->line[s->nlines];
    uint64_t reply = 0;
    if (num(r, f[0], "size", false, UINT64_MAX, &l->size) ||
        num_u(r, f[1], "% of size", UINT_MAX, &l->access) || num_u(r, f[2], "% reads", UINT_MAX, &l->read) ||
        num_u(r, f[3], "% random", UINT_MAX, &l->random) || num_u(r, f[4], "delay", UINT_MAX, &l->delay_ms) ||
        num_u(r, f[5], "burst", UINT_MAX, &l->burst) || num(r, f[6], "align", false, UINT64_MAX, &l->align) ||
        (nf == 8 && num(r, f[7], "reply", false, UINT64_MAX, &reply)))
        return -1;
    l->reply = reply;
    int si = job->nspecs - 1;
    if (reply && !c->reply_line[si]) {
        c->reply_line[si] = r->lineno;
        c->reply[si] = reply;
    }
    c->line_at[s->nlines++] = r->lineno;
    return 0;
}

static int icf_access_specs(struct rd *r, struct icf *c, struct job *job)
{
    static const char S[] = "ACCESS SPECIFICATIONS", E[] = "'END access specifications";
    const char *h, *v;
    for (;;) {
        if (icf_header(r, S, E, &h))
            return -1;
        if (hdr_is(h, E))
            return 0;
        if (!hdr_is(h, "'Access specification name,default assignment"))
            return fail(r, "unknown header %s in the %s section", h, S);
        if (icf_value(r, S, E, h, &v))
            return -1;
        /* NAME,DEFAULT-ASSIGNMENT; the name may itself hold commas. */
        char *comma = strrchr(r->text, ',');
        if (!comma)
            return fail(r, "expected NAME,DEFAULT-ASSIGNMENT, found '%s'", v);
        *comma = '\0';
        char *name = trim(r->text);
        if (job->nspecs == SPEC_MAX_SPECS)
            return fail(r, "more than %d access specifications", SPEC_MAX_SPECS);
        int dup = find_spec(job, name);
        if (dup >= 0)
            return fail(r, "access specification '%s' is defined twice (first at line %d)", name,
                        c->spec_line[dup]);
        struct spec *s = &job->specs[job->nspecs];
        memset(s, 0, sizeof *s);
        if (copy_name(r, s->name, sizeof s->name, name, "access specification name"))
            return -1;
        int header_line = c->spec_line[job->nspecs++] = r->lineno;

        if (icf_header(r, S, E, &h))
            return -1;
        int nf;
        if (hdr_is(h, "'size,% of size,% reads,% random,delay,burst,align,reply"))
            nf = 8;
        else if (hdr_is(h, "'size,% of size,% reads,% random,delay,burst,align"))
            nf = 7;
        else
            return fail(r, "expected the header 'size,%% of size,%% reads,%% random,delay,burst,align,reply "
                           "for spec '%s', found %s", s->name, h);
        int n;
        while ((n = rd_next(r)) > 0) {
            if (!*r->text)
                continue;
            if (r->text[0] == '\'') {
                rd_back(r);
                break;
            }
            if (icf_spec_line(r, c, job, nf))
                return -1;
        }
        if (n < 0)
            return -1;
        if (n == 0)
            return truncated(r, S, E);
        if (finish_spec(r, s, header_line, c->line_at))
            return -1;
    }
}

static int icf_worker_defaults(struct rd *r, struct worker_cfg *w)
{
    static const char S[] = "MANAGER LIST", E[] = "'End default target settings for worker";
    const char *h;
    char *f[5];
    for (;;) {
        if (icf_header(r, S, E, &h))
            return -1;
        if (hdr_is(h, E))
            return 0;
        if (hdr_is(h, "'Number of outstanding IOs,test connection rate,transactions per connection") ||
            hdr_is(h, "'Number of outstanding IOs,test connection rate,transactions per connection,"
                      "use fixed seed,fixed seed value")) {
            int nf = hdr_is(h, "'Number of outstanding IOs,test connection rate,transactions per connection") ? 3 : 5;
            bool conn_rate;
            unsigned per_conn;
            if (icf_fields(r, S, E, h, ',', f, nf) ||
                num_u(r, f[0], "number of outstanding IOs", UINT_MAX, &w->outstanding) ||
                enabled(r, f[1], "test connection rate", &conn_rate) ||
                num_u(r, f[2], "transactions per connection", UINT_MAX, &per_conn))
                return -1;
            if (w->outstanding < 1)
                return fail(r, "worker '%s': number of outstanding IOs is 0; it must be at least 1", w->name);
            if (conn_rate)
                return fail(r, "worker '%s': test connection rate is ENABLED; osmeter's disk generator does "
                               "not support it (it keeps each target open for the whole run)", w->name);
            if (nf == 5) {
                if (enabled(r, f[3], "use fixed seed", &w->fixed_seed) ||
                    num(r, f[4], "fixed seed value", false, UINT64_MAX, &w->seed))
                    return -1;
                if (!w->fixed_seed)
                    w->seed = 0;
            }
        } else if (hdr_is(h, "'Disk maximum size,starting sector") ||
                   hdr_is(h, "'Disk maximum size,starting sector,Data pattern")) {
            int nf = hdr_is(h, "'Disk maximum size,starting sector") ? 2 : 3;
            uint64_t max, start, pattern = DATA_REPEATING;
            if (icf_fields(r, S, E, h, ',', f, nf) ||
                num(r, f[0], "disk maximum size (sectors)", false, UINT64_MAX / 512, &max) ||
                num(r, f[1], "starting sector", false, UINT64_MAX / 512, &start) ||
                (nf == 3 && num(r, f[2], "data pattern (0 repeating, 1 pseudo-random, 2 random)", false,
                                DATA_RANDOM, &pattern)))
                return -1;
            w->max_bytes = max * 512;
            w->start_bytes = start * 512;
            w->pattern = (enum data_pattern)pattern;
        } else {
            return fail(r, "unknown header %s in worker '%s''s default target settings", h, w->name);
        }
    }
}

static int icf_assigned_specs(struct rd *r, struct icf *c, int wi, const char *worker)
{
    static const char S[] = "MANAGER LIST", E[] = "'End assigned access specs";
    int n;
    while ((n = rd_next(r)) > 0) {
        if (!*r->text)
            continue;
        if (hdr_is(r->text, E))
            return 0;
        if (r->text[0] == '\'')
            return fail(r, "expected an access spec name or %s, found %s", E, r->text);
        if (c->assigned_line[wi])
            return fail(r, "worker '%s' is assigned more than one access spec ('%s' and '%s'); "
                           "osmeter supports only one spec per worker",
                        worker, c->assigned[wi], r->text);
        if (copy_name(r, c->assigned[wi], sizeof c->assigned[wi], r->text, "access spec name"))
            return -1;
        c->assigned_line[wi] = r->lineno;
    }
    return n < 0 ? -1 : truncated(r, S, E);
}

/* Targets are ignored: the target comes from the command line. */
static int icf_skip_targets(struct rd *r)
{
    static const char S[] = "MANAGER LIST", E[] = "'End target assignments";
    int n;
    while ((n = rd_next(r)) > 0) {
        if (hdr_is(r->text, E))
            return 0;
        if (hdr_is(r->text, "'End worker") || hdr_is(r->text, "'End manager") ||
            hdr_is(r->text, "'END manager list") || is_section_start(r->text))
            return fail(r, "%s inside the target assignments (no %s before it)", r->text, E);
    }
    return n < 0 ? -1 : truncated(r, S, E);
}

static int icf_worker(struct rd *r, struct icf *c, struct job *job)
{
    static const char S[] = "MANAGER LIST", E[] = "'End worker";
    const char *h, *v;
    if (icf_value(r, S, E, "'Worker", &v))
        return -1;
    if (job->nworkers == SPEC_MAX_WORKERS)
        return fail(r, "more than %d workers", SPEC_MAX_WORKERS);
    int wi = job->nworkers++;
    struct worker_cfg *w = &job->workers[wi];
    memset(w, 0, sizeof *w);
    w->outstanding = 1;
    if (copy_name(r, w->name, sizeof w->name, v, "worker name"))
        return -1;
    c->worker_line[wi] = r->lineno;
    bool typed = false;
    for (;;) {
        if (icf_header(r, S, E, &h))
            return -1;
        if (hdr_is(h, E))
            break;
        if (hdr_is(h, "'Worker type")) {
            if (icf_value(r, S, E, h, &v))
                return -1;
            if (strcasecmp(v, "DISK") != 0)
                return fail(r, "worker '%s' is a %s worker; osmeter's disk generator runs only DISK workers",
                            w->name, v);
            typed = true;
        } else if (hdr_is(h, "'Default target settings for worker")) {
            if (icf_worker_defaults(r, w))
                return -1;
        } else if (hdr_is(h, "'Assigned access specs")) {
            if (icf_assigned_specs(r, c, wi, w->name))
                return -1;
        } else if (hdr_is(h, "'Target assignments")) {
            if (icf_skip_targets(r))
                return -1;
        } else {
            return fail(r, "unknown header %s in worker '%s'", h, w->name);
        }
    }
    if (!typed)
        return fail_at(r, c->worker_line[wi], "worker '%s' has no 'Worker type", w->name);
    if (!c->assigned_line[wi])
        return fail_at(r, c->worker_line[wi], "worker '%s' has no assigned access spec", w->name);
    return 0;
}

static int icf_manager(struct rd *r, struct icf *c, struct job *job)
{
    static const char S[] = "MANAGER LIST", E[] = "'End manager";
    const char *h, *v;
    if (icf_value(r, S, E, "'Manager ID, manager name", &v))
        return -1;
    for (;;) {
        if (icf_header(r, S, E, &h))
            return -1;
        if (hdr_is(h, E))
            return 0;
        if (hdr_is(h, "'Manager network address")) {
            /* The address may be a blank line or missing (the local manager). */
            int n = rd_next(r);
            if (n < 0)
                return -1;
            if (n == 0)
                return truncated(r, S, E);
            if (r->text[0] == '\'')
                rd_back(r);
        } else if (hdr_is(h, "'Worker")) {
            if (icf_worker(r, c, job))
                return -1;
        } else {
            return fail(r, "unknown header %s in a manager", h);
        }
    }
}

static int icf_manager_list(struct rd *r, struct icf *c, struct job *job)
{
    static const char S[] = "MANAGER LIST", E[] = "'END manager list";
    const char *h;
    for (;;) {
        if (icf_header(r, S, E, &h))
            return -1;
        if (hdr_is(h, E))
            return 0;
        if (!hdr_is(h, "'Manager ID, manager name"))
            return fail(r, "unknown header %s in the %s section (expected 'Manager ID, manager name or %s)", h,
                        S, E);
        if (icf_manager(r, c, job))
            return -1;
    }
}

/* Each worker's spec, by name, once the whole file is read. */
static int icf_assign(struct rd *r, struct icf *c, struct job *job)
{
    for (int wi = 0; wi < job->nworkers; wi++) {
        struct worker_cfg *w = &job->workers[wi];
        const char *name = c->assigned[wi];
        int line = c->assigned_line[wi];
        int si = find_spec(job, name);
        if (si < 0 && strcmp(name, "Idle") == 0)
            return fail_at(r, line, "worker '%s' is assigned Iometer's Idle spec; osmeter has no idle "
                                    "workers: leave the worker out", w->name);
        if (si < 0)
            return fail_at(r, line, "worker '%s' is assigned access spec '%s', which the file does not define",
                           w->name, name);
        if (c->reply_line[si])
            return fail_at(r, line, "worker '%s' is assigned access spec '%s', which has a reply size of "
                                    "%llu bytes (line %d): reply size is a network feature; osmeter's disk "
                                    "generator does not support it",
                           w->name, name, (unsigned long long)c->reply[si], c->reply_line[si]);
        w->spec = si;
    }
    return 0;
}

int icf_parse_file(const char *path, struct job *job, char *err, size_t errlen)
{
    struct icf c = {0};
    struct rd r;
    job_init(job);
    if (rd_open(&r, path, err, errlen))
        return -1;
    int n, rc = 0;
    while ((n = rd_next(&r)) > 0 && !*r.text)
        ;
    if (n == 0)
        rc = fail(&r, "the file is empty; an Iometer .icf file starts with a Version line");
    else if (n > 0 && !hdr_starts(r.text, "Version"))
        rc = fail(&r, "not an Iometer .icf file: it should start with 'Version 1.1.0' or 'Version yyyy.mm.dd'");
    else if (n > 0)
        rc = icf_version(&r, r.text);
    else
        rc = -1;

    while (rc == 0 && (n = rd_next(&r)) > 0) {
        const char *t = r.text;
        if (!*t)
            continue;
        if (hdr_starts(t, "Version")) { /* Iometer repeats the version at the end */
            rc = icf_version(&r, t);
            continue;
        }
        int sec = -1;
        for (int i = 0; i < 4; i++)
            if (hdr_starts(t, sections[i]))
                sec = i;
        if (sec < 0) {
            rc = fail(&r, "expected a section ('TEST SETUP, 'RESULTS DISPLAY, 'ACCESS SPECIFICATIONS or "
                          "'MANAGER LIST), found '%s'", t);
            break;
        }
        if (c.sections & (1u << sec)) {
            rc = fail(&r, "a second %s section", sections[sec] + 1);
            break;
        }
        c.sections |= 1u << sec;
        switch (sec) {
        case 0: rc = icf_test_setup(&r, job); break;
        case 1: rc = icf_results_display(&r); break;
        case 2: rc = icf_access_specs(&r, &c, job); break;
        case 3: rc = icf_manager_list(&r, &c, job); break;
        }
    }
    if (rc == 0 && n < 0)
        rc = -1;
    if (rc == 0 && !(c.sections & (1u << 2)) && job->nworkers > 0)
        rc = fail(&r, "the file has workers but no ACCESS SPECIFICATIONS section");
    if (rc == 0 && job->nspecs == 0)
        rc = fail(&r, "the file defines no access specification");
    if (rc == 0)
        rc = icf_assign(&r, &c, job);
    fclose(r.f);
    if (rc)
        job_init(job);
    return rc;
}

/* ---- the native format --------------------------------------------------- */

enum { SEC_NONE, SEC_SPEC, SEC_WORKER, SEC_TEST };

struct native {
    int sec;
    unsigned keys;  /* bit per key given in the current section */
    int spec_line;  /* the header of the spec being read */
    int line_at[SPEC_MAX_LINES];
    int spec_header[SPEC_MAX_SPECS];
    char wspec[SPEC_MAX_WORKERS][SPEC_NAME_LEN];
    int wspec_line[SPEC_MAX_WORKERS];
    int worker_line[SPEC_MAX_WORKERS];
    bool had_test;
};

/* Cuts a comment: '#' at the start or after a blank. */
static char *strip_comment(char *s)
{
    for (char *p = s; *p; p++)
        if (*p == '#' && (p == s || p[-1] == ' ' || p[-1] == '\t')) {
            *p = '\0';
            break;
        }
    return trim(s);
}

static int native_end_section(struct rd *r, struct native *c, struct job *job)
{
    if (c->sec == SEC_SPEC)
        return finish_spec(r, &job->specs[job->nspecs - 1], c->spec_line, c->line_at);
    return 0;
}

static int native_section(struct rd *r, struct native *c, struct job *job, char *t)
{
    size_t len = strlen(t);
    if (t[len - 1] != ']')
        return fail(r, "a section header must end with ']': '%s'", t);
    t[len - 1] = '\0';
    char *body = trim(t + 1);
    char *name = body + strcspn(body, " \t");
    if (*name)
        *name++ = '\0';
    name = trim(name);
    c->keys = 0;
    if (strcmp(body, "spec") == 0) {
        if (job->nspecs == SPEC_MAX_SPECS)
            return fail(r, "more than %d specs", SPEC_MAX_SPECS);
        int dup = find_spec(job, name);
        if (dup >= 0)
            return fail(r, "spec '%s' is defined twice (first at line %d)", name, c->spec_header[dup]);
        struct spec *s = &job->specs[job->nspecs];
        memset(s, 0, sizeof *s);
        if (copy_name(r, s->name, sizeof s->name, name, "[spec NAME]: the name"))
            return -1;
        c->spec_header[job->nspecs++] = c->spec_line = r->lineno;
        c->sec = SEC_SPEC;
    } else if (strcmp(body, "worker") == 0) {
        if (job->nworkers == SPEC_MAX_WORKERS)
            return fail(r, "more than %d workers", SPEC_MAX_WORKERS);
        for (int i = 0; i < job->nworkers; i++)
            if (strcmp(job->workers[i].name, name) == 0)
                return fail(r, "worker '%s' is defined twice (first at line %d)", name, c->worker_line[i]);
        struct worker_cfg *w = &job->workers[job->nworkers];
        memset(w, 0, sizeof *w);
        w->outstanding = 1;
        w->spec = -1;
        if (copy_name(r, w->name, sizeof w->name, name, "[worker NAME]: the name"))
            return -1;
        c->worker_line[job->nworkers++] = r->lineno;
        c->sec = SEC_WORKER;
    } else if (strcmp(body, "test") == 0) {
        if (*name)
            return fail(r, "[test] takes no name");
        if (c->had_test)
            return fail(r, "a second [test] section");
        c->had_test = true;
        c->sec = SEC_TEST;
    } else {
        return fail(r, "unknown section [%s]: expected [spec NAME], [worker NAME] or [test]", body);
    }
    return 0;
}

/* size access% read% random% [delay_ms [burst [align]]] */
static int native_spec_line(struct rd *r, struct native *c, struct job *job, char *t)
{
    struct spec *s = &job->specs[job->nspecs - 1];
    if (s->nlines == SPEC_MAX_LINES)
        return fail(r, "spec '%s' has more than %d lines", s->name, SPEC_MAX_LINES);
    char *f[7];
    int n = split(t, ' ', f, 7);
    if (n < 4 || n > 7)
        return fail(r, "a spec line is: size access%% read%% random%% [delay_ms [burst [align]]] "
                       "(4 to 7 values), found %s", n < 4 ? "fewer" : "more");
    struct spec_line *l = &s->line[s->nlines];
    *l = (struct spec_line){.burst = 1};
    if (num(r, f[0], "size", true, UINT64_MAX, &l->size) || num_u(r, f[1], "access %", UINT_MAX, &l->access) ||
        num_u(r, f[2], "read %", UINT_MAX, &l->read) || num_u(r, f[3], "random %", UINT_MAX, &l->random) ||
        (n > 4 && num_u(r, f[4], "delay_ms", UINT_MAX, &l->delay_ms)) ||
        (n > 5 && num_u(r, f[5], "burst", UINT_MAX, &l->burst)) ||
        (n > 6 && num(r, f[6], "align", true, UINT64_MAX, &l->align)))
        return -1;
    c->line_at[s->nlines++] = r->lineno;
    return 0;
}

static int key_once(struct rd *r, struct native *c, const char *const *keys, const char *key, int *k)
{
    for (*k = 0; keys[*k]; (*k)++)
        if (strcmp(keys[*k], key) == 0)
            break;
    if (!keys[*k]) {
        char known[256] = "";
        for (int i = 0; keys[i]; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", keys[i]);
        return fail(r, "unknown key '%s' (this section takes %s)", key, known);
    }
    if (c->keys & (1u << *k))
        return fail(r, "'%s' is given twice in this section", key);
    c->keys |= 1u << *k;
    return 0;
}

static int native_worker_key(struct rd *r, struct native *c, struct job *job, const char *key, char *v)
{
    static const char *const keys[] = {"spec", "outstanding", "max_size", "start", "pattern", "seed", NULL};
    int wi = job->nworkers - 1, k;
    struct worker_cfg *w = &job->workers[wi];
    if (key_once(r, c, keys, key, &k))
        return -1;
    switch (k) {
    case 0:
        if (copy_name(r, c->wspec[wi], sizeof c->wspec[wi], v, "spec name"))
            return -1;
        c->wspec_line[wi] = r->lineno;
        return 0;
    case 1:
        if (num_u(r, v, "outstanding", UINT_MAX, &w->outstanding))
            return -1;
        if (w->outstanding < 1)
            return fail(r, "outstanding is 0; it must be at least 1");
        return 0;
    case 2: return num(r, v, "max_size", true, UINT64_MAX, &w->max_bytes);
    case 3: return num(r, v, "start", true, UINT64_MAX, &w->start_bytes);
    case 4:
        if (strcmp(v, "repeating") == 0)
            w->pattern = DATA_REPEATING;
        else if (strcmp(v, "pseudo-random") == 0)
            w->pattern = DATA_PSEUDO_RANDOM;
        else if (strcmp(v, "random") == 0)
            w->pattern = DATA_RANDOM;
        else
            return fail(r, "pattern: expected repeating, pseudo-random or random, found '%s'", v);
        return 0;
    default:
        w->fixed_seed = true;
        return num(r, v, "seed", false, UINT64_MAX, &w->seed);
    }
}

static int native_test_key(struct rd *r, struct native *c, struct job *job, const char *key, char *v)
{
    static const char *const keys[] = {"run_time", "ramp_up", "transactions", "cycle_outstanding",
                                       "description", NULL};
    int k;
    uint64_t n;
    if (key_once(r, c, keys, key, &k))
        return -1;
    switch (k) {
    case 0:
        if (num(r, v, "run_time (seconds)", false, UINT32_MAX, &n))
            return -1;
        job->run_s = (double)n;
        return 0;
    case 1:
        if (num(r, v, "ramp_up (seconds)", false, UINT32_MAX, &n))
            return -1;
        job->ramp_s = (double)n;
        return 0;
    case 2: return num(r, v, "transactions", false, UINT64_MAX, &job->transactions);
    case 3: {
        char *f[4];
        if (split(v, ' ', f, 4) != 4)
            return fail(r, "cycle_outstanding = START END STEP linear|exponential");
        if (num_u(r, f[0], "cycle_outstanding start", UINT_MAX, &job->qd_start) ||
            num_u(r, f[1], "cycle_outstanding end", UINT_MAX, &job->qd_end) ||
            num_u(r, f[2], "cycle_outstanding step", UINT_MAX, &job->qd_step))
            return -1;
        if (strcmp(f[3], "linear") == 0)
            job->qd_exponential = false;
        else if (strcmp(f[3], "exponential") == 0)
            job->qd_exponential = true;
        else
            return fail(r, "cycle_outstanding: expected linear or exponential, found '%s'", f[3]);
        const char *bad = qd_check(job->qd_start, job->qd_end, job->qd_step, job->qd_exponential);
        if (bad)
            return fail(r, "%s", bad);
        job->cycle_qd = true;
        return 0;
    }
    default:
        if (strlen(v) >= sizeof job->description)
            return fail(r, "description is longer than %zu characters", sizeof job->description - 1);
        snprintf(job->description, sizeof job->description, "%s", v);
        return 0;
    }
}

static int native_key(struct rd *r, struct native *c, struct job *job, char *t)
{
    char *eq = strchr(t, '=');
    if (!eq)
        return fail(r, "expected KEY = VALUE, found '%s'", t);
    *eq = '\0';
    char *key = trim(t), *v = trim(eq + 1);
    if (strcmp(key, "description") != 0) /* a description runs to the end of the line */
        v = strip_comment(v);
    if (c->sec == SEC_WORKER)
        return native_worker_key(r, c, job, key, v);
    return native_test_key(r, c, job, key, v);
}

/* Resolves each worker's spec: one from the file, else a shipped workload. */
static int native_finish(struct rd *r, struct native *c, struct job *job)
{
    if (job->nworkers == 0) {
        if (job->nspecs == 0)
            return fail(r, "the file defines no [spec] and no [worker]");
        struct worker_cfg *w = &job->workers[job->nworkers++];
        memset(w, 0, sizeof *w);
        snprintf(w->name, sizeof w->name, "Worker 1");
        w->outstanding = 1;
        w->spec = 0;
        return 0;
    }
    for (int wi = 0; wi < job->nworkers; wi++) {
        struct worker_cfg *w = &job->workers[wi];
        const char *name = c->wspec[wi];
        if (!c->wspec_line[wi])
            return fail_at(r, c->worker_line[wi], "worker '%s' has no 'spec = NAME'", w->name);
        int si = find_spec(job, name);
        if (si < 0) {
            struct spec shipped;
            if (spec_builtin(name, &shipped) != 0)
                return fail_at(r, c->wspec_line[wi], "worker '%s': spec '%s' is not defined in this file "
                                                     "and is not a shipped workload", w->name, name);
            if (job->nspecs == SPEC_MAX_SPECS)
                return fail_at(r, c->wspec_line[wi], "more than %d specs", SPEC_MAX_SPECS);
            si = job->nspecs++;
            job->specs[si] = shipped;
        }
        w->spec = si;
    }
    return 0;
}

/* An .icf by its name or its first line. */
static bool looks_like_icf(const char *path)
{
    size_t n = strlen(path);
    if (n >= 4 && strcasecmp(path + n - 4, ".icf") == 0)
        return true;
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[64] = "";
    bool icf = fgets(line, sizeof line, f) && strncmp(line, "Version", 7) == 0;
    fclose(f);
    return icf;
}

int spec_parse_file(const char *path, struct job *job, char *err, size_t errlen)
{
    if (looks_like_icf(path))
        return icf_parse_file(path, job, err, errlen);
    struct native c = {0};
    struct rd r;
    job_init(job);
    if (rd_open(&r, path, err, errlen))
        return -1;
    int n, rc = 0;
    while (rc == 0 && (n = rd_next(&r)) > 0) {
        char *t = r.text;
        if (!*t || *t == '#')
            continue;
        if (*t == '[') {
            t = strip_comment(t);
            rc = native_end_section(&r, &c, job);
            if (rc == 0)
                rc = native_section(&r, &c, job, t);
        } else if (c.sec == SEC_SPEC) {
            rc = native_spec_line(&r, &c, job, strip_comment(t));
        } else if (c.sec == SEC_WORKER || c.sec == SEC_TEST) {
            rc = native_key(&r, &c, job, t);
        } else {
            rc = fail(&r, "expected a section first: [spec NAME], [worker NAME] or [test]");
        }
    }
    if (rc == 0 && n < 0)
        rc = -1;
    if (rc == 0)
        rc = native_end_section(&r, &c, job);
    if (rc == 0)
        rc = native_finish(&r, &c, job);
    fclose(r.f);
    if (rc)
        job_init(job);
    return rc;
}

/* ---- JSON ----------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        switch (ch) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (ch < 0x20 || ch == 0x7f)
                fprintf(f, "\\u%04x", ch);
            else
                fputc(ch, f);
        }
    }
    fputc('"', f);
}

static const char *pattern_name(enum data_pattern p)
{
    switch (p) {
    case DATA_PSEUDO_RANDOM: return "pseudo-random";
    case DATA_RANDOM: return "random";
    default: return "repeating";
    }
}

void job_print_json(const struct job *job, FILE *f)
{
    fputs("{\"description\":", f);
    json_str(f, job->description);
    fprintf(f, ",\"run_s\":%.9g,\"ramp_s\":%.9g,\"transactions\":%llu,\"cycle_qd\":%s,\"qd_start\":%u,"
               "\"qd_end\":%u,\"qd_step\":%u,\"qd_exponential\":%s,\"specs\":[",
            job->run_s, job->ramp_s, (unsigned long long)job->transactions, job->cycle_qd ? "true" : "false",
            job->qd_start, job->qd_end, job->qd_step, job->qd_exponential ? "true" : "false");
    for (int i = 0; i < job->nspecs; i++) {
        const struct spec *s = &job->specs[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        json_str(f, s->name);
        fputs(",\"lines\":[", f);
        for (int j = 0; j < s->nlines; j++) {
            const struct spec_line *l = &s->line[j];
            fprintf(f, "%s{\"size\":%llu,\"access\":%u,\"read\":%u,\"random\":%u,\"delay_ms\":%u,\"burst\":%u,"
                       "\"align\":%llu}",
                    j ? "," : "", (unsigned long long)l->size, l->access, l->read, l->random, l->delay_ms,
                    l->burst, (unsigned long long)l->align);
        }
        fputs("]}", f);
    }
    fputs("],\"workers\":[", f);
    for (int i = 0; i < job->nworkers; i++) {
        const struct worker_cfg *w = &job->workers[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        json_str(f, w->name);
        fputs(",\"spec\":", f);
        if (w->spec >= 0 && w->spec < job->nspecs)
            json_str(f, job->specs[w->spec].name);
        else
            fputs("null", f);
        fprintf(f, ",\"outstanding\":%u,\"max_bytes\":%llu,\"start_bytes\":%llu,\"pattern\":\"%s\","
                   "\"fixed_seed\":%s,\"seed\":%llu}",
                w->outstanding, (unsigned long long)w->max_bytes, (unsigned long long)w->start_bytes,
                pattern_name(w->pattern), w->fixed_seed ? "true" : "false", (unsigned long long)w->seed);
    }
    fputs("]}\n", f);
}
