/* prober.c - see prober.h. */
#include "prober.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct snap {
    double t;
    uint64_t cpu[8]; /* user nice system idle iowait irq softirq steal */
    uint64_t intr, ctxt;
    uint64_t d_rd, d_wr, d_ticks, d_queue; /* diskstats: reads, writes, io ms, weighted ms */
    uint64_t pgin, pgout, pgmajfault, pswpin, pswpout;
    uint64_t net_rx, net_tx;
    int nnics;
    struct { char name[32]; uint64_t rxp, txp, errs; } nic[PROBER_MAX_NICS];
    uint64_t mem_free, mem_avail, mem_cached, mem_buffers, mem_shared, swap_total, swap_free;
    uint64_t irq_lines; /* sum of /proc/interrupts counts */
};

struct prober {
    double interval;
    char disk[64];
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    prober_tick tick;
    void *ctx;
    struct snap *s;
    size_t n, cap;
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void read_stat(struct snap *s)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        unsigned long long v[8] = { 0 };
        if (!strncmp(line, "cpu ", 4)) {
            sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                   &v[5], &v[6], &v[7]);
            for (int i = 0; i < 8; i++)
                s->cpu[i] = v[i];
        } else if (!strncmp(line, "intr ", 5)) {
            s->intr = strtoull(line + 5, NULL, 10);
        } else if (!strncmp(line, "ctxt ", 5)) {
            s->ctxt = strtoull(line + 5, NULL, 10);
        }
    }
    fclose(f);
}

static void read_disk(struct snap *s, const char *disk)
{
    if (!*disk)
        return;
    FILE *f = fopen("/proc/diskstats", "r");
    if (!f)
        return;
    char line[512], name[64];
    while (fgets(line, sizeof line, f)) {
        unsigned long long rd, rdm, rds, rdt, wr, wrm, wrs, wrt, inflight, ticks, queue;
        if (sscanf(line, "%*u %*u %63s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", name, &rd, &rdm,
                   &rds, &rdt, &wr, &wrm, &wrs, &wrt, &inflight, &ticks, &queue) == 12 &&
            !strcmp(name, disk)) {
            s->d_rd = rd;
            s->d_wr = wr;
            s->d_ticks = ticks;
            s->d_queue = queue;
        }
    }
    fclose(f);
}

static void read_kv(const char *path, const char *const *keys, uint64_t *const *out, int n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f))
        for (int i = 0; i < n; i++) {
            size_t k = strlen(keys[i]);
            if (!strncmp(line, keys[i], k) && (line[k] == ' ' || line[k] == ':'))
                *out[i] = strtoull(line + k + 1 + strspn(line + k + 1, " :"), NULL, 10);
        }
    fclose(f);
}

static void read_net(struct snap *s)
{
    FILE *f = fopen("/proc/net/dev", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *c = strchr(line, ':');
        if (!c)
            continue;
        /* face: rx bytes packets errs drop fifo frame compressed multicast, tx bytes packets errs ... */
        unsigned long long rx, rxp, rxe, tx, txp, txe;
        if (sscanf(c + 1, "%llu %llu %llu %*u %*u %*u %*u %*u %llu %llu %llu", &rx, &rxp, &rxe, &tx, &txp, &txe) == 6) {
            s->net_rx += rx;
            s->net_tx += tx;
            if (s->nnics < PROBER_MAX_NICS) {
                *c = '\0';
                char *name = line + strspn(line, " ");
                snprintf(s->nic[s->nnics].name, sizeof s->nic[0].name, "%s", name);
                s->nic[s->nnics].rxp = rxp;
                s->nic[s->nnics].txp = txp;
                s->nic[s->nnics].errs = rxe + txe;
                s->nnics++;
            }
        }
    }
    fclose(f);
}

static void read_interrupts(struct snap *s)
{
    FILE *f = fopen("/proc/interrupts", "r");
    if (!f)
        return;
    char line[4096];
    if (!fgets(line, sizeof line, f)) { /* header: CPU0 CPU1 ... */
        fclose(f);
        return;
    }
    while (fgets(line, sizeof line, f)) {
        char *p = strchr(line, ':');
        if (!p)
            continue;
        p++;
        for (;;) { /* the per-CPU counts come first; stop at the first word */
            char *end;
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p)
                break;
            s->irq_lines += v;
            p = end;
        }
    }
    fclose(f);
}

static void compute(struct prober_rates *r, const struct snap *a, const struct snap *b);

/* One sample kept (false: no memory for it), then the tick told. */
static bool take(struct prober *p)
{
    struct snap s;
    memset(&s, 0, sizeof s);
    s.t = mono();
    read_stat(&s);
    read_disk(&s, p->disk);
    const char *vk[] = { "pgpgin", "pgpgout", "pgmajfault", "pswpin", "pswpout" };
    uint64_t *vo[] = { &s.pgin, &s.pgout, &s.pgmajfault, &s.pswpin, &s.pswpout };
    read_kv("/proc/vmstat", vk, vo, 5);
    const char *mk[] = { "MemFree", "MemAvailable", "Cached", "Buffers", "Shmem", "SwapTotal", "SwapFree" };
    uint64_t *mo[] = { &s.mem_free, &s.mem_avail, &s.mem_cached, &s.mem_buffers, &s.mem_shared, &s.swap_total,
                       &s.swap_free };
    read_kv("/proc/meminfo", mk, mo, 7);
    read_net(&s);
    read_interrupts(&s);
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        struct snap *ns = realloc(p->s, cap * sizeof *ns);
        if (!ns)
            return false;
        p->s = ns;
        p->cap = cap;
    }
    p->s[p->n++] = s;
    if (p->tick) {
        struct prober_rates r;
        if (p->n >= 2)
            compute(&r, &p->s[p->n - 2], &p->s[p->n - 1]);
        p->tick(p->ctx, p->n >= 2 ? &r : NULL);
    }
    return true;
}

static void *run(void *arg)
{
    struct prober *p = arg;
    pthread_mutex_lock(&p->mu);
    take(p);
    /* sample k is due k intervals after the first (CLOCK_REALTIME: the condition variable's clock); a
     * deadline already missed by a whole interval is skipped, never made up by samples back to back */
    struct timespec t0, now;
    clock_gettime(CLOCK_REALTIME, &t0);
    for (double due = p->interval; !p->stop; due += p->interval) {
        clock_gettime(CLOCK_REALTIME, &now);
        double late = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9 - due;
        if (late > p->interval)
            due += floor(late / p->interval) * p->interval;
        double t = (double)t0.tv_nsec * 1e-9 + due;
        struct timespec dl = { t0.tv_sec + (time_t)t, (long)((t - (double)(time_t)t) * 1e9) };
        while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &dl) == 0)
            ; /* woken early (spuriously): wait on to the deadline, unless told to stop */
        take(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

struct prober *prober_start(double interval_s, const char *disk, prober_tick tick, void *ctx)
{
    struct prober *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->tick = tick;
    p->ctx = ctx;
    p->interval = interval_s > 0 ? interval_s : 1.0;
    snprintf(p->disk, sizeof p->disk, "%s", disk ? disk : "");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (pthread_create(&p->th, NULL, run, p) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

void prober_stop(struct prober *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
}

static void compute(struct prober_rates *r, const struct snap *a, const struct snap *b)
{
    memset(r, 0, sizeof *r);
    double dt = b->t - a->t;
    uint64_t tot = 0, d[8];
    for (int i = 0; i < 8; i++) {
        d[i] = b->cpu[i] - a->cpu[i];
        tot += d[i];
    }
    double pc = tot ? 100.0 / (double)tot : 0;
    r->t = b->t;
    r->dt = dt;
    r->cpu_busy_pct = (double)(tot - d[3] - d[4]) * pc;
    r->cpu_user_pct = (double)(d[0] + d[1]) * pc;
    r->cpu_sys_pct = (double)d[2] * pc;
    r->cpu_iowait_pct = (double)d[4] * pc;
    r->cpu_irq_pct = (double)(d[5] + d[6]) * pc;
    r->cpu_steal_pct = (double)d[7] * pc;
    r->intr_per_s = (double)(b->intr - a->intr) / dt;
    r->irq_lines_per_s = (double)(b->irq_lines - a->irq_lines) / dt;
    r->ctxt_per_s = (double)(b->ctxt - a->ctxt) / dt;
    r->disk_reads_per_s = (double)(b->d_rd - a->d_rd) / dt;
    r->disk_writes_per_s = (double)(b->d_wr - a->d_wr) / dt;
    r->disk_util_pct = (double)(b->d_ticks - a->d_ticks) / (dt * 10.0);
    r->disk_queue = (double)(b->d_queue - a->d_queue) / (dt * 1000.0);
    r->pgpgin_kib_per_s = (double)(b->pgin - a->pgin) / dt;
    r->pgpgout_kib_per_s = (double)(b->pgout - a->pgout) / dt;
    r->pgmajfault_per_s = (double)(b->pgmajfault - a->pgmajfault) / dt;
    r->pswpin_per_s = (double)(b->pswpin - a->pswpin) / dt;
    r->pswpout_per_s = (double)(b->pswpout - a->pswpout) / dt;
    r->net_rx_bytes_per_s = (double)(b->net_rx - a->net_rx) / dt;
    r->net_tx_bytes_per_s = (double)(b->net_tx - a->net_tx) / dt;
    for (int i = 0; i < b->nnics; i++) { /* a NIC by its name in both samples (one may come or go) */
        for (int k = 0; k < a->nnics; k++)
            if (!strcmp(a->nic[k].name, b->nic[i].name)) {
                int n = r->nnics++;
                snprintf(r->nic[n].name, sizeof r->nic[n].name, "%s", b->nic[i].name);
                r->nic[n].rx_packets_per_s = (double)(b->nic[i].rxp - a->nic[k].rxp) / dt;
                r->nic[n].tx_packets_per_s = (double)(b->nic[i].txp - a->nic[k].txp) / dt;
                r->nic[n].errors_per_s = (double)(b->nic[i].errs - a->nic[k].errs) / dt;
                r->net_packets_per_s += r->nic[n].rx_packets_per_s + r->nic[n].tx_packets_per_s;
                r->net_errors_per_s += r->nic[n].errors_per_s;
                break;
            }
    }
    r->mem_free_kib = b->mem_free;
    r->mem_available_kib = b->mem_avail;
    r->mem_cached_kib = b->mem_cached;
    r->mem_buffers_kib = b->mem_buffers;
    r->mem_shared_kib = b->mem_shared;
    r->swap_total_kib = b->swap_total;
    r->swap_free_kib = b->swap_free;
}

static void rates(struct json *j, const struct snap *a, const struct snap *b)
{
    struct prober_rates r;
    compute(&r, a, b);
    prober_rates_json(j, &r);
}

void prober_rates_json(struct json *j, const struct prober_rates *rp)
{
    const struct prober_rates r = *rp;
    json_obj(j);
    json_kfixed(j, "t", r.t, 3);
    json_kfixed(j, "dt", r.dt, 3);
    json_kfixed(j, "cpu_busy_pct", r.cpu_busy_pct, 2);
    json_kfixed(j, "cpu_user_pct", r.cpu_user_pct, 2);
    json_kfixed(j, "cpu_sys_pct", r.cpu_sys_pct, 2);
    json_kfixed(j, "cpu_iowait_pct", r.cpu_iowait_pct, 2);
    json_kfixed(j, "cpu_irq_pct", r.cpu_irq_pct, 2);
    json_kfixed(j, "cpu_steal_pct", r.cpu_steal_pct, 2);
    json_kfixed(j, "intr_per_s", r.intr_per_s, 1);
    json_kfixed(j, "irq_lines_per_s", r.irq_lines_per_s, 1);
    json_kfixed(j, "ctxt_per_s", r.ctxt_per_s, 1);
    json_kfixed(j, "disk_reads_per_s", r.disk_reads_per_s, 1);
    json_kfixed(j, "disk_writes_per_s", r.disk_writes_per_s, 1);
    json_kfixed(j, "disk_util_pct", r.disk_util_pct, 2);
    json_kfixed(j, "disk_queue", r.disk_queue, 3);
    json_kfixed(j, "pgpgin_kib_per_s", r.pgpgin_kib_per_s, 1);
    json_kfixed(j, "pgpgout_kib_per_s", r.pgpgout_kib_per_s, 1);
    json_kfixed(j, "pgmajfault_per_s", r.pgmajfault_per_s, 1);
    json_kfixed(j, "swap_in_pages_per_s", r.pswpin_per_s, 1);
    json_kfixed(j, "swap_out_pages_per_s", r.pswpout_per_s, 1);
    json_kfixed(j, "net_rx_bytes_per_s", r.net_rx_bytes_per_s, 1);
    json_kfixed(j, "net_tx_bytes_per_s", r.net_tx_bytes_per_s, 1);
    json_kfixed(j, "net_packets_per_s", r.net_packets_per_s, 1);
    json_key(j, "nics");
    json_arr(j);
    for (int i = 0; i < r.nnics; i++) {
        json_obj(j);
        json_kstr(j, "name", r.nic[i].name);
        json_kfixed(j, "rx_packets_per_s", r.nic[i].rx_packets_per_s, 1);
        json_kfixed(j, "tx_packets_per_s", r.nic[i].tx_packets_per_s, 1);
        json_kfixed(j, "errors_per_s", r.nic[i].errors_per_s, 2);
        json_obj_end(j);
    }
    json_arr_end(j);
    json_kuint(j, "mem_free_kib", r.mem_free_kib);
    json_kuint(j, "mem_available_kib", r.mem_available_kib);
    json_kuint(j, "mem_cached_kib", r.mem_cached_kib);
    json_kuint(j, "mem_buffers_kib", r.mem_buffers_kib);
    json_kuint(j, "mem_shared_kib", r.mem_shared_kib);
    json_kuint(j, "swap_total_kib", r.swap_total_kib);
    json_kuint(j, "swap_free_kib", r.swap_free_kib);
    json_obj_end(j);
}

bool prober_whole(const struct prober *p, struct prober_rates *out)
{
    if (!p || p->n < 2)
        return false;
    compute(out, &p->s[0], &p->s[p->n - 1]);
    return true;
}

void prober_json(const struct prober *p, struct json *j)
{
    json_key(j, "system");
    json_obj(j);
    json_kstr(j, "disk", p ? p->disk : "");
    json_kfixed(j, "interval_s", p ? p->interval : 0.0, 3);
    json_key(j, "samples");
    json_arr(j);
    for (size_t i = 1; p && i < p->n; i++)
        rates(j, &p->s[i - 1], &p->s[i]);
    json_arr_end(j);
    json_key(j, "whole_run");
    if (p && p->n >= 2)
        rates(j, &p->s[0], &p->s[p->n - 1]);
    else
        json_null(j);
    json_obj_end(j);
}

void prober_free(struct prober *p)
{
    if (!p)
        return;
    free(p->s);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}
