/* batch.c - taking samples: how many operations make a window whose timer
 * cost is under 1%, one window per sample, and several operations'
 * samples taken in turn so that drift hits them alike. */
#include "osm.h"

#include <stdlib.h>
#include <string.h>

size_t osm_warmup_samples = 2;

uint64_t osm_autobatch(osm_body body, void *ctx)
{
    /* Window long enough that the timer's overhead is under 1% of it, that
     * one step of the timer is under 1% of it (100 steps: a 24 MHz aarch64
     * counter ticks every 42 ns, a guest's scaled TSC may step by tens of
     * ticks), and at least 20 us. The target has a quarter's headroom:
     * calibration keeps the quickest of three windows, yet later windows can
     * be quicker still (a cold first pass, a clock ramping up, a translator
     * under emulation), and every sample's window must keep the floor. */
    double want = osm_window_floor_ticks() * 1.25;
    uint64_t n = 1;
    for (;;) {
        double best = 1e300;
        for (int k = 0; k < 3; k++) {
            uint32_t c0, c1;
            uint64_t t0 = osm_begin(&c0);
            body(ctx, n);
            uint64_t t1 = osm_end(&c1);
            if ((double)(t1 - t0) < best)
                best = (double)(t1 - t0);
        }
        if (best >= want || n >= (1ull << 40))
            return n;
        /* grow geometrically toward the target, at most 16x per step */
        double grow = want / (best > 1 ? best : 1);
        if (grow > 16)
            grow = 16;
        if (grow < 2)
            grow = 2;
        n = (uint64_t)((double)n * grow) + 1;
    }
}

static void one_sample(struct osm_meas *m, osm_body body, void *ctx, uint64_t iters, double per_iter_subtract)
{
    struct osm_window w;
    bool dist;
    osm_window_open(&w);
    body(ctx, iters);
    uint64_t t = osm_window_close(&w, &dist);
    osm_sample_ops(iters);
    osm_meas_add(m, ((double)t - osm_timer.overhead) / (double)iters - per_iter_subtract, dist);
}

void osm_run_interleaved(size_t n, struct osm_meas *m, const osm_body *body, void *const *ctx, uint64_t iters,
                         size_t samples, const double *per_iter_subtract)
{
    uint64_t it[n];
    for (size_t k = 0; k < n; k++) {
        it[k] = iters ? iters : osm_autobatch(body[k], ctx[k]);
        for (size_t i = 0; i < osm_warmup_samples; i++)
            body[k](ctx[k], it[k]);
    }
    for (size_t i = 0; i < samples; i++)
        for (size_t k = 0; k < n; k++)
            one_sample(&m[k], body[k], ctx[k], it[k], per_iter_subtract ? per_iter_subtract[k] : 0);
    for (size_t k = 0; k < n; k++) {
        double sub = per_iter_subtract ? per_iter_subtract[k] : 0;
        m[k].overhead_subtracted = osm_timer.overhead / (double)it[k] + sub;
        osm_param_int(&m[k], "iterations_per_sample", (long long)it[k]);
        if (n > 1)
            osm_param_int(&m[k], "interleaved_with", (long long)(n - 1));
    }
}

void osm_run_batched(struct osm_meas *m, osm_body body, void *ctx, uint64_t iters,
                     size_t samples, double per_iter_subtract)
{
    osm_run_interleaved(1, m, &body, &ctx, iters, samples, &per_iter_subtract);
}
