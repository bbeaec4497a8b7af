/* results_csv.c - --results-csv: Iometer's results file (the CSV every
 * Iometer analysis script reads), one test per run: the test type and
 * description, the version of the layout, a time stamp, the access specs
 * run, and the 'Results table with its ALL row (every worker), one MANAGER
 * row (this host), a WORKER row per worker and a DISK row per target of
 * each worker, in Iometer's 59 columns. What Linux (or iogen) cannot give is
 * left empty: docs/iogen.md lists those columns and why. */
#include "run.h"
#include "prober.h"

#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char HEADER[] =
    "'Target Type,Target Name,Access Specification Name,# Managers,# Workers,# Disks,IOps,Read IOps,Write IOps,"
    "MBps (Binary),Read MBps (Binary),Write MBps (Binary),MBps (Decimal),Read MBps (Decimal),Write MBps (Decimal),"
    "Transactions per Second,Connections per Second,Average Response Time,Average Read Response Time,"
    "Average Write Response Time,Average Transaction Time,Average Connection Time,Maximum Response Time,"
    "Maximum Read Response Time,Maximum Write Response Time,Maximum Transaction Time,Maximum Connection Time,"
    "Errors,Read Errors,Write Errors,Bytes Read,Bytes Written,Read I/Os,Write I/Os,Connections,"
    "Transactions per Connection,Total Raw Read Response Time,Total Raw Write Response Time,"
    "Total Raw Transaction Time,Total Raw Connection Time,Maximum Raw Read Response Time,"
    "Maximum Raw Write Response Time,Maximum Raw Transaction Time,Maximum Raw Connection Time,Total Raw Run Time,"
    "Starting Sector,Maximum Size,Queue Depth,% CPU Utilization,% User Time,% Privileged Time,% DPC Time,"
    "% Interrupt Time,Processor Speed,Interrupts per Second,CPU Effectiveness,Packets/Second,Packet Errors,"
    "Segments Retransmitted/Second\n";

/* A text field: quoted when it holds a comma or a quote (CSV). */
static void field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fprintf(f, ",%s", s);
        return;
    }
    fputs(",\"", f);
    for (; *s; s++)
        fprintf(f, *s == '"' ? "\"\"" : "%c", *s);
    fputc('"', f);
}

/* One row: its counts s over secs; start sector, size (sectors) and queue depth (< 0: differ, left empty);
 * the CPU and network columns from r (NULL: empty, as Iometer leaves them for workers and disks). */
static void row(FILE *f, const char *type, const char *name, const char *spec, int managers, int workers, int disks,
                const struct tstat *s, double secs, long long start, long long size, int qd,
                const struct prober_rates *r)
{
    const double MiB = 1048576.0, MB = 1e6;
    uint64_t ios = s->reads + s->writes;
    double iops = (double)ios / secs, ms = 1e-6;
    double avg = ios ? (double)s->lat_sum / (double)ios * ms : 0;
    fputs(type, f);
    field(f, name);
    field(f, spec);
    fprintf(f, managers >= 0 ? ",%d" : ",", managers);
    fprintf(f, workers >= 0 ? ",%d" : ",", workers);
    fprintf(f, disks >= 0 ? ",%d" : ",", disks);
    fprintf(f, ",%.6f,%.6f,%.6f", iops, (double)s->reads / secs, (double)s->writes / secs);
    fprintf(f, ",%.6f,%.6f,%.6f", (double)(s->bytes_r + s->bytes_w) / secs / MiB, (double)s->bytes_r / secs / MiB,
            (double)s->bytes_w / secs / MiB);
    fprintf(f, ",%.6f,%.6f,%.6f", (double)(s->bytes_r + s->bytes_w) / secs / MB, (double)s->bytes_r / secs / MB,
            (double)s->bytes_w / secs / MB);
    /* a disk transaction is one I/O (no reply); the targets stay open: no connections */
    fprintf(f, ",%.6f,0", iops);
    fprintf(f, ",%.6f,%.6f,%.6f,%.6f,0", avg, s->reads ? (double)s->rlat_sum / (double)s->reads * ms : 0,
            s->writes ? (double)s->wlat_sum / (double)s->writes * ms : 0, avg);
    fprintf(f, ",%.6f,%.6f,%.6f,%.6f,0", (double)s->lat_max * ms, (double)s->rlat_max * ms, (double)s->wlat_max * ms,
            (double)s->lat_max * ms);
    /* a run with an I/O error is not reported: no errors */
    fprintf(f, ",0,0,0,%llu,%llu,%llu,%llu,0,", (unsigned long long)s->bytes_r, (unsigned long long)s->bytes_w,
            (unsigned long long)s->reads, (unsigned long long)s->writes);
    fputs(",,,,,,,,,", f); /* the raw columns: Iometer's timer ticks; iogen's own are the JSON's nanoseconds */
    fprintf(f, start >= 0 ? ",%lld" : ",", start);
    fprintf(f, size >= 0 ? ",%lld" : ",", size);
    fprintf(f, qd >= 0 ? ",%d" : ",", qd);
    if (r) {
        double priv = r->cpu_sys_pct + r->cpu_irq_pct;
        fprintf(f, ",%.2f,%.2f,%.2f,,%.2f,,%.1f,%.3f,%.1f,%.2f,", r->cpu_busy_pct, r->cpu_user_pct, priv,
                r->cpu_irq_pct, r->intr_per_s, r->cpu_busy_pct > 0 ? iops / r->cpu_busy_pct : 0.0,
                r->net_packets_per_s, r->net_errors_per_s);
    } else {
        fputs(",,,,,,,,,,,", f);
    }
    fputc('\n', f);
}

void results_csv_run(FILE *f, const struct run_result *in)
{
    const struct job *job = in->job;
    int type = icf_test_type(job);
    fprintf(f, "'Test Type,Test Description\n%d", type < 0 ? 0 : type);
    field(f, job->description);
    fprintf(f, "\n'Version\n1.1.0\n'Time Stamp\n");
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    localtime_r(&tv.tv_sec, &tm);
    fprintf(f, "%04d-%02d-%02d %02d:%02d:%02d:%03d\n", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
            tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
    fprintf(f, "'Access specifications\n");
    for (int i = 0; i < in->nw; i++) { /* each spec of this run once */
        bool seen = false;
        for (int k = 0; k < i; k++)
            seen = seen || !strcmp(in->ws[k].spec->name, in->ws[i].spec->name);
        if (!seen)
            icf_write_spec(f, in->ws[i].spec);
    }
    fprintf(f, "'End access specifications\n'Results\n%s", HEADER);

    /* per worker and target; the ALL and MANAGER rows add them up (the same counts as the JSON's) */
    struct tstat all;
    memset(&all, 0, sizeof all);
    int disks = 0;
    bool same_spec = true, same_start = true, same_size = true, same_qd = true;
    for (int i = 0; i < in->nw; i++) {
        const struct worker *w = &in->ws[i], *w0 = &in->ws[0];
        disks += (int)w->ntargets;
        same_spec = same_spec && !strcmp(w->spec->name, w0->spec->name);
        same_start = same_start && w->cfg->start_bytes == w0->cfg->start_bytes;
        same_size = same_size && w->cfg->max_bytes == w0->cfg->max_bytes;
        same_qd = same_qd && w->qd / w->ntargets == w0->qd / w0->ntargets;
        for (unsigned n = 0; n < w->nstreams; n++)
            for (unsigned k = 0; k < w->ntargets; k++)
                tstat_add(&all, &w->streams[n].tst[k]);
    }
    const struct worker *w0 = &in->ws[0];
    struct prober_rates r;
    bool have = prober_whole(in->pr, &r);
    const char *spec = same_spec ? w0->spec->name : "";
    long long start = same_start ? (long long)(w0->cfg->start_bytes / 512) : -1;
    long long size = same_size ? (long long)(w0->cfg->max_bytes / 512) : -1;
    int qd = same_qd ? (int)(w0->qd / w0->ntargets) : -1;
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    row(f, "ALL", "All", spec, 1, in->nw, disks, &all, in->secs, start, size, qd, have ? &r : NULL);
    row(f, "MANAGER", host, spec, -1, in->nw, disks, &all, in->secs, start, size, qd, have ? &r : NULL);
    for (int i = 0; i < in->nw; i++) {
        const struct worker *w = &in->ws[i];
        struct tstat ws, ts[IOGEN_MAX_TARGETS];
        memset(&ws, 0, sizeof ws);
        memset(ts, 0, sizeof ts);
        for (unsigned n = 0; n < w->nstreams; n++)
            for (unsigned k = 0; k < w->ntargets; k++) {
                tstat_add(&ws, &w->streams[n].tst[k]);
                tstat_add(&ts[k], &w->streams[n].tst[k]);
            }
        long long wstart = (long long)(w->cfg->start_bytes / 512), wsize = (long long)(w->cfg->max_bytes / 512);
        int wqd = (int)(w->qd / w->ntargets);
        row(f, "WORKER", w->cfg->name, w->spec->name, -1, -1, (int)w->ntargets, &ws, in->secs, wstart, wsize, wqd,
            NULL);
        for (unsigned k = 0; k < w->ntargets; k++)
            row(f, "DISK", w->tg[k].t->path, "", -1, -1, -1, &ts[k], in->secs, wstart, wsize, wqd, NULL);
    }
    fprintf(f, "'Time Stamp\n");
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    fprintf(f, "%04d-%02d-%02d %02d:%02d:%02d:%03d\n'End Test\n", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
            tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
    fflush(f);
}
