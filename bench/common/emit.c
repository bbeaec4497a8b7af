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
    json_to_buf(&m->params);
    json_obj(&m->params);
}

void osm_meas_free(struct osm_meas *m)
{
    free(m->v);
    free(m->disturbed);
    free(m->sx);
    free(m->sy);
    free(m->sy_disturbed);
    json_free(&m->params);
    memset(m, 0, sizeof *m);
}

void osm_meas_add(struct osm_meas *m, double v, bool disturbed)
{
    if (m->n == m->cap) {
        m->cap *= 2;
        m->v = xrealloc(m->v, m->cap * sizeof *m->v);
        m->disturbed = xrealloc(m->disturbed, m->cap * sizeof *m->disturbed);
    }
    if (osm_trace_fd >= 0)
        osm_trace_sample(m->id, m->n, v, disturbed);
    m->v[m->n] = v;
    m->disturbed[m->n] = disturbed;
    m->n++;
}

struct json *osm_param(struct osm_meas *m, const char *key)
{
    json_key(&m->params, key);
    return &m->params;
}

void osm_param_str(struct osm_meas *m, const char *key, const char *v) { json_kstr(&m->params, key, v); }
void osm_param_num(struct osm_meas *m, const char *key, double v) { json_knum(&m->params, key, v); }
void osm_param_int(struct osm_meas *m, const char *key, long long v) { json_kint(&m->params, key, v); }
void osm_param_bool(struct osm_meas *m, const char *key, bool v) { json_kbool(&m->params, key, v); }

void osm_meas_series(struct osm_meas *m, const char *x_name, const char *y_unit, size_t nx, size_t per)
{
    m->series_x_name = x_name;
    m->series_y_unit = y_unit;
    m->nx = nx;
    m->sy_per = per;
    m->sx = xrealloc(NULL, nx * sizeof *m->sx);
    m->sy = xrealloc(NULL, nx * per * sizeof *m->sy);
    m->sy_disturbed = calloc(nx * per + 1, sizeof *m->sy_disturbed);
    if (!m->sy_disturbed)
        osm_die("out of memory");
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

/* The median of the kept samples in steps of the timer. Samples are in
 * timer ticks (cycles) or ns (the clock), with the overhead subtracted: the
 * window the timer measured was that much longer. */
static double single_shot_steps(const struct osm_meas *m)
{
    double *tmp = xrealloc(NULL, m->n * sizeof *tmp);
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!m->disturbed[i] && isfinite(m->v[i]))
            tmp[k++] = m->v[i];
    double med = k ? osm_median(tmp, k) : 0;
    free(tmp);
    double ticks = strcmp(m->unit, "cycles") == 0 ? med : med * osm_timer.hz / 1e9;
    ticks += osm_timer.overhead;
    return osm_timer.step_ticks > 0 ? ticks / osm_timer.step_ticks : ticks;
}

void osm_refuse(const char *id, const char *why)
{
    if (osm_human_output) {
        printf("%-28s refused: %s\n", id, why);
        fflush(stdout);
        return;
    }
    struct json j;
    json_to_file(&j, stdout);
    json_obj(&j);
    json_kstr(&j, "id", id);
    json_kstr(&j, "refused", why);
    json_obj_end(&j);
    json_line_end(&j, "the refusal to standard output");
}

void osm_emit(const struct osm_meas *m)
{
    if (osm_human_output) {
        emit_human(m);
        fflush(stdout);
        return;
    }
    struct json j;
    json_to_file(&j, stdout);
    json_obj(&j);
    json_kstr(&j, "id", m->id);
    json_kstr(&j, "unit", m->unit);
    json_knum(&j, "tsc_hz", osm_timer.hz);
    json_key(&j, "timer");
    json_obj(&j);
    json_kstr(&j, "kind", osm_timer.kind == OSM_TIMER_TSC ? OSM_TIMER_NAME : "clock_gettime");
    json_knum(&j, "resolution_ns", osm_timer.resolution_ns);
    json_knum(&j, "step_ticks", osm_timer.step_ticks);
    json_knum(&j, "min_step_ns", osm_timer.min_step_ticks * 1e9 / osm_timer.hz);
    json_kbool(&j, "invariant_tsc", osm_timer.tsc_invariant);
    json_knum(&j, "overhead_median", osm_timer.overhead);
    if (osm_timer.fallback_why)
        json_kstr(&j, "fallback", osm_timer.fallback_why);
    json_kstr(&j, "deschedule_check", osm_deschedule_check());
    if (osm_deschedule_check_why())
        json_kstr(&j, "deschedule_check_why", osm_deschedule_check_why());
    json_obj_end(&j);
    /* the core's clock when the process started and after its measuring
     * (the first emit): a host that slowed the vCPU meanwhile shows here */
    static double end_mhz, end_width;
    if (end_mhz == 0)
        end_mhz = osm_core_mhz(&end_width);
    json_key(&j, "core_mhz");
    json_obj(&j);
    json_knum(&j, "start", osm_core_start_mhz);
    json_knum(&j, "end", end_mhz);
    json_obj_end(&j);
    json_key(&j, "core_width");
    json_obj(&j);
    json_knum(&j, "start", osm_core_start_width);
    json_knum(&j, "end", end_width);
    json_obj_end(&j);
    /* the params object as built so far, closed; a single-shot measurement
     * adds how many of the timer's steps its median spans */
    char extra[160] = "";
    if (m->single_shot && m->n) {
        double steps = single_shot_steps(m);
        snprintf(extra, sizeof extra, "%s\"median_timer_steps\":%.1f,\"quantized\":%s",
                 m->params.len > 1 ? "," : "", steps, steps < 100 ? "true" : "false");
    }
    size_t xl = strlen(extra);
    char *params = xrealloc(NULL, m->params.len + xl + 2);
    memcpy(params, m->params.buf, m->params.len);
    memcpy(params + m->params.len, extra, xl);
    memcpy(params + m->params.len + xl, "}", 2);
    json_key(&j, "params");
    json_raw(&j, params);
    free(params);
    json_knum(&j, "overhead_subtracted", m->overhead_subtracted);
    json_key(&j, "samples");
    json_arr(&j);
    for (size_t i = 0; i < m->n; i++)
        json_num(&j, m->v[i]);
    json_arr_end(&j);
    json_key(&j, "disturbed");
    json_arr(&j);
    for (size_t i = 0; i < m->n; i++)
        if (m->disturbed[i])
            json_uint(&j, i);
    json_arr_end(&j);
    if (m->nx) {
        json_key(&j, "series");
        json_obj(&j);
        json_kstr(&j, "x_name", m->series_x_name);
        json_kstr(&j, "y_unit", m->series_y_unit);
        json_key(&j, "x");
        json_arr(&j);
        for (size_t i = 0; i < m->nx; i++)
            json_num(&j, m->sx[i]);
        json_arr_end(&j);
        json_key(&j, "samples");
        json_arr(&j);
        for (size_t i = 0; i < m->nx; i++) {
            json_arr(&j);
            for (size_t k = 0; k < m->sy_per; k++)
                json_num(&j, m->sy[i * m->sy_per + k]);
            json_arr_end(&j);
        }
        json_arr_end(&j);
        json_key(&j, "disturbed");
        json_arr(&j);
        for (size_t i = 0; i < m->nx; i++) {
            json_arr(&j);
            for (size_t k = 0; k < m->sy_per; k++)
                if (m->sy_disturbed[i * m->sy_per + k])
                    json_uint(&j, k);
            json_arr_end(&j);
        }
        json_arr_end(&j);
        json_obj_end(&j);
    }
    json_obj_end(&j);
    json_line_end(&j, "the measurement to standard output");
}
