/* select.c - select() over 100 descriptors (lmbench's lat_select).
 *
 * cpu.select.tcp   100 descriptors of one connected loopback TCP socket
 * cpu.select.file  100 descriptors of one open file
 * Each is a set of --fds dup()s of one descriptor, polled for writing with a
 * zero timeout: select walks every descriptor in the set and asks its
 * file's poll method, and returns at once. nfds is the highest descriptor
 * plus one, so every descriptor of the set is looked at. The two kinds run
 * one after the other, each set on the lowest free descriptors (as lmbench's
 * and as a program's first hundred files): a set above another costs more,
 * since select scans and copies every descriptor number below nfds. Batched.
 */
#include "osm.h"
#include "osmscratch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

static uint64_t nfds_want = 100;

static const struct osm_opt opts[] = {
    OSM_OPT_U64("fds", nfds_want, 1, FD_SETSIZE - 16, "descriptors in each set"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "cpu_select",
    .summary = "select() over 100 descriptors of a TCP socket and of a file.",
    .default_samples = 100,
    .opts = opts,
};

struct set {
    fd_set fds;
    int nfds;
};

static void body_select(void *ctx, uint64_t n)
{
    struct set *s = ctx;
    for (uint64_t i = 0; i < n; i++) {
        fd_set w = s->fds;
        struct timeval tv = { 0, 0 };
        if (select(s->nfds, NULL, &w, NULL, &tv) < 0)
            osm_die("select: %m");
    }
}

static void fill(struct set *s, int fd)
{
    FD_ZERO(&s->fds);
    s->nfds = 0;
    for (uint64_t k = 0; k < nfds_want; k++) {
        int d = dup(fd);
        if (d < 0 || d >= FD_SETSIZE)
            osm_die("dup: %m (or beyond FD_SETSIZE)");
        FD_SET(d, &s->fds);
        if (d + 1 > s->nfds)
            s->nfds = d + 1;
    }
    close(fd);
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);

    int lis = socket(AF_INET, SOCK_STREAM, 0), cli = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    if (lis < 0 || cli < 0 || bind(lis, (struct sockaddr *)&a, sizeof a) != 0 || listen(lis, 1) != 0 ||
        getsockname(lis, (struct sockaddr *)&a, &al) != 0 || connect(cli, (struct sockaddr *)&a, sizeof a) != 0)
        osm_die("loopback TCP connection: %m");
    int srv = accept(lis, NULL, NULL);
    if (srv < 0)
        osm_die("accept: %m");
    close(lis);

    static char path[PATH_MAX];
    int f = osm_scratch_new_file("/var/tmp", "select", path, sizeof path);
    if (f < 0)
        osm_die("cannot make a file in /var/tmp: %m");
    osm_scratch_remove(path); /* unlinked now: the descriptor keeps it */

    static struct set tcp, file;
    struct set *sets[2] = { &tcp, &file };
    int first[2] = { cli, -1 };
    static const char *ids[2] = { "cpu.select.tcp", "cpu.select.file" };
    for (int k = 0; k < 2; k++) {
        if (k == 1)
            first[1] = f;
        fill(sets[k], first[k]);
        struct osm_meas m;
        osm_meas_init(&m, ids[k], o.samples);
        osm_run_batched(&m, body_select, sets[k], o.iterations, o.samples, 0);
        osm_param_int(&m, "fds", (long long)nfds_want);
        osm_param_int(&m, "nfds", sets[k]->nfds);
        osm_param_str(&m, "poll", "writable, zero timeout");
        osm_emit(&m);
        osm_meas_free(&m);
        for (int fd = 0; fd < sets[k]->nfds; fd++) /* the next set takes the same numbers */
            if (FD_ISSET(fd, &sets[k]->fds))
                close(fd);
    }
    close(srv);
    osm_scratch_remove(path);
    return 0;
}
