/* report.c - the MPI replay's result (replayer.h): every rank's tallies, class histograms, times and
 * mismatches gathered on rank 0, printed there as one JSON object by the one JSON writer (json.h):
 * a path or host name in it is escaped, whatever its bytes. */
#include "json.h"
#include "replayer.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tally tally[TC_NCALLS];
struct hist cls[TCL_N]; /* each call's replayed time, by class (a completion: its request's) */
unsigned long long cls_moved[TCL_N];
struct mismatch mism[MAX_LISTED];
long long nmism;
double coll_ns[TC_NCALLS]; /* per collective call type, this rank's time in it */

static void json_tally(struct json *j, const char *name, const struct tally *x)
{
    json_key(j, name);
    json_obj(j);
    json_kuint(j, "count", x->count);
    json_kuint(j, "bytes", x->bytes);
    json_kuint(j, "moved_recorded", x->moved_rec);
    json_kuint(j, "moved_replayed", x->moved_rep);
    json_kuint(j, "recorded_ns", x->rec_ns);
    json_kuint(j, "replayed_ns", x->rep_ns);
    json_obj_end(j);
}

static void json_class(struct json *j, const char *name, const struct hist *h, unsigned long long moved)
{
    json_key(j, name);
    json_obj(j);
    json_kuint(j, "moved", moved);
    json_kuint(j, "ns", h->sum);
    json_key(j, "lat_ns");
    hist_json(j, h);
    json_obj_end(j);
}

/* The classes' histograms of every rank, added on rank 0. */
static void gather_classes(struct hist *all, unsigned long long *all_moved)
{
    MPI_Reduce(cls_moved, all_moved, TCL_N, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int c = 0; c < TCL_N; c++) {
        hist_clear(&all[c]);
        uint64_t mine[2] = {cls[c].count, cls[c].sum}, got[2] = {0, 0};
        MPI_Reduce(cls[c].b, all[c].b, HIST_BUCKETS, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(mine, got, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&cls[c].min, &all[c].min, 1, MPI_UINT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&cls[c].max, &all[c].max, 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
        all[c].count = got[0], all[c].sum = got[1];
    }
}

/* Every rank's listed mismatches on rank 0 (*n of them), in rank order. */
static struct mismatch *gather_mismatches(int *n)
{
    int listed = (int)(nmism < MAX_LISTED ? nmism : MAX_LISTED), *counts = NULL, *displs = NULL;
    struct mismatch *all = NULL;
    if (me == 0)
        counts = calloc((size_t)nranks, sizeof *counts), displs = calloc((size_t)nranks, sizeof *displs);
    MPI_Gather(&listed, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int bytes_per = (int)sizeof(struct mismatch);
    *n = 0;
    if (me == 0) {
        for (int i = 0; i < nranks; i++) {
            displs[i] = *n * bytes_per;
            *n += counts[i];
            counts[i] *= bytes_per;
        }
        all = calloc((size_t)*n + 1, sizeof *all);
    }
    MPI_Gatherv(mism, listed * bytes_per, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(counts), free(displs);
    return all;
}

void report(const struct trace *t, const char *path, const char *dir, const char *timing, uint64_t wall,
            uint64_t rank_ns, long long outside)
{
    struct hist *cls_all = calloc(TCL_N, sizeof *cls_all);
    unsigned long long all_moved[TCL_N];
    gather_classes(cls_all, all_moved);
    struct tally sum[TC_NCALLS];
    MPI_Reduce(tally, sum, (int)(TC_NCALLS * sizeof(struct tally) / sizeof(unsigned long long)),
               MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    /* each rank's time, calls replayed and bytes they moved (recorded, replayed) */
    unsigned long long mine[4] = {rank_ns, 0, 0, 0}, *per_rank = me == 0 ? calloc((size_t)nranks * 4, 8) : NULL;
    for (int c = 0; c < TC_NCALLS; c++)
        mine[1] += tally[c].count, mine[2] += tally[c].moved_rec, mine[3] += tally[c].moved_rep;
    MPI_Gather(mine, 4, MPI_UNSIGNED_LONG_LONG, per_rank, 4, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    char host[64] = "", *hosts = me == 0 ? calloc((size_t)nranks, sizeof host) : NULL;
    gethostname(host, sizeof host - 1);
    MPI_Gather(host, sizeof host, MPI_CHAR, hosts, sizeof host, MPI_CHAR, 0, MPI_COMM_WORLD);
    double *coll_all = me == 0 ? calloc((size_t)nranks * TC_NCALLS, sizeof *coll_all) : NULL;
    MPI_Gather(coll_ns, TC_NCALLS, MPI_DOUBLE, coll_all, TC_NCALLS, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    long long total_mism = 0;
    MPI_Reduce(&nmism, &total_mism, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    int nlisted = 0;
    struct mismatch *all = gather_mismatches(&nlisted);
    if (me != 0) {
        free(cls_all);
        return;
    }
    uint64_t rec_first = UINT64_MAX, rec_last = 0;
    unsigned long long moved = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct trace_rec *r = &t->rec[i];
        enum trace_kind k = trace_calls[r->call].kind;
        if (k == TK_MPI_INIT || k == TK_MPI_FINALIZE || k == TK_DEF)
            continue;
        rec_first = r->t_start < rec_first ? r->t_start : rec_first;
        rec_last = r->t_end > rec_last ? r->t_end : rec_last;
    }
    for (int c = TC_NPOSIX + 1; c < TC_NCALLS; c++)
        moved += sum[c].moved_rep;
    struct json j;
    json_to_file(&j, stdout);
    json_obj(&j);
    json_kstr(&j, "trace", path);
    json_kstr(&j, "dir", dir);
    json_kint(&j, "ranks", nranks);
    json_kstr(&j, "timing", timing);
    json_kuint(&j, "recorded_wall_ns", rec_first < rec_last ? rec_last - rec_first : 0);
    json_kuint(&j, "replayed_wall_ns", wall);
    json_kuint(&j, "mpi_bytes_moved", moved);
    json_kint(&j, "rows_of_no_rank", outside); /* rank -1: not replayed */
    json_kfixed(&j, "bandwidth_mbs", wall ? (double)moved / ((double)wall / 1e9) / 1e6 : 0.0, 3);
    json_key(&j, "calls");
    json_obj(&j);
    for (int c = 0; c < TC_NCALLS; c++)
        if (sum[c].count)
            json_tally(&j, trace_calls[c].name, &sum[c]);
    json_obj_end(&j);
    json_key(&j, "rank_ns");
    json_arr(&j);
    for (int i = 0; i < nranks; i++)
        json_uint(&j, per_rank[4 * i]);
    json_arr_end(&j);
    json_key(&j, "rank_calls"); /* per rank: calls replayed, bytes moved recorded and replayed */
    json_arr(&j);
    for (int i = 0; i < nranks; i++) {
        json_obj(&j);
        json_kuint(&j, "count", per_rank[4 * i + 1]);
        json_kuint(&j, "moved_recorded", per_rank[4 * i + 2]);
        json_kuint(&j, "moved_replayed", per_rank[4 * i + 3]);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    json_key(&j, "rank_hosts");
    json_arr(&j);
    for (int i = 0; i < nranks; i++)
        json_strn(&j, hosts + (size_t)i * sizeof host, strnlen(hosts + (size_t)i * sizeof host, sizeof host));
    json_arr_end(&j);
    json_key(&j, "classes");
    json_obj(&j);
    for (int c = 0; c < TCL_N; c++)
        json_class(&j, trace_class_names[c], &cls_all[c], all_moved[c]);
    json_obj_end(&j);
    json_key(&j, "slowest_rank");
    json_obj(&j);
    for (int c = 0; c < TC_NCALLS; c++) {
        if (!trace_calls[c].collective || !sum[c].count)
            continue;
        int worst = 0;
        for (int i = 1; i < nranks; i++)
            if (coll_all[(size_t)i * TC_NCALLS + c] > coll_all[(size_t)worst * TC_NCALLS + c])
                worst = i;
        json_key(&j, trace_calls[c].name);
        json_obj(&j);
        json_kint(&j, "rank", worst);
        json_kfixed(&j, "ns", coll_all[(size_t)worst * TC_NCALLS + c], 0);
        json_obj_end(&j);
    }
    json_obj_end(&j);
    json_kint(&j, "mismatch_count", total_mism);
    json_key(&j, "mismatches");
    json_arr(&j);
    for (int i = 0; i < nlisted; i++) {
        const struct mismatch *m = &all[i];
        const struct trace_rec *r = &t->rec[m->seq];
        json_obj(&j);
        json_kint(&j, "seq", m->seq);
        json_kint(&j, "line", m->seq + 3);
        json_kint(&j, "rank", m->rank);
        json_kstr(&j, "call", trace_calls[r->call].name);
        json_kint(&j, "moved_recorded", m->moved_rec);
        json_kint(&j, "moved_replayed", m->moved_rep);
        json_kint(&j, "ret_recorded", (long long)r->ret);
        json_kint(&j, "ret_replayed", m->ret_rep);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    json_obj_end(&j);
    json_line_end(&j, "the replay's result to standard output");
    free(cls_all), free(per_rank), free(hosts), free(coll_all), free(all);
}
