/* hist.c - see hist.h. */
#include "hist.h"

#include <string.h>

void hist_clear(struct hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

/* Largest value that falls in bucket i. */
static uint64_t bucket_top(unsigned i)
{
    if (i < HIST_SUB)
        return i;
    unsigned e = i / HIST_SUB + HIST_SUB_BITS - 1;
    uint64_t sub = i % HIST_SUB;
    uint64_t base = (HIST_SUB + sub) << (e - HIST_SUB_BITS);
    return base + ((uint64_t)1 << (e - HIST_SUB_BITS)) - 1;
}

uint64_t hist_pct(const struct hist *h, double p)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)(p * (double)h->count + 0.5);
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t top = bucket_top(i);
            return top > h->max ? h->max : (top < h->min ? h->min : top);
        }
    }
    return h->max;
}

double hist_mean(const struct hist *h)
{
    return h->count ? (double)h->sum / (double)h->count : 0.0;
}
