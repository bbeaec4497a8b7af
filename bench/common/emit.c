/* emit.c - measurements and the JSON line each one becomes (DESIGN.md, contract 3). */
#include "osm.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

bool osm_human_output;

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        osm_die("out of memory");
    return q;
}

void osm_meas_init(struct osm_meas *m, const char *id, size_t cap)
{
    memset(m, 0, sizeof *m);
    snprintf(m->id, sizeof m->id, "%s", id);
    m->unit = osm_timer.kind == OSM_TIMER_TSC ? "cycles" : "ns";
    m->cap = cap ? cap : 16;
    m->v = xrealloc(NULL, m->cap * sizeof *m->v);
    m->disturbed = xrealloc(NULL, m->cap * sizeof *m->disturbed);
}

void osm_meas_free(struct osm_meas *m)
{
    free(m->v);
    free(m->disturbed);
    free(m->sx);
    free(m->sy);
    free(m->sd);
    memset(m, 0, sizeof *m);
}

void osm_meas_add(struct osm_meas *m, double v, bool disturbed)
{
    if (m->n == m->cap) {
        m->cap *= 2;
        m->v = xrealloc(m->v, m->cap * sizeof *m->v);
        m->disturbed = xrealloc(m->disturbed, m->cap * sizeof *m->disturbed);
    }
    m->v[m->n] = v;
    m->disturbed[m->n] = disturbed;
    m->n++;
}

void osm_meas_param(struct osm_meas *m, const char *fmt, ...)
{
    size_t len = strlen(m->params);
    if (len && len + 2 < sizeof m->params) {
        strcat(m->params, ", ");
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->params + len, sizeof m->params - len, fmt, ap);
    va_end(ap);
}

void osm_meas_series(struct osm_meas *m, const char *x_name, const char *y_unit, size_t nx, size_t per)
{
    m->series_x_name = x_name;
    m->series_y_unit = y_unit;
    m->nx = nx;
    m->sy_per = per;
    m->sx = xrealloc(NULL, nx * sizeof *m->sx);
    m->sy = xrealloc(NULL, nx * per * sizeof *m->sy);
    m->sd = calloc(nx * per + 1, sizeof *m->sd);
    if (!m->sd)
        osm_die("out of memory");
}

static void put_num(double v)
{
    if (!isfinite(v))
        printf("null");
    else if (v == nearbyint(v) && fabs(v) < 9007199254740992.0)
        printf("%.0f", v); /* whole numbers (bytes, sizes) exactly */
    else
        printf("%.9g", v);
}

static void emit_human(const struct osm_meas *m)
{
    double *tmp = xrealloc(NULL, (m->n ? m->n : 1) * sizeof *tmp);
    size_t k = 0, dropped = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (m->disturbed[i])
            dropped++;
        else
            tmp[k++] = m->v[i];
    }
    double med = osm_median(tmp, k);
    if (strcmp(m->unit, "cycles") == 0)
        printf("%-28s median %12.2f cycles = %10.2f ns  (n=%zu, %zu disturbed)\n", m->id, med,
               med * 1e9 / osm_timer.hz, k, dropped);
    else
        printf("%-28s median %12.2f %s  (n=%zu, %zu disturbed)\n", m->id, med, m->unit, k, dropped);
    free(tmp);
}

void osm_emit(const struct osm_meas *m)
{
    if (osm_human_output) {
        emit_human(m);
        fflush(stdout);
        return;
    }
    printf("{\"id\": \"%s\", \"unit\": \"%s\", \"tsc_hz\": ", m->id, m->unit);
    put_num(osm_timer.hz);
    printf(", \"timer\": {\"kind\": \"%s\", \"invariant_tsc\": %s, \"overhead_median\": ",
           osm_timer.kind == OSM_TIMER_TSC ? "tsc-fenced" : "clock_gettime",
           osm_timer.tsc_invariant ? "true" : "false");
    put_num(osm_timer.overhead);
    if (osm_timer.fallback_why)
        printf(", \"fallback\": \"%s\"", osm_timer.fallback_why);
    printf(", \"deschedule_check\": \"%s\"", osm_deschedule_check());
    printf("}, \"params\": {%s}, \"overhead_subtracted\": ", m->params);
    put_num(m->overhead_subtracted);
    printf(", \"samples\": [");
    for (size_t i = 0; i < m->n; i++) {
        if (i)
            putchar(',');
        put_num(m->v[i]);
    }
    printf("], \"disturbed\": [");
    bool first = true;
    for (size_t i = 0; i < m->n; i++) {
        if (!m->disturbed[i])
            continue;
        printf(first ? "%zu" : ",%zu", i);
        first = false;
    }
    printf("]");
    if (m->nx) {
        printf(", \"series\": {\"x_name\": \"%s\", \"y_unit\": \"%s\", \"x\": [", m->series_x_name,
               m->series_y_unit);
        for (size_t i = 0; i < m->nx; i++) {
            if (i)
                putchar(',');
            put_num(m->sx[i]);
        }
        printf("], \"samples\": [");
        for (size_t i = 0; i < m->nx; i++) {
            printf(i ? ",[" : "[");
            for (size_t j = 0; j < m->sy_per; j++) {
                if (j)
                    putchar(',');
                put_num(m->sy[i * m->sy_per + j]);
            }
            putchar(']');
        }
        printf("], \"disturbed\": [");
        for (size_t i = 0; i < m->nx; i++) {
            printf(i ? ",[" : "[");
            bool first_d = true;
            for (size_t j = 0; j < m->sy_per; j++)
                if (m->sd[i * m->sy_per + j]) {
                    printf(first_d ? "%zu" : ",%zu", j);
                    first_d = false;
                }
            putchar(']');
        }
        printf("]}");
    }
    printf("}\n");
    fflush(stdout);
}
