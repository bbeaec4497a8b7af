/* iogen.c - osmeter's raw I/O generator.
 *
 * Runs an Iometer-style job (workers, each with an access specification and
 * a number of outstanding I/Os) against a file or a block device, below the
 * page cache (O_DIRECT) by default, through an engine (io_uring, Linux AIO,
 * or threads doing pread/pwrite). Prints one JSON object per run (one per
 * queue depth when cycling). See `iogen --help`, docs/iogen.md and
 * docs/DESIGN.md (contract 7).
 *
 * The parts, one folder each (README.md beside this file, lowest first):
 * spec/ (workloads, the native format, .icf read and written), target/
 * (what is read and written, and what must never be), engines/ (engine.c's
 * table and engine_<name>.c, each with its own options: engine.h),
 * measure/ (latency histograms, the system prober, the steady state),
 * options/ (the option table, the config and the job: config.h), run/
 * (workers, streams, the measured window, precondition, verify, status,
 * live, the signal flag: run.h), output/ (the JSON result, the log, the
 * results CSV). main holds the config and the runs' state and passes them
 * down: no part reads them as globals.
 */
#include "config.h"
#include "interrupt.h"
#include "osm.h"
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static bool spec_writes(const struct job *job)
{
    for (int i = 0; i < job->nworkers; i++)
        for (int n = 0; n < job->workers[i].nspec; n++) {
            const struct spec *s = &job->specs[job->workers[i].spec[n]];
            for (int k = 0; k < s->nlines; k++)
                if (s->line[k].read < 100 && s->line[k].access > 0)
                    return true;
        }
    return false;
}

/* Sizes and alignments must suit the target (O_DIRECT needs whole blocks)
 * and fit the region; `size` is a cycled transfer size (0: the lines'). */
static void check_fit(const struct job *job, const struct target *t, uint64_t size, unsigned zones)
{
    for (int i = 0; i < job->nworkers; i++) {
        const struct worker_cfg *c = &job->workers[i];
        uint64_t start = c->start_bytes, len = c->max_bytes ? c->max_bytes : t->size - (start < t->size ? start : 0);
        if (start >= t->size || start + len > t->size)
            osm_usage_error("worker '%s': its region (start %llu, %llu bytes) does not fit %s's %llu bytes",
                            c->name, (unsigned long long)start, (unsigned long long)len, t->path,
                            (unsigned long long)t->size);
        if (t->direct && start % t->lbs)
            osm_usage_error("worker '%s': start %llu is not a multiple of the %u-byte logical block", c->name,
                            (unsigned long long)start, t->lbs);
        for (int n = 0; n < c->nspec; n++) {
            const struct spec *s = &job->specs[c->spec[n]];
            for (int k = 0; k < s->nlines; k++) {
                const struct spec_line *l = &s->line[k];
                uint64_t sz = size ? size : l->size;
                if (sz > len)
                    osm_usage_error("spec '%s' line %d: %llu-byte I/Os do not fit the %llu-byte region (target too "
                                    "small; use a larger --size)",
                                    s->name, k + 1, (unsigned long long)sz, (unsigned long long)len);
                if (zones && sz > len / zones) /* a zone no request could start in would read as 0 MB/s */
                    osm_usage_error("--zones %u: a zone of %s's %llu-byte region would be %llu bytes, smaller than "
                                    "spec '%s' line %d's %llu-byte I/Os: give --zones %llu or fewer", zones, t->path,
                                    (unsigned long long)len, (unsigned long long)(len / zones), s->name, k + 1,
                                    (unsigned long long)sz, (unsigned long long)(len / sz));
                if (t->direct && sz % t->lbs)
                    osm_usage_error("spec '%s' line %d: %llu bytes is not a multiple of the target's %u-byte logical "
                                    "block, which O_DIRECT requires (or use --buffered)",
                                    s->name, k + 1, (unsigned long long)sz, t->lbs);
                if (l->align && t->direct && l->align % t->lbs)
                    osm_usage_error("spec '%s' line %d: alignment %llu is not a multiple of the target's %u-byte "
                                    "logical block",
                                    s->name, k + 1, (unsigned long long)l->align, t->lbs);
            }
        }
    }
}

/* A file for --log, --results-csv, --save-icf: never through a link planted at the path (a shared /tmp). */
static FILE *open_out(const char *path, const char *what)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (fd >= 0 && !f)
        close(fd);
    if (!f)
        fprintf(stderr, "iogen: error: %s %s: %s\n", what, path, strerror(errno));
    return f;
}

static void close_targets(struct target *ts, int n)
{
    for (int i = 0; i < n; i++)
        target_close(&ts[i]);
}

/* --save-icf: the job as an Iometer .icf, written in memory first, so that a job the format cannot hold
 * leaves no file and an old one untouched. The exit status. */
static int save_icf(const struct iogen_config *cfg, const struct job *job)
{
    char err[512], *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) {
        fprintf(stderr, "iogen: error: --save-icf: %s\n", strerror(errno));
        return 1;
    }
    int rc = icf_write(job, cfg->ntargets ? cfg->targets : NULL, cfg->ntargets, m, err, sizeof err);
    fclose(m);
    FILE *f = rc ? NULL : open_out(cfg->save_icf, "--save-icf");
    if (!rc && !f) {
        free(text);
        return 2;
    }
    if (f) {
        bool short_write = fwrite(text, 1, len, f) != len;
        if (fclose(f) != 0 || short_write) {
            snprintf(err, sizeof err, "writing %s: %s", cfg->save_icf, strerror(errno));
            rc = -1;
        }
    }
    free(text);
    if (rc) {
        fprintf(stderr, "iogen: error: --save-icf: %s\n", err);
        return 2;
    }
    return 0;
}

/* The targets opened (the engine's own where it has none), each refused as the engine and the job ask;
 * every refusal (a mounted device, a signature, tmpfs ...) applies to every target. How many, or -1 (the
 * message printed, none left open). */
static int open_targets(const struct iogen_config *cfg, struct target *ts, bool writes)
{
    int nt = 0;
    struct target_opts to = { .size = cfg->size, .writes = writes, .direct = !cfg->buffered,
                              .allow_destroy = cfg->allow_destroy, .allow_signature = cfg->allow_signature };
    char err[1024];
    if (cfg->engine->no_target) {
        target_none(&ts[nt++], cfg->size);
    } else {
        for (; nt < cfg->ntargets; nt++)
            if (target_open(&ts[nt], cfg->targets[nt], &to, err, sizeof err) != 0) {
                fprintf(stderr, "iogen: error: %s\n", err);
                close_targets(ts, nt);
                return -1;
            }
    }
    for (int i = 0; i < nt; i++)
        if (cfg->engine->options && cfg->engine->options->refuse_target &&
            cfg->engine->options->refuse_target(&ts[i], err, sizeof err) != 0) {
            fprintf(stderr, "iogen: error: %s\n", err);
            close_targets(ts, nt);
            return -1;
        }
    return nt;
}

/* Where the runs' outputs go: --log (with its header) and --results-csv. False where one cannot be made
 * (the message printed, neither left open). */
static bool open_outputs(const struct iogen_config *cfg, FILE **logf, FILE **csvf)
{
    *logf = *csvf = NULL;
    if (cfg->log_file) {
        if (!(*logf = open_out(cfg->log_file, "--log")))
            return false;
        fputs("start_ns,offset,size,op,latency_ns,worker,qd,run,target\n", *logf);
    }
    if (cfg->results_csv && !(*csvf = open_out(cfg->results_csv, "--results-csv"))) {
        if (*logf)
            fclose(*logf);
        return false;
    }
    return true;
}

struct outputs {
    FILE *log, *csv;                  /* --log, --results-csv, or NULL */
    const struct precondition *pre;   /* what --precondition did, or NULL */
};

/* Iometer's test list: each worker's access specs one after another, each a run (or a cycle of runs) of
 * its own, with its own ramp; within it the cycles, workers outermost, then targets, sizes, queue depths.
 * A failure or a --verify mismatch (3) ends the list; returns the last run's status. */
static int run_list(const struct iogen_config *cfg, const struct job *job, struct run_state *rs, struct target *ts,
                    int nt, const uint64_t *sizes, int nsizes, const struct outputs *out)
{
    uint64_t wv[SPEC_MAX_WORKERS], tv[IOGEN_MAX_TARGETS], qv[64];
    int nwv = cycle_values(&job->cycle_workers, (uint64_t)job->nworkers, (uint64_t)job->nworkers, wv, SPEC_MAX_WORKERS);
    int ntv = cycle_values(&job->cycle_targets, (uint64_t)nt, (uint64_t)nt, tv, IOGEN_MAX_TARGETS);
    struct cycle qc = { .on = job->cycle_qd, .exponential = job->qd_exponential, .start = job->qd_start,
                        .end = job->qd_end, .step = job->qd_step };
    int nqv = cycle_values(&qc, 0, 0, qv, 64);
    int steps = job_steps(job), rc = 0, runs = nwv * ntv * nsizes * nqv * steps, done = 0;
    for (int st = 0; st < steps && !rc && !interrupted; st++)
        for (int a = 0; a < nwv && !rc && !interrupted; a++)
            for (int b = 0; b < ntv && !rc && !interrupted; b++)
                for (int c = 0; c < nsizes && !rc && !interrupted; c++)
                    for (int d = 0; d < nqv && !rc && !interrupted; d++) {
                        struct run_params p = { .step = st, .nworkers = (int)wv[a], .ntargets = (int)tv[b],
                                                .size = sizes[c], .qd = (unsigned)qv[d] };
                        int active = 0;
                        for (int i = 0; i < p.nworkers; i++)
                            active += job->workers[i].nspec > st;
                        done++;
                        if (!active)
                            continue; /* no worker of these has a spec at this step */
                        const char *sname = job->specs[job->workers[0].nspec > st ? job->workers[0].spec[st] : 0].name;
                        osm_progress("run %d of %d: %s%s, %d workers, %d targets%s, qd %u, %g s", done, runs,
                                     cfg->workload ? cfg->workload : sname, steps > 1 ? " (test list)" : "",
                                     p.nworkers, p.ntargets, p.size ? " (sized)" : "",
                                     p.qd ? p.qd : job->workers[0].outstanding, job->run_s);
                        struct run_result res;
                        rc = one_run(rs, job, ts, &p, &res);
                        if (rc == 0 || rc == 3) {
                            report(stdout, &res, cfg->workload ? cfg->workload : sname, out->pre);
                            if (out->csv)
                                results_csv_run(out->csv, &res);
                        }
                        if (out->log)
                            write_log(out->log, &res);
                        run_free(&res);
                    }
    return rc;
}

/* After the list: the outputs closed and the verify state saved (a failure there fails a run that did
 * not), the targets closed, and --verify's findings said. The exit status. */
static int finish(const struct iogen_config *cfg, const struct run_state *rs, struct target *ts, int nt,
                  const struct outputs *out, int rc)
{
    char err[1024];
    if (out->log && fclose(out->log) != 0) {
        fprintf(stderr, "iogen: error: writing --log %s: %s\n", cfg->log_file, strerror(errno));
        rc = rc ? rc : 1;
    }
    if (out->csv && fclose(out->csv) != 0) {
        fprintf(stderr, "iogen: error: writing --results-csv %s: %s\n", cfg->results_csv, strerror(errno));
        rc = rc ? rc : 1;
    }
    if (rs->verify && verify_close(err, sizeof err) != 0) {
        fprintf(stderr, "iogen: error: %s\n", err);
        rc = rc ? rc : 1;
    }
    close_targets(ts, nt);
    if (rc == 3)
        fprintf(stderr, "iogen: error: --verify found blocks that do not hold what was written\n");
    if (!rc && rs->verify && rs->vread_all && !rs->vchecked_all) { /* never a success that checked nothing */
        fprintf(stderr, "iogen: error: --verify could check none of the %llu blocks read: none was written under "
                "the verify state, or each raced a write\n", (unsigned long long)rs->vread_all);
        rc = 1;
    }
    return interrupted && !rc ? 130 : rc;
}

int main(int argc, char **argv)
{
    osm_progname = "iogen";
    static struct iogen_config cfg;
    options_parse(argc, argv, &cfg);
    osm_trace_setup();
    static struct job job;
    options_build_job(&cfg, &job);
    if (cfg.save_icf)
        return save_icf(&cfg, &job);
    if (cfg.dump_spec) {
        job_print_json(&job, stdout);
        return 0;
    }
    static struct target ts[IOGEN_MAX_TARGETS];
    bool writes = spec_writes(&job) || cfg.precondition;
    int nt = open_targets(&cfg, ts, writes);
    if (nt < 0)
        return 2;
    options_engine_for_target(&cfg, &job, &ts[0]);
    uint64_t sizes[64];
    int nsizes = cycle_values(&job.cycle_size, 0, 0, sizes, 64);
    for (int i = 0; i < nt; i++)
        for (int k = 0; k < nsizes; k++)
            check_fit(&job, &ts[i], sizes[k], cfg.zones);
    if (cfg.cpu >= 0 && osm_pin(cfg.cpu) != 0)
        osm_die("cannot pin to CPU %d", cfg.cpu);
    osm_timer_setup(OSM_TIMER_TSC); /* the generator's stamps: osm_stamp() */
    unsigned lbs = 0;
    for (int i = 0; i < nt; i++)
        lbs = ts[i].lbs > lbs ? ts[i].lbs : lbs;
    static struct run_state rs;
    run_init(&rs, &cfg, lbs);
    struct outputs out = {0};
    if (!open_outputs(&cfg, &out.log, &out.csv)) {
        close_targets(ts, nt);
        return 2;
    }
    /* the last refusal before anything is written: it saves the state, unfinished, when this process writes */
    char err[1024];
    if (rs.verify && verify_open(&cfg, &ts[0], rs.lbs, writes, err, sizeof err) != 0) {
        fprintf(stderr, "iogen: error: %s\n", err);
        if (out.log)
            fclose(out.log);
        if (out.csv)
            fclose(out.csv);
        close_targets(ts, nt);
        return 2;
    }
    interrupt_catch();
    struct precondition pre;
    if (cfg.precondition) {
        if (cfg.engine->no_target) {
            fprintf(stderr, "iogen: error: --precondition writes the target: --engine %s has none\n", cfg.engine->name);
            return 2;
        }
        for (int i = 0; i < nt; i++)
            if (precondition(&ts[i], cfg.seed, &pre, err, sizeof err) != 0) {
                fprintf(stderr, "iogen: error: %s\n", interrupted ? "--precondition: interrupted" : err);
                if (rs.verify && verify_close(err, sizeof err) != 0) /* the region now holds no pattern */
                    fprintf(stderr, "iogen: error: %s\n", err);
                close_targets(ts, nt);
                return interrupted ? 130 : 1;
            }
        out.pre = &pre;
    }
    int rc = run_list(&cfg, &job, &rs, ts, nt, sizes, nsizes, &out);
    return finish(&cfg, &rs, ts, nt, &out, rc);
}
