/*
 * iotrace.c - record an application's file I/O, replay it, show a trace.
 *
 *   iotrace record --out TRACE [--] CMD [ARGS...]
 *   iotrace replay TRACE --dir DIR [--processes N]
 *   iotrace show TRACE [--perfetto OUT.json]
 *   iotrace import DARSHAN_LOG --out TRACE
 *
 * The application-based approach of Seidel et al.'s MPI-IO profiler and
 * headstrong benchmark, for POSIX I/O: a preloaded library writes one
 * trace per process (posix/preload.c), `record` merges them, `replay`
 * issues the same calls with the same processes and threads against files
 * of its own and compares its times with the recorded ones.
 * docs/iotrace.md. This file is main alone: each command is its part's
 * (commands.h), and the parts, lowest first, are README.md's beside it.
 */
#include "commands.h"
#include "osm.h"

#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: iotrace record --out TRACE [--launcher \"MPIRUN ARGS\" [--mpi openmpi|mpich] [--start-timeout S]]\n"
    "                      [--] CMD [ARGS...]\n"
    "       iotrace replay TRACE --dir DIR [--processes N] [--prepare-limit BYTES] [--unpin] [--timeline OUT.json]\n"
    "       iotrace replay TRACE --dir DIR --launcher \"MPIRUN ARGS\" [--mpi openmpi|mpich] [--timing asap|recorded]\n"
    "                      [--prepare-limit BYTES] [--start-timeout S]\n"
    "       iotrace show TRACE [--perfetto OUT.json]\n"
    "       iotrace import DARSHAN_LOG --out TRACE\n"
    "\n"
    "record  runs CMD with the recorder (LD_PRELOAD) and writes its file I/O\n"
    "        as one CSV trace; exits with CMD's status. With --launcher, CMD is\n"
    "        an MPI program started by the launcher (mpirun -np 4, srun ...): its\n"
    "        MPI-IO calls are recorded too, with the POSIX calls under them\n"
    "replay  issues the trace's calls again, with as many processes and threads,\n"
    "        on files DIR/f0, DIR/f1 ...; prints one JSON object. A trace recorded\n"
    "        under MPI replays under --launcher with as many ranks\n"
    "show    prints a summary: processes, threads, files, calls; --perfetto\n"
    "        writes the trace as a timeline (Chrome's trace event format)\n"
    "import  writes a Darshan log's DXT records (POSIX and MPI-IO, every rank)\n"
    "        as a trace (read with PyDarshan, by osmeter's importer)\n"
    "The trace format: docs/iotrace.md.\n";

int main(int argc, char **argv)
{
    osm_progname = "iotrace";
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "record"))
        return cmd_record(argc - 2, argv + 2);
    if (!strcmp(argv[1], "replay"))
        return cmd_replay(argc - 2, argv + 2);
    if (!strcmp(argv[1], "rank"))
        return cmd_rank(argc - 2, argv + 2);
    if (!strcmp(argv[1], "replay-rank"))
        return cmd_replay_rank(argc - 2, argv + 2);
    if (!strcmp(argv[1], "show"))
        return cmd_show(argc - 2, argv + 2);
    if (!strcmp(argv[1], "import"))
        return cmd_import(argc - 2, argv + 2);
    osm_usage_error("unknown command '%s' (record, replay, show, import)", argv[1]);
}

