/* ipc.c - local communication between two processes: pipes and AF_UNIX
 * stream sockets (lmbench's lat_pipe, lat_unix, bw_pipe, bw_unix).
 *
 * net.rtt.pipe  round trip of 1 byte: a pipe there, another back
 * net.rtt.unix  round trip of 1 byte on a socketpair(AF_UNIX, SOCK_STREAM)
 * net.bw.pipe   bulk transfer through a pipe, 64 KiB writes and reads
 *               between page-aligned buffers (a copy to a destination off a
 *               cache line's start costs more)
 * net.bw.unix   the same through an AF_UNIX stream socketpair
 * The partner is a child process on the probe's CPU (it inherits the
 * pinning), so a round trip is two context switches, two writes and two
 * reads. A latency sample is --iterations round trips (default 1000) after
 * 16 untimed; pipe and socket samples alternate. A bandwidth sample is the
 * time to read --bytes (default 8 MiB) that the child writes without pause;
 * MB/s is a million bytes per second.
 */
#include "osm.h"
#include "osmmem.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
static uint64_t bytes = 8u << 20;

static const struct osm_opt opts[] = {
    OSM_OPT_SIZE("bytes", bytes, CHUNK, 1ull << 34, "bytes per bandwidth sample"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "net_ipc",
    .summary = "Pipe and AF_UNIX socket round trip and bandwidth between two processes on one CPU.",
    .default_samples = 40,
    .default_iterations = 1000,
    .opts = opts,
};

/* a channel: the parent writes to[1]... or, for a socket, both ends are one fd */
struct chan {
    int p_wr, p_rd; /* parent's ends */
    int c_wr, c_rd; /* child's ends */
    pid_t pid;
};

static void chan_pipe(struct chan *c)
{
    int a[2], b[2];
    if (pipe(a) != 0 || pipe(b) != 0)
        osm_die("pipe: %m");
    *c = (struct chan){ .p_wr = a[1], .c_rd = a[0], .c_wr = b[1], .p_rd = b[0] };
}

static void chan_unix(struct chan *c)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        osm_die("socketpair: %m");
    *c = (struct chan){ .p_wr = sv[0], .p_rd = sv[0], .c_wr = sv[1], .c_rd = sv[1] };
}

static void chan_close(struct chan *c)
{
    close(c->p_wr);
    if (c->p_rd != c->p_wr)
        close(c->p_rd);
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
}

static void start_echo(struct chan *c)
{
    c->pid = fork();
    if (c->pid < 0)
        osm_die("fork: %m");
    if (c->pid == 0) {
        char b;
        while (read(c->c_rd, &b, 1) == 1 && write(c->c_wr, &b, 1) == 1)
            ;
        _exit(0);
    }
    close(c->c_rd);
    if (c->c_wr != c->c_rd)
        close(c->c_wr);
}

static void start_writer(struct chan *c)
{
    c->pid = fork();
    if (c->pid < 0)
        osm_die("fork: %m");
    if (c->pid == 0) {
        char *buf = aligned_alloc(4096, CHUNK);
        if (!buf)
            _exit(1);
        memset(buf, 1, CHUNK);
        for (;;)
            for (size_t done = 0; done < CHUNK;) {
                ssize_t n = write(c->c_wr, buf + done, CHUNK - done);
                if (n <= 0)
                    _exit(0);
                done += (size_t)n;
            }
    }
    close(c->c_rd);
    if (c->c_wr != c->c_rd)
        close(c->c_wr);
}

static void roundtrips(struct chan *c, uint64_t n)
{
    char b = 'x';
    for (uint64_t i = 0; i < n; i++)
        if (write(c->p_wr, &b, 1) != 1 || read(c->p_rd, &b, 1) != 1)
            osm_die("round trip: %m");
}

static void drain(struct chan *c, char *buf, uint64_t want)
{
    for (uint64_t got = 0; got < want;) {
        ssize_t n = read(c->p_rd, buf, want - got < CHUNK ? want - got : CHUNK);
        if (n <= 0)
            osm_die("reading the writer: %m");
        got += (uint64_t)n;
    }
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    osm_switch_check_off();
    osm_pin_here(&o);
    signal(SIGPIPE, SIG_IGN);

    struct chan ch[2];
    chan_pipe(&ch[0]);
    chan_unix(&ch[1]);
    struct osm_meas lat[2], bw[2];
    const char *lat_id[2] = { "net.rtt.pipe", "net.rtt.unix" }, *bw_id[2] = { "net.bw.pipe", "net.bw.unix" };
    for (int k = 0; k < 2; k++) {
        start_echo(&ch[k]);
        roundtrips(&ch[k], o.iterations * o.warmup + 16);
        osm_meas_init(&lat[k], lat_id[k], o.samples);
    }
    for (size_t i = 0; i < o.samples; i++)
        for (int k = 0; k < 2; k++) {
            struct osm_window w;
            bool d;
            roundtrips(&ch[k], 16);
            osm_window_open_blocking(&w);
            roundtrips(&ch[k], o.iterations);
            uint64_t t = osm_window_close(&w, &d);
            osm_meas_add(&lat[k], ((double)t - osm_timer.overhead) / (double)o.iterations, d);
        }
    for (int k = 0; k < 2; k++) {
        chan_close(&ch[k]);
        lat[k].overhead_subtracted = osm_timer.overhead / (double)o.iterations;
        osm_param_int(&lat[k], "roundtrips_per_sample", (long long)o.iterations);
        osm_param_int(&lat[k], "message_bytes", 1);
        osm_param_str(&lat[k], "partner", "child process, same CPU");
        osm_emit(&lat[k]);
        osm_meas_free(&lat[k]);
    }

    char *buf = aligned_alloc(4096, CHUNK);
    if (!buf)
        osm_die("out of memory");
    memset(buf, 0, CHUNK);
    chan_pipe(&ch[0]);
    chan_unix(&ch[1]);
    for (int k = 0; k < 2; k++) {
        start_writer(&ch[k]);
        drain(&ch[k], buf, bytes); /* untimed: the writer running, the buffers warm */
        osm_meas_init(&bw[k], bw_id[k], o.samples);
    }
    for (size_t i = 0; i < o.samples; i++)
        for (int k = 0; k < 2; k++) {
            struct osm_window w;
            bool d;
            osm_window_open_blocking(&w);
            drain(&ch[k], buf, bytes);
            uint64_t t = osm_window_close(&w, &d);
            double sec = ((double)t - osm_timer.overhead) / osm_timer.hz;
            osm_meas_add(&bw[k], (double)bytes / sec / 1e6, d);
        }
    for (int k = 0; k < 2; k++) {
        chan_close(&ch[k]);
        bw[k].unit = "MB/s";
        bw[k].overhead_subtracted = 0;
        osm_param_num(&bw[k], "bytes_per_sample", (double)bytes);
        osm_param_int(&bw[k], "chunk", CHUNK);
        osm_param_str(&bw[k], "buffers", "page-aligned");
        osm_param_str(&bw[k], "partner", "child process writing without pause, same CPU");
        osm_emit(&bw[k]);
        osm_meas_free(&bw[k]);
    }
    free(buf);
    return 0;
}
