/* path.c - a path's cost: stat() and open()+close() of one file by its
 * full name (lmbench's lat_syscall stat and open).
 *
 * fs.stat        stat() of the file
 * fs.open_close  open(O_RDONLY) and close() of the same file
 * The file is made empty in a fresh directory under --dir; both walk the
 * same path, so their difference is what opening adds (a struct file, a
 * descriptor, and closing them). Batched, windows taken in turn.
 */
#include "osm.h"
#include "osmfs.h"
#include "osmscratch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *dir = "/var/tmp";

static const struct osm_opt opts[] = {
    OSM_OPT_STR("dir", dir, "where to make the test directory", .arg = "DIR"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "fs_path",
    .summary = "stat() and open()+close() of a file by its full path.",
    .default_samples = 100,
    .opts = opts,
};

static void body_stat(void *ctx, uint64_t n)
{
    const char *path = ctx;
    struct stat st;
    for (uint64_t i = 0; i < n; i++)
        if (stat(path, &st) != 0)
            osm_die("stat %s: %m", path);
}

static void body_open_close(void *ctx, uint64_t n)
{
    const char *path = ctx;
    for (uint64_t i = 0; i < n; i++) {
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            osm_die("open %s: %m", path);
        close(fd);
    }
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    static char top[PATH_MAX], path[PATH_MAX + 16];
    if (osm_scratch_new_dir(dir, "path", top, sizeof top) != 0)
        osm_usage_error("--dir %s: cannot make a directory there: %s", dir, strerror(errno));
    snprintf(path, sizeof path, "%s/file", top);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644); /* in a directory of its own */
    if (fd < 0)
        osm_die("create %s: %m", path);
    close(fd);
    char fsname[64], dev[64];
    bool tmpfs;
    osm_fs_describe(dir, fsname, sizeof fsname, dev, sizeof dev, &tmpfs);

    struct osm_meas m[2];
    osm_meas_init(&m[0], "fs.stat", o.samples);
    osm_meas_init(&m[1], "fs.open_close", o.samples);
    const osm_body bodies[2] = { body_stat, body_open_close };
    void *const ctxs[2] = { path, path };
    osm_run_interleaved(2, m, bodies, ctxs, o.iterations, o.samples, NULL);
    for (int k = 0; k < 2; k++) {
        osm_param_str(&m[k], "path", path);
        osm_param_str(&m[k], "fs", fsname);
        osm_param_str(&m[k], "device", dev);
        osm_emit(&m[k]);
        osm_meas_free(&m[k]);
    }
    osm_scratch_remove(top);
    return 0;
}
