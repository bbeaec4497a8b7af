/* bw.c - TCP bulk bandwidth, both directions.
 *
 * net.bw.tcp.<where>       this host sends to netpeer's sink: large writes
 *                          for --seconds, then end of stream; the sample ends
 *                          when the peer reports how many bytes it received,
 *                          so data still in buffers is not counted as sent
 * net.bw.tcp.recv.<where>  netpeer's source sends to this host; bytes read
 *                          over the time from the first byte to the last
 * MB/s = 10^6 bytes per second of payload. One connection per sample.
 * Socket buffer sizes: --sndbuf, --rcvbuf on this end's socket, 1 MiB each by
 * default as lmbench's bw_tcp asks; 0 leaves the size to the kernel's
 * autotuning. Autotuned on both ends, the buffers grow differently from one
 * connection to the next, and a connection's figure falls in one of two
 * modes far apart; with this end's size fixed, connections agree.
 */
#include "common_net.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static double seconds = 1.0;
static uint64_t wsize = 128 * 1024, sndbuf = 1u << 20, rcvbuf = 1u << 20;
static int sndbuf_got, rcvbuf_got; /* what the kernel granted the last connection (getsockopt) */

static const struct osm_opt opts[] = {
    NET_OPTS,
    OSM_OPT_DOUBLE("seconds", seconds, 0, 3600, "length of one transfer"),
    OSM_OPT_U64("write-size", wsize, 1, 64u << 20, "bytes per write/read call"),
    OSM_OPT_U64("sndbuf", sndbuf, 0, 1u << 30, "SO_SNDBUF in bytes (0: the kernel's autotuning)"),
    OSM_OPT_U64("rcvbuf", rcvbuf, 0, 1u << 30, "SO_RCVBUF in bytes (0: the kernel's autotuning)"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "net_bw",
    .summary = "TCP bulk bandwidth to and from netpeer (MB/s).",
    .default_samples = 3,
    .opts = opts,
};

static void set_bufs(int fd)
{
    int v;
    if (sndbuf && (v = (int)sndbuf, setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v)) != 0)
        osm_die("SO_SNDBUF: %s", strerror(errno));
    if (rcvbuf && (v = (int)rcvbuf, setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v)) != 0)
        osm_die("SO_RCVBUF: %s", strerror(errno));
    socklen_t len = sizeof sndbuf_got;
    getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf_got, &len);
    len = sizeof rcvbuf_got;
    getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf_got, &len);
}

static double send_once(struct net_target *t, char *buf)
{
    int fd = net_connect_or_die(t, SOCK_STREAM);
    set_bufs(fd);
    if (osm_net_hello(fd, OSM_NET_SINK) != 0)
        osm_die("sending the sink header failed");
    uint64_t sent = 0, t0 = osm_clock_ns(), end = t0 + (uint64_t)(seconds * 1e9);
    while (osm_clock_ns() < end) {
        if (osm_net_write_full(fd, buf, wsize) != 0)
            osm_die("sending: %s", osm_net_why(errno, (int)net_timeout_ms));
        sent += wsize;
    }
    shutdown(fd, SHUT_WR);
    unsigned char le[8];
    errno = 0;
    if (osm_net_read_full(fd, le, 8) != 0)
        osm_die("the peer did not report what it received: %s", osm_net_why(errno, (int)net_timeout_ms));
    uint64_t t1 = osm_clock_ns(), got = 0;
    for (int i = 0; i < 8; i++)
        got |= (uint64_t)le[i] << (8 * i);
    close(fd);
    if (got != sent)
        osm_die("sent %llu bytes, the peer received %llu", (unsigned long long)sent, (unsigned long long)got);
    return (double)got / ((double)(t1 - t0) * 1e-9) / 1e6;
}

static double recv_once(struct net_target *t, char *buf)
{
    int fd = net_connect_or_die(t, SOCK_STREAM);
    set_bufs(fd);
    if (osm_net_hello(fd, OSM_NET_SOURCE) != 0)
        osm_die("sending the source header failed");
    errno = 0;
    if (osm_net_read_full(fd, buf, 1) != 0)
        osm_die("the peer sent nothing: %s", osm_net_why(errno, (int)net_timeout_ms));
    uint64_t got = 0, t0 = osm_clock_ns(), end = t0 + (uint64_t)(seconds * 1e9), t1 = t0;
    while ((t1 = osm_clock_ns()) < end) {
        ssize_t r = read(fd, buf, wsize);
        if (r <= 0)
            osm_die("receiving: %s", r < 0 ? osm_net_why(errno, (int)net_timeout_ms) : "the peer closed early");
        got += (uint64_t)r;
    }
    close(fd);
    return (double)got / ((double)(t1 - t0) * 1e-9) / 1e6;
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    struct net_target t;
    net_target_open(&t);
    char *buf = malloc(wsize);
    if (!buf)
        osm_die("out of memory");
    memset(buf, 0x3C, wsize);
    struct {
        const char *fmt;
        double (*once)(struct net_target *, char *);
        const char *dir;
    } runs[] = { { "net.bw.tcp.%s", send_once, "send" }, { "net.bw.tcp.recv.%s", recv_once, "receive" } };
    for (int k = 0; k < 2; k++) {
        char id[64];
        snprintf(id, sizeof id, runs[k].fmt, t.where);
        struct osm_meas m;
        osm_meas_init(&m, id, o.samples);
        m.unit = "MB/s";
        for (size_t i = 0; i < o.samples; i++) {
            uint32_t c0 = osm_current_cpu();
            double v = runs[k].once(&t, buf);
            osm_meas_add(&m, v, osm_current_cpu() != c0);
        }
        osm_param_str(&m, "direction", runs[k].dir);
        osm_param_num(&m, "seconds_per_sample", seconds);
        osm_param_num(&m, "write_size", (double)wsize);
        osm_param_num(&m, "sndbuf", (double)sndbuf);
        osm_param_num(&m, "rcvbuf", (double)rcvbuf);
        /* what the kernel granted at the connection's start: twice the request, within net.core.wmem_max and
         * rmem_max; an autotuned buffer grows from here as the connection runs */
        osm_param_num(&m, "sndbuf_granted", (double)sndbuf_got);
        osm_param_num(&m, "rcvbuf_granted", (double)rcvbuf_got);
        osm_param_str(&m, "peer", net_peer_arg ? net_peer_arg : "local netpeer");
        osm_param_str(&m, "where", t.where);
        osm_emit(&m);
        osm_meas_free(&m);
    }
    free(buf);
    net_target_close(&t);
    return 0;
}
