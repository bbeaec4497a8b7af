/* report.c - what a run tells: its JSON object (docs/DESIGN.md, contract
 * 7), the request log (--log), and the live line on a terminal. Totals,
 * per-worker and per-interval figures all come from merged histograms. */
#include "run.h"
#include "json.h"
#include "osm.h"
#include "prober.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct totals {
    struct hist all, rd, wr;
    uint64_t reads, writes, bytes_r, bytes_w, syscalls, vread, verified, vnever, raced, bad, vstale, vnopattern;
    uint64_t t_issue, t_call, t_account; /* --stats */
};

static void totals_clear(struct totals *t)
{
    memset(t, 0, sizeof *t);
    hist_clear(&t->all);
    hist_clear(&t->rd);
    hist_clear(&t->wr);
}

static void add_stream(struct totals *t, const struct stream *s)
{
    hist_merge(&t->all, &s->all);
    hist_merge(&t->rd, &s->rd);
    hist_merge(&t->wr, &s->wr);
    t->reads += s->reads;
    t->writes += s->writes;
    t->bytes_r += s->bytes_r;
    t->bytes_w += s->bytes_w;
    t->syscalls += s->syscalls;
    t->t_issue += s->t_issue;
    t->t_call += s->t_call;
    t->t_account += s->t_account;
    t->vread += s->vread;
    t->verified += s->verified;
    t->vnever += s->vnever;
    t->raced += s->raced;
    t->bad += s->bad;
    t->vstale += s->vstale;
    t->vnopattern += s->vnopattern;
}

static double seconds(struct timeval a, struct timeval b)
{
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_usec - a.tv_usec) * 1e-6;
}

/* --stats: where an I/O's time goes, in microseconds per I/O measured.
 * issue, engine_call and accounting are the streams' own clock readings
 * (wall time: a thread that waits or is preempted there counts it);
 * user and system are the process's CPU (getrusage, every thread). With an
 * asynchronous engine, the user CPU beyond issue and accounting is the
 * engine's own work in user space and the loop's; the kernel's part is the
 * system CPU, inside the engine call. A synchronous engine makes its call
 * while issuing. The same figures go on one line to standard error. */
static void cpu_per_io(struct json *j, const struct totals *tot, const struct run_state *rs, double user,
                       double sys, double per, bool sync)
{
    double k = rs->tick_ns * 1e-3 * per, issue = (double)tot->t_issue * k, call = (double)tot->t_call * k,
           acc = (double)tot->t_account * k, u = user * 1e6 * per, s = sys * 1e6 * per;
    json_key(j, "cpu_per_io");
    json_obj(j);
    json_kfixed(j, "issue_us", issue, 4);
    json_kfixed(j, "engine_call_us", call, 4);
    json_kfixed(j, "accounting_us", acc, 4);
    json_kfixed(j, "user_us", u, 4);
    json_kfixed(j, "system_us", s, 4);
    if (!sync)
        json_kfixed(j, "user_in_engine_and_loop_us", u - issue - acc, 4);
    json_kbool(j, "call_made_while_issuing", sync);
    json_obj_end(j);
    fprintf(stderr, "iogen: per I/O: issue %.3f us%s, engine call %.3f us, accounting %.3f us (wall); "
            "CPU user %.3f us, system %.3f us\n", issue, sync ? " (with the synchronous call)" : "", call, acc, u, s);
}

/* The report intervals of the streams of workers [from, to): iops, mbps and
 * latency of each, from the streams' interval histograms merged. */
static void intervals(struct json *j, const struct run_state *rs, struct worker *ws, int from, int to)
{
    json_arr(j);
    if (!rs->ival_ticks) {
        json_arr_end(j);
        return;
    }
    size_t nint = 0;
    for (int i = from; i < to; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++)
            if (ws[i].streams[k].nivals > nint)
                nint = ws[i].streams[k].nivals;
    double iv = (double)rs->ival_ticks / osm_timer.hz;
    for (size_t n = 0; n < nint; n++) {
        struct hist h;
        uint64_t bytes = 0;
        hist_clear(&h);
        for (int i = from; i < to; i++)
            for (unsigned k = 0; k < ws[i].nstreams; k++)
                if (n < ws[i].streams[k].nivals) {
                    hist_merge(&h, &ws[i].streams[k].ivals[n]);
                    bytes += ws[i].streams[k].ival_bytes[n];
                }
        json_obj(j);
        json_kfixed(j, "t", (double)(n + 1) * iv, 3);
        json_kfixed(j, "iops", (double)h.count / iv, 3);
        json_kfixed(j, "mbps", (double)bytes / iv / 1e6, 3);
        json_key(j, "lat_ns");
        hist_json(j, &h);
        json_obj_end(j);
    }
    json_arr_end(j);
}

void tstat_add(struct tstat *a, const struct tstat *b)
{
    a->reads += b->reads;
    a->writes += b->writes;
    a->bytes_r += b->bytes_r;
    a->bytes_w += b->bytes_w;
    a->lat_sum += b->lat_sum;
    a->rlat_sum += b->rlat_sum;
    a->wlat_sum += b->wlat_sum;
    a->lat_max = b->lat_max > a->lat_max ? b->lat_max : a->lat_max;
    a->rlat_max = b->rlat_max > a->rlat_max ? b->rlat_max : a->rlat_max;
    a->wlat_max = b->wlat_max > a->wlat_max ? b->wlat_max : a->wlat_max;
}

/* Worker w's figures on its target k, over its streams. */
static struct tstat worker_target(const struct worker *w, unsigned k)
{
    struct tstat s;
    memset(&s, 0, sizeof s);
    for (unsigned n = 0; n < w->nstreams; n++)
        tstat_add(&s, &w->streams[n].tst[k]);
    return s;
}

static void target_json(struct json *j, const struct target *t, const struct tstat *s, double secs)
{
    uint64_t ios = s->reads + s->writes;
    json_obj(j);
    json_kstr(j, "target", t->path);
    json_kstr(j, "device", t->device);
    json_kuint(j, "reads", s->reads);
    json_kuint(j, "writes", s->writes);
    json_kuint(j, "bytes_read", s->bytes_r);
    json_kuint(j, "bytes_written", s->bytes_w);
    json_kfixed(j, "iops", (double)ios / secs, 3);
    json_kfixed(j, "mbps", (double)(s->bytes_r + s->bytes_w) / secs / 1e6, 3);
    json_kfixed(j, "lat_mean_ns", ios ? (double)s->lat_sum / (double)ios : 0.0, 1);
    json_kuint(j, "lat_max_ns", s->lat_max);
    json_obj_end(j);
}

/* --zones: each target's region in equal zones by offset; a zone's MB/s is the bytes completed in it over
 * the time between completions it took, per stream, the streams' rates added (SPEK's ZCAV). */
static void zones_json(struct json *j, const struct run_result *in)
{
    const struct run_state *rs = in->rs;
    json_key(j, "zones");
    json_arr(j);
    for (int k = 0; k < in->p.ntargets; k++)
        for (unsigned z = 0; z < rs->zones; z++) {
            uint64_t bytes = 0;
            double mbps = 0;
            const struct wtarget *tg = NULL;
            for (int i = 0; i < in->nw; i++) {
                if ((unsigned)k >= in->ws[i].ntargets)
                    continue;
                tg = &in->ws[i].tg[k];
                for (unsigned n = 0; n < in->ws[i].nstreams; n++) {
                    const struct zstat *zs = &in->ws[i].streams[n].zst[(unsigned)k * rs->zones + z];
                    bytes += zs->bytes;
                    if (zs->ticks)
                        mbps += (double)zs->bytes / ((double)zs->ticks / osm_timer.hz) / 1e6;
                }
            }
            if (!tg)
                continue;
            json_obj(j);
            json_kstr(j, "target", tg->t->path);
            json_kuint(j, "zone", z);
            json_kuint(j, "offset", tg->region_start + tg->region_len * z / rs->zones);
            json_kuint(j, "bytes", bytes);
            json_kfixed(j, "mbps", mbps, 3);
            json_obj_end(j);
        }
    json_arr_end(j);
}

/* --verify: every block read is accounted for: checked against what the verify state says it holds (a
 * mismatch, or not), never written under the state (not checked), or read while written. */
static void verify_report(struct json *j, const struct totals *tot)
{
    json_key(j, "verify");
    json_obj(j);
    verify_json(j);
    json_kuint(j, "blocks_read", tot->vread);
    json_kuint(j, "blocks_checked", tot->verified);
    json_kuint(j, "mismatches", tot->bad);
    json_kuint(j, "blocks_stale", tot->vstale);
    json_kuint(j, "blocks_without_pattern", tot->vnopattern);
    json_kuint(j, "blocks_never_written", tot->vnever);
    json_kuint(j, "blocks_raced", tot->raced);
    json_obj_end(j);
    if (tot->vnever)
        fprintf(stderr, "iogen: warning: --verify: %llu of the %llu blocks read were never written under the "
                "verify state: nothing to check them against\n",
                (unsigned long long)tot->vnever, (unsigned long long)tot->vread);
    if (tot->vstale)
        fprintf(stderr, "iogen: error: --verify: %llu blocks hold an earlier generation's data: a later write to "
                "them was lost\n", (unsigned long long)tot->vstale);
}

/* One worker's figures: its load, latency, each of its targets, its mix as generated (per spec line:
 * I/Os, reads and random ones) and its intervals. */
static void worker_json(struct json *j, const struct run_result *in, int i)
{
    double secs = in->secs;
    struct worker *w = &in->ws[i];
    struct totals wt;
    totals_clear(&wt);
    for (unsigned k = 0; k < w->nstreams; k++)
        add_stream(&wt, &w->streams[k]);
    json_obj(j);
    json_kstr(j, "name", w->cfg->name);
    json_kstr(j, "spec", w->spec->name);
    json_kuint(j, "qd", w->qd);
    json_kfixed(j, "iops", (double)(wt.reads + wt.writes) / secs, 3);
    json_kfixed(j, "mbps", (double)(wt.bytes_r + wt.bytes_w) / secs / 1e6, 3);
    json_kuint(j, "reads", wt.reads);
    json_kuint(j, "writes", wt.writes);
    json_kuint(j, "bytes_read", wt.bytes_r);
    json_kuint(j, "bytes_written", wt.bytes_w);
    json_key(j, "lat_ns");
    hist_json(j, &wt.all);
    json_key(j, "targets");
    json_arr(j);
    for (unsigned k = 0; k < w->ntargets; k++) {
        struct tstat s = worker_target(w, k);
        target_json(j, w->tg[k].t, &s, secs);
    }
    json_arr_end(j);
    json_key(j, "lines"); /* the mix as generated: per spec line, I/Os, reads and random ones */
    json_arr(j);
    for (int l = 0; l < w->spec->nlines; l++) {
        struct lstat ls = { 0, 0, 0 };
        for (unsigned k = 0; k < w->nstreams; k++) {
            ls.ios += w->streams[k].lst[l].ios;
            ls.reads += w->streams[k].lst[l].reads;
            ls.random += w->streams[k].lst[l].random;
        }
        json_obj(j);
        json_kuint(j, "size", w->spec->line[l].size);
        json_kuint(j, "ios", ls.ios);
        json_kuint(j, "reads", ls.reads);
        json_kuint(j, "random", ls.random);
        json_obj_end(j);
    }
    json_arr_end(j);
    json_key(j, "intervals");
    intervals(j, in->rs, in->ws, i, i + 1);
    json_obj_end(j);
}

/* Target k over every worker that has it. */
static void target_over_workers(struct json *j, const struct run_result *in, int k)
{
    double secs = in->secs;
    struct tstat s;
    memset(&s, 0, sizeof s);
    const struct target *tk = NULL;
    for (int i = 0; i < in->nw; i++)
        if ((unsigned)k < in->ws[i].ntargets) {
            struct tstat ws = worker_target(&in->ws[i], (unsigned)k);
            tstat_add(&s, &ws);
            tk = in->ws[i].tg[k].t;
        }
    if (tk)
        target_json(j, tk, &s, secs);
}

void report(FILE *f, const struct run_result *in, const char *name, const struct precondition *pre)
{
    const struct run_state *rs = in->rs;
    const struct iogen_config *cfg = rs->cfg;
    struct totals tot;
    totals_clear(&tot);
    for (int i = 0; i < in->nw; i++)
        for (unsigned k = 0; k < in->ws[i].nstreams; k++)
            add_stream(&tot, &in->ws[i].streams[k]);
    const struct target *t = in->t;
    double secs = in->secs;
    uint64_t ios = tot.reads + tot.writes;
    double user = seconds(in->ru0.ru_utime, in->ru1.ru_utime), sys = seconds(in->ru0.ru_stime, in->ru1.ru_stime);
    long ctx = (in->ru1.ru_nvcsw - in->ru0.ru_nvcsw) + (in->ru1.ru_nivcsw - in->ru0.ru_nivcsw);
    double per = ios ? 1.0 / (double)ios : 0;

    struct json j;
    json_to_file(&j, f);
    json_obj(&j);
    json_kstr(&j, "workload", name);
    json_kstr(&j, "engine", cfg->engine->name);
    if (cfg->engine_fallback)
        json_kstr(&j, "engine_fallback", cfg->engine_fallback);
    json_kstr(&j, "engine_setup", in->ws[0].engine_setup);
    json_kuint(&j, "batch_complete", cfg->engine->options && cfg->engine->options->batch_complete ? cfg->engine->options->batch_complete() : 1);
    json_kint(&j, "qd", in->qd);
    json_kint(&j, "workers", in->nw);
    json_kstr(&j, "target", t->path);
    json_kstr(&j, "target_type", t->block ? "block" : "file");
    json_kstr(&j, "filesystem", t->fs);
    json_kstr(&j, "device", t->device);
    json_kbool(&j, "direct", t->direct);
    json_kuint(&j, "logical_block_size", t->lbs);
    json_kuint(&j, "region_bytes", in->ws[0].tg[0].region_len);
    /* which run of the test list and of the cycles this is */
    json_kint(&j, "step", in->p.step + 1);
    json_kint(&j, "steps", job_steps(in->job));
    json_key(&j, "cycle");
    json_obj(&j);
    json_kint(&j, "workers", in->p.nworkers);
    json_kint(&j, "targets", in->p.ntargets);
    json_key(&j, "size");
    if (in->p.size)
        json_uint(&j, in->p.size);
    else
        json_null(&j);
    json_kint(&j, "qd", in->qd);
    json_obj_end(&j);
    json_kfixed(&j, "run_s", secs, 6);
    json_kfixed(&j, "start_unix", in->start_unix, 6);
    if (cfg->start_at > 0)
        json_kfixed(&j, "start_at", cfg->start_at, 6);
    json_kfixed(&j, "ramp_s", in->ramp_s, 3);
    if (rs->ramp_ios)
        json_kuint(&j, "ramp_ios", rs->ramp_ios);
    json_kfixed(&j, "iops", (double)ios / secs, 3);
    json_kfixed(&j, "mbps", (double)(tot.bytes_r + tot.bytes_w) / secs / 1e6, 3);
    json_kfixed(&j, "read_iops", (double)tot.reads / secs, 3);
    json_kfixed(&j, "write_iops", (double)tot.writes / secs, 3);
    json_key(&j, "lat_ns");
    hist_json(&j, &tot.all);
    json_key(&j, "read_lat_ns");
    hist_json(&j, &tot.rd);
    json_key(&j, "write_lat_ns");
    hist_json(&j, &tot.wr);
    json_kuint(&j, "reads", tot.reads);
    json_kuint(&j, "writes", tot.writes);
    json_kuint(&j, "bytes_read", tot.bytes_r);
    json_kuint(&j, "bytes_written", tot.bytes_w);
    json_kfixed(&j, "cpu_user_s", user, 6);
    json_kfixed(&j, "cpu_sys_s", sys, 6);
    json_kfixed(&j, "cpu_us_per_io", (user + sys) * 1e6 * per, 4);
    json_kuint(&j, "syscalls", tot.syscalls);
    json_kfixed(&j, "syscalls_per_io", (double)tot.syscalls * per, 4);
    json_kint(&j, "ctx_switches", ctx);
    json_kfixed(&j, "ctx_switches_per_io", (double)ctx * per, 4);
    if (cfg->stats)
        cpu_per_io(&j, &tot, rs, user, sys, per, cfg->engine->sync);
    if (rs->verify)
        verify_report(&j, &tot);
    if (rs->steady.on)
        steady_json(&rs->steady, &j);
    if (pre) {
        json_key(&j, "precondition");
        json_obj(&j);
        json_kint(&j, "passes", pre->passes);
        json_kuint(&j, "bytes_written", pre->bytes);
        json_kfixed(&j, "seconds", pre->seconds, 3);
        json_obj_end(&j);
    }
    json_key(&j, "per_worker");
    json_arr(&j);
    for (int i = 0; i < in->nw; i++)
        worker_json(&j, in, i);
    json_arr_end(&j);
    json_key(&j, "targets"); /* each target over every worker */
    json_arr(&j);
    for (int k = 0; k < in->p.ntargets; k++)
        target_over_workers(&j, in, k);
    json_arr_end(&j);
    if (rs->zones)
        zones_json(&j, in);
    json_key(&j, "intervals");
    intervals(&j, in->rs, in->ws, 0, in->nw);
    prober_json(in->pr, &j);
    json_obj_end(&j);
    json_line_end(&j, "the result to standard output");
}

void write_log(FILE *lf, const struct run_result *in)
{
    struct worker *ws = in->ws;
    int nw = in->nw;
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++) {
            struct stream *s = &ws[i].streams[k];
            for (size_t n = 0; n < s->nlog; n++)
                fprintf(lf, "%llu,%llu,%u,%c,%u,%d,%d,%d,%u\n", (unsigned long long)s->log[n].start_ns,
                        (unsigned long long)s->log[n].off, s->log[n].len, s->log[n].write ? 'W' : 'R',
                        s->log[n].lat_ns, ws[i].id + 1, in->qd, in->rs->runno, s->log[n].target + 1u);
            if (s->log_full)
                fprintf(stderr, "iogen: warning: the request log of worker %d stopped at %zu rows (memory)\n", i + 1,
                        s->nlog);
        }
}
