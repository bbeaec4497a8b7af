/* config.h - what one iogen invocation was asked to do: options.c parses
 * the command line into a struct iogen_config and builds the job from it
 * and the workload file; main (iogen.c) hands the config to the runs
 * (run.h) and the reports, which read it and never a global. An engine's
 * own options are the engine's (engine.h: struct engine_option). */
#ifndef IOGEN_CONFIG_H
#define IOGEN_CONFIG_H

#include "engine.h"
#include "spec.h"
#include "steady.h"
#include "target.h"

#include <stdbool.h>
#include <stdint.h>

#define IOGEN_MAX_TARGETS SPEC_MAX_TARGETS

struct iogen_config {
    const char *targets[IOGEN_MAX_TARGETS]; /* --target, in order: every worker spreads its I/Os over them */
    int ntargets;
    const char *target; /* the first, or NULL */
    const char *workload, *spec_file, *icf_file, *spec_name, *log_file;
    const char *verify_state; /* --verify-state, or NULL: the default (verify.c) */
    const struct engine_ops *engine;
    bool engine_set;        /* --engine given: never replaced */
    bool engine_auto;       /* neither --engine nor an engine's option given: the target may choose */
    const char *engine_fallback; /* why the default engine was passed over, or NULL */
    unsigned qd;            /* --qd: outstanding I/Os per target; 0 = from the job (options_build_job applies it) */
    unsigned workers;       /* 0 = from the job */
    uint64_t size;
    double time_s, ramp_s, interval_s, rate;
    double start_at;        /* --start-at: CLOCK_REALTIME seconds the first run starts at; 0 = at once */
    bool time_set, ramp_set;
    uint64_t transactions;
    bool verify, buffered, allow_destroy, allow_signature, dump_spec;
    const char *cycle;      /* --cycle-qd */
    const char *cycle_workers, *cycle_targets, *cycle_size; /* --cycle-workers, --cycle-targets, --cycle-size */
    const char *save_icf;   /* --save-icf FILE */
    const char *results_csv; /* --results-csv FILE */
    bool live;              /* --live: per-worker bars on a terminal */
    bool status;            /* --status: a status line on standard output per prober sample */
    uint64_t ramp_ios;      /* --ramp-ios: the ramp-up ends after this many I/Os (0: by time) */
    unsigned zones;         /* --zones: a sequential run's throughput in this many offset bins */
    int cpu;
    uint64_t seed;
    bool seed_set;          /* --seed given */
    unsigned batch;         /* most requests per submission; 0 = every free slot */
    struct steady steady;   /* --steady METRIC:BOUND:WINDOW, as parsed */
    bool precondition;      /* write the region in order twice first */
    bool stats;             /* --stats: each batch's issue, engine call and accounting timed (cpu_per_io) */
};

/* The config the command line asks for (exits with a usage error, status 2,
 * or after --help and the like). */
void options_parse(int argc, char **argv, struct iogen_config *cfg);
/* The job the config and the workload file describe; exits with a
 * message (status 2) when it cannot be run. */
void options_build_job(const struct iogen_config *cfg, struct job *job);
/* With the default engine, the engine for this target: psync where the
 * target refuses non-blocking I/O (said in engine_fallback and on stderr). */
void options_engine_for_target(struct iogen_config *cfg, const struct job *job, const struct target *t);

#endif
