/* mem.c - sysfs cache sizes, free memory, aligned buffers. */
#include "osm.h"
#include "osmmem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t read_cache(int index, int *level, char *type, size_t tlen)
{
    char path[128], buf[64];
    uint64_t size = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    if (fscanf(f, "%d", level) != 1)
        *level = 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", index);
    f = fopen(path, "r");
    type[0] = 0;
    if (f) {
        if (!fgets(type, (int)tlen, f))
            type[0] = 0;
        fclose(f);
    }
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    f = fopen(path, "r");
    if (f) {
        if (fgets(buf, sizeof buf, f)) {
            char *end;
            size = strtoull(buf, &end, 10);
            if (*end == 'K')
                size <<= 10;
            else if (*end == 'M')
                size <<= 20;
        }
        fclose(f);
    }
    return size;
}

uint64_t osm_cache_size(int level)
{
    for (int i = 0; i < 16; i++) {
        int l;
        char type[32];
        uint64_t s = read_cache(i, &l, type, sizeof type);
        if (s == 0 && l == 0)
            break;
        if (l == level && strncmp(type, "Instruction", 11) != 0)
            return s;
    }
    return 0;
}

int osm_cache_levels(void)
{
    int top = 0;
    for (int l = 1; l <= 4; l++)
        if (osm_cache_size(l))
            top = l;
    return top;
}

uint64_t osm_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

#define HUGE_ALIGN (2u << 20)

void *osm_buffer(size_t size, enum osm_pages pages)
{
    size_t len = size + HUGE_ALIGN;
    char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        osm_die("cannot map %zu bytes: %s", size, strerror(errno));
    uintptr_t a = ((uintptr_t)raw + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1);
    /* give back the unaligned head and the tail */
    if (a > (uintptr_t)raw)
        munmap(raw, a - (uintptr_t)raw);
    size_t tail = (uintptr_t)raw + len - (a + size);
    if (tail)
        munmap((char *)a + size, tail);
    if (pages == OSM_PAGES_SMALL)
        madvise((void *)a, size, MADV_NOHUGEPAGE);
    else if (pages == OSM_PAGES_HUGE && madvise((void *)a, size, MADV_HUGEPAGE) != 0)
        osm_warn("madvise(MADV_HUGEPAGE): %s", strerror(errno));
    return (void *)a;
}

void osm_buffer_free(void *p, size_t size)
{
    munmap(p, size);
}

long osm_thp_kib(const void *p, size_t size)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    long total = 0;
    bool inside = false;
    uintptr_t lo = (uintptr_t)p, hi = lo + size;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        long kb;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = a < hi && b > lo;
        else if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            total += kb;
    }
    fclose(f);
    return total;
}

const char *osm_thp_mode(void)
{
    static char mode[32] = "unknown";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return "unavailable";
    char line[128];
    if (fgets(line, sizeof line, f)) {
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b && (size_t)(b - a - 1) < sizeof mode) {
            memcpy(mode, a + 1, (size_t)(b - a - 1));
            mode[b - a - 1] = 0;
        }
    }
    fclose(f);
    return mode;
}

uint64_t osm_sum_words(const void *buf, size_t bytes)
{
    const uint64_t *w = buf;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    for (size_t i = 0; i + 8 <= bytes / 8; i += 8) {
        s0 += w[i];
        s1 += w[i + 1];
        s2 += w[i + 2];
        s3 += w[i + 3];
        s4 += w[i + 4];
        s5 += w[i + 5];
        s6 += w[i + 6];
        s7 += w[i + 7];
    }
    uint64_t s = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
    __asm__ volatile("" : "+r"(s));
    return s;
}

/* The bits of i (below 2^bits) in reverse order. */
static uint64_t bit_reverse(uint64_t i, unsigned bits)
{
    uint64_t r = 0;
    for (unsigned b = 0; b < bits; b++)
        r |= ((i >> b) & 1) << (bits - 1 - b);
    return r;
}

/* Sattolo's algorithm: perm[] becomes one random cycle through all n. */
static void sattolo(uint32_t *perm, uint64_t n, uint64_t seed)
{
    uint64_t s = seed | 1;
    for (uint64_t i = n - 1; i > 0; i--) {
        uint64_t j = osm_rand(&s) % i;
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

void osm_chain_build(char *buf, uint64_t size, uint64_t stride, enum osm_chain_order order, uint64_t seed)
{
    uint64_t n = size / stride, page = (uint64_t)sysconf(_SC_PAGESIZE), per_page = page / stride;
    unsigned bits = 0;
    while ((1ull << bits) < per_page)
        bits++;
    if (order == OSM_CHAIN_PAGEWISE && (size % page || page % stride || per_page < 2 || (1ull << bits) != per_page))
        order = OSM_CHAIN_RANDOM;
    uint32_t *perm = malloc(n * sizeof *perm);
    if (!perm)
        osm_die("out of memory building a chain of %llu elements", (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    if (order == OSM_CHAIN_RANDOM) {
        sattolo(perm, n, seed);
        for (uint64_t i = 0; i < n; i++)
            *(void **)(buf + i * stride) = buf + (uint64_t)perm[i] * stride;
    } else if (order == OSM_CHAIN_PAGEWISE) {
        /* visit k (0 .. n-1): pass k / pages, page k % pages of the random
         * page order, at that page's element (page + pass)-th in bit-reversed
         * order; visit k links to visit k + 1 and the last to the first */
        uint64_t pages = size / page;
        uint32_t *order_of = perm; /* the first `pages` entries: the page order */
        sattolo(order_of, pages, seed);
        uint64_t first = 0, prev = 0;
        for (uint64_t k = 0; k < n; k++) {
            uint64_t pass = k / pages, i = k % pages;
            uint64_t at = (uint64_t)order_of[i] * page + bit_reverse((i + pass) % per_page, bits) * stride;
            if (k == 0)
                first = at;
            else
                *(void **)(buf + prev) = buf + at;
            prev = at;
        }
        *(void **)(buf + prev) = buf + first;
    } else {
        for (uint64_t i = 0; i < n; i++)
            *(void **)(buf + i * stride) = buf + ((i + 1) % n) * stride;
    }
    free(perm);
}
