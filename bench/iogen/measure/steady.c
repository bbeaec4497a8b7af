/* steady.c - --steady METRIC:BOUND:WINDOW, fio's steady state: a run ends
 * early once its metric has held still for a window. The metric (iops,
 * mbps, or lat: the mean latency) is sampled once per period (the report
 * interval, or a second); over the last WINDOW seconds of samples the
 * criterion is the range, (max - min) / mean, or with METRIC_slope the
 * least-squares slope times the window over the mean (how much the fitted
 * line moves across the window). BOUND is a percentage of the mean. */
#include "steady.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int steady_parse(const char *text, struct steady *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    char metric[32];
    double bound, window;
    char pct = 0;
    int used = 0; /* the text must end after WINDOW (and its optional s): nothing ignored */
    int n = sscanf(text, "%31[a-z_]:%lf%c:%lf%n", metric, &bound, &pct, &window, &used);
    const char *rest = n == 4 ? text + used : "?";
    if (n < 4 || pct != '%' || (*rest && strcmp(rest, "s")) || !(bound > 0) || bound >= 100 || !(window > 0) ||
        window > 1e6) {
        snprintf(err, errlen, "--steady '%s': expected METRIC:BOUND%%:WINDOW, such as iops:2%%:10s or "
                 "lat_slope:0.5%%:30s (METRIC iops, mbps or lat, with _slope for the slope criterion)", text);
        return -1;
    }
    size_t len = strlen(metric);
    s->slope = len > 6 && !strcmp(metric + len - 6, "_slope");
    if (s->slope)
        metric[len - 6] = 0;
    if (!strcmp(metric, "iops"))
        s->metric = STEADY_IOPS;
    else if (!strcmp(metric, "mbps"))
        s->metric = STEADY_MBPS;
    else if (!strcmp(metric, "lat"))
        s->metric = STEADY_LAT;
    else {
        snprintf(err, errlen, "--steady: the metric '%s' is not iops, mbps or lat", metric);
        return -1;
    }
    s->on = true;
    s->bound = bound / 100;
    s->window_s = window;
    return 0;
}

void steady_start(struct steady *s, double period_s)
{
    s->period_s = period_s;
    s->need = (size_t)ceil(s->window_s / period_s - 1e-9);
    if (s->need < 2)
        s->need = 2;
    free(s->v);
    s->v = calloc(s->need, sizeof *s->v);
    s->n = 0;
    s->reached = false;
    s->at_s = 0;
    s->last = NAN;
}

bool steady_sample(struct steady *s, double t_s, double ios, double bytes, double lat_sum_ns, double lat_n)
{
    if (!s->on || s->reached || !s->v)
        return s->reached;
    double v = s->metric == STEADY_IOPS ? ios / s->period_s
               : s->metric == STEADY_MBPS ? bytes / s->period_s / 1e6
                                          : (lat_n > 0 ? lat_sum_ns / lat_n : NAN);
    if (!isfinite(v))
        return false;
    s->v[s->n % s->need] = v;
    s->n++;
    if (s->n < s->need)
        return false;
    double mean = 0, lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < s->need; i++) {
        mean += s->v[i];
        lo = fmin(lo, s->v[i]);
        hi = fmax(hi, s->v[i]);
    }
    mean /= (double)s->need;
    if (!(mean > 0))
        return false;
    if (s->slope) { /* least squares over the window, the oldest sample first */
        double sx = 0, sy = 0, sxx = 0, sxy = 0, m = (double)s->need;
        for (size_t i = 0; i < s->need; i++) {
            double x = (double)i * s->period_s, y = s->v[(s->n + i) % s->need];
            sx += x, sy += y, sxx += x * x, sxy += x * y;
        }
        double slope = (m * sxy - sx * sy) / (m * sxx - sx * sx);
        s->last = fabs(slope) * s->window_s / mean;
    } else {
        s->last = (hi - lo) / mean;
    }
    if (s->last <= s->bound) {
        s->reached = true;
        s->at_s = t_s;
    }
    return s->reached;
}

static const char *const metric_names[] = { "iops", "mbps", "lat" };

void steady_json(const struct steady *s, struct json *j)
{
    json_key(j, "steady");
    json_obj(j);
    json_kstr(j, "metric", metric_names[s->metric]);
    json_kstr(j, "criterion", s->slope ? "slope" : "range");
    json_knum(j, "bound", s->bound);
    json_knum(j, "window_s", s->window_s);
    json_knum(j, "period_s", s->period_s);
    json_kbool(j, "reached", s->reached);
    json_key(j, "at_s");
    if (s->reached)
        json_fixed(j, s->at_s, 3);
    else
        json_null(j);
    json_knum(j, "last", s->last);
    json_obj_end(j);
}
