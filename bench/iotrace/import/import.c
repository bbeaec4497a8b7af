/* import.c - import: a Darshan log's DXT records as a trace. The log is read with PyDarshan, the field's
 * own reader, by osmeter's importer (harness/osmeter/apptrace/, docs/iotrace.md "Importing a Darshan
 * log"): this command runs it as `osmeter iotrace-import` from the tree iotrace was built in
 * (build/bin/iotrace -> the tree's ./osmeter), with the log and the trace as its own words, never as
 * options. */
#include "commands.h"
#include "iotrace.h"
#include "osm.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The osmeter launcher of the tree this iotrace was built in: two levels above build/bin. */
static void osmeter_path(char *out, size_t n)
{
    char exe[PATH_MAX - 16];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len < 0)
        iot_fail(1, "cannot find this program's path (/proc/self/exe): %s", strerror(errno));
    exe[len] = '\0';
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
    }
    if ((size_t)snprintf(out, n, "%s/osmeter", exe) >= n)
        iot_fail(1, "this program's path is too long: %s", exe);
}

int cmd_import(int argc, char **argv)
{
    const char *out = NULL, *log = NULL;
    const struct osm_opt rows[] = {
        OSM_OPT_STR("out", out, "the trace to write (written whole, then renamed over TRACE)", .arg = "TRACE"),
        {0},
    };
    const struct osm_command cmd = {
        .name = "iotrace import", .operands = "DARSHAN_LOG", .opts = rows, .max_operands = 1,
        .summary = "Writes a Darshan log's DXT records (POSIX and MPI-IO, every rank) as a trace that replay takes.",
    };
    if (osm_parse_command(&cmd, argc, argv, &log) == 0 || !out)
        osm_usage_error("usage: iotrace import DARSHAN_LOG --out TRACE");
    char osmeter[PATH_MAX], outarg[PATH_MAX + 8];
    osmeter_path(osmeter, sizeof osmeter);
    if (access(osmeter, X_OK))
        iot_fail(1, "import runs osmeter's importer, %s, which is not there: this iotrace was not built in an "
                    "osmeter tree", osmeter);
    if ((size_t)snprintf(outarg, sizeof outarg, "--out=%s", out) >= sizeof outarg)
        osm_usage_error("--out: a path longer than %d bytes", PATH_MAX);
    fflush(NULL);
    char *const args[] = {"osmeter", "iotrace-import", outarg, "--", (char *)log, NULL};
    execv(osmeter, args);
    iot_fail(1, "cannot run %s: %s", osmeter, strerror(errno));
}
