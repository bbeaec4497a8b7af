/* probe.c - what the stop-watch timers cost (the Virtual Timers paper's
 * Table I), in TSC cycles per call.
 *
 * cpu.vtimer.phys.start / .stop  vt_start / vt_stop of physical timers
 * cpu.vtimer.virt.start / .stop  the same for virtual timers
 * cpu.vtimer.virt.read           vt_read of a running virtual timer (a clock read)
 * A sample times one call on each of 256 private timers (start all, then
 * stop all), so every call does its real work; per call. The virtual
 * timers' mode (perf-mmap or thread-cputime) is in the parameters.
 */
#include "osm.h"
#include "vtimer.h"

#define NT 256

static const struct osm_probe_info info = {
    .name = "cpu_vtimer",
    .summary = "Cost of stop-watch timer calls: physical and virtual start, stop, read.",
    .default_samples = 100,
};

static void die_vt(const char *what, int r)
{
    osm_die("%s: %s", what, vt_strerror(r));
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    vt_timer *t[2][NT];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < NT; i++) {
            int r = vt_alloc(&t[k][i], k ? VT_VIRTUAL : VT_PHYSICAL, VT_PRIVATE);
            if (r)
                die_vt("vt_alloc", r);
        }
    struct osm_meas m[5];
    const char *ids[5] = { "cpu.vtimer.phys.start", "cpu.vtimer.phys.stop", "cpu.vtimer.virt.start", "cpu.vtimer.virt.stop",
                           "cpu.vtimer.virt.read" };
    for (int j = 0; j < 5; j++)
        osm_meas_init(&m[j], ids[j], o.samples);
    for (size_t s = 0; s < o.warmup + o.samples; s++) {
        for (int k = 0; k < 2; k++) {
            uint64_t ticks[3];
            bool dist[3];
            struct osm_window w;
            osm_window_open(&w);
            for (int i = 0; i < NT; i++)
                vt_start(t[k][i]);
            ticks[0] = osm_window_close(&w, &dist[0]);
            uint64_t ns;
            if (k) {
                osm_window_open(&w);
                for (int i = 0; i < NT; i++)
                    vt_read(t[k][i], &ns);
                ticks[2] = osm_window_close(&w, &dist[2]);
            }
            osm_window_open(&w);
            for (int i = 0; i < NT; i++)
                vt_stop(t[k][i]);
            ticks[1] = osm_window_close(&w, &dist[1]);
            if (s < o.warmup)
                continue;
            for (int c = 0; c < (k ? 3 : 2); c++)
                osm_meas_add(&m[k ? (c == 2 ? 4 : 2 + c) : c], ((double)ticks[c] - osm_timer.overhead) / NT,
                             dist[c]);
        }
    }
    for (int j = 0; j < 5; j++) {
        m[j].overhead_subtracted = osm_timer.overhead / NT;
        osm_param_int(&m[j], "calls_per_sample", NT);
        osm_param_str(&m[j], "virtual_mode", vt_mode());
        osm_emit(&m[j]);
        osm_meas_free(&m[j]);
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < NT; i++)
            vt_free(t[k][i]);
    return 0;
}
