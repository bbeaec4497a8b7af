/* hist.h - iogen's and iotrace's log-linear latency histogram of fixed memory (HdrHistogram's
 * idea): exact below 64, then 64 sub-buckets per power of two, so any value
 * is kept within 1/64 (1.6%) of itself. 30 KiB, no allocation.
 *
 * Bucket i holds: i itself when i < 64; otherwise, with e = i / 64 + 5 and
 * s = i % 64, the values from (64 + s) << (e - 6) to that plus
 * (1 << (e - 6)) - 1. Merging histograms adds their counts bucket by
 * bucket; percentiles are read from the merged counts, never averaged. */
#ifndef OSM_HIST_H
#define OSM_HIST_H

#include <stdint.h>

#include "json.h"

#define HIST_SUB_BITS 6
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

struct hist {
    uint64_t count, sum, min, max;
    uint64_t b[HIST_BUCKETS];
};

void hist_clear(struct hist *h);
void hist_merge(struct hist *dst, const struct hist *src);
/* The value below which a fraction p (0..1) of the recorded values fall
 * (the upper edge of the bucket holding that rank, capped at max). */
uint64_t hist_pct(const struct hist *h, double p);
double hist_mean(const struct hist *h);
/* The object {count, mean, min, max, p50, p90, p99, p99_9, p99_99, hist}
 * where hist is {"sub_bits": 6, "counts": [[bucket, count], ...]} with the
 * buckets that are not empty (docs/DESIGN.md, contract 7, says how a bucket
 * number maps to its range of values). */
void hist_json(struct json *j, const struct hist *h);

static inline unsigned hist_index(uint64_t v)
{
    if (v < HIST_SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= HIST_SUB_BITS */
    unsigned sub = (unsigned)(v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1);
    return (e - HIST_SUB_BITS + 1) * HIST_SUB + sub;
}

static inline void hist_add(struct hist *h, uint64_t v)
{
    h->b[hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

#endif
