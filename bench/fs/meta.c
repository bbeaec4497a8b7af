/* meta.c - small-file metadata operations (lmbench's lat_fs).
 *
 * fs.create.<k>k  files created per second: open(O_CREAT|O_EXCL), write k KiB,
 *                 close, for --files files in a fresh directory
 * fs.delete.<k>k  files deleted per second: unlink of those files
 * for k = 0, 1, 4, 10. A sample is one round of --files files. Nothing is
 * synced: this is the file system's in-memory metadata path, as lat_fs
 * measures it. Every create round runs before any delete round (main says
 * why).
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

static const struct osm_opt opts[] = {
    OSM_OPT_STR("dir", dir, "where to make the test directory", .arg = "DIR"),
    OSM_OPT_UINT("files", nfiles, 1, 1000000, "files per sample"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "fs_meta",
    .summary = "Small-file create and delete rates (files/s) for 0, 1, 4 and 10 KiB files.",
    .default_samples = 5,
    .opts = opts,
};

/* One round: nfiles files of `bytes` made in the fresh directory `sub`
 * (timed: files/s), or those files removed. */
static double create_round(const char *sub, char (*names)[16], size_t bytes, const char *data)
{
    char path[4200];
    uint64_t t0 = osm_clock_ns();
    for (unsigned i = 0; i < nfiles; i++) {
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0 || (bytes && write(fd, data, bytes) != (ssize_t)bytes) || close(fd) != 0)
            osm_die("creating %s: %s", path, strerror(errno));
    }
    return nfiles / ((double)(osm_clock_ns() - t0) * 1e-9);
}

static double delete_round(const char *sub, char (*names)[16])
{
    char path[4200];
    uint64_t t0 = osm_clock_ns();
    for (unsigned i = 0; i < nfiles; i++) {
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        if (unlink(path) != 0)
            osm_die("deleting %s: %s", path, strerror(errno));
    }
    return nfiles / ((double)(osm_clock_ns() - t0) * 1e-9);
}

#define NSIZES 4
#define MAX_ROUNDS 50 /* per size: each round's directory is a scratch entry */

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    size_t rounds = o.warmup + o.samples;
    if (rounds > MAX_ROUNDS)
        osm_usage_error("--samples plus --warmup: at most %d rounds per file size (each has its own directory)",
                        MAX_ROUNDS);
    char fsname[32], dev[160], top[4096];
    bool tmpfs;
    osm_fs_describe(dir, fsname, sizeof fsname, dev, sizeof dev, &tmpfs);
    if (osm_scratch_new_dir(dir, "meta", top, sizeof top) != 0) /* removed, with what is in it, however it ends */
        osm_usage_error("--dir %s: cannot make a directory there: %s", dir, strerror(errno));
    static const unsigned kib[NSIZES] = { 0, 1, 4, 10 };
    char *data = osm_fs_buffer(10 * 1024);
    char (*names)[16] = malloc((size_t)nfiles * sizeof *names);
    char (*subs)[4200] = malloc(NSIZES * rounds * sizeof *subs);
    double *created = malloc(NSIZES * rounds * sizeof *created);
    double *deleted = malloc(NSIZES * rounds * sizeof *deleted);
    if (!names || !subs || !created || !deleted)
        osm_die("out of memory");
    for (unsigned i = 0; i < nfiles; i++)
        snprintf(names[i], sizeof names[i], "f%06u", i);
    /* Every round's creates first, each into a fresh directory, then every
     * round's deletes. Deletes are never followed by creates in the same
     * run: a file system may skip recently freed inodes when it allocates
     * (ext4 without a journal scans past each inode freed in the last 60 s,
     * 6 minutes while its inode table block is dirty), and a round of creates after another round's deletes would
     * time that scan, which grows with the rounds before it. */
    for (size_t k = 0; k < NSIZES; k++)
        for (size_t r = 0; r < rounds; r++) {
            char *sub = subs[k * rounds + r];
            snprintf(sub, sizeof subs[0], "%s/k%02u-r%03zu", top, kib[k], r);
            if (mkdir(sub, 0755) != 0)
                osm_die("making %s: %s", sub, strerror(errno));
            osm_scratch_dir(sub); /* removed before top: the last made goes first */
            created[k * rounds + r] = create_round(sub, names, (size_t)kib[k] * 1024, data);
        }
    for (size_t k = 0; k < NSIZES; k++)
        for (size_t r = 0; r < rounds; r++)
            deleted[k * rounds + r] = delete_round(subs[k * rounds + r], names);
    for (size_t k = 0; k < NSIZES; k++) {
        char idc[32], idd[32];
        snprintf(idc, sizeof idc, "fs.create.%uk", kib[k]);
        snprintf(idd, sizeof idd, "fs.delete.%uk", kib[k]);
        struct osm_meas mc, md;
        osm_meas_init(&mc, idc, o.samples);
        osm_meas_init(&md, idd, o.samples);
        mc.unit = md.unit = "files/s";
        for (size_t r = o.warmup; r < rounds; r++) {
            osm_meas_add(&mc, created[k * rounds + r], false);
            osm_meas_add(&md, deleted[k * rounds + r], false);
        }
        struct osm_meas *both[2] = { &mc, &md };
        for (int b = 0; b < 2; b++) {
            osm_param_int(both[b], "file_kib", kib[k]);
            osm_param_int(both[b], "files_per_sample", nfiles);
            osm_param_str(both[b], "dir", dir);
            osm_param_str(both[b], "filesystem", fsname);
            osm_param_str(both[b], "device", dev);
            osm_param_str(both[b], "journal", osm_fs_journal(dir));
            osm_param_bool(both[b], "synced", false);
            osm_param_str(both[b], "order", "every round's creates, each in a fresh directory, then every round's deletes");
            osm_emit(both[b]);
            osm_meas_free(both[b]);
        }
    }
    for (size_t i = NSIZES * rounds; i-- > 0;)
        osm_scratch_remove(subs[i]);
    osm_scratch_remove(top);
    free(names);
    free(subs);
    free(created);
    free(deleted);
    free(data);
    return 0;
}
