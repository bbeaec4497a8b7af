/* test_confine.c - files opened only inside a directory (bench/common/confine.c): a symbolic link, a hard
 * link to a file elsewhere, a FIFO and a name that leaves the directory are refused, each with its errno and
 * without blocking, writing or truncating; a plain file and a directory are taken. */
#include "check.h"
#include "osmconfine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[] = "/tmp/test_confine.XXXXXX";

static long size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) ? -1 : (long)st.st_size;
}

int main(void)
{
    if (!mkdtemp(base))
        return perror("mkdtemp"), 2;
    char in[256], out[256], p[512];
    snprintf(in, sizeof in, "%s/in", base);
    snprintf(out, sizeof out, "%s/outside", base);
    mkdir(in, 0700);
    int fd = open(out, O_CREAT | O_WRONLY, 0600);
    check(fd >= 0 && write(fd, "precious", 8) == 8, "setup", "a file outside the directory");
    close(fd);
    int d = osm_dir_open(in);
    check(d >= 0, "dir", "the directory opened");

    snprintf(p, sizeof p, "%s/link", in);
    check(symlink(out, p) == 0, "setup", "a link to it planted");
    errno = 0;
    fd = osm_confined_open(d, "link", O_WRONLY | O_TRUNC | O_CREAT, 0644);
    check(fd < 0 && errno == ELOOP && size_of(out) == 8, "symbolic link", "refused (ELOOP), the target kept");
    check(osm_confined_check(d, "link") < 0 && errno == ELOOP, "symbolic link checked", "refused by the check");

    snprintf(p, sizeof p, "%s/hard", in);
    check(link(out, p) == 0, "setup", "a hard link planted");
    fd = osm_confined_open(d, "hard", O_WRONLY | O_TRUNC, 0);
    check(fd < 0 && errno == EMLINK && size_of(out) == 8, "hard link", "refused (EMLINK), not truncated");
    check(osm_confined_check(d, "hard") < 0 && errno == EMLINK, "hard link checked", "refused by the check");

    snprintf(p, sizeof p, "%s/fifo", in);
    check(mkfifo(p, 0600) == 0, "setup", "a FIFO planted");
    fd = osm_confined_open(d, "fifo", O_RDONLY, 0); /* without O_NONBLOCK this open would wait for a writer */
    check(fd < 0 && errno == ENODEV, "fifo", "refused (ENODEV) without waiting");

    fd = osm_confined_open(d, "../outside", O_RDONLY, 0);
    check(fd < 0 && errno == EINVAL, "a name that leaves", "refused (EINVAL)");
    check(osm_confined_check(d, "..") < 0 && errno == EINVAL, "dot dot", "refused");

    check(osm_confined_check(d, "absent") == 0, "absent", "an absent name passes the check");
    fd = osm_confined_open(d, "new", O_RDWR | O_CREAT | O_EXCL, 0600);
    check(fd >= 0 && write(fd, "abc", 3) == 3, "plain file", "made and written");
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : 0, fdfl = fd >= 0 ? fcntl(fd, F_GETFD) : 0;
    check(!(fl & O_NONBLOCK) && (fdfl & FD_CLOEXEC), "flags", "blocking as asked, close-on-exec");
    close(fd);
    fd = osm_confined_open(d, "new", O_WRONLY | O_TRUNC, 0);
    snprintf(p, sizeof p, "%s/new", in);
    check(fd >= 0 && size_of(p) == 0, "O_TRUNC", "a plain file truncated as asked");
    close(fd);
    check(osm_confined_check(d, "new") == 0, "plain file checked", "passes");
    snprintf(p, sizeof p, "%s/sub", in);
    mkdir(p, 0700);
    fd = osm_confined_open(d, "sub", O_RDONLY | O_DIRECTORY, 0);
    check(fd >= 0, "directory", "a directory inside is taken");
    close(fd);

    const char *names[] = {"link", "hard", "fifo", "new"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        unlinkat(d, names[i], 0);
    unlinkat(d, "sub", AT_REMOVEDIR);
    close(d);
    rmdir(in);
    unlink(out);
    rmdir(base);
    return check_summary();
}
