/* noise.c - how much of its CPU a spinning thread loses to everything else
 * (sysjitter's and FTQ's question): the thread, pinned, reads the timer
 * back to back; a gap between two reads longer than --threshold-ns is an
 * interruption (an interrupt, a softirq, a kernel thread, the hypervisor
 * running another guest or its own work). Time is cut into --samples
 * quanta of --quantum-us; one quantum is one sample.
 *
 *   sched.noise.lost   share of each quantum lost to interruptions (%)
 *   sched.noise.gap    each interruption's length (ns): its distribution
 *
 * params: interruptions per second, the threshold, the quantum, a
 * histogram of the interruptions by length (powers of two of ns), the
 * interrupts the CPU took over the same quanta (/proc/interrupts), and the
 * interruptions beyond them: at least that many were the hypervisor's.
 * A run whose noise stands out among its campaign's is flagged by compare.
 */
#include "osm.h"

#include <stdlib.h>
#include <string.h>

static unsigned quantum_us = 10000;
static unsigned threshold_ns = 1000;

static const struct osm_opt opts[] = {
    OSM_OPT_UINT("quantum-us", quantum_us, 100, 10000000, "one sample's length, us"),
    OSM_OPT_UINT("threshold-ns", threshold_ns, 50, 100000000,
                 "a gap between two timer reads longer than this is an interruption"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "sched_noise",
    .summary = "Noise: the share of a pinned spinning thread's time lost to interruptions, and their lengths.",
    .default_samples = 100,
    .default_iterations = 1,
    .opts = opts,
};

#define BUCKETS 40

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    double tick_ns = 1e9 / osm_timer.hz;
    uint64_t quantum = (uint64_t)(quantum_us * 1e3 / tick_ns);
    uint64_t threshold = (uint64_t)(threshold_ns / tick_ns);
    if (threshold < 1)
        threshold = 1;
    size_t nq = o.samples;
    struct osm_meas lost, gap;
    osm_meas_init(&lost, "sched.noise.lost", nq);
    lost.unit = "%";
    osm_meas_init(&gap, "sched.noise.gap", 1024);
    gap.unit = "ns";
    long long hist[BUCKETS] = { 0 };
    size_t interruptions = 0;
    long long irq_before = -1;
    unsigned irq_cpu = 0;
    for (size_t q = 0; q < nq + 1; q++) { /* the first quantum warms up and is not kept */
        if (q == 1) { /* between quanta, outside any: the guest's own interrupts on this CPU so far */
            irq_cpu = osm_current_cpu();
            irq_before = osm_cpu_interrupts((int)irq_cpu);
        }
        uint64_t start = osm_stamp(), prev = start, away = 0;
        uint32_t cpu0 = osm_current_cpu();
        for (;;) {
            uint64_t t = osm_stamp();
            uint64_t d = t - prev;
            prev = t;
            if (d > threshold) {
                away += d;
                if (q > 0) {
                    double ns = (double)d * tick_ns;
                    osm_meas_add(&gap, ns, false);
                    interruptions++;
                    int b = 0;
                    while (b < BUCKETS - 1 && (double)(2ull << b) <= ns)
                        b++;
                    hist[b]++;
                }
            }
            if (t - start >= quantum)
                break;
        }
        if (q > 0)
            osm_meas_add(&lost, 100.0 * (double)away / (double)(prev - start), osm_current_cpu() != cpu0);
    }
    long long irq_after = osm_cpu_interrupts((int)irq_cpu);
    const char *no_count = irq_before < 0 || irq_after < irq_before
        ? "no count of this CPU's interrupts in /proc/interrupts"
        : osm_current_cpu() != irq_cpu ? "the thread moved to another CPU (not pinned: give --cpu)" : NULL;
    double secs = (double)nq * quantum_us / 1e6;
    /* An interruption is the guest's own (an interrupt, and what it wakes) or the hypervisor's (a VM
     * exit, the host running something else on the core), which no guest counter sees. Those beyond
     * every interrupt the CPU took are at least the hypervisor's. */
    if (!no_count) {
        long long guest = irq_after - irq_before;
        double beyond = (double)interruptions > (double)guest ? (double)interruptions - (double)guest : 0;
        struct osm_meas *both[] = { &lost, &gap };
        for (int k = 0; k < 2; k++) {
            osm_param_num(both[k], "guest_interrupts_per_s", (double)guest / secs);
            osm_param_num(both[k], "host_interruptions_per_s", beyond / secs);
        }
    } else {
        osm_param_str(&lost, "guest_interrupts", no_count);
        osm_param_str(&gap, "guest_interrupts", no_count);
    }
    osm_param_num(&lost, "interruptions_per_s", (double)interruptions / secs);
    osm_param_int(&lost, "threshold_ns", threshold_ns);
    osm_param_int(&lost, "quantum_us", quantum_us);
    struct json *j = osm_param(&lost, "histogram_ns");
    json_arr(j);
    for (int b = 0; b < BUCKETS; b++)
        if (hist[b]) {
            json_obj(j);
            json_kint(j, "from", b ? 1ll << b : 0);
            json_kint(j, "below", 2ll << b);
            json_kint(j, "count", hist[b]);
            json_obj_end(j);
        }
    json_arr_end(j);
    osm_emit(&lost);
    osm_param_int(&gap, "threshold_ns", threshold_ns);
    osm_param_num(&gap, "interruptions_per_s", (double)interruptions / secs);
    osm_param_int(&gap, "interruptions", (long long)interruptions);
    if (gap.n == 0) /* a quiet CPU: no interruption at all, so no lengths to give */
        osm_refuse("sched.noise.gap", "no interruption longer than the threshold in the whole run");
    else
        osm_emit(&gap);
    osm_meas_free(&lost);
    osm_meas_free(&gap);
    return 0;
}
