/* ops.c - the latency of single arithmetic operations (lmbench's lat_ops).
 *
 * cpu.ops.int.{bit,add,mul,div,mod}   32-bit int, as lmbench's "integer" rows
 * cpu.ops.float.{add,mul,div}         float
 * cpu.ops.double.{add,mul,div}        double
 * Each is one dependent chain: every operation takes the previous result,
 * so the time per operation is its latency, not its throughput. An empty
 * asm after each operation pins the value in a register (of the kind the
 * operation uses) and hides it from the compiler, so nothing is folded,
 * vectorised, or strength-reduced (a division by a value the compiler cannot
 * see stays a division). 100 operations per loop turn; the loop's own
 * counter runs beside the chain. The operands are lmbench's: division
 * alternates between s / 36 and s / (s / 36) with s = 37 << 20; mod is
 * x = x % s then x |= s, the | timed apart (cpu.ops.int.bit) and subtracted;
 * multiplication by a value and by its inverse, so a floating value neither
 * overflows nor becomes subnormal. Batched; windows of all eleven in turn.
 *
 * cpu.clock  the core's clock in MHz, from the add chain: an integer add
 *            takes one core cycle on every core osmeter knows, so the
 *            timer's rate over the ticks per add is the rate of core
 *            cycles, whatever the TSC's fixed rate (params.timer_mhz) and
 *            whatever /proc/cpuinfo says (params.cpuinfo_mhz, of this CPU).
 */
#include "osm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define KEEPF(x) __asm__ volatile("" : "+x"(x))
#elif defined(__aarch64__)
#define KEEPF(x) __asm__ volatile("" : "+w"(x))
#else
#define KEEPF(x) __asm__ volatile("" : "+m"(x))
#endif

#define X10(s) s s s s s s s s s s
#define X100(s) X10(X10(s))

static volatile int seed = 36; /* values the compiler cannot know */

static void int_bit(void *ctx, uint64_t n)
{
    (void)ctx;
    int x = seed, k = seed + 0x5a5a;
    OSM_KEEP(k);
    for (uint64_t i = 0; i < n; i++) {
        X100(x ^= k; OSM_KEEP(x);)
    }
    OSM_USE(x);
}

static void int_add(void *ctx, uint64_t n)
{
    (void)ctx;
    int x = seed, k = seed + 31;
    OSM_KEEP(k);
    for (uint64_t i = 0; i < n; i++) {
        X100(x += k; OSM_KEEP(x);)
    }
    OSM_USE(x);
}

static void int_mul(void *ctx, uint64_t n)
{
    (void)ctx;
    int x = seed, k = seed + 1; /* odd: x never becomes 0 */
    OSM_KEEP(k);
    for (uint64_t i = 0; i < n; i++) {
        X100(x *= k; OSM_KEEP(x);)
    }
    OSM_USE(x);
}

static void int_div(void *ctx, uint64_t n)
{
    (void)ctx;
    int x = seed, s = (seed + 1) << 20;
    OSM_KEEP(s);
    for (uint64_t i = 0; i < n; i++) {
        X100(x = s / x; OSM_KEEP(x);)
    }
    OSM_USE(x);
}

/* x % s, then x | s (so the next remainder has work to do): the | is
 * subtracted, timed by int_bit's chain of the same kind of operation */
static void int_mod(void *ctx, uint64_t n)
{
    (void)ctx;
    int x = seed + 1000, s = seed + 26;
    OSM_KEEP(s);
    for (uint64_t i = 0; i < n; i++) {
        X100(x %= s; OSM_KEEP(x); x |= s; OSM_KEEP(x);)
    }
    OSM_USE(x);
}

#define FP_BODIES(T, name)                                                                                   \
    static void name##_add(void *ctx, uint64_t n)                                                           \
    {                                                                                                        \
        (void)ctx;                                                                                           \
        T x = (T)seed, k = (T)1.0;                                                                           \
        KEEPF(k);                                                                                            \
        for (uint64_t i = 0; i < n; i++) {                                                                   \
            X100(x += k; KEEPF(x);)                                                                          \
        }                                                                                                    \
        OSM_USE((long)x);                                                                                    \
    }                                                                                                        \
    static void name##_mul(void *ctx, uint64_t n)                                                           \
    {                                                                                                        \
        (void)ctx;                                                                                           \
        T x = (T)seed, k = (T)1.25, inv = (T)0.8;                                                            \
        KEEPF(k);                                                                                            \
        KEEPF(inv);                                                                                          \
        for (uint64_t i = 0; i < n; i++) {                                                                   \
            X10(x *= k; KEEPF(x); x *= inv; KEEPF(x); x *= k; KEEPF(x); x *= inv; KEEPF(x); x *= k;          \
                KEEPF(x); x *= inv; KEEPF(x); x *= k; KEEPF(x); x *= inv; KEEPF(x); x *= k; KEEPF(x);        \
                x *= inv; KEEPF(x);)                                                                         \
        }                                                                                                    \
        OSM_USE((long)x);                                                                                    \
    }                                                                                                        \
    static void name##_div(void *ctx, uint64_t n)                                                           \
    {                                                                                                        \
        (void)ctx;                                                                                           \
        T x = (T)1.41421356 * (T)seed, s = (T)3.14159265;                                                    \
        KEEPF(s);                                                                                            \
        for (uint64_t i = 0; i < n; i++) {                                                                   \
            X100(x = s / x; KEEPF(x);)                                                                       \
        }                                                                                                    \
        OSM_USE((long)x);                                                                                    \
    }

FP_BODIES(float, flt)
FP_BODIES(double, dbl)

/* "cpu MHz" of a CPU in /proc/cpuinfo, or 0 */
static double cpuinfo_mhz(unsigned cpu)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    long cur = -1;
    double mhz = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "processor", 9) && strchr(line, ':'))
            cur = strtol(strchr(line, ':') + 1, NULL, 10);
        else if (cur == (long)cpu && !strncmp(line, "cpu MHz", 7) && strchr(line, ':')) {
            mhz = strtod(strchr(line, ':') + 1, NULL);
            break;
        }
    }
    fclose(f);
    return mhz;
}

static const struct osm_probe_info info = {
    .name = "cpu_ops",
    .summary = "Latency of one integer, float and double operation (dependent chains).",
    .default_samples = 50,
};

enum { BIT, ADD, MUL, DIV, MOD, FADD, FMUL, FDIV, DADD, DMUL, DDIV, N };

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    static const char *ids[N] = { "cpu.ops.int.bit", "cpu.ops.int.add", "cpu.ops.int.mul", "cpu.ops.int.div",
                                  "cpu.ops.int.mod", "cpu.ops.float.add", "cpu.ops.float.mul",
                                  "cpu.ops.float.div", "cpu.ops.double.add", "cpu.ops.double.mul",
                                  "cpu.ops.double.div" };
    const osm_body bodies[N] = { int_bit, int_add, int_mul, int_div, int_mod, flt_add, flt_mul, flt_div,
                                 dbl_add, dbl_mul, dbl_div };
    void *ctxs[N] = { 0 };
    struct osm_meas m[N];
    for (int k = 0; k < N; k++)
        osm_meas_init(&m[k], ids[k], o.samples);
    osm_run_interleaved(N, m, bodies, ctxs, o.iterations, o.samples, NULL);
    /* per operation: a turn is 100 of them (mod: 100 remainders and 100 ors) */
    double bit_turn = 0;
    {
        double tmp[m[BIT].n];
        memcpy(tmp, m[BIT].v, sizeof tmp);
        bit_turn = osm_median(tmp, m[BIT].n);
    }
    for (int k = 0; k < N; k++) {
        for (size_t i = 0; i < m[k].n; i++)
            m[k].v[i] = k == MOD ? (m[k].v[i] - bit_turn) / 100 : m[k].v[i] / 100;
        m[k].overhead_subtracted = m[k].overhead_subtracted / 100 + (k == MOD ? bit_turn / 100 : 0);
        osm_param_int(&m[k], "ops_per_turn", 100);
        osm_param_str(&m[k], "chain", "dependent");
        if (k == MOD)
            osm_param_num(&m[k], "or_subtracted", bit_turn / 100);
    }
    struct osm_meas clock;
    osm_meas_init(&clock, "cpu.clock", o.samples);
    for (size_t i = 0; i < m[ADD].n; i++)
        osm_meas_add(&clock, m[ADD].v[i] > 0 ? osm_timer.hz / m[ADD].v[i] / 1e6 : 0, m[ADD].disturbed[i]);
    clock.unit = "MHz";
    clock.overhead_subtracted = 0;
    osm_param_str(&clock, "method", "timer rate / timer ticks per add of a dependent chain of int adds "
                                    "(one core cycle each)");
    osm_param_num(&clock, "timer_mhz", osm_timer.hz / 1e6);
    osm_param_num(&clock, "cpuinfo_mhz", cpuinfo_mhz(osm_current_cpu()));
    for (int k = 0; k < N; k++) {
        osm_emit(&m[k]);
        osm_meas_free(&m[k]);
    }
    osm_emit(&clock);
    osm_meas_free(&clock);
    return 0;
}
