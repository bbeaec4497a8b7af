/* recorder.h - what the MPI-IO recorder (mpiio/mpi_record.c) asks of the POSIX
 * recorder (preload.c) when both are in one library
 * (libiotrace-mpi-<mpi>.so): one file per process, one seq, one lock. In
 * MPI mode (IOTRACE_MPI set) nothing is recorded before rec_mpi_start and
 * after rec_stop, so the launcher and the MPI library's own start and end
 * are left out; between them POSIX rows carry the process's rank, and a
 * POSIX call made inside an MPI-IO call names that call's row as its parent. */
#ifndef IOTRACE_RECORDER_H
#define IOTRACE_RECORDER_H

#include "trace.h"

#pragma GCC visibility push(hidden)

bool rec_wanted(void);              /* IOTRACE_DIR is set: the MPI recorder should start */
const char *rec_dir(void);          /* IOTRACE_DIR */
void rec_mpi_rank(int64_t rank);    /* this process is `rank` (its rows say so; its clock's test skew) */
void rec_mpi_start(void);           /* recording from now */
uint64_t rec_skew(void);            /* what rec_now adds to CLOCK_MONOTONIC (IOTRACE_TEST_SKEW_NS x rank) */
void rec_stop(void);                /* no more rows; the file cut to its length */
const char *rec_file(void);         /* this process's file ("" before its first row) */
uint64_t rec_now(void);             /* the rows' clock: CLOCK_MONOTONIC, ns */
uint64_t rec_take_seq(void);        /* a seq for a row written later (an MPI call's, before its POSIX rows) */
void rec_write(struct trace_rec *r); /* a row whose seq was taken; pid, tid and rank are filled in */
void rec_hold(void);                /* the calling thread's POSIX calls go unrecorded ... */
void rec_release(void);             /* ... until this */
int64_t rec_enter(int64_t parent);  /* POSIX rows of this thread name parent; returns the previous one */
void rec_leave(int64_t previous);
uint64_t rec_children(void);        /* POSIX rows this thread wrote since its rec_enter */

#pragma GCC visibility pop

#endif
