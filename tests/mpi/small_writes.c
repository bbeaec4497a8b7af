/* small_writes.c - the MPI-IO recorder's cost (tools/bench-iotrace-mpi):
 * each rank writes N blocks of SIZE bytes with MPI_File_write_at to its own
 * part of FILE, timing each call with MPI_Wtime, and rank 0 prints the
 * ranks' median call time in ns and rank 0's wall time (from before
 * MPI_Init to after the close) as one JSON line.
 *
 * usage: small_writes FILE N SIZE */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    double t0 = now();
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4) {
        if (!rank)
            fprintf(stderr, "usage: small_writes FILE N SIZE\n");
        MPI_Finalize();
        return 2;
    }
    long n = atol(argv[2]), sz = atol(argv[3]);
    char *buf = malloc((size_t)sz);
    double *t = malloc((size_t)n * sizeof *t);
    memset(buf, 'a' + rank, (size_t)sz);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    MPI_Offset base = (MPI_Offset)rank * n * sz;
    for (long i = 0; i < n; i++) {
        double a = MPI_Wtime();
        MPI_File_write_at(fh, base + i * sz, buf, (int)sz, MPI_BYTE, MPI_STATUS_IGNORE);
        t[i] = MPI_Wtime() - a;
    }
    MPI_File_close(&fh);
    double wall = now() - t0;
    qsort(t, (size_t)n, sizeof *t, cmp);
    double med = t[n / 2], all = 0;
    MPI_Reduce(&med, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (!rank)
        printf("{\"median_call_ns\": %.1f, \"wall_s\": %.4f}\n", all / size * 1e9, wall);
    MPI_Finalize();
    return 0;
}
