/* spec.h - the Iometer workload model: access specifications, workers, and
 * the test setup; the native spec format, .icf import, shipped workloads.
 *
 * An access specification is a list of lines. Each I/O first picks a line by
 * its % of accesses, then read or write by that line's % read and random or
 * sequential by its % random (Iometer's model; PenguinoMeter and SPEK use the
 * same one). A line also says how big the I/O is, how random offsets are
 * aligned, and how I/Os come in bursts separated by a delay.
 */
#ifndef IOGEN_SPEC_H
#define IOGEN_SPEC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SPEC_MAX_LINES 128
#define SPEC_MAX_SPECS 64
#define SPEC_MAX_WORKERS 64
#define SPEC_NAME_LEN 128
#define SPEC_MAX_ASSIGNED 16 /* access specs one worker runs in sequence */
#define SPEC_MAX_TARGETS 16  /* targets one worker spreads its I/Os over */

struct spec_line {
    uint64_t size;     /* bytes per I/O, > 0 */
    unsigned access;   /* % of accesses that use this line; a spec's lines sum to 100 */
    unsigned read;     /* % of this line's I/Os that read (0..100) */
    unsigned random;   /* % of this line's I/Os at a random offset (0..100) */
    unsigned delay_ms; /* pause after each burst, ms (0 = none) */
    unsigned burst;    /* I/Os issued back to back with this line before the pause (>= 1) */
    uint64_t align;    /* random offsets are multiples of this; 0 = of the target's logical block size */
    uint64_t reply;    /* .icf reply size: a network feature, refused when the spec is run */
};

struct spec {
    char name[SPEC_NAME_LEN];
    struct spec_line line[SPEC_MAX_LINES];
    int nlines;
};

enum data_pattern { DATA_REPEATING = 0, DATA_PSEUDO_RANDOM = 1, DATA_RANDOM = 2 };

/* A test setup cycle, Iometer's: start, start (+|x) step, ... up to end
 * (end 0: as many as there are, the workers or the targets). */
struct cycle {
    bool on;
    bool exponential; /* the step multiplies */
    uint64_t start, end, step;
};

struct worker_cfg {
    char name[SPEC_NAME_LEN];
    int spec[SPEC_MAX_ASSIGNED]; /* indexes into job.specs: run one after another (Iometer's test list) */
    int nspec;             /* >= 1 once the job is read */
    /* The targets the file names for the worker (an .icf's 'Target assignments): kept for --save-icf,
     * never opened: what is read and written comes from the command line. */
    char target[SPEC_MAX_TARGETS][SPEC_NAME_LEN];
    int ntarget;
    unsigned outstanding;  /* I/Os in flight (queue depth), >= 1 */
    uint64_t max_bytes;    /* size of the region used; 0 = the whole target */
    uint64_t start_bytes;  /* where the region begins */
    enum data_pattern pattern;
    bool fixed_seed;
    uint64_t seed;
};

struct job {
    struct spec specs[SPEC_MAX_SPECS];
    int nspecs;
    struct worker_cfg workers[SPEC_MAX_WORKERS];
    int nworkers;
    /* test setup */
    double run_s;          /* measured run time; 0 = until `transactions` */
    double ramp_s;         /* ramp-up, not recorded */
    uint64_t transactions; /* stop after this many I/Os per run (0 = by time) */
    bool cycle_qd;         /* run once per queue depth: start, start(+|x)step, ... end */
    unsigned qd_start, qd_end, qd_step;
    bool qd_exponential;   /* step multiplies (1, 2, 4 ...) instead of adding */
    struct cycle cycle_workers; /* run with start, ... workers (the first ones of the job) */
    struct cycle cycle_targets; /* each worker on start, ... targets (the first ones given) */
    struct cycle cycle_size;    /* every line's transfer size set to start, ... bytes (iogen's, not Iometer's) */
    char description[256];
};

/* Clears a job to: no specs, no workers, run 0, no cycling. */
void job_init(struct job *job);

/* The shipped workloads, by short name (file-server, web-server, database,
 * workstation, 4k-random-read, 4k-random-write, 1m-seq-read, 1m-seq-write).
 * Returns 0 and fills *out, or -1 for an unknown name. */
int spec_builtin(const char *name, struct spec *out);
/* Prints one line per shipped workload: "short-name<TAB>description". */
void spec_list_builtins(FILE *f);

/* The most access specs any worker runs in sequence: the number of steps
 * of the test list. */
int job_steps(const struct job *job);
/* The values a cycle takes: out[0..n), at most max of them; an inactive
 * cycle gives one value, dflt. `all` stands for an end of 0. */
int cycle_values(const struct cycle *c, uint64_t all, uint64_t dflt, uint64_t *out, int max);

/* Checks a spec: at least one line, accesses summing to 100, read and random
 * within 0..100, burst >= 1, sizes > 0. 0 or -1 with a message in err. */
int spec_validate(const struct spec *s, char *err, size_t errlen);
/* A queue depth cycle's start, end and step: NULL when sound, else why not. */
const char *spec_qd_check(unsigned start, unsigned end, unsigned step, bool exponential);

/* A cycle of workers or targets (end 0: all of them), or of sizes
 * (`sizes`: end given): NULL when sound, else why not. */
const char *cycle_check(const struct cycle *c, bool sizes);

/* Reads the native format (docs/spec-format.md) or an Iometer .icf into job.
 * Anything not understood or not supported is an error naming the line and
 * the feature. 0 or -1 with a message in err. */
int spec_parse_file(const char *path, struct job *job, char *err, size_t errlen);
int icf_parse_file(const char *path, struct job *job, char *err, size_t errlen);

/* The job as one JSON object (for --dump-spec and tests). */
void job_print_json(const struct job *job, FILE *f);
/* The job as an Iometer .icf (Version 1.1.0) that icf_parse_file reads
 * back into the same job; `targets` (n of them; NULL: each worker's
 * own names) are every worker's target assignments. 0, or -1 with a
 * message in err (something the format cannot hold). */
int icf_write(const struct job *job, const char *const *targets, int ntargets, FILE *f, char *err, size_t errlen);
/* One access spec as an .icf writes it (also in Iometer's results file). */
void icf_write_spec(FILE *f, const struct spec *s);
/* The job's Iometer Test Type (0 NORMAL ... 7), or -1 when no type cycles as it does. */
int icf_test_type(const struct job *job);

#endif
