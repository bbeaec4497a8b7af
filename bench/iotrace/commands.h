/* commands.h - the commands iotrace.c's main runs, each its part's: argc and
 * argv after the command's name; the exit status. */
#ifndef IOTRACE_COMMANDS_H
#define IOTRACE_COMMANDS_H

int cmd_record(int argc, char **argv);      /* posix/record.c: iotrace record */
int cmd_replay(int argc, char **argv);      /* replay/replay.c: iotrace replay */
int cmd_show(int argc, char **argv);        /* show/show.c: iotrace show */
int cmd_import(int argc, char **argv);      /* import/import.c: iotrace import (osmeter's importer) */
int cmd_rank(int argc, char **argv);        /* launch/launch.c: iotrace rank (under a launcher) */
int cmd_replay_rank(int argc, char **argv); /* launch/launch.c: iotrace replay-rank */

#endif
