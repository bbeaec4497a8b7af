/* osmscratch.h - files and directories a program makes for its own use
 * (test files, a disk target it created) and must not leave behind: they
 * are removed at exit, and when SIGINT, SIGTERM or SIGHUP ends the program
 * (unless it handles that signal itself). */
#ifndef OSMSCRATCH_H
#define OSMSCRATCH_H

#include <stddef.h>

/* The one way a probe makes a file or directory in a shared directory (/var/tmp, --dir): a new one
 * under a name nobody can guess, dir/osmeter-TAG-PID-XXXXXX (mkostemp, mkdtemp: exclusive, never through a
 * link; the pid lets the next run remove what a killed one left, host/cleanup.py), registered as scratch. Its path is written to path (n bytes). The file's descriptor (O_RDWR,
 * close-on-exec, mode 0600), or 0 for the directory; -1 with errno where it cannot be made. What a probe
 * makes inside a directory of its own from osm_scratch_new_dir is its alone. */
int osm_scratch_new_file(const char *dir, const char *tag, char *path, size_t n);
int osm_scratch_new_dir(const char *dir, const char *tag, char *path, size_t n);

void osm_scratch_file(const char *path);
void osm_scratch_dir(const char *path);   /* removed with the files in it */
void osm_scratch_remove(const char *path); /* now, and forgotten */
void osm_scratch_done(const char *path);   /* kept after all: forgotten, not removed */

#endif
