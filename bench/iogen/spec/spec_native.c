/* spec_native.c - the native workload format (docs/spec-format.md), and
 * spec_parse_file, which reads it or hands an .icf to spec_icf.c. */
#include "spec_read.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


enum { SEC_NONE, SEC_SPEC, SEC_WORKER, SEC_TEST };

struct native {
    int sec;
    unsigned keys;  /* bit per key given in the current section */
    int spec_line;  /* the header of the spec being read */
    int line_at[SPEC_MAX_LINES];
    int spec_header[SPEC_MAX_SPECS];
    char wspec[SPEC_MAX_WORKERS][SPEC_MAX_ASSIGNED][SPEC_NAME_LEN];
    int wspec_line[SPEC_MAX_WORKERS][SPEC_MAX_ASSIGNED];
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
    return rd_trim(s);
}

static int native_end_section(struct rd *r, struct native *c, struct job *job)
{
    if (c->sec == SEC_SPEC)
        return rd_finish_spec(r, &job->specs[job->nspecs - 1], c->spec_line, c->line_at);
    return 0;
}

static int native_section(struct rd *r, struct native *c, struct job *job, char *t)
{
    size_t len = strlen(t);
    if (t[len - 1] != ']')
        return rd_fail(r, "a section header must end with ']': '%s'", t);
    t[len - 1] = '\0';
    char *body = rd_trim(t + 1);
    char *name = body + strcspn(body, " \t");
    if (*name)
        *name++ = '\0';
    name = rd_trim(name);
    c->keys = 0;
    if (strcmp(body, "spec") == 0) {
        if (job->nspecs == SPEC_MAX_SPECS)
            return rd_fail(r, "more than %d specs", SPEC_MAX_SPECS);
        int dup = spec_find(job, name);
        if (dup >= 0)
            return rd_fail(r, "spec '%s' is defined twice (first at line %d)", name, c->spec_header[dup]);
        struct spec *s = &job->specs[job->nspecs];
        memset(s, 0, sizeof *s);
        if (rd_copy_name(r, s->name, sizeof s->name, name, "[spec NAME]: the name"))
            return -1;
        c->spec_header[job->nspecs++] = c->spec_line = r->lineno;
        c->sec = SEC_SPEC;
    } else if (strcmp(body, "worker") == 0) {
        if (job->nworkers == SPEC_MAX_WORKERS)
            return rd_fail(r, "more than %d workers", SPEC_MAX_WORKERS);
        for (int i = 0; i < job->nworkers; i++)
            if (strcmp(job->workers[i].name, name) == 0)
                return rd_fail(r, "worker '%s' is defined twice (first at line %d)", name, c->worker_line[i]);
        struct worker_cfg *w = &job->workers[job->nworkers];
        memset(w, 0, sizeof *w);
        w->outstanding = 1;
        if (rd_copy_name(r, w->name, sizeof w->name, name, "[worker NAME]: the name"))
            return -1;
        c->worker_line[job->nworkers++] = r->lineno;
        c->sec = SEC_WORKER;
    } else if (strcmp(body, "test") == 0) {
        if (*name)
            return rd_fail(r, "[test] takes no name");
        if (c->had_test)
            return rd_fail(r, "a second [test] section");
        c->had_test = true;
        c->sec = SEC_TEST;
    } else {
        return rd_fail(r, "unknown section [%s]: expected [spec NAME], [worker NAME] or [test]", body);
    }
    return 0;
}

/* size access% read% random% [delay_ms [burst [align]]] */
static int native_spec_line(struct rd *r, struct native *c, struct job *job, char *t)
{
    struct spec *s = &job->specs[job->nspecs - 1];
    if (s->nlines == SPEC_MAX_LINES)
        return rd_fail(r, "spec '%s' has more than %d lines", s->name, SPEC_MAX_LINES);
    char *f[7];
    int n = rd_split(t, ' ', f, 7);
    if (n < 4 || n > 7)
        return rd_fail(r, "a spec line is: size access%% read%% random%% [delay_ms [burst [align]]] "
                       "(4 to 7 values), found %s", n < 4 ? "fewer" : "more");
    struct spec_line *l = &s->line[s->nlines];
    *l = (struct spec_line){.burst = 1};
    if (rd_num(r, f[0], "size", true, UINT64_MAX, &l->size) || rd_num_u(r, f[1], "access %", UINT_MAX, &l->access) ||
        rd_num_u(r, f[2], "read %", UINT_MAX, &l->read) || rd_num_u(r, f[3], "random %", UINT_MAX, &l->random) ||
        (n > 4 && rd_num_u(r, f[4], "delay_ms", UINT_MAX, &l->delay_ms)) ||
        (n > 5 && rd_num_u(r, f[5], "burst", UINT_MAX, &l->burst)) ||
        (n > 6 && rd_num(r, f[6], "align", true, UINT64_MAX, &l->align)))
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
        return rd_fail(r, "unknown key '%s' (this section takes %s)", key, known);
    }
    if (c->keys & (1u << *k))
        return rd_fail(r, "'%s' is given twice in this section", key);
    c->keys |= 1u << *k;
    return 0;
}

static int native_worker_key(struct rd *r, struct native *c, struct job *job, const char *key, char *v)
{
    static const char *const keys[] = {"spec", "outstanding", "max_size", "start", "pattern", "seed", "target", NULL};
    int wi = job->nworkers - 1, k;
    struct worker_cfg *w = &job->workers[wi];
    if (key_once(r, c, keys, key, &k))
        return -1;
    c->keys &= ~(1u << 0 | 1u << 6); /* spec and target may be given again: a list */
    switch (k) {
    case 0: {
        int n = 0;
        while (n < SPEC_MAX_ASSIGNED && c->wspec_line[wi][n])
            n++;
        if (n == SPEC_MAX_ASSIGNED)
            return rd_fail(r, "worker '%s' runs more than %d specs", w->name, SPEC_MAX_ASSIGNED);
        if (rd_copy_name(r, c->wspec[wi][n], sizeof c->wspec[wi][n], v, "spec name"))
            return -1;
        c->wspec_line[wi][n] = r->lineno;
        return 0;
    }
    case 6:
        if (w->ntarget == SPEC_MAX_TARGETS)
            return rd_fail(r, "worker '%s' names more than %d targets", w->name, SPEC_MAX_TARGETS);
        return rd_copy_name(r, w->target[w->ntarget++], sizeof w->target[0], v, "target name");
    case 1:
        if (rd_num_u(r, v, "outstanding", UINT_MAX, &w->outstanding))
            return -1;
        if (w->outstanding < 1)
            return rd_fail(r, "outstanding is 0; it must be at least 1");
        return 0;
    case 2: return rd_num(r, v, "max_size", true, UINT64_MAX, &w->max_bytes);
    case 3: return rd_num(r, v, "start", true, UINT64_MAX, &w->start_bytes);
    case 4:
        if (strcmp(v, "repeating") == 0)
            w->pattern = DATA_REPEATING;
        else if (strcmp(v, "pseudo-random") == 0)
            w->pattern = DATA_PSEUDO_RANDOM;
        else if (strcmp(v, "random") == 0)
            w->pattern = DATA_RANDOM;
        else
            return rd_fail(r, "pattern: expected repeating, pseudo-random or random, found '%s'", v);
        return 0;
    default:
        w->fixed_seed = true;
        return rd_num(r, v, "seed", false, UINT64_MAX, &w->seed);
    }
}

static int native_test_key(struct rd *r, struct native *c, struct job *job, const char *key, char *v)
{
    static const char *const keys[] = {"run_time", "ramp_up", "transactions", "cycle_outstanding",
                                       "description", "cycle_workers", "cycle_targets", "cycle_size", NULL};
    int k;
    uint64_t n;
    if (key_once(r, c, keys, key, &k))
        return -1;
    switch (k) {
    case 0:
        if (rd_num(r, v, "run_time (seconds)", false, UINT32_MAX, &n))
            return -1;
        job->run_s = (double)n;
        return 0;
    case 1:
        if (rd_num(r, v, "ramp_up (seconds)", false, UINT32_MAX, &n))
            return -1;
        job->ramp_s = (double)n;
        return 0;
    case 2: return rd_num(r, v, "transactions", false, UINT64_MAX, &job->transactions);
    case 3: {
        char *f[4];
        if (rd_split(v, ' ', f, 4) != 4)
            return rd_fail(r, "cycle_outstanding = START END STEP linear|exponential");
        if (rd_num_u(r, f[0], "cycle_outstanding start", UINT_MAX, &job->qd_start) ||
            rd_num_u(r, f[1], "cycle_outstanding end", UINT_MAX, &job->qd_end) ||
            rd_num_u(r, f[2], "cycle_outstanding step", UINT_MAX, &job->qd_step))
            return -1;
        if (strcmp(f[3], "linear") == 0)
            job->qd_exponential = false;
        else if (strcmp(f[3], "exponential") == 0)
            job->qd_exponential = true;
        else
            return rd_fail(r, "cycle_outstanding: expected linear or exponential, found '%s'", f[3]);
        const char *bad = spec_qd_check(job->qd_start, job->qd_end, job->qd_step, job->qd_exponential);
        if (bad)
            return rd_fail(r, "%s", bad);
        job->cycle_qd = true;
        return 0;
    }
    case 5:
    case 6:
    case 7: {
        char *f[4];
        struct cycle *cy = k == 5 ? &job->cycle_workers : k == 6 ? &job->cycle_targets : &job->cycle_size;
        if (rd_split(v, ' ', f, 4) != 4)
            return rd_fail(r, "%s = START END STEP linear|exponential", key);
        if (rd_num(r, f[0], "start", k == 7, UINT32_MAX, &cy->start) ||
            rd_num(r, f[1], "end", k == 7, UINT32_MAX, &cy->end) || rd_num(r, f[2], "step", false, 65536, &cy->step))
            return -1;
        if (strcmp(f[3], "linear") != 0 && strcmp(f[3], "exponential") != 0)
            return rd_fail(r, "%s: expected linear or exponential, found '%s'", key, f[3]);
        cy->exponential = strcmp(f[3], "exponential") == 0;
        const char *bad = cycle_check(cy, k == 7);
        if (bad)
            return rd_fail(r, "%s: %s", key, bad);
        cy->on = true;
        return 0;
    }
    case 4:
        if (strlen(v) >= sizeof job->description)
            return rd_fail(r, "description is longer than %zu characters", sizeof job->description - 1);
        snprintf(job->description, sizeof job->description, "%s", v);
        return 0;
    }
    return 0;
}

static int native_key(struct rd *r, struct native *c, struct job *job, char *t)
{
    char *eq = strchr(t, '=');
    if (!eq)
        return rd_fail(r, "expected KEY = VALUE, found '%s'", t);
    *eq = '\0';
    char *key = rd_trim(t), *v = rd_trim(eq + 1);
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
            return rd_fail(r, "the file defines no [spec] and no [worker]");
        struct worker_cfg *w = &job->workers[job->nworkers++];
        memset(w, 0, sizeof *w);
        snprintf(w->name, sizeof w->name, "Worker 1");
        w->outstanding = 1;
        w->spec[0] = 0;
        w->nspec = 1;
        return 0;
    }
    for (int wi = 0; wi < job->nworkers; wi++) {
        struct worker_cfg *w = &job->workers[wi];
        if (!c->wspec_line[wi][0])
            return rd_fail_at(r, c->worker_line[wi], "worker '%s' has no 'spec = NAME'", w->name);
        w->nspec = 0;
        for (int k = 0; k < SPEC_MAX_ASSIGNED && c->wspec_line[wi][k]; k++) {
            const char *name = c->wspec[wi][k];
            int line = c->wspec_line[wi][k];
            int si = spec_find(job, name);
            if (si < 0) {
                struct spec shipped;
                if (spec_builtin(name, &shipped) != 0)
                    return rd_fail_at(r, line, "worker '%s': spec '%s' is not defined in this file and is not a "
                                               "shipped workload", w->name, name);
                if (job->nspecs == SPEC_MAX_SPECS)
                    return rd_fail_at(r, line, "more than %d specs", SPEC_MAX_SPECS);
                si = job->nspecs++;
                job->specs[si] = shipped;
            }
            w->spec[w->nspec++] = si;
        }
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
    static struct native c; /* 130 KiB: off the stack */
    memset(&c, 0, sizeof c);
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
            rc = rd_fail(&r, "expected a section first: [spec NAME], [worker NAME] or [test]");
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
