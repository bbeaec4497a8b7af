/* replay.c - replay: the trace's calls again, with the same processes and
 * threads, on files of its own; recorded against replayed times as JSON. */
#include "commands.h"
#include "hist.h"
#include "iotrace.h"
#include "timeline.h"
#include "mpi_launch.h"
#include "order.h"
#include "osm.h"
#include "osmconfine.h"
#include "prepare.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------- replay */

/* One open descriptor of one recorded process: the open that made it (or
 * NONE when the process inherited it over fork), the calls made on it
 * before its close. Calls on it in other threads wait for its open; its
 * close waits for those calls. */
struct slot {
    size_t open_row;
    int64_t file;
    int implicit_flags;
    long uses;
    /* at run time, in the replaying process */
    atomic_int state; /* 0 not open yet, 1 open */
    int fd;
    atomic_long done;
};

struct mismatch {
    size_t row;
    int64_t ret;
    int err;
};

struct shared { /* between the replaying processes and the parent (MAP_SHARED) */
    atomic_ulong nmismatch;
    struct mismatch mismatch[MAX_MISMATCHES];
    pthread_mutex_t lock;          /* process-shared: each process adds its threads' figures at its end */
    struct tally calls[TC_NCALLS]; /* every process's, added */
    struct hist cls[TCL_N];        /* each call's replayed time by class, every process's merged */
};

static struct {
    const struct trace *t;
    uint64_t (*times)[2]; /* --timeline: each row's replayed start and end (MAP_SHARED), else NULL */
    const struct layout *L;
    const char *dir;
    int dirfd; /* every file is opened inside it (osmconfine.h) */
    struct slot *slots;
    size_t *row_slot;
    struct shared *sh;
    pthread_mutex_t lock; /* slot waits, per process */
    pthread_cond_t cond;
    pthread_barrier_t start;
} R = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

struct worker {
    const struct thread_rows *rows;
    size_t g; /* index in the layout's threads */
    struct tally calls[TC_NCALLS];
    struct hist cls[TCL_N]; /* each call's replayed time, by class */
    char *buf;
    struct iovec iov[IOV_MAX];
    pthread_t th;
};

/* Process pi's histograms by class, after every process's tallies in the shared region. */
/* The replay's name for a recorded file: f<id> in DIR, never anything else. */
static void file_name(char *out, size_t n, int64_t file) { snprintf(out, n, "f%lld", (long long)file); }

/* A recorded open made again inside DIR: a link or another file put there ends the replay. */
static int open_in_dir(const char *name, int flags, mode_t mode)
{
    int fd = osm_confined_open(R.dirfd, name, flags, mode);
    if (fd < 0 && (errno == ELOOP || errno == EMLINK || errno == ENODEV))
        iot_fail(2, "%s/%s: %s", R.dir, name, osm_confined_why(errno));
    return fd;
}

static int slot_fd(struct slot *s)
{
    if (atomic_load(&s->state))
        return s->fd;
    pthread_mutex_lock(&R.lock);
    while (!atomic_load(&s->state)) {
        if (s->open_row == NONE) { /* inherited: open it ourselves, untimed */
            char name[32];
            file_name(name, sizeof name, s->file);
            s->fd = open_in_dir(name, s->implicit_flags, 0644);
            atomic_store(&s->state, 1);
        } else {
            pthread_cond_wait(&R.cond, &R.lock);
        }
    }
    pthread_mutex_unlock(&R.lock);
    return s->fd;
}

static void slot_opened(struct slot *s, int fd)
{
    s->fd = fd;
    pthread_mutex_lock(&R.lock);
    atomic_store(&s->state, 1);
    pthread_cond_broadcast(&R.cond);
    pthread_mutex_unlock(&R.lock);
}

static void slot_used(struct slot *s)
{
    if (atomic_fetch_add(&s->done, 1) + 1 == s->uses) {
        pthread_mutex_lock(&R.lock);
        pthread_cond_broadcast(&R.cond);
        pthread_mutex_unlock(&R.lock);
    }
}

static void slot_wait_uses(struct slot *s)
{
    if (atomic_load(&s->done) >= s->uses)
        return;
    pthread_mutex_lock(&R.lock);
    while (atomic_load(&s->done) < s->uses)
        pthread_cond_wait(&R.cond, &R.lock);
    pthread_mutex_unlock(&R.lock);
}

/* Splits bytes over iovcnt buffers (an invalid count goes to the kernel as recorded). */
static int fill_iov(struct worker *w, int64_t bytes, int64_t cnt)
{
    if (cnt < 1 || cnt > IOV_MAX)
        return cnt < INT_MIN ? INT_MIN : cnt > INT_MAX ? INT_MAX : (int)cnt;
    size_t each = (size_t)bytes / (size_t)cnt, at = 0;
    for (int64_t i = 0; i < cnt; i++) {
        size_t len = i == cnt - 1 ? (size_t)bytes - at : each;
        w->iov[i] = (struct iovec){w->buf + at, len};
        at += len;
    }
    return (int)cnt;
}

static void replay_row(struct worker *w, size_t i)
{
    const struct trace_rec *r = &R.t->rec[i];
    enum trace_kind kind = trace_calls[r->call].kind;
    struct slot *s = R.row_slot[i] == NONE ? NULL : &R.slots[R.row_slot[i]];
    char name[32];
    int fd = -1, iovcnt = 0;
    if (kind == TK_OPEN)
        file_name(name, sizeof name, r->file);
    else
        fd = slot_fd(s);
    if (kind == TK_CLOSE)
        slot_wait_uses(s);
    if (trace_calls[r->call].vector)
        iovcnt = fill_iov(w, r->bytes, r->flags);
    bool at = trace_calls[r->call].positioned || r->offset >= 0;
    size_t n = (size_t)r->bytes;
    off_t off = (off_t)r->offset;
    int flags = (int)r->flags;
    mode_t mode = (mode_t)r->mode;

    uint64_t t0 = iot_now_ns();
    int64_t ret = -1;
    switch (r->call) {
    case TC_OPEN: case TC_OPEN64: case TC_OPENAT: case TC_OPENAT64: ret = open_in_dir(name, flags, mode); break;
    case TC_CREAT: case TC_CREAT64: ret = open_in_dir(name, O_CREAT | O_WRONLY | O_TRUNC, mode); break;
    case TC_CLOSE: ret = close(fd); break;
    case TC_READ: case TC_PREAD: case TC_PREAD64:
        ret = at ? pread(fd, w->buf, n, off) : read(fd, w->buf, n); break;
    case TC_WRITE: case TC_PWRITE: case TC_PWRITE64:
        ret = at ? pwrite(fd, w->buf, n, off) : write(fd, w->buf, n); break;
    case TC_READV: ret = at ? preadv(fd, w->iov, iovcnt, off) : readv(fd, w->iov, iovcnt); break;
    case TC_WRITEV: ret = at ? pwritev(fd, w->iov, iovcnt, off) : writev(fd, w->iov, iovcnt); break;
    case TC_LSEEK: case TC_LSEEK64: /* to where the recorded one went, or as it failed */
        ret = r->ret >= 0 ? lseek(fd, (off_t)r->ret, SEEK_SET) : lseek(fd, off, flags); break;
    case TC_FSYNC: ret = fsync(fd); break;
    case TC_FDATASYNC: ret = fdatasync(fd); break;
    case TC_FTRUNCATE: case TC_FTRUNCATE64: ret = ftruncate(fd, off); break;
    default: break; /* MPI rows: refused when the trace is loaded (cmd_replay) */
    }
    uint64_t t1 = iot_now_ns();
    int err = ret == -1 ? errno : 0;
    if (R.times)
        R.times[i][0] = t0, R.times[i][1] = t1;

    if (kind == TK_OPEN && s)
        slot_opened(s, (int)ret);
    else if (kind == TK_OPEN && ret >= 0)
        close((int)ret); /* recorded as failed: do not leak it */
    else if (kind != TK_OPEN && kind != TK_CLOSE)
        slot_used(s);

    hist_add(&w->cls[trace_class_of(r->call)], t1 - t0);
    struct tally *c = &w->calls[r->call];
    c->count++;
    c->bytes += (uint64_t)r->bytes;
    c->rec_ns += r->t_end - r->t_start;
    c->rep_ns += t1 - t0;
    if (moves_data(r->call)) {
        c->done_rec += r->ret > 0 ? (uint64_t)r->ret : 0;
        c->done_rep += ret > 0 ? (uint64_t)ret : 0;
    }
    bool same = kind == TK_OPEN ? (ret >= 0) == (r->ret >= 0) : ret == r->ret;
    if (!same) {
        unsigned long k = atomic_fetch_add(&R.sh->nmismatch, 1);
        if (k < MAX_MISMATCHES)
            R.sh->mismatch[k] = (struct mismatch){i, ret, err};
    }
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static void random_fill(char *buf, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v = xorshift(&s);
        memcpy(buf + i, &v, 8);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_barrier_wait(&R.start);
    order_wait(w->g);
    for (size_t k = 0; k < w->rows->n; k++) {
        replay_row(w, w->rows->rows[k]);
        order_done(w->rows->rows[k]);
    }
    return NULL;
}

/* One replaying process: its threads start together when the parent closes `go`. */
static _Noreturn void replay_process(const struct proc_rows *p, size_t pi, int ready, int go)
{
    struct worker *w = iot_xcalloc(p->nthreads, sizeof *w);
    pthread_barrier_init(&R.start, NULL, (unsigned)p->nthreads + 1);
    for (size_t k = 0; k < p->nthreads; k++) {
        int64_t most = 4096;
        for (size_t j = 0; j < p->threads[k].n; j++) {
            const struct trace_rec *r = &R.t->rec[p->threads[k].rows[j]];
            most = moves_data(r->call) && r->bytes > most ? r->bytes : most;
        }
        size_t size = ((size_t)most + 4095) & ~(size_t)4095; /* aligned, for O_DIRECT */
        w[k].rows = &p->threads[k];
        w[k].g = (size_t)(&p->threads[k] - R.L->threads);
        for (int c = 0; c < TCL_N; c++) /* calloc's zeros are a cleared histogram's but its min: the pages of */
            w[k].cls[c].min = UINT64_MAX; /* buckets no call reaches are never touched (10,000 threads) */
        if (posix_memalign((void **)&w[k].buf, 4096, size))
            iot_fail(1, "cannot allocate %zu bytes for a replay thread", size);
        random_fill(w[k].buf, size, pi * 1000 + k + 1);
        if (pthread_create(&w[k].th, NULL, worker_main, &w[k]))
            iot_fail(1, "cannot create a replay thread");
    }
    char c = 1;
    if (write(ready, &c, 1) != 1 || read(go, &c, 1) < 0)
        iot_fail(1, "lost the replay's parent");
    pthread_barrier_wait(&R.start);
    for (size_t k = 0; k < p->nthreads; k++)
        pthread_join(w[k].th, NULL);
    pthread_mutex_lock(&R.sh->lock); /* one set for all processes: memory that does not grow with them */
    for (size_t k = 0; k < p->nthreads; k++) {
        for (int j = 0; j < TC_NCALLS; j++) {
            const struct tally *x = &w[k].calls[j];
            struct tally *out = &R.sh->calls[j];
            out->count += x->count, out->bytes += x->bytes, out->rec_ns += x->rec_ns;
            out->rep_ns += x->rep_ns, out->done_rec += x->done_rec, out->done_rep += x->done_rep;
        }
        for (int c = 0; c < TCL_N; c++)
            hist_merge(&R.sh->cls[c], &w[k].cls[c]);
    }
    pthread_mutex_unlock(&R.sh->lock);
    fflush(NULL);
    _exit(0);
}

/* What the trace needs of DIR before the timed part, and slots for its descriptors. */
struct file_need {
    size_t first_open;
    int64_t read_end; /* the largest offset + bytes a read got */
    size_t read_row;  /* the read that got there */
    bool directory;
};

static void check_replayable(const char *name, const struct trace *t, const struct layout *L)
{
    for (size_t h = 0; h < L->nthreads; h++)
        for (size_t k = 1; k < L->threads[h].n; k++) {
            const struct trace_rec *r = &t->rec[L->threads[h].rows[k]], *prev = &t->rec[L->threads[h].rows[k - 1]];
            if (r->t_start < prev->t_end)
                iot_fail(2, "%s:%zu: starts before the previous call of thread %lld (line %zu) ended", name,
                     line_of(r), (long long)r->tid, line_of(prev));
        }
    for (size_t i = 0; i < t->n; i++) {
        const struct trace_rec *r = &t->rec[i];
        if (moves_data(r->call) && r->bytes > REPLAY_MAX_BYTES)
            iot_fail(2, "%s:%zu: %lld bytes in one call; replay's limit is %lld", name, line_of(r),
                 (long long)r->bytes, REPLAY_MAX_BYTES);
        if (r->fd >= REPLAY_MAX_FD)
            iot_fail(2, "%s:%zu: descriptor %lld is beyond replay's limit %d", name, line_of(r), (long long)r->fd,
                 REPLAY_MAX_FD);
    }
}

static struct file_need *file_needs(const char *name, const struct trace *t, size_t *nfiles)
{
    *nfiles = 0;
    for (size_t i = 0; i < t->n; i++)
        *nfiles = (size_t)t->rec[i].file + 1 > *nfiles ? (size_t)t->rec[i].file + 1 : *nfiles;
    struct file_need *need = iot_xcalloc(*nfiles, sizeof *need);
    for (size_t f = 0; f < *nfiles; f++)
        need[f].first_open = NONE;
    for (size_t i = 0; i < t->n; i++) {
        const struct trace_rec *r = &t->rec[i];
        struct file_need *fn = &need[r->file];
        if (trace_calls[r->call].kind == TK_OPEN) {
            if (fn->first_open == NONE)
                fn->first_open = i;
            if (r->ret >= 0 && (r->flags & O_DIRECTORY))
                fn->directory = true;
        }
        if (trace_calls[r->call].kind != TK_READ || r->ret <= 0 || r->offset < 0)
            continue;
        if (r->offset > INT64_MAX - r->ret)
            iot_fail(2, "%s:%zu: a read of %lld bytes at offset %lld ends beyond the largest file offset", name,
                     line_of(r), (long long)r->ret, (long long)r->offset);
        if (r->offset + r->ret > fn->read_end)
            fn->read_end = r->offset + r->ret, fn->read_row = i;
    }
    return need;
}

/* DIR/f<id> as the program found its files: a directory where it opened
 * one; random data, up to the end of the furthest read, where the file
 * existed before its first open (no O_CREAT, or O_CREAT without O_EXCL or
 * O_TRUNC and read later); nothing where the first open created it or failed. */
static int64_t prepared_size(const struct trace *t, const struct file_need *fn)
{
    if (fn->first_open == NONE || fn->directory)
        return -1;
    const struct trace_rec *o = &t->rec[fn->first_open];
    int64_t fl = o->flags;
    bool existed = o->ret >= 0 && !(fl & O_EXCL) && (!(fl & O_CREAT) || (!(fl & O_TRUNC) && fn->read_end > 0));
    return !existed ? -1 : fl & O_TRUNC ? 0 : fn->read_end;
}

/* The bytes prepare_files will write, refused over `limit` or DIR's free space, naming the read that
 * needs the most. */
static void check_prepare(const char *name, const struct trace *t, const struct file_need *need, size_t nfiles,
                          long long limit)
{
    long long total = 0;
    size_t most = NONE;
    for (size_t f = 0; f < nfiles; f++) {
        int64_t size = prepared_size(t, &need[f]);
        if (size <= 0)
            continue;
        total = size > LLONG_MAX - total ? LLONG_MAX : total + size;
        if (most == NONE || size > need[most].read_end)
            most = f;
    }
    char why[PATH_MAX + 64];
    if (most != NONE)
        snprintf(why, sizeof why, "%s:%zu", name, line_of(&t->rec[need[most].read_row]));
    else
        snprintf(why, sizeof why, "%s", name);
    prepare_check(R.dir, total, limit, why);
}

static void prepare_files(const struct trace *t, const struct file_need *need, size_t nfiles)
{
    char name[32], *buf = iot_xcalloc(1, 1 << 20);
    random_fill(buf, 1 << 20, 12345);
    prepare_begin(R.dirfd);
    for (size_t f = 0; f < nfiles; f++) {
        file_name(name, sizeof name, (int64_t)f);
        if (unlinkat(R.dirfd, name, 0) && errno == EISDIR)
            unlinkat(R.dirfd, name, AT_REMOVEDIR);
        if (need[f].first_open == NONE)
            continue;
        if (need[f].directory) {
            if (mkdirat(R.dirfd, name, 0755) && errno != EEXIST)
                iot_fail(1, "cannot make %s/%s: %s", R.dir, name, strerror(errno));
            continue;
        }
        int64_t size = prepared_size(t, &need[f]);
        if (size >= 0)
            prepare_fill(name, size, buf);
    }
    prepare_end();
    free(buf);
}

/* Slots: per process, in trace order, which open each call's descriptor came from. */
static void assign_slots(const struct trace *t)
{
    size_t *order = sorted_rows(t, by_process), nslots = 0;
    R.slots = iot_xcalloc(t->n, sizeof *R.slots);
    R.row_slot = iot_xcalloc(t->n, sizeof *R.row_slot);
    size_t *cur = iot_xcalloc(REPLAY_MAX_FD, sizeof *cur), *gen = iot_xcalloc(REPLAY_MAX_FD, sizeof *gen), proc = 0;
    for (size_t k = 0; k < t->n; k++) {
        size_t i = order[k];
        const struct trace_rec *r = &t->rec[i];
        if (k && r->pid != t->rec[order[k - 1]].pid)
            proc++;
        R.row_slot[i] = NONE;
        if (trace_calls[r->call].kind == TK_OPEN) {
            if (r->ret >= 0) {
                R.slots[nslots] = (struct slot){.open_row = i, .file = r->file};
                cur[r->ret] = nslots++, gen[r->ret] = proc + 1;
                R.row_slot[i] = cur[r->ret];
            }
            continue;
        }
        if (gen[r->fd] != proc + 1 || cur[r->fd] == NONE) { /* inherited over fork */
            int flags = O_RDWR;
            for (size_t j = i; j-- > 0;)
                if (t->rec[j].file == r->file && trace_calls[t->rec[j].call].kind == TK_OPEN && t->rec[j].ret >= 0) {
                    flags = (int)t->rec[j].flags & (O_ACCMODE | O_APPEND | O_DIRECT | O_SYNC | O_DSYNC);
                    break;
                }
            R.slots[nslots] = (struct slot){.open_row = NONE, .file = r->file, .implicit_flags = flags | O_CREAT};
            cur[r->fd] = nslots++, gen[r->fd] = proc + 1;
        }
        R.row_slot[i] = cur[r->fd];
        if (trace_calls[r->call].kind == TK_CLOSE)
            cur[r->fd] = NONE;
        else
            R.slots[R.row_slot[i]].uses++;
    }
    free(order), free(cur), free(gen);
}

/* "classes": per class (trace_class_of) the bytes its calls moved and each call's replayed time: count,
 * mean, min, max, percentiles and the histogram (hist_json). */
static void json_classes(struct json *j, const struct hist *cls, const struct tally *calls)
{
    json_key(j, "classes");
    json_obj(j);
    for (int c = 0; c < TCL_N; c++) {
        uint64_t moved = 0;
        for (int k = 0; k < TC_NCALLS; k++)
            moved += trace_class_of((enum trace_call)k) == (enum trace_class)c ? calls[k].done_rep : 0;
        json_key(j, trace_class_names[c]);
        json_obj(j);
        json_kuint(j, "moved", moved);
        json_kuint(j, "ns", cls[c].sum);
        json_key(j, "lat_ns");
        hist_json(j, &cls[c]);
        json_obj_end(j);
    }
    json_obj_end(j);
}

static void json_tally(struct json *j, const struct tally *x)
{
    json_obj(j);
    json_kuint(j, "count", x->count);
    json_kuint(j, "bytes", x->bytes);
    json_kuint(j, "transferred_recorded", x->done_rec);
    json_kuint(j, "transferred_replayed", x->done_rep);
    json_kuint(j, "recorded_ns", x->rec_ns);
    json_kuint(j, "replayed_ns", x->rep_ns);
    json_obj_end(j);
}

static int by_row(const void *a, const void *b)
{
    const struct mismatch *x = a, *y = b;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* The recorded wall time of a trace's calls (its first call's start to its last call's end), in ns. */
static uint64_t recorded_wall(const struct trace *t)
{
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t i = 0; i < t->n; i++) {
        enum trace_kind k = trace_calls[t->rec[i].call].kind;
        if (k == TK_MPI_INIT || k == TK_MPI_FINALIZE || k == TK_DEF)
            continue;
        first = t->rec[i].t_start < first ? t->rec[i].t_start : first;
        last = t->rec[i].t_end > last ? t->rec[i].t_end : last;
    }
    return first < last ? last - first : 0;
}

/* --timeout's default: a minute, and ten times the recorded wall time (a slower file system, a busy host),
 * in whole seconds. */
static unsigned default_timeout(const struct trace *t)
{
    double s = 60.0 + 10.0 * (double)recorded_wall(t) / 1e9;
    return s > 30.0 * 86400 ? 30 * 86400 : (unsigned)s + 1;
}

/* --timeline of an MPI replay: the rows rank 0 wrote the times of (ns after each rank's release, plus 1; 0
 * for a row no rank replayed: definitions, MPI_Init, the MPI library's own POSIX calls), on their tracks. */
static void mpi_timeline(const char *path, int dirfd, const char *times, const char *out)
{
    struct trace t;
    iot_load_trace(path, &t);
    uint64_t(*v)[2] = iot_xcalloc(t.n ? t.n : 1, sizeof *v);
    int fd = osm_confined_open(dirfd, times, O_RDONLY, 0);
    size_t want = t.n * sizeof *v, got = 0;
    for (ssize_t r = 1; fd >= 0 && got < want && r > 0; got += r > 0 ? (size_t)r : 0)
        r = read(fd, (char *)v + got, want - got);
    if (fd >= 0)
        close(fd);
    if (got < want)
        iot_fail(1, "the replay's times were not written whole: no timeline (%s)", out);
    struct timeline tl;
    timeline_begin(&tl, out, path, "replayed", 0);
    for (size_t i = 0; i < t.n; i++) {
        struct trace_rec r = t.rec[i];
        if (!v[i][1]) {
            timeline_skip(&tl, &r);
            continue;
        }
        r.t_start = v[i][0] - 1, r.t_end = v[i][1] - 1;
        timeline_row(&tl, &r);
    }
    timeline_end(&tl, true);
    free(v);
    trace_free(&t);
}

/* An MPI trace: its files prepared here, then the launcher starts `iotrace replay-rank` in each rank's place
 * (its replayer for the MPI that starts it), which prints the JSON; the launcher's status is ours. The
 * replayer bounds its own time (each rank says where it waits when the bound passes); past the bound and
 * half a minute, iotrace ends the launcher's group itself. */
static int replay_mpi(const char *path, const char *dir, const char *launcher, const char *impl, const char *timing,
                      long long limit, unsigned start_timeout, unsigned timeout, const char *timeline)
{
    struct trace t;
    iot_load_trace(path, &t);
    bool mpi = false;
    for (size_t i = 0; i < t.n && !mpi; i++)
        mpi = trace_calls[t.rec[i].call].mpi;
    if (!mpi)
        iot_fail(2, "%s was not recorded under MPI: replay it without --launcher", path);
    char apath[PATH_MAX], adir[PATH_MAX];
    if (!realpath(path, apath) || !realpath(dir, adir))
        iot_fail(2, "%s: %s", path, strerror(errno));
    int dirfd = osm_dir_open(adir);
    if (dirfd < 0)
        iot_fail(2, "--dir %s: %s", dir, strerror(errno));
    mpi_prepare(path, &t, dirfd, adir, limit);
    if (!timeout)
        timeout = default_timeout(&t);
    trace_free(&t);
    unsigned char rnd[8];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        iot_fail(1, "getrandom: %s", strerror(errno));
    char mark[64], times[64], secs[16], lim[32];
    int at = snprintf(mark, sizeof mark, ".iotrace-started.%d.", (int)getpid());
    for (size_t k = 0; k < sizeof rnd; k++)
        at += snprintf(mark + at, sizeof mark - (size_t)at, "%02x", rnd[k]);
    snprintf(times, sizeof times, ".iotrace-times%s", mark + strlen(".iotrace-started"));
    snprintf(secs, sizeof secs, "%u", timeout);
    snprintf(lim, sizeof lim, "%lld", limit);
    char *tail[] = {apath, "--dir", adir, "--timing", (char *)timing, "--started", mark, "--timeout", secs,
                    "--prepare-limit", lim, timeline ? "--times" : NULL, times, NULL};
    char **lv = mpi_launch_argv(launcher, "replay-rank", impl, NULL, tail);
    enum launch_end end;
    int status = mpi_run_launcher(lv, adir, mark, start_timeout, timeout + 30, &end);
    free(lv);
    struct stat st;
    bool up = fstatat(dirfd, mark, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    /* rank 0 made the mark just before its watch started: a failed launcher that ended past the bound from
     * then was ended by the ranks' watches (which said where each waited), whatever status the launcher
     * reports for it (MPICH's hydra gives 9 when it has killed the ranks that had not exited yet) */
    bool bound_hit = up && (double)(now.tv_sec - st.st_mtim.tv_sec) + (double)(now.tv_nsec - st.st_mtim.tv_nsec) / 1e9 >=
                     (double)timeout;
    unlinkat(dirfd, mark, 0);
    if (timeline && status >= 0 && WIFEXITED(status) && !WEXITSTATUS(status))
        mpi_timeline(path, dirfd, times, timeline);
    unlinkat(dirfd, times, 0);
    close(dirfd);
    if (status < 0) {
        fprintf(stderr, "iotrace: error: cannot run '%s': %s\n", launcher, strerror(-status));
        return -status == ENOENT ? 127 : 126;
    }
    if (end == LAUNCH_START_TIMEOUT) {
        mpi_start_timeout_error(launcher, start_timeout);
        return 1;
    }
    if (end == LAUNCH_RUN_TIMEOUT) {
        fprintf(stderr, "iotrace: error: the launcher '%s' had not ended 30 s after the replay's bound of %u s "
                        "(--timeout); it and what it started here were ended\n", launcher, timeout);
        return 124;
    }
    if (timeout && bound_hit && (!WIFEXITED(status) || WEXITSTATUS(status)))
        return 124;
    if (!up && (!WIFEXITED(status) || WEXITSTATUS(status)))
        fprintf(stderr, "iotrace: error: the launcher '%s' %s %d before rank 0 was past MPI_Init (its own messages "
                        "are above)\n", launcher, WIFSIGNALED(status) ? "was killed by signal" : "exited with status",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

static volatile sig_atomic_t alarmed;
static void on_alarm(int sig) { alarmed = sig; }

/* --unpin: what a harness set for one probe undone, so that the replay runs as the application did: every
 * CPU this process may use (its cpuset's), SCHED_OTHER. */
static void run_as_an_application(void)
{
    struct sched_param sp = {.sched_priority = 0};
    if (sched_setscheduler(0, SCHED_OTHER, &sp))
        fprintf(stderr, "iotrace: --unpin: cannot return to SCHED_OTHER: %s\n", strerror(errno));
    cpu_set_t all;
    CPU_ZERO(&all);
    long n = sysconf(_SC_NPROCESSORS_CONF);
    for (long c = 0; c < n && c < CPU_SETSIZE; c++)
        CPU_SET((int)c, &all);
    if (sched_setaffinity(0, sizeof all, &all)) /* the kernel keeps it within the cpuset */
        fprintf(stderr, "iotrace: --unpin: cannot widen the CPU affinity: %s\n", strerror(errno));
}

struct replay_opts {
    const char *path, *dir;                 /* the trace, --dir */
    const char *launcher, *impl, *timing;   /* an MPI replay: --launcher, --mpi (checked), --timing */
    long long limit;                        /* --prepare-limit, bytes */
    unsigned start_timeout, timeout;        /* --start-timeout, --timeout (0: the trace's own bound) */
    bool unpin;                             /* --unpin */
    uint64_t want;                          /* --processes (0: the trace's) */
    const char *timeline;                   /* --timeline: the replay's own timing, as show --perfetto's */
};

/* replay's options, checked, and --dir an existing directory; a bad one is a usage error (exit 2). */
static void replay_args(int argc, char **argv, struct replay_opts *o)
{
    *o = (struct replay_opts){.limit = PREPARE_LIMIT_DEFAULT, .start_timeout = MPI_START_TIMEOUT};
    uint64_t limit = PREPARE_LIMIT_DEFAULT;
    bool timeout_given = false;
    const struct osm_opt rows[] = {
        OSM_OPT_STR("dir", o->dir, "the directory the replay writes its files into (it must exist)", .arg = "DIR"),
        OSM_OPT_U64("processes", o->want, 1, 1000000, "replay a POSIX trace with this many processes",
                    .def = "the trace's"),
        OSM_OPT_SIZE("prepare-limit", limit, 0, 1ull << 50,
                     "the most bytes replay may write to prepare the files a trace reads", .arg = "BYTES"),
        OSM_OPT_UINT("timeout", o->timeout, 1, 30 * 86400, "end the replay after S seconds (exit 124)",
                     .def = "the trace's own bound", .arg = "S"),
        OSM_OPT_STR("launcher", o->launcher, "an MPI replay: the launcher and its arguments, one word",
                    .arg = "\"MPIRUN ARGS\""),
        OSM_OPT_STR("mpi", o->impl, "the MPI the launcher starts", .arg = "openmpi|mpich",
                    .def = "from the launcher's environment"),
        OSM_OPT_STR("timing", o->timing, "an MPI replay's pace: as soon as possible, or the recorded gaps",
                    .arg = "asap|recorded", .def = "asap"),
        OSM_OPT_UINT("start-timeout", o->start_timeout, 0, 86400,
                     "seconds the launcher may take to start every rank", .seen = &timeout_given, .arg = "S"),
        OSM_OPT_FLAG("unpin", o->unpin, "replay on every CPU of the cpuset, not only where iotrace was pinned"),
        OSM_OPT_STR("timeline", o->timeline, "write the replay's own timing as a timeline (Chrome's trace event "
                    "format, on the recorded tracks) into OUT", .arg = "OUT.json"),
        {0},
    };
    const struct osm_command cmd = {
        .name = "iotrace replay", .operands = "TRACE", .opts = rows, .max_operands = 1,
        .summary = "Replays a trace's calls into --dir, each process and thread as recorded, and reports each call's latency.",
    };
    if (osm_parse_command(&cmd, argc, argv, &o->path) == 0)
        o->path = NULL;
    o->limit = (long long)limit;
    if (o->impl)
        o->impl = mpi_check_impl(o->impl);
    if (!o->path || !o->dir)
        osm_usage_error("usage: iotrace replay TRACE --dir DIR [--processes N] [--prepare-limit BYTES] [--timeout S] | "
                        "[--launcher \"MPIRUN ARGS\" [--mpi openmpi|mpich] [--timing asap|recorded] [--start-timeout S]] "
                        "[--unpin] [--timeline OUT.json]");
    if ((o->impl || o->timing || timeout_given) && !o->launcher)
        osm_usage_error("--mpi, --timing and --start-timeout go with --launcher (an MPI replay)");
    if (o->timing && strcmp(o->timing, "asap") && strcmp(o->timing, "recorded"))
        osm_usage_error("--timing %s: asap or recorded", o->timing);
    if (o->timeline) { /* written after the replay: its directory must take it */
        char d[PATH_MAX];
        snprintf(d, sizeof d, "%s", o->timeline);
        char *slash = strrchr(d, '/');
        const char *dir = slash ? (slash == d ? "/" : (*slash = '\0', d)) : ".";
        if (access(dir, W_OK | X_OK))
            osm_usage_error("--timeline %s: cannot write in %s: %s", o->timeline, dir, strerror(errno));
    }
    if (o->launcher && o->want)
        osm_usage_error("--processes is for POSIX traces; an MPI replay has the launcher's ranks");
    struct stat st;
    if (stat(o->dir, &st))
        iot_fail(2, "--dir %s: %s (replay writes its files into an existing directory)", o->dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        iot_fail(2, "--dir %s: not a directory", o->dir);
}

/* The shared state every replaying process reports into: its lock, the latency classes. */
static void share_state(void)
{
    R.sh = mmap(NULL, sizeof *R.sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (R.sh == MAP_FAILED)
        iot_fail(1, "mmap: %s", strerror(errno));
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&R.sh->lock, &ma);
    for (int c = 0; c < TCL_N; c++)
        hist_clear(&R.sh->cls[c]);
}

/* Ends every replaying process still running (kids[p] 0 once reaped). */
static void kill_all(pid_t *kids, size_t n)
{
    for (size_t p = 0; p < n; p++)
        if (kids[p])
            kill(kids[p], SIGKILL);
}

/* One process per recorded one, each replaying its threads; all start together once all are ready, and a
 * failed one stops the others (they may wait for its calls). Past the bound (seconds) every one is ended
 * and replay exits 124. Returns the wall time from the start to the last one's end, in ns. */
static uint64_t run_processes(const struct layout *L, unsigned bound, uint64_t *start)
{
    int ready[2], go[2];
    if (pipe2(ready, O_CLOEXEC) || pipe2(go, O_CLOEXEC))
        iot_fail(1, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t *kids = iot_xcalloc(L->nprocs, sizeof *kids);
    for (size_t p = 0; p < L->nprocs; p++) {
        kids[p] = fork();
        if (kids[p] < 0)
            iot_fail(1, "fork: %s", strerror(errno));
        if (kids[p] == 0) {
            close(ready[0]), close(go[1]);
            replay_process(&L->procs[p], p, ready[1], go[0]);
        }
    }
    close(ready[1]), close(go[0]);
    size_t started = 0;
    char c;
    for (ssize_t got; started < L->nprocs; started += got == 1)
        if ((got = read(ready[0], &c, 1)) == 0 || (got < 0 && errno != EINTR))
            break; /* a replaying process died before it was ready */
    uint64_t t0 = *start = iot_now_ns();
    struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART: wait() returns */
    sigaction(SIGALRM, &sa, NULL);
    alarm(bound);
    close(go[1]); /* go */
    bool failed = started < L->nprocs;
    for (size_t left = L->nprocs; left > 0;) {
        int status;
        pid_t k = wait(&status);
        if (k < 0 && errno == EINTR && alarmed) {
            kill_all(kids, L->nprocs);
            while (wait(NULL) > 0 || errno == EINTR)
                ;
            iot_fail(124, "the replay did not end within its bound of %u s (--timeout); its %zu processes were ended",
                     bound, L->nprocs);
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            break;
        left--;
        for (size_t p = 0; p < L->nprocs; p++)
            kids[p] = kids[p] == k ? 0 : kids[p];
        if (!WIFEXITED(status) || WEXITSTATUS(status)) {
            failed = true;
            kill_all(kids, L->nprocs);
        }
    }
    uint64_t wall = iot_now_ns() - t0;
    alarm(0);
    free(kids);
    if (failed)
        iot_fail(1, "a replaying process failed");
    return wall;
}

/* The rows whose replayed result differed from the recorded one (the first MAX_MISMATCHES, in row order). */
static void mismatches_json(struct json *j, const struct trace *t)
{
    unsigned long nmis = atomic_load(&R.sh->nmismatch);
    size_t listed = nmis < MAX_MISMATCHES ? nmis : MAX_MISMATCHES;
    qsort(R.sh->mismatch, listed, sizeof *R.sh->mismatch, by_row);
    json_kuint(j, "mismatch_count", nmis);
    json_key(j, "mismatches");
    json_arr(j);
    for (size_t k = 0; k < listed; k++) {
        const struct mismatch *m = &R.sh->mismatch[k];
        const struct trace_rec *r = &t->rec[m->row];
        char file[32];
        snprintf(file, sizeof file, "f%lld", (long long)r->file);
        json_obj(j);
        json_kuint(j, "seq", r->seq);
        json_kuint(j, "line", line_of(r));
        json_kint(j, "pid", r->pid);
        json_kint(j, "tid", r->tid);
        json_kstr(j, "call", trace_calls[r->call].name);
        json_kstr(j, "file", file);
        json_kint(j, "offset", r->offset);
        json_kint(j, "bytes", r->bytes);
        json_kint(j, "recorded_ret", r->ret);
        json_kint(j, "recorded_errno", r->err);
        json_kint(j, "replayed_ret", m->ret);
        json_kint(j, "replayed_errno", m->err);
        json_obj_end(j);
    }
    json_arr_end(j);
}

/* The replay's result, one JSON line on standard output: the walls recorded and replayed, per call and in
 * total, the latency classes and the mismatches. */
static void replay_result(const struct replay_opts *o, const struct trace *t, const struct layout *L, uint64_t wall)
{
    struct tally *calls = R.sh->calls, total = {0};
    for (int c = 0; c < TC_NCALLS; c++) {
        const struct tally *x = &calls[c];
        total.count += x->count, total.bytes += x->bytes, total.rec_ns += x->rec_ns;
        total.rep_ns += x->rep_ns, total.done_rec += x->done_rec, total.done_rep += x->done_rep;
    }
    uint64_t rec_wall = 0;
    for (size_t i = 0; i < t->n; i++)
        rec_wall = t->rec[i].t_end - t->rec[0].t_start > rec_wall ? t->rec[i].t_end - t->rec[0].t_start : rec_wall;
    struct json j;
    json_to_file(&j, stdout);
    json_obj(&j);
    json_kstr(&j, "trace", o->path);
    json_kstr(&j, "dir", o->dir);
    json_kuint(&j, "processes", L->nprocs);
    json_kuint(&j, "threads", L->nthreads);
    json_kuint(&j, "recorded_wall_ns", rec_wall);
    json_kuint(&j, "replayed_wall_ns", wall);
    json_key(&j, "calls");
    json_obj(&j);
    for (int c = 0; c < TC_NCALLS; c++)
        if (calls[c].count) {
            json_key(&j, trace_calls[c].name);
            json_tally(&j, &calls[c]);
        }
    json_obj_end(&j);
    json_key(&j, "total");
    json_tally(&j, &total);
    json_classes(&j, R.sh->cls, calls);
    mismatches_json(&j, t);
    json_obj_end(&j);
    json_line_end(&j, "the replay's result to standard output");
}

int cmd_replay(int argc, char **argv)
{
    struct replay_opts o;
    replay_args(argc, argv, &o);
    if (o.unpin)
        run_as_an_application();
    if (o.launcher)
        return replay_mpi(o.path, o.dir, o.launcher, o.impl, o.timing ? o.timing : "asap", o.limit, o.start_timeout,
                          o.timeout, o.timeline);
    const char *path = o.path;
    struct trace t;
    iot_load_trace(path, &t);
    for (size_t i = 0; i < t.n; i++)
        if (trace_calls[t.rec[i].call].mpi)
            iot_fail(2, "%s:%zu: %s: the trace was recorded under MPI; replay it under its launcher "
                        "(--launcher \"MPIRUN ARGS\")", path, line_of(&t.rec[i]),
                     trace_calls[t.rec[i].call].name);
    struct layout L = layout_of(&t);
    if (o.want && o.want < L.nprocs)
        iot_fail(2, "the trace has %zu processes; replaying with %llu is not possible (each recorded process "
                "replays in a process of its own)", L.nprocs, (unsigned long long)o.want);
    if (o.want > L.nprocs)
        fprintf(stderr, "iotrace: the trace has %zu processes; the other %llu are not needed\n", L.nprocs,
                (unsigned long long)(o.want - L.nprocs));
    check_replayable(path, &t, &L);
    R.t = &t;
    R.L = &L;
    R.dir = o.dir;
    if ((R.dirfd = osm_dir_open(o.dir)) < 0)
        iot_fail(2, "--dir %s: %s", o.dir, strerror(errno));
    size_t nfiles;
    struct file_need *need = file_needs(path, &t, &nfiles);
    check_prepare(path, &t, need, nfiles, o.limit);
    prepare_files(&t, need, nfiles);
    assign_slots(&t);
    share_state();
    order_init(&t, &L);
    if (o.timeline) {
        R.times = mmap(NULL, (t.n ? t.n : 1) * sizeof *R.times, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                       -1, 0);
        if (R.times == MAP_FAILED)
            iot_fail(1, "mmap: %s", strerror(errno));
    }
    uint64_t start;
    uint64_t wall = run_processes(&L, o.timeout ? o.timeout : default_timeout(&t), &start);
    replay_result(&o, &t, &L, wall);
    if (o.timeline) { /* the recorded rows at their replayed times, on their recorded tracks */
        struct timeline tl;
        timeline_begin(&tl, o.timeline, path, "replayed", start);
        for (size_t i = 0; i < t.n; i++) {
            struct trace_rec r = t.rec[i];
            r.t_start = R.times[i][0], r.t_end = R.times[i][1];
            timeline_row(&tl, &r);
        }
        timeline_end(&tl, true);
    }
    return 0;
}
