/* complete.c - the completions of the MPI-IO recorder's nonblocking
 * requests (mpirec.h): MPI_Wait, MPI_Test and their all, any and some forms;
 * a completion of any other request passes through unrecorded. */
#include "mpirec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------- completions */

/* A completion row per finished I/O request: the completing call's name
 * and times, the request's file, and the bytes its status says moved. The
 * first row of a call takes the seq taken before it (seq, when not -1:
 * the POSIX calls made inside the call name it). Returns whether a row was
 * written. */
static bool completed(enum trace_call tc, uint64_t t0, uint64_t t1, int rc, uint64_t key, MPI_Status *st,
                      int64_t *seq)
{
    pthread_mutex_lock(&maps);
    struct ent *e = t_find(&reqs, key), copy;
    bool ours = e != NULL;
    if (ours) {
        copy = *e;
        t_del(&reqs, key);
    }
    pthread_mutex_unlock(&maps);
    if (!ours)
        return false;
    struct args a = {0};
    a_id(&a, "req", 'r', copy.id);
    if (st && st != MPI_STATUS_IGNORE && copy.dt != MPI_DATATYPE_NULL) {
        int got = 0, size = 0;
        PMPI_Type_size(copy.dt, &size);
        if (PMPI_Get_count(st, copy.dt, &got) == MPI_SUCCESS && got != MPI_UNDEFINED)
            a_int(&a, "moved", (long long)got * size);
    }
    struct trace_rec r = {.call = tc, .t_start = t0, .t_end = t1, .fd = copy.file, .file = -1, .path = copy.path,
                          .offset = -1, .ret = rc, .parent = -1, .args = a.s};
    r.seq = *seq >= 0 ? (uint64_t)*seq : rec_take_seq();
    *seq = -1;
    rec_write(&r);
    return true;
}

/* A test that completed none of our requests, inside which the MPI library
 * did POSIX I/O (progressing one): a row of its own, with done=0, so that
 * those rows have their parent and a replay makes the same test. */
static void progressed(enum trace_call tc, uint64_t t0, uint64_t t1, int rc, const struct ent *first, int64_t seq)
{
    if (seq < 0 || !rec_children())
        return;
    struct args a = {0};
    a_id(&a, "req", 'r', first->id);
    a_int(&a, "done", 0);
    struct trace_rec r = {.call = tc, .t_start = t0, .t_end = t1, .fd = first->file, .file = -1,
                          .path = first->path, .offset = -1, .ret = rc, .parent = -1, .args = a.s};
    r.seq = (uint64_t)seq;
    rec_write(&r);
}

/* Whether any of the requests is one of ours; the first one's entry copied into *first. */
static bool any_ours(int n, const MPI_Request *v, struct ent *first)
{
    if (!active || depth || !v)
        return false;
    bool hit = false;
    pthread_mutex_lock(&maps);
    for (int i = 0; i < n && !hit && reqs.n; i++) {
        struct ent *e = v[i] != MPI_REQUEST_NULL ? t_find(&reqs, KEY(v[i])) : NULL;
        if (e) {
            hit = true;
            *first = *e;
        }
    }
    pthread_mutex_unlock(&maps);
    return hit;
}

/* The handles before the call (a completed one becomes MPI_REQUEST_NULL), and statuses of our own where the
 * caller ignores them. */
struct many {
    uint64_t keys_small[64], *keys;
    MPI_Status st_small[64], *st;
    bool own_st;
};

static bool many_begin(struct many *m, int n, const MPI_Request *v, MPI_Status *st)
{
    m->keys = n <= 64 ? m->keys_small : malloc((size_t)n * sizeof *m->keys);
    m->own_st = st == MPI_STATUSES_IGNORE;
    m->st = !m->own_st ? st : n <= 64 ? m->st_small : malloc((size_t)n * sizeof *m->st);
    if (!m->keys || !m->st) {
        if (m->keys != m->keys_small)
            free(m->keys);
        if (m->own_st && m->st != m->st_small)
            free(m->st);
        return false;
    }
    for (int i = 0; i < n; i++)
        m->keys[i] = KEY(v[i]);
    return true;
}

static void many_end(struct many *m)
{
    if (m->keys != m->keys_small)
        free(m->keys);
    if (m->own_st && m->st != m->st_small)
        free(m->st);
}

/* Around a completion call of ours: a seq taken for its first row, POSIX calls inside it linked to that. */
#define COMPLETION_BEGIN()                                                                               \
    depth++;                                                                                             \
    int64_t seq = (int64_t)rec_take_seq(), prev = rec_enter(seq);                                        \
    uint64_t t0 = rec_now()

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
    struct ent first;
    if (!req || !any_ours(1, req, &first))
        return PMPI_Wait(req, st);
    uint64_t key = KEY(*req);
    STATUS_OF(st);
    COMPLETION_BEGIN();
    int rc = PMPI_Wait(req, s_);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    if (!completed(TC_MPI_WAIT, t0, t1, rc, key, s_, &seq))
        progressed(TC_MPI_WAIT, t0, t1, rc, &first, seq);
    depth--;
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    struct ent first;
    if (!req || !any_ours(1, req, &first))
        return PMPI_Test(req, flag, st);
    uint64_t key = KEY(*req);
    STATUS_OF(st);
    COMPLETION_BEGIN();
    int rc = PMPI_Test(req, flag, s_);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    if (!(rc == MPI_SUCCESS && *flag && completed(TC_MPI_TEST, t0, t1, rc, key, s_, &seq)))
        progressed(TC_MPI_TEST, t0, t1, rc, &first, seq);
    depth--;
    return rc;
}

int MPI_Waitall(int n, MPI_Request reqs_[], MPI_Status sts[])
{
    struct many m;
    struct ent first;
    if (!any_ours(n, reqs_, &first) || !many_begin(&m, n, reqs_, sts))
        return PMPI_Waitall(n, reqs_, sts);
    COMPLETION_BEGIN();
    int rc = PMPI_Waitall(n, reqs_, m.st);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    bool any = false;
    for (int i = 0; i < n; i++)
        any |= completed(TC_MPI_WAITALL, t0, t1, rc, m.keys[i], &m.st[i], &seq);
    if (!any)
        progressed(TC_MPI_WAITALL, t0, t1, rc, &first, seq);
    many_end(&m);
    depth--;
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs_[], int *flag, MPI_Status sts[])
{
    struct many m;
    struct ent first;
    if (!any_ours(n, reqs_, &first) || !many_begin(&m, n, reqs_, sts))
        return PMPI_Testall(n, reqs_, flag, sts);
    COMPLETION_BEGIN();
    int rc = PMPI_Testall(n, reqs_, flag, m.st);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    bool any = false;
    for (int i = 0; rc == MPI_SUCCESS && *flag && i < n; i++)
        any |= completed(TC_MPI_TESTALL, t0, t1, rc, m.keys[i], &m.st[i], &seq);
    if (!any)
        progressed(TC_MPI_TESTALL, t0, t1, rc, &first, seq);
    many_end(&m);
    depth--;
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs_[], int *index, MPI_Status *st)
{
    struct many m;
    struct ent first;
    if (!any_ours(n, reqs_, &first) || !many_begin(&m, n, reqs_, MPI_STATUSES_IGNORE))
        return PMPI_Waitany(n, reqs_, index, st);
    STATUS_OF(st);
    COMPLETION_BEGIN();
    int rc = PMPI_Waitany(n, reqs_, index, s_);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    if (!(rc == MPI_SUCCESS && *index != MPI_UNDEFINED && *index >= 0 && *index < n &&
          completed(TC_MPI_WAITANY, t0, t1, rc, m.keys[*index], s_, &seq)))
        progressed(TC_MPI_WAITANY, t0, t1, rc, &first, seq);
    many_end(&m);
    depth--;
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs_[], int *index, int *flag, MPI_Status *st)
{
    struct many m;
    struct ent first;
    if (!any_ours(n, reqs_, &first) || !many_begin(&m, n, reqs_, MPI_STATUSES_IGNORE))
        return PMPI_Testany(n, reqs_, index, flag, st);
    STATUS_OF(st);
    COMPLETION_BEGIN();
    int rc = PMPI_Testany(n, reqs_, index, flag, s_);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    if (!(rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED && *index >= 0 && *index < n &&
          completed(TC_MPI_TESTANY, t0, t1, rc, m.keys[*index], s_, &seq)))
        progressed(TC_MPI_TESTANY, t0, t1, rc, &first, seq);
    many_end(&m);
    depth--;
    return rc;
}

static int some(bool wait, int n, MPI_Request reqs_[], int *outcount, int idx[], MPI_Status sts[])
{
    struct many m;
    struct ent first;
    if (!any_ours(n, reqs_, &first) || !many_begin(&m, n, reqs_, sts))
        return wait ? PMPI_Waitsome(n, reqs_, outcount, idx, sts) : PMPI_Testsome(n, reqs_, outcount, idx, sts);
    enum trace_call tc = wait ? TC_MPI_WAITSOME : TC_MPI_TESTSOME;
    COMPLETION_BEGIN();
    int rc = wait ? PMPI_Waitsome(n, reqs_, outcount, idx, m.st) : PMPI_Testsome(n, reqs_, outcount, idx, m.st);
    uint64_t t1 = rec_now();
    rec_leave(prev);
    bool any = false;
    for (int k = 0; rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED && k < *outcount; k++)
        if (idx[k] >= 0 && idx[k] < n)
            any |= completed(tc, t0, t1, rc, m.keys[idx[k]], &m.st[k], &seq);
    if (!any)
        progressed(tc, t0, t1, rc, &first, seq);
    many_end(&m);
    depth--;
    return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs_[], int *outcount, int idx[], MPI_Status sts[])
{
    return some(true, n, reqs_, outcount, idx, sts);
}

int MPI_Testsome(int n, MPI_Request reqs_[], int *outcount, int idx[], MPI_Status sts[])
{
    return some(false, n, reqs_, outcount, idx, sts);
}
