/* spec.c - the workload model: the job, the shipped workloads, the checks
 * every spec must pass, and the job as JSON. The file formats are read by
 * spec_native.c and spec_icf.c (docs/spec-format.md). */
#include "spec_read.h"
#include "json.h"

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

int job_steps(const struct job *job)
{
    int most = 0;
    for (int i = 0; i < job->nworkers; i++)
        if (job->workers[i].nspec > most)
            most = job->workers[i].nspec;
    return most;
}

int cycle_values(const struct cycle *c, uint64_t all, uint64_t dflt, uint64_t *out, int max)
{
    if (!c->on) {
        out[0] = dflt;
        return 1;
    }
    uint64_t end = c->end ? c->end : all;
    int n = 0;
    for (uint64_t v = c->start; v <= end && n < max;) {
        out[n++] = v;
        uint64_t next = c->exponential ? v * c->step : v + c->step;
        if (next <= v || (c->exponential && next / c->step != v)) /* no wrap */
            break;
        v = next;
    }
    return n;
}

int spec_find(const struct job *job, const char *name)
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
int spec_check_lines(const struct spec *s, int *bad, char *err, size_t errlen)
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
    return spec_check_lines(s, &bad, err, errlen);
}

const char *spec_qd_check(unsigned start, unsigned end, unsigned step, bool exponential)
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

const char *cycle_check(const struct cycle *c, bool sizes)
{
    if (c->start < 1)
        return "the cycle starts at 0; it must start at 1 or more";
    if ((c->end || sizes) && c->end < c->start)
        return "the cycle ends below its start";
    if (c->step < 1)
        return "the cycle's step is 0; it must be at least 1";
    if (c->exponential && c->step < 2)
        return "an exponential cycle needs a step (factor) of at least 2";
    return NULL;
}

/* ---- JSON ----------------------------------------------------------------- */

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
    struct json j;
    json_to_file(&j, f);
    json_obj(&j);
    json_kstr(&j, "description", job->description);
    json_knum(&j, "run_s", job->run_s);
    json_knum(&j, "ramp_s", job->ramp_s);
    json_kuint(&j, "transactions", job->transactions);
    json_kbool(&j, "cycle_qd", job->cycle_qd);
    json_kuint(&j, "qd_start", job->qd_start);
    json_kuint(&j, "qd_end", job->qd_end);
    json_kuint(&j, "qd_step", job->qd_step);
    json_kbool(&j, "qd_exponential", job->qd_exponential);
    json_key(&j, "specs");
    json_arr(&j);
    for (int i = 0; i < job->nspecs; i++) {
        const struct spec *s = &job->specs[i];
        json_obj(&j);
        json_kstr(&j, "name", s->name);
        json_key(&j, "lines");
        json_arr(&j);
        for (int k = 0; k < s->nlines; k++) {
            const struct spec_line *l = &s->line[k];
            json_obj(&j);
            json_kuint(&j, "size", l->size);
            json_kuint(&j, "access", l->access);
            json_kuint(&j, "read", l->read);
            json_kuint(&j, "random", l->random);
            json_kuint(&j, "delay_ms", l->delay_ms);
            json_kuint(&j, "burst", l->burst);
            json_kuint(&j, "align", l->align);
            json_obj_end(&j);
        }
        json_arr_end(&j);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    json_key(&j, "workers");
    json_arr(&j);
    for (int i = 0; i < job->nworkers; i++) {
        const struct worker_cfg *w = &job->workers[i];
        json_obj(&j);
        json_kstr(&j, "name", w->name);
        json_key(&j, "spec");
        if (w->nspec > 0 && w->spec[0] >= 0 && w->spec[0] < job->nspecs)
            json_str(&j, job->specs[w->spec[0]].name);
        else
            json_null(&j);
        json_kuint(&j, "outstanding", w->outstanding);
        json_kuint(&j, "max_bytes", w->max_bytes);
        json_kuint(&j, "start_bytes", w->start_bytes);
        json_kstr(&j, "pattern", pattern_name(w->pattern));
        json_kbool(&j, "fixed_seed", w->fixed_seed);
        json_kuint(&j, "seed", w->seed);
        json_key(&j, "specs"); /* every spec it runs, in order (the first is "spec") */
        json_arr(&j);
        for (int k = 0; k < w->nspec; k++)
            if (w->spec[k] >= 0 && w->spec[k] < job->nspecs)
                json_str(&j, job->specs[w->spec[k]].name);
        json_arr_end(&j);
        json_key(&j, "targets");
        json_arr(&j);
        for (int k = 0; k < w->ntarget; k++)
            json_str(&j, w->target[k]);
        json_arr_end(&j);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    static const char *const cname[] = { "cycle_workers", "cycle_targets", "cycle_size" };
    const struct cycle *cyc[] = { &job->cycle_workers, &job->cycle_targets, &job->cycle_size };
    for (int c = 0; c < 3; c++) {
        json_key(&j, cname[c]);
        if (!cyc[c]->on) {
            json_null(&j);
            continue;
        }
        json_obj(&j);
        json_kuint(&j, "start", cyc[c]->start);
        json_kuint(&j, "end", cyc[c]->end);
        json_kuint(&j, "step", cyc[c]->step);
        json_kbool(&j, "exponential", cyc[c]->exponential);
        json_obj_end(&j);
    }
    json_obj_end(&j);
    json_line_end(&j, "the job");
}
