/* test_timing.c - checks of the timing core against ground truth.
 * Prints one line per check and a closing "N passed, N failed" line; exits
 * non-zero when any check fails. Run by tests/test_common_timing.py. */
#include "osm.h"
#include "check.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include <stdarg.h>

static void spin_ns(uint64_t ns)
{
    uint64_t end = osm_clock_ns() + ns;
    while (osm_clock_ns() < end)
        ;
}

static void busy(void *ctx, uint64_t n)
{
    (void)ctx;
    for (uint64_t i = 0; i < n; i++)
        OSM_BARRIER();
}

/* A fake timer that advances in steps of 26 ticks (a guest's scaled TSC):
 * an underlying count moving 7 ticks a read, cut down to the grid, with one
 * read in 500 off the grid by a tick (as RDTSC beside RDTSCP can be). */
static uint64_t fake_count;
static unsigned fake_reads;
static uint64_t fake_step26(void)
{
    fake_count += 7;
    uint64_t t = fake_count / 26 * 26;
    return ++fake_reads % 500 == 0 ? t + 1 : t;
}

/* More fake timers, each read by osm_timer_step: a true time `fake_t` in
 * ticks moves on by a random amount per read (a small xorshift, so every run
 * reads the same), and the reading is cut down to the timer's grid. */
static double fake_t;
static uint64_t fake_rng = 88172645463325252ull;
static double fake_unit(void) /* uniform in [0, 1) */
{
    fake_rng ^= fake_rng << 13;
    fake_rng ^= fake_rng >> 7;
    fake_rng ^= fake_rng << 17;
    return (double)(fake_rng >> 11) / 9007199254740992.0;
}
static void fake_reset(void)
{
    fake_t = 1000.0;
    fake_rng = 88172645463325252ull;
}
/* a step of 24.5 ticks, readings floor(n * 24.5), read every 2 to 5 steps */
static uint64_t fake_step245(void)
{
    fake_t += 24.5 * (2 + 3 * fake_unit());
    return (uint64_t)floor(floor(fake_t / 24.5) * 24.5);
}
/* a step of 26 ticks read every 2 steps, with 1 read in 2,000 a step early
 * and 1 in 2,000 a step late: differences of 52, and rarely 26 and 78 */
static uint64_t fake_step26_at52(void)
{
    double u = fake_unit();
    fake_t += u < 0.0005 ? 26 : u < 0.001 ? 78 : 52;
    return (uint64_t)(floor(fake_t / 26) * 26);
}
/* a step of 26 ticks read exactly every 2 steps: nothing tells 26 from 52 */
static uint64_t fake_step26_only52(void)
{
    fake_t += 52;
    return (uint64_t)(floor(fake_t / 26) * 26);
}
/* a step of 10.015 ticks (a clock in ns computed from a stepping TSC),
 * read every 2 or 3 steps, rarely 4, and 1 read in 200 late by about 200
 * steps (an interrupt): far clusters of a few differences each */
static uint64_t fake_step10015(void)
{
    double u = fake_unit();
    fake_t += 10.015 * (u < 0.6 ? 2 : u < 0.999 ? 3 : 4);
    if (fake_unit() < 1.0 / 200)
        fake_t += 2000 + 30 * fake_unit();
    return (uint64_t)floor(floor(fake_t / 10.015) * 10.015);
}
/* a timer that moves by single ticks, read every 20 to 50 ticks */
static uint64_t fake_continuum(void)
{
    fake_t += 20 + 30 * fake_unit();
    return (uint64_t)fake_t;
}
/* the same read every 30 to 35 ticks: a narrow continuum, one cluster */
static uint64_t fake_narrow(void)
{
    fake_t += 30 + 5 * fake_unit();
    return (uint64_t)fake_t;
}
/* a step of 24.5 ticks read every 0.2 to 0.6 steps (most reads see no
 * move), 1 read in 400 a tick ahead: differences of 1 tick, under 1% of the
 * nonzero ones */
static unsigned fake_ahead, fake_moves;
static uint64_t fake_step245_offgrid(void)
{
    static uint64_t last;
    fake_t += 24.5 * (0.2 + 0.4 * fake_unit());
    uint64_t t = (uint64_t)floor(floor(fake_t / 24.5) * 24.5);
    fake_moves += t != last;
    last = t;
    if (fake_unit() < 1.0 / 400) {
        fake_ahead++;
        return t + 1;
    }
    return t;
}

/* The step osm_timer_step finds in 20,000 reads of a fake timer (0 if it
 * found none). */
static double step_of(uint64_t (*read)(void), double *least)
{
    double g = 0;
    fake_reset();
    if (osm_timer_step(read, 20000, &g, least) != 0)
        return 0;
    return g;
}

int main(void)
{
    osm_timer_setup(OSM_TIMER_TSC);
    bool tsc = osm_timer.kind == OSM_TIMER_TSC;
    printf("timer %s, %.0f Hz, overhead median %.1f ticks\n", tsc ? "tsc" : "clock", osm_timer.hz,
           osm_timer.overhead);

    /* 0. CPU lists as sysfs writes them, the one parser c2c and timer share. */
    {
        int cpus[8];
        int n = osm_parse_cpu_list("0-2,5,7-7", cpus, 8);
        check(n == 5 && cpus[0] == 0 && cpus[2] == 2 && cpus[3] == 5 && cpus[4] == 7, "cpu_list",
              "\"0-2,5,7-7\" -> %d cpus", n);
        check(osm_parse_cpu_list("3-1", cpus, 8) == -1 && osm_parse_cpu_list("1,x", cpus, 8) == -1 &&
                  osm_parse_cpu_list("0-8", cpus, 8) == -1 && osm_parse_cpu_list("", cpus, 8) == 0,
              "cpu_list_bad", "reversed, junk and too many are refused");
    }

    /* 0b. osm_pin_here: with no --cpu it pins to the CPU it runs on; with
     * --cpu it returns that CPU and leaves the affinity osm_init set alone. */
    {
        cpu_set_t saved, now;
        sched_getaffinity(0, sizeof saved, &saved);
        struct osm_opts o = { .cpu = -1 };
        int here = osm_pin_here(&o);
        sched_getaffinity(0, sizeof now, &now);
        check(CPU_COUNT(&now) == 1 && CPU_ISSET(here, &now) && (int)osm_current_cpu() == here, "pin here",
              "no --cpu: pinned to %d alone (%d CPUs allowed)", here, CPU_COUNT(&now));
        sched_setaffinity(0, sizeof saved, &saved);
        o.cpu = here;
        int given = osm_pin_here(&o);
        sched_getaffinity(0, sizeof now, &now);
        check(given == here && CPU_EQUAL(&now, &saved), "pin here given", "--cpu %d: returned %d, affinity untouched",
              here, given);
        sched_setaffinity(0, sizeof saved, &saved);
    }

    /* 1. The calibrated rate converts a TSC interval into the clock's time. */
    for (int attempt = 0; attempt < 3; attempt++) {
        uint32_t c;
        uint64_t n0 = osm_clock_ns(), t0 = osm_end(&c);
        spin_ns(200 * 1000 * 1000);
        uint64_t t1 = osm_end(&c), n1 = osm_clock_ns();
        double tsc_ns = (double)(t1 - t0) * 1e9 / osm_timer.hz;
        double err = (tsc_ns - (double)(n1 - n0)) / (double)(n1 - n0);
        if (fabs(err) < 0.005 || attempt == 2) {
            check(fabs(err) < 0.005, "tsc rate", "200 ms by the clock = %.3f ms by the TSC (%.3f%%)",
                  tsc_ns / 1e6, err * 100);
            break;
        }
    }

    /* 2. The overhead is positive and small, and it is what an empty window costs. */
    check(osm_timer.overhead > 0 && osm_timer.overhead < osm_timer.hz * 100e-6, "overhead range",
          "%.1f ticks", osm_timer.overhead);

    /* 3. Batching makes the window at least 100x the overhead. */
    uint64_t n = osm_autobatch(busy, NULL);
    uint32_t c0, c1;
    uint64_t t0 = osm_begin(&c0);
    busy(NULL, n);
    uint64_t t1 = osm_end(&c1);
    check((double)(t1 - t0) >= 50 * osm_timer.overhead, "autobatch", "%llu iterations take %llu ticks",
          (unsigned long long)n, (unsigned long long)(t1 - t0));

    /* 3b. The timer's real step: a fake timer stepping by 26 ticks is
     * measured as such, and the real one's step divides its least move. */
    {
        double g = 0, least = 0;
        int rc = osm_timer_step(fake_step26, 20000, &g, &least);
        check(rc == 0 && fabs(g - 26) <= 0.01 && least == 1, "step of a 26-tick timer",
              "granularity %g, least difference %.0f ticks", g, least);
        check(osm_timer.step_ticks >= 1 && osm_timer.resolution_ns > 0,
              "step of this timer", "step %g ticks (%.3f ns), least move %.0f ticks", osm_timer.step_ticks,
              osm_timer.resolution_ns, osm_timer.min_step_ticks);
        /* the step is the spacing of the differences, fractional where it is */
        g = step_of(fake_step245, &least);
        check(fabs(g - 24.5) <= 0.245, "step of a 24.5-tick timer",
              "floor(n * 24.5) read every 2-5 steps: step %g ticks, least difference %.0f", g, least);
        g = step_of(fake_step10015, &least);
        check(fabs(g - 10.015) <= 0.1, "step of a 10.015-tick timer",
              "read every 2-3 steps, rarely 4 or 200 more: step %g ticks", g);
        g = step_of(fake_step26_at52, &least);
        check(fabs(g - 26) <= 0.26, "step of a 26-tick timer read at 52",
              "differences of 52, and 26 and 78 one in 2,000 each: step %g ticks", g);
        g = step_of(fake_step26_only52, &least);
        check(g == 52, "step of a timer always read at 52",
              "one difference, 52: step %g ticks (the difference itself, the step's upper bound)", g);
        g = step_of(fake_continuum, &least);
        check(g == 1, "step of a 1-tick timer", "differences of 20-50 ticks: step %g ticks", g);
        g = step_of(fake_narrow, &least);
        check(g == 1, "step of a 1-tick timer, narrow", "differences of 30-35 ticks: step %g ticks", g);
        g = step_of(fake_step245_offgrid, &least);
        check(fabs(g - 24.5) <= 0.245 && least == 1 && fake_ahead < fake_moves / 100, "step with off-grid reads",
              "a 24.5-tick timer, %u reads a tick ahead beside %u moves: step %g ticks, least difference %.0f",
              fake_ahead, fake_moves, g, least);
        /* windows grow to 100 steps: a timer whose step is about 1/2000 of
         * a second, and fractional */
        double keep = osm_timer.step_ticks;
        osm_timer.step_ticks = floor(osm_timer.hz / 2000) + 0.5;
        uint64_t nb = osm_autobatch(busy, NULL);
        double best = 1e300;
        for (int k = 0; k < 3; k++) {
            uint64_t a0 = osm_begin(&c0);
            busy(NULL, nb);
            uint64_t a1 = osm_end(&c1);
            best = fmin(best, (double)(a1 - a0));
        }
        check(best >= 100 * osm_timer.step_ticks * 0.9, "windows of 100 steps",
              "a step of %.1f ticks: the batch of %llu iterations takes %.0f ticks (%.0f steps)",
              osm_timer.step_ticks, (unsigned long long)nb, best, best / osm_timer.step_ticks);
        osm_timer.step_ticks = keep;
    }

    /* 4. A window that moves to another CPU is flagged. */
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    int a = -1, b = -1;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &allowed)) {
            if (a < 0)
                a = i;
            else if (b < 0)
                b = i;
        }
    if (b < 0) {
        printf("SKIP migration: only one CPU\n");
        skipped++;
    } else {
        osm_pin(a);
        struct osm_window w;
        bool dist;
        osm_window_open_blocking(&w);
        osm_pin(b); /* the kernel moves us before returning */
        osm_window_close(&w, &dist);
        check(dist, "migration flagged", "window from CPU %d to CPU %d (a blocking window)", a, b);
        osm_pin(a);
        osm_window_open(&w);
        osm_pin(b);
        osm_window_close(&w, &dist);
        check(dist, "migration flagged 2", "window from CPU %d to CPU %d (a busy window)", a, b);
        bool clean = false;
        for (int k = 0; k < 5 && !clean; k++) {
            osm_window_open(&w);
            busy(NULL, 1000);
            osm_window_close(&w, &dist);
            clean = !dist;
        }
        check(clean, "pinned window clean", "a short busy window on one CPU is not flagged");
    }

    /* 5. A window that sleeps is flagged unless switching is the operation. */
    struct osm_window w;
    bool dist;
    osm_window_open(&w);
    usleep(2000);
    osm_window_close(&w, &dist);
    check(dist, "sleep flagged", "usleep inside a window that must not switch");
    osm_window_open_blocking(&w);
    usleep(2000);
    osm_window_close(&w, &dist);
    check(!dist, "sleep allowed", "usleep inside a window whose operation blocks");

    /* 6. The clock fallback works and says so. */
    osm_timer_setup(OSM_TIMER_CLOCK);
    t0 = osm_begin(&c0);
    spin_ns(1000 * 1000);
    t1 = osm_end(&c1);
    check(osm_timer.kind == OSM_TIMER_CLOCK && osm_timer.hz == 1e9 && t1 - t0 >= 1000000 &&
              osm_timer.fallback_why != NULL,
          "clock fallback", "1 ms spin reads %llu ns", (unsigned long long)(t1 - t0));

    return check_summary();
}
