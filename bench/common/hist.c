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

void hist_json(struct json *j, const struct hist *h)
{
    json_obj(j);
    json_kuint(j, "count", h->count);
    json_kfixed(j, "mean", hist_mean(h), 1);
    json_kuint(j, "min", h->count ? h->min : 0);
    json_kuint(j, "max", h->max);
    json_kuint(j, "p50", hist_pct(h, 0.50));
    json_kuint(j, "p90", hist_pct(h, 0.90));
    json_kuint(j, "p99", hist_pct(h, 0.99));
    json_kuint(j, "p99_9", hist_pct(h, 0.999));
    json_kuint(j, "p99_99", hist_pct(h, 0.9999));
    json_key(j, "hist");
    json_obj(j);
    json_kint(j, "sub_bits", HIST_SUB_BITS);
    json_key(j, "counts");
    json_arr(j);
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        if (h->b[i]) {
            json_arr(j);
            json_uint(j, i);
            json_uint(j, h->b[i]);
            json_arr_end(j);
        }
    json_arr_end(j);
    json_obj_end(j);
    json_obj_end(j);
}
