/*
 * mpi_record_large.c - the MPI-4 large-count MPI-IO routines (MPI_File_write_at_all_c
 * and the rest: their count an MPI_Count), recorded as the rows of the
 * routines they stand for (mpi_record.c), so that a trace and its replay do not
 * depend on which form a program took. An MPI before 4.0 (Open MPI 4.1)
 * has none; MPICH 4 has them, and programs built against it use them where
 * they are there (IOR's MPI-IO back end does): without these wrappers their
 * calls went unrecorded, and the POSIX calls the library made inside them
 * looked like the rank's own.
 */
#include "mpirec.h"

#if MPI_VERSION >= 4

/* explicit offsets, blocking, nonblocking and split */
#define AT(name, tc, cbuf)                                                                                 \
    int MPI_File_##name##_c(MPI_File fh, MPI_Offset off, cbuf void *buf, MPI_Count count, MPI_Datatype dt, \
                            MPI_Status *st)                                                                \
    {                                                                                                      \
        BLOCKING(tc, fh, dt, count, off, st, PMPI_File_##name##_c(fh, off, buf, count, dt, st));           \
    }
#define IAT(name, tc, cbuf)                                                                                \
    int MPI_File_##name##_c(MPI_File fh, MPI_Offset off, cbuf void *buf, MPI_Count count, MPI_Datatype dt, \
                            MPI_Request *req)                                                              \
    {                                                                                                      \
        NONBLOCKING(tc, fh, dt, count, off, req, PMPI_File_##name##_c(fh, off, buf, count, dt, req));      \
    }
#define BAT(name, tc, cbuf)                                                                                \
    int MPI_File_##name##_c(MPI_File fh, MPI_Offset off, cbuf void *buf, MPI_Count count, MPI_Datatype dt) \
    {                                                                                                      \
        BEGIN(tc, fh, dt, count, off, PMPI_File_##name##_c(fh, off, buf, count, dt));                      \
    }
/* the individual and the shared file pointers */
#define PTR(name, tc, cbuf)                                                                                \
    int MPI_File_##name##_c(MPI_File fh, cbuf void *buf, MPI_Count count, MPI_Datatype dt, MPI_Status *st) \
    {                                                                                                      \
        BLOCKING(tc, fh, dt, count, -1, st, PMPI_File_##name##_c(fh, buf, count, dt, st));                 \
    }
#define IPTR(name, tc, cbuf)                                                                               \
    int MPI_File_##name##_c(MPI_File fh, cbuf void *buf, MPI_Count count, MPI_Datatype dt, MPI_Request *req) \
    {                                                                                                      \
        NONBLOCKING(tc, fh, dt, count, -1, req, PMPI_File_##name##_c(fh, buf, count, dt, req));            \
    }
#define BPTR(name, tc, cbuf)                                                                               \
    int MPI_File_##name##_c(MPI_File fh, cbuf void *buf, MPI_Count count, MPI_Datatype dt)                 \
    {                                                                                                      \
        BEGIN(tc, fh, dt, count, -1, PMPI_File_##name##_c(fh, buf, count, dt));                            \
    }

AT(read_at, TC_MPI_FILE_READ_AT, )
AT(read_at_all, TC_MPI_FILE_READ_AT_ALL, )
AT(write_at, TC_MPI_FILE_WRITE_AT, const)
AT(write_at_all, TC_MPI_FILE_WRITE_AT_ALL, const)
IAT(iread_at, TC_MPI_FILE_IREAD_AT, )
IAT(iread_at_all, TC_MPI_FILE_IREAD_AT_ALL, )
IAT(iwrite_at, TC_MPI_FILE_IWRITE_AT, const)
IAT(iwrite_at_all, TC_MPI_FILE_IWRITE_AT_ALL, const)
BAT(read_at_all_begin, TC_MPI_FILE_READ_AT_ALL_BEGIN, )
BAT(write_at_all_begin, TC_MPI_FILE_WRITE_AT_ALL_BEGIN, const)
PTR(read, TC_MPI_FILE_READ, )
PTR(read_all, TC_MPI_FILE_READ_ALL, )
PTR(write, TC_MPI_FILE_WRITE, const)
PTR(write_all, TC_MPI_FILE_WRITE_ALL, const)
IPTR(iread, TC_MPI_FILE_IREAD, )
IPTR(iread_all, TC_MPI_FILE_IREAD_ALL, )
IPTR(iwrite, TC_MPI_FILE_IWRITE, const)
IPTR(iwrite_all, TC_MPI_FILE_IWRITE_ALL, const)
BPTR(read_all_begin, TC_MPI_FILE_READ_ALL_BEGIN, )
BPTR(write_all_begin, TC_MPI_FILE_WRITE_ALL_BEGIN, const)
PTR(read_shared, TC_MPI_FILE_READ_SHARED, )
PTR(write_shared, TC_MPI_FILE_WRITE_SHARED, const)
IPTR(iread_shared, TC_MPI_FILE_IREAD_SHARED, )
IPTR(iwrite_shared, TC_MPI_FILE_IWRITE_SHARED, const)
PTR(read_ordered, TC_MPI_FILE_READ_ORDERED, )
PTR(write_ordered, TC_MPI_FILE_WRITE_ORDERED, const)
BPTR(read_ordered_begin, TC_MPI_FILE_READ_ORDERED_BEGIN, )
BPTR(write_ordered_begin, TC_MPI_FILE_WRITE_ORDERED_BEGIN, const)

#else
typedef int record_large_has_nothing_before_mpi_4; /* ISO C: a file of no declaration is not one */
#endif
