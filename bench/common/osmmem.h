/* osmmem.h - what the memory, file-system and disk probes share: cache sizes
 * from sysfs, free memory, page-aligned buffers. */
#ifndef OSMMEM_H
#define OSMMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* sysfs: data or unified cache of a level on CPU 0, in bytes; 0 if unknown. */
uint64_t osm_cache_size(int level);
/* The largest cache level present (1..4), 0 if sysfs says nothing. */
int osm_cache_levels(void);
/* MemAvailable from /proc/meminfo, bytes; 0 if unknown. */
uint64_t osm_mem_available(void);

enum osm_pages { OSM_PAGES_DEFAULT, OSM_PAGES_SMALL, OSM_PAGES_HUGE };
/* Anonymous mapping of `size` bytes aligned to 2 MiB, with MADV_NOHUGEPAGE
 * (SMALL) or MADV_HUGEPAGE (HUGE) applied. Exits on failure. */
void *osm_buffer(size_t size, enum osm_pages pages);
void osm_buffer_free(void *p, size_t size);
/* kB of transparent huge pages backing [p, p+size), from /proc/self/smaps. */
long osm_thp_kib(const void *p, size_t size);
/* /sys/kernel/mm/transparent_hugepage/enabled, the bracketed word. */
const char *osm_thp_mode(void);

/* The sum of every 8-byte word of buf (bytes rounded down to 64), in order,
 * eight running sums at once so that the loads, not a chain of adds, set the
 * pace: a working set read as a program reads its data (lmbench's bread). */
uint64_t osm_sum_words(const void *buf, size_t bytes);

/* The order a chain visits its elements in. */
enum osm_chain_order {
    OSM_CHAIN_RANDOM,     /* one random cycle (Sattolo's algorithm, seeded): no prefetcher can follow it */
    OSM_CHAIN_SEQUENTIAL, /* each element to the next one up: a stride walk a prefetcher can follow */
    OSM_CHAIN_PAGEWISE,   /* lmbench's lat_mem_rd -t: every load on another page, the pages in one
                           * random order, pass after pass, each pass one element further into each
                           * page (its elements in bit-reversed order): a TLB of fewer entries than
                           * the set has pages misses on every load */
};

/* Links the stride-sized elements of buf[0, size) into one cycle, each
 * holding the address of the next, in the given order (PAGEWISE needs a
 * size of whole pages, each of several elements; otherwise it is RANDOM). */
void osm_chain_build(char *buf, uint64_t size, uint64_t stride, enum osm_chain_order order, uint64_t seed);

/* A fast deterministic generator (xorshift64*), for chains and offsets. */
static inline uint64_t osm_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

#endif
