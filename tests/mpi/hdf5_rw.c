/* hdf5_rw.c - parallel HDF5 (Debian's, over MPI-IO) writing and reading a
 * dataset: an ROWS x COLS grid of ints, rank r owning a band of rows (a
 * hyperslab), written collectively, read back independently; then a second
 * dataset written independently. The MPI-IO calls are the HDF5 library's:
 * nobody here wrote them. Rank 0 prints one JSON line: the dataset bytes
 * each rank wrote and read through H5Dwrite/H5Dread, and whether every
 * rank read back what it wrote.
 *
 * usage: mpirun -np N hdf5_rw FILE */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COLS 256
#define ROWS_PER_RANK 64

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2) {
        if (!rank)
            fprintf(stderr, "usage: hdf5_rw FILE\n");
        MPI_Finalize();
        return 2;
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {(hsize_t)size * ROWS_PER_RANK, COLS};
    hsize_t start[2] = {(hsize_t)rank * ROWS_PER_RANK, 0}, count[2] = {ROWS_PER_RANK, COLS};
    int *buf = malloc(sizeof(int) * ROWS_PER_RANK * COLS), *in = malloc(sizeof(int) * ROWS_PER_RANK * COLS);
    for (int i = 0; i < ROWS_PER_RANK * COLS; i++)
        buf[i] = rank * 1000000 + i;
    long long wrote = 0, read = 0;
    int ok = 1;
    const char *names[2] = {"collective", "independent"};
    for (int d = 0; d < 2; d++) {
        hid_t space = H5Screate_simple(2, dims, NULL);
        hid_t set = H5Dcreate2(file, names[d], H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        hid_t mem = H5Screate_simple(2, count, NULL);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
        hid_t xfer = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_dxpl_mpio(xfer, d == 0 ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
        if (H5Dwrite(set, H5T_NATIVE_INT, mem, space, xfer, buf) < 0)
            ok = 0;
        wrote += (long long)sizeof(int) * ROWS_PER_RANK * COLS;
        hid_t indep = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_dxpl_mpio(indep, H5FD_MPIO_INDEPENDENT);
        if (H5Dread(set, H5T_NATIVE_INT, mem, space, indep, in) < 0)
            ok = 0;
        read += (long long)sizeof(int) * ROWS_PER_RANK * COLS;
        for (int i = 0; i < ROWS_PER_RANK * COLS; i++)
            ok &= in[i] == buf[i];
        H5Pclose(indep), H5Pclose(xfer), H5Sclose(mem), H5Dclose(set), H5Sclose(space);
    }
    H5Fclose(file);
    H5Pclose(fapl);
    int all_ok = 0;
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    if (!rank)
        printf("{\"ranks\": %d, \"wrote_per_rank\": %lld, \"read_per_rank\": %lld, \"read_back\": %s}\n", size, wrote,
               read, all_ok ? "true" : "false");
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
