/* mpi_launch.h - the MPI side of the iotrace command (launch.c): the
 * recorder a rank takes, `iotrace rank`, the launcher's command line, the
 * check of a merged trace's ranks. The recorder itself (record.c) is a
 * library of its own, one build per MPI. */
#ifndef IOTRACE_MPI_LAUNCH_H
#define IOTRACE_MPI_LAUNCH_H

#include "trace.h"

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
int cmd_rank(int argc, char **argv);
int cmd_replay_rank(int argc, char **argv);
/* Before an MPI replay: the files the program found there made again (see launch.c); bytes written. */
long long mpi_prepare(const struct trace *t, const char *dir, long long limit);

#endif
