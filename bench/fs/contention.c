/* contention.c - processes reading their own files at once.
 *
 * fs.contention  ns per block (4 KiB) for 1, 2, 4 ... --max-procs processes,
 *                each reading its own file (--size, default 32 MiB) in order,
 *                below the page cache (O_DIRECT, else evicted pages), all
 *                started together. A sample is one such run: the mean over
 *                the processes of each one's time per block. Series over the
 *                number of processes; the top-level samples are those of
 *                the largest number. The readers may use every CPU (the
 *                contended resource is the device, not the pinned CPU).
 */
#include "osm.h"
#include "osmfs.h"
#include "osmscratch.h"
#include "osmmem.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir = "/var/tmp";
static uint64_t size = 32ull << 20, block = 4096;
static unsigned max_procs = 8;
static int method = OSM_NOCACHE_DIRECT; /* enum osm_nocache */

static const struct osm_opt opts[] = {
    OSM_OPT_STR("dir", dir, "directory for the files (not tmpfs)", .arg = "DIR"),
    OSM_OPT_SIZE("size", size, 1 << 20, 1ull << 40, "bytes each process reads"),
    OSM_OPT_SIZE("block", block, 512, 64u << 20, "bytes per read"),
    OSM_OPT_UINT("max-procs", max_procs, 1, 256, "largest number of readers, reached by doubling"),
    OSM_OPT_CHOICE("method", method, OSM_NOCACHE_CHOICES, "O_DIRECT, or buffered reads of evicted pages"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "fs_contention",
    .summary = "Read time per block as 1, 2, 4 ... processes each read their own file at once.",
    .default_samples = 3,
    .opts = opts,
};

/* A reader: waits for the start byte, reads its file once, reports ns/block. */
static void reader(const char *path, int start_fd, int result_fd)
{
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < CPU_SETSIZE; c++)
        CPU_SET(c, &all);
    sched_setaffinity(0, sizeof all, &all);
    char err[512];
    enum osm_nocache used;
    int fd = osm_fs_open_nocache(path, method, &used, err, sizeof err);
    if (fd < 0)
        _exit(2);
    if (used == OSM_NOCACHE_EVICT)
        osm_fs_evict(fd, size);
    char *buf = osm_fs_buffer(block), c;
    if (read(start_fd, &c, 1) != 1)
        _exit(3);
    uint64_t t0 = osm_clock_ns();
    for (uint64_t off = 0; off + block <= size; off += block)
        if (pread(fd, buf, block, (off_t)off) != (ssize_t)block)
            _exit(4);
    double per = (double)(osm_clock_ns() - t0) / (double)(size / block);
    _exit(write(result_fd, &per, sizeof per) == sizeof per ? 0 : 5);
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    char fsname[32], dev[160], err[512];
    bool tmpfs;
    osm_fs_describe(dir, fsname, sizeof fsname, dev, sizeof dev, &tmpfs);
    if (tmpfs)
        osm_usage_error("--dir %s is on %s: nothing there is read from a device", dir, fsname);
    if (size % block)
        osm_usage_error("--size must be a multiple of --block");
    unsigned levels = 0;
    for (unsigned n = 1; n <= max_procs; n *= 2)
        levels++;
    char (*paths)[4096] = calloc(max_procs, sizeof *paths);
    for (unsigned i = 0; i < max_procs; i++) {
        int made = osm_scratch_new_file(dir, "contention", paths[i], sizeof paths[i]); /* removed however it ends */
        if (made >= 0)
            close(made);
        else
            snprintf(err, sizeof err, "cannot make a file in %s: %s", dir, strerror(errno));
        if (made < 0 || osm_fs_make_file(paths[i], size, err, sizeof err) != 0) {
            for (unsigned k = 0; k <= i; k++)
                unlink(paths[k]);
            osm_die("%s", err);
        }
    }
    struct osm_meas m;
    osm_meas_init(&m, "fs.contention", o.samples);
    m.unit = "ns";
    osm_meas_series(&m, "processes", "ns", levels, o.samples);
    unsigned lv = 0;
    for (unsigned n = 1; n <= max_procs; n *= 2, lv++) {
        m.sx[lv] = n;
        for (size_t s = 0; s < o.samples; s++) {
            int start[2], res[2];
            if (pipe(start) != 0 || pipe(res) != 0)
                osm_die("pipe: %s", strerror(errno));
            pid_t pids[256];
            for (unsigned i = 0; i < n; i++) {
                pids[i] = fork();
                if (pids[i] == 0) {
                    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the probe */
                    close(start[1]);
                    close(res[0]);
                    reader(paths[i], start[0], res[1]);
                }
            }
            close(start[0]);
            close(res[1]);
            char go[256];
            memset(go, 'g', sizeof go);
            if (write(start[1], go, n) != (ssize_t)n)
                osm_die("starting the readers: %s", strerror(errno));
            double sum = 0;
            unsigned got = 0;
            for (unsigned i = 0; i < n; i++) {
                double v;
                if (read(res[0], &v, sizeof v) == sizeof v) {
                    sum += v;
                    got++;
                }
            }
            for (unsigned i = 0; i < n; i++)
                waitpid(pids[i], NULL, 0);
            close(start[1]);
            close(res[0]);
            if (got != n)
                osm_die("%u of %u readers failed (cannot open or read %s?)", n - got, n, paths[0]);
            m.sy[lv * o.samples + s] = sum / n;
        }
    }
    for (unsigned i = 0; i < max_procs; i++)
        unlink(paths[i]);
    for (size_t s = 0; s < o.samples; s++)
        osm_meas_add(&m, m.sy[(levels - 1) * o.samples + s], false);
    osm_param_num(&m, "bytes_per_process", (double)size);
    osm_param_num(&m, "block", (double)block);
    osm_param_str(&m, "order", "sequential");
    osm_param_str(&m, "dir", dir);
    osm_param_str(&m, "filesystem", fsname);
    osm_param_str(&m, "device", dev);
    osm_param_int(&m, "samples_at", max_procs);
    osm_emit(&m);
    osm_meas_free(&m);
    free(paths);
    return 0;
}
