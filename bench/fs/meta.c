/* meta.c - small-file metadata operations (lmbench's lat_fs).
 *
 * fs.create.<k>k  files created per second: open(O_CREAT|O_EXCL), write k KiB,
 *                 close, for --files files in a fresh directory
 * fs.delete.<k>k  files deleted per second: unlink of those files
 * for k = 0, 1, 4, 10. A sample is one round of --files files. Nothing is
 * synced: this is the file system's in-memory metadata path, as lat_fs
 * measures it.
 */
#include "osm.h"
#include "osmfs.h"
#include "osmscratch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *dir = "/var/tmp";
static unsigned nfiles = 1000;

static int on_extra(const char *name, const char *v)
{
    if (!strcmp(name, "dir"))
        dir = v;
    else if (!strcmp(name, "files"))
        nfiles = (unsigned)osm_parse_u64("--files", v, 1, 1000000);
    else
        return -1;
    return 0;
}

static const struct osm_extra_opt extra[] = {
    { "dir", true, "where to make the test directory (default /var/tmp)" },
    { "files", true, "files per sample (default 1000)" },
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "fs_meta",
    .summary = "Small-file create and delete rates (files/s) for 0, 1, 4 and 10 KiB files.",
    .default_samples = 5,
    .extra = extra,
    .on_extra = on_extra,
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    char fsname[32], dev[160], top[4096];
    bool tmpfs;
    osm_fs_describe(dir, fsname, sizeof fsname, dev, sizeof dev, &tmpfs);
    snprintf(top, sizeof top, "%s/osmeter-meta-%d", dir, (int)getpid());
    if (mkdir(top, 0755) != 0)
        osm_usage_error("--dir %s: cannot make a directory there: %s", dir, strerror(errno));
    osm_scratch_dir(top); /* removed, with what is in it, however the probe ends */
    static const unsigned kib[] = { 0, 1, 4, 10 };
    char *data = osm_fs_buffer(10 * 1024);
    char (*names)[64] = malloc((size_t)nfiles * sizeof *names);
    if (!names)
        osm_die("out of memory");
    for (unsigned i = 0; i < nfiles; i++)
        snprintf(names[i], sizeof names[i], "%s/f%06u", "", i);
    for (size_t k = 0; k < sizeof kib / sizeof kib[0]; k++) {
        char idc[32], idd[32];
        snprintf(idc, sizeof idc, "fs.create.%uk", kib[k]);
        snprintf(idd, sizeof idd, "fs.delete.%uk", kib[k]);
        struct osm_meas mc, md;
        osm_meas_init(&mc, idc, o.samples);
        osm_meas_init(&md, idd, o.samples);
        mc.unit = md.unit = "files/s";
        size_t bytes = (size_t)kib[k] * 1024;
        for (size_t s = 0; s < o.warmup + o.samples; s++) {
            char path[4200];
            uint64_t t0 = osm_clock_ns();
            for (unsigned i = 0; i < nfiles; i++) {
                snprintf(path, sizeof path, "%s%s", top, names[i]);
                int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
                if (fd < 0 || (bytes && write(fd, data, bytes) != (ssize_t)bytes) || close(fd) != 0)
                    osm_die("creating %s: %s", path, strerror(errno));
            }
            uint64_t t1 = osm_clock_ns();
            for (unsigned i = 0; i < nfiles; i++) {
                snprintf(path, sizeof path, "%s%s", top, names[i]);
                if (unlink(path) != 0)
                    osm_die("deleting %s: %s", path, strerror(errno));
            }
            uint64_t t2 = osm_clock_ns();
            if (s >= o.warmup) {
                osm_meas_add(&mc, nfiles / ((double)(t1 - t0) * 1e-9), false);
                osm_meas_add(&md, nfiles / ((double)(t2 - t1) * 1e-9), false);
            }
        }
        struct osm_meas *both[2] = { &mc, &md };
        for (int b = 0; b < 2; b++) {
            osm_param_int(both[b], "file_kib", kib[k]);
            osm_param_int(both[b], "files_per_sample", nfiles);
            osm_param_str(both[b], "dir", dir);
            osm_param_str(both[b], "filesystem", fsname);
            osm_param_str(both[b], "device", dev);
            osm_param_bool(both[b], "synced", false);
            osm_emit(both[b]);
            osm_meas_free(both[b]);
        }
    }
    osm_scratch_remove(top);
    free(names);
    free(data);
    return 0;
}
