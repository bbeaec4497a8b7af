/* stream.c - a stream of requests: its thread queues every free request
 * slot (each request picks a spec line by % of accesses, then read or write
 * and random or sequential by that line's own percentages), then one engine
 * call submits them and waits for the first completion, and every
 * completion present is reaped and recorded. The sequential position of a
 * worker is one value shared by its streams and advanced with
 * compare-and-swap (PenguinoMeter's current sector address), so N
 * outstanding sequential requests are N consecutive blocks whatever the
 * engine. Every wait (a delay line, a rate limit) ends at the run's end or
 * at a signal. What the run shares comes from the stream's worker (w->rs).
 *
 * Per batch, not per request: an asynchronous engine's requests are stamped
 * with one timer reading just before the call that submits them all, and
 * the worker's shared counters take the batch's completions in one locked
 * add each. Per request, those were 0.11 us of the 0.19 us iogen spent on
 * an io_uring NOP (docs/notes/2026-12-06-io-peak.md).
 */
#include "interrupt.h"
#include "osm.h"
#include "osmmem.h"
#include "run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rnd(struct stream *s)
{
    return osm_rand(&s->rng);
}

/* Chooses the next request of a stream: line by % of accesses, then read or
 * write, random or sequential, by that line's own percentages. */
static void next_io(struct stream *s, struct io *io, uint64_t now)
{
    struct run_state *rs = s->w->rs;
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
        uint64_t align = ln->align ? ln->align : rs->lbs;
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
    if (rs->verify) {
        if (io->write)
            verify_fill(io->buf, io->off, io->len);
        verify_issue(io);
    }
    if (--s->burst_left == 0 && ln->delay_ms)
        s->resume_at = now + (uint64_t)((double)ln->delay_ms * 1e6 / rs->tick_ns);
    if (rs->rate_per_stream > 0) {
        uint64_t step = (uint64_t)(osm_timer.hz / rs->rate_per_stream);
        s->next_rate = (s->next_rate > now ? s->next_rate : now) + step;
        if (s->next_rate - step > s->resume_at)
            s->resume_at = s->next_rate - step;
    }
}

static bool run_over(const struct run_state *rs, uint64_t now)
{
    return atomic_load_explicit(&rs->stop, memory_order_relaxed) || interrupted ||
           now >= rs->t_end;
}

/* May the stream issue a new request now? (--transactions, delay, rate) */
static bool may_issue(struct stream *s, uint64_t now)
{
    struct run_state *rs = s->w->rs;
    if (run_over(rs, now))
        return false;
    if (rs->transactions && now >= rs->t_measure &&
        atomic_fetch_add_explicit(&rs->issued, 1, memory_order_relaxed) >= rs->transactions) {
        rs->count_stop = true;
        atomic_store(&rs->stop, 1);
        return false;
    }
    return now >= s->resume_at;
}

/* Sleeps until `at`, but no longer than the run lasts or a signal allows. */
static void nap_until(const struct run_state *rs, uint64_t at)
{
    for (;;) {
        uint64_t now = osm_stamp();
        if (at <= now || run_over(rs, now))
            return;
        double ns = (double)(at - now) * rs->tick_ns;
        if (ns > 10e6)
            ns = 10e6;
        struct timespec d = { 0, (long)ns };
        nanosleep(&d, NULL);
    }
}

static void close_intervals(struct stream *s, uint64_t now)
{
    struct run_state *rs = s->w->rs;
    while (rs->ival_ticks && now >= s->ival_end) {
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
        s->ival_end += rs->ival_ticks;
    }
}

/* A request came back: check it, and record it if it belongs to the
 * measured window. Returns false on an I/O error. */
static bool complete(struct stream *s, struct io *io, uint64_t now)
{
    struct run_state *rs = s->w->rs;
    struct worker *w = s->w;
    bool ok = io->res == (int64_t)io->len;
    if (rs->verify)
        verify_done(s, io, ok);
    if (!ok) {
        snprintf(w->err, sizeof w->err, "%s of %u bytes at offset %llu: %s", io->write ? "write" : "read",
                 io->len, (unsigned long long)io->off,
                 io->res < 0 ? strerror((int)-io->res) : "short transfer");
        return false;
    }
    uint64_t lat = (uint64_t)((double)(now - io->t_start) * rs->tick_ns);
    s->pend[0]++, s->pend[1] += io->len, s->pend[2] += lat;
    uint64_t t_measure = atomic_load_explicit(&rs->t_measure, memory_order_relaxed);
    if (rs->ramp_ios && t_measure == UINT64_MAX &&
        atomic_fetch_add_explicit(&rs->ramp_done, 1, memory_order_relaxed) + 1 == rs->ramp_ios) {
        /* --ramp-ios: this completion ends the ramp; the measured window starts now */
        if (rs->run_s > 0)
            atomic_store(&rs->t_end, now + (uint64_t)(rs->run_s * osm_timer.hz));
        atomic_store(&rs->t_measure, now);
        return true;
    }
    if (io->t_start < t_measure || now > atomic_load_explicit(&rs->t_end, memory_order_relaxed)) {
        s->last_done = now;
        return true;
    }
    if (!s->ival_end) /* the window began after the stream started (--ramp-ios) */
        s->ival_end = t_measure + rs->ival_ticks;
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
    if (rs->zones) { /* the time since this stream's last completion belongs to this I/O's zone */
        const struct wtarget *tg = &s->w->tg[io->target];
        uint64_t z = (io->off - tg->region_start) * rs->zones / tg->region_len;
        struct zstat *zs = &s->zst[io->target * rs->zones + (z < rs->zones ? z : rs->zones - 1)];
        uint64_t from = s->last_done > t_measure ? s->last_done : t_measure;
        zs->bytes += io->len;
        zs->ticks += now > from ? now - from : 0;
    }
    s->last_done = now;
    s->pend[3]++, s->pend[4] += io->len, s->pend[5] += lat;
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
    if (rs->log && !s->log_full) {
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
        s->log[s->nlog++] = (struct logrec){ (uint64_t)((double)(io->t_start - t_measure) * rs->tick_ns),
                                             io->off, io->len, (uint32_t)(lat > UINT32_MAX ? UINT32_MAX : lat),
                                             io->write, io->target };
    }
    return true;
}

/* A batch's completions into the worker's counters, which the live view and
 * --steady read: six locked adds a batch, not six an I/O (they were a third
 * of iogen's own CPU per request with the nop engine). */
static void publish_counts(struct stream *s)
{
    struct worker *w = s->w;
    _Atomic uint64_t *to[6] = { &w->live_ios, &w->live_bytes, &w->live_lat_ns,
                                &w->meas_ios, &w->meas_bytes, &w->meas_lat_ns };
    if (!s->pend[0])
        return;
    for (int i = 0; i < 6; i++) {
        if (s->pend[i])
            atomic_fetch_add_explicit(to[i], s->pend[i], memory_order_relaxed);
        s->pend[i] = 0;
    }
}

/* --stats: a batch's ticks choosing and queueing its requests (from the
 * loop's first reading to the engine call; a synchronous engine's I/O is
 * made there), in the engine's call (submission, the kernel, the wait and
 * the reaping of completions), and accounting for what came back (checks,
 * histograms, counters; up to this reading). */
static void account_batch(struct stream *s, uint64_t start, uint64_t call, uint64_t back)
{
    s->t_issue += call - start;
    s->t_call += back - call;
    s->t_account += osm_stamp() - back;
}

static void fail(struct stream *s)
{
    struct run_state *rs = s->w->rs;
    atomic_store(&s->w->failed, true);
    atomic_store(&rs->stop, 1);
}

/* ------------------------------------------------------------ a stream */

void *stream_main(void *arg)
{
    struct stream *s = arg;
    struct run_state *rs = s->w->rs;
    struct worker *w = s->w;
    if (rs->cfg->cpu >= 0 && osm_pin(rs->cfg->cpu) != 0) {
        snprintf(w->err, sizeof w->err, "cannot pin to CPU %d", rs->cfg->cpu);
        fail(s);
        atomic_store(&s->done, true);
        return NULL;
    }
    struct engine e = { .ops = rs->cfg->engine };
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
    const bool sync = e.ops->sync, stats = rs->cfg->stats;
    while (!broken) {
        uint64_t now = osm_stamp();
        uint64_t sc = e.syscalls; /* a synchronous engine makes its call in queue */
        bool issuing = true;
        unsigned queued = 0;
        bool more = false; /* a batch went out with free slots left: submit without waiting */
        unsigned first = nfree; /* this batch's requests are free_slots[nfree .. first) */
        while (nfree && (issuing = may_issue(s, now))) {
            struct io *io = &s->slots[free_slots[--nfree]];
            next_io(s, io, now);
            if (sync) /* the I/O happens in queue */
                io->t_start = osm_stamp();
            e.ops->queue(&e, io);
            inflight++;
            if (rs->cfg->batch && ++queued == rs->cfg->batch && nfree) {
                more = true;
                break;
            }
        }
        if (!inflight) {
            if (!issuing && run_over(rs, now))
                break;
            nap_until(rs, s->resume_at); /* a delay or a rate limit with nothing in flight */
            continue;
        }
        uint64_t t_call = 0;
        if (!sync && first > nfree) { /* the batch goes to the kernel in the one call below: one reading for all of it */
            t_call = osm_stamp();
            for (unsigned k = nfree; k < first; k++)
                s->slots[free_slots[k]].t_start = t_call;
        } else if (stats) {
            t_call = osm_stamp();
        }
        int n = e.ops->submit_reap(&e, more ? 0 : 1, done, s->nslots, w->err, sizeof w->err);
        uint64_t t = osm_stamp();
        if (t >= rs->t_measure)
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
        publish_counts(s);
        if (stats && now >= rs->t_measure && now < rs->t_end) /* --stats: this batch's three parts */
            account_batch(s, now, t_call, t);
        if (atomic_load(&w->failed) && !inflight)
            break;
    }
    uint64_t t_end = rs->t_end;
    if (s->ival_end)
        close_intervals(s, t_end == UINT64_MAX ? osm_stamp() : t_end);
    /* for a kernel-path trace (osmeter run --kernel-paths): this thread's
     * measured window and its report intervals, in ticks and ticks per second
     * (none when the measured part never began: --ramp-ios not reached) */
    uint64_t t_stop = osm_stamp(), t_from = rs->t_measure;
    if (t_from != UINT64_MAX)
        osm_trace_marker("osm_io %d %llu %llu %llu %.17g", osm_gettid(), (unsigned long long)t_from,
                         (unsigned long long)(t_stop < t_end ? t_stop : t_end),
                         (unsigned long long)rs->ival_ticks, osm_timer.hz);
    free(free_slots);
    free(done);
    e.ops->exit(&e);
    atomic_store(&s->done, true);
    return NULL;
}
