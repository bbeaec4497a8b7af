/* The start order of a replay's threads (order.h).
 *
 * The calls sorted by their end (ties by row) give each call a rank; a
 * thread whose first call starts at t needs the ranks of every call that
 * ended before t, a prefix of that order of length need. The frontier is
 * the longest prefix of ranks replayed, moved under one process-shared
 * lock as calls end; the threads sorted by need are let go in that order,
 * each by its own futex word (no thundering herd: a thread is woken once,
 * when it may go). */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "order.h"

struct order_shared {
    pthread_mutex_t lock; /* process-shared */
    size_t frontier;      /* ranks [0, frontier) are replayed */
    size_t opened;        /* threads of by_need let go */
};

static struct {
    const struct trace *t;
    const struct layout *L;
    size_t *rank_of; /* row -> rank in the order of ends */
    size_t *need;    /* thread -> ranks to be replayed before it starts */
    size_t *by_need; /* threads, fewest needs first */
    struct order_shared *sh;
    atomic_uchar *done; /* per rank (MAP_SHARED) */
    atomic_uint *gate;  /* per thread (MAP_SHARED): 1 once it may go */
} O;

static int by_end(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    uint64_t ex = (uint64_t)O.t->rec[x].t_end, ey = (uint64_t)O.t->rec[y].t_end;
    return ex != ey ? (ex < ey ? -1 : 1) : (x > y) - (x < y);
}

static int by_needs(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return O.need[x] != O.need[y] ? (O.need[x] < O.need[y] ? -1 : 1) : (x > y) - (x < y);
}

static void *shared(size_t bytes)
{
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        iot_fail(1, "mmap: %s", strerror(errno));
    return p;
}

/* Under the lock: every thread whose need the frontier has reached, let go. */
static void open_gates(void)
{
    while (O.sh->opened < O.L->nthreads && O.need[O.by_need[O.sh->opened]] <= O.sh->frontier) {
        atomic_uint *g = &O.gate[O.by_need[O.sh->opened++]];
        atomic_store(g, 1);
        syscall(SYS_futex, g, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    }
}

void order_init(const struct trace *t, const struct layout *L)
{
    O.t = t, O.L = L;
    size_t n = t->n, *ends = iot_xcalloc(n + 1, sizeof *ends);
    for (size_t i = 0; i < n; i++)
        ends[i] = i;
    qsort(ends, n, sizeof *ends, by_end);
    O.rank_of = iot_xcalloc(n + 1, sizeof *O.rank_of);
    for (size_t k = 0; k < n; k++)
        O.rank_of[ends[k]] = k;
    O.need = iot_xcalloc(L->nthreads + 1, sizeof *O.need);
    O.by_need = iot_xcalloc(L->nthreads + 1, sizeof *O.by_need);
    for (size_t h = 0; h < L->nthreads; h++) {
        uint64_t start = (uint64_t)t->rec[L->threads[h].rows[0]].t_start;
        size_t lo = 0, hi = n; /* the calls that ended before it: a prefix of the order of ends */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if ((uint64_t)t->rec[ends[mid]].t_end < start)
                lo = mid + 1;
            else
                hi = mid;
        }
        O.need[h] = lo;
        O.by_need[h] = h;
    }
    qsort(O.by_need, L->nthreads, sizeof *O.by_need, by_needs);
    free(ends);
    O.sh = shared(sizeof *O.sh);
    O.done = shared(n * sizeof *O.done);
    O.gate = shared(L->nthreads * sizeof *O.gate);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&O.sh->lock, &ma);
    open_gates(); /* the threads that need nothing */
}

void order_wait(size_t g)
{
    while (!atomic_load(&O.gate[g]))
        syscall(SYS_futex, &O.gate[g], FUTEX_WAIT, 0, NULL, NULL, 0);
}

void order_done(size_t row)
{
    pthread_mutex_lock(&O.sh->lock);
    atomic_store(&O.done[O.rank_of[row]], 1);
    while (O.sh->frontier < O.t->n && atomic_load(&O.done[O.sh->frontier]))
        O.sh->frontier++;
    open_gates();
    pthread_mutex_unlock(&O.sh->lock);
}
