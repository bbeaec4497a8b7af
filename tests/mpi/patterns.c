/* patterns.c - the MPI-IO patterns real applications use beyond one
 * communicator opened alike on every rank, one per run, for the replay's
 * tests (tests/test_iotrace_mpi_patterns.py) and tools/compare-mpiio:
 *
 *   self      files opened on MPI_COMM_SELF before (rank 0 alone) and
 *             after (every rank) a shared one: the ranks number their
 *             groups otherwise (IOR's shape)
 *   split     MPI_Comm_split into even and odd ranks, a file per half, and
 *             an MPI_Comm_dup of the world, first used in another order by
 *             each half
 *   views     noncontiguous views: vector, subarray and darray filetypes,
 *             written collectively and read back
 *   shared    the shared file pointer: write_shared, seek_shared,
 *             read_shared, write_ordered, read_ordered
 *   splitcoll split collectives: write_at_all_begin/end,
 *             read_all_begin/end, write_ordered_begin/end
 *   nonblock  nonblocking writes and reads completed out of order
 *             (Waitany, Wait in reverse, Wait on one, Waitall)
 *   atomic    atomic mode, ranks' writes overlapping, sync, read back
 *   handoff   rank 0 makes a file on MPI_COMM_SELF, the others open it after
 *             a barrier without MPI_MODE_CREATE (ADIOS's MPI method)
 *   large     MPI-4's large-count routines (write_at_all_c ...) where the
 *             MPI has them (MPICH 4; IOR uses them there)
 *
 * Every data call's data is checked where it is read back; each rank prints
 * one JSON line {"rank": R, "calls": {"MPI_File_write_at": [count, bytes],
 * ...}}: the data calls it made and the bytes they asked for.
 *
 * usage: patterns PATTERN DIR */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_BLOCK 4096 /* ints of one rank's block */

static int me, np;
static const char *dir;

/* ------------------------------------------------------------- tallies */

static struct {
    const char *name;
    long long count, bytes;
} tally[32];

static void count(const char *name, int n, MPI_Datatype t)
{
    int size;
    MPI_Type_size(t, &size);
    for (int i = 0; i < 32; i++)
        if (!tally[i].name || !strcmp(tally[i].name, name)) {
            tally[i].name = name;
            tally[i].count++;
            tally[i].bytes += (long long)n * size;
            return;
        }
}

#define CALL(fn, n, t, ...)                                                                                         \
    do {                                                                                                            \
        count(#fn, (n), (t));                                                                                       \
        check(fn(__VA_ARGS__), #fn);                                                                                \
    } while (0)

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, s, &len);
        fprintf(stderr, "patterns: rank %d: %s: %s\n", me, what, s);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "patterns: rank %d: %s: the data read back is not what was written\n", me, what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* What a rank wrote made visible to the others (MPI's consistency in nonatomic mode): sync, barrier, sync. */
static void visible(MPI_File fh)
{
    check(MPI_File_sync(fh), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    check(MPI_File_sync(fh), "sync");
}

static MPI_File open_on(MPI_Comm c, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    MPI_File fh;
    check(MPI_File_open(c, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), name);
    return fh;
}

static int *block(int tag)
{
    int *b = malloc(N_BLOCK * sizeof *b);
    for (int i = 0; i < N_BLOCK; i++)
        b[i] = tag * 100000 + me * 10000 + i % 10000;
    return b;
}

/* ------------------------------------------------------------- the patterns */

static void self_file(const char *name, int tag)
{
    MPI_File fh = open_on(MPI_COMM_SELF, name);
    int *w = block(tag), *r = calloc(N_BLOCK, sizeof *r);
    MPI_Status st;
    CALL(MPI_File_write_at, N_BLOCK, MPI_INT, fh, 0, w, N_BLOCK, MPI_INT, &st);
    CALL(MPI_File_read_at, N_BLOCK, MPI_INT, fh, 0, r, N_BLOCK, MPI_INT, &st);
    expect(!memcmp(w, r, N_BLOCK * sizeof *w), name);
    MPI_File_close(&fh);
    free(w), free(r);
}

static void p_self(void)
{
    char name[64];
    if (me == 0) { /* rank 0 alone opens a file of its own first: it numbers MPI_COMM_SELF c0, the world c1;
                    * the other ranks number the world c0 */
        snprintf(name, sizeof name, "first.%d", me);
        self_file(name, 1);
    }
    MPI_File fh = open_on(MPI_COMM_WORLD, "shared.dat");
    int *w = block(3), *r = calloc(N_BLOCK, sizeof *r);
    MPI_Offset at = (MPI_Offset)me * N_BLOCK * sizeof(int);
    MPI_Status st;
    CALL(MPI_File_write_at_all, N_BLOCK, MPI_INT, fh, at, w, N_BLOCK, MPI_INT, &st);
    CALL(MPI_File_read_at_all, N_BLOCK, MPI_INT, fh, at, r, N_BLOCK, MPI_INT, &st);
    expect(!memcmp(w, r, N_BLOCK * sizeof *w), "shared.dat");
    MPI_File_close(&fh);
    free(w), free(r);
    snprintf(name, sizeof name, "after.%d", me);
    self_file(name, 4);
}

static void half_file(MPI_Comm c, const char *name, int tag)
{
    int hr;
    MPI_Comm_rank(c, &hr);
    MPI_File fh = open_on(c, name);
    int *w = block(tag), *r = calloc(N_BLOCK, sizeof *r);
    MPI_Offset at = (MPI_Offset)hr * N_BLOCK * sizeof(int);
    MPI_Status st;
    CALL(MPI_File_write_at_all, N_BLOCK, MPI_INT, fh, at, w, N_BLOCK, MPI_INT, &st);
    CALL(MPI_File_read_at_all, N_BLOCK, MPI_INT, fh, at, r, N_BLOCK, MPI_INT, &st);
    expect(!memcmp(w, r, N_BLOCK * sizeof *w), name);
    MPI_File_close(&fh);
    free(w), free(r);
}

static void p_split(void)
{
    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, np - me, &half); /* a key that reverses the ranks in each half */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (me % 2 == 0) { /* the even half uses its own group first, the odd half the world's duplicate */
        half_file(half, "even.dat", 1);
        half_file(dup, "dup.dat", 2);
    } else {
        half_file(dup, "dup.dat", 2);
        half_file(half, "odd.dat", 1);
    }
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
}

/* A collective write through filetype ft (count ints from the rank's block), then the same read back. */
static void through_view(MPI_File fh, MPI_Datatype ft, int n, int tag, const char *what)
{
    int *w = block(tag), *r = calloc((size_t)n, sizeof *r);
    MPI_Status st;
    check(MPI_File_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL), what);
    CALL(MPI_File_write_all, n, MPI_INT, fh, w, n, MPI_INT, &st);
    check(MPI_File_seek(fh, 0, MPI_SEEK_SET), what);
    CALL(MPI_File_read_all, n, MPI_INT, fh, r, n, MPI_INT, &st);
    expect(!memcmp(w, r, (size_t)n * sizeof *w), what);
    free(w), free(r);
}

static void p_views(void)
{
    MPI_File fh = open_on(MPI_COMM_WORLD, "views.dat");
    MPI_Datatype v, vec, sub, dar;
    /* vector: 64 blocks of 16 ints, the ranks' blocks interleaved; the view starts at the rank's first block,
     * the type resized to the whole interleaved region so that items follow each other */
    MPI_Type_vector(64, 16, 16 * np, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 16 * np * 64 * (MPI_Aint)sizeof(int), &vec);
    MPI_Type_free(&v);
    MPI_Type_commit(&vec);
    check(MPI_File_set_view(fh, (MPI_Offset)me * 16 * sizeof(int), MPI_INT, vec, "native", MPI_INFO_NULL),
          "vector view");
    int *w = block(1), *r = calloc(1024, sizeof *r);
    MPI_Status st;
    CALL(MPI_File_write_all, 1024, MPI_INT, fh, w, 1024, MPI_INT, &st);
    check(MPI_File_seek(fh, 0, MPI_SEEK_SET), "seek");
    CALL(MPI_File_read_all, 1024, MPI_INT, fh, r, 1024, MPI_INT, &st);
    expect(!memcmp(w, r, 1024 * sizeof *w), "vector view");
    free(w), free(r);
    MPI_Type_free(&vec);
    /* subarray: the rank's 32 x 32 tile of a 32 x (32 np) array */
    int sizes[2] = {32, 32 * np}, subs[2] = {32, 32}, starts[2] = {0, 32 * me};
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub);
    MPI_Type_commit(&sub);
    through_view(fh, sub, 32 * 32, 2, "subarray view");
    MPI_Type_free(&sub);
    /* darray: a 64 x 64 array block-cyclic (8) over a process grid */
    int dims[2] = {0, 0}, gsizes[2] = {64, 64}, distribs[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC},
        dargs[2] = {8, 8};
    MPI_Dims_create(np, 2, dims);
    MPI_Type_create_darray(np, me, 2, gsizes, distribs, dargs, dims, MPI_ORDER_C, MPI_INT, &dar);
    MPI_Type_commit(&dar);
    int size;
    MPI_Type_size(dar, &size);
    through_view(fh, dar, size / (int)sizeof(int), 3, "darray view");
    MPI_Type_free(&dar);
    MPI_File_close(&fh);
}

static void p_shared(void)
{
    MPI_File fh = open_on(MPI_COMM_WORLD, "shared.dat");
    int *w = block(1), *r = calloc(N_BLOCK, sizeof *r);
    MPI_Status st;
    CALL(MPI_File_write_shared, 256, MPI_INT, fh, w, 256, MPI_INT, &st);
    visible(fh);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank's shared calls done before the pointer moves */
    check(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET), "seek_shared");
    CALL(MPI_File_read_shared, 256, MPI_INT, fh, r, 256, MPI_INT, &st);
    MPI_Offset after = (MPI_Offset)np * 256; /* etypes (bytes): the shared writes' end */
    MPI_Barrier(MPI_COMM_WORLD); /* the shared reads done: the ordered write goes on from where they ended */
    CALL(MPI_File_write_ordered, 512, MPI_INT, fh, w, 512, MPI_INT, &st);
    visible(fh);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank's shared calls done before the pointer moves */
    check(MPI_File_seek_shared(fh, after * (MPI_Offset)sizeof(int), MPI_SEEK_SET), "seek_shared");
    CALL(MPI_File_read_ordered, 512, MPI_INT, fh, r, 512, MPI_INT, &st); /* where each MPI put them: unchecked */
    MPI_File_close(&fh);
    free(w), free(r);
}

static void p_splitcoll(void)
{
    MPI_File fh = open_on(MPI_COMM_WORLD, "splitcoll.dat");
    int *w = block(1), *r = calloc(N_BLOCK, sizeof *r);
    MPI_Offset at = (MPI_Offset)me * N_BLOCK * sizeof(int);
    MPI_Status st;
    count("MPI_File_write_at_all_begin", N_BLOCK, MPI_INT);
    check(MPI_File_write_at_all_begin(fh, at, w, N_BLOCK, MPI_INT), "write_at_all_begin");
    check(MPI_File_write_at_all_end(fh, w, &st), "write_at_all_end");
    check(MPI_File_seek(fh, at, MPI_SEEK_SET), "seek");
    count("MPI_File_read_all_begin", N_BLOCK, MPI_INT);
    check(MPI_File_read_all_begin(fh, r, N_BLOCK, MPI_INT), "read_all_begin");
    check(MPI_File_read_all_end(fh, r, &st), "read_all_end");
    expect(!memcmp(w, r, N_BLOCK * sizeof *w), "split collective");
    MPI_Barrier(MPI_COMM_WORLD); /* every rank's shared calls done before the pointer moves */
    check(MPI_File_seek_shared(fh, (MPI_Offset)np * N_BLOCK * sizeof(int), MPI_SEEK_SET), "seek_shared");
    count("MPI_File_write_ordered_begin", 1024, MPI_INT);
    check(MPI_File_write_ordered_begin(fh, w, 1024, MPI_INT), "write_ordered_begin");
    check(MPI_File_write_ordered_end(fh, w, &st), "write_ordered_end");
    MPI_File_close(&fh);
    free(w), free(r);
}

static void p_nonblock(void)
{
    MPI_File fh = open_on(MPI_COMM_WORLD, "nonblock.dat");
    enum { K = 8, PART = N_BLOCK / K };
    int *w = block(1), *r = calloc(N_BLOCK, sizeof *r);
    MPI_Request rq[K];
    MPI_Status st[K];
    MPI_Offset base = (MPI_Offset)me * N_BLOCK * sizeof(int);
    for (int k = 0; k < K; k++)
        CALL(MPI_File_iwrite_at, PART, MPI_INT, fh, base + (MPI_Offset)k * PART * sizeof(int), w + k * PART, PART,
             MPI_INT, &rq[k]);
    /* MPICH 4.0.2 asserts (mpir_request.h: ref_count >= 0) now and then in MPI_Waitsome, MPI_Testsome and a
     * loop of MPI_Testall on ROMIO's requests, without any recorder: Waitany, Wait and Waitall here */
    int idx;
    check(MPI_Waitany(K, rq, &idx, &st[0]), "Waitany");
    for (int k = K - 1; k >= 0; k--) /* the rest, last first */
        check(MPI_Wait(&rq[k], &st[0]), "Wait");
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < K; k++)
        CALL(MPI_File_iread_at, PART, MPI_INT, fh, base + (MPI_Offset)k * PART * sizeof(int), r + k * PART, PART,
             MPI_INT, &rq[k]);
    check(MPI_Wait(&rq[K / 2], &st[0]), "Wait"); /* one from the middle first */
    check(MPI_Waitall(K, rq, st), "Waitall");
    expect(!memcmp(w, r, N_BLOCK * sizeof *w), "nonblocking");
    MPI_File_close(&fh);
    free(w), free(r);
}

static void p_atomic(void)
{
    MPI_File fh = open_on(MPI_COMM_WORLD, "atomic.dat");
    check(MPI_File_set_atomicity(fh, 1), "set_atomicity");
    int *w = block(1), *r = calloc(N_BLOCK, sizeof *r);
    MPI_Status st;
    /* every rank writes the same region: in atomic mode one rank's data wins whole */
    CALL(MPI_File_write_at, 1024, MPI_INT, fh, 0, w, 1024, MPI_INT, &st);
    check(MPI_File_sync(fh), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    check(MPI_File_sync(fh), "sync");
    CALL(MPI_File_read_at, 1024, MPI_INT, fh, 0, r, 1024, MPI_INT, &st);
    int who = (r[0] / 10000) % 10, whole = 1;
    for (int i = 0; i < 1024; i++)
        whole &= r[i] == 100000 + who * 10000 + i % 10000;
    expect(whole, "atomic mode: one rank's write whole");
    MPI_File_close(&fh);
    free(w), free(r);
}

/* Rank 0 makes a file on MPI_COMM_SELF; after a barrier (not I/O: not in a trace) the others open it,
 * without MPI_MODE_CREATE, on theirs and read it (ADIOS's MPI method). */
static void p_handoff(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/handoff.dat", dir);
    int *w = block(1), *r = calloc(N_BLOCK, sizeof *r);
    for (int i = 0; i < N_BLOCK; i++) /* what rank 0 writes, as every rank knows it */
        w[i] = 100000 + i % 10000;
    MPI_File fh;
    MPI_Status st;
    if (me == 0) {
        check(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh), "create");
        CALL(MPI_File_write_at, N_BLOCK, MPI_INT, fh, 0, w, N_BLOCK, MPI_INT, &st);
        check(MPI_File_close(&fh), "close");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me != 0) {
        check(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), "open");
        CALL(MPI_File_read_at, N_BLOCK, MPI_INT, fh, 0, r, N_BLOCK, MPI_INT, &st);
        expect(!memcmp(w, r, N_BLOCK * sizeof *w), "handoff");
        check(MPI_File_close(&fh), "close");
    }
    free(w), free(r);
}

/* MPI-4's large-count routines (their count an MPI_Count), where the MPI has them (MPICH 4; Open MPI 4.1 is
 * MPI 3.1: there the int ones), counted under the names of the routines they stand for. */
#if MPI_VERSION >= 4
#define LARGE(fn) fn##_c
#else
#define LARGE(fn) fn
#endif
static void p_large(void)
{
    MPI_File fh = open_on(MPI_COMM_WORLD, "large.dat");
    int *w = block(1), *r = calloc(N_BLOCK, sizeof *r);
    MPI_Offset at = (MPI_Offset)me * N_BLOCK * sizeof(int);
    MPI_Status st;
    MPI_Request rq;
    count("MPI_File_write_at_all", N_BLOCK, MPI_INT);
    check(LARGE(MPI_File_write_at_all)(fh, at, w, N_BLOCK, MPI_INT, &st), "write_at_all_c");
    count("MPI_File_iread_at", N_BLOCK, MPI_INT);
    check(LARGE(MPI_File_iread_at)(fh, at, r, N_BLOCK, MPI_INT, &rq), "iread_at_c");
    check(MPI_Wait(&rq, &st), "Wait");
    expect(!memcmp(w, r, N_BLOCK * sizeof *w), "large-count write and read");
    check(MPI_File_seek(fh, at, MPI_SEEK_SET), "seek");
    count("MPI_File_read_all", N_BLOCK, MPI_INT);
    check(LARGE(MPI_File_read_all)(fh, r, N_BLOCK, MPI_INT, &st), "read_all_c");
    MPI_File_close(&fh);
    free(w), free(r);
}

static const struct {
    const char *name;
    void (*run)(void);
} patterns[] = {
    {"self", p_self}, {"split", p_split}, {"views", p_views}, {"shared", p_shared},
    {"splitcoll", p_splitcoll}, {"nonblock", p_nonblock}, {"atomic", p_atomic}, {"handoff", p_handoff},
    {"large", p_large},
};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    void (*run)(void) = NULL;
    for (size_t i = 0; argc == 3 && i < sizeof patterns / sizeof *patterns; i++)
        if (!strcmp(argv[1], patterns[i].name))
            run = patterns[i].run;
    if (!run) {
        if (!me)
            fprintf(stderr, "usage: patterns self|split|views|shared|splitcoll|nonblock|atomic|handoff|large DIR\n");
        MPI_Finalize();
        return 2;
    }
    dir = argv[2];
    run();
    char line[4096]; /* one write: the launcher does not mix it with another rank's */
    int n = snprintf(line, sizeof line, "{\"rank\": %d, \"calls\": {", me);
    for (int i = 0; i < 32 && tally[i].name; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "%s\"%s\": [%lld, %lld]", i ? ", " : "", tally[i].name,
                      tally[i].count, tally[i].bytes);
    n += snprintf(line + n, sizeof line - (size_t)n, "}}\n");
    fwrite(line, 1, (size_t)n, stdout);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
