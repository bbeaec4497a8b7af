/* timer.c - what timing costs: the fenced window itself (the overhead every
 * probe subtracts), and RDTSC, RDTSCP, CPUID and vDSO clock_gettime alone.
 *
 * cpu.timer_overhead   one empty fenced window per sample (begin; end)
 * cpu.timer.rdtsc      cycles per RDTSC, batched, 8 per loop turn
 * cpu.timer.rdtscp     cycles per RDTSCP, batched
 * cpu.timer.cpuid      cycles per CPUID (leaf 0): a VM exit in a guest
 * cpu.timer.clock_gettime  cycles per clock_gettime(CLOCK_MONOTONIC) (vDSO)
 */
#include "osm.h"

#include <string.h>

const double *osm_overhead_samples(size_t *n);

#if defined(__x86_64__) || defined(__i386__)
#define X86 1
static void body_rdtsc(void *ctx, uint64_t n)
{
    (void)ctx;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t lo, hi;
#define R __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        R R R R R R R R
#undef R
    }
}

static void body_rdtscp(void *ctx, uint64_t n)
{
    (void)ctx;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t lo, hi, c;
#define R __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(c));
        R R R R R R R R
#undef R
    }
}

static void body_cpuid(void *ctx, uint64_t n)
{
    (void)ctx;
    for (uint64_t i = 0; i < n; i++)
        __asm__ volatile("xor %%eax, %%eax\n\tcpuid" ::: "rax", "rbx", "rcx", "rdx", "memory");
}
#else
#define X86 0
#endif

static void body_clock(void *ctx, uint64_t n)
{
    (void)ctx;
    struct timespec ts;
    for (uint64_t i = 0; i < n; i++) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        OSM_BARRIER();
    }
}

static const struct osm_probe_info info = {
    .name = "cpu_timer",
    .summary = "Cost of the fenced timing window, RDTSC, RDTSCP, CPUID and vDSO clock_gettime.",
    .default_samples = 200,
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);

    struct osm_meas m;
    size_t n;
    const double *ov = osm_overhead_samples(&n);
    osm_meas_init(&m, "cpu.timer_overhead", n);
    for (size_t i = 0; i < n; i++)
        osm_meas_add(&m, ov[i], false);
    osm_param_str(&m, "method", osm_timer.kind != OSM_TIMER_TSC ? "clock_gettime pair"
                                : X86 ? "CPUID;RDTSC ... RDTSCP;CPUID" : "ISB;MRS CNTVCT_EL0;ISB ... ISB;MRS CNTVCT_EL0;ISB");
    osm_param_int(&m, "windows", (long long)n);
    osm_param_num(&m, "subtracted_by_probes", osm_timer.overhead);
    osm_emit(&m);
    osm_meas_free(&m);

    struct {
        const char *id;
        osm_body body;
        double per_turn;
    } batched[] = {
#if X86
        { "cpu.timer.rdtsc", body_rdtsc, 8 },
        { "cpu.timer.rdtscp", body_rdtscp, 8 },
        { "cpu.timer.cpuid", body_cpuid, 1 },
#endif
        { "cpu.timer.clock_gettime", body_clock, 1 },
    };
#if !X86
    osm_refuse("cpu.timer.rdtsc", "not an x86 CPU: no RDTSC (the timer here is named in timer.kind)");
    osm_refuse("cpu.timer.rdtscp", "not an x86 CPU: no RDTSCP");
    osm_refuse("cpu.timer.cpuid", "not an x86 CPU: no CPUID");
#endif
    for (size_t k = 0; k < sizeof batched / sizeof batched[0]; k++) {
        osm_meas_init(&m, batched[k].id, o.samples);
        osm_run_batched(&m, batched[k].body, NULL, o.iterations, o.samples, 0);
        for (size_t i = 0; i < m.n; i++)
            m.v[i] /= batched[k].per_turn;
        m.overhead_subtracted /= batched[k].per_turn;
        osm_param_num(&m, "ops_per_iteration", batched[k].per_turn);
        osm_emit(&m);
        osm_meas_free(&m);
    }
    return 0;
}
