/* mpi_launch.h - the MPI side of the iotrace command (launch.c): the
 * recorder a rank takes, `iotrace rank`, the launcher's command line, the
 * check of a merged trace's ranks. The recorder itself (record.c) is a
 * library of its own, one build per MPI. */
#ifndef IOTRACE_MPI_LAUNCH_H
#define IOTRACE_MPI_LAUNCH_H

#include "trace.h"

#include <stdbool.h>
#include <stddef.h>

/* "openmpi" or "mpich", or a usage error naming the choices. */
const char *mpi_check_impl(const char *name);
/* build/lib/libiotrace-mpi-IMPL.so beside this program, or iot_fail saying how to build it. */
void mpi_library(const char *impl, char *out, size_t n);
/* The launcher's words, then `iotrace SUB [--dir DIR] [--mpi IMPL] -- CMD...` (NULL-terminated; no --dir
 * where dir is NULL). */
char **mpi_launch_argv(const char *launcher, const char *sub, const char *impl, const char *dir, char **cmd);
/* 0 if every rank 0..size-1 of the MPI_Init rows is in the trace, else -1 and why in err. */
int mpi_check_ranks(const struct trace *t, char *err, size_t n);
/* How a launcher's run ended before its own exit: not (LAUNCH_ENDED), or ended by iotrace because rank 0 was
 * not started in time or the run passed its bound. */
enum launch_end { LAUNCH_ENDED, LAUNCH_START_TIMEOUT, LAUNCH_RUN_TIMEOUT };
/* Runs the launcher lv in a process group of its own, passing it the SIGINT, SIGTERM and SIGHUP iotrace
 * gets, and waits for it. Until a file named mark_prefix... is in mark_dir (rank 0 is past MPI_Init) it waits
 * at most start_timeout s (0: without bound); after that, at most run_timeout s more (0: without bound).
 * Past either the group gets SIGTERM, 5 s later SIGKILL, and *end says which. What the launcher leaves in its
 * group is killed when it exits. Returns its wait status, or -errno where it could not be run. */
int mpi_run_launcher(char **lv, const char *mark_dir, const char *mark_prefix, unsigned start_timeout,
                     unsigned run_timeout, enum launch_end *end);
/* The message for a launch that timed out (stderr). */
void mpi_start_timeout_error(const char *launcher, unsigned start_timeout);
/* --start-timeout's default, in seconds. */
#define MPI_START_TIMEOUT 120
/* Before an MPI replay: the files the program found there made again (see launch.c); bytes written. */
long long mpi_prepare(const char *name, const struct trace *t, int dirfd, const char *dir, long long limit);

#endif
