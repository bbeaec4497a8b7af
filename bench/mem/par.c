/* par.c - memory-level parallelism: how many loads the memory system serves
 * at once, per level (lmbench's par_mem).
 *
 * mem.par  loads in flight: for each working-set size (a series; the
 *          top-level samples are the largest size's, meant to be memory),
 *          the time per load of one dependent chain over the time per load
 *          of K chains walked together, the largest over K = 1 .. 16
 * The set is one random cycle of 64-byte elements (Sattolo), as mem.lat's;
 * K pointers start evenly spaced along it and each follows its own part, so
 * the K loads of a step are independent of one another while each pointer's
 * loads stay dependent. If the memory system served one load at a time, K
 * chains would take K times as long and the ratio would stay 1; it grows
 * with the misses a core keeps outstanding (its fill buffers) until the
 * level's bandwidth or the core's window stops it. A sample is one window
 * per K, the K taken in turn.
 */
#include "osm.h"
#include "osmmem.h"

#include <stdlib.h>
#include <string.h>

#define STRIDE 64
#define STEPS 16 /* loads per chain per loop turn */
static uint64_t sizes[16], mem_size = 256ull << 20;
static size_t nsizes;

static const struct osm_opt opts[] = {
    OSM_OPT_SIZE_LIST("sizes", sizes, nsizes, 64 * STRIDE, 1ull << 40, "working sets, a list",
                      .def = "half of each cache level sysfs names up to 32M, and --mem-size"),
    OSM_OPT_SIZE("mem-size", mem_size, 64 * STRIDE, 1ull << 40, "the largest default working set, for memory"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "mem_par",
    .summary = "Memory-level parallelism: loads served at once, per working-set size.",
    .default_samples = 9,
    .opts = opts,
};

struct walk {
    void **p[16];
};

#define CHASE(K)                                                                                             \
    static void chase##K(void *ctx, uint64_t n)                                                              \
    {                                                                                                        \
        struct walk *w = ctx;                                                                                \
        void **p[K];                                                                                         \
        for (int j = 0; j < K; j++)                                                                          \
            p[j] = w->p[j];                                                                                  \
        for (uint64_t i = 0; i < n; i++)                                                                     \
            for (int s = 0; s < STEPS; s++)                                                                  \
                for (int j = 0; j < K; j++)                                                                  \
                    p[j] = (void **)*p[j];                                                                   \
        for (int j = 0; j < K; j++) {                                                                        \
            OSM_KEEP(p[j]);                                                                                  \
            w->p[j] = p[j];                                                                                  \
        }                                                                                                    \
    }
CHASE(1)
CHASE(2)
CHASE(3)
CHASE(4)
CHASE(6)
CHASE(8)
CHASE(10)
CHASE(12)
CHASE(16)

static const int ks[] = { 1, 2, 3, 4, 6, 8, 10, 12, 16 };
static const osm_body chase[] = { chase1, chase2, chase3, chase4, chase6, chase8, chase10, chase12, chase16 };
#define NK (sizeof ks / sizeof ks[0])

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    if (!nsizes) {
        for (int lv = 1; lv <= osm_cache_levels() && nsizes < 15; lv++)
            if (osm_cache_size(lv) && osm_cache_size(lv) / 2 <= (32u << 20) && osm_cache_size(lv) / 2 < mem_size)
                sizes[nsizes++] = osm_cache_size(lv) / 2;
        sizes[nsizes++] = mem_size;
    }
    struct osm_meas m;
    osm_meas_init(&m, "mem.par", o.samples);
    osm_meas_series(&m, "bytes", "loads", nsizes, o.samples);
    int best_k[16];
    double lat_one[16];
    for (size_t z = 0; z < nsizes; z++) {
        uint64_t size = sizes[z] / STRIDE * STRIDE, n = size / STRIDE;
        m.sx[z] = (double)size;
        osm_progress("size %zu of %zu", z + 1, nsizes);
        char *buf = osm_buffer(size, OSM_PAGES_SMALL);
        osm_chain_build(buf, size, STRIDE, OSM_CHAIN_RANDOM, 0x51ED27ull ^ size);
        /* the K starts: evenly spaced addresses, so at random places of the
         * cycle, far apart along it (a window walks a small part of it) */
        struct walk w[NK];
        for (size_t a = 0; a < NK; a++)
            for (int j = 0; j < ks[a]; j++)
                w[a].p[j] = (void **)(buf + (uint64_t)j * (n / (uint64_t)ks[a]) * STRIDE);
        uint64_t iters[NK];
        uint64_t turns = (n < 65536 ? n : 65536) / STEPS;
        for (size_t a = 0; a < NK; a++) {
            iters[a] = o.iterations ? o.iterations : osm_autobatch(chase[a], &w[a]);
            if (iters[a] < turns / (uint64_t)ks[a] + 1)
                iters[a] = turns / (uint64_t)ks[a] + 1;
            chase[a](&w[a], iters[a]); /* warm */
        }
        double best_sum = 0;
        int bestk_hist[NK] = { 0 };
        double lat1_sum = 0;
        for (size_t i = 0; i < o.samples; i++) {
            double per_load[NK];
            bool dist = false;
            for (size_t a = 0; a < NK; a++) {
                struct osm_window win;
                bool d;
                osm_window_open(&win);
                chase[a](&w[a], iters[a]);
                uint64_t t = osm_window_close(&win, &d);
                dist |= d;
                per_load[a] = ((double)t - osm_timer.overhead) / (double)(iters[a] * STEPS * (uint64_t)ks[a]);
            }
            double best = 0;
            size_t at = 0;
            for (size_t a = 0; a < NK; a++)
                if (per_load[0] / per_load[a] > best) {
                    best = per_load[0] / per_load[a];
                    at = a;
                }
            bestk_hist[at]++;
            best_sum += best;
            lat1_sum += per_load[0];
            m.sy[z * o.samples + i] = best;
            m.sy_disturbed[z * o.samples + i] = dist;
        }
        (void)best_sum;
        size_t mode = 0;
        for (size_t a = 0; a < NK; a++)
            if (bestk_hist[a] > bestk_hist[mode])
                mode = a;
        best_k[z] = ks[mode];
        lat_one[z] = lat1_sum / (double)o.samples;
        osm_buffer_free(buf, size);
    }
    struct json *jk = osm_param(&m, "best_k");
    json_arr(jk);
    for (size_t z = 0; z < nsizes; z++)
        json_int(jk, best_k[z]);
    json_arr_end(jk);
    struct json *jl = osm_param(&m, "latency_one_chain");
    json_arr(jl);
    for (size_t z = 0; z < nsizes; z++)
        json_num(jl, lat_one[z]);
    json_arr_end(jl);
    for (size_t i = 0; i < o.samples; i++)
        osm_meas_add(&m, m.sy[(nsizes - 1) * o.samples + i], m.sy_disturbed[(nsizes - 1) * o.samples + i]);
    m.unit = "loads";
    m.overhead_subtracted = 0;
    osm_param_str(&m, "method", "max over K of (time per load, 1 chain) / (time per load, K chains)");
    struct json *jks = osm_param(&m, "k_tried");
    json_arr(jks);
    for (size_t a = 0; a < NK; a++)
        json_int(jks, ks[a]);
    json_arr_end(jks);
    osm_param_num(&m, "stride", STRIDE);
    osm_param_num(&m, "samples_at", (double)sizes[nsizes - 1]);
    osm_emit(&m);
    osm_meas_free(&m);
    return 0;
}
