/* lat.c - memory latency by pointer chasing (lmbench's lat_mem_rd, done so
 * that neither the compiler, the out-of-order core nor a prefetcher can hide
 * a load).
 *
 * The working set is cut into stride-sized elements (64 B: one per cache
 * line); each holds the address of the next one. The order is one random
 * cycle over all elements (Sattolo's algorithm), so the next address is
 * unknown until the load returns and no prefetcher can guess it. The loop
 * does p = *p sixteen times per turn: every load depends on the previous.
 * An in-order chain (mem.lat.stride, --chain sequential) is walked a hundred
 * loads a turn, as lmbench's lat_mem_rd walks it (see chase_body100).
 * --chain pagewise is lmbench's lat_mem_rd -t order (osm_chain_build): every
 * load on another page, so that where the set has more pages than the
 * first-level TLB has entries each load also misses it, where the random
 * order hits it for the share of the pages the TLB holds.
 *
 * mem.lat.curve      cycles per load for each working-set size (a series;
 *                    its top-level samples are those of the largest size)
 * mem.lat.dram.thp   the largest size again, on a buffer with MADV_HUGEPAGE,
 *                    against the curve's 4 KiB pages (MADV_NOHUGEPAGE): the
 *                    difference is the TLB's share of DRAM latency
 * mem.lat.stride     the largest size again, walked in order with a 128-byte
 *                    stride (lmbench's "main mem": a prefetcher can follow it)
 * Per size: the chain is built, walked once in full (warm-up; a set over
 * twice the last cache only over twice the cache's worth of elements, after
 * which the caches hold nothing the build left and the rest would be time
 * spent to no end), then each
 * sample is one window of many loads, timer overhead subtracted, per load.
 */
#include "osm.h"
#include "osmmem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t min_size = 1024, max_size = 512ull << 20, stride = 64;
static unsigned steps_per_octave = 4;
static bool no_thp, max_auto;
static int chain, pages_thp; /* --chain: an enum osm_chain_order; --pages 4k|thp: the index */
static uint64_t stride_walk = 128;
static enum osm_pages curve_pages;

static int parse_max(const char *v)
{
    if (!strcmp(v, "auto"))
        max_auto = true;
    else
        max_size = osm_parse_size("--max", v, 128, 1ull << 40);
    return 0;
}

static const struct osm_opt opts[] = {
    OSM_OPT_SIZE("min", min_size, 128, 1ull << 40, "smallest working set"),
    OSM_OPT_FUNC("max", parse_max, "largest working set, at least 4x the last cache; 'auto' = 4x the last cache",
                 .def = "512M", .arg = "SIZE|auto"),
    OSM_OPT_SIZE("stride", stride, sizeof(void *), 1 << 20, "bytes per chain element"),
    OSM_OPT_UINT("steps", steps_per_octave, 1, 16, "sizes per doubling"),
    OSM_OPT_CHOICE("chain", chain, "random|sequential|pagewise",
                   "sequential: a prefetcher can follow it; pagewise: lmbench's lat_mem_rd -t walk (for comparison)"),
    OSM_OPT_CHOICE("pages", pages_thp, "4k|thp", "pages of the curve's buffers: MADV_NOHUGEPAGE or MADV_HUGEPAGE"),
    OSM_OPT_SIZE("stride-walk", stride_walk, 0, 1 << 20, "stride of mem.lat.stride's in-order walk at the largest size (0: none)"),
    OSM_OPT_FLAG("no-thp", no_thp, "skip the huge-page measurement (mem.lat.dram.thp)"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "mem_lat",
    .summary = "Memory latency by dependent pointer chasing over working-set sizes.",
    .default_samples = 15,
    .opts = opts,
};

struct chase {
    void **p;
};

#define L p = (void **)*p;
#define L10 L L L L L L L L L L
static void chase_body(void *ctx, uint64_t n)
{
    struct chase *c = ctx;
    void **p = c->p;
    for (uint64_t i = 0; i < n; i++) {
        L L L L L L L L L L L L L L L L
    }
    OSM_KEEP(p);
    c->p = p;
}

/* An in-order walk, a hundred loads a turn as lmbench's: each load
 * instruction then strides a hundred elements, and a prefetcher that
 * follows each instruction's stride gets that far ahead (sixteen loads a
 * turn walked a 4 MiB set half again slower on one Xeon guest: see
 * docs/notes). A random chain gives a prefetcher nothing either way. */
static void chase_body100(void *ctx, uint64_t n)
{
    struct chase *c = ctx;
    void **p = c->p;
    for (uint64_t i = 0; i < n; i++) {
        L10 L10 L10 L10 L10 L10 L10 L10 L10 L10
    }
    OSM_KEEP(p);
    c->p = p;
}
#undef L10
#undef L

static unsigned loads_per_turn; /* of the last size measured */
static uint64_t warm_bound; /* elements the warm-up walks at most: twice the last cache's (0: the whole set) */
static const char *const chain_names[] = { "random", "sequential", "pagewise (lmbench's lat_mem_rd -t)" };

/* Samples of cycles per load at one size, appended to out[0..samples). */
static void measure_size(uint64_t size, enum osm_pages pages, size_t samples, uint64_t iters_opt, double *out,
                         bool *disturbed, long *thp_kib)
{
    char *buf = osm_buffer(size, pages);
    osm_chain_build(buf, size, stride, (enum osm_chain_order)chain, 0x9E3779B97F4A7C15ull ^ size);
    bool sequential = chain == OSM_CHAIN_SEQUENTIAL;
    uint64_t n = size / stride;
    struct chase c = { (void **)buf };
    osm_body body = sequential ? chase_body100 : chase_body;
    unsigned per = sequential ? 100 : 16;
    loads_per_turn = per;
    uint64_t warm = warm_bound && n > warm_bound ? warm_bound : n;
    body(&c, warm / per + 1); /* warm-up: every element once, or twice the last cache's worth */
    uint64_t iters = iters_opt ? iters_opt : osm_autobatch(body, &c);
    uint64_t floor_turns = (n < 65536 ? n : 65536) / per; /* each sample sees much of the set */
    if (iters < floor_turns)
        iters = floor_turns;
    for (size_t w = 0; w < osm_warmup_samples; w++)
        body(&c, iters);
    for (size_t i = 0; i < samples; i++) {
        struct osm_window win;
        bool d;
        osm_window_open(&win);
        body(&c, iters);
        uint64_t t = osm_window_close(&win, &d);
        out[i] = ((double)t - osm_timer.overhead) / (double)(iters * per);
        disturbed[i] = d;
    }
    if (thp_kib)
        *thp_kib = osm_thp_kib(buf, size);
    osm_buffer_free(buf, size);
}

/* mem.lat.dram.thp: the largest size again on transparent huge pages, with what the kernel gave. */
static void dram_thp(const struct osm_opts *o, uint64_t size, bool *dist)
{
    struct osm_meas m;
    double *v = malloc(o->samples * sizeof *v);
    long thp_kib = 0;
    if (!v)
        osm_die("out of memory");
    measure_size(size, OSM_PAGES_HUGE, o->samples, o->iterations, v, dist, &thp_kib);
    osm_meas_init(&m, "mem.lat.dram.thp", o->samples);
    for (size_t i = 0; i < o->samples; i++)
        osm_meas_add(&m, v[i], dist[i]);
    const char *mode = osm_thp_mode();
    if (thp_kib <= 0)
        osm_warn("no transparent huge pages were obtained (THP mode: %s); mem.lat.dram.thp used 4 KiB pages",
                 mode);
    osm_param_num(&m, "size", (double)size);
    osm_param_str(&m, "pages", "MADV_HUGEPAGE");
    osm_param_str(&m, "thp_mode", mode);
    osm_param_int(&m, "huge_kib", thp_kib);
    osm_param_num(&m, "huge_fraction", round((double)thp_kib * 1024 / (double)size * 1000) / 1000);
    osm_param_str(&m, "chain", chain_names[chain]);
    osm_emit(&m);
    osm_meas_free(&m);
    free(v);
}

/* mem.lat.stride: the largest size walked in address order, stride_walk bytes a step (what a
 * prefetcher makes of it); the curve's stride and chain put back after. */
static void stride_at(const struct osm_opts *o, uint64_t size, bool *dist)
{
    struct osm_meas m;
    uint64_t keep_stride = stride;
    int keep_chain = chain;
    double *v = malloc(o->samples * sizeof *v);
    if (!v)
        osm_die("out of memory");
    stride = stride_walk;
    chain = OSM_CHAIN_SEQUENTIAL;
    measure_size(size / stride * stride, curve_pages, o->samples, o->iterations, v, dist, NULL);
    osm_meas_init(&m, "mem.lat.stride", o->samples);
    for (size_t i = 0; i < o->samples; i++)
        osm_meas_add(&m, v[i], dist[i]);
    osm_param_num(&m, "size", (double)(size / stride * stride));
    osm_param_num(&m, "stride", (double)stride);
    osm_param_str(&m, "chain", "sequential (each element to the next one up)");
    osm_param_int(&m, "loads_per_turn", loads_per_turn);
    osm_emit(&m);
    osm_meas_free(&m);
    stride = keep_stride;
    chain = keep_chain;
    free(v);
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    curve_pages = pages_thp ? OSM_PAGES_HUGE : OSM_PAGES_SMALL;

    uint64_t llc = osm_cache_size(osm_cache_levels());
    if (max_auto)
        max_size = llc ? 4 * llc : 512ull << 20;
    else if (llc && max_size < 4 * llc && max_size == 512ull << 20)
        max_size = 4 * llc;
    if (min_size > max_size)
        osm_usage_error("--min is larger than --max");
    warm_bound = llc ? 2 * llc / stride : 0;
    if (min_size < 2 * stride)
        osm_usage_error("--min must hold at least two elements of --stride %llu bytes", (unsigned long long)stride);
    if (max_size / stride > UINT32_MAX)
        osm_usage_error("--max / --stride exceeds 2^32 elements");
    if (chain == OSM_CHAIN_PAGEWISE) { /* whole pages of several elements, as -t walks them */
        uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), per = page / stride;
        if (page % stride || per < 2 || (per & (per - 1)))
            osm_usage_error("--chain pagewise: --stride must divide the page (%llu bytes) into a power of two "
                            "of at least 2 elements", (unsigned long long)page);
        if (min_size % page || max_size % page)
            osm_usage_error("--chain pagewise: --min and --max must be whole pages (%llu bytes)",
                            (unsigned long long)page);
    }

    /* Stay within free memory: the buffer, its chain index, and room to spare. */
    uint64_t avail = osm_mem_available();
    uint64_t bound = avail ? avail / 2 : max_size;
    uint64_t per_byte = 1 + 4 / stride + 1; /* buffer + 4-byte index per element, rounded up */
    bool stopped_early = false;
    if (max_size * per_byte > bound) {
        uint64_t fit = bound / per_byte;
        osm_warn("stopping the curve at %llu MiB instead of %llu MiB: only %llu MiB of memory is available",
                 (unsigned long long)(fit >> 20), (unsigned long long)(max_size >> 20),
                 (unsigned long long)(avail >> 20));
        max_size = fit;
        stopped_early = true;
    }

    /* sizes: powers of two and steps_per_octave - 1 between, from min to max */
    size_t cap = 0;
    double sizes[4096];
    for (double e = log2((double)min_size); cap < 4096; e += 1.0 / steps_per_octave) {
        uint64_t s = (uint64_t)llround(pow(2.0, e));
        uint64_t unit = chain == OSM_CHAIN_PAGEWISE ? (uint64_t)sysconf(_SC_PAGESIZE) : stride;
        s = s / unit * unit; /* pagewise: whole pages */
        if (s > max_size)
            break;
        if (cap == 0 || s != (uint64_t)sizes[cap - 1])
            sizes[cap++] = (double)s;
    }
    if ((uint64_t)sizes[cap - 1] != max_size / stride * stride && cap < 4096)
        sizes[cap++] = (double)(max_size / stride * stride);

    struct osm_meas m;
    osm_meas_init(&m, "mem.lat.curve", o.samples);
    osm_meas_series(&m, "bytes", m.unit, cap, o.samples);
    bool *dist = calloc(o.samples, sizeof *dist);
    if (!dist)
        osm_die("out of memory");
    for (size_t k = 0; k < cap; k++) {
        m.sx[k] = sizes[k];
        osm_progress("size %zu of %zu: %.0f KiB", k + 1, cap, sizes[k] / 1024);
        measure_size((uint64_t)sizes[k], curve_pages, o.samples, o.iterations, &m.sy[k * o.samples],
                     &m.sy_disturbed[k * o.samples], NULL);
    }
    for (size_t i = 0; i < o.samples; i++) /* top level: the largest size */
        osm_meas_add(&m, m.sy[(cap - 1) * o.samples + i], m.sy_disturbed[(cap - 1) * o.samples + i]);
    osm_param_str(&m, "chain", chain_names[chain]);
    osm_param_num(&m, "stride", (double)stride);
    osm_param_str(&m, "pages", curve_pages == OSM_PAGES_HUGE ? "thp (MADV_HUGEPAGE)" : "4k (MADV_NOHUGEPAGE)");
    osm_param_num(&m, "samples_at", round(sizes[cap - 1]));
    osm_param_num(&m, "min", (double)min_size);
    osm_param_num(&m, "max", (double)max_size);
    osm_param_int(&m, "steps_per_octave", steps_per_octave);
    osm_param_bool(&m, "stopped_early", stopped_early);
    osm_param_num(&m, "mem_available", (double)avail);
    osm_param_num(&m, "llc_sysfs", (double)llc);
    osm_param_num(&m, "warmup_elements_max", (double)warm_bound); /* 0: every size walked in full */
    osm_emit(&m);
    osm_meas_free(&m);

    if (!no_thp)
        dram_thp(&o, (uint64_t)sizes[cap - 1], dist);
    if (stride_walk)
        stride_at(&o, (uint64_t)sizes[cap - 1], dist);
    free(dist);
    return 0;
}
