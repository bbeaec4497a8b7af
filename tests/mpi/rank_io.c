/* rank_io.c - the MPI program the replay's hostile tests start from
 * (tests/test_iotrace_mpi_hostile.py): each rank writes a file of its own
 * through POSIX (DIR/own.RANK), then all open DIR/shared.dat on
 * MPI_COMM_WORLD, preallocate 1 MiB, write 8 bytes from a two-block
 * hindexed memory type at rank x 64, write and read back 4 KiB of their
 * own, and close.
 *
 * usage: rank_io DIR */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 2) {
        if (!rank)
            fprintf(stderr, "usage: rank_io DIR\n");
        MPI_Finalize();
        return 2;
    }
    char path[4096], block[4096];
    memset(block, 'a' + rank, sizeof block);
    snprintf(path, sizeof path, "%s/own.%d", argv[1], rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || write(fd, block, sizeof block) != (ssize_t)sizeof block || close(fd)) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    snprintf(path, sizeof path, "%s/shared.dat", argv[1]);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_preallocate(fh, 1 << 20);
    int lens[2] = {4, 4};
    MPI_Aint displs[2] = {0, 8};
    MPI_Datatype two;
    MPI_Type_create_hindexed(2, lens, displs, MPI_BYTE, &two);
    MPI_Type_commit(&two);
    char mem[12];
    memset(mem, 'A' + rank, sizeof mem);
    MPI_File_write_at(fh, (MPI_Offset)rank * 64, mem, 1, two, MPI_STATUS_IGNORE);
    MPI_Offset mine = 4096 + (MPI_Offset)rank * (MPI_Offset)sizeof block;
    MPI_File_write_at_all(fh, mine, block, (int)sizeof block, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_read_at(fh, mine, block, (int)sizeof block, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    MPI_Type_free(&two);
    printf("{\"rank\": %d, \"calls\": {\"MPI_File_write_at\": [1, 8], \"MPI_File_write_at_all\": [1, 4096], "
           "\"MPI_File_read_at\": [1, 4096]}}\n", rank);
    MPI_Finalize();
    return 0;
}
