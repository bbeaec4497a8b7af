/* loop.c - the cost of one turn of an empty counted loop.
 *
 * cpu.loop   per iteration: a window of N turns, timer overhead subtracted,
 *            divided by N (N chosen so the timer is under 1% of the window).
 *            Its series: whole windows of 0, 1, 2, 4 ... 4096 turns, raw
 *            (nothing subtracted): the intercept is the timer's overhead and
 *            the slope the loop's cost per turn.
 */
#include "osm.h"

#include <string.h>

static OSM_NOINLINE void empty_loop(void *ctx, uint64_t n)
{
    (void)ctx;
    for (uint64_t i = 0; i < n; i++)
        OSM_BARRIER(); /* no instruction; keeps the loop a loop at -O2 */
}

static uint64_t series_max = 4096;

static const struct osm_opt opts[] = {
    OSM_OPT_U64("series-max", series_max, 1, 1u << 24, "largest loop count of the series"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "cpu_loop",
    .summary = "Loop overhead per iteration, and whole-loop time over loop counts 0..N.",
    .default_samples = 200,
    .opts = opts,
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);

    struct osm_meas m;
    osm_meas_init(&m, "cpu.loop", o.samples);
    osm_run_batched(&m, empty_loop, NULL, o.iterations, o.samples, 0);

    size_t nx = 1;
    for (uint64_t x = 1; x <= series_max; x *= 2)
        nx++;
    size_t per = o.samples < 50 ? o.samples : 50;
    osm_meas_series(&m, "iterations", m.unit, nx, per);
    for (size_t i = 0; i < nx; i++) {
        uint64_t x = i == 0 ? 0 : 1ull << (i - 1);
        m.sx[i] = (double)x;
        for (size_t w = 0; w < o.warmup; w++)
            empty_loop(NULL, x);
        for (size_t j = 0; j < per; j++) {
            uint32_t c0, c1;
            uint64_t t0 = osm_begin(&c0);
            empty_loop(NULL, x);
            uint64_t t1 = osm_end(&c1);
            m.sy[i * per + j] = (double)(t1 - t0);
        }
    }
    osm_param_str(&m, "series_note", "whole window per loop count, timer overhead not subtracted");
    osm_emit(&m);
    osm_meas_free(&m);
    return 0;
}
