/* live.c - --live: on a terminal, per-worker bars redrawn once a second
 * (the PenguinoMeter paper's bar-graph display): each worker's IOPS, MB/s
 * and mean latency over the last second, each bar scaled to the largest
 * worker's. The frame is drawn in place (the cursor moves back up over it);
 * run.c calls it only when standard error is a terminal. */
#include "run.h"

#include <stdlib.h>
#include <string.h>

#define BAR 20

static void bar(FILE *f, double v, double most)
{
    int n = most > 0 ? (int)(v / most * BAR + 0.5) : 0;
    fputc('[', f);
    for (int i = 0; i < BAR; i++)
        fputc(i < n ? '#' : ' ', f);
    fputc(']', f);
}

void live_frame(FILE *f, struct worker *ws, int nw, int qd, uint64_t *last_ios, uint64_t *last_bytes, uint64_t *last_lat,
                double dt, double t, double total)
{
    static int drawn; /* lines of the frame on the screen */
    if (drawn)
        fprintf(f, "\033[%dF", drawn); /* back to the first line of the last frame */
    if (!ws) { /* the end: the frame cleared */
        fputs("\033[J", f);
        drawn = 0;
        fflush(f);
        return;
    }
    double *v = calloc((size_t)nw * 3, sizeof *v), most[3] = { 0, 0, 0 };
    if (!v)
        return;
    for (int i = 0; i < nw; i++) {
        uint64_t ios = atomic_load_explicit(&ws[i].live_ios, memory_order_relaxed);
        uint64_t bytes = atomic_load_explicit(&ws[i].live_bytes, memory_order_relaxed);
        uint64_t lat = atomic_load_explicit(&ws[i].live_lat_ns, memory_order_relaxed);
        uint64_t dios = ios - last_ios[i];
        v[3 * i] = (double)dios / dt;
        v[3 * i + 1] = (double)(bytes - last_bytes[i]) / dt / 1e6;
        v[3 * i + 2] = dios ? (double)(lat - last_lat[i]) / (double)dios / 1e3 : 0;
        last_ios[i] = ios;
        last_bytes[i] = bytes;
        last_lat[i] = lat;
        for (int k = 0; k < 3; k++)
            most[k] = v[3 * i + k] > most[k] ? v[3 * i + k] : most[k];
    }
    fprintf(f, "\033[K[qd %d] %.0f/%.0f s   %-*s IOPS %*s MB/s %*s mean latency\n", qd, t, total, 14 + BAR, "",
            4 + BAR, "", 4 + BAR, "");
    for (int i = 0; i < nw; i++) {
        fprintf(f, "\033[K%-12.12s %10.0f ", ws[i].cfg->name, v[3 * i]);
        bar(f, v[3 * i], most[0]);
        fprintf(f, " %8.1f ", v[3 * i + 1]);
        bar(f, v[3 * i + 1], most[1]);
        fprintf(f, " %8.1f us ", v[3 * i + 2]);
        bar(f, v[3 * i + 2], most[2]);
        fputc('\n', f);
    }
    drawn = nw + 1;
    fflush(f);
    free(v);
}
