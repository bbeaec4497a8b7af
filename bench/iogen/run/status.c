/* status.c - a run seen while it runs: on a terminal, one line every half
 * second; with --status, a JSON line per prober sample for whoever reads
 * the stream (fleet load). run.c decides which. */
#include "prober.h"
#include "run.h"

#include <time.h>

void status_display(struct worker *ws, int nw, int qd, uint64_t *last_ios, uint64_t *last_bytes, double dt, double t, double total)
{
    uint64_t ios = 0, bytes = 0;
    for (int i = 0; i < nw; i++) {
        ios += atomic_load_explicit(&ws[i].live_ios, memory_order_relaxed);
        bytes += atomic_load_explicit(&ws[i].live_bytes, memory_order_relaxed);
    }
    fprintf(stderr, "\r\033[K[qd %d] %10.0f IOPS %9.1f MB/s  %5.1f/%.0f s", qd,
            (double)(ios - *last_ios) / dt, (double)(bytes - *last_bytes) / dt / 1e6, t, total);
    *last_ios = ios;
    *last_bytes = bytes;
}

/* --status: at each prober sample of the measured window, one line on standard output, flushed, so that
 * whoever reads the stream (fleet load, over ssh) has it as it happens: {"status": {unix, run, dt, ios,
 * iops, mbps, lat_mean_us, system}}, the load from every worker's completion counters since the sample
 * before and the prober's rates over the same interval (both read at one instant: the sample's). */
void status_line(void *arg, const struct prober_rates *r)
{
    struct status_ctx *c = arg;
    uint64_t ios = 0, bytes = 0, lat = 0;
    for (int i = 0; i < c->nw; i++) {
        ios += atomic_load_explicit(&c->ws[i].live_ios, memory_order_relaxed);
        bytes += atomic_load_explicit(&c->ws[i].live_bytes, memory_order_relaxed);
        lat += atomic_load_explicit(&c->ws[i].live_lat_ns, memory_order_relaxed);
    }
    if (r) {
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        uint64_t dios = ios - c->ios;
        struct json j;
        json_to_file(&j, stdout);
        json_obj(&j);
        json_key(&j, "status");
        json_obj(&j);
        json_kfixed(&j, "unix", (double)rt.tv_sec + (double)rt.tv_nsec * 1e-9, 6);
        json_kint(&j, "run", c->rs->runno);
        json_kfixed(&j, "dt", r->dt, 6);
        json_kuint(&j, "ios", dios);
        json_kfixed(&j, "iops", r->dt > 0 ? (double)dios / r->dt : 0, 1);
        json_kfixed(&j, "mbps", r->dt > 0 ? (double)(bytes - c->bytes) / r->dt / 1e6 : 0, 3);
        json_key(&j, "lat_mean_us");
        if (dios)
            json_fixed(&j, (double)(lat - c->lat) / (double)dios / 1e3, 3);
        else
            json_null(&j);
        json_key(&j, "system");
        prober_rates_json(&j, r);
        json_obj_end(&j);
        json_obj_end(&j);
        json_line_end(&j, "the status to standard output");
    }
    c->ios = ios;
    c->bytes = bytes;
    c->lat = lat;
}
