/* osmscratch.h - files and directories a program makes for its own use
 * (test files, a disk target it created) and must not leave behind: they
 * are removed at exit, and when SIGINT, SIGTERM or SIGHUP ends the program
 * (unless it handles that signal itself). */
#ifndef OSMSCRATCH_H
#define OSMSCRATCH_H

void osm_scratch_file(const char *path);
void osm_scratch_dir(const char *path);   /* removed with the files in it */
void osm_scratch_remove(const char *path); /* now, and forgotten */
void osm_scratch_done(const char *path);   /* kept after all: forgotten, not removed */

#endif
