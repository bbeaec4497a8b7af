/* run.c - one run of a job: workers, each with one or more streams of
 * requests going through an engine (stream.c), started together; the
 * ramp-up, the measured window and its report intervals, and what the
 * run's end leaves for the report (--verify is verify.c's).
 */
#include "interrupt.h"
#include "osm.h"
#include "run.h"
#include "osmmem.h"
#include "prober.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void run_init(struct run_state *rs, const struct iogen_config *cfg, unsigned lbs)
{
    memset(rs, 0, sizeof *rs);
    rs->cfg = cfg;
    rs->tick_ns = 1e9 / osm_timer.hz;
    rs->steady = cfg->steady;
    rs->lbs = lbs < 16 ? 512 : lbs;
    rs->verify = cfg->verify;
    rs->log = cfg->log_file != NULL;
    rs->zones = cfg->zones;
}

/* Worker i of the job for a run: its spec of this step (sized when
 * cycling sizes), its targets and their regions, its buffers and streams. */
static void setup_worker(struct run_state *rs, struct worker *w, int i, const struct job *job, struct target *ts, const struct run_params *p)
{
    w->id = i;
    w->rs = rs;
    w->cfg = &job->workers[i];
    w->spec = &job->specs[w->cfg->spec[p->step]];
    if (p->size) { /* --cycle-size: every line moves this many bytes */
        w->sized = *w->spec;
        for (int k = 0; k < w->sized.nlines; k++)
            w->sized.line[k].size = p->size;
        w->spec = &w->sized;
    }
    w->ntargets = (unsigned)p->ntargets;
    for (unsigned k = 0; k < w->ntargets; k++) {
        struct wtarget *tg = &w->tg[k];
        struct target *t = &ts[k];
        tg->t = t;
        w->fds[k] = t->fd;
        tg->region_start = w->cfg->start_bytes;
        tg->region_len = w->cfg->max_bytes ? w->cfg->max_bytes : t->size - tg->region_start;
        tg->region_len -= tg->region_len % t->lbs;
    }
    unsigned per_target = p->qd ? p->qd : (w->cfg->outstanding ? w->cfg->outstanding : 1);
    w->qd = per_target * w->ntargets; /* Iometer's outstanding I/Os are per target */
    size_t maxsz = 0;
    for (int k = 0; k < w->spec->nlines; k++)
        if (w->spec->line[k].size > maxsz)
            maxsz = w->spec->line[k].size;
    w->bufsize = (maxsz + 4095) & ~(size_t)4095;
    if (posix_memalign((void **)&w->bufs, 4096, w->bufsize * w->qd) != 0)
        osm_die("cannot allocate %u buffers of %zu bytes", w->qd, w->bufsize);
    fill_buffer(w->bufs, w->bufsize * w->qd, w->cfg->pattern, rs->cfg->seed + (uint64_t)i);
    w->slots = calloc(w->qd, sizeof *w->slots);
    w->nstreams = rs->cfg->engine->sync ? w->qd : 1;
    w->streams = calloc(w->nstreams, sizeof *w->streams);
    if (!w->slots || !w->streams)
        osm_die("out of memory");
    unsigned per = w->qd / w->nstreams;
    for (unsigned k = 0; k < w->nstreams; k++) {
        struct stream *s = &w->streams[k];
        s->w = w;
        s->idx = k;
        s->slots = w->slots + (size_t)k * per;
        s->nslots = per;
        s->next_target = k % w->ntargets; /* one-request streams (psync) start on different targets */
        s->tst = calloc(w->ntargets, sizeof *s->tst);
        s->lst = calloc((size_t)w->spec->nlines, sizeof *s->lst);
        s->zst = rs->zones ? calloc((size_t)w->ntargets * rs->zones, sizeof *s->zst) : NULL;
        if (!s->tst || !s->lst || (rs->zones && !s->zst))
            osm_die("out of memory");
        for (unsigned j = 0; j < per; j++) /* a slot's number is its place in its stream */
            s->slots[j] = (struct io){ .buf = w->bufs + ((size_t)k * per + j) * w->bufsize, .slot = j };
        uint64_t seed = (w->cfg->fixed_seed ? w->cfg->seed : rs->cfg->seed) * 0x9E3779B97F4A7C15ull;
        s->rng = (seed ^ ((uint64_t)(i + 1) << 32) ^ (k + 1) ^ ((uint64_t)p->step << 48)) | 1;
        hist_clear(&s->all);
        hist_clear(&s->rd);
        hist_clear(&s->wr);
        hist_clear(&s->ival);
    }
}

static bool all_done(struct worker *ws, int nw)
{
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++)
            if (ws[i].streams[k].started && !atomic_load(&ws[i].streams[k].done))
                return false;
    return true;
}

/* --start-at: hosts started over ssh at different moments begin together on their wall clocks
 * (the manager measures and reports each clock's offset); the rings and threads are already set
 * up, so only the wait lies between. Only the first run waits; a signal ends the wait. */
static void wait_start_at(const struct iogen_config *cfg)
{
    static bool waited;
    if (cfg->start_at <= 0 || waited)
        return;
    waited = true;
    struct timespec at = { (time_t)cfg->start_at, (long)((cfg->start_at - (double)(time_t)cfg->start_at) * 1e9) };
    while (!interrupted && clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
}

/* The run's clock: where measuring begins (after a ramp by time, or, with --ramp-ios, once so many I/Os came
 * back: complete() sets it then) and ends (a time limit, a count with --transactions, or both: the first),
 * and each stream's first interval. */
static void arm_clock(struct run_state *rs, const struct job *job, struct worker *ws, int nw, uint64_t now)
{
    rs->ramp_ios = rs->cfg->ramp_ios;
    rs->run_s = job->run_s;
    atomic_store(&rs->ramp_done, 0);
    rs->t_measure = rs->ramp_ios ? UINT64_MAX : now + (uint64_t)(job->ramp_s * osm_timer.hz);
    rs->count_stop = false;
    rs->t_end = job->run_s > 0 && !rs->ramp_ios ? rs->t_measure + (uint64_t)(job->run_s * osm_timer.hz) : UINT64_MAX;
    rs->ival_ticks = rs->cfg->interval_s > 0 ? (uint64_t)(rs->cfg->interval_s * osm_timer.hz) : 0;
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++)
            ws[i].streams[k].ival_end = rs->ramp_ios ? 0 : rs->t_measure + rs->ival_ticks;
}

/* One thread per stream; one that cannot start fails its worker and stops the run. */
static void start_streams(struct run_state *rs, struct worker *ws, int nw)
{
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++) {
            struct stream *s = &ws[i].streams[k];
            if (pthread_create(&s->th, NULL, stream_main, s) != 0) {
                snprintf(ws[i].err, sizeof ws[i].err, "cannot start thread %u of worker %d", k + 1, i + 1);
                atomic_store(&ws[i].failed, true);
                atomic_store(&rs->stop, 1);
                break;
            }
            s->started = true;
        }
}

/* --steady: the window that ended at next_sample, from the workers' measured counts since the last (prev),
 * to the steady-state test; true where it found the load steady (the run ends there). */
static bool steady_window(struct run_state *rs, struct worker *ws, int nw, uint64_t next_sample, uint64_t prev[3])
{
    uint64_t cur[3] = { 0, 0, 0 };
    for (int i = 0; i < nw; i++) {
        cur[0] += atomic_load(&ws[i].meas_ios);
        cur[1] += atomic_load(&ws[i].meas_bytes);
        cur[2] += atomic_load(&ws[i].meas_lat_ns);
    }
    double t_s = (double)(next_sample - rs->t_measure) / osm_timer.hz;
    bool steady = steady_sample(&rs->steady, t_s, (double)(cur[0] - prev[0]), (double)(cur[1] - prev[1]),
                                (double)(cur[2] - prev[2]), (double)(cur[0] - prev[0]));
    memcpy(prev, cur, 3 * sizeof *prev);
    return steady;
}

/* Watches the streams until every one is done, every 20 ms: starts the prober (and the run's first
 * rusage) when measuring begins, passes an interrupt on, feeds --steady its windows, and on a terminal
 * draws the one-line status every half second or (--live) per-worker bars every second; never in a pipe,
 * and no one-line status under --status (its lines would land in the middle of it). Joins each stream's
 * thread once, after. Returns whether measuring began. */
static bool watch(struct run_state *rs, const struct job *job, struct target *ts, struct worker *ws, int nw,
                  struct run_result *out, uint64_t start)
{
    bool bars = rs->cfg->live && isatty(STDERR_FILENO);
    bool live = !bars && !rs->cfg->status && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
    bool measuring = false;
    rs->steady_stop = false;
    double period = rs->cfg->interval_s > 0 ? rs->cfg->interval_s : 1.0;
    uint64_t period_ticks = (uint64_t)(period * osm_timer.hz), next_sample = 0;
    uint64_t prev[3] = { 0, 0, 0 };
    if (rs->steady.on)
        steady_start(&rs->steady, period);
    uint64_t last_ios = 0, last_bytes = 0;
    uint64_t *lios = calloc((size_t)nw * 3, sizeof *lios); /* --live: each worker's last counts */
    if (!lios)
        osm_die("out of memory");
    double total = job->run_s > 0 ? job->ramp_s + job->run_s : 0;
    uint64_t last_disp = start;
    struct status_ctx sctx = { rs, ws, nw, 0, 0, 0 };
    while (!all_done(ws, nw)) {
        uint64_t now = osm_stamp();
        if (!measuring && now >= rs->t_measure) {
            getrusage(RUSAGE_SELF, &out->ru0);
            next_sample = rs->t_measure + period_ticks;
            const char *dev = strrchr(ts[0].device, '/');
            out->pr = prober_start(period, dev ? dev + 1 : "", rs->cfg->status ? status_line : NULL, &sctx);
            measuring = true;
        }
        if (interrupted)
            atomic_store(&rs->stop, 1);
        if (rs->steady.on && measuring && now >= next_sample && !rs->steady_stop) {
            if (steady_window(rs, ws, nw, next_sample, prev)) {
                rs->steady_stop = true; /* steady: the run ends here */
                atomic_store(&rs->stop, 1);
            }
            next_sample += period_ticks;
        }
        double since = (double)(now - last_disp) * rs->tick_ns, so_far = (double)(now - start) * rs->tick_ns * 1e-9;
        if (bars && since >= 1e9) {
            live_frame(stderr, ws, nw, out->qd, lios, lios + nw, lios + 2 * nw, since * 1e-9, so_far, total);
            last_disp = now;
        }
        if (live && since >= 5e8) {
            status_display(ws, nw, out->qd, &last_ios, &last_bytes, since * 1e-9, so_far, total);
            last_disp = now;
        }
        struct timespec d = { 0, 20 * 1000 * 1000 };
        nanosleep(&d, NULL);
    }
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++)
            if (ws[i].streams[k].started)
                pthread_join(ws[i].streams[k].th, NULL);
    free(lios);
    if (live)
        fputs("\r\033[K", stderr);
    if (bars)
        live_frame(stderr, NULL, 0, 0, NULL, NULL, NULL, 0, 0, 0); /* the bars cleared */
    return measuring;
}

/* The run's status once its streams are done: 1 where a worker failed or nothing was measured, 3 where
 * --verify found bad data, else 0; the measured seconds and the verify counts kept. */
static int settle(struct run_state *rs, struct worker *ws, int nw, struct run_result *out, uint64_t end)
{
    int rc = 0;
    for (int i = 0; i < nw; i++)
        if (atomic_load(&ws[i].failed)) {
            fprintf(stderr, "iogen: worker '%s': %s\n", ws[i].cfg->name, ws[i].err);
            rc = 1;
        }
    uint64_t stop_at = rs->count_stop || interrupted || rs->steady_stop || end < rs->t_end ? end : rs->t_end;
    out->secs = stop_at > rs->t_measure ? (double)(stop_at - rs->t_measure) / osm_timer.hz : 0;
    if (!rc && out->secs <= 0) {
        fprintf(stderr, "iogen: error: the run %s before its measured window began: nothing was measured\n",
                interrupted ? "was interrupted" : "ended");
        rc = 1;
    }
    uint64_t bad = 0;
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++) {
            rs->vread_all += ws[i].streams[k].vread;
            rs->vchecked_all += ws[i].streams[k].verified;
            bad += ws[i].streams[k].bad;
        }
    return !rc && bad ? 3 : rc;
}

int one_run(struct run_state *rs, const struct job *job, struct target *ts, const struct run_params *p, struct run_result *out)
{
    struct worker *ws = calloc((size_t)p->nworkers, sizeof *ws);
    if (!ws)
        osm_die("out of memory");
    memset(out, 0, sizeof *out);
    out->rs = rs;
    out->job = job;
    out->p = *p;
    out->ws = ws;
    out->t = &ts[0];
    rs->runno++;
    rs->transactions = job->transactions;
    /* the first nworkers workers, less those with no spec at this step of the list (Iometer leaves them idle) */
    int nw = 0;
    for (int i = 0; i < p->nworkers; i++)
        if (job->workers[i].nspec > p->step)
            setup_worker(rs, &ws[nw++], i, job, ts, p);
    out->nw = nw;
    out->qd = (int)(ws[0].qd / ws[0].ntargets);
    unsigned total_streams = 0;
    for (int i = 0; i < nw; i++)
        total_streams += ws[i].nstreams;
    rs->rate_per_stream = rs->cfg->rate > 0 ? rs->cfg->rate / total_streams : 0;
    atomic_store(&rs->stop, 0);
    atomic_store(&rs->issued, 0);
    wait_start_at(rs->cfg);
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t start = osm_stamp();
    out->start_unix = (double)rt.tv_sec + rt.tv_nsec * 1e-9;
    arm_clock(rs, job, ws, nw, start);
    start_streams(rs, ws, nw);
    bool measured = watch(rs, job, ts, ws, nw, out, start);
    uint64_t end = osm_stamp();
    out->ramp_s = (double)((rs->t_measure < end ? rs->t_measure : end) - start) / osm_timer.hz;
    if (!measured)
        getrusage(RUSAGE_SELF, &out->ru0);
    getrusage(RUSAGE_SELF, &out->ru1);
    prober_stop(out->pr);
    return settle(rs, ws, nw, out, end);
}

void run_free(struct run_result *r)
{
    for (int i = 0; i < r->nw; i++) {
        for (unsigned k = 0; k < r->ws[i].nstreams; k++) {
            struct stream *s = &r->ws[i].streams[k];
            free(s->ivals);
            free(s->ival_bytes);
            free(s->log);
            free(s->tst);
            free(s->lst);
            free(s->zst);
        }
        free(r->ws[i].streams);
        free(r->ws[i].slots);
        free(r->ws[i].bufs);
    }
    free(r->ws);
    prober_free(r->pr);
    memset(r, 0, sizeof *r);
}
