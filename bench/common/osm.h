/*
 * osm.h - the timing core every osmeter probe uses.
 *
 * Fenced time stamps (Intel, "How to Benchmark Code Execution Times on Intel
 * IA-32 and IA-64 Instruction Set Architectures", 2010):
 *
 *   begin:  RDTSCP (CPU id only, outside the window); CPUID; RDTSC
 *   end:    RDTSCP; CPUID
 *
 * CPUID serialises, so nothing before the window leaks into it and nothing
 * after it is hoisted in; RDTSCP waits for the code under test to retire.
 * RDTSCP's TSC_AUX (the kernel stores the CPU number there) tells whether a
 * window began and ended on the same CPU.
 *
 * Where the CPU lacks RDTSCP or the TSC, or with --timer clock, the same API
 * reads CLOCK_MONOTONIC_RAW instead; every JSON line then says
 * "timer": "clock_gettime" and its samples are in ns.
 */
#ifndef OSM_H
#define OSM_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "json.h"

/* A function the compiler must call as written: not inlined, and nothing
 * about its body used at the call site (GCC's noipa: no constant
 * propagation, no dropped arguments, no changed calling convention).
 * clang has no noipa; OSM_CALLEE gets the same guarantee from external
 * linkage instead (a function other code could call keeps its C calling
 * convention and every argument) plus noinline; `used` keeps it.
 * tests/test_tree_build.py checks the disassembly of both compilers' builds. */
#if defined(__GNUC__) && !defined(__clang__)
#define OSM_NOINLINE __attribute__((noinline, noipa))
#define OSM_CALLEE static OSM_NOINLINE
#else
#define OSM_NOINLINE __attribute__((noinline))
#define OSM_CALLEE __attribute__((noinline, used, visibility("default")))
#endif

/* Keep a value (or memory) alive without emitting an instruction. */
#define OSM_KEEP(x) __asm__ volatile("" : "+r"(x))
#define OSM_USE(x) __asm__ volatile("" : : "r"(x))
#define OSM_BARRIER() __asm__ volatile("" ::: "memory")

/* ------------------------------------------------------------------ timer */

enum osm_timer_kind { OSM_TIMER_TSC, OSM_TIMER_CLOCK };

struct osm_timer_info {
    enum osm_timer_kind kind;
    double hz;                /* ticks per second: TSC Hz, or 1e9 for ns */
    bool tsc_invariant;       /* constant_tsc && nonstop_tsc (aarch64: the generic timer, always) */
    double resolution_ns;     /* the timer's real step (step_ticks ticks), ns */
    double step_ticks;        /* granularity: consecutive reads differ by about multiples of it, may be
                                 fractional (a guest's scaled TSC: tens of ticks; a bare TSC or a
                                 clock_gettime moving by single ns: 1) */
    double min_step_ticks;    /* the least nonzero difference of two consecutive reads */
    double overhead;          /* median ticks of an empty window (subtracted) */
    double overhead_min;
    const char *fallback_why; /* why the clock fallback is in use, or NULL */
};

extern struct osm_timer_info osm_timer;

static inline uint64_t osm_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

unsigned osm_current_cpu(void);

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t osm_tsc_begin_raw(uint32_t *cpu)
{
    uint32_t lo, hi, aux;
    __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
    *cpu = aux & 0xfff;
    __asm__ volatile("xor %%eax, %%eax\n\t"
                     "cpuid\n\t"
                     "rdtsc\n\t"
                     "mov %%edx, %0\n\t"
                     "mov %%eax, %1\n\t"
                     : "=r"(hi), "=r"(lo)
                     :
                     : "rax", "rbx", "rcx", "rdx", "memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t osm_tsc_end_raw(uint32_t *cpu)
{
    uint32_t lo, hi, aux;
    __asm__ volatile("rdtscp\n\t"
                     "mov %%edx, %0\n\t"
                     "mov %%eax, %1\n\t"
                     "mov %%ecx, %2\n\t"
                     "xor %%eax, %%eax\n\t"
                     "cpuid\n\t"
                     : "=r"(hi), "=r"(lo), "=r"(aux)
                     :
                     : "rax", "rbx", "rcx", "rdx", "memory");
    *cpu = aux & 0xfff;
    return ((uint64_t)hi << 32) | lo;
}
#define OSM_HAVE_TSC 1
#define OSM_TIMER_NAME "tsc-fenced"
#elif defined(__aarch64__)
/* The generic timer's virtual count (CNTVCT_EL0), fenced with ISB on both
 * sides so the read neither runs ahead of earlier instructions nor lets
 * later ones start before it; its rate is CNTFRQ_EL0. No TSC_AUX: the CPU
 * comes from getcpu, read outside the window. */
static inline uint64_t osm_cntvct(void)
{
    uint64_t v;
    __asm__ volatile("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v) : : "memory");
    return v;
}
static inline uint64_t osm_tsc_begin_raw(uint32_t *cpu) { *cpu = osm_current_cpu(); return osm_cntvct(); }
static inline uint64_t osm_tsc_end_raw(uint32_t *cpu)
{
    uint64_t t = osm_cntvct();
    *cpu = osm_current_cpu();
    return t;
}
#define OSM_HAVE_TSC 1
#define OSM_TIMER_NAME "cntvct-isb"
#else
#define OSM_HAVE_TSC 0
#define OSM_TIMER_NAME "clock_gettime"
static inline uint64_t osm_tsc_begin_raw(uint32_t *cpu) { *cpu = osm_current_cpu(); return osm_clock_ns(); }
static inline uint64_t osm_tsc_end_raw(uint32_t *cpu) { *cpu = osm_current_cpu(); return osm_clock_ns(); }
#endif

/* Start of a timed window: returns ticks, stores the CPU it started on. */
static inline uint64_t osm_begin(uint32_t *cpu)
{
    if (__builtin_expect(osm_timer.kind == OSM_TIMER_TSC, 1))
        return osm_tsc_begin_raw(cpu);
    *cpu = osm_current_cpu();
    return osm_clock_ns();
}

/* End of a timed window. Also usable alone, as "the time now", in a process
 * or thread that did not open the window (fork and thread creation). */
static inline uint64_t osm_end(uint32_t *cpu)
{
    if (__builtin_expect(osm_timer.kind == OSM_TIMER_TSC, 1))
        return osm_tsc_end_raw(cpu);
    uint64_t t = osm_clock_ns();
    *cpu = osm_current_cpu();
    return t;
}

/* A time stamp for an interval that one thread starts and another ends (a
 * wake-up): RDTSCP alone, which waits for earlier instructions but takes no
 * serializing CPUID (a VM exit in a guest, microseconds, would sit inside
 * the interval). Comparable across CPUs where the TSC is invariant and the
 * kernel found it synchronized (clocksource tsc); osm_tsc_skew measures it. */
static inline uint64_t osm_stamp(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_expect(osm_timer.kind == OSM_TIMER_TSC, 1)) {
        uint32_t lo, hi, aux;
        __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
        return ((uint64_t)hi << 32) | lo;
    }
#elif defined(__aarch64__)
    if (__builtin_expect(osm_timer.kind == OSM_TIMER_TSC, 1))
        return osm_cntvct();
#endif
    return osm_clock_ns();
}

/* How far the stamps of CPUs a and b can disagree, in ticks: a bound from
 * round trips of a cache line between threads on the two CPUs (the least
 * round trip brackets the other side's reading). Returns the bound, and in
 * *offset the midpoint estimate of b's stamp minus a's. */
double osm_tsc_skew(int a, int b, double *offset);
/* The least round trip of a cache line between threads on CPUs a and b (the
 * same exchange), in ticks; -1 when no thread could run on b. On a VM it
 * shows where the host put the two vCPUs: on one die (a shared cache) or
 * on two. */
double osm_pair_rtt(int a, int b);

/* A window that also notices deschedules, without a system call where the
 * kernel allows: the `lock` sequence of the thread's perf_event mmap page
 * changes every time the thread is switched in or out. Elsewhere the
 * thread's context-switch counters (getrusage, outside the timed part).
 * Migrations: RDTSCP's CPU id. */
struct osm_window {
    uint64_t t0;
    uint32_t cpu0;
    uint32_t seq0;
    long nvcsw0, nivcsw0;
    bool blocking; /* opened with osm_window_open_blocking */
};

/* Sample markers for a kernel-path trace (trace.c): the span of the last
 * window this thread closed, noted only when the harness asked for markers
 * (OSM_TRACE_MARKER) and after the window's end stamp. */
extern int osm_trace_fd;
extern _Thread_local uint64_t osm_span_t0, osm_span_t1;
extern _Thread_local unsigned osm_span_windows;
static inline void osm_span_note(uint64_t t0, uint64_t t1)
{
    if (__builtin_expect(osm_trace_fd >= 0, 0)) {
        osm_span_t0 = t0;
        osm_span_t1 = t1;
        osm_span_windows++;
    }
}

void osm_window_counters(long *nvcsw, long *nivcsw);
/* This thread's perf page lock word, or NULL where perf_event_open is refused. */
volatile uint32_t *osm_switch_seq(void);
const char *osm_deschedule_check(void); /* "perf-mmap-lock" or "getrusage" */
const char *osm_deschedule_check_why(void); /* why getrusage (NULL with the perf page) */
/* For probes that time context switches: never open the perf event (a task
 * with one pays extra at every switch); windows fall back to getrusage. */
void osm_switch_check_off(void);

static inline void osm_window_open(struct osm_window *w)
{
    volatile uint32_t *seq = osm_switch_seq();
    w->seq0 = 0;
    w->nvcsw0 = w->nivcsw0 = 0;
    w->blocking = false;
    if (seq)
        w->seq0 = *seq;
    else
        osm_window_counters(&w->nvcsw0, &w->nivcsw0);
    w->t0 = osm_begin(&w->cpu0);
}

/* For an operation whose work is switching (fork, wake-ups, ping-pong,
 * blocking I/O): only a migration can disturb it, so no switch counter is
 * read, and no perf event is opened on the thread: a task with one pays
 * extra on every context switch, which is what these windows measure. */
static inline void osm_window_open_blocking(struct osm_window *w)
{
    w->seq0 = 0;
    w->nvcsw0 = w->nivcsw0 = 0;
    w->blocking = true;
    w->t0 = osm_begin(&w->cpu0);
}

/* Closes the window; returns elapsed ticks (raw, nothing subtracted) and
 * sets *disturbed when the window began and ended on different CPUs, or,
 * for a window opened with osm_window_open (an operation that never gives up
 * the CPU by itself), when the thread was switched out at all (preempted or
 * slept). A window opened with osm_window_open_blocking (its work is
 * switching: fork, wake-ups, ping-pong) counts only a migration. */
static inline uint64_t osm_window_close(struct osm_window *w, bool *disturbed)
{
    uint32_t cpu1;
    uint64_t t1 = osm_end(&cpu1);
    bool switched = false;
    volatile uint32_t *seq = w->blocking ? NULL : osm_switch_seq();
    if (w->blocking) {
        /* switching is the operation: only a migration counts */
    } else if (seq) {
        switched = *seq != w->seq0;
    } else {
        long nv, niv;
        osm_window_counters(&nv, &niv);
        switched = niv != w->nivcsw0 || nv != w->nvcsw0;
    }
    *disturbed = cpu1 != w->cpu0 || switched;
    osm_span_note(w->t0, t1);
    return t1 - w->t0;
}

/* Chooses the timer, calibrates its frequency and its own overhead. Called
 * by osm_init; exposed for tests. */
void osm_timer_setup(enum osm_timer_kind want);
double osm_calibrate_hz(void);
/* The step of a timer read by read(): n consecutive reads; *granularity is
 * the spacing of the nonzero differences in ticks, which may be fractional
 * (a guest's scaled TSC, read as floor(n * step)): the clusters of the
 * differences sit at whole multiples of it, and 99% of the differences
 * within a tick of one; 1 for a timer that moves by single ticks. A rare
 * off-grid read cannot hide the step. *least is the smallest nonzero
 * difference. Returns 0, or -1 when the timer never moved. The method is
 * stated in timing.c. */
int osm_timer_step(uint64_t (*read)(void), size_t n, double *granularity, double *least);
/* Ticks a timed window needs: 100 times the timer's overhead, 100 steps,
 * and 20 us (osm_autobatch's target). */
double osm_window_floor_ticks(void);
/* The core's clock now, in MHz: a dependent chain of integer adds (one core
 * cycle each, as cpu.clock) timed in a few windows, their median; well under
 * a millisecond. A host that lowers this vCPU's clock for a while shows as a
 * lower figure. Where width is not NULL, the same adds as eight independent
 * chains are timed in windows interleaved with those, and *width is the adds
 * per cycle they reach (the dependent chain's time over theirs): the core's
 * issue width left to this vCPU, which falls while another hardware thread
 * shares the core even though the clock does not. osm_init takes both once
 * (osm_core_start_mhz, osm_core_start_width) and osm_emit once more, after
 * the measuring: every JSON line carries them ("core_mhz", "core_width"). */
double osm_core_mhz(double *width);
/* The CPU's entries into its idle states so far (cpuidle's usage counters):
 * the halting states' in *halts, POLL's in *polls; -1 without cpuidle in sysfs. */
int osm_idle_entries(int cpu, long long *halts, long long *polls);
/* The interrupts the CPU has taken so far, every source's (its column of
 * /proc/interrupts summed); -1 where that file or the CPU's column is missing. */
long long osm_cpu_interrupts(int cpu);
extern double osm_core_start_mhz, osm_core_start_width;

/* ------------------------------------------------------------- samples */

/* One measurement: what one JSON line carries. */
struct osm_meas {
    char id[96];
    const char *unit;     /* "cycles" (TSC ticks) or "ns" (clock fallback) */
    double *v;            /* samples */
    bool *disturbed;
    size_t n, cap;
    double overhead_subtracted; /* per sample, in the sample's unit */
    bool single_shot;     /* one operation per window (fork, a wake-up): osm_emit says, in params,
                             how many timer steps its median spans and flags it quantized below 100 */
    struct json params;   /* the "params" object, built as the probe goes (osm_param_*) */
    /* optional series: x values and, per x, a row of samples */
    const char *series_x_name;
    const char *series_y_unit;
    double *sx;
    double *sy; /* nx * sy_per rows */
    bool *sy_disturbed; /* nx * sy_per: disturbed flags of sy */
    size_t nx, sy_per;
};

void osm_meas_init(struct osm_meas *m, const char *id, size_t cap);
void osm_meas_free(struct osm_meas *m);
void osm_meas_add(struct osm_meas *m, double v, bool disturbed);
/* The measurement's parameters: one member each, escaped, never cut. */
void osm_param_str(struct osm_meas *m, const char *key, const char *v);
void osm_param_num(struct osm_meas *m, const char *key, double v);
void osm_param_int(struct osm_meas *m, const char *key, long long v);
void osm_param_bool(struct osm_meas *m, const char *key, bool v);
/* For a member whose value is an array or object: json_key is written, the
 * caller writes the value with the json_* calls. */
struct json *osm_param(struct osm_meas *m, const char *key);
void osm_meas_series(struct osm_meas *m, const char *x_name, const char *y_unit, size_t nx, size_t per);
void osm_emit(const struct osm_meas *m);
/* An id this probe cannot measure here, with the reason: a line
 * {"id": ..., "refused": why} the harness records instead of a failure. */
void osm_refuse(const char *id, const char *why);

/* Batched measurement of a short operation: body(ctx, n) runs n iterations.
 * One sample = one window of `iters` iterations: (ticks - timer overhead)
 * / iters - per_iter_subtract. iters 0 = chosen so the timer's overhead is
 * under 1% of the window (osm_autobatch). */
typedef void (*osm_body)(void *ctx, uint64_t n);
uint64_t osm_autobatch(osm_body body, void *ctx);
void osm_run_batched(struct osm_meas *m, osm_body body, void *ctx, uint64_t iters,
                     size_t samples, double per_iter_subtract);
/* The same for n operations whose figures will be compared: their samples
 * are taken in turn (one window of each, then the next round), so drift of
 * the machine during the run affects all of them alike. */
void osm_run_interleaved(size_t n, struct osm_meas *m, const osm_body *body, void *const *ctx, uint64_t iters,
                         size_t samples, const double *per_iter_subtract);
double osm_median(double *v, size_t n); /* sorts v */

/* ------------------------------------------- markers for kernel paths */

/* (trace.c) Opens the trace_marker the harness names in OSM_TRACE_MARKER,
 * if any; osm_init calls it. */
void osm_trace_setup(void);
/* One marker line (printf-style), when markers were asked for. */
void osm_trace_marker(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The next sample this thread adds spans t0..t1 (timer stamps) of thread
 * tid's time (0: this thread's): for a sample that is not one window of the
 * thread that adds it (a wake-up: the waker's stamp to the wakee's). */
void osm_sample_span(uint64_t t0, uint64_t t1, int tid);
/* The next sample this thread adds is a time per n operations. */
void osm_sample_ops(uint64_t n);
/* Called by osm_meas_add: the marker of the sample being added. */
void osm_trace_sample(const char *id, size_t index, double v, bool disturbed);
int osm_gettid(void);

/* ------------------------------------------------- options and set-up */

struct osm_opts {
    uint64_t iterations; /* per sample (batch); 0 = automatic */
    size_t samples;
    size_t warmup;
    int cpu;             /* -1 = do not pin */
    bool human;
    enum osm_timer_kind timer;
};

/* A probe's own options: one row each, declared once. osm_init parses each
 * into its variable (checking the row's limits; a bad value exits with status
 * 2 and a message naming the option) and --help lists each with its default:
 * the variable's value before parsing, or the row's `def` text where that
 * value is a stand-in (0 = "chosen from the machine"). Declare rows with the
 * OSM_OPT_* macros below: each names the variable's type, so a row whose
 * variable has another type does not compile. */
enum osm_opt_type {
    OSM_OPT_U64,    /* uint64_t: a whole number from min to max */
    OSM_OPT_UINT,   /* unsigned: the same */
    OSM_OPT_INT,    /* int: the same (min >= 0; a negative default is a stand-in) */
    OSM_OPT_SIZE,   /* uint64_t bytes: 4096, 64K, 16M, 1G (osm_parse_size), from min to max */
    OSM_OPT_DOUBLE, /* double: a number above lo, up to hi */
    OSM_OPT_STR,    /* const char *: the text as given */
    OSM_OPT_FLAG,   /* bool: set by the option, which takes no value */
    OSM_OPT_CHOICE, /* int: the index of the value in choices, "a|b|c" */
    OSM_OPT_LIST,   /* uint64_t[cap] and its count: whole numbers from min to max, comma-separated */
    OSM_OPT_SIZE_LIST, /* the same, of sizes */
    OSM_OPT_FUNC,   /* parse(value): 0, or -1 for a bad value */
};

struct osm_opt {
    const char *name; /* without -- */
    enum osm_opt_type type;
    union {
        uint64_t *u64;
        unsigned *uint;
        int *i;
        double *d;
        const char **s;
        bool *flag;
        int (*parse)(const char *value);
    } var;
    uint64_t min, max; /* whole numbers, sizes, list items */
    double lo, hi;     /* doubles: lo < x <= hi */
    const char *choices;
    size_t *count, cap; /* lists */
    const char *help;
    const char *def;    /* the default in words, where the variable's value does not say it */
    const char *arg;    /* the value's name in --help ("DIR"), where the type's ("N", "SIZE") says too little */
    bool *seen;         /* set where the option is given (`.seen = &flag`), for a rule between options */
};

/* The last argument is the help text; designated `.def = "words"` and `.arg = "NAME"` may follow it. */
#define OSM_OPT_U64(n, v, mn, mx, ...) { .name = n, .type = OSM_OPT_U64, .var.u64 = &(v), .min = mn, .max = mx, .help = __VA_ARGS__ }
#define OSM_OPT_UINT(n, v, mn, mx, ...) { .name = n, .type = OSM_OPT_UINT, .var.uint = &(v), .min = mn, .max = mx, .help = __VA_ARGS__ }
#define OSM_OPT_INT(n, v, mn, mx, ...) { .name = n, .type = OSM_OPT_INT, .var.i = &(v), .min = mn, .max = mx, .help = __VA_ARGS__ }
#define OSM_OPT_SIZE(n, v, mn, mx, ...) { .name = n, .type = OSM_OPT_SIZE, .var.u64 = &(v), .min = mn, .max = mx, .help = __VA_ARGS__ }
#define OSM_OPT_DOUBLE(n, v, l, u, ...) { .name = n, .type = OSM_OPT_DOUBLE, .var.d = &(v), .lo = l, .hi = u, .help = __VA_ARGS__ }
#define OSM_OPT_STR(n, v, ...) { .name = n, .type = OSM_OPT_STR, .var.s = &(v), .help = __VA_ARGS__ }
#define OSM_OPT_FLAG(n, v, ...) { .name = n, .type = OSM_OPT_FLAG, .var.flag = &(v), .help = __VA_ARGS__ }
#define OSM_OPT_CHOICE(n, v, c, ...) { .name = n, .type = OSM_OPT_CHOICE, .var.i = &(v), .choices = c, .help = __VA_ARGS__ }
#define OSM_OPT_LIST(n, arr, cnt, mn, mx, ...)                                                                  \
    { .name = n, .type = OSM_OPT_LIST, .var.u64 = (arr), .count = &(cnt), .cap = sizeof(arr) / sizeof((arr)[0]), \
      .min = mn, .max = mx, .help = __VA_ARGS__ }
#define OSM_OPT_SIZE_LIST(n, arr, cnt, mn, mx, ...)                                                                  \
    { .name = n, .type = OSM_OPT_SIZE_LIST, .var.u64 = (arr), .count = &(cnt), .cap = sizeof(arr) / sizeof((arr)[0]), \
      .min = mn, .max = mx, .help = __VA_ARGS__ }
#define OSM_OPT_FUNC(n, f, ...) { .name = n, .type = OSM_OPT_FUNC, .var.parse = (f), .help = __VA_ARGS__ }

struct osm_probe_info {
    const char *name;        /* binary name */
    const char *summary;     /* one line for --help */
    size_t default_samples;
    const char *samples_from;    /* non-NULL: the count comes from elsewhere (said here), --samples is refused */
    uint64_t default_iterations; /* 0 = auto */
    const char *one_event;   /* non-NULL: one sample is one event, named here ("one fork"): --iterations
                                is 1 and nothing else (osm_init refuses another count) */
    const struct osm_opt *opts;  /* the probe's own options, ended by a row without a name; or NULL */
};

/* Parses the command line, pins, sets up the timer. Exits with a message on
 * bad input (status 2) or on failure (status 1). */
void osm_init(int argc, char **argv, const struct osm_probe_info *info, struct osm_opts *o);

/* A program of bench/ that is not a probe (iotrace's commands, the MPI-IO replayer) parses its command
 * line by the same rows (bench/common/opts.c). */
struct osm_command {
    const char *name;            /* "iotrace replay": in messages and --help */
    const char *operands;        /* the operands in --help's usage line ("TRACE", "-- CMD [ARGS...]"), or NULL */
    const char *summary;         /* one line for --help, or NULL */
    const struct osm_opt *opts;  /* ended by a row without a name */
    int max_operands;            /* the words that are not options, anywhere among them (and all after "--") */
    bool command_follows;        /* the first word that is not an option, or the word after "--", starts a
                                    command of its own, left to the caller with all after it */
};
/* argv[0 .. argc) (the words after the command's name) by c: each option ("--name VALUE",
 * "--name=VALUE", "--flag") into its row's variable, within the row's limits; --help prints the usage and
 * the rows with their defaults and exits 0; anything else is a usage error (exit 2). Returns the count of
 * operands put in operands[] (room for c->max_operands), or, where a command follows, the index of its
 * first word (argc where none is given). */
int osm_parse_command(const struct osm_command *c, int argc, char **argv, const char **operands);

/* Strict number parsing for options; exits with a message naming the option. */
uint64_t osm_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max);
/* Bytes, as 4096, 64K, 16M or 1G (KiB, MiB, GiB also), from min to max. */
uint64_t osm_parse_size(const char *opt, const char *s, uint64_t min, uint64_t max);
/* The whole number from min to max that s starts with (decimal digits, no
 * sign or space), for values within a larger text ("1:64:x2"): 0 with *out
 * and *end just past it, or -1 (no digits, beyond 2^64 - 1, or out of range). */
int osm_scan_u64(const char *s, const char **end, uint64_t min, uint64_t max, uint64_t *out);
/* "0-3,8" into out[] (at most max): the count, or -1 when malformed, too many,
 * or a CPU number of CPU_SETSIZE or more (no CPU can have it). */
int osm_parse_cpu_list(const char *s, int *out, int max);
int osm_pin(int cpu); /* 0 ok; -1 and errno */
/* For a probe whose processes or threads must share one CPU: the CPU --cpu
 * chose (osm_init has pinned there), else the one this process runs on now,
 * pinned here (children inherit it). Returns that CPU; exits if it cannot pin. */
int osm_pin_here(const struct osm_opts *o);
/* A thread that starts on `cpu` (its affinity set before it first runs: a
 * creator spinning at SCHED_FIFO on its own CPU could otherwise keep the new
 * thread from ever running there to move itself). 0 ok, else an errno. */
int osm_thread_on(pthread_t *th, int cpu, void *(*fn)(void *), void *arg);

/* A progress line for the harness's terminal display (no-op unless it
 * asked for one through OSM_PROGRESS_FD); printf-style, no newline. */
void osm_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void osm_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void osm_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void osm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

extern const char *osm_progname;
/* Where set, osm_usage_error hands its message here, then exits 2: the MPI replayer's, which ends
 * every rank as for any error it finds (MPI finalized, status 2). */
extern void (*osm_usage_hook)(const char *message);
extern size_t osm_warmup_samples; /* --warmup: trials run and discarded first */

#endif
