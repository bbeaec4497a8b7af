/* run.c - one run of a job: workers, each with one or more streams of
 * requests going through an engine; the ramp-up, the measured window and
 * its report intervals (--verify is verify.c's).
 *
 * A stream's thread queues every free request slot (each request picks a
 * spec line by % of accesses, then read or write and random or sequential by
 * that line's own percentages), then one engine call submits them and waits
 * for the first completion, and every completion present is reaped. The
 * sequential position of a worker is one value shared by its streams and
 * advanced with compare-and-swap (PenguinoMeter's current sector address),
 * so N outstanding sequential requests are N consecutive blocks whatever
 * the engine. Every wait (a delay line, a rate limit) ends at the run's end
 * or at a signal.
 */
#include "iogen.h"
#include "osm.h"
#include "osmmem.h"
#include "prober.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <x86intrin.h>
uint64_t ticks(void) { return __rdtsc(); }
#else
uint64_t ticks(void) { return osm_clock_ns(); }
#endif

double tick_ns, tick_hz;
volatile sig_atomic_t interrupted;

static void fill_buffer(char *b, size_t n, enum data_pattern p, uint64_t seed);

static uint64_t rnd(struct stream *s)
{
    return osm_rand(&s->rng);
}

int precondition(const struct target *t, struct precondition *out, char *err, size_t errlen)
{
    const size_t chunk = 1 << 20;
    char *buf;
    if (posix_memalign((void **)&buf, 4096, chunk) != 0)
        return snprintf(err, errlen, "--precondition: out of memory"), -1;
    fill_buffer(buf, chunk, DATA_PSEUDO_RANDOM, opt.seed);
    uint64_t t0 = ticks();
    memset(out, 0, sizeof *out);
    for (int pass = 0; pass < 2 && !interrupted; pass++) {
        for (uint64_t off = 0; off < t->size && !interrupted; off += chunk) {
            size_t n = t->size - off < chunk ? (size_t)(t->size - off) : chunk;
            n -= n % t->lbs;
            if (!n)
                break;
            if (pwrite(t->fd, buf, n, (off_t)off) != (ssize_t)n) {
                snprintf(err, errlen, "--precondition: writing at %llu: %s", (unsigned long long)off, strerror(errno));
                free(buf);
                return -1;
            }
            out->bytes += n;
        }
        out->passes++;
    }
    if (fdatasync(t->fd) != 0 && errno != EINVAL)
        snprintf(err, errlen, "--precondition: fdatasync: %s", strerror(errno));
    out->seconds = (double)(ticks() - t0) / tick_hz;
    free(buf);
    return interrupted ? -1 : 0;
}

/* ------------------------------------------------------------ requests */

/* Chooses the next request of a stream: line by % of accesses, then read or
 * write, random or sequential, by that line's own percentages. */
static void next_io(struct stream *s, struct io *io, uint64_t now)
{
    struct worker *w = s->w;
    const struct spec *sp = w->spec;
    if (s->burst_left == 0) {
        unsigned r = (unsigned)(rnd(s) % 100), acc = 0;
        s->line = sp->nlines - 1;
        for (int i = 0; i < sp->nlines; i++) {
            acc += sp->line[i].access;
            if (r < acc) {
                s->line = i;
                break;
            }
        }
        s->burst_left = sp->line[s->line].burst;
    }
    const struct spec_line *ln = &sp->line[s->line];
    /* the worker's targets in turn (Iometer spreads a worker's I/Os over its targets) */
    unsigned ti = s->next_target;
    s->next_target = ti + 1 == w->ntargets ? 0 : ti + 1;
    struct wtarget *tg = &w->tg[ti];
    io->target = (uint8_t)ti;
    io->line = (uint16_t)s->line;
    io->len = (uint32_t)ln->size;
    io->write = rnd(s) % 100 >= ln->read;
    uint64_t off;
    io->random = rnd(s) % 100 < ln->random;
    if (io->random) {
        uint64_t align = ln->align ? ln->align : run.lbs;
        uint64_t positions = (tg->region_len - ln->size) / align + 1;
        off = rnd(s) % positions * align;
    } else { /* the target's sequential position, shared by the worker's streams, advanced atomically */
        uint64_t cur = atomic_load_explicit(&tg->seq, memory_order_relaxed), nxt;
        do {
            off = cur + ln->size > tg->region_len ? 0 : cur;
            nxt = off + ln->size;
        } while (!atomic_compare_exchange_weak_explicit(&tg->seq, &cur, nxt, memory_order_relaxed,
                                                        memory_order_relaxed));
    }
    io->off = tg->region_start + off;
    if (io->off + io->len > tg->t->size || io->off < tg->region_start) {
        /* unreachable by construction; never write outside the target */
        fprintf(stderr, "iogen: internal error: offset %llu+%u outside the target\n",
                (unsigned long long)io->off, io->len);
        abort();
    }
    if (run.verify) {
        if (io->write)
            verify_fill(io->buf, io->off, io->len);
        verify_issue(io);
    }
    if (--s->burst_left == 0 && ln->delay_ms)
        s->resume_at = now + (uint64_t)((double)ln->delay_ms * 1e6 / tick_ns);
    if (run.rate_per_stream > 0) {
        uint64_t step = (uint64_t)(tick_hz / run.rate_per_stream);
        s->next_rate = (s->next_rate > now ? s->next_rate : now) + step;
        if (s->next_rate - step > s->resume_at)
            s->resume_at = s->next_rate - step;
    }
}

static bool run_over(uint64_t now)
{
    return atomic_load_explicit(&run.stop, memory_order_relaxed) || interrupted ||
           now >= run.t_end;
}

/* May the stream issue a new request now? (--transactions, delay, rate) */
static bool may_issue(struct stream *s, uint64_t now)
{
    if (run_over(now))
        return false;
    if (run.transactions && now >= run.t_measure &&
        atomic_fetch_add_explicit(&run.issued, 1, memory_order_relaxed) >= run.transactions) {
        run.count_stop = true;
        atomic_store(&run.stop, 1);
        return false;
    }
    return now >= s->resume_at;
}

/* Sleeps until `at`, but no longer than the run lasts or a signal allows. */
static void nap_until(uint64_t at)
{
    for (;;) {
        uint64_t now = ticks();
        if (at <= now || run_over(now))
            return;
        double ns = (double)(at - now) * tick_ns;
        if (ns > 10e6)
            ns = 10e6;
        struct timespec d = { 0, (long)ns };
        nanosleep(&d, NULL);
    }
}

static void close_intervals(struct stream *s, uint64_t now)
{
    while (run.ival_ticks && now >= s->ival_end) {
        if (s->nivals == s->civals) {
            size_t c = s->civals ? 2 * s->civals : 16;
            struct hist *n = realloc(s->ivals, c * sizeof *n);
            if (n)
                s->ivals = n;
            uint64_t *b = realloc(s->ival_bytes, c * sizeof *b);
            if (b)
                s->ival_bytes = b;
            if (!n || !b)
                return;
            s->civals = c;
        }
        s->ival_bytes[s->nivals] = s->cur_ival_bytes;
        s->ivals[s->nivals++] = s->ival;
        hist_clear(&s->ival);
        s->cur_ival_bytes = 0;
        s->ival_end += run.ival_ticks;
    }
}

/* A request came back: check it, and record it if it belongs to the
 * measured window. Returns false on an I/O error. */
static bool complete(struct stream *s, struct io *io, uint64_t now)
{
    struct worker *w = s->w;
    bool ok = io->res == (int64_t)io->len;
    if (run.verify)
        verify_done(s, io, ok);
    if (!ok) {
        snprintf(w->err, sizeof w->err, "%s of %u bytes at offset %llu: %s", io->write ? "write" : "read",
                 io->len, (unsigned long long)io->off,
                 io->res < 0 ? strerror((int)-io->res) : "short transfer");
        return false;
    }
    uint64_t lat = (uint64_t)((double)(now - io->t_start) * tick_ns);
    atomic_fetch_add_explicit(&w->live_ios, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->live_bytes, io->len, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->live_lat_ns, lat, memory_order_relaxed);
    uint64_t t_measure = atomic_load_explicit(&run.t_measure, memory_order_relaxed);
    if (run.ramp_ios && t_measure == UINT64_MAX &&
        atomic_fetch_add_explicit(&run.ramp_done, 1, memory_order_relaxed) + 1 == run.ramp_ios) {
        /* --ramp-ios: this completion ends the ramp; the measured window starts now */
        if (run.run_s > 0)
            atomic_store(&run.t_end, now + (uint64_t)(run.run_s * tick_hz));
        atomic_store(&run.t_measure, now);
        return true;
    }
    if (io->t_start < t_measure || now > atomic_load_explicit(&run.t_end, memory_order_relaxed)) {
        s->last_done = now;
        return true;
    }
    if (!s->ival_end) /* the window began after the stream started (--ramp-ios) */
        s->ival_end = t_measure + run.ival_ticks;
    struct tstat *ts = &s->tst[io->target];
    struct lstat *ls = &s->lst[io->line];
    ls->ios++;
    ls->reads += !io->write;
    ls->random += io->random;
    if (io->write) {
        ts->writes++;
        ts->bytes_w += io->len;
        ts->wlat_sum += lat;
        ts->wlat_max = lat > ts->wlat_max ? lat : ts->wlat_max;
    } else {
        ts->reads++;
        ts->bytes_r += io->len;
        ts->rlat_sum += lat;
        ts->rlat_max = lat > ts->rlat_max ? lat : ts->rlat_max;
    }
    ts->lat_sum += lat;
    ts->lat_max = lat > ts->lat_max ? lat : ts->lat_max;
    if (run.zones) { /* the time since this stream's last completion belongs to this I/O's zone */
        const struct wtarget *tg = &s->w->tg[io->target];
        uint64_t z = (io->off - tg->region_start) * run.zones / tg->region_len;
        struct zstat *zs = &s->zst[io->target * run.zones + (z < run.zones ? z : run.zones - 1)];
        uint64_t from = s->last_done > t_measure ? s->last_done : t_measure;
        zs->bytes += io->len;
        zs->ticks += now > from ? now - from : 0;
    }
    s->last_done = now;
    atomic_fetch_add_explicit(&w->meas_ios, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->meas_bytes, io->len, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->meas_lat_ns, lat, memory_order_relaxed);
    hist_add(&s->all, lat);
    hist_add(io->write ? &s->wr : &s->rd, lat);
    close_intervals(s, now);
    hist_add(&s->ival, lat);
    s->cur_ival_bytes += io->len;
    if (io->write) {
        s->writes++;
        s->bytes_w += io->len;
    } else {
        s->reads++;
        s->bytes_r += io->len;
    }
    if (run.log && !s->log_full) {
        if (s->nlog == s->clog) {
            size_t c = s->clog ? 2 * s->clog : 4096;
            struct logrec *n = c <= (64u << 20) ? realloc(s->log, c * sizeof *n) : NULL;
            if (!n) {
                s->log_full = true;
                return true;
            }
            s->log = n;
            s->clog = c;
        }
        s->log[s->nlog++] = (struct logrec){ (uint64_t)((double)(io->t_start - t_measure) * tick_ns),
                                             io->off, io->len, (uint32_t)(lat > UINT32_MAX ? UINT32_MAX : lat),
                                             io->write, io->target };
    }
    return true;
}

static void fail(struct stream *s)
{
    atomic_store(&s->w->failed, true);
    atomic_store(&run.stop, 1);
}

/* ------------------------------------------------------------ a stream */

static void *run_stream(void *arg)
{
    struct stream *s = arg;
    struct worker *w = s->w;
    if (opt.cpu >= 0 && osm_pin(opt.cpu) != 0) {
        snprintf(w->err, sizeof w->err, "cannot pin to CPU %d", opt.cpu);
        fail(s);
        atomic_store(&s->done, true);
        return NULL;
    }
    struct engine e = { .ops = opt.engine, .opts = &opt.eng };
    if (e.ops->init(&e, w->fds, w->ntargets, s->slots, s->nslots, w->bufsize, w->err, sizeof w->err) != 0) {
        fail(s);
        atomic_store(&s->done, true);
        return NULL;
    }
    if (s->idx == 0)
        snprintf(w->engine_setup, sizeof w->engine_setup, "%s", e.setup);
    unsigned *free_slots = malloc(s->nslots * sizeof *free_slots);
    struct io **done = malloc(s->nslots * sizeof *done);
    if (!free_slots || !done) {
        snprintf(w->err, sizeof w->err, "out of memory");
        fail(s);
    }
    unsigned nfree = s->nslots, inflight = 0;
    for (unsigned i = 0; free_slots && i < s->nslots; i++)
        free_slots[i] = i;
    bool broken = !free_slots || !done;
    while (!broken) {
        uint64_t now = ticks();
        uint64_t sc = e.syscalls; /* a synchronous engine makes its call in queue */
        bool issuing = true;
        unsigned queued = 0;
        bool more = false; /* a batch went out with free slots left: submit without waiting */
        while (nfree && (issuing = may_issue(s, now))) {
            struct io *io = &s->slots[free_slots[--nfree]];
            next_io(s, io, now);
            io->t_start = ticks();
            e.ops->queue(&e, io);
            inflight++;
            if (opt.batch && ++queued == opt.batch && nfree) {
                more = true;
                break;
            }
        }
        if (!inflight) {
            if (!issuing && run_over(now))
                break;
            nap_until(s->resume_at); /* a delay or a rate limit with nothing in flight */
            continue;
        }
        int n = e.ops->submit_reap(&e, more ? 0 : 1, done, s->nslots, w->err, sizeof w->err);
        uint64_t t = ticks();
        if (t >= run.t_measure)
            s->syscalls += e.syscalls - sc;
        if (n < 0) {
            fail(s);
            break;
        }
        for (int i = 0; i < n; i++) {
            if (!complete(s, done[i], t))
                fail(s);
            free_slots[nfree++] = done[i]->slot;
            inflight--;
        }
        if (atomic_load(&w->failed) && !inflight)
            break;
    }
    uint64_t t_end = run.t_end;
    if (s->ival_end)
        close_intervals(s, t_end == UINT64_MAX ? ticks() : t_end);
    /* for a kernel-path trace (osmeter run --kernel-paths): this thread's
     * measured window and its report intervals, in ticks and ticks per second
     * (none when the measured part never began: --ramp-ios not reached) */
    uint64_t t_stop = ticks(), t_from = run.t_measure;
    if (t_from != UINT64_MAX)
        osm_trace_marker("osm_io %d %llu %llu %llu %.17g", osm_gettid(), (unsigned long long)t_from,
                         (unsigned long long)(t_stop < t_end ? t_stop : t_end),
                         (unsigned long long)run.ival_ticks, tick_hz);
    free(free_slots);
    free(done);
    e.ops->exit(&e);
    atomic_store(&s->done, true);
    return NULL;
}

/* ------------------------------------------------------------ a run */

static void fill_buffer(char *b, size_t n, enum data_pattern p, uint64_t seed)
{
    if (p == DATA_REPEATING) {
        memset(b, 0xA5, n);
        return;
    }
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v = osm_rand(&seed);
        memcpy(b + i, &v, 8);
    }
}

/* Worker i of the job for a run: its spec of this step (sized when
 * cycling sizes), its targets and their regions, its buffers and streams. */
static void setup_worker(struct worker *w, int i, const struct job *job, struct target *ts, const struct run_params *p)
{
    w->id = i;
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
    fill_buffer(w->bufs, w->bufsize * w->qd, w->cfg->pattern, opt.seed + (uint64_t)i);
    w->slots = calloc(w->qd, sizeof *w->slots);
    w->nstreams = opt.engine->sync ? w->qd : 1;
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
        s->zst = run.zones ? calloc((size_t)w->ntargets * run.zones, sizeof *s->zst) : NULL;
        if (!s->tst || !s->lst || (run.zones && !s->zst))
            osm_die("out of memory");
        for (unsigned j = 0; j < per; j++) /* a slot's number is its place in its stream */
            s->slots[j] = (struct io){ .buf = w->bufs + ((size_t)k * per + j) * w->bufsize, .slot = j };
        uint64_t seed = (w->cfg->fixed_seed ? w->cfg->seed : opt.seed) * 0x9E3779B97F4A7C15ull;
        s->rng = (seed ^ ((uint64_t)(i + 1) << 32) ^ (k + 1) ^ ((uint64_t)p->step << 48)) | 1;
        hist_clear(&s->all);
        hist_clear(&s->rd);
        hist_clear(&s->wr);
        hist_clear(&s->ival);
    }
}

static void display(struct worker *ws, int nw, uint64_t *last_ios, uint64_t *last_bytes, double dt, double t, double total)
{
    uint64_t ios = 0, bytes = 0;
    for (int i = 0; i < nw; i++) {
        ios += atomic_load_explicit(&ws[i].live_ios, memory_order_relaxed);
        bytes += atomic_load_explicit(&ws[i].live_bytes, memory_order_relaxed);
    }
    fprintf(stderr, "\r\033[K[qd %d] %10.0f IOPS %9.1f MB/s  %5.1f/%.0f s", run.qd,
            (double)(ios - *last_ios) / dt, (double)(bytes - *last_bytes) / dt / 1e6, t, total);
    *last_ios = ios;
    *last_bytes = bytes;
}

static bool all_done(struct worker *ws, int nw)
{
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++)
            if (ws[i].streams[k].started && !atomic_load(&ws[i].streams[k].done))
                return false;
    return true;
}

/* --status: at each prober sample of the measured window, one line on standard output, flushed, so that
 * whoever reads the stream (fleet load, over ssh) has it as it happens: {"status": {unix, run, dt, ios,
 * iops, mbps, lat_mean_us, system}}, the load from every worker's completion counters since the sample
 * before and the prober's rates over the same interval (both read at one instant: the sample's). */
struct status_ctx {
    struct worker *ws;
    int nw;
    uint64_t ios, bytes, lat; /* the counts at the sample before */
};

static void status_line(void *arg, const struct prober_rates *r)
{
    struct status_ctx *c = arg;
    uint64_t ios = 0, bytes = 0, lat = 0;
    for (int i = 0; i < c->nw; i++) {
        ios += atomic_load_explicit(&c->ws[i].live_ios, memory_order_relaxed);
        bytes += atomic_load_explicit(&c->ws[i].live_bytes, memory_order_relaxed);
        lat += atomic_load_explicit(&c->ws[i].live_lat_ns, memory_order_relaxed);
    }
    if (r) {
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        uint64_t dios = ios - c->ios;
        struct json j;
        json_to_file(&j, stdout);
        json_obj(&j);
        json_key(&j, "status");
        json_obj(&j);
        json_kfixed(&j, "unix", (double)rt.tv_sec + (double)rt.tv_nsec * 1e-9, 6);
        json_kint(&j, "run", run.runno);
        json_kfixed(&j, "dt", r->dt, 6);
        json_kuint(&j, "ios", dios);
        json_kfixed(&j, "iops", r->dt > 0 ? (double)dios / r->dt : 0, 1);
        json_kfixed(&j, "mbps", r->dt > 0 ? (double)(bytes - c->bytes) / r->dt / 1e6 : 0, 3);
        json_key(&j, "lat_mean_us");
        if (dios)
            json_fixed(&j, (double)(lat - c->lat) / (double)dios / 1e3, 3);
        else
            json_null(&j);
        json_key(&j, "system");
        prober_rates_json(&j, r);
        json_obj_end(&j);
        json_obj_end(&j);
        json_line_end(&j, "the status to standard output");
    }
    c->ios = ios;
    c->bytes = bytes;
    c->lat = lat;
}

/* --start-at: hosts started over ssh at different moments begin together on their wall clocks
 * (the manager measures and reports each clock's offset); the rings and threads are already set
 * up, so only the wait lies between. Only the first run waits; a signal ends the wait. */
static void wait_start_at(void)
{
    static bool waited;
    if (opt.start_at <= 0 || waited)
        return;
    waited = true;
    struct timespec at = { (time_t)opt.start_at, (long)((opt.start_at - (double)(time_t)opt.start_at) * 1e9) };
    while (!interrupted && clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
}

int one_run(const struct job *job, struct target *ts, const struct run_params *p, struct run_result *out)
{
    struct worker *ws = calloc((size_t)p->nworkers, sizeof *ws);
    if (!ws)
        osm_die("out of memory");
    memset(out, 0, sizeof *out);
    out->job = job;
    out->p = *p;
    out->ws = ws;
    out->t = &ts[0];
    run.runno++;
    /* the first nworkers workers, less those with no spec at this step of the list (Iometer leaves them idle) */
    int nw = 0;
    for (int i = 0; i < p->nworkers; i++)
        if (job->workers[i].nspec > p->step)
            setup_worker(&ws[nw++], i, job, ts, p);
    out->nw = nw;
    run.qd = (int)(ws[0].qd / ws[0].ntargets);
    unsigned total_streams = 0;
    for (int i = 0; i < nw; i++)
        total_streams += ws[i].nstreams;
    run.rate_per_stream = opt.rate > 0 ? opt.rate / total_streams : 0;
    atomic_store(&run.stop, 0);
    atomic_store(&run.issued, 0);
    wait_start_at();
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t now = ticks();
    out->start_unix = (double)rt.tv_sec + rt.tv_nsec * 1e-9;
    /* a ramp by time, or (--ramp-ios) until so many I/Os completed: then the first measured instant is unknown
     * until the last ramp I/O comes back (complete() sets it) */
    run.ramp_ios = opt.ramp_ios;
    run.run_s = job->run_s;
    atomic_store(&run.ramp_done, 0);
    run.t_measure = run.ramp_ios ? UINT64_MAX : now + (uint64_t)(job->ramp_s * tick_hz);
    /* a time limit, a count (--transactions) or both: the run ends at the first */
    run.count_stop = false;
    run.t_end = job->run_s > 0 && !run.ramp_ios ? run.t_measure + (uint64_t)(job->run_s * tick_hz) : UINT64_MAX;
    run.ival_ticks = opt.interval_s > 0 ? (uint64_t)(opt.interval_s * tick_hz) : 0;
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++)
            ws[i].streams[k].ival_end = run.ramp_ios ? 0 : run.t_measure + run.ival_ticks;

    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++) {
            struct stream *s = &ws[i].streams[k];
            if (pthread_create(&s->th, NULL, run_stream, s) != 0) {
                snprintf(ws[i].err, sizeof ws[i].err, "cannot start thread %u of worker %d", k + 1, i + 1);
                atomic_store(&ws[i].failed, true);
                atomic_store(&run.stop, 1);
                break;
            }
            s->started = true;
        }

    /* on a terminal: the one-line status every half second, or (--live) per-worker bars every second;
     * never in a pipe, and no one-line status under --status (its lines would land in the middle of it) */
    bool bars = opt.live && isatty(STDERR_FILENO);
    bool live = !bars && !opt.status && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
    bool measuring = false;
    run.steady_stop = false;
    double period = opt.interval_s > 0 ? opt.interval_s : 1.0;
    uint64_t period_ticks = (uint64_t)(period * tick_hz), next_sample = 0;
    uint64_t prev[3] = { 0, 0, 0 };
    if (opt.steady.on)
        steady_start(&opt.steady, period);
    uint64_t last_ios = 0, last_bytes = 0;
    uint64_t *lios = calloc((size_t)nw * 3, sizeof *lios); /* --live: each worker's last counts */
    if (!lios)
        osm_die("out of memory");
    double total = job->run_s > 0 ? job->ramp_s + job->run_s : 0;
    uint64_t start = now, last_disp = now;
    struct status_ctx sctx = { ws, nw, 0, 0, 0 };
    /* wait for every stream to say it is done; each thread is joined once, after */
    while (!all_done(ws, nw)) {
        now = ticks();
        if (!measuring && now >= run.t_measure) {
            getrusage(RUSAGE_SELF, &out->ru0);
            next_sample = run.t_measure + period_ticks;
            const char *dev = strrchr(ts[0].device, '/');
            out->pr = prober_start(opt.interval_s > 0 ? opt.interval_s : 1.0, dev ? dev + 1 : "",
                                   opt.status ? status_line : NULL, &sctx);
            measuring = true;
        }
        if (interrupted)
            atomic_store(&run.stop, 1);
        if (opt.steady.on && measuring && now >= next_sample && !run.steady_stop) {
            uint64_t cur[3] = { 0, 0, 0 };
            for (int i = 0; i < nw; i++) {
                cur[0] += atomic_load(&ws[i].meas_ios);
                cur[1] += atomic_load(&ws[i].meas_bytes);
                cur[2] += atomic_load(&ws[i].meas_lat_ns);
            }
            double t_s = (double)(next_sample - run.t_measure) / tick_hz;
            if (steady_sample(&opt.steady, t_s, (double)(cur[0] - prev[0]), (double)(cur[1] - prev[1]),
                              (double)(cur[2] - prev[2]), (double)(cur[0] - prev[0]))) {
                run.steady_stop = true; /* steady: the run ends here */
                atomic_store(&run.stop, 1);
            }
            memcpy(prev, cur, sizeof prev);
            next_sample += period_ticks;
        }
        if (bars && (double)(now - last_disp) * tick_ns >= 1e9) {
            live_frame(stderr, ws, nw, lios, lios + nw, lios + 2 * nw, (double)(now - last_disp) * tick_ns * 1e-9,
                       (double)(now - start) * tick_ns * 1e-9, total);
            last_disp = now;
        }
        if (live && (double)(now - last_disp) * tick_ns >= 5e8) {
            display(ws, nw, &last_ios, &last_bytes, (double)(now - last_disp) * tick_ns * 1e-9,
                    (double)(now - start) * tick_ns * 1e-9, total);
            last_disp = now;
        }
        struct timespec d = { 0, 20 * 1000 * 1000 };
        nanosleep(&d, NULL);
    }
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++)
            if (ws[i].streams[k].started)
                pthread_join(ws[i].streams[k].th, NULL);
    uint64_t end = ticks();
    free(lios);
    out->ramp_s = (double)((run.t_measure < end ? run.t_measure : end) - start) / tick_hz;
    if (!measuring)
        getrusage(RUSAGE_SELF, &out->ru0);
    getrusage(RUSAGE_SELF, &out->ru1);
    prober_stop(out->pr);
    if (live)
        fputs("\r\033[K", stderr);
    if (bars)
        live_frame(stderr, NULL, 0, NULL, NULL, NULL, 0, 0, 0); /* the bars cleared */

    int rc = 0;
    for (int i = 0; i < nw; i++)
        if (atomic_load(&ws[i].failed)) {
            fprintf(stderr, "iogen: worker '%s': %s\n", ws[i].cfg->name, ws[i].err);
            rc = 1;
        }
    uint64_t stop_at = run.count_stop || interrupted || run.steady_stop || end < run.t_end ? end : run.t_end;
    out->secs = stop_at > run.t_measure ? (double)(stop_at - run.t_measure) / tick_hz : 0;
    if (!rc && out->secs <= 0) {
        fprintf(stderr, "iogen: error: the run %s before its measured window began: nothing was measured\n",
                interrupted ? "was interrupted" : "ended");
        rc = 1;
    }
    uint64_t bad = 0;
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++) {
            run.vread_all += ws[i].streams[k].vread;
            run.vchecked_all += ws[i].streams[k].verified;
            bad += ws[i].streams[k].bad;
        }
    if (!rc && bad)
        rc = 3;
    return rc;
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
