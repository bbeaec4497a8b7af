/* steady.h - --steady METRIC:BOUND:WINDOW: a run that ends once its metric
 * holds still (steady.c says how). */
#ifndef IOGEN_STEADY_H
#define IOGEN_STEADY_H

#include "json.h"

#include <stdbool.h>
#include <stddef.h>

enum steady_metric { STEADY_IOPS, STEADY_MBPS, STEADY_LAT };

struct steady {
    bool on;
    enum steady_metric metric;
    bool slope;        /* the slope criterion, else the range */
    double bound;      /* a fraction of the window's mean */
    double window_s;
    /* while running */
    double period_s;
    double *v;         /* the window's samples, a ring */
    size_t need, n;
    bool reached;
    double at_s;       /* seconds into the measured window when it was reached */
    double last;       /* the criterion's last value */
};

int steady_parse(const char *text, struct steady *s, char *err, size_t errlen);
void steady_start(struct steady *s, double period_s);
/* One period's totals; true once steady. */
bool steady_sample(struct steady *s, double t_s, double ios, double bytes, double lat_sum_ns, double lat_n);
void steady_json(const struct steady *s, struct json *j);

#endif
