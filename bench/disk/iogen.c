/* iogen.c - osmeter's raw I/O generator.
 *
 * Runs an Iometer-style job (workers, each with an access specification and
 * a number of outstanding I/Os) against a file or a block device, below the
 * page cache (O_DIRECT) by default, with io_uring, Linux AIO or threads
 * doing pread/pwrite. Prints one JSON object per run (one per queue depth
 * when cycling). See `iogen --help` and docs/DESIGN.md.
 *
 * Per worker, async engines: one thread keeps `outstanding` requests queued
 * or in flight; each loop queues every free slot, then one engine call
 * submits them all and waits for the first completion, and every completion
 * present is reaped. psync: `outstanding` threads per worker, each one
 * blocking request at a time. The sequential position of a worker is one
 * shared value advanced with compare-and-swap (PenguinoMeter's current
 * sector address), so N outstanding sequential requests are N consecutive
 * blocks whatever the engine.
 */
#include "engine.h"
#include "hist.h"
#include "osm.h"
#include "osmmem.h"
#include "prober.h"
#include "spec.h"
#include "target.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t ticks(void) { return __rdtsc(); }
#else
static inline uint64_t ticks(void) { return osm_clock_ns(); }
#endif

/* ------------------------------------------------------------ options */

enum engine_kind { ENG_URING, ENG_AIO, ENG_PSYNC };
static const char *engine_names[] = { "uring", "aio", "psync" };

static struct {
    const char *target, *workload, *spec_file, *icf_file, *spec_name, *log_file;
    enum engine_kind engine;
    unsigned qd;            /* 0 = from the job */
    unsigned workers;       /* 0 = from the job */
    uint64_t size;
    double time_s, ramp_s, interval_s, rate;
    bool time_set, ramp_set;
    uint64_t transactions;
    bool verify, buffered, allow_destroy, allow_signature, dump_spec;
    char cycle[64];         /* --cycle-qd */
    int cpu;
    uint64_t seed;
    unsigned batch;         /* most requests per submission; 0 = every free slot */
} opt = { .engine = ENG_URING, .cpu = -1, .seed = 0x5eed };

static double tick_ns;   /* ns per tick */
static double tick_hz;
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void usage(void)
{
    printf(
        "usage: iogen --target PATH (--workload NAME | --spec FILE | --icf FILE) [options]\n"
        "Raw I/O generator: Iometer access specifications on a file or block device.\n\n"
        "  --target PATH        file (created and filled with --size when missing) or block device\n"
        "  --workload NAME      a shipped workload (iogen --list-workloads)\n"
        "  --spec FILE          a native spec file (docs/spec-format.md)\n"
        "  --icf FILE           an Iometer .icf file\n"
        "  --spec-name NAME     the access specification to use from a file that has no workers\n"
        "  --engine E           uring (default), aio or psync\n"
        "  --qd N               outstanding I/Os per worker (overrides the file)\n"
        "  --cycle-qd S:E[:xK|:+K]  run once per queue depth S..E, times K (default x2) or plus K\n"
        "  --workers N          workers (copies of the first one when the file has fewer)\n"
        "  --size BYTES         region used on the target (and the size of a new file)\n"
        "  --time SECONDS       measured time per run (default 10)\n"
        "  --ramp SECONDS       ramp-up before each run, not recorded (default 1)\n"
        "  --transactions N     stop a run after N I/Os instead of after a time\n"
        "  --interval SECONDS   also report every interval (0 = only the total)\n"
        "  --rate IOPS          limit the total rate\n"
        "  --log FILE           one CSV row per request: start_ns,offset,size,op,latency_ns,worker,qd\n"
        "  --verify             write a checkable pattern; check every block read that carries it\n"
        "  --buffered           through the page cache (default O_DIRECT)\n"
        "  --allow-destroy-data allow writes to a block device\n"
        "  --allow-signature    ... even one holding a file system or partition table\n"
        "  --cpu N              pin every worker thread to CPU N\n"
        "  --seed N             random seed (default fixed; a .icf fixed seed wins)\n"
        "  --batch N            submit at most N requests per system call (default: every free slot)\n"
        "  --dump-spec          print the job as JSON and exit\n"
        "  --list-workloads     the shipped workloads\n");
}

static double parse_seconds(const char *o, const char *v)
{
    char *end;
    errno = 0;
    double d = strtod(v ? v : "", &end);
    if (!v || !*v || *end || errno || !(d >= 0) || d > 1e7)
        osm_usage_error("%s: expected seconds (a number >= 0), got '%s'", o, v ? v : "");
    return d;
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKE() (i++, v ? v : (osm_usage_error("%s needs a value", a), ""))
        if (!strcmp(a, "--help")) {
            usage();
            exit(0);
        } else if (!strcmp(a, "--list-workloads")) {
            spec_list_builtins(stdout);
            exit(0);
        } else if (!strcmp(a, "--target")) opt.target = TAKE();
        else if (!strcmp(a, "--workload") || !strcmp(a, "--spec") || !strcmp(a, "--icf")) {
            if (opt.workload || opt.spec_file || opt.icf_file)
                osm_usage_error("give exactly one of --workload, --spec or --icf, once");
            const char *val = TAKE();
            *(a[2] == 'w' ? &opt.workload : a[2] == 's' ? &opt.spec_file : &opt.icf_file) = val;
        }
        else if (!strcmp(a, "--spec-name")) opt.spec_name = TAKE();
        else if (!strcmp(a, "--log")) opt.log_file = TAKE();
        else if (!strcmp(a, "--engine")) {
            const char *e = TAKE();
            if (!strcmp(e, "uring") || !strcmp(e, "io_uring")) opt.engine = ENG_URING;
            else if (!strcmp(e, "aio") || !strcmp(e, "libaio")) opt.engine = ENG_AIO;
            else if (!strcmp(e, "psync")) opt.engine = ENG_PSYNC;
            else osm_usage_error("--engine: expected uring, aio or psync, got '%s'", e);
        } else if (!strcmp(a, "--qd")) opt.qd = (unsigned)osm_parse_u64("--qd", TAKE(), 1, 4096);
        else if (!strcmp(a, "--workers")) opt.workers = (unsigned)osm_parse_u64("--workers", TAKE(), 1, SPEC_MAX_WORKERS);
        else if (!strcmp(a, "--size")) opt.size = osm_parse_size("--size", TAKE(), 4096, 1ull << 50);
        else if (!strcmp(a, "--time")) { opt.time_s = parse_seconds(a, TAKE()); opt.time_set = true; }
        else if (!strcmp(a, "--ramp")) { opt.ramp_s = parse_seconds(a, TAKE()); opt.ramp_set = true; }
        else if (!strcmp(a, "--interval")) opt.interval_s = parse_seconds(a, TAKE());
        else if (!strcmp(a, "--rate")) opt.rate = parse_seconds(a, TAKE());
        else if (!strcmp(a, "--transactions")) opt.transactions = osm_parse_u64("--transactions", TAKE(), 1, UINT64_MAX);
        else if (!strcmp(a, "--cycle-qd")) snprintf(opt.cycle, sizeof opt.cycle, "%s", TAKE());
        else if (!strcmp(a, "--cpu")) opt.cpu = (int)osm_parse_u64("--cpu", TAKE(), 0, CPU_SETSIZE - 1);
        else if (!strcmp(a, "--seed")) opt.seed = osm_parse_u64("--seed", TAKE(), 0, UINT64_MAX);
        else if (!strcmp(a, "--batch")) opt.batch = (unsigned)osm_parse_u64("--batch", TAKE(), 1, 4096);
        else if (!strcmp(a, "--verify")) opt.verify = true;
        else if (!strcmp(a, "--buffered")) opt.buffered = true;
        else if (!strcmp(a, "--allow-destroy-data")) opt.allow_destroy = true;
        else if (!strcmp(a, "--allow-signature")) opt.allow_signature = true;
        else if (!strcmp(a, "--dump-spec")) opt.dump_spec = true;
        else osm_usage_error("unknown option '%s'", a);
#undef TAKE
    }
    int sources = !!opt.workload + !!opt.spec_file + !!opt.icf_file;
    if (sources != 1)
        osm_usage_error("give exactly one of --workload, --spec or --icf");
    if (!opt.target && !opt.dump_spec)
        osm_usage_error("--target PATH is required");
}

/* --cycle-qd S:E[:xK|:+K] into the job's cycling fields. */
static void parse_cycle(struct job *job)
{
    unsigned s, e, k = 2;
    char op = 'x';
    int n = sscanf(opt.cycle, "%u:%u:%c%u", &s, &e, &op, &k);
    if (n != 2 && n != 4)
        osm_usage_error("--cycle-qd: expected START:END or START:END:xK or START:END:+K, got '%s'", opt.cycle);
    if (s < 1 || e < s || e > 4096 || (op != 'x' && op != '+') || (op == 'x' && k < 2) || k < 1)
        osm_usage_error("--cycle-qd '%s': need 1 <= START <= END <= 4096 and a step of x2 or more, or +1 or more",
                        opt.cycle);
    job->cycle_qd = true;
    job->qd_start = s;
    job->qd_end = e;
    job->qd_step = k;
    job->qd_exponential = op == 'x';
}

static void build_job(struct job *job)
{
    char err[512];
    job_init(job);
    if (opt.workload) {
        if (spec_builtin(opt.workload, &job->specs[0]) != 0)
            osm_usage_error("--workload: no shipped workload named '%s' (iogen --list-workloads)", opt.workload);
        job->nspecs = 1;
    } else if (opt.spec_file ? spec_parse_file(opt.spec_file, job, err, sizeof err)
                             : icf_parse_file(opt.icf_file, job, err, sizeof err)) {
        osm_usage_error("%s", err);
    }
    if (job->nspecs == 0)
        osm_usage_error("%s defines no access specification", opt.spec_file ? opt.spec_file : opt.icf_file);
    if (opt.spec_name) { /* one spec by name: the workers all use it */
        int k = -1;
        for (int i = 0; i < job->nspecs; i++)
            if (!strcmp(job->specs[i].name, opt.spec_name))
                k = i;
        if (k < 0)
            osm_usage_error("--spec-name: no access specification named '%s' in the file", opt.spec_name);
        for (int i = 0; i < job->nworkers; i++)
            job->workers[i].spec = k;
        if (job->nworkers == 0) {
            job->nworkers = 1;
            memset(&job->workers[0], 0, sizeof job->workers[0]);
            snprintf(job->workers[0].name, sizeof job->workers[0].name, "worker 1");
            job->workers[0].spec = k;
            job->workers[0].outstanding = 1;
        }
    }
    if (job->nworkers == 0) {
        if (job->nspecs > 1)
            osm_usage_error("the file defines %d access specifications and no worker: choose one with --spec-name",
                            job->nspecs);
        job->nworkers = 1;
        memset(&job->workers[0], 0, sizeof job->workers[0]);
        snprintf(job->workers[0].name, sizeof job->workers[0].name, "worker 1");
        job->workers[0].outstanding = 1;
    }
    if (opt.workers) {
        for (unsigned i = (unsigned)job->nworkers; i < opt.workers; i++) {
            job->workers[i] = job->workers[0];
            snprintf(job->workers[i].name, sizeof job->workers[i].name, "worker %u", i + 1);
        }
        job->nworkers = (int)opt.workers;
    }
    if (opt.qd) {
        for (int i = 0; i < job->nworkers; i++)
            job->workers[i].outstanding = opt.qd;
        job->cycle_qd = false;
    }
    if (opt.cycle[0])
        parse_cycle(job);
    if (opt.time_set || job->run_s == 0)
        job->run_s = opt.time_set ? opt.time_s : 10;
    if (opt.ramp_set || job->ramp_s == 0)
        job->ramp_s = opt.ramp_set ? opt.ramp_s : 1;
    if (opt.transactions)
        job->transactions = opt.transactions;
    if (job->run_s <= 0 && !job->transactions)
        osm_usage_error("--time must be above 0 (or give --transactions)");
    for (int i = 0; i < job->nspecs; i++)
        if (spec_validate(&job->specs[i], err, sizeof err) != 0)
            osm_usage_error("%s", err);
    for (int i = 0; i < job->nworkers; i++) {
        const struct spec *s = &job->specs[job->workers[i].spec];
        for (int k = 0; k < s->nlines; k++)
            if (s->line[k].reply)
                osm_usage_error("access spec '%s' line %d has a reply size of %llu bytes: reply size is a "
                                "network feature; osmeter's disk generator does not support it",
                                s->name, k + 1, (unsigned long long)s->line[k].reply);
    }
}

/* ------------------------------------------------------------ the run */

struct logrec {
    uint64_t start_ns, off;
    uint32_t len, lat_ns;
    uint8_t write;
};

/* What one stream of requests records: an async worker has one stream, a
 * psync worker one per thread. */
struct stream {
    uint64_t rng;
    int line;              /* current spec line */
    unsigned burst_left;
    uint64_t resume_at;    /* ticks: no new request before (delay, rate) */
    uint64_t next_rate;
    struct hist all, rd, wr, ival;
    struct hist *ivals;
    uint64_t *ival_bytes;  /* bytes of each closed interval */
    uint64_t cur_ival_bytes;
    size_t nivals, civals;
    uint64_t ival_end;
    uint64_t reads, writes, bytes_r, bytes_w;
    uint64_t syscalls;     /* counted while measuring */
    uint64_t verified, bad;
    struct logrec *log;
    size_t nlog, clog;
    bool log_full;
};

struct worker {
    int id;
    const struct worker_cfg *cfg;
    const struct spec *spec;
    struct target *t;
    uint64_t region_start, region_len;
    unsigned qd;
    _Atomic uint64_t seq;  /* next sequential offset in the region */
    struct io *slots;
    char *bufs;
    size_t bufsize;
    struct stream *streams; /* 1, or qd for psync */
    unsigned nstreams;
    _Atomic uint64_t live_ios, live_bytes;
    pthread_t th;
    char err[512];
    bool failed;
};

/* The run as every worker sees it. */
static struct {
    uint64_t t_measure, t_end; /* ticks: recording starts, new requests stop */
    uint64_t ival_ticks;
    uint64_t transactions;
    _Atomic uint64_t issued;   /* measured requests issued, for --transactions */
    _Atomic int stop;
    double rate_per_stream;    /* IOPS per stream, 0 = none */
    unsigned lbs;
    bool verify;
    uint64_t verify_seed;
    bool log;
    int qd;
} run;

static uint64_t rnd(struct stream *s)
{
    return osm_rand(&s->rng);
}

/* --verify: every lbs-sized block written starts with a header naming its
 * own offset; the rest is a function of (offset, seed). A read of a block
 * carrying the magic must match exactly: a misplaced or corrupted block
 * cannot. */
#define VMAGIC 0x4f534d5659464931ull /* "OSMVYFI1" */

static uint64_t vword(uint64_t off, uint64_t seed, uint64_t i)
{
    uint64_t x = off * 0x9E3779B97F4A7C15ull ^ seed ^ (i * 0xBF58476D1CE4E5B9ull);
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 29);
}

static void verify_fill(char *buf, uint64_t off, uint32_t len)
{
    for (uint32_t b = 0; b < len; b += run.lbs) {
        uint64_t *w = (uint64_t *)(buf + b), at = off + b;
        w[0] = VMAGIC;
        w[1] = at;
        for (uint32_t i = 2; i < run.lbs / 8; i++)
            w[i] = vword(at, run.verify_seed, i);
    }
}

static void verify_check(struct stream *s, const char *buf, uint64_t off, uint32_t len)
{
    for (uint32_t b = 0; b < len; b += run.lbs) {
        const uint64_t *w = (const uint64_t *)(buf + b);
        uint64_t at = off + b;
        if (w[0] != VMAGIC)
            continue; /* never written with the pattern */
        bool ok = w[1] == at;
        for (uint32_t i = 2; ok && i < run.lbs / 8; i++)
            ok = w[i] == vword(at, run.verify_seed, i);
        s->verified++;
        if (!ok)
            s->bad++;
    }
}

/* Chooses the next request of a stream: line by % of accesses, then read or
 * write, random or sequential, by that line's own percentages. */
static void next_io(struct worker *w, struct stream *s, struct io *io, uint64_t now)
{
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
    io->line = (uint16_t)s->line;
    io->len = (uint32_t)ln->size;
    io->write = rnd(s) % 100 >= ln->read;
    uint64_t off;
    if (rnd(s) % 100 < ln->random) {
        uint64_t align = ln->align ? ln->align : run.lbs;
        uint64_t positions = (w->region_len - ln->size) / align + 1;
        off = rnd(s) % positions * align;
    } else { /* the worker's shared sequential position, advanced atomically */
        uint64_t cur = atomic_load_explicit(&w->seq, memory_order_relaxed), nxt;
        do {
            off = cur + ln->size > w->region_len ? 0 : cur;
            nxt = off + ln->size;
        } while (!atomic_compare_exchange_weak_explicit(&w->seq, &cur, nxt, memory_order_relaxed,
                                                        memory_order_relaxed));
    }
    io->off = w->region_start + off;
    if (io->off + io->len > w->t->size || io->off < w->region_start) {
        /* unreachable by construction; never write outside the target */
        fprintf(stderr, "iogen: internal error: offset %llu+%u outside the target\n",
                (unsigned long long)io->off, io->len);
        abort();
    }
    if (io->write && run.verify)
        verify_fill(io->buf, io->off, io->len);
    if (--s->burst_left == 0 && ln->delay_ms)
        s->resume_at = now + (uint64_t)((double)ln->delay_ms * 1e6 / tick_ns);
    if (run.rate_per_stream > 0) {
        uint64_t step = (uint64_t)(tick_hz / run.rate_per_stream);
        s->next_rate = (s->next_rate > now ? s->next_rate : now) + step;
        if (s->next_rate - step > s->resume_at)
            s->resume_at = s->next_rate - step;
    }
}

/* May the stream issue a new request now? (--transactions, delay, rate) */
static bool may_issue(struct stream *s, uint64_t now)
{
    if (atomic_load_explicit(&run.stop, memory_order_relaxed))
        return false;
    if (run.transactions && now >= run.t_measure &&
        atomic_fetch_add_explicit(&run.issued, 1, memory_order_relaxed) >= run.transactions) {
        atomic_store(&run.stop, 1);
        return false;
    }
    if (!run.transactions && now >= run.t_end)
        return false;
    return now >= s->resume_at;
}

static void close_intervals(struct stream *s, uint64_t now)
{
    while (run.ival_ticks && now >= s->ival_end) {
        if (s->nivals == s->civals) {
            size_t c = s->civals ? 2 * s->civals : 16;
            struct hist *n = realloc(s->ivals, c * sizeof *n);
            uint64_t *b = realloc(s->ival_bytes, c * sizeof *b);
            if (n)
                s->ivals = n;
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
static bool complete(struct worker *w, struct stream *s, struct io *io, uint64_t now)
{
    if (io->res != (int64_t)io->len) {
        snprintf(w->err, sizeof w->err, "%s of %u bytes at offset %llu: %s", io->write ? "write" : "read",
                 io->len, (unsigned long long)io->off,
                 io->res < 0 ? strerror((int)-io->res) : "short transfer");
        return false;
    }
    if (run.verify && !io->write)
        verify_check(s, io->buf, io->off, io->len);
    atomic_fetch_add_explicit(&w->live_ios, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->live_bytes, io->len, memory_order_relaxed);
    if (io->t_start < run.t_measure || (!run.transactions && now > run.t_end))
        return true;
    uint64_t lat = (uint64_t)((double)(now - io->t_start) * tick_ns);
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
        s->log[s->nlog++] = (struct logrec){ (uint64_t)((double)(io->t_start - run.t_measure) * tick_ns),
                                             io->off, io->len, (uint32_t)(lat > UINT32_MAX ? UINT32_MAX : lat),
                                             io->write };
    }
    return true;
}

static void sleep_until(uint64_t at)
{
    uint64_t now = ticks();
    if (at <= now)
        return;
    double ns = (double)(at - now) * tick_ns;
    struct timespec d = { (time_t)(ns / 1e9), (long)fmod(ns, 1e9) };
    nanosleep(&d, NULL);
}

static void pin_self(void)
{
    if (opt.cpu >= 0 && osm_pin(opt.cpu) != 0)
        osm_die("cannot pin to CPU %d", opt.cpu);
}

static void *run_async(void *arg)
{
    struct worker *w = arg;
    struct stream *s = &w->streams[0];
    pin_self();
    struct engine e = { .ops = opt.engine == ENG_AIO ? &engine_aio : &engine_uring };
    if (e.ops->init(&e, w->t->fd, w->slots, w->qd, w->bufsize, w->err, sizeof w->err) != 0) {
        w->failed = true;
        atomic_store(&run.stop, 1);
        return NULL;
    }
    unsigned *free_slots = malloc(w->qd * sizeof *free_slots);
    struct io **done = malloc(w->qd * sizeof *done);
    unsigned nfree = w->qd, inflight = 0;
    for (unsigned i = 0; i < w->qd; i++)
        free_slots[i] = i;
    for (;;) {
        uint64_t now = ticks();
        bool issuing = true;
        unsigned queued = 0;
        bool more = false; /* a batch went out with free slots left: submit without waiting */
        while (nfree && (issuing = may_issue(s, now))) {
            struct io *io = &w->slots[free_slots[--nfree]];
            next_io(w, s, io, now);
            io->t_start = ticks();
            e.ops->queue(&e, io);
            inflight++;
            if (opt.batch && ++queued == opt.batch && nfree) {
                more = true;
                break;
            }
        }
        if (!inflight) {
            if (!issuing && (atomic_load(&run.stop) || (!run.transactions && now >= run.t_end)))
                break;
            sleep_until(s->resume_at); /* a delay or a rate limit with nothing in flight */
            continue;
        }
        uint64_t sc = e.syscalls;
        int n = e.ops->submit_reap(&e, more ? 0 : 1, done, w->qd, w->err, sizeof w->err);
        uint64_t t = ticks();
        if (t >= run.t_measure)
            s->syscalls += e.syscalls - sc;
        if (n < 0) {
            w->failed = true;
            break;
        }
        for (int i = 0; i < n; i++) {
            if (!complete(w, s, done[i], t)) {
                w->failed = true;
                atomic_store(&run.stop, 1);
            }
            free_slots[nfree++] = done[i]->slot;
            inflight--;
        }
        if (w->failed && !inflight)
            break;
    }
    close_intervals(s, run.t_end);
    free(free_slots);
    free(done);
    e.ops->exit(&e);
    if (w->failed)
        atomic_store(&run.stop, 1);
    return NULL;
}

struct psync_thread {
    struct worker *w;
    unsigned idx;
    pthread_t th;
};

static void *run_psync_thread(void *arg)
{
    struct psync_thread *pt = arg;
    struct worker *w = pt->w;
    struct stream *s = &w->streams[pt->idx];
    struct io *io = &w->slots[pt->idx];
    pin_self();
    for (;;) {
        uint64_t now = ticks();
        if (!may_issue(s, now)) {
            if (atomic_load(&run.stop) || (!run.transactions && now >= run.t_end))
                break;
            sleep_until(s->resume_at);
            continue;
        }
        next_io(w, s, io, now);
        io->t_start = ticks();
        ssize_t r = io->write ? pwrite(w->t->fd, io->buf, io->len, (off_t)io->off)
                              : pread(w->t->fd, io->buf, io->len, (off_t)io->off);
        io->res = r < 0 ? -errno : r;
        uint64_t t = ticks();
        if (t >= run.t_measure)
            s->syscalls++;
        if (!complete(w, s, io, t)) {
            w->failed = true;
            atomic_store(&run.stop, 1);
            break;
        }
    }
    close_intervals(s, run.t_end);
    return NULL;
}

static void *run_psync(void *arg)
{
    struct worker *w = arg;
    struct psync_thread *pt = calloc(w->qd, sizeof *pt);
    if (!pt) {
        snprintf(w->err, sizeof w->err, "out of memory");
        w->failed = true;
        return NULL;
    }
    unsigned started = 0;
    for (unsigned i = 0; i < w->qd; i++) {
        pt[i] = (struct psync_thread){ w, i, 0 };
        if (pthread_create(&pt[i].th, NULL, run_psync_thread, &pt[i]) != 0) {
            snprintf(w->err, sizeof w->err, "cannot start thread %u of %u", i + 1, w->qd);
            w->failed = true;
            atomic_store(&run.stop, 1);
            break;
        }
        started++;
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(pt[i].th, NULL);
    free(pt);
    return NULL;
}

/* ---------------------------------------------------------- reporting */

static void print_lat(FILE *f, const char *key, const struct hist *h)
{
    fprintf(f,
            "\"%s\": {\"count\": %llu, \"mean\": %.1f, \"min\": %llu, \"max\": %llu, \"p50\": %llu, \"p90\": %llu, "
            "\"p99\": %llu, \"p99_9\": %llu, \"p99_99\": %llu}",
            key, (unsigned long long)h->count, hist_mean(h), (unsigned long long)(h->count ? h->min : 0),
            (unsigned long long)h->max, (unsigned long long)hist_pct(h, 0.50), (unsigned long long)hist_pct(h, 0.90),
            (unsigned long long)hist_pct(h, 0.99), (unsigned long long)hist_pct(h, 0.999),
            (unsigned long long)hist_pct(h, 0.9999));
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

struct totals {
    struct hist all, rd, wr;
    uint64_t reads, writes, bytes_r, bytes_w, syscalls, verified, bad;
};

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
    t->verified += s->verified;
    t->bad += s->bad;
}

static void report(FILE *f, const struct job *job, struct worker *ws, int nw, double secs, struct rusage *ru0,
                   struct rusage *ru1, struct prober *pr, const struct target *t, const char *name)
{
    struct totals tot;
    memset(&tot, 0, sizeof tot);
    hist_clear(&tot.all);
    hist_clear(&tot.rd);
    hist_clear(&tot.wr);
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++)
            add_stream(&tot, &ws[i].streams[k]);
    uint64_t ios = tot.reads + tot.writes;
    double user = (double)(ru1->ru_utime.tv_sec - ru0->ru_utime.tv_sec) +
                  (double)(ru1->ru_utime.tv_usec - ru0->ru_utime.tv_usec) * 1e-6;
    double sys = (double)(ru1->ru_stime.tv_sec - ru0->ru_stime.tv_sec) +
                 (double)(ru1->ru_stime.tv_usec - ru0->ru_stime.tv_usec) * 1e-6;
    long ctx = (ru1->ru_nvcsw - ru0->ru_nvcsw) + (ru1->ru_nivcsw - ru0->ru_nivcsw);
    double per = ios ? 1.0 / (double)ios : 0;
    fprintf(f, "{\"workload\": ");
    json_str(f, name);
    fprintf(f, ", \"engine\": \"%s\", \"qd\": %d, \"workers\": %d, \"target\": ", engine_names[opt.engine], run.qd,
            nw);
    json_str(f, t->path);
    fprintf(f,
            ", \"target_type\": \"%s\", \"filesystem\": \"%s\", \"device\": \"%s\", \"direct\": %s, "
            "\"logical_block_size\": %u, \"region_bytes\": %llu, \"run_s\": %.6f, \"ramp_s\": %.3f, ",
            t->block ? "block" : "file", t->fs, t->device, t->direct ? "true" : "false", t->lbs,
            (unsigned long long)ws[0].region_len, secs, job->ramp_s);
    fprintf(f, "\"iops\": %.3f, \"mbps\": %.3f, \"read_iops\": %.3f, \"write_iops\": %.3f, ", (double)ios / secs,
            (double)(tot.bytes_r + tot.bytes_w) / secs / 1e6, (double)tot.reads / secs, (double)tot.writes / secs);
    print_lat(f, "lat_ns", &tot.all);
    fputs(", ", f);
    print_lat(f, "read_lat_ns", &tot.rd);
    fputs(", ", f);
    print_lat(f, "write_lat_ns", &tot.wr);
    fprintf(f,
            ", \"reads\": %llu, \"writes\": %llu, \"bytes_read\": %llu, \"bytes_written\": %llu, "
            "\"cpu_user_s\": %.6f, \"cpu_sys_s\": %.6f, \"cpu_us_per_io\": %.4f, \"syscalls\": %llu, "
            "\"syscalls_per_io\": %.4f, \"ctx_switches\": %ld, \"ctx_switches_per_io\": %.4f",
            (unsigned long long)tot.reads, (unsigned long long)tot.writes, (unsigned long long)tot.bytes_r,
            (unsigned long long)tot.bytes_w, user, sys, (user + sys) * 1e6 * per, (unsigned long long)tot.syscalls,
            (double)tot.syscalls * per, ctx, (double)ctx * per);
    if (run.verify)
        fprintf(f, ", \"verify\": {\"blocks_checked\": %llu, \"mismatches\": %llu}", (unsigned long long)tot.verified,
                (unsigned long long)tot.bad);
    fputs(", \"per_worker\": [", f);
    for (int i = 0; i < nw; i++) {
        struct totals wt;
        memset(&wt, 0, sizeof wt);
        hist_clear(&wt.all);
        hist_clear(&wt.rd);
        hist_clear(&wt.wr);
        for (unsigned k = 0; k < ws[i].nstreams; k++)
            add_stream(&wt, &ws[i].streams[k]);
        fprintf(f, i ? ", {\"name\": " : "{\"name\": ");
        json_str(f, ws[i].cfg->name);
        fprintf(f, ", \"spec\": ");
        json_str(f, ws[i].spec->name);
        fprintf(f, ", \"qd\": %u, \"iops\": %.3f, \"mbps\": %.3f, ", ws[i].qd, (double)(wt.reads + wt.writes) / secs,
                (double)(wt.bytes_r + wt.bytes_w) / secs / 1e6);
        print_lat(f, "lat_ns", &wt.all);
        fputc('}', f);
    }
    fputs("], \"intervals\": [", f);
    if (run.ival_ticks) {
        size_t nint = 0;
        for (int i = 0; i < nw; i++)
            for (unsigned k = 0; k < ws[i].nstreams; k++)
                if (ws[i].streams[k].nivals > nint)
                    nint = ws[i].streams[k].nivals;
        double iv = (double)run.ival_ticks / tick_hz;
        for (size_t j = 0; j < nint; j++) {
            struct hist h;
            uint64_t bytes = 0;
            hist_clear(&h);
            for (int i = 0; i < nw; i++)
                for (unsigned k = 0; k < ws[i].nstreams; k++)
                    if (j < ws[i].streams[k].nivals) {
                        hist_merge(&h, &ws[i].streams[k].ivals[j]);
                        bytes += ws[i].streams[k].ival_bytes[j];
                    }
            fprintf(f, "%s{\"t\": %.3f, \"iops\": %.3f, \"mbps\": %.3f, ", j ? ", " : "", (double)(j + 1) * iv,
                    (double)h.count / iv, (double)bytes / iv / 1e6);
            print_lat(f, "lat_ns", &h);
            fputc('}', f);
        }
    }
    fputs("], ", f);
    prober_json(pr, f);
    fputs("}\n", f);
    fflush(f);
}

static void write_log(FILE *lf, struct worker *ws, int nw)
{
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++) {
            struct stream *s = &ws[i].streams[k];
            for (size_t j = 0; j < s->nlog; j++)
                fprintf(lf, "%llu,%llu,%u,%c,%u,%d,%d\n", (unsigned long long)s->log[j].start_ns,
                        (unsigned long long)s->log[j].off, s->log[j].len, s->log[j].write ? 'W' : 'R',
                        s->log[j].lat_ns, i + 1, run.qd);
            if (s->log_full)
                fprintf(stderr, "iogen: warning: the request log of worker %d stopped at %zu rows (memory)\n", i + 1,
                        s->nlog);
        }
}

/* ------------------------------------------------------------- driving */

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
            if (t->direct && start % t->lbs)
                osm_usage_error("worker '%s': start %llu is not a multiple of the %u-byte logical block", c->name,
                                (unsigned long long)start, t->lbs);
        }
    }
}

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

static void display(struct worker *ws, int nw, uint64_t *last_ios, uint64_t *last_bytes, double dt, double t,
                    double total)
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

/* One run at one queue depth; prints its JSON object. Returns 0, or 1 on failure. */
static int one_run(const struct job *job, struct target *t, unsigned qd_override, const char *name, FILE *logf)
{
    int nw = job->nworkers;
    struct worker *ws = calloc((size_t)nw, sizeof *ws);
    if (!ws)
        osm_die("out of memory");
    run.qd = qd_override ? (int)qd_override : (int)job->workers[0].outstanding;
    unsigned total_streams = 0;
    for (int i = 0; i < nw; i++) {
        struct worker *w = &ws[i];
        w->id = i;
        w->cfg = &job->workers[i];
        w->spec = &job->specs[w->cfg->spec];
        w->t = t;
        w->qd = qd_override ? qd_override : (w->cfg->outstanding ? w->cfg->outstanding : 1);
        w->region_start = w->cfg->start_bytes;
        w->region_len = w->cfg->max_bytes ? w->cfg->max_bytes : t->size - w->region_start;
        w->region_len -= w->region_len % t->lbs;
        size_t maxsz = 0;
        for (int k = 0; k < w->spec->nlines; k++)
            if (w->spec->line[k].size > maxsz)
                maxsz = w->spec->line[k].size;
        w->bufsize = (maxsz + 4095) & ~(size_t)4095;
        if (posix_memalign((void **)&w->bufs, 4096, w->bufsize * w->qd) != 0)
            osm_die("cannot allocate %u buffers of %zu bytes", w->qd, w->bufsize);
        fill_buffer(w->bufs, w->bufsize * w->qd, w->cfg->pattern, opt.seed + (uint64_t)i);
        w->slots = calloc(w->qd, sizeof *w->slots);
        w->nstreams = opt.engine == ENG_PSYNC ? w->qd : 1;
        w->streams = calloc(w->nstreams, sizeof *w->streams);
        if (!w->slots || !w->streams)
            osm_die("out of memory");
        for (unsigned k = 0; k < w->qd; k++)
            w->slots[k] = (struct io){ .buf = w->bufs + (size_t)k * w->bufsize, .slot = k };
        for (unsigned k = 0; k < w->nstreams; k++) {
            struct stream *s = &w->streams[k];
            uint64_t seed = (w->cfg->fixed_seed ? w->cfg->seed : opt.seed) * 0x9E3779B97F4A7C15ull;
            s->rng = (seed ^ ((uint64_t)(i + 1) << 32) ^ (k + 1)) | 1;
            hist_clear(&s->all);
            hist_clear(&s->rd);
            hist_clear(&s->wr);
            hist_clear(&s->ival);
        }
        total_streams += w->nstreams;
    }
    run.rate_per_stream = opt.rate > 0 ? opt.rate / total_streams : 0;
    atomic_store(&run.stop, 0);
    atomic_store(&run.issued, 0);
    uint64_t now = ticks();
    run.t_measure = now + (uint64_t)(job->ramp_s * tick_hz);
    run.t_end = run.transactions ? UINT64_MAX : run.t_measure + (uint64_t)(job->run_s * tick_hz);
    run.ival_ticks = opt.interval_s > 0 ? (uint64_t)(opt.interval_s * tick_hz) : 0;
    for (int i = 0; i < nw; i++)
        for (unsigned k = 0; k < ws[i].nstreams; k++)
            ws[i].streams[k].ival_end = run.t_measure + run.ival_ticks;

    for (int i = 0; i < nw; i++)
        if (pthread_create(&ws[i].th, NULL, opt.engine == ENG_PSYNC ? run_psync : run_async, &ws[i]) != 0)
            osm_die("cannot start worker %d", i + 1);

    bool live = isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
    struct rusage ru0, ru1;
    struct prober *pr = NULL;
    bool measuring = false;
    uint64_t last_ios = 0, last_bytes = 0;
    double total = run.transactions ? 0 : job->ramp_s + job->run_s;
    uint64_t start = now, last_disp = now;
    for (;;) {
        bool alive = false;
        for (int i = 0; i < nw; i++)
            alive |= pthread_tryjoin_np(ws[i].th, NULL) == EBUSY;
        now = ticks();
        if (!measuring && now >= run.t_measure) {
            getrusage(RUSAGE_SELF, &ru0);
            pr = prober_start(opt.interval_s > 0 ? opt.interval_s : 1.0, strrchr(t->device, '/') ? strrchr(t->device, '/') + 1 : "");
            measuring = true;
        }
        if (interrupted)
            atomic_store(&run.stop, 1);
        if (!alive)
            break;
        if (live && (double)(now - last_disp) * tick_ns >= 5e8) {
            display(ws, nw, &last_ios, &last_bytes, (double)(now - last_disp) * tick_ns * 1e-9,
                    (double)(now - start) * tick_ns * 1e-9, total);
            last_disp = now;
        }
        struct timespec d = { 0, 20 * 1000 * 1000 };
        nanosleep(&d, NULL);
    }
    for (int i = 0; i < nw; i++)
        pthread_join(ws[i].th, NULL);
    uint64_t end = ticks();
    if (!measuring) {
        getrusage(RUSAGE_SELF, &ru0);
        pr = prober_start(1.0, "");
    }
    getrusage(RUSAGE_SELF, &ru1);
    prober_stop(pr);
    if (live)
        fputs("\r\033[K", stderr);

    int rc = 0;
    for (int i = 0; i < nw; i++)
        if (ws[i].failed) {
            fprintf(stderr, "iogen: worker '%s': %s\n", ws[i].cfg->name, ws[i].err);
            rc = 1;
        }
    uint64_t stop_at = run.transactions || interrupted ? end : run.t_end;
    double secs = stop_at > run.t_measure ? (double)(stop_at - run.t_measure) / tick_hz : 0;
    if (!rc && secs > 0)
        report(stdout, job, ws, nw, secs, &ru0, &ru1, pr, t, name);
    else
        prober_free(pr);
    if (logf)
        write_log(logf, ws, nw);
    for (int i = 0; i < nw; i++) {
        for (unsigned k = 0; k < ws[i].nstreams; k++) {
            free(ws[i].streams[k].ivals);
            free(ws[i].streams[k].ival_bytes);
            free(ws[i].streams[k].log);
            if (ws[i].streams[k].bad)
                rc = rc ? rc : 3;
        }
        free(ws[i].streams);
        free(ws[i].slots);
        free(ws[i].bufs);
    }
    free(ws);
    return rc;
}

int main(int argc, char **argv)
{
    osm_progname = "iogen";
    parse_args(argc, argv);
    static struct job job;
    build_job(&job);
    if (opt.dump_spec) {
        job_print_json(&job, stdout);
        return 0;
    }
    struct target t;
    struct target_opts to = { .size = opt.size, .writes = spec_writes(&job) || opt.verify, .direct = !opt.buffered,
                              .allow_destroy = opt.allow_destroy, .allow_signature = opt.allow_signature };
    char err[1024];
    if (target_open(&t, opt.target, &to, err, sizeof err) != 0) {
        fprintf(stderr, "iogen: error: %s\n", err);
        return 2;
    }
    check_fit(&job, &t);
    pin_self();
#if defined(__x86_64__)
    tick_hz = osm_calibrate_hz();
#else
    tick_hz = 1e9;
#endif
    tick_ns = 1e9 / tick_hz;
    run.lbs = t.lbs < 16 ? 512 : t.lbs;
    run.verify = opt.verify;
    run.verify_seed = opt.seed ^ 0xC0FFEEull;
    run.transactions = job.transactions;
    run.log = opt.log_file != NULL;

    FILE *logf = NULL;
    if (opt.log_file) {
        logf = fopen(opt.log_file, "w");
        if (!logf) {
            fprintf(stderr, "iogen: error: --log %s: %s\n", opt.log_file, strerror(errno));
            return 2;
        }
        fputs("start_ns,offset,size,op,latency_ns,worker,qd\n", logf);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    const char *name = opt.workload ? opt.workload : job.specs[job.workers[0].spec].name;
    int rc = 0;
    if (job.cycle_qd) {
        for (unsigned qd = job.qd_start; qd <= job.qd_end && !rc && !interrupted;
             qd = job.qd_exponential ? qd * job.qd_step : qd + job.qd_step)
            rc = one_run(&job, &t, qd, name, logf);
    } else {
        rc = one_run(&job, &t, 0, name, logf);
    }
    if (logf && fclose(logf) != 0) {
        fprintf(stderr, "iogen: error: writing --log %s: %s\n", opt.log_file, strerror(errno));
        rc = rc ? rc : 1;
    }
    target_close(&t);
    if (rc == 3)
        fprintf(stderr, "iogen: error: --verify found blocks that do not hold what was written\n");
    return interrupted && !rc ? 130 : rc;
}
