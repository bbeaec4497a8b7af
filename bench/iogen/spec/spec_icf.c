/* spec_icf.c - Iometer .icf import: TEST SETUP, ACCESS SPECIFICATIONS and
 * MANAGER LIST into a job; anything not understood or not supported is an
 * error naming the line and the feature (docs/spec-format.md). */
#include "spec_read.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


struct icf {
    int spec_line[SPEC_MAX_SPECS];  /* where each spec's name is */
    int reply_line[SPEC_MAX_SPECS]; /* the first line with a reply size, 0 if none */
    uint64_t reply[SPEC_MAX_SPECS];
    int line_at[SPEC_MAX_LINES];    /* file lines of the spec being read */
    char assigned[SPEC_MAX_WORKERS][SPEC_MAX_ASSIGNED][SPEC_NAME_LEN];
    int assigned_line[SPEC_MAX_WORKERS][SPEC_MAX_ASSIGNED];
    int worker_line[SPEC_MAX_WORKERS];
    unsigned sections;              /* bit per section seen */
};

static const char *const test_types[] = {
    "NORMAL", "CYCLE_TARGETS", "CYCLE_WORKERS", "INCREMENT_TARGETS_PARALLEL", "INCREMENT_TARGETS_SERIAL",
    "CYCLE_WORKERS_AND_TARGETS", "CYCLE_OUTSTANDING_IOS", "CYCLE_OUTSTANDING_IOS_AND_TARGETS",
};
enum {
    TEST_NORMAL = 0, TEST_CYCLE_TARGETS = 1, TEST_CYCLE_WORKERS = 2, TEST_CYCLE_WORKERS_AND_TARGETS = 5,
    TEST_CYCLE_OUTSTANDING_IOS = 6, TEST_CYCLE_OUTSTANDING_IOS_AND_TARGETS = 7
};

/* 'Worker Cycling and 'Disk Cycling: start step LINEAR|EXPONENTIAL (no end: all there are). */
static int icf_cycle3(struct rd *r, char **f, const char *what, struct cycle *c)
{
    char w[96];
    snprintf(w, sizeof w, "%s start", what);
    if (rd_num(r, f[0], w, false, 65536, &c->start))
        return -1;
    snprintf(w, sizeof w, "%s step", what);
    if (rd_num(r, f[1], w, false, 65536, &c->step))
        return -1;
    if (strcasecmp(f[2], "LINEAR") == 0 || strcmp(f[2], "0") == 0)
        c->exponential = false;
    else if (strcasecmp(f[2], "EXPONENTIAL") == 0 || strcmp(f[2], "1") == 0)
        c->exponential = true;
    else
        return rd_fail(r, "%s step type: expected LINEAR or EXPONENTIAL, found '%s'", what, f[2]);
    c->end = 0;
    return 0;
}

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
    return rd_fail(r, "the file ends inside the %s section, before %s: is it truncated?", section, end);
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
        return rd_fail(r, "expected a header line (starting with ') in the %s section, found '%s'", section,
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
        return rd_fail(r, "%s has no value line (found the header %s instead)", h, r->text);
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
    int n = rd_split(s, sep, f, nf);
    if (n != nf)
        return rd_fail(r, "%s: expected %d values %s, found %s", h, nf,
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
        return rd_fail(r, "%s: expected ENABLED or DISABLED, found '%s'", what, text);
    return 0;
}

static int icf_version(struct rd *r, const char *text)
{
    const char *p = text + strlen("Version");
    if (!isspace((unsigned char)*p))
        return rd_fail(r, "expected 'Version 1.1.0' or 'Version yyyy.mm.dd', found '%s'", text);
    while (isspace((unsigned char)*p))
        p++;
    for (int part = 0; part < 3; part++) {
        if (!isdigit((unsigned char)*p))
            return rd_fail(r, "'%s' is not an Iometer version (1.1.0 or yyyy.mm.dd)", text);
        while (isdigit((unsigned char)*p))
            p++;
        if (part < 2 && *p++ != '.')
            return rd_fail(r, "'%s' is not an Iometer version (1.1.0 or yyyy.mm.dd)", text);
    }
    if (*p && *p != '-' && !isspace((unsigned char)*p)) /* "2003.12.16-post" is a real one */
        return rd_fail(r, "'%s' is not an Iometer version (1.1.0 or yyyy.mm.dd)", text);
    return 0;
}

static int icf_test_setup(struct rd *r, struct job *job)
{
    static const char S[] = "TEST SETUP", E[] = "'END test setup";
    unsigned qd[3] = {0, 0, 0};
    bool qd_exp = false;
    int qd_line = 0, test_type = TEST_NORMAL, wc_line = 0, dc_line = 0;
    struct cycle wc = {0}, dc = {0};
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
                return rd_fail(r, "the test description is longer than %zu characters",
                            sizeof job->description - 1);
            snprintf(job->description, sizeof job->description, "%s", v);
        } else if (hdr_is(h, "'Run Time")) {
            if (icf_fields(r, S, E, h, ' ', f, 3))
                return -1;
            uint64_t hms[3];
            static const char *const what[] = {"run time hours", "run time minutes", "run time seconds"};
            for (int i = 0; i < 3; i++)
                if (rd_num(r, f[i], what[i], false, UINT32_MAX, &hms[i]))
                    return -1;
            job->run_s = (double)(hms[0] * 3600 + hms[1] * 60 + hms[2]);
        } else if (hdr_starts(h, "'Ramp Up Time")) {
            uint64_t s;
            if (icf_value(r, S, E, h, &v) || rd_num(r, v, "ramp up time", false, UINT32_MAX, &s))
                return -1;
            job->ramp_s = (double)s;
        } else if (hdr_is(h, "'Default Disk Workers to Spawn") || hdr_is(h, "'Default Workers to Spawn")) {
            /* Informational: the MANAGER LIST says which workers run. */
            uint64_t n;
            if (icf_value(r, S, E, h, &v))
                return -1;
            if (strcasecmp(v, "NUMBER_OF_CPUS") != 0 && rd_num(r, v, "disk workers to spawn", false, UINT32_MAX, &n))
                return -1;
        } else if (hdr_is(h, "'Default Network Workers to Spawn") || hdr_is(h, "'Record Results")) {
            /* display and recording settings */
            if (icf_value(r, S, E, h, &v))
                return -1;
        } else if (hdr_is(h, "'Worker Cycling") || hdr_is(h, "'Disk Cycling")) {
            bool workers = hdr_is(h, "'Worker Cycling");
            if (icf_fields(r, S, E, h, ' ', f, 3) ||
                icf_cycle3(r, f, workers ? "worker cycling" : "disk cycling", workers ? &wc : &dc))
                return -1;
            *(workers ? &wc_line : &dc_line) = r->lineno;
        } else if (hdr_is(h, "'Queue Depth Cycling")) {
            if (icf_fields(r, S, E, h, ' ', f, 4))
                return -1;
            static const char *const what[] = {"queue depth cycling start", "queue depth cycling end",
                                               "queue depth cycling step"};
            for (int i = 0; i < 3; i++)
                if (rd_num_u(r, f[i], what[i], UINT_MAX, &qd[i]))
                    return -1;
            if (strcasecmp(f[3], "LINEAR") == 0 || strcmp(f[3], "0") == 0)
                qd_exp = false;
            else if (strcasecmp(f[3], "EXPONENTIAL") == 0 || strcmp(f[3], "1") == 0)
                qd_exp = true;
            else
                return rd_fail(r, "queue depth cycling step type: expected LINEAR or EXPONENTIAL, found '%s'", f[3]);
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
                return rd_fail(r, "unknown Test Type '%s'", v);
            if (test_type == 3 || test_type == 4)
                return rd_fail(r, "Test Type %s is not supported: osmeter cycles the number of workers, of "
                               "targets and of outstanding I/Os, but does not add targets to workers one by one",
                               test_types[test_type]);
        } else {
            return rd_fail(r, "unknown header %s in the TEST SETUP section", h);
        }
    }
    bool cyc_w = test_type == TEST_CYCLE_WORKERS || test_type == TEST_CYCLE_WORKERS_AND_TARGETS;
    bool cyc_t = test_type == TEST_CYCLE_TARGETS || test_type == TEST_CYCLE_WORKERS_AND_TARGETS ||
                 test_type == TEST_CYCLE_OUTSTANDING_IOS_AND_TARGETS;
    for (int k = 0; k < 2; k++) {
        struct cycle *c = k ? &dc : &wc;
        int line = k ? dc_line : wc_line;
        if (!(k ? cyc_t : cyc_w))
            continue;
        if (!line)
            return rd_fail(r, "Test Type %s needs a '%s Cycling line", test_types[test_type], k ? "Disk" : "Worker");
        if (c->start < 1 || c->step < 1 || (c->exponential && c->step < 2))
            return rd_fail_at(r, line, "%s cycling: the start and the step must be at least 1 (2 for an exponential "
                              "step)", k ? "disk" : "worker");
        c->on = true;
        *(k ? &job->cycle_targets : &job->cycle_workers) = *c;
    }
    if (test_type == TEST_CYCLE_OUTSTANDING_IOS || test_type == TEST_CYCLE_OUTSTANDING_IOS_AND_TARGETS) {
        if (!qd_line)
            return rd_fail(r, "Test Type %s needs a 'Queue Depth Cycling line", test_types[test_type]);
        const char *bad = spec_qd_check(qd[0], qd[1], qd[2], qd_exp);
        if (bad)
            return rd_fail_at(r, qd_line, "%s", bad);
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
            return rd_fail(r, "%s begins inside the %s section (no %s before it)", r->text, S, E);
    }
    return n < 0 ? -1 : truncated(r, S, E);
}

/* One spec line: size, % of size, % reads, % random, delay, burst, align[, reply]. */
static int icf_spec_line(struct rd *r, struct icf *c, struct job *job, int nf)
{
    struct spec *s = &job->specs[job->nspecs - 1];
    if (s->nlines == SPEC_MAX_LINES)
        return rd_fail(r, "spec '%s' has more than %d lines", s->name, SPEC_MAX_LINES);
    char *f[8];
    int n = rd_split(r->text, ',', f, 8);
    if (n != nf)
        return rd_fail(r, "spec '%s': expected %d comma-separated values (size,%% of size,%% reads,"
                       "%% random,delay,burst,align%s), found %d",
                    s->name, nf, nf == 8 ? ",reply" : "", n);
    struct spec_line *l = &s->line[s->nlines];
    uint64_t reply = 0;
    if (rd_num(r, f[0], "size", false, UINT64_MAX, &l->size) ||
        rd_num_u(r, f[1], "% of size", UINT_MAX, &l->access) || rd_num_u(r, f[2], "% reads", UINT_MAX, &l->read) ||
        rd_num_u(r, f[3], "% random", UINT_MAX, &l->random) || rd_num_u(r, f[4], "delay", UINT_MAX, &l->delay_ms) ||
        rd_num_u(r, f[5], "burst", UINT_MAX, &l->burst) || rd_num(r, f[6], "align", false, UINT64_MAX, &l->align) ||
        (nf == 8 && rd_num(r, f[7], "reply", false, UINT64_MAX, &reply)))
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
            return rd_fail(r, "unknown header %s in the %s section", h, S);
        if (icf_value(r, S, E, h, &v))
            return -1;
        /* NAME,DEFAULT-ASSIGNMENT; the name may itself hold commas. */
        char *comma = strrchr(r->text, ',');
        if (!comma)
            return rd_fail(r, "expected NAME,DEFAULT-ASSIGNMENT, found '%s'", v);
        *comma = '\0';
        char *name = rd_trim(r->text);
        if (job->nspecs == SPEC_MAX_SPECS)
            return rd_fail(r, "more than %d access specifications", SPEC_MAX_SPECS);
        int dup = spec_find(job, name);
        if (dup >= 0)
            return rd_fail(r, "access specification '%s' is defined twice (first at line %d)", name,
                        c->spec_line[dup]);
        struct spec *s = &job->specs[job->nspecs];
        memset(s, 0, sizeof *s);
        if (rd_copy_name(r, s->name, sizeof s->name, name, "access specification name"))
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
            return rd_fail(r, "expected the header 'size,%% of size,%% reads,%% random,delay,burst,align,reply "
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
        if (rd_finish_spec(r, s, header_line, c->line_at))
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
                rd_num_u(r, f[0], "number of outstanding IOs", UINT_MAX, &w->outstanding) ||
                enabled(r, f[1], "test connection rate", &conn_rate) ||
                rd_num_u(r, f[2], "transactions per connection", UINT_MAX, &per_conn))
                return -1;
            if (w->outstanding < 1)
                return rd_fail(r, "worker '%s': number of outstanding IOs is 0; it must be at least 1", w->name);
            if (conn_rate)
                return rd_fail(r, "worker '%s': test connection rate is ENABLED; osmeter's disk generator does "
                               "not support it (it keeps each target open for the whole run)", w->name);
            if (nf == 5) {
                if (enabled(r, f[3], "use fixed seed", &w->fixed_seed) ||
                    rd_num(r, f[4], "fixed seed value", false, UINT64_MAX, &w->seed))
                    return -1;
                if (!w->fixed_seed)
                    w->seed = 0;
            }
        } else if (hdr_is(h, "'Disk maximum size,starting sector") ||
                   hdr_is(h, "'Disk maximum size,starting sector,Data pattern")) {
            int nf = hdr_is(h, "'Disk maximum size,starting sector") ? 2 : 3;
            uint64_t max, start, pattern = DATA_REPEATING;
            if (icf_fields(r, S, E, h, ',', f, nf) ||
                rd_num(r, f[0], "disk maximum size (sectors)", false, UINT64_MAX / 512, &max) ||
                rd_num(r, f[1], "starting sector", false, UINT64_MAX / 512, &start) ||
                (nf == 3 && rd_num(r, f[2], "data pattern (0 repeating, 1 pseudo-random, 2 random)", false,
                                DATA_RANDOM, &pattern)))
                return -1;
            w->max_bytes = max * 512;
            w->start_bytes = start * 512;
            w->pattern = (enum data_pattern)pattern;
        } else {
            return rd_fail(r, "unknown header %s in worker '%s''s default target settings", h, w->name);
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
            return rd_fail(r, "expected an access spec name or %s, found %s", E, r->text);
        int k = 0;
        while (k < SPEC_MAX_ASSIGNED && c->assigned_line[wi][k])
            k++;
        if (k == SPEC_MAX_ASSIGNED)
            return rd_fail(r, "worker '%s' is assigned more than %d access specs", worker, SPEC_MAX_ASSIGNED);
        if (rd_copy_name(r, c->assigned[wi][k], sizeof c->assigned[wi][k], r->text, "access spec name"))
            return -1;
        c->assigned_line[wi][k] = r->lineno;
    }
    return n < 0 ? -1 : truncated(r, S, E);
}

/* The targets' names are kept (for --save-icf), never opened: what is read
 * and written comes from the command line. Each is 'Target NAME, then
 * 'Target type and any other settings, up to 'End target. */
static int icf_targets(struct rd *r, struct worker_cfg *w)
{
    static const char S[] = "MANAGER LIST", E[] = "'End target assignments";
    int n;
    bool in_target = false;
    while ((n = rd_next(r)) > 0) {
        if (hdr_is(r->text, E))
            return in_target ? rd_fail(r, "%s inside a target (no 'End target before it)", E) : 0;
        if (hdr_is(r->text, "'End worker") || hdr_is(r->text, "'End manager") ||
            hdr_is(r->text, "'END manager list") || is_section_start(r->text))
            return rd_fail(r, "%s inside the target assignments (no %s before it)", r->text, E);
        if (hdr_is(r->text, "'Target")) {
            const char *v;
            if (in_target)
                return rd_fail(r, "'Target inside a target (no 'End target before it)");
            if (icf_value(r, S, E, "'Target", &v))
                return -1;
            if (w->ntarget == SPEC_MAX_TARGETS)
                return rd_fail(r, "worker '%s' has more than %d targets", w->name, SPEC_MAX_TARGETS);
            if (rd_copy_name(r, w->target[w->ntarget], sizeof w->target[0], v, "target name"))
                return -1;
            w->ntarget++;
            in_target = true;
        } else if (hdr_is(r->text, "'End target")) {
            if (!in_target)
                return rd_fail(r, "'End target without a 'Target");
            in_target = false;
        } else if (hdr_is(r->text, "'Target type")) {
            const char *v;
            if (!in_target)
                return rd_fail(r, "'Target type outside a target (no 'Target before it)");
            if (icf_value(r, S, E, "'Target type", &v))
                return -1;
        } else {
            /* never skipped: a stray line here is a name cut by a newline, or a setting this reader would lose */
            return rd_fail(r, "unrecognised line in the target assignments: '%s'", r->text);
        }
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
        return rd_fail(r, "more than %d workers", SPEC_MAX_WORKERS);
    int wi = job->nworkers++;
    struct worker_cfg *w = &job->workers[wi];
    memset(w, 0, sizeof *w);
    w->outstanding = 1;
    if (rd_copy_name(r, w->name, sizeof w->name, v, "worker name"))
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
                return rd_fail(r, "worker '%s' is a %s worker; osmeter's disk generator runs only DISK workers",
                            w->name, v);
            typed = true;
        } else if (hdr_is(h, "'Default target settings for worker")) {
            if (icf_worker_defaults(r, w))
                return -1;
        } else if (hdr_is(h, "'Assigned access specs")) {
            if (icf_assigned_specs(r, c, wi, w->name))
                return -1;
        } else if (hdr_is(h, "'Target assignments")) {
            if (icf_targets(r, w))
                return -1;
        } else {
            return rd_fail(r, "unknown header %s in worker '%s'", h, w->name);
        }
    }
    if (!typed)
        return rd_fail_at(r, c->worker_line[wi], "worker '%s' has no 'Worker type", w->name);
    if (!c->assigned_line[wi][0])
        return rd_fail_at(r, c->worker_line[wi], "worker '%s' has no assigned access spec", w->name);
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
            return rd_fail(r, "unknown header %s in a manager", h);
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
            return rd_fail(r, "unknown header %s in the %s section (expected 'Manager ID, manager name or %s)", h,
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
        w->nspec = 0;
        for (int k = 0; k < SPEC_MAX_ASSIGNED && c->assigned_line[wi][k]; k++) {
            const char *name = c->assigned[wi][k];
            int line = c->assigned_line[wi][k];
            int si = spec_find(job, name);
            if (si < 0 && strcmp(name, "Idle") == 0)
                return rd_fail_at(r, line, "worker '%s' is assigned Iometer's Idle spec; osmeter has no idle "
                                        "workers: leave the worker out", w->name);
            if (si < 0)
                return rd_fail_at(r, line, "worker '%s' is assigned access spec '%s', which the file does not "
                                        "define", w->name, name);
            if (c->reply_line[si])
                return rd_fail_at(r, line, "worker '%s' is assigned access spec '%s', which has a reply size of "
                                        "%llu bytes (line %d): reply size is a network feature; osmeter's disk "
                                        "generator does not support it",
                               w->name, name, (unsigned long long)c->reply[si], c->reply_line[si]);
            w->spec[w->nspec++] = si;
        }
    }
    return 0;
}

int icf_parse_file(const char *path, struct job *job, char *err, size_t errlen)
{
    static struct icf c; /* 130 KiB: off the stack */
    memset(&c, 0, sizeof c);
    struct rd r;
    job_init(job);
    if (rd_open(&r, path, err, errlen))
        return -1;
    int n, rc = 0;
    while ((n = rd_next(&r)) > 0 && !*r.text)
        ;
    if (n == 0)
        rc = rd_fail(&r, "the file is empty; an Iometer .icf file starts with a Version line");
    else if (n > 0 && !hdr_starts(r.text, "Version"))
        rc = rd_fail(&r, "not an Iometer .icf file: it should start with 'Version 1.1.0' or 'Version yyyy.mm.dd'");
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
            rc = rd_fail(&r, "expected a section ('TEST SETUP, 'RESULTS DISPLAY, 'ACCESS SPECIFICATIONS or "
                          "'MANAGER LIST), found '%s'", t);
            break;
        }
        if (c.sections & (1u << sec)) {
            rc = rd_fail(&r, "a second %s section", sections[sec] + 1);
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
        rc = rd_fail(&r, "the file has workers but no ACCESS SPECIFICATIONS section");
    if (rc == 0 && job->nspecs == 0)
        rc = rd_fail(&r, "the file defines no access specification");
    if (rc == 0)
        rc = icf_assign(&r, &c, job);
    fclose(r.f);
    if (rc)
        job_init(job);
    return rc;
}

/* ---- writing: --save-icf ------------------------------------------------- */

static const char *cycle_type(bool exponential)
{
    return exponential ? "EXPONENTIAL" : "LINEAR";
}

void icf_write_spec(FILE *f, const struct spec *s)
{
    fprintf(f, "'Access specification name,default assignment\n\t%s,NONE\n", s->name);
    fprintf(f, "'size,%% of size,%% reads,%% random,delay,burst,align,reply\n");
    for (int k = 0; k < s->nlines; k++) {
        const struct spec_line *l = &s->line[k];
        fprintf(f, "\t%llu,%u,%u,%u,%u,%u,%llu,%llu\n", (unsigned long long)l->size, l->access, l->read, l->random,
                l->delay_ms, l->burst, (unsigned long long)l->align, (unsigned long long)l->reply);
    }
}

/* A name the reader would take for something else: a header ('...), one with blanks at its ends, or one
 * that a line break or another control character would cut or change. */
static bool unwritable(const char *name)
{
    size_t n = strlen(name);
    for (const char *p = name; *p; p++)
        if (iscntrl((unsigned char)*p) && *p != '\t')
            return true;
    return name[0] == '\'' || (n && (isspace((unsigned char)name[0]) || isspace((unsigned char)name[n - 1])));
}

int icf_test_type(const struct job *job)
{
    bool w = job->cycle_workers.on, t = job->cycle_targets.on, q = job->cycle_qd;
    if (w && q)
        return -1;
    return q ? (t ? TEST_CYCLE_OUTSTANDING_IOS_AND_TARGETS : TEST_CYCLE_OUTSTANDING_IOS)
             : w ? (t ? TEST_CYCLE_WORKERS_AND_TARGETS : TEST_CYCLE_WORKERS)
             : t ? TEST_CYCLE_TARGETS : TEST_NORMAL;
}

int icf_write(const struct job *job, const char *const *targets, int ntargets, FILE *f, char *err, size_t errlen)
{
    /* what the format cannot hold is refused, never dropped: the file must read back as this job */
    const char *why = NULL;
    int type = icf_test_type(job);
    if (job->run_s != (double)(uint64_t)job->run_s || job->ramp_s != (double)(uint64_t)job->ramp_s)
        why = "an .icf holds whole seconds of run and ramp time";
    else if (job->transactions)
        why = "an .icf has no count of transactions (give a --time instead)";
    else if (job->cycle_size.on)
        why = "an .icf has no transfer size cycling (iogen's --cycle-size)";
    else if (type < 0)
        why = "an .icf cannot cycle both workers and outstanding I/Os";
    else if ((job->cycle_workers.on && job->cycle_workers.end && job->cycle_workers.end != (uint64_t)job->nworkers) ||
             (job->cycle_targets.on && job->cycle_targets.end && job->cycle_targets.end != (uint64_t)ntargets))
        why = "an .icf cycles workers and targets up to all there are: give no other end";
    else if (unwritable(job->description))
        why = "the description cannot be written as an .icf value line";
    for (int i = 0; !why && i < job->nspecs; i++)
        if (unwritable(job->specs[i].name) || !job->specs[i].name[0])
            why = "an access specification's name is empty, starts with ' or a blank, or holds a line break";
    for (int i = 0; !why && i < job->nworkers; i++) {
        const struct worker_cfg *w = &job->workers[i];
        if (unwritable(w->name) || !w->name[0])
            why = "a worker's name is empty, starts with ' or a blank, or holds a line break";
        else if (w->max_bytes % 512 || w->start_bytes % 512)
            why = "an .icf counts a worker's region in 512-byte sectors: its size and start must be multiples of 512";
        for (int k = 0; !why && k < (targets ? ntargets : w->ntarget); k++)
            if (unwritable(targets ? targets[k] : w->target[k]))
                why = "a target's name starts with ' or a blank, or holds a line break";
    }
    if (why) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    uint64_t run = (uint64_t)job->run_s;
    fprintf(f, "Version 1.1.0 \n");
    fprintf(f, "'TEST SETUP ====================================================================\n");
    fprintf(f, "'Test Description\n\t%s\n", job->description);
    fprintf(f, "'Run Time\n'\thours      minutes    seconds\n\t%-10llu %-10llu %llu\n", (unsigned long long)(run / 3600),
            (unsigned long long)(run / 60 % 60), (unsigned long long)(run % 60));
    fprintf(f, "'Ramp Up Time (s)\n\t%llu\n", (unsigned long long)job->ramp_s);
    fprintf(f, "'Default Disk Workers to Spawn\n\t%d\n'Default Network Workers to Spawn\n\t0\n", job->nworkers);
    fprintf(f, "'Record Results\n\tALL\n");
    const struct cycle *cw = &job->cycle_workers, *ct = &job->cycle_targets;
    fprintf(f, "'Worker Cycling\n'\tstart      step       step type\n\t%-10llu %-10llu %s\n",
            (unsigned long long)(cw->on ? cw->start : 1), (unsigned long long)(cw->on ? cw->step : 1),
            cycle_type(cw->on && cw->exponential));
    fprintf(f, "'Disk Cycling\n'\tstart      step       step type\n\t%-10llu %-10llu %s\n",
            (unsigned long long)(ct->on ? ct->start : 1), (unsigned long long)(ct->on ? ct->step : 1),
            cycle_type(ct->on && ct->exponential));
    fprintf(f, "'Queue Depth Cycling\n'\tstart      end        step       step type\n\t%-10u %-10u %-10u %s\n",
            job->cycle_qd ? job->qd_start : 1, job->cycle_qd ? job->qd_end : 1, job->cycle_qd ? job->qd_step : 1,
            cycle_type(job->cycle_qd && job->qd_exponential));
    fprintf(f, "'Test Type\n\t%s\n'END test setup\n", test_types[type]);
    fprintf(f, "'RESULTS DISPLAY ===============================================================\n");
    fprintf(f, "'END results display\n");
    fprintf(f, "'ACCESS SPECIFICATIONS =========================================================\n");
    for (int i = 0; i < job->nspecs; i++)
        icf_write_spec(f, &job->specs[i]);
    fprintf(f, "'END access specifications\n");
    fprintf(f, "'MANAGER LIST ==================================================================\n");
    if (job->nworkers) {
        fprintf(f, "'Manager ID, manager name\n\t1,iogen\n'Manager network address\n\n");
        for (int i = 0; i < job->nworkers; i++) {
            const struct worker_cfg *w = &job->workers[i];
            fprintf(f, "'Worker\n\t%s\n'Worker type\n\tDISK\n", w->name);
            fprintf(f, "'Default target settings for worker\n");
            fprintf(f, "'Number of outstanding IOs,test connection rate,transactions per connection,use fixed "
                       "seed,fixed seed value\n\t%u,DISABLED,1,%s,%llu\n",
                    w->outstanding, w->fixed_seed ? "ENABLED" : "DISABLED", (unsigned long long)w->seed);
            fprintf(f, "'Disk maximum size,starting sector,Data pattern\n\t%llu,%llu,%d\n",
                    (unsigned long long)(w->max_bytes / 512), (unsigned long long)(w->start_bytes / 512),
                    (int)w->pattern);
            fprintf(f, "'End default target settings for worker\n'Assigned access specs\n");
            for (int k = 0; k < w->nspec; k++)
                fprintf(f, "\t%s\n", job->specs[w->spec[k]].name);
            fprintf(f, "'End assigned access specs\n'Target assignments\n");
            for (int k = 0; k < (targets ? ntargets : w->ntarget); k++)
                fprintf(f, "'Target\n\t%s\n'Target type\n\tDISK\n'End target\n", targets ? targets[k] : w->target[k]);
            fprintf(f, "'End target assignments\n'End worker\n");
        }
        fprintf(f, "'End manager\n");
    }
    fprintf(f, "'END manager list\nVersion 1.1.0 \n");
    if (ferror(f)) {
        snprintf(err, errlen, "%s", strerror(errno));
        return -1;
    }
    return 0;
}
