/* bw.c - memory bandwidth: read, write, copy; in cache and out of it; one
 * thread and one thread per online CPU.
 *
 * read        sum of the buffer with the widest loads the CPU has (AVX2 32 B,
 *             else SSE2 16 B), four accumulators, 256 B per loop turn
 * write       stores of the same width; write.nt with non-temporal stores
 *             (they bypass the caches: no read-for-ownership)
 * copy        memcpy; copy.loop a plain vector load/store loop
 * Sizes: "cache" = half the L1 data cache (copy: half for each buffer),
 * otherwise max(8 x last cache, 256 MiB) per thread. A sample is one window
 * of whole passes over the buffer (at least 5 ms); MB/s = 10^6 bytes/s of
 * buffer read, written or copied (copy counts each byte once, as memcpy
 * benchmarks do). .mt: every thread on its own CPU and buffer, started and
 * stopped together by a barrier; the sum of their bytes over the window.
 * --buffers memory|cache takes one side only, --buffers mt the .mt figures
 * alone: the harness runs the cheap in-cache figures in several processes a
 * run, the one-thread out-of-cache figures (--no-mt) in a few, and the .mt
 * figures, whose buffers are every CPU's, in one.
 */
#include "osm.h"
#include "osmmem.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

enum kernel { K_READ, K_WRITE, K_WRITE_NT, K_COPY, K_COPY_LOOP };
static const char *kernel_name[] = { "read", "write", "write.nt", "copy", "copy.loop" };

static uint64_t big_size, cache_size;
static const char *size_rule = "--size"; /* how the out-of-cache size was chosen */
static bool no_mt;
enum { B_ALL, B_MEMORY, B_CACHE, B_MT };
static int buffers_only = B_ALL; /* --buffers */

/* ------------------------------------------------------------- kernels */

#if HAVE_X86
__attribute__((target("avx2"))) static uint64_t read_avx2(const char *p, size_t n)
{
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i < n; i += 256) {
        a = _mm256_add_epi64(a, _mm256_load_si256((const __m256i *)(p + i)));
        b = _mm256_add_epi64(b, _mm256_load_si256((const __m256i *)(p + i + 32)));
        c = _mm256_add_epi64(c, _mm256_load_si256((const __m256i *)(p + i + 64)));
        d = _mm256_add_epi64(d, _mm256_load_si256((const __m256i *)(p + i + 96)));
        a = _mm256_add_epi64(a, _mm256_load_si256((const __m256i *)(p + i + 128)));
        b = _mm256_add_epi64(b, _mm256_load_si256((const __m256i *)(p + i + 160)));
        c = _mm256_add_epi64(c, _mm256_load_si256((const __m256i *)(p + i + 192)));
        d = _mm256_add_epi64(d, _mm256_load_si256((const __m256i *)(p + i + 224)));
    }
    a = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
    return (uint64_t)_mm256_extract_epi64(a, 0) + (uint64_t)_mm256_extract_epi64(a, 2);
}

__attribute__((target("avx2"))) static void write_avx2(char *p, size_t n, bool nt)
{
    __m256i v = _mm256_set1_epi64x((long long)n);
    if (nt) {
        for (size_t i = 0; i < n; i += 128) {
            _mm256_stream_si256((__m256i *)(p + i), v);
            _mm256_stream_si256((__m256i *)(p + i + 32), v);
            _mm256_stream_si256((__m256i *)(p + i + 64), v);
            _mm256_stream_si256((__m256i *)(p + i + 96), v);
        }
        _mm_sfence();
    } else {
        for (size_t i = 0; i < n; i += 128) {
            _mm256_store_si256((__m256i *)(p + i), v);
            _mm256_store_si256((__m256i *)(p + i + 32), v);
            _mm256_store_si256((__m256i *)(p + i + 64), v);
            _mm256_store_si256((__m256i *)(p + i + 96), v);
        }
    }
}

__attribute__((target("avx2"))) static void copy_avx2(char *d, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i += 128) {
        __m256i a = _mm256_load_si256((const __m256i *)(s + i));
        __m256i b = _mm256_load_si256((const __m256i *)(s + i + 32));
        __m256i c = _mm256_load_si256((const __m256i *)(s + i + 64));
        __m256i e = _mm256_load_si256((const __m256i *)(s + i + 96));
        _mm256_store_si256((__m256i *)(d + i), a);
        _mm256_store_si256((__m256i *)(d + i + 32), b);
        _mm256_store_si256((__m256i *)(d + i + 64), c);
        _mm256_store_si256((__m256i *)(d + i + 96), e);
    }
}

static uint64_t read_sse2(const char *p, size_t n)
{
    __m128i a = _mm_setzero_si128(), b = a, c = a, d = a;
    for (size_t i = 0; i < n; i += 64) {
        a = _mm_add_epi64(a, _mm_load_si128((const __m128i *)(p + i)));
        b = _mm_add_epi64(b, _mm_load_si128((const __m128i *)(p + i + 16)));
        c = _mm_add_epi64(c, _mm_load_si128((const __m128i *)(p + i + 32)));
        d = _mm_add_epi64(d, _mm_load_si128((const __m128i *)(p + i + 48)));
    }
    a = _mm_add_epi64(_mm_add_epi64(a, b), _mm_add_epi64(c, d));
    return (uint64_t)_mm_cvtsi128_si64(a) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(a, a));
}

static void write_sse2(char *p, size_t n, bool nt)
{
    __m128i v = _mm_set1_epi64x((long long)n);
    for (size_t i = 0; i < n; i += 64) {
        if (nt) {
            _mm_stream_si128((__m128i *)(p + i), v);
            _mm_stream_si128((__m128i *)(p + i + 16), v);
            _mm_stream_si128((__m128i *)(p + i + 32), v);
            _mm_stream_si128((__m128i *)(p + i + 48), v);
        } else {
            _mm_store_si128((__m128i *)(p + i), v);
            _mm_store_si128((__m128i *)(p + i + 16), v);
            _mm_store_si128((__m128i *)(p + i + 32), v);
            _mm_store_si128((__m128i *)(p + i + 48), v);
        }
    }
    if (nt)
        _mm_sfence();
}

static void copy_sse2(char *d, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i += 64) {
        __m128i a = _mm_load_si128((const __m128i *)(s + i));
        __m128i b = _mm_load_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_load_si128((const __m128i *)(s + i + 32));
        __m128i e = _mm_load_si128((const __m128i *)(s + i + 48));
        _mm_store_si128((__m128i *)(d + i), a);
        _mm_store_si128((__m128i *)(d + i + 16), b);
        _mm_store_si128((__m128i *)(d + i + 32), c);
        _mm_store_si128((__m128i *)(d + i + 48), e);
    }
}
static bool use_avx2;
#endif

/* Portable fallbacks: 8-byte words, 4 accumulators. */
static uint64_t read_words(const char *p, size_t n)
{
    const uint64_t *w = (const uint64_t *)p;
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i < n / 8; i += 4) {
        a += w[i];
        b += w[i + 1];
        c += w[i + 2];
        d += w[i + 3];
    }
    return a + b + c + d;
}

static void write_words(char *p, size_t n)
{
    uint64_t *w = (uint64_t *)p;
    for (size_t i = 0; i < n / 8; i++) {
        w[i] = i;
        OSM_BARRIER(); /* keeps the loop from becoming a memset call */
    }
}

static void copy_words(char *d, const char *s, size_t n)
{
    for (size_t i = 0; i < n / 8; i++) {
        ((uint64_t *)d)[i] = ((const uint64_t *)s)[i];
        OSM_BARRIER(); /* keeps the loop from becoming a memcpy call */
    }
}

static const char *width(void)
{
#if HAVE_X86
    return use_avx2 ? "avx2 (32 B)" : "sse2 (16 B)";
#else
    return "64-bit words";
#endif
}

/* One pass of a kernel over a buffer (dst) and, for copies, a source. */
static void pass(enum kernel k, char *dst, const char *src, size_t n)
{
    uint64_t sum;
    switch (k) {
    case K_READ:
#if HAVE_X86
        sum = use_avx2 ? read_avx2(dst, n) : read_sse2(dst, n);
#else
        sum = read_words(dst, n);
#endif
        OSM_KEEP(sum);
        (void)read_words;
        break;
    case K_WRITE:
    case K_WRITE_NT:
#if HAVE_X86
        if (use_avx2)
            write_avx2(dst, n, k == K_WRITE_NT);
        else
            write_sse2(dst, n, k == K_WRITE_NT);
#else
        write_words(dst, n);
#endif
        (void)write_words;
        break;
    case K_COPY:
        memcpy(dst, src, n);
        break;
    case K_COPY_LOOP:
#if HAVE_X86
        if (use_avx2)
            copy_avx2(dst, src, n);
        else
            copy_sse2(dst, src, n);
#else
        copy_words(dst, src, n);
#endif
        (void)copy_words;
        break;
    }
    OSM_BARRIER();
}

/* The most bytes one timed pass of the single-thread figures covers. */
#define PASS_BYTES ((size_t)16 << 20)

static bool is_copy(enum kernel k) { return k == K_COPY || k == K_COPY_LOOP; }

/* One pass over the stretch at off; the offset of the next stretch (back to 0 past the end). */
static size_t next_pass(enum kernel k, char *dst, const char *src, size_t size, size_t stretch, size_t off)
{
    pass(k, dst + off, src ? src + off : NULL, stretch);
    return off + 2 * stretch <= size ? off + stretch : 0;
}

/* ------------------------------------------------------ single thread */

static void measure_single(struct osm_meas *m, enum kernel k, size_t size, size_t samples)
{
    char *dst = osm_buffer(size, OSM_PAGES_DEFAULT);
    char *src = is_copy(k) ? osm_buffer(size, OSM_PAGES_DEFAULT) : NULL;
    memset(dst, 1, size); /* fault every page in before timing */
    if (src)
        memset(src, 2, size);
    pass(k, dst, src, size);
    /* A pass is one stretch of the buffer, the next one each time, round and round: a stretch of a
     * buffer that passes the caches was last touched a whole buffer ago, so it is out of cache too,
     * and a sample stays a short window (at least 5 ms) however large the buffer: a long one is
     * seldom left undisturbed. memcpy alone is called on the whole buffer: glibc picks its method by
     * length (non-temporal stores above a threshold it sets from the cache size), and the figure is
     * that of copying the buffer. */
    size_t stretch = size < PASS_BYTES || k == K_COPY ? size : PASS_BYTES, off = 0;
    uint32_t c0, c1;
    uint64_t t0 = osm_begin(&c0);
    off = next_pass(k, dst, src, size, stretch, off);
    uint64_t one = osm_end(&c1) - t0;
    uint64_t passes = (uint64_t)(osm_timer.hz * 5e-3 / (double)(one ? one : 1)) + 1;
    for (size_t w = 0; w < osm_warmup_samples; w++)
        off = next_pass(k, dst, src, size, stretch, off);
    for (size_t i = 0; i < samples; i++) {
        struct osm_window win;
        bool d;
        osm_window_open(&win);
        for (uint64_t p = 0; p < passes; p++)
            off = next_pass(k, dst, src, size, stretch, off);
        uint64_t t = osm_window_close(&win, &d);
        double secs = ((double)t - osm_timer.overhead) / osm_timer.hz;
        osm_meas_add(m, (double)(passes * stretch) / secs / 1e6, d);
    }
    osm_param_num(m, "bytes", (double)size);
    osm_param_num(m, "bytes_per_pass", (double)stretch);
    osm_param_num(m, "passes_per_sample", (double)passes);
    osm_param_int(m, "threads", 1);
    osm_param_str(m, "width", k == K_COPY ? "memcpy" : width());
    osm_buffer_free(dst, size);
    if (src)
        osm_buffer_free(src, size);
}

/* ------------------------------------------------------ all CPUs at once */

struct mt {
    pthread_barrier_t start, stop;
    enum kernel k;
    size_t size;
    uint64_t passes;
    size_t samples;
};

struct worker {
    struct mt *mt;
    int cpu;
    char *dst, *src;
    pthread_t th;
    double *own; /* per sample: this thread's MB/s over its own passes (from the start barrier to its last pass) */
};

static void worker_prepare(struct worker *w)
{
    if (osm_pin(w->cpu) != 0)
        osm_die("cannot pin a bandwidth thread to CPU %d", w->cpu);
    w->dst = osm_buffer(w->mt->size, OSM_PAGES_DEFAULT); /* first touch on its own CPU */
    memset(w->dst, 1, w->mt->size);
    w->src = is_copy(w->mt->k) ? osm_buffer(w->mt->size, OSM_PAGES_DEFAULT) : NULL;
    if (w->src)
        memset(w->src, 2, w->mt->size);
}

static void worker_run(struct worker *w)
{
    struct mt *mt = w->mt;
    for (size_t i = 0; i < osm_warmup_samples + mt->samples; i++) {
        pthread_barrier_wait(&mt->start);
        uint64_t t0 = osm_stamp();
        for (uint64_t p = 0; p < mt->passes; p++)
            pass(mt->k, w->dst, w->src, mt->size);
        uint64_t t1 = osm_stamp();
        if (i >= osm_warmup_samples)
            w->own[i - osm_warmup_samples] = (double)(mt->passes * mt->size) / ((double)(t1 - t0) / osm_timer.hz) / 1e6;
        pthread_barrier_wait(&mt->stop);
    }
    osm_buffer_free(w->dst, mt->size);
    if (w->src)
        osm_buffer_free(w->src, mt->size);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    worker_prepare(w);
    worker_run(w);
    return NULL;
}

/* The least round trip of a cache line between this thread's CPU and each
 * other worker's, their median, in ns: where the host put the vCPUs (one die
 * sharing its path to memory, or several) moves the .mt sum. */
static double pair_rtt_ns(const struct worker *w, int n, int self_cpu)
{
    double v[CPU_SETSIZE];
    int k = 0;
    for (int i = 1; i < n; i++) {
        double t = osm_pair_rtt(self_cpu, w[i].cpu);
        if (t >= 0)
            v[k++] = t / osm_timer.hz * 1e9;
    }
    return k ? osm_median(v, (size_t)k) : -1;
}

static void measure_mt(struct osm_meas *m, enum kernel k, size_t size, size_t samples, int self_cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c = 0; c < CPU_SETSIZE; c++) /* every online CPU the process may use */
        if (osm_pin(c) == 0)
            CPU_SET(c, &set);
    int n = CPU_COUNT(&set);
    struct worker *w = calloc((size_t)n, sizeof *w);
    struct mt mt = { .k = k, .size = size, .passes = 2, .samples = samples };
    if (!w)
        osm_die("out of memory");
    pthread_barrier_init(&mt.start, NULL, (unsigned)n);
    pthread_barrier_init(&mt.stop, NULL, (unsigned)n);
    int j = 0;
    w[j++].cpu = self_cpu; /* this thread is worker 0 */
    for (int c = 0; c < CPU_SETSIZE && j < n; c++)
        if (CPU_ISSET(c, &set) && c != self_cpu)
            w[j++].cpu = c;
    for (int i = 0; i < n; i++) {
        w[i].mt = &mt;
        if (!(w[i].own = calloc(samples ? samples : 1, sizeof *w[i].own)))
            osm_die("out of memory");
    }
    for (int i = 1; i < n; i++)
        if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0)
            osm_die("pthread_create failed");
    worker_prepare(&w[0]);
    double rtt_before = -1;
    for (size_t i = 0; i < osm_warmup_samples + samples; i++) {
        uint32_t c0, c1;
        if (i == osm_warmup_samples && n > 1) /* the others wait at the barrier, their buffers made */
            rtt_before = pair_rtt_ns(w, n, self_cpu);
        pthread_barrier_wait(&mt.start);
        uint64_t t0 = osm_begin(&c0);
        for (uint64_t p = 0; p < mt.passes; p++)
            pass(k, w[0].dst, w[0].src, size);
        uint64_t own1 = osm_stamp();
        if (i >= osm_warmup_samples)
            w[0].own[i - osm_warmup_samples] = (double)(mt.passes * size) / ((double)(own1 - t0) / osm_timer.hz) / 1e6;
        pthread_barrier_wait(&mt.stop);
        uint64_t t1 = osm_end(&c1);
        if (i >= osm_warmup_samples) {
            double secs = ((double)(t1 - t0) - osm_timer.overhead) / osm_timer.hz;
            osm_meas_add(m, (double)(mt.passes * size) * n / secs / 1e6, c0 != c1);
        }
    }
    osm_buffer_free(w[0].dst, size);
    if (w[0].src)
        osm_buffer_free(w[0].src, size);
    for (int i = 1; i < n; i++)
        pthread_join(w[i].th, NULL);
    osm_pin(self_cpu);
    double rtt_after = n > 1 ? pair_rtt_ns(w, n, self_cpu) : -1;
    if (rtt_before >= 0)
        osm_param_num(m, "pair_rtt_ns", rtt_before);
    if (rtt_after >= 0)
        osm_param_num(m, "pair_rtt_ns_after", rtt_after);
    osm_param_num(m, "bytes_per_thread", (double)size);
    osm_param_int(m, "threads", n);
    osm_param_num(m, "passes_per_sample", (double)mt.passes);
    osm_param_str(m, "width", k == K_COPY ? "memcpy" : width());
    /* each thread's own rate, its median over the samples: a sum that falls short of n x one thread's
       shows whether one thread was slow (its CPU shared, on the host too) or all of them (the memory) */
    struct json *jp = osm_param(m, "thread_cpus");
    json_arr(jp);
    for (int i = 0; i < n; i++)
        json_int(jp, w[i].cpu);
    json_arr_end(jp);
    jp = osm_param(m, "thread_mbs");
    json_arr(jp);
    for (int i = 0; i < n; i++) {
        json_fixed(jp, samples ? osm_median(w[i].own, samples) : 0, 1);
        free(w[i].own);
    }
    json_arr_end(jp);
    pthread_barrier_destroy(&mt.start);
    pthread_barrier_destroy(&mt.stop);
    free(w);
}

/* ---------------------------------------------------------------- main */

static const struct osm_opt opts[] = {
    OSM_OPT_SIZE("size", big_size, 4096, 1ull << 40, "out-of-cache buffer per thread",
                 .def = "8 x the last cache, within 256M..max(1G, 2 x the cache)"),
    OSM_OPT_SIZE("cache-size", cache_size, 4096, 1ull << 30, "in-cache buffer", .def = "half the L1 data cache"),
    OSM_OPT_FLAG("no-mt", no_mt, "skip the one-thread-per-CPU measurements"),
    OSM_OPT_CHOICE("buffers", buffers_only, "all|memory|cache|mt",
                   "the figures out of cache (with .mt), those in the L1 cache, both, or the .mt ones alone"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "mem_bw",
    .summary = "Memory bandwidth (MB/s): read, write, non-temporal write, copy; in and out of cache; all CPUs.",
    .default_samples = 10,
    .opts = opts,
};

static void emit_one(const char *id, enum kernel k, size_t size, size_t samples, int mt_cpu)
{
    struct osm_meas m;
    osm_meas_init(&m, id, samples);
    m.unit = "MB/s";
    if (mt_cpu >= 0)
        measure_mt(&m, k, size, samples, mt_cpu);
    else
        measure_single(&m, k, size, samples);
    osm_param_str(&m, "kernel", kernel_name[k]);
    if (size == big_size)
        osm_param_str(&m, "size_rule", size_rule);
    osm_emit(&m);
    osm_meas_free(&m);
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    if (buffers_only == B_MT && no_mt)
        osm_usage_error("--buffers mt takes only the .mt figures, which --no-mt skips");
#if HAVE_X86
    __builtin_cpu_init();
    use_avx2 = __builtin_cpu_supports("avx2");
#endif
    uint64_t llc = osm_cache_size(osm_cache_levels());
    uint64_t l1 = osm_cache_size(1);
    int cpu = (int)osm_current_cpu();
    if (o.cpu < 0)
        osm_pin(cpu);
    int ncpu = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        ncpu += osm_pin(c) == 0;
    osm_pin(cpu);
    /* At most half of the available memory, in two buffers (a copy's) per thread. */
    uint64_t buffers = 2 * (uint64_t)(no_mt ? 1 : ncpu);
    uint64_t avail = osm_mem_available();
    uint64_t fit = avail ? (avail / 2 / buffers) & ~((1ull << 20) - 1) : UINT64_MAX;
    if (!big_size) {
        /* 8 x the last cache, within 256 MiB..1 GiB but never below 2 x the cache: a VM may be shown its
         * host's whole L3 (hundreds of MiB), where 8 x would take most of memory and a minute of page
         * faults, and a stream of twice the cache already misses on every pass (LRU keeps none of it) */
        uint64_t lo = 256ull << 20, hi = 2 * llc > (1ull << 30) ? 2 * llc : 1ull << 30;
        big_size = llc * 8 < lo ? lo : llc * 8 > hi ? hi : llc * 8;
        size_rule = "8 x the last cache, within 256 MiB..max(1 GiB, 2 x the cache)";
        /* A last cache that is large for the memory (a VM shown its host's L3) gets the most that fits,
         * still twice the cache or more: a stream that size misses on every pass. */
        if (big_size > fit && fit >= 2 * llc && fit >= (64ull << 20)) {
            big_size = fit;
            size_rule = "the most that fits in half the available memory";
        }
    }
    if (!cache_size)
        cache_size = l1 ? l1 / 2 : 16384;
    big_size = (big_size + 255) & ~(uint64_t)255;
    cache_size = (cache_size + 255) & ~(uint64_t)255;
    if (buffers_only != B_CACHE && big_size > fit)
        osm_die("the out-of-cache measurements need %llu MiB but only %llu MiB is available; use --size",
                (unsigned long long)(big_size * buffers >> 20), (unsigned long long)(avail >> 20));

    if (buffers_only == B_ALL || buffers_only == B_MEMORY) {
        emit_one("mem.bw.read", K_READ, big_size, o.samples, -1);
        emit_one("mem.bw.write", K_WRITE, big_size, o.samples, -1);
        emit_one("mem.bw.write.nt", K_WRITE_NT, big_size, o.samples, -1);
        emit_one("mem.bw.copy", K_COPY, big_size, o.samples, -1);
        emit_one("mem.bw.copy.loop", K_COPY_LOOP, big_size, o.samples, -1);
    }
    if (buffers_only == B_ALL || buffers_only == B_CACHE) {
        emit_one("mem.bw.read.cache", K_READ, cache_size, o.samples, -1);
        emit_one("mem.bw.write.cache", K_WRITE, cache_size, o.samples, -1);
        emit_one("mem.bw.copy.cache", K_COPY, cache_size / 2, o.samples, -1);
    }
    if (!no_mt && buffers_only != B_CACHE) {
        emit_one("mem.bw.read.mt", K_READ, big_size, o.samples, cpu);
        emit_one("mem.bw.write.mt", K_WRITE, big_size, o.samples, cpu);
        emit_one("mem.bw.copy.mt", K_COPY, big_size, o.samples, cpu);
    }
    return 0;
}
