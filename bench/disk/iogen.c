/* iogen.c - osmeter's raw I/O generator.
 *
 * Runs an Iometer-style job (workers, each with an access specification and
 * a number of outstanding I/Os) against a file or a block device, below the
 * page cache (O_DIRECT) by default, through an engine (io_uring, Linux AIO,
 * or threads doing pread/pwrite). Prints one JSON object per run (one per
 * queue depth when cycling). See `iogen --help`, docs/iogen.md and
 * docs/DESIGN.md (contract 7).
 *
 * The parts: options.c (the option table and the job), run.c (workers,
 * streams, the measured window), verify.c (--verify and its state), report.c (the JSON result, the
 * log), engine.c and engine_<name>.c (the engines), spec*.c (workloads and
 * .icf import), target.c (what is read and written, and what must never be),
 * hist.c (latency histograms), prober.c (the system's view meanwhile).
 */
#include "iogen.h"
#include "osm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static bool spec_writes(const struct job *job)
{
    for (int i = 0; i < job->nworkers; i++) {
        const struct spec *s = &job->specs[job->workers[i].spec];
        for (int k = 0; k < s->nlines; k++)
            if (s->line[k].read < 100 && s->line[k].access > 0)
                return true;
    }
    return false;
}

/* Sizes and alignments must suit the target (O_DIRECT needs whole blocks)
 * and fit the region. */
static void check_fit(const struct job *job, const struct target *t)
{
    for (int i = 0; i < job->nworkers; i++) {
        const struct worker_cfg *c = &job->workers[i];
        const struct spec *s = &job->specs[c->spec];
        uint64_t start = c->start_bytes, len = c->max_bytes ? c->max_bytes : t->size - (start < t->size ? start : 0);
        if (start >= t->size || start + len > t->size)
            osm_usage_error("worker '%s': its region (start %llu, %llu bytes) does not fit the target's %llu bytes",
                            c->name, (unsigned long long)start, (unsigned long long)len,
                            (unsigned long long)t->size);
        if (t->direct && start % t->lbs)
            osm_usage_error("worker '%s': start %llu is not a multiple of the %u-byte logical block", c->name,
                            (unsigned long long)start, t->lbs);
        for (int k = 0; k < s->nlines; k++) {
            const struct spec_line *l = &s->line[k];
            if (l->size > len)
                osm_usage_error("spec '%s' line %d: %llu-byte I/Os do not fit the %llu-byte region (target too "
                                "small; use a larger --size)",
                                s->name, k + 1, (unsigned long long)l->size, (unsigned long long)len);
            if (t->direct && l->size % t->lbs)
                osm_usage_error("spec '%s' line %d: %llu bytes is not a multiple of the target's %u-byte logical "
                                "block, which O_DIRECT requires (or use --buffered)",
                                s->name, k + 1, (unsigned long long)l->size, t->lbs);
            if (l->align && t->direct && l->align % t->lbs)
                osm_usage_error("spec '%s' line %d: alignment %llu is not a multiple of the target's %u-byte "
                                "logical block",
                                s->name, k + 1, (unsigned long long)l->align, t->lbs);
        }
    }
}

int main(int argc, char **argv)
{
    osm_progname = "iogen";
    options_parse(argc, argv);
    osm_trace_setup();
    static struct job job;
    options_build_job(&job);
    if (opt.dump_spec) {
        job_print_json(&job, stdout);
        return 0;
    }
    struct target t;
    bool writes = spec_writes(&job) || opt.precondition;
    struct target_opts to = { .size = opt.size, .writes = writes,
                              .direct = !opt.buffered,
                              .allow_destroy = opt.allow_destroy, .allow_signature = opt.allow_signature };
    char err[1024];
    if (opt.engine->no_target) {
        target_none(&t, opt.size);
    } else if (target_open(&t, opt.target, &to, err, sizeof err) != 0) {
        fprintf(stderr, "iogen: error: %s\n", err);
        return 2;
    }
    if (opt.eng.iopoll && !target_pollable(&t, err, sizeof err)) {
        fprintf(stderr, "iogen: error: --iopoll: %s\n", err);
        target_close(&t);
        return 2;
    }
    options_engine_for_target(&job, &t);
    check_fit(&job, &t);
    if (opt.cpu >= 0 && osm_pin(opt.cpu) != 0)
        osm_die("cannot pin to CPU %d", opt.cpu);
#if defined(__x86_64__)
    tick_hz = osm_calibrate_hz();
#else
    tick_hz = 1e9;
#endif
    tick_ns = 1e9 / tick_hz;
    run.lbs = t.lbs < 16 ? 512 : t.lbs;
    run.verify = opt.verify;
    run.transactions = job.transactions;
    run.log = opt.log_file != NULL;
    FILE *logf = NULL;
    if (opt.log_file) {
        /* never through a link planted at the path (a shared /tmp): O_NOFOLLOW */
        int lfd = open(opt.log_file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        logf = lfd < 0 ? NULL : fdopen(lfd, "w");
        if (lfd >= 0 && !logf)
            close(lfd);
        if (!logf) {
            fprintf(stderr, "iogen: error: --log %s: %s\n", opt.log_file, strerror(errno));
            target_close(&t);
            return 2;
        }
        fputs("start_ns,offset,size,op,latency_ns,worker,qd\n", logf);
    }
    /* the last refusal before anything is written: it saves the state, unfinished, when this process writes */
    if (run.verify && verify_open(&t, writes, err, sizeof err) != 0) {
        fprintf(stderr, "iogen: error: %s\n", err);
        if (logf)
            fclose(logf);
        target_close(&t);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    struct precondition pre, *prep = NULL;
    if (opt.precondition) {
        if (opt.engine->no_target) {
            fprintf(stderr, "iogen: error: --precondition writes the target: --engine %s has none\n", opt.engine->name);
            return 2;
        }
        if (precondition(&t, &pre, err, sizeof err) != 0) {
            fprintf(stderr, "iogen: error: %s\n", interrupted ? "--precondition: interrupted" : err);
            if (run.verify && verify_close(err, sizeof err) != 0) /* the region now holds no pattern */
                fprintf(stderr, "iogen: error: %s\n", err);
            target_close(&t);
            return interrupted ? 130 : 1;
        }
        prep = &pre;
    }
    const char *name = opt.workload ? opt.workload : job.specs[job.workers[0].spec].name;
    int rc = 0;
    unsigned qd = job.cycle_qd ? job.qd_start : 0;
    do {
        struct run_result res;
        if (job.cycle_qd)
            osm_progress("queue depth %u (cycle %u..%u), %g s", qd, job.qd_start, job.qd_end, job.run_s);
        else
            osm_progress("%s, %g s", name, job.run_s);
        rc = one_run(&job, &t, qd, &res);
        if (rc == 0 || rc == 3)
            report(stdout, &res, name, prep);
        if (logf)
            write_log(logf, res.ws, res.nw);
        run_free(&res);
        uint64_t next = job.qd_exponential ? (uint64_t)qd * job.qd_step : (uint64_t)qd + job.qd_step; /* no wrap */
        qd = next > job.qd_end ? 0 : (unsigned)next;
    } while (job.cycle_qd && qd && !rc && !interrupted);
    if (logf && fclose(logf) != 0) {
        fprintf(stderr, "iogen: error: writing --log %s: %s\n", opt.log_file, strerror(errno));
        rc = rc ? rc : 1;
    }
    if (run.verify && verify_close(err, sizeof err) != 0) {
        fprintf(stderr, "iogen: error: %s\n", err);
        rc = rc ? rc : 1;
    }
    target_close(&t);
    if (rc == 3)
        fprintf(stderr, "iogen: error: --verify found blocks that do not hold what was written\n");
    if (!rc && run.verify && run.vread_all && !run.vchecked_all) { /* never a success that checked nothing */
        fprintf(stderr, "iogen: error: --verify could check none of the %llu blocks read: none was written under "
                "the verify state, or each raced a write\n", (unsigned long long)run.vread_all);
        rc = 1;
    }
    return interrupted && !rc ? 130 : rc;
}
