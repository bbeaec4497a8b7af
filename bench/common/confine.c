/* confine.c - files opened and made only inside a given directory, never
 * through a link (osmconfine.h). A descriptor is always close-on-exec: no
 * caller passes one to a program it runs. */
#include "osmconfine.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int osm_dir_open(const char *dir) { return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); }

static int one_component(const char *name)
{
    return name[0] && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

/* A regular file of one link or a directory, or errno set. */
static int plain(const struct stat *st)
{
    if (S_ISDIR(st->st_mode))
        return 1;
    if (S_ISLNK(st->st_mode))
        errno = ELOOP;
    else if (!S_ISREG(st->st_mode))
        errno = ENODEV;
    else if (st->st_nlink > 1)
        errno = EMLINK;
    else
        return 1;
    return 0;
}

int osm_confined_open(int dirfd, const char *name, int flags, mode_t mode)
{
    if (!one_component(name)) {
        errno = EINVAL;
        return -1;
    }
    /* O_NONBLOCK: a FIFO put there does not hold the open; O_TRUNC only once the file is known plain */
    int fd = openat(dirfd, name, (flags & ~O_TRUNC) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) || !plain(&st)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!(flags & O_NONBLOCK)) /* F_SETFL changes only the status flags: the ones asked for, as asked */
        fcntl(fd, F_SETFL, flags);
    if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && ftruncate(fd, 0)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int osm_confined_check(int dirfd, const char *name)
{
    if (!one_component(name)) {
        errno = EINVAL;
        return -1;
    }
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
        return errno == ENOENT ? 0 : -1;
    return plain(&st) ? 0 : -1;
}

const char *osm_confined_why(int err)
{
    switch (err) {
    case EINVAL: return "not a name inside the directory";
    case ELOOP: return "a symbolic link, refused: files are opened only inside the directory";
    case EMLINK: return "a file with another link, refused: files are opened only inside the directory";
    case ENODEV: return "not a regular file, refused";
    default: return strerror(err);
    }
}
