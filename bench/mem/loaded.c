/* loaded.c - memory latency under load (the loaded-latency curve of Intel's
 * Memory Latency Checker).
 *
 * mem.lat.loaded  load-to-use latency of a dependent random chain over
 *                 --size (default 256M) on this CPU, while one thread on every
 *                 other online CPU reads memory of its own at a rate set by a
 *                 delay: a series over load levels (x = level, 0 = no load),
 *                 params.bandwidth_mbs the bandwidth the other CPUs drew at
 *                 each level (measured, a million bytes per second) and
 *                 params.delay the empty-loop turns after each 64 KiB read;
 *                 top-level samples are the heaviest level's
 * A load thread sums every word of 64 KiB of its own buffer (--load-size each,
 * default 256M, read in order so its prefetchers run at full speed), then
 * counts --delays[level] turns of an empty loop, and again. The chain is mem.lat's
 * (64-byte elements in one random cycle, 16 dependent loads per loop turn);
 * a sample is one window of at least 65536 loads, per load. The bytes the
 * load threads read during a level's windows, over the level's time, are its
 * bandwidth. params.pair_rtt_ns (and _after): the least cache-line round trip
 * between this CPU and the load threads', before the levels and after them
 * (osm_pair_rtt): on a guest, one die or two, which decides whether the load
 * reaches the chain's path to memory at all.
 */
#include "osm.h"
#include "osmmem.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
#define STRIDE 64
static uint64_t size = 256ull << 20, load_size = 256ull << 20;
static uint64_t delays[15] = { 65536, 8192, 1024, 128, 0 };
static size_t ndelays = 5;

static const struct osm_opt opts[] = {
    OSM_OPT_SIZE("size", size, 64 * STRIDE, 1ull << 40, "the chain's working set"),
    OSM_OPT_SIZE("load-size", load_size, CHUNK, 1ull << 40, "each load thread's buffer (rounded down to whole chunks)"),
    OSM_OPT_LIST("delays", delays, ndelays, 0, 1ull << 32,
                 "empty-loop turns after each 64 KiB a load thread reads, one per level, lightest first; "
                 "level 0 is always no load"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "mem_loaded",
    .summary = "Memory latency on one CPU while the other CPUs draw rising bandwidth.",
    .default_samples = 9,
    .opts = opts,
};

struct loader {
    pthread_t th;
    char *buf;
    _Atomic uint64_t bytes;
    _Atomic int64_t delay; /* -1: parked */
    _Atomic bool stop;
    int cpu;
};

/* The least cache-line round trip between the chain's CPU and the load
 * threads' (their median), in ns, taken while the loaders are parked or
 * gone: whether the host put the vCPUs on one die, sharing its path to
 * memory, or on two decides what the load does to the chain's latency. */
static double pair_rtt_ns(const struct loader *ld, size_t nl, int me)
{
    double v[CPU_SETSIZE];
    size_t k = 0;
    for (size_t i = 0; i < nl && k < CPU_SETSIZE; i++) {
        double t = osm_pair_rtt(me, ld[i].cpu);
        if (t >= 0)
            v[k++] = t / osm_timer.hz * 1e9;
    }
    return k ? osm_median(v, k) : -1;
}

static void *load(void *arg)
{
    struct loader *l = arg;
    uint64_t off = 0;
    while (!atomic_load_explicit(&l->stop, memory_order_relaxed)) {
        int64_t d = atomic_load_explicit(&l->delay, memory_order_relaxed);
        if (d < 0) {
            usleep(1000);
            continue;
        }
        OSM_USE(osm_sum_words(l->buf + off, CHUNK));
        atomic_fetch_add_explicit(&l->bytes, CHUNK, memory_order_relaxed);
        off = off + CHUNK < load_size ? off + CHUNK : 0;
        for (int64_t i = 0; i < d; i++) /* a plain loop: a guest's pause can exit to the hypervisor */
            OSM_KEEP(i);
    }
    return NULL;
}

static void chase(void *ctx, uint64_t n)
{
    void **p = *(void ***)ctx;
    for (uint64_t i = 0; i < n; i++) {
#define L p = (void **)*p;
        L L L L L L L L L L L L L L L L
#undef L
    }
    OSM_KEEP(p);
    *(void ***)ctx = p;
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    load_size = load_size / CHUNK * CHUNK;
    int me = osm_pin_here(&o); /* the loaders run on the other CPUs */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    struct loader *ld = calloc((size_t)ncpu, sizeof *ld);
    if (!ld)
        osm_die("out of memory");
    size_t nl = 0;
    for (int c = 0; c < ncpu; c++) {
        if (c == me)
            continue;
        struct loader *l = &ld[nl];
        l->buf = osm_buffer(load_size, OSM_PAGES_DEFAULT);
        memset(l->buf, 1, load_size);
        atomic_store(&l->delay, -1);
        l->cpu = c;
        if (osm_thread_on(&l->th, c, load, l) != 0) {
            osm_buffer_free(l->buf, load_size);
            continue;
        }
        nl++;
    }
    if (!nl) {
        osm_refuse("mem.lat.loaded", "no other CPU to run a load thread on (one online CPU, or none allowed)");
        return 0;
    }

    char *buf = osm_buffer(size, OSM_PAGES_SMALL);
    osm_chain_build(buf, size, STRIDE, OSM_CHAIN_RANDOM, 0xA5A5ull ^ size);
    void **p = (void **)buf;
    uint64_t n = size / STRIDE;
    chase(&p, n / 16 + 1);
    uint64_t iters = o.iterations ? o.iterations : osm_autobatch(chase, &p);
    if (iters < 65536 / 16)
        iters = 65536 / 16;

    double rtt_before = pair_rtt_ns(ld, nl, me);
    size_t levels = ndelays + 1;
    struct osm_meas m;
    osm_meas_init(&m, "mem.lat.loaded", o.samples);
    osm_meas_series(&m, "load level (0 = none)", m.unit, levels, o.samples);
    double bw[17];
    for (size_t lv = 0; lv < levels; lv++) {
        osm_progress("load level %zu of %zu", lv + 1, levels);
        for (size_t k = 0; k < nl; k++)
            atomic_store(&ld[k].delay, lv == 0 ? -1 : (int64_t)delays[lv - 1]);
        chase(&p, iters); /* the load threads under way */
        uint64_t b0 = 0, b1 = 0;
        for (size_t k = 0; k < nl; k++)
            b0 += atomic_load(&ld[k].bytes);
        uint64_t t0 = osm_clock_ns();
        for (size_t i = 0; i < o.samples; i++) {
            struct osm_window w;
            bool d;
            osm_window_open(&w);
            chase(&p, iters);
            uint64_t t = osm_window_close(&w, &d);
            m.sx[lv] = (double)lv;
            m.sy[lv * o.samples + i] = ((double)t - osm_timer.overhead) / (double)(iters * 16);
            m.sy_disturbed[lv * o.samples + i] = d;
        }
        uint64_t t1 = osm_clock_ns();
        for (size_t k = 0; k < nl; k++)
            b1 += atomic_load(&ld[k].bytes);
        bw[lv] = (double)(b1 - b0) / ((double)(t1 - t0) / 1e9) / 1e6;
    }
    for (size_t k = 0; k < nl; k++) {
        atomic_store(&ld[k].stop, true);
        pthread_join(ld[k].th, NULL);
        osm_buffer_free(ld[k].buf, load_size);
    }
    double rtt_after = pair_rtt_ns(ld, nl, me);
    for (size_t i = 0; i < o.samples; i++)
        osm_meas_add(&m, m.sy[(levels - 1) * o.samples + i], m.sy_disturbed[(levels - 1) * o.samples + i]);
    struct json *j = osm_param(&m, "bandwidth_mbs");
    json_arr(j);
    for (size_t lv = 0; lv < levels; lv++)
        json_num(j, bw[lv]);
    json_arr_end(j);
    j = osm_param(&m, "delay");
    json_arr(j);
    json_int(j, -1);
    for (size_t lv = 0; lv < ndelays; lv++)
        json_int(j, (long long)delays[lv]);
    json_arr_end(j);
    osm_param_int(&m, "load_threads", (long long)nl);
    if (rtt_before >= 0)
        osm_param_num(&m, "pair_rtt_ns", rtt_before);
    if (rtt_after >= 0)
        osm_param_num(&m, "pair_rtt_ns_after", rtt_after);
    osm_param_int(&m, "cpu", me);
    osm_param_num(&m, "size", (double)size);
    osm_param_num(&m, "load_size", (double)load_size);
    osm_emit(&m);
    osm_meas_free(&m);
    osm_buffer_free(buf, size);
    free(ld);
    return 0;
}
