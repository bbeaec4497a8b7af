/* timer.c - timer expiry latency (cyclictest's method): a thread sleeps
 * with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) until the next tick
 * of a periodic schedule (1 ms by default) and records, at each wake-up,
 * how late it came: now - the tick. One wake-up is one sample (ns).
 *
 *   sched.timer.latency   how late a periodic absolute timer wakes its thread
 *
 * The thread runs under SCHED_FIFO when it may (the harness runs probes so;
 * params.policy says what it had). Under SCHED_OTHER the kernel lets a
 * sleep end up to the thread's timer slack late (50 us by default) so that
 * wake-ups coalesce; the probe sets the slack to 1 ns unless told otherwise
 * (--timer-slack-ns), so that it measures the timer and not the slack.
 * params record the inherited and the used slack, the clocksource and
 * whether the CPU is a nohz_full one. A wake-up later than a whole period
 * skips the ticks it slept through (params.overruns counts them), so a
 * stall is one late sample, not a run of them.
 */
#include "osm.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static double seconds = 5;
static unsigned period_us = 1000;
static uint64_t slack_ns = 1;

static const struct osm_opt opts[] = {
    OSM_OPT_DOUBLE("seconds", seconds, 0, 86400, "how long to measure"),
    OSM_OPT_UINT("period-us", period_us, 50, 1000000, "the timer's period, us"),
    OSM_OPT_U64("timer-slack-ns", slack_ns, 0, 1000000000,
                "the thread's timer slack while measuring, ns (1 is the least; 0 keeps the inherited slack)"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "sched_timer",
    .summary = "Timer latency: how late a periodic clock_nanosleep(TIMER_ABSTIME) wakes (cyclictest's method).",
    .default_samples = 1,
    .samples_from = "one sample per tick over --seconds (--period-us apart)",
    .default_iterations = 1,
    .opts = opts,
};

static int64_t ns_of(const struct timespec *t)
{
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static void read_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    out[0] = 0;
    if (f) {
        if (!fgets(out, (int)len, f))
            out[0] = 0;
        fclose(f);
    }
    out[strcspn(out, "\n")] = 0;
}

/* Is cpu in a cpulist such as "1-3,5"? */
static bool in_list(const char *list, int cpu)
{
    static int cpus[CPU_SETSIZE];
    int n = osm_parse_cpu_list(list, cpus, CPU_SETSIZE);
    for (int i = 0; i < n; i++)
        if (cpus[i] == cpu)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    /* samples: one per wake-up over --seconds (--samples is not ours to set) */
    size_t n = (size_t)(seconds * 1e6 / period_us);
    osm_timer.kind = OSM_TIMER_CLOCK; /* the method measures CLOCK_MONOTONIC against itself: ns */
    struct osm_meas m;
    osm_meas_init(&m, "sched.timer.latency", n);
    m.unit = "ns";
    int policy = sched_getscheduler(0);
    long inherited_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (slack_ns > 0 && prctl(PR_SET_TIMERSLACK, (unsigned long)slack_ns, 0, 0, 0) != 0)
        osm_die("prctl(PR_SET_TIMERSLACK, %llu): %m", (unsigned long long)slack_ns);
    struct timespec next, now;
    clock_gettime(CLOCK_MONOTONIC, &next);
    int64_t period = (int64_t)period_us * 1000;
    size_t warm = o.warmup * 10, overruns = 0;
    int cpu = (int)osm_current_cpu();
    long long halts0, polls0, halts1, polls1;
    int idle_known = osm_idle_entries(cpu, &halts0, &polls0);
    for (size_t i = 0; i < warm + n; i++) {
        int64_t t = ns_of(&next) + period;
        next.tv_sec = (time_t)(t / 1000000000);
        next.tv_nsec = (long)(t % 1000000000);
        int r;
        while ((r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL)) == EINTR)
            ;
        if (r != 0)
            osm_die("clock_nanosleep: %s", strerror(r));
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (i >= warm)
            osm_meas_add(&m, (double)(ns_of(&now) - ns_of(&next)), false);
        /* A wake-up later than a whole period (the vCPU stalled, the host
         * paused the guest) must stay one late sample: the ticks it slept
         * through are skipped and counted, as cyclictest counts overruns,
         * rather than each returning at once and reading late by what is
         * left of the stall (a long pause would otherwise fill the run with
         * late samples and move even its median). */
        int64_t late = ns_of(&now) - ns_of(&next);
        if (late >= period) {
            int64_t skip = late / period;
            overruns += (size_t)skip;
            t = ns_of(&next) + skip * period;
            next.tv_sec = (time_t)(t / 1000000000);
            next.tv_nsec = (long)(t % 1000000000);
        }
        if (i >= warm && (i - warm) % 250 == 249) /* four times a second at the 1 ms period */
            osm_progress("%zu of %zu wake-ups", i - warm + 1, n);
    }
    if (idle_known == 0)
        idle_known = osm_idle_entries(cpu, &halts1, &polls1);
    char clocksource[64], nohz[256];
    read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", clocksource, sizeof clocksource);
    read_line("/sys/devices/system/cpu/nohz_full", nohz, sizeof nohz);
    osm_param_str(&m, "method", "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) on a periodic schedule");
    osm_param_int(&m, "period_us", period_us);
    osm_param_int(&m, "overruns", (long long)overruns); /* ticks slept through by late wake-ups, skipped */
    osm_param_num(&m, "seconds", seconds);
    osm_param_str(&m, "policy", policy == SCHED_FIFO ? "SCHED_FIFO" : policy == SCHED_RR ? "SCHED_RR" : "SCHED_OTHER");
    osm_param_int(&m, "timer_slack_ns", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
    osm_param_int(&m, "inherited_timer_slack_ns", inherited_slack);
    osm_param_str(&m, "clocksource", clocksource);
    osm_param_int(&m, "cpu", cpu);
    osm_param_bool(&m, "nohz_full_cpu", nohz[0] && in_list(nohz, cpu));
    if (idle_known == 0) { /* a tick that finds its CPU halted waits for the host to resume the vCPU */
        osm_param_num(&m, "cpu_halts_per_tick", (double)(halts1 - halts0) / (double)(warm + n));
        osm_param_num(&m, "cpu_polls_per_tick", (double)(polls1 - polls0) / (double)(warm + n));
    } else {
        osm_param_str(&m, "cpu_halts_per_tick", "not known: no cpuidle states in sysfs for this CPU");
    }
    osm_emit(&m);
    osm_meas_free(&m);
    return 0;
}
