/* run.h - a run of the job, and what reads it (iogen.c is the whole's
 * map). main passes each part what it needs: the config (config.h) and
 * the run's state, never a global.
 *
 *   run.c           a run: its workers and threads, the measured window
 *   stream.c        a stream's thread: its requests, their completions
 *   precondition.c  --precondition, and the data a write carries
 *   status.c        a run seen while it runs: the terminal line, --status
 *   verify.c        --verify: the pattern, the checks, the verify state file
 *   live.c          --live: per-worker bars on a terminal
 *   ../output/report.c       the JSON result of a run, the request log
 *   ../output/results_csv.c  --results-csv: Iometer's results file
 */
#ifndef IOGEN_RUN_H
#define IOGEN_RUN_H

#include "config.h"
#include "engine.h"
#include "hist.h"
#include "json.h"
#include "spec.h"
#include "steady.h"
#include "target.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

/* ---------------------------------------------------------------- run */

/* The generator's time stamps are bench/common's (osm_stamp, in ticks of
 * osm_timer.hz: the TSC, the aarch64 counter, or ns), set up by main. */

struct logrec {
    uint64_t start_ns, off;
    uint32_t len, lat_ns;
    uint8_t write, target;
};

/* What a stream counts per target, and per zone of a target (--zones). */
struct tstat {
    uint64_t reads, writes, bytes_r, bytes_w, lat_sum, lat_max, rlat_sum, rlat_max, wlat_sum, wlat_max;
};
struct zstat {
    uint64_t bytes, ticks; /* bytes completed in the zone, and the time between completions that it took */
};
/* a += b (counts and sums added, maxima kept): report.c */
void tstat_add(struct tstat *a, const struct tstat *b);
/* Per spec line: I/Os, reads and random ones (the mix as generated). */
struct lstat {
    uint64_t ios, reads, random;
};

/* What one stream of requests records. An async engine gives a worker one
 * stream with all its outstanding requests; a synchronous one (psync) one
 * stream per outstanding request, each in its own thread. */
struct stream {
    struct worker *w;
    unsigned idx;
    struct io *slots;      /* this stream's requests (qd, or 1 for a sync engine) */
    unsigned nslots;
    uint64_t rng;
    int line;              /* current spec line */
    unsigned burst_left;
    uint64_t resume_at;    /* ticks: no new request before (delay, rate) */
    uint64_t next_rate;
    struct hist all, rd, wr, ival;
    struct hist *ivals;    /* the closed intervals' histograms */
    uint64_t *ival_bytes;  /* and their bytes */
    uint64_t cur_ival_bytes;
    size_t nivals, civals;
    uint64_t ival_end;
    uint64_t reads, writes, bytes_r, bytes_w;
    uint64_t syscalls;     /* counted while measuring */
    uint64_t t_issue, t_call, t_account; /* --stats: ticks in each part of the batches begun while measuring */
    /* --verify, in blocks: read = checked + never written + raced; among the checked, bad ones, of which
     * stale (an earlier generation's data) and without the pattern at all */
    uint64_t vread, verified, vnever, raced, bad, vstale, vnopattern;
    struct logrec *log;
    size_t nlog, clog;
    bool log_full;
    unsigned next_target;  /* round robin over the worker's targets */
    struct tstat *tst;     /* [worker's ntargets] */
    struct lstat *lst;     /* [spec's nlines] */
    struct zstat *zst;     /* [ntargets * zones], --zones */
    uint64_t last_done;    /* ticks of the last completion (--zones) */
    /* this batch's completions, added to the worker's shared counters once a batch (publish_counts):
     * live ios, bytes, latency ns, then the measured window's */
    uint64_t pend[6];
    pthread_t th;
    _Atomic bool done;     /* the thread has finished (then it is joined, once) */
    bool started;
};

/* One of a worker's targets: its region and its sequential position. */
struct wtarget {
    struct target *t;
    uint64_t region_start, region_len;
    _Atomic uint64_t seq;  /* next sequential offset in the region */
};

struct worker {
    int id;
    struct run_state *rs;    /* the run it belongs to */
    char engine_setup[160]; /* what its engine set up */
    const struct worker_cfg *cfg;
    const struct spec *spec; /* the spec of this run (sized: --cycle-size) */
    struct spec sized;       /* the spec with every line's size set, when cycling sizes */
    struct wtarget tg[IOGEN_MAX_TARGETS];
    int fds[IOGEN_MAX_TARGETS];
    unsigned ntargets;
    unsigned qd;             /* outstanding I/Os per target (Iometer's); the worker keeps qd * ntargets */
    struct io *slots;
    char *bufs;
    size_t bufsize;
    struct stream *streams;
    unsigned nstreams;
    _Atomic uint64_t live_ios, live_bytes, live_lat_ns; /* every completion, for the live view */
    _Atomic uint64_t meas_ios, meas_bytes, meas_lat_ns; /* the measured window's, for --steady */
    char err[512];
    _Atomic bool failed;
};

/* The run as every worker sees it: main's, set up by run_init, passed to
 * one_run, which gives it to every worker, and read by the reports. */
struct run_state {
    const struct iogen_config *cfg;
    double tick_ns;            /* ns per tick */
    struct steady steady;      /* --steady while running */
    _Atomic uint64_t t_measure, t_end; /* ticks: recording starts, new requests stop (--ramp-ios moves them) */
    uint64_t ramp_ios;         /* --ramp-ios: the ramp ends at this many completions */
    _Atomic uint64_t ramp_done; /* completions so far, while ramping by count */
    double run_s;              /* the measured time, for --ramp-ios's end */
    unsigned zones;            /* --zones */
    uint64_t ival_ticks;
    uint64_t transactions;
    _Atomic uint64_t issued;   /* measured requests issued, for --transactions */
    _Atomic bool count_stop;   /* the run ended because --transactions were issued */
    _Atomic int stop;
    double rate_per_stream;    /* IOPS per stream, 0 = none */
    bool steady_stop;          /* --steady ended the run */
    unsigned lbs;
    bool verify;
    uint64_t vread_all, vchecked_all; /* --verify: blocks read and checked over every run so far */
    bool log;
    int runno;                 /* the run's number, from 1 (the log's run column) */
};

/* One run of a cycle or test list: which step and cell. */
struct run_params {
    int step;        /* the access spec of each worker's list (Iometer's test list) */
    int nworkers;    /* the first n workers of the job */
    int ntargets;    /* each on the first n targets */
    uint64_t size;   /* every line's transfer size (0: the spec's) */
    unsigned qd;     /* outstanding I/Os per target (0: the job's) */
};

/* What one run leaves for its report (and run_free). */
struct run_result {
    const struct run_state *rs;
    const struct job *job;
    int qd;            /* outstanding I/Os per target (--qd, the job's, or the cycle's) */
    struct run_params p;
    struct worker *ws;
    int nw;
    double ramp_s;     /* the ramp that was run (by time, or until --ramp-ios)*/
    double secs;       /* the measured window */
    double start_unix; /* CLOCK_REALTIME when its first requests went out */
    struct rusage ru0, ru1;
    struct prober *pr;
    const struct target *t; /* the first target */
};

/* The state of the runs of cfg, on targets of logical block lbs (bytes). */
void run_init(struct run_state *rs, const struct iogen_config *cfg, unsigned lbs);
/* One run: the targets ts[0..p->ntargets), the step and cell p. Returns
 * 0, 1 on failure (a message said why), 3 when --verify found a mismatch;
 * *out is filled in either way, for the report and then run_free. */
int one_run(struct run_state *rs, const struct job *job, struct target *ts, const struct run_params *p, struct run_result *out);
void run_free(struct run_result *r);

/* A stream's thread (arg: its struct stream), until the run ends. */
void *stream_main(void *arg);

/* The run seen while it runs (status.c): the terminal's one line, and
 * --status's JSON line per prober sample (prober.h's callback). */
void status_display(struct worker *ws, int nw, int qd, uint64_t *last_ios, uint64_t *last_bytes, double dt, double t,
                    double total);
struct prober_rates;
struct status_ctx {
    const struct run_state *rs;
    struct worker *ws;
    int nw;
    uint64_t ios, bytes, lat; /* the counts at the sample before */
};
void status_line(void *arg, const struct prober_rates *r);

/* The data a write carries: a repeating byte or a pseudo-random stream from seed. */
void fill_buffer(char *b, size_t n, enum data_pattern p, uint64_t seed);
/* --precondition: the target written in order, twice, before the runs. */
struct precondition {
    int passes;
    uint64_t bytes;
    double seconds;
};
int precondition(const struct target *t, uint64_t seed, struct precondition *out, char *err, size_t errlen);

/* ------------------------------------------------------------- verify */

/* --verify: loads the verify state (verify.c says what it is) of target t
 * in blocks of lbs bytes; a process that writes takes the next generation
 * and saves the state, unfinished, before it writes. 0, or -1 with a
 * message (nothing can be checked, or the state cannot be written). */
int verify_open(const struct iogen_config *cfg, const struct target *t, unsigned lbs, bool writes, char *err,
                size_t errlen);
/* The state saved, finished (a process that writes). 0, or -1 with a message. */
int verify_close(char *err, size_t errlen);
void verify_fill(char *buf, uint64_t off, uint32_t len); /* a write's buffer: the pattern */
void verify_issue(struct io *io);
void verify_done(struct stream *s, struct io *io, bool ok);
void verify_json(struct json *j); /* state, seed, generation */

/* ------------------------------------------------------------- report */

void report(FILE *f, const struct run_result *in, const char *name, const struct precondition *pre);
void write_log(FILE *lf, const struct run_result *in);
/* --results-csv: Iometer's results file, one test (a run) at a time. */
void results_csv_run(FILE *f, const struct run_result *in);
/* --live: one frame of per-worker bars (ANSI, to a terminal). */
void live_frame(FILE *f, struct worker *ws, int nw, int qd, uint64_t *last_ios, uint64_t *last_bytes, uint64_t *last_lat,
                double dt, double t, double total);

#endif
