/* osmconfine.h - files a command opens or makes inside the directory it was
 * given, never through a link: each by a name of one component, opened
 * relative to the directory's descriptor with O_NOFOLLOW, and kept only
 * when it is a regular file of one link or a directory (a planted FIFO does
 * not block the open; a planted hard link is not written, O_TRUNC included). */
#ifndef OSMCONFINE_H
#define OSMCONFINE_H

#include <sys/types.h>

/* The directory's descriptor (O_DIRECTORY, close-on-exec), or -1 with errno. */
int osm_dir_open(const char *dir);
/* openat(dirfd, name, flags, mode) confined as above; -1 with errno: EINVAL a name that is not one
 * component, ELOOP a symbolic link, EMLINK a file of more than one link, ENODEV not a regular file. */
int osm_confined_open(int dirfd, const char *name, int flags, mode_t mode);
/* 0 where name is absent or a regular file of one link (what a library that opens by path may
 * then be given: MPI_File_open), else -1 with errno as above. */
int osm_confined_check(int dirfd, const char *name);
/* What errno from the two above means, for a message. */
const char *osm_confined_why(int err);

#endif
