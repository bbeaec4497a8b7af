/* every_form.c - an MPI program that calls every MPI-IO routine the
 * recorder wraps, in every form (explicit offsets, individual and shared
 * pointers; blocking, nonblocking with each completion, collective and
 * split collective; the file routines), on a file in DIR (regions of one
 * block per rank: 0-5 explicit offsets, 6 a view, 7-11 the shared pointer,
 * 12 a nonblocking collective left to progress), and prints per
 * rank one JSON line of what it asked for: per call, the calls and the
 * bytes (count x type size). tests/test_iotrace_mpi.py records it and holds
 * the trace to that line.
 *
 * usage: mpirun -np N every_form DIR */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define K 64 /* ints a rank moves per call */
#define MAXC 64

static const char *names[MAXC];
static long long calls[MAXC], bytes[MAXC];
static int ncalls;

static void did(const char *name, long long b)
{
    int i = 0;
    while (i < ncalls && strcmp(names[i], name))
        i++;
    if (i == ncalls)
        names[ncalls++] = name;
    calls[i]++, bytes[i] += b;
}

static void check(int rc, const char *what, int line)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "every_form: %s failed (%d) at line %d\n", what, rc, line);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}
#define CHECK(x) check((x), #x, __LINE__)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        if (!rank)
            fprintf(stderr, "usage: every_form DIR\n");
        MPI_Finalize();
        return 2;
    }
    char path[4096], gone[4096];
    snprintf(path, sizeof path, "%s/every.dat", argv[1]);
    snprintf(gone, sizeof gone, "%s/gone.%d.dat", argv[1], rank);
    int buf[K], in[K];
    for (int i = 0; i < K; i++)
        buf[i] = rank * 1000 + i;
    const long long B = (long long)K * (long long)sizeof(int);
    MPI_Offset region = (MPI_Offset)size * B; /* each region holds one block per rank */
    MPI_Status st, sts[4];
    MPI_Request rq[4];
    int flag = 0, idx = 0, out = 0, ids[4];

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_nodes", "1");
    MPI_Info_set(info, "romio_cb_write", "enable");
    MPI_Info_set(info, "cb_buffer_size", "1048576");
    MPI_File fh;
    CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh)), did("MPI_File_open", 0);

    /* explicit offsets, byte view: region r, block rank */
    MPI_Offset mine = (MPI_Offset)rank * B;
    CHECK(MPI_File_write_at_all(fh, 0 * region + mine, buf, K, MPI_INT, &st)), did("MPI_File_write_at_all", B);
    CHECK(MPI_File_write_at(fh, 1 * region + mine, buf, K, MPI_INT, MPI_STATUS_IGNORE)), did("MPI_File_write_at", B);
    CHECK(MPI_File_iwrite_at(fh, 2 * region + mine, buf, K, MPI_INT, &rq[0])), did("MPI_File_iwrite_at", B);
    CHECK(MPI_Wait(&rq[0], &st)), did("MPI_Wait", 0);
    CHECK(MPI_File_iwrite_at_all(fh, 3 * region + mine, buf, K, MPI_INT, &rq[0])), did("MPI_File_iwrite_at_all", B);
    CHECK(MPI_File_iwrite_at(fh, 4 * region + mine, buf, K, MPI_INT, &rq[1])), did("MPI_File_iwrite_at", B);
    CHECK(MPI_Waitall(2, rq, sts)), did("MPI_Waitall", 0), did("MPI_Waitall", 0);
    CHECK(MPI_File_write_at_all_begin(fh, 5 * region + mine, buf, K, MPI_INT)), did("MPI_File_write_at_all_begin", B);
    CHECK(MPI_File_write_at_all_end(fh, buf, &st)), did("MPI_File_write_at_all_end", B);
    /* a nonblocking collective the MPI library may progress in another MPI call (here barriers) */
    CHECK(MPI_File_iwrite_at_all(fh, 12 * region + mine, buf, K, MPI_INT, &rq[0])), did("MPI_File_iwrite_at_all", B);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Wait(&rq[0], &st)), did("MPI_Wait", 0);
    CHECK(MPI_File_read_at(fh, 0 * region + mine, in, K, MPI_INT, &st)), did("MPI_File_read_at", B);
    CHECK(MPI_File_read_at_all(fh, 1 * region + mine, in, K, MPI_INT, &st)), did("MPI_File_read_at_all", B);
    CHECK(MPI_File_iread_at(fh, 2 * region + mine, in, K, MPI_INT, &rq[0])), did("MPI_File_iread_at", B);
    do
        CHECK(MPI_Testany(1, rq, &idx, &flag, &st));
    while (!flag);
    did("MPI_Testany", 0);
    CHECK(MPI_File_iread_at_all(fh, 3 * region + mine, in, K, MPI_INT, &rq[0])), did("MPI_File_iread_at_all", B);
    CHECK(MPI_Waitany(1, rq, &idx, &st)), did("MPI_Waitany", 0);
    CHECK(MPI_File_read_at_all_begin(fh, 4 * region + mine, in, K, MPI_INT)), did("MPI_File_read_at_all_begin", B);
    CHECK(MPI_File_read_at_all_end(fh, in, &st)), did("MPI_File_read_at_all_end", B);

    usleep(400000); /* compute: a gap of 0.4 s between two calls, which --timing recorded keeps */

    /* individual pointers through a view: region 6, each rank's block by a subarray filetype */
    MPI_Datatype ft;
    int gsize = size * K, sub = K, start = rank * K;
    MPI_Type_create_subarray(1, &gsize, &sub, &start, MPI_ORDER_C, MPI_INT, &ft);
    MPI_Type_commit(&ft);
    CHECK(MPI_File_set_view(fh, 6 * region, MPI_INT, ft, "native", MPI_INFO_NULL)), did("MPI_File_set_view", 0);
    /* the collectives first: an aggregator's read-modify-write of a later collective's file domain may
     * write back what it read before another rank's independent write landed (no sync, nonatomic mode) */
    CHECK(MPI_File_write_all(fh, buf, K / 4, MPI_INT, &st)), did("MPI_File_write_all", B / 4);
    CHECK(MPI_File_write_all_begin(fh, buf, K / 8, MPI_INT)), did("MPI_File_write_all_begin", B / 8);
    CHECK(MPI_File_write_all_end(fh, buf, &st)), did("MPI_File_write_all_end", B / 8);
    CHECK(MPI_File_iwrite_all(fh, buf, K / 8, MPI_INT, &rq[0])), did("MPI_File_iwrite_all", B / 8);
    CHECK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE)), did("MPI_Wait", 0);
    CHECK(MPI_File_write(fh, buf, K / 4, MPI_INT, &st)), did("MPI_File_write", B / 4);
    CHECK(MPI_File_iwrite(fh, buf, K / 4, MPI_INT, &rq[0])), did("MPI_File_iwrite", B / 4);
    CHECK(MPI_Waitsome(1, rq, &out, ids, MPI_STATUSES_IGNORE)), did("MPI_Waitsome", 0);
    CHECK(MPI_File_seek(fh, 0, MPI_SEEK_SET)), did("MPI_File_seek", 0);
    CHECK(MPI_File_read_all(fh, in, K / 4, MPI_INT, &st)), did("MPI_File_read_all", B / 4);
    CHECK(MPI_File_read(fh, in, K / 4, MPI_INT, &st)), did("MPI_File_read", B / 4);
    CHECK(MPI_File_iread(fh, in, K / 4, MPI_INT, &rq[0])), did("MPI_File_iread", B / 4);
    do
        CHECK(MPI_Test(&rq[0], &flag, &st));
    while (!flag);
    did("MPI_Test", 0);
    CHECK(MPI_File_iread_all(fh, in, K / 8, MPI_INT, &rq[0])), did("MPI_File_iread_all", B / 8);
    do
        CHECK(MPI_Testall(1, rq, &flag, MPI_STATUSES_IGNORE));
    while (!flag);
    did("MPI_Testall", 0);
    CHECK(MPI_File_read_all_begin(fh, in, K / 8, MPI_INT)), did("MPI_File_read_all_begin", B / 8);
    CHECK(MPI_File_read_all_end(fh, in, &st)), did("MPI_File_read_all_end", B / 8);
    MPI_Type_free(&ft);

    /* the shared pointer: region 7 on, the same view on every rank */
    CHECK(MPI_File_set_view(fh, 7 * region, MPI_INT, MPI_INT, "native", MPI_INFO_NULL)), did("MPI_File_set_view", 0);
    CHECK(MPI_File_write_ordered(fh, buf, K, MPI_INT, &st)), did("MPI_File_write_ordered", B);
    CHECK(MPI_File_write_shared(fh, buf, K, MPI_INT, &st)), did("MPI_File_write_shared", B);
    CHECK(MPI_File_iwrite_shared(fh, buf, K, MPI_INT, &rq[0])), did("MPI_File_iwrite_shared", B);
    do
        CHECK(MPI_Testsome(1, rq, &out, ids, MPI_STATUSES_IGNORE));
    while (out == 0);
    did("MPI_Testsome", 0);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_write_ordered_begin(fh, buf, K, MPI_INT)), did("MPI_File_write_ordered_begin", B);
    CHECK(MPI_File_write_ordered_end(fh, buf, &st)), did("MPI_File_write_ordered_end", B);
    CHECK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET)), did("MPI_File_seek_shared", 0);
    CHECK(MPI_File_read_ordered(fh, in, K, MPI_INT, &st)), did("MPI_File_read_ordered", B);
    CHECK(MPI_File_read_ordered_begin(fh, in, K, MPI_INT)), did("MPI_File_read_ordered_begin", B);
    CHECK(MPI_File_read_ordered_end(fh, in, &st)), did("MPI_File_read_ordered_end", B);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_read_shared(fh, in, K / 4, MPI_INT, &st)), did("MPI_File_read_shared", B / 4);
    CHECK(MPI_File_iread_shared(fh, in, K / 4, MPI_INT, &rq[0])), did("MPI_File_iread_shared", B / 4);
    CHECK(MPI_Wait(&rq[0], &st)), did("MPI_Wait", 0);

    /* the file routines */
    MPI_Offset fsize;
    CHECK(MPI_File_get_size(fh, &fsize)), did("MPI_File_get_size", 0);
    CHECK(MPI_File_set_atomicity(fh, 1)), did("MPI_File_set_atomicity", 0);
    CHECK(MPI_File_set_atomicity(fh, 0)), did("MPI_File_set_atomicity", 0);
    CHECK(MPI_File_sync(fh)), did("MPI_File_sync", 0);
    MPI_Info_set(info, "cb_buffer_size", "2097152");
    CHECK(MPI_File_set_info(fh, info)), did("MPI_File_set_info", 0);
    /* each beyond the file's end: Open MPI 4.1's OMPIO leaves the other ranks waiting in a preallocate below
     * it, and fails a set_size below a preallocated size */
    CHECK(MPI_File_set_size(fh, 14 * region)), did("MPI_File_set_size", 0);
    CHECK(MPI_File_preallocate(fh, 16 * region)), did("MPI_File_preallocate", 0);
    CHECK(MPI_File_close(&fh)), did("MPI_File_close", 0);
    MPI_File g;
    CHECK(MPI_File_open(MPI_COMM_SELF, gone, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &g)),
        did("MPI_File_open", 0);
    CHECK(MPI_File_close(&g)), did("MPI_File_close", 0);
    CHECK(MPI_File_delete(gone, MPI_INFO_NULL)), did("MPI_File_delete", 0);
    MPI_Info_free(&info);

    /* one line per rank, printed by rank 0 (the ranks' own prints would interleave) */
    char line[8192];
    int len = snprintf(line, sizeof line, "{\"rank\": %d, \"size\": %lld, \"calls\": {", rank, (long long)fsize);
    for (int i = 0; i < ncalls; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, "%s\"%s\": [%lld, %lld]", i ? ", " : "", names[i],
                        calls[i], bytes[i]);
    snprintf(line + len, sizeof line - (size_t)len, "}}");
    char *all = rank == 0 ? malloc((size_t)size * sizeof line) : NULL;
    MPI_Gather(line, (int)sizeof line, MPI_CHAR, all, (int)sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < size; r++)
        printf("%s\n", all + (size_t)r * sizeof line);
    fflush(stdout);
    free(all);
    const char *die = getenv("EVERY_FORM_DIE_RANK"); /* tests: a rank that ends without MPI_Finalize */
    if (die && atoi(die) == rank)
        _exit(0);
    const char *lose = getenv("EVERY_FORM_LOSE_RANK"), *tdir = getenv("IOTRACE_DIR");
    if (lose && atoi(lose) == rank && tdir) { /* ... and whose trace file rank 0 cannot see (another host's) */
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -f %s/trace.r%d.*", tdir, rank);
        if (system(cmd) != 0)
            fprintf(stderr, "every_form: %s failed\n", cmd);
        _exit(0);
    }
    MPI_Finalize();
    return 0;
}
